/*
 * ops_kg.c — frontends of RED-GNN's ops (row gather/scatter, edge attention,
 * edge messages, GRU step, loss over all entities): check operands and the
 * relation block (OC_ERR_ARG naming the op, tensor, edge and value), then
 * dispatch through the backend table.
 *
 * Place in the data flow: nn; called by redgnn.c and the tests.
 * Thread-safety: as the backend (one driving thread).
 * Ownership: operands are borrowed; outputs are caller tensors already sized.
 */
#include "nn_int.h"

#define CHECK(t, name, r, c) \
    OC_NN_TRY(oc_nn_op_check(op, be, (t), (name), OC_NN_F32, (r), (c), err))

static int idx_ok(enum oc_nn_op op, const uint32_t *idx, uint64_t n, uint64_t lim, const char *what,
                  struct oc_err *err)
{
    if (n && !idx)
        return OC_ERR(err, OC_ERR_ARG, "%s: missing %s", oc_nn_op_name(op), what);
    for (uint64_t i = 0; i < n; i++)
        if (idx[i] >= lim)
            return OC_ERR(err, OC_ERR_ARG, "%s: %s[%llu] = %u out of range (< %llu)",
                          oc_nn_op_name(op), what, (unsigned long long)i, idx[i],
                          (unsigned long long)lim);
    return OC_OK;
}

/* The block's arrays are consistent: indptr from 0 to n_edges, ids in range. */
static int block_ok(enum oc_nn_op op, const struct oc_nn_rel_block *g, struct oc_err *err)
{
    if (!g || !g->indptr)
        return OC_ERR(err, OC_ERR_ARG, "%s: missing block", oc_nn_op_name(op));
    if (g->indptr[0] != 0 || g->indptr[g->n_dst] != g->n_edges)
        return OC_ERR(err, OC_ERR_ARG, "%s: block indptr does not run from 0 to %llu edges",
                      oc_nn_op_name(op), (unsigned long long)g->n_edges);
    for (uint64_t i = 0; i < g->n_dst; i++)
        if (g->indptr[i + 1] < g->indptr[i])
            return OC_ERR(err, OC_ERR_ARG, "%s: block indptr decreases at %llu", oc_nn_op_name(op),
                          (unsigned long long)i);
    OC_NN_TRY(idx_ok(op, g->src, g->n_edges, g->n_src, "src", err));
    OC_NN_TRY(idx_ok(op, g->rel, g->n_edges, g->n_rel, "rel", err));
    return idx_ok(op, g->query, g->n_edges, g->n_query, "query", err);
}

int oc_nn_rows_gather(const struct oc_nn_tensor *x, const uint32_t *idx, struct oc_nn_tensor *y,
                      struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_ROWS_GATHER;
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "rows_gather: missing x");
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->rows_gather, err));
    CHECK(x, "x", OC_NN_ANY, OC_NN_ANY);
    CHECK(y, "y", OC_NN_ANY, x->n_cols);
    OC_NN_TRY(idx_ok(op, idx, y->n_rows, x->n_rows, "idx", err));
    if (!y->n_rows || !y->n_cols)
        return OC_OK;
    return be->ops->rows_gather(be, x, idx, y, err);
}

int oc_nn_rows_scatter_add(const struct oc_nn_tensor *x, const uint32_t *idx,
                           struct oc_nn_tensor *y, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_ROWS_SCATTER_ADD;
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "rows_scatter_add: missing x");
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->rows_scatter_add, err));
    CHECK(x, "x", OC_NN_ANY, OC_NN_ANY);
    CHECK(y, "y", OC_NN_ANY, x->n_cols);
    OC_NN_TRY(idx_ok(op, idx, x->n_rows, y->n_rows, "idx", err));
    if (!x->n_rows || !x->n_cols)
        return OC_OK;
    return be->ops->rows_scatter_add(be, x, idx, y, err);
}

int oc_nn_edge_attn_fwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *ps,
                        const struct oc_nn_tensor *pr, const struct oc_nn_tensor *pq,
                        const struct oc_nn_tensor *w, const struct oc_nn_tensor *b,
                        struct oc_nn_tensor *hid, struct oc_nn_tensor *alpha, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_EDGE_ATTN_FWD;
    if (!ps)
        return OC_ERR(err, OC_ERR_ARG, "edge_attn_fwd: missing ps");
    struct oc_nn_backend *be = ps->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->edge_attn_fwd, err));
    OC_NN_TRY(block_ok(op, g, err));
    uint64_t na = ps->n_cols;
    CHECK(ps, "ps (source rows)", g->n_src, OC_NN_ANY);
    CHECK(pr, "pr (relation rows)", g->n_rel, na);
    CHECK(pq, "pq (query rows)", g->n_query, na);
    CHECK(w, "w", 1, na);
    CHECK(b, "b", 1, 1);
    CHECK(hid, "hid (edge rows)", g->n_edges, na);
    CHECK(alpha, "alpha", g->n_edges, 1);
    if (!g->n_edges)
        return OC_OK;
    return be->ops->edge_attn_fwd(be, g, ps, pr, pq, w, b, hid, alpha, err);
}

int oc_nn_edge_attn_bwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *hid,
                        const struct oc_nn_tensor *alpha, const struct oc_nn_tensor *dalpha,
                        const struct oc_nn_tensor *w, struct oc_nn_tensor *dpre,
                        struct oc_nn_tensor *dw, struct oc_nn_tensor *db, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_EDGE_ATTN_BWD;
    if (!hid)
        return OC_ERR(err, OC_ERR_ARG, "edge_attn_bwd: missing hid");
    struct oc_nn_backend *be = hid->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->edge_attn_bwd, err));
    OC_NN_TRY(block_ok(op, g, err));
    uint64_t na = hid->n_cols;
    CHECK(hid, "hid (edge rows)", g->n_edges, OC_NN_ANY);
    CHECK(alpha, "alpha", g->n_edges, 1);
    CHECK(dalpha, "dalpha", g->n_edges, 1);
    CHECK(w, "w", 1, na);
    CHECK(dpre, "dpre", g->n_edges, na);
    CHECK(dw, "dw", 1, na);
    CHECK(db, "db", 1, 1);
    return be->ops->edge_attn_bwd(be, g, hid, alpha, dalpha, w, dpre, dw, db, err);
}

int oc_nn_edge_msg_fwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *h,
                       const struct oc_nn_tensor *r, const struct oc_nn_tensor *alpha,
                       struct oc_nn_tensor *y, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_EDGE_MSG_FWD;
    if (!h)
        return OC_ERR(err, OC_ERR_ARG, "edge_msg_fwd: missing h");
    struct oc_nn_backend *be = h->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->edge_msg_fwd, err));
    OC_NN_TRY(block_ok(op, g, err));
    CHECK(h, "h (source rows)", g->n_src, OC_NN_ANY);
    CHECK(r, "r (relation rows)", g->n_rel, h->n_cols);
    CHECK(alpha, "alpha", g->n_edges, 1);
    CHECK(y, "y (target rows)", g->n_dst, h->n_cols);
    if (!g->n_dst || !h->n_cols)
        return OC_OK;
    return be->ops->edge_msg_fwd(be, g, h, r, alpha, y, err);
}

int oc_nn_edge_msg_bwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *h,
                       const struct oc_nn_tensor *r, const struct oc_nn_tensor *alpha,
                       const struct oc_nn_tensor *dy, struct oc_nn_tensor *dh,
                       struct oc_nn_tensor *dr, struct oc_nn_tensor *dalpha, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_EDGE_MSG_BWD;
    if (!h)
        return OC_ERR(err, OC_ERR_ARG, "edge_msg_bwd: missing h");
    struct oc_nn_backend *be = h->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->edge_msg_bwd, err));
    OC_NN_TRY(block_ok(op, g, err));
    uint64_t n = h->n_cols;
    CHECK(h, "h (source rows)", g->n_src, OC_NN_ANY);
    CHECK(r, "r (relation rows)", g->n_rel, n);
    CHECK(alpha, "alpha", g->n_edges, 1);
    CHECK(dy, "dy (target rows)", g->n_dst, n);
    CHECK(dh, "dh", g->n_src, n);
    CHECK(dr, "dr", g->n_rel, n);
    CHECK(dalpha, "dalpha", g->n_edges, 1);
    if (!n)
        return OC_OK;
    return be->ops->edge_msg_bwd(be, g, h, r, alpha, dy, dh, dr, dalpha, err);
}

int oc_nn_gru_fwd(const struct oc_nn_tensor *gi, const struct oc_nn_tensor *gh,
                  const struct oc_nn_tensor *h, struct oc_nn_tensor *hn, struct oc_nn_tensor *gates,
                  struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GRU_FWD;
    if (!h)
        return OC_ERR(err, OC_ERR_ARG, "gru_fwd: missing h");
    struct oc_nn_backend *be = h->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gru_fwd, err));
    uint64_t n = h->n_rows, hd = h->n_cols;
    CHECK(h, "h", OC_NN_ANY, OC_NN_ANY);
    CHECK(gi, "gi", n, 3 * hd);
    CHECK(gh, "gh", n, 3 * hd);
    CHECK(hn, "hn", n, hd);
    CHECK(gates, "gates", n, 3 * hd);
    if (!n || !hd)
        return OC_OK;
    return be->ops->gru_fwd(be, gi, gh, h, hn, gates, err);
}

int oc_nn_gru_bwd(const struct oc_nn_tensor *gates, const struct oc_nn_tensor *gh,
                  const struct oc_nn_tensor *h, const struct oc_nn_tensor *dhn,
                  struct oc_nn_tensor *dgi, struct oc_nn_tensor *dgh, struct oc_nn_tensor *dh,
                  struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GRU_BWD;
    if (!h)
        return OC_ERR(err, OC_ERR_ARG, "gru_bwd: missing h");
    struct oc_nn_backend *be = h->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gru_bwd, err));
    uint64_t n = h->n_rows, hd = h->n_cols;
    CHECK(h, "h", OC_NN_ANY, OC_NN_ANY);
    CHECK(gates, "gates", n, 3 * hd);
    CHECK(gh, "gh", n, 3 * hd);
    CHECK(dhn, "dhn", n, hd);
    CHECK(dgi, "dgi", n, 3 * hd);
    CHECK(dgh, "dgh", n, 3 * hd);
    CHECK(dh, "dh", n, hd);
    if (!n || !hd)
        return OC_OK;
    return be->ops->gru_bwd(be, gates, gh, h, dhn, dgi, dgh, dh, err);
}

int oc_nn_kg_xent(const struct oc_nn_tensor *scores, const uint64_t *qptr, const int64_t *pos,
                  uint64_t n_query, uint64_t n_entities, struct oc_nn_tensor *dscores, double *loss,
                  struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_KG_XENT;
    if (!scores || !qptr || !pos)
        return OC_ERR(err, OC_ERR_ARG, "kg_xent: missing operand");
    struct oc_nn_backend *be = scores->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->kg_xent, err));
    CHECK(scores, "scores", OC_NN_ANY, 1);
    CHECK(dscores, "dscores", scores->n_rows, 1);
    if (qptr[0] != 0 || qptr[n_query] != scores->n_rows)
        return OC_ERR(err, OC_ERR_ARG, "kg_xent: query ranges do not cover the %llu scores",
                      (unsigned long long)scores->n_rows);
    for (uint64_t q = 0; q < n_query; q++) {
        if (qptr[q + 1] < qptr[q] || qptr[q + 1] - qptr[q] > n_entities)
            return OC_ERR(err, OC_ERR_ARG, "kg_xent: query %llu has a bad score range",
                          (unsigned long long)q);
        if (pos[q] >= 0 && ((uint64_t)pos[q] < qptr[q] || (uint64_t)pos[q] >= qptr[q + 1]))
            return OC_ERR(err, OC_ERR_ARG, "kg_xent: answer row of query %llu outside its range",
                          (unsigned long long)q);
    }
    *loss = 0.0;
    if (!n_query)
        return OC_OK;
    return be->ops->kg_xent(be, scores, qptr, pos, n_query, n_entities, dscores, loss, err);
}
