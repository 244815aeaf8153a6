/*
 * test_train_eval.c — evaluation choices of a training run: exact layer-wise
 * inference under a budget smaller than one layer's output table (its
 * tables go to a scratch file) gives the accuracies and weights of the
 * unbudgeted in-RAM run, holds no more than the budget and leaves no file
 * behind, also when a scratch write fails; --eval none and --eval-every
 * skip evaluation without changing what is learned.
 *
 * Place in the data flow: tests (generate → train, in-process, with the
 * accountant's hard limit set as the CLI sets it).
 * Thread-safety: single-threaded test code; training runs its pipeline.
 * Ownership: the dataset lives under the test's temporary directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "offcore/generate.h"
#include "offcore/io.h"
#include "offcore/train.h"

#define EPOCHS 3

/* Hidden 128 over 60k nodes: one layer's output table is 29.3 MiB. */
#define NODES  60000
#define HIDDEN 128
#define BUDGET (20u << 20)

struct seen {
    uint32_t n;
    int evaluated[EPOCHS];
    double val[EPOCHS], test[EPOCHS];
};

static void record(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct seen *s = ctx;
    if (s->n < EPOCHS) {
        s->evaluated[s->n] = st->evaluated;
        s->val[s->n] = st->val_acc;
        s->test[s->n] = st->test_acc;
        s->n++;
    }
}

static const char *dataset(void)
{
    static char dir[1024];
    if (dir[0])
        return dir;
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = NODES;
    g.avg_degree = 8;
    g.feat_dim = 32;
    g.n_classes = 5;
    g.train_frac = 0.02;
    g.val_frac = 0.02;
    g.test_frac = 0.02;
    snprintf(dir, sizeof(dir), "%s/g", oc_test_tmpdir());
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    return dir;
}

static void options(struct oc_train_opts *o, enum oc_train_eval eval)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->hidden = HIDDEN;
    o->fanouts[0] = o->fanouts[1] = 5;
    o->batch_size = 256;
    o->eval_batch_size = 256;
    o->epochs = EPOCHS;
    o->n_threads = 2;
    o->eval = eval;
}

/* Trains with o under a hard limit of o->mem_budget (0: none); the run's status. */
static int run(const struct oc_train_opts *o, struct seen *seen, struct oc_train_result *res,
               uint64_t *peak, struct oc_err *err)
{
    memset(seen, 0, sizeof(*seen));
    uint64_t base = oc_mem_used();
    oc_mem_reset_peak();
    oc_mem_set_budget(o->mem_budget ? base + o->mem_budget : 0);
    int rc = oc_train_run(dataset(), o, record, seen, NULL, res, err);
    oc_mem_set_budget(0);
    if (peak)
        *peak = oc_mem_peak() - base;
    return rc;
}

/* Files in dir (0 when it does not exist). */
/* Files in dir but offcore's ownership marker (a --scratch it made keeps one: docs/CLI.md). */
static int n_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             strcmp(e->d_name, OC_OWNED_MARKER) != 0;
    closedir(d);
    return n;
}

OC_TEST(full_inference_under_a_budget_below_one_layer_table_matches_memory)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct seen ram, disk;
    options(&o, OC_TRAIN_EVAL_FULL);
    OC_CHECK_OK(run(&o, &ram, &ref, NULL, &err), &err);
    OC_CHECK(ref.evaluated && ram.n == EPOCHS);
    char scratch[1024];
    snprintf(scratch, sizeof(scratch), "%s/scratch", oc_test_tmpdir());
    o.strategy = "direct";
    o.mem_budget = BUDGET;
    o.scratch_dir = scratch;
    uint64_t peak;
    OC_CHECK_OK(run(&o, &disk, &res, &peak, &err), &err);
    OC_CHECK((uint64_t)NODES * HIDDEN * sizeof(float) > BUDGET);
    OC_CHECK(peak <= BUDGET);
    for (int e = 0; e < EPOCHS; e++) {
        OC_CHECK(disk.evaluated[e]);
        OC_CHECK(disk.val[e] == ram.val[e]);
        OC_CHECK(disk.test[e] == ram.test[e]);
    }
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(res.test_acc_at_best_val == ref.test_acc_at_best_val);
    OC_CHECK(n_files(scratch) == 0);
}

OC_TEST(a_failed_scratch_write_names_the_file_and_leaves_nothing)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result res;
    struct seen seen;
    options(&o, OC_TRAIN_EVAL_FULL);
    char scratch[1024];
    snprintf(scratch, sizeof(scratch), "%s/scratch-full", oc_test_tmpdir());
    o.strategy = "direct";
    o.mem_budget = BUDGET;
    o.scratch_dir = scratch;
    o.epochs = 1;
    oc_fault_arm_persistent(OC_FAULT_WRITE, 3, ENOSPC);
    int rc = run(&o, &seen, &res, NULL, &err);
    oc_fault_disarm_all();
    OC_CHECK(rc == OC_ERR_NOSPC);
    OC_CHECK(strstr(err.msg, "layer-wise inference scratch") != NULL);
    OC_CHECK(strstr(err.msg, scratch) != NULL);
    OC_CHECK(strstr(err.msg, "epoch 0 evaluation") != NULL);
    OC_CHECK(n_files(scratch) == 0);
}

OC_TEST(a_scratch_directory_that_cannot_be_made_is_refused_before_training)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result res;
    struct seen seen;
    options(&o, OC_TRAIN_EVAL_FULL);
    char file[1024], scratch[1100];
    snprintf(file, sizeof(file), "%s/not-a-dir", oc_test_tmpdir());
    FILE *f = fopen(file, "w");
    OC_CHECK(f != NULL);
    fclose(f);
    snprintf(scratch, sizeof(scratch), "%s/scratch", file);
    o.strategy = "direct";
    o.mem_budget = BUDGET;
    o.scratch_dir = scratch;
    OC_CHECK(run(&o, &seen, &res, NULL, &err) != OC_OK);
    OC_CHECK(strstr(err.msg, file) != NULL);
    OC_CHECK(seen.n == 0);
}

OC_TEST(eval_none_and_eval_every_skip_evaluation_without_changing_training)
{
    struct oc_err err;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct seen seen;
    options(&o, OC_TRAIN_EVAL_SAMPLED);
    OC_CHECK_OK(run(&o, &seen, &ref, NULL, &err), &err);
    for (int e = 0; e < EPOCHS; e++)
        OC_CHECK(seen.evaluated[e]);

    options(&o, OC_TRAIN_EVAL_NONE);
    OC_CHECK_OK(run(&o, &seen, &res, NULL, &err), &err);
    OC_CHECK(seen.n == EPOCHS && !res.evaluated);
    for (int e = 0; e < EPOCHS; e++)
        OC_CHECK(!seen.evaluated[e] && seen.val[e] == 0.0);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);

    /* every 2nd epoch (epoch 1) and the last (epoch 2) */
    options(&o, OC_TRAIN_EVAL_SAMPLED);
    o.eval_every = 2;
    OC_CHECK_OK(run(&o, &seen, &res, NULL, &err), &err);
    OC_CHECK(!seen.evaluated[0] && seen.evaluated[1] && seen.evaluated[2]);
    OC_CHECK(res.evaluated && res.best_epoch >= 1);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
}

OC_TEST_MAIN()
