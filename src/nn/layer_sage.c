/*
 * layer_sage.c — GraphSAGE layer with DGL SAGEConv('mean') semantics:
 *
 *   h_neigh = mean_{j in N(i)} h_j          (0 when i has no in-edge)
 *   y_i     = fc_self(h_i) + fc_neigh(h_neigh) + bias      (fc_* without bias)
 *
 * As in DGL, fc_neigh is applied before aggregating when in_dim > out_dim
 * (mean(h) W = mean(h W), cheaper on the narrow side), after otherwise; then
 * both transforms are one GEMM over the concatenation [h_neigh | h_self]
 * with the stacked weights [Wn; Ws] (l->wcat: the two parameters are row
 * views of it), whose gradient is one GEMM too. Hidden layers add the bias
 * and apply ReLU in one pass (layer.c); the input goes through dropout first.
 *
 *   forward (in > out):  xd ─► Z = xd Wn ─► mean ─► + xd[:n_dst] Ws ─► bias+act
 *   forward (else):      xd ─► N = [mean(xd) | xd[:n_dst]] ─► N [Wn; Ws] ─► bias+act
 *   backward (else):     dN = dpre [Wn; Ws]^T ─► dx = mean^T dN[:, :in] + dN[:, in:] (dst rows)
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
    struct oc_nn_tensor xself, *target = y;
    if (!l->last) {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_PRE, g->n_dst, l->out_dim, err));
        target = &l->ws[OC_NN_LWS_PRE];
    }
    if (l->in_dim <= l->out_dim) {
        struct oc_nn_tensor *cat = &l->ws[OC_NN_LWS_N];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_N, g->n_dst, 2 * l->in_dim, err));
        OC_NN_TRY(oc_nn_agg_cat_fwd(g, OC_NN_AGG_MEAN, xd, cat, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, cat, &l->wcat, 0.0f, target, err));
    } else {
        OC_NN_TRY(oc_nn_tensor_view_rows(xd, 0, g->n_dst, &xself, err));
        OC_NN_TRY(oc_nn_layer_agg_linear(l, g, OC_NN_AGG_MEAN, &l->p[OC_NN_LP_W_NEIGH]->value,
                                         target, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &xself, &l->p[OC_NN_LP_W_SELF]->value, 1.0f, target, err));
    }
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
    if (l->in_dim <= l->out_dim) {
        /* one GEMM for both weight gradients, one for d[h_neigh | h_self] */
        OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &l->ws[OC_NN_LWS_N], dpre, 0.0f, &l->gcat, err));
        if (!want_dx)
            return OC_OK;
        struct oc_nn_tensor *dcat = &l->ws[OC_NN_LWS_DN];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DN, g->n_dst, 2 * l->in_dim, err));
        OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dpre, &l->wcat, 0.0f, dcat, err));
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DX, g->n_src, l->in_dim, err));
        OC_NN_TRY(oc_nn_agg_cat_bwd(g, OC_NN_AGG_MEAN, dcat, dx, err));
        return oc_nn_layer_input_grad(l, err);
    }
    OC_NN_TRY(oc_nn_tensor_view_rows(xd, 0, g->n_dst, &xself, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &xself, dpre, 0.0f, &ps->grad, err));
    OC_NN_TRY(oc_nn_layer_agg_linear_bwd(l, g, OC_NN_AGG_MEAN, dpre, pn, want_dx, err));
    if (!want_dx)
        return OC_OK;
    OC_NN_TRY(oc_nn_tensor_view_rows(dx, 0, g->n_dst, &dxself, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dpre, &ps->value, 1.0f, &dxself, err));
    return oc_nn_layer_input_grad(l, err);
}
