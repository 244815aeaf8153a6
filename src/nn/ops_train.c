/*
 * ops_train.c — frontends of the training ops: the log-softmax + NLL loss
 * (labels validated and counted here, on the host) and the Adam update.
 *
 * Place in the data flow: nn; called by model.c and the tests.
 * Thread-safety: as the backend (one driving thread).
 * Ownership: operands are borrowed; labels are host memory.
 */
#include <string.h>

#include "nn_int.h"

int oc_nn_nll(const struct oc_nn_tensor *logits, const int32_t *labels,
              struct oc_nn_tensor *dlogits, struct oc_nn_loss *out, struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_NLL;
    if (!logits || !out)
        return OC_ERR(err, OC_ERR_ARG, "nll: missing logits or result");
    struct oc_nn_backend *be = logits->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->nll, err));
    OC_NN_TRY(oc_nn_op_check(op, be, logits, "logits", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(
        oc_nn_op_check(op, be, dlogits, "dlogits", OC_NN_F32, logits->n_rows, logits->n_cols, err));
    if (logits->n_rows && !labels)
        return OC_ERR(err, OC_ERR_ARG, "nll: missing labels");
    memset(out, 0, sizeof(*out));
    uint64_t n_counted = 0;
    for (uint64_t i = 0; i < logits->n_rows; i++) {
        if (labels[i] < 0)
            continue;
        if ((uint64_t)labels[i] >= logits->n_cols)
            return OC_ERR(err, OC_ERR_ARG, "nll: row %llu has label %d, but there are %llu classes",
                          (unsigned long long)i, labels[i], (unsigned long long)logits->n_cols);
        n_counted++;
    }
    if (n_counted == 0)
        return oc_nn_tensor_zero(dlogits, err);
    return be->ops->nll(be, logits, labels, n_counted, dlogits, out, err);
}

int oc_nn_adam_update(struct oc_nn_tensor *p, const struct oc_nn_tensor *g, struct oc_nn_tensor *m,
                      struct oc_nn_tensor *v, const struct oc_nn_adam *opt, uint64_t t,
                      struct oc_err *err)
{
    const enum oc_nn_op op = OC_NN_OP_ADAM;
    if (!p || !opt)
        return OC_ERR(err, OC_ERR_ARG, "adam: missing parameter or options");
    struct oc_nn_backend *be = p->backend;
    OC_NN_TRY(oc_nn_op_supported(op, be, (const void *)be->ops->adam, err));
    if (t == 0)
        return OC_ERR(err, OC_ERR_ARG, "adam: step count starts at 1");
    if (!(opt->lr >= 0.0f) || !(opt->beta1 >= 0.0f && opt->beta1 < 1.0f) ||
        !(opt->beta2 >= 0.0f && opt->beta2 < 1.0f) || !(opt->eps > 0.0f) ||
        !(opt->weight_decay >= 0.0f))
        return OC_ERR(err, OC_ERR_ARG,
                      "adam: bad options lr %g betas (%g, %g) eps %g weight decay %g",
                      (double)opt->lr, (double)opt->beta1, (double)opt->beta2, (double)opt->eps,
                      (double)opt->weight_decay);
    OC_NN_TRY(oc_nn_op_check(op, be, p, "param", OC_NN_F32, OC_NN_ANY, OC_NN_ANY, err));
    OC_NN_TRY(oc_nn_op_check(op, be, g, "grad", OC_NN_F32, p->n_rows, p->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, m, "adam m", OC_NN_F32, p->n_rows, p->n_cols, err));
    OC_NN_TRY(oc_nn_op_check(op, be, v, "adam v", OC_NN_F32, p->n_rows, p->n_cols, err));
    if (!p->n_rows || !p->n_cols)
        return OC_OK;
    return be->ops->adam(be, p, g, m, v, opt, t, err);
}
