/*
 * cpu_backend.c — the CPU backend: host buffers from the accountant, the
 * shared kernel scratch, and the table that binds the cpu_*.c kernels.
 *
 * Place in the data flow: nn; selected by backend.c.
 * Thread-safety: one thread drives the backend; kernels fan out on its pool.
 * OpenBLAS is set to one internal thread at init (a process-wide setting):
 * its results depend on its own thread count, so cpu_gemm.c parallelizes over
 * fixed tiles instead.
 * Ownership: buffers are 64-byte aligned oc_alloc memory owned by tensors;
 * the scratch belongs to the backend.
 */
#include <cblas.h>
#include <string.h>

#include "cpu_int.h"

static int cpu_init(struct oc_nn_backend *be, struct oc_err *err)
{
    struct oc_nn_cpu *cpu = oc_calloc(1, sizeof(*cpu), "nn cpu backend", err);
    if (!cpu)
        return err->status;
    openblas_set_num_threads(1);
    oc_nn_blas_core_warn_once();
    be->ctx = cpu;
    return OC_OK;
}

static void cpu_deinit(struct oc_nn_backend *be)
{
    struct oc_nn_cpu *cpu = be->ctx;
    if (!cpu)
        return;
    oc_nn_hbuf_free(&cpu->scratch);
    oc_free(cpu);
    be->ctx = NULL;
}

static void *cpu_buf_alloc(struct oc_nn_backend *be, size_t bytes, const char *consumer,
                           struct oc_err *err)
{
    (void)be;
    return oc_alloc_aligned(bytes, 64, consumer, err);
}

static void cpu_buf_free(struct oc_nn_backend *be, void *p)
{
    (void)be;
    oc_free(p);
}

static int cpu_buf_set(struct oc_nn_backend *be, void *dst, const void *host, size_t bytes,
                       struct oc_err *err)
{
    (void)be;
    (void)err;
    if (dst != host)
        memmove(dst, host, bytes);
    return OC_OK;
}

static int cpu_buf_get(struct oc_nn_backend *be, void *host, const void *src, size_t bytes,
                       struct oc_err *err)
{
    (void)be;
    (void)err;
    if (host != src)
        memmove(host, src, bytes);
    return OC_OK;
}

static int cpu_buf_zero(struct oc_nn_backend *be, void *dst, size_t bytes, struct oc_err *err)
{
    (void)be;
    (void)err;
    memset(dst, 0, bytes);
    return OC_OK;
}

void *oc_nn_cpu_scratch(struct oc_nn_backend *be, size_t bytes, struct oc_err *err)
{
    struct oc_nn_cpu *cpu = be->ctx;
    if (oc_nn_hbuf_reserve(&cpu->scratch, bytes, "nn cpu scratch", err) != OC_OK)
        return NULL;
    return cpu->scratch.p;
}

int oc_nn_cpu_run(struct oc_nn_backend *be, uint64_t n_tasks, uint64_t work, oc_pool_fn fn,
                  void *ctx)
{
    return oc_pool_run(work < OC_NN_CPU_INLINE_WORK ? NULL : be->pool, n_tasks, fn, ctx);
}

const struct oc_nn_backend_ops oc_nn_cpu_ops = {
    .name = "cpu",
    .is_host = 1,
    .init = cpu_init,
    .deinit = cpu_deinit,
    .buf_alloc = cpu_buf_alloc,
    .buf_free = cpu_buf_free,
    .buf_set = cpu_buf_set,
    .buf_get = cpu_buf_get,
    .buf_zero = cpu_buf_zero,
    .gemm = oc_nn_cpu_gemm,
    .bias_add = oc_nn_cpu_bias_add,
    .bias_act = oc_nn_cpu_bias_act,
    .colsum = oc_nn_cpu_colsum,
    .act_fwd = oc_nn_cpu_act_fwd,
    .act_bwd = oc_nn_cpu_act_bwd,
    .dropout_fwd = oc_nn_cpu_dropout_fwd,
    .dropout_bwd = oc_nn_cpu_dropout_bwd,
    .agg_fwd = oc_nn_cpu_agg_fwd,
    .agg_bwd = oc_nn_cpu_agg_bwd,
    .gat_proj_fwd = oc_nn_cpu_gat_proj_fwd,
    .gat_proj_bwd = oc_nn_cpu_gat_proj_bwd,
    .gat_softmax_fwd = oc_nn_cpu_gat_softmax_fwd,
    .gat_softmax_bwd = oc_nn_cpu_gat_softmax_bwd,
    .gat_agg_fwd = oc_nn_cpu_gat_agg_fwd,
    .gat_agg_bwd = oc_nn_cpu_gat_agg_bwd,
    .head_mean_fwd = oc_nn_cpu_head_mean_fwd,
    .head_mean_bwd = oc_nn_cpu_head_mean_bwd,
    .nll = oc_nn_cpu_nll,
    .adam = oc_nn_cpu_adam,
    .rows_gather = oc_nn_cpu_rows_gather,
    .rows_scatter_add = oc_nn_cpu_rows_scatter_add,
    .edge_attn_fwd = oc_nn_cpu_edge_attn_fwd,
    .edge_attn_bwd = oc_nn_cpu_edge_attn_bwd,
    .edge_msg_fwd = oc_nn_cpu_edge_msg_fwd,
    .edge_msg_bwd = oc_nn_cpu_edge_msg_bwd,
    .gru_fwd = oc_nn_cpu_gru_fwd,
    .gru_bwd = oc_nn_cpu_gru_bwd,
    .kg_xent = oc_nn_cpu_kg_xent,
};
