/*
 * pipeline.h — the one mechanism that moves training batches: stages that own
 * their threads and talk through bounded queues, and the batch pipeline built
 * from them, which samples every training batch exactly once, lets the feature
 * strategy see it early, fetches its features ahead and hands both to the
 * trainer.
 *
 *   trainer: oc_batch_pipe_epoch(e), _open ─► oc_batch_pipe_next ─► train ─► oc_batch_pipe_done
 *                                                ▲                            │
 *   sample stage: free slot ─► sample (seed,e,b) ─► store prepare ─► fetch q  │
 *   fetch stage:  fetch q ─► [store next_batch] ─► store gather ─► ready q    │
 *        ▲                                                                    │
 *        └──────────────────────────── free slots ◄───────────────────────────┘
 *
 * Stages (struct oc_pipeline): each stage is n threads popping items from its
 * input queue and running fn on them. The pipeline owns every stage and queue:
 * the first error any stage reports wins, and it cancels the pipeline: every
 * queue is closed, so every blocked push or pop returns OC_ERR_CANCELLED and
 * every thread winds down; oc_pipeline_free joins them. This is the only place
 * in offcore that creates threads for background work (tools/check_deps.sh
 * checks the strategies).
 *
 * Place in the data flow: pipeline sits on store, sample and core; train
 * drives it.
 * Thread-safety: oc_pipeline_* may be called from any thread once built;
 * building (queue/stage) happens before oc_pipeline_start. A batch pipeline is
 * driven by one trainer thread; its stages call the store from their threads
 * (sample stage: prepare_batch; fetch stage: load_batch, next_batch,
 * gather_batch). Between the last batch of an epoch and oc_batch_pipe_open of
 * the next, only the sample stage may run (sampling the next epoch ahead and
 * preparing its batches), so the trainer may gather from the store
 * (evaluation) and read its stats.
 * Ownership: the pipeline owns its threads and queues; items are the
 * caller's. A batch pipeline owns its slots (sampled batches, feature rows)
 * and borrows the store, graph, pool and training ids.
 */
#ifndef OFFCORE_PIPELINE_H
#define OFFCORE_PIPELINE_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/sample.h"
#include "offcore/store.h"
#include "offcore/thread.h"

/* ---- stages ------------------------------------------------------------- */

struct oc_pipeline;
struct oc_stage;

/*
 * Runs on a stage thread for one item popped from the stage's input queue.
 * A non-OK return (with err filled) fails the pipeline; OC_ERR_CANCELLED from
 * a push or pop of a closed queue just ends the thread.
 */
typedef int (*oc_stage_fn)(void *ctx, struct oc_stage *st, void *item, struct oc_err *err);

int oc_pipeline_new(const char *name, struct oc_pipeline **out, struct oc_err *err);
/* Cancels, joins every thread, frees the queues. NULL is a no-op. */
void oc_pipeline_free(struct oc_pipeline *p);
/* A bounded queue owned by p (closed when p is cancelled). */
int oc_pipeline_queue(struct oc_pipeline *p, size_t capacity, struct oc_queue **out,
                      struct oc_err *err);
/* A stage of n_threads threads running fn(ctx, .., item) for every item of in. */
int oc_pipeline_stage(struct oc_pipeline *p, const char *name, unsigned n_threads,
                      struct oc_queue *in, oc_stage_fn fn, void *ctx, struct oc_stage **out,
                      struct oc_err *err);
/* Starts every stage's threads. On failure the pipeline is cancelled. */
int oc_pipeline_start(struct oc_pipeline *p, struct oc_err *err);
/* Records e as the pipeline's error unless one is there already, then cancels. */
void oc_pipeline_fail(struct oc_pipeline *p, const struct oc_err *e);
/* Closes every queue (idempotent); threads finish their current item and exit. */
void oc_pipeline_cancel(struct oc_pipeline *p);
/* OC_OK, or the first error (copied to err); OC_ERR_CANCELLED if cancelled without one. */
int oc_pipeline_status(struct oc_pipeline *p, struct oc_err *err);

/*
 * Push / pop from a stage's thread (or any thread with st = NULL): like
 * oc_queue_push / oc_queue_pop, and the time spent blocked is not counted
 * as the stage's busy time.
 */
int oc_stage_push(struct oc_stage *st, struct oc_queue *q, void *item);
int oc_stage_pop(struct oc_stage *st, struct oc_queue *q, void **item);
/* Seconds the stage's threads spent in fn, minus blocked pushes and pops. */
double oc_stage_busy_s(const struct oc_stage *st);
const char *oc_stage_name(const struct oc_stage *st);

/* ---- the batch pipeline ---------------------------------------------------- */

/* A training batch on its way to the trainer. */
struct oc_pipe_batch {
    uint64_t epoch;               /* sample epoch (the training epoch, or 0 with reused samples) */
    uint64_t index;               /* batch index in that epoch */
    struct oc_sample_batch batch; /* its blocks; seeds = batch.input_ids[0 .. n_seeds) */
    float *x;                     /* batch.n_input x feat_dim gathered rows */
    void *rows;                   /* (private) the row buffer x lies in */
};

struct oc_batch_pipe_config {
    struct oc_store *store;              /* gathers (and, for some strategies, samples) */
    const struct oc_graph *graph;        /* what the sample stage samples from */
    const struct oc_sample_opts *sample; /* fanouts and seed */
    struct oc_pool *pool;                /* the sampler's and the store's (may be NULL) */
    const uint64_t *train_ids;           /* borrowed for the pipeline's lifetime */
    uint64_t n_train, batch_size;
    uint32_t depth; /* batches fetched ahead of the one training (>= 1) */
};

struct oc_batch_pipe;

/* Counters since the pipeline was created. */
struct oc_batch_pipe_stats {
    uint64_t n_sampled; /* batches the sample stage sampled (or loaded from the store) */
    uint64_t n_fetched; /* batches whose features the fetch stage gathered */
    double sample_busy_s, fetch_busy_s;
    double wait_s;                  /* trainer time blocked in oc_batch_pipe_next */
    struct oc_topo_disk_stats topo; /* the sample stage's disk-topology reads (0 in RAM) */
};

/*
 * Builds the stages with depth + 1 row buffers (and as many slots for sampled
 * batches, or oc_store_lookahead's count). Nothing is sampled before the
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
/* Gives a batch back: its slot is reused for a later batch. */
void oc_batch_pipe_done(struct oc_batch_pipe *bp, struct oc_pipe_batch *b);
void oc_batch_pipe_stats(const struct oc_batch_pipe *bp, struct oc_batch_pipe_stats *out);

#endif
