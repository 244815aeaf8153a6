/*
 * cpu_elem.c — CPU kernels that work row by row or element by element: bias
 * add and its column-sum gradient, ReLU/ELU and their gradients, dropout
 * with counter-RNG masks, and the GAT output head mean.
 *
 * Place in the data flow: nn CPU backend; the layers' pointwise steps.
 * Thread-safety: see cpu_int.h. Column sums reduce fixed row chunks into
 * partials and add them in chunk order; dropout draws each element's
 * decision from its coordinates (below), so masks do not depend on the
 * partition.
 * Ownership: partials live in the backend scratch.
 */
#include <math.h>
#include <string.h>

#include "cpu_int.h"

struct elem_ctx {
    const struct oc_nn_tensor *x, *y2;
    struct oc_nn_tensor *y, *mask;
    const struct oc_nn_drop_key *key;
    enum oc_nn_act act;
    float p, scale;
    uint32_t thr;
    uint32_t heads;
    float *part;
    uint64_t n_chunks;
};

OC_NN_SIMD static int bias_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, n = c->y->n_cols;
    oc_nn_cpu_range(task, c->y->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    const float *b = oc_nn_f32(c->x);
    for (uint64_t r = r0; r < r1; r++)
        oc_nn_vadd(oc_nn_f32(c->y) + r * n, b, n);
    return OC_OK;
}

int oc_nn_cpu_bias_add(struct oc_nn_backend *be, struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *bias, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = bias, .y = y};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(y),
                         bias_task, &c);
}

/* x = input, x2 = bias, y = output: act(x + b) element by element, as act_fwd after bias_add */
OC_NN_SIMD static int bias_act_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, n = c->y->n_cols;
    oc_nn_cpu_range(task, c->y->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    const float *b = oc_nn_f32(c->y2);
    for (uint64_t r = r0; r < r1; r++) {
        const float *x = oc_nn_f32(c->x) + r * n;
        float *y = oc_nn_f32(c->y) + r * n;
        if (c->act == OC_NN_ACT_RELU) {
            for (uint64_t j = 0; j < n; j++) {
                float v = x[j] + b[j];
                y[j] = v > 0.0f ? v : 0.0f;
            }
        } else { /* the sum, then the activation in place: the same bits as act_fwd's */
            for (uint64_t j = 0; j < n; j++)
                y[j] = x[j] + b[j];
            if (c->act == OC_NN_ACT_ELU)
                oc_nn_velu(y, y, n);
            else
                oc_nn_vtanh(y, y, n);
        }
    }
    return OC_OK;
}

int oc_nn_cpu_bias_act(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                       const struct oc_nn_tensor *bias, struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = x, .y2 = bias, .y = y, .act = act};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(y),
                         bias_act_task, &c);
}

OC_NN_SIMD static int colsum_part(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, n = c->x->n_cols;
    oc_nn_cpu_range(task, c->x->n_rows, OC_NN_CPU_REDUCE_ROWS, &r0, &r1);
    float *p = c->part + task * n;
    oc_nn_vzero(p, n);
    for (uint64_t r = r0; r < r1; r++)
        oc_nn_vadd(p, oc_nn_f32(c->x) + r * n, n);
    return OC_OK;
}

OC_NN_SIMD static int colsum_reduce(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t j0, j1, n = c->x->n_cols;
    oc_nn_cpu_range(task, n, OC_NN_CPU_ELEMS, &j0, &j1);
    float *out = oc_nn_f32(c->y);
    for (uint64_t j = j0; j < j1; j++) {
        float s = 0.0f;
        for (uint64_t k = 0; k < c->n_chunks; k++)
            s += c->part[k * n + j];
        out[j] = s;
    }
    return OC_OK;
}

int oc_nn_cpu_colsum(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                     struct oc_nn_tensor *out, struct oc_err *err)
{
    struct elem_ctx c = {.x = x, .y = out};
    c.n_chunks = oc_nn_cpu_div_up(x->n_rows, OC_NN_CPU_REDUCE_ROWS);
    c.part = oc_nn_cpu_scratch(be, (size_t)(c.n_chunks * x->n_cols + 1) * sizeof(float), err);
    if (!c.part)
        return err->status;
    int rc = oc_nn_cpu_run(be, c.n_chunks, oc_nn_cpu_size(x), colsum_part, &c);
    if (rc == OC_OK)
        rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(x->n_cols, OC_NN_CPU_ELEMS), c.n_chunks * x->n_cols,
                           colsum_reduce, &c);
    return rc;
}

OC_NN_SIMD static int act_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t i0, i1, n = c->x->n_rows * c->x->n_cols;
    oc_nn_cpu_range(task, n, OC_NN_CPU_ELEMS, &i0, &i1);
    const float *x = oc_nn_f32(c->x);
    float *y = oc_nn_f32(c->y);
    if (c->act == OC_NN_ACT_RELU) {
        for (uint64_t i = i0; i < i1; i++) {
            float v = x[i];
            y[i] = v > 0.0f ? v : 0.0f;
        }
    } else if (c->act == OC_NN_ACT_TANH) {
        oc_nn_vtanh(y + i0, x + i0, i1 - i0);
    } else {
        oc_nn_velu(y + i0, x + i0, i1 - i0);
    }
    return OC_OK;
}

int oc_nn_cpu_act_fwd(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                      struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = x, .y = y, .act = act};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(x->n_rows * x->n_cols, OC_NN_CPU_ELEMS),
                         oc_nn_cpu_size(x), act_fwd_task, &c);
}

/* x = forward output y, y2 = dy, y = dx */
OC_NN_SIMD static int act_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t i0, i1, n = c->x->n_rows * c->x->n_cols;
    oc_nn_cpu_range(task, n, OC_NN_CPU_ELEMS, &i0, &i1);
    const float *out = oc_nn_f32(c->x), *dy = oc_nn_f32(c->y2);
    float *dx = oc_nn_f32(c->y);
    /* dy is loaded whatever the branch so the select compiles without a jump (ReLU's is a coin toss) */
    if (c->act == OC_NN_ACT_RELU) {
        for (uint64_t i = i0; i < i1; i++) {
            float g = dy[i];
            dx[i] = out[i] > 0.0f ? g : 0.0f;
        }
    } else if (c->act == OC_NN_ACT_TANH) {
        for (uint64_t i = i0; i < i1; i++) {
            float o = out[i];
            dx[i] = dy[i] * (1.0f - o * o);
        }
    } else { /* ELU: by 8 with a mask select, so -O2 vectorizes it */
        uint64_t i = i0;
        for (; i + 8 <= i1; i += 8)
            for (unsigned k = 0; k < 8; k++) {
                float g = dy[i + k], o = out[i + k];
                dx[i + k] = oc_nn_fsel(o > 0.0f, g, g * (o + 1.0f));
            }
        for (; i < i1; i++) {
            float g = dy[i], o = out[i];
            dx[i] = oc_nn_fsel(o > 0.0f, g, g * (o + 1.0f));
        }
    }
    return OC_OK;
}

int oc_nn_cpu_act_bwd(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *y,
                      const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = y, .y2 = dy, .y = dx, .act = act};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_rows * y->n_cols, OC_NN_CPU_ELEMS),
                         oc_nn_cpu_size(y), act_bwd_task, &c);
}

/*
 * Element (r, c) keeps iff lane c % 8 of Philox(seed, (hash(layer, site, r), c / 8)),
 * read as 16-bit uniforms, is >= thr: a pure function of its coordinates, so
 * the partition and the grouping below do not change a bit. Blocks are drawn
 * eight at a time (64 elements); without a mask, a run of 64 all-zero inputs
 * (sparse bag-of-words features) writes zeros without drawing, as the
 * element-wise rule would. Kept values are x * scale, dropped ones +0: the
 * select is a bit mask (-keep), with no branch on a coin toss.
 */
static inline uint32_t f32_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

OC_NN_SIMD static int dropout_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, n = c->x->n_cols;
    oc_nn_cpu_range(task, c->x->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    uint64_t site = oc_rng_mix64(oc_rng_mix64(c->key->seed, c->key->layer), c->key->site);
    uint32_t bits[8][4], thr = c->thr;
    uint16_t u16[64];
    float scale = c->scale;
    for (uint64_t r = r0; r < r1; r++) {
        uint64_t stream = oc_rng_mix64(site, r);
        const float *x = oc_nn_f32(c->x) + r * n;
        float *y = oc_nn_f32(c->y) + r * n;
        uint8_t *mask = c->mask ? (uint8_t *)c->mask->data + r * n : NULL;
        for (uint64_t j0 = 0; j0 < n; j0 += 64) {
            uint64_t m = n - j0 < 64 ? n - j0 : 64;
            if (!mask) {
                uint32_t any = 0;
                for (uint64_t j = 0; j < m; j++)
                    any |= f32_bits(x[j0 + j]) << 1; /* -0 counts as zero too */
                if (!any) {
                    oc_nn_vzero(y + j0, m);
                    continue;
                }
            }
            unsigned nb = (unsigned)((m + 7) / 8); /* blocks this group reads */
            if (nb > 4) /* eight blocks at once; a short row (GAT's heads, a KG's small hidden
                           width) draws only the blocks it reads */
                oc_nn_philox_x8(c->key->seed, stream, j0 / 8, bits);
            else
                for (unsigned l = 0; l < nb; l++) /* oc_nn_philox_x8's lanes, one by one */
                    oc_rng_block(c->key->seed, stream, j0 / 8 + l, bits[l]);
            for (unsigned l = 0; l < nb; l++)
                for (unsigned k = 0; k < 8; k++)
                    u16[l * 8 + k] = (uint16_t)(bits[l][k / 2] >> (16 * (k % 2)));
            for (uint64_t j = 0; j < m; j++) {
                uint32_t keep = u16[j] >= thr;
                if (mask)
                    mask[j0 + j] = (uint8_t)keep;
                y[j0 + j] = bits_f32(f32_bits(x[j0 + j] * scale) & (0u - keep));
            }
            if (!mask) /* the rule skips groups of 8 zeros (+0 out even for a kept -0) */
                for (uint64_t g = 0; g < m; g += 8) {
                    uint64_t ge = g + 8 < m ? g + 8 : m;
                    uint32_t nz = 0;
                    for (uint64_t j = g; j < ge; j++)
                        nz |= f32_bits(x[j0 + j]) << 1;
                    if (!nz)
                        oc_nn_vzero(y + j0 + g, ge - g);
                }
        }
    }
    return OC_OK;
}

int oc_nn_cpu_dropout_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *x, float p,
                          const struct oc_nn_drop_key *key, struct oc_nn_tensor *y,
                          struct oc_nn_tensor *mask, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = x, .y = y, .mask = mask, .key = key, .p = p};
    c.scale = 1.0f / (1.0f - p);
    c.thr = oc_nn_dropout_threshold(p);
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(x->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(x),
                         dropout_fwd_task, &c);
}

OC_NN_SIMD static int dropout_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t i0, i1, n = c->x->n_rows * c->x->n_cols;
    oc_nn_cpu_range(task, n, OC_NN_CPU_ELEMS, &i0, &i1);
    const float *dy = oc_nn_f32(c->x);
    const uint8_t *mask = c->mask->data;
    float *dx = oc_nn_f32(c->y);
    float scale = c->scale;
    for (uint64_t i = i0; i < i1; i++)
        dx[i] = bits_f32(f32_bits(dy[i] * scale) & (0u - (uint32_t)mask[i]));
    return OC_OK;
}

int oc_nn_cpu_dropout_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *dy,
                          const struct oc_nn_tensor *mask, float p, struct oc_nn_tensor *dx,
                          struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = dy, .mask = (struct oc_nn_tensor *)mask, .y = dx};
    c.scale = 1.0f / (1.0f - p);
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(dy->n_rows * dy->n_cols, OC_NN_CPU_ELEMS),
                         oc_nn_cpu_size(dy), dropout_bwd_task, &c);
}

OC_NN_SIMD static int head_mean_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, f_dim = c->y->n_cols, in = c->x->n_cols;
    oc_nn_cpu_range(task, c->y->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    for (uint64_t r = r0; r < r1; r++) {
        const float *x = oc_nn_f32(c->x) + r * in;
        float *y = oc_nn_f32(c->y) + r * f_dim;
        for (uint64_t f = 0; f < f_dim; f++) {
            float s = 0.0f;
            for (uint32_t h = 0; h < c->heads; h++)
                s += x[h * f_dim + f];
            y[f] = s / (float)c->heads;
        }
    }
    return OC_OK;
}

int oc_nn_cpu_head_mean_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *x, uint32_t heads,
                            struct oc_nn_tensor *y, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = x, .y = y, .heads = heads};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(y->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(x),
                         head_mean_fwd_task, &c);
}

OC_NN_SIMD static int head_mean_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct elem_ctx *c = cp;
    uint64_t r0, r1, f_dim = c->x->n_cols, out = c->y->n_cols;
    oc_nn_cpu_range(task, c->x->n_rows, OC_NN_CPU_ROWS, &r0, &r1);
    for (uint64_t r = r0; r < r1; r++) {
        const float *dy = oc_nn_f32(c->x) + r * f_dim;
        float *dx = oc_nn_f32(c->y) + r * out;
        for (uint32_t h = 0; h < c->heads; h++)
            for (uint64_t f = 0; f < f_dim; f++)
                dx[h * f_dim + f] = dy[f] / (float)c->heads;
    }
    return OC_OK;
}

int oc_nn_cpu_head_mean_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *dy, uint32_t heads,
                            struct oc_nn_tensor *dx, struct oc_err *err)
{
    (void)err;
    struct elem_ctx c = {.x = dy, .y = dx, .heads = heads};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(dy->n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(dx),
                         head_mean_bwd_task, &c);
}
