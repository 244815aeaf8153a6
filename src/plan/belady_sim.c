/*
 * belady_sim.c — the small structures under the Belady planner and `ginex`: the id map
 * (u64 keys kept by the caller, u32 values, linear probing, backward-shift
 * deletion) and the LRU simulator that reports what an LRU cache of the same
 * capacity would have missed on the same accesses.
 *
 * Place in the data flow: plan; the planner maps ids to entries and runs the
 * LRU simulation, ginex's executor (store) maps ids to cache slots, and
 * --strategy auto's inspection (store) simulates LRU with it.
 * Thread-safety: each map or simulator belongs to one thread.
 * Ownership: the table and the simulator's arrays are oc_alloc'd here and
 * released by _deinit; keys[] arrays are the caller's.
 *
 * Map layout (4 bytes per entry, load at most 1/2):
 *
 *   tab:  [ v | NONE | v' | v'' | NONE ... ]   key of v = keys[v]
 *   home(key) = (key x 2^64/phi) >> shift      (Fibonacci hashing)
 */
#include <string.h>

#include "plan/belady.h"

#define HASH_MIN_CAP 16u

static inline uint64_t hash_home(const struct pl_hash *h, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> h->shift;
}

void pl_hash_init(struct pl_hash *h)
{
    memset(h, 0, sizeof(*h));
}

void pl_hash_deinit(struct pl_hash *h)
{
    oc_free(h->tab);
    pl_hash_init(h);
}

static uint64_t hash_cap_for(uint64_t n_keys, unsigned *bits)
{
    uint64_t cap = HASH_MIN_CAP;
    unsigned b = 4;
    while (cap / 2 < n_keys) {
        cap <<= 1;
        b++;
    }
    if (bits)
        *bits = b;
    return cap;
}

uint64_t pl_hash_bytes(uint64_t n_keys)
{
    return hash_cap_for(n_keys, NULL) * sizeof(uint32_t);
}

void pl_hash_clear(struct pl_hash *h)
{
    if (h->tab)
        memset(h->tab, 0xFF, (size_t)h->cap * sizeof(uint32_t));
    h->n = 0;
}

int pl_hash_alloc(struct pl_hash *h, uint64_t n_keys, const char *consumer, struct oc_err *err)
{
    unsigned bits;
    uint64_t cap = hash_cap_for(n_keys, &bits);
    uint32_t *tab = oc_alloc((size_t)cap * sizeof(uint32_t), consumer, err);
    if (!tab)
        return err ? err->status : OC_ERR_NOMEM;
    oc_free(h->tab);
    h->tab = tab;
    h->cap = cap;
    h->shift = 64 - bits;
    pl_hash_clear(h);
    return OC_OK;
}

int pl_hash_grow(struct pl_hash *h, const uint64_t *keys, uint64_t n_keys, const char *consumer,
                 struct oc_err *err)
{
    if (n_keys <= h->cap / 2)
        return OC_OK;
    struct pl_hash old = *h;
    pl_hash_init(h);
    int rc = pl_hash_alloc(h, n_keys, consumer, err);
    if (rc) {
        *h = old;
        return rc;
    }
    for (uint64_t i = 0; i < old.cap; i++)
        if (old.tab[i] != PL_NONE)
            pl_hash_put(h, keys, old.tab[i]);
    oc_free(old.tab);
    return OC_OK;
}

uint32_t pl_hash_get(const struct pl_hash *h, const uint64_t *keys, uint64_t key)
{
    if (h->cap == 0)
        return PL_NONE;
    uint64_t mask = h->cap - 1;
    for (uint64_t i = hash_home(h, key);; i = (i + 1) & mask) {
        uint32_t v = h->tab[i];
        if (v == PL_NONE || keys[v] == key)
            return v;
    }
}

void pl_hash_put(struct pl_hash *h, const uint64_t *keys, uint32_t v)
{
    uint64_t mask = h->cap - 1, i = hash_home(h, keys[v]);
    while (h->tab[i] != PL_NONE)
        i = (i + 1) & mask;
    h->tab[i] = v;
    h->n++;
}

void pl_hash_del(struct pl_hash *h, const uint64_t *keys, uint64_t key)
{
    if (h->cap == 0)
        return;
    uint64_t mask = h->cap - 1, i = hash_home(h, key);
    for (;; i = (i + 1) & mask) {
        uint32_t v = h->tab[i];
        if (v == PL_NONE)
            return;
        if (keys[v] == key)
            break;
    }
    /*
     * Backward shift: an entry at j (home k) may fill the hole at i when the
     * hole lies on its probe path, i.e. i is no farther from k than j is.
     */
    for (uint64_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        uint32_t v = h->tab[j];
        if (v == PL_NONE)
            break;
        uint64_t k = hash_home(h, keys[v]);
        if (((j - k) & mask) >= ((j - i) & mask)) {
            h->tab[i] = v;
            i = j;
        }
    }
    h->tab[i] = PL_NONE;
    h->n--;
}

/* ---- LRU ------------------------------------------------------------------ */

uint64_t pl_lru_bytes(uint64_t cap)
{
    return cap ? cap * sizeof(uint64_t) + oc_slot_list_bytes(cap) + pl_hash_bytes(cap) : 0;
}

int pl_lru_init(struct pl_lru *l, uint64_t cap, struct oc_err *err)
{
    memset(l, 0, sizeof(*l));
    pl_hash_init(&l->map);
    int rc = oc_slot_list_init(&l->recent, cap, "plan belady: LRU simulation", err);
    if (rc || cap == 0)
        return rc;
    l->id = oc_alloc((size_t)cap * sizeof(uint64_t), "plan belady: LRU simulation", err);
    if (!l->id || (rc = pl_hash_alloc(&l->map, cap, "plan belady: LRU simulation", err))) {
        pl_lru_deinit(l);
        return rc ? rc : err ? err->status : OC_ERR_NOMEM;
    }
    l->cap = cap;
    return OC_OK;
}

void pl_lru_deinit(struct pl_lru *l)
{
    oc_free(l->id);
    oc_slot_list_deinit(&l->recent);
    pl_hash_deinit(&l->map);
    memset(l, 0, sizeof(*l));
}

int pl_lru_access(struct pl_lru *l, uint64_t id)
{
    if (l->cap == 0)
        return 0;
    uint32_t v = pl_hash_get(&l->map, l->id, id);
    if (v != PL_NONE) {
        if (l->recent.front != v) {
            oc_slot_list_unlink(&l->recent, v);
            oc_slot_list_push_front(&l->recent, v);
        }
        return 1;
    }
    if (l->n < l->cap) {
        v = (uint32_t)l->n++;
    } else {
        v = l->recent.back;
        pl_hash_del(&l->map, l->id, l->id[v]);
        oc_slot_list_unlink(&l->recent, v);
    }
    l->id[v] = id;
    pl_hash_put(&l->map, l->id, v);
    oc_slot_list_push_front(&l->recent, v);
    return 0;
}
