/*
 * test_store_diskgnn_files.c — the `diskgnn` strategy's files and failures:
 * a window file with a flipped byte or cut short ends in an error naming it
 * (also between epochs); earlier versions' windows and stale temporaries are
 * removed, runs sharing a plan directory read only their own (unnamed)
 * windows, a read-only dataset trains through a plan
 * directory elsewhere; allocation, write and read faults end in clean errors
 * with no leak and no file left behind; evaluation gathers, batches asked out
 * of plan order and a store freed mid-plan read the right rows and leave
 * nothing behind; a store over other ids (a partitioned dataset's part)
 * packs and serves the access map's rows.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → plan
 * → store → train).
 * Thread-safety: test code is single-threaded; the store runs its pipeline
 * and planner threads (the whole file runs under TSan).
 * Ownership: every store, pool, sampler, batch and fixture is freed by the
 * test that made it.
 */
#include <fcntl.h>
#include <sys/file.h>

#include "diskgnn_util.h"

/* ---- 6: damaged window files ------------------------------------------------------------------ */

enum damage { DAMAGE_HEADER, DAMAGE_ADDR, DAMAGE_TRUNCATE };

/*
 * Opens a reuse-samples store (one window file, kept for both epochs), damages
 * chunk k of it before the loader gets there (it reads at most three chunks
 * ahead of the trainer), and trains through: the error must name the file.
 */
static void damaged_window(const struct fixture *fx, const char *plan, enum damage how)
{
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_store_config c = dg_config(fx, NULL, plan, 0, 2, 1);
    char path[1400], name[1400];
    struct chunk_pos ch[64];
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (!s)
        return;
    window_path(plan, 0, path, name, sizeof(path));
    uint64_t n = window_chunks(path, fx->row_bytes, ch, 64), k = 6;
    OC_CHECK(n == (fx->n_train + fx->batch_size - 1) / fx->batch_size && n > k);
    if (n <= k) {
        oc_store_free(s);
        return;
    }
    const char *want = NULL;
    switch (how) {
    case DAMAGE_HEADER:
        flip_byte(path, ch[k].off + 8); /* the epoch field */
        want = "bad header";
        break;
    case DAMAGE_ADDR: /* the last address-table entry */
        flip_byte(path,
                  ch[k].off + OC_PLAN_CHUNK_HEADER + ch[k].rec_bytes + 8 * (ch[k].n_input - 1) + 1);
        want = "CRC";
        break;
    case DAMAGE_TRUNCATE:
        OC_CHECK(truncate(path, (off_t)(ch[k].off + 100)) == 0);
        want = "truncated";
        break;
    }
    struct drive d;
    OC_CHECK_ERR(drive_plan(fx, s, &c, NULL, &d, &err), OC_ERR_FORMAT, &err, name);
    OC_CHECK(strstr(err.msg, want) != NULL);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  at epoch %" PRIu64 " batch %" PRIu64 ": %s\n", d.fail_epoch,
                d.fail_batch, err.msg);
    /* every batch before the damaged one came through; the error at the latest there (the
       reused window's chunks are read in epoch 0's order: chunk k comes at its place; cut
       short, the file loses every chunk from k on, and the first of them read fails) */
    uint64_t order[64], at = 0;
    oc_sample_batch_order(fx->so.seed, 0, order, n);
    while (at < n && (how == DAMAGE_TRUNCATE ? order[at] < k : order[at] != k))
        at++;
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  the first damaged chunk is read at position %" PRIu64 "\n", at);
    OC_CHECK(d.fail_epoch == 0 && d.fail_batch <= at && d.fail_batch + 3 >= at);
    /* the error stays: the next call reports it again */
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    OC_CHECK(oc_store_load_batch(s, 0, d.fail_batch, &b, &err) != OC_OK);
    oc_sample_batch_deinit(&b);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(plan_files(plan, NULL) == 0);
}

OC_TEST(damaged_window_file_is_named)
{
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 3000, 24, OC_DTYPE_F16)) { /* 9 batches */
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    damaged_window(&fx, plan, DAMAGE_HEADER);
    damaged_window(&fx, plan, DAMAGE_ADDR);
    damaged_window(&fx, plan, DAMAGE_TRUNCATE);
    fixture_free(&fx);
}

OC_TEST(window_damaged_between_epochs_fails_training)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result res;
    struct oc_err err;
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    train_opts(&o);
    o.strategy = "diskgnn";
    o.reuse_samples = 1;
    o.mem_budget = 0;
    log.corrupt = 1;
    log.corrupt_epoch = 0;
    log.corrupt_chunk = 6; /* of 8: the loader is at most three chunks into epoch 1 */
    log.row_bytes = graph_row_bytes(64, OC_DTYPE_F32);
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(train(dir, &o, &log, &res, &err), OC_ERR_FORMAT, &err, "bad header");
    OC_CHECK(log.corrupted[0] && strstr(err.msg, log.corrupted) != NULL);
    OC_CHECK(res.epochs_run == 1);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(plan_files(log.plan, NULL) == 0);
}

/* Makes TMP/name/diskgnn (plan = TMP/name, dg = its diskgnn folder) and returns
 * the pid of a child that has exited: a pid of this host no process has. */
static pid_t plan_dir_and_dead_pid(const char *name, char *plan, size_t plan_n, char *dg,
                                   size_t dg_n)
{
    struct oc_err err;
    snprintf(plan, plan_n, "%s/%s", oc_test_tmpdir(), name);
    snprintf(dg, dg_n, "%s/diskgnn", plan);
    OC_CHECK_OK(oc_mkdir_p(dg, &err), &err);
    OC_CHECK_OK(oc_dir_mark(dg, &err), &err); /* as diskgnn marks the directory it makes */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return child;
}

/* Creates path holding "junk". */
static void junk(const char *path)
{
    struct oc_err err;
    OC_CHECK_OK(oc_write_file_atomic(path, "junk", 4, &err), &err);
}

/*
 * In a plan directory offcore marked: windows of earlier versions (which
 * named them) go, those keyed by content unless a run holds them locked,
 * those named by pid when the pid is gone; so do temporaries of runs that
 * are over. A fresh temporary of another host and a file not named like a
 * window stay. The store's own windows have no name at all.
 */
OC_TEST(earlier_versions_windows_and_stale_temporaries_are_removed)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    char plan[800], dg[900], p[8][1300];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    pid_t child = plan_dir_and_dead_pid("plan", plan, sizeof(plan), dg, sizeof(dg));
    snprintf(p[0], sizeof(p[0]), "%s/w0.0-0123456789abcdef.bin", dg);
    snprintf(p[1], sizeof(p[1]), "%s/w0-%ld.bin", dg, (long)child);
    snprintf(p[2], sizeof(p[2]), "%s/w1-%ld.rec", dg, (long)child);
    snprintf(p[3], sizeof(p[3]), "%s/w1.0.bin.tmp-%s-%ld-0123456789ab-3", dg, oc_tmp_host_id(),
             (long)child);
    snprintf(p[4], sizeof(p[4]), "%s/w2.0-fedcba9876543210.bin", dg); /* held by a run */
    snprintf(p[5], sizeof(p[5]), "%s/w1.rec.tmp-cccccccccccc-%ld-0123456789ab-0", dg, (long)child);
    snprintf(p[6], sizeof(p[6]), "%s/w0-1.bin", dg); /* pid 1 is alive */
    snprintf(p[7], sizeof(p[7]), "%s/w2v.bin", dg);  /* not a window's name */
    for (int i = 0; i < 8; i++)
        junk(p[i]);
    int held = open(p[4], O_RDONLY | O_CLOEXEC);
    OC_CHECK(held >= 0 && flock(held, LOCK_SH) == 0);
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 1, 0);
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    for (int i = 0; i < 8; i++)
        OC_CHECK(oc_path_exists(p[i]) == (i >= 4));
    OC_CHECK(plan_named_files(plan) == 4 && plan_windows(plan) == 1);
    oc_store_free(s);
    OC_CHECK(plan_named_files(plan) == 4 && plan_windows(plan) == 0);
    if (held >= 0)
        close(held);
    fixture_free(&fx);
}

/*
 * Three stores on one dataset and plan directory (two alike in two
 * containers, same pid 77, other host ids; a third with another seed): none
 * sees another's windows, which have no name, and each reads exactly train's
 * batches and the file's rows.
 */
OC_TEST(runs_sharing_a_plan_dir_read_their_own_windows)
{
    struct fixture fx;
    struct ref_sampler ref;
    struct oc_err err;
    char plan[800], dg[900];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    plan_dir_and_dead_pid("plan-concurrent", plan, sizeof(plan), dg, sizeof(dg));
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    struct oc_sample_opts so3 = fx.so;
    so3.seed += 1;
    struct oc_store_config c3 = c;
    c3.sample_opts = &so3;
    struct oc_store *a = NULL, *b = NULL, *s3 = NULL;
    oc_tmp_set_identity("aaaaaaaaaaaa", 77);
    OC_CHECK_OK(dg_open(&c, &a, &err), &err);
    oc_tmp_set_identity("bbbbbbbbbbbb", 77);
    OC_CHECK_OK(dg_open(&c, &b, &err), &err);
    oc_tmp_set_identity("dddddddddddd", 77);
    OC_CHECK_OK(dg_open(&c3, &s3, &err), &err);
    oc_tmp_set_identity(NULL, 0);
    /* window 0 of each, and the next ones their planners pack (whose temporaries have a name
       for an instant: named files are counted once the stores are gone) */
    OC_CHECK(plan_windows(plan) >= 3);
    if (!a || !b || !s3 || !ref_init(&ref, &fx)) {
        oc_store_free(a);
        oc_store_free(b);
        oc_store_free(s3);
        fixture_free(&fx);
        return;
    }
    struct drive d;
    OC_CHECK_OK(drive_plan(&fx, a, &c, &ref, &d, &err), &err);
    OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
    oc_store_free(a);
    OC_CHECK_OK(drive_plan(&fx, b, &c, &ref, &d, &err), &err);
    OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
    OC_CHECK_OK(drive_plan(&fx, s3, &c3, NULL, &d, &err), &err);
    OC_CHECK(d.n_batches == 2 * ref.nb);
    oc_store_free(b);
    oc_store_free(s3);
    OC_CHECK(plan_files(plan, NULL) == 0);
    ref_free(&ref);
    fixture_free(&fx);
}

/* Plan files go to --plan-dir: a read-only dataset directory trains, and stays untouched. */
OC_TEST(plan_dir_lets_a_read_only_dataset_train)
{
    char data[1024], plan[1100], own_plan[1100];
    struct oc_generate_opts g;
    struct oc_err err;
    snprintf(data, sizeof(data), "%s/readonly", oc_test_tmpdir());
    snprintf(plan, sizeof(plan), "%s/elsewhere", oc_test_tmpdir());
    snprintf(own_plan, sizeof(own_plan), "%s/plan", data);
    oc_generate_opts_default(&g);
    g.n_nodes = 4000;
    g.avg_degree = 6;
    g.feat_dim = 16;
    g.n_classes = 4;
    g.train_frac = 0.25;
    g.seed = 3;
    g.n_threads = 1;
    OC_CHECK_OK(oc_generate(&g, data, NULL, &err), &err);
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(data, &o, NULL, NULL, NULL, &ref, &err), &err);

    OC_CHECK(chmod(data, 0555) == 0);
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    log.plan = plan;
    o.strategy = "diskgnn";
    o.plan_dir = plan;
    OC_CHECK_OK(train_under(data, &o, log_epoch, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3 && log.dir_files[0] > 0); /* the windows were under --plan-dir */
    OC_CHECK(!oc_path_exists(own_plan));
    OC_CHECK(plan_files(plan, NULL) == 0);

    /* ginex's superbatches too. */
    o.strategy = "ginex";
    OC_CHECK_OK(train_under(data, &o, NULL, NULL, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(!oc_path_exists(own_plan));
    int n_ginex = 0;
    DIR *d = opendir(plan);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n_ginex += strncmp(e->d_name, "ginex-", 6) == 0;
    if (d)
        closedir(d);
    OC_CHECK(n_ginex == 1);
    o.strategy = "diskgnn";

    /* Without --plan-dir the error says what to do. */
    o.plan_dir = NULL;
    if (geteuid() != 0) {
        OC_CHECK_ERR(train_under(data, &o, NULL, NULL, &res, &err), OC_ERR_IO, &err, "--plan-dir");
        OC_CHECK(strstr(err.msg, "Permission denied") != NULL);
        OC_CHECK(!oc_path_exists(own_plan));
        OC_CHECK(chmod(data, 0755) == 0);
    } else {
        fprintf(stderr, "  running as root: chmod 0555 does not stop root's writes; the "
                        "permission part is skipped, the message is checked with DIR/plan a "
                        "file instead\n");
        OC_CHECK(chmod(data, 0755) == 0);
        OC_CHECK_OK(oc_write_file_atomic(own_plan, "not a directory", 15, &err), &err);
        int rc = train_under(data, &o, NULL, NULL, &res, &err);
        OC_CHECK(rc != OC_OK && strstr(err.msg, "--plan-dir") != NULL);
        unlink(own_plan);
    }
}

/* ---- 7: faults ------------------------------------------------------------------------------- */

/*
 * Fails the nth operation of `kind` (once, or from then on in persistent
 * mode, where n is sampled) for n = 1, 2, ... until a run (open, both
 * epochs of fresh samples, free) no longer reaches it; every run that did
 * must end with `want` (and a message containing one of names, if given),
 * no leak and no file under the plan directory. Returns the n that passed.
 */
static uint64_t fault_loop_mode(int mode, const struct fixture *fx, const char *plan,
                                uint64_t mem_bytes, enum oc_fault_kind kind, int sys_errno,
                                int reuse, int want, const char *const *names, uint64_t max)
{
    struct oc_err err;
    struct oc_store_config c = dg_config(fx, NULL, plan, 0, 2, reuse);
    c.mem_bytes = mem_bytes;
    uint64_t base = oc_mem_n_live(), nth = 1;
    int reported = 0;
    for (; nth < max; nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0)) {
        struct oc_store *s = NULL;
        struct drive d;
        oc_err_clear(&err);
        fault_arm_mode(mode, kind, nth, sys_errno);
        int rc = dg_open(&c, &s, &err);
        if (rc == OC_OK)
            rc = drive_plan(fx, s, &c, NULL, &d, &err);
        oc_store_free(s); /* joins the threads: the fault has fired or not */
        int fired = oc_fault_fired(kind);
        oc_fault_disarm_all();
        int ok = fired ? rc == want : rc == OC_OK;
        if (ok && fired && names) {
            int named = 0;
            for (const char *const *p = names; *p; p++)
                named |= strstr(err.msg, *p) != NULL;
            ok = named;
        }
        OC_CHECK(ok);
        if (!ok && reported++ < 3)
            fprintf(stderr, "  %s fault %d at op %" PRIu64 " (%s): %s (%s)\n",
                    fault_mode_name(mode), (int)kind, nth, fired ? "fired" : "not fired",
                    oc_status_str(rc), err.msg);
        OC_CHECK(oc_mem_n_live() == base);
        int left = plan_files(plan, NULL);
        OC_CHECK(left == 0);
        if (left && reported++ < 3)
            fprintf(stderr, "  fault %d at op %" PRIu64 ": %d files left\n", (int)kind, nth, left);
        if (!fired)
            break;
    }
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  %s fault %d (errno %d, reuse %d): a clean run at op %" PRIu64 "\n",
                fault_mode_name(mode), (int)kind, sys_errno, reuse, nth);
    return nth;
}

/* fault_loop_mode one-shot (every n; returns its n) and persistent (sampled n). */
static uint64_t fault_loop(const struct fixture *fx, const char *plan, uint64_t mem_bytes,
                           enum oc_fault_kind kind, int sys_errno, int reuse, int want,
                           const char *const *names, uint64_t max)
{
    fault_loop_mode(FAULT_PERSISTENT, fx, plan, mem_bytes, kind, sys_errno, reuse, want, names,
                    max);
    return fault_loop_mode(FAULT_ONESHOT, fx, plan, mem_bytes, kind, sys_errno, reuse, want, names,
                           max);
}

OC_TEST(allocation_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F16)) { /* 5 batches */
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        uint64_t n =
            fault_loop(&fx, plan, 0, OC_FAULT_ALLOC, ENOMEM, reuse, OC_ERR_NOMEM, NULL, 5000);
        OC_CHECK(n > 20 && n < 5000);
    }
    fixture_free(&fx);
}

OC_TEST(write_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    const char *const names[] = {"/diskgnn/w", NULL};
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        uint64_t n =
            fault_loop(&fx, plan, 0, OC_FAULT_WRITE, ENOSPC, reuse, OC_ERR_NOSPC, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
        n = fault_loop(&fx, plan, 0, OC_FAULT_WRITE, EIO, reuse, OC_ERR_IO, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
    }
    fixture_free(&fx);
}

OC_TEST(read_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    const char *const names[] = {"features.npy", "/diskgnn/w", NULL};
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    /* a small cache: the windows hold packed rows, read back while training */
    for (int reuse = 0; reuse < 2; reuse++) {
        /* each mode's smallest budget (reuse packs a whole epoch, fresh samples may not) */
        uint64_t mem =
            dg_min_mem(dg_config(&fx, NULL, plan, 0, 2, reuse)) + 100 * (fx.row_bytes + 8);
        uint64_t n = fault_loop(&fx, plan, mem, OC_FAULT_READ, EIO, reuse, OC_ERR_IO, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
        /* a short read (premature end of file) is a truncated file */
        n = fault_loop(&fx, plan, mem, OC_FAULT_READ, 0, reuse, OC_ERR_FORMAT, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
    }
    fixture_free(&fx);
}

/* ---- 8, 9: evaluation gathers, batches out of plan order -------------------------------------- */

static void eval_gathers(enum oc_dtype dtype, uint32_t dim, int with_plan)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_pool *pool = NULL;
    char plan[800];
    if (!fixture_init(&fx, 2000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    struct oc_store_config c = dg_config(&fx, pool, plan, 0, 2, 0);
    if (with_plan) { /* a cache of about 300 rows: evaluation hits and misses */
        uint64_t min = dg_min_mem(c);
        c.mem_bytes = min + 300 * (fx.row_bytes + 8);
    } else {
        c.sample_opts = NULL;
    }
    struct oc_store *s = NULL, *m = fixture_open("memory", &c);
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (s && m) {
        float *a = malloc(3000 * fx.dim * sizeof(float)),
              *b = malloc(3000 * fx.dim * sizeof(float));
        uint64_t ids[3000];
        struct oc_rng rng;
        oc_rng_init(&rng, 5, 0, 0, 0);
        for (int round = 0; round < 6; round++) {
            uint64_t n = 1 + oc_rng_below(&rng, 3000);
            for (uint64_t k = 0; k < n; k++) /* repeats: ids from a range smaller than n */
                ids[k] = round % 2 ? oc_rng_below(&rng, fx.n_nodes)
                                   : fx.n_nodes - 1 - oc_rng_below(&rng, 1 + n / 3);
            memset(a, 0xA5, n * fx.dim * sizeof(float));
            OC_CHECK_OK(oc_store_gather(s, ids, n, a, &err), &err);
            OC_CHECK_OK(oc_store_gather(m, ids, n, b, &err), &err);
            OC_CHECK(memcmp(a, b, n * fx.dim * sizeof(float)) == 0);
            OC_CHECK(fixture_bad_rows(&fx, ids, n, a) == 0);
        }
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] > 0);
        OC_CHECK(with_plan ? st.tier_rows[OC_STORE_TIER_CPU] > 0
                           : st.tier_rows[OC_STORE_TIER_CPU] == 0);
        /* An id past the end is an argument error, in a gather or a batch. */
        ids[0] = 3;
        ids[1] = fx.n_nodes;
        OC_CHECK_ERR(oc_store_gather(s, ids, 2, a, &err), OC_ERR_ARG, &err, "out of range");
        OC_CHECK_ERR(oc_store_gather_batch(s, 0, 0, ids, 2, a, &err), OC_ERR_ARG, &err,
                     "out of range");
        if (!with_plan) {
            struct oc_sample_batch bt;
            oc_sample_batch_init(&bt);
            OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &bt, &err), OC_ERR_ARG, &err, NULL);
            oc_sample_batch_deinit(&bt);
        } else { /* the plan was not disturbed: it still runs from batch 0 */
            struct ref_sampler ref;
            struct drive d;
            if (ref_init(&ref, &fx)) {
                OC_CHECK_OK(drive_plan(&fx, s, &c, &ref, &d, &err), &err);
                OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
                ref_free(&ref);
            }
        }
        free(a);
        free(b);
    }
    oc_store_free(s);
    oc_store_free(m);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(evaluation_gathers_match_memory)
{
    eval_gathers(OC_DTYPE_F32, 12, 1);
    eval_gathers(OC_DTYPE_F16, 37, 1);
    eval_gathers(OC_DTYPE_F16, 300, 1); /* rows across pages */
    eval_gathers(OC_DTYPE_F32, 12, 0);  /* no plan: every row from the file */
}

OC_TEST(batches_out_of_plan_order)
{
    struct fixture fx;
    struct oc_err err;
    struct ref_sampler ref;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    c.mem_bytes = dg_min_mem(c) + 200 * (fx.row_bytes + 8);
    struct oc_store *s = NULL;
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (!s || !ref_init(&ref, &fx)) {
        oc_store_free(s);
        fixture_free(&fx);
        return;
    }
    uint64_t nb = ref.nb;
    OC_CHECK(oc_store_caps(s)->batches);
    float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
    uint64_t *ids = malloc(fx.n_nodes * sizeof(uint64_t));
    struct oc_sample_batch b;
    struct oc_store_stats st0, st1;
    oc_sample_batch_init(&b);

    /* Not the plan's next batch: another batch, another epoch, past the plan. */
    OC_CHECK_ERR(oc_store_load_batch(s, 0, 1, &b, &err), OC_ERR_ARG, &err, "plan's next batch");
    OC_CHECK_ERR(oc_store_load_batch(s, 1, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK_ERR(oc_store_load_batch(s, 2, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    /* Batch 0 as planned, handed over once only. */
    OC_CHECK_OK(oc_store_load_batch(s, 0, 0, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, 0, 0)));
    OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    /* Batch 3 gathered before its turn: read as asked, the plan untouched. */
    const struct oc_sample_batch *r3 = ref_batch(&ref, &fx, 0, 3);
    uint64_t n3 = r3->n_input;
    memcpy(ids, r3->input_ids, n3 * sizeof(uint64_t));
    oc_store_stats(s, &st0);
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 3, ids, n3, out, &err), &err);
    OC_CHECK(fixture_bad_rows(&fx, ids, n3, out) == 0);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_PACKED] == st0.tier_rows[OC_STORE_TIER_PACKED]);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_DISK] > st0.tier_rows[OC_STORE_TIER_DISK]);
    /* Batch 0 from the plan. */
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, b.input_ids, b.n_input, out, &err), &err);
    OC_CHECK(fixture_bad_rows(&fx, b.input_ids, b.n_input, out) == 0);
    oc_store_stats(s, &st0);
    OC_CHECK(st0.tier_rows[OC_STORE_TIER_DISK] == st1.tier_rows[OC_STORE_TIER_DISK]);
    OC_CHECK(st0.tier_rows[OC_STORE_TIER_PACKED] > st1.tier_rows[OC_STORE_TIER_PACKED]);
    /* Batch 1 gathered without load_batch, with the planned ids: from the plan. */
    const struct oc_sample_batch *r1 = ref_batch(&ref, &fx, 0, 1);
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 1, r1->input_ids, r1->n_input, out, &err), &err);
    OC_CHECK(fixture_bad_rows(&fx, r1->input_ids, r1->n_input, out) == 0);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_DISK] == st0.tier_rows[OC_STORE_TIER_DISK]);
    /* Batch 2 loaded, but gathered with batch 3's ids: the rows asked for, from the file. */
    OC_CHECK_OK(oc_store_load_batch(s, 0, 2, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, 0, 2)));
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 2, ids, n3, out, &err), &err);
    OC_CHECK(fixture_bad_rows(&fx, ids, n3, out) == 0);
    /* The plan goes on at batch 3, through the second epoch. */
    for (uint64_t e = 0; e < 2; e++)
        for (uint64_t i = e ? 0 : 3; i < nb; i++) {
            OC_CHECK_OK(oc_store_load_batch(s, e, i, &b, &err), &err);
            OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, e, i)));
            OC_CHECK_OK(oc_store_gather_batch(s, e, i, b.input_ids, b.n_input, out, &err), &err);
            OC_CHECK(fixture_bad_rows(&fx, b.input_ids, b.n_input, out) == 0);
        }
    /* Past the plan: no batch to load, gathers still served. */
    OC_CHECK_ERR(oc_store_load_batch(s, 2, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK_OK(oc_store_gather_batch(s, 2, 0, ids, n3, out, &err), &err);
    OC_CHECK(fixture_bad_rows(&fx, ids, n3, out) == 0);
    oc_sample_batch_deinit(&b);
    free(out);
    free(ids);
    ref_free(&ref);
    oc_store_free(s);
    OC_CHECK(plan_files(plan, NULL) == 0);
    fixture_free(&fx);
}

OC_TEST(freed_mid_plan)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    uint64_t live = oc_mem_n_live();
    /* freed right after open, after a batch, and with the planner packing ahead */
    for (int k = 0; k < 6; k++) {
        struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 4, k % 3 == 2);
        struct oc_store *s = NULL;
        OC_CHECK_OK(dg_open(&c, &s, &err), &err);
        if (s && k % 2) {
            struct oc_sample_batch b;
            float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
            oc_sample_batch_init(&b);
            uint64_t order[64], nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size;
            oc_sample_batch_order(fx.so.seed, 0, order, nb < 64 ? nb : 64);
            uint64_t b0 = c.reuse_samples ? order[0] : 0; /* the plan's first batch */
            OC_CHECK_OK(oc_store_load_batch(s, 0, b0, &b, &err), &err);
            OC_CHECK_OK(oc_store_gather_batch(s, 0, b0, b.input_ids, b.n_input, out, &err), &err);
            oc_sample_batch_deinit(&b);
            free(out);
        }
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0);
    }
    fixture_free(&fx);
}

/* ---- a store over other ids than the plan's (oc_store_config.accesses) ---------------- */

/*
 * A partitioned dataset's part stand-in (store_fixture.h's even_part): the
 * plan's batches sampled on the whole graph, each packed as the rows the
 * access map asks of the part (every third batch none), streamed or laid
 * out (--disk-budget); every planned batch gathered with those ids, in plan
 * order, through two epochs (the second packed by the planner stage) gets
 * the file's rows, all from the chunks and the CPU cache; the store hands
 * out no batch.
 */
static void over_other_ids(int laid_out)
{
    struct fixture fx;
    struct oc_err err;
    struct ref_sampler ref;
    struct even_part part;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32) || !even_part_open(&part, &fx, 3) ||
        !ref_init(&ref, &fx)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan-%d", oc_test_tmpdir(), laid_out);
    struct oc_store_config c = even_part_config(&fx, &part);
    c.first_epoch = 0;
    c.n_epochs = 2;
    c.plan_dir = plan;
    if (laid_out)
        fixture_opt(&c, "disk-budget", 1000.0);
    c.mem_bytes = dg_min_mem(c) + 150 * (fx.row_bytes + 8); /* most of the part's rows packed */
    struct oc_store *s = NULL;
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
    uint64_t *ids = NULL, cap = 0, n = 0, bad = 0, empty = 0;
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    if (s) { /* its chunks hold the map's ids, not a batch */
        OC_CHECK(!oc_store_caps(s)->batches);
        OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &b, &err), OC_ERR_UNSUPPORTED, &err, NULL);
    }
    for (uint64_t e = 0; s && e < 2; e++)
        for (uint64_t i = 0; i < ref.nb; i++) {
            OC_CHECK_OK(even_accesses(&part, ref_batch(&ref, &fx, e, i), &ids, &cap, &n, &err),
                        &err);
            OC_CHECK_OK(oc_store_gather_batch(s, e, i, ids, n, out, &err), &err);
            bad += even_part_bad_rows(&fx, ids, n, out);
            empty += n == 0;
        }
    struct oc_store_stats st;
    memset(&st, 0, sizeof(st));
    if (s)
        oc_store_stats(s, &st);
    OC_CHECK(s && bad == 0 && empty == 2 * ((ref.nb + 1) / 3));
    OC_CHECK(st.requested_rows > 0 && st.tier_rows[OC_STORE_TIER_DISK] == 0); /* as planned */
    OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] > 0 &&
             st.tier_rows[OC_STORE_TIER_PACKED] + st.tier_rows[OC_STORE_TIER_DISK_CACHE] > 0);
    OC_CHECK(st.requested_rows == st.tier_rows[OC_STORE_TIER_CPU] +
                                      st.tier_rows[OC_STORE_TIER_PACKED] +
                                      st.tier_rows[OC_STORE_TIER_DISK_CACHE]);
    /* evaluation (off the plan) by local rows too */
    for (uint64_t k = 0; k < 100; k++)
        ids[k] = (k * 37) % part.n_local;
    if (s)
        OC_CHECK_OK(oc_store_gather(s, ids, 100, out, &err), &err);
    OC_CHECK(even_part_bad_rows(&fx, ids, 100, out) == 0);
    oc_store_free(s);
    OC_CHECK(plan_files(plan, NULL) == 0);
    oc_sample_batch_deinit(&b);
    oc_free(ids);
    free(out);
    ref_free(&ref);
    even_part_close(&part);
    fixture_free(&fx);
}

OC_TEST(store_over_other_ids_packs_the_access_map)
{
    over_other_ids(0);
    over_other_ids(1);
}

OC_TEST_MAIN()
