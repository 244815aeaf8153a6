/*
 * cpu_gat.c — GATConv's attention on the CPU: the per-head projections
 * el = <z, attn_l>, er = <z, attn_r>; the edge softmax of
 * LeakyReLU(el[src] + er[dst]) over each destination's in-edges (max
 * subtracted, as DGL's edge_softmax); and the attention-weighted aggregation
 * of z. Forward and backward.
 *
 * Layout: z is n x (H*F), head h in columns [h*F, (h+1)*F); el/er are n x H;
 * attention a is n_edges x H indexed by effective edge id.
 * Backward into source rows walks the block's transpose, so every output row
 * is one task's ordered sum. The attn gradients (a reduction over all rows)
 * are fixed-chunk partials added in chunk order.
 *
 * Place in the data flow: nn CPU backend; GAT layers.
 * Thread-safety: see cpu_int.h.
 * Ownership: partials live in the backend scratch.
 */
#include <math.h>

#include "cpu_int.h"

struct gat_ctx {
    const struct oc_nn_graph *g;
    const float *z, *attn, *el, *er, *a, *dy;
    float *out, *dz, *da, *del, *der, *part;
    uint64_t heads, f_dim, n_rows;
    float slope;
    uint64_t n_chunks;
};

static void span(uint64_t task, uint64_t n, uint64_t per, uint64_t *r0, uint64_t *r1)
{
    *r0 = task * per;
    *r1 = *r0 + per < n ? *r0 + per : n;
}

OC_NN_SIMD static int proj_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    uint64_t r0, r1, hf = c->heads * c->f_dim;
    span(task, c->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    for (uint64_t j = r0; j < r1; j++) {
        const float *z = c->z + j * hf;
        for (uint64_t h = 0; h < c->heads; h++)
            c->out[j * c->heads + h] =
                oc_nn_vdot(z + h * c->f_dim, c->attn + h * c->f_dim, c->f_dim);
    }
    return OC_OK;
}

int oc_nn_cpu_gat_proj_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                           const struct oc_nn_tensor *attn, struct oc_nn_tensor *out,
                           struct oc_err *err)
{
    (void)err;
    struct gat_ctx c = {.z = oc_nn_f32(z),
                        .attn = oc_nn_f32(attn),
                        .out = oc_nn_f32(out),
                        .heads = out->n_cols,
                        .f_dim = z->n_cols / out->n_cols,
                        .n_rows = z->n_rows};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(c.n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(z),
                         proj_fwd_task, &c);
}

/* dz += dout * attn (rows), and partial sums of dattn per row chunk */
OC_NN_SIMD static int proj_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    uint64_t r0, r1, hf = c->heads * c->f_dim;
    span(task, c->n_rows, OC_NN_CPU_REDUCE_ROWS, &r0, &r1);
    float *p = c->part + task * hf;
    for (uint64_t k = 0; k < hf; k++)
        p[k] = 0.0f;
    for (uint64_t j = r0; j < r1; j++) {
        const float *z = c->z + j * hf;
        float *dz = c->dz + j * hf;
        for (uint64_t h = 0; h < c->heads; h++) {
            float d = c->dy[j * c->heads + h];
            uint64_t k = h * c->f_dim;
            oc_nn_vaxpy(dz + k, c->attn + k, d, c->f_dim);
            oc_nn_vaxpy(p + k, z + k, d, c->f_dim);
        }
    }
    return OC_OK;
}

OC_NN_SIMD static int proj_bwd_reduce(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    uint64_t k0, k1, hf = c->heads * c->f_dim;
    span(task, hf, OC_NN_CPU_ELEMS, &k0, &k1);
    for (uint64_t k = k0; k < k1; k++) {
        float s = 0.0f;
        for (uint64_t t = 0; t < c->n_chunks; t++)
            s += c->part[t * hf + k];
        c->out[k] = s;
    }
    return OC_OK;
}

int oc_nn_cpu_gat_proj_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                           const struct oc_nn_tensor *attn, const struct oc_nn_tensor *dout,
                           struct oc_nn_tensor *dz, struct oc_nn_tensor *dattn, struct oc_err *err)
{
    struct gat_ctx c = {.z = oc_nn_f32(z),
                        .attn = oc_nn_f32(attn),
                        .dy = oc_nn_f32(dout),
                        .dz = oc_nn_f32(dz),
                        .out = oc_nn_f32(dattn),
                        .heads = dout->n_cols,
                        .f_dim = z->n_cols / dout->n_cols,
                        .n_rows = z->n_rows};
    c.n_chunks = oc_nn_cpu_div_up(c.n_rows, OC_NN_CPU_REDUCE_ROWS);
    c.part = oc_nn_cpu_scratch(be, (size_t)(c.n_chunks * z->n_cols + 1) * sizeof(float), err);
    if (!c.part)
        return err->status;
    int rc = oc_nn_cpu_run(be, c.n_chunks, oc_nn_cpu_size(z), proj_bwd_task, &c);
    if (rc == OC_OK)
        rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(z->n_cols, OC_NN_CPU_ELEMS), c.n_chunks * z->n_cols,
                           proj_bwd_reduce, &c);
    return rc;
}

static float leaky(float x, float slope)
{
    return x > 0.0f ? x : slope * x;
}

OC_NN_SIMD static int softmax_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads;
    span(task, g->n_dst, OC_NN_CPU_ROWS, &r0, &r1);
    float *a = c->out;
    for (uint64_t i = r0; i < r1; i++) {
        uint64_t e0 = g->indptr[i], e1 = g->indptr[i + 1];
        for (uint64_t h = 0; h < nh; h++) {
            float er = c->er[i * nh + h], mx = -INFINITY;
            for (uint64_t e = e0; e < e1; e++) {
                float s = leaky(c->el[(uint64_t)g->indices[e] * nh + h] + er, c->slope);
                a[e * nh + h] = s;
                mx = s > mx ? s : mx;
            }
            float sum = 0.0f;
            for (uint64_t e = e0; e < e1; e++) {
                float ex = expf(a[e * nh + h] - mx);
                a[e * nh + h] = ex;
                sum += ex;
            }
            for (uint64_t e = e0; e < e1; e++)
                a[e * nh + h] /= sum;
        }
    }
    return OC_OK;
}

int oc_nn_cpu_gat_softmax_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                              const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                              float slope, struct oc_nn_tensor *a, struct oc_err *err)
{
    (void)err;
    struct gat_ctx c = {.g = g,
                        .el = oc_nn_f32(el),
                        .er = oc_nn_f32(er),
                        .out = oc_nn_f32(a),
                        .heads = el->n_cols,
                        .slope = slope};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * el->n_cols,
                         softmax_fwd_task, &c);
}

/* dst rows: da <- d(score) through softmax and LeakyReLU; der = row sums */
OC_NN_SIMD static int softmax_bwd_dst(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads;
    span(task, g->n_dst, OC_NN_CPU_ROWS, &r0, &r1);
    for (uint64_t i = r0; i < r1; i++) {
        uint64_t e0 = g->indptr[i], e1 = g->indptr[i + 1];
        for (uint64_t h = 0; h < nh; h++) {
            float dot = 0.0f;
            for (uint64_t e = e0; e < e1; e++)
                dot += c->a[e * nh + h] * c->da[e * nh + h];
            float er = c->er[i * nh + h], sum = 0.0f;
            for (uint64_t e = e0; e < e1; e++) {
                float ds = c->a[e * nh + h] * (c->da[e * nh + h] - dot);
                float pre = c->el[(uint64_t)g->indices[e] * nh + h] + er;
                float dp = pre > 0.0f ? ds : c->slope * ds;
                c->da[e * nh + h] = dp;
                sum += dp;
            }
            c->der[i * nh + h] = sum;
        }
    }
    return OC_OK;
}

/* src rows: del[j] = sum over j's out-edges of d(score) */
OC_NN_SIMD static int softmax_bwd_src(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads;
    span(task, g->n_src, OC_NN_CPU_ROWS, &r0, &r1);
    for (uint64_t j = r0; j < r1; j++) {
        float *del = c->del + j * nh;
        for (uint64_t h = 0; h < nh; h++)
            del[h] = 0.0f;
        for (uint64_t t = g->t_indptr[j]; t < g->t_indptr[j + 1]; t++) {
            const float *d = c->da + g->t_eid[t] * nh;
            for (uint64_t h = 0; h < nh; h++)
                del[h] += d[h];
        }
    }
    return OC_OK;
}

int oc_nn_cpu_gat_softmax_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                              const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                              float slope, const struct oc_nn_tensor *a, struct oc_nn_tensor *da,
                              struct oc_nn_tensor *del, struct oc_nn_tensor *der,
                              struct oc_err *err)
{
    (void)err;
    struct gat_ctx c = {.g = g,
                        .el = oc_nn_f32(el),
                        .er = oc_nn_f32(er),
                        .a = oc_nn_f32(a),
                        .da = oc_nn_f32(da),
                        .del = oc_nn_f32(del),
                        .der = oc_nn_f32(der),
                        .heads = el->n_cols,
                        .slope = slope};
    int rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * el->n_cols,
                           softmax_bwd_dst, &c);
    if (rc == OC_OK)
        rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_src, OC_NN_CPU_ROWS), g->n_edges * el->n_cols,
                           softmax_bwd_src, &c);
    return rc;
}

OC_NN_SIMD static int agg_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads, fd = c->f_dim, hf = nh * fd;
    span(task, g->n_dst, OC_NN_CPU_ROWS, &r0, &r1);
    uint64_t e_end = g->indptr[r1];
    for (uint64_t i = r0; i < r1; i++) {
        float *y = c->out + i * hf;
        oc_nn_vzero(y, hf);
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            if (e + OC_NN_PREFETCH_EDGES < e_end)
                oc_nn_prefetch_row(c->z + (uint64_t)g->indices[e + OC_NN_PREFETCH_EDGES] * hf, hf);
            const float *z = c->z + (uint64_t)g->indices[e] * hf;
            for (uint64_t h = 0; h < nh; h++)
                oc_nn_vaxpy(y + h * fd, z + h * fd, c->a[e * nh + h], fd);
        }
    }
    return OC_OK;
}

int oc_nn_cpu_gat_agg_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                          const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                          struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct gat_ctx c = {.g = g,
                        .a = oc_nn_f32(a),
                        .z = oc_nn_f32(z),
                        .out = oc_nn_f32(y),
                        .heads = a->n_cols,
                        .f_dim = z->n_cols / a->n_cols};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * z->n_cols,
                         agg_fwd_task, &c);
}

/* dst rows: da[e, h] = <dy[i, h], z[src, h]> */
OC_NN_SIMD static int agg_bwd_dst(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads, fd = c->f_dim, hf = nh * fd;
    span(task, g->n_dst, OC_NN_CPU_ROWS, &r0, &r1);
    uint64_t e_end = g->indptr[r1];
    for (uint64_t i = r0; i < r1; i++) {
        const float *dy = c->dy + i * hf;
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            if (e + OC_NN_PREFETCH_EDGES < e_end)
                oc_nn_prefetch_row(c->z + (uint64_t)g->indices[e + OC_NN_PREFETCH_EDGES] * hf, hf);
            const float *z = c->z + (uint64_t)g->indices[e] * hf;
            for (uint64_t h = 0; h < nh; h++)
                c->da[e * nh + h] = oc_nn_vdot(dy + h * fd, z + h * fd, fd);
        }
    }
    return OC_OK;
}

/* src rows: dz[j, h] = sum over j's out-edges of a[e, h] dy[i, h] */
OC_NN_SIMD static int agg_bwd_src(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gat_ctx *c = cp;
    const struct oc_nn_graph *g = c->g;
    uint64_t r0, r1, nh = c->heads, fd = c->f_dim, hf = nh * fd;
    span(task, g->n_src, OC_NN_CPU_ROWS, &r0, &r1);
    uint64_t t_end = g->t_indptr[r1];
    for (uint64_t j = r0; j < r1; j++) {
        float *dz = c->dz + j * hf;
        oc_nn_vzero(dz, hf);
        for (uint64_t t = g->t_indptr[j]; t < g->t_indptr[j + 1]; t++) {
            if (t + OC_NN_PREFETCH_EDGES < t_end)
                oc_nn_prefetch_row(c->dy + (uint64_t)g->t_dst[t + OC_NN_PREFETCH_EDGES] * hf, hf);
            const float *dy = c->dy + (uint64_t)g->t_dst[t] * hf;
            const float *a = c->a + g->t_eid[t] * nh;
            for (uint64_t h = 0; h < nh; h++)
                oc_nn_vaxpy(dz + h * fd, dy + h * fd, a[h], fd);
        }
    }
    return OC_OK;
}

int oc_nn_cpu_gat_agg_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                          const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                          const struct oc_nn_tensor *dy, struct oc_nn_tensor *dz,
                          struct oc_nn_tensor *da, struct oc_err *err)
{
    (void)err;
    struct gat_ctx c = {.g = g,
                        .a = oc_nn_f32(a),
                        .z = oc_nn_f32(z),
                        .dy = oc_nn_f32(dy),
                        .dz = oc_nn_f32(dz),
                        .da = oc_nn_f32(da),
                        .heads = a->n_cols,
                        .f_dim = z->n_cols / a->n_cols};
    int rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * z->n_cols,
                           agg_bwd_dst, &c);
    if (rc == OC_OK)
        rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_src, OC_NN_CPU_ROWS), g->n_edges * z->n_cols,
                           agg_bwd_src, &c);
    return rc;
}
