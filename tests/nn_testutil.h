/*
 * nn_testutil.h — helpers shared by the nn tests: CPU backends over pools of
 * a given size, random tensors, the tiny golden block used by op and model
 * tests, and a finite-difference gradient checker.
 *
 * A gradient check takes a scalar L = sum_k w_k out_k with fixed random w,
 * perturbs one input element at a time by +-eps (float), and compares
 * (L+ - L-) / 2 eps with the analytic gradient: |num - ana| <= atol + rtol |num|.
 */
#ifndef OFFCORE_NN_TESTUTIL_H
#define OFFCORE_NN_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "nn/nn_int.h"
#include "offcore/nn.h"
#include "offcore/rng.h"
#include "offcore/thread.h"

struct nt_env {
    struct oc_pool *pool;
    struct oc_nn_backend *be;
};

static inline int nt_env_new(struct nt_env *e, unsigned n_threads)
{
    struct oc_err err;
    e->pool = NULL;
    e->be = NULL;
    if (n_threads > 0 && oc_pool_new(n_threads, &e->pool, &err) != OC_OK) {
        fprintf(stderr, "pool: %s\n", err.msg);
        return -1;
    }
    if (oc_nn_backend_new(OC_NN_BACKEND_CPU, e->pool, &e->be, &err) != OC_OK) {
        fprintf(stderr, "backend: %s\n", err.msg);
        oc_pool_free(e->pool);
        return -1;
    }
    return 0;
}

static inline void nt_env_free(struct nt_env *e)
{
    oc_nn_backend_free(e->be);
    oc_pool_free(e->pool);
}

/* A tensor rows x cols filled uniformly in [lo, hi) from stream (seed, tag). */
static inline void nt_rand(struct oc_nn_tensor *t, struct oc_nn_backend *be, uint64_t rows,
                           uint64_t cols, float lo, float hi, uint64_t tag)
{
    struct oc_err err;
    oc_nn_tensor_init(t, be, OC_NN_F32);
    if (oc_nn_tensor_resize(t, rows, cols, "test", &err) != OC_OK) {
        fprintf(stderr, "resize: %s\n", err.msg);
        exit(1);
    }
    struct oc_rng r;
    oc_rng_init(&r, 1234, tag, rows, cols);
    float *p = t->data;
    for (uint64_t i = 0; i < rows * cols; i++)
        p[i] = lo + (hi - lo) * oc_rng_uniform(&r);
}

static inline void nt_zeros(struct oc_nn_tensor *t, struct oc_nn_backend *be, uint64_t rows,
                            uint64_t cols, enum oc_nn_dtype dtype)
{
    struct oc_err err;
    oc_nn_tensor_init(t, be, dtype);
    if (oc_nn_tensor_resize(t, rows, cols, "test", &err) != OC_OK ||
        oc_nn_tensor_zero(t, &err) != OC_OK) {
        fprintf(stderr, "zeros: %s\n", err.msg);
        exit(1);
    }
}

static inline float *nt_f(const struct oc_nn_tensor *t)
{
    return (float *)t->data;
}

/*
 * The golden block: 7 sources, 4 destinations (a prefix), with an explicit
 * self-edge (dst 0 <- src 0 and dst 3 <- src 3), a destination without edges
 * (dst 2) and a source no destination reads except by self-loop (src 2 reads
 * only from dst 0; src 4/6 only once).
 *   dst 0 <- {0, 2, 5}   dst 1 <- {3, 4, 6, 0}   dst 2 <- {}   dst 3 <- {1, 3, 5}
 */
static const uint64_t nt_b0_indptr[5] = {0, 3, 7, 7, 10};
static const uint32_t nt_b0_indices[10] = {0, 2, 5, 3, 4, 6, 0, 1, 3, 5};
/* The next layer's block: 4 sources (= block 0's dst), 2 destinations. */
static const uint64_t nt_b1_indptr[3] = {0, 2, 5};
static const uint32_t nt_b1_indices[5] = {1, 3, 0, 2, 3};

static inline struct oc_nn_block nt_block0(void)
{
    struct oc_nn_block b = {7, 4, nt_b0_indptr, nt_b0_indices, NULL};
    return b;
}

static inline struct oc_nn_block nt_block1(void)
{
    struct oc_nn_block b = {4, 2, nt_b1_indptr, nt_b1_indices, NULL};
    return b;
}

/* sum_k w_k out_k in double */
static inline double nt_dot(const struct oc_nn_tensor *out, const float *w)
{
    double s = 0.0;
    const float *o = out->data;
    for (uint64_t i = 0; i < out->n_rows * out->n_cols; i++)
        s += (double)w[i] * (double)o[i];
    return s;
}

typedef double (*nt_loss_fn)(void *ctx);

/*
 * Checks grad (analytic, same shape as x) against central differences of
 * loss(ctx) w.r.t. every element of x. Returns the number of mismatches
 * (printing the first few).
 */
static inline int nt_gradcheck(const char *what, nt_loss_fn loss, void *ctx, struct oc_nn_tensor *x,
                               const float *grad, float eps, double atol, double rtol)
{
    int bad = 0;
    float *p = x->data;
    for (uint64_t i = 0; i < x->n_rows * x->n_cols; i++) {
        float keep = p[i];
        p[i] = keep + eps;
        double lp = loss(ctx);
        p[i] = keep - eps;
        double lm = loss(ctx);
        p[i] = keep;
        double num = (lp - lm) / (2.0 * (double)eps), ana = (double)grad[i];
        if (!(fabs(num - ana) <= atol + rtol * fabs(num))) {
            if (bad < 5)
                fprintf(stderr, "  gradcheck %s[%llu]: numeric %.6g analytic %.6g\n", what,
                        (unsigned long long)i, num, ana);
            bad++;
        }
    }
    return bad;
}

/* max |a - b| over n floats vs doubles */
static inline double nt_maxdiff(const float *a, const double *b, uint64_t n)
{
    double m = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

#endif
