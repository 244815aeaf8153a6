/*
 * batch_pipe.h — the batch pipeline: samples every training batch exactly
 * once, lets the feature strategy see it early, fetches its features ahead
 * and hands both to the trainer. Built from stages (pipeline.h).
 *
 *   trainer: oc_batch_pipe_epoch(e), _open ─► oc_batch_pipe_next ─► train ─► oc_batch_pipe_done
 *                                                ▲                            │
 *   sample stage: free slot ─► sample (seed,e,b) ─► store sampled ─► fetch q  │
 *   fetch stage:  fetch q ─► [store next_batch] ─► store gather ─► ready q    │
 *        ▲                                                                    │
 *        └──────────────────────────── free slots ◄───────────────────────────┘
 *
 * Place in the data flow: train (store + sample → trainer); train drives it.
 * Thread-safety: driven by one trainer thread; its stages call the store
 * from their threads (sample stage: oc_store_hop, oc_store_sampled; fetch
 * stage: load_batch, next_batch, gather_batch), oc_batch_pipe_done from the
 * trainer's (oc_store_done). Between the last batch of an epoch and
 * oc_batch_pipe_open of the next, only the sample stage may run (sampling
 * the next epoch ahead and preparing its batches), so the trainer may gather
 * from the store (evaluation) and read its stats.
 * Ownership: a batch pipeline owns its slots (sampled batches, feature rows)
 * and borrows the store, graph, pool, training ids and, when given one, the
 * pipeline its stages run on (which must then be freed before it).
 */
#ifndef OFFCORE_BATCH_PIPE_H
#define OFFCORE_BATCH_PIPE_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/pipeline.h"
#include "offcore/sample.h"
#include "offcore/store.h"
#include "offcore/thread.h"

/* A training batch on its way to the trainer. */
struct oc_pipe_batch {
    uint64_t epoch;               /* sample epoch (the training epoch, or 0 with reused samples) */
    uint64_t index;               /* batch index in that epoch */
    uint64_t pos;                 /* its place in the training epoch's order (= index, except
                                     with reused samples: oc_sample_batch_order) */
    struct oc_sample_batch batch; /* its blocks; seeds = batch.input_ids[0 .. n_seeds) */
    float *x;                     /* batch.n_input x feat_dim gathered rows */
    /* the store's historical embeddings for it (outre; all zero elsewhere), filled as it
       was sampled (oc_store_hop), valid until oc_batch_pipe_done */
    struct oc_store_hist hist;
    void *rows;   /* (private) the row buffer x lies in */
    uint64_t seq; /* (private) sampler threads: the sample stage's count */
};

struct oc_batch_pipe_config {
    struct oc_store *store;              /* gathers (and, for some strategies, samples) */
    const struct oc_graph *graph;        /* what the sample stage samples from */
    const struct oc_sample_opts *sample; /* fanouts and seed */
    struct oc_pool *pool;                /* the sampler's and the store's (may be NULL) */
    const uint64_t *train_ids;           /* borrowed for the pipeline's lifetime */
    uint64_t n_train, batch_size;
    uint32_t depth; /* batches fetched ahead of the one training (>= 1) */
    /* input rows a row buffer keeps (what train reserved per batch); a buffer grown past
       it for a larger batch shrinks back at its next smaller batch, so the memory it took
       (from a cache that gave rows back, say) is free again; 0 = buffers keep all */
    uint64_t reserve_rows;
    /* the pipeline to add the stages to (the one the store was opened on), started
       by oc_batch_pipe_new and freed by its owner before the batch pipeline; NULL:
       the batch pipeline makes and owns one */
    struct oc_pipeline *pipeline;
    int no_shuffle;    /* batches of train_ids in their given order (refused by a store that
                       samples its own batches) */
    int reserve_now;   /* allocate every row buffer at reserve_rows at once, so the budget
                        counts them from the start (0: they grow with the batches) */
    int reuse_samples; /* every training epoch e trains on sample epoch 0's batches, in the
                          order oc_sample_batch_order(seed, e): oc_batch_pipe_epoch takes
                          the training epoch */
};

struct oc_batch_pipe;

/* Counters since the pipeline was created. */
struct oc_batch_pipe_stats {
    uint64_t n_sampled; /* batches the sample stage sampled (or loaded from the store) */
    uint64_t n_fetched; /* batches whose features the fetch stage gathered */
    /* busy seconds; fetch_busy_s includes the gather lanes' (summed over lanes) */
    double sample_busy_s, fetch_busy_s;
    uint32_t lanes;                 /* gathers run at once (oc_store_gather_lanes, at most depth) */
    uint32_t samplers;              /* batches sampled at once (oc_store_caps, at most a slot
                                       each); sample_busy_s then sums their threads */
    double wait_s;                  /* trainer time blocked in oc_batch_pipe_next */
    struct oc_topo_disk_stats topo; /* the sample stage's disk-topology reads (0 in RAM) */
};

/*
 * Builds the stages with depth + 1 row buffers (or oc_store_row_buffers'
 * fewer) and as many slots for sampled batches (or the store caps' lookahead
 * count). Nothing is sampled before the
 * first oc_batch_pipe_epoch.
 */
int oc_batch_pipe_new(const struct oc_batch_pipe_config *cfg, struct oc_batch_pipe **out,
                      struct oc_err *err);
void oc_batch_pipe_free(struct oc_batch_pipe *bp);
/*
 * Starts sample epoch e: its training ids shuffled by (seed, e), cut into
 * batches, sampled ahead and shown to the store (prepare). Its features are
 * not gathered before oc_batch_pipe_open, so it may be started as soon as
 * every batch of the previous epoch was handed out, before the trainer
 * evaluates that epoch with the store.
 */
int oc_batch_pipe_epoch(struct oc_batch_pipe *bp, uint64_t e, struct oc_err *err);
/*
 * Lets the fetch stage gather the epoch started last: from now until its
 * last batch is handed out the store's gathers are the pipeline's.
 */
int oc_batch_pipe_open(struct oc_batch_pipe *bp, struct oc_err *err);
uint64_t oc_batch_pipe_n_batches(const struct oc_batch_pipe *bp);
/* Row buffers: batches handed out and not given back hold one each. */
uint32_t oc_batch_pipe_n_rows(const struct oc_batch_pipe *bp);
/*
 * Lends one of the pipeline's row buffers, idle between epochs (every batch
 * of the last epoch given back, the next not opened), so evaluation gathers
 * into memory the budget already counts for the pipeline. The borrower may
 * grow *x with oc_realloc (never an aligned allocation) and must hand it
 * back, with its capacity, through oc_batch_pipe_return_rows before
 * oc_batch_pipe_open. OC_ERR_ARG at any other time.
 */
int oc_batch_pipe_lend_rows(struct oc_batch_pipe *bp, float **x, uint64_t *cap_floats,
                            struct oc_err *err);
void oc_batch_pipe_return_rows(struct oc_batch_pipe *bp, float *x, uint64_t cap_floats);
/*
 * The next batch of the epoch: in plan order, or in the store's order for a
 * strategy that reorders. Waits for it. A stage's error (naming the batch)
 * is returned here; OC_ERR_NOTFOUND once the epoch's batches were all handed out.
 */
int oc_batch_pipe_next(struct oc_batch_pipe *bp, struct oc_pipe_batch **out, struct oc_err *err);
/* Gives a batch back (the store's oc_store_done first): its slot is reused for a later batch. */
void oc_batch_pipe_done(struct oc_batch_pipe *bp, struct oc_pipe_batch *b);
void oc_batch_pipe_stats(const struct oc_batch_pipe *bp, struct oc_batch_pipe_stats *out);

#endif
