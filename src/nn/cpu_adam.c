/*
 * cpu_adam.c — one torch.optim.Adam step (L2 weight decay added to the
 * gradient, as DGL's examples use it) for one parameter on the CPU:
 *
 *   g = grad + wd p;  m = b1 m + (1 - b1) g (as a lerp);  v = b2 v + (1 - b2) g^2
 *   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *
 * (PyTorch's own evaluation order.) Element-wise, so any partition gives the
 * same bits.
 *
 * Place in the data flow: nn CPU backend; the model's optimizer step.
 * Thread-safety: see cpu_int.h.
 * Ownership: none.
 */
#include <math.h>

#include "cpu_int.h"

struct adam_ctx {
    float *p, *m, *v;
    const float *g;
    uint64_t n;
    float b1, b2, eps, wd, step_size, bc2_sqrt;
};

OC_NN_SIMD static int adam_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct adam_ctx *c = cp;
    uint64_t i0 = task * OC_NN_CPU_ELEMS;
    uint64_t i1 = i0 + OC_NN_CPU_ELEMS < c->n ? i0 + OC_NN_CPU_ELEMS : c->n;
    for (uint64_t i = i0; i < i1; i++) {
        float g = c->g[i];
        if (c->wd != 0.0f)
            g += c->wd * c->p[i];
        c->m[i] += (1.0f - c->b1) * (g - c->m[i]); /* torch: exp_avg.lerp_(g, 1 - b1) */
        c->v[i] = c->b2 * c->v[i] + (1.0f - c->b2) * g * g;
        float denom = sqrtf(c->v[i]) / c->bc2_sqrt + c->eps;
        c->p[i] -= c->step_size * (c->m[i] / denom);
    }
    return OC_OK;
}

int oc_nn_cpu_adam(struct oc_nn_backend *be, struct oc_nn_tensor *p, const struct oc_nn_tensor *g,
                   struct oc_nn_tensor *m, struct oc_nn_tensor *v, const struct oc_nn_adam *opt,
                   uint64_t t, struct oc_err *err)
{
    (void)err;
    double bc1 = 1.0 - pow((double)opt->beta1, (double)t);
    double bc2 = 1.0 - pow((double)opt->beta2, (double)t);
    struct adam_ctx c = {.p = oc_nn_f32(p),
                         .m = oc_nn_f32(m),
                         .v = oc_nn_f32(v),
                         .g = oc_nn_f32(g),
                         .n = p->n_rows * p->n_cols,
                         .b1 = opt->beta1,
                         .b2 = opt->beta2,
                         .eps = opt->eps,
                         .wd = opt->weight_decay,
                         .step_size = (float)((double)opt->lr / bc1),
                         .bc2_sqrt = (float)sqrt(bc2)};
    return oc_nn_cpu_run(be, oc_nn_cpu_div_up(c.n, OC_NN_CPU_ELEMS), 4 * c.n, adam_task, &c);
}
