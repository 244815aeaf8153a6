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
    const struct oc_nn_tensor *w = &l->p[OC_NN_LP_W]->value;
    struct oc_nn_tensor *target = y;
    if (!l->last) {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_PRE, g->n_dst, l->out_dim, err));
        target = &l->ws[OC_NN_LWS_PRE];
    }
    OC_NN_TRY(oc_nn_layer_agg_linear(l, g, OC_NN_AGG_GCN, w, target, err));
    return oc_nn_layer_finish(l, target, y, err);
}

int oc_nn_gcn_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err)
{
    const struct oc_nn_tensor *dpre;
    OC_NN_TRY(oc_nn_layer_finish_bwd(l, y, dy, &dpre, err));
    OC_NN_TRY(oc_nn_colsum(dpre, &l->p[OC_NN_LP_BIAS]->grad, err));
    OC_NN_TRY(
        oc_nn_layer_agg_linear_bwd(l, g, OC_NN_AGG_GCN, dpre, l->p[OC_NN_LP_W], want_dx, err));
    return want_dx ? oc_nn_layer_input_grad(l, err) : OC_OK;
}
