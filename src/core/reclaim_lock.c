/*
 * reclaim_lock.c — the lock between the readers of a cache and the cache's
 * reclaimer (the memory accountant asking it to give rows back): a
 * reader-writer lock that prefers writers, so readers that keep coming
 * (lookups on two threads, overlapping) cannot starve a reclaim, plus a
 * per-thread record of the locks the thread holds, so a reclaim asked for on
 * a thread that holds the cache's lock gives nothing at once instead of
 * waiting on itself.
 *
 *   reader:      read ── rows ── read_end
 *   reclaimer:   reclaim(wait) ──► held? 0 : write side within wait ── give ── write_end
 *   taking back: write ── load ── write_end
 *
 * Place in the data flow: core; store caches (cache_yield.c) and kg's Atom
 * Cache guard their rows with it.
 * Thread-safety: every call may come from any thread; a thread holds at most
 * OC_RECLAIM_LOCK_NEST of these locks at once.
 * Ownership: none beyond the lock itself.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "offcore/thread.h"

/* The locks this thread holds (either side), innermost last. */
static _Thread_local const struct oc_reclaim_lock *held[OC_RECLAIM_LOCK_NEST];
static _Thread_local unsigned n_held;

/* A misuse thread.h rules out (a deadlock or a stale record otherwise): stops the process. */
static void misuse(const char *what)
{
    fprintf(stderr, "offcore: reclaim lock: %s\n", what);
    abort();
}

static void note_held(const struct oc_reclaim_lock *l)
{
    if (n_held == OC_RECLAIM_LOCK_NEST)
        misuse("more locks held at once than OC_RECLAIM_LOCK_NEST");
    held[n_held++] = l;
}

static void note_released(const struct oc_reclaim_lock *l)
{
    for (unsigned i = n_held; i-- > 0;)
        if (held[i] == l) {
            held[i] = held[--n_held];
            return;
        }
    misuse("unlocked by a thread that does not hold it");
}

static int holds(const struct oc_reclaim_lock *l)
{
    for (unsigned i = 0; i < n_held; i++)
        if (held[i] == l)
            return 1;
    return 0;
}

int oc_reclaim_lock_held(const struct oc_reclaim_lock *l)
{
    return holds(l);
}

int oc_reclaim_lock_init(struct oc_reclaim_lock *l, const char *who, struct oc_err *err)
{
    pthread_rwlockattr_t a;
    l->ready = 0;
    if (pthread_rwlockattr_init(&a) != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: cannot make its lock", who);
    /* writer-preferring; readers never take it twice on one thread (it would deadlock then) */
    int rc = pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    if (rc == 0)
        rc = pthread_rwlock_init(&l->rw, &a);
    pthread_rwlockattr_destroy(&a);
    if (rc != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: cannot make its lock", who);
    l->ready = 1;
    return OC_OK;
}

void oc_reclaim_lock_destroy(struct oc_reclaim_lock *l)
{
    if (l->ready)
        pthread_rwlock_destroy(&l->rw);
    l->ready = 0;
}

void oc_reclaim_lock_read(struct oc_reclaim_lock *l)
{
    if (holds(l)) /* a second read would wait on a waiting writer, which waits on the first */
        misuse("taken twice by one thread");
    if (pthread_rwlock_rdlock(&l->rw) != 0)
        misuse("its read side refused");
    note_held(l);
}

void oc_reclaim_lock_write(struct oc_reclaim_lock *l)
{
    if (holds(l) || pthread_rwlock_wrlock(&l->rw) != 0)
        misuse("its write side taken by a thread that holds it");
    note_held(l);
}

int oc_reclaim_lock_reclaim(struct oc_reclaim_lock *l, unsigned wait_s)
{
    if (holds(l))
        return 0;
    /* timedwrlock's deadline is on the wall clock (clockwrlock would take a monotonic one,
       but ThreadSanitizer does not see it take the lock and reports every reclaim a race) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_s;
    if (pthread_rwlock_timedwrlock(&l->rw, &until) != 0)
        return 0;
    note_held(l);
    return 1;
}

void oc_reclaim_lock_unlock(struct oc_reclaim_lock *l)
{
    note_released(l);
    pthread_rwlock_unlock(&l->rw);
}
