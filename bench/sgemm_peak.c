/*
 * sgemm_peak.c — measures this machine's single-precision GEMM peak with
 * OpenBLAS (square 2048 matrices, best of 5), with one OpenBLAS thread and
 * with T threads (`sgemm_peak [T]`, default all online cores: the threads the
 * benchmark trains with), so training benchmarks can report the fraction of
 * peak their dense parts reach. Prints "sgemm_peak_gflops_1t X" and
 * "sgemm_peak_gflops_all Y (T threads)" lines.
 *
 * Place in the data flow: bench only (outside the library).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "offcore/nn.h"
#include "offcore/progress.h"

static double best_gflops(int n, const float *a, const float *b, float *c)
{
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = oc_now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        double s = oc_now_s() - t0;
        double g = 2.0 * n * n * n / s / 1e9;
        best = g > best ? g : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    oc_nn_blas_core_reexec(argv); /* the kernels offcore's own programs run */
    const int n = 2048;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    if (!a || !b || !c)
        return 1;
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.2f;
    }
    long cores = argc > 1 ? strtol(argv[1], NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) {
        fprintf(stderr, "usage: sgemm_peak [threads >= 1]\n");
        return 2;
    }
    openblas_set_num_threads(1);
    printf("sgemm_peak_gflops_1t %.1f\n", best_gflops(n, a, b, c));
    openblas_set_num_threads((int)cores);
    printf("sgemm_peak_gflops_all %.1f (%ld threads)\n", best_gflops(n, a, b, c), cores);
    free(a);
    free(b);
    free(c);
    return 0;
}
