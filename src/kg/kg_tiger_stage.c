/*
 * kg_tiger_stage.c — the executor's helpers, the slice reader
 * (tiger_read_ahead) and the planner (tiger_plan_ahead), as one-thread
 * stages of the executor's pipeline (src/pipeline/stage.c, the tree's one
 * stage runner). A job goes in through its stage's input queue and comes
 * back, with its result, through the stage's done queue; both hold one
 * item, as a stage runs one job at a time:
 *
 *   training thread                      stage thread
 *   tiger_job_start ──► in ──────────► run(t): rc, err
 *   tiger_job_poll / wait ◄── done ◄──┘
 *
 *   idle ──start──► running ──(popped from done)──► finished ──wait──► idle
 *
 * A job's error comes back with it to the training thread (tiger_job_wait),
 * not to the pipeline: only kg_tiger_free cancels the pipeline (the planner
 * stops at the next head it would slice, tiger_quitting).
 *
 * Place in the data flow: kg (kg_tiger.c, kg_tiger_plan.c, kg_tiger_reads.c
 * ──► here ──► pipeline).
 * Thread-safety: a job's running and finished flags are the training
 * thread's; the stage thread writes rc and err while the job runs, and the
 * done queue's lock orders those writes before the training thread's reads.
 * The pipeline is made and its stages added by the training thread.
 * Ownership: the executor owns the pipeline (made on the first job) and the
 * jobs (its fields); the queues are the pipeline's.
 */
#include "kg/kg_tiger_exec_int.h"

/* A stage's function: runs job `item` and hands it back through its done queue. */
static int job_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    (void)ctx, (void)err;
    struct tiger_job *j = item;
    j->rc = j->run(j->t, &j->err);
    return oc_stage_push(st, j->done, j); /* closed (kg_tiger_free): the thread ends */
}

/* j's stage, on first use: the pipeline, its queues and its thread. */
static int job_stage_add(struct tiger_job *j, struct oc_err *err)
{
    struct kg_tiger *t = j->t;
    if (!t->pipe)
        OC_KG_TRY(oc_pipeline_new("kg slice pipeline", &t->pipe, err));
    struct oc_queue *in, *done;
    OC_KG_TRY(oc_pipeline_queue(t->pipe, 1, &in, err));
    OC_KG_TRY(oc_pipeline_queue(t->pipe, 1, &done, err));
    OC_KG_TRY(oc_pipeline_stage(t->pipe, j->what, 1, in, job_stage, t, NULL, err));
    j->in = in;
    j->done = done;
    return oc_pipeline_start(t->pipe, err);
}

int tiger_job_start(struct tiger_job *j, struct oc_err *err)
{
    if (!j->in)
        OC_KG_TRY(job_stage_add(j, err));
    OC_ASSERT(!j->running && !j->finished); /* one job at a time: queues of one never block */
    if (oc_stage_push(NULL, j->in, j) != OC_OK)
        return OC_ERR(err, OC_ERR_CANCELLED, "kg slices: the %s stage was stopped", j->what);
    j->running = 1;
    return OC_OK;
}

/* Takes j from its done queue (block: waiting for it); OC_ERR_NOTFOUND if not back yet. */
static int job_collect(struct tiger_job *j, int block)
{
    void *item = NULL;
    int rc = block ? oc_stage_pop(NULL, j->done, &item) : oc_queue_try_pop(j->done, &item);
    if (rc != OC_OK)
        return rc;
    OC_ASSERT(item == j && j->running && !j->finished);
    j->running = 0;
    j->finished = 1;
    return OC_OK;
}

int tiger_job_poll(struct tiger_job *j)
{
    if (j->running)
        (void)job_collect(j, 0);
    return j->finished;
}

int tiger_job_wait(struct tiger_job *j, struct oc_err *err)
{
    if (j->running && job_collect(j, 1) != OC_OK) { /* the pipeline was cancelled */
        j->running = 0;
        return OC_ERR(err, OC_ERR_CANCELLED, "kg slices: the %s stage was stopped", j->what);
    }
    int rc = j->finished ? j->rc : OC_OK;
    j->finished = 0;
    if (rc)
        *err = j->err;
    return rc;
}

int tiger_quitting(struct kg_tiger *t)
{
    return t->pipe && oc_pipeline_cancelled(t->pipe);
}
