/*
 * hyper_int.h — private to src/store: hyperbatches (hyper.c), the misses of
 * the coming batches grouped and read in one block pass per group.
 *
 * Place in the data flow: between a strategy's prepare side (the batch
 * pipeline's sample stage, or a loader) and its gathers, on a read stage of
 * the store's pipeline (store_stages); static, helios, ginex and gnndrive
 * use it.
 * Thread-safety: as below (prepare on one thread, in plan order; gathers on
 * any threads).
 * Ownership: struct store_hyper owns its groups, reader and stage
 * (store_hyper_free, after the stages are joined); a taken group is the
 * taker's until store_hyper_done.
 */
#ifndef OFFCORE_STORE_HYPER_INT_H
#define OFFCORE_STORE_HYPER_INT_H

#include <stdint.h>

#include "store/cache_int.h"
#include "store/sampling_int.h"

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
struct store_hyper_batch;                /* a batch taken: take's handle for row and done */
#define STORE_HYPER_MAX_BATCHES      16u /* batches per group at most (each holds a pipeline slot) */
#define STORE_HYPER_MAX_DISK_BATCHES 256u /* the same, groups on disk */
/* a sampled batch held in a pipeline slot, per input row: its ids, the blocks' edges and
   offsets (about five edges per input row at fanouts like 15,10,5) */
#define STORE_HYPER_SLOT_ROW_BYTES 48u
/* --hyperbatch-disk's help, the same for every strategy that offers it */
#define STORE_HYPER_DISK_HELP                                                                 \
    "with --hyperbatch: stage each group's rows in a scratch file under the plan directory, " \
    "packed per batch by one scan of the features (AGNES's spill), so that a group holds "    \
    "many more batches (sampled ahead again, only their ids kept)"
/* The stats table entry of a strategy with --hyperbatch-disk: the rows its packing wrote
   (features.hyper.write_bytes in the log; store_hyper_stats fills plan_write_bytes). */
#define STORE_HYPER_STAT                                                                         \
    {                                                                                            \
        "hyper", "write_bytes", NULL, OC_STORE_STAT_BYTES, OC_STORE_STAT_FIELD(plan_write_bytes) \
    }
/* A hyperbatch's shape: the caller sets disk and takers, store_hyper_size the rest. */
struct store_hyper_shape {
    uint64_t cap;         /* rows per group */
    uint32_t max_batches; /* batches per group */
    uint32_t takers;      /* batches taken at once at most (on disk, each holds its rows) */
    uint64_t batch_rows;  /* the batch bound of input rows it was sized for */
    int disk;             /* groups staged in scratch files (hyper_disk.c), else in memory */
    uint64_t part_bytes;  /* on disk: the packing scan's buffer */
    int fed;              /* the groups' own feeder (store_hyper_open) samples the plan's batches
                             again and prepares them, so the pipeline's slots hold none */
};
/*
 * --hyperbatch F (share) of a budget of mem_bytes for batches of at most
 * batch_rows input rows: fills *sh (in memory: rows per group, at least
 * batch_rows; on disk: batches per group from what a batch costs) and
 * returns the bytes to take off the budget for them (the groups, their
 * reader or scan, and the sampled batches of the pipeline slots they hold).
 */
uint64_t store_hyper_size(const struct oc_store *s, double share, uint64_t mem_bytes,
                          uint64_t batch_rows, struct store_hyper_shape *sh);
/* The error for --hyperbatch-disk given without --hyperbatch (OC_ERR_ARG). */
int store_hyper_disk_alone(const struct oc_store *s, struct oc_err *err);
/*
 * Opens the groups, the reader (on disk: the scan and the groups' scratch
 * files under cfg->plan_dir/hyper; no plan directory is OC_ERR_ARG) and the
 * read stage (on store_stages). With sh->fed also the groups' feeder
 * (store_feed_start): it samples the plan's batches again on its own thread
 * and shows each to fill (the strategy's prepare side), as far ahead as the
 * groups have room; a take then waits until its batch was fed. *out is set
 * even on failure (free it with store_hyper_free after the stages are joined).
 */
int store_hyper_open(struct oc_store *s, const struct store_hyper_shape *sh,
                     const struct oc_store_config *cfg, store_feed_fn fill,
                     struct store_hyper **out, struct oc_err *err);
/* Whether h's own feeder prepares its batches (shape.fed): the pipeline's hook then must not. */
int store_hyper_fed(const struct store_hyper *h);
/* Frees h and its feeder, logging (rank's INFO) the batches it fed and took. */
void store_hyper_free(struct store_hyper *h);
/* Slots the batch pipeline should have so that both groups fill (caps.lookahead): none when
   there are no groups or their own feeder fills them. */
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
/* begin, add and end for a sampled batch whose misses are the input rows set in bits (bit j
   of byte j / 8: input row j; ginex: as its plan has them), bits past n_input clear. */
int store_hyper_prepare_bits(struct oc_store *s, struct store_hyper *h, uint64_t epoch,
                             uint64_t batch, const struct oc_sample_batch *b, const uint8_t *bits,
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
                     struct store_hyper_batch **out, struct oc_err *err);
int store_hyper_gather(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                       struct store_disk *d, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                       uint64_t n, float *out, struct oc_err *err);
int store_hyper_done(struct store_hyper *h, struct store_hyper_batch *t, struct oc_err *err);
/* Between take and done: the row of features.npy (store_row_of applied) as staged for
   taken batch t, or NULL if its group does not hold it (for a strategy with its own lookup;
   store_hyper_gather is this with store_cache's). */
const void *store_hyper_row(const struct store_hyper_batch *t, uint64_t row);
/* Adds the group reads (read_bytes, n_reads) and the held bytes to out. */
void store_hyper_stats(const struct store_hyper *h, struct oc_store_stats *out);

#endif
