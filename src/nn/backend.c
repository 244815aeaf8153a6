/*
 * backend.c — the registry of nn backends: the only file that knows which
 * backends exist (ggml's rule). Everything else reaches a backend through
 * struct oc_nn_backend_ops, so the CUDA backend plugs in here without
 * touching ops, layers or models.
 *
 * Place in the data flow: nn; train creates a backend once and builds models
 * on it.
 * Thread-safety: create/free from one thread; see nn.h for use.
 * Ownership: the backend borrows the pool and owns its private state.
 */
#include <string.h>

#include "nn_int.h"

static const struct oc_nn_backend_ops *backend_table(enum oc_nn_backend_kind kind)
{
    switch (kind) {
    case OC_NN_BACKEND_CPU:
        return &oc_nn_cpu_ops;
    case OC_NN_BACKEND_KIND_COUNT:
        break;
    }
    return NULL;
}

static const char *const backend_names[OC_NN_BACKEND_KIND_COUNT] = {
    [OC_NN_BACKEND_CPU] = "cpu",
};

int oc_nn_backend_kind_parse(const char *name, enum oc_nn_backend_kind *kind, struct oc_err *err)
{
    for (int k = 0; k < OC_NN_BACKEND_KIND_COUNT; k++) {
        if (strcmp(name, backend_names[k]) == 0) {
            *kind = (enum oc_nn_backend_kind)k;
            return OC_OK;
        }
    }
    if (strcmp(name, "cuda") == 0)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "nn backend 'cuda' is not built in");
    return OC_ERR(err, OC_ERR_ARG, "unknown nn backend '%s' (expected cpu)", name);
}

int oc_nn_backend_new(enum oc_nn_backend_kind kind, struct oc_pool *pool,
                      struct oc_nn_backend **out, struct oc_err *err)
{
    *out = NULL;
    const struct oc_nn_backend_ops *ops =
        (unsigned)kind < OC_NN_BACKEND_KIND_COUNT ? backend_table(kind) : NULL;
    if (!ops)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "nn backend %d is not built in", (int)kind);
    struct oc_nn_backend *be = oc_calloc(1, sizeof(*be), "nn backend", err);
    if (!be)
        return err->status;
    be->ops = ops;
    be->kind = kind;
    be->pool = pool;
    if (ops->init) {
        int rc = ops->init(be, err);
        if (rc != OC_OK) {
            oc_free(be);
            return rc;
        }
    }
    *out = be;
    return OC_OK;
}

void oc_nn_backend_free(struct oc_nn_backend *be)
{
    if (!be)
        return;
    if (be->ops->deinit)
        be->ops->deinit(be);
    oc_free(be);
}

const char *oc_nn_backend_name(const struct oc_nn_backend *be)
{
    return be->ops->name;
}

int oc_nn_backend_is_host(const struct oc_nn_backend *be)
{
    return be->ops->is_host;
}

static const char *const op_names[OC_NN_OP_COUNT] = {
    [OC_NN_OP_GEMM] = "gemm",
    [OC_NN_OP_BIAS_ADD] = "bias_add",
    [OC_NN_OP_COLSUM] = "colsum",
    [OC_NN_OP_ACT_FWD] = "act_fwd",
    [OC_NN_OP_ACT_BWD] = "act_bwd",
    [OC_NN_OP_DROPOUT_FWD] = "dropout_fwd",
    [OC_NN_OP_DROPOUT_BWD] = "dropout_bwd",
    [OC_NN_OP_AGG_FWD] = "agg_fwd",
    [OC_NN_OP_AGG_BWD] = "agg_bwd",
    [OC_NN_OP_AGG_CAT_FWD] = "agg_cat_fwd",
    [OC_NN_OP_AGG_CAT_BWD] = "agg_cat_bwd",
    [OC_NN_OP_BIAS_ACT] = "bias_act",
    [OC_NN_OP_GAT_PROJ_FWD] = "gat_proj_fwd",
    [OC_NN_OP_GAT_PROJ_BWD] = "gat_proj_bwd",
    [OC_NN_OP_GAT_SOFTMAX_FWD] = "gat_softmax_fwd",
    [OC_NN_OP_GAT_SOFTMAX_BWD] = "gat_softmax_bwd",
    [OC_NN_OP_GAT_AGG_FWD] = "gat_agg_fwd",
    [OC_NN_OP_GAT_AGG_BWD] = "gat_agg_bwd",
    [OC_NN_OP_HEAD_MEAN_FWD] = "head_mean_fwd",
    [OC_NN_OP_HEAD_MEAN_BWD] = "head_mean_bwd",
    [OC_NN_OP_NLL] = "nll",
    [OC_NN_OP_ADAM] = "adam",
    [OC_NN_OP_ROWS_GATHER] = "rows_gather",
    [OC_NN_OP_ROWS_SCATTER_ADD] = "rows_scatter_add",
    [OC_NN_OP_EDGE_ATTN_FWD] = "edge_attn_fwd",
    [OC_NN_OP_EDGE_ATTN_BWD] = "edge_attn_bwd",
    [OC_NN_OP_EDGE_MSG_FWD] = "edge_msg_fwd",
    [OC_NN_OP_EDGE_MSG_BWD] = "edge_msg_bwd",
    [OC_NN_OP_GRU_FWD] = "gru_fwd",
    [OC_NN_OP_GRU_BWD] = "gru_bwd",
    [OC_NN_OP_KG_XENT] = "kg_xent",
};

const char *oc_nn_op_name(enum oc_nn_op op)
{
    return (unsigned)op < OC_NN_OP_COUNT && op_names[op] ? op_names[op] : "?";
}

void oc_nn_backend_gemm_stats(const struct oc_nn_backend *be, uint64_t *flops, double *seconds)
{
    *flops = atomic_load(&be->gemm_flops);
    *seconds = (double)atomic_load(&be->gemm_ns) * 1e-9;
}
