/*
 * cpu_gemm.c — C = alpha op(A) op(B) + beta C on the CPU through OpenBLAS,
 * parallelized by offcore over a fixed partition:
 *
 *   tiles:   C cut into tile_m x OC_NN_GEMM_TILE_N tiles, one single-threaded
 *            sgemm per tile (full K). tile_m grows with M from 64 to 512 rows
 *            (a multiple of 64 aiming at OC_NN_GEMM_ROW_TILES row tiles):
 *            every call packs the whole K x tile_n panel of B again, so
 *            64-row tiles over a 256 x 256 B spent about a quarter of the
 *            GEMM time copying B;
 *   k-split: when C is small (<= OC_NN_GEMM_KSPLIT_OUT elements) and K long
 *            (weight gradients X^T dY over many rows), K is cut into at most
 *            OC_NN_GEMM_KSPLIT_PARTS chunks of a length derived from K alone,
 *            each chunk's product goes to its own partial, and the partials
 *            are summed in chunk order.
 *
 * Every call shape depends only on (M, N, K), so each output element is
 * computed by the same code path and summation order at any thread count.
 *
 * Place in the data flow: nn CPU backend; the layers' dense transforms.
 * Thread-safety: see cpu_int.h (OpenBLAS runs single-threaded per call, and
 * concurrent calls from pool workers are safe in its threaded build).
 * Ownership: partials live in the backend scratch.
 */
#include <cblas.h>

#include "cpu_int.h"

#define OC_NN_GEMM_TILE_M_MIN   64
#define OC_NN_GEMM_TILE_M_MAX   512
#define OC_NN_GEMM_ROW_TILES    8
#define OC_NN_GEMM_TILE_N       256
#define OC_NN_GEMM_KSPLIT_OUT   65536
#define OC_NN_GEMM_KSPLIT_MINK  2048
#define OC_NN_GEMM_KSPLIT_PARTS 64

struct gemm_ctx {
    int ta, tb;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int m, n, k, lda, ldb, ldc;
    int tiles_n, tile_m;
    int k_chunk, n_parts;
    float *part;
};

/* A GEMM's `work` for oc_nn_cpu_run: multiply-adds / 16 (one float touched is worth ~16 of them). */
static uint64_t gemm_work(const struct gemm_ctx *x)
{
    return (uint64_t)x->m * (uint64_t)x->n * (uint64_t)x->k / 16;
}

static int gemm_tile(void *ctxp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gemm_ctx *x = ctxp;
    int tm = (int)(task / (uint64_t)x->tiles_n), tn = (int)(task % (uint64_t)x->tiles_n);
    int r0 = tm * x->tile_m, c0 = tn * OC_NN_GEMM_TILE_N;
    int m = x->m - r0 < x->tile_m ? x->m - r0 : x->tile_m;
    int n = x->n - c0 < OC_NN_GEMM_TILE_N ? x->n - c0 : OC_NN_GEMM_TILE_N;
    const float *a = x->ta ? x->a + r0 : x->a + (size_t)r0 * (size_t)x->lda;
    const float *b = x->tb ? x->b + (size_t)c0 * (size_t)x->ldb : x->b + c0;
    float *c = x->c + (size_t)r0 * (size_t)x->ldc + c0;
    cblas_sgemm(CblasRowMajor, x->ta ? CblasTrans : CblasNoTrans, x->tb ? CblasTrans : CblasNoTrans,
                m, n, x->k, x->alpha, a, x->lda, b, x->ldb, x->beta, c, x->ldc);
    return OC_OK;
}

static int gemm_part(void *ctxp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gemm_ctx *x = ctxp;
    int k0 = (int)task * x->k_chunk;
    int kk = x->k - k0 < x->k_chunk ? x->k - k0 : x->k_chunk;
    const float *a = x->ta ? x->a + (size_t)k0 * (size_t)x->lda : x->a + k0;
    const float *b = x->tb ? x->b + k0 : x->b + (size_t)k0 * (size_t)x->ldb;
    float *p = x->part + task * (size_t)x->m * (size_t)x->n;
    cblas_sgemm(CblasRowMajor, x->ta ? CblasTrans : CblasNoTrans, x->tb ? CblasTrans : CblasNoTrans,
                x->m, x->n, kk, 1.0f, a, x->lda, b, x->ldb, 0.0f, p, x->n);
    return OC_OK;
}

static int gemm_reduce(void *ctxp, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct gemm_ctx *x = ctxp;
    size_t n_out = (size_t)x->m * (size_t)x->n;
    size_t i0 = task * OC_NN_CPU_ELEMS;
    size_t i1 = i0 + OC_NN_CPU_ELEMS < n_out ? i0 + OC_NN_CPU_ELEMS : n_out;
    for (size_t i = i0; i < i1; i++) {
        float s = x->part[i];
        for (int p = 1; p < x->n_parts; p++)
            s += x->part[(size_t)p * n_out + i];
        size_t r = i / (size_t)x->n, col = i % (size_t)x->n;
        float *c = x->c + r * (size_t)x->ldc + col;
        *c = x->beta != 0.0f ? x->alpha * s + x->beta * *c : x->alpha * s;
    }
    return OC_OK;
}

int oc_nn_cpu_gemm(struct oc_nn_backend *be, int trans_a, int trans_b, float alpha,
                   const struct oc_nn_tensor *a, const struct oc_nn_tensor *b, float beta,
                   struct oc_nn_tensor *c, struct oc_err *err)
{
    struct gemm_ctx x = {
        .ta = trans_a,
        .tb = trans_b,
        .alpha = alpha,
        .beta = beta,
        .a = oc_nn_f32(a),
        .b = oc_nn_f32(b),
        .c = oc_nn_f32(c),
        .m = (int)c->n_rows,
        .n = (int)c->n_cols,
        .k = (int)(trans_a ? a->n_rows : a->n_cols),
        .lda = a->n_cols ? (int)a->n_cols : 1,
        .ldb = b->n_cols ? (int)b->n_cols : 1,
        .ldc = c->n_cols ? (int)c->n_cols : 1,
    };
    uint64_t n_out = (uint64_t)x.m * (uint64_t)x.n;
    if (n_out <= OC_NN_GEMM_KSPLIT_OUT && x.k >= 2 * OC_NN_GEMM_KSPLIT_MINK) {
        int chunk = (int)oc_nn_cpu_div_up((uint64_t)x.k, OC_NN_GEMM_KSPLIT_PARTS);
        x.k_chunk = chunk > OC_NN_GEMM_KSPLIT_MINK ? chunk : OC_NN_GEMM_KSPLIT_MINK;
        x.n_parts = (int)oc_nn_cpu_div_up((uint64_t)x.k, (uint64_t)x.k_chunk);
        x.part = oc_nn_cpu_scratch(be, (size_t)x.n_parts * n_out * sizeof(float), err);
        if (!x.part)
            return err->status;
        int rc = oc_nn_cpu_run(be, (uint64_t)x.n_parts, gemm_work(&x), gemm_part, &x);
        if (rc == OC_OK)
            rc = oc_nn_cpu_run(be, oc_nn_cpu_div_up(n_out, OC_NN_CPU_ELEMS),
                               (uint64_t)x.n_parts * n_out, gemm_reduce, &x);
        return rc;
    }
    /* rows per tile from M alone: 64 .. 512, a multiple of 64, about M / 8 */
    uint64_t per = oc_nn_cpu_div_up((uint64_t)x.m, OC_NN_GEMM_ROW_TILES * OC_NN_GEMM_TILE_M_MIN);
    per *= OC_NN_GEMM_TILE_M_MIN;
    x.tile_m = (int)(per < OC_NN_GEMM_TILE_M_MIN   ? OC_NN_GEMM_TILE_M_MIN
                     : per > OC_NN_GEMM_TILE_M_MAX ? OC_NN_GEMM_TILE_M_MAX
                                                   : per);
    x.tiles_n = (int)oc_nn_cpu_div_up((uint64_t)x.n, OC_NN_GEMM_TILE_N);
    uint64_t tiles_m = oc_nn_cpu_div_up((uint64_t)x.m, (uint64_t)x.tile_m);
    return oc_nn_cpu_run(be, tiles_m * (uint64_t)x.tiles_n, gemm_work(&x), gemm_tile, &x);
}
