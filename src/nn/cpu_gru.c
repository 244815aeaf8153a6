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
#include <math.h>

#include "cpu_int.h"

struct gru_ctx {
    const struct oc_nn_tensor *gi, *gh, *h, *gates, *dhn;
    struct oc_nn_tensor *hn, *g_out, *dgi, *dgh, *dh;
};

/* Column k of one row: the gates r, z, n into g, the new state into hn. */
static inline void gru_one(const float *gi, const float *gh, const float *h, float *g, float *hn,
                           uint64_t hd, uint64_t k)
{
    float r = oc_nn_sigmoidf(gi[k] + gh[k]);
    float z = oc_nn_sigmoidf(gi[hd + k] + gh[hd + k]);
    float n = oc_nn_tanhf(gi[2 * hd + k] + r * gh[2 * hd + k]);
    g[k] = r;
    g[hd + k] = z;
    g[2 * hd + k] = n;
    hn[k] = (1.0f - z) * n + z * h[k];
}

OC_NN_SIMD static int gru_fwd_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gru_ctx *c = cp;
    uint64_t i0, i1, hd = c->h->n_cols;
    oc_nn_cpu_range(task, c->h->n_rows, OC_NN_CPU_ROWS, &i0, &i1);
    for (uint64_t i = i0; i < i1; i++) {
        const float *gi = oc_nn_f32(c->gi) + i * 3 * hd, *gh = oc_nn_f32(c->gh) + i * 3 * hd;
        const float *h = oc_nn_f32(c->h) + i * hd;
        float *hn = oc_nn_f32(c->hn) + i * hd, *g = oc_nn_f32(c->g_out) + i * 3 * hd;
        uint64_t k = 0;
        for (; k + 8 <= hd; k += 8) { /* by 8 through locals (no aliasing), so -O2 vectorizes it */
            float r[8], z[8], n[8], o[8];
            for (unsigned l = 0; l < 8; l++) {
                r[l] = oc_nn_sigmoidf_v(gi[k + l] + gh[k + l]);
                z[l] = oc_nn_sigmoidf_v(gi[hd + k + l] + gh[hd + k + l]);
                n[l] = oc_nn_tanhf_v(gi[2 * hd + k + l] + r[l] * gh[2 * hd + k + l]);
                o[l] = (1.0f - z[l]) * n[l] + z[l] * h[k + l];
            }
            for (unsigned l = 0; l < 8; l++) {
                g[k + l] = r[l];
                g[hd + k + l] = z[l];
                g[2 * hd + k + l] = n[l];
                hn[k + l] = o[l];
            }
        }
        for (; k < hd; k++)
            gru_one(gi, gh, h, g, hn, hd, k);
    }
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
