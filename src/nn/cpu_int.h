/*
 * cpu_int.h — private to the CPU backend (src/nn/cpu_*.c): its state, the
 * fixed work partition every kernel uses, and the kernel entry points that
 * cpu_backend.c puts in the backend table.
 *
 * Place in the data flow: nn CPU backend; nothing else includes it.
 * Thread-safety: kernels are called by one thread and fan out on the pool.
 * Partitions depend only on shapes (OC_NN_CPU_* constants), never on the
 * thread count, and every output element is written by exactly one task, so
 * results are bit-identical at any number of threads.
 * Ownership: the backend state owns one grow-only scratch buffer shared by
 * the kernels (they never nest).
 */
#ifndef OFFCORE_NN_CPU_INT_H
#define OFFCORE_NN_CPU_INT_H

#include <math.h>
#include <string.h>

#include "nn_int.h"

/* Rows per task of row-wise kernels; rows per partial sum of column reductions. */
#define OC_NN_CPU_ROWS        64
#define OC_NN_CPU_REDUCE_ROWS 256
/* Elements per task of element-wise kernels. */
#define OC_NN_CPU_ELEMS 16384

struct oc_nn_cpu {
    struct oc_nn_hbuf scratch;
};

/* The backend's scratch, at least bytes (contents undefined). */
void *oc_nn_cpu_scratch(struct oc_nn_backend *be, size_t bytes, struct oc_err *err);
/* Runs fn over n_tasks on the backend's pool. */
/*
 * Runs tasks 0 .. n_tasks-1 of fn on the backend's pool, or on the calling
 * thread when `work` (about the floats the op touches) is below
 * OC_NN_CPU_INLINE_WORK: waking the pool costs more than such an op (RED-GNN's
 * small query subgraphs run thousands of them). The tasks and their partition
 * are the same either way, so the result is too (as at --threads 1).
 */
#define OC_NN_CPU_INLINE_WORK 32768
int oc_nn_cpu_run(struct oc_nn_backend *be, uint64_t n_tasks, uint64_t work, oc_pool_fn fn,
                  void *ctx);
/* Elements of a tensor, the usual `work` of an element-wise op. */
static inline uint64_t oc_nn_cpu_size(const struct oc_nn_tensor *t)
{
    return t->n_rows * t->n_cols;
}

/*
 * Hot kernels are compiled twice, for AVX2 and for the baseline ISA, and the
 * loader picks one per machine (GCC/clang target_clones). Both give the same
 * bits: the build is ISO C, so no multiply-add is contracted (-ffp-contract
 * is off), AVX2 without FMA has none to contract into, and the compiler never
 * reorders a float sum: vector code only does the scalar code's operations
 * several lanes at a time.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(OC_SANITIZED)
#    define OC_NN_SIMD __attribute__((target_clones("avx2", "default")))
#else
#    define OC_NN_SIMD
#endif

static inline uint64_t oc_nn_cpu_div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* Items [*i0, *i1) of task `task` when tasks take `per` items each out of n. */
static inline void oc_nn_cpu_range(uint64_t task, uint64_t n, uint64_t per, uint64_t *i0,
                                   uint64_t *i1)
{
    *i0 = task * per;
    *i1 = *i0 + per < n ? *i0 + per : n;
}

/* a if c, else b: a select by bit masks, which -O2 vectorizes (a ?: of floats it does not). */
static inline float oc_nn_fsel(int c, float a, float b)
{
    uint32_t m = 0u - (uint32_t)(c != 0), ua, ub;
    memcpy(&ua, &a, sizeof(ua));
    memcpy(&ub, &b, sizeof(ub));
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, sizeof(a));
    return a;
}

/*
 * exp's range reduction for the inlined exp and expm1 below: for v in
 * [-87, 88], v = k ln2 + r with k rounded to nearest (the 1.5 x 2^23 trick)
 * and ln2 split in two (k ln2_hi exact), |r| <= ln2 / 2. Returns expm1(r) by
 * its Taylor polynomial to r^7 (the next term is below 2^-25 of it there)
 * and sets *s = 2^k, built in the exponent bits (a normal float).
 */
static inline float oc_nn_exp_reduce(float v, float *s)
{
    float k = (v * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = (v - k * 0.693145752f) - k * 1.42860677e-6f;
    uint32_t bits = (uint32_t)((int32_t)k + 127) << 23;
    memcpy(s, &bits, sizeof(*s));
    return r * (1.0f +
                r * (0.5f + r * (1.0f / 6 +
                                 r * (1.0f / 24 +
                                      r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
}

/*
 * ELU's negative side, expm1(min(x, 0)) = 2^k expm1(r) + (2^k - 1), in
 * plain arithmetic so the loops calling it vectorize (glibc's expm1f is a
 * call per element: 8 % of GAT's training CPU). 0 at 0, -1 below -87 (as
 * expm1f rounds); within 2 ulps of expm1 (tests/test_nn_ops.c).
 */
static inline float oc_nn_expm1f_neg(float x)
{
    float v = oc_nn_fsel(x < 0.0f, x, 0.0f), s;
    float p = oc_nn_exp_reduce(oc_nn_fsel(v > -87.0f, v, -87.0f), &s);
    return s * p + (s - 1.0f);
}

/*
 * exp(x) = 2^k expm1(r) + 2^k, x clamped to [-87, 88]. Within 2 ulps of exp
 * (tests/test_nn_ops.c); inlined and branch-free, so loops by 8 vectorize
 * (glibc's expf is a call per element).
 */
static inline float oc_nn_expf(float x)
{
    float v = oc_nn_fsel(x > -87.0f, x, -87.0f), s;
    float p = oc_nn_exp_reduce(oc_nn_fsel(v < 88.0f, v, 88.0f), &s);
    return s * p + s;
}

/*
 * tanh through one exp: 1 - 2 / (exp(2x) + 1), exact at the limits (glibc's
 * tanhf goes through expm1f and took a fifth of RED-GNN's training time).
 * Within 2e-7 of tanh (absolute; near 0 the subtraction cancels, so in ulps
 * of tanh's small values the error is large there). The _v forms use the
 * inlined exp, for loops by 8 that vectorize (the GRU gathers any width's
 * elements into blocks of 8 for them); every element of a kernel takes the
 * same form, whatever the threads and wherever it falls in a block.
 */
static inline float oc_nn_tanhf_v(float x)
{
    return 1.0f - 2.0f / (oc_nn_expf(2.0f * x) + 1.0f);
}

/* The logistic sigmoid 1 / (1 + exp(-x)), as above. */
static inline float oc_nn_sigmoidf_v(float x)
{
    return 1.0f / (1.0f + oc_nn_expf(-x));
}

/* ELU: x, or expm1(x) below 0 (branch-free: vectorizes in loops by 8). */
static inline float oc_nn_eluf(float x)
{
    return oc_nn_fsel(x > 0.0f, x, oc_nn_expm1f_neg(x));
}

static inline float *oc_nn_f32(const struct oc_nn_tensor *t)
{
    return (float *)t->data;
}

/*
 * Row primitives, unrolled by 8 so that -O2 vectorizes them. Element-wise
 * ones compute each element exactly as the plain loop would; the dot product
 * keeps 8 partial sums combined in a fixed order, so it too gives the same
 * bits on every call.
 */
static inline void oc_nn_vaxpy(float *restrict y, const float *restrict x, float w, uint64_t n)
{
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            y[f + k] += w * x[f + k];
    for (; f < n; f++)
        y[f] += w * x[f];
}

static inline void oc_nn_vadd(float *restrict y, const float *restrict x, uint64_t n)
{
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            y[f + k] += x[f + k];
    for (; f < n; f++)
        y[f] += x[f];
}

/* y = ELU(x) element by element (y may be x). */
static inline void oc_nn_velu(float *y, const float *x, uint64_t n)
{
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            y[f + k] = oc_nn_eluf(x[f + k]);
    for (; f < n; f++)
        y[f] = oc_nn_eluf(x[f]);
}

/* y = tanh(x) element by element through the inlined exp (y may be x). */
static inline void oc_nn_vtanh(float *y, const float *x, uint64_t n)
{
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            y[f + k] = oc_nn_tanhf_v(x[f + k]);
    for (; f < n; f++)
        y[f] = oc_nn_tanhf_v(x[f]);
}

static inline void oc_nn_vscale(float *y, float s, uint64_t n)
{
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            y[f + k] *= s;
    for (; f < n; f++)
        y[f] *= s;
}

static inline void oc_nn_vzero(float *y, uint64_t n)
{
    for (uint64_t f = 0; f < n; f++)
        y[f] = 0.0f;
}

/*
 * Rows gathered by edge are random reads: kernels prefetch the row needed
 * OC_NN_PREFETCH_EDGES edges ahead (about 3x on random 512-byte rows).
 */
#define OC_NN_PREFETCH_EDGES 8

static inline void oc_nn_prefetch_row(const float *row, uint64_t n)
{
    const char *p = (const char *)row;
    for (uint64_t off = 0; off < n * sizeof(float); off += 64)
        __builtin_prefetch(p + off);
}

static inline float oc_nn_vdot(const float *a, const float *b, uint64_t n)
{
    float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t f = 0;
    for (; f + 8 <= n; f += 8)
        for (unsigned k = 0; k < 8; k++)
            p[k] += a[f + k] * b[f + k];
    float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; f < n; f++)
        s += a[f] * b[f];
    return s;
}

int oc_nn_cpu_gemm(struct oc_nn_backend *be, int trans_a, int trans_b, float alpha,
                   const struct oc_nn_tensor *a, const struct oc_nn_tensor *b, float beta,
                   struct oc_nn_tensor *c, struct oc_err *err);

int oc_nn_cpu_bias_add(struct oc_nn_backend *be, struct oc_nn_tensor *y,
                       const struct oc_nn_tensor *bias, struct oc_err *err);
int oc_nn_cpu_bias_act(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                       const struct oc_nn_tensor *bias, struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_colsum(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                     struct oc_nn_tensor *out, struct oc_err *err);
int oc_nn_cpu_act_fwd(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *x,
                      struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_act_bwd(struct oc_nn_backend *be, enum oc_nn_act act, const struct oc_nn_tensor *y,
                      const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx, struct oc_err *err);
int oc_nn_cpu_dropout_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *x, float p,
                          const struct oc_nn_drop_key *key, struct oc_nn_tensor *y,
                          struct oc_nn_tensor *mask, struct oc_err *err);
int oc_nn_cpu_dropout_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *dy,
                          const struct oc_nn_tensor *mask, float p, struct oc_nn_tensor *dx,
                          struct oc_err *err);
int oc_nn_cpu_head_mean_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *x, uint32_t heads,
                            struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_head_mean_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *dy, uint32_t heads,
                            struct oc_nn_tensor *dx, struct oc_err *err);

int oc_nn_cpu_agg_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                      int cat, const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                      struct oc_err *err);
int oc_nn_cpu_agg_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g, enum oc_nn_agg agg,
                      int cat, const struct oc_nn_tensor *dy, struct oc_nn_tensor *dx,
                      struct oc_err *err);

int oc_nn_cpu_gat_proj_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                           const struct oc_nn_tensor *attn, struct oc_nn_tensor *out,
                           struct oc_err *err);
int oc_nn_cpu_gat_proj_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *z,
                           const struct oc_nn_tensor *attn, const struct oc_nn_tensor *dout,
                           struct oc_nn_tensor *dz, struct oc_nn_tensor *dattn, struct oc_err *err);
int oc_nn_cpu_gat_softmax_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                              const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                              float slope, struct oc_nn_tensor *a, struct oc_err *err);
int oc_nn_cpu_gat_softmax_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                              const struct oc_nn_tensor *el, const struct oc_nn_tensor *er,
                              float slope, const struct oc_nn_tensor *a, struct oc_nn_tensor *da,
                              struct oc_nn_tensor *del, struct oc_nn_tensor *der,
                              struct oc_err *err);
int oc_nn_cpu_gat_agg_fwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                          const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                          struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_gat_agg_bwd(struct oc_nn_backend *be, const struct oc_nn_graph *g,
                          const struct oc_nn_tensor *a, const struct oc_nn_tensor *z,
                          const struct oc_nn_tensor *dy, struct oc_nn_tensor *dz,
                          struct oc_nn_tensor *da, struct oc_err *err);

int oc_nn_cpu_nll(struct oc_nn_backend *be, const struct oc_nn_tensor *logits,
                  const int32_t *labels, uint64_t n_counted, struct oc_nn_tensor *dlogits,
                  struct oc_nn_loss *out, struct oc_err *err);
int oc_nn_cpu_adam(struct oc_nn_backend *be, struct oc_nn_tensor *p, const struct oc_nn_tensor *g,
                   struct oc_nn_tensor *m, struct oc_nn_tensor *v, const struct oc_nn_adam *opt,
                   uint64_t t, struct oc_err *err);

/* RED-GNN kernels (cpu_kg.c, cpu_gru.c). */
int oc_nn_cpu_rows_gather(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                          const uint32_t *idx, struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_rows_scatter_add(struct oc_nn_backend *be, const struct oc_nn_tensor *x,
                               const uint32_t *idx, struct oc_nn_tensor *y, struct oc_err *err);
int oc_nn_cpu_edge_attn_fwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                            const struct oc_nn_tensor *ps, const struct oc_nn_tensor *pr,
                            const struct oc_nn_tensor *pq, const struct oc_nn_tensor *w,
                            const struct oc_nn_tensor *b, struct oc_nn_tensor *hid,
                            struct oc_nn_tensor *alpha, struct oc_err *err);
int oc_nn_cpu_edge_attn_bwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                            const struct oc_nn_tensor *hid, const struct oc_nn_tensor *alpha,
                            const struct oc_nn_tensor *dalpha, const struct oc_nn_tensor *w,
                            struct oc_nn_tensor *dpre, struct oc_nn_tensor *dw,
                            struct oc_nn_tensor *db, struct oc_err *err);
int oc_nn_cpu_edge_msg_fwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                           const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                           const struct oc_nn_tensor *alpha, struct oc_nn_tensor *y,
                           struct oc_err *err);
int oc_nn_cpu_edge_msg_bwd(struct oc_nn_backend *be, const struct oc_nn_rel_block *g,
                           const struct oc_nn_tensor *h, const struct oc_nn_tensor *r,
                           const struct oc_nn_tensor *alpha, const struct oc_nn_tensor *dy,
                           struct oc_nn_tensor *dh, struct oc_nn_tensor *dr,
                           struct oc_nn_tensor *dalpha, struct oc_err *err);
int oc_nn_cpu_gru_fwd(struct oc_nn_backend *be, const struct oc_nn_tensor *gi,
                      const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                      struct oc_nn_tensor *hn, struct oc_nn_tensor *gates, struct oc_err *err);
int oc_nn_cpu_gru_bwd(struct oc_nn_backend *be, const struct oc_nn_tensor *gates,
                      const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                      const struct oc_nn_tensor *dhn, struct oc_nn_tensor *dgi,
                      struct oc_nn_tensor *dgh, struct oc_nn_tensor *dh, struct oc_err *err);
int oc_nn_cpu_kg_xent(struct oc_nn_backend *be, const struct oc_nn_tensor *scores,
                      const uint64_t *qptr, const int64_t *pos, uint64_t n_query,
                      uint64_t n_entities, struct oc_nn_tensor *dscores, double *loss,
                      struct oc_err *err);

/* ---- Philox for dropout (cpu_philox.c) ---- */

/* Eight Philox4x32-10 blocks, counters (stream, b0 .. b0 + 7) under key seed: out[l] is
 * oc_rng_block(seed, stream, b0 + l). Vector form where the CPU has AVX2, same bits. */
void oc_nn_philox_x8(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4]);
/* The two forms, for tests: the vector one returns 0 (and writes nothing) without AVX2. */
void oc_nn_philox_x8_scalar(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4]);
int oc_nn_philox_x8_vector(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4]);

/* ---- the OpenBLAS core (cpu_blas_core.c) ---- */

/* What the CPU's vector units allow, as far as OpenBLAS's kernels care. */
enum oc_nn_cpu_level {
    OC_NN_CPU_LEVEL_BASE,   /* neither below */
    OC_NN_CPU_LEVEL_AVX2,   /* AVX2 and FMA */
    OC_NN_CPU_LEVEL_AVX512, /* AVX-512 F, DQ, BW, VL and CD */
};
enum oc_nn_cpu_level oc_nn_cpu_level_detect(void);
/* The OpenBLAS core offcore forces at a level: "SkylakeX", "Haswell", or NULL (base). */
const char *oc_nn_blas_core_for_level(enum oc_nn_cpu_level level);
/* The core to force when OpenBLAS chose `core` (its name) on a CPU of `level`: the level's core
 * when `core` is one without AVX2 (what OpenBLAS falls back to), else NULL. */
const char *oc_nn_blas_core_pick(const char *core, enum oc_nn_cpu_level level);
/* Logs one warning per process when OpenBLAS runs a core without AVX2 on a CPU with it, whether
 * OPENBLAS_CORETYPE is unset (what to set) or set (OpenBLAS did not follow it). */
void oc_nn_blas_core_warn_once(void);

#endif
