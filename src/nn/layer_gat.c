/*
 * layer_gat.c — GAT layer with DGL GATConv semantics (no residual):
 *
 *   Z   = dropout(h) W                       n_src x (H*F), head h in columns [hF, hF+F)
 *   el  = <Z, attn_l> per head (all src),  er = <Z[:n_dst], attn_r> per head
 *   a   = edge_softmax_i(LeakyReLU(el[j] + er[i]))   then attention dropout
 *   y_i = sum_{j in N(i)} a_ij Z_j + bias
 *
 * Hidden layers apply ELU and keep the heads concatenated (H*F columns); the
 * output layer averages its heads (F = n_classes columns).
 *
 * Place in the data flow: nn; model.c calls it per layer.
 * Thread-safety: a layer is used by one thread at a time.
 * Ownership: parameters and workspace belong to the model.
 */
#include "nn_int.h"

int oc_nn_gat_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                      const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      const struct oc_nn_fwd *fwd, struct oc_err *err)
{
    uint64_t nh = l->heads, hf = nh * l->head_dim;
    struct oc_nn_tensor *z = &l->ws[OC_NN_LWS_Z], *el = &l->ws[OC_NN_LWS_EL];
    struct oc_nn_tensor *er = &l->ws[OC_NN_LWS_ER], *att = &l->ws[OC_NN_LWS_ATT];
    struct oc_nn_tensor *pre = &l->ws[OC_NN_LWS_PRE], zdst;
    const struct oc_nn_tensor *a_used = att;
    OC_NN_TRY(oc_nn_layer_drop_input(l, x, fwd, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_Z, g->n_src, hf, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, l->xd, &l->p[OC_NN_LP_W]->value, 0.0f, z, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_EL, g->n_src, nh, err));
    OC_NN_TRY(oc_nn_gat_proj_fwd(z, &l->p[OC_NN_LP_ATTN_L]->value, el, err));
    OC_NN_TRY(oc_nn_tensor_view_rows(z, 0, g->n_dst, &zdst, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_ER, g->n_dst, nh, err));
    OC_NN_TRY(oc_nn_gat_proj_fwd(&zdst, &l->p[OC_NN_LP_ATTN_R]->value, er, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_ATT, g->n_edges, nh, err));
    OC_NN_TRY(oc_nn_gat_softmax_fwd(g, el, er, l->slope, att, err));
    l->attn_dropped = fwd->training && l->p_attn > 0.0f;
    if (l->attn_dropped) {
        struct oc_nn_drop_key key = {fwd->drop_seed, l->index, OC_NN_SITE_ATTN};
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_ATTD, g->n_edges, nh, err));
        OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_AMASK, g->n_edges, nh, err));
        OC_NN_TRY(oc_nn_dropout_fwd(att, l->p_attn, &key, &l->ws[OC_NN_LWS_ATTD],
                                    &l->ws[OC_NN_LWS_AMASK], err));
        a_used = &l->ws[OC_NN_LWS_ATTD];
    }
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_PRE, g->n_dst, hf, err));
    OC_NN_TRY(oc_nn_gat_agg_fwd(g, a_used, z, pre, err));
    return oc_nn_layer_finish(l, pre, y, err);
}

int oc_nn_gat_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err)
{
    uint64_t nh = l->heads, hf = nh * l->head_dim;
    const struct oc_nn_tensor *dpre;
    struct oc_nn_tensor *z = &l->ws[OC_NN_LWS_Z], *dz = &l->ws[OC_NN_LWS_DZ];
    struct oc_nn_tensor *datt = &l->ws[OC_NN_LWS_DATT], *del = &l->ws[OC_NN_LWS_DEL];
    struct oc_nn_tensor *der = &l->ws[OC_NN_LWS_DER], zdst, dzdst;
    struct oc_nn_param *pw = l->p[OC_NN_LP_W];
    const struct oc_nn_tensor *a_used =
        l->attn_dropped ? &l->ws[OC_NN_LWS_ATTD] : &l->ws[OC_NN_LWS_ATT];
    OC_NN_TRY(oc_nn_layer_finish_bwd(l, y, dy, &dpre, err));
    OC_NN_TRY(oc_nn_colsum(dpre, &l->p[OC_NN_LP_BIAS]->grad, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DZ, g->n_src, hf, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DATT, g->n_edges, nh, err));
    OC_NN_TRY(oc_nn_gat_agg_bwd(g, a_used, z, dpre, dz, datt, err));
    if (l->attn_dropped)
        OC_NN_TRY(oc_nn_dropout_bwd(datt, &l->ws[OC_NN_LWS_AMASK], l->p_attn, datt, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DEL, g->n_src, nh, err));
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DER, g->n_dst, nh, err));
    OC_NN_TRY(oc_nn_gat_softmax_bwd(g, &l->ws[OC_NN_LWS_EL], &l->ws[OC_NN_LWS_ER], l->slope,
                                    &l->ws[OC_NN_LWS_ATT], datt, del, der, err));
    OC_NN_TRY(oc_nn_gat_proj_bwd(z, &l->p[OC_NN_LP_ATTN_L]->value, del, dz,
                                 &l->p[OC_NN_LP_ATTN_L]->grad, err));
    OC_NN_TRY(oc_nn_tensor_view_rows(z, 0, g->n_dst, &zdst, err));
    OC_NN_TRY(oc_nn_tensor_view_rows(dz, 0, g->n_dst, &dzdst, err));
    OC_NN_TRY(oc_nn_gat_proj_bwd(&zdst, &l->p[OC_NN_LP_ATTN_R]->value, der, &dzdst,
                                 &l->p[OC_NN_LP_ATTN_R]->grad, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, l->xd, dz, 0.0f, &pw->grad, err));
    if (!want_dx)
        return OC_OK;
    OC_NN_TRY(oc_nn_layer_ws(l, OC_NN_LWS_DX, g->n_src, l->in_dim, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, dz, &pw->value, 0.0f, &l->ws[OC_NN_LWS_DX], err));
    return oc_nn_layer_input_grad(l, err);
}
