/*
 * nn.h — the neural-network module: tensors over backend-owned buffers, a
 * backend table (CPU now; CUDA plugs in behind the same table), and the three
 * GNN models with DGL's layer semantics (GraphSAGE/SAGEConv-mean, GCN/GraphConv,
 * GAT/GATConv), their backward pass, the loss, Adam, checkpoints and a
 * parameter hash.
 *
 * Place in the data flow: pipeline/train ──► nn. nn depends only on core:
 * train fills struct oc_nn_block views from the sampler's batch and hands
 * over the gathered input features as a tensor.
 *
 * One training step (what train calls):
 *
 *   oc_nn_model_forward(m, blocks, x, &step, &logits, err)   step = {1, epoch, batch}
 *   oc_nn_model_loss(m, labels, &loss, err)                  mean NLL over labels >= 0
 *   oc_nn_model_backward(m, err)                             gradients of that loss
 *   oc_nn_model_adam_step(m, &adam, err)                     torch.optim.Adam, L2 decay
 *
 *   block l feeds layer l:  x ──► [layer 0 over block 0] ──► ... ──► [layer L-1 over block L-1] ──► logits
 *   rows of x = block 0's source nodes; rows of layer l's output = block l's
 *   destination nodes = block l+1's source nodes; logits rows = the seeds.
 *
 * Determinism: every kernel splits its work into pieces whose boundaries
 * depend only on the shapes (never on the thread count) and reduces partial
 * results in a fixed order, with no float atomics; dropout masks come from
 * the counter RNG keyed by (seed, epoch, batch, layer, site, row). So the same
 * seed and batches give bit-identical weights at any number of threads.
 *
 * Thread-safety: a backend, its tensors and the models on it are used by one
 * thread at a time (the trainer); kernels fan out internally on the backend's
 * pool. Two backends on different pools may run concurrently.
 * Ownership: the backend borrows its pool; a model borrows its backend; both
 * must outlive what uses them. Blocks and the input tensor passed to
 * oc_nn_model_forward are borrowed until the matching backward returns.
 */
#ifndef OFFCORE_NN_H
#define OFFCORE_NN_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"
#include "offcore/thread.h"

/* ---- backends ----------------------------------------------------------- */

enum oc_nn_backend_kind {
    OC_NN_BACKEND_CPU,
    OC_NN_BACKEND_KIND_COUNT,
};

struct oc_nn_backend;

/*
 * Creates a backend. pool (borrowed, may be NULL = calling thread only) runs
 * the kernels. The CPU backend sets OpenBLAS to one internal thread
 * (process-wide) and parallelizes GEMM itself over fixed tiles, because
 * OpenBLAS's results depend on its thread count. OC_ERR_UNSUPPORTED for a
 * backend not built in.
 */
int oc_nn_backend_new(enum oc_nn_backend_kind kind, struct oc_pool *pool,
                      struct oc_nn_backend **out, struct oc_err *err);
void oc_nn_backend_free(struct oc_nn_backend *be);
/* "cpu", ... */
const char *oc_nn_backend_name(const struct oc_nn_backend *be);
/* Parses "cpu" (and later "cuda"). */
int oc_nn_backend_kind_parse(const char *name, enum oc_nn_backend_kind *kind, struct oc_err *err);
/* Dense work so far: floating-point operations of every GEMM and the seconds they took. */
void oc_nn_backend_gemm_stats(const struct oc_nn_backend *be, uint64_t *flops, double *seconds);
/* Whether tensor data pointers of this backend are host memory (CPU: yes). */
int oc_nn_backend_is_host(const struct oc_nn_backend *be);

/*
 * The OpenBLAS core ("SkylakeX", "Haswell", "Prescott", ...) whose kernels the
 * CPU backend's GEMMs run. Different cores sum in different orders, so weights
 * are bit-identical only under the same one.
 */
const char *oc_nn_blas_core(void);
/*
 * The core OpenBLAS should have chosen, when it fell back to one without AVX2
 * on a CPU with AVX2 or AVX-512 (an OpenBLAS older than the CPU: Debian 12's
 * runs SSE3 kernels on Emerald Rapids, a fifth of the speed): "SkylakeX" or
 * "Haswell". NULL when its choice stands or OPENBLAS_CORETYPE is set.
 */
const char *oc_nn_blas_core_advice(void);
/*
 * For a program's main(), before it starts threads of its own: when the
 * advice above names a core, sets OPENBLAS_CORETYPE to it and executes the
 * program again, by its own path, with the same arguments (OpenBLAS reads the
 * variable only when loaded). Returns when there is nothing to do, when the
 * program was started through the dynamic loader, or when the restart failed;
 * a CPU backend then logs one warning.
 */
void oc_nn_blas_core_reexec(char **argv);

/* ---- tensors ------------------------------------------------------------ */

enum oc_nn_dtype {
    OC_NN_F32,
    OC_NN_U8, /* dropout masks */
    OC_NN_DTYPE_COUNT,
};

/* Bytes per element of a dtype. */
size_t oc_nn_dtype_size(enum oc_nn_dtype dtype);

/*
 * A dense row-major matrix of n_rows x n_cols elements whose memory belongs
 * to the backend (host memory on CPU, device memory on CUDA). A tensor either
 * owns its buffer (cap_bytes > 0, grown on demand and reused) or is a view of
 * memory owned elsewhere (cap_bytes == 0). Caller storage: _init / _deinit.
 */
struct oc_nn_tensor {
    struct oc_nn_backend *backend;
    enum oc_nn_dtype dtype;
    uint64_t n_rows, n_cols;
    void *data;
    size_t cap_bytes; /* bytes owned at data; 0 for a view or an empty tensor */
};

/* An empty tensor (0 x 0, no buffer). */
void oc_nn_tensor_init(struct oc_nn_tensor *t, struct oc_nn_backend *be, enum oc_nn_dtype dtype);
/* Frees an owned buffer; the tensor is empty again. Views are only emptied. */
void oc_nn_tensor_deinit(struct oc_nn_tensor *t);
/*
 * Sets the shape to n_rows x n_cols, growing the owned buffer when it is too
 * small (contents are then undefined); never shrinks, so a steady-state loop
 * stops allocating. Fails on a view. consumer names the memory for the
 * accountant.
 */
int oc_nn_tensor_resize(struct oc_nn_tensor *t, uint64_t n_rows, uint64_t n_cols,
                        const char *consumer, struct oc_err *err);
/* Bytes of the current shape. */
size_t oc_nn_tensor_bytes(const struct oc_nn_tensor *t);
/* A view of rows [row0, row0 + n_rows) of t (no copy; t keeps ownership). */
int oc_nn_tensor_view_rows(const struct oc_nn_tensor *t, uint64_t row0, uint64_t n_rows,
                           struct oc_nn_tensor *view, struct oc_err *err);
/*
 * A view over caller host memory (host backends only, else
 * OC_ERR_UNSUPPORTED: use oc_nn_tensor_set to upload). data must stay valid
 * while the view is used.
 */
int oc_nn_tensor_wrap(struct oc_nn_backend *be, enum oc_nn_dtype dtype, void *data, uint64_t n_rows,
                      uint64_t n_cols, struct oc_nn_tensor *view, struct oc_err *err);
/* Copies oc_nn_tensor_bytes(t) bytes from host memory into t / from t to host memory. */
int oc_nn_tensor_set(struct oc_nn_tensor *t, const void *host, struct oc_err *err);
int oc_nn_tensor_get(const struct oc_nn_tensor *t, void *host, struct oc_err *err);
/* Sets every element to zero. */
int oc_nn_tensor_zero(struct oc_nn_tensor *t, struct oc_err *err);

/* ---- blocks ------------------------------------------------------------- */

/*
 * One bipartite message-flow block (DGL MFG) as the sampler produces it:
 * destination nodes are local ids [0, n_dst), a prefix of the source nodes
 * [0, n_src); the in-neighbors of dst i are the local source ids
 * indices[indptr[i] .. indptr[i+1]). Arrays are borrowed host memory.
 * src_out_deg is optional (NULL = count within the block): the out-degree of
 * each source node in the whole graph, self-edges not counted (the self-loop
 * rule adds 1 to every entry), for GCN's source normalization when exact
 * full-graph semantics are wanted over a chunk of destinations (layer-wise
 * inference: DGL would count only the edges inside the chunk's block).
 */
struct oc_nn_block {
    uint64_t n_src, n_dst;
    const uint64_t *indptr;  /* n_dst + 1, indptr[0] == 0, nondecreasing */
    const uint32_t *indices; /* indptr[n_dst] ids, each < n_src */
    const uint64_t *src_out_deg;
};

/*
 * One layer of relation-typed message passing (RED-GNN, a KG subgraph layer):
 * edges into each of n_dst targets are indptr ranges; edge e comes from
 * source row src[e] (< n_src) with relation rel[e] (< n_rel) and belongs to
 * query query[e] (< n_query). Arrays are borrowed host memory.
 */
struct oc_nn_rel_block {
    uint64_t n_src, n_dst, n_edges, n_rel, n_query;
    const uint64_t *indptr; /* n_dst + 1 */
    const uint32_t *src, *rel, *query;
};

/* ---- models ------------------------------------------------------------- */

enum oc_nn_model_kind {
    OC_NN_MODEL_SAGE, /* SAGEConv 'mean': fc_self(h_dst) + fc_neigh(mean h_src) + bias */
    OC_NN_MODEL_GCN,  /* GraphConv norm='both': D_dst^-1/2 A D_src^-1/2 h W + bias */
    OC_NN_MODEL_GAT, /* GATConv: multi-head attention, heads concatenated / averaged at the output */
    OC_NN_MODEL_KIND_COUNT, /* the node-classification models end here */
    /* RED-GNN's parameter set (KG reasoning), made with oc_nn_redgnn_new, not _model_new */
    OC_NN_MODEL_REDGNN = OC_NN_MODEL_KIND_COUNT,
};

/* "sage", "gcn", "gat", "redgnn". Parse accepts the node-classification kinds only. */
const char *oc_nn_model_kind_name(enum oc_nn_model_kind kind);
int oc_nn_model_kind_parse(const char *name, enum oc_nn_model_kind *kind, struct oc_err *err);

/*
 * Self-loops (self_loops = 1): every destination i aggregates over its block
 * edges minus any explicit edge i -> i, plus exactly one self-edge from source
 * i (dst i is source i, since destinations are a prefix of the sources). On a
 * full-neighbor block this is DGL's remove_self_loop + add_self_loop; on a
 * sampled block the self-edge is always present. GCN degrees count the edges
 * so obtained: in-degree of dst i = its edges (+1), out-degree of src j = the
 * edges leaving j in the block (+1 when j < n_dst), each clamped to >= 1.
 *
 * Dropout: in_dropout on the input of layer 0, dropout on the input of every
 * later layer (DGL examples: SAGE and GCN drop only the hidden features,
 * GAT's feat_drop drops each layer's input).
 * Activations: ReLU after hidden SAGE/GCN layers, ELU after hidden GAT
 * layers, none at the output (GAT: mean over out_heads there).
 */
struct oc_nn_model_config {
    enum oc_nn_model_kind kind;
    uint32_t n_layers; /* >= 1 */
    uint64_t in_dim, hidden, n_classes;
    uint32_t heads;       /* GAT: heads of hidden layers (output width hidden * heads) */
    uint32_t out_heads;   /* GAT: heads of the output layer (averaged) */
    float in_dropout;     /* [0, 1) */
    float dropout;        /* [0, 1) */
    float attn_dropout;   /* GAT, [0, 1) */
    float negative_slope; /* GAT LeakyReLU */
    int self_loops;
    uint64_t seed; /* parameter init and dropout streams */
};

/*
 * The DGL example defaults for kind (2 layers; SAGE: hidden 16, dropout 0.5
 * on hidden; GCN: hidden 16, dropout 0.5 on hidden, self-loops; GAT:
 * hidden 8 x 8 heads, 1 output head, feat/attn dropout 0.6, slope 0.2,
 * self-loops). in_dim and n_classes are left 0 for the caller; seed 0.
 */
void oc_nn_model_config_default(enum oc_nn_model_kind kind, struct oc_nn_model_config *cfg);

struct oc_nn_model;

/*
 * Creates a model on be with parameters initialized as DGL does, drawn from
 * the counter RNG keyed by (seed, layer, parameter): SAGEConv fc_self/fc_neigh
 * xavier_uniform(gain sqrt 2); GraphConv weight xavier_uniform(gain 1);
 * GATConv fc and attn_l/attn_r xavier_normal(gain sqrt 2); biases zero.
 * Adam state zero. OC_ERR_ARG naming the field for a bad config.
 */
int oc_nn_model_new(struct oc_nn_backend *be, const struct oc_nn_model_config *cfg,
                    struct oc_nn_model **out, struct oc_err *err);
void oc_nn_model_free(struct oc_nn_model *m);
const struct oc_nn_model_config *oc_nn_model_config(const struct oc_nn_model *m);

/* What one forward pass is: training (dropout on) and the dropout stream ids. */
struct oc_nn_step {
    int training;
    uint64_t epoch, batch;
};

/*
 * Forward pass over blocks[0 .. n_layers). x: blocks[0].n_src x in_dim F32 on
 * the model's backend. Checks that the blocks chain (blocks[l].n_src ==
 * blocks[l-1].n_dst) and are well formed (OC_ERR_ARG naming the block). On
 * success *logits (owned by the model, valid until the next forward) is
 * blocks[n_layers-1].n_dst x n_classes. Blocks and x stay borrowed until
 * backward. Buffers grow on the first batches and are reused afterwards.
 */
int oc_nn_model_forward(struct oc_nn_model *m, const struct oc_nn_block *blocks,
                        const struct oc_nn_tensor *x, const struct oc_nn_step *step,
                        const struct oc_nn_tensor **logits, struct oc_err *err);

/*
 * OUTRE's historical embeddings: rows pos[0 .. n) of the last layer's input
 * (the output of layer L-2, one row per source node of block L-1) are
 * replaced by rows (n x the last layer's input width, host memory) once
 * layer L-2 computed them, and the backward pass treats them as constants
 * (their gradient is zeroed before layer L-2's backward). pos and rows are
 * borrowed until the matching backward returns. With n = 0 (or one layer)
 * it is oc_nn_model_forward.
 */
struct oc_nn_hist {
    uint64_t n;
    const uint32_t *pos;
    const float *rows;
};
int oc_nn_model_forward_hist(struct oc_nn_model *m, const struct oc_nn_block *blocks,
                             const struct oc_nn_tensor *x, const struct oc_nn_step *step,
                             const struct oc_nn_hist *hist, const struct oc_nn_tensor **logits,
                             struct oc_err *err);
/*
 * The L2 norm of the loss's gradient at rows pos[0 .. n) of the last layer's
 * input, as the last backward pass left it, into out. OC_ERR_ARG without a
 * backward pass since the last forward, with one layer, or for a row out of range.
 */
int oc_nn_model_last_input_grad_norms(const struct oc_nn_model *m, const uint32_t *pos, uint64_t n,
                                      float *out, struct oc_err *err);
/*
 * Copies rows pos[0 .. n) of the last layer's input as the last forward
 * pass left it into out (n x width, host memory). OC_ERR_ARG without a
 * forward pass, with one layer, or for a row out of range.
 */
int oc_nn_model_last_input_rows(const struct oc_nn_model *m, const uint32_t *pos, uint64_t n,
                                float *out, struct oc_err *err);

struct oc_nn_loss {
    double loss;        /* mean negative log-likelihood over the counted rows */
    uint64_t n_counted; /* rows with a label >= 0 */
    uint64_t n_correct; /* counted rows whose argmax (first maximum) is the label */
};

/*
 * Row-wise log-softmax + NLL of the last forward's logits against labels
 * (host, one per logits row; < 0 = not counted), i.e. F.cross_entropy over
 * the labeled rows, and its gradient for backward. OC_ERR_ARG for a label >=
 * n_classes. With no counted row the loss and gradient are 0.
 */
int oc_nn_model_loss(struct oc_nn_model *m, const int32_t *labels, struct oc_nn_loss *out,
                     struct oc_err *err);

/* Gradients of the last loss w.r.t. every parameter (overwritten, not accumulated). */
int oc_nn_model_backward(struct oc_nn_model *m, struct oc_err *err);

/*
 * torch.optim.Adam: g = grad + weight_decay * p (L2, not AdamW);
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 */
struct oc_nn_adam {
    float lr, beta1, beta2, eps, weight_decay;
};
/* lr and weight_decay as given, betas (0.9, 0.999), eps 1e-8. */
void oc_nn_adam_default(struct oc_nn_adam *opt, float lr, float weight_decay);
int oc_nn_model_adam_step(struct oc_nn_model *m, const struct oc_nn_adam *opt, struct oc_err *err);
/* Adam steps taken so far (t). */
uint64_t oc_nn_model_adam_t(const struct oc_nn_model *m);

/*
 * Layer-wise inference: evaluates layer `layer` (no dropout, activation
 * included; GAT output layer averaged over heads) over one block. x:
 * block->n_src x in_dim(layer); out: block->n_dst x out_dim(layer), caller
 * storage (e.g. a row view of a whole-graph buffer). Does not disturb the
 * state kept for backward.
 */
int oc_nn_model_layer_dims(const struct oc_nn_model *m, uint32_t layer, uint64_t *in_dim,
                           uint64_t *out_dim, struct oc_err *err);
int oc_nn_model_forward_layer(struct oc_nn_model *m, uint32_t layer,
                              const struct oc_nn_block *block, const struct oc_nn_tensor *x,
                              struct oc_nn_tensor *out, struct oc_err *err);

/* ---- parameters, checkpoints, hashes ------------------------------------ */

struct oc_nn_param_info {
    const char *name; /* "layer0.w_self", "layer1.bias", ... */
    uint64_t n_rows, n_cols;
};

uint32_t oc_nn_model_n_params(const struct oc_nn_model *m);
/* Total number of scalar parameters. */
uint64_t oc_nn_model_n_weights(const struct oc_nn_model *m);
int oc_nn_model_param_info(const struct oc_nn_model *m, uint32_t i, struct oc_nn_param_info *info,
                           struct oc_err *err);
/* Copies parameter i's values to / from host memory (n_rows * n_cols floats). */
int oc_nn_model_param_get(const struct oc_nn_model *m, uint32_t i, float *host, struct oc_err *err);
int oc_nn_model_param_set(struct oc_nn_model *m, uint32_t i, const float *host, struct oc_err *err);
/*
 * All gradients of the last backward pass, parameter after parameter
 * (oc_nn_model_n_weights floats), to / from host memory: data-parallel
 * training sums micro-shards' gradients outside the model and sets the sum
 * before the Adam step.
 */
int oc_nn_model_grads_get(const struct oc_nn_model *m, float *host, struct oc_err *err);
int oc_nn_model_grads_set(struct oc_nn_model *m, const float *host, struct oc_err *err);

/*
 * Checkpoint of parameters + Adam state, a self-describing little-endian byte
 * record (not a struct dump):
 *
 *   "OCNNST01" | u32 version | u32 kind | u32 n_layers | u32 n_params
 *   | u64 in_dim | u64 hidden | u64 n_classes | u32 heads | u32 out_heads | u64 adam_t
 *   | per parameter: u64 n_rows | u64 n_cols | f32 value[] | f32 adam_m[] | f32 adam_v[]
 *   | SHA-256 of everything before it (32 bytes)
 *
 * Load checks the magic, version, model shape and digest (OC_ERR_FORMAT).
 */
uint64_t oc_nn_model_state_bytes(const struct oc_nn_model *m);
int oc_nn_model_state_save(const struct oc_nn_model *m, void *buf, uint64_t bytes,
                           struct oc_err *err);
int oc_nn_model_state_load(struct oc_nn_model *m, const void *buf, uint64_t bytes,
                           struct oc_err *err);

/* SHA-256 over the parameter values (f32 little-endian, parameter order). */
int oc_nn_model_params_sha256(const struct oc_nn_model *m, uint8_t digest[32], struct oc_err *err);
/* Lowercase hex of a digest, NUL-terminated. Returns hex. */
char *oc_nn_sha256_hex(const uint8_t digest[32], char hex[65]);

/* ---- RED-GNN (knowledge-graph reasoning; redgnn.c) ------------------------ */

/*
 * RED-GNN (Zhang & Yao, WebConf 2022), as its reference code
 * (LARS-research/RED-GNN, inductive/models.py) computes it. For a batch of
 * queries (h, r_q) and their subgraph layers (blocks[l]: edges (e_s, rel,
 * e_o) into the nodes of layer l, from the nodes of layer l-1):
 *
 *   H^0 = 0 (one row per query, at its head)
 *   layer l (its own relation embeddings R^l, n_rel x d):
 *     alpha_e = sig(w_alpha . relu(W_s H[e_s] + W_r R^l[rel] + W_qr R^l[r_q] + b_qr) + b_alpha)
 *     agg_o   = sum_e alpha_e (H[e_s] + R^l[rel])
 *     x       = dropout(act(W_h agg))          act: identity, relu or tanh
 *     H^l     = GRU(x, H^{l-1} placed at the same entities, 0 for new ones)   (one GRU, shared)
 *   score(q, e) = w_final . H^L[(q, e)], 0 for entities not reached
 *
 * Initialization as torch's defaults: embeddings N(0, 1), Linear and GRU
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from the counter RNG keyed by
 * (seed, parameter). Parameters, Adam state, checkpoints and the weights hash
 * go through the struct oc_nn_model API on oc_nn_redgnn_model(m).
 */
enum oc_nn_redgnn_act {
    OC_NN_REDGNN_IDD,
    OC_NN_REDGNN_RELU,
    OC_NN_REDGNN_TANH,
    OC_NN_REDGNN_ACT_COUNT,
};
/* "idd", "relu", "tanh" (the reference's names). */
const char *oc_nn_redgnn_act_name(enum oc_nn_redgnn_act act);
int oc_nn_redgnn_act_parse(const char *name, enum oc_nn_redgnn_act *act, struct oc_err *err);

struct oc_nn_redgnn_config {
    uint32_t n_layers; /* propagation steps L, >= 1 */
    uint64_t hidden;   /* d */
    uint64_t attn_dim; /* attention width */
    uint64_t n_rel;    /* relation ids of the fact graph: 2R + 1 */
    enum oc_nn_redgnn_act act;
    float dropout; /* on x, [0, 1) */
    uint64_t seed;
};

struct oc_nn_redgnn;

#define OC_NN_REDGNN_MAX_LAYERS 16

int oc_nn_redgnn_new(struct oc_nn_backend *be, const struct oc_nn_redgnn_config *cfg,
                     struct oc_nn_redgnn **out, struct oc_err *err);
void oc_nn_redgnn_free(struct oc_nn_redgnn *m);
/* The parameter set (Adam, checkpoints, hash, parameter access). */
struct oc_nn_model *oc_nn_redgnn_model(struct oc_nn_redgnn *m);

/*
 * One batch: n_query queries with relations q_rel (< n_rel); blocks[l] and
 * prev_to_node[l] (blocks[l].n_src entries: the row of layer l holding row i
 * of layer l-1, i.e. the same entity of the same query) for l < L;
 * blocks[0].n_src = n_query; blocks[l].n_src = blocks[l-1].n_dst;
 * blocks[l].n_rel = n_rel and n_query = n_query. Borrowed until backward.
 */
struct oc_nn_redgnn_batch {
    uint64_t n_query;
    const uint32_t *q_rel;
    const struct oc_nn_rel_block *blocks;
    const uint32_t *const *prev_to_node;
};

/*
 * Forward pass; *scores (host, owned by the model, valid until the next
 * forward) holds one score per node of the last layer.
 */
int oc_nn_redgnn_forward(struct oc_nn_redgnn *m, const struct oc_nn_redgnn_batch *b,
                         const struct oc_nn_step *step, const float **scores, struct oc_err *err);
/*
 * The reference's loss over all n_entities candidates, summed over queries:
 * sum_q (-s_answer + max + log sum_e exp(s_e - max)), every entity not
 * reached scoring 0. qptr (n_query + 1): rows of the last layer per query;
 * answer_row[q]: the row of the answer, or -1 when it was not reached.
 */
int oc_nn_redgnn_loss(struct oc_nn_redgnn *m, const uint64_t *qptr, const int64_t *answer_row,
                      uint64_t n_entities, double *loss, struct oc_err *err);
/* Gradients of the last loss w.r.t. every parameter (overwritten). */
int oc_nn_redgnn_backward(struct oc_nn_redgnn *m, struct oc_err *err);

/*
 * The largest batch a workspace is sized for: its queries and, per layer l
 * (< the model's n_layers), the nodes and edges of block l (block l's sources
 * are layer l-1's nodes, block 0's the queries). Each is a maximum over the
 * batches it stands for, taken separately: the shape may be no real batch.
 */
struct oc_nn_redgnn_shape {
    uint64_t n_query;
    uint64_t n_nodes[OC_NN_REDGNN_MAX_LAYERS], n_edges[OC_NN_REDGNN_MAX_LAYERS];
};
/*
 * Grows the model's workspace once, before training, to exactly what any
 * batch within the shapes needs, so that forward passes of batches within
 * eval (and of train) and training steps (forward, loss, backward) of batches
 * within train allocate nothing afterwards: a forward pass over synthetic
 * blocks of the larger of both shapes (layer by layer), then a training step
 * on train's, its tensors sized without headroom. Every tensor of a pass is
 * a product of the batch's sizes, so the largest shape bounds them all;
 * kernel scratch keeps its quarter of headroom (a split GEMM's parts are at
 * most that many more on a smaller shape). The synthetic blocks are freed
 * before it returns. Parameters and Adam state are unchanged and gradients
 * zeroed (as after _new); no optimizer step is taken. A shape with n_query 0
 * is skipped. OC_ERR_ARG for a shape whose layers have no node; allocation
 * errors (OC_ERR_BUDGET) as forward's.
 */
int oc_nn_redgnn_reserve(struct oc_nn_redgnn *m, const struct oc_nn_redgnn_shape *eval,
                         const struct oc_nn_redgnn_shape *train, struct oc_err *err);

#endif
