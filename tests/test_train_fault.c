/*
 * test_train_fault.c — training under fault injection, for every feature
 * strategy: the nth allocation, read, write, open, fsync, rename or io_uring
 * setup fails, once (one-shot) or from then on (persistent). Every run must
 * end with a clean error naming what failed (or, where a fallback exists,
 * succeed with the weights of the fault-free run: io_uring setup falls back
 * to pread), leak nothing, and leave no partial output: no temporary file in
 * the checkpoint or dataset directory, and a checkpoint that is either absent
 * or whole (its CRC-32 checks). The nth values are sampled (fault_next_nth)
 * to keep the loop to seconds.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fault_util.h"
#include "gen_util.h"
#include "harness.h"
#include "offcore/generate.h"
#include "offcore/train.h"
#include "uring_util.h"

static const char *tiny_graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 1500;
    g.avg_degree = 5;
    g.feat_dim = 12;
    g.n_classes = 3;
    g.train_frac = 0.2;
    g.val_frac = 0.1;
    g.test_frac = 0.1;
    g.seed = 3;
    g.n_threads = 1;
    return gen_once(&g);
}

static void tiny_opts(struct oc_train_opts *o, const char *strategy, const char *ckpt,
                      const char *log)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 4;
    o->fanouts[1] = 4;
    o->batch_size = 100;
    o->epochs = 2;
    o->hidden = 8;
    o->n_threads = 2;
    o->seed = 4;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->eval_batch_size = 200;
    o->strategy = strategy;
    o->checkpoint_dir = ckpt;
    o->log_path = log;
    struct oc_err err;
    /* gnndrive with sampler threads: its draw and order stages are under the faults too */
    if (strategy && strcmp(strategy, "gnndrive") == 0)
        (void)oc_train_opts_set(o, "samplers", 2, &err);
}

struct fault_case {
    enum oc_fault_kind kind;
    int sys_errno;
    uint64_t stride; /* fault_next_nth sampling (0 = every nth) */
    const char *what;
};

static const struct fault_case cases[] = {
    {OC_FAULT_ALLOC, ENOMEM, 6, "alloc ENOMEM"},
    {OC_FAULT_READ, EIO, 6, "read EIO"},
    {OC_FAULT_READ, 0, 12, "short read"},
    {OC_FAULT_WRITE, ENOSPC, 4, "write ENOSPC"},
    {OC_FAULT_OPEN, EACCES, 0, "open EACCES"},
    {OC_FAULT_OPEN, EMFILE, 8, "open EMFILE"},
    {OC_FAULT_FSYNC, EIO, 0, "fsync EIO"},
    {OC_FAULT_RENAME, ENOSPC, 0, "rename ENOSPC"},
    {OC_FAULT_URING_SETUP, ENOSYS, 0, "io_uring setup ENOSYS"},
};

/* One strategy under every fault case in both modes. */
static void strategy_loop(const char *ds, const char *strategy, const char *ref_sha)
{
    char ckpt[900], log[1000];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", oc_test_tmpdir());
    snprintf(log, sizeof(log), "%s/log.jsonl", ckpt);
    struct oc_train_opts o;
    tiny_opts(&o, strategy, ckpt, log);
    struct oc_train_result res;
    struct oc_err err, e2;
    uint64_t n_runs = 0;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct fault_case *fc = &cases[c];
        for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
            uint64_t nth = 1, n_failed = 0, n_fired = 0;
            int done = 0;
            for (; nth < 1000000 && !done; nth = fault_next_nth(nth, fc->stride)) {
                oc_rm_rf(ckpt, &e2);
                oc_mkdir_p(ckpt, &e2);
                oc_err_clear(&err);
                uint64_t live = oc_mem_n_live();
                fault_arm_mode(mode, fc->kind, nth, fc->sys_errno);
                int rc = oc_train_run(ds, &o, NULL, NULL, NULL, &res, &err);
                int fired = oc_fault_fired(fc->kind);
                oc_fault_disarm_all();
                n_runs++;
                char label[200];
                snprintf(label, sizeof(label), "%s: %s %s #%llu", strategy, fault_mode_name(mode),
                         fc->what, (unsigned long long)nth);
                enum fault_verdict v = fault_judge_run(label, fc->kind, live, fired, rc, &err,
                                                       res.weights_sha256, ref_sha, ckpt, ds);
                OC_CHECK(v != FAULT_BAD);
                if (v == FAULT_BAD)
                    return;
                n_failed += v == FAULT_FAILED_CLEANLY;
                n_fired += v != FAULT_UNREACHED;
                done = v == FAULT_UNREACHED;
            }
            OC_CHECK(done);
            if (!done)
                fprintf(stderr, "  %s: %s %s never ran out of faults\n", strategy,
                        fault_mode_name(mode), fc->what);
            /* each case reaches every strategy, but io_uring's setup only those with a ring */
            int ring = strcmp(strategy, "memory") != 0 && strcmp(strategy, "mmap") != 0;
            if (!n_fired && !test_fault_may_miss(fc->kind, ring)) {
                fprintf(stderr, "  %s: %s %s never fired\n", strategy, fault_mode_name(mode),
                        fc->what);
                OC_CHECK(n_fired > 0);
            }
            if (getenv("OC_VERBOSE"))
                fprintf(stderr, "  %s: %s %s: %llu failed runs, last nth %llu\n", strategy,
                        fault_mode_name(mode), fc->what, (unsigned long long)n_failed,
                        (unsigned long long)nth);
        }
    }
    oc_rm_rf(ckpt, &e2);
    fprintf(stderr, "  %-8s %llu runs\n", strategy, (unsigned long long)n_runs);
}

OC_TEST(every_strategy_under_every_fault)
{
    const char *ds = tiny_graph();
    OC_CHECK(ds != NULL);
    if (!ds)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    tiny_opts(&o, "memory", NULL, NULL);
    OC_CHECK_OK(oc_train_run(ds, &o, NULL, NULL, NULL, &ref, &err), &err);
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const char *name = oc_store_strategy_name(i);
        tiny_opts(&o, name, NULL, NULL);
        OC_CHECK_OK(oc_train_run(ds, &o, NULL, NULL, NULL, &res, &err), &err);
        if (strcmp(name, "outre") == 0) { /* historical embeddings: its own weights, every run */
            struct oc_train_result own;
            OC_CHECK_OK(oc_train_run(ds, &o, NULL, NULL, NULL, &own, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, own.weights_sha256) == 0);
            strategy_loop(ds, name, own.weights_sha256);
            continue;
        }
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        strategy_loop(ds, name, ref.weights_sha256);
    }
}

/* Flips one bit of byte `at` from the end of a file. */
static int flip_from_end(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    int ok = f && fseek(f, -at, SEEK_END) == 0;
    int c = ok ? fgetc(f) : EOF;
    ok = ok && c != EOF && fseek(f, -at, SEEK_END) == 0 && fputc(c ^ 0x04, f) != EOF;
    return (f && fclose(f) == 0) && ok;
}

/*
 * features.npy changed after it was written (same size, another checksum):
 * train checks it once, as the strategy that reads the whole file reads it
 * (`memory`'s load, diskgnn's first scan) or by reading it after the store
 * opened (the others), and every strategy refuses before any batch trains,
 * naming the file; no checkpoint is written.
 */
OC_TEST(every_strategy_refuses_changed_features)
{
    const char *ds = tiny_graph();
    OC_CHECK(ds != NULL);
    if (!ds)
        return;
    char feat[1100], ckpt[900];
    snprintf(feat, sizeof(feat), "%s/features.npy", ds);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt-crc", oc_test_tmpdir());
    OC_CHECK(flip_from_end(feat, 5)); /* the last row's */
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const char *name = oc_store_strategy_name(i);
        struct oc_train_opts o;
        struct oc_train_result res;
        struct oc_err err, e2;
        oc_rm_rf(ckpt, &e2);
        oc_mkdir_p(ckpt, &e2);
        tiny_opts(&o, name, ckpt, NULL);
        uint64_t live = oc_mem_n_live();
        int rc = oc_train_run(ds, &o, NULL, NULL, NULL, &res, &err);
        OC_CHECK(rc == OC_ERR_FORMAT && strstr(err.msg, feat) &&
                 strstr(err.msg, "checksum mismatch"));
        if (rc != OC_ERR_FORMAT || !strstr(err.msg, "checksum mismatch"))
            fprintf(stderr, "  %s: rc %d: %s\n", name, rc, err.msg);
        char cp[1000];
        snprintf(cp, sizeof(cp), "%s/checkpoint.bin", ckpt);
        OC_CHECK(!oc_path_exists(cp) && !fault_tmp_left(ckpt, 0) && !fault_tmp_left(ds, 0));
        OC_CHECK(oc_mem_n_live() == live);
    }
    OC_CHECK(flip_from_end(feat, 5)); /* back as it was */
    oc_rm_rf(ckpt, NULL);
}

OC_TEST_MAIN()
