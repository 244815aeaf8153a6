/*
 * ops_dense.c — frontends of the dense ops (GEMM, bias, column sum,
 * activations, dropout, head mean): check operands (backend, dtype, shape;
 * a mismatch is OC_ERR_ARG naming the op and the shapes) and dispatch
 * through the backend table. Also the shared operand checks.
 *
 * Place in the data flow: nn; called by the layers and the tests.
 * Thread-safety: as the backend (one driving thread).
 * Ownership: operands are borrowed; outputs are caller tensors already sized.
 */
#include <limits.h>
#include <stdio.h>

#include "nn_int.h"
#include "offcore/progress.h"

static const char *const dtype_names[OC_NN_DTYPE_COUNT] = {[OC_NN_F32] = "f32", [OC_NN_U8] = "u8"};

int oc_nn_op_check(enum oc_nn_op op, const struct oc_nn_backend *be, const struct oc_nn_tensor *t,
                   const char *name, enum oc_nn_dtype dtype, uint64_t n_rows, uint64_t n_cols,
                   struct oc_err *err)
{
    const char *opn = oc_nn_op_name(op);
    if (!t)
        return OC_ERR(err, OC_ERR_ARG, "%s: %s is missing", opn, name);
    if (t->backend != be)
        return OC_ERR(err, OC_ERR_ARG, "%s: %s is on another backend", opn, name);
    if (t->dtype != dtype)
        return OC_ERR(err, OC_ERR_ARG, "%s: %s is %s, expected %s", opn, name,
                      dtype_names[t->dtype], dtype_names[dtype]);
    if ((n_rows != OC_NN_ANY && t->n_rows != n_rows) ||
        (n_cols != OC_NN_ANY && t->n_cols != n_cols)) {
        char want_r[24] = "*", want_c[24] = "*";
        if (n_rows != OC_NN_ANY)
            snprintf(want_r, sizeof(want_r), "%llu", (unsigned long long)n_rows);
        if (n_cols != OC_NN_ANY)
            snprintf(want_c, sizeof(want_c), "%llu", (unsigned long long)n_cols);
        return OC_ERR(err, OC_ERR_ARG, "%s: %s is %llux%llu, expected %sx%s", opn, name,
                      (unsigned long long)t->n_rows, (unsigned long long)t->n_cols, want_r, want_c);
    }
    if (t->n_rows && t->n_cols && !t->data)
        return OC_ERR(err, OC_ERR_ARG, "%s: %s has no memory", opn, name);
    return OC_OK;
}

int oc_nn_op_supported(enum oc_nn_op op, const struct oc_nn_backend *be, const void *fn,
                       struct oc_err *err)
{
    if (!fn)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "nn backend %s lacks op %s", be->ops->name,
                      oc_nn_op_name(op));
    return OC_OK;
}

int oc_nn_gemm(int trans_a, int trans_b, float alpha, const struct oc_nn_tensor *a,
               const struct oc_nn_tensor *b, float beta, struct oc_nn_tensor *c, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_GEMM;
    if (!a || !b || !c)
        return OC_ERR(err, OC_ERR_ARG, "gemm: missing operand");
    struct oc_nn_backend *be = c->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->gemm, err));
    uint64_t m = trans_a ? a->n_cols : a->n_rows, k = trans_a ? a->n_rows : a->n_cols;
    uint64_t kb = trans_b ? b->n_cols : b->n_rows, n = trans_b ? b->n_rows : b->n_cols;
    if (k != kb || c->n_rows != m || c->n_cols != n)
        return OC_ERR(err, OC_ERR_ARG,
                      "gemm: op(a) %llux%llu times op(b) %llux%llu does not give c %llux%llu",
                      (unsigned long long)m, (unsigned long long)k, (unsigned long long)kb,
                      (unsigned long long)n, (unsigned long long)c->n_rows,
                      (unsigned long long)c->n_cols);
    OC_NN_TRY(oc_nn_op_check(op, be, a, "a", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, b, "b", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, c, "c", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    if (a->n_rows > INT_MAX || a->n_cols > INT_MAX || b->n_rows > INT_MAX || b->n_cols > INT_MAX ||
        m > INT_MAX || n > INT_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "gemm: dimension beyond %d (a %llux%llu, b %llux%llu)", INT_MAX,
                      (unsigned long long)a->n_rows, (unsigned long long)a->n_cols,
                      (unsigned long long)b->n_rows, (unsigned long long)b->n_cols);
    if (m == 0 || n == 0)
        return OC_OK;
    if (k == 0) {
        if (beta == 0.0f)
            return oc_nn_tensor_zero(c, err);
        if (beta == 1.0f)
            return OC_OK;
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "gemm: k = 0 with beta %g", (double)beta);
    }
    uint64_t t0 = oc_now_ns();
    int rc = be->ops->gemm(be, trans_a, trans_b, alpha, a, b, beta, c, err);
    atomic_fetch_add(&be->gemm_ns, oc_now_ns() - t0);
    atomic_fetch_add(&be->gemm_flops, 2 * m * n * k);
    return rc;
}

int oc_nn_bias_add(struct oc_nn_tensor *y, const struct oc_nn_tensor *bias, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_BIAS_ADD;
    if (!y)
        return OC_ERR(err, OC_ERR_ARG, "bias_add: missing y");
    struct oc_nn_backend *be = y->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->bias_add, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, bias, "bias", OC_NN_F32, 1, y->n_cols, err));
    if (!y->n_rows || !y->n_cols)
        return OC_OK;
    return be->ops->bias_add(be, y, bias, err);
}

int oc_nn_bias_act(enum oc_nn_act act, const struct oc_nn_tensor *x,
                   const struct oc_nn_tensor *bias, struct oc_nn_tensor *y, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_BIAS_ACT;
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "bias_act: missing x");
    if ((unsigned)act >= OC_NN_ACT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "bias_act: unknown activation %d", (int)act);
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->bias_act, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, bias, "bias", OC_NN_F32, 1, x->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, x->n_rows, x->n_cols, err));
    if (!x->n_rows || !x->n_cols)
        return OC_OK;
    return be->ops->bias_act(be, act, x, bias, y, err);
}

int oc_nn_colsum(const struct oc_nn_tensor *x, struct oc_nn_tensor *out, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_COLSUM;
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "colsum: missing x");
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->colsum, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, out, "out", OC_NN_F32, 1, x->n_cols, err));
    if (!x->n_cols)
        return OC_OK;
    if (!x->n_rows)
        return oc_nn_tensor_zero(out, err);
    return be->ops->colsum(be, x, out, err);
}

int oc_nn_act_fwd(enum oc_nn_act act, const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                  struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_ACT_FWD;
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "act_fwd: missing x");
    if ((unsigned)act >= OC_NN_ACT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "act_fwd: unknown activation %d", (int)act);
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->act_fwd, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, x->n_rows, x->n_cols, err));
    if (!x->n_rows || !x->n_cols)
        return OC_OK;
    return be->ops->act_fwd(be, act, x, y, err);
}

int oc_nn_act_bwd(enum oc_nn_act act, const struct oc_nn_tensor *y, const struct oc_nn_tensor *dy,
                  struct oc_nn_tensor *dx, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_ACT_BWD;
    if (!y)
        return OC_ERR(err, OC_ERR_ARG, "act_bwd: missing y");
    if ((unsigned)act >= OC_NN_ACT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "act_bwd: unknown activation %d", (int)act);
    struct oc_nn_backend *be = y->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->act_bwd, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dy, "dy", OC_NN_F32, y->n_rows, y->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dx, "dx", OC_NN_F32, y->n_rows, y->n_cols, err));
    if (!y->n_rows || !y->n_cols)
        return OC_OK;
    return be->ops->act_bwd(be, act, y, dy, dx, err);
}

static int check_p(enum oc_nn_op op, float p, struct oc_err *err)
{
    if (!(p >= 0.0f && p < 1.0f))
        return OC_ERR(err, OC_ERR_ARG, "%s: probability %g outside [0, 1)", oc_nn_op_name(op),
                      (double)p);
    return OC_OK;
}

int oc_nn_dropout_fwd(const struct oc_nn_tensor *x, float p, const struct oc_nn_drop_key *key,
                      struct oc_nn_tensor *y, struct oc_nn_tensor *mask, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_DROPOUT_FWD;
    if (!x || !key)
        return OC_ERR(err, OC_ERR_ARG, "dropout_fwd: missing x or key");
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->dropout_fwd, err));
    OC_NN_TRY(check_p(op, p, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, x->n_rows, x->n_cols, err));
    if (mask)
        OC_NN_TRY(oc_nn_op_check(op, be, mask, "mask", OC_NN_U8, x->n_rows, x->n_cols, err));
    if (!x->n_rows || !x->n_cols)
        return OC_OK;
    return be->ops->dropout_fwd(be, x, p, key, y, mask, err);
}

int oc_nn_dropout_bwd(const struct oc_nn_tensor *dy, const struct oc_nn_tensor *mask, float p,
                      struct oc_nn_tensor *dx, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_DROPOUT_BWD;
    if (!dy)
        return OC_ERR(err, OC_ERR_ARG, "dropout_bwd: missing dy");
    struct oc_nn_backend *be = dy->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->dropout_bwd, err));
    OC_NN_TRY(check_p(op, p, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dy, "dy", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, mask, "mask", OC_NN_U8, dy->n_rows, dy->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dx, "dx", OC_NN_F32, dy->n_rows, dy->n_cols, err));
    if (!dy->n_rows || !dy->n_cols)
        return OC_OK;
    return be->ops->dropout_bwd(be, dy, mask, p, dx, err);
}

int oc_nn_head_mean_fwd(const struct oc_nn_tensor *x, uint32_t heads, struct oc_nn_tensor *y,
                        struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_HEAD_MEAN_FWD;
    if (!x || !y)
        return OC_ERR(err, OC_ERR_ARG, "head_mean_fwd: missing x or y");
    struct oc_nn_backend *be = x->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->head_mean_fwd, err));
    if (heads == 0)
        return OC_ERR(err, OC_ERR_ARG, "head_mean_fwd: 0 heads");
    OC_NN_TRY(oc_nn_op_check(op, be, y, "y", OC_NN_F32, x->n_rows, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, x, "x", OC_NN_F32, OC_NN_ANY, y->n_cols * heads, err));
    if (!x->n_rows || !y->n_cols)
        return OC_OK;
    return be->ops->head_mean_fwd(be, x, heads, y, err);
}

int oc_nn_head_mean_bwd(const struct oc_nn_tensor *dy, uint32_t heads, struct oc_nn_tensor *dx,
                        struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_HEAD_MEAN_BWD;
    if (!dy || !dx)
        return OC_ERR(err, OC_ERR_ARG, "head_mean_bwd: missing dy or dx");
    struct oc_nn_backend *be = dy->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->head_mean_bwd, err));
    if (heads == 0)
        return OC_ERR(err, OC_ERR_ARG, "head_mean_bwd: 0 heads");
    OC_NN_TRY(oc_nn_op_check(op, be, dy, "dy", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, dx, "dx", OC_NN_F32, dy->n_rows, dy->n_cols * heads, err));
    if (!dy->n_rows || !dy->n_cols)
        return OC_OK;
    return be->ops->head_mean_bwd(be, dy, heads, dx, err);
}
