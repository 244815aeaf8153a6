/*
 * batch.c — struct oc_sample_batch storage (grow-only arrays reused from
 * batch to batch, comparison) and the checks of a graph view.
 *
 * Place in the data flow: sample; the sampler and the record reader fill
 * batches, the pipeline and nn read them.
 * Thread-safety: a batch belongs to one thread at a time; the checks are pure.
 * Ownership: a batch owns input_ids and its blocks' arrays (oc_alloc'd).
 */
#include <string.h>

#include "sample/sample_int.h"

void oc_sample_batch_init(struct oc_sample_batch *b)
{
    memset(b, 0, sizeof(*b));
}

void oc_sample_batch_deinit(struct oc_sample_batch *b)
{
    if (!b)
        return;
    oc_free(b->input_ids);
    for (unsigned l = 0; l < OC_SAMPLE_MAX_LAYERS; l++) {
        oc_free(b->blocks[l].indptr);
        oc_free(b->blocks[l].indices);
    }
    memset(b, 0, sizeof(*b));
}

void smp_batch_reset(struct oc_sample_batch *b)
{
    b->n_layers = 0;
    b->epoch = 0;
    b->batch_index = 0;
    b->n_seeds = 0;
    b->n_input = 0;
    for (unsigned l = 0; l < OC_SAMPLE_MAX_LAYERS; l++) {
        b->blocks[l].n_src = 0;
        b->blocks[l].n_dst = 0;
        b->blocks[l].n_edges = 0;
    }
}

int smp_batch_reserve_input(struct oc_sample_batch *b, uint64_t n, struct oc_err *err)
{
    return oc_grow_by(&b->input_ids, &b->cap_input, n, sizeof(uint64_t), SMP_GROW_KEEP,
                      "sample batch input ids", err);
}

int smp_block_reserve(struct oc_sample_block *blk, uint64_t n_dst, uint64_t n_edges,
                      struct oc_err *err)
{
    int rc = oc_grow_by(&blk->indptr, &blk->cap_indptr, n_dst + 1, sizeof(uint64_t), SMP_GROW_FRESH,
                        "sample block indptr", err);
    /* at least one element so that a block with no edges still has an array */
    return rc ? rc
              : oc_grow_by(&blk->indices, &blk->cap_indices, n_edges ? n_edges : 1,
                           sizeof(uint32_t), SMP_GROW_FRESH, "sample block indices", err);
}

uint64_t oc_sample_batch_n_edges(const struct oc_sample_batch *b)
{
    uint64_t n = 0;
    for (uint32_t l = 0; l < b->n_layers; l++)
        n += b->blocks[l].n_edges;
    return n;
}

int oc_sample_batch_equal(const struct oc_sample_batch *a, const struct oc_sample_batch *b)
{
    if (a->n_layers != b->n_layers || a->epoch != b->epoch || a->batch_index != b->batch_index ||
        a->n_seeds != b->n_seeds || a->n_input != b->n_input)
        return 0;
    if (a->n_input &&
        memcmp(a->input_ids, b->input_ids, (size_t)a->n_input * sizeof(uint64_t)) != 0)
        return 0;
    for (uint32_t l = 0; l < a->n_layers; l++) {
        const struct oc_sample_block *x = &a->blocks[l], *y = &b->blocks[l];
        if (x->n_src != y->n_src || x->n_dst != y->n_dst || x->n_edges != y->n_edges)
            return 0;
        if (memcmp(x->indptr, y->indptr, (size_t)(x->n_dst + 1) * sizeof(uint64_t)) != 0)
            return 0;
        if (x->n_edges &&
            memcmp(x->indices, y->indices, (size_t)x->n_edges * sizeof(uint32_t)) != 0)
            return 0;
    }
    return 1;
}

int smp_graph_check_view(const struct oc_graph *g, struct oc_err *err)
{
    if (!g)
        return OC_ERR(err, OC_ERR_ARG, "graph: no graph view given");
    if (g->n_nodes == 0)
        return OC_ERR(err, OC_ERR_ARG, "graph: n_nodes is 0");
    if (g->n_nodes == UINT64_MAX)
        return OC_ERR(err, OC_ERR_ARG, "graph: n_nodes %llu is too large",
                      (unsigned long long)g->n_nodes);
    if (!g->indptr)
        return OC_ERR(err, OC_ERR_ARG, "graph: indptr is NULL");
    if (g->disk) {
        if (g->indices32 || g->indices64)
            return OC_ERR(err, OC_ERR_ARG, "graph: an on-disk view has no in-memory indices");
        if (g->n_nodes != g->disk->n_nodes || g->indptr != g->disk->indptr)
            return OC_ERR(err, OC_ERR_ARG,
                          "graph: the view does not match its on-disk topology (n_nodes %llu vs "
                          "%llu, or another indptr)",
                          (unsigned long long)g->n_nodes, (unsigned long long)g->disk->n_nodes);
    } else if (!g->indices32 == !g->indices64)
        return OC_ERR(err, OC_ERR_ARG,
                      "graph: exactly one of indices32 and indices64 must be set (%s)",
                      g->indices32 ? "both are" : "neither is");
    if (g->indices32 && g->n_nodes > (uint64_t)UINT32_MAX + 1)
        return OC_ERR(err, OC_ERR_ARG, "graph: u32 indices cannot address %llu nodes",
                      (unsigned long long)g->n_nodes);
    if (g->indptr[0] != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "graph: indptr[0] is %llu, not 0",
                      (unsigned long long)g->indptr[0]);
    return OC_OK;
}

int oc_sample_graph_check(const struct oc_graph *g, struct oc_err *err)
{
    int rc = smp_graph_check_view(g, err);
    if (rc != OC_OK)
        return rc;
    if (g->disk) {
        uint64_t deg;
        for (uint64_t v = 0; v < g->n_nodes; v++)
            if ((rc = smp_graph_degree(g, v, &deg, err)) != OC_OK)
                return rc;
        return smp_topo_check(g->disk, err);
    }
    for (uint64_t v = 0; v < g->n_nodes; v++) {
        struct smp_nbrs nb;
        rc = smp_graph_nbrs(g, v, &nb, err);
        if (rc != OC_OK)
            return rc;
        for (uint64_t i = 0; i < nb.n; i++) {
            uint64_t u = smp_nbr_at(&nb, i);
            if (u >= g->n_nodes)
                return OC_ERR(
                    err, OC_ERR_FORMAT, "graph: in-neighbor %llu of node %llu is >= n_nodes %llu",
                    (unsigned long long)u, (unsigned long long)v, (unsigned long long)g->n_nodes);
        }
    }
    return OC_OK;
}
