/*
 * test_train.c — the training loop end to end: reference accuracy on the
 * Planetoid public splits (Cora, CiteSeer; GCN, GAT, GraphSAGE; mean over 5
 * seeds), bitwise determinism across thread counts, option checks, and
 * checkpoint/resume (including corruption and option mismatch).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen_util.h"
#include "harness.h"
#include "offcore/generate.h"
#include "offcore/import.h"
#include "offcore/train.h"

#if !defined(OC_SANITIZED) /* minutes-long accuracy runs happen in the plain build only */
/* Imports a shared Planetoid folder with row-normalized features into a fresh tmp dir. */
static int import_planetoid(const char *name, char *out, size_t n)
{
    const char *shared = oc_test_shared();
    if (!shared)
        return -1;
    char src[1024];
    snprintf(src, sizeof(src), "%s/datasets/%s", shared, name);
    snprintf(out, n, "%s/%s", oc_test_tmpdir(), name);
    struct oc_import_opts io;
    oc_import_opts_default(&io);
    io.row_normalize = 1;
    struct oc_err err;
    int rc = oc_import_text(src, out, &io, NULL, &err);
    if (rc)
        fprintf(stderr, "  import %s: %s\n", name, err.msg);
    return rc;
}

/*
 * Planetoid settings: GCN/GAT are DGL's example defaults; SAGE uses the GCN
 * paper's recipe (all neighbors, lr 0.01, weight decay 5e-4, 200 epochs,
 * dropout 0.5 on input and hidden features).
 */
static void planetoid_opts(enum oc_nn_model_kind kind, uint64_t seed, struct oc_train_opts *o)
{
    oc_train_opts_default(kind, o);
    if (kind == OC_NN_MODEL_SAGE) {
        o->fanouts[0] = o->fanouts[1] = OC_SAMPLE_ALL;
        o->batch_size = 1024;
        o->lr = 0.01f;
        o->weight_decay = 5e-4f;
        o->epochs = 200;
        o->input_dropout = 0.5f;
    }
    o->seed = seed;
    o->n_threads = 2;
}

static double mean_test_acc(const char *dir, enum oc_nn_model_kind kind)
{
    double sum = 0;
    for (uint64_t seed = 0; seed < 5; seed++) {
        struct oc_train_opts o;
        planetoid_opts(kind, seed, &o);
        struct oc_train_result res;
        struct oc_err err;
        int rc = oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err);
        OC_CHECK_OK(rc, &err);
        if (rc)
            return 0;
        sum += res.test_acc_at_best_val;
    }
    return sum / 5;
}

#endif

static void check_planetoid(const char *name, const double min_acc[OC_NN_MODEL_KIND_COUNT])
{
#if defined(OC_SANITIZED)
    (void)name;
    (void)min_acc;
    OC_SKIP("accuracy runs take minutes under sanitizers; the plain build runs them");
#else
    char dir[1024];
    if (!oc_test_shared())
        OC_SKIP("../shared/datasets not found");
    OC_CHECK(import_planetoid(name, dir, sizeof(dir)) == OC_OK);
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        double acc = mean_test_acc(dir, (enum oc_nn_model_kind)k);
        fprintf(stderr, "  %s %s: mean test accuracy over 5 seeds %.4f (need >= %.3f)\n", name,
                oc_nn_model_kind_name((enum oc_nn_model_kind)k), acc, min_acc[k]);
        OC_CHECK(acc >= min_acc[k]);
    }
#endif
}

OC_TEST(planetoid_cora_reference_accuracy)
{
    const double min_acc[OC_NN_MODEL_KIND_COUNT] = {0.800, 0.805, 0.820}; /* sage, gcn, gat */
    check_planetoid("cora", min_acc);
}

OC_TEST(planetoid_citeseer_reference_accuracy)
{
    const double min_acc[OC_NN_MODEL_KIND_COUNT] = {0.690, 0.695, 0.710};
    check_planetoid("citeseer", min_acc);
}

/* A small generated graph shared by the remaining tests. */
static void small_graph_opts(struct oc_generate_opts *g)
{
    oc_generate_opts_default(g);
    g->n_nodes = 3000;
    g->avg_degree = 8;
    g->feat_dim = 16;
    g->n_classes = 4;
    g->train_frac = 0.3;
    g->seed = 3;
}

static const char *small_graph(void)
{
    struct oc_generate_opts g;
    small_graph_opts(&g);
    return gen_once(&g);
}

struct loss_trace {
    double loss[64];
    uint32_t n;
};

static void record_loss(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct loss_trace *t = ctx;
    if (t->n < 64)
        t->loss[t->n++] = st->loss;
}

static void sampled_opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 3;
    o->batch_size = 128;
    o->epochs = 3;
    o->hidden = 32;
    o->seed = 11;
}

OC_TEST(same_seed_same_weights_at_any_thread_count)
{
    const char *dir = small_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct oc_train_result res[3];
    struct loss_trace trace[3];
    memset(trace, 0, sizeof(trace));
    for (int model = 0; model < OC_NN_MODEL_KIND_COUNT; model++) {
        for (unsigned t = 1; t <= 3; t++) {
            struct oc_train_opts o;
            sampled_opts(&o);
            o.model = (enum oc_nn_model_kind)model;
            o.heads = model == OC_NN_MODEL_GAT ? 2 : 1;
            o.n_threads = t;
            o.eval = t == 3 ? OC_TRAIN_EVAL_SAMPLED : OC_TRAIN_EVAL_FULL;
            trace[t - 1].n = 0;
            struct oc_err err;
            OC_CHECK_OK(oc_train_run(dir, &o, record_loss, &trace[t - 1], NULL, &res[t - 1], &err),
                        &err);
        }
        OC_CHECK(trace[0].n == 3);
        for (int t = 1; t < 3; t++) {
            OC_CHECK(trace[t].n == trace[0].n);
            OC_CHECK(memcmp(trace[t].loss, trace[0].loss, sizeof(double) * trace[0].n) == 0);
            OC_CHECK(strcmp(res[t].weights_sha256, res[0].weights_sha256) == 0);
        }
        OC_CHECK(strlen(res[0].weights_sha256) == 64);
    }
    /* A different seed trains differently. */
    struct oc_train_opts o;
    sampled_opts(&o);
    o.seed = 12;
    struct oc_train_result other;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), &err);
    OC_CHECK(strcmp(other.weights_sha256, res[0].weights_sha256) != 0);
}

OC_TEST(generated_graph_is_learnable)
{
    const char *dir = small_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    sampled_opts(&o);
    o.epochs = 10;
    o.lr = 0.01f;
    struct oc_train_result res;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    fprintf(stderr, "  generated graph (4 classes): test acc %.3f\n", res.test_acc_at_best_val);
    OC_CHECK(res.test_acc_at_best_val > 0.5); /* chance is 0.25 */
}

OC_TEST(inconsistent_options_are_errors)
{
    struct oc_train_opts o;
    struct oc_err err;
    sampled_opts(&o);
    o.n_fanouts = 3;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "one fanout per layer");
    sampled_opts(&o);
    o.batch_size = 0;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--batch");
    sampled_opts(&o);
    o.fanouts[1] = 0;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--fanout");
    sampled_opts(&o);
    o.dropout = 1.0f;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--dropout");
    sampled_opts(&o);
    o.resume = 1;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--checkpoint");
    sampled_opts(&o); /* heads would be ignored by sage and only inflate the budget's reservation */
    o.heads = 4;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "gat's (--model gat)");
    o.model = OC_NN_MODEL_GAT;
    OC_CHECK_OK(oc_train_opts_check(&o, &err), &err);
    sampled_opts(&o);
    struct oc_train_result res;
    OC_CHECK_ERR(oc_train_run("/nonexistent/dataset", &o, NULL, NULL, NULL, &res, &err),
                 OC_ERR_NOTFOUND, &err, "/nonexistent/dataset");
}

OC_TEST(checkpoint_resume_matches_uninterrupted_run)
{
    const char *dir = small_graph();
    if (!dir)
        return;
    char ckpt[1024], log[1100];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", oc_test_tmpdir());
    snprintf(log, sizeof(log), "%s/log.jsonl", ckpt);
    struct oc_err err;
    OC_CHECK_OK(oc_mkdir_p(ckpt, &err), &err);
    struct oc_train_opts o;
    sampled_opts(&o);
    o.epochs = 4;
    struct oc_train_result full, part, rest;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &full, &err), &err);
    /* Stop after 2 epochs, then resume to 4 with the log continued. */
    o.epochs = 2;
    o.checkpoint_dir = ckpt;
    o.log_path = log;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &part, &err), &err);
    OC_CHECK(part.epochs_run == 2);
    o.epochs = 4;
    o.resume = 1;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &rest, &err), &err);
    OC_CHECK(rest.epochs_run == 2);
    OC_CHECK(strcmp(rest.weights_sha256, full.weights_sha256) == 0);
    OC_CHECK(fabs(rest.test_acc_at_best_val - full.test_acc_at_best_val) < 1e-12);
    /* The log holds epochs 0..3 once each (the first run's final line was cut) and a final. */
    char *text = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(log, 0, &text, &len, &err), &err);
    if (text) {
        int lines = 0, finals = 0;
        for (char *p = text; (p = strchr(p, '\n')) != NULL; p++)
            lines++;
        for (char *p = text; (p = strstr(p, "\"final\":true")) != NULL; p++)
            finals++;
        OC_CHECK(lines == 5 && finals == 1);
        OC_CHECK(strstr(text, "\"epoch\":3") && strstr(text, full.weights_sha256));
        /* the pipeline's figures: its depth, the trainer's wait, each batch sampled once */
        const char *nb = strstr(text, "\"n_batches\":"), *ns = strstr(text, "\"n_sampled\":");
        OC_CHECK(nb && ns && strstr(text, "\"wait_s\":") && strstr(text, "\"pipeline_depth\":2"));
        OC_CHECK(strstr(text, "\"pipeline_lanes\":1") != NULL); /* memory: one gather at a time */
        if (nb && ns)
            OC_CHECK(strtoull(nb + 12, NULL, 10) > 0 &&
                     strtoull(nb + 12, NULL, 10) == strtoull(ns + 12, NULL, 10));
        oc_free(text);
    }
    /* Different options are refused, naming the difference. */
    o.lr = 0.5f;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &rest, &err), OC_ERR_ARG, &err,
                 "saved \"lr=0.003");
    OC_CHECK(strstr(err.msg, "now \"lr=0.5\"") && strstr(err.msg, "; current: model=") &&
             !strchr(err.msg, '\n')); /* one line: the CLI would escape a newline as \x0A */
    o.lr = 0.003f;
    /* A corrupt checkpoint is refused. */
    char path[1100];
    snprintf(path, sizeof(path), "%s/checkpoint.bin", ckpt);
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (f) {
        fseek(f, 100, SEEK_SET);
        fputc(0x5a, f);
        fclose(f);
    }
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &rest, &err), OC_ERR_FORMAT, &err,
                 "checkpoint.bin");
}

/* A checkpoint resumes only the training it was made by: not under outre (which changes what
   is learned), not on other labels or splits; strategies bit-identical to memory may take over
   (mmap here); outre's own checkpoints do not resume past epoch 0 (its historical embeddings
   are not in them). */
OC_TEST(resume_refuses_another_training_or_data)
{
    const char *dir = small_graph();
    struct oc_generate_opts g;
    small_graph_opts(&g);
    g.val_frac = 0.2; /* only the validation and test splits differ */
    char other[1024];
    snprintf(other, sizeof(other), "%s/gen-other-splits", oc_test_tmpdir());
    struct oc_err gerr;
    OC_CHECK_OK(oc_generate(&g, other, NULL, &gerr), &gerr);
    if (!dir)
        return;
    char ckpt[1024];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt-strategies", oc_test_tmpdir());
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result res;
    sampled_opts(&o);
    o.epochs = 1;
    o.checkpoint_dir = ckpt;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    o.strategy = "outre";
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "different options or data");
    o.strategy = NULL;
    OC_CHECK_ERR(oc_train_run(other, &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "different options or data");
    o.strategy = "mmap";
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);

    snprintf(ckpt, sizeof(ckpt), "%s/ckpt-outre", oc_test_tmpdir());
    sampled_opts(&o);
    o.strategy = "outre";
    o.epochs = 1;
    o.checkpoint_dir = ckpt;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_UNSUPPORTED, &err,
                 "outre's historical embeddings (--staleness 100) are not in the checkpoint");
}

OC_TEST_MAIN()
