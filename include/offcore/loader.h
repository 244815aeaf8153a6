/*
 * loader.h — batches for a trainer outside offcore (the Python package, the
 * C API in offcore.h): the dataset's topology, labels and splits in RAM, a
 * feature store opened by strategy name under a memory budget, and the batch
 * pipeline (batch_pipe.h) that samples each batch once and gathers its input
 * rows ahead, exactly as `offcore train` does, without a model.
 *
 *   oc_loader_new ─► oc_loader_epoch(e) ─► oc_loader_next ─► (caller trains) ─► oc_loader_done
 *                        ▲                        │ OC_ERR_NOTFOUND after the epoch's last batch
 *                        └────────────────────────┘
 *
 * Place in the data flow: train (dataset + sample + store + batch pipeline →
 * a caller's trainer); api wraps it.
 * Thread-safety: one thread drives a loader; the pipeline's stages run on
 * their own threads.
 * Ownership: the loader owns its data, pool, store and pipeline. A batch from
 * oc_loader_next (its blocks, input ids and rows) belongs to the caller until
 * oc_loader_done; at most oc_loader_max_held batches may be held when
 * oc_loader_next is called (a further one would wait for a buffer forever:
 * refused with OC_ERR_ARG).
 */
#ifndef OFFCORE_LOADER_H
#define OFFCORE_LOADER_H

#include <stdint.h>

#include "offcore/batch_pipe.h"
#include "offcore/core.h"
#include "offcore/sample.h"
#include "offcore/store.h"

enum oc_loader_split { OC_LOADER_TRAIN, OC_LOADER_VAL, OC_LOADER_TEST, OC_LOADER_SPLIT_COUNT };

struct oc_loader_opts {
    uint32_t n_layers;                     /* 1 .. OC_SAMPLE_MAX_LAYERS */
    int32_t fanouts[OC_SAMPLE_MAX_LAYERS]; /* [0] = input side; -1 = all neighbors */
    uint64_t batch_size;                   /* seeds per batch (the last one may be short) */
    uint64_t seed;                         /* sampling and shuffling seed */
    int shuffle;                           /* shuffle the split by (seed, epoch); 0 = file order */
    enum oc_loader_split split;            /* whose nodes are the seeds */
    const char *strategy;                  /* feature strategy name (NULL = "memory") */
    uint64_t mem_budget;                   /* bytes the process's offcore allocations may hold
                                              (0 = unlimited); set process-wide */
    uint32_t n_epochs;                     /* epochs [0, n_epochs) may be iterated (>= 1) */
    uint32_t n_threads;                    /* sampler and gather threads (0 = all cores) */
    uint32_t depth;                        /* batches gathered ahead (>= 1) */
    const char *plan_dir;                  /* plan files (ginex, diskgnn); NULL = DIR/plan */
    uint64_t store_bytes; /* RAM the feature store may hold (its caches), at most what the
                             budget leaves; 0 = all the budget leaves (or unlimited) */
    /* data-parallel shares (PyTorch DDP): every batch handed out is rank's share of the global
       batch, the sub-batch of its seeds [B rank / world_size, B (rank+1) / world_size) cut as
       train's micro-shards are (train_shard_cut); world_size 1 (the default): whole batches */
    uint32_t rank, world_size;
};

struct oc_loader;

/* Defaults: 2 layers with fanouts 10,25, batch 1000, seed 0, shuffled, train split,
   memory, 1 epoch, depth 2. */
void oc_loader_opts_default(struct oc_loader_opts *o);
/*
 * Loads the dataset at dir (topology in RAM), opens the feature store and the
 * batch pipeline. Bad options (OC_ERR_ARG), a missing or damaged dataset (the
 * dataset's own errors, naming the file) and a budget too small for the
 * topology and the batches in flight (OC_ERR_BUDGET) fail here.
 */
int oc_loader_new(const char *dir, const struct oc_loader_opts *o, struct oc_loader **out,
                  struct oc_err *err);
void oc_loader_free(struct oc_loader *l);

uint64_t oc_loader_n_batches(const struct oc_loader *l);
uint64_t oc_loader_feat_dim(const struct oc_loader *l);
/* Batches a caller may hold when it calls oc_loader_next (>= 0). */
uint32_t oc_loader_max_held(const struct oc_loader *l);
/* The dataset's labels (n_nodes entries, -1 = unlabeled), owned by the loader. */
const int32_t *oc_loader_labels(const struct oc_loader *l);

/*
 * Starts epoch e (< n_epochs): its seeds shuffled by (seed, e) unless
 * shuffle is 0, cut into batches, sampled and gathered ahead. The rest of an
 * unfinished epoch is drained first; every batch must have been given back.
 * (When the last batch of e - 1 is handed out, e is sampled ahead already, as
 * train does; its gathers wait for this call.)
 */
int oc_loader_epoch(struct oc_loader *l, uint64_t e, struct oc_err *err);
/*
 * The epoch's next batch; OC_ERR_NOTFOUND after the last one. With
 * world_size > 1 the caller trains on oc_loader_view's share of it.
 */
int oc_loader_next(struct oc_loader *l, struct oc_pipe_batch **out, struct oc_err *err);
/*
 * What the caller trains on of a held batch b: b's own batch and rows, or
 * with world_size > 1 this rank's share (its blocks, input ids and a copy of
 * its rows, valid until b is given back). NULLs when b is not held.
 */
void oc_loader_view(const struct oc_loader *l, const struct oc_pipe_batch *b,
                    const struct oc_sample_batch **batch, const float **x);
/* Gives a batch back: its buffers are reused. A batch not held (given back already) is
   ignored. */
void oc_loader_done(struct oc_loader *l, struct oc_pipe_batch *b);
/*
 * Samples batch b of epoch e on the calling thread with the loader's options
 * (no store, no pipeline): the reference the pipeline's batches equal.
 * out's arrays are grown and reused (caller storage, oc_sample_batch_init).
 */
int oc_loader_sample(struct oc_loader *l, uint64_t e, uint64_t b, struct oc_sample_batch *out,
                     struct oc_err *err);

struct oc_loader_stats {
    struct oc_store_stats store;     /* cumulative */
    struct oc_batch_pipe_stats pipe; /* cumulative */
    uint64_t mem_used, mem_peak;     /* the accountant's figures */
};
void oc_loader_stats(const struct oc_loader *l, struct oc_loader_stats *out);

#endif
