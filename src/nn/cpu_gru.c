/*
 * cpu_gru.c — one step of torch.nn.GRU on the CPU, element-wise given the
 * two projections (gates r|z|n, as torch lays out W_ih and W_hh):
 *
 *   r = sig(gi_r + gh_r)   z = sig(gi_z + gh_z)   n = tanh(gi_n + r * gh_n)
 *   hn = (1 - z) * n + z * h
 *
 * backward (dhn given):  dn = dhn (1 - z)     dz = dhn (h - n)     dh = dhn z
 *   dgi_n = dn (1 - n^2)       dgh_n = dgi_n r      dr = dgi_n gh_n
 *   dgi_r = dgh_r = dr r (1 - r)                    dgi_z = dgh_z = dz z (1 - z)
 *
 * Place in the data flow: nn CPU backend; RED-GNN's gate after each layer.
 * Thread-safety: see cpu_int.h (fixed row ranges). Ownership: none kept.
 */
#include <string.h>

#include "cpu_int.h"

struct gru_ctx {
    const struct oc_nn_tensor *gi, *gh, *h, *gates, *dhn;
    struct oc_nn_tensor *hn, *g_out, *dgi, *dgh, *dh;
};

/*
 * Forward in blocks of 8 elements, whatever the width, so -O2 vectorizes the
 * inlined exp (it works on locals: no aliasing): at width 4 (RED-GNN's hidden
 * 4) rows in pairs; otherwise a row's columns by 8 as they lie, the columns
 * left past them (all of a row narrower than 8) gathered, across rows, into
 * blocks of 8 and scattered back, the last one short (its lanes padded with
 * zeros, not written). Every block goes through gru_lanes, so an element's
 * bits do not depend on which block it falls in.
 */
#define GRU_BLOCK 8u

struct gru_block {
    uint64_t base[GRU_BLOCK], col[GRU_BLOCK]; /* per element: its row times hd, its column */
};

/*
 * The one form of the step, for the 8 lanes of any block: from r's and z's
 * summed inputs (gi + gh), n's two parts and the state, the gates and the
 * new state.
 */
__attribute__((always_inline)) static inline void gru_lanes(const float *ri, const float *zi,
                                                            const float *ni, const float *nh,
                                                            const float *hv, float *r, float *z,
                                                            float *nv, float *o)
{
    for (unsigned l = 0; l < GRU_BLOCK; l++) {
        r[l] = oc_nn_sigmoidf_v(ri[l]);
        z[l] = oc_nn_sigmoidf_v(zi[l]);
        nv[l] = oc_nn_tanhf_v(ni[l] + r[l] * nh[l]);
        o[l] = (1.0f - z[l]) * nv[l] + z[l] * hv[l];
    }
}

/* The gates and new state of elements [0, n) of a block, n <= GRU_BLOCK. */
__attribute__((always_inline)) static inline void
gru_elems(const struct gru_ctx *c, const struct gru_block *b, unsigned n, uint64_t hd)
{
    const float *gi = oc_nn_f32(c->gi), *gh = oc_nn_f32(c->gh), *h = oc_nn_f32(c->h);
    float *g = oc_nn_f32(c->g_out), *hn = oc_nn_f32(c->hn);
    float ri[GRU_BLOCK] = {0}, zi[GRU_BLOCK] = {0}, ni[GRU_BLOCK] = {0}, nh[GRU_BLOCK] = {0};
    float hv[GRU_BLOCK] = {0}, r[GRU_BLOCK], z[GRU_BLOCK], nv[GRU_BLOCK], o[GRU_BLOCK];
    for (unsigned l = 0; l < n; l++) {
        uint64_t at = 3 * b->base[l] + b->col[l];
        ri[l] = gi[at] + gh[at];
        zi[l] = gi[hd + at] + gh[hd + at];
        ni[l] = gi[2 * hd + at];
        nh[l] = gh[2 * hd + at];
        hv[l] = h[b->base[l] + b->col[l]];
    }
    gru_lanes(ri, zi, ni, nh, hv, r, z, nv, o);
    for (unsigned l = 0; l < n; l++) {
        uint64_t at = 3 * b->base[l] + b->col[l];
        g[at] = r[l];
        g[hd + at] = z[l];
        g[2 * hd + at] = nv[l];
        hn[b->base[l] + b->col[l]] = o[l];
    }
}

/*
 * Width 4 (RED-GNN's hidden 4): two rows make a block of 8, each input read
 * as one vector of the two rows' 4 floats, so no lane goes through the stack
 * as a single float (a block loaded from 8 single-float stores waits for
 * them). Same forms as every other block.
 */
typedef float gru_v4 __attribute__((vector_size(16)));
typedef float gru_v8 __attribute__((vector_size(32)));

/* Lanes from rows a and b of x, plus (when y) those of y, lane by lane. */
__attribute__((always_inline)) static inline void
gru_pair_in(float *lanes, const float *xa, const float *xb, const float *ya, const float *yb)
{
    gru_v4 lo, hi;
    memcpy(&lo, xa, sizeof(lo));
    memcpy(&hi, xb, sizeof(hi));
    gru_v8 v = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    if (ya) {
        memcpy(&lo, ya, sizeof(lo));
        memcpy(&hi, yb, sizeof(hi));
        v += __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    }
    memcpy(lanes, &v, sizeof(v));
}

/* Rows i and i + 1 of width 4. */
__attribute__((always_inline)) static inline void gru_pair(const struct gru_ctx *c, uint64_t i)
{
    const float *gi = oc_nn_f32(c->gi) + i * 12, *gh = oc_nn_f32(c->gh) + i * 12;
    float *g = oc_nn_f32(c->g_out) + i * 12;
    float ri[GRU_BLOCK], zi[GRU_BLOCK], ni[GRU_BLOCK], nh[GRU_BLOCK], hv[GRU_BLOCK];
    float r[GRU_BLOCK], z[GRU_BLOCK], nv[GRU_BLOCK], o[GRU_BLOCK];
    gru_pair_in(ri, gi, gi + 12, gh, gh + 12);
    gru_pair_in(zi, gi + 4, gi + 16, gh + 4, gh + 16);
    gru_pair_in(ni, gi + 8, gi + 20, NULL, NULL);
    gru_pair_in(nh, gh + 8, gh + 20, NULL, NULL);
    memcpy(hv, oc_nn_f32(c->h) + i * 4, sizeof(hv)); /* the two rows lie together */
    gru_lanes(ri, zi, ni, nh, hv, r, z, nv, o);
    for (unsigned q = 0; q < 2; q++) {
        memcpy(g + 12 * q, r + 4 * q, 16);
        memcpy(g + 12 * q + 4, z + 4 * q, 16);
        memcpy(g + 12 * q + 8, nv + 4 * q, 16);
    }
    memcpy(oc_nn_f32(c->hn) + i * 4, o, sizeof(o));
}

OC_NN_SIMD static int gru_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gru_ctx *c = cp;
    uint64_t i0, i1, hd = c->h->n_cols;
    oc_nn_cpu_range(task, c->h->n_rows, OC_NN_CPU_ROWS, &i0, &i1);
    struct gru_block b;
    unsigned n = 0;
    if (hd == 4)
        for (; i0 + 2 <= i1; i0 += 2)
            gru_pair(c, i0);
    for (uint64_t i = i0; i < i1; i++) {
        const float *gi = oc_nn_f32(c->gi) + i * 3 * hd, *gh = oc_nn_f32(c->gh) + i * 3 * hd;
        const float *h = oc_nn_f32(c->h) + i * hd;
        float *hn = oc_nn_f32(c->hn) + i * hd, *g = oc_nn_f32(c->g_out) + i * 3 * hd;
        uint64_t k = 0;
        for (; k + GRU_BLOCK <= hd; k += GRU_BLOCK) {
            float ri[GRU_BLOCK], zi[GRU_BLOCK], r[GRU_BLOCK], z[GRU_BLOCK], nv[GRU_BLOCK];
            float o[GRU_BLOCK];
            for (unsigned l = 0; l < GRU_BLOCK; l++) {
                ri[l] = gi[k + l] + gh[k + l];
                zi[l] = gi[hd + k + l] + gh[hd + k + l];
            }
            gru_lanes(ri, zi, gi + 2 * hd + k, gh + 2 * hd + k, h + k, r, z, nv, o);
            for (unsigned l = 0; l < GRU_BLOCK; l++) {
                g[k + l] = r[l];
                g[hd + k + l] = z[l];
                g[2 * hd + k + l] = nv[l];
                hn[k + l] = o[l];
            }
        }
        for (; k < hd; k++) { /* the row's last columns: to the gathered block */
            b.base[n] = i * hd;
            b.col[n] = k;
            if (++n == GRU_BLOCK) {
                gru_elems(c, &b, n, hd);
                n = 0;
            }
        }
    }
    if (n)
        gru_elems(c, &b, n, hd);
    return OC_OK;
}

int oc_nn_cpu_gru_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *gi,
                      const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                      struct oc_nn_tensor *hn, struct oc_nn_tensor *gates, struct oc_err *err)
{
    (void)err;
    struct gru_ctx c = {.gi = gi, .gh = gh, .h = h, .hn = hn, .g_out = gates};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(h->n_rows, OC_NN_CPU_ROWS), 3 * oc_nn_cpu_size(h),
                         gru_fwd_task, &c);
}

static int gru_bwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gru_ctx *c = cp;
    uint64_t i0, i1, hd = c->h->n_cols;
    oc_nn_cpu_range(task, c->h->n_rows, OC_NN_CPU_ROWS, &i0, &i1);
    for (uint64_t i = i0; i < i1; i++) {
        const float *g = oc_nn_f32(c->gates) + i * 3 * hd, *gh = oc_nn_f32(c->gh) + i * 3 * hd;
        const float *h = oc_nn_f32(c->h) + i * hd, *dhn = oc_nn_f32(c->dhn) + i * hd;
        float *dgi = oc_nn_f32(c->dgi) + i * 3 * hd, *dgh = oc_nn_f32(c->dgh) + i * 3 * hd;
        float *dh = oc_nn_f32(c->dh) + i * hd;
        for (uint64_t k = 0; k < hd; k++) {
            float r = g[k], z = g[hd + k], n = g[2 * hd + k], d = dhn[k];
            float dn = d * (1.0f - z), dz = d * (h[k] - n);
            dh[k] = d * z;
            float dnp = dn * (1.0f - n * n);
            dgi[2 * hd + k] = dnp;
            dgh[2 * hd + k] = dnp * r;
            float drp = dnp * gh[2 * hd + k] * r * (1.0f - r);
            float dzp = dz * z * (1.0f - z);
            dgi[k] = dgh[k] = drp;
            dgi[hd + k] = dgh[hd + k] = dzp;
        }
    }
    return OC_OK;
}

int oc_nn_cpu_gru_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *gates,
                      const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                      const struct oc_nn_tensor *dhn, struct oc_nn_tensor *dgi,
                      struct oc_nn_tensor *dgh, struct oc_nn_tensor *dh, struct oc_err *err)
{
    (void)err;
    struct gru_ctx c = {
        .gates = gates, .gh = gh, .h = h, .dhn = dhn, .dgi = dgi, .dgh = dgh, .dh = dh};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(h->n_rows, OC_NN_CPU_ROWS), 3 * oc_nn_cpu_size(h),
                         gru_bwd_task, &c);
}
