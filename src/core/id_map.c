/*
 * id_map.c — the id → u32 map (id_map.h): open addressing with linear
 * probing and generation-stamped slots, sized to the most keys it was asked
 * to hold and then reused without clearing.
 *
 * Place in the data flow: core (the sampler's relabel pass, kg's slicer and
 * atom maps).
 * Thread-safety: one writer per map; lookups beside each other.
 * Ownership: the map owns its slot array (oc_alloc'd).
 */
#include <string.h>

#include "offcore/id_map.h"

void oc_id_map_init(struct oc_id_map *m)
{
    memset(m, 0, sizeof(*m));
    m->gen = 1;
}

void oc_id_map_deinit(struct oc_id_map *m)
{
    oc_free(m->slots);
    oc_id_map_init(m);
}

void oc_id_map_clear(struct oc_id_map *m)
{
    m->n_live = 0;
    if (++m->gen == 0) {
        /* once per 2^32 clears: old stamps could alias the new generation */
        if (m->slots)
            memset(m->slots, 0, (size_t)m->cap * sizeof(*m->slots));
        m->gen = 1;
    }
}

int oc_id_map_reserve(struct oc_id_map *m, uint64_t n_keys, const char *consumer,
                      struct oc_err *err)
{
    if (n_keys <= m->cap / 2)
        return OC_OK;
    uint64_t cap = 1024;
    unsigned bits = 10;
    while (cap / 2 < n_keys) {
        if (bits >= 60)
            return OC_ERR(err, OC_ERR_NOMEM, "%s: %llu keys is too many", consumer,
                          (unsigned long long)n_keys);
        cap <<= 1;
        bits++;
    }
    struct oc_id_map_slot *slots = oc_calloc((size_t)cap, sizeof(*slots), consumer, err);
    if (!slots)
        return err->status;
    struct oc_id_map old = *m;
    m->slots = slots;
    m->cap = cap;
    m->shift = 64 - bits;
    m->gen = 1;
    m->n_live = 0;
    for (uint64_t i = 0; i < old.cap; i++) {
        if (old.slots[i].gen == old.gen) {
            int ins;
            oc_id_map_get_or_put(m, old.slots[i].key, old.slots[i].val, &ins);
        }
    }
    oc_free(old.slots);
    return OC_OK;
}

uint64_t oc_id_map_bytes(const struct oc_id_map *m)
{
    return m->cap * sizeof(*m->slots);
}
