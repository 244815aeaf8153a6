/*
 * ops_graph.c — frontends of the graph ops (sparse aggregation, GAT
 * projections, edge softmax, attention aggregation): check operands against
 * the prepared block (OC_ERR_ARG naming the op and the shapes), build the
 * block's transpose for backward ops, and dispatch through the backend table.
 *
 * Place in the data flow: nn; called by the layers and the tests.
 * Thread-safety: as the backend (one driving thread).
 * Ownership: operands are borrowed; outputs are caller tensors already sized.
 */
#include "nn_int.h"

static int graph_ok(enum oc_nn_op op, const struct oc_nn_graph *g, struct oc_err *err)
{
    if (!g)
        return OC_ERR(err, OC_ERR_ARG, "%s: missing block", oc_nn_op_name(op));
    return OC_OK;
}

static int agg_ok(enum oc_nn_op op, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                  struct oc_err *err)
{
    if ((unsigned)agg >= OC_NN_AGG_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "%s: unknown aggregation %d", oc_nn_op_name(op), (int)agg);
    if (agg == OC_NN_AGG_GCN && !g->has_norm)
        return OC_ERR(err, OC_ERR_ARG, "%s: gcn aggregation over a block prepared without norms",
                      oc_nn_op_name(op));
    return OC_OK;
}

static int agg_fwd_any(enum oc_nn_op op, int cat, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                       const struct oc_nn_tensor *x, struct oc_nn_tensor *y, struct oc_err *err)
{
    OC_NN_TRY(graph_ok(op, g, err));
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "%s: missing x", oc_nn_op_name(op));
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->agg_fwd, err));
    OC_NN_TRY(agg_ok(op, g, agg, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y (block dst rows)", OC_NN_F32, g->n_dst,
                             cat ? 2 * x->n_cols : x->n_cols, err));
    if (!g->n_dst || !x->n_cols)
        return OC_OK;
    return be->ops->agg_fwd(be, g, agg, cat, x, y, err);
}

static int agg_bwd_any(enum oc_nn_op op, int cat, struct oc_nn_graph *g, enum oc_nn_agg agg,
                       const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx, struct oc_err *err)
{
    OC_NN_TRY(graph_ok(op, g, err));
    if (!dy || !dx)
        return OC_ERR(err, OC_ERR_ARG, "%s: missing dy or dx", oc_nn_op_name(op));
    struct oc_nn_backend *be = dy->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->agg_bwd, err));
    OC_NN_TRY(agg_ok(op, g, agg, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, dx, "dx (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dy, "dy (block dst rows)", OC_NN_F32, g->n_dst,
                             cat ? 2 * dx->n_cols : dx->n_cols, err));
    if (!g->n_src || !dx->n_cols)
        return OC_OK;
    OC_NN_TRY(oc_nn_graph_need_transpose(g, err));
    return be->ops->agg_bwd(be, g, agg, cat, dy, dx, err);
}

int oc_nn_agg_fwd(const struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *x,
                  struct oc_nn_tensor *y, struct oc_err *err)
{
    return agg_fwd_any(OC_NN_OP_AGG_FWD, 0, g, agg, x, y, err);
}

int oc_nn_agg_bwd(struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *dy,
                  struct oc_nn_tensor *dx, struct oc_err *err)
{
    return agg_bwd_any(OC_NN_OP_AGG_BWD, 0, g, agg, dy, dx, err);
}

int oc_nn_agg_cat_fwd(const struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *x,
                      struct oc_nn_tensor *y, struct oc_err *err)
{
    return agg_fwd_any(OC_NN_OP_AGG_CAT_FWD, 1, g, agg, x, y, err);
}

int oc_nn_agg_cat_bwd(struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *dy,
                      struct oc_nn_tensor *dx, struct oc_err *err)
{
    return agg_bwd_any(OC_NN_OP_AGG_CAT_BWD, 1, g, agg, dy, dx, err);
}

/* heads = out->n_cols must divide z's width. */
static int heads_ok(enum oc_nn_op op, uint64_t heads, uint64_t width, struct oc_err *err)
{
    if (heads == 0 || width % heads != 0)
        return OC_ERR(err, OC_ERR_ARG, "%s: %llu heads do not divide width %llu", oc_nn_op_name(op),
                      (unsigned long long)heads, (unsigned long long)width);
    return OC_OK;
}

int oc_nn_gat_proj_fwd(const struct oc_nn_tensor *z, const struct oc_nn_tensor *attn,
                       struct oc_nn_tensor *out, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_PROJ_FWD;
    if (!z || !out)
        return OC_ERR(err, OC_ERR_ARG, "gat_proj_fwd: missing z or out");
    struct oc_nn_backend *be = z->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_proj_fwd, err));
    OC_NN_TRY(heads_ok(op, out->n_cols, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, z, "z", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, attn, "attn", OC_NN_F32, 1, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, out, "out", OC_NN_F32, z->n_rows, OC_NN_ANY, err));
    if (!z->n_rows)
        return OC_OK;
    return be->ops->gat_proj_fwd(be, z, attn, out, err);
}

int oc_nn_gat_proj_bwd(const struct oc_nn_tensor *z, const struct oc_nn_tensor *attn,
                       const struct oc_nn_tensor *dout, struct oc_nn_tensor *dz,
                       struct oc_nn_tensor *dattn, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_PROJ_BWD;
    if (!z || !dout)
        return OC_ERR(err, OC_ERR_ARG, "gat_proj_bwd: missing z or dout");
    struct oc_nn_backend *be = z->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_proj_bwd, err));
    OC_NN_TRY(heads_ok(op, dout->n_cols, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, z, "z", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, attn, "attn", OC_NN_F32, 1, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dout, "dout", OC_NN_F32, z->n_rows, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dz, "dz", OC_NN_F32, z->n_rows, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dattn, "dattn", OC_NN_F32, 1, z->n_cols, err));
    if (!z->n_rows)
        return oc_nn_tensor_zero(dattn, err);
    return be->ops->gat_proj_bwd(be, z, attn, dout, dz, dattn, err);
}

int oc_nn_gat_softmax_fwd(const struct oc_nn_graph *g, const struct oc_nn_tensor *el,
                          const struct oc_nn_tensor *er, float slope, struct oc_nn_tensor *a,
                          struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_SOFTMAX_FWD;
    OC_NN_TRY(graph_ok(op, g, err));
    if (!el)
        return OC_ERR(err, OC_ERR_ARG, "gat_softmax_fwd: missing el");
    struct oc_nn_backend *be = el->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_softmax_fwd, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, el, "el (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, er, "er (block dst rows)", OC_NN_F32, g->n_dst, el->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, a, "a (block edges)", OC_NN_F32, g->n_edges, el->n_cols, err));
    if (!g->n_edges || !el->n_cols)
        return OC_OK;
    return be->ops->gat_softmax_fwd(be, g, el, er, slope, a, err);
}

int oc_nn_gat_softmax_bwd(struct oc_nn_graph *g, const struct oc_nn_tensor *el,
                          const struct oc_nn_tensor *er, float slope, const struct oc_nn_tensor *a,
                          struct oc_nn_tensor *da, struct oc_nn_tensor *del,
                          struct oc_nn_tensor *der, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_SOFTMAX_BWD;
    OC_NN_TRY(graph_ok(op, g, err));
    if (!el)
        return OC_ERR(err, OC_ERR_ARG, "gat_softmax_bwd: missing el");
    struct oc_nn_backend *be = el->backend;
    uint64_t nh = el->n_cols;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_softmax_bwd, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, el, "el (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, er, "er (block dst rows)", OC_NN_F32, g->n_dst, nh, err));
    OC_NN_TRY(oc_nn_op_check(op, be, a, "a (block edges)", OC_NN_F32, g->n_edges, nh, err));
    OC_NN_TRY(oc_nn_op_check(op, be, da, "da (block edges)", OC_NN_F32, g->n_edges, nh, err));
    OC_NN_TRY(oc_nn_op_check(op, be, del, "del (block src rows)", OC_NN_F32, g->n_src, nh, err));
    OC_NN_TRY(oc_nn_op_check(op, be, der, "der (block dst rows)", OC_NN_F32, g->n_dst, nh, err));
    if (!nh)
        return OC_OK;
    OC_NN_TRY(oc_nn_graph_need_transpose(g, err));
    return be->ops->gat_softmax_bwd(be, g, el, er, slope, a, da, del, der, err);
}

int oc_nn_gat_agg_fwd(const struct oc_nn_graph *g, const struct oc_nn_tensor *a,
                      const struct oc_nn_tensor *z, struct oc_nn_tensor *y, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_AGG_FWD;
    OC_NN_TRY(graph_ok(op, g, err));
    if (!a || !z)
        return OC_ERR(err, OC_ERR_ARG, "gat_agg_fwd: missing a or z");
    struct oc_nn_backend *be = z->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_agg_fwd, err));
    OC_NN_TRY(heads_ok(op, a->n_cols, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, a, "a (block edges)", OC_NN_F32, g->n_edges, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, z, "z (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y (block dst rows)", OC_NN_F32, g->n_dst, z->n_cols, err));
    if (!g->n_dst)
        return OC_OK;
    return be->ops->gat_agg_fwd(be, g, a, z, y, err);
}

int oc_nn_gat_agg_bwd(struct oc_nn_graph *g, const struct oc_nn_tensor *a,
                      const struct oc_nn_tensor *z, const struct oc_nn_tensor *dy,
                      struct oc_nn_tensor *dz, struct oc_nn_tensor *da, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GAT_AGG_BWD;
    OC_NN_TRY(graph_ok(op, g, err));
    if (!a || !z)
        return OC_ERR(err, OC_ERR_ARG, "gat_agg_bwd: missing a or z");
    struct oc_nn_backend *be = z->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gat_agg_bwd, err));
    OC_NN_TRY(heads_ok(op, a->n_cols, z->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, a, "a (block edges)", OC_NN_F32, g->n_edges, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, z, "z (block src rows)", OC_NN_F32, g->n_src, OC_NN_ANY, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, dy, "dy (block dst rows)", OC_NN_F32, g->n_dst, z->n_cols, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, dz, "dz (block src rows)", OC_NN_F32, g->n_src, z->n_cols, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, da, "da (block edges)", OC_NN_F32, g->n_edges, a->n_cols, err));
    if (!g->n_src)
        return OC_OK;
    OC_NN_TRY(oc_nn_graph_need_transpose(g, err));
    return be->ops->gat_agg_bwd(be, g, a, z, dy, dz, da, err);
}
