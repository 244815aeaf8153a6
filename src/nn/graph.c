/*
 * graph.c — prepares a sampler block for the kernels: validates it, applies
 * the self-loop rule (nn.h), builds the transpose (CSR over sources, entries
 * ordered by destination, so backward scatters become ordered gathers with no
 * atomics) and GCN's degree normalizers.
 *
 * Place in the data flow: nn; model.c prepares one graph per layer and batch.
 * Thread-safety: a graph is used by one thread at a time (prepared serially:
 * integer passes over the edges, small next to the feature work).
 * Ownership: the graph borrows the block's arrays when it uses them as they
 * are and owns (grow-only, reused) the arrays it derives.
 */
#include <math.h>
#include <string.h>

#include "nn_int.h"

void oc_nn_graph_init(struct oc_nn_graph *g)
{
    memset(g, 0, sizeof(*g));
}

void oc_nn_graph_deinit(struct oc_nn_graph *g)
{
    oc_nn_hbuf_free(&g->b_indptr);
    oc_nn_hbuf_free(&g->b_indices);
    oc_nn_hbuf_free(&g->b_t_indptr);
    oc_nn_hbuf_free(&g->b_t_dst);
    oc_nn_hbuf_free(&g->b_t_eid);
    oc_nn_hbuf_free(&g->b_norm_src);
    oc_nn_hbuf_free(&g->b_norm_dst);
    memset(g, 0, sizeof(*g));
}

static int graph_check(const struct oc_nn_block *b, struct oc_err *err)
{
    if (b->n_dst > b->n_src)
        return OC_ERR(err, OC_ERR_ARG, "block has %llu dst nodes but only %llu src nodes",
                      (unsigned long long)b->n_dst, (unsigned long long)b->n_src);
    if (b->n_src > (uint64_t)UINT32_MAX + 1)
        return OC_ERR(err, OC_ERR_ARG, "block has %llu src nodes, more than 32-bit local ids hold",
                      (unsigned long long)b->n_src);
    if (!b->indptr)
        return OC_ERR(err, OC_ERR_ARG, "block has no indptr");
    if (b->indptr[0] != 0)
        return OC_ERR(err, OC_ERR_ARG, "block indptr[0] = %llu, expected 0",
                      (unsigned long long)b->indptr[0]);
    for (uint64_t i = 0; i < b->n_dst; i++) {
        if (b->indptr[i + 1] < b->indptr[i])
            return OC_ERR(err, OC_ERR_ARG, "block indptr decreases at dst %llu",
                          (unsigned long long)i);
    }
    uint64_t n_edges = b->indptr[b->n_dst];
    if (n_edges && !b->indices)
        return OC_ERR(err, OC_ERR_ARG, "block has %llu edges but no indices",
                      (unsigned long long)n_edges);
    for (uint64_t e = 0; e < n_edges; e++) {
        if (b->indices[e] >= b->n_src)
            return OC_ERR(err, OC_ERR_ARG, "block edge %llu: src %u >= n_src %llu",
                          (unsigned long long)e, b->indices[e], (unsigned long long)b->n_src);
    }
    return OC_OK;
}

/* Effective CSR with one self-edge per dst first, explicit self-edges dropped. */
static int graph_self_loops(struct oc_nn_graph *g, const struct oc_nn_block *b, struct oc_err *err)
{
    uint64_t n_max = b->indptr[b->n_dst] + b->n_dst;
    if (oc_nn_hbuf_reserve(&g->b_indptr, (size_t)(b->n_dst + 1) * sizeof(uint64_t),
                           "nn block indptr", err) != OC_OK ||
        oc_nn_hbuf_reserve(&g->b_indices, (size_t)n_max * sizeof(uint32_t), "nn block indices",
                           err) != OC_OK)
        return err->status;
    uint64_t *ip = g->b_indptr.p;
    uint32_t *ix = g->b_indices.p;
    uint64_t n = 0;
    ip[0] = 0;
    for (uint64_t i = 0; i < b->n_dst; i++) {
        ix[n++] = (uint32_t)i;
        for (uint64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
            if (b->indices[e] != i)
                ix[n++] = b->indices[e];
        ip[i + 1] = n;
    }
    g->indptr = ip;
    g->indices = ix;
    g->n_edges = n;
    return OC_OK;
}

static int graph_norm(struct oc_nn_graph *g, const struct oc_nn_block *b, int self_loops,
                      struct oc_err *err)
{
    if (oc_nn_hbuf_reserve(&g->b_norm_src, (size_t)g->n_src * sizeof(float), "nn gcn norm", err) !=
            OC_OK ||
        oc_nn_hbuf_reserve(&g->b_norm_dst, (size_t)g->n_dst * sizeof(float), "nn gcn norm", err) !=
            OC_OK)
        return err->status;
    float *ns = g->b_norm_src.p, *nd = g->b_norm_dst.p;
    for (uint64_t i = 0; i < g->n_dst; i++) {
        uint64_t d = g->indptr[i + 1] - g->indptr[i];
        nd[i] = (float)(1.0 / sqrt((double)(d ? d : 1)));
    }
    if (b->src_out_deg) {
        for (uint64_t j = 0; j < g->n_src; j++) {
            uint64_t d =
                b->src_out_deg[j] + (self_loops ? 1 : 0); /* every node has its self-loop */
            ns[j] = (float)(1.0 / sqrt((double)(d ? d : 1)));
        }
    } else {
        /* counts go in the transpose's indptr buffer, free until a transpose is built */
        if (oc_nn_hbuf_reserve(&g->b_t_indptr, (size_t)(g->n_src + 1) * sizeof(uint64_t),
                               "nn block transpose", err) != OC_OK)
            return err->status;
        uint64_t *cnt = g->b_t_indptr.p;
        memset(cnt, 0, (size_t)g->n_src * sizeof(uint64_t));
        for (uint64_t e = 0; e < g->n_edges; e++)
            cnt[g->indices[e]]++;
        for (uint64_t j = 0; j < g->n_src; j++)
            ns[j] = (float)(1.0 / sqrt((double)(cnt[j] ? cnt[j] : 1)));
    }
    g->norm_src = ns;
    g->norm_dst = nd;
    g->has_norm = 1;
    return OC_OK;
}

int oc_nn_graph_prepare(struct oc_nn_graph *g, const struct oc_nn_block *block, int self_loops,
                        int need_norm, struct oc_err *err)
{
    g->has_t = 0;
    g->has_norm = 0;
    if (graph_check(block, err) != OC_OK)
        return err->status;
    g->n_src = block->n_src;
    g->n_dst = block->n_dst;
    if (self_loops) {
        if (graph_self_loops(g, block, err) != OC_OK)
            return err->status;
    } else {
        g->indptr = block->indptr;
        g->indices = block->indices;
        g->n_edges = block->indptr[block->n_dst];
    }
    if (need_norm && graph_norm(g, block, self_loops, err) != OC_OK)
        return err->status;
    return OC_OK;
}

int oc_nn_graph_need_transpose(struct oc_nn_graph *g, struct oc_err *err)
{
    if (g->has_t)
        return OC_OK;
    if (oc_nn_hbuf_reserve(&g->b_t_indptr, (size_t)(g->n_src + 1) * sizeof(uint64_t),
                           "nn block transpose", err) != OC_OK ||
        oc_nn_hbuf_reserve(&g->b_t_dst, (size_t)g->n_edges * sizeof(uint32_t), "nn block transpose",
                           err) != OC_OK ||
        oc_nn_hbuf_reserve(&g->b_t_eid, (size_t)g->n_edges * sizeof(uint64_t), "nn block transpose",
                           err) != OC_OK)
        return err->status;
    uint64_t *tp = g->b_t_indptr.p;
    uint32_t *td = g->b_t_dst.p;
    uint64_t *te = g->b_t_eid.p;
    memset(tp, 0, (size_t)(g->n_src + 1) * sizeof(uint64_t));
    for (uint64_t e = 0; e < g->n_edges; e++)
        tp[(uint64_t)g->indices[e] + 1]++; /* an index of UINT32_MAX must not wrap */
    for (uint64_t j = 0; j < g->n_src; j++)
        tp[j + 1] += tp[j];
    /* fill in dst order: tp[j] walks from the start of j to the start of j + 1 */
    for (uint64_t i = 0; i < g->n_dst; i++) {
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            uint64_t pos = tp[g->indices[e]]++;
            td[pos] = (uint32_t)i;
            te[pos] = e;
        }
    }
    for (uint64_t j = g->n_src; j > 0; j--)
        tp[j] = tp[j - 1];
    tp[0] = 0;
    g->t_indptr = tp;
    g->t_dst = td;
    g->t_eid = te;
    g->has_t = 1;
    return OC_OK;
}
