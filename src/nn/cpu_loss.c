/*
 * cpu_loss.c — row-wise log-softmax + negative log-likelihood on the CPU
 * (F.cross_entropy over the labeled rows), its gradient, and the argmax
 * accuracy count, in one pass over the logits.
 *
 *   lse_i = max_i + log sum_c exp(x_ic - max_i)      loss = (1/n) sum_i (lse_i - x_i,y_i)
 *   dx_ic = (exp(x_ic - lse_i) - [c == y_i]) / n     (0 for rows with y_i < 0)
 *
 * Per-row losses go to scratch and are summed in row order, so the loss does
 * not depend on the partition.
 *
 * Place in the data flow: nn CPU backend; the model's loss.
 * Thread-safety: see cpu_int.h.
 * Ownership: per-row results live in the backend scratch.
 */
#include <math.h>

#include "cpu_int.h"

struct nll_ctx {
    const float *x;
    const int32_t *labels;
    float *dx;
    double *row_loss;
    uint8_t *row_ok;
    uint64_t n_rows, n_cols;
    float inv_n;
};

static int nll_task(void *cp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct nll_ctx *c = cp;
    uint64_t r0 = task * OC_NN_CPU_ROWS, n = c->n_cols;
    uint64_t r1 = r0 + OC_NN_CPU_ROWS < c->n_rows ? r0 + OC_NN_CPU_ROWS : c->n_rows;
    for (uint64_t i = r0; i < r1; i++) {
        const float *x = c->x + i * n;
        float *dx = c->dx + i * n;
        int32_t y = c->labels[i];
        if (y < 0) {
            for (uint64_t j = 0; j < n; j++)
                dx[j] = 0.0f;
            c->row_loss[i] = 0.0;
            c->row_ok[i] = 0;
            continue;
        }
        uint64_t arg = 0;
        float mx = x[0];
        for (uint64_t j = 1; j < n; j++) {
            if (x[j] > mx) {
                mx = x[j];
                arg = j;
            }
        }
        double sum = 0.0;
        for (uint64_t j = 0; j < n; j++)
            sum += exp((double)(x[j] - mx));
        double lse = (double)mx + log(sum);
        for (uint64_t j = 0; j < n; j++)
            dx[j] = (float)exp((double)x[j] - lse) * c->inv_n;
        dx[y] -= c->inv_n;
        c->row_loss[i] = lse - (double)x[y];
        c->row_ok[i] = arg == (uint64_t)y;
    }
    return OC_OK;
}

int oc_nn_cpu_nll(struct oc_nn_backend *be, const struct oc_nn_tensor *logits,
                  const int32_t *labels, uint64_t n_counted, struct oc_nn_tensor *dlogits,
                  struct oc_nn_loss *out, struct oc_err *err)
{
    struct nll_ctx c = {.x = oc_nn_f32(logits),
                        .labels = labels,
                        .dx = oc_nn_f32(dlogits),
                        .n_rows = logits->n_rows,
                        .n_cols = logits->n_cols,
                        .inv_n = 1.0f / (float)n_counted};
    size_t bytes = (size_t)c.n_rows * (sizeof(double) + 1) + 8;
    c.row_loss = oc_nn_cpu_scratch(be, bytes, err);
    if (!c.row_loss)
        return err->status;
    c.row_ok = (uint8_t *)(c.row_loss + c.n_rows);
    int rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(c.n_rows, OC_NN_CPU_ROWS), oc_nn_cpu_size(logits),
                           nll_task, &c);
    if (rc != OC_OK)
        return rc;
    double total = 0.0;
    uint64_t n_ok = 0;
    for (uint64_t i = 0; i < c.n_rows; i++) {
        total += c.row_loss[i];
        n_ok += c.row_ok[i];
    }
    out->loss = total / (double)n_counted;
    out->n_counted = n_counted;
    out->n_correct = n_ok;
    return OC_OK;
}
