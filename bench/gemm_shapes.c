/*
 * gemm_shapes.c — how fast this machine's GEMMs are at the shapes GNN training
 * runs, next to the square 2048^3 peak that bench/peers/run.sh's dense-flop
 * bound assumes. For each shape C (M x N) = op(A) op(B), K deep, it times
 * (best of 5, warm) offcore's GEMM (`oc_nn_gemm`: fixed tiles on a T-thread
 * pool, one single-threaded OpenBLAS call per tile) and one OpenBLAS call on
 * OpenBLAS's own T threads; then the whole set, each shape counted as often as a
 * batch runs it, as a ratio of the time at the 2048^3 peak: what
 * forward+backward would be against that bound if nothing but GEMMs ran.
 *
 *   gemm_shapes [T] [ta,tb,M,N,K,count ...]
 *
 * The default set is one batch of GraphSAGE 3 x 256 at fanout 15,10,5, batch
 * 1024, on 128-dim features (bench/peers' sage3): layer 0 with 35,000
 * destination rows ([mean | self] 256 wide), layer 1 with 5,000, layer 2
 * (10 classes) applying its transform first, as offcore does.
 *
 * Place in the data flow: bench only (outside the library).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/nn_int.h"
#include "offcore/nn.h"
#include "offcore/progress.h"
#include "offcore/thread.h"

struct shape {
    int ta, tb;
    int m, n, k, count;
};

static const struct shape sage3[] = {
    {0, 0, 35000, 256, 256, 1}, /* layer 0: [mean | self] [Wn; Ws] */
    {1, 0, 256, 256, 35000, 1}, /* layer 0: its weight gradient */
    {0, 0, 5000, 256, 512, 1},  /* layer 1 */
    {1, 0, 512, 256, 5000, 1},  /* layer 1: weight gradient */
    {0, 1, 5000, 512, 256, 1},  /* layer 1: d[mean | self] */
    {0, 0, 5000, 10, 256, 1},   /* layer 2: neighbour transform first (256 > 10) */
    {0, 0, 1024, 10, 256, 1},   /* layer 2: self */
    {1, 0, 256, 10, 5000, 1},   /* layer 2: neighbour weight gradient */
    {0, 1, 5000, 256, 10, 1},   /* layer 2: input gradient */
};

static float *filled(size_t n)
{
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; p && i < n; i++)
        p[i] = (float)(i % 13) * 0.01f - 0.06f;
    return p;
}

/* Seconds of the best of 5 calls of offcore's GEMM, or of one OpenBLAS call on T threads. */
static double time_shape(struct oc_nn_backend *be, const struct shape *s, int openblas_threads)
{
    struct oc_nn_tensor a, b, c;
    struct oc_err err;
    int ar = s->ta ? s->k : s->m, ac = s->ta ? s->m : s->k;
    int br = s->tb ? s->n : s->k, bc = s->tb ? s->k : s->n;
    float *pa = filled((size_t)ar * ac), *pb = filled((size_t)br * bc),
          *pc = filled((size_t)s->m * s->n);
    double best = 1e30;
    if (!pa || !pb || !pc)
        goto out;
    if (oc_nn_tensor_wrap(be, OC_NN_F32, pa, ar, ac, &a, &err) ||
        oc_nn_tensor_wrap(be, OC_NN_F32, pb, br, bc, &b, &err) ||
        oc_nn_tensor_wrap(be, OC_NN_F32, pc, s->m, s->n, &c, &err)) {
        fprintf(stderr, "gemm_shapes: %s\n", err.msg);
        goto out;
    }
    if (openblas_threads) /* outside the timed calls; back to the backend's 1 below */
        openblas_set_num_threads(openblas_threads);
    for (int rep = 0; rep < 6; rep++) {
        double t0 = oc_now_s();
        if (openblas_threads) {
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                        s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, pa, ac, pb, bc,
                        0.0f, pc, s->n);
        } else if (oc_nn_gemm(s->ta, s->tb, 1.0f, &a, &b, 0.0f, &c, &err)) {
            fprintf(stderr, "gemm_shapes: %s\n", err.msg);
            break;
        }
        double t = oc_now_s() - t0;
        if (rep > 0 && t < best) /* the first call warms up */
            best = t;
    }
    if (openblas_threads)
        openblas_set_num_threads(1);
out:
    free(pa);
    free(pb);
    free(pc);
    return best;
}

int main(int argc, char **argv)
{
    oc_nn_blas_core_reexec(argv); /* the kernels offcore's own programs run */
    int threads = argc > 1 ? atoi(argv[1]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int n = (int)(sizeof(sage3) / sizeof(sage3[0]));
    struct shape *set = malloc(sizeof(struct shape) * (size_t)(argc > 2 ? argc - 2 : n));
    if (!set || threads < 1)
        return 2;
    if (argc > 2) {
        n = 0;
        for (int i = 2; i < argc; i++, n++)
            if (sscanf(argv[i], "%d,%d,%d,%d,%d,%d", &set[n].ta, &set[n].tb, &set[n].m, &set[n].n,
                       &set[n].k, &set[n].count) != 6 ||
                set[n].m < 1 || set[n].n < 1 || set[n].k < 1 || set[n].count < 1) {
                fprintf(stderr, "gemm_shapes: '%s' is not ta,tb,M,N,K,count\n", argv[i]);
                return 2;
            }
    } else {
        memcpy(set, sage3, sizeof(sage3));
    }
    struct oc_pool *pool = NULL;
    struct oc_nn_backend *be = NULL;
    struct oc_err err;
    if (oc_pool_new((unsigned)threads, &pool, &err) ||
        oc_nn_backend_new(OC_NN_BACKEND_CPU, pool, &be, &err)) {
        fprintf(stderr, "gemm_shapes: %s\n", err.msg);
        return 1;
    }
    struct shape sq = {0, 0, 2048, 2048, 2048, 1};
    double peak = 2.0 * 2048 * 2048 * 2048 / time_shape(be, &sq, threads) / 1e9;
    printf("OpenBLAS %s kernels, %d threads; 2048^3 peak %.1f GFLOP/s\n", oc_nn_blas_core(),
           threads, peak);
    printf("  ta tb        M      N      K count   offcore GFLOP/s  OpenBLAS GFLOP/s\n");
    double flops = 0, t_oc = 0, t_ob = 0;
    for (int i = 0; i < n; i++) {
        const struct shape *s = &set[i];
        double f = 2.0 * s->m * s->n * s->k;
        double a = time_shape(be, s, 0), b = time_shape(be, s, threads);
        printf("  %2d %2d %8d %6d %6d %5d %17.1f %17.1f\n", s->ta, s->tb, s->m, s->n, s->k,
               s->count, f / a / 1e9, f / b / 1e9);
        flops += f * s->count;
        t_oc += a * s->count;
        t_ob += (a < b ? a : b) * s->count;
    }
    double at_peak = flops / (peak * 1e9);
    printf("set: %.2f GFLOP; at the peak %.1f ms; offcore %.1f ms = %.2fx; the faster of the "
           "two per shape %.1f ms = %.2fx the bound\n",
           flops / 1e9, at_peak * 1e3, t_oc * 1e3, t_oc / at_peak, t_ob * 1e3, t_ob / at_peak);
    oc_nn_backend_free(be);
    oc_pool_free(pool);
    free(set);
    return 0;
}
