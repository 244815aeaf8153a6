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
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fault_util.h"
#include "gen_util.h"
#include "harness.h"
#include "offcore/generate.h"
#include "offcore/train.h"

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
}

/* Whether any file under dir has ".tmp" in its name (a partial output left in place). */
static int tmp_left(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (strstr(de->d_name, ".tmp")) {
            fprintf(stderr, "  left behind: %s/%s\n", dir, de->d_name);
            found = 1;
            break;
        }
        char sub[2048];
        snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
        if (depth < 4 && de->d_type == DT_DIR)
            found = tmp_left(sub, depth + 1);
    }
    closedir(d);
    return found;
}

/* A checkpoint that exists must be whole: its last 4 bytes are the CRC-32 of the rest. */
static int checkpoint_whole(const char *ckpt)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/checkpoint.bin", ckpt);
    if (!oc_path_exists(path))
        return 1;
    char *data = NULL;
    size_t len = 0;
    struct oc_err err;
    if (oc_read_file(path, 0, &data, &len, &err) != OC_OK)
        return 0;
    int ok = len > 12 && memcmp(data, "OCCKPT01", 8) == 0 &&
             oc_crc32(0, data, len - 4) == oc_get_le32((const uint8_t *)data + len - 4);
    oc_free(data);
    return ok;
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
            uint64_t nth = 1, n_failed = 0;
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
                if (oc_mem_n_live() != live) {
                    fprintf(stderr, "  %s: %llu allocations leaked (%s)\n", label,
                            (unsigned long long)(oc_mem_n_live() - live), err.msg);
                    OC_CHECK(oc_mem_n_live() == live);
                    return;
                }
                if (!fired || rc == OC_OK) {
                    /* Not reached, swallowed (an optional plan file) or a fallback: same weights. */
                    if (rc != OC_OK || strcmp(res.weights_sha256, ref_sha) != 0) {
                        fprintf(stderr, "  %s (%s): %s, weights %s\n", label,
                                fired ? "fired" : "not reached", oc_status_str(rc),
                                rc ? err.msg : res.weights_sha256);
                        OC_CHECK(!"a run that did not fail must train the reference weights");
                        return;
                    }
                    done = !fired;
                    continue;
                }
                n_failed++;
                int ok = err.status == rc && err.msg[0] != '\0';
                if (fc->kind == OC_FAULT_URING_SETUP) {
                    fprintf(stderr, "  %s: no pread fallback: %s\n", label, err.msg);
                    ok = 0;
                }
                if (!ok) {
                    fprintf(stderr, "  %s: %s, error status %s: %s\n", label, oc_status_str(rc),
                            oc_status_str(err.status), err.msg);
                    OC_CHECK(!"a failed run must fail cleanly with a message");
                }
                if (tmp_left(ckpt, 0) || tmp_left(ds, 0)) {
                    fprintf(stderr, "  %s left a temporary file (%s)\n", label, err.msg);
                    OC_CHECK(!"partial output left in place");
                    return;
                }
                if (!checkpoint_whole(ckpt)) {
                    fprintf(stderr, "  %s: checkpoint not whole (%s)\n", label, err.msg);
                    OC_CHECK(!"the checkpoint must be the previous one or absent");
                    return;
                }
                if (!ok)
                    return;
            }
            OC_CHECK(done);
            if (!done)
                fprintf(stderr, "  %s: %s %s never ran out of faults\n", strategy,
                        fault_mode_name(mode), fc->what);
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
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        strategy_loop(ds, name, ref.weights_sha256);
    }
}

OC_TEST_MAIN()
