/*
 * test_kg_train_fault.c — kg-train under fault injection, with the fact
 * graph in RAM and on disk: the nth allocation, read, write, open, fsync,
 * rename or io_uring setup fails, once (one-shot) or from then on
 * (persistent). Every run must end with a clean error (or, where a fallback
 * exists, succeed with the fault-free weights), leak nothing, leave no
 * temporary file in the checkpoint directory and a checkpoint that is absent
 * or whole. The nth values are sampled (fault_next_nth). The same loops run
 * with --extract tiger (slicing anew, or reading a committed slice store)
 * and atom: the slice store never keeps a temporary after a run.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "fault_util.h"
#include "harness.h"
#include "kg_fixture.h"
#include "uring_util.h"

struct fault_case {
    enum oc_fault_kind kind;
    int sys_errno;
    uint64_t stride;
    const char *what;
};

static const struct fault_case cases[] = {
    {OC_FAULT_ALLOC, ENOMEM, 8, "alloc ENOMEM"},
    {OC_FAULT_READ, EIO, 4, "read EIO"},
    {OC_FAULT_READ, 0, 8, "short read"},
    {OC_FAULT_WRITE, ENOSPC, 0, "write ENOSPC"},
    {OC_FAULT_OPEN, EACCES, 0, "open EACCES"},
    {OC_FAULT_FSYNC, EIO, 0, "fsync EIO"},
    {OC_FAULT_RENAME, ENOSPC, 0, "rename ENOSPC"},
    {OC_FAULT_URING_SETUP, ENOSYS, 0, "uring ENOSYS"},
};

static void tiny_opts(struct oc_kg_train_opts *o, enum oc_kg_facts_where where, const char *ckpt,
                      const char *log)
{
    oc_kg_train_opts_default(o);
    o->n_layers = 2;
    o->hidden = 4;
    o->attn_dim = 2;
    o->batch = 1;
    o->epochs = 2;
    o->threads = 2;
    o->seed = 9;
    o->facts = where;
    o->checkpoint_dir = ckpt;
    o->log_path = log;
}

/* Whether dir or a directory under it (depth levels) holds a name with "tmp-". */
static int has_tmp(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1200];
        if (snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= (int)sizeof(sub))
            continue; /* a path this long is not one of ours */
        found = strstr(e->d_name, "tmp-") != NULL || (depth > 0 && has_tmp(sub, depth - 1));
    }
    closedir(d);
    return found;
}

/*
 * ex: the extraction mode (ginex-slices and tiger slice into plan/; with
 * keep_plan the reference run's committed store is read by every run, else
 * each run slices anew).
 */
static void fault_loop(const char *ds, enum oc_kg_facts_where where, const char *ref_sha,
                       enum oc_kg_extract_mode ex, int keep_plan)
{
    const char *tmp = oc_test_tmpdir();
    char ckpt[900], log[1000], plan[900];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
    snprintf(log, sizeof(log), "%s/log.jsonl", tmp);
    snprintf(plan, sizeof(plan), "%s/plan-%s-%d", tmp, oc_kg_extract_name(ex), keep_plan);
    struct oc_kg_train_opts o;
    tiny_opts(&o, where, ckpt, log);
    o.extract = ex;
    o.plan_dir = plan;
    o.slice_size = 3;
    o.superbatch = 2;
    struct oc_err e0;
    struct oc_kg_train_result r0;
    if (keep_plan)
        OC_CHECK_OK(oc_kg_train_run(ds, &o, NULL, NULL, &r0, &e0), &e0);
    struct oc_kg_train_result res;
    struct oc_err err, e2;
    uint64_t n_runs = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct fault_case *fc = &cases[c];
        for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
            int done = 0;
            uint64_t n_fired = 0;
            for (uint64_t nth = 1; nth < 1000000 && !done; nth = fault_next_nth(nth, fc->stride)) {
                oc_rm_rf(ckpt, &e2);
                if (!keep_plan)
                    oc_rm_rf(plan, &e2);
                oc_err_clear(&err);
                uint64_t live = oc_mem_n_live();
                fault_arm_mode(mode, fc->kind, nth, fc->sys_errno);
                int rc = oc_kg_train_run(ds, &o, NULL, NULL, &res, &err);
                int fired = oc_fault_fired(fc->kind);
                oc_fault_disarm_all();
                n_runs++;
                char label[200];
                snprintf(label, sizeof(label), "facts %s, %s%s: %s %s #%llu",
                         where == OC_KG_FACTS_DISK ? "disk" : "memory", oc_kg_extract_name(ex),
                         keep_plan ? " (store kept)" : "", fault_mode_name(mode), fc->what,
                         (unsigned long long)nth);
                enum fault_verdict v = fault_judge_run(label, fc->kind, live, fired, rc, &err,
                                                       res.weights_sha256, ref_sha, ckpt, NULL);
                OC_CHECK(v != FAULT_BAD);
                if (v == FAULT_BAD)
                    return;
                /* no temporary of the slice store left behind */
                OC_CHECK(!has_tmp(plan, 2));
                n_fired += v != FAULT_UNREACHED;
                done = v == FAULT_UNREACHED;
            }
            OC_CHECK(done);
            /* facts in RAM: no ring is set up */
            if (!n_fired && !test_fault_may_miss(fc->kind, where == OC_KG_FACTS_DISK)) {
                fprintf(stderr, "  facts %s, %s%s: %s %s never fired\n",
                        where == OC_KG_FACTS_DISK ? "disk" : "memory", oc_kg_extract_name(ex),
                        keep_plan ? " (store kept)" : "", fault_mode_name(mode), fc->what);
                OC_CHECK(n_fired > 0);
            }
        }
    }
    fprintf(stderr, "  facts %s, %s%s: %llu runs\n", where == OC_KG_FACTS_DISK ? "disk" : "memory",
            oc_kg_extract_name(ex), keep_plan ? " (store kept)" : "", (unsigned long long)n_runs);
}

OC_TEST(kg_train_under_every_fault)
{
    const char *root = oc_test_tmpdir();
    const char *src = kgfx_toy_split(root, "x\tr2\ty\ny\tr1\tz\nz\tr1\tx\n");
    char ds[700];
    snprintf(ds, sizeof(ds), "%s/ds", root);
    struct oc_err err;
    OC_CHECK_OK(oc_kg_import_grail(src, ds, NULL, &err), &err);
    struct oc_kg_train_opts o;
    struct oc_kg_train_result ref, res;
    tiny_opts(&o, OC_KG_FACTS_MEMORY, NULL, NULL);
    OC_CHECK_OK(oc_kg_train_run(ds, &o, NULL, NULL, &ref, &err), &err);
    tiny_opts(&o, OC_KG_FACTS_DISK, NULL, NULL);
    OC_CHECK_OK(oc_kg_train_run(ds, &o, NULL, NULL, &res, &err), &err);
    OC_CHECK(strcmp(ref.weights_sha256, res.weights_sha256) == 0);
    fault_loop(ds, OC_KG_FACTS_MEMORY, ref.weights_sha256, OC_KG_EXTRACT_BASIC, 0);
    fault_loop(ds, OC_KG_FACTS_DISK, ref.weights_sha256, OC_KG_EXTRACT_BASIC, 0);
    fault_loop(ds, OC_KG_FACTS_DISK, ref.weights_sha256, OC_KG_EXTRACT_TIGER, 0);
    fault_loop(ds, OC_KG_FACTS_DISK, ref.weights_sha256, OC_KG_EXTRACT_TIGER, 1);
    fault_loop(ds, OC_KG_FACTS_DISK, ref.weights_sha256, OC_KG_EXTRACT_ATOM, 0);
}

OC_TEST_MAIN()
