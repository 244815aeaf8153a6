/*
 * dist_cache.c — the cache of other parts' feature rows of a partitioned
 * `train --distributed` (--remote-cache SIZE): each rank keeps, inside its
 * --mem-budget, the f32 rows of the nodes it does not own with the highest
 * in-degree in the whole graph, fetched from their owners once before
 * training, and asks the owners per batch only for the rest (dist_rows.c,
 * train_part_rows).
 *
 *   every rank, alone:  nodes by (in-degree desc, id asc) ─► for each rank r:
 *                       the first n_max of them r does not own = r's hot set
 *                         r == me: ids (ascending) ─► the cache's rows
 *                         r != me: the ones I own ─► hot bits (r, local row)
 *   before training:    train_part_cache_fill: rounds of train_part_rows off
 *                       the plan, the rows straight into the cache
 *   per batch:          a hot node's row copied from the cache; the owner's
 *                       access map (part_accesses) leaves out what r caches
 *
 * The hot sets are static and every rank computes every rank's from the
 * same degrees, owner map and SIZE (the same options on every rank), so an
 * owner knows exactly which rows each rank will ask of it (ginex plans its
 * cache over that). A cached row is a copy of the f32 row its owner's
 * store gathered, so the rows a shard reads, and the weights, are the
 * uncached run's.
 *
 * Place in the data flow: train, beside dist_rows.c (the trainer's fill of
 * a batch's rows).
 * Thread-safety: planned, opened and filled on the trainer's thread before
 * training; then read-only (train_part_hot also from ginex's inspector).
 * Ownership: struct train_part_cache owns its ids, rows and hot bits (all
 * through the accountant: the rows taken from the store's share).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"
#include "train/train_int.h"

/* Row bytes of the cache: f32, whatever the part's dtype (what train_part_rows returns). */
static uint64_t cache_row_bytes(const struct train_part *tp)
{
    return (uint64_t)tp->part.feat_dim * sizeof(float);
}

/*
 * The graph's nodes as keys ordered hottest first: (in-degree, descending;
 * id, ascending), the degree complemented in the high half, the id (< 2^32:
 * offcore partition's bound) in the low.
 */
static int hot_order(const struct oc_graph *g, uint64_t **keys, struct oc_err *err)
{
    uint64_t n = g->n_nodes;
    uint64_t *k = oc_alloc((n ? n : 1) * sizeof(uint64_t), "--remote-cache: node order", err);
    if (!k)
        return err->status;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t deg = g->indptr[v + 1] - g->indptr[v];
        if (deg > UINT32_MAX)
            deg = UINT32_MAX;
        k[v] = ((uint64_t)(UINT32_MAX - deg) << 32) | v;
    }
    qsort(k, n, sizeof(uint64_t), oc_cmp_u64);
    *keys = k;
    return OC_OK;
}

int train_part_cache_plan(struct train_part *tp, const struct oc_graph *graph, struct oc_err *err)
{
    struct train_part_cache *c = &tp->cache;
    const struct oc_plan_part *p = &tp->part;
    if (!c->bytes)
        return OC_OK;
    OC_ASSERT(graph->n_nodes == p->n_nodes && p->n_nodes <= UINT32_MAX);
    c->n_max = c->bytes / cache_row_bytes(tp);
    c->n = p->n_nodes - p->n_local < c->n_max ? p->n_nodes - p->n_local : c->n_max;
    c->words = (p->n_local + 63) / 64;
    uint64_t *keys = NULL;
    c->ids = oc_alloc((c->n ? c->n : 1) * sizeof(uint64_t), "--remote-cache: node ids", err);
    c->hot = c->ids ? oc_calloc(p->n_parts * (c->words ? c->words : 1), sizeof(uint64_t),
                                "--remote-cache: other ranks' hot rows", err)
                    : NULL;
    if (!c->hot || hot_order(graph, &keys, err))
        return err->status;
    const uint32_t *owner = p->owner;
    for (uint32_t r = 0; r < p->n_parts; r++) {
        uint64_t taken = 0;
        for (uint64_t i = 0; i < p->n_nodes && taken < c->n_max; i++) {
            uint64_t v = keys[i] & UINT32_MAX;
            uint32_t o = owner[2 * v];
            if (o == r)
                continue;
            if (r == p->part)
                c->ids[taken] = v;
            else if (o == p->part)
                c->hot[r * c->words + owner[2 * v + 1] / 64] |= 1ull << (owner[2 * v + 1] % 64);
            taken++;
        }
        OC_ASSERT(r != p->part || taken == c->n);
    }
    oc_free(keys);
    qsort(c->ids, c->n, sizeof(uint64_t), oc_cmp_u64);
    return OC_OK;
}

int train_part_cache_open(struct train_part *tp, uint64_t *store_bytes, struct oc_err *err)
{
    struct train_part_cache *c = &tp->cache;
    if (!c->bytes)
        return OC_OK;
    uint64_t bytes = c->n * cache_row_bytes(tp);
    if (store_bytes && bytes >= *store_bytes) {
        char a[32], b[32], s[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "--remote-cache %s: its %" PRIu64 " rows of other parts need %s, but the "
                      "store's share of --mem-budget (after the topology, model and batches "
                      "in flight) is %s; give a smaller --remote-cache or a larger --mem-budget",
                      oc_format_size(c->bytes, a, sizeof(a)), c->n,
                      oc_format_size(bytes, b, sizeof(b)),
                      oc_format_size(*store_bytes, s, sizeof(s)));
    }
    c->rows = oc_alloc(bytes ? bytes : 1, "--remote-cache: other parts' rows", err);
    if (!c->rows)
        return err->status;
    c->rows_bytes = bytes;
    if (store_bytes)
        *store_bytes -= bytes;
    char a[32];
    oc_log(OC_LOG_INFO,
           "partition: rank %u caches %" PRIu64 " of the %" PRIu64
           " rows of other parts (%s), those of highest in-degree",
           tp->part.part, c->n, tp->part.n_nodes - tp->part.n_local,
           oc_format_size(bytes, a, sizeof(a)));
    return OC_OK;
}

int train_part_cache_fill(struct train_part *tp, struct oc_store *store, uint64_t chunk,
                          struct oc_err *err)
{
    struct train_part_cache *c = &tp->cache;
    if (!c->bytes)
        return OC_OK;
    OC_ASSERT(!c->live && chunk > 0);
    const uint64_t dim = tp->part.feat_dim;
    /* every rank the same rounds: its bound n_max (or all the nodes) over chunk */
    uint64_t most = c->n_max < tp->part.n_nodes ? c->n_max : tp->part.n_nodes;
    int rc = OC_OK;
    for (uint64_t lo = 0; rc == OC_OK && lo < most; lo += chunk) {
        uint64_t n = lo < c->n ? (c->n - lo < chunk ? c->n - lo : chunk) : 0;
        rc = train_part_rows(tp, store, NULL, c->ids + (n ? lo : 0), NULL, n, dim,
                             c->rows + (n ? lo : 0) * dim, NULL, err);
    }
    if (rc)
        return oc_err_prefix(err, "--remote-cache: filling the cache");
    c->live = 1;
    c->fill_bytes = c->n * cache_row_bytes(tp);
    return OC_OK;
}

const float *train_part_cached(const struct train_part *tp, uint64_t v)
{
    const struct train_part_cache *c = &tp->cache;
    if (!c->live)
        return NULL;
    uint64_t k = oc_lower_bound_u64(c->ids, 0, c->n, v);
    return k < c->n && c->ids[k] == v ? c->rows + k * tp->part.feat_dim : NULL;
}

void train_part_cache_close(struct train_part_cache *c)
{
    oc_free(c->ids);
    oc_free(c->rows);
    oc_free(c->hot);
    memset(c, 0, sizeof(*c));
}
