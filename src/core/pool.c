/*
 * pool.c — a fixed pool of worker threads for deterministic parallel-for:
 * task t always runs on worker t % n_threads, and the reported error is that
 * of the lowest failing task, so results and errors never depend on timing.
 *
 * Place in the data flow: core; used by kernels, the sampler, the generator.
 * Thread-safety: oc_pool_run may be called from one thread at a time per pool
 * (it serializes callers with a mutex); workers only run the current job.
 * Ownership: the pool owns its threads; ctx is borrowed for one run.
 *
 * Worker state machine:   wait(gen changes) ─► run my tasks ─► done++ ─► wait
 *                         └── shutdown set ─► exit
 *
 * Waiting spins first: a worker that finished a job watches the generation
 * for POOL_SPIN_NS before it sleeps on the condition variable, and the caller
 * watches the done count as long before it sleeps. A model runs its kernels
 * back to back (RED-GNN at batch 1: thousands of jobs of tens of
 * microseconds a second), so the next job mostly finds its worker awake, and
 * neither side pays a futex wake and a reschedule per job; a sleeper is woken
 * only when one is asleep (counted under mu).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "offcore/progress.h"
#include "offcore/thread.h"

#define POOL_SPIN_NS 50000 /* a waiter spins this long before it sleeps */

struct oc_pool {
    unsigned n_threads;
    pthread_t *threads;
    pthread_mutex_t run_mu; /* serializes oc_pool_run callers; taken before mu */
    pthread_mutex_t mu;
    pthread_cond_t start;
    pthread_cond_t finished;
    _Atomic uint64_t generation; /* raised (after the job's fields) to start a job */
    _Atomic unsigned n_done;     /* workers done with the current job */
    _Atomic int shutdown;
    unsigned n_asleep; /* workers waiting on start [mu] */
    int caller_asleep; /* the caller waiting on finished [mu] */
    /* the current job (written before generation is raised) */
    oc_pool_fn fn;
    void *ctx;
    uint64_t n_tasks;
    _Atomic uint64_t first_bad_task; /* UINT64_MAX = none */
    int first_rc;
};

struct pool_worker_arg {
    struct oc_pool *p;
    unsigned id;
};

static void pool_run_slice(struct oc_pool *p, unsigned worker)
{
    for (uint64_t t = worker; t < p->n_tasks; t += p->n_threads) {
        int rc = p->fn(p->ctx, t, worker);
        if (rc != OC_OK) {
            pthread_mutex_lock(&p->mu);
            if (t < atomic_load(&p->first_bad_task)) {
                atomic_store(&p->first_bad_task, t);
                p->first_rc = rc;
            }
            pthread_mutex_unlock(&p->mu);
            return;
        }
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins up to POOL_SPIN_NS while done(p, arg) is false; returns its last value. */
static int spin_until(int (*done)(struct oc_pool *, uint64_t), struct oc_pool *p, uint64_t arg)
{
    uint64_t t0 = oc_now_ns();
    for (unsigned i = 1;; i++) {
        if (done(p, arg))
            return 1;
        cpu_relax();
        if (i % 64 == 0 && oc_now_ns() - t0 > POOL_SPIN_NS)
            return done(p, arg);
    }
}

static int job_or_shutdown(struct oc_pool *p, uint64_t seen)
{
    return atomic_load(&p->generation) != seen || atomic_load(&p->shutdown);
}

static int all_done(struct oc_pool *p, uint64_t unused)
{
    (void)unused;
    return atomic_load(&p->n_done) == p->n_threads - 1;
}

static void *pool_worker(void *argp)
{
    struct pool_worker_arg *arg = argp;
    struct oc_pool *p = arg->p;
    unsigned id = arg->id;
    uint64_t seen = 0;
    for (;;) {
        if (!spin_until(job_or_shutdown, p, seen)) {
            pthread_mutex_lock(&p->mu);
            p->n_asleep++;
            while (!job_or_shutdown(p, seen))
                pthread_cond_wait(&p->start, &p->mu);
            p->n_asleep--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->shutdown))
            break;
        seen = atomic_load(&p->generation);
        pool_run_slice(p, id);
        if (atomic_fetch_add(&p->n_done, 1) + 1 == p->n_threads - 1) {
            pthread_mutex_lock(&p->mu); /* the caller sleeps under mu: wake it if it does */
            if (p->caller_asleep)
                pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->mu);
        }
    }
    oc_free(arg);
    return NULL;
}

unsigned oc_cpus_allowed(int *cpus, unsigned cap)
{
    cpu_set_t set;
    unsigned n = 0;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
        if (n)
            return n;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN); /* affinity unknown: every online CPU */
    for (long c = 0; c < (online > 0 ? online : 1) && n < cap; c++)
        cpus[n++] = (int)c;
    return n;
}

int oc_pool_pin(struct oc_pool *p, const int *cpus, unsigned n_cpus, struct oc_err *err)
{
    if (n_cpus == 0)
        return OC_ERR(err, OC_ERR_ARG, "thread pool: cannot pin to no CPU");
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned i = 0; i < n_cpus; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
            return OC_ERR(err, OC_ERR_ARG, "thread pool: cannot pin to CPU %d", cpus[i]);
        CPU_SET(cpus[i], &set);
    }
    cpu_set_t before; /* all or nothing: a failure puts back what was pinned */
    int e = pthread_getaffinity_np(pthread_self(), sizeof(before), &before);
    if (e == 0)
        e = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    unsigned done = e == 0 ? 1 : 0;
    for (; e == 0 && p && done < p->n_threads; done++)
        e = pthread_setaffinity_np(p->threads[done], sizeof(set), &set);
    if (e == 0)
        return OC_OK;
    for (unsigned i = 0; i < done; i++)
        pthread_setaffinity_np(i ? p->threads[i] : pthread_self(), sizeof(before), &before);
    return OC_ERR_ERRNO(err, OC_ERR_IO, e, "thread pool: pinning to CPUs %d..%d: %s", cpus[0],
                        cpus[n_cpus - 1], strerror(e));
}

int oc_pool_new(unsigned n_threads, struct oc_pool **out, struct oc_err *err)
{
    *out = NULL;
    if (n_threads == 0)
        return OC_ERR(err, OC_ERR_ARG, "thread pool needs at least 1 thread");
    struct oc_pool *p = oc_calloc(1, sizeof(*p), "thread pool", err);
    if (!p)
        return err->status;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->finished, NULL);
    if (n_threads > 1) {
        p->threads = oc_calloc(n_threads, sizeof(pthread_t), "thread pool", err);
        if (!p->threads)
            goto fail;
    }
    p->n_threads = 1; /* threads started so far, for cleanup: none of the workers yet */
    for (unsigned i = 1; i < n_threads; i++) {
        struct pool_worker_arg *arg = oc_alloc(sizeof(*arg), "thread pool", err);
        if (!arg)
            goto fail;
        arg->p = p;
        arg->id = i;
        int e = pthread_create(&p->threads[i], NULL, pool_worker, arg);
        if (e) {
            oc_free(arg);
            OC_ERR_ERRNO(err, OC_ERR_NOMEM, e, "thread pool: cannot start thread %u", i);
            goto fail;
        }
        p->n_threads = i + 1; /* threads started so far, for cleanup */
    }
    p->n_threads = n_threads;
    *out = p;
    return OC_OK;
fail:;
    int rc = err->status;
    unsigned started = p->threads ? p->n_threads : 1;
    p->n_threads = started;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->shutdown, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 1; i < started; i++) /* the started ones (p->threads set when any is) */
        pthread_join(p->threads[i], NULL);
    oc_free(p->threads);
    oc_free(p);
    return rc;
}

void oc_pool_free(struct oc_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->shutdown, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 1; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->run_mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->finished);
    oc_free(p->threads);
    oc_free(p);
}

unsigned oc_pool_n_threads(const struct oc_pool *p)
{
    return p ? p->n_threads : 1;
}

static int run_inline(uint64_t n_tasks, oc_pool_fn fn, void *ctx)
{
    for (uint64_t t = 0; t < n_tasks; t++) {
        int rc = fn(ctx, t, 0);
        if (rc != OC_OK)
            return rc;
    }
    return OC_OK;
}

/* The job on the pool, run_mu held by the caller. */
static int run_locked(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx);

int oc_pool_run(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx)
{
    if (!p || p->n_threads == 1)
        return run_inline(n_tasks, fn, ctx);
    pthread_mutex_lock(&p->run_mu);
    if (n_tasks <= 1) { /* task 0 runs on worker 0 either way: no worker to wake */
        int rc = run_inline(n_tasks, fn, ctx);
        pthread_mutex_unlock(&p->run_mu);
        return rc;
    }
    return run_locked(p, n_tasks, fn, ctx);
}

int oc_pool_run_or_inline(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx)
{
    if (!p || p->n_threads == 1 || pthread_mutex_trylock(&p->run_mu) != 0)
        return run_inline(n_tasks, fn, ctx);
    return run_locked(p, n_tasks, fn, ctx);
}

static int run_locked(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx)
{
    /* no worker reads the job until the generation moves (the workers of the last job are
       done with it: run_locked returned only once they all were) */
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->first_bad_task, UINT64_MAX);
    p->first_rc = OC_OK;
    atomic_store(&p->n_done, 0);
    atomic_fetch_add(&p->generation, 1);
    pthread_mutex_lock(&p->mu); /* a worker asleep counted itself under mu before it slept */
    if (p->n_asleep)
        pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);

    pool_run_slice(p, 0);

    if (!spin_until(all_done, p, 0)) {
        pthread_mutex_lock(&p->mu);
        p->caller_asleep = 1;
        while (!all_done(p, 0))
            pthread_cond_wait(&p->finished, &p->mu);
        p->caller_asleep = 0;
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu); /* first_rc is written under mu */
    int rc = p->first_rc;
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_mu);
    return rc;
}
