/*
 * pipeline.h — stages: the one way offcore runs background work. A pipeline
 * owns bounded queues and stages; a stage is a fixed set of threads popping
 * items from its input queue and running one function on each, handing items
 * on by pushing into other queues of the same pipeline (after Redis's bio.c).
 *
 *   producer ─► queue ─► stage (n threads: fn(item)) ─► queue ─► stage ─► ... ─► consumer
 *                                 │ error
 *                                 ▼
 *              first error wins; cancel: every queue closed, cancel hooks run
 *
 * The first error any stage reports wins and cancels the pipeline: every queue
 * is closed, so every blocked push or pop returns OC_ERR_CANCELLED and every
 * thread winds down, and the cancel hooks run (a stage that waits on a
 * condition variable of its own registers one to wake it); oc_pipeline_free
 * joins them. The batch pipeline (batch_pipe.h) and the feature strategies'
 * background work (gnndrive's extractors, ginex's inspector, diskgnn's
 * loaders, helios's completion stage) are stages; in training they are stages of one pipeline (the
 * store is opened on the batch pipeline's, oc_store_config.pipeline), so an
 * error anywhere stops everything; so are kg's TIGER reader and planner
 * (kg_tiger_stage.c). Nothing else in offcore starts threads for background work
 * (tools/check_deps.sh: pthread_create only in core's pool and here, and
 * the CLI's signal watcher).
 *
 * Place in the data flow: pipeline sits on core only; store, train and the
 * batch pipeline build stages on it.
 * Thread-safety: queues and stages are added by one thread (the owner), also
 * after oc_pipeline_start (a stage added to a started pipeline starts at
 * once), while stages already started may fail or cancel it;
 * oc_pipeline_fail/cancel/status and the oc_stage_* calls may be made from
 * any thread. Cancel hooks run once, on the first cancelling thread (a hook
 * added after the cancel runs at once, in oc_pipeline_on_cancel): a caller
 * must not hold a lock a hook takes when it fails or cancels the pipeline.
 * Ownership: the pipeline owns its threads and queues; items are the
 * caller's and are never freed here.
 */
#ifndef OFFCORE_PIPELINE_H
#define OFFCORE_PIPELINE_H

#include <stdint.h>

#include "offcore/core.h"
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
/*
 * Cancels and joins every thread started so far; the pipeline and its queues
 * stay valid (a stage added later exits at once). For a strategy whose open
 * fails after it started stages on a pipeline it does not own: once this
 * returns, nothing runs its stage functions, so it may free their state.
 */
void oc_pipeline_join(struct oc_pipeline *p);
/*
 * A pool of n_threads worker threads owned by p, for one stage to fan a task
 * out on (oc_pool_run from that stage's thread only: a sampler over an
 * on-disk topology keeps more reads in flight). Freed by oc_pipeline_free,
 * after the stages are joined.
 */
int oc_pipeline_pool(struct oc_pipeline *p, unsigned n_threads, struct oc_pool **out,
                     struct oc_err *err);
/* A bounded queue owned by p (closed when p is cancelled). */
int oc_pipeline_queue(struct oc_pipeline *p, size_t capacity, struct oc_queue **out,
                      struct oc_err *err);
/*
 * A stage of n_threads threads running fn(ctx, .., item) for every item of
 * in. Added to a started pipeline, its threads start at once.
 */
int oc_pipeline_stage(struct oc_pipeline *p, const char *name, unsigned n_threads,
                      struct oc_queue *in, oc_stage_fn fn, void *ctx, struct oc_stage **out,
                      struct oc_err *err);
/* Starts every stage not started yet (idempotent). On failure the pipeline is cancelled. */
int oc_pipeline_start(struct oc_pipeline *p, struct oc_err *err);
/* Records e as the pipeline's error unless one is there already, then cancels. */
void oc_pipeline_fail(struct oc_pipeline *p, const struct oc_err *e);
/* Closes every queue (idempotent); threads finish their current item and exit. */
void oc_pipeline_cancel(struct oc_pipeline *p);
/*
 * fn(ctx) runs once when p is cancelled (after its queues are closed), on the
 * cancelling thread, or at once if p was cancelled already: to wake waits on
 * condition variables of a stage's own.
 */
int oc_pipeline_on_cancel(struct oc_pipeline *p, void (*fn)(void *ctx), void *ctx,
                          struct oc_err *err);
/* Whether p was cancelled (by an error, oc_pipeline_cancel or oc_pipeline_free). */
int oc_pipeline_cancelled(struct oc_pipeline *p);
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
/* CPU seconds the stage's threads used in fn (their thread CPU clocks). */
double oc_stage_cpu_s(const struct oc_stage *st);
const char *oc_stage_name(const struct oc_stage *st);

#endif
