/*
 * cpu_kg.c — CPU kernels of RED-GNN's relation-typed message passing: row
 * gather and scatter-add, the query-conditioned edge attention, the
 * attention-weighted message sum, and the loss over all candidate entities.
 *
 *   hid_e  = relu(ps[src_e] + pr[rel_e] + pq[query_e])     alpha_e = sig(hid_e . w + b)
 *   y_i    = sum_{e -> i} alpha_e (h[src_e] + r[rel_e])
 *
 * Determinism: row-wise outputs are split in fixed row ranges; scatters
 * (a row receiving from many edges) are split by fixed column ranges, each
 * task walking every edge in order, so each output element is summed in
 * edge order by one task; reductions (dw, db, loss) sum fixed partials in
 * order. Same bits at any thread count.
 *
 * Place in the data flow: nn CPU backend (ops_kg.c dispatches here).
 * Thread-safety: see cpu_int.h. Ownership: partials live in the backend scratch.
 */
#include <math.h>
#include <string.h>

#include "cpu_int.h"

/* Columns per task of scatter kernels. */
#define KG_SCATTER_COLS 8
/* Edges per partial sum of edge reductions. */
#define KG_EDGE_CHUNK 4096

struct kg_ctx {
    const struct oc_nn_rel_block *g;
    const struct oc_nn_tensor *a, *b, *c, *d, *w;
    struct oc_nn_tensor *y, *y2, *y3;
    const uint32_t *idx;
    float bias;
    double *part;
};

static int gather_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    uint64_t i0, i1, n = c->y->n_cols;
    oc_nn_cpu_range(task, c->y->n_rows, OC_NN_CPU_ROWS, &i0, &i1);
    const float *x = oc_nn_f32(c->a);
    float *y = oc_nn_f32(c->y);
    for (uint64_t i = i0; i < i1; i++)
        memcpy(y + i * n, x + (uint64_t)c->idx[i] * n, (size_t)n * sizeof(float));
    return OC_OK;
}

int oc_nn_cpu_rows_gather(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                          const uint32_t *idx, struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct kg_ctx c = {.a = x, .idx = idx, .y = y};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(y),
                         gather_task, &c);
}

static int scatter_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    uint64_t c0, c1, n = c->y->n_cols;
    oc_nn_cpu_range(task, n, KG_SCATTER_COLS, &c0, &c1);
    const float *x = oc_nn_f32(c->a);
    float *y = oc_nn_f32(c->y);
    for (uint64_t i = 0; i < c->a->n_rows; i++) {
        float *yr = y + (uint64_t)c->idx[i] * n;
        const float *xr = x + i * n;
        for (uint64_t k = c0; k < c1; k++)
            yr[k] += xr[k];
    }
    return OC_OK;
}

int oc_nn_cpu_rows_scatter_add(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                               const uint32_t *idx, struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct kg_ctx c = {.a = x, .idx = idx, .y = y};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_cols, KG_SCATTER_COLS), oc_nn_cpu_size(x),
                         scatter_task, &c);
}

static inline float sigmoidf(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* a = ps, b = pr, c = pq, d = b (1x1), w; y = hid, y2 = alpha */
static int attn_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    const struct oc_nn_rel_block *g = c->g;
    uint64_t e0, e1, na = c->a->n_cols;
    oc_nn_cpu_range(task, g->n_edges, KG_EDGE_CHUNK, &e0, &e1);
    const float *ps = oc_nn_f32(c->a), *pr = oc_nn_f32(c->b), *pq = oc_nn_f32(c->c);
    const float *w = oc_nn_f32(c->w);
    float *hid = oc_nn_f32(c->y), *alpha = oc_nn_f32(c->y2);
    for (uint64_t e = e0; e < e1; e++) {
        const float *s = ps + (uint64_t)g->src[e] * na, *r = pr + (uint64_t)g->rel[e] * na;
        const float *q = pq + (uint64_t)g->query[e] * na;
        float *h = hid + e * na, acc = 0.0f;
        for (uint64_t k = 0; k < na; k++) {
            float v = s[k] + r[k] + q[k];
            h[k] = v > 0.0f ? v : 0.0f;
            acc += h[k] * w[k];
        }
        alpha[e] = sigmoidf(acc + c->bias);
    }
    return OC_OK;
}

int oc_nn_cpu_edge_attn_fwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                            const struct oc_nn_tensor *ps, const struct oc_nn_tensor *pr,
                            const struct oc_nn_tensor *pq, const struct oc_nn_tensor *w,
                            const struct oc_nn_tensor *b, struct oc_nn_tensor *hid,
                            struct oc_nn_tensor *alpha, struct oc_err *err)
{
    (void)err;
    struct kg_ctx c = {
        .g = g, .a = ps, .b = pr, .c = pq, .w = w, .y = hid, .y2 = alpha, .bias = oc_nn_f32(b)[0]};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_edges, KG_EDGE_CHUNK), g->n_edges * ps->n_cols,
                         attn_fwd_task, &c);
}

/* a = hid, b = alpha, c = dalpha, w; y = dpre; part[task * (A + 1) ..] = dw | db partials */
static int attn_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    uint64_t e0, e1, na = c->a->n_cols;
    oc_nn_cpu_range(task, c->g->n_edges, KG_EDGE_CHUNK, &e0, &e1);
    const float *hid = oc_nn_f32(c->a), *alpha = oc_nn_f32(c->b), *da = oc_nn_f32(c->c);
    const float *w = oc_nn_f32(c->w);
    float *dpre = oc_nn_f32(c->y);
    double *part = c->part + task * (na + 1);
    for (uint64_t k = 0; k <= na; k++)
        part[k] = 0.0;
    for (uint64_t e = e0; e < e1; e++) {
        float a = alpha[e], dl = da[e] * a * (1.0f - a); /* d(logit) */
        const float *h = hid + e * na;
        float *dp = dpre + e * na;
        for (uint64_t k = 0; k < na; k++) {
            part[k] += (double)(dl * h[k]);
            dp[k] = h[k] > 0.0f ? dl * w[k] : 0.0f;
        }
        part[na] += (double)dl;
    }
    return OC_OK;
}

int oc_nn_cpu_edge_attn_bwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                            const struct oc_nn_tensor *hid, const struct oc_nn_tensor *alpha,
                            const struct oc_nn_tensor *dalpha, const struct oc_nn_tensor *w,
                            struct oc_nn_tensor *dpre, struct oc_nn_tensor *dw,
                            struct oc_nn_tensor *db, struct oc_err *err)
{
    uint64_t na = hid->n_cols, n_tasks = oc_nn_cpu_div_up(g->n_edges, KG_EDGE_CHUNK);
    double *part = oc_nn_cpu_scratch(be, (size_t)((n_tasks + 1) * (na + 1) * sizeof(double)), err);
    if (!part)
        return err->status;
    struct kg_ctx c = {.g = g, .a = hid, .b = alpha, .c = dalpha, .w = w, .y = dpre, .part = part};
    int rc = oc_nn_cpu_run(be, n_tasks, g->n_edges * hid->n_cols, attn_bwd_task, &c);
    if (rc)
        return rc;
    float *dwv = oc_nn_f32(dw);
    for (uint64_t k = 0; k <= na; k++) {
        double s = 0.0;
        for (uint64_t t = 0; t < n_tasks; t++)
            s += part[t * (na + 1) + k];
        if (k < na)
            dwv[k] = (float)s;
        else
            oc_nn_f32(db)[0] = (float)s;
    }
    return OC_OK;
}

/* a = h, b = r, c = alpha; y = out */
static int msg_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    const struct oc_nn_rel_block *g = c->g;
    uint64_t i0, i1, n = c->a->n_cols;
    oc_nn_cpu_range(task, g->n_dst, OC_NN_CPU_ROWS, &i0, &i1);
    const float *h = oc_nn_f32(c->a), *r = oc_nn_f32(c->b), *alpha = oc_nn_f32(c->c);
    float *y = oc_nn_f32(c->y);
    for (uint64_t i = i0; i < i1; i++) {
        float *yi = y + i * n;
        oc_nn_vzero(yi, n);
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            oc_nn_vaxpy(yi, h + (uint64_t)g->src[e] * n, alpha[e], n);
            oc_nn_vaxpy(yi, r + (uint64_t)g->rel[e] * n, alpha[e], n);
        }
    }
    return OC_OK;
}

int oc_nn_cpu_edge_msg_fwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                           const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                           const struct oc_nn_tensor *alpha, struct oc_nn_tensor *y,
                           struct oc_err *err)
{
    (void)err;
    struct kg_ctx c = {.g = g, .a = h, .b = r, .c = alpha, .y = y};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * y->n_cols,
                         msg_fwd_task, &c);
}

/* a = h, b = r, d = dy; y3 = dalpha (rows of targets) */
static int msg_dalpha_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    const struct oc_nn_rel_block *g = c->g;
    uint64_t i0, i1, n = c->a->n_cols;
    oc_nn_cpu_range(task, g->n_dst, OC_NN_CPU_ROWS, &i0, &i1);
    const float *h = oc_nn_f32(c->a), *r = oc_nn_f32(c->b), *dy = oc_nn_f32(c->d);
    float *da = oc_nn_f32(c->y3);
    for (uint64_t i = i0; i < i1; i++)
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++)
            da[e] = oc_nn_vdot(dy + i * n, h + (uint64_t)g->src[e] * n, n) +
                    oc_nn_vdot(dy + i * n, r + (uint64_t)g->rel[e] * n, n);
    return OC_OK;
}

/* c = alpha, d = dy; y = dh, y2 = dr (+=): columns [c0, c1) over every edge in order */
static int msg_scatter_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct kg_ctx *c = cp;
    const struct oc_nn_rel_block *g = c->g;
    uint64_t c0, c1, n = c->d->n_cols;
    oc_nn_cpu_range(task, n, KG_SCATTER_COLS, &c0, &c1);
    const float *alpha = oc_nn_f32(c->c), *dy = oc_nn_f32(c->d);
    float *dh = oc_nn_f32(c->y), *dr = oc_nn_f32(c->y2);
    for (uint64_t i = 0; i < g->n_dst; i++) {
        const float *d = dy + i * n;
        for (uint64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
            float a = alpha[e];
            float *hs = dh + (uint64_t)g->src[e] * n, *rs = dr + (uint64_t)g->rel[e] * n;
            for (uint64_t k = c0; k < c1; k++) {
                hs[k] += a * d[k];
                rs[k] += a * d[k];
            }
        }
    }
    return OC_OK;
}

int oc_nn_cpu_edge_msg_bwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                           const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                           const struct oc_nn_tensor *alpha, const struct oc_nn_tensor *dy,
                           struct oc_nn_tensor *dh, struct oc_nn_tensor *dr,
                           struct oc_nn_tensor *dalpha, struct oc_err *err)
{
    (void)err;
    struct kg_ctx c = {
        .g = g, .a = h, .b = r, .c = alpha, .d = dy, .y = dh, .y2 = dr, .y3 = dalpha};
    int rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(g->n_dst, OC_NN_CPU_ROWS), g->n_edges * dy->n_cols,
                           msg_dalpha_task, &c);
    if (rc)
        return rc;
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(dy->n_cols, KG_SCATTER_COLS), g->n_edges * dy->n_cols,
                         msg_scatter_task, &c);
}

/* ---- loss over all candidate entities ----------------------------------- */

struct xent_ctx {
    const float *s;
    float *ds;
    const uint64_t *qptr;
    const int64_t *pos;
    uint64_t n_entities;
    double *q_loss;
    double *ex; /* per score: exp(s - the query's max), taken once for the sum and the gradient */
};

static int xent_task(void *cp, uint64_t q, unsigned worker)
{
    (void)worker;
    const struct xent_ctx *c = cp;
    uint64_t a = c->qptr[q], b = c->qptr[q + 1];
    uint64_t n_out = c->n_entities - (b - a); /* unreached entities, score 0 */
    float mx = n_out ? 0.0f : -INFINITY;
    for (uint64_t i = a; i < b; i++)
        mx = c->s[i] > mx ? c->s[i] : mx;
    double z = (double)n_out * exp(-(double)mx);
    for (uint64_t i = a; i < b; i++) {
        c->ex[i] = exp((double)(c->s[i] - mx));
        z += c->ex[i];
    }
    double s_pos = c->pos[q] >= 0 ? (double)c->s[c->pos[q]] : 0.0;
    c->q_loss[q] = (double)mx + log(z) - s_pos;
    for (uint64_t i = a; i < b; i++)
        c->ds[i] = (float)(c->ex[i] / z) - ((int64_t)i == c->pos[q] ? 1.0f : 0.0f);
    return OC_OK;
}

int oc_nn_cpu_kg_xent(struct oc_nn_backend *be, const struct oc_nn_tensor *scores,
                      const uint64_t *qptr, const int64_t *pos, uint64_t n_query,
                      uint64_t n_entities, struct oc_nn_tensor *dscores, double *loss,
                      struct oc_err *err)
{
    uint64_t n_scores = qptr[n_query];
    double *q_loss = oc_nn_cpu_scratch(be, (size_t)(n_query + 1 + n_scores) * sizeof(double), err);
    if (!q_loss)
        return err->status;
    struct xent_ctx c = {oc_nn_f32(scores),   oc_nn_f32(dscores), qptr, pos, n_entities, q_loss,
                         q_loss + n_query + 1};
    int rc = oc_nn_cpu_run(be, n_query, n_query * n_entities, xent_task, &c);
    double sum = 0.0;
    for (uint64_t q = 0; q < n_query; q++)
        sum += q_loss[q];
    *loss = sum;
    return rc;
}
