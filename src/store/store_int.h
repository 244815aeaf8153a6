/*
 * store_int.h — private to src/store: the strategy vtable, the common part of
 * every store, and helpers shared by the strategies (row conversion, pool
 * loops over rows, the O_DIRECT row reader).
 *
 * Place in the data flow: registry.c dispatches oc_store_* calls through a
 * struct store_strategy; each strategy folder (memory/, mmap/, direct/,
 * static/, ginex/, gnndrive/, diskgnn/, helios/, outre/) defines one and
 * registry.c lists it. A folder's headers are its own (tools/check_deps.sh:
 * no other strategy includes them). A strategy's options struct (the fields
 * its option table's offsets point into, filled by store_opts_read) and its
 * test knobs are in its private header (static/static_int.h,
 * gnndrive/gnndrive_int.h, ginex/ginex_int.h, diskgnn/diskgnn_int.h,
 * helios/helios_int.h, outre/outre_int.h), which tests include.
 * Thread-safety: a store's calls come from the batch pipeline's sample stage
 * (hop, sampled: in plan order), its fetch stage (load, gather) and the
 * trainer (done), so a strategy with sample-stage or trainer hooks keeps
 * what they share with the fetch stage thread-safe; a strategy with lanes (n_lanes > 1: direct,
 * static, mmap, ginex) is also gathered on by up to n_lanes gather threads at
 * once, each with its own lane's reader and scratch, sharing only what they
 * read (ginex: what it writes, in turns of plan order); row loops
 * run tasks on the store's pool, each task writing only its own output rows.
 * Ownership: struct oc_store owns its `impl` (freed by the strategy's free);
 * the dataset, graph and pool are borrowed.
 */
#ifndef OFFCORE_STORE_INT_H
#define OFFCORE_STORE_INT_H

#include <assert.h>
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

/*
 * The samplers a strategy drives itself, off the batch pipeline (ginex's
 * inspector, diskgnn's planner; sampling.c). Over an on-disk topology each
 * gets a pool of STORE_DISK_SAMPLERS threads: they wait on neighbor-list
 * reads, not on a core, so more of them keep more reads in flight (the
 * batches are the same for any count); each holds a topology reader (its
 * ring's staging) and scratch, STORE_DISK_SAMPLER_BYTES at most. In RAM the
 * stage samples on its own thread, beside training's pool.
 */
#define STORE_DISK_SAMPLERS      4u
#define STORE_DISK_SAMPLER_BYTES (2u << 20)

/* Pool threads of a strategy's sampler over g: STORE_DISK_SAMPLERS on disk, else 0. */
uint32_t store_sampler_threads(const struct oc_graph *g);
/* What those threads hold, for the strategy's budget: threads x STORE_DISK_SAMPLER_BYTES. */
uint64_t store_sampler_pool_bytes(const struct oc_graph *g);
/*
 * The pool a sampler over g, driven by one stage of `stages`, runs on: over
 * an on-disk topology store_sampler_threads(g) threads the pipeline owns
 * (oc_pipeline_pool: freed with it, after its stages are joined, so the
 * sampler must not sample after that), else NULL (the stage's own thread).
 * Called by the pipeline's owner (the store's open).
 */
int store_sampler_pool(struct oc_pipeline *stages, const struct oc_graph *g, struct oc_pool **out,
                       struct oc_err *err);
/*
 * Adds smp's topology counters since *seen (all zero for a new sampler) to
 * the store's topology figures (struct oc_store_stats, `topo`), then sets
 * *seen to them. From the thread driving smp, between its sampling calls;
 * before freeing smp, so nothing it read is lost. smp NULL: nothing.
 */
void store_topo_add(const struct oc_store *s, const struct oc_sampler *smp,
                    struct oc_topo_disk_stats *seen);
/* The store's tally so far (any thread). */
void store_topo_read(const struct oc_store *s, struct oc_topo_disk_stats *out);

/*
 * The feeder of a store over other ids (cfg->accesses; feed.c) whose
 * strategy prepares each batch of the plan ahead of its gather (gnndrive's
 * extractors, helios's reads, static's hyperbatch groups), which the batch pipeline would show it
 * (oc_store_sampled) but a partitioned run does not (train/dist_rows.c
 * gathers per batch itself): a stage of the store's pipeline, one thread,
 * samples the plan's batches on cfg->accesses->graph in plan order (epochs
 * [first_epoch, n_epochs), exactly as the trainer samples them), turns each
 * into the ids the store will be gathered with for it (the access map) and
 * calls fn(s, epoch, batch, b) with b's input_ids and n_input those (its
 * blocks empty). fn may block (a free record or group); it returns an error to fail
 * the pipeline, and the feeder stops once the pipeline is cancelled.
 */
struct store_feed;
typedef int (*store_feed_fn)(struct oc_store *s, uint64_t epoch, uint64_t batch,
                             const struct oc_sample_batch *b, struct oc_err *err);
/* What the feeder holds for a plan whose batches have at most plan_rows input rows, of which at
   most rows are the store's: its sampler and batch, the epoch's order, the mapped ids. */
uint64_t store_feed_bytes(const struct oc_store_config *cfg, uint64_t plan_rows, uint64_t rows);
/* Opens the feeder (its sampler, on the calling thread) and starts its stage on store_stages.
   *out is set even on failure (free it with store_feed_free after the stages are joined). */
int store_feed_start(struct oc_store *s, const struct oc_store_config *cfg, store_feed_fn fn,
                     struct store_feed **out, struct oc_err *err);
void store_feed_free(struct store_feed *f);
/* Logs (rank's INFO) what f fed and how its batches were gathered, by the store `who`, from
   their `records` (served) or read directly; then frees f (NULL: nothing logged). */
void store_feed_close(struct store_feed *f, const char *who, const char *records, uint64_t served,
                      uint64_t direct);
/* Batches fed so far (any thread). */
uint64_t store_feed_count(const struct store_feed *f);
/*
 * Waits until f fed batch `batch` of `epoch` of the plan (any thread; for a
 * strategy whose gather of a batch must come after its prepare: static's
 * hyperbatch groups). The pipeline's error (or that it closed) once it is
 * cancelled first; OC_ERR_INTERNAL for a batch outside f's plan.
 */
int store_feed_wait(struct store_feed *f, uint64_t epoch, uint64_t batch, struct oc_err *err);

/* The graph the plan's batches are sampled on: cfg->accesses's, else cfg->graph. */
static inline const struct oc_graph *store_plan_graph(const struct oc_store_config *cfg)
{
    return cfg->accesses ? cfg->accesses->graph : cfg->graph;
}

/* oc_store_next_batch in plan order: 0, 1, ... n_plan_batches - 1 per epoch. */
int store_next_in_order(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err);

/* A training plan in cfg: what a strategy that samples or sees the plan's batches needs. */
static inline int store_has_plan(const struct oc_store_config *cfg)
{
    return cfg->sample_opts && cfg->graph && cfg->train_ids && cfg->n_train && cfg->batch_size &&
           cfg->n_epochs > cfg->first_epoch;
}

/*
 * The shape a store of cfg's dataset has (dtype, n_nodes, feat_dim,
 * row_bytes, n_plan_batches), into s: the registry's open, and sizing
 * without a store (a strategy's smallest budget).
 */
void store_shape(struct oc_store *s, const struct oc_store_config *cfg);

/* Thread-safe strerror (GNU strerror_r: returns a static string or fills buf). */
static inline const char *store_strerror(int e, char *buf, size_t n)
{
    return strerror_r(e, buf, n);
}

/* The row of features.npy that holds node id's features. */
static inline uint64_t store_row_of(const struct oc_store *s, uint64_t id)
{
    assert(id < s->n_nodes);
    return s->row_of32 ? s->row_of32[id] : s->row_of64 ? s->row_of64[id] : id;
}

/* File offset of a row of features.npy (row space: no layout lookup). */
static inline uint64_t store_file_off(const struct oc_store *s, uint64_t row)
{
    return s->data_offset + row * (uint64_t)s->row_bytes;
}

/* File offset of node id's row. */
static inline uint64_t store_row_off(const struct oc_store *s, uint64_t id)
{
    return store_file_off(s, store_row_of(s, id));
}

/*
 * Where a row read as stored lands in its f32 output row: in place (f32), or
 * the upper half (f16: widened in place afterwards, store_row_widen_inplace).
 */
static inline void *store_stored_dst(const struct oc_store *s, float *out_row)
{
    return s->dtype == OC_DTYPE_F16 ? (uint8_t *)out_row + s->row_bytes : (void *)out_row;
}

/* Bytes of the layout's map the registry loads for a dataset (0 without a layout). */
uint64_t store_row_map_bytes(const struct oc_dataset *ds);

/* Node ids to rows of features.npy (map: row_map as loaded; NULL: ids as they are). */
void store_rows_of(const struct oc_dataset *ds, const void *map, const uint64_t *ids, uint64_t n,
                   uint64_t *rows);

/* ---- rows ---------------------------------------------------------------- */

/* Converts one row as stored (f32 or f16, any alignment) into dim f32 values. */
void store_row_to_f32(enum oc_dtype dtype, const void *src, uint64_t dim, float *dst);

/*
 * Widens in place an f16 row that was read into the upper half of its f32
 * output row (bytes [2·dim, 4·dim) of dst), front to back: each chunk of
 * halves is copied out before any float overwrites it.
 */
void store_row_widen_inplace(float *dst, uint64_t dim);

/*
 * Runs fn(ctx, lo, hi) over [0, n) in fixed ranges of STORE_ROWS_PER_TASK on
 * pool (inline when n fits one range, pool is NULL, or another thread holds
 * the pool: oc_pool_run_or_inline). The ranges depend only on n, never on
 * the number of threads, and fn's result on no thread.
 */
#define STORE_ROWS_PER_TASK 512u
typedef void (*store_rows_fn)(void *ctx, uint64_t lo, uint64_t hi);
int store_for_rows(struct oc_pool *pool, uint64_t n, store_rows_fn fn, void *ctx,
                   struct oc_err *err);

/*
 * Per-row scratch a disk-reading strategy may grow to for one batch: the
 * batch reader's request, span and callback records
 * (oc_io_batch_request_bytes) and a slot (4), each array grown by doubling,
 * so up to twice that. Used for budget checks.
 */
#define STORE_ROW_SCRATCH_BYTES ((uint64_t)2 * (oc_io_batch_request_bytes() + sizeof(uint32_t)))
/*
 * Rows the cache loader queues per run (store_cache_load), fewer under a
 * budget that gives the reader fewer (store_budget_rows: its arrays are
 * budgeted for those, and a cache being filled cannot give rows back yet).
 */
#define STORE_LOAD_ROWS 4096u
/* The io batch reader's arrays never hold fewer records than this (their first allocation). */
#define STORE_MIN_READER_ROWS 256u

/*
 * Input rows one batch is expected to request, for sizing: with a training
 * plan (sample_opts, batch_size), batch_size x prod(1 + fanout) capped at
 * n_nodes (a layer taking every neighbor makes it n_nodes); without one,
 * min(n_nodes, 65536).
 */
uint64_t store_expected_rows(const struct oc_store *s, const struct oc_store_config *cfg);
/*
 * M: the largest input of the first n_measure batches of cfg's plan (from
 * cfg->first_epoch), sampled now, plus a quarter (who names the strategy in
 * errors). Needs graph, sample_opts, train_ids, n_train, batch_size. A store
 * over other ids (cfg->accesses): the batches sampled on the plan's graph,
 * their rows the access map's (the ids the store is gathered with).
 *
 * *rows is M, and *misses: the most input rows of one of those batches that
 * are not set in `cached` (a bitmap over the store's ids, bit v of byte v / 8;
 * NULL: none is), plus a quarter; *plan_rows (may be NULL): the most input
 * rows of the sampled batches themselves, plus a quarter (with cfg->accesses
 * more than *rows: what a sampler of the plan holds).
 */
int store_measure_misses(const struct oc_store_config *cfg, uint32_t n_measure, const char *who,
                         const uint8_t *cached, uint64_t *rows, uint64_t *misses,
                         uint64_t *plan_rows, struct oc_err *err);
/*
 * Rows of one batch: the size train measured (cfg->batch_rows) when it gave
 * one, else store_expected_rows. For fixed capacities (gnndrive's records).
 */
uint64_t store_batch_rows(const struct oc_store *s, const struct oc_store_config *cfg);
/*
 * The same, at least STORE_MIN_READER_ROWS (where the reader's arrays start):
 * to budget arrays that grow on demand (the readers of direct, static, ...).
 */
uint64_t store_budget_rows(const struct oc_store *s, const struct oc_store_config *cfg);

/* A row to read: its node and where it goes (a buffer slot, a row of the batch). */
struct store_miss {
    uint64_t id, pos;
};
/* Sorts a by id (or row, where a caller keys it so), in place (a heapsort: qsort may allocate
   outside the accountant). */
void store_miss_sort(struct store_miss *a, uint64_t n);

/* ---- rows read from the feature file (direct, static misses) ------------- */

/*
 * The feature file opened with O_DIRECT (where the filesystem allows), one
 * batch reader (io_uring, pread fallback) and the per-gather slot scratch of
 * a cache (store_cache_gather), used by one gather at a time: a strategy
 * that gathers on several lanes at once has one per lane (store.h,
 * oc_store_gather_lanes). Requests land directly in the output rows: an f32
 * row in place, an f16 row in the upper half of its output row (widened by
 * store_row_widen_inplace).
 */
struct store_disk {
    struct oc_file *f;
    struct oc_io_batch *batch;
    uint32_t *slots; /* store_cache_gather: the slot of each requested row */
    uint64_t cap_slots;
    uint64_t max_rows;       /* rows a gather queues per run, at most (0: all of them at once) */
    struct store_miss *miss; /* a bounded gather's misses, sorted by id */
    uint64_t cap_miss;
};

#define STORE_DISK_DEPTH        256u
#define STORE_DISK_BOUNCE_BYTES (2u << 20)

/* Opens s->path; merge = 0 gives every row its own read. */
int store_disk_open(const struct oc_store *s, int merge, struct store_disk *d, struct oc_err *err);
/* The same with a bounce of bounce_bytes (store_disk_open: STORE_DISK_BOUNCE_BYTES). */
int store_disk_open_sized(const struct oc_store *s, int merge, size_t bounce_bytes,
                          struct store_disk *d, struct oc_err *err);
void store_disk_close(struct store_disk *d);
/* Queues node id's row into its output row out_row (feat_dim floats). */
int store_disk_queue(const struct oc_store *s, struct store_disk *d, uint64_t id, float *out_row,
                     struct oc_err *err);
/* The same for a row of features.npy (row space: store_row_of already applied). */
int store_disk_queue_row(const struct oc_store *s, struct store_disk *d, uint64_t row,
                         float *out_row, struct oc_err *err);
/*
 * Reads everything queued; adds the batch reader's read bytes and reads to
 * s->stats. Errors name the file and offset (truncated: OC_ERR_FORMAT; read
 * failure: OC_ERR_IO).
 */
int store_disk_run(struct oc_store *s, struct store_disk *d, struct oc_err *err);
/* The same without the error prefix; counted = 0 leaves s->stats alone (a cache's fill). */
int store_disk_run_counted(struct oc_store *s, struct store_disk *d, int counted,
                           struct oc_err *err);
/*
 * Empties the batch after a failed queue: runs it (the queued destinations are
 * valid output rows) and drops its result, so the next gather starts clean.
 */
void store_disk_discard(struct store_disk *d);
/*
 * Grows d's slot scratch and request arrays to n rows, or d->max_rows when
 * that is fewer, and then its miss list to n (store_cache_gather does it too).
 */
int store_disk_reserve(struct store_disk *d, uint64_t n, struct oc_err *err);
/* Bounce buffer plus request arrays of the batch reader, the slot scratch and miss list. */
size_t store_disk_held_bytes(const struct store_disk *d);

/*
 * Lanes to keep a reader for: cfg->lanes (at least 1, at most
 * STORE_MAX_LANES), fewer while that many readers of lane_bytes each would
 * take more than room bytes (room 0: no limit).
 */
uint32_t store_lanes_for(const struct oc_store_config *cfg, uint64_t lane_bytes, uint64_t room);
/* Opens readers d[0..n) (store_disk_open); after a failure close them with store_disks_close. */
int store_disks_open(const struct oc_store *s, int merge, struct store_disk *d, uint32_t n,
                     struct oc_err *err);
void store_disks_close(struct store_disk *d, uint32_t n);
size_t store_disks_held_bytes(const struct store_disk *d, uint32_t n);

/* Widens every row of out (n rows read by store_disk_queue) over the pool; no-op for f32. */
int store_disk_widen_all(const struct oc_store *s, float *out, uint64_t n, struct oc_err *err);

/*
 * Counts a gather of n rows, misses of them from the feature file, into
 * s->stats: the tiers (the rest CPU) and requested_disk_bytes.
 */
static inline void store_count_gather(struct oc_store *s, uint64_t n, uint64_t misses)
{
    s->stats.requested_disk_bytes += misses * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += n - misses;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += misses;
}

/* ---- a RAM cache of rows, misses read from disk (cache.c) --------------- */

#define STORE_NO_SLOT UINT32_MAX

/*
 * Rows as stored (f16 or f32) in n slots, found through table (u32 per node:
 * the slot, STORE_NO_SLOT if absent) when it is set, else by binary search
 * over the ascending ids, whose k-th has slot slot_of[k] (slot k when slot_of
 * is NULL). Only slots below n_live hold their row: a cache that gave memory
 * back (static) keeps its lookup and drops its last slots, so a lookup of a
 * slot >= n_live is a miss. Fewer than STORE_NO_SLOT rows. The per-gather
 * scratch (one slot per requested row) is the reader's (struct store_disk).
 */
struct store_cache {
    uint64_t n, n_live;
    uint8_t *rows;
    uint32_t *table;
    uint64_t *ids;
    uint32_t *slot_of;
};

uint32_t store_cache_lookup(const struct store_cache *c, uint64_t id);
/*
 * Rows [0, n) of out from their slots of rows (as stored, row_bytes apart):
 * row i converted from slot slots[i], or, where that is STORE_NO_SLOT, its
 * row read in place by store_disk_queue widened (f16); on s->pool.
 */
int store_slots_copy(const struct oc_store *s, const uint8_t *rows, const uint32_t *slots,
                     uint64_t n, float *out, struct oc_err *err);
/*
 * oc_store_gather through the cache: hits from c, misses read through d into
 * their output rows; counts tiers CPU / DISK and requested_disk_bytes.
 */
int store_cache_gather(struct oc_store *s, struct store_cache *c, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);
/*
 * Rows a cache of `avail` bytes holds and its lookup: the u32 table or the
 * sorted ids (sorted_lookup_bytes a cached row: 8 for the id, 12 with slot_of),
 * whichever caches more rows (the table on a tie).
 */
void store_cache_plan(const struct oc_store *s, uint64_t avail, uint64_t sorted_lookup_bytes,
                      uint64_t *n_cached, int *use_table);
/*
 * Reads the rows of slots [lo, hi) of c (rows, and its lookup, set) from the
 * feature file through d into place, in id order, same-page reads merged,
 * s->load_run_rows per run. counted: the reads go into s->stats (rows taken
 * back during training; not the fill at open).
 */
int store_cache_load(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t lo,
                     uint64_t hi, int counted, struct oc_err *err);
struct store_yield;
/*
 * Fills c with the n rows of ids (ascending, oc_alloc'd; taken over: kept as
 * the sorted lookup or freed) read through d, same-page reads merged; who
 * names the strategy in errors. With y (initialized over c) the rows are
 * its mapping (store_yield_map), else oc_alloc'd. On failure c holds what was
 * set (free it with store_cache_free, after store_yield_deinit).
 */
int store_cache_fill(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t n,
                     int use_table, uint64_t *ids, struct store_yield *y, const char *who,
                     struct oc_err *err);
/* Rows, lookup and slot scratch. */
uint64_t store_cache_held_bytes(const struct oc_store *s, const struct store_cache *c);
/* Frees rows, table, ids and slots; c is empty again. */
void store_cache_free(struct store_cache *c);

/* ---- a cache that gives memory back (cache_yield.c) --------------------- */

/*
 * The rows of a store_cache in an anonymous mapping that gives its last live
 * slots back to the accountant when a request would pass the budget, and
 * reads them back when memory frees up (static, diskgnn). Readers of the
 * rows hold store_yield_read_lock; lookups see given-back slots as misses.
 */
struct store_yield {
    struct store_cache *cache; /* borrowed; its n_live [lock] */
    uint64_t row_bytes;
    const char *who;             /* "store static": names the strategy in logs and errors */
    struct oc_reclaim_lock lock; /* readers of rows: read; giving back and taking back: write */
    struct oc_giveback gb;       /* the give-back (core giveback.c; yield_rows its policy) */
    size_t map_bytes;            /* the mapping of cache->n slots, 0 = none */
    _Atomic uint64_t missing;    /* n - n_live, for a look without the lock */
    uint64_t yielded_rows, taken_rows; /* since open [lock] */
};

int store_yield_init(struct store_yield *y, struct store_cache *c, uint64_t row_bytes,
                     const char *who, struct oc_err *err);
/* Maps (and accounts) rows for the cache's n slots: cache->rows set, n_live = n. */
int store_yield_map(struct store_yield *y, struct oc_err *err);
/* Registers the give-back with the accountant (thread.h, oc_giveback): a budgeted store does. */
int store_yield_register(struct store_yield *y, struct oc_err *err);
/* Unregisters (waiting for a reclaim in progress), unmaps, destroys the lock. */
void store_yield_deinit(struct store_yield *y);
/* Around every read of the rows or of n_live; the unlock logs a give-back not yet logged. */
void store_yield_read_lock(struct store_yield *y);
void store_yield_read_unlock(struct store_yield *y);
/* Slots given back and not yet taken back (no lock). */
uint64_t store_yield_missing(const struct store_yield *y);
/*
 * Reads given-back slots again, through d, while the budget has room for
 * them (a margin left); on a reader's thread, outside the read side.
 */
int store_yield_take_back(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                          struct oc_err *err);
/*
 * What a gather through a giving-back cache does first, outside its lock,
 * where the cache can still give for it: d's scratch for n rows, and the rows
 * given back taken back while there is room.
 */
int store_yield_reserve(struct oc_store *s, struct store_yield *y, struct store_disk *d, uint64_t n,
                        struct oc_err *err);
/* store_cache_gather through a giving-back cache: store_yield_reserve, then the gather
   under the read side. */
int store_yield_gather(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);

/* ---- ginex's cache size, for --strategy auto ------------------------------ */

/*
 * The rows ginex's cache would hold under cfg (its budget split as at open,
 * spills in files when cfg->plan_dir is set); OC_ERR_BUDGET as open would
 * fail (ginex/ginex.c). For --strategy auto's inspection (inspect.c).
 */
int oc_store_ginex_cache_rows(const struct oc_store_config *cfg, uint64_t *rows,
                              struct oc_err *err);

/* ---- hyperbatches (hyper.c) ------------------------------------------------ */

/*
 * The misses of the next batches, grouped (at most max_batches, at most cap
 * rows) as the batch pipeline prepares them (static, helios, gnndrive) or
 * the strategy loads them (ginex), read by a stage of the store's pipeline
 * in one block pass per group, and served to those batches' gathers
 * (AGNES's hyperbatches). Two groups: one read while the other is gathered.
 * Prepare sees the batches in plan order on one thread; gathers take them
 * on any threads, in any order within the groups being gathered.
 */
struct store_hyper;
struct store_hyper_group; /* a group being gathered: take's handle for row and done */
/* Bytes a hyperbatch of cap rows per group and max_batches batches holds, for budgets. */
uint64_t store_hyper_bytes(const struct oc_store *s, uint64_t cap, uint32_t max_batches);
#define STORE_HYPER_MAX_BATCHES 16u /* batches per group at most (each holds a pipeline slot) */
/* a sampled batch held in a pipeline slot, per input row: its ids, the blocks' edges and
   offsets (about five edges per input row at fanouts like 15,10,5) */
#define STORE_HYPER_SLOT_ROW_BYTES 48u
/*
 * --hyperbatch F (share) of a budget of mem_bytes for batches of at most
 * batch_rows input rows: rows per group (*cap, at least batch_rows) and
 * batches per group; returns the bytes to take off the budget for them (the
 * groups, their reader, and the sampled batches of the pipeline slots they hold).
 */
uint64_t store_hyper_size(const struct oc_store *s, double share, uint64_t mem_bytes,
                          uint64_t batch_rows, uint64_t *cap, uint32_t *max_batches);
/* Opens the groups, the reader and the read stage (on store_stages). *out is set even on
   failure (free it with store_hyper_free after the stages are joined). */
int store_hyper_open(struct oc_store *s, uint64_t cap, uint32_t max_batches,
                     struct store_hyper **out, struct oc_err *err);
void store_hyper_free(struct store_hyper *h);
/* Slots the batch pipeline should have so that both groups fill (caps.lookahead). */
uint32_t store_hyper_lookahead(const struct store_hyper *h);
/*
 * Prepare's side (one thread, plan order): begin a batch of n_max missed
 * rows (*staged = 0: they do not fit a group, its gather reads them), add
 * each missed row of features.npy when staged (past the group's room one is
 * dropped, and read by the gather), end it (a group closes at max_batches,
 * when full, or at the end of an epoch of the plan). Begin waits for a free
 * group, so a batch is prepared only once the batches of the group before
 * the one being filled are all done.
 */
int store_hyper_begin(struct store_hyper *h, uint64_t epoch, uint64_t batch, uint64_t n_max,
                      int *staged, struct oc_err *err);
void store_hyper_add(struct store_hyper *h, uint64_t row);
int store_hyper_end(struct store_hyper *h, struct oc_err *err);
/* A strategy's lookup deciding which input ids of a batch are misses: miss(ctx, id) is
   asked between lock(ctx) and unlock(ctx), for ids below n_nodes. */
struct store_hyper_lookup {
    void *ctx;
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
    int (*miss)(void *ctx, uint64_t id);
};
/* begin, add and end for a sampled batch whose misses lk decides (gnndrive: its buffer). */
int store_hyper_prepare_by(struct oc_store *s, struct store_hyper *h,
                           const struct store_hyper_lookup *lk, uint64_t epoch, uint64_t batch,
                           const struct oc_sample_batch *b, struct oc_err *err);
/* store_hyper_prepare_by with the misses of a store_cache behind yield y (static, helios):
   ids not cached, looked up under y's read side. */
int store_hyper_prepare(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                        uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
                        struct oc_err *err);
/* Closes the group being filled, if any, so that its read starts (prepare's side: when the
   next batches will not be prepared until earlier ones are gathered, as at the end of a
   ginex superbatch). */
int store_hyper_flush(struct store_hyper *h, struct oc_err *err);
/*
 * Gather's side (any threads, each batch once, after its prepare): take the
 * batch's group (*out; waiting for its read; OC_ERR_INTERNAL naming the
 * batch if no group stages it: never prepared, or taken already), gather its
 * rows, then done (the group's last batch done frees it for prepare).
 * store_hyper_gather does all three for a store_cache behind y, rows neither
 * it nor the group holds read through d (static, helios: one thread); a
 * strategy with its own lookup calls take, store_hyper_row and done (ginex,
 * gnndrive's extractors).
 */
int store_hyper_take(struct store_hyper *h, uint64_t epoch, uint64_t batch,
                     struct store_hyper_group **out, struct oc_err *err);
int store_hyper_gather(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                       struct store_disk *d, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                       uint64_t n, float *out, struct oc_err *err);
int store_hyper_done(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err);
/* Between take and done: the row of features.npy (store_row_of applied) as stored in
   taken group g, or NULL if g does not hold it (for a strategy with its own lookup;
   store_hyper_gather is this with store_cache's). */
const void *store_hyper_row(const struct store_hyper_group *g, uint64_t row);
/* Adds the group reads (read_bytes, n_reads) and the held bytes to out. */
void store_hyper_stats(const struct store_hyper *h, struct oc_store_stats *out);

/* ---- hotness (hot.c) ----------------------------------------------------- */

/*
 * The n (≤ n_nodes) hottest rows by hotness, ties to the lower id, as an
 * oc_alloc'd array (*ids = NULL when n == 0): ascending, or with hottest_first
 * the hottest first (also when n == n_nodes: every node ranked; without it,
 * every node is just 0 .. n - 1, nothing measured). Checks the hotness
 * options (pre-sampling needs graph, sample_opts, train_ids, n_train,
 * batch_size: OC_ERR_ARG naming what is missing) even when n == 0.
 */
int store_hot_select(const struct oc_store *s, const struct oc_store_config *cfg,
                     enum oc_store_hotness hotness, uint64_t n, int hottest_first, uint64_t **ids,
                     struct oc_err *err);

/* CPU seconds of the I/O path (io_cpu_us) per GiB the disk delivered (0 with nothing read). */
double store_io_cpu_s_per_gib(const struct oc_store_stats *s);

/*
 * Plan files' content keys (plan_key.c): FNV-1a over tag, topology (counts,
 * index dtype, sizes and CRCs of indptr and indices; with_features: also the
 * feature dtype, size and CRC), fanouts, seed, batch size and training ids.
 */
uint64_t store_plan_key(const struct oc_store *s, const struct oc_store_config *cfg,
                        const char *tag, int with_features);
uint64_t store_fnv(uint64_t h, const void *p, size_t n);
uint64_t store_fnv_u64(uint64_t h, uint64_t v);

#endif
