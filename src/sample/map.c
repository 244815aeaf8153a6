/*
 * map.c — the global-id → local-id map used to relabel sampled neighbors:
 * open addressing with linear probing and generation-stamped slots, sized to
 * the largest batch seen and then reused without clearing.
 *
 * Place in the data flow: sample (the relabel pass of the sampler).
 * Thread-safety: one thread per map.
 * Ownership: the map owns its slot array (oc_alloc'd).
 */
#include <string.h>

#include "sample/sample_int.h"

void smp_map_init(struct smp_map *m)
{
    memset(m, 0, sizeof(*m));
    m->gen = 1;
}

void smp_map_deinit(struct smp_map *m)
{
    oc_free(m->slots);
    smp_map_init(m);
}

void smp_map_clear(struct smp_map *m)
{
    m->n_live = 0;
    if (++m->gen == 0) {
        /* once per 2^32 clears: old stamps could alias the new generation */
        if (m->slots)
            memset(m->slots, 0, (size_t)m->cap * sizeof(*m->slots));
        m->gen = 1;
    }
}

int smp_map_reserve(struct smp_map *m, uint64_t n_keys, struct oc_err *err)
{
    if (n_keys <= m->cap / 2)
        return OC_OK;
    uint64_t cap = 1024;
    unsigned bits = 10;
    while (cap / 2 < n_keys) {
        if (bits >= 60)
            return OC_ERR(err, OC_ERR_NOMEM, "sample map: %llu keys is too many",
                          (unsigned long long)n_keys);
        cap <<= 1;
        bits++;
    }
    struct smp_map_slot *slots = oc_calloc((size_t)cap, sizeof(*slots), "sample id map", err);
    if (!slots)
        return err->status;
    struct smp_map old = *m;
    m->slots = slots;
    m->cap = cap;
    m->shift = 64 - bits;
    m->gen = 1;
    m->n_live = 0;
    for (uint64_t i = 0; i < old.cap; i++) {
        if (old.slots[i].gen == old.gen) {
            int ins;
            smp_map_get_or_put(m, old.slots[i].key, old.slots[i].val, &ins);
        }
    }
    oc_free(old.slots);
    return OC_OK;
}
