/*
 * cache_int.h — private to src/store: the store's one slot cache of rows
 * (struct store_cache): its rows, its lookup, its live slots, and misses
 * read from disk (cache.c); slots bound and unbound while training runs
 * (cache_slots.c); the same cache giving its memory back to the accountant
 * and taking it back (struct store_yield, cache_yield.c, on core's
 * oc_giveback).
 *
 * A cache is a fixed set (filled once: static's hot rows, diskgnn's CPU
 * cache, outre's and helios's caches) or bound slot by slot by its owner's
 * policy: ginex's Belady changesets, gnndrive's reference counts with a
 * standby LRU list (oc_slot_list) on top. Every one gathers through
 * store_slots_copy and gives back its top slots (store_cache_give_top).
 *
 * Place in the data flow: between a strategy's gather and the row reader
 * (rows_int.h); hyperbatches (hyper_int.h) stage such a cache's misses.
 * Thread-safety: a fixed cache is filled before its gathers and read-only
 * after, except through its store_yield: readers of the rows hold
 * store_yield_read_lock, giving back and taking back hold its write side.
 * A bound cache is its owner's to lock (gnndrive's gd->mu, ginex's turns).
 * n_live is atomic so that stats may look at it from any thread.
 * Ownership: a store_cache owns its rows (oc_alloc'd, or an accounted
 * mapping), lookup and ids (store_cache_free); a store_yield borrows its
 * cache.
 */
#ifndef OFFCORE_STORE_CACHE_INT_H
#define OFFCORE_STORE_CACHE_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "offcore/thread.h"
#include "plan/belady.h"
#include "store/rows_int.h"

/* ---- a RAM cache of rows, misses read from disk (cache.c) --------------- */

#define STORE_NO_SLOT UINT32_MAX
#define STORE_NO_ID   UINT64_MAX /* a bound cache's empty slot (slot_id) */

/*
 * Rows as stored (f16 or f32) in n slots, found through table (u32 per node:
 * the slot, STORE_NO_SLOT if absent) when it is set, else, in a bound cache
 * (slot_id set), through hash over slot_id, else by binary search over the
 * ascending ids, whose k-th has slot slot_of[k] (slot k when slot_of is
 * NULL). Only slots below n_live hold their row: a cache that gave memory
 * back keeps its slots [0, n_live) and drops the rest (a bound cache unbinds
 * them), so a lookup of a slot >= n_live is a miss. Fewer than STORE_NO_SLOT
 * rows. The per-gather scratch (one slot per requested row) is the
 * reader's (struct store_disk).
 */
struct store_cache {
    uint64_t n;
    _Atomic uint64_t n_live;
    uint8_t *rows;
    uint64_t row_bytes; /* with a mapping: the rows' size, for its accounting */
    size_t map_bytes;   /* rows are an accounted anonymous mapping of this length (0: oc_alloc'd) */
    uint32_t *table;
    uint64_t *ids;
    uint32_t *slot_of;
    /* a bound cache (cache_slots.c) */
    uint64_t *slot_id;   /* n: the id slot k holds, or STORE_NO_ID */
    struct pl_hash hash; /* id -> slot over slot_id, when there is no table */
    uint64_t n_bound;    /* slots whose id the lookup finds */
};

uint32_t store_cache_lookup(const struct store_cache *c, uint64_t id);
/*
 * Rows [0, n) of out from their slots of rows (as stored, row_bytes apart):
 * row i converted from slot slots[i], or, where that is STORE_NO_SLOT, its
 * row read in place by store_disk_queue widened (f16); on s->pool.
 */
int store_slots_copy(const struct oc_store *s, const uint8_t *rows, const uint32_t *slots,
                     uint64_t n, float *out, struct oc_err *err);
/* Which rows store_slots_copy_part handles: hits (converted from their slots), misses
   (widened in place, f16), or both (store_slots_copy). */
#define STORE_SLOTS_HITS   1u
#define STORE_SLOTS_MISSES 2u
#define STORE_SLOTS_ALL    (STORE_SLOTS_HITS | STORE_SLOTS_MISSES)
/* store_slots_copy of the rows in `part` only: ginex copies the hits out before its
   changeset overwrites their slots, and widens the misses once the changes took them. */
int store_slots_copy_part(const struct oc_store *s, const uint8_t *rows, const uint32_t *slots,
                          uint64_t n, float *out, unsigned part, struct oc_err *err);
/*
 * oc_store_gather through the cache: hits from c, misses read through d into
 * their output rows; counts tiers CPU / DISK and requested_disk_bytes.
 */
int store_cache_gather(struct oc_store *s, struct store_cache *c, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);
/*
 * Rows a cache of `avail` bytes holds and its lookup: the u32 table or the
 * sorted ids (sorted_lookup_bytes a cached row: 8 for the id, 12 with slot_of),
 * whichever caches more rows (the table on a tie).
 */
void store_cache_plan(const struct oc_store *s, uint64_t avail, uint64_t sorted_lookup_bytes,
                      uint64_t *n_cached, int *use_table);
/*
 * Reads the rows of slots [lo, hi) of c (rows, and its lookup, set) from the
 * feature file through d into place, in id order, same-page reads merged,
 * s->load_run_rows per run. counted: the reads go into s->stats (rows taken
 * back during training; not the fill at open).
 */
int store_cache_load(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t lo,
                     uint64_t hi, int counted, struct oc_err *err);
struct store_yield;
/*
 * Fills c with the n rows of ids (ascending, oc_alloc'd; taken over: kept as
 * the sorted lookup or freed) read through d, same-page reads merged; who
 * names the strategy in errors. With y (initialized over c) the rows are
 * its mapping (store_cache_map), else oc_alloc'd. On failure c holds what was
 * set (free it with store_cache_free, after store_yield_deinit).
 */
int store_cache_fill(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t n,
                     int use_table, uint64_t *ids, struct store_yield *y, const char *who,
                     struct oc_err *err);
/* Rows, lookup and slot scratch. */
uint64_t store_cache_held_bytes(const struct oc_store *s, const struct store_cache *c);
/* Frees (or unmaps, releasing its live slots) rows, and table, ids and slots; c is empty again. */
void store_cache_free(struct store_cache *c);
/* Maps the rows of c's n slots (accounted to `who`), n_live = n; nothing for n = 0. */
int store_cache_map(struct store_cache *c, uint64_t row_bytes, const char *who, struct oc_err *err);
/*
 * Whole pages of slots [lo, hi) of c's mapping back to the kernel (their
 * rows read as zeros after; hi = n: to the mapping's end). Accounting is
 * the caller's.
 */
void store_cache_pages_back(const struct store_cache *c, uint64_t lo, uint64_t hi);
/*
 * Gives slots [keep, n_live) back: a bound cache unbinds them, every page
 * past keep goes back, n_live = keep. Returns the slots given; their bytes
 * are the caller's to release (its give-back does).
 */
uint64_t store_cache_give_top(struct store_cache *c, uint64_t keep);
/* Logs that `who` has given up `rows` slots of row_bytes (`then`: what their rows do meanwhile). */
void store_cache_log_gave(const char *who, uint64_t rows, uint64_t row_bytes, const char *then);
/* Logs that `who` took back `rows` slots of row_bytes, `left` still given up. */
void store_cache_log_took(const char *who, uint64_t rows, uint64_t left, uint64_t row_bytes);

/* ---- a bound cache (cache_slots.c) --------------------------------------- */

/*
 * An empty bound cache of n slots of row_bytes, mapped (store_cache_map),
 * looked up through a table of n_nodes entries, or (n_nodes 0) a hash of n.
 */
int store_cache_init_bound(struct store_cache *c, uint64_t n, uint64_t n_nodes, uint64_t row_bytes,
                           const char *who, struct oc_err *err);
/* The slot the lookup finds id in, or STORE_NO_SLOT (also in a cache of no slots). */
uint32_t store_cache_find(const struct store_cache *c, uint64_t id);
/* Empty slot k holds id from now on (id not found before). */
void store_cache_bind(struct store_cache *c, uint32_t k, uint64_t id);
/* Slot k is empty; the lookup no longer finds the id it held there. */
void store_cache_unbind(struct store_cache *c, uint32_t k);
/* The lookup no longer finds slot k's id there; slot_id[k] keeps it (a slot draining). */
void store_cache_forget(struct store_cache *c, uint32_t k);

/* ---- a cache that gives memory back (cache_yield.c) --------------------- */

/*
 * The rows of a store_cache in an anonymous mapping that gives its last live
 * slots back to the accountant when a request would pass the budget, and
 * reads them back when memory frees up (static, diskgnn). Readers of the
 * rows hold store_yield_read_lock; lookups see given-back slots as misses.
 */
struct store_yield {
    struct store_cache *cache; /* borrowed; its n_live [lock] */
    uint64_t row_bytes;
    const char *who;             /* "store static": names the strategy in logs and errors */
    struct oc_reclaim_lock lock; /* readers of rows: read; giving back and taking back: write */
    struct oc_giveback gb;       /* the give-back (core giveback.c; yield_rows its policy) */
    _Atomic uint64_t missing;    /* n - n_live, for a look without the lock */
    uint64_t yielded_rows, taken_rows; /* since open [lock] */
};

int store_yield_init(struct store_yield *y, struct store_cache *c, uint64_t row_bytes,
                     const char *who, struct oc_err *err);
/* Registers the give-back with the accountant (thread.h, oc_giveback): a budgeted store does. */
int store_yield_register(struct store_yield *y, struct oc_err *err);
/* Unregisters (waiting for a reclaim in progress), destroys the lock (store_cache_free unmaps). */
void store_yield_deinit(struct store_yield *y);
/* Around every read of the rows or of n_live; the unlock logs a give-back not yet logged. */
void store_yield_read_lock(struct store_yield *y);
void store_yield_read_unlock(struct store_yield *y);
/* Slots given back and not yet taken back (no lock). */
uint64_t store_yield_missing(const struct store_yield *y);
/*
 * Reads given-back slots again, through d, while the budget has room for
 * them (a margin left); on a reader's thread, outside the read side.
 */
int store_yield_take_back(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                          struct oc_err *err);
/*
 * What a gather through a giving-back cache does first, outside its lock,
 * where the cache can still give for it: d's scratch for n rows, and the rows
 * given back taken back while there is room.
 */
int store_yield_reserve(struct oc_store *s, struct store_yield *y, struct store_disk *d, uint64_t n,
                        struct oc_err *err);
/* store_cache_gather through a giving-back cache: store_yield_reserve, then the gather
   under the read side. */
int store_yield_gather(struct oc_store *s, struct store_yield *y, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);

#endif
