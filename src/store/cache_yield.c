/*
 * cache_yield.c — a RAM cache of rows (cache.c) that gives memory back to the
 * accountant when a request would pass --mem-budget, and takes it back when
 * memory frees up: `static`'s cache and `diskgnn`'s CPU cache.
 *
 *   rows:  [ slot 0 | ... | slot n_live-1 | given back ... | slot n-1 ]
 *          an anonymous mapping; giving back drops the last slots (whole
 *          pages returned with madvise), taking back reads them again
 *
 * A registered cache gives back through core's give-back (thread.h,
 * oc_giveback, the tree's one mechanism; yield_rows is its policy): asked
 * for `want` bytes, it drops at least that many bytes of its last live slots
 * (at least oc_reclaim_least: 1 MiB or a 16th of the cache, the less), and
 * the lookup (cache.c) treats slots past n_live as misses, read from the
 * feature file. A thread that finds memory free again (beyond
 * TAKEBACK_MARGIN_BYTES or an 8th of the cache, whichever is less) reads
 * those slots back first, in slot order, and both events are logged. What is
 * learned never changes: a row comes from the cache or the file, the same
 * bytes. The slot order is the owner's: static's is hottest first, so the
 * coldest rows go first; diskgnn's is id order.
 *
 * What every giving-back cache shares (the reclaimer, how much a give-back
 * gives at least, how much room a take-back may use) is core's (oc_giveback),
 * which kg's Atom and Slice Caches use too; the accounted mapping whose top
 * slots go back is the cache's own (cache_slots.c), as for gnndrive's buffer
 * and ginex's cache.
 *
 * Place in the data flow: store (below the strategies that own a cache).
 * Thread-safety (asserted where asserts are on: n_live <= n, missing = n -
 * n_live under the lock, no take-back on a thread holding the read side):
 * readers of the rows hold the read side of `lock` between
 * store_yield_read_lock and _unlock; giving back (any thread, from the
 * accountant) and taking back (a reader's thread, outside the read side)
 * take the write side. A reclaim asked on a thread that holds the read side
 * gives nothing (the write side would wait on itself); one asked elsewhere
 * waits for the readers at most OC_RECLAIM_WAIT_S.
 * Ownership: the yield borrows the cache (store_cache_free unmaps its rows,
 * after store_yield_deinit).
 */
#include <inttypes.h>

#include "store/store_int.h"

int store_yield_init(struct store_yield *y, struct store_cache *c, uint64_t row_bytes,
                     const char *who, struct oc_err *err)
{
    memset(y, 0, sizeof(*y));
    y->cache = c;
    y->row_bytes = row_bytes;
    y->who = who;
    return oc_reclaim_lock_init(&y->lock, who, err);
}

/* The give-back's policy (the write side held): drops the last live slots, goal bytes of them. */
static uint64_t yield_rows(void *owner, uint64_t goal, uint64_t *released)
{
    struct store_yield *y = owner;
    uint64_t row = y->row_bytes, live = y->cache->n_live;
    OC_ASSERT(oc_reclaim_lock_held(&y->lock));
    OC_ASSERT(live <= y->cache->n && atomic_load(&y->missing) == y->cache->n - live);
    uint64_t rows = (goal + row - 1) / row;
    if (rows > live)
        rows = live;
    uint64_t keep = live - rows;
    store_cache_give_top(y->cache, keep);
    atomic_store(&y->missing, y->cache->n - keep);
    y->yielded_rows += rows;
    *released = 0; /* the give-back releases them after the unlock */
    return rows * row;
}

int store_yield_register(struct store_yield *y, struct oc_err *err)
{
    if (y->cache->n == 0 || y->gb.registered)
        return OC_OK;
    oc_giveback_init(&y->gb, y->who, y->cache->n * y->row_bytes, &y->lock, yield_rows, y);
    return oc_giveback_register(&y->gb, err);
}

void store_yield_deinit(struct store_yield *y)
{
    oc_giveback_unregister(&y->gb); /* waits for a reclaim in progress */
    oc_reclaim_lock_destroy(&y->lock);
}

void store_yield_read_lock(struct store_yield *y)
{
    oc_reclaim_lock_read(&y->lock);
}

void store_yield_read_unlock(struct store_yield *y)
{
    uint64_t rows = y->yielded_rows - y->taken_rows;
    int unlogged = oc_giveback_unlogged(&y->gb); /* rows as of the give-backs it counts */
    oc_reclaim_lock_unlock(&y->lock);
    if (unlogged)
        store_cache_log_gave(y->who, rows, y->row_bytes, "their rows are read from disk");
}

uint64_t store_yield_missing(const struct store_yield *y)
{
    return atomic_load(&y->missing);
}

int store_yield_reserve(struct oc_store *s, struct store_yield *y, struct store_disk *d, uint64_t n,
                        struct oc_err *err)
{
    int rc = store_disk_reserve(d, n, err);
    return rc ? rc : store_yield_take_back(s, y, d, err);
}

int store_yield_gather(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err)
{
    int rc = store_yield_reserve(s, y, d, n, err);
    if (rc)
        return rc;
    store_yield_read_lock(y);
    rc = store_cache_gather(s, y->cache, d, ids, n, out, err);
    store_yield_read_unlock(y);
    return rc;
}

int store_yield_take_back(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                          struct oc_err *err)
{
    /* outside the read side: the write side below would wait on this thread */
    OC_ASSERT(!oc_reclaim_lock_held(&y->lock));
    uint64_t missing = atomic_load(&y->missing), row = y->row_bytes;
    if (!missing)
        return OC_OK;
    uint64_t rows = oc_giveback_take_rows(&y->gb, missing, 0, row);
    if (rows == 0)
        return OC_OK; /* nothing, or too little to be worth a pass over the lookup */
    struct oc_err local;
    oc_reclaim_lock_write(&y->lock);
    uint64_t live = y->cache->n_live;
    OC_ASSERT(live <= y->cache->n && atomic_load(&y->missing) == y->cache->n - live);
    if (rows > y->cache->n - live)
        rows = y->cache->n - live;
    int rc = OC_OK;
    if (rows &&
        oc_mem_reserve(rows * row, "store cache: cached rows taken back", &local) == OC_OK) {
        rc = store_cache_load(s, y->cache, d, live, live + rows, 1, err);
        if (rc == OC_OK) {
            y->cache->n_live = live + rows;
            atomic_store(&y->missing, y->cache->n - y->cache->n_live);
            y->taken_rows += rows;
        } else {
            oc_mem_release(rows * row);
            oc_err_prefix(err, "%s: taking back cached rows", y->who);
        }
    } else {
        rows = 0; /* the room went to someone else meanwhile: later */
    }
    oc_reclaim_lock_unlock(&y->lock);
    if (rc == OC_OK && rows)
        store_cache_log_took(y->who, rows, atomic_load(&y->missing), row);
    return rc;
}
