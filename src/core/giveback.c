/*
 * giveback.c — the one give-back mechanism of the tree: a cache's memory
 * given back to the accountant (mem.c) when a request would pass
 * --mem-budget, and taken back when memory frees up. Every giving-back cache
 * (store's cache_yield.c for static and diskgnn, gnndrive's buffer, ginex's
 * Belady cache, kg's Atom and Slice Caches) registers through here; what
 * differs between them is their policy (which slots go, passed as `give`)
 * and how they keep readers out (a reclaim lock, or waits of their own
 * inside `give`). thread.h draws the flow.
 *
 * Place in the data flow: core, under every cache (store, kg).
 * Thread-safety: the reclaimer runs on any thread that asks the accountant,
 * under the accountant's reclaim lock (mem.c): it neither allocates nor
 * waits on what the asking thread holds (a quiet thread, or one holding the
 * cache's reclaim lock, gets nothing). The counters are atomic.
 * Ownership: none; the cache owns its memory, gb borrows it.
 */
#include "offcore/thread.h"

/* The cache this thread reads in a way a give-back would wait on: its reclaims give nothing. */
static _Thread_local const struct oc_giveback *quiet;

void oc_giveback_init(struct oc_giveback *gb, const char *who, uint64_t cache_bytes,
                      struct oc_reclaim_lock *lock, oc_giveback_fn give, void *owner)
{
    OC_ASSERT(give != NULL);
    gb->give = give;
    gb->owner = owner;
    gb->lock = lock;
    gb->cache_bytes = cache_bytes;
    gb->who = who;
    gb->registered = 0;
    atomic_store(&gb->n_gives, 0);
    atomic_store(&gb->given_bytes, 0);
    atomic_store(&gb->n_gives_logged, 0);
}

/* The accountant's reclaimer for every giving-back cache. */
static uint64_t reclaim(void *ctx, uint64_t want)
{
    struct oc_giveback *gb = ctx;
    if (quiet == gb)
        return 0;
    if (gb->lock && !oc_reclaim_lock_reclaim(gb->lock, OC_RECLAIM_WAIT_S))
        return 0;
    uint64_t least = oc_reclaim_least(gb->cache_bytes), released = 0;
    uint64_t got = gb->give(gb->owner, want > least ? want : least, &released);
    if (gb->lock)
        oc_reclaim_lock_unlock(gb->lock);
    OC_ASSERT(released <= got);
    oc_mem_release(got - released);
    if (got) {
        atomic_fetch_add(&gb->n_gives, 1);
        atomic_fetch_add(&gb->given_bytes, got);
    }
    return got;
}

int oc_giveback_register(struct oc_giveback *gb, struct oc_err *err)
{
    if (gb->registered)
        return OC_OK;
    int rc = oc_mem_reclaimer_add(reclaim, gb, err);
    if (rc)
        return rc;
    gb->registered = 1;
    return OC_OK;
}

void oc_giveback_unregister(struct oc_giveback *gb)
{
    if (gb->registered)
        oc_mem_reclaimer_remove(reclaim, gb); /* waits for a reclaim in progress */
    gb->registered = 0;
}

const struct oc_giveback *oc_giveback_quiet(const struct oc_giveback *gb)
{
    const struct oc_giveback *was = quiet;
    quiet = gb;
    return was;
}

uint64_t oc_giveback_take_rows(const struct oc_giveback *gb, uint64_t gone, uint64_t must,
                               uint64_t row_bytes)
{
    OC_ASSERT(row_bytes > 0 && must <= gone);
    uint64_t room = oc_reclaim_room(gb->cache_bytes) / row_bytes;
    uint64_t rows = room < gone ? room : gone;
    if (rows < must)
        rows = must;
    if (rows == 0 ||
        (must == 0 && rows < gone && rows * row_bytes < oc_reclaim_least(gb->cache_bytes)))
        return 0; /* nothing, or too little to be worth a pass over the cache */
    return rows;
}

int oc_giveback_reserve(const struct oc_giveback *gb, uint64_t bytes, const char *consumer,
                        struct oc_err *err)
{
    const struct oc_giveback *was = oc_giveback_quiet(gb);
    int rc = oc_mem_reserve(bytes, consumer, err);
    oc_giveback_quiet(was);
    return rc;
}

uint64_t oc_giveback_gives(const struct oc_giveback *gb)
{
    return atomic_load(&gb->n_gives);
}

uint64_t oc_giveback_given_bytes(const struct oc_giveback *gb)
{
    return atomic_load(&gb->given_bytes);
}

int oc_giveback_unlogged(struct oc_giveback *gb)
{
    uint64_t gives = atomic_load(&gb->n_gives), logged = atomic_load(&gb->n_gives_logged);
    return gives != logged && atomic_compare_exchange_strong(&gb->n_gives_logged, &logged, gives);
}
