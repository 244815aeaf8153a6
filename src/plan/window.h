/*
 * window.h — DiskGNN's window planner in plan/: which batches each window
 * of a run holds (the schedule), and a window's batches sampled offline,
 * exactly as train samples them, into its trace (the input rows of each
 * batch in order, and each batch's record size). store's diskgnn lays the
 * trace out (oc_plan_layout_build; or oc_plan_batch_layout batch by batch
 * as they are sampled) and packs the window's file.
 *
 *   epochs ──► pl_windows_span(k): (epoch, first batch, count) of window k
 *   sampler ─► pl_window_sample ─► trace: off[0..n], rows[off[i]..off[i+1]),
 *                                         rec_bytes[i]      (oc_plan_trace)
 *
 * A store over other ids (a partitioned dataset's part: oc_store_accesses)
 * gives the accesses hook: the trace then holds, for each sampled batch,
 * the ids the store will be gathered with for it instead of its input ids,
 * and the batch the window holds (pl_window_batch) is those ids alone.
 *
 * A window is a run of consecutive batches of one epoch, win at a time (the
 * last of an epoch may be shorter; the whole epoch when win is 0 or the
 * epoch's length). With a head (fresh samples, the store's probe) the first
 * epoch's window 0 is its batches [0, head) and the rest of that epoch
 * follows in windows of win from there. With reuse every run epoch replays
 * epoch 0's windows, so the plan has one window per run epoch.
 *
 * Place in the data flow: plan (window.c), on sample; used by store's
 * diskgnn (its builder owns a pl_window; its pipe's planner stage follows
 * the schedule).
 * Thread-safety: the schedule is read-only after init; a pl_window is
 * driven by one thread at a time, which may hand it on (the diskgnn planner
 * stage).
 * Ownership: a pl_window owns its sampler, trace, offsets and accesses (pl_window_close);
 * the graph, options and ids it is opened with are borrowed (the options
 * copied).
 */
#ifndef OFFCORE_PLAN_WINDOW_H
#define OFFCORE_PLAN_WINDOW_H

#include <stdint.h>

#include "offcore/sample.h"

/* ---- the schedule ------------------------------------------------------------ */

struct pl_windows {
    uint64_t nb;          /* batches per epoch */
    uint64_t win;         /* batches per window */
    uint64_t head;        /* the first epoch's window 0 is [0, head) (0: no head) */
    uint64_t first_epoch; /* of the run */
    uint64_t wpe;         /* windows per epoch (without a head) */
    uint64_t n_win;       /* windows in the plan */
};

/* Windows of win batches in an epoch of nb (win 0: the whole epoch, one window). */
static inline uint64_t pl_windows_per_epoch(uint64_t nb, uint64_t win)
{
    return win ? (nb + win - 1) / win : 1;
}

/*
 * The schedule of a run of epochs [first_epoch, n_epochs) of nb batches in
 * windows of win (0: nb); head as above (needs head < nb, no reuse); reuse:
 * every run epoch replays epoch 0's wpe windows.
 */
void pl_windows_init(struct pl_windows *w, uint64_t nb, uint64_t win, uint64_t head,
                     uint64_t first_epoch, uint64_t n_epochs, int reuse);
/* Window k of a schedule without reuse: its sample epoch, first batch and batch count. */
void pl_windows_span(const struct pl_windows *w, uint64_t k, uint64_t *epoch, uint64_t *first,
                     uint64_t *count);

/* ---- a window's trace ----------------------------------------------------------- */

/* How a window samples, read at open. */
struct pl_window_config {
    const char *who;              /* names the caller in errors ("store diskgnn") */
    const struct oc_graph *graph; /* the plan's batches are sampled on it */
    const struct oc_sample_opts *so;
    struct oc_pool *pool; /* its sampler's (NULL: the calling thread alone) */
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    /* optional hooks, called with ctx: node ids to the rows the trace holds (NULL: the ids);
       whether to stop before the next batch (nonzero: OC_ERR_CANCELLED); after each
       sampling, the sampler (its topology figures) */
    void (*rows_of)(void *ctx, const uint64_t *ids, uint64_t n, uint64_t *rows);
    int (*cancelled)(void *ctx);
    void (*sampled)(void *ctx, const struct oc_sampler *smp);
    void *ctx;
    /* optional, as plan/superbatch.h's: the ids the store is gathered with for a sampled
       batch (oc_store_accesses's `of`, called with accesses_ctx from the thread driving the
       window; NULL: its input ids), which the trace then holds in its place */
    int (*accesses)(void *ctx, const struct oc_sample_batch *b, uint64_t **ids, uint64_t *cap,
                    uint64_t *n, struct oc_err *err);
    void *accesses_ctx;
};

/* The window sampled last and the sampler that samples the next. */
struct pl_window {
    struct pl_window_config c;
    struct oc_sample_opts so; /* c.so points here */
    struct oc_sample_iter it; /* the plan's batches; it.batch: the one sampled last */
    uint64_t nb_epoch;        /* batches per epoch */
    uint64_t epoch, first;    /* the window: batches [first, first + n_batches) of epoch */
    uint64_t n_batches;
    uint64_t *rows, cap_rows;  /* the trace (grown by a quarter) */
    uint64_t *off, *rec_bytes; /* nb_epoch + 1 each */
    uint64_t max_sampled;      /* the most input rows of a batch sampled so far (its sampler's) */
    /* with the accesses hook: the batch sampled last as its accesses, a batch of one layer
       whose n_input sources are them and which has no destination, so that its record holds
       the ids alone (acc: the hook's array; view_indptr, view_index: the empty block's) */
    struct oc_sample_batch view;
    uint64_t *acc, cap_acc;
    uint64_t view_indptr;
    uint32_t view_index;
};

/* The batch sampled last as the trace holds it: it.batch, or with the accesses hook its
   accesses (view). Valid until the next sampling. */
static inline const struct oc_sample_batch *pl_window_batch(const struct pl_window *w)
{
    return w->c.accesses ? &w->view : &w->it.batch;
}

/* Opens the sampler and the per-batch offsets. On failure w holds what was made. */
int pl_window_open(struct pl_window *w, const struct pl_window_config *c, struct oc_err *err);
void pl_window_close(struct pl_window *w);
/* A new sampler on pool (NULL: the calling thread), the old one's figures handed to the
   sampled hook first; the position is kept. */
int pl_window_repool(struct pl_window *w, struct oc_pool *pool, struct oc_err *err);
/* Grows the trace to n rows, by a quarter at least. */
int pl_window_reserve(struct pl_window *w, uint64_t n, struct oc_err *err);
/* Samples the next batch into w->it.batch (after oc_sample_iter_seek), checking the cancel
   hook first, and maps it through the accesses hook when given (pl_window_batch); past the
   epoch's end is OC_ERR_INTERNAL. */
int pl_window_next(struct pl_window *w, struct oc_err *err);
/*
 * Samples batches [first, first + count) of sample epoch `epoch` into the
 * trace; after each batch i (its rows and rec_bytes[i] set) calls each(ctx,
 * i, err) when given (the store spills its record there). OC_ERR_INTERNAL
 * for a window past the epoch; the hooks' errors as they are.
 */
int pl_window_sample(struct pl_window *w, uint64_t epoch, uint64_t first, uint64_t count,
                     int (*each)(void *ctx, uint64_t i, struct oc_err *err), void *ctx,
                     struct oc_err *err);
/*
 * Samples the first count batches of sample epoch `epoch` (at most the
 * epoch's), adds each one's rows to counts (one entry per row, saturating)
 * and sets the offsets and record sizes for them (n_batches), keeping no
 * trace (rows holds the last batch's).
 */
int pl_window_probe(struct pl_window *w, uint64_t epoch, uint64_t count, uint32_t *counts,
                    struct oc_err *err);

#endif
