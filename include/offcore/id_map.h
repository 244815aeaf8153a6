/*
 * id_map.h — an id → u32 map for per-batch relabelling and lookups: open
 * addressing with linear probing, sized to what it holds (not to the id
 * space), slots stamped with a generation so that clearing it for the next
 * batch is one increment, not a memset of the table.
 *
 * Place in the data flow: core; the sampler relabels sampled neighbours with
 * it, kg's slicer, slice mapping and batch atom map find entities with it.
 * Thread-safety: one writer at a time; oc_id_map_get may run on several
 * threads at once while no one writes.
 * Ownership: the map owns its slot array (oc_alloc'd, under the consumer
 * name given to oc_id_map_reserve).
 */
#ifndef OFFCORE_ID_MAP_H
#define OFFCORE_ID_MAP_H

#include <stdint.h>

#include "offcore/core.h"

struct oc_id_map_slot {
    uint64_t key;
    uint32_t val;
    uint32_t gen;
};

struct oc_id_map {
    struct oc_id_map_slot *slots;
    uint64_t cap;   /* a power of two, or 0 */
    unsigned shift; /* 64 - log2(cap) */
    uint32_t gen;
    uint64_t n_live; /* keys of the current generation */
};

void oc_id_map_init(struct oc_id_map *m);
void oc_id_map_deinit(struct oc_id_map *m);
/* Forgets every key (O(1) except once per 2^32 clears). */
void oc_id_map_clear(struct oc_id_map *m);
/*
 * Grows (rehashing live keys) so that n_keys keys keep the load <= 1/2; the
 * slots are allocated as `consumer` (for the budget's messages).
 */
int oc_id_map_reserve(struct oc_id_map *m, uint64_t n_keys, const char *consumer,
                      struct oc_err *err);
/* Bytes of its slots. */
uint64_t oc_id_map_bytes(const struct oc_id_map *m);

static inline uint64_t oc_id_map_hash(const struct oc_id_map *m, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> m->shift;
}

/*
 * Returns key's value, inserting `val` if absent (*inserted = 1). The map
 * must have room (oc_id_map_reserve).
 */
static inline uint32_t oc_id_map_get_or_put(struct oc_id_map *m, uint64_t key, uint32_t val,
                                            int *inserted)
{
    uint64_t mask = m->cap - 1;
    uint64_t i = oc_id_map_hash(m, key);
    for (;;) {
        struct oc_id_map_slot *s = &m->slots[i];
        if (s->gen != m->gen) {
            s->key = key;
            s->val = val;
            s->gen = m->gen;
            m->n_live++;
            *inserted = 1;
            return val;
        }
        if (s->key == key) {
            *inserted = 0;
            return s->val;
        }
        i = (i + 1) & mask;
    }
}

/* Whether key is present; its value in *val. Read-only: safe beside other readers. */
static inline int oc_id_map_get(const struct oc_id_map *m, uint64_t key, uint32_t *val)
{
    if (m->cap == 0)
        return 0;
    uint64_t mask = m->cap - 1;
    for (uint64_t i = oc_id_map_hash(m, key);; i = (i + 1) & mask) {
        const struct oc_id_map_slot *s = &m->slots[i];
        if (s->gen != m->gen)
            return 0;
        if (s->key == key) {
            *val = s->val;
            return 1;
        }
    }
}

static inline void oc_id_map_prefetch(const struct oc_id_map *m, uint64_t key)
{
    __builtin_prefetch(&m->slots[oc_id_map_hash(m, key)], 1, 1);
}

#endif
