/*
 * plan_key.c — the content key of a strategy's plan files (ginex's
 * superbatches): an FNV-1a hash of everything the sampled batches depend
 * on, so a file is reused only by a run that would write the same bytes,
 * and two runs with different inputs never share a name.
 *
 * Place in the data flow: store; ginex/ginex_inspect.c names its plan
 * directory with it.
 * Thread-safety: pure functions.
 */
#include "store/store_int.h"

static uint64_t store_fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t store_fnv_u64(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    oc_put_le64(b, v);
    return store_fnv(h, b, 8);
}

uint64_t store_plan_key(const struct oc_store *s, const struct oc_store_config *cfg,
                        const char *tag)
{
    const struct oc_manifest *m = oc_dataset_manifest(s->ds);
    uint64_t h = store_fnv(0xcbf29ce484222325ull, tag, strlen(tag));
    h = store_fnv_u64(h, m->n_nodes);
    h = store_fnv_u64(h, m->n_edges);
    h = store_fnv_u64(h, (uint64_t)m->index_dtype);
    static const enum oc_ds_file files[] = {OC_DS_INDPTR, OC_DS_INDICES};
    for (int i = 0; i < 2; i++) {
        h = store_fnv_u64(h, m->files[files[i]].bytes);
        h = store_fnv_u64(h, m->files[files[i]].crc32);
    }
    h = store_fnv_u64(h, cfg->sample_opts->n_layers);
    for (uint32_t l = 0; l < cfg->sample_opts->n_layers; l++)
        h = store_fnv_u64(h, (uint64_t)(int64_t)cfg->sample_opts->fanouts[l]);
    h = store_fnv_u64(h, cfg->sample_opts->seed);
    h = store_fnv_u64(h, cfg->batch_size);
    h = store_fnv_u64(h, cfg->n_train);
    for (uint64_t i = 0; i < cfg->n_train; i++)
        h = store_fnv_u64(h, cfg->train_ids[i]);
    const struct oc_sample_parts *parts = cfg->sample_opts->parts;
    if (parts) { /* partition batches: another order, other batches */
        h = store_fnv(h, "parts", 5);
        h = store_fnv_u64(h, parts->key);
        h = store_fnv_u64(h, parts->group);
    }
    return h;
}
