/*
 * layer_sage.c — GraphSAGE layer with DGL SAGEConv('mean') semantics:
 *
 *   h_neigh = mean_{j in N(i)} h_j          (0 when i has no in-edge)
 *   y_i     = fc_self(h_i) + fc_neigh(h_neigh) + bias      (fc_* without bias)
 *
 * As in DGL, fc_neigh is applied before aggregating when in_dim > out_dim
 * (mean(h) W = mean(h W), cheaper on the narrow side), after otherwise.
 * Hidden layers apply ReLU (layer.c); the input goes through dropout first.
 *
 *   forward (in > out):  xd ─► Z = xd Wn ─► mean ─► + xd[:n_dst] Ws ─► + b ─► act
 *   forward (else):      xd ─► N = mean(xd) ─► N Wn ─► + xd[:n_dst] Ws ─► + b ─► act
 *
 * Place in the data flow: nn; model.c calls it per layer.
 * Thread-safety: a layer is used by one thread at a time.
 * Ownership: parameters and workspace belong to the model.
 */
#include "nn_int.h"

int oc_nn_sage_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                       const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                       const struct oc_nn_fwd *fwd, struct oc_err *err)
{
    OC_NN_TRY(oc_nn_layer_drop_input(l, x, fwd, err));
    const struct oc_nn_tensor *xd = l->xd;
    const struct oc_nn_tensor *ws_ = &l->p[OC_NN_LP_W_SELF]->value;
    const struct oc_nn_tensor *wn = &l->p[OC_NN_LP_W_NEIGH]->value;
    struct oc_nn_tensor xself, *target = y;
    OC_NN_TRY(oc_nn_tensor_view_rows(xd, 0, g->n_dst, &xself, err));
    if (!l->last) {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_PRE, g->n_dst, l->out_dim, err));
        target = &l->ws[OC_NN_LWS_PRE];
    }
    OC_NN_TRY(oc_nn_layer_agg_linear(l, g, OC_NN_AGG_MEAN, wn, target, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &xself, ws_, 1.0f, target, err));
    OC_NN_TRY(oc_nn_bias_add(target, &l->p[OC_NN_LP_BIAS]->value, err));
    return oc_nn_layer_finish(l, target, y, err);
}

int oc_nn_sage_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                        const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err)
{
    const struct oc_nn_tensor *dpre, *xd = l->xd;
    struct oc_nn_param *ps = l->p[OC_NN_LP_W_SELF], *pn = l->p[OC_NN_LP_W_NEIGH];
    struct oc_nn_tensor *dx = &l->ws[OC_NN_LWS_DX];
    struct oc_nn_tensor xself, dxself;
    OC_NN_TRY(oc_nn_layer_finish_bwd(l, y, dy, &dpre, err));
    OC_NN_TRY(oc_nn_colsum(dpre, &l->p[OC_NN_LP_BIAS]->grad, err));
    OC_NN_TRY(oc_nn_tensor_view_rows(xd, 0, g->n_dst, &xself, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &xself, dpre, 0.0f, &ps->grad, err));
    OC_NN_TRY(oc_nn_layer_agg_linear_bwd(l, g, OC_NN_AGG_MEAN, dpre, pn, want_dx, err));
    if (!want_dx)
        return OC_OK;
    OC_NN_TRY(oc_nn_tensor_view_rows(dx, 0, g->n_dst, &dxself, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dpre, &ps->value, 1.0f, &dxself, err));
    return oc_nn_layer_input_grad(l, err);
}
