/*
 * layer.c — the steps every layer kind shares: workspace sizing, input
 * dropout and its gradient, and the layer's finishing step (bias, then ReLU/ELU
 * in the same pass after a hidden layer, or the GAT output layer's mean over
 * heads) with its gradient,
 * and the aggregate-and-transform step of GCN and SAGE (agg(xd) W in DGL's
 * cheaper order) with its gradient.
 *
 * Place in the data flow: nn; called by layer_sage.c, layer_gcn.c,
 * layer_gat.c.
 * Thread-safety: a layer is used by one thread at a time.
 * Ownership: workspace tensors belong to the model; the layer records which
 * tensor its dropped input is (l->xd) for backward.
 */
#include "nn_int.h"

void oc_nn_lws_init(struct oc_nn_tensor ws[OC_NN_LWS_COUNT], struct oc_nn_backend *be)
{
    for (int i = 0; i < OC_NN_LWS_COUNT; i++) {
        int is_mask = i == OC_NN_LWS_XMASK || i == OC_NN_LWS_AMASK;
        oc_nn_tensor_init(&ws[i], be, is_mask ? OC_NN_U8 : OC_NN_F32);
    }
}

void oc_nn_lws_deinit(struct oc_nn_tensor ws[OC_NN_LWS_COUNT])
{
    for (int i = 0; i < OC_NN_LWS_COUNT; i++)
        oc_nn_tensor_deinit(&ws[i]);
}

int oc_nn_layer_ws(struct oc_nn_layer *l, enum oc_nn_lws slot, uint64_t n_rows, uint64_t n_cols,
                   struct oc_err *err)
{
    int rc = oc_nn_tensor_resize(&l->ws[slot], n_rows, n_cols, "nn layer workspace", err);
    if (rc != OC_OK)
        oc_err_prefix(err, "layer %u", l->index);
    return rc;
}

static enum oc_nn_act layer_act(const struct oc_nn_layer *l)
{
    return l->kind == OC_NN_MODEL_GAT ? OC_NN_ACT_ELU : OC_NN_ACT_RELU;
}

int oc_nn_layer_drop_input(struct oc_nn_layer *l, const struct oc_nn_tensor *x,
                           const struct oc_nn_fwd *fwd, struct oc_err *err)
{
    l->xd = x;
    if (!fwd->training || l->p_drop == 0.0f)
        return OC_OK;
    /* layer 0 never passes a gradient to its input: no mask to keep */
    struct oc_nn_tensor *mask = l->index > 0 ? &l->ws[OC_NN_LWS_XMASK] : NULL;
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_XD, x->n_rows, x->n_cols, err));
    if (mask)
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_XMASK, x->n_rows, x->n_cols, err));
    struct oc_nn_drop_key key = {fwd->drop_seed, l->index, OC_NN_SITE_INPUT};
    OC_NN_TRY(oc_nn_dropout_fwd(x, l->p_drop, &key, &l->ws[OC_NN_LWS_XD], mask, err));
    l->xd = &l->ws[OC_NN_LWS_XD];
    return OC_OK;
}

int oc_nn_layer_input_grad(struct oc_nn_layer *l, struct oc_err *err)
{
    if (l->xd != &l->ws[OC_NN_LWS_XD])
        return OC_OK;
    struct oc_nn_tensor *dx = &l->ws[OC_NN_LWS_DX];
    return oc_nn_dropout_bwd(dx, &l->ws[OC_NN_LWS_XMASK], l->p_drop, dx, err);
}

int oc_nn_layer_finish(struct oc_nn_layer *l, struct oc_nn_tensor *pre, struct oc_nn_tensor *y,
                       struct oc_err *err)
{
    const struct oc_nn_tensor *bias = &l->p[OC_NN_LP_BIAS]->value;
    if (!l->last)
        return oc_nn_bias_act(layer_act(l), pre, bias, y, err);
    OC_NN_TRY(oc_nn_bias_add(pre, bias, err));
    if (l->kind == OC_NN_MODEL_GAT)
        return oc_nn_head_mean_fwd(pre, l->heads, y, err);
    return OC_OK; /* SAGE/GCN output layers write y directly */
}

int oc_nn_layer_finish_bwd(struct oc_nn_layer *l, const struct oc_nn_tensor *y,
                           const struct oc_nn_tensor *dy, const struct oc_nn_tensor **dpre,
                           struct oc_err *err)
{
    *dpre = dy;
    if (l->last && l->kind != OC_NN_MODEL_GAT)
        return OC_OK;
    struct oc_nn_tensor *d = &l->ws[OC_NN_LWS_DPRE];
    if (l->last) {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DPRE, dy->n_rows, dy->n_cols * l->heads, err));
        OC_NN_TRY(oc_nn_head_mean_bwd(dy, l->heads, d, err));
    } else {
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DPRE, dy->n_rows, dy->n_cols, err));
        OC_NN_TRY(oc_nn_act_bwd(layer_act(l), y, dy, d, err));
    }
    *dpre = d;
    return OC_OK;
}

int oc_nn_layer_agg_linear(struct oc_nn_layer *l, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                           const struct oc_nn_tensor *w, struct oc_nn_tensor *target,
                           struct oc_err *err)
{
    const struct oc_nn_tensor *xd = l->xd;
    if (l->in_dim > l->out_dim) {
        struct oc_nn_tensor *z = &l->ws[OC_NN_LWS_Z];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_Z, g->n_src, l->out_dim, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, xd, w, 0.0f, z, err));
        OC_NN_TRY(oc_nn_agg_fwd(g, agg, z, target, err));
    } else {
        struct oc_nn_tensor *n = &l->ws[OC_NN_LWS_N];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_N, g->n_dst, l->in_dim, err));
        OC_NN_TRY(oc_nn_agg_fwd(g, agg, xd, n, err));
        OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, n, w, 0.0f, target, err));
    }
    return OC_OK;
}

int oc_nn_layer_agg_linear_bwd(struct oc_nn_layer *l, struct oc_nn_graph *g, enum oc_nn_agg agg,
                               const struct oc_nn_tensor *dpre, struct oc_nn_param *pw, int want_dx,
                               struct oc_err *err)
{
    struct oc_nn_tensor *dx = &l->ws[OC_NN_LWS_DX];
    if (want_dx)
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DX, g->n_src, l->in_dim, err));
    if (l->in_dim > l->out_dim) {
        struct oc_nn_tensor *dz = &l->ws[OC_NN_LWS_DZ];
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DZ, g->n_src, l->out_dim, err));
        OC_NN_TRY(oc_nn_agg_bwd(g, agg, dpre, dz, err));
        OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, l->xd, dz, 0.0f, &pw->grad, err));
        if (want_dx)
            OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dz, &pw->value, 0.0f, dx, err));
    } else {
        OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &l->ws[OC_NN_LWS_N], dpre, 0.0f, &pw->grad, err));
        if (want_dx) {
            struct oc_nn_tensor *dn = &l->ws[OC_NN_LWS_DN];
            OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DN, g->n_dst, l->in_dim, err));
            OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dpre, &pw->value, 0.0f, dn, err));
            OC_NN_TRY(oc_nn_agg_bwd(g, agg, dn, dx, err));
        }
    }
    return OC_OK;
}
