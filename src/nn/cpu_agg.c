/*
 * cpu_agg.c — sparse aggregation over a prepared block on the CPU: sum,
 * mean (SAGEConv 'mean') and GCN's symmetric normalization, forward and
 * backward.
 *
 *   forward  (dst rows):  y_i  = post_i * sum_{e in in(i)}  w_src(e) x_src(e)
 *   backward (src rows):  dx_j = post_j * sum_{(i,e) in out(j)} w_i dy_i
 *
 *   kind  w_src   post_i (fwd)   w_i (bwd)   post_j (bwd)
 *   sum   1       1              1           1
 *   mean  1       1/deg_i        1/deg_i     1
 *   gcn   ns_j    nd_i           nd_i        ns_j
 *
 * The backward walks the transpose (entries of j ordered by dst), so each
 * output row is one task's ordered sum: no atomics, fixed order.
 *
 * cat (SAGE's one GEMM over [h_neigh | h_self]): forward rows are 2C wide,
 * y_i = [agg_i | x_i]; backward reads dy rows 2C wide and adds the right
 * half to dx_j for the dst prefix (j < n_dst) after the edge sum.
 *
 * Place in the data flow: nn CPU backend; SAGE and GCN layers.
 * Thread-safety: see cpu_int.h (tasks own disjoint output rows).
 * Ownership: none.
 */
#include <string.h>

#include "cpu_int.h"

struct agg_ctx {
    const struct oc_nn_graph *g;
    enum oc_nn_agg agg;
    const float *in;
    float *out;
    uint64_t n_cols;
    int cat;
};

OC_NN_SIMD static int agg_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct agg_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t n = c->n_cols, r0 = task * OC_NN_CPU_ROWS;
    uint64_t r1 = r0 + OC_NN_CPU_ROWS < g->n_dst ? r0 + OC_NN_CPU_ROWS : g->n_dst;
    uint64_t e_end = g->indptr[r1], ldy = c->cat ? 2 * n : n;
    for (uint64_t i = r0; i < r1; i++) {
        float *y = c->out + i * ldy;
        oc_nn_vzero(y, n);
        uint64_t e0 = g->indptr[i], e1 = g->indptr[i + 1];
        for (uint64_t e = e0; e < e1; e++) {
            if (e + OC_NN_PREFETCH_EDGES < e_end)
                oc_nn_prefetch_row(c->in + (uint64_t)g->indices[e + OC_NN_PREFETCH_EDGES] * n, n);
            uint32_t s = g->indices[e];
            const float *x = c->in + (uint64_t)s * n;
            if (c->agg == OC_NN_AGG_GCN)
                oc_nn_vaxpy(y, x, g->norm_src[s], n);
            else
                oc_nn_vadd(y, x, n);
        }
        float post = 1.0f;
        if (c->agg == OC_NN_AGG_MEAN)
            post = e1 > e0 ? 1.0f / (float)(e1 - e0) : 0.0f;
        else if (c->agg == OC_NN_AGG_GCN)
            post = g->norm_dst[i];
        if (c->agg != OC_NN_AGG_SUM)
            oc_nn_vscale(y, post, n);
        if (c->cat)
            memcpy(y + n, c->in + i * n, n * sizeof(float));
    }
    return OC_OK;
}

int oc_nn_cpu_agg_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                      int cat, const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      struct oc_err *err)
{
    (void)err;
    struct agg_ctx c = {.g = g,
                        .agg = agg,
                        .in = oc_nn_f32(x),
                        .out = oc_nn_f32(y),
                        .n_cols = x->n_cols,
                        .cat = cat};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * x->n_cols,
                         agg_fwd_task, &c);
}

OC_NN_SIMD static int agg_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct agg_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t n = c->n_cols, r0 = task * OC_NN_CPU_ROWS;
    uint64_t r1 = r0 + OC_NN_CPU_ROWS < g->n_src ? r0 + OC_NN_CPU_ROWS : g->n_src;
    uint64_t t_end = g->t_indptr[r1], ldy = c->cat ? 2 * n : n;
    for (uint64_t j = r0; j < r1; j++) {
        float *dx = c->out + j * n;
        oc_nn_vzero(dx, n);
        for (uint64_t t = g->t_indptr[j]; t < g->t_indptr[j + 1]; t++) {
            if (t + OC_NN_PREFETCH_EDGES < t_end)
                oc_nn_prefetch_row(c->in + (uint64_t)g->t_dst[t + OC_NN_PREFETCH_EDGES] * ldy, n);
            uint32_t i = g->t_dst[t];
            const float *dy = c->in + (uint64_t)i * ldy;
            float w = 1.0f;
            if (c->agg == OC_NN_AGG_MEAN)
                w = 1.0f / (float)(g->indptr[i + 1] - g->indptr[i]);
            else if (c->agg == OC_NN_AGG_GCN)
                w = g->norm_dst[i];
            if (c->agg == OC_NN_AGG_SUM)
                oc_nn_vadd(dx, dy, n);
            else
                oc_nn_vaxpy(dx, dy, w, n);
        }
        if (c->agg == OC_NN_AGG_GCN)
            oc_nn_vscale(dx, g->norm_src[j], n);
        if (c->cat && j < g->n_dst)
            oc_nn_vadd(dx, c->in + j * ldy + n, n);
    }
    return OC_OK;
}

int oc_nn_cpu_agg_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                      int cat, const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx,
                      struct oc_err *err)
{
    (void)err;
    struct agg_ctx c = {.g = g,
                        .agg = agg,
                        .in = oc_nn_f32(dy),
                        .out = oc_nn_f32(dx),
                        .n_cols = dx->n_cols,
                        .cat = cat};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_src, OC_NN_CPU_ROWS), g->n_edges * dx->n_cols,
                         agg_bwd_task, &c);
}
