/*
 * test_store_helios.c — the `helios` strategy: through the batch pipeline
 * (per-hop submission, completion stage) every training row equals the
 * file's over two epochs with evaluation gathers between them, for f32 and
 * f16 rows, under a budget that leaves cached, staged and overflow rows, via
 * SQPOLL, a plain ring and pread; fault loops over ring setup (fallbacks,
 * still correct), submission and completion errors end with a clean error
 * naming the file, no leak and no hang; cancelling mid-epoch on a shared
 * pipeline ends every wait; allocation faults at open fail cleanly; with an
 * I/O core the compute pool runs only on the other cores.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → store).
 * Thread-safety: the test drives the store from the batch pipeline's stages.
 * Ownership: every store and fixture is freed by the test that made it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/batch_pipe.h"
#include "offcore/pipeline.h"
#include "offcore/rng.h"
#include "proc_util.h"
#include "store/helios/helios_int.h"
#include "store_fixture.h"
#include "uring_util.h"

/* 20000 nodes, batches of 64 seeds (fanouts 4,3: at most 1280 rows). */
static int hl_fixture(struct fixture *fx, uint32_t dim, enum oc_dtype dtype)
{
    if (!fixture_init(fx, 20000, dim, dtype))
        return 0;
    fx->batch_size = 64;
    return 1;
}

/* The plan's config; a budget that caches a fraction of the rows and stages fewer than a batch. */
static struct oc_store_config hl_config(const struct fixture *fx, uint32_t n_epochs)
{
    struct oc_store_config c = fixture_config(fx, NULL);
    c.first_epoch = 0;
    c.n_epochs = n_epochs;
    c.mem_bytes = fixture_fixed_bytes(fx) + 3u * 1280 * 20 + 1280 * 16 + (1u << 20) +
                  fx->n_nodes * fx->row_bytes / 4;
    return c;
}

/* Called before each epoch opens (b = UINT64_MAX: the fetch stage idle) and before each batch. */
typedef void (*plan_hook)(void *ctx, struct oc_store *s, uint32_t e, uint64_t b);

/*
 * Runs n_epochs of the plan through the batch pipeline, an evaluation gather
 * between epochs; counts rows that differ from the file in *bad; returns the
 * first error (OC_OK if none). hook (may be NULL) runs as plan_hook says.
 */
static int run_plan_hooked(const struct fixture *fx, struct oc_store *s, uint32_t n_epochs,
                           uint64_t *bad, struct oc_err *err, plan_hook hook, void *ctx)
{
    struct oc_batch_pipe *bp = NULL;
    struct oc_batch_pipe_config pc = fixture_pipe_config(fx, s, 2);
    *bad = 0;
    int rc = oc_batch_pipe_new(&pc, &bp, err);
    for (uint32_t e = 0; rc == OC_OK && e < n_epochs; e++) {
        if (hook)
            hook(ctx, s, e, UINT64_MAX);
        if ((rc = oc_batch_pipe_epoch(bp, e, err)) || (rc = oc_batch_pipe_open(bp, err)))
            break;
        for (uint64_t b = 0; rc == OC_OK && b < oc_batch_pipe_n_batches(bp); b++) {
            struct oc_pipe_batch *pb;
            if (hook)
                hook(ctx, s, e, b);
            if ((rc = oc_batch_pipe_next(bp, &pb, err)))
                break;
            *bad += fixture_bad_rows(fx, pb->batch.input_ids, pb->batch.n_input, pb->x);
            oc_batch_pipe_done(bp, pb);
        }
        if (rc == OC_OK) { /* evaluation gather between epochs */
            uint64_t ids[300];
            float *out = malloc(300 * fx->dim * sizeof(float));
            struct oc_rng r;
            oc_rng_init(&r, 7, e, 1, 2);
            for (int i = 0; i < 300; i++)
                ids[i] = oc_rng_below(&r, fx->n_nodes);
            rc = oc_store_gather(s, ids, 300, out, err);
            if (rc == OC_OK)
                *bad += fixture_bad_rows(fx, ids, 300, out);
            free(out);
        }
    }
    oc_batch_pipe_free(bp);
    return rc;
}

static int run_plan(const struct fixture *fx, struct oc_store *s, uint32_t n_epochs, uint64_t *bad,
                    struct oc_err *err)
{
    return run_plan_hooked(fx, s, n_epochs, bad, err, NULL, NULL);
}

/*
 * The ring helios sets up with --io-cores io_cores here: as helios splits the
 * cores (0 = one for I/O on 4 cores or more, at most all but one), SQPOLL
 * pinned to the last core where there is an I/O core and the kernel grants
 * it, else a plain ring; pread without io_uring.
 */
static enum oc_io_ring_mode expected_mode(uint32_t io_cores)
{
    int cpus[1024];
    long n = (long)oc_cpus_allowed(cpus, 1024);
    if (!test_uring_expected())
        return OC_IO_RING_PREAD;
    if (io_cores == 0)
        io_cores = n >= 4 ? 1 : 0;
    if ((long)io_cores >= n)
        io_cores = (uint32_t)(n - 1);
    return io_cores && test_sqpoll_granted(cpus[n - 1]) ? OC_IO_RING_SQPOLL : OC_IO_RING_PLAIN;
}

static void plan_matches(uint32_t dim, enum oc_dtype dtype, int no_uring, unsigned depth,
                         uint32_t io_cores)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = hl_config(&fx, 2);
    fixture_opt(&c, "io-cores", io_cores);
    struct oc_store *s = fixture_open("helios", &c);
    if (s) {
        uint64_t bad = 9;
        if (depth)
            oc_store_helios_set_depth(s, depth);
        OC_CHECK(oc_store_helios_ring_mode(s) == expected_mode(io_cores));
        OC_CHECK_OK(run_plan(&fx, s, 2, &bad, &err), &err);
        OC_CHECK(bad == 0);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] ==
                 st.requested_rows);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] > 0 && st.tier_rows[OC_STORE_TIER_DISK] > 0);
        OC_CHECK(st.read_bytes > 0 && st.io_cpu_us > 0);
        fprintf(stderr, "  %s dim %u%s: cpu hit %.3f, %llu bytes read in %llu reads\n",
                oc_dtype_name(dtype), dim, no_uring ? " (pread)" : "",
                oc_store_stats_hit_ratio(&st, OC_STORE_TIER_CPU), (unsigned long long)st.read_bytes,
                (unsigned long long)st.n_reads);
    }
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    unsetenv("OC_NO_URING");
    fixture_free(&fx);
}

OC_TEST(plan_matches_file_f32)
{
    plan_matches(24, OC_DTYPE_F32, 0, 0, 0);
}

OC_TEST(plan_matches_file_f16)
{
    plan_matches(64, OC_DTYPE_F16, 0, 0, 0);
}

OC_TEST(plan_matches_file_page_rows)
{
    plan_matches(1024, OC_DTYPE_F32, 0, 0, 0); /* one 4 KiB page a row, as in Helios's setup */
}

/* One core for I/O: SQPOLL, its thread and the completion stage pinned (on 2 cores or more). */
OC_TEST(plan_matches_file_sqpoll)
{
    TEST_REQUIRE_URING();
    if (!test_sqpoll_granted((int)sysconf(_SC_NPROCESSORS_ONLN) - 1))
        OC_SKIP("no SQPOLL ring granted here (privileges or cpuset)");
    plan_matches(24, OC_DTYPE_F32, 0, 0, 1);
    plan_matches(24, OC_DTYPE_F32, 0, 3, 1);
}

OC_TEST(plan_matches_file_pread)
{
    plan_matches(24, OC_DTYPE_F32, 1, 0, 0);
}

/* Ring setup refused once (SQPOLL: a plain ring) and persistently (pread): still the file's rows. */
/* Few reads in flight: the submitter waits for the completion stage (and hands its queue over). */
OC_TEST(plan_matches_file_shallow_ring)
{
    plan_matches(24, OC_DTYPE_F32, 0, 3, 0);
}

OC_TEST(plan_matches_file_shallow_pread)
{
    plan_matches(24, OC_DTYPE_F32, 1, 3, 0);
}

struct off_io {
    int first, last; /* the first and last CPU the test may use */
    int bad[2];
};

/* Pool job: whether every worker's CPU set equals *ctx->want. */
struct same_cpus {
    const cpu_set_t *want;
    int bad[2];
};

static int check_same_cpus(void *ctx, uint64_t task, unsigned worker)
{
    struct same_cpus *c = ctx;
    (void)task;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0 || !CPU_EQUAL(&set, c->want))
        __atomic_fetch_add(&c->bad[worker], 1, __ATOMIC_RELAXED);
    return OC_OK;
}

/* Whether every worker of a 2-thread pool runs on exactly *want. */
static int pool_on(struct oc_pool *pool, const cpu_set_t *want)
{
    struct same_cpus c = {want, {0, 0}};
    return oc_pool_run(pool, 2, check_same_cpus, &c) == OC_OK && c.bad[0] == 0 && c.bad[1] == 0;
}

/* Pool job: every worker's CPU set leaves out the last allowed CPU and holds the first. */
static int check_off_io_core(void *ctx, uint64_t task, unsigned worker)
{
    struct off_io *c = ctx;
    (void)task;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0 ||
        CPU_ISSET(c->last, &set) || !CPU_ISSET(c->first, &set))
        __atomic_fetch_add(&c->bad[worker], 1, __ATOMIC_RELAXED);
    return OC_OK;
}

/*
 * --io-cores 1: the compute pool (its workers and the thread that opened the
 * store) is pinned to the other cores, so compute never runs on the I/O core.
 */
/*
 * A record stages only the rows its batch's cache misses, so the stages are
 * sized to those and the cache takes the rest: more rows cached than when
 * every input row has a place in the stage, and still the file's rows.
 */
OC_TEST(stages_sized_to_misses_leave_the_cache_more)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 1024, OC_DTYPE_F32)) { /* a page a row, as in Helios's setup */
        fixture_free(&fx);
        return;
    }
    uint64_t cached[2] = {0, 0}, stage[2] = {0, 0};
    for (int every = 1; every >= 0; every--) {
        oc_store_helios_stage_every_row(every);
        struct oc_store_config c = hl_config(&fx, 1);
        /* room enough that the stages are not capped at half the budget, yet under the file */
        c.mem_bytes = fixture_fixed_bytes(&fx) + fx.n_nodes * fx.row_bytes * 3 / 4;
        struct oc_store *s = fixture_open("helios", &c);
        oc_store_helios_stage_every_row(0);
        if (!s)
            continue;
        oc_store_helios_sizes(s, &cached[every], &stage[every]);
        uint64_t bad = 9;
        OC_CHECK_OK(run_plan(&fx, s, 1, &bad, &err), &err);
        OC_CHECK(bad == 0);
        oc_store_free(s);
    }
    fprintf(stderr, "  every row staged: %llu cached, %llu per stage; misses only: %llu, %llu\n",
            (unsigned long long)cached[1], (unsigned long long)stage[1],
            (unsigned long long)cached[0], (unsigned long long)stage[0]);
    OC_CHECK(stage[0] > 0 && stage[0] < stage[1] && cached[0] > cached[1] && cached[1] > 0);
    fixture_free(&fx);
}

/*
 * A budget that would hold every row, but not with the stages: the cache holds
 * the hottest rows by the pre-sampled epoch (not the first ids), and the
 * stages are sized to what it misses. Without a budget every row is cached
 * and nothing is staged. Both serve the file's rows.
 */
/*
 * A budget that holds every row, but not with stages sized to whole batches:
 * sizing ranks every row by the pre-sampled epoch, so the cache it measures
 * the misses against is the hottest rows (epoch 0's, here all of the first
 * batches' rows): nothing missed, no stage, every row cached (ranked in id
 * order, the first ids missed and took stages). Without a budget: every row
 * cached, no stage. Both serve the file's rows. And the ranking itself: all
 * the rows, hottest first, when asked for all of them.
 */
OC_TEST(a_cache_of_nearly_every_row_holds_the_hottest)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 1024, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    for (int budget = 1; budget >= 0; budget--) {
        struct oc_store_config c = hl_config(&fx, 1);
        /* every row and its lookup, plus the records: not the stages of whole batches too */
        c.mem_bytes =
            budget ? fixture_fixed_bytes(&fx) + fx.n_nodes * (fx.row_bytes + 8) + (2u << 20) : 0;
        struct oc_store *s = fixture_open("helios", &c);
        if (!s)
            continue;
        uint64_t cached = 0, stage = 0;
        oc_store_helios_sizes(s, &cached, &stage);
        fprintf(stderr, "  budget %s: %llu of %llu rows cached, %llu per stage\n",
                budget ? "about the file" : "none", (unsigned long long)cached,
                (unsigned long long)fx.n_nodes, (unsigned long long)stage);
        OC_CHECK(cached == fx.n_nodes && stage == 0);
        if (budget) {
            uint64_t *hot = NULL, worse = 0;
            OC_CHECK_OK(store_hot_select(s, &c, OC_STORE_HOTNESS_DEGREE, fx.n_nodes, 1, &hot, &err),
                        &err);
            const uint64_t *ip = fx.g.indptr;
            for (uint64_t k = 1; hot && k < fx.n_nodes; k++)
                worse += ip[hot[k] + 1] - ip[hot[k]] > ip[hot[k - 1] + 1] - ip[hot[k - 1]];
            OC_CHECK(hot && worse == 0 && hot[0] != 0);
            oc_free(hot);
        }
        uint64_t bad = 9;
        OC_CHECK_OK(run_plan(&fx, s, 1, &bad, &err), &err);
        OC_CHECK(bad == 0);
        oc_store_free(s);
    }
    fixture_free(&fx);
}

/*
 * What the --io-cores tests share: the CPUs the thread may use and its mask
 * (put back at the end), a 2-thread pool, a fixture and a config with
 * --io-cores 1 and that pool. one_cpu: the thread (and so the pool, whose
 * worker inherits it) first restricted to the last allowed CPU, as taskset
 * would. 0: skipped (one CPU allowed) or not set up; free it either way.
 */
struct pin_case {
    int cpus[1024];
    unsigned n;
    cpu_set_t all, one;
    struct oc_pool *pool;
    struct fixture fx;
    struct oc_store_config c;
};

static int pin_case_init(struct pin_case *pc, int one_cpu)
{
    struct oc_err err;
    memset(pc, 0, sizeof(*pc));
    pc->n = oc_cpus_allowed(pc->cpus, 1024);
    OC_CHECK(pthread_getaffinity_np(pthread_self(), sizeof(pc->all), &pc->all) == 0);
    if (pc->n < 2) {
        fprintf(stderr, "  one CPU allowed: nothing to split (skipped)\n");
        return 0;
    }
    CPU_ZERO(&pc->one);
    CPU_SET(pc->cpus[pc->n - 1], &pc->one);
    if (one_cpu)
        OC_CHECK(pthread_setaffinity_np(pthread_self(), sizeof(pc->one), &pc->one) == 0);
    OC_CHECK_OK(oc_pool_new(2, &pc->pool, &err), &err);
    if (!pc->pool || !hl_fixture(&pc->fx, 24, OC_DTYPE_F32))
        return 0;
    pc->c = hl_config(&pc->fx, 1);
    fixture_opt(&pc->c, "io-cores", 1);
    pc->c.pool = pc->pool;
    return 1;
}

static void pin_case_free(struct pin_case *pc)
{
    oc_pool_free(pc->pool);
    pthread_setaffinity_np(pthread_self(), sizeof(pc->all), &pc->all); /* the next tests too */
    fixture_free(&pc->fx);
}

/* Trains one epoch of the plan on s: every row as in the file. */
static void pin_case_run(struct pin_case *pc, struct oc_store *s)
{
    struct oc_err err;
    uint64_t bad = 9;
    OC_CHECK_OK(run_plan(&pc->fx, s, 1, &bad, &err), &err);
    OC_CHECK(bad == 0);
}

OC_TEST(io_cores_keep_the_compute_pool_off_them)
{
    struct pin_case pc;
    struct oc_err err;
    if (pin_case_init(&pc, 0)) {
        struct oc_store *s = fixture_open("helios", &pc.c);
        if (s) {
            struct off_io oi = {pc.cpus[0], pc.cpus[pc.n - 1], {0, 0}};
            OC_CHECK_OK(oc_pool_run(pc.pool, 2, check_off_io_core, &oi), &err);
            OC_CHECK(oi.bad[0] == 0 && oi.bad[1] == 0);
            pin_case_run(&pc, s);
        }
        oc_store_free(s);
        /* freed on the opening thread: it and the pool run where they could before */
        OC_CHECK(pool_on(pc.pool, &pc.all));
    }
    pin_case_free(&pc);
}

/*
 * The split is over the CPUs the process may use, not the machine's: with
 * one CPU allowed (taskset) there is nothing to give I/O, so --io-cores 1
 * sets up no SQPOLL thread and pins nothing, and the reads still arrive.
 */
OC_TEST(io_cores_split_only_the_allowed_cpus)
{
    struct pin_case pc;
    if (pin_case_init(&pc, 1)) {
        int mine[4];
        OC_CHECK(oc_cpus_allowed(mine, 4) == 1 && mine[0] == pc.cpus[pc.n - 1]);
        struct oc_store *s = fixture_open("helios", &pc.c);
        if (s) {
            OC_CHECK(oc_store_helios_ring_mode(s) ==
                     (test_uring_expected() ? OC_IO_RING_PLAIN : OC_IO_RING_PREAD));
            pin_case_run(&pc, s);
            OC_CHECK(pool_on(pc.pool, &pc.one)); /* nothing pinned */
        }
        oc_store_free(s);
    }
    pin_case_free(&pc);
}

/*
 * Two helios stores opened on one thread, the first still pinning it: the
 * second splits the same CPUs (not the compute CPUs the first left the
 * thread), so it gets the same ring; freed first-opened first, the thread
 * and the pool keep the pin until the last goes, then run anywhere again.
 */
OC_TEST(two_stores_on_one_thread_split_the_same_cpus)
{
    struct pin_case pc;
    if (pin_case_init(&pc, 0)) {
        cpu_set_t compute;
        CPU_ZERO(&compute);
        for (unsigned i = 0; i + 1 < pc.n; i++)
            CPU_SET(pc.cpus[i], &compute);
        enum oc_io_ring_mode want = expected_mode(1); /* before any pin */
        struct oc_store *a = fixture_open("helios", &pc.c);
        struct oc_store *b = a ? fixture_open("helios", &pc.c) : NULL;
        if (a && b) {
            OC_CHECK(oc_store_helios_ring_mode(a) == want);
            OC_CHECK(oc_store_helios_ring_mode(b) == want);
            OC_CHECK(pool_on(pc.pool, &compute));
            oc_store_free(a);
            a = NULL;
            OC_CHECK(pool_on(pc.pool, &compute)); /* b still needs its I/O core kept free */
            pin_case_run(&pc, b);
        }
        oc_store_free(a);
        oc_store_free(b);
        OC_CHECK(pool_on(pc.pool, &pc.all));
    }
    pin_case_free(&pc);
}

OC_TEST(setup_faults_fall_back)
{
    TEST_REQUIRE_URING();
    int cpus[1024];
    unsigned n_cpus = oc_cpus_allowed(cpus, 1024);
    if (n_cpus < 2 || !test_sqpoll_granted(cpus[n_cpus - 1]))
        OC_SKIP("no SQPOLL ring granted here (one core, privileges or cpuset): the setups "
                "this test refuses in turn do not all happen");
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 24, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = hl_config(&fx, 1);
    fixture_opt(&c, "io-cores", 1); /* SQPOLL first */
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        /* setups in order: the evaluation reader's ring, then helios's SQPOLL ring, then
           (SQPOLL refused) its plain ring. One refusal of the 2nd: plain; refusals from the
           2nd on: pread; of the 1st: only the reader reads by pread */
        for (uint64_t nth = 1; nth <= 2; nth++) {
            fault_arm_mode(mode, OC_FAULT_URING_SETUP, nth, EPERM);
            struct oc_store *s = fixture_open("helios", &c);
            int fired = oc_fault_fired(OC_FAULT_URING_SETUP);
            oc_fault_disarm_all();
            OC_CHECK(s != NULL && fired);
            if (!s)
                continue;
            enum oc_io_ring_mode m = oc_store_helios_ring_mode(s), want = OC_IO_RING_SQPOLL;
            if (mode == FAULT_PERSISTENT)
                want = OC_IO_RING_PREAD;
            else if (nth == 2)
                want = OC_IO_RING_PLAIN;
            OC_CHECK(m == want);
            uint64_t bad = 9;
            OC_CHECK_OK(run_plan(&fx, s, 1, &bad, &err), &err);
            OC_CHECK(bad == 0);
            oc_store_free(s);
            OC_CHECK(oc_mem_n_live() == live);
        }
    }
    fixture_free(&fx);
}

/* Submission (kind OC_FAULT_URING_SUBMIT) or completion (OC_FAULT_READ) errors, after open. */
static void run_faults(enum oc_fault_kind kind, int no_uring)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 24, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = hl_config(&fx, 1);
    static const struct {
        uint64_t nth;
        int e;
    } faults[] = {{1, EIO}, {3, EBUSY}, {40, EIO}, {7, 0}};
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++)
        for (size_t k = 0; k < sizeof(faults) / sizeof(faults[0]); k++) {
            if (kind == OC_FAULT_URING_SUBMIT && faults[k].e == 0)
                continue;
            struct oc_store *s = fixture_open("helios", &c);
            if (!s)
                continue;
            fault_arm_mode(mode, kind, faults[k].nth, faults[k].e);
            uint64_t bad = 0;
            int rc = run_plan(&fx, s, 1, &bad, &err);
            int fired = oc_fault_fired(kind);
            oc_fault_disarm_all();
            OC_CHECK(fired);
            /* an errno is an I/O error; a short read (e 0) leaves a row incomplete */
            int want = faults[k].e ? OC_ERR_IO : OC_ERR_FORMAT;
            OC_CHECK(rc == want);
            OC_CHECK(strstr(err.msg, "features.npy") != NULL);
            OC_CHECK(bad == 0);
            if (k == 0 && mode == 0)
                fprintf(stderr, "  %s\n", err.msg);
            oc_store_free(s);
            OC_CHECK(oc_mem_n_live() == live);
        }
    unsetenv("OC_NO_URING");
    fixture_free(&fx);
}

OC_TEST(submit_faults)
{
    TEST_REQUIRE_URING();
    run_faults(OC_FAULT_URING_SUBMIT, 0);
}

OC_TEST(completion_faults)
{
    run_faults(OC_FAULT_READ, 0);
}

OC_TEST(completion_faults_pread)
{
    run_faults(OC_FAULT_READ, 1);
}

/*
 * On one pipeline with the batch pipeline (as in training), with a 1-deep
 * ring so the submitter waits for room: cancelling after `after` batches
 * (mid-epoch, reads in flight) ends every wait; no thread or byte is left.
 */
OC_TEST(cancel_mid_epoch_on_a_shared_pipeline)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 24, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    int threads = proc_n_threads();
    for (uint64_t after = 0; after < 3; after++) {
        struct oc_pipeline *p = NULL;
        struct oc_batch_pipe *bp = NULL;
        OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
        struct oc_store_config c = hl_config(&fx, 2);
        c.pipeline = p;
        fixture_opt(&c, "io-cores", after == 1); /* SQPOLL once */
        struct oc_store *s = fixture_open("helios", &c);
        if (s)
            oc_store_helios_set_depth(s, 1);
        struct oc_batch_pipe_config pc = fixture_pipe_config(&fx, s, 2);
        pc.pipeline = p;
        int rc = s ? oc_batch_pipe_new(&pc, &bp, &err) : OC_ERR_INTERNAL;
        if (rc == OC_OK)
            rc = oc_batch_pipe_epoch(bp, 0, &err);
        if (rc == OC_OK)
            rc = oc_batch_pipe_open(bp, &err);
        for (uint64_t b = 0; rc == OC_OK && b < after; b++) {
            struct oc_pipe_batch *pb;
            rc = oc_batch_pipe_next(bp, &pb, &err);
            if (rc == OC_OK) {
                OC_CHECK(fixture_bad_rows(&fx, pb->batch.input_ids, pb->batch.n_input, pb->x) == 0);
                oc_batch_pipe_done(bp, pb);
            }
        }
        OC_CHECK_OK(rc, &err);
        oc_pipeline_free(p); /* cancels and joins every stage, as train does */
        OC_CHECK(proc_n_threads_is(threads));
        oc_batch_pipe_free(bp);
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
    }
    fixture_free(&fx);
}

OC_TEST(alloc_faults_at_open)
{
    struct fixture fx;
    if (!hl_fixture(&fx, 24, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = hl_config(&fx, 1);
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++)
        for (uint64_t nth = 1;; nth = fault_next_nth(nth, 8)) {
            struct oc_err err;
            struct oc_store *s = NULL;
            uint32_t idx = 0;
            OC_CHECK_OK(oc_store_strategy_find("helios", &idx, &err), &err);
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = oc_store_open(idx, &c, &s, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (rc == OC_OK)
                oc_store_free(s);
            else
                OC_CHECK(rc == OC_ERR_NOMEM && s == NULL);
            OC_CHECK(oc_mem_n_live() == live);
            if (!fired) {
                OC_CHECK(nth > 1); /* some allocation failed before this run reached none */
                break;
            }
        }
    fixture_free(&fx);
}

/* ---- giving the cache's memory back ----------------------------------------------- */

struct give_back {
    const struct fixture *fx;
    void *big;
    uint64_t given_after_epoch1, given_at_end;
};

/* In epoch 1 a request 100 rows past a budget at what is held; freed when epoch 2 starts. */
static void give_back_hook(void *ctx, struct oc_store *s, uint32_t e, uint64_t b)
{
    struct give_back *g = ctx;
    struct oc_err err;
    if (e == 1 && b == 1) {
        uint64_t used = oc_mem_used();
        oc_mem_set_budget(used + 1000);
        g->big = oc_alloc(1000 + 100 * g->fx->row_bytes, "a larger batch", &err);
        OC_CHECK(g->big != NULL && oc_mem_used() <= used + 1000);
    }
    if (e == 2 && b == UINT64_MAX) {
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        g->given_after_epoch1 = st.given_back_bytes;
    }
    if (e == 2 && b == 0) {
        oc_free(g->big);
        g->big = NULL;
        oc_mem_set_budget(0);
    }
}

/*
 * The cache gives rows back to a request past the budget while batches are
 * in flight: rows looked up before the give-back are read at serve, every
 * row stays right; once freed, the next batch takes them back.
 */
OC_TEST(cache_gives_rows_back_and_takes_them_back)
{
    struct fixture fx;
    struct oc_err err;
    if (!hl_fixture(&fx, 64, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = hl_config(&fx, 4);
    struct oc_store *s = fixture_open("helios", &c);
    if (s) {
        struct give_back g = {&fx, NULL, 0, 0};
        uint64_t bad = 9;
        OC_CHECK_OK(run_plan_hooked(&fx, s, 4, &bad, &err, give_back_hook, &g), &err);
        OC_CHECK(bad == 0);
        OC_CHECK(g.given_after_epoch1 >= 100 * fx.row_bytes);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes == 0);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] ==
                 st.requested_rows);
        oc_free(g.big);
    }
    oc_mem_set_budget(0);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST_MAIN()
