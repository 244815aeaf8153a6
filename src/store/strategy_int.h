/*
 * strategy_int.h — private to src/store: the strategy vtable (struct
 * store_strategy), the common part of every store (struct oc_store) and what
 * the registry gives every strategy (its options struct, the stage pipeline
 * and its error, plan order).
 *
 * Place in the data flow: registry.c dispatches oc_store_* calls through a
 * struct store_strategy; each strategy folder (memory/, mmap/, direct/,
 * static/, ginex/, gnndrive/, diskgnn/, helios/, outre/) defines one and
 * registry.c lists it; opts.c reads a strategy's options. The rest of the
 * shared layer builds on this header (store_int.h lists it all).
 * Thread-safety: a store's calls come from the batch pipeline's sample stage
 * (hop, sampled: in plan order), its fetch stage (load, gather) and the
 * trainer (done), so a strategy with sample-stage or trainer hooks keeps
 * what they share with the fetch stage thread-safe; a strategy with lanes
 * (n_lanes > 1: direct, static, mmap, ginex) is also gathered on by up to
 * n_lanes gather threads at once, each with its own lane's reader and
 * scratch, sharing only what they read (ginex: what it writes, in turns of
 * plan order).
 * Ownership: struct oc_store owns its `impl` (freed by the strategy's free);
 * the dataset, graph and pool are borrowed.
 */
#ifndef OFFCORE_STORE_STRATEGY_INT_H
#define OFFCORE_STORE_STRATEGY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "offcore/io.h"
#include "offcore/pipeline.h"
#include "offcore/store.h"
#include "offcore/thread.h"

struct oc_store;

/*
 * One strategy: open, free and stats, and the life of a training batch of
 * the plan, the same five calls for every strategy (a NULL one does
 * nothing; the registry checks arguments and capabilities first):
 *
 *   sample stage:  hop* ──► sampled          (in plan order, one thread)
 *   fetch stage:   load ──► gather           (gather also off the plan: evaluation)
 *   trainer:       done                      (the batch given back to the pipeline)
 *
 * open fills s->impl and s->caps (the registry has filled the common fields
 * and validated cfg; caps start at "none": samplers 1); free releases impl
 * (it may be half-built after a failed open; s->impl may be NULL); stats
 * sets what only the strategy knows (held_bytes).
 */
struct store_strategy {
    const char *name;
    const char *summary;
    int (*open)(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err);
    void (*free)(struct oc_store *s);
    void (*stats)(const struct oc_store *s, struct oc_store_stats *out);
    /*
     * oc_store_hop: a hop's new input ids (h->mask NULL; caps.hops, n > 0), or
     * the last block's sources to prune (h->mask set; caps.prunes), marking
     * the ones served from history and filling *h->hist.
     */
    int (*hop)(struct oc_store *s, const struct oc_store_hop *h, struct oc_err *err);
    /* oc_store_sampled: batch (epoch, batch) as sampled, before its gather. */
    int (*sampled)(struct oc_store *s, uint64_t epoch, uint64_t batch,
                   const struct oc_sample_batch *b, struct oc_err *err);
    /*
     * The fetch stage's step before a gather: with out NULL, *batch is set to
     * the next batch of epoch to serve (oc_store_next_batch, which without
     * the hook is store_next_in_order; out of plan order with caps.reorders);
     * with out, batch *batch as the strategy sampled it (oc_store_load_batch;
     * caps.batches).
     */
    int (*load)(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_sample_batch *out,
                struct oc_err *err);
    /*
     * Rows of ids (checked < n_nodes) into out, for batch (epoch, batch) of
     * the plan, or off the plan (epoch STORE_OFF_PLAN: evaluation, n > 0);
     * counts tiers, requested_disk_bytes, read_bytes and n_reads into
     * s->stats (the registry counts requested_rows/bytes).
     */
    int (*gather)(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                  uint64_t n, float *out, struct oc_err *err);
    /* oc_store_done: the trainer gave batch (epoch, batch) back. */
    void (*done)(struct oc_store *s, uint64_t epoch, uint64_t batch);
    /* The strategy's own options (store.h, struct oc_store_opt; may be empty), whose
       offsets are into its options struct of opts_size bytes (its private header), which
       its open fills with store_opts_read */
    const struct oc_store_opt *opts;
    uint32_t n_opts;
    size_t opts_size;
    /* The figures only this strategy has (store.h, struct oc_store_stat); may be empty. */
    const struct oc_store_stat *stat_table;
    uint32_t n_stats;
    int writes_plan; /* writes plan files under cfg->plan_dir (`--plan-dir` applies) */
    /* non-NULL: why cfg->reuse_samples cannot hold here (open refuses it as a bad option) */
    const char *no_reuse_samples;
    /* nonzero: the most batches of gathered rows the batch pipeline holds for this strategy
       when that is fewer than depth + 1 (its lookahead is this many slots, so no more row
       buffers are made); train reserves only these (oc_store_strategy_row_buffers) */
    uint32_t row_buffers;
    /* reads features.npy whole and in order when it opens (or with its first batches), so a
       checksum the dataset's open deferred is folded into that read (struct oc_store's
       feat_crc); for every other strategy the registry reads the file before its open */
    int reads_whole_features;
    /* serves a store whose ids are not the plan's (oc_store_config.accesses): it never
       samples or sees the batches (memory, mmap, direct, static), follows the map when it
       plans or profiles (ginex's cache plan, diskgnn's windows: plan/superbatch.h's and
       plan/window.h's accesses hook; outre without embeddings), or is fed the batches as the
       map's ids (gnndrive, helios, static's hyperbatch groups: feed.c); the registry refuses
       the others such a config */
    int serves_accesses;
};

extern const struct store_strategy oc_store_memory;
extern const struct store_strategy oc_store_mmap;
extern const struct store_strategy oc_store_direct;
extern const struct store_strategy oc_store_static;
extern const struct store_strategy oc_store_gnndrive;
extern const struct store_strategy oc_store_ginex;
extern const struct store_strategy oc_store_diskgnn;
extern const struct store_strategy oc_store_helios;
extern const struct store_strategy oc_store_outre;

/* Strategy i of the registry, in registration order (NULL past the end): opts.c, tests. */
const struct store_strategy *store_strategy_at(uint32_t i);
/* cfg's options are strategy `index`'s (or none) and each set one is valid (opts.c). */
int store_opts_check(uint32_t index, const struct oc_store_config *cfg, struct oc_err *err);

/*
 * The strategy's options struct (st->opts_size bytes at out) filled from
 * cfg->opts: each option of st's table written at its offset as its type
 * (uint32_t, double, int); 0 for every option when cfg holds none of st's
 * (oc_store_open refuses another strategy's, and checks the values set).
 */
void store_opts_read(const struct store_strategy *st, const struct oc_store_config *cfg, void *out);

/* Batches begun (sampled or loaded) and given back (done): done never passes begun. */
struct store_life {
    _Atomic uint64_t begun, done;
};

/* Topology reads of the samplers the strategy drives itself (sampling.c), since open. */
struct store_topo_tally {
    _Atomic uint64_t n_lookups, n_hits, requested_bytes, read_bytes, n_reads;
};

struct oc_store {
    const struct store_strategy *strat;
    const struct oc_dataset *ds;
    struct oc_pool *pool;
    const char *path;    /* features.npy (owned by the dataset) */
    enum oc_dtype dtype; /* F32 or F16 on disk */
    uint64_t n_nodes;
    uint64_t feat_dim;
    uint64_t data_offset; /* of row 0 in the file */
    size_t row_bytes;     /* one row as stored: feat_dim x dtype size */
    /*
     * The dataset's feature layout (docs/FORMAT.md): node id -> row of
     * features.npy, u32 or u64 by the index dtype; both NULL without one
     * (row = id). row_map owns the array (the registry loads it, charged to
     * the store's budget, and frees it); a strategy that plans in row space
     * (diskgnn) keeps row_map and clears the lookups, so the shared readers
     * take its ids as rows.
     */
    const uint32_t *row_of32;
    const uint64_t *row_of64;
    void *row_map;
    struct oc_store_stats stats; /* cumulative; held_bytes filled by strategy->stats */
    uint64_t n_plan_batches;     /* batches per epoch of the config's plan (0: no plan) */
    uint64_t nb_epoch, nb_next;  /* store_next_in_order's position (nb_epoch UINT64_MAX: none) */
    struct oc_store_caps caps;   /* set by the strategy's open (store.h) */
    struct store_life *life;     /* the registry's lifecycle counters (outside the lanes' copies) */
    uint64_t load_run_rows;      /* rows store_cache_load queues per run (registry, at open) */
    struct oc_pipeline *stages;  /* where the strategy's stages run (store_stages) */
    int own_stages;              /* stages made by the store (no cfg->pipeline) */
    /* the registry's tally of the strategy's samplers' topology reads (store_topo_add),
       outside the lanes' copies too */
    struct store_topo_tally *topo;
    /*
     * features.npy's checksum when the dataset's open deferred it
     * (oc_dataset_features_crc_deferred), for a strategy that
     * reads_whole_features: the registry folds the header in before it
     * opens; the strategy folds what it reads (`memory`), or takes the check
     * over and clears feat_crc_due (diskgnn: its first scan); if feat_crc_due
     * is still set after the open, the registry reads the rest.
     */
    struct oc_crc_follow feat_crc;
    int feat_crc_due;
    /*
     * Lanes (oc_store_gather_lanes): a strategy's open sets n_lanes (1 by
     * default, at most STORE_MAX_LANES) and keeps a reader per lane. A lane's
     * gather runs on a copy of this struct whose `lane` names it and whose
     * `stats` start at zero; the registry adds them to these stats under
     * stats_lock when it returns. Outside lanes `lane` is 0.
     */
    uint32_t n_lanes, lane;
    pthread_mutex_t stats_lock;
    void *impl;
};

#define STORE_MAX_LANES 4u

/* The epoch a gather off the training plan (oc_store_gather) is given. */
#define STORE_OFF_PLAN UINT64_MAX

/*
 * The pipeline a strategy adds its background stages to (and starts):
 * cfg->pipeline, or one the store makes and owns. The registry handles the
 * life cycle for every strategy: an open that fails joins it (cancelling a
 * given pipeline: the run fails anyway) before the strategy's free, and
 * oc_store_free joins an owned one before it, so a strategy's free never
 * runs while one of its stages does.
 */
int store_stages(struct oc_store *s, struct oc_pipeline **out, struct oc_err *err);
/* The stages' first error (or that they were cancelled) into err; OC_ERR_INTERNAL if none:
   what a strategy returns when one of its stage queues closed under it. */
int store_stages_error(const struct oc_store *s, struct oc_err *err);

/* oc_store_next_batch in plan order: 0, 1, ... n_plan_batches - 1 per epoch. */
int store_next_in_order(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err);

/* Thread-safe strerror (GNU strerror_r: returns a static string or fills buf). */
static inline const char *store_strerror(int e, char *buf, size_t n)
{
    return strerror_r(e, buf, n);
}

/* CPU seconds of the I/O path (io_cpu_us) per GiB the disk delivered (0 with nothing read). */
double store_io_cpu_s_per_gib(const struct oc_store_stats *s);

/* ---- ginex's cache size, for --strategy auto ------------------------------ */

/*
 * The rows ginex's cache would hold under cfg (its budget split as at open,
 * spills in files when cfg->plan_dir is set); OC_ERR_BUDGET as open would
 * fail (ginex/ginex.c). For --strategy auto's inspection (inspect.c).
 */
int oc_store_ginex_cache_rows(const struct oc_store_config *cfg, uint64_t *rows,
                              struct oc_err *err);

#endif
