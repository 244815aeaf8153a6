/*
 * rows_int.h — private to src/store: rows of features.npy as the strategies
 * read them (rows.c, registry.c's layout): a node's row and file offset, row
 * conversion (f16 widened), pool loops over rows, sizing a batch's rows
 * (expected, measured, budgeted), and the O_DIRECT row reader (struct
 * store_disk) with a reader per gather lane.
 *
 * Place in the data flow: below the caches (cache_int.h) and hyperbatches
 * (hyper_int.h); direct reads through it alone, every disk-reading strategy
 * for its misses.
 * Thread-safety: a store_disk is used by one gather at a time (a strategy
 * with lanes has one per lane); row loops run tasks on the store's pool,
 * each task writing only its own output rows.
 * Ownership: a store_disk owns its file, batch reader and scratch
 * (store_disk_close); output rows are the caller's.
 */
#ifndef OFFCORE_STORE_ROWS_INT_H
#define OFFCORE_STORE_ROWS_INT_H

#include <assert.h>
#include <stdint.h>

#include "offcore/io.h"
#include "store/strategy_int.h"

/*
 * The shape a store of cfg's dataset has (dtype, n_nodes, feat_dim,
 * row_bytes, n_plan_batches), into s: the registry's open, and sizing
 * without a store (a strategy's smallest budget).
 */
void store_shape(struct oc_store *s, const struct oc_store_config *cfg);

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

#endif
