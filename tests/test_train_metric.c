/*
 * test_train_metric.c — the evaluation metrics of `train --metric`: ROC-AUC
 * (ties as average ranks, -0 = +0, a missing class or a NaN score gives NaN;
 * the radix-sorted pair count against a naive one), macro F1 over the classes
 * among labels or predictions, accuracy with the first maximum; then in a
 * run: the epoch figures and the best epoch follow the metric, the weights do
 * not depend on it, strategies give the same figures, and what cannot be
 * computed is refused (more than two classes, a split with one class,
 * --eval none, a resume under another metric).
 *
 * Place in the data flow: tests (metric.c directly; generate/import → train).
 * Thread-safety: single-threaded test code; training runs its pipeline.
 * Ownership: datasets live under the test's temporary directory.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "import_fixture.h"
#include "offcore/generate.h"
#include "offcore/train.h"
#include "train/dist.h"
#include "train/train_int.h"

#define EPS 1e-12

/* Adds rows {0, score} with labels: the score logit[1] - logit[0] is `score`. */
static void add_scores(struct train_metric *m, const double *score, const int32_t *label, int n)
{
    for (int i = 0; i < n; i++) {
        float row[2] = {0.0f, (float)score[i]};
        train_metric_add(m, row, 2, label[i]);
    }
}

/* ROC-AUC of n scored rows through an accumulator (NaN when undefined). */
static double rocauc_of(const double *score, const int32_t *label, int n)
{
    struct oc_err err;
    struct train_metric m;
    uint64_t n_pos = 0;
    for (int i = 0; i < n; i++)
        n_pos += label[i] == 1;
    OC_CHECK_OK(train_metric_init(&m, OC_TRAIN_METRIC_ROCAUC, 2, n_pos, (uint64_t)n - n_pos, &err),
                &err);
    add_scores(&m, score, label, n);
    double v = train_metric_value(&m);
    train_metric_deinit(&m);
    return v;
}

OC_TEST(rocauc_counts_ties_as_one_half)
{
    /* positives 0.8, 0.4, 0.4; negatives 0.4, 0.1: pairs won 1+1, 0.5+1, 0.5+1 of 6 */
    static const double s[] = {0.8, 0.4, 0.4, 0.4, 0.1};
    static const int32_t y[] = {1, 1, 1, 0, 0};
    OC_CHECK(fabs(rocauc_of(s, y, 5) - 5.0 / 6.0) < EPS);
    /* average ranks: 1 (0.1), 3 x 3 (the three 0.4), 5 (0.8); positives' sum 11:
       (11 - 3*4/2) / (3*2) = 5/6, the same */
    static const double perfect[] = {-2, -1, 3, 4};
    static const int32_t yp[] = {0, 0, 1, 1};
    OC_CHECK(rocauc_of(perfect, yp, 4) == 1.0);
    static const int32_t yr[] = {1, 1, 0, 0};
    OC_CHECK(rocauc_of(perfect, yr, 4) == 0.0);
    static const double same[] = {7, 7, 7, 7, 7};
    static const int32_t ys[] = {1, 0, 0, 1, 0};
    OC_CHECK(rocauc_of(same, ys, 5) == 0.5);
    /* -0 and +0 are one score: a tie */
    static const double zeros[] = {-0.0, 0.0};
    static const int32_t yz[] = {1, 0};
    OC_CHECK(rocauc_of(zeros, yz, 2) == 0.5);
}

OC_TEST(rocauc_scores_the_logit_difference)
{
    struct oc_err err;
    struct train_metric m;
    OC_CHECK_OK(train_metric_init(&m, OC_TRAIN_METRIC_ROCAUC, 2, 2, 1, &err), &err);
    /* margins 1, 1 (a tie though the logits differ) and 3 (the negative) */
    float a[2] = {0, 1}, b[2] = {5, 6}, c[2] = {-1, 2};
    train_metric_add(&m, a, 2, 1);
    train_metric_add(&m, b, 2, 1);
    train_metric_add(&m, c, 2, 0);
    OC_CHECK(train_metric_value(&m) == 0.0);
    OC_CHECK(m.n == 3 && m.correct == 2); /* c's argmax is 1, not its label */
    train_metric_reset(&m);
    train_metric_add(&m, c, 2, 1);
    train_metric_add(&m, a, 2, 1);
    train_metric_add(&m, b, 2, 0);
    OC_CHECK(fabs(train_metric_value(&m) - 0.75) < EPS); /* 3 > 1 wins, 1 = 1 half */
    train_metric_deinit(&m);
}

OC_TEST(rocauc_of_one_class_or_a_nan_score_is_nan)
{
    static const double s[] = {0.3, 0.2};
    static const int32_t pos[] = {1, 1}, neg[] = {0, 0};
    OC_CHECK(isnan(rocauc_of(s, pos, 2)));
    OC_CHECK(isnan(rocauc_of(s, neg, 2)));
    OC_CHECK(isnan(rocauc_of(s, pos, 0)));
    static const double with_nan[] = {NAN, 0.2};
    static const int32_t y[] = {1, 0};
    OC_CHECK(isnan(rocauc_of(with_nan, y, 2)));
}

/* Radix-sorted keys (past the insertion-sort size) against the O(n^2) pair count. */
OC_TEST(rocauc_matches_the_pair_count_on_many_tied_scores)
{
    enum { N = 1500 };
    static double s[N];
    static int32_t y[N];
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = (double)((int)(x >> 58) - 32) / 8.0; /* 64 values from -4 to 3.875, many ties */
        y[i] = (x >> 20) % 3 == 0 || s[i] > 2.5;
    }
    double won = 0, pairs = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (y[i] == 1 && y[j] == 0) {
                pairs++;
                won += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
            }
    double v = rocauc_of(s, y, N);
    OC_CHECK(pairs > 0 && fabs(v - won / pairs) < EPS);
    OC_CHECK(v > 0.5 && v < 1.0);
}

OC_TEST(score_keys_sort_as_the_scores)
{
    static const double v[] = {-INFINITY, -1e300, -2.5, -1e-300, 0.0, 1e-300, 1.0, 3e8, INFINITY};
    for (size_t i = 0; i + 1 < sizeof(v) / sizeof(v[0]); i++)
        OC_CHECK(train_score_key(v[i]) < train_score_key(v[i + 1]));
    OC_CHECK(train_score_key(-0.0) == train_score_key(0.0));
}

/* Rows whose argmax is pred, labelled y. */
static double f1_of(const int32_t *y, const int32_t *pred, int n, uint64_t n_classes)
{
    struct oc_err err;
    struct train_metric m;
    OC_CHECK_OK(train_metric_init(&m, OC_TRAIN_METRIC_F1_MACRO, n_classes, 0, 0, &err), &err);
    for (int i = 0; i < n; i++) {
        float row[8] = {0};
        row[pred[i]] = 1.0f;
        train_metric_add(&m, row, n_classes, y[i]);
    }
    double v = train_metric_value(&m);
    train_metric_deinit(&m);
    return v;
}

OC_TEST(f1_macro_averages_the_classes_among_labels_or_predictions)
{
    /* class 0: TP 1 FP 1 FN 1 -> 2/4; class 1: TP 2 FP 1 -> 4/5; class 2: FN 1 -> 0;
       class 3 appears nowhere and is left out: (0.5 + 0.8 + 0) / 3 */
    static const int32_t y[] = {0, 0, 1, 1, 2}, p[] = {0, 1, 1, 1, 0};
    OC_CHECK(fabs(f1_of(y, p, 5, 4) - 1.3 / 3.0) < EPS);
    /* a class only predicted counts, with F1 0: (2/3 + 0) / 2 */
    static const int32_t y2[] = {0, 0}, p2[] = {0, 1};
    OC_CHECK(fabs(f1_of(y2, p2, 2, 2) - 1.0 / 3.0) < EPS);
    OC_CHECK(f1_of(y, y, 5, 4) == 1.0);
    OC_CHECK(f1_of(y, p, 0, 4) == 0.0); /* no rows */
    OC_CHECK(fabs(train_f1_macro((const uint64_t[]){3, 0}, (const uint64_t[]){1, 0},
                                 (const uint64_t[]){0, 1}, 2) -
                  (6.0 / 7.0 + 0.0) / 2.0) < EPS);
}

OC_TEST(accuracy_takes_the_first_maximum)
{
    struct oc_err err;
    struct train_metric m;
    OC_CHECK_OK(train_metric_init(&m, OC_TRAIN_METRIC_ACC, 3, 0, 0, &err), &err);
    OC_CHECK(train_metric_value(&m) == 0.0);
    float tie[3] = {1, 2, 2}, first[3] = {3, 1, 3};
    train_metric_add(&m, tie, 3, 1);   /* argmax 1 */
    train_metric_add(&m, tie, 3, 2);   /* not 2 */
    train_metric_add(&m, first, 3, 0); /* argmax 0 */
    OC_CHECK(fabs(train_metric_value(&m) - 2.0 / 3.0) < EPS);
    train_metric_deinit(&m);
}

/* Outside an MPI group the reduction is the identity: one process reports what it added. */
OC_TEST(the_reduction_without_a_group_keeps_the_accumulated_value)
{
    struct oc_err err;
    static const double sc[] = {0.8, 0.4, 0.4, 0.4, 0.1, -3};
    static const int32_t y[] = {1, 1, 1, 0, 0, 0};
    enum oc_train_metric kinds[] = {OC_TRAIN_METRIC_ACC, OC_TRAIN_METRIC_ROCAUC,
                                    OC_TRAIN_METRIC_F1_MACRO};
    for (int k = 0; k < 3; k++) {
        struct train_metric m;
        OC_CHECK_OK(train_metric_init(&m, kinds[k], 2, 3, 3, &err), &err);
        add_scores(&m, sc, y, 6);
        double before = train_metric_value(&m);
        OC_CHECK_OK(train_metric_reduce(&m, &err), &err);
        OC_CHECK(m.n == 6 &&
                 (kinds[k] != OC_TRAIN_METRIC_ROCAUC || (m.n_pos == 3 && m.n_neg == 3)));
        OC_CHECK(train_metric_value(&m) == before);
        train_metric_deinit(&m);
    }
    uint64_t v[2] = {7, 9};
    OC_CHECK_OK(oc_dist_sum_u64(v, 2, &err), &err);
    OC_CHECK(v[0] == 7 && v[1] == 9);
}

OC_TEST(metric_names_parse_and_print)
{
    struct oc_err err;
    enum oc_train_metric k;
    OC_CHECK_OK(oc_train_metric_parse("f1-macro", &k, &err), &err);
    OC_CHECK(k == OC_TRAIN_METRIC_F1_MACRO);
    OC_CHECK(strcmp(oc_train_metric_key(k), "f1_macro") == 0);
    OC_CHECK_OK(oc_train_metric_parse("rocauc", &k, &err), &err);
    OC_CHECK(strcmp(oc_train_metric_label(k), "ROC-AUC") == 0);
    OC_CHECK_ERR(oc_train_metric_parse("auc", &k, &err), OC_ERR_ARG, &err, "--metric 'auc'");
}

/* ---- in a training run -------------------------------------------------- */

#define EPOCHS 12

struct seen {
    uint32_t n;
    double val[EPOCHS], test[EPOCHS], val_acc[EPOCHS];
    uint64_t eval_units[EPOCHS], eval_units_own[EPOCHS];
};

static void record(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct seen *s = ctx;
    if (s->n < EPOCHS) {
        s->val[s->n] = st->val_metric;
        s->test[s->n] = st->test_metric;
        s->val_acc[s->n] = st->val_acc;
        s->eval_units[s->n] = st->eval_units;
        s->eval_units_own[s->n] = st->eval_units_own;
        s->n++;
    }
}

/* A generated dataset of n_classes classes (made once per class count). */
static const char *dataset(uint32_t n_classes)
{
    static char dirs[8][1024];
    char *dir = dirs[n_classes % 8];
    if (dir[0])
        return dir;
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    g.avg_degree = 6;
    g.feat_dim = 16;
    g.n_classes = n_classes;
    snprintf(dir, 1024, "%s/g%u", oc_test_tmpdir(), n_classes);
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    return dir;
}

static void options(struct oc_train_opts *o, enum oc_train_metric metric)
{
    oc_train_opts_default(OC_NN_MODEL_GCN, o);
    o->epochs = EPOCHS;
    o->lr = 0.2f; /* a bumpy validation curve: accuracy and ROC-AUC peak at different epochs */
    o->n_threads = 2;
    o->metric = metric;
}

OC_TEST(a_run_reports_and_selects_by_the_metric_without_changing_the_weights)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result acc, auc, f1;
    struct seen s_acc = {0}, s_auc = {0}, s_f1 = {0};
    const char *ds = dataset(2);
    options(&o, OC_TRAIN_METRIC_ACC);
    OC_CHECK_OK(oc_train_run(ds, &o, record, &s_acc, NULL, &acc, &err), &err);
    options(&o, OC_TRAIN_METRIC_ROCAUC);
    OC_CHECK_OK(oc_train_run(ds, &o, record, &s_auc, NULL, &auc, &err), &err);
    options(&o, OC_TRAIN_METRIC_F1_MACRO);
    OC_CHECK_OK(oc_train_run(ds, &o, record, &s_f1, NULL, &f1, &err), &err);
    OC_CHECK(s_acc.n == EPOCHS && s_auc.n == EPOCHS && s_f1.n == EPOCHS);
    OC_CHECK(strcmp(acc.weights_sha256, auc.weights_sha256) == 0);
    OC_CHECK(strcmp(acc.weights_sha256, f1.weights_sha256) == 0);
    double best = -1, best_acc = -1;
    uint32_t best_e = 0, best_acc_e = 0;
    for (uint32_t e = 0; e < EPOCHS; e++) {
        if (s_acc.val[e] >= best_acc) {
            best_acc = s_acc.val[e];
            best_acc_e = e;
        }
        OC_CHECK(s_acc.val[e] == s_acc.val_acc[e]);
        OC_CHECK(s_auc.val_acc[e] == s_acc.val_acc[e]); /* the same logits */
        OC_CHECK(s_auc.val[e] >= 0.0 && s_auc.val[e] <= 1.0 && s_auc.val[e] != s_auc.val_acc[e]);
        OC_CHECK(s_f1.val[e] >= 0.0 && s_f1.val[e] <= 1.0);
        /* one process evaluates every chunk of the last layer itself */
        OC_CHECK(s_acc.eval_units[e] > 0 && s_acc.eval_units_own[e] == s_acc.eval_units[e]);
        if (s_auc.val[e] >= best) {
            best = s_auc.val[e];
            best_e = e;
        }
    }
    OC_CHECK(acc.best_epoch == best_acc_e && acc.best_val_acc == best_acc);
    OC_CHECK(auc.best_epoch == best_e && auc.best_val_acc == best);
    if (best_e == best_acc_e) /* then selecting by accuracy would go unnoticed */
        fprintf(stderr, "  note: accuracy and ROC-AUC peak at the same epoch %u here\n", best_e);
    OC_CHECK(auc.test_acc_at_best_val == s_auc.test[best_e]);
    OC_CHECK(auc.best_val_acc > 0.5); /* the generated classes are learnable */
}

/* Every strategy's logits are memory's, so are its figures; sampled evaluation scores too. */
OC_TEST(the_metric_is_the_same_under_an_out_of_core_strategy)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct seen a = {0}, b = {0};
    const char *ds = dataset(2);
    options(&o, OC_TRAIN_METRIC_ROCAUC);
    OC_CHECK_OK(oc_train_run(ds, &o, record, &a, NULL, &ref, &err), &err);
    o.strategy = "direct";
    OC_CHECK_OK(oc_train_run(ds, &o, record, &b, NULL, &res, &err), &err);
    for (uint32_t e = 0; e < EPOCHS; e++)
        OC_CHECK(a.val[e] == b.val[e] && a.test[e] == b.test[e]);
    OC_CHECK(res.best_epoch == ref.best_epoch && res.best_val_acc == ref.best_val_acc &&
             res.test_acc_at_best_val == ref.test_acc_at_best_val);
    struct seen c = {0};
    o.strategy = NULL;
    o.eval = OC_TRAIN_EVAL_SAMPLED;
    o.fanouts[0] = o.fanouts[1] = 3;
    OC_CHECK_OK(oc_train_run(ds, &o, record, &c, NULL, &res, &err), &err);
    OC_CHECK(c.n == EPOCHS && c.val[EPOCHS - 1] > 0.5 && c.val[EPOCHS - 1] <= 1.0);
}

OC_TEST(what_the_metric_cannot_score_is_refused)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result res;
    options(&o, OC_TRAIN_METRIC_ROCAUC);
    OC_CHECK_ERR(oc_train_run(dataset(3), &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "has 3 classes; ROC-AUC is computed for two classes only");
    o.eval = OC_TRAIN_EVAL_NONE;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err,
                 "--metric rocauc has nothing to do with --eval none");
    o.eval = OC_TRAIN_EVAL_FULL;
    o.metric = OC_TRAIN_METRIC_COUNT;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--metric must be");
    /* 8 nodes: the validation split (nodes 4, 5) holds class 0 only */
    const char *tmp = oc_test_tmpdir();
    char src[1024], out[1024];
    FX_PATH(src, "%s/one-class-src", tmp);
    FX_PATH(out, "%s/one-class", tmp);
    fx_write(src, "meta.txt", "num_nodes 8\nnum_features 2\nnum_classes 2\n");
    fx_write(src, "edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 0\n");
    fx_write(src, "features.txt", "0 0 1\n1 1 1\n2 0 2\n3 1 2\n4 0 1\n5 1 3\n6 0 1\n7 1 1\n");
    fx_write(src, "labels.txt", "0\n1\n0\n1\n0\n0\n1\n0\n");
    fx_write(src, "splits/split_0.txt", "0\n0\n0\n0\n1\n1\n2\n2\n");
    struct oc_import_opts io;
    oc_import_opts_default(&io);
    OC_CHECK_OK(oc_import_text(src, out, &io, NULL, &err), &err);
    options(&o, OC_TRAIN_METRIC_ROCAUC);
    o.batch_size = 4;
    OC_CHECK_ERR(oc_train_run(out, &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "the validation split of");
    OC_CHECK(strstr(err.msg, "2 labelled nodes of class 0 and 0 of class 1"));
    o.metric = OC_TRAIN_METRIC_F1_MACRO; /* defined there */
    OC_CHECK_OK(oc_train_run(out, &o, NULL, NULL, NULL, &res, &err), &err);
}

/* The checkpoint's best validation figure is in its metric: another metric may not resume. */
OC_TEST(a_resume_under_another_metric_is_refused)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result res;
    char ckpt[1024];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", oc_test_tmpdir());
    options(&o, OC_TRAIN_METRIC_ACC);
    o.epochs = 1;
    o.checkpoint_dir = ckpt;
    OC_CHECK_OK(oc_train_run(dataset(2), &o, NULL, NULL, NULL, &res, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    o.metric = OC_TRAIN_METRIC_ROCAUC;
    OC_CHECK_ERR(oc_train_run(dataset(2), &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "metric=rocauc");
    o.metric = OC_TRAIN_METRIC_ACC;
    OC_CHECK_OK(oc_train_run(dataset(2), &o, NULL, NULL, NULL, &res, &err), &err);
    OC_CHECK(res.epochs_run == 1);
}

OC_TEST_MAIN()
