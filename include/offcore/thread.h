/*
 * thread.h — a bounded multi-producer/multi-consumer queue, a fixed thread
 * pool running deterministic parallel-for loops, a lock-free raise of a
 * shared high-water mark, the lock between a cache's readers and its
 * reclaimer, and the give-back that makes a cache a reclaimer.
 *
 * Place in the data flow: core; the pipeline connects its stages with queues,
 * kernels and samplers split work with the pool.
 * Thread-safety: every function here may be called from any thread, except
 * _free, which must be called once nothing else uses the object.
 * Ownership: the queue stores pointers; it never frees what they point to.
 */
#ifndef OFFCORE_THREAD_H
#define OFFCORE_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"

/*
 * Raises *a to v when v is larger (lock-free) and returns what *a held just
 * before: v itself or more when it was not raised. For a peak, the result is
 * not needed; for a mark several threads advance, each counts v - old when
 * old < v, so no stretch is counted twice.
 */
static inline uint64_t oc_atomic_raise(_Atomic uint64_t *a, uint64_t v)
{
    uint64_t old = atomic_load(a);
    while (old < v && !atomic_compare_exchange_weak(a, &old, v))
        ;
    return old;
}

struct oc_queue;

int oc_queue_new(size_t capacity, struct oc_queue **out, struct oc_err *err);
void oc_queue_free(struct oc_queue *q);
/* Blocks while full. Returns OC_ERR_CANCELLED if the queue is closed. */
int oc_queue_push(struct oc_queue *q, void *item);
/* Blocks while empty. Returns OC_ERR_CANCELLED once closed and drained. */
int oc_queue_pop(struct oc_queue *q, void **item);
/* Non-blocking pop: OC_OK, OC_ERR_NOTFOUND when empty, OC_ERR_CANCELLED when closed and drained. */
int oc_queue_try_pop(struct oc_queue *q, void **item);
/* Wakes every waiter; pushes fail from now on, pops drain what is left. */
void oc_queue_close(struct oc_queue *q);
size_t oc_queue_len(struct oc_queue *q);
/* Whether q was closed (for asserts: a closed queue never opens again). */
int oc_queue_closed(struct oc_queue *q);

struct oc_pool;

/* n_threads ≥ 1 workers including the caller (n_threads - 1 are spawned). */
int oc_pool_new(unsigned n_threads, struct oc_pool **out, struct oc_err *err);
void oc_pool_free(struct oc_pool *p);
unsigned oc_pool_n_threads(const struct oc_pool *p);
/*
 * The CPUs the calling thread may run on (its affinity mask: taskset, a
 * cpuset, or a pin), ascending, at most cap of them; every online CPU where
 * the mask cannot be read. Returns how many.
 */
unsigned oc_cpus_allowed(int *cpus, unsigned cap);
/*
 * Keeps the pool's work on the CPUs cpus[0..n_cpus): its spawned workers and
 * the calling thread (worker 0: the thread that runs the pool's jobs, so call
 * it from there). p may be NULL (the calling thread only). Fails with the
 * errno of sched affinity (no CPU of the set allowed or online: EINVAL), with
 * every thread back on the CPUs the caller had.
 */
int oc_pool_pin(struct oc_pool *p, const int *cpus, unsigned n_cpus, struct oc_err *err);

/*
 * Runs fn(ctx, task, worker) for task in [0, n_tasks) and waits. Task t always
 * runs on worker t % n_threads, so a kernel that gives each task a fixed slice
 * of work is deterministic at any thread count as long as results do not
 * depend on the worker. The first non-OK return is the result. Not reentrant:
 * fn must not call oc_pool_run on the same pool. p may be NULL (runs inline).
 */
typedef int (*oc_pool_fn)(void *ctx, uint64_t task, unsigned worker);
int oc_pool_run(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx);
/*
 * oc_pool_run when the pool is free; when another thread is running a job on
 * it, the calling thread runs every task itself (as worker 0) instead of
 * waiting for that job. For work whose result does not depend on which
 * thread runs a task (row copies): a background stage's copies then never
 * queue behind the trainer's kernels.
 */
int oc_pool_run_or_inline(struct oc_pool *p, uint64_t n_tasks, oc_pool_fn fn, void *ctx);

/*
 * The lock between the readers of a cache's rows and its reclaimer (the
 * accountant's, core.h): readers take the read side, the reclaimer the write
 * side with oc_reclaim_lock_reclaim, which gives 0 at once on a thread that
 * holds the lock (either side; a reclaim must not wait on its own thread) and
 * 0 when the write side is not had within wait_s seconds; otherwise 1, and the
 * reclaimer calls _unlock when done. Writers are preferred: a waiting
 * reclaim holds new readers back, so overlapping readers cannot starve it.
 * A thread must not take the read side of one lock twice (it would wait on
 * the writer that waits on it), unlock a lock it does not hold, or hold more
 * than OC_RECLAIM_LOCK_NEST of these locks at once: each stops the process
 * with a message.
 */
#define OC_RECLAIM_LOCK_NEST 8
#define OC_RECLAIM_WAIT_S    2 /* what the caches' reclaims wait for their readers, at most */
/*
 * The least a cache of cache_bytes gives back at once, asked for less: 1 MiB
 * or a 16th of it, the less (a reclaim's pass over the cache is then worth it).
 */
static inline uint64_t oc_reclaim_least(uint64_t cache_bytes)
{
    return cache_bytes / 16 < ((uint64_t)1 << 20) ? cache_bytes / 16 : (uint64_t)1 << 20;
}
struct oc_reclaim_lock {
    pthread_rwlock_t rw;
    int ready;
};
int oc_reclaim_lock_init(struct oc_reclaim_lock *l, const char *who, struct oc_err *err);
/* Safe on a lock whose init failed or that was never made (zeroed). */
void oc_reclaim_lock_destroy(struct oc_reclaim_lock *l);
void oc_reclaim_lock_read(struct oc_reclaim_lock *l);
/* The write side, waiting as long as it takes (a cache taking rows back). */
void oc_reclaim_lock_write(struct oc_reclaim_lock *l);
int oc_reclaim_lock_reclaim(struct oc_reclaim_lock *l, unsigned wait_s);
/* Lets go of either side. */
void oc_reclaim_lock_unlock(struct oc_reclaim_lock *l);
/* Whether this thread holds l (either side): for OC_ASSERT where a comment says "lock held". */
int oc_reclaim_lock_held(const struct oc_reclaim_lock *l);

/*
 * Give-back (core/giveback.c): the one way a cache becomes the accountant's
 * reclaimer (oc_mem_reclaimer_add), gives memory back when a request would
 * pass the budget and takes it back once memory frees up. The cache brings
 * its policy (which slots go: `give`) and its exclusion (`lock`, or its own
 * waits inside `give`); the mechanism does the rest, the same for every cache:
 *
 *   request past the budget ──► the accountant asks for `want` bytes
 *     ──► this thread quiet for the cache (oc_giveback_quiet)? nothing
 *     ──► lock set: its write side within OC_RECLAIM_WAIT_S, else nothing
 *     ──► give(owner, goal = want or oc_reclaim_least(cache_bytes), the
 *         more, &released): returns the bytes it gave back, of which it
 *         released `released` from the accountant itself (oc_free, slots
 *         freed one by one); the rest is released here, after the unlock
 *     ──► counted (oc_giveback_gives, _given_bytes; logged by the owner)
 *   take-back, on a thread of the owner's: oc_giveback_take_rows (how many
 *     given-back rows the budget's room allows now) ──► oc_giveback_reserve
 *     (accounted, this thread quiet meanwhile) ──► the owner makes them live
 *
 * Thread-safety: the reclaimer runs on whichever thread asks the accountant;
 * init and register/unregister on the owner's thread; the counters are
 * atomic. Ownership: gb borrows lock, owner and who.
 */
typedef uint64_t (*oc_giveback_fn)(void *owner, uint64_t goal, uint64_t *released);
struct oc_giveback {
    oc_giveback_fn give;
    void *owner;
    struct oc_reclaim_lock *lock; /* held (write side) around give; NULL: give excludes itself */
    uint64_t cache_bytes;         /* what the cache holds given nothing back */
    const char *who;              /* "store ginex": names the cache in errors */
    int registered;
    _Atomic uint64_t n_gives, given_bytes, n_gives_logged;
};
void oc_giveback_init(struct oc_giveback *gb, const char *who, uint64_t cache_bytes,
                      struct oc_reclaim_lock *lock, oc_giveback_fn give, void *owner);
/* Makes gb one of the accountant's reclaimers (at most once: a second call does nothing). */
int oc_giveback_register(struct oc_giveback *gb, struct oc_err *err);
/* Stops the give-backs, waiting for one in progress. Safe on gb never registered. */
void oc_giveback_unregister(struct oc_giveback *gb);
/*
 * Makes reclaims of gb give nothing on this thread (gb NULL: none), the
 * thread being in the middle of a read that a give-back would wait on;
 * returns what was quiet before, to be passed back when done.
 */
const struct oc_giveback *oc_giveback_quiet(const struct oc_giveback *gb);
/*
 * Of `gone` given-back rows of row_bytes, how many to take back now: as many
 * as the budget's room allows (oc_reclaim_room), at least `must` (rows a
 * batch cannot do without); 0 when none, or, with must 0, when fewer than
 * all and less than oc_reclaim_least (not worth a pass over the cache).
 */
uint64_t oc_giveback_take_rows(const struct oc_giveback *gb, uint64_t gone, uint64_t must,
                               uint64_t row_bytes);
/* oc_mem_reserve(bytes, consumer) with this thread quiet for gb (its own reclaims give nothing). */
int oc_giveback_reserve(const struct oc_giveback *gb, uint64_t bytes, const char *consumer,
                        struct oc_err *err);
/* The give-backs that gave something, and the bytes they gave, since init. */
uint64_t oc_giveback_gives(const struct oc_giveback *gb);
uint64_t oc_giveback_given_bytes(const struct oc_giveback *gb);
/* 1 once for give-backs not yet logged (any thread; the caller logs them), else 0. */
int oc_giveback_unlogged(struct oc_giveback *gb);

/*
 * Who holds a plain mutex, in builds with asserts on (core.h's OC_ASSERT), so
 * that a function whose contract says "caller holds mu" can check it:
 *
 *   OC_DEBUG_ONLY(struct oc_held mu_held;)      beside the mutex
 *   lock(mu); OC_HELD_TAKE(&x->mu_held);        after each lock / cond wait
 *   OC_HELD_DROP(&x->mu_held); unlock(mu);      before each unlock / cond wait
 *   OC_ASSERT_HELD(&x->mu_held);                in the function
 *
 * With NDEBUG the field is absent and the macros expand to nothing. The
 * holder is an atomic (relaxed): a check on a thread without the lock reads
 * it without a data race.
 */
struct oc_held {
    atomic_ulong tid; /* pthread_self() of the holder, 0 when free */
};
#define OC_HELD_TAKE(h) \
    OC_DEBUG_ONLY(      \
        atomic_store_explicit(&(h)->tid, (unsigned long)pthread_self(), memory_order_relaxed))
#define OC_HELD_DROP(h) OC_DEBUG_ONLY(atomic_store_explicit(&(h)->tid, 0, memory_order_relaxed))
#define OC_ASSERT_HELD(h)                                              \
    OC_ASSERT(atomic_load_explicit(&(h)->tid, memory_order_relaxed) == \
              (unsigned long)pthread_self())

#endif
