/*
 * kg_slice_map.c — TIGER's query-entity-to-slice mapping: for each query
 * entity sliced, the ids of its slices (disjoint, covering its subgraph),
 * found through an id map, so that it holds bytes for the entities mapped
 * (the training queries' heads), not for every entity of the graph.
 *
 * Place in the data flow: kg (kg_slice.c builds it while slicing,
 * kg_slice_store.c loads it from index.bin and writes it there).
 * Thread-safety: one writer; lookups beside each other while no one writes.
 * Ownership: the map owns its arrays (oc_alloc'd).
 */
#include <stdlib.h>
#include <string.h>

#include "kg/kg_tiger_int.h"

void kg_slice_map_init(struct kg_slice_map *m)
{
    memset(m, 0, sizeof(*m));
    oc_id_map_init(&m->index);
}

void kg_slice_map_deinit(struct kg_slice_map *m)
{
    oc_id_map_deinit(&m->index);
    oc_free(m->heads);
    oc_free(m->ids);
    kg_slice_map_init(m);
}

int kg_slice_map_push(struct kg_slice_map *m, uint32_t id, struct oc_err *err)
{
    OC_KG_TRY(oc_grow(&m->ids, &m->cap_ids, m->n_ids + 1, 4, 1024, "kg slice mapping", err));
    m->ids[m->n_ids++] = id;
    return OC_OK;
}

int kg_slice_map_close(struct kg_slice_map *m, uint32_t e, uint64_t first, struct oc_err *err)
{
    if (m->n_ids - first >= UINT32_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "kg slice mapping: entity %u has 2^32 slices", e);
    OC_KG_TRY(oc_grow(&m->heads, &m->cap_heads, m->n_heads + 1, sizeof(*m->heads), 256,
                      "kg slice mapping", err));
    OC_KG_TRY(oc_id_map_reserve(&m->index, m->n_heads + 1, "kg slice mapping", err));
    int inserted;
    oc_id_map_get_or_put(&m->index, e, (uint32_t)m->n_heads, &inserted);
    if (!inserted)
        return OC_ERR(err, OC_ERR_FORMAT, "kg slice mapping: entity %u mapped twice", e);
    m->heads[m->n_heads++] = (struct kg_slice_head){first, e, (uint32_t)(m->n_ids - first)};
    return OC_OK;
}

int kg_slice_map_by_entity(const struct kg_slice_map *m, uint32_t **order, struct oc_err *err)
{
    uint64_t *k = oc_alloc((size_t)m->n_heads * 8 + 8, "kg slice mapping", err);
    uint32_t *o = oc_alloc((size_t)m->n_heads * 4 + 4, "kg slice mapping", err);
    if (!k || !o) {
        oc_free(k);
        oc_free(o);
        return err->status;
    }
    for (uint64_t i = 0; i < m->n_heads; i++)
        k[i] = (uint64_t)m->heads[i].entity << 32 | i;
    qsort(k, (size_t)m->n_heads, 8, oc_cmp_u64);
    for (uint64_t i = 0; i < m->n_heads; i++)
        o[i] = (uint32_t)k[i];
    oc_free(k);
    *order = o;
    return OC_OK;
}
