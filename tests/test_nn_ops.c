/*
 * test_nn_ops.c — the dense nn ops on the CPU backend: GEMM (all transposes,
 * multi-tile and k-split paths), bias/column sum, ReLU/ELU, dropout, the GAT
 * head mean, log-softmax NLL and Adam. Each is compared with a naive double
 * reference, checked by finite differences where it has a backward, and run
 * at 1, 2 and 3 threads for bit-identical output. Shape errors must name the
 * op and the shapes. Dropout's eight-block Philox equals the counter RNG in
 * both its forms. The OpenBLAS core is corrected only where OpenBLAS fell
 * back below the CPU.
 */
#include <stdlib.h>
#include <strings.h>

#include "nn/cpu_int.h"
#include "nn_testutil.h"

static void ref_gemm(int ta, int tb, float alpha, const struct oc_nn_tensor *a,
                     const struct oc_nn_tensor *b, float beta, const float *c0, uint64_t m,
                     uint64_t n, uint64_t k, double *out)
{
    const float *A = a->data, *B = b->data;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (uint64_t q = 0; q < k; q++) {
                double av = ta ? A[q * a->n_cols + i] : A[i * a->n_cols + q];
                double bv = tb ? B[j * b->n_cols + q] : B[q * b->n_cols + j];
                s += av * bv;
            }
            out[i * n + j] = alpha * s + (beta != 0.0f ? beta * c0[i * n + j] : 0.0);
        }
}

static void check_gemm_case(int ta, int tb, uint64_t m, uint64_t n, uint64_t k, float alpha,
                            float beta)
{
    struct nt_env env[3];
    float *first = NULL;
    for (unsigned t = 0; t < 3; t++) {
        OC_CHECK(nt_env_new(&env[t], t + 1) == 0);
        struct oc_nn_tensor a, b, c;
        struct oc_err err;
        nt_rand(&a, env[t].be, ta ? k : m, ta ? m : k, -1, 1, 1);
        nt_rand(&b, env[t].be, tb ? n : k, tb ? k : n, -1, 1, 2);
        nt_rand(&c, env[t].be, m, n, -1, 1, 3);
        float *c0 = malloc((size_t)(m * n) * sizeof(float));
        memcpy(c0, c.data, (size_t)(m * n) * sizeof(float));
        OC_CHECK_OK(oc_nn_gemm(ta, tb, alpha, &a, &b, beta, &c, &err), &err);
        if (t == 0) {
            double *ref = malloc((size_t)(m * n) * sizeof(double));
            ref_gemm(ta, tb, alpha, &a, &b, beta, c0, m, n, k, ref);
            double d = nt_maxdiff(c.data, ref, m * n);
            if (!(d < 2e-5 * sqrt((double)k) + 1e-5))
                fprintf(stderr, "  gemm ta=%d tb=%d %llux%llux%llu: max diff %g\n", ta, tb,
                        (unsigned long long)m, (unsigned long long)n, (unsigned long long)k, d);
            OC_CHECK(d < 2e-5 * sqrt((double)k) + 1e-5);
            free(ref);
            first = malloc((size_t)(m * n) * sizeof(float));
            memcpy(first, c.data, (size_t)(m * n) * sizeof(float));
        } else {
            OC_CHECK(memcmp(first, c.data, (size_t)(m * n) * sizeof(float)) == 0);
        }
        free(c0);
        oc_nn_tensor_deinit(&a);
        oc_nn_tensor_deinit(&b);
        oc_nn_tensor_deinit(&c);
        nt_env_free(&env[t]);
    }
    free(first);
}

OC_TEST(gemm_matches_reference_and_threads)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm_case(ta, tb, 5, 3, 4, 1.0f, 0.0f);
            check_gemm_case(ta, tb, 130, 300, 37, 0.5f, 1.0f); /* several tiles */
            check_gemm_case(ta, tb, 20, 30, 9000, 1.0f, 0.0f); /* k-split */
            check_gemm_case(ta, tb, 7, 9, 5000, 2.0f, 1.0f);   /* k-split, accumulate */
        }
}

struct gemm_gc {
    struct oc_nn_tensor *a, *b, *c;
    const float *w;
};

static double gemm_loss(void *p)
{
    struct gemm_gc *g = p;
    struct oc_err err;
    if (oc_nn_gemm(0, 0, 1.0f, g->a, g->b, 0.0f, g->c, &err) != OC_OK)
        return NAN;
    return nt_dot(g->c, g->w);
}

OC_TEST(gemm_gradients_finite_differences)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_nn_tensor a, b, c, w, da, db;
    struct oc_err err;
    nt_rand(&a, env.be, 6, 4, -1, 1, 10);
    nt_rand(&b, env.be, 4, 5, -1, 1, 11);
    nt_zeros(&c, env.be, 6, 5, OC_NN_F32);
    nt_rand(&w, env.be, 6, 5, -1, 1, 12);
    nt_zeros(&da, env.be, 6, 4, OC_NN_F32);
    nt_zeros(&db, env.be, 4, 5, OC_NN_F32);
    /* dA = dY B^T, dB = A^T dY: the products the layers use in backward */
    OC_CHECK_OK(oc_nn_gemm(0, 1, 1.0f, &w, &b, 0.0f, &da, &err), &err);
    OC_CHECK_OK(oc_nn_gemm(1, 0, 1.0f, &a, &w, 0.0f, &db, &err), &err);
    struct gemm_gc g = {&a, &b, &c, w.data};
    OC_CHECK(nt_gradcheck("gemm a", gemm_loss, &g, &a, da.data, 1e-2f, 1e-3, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("gemm b", gemm_loss, &g, &b, db.data, 1e-2f, 1e-3, 1e-2) == 0);
    struct oc_nn_tensor *ts[] = {&a, &b, &c, &w, &da, &db};
    for (unsigned i = 0; i < 6; i++)
        oc_nn_tensor_deinit(ts[i]);
    nt_env_free(&env);
}

OC_TEST(shape_errors_name_op_and_shapes)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 1) == 0);
    struct oc_nn_tensor a, b, c, bias, m8;
    struct oc_err err;
    nt_rand(&a, env.be, 3, 4, -1, 1, 1);
    nt_rand(&b, env.be, 5, 2, -1, 1, 2);
    nt_zeros(&c, env.be, 3, 2, OC_NN_F32);
    nt_zeros(&bias, env.be, 1, 3, OC_NN_F32);
    nt_zeros(&m8, env.be, 3, 2, OC_NN_U8);
    OC_CHECK_ERR(oc_nn_gemm(0, 0, 1.0f, &a, &b, 0.0f, &c, &err), OC_ERR_ARG, &err,
                 "gemm: op(a) 3x4 times op(b) 5x2");
    OC_CHECK_ERR(oc_nn_bias_add(&c, &bias, &err), OC_ERR_ARG, &err,
                 "bias_add: bias is 1x3, expected 1x2");
    OC_CHECK_ERR(oc_nn_act_fwd(OC_NN_ACT_RELU, &a, &c, &err), OC_ERR_ARG, &err,
                 "act_fwd: y is 3x2, expected 3x4");
    OC_CHECK_ERR(oc_nn_act_fwd(OC_NN_ACT_RELU, &m8, &m8, &err), OC_ERR_ARG, &err,
                 "x is u8, expected f32");
    struct oc_nn_drop_key key = {1, 0, 0};
    OC_CHECK_ERR(oc_nn_dropout_fwd(&c, 1.0f, &key, &c, &m8, &err), OC_ERR_ARG, &err,
                 "outside [0, 1)");
    struct oc_nn_tensor *ts[] = {&a, &b, &c, &bias, &m8};
    for (unsigned i = 0; i < 5; i++)
        oc_nn_tensor_deinit(ts[i]);
    nt_env_free(&env);
}

struct bias_gc {
    struct oc_nn_tensor *y0, *y, *b;
    const float *w;
};

static double bias_loss(void *p)
{
    struct bias_gc *g = p;
    struct oc_err err;
    memcpy(g->y->data, g->y0->data, oc_nn_tensor_bytes(g->y));
    if (oc_nn_bias_add(g->y, g->b, &err) != OC_OK)
        return NAN;
    return nt_dot(g->y, g->w);
}

OC_TEST(bias_and_colsum)
{
    struct oc_err err;
    float *first = NULL;
    for (unsigned t = 1; t <= 3; t++) {
        struct nt_env env;
        OC_CHECK(nt_env_new(&env, t) == 0);
        struct oc_nn_tensor x, s, y0, y, b, w;
        nt_rand(&x, env.be, 1000, 13, -1, 1, 20); /* several reduction chunks */
        nt_zeros(&s, env.be, 1, 13, OC_NN_F32);
        OC_CHECK_OK(oc_nn_colsum(&x, &s, &err), &err);
        double ref[13] = {0};
        for (uint64_t i = 0; i < 1000; i++)
            for (uint64_t j = 0; j < 13; j++)
                ref[j] += nt_f(&x)[i * 13 + j];
        OC_CHECK(nt_maxdiff(s.data, ref, 13) < 1e-3);
        if (t == 1) {
            first = malloc(13 * sizeof(float));
            memcpy(first, s.data, 13 * sizeof(float));
            /* bias add: reference and gradient (= column sums of w) */
            nt_rand(&y0, env.be, 9, 4, -1, 1, 21);
            nt_zeros(&y, env.be, 9, 4, OC_NN_F32);
            nt_rand(&b, env.be, 1, 4, -1, 1, 22);
            nt_rand(&w, env.be, 9, 4, -1, 1, 23);
            struct bias_gc g = {&y0, &y, &b, w.data};
            bias_loss(&g);
            double yr[36];
            for (int i = 0; i < 36; i++)
                yr[i] = (double)nt_f(&y0)[i] + (double)nt_f(&b)[i % 4];
            OC_CHECK(nt_maxdiff(y.data, yr, 36) < 1e-6);
            struct oc_nn_tensor db;
            nt_zeros(&db, env.be, 1, 4, OC_NN_F32);
            OC_CHECK_OK(oc_nn_colsum(&w, &db, &err), &err);
            OC_CHECK(nt_gradcheck("bias", bias_loss, &g, &b, db.data, 1e-2f, 1e-3, 1e-2) == 0);
            oc_nn_tensor_deinit(&db);
            oc_nn_tensor_deinit(&y0);
            oc_nn_tensor_deinit(&y);
            oc_nn_tensor_deinit(&b);
            oc_nn_tensor_deinit(&w);
        } else {
            OC_CHECK(memcmp(first, s.data, 13 * sizeof(float)) == 0);
        }
        oc_nn_tensor_deinit(&x);
        oc_nn_tensor_deinit(&s);
        nt_env_free(&env);
    }
    free(first);
}

struct act_gc {
    enum oc_nn_act act;
    struct oc_nn_tensor *x, *y;
    const float *w;
};

static double act_loss(void *p)
{
    struct act_gc *g = p;
    struct oc_err err;
    if (oc_nn_act_fwd(g->act, g->x, g->y, &err) != OC_OK)
        return NAN;
    return nt_dot(g->y, g->w);
}

/* The OpenBLAS core is corrected only where OpenBLAS fell back below what the CPU can run. */
OC_TEST(blas_core_pick_corrects_only_a_fallback)
{
    OC_CHECK(strcmp(oc_nn_blas_core_pick("Prescott", OC_NN_CPU_LEVEL_AVX512), "SkylakeX") == 0);
    OC_CHECK(strcmp(oc_nn_blas_core_pick("prescott", OC_NN_CPU_LEVEL_AVX2), "Haswell") == 0);
    OC_CHECK(strcmp(oc_nn_blas_core_pick("Sandybridge", OC_NN_CPU_LEVEL_AVX2), "Haswell") == 0);
    OC_CHECK(strcmp(oc_nn_blas_core_pick("Core2", OC_NN_CPU_LEVEL_AVX512), "SkylakeX") == 0);
    OC_CHECK(strcmp(oc_nn_blas_core_pick("Opteron_SSE3", OC_NN_CPU_LEVEL_AVX2), "Haswell") == 0);
    OC_CHECK(strcmp(oc_nn_blas_core_pick("Unknown", OC_NN_CPU_LEVEL_AVX512), "SkylakeX") == 0);
    OC_CHECK(oc_nn_blas_core_pick("Prescott", OC_NN_CPU_LEVEL_BASE) == NULL);
    OC_CHECK(oc_nn_blas_core_pick("Haswell", OC_NN_CPU_LEVEL_AVX512) == NULL);
    OC_CHECK(oc_nn_blas_core_pick("SkylakeX", OC_NN_CPU_LEVEL_AVX512) == NULL);
    OC_CHECK(oc_nn_blas_core_pick("Cooperlake", OC_NN_CPU_LEVEL_AVX512) == NULL);
    OC_CHECK(oc_nn_blas_core_pick("Zen", OC_NN_CPU_LEVEL_AVX2) == NULL);
    OC_CHECK(oc_nn_blas_core_pick(NULL, OC_NN_CPU_LEVEL_AVX512) == NULL);
    /* this process, restarted by the harness where needed, runs a core that fits the CPU: unless
       the user chose another one */
    const char *set = getenv("OPENBLAS_CORETYPE");
    const char *auto_core = oc_nn_blas_core_for_level(oc_nn_cpu_level_detect());
    if (!set || (auto_core && strcasecmp(set, auto_core) == 0))
        OC_CHECK(oc_nn_blas_core_pick(oc_nn_blas_core(), oc_nn_cpu_level_detect()) == NULL);
    /* a core the user set is theirs: no advice, whatever it is */
    char *saved = set ? strdup(set) : NULL;
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    OC_CHECK(oc_nn_blas_core_advice() == NULL);
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    free(saved);
}

OC_TEST(relu_elu_tanh_reference_and_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    for (int a = 0; a < OC_NN_ACT_COUNT; a++) {
        struct oc_nn_tensor x, y, w, dx;
        nt_rand(&x, env.be, 7, 6, -2, 2, 30);
        for (int i = 0; i < 42; i++) /* keep away from the kink at 0 */
            if (fabsf(nt_f(&x)[i]) < 0.05f)
                nt_f(&x)[i] = 0.3f;
        nt_zeros(&y, env.be, 7, 6, OC_NN_F32);
        nt_rand(&w, env.be, 7, 6, -1, 1, 31);
        nt_zeros(&dx, env.be, 7, 6, OC_NN_F32);
        struct act_gc g = {(enum oc_nn_act)a, &x, &y, w.data};
        act_loss(&g);
        double ref[42];
        for (int i = 0; i < 42; i++) {
            double v = nt_f(&x)[i];
            ref[i] = a == OC_NN_ACT_TANH   ? tanh(v)
                     : v > 0               ? v
                     : a == OC_NN_ACT_RELU ? 0.0
                                           : expm1(v);
        }
        OC_CHECK(nt_maxdiff(y.data, ref, 42) < 1e-6);
        OC_CHECK_OK(oc_nn_act_bwd((enum oc_nn_act)a, &y, &w, &dx, &err), &err);
        OC_CHECK(nt_gradcheck(a == OC_NN_ACT_TANH ? "tanh"
                              : a                 ? "elu"
                                                  : "relu",
                              act_loss, &g, &x, dx.data, 1e-2f, 1e-3, 1e-2) == 0);
        /* in place gives the same bits */
        act_loss(&g);
        OC_CHECK_OK(oc_nn_act_fwd((enum oc_nn_act)a, &x, &x, &err), &err);
        OC_CHECK(memcmp(x.data, y.data, 42 * sizeof(float)) == 0);
        oc_nn_tensor_deinit(&x);
        oc_nn_tensor_deinit(&y);
        oc_nn_tensor_deinit(&w);
        oc_nn_tensor_deinit(&dx);
    }
    nt_env_free(&env);
}

/*
 * oc_nn_act_fwd(a) over x[0..n) (n a multiple of 64), outputs into y, against
 * ref in double: the worst error in ulps of the reference (as a float) and
 * absolute; returns how many elements are over max_ulps or not finite.
 */
static int act_error(enum oc_nn_act a, const float *x, float *y, int n, double (*ref)(double),
                     double max_ulps, double *worst_ulps, double *worst_abs)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct oc_nn_tensor tx, ty;
    nt_zeros(&tx, env.be, (uint64_t)n / 64, 64, OC_NN_F32);
    nt_zeros(&ty, env.be, (uint64_t)n / 64, 64, OC_NN_F32);
    memcpy(tx.data, x, (size_t)n * sizeof(float));
    OC_CHECK_OK(oc_nn_act_fwd(a, &tx, &ty, &err), &err);
    memcpy(y, ty.data, (size_t)n * sizeof(float));
    int bad = 0;
    *worst_ulps = *worst_abs = 0.0;
    for (int i = 0; i < n; i++) {
        double r = ref(x[i]), d = fabs(y[i] - r);
        double ulp = r == 0 ? 1e-45 : fabs((double)nextafterf((float)r, 0.0f) - (float)r);
        double e = d / ulp;
        *worst_ulps = e > *worst_ulps ? e : *worst_ulps;
        *worst_abs = d > *worst_abs ? d : *worst_abs;
        bad += !(e <= max_ulps);
    }
    oc_nn_tensor_deinit(&tx);
    oc_nn_tensor_deinit(&ty);
    nt_env_free(&env);
    return bad;
}

static double elu_ref(double v)
{
    return v > 0 ? v : expm1(v);
}

/* ELU's expm1 (branch-free, vectorized) within 2 ulps of expm1 over its whole negative range */
OC_TEST(elu_within_two_ulps_of_expm1)
{
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) /* -100 .. 1, denser near 0 (cubed), and 0 itself */
        x[i] = i == 0 ? 0.0f : -100.0f * powf((float)i / N, 3.0f) + (i % 97 == 0 ? 1.5f : 0);
    double worst, worst_abs;
    OC_CHECK(act_error(OC_NN_ACT_ELU, x, y, N, elu_ref, 2.0, &worst, &worst_abs) == 0);
    OC_CHECK(y[0] == 0.0f);
    printf("  ELU: worst %.2f ulps of expm1 over [-100, 1.5]\n", worst);
    free(x);
    free(y);
}

/* the inlined exp behind tanh, sigmoid and the GRU within 2 ulps of exp over its range */
OC_TEST(inlined_exp_within_two_ulps)
{
    double worst = 0.0;
    int bad = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = -87.0f + 175.0f * (float)i / 2000000.0f;
        double ref = exp((double)x), got = oc_nn_expf(x);
        double ulp = (double)nextafterf((float)ref, INFINITY) - (float)ref;
        double e = fabs(got - ref) / ulp;
        worst = e > worst ? e : worst;
        bad += !(e <= 2.0);
    }
    OC_CHECK(bad == 0 && oc_nn_expf(0.0f) == 1.0f);
    printf("  exp: worst %.2f ulps over [-87, 88]\n", worst);
}

/* tanh (through the inlined exp) within a few ulps of tanh over [-12, 12] */
OC_TEST(tanh_within_a_few_ulps)
{
    enum { N = 1 << 18 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        x[i] = -12.0f + 24.0f * (float)i / N;
    double worst, worst_abs;
    /* 1 - 2 / (e^2x + 1) cancels near 0: many ulps there, 1.2e-7 absolute at most */
    OC_CHECK(act_error(OC_NN_ACT_TANH, x, y, N, tanh, 1e30, &worst, &worst_abs) == 0);
    OC_CHECK(worst_abs < 2.5e-7 && y[0] == -1.0f && y[N - 1] == 1.0f);
    printf("  tanh: worst %.1f ulps, %.2e absolute over [-12, 12]\n", worst, worst_abs);
    free(x);
    free(y);
}

OC_TEST(bias_act_same_bits_as_bias_then_act)
{
    struct oc_err err;
    for (unsigned t = 1; t <= 3; t += 2) {
        struct nt_env env;
        OC_CHECK(nt_env_new(&env, t) == 0);
        for (int a = 0; a < OC_NN_ACT_COUNT; a++) {
            struct oc_nn_tensor x, b, y, ref;
            nt_rand(&x, env.be, 131, 37, -2, 2, 60);
            nt_rand(&b, env.be, 1, 37, -1, 1, 61);
            nt_zeros(&y, env.be, 131, 37, OC_NN_F32);
            nt_rand(&ref, env.be, 131, 37, -2, 2, 60);
            OC_CHECK_OK(oc_nn_bias_act((enum oc_nn_act)a, &x, &b, &y, &err), &err);
            OC_CHECK_OK(oc_nn_bias_add(&ref, &b, &err), &err);
            OC_CHECK_OK(oc_nn_act_fwd((enum oc_nn_act)a, &ref, &ref, &err), &err);
            OC_CHECK(memcmp(y.data, ref.data, oc_nn_tensor_bytes(&y)) == 0);
            /* in place */
            OC_CHECK_OK(oc_nn_bias_act((enum oc_nn_act)a, &x, &b, &x, &err), &err);
            OC_CHECK(memcmp(x.data, ref.data, oc_nn_tensor_bytes(&x)) == 0);
            oc_nn_tensor_deinit(&x);
            oc_nn_tensor_deinit(&b);
            oc_nn_tensor_deinit(&y);
            oc_nn_tensor_deinit(&ref);
        }
        struct oc_nn_tensor x, b;
        nt_zeros(&x, env.be, 3, 4, OC_NN_F32);
        nt_zeros(&b, env.be, 1, 3, OC_NN_F32);
        OC_CHECK_ERR(oc_nn_bias_act(OC_NN_ACT_RELU, &x, &b, &x, &err), OC_ERR_ARG, &err,
                     "bias_act: bias is 1x3, expected 1x4");
        oc_nn_tensor_deinit(&x);
        oc_nn_tensor_deinit(&b);
        nt_env_free(&env);
    }
}

struct drop_gc {
    struct oc_nn_tensor *x, *y, *mask;
    struct oc_nn_drop_key key;
    float p;
    const float *w;
};

static double drop_loss(void *p)
{
    struct drop_gc *g = p;
    struct oc_err err;
    if (oc_nn_dropout_fwd(g->x, g->p, &g->key, g->y, g->mask, &err) != OC_OK)
        return NAN;
    return nt_dot(g->y, g->w);
}

OC_TEST(dropout_masks_rate_scale_determinism_gradient)
{
    struct oc_err err;
    uint8_t *first = NULL;
    const uint64_t rows = 300, cols = 50;
    for (unsigned t = 1; t <= 3; t++) {
        struct nt_env env;
        OC_CHECK(nt_env_new(&env, t) == 0);
        struct oc_nn_tensor x, y, mask;
        nt_rand(&x, env.be, rows, cols, 0.5f, 1.5f, 40);
        nt_zeros(&y, env.be, rows, cols, OC_NN_F32);
        nt_zeros(&mask, env.be, rows, cols, OC_NN_U8);
        struct oc_nn_drop_key key = {99, 1, OC_NN_SITE_INPUT};
        OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.4f, &key, &y, &mask, &err), &err);
        uint64_t kept = 0;
        int scale_ok = 1;
        for (uint64_t i = 0; i < rows * cols; i++) {
            uint8_t k = ((uint8_t *)mask.data)[i];
            kept += k;
            float want = k ? nt_f(&x)[i] / 0.6f : 0.0f;
            if (fabsf(nt_f(&y)[i] - want) > 1e-5f)
                scale_ok = 0;
        }
        OC_CHECK(scale_ok);
        double rate = (double)kept / (double)(rows * cols);
        OC_CHECK(rate > 0.57 && rate < 0.63);
        if (t == 1) {
            first = malloc(rows * cols);
            memcpy(first, mask.data, rows * cols);
            /* without a mask (no backward): same values, zero groups skipped */
            for (uint64_t i = 0; i < rows * cols; i += 3)
                nt_f(&x)[i] = 0.0f;
            for (uint64_t i = 0; i < 8 * 20; i++) /* whole zero groups in row 0 */
                nt_f(&x)[i] = 0.0f;
            struct oc_nn_tensor y2;
            nt_zeros(&y2, env.be, rows, cols, OC_NN_F32);
            OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.4f, &key, &y, &mask, &err), &err);
            OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.4f, &key, &y2, NULL, &err), &err);
            OC_CHECK(memcmp(y.data, y2.data, rows * cols * sizeof(float)) == 0);
            OC_CHECK(memcmp(first, mask.data, rows * cols) == 0);
            oc_nn_tensor_deinit(&y2);
            /* another key gives another mask */
            struct oc_nn_drop_key key2 = {99, 2, OC_NN_SITE_INPUT};
            OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.4f, &key2, &y, &mask, &err), &err);
            OC_CHECK(memcmp(first, mask.data, rows * cols) != 0);
            /* gradient on a small tensor: masks repeat for the same key */
            struct oc_nn_tensor xs, ys, ms, w, dx;
            nt_rand(&xs, env.be, 5, 6, -1, 1, 41);
            nt_zeros(&ys, env.be, 5, 6, OC_NN_F32);
            nt_zeros(&ms, env.be, 5, 6, OC_NN_U8);
            nt_rand(&w, env.be, 5, 6, -1, 1, 42);
            nt_zeros(&dx, env.be, 5, 6, OC_NN_F32);
            struct drop_gc g = {&xs, &ys, &ms, {7, 0, 0}, 0.5f, w.data};
            drop_loss(&g);
            OC_CHECK_OK(oc_nn_dropout_bwd(&w, &ms, 0.5f, &dx, &err), &err);
            OC_CHECK(nt_gradcheck("dropout", drop_loss, &g, &xs, dx.data, 1e-2f, 1e-3, 1e-2) == 0);
            oc_nn_tensor_deinit(&xs);
            oc_nn_tensor_deinit(&ys);
            oc_nn_tensor_deinit(&ms);
            oc_nn_tensor_deinit(&w);
            oc_nn_tensor_deinit(&dx);
        } else {
            OC_CHECK(memcmp(first, mask.data, rows * cols) == 0);
        }
        oc_nn_tensor_deinit(&x);
        oc_nn_tensor_deinit(&y);
        oc_nn_tensor_deinit(&mask);
        nt_env_free(&env);
    }
    free(first);
}

struct hm_gc {
    struct oc_nn_tensor *x, *y;
    uint32_t heads;
    const float *w;
};

static double hm_loss(void *p)
{
    struct hm_gc *g = p;
    struct oc_err err;
    if (oc_nn_head_mean_fwd(g->x, g->heads, g->y, &err) != OC_OK)
        return NAN;
    return nt_dot(g->y, g->w);
}

/*
 * The mask is the documented pure function of (seed, layer, site, row, col):
 * checked element by element against oc_rng_block on rows wide enough to span
 * several eight-block draws (and a partial one), with and without a mask kept.
 */
OC_TEST(dropout_mask_matches_counter_rng_formula)
{
    struct oc_err err;
    const uint64_t rows = 7, cols = 150; /* 19 blocks of 8 per row */
    for (unsigned t = 1; t <= 2; t++) {
        struct nt_env env;
        OC_CHECK(nt_env_new(&env, t) == 0);
        struct oc_nn_tensor x, y, y2, mask;
        nt_rand(&x, env.be, rows, cols, 0.5f, 1.5f, 43);
        nt_zeros(&y, env.be, rows, cols, OC_NN_F32);
        nt_zeros(&y2, env.be, rows, cols, OC_NN_F32);
        nt_zeros(&mask, env.be, rows, cols, OC_NN_U8);
        struct oc_nn_drop_key key = {0x1234567890ULL, 3, OC_NN_SITE_ATTN};
        OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.3f, &key, &y, &mask, &err), &err);
        OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.3f, &key, &y2, NULL, &err), &err);
        uint32_t thr = oc_nn_dropout_threshold(0.3f);
        uint64_t site = oc_rng_mix64(oc_rng_mix64(key.seed, key.layer), key.site);
        int same = 1;
        for (uint64_t r = 0; r < rows; r++) {
            for (uint64_t c = 0; c < cols; c++) {
                uint32_t bits[4];
                oc_rng_block(key.seed, oc_rng_mix64(site, r), c / 8, bits);
                uint32_t k = (uint32_t)(c % 8);
                uint32_t u = (bits[k / 2] >> (16 * (k % 2))) & 0xFFFFu;
                uint8_t keep = u >= thr;
                float want = keep ? nt_f(&x)[r * cols + c] * (1.0f / 0.7f) : 0.0f;
                same &= ((uint8_t *)mask.data)[r * cols + c] == keep;
                same &= nt_f(&y)[r * cols + c] == want && nt_f(&y2)[r * cols + c] == want;
            }
        }
        OC_CHECK(same);
        oc_nn_tensor_deinit(&x);
        oc_nn_tensor_deinit(&y);
        oc_nn_tensor_deinit(&y2);
        oc_nn_tensor_deinit(&mask);
        nt_env_free(&env);
    }
}

/* Both forms of the eight-block Philox equal oc_rng_block lane by lane, counters crossing 2^32. */
OC_TEST(philox_x8_forms_equal_the_counter_rng)
{
    const uint64_t seeds[] = {0, 7, 0xFFFFFFFFFFFFFFFFull, 0x0123456789ABCDEFull};
    const uint64_t b0s[] = {0, 8, 0xFFFFFFFCull, 0xFFFFFFFFFFFFFFF9ull};
    int vector_ran = 0;
    for (unsigned s = 0; s < 4; s++)
        for (unsigned b = 0; b < 4; b++) {
            uint64_t stream = oc_rng_mix64(seeds[s], b);
            uint32_t want[8][4], scalar[8][4], vec[8][4], any[8][4];
            for (unsigned l = 0; l < 8; l++)
                oc_rng_block(seeds[s], stream, b0s[b] + l, want[l]);
            oc_nn_philox_x8_scalar(seeds[s], stream, b0s[b], scalar);
            oc_nn_philox_x8(seeds[s], stream, b0s[b], any);
            OC_CHECK(memcmp(scalar, want, sizeof(want)) == 0);
            OC_CHECK(memcmp(any, want, sizeof(want)) == 0);
            if (oc_nn_philox_x8_vector(seeds[s], stream, b0s[b], vec)) {
                vector_ran = 1;
                OC_CHECK(memcmp(vec, want, sizeof(want)) == 0);
            }
        }
    /* AVX2 comes with every level above the base one */
    OC_CHECK(vector_ran || oc_nn_cpu_level_detect() == OC_NN_CPU_LEVEL_BASE);
}

/* Without a mask a group of 8 zero inputs is skipped (+0 out); a -0 among non-zeros is scaled. */
OC_TEST(dropout_zero_groups_without_mask)
{
    struct oc_err err;
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    const uint64_t rows = 5, cols = 150;
    struct oc_nn_tensor x, y, y2, mask;
    nt_rand(&x, env.be, rows, cols, 0.5f, 1.5f, 44);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            uint64_t grp = c / 8;
            if (grp % 3 == 0)
                nt_f(&x)[r * cols + c] = (c % 2) ? -0.0f : 0.0f; /* an all-zero group */
            else if (grp % 3 == 1 && c % 8 == 2)
                nt_f(&x)[r * cols + c] = -0.0f;
        }
    nt_zeros(&y, env.be, rows, cols, OC_NN_F32);
    nt_zeros(&y2, env.be, rows, cols, OC_NN_F32);
    nt_zeros(&mask, env.be, rows, cols, OC_NN_U8);
    struct oc_nn_drop_key key = {77, 1, OC_NN_SITE_INPUT};
    OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.5f, &key, &y, NULL, &err), &err);
    OC_CHECK_OK(oc_nn_dropout_fwd(&x, 0.5f, &key, &y2, &mask, &err), &err);
    int same = 1;
    for (uint64_t i = 0; i < rows * cols; i++) {
        uint64_t c = i % cols, g0 = i - c % 8, g1 = g0 + 8 < i - c + cols ? g0 + 8 : i - c + cols;
        int zero_group = 1;
        for (uint64_t j = g0; j < g1; j++)
            zero_group &= nt_f(&x)[j] == 0.0f;
        float v = nt_f(&x)[i] * 2.0f;
        float want = zero_group || !((uint8_t *)mask.data)[i] ? 0.0f : v;
        float want_m = ((uint8_t *)mask.data)[i] ? v : 0.0f;
        same &= memcmp(&nt_f(&y)[i], &want, sizeof(float)) == 0;
        same &= memcmp(&nt_f(&y2)[i], &want_m, sizeof(float)) == 0;
    }
    OC_CHECK(same);
    oc_nn_tensor_deinit(&x);
    oc_nn_tensor_deinit(&y);
    oc_nn_tensor_deinit(&y2);
    oc_nn_tensor_deinit(&mask);
    nt_env_free(&env);
}

OC_TEST(head_mean_reference_and_gradient)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct oc_nn_tensor x, y, w, dx;
    nt_rand(&x, env.be, 4, 9, -1, 1, 50);
    nt_zeros(&y, env.be, 4, 3, OC_NN_F32);
    nt_rand(&w, env.be, 4, 3, -1, 1, 51);
    nt_zeros(&dx, env.be, 4, 9, OC_NN_F32);
    struct hm_gc g = {&x, &y, 3, w.data};
    hm_loss(&g);
    double ref[12];
    for (int i = 0; i < 4; i++)
        for (int f = 0; f < 3; f++)
            ref[i * 3 + f] =
                ((double)nt_f(&x)[i * 9 + f] + nt_f(&x)[i * 9 + 3 + f] + nt_f(&x)[i * 9 + 6 + f]) /
                3.0;
    OC_CHECK(nt_maxdiff(y.data, ref, 12) < 1e-6);
    OC_CHECK_OK(oc_nn_head_mean_bwd(&w, 3, &dx, &err), &err);
    OC_CHECK(nt_gradcheck("head_mean", hm_loss, &g, &x, dx.data, 1e-2f, 1e-3, 1e-2) == 0);
    OC_CHECK_ERR(oc_nn_head_mean_fwd(&x, 2, &y, &err), OC_ERR_ARG, &err, "head_mean_fwd");
    oc_nn_tensor_deinit(&x);
    oc_nn_tensor_deinit(&y);
    oc_nn_tensor_deinit(&w);
    oc_nn_tensor_deinit(&dx);
    nt_env_free(&env);
}

struct nll_gc {
    struct oc_nn_tensor *x, *dx;
    const int32_t *labels;
};

static double nll_loss(void *p)
{
    struct nll_gc *g = p;
    struct oc_err err;
    struct oc_nn_loss l;
    if (oc_nn_nll(g->x, g->labels, g->dx, &l, &err) != OC_OK)
        return NAN;
    return l.loss;
}

OC_TEST(nll_reference_gradient_and_labels)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 3) == 0);
    struct oc_err err;
    struct oc_nn_tensor x, dx, dx2;
    const uint64_t n = 150, c = 5; /* several row tasks */
    nt_rand(&x, env.be, n, c, -3, 3, 60);
    nt_zeros(&dx, env.be, n, c, OC_NN_F32);
    nt_zeros(&dx2, env.be, n, c, OC_NN_F32);
    int32_t *labels = malloc(n * sizeof(int32_t));
    for (uint64_t i = 0; i < n; i++)
        labels[i] = i % 7 == 3 ? -1 : (int32_t)(i % c);
    struct oc_nn_loss l;
    OC_CHECK_OK(oc_nn_nll(&x, labels, &dx, &l, &err), &err);
    double ref = 0.0;
    uint64_t cnt = 0, ok = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (labels[i] < 0)
            continue;
        const float *r = nt_f(&x) + i * c;
        double mx = r[0], s = 0.0;
        uint64_t arg = 0;
        for (uint64_t j = 1; j < c; j++)
            if (r[j] > mx) {
                mx = r[j];
                arg = j;
            }
        for (uint64_t j = 0; j < c; j++)
            s += exp(r[j] - mx);
        ref += mx + log(s) - r[labels[i]];
        cnt++;
        ok += arg == (uint64_t)labels[i];
    }
    ref /= (double)cnt;
    OC_CHECK(fabs(l.loss - ref) < 1e-9 * fabs(ref) + 1e-9);
    OC_CHECK(l.n_counted == cnt && l.n_correct == ok);
    int zero_rows_ok = 1;
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < c && labels[i] < 0; j++)
            if (nt_f(&dx)[i * c + j] != 0.0f)
                zero_rows_ok = 0;
    OC_CHECK(zero_rows_ok);
    struct nll_gc g = {&x, &dx2, labels};
    OC_CHECK(nt_gradcheck("nll", nll_loss, &g, &x, dx.data, 1e-2f, 1e-5, 1e-2) == 0);
    labels[4] = (int32_t)c;
    OC_CHECK_ERR(oc_nn_nll(&x, labels, &dx, &l, &err), OC_ERR_ARG, &err,
                 "row 4 has label 5, but there are 5 classes");
    for (uint64_t i = 0; i < n; i++)
        labels[i] = -1;
    OC_CHECK_OK(oc_nn_nll(&x, labels, &dx, &l, &err), &err);
    OC_CHECK(l.loss == 0.0 && l.n_counted == 0 && nt_f(&dx)[0] == 0.0f);
    free(labels);
    oc_nn_tensor_deinit(&x);
    oc_nn_tensor_deinit(&dx);
    oc_nn_tensor_deinit(&dx2);
    nt_env_free(&env);
}

OC_TEST(adam_matches_hand_computed_steps)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct oc_nn_tensor p, g, m, v;
    nt_rand(&p, env.be, 3, 4, -1, 1, 70);
    nt_rand(&g, env.be, 3, 4, -1, 1, 71);
    nt_zeros(&m, env.be, 3, 4, OC_NN_F32);
    nt_zeros(&v, env.be, 3, 4, OC_NN_F32);
    struct oc_nn_adam opt;
    oc_nn_adam_default(&opt, 0.01f, 5e-4f);
    double P[12], M[12] = {0}, V[12] = {0};
    for (int i = 0; i < 12; i++)
        P[i] = nt_f(&p)[i];
    for (uint64_t t = 1; t <= 3; t++) {
        OC_CHECK_OK(oc_nn_adam_update(&p, &g, &m, &v, &opt, t, &err), &err);
        for (int i = 0; i < 12; i++) {
            double gr = nt_f(&g)[i] + 5e-4 * P[i];
            M[i] = 0.9 * M[i] + 0.1 * gr;
            V[i] = 0.999 * V[i] + 0.001 * gr * gr;
            double mh = M[i] / (1 - pow(0.9, (double)t)), vh = V[i] / (1 - pow(0.999, (double)t));
            P[i] -= 0.01 * mh / (sqrt(vh) + 1e-8);
        }
    }
    OC_CHECK(nt_maxdiff(p.data, P, 12) < 1e-6);
    /* first step moves each weight by about lr against the gradient sign */
    OC_CHECK_ERR(oc_nn_adam_update(&p, &g, &m, &v, &opt, 0, &err), OC_ERR_ARG, &err, "step");
    oc_nn_tensor_deinit(&p);
    oc_nn_tensor_deinit(&g);
    oc_nn_tensor_deinit(&m);
    oc_nn_tensor_deinit(&v);
    nt_env_free(&env);
}

OC_TEST(tensor_resize_views_and_no_leak)
{
    uint64_t live0 = oc_mem_n_live();
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 1) == 0);
    struct oc_err err;
    struct oc_nn_tensor t, v;
    oc_nn_tensor_init(&t, env.be, OC_NN_F32);
    OC_CHECK_OK(oc_nn_tensor_resize(&t, 10, 4, "test", &err), &err);
    void *data = t.data;
    OC_CHECK_OK(oc_nn_tensor_resize(&t, 5, 8, "test", &err), &err); /* same bytes: no growth */
    OC_CHECK(t.data == data && t.n_rows == 5 && t.n_cols == 8);
    OC_CHECK_OK(oc_nn_tensor_view_rows(&t, 2, 3, &v, &err), &err);
    OC_CHECK(v.data == (char *)t.data + 2 * 8 * 4 && v.cap_bytes == 0);
    OC_CHECK_ERR(oc_nn_tensor_resize(&v, 1, 1, "view", &err), OC_ERR_ARG, &err, "view");
    OC_CHECK_ERR(oc_nn_tensor_view_rows(&t, 4, 2, &v, &err), OC_ERR_ARG, &err, "outside");
    float host[4] = {1, 2, 3, 4};
    OC_CHECK_OK(oc_nn_tensor_wrap(env.be, OC_NN_F32, host, 2, 2, &v, &err), &err);
    float back[4];
    OC_CHECK_OK(oc_nn_tensor_get(&v, back, &err), &err);
    OC_CHECK(back[3] == 4.0f && oc_nn_backend_is_host(env.be));
    OC_CHECK(strcmp(oc_nn_backend_name(env.be), "cpu") == 0);
    oc_nn_tensor_deinit(&v);
    oc_nn_tensor_deinit(&t);
    nt_env_free(&env);
    enum oc_nn_backend_kind k;
    OC_CHECK_OK(oc_nn_backend_kind_parse("cpu", &k, &err), &err);
    OC_CHECK_ERR(oc_nn_backend_kind_parse("tpu", &k, &err), OC_ERR_ARG, &err, "tpu");
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST_MAIN()
