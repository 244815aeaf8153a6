/*
 * nn_int.h — private to src/nn: the backend table (ggml-style: one struct of
 * function pointers per backend), the op frontends that check shapes and
 * dispatch through it, prepared blocks (struct oc_nn_graph), layers,
 * parameters, the model record and SHA-256.
 *
 * Place in the data flow: shared by src/nn's files; tests include it to reach
 * the ops for gradient checks and reference comparisons. Nothing outside
 * src/nn and tests uses it.
 * Thread-safety: as nn.h: one thread drives a backend; kernels fan out on its
 * pool with a partition that depends only on shapes.
 * Ownership: ops write into caller tensors already sized (frontends check);
 * a prepared graph owns the arrays it derives and borrows the block's.
 *
 * Adding an op: an OC_NN_OP_ value + a member of struct oc_nn_backend_ops +
 * the CPU kernel (cpu_*.c) + a frontend (ops_*.c) + a test against a naive
 * reference and finite differences (and, with CUDA, against the CPU).
 */
#ifndef OFFCORE_NN_INT_H
#define OFFCORE_NN_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "offcore/nn.h"
#include "offcore/rng.h"

/* ---- SHA-256 (FIPS 180-4) ----------------------------------------------- */

struct oc_nn_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t block[64];
    unsigned n_block;
};

void oc_nn_sha256_init(struct oc_nn_sha256 *s);
void oc_nn_sha256_update(struct oc_nn_sha256 *s, const void *data, size_t n);
void oc_nn_sha256_final(struct oc_nn_sha256 *s, uint8_t digest[32]);
void oc_nn_sha256(const void *data, size_t n, uint8_t digest[32]);

/* ---- grow-only host buffers --------------------------------------------- */

struct oc_nn_hbuf {
    void *p;
    size_t cap;
};

/* Ensures hb holds >= bytes (grows by 1/4 headroom; contents not kept). */
int oc_nn_hbuf_reserve(struct oc_nn_hbuf *hb, size_t bytes, const char *consumer,
                       struct oc_err *err);
void oc_nn_hbuf_free(struct oc_nn_hbuf *hb);

/*
 * As oc_nn_tensor_resize, but a tensor that grows takes exactly the bytes it
 * needs (at least 64), without the quarter of headroom: for a workspace grown
 * once to its largest shape (oc_nn_redgnn_reserve), which then never grows.
 */
int oc_nn_tensor_resize_exact(struct oc_nn_tensor *t, uint64_t n_rows, uint64_t n_cols,
                              const char *consumer, struct oc_err *err);

/* ---- prepared blocks ---------------------------------------------------- */

/*
 * A block ready for the kernels: the effective CSR over destinations (with
 * self-loops applied, else the block's own arrays), and on demand its
 * transpose (CSR over sources, each entry a (dst, edge id) pair ordered by
 * dst) and the GCN normalizers. Edge ids index the effective CSR.
 */
struct oc_nn_graph {
    uint64_t n_src, n_dst, n_edges;
    const uint64_t *indptr;  /* n_dst + 1 */
    const uint32_t *indices; /* n_edges */
    int has_t;
    const uint64_t *t_indptr; /* n_src + 1 */
    const uint32_t *t_dst;    /* n_edges */
    const uint64_t *t_eid;    /* n_edges */
    int has_norm;
    const float *norm_src; /* n_src: max(out_deg, 1)^-1/2 */
    const float *norm_dst; /* n_dst: max(in_deg, 1)^-1/2 */
    struct oc_nn_hbuf b_indptr, b_indices, b_t_indptr, b_t_dst, b_t_eid, b_norm_src, b_norm_dst;
};

void oc_nn_graph_init(struct oc_nn_graph *g);
void oc_nn_graph_deinit(struct oc_nn_graph *g);
/*
 * Validates block (OC_ERR_ARG naming what is wrong) and builds the effective
 * CSR; with need_norm also the GCN normalizers. Drops any transpose built
 * for an earlier block. Reuses g's buffers.
 */
int oc_nn_graph_prepare(struct oc_nn_graph *g, const struct oc_nn_block *block, int self_loops,
                        int need_norm, struct oc_err *err);
/* Builds the transpose if not built yet for the current block. */
int oc_nn_graph_need_transpose(struct oc_nn_graph *g, struct oc_err *err);

/* ---- the backend table -------------------------------------------------- */

enum oc_nn_op {
    OC_NN_OP_GEMM,
    OC_NN_OP_BIAS_ADD,
    OC_NN_OP_COLSUM,
    OC_NN_OP_ACT_FWD,
    OC_NN_OP_ACT_BWD,
    OC_NN_OP_DROPOUT_FWD,
    OC_NN_OP_DROPOUT_BWD,
    OC_NN_OP_AGG_FWD,
    OC_NN_OP_AGG_BWD,
    OC_NN_OP_AGG_CAT_FWD,
    OC_NN_OP_AGG_CAT_BWD,
    OC_NN_OP_BIAS_ACT,
    OC_NN_OP_GAT_PROJ_FWD,
    OC_NN_OP_GAT_PROJ_BWD,
    OC_NN_OP_GAT_SOFTMAX_FWD,
    OC_NN_OP_GAT_SOFTMAX_BWD,
    OC_NN_OP_GAT_AGG_FWD,
    OC_NN_OP_GAT_AGG_BWD,
    OC_NN_OP_HEAD_MEAN_FWD,
    OC_NN_OP_HEAD_MEAN_BWD,
    OC_NN_OP_NLL,
    OC_NN_OP_ADAM,
    OC_NN_OP_ROWS_GATHER,
    OC_NN_OP_ROWS_SCATTER_ADD,
    OC_NN_OP_EDGE_ATTN_FWD,
    OC_NN_OP_EDGE_ATTN_BWD,
    OC_NN_OP_EDGE_MSG_FWD,
    OC_NN_OP_EDGE_MSG_BWD,
    OC_NN_OP_GRU_FWD,
    OC_NN_OP_GRU_BWD,
    OC_NN_OP_KG_XENT,
    OC_NN_OP_COUNT,
};

const char *oc_nn_op_name(enum oc_nn_op op);

enum oc_nn_act {
    OC_NN_ACT_RELU,
    OC_NN_ACT_ELU,  /* alpha = 1 */
    OC_NN_ACT_TANH, /* RED-GNN's 'tanh' layers */
    OC_NN_ACT_COUNT,
};

enum oc_nn_agg {
    OC_NN_AGG_SUM,  /* y_i = sum_e x_src */
    OC_NN_AGG_MEAN, /* y_i = (sum_e x_src) / deg_i, 0 when deg_i = 0 */
    OC_NN_AGG_GCN,  /* y_i = nd_i * sum_e ns_src x_src */
    OC_NN_AGG_COUNT,
};

/*
 * Dropout stream: element (r, c) keeps iff the 16-bit uniform number
 * c % 8 of Philox(seed, (mix(mix(mix(seed, layer), site), r), c / 8)) is >=
 * oc_nn_dropout_threshold(p), i.e. it is kept with probability 1 - p (to
 * 2^-16); kept values are scaled by exactly 1 / (1 - p).
 */
struct oc_nn_drop_key {
    uint64_t seed;
    uint64_t layer, site;
};

static inline uint32_t oc_nn_dropout_threshold(float p)
{
    double t = (double)p * 65536.0 + 0.5;
    return t >= 65535.0 ? 65535u : (uint32_t)t;
}

struct oc_nn_backend;
struct oc_nn_tensor;

/*
 * Relation-typed edges of one RED-GNN layer (struct oc_nn_rel_block, nn.h),
 * checked by the frontends: every src < n_src, rel < n_rel, query < n_query,
 * indptr over the n_dst targets from 0 to n_edges.
 */
struct oc_nn_rel_block;

/*
 * Kernels get tensors already checked by the frontends (shapes, dtypes, same
 * backend). Outputs never alias inputs unless the frontend says so.
 */
struct oc_nn_backend_ops {
    const char *name;
    int is_host;
    int (*init)(struct oc_nn_backend *be, struct oc_err *err);
    void (*deinit)(struct oc_nn_backend *be);
    void *(*buf_alloc)(struct oc_nn_backend *be, size_t bytes, const char *consumer,
                       struct oc_err *err);
    void (*buf_free)(struct oc_nn_backend *be, void *p);
    int (*buf_set)(struct oc_nn_backend *be, void *dst, const void *host, size_t bytes,
                   struct oc_err *err);
    int (*buf_get)(struct oc_nn_backend *be, void *host, const void *src, size_t bytes,
                   struct oc_err *err);
    int (*buf_zero)(struct oc_nn_backend *be, void *dst, size_t bytes, struct oc_err *err);

    /* c = alpha op(a) op(b) + beta c (beta == 0: c is not read) */
    int (*gemm)(struct oc_nn_backend *be, int trans_a, int trans_b, float alpha,
                const struct oc_nn_tensor *a, const struct oc_nn_tensor *b, float beta,
                struct oc_nn_tensor *c, struct oc_err *err);
    /* y[i, :] += bias[0, :] */
    int (*bias_add)(struct oc_nn_backend *be, struct oc_nn_tensor *y,
                    const struct oc_nn_tensor *bias, struct oc_err *err);
    /* y = act(x + bias[0, :]) row-wise, the same bits as bias_add then act_fwd; may run in place */
    int (*bias_act)(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                    const struct oc_nn_tensor *bias, struct oc_nn_tensor *y, struct oc_err *err);
    /* out[0, :] = sum_i x[i, :] */
    int (*colsum)(struct oc_nn_backend *be, const struct oc_nn_tensor *x, struct oc_nn_tensor *out,
                  struct oc_err *err);
    /* may run in place (y == x, dx == dy); backward uses the forward's output y */
    int (*act_fwd)(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                   struct oc_nn_tensor *y, struct oc_err *err);
    int (*act_bwd)(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *y,
                   const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx, struct oc_err *err);
    /* mask: U8 same shape, 1 = kept, or NULL when no backward follows; may run in place */
    int (*dropout_fwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *x, float p,
                       const struct oc_nn_drop_key *key, struct oc_nn_tensor *y,
                       struct oc_nn_tensor *mask, struct oc_err *err);
    int (*dropout_bwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *dy,
                       const struct oc_nn_tensor *mask, float p, struct oc_nn_tensor *dx,
                       struct oc_err *err);
    /*
     * y: n_dst x C from x: n_src x C; backward dx: n_src x C (needs the transpose).
     * cat: y is n_dst x 2C, y_i = [agg_i | x_i]; backward dy is n_dst x 2C and
     * dx_j = agg_bwd_j(dy[:, :C]) + dy_j[C:] for j < n_dst (added after the sum).
     */
    int (*agg_fwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                   int cat, const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                   struct oc_err *err);
    int (*agg_bwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                   int cat, const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx,
                   struct oc_err *err);
    /* out[j, h] = sum_f z[j, h*F + f] attn[0, h*F + f]; backward: dz += dout attn, dattn = */
    int (*gat_proj_fwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                        const struct oc_nn_tensor *attn, struct oc_nn_tensor *out,
                        struct oc_err *err);
    int (*gat_proj_bwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                        const struct oc_nn_tensor *attn, const struct oc_nn_tensor *dout,
                        struct oc_nn_tensor *dz, struct oc_nn_tensor *dattn, struct oc_err *err);
    /* a[e, h] = softmax over dst i's edges of leaky(el[src_e, h] + er[i, h]) */
    int (*gat_softmax_fwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                           const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                           float slope, struct oc_nn_tensor *a, struct oc_err *err);
    /* da is overwritten with the gradient of the pre-softmax scores */
    int (*gat_softmax_bwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                           const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                           float slope, const struct oc_nn_tensor *a, struct oc_nn_tensor *da,
                           struct oc_nn_tensor *del, struct oc_nn_tensor *der, struct oc_err *err);
    /* y[i, h*F + f] = sum_e a[e, h] z[src_e, h*F + f]; backward dz (overwritten), da */
    int (*gat_agg_fwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                       const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                       struct oc_nn_tensor *y, struct oc_err *err);
    int (*gat_agg_bwd)(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                       const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                       const struct oc_nn_tensor *dy, struct oc_nn_tensor *dz,
                       struct oc_nn_tensor *da, struct oc_err *err);
    /* y[i, f] = mean_h x[i, h*F + f] */
    int (*head_mean_fwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *x, uint32_t heads,
                         struct oc_nn_tensor *y, struct oc_err *err);
    int (*head_mean_bwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *dy, uint32_t heads,
                         struct oc_nn_tensor *dx, struct oc_err *err);
    /* labels: host, validated and counted (n_counted > 0 or dlogits zeroed) by the frontend */
    int (*nll)(struct oc_nn_backend *be, const struct oc_nn_tensor *logits, const int32_t *labels,
               uint64_t n_counted, struct oc_nn_tensor *dlogits, struct oc_nn_loss *out,
               struct oc_err *err);
    int (*adam)(struct oc_nn_backend *be, struct oc_nn_tensor *p, const struct oc_nn_tensor *g,
                struct oc_nn_tensor *m, struct oc_nn_tensor *v, const struct oc_nn_adam *opt,
                uint64_t t, struct oc_err *err);

    /* y[i, :] = x[idx[i], :] (idx: host, y->n_rows entries) */
    int (*rows_gather)(struct oc_nn_backend *be, const struct oc_nn_tensor *x, const uint32_t *idx,
                       struct oc_nn_tensor *y, struct oc_err *err);
    /* y[idx[i], :] += x[i, :] in i order (idx: host, x->n_rows entries) */
    int (*rows_scatter_add)(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                            const uint32_t *idx, struct oc_nn_tensor *y, struct oc_err *err);
    /*
     * RED-GNN attention: hid[e] = relu(ps[src_e] + pr[rel_e] + pq[query_e]) (E x A),
     * alpha[e] = sigmoid(hid[e] . w + b) (E x 1). Backward: dpre (E x A, gradient of the
     * pre-ReLU sum, to be scattered by the caller), dw (1 x A), db (1 x 1), overwritten.
     */
    int (*edge_attn_fwd)(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                         const struct oc_nn_tensor *ps, const struct oc_nn_tensor *pr,
                         const struct oc_nn_tensor *pq, const struct oc_nn_tensor *w,
                         const struct oc_nn_tensor *b, struct oc_nn_tensor *hid,
                         struct oc_nn_tensor *alpha, struct oc_err *err);
    int (*edge_attn_bwd)(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                         const struct oc_nn_tensor *hid, const struct oc_nn_tensor *alpha,
                         const struct oc_nn_tensor *dalpha, const struct oc_nn_tensor *w,
                         struct oc_nn_tensor *dpre, struct oc_nn_tensor *dw,
                         struct oc_nn_tensor *db, struct oc_err *err);
    /*
     * y[i] = sum over edges e into i of alpha[e] (h[src_e] + r[rel_e]). Backward:
     * dh, dr accumulated (+=), dalpha[e] = dy[dst_e] . (h[src_e] + r[rel_e]) (overwritten).
     */
    int (*edge_msg_fwd)(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                        const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                        const struct oc_nn_tensor *alpha, struct oc_nn_tensor *y,
                        struct oc_err *err);
    int (*edge_msg_bwd)(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                        const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                        const struct oc_nn_tensor *alpha, const struct oc_nn_tensor *dy,
                        struct oc_nn_tensor *dh, struct oc_nn_tensor *dr,
                        struct oc_nn_tensor *dalpha, struct oc_err *err);
    /*
     * torch.nn.GRU, one step: gi = x W_ih^T + b_ih, gh = h W_hh^T + b_hh (n x 3H, gates
     * r|z|n); r = sig(gi_r + gh_r), z = sig(gi_z + gh_z), n = tanh(gi_n + r gh_n),
     * hn = (1 - z) n + z h. gates (n x 3H) keeps r|z|n for backward, which writes dgi,
     * dgh (n x 3H) and dh (n x H), overwritten.
     */
    int (*gru_fwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *gi,
                   const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                   struct oc_nn_tensor *hn, struct oc_nn_tensor *gates, struct oc_err *err);
    int (*gru_bwd)(struct oc_nn_backend *be, const struct oc_nn_tensor *gates,
                   const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                   const struct oc_nn_tensor *dhn, struct oc_nn_tensor *dgi,
                   struct oc_nn_tensor *dgh, struct oc_nn_tensor *dh, struct oc_err *err);
    /*
     * RED-GNN's loss over all n_entities candidates of each query: the query's
     * scored nodes are rows [qptr[q], qptr[q+1]) of scores (n x 1), every other
     * entity scores 0; pos[q] is the row of the answer or -1 (unreached: score 0).
     * loss = sum_q (max_q + log sum_e exp(s_e - max_q) - s_pos); dscores overwritten.
     */
    int (*kg_xent)(struct oc_nn_backend *be, const struct oc_nn_tensor *scores,
                   const uint64_t *qptr, const int64_t *pos, uint64_t n_query, uint64_t n_entities,
                   struct oc_nn_tensor *dscores, double *loss, struct oc_err *err);
};

struct oc_nn_backend {
    const struct oc_nn_backend_ops *ops;
    enum oc_nn_backend_kind kind;
    struct oc_pool *pool; /* borrowed; NULL = inline */
    void *ctx;            /* backend private state */
    /* dense work done through oc_nn_gemm (benchmarks report the fraction of sgemm peak) */
    _Atomic uint64_t gemm_flops;
    _Atomic uint64_t gemm_ns;
};

/* The CPU backend's table (cpu_backend.c). backend.c is the only user. */
extern const struct oc_nn_backend_ops oc_nn_cpu_ops;

/* ---- op frontends (ops_dense.c, ops_graph.c, ops_train.c) --------------- */

/* Returns the status of expr when it is not OC_OK. */
#define OC_NN_TRY(expr)   \
    do {                  \
        int rc_ = (expr); \
        if (rc_ != OC_OK) \
            return rc_;   \
    } while (0)

/* Wildcard for a dimension in oc_nn_op_check. */
#define OC_NN_ANY UINT64_MAX

/*
 * Frontend checks (ops_dense.c): t exists, lives on be, has dtype and the
 * shape n_rows x n_cols (OC_NN_ANY = any), and has memory when not empty.
 * Errors are OC_ERR_ARG naming the op, the tensor and both shapes.
 */
int oc_nn_op_check(enum oc_nn_op op, const struct oc_nn_backend *be, const struct oc_nn_tensor *t,
                   const char *name, enum oc_nn_dtype dtype, uint64_t n_rows, uint64_t n_cols,
                   struct oc_err *err);
/* OC_ERR_UNSUPPORTED naming the backend and op when the table lacks fn. */
int oc_nn_op_supported(enum oc_nn_op op, const struct oc_nn_backend *be, const void *fn,
                       struct oc_err *err);

int oc_nn_gemm(int trans_a, int trans_b, float alpha, const struct oc_nn_tensor *a,
               const struct oc_nn_tensor *b, float beta, struct oc_nn_tensor *c,
               struct oc_err *err);
int oc_nn_bias_add(struct oc_nn_tensor *y, const struct oc_nn_tensor *bias, struct oc_err *err);
/* y = act(x + bias): bias_add and act_fwd in one pass (same bits); y may be x. */
int oc_nn_bias_act(enum oc_nn_act act, const struct oc_nn_tensor *x,
                   const struct oc_nn_tensor *bias, struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_colsum(const struct oc_nn_tensor *x, struct oc_nn_tensor *out, struct oc_err *err);
int oc_nn_act_fwd(enum oc_nn_act act, const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                  struct oc_err *err);
int oc_nn_act_bwd(enum oc_nn_act act, const struct oc_nn_tensor *y, const struct oc_nn_tensor *dy,
                  struct oc_nn_tensor *dx, struct oc_err *err);
/* mask may be NULL when no backward goes through this dropout (a faster path). */
int oc_nn_dropout_fwd(const struct oc_nn_tensor *x, float p, const struct oc_nn_drop_key *key,
                      struct oc_nn_tensor *y, struct oc_nn_tensor *mask, struct oc_err *err);
int oc_nn_dropout_bwd(const struct oc_nn_tensor *dy, const struct oc_nn_tensor *mask, float p,
                      struct oc_nn_tensor *dx, struct oc_err *err);
int oc_nn_head_mean_fwd(const struct oc_nn_tensor *x, uint32_t heads, struct oc_nn_tensor *y,
                        struct oc_err *err);
int oc_nn_head_mean_bwd(const struct oc_nn_tensor *dy, uint32_t heads, struct oc_nn_tensor *dx,
                        struct oc_err *err);

int oc_nn_agg_fwd(const struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *x,
                  struct oc_nn_tensor *y, struct oc_err *err);
/* Backward frontends build the graph's transpose when missing. */
int oc_nn_agg_bwd(struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *dy,
                  struct oc_nn_tensor *dx, struct oc_err *err);
/*
 * SAGE's concatenation fused into the aggregation: y (n_dst x 2C) = [agg(x) |
 * x[:n_dst]], so one GEMM with [W_neigh; W_self] does both transforms.
 * Backward: dx (n_src x C) = agg_bwd(dy[:, :C]) + dy[:, C:] on the dst rows.
 */
int oc_nn_agg_cat_fwd(const struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *x,
                      struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_agg_cat_bwd(struct oc_nn_graph *g, enum oc_nn_agg agg, const struct oc_nn_tensor *dy,
                      struct oc_nn_tensor *dx, struct oc_err *err);
int oc_nn_gat_proj_fwd(const struct oc_nn_tensor *z, const struct oc_nn_tensor *attn,
                       struct oc_nn_tensor *out, struct oc_err *err);
int oc_nn_gat_proj_bwd(const struct oc_nn_tensor *z, const struct oc_nn_tensor *attn,
                       const struct oc_nn_tensor *dout, struct oc_nn_tensor *dz,
                       struct oc_nn_tensor *dattn, struct oc_err *err);
int oc_nn_gat_softmax_fwd(const struct oc_nn_graph *g, const struct oc_nn_tensor *el,
                          const struct oc_nn_tensor *er, float slope, struct oc_nn_tensor *a,
                          struct oc_err *err);
int oc_nn_gat_softmax_bwd(struct oc_nn_graph *g, const struct oc_nn_tensor *el,
                          const struct oc_nn_tensor *er, float slope, const struct oc_nn_tensor *a,
                          struct oc_nn_tensor *da, struct oc_nn_tensor *del,
                          struct oc_nn_tensor *der, struct oc_err *err);
int oc_nn_gat_agg_fwd(const struct oc_nn_graph *g, const struct oc_nn_tensor *a,
                      const struct oc_nn_tensor *z, struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_gat_agg_bwd(struct oc_nn_graph *g, const struct oc_nn_tensor *a,
                      const struct oc_nn_tensor *z, const struct oc_nn_tensor *dy,
                      struct oc_nn_tensor *dz, struct oc_nn_tensor *da, struct oc_err *err);

/* labels: host, one per logits row, < 0 = not counted. */
int oc_nn_nll(const struct oc_nn_tensor *logits, const int32_t *labels,
              struct oc_nn_tensor *dlogits, struct oc_nn_loss *out, struct oc_err *err);
int oc_nn_adam_update(struct oc_nn_tensor *p, const struct oc_nn_tensor *g, struct oc_nn_tensor *m,
                      struct oc_nn_tensor *v, const struct oc_nn_adam *opt, uint64_t t,
                      struct oc_err *err);

/* RED-GNN op frontends (ops_kg.c): check shapes and the edge arrays, then dispatch. */
int oc_nn_rows_gather(const struct oc_nn_tensor *x, const uint32_t *idx, struct oc_nn_tensor *y,
                      struct oc_err *err);
int oc_nn_rows_scatter_add(const struct oc_nn_tensor *x, const uint32_t *idx,
                           struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_edge_attn_fwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *ps,
                        const struct oc_nn_tensor *pr, const struct oc_nn_tensor *pq,
                        const struct oc_nn_tensor *w, const struct oc_nn_tensor *b,
                        struct oc_nn_tensor *hid, struct oc_nn_tensor *alpha, struct oc_err *err);
int oc_nn_edge_attn_bwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *hid,
                        const struct oc_nn_tensor *alpha, const struct oc_nn_tensor *dalpha,
                        const struct oc_nn_tensor *w, struct oc_nn_tensor *dpre,
                        struct oc_nn_tensor *dw, struct oc_nn_tensor *db, struct oc_err *err);
int oc_nn_edge_msg_fwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *h,
                       const struct oc_nn_tensor *r, const struct oc_nn_tensor *alpha,
                       struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_edge_msg_bwd(const struct oc_nn_rel_block *g, const struct oc_nn_tensor *h,
                       const struct oc_nn_tensor *r, const struct oc_nn_tensor *alpha,
                       const struct oc_nn_tensor *dy, struct oc_nn_tensor *dh,
                       struct oc_nn_tensor *dr, struct oc_nn_tensor *dalpha, struct oc_err *err);
int oc_nn_gru_fwd(const struct oc_nn_tensor *gi, const struct oc_nn_tensor *gh,
                  const struct oc_nn_tensor *h, struct oc_nn_tensor *hn, struct oc_nn_tensor *gates,
                  struct oc_err *err);
int oc_nn_gru_bwd(const struct oc_nn_tensor *gates, const struct oc_nn_tensor *gh,
                  const struct oc_nn_tensor *h, const struct oc_nn_tensor *dhn,
                  struct oc_nn_tensor *dgi, struct oc_nn_tensor *dgh, struct oc_nn_tensor *dh,
                  struct oc_err *err);
int oc_nn_kg_xent(const struct oc_nn_tensor *scores, const uint64_t *qptr, const int64_t *pos,
                  uint64_t n_query, uint64_t n_entities, struct oc_nn_tensor *dscores, double *loss,
                  struct oc_err *err);

/* ---- parameters and layers (layer_*.c, model.c) ------------------------- */

struct oc_nn_param {
    char name[32];
    struct oc_nn_tensor value, grad, adam_m, adam_v;
};

/* Parameter slots of a layer (unused ones are NULL). */
enum oc_nn_lp {
    OC_NN_LP_W_SELF,  /* SAGE fc_self, in x out */
    OC_NN_LP_W_NEIGH, /* SAGE fc_neigh, in x out */
    OC_NN_LP_W,       /* GCN weight in x out; GAT fc in x heads*F */
    OC_NN_LP_ATTN_L,  /* GAT 1 x heads*F */
    OC_NN_LP_ATTN_R,  /* GAT 1 x heads*F */
    OC_NN_LP_BIAS,    /* 1 x out (GAT: 1 x heads*F) */
    OC_NN_LP_COUNT,
};

/* Workspace slots of a layer (grown on demand, reused). */
enum oc_nn_lws {
    OC_NN_LWS_XD,    /* dropped input, n_src x in */
    OC_NN_LWS_XMASK, /* its mask (U8) */
    OC_NN_LWS_Z,     /* projected features, n_src x (out | heads*F) */
    OC_NN_LWS_N,     /* aggregated input, n_dst x in (SAGE: [agg | self], n_dst x 2 in) */
    OC_NN_LWS_PRE,   /* pre-activation output, n_dst x (out | heads*F) */
    OC_NN_LWS_EL,    /* GAT n_src x heads */
    OC_NN_LWS_ER,    /* GAT n_dst x heads */
    OC_NN_LWS_ATT,   /* GAT edge softmax, n_edges x heads */
    OC_NN_LWS_ATTD,  /* GAT dropped attention */
    OC_NN_LWS_AMASK, /* its mask (U8) */
    OC_NN_LWS_OUT,   /* layer output of the training forward */
    OC_NN_LWS_DPRE,  /* backward buffers */
    OC_NN_LWS_DZ,
    OC_NN_LWS_DN, /* gradient of N */
    OC_NN_LWS_DATT,
    OC_NN_LWS_DEL,
    OC_NN_LWS_DER,
    OC_NN_LWS_DX, /* gradient w.r.t. the layer input, handed to the layer below */
    OC_NN_LWS_COUNT,
};

/* Initializes a workspace array (U8 for the mask slots). */
void oc_nn_lws_init(struct oc_nn_tensor ws[OC_NN_LWS_COUNT], struct oc_nn_backend *be);
void oc_nn_lws_deinit(struct oc_nn_tensor ws[OC_NN_LWS_COUNT]);

struct oc_nn_layer {
    enum oc_nn_model_kind kind;
    uint32_t index;
    int last;                 /* the output layer: no activation (GAT: head mean) */
    uint64_t in_dim, out_dim; /* out_dim: width of the layer's output rows */
    uint32_t heads;           /* GAT heads of this layer, else 1 */
    uint64_t head_dim;        /* GAT F */
    float p_drop, p_attn, slope;
    struct oc_nn_param *p[OC_NN_LP_COUNT];
    /*
     * SAGE: [W_neigh; W_self] (2 in x out) and its gradient, one buffer each;
     * the fc_neigh / fc_self parameters are row views of them, so the layer's
     * one GEMM over [h_neigh | h_self] needs no copy. Owned by the model.
     */
    struct oc_nn_tensor wcat, gcat;
    struct oc_nn_tensor *ws; /* OC_NN_LWS_COUNT slots owned by the model */
    /* what the last forward did, for backward */
    const struct oc_nn_tensor *xd; /* input after dropout (x itself when none) */
    int attn_dropped;
};

/* What a forward pass needs besides the data. */
struct oc_nn_fwd {
    int training;
    uint64_t drop_seed; /* from (model seed, epoch, batch) */
};

/* Dropout sites within a layer (stream ids). */
enum oc_nn_site {
    OC_NN_SITE_INPUT,
    OC_NN_SITE_ATTN,
    OC_NN_SITE_COUNT,
};

/*
 * Per kind (layer_sage.c, layer_gcn.c, layer_gat.c). forward writes y
 * (n_dst x out_dim); backward reads the forward's x, y and dy, writes the
 * parameter gradients and, if want_dx, ws[DX] (n_src x in_dim).
 */
int oc_nn_sage_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                       const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                       const struct oc_nn_fwd *fwd, struct oc_err *err);
int oc_nn_sage_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                        const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err);
int oc_nn_gcn_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                      const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      const struct oc_nn_fwd *fwd, struct oc_err *err);
int oc_nn_gcn_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err);
int oc_nn_gat_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                      const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      const struct oc_nn_fwd *fwd, struct oc_err *err);
int oc_nn_gat_backward(struct oc_nn_layer *l, struct oc_nn_graph *g, const struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *dy, int want_dx, struct oc_err *err);

/* Shared layer steps (layer.c). */
/* Sizes ws[slot] to n_rows x n_cols; errors name the layer. */
int oc_nn_layer_ws(struct oc_nn_layer *l, enum oc_nn_lws slot, uint64_t n_rows, uint64_t n_cols,
                   struct oc_err *err);
/* Input dropout (training, p_drop > 0): sets l->xd to x or to its dropped copy ws[XD]. */
int oc_nn_layer_drop_input(struct oc_nn_layer *l, const struct oc_nn_tensor *x,
                           const struct oc_nn_fwd *fwd, struct oc_err *err);
/* ws[DX] holds d/d(xd); turns it into d/dx through the input dropout (in place). */
int oc_nn_layer_input_grad(struct oc_nn_layer *l, struct oc_err *err);
/*
 * pre += bias, then y = act(pre) for hidden layers (one pass, y written, pre
 * left as it was: same bits as bias_add then act_fwd), or the bias alone
 * (pre is y) for SAGE/GCN output layers, or pre += bias and the mean over
 * heads for a GAT output layer.
 */
int oc_nn_layer_finish(struct oc_nn_layer *l, struct oc_nn_tensor *pre, struct oc_nn_tensor *y,
                       struct oc_err *err);
/* The gradient w.r.t. the pre-activation: dy itself (SAGE/GCN output) or ws[DPRE]. */
int oc_nn_layer_finish_bwd(struct oc_nn_layer *l, const struct oc_nn_tensor *y,
                           const struct oc_nn_tensor *dy, const struct oc_nn_tensor **dpre,
                           struct oc_err *err);
/*
 * GCN/SAGE: target = agg(xd) W (overwritten), in DGL's cheaper order: W first
 * into ws[Z] (n_src rows) when in_dim > out_dim, else the aggregation first
 * into ws[N] (n_dst rows), which the backward step reads again.
 */
int oc_nn_layer_agg_linear(struct oc_nn_layer *l, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                           const struct oc_nn_tensor *w, struct oc_nn_tensor *target,
                           struct oc_err *err);
/*
 * Its gradient given dpre: pw->grad (overwritten) and, with want_dx, ws[DX]
 * sized n_src x in_dim and set to d/d(xd) of this term (overwritten).
 */
int oc_nn_layer_agg_linear_bwd(struct oc_nn_layer *l, struct oc_nn_graph *g, enum oc_nn_agg agg,
                               const struct oc_nn_tensor *dpre, struct oc_nn_param *pw, int want_dx,
                               struct oc_err *err);

/* ---- the model record (model.c, model_state.c) -------------------------- */

struct oc_nn_model {
    struct oc_nn_backend *be;
    struct oc_nn_model_config cfg;
    struct oc_nn_layer *layers;
    struct oc_nn_graph *graphs; /* per layer, for the current batch */
    struct oc_nn_graph infer_graph;
    struct oc_nn_tensor (*ws)[OC_NN_LWS_COUNT]; /* per layer */
    struct oc_nn_tensor infer_ws[OC_NN_LWS_COUNT];
    struct oc_nn_param *params;
    uint32_t n_params;
    uint64_t adam_t;
    /* the pending batch: graphs[] borrow its blocks' arrays, layers[0].xd may be its input */
    int have_forward, have_loss, have_backward;
    struct oc_nn_tensor dlogits;
    struct oc_nn_hist hist; /* the pending batch's replaced last-layer inputs (borrowed) */
};

/* Parameter i (tests reach values and gradients through it). */
struct oc_nn_param *oc_nn_model_param_at(struct oc_nn_model *m, uint32_t i);

#endif
