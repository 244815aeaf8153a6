/*
 * kg_names.c — a string → dense id map (open addressing, FNV-1a), used by
 * the GraIL importer to number entities and relations in order of first
 * appearance. Keys are copied into an arena.
 *
 * Place in the data flow: kg import.
 * Thread-safety: one thread per map.
 * Ownership: the map owns its table and key copies; _deinit releases them.
 */
#include <string.h>

#include "kg/kg_names.h"

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void oc_kg_names_init(struct oc_kg_names *m)
{
    memset(m, 0, sizeof(*m));
}

void oc_kg_names_deinit(struct oc_kg_names *m)
{
    oc_free(m->slots);
    for (uint32_t i = 0; i < m->n_blocks; i++)
        oc_free(m->blocks[i]);
    oc_free(m->blocks);
    oc_kg_names_init(m);
}

static int grow(struct oc_kg_names *m, struct oc_err *err)
{
    uint64_t cap = m->cap ? 2 * m->cap : 1024;
    struct oc_kg_name_slot *s = oc_calloc(cap, sizeof(*s), "kg name map", err);
    if (!s)
        return err->status;
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        uint64_t j = m->slots[i].hash & (cap - 1);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    oc_free(m->slots);
    m->slots = s;
    m->cap = cap;
    return OC_OK;
}

static char *arena_copy(struct oc_kg_names *m, const char *key, size_t n, struct oc_err *err)
{
    const size_t block = 1 << 20;
    if (m->n_blocks == 0 || m->used + n + 1 > m->block_cap) {
        size_t cap = n + 1 > block ? n + 1 : block;
        char **bl = oc_realloc(m->blocks, (m->n_blocks + 1) * sizeof(char *), "kg name map", err);
        if (!bl)
            return NULL;
        m->blocks = bl;
        if (!(bl[m->n_blocks] = oc_alloc(cap, "kg name map", err)))
            return NULL;
        m->n_blocks++;
        m->used = 0;
        m->block_cap = cap;
    }
    char *p = m->blocks[m->n_blocks - 1] + m->used;
    memcpy(p, key, n);
    p[n] = '\0';
    m->used += n + 1;
    return p;
}

int oc_kg_names_find(const struct oc_kg_names *m, const char *key, size_t n, uint32_t *id)
{
    if (!m->cap)
        return 0;
    uint64_t h = fnv1a(key, n);
    for (uint64_t j = h & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        if (m->slots[j].hash == h && m->slots[j].len == n && memcmp(m->slots[j].key, key, n) == 0) {
            *id = m->slots[j].id;
            return 1;
        }
    }
    return 0;
}

int oc_kg_names_get(struct oc_kg_names *m, const char *key, size_t n, uint32_t *id,
                    struct oc_err *err)
{
    if (oc_kg_names_find(m, key, n, id))
        return OC_OK;
    if (m->n >= UINT32_MAX - 1)
        return OC_ERR(err, OC_ERR_FORMAT, "kg name map: more than 2^32 - 2 names");
    if ((m->n + 1) * 2 > m->cap) {
        int rc = grow(m, err);
        if (rc)
            return rc;
    }
    char *copy = arena_copy(m, key, n, err);
    if (!copy)
        return err->status;
    uint64_t h = fnv1a(key, n);
    uint64_t j = h & (m->cap - 1);
    while (m->slots[j].key)
        j = (j + 1) & (m->cap - 1);
    m->slots[j] = (struct oc_kg_name_slot){copy, n, h, (uint32_t)m->n};
    *id = (uint32_t)m->n++;
    return OC_OK;
}
