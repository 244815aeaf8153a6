/*
 * layer_gcn.c — GCN layer with DGL GraphConv(norm='both') semantics:
 *
 *   y = D_dst^-1/2 A D_src^-1/2 h W + bias
 *
 * with degrees counted on the block as nn.h describes (self-loops added when
 * configured, clamped to >= 1). As in DGL, W is applied before aggregating
 * when in_dim > out_dim, after otherwise. Hidden layers apply ReLU; the input
 * goes through dropout first.
 *
 * Place in the data flow: nn; model.c calls it per layer.
 * Thread-safety: a layer is used by one thread at a time.
 * Ownership: parameters and workspace belong to the model.
 */
#include "nn_int.h"

int oc_nn_gcn_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                      const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      const struct oc_nn_fwd *fwd, struct oc_err *err)
{
    OC_NN_TRY(oc_nn_layer_drop_input(l, x, fwd, err));
    const struct oc_nn_tensor *xd = l->xd, *w = &l->p[OC_NN_LP_W]->value;
    struct oc_nn_tensor *target = y;
    if (!l->last) {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_PRE, g->n_dst, l->out_dim, err));
        target = &l->ws[OC_NN_LWS_PRE];
    }
    if (l->in_dim > l->out_dim) {
        struct oc_nn_tensor *z = &l->ws[OC_NN_LWS_Z];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_Z, g->n_src, l->out_dim, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, xd, w, 0.0f, z, err));
        OC_NN_TRY(oc_nn_agg_fwd(g, OC_NN_AGG_GCN, z, target, err));
    } else {
        struct oc_nn_tensor *n = &l->ws[OC_NN_LWS_N];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_N, g->n_dst, l->in_dim, err));
        OC_NN_TRY(oc_nn_agg_fwd(g, OC_NN_AGG_GCN, xd, n, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, n, w, 0.0f, target, err));
    }
    OC_NN_TRY(oc_nn_bias_add(target, &l->p[OC_NN_LP_BIAS]->value, err));
    return oc_nn_layer_finish(l, target, y, err);
}

int oc_nn_gcn_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err)
{
    const struct oc_nn_tensor *dpre;
    struct oc_nn_param *pw = l->p[OC_NN_LP_W];
    struct oc_nn_tensor *dx = &l->ws[OC_NN_LWS_DX];
    OC_NN_TRY(oc_nn_layer_finish_bwd(l, y, dy, &dpre, err));
    OC_NN_TRY(oc_nn_colsum(dpre, &l->p[OC_NN_LP_BIAS]->grad, err));
    if (want_dx)
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DX, g->n_src, l->in_dim, err));
    if (l->in_dim > l->out_dim) {
        struct oc_nn_tensor *dz = &l->ws[OC_NN_LWS_DZ];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DZ, g->n_src, l->out_dim, err));
        OC_NN_TRY(oc_nn_agg_bwd(g, OC_NN_AGG_GCN, dpre, dz, err));
        OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, l->xd, dz, 0.0f, &pw->grad, err));
        if (want_dx)
            OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dz, &pw->value, 0.0f, dx, err));
    } else {
        OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &l->ws[OC_NN_LWS_N], dpre, 0.0f, &pw->grad, err));
        if (want_dx) {
            struct oc_nn_tensor *dn = &l->ws[OC_NN_LWS_DN];
            OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DN, g->n_dst, l->in_dim, err));
            OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dpre, &pw->value, 0.0f, dn, err));
            OC_NN_TRY(oc_nn_agg_bwd(g, OC_NN_AGG_GCN, dn, dx, err));
        }
    }
    return want_dx ? oc_nn_layer_input_grad(l, err) : OC_OK;
}
