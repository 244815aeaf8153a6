/*
 * stage.c — the stage abstraction (after Redis's bio.c): a pipeline owns its
 * bounded queues and its stages; a stage is a fixed set of threads that pop
 * items from one input queue and run one function on each. Stages hand items
 * on by pushing into other queues of the same pipeline.
 *
 *   stage thread:  pop(in) ─► fn(item) ─► (fn pushes downstream) ─► pop(in) ...
 *                     │ closed                │ error
 *                     ▼                       ▼
 *                   exit          first-wins error, cancel: close every queue
 *
 * Place in the data flow: pipeline, on core (the batch pipeline in
 * train/batch_pipe.c and the strategies' background work are built from it).
 * Thread-safety: p->mu guards the first error and the queue and hook lists
 * (the owner may add queues and hooks while stages already started on the
 * pipeline cancel it); cancellation is an atomic flag plus oc_queue_close on
 * every queue under p->mu (lock order: p->mu, then a queue's own lock); the
 * cancel hooks run once, outside p->mu, on the first canceller's thread, or
 * at once when added after it. Stages are added by the owner thread only; a
 * stage's slot is filled before its threads start. Busy time and CPU time
 * (thread CPU clocks around fn) are atomic counters per stage; blocked time is per thread (thread-local).
 * Ownership: the pipeline owns stages, threads and queues; oc_pipeline_free
 * cancels, joins, then frees them. Items are never freed here.
 * Invariants (OC_ASSERT, debug and sanitizer builds): a cancelled pipeline's
 * queues are all closed (also one added after the cancel); a stage thread
 * leaves its loop only on a closed input queue, a cancel or its own error;
 * per stage n_joined <= n_started <= n_threads; the hooks run only after the
 * cancel flag is set; the pipeline is freed with every thread joined.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "offcore/pipeline.h"
#include "offcore/progress.h"

#define PIPE_MAX_QUEUES 32
#define PIPE_MAX_POOLS  4
#define PIPE_MAX_STAGES 16
#define PIPE_MAX_HOOKS  4

struct oc_stage {
    struct oc_pipeline *p;
    char name[32];
    unsigned n_threads, n_started, n_joined;
    pthread_t *threads;
    struct oc_queue *in;
    oc_stage_fn fn;
    void *ctx;
    atomic_uint_least64_t busy_ns;
    atomic_uint_least64_t cpu_ns;
};

struct pipe_hook {
    void (*fn)(void *ctx);
    void *ctx;
};

struct oc_pipeline {
    char name[32];
    pthread_mutex_t mu;
    int failed;        /* [mu] */
    struct oc_err err; /* [mu] the first error */
    atomic_int cancelled;
    int started;
    struct oc_queue *queues[PIPE_MAX_QUEUES]; /* [mu] */
    unsigned n_queues;                        /* [mu] */
    struct oc_pool *pools[PIPE_MAX_POOLS];    /* [mu] a stage's fan-out threads */
    unsigned n_pools;                         /* [mu] */
    struct oc_stage stages[PIPE_MAX_STAGES];
    unsigned n_stages;
    struct pipe_hook hooks[PIPE_MAX_HOOKS]; /* [mu] */
    unsigned n_hooks;                       /* [mu] */
    int hooks_ran;                          /* [mu] the cancel hooks were run */
};

static _Thread_local uint64_t tl_blocked_ns; /* this thread's blocked time inside fn */

int oc_pipeline_new(const char *name, struct oc_pipeline **out, struct oc_err *err)
{
    *out = NULL;
    struct oc_pipeline *p = oc_calloc(1, sizeof(*p), "pipeline", err);
    if (!p)
        return err ? err->status : OC_ERR_NOMEM;
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "pipeline");
    pthread_mutex_init(&p->mu, NULL);
    atomic_init(&p->cancelled, 0);
    *out = p;
    return OC_OK;
}

void oc_pipeline_cancel(struct oc_pipeline *p)
{
    if (!p)
        return;
    int was = atomic_exchange(&p->cancelled, 1);
    struct pipe_hook run[PIPE_MAX_HOOKS];
    unsigned n_run = 0;
    pthread_mutex_lock(&p->mu); /* the owner may be adding queues and hooks meanwhile */
    for (unsigned i = 0; i < p->n_queues; i++)
        oc_queue_close(p->queues[i]);
    OC_ASSERT(!p->hooks_ran || was); /* the hooks ran on the first cancel */
    if (!was && !p->hooks_ran) {
        p->hooks_ran = 1;
        n_run = p->n_hooks;
        memcpy(run, p->hooks, n_run * sizeof(run[0]));
    }
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < n_run; i++) /* outside mu: a hook takes its stage's own lock */
        run[i].fn(run[i].ctx);
}

int oc_pipeline_on_cancel(struct oc_pipeline *p, void (*fn)(void *ctx), void *ctx,
                          struct oc_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->n_hooks == PIPE_MAX_HOOKS) {
        pthread_mutex_unlock(&p->mu);
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: more than %d cancel hooks", p->name,
                      PIPE_MAX_HOOKS);
    }
    int late = p->hooks_ran; /* cancelled already: the hook runs now */
    if (!late) {
        p->hooks[p->n_hooks].fn = fn;
        p->hooks[p->n_hooks].ctx = ctx;
        p->n_hooks++;
    }
    pthread_mutex_unlock(&p->mu);
    if (late)
        fn(ctx);
    return OC_OK;
}

int oc_pipeline_cancelled(struct oc_pipeline *p)
{
    return atomic_load(&p->cancelled);
}

void oc_pipeline_fail(struct oc_pipeline *p, const struct oc_err *e)
{
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = 1;
        p->err = *e;
    }
    pthread_mutex_unlock(&p->mu);
    oc_pipeline_cancel(p);
}

int oc_pipeline_status(struct oc_pipeline *p, struct oc_err *err)
{
    int rc = OC_OK;
    pthread_mutex_lock(&p->mu);
    if (p->failed) {
        rc = p->err.status ? p->err.status : OC_ERR_INTERNAL;
        if (err)
            *err = p->err;
    }
    pthread_mutex_unlock(&p->mu);
    if (rc == OC_OK && atomic_load(&p->cancelled))
        rc = OC_ERR(err, OC_ERR_CANCELLED, "%s: cancelled", p->name);
    return rc;
}

void oc_pipeline_join(struct oc_pipeline *p)
{
    if (!p)
        return;
    oc_pipeline_cancel(p);
    for (unsigned i = 0; i < p->n_stages; i++) {
        struct oc_stage *st = &p->stages[i];
        OC_ASSERT(st->n_joined <= st->n_started && st->n_started <= st->n_threads);
        for (unsigned t = st->n_joined; t < st->n_started; t++)
            pthread_join(st->threads[t], NULL);
        st->n_joined = st->n_started;
    }
}

void oc_pipeline_free(struct oc_pipeline *p)
{
    if (!p)
        return;
    oc_pipeline_join(p);
    for (unsigned i = 0; i < p->n_stages; i++) {
        OC_ASSERT(p->stages[i].n_joined == p->stages[i].n_started);
        oc_free(p->stages[i].threads);
    }
    for (unsigned i = 0; i < p->n_queues; i++) {
        OC_ASSERT(oc_queue_closed(p->queues[i])); /* closed by the join's cancel */
        oc_queue_free(p->queues[i]);
    }
    for (unsigned i = 0; i < p->n_pools; i++) /* the stages that ran tasks on them are joined */
        oc_pool_free(p->pools[i]);
    pthread_mutex_destroy(&p->mu);
    oc_free(p);
}

int oc_pipeline_pool(struct oc_pipeline *p, unsigned n_threads, struct oc_pool **out,
                     struct oc_err *err)
{
    *out = NULL;
    struct oc_pool *pool;
    int rc = oc_pool_new(n_threads, &pool, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&p->mu);
    if (p->n_pools == PIPE_MAX_POOLS) {
        pthread_mutex_unlock(&p->mu);
        oc_pool_free(pool);
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: more than %d pools", p->name, PIPE_MAX_POOLS);
    }
    p->pools[p->n_pools++] = pool;
    pthread_mutex_unlock(&p->mu);
    *out = pool;
    return OC_OK;
}

int oc_pipeline_queue(struct oc_pipeline *p, size_t capacity, struct oc_queue **out,
                      struct oc_err *err)
{
    *out = NULL;
    struct oc_queue *q;
    int rc = oc_queue_new(capacity, &q, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&p->mu); /* a stage may be cancelling the pipeline meanwhile */
    if (p->n_queues == PIPE_MAX_QUEUES) {
        pthread_mutex_unlock(&p->mu);
        oc_queue_free(q);
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: more than %d queues", p->name, PIPE_MAX_QUEUES);
    }
    p->queues[p->n_queues++] = q;
    if (atomic_load(&p->cancelled))
        oc_queue_close(q);
    OC_ASSERT(!atomic_load(&p->cancelled) || oc_queue_closed(q)); /* lock order: p->mu, q's */
    pthread_mutex_unlock(&p->mu);
    *out = q;
    return OC_OK;
}

int oc_pipeline_stage(struct oc_pipeline *p, const char *name, unsigned n_threads,
                      struct oc_queue *in, oc_stage_fn fn, void *ctx, struct oc_stage **out,
                      struct oc_err *err)
{
    if (out)
        *out = NULL;
    if (p->n_stages == PIPE_MAX_STAGES)
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: more than %d stages", p->name, PIPE_MAX_STAGES);
    if (n_threads == 0 || !in || !fn)
        return OC_ERR(err, OC_ERR_ARG, "%s: stage %s needs threads, a queue and a function",
                      p->name, name);
    struct oc_stage *st = &p->stages[p->n_stages];
    OC_ASSERT(st->n_started == 0); /* a slot not used yet: filled before its threads start */
    memset(st, 0, sizeof(*st));
    st->threads = oc_calloc(n_threads, sizeof(pthread_t), "pipeline stage", err);
    if (!st->threads)
        return err ? err->status : OC_ERR_NOMEM;
    st->p = p;
    snprintf(st->name, sizeof(st->name), "%s", name);
    st->n_threads = n_threads;
    st->in = in;
    st->fn = fn;
    st->ctx = ctx;
    atomic_init(&st->busy_ns, 0);
    atomic_init(&st->cpu_ns, 0);
    p->n_stages++;
    if (out)
        *out = st;
    return p->started ? oc_pipeline_start(p, err) : OC_OK;
}

static void *stage_main(void *arg)
{
    struct oc_stage *st = arg;
    void *item;
    char tname[16]; /* the kernel's limit: what top -H and perf show */
    memcpy(tname, "oc-", 3);
    size_t n = strnlen(st->name, sizeof(tname) - 4);
    memcpy(tname + 3, st->name, n);
    tname[3 + n] = '\0';
    pthread_setname_np(pthread_self(), tname);
    int popped;
    while ((popped = oc_queue_pop(st->in, &item)) == OC_OK) {
        struct oc_err e;
        oc_err_clear(&e);
        tl_blocked_ns = 0;
        uint64_t t0 = oc_now_ns(), c0 = oc_thread_cpu_ns();
        int rc = st->fn(st->ctx, st, item, &e);
        uint64_t spent = oc_now_ns() - t0;
        atomic_fetch_add(&st->cpu_ns, oc_thread_cpu_ns() - c0);
        atomic_fetch_add(&st->busy_ns, spent > tl_blocked_ns ? spent - tl_blocked_ns : 0);
        if (rc == OC_ERR_CANCELLED && atomic_load(&st->p->cancelled))
            break;
        if (rc) {
            oc_err_prefix(&e, "%s stage", st->name);
            oc_pipeline_fail(st->p, &e);
            break;
        }
    }
    OC_ASSERT(popped == OC_OK || oc_queue_closed(st->in)); /* a pop fails only once closed */
    return NULL;
}

int oc_pipeline_start(struct oc_pipeline *p, struct oc_err *err)
{
    p->started = 1;
    for (unsigned i = 0; i < p->n_stages; i++) {
        struct oc_stage *st = &p->stages[i];
        OC_ASSERT(st->n_started <= st->n_threads && st->n_joined == 0);
        for (unsigned t = st->n_started; t < st->n_threads; t++) {
            int e = pthread_create(&st->threads[t], NULL, stage_main, st);
            if (e) {
                oc_pipeline_cancel(p);
                return OC_ERR_ERRNO(err, OC_ERR_NOMEM, e, "%s: cannot start stage %s thread %u",
                                    p->name, st->name, t);
            }
            st->n_started++;
        }
    }
    return OC_OK;
}

int oc_stage_push(struct oc_stage *st, struct oc_queue *q, void *item)
{
    uint64_t t0 = st ? oc_now_ns() : 0;
    int rc = oc_queue_push(q, item);
    if (st)
        tl_blocked_ns += oc_now_ns() - t0;
    return rc;
}

int oc_stage_pop(struct oc_stage *st, struct oc_queue *q, void **item)
{
    uint64_t t0 = st ? oc_now_ns() : 0;
    int rc = oc_queue_pop(q, item);
    if (st)
        tl_blocked_ns += oc_now_ns() - t0;
    return rc;
}

double oc_stage_busy_s(const struct oc_stage *st)
{
    return (double)atomic_load(&st->busy_ns) * 1e-9;
}

double oc_stage_cpu_s(const struct oc_stage *st)
{
    return (double)atomic_load(&st->cpu_ns) * 1e-9;
}

const char *oc_stage_name(const struct oc_stage *st)
{
    return st->name;
}
