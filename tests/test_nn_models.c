/*
 * test_nn_models.c — the three models end to end on the CPU backend:
 * finite-difference gradient checks of every parameter through 2- and
 * 3-layer SAGE/GCN/GAT (training mode, dropout on), layer-wise inference
 * equal to the model's forward, bit-identical weights after training at 1, 2
 * and 3 threads, the Adam step against a hand computation, checkpoints
 * (round trip, corruption, wrong model), no allocation in the steady state,
 * fault injection without leaks, argument errors, and a smoke test that each
 * model learns planted classes on a synthetic graph.
 */
#include "fault_util.h"
#include "nn_testutil.h"

/* A block before the golden ones, for 3-layer models: 9 sources, 7 destinations. */
static const uint64_t pre_indptr[8] = {0, 2, 4, 5, 8, 8, 10, 12};
static const uint32_t pre_indices[12] = {7, 8, 0, 3, 6, 2, 4, 8, 1, 5, 6, 0};

struct tiny {
    struct oc_nn_block blocks[3];
    uint32_t n_layers;
    struct oc_nn_tensor x;
    int32_t labels[2];
};

static void tiny_init(struct tiny *t, struct oc_nn_backend *be, uint32_t n_layers, uint64_t in)
{
    t->n_layers = n_layers;
    uint32_t k = 0;
    if (n_layers == 3)
        t->blocks[k++] = (struct oc_nn_block){9, 7, pre_indptr, pre_indices, NULL};
    t->blocks[k++] = nt_block0();
    t->blocks[k++] = nt_block1();
    nt_rand(&t->x, be, t->blocks[0].n_src, in, -1, 1, 300);
    t->labels[0] = 2;
    t->labels[1] = 0;
}

static struct oc_nn_model *make_model(struct oc_nn_backend *be, enum oc_nn_model_kind kind,
                                      uint32_t n_layers, uint64_t in, uint64_t hidden,
                                      uint64_t classes, float p, uint64_t seed)
{
    struct oc_nn_model_config cfg;
    oc_nn_model_config_default(kind, &cfg);
    cfg.n_layers = n_layers;
    cfg.in_dim = in;
    cfg.hidden = hidden;
    cfg.n_classes = classes;
    cfg.in_dropout = p;
    cfg.dropout = p;
    cfg.attn_dropout = kind == OC_NN_MODEL_GAT ? p : 0.0f;
    if (kind == OC_NN_MODEL_GAT) {
        cfg.heads = 2;
        cfg.out_heads = 2;
    }
    cfg.seed = seed;
    struct oc_nn_model *m = NULL;
    struct oc_err err;
    if (oc_nn_model_new(be, &cfg, &m, &err) != OC_OK)
        fprintf(stderr, "model_new: %s\n", err.msg);
    return m;
}

struct model_gc {
    struct oc_nn_model *m;
    struct tiny *t;
};

static double model_loss(void *p)
{
    struct model_gc *c = p;
    struct oc_err err;
    struct oc_nn_step step = {1, 3, 4};
    struct oc_nn_loss l;
    if (oc_nn_model_forward(c->m, c->t->blocks, &c->t->x, &step, NULL, &err) != OC_OK ||
        oc_nn_model_loss(c->m, c->t->labels, &l, &err) != OC_OK) {
        fprintf(stderr, "model_loss: %s\n", err.msg);
        return NAN;
    }
    return l.loss;
}

static void gradcheck_model(enum oc_nn_model_kind kind, uint32_t n_layers, uint64_t hidden)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct tiny t;
    tiny_init(&t, env.be, n_layers, 5);
    struct oc_nn_model *m = make_model(env.be, kind, n_layers, 5, hidden, 3, 0.3f, 11);
    OC_CHECK(m != NULL);
    if (!m) {
        nt_env_free(&env);
        return;
    }
    struct model_gc c = {m, &t};
    struct oc_err err;
    OC_CHECK(isfinite(model_loss(&c)));
    OC_CHECK_OK(oc_nn_model_backward(m, &err), &err);
    int bad = 0;
    for (uint32_t i = 0; i < oc_nn_model_n_params(m); i++) {
        struct oc_nn_param *p = oc_nn_model_param_at(m, i);
        uint64_t n = p->grad.n_rows * p->grad.n_cols;
        float *grad = malloc(n * sizeof(float));
        memcpy(grad, p->grad.data, n * sizeof(float));
        char what[64];
        snprintf(what, sizeof(what), "%s %s", oc_nn_model_kind_name(kind), p->name);
        bad += nt_gradcheck(what, model_loss, &c, &p->value, grad, 1e-3f, 1e-3, 3e-2);
        free(grad);
    }
    if (bad)
        fprintf(stderr, "  %s, %u layers, hidden %llu: %d mismatches\n",
                oc_nn_model_kind_name(kind), n_layers, (unsigned long long)hidden, bad);
    OC_CHECK(bad == 0);
    oc_nn_model_free(m);
    oc_nn_tensor_deinit(&t.x);
    nt_env_free(&env);
}

OC_TEST(sage_gradients_finite_differences)
{
    gradcheck_model(OC_NN_MODEL_SAGE, 2, 4); /* project before aggregating in both layers */
    gradcheck_model(OC_NN_MODEL_SAGE, 2, 6); /* aggregate first in layer 0 */
    gradcheck_model(OC_NN_MODEL_SAGE, 3, 6);
}

OC_TEST(gcn_gradients_finite_differences)
{
    gradcheck_model(OC_NN_MODEL_GCN, 2, 4);
    gradcheck_model(OC_NN_MODEL_GCN, 2, 6);
    gradcheck_model(OC_NN_MODEL_GCN, 3, 6);
}

OC_TEST(gat_gradients_finite_differences)
{
    gradcheck_model(OC_NN_MODEL_GAT, 2, 3);
    gradcheck_model(OC_NN_MODEL_GAT, 3, 2);
}

OC_TEST(layerwise_inference_equals_forward)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        struct tiny t;
        tiny_init(&t, env.be, 3, 5);
        struct oc_nn_model *m = make_model(env.be, (enum oc_nn_model_kind)k, 3, 5, 4, 3, 0.5f, 2);
        const struct oc_nn_tensor *logits;
        struct oc_nn_step eval = {0, 0, 0};
        OC_CHECK_OK(oc_nn_model_forward(m, t.blocks, &t.x, &eval, &logits, &err), &err);
        struct oc_nn_tensor h[4];
        h[0] = t.x;
        for (uint32_t l = 0; l < 3; l++) {
            uint64_t in, out;
            OC_CHECK_OK(oc_nn_model_layer_dims(m, l, &in, &out, &err), &err);
            OC_CHECK(in == h[l].n_cols);
            nt_zeros(&h[l + 1], env.be, t.blocks[l].n_dst, out, OC_NN_F32);
            OC_CHECK_OK(oc_nn_model_forward_layer(m, l, &t.blocks[l], &h[l], &h[l + 1], &err),
                        &err);
        }
        OC_CHECK(h[3].n_rows == logits->n_rows && h[3].n_cols == logits->n_cols);
        OC_CHECK(memcmp(h[3].data, logits->data, oc_nn_tensor_bytes(logits)) == 0);
        /* a training forward differs (dropout) but layer-wise inference did not disturb it */
        struct oc_nn_step train = {1, 0, 0};
        OC_CHECK_OK(oc_nn_model_forward(m, t.blocks, &t.x, &train, &logits, &err), &err);
        OC_CHECK(memcmp(h[3].data, logits->data, oc_nn_tensor_bytes(logits)) != 0);
        OC_CHECK_ERR(oc_nn_model_forward_layer(m, 1, &t.blocks[0], &h[0], &h[1], &err), OC_ERR_ARG,
                     &err, "layer input x is 9x5, expected 9x");
        for (int i = 1; i < 4; i++)
            oc_nn_tensor_deinit(&h[i]);
        oc_nn_model_free(m);
        oc_nn_tensor_deinit(&t.x);
    }
    nt_env_free(&env);
}

/* A two-block batch over a random graph, large enough for multi-task kernels and k-split. */
struct big {
    uint64_t *ip[2];
    uint32_t *ix[2];
    struct oc_nn_block blocks[2];
    float *x;
    int32_t *labels;
};

static void big_init(struct big *b, uint64_t in)
{
    const uint64_t n_src[2] = {5000, 1500}, n_dst[2] = {1500, 300};
    struct oc_rng r;
    oc_rng_init(&r, 42, 1, 2, 3);
    for (int l = 0; l < 2; l++) {
        b->ip[l] = malloc((n_dst[l] + 1) * sizeof(uint64_t));
        b->ix[l] = malloc(n_dst[l] * 12 * sizeof(uint32_t));
        b->ip[l][0] = 0;
        for (uint64_t i = 0; i < n_dst[l]; i++) {
            uint64_t d = oc_rng_below(&r, 12);
            for (uint64_t k = 0; k < d; k++)
                b->ix[l][b->ip[l][i] + k] = (uint32_t)oc_rng_below(&r, n_src[l]);
            b->ip[l][i + 1] = b->ip[l][i] + d;
        }
        b->blocks[l] = (struct oc_nn_block){n_src[l], n_dst[l], b->ip[l], b->ix[l], NULL};
    }
    b->x = malloc(n_src[0] * in * sizeof(float));
    for (uint64_t i = 0; i < n_src[0] * in; i++)
        b->x[i] = oc_rng_uniform(&r) - 0.5f;
    b->labels = malloc(n_dst[1] * sizeof(int32_t));
    for (uint64_t i = 0; i < n_dst[1]; i++)
        b->labels[i] = (int32_t)oc_rng_below(&r, 4);
}

static void big_free(struct big *b)
{
    for (int l = 0; l < 2; l++) {
        free(b->ip[l]);
        free(b->ix[l]);
    }
    free(b->x);
    free(b->labels);
}

/* Trains 3 steps at n_threads (0 = no pool); returns the parameter digest. */
static int train_digest(enum oc_nn_model_kind kind, unsigned n_threads, struct big *b,
                        uint8_t digest[32])
{
    struct nt_env env;
    if (nt_env_new(&env, n_threads) != 0)
        return -1;
    struct oc_err err;
    struct oc_nn_model *m = make_model(env.be, kind, 2, 32, 16, 4, 0.5f, 7);
    struct oc_nn_tensor x;
    int rc = m ? OC_OK : -1;
    if (rc == OC_OK)
        rc = oc_nn_tensor_wrap(env.be, OC_NN_F32, b->x, 5000, 32, &x, &err);
    struct oc_nn_adam opt;
    oc_nn_adam_default(&opt, 0.01f, 5e-4f);
    for (uint64_t s = 0; s < 3 && rc == OC_OK; s++) {
        struct oc_nn_step step = {1, 0, s};
        struct oc_nn_loss l;
        rc = oc_nn_model_forward(m, b->blocks, &x, &step, NULL, &err);
        if (rc == OC_OK)
            rc = oc_nn_model_loss(m, b->labels, &l, &err);
        if (rc == OC_OK)
            rc = oc_nn_model_backward(m, &err);
        if (rc == OC_OK)
            rc = oc_nn_model_adam_step(m, &opt, &err);
    }
    if (rc == OC_OK)
        rc = oc_nn_model_params_sha256(m, digest, &err);
    if (rc != OC_OK && m)
        fprintf(stderr, "  train_digest: %s\n", err.msg);
    oc_nn_model_free(m);
    nt_env_free(&env);
    return rc;
}

OC_TEST(same_seed_identical_weights_at_any_thread_count)
{
    struct big b;
    big_init(&b, 32);
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        uint8_t d[4][32];
        char hex[65];
        for (unsigned t = 0; t < 4; t++)
            OC_CHECK(train_digest((enum oc_nn_model_kind)k, t, &b, d[t]) == OC_OK);
        OC_CHECK(memcmp(d[0], d[1], 32) == 0);
        OC_CHECK(memcmp(d[1], d[2], 32) == 0);
        OC_CHECK(memcmp(d[1], d[3], 32) == 0);
        fprintf(stderr, "  %s params sha256 %s\n", oc_nn_model_kind_name((enum oc_nn_model_kind)k),
                oc_nn_sha256_hex(d[1], hex));
    }
    big_free(&b);
}

OC_TEST(steady_state_allocates_nothing)
{
    struct big b;
    big_init(&b, 32);
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        struct oc_nn_model *m = make_model(env.be, (enum oc_nn_model_kind)k, 2, 32, 16, 4, 0.5f, 7);
        struct oc_nn_tensor x;
        OC_CHECK_OK(oc_nn_tensor_wrap(env.be, OC_NN_F32, b.x, 5000, 32, &x, &err), &err);
        struct oc_nn_adam opt;
        oc_nn_adam_default(&opt, 0.01f, 5e-4f);
        for (uint64_t s = 0; s < 3; s++) {
            if (s == 2)
                oc_fault_arm(OC_FAULT_ALLOC, 1, 0);
            struct oc_nn_step step = {1, 0, s};
            struct oc_nn_loss l;
            OC_CHECK_OK(oc_nn_model_forward(m, b.blocks, &x, &step, NULL, &err), &err);
            OC_CHECK_OK(oc_nn_model_loss(m, b.labels, &l, &err), &err);
            OC_CHECK_OK(oc_nn_model_backward(m, &err), &err);
            OC_CHECK_OK(oc_nn_model_adam_step(m, &opt, &err), &err);
        }
        OC_CHECK(!oc_fault_fired(OC_FAULT_ALLOC));
        oc_fault_disarm_all();
        oc_nn_model_free(m);
    }
    nt_env_free(&env);
    big_free(&b);
}

OC_TEST(adam_step_on_model_matches_hand_computation)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 1) == 0);
    struct oc_err err;
    struct oc_nn_model *m = make_model(env.be, OC_NN_MODEL_GCN, 2, 5, 4, 3, 0.0f, 5);
    struct oc_nn_param *p = oc_nn_model_param_at(m, 0);
    uint64_t n = p->value.n_rows * p->value.n_cols;
    double *w = malloc(n * sizeof(double));
    for (uint64_t i = 0; i < n; i++) {
        w[i] = nt_f(&p->value)[i];
        nt_f(&p->grad)[i] = (float)((double)i / (double)n - 0.4);
    }
    struct oc_nn_adam opt;
    oc_nn_adam_default(&opt, 0.05f, 0.01f);
    OC_CHECK_OK(oc_nn_model_adam_step(m, &opt, &err), &err);
    OC_CHECK(oc_nn_model_adam_t(m) == 1);
    for (uint64_t i = 0; i < n; i++) {
        double g = ((double)i / (double)n - 0.4) + 0.01 * w[i];
        double mh = 0.1 * g / 0.1, vh = 0.001 * g * g / 0.001;
        w[i] -= 0.05 * mh / (sqrt(vh) + 1e-8);
    }
    OC_CHECK(nt_maxdiff(p->value.data, w, n) < 1e-6);
    free(w);
    oc_nn_model_free(m);
    nt_env_free(&env);
}

static int one_step(struct oc_nn_model *m, struct tiny *t, uint64_t batch, struct oc_err *err)
{
    struct oc_nn_step step = {1, 1, batch};
    struct oc_nn_loss l;
    struct oc_nn_adam opt;
    oc_nn_adam_default(&opt, 0.01f, 5e-4f);
    OC_NN_TRY(oc_nn_model_forward(m, t->blocks, &t->x, &step, NULL, err));
    OC_NN_TRY(oc_nn_model_loss(m, t->labels, &l, err));
    OC_NN_TRY(oc_nn_model_backward(m, err));
    return oc_nn_model_adam_step(m, &opt, err);
}

OC_TEST(checkpoint_round_trip_and_corruption)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct tiny t;
    tiny_init(&t, env.be, 2, 5);
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        enum oc_nn_model_kind kind = (enum oc_nn_model_kind)k;
        struct oc_nn_model *a = make_model(env.be, kind, 2, 5, 4, 3, 0.2f, 9);
        struct oc_nn_model *b = make_model(env.be, kind, 2, 5, 4, 3, 0.2f, 9);
        OC_CHECK_OK(one_step(b, &t, 7, &err), &err); /* b diverges before the load */
        OC_CHECK_OK(one_step(a, &t, 0, &err), &err);
        OC_CHECK_OK(one_step(a, &t, 1, &err), &err);
        uint64_t n = oc_nn_model_state_bytes(a);
        uint8_t *buf = malloc(n);
        OC_CHECK_OK(oc_nn_model_state_save(a, buf, n, &err), &err);
        OC_CHECK_OK(one_step(a, &t, 2, &err), &err);
        OC_CHECK_OK(oc_nn_model_state_load(b, buf, n, &err), &err);
        OC_CHECK(oc_nn_model_adam_t(b) == 2);
        OC_CHECK_OK(one_step(b, &t, 2, &err), &err);
        uint8_t da[32], db[32];
        OC_CHECK_OK(oc_nn_model_params_sha256(a, da, &err), &err);
        OC_CHECK_OK(oc_nn_model_params_sha256(b, db, &err), &err);
        OC_CHECK(memcmp(da, db, 32) == 0);
        buf[n / 2] ^= 1;
        OC_CHECK_ERR(oc_nn_model_state_load(b, buf, n, &err), OC_ERR_FORMAT, &err, "checksum");
        buf[n / 2] ^= 1;
        OC_CHECK_ERR(oc_nn_model_state_load(b, buf, n - 1, &err), OC_ERR_FORMAT, &err, "bytes");
        OC_CHECK_ERR(oc_nn_model_state_save(a, buf, n - 1, &err), OC_ERR_ARG, &err, "need");
        struct oc_nn_model *c = make_model(env.be, kind, 2, 5, 5, 3, 0.2f, 9);
        OC_CHECK_ERR(oc_nn_model_state_load(c, buf, n, &err), OC_ERR_FORMAT, &err,
                     "does not match");
        memcpy(buf, "NOTMODEL", 8);
        OC_CHECK_ERR(oc_nn_model_state_load(b, buf, n, &err), OC_ERR_FORMAT, &err, "magic");
        OC_CHECK(memcmp(da, db, 32) == 0);
        free(buf);
        oc_nn_model_free(a);
        oc_nn_model_free(b);
        oc_nn_model_free(c);
    }
    oc_nn_tensor_deinit(&t.x);
    nt_env_free(&env);
}

OC_TEST(model_argument_errors)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 1) == 0);
    struct oc_err err;
    struct oc_nn_model_config cfg;
    struct oc_nn_model *m = NULL;
    oc_nn_model_config_default(OC_NN_MODEL_GAT, &cfg);
    OC_CHECK_ERR(oc_nn_model_new(env.be, &cfg, &m, &err), OC_ERR_ARG, &err, "in_dim");
    cfg.in_dim = 5;
    cfg.n_classes = 3;
    cfg.dropout = 1.0f;
    OC_CHECK_ERR(oc_nn_model_new(env.be, &cfg, &m, &err), OC_ERR_ARG, &err, "dropout 1");
    cfg.dropout = 0.5f;
    cfg.heads = 0;
    OC_CHECK_ERR(oc_nn_model_new(env.be, &cfg, &m, &err), OC_ERR_ARG, &err, "heads");
    cfg.heads = 8;
    OC_CHECK_OK(oc_nn_model_new(env.be, &cfg, &m, &err), &err);
    OC_CHECK(oc_nn_model_n_params(m) == 8);
    OC_CHECK(oc_nn_model_n_weights(m) == 5 * 64 + 3 * 64 + 64 * 3 + 3 * 3);
    struct oc_nn_param_info info;
    OC_CHECK_OK(oc_nn_model_param_info(m, 1, &info, &err), &err);
    OC_CHECK(strcmp(info.name, "layer0.attn_l") == 0 && info.n_rows == 1 && info.n_cols == 64);
    struct oc_nn_loss l;
    OC_CHECK_ERR(oc_nn_model_loss(m, NULL, &l, &err), OC_ERR_ARG, &err, "no forward");
    OC_CHECK_ERR(oc_nn_model_backward(m, &err), OC_ERR_ARG, &err, "no loss");
    struct tiny t;
    tiny_init(&t, env.be, 2, 5);
    struct oc_nn_step step = {1, 0, 0};
    struct oc_nn_block swapped[2] = {t.blocks[1], t.blocks[0]};
    OC_CHECK_ERR(oc_nn_model_forward(m, swapped, &t.x, &step, NULL, &err), OC_ERR_ARG, &err,
                 "block 1 has 7 src nodes but block 0 has 2 dst nodes");
    struct oc_nn_tensor bad;
    nt_zeros(&bad, env.be, 7, 4, OC_NN_F32);
    OC_CHECK_ERR(oc_nn_model_forward(m, t.blocks, &bad, &step, NULL, &err), OC_ERR_ARG, &err,
                 "input x is 7x4, expected 7x5");
    OC_CHECK_OK(oc_nn_model_forward(m, t.blocks, &t.x, &step, NULL, &err), &err);
    int32_t labels[2] = {1, 3};
    OC_CHECK_ERR(oc_nn_model_loss(m, labels, &l, &err), OC_ERR_ARG, &err, "label 3");
    enum oc_nn_model_kind k;
    OC_CHECK_OK(oc_nn_model_kind_parse("sage", &k, &err), &err);
    OC_CHECK(k == OC_NN_MODEL_SAGE);
    OC_CHECK_ERR(oc_nn_model_kind_parse("gin", &k, &err), OC_ERR_ARG, &err, "gin");
    oc_nn_tensor_deinit(&bad);
    oc_nn_tensor_deinit(&t.x);
    oc_nn_model_free(m);
    nt_env_free(&env);
}

OC_TEST(fault_injection_clean_errors_no_leaks)
{
    uint64_t live0 = oc_mem_n_live(), nth;
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        for (nth = 1; nth < 1000; nth++) {
            struct nt_env env;
            OC_CHECK(nt_env_new(&env, 2) == 0);
            struct tiny t;
            tiny_init(&t, env.be, 3, 5);
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, 0);
            struct oc_err err;
            oc_err_clear(&err);
            int rc = OC_OK;
            for (int k = 0; k < OC_NN_MODEL_KIND_COUNT && rc == OC_OK; k++) {
                struct oc_nn_model *m = NULL;
                struct oc_nn_model_config cfg;
                oc_nn_model_config_default((enum oc_nn_model_kind)k, &cfg);
                cfg.n_layers = 3;
                cfg.in_dim = 5;
                cfg.n_classes = 3;
                rc = oc_nn_model_new(env.be, &cfg, &m, &err);
                OC_CHECK(rc == OC_OK || !m);
                if (rc == OC_OK)
                    rc = one_step(m, &t, 0, &err);
                if (rc == OC_OK) {
                    uint8_t d[32];
                    rc = oc_nn_model_params_sha256(m, d, &err);
                }
                oc_nn_model_free(m);
            }
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (fired)
                OC_CHECK(rc == OC_ERR_NOMEM && strstr(err.msg, "failed"));
            else
                OC_CHECK(rc == OC_OK);
            oc_nn_tensor_deinit(&t.x);
            nt_env_free(&env);
            OC_CHECK(oc_mem_n_live() == live0);
            if (!fired)
                break;
        }
        OC_CHECK(nth > 10 && nth < 1000);
    }
}

/* Planted partition: 4 classes, dense inside, sparse across, weak class-correlated features. */
OC_TEST(smoke_models_learn_planted_classes)
{
    const uint64_t n = 400, in = 16, C = 4;
    struct oc_rng r;
    oc_rng_init(&r, 77, 0, 0, 0);
    int32_t *label = malloc(n * sizeof(int32_t));
    for (uint64_t i = 0; i < n; i++)
        label[i] = (int32_t)(i % C);
    uint8_t *adj = calloc(n * n, 1);
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = i + 1; j < n; j++) {
            double p = label[i] == label[j] ? 0.05 : 0.004;
            if (oc_rng_uniform_f64(&r) < p)
                adj[i * n + j] = adj[j * n + i] = 1;
        }
    uint64_t *ip = malloc((n + 1) * sizeof(uint64_t));
    uint32_t *ix = malloc(n * n * sizeof(uint32_t));
    ip[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        ip[i + 1] = ip[i];
        for (uint64_t j = 0; j < n; j++)
            if (adj[i * n + j])
                ix[ip[i + 1]++] = (uint32_t)j;
    }
    float *x = malloc(n * in * sizeof(float));
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t f = 0; f < in; f++)
            x[i * in + f] = oc_rng_normal(&r) + ((int64_t)f % (int64_t)C == label[i] ? 0.6f : 0.0f);
    struct oc_nn_block blk = {n, n, ip, ix, NULL};
    struct oc_nn_block blocks[2] = {blk, blk};
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        struct oc_nn_model_config cfg;
        oc_nn_model_config_default((enum oc_nn_model_kind)k, &cfg);
        cfg.in_dim = in;
        cfg.n_classes = C;
        cfg.seed = 3;
        struct oc_nn_model *m = NULL;
        OC_CHECK_OK(oc_nn_model_new(env.be, &cfg, &m, &err), &err);
        struct oc_nn_tensor xt;
        OC_CHECK_OK(oc_nn_tensor_wrap(env.be, OC_NN_F32, x, n, in, &xt, &err), &err);
        struct oc_nn_adam opt;
        oc_nn_adam_default(&opt, 0.01f, 5e-4f);
        struct oc_nn_loss l0 = {0}, l = {0};
        for (uint64_t s = 0; s < 200; s++) {
            struct oc_nn_step step = {1, s, 0};
            OC_CHECK_OK(oc_nn_model_forward(m, blocks, &xt, &step, NULL, &err), &err);
            OC_CHECK_OK(oc_nn_model_loss(m, label, &l, &err), &err);
            if (s == 0)
                l0 = l;
            OC_CHECK_OK(oc_nn_model_backward(m, &err), &err);
            OC_CHECK_OK(oc_nn_model_adam_step(m, &opt, &err), &err);
        }
        struct oc_nn_step eval = {0, 0, 0};
        OC_CHECK_OK(oc_nn_model_forward(m, blocks, &xt, &eval, NULL, &err), &err);
        OC_CHECK_OK(oc_nn_model_loss(m, label, &l, &err), &err);
        double acc = (double)l.n_correct / (double)l.n_counted;
        fprintf(stderr, "  %s: loss %.3f -> %.3f, train accuracy %.3f\n",
                oc_nn_model_kind_name((enum oc_nn_model_kind)k), l0.loss, l.loss, acc);
        OC_CHECK(acc >= 0.9 && l.loss < l0.loss);
        oc_nn_model_free(m);
    }
    nt_env_free(&env);
    free(label);
    free(adj);
    free(ip);
    free(ix);
    free(x);
}

OC_TEST_MAIN()
