/*
 * test_store_diskgnn.c — the `diskgnn` strategy (offline-sampled windows
 * packed into per-batch chunks and segment caches, 4-stage pipeline):
 * training with fresh samples and with --reuse-samples ends with `memory`'s
 * weights (in-memory and disk topology, any row size, f32 and f16, windows
 * shorter than an epoch); a packed window reads little more than it needs;
 * --disk-budget bounds the files on disk and forces segment caches; budgets
 * too small fail naming the option or the store; the CPU cache gives memory
 * back to a request past the budget and takes it back. (Damaged and stale window
 * files, faults, evaluation gathers and out-of-order batches:
 * test_store_diskgnn_files.c.)
 *
 * Place in the data flow: tests of store (generate → dataset → sample → plan
 * → store → train).
 * Thread-safety: test code is single-threaded; the store runs its pipeline
 * and planner threads (the whole file runs under TSan).
 * Ownership: every store, pool, sampler, batch and fixture is freed by the
 * test that made it.
 */
#include "diskgnn_util.h"

/* ---- 1, 2: training equals memory ----------------------------------------------------------- */

OC_TEST(fresh_samples_train_like_memory)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    for (int topo = 0; topo < 2; topo++) {
        for (int b = 0; b < 2; b++) {
            struct epoch_log log;
            memset(&log, 0, sizeof(log));
            train_opts(&o);
            o.strategy = "diskgnn";
            o.topology_disk = topo;
            o.topo_cache_bytes = topo ? 256u << 10 : 0; /* a part of the lists */
            o.mem_budget = b ? 64 * MIB : 0;
            uint64_t live = oc_mem_n_live();
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(res.epochs_run == 3 && log.n == 3);
            OC_CHECK(oc_mem_n_live() == live);
            OC_CHECK(plan_files(log.plan, NULL) == 0); /* the windows went with the store */
            for (uint32_t e = 0; e < log.n; e++) {
                const struct oc_store_stats *st = &log.st[e];
                OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0); /* every row as planned */
                OC_CHECK(st->graph_read_bytes > 0);
                OC_CHECK(st->requested_rows == st->tier_rows[OC_STORE_TIER_CPU] +
                                                   st->tier_rows[OC_STORE_TIER_PACKED] +
                                                   st->tier_rows[OC_STORE_TIER_DISK_CACHE]);
            }
            log_verbose(topo ? "fresh, disk topology" : "fresh", &log);
        }
    }
}

OC_TEST(reuse_samples_train_like_memory_reusing)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result fresh, ref, res;
    struct oc_err err;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &fresh, &err), &err);
    o.reuse_samples = 1;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    OC_CHECK(strcmp(ref.weights_sha256, fresh.weights_sha256) != 0); /* training changes */
    for (int topo = 0; topo < 2; topo++) {
        for (int b = 0; b < 2; b++) {
            struct epoch_log log;
            memset(&log, 0, sizeof(log));
            train_opts(&o);
            o.reuse_samples = 1;
            o.strategy = "diskgnn";
            o.topology_disk = topo;
            o.mem_budget = b ? 64 * MIB : 0;
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(log.n == 3);
            /* one window, packed once, read every epoch */
            for (uint32_t e = 0; e < log.n; e++) {
                OC_CHECK(log.st[e].plan_file_bytes == log.st[0].plan_file_bytes);
                OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_DISK] == 0);
                OC_CHECK(log.st[e].plan_pack_us == log.st[0].plan_pack_us); /* a total */
                OC_CHECK(e == 0 || log.st[e].requested_rows == log.st[0].requested_rows);
            }
            OC_CHECK(plan_files(log.plan, NULL) == 0);
        }
    }
    /* Strategies that sample each epoch ahead of training refuse it. */
    const char *refuse[] = {"ginex", "gnndrive", "helios"};
    for (int i = 0; i < 3; i++) {
        train_opts(&o);
        o.reuse_samples = 1;
        o.strategy = refuse[i];
        o.mem_budget = 64 * MIB;
        OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                     "--reuse-samples"); /* a bad option: the CLI exits 2 */
        OC_CHECK(strstr(err.msg, refuse[i]) != NULL);
    }
}

/* ---- 3, 5: amplification, row sizes, memory budget ----------------------------------------- */

OC_TEST(packed_windows_read_what_they_need)
{
    const char *dir = train_graph(256, OC_DTYPE_F32); /* 1 KiB rows */
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
    OC_CHECK(min > 0);
    if (!min)
        return;
    /* Below the smallest budget it is diskgnn's own buffers that do not fit. */
    OC_CHECK(strstr(msg, "store diskgnn") != NULL && strstr(msg, "needs at least") != NULL);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  smallest budget %" PRIu64 " bytes; below: %s\n", min, msg);
    /* 256 KiB over it caches about 250 of the 4000 rows: most accesses are packed */
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    o.strategy = "diskgnn";
    o.mem_budget = min + (256u << 10);
    OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3);
    for (uint32_t e = 0; e < log.n; e++) {
        const struct oc_store_stats *st = &log.st[e];
        OC_CHECK(st->tier_rows[OC_STORE_TIER_PACKED] > st->tier_rows[OC_STORE_TIER_CPU]);
        OC_CHECK(st->tier_rows[OC_STORE_TIER_CPU] > 0);
        OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK_CACHE] == 0); /* s = 1: nothing shared */
        OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0);
        OC_CHECK(st->requested_disk_bytes ==
                 st->tier_rows[OC_STORE_TIER_PACKED] * graph_row_bytes(256, OC_DTYPE_F32));
        OC_CHECK(st->read_bytes >= st->requested_disk_bytes);
        OC_CHECK(oc_store_stats_amplification(st) <= 1.05);
        OC_CHECK(st->n_reads >= 8); /* a read per chunk at least */
        OC_CHECK(st->held_bytes <= o.mem_budget);
    }
    log_verbose("1 KiB rows", &log);
}

OC_TEST(smallest_budget_trains_every_epoch)
{
    /* The budget found with one epoch also holds every later window (fresh samples: the
       planner's, and batches larger than the first window's) */
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    for (int reuse = 0; reuse < 2; reuse++) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        /* fresh samples: windows of a whole epoch; reuse: windows sized from the budget */
        if (!reuse)
            OC_CHECK_OK(oc_train_opts_set(&o, "window", 1000000, &err), &err);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min;
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        for (uint32_t e = 0; e < log.n; e++)
            OC_CHECK(log.st[e].held_bytes <= o.mem_budget);
        log_verbose(reuse ? "smallest budget, reuse" : "smallest budget, fresh", &log);
    }
}

/*
 * Trains `memory` (reuse: with --reuse-samples) on dir, then diskgnn in
 * windows of `window` batches into *log; 1 if the weights are equal.
 */
static int train_in_windows(const char *dir, int reuse, uint64_t window, struct oc_train_opts *o,
                            struct epoch_log *log)
{
    struct oc_train_result ref, res;
    struct oc_err err;
    train_opts(o);
    o->reuse_samples = reuse;
    OC_CHECK_OK(oc_train_run(dir, o, NULL, NULL, NULL, &ref, &err), &err);
    o->strategy = "diskgnn";
    OC_CHECK_OK(oc_train_opts_set(o, "window", (double)window, &err), &err);
    memset(log, 0, sizeof(*log));
    OC_CHECK_OK(train(dir, o, log, &res, &err), &err);
    return strcmp(res.weights_sha256, ref.weights_sha256) == 0;
}

/*
 * Fresh samples in windows shorter than an epoch: with --window 3 (of 8
 * batches per epoch) training equals `memory` and at most two windows exist
 * at once; with the window derived from
 * the budget, the smallest budget diskgnn accepts is below what a whole
 * epoch's plan needs, and training there equals `memory` too.
 */
OC_TEST(windows_shorter_than_an_epoch_train_like_memory)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_err err;
    struct epoch_log log;
    OC_CHECK(train_in_windows(dir, 0, 3, &o, &log));
    OC_CHECK(log.n == 3);
    uint64_t feat_bytes = 4000 * graph_row_bytes(256, OC_DTYPE_F32), plan_read = 0;
    for (uint32_t e = 0; e < log.n; e++) {
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr, "  epoch %u: %d plan files, %" PRIu64 " rows from disk\n", e,
                    log.dir_files[e], log.st[e].tier_rows[OC_STORE_TIER_DISK]);
        /* the window read and the next one packed (and, for an instant, a temporary's
           name): two windows at most */
        OC_CHECK(log.dir_files[e] <= 3 && log.st[e].tier_rows[OC_STORE_TIER_DISK] == 0);
        OC_CHECK(e == 0 || log.st[e].plan_read_bytes > 0);
        plan_read += log.st[e].plan_read_bytes;
    }
    /* packing scans the feature file in partitions: each of the 9 windows (3 per epoch of 8
       batches) reads it once at most, not row by row (a page per 1 KiB row would be about
       four times that). Summed over the run: which epoch a background pack falls in depends
       on how far the planner runs ahead of a slow trainer (TSan) */
    OC_CHECK(plan_read <= 9 * (feat_bytes + feat_bytes / 16));
    OC_CHECK(plan_files(log.plan, NULL) == 0);

    /* Store level: the smallest budget with windows derived from it is below what a whole
       epoch's plan needs, and a store opened there hands over train's batches and rows (an
       epoch long enough that its plan outweighs the readers' fixed buffers). */
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 16000, 16, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan-windows", oc_test_tmpdir());
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    fixture_opt(&c, "disk-budget", 1000.0); /* laid out window by window (not streamed) */
    fixture_opt(&c, "window", 1000000);     /* clamped to the epoch */
    uint64_t min_whole = dg_min_mem(c);
    fixture_opt(&c, "window", 0);
    uint64_t min_derived = dg_min_mem(c);
    /* streamed (no disk budget): windows of the whole epoch at any budget, below what laying
       out a whole epoch at once needs */
    fixture_opt(&c, "disk-budget", 0);
    uint64_t min_streamed = dg_min_mem(c);
    OC_CHECK(min_streamed > 0 && min_streamed < min_whole);
    fixture_opt(&c, "disk-budget", 1000.0);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr,
                "  smallest store budget: whole-epoch windows %" PRIu64 ", derived %" PRIu64
                " (%" PRIu64 " batches per epoch)\n",
                min_whole, min_derived, ((fx.n_train + fx.batch_size - 1) / fx.batch_size));
    OC_CHECK(((fx.n_train + fx.batch_size - 1) / fx.batch_size) >= 8 && min_derived > 0 &&
             min_derived < min_whole);
    struct ref_sampler rs;
    struct oc_store *st = NULL;
    struct drive d;
    c.mem_bytes = min_derived;
    if (ref_init(&rs, &fx) && dg_open(&c, &st, &err) == OC_OK) {
        OC_CHECK_OK(drive_plan(&fx, st, &c, &rs, &d, &err), &err);
        OC_CHECK(d.bad == 0 && d.n_batches == 2 * rs.nb);
    }
    oc_store_free(st);
    ref_free(&rs);
    fixture_free(&fx);
}

/*
 * Reuse in windows shorter than an epoch (--window 3 of 8 batches): every
 * window of epoch 0 is packed at open and kept (three files through the
 * run, nothing packed after epoch 0), each epoch reads epoch 0's batches in
 * its own order across them, and training equals `memory` with
 * --reuse-samples; the plan directory is empty afterwards.
 */
OC_TEST(reuse_in_windows_replays_every_window)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct epoch_log log;
    OC_CHECK(train_in_windows(dir, 1, 3, &o, &log));
    OC_CHECK(log.n == 3);
    for (uint32_t e = 0; e < log.n; e++) {
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr, "  epoch %u: %d plan files, %" PRIu64 " plan bytes read\n", e,
                    log.dir_files[e], log.st[e].plan_read_bytes);
        OC_CHECK(log.dir_files[e] == 3);
        OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_DISK] == 0);
        OC_CHECK(e == 0 || log.st[e].plan_read_bytes == 0); /* packed once, at open */
    }
    OC_CHECK(plan_files(log.plan, NULL) == 0);
    /* the same run with whole-epoch windows trains the same weights */
    OC_CHECK(train_in_windows(dir, 1, 1000000, &o, &log));
    OC_CHECK(log.n == 3 && log.dir_files[0] == 1);
}

/* Trains (37 x dtype rows) with a small cache, then with a disk budget forcing segments. */
static void odd_rows(enum oc_dtype dtype, int fresh_too)
{
    const char *dir = train_graph(37, dtype);
    if (!dir)
        return;
    uint64_t rb = graph_row_bytes(37, dtype), feat_bytes = 4000 * rb;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    uint64_t w = 0, rec = 0; /* the reused window at s = 1, and its records */
    for (int reuse = 1; reuse >= !fresh_too; reuse--) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        /* windows of a whole epoch (a window sized from this small a budget would fit the
           disk budget below without segments), laid out window by window (a disk budget, of
           a thousand times the features: s = 1), as every run below */
        OC_CHECK_OK(oc_train_opts_set(&o, "window", 1000000, &err), &err);
        set_disk_budget(&o, 1000.0);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min + (32u << 10); /* a few hundred rows cached */
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        for (uint32_t e = 0; e < log.n; e++) {
            OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_PACKED] > 0);
            OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_DISK_CACHE] == 0);
        }
        if (reuse) { /* fresh windows are packed between epochs: the counter may be 0 then */
            w = log.st[0].plan_file_bytes;
            rec = epoch_record_bytes(&log.st[0], 8);
            OC_CHECK(w > 0);
        }
        /* ... but never was: the peak holds at least one window */
        OC_CHECK(log.st[0].plan_file_peak_bytes >= log.st[0].plan_file_bytes);
        OC_CHECK(log.st[0].plan_file_peak_bytes > 0);
        log_verbose(dtype == OC_DTYPE_F16 ? "37 x f16" : "37 x f32", &log);
        /* A window 0.8 of the s = 1 size (records apart): segments, disk-cache rows. */
        double window = (double)rec + 0.8 * (double)w;
        memset(&log, 0, sizeof(log));
        set_disk_budget(&o, (reuse ? 1.0 : 2.0) * window / (double)feat_bytes);
        uint64_t limit = (uint64_t)(oc_train_opts_get(&o, "disk-budget", 0.0) * (double)feat_bytes);
        /* segment caches cost the planner more per access: the smallest budget again */
        o.mem_budget = train_min_budget(dir, o, msg, sizeof(msg)) + (32u << 10);
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        uint64_t dc = 0;
        for (uint32_t e = 0; e < log.n; e++) {
            dc += log.st[e].tier_rows[OC_STORE_TIER_DISK_CACHE];
            OC_CHECK(log.st[e].plan_file_bytes <= limit && log.dir_bytes[e] <= limit);
            OC_CHECK(log.st[e].plan_file_peak_bytes > 0 && log.st[e].plan_file_peak_bytes <= limit);
        }
        OC_CHECK(dc > 0);
        log_verbose(dtype == OC_DTYPE_F16 ? "37 x f16, disk budget" : "37 x f32, disk budget",
                    &log);
    }
}

OC_TEST(odd_row_sizes_train_like_memory)
{
    odd_rows(OC_DTYPE_F32, 1); /* 148-byte rows, fresh samples and reused */
    odd_rows(OC_DTYPE_F16, 0); /* 74-byte rows, reused (the f16 path; fewer runs) */
}

OC_TEST(memory_budget_too_small_names_the_store)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, reuse);
        uint64_t live = oc_mem_n_live();
        c.mem_bytes = 64u << 10;
        OC_CHECK_ERR(dg_open(&c, &s, &err), OC_ERR_BUDGET, &err, "store diskgnn");
        OC_CHECK(strstr(err.msg, "needs at least") != NULL);
        OC_CHECK(s == NULL && oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0); /* the sampled records are gone */
        uint64_t min = dg_min_mem(c);
        OC_CHECK(min > 0);
        c.mem_bytes = min - 4096;
        OC_CHECK_ERR(dg_open(&c, &s, &err), OC_ERR_BUDGET, &err, "store diskgnn");
        /* The smallest budget caches (about) no row and still reads every row right. */
        struct ref_sampler ref;
        c.mem_bytes = min;
        OC_CHECK_OK(dg_open(&c, &s, &err), &err);
        if (s && ref_init(&ref, &fx)) {
            struct drive d;
            OC_CHECK_OK(drive_plan(&fx, s, &c, &ref, &d, &err), &err);
            OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
            struct oc_store_stats st;
            oc_store_stats(s, &st);
            OC_CHECK(st.held_bytes <= c.mem_bytes);
            /* (about) no row: the 4 KiB the search resolves to hold a few dozen of the
               hottest rows, which serve a share of the accesses well below a fifth */
            OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] < st.requested_rows / 5);
            ref_free(&ref);
        }
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0);
    }
    fixture_free(&fx);
}

/* ---- 4: disk budget ------------------------------------------------------------------------ */

OC_TEST(disk_budget_bounds_the_files_and_forces_segments)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    uint64_t feat_bytes = 4000 * graph_row_bytes(256, OC_DTYPE_F32);
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    uint64_t w = 0, rec = 0; /* the reused window at s = 1, and its records */
    for (int reuse = 1; reuse >= 0; reuse--) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        /* windows of a whole epoch (a window sized from this small a budget would fit the
           disk budget below without segments), laid out window by window (a disk budget, of
           a thousand times the features: s = 1), as every run below */
        OC_CHECK_OK(oc_train_opts_set(&o, "window", 1000000, &err), &err);
        set_disk_budget(&o, 1000.0);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        /* About a thousand rows cached; the window at s = 1: */
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min + MIB;
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        if (reuse) { /* fresh windows are packed between epochs: the counter may be 0 then */
            w = log.st[0].plan_file_bytes;
            rec = epoch_record_bytes(&log.st[0], 8);
        }
        log_verbose(reuse ? "no disk budget, reuse" : "no disk budget, fresh", &log);
        OC_CHECK(w > 0);
        /* 1x features for one window (reuse) or 2x for two; then one 0.7 of the s = 1 size */
        double budgets[2] = {reuse ? 1.0 : 2.0, (reuse ? 1.0 : 2.0) *
                                                    ((double)rec + 0.7 * (double)w) /
                                                    (double)feat_bytes};
        for (int k = 0; k < 2; k++) {
            memset(&log, 0, sizeof(log));
            set_disk_budget(&o, budgets[k]);
            uint64_t limit =
                (uint64_t)(oc_train_opts_get(&o, "disk-budget", 0.0) * (double)feat_bytes);
            int forced = k == 1 || (reuse && w + rec > limit);
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(log.n == 3);
            for (uint32_t e = 0; e < log.n; e++) {
                const struct oc_store_stats *st = &log.st[e];
                OC_CHECK(st->plan_file_bytes <= limit && log.dir_bytes[e] <= limit);
                OC_CHECK(!reuse || (st->plan_file_bytes > 0 && log.dir_files[e] == 1));
                OC_CHECK(forced ? st->tier_rows[OC_STORE_TIER_DISK_CACHE] > 0
                                : st->tier_rows[OC_STORE_TIER_DISK_CACHE] == 0 || !reuse);
                OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0);
            }
            OC_CHECK(plan_files(log.plan, NULL) == 0);
            if (getenv("OC_TEST_VERBOSE"))
                fprintf(stderr, "  disk budget %.3f (%" PRIu64 " bytes, s = 1 needs %" PRIu64 ")\n",
                        oc_train_opts_get(&o, "disk-budget", 0.0), limit, w + rec);
            log_verbose(reuse ? "disk budget, reuse" : "disk budget, fresh", &log);
        }
        /* Too small for any segment length: fails at start naming the option. */
        memset(&log, 0, sizeof(log));
        set_disk_budget(&o, 0.001);
        OC_CHECK_ERR(train(dir, &o, &log, &res, &err), OC_ERR_BUDGET, &err, "--disk-budget");
        OC_CHECK(res.epochs_run == 0);
        OC_CHECK(plan_files(log.plan, NULL) == 0);
        set_disk_budget(&o, -1.0);
        OC_CHECK(train(dir, &o, NULL, &res, &err) != OC_OK);
    }
}

/* ---- giving the CPU cache's memory back -------------------------------------------------- */

/*
 * A budgeted diskgnn store (reused samples: no planner allocating beside the
 * test), driven through three epochs: in the middle of epoch 0 a request
 * passes a budget just above what is held, and the CPU cache gives rows
 * back for it; the batches assembled after read those rows from the file,
 * every row stays right; once the request is freed and the budget lifted,
 * the next batch takes the rows back, and the last epoch reads none from
 * the file.
 */
static void gives_back(enum oc_dtype dtype, uint32_t dim)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 2000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 3, 1);
    c.mem_bytes = dg_min_mem(c) + 400 * (fx.row_bytes + 8);
    uint64_t before_open = oc_mem_used();
    struct oc_store *s = NULL;
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size, order[64];
    OC_CHECK(nb >= 4 && nb <= 64);
    if (!s || nb < 4 || nb > 64) {
        oc_store_free(s);
        fixture_free(&fx);
        return;
    }
    struct oc_sample_batch b;
    float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
    oc_sample_batch_init(&b);
    struct oc_store_stats st, st_open, st_epoch1;
    oc_store_stats(s, &st_open);
    void *big = NULL;
    uint64_t bad = 0;
    for (uint64_t e = 0; e < 3; e++) {
        oc_sample_batch_order(c.sample_opts->seed, e, order, nb);
        if (e == 2)
            oc_store_stats(s, &st_epoch1);
        for (uint64_t k = 0; k < nb; k++) {
            if (e == 0 && k == 1) { /* a request 100 rows past a budget at what is held */
                uint64_t used = oc_mem_used();
                oc_mem_set_budget(used + 1000);
                big = oc_alloc(1000 + 100 * fx.row_bytes, "a larger batch", &err);
                OC_CHECK(big != NULL);
                OC_CHECK(oc_mem_used() <= used + 1000);
                oc_store_stats(s, &st);
                OC_CHECK(st.given_back_bytes >= 100 * fx.row_bytes);
            }
            if (e == 1 && k == 0) { /* freed: the next batch takes the rows back */
                oc_free(big);
                big = NULL;
                oc_mem_set_budget(0);
            }
            OC_CHECK_OK(oc_store_load_batch(s, 0, order[k], &b, &err), &err);
            OC_CHECK_OK(oc_store_gather_batch(s, 0, order[k], b.input_ids, b.n_input, out, &err),
                        &err);
            bad += fixture_bad_rows(&fx, b.input_ids, b.n_input, out);
        }
        if (e == 0) { /* given-back rows came from the file, in plan */
            oc_store_stats(s, &st);
            OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] > st_open.tier_rows[OC_STORE_TIER_DISK]);
            OC_CHECK(st.read_bytes > st_open.read_bytes);
        }
    }
    OC_CHECK(bad == 0);
    oc_store_stats(s, &st);
    OC_CHECK(st.given_back_bytes == 0);
    OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] == st_epoch1.tier_rows[OC_STORE_TIER_DISK]);
    OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] > st_epoch1.tier_rows[OC_STORE_TIER_CPU]);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  %u x %s: %" PRIu64 " rows from the file after giving back\n", dim,
                dtype == OC_DTYPE_F16 ? "f16" : "f32", st.tier_rows[OC_STORE_TIER_DISK]);
    oc_free(big);
    oc_mem_set_budget(0);
    oc_sample_batch_deinit(&b);
    free(out);
    oc_store_free(s);
    OC_CHECK(oc_mem_used() == before_open);
    fixture_free(&fx);
}

OC_TEST(cpu_cache_gives_rows_back_and_takes_them_back)
{
    gives_back(OC_DTYPE_F32, 64);
    gives_back(OC_DTYPE_F16, 300); /* rows across pages, widened after their read */
}

OC_TEST_MAIN()
