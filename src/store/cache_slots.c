/*
 * cache_slots.c — the slots of a store_cache (cache_int.h): its rows as an
 * accounted anonymous mapping, pages of slots given back to the kernel, the
 * top slots given back under a budget, and a bound cache's slots bound to
 * ids and unbound as its owner's policy decides (ginex's changesets,
 * gnndrive's standby list).
 *
 *   rows:    [ slot 0 | slot 1 | ... | slot n_live-1 | given back ... ]
 *   bound:   slot_id[k] = id held ──► lookup: table[id] = k, or hash(id) = k
 *
 * Invariants (asserted where asserts are on): a bound slot's id is found at
 * that slot; n_bound counts the slots found; n_live <= n; binding takes an
 * empty slot and an id not found.
 *
 * Place in the data flow: store (below the strategies that own a cache).
 * Thread-safety: none of its own: a fixed cache's store_yield lock, or the
 * bound cache's owner's lock, guards these.
 * Ownership: the cache owns the mapping, slot_id, table and hash
 * (store_cache_free).
 */
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

#include "store/store_int.h"

int store_cache_map(struct store_cache *c, uint64_t row_bytes, const char *who, struct oc_err *err)
{
    OC_ASSERT(!c->rows && !c->map_bytes);
    c->row_bytes = row_bytes;
    if (c->n == 0)
        return OC_OK;
    int rc = oc_mem_map(c->n * row_bytes, "store cache: cached rows", &c->rows, &c->map_bytes, err);
    if (rc)
        return oc_err_prefix(err, "%s", who);
    c->n_live = c->n;
    return OC_OK;
}

void store_cache_pages_back(const struct store_cache *c, uint64_t lo, uint64_t hi)
{
    OC_ASSERT(lo <= hi && hi <= c->n);
    if (c->map_bytes)
        oc_mem_pages_back(c->rows, c->map_bytes, lo * c->row_bytes,
                          hi == c->n ? c->map_bytes : hi * c->row_bytes);
}

uint64_t store_cache_give_top(struct store_cache *c, uint64_t keep)
{
    uint64_t live = c->n_live;
    OC_ASSERT(keep <= live && live <= c->n);
    if (c->slot_id)
        for (uint64_t k = keep; k < live; k++)
            store_cache_unbind(c, (uint32_t)k);
    store_cache_pages_back(c, keep, c->n);
    c->n_live = keep;
    return live - keep;
}

void store_cache_free(struct store_cache *c)
{
    if (c->map_bytes) {
        munmap(c->rows, c->map_bytes);
        oc_mem_release(c->n_live * c->row_bytes);
    } else {
        oc_free(c->rows);
    }
    oc_free(c->table);
    oc_free(c->ids);
    oc_free(c->slot_of);
    oc_free(c->slot_id);
    pl_hash_deinit(&c->hash);
    memset(c, 0, sizeof(*c));
}

void store_cache_log_gave(const char *who, uint64_t rows, uint64_t row_bytes, const char *then)
{
    char a[32];
    oc_log(OC_LOG_INFO,
           "%s: gave up %" PRIu64 " cache slots (%s) to requests the budget could not otherwise "
           "give; %s until memory frees up",
           who, rows, oc_format_size(rows * row_bytes, a, sizeof(a)), then);
}

void store_cache_log_took(const char *who, uint64_t rows, uint64_t left, uint64_t row_bytes)
{
    char a[32], b[32];
    oc_log(OC_LOG_INFO,
           "%s: took back %" PRIu64 " cache slots (%s) given up earlier; %s still given up", who,
           rows, oc_format_size(rows * row_bytes, a, sizeof(a)),
           oc_format_size(left * row_bytes, b, sizeof(b)));
}

/* ---- a bound cache -------------------------------------------------------- */

int store_cache_init_bound(struct store_cache *c, uint64_t n, uint64_t n_nodes, uint64_t row_bytes,
                           const char *who, struct oc_err *err)
{
    memset(c, 0, sizeof(*c));
    pl_hash_init(&c->hash);
    c->n = n;
    int rc = store_cache_map(c, row_bytes, who, err);
    if (rc)
        return rc;
    if (n && !(c->slot_id = oc_alloc(n * sizeof(uint64_t), "store cache: slot ids", err)))
        return err ? err->status : OC_ERR_NOMEM;
    for (uint64_t k = 0; k < n; k++)
        c->slot_id[k] = STORE_NO_ID;
    if (n_nodes == 0)
        return n ? pl_hash_alloc(&c->hash, n, "store cache: slot map", err) : OC_OK;
    if (!(c->table = oc_alloc(n_nodes * sizeof(uint32_t), "store cache: slot table", err)))
        return err ? err->status : OC_ERR_NOMEM;
    for (uint64_t v = 0; v < n_nodes; v++)
        c->table[v] = STORE_NO_SLOT;
    return OC_OK;
}

uint32_t store_cache_find(const struct store_cache *c, uint64_t id)
{
    if (!c->slot_id)
        return STORE_NO_SLOT; /* no slots */
    return c->table ? c->table[id] : pl_hash_get(&c->hash, c->slot_id, id);
}

void store_cache_bind(struct store_cache *c, uint32_t k, uint64_t id)
{
    OC_ASSERT(k < c->n && c->slot_id[k] == STORE_NO_ID && store_cache_find(c, id) == STORE_NO_SLOT);
    c->slot_id[k] = id;
    if (c->table)
        c->table[id] = k;
    else
        pl_hash_put(&c->hash, c->slot_id, k);
    c->n_bound++;
}

void store_cache_forget(struct store_cache *c, uint32_t k)
{
    OC_ASSERT(k < c->n);
    uint64_t id = c->slot_id[k];
    if (id == STORE_NO_ID || store_cache_find(c, id) != k)
        return; /* empty, or its id forgotten already (found elsewhere or nowhere) */
    if (c->table)
        c->table[id] = STORE_NO_SLOT;
    else
        pl_hash_del(&c->hash, c->slot_id, id);
    OC_ASSERT(c->n_bound > 0);
    c->n_bound--;
}

void store_cache_unbind(struct store_cache *c, uint32_t k)
{
    store_cache_forget(c, k);
    c->slot_id[k] = STORE_NO_ID;
}
