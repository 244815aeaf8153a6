/*
 * kg_atoms.c — atom maps and the Atom Cache of TIGER (thesis section V-A):
 * an atom is one entity's facts (its 1-hop query subgraph). A map is
 * direct-addressed, entity ─► pointer to rel[0..k) followed by tail[0..k),
 * so a lookup is O(1) and extraction copies the very facts the fact graph
 * holds, in its order: the subgraphs, hence the weights, do not change.
 *
 *   Atom Cache: entities by degree (descending, ties by id) ──► as many as
 *               fit in its bytes (the map's 8 bytes per entity included)
 *               ──► their facts read once through the fact graph's reader
 *               into one pool, static for the run
 *
 * A cache whose bytes do not even hold the map is empty (map.at NULL).
 *
 * Place in the data flow: kg (kg_tiger.c, kg_train.c ──► here ──► kg_facts.c).
 * Thread-safety: built and changed by one thread; read by the extraction
 * workers while nobody changes it.
 * Ownership: a map borrows the facts it points to; the cache owns its pool.
 */
#include <stdlib.h>
#include <string.h>

#include "kg/kg_tiger_int.h"

int kg_atoms_init(struct kg_atoms *a, uint64_t n_entities, struct oc_err *err)
{
    memset(a, 0, sizeof(*a));
    a->n_entities = n_entities;
    a->at = oc_calloc(n_entities ? n_entities : 1, sizeof(*a->at), "kg atom map", err);
    return a->at ? OC_OK : err->status;
}

void kg_atoms_deinit(struct kg_atoms *a)
{
    oc_free((void *)a->at);
    oc_free(a->set);
    memset(a, 0, sizeof(*a));
}

int kg_atoms_put(struct kg_atoms *a, uint32_t e, const uint32_t *facts, struct oc_err *err)
{
    if (e >= a->n_entities)
        return OC_ERR(err, OC_ERR_FORMAT, "kg atom map: entity %u out of range (%llu entities)", e,
                      (unsigned long long)a->n_entities);
    if (a->at[e]) {
        a->at[e] = facts; /* the same facts from another slice */
        return OC_OK;
    }
    if (a->n_set == a->cap_set) {
        uint64_t c = a->cap_set ? 2 * a->cap_set : 1024;
        uint32_t *s = oc_realloc(a->set, (size_t)c * 4, "kg atom map", err);
        if (!s)
            return err->status;
        a->set = s;
        a->cap_set = c;
    }
    a->set[a->n_set++] = e;
    a->at[e] = facts;
    return OC_OK;
}

void kg_atoms_clear(struct kg_atoms *a)
{
    for (uint64_t i = 0; i < a->n_set; i++)
        a->at[a->set[i]] = NULL;
    a->n_set = 0;
}

/* Degree-descending order, ties by id, for qsort_r-free sorting: keys packed in u64. */
static int u64_desc(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

int kg_atom_cache_build(struct kg_atom_cache *c, struct oc_kg_facts *f, uint64_t bytes,
                        struct oc_err *err)
{
    memset(c, 0, sizeof(*c));
    uint64_t n = oc_kg_facts_n_entities(f), map_bytes = n * sizeof(void *);
    if (bytes <= map_bytes) {
        oc_log(OC_LOG_INFO,
               "kg atom cache: %llu bytes do not hold its map (%llu bytes for %llu entities): "
               "no Atom Cache",
               (unsigned long long)bytes, (unsigned long long)map_bytes, (unsigned long long)n);
        return OC_OK; /* empty: c->map.at is NULL */
    }
    /* (degree << 32 | ~id): descending = highest degree first, then lowest id */
    uint64_t *order = oc_alloc((size_t)n * 8 + 8, "kg atom cache: order", err);
    if (!order)
        return err->status;
    for (uint64_t e = 0; e < n; e++)
        order[e] = kg_facts_degree(f, (uint32_t)e) << 32 | (uint32_t) ~(uint32_t)e;
    qsort(order, (size_t)n, 8, u64_desc);
    uint64_t room = (bytes - map_bytes) / 8, k = 0, nf = 0;
    while (k < n && nf + (order[k] >> 32) <= room)
        nf += order[k++] >> 32;
    int rc = kg_atoms_init(&c->map, n, err);
    uint32_t *heads = NULL;
    if (!rc && !(c->pool = oc_alloc((size_t)nf * 8 + 8, "kg atom cache", err)))
        rc = err->status;
    if (!rc && !(heads = oc_alloc((size_t)k * 4 + 4, "kg atom cache: heads", err)))
        rc = err->status;
    for (uint64_t i = 0; !rc && i < k; i++)
        heads[i] = ~(uint32_t)order[i];
    oc_free(order);
    /* read in batches of heads by id (sequential on disk), each atom rel then tail */
    struct oc_kg_facts_reader *r = NULL;
    uint32_t *rel = NULL, *tail = NULL;
    const uint64_t step = 1024;
    uint64_t stage = 0;
    for (uint64_t i0 = 0; !rc && i0 < k; i0 += step) {
        uint64_t sum = 0;
        for (uint64_t i = i0; i < k && i < i0 + step; i++)
            sum += kg_facts_degree(f, heads[i]);
        stage = sum > stage ? sum : stage;
    }
    if (!rc)
        rc = oc_kg_facts_reader_new(f, &r, err);
    if (!rc && !(rel = oc_alloc((size_t)stage * 4 + 4, "kg atom cache: staging", err)))
        rc = err->status;
    if (!rc && !(tail = oc_alloc((size_t)stage * 4 + 4, "kg atom cache: staging", err)))
        rc = err->status;
    uint64_t at = 0;
    for (uint64_t i0 = 0; !rc && i0 < k; i0 += step) {
        uint64_t m = k - i0 < step ? k - i0 : step, nfm = 0;
        if ((rc = oc_kg_facts_fetch(r, heads + i0, m, rel, tail, err)))
            break;
        for (uint64_t i = 0; i < m; i++) {
            uint64_t d = kg_facts_degree(f, heads[i0 + i]);
            uint32_t *dst = c->pool + 2 * at;
            memcpy(dst, rel + nfm, (size_t)d * 4);
            memcpy(dst + d, tail + nfm, (size_t)d * 4);
            if ((rc = kg_atoms_put(&c->map, heads[i0 + i], dst, err)))
                break;
            nfm += d;
            at += d;
        }
    }
    oc_kg_facts_reader_free(r);
    oc_free(rel);
    oc_free(tail);
    oc_free(heads);
    if (rc) {
        kg_atom_cache_deinit(c);
        return rc;
    }
    c->n_atoms = k;
    c->n_facts = nf;
    c->bytes = map_bytes + nf * 8;
    return OC_OK;
}

void kg_atom_cache_deinit(struct kg_atom_cache *c)
{
    kg_atoms_deinit(&c->map);
    oc_free(c->pool);
    memset(c, 0, sizeof(*c));
}
