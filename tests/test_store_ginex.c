/*
 * test_store_ginex.c — the `ginex` strategy as a store (the planner alone:
 * test_plan_belady.c): gather_batch over two epochs gives
 * rows bit-identical to the file (as `memory`) at several superbatch lengths,
 * with evaluation gathers interleaved not changing what the plan does;
 * training with a budget ends with memory's weights; budget errors; plan
 * files are reused, a leftover temporary is ignored and a damaged file is
 * sampled again; faults end in clean errors; a store over other ids than
 * the plan's (a features-only dataset of the even nodes' rows, with an
 * access map) plans over the ids it is asked for and misses exactly what
 * its plan says, and gnndrive refuses such a config.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → store).
 * Thread-safety: test code is single-threaded; the store runs its inspector
 * stage (on its own pipeline, or on one the test gives it, as train does).
 * Ownership: every store, pool, trace, planner and fixture is freed by the
 * test that made it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "ginex_util.h"
#include "harness.h"
#include "offcore/pipeline.h"
#include "offcore/rng.h"
#include "offcore/train.h"
#include "store/static/static_int.h"

/* ---- the store --------------------------------------------------------------------- */

/* A config for epochs [e0, e1) with superbatch S and a budget caching about `rows` rows. */
static struct oc_store_config ginex_config(const struct fixture *fx, struct oc_pool *pool,
                                           uint32_t e0, uint32_t e1, uint32_t S, uint64_t rows)
{
    struct oc_err err;
    struct oc_store_config c = fixture_config(fx, pool);
    c.first_epoch = e0;
    c.n_epochs = e1;
    fixture_opt(&c, "superbatch", S);
    if (rows) {
        uint64_t b = 0;
        OC_CHECK_OK(oc_store_ginex_budget_for(&c, rows, &b, &err), &err);
        c.mem_bytes = b;
    }
    return c;
}

/* What a run of the plan saw: disk rows of every training gather, the final counters. */
struct store_run {
    uint64_t disk[64];
    uint64_t n;
    struct oc_store_stats st;
    int bad_rows;
};

/*
 * Gathers every planned batch of c's epochs through `ginex` and checks each
 * row against the file; with eval, an evaluation gather of random ids (also
 * checked) runs before every batch.
 */
static struct store_run run_plan(const struct fixture *fx, const struct oc_store_config *c,
                                 int eval, struct oc_store **keep)
{
    struct store_run r;
    struct oc_err err;
    memset(&r, 0, sizeof(r));
    struct trace t = sampled_trace(fx, c->first_epoch, c->n_epochs);
    /* The accountant holds the store (inspector thread included) to its budget. */
    if (c->mem_bytes)
        oc_mem_set_budget(oc_mem_used() + c->mem_bytes);
    struct oc_store *s = fixture_open("ginex", c);
    if (keep)
        *keep = s;
    if (!s) {
        oc_mem_set_budget(0);
        trace_free(&t);
        return r;
    }
    uint64_t nb = t.n_iters / (c->n_epochs - c->first_epoch), max_b = 0;
    for (uint64_t i = 0; i < t.n_iters; i++)
        if (t.off[i + 1] - t.off[i] > max_b)
            max_b = t.off[i + 1] - t.off[i];
    float *out = malloc((max_b + 700) * fx->dim * sizeof(float));
    uint64_t ev[700];
    struct oc_rng rng;
    oc_rng_init(&rng, 42, 0, 0, 0);
    for (uint64_t i = 0; i < t.n_iters && i < 64; i++) {
        if (eval) {
            uint64_t n = 1 + oc_rng_below(&rng, 700);
            for (uint64_t k = 0; k < n; k++)
                ev[k] = oc_rng_below(&rng, fx->n_nodes);
            OC_CHECK_OK(oc_store_gather(s, ev, n, out, &err), &err);
            for (uint64_t k = 0; k < n; k++)
                r.bad_rows +=
                    memcmp(out + k * fx->dim, fx->ref + ev[k] * fx->dim, fx->dim * 4) != 0;
        }
        const uint64_t *ids = t.ids + t.off[i];
        uint64_t n = t.off[i + 1] - t.off[i];
        struct oc_store_stats a, b;
        oc_store_stats(s, &a);
        memset(out, 0xA5, n * fx->dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather_batch(s, c->first_epoch + i / nb, i % nb, ids, n, out, &err),
                    &err);
        oc_store_stats(s, &b);
        r.disk[r.n++] = b.tier_rows[OC_STORE_TIER_DISK] - a.tier_rows[OC_STORE_TIER_DISK];
        for (uint64_t k = 0; k < n; k++)
            r.bad_rows += memcmp(out + k * fx->dim, fx->ref + ids[k] * fx->dim, fx->dim * 4) != 0;
    }
    oc_store_stats(s, &r.st);
    if (c->mem_bytes)
        OC_CHECK(r.st.held_bytes <= c->mem_bytes);
    oc_mem_set_budget(0);
    free(out);
    trace_free(&t);
    if (!keep)
        oc_store_free(s);
    return r;
}

/* Two epochs bit-identical to the file at superbatch S, with and without evaluation reads. */
static void two_epochs(enum oc_dtype dtype, uint32_t dim, uint32_t S, struct oc_pool *pool)
{
    struct fixture fx;
    if (!fixture_init(&fx, 2000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = ginex_config(&fx, pool, 0, 2, S, 400);
    struct store_run a = run_plan(&fx, &c, 0, NULL), b = run_plan(&fx, &c, 1, NULL);
    OC_CHECK(a.n == 2 * fixture_nb(&fx) && b.n == a.n);
    OC_CHECK(a.bad_rows == 0 && b.bad_rows == 0);
    /* Evaluation reads leave the plan alone: the same misses batch by batch. */
    OC_CHECK(memcmp(a.disk, b.disk, sizeof(a.disk)) == 0);
    OC_CHECK(a.st.belady_misses == b.st.belady_misses && a.st.lru_misses == b.st.lru_misses);
    /* The executor misses exactly what the plan predicted; Belady beats LRU and static. */
    OC_CHECK(a.st.tier_rows[OC_STORE_TIER_DISK] == a.st.belady_misses);
    OC_CHECK(a.st.trace_accesses == a.st.requested_rows);
    OC_CHECK(a.st.belady_misses > 0 && a.st.belady_misses < a.st.trace_accesses);
    OC_CHECK(a.st.belady_misses <= a.st.lru_misses && a.st.belady_misses <= a.st.static_misses);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  S=%u %s: accesses %llu belady %llu lru %llu static %llu\n", S,
                oc_dtype_name(dtype), (unsigned long long)a.st.trace_accesses,
                (unsigned long long)a.st.belady_misses, (unsigned long long)a.st.lru_misses,
                (unsigned long long)a.st.static_misses);
    fixture_free(&fx);
}

OC_TEST(gather_batch_two_epochs_bit_identical)
{
    struct oc_pool *pool = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    two_epochs(OC_DTYPE_F32, 12, 0, NULL);
    two_epochs(OC_DTYPE_F16, 12, 1, pool);
    two_epochs(OC_DTYPE_F16, 300, 5, pool); /* wider than a widening chunk, across pages */
    two_epochs(OC_DTYPE_F32, 12, 100, pool);
    oc_pool_free(pool);
}

OC_TEST(store_misses_match_brute_force_in_one_superbatch)
{
    struct fixture fx;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store *s = NULL;
    struct oc_store_config c = ginex_config(&fx, NULL, 0, 2, 100, 500);
    struct store_run r = run_plan(&fx, &c, 0, &s);
    struct trace t = sampled_trace(&fx, 0, 2);
    uint64_t C = oc_store_ginex_capacity(s);
    OC_CHECK(C >= 500 && C < 600);
    OC_CHECK(oc_store_ginex_superbatch(s) == 2 * fixture_nb(&fx));
    OC_CHECK(oc_store_ginex_n_cached(s) == C); /* full once warm */
    OC_CHECK(r.bad_rows == 0);
    OC_CHECK(r.st.belady_misses == brute_belady(&t, C));
    OC_CHECK(r.st.lru_misses == brute_lru(&t, C));
    OC_CHECK(r.st.tier_rows[OC_STORE_TIER_DISK] == r.st.belady_misses);
    /* Past the plan (an epoch more than configured): served, not planned, no wait. */
    if (s) {
        struct oc_err err;
        struct oc_store_stats st;
        float *out = malloc((t.off[1] + 1) * fx.dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather_batch(s, 2, 0, t.ids, t.off[1], out, &err), &err);
        for (uint64_t k = 0; k < t.off[1]; k++)
            OC_CHECK(memcmp(out + k * fx.dim, fx.ref + t.ids[k] * fx.dim, fx.dim * 4) == 0);
        oc_store_stats(s, &st);
        OC_CHECK(st.trace_accesses == r.st.trace_accesses);
        free(out);
    }
    /* The degree-ranked static cache of the same capacity, as the `static` store holds it. */
    struct oc_store_config sc = fixture_config(&fx, NULL);
    sc.mem_bytes = fixture_fixed_bytes(&fx) + C * (fx.row_bytes + 12); /* sorted layout: id, slot */
    struct oc_store *st = fixture_open("static", &sc);
    if (st) {
        uint64_t n_st = oc_store_static_n_cached(st), want = 0;
        OC_CHECK(n_st >= C);
        /* static holds at least C rows; compare at exactly C only when it holds C */
        if (n_st == C) {
            for (uint64_t a = 0; a < t.n_acc; a++)
                want += !oc_store_static_is_cached(st, t.ids[a]);
            OC_CHECK(r.st.static_misses == want);
        }
        oc_store_free(st);
    }
    trace_free(&t);
    oc_store_free(s);
    fixture_free(&fx);
}

OC_TEST(out_of_order_batches_served_without_the_plan)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = ginex_config(&fx, NULL, 1, 3, 2, 300);
    struct oc_store *s = fixture_open("ginex", &c);
    struct trace t = sampled_trace(&fx, 1, 3);
    float *out = malloc(2000 * fx.dim * sizeof(float));
    if (s) {
        /* Batch 3 of epoch 1 before batch 0: read correctly, counted nowhere in the plan. */
        const uint64_t *ids = t.ids + t.off[3];
        uint64_t n = t.off[4] - t.off[3];
        OC_CHECK_OK(oc_store_gather_batch(s, 1, 3, ids, n, out, &err), &err);
        for (uint64_t k = 0; k < n; k++)
            OC_CHECK(memcmp(out + k * fx.dim, fx.ref + ids[k] * fx.dim, fx.dim * 4) == 0);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.trace_accesses == 0 && st.requested_rows == n);
        /* The plan still starts at batch 0 of epoch 1. */
        OC_CHECK_OK(oc_store_gather_batch(s, 1, 0, t.ids, t.off[1], out, &err), &err);
        oc_store_stats(s, &st);
        OC_CHECK(st.trace_accesses == t.off[1]);
        oc_store_free(s);
    }
    free(out);
    trace_free(&t);
    fixture_free(&fx);
}

OC_TEST(budget_too_small)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live(), min0 = 0;
    struct oc_store_config c = ginex_config(&fx, NULL, 0, 2, 0, 0);
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 0, &min0, &err), &err);
    OC_CHECK_OK(oc_store_strategy_find("ginex", &idx, &err), &err);
    c.mem_bytes = min0 - 1;
    OC_CHECK_ERR(oc_store_open(idx, &c, &s, &err), OC_ERR_BUDGET, &err, "needs at least");
    OC_CHECK(strstr(err.msg, "ginex") && strstr(err.msg, "budget"));
    OC_CHECK(s == NULL && oc_mem_n_live() == live);
    /* The smallest budget opens, with a cache of no rows: every row from disk, still right. */
    c.mem_bytes = min0;
    struct store_run r = run_plan(&fx, &c, 1, NULL);
    OC_CHECK(r.n == 2 * fixture_nb(&fx) && r.bad_rows == 0);
    OC_CHECK(r.st.belady_misses == r.st.trace_accesses && r.st.lru_misses == r.st.trace_accesses);
    /* Without a plan a budget needs no inspector. */
    struct oc_store_config e = fixture_config(&fx, NULL);
    e.mem_bytes = fixture_fixed_bytes(&fx) + 4096;
    s = fixture_open("ginex", &e);
    OC_CHECK(oc_store_ginex_capacity(s) == 0);
    oc_store_free(s);
    /* A plan without its sampling options is an argument error. */
    c.sample_opts = NULL;
    OC_CHECK_ERR(oc_store_open(idx, &c, &s, &err), OC_ERR_ARG, &err, "sample_opts");
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* ---- plan files ----------------------------------------------------------------------- */

/* Names in dir ending in suffix, sorted (at most 64). */
static int list_files(const char *dir, const char *suffix, char names[][128])
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && n < 64 && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), k = strlen(suffix);
        if (l >= k && l < 128 && strcmp(de->d_name + l - k, suffix) == 0)
            memcpy(names[n++], de->d_name, l + 1); /* l < 128 */
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, 128, (int (*)(const void *, const void *))strcmp);
    return n;
}

static int has_tmp(const char *dir)
{
    char names[64][128];
    int n = list_files(dir, "", names), k = 0;
    for (int i = 0; i < n; i++)
        k += strstr(names[i], ".tmp") != NULL;
    return k;
}

static void write_junk(const char *dir, const char *name)
{
    char path[1400];
    struct oc_err err;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    OC_CHECK_OK(oc_write_file_atomic(path, "half a superbatch", 17, &err), &err);
}

OC_TEST(plan_files_reused_and_damaged_ones_sampled_again)
{
    struct fixture fx;
    char plan[800], dir[1200], path[1400], names[64][128], dead_tmp[128];
    uint64_t reused = 0, sampled = 0;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    struct oc_store_config c = ginex_config(&fx, NULL, 0, 2, 4, 300);
    c.plan_dir = plan;
    struct oc_store *s = NULL;
    struct store_run r1 = run_plan(&fx, &c, 0, &s);
    if (!s) {
        fixture_free(&fx);
        return;
    }
    snprintf(dir, sizeof(dir), "%s", oc_store_ginex_plan_dir(s));
    oc_store_ginex_plan_counts(s, &reused, &sampled);
    oc_store_free(s);
    OC_CHECK(strncmp(dir, plan, strlen(plan)) == 0 && strstr(dir, "/ginex-"));
    uint64_t n_sb = sampled;
    OC_CHECK(reused == 0 && n_sb >= 3);
    OC_CHECK(list_files(dir, ".ocsb", names) == (int)n_sb);
    OC_CHECK(has_tmp(dir) == 0);

    /* A crashed writer's temporary (its process gone, this host) and a live process's one. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    char live_tmp[128];
    snprintf(dead_tmp, sizeof(dead_tmp), "sb-0.ocsb.tmp-%s-%ld-0123456789ab-0", oc_tmp_host_id(),
             (long)child);
    write_junk(dir, dead_tmp);
    /* pid 1 is alive: left alone, never read */
    snprintf(live_tmp, sizeof(live_tmp), "sb-4.ocsb.tmp-%s-1-0123456789ab-0", oc_tmp_host_id());
    write_junk(dir, live_tmp);
    struct store_run r2 = run_plan(&fx, &c, 0, &s);
    oc_store_ginex_plan_counts(s, &reused, &sampled);
    oc_store_free(s);
    OC_CHECK(reused == n_sb && sampled == 0);
    OC_CHECK(r2.bad_rows == 0 && memcmp(r1.disk, r2.disk, sizeof(r1.disk)) == 0);
    OC_CHECK(r2.st.belady_misses == r1.st.belady_misses);
    snprintf(path, sizeof(path), "%s/%s", dir, dead_tmp);
    OC_CHECK(!oc_path_exists(path));
    snprintf(path, sizeof(path), "%s/%s", dir, live_tmp);
    OC_CHECK(oc_path_exists(path));

    /* A file cut short (as if half-written) and one with a flipped byte: sampled again. */
    list_files(dir, ".ocsb", names);
    snprintf(path, sizeof(path), "%s/%s", dir, names[1]);
    struct stat sbuf;
    OC_CHECK(stat(path, &sbuf) == 0 && truncate(path, sbuf.st_size / 2) == 0);
    snprintf(path, sizeof(path), "%s/%s", dir, names[2]);
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (f) {
        fseek(f, 100, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, 100, SEEK_SET);
        fputc(ch ^ 0x40, f);
        fclose(f);
    }
    struct store_run r3 = run_plan(&fx, &c, 0, &s);
    oc_store_ginex_plan_counts(s, &reused, &sampled);
    oc_store_free(s);
    OC_CHECK(reused == n_sb - 2 && sampled == 2);
    OC_CHECK(r3.bad_rows == 0 && memcmp(r1.disk, r3.disk, sizeof(r1.disk)) == 0);
    /* ...and replaced by sound ones. */
    struct store_run r4 = run_plan(&fx, &c, 0, &s);
    oc_store_ginex_plan_counts(s, &reused, &sampled);
    oc_store_free(s);
    OC_CHECK(reused == n_sb && sampled == 0 && r4.bad_rows == 0);
    OC_CHECK(has_tmp(dir) == 1); /* only the live process's */

    /* A resumed run (epochs [1, 2)) has other superbatch boundaries: sampled, right. */
    struct oc_store_config c1 = ginex_config(&fx, NULL, 1, 2, 4, 300);
    c1.plan_dir = plan;
    struct store_run r5 = run_plan(&fx, &c1, 0, NULL);
    OC_CHECK(r5.n == fixture_nb(&fx) && r5.bad_rows == 0);
    fixture_free(&fx);
}

/* ---- training ---------------------------------------------------------------------------- */

struct epoch_log {
    struct oc_store_stats st[4];
    uint32_t n;
};

static void log_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct epoch_log *l = ctx;
    if (l->n < 4)
        l->st[l->n++] = st->store;
}

OC_TEST(training_under_budget_equals_memory)
{
    char dir[800];
    struct oc_err err;
    struct oc_generate_opts g;
    snprintf(dir, sizeof(dir), "%s/train", oc_test_tmpdir());
    oc_generate_opts_default(&g);
    g.n_nodes = 5000;
    g.avg_degree = 6;
    g.feat_dim = 128; /* 512-byte rows: the store's share of 9 MiB caches about a third */
    g.n_classes = 4;
    g.train_frac = 0.2;
    g.seed = 3;
    g.n_threads = 1;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    struct oc_train_opts o;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.fanouts[0] = 5;
    o.fanouts[1] = 5;
    o.batch_size = 128;
    o.epochs = 2;
    o.hidden = 8;
    o.n_threads = 2;
    o.seed = 4;
    o.eval = OC_TRAIN_EVAL_SAMPLED;
    o.eval_batch_size = 256;
    struct oc_train_result ref, res;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    o.strategy = "ginex";
    o.mem_budget = 9u << 20;
    for (int run = 0; run < 2; run++) { /* the second run reuses the plan files */
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        OC_CHECK_OK(oc_train_run(dir, &o, log_epoch, &log, NULL, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        OC_CHECK(log.n == 2);
        for (uint32_t e = 0; e < log.n; e++) {
            const struct oc_store_stats *st = &log.st[e];
            OC_CHECK(st->trace_accesses == st->requested_rows);
            OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == st->belady_misses);
            OC_CHECK(st->belady_misses > 0 && st->read_bytes > 0);
            OC_CHECK(st->belady_misses <= st->lru_misses && st->belady_misses <= st->static_misses);
        }
    }
    char plan[900];
    snprintf(plan, sizeof(plan), "%s/plan", dir);
    OC_CHECK(oc_path_exists(plan));
}

/* ---- pipeline and faults ------------------------------------------------------------------- */

OC_TEST(pipeline_one_batch_superbatches_and_early_free)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    struct oc_store_config c = ginex_config(&fx, pool, 0, 3, 1, 200);
    struct store_run r = run_plan(&fx, &c, 1, NULL);
    OC_CHECK(r.n == 3 * fixture_nb(&fx) && r.bad_rows == 0);
    OC_CHECK(r.st.tier_rows[OC_STORE_TIER_DISK] - r.st.belady_misses > 0); /* eval misses too */
    /* Freed while the inspector samples ahead. */
    for (int k = 0; k < 4; k++) {
        struct oc_store *s = fixture_open("ginex", &c);
        if (s && k % 2) {
            struct trace t = sampled_trace(&fx, 0, 1);
            float *out = malloc((t.off[1] + 1) * fx.dim * sizeof(float));
            OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, t.ids, t.off[1], out, &err), &err);
            free(out);
            trace_free(&t);
        }
        oc_store_free(s);
    }
    oc_pool_free(pool);
    fixture_free(&fx);
}

/*
 * Opened on a pipeline it does not own (as in training), the inspector runs
 * there: cancelling that pipeline (another stage failed, Ctrl-C) stops it and
 * the next superbatch's gather fails with the pipeline's error instead of
 * waiting; the store is freed after the pipeline, as train does.
 */
OC_TEST(inspector_runs_on_a_given_pipeline_and_stops_with_it)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_pipeline *p = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    OC_CHECK_OK(oc_pipeline_new("training pipeline", &p, &err), &err);
    struct oc_store_config c = ginex_config(&fx, pool, 0, 2, 1, 200);
    c.pipeline = p;
    struct oc_store *s = fixture_open("ginex", &c);
    struct trace t = sampled_trace(&fx, 0, 2);
    float *out = malloc((fx.n_nodes + 1) * fx.dim * sizeof(float));
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, t.ids, t.off[1], out, &err), &err);
    struct oc_err why;
    OC_ERR(&why, OC_ERR_IO, "fetch stage: a read failed");
    oc_pipeline_fail(p, &why);
    int rc = OC_OK;
    for (uint64_t i = 1; i < t.n_iters && rc == OC_OK; i++) /* superbatches of one batch */
        rc = oc_store_gather_batch(s, 0, i, t.ids + t.off[i], t.off[i + 1] - t.off[i], out, &err);
    OC_CHECK_ERR(rc, OC_ERR_IO, &err, "a read failed");
    oc_pipeline_free(p); /* joins the inspector */
    oc_store_free(s);
    free(out);
    trace_free(&t);
    oc_pool_free(pool);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* Runs the whole plan; returns the first error status (0 if none). */
static int run_until_error(const struct fixture *fx, struct oc_store *s, const struct trace *t,
                           uint64_t nb, float *out, struct oc_err *err)
{
    for (uint64_t i = 0; i < t->n_iters; i++) {
        int rc = oc_store_gather_batch(s, i / nb, i % nb, t->ids + t->off[i],
                                       t->off[i + 1] - t->off[i], out, err);
        if (rc)
            return rc;
        (void)fx;
    }
    return OC_OK;
}

/*
 * With a plan directory a superbatch's trace, next uses and changes are
 * spilled to scratch files: a full disk while writing them is a clear error
 * naming what was written (not a wrong plan), nothing is left behind, and the
 * same store opens and follows its plan once the disk has room.
 */
OC_TEST(spilled_superbatch_on_a_full_disk_is_a_clear_error)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan-full", oc_test_tmpdir());
    struct oc_store_config c = ginex_config(&fx, NULL, 0, 2, 0, 200);
    c.plan_dir = plan;
    uint32_t idx = 0;
    struct oc_store *s = NULL;
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_store_strategy_find("ginex", &idx, &err), &err);
    oc_fault_arm_persistent(OC_FAULT_WRITE, 1, ENOSPC);
    int rc = oc_store_open(idx, &c, &s, &err);
    oc_fault_disarm_all();
    OC_CHECK(rc == OC_ERR_NOSPC && s == NULL && oc_mem_n_live() == live);
    OC_CHECK(strstr(err.msg, "superbatch trace") || strstr(err.msg, "next uses") ||
             strstr(err.msg, "changesets"));
    /* the spills were unlinked at creation; the superbatch file was not written */
    struct store_run r = run_plan(&fx, &c, 0, &s);
    OC_CHECK(s != NULL && r.n == 2 * fixture_nb(&fx) && r.bad_rows == 0);
    OC_CHECK(oc_store_ginex_superbatch(s) == fixture_nb(&fx)); /* an epoch, spilled */
    OC_CHECK(has_tmp(oc_store_ginex_plan_dir(s)) == 0);
    oc_store_free(s);
    fixture_free(&fx);
}

OC_TEST(faults_end_in_clean_errors)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    struct trace t = sampled_trace(&fx, 0, 2);
    uint64_t nb = t.n_iters / 2;
    float *out = malloc(2000 * fx.dim * sizeof(float));
    struct oc_store_config c = ginex_config(&fx, NULL, 0, 2, 3, 200);
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find("ginex", &idx, &err), &err);

    /* Allocation failures anywhere (the inspector's too) surface as OC_ERR_NOMEM, leak-free. */
    uint64_t base = oc_mem_n_live();
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        uint64_t nth = 1, n_runs = 0;
        for (; nth < 2000; nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0)) {
            struct oc_store *s = NULL;
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = oc_store_open(idx, &c, &s, &err);
            if (rc == OC_OK)
                rc = run_until_error(&fx, s, &t, nb, out, &err);
            oc_store_free(s); /* joins the inspector: after it, the fault has fired or not */
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (fired ? rc != OC_ERR_NOMEM : rc != OC_OK)
                fprintf(stderr, "  %s alloc #%llu: %s: %s\n", fault_mode_name(mode),
                        (unsigned long long)nth, oc_status_str(rc), err.msg);
            OC_CHECK(fired ? rc == OC_ERR_NOMEM : rc == OC_OK);
            OC_CHECK(oc_mem_n_live() == base);
            n_runs++;
            if (!fired)
                break;
        }
        OC_CHECK(nth > 20 && nth < 2000 && n_runs > 10);
    }

    /* A read error names the file; the same batch then succeeds and the plan goes on. */
    struct oc_store *s = fixture_open("ginex", &c);
    if (s) {
        OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, t.ids, t.off[1], out, &err), &err);
        oc_fault_arm(OC_FAULT_READ, 1, EIO);
        OC_CHECK_ERR(
            oc_store_gather_batch(s, 0, 1, t.ids + t.off[1], t.off[2] - t.off[1], out, &err),
            OC_ERR_IO, &err, "features.npy");
        oc_fault_disarm_all();
        for (uint64_t i = 1; i < t.n_iters; i++) {
            const uint64_t *ids = t.ids + t.off[i];
            uint64_t n = t.off[i + 1] - t.off[i];
            OC_CHECK_OK(oc_store_gather_batch(s, i / nb, i % nb, ids, n, out, &err), &err);
            for (uint64_t k = 0; k < n; k++)
                OC_CHECK(memcmp(out + k * fx.dim, fx.ref + ids[k] * fx.dim, fx.dim * 4) == 0);
        }
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.trace_accesses == t.n_acc);
        oc_store_free(s);
    }

    /* A plan file that cannot be written (disk full) is not an error; nothing is left behind. */
    char plan[800], dir[1200];
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    c.plan_dir = plan;
    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    s = fixture_open("ginex", &c);
    if (s) {
        snprintf(dir, sizeof(dir), "%s", oc_store_ginex_plan_dir(s));
        OC_CHECK_OK(run_until_error(&fx, s, &t, nb, out, &err), &err);
        oc_store_free(s);
        OC_CHECK(oc_fault_fired(OC_FAULT_WRITE));
        OC_CHECK(has_tmp(dir) == 0);
    }
    oc_fault_disarm_all();
    free(out);
    trace_free(&t);
    fixture_free(&fx);
}

/* ---- a store over other ids than the plan's (oc_store_config.accesses) ---------------- */

OC_TEST(store_over_other_ids_follows_the_access_map)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    /* the even nodes' rows as a features-only dataset, and their in-degrees by local row */
    struct even_part part;
    int opened = even_part_open(&part, &fx, 0);
    struct oc_store_config c = even_part_config(&fx, &part);
    c.n_epochs = 2;
    uint64_t budget = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 150, &budget, &err), &err);
    c.mem_bytes = budget;
    struct oc_store *s = opened ? fixture_open("ginex", &c) : NULL;
    /* every planned batch gathered with its accesses: the file's rows, the plan's misses */
    struct trace t = sampled_trace(&fx, 0, 2);
    uint64_t nb = fixture_nb(&fx), bad = 0, *ids = NULL, cap = 0, n = 0;
    float *out = malloc((t.n_acc + 1) * fx.dim * sizeof(float));
    for (uint64_t i = 0; s && i < t.n_iters; i++) {
        struct oc_sample_batch b = {0};
        b.input_ids = t.ids + t.off[i];
        b.n_input = t.off[i + 1] - t.off[i];
        OC_CHECK_OK(even_accesses(NULL, &b, &ids, &cap, &n, &err), &err);
        OC_CHECK_OK(oc_store_gather_batch(s, i / nb, i % nb, ids, n, out, &err), &err);
        bad += even_part_bad_rows(&fx, ids, n, out);
    }
    struct oc_store_stats st;
    memset(&st, 0, sizeof(st));
    if (s)
        oc_store_stats(s, &st);
    OC_CHECK(s && bad == 0 && oc_store_ginex_capacity(s) > 0);
    OC_CHECK(st.trace_accesses == st.requested_rows && st.requested_rows > 0);
    OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] == st.belady_misses);
    OC_CHECK(st.belady_misses > 0 && st.belady_misses < st.lru_misses);
    oc_store_free(s);
    free(out);
    oc_free(ids);
    trace_free(&t);
    even_part_close(&part);
    fixture_free(&fx);
}

OC_TEST_MAIN()
