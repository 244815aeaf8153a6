/*
 * test_store_hyper.c — hyperbatches at the store (static, ginex, helios and
 * gnndrive --hyperbatch, store/hyper.c) through the batch pipeline: every
 * gathered row equals the file's, and with the same cached rows (buffer
 * slots) as a plain store of the same strategy the groups' block passes read
 * the same misses in fewer requests (each page once per group instead of
 * once per batch, neighbours merged); a share out of range, or one whose
 * groups do not fit the budget, is refused naming it. hyper.c's takes by
 * several threads: batches of a group taken and done out of order by two
 * threads, each served its own rows, the groups going round; a batch never
 * staged, or taken twice, refused naming it. static over an access map (a
 * partitioned dataset's part, no batch pipeline): its own feeder fills the
 * groups, the same rows in fewer requests.
 *
 * Place in the data flow: tests (store + batch pipeline on a generated dataset).
 * Thread-safety: the take test's two threads share only the hyperbatch (its
 * calls are thread-safe); the pipeline runs its own threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "offcore/pipeline.h"
#include "store/ginex/ginex_int.h"
#include "store/gnndrive/gnndrive_int.h"
#include "store/helios/helios_int.h"
#include "store/static/static_int.h"
#include "store_fixture.h"

struct run {
    uint64_t n_cached, n_reads, read_bytes, requested, bad, rows, written;
};

/* 1: the runs below stage their groups on disk (--hyperbatch-disk) under disk_plan. */
static int disk_groups;
static char disk_plan[800];

#define GX_S 16u /* ginex's superbatch in these tests */

#define GD_E 3u /* gnndrive's extractors in these tests: several take a group's batches */

/* A strategy's --hyperbatch (static declares the name first). */
static const struct oc_store_opt *hyperbatch_of(const char *strategy)
{
    uint32_t i = 0;
    const struct oc_store_opt *opt = NULL;
    OC_CHECK_OK(oc_store_strategy_find(strategy, &i, NULL), NULL);
    OC_CHECK(oc_store_opt_find_in(i, "hyperbatch", &opt) == OC_OK);
    return opt;
}

static const struct oc_store_opt *helios_hyperbatch(void)
{
    return hyperbatch_of("helios");
}

/* Sets `strategy`'s --hyperbatch-disk in c (the options of the strategy c holds). */
static void set_hyperbatch_disk(const char *strategy, struct oc_store_config *c)
{
    uint32_t i = 0;
    const struct oc_store_opt *opt = NULL;
    OC_CHECK_OK(oc_store_strategy_find(strategy, &i, NULL), NULL);
    OC_CHECK(oc_store_opt_find_in(i, "hyperbatch-disk", &opt) == OC_OK);
    OC_CHECK_OK(oc_store_opt_apply(opt, 1, c, NULL), NULL);
}

/* A config of `strategy` over fx's two epochs with budget mem and hyperbatch share (0: none). */
static struct oc_store_config hyper_config(const struct fixture *fx, const char *strategy,
                                           uint64_t mem, double share, struct oc_pipeline *p)
{
    struct oc_store_config c = fixture_config(fx, NULL);
    c.mem_bytes = mem;
    c.pipeline = p;
    if (disk_groups && share > 0) {
        snprintf(disk_plan, sizeof(disk_plan), "%s/plan", fx->dir);
        c.plan_dir = disk_plan;
    }
    if (strcmp(strategy, "ginex") == 0) {
        c.n_epochs = 2;
        fixture_opt(&c, "superbatch", GX_S); /* first: the config holds ginex's options */
        if (share > 0)
            fixture_opt(&c, "hyperbatch", share);
    } else if (strcmp(strategy, "helios") == 0) {
        c.n_epochs = 2;
        if (share > 0)
            OC_CHECK_OK(oc_store_opt_apply(helios_hyperbatch(), share, &c, NULL), NULL);
    } else if (strcmp(strategy, "gnndrive") == 0) {
        c.n_epochs = 2;
        fixture_opt(&c, "extractors", GD_E);
        if (share > 0)
            OC_CHECK_OK(oc_store_opt_apply(hyperbatch_of("gnndrive"), share, &c, NULL), NULL);
    } else {
        fixture_opt(&c, "hyperbatch", share);
    }
    if (disk_groups && share > 0)
        set_hyperbatch_disk(strategy, &c);
    return c;
}

/* Prints a pair of runs (with hyperbatches: h; plain: q) and checks what every pair shares:
   sound rows, the same rows, and fewer read requests with hyperbatches. */
static void check_pair(const char *who, enum oc_dtype dtype, const struct run *h,
                       const struct run *q)
{
    fprintf(stderr,
            "  %s %s: %llu rows cached (plain %llu); hyperbatches %llu reads, %llu bytes; plain "
            "%llu reads, %llu bytes\n",
            who, dtype == OC_DTYPE_F16 ? "f16" : "f32", (unsigned long long)h->n_cached,
            (unsigned long long)q->n_cached, (unsigned long long)h->n_reads,
            (unsigned long long)h->read_bytes, (unsigned long long)q->n_reads,
            (unsigned long long)q->read_bytes);
    OC_CHECK(h->bad == 0 && q->bad == 0);
    OC_CHECK(h->rows > 0 && h->rows == q->rows);
    OC_CHECK(h->n_reads > 0 && h->n_reads < q->n_reads);
    OC_CHECK(disk_groups ? h->written > 0 : h->written == 0); /* on disk: packed */
}

/*
 * Opens `strategy` over fx with budget mem (hyperbatch share: 0 = plain) on its
 * own pipeline, runs two epochs of the plan through the batch pipeline, and
 * fills r. Only the cache size when `count_only`; the open's error in err.
 */
static int run_store(const struct fixture *fx, const char *strategy, uint64_t mem, double share,
                     int count_only, struct run *r, struct oc_err *err_out)
{
    struct oc_err err;
    struct oc_pipeline *p = NULL;
    struct oc_batch_pipe *bp = NULL;
    memset(r, 0, sizeof(*r));
    OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
    struct oc_store_config c = hyper_config(fx, strategy, mem, share, p);
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find(strategy, &idx, &err), &err);
    int rc = oc_store_open(idx, &c, &s, err_out ? err_out : &err);
    if (rc) {
        oc_pipeline_free(p);
        return rc;
    }
    uint64_t stage_rows = 0;
    if (strcmp(strategy, "ginex") == 0)
        r->n_cached = oc_store_ginex_capacity(s);
    else if (strcmp(strategy, "helios") == 0)
        oc_store_helios_sizes(s, &r->n_cached, &stage_rows);
    else if (strcmp(strategy, "gnndrive") == 0) {
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        r->n_cached = info.z.n_slots;
    } else
        r->n_cached = oc_store_static_n_cached(s);
    if (!count_only) {
        struct oc_batch_pipe_config pc = fixture_pipe_config(fx, s, 2);
        pc.pipeline = p;
        OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
        uint64_t nb = bp ? oc_batch_pipe_n_batches(bp) : 0;
        for (uint32_t e = 0; e < 2 && bp; e++) {
            OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
            OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
            for (uint64_t b = 0; b < nb; b++) {
                struct oc_pipe_batch *pb = NULL;
                OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
                if (!pb)
                    break;
                r->bad += fixture_bad_rows(fx, pb->batch.input_ids, pb->batch.n_input, pb->x);
                r->rows += pb->batch.n_input;
                oc_batch_pipe_done(bp, pb);
            }
        }
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        r->n_reads = st.n_reads;
        r->read_bytes = st.read_bytes;
        r->requested = st.requested_disk_bytes;
        r->written = st.plan_write_bytes;
    }
    oc_pipeline_free(p); /* joins the stages before the pipe and the store go */
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    return OC_OK;
}

static int run_static(const struct fixture *fx, uint64_t mem, double share, int count_only,
                      struct run *r)
{
    return run_store(fx, "static", mem, share, count_only, r, NULL);
}

static void fewer_requests(enum oc_dtype dtype)
{
    struct fixture fx;
    if (!fixture_init(&fx, 40000, 100, dtype)) {
        fixture_free(&fx);
        return;
    }
    uint64_t feat = fx.n_nodes * fx.row_bytes;
    /* on disk the groups hold no rows: a smaller budget leaves the cache a part */
    uint64_t mem = feat / (disk_groups ? 4 : 2) + 12 * fixture_fixed_bytes(&fx);
    struct run h, p;
    OC_CHECK_OK(run_static(&fx, mem, 0.5, 0, &h), NULL);
    /* the largest plain budget that caches no more rows than the hyperbatch store */
    uint64_t lo = 0, hi = mem;
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        struct run c;
        if (run_static(&fx, mid, 0, 1, &c) == OC_OK && c.n_cached <= h.n_cached)
            lo = mid;
        else
            hi = mid;
    }
    OC_CHECK_OK(run_static(&fx, lo, 0, 0, &p), NULL);
    check_pair("static", dtype, &h, &p);
    OC_CHECK(p.n_cached == h.n_cached && h.n_cached > 0);
    fixture_free(&fx);
}

OC_TEST(same_cache_fewer_requests_f32)
{
    fewer_requests(OC_DTYPE_F32);
}

OC_TEST(same_cache_fewer_requests_f16)
{
    fewer_requests(OC_DTYPE_F16);
}

/*
 * static over other ids than the plan's (oc_store_config.accesses: a
 * partitioned dataset's part, here the even nodes' rows by local row v / 2,
 * each plan batch gathered with its even ids): no batch pipeline shows it the
 * batches, so with --hyperbatch its own feeder (store/feed.c) fills the
 * groups from the access map, in plan order, while the batches are gathered
 * as a partitioned run's trainer gathers them (even_part_run). Opened and
 * run with budget mem (share 0: plain); only the cache size when count_only.
 */
static int run_even(const struct fixture *fx, const struct even_part *ev, uint64_t mem,
                    double share, int count_only, struct run *r)
{
    struct oc_err err;
    memset(r, 0, sizeof(*r));
    struct oc_store_config c = even_part_config(fx, ev);
    c.mem_bytes = mem;
    c.n_epochs = 2;
    fixture_opt(&c, "hyperbatch", share);
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find("static", &idx, &err), &err);
    int rc = oc_store_open(idx, &c, &s, &err);
    if (rc)
        return rc;
    r->n_cached = oc_store_static_n_cached(s);
    if (!count_only) {
        r->bad = even_part_run(fx, ev, s, 2, &r->rows);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        r->n_reads = st.n_reads;
        r->read_bytes = st.read_bytes;
        r->requested = st.requested_disk_bytes;
    }
    oc_store_free(s);
    return OC_OK;
}

/* Over an access map: the file's rows, and fewer requests than plain static caching as many. */
OC_TEST(static_over_an_access_map_fills_its_groups_by_its_feeder)
{
    struct fixture fx;
    struct even_part ev;
    if (!fixture_init(&fx, 40000, 100, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    if (!even_part_open(&ev, &fx, 0)) {
        even_part_close(&ev);
        fixture_free(&fx);
        return;
    }
    uint64_t feat = ev.n_local * fx.dim * sizeof(float);
    uint64_t mem = feat / 2 + 12 * fixture_fixed_bytes(&fx);
    struct run h, p;
    OC_CHECK_OK(run_even(&fx, &ev, mem, 0.5, 0, &h), NULL);
    uint64_t lo = 0, hi = mem; /* the largest plain budget caching no more rows */
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        struct run c;
        if (run_even(&fx, &ev, mid, 0, 1, &c) == OC_OK && c.n_cached <= h.n_cached)
            lo = mid;
        else
            hi = mid;
    }
    OC_CHECK_OK(run_even(&fx, &ev, lo, 0, 0, &p), NULL);
    check_pair("static over an access map", OC_DTYPE_F32, &h, &p);
    OC_CHECK(p.n_cached == h.n_cached && h.n_cached > 0);
    even_part_close(&ev);
    fixture_free(&fx);
}

/*
 * ginex with hyperbatches against plain ginex with the same cache capacity
 * (C rows; the Belady plan, and so each batch's misses, the same): the same
 * rows, the same bytes asked of the disk, fewer requests.
 */
static void ginex_fewer_requests(enum oc_dtype dtype)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 40000, 100, dtype)) {
        fixture_free(&fx);
        return;
    }
    struct oc_pipeline *p = NULL;
    OC_CHECK_OK(oc_pipeline_new("sizing", &p, &err), &err);
    /* the hyperbatch store caches a quarter of the rows */
    struct oc_store_config c = hyper_config(&fx, "ginex", 0, 0.5, p);
    uint64_t mem = 0, plain = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, fx.n_nodes / 4, &mem, &err), &err);
    struct run h, q;
    OC_CHECK_OK(run_store(&fx, "ginex", mem, 0.5, 0, &h, NULL), NULL);
    struct oc_store_config cp = hyper_config(&fx, "ginex", 0, 0, p);
    OC_CHECK_OK(oc_store_ginex_budget_for(&cp, h.n_cached, &plain, &err), &err);
    OC_CHECK_OK(run_store(&fx, "ginex", plain, 0, 0, &q, NULL), NULL);
    oc_pipeline_free(p);
    check_pair("ginex", dtype, &h, &q);
    OC_CHECK(q.n_cached == h.n_cached && h.n_cached > 0);
    OC_CHECK(h.requested == q.requested); /* the same plan: the same misses */
    fixture_free(&fx);
}

OC_TEST(ginex_same_cache_fewer_requests_f32)
{
    ginex_fewer_requests(OC_DTYPE_F32);
}

OC_TEST(ginex_same_cache_fewer_requests_f16)
{
    ginex_fewer_requests(OC_DTYPE_F16);
}

/*
 * helios with hyperbatches (no per-hop reads) against plain helios caching no
 * more rows: the file's rows, fewer requests.
 */
static void helios_fewer_requests(enum oc_dtype dtype)
{
    struct fixture fx;
    if (!fixture_init(&fx, 40000, 100, dtype)) {
        fixture_free(&fx);
        return;
    }
    uint64_t feat = fx.n_nodes * fx.row_bytes;
    uint64_t mem = feat / 2 + 4 * fixture_fixed_bytes(&fx); /* plain helios: not all cached */
    struct run h, q;
    struct oc_err err;
    /* a share that leaves the cache a part of the rows: f16 rows are half the bytes */
    double share = dtype == OC_DTYPE_F16 ? 0.2 : 0.3;
    OC_CHECK_OK(run_store(&fx, "helios", mem, share, 0, &h, &err), &err);
    /* the largest plain budget that caches no more rows than the hyperbatch store */
    uint64_t lo = 0, hi = mem;
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        struct run c;
        if (run_store(&fx, "helios", mid, 0, 1, &c, NULL) == OC_OK && c.n_cached <= h.n_cached)
            lo = mid;
        else
            hi = mid;
    }
    OC_CHECK_OK(run_store(&fx, "helios", lo, 0, 0, &q, NULL), NULL);
    check_pair("helios", dtype, &h, &q);
    OC_CHECK(q.n_cached <= h.n_cached && h.n_cached > 0);
    fixture_free(&fx);
}

OC_TEST(helios_fewer_requests_f32)
{
    helios_fewer_requests(OC_DTYPE_F32);
}

OC_TEST(helios_fewer_requests_f16)
{
    helios_fewer_requests(OC_DTYPE_F16);
}

/*
 * gnndrive with hyperbatches (GD_E extractors taking the groups' batches)
 * against plain gnndrive with no more buffer slots: the file's rows, fewer
 * requests.
 */
static void gnndrive_fewer_requests(enum oc_dtype dtype)
{
    struct fixture fx;
    if (!fixture_init(&fx, 40000, 100, dtype)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = hyper_config(&fx, "gnndrive", 0, 0, NULL);
    uint64_t least = 0;
    struct oc_err err;
    OC_CHECK_OK(oc_store_gnndrive_min_budget(&c, &least, &err), &err);
    /* the groups (and the pipeline's slots for their batches), and slots for some rows */
    uint64_t mem = least + fx.n_nodes * fx.row_bytes / (disk_groups ? 4 : 1) + (12u << 20);
    struct run h, q;
    OC_CHECK_OK(run_store(&fx, "gnndrive", mem, 0.3, 0, &h, &err), &err);
    /* the largest plain budget that gives no more slots than the hyperbatch store's */
    uint64_t lo = 0, hi = mem;
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        struct run k;
        if (run_store(&fx, "gnndrive", mid, 0, 1, &k, NULL) == OC_OK && k.n_cached <= h.n_cached)
            lo = mid;
        else
            hi = mid;
    }
    OC_CHECK_OK(run_store(&fx, "gnndrive", lo, 0, 0, &q, NULL), NULL);
    check_pair("gnndrive", dtype, &h, &q);
    OC_CHECK(q.n_cached <= h.n_cached && h.n_cached < fx.n_nodes);
    fixture_free(&fx);
}

OC_TEST(gnndrive_fewer_requests_f32)
{
    gnndrive_fewer_requests(OC_DTYPE_F32);
}

OC_TEST(gnndrive_fewer_requests_f16)
{
    gnndrive_fewer_requests(OC_DTYPE_F16);
}

/* The smallest budget gnndrive opens with; its groups at a share of 0.9 do not fit. */
OC_TEST(gnndrive_refuses_groups_that_do_not_fit)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 40000, 100, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = hyper_config(&fx, "gnndrive", 0, 0, NULL);
    uint64_t least = 0;
    OC_CHECK_OK(oc_store_gnndrive_min_budget(&c, &least, &err), &err);
    struct run r;
    OC_CHECK_OK(run_store(&fx, "gnndrive", least, 0, 1, &r, &err), &err);
    OC_CHECK_ERR(run_store(&fx, "gnndrive", least, 0.9, 1, &r, &err), OC_ERR_BUDGET, &err,
                 "two hyperbatch groups");
    OC_CHECK(strstr(err.msg, "store gnndrive: needs at least") != NULL);
    OC_CHECK_ERR(oc_store_opt_apply(hyperbatch_of("gnndrive"), 0.95, &c, &err), OC_ERR_ARG, &err,
                 "--hyperbatch must be a number from 0 to 0.9");
    fixture_free(&fx);
}

/* ---- groups on disk (--hyperbatch-disk) ------------------------------------ */

/* Each strategy's pair above with its groups packed on disk: the file's rows, rows written to
   the groups' files, fewer requests than plain with no more cached rows. */
static void on_disk(void (*pair)(enum oc_dtype))
{
    disk_groups = 1;
    pair(OC_DTYPE_F32);
    disk_groups = 0;
}

OC_TEST(static_groups_on_disk)
{
    on_disk(fewer_requests);
}

OC_TEST(ginex_groups_on_disk)
{
    on_disk(ginex_fewer_requests);
}

OC_TEST(helios_groups_on_disk)
{
    on_disk(helios_fewer_requests);
}

OC_TEST(gnndrive_groups_on_disk)
{
    on_disk(gnndrive_fewer_requests);
}

/*
 * The shapes a share buys: on disk a group holds ids, not rows, so more
 * batches than in memory; fed (a feeder samples the batches ahead) more
 * still, since the pipeline's slots then hold none; each within the share
 * once the fixed buffers are paid, and at most STORE_HYPER_MAX_DISK_BATCHES.
 */
OC_TEST(groups_on_disk_hold_more_batches)
{
    struct fixture fx;
    if (!fixture_init(&fx, 4000, 128, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store *s = fixture_open("static", &c);
    const uint64_t mem = 4ull << 30, rows = 300000;
    struct store_hyper_shape m, d, f;
    memset(&m, 0, sizeof(m));
    memset(&d, 0, sizeof(d));
    memset(&f, 0, sizeof(f));
    d.disk = f.disk = f.fed = 1;
    uint64_t bm = store_hyper_size(s, 0.5, mem, rows, &m);
    uint64_t bd = store_hyper_size(s, 0.5, mem, rows, &d);
    uint64_t bf = store_hyper_size(s, 0.5, mem, rows, &f);
    fprintf(stderr, "  batches per group: memory %u, disk %u, disk fed %u\n", m.max_batches,
            d.max_batches, f.max_batches);
    OC_CHECK(m.max_batches < d.max_batches && d.max_batches < f.max_batches);
    OC_CHECK(f.max_batches <= STORE_HYPER_MAX_DISK_BATCHES && f.cap == f.max_batches * rows);
    OC_CHECK(bd <= mem / 2 + rows * fx.row_bytes && bf <= mem / 2 + rows * fx.row_bytes);
    OC_CHECK(bm > 0 && d.part_bytes > 0 && d.part_bytes <= mem / 2);
    oc_store_free(s);
    fixture_free(&fx);
}

/* --hyperbatch-disk alone, or with no plan directory for its files: refused naming it. */
OC_TEST(groups_on_disk_refused_without_hyperbatch_or_plan_dir)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 4000, 16, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    static const char *const names[] = {"static", "ginex", "helios", "gnndrive"};
    for (uint32_t i = 0; i < 8; i++) {
        struct oc_pipeline *p = NULL; /* a failed open cancels it: one each */
        OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
        const char *name = names[i / 2];
        struct oc_store_config c = hyper_config(&fx, name, 64u << 20, i % 2 ? 0.5 : 0, p);
        set_hyperbatch_disk(name, &c);
        c.plan_dir = NULL;
        uint32_t idx = 0;
        struct oc_store *s = NULL;
        OC_CHECK_OK(oc_store_strategy_find(name, &idx, &err), &err);
        OC_CHECK_ERR(oc_store_open(idx, &c, &s, &err), OC_ERR_ARG, &err,
                     i % 2 ? "--hyperbatch-disk stages its groups in files under the plan "
                             "directory, and this run has none"
                           : "--hyperbatch-disk stages hyperbatch groups, and there are none "
                             "without --hyperbatch F");
        oc_pipeline_free(p);
    }
    fixture_free(&fx);
}

/* ---- takes by several threads ------------------------------------------------ */

#define TK_K      4u  /* batches per group */
#define TK_ROWS   30u /* missed rows per batch, 10 of them shared with the batch before */
#define TK_GROUPS 3u  /* groups prepared: the third needs the first given back */

/* Batch b's missed rows: 20 of its own and the last 10 of batch b - 1 (deduplicated). */
static void tk_rows(uint64_t b, uint64_t *ids)
{
    for (uint64_t i = 0; i < TK_ROWS; i++)
        ids[i] = i < 10 && b ? 20 * (b - 1) + 10 + i : 20 * b + (i < 10 ? i : i - 10);
}

struct taker {
    const struct fixture *fx;
    struct store_hyper *h;
    const uint64_t *order; /* batches to take, in this order */
    uint32_t n;
    uint64_t bad, missing, failed;
};

/* Takes its batches (epoch 0), checks each batch's rows come from its group, done. */
static void *take_batches(void *p)
{
    struct taker *t = p;
    float out[TK_ROWS * 100];
    for (uint32_t k = 0; k < t->n; k++) {
        uint64_t ids[TK_ROWS];
        struct store_hyper_batch *g = NULL;
        struct oc_err err;
        tk_rows(t->order[k], ids);
        if (store_hyper_take(t->h, 0, t->order[k], &g, &err) != OC_OK) {
            t->failed++;
            continue;
        }
        for (uint64_t i = 0; i < TK_ROWS; i++) {
            const void *row = store_hyper_row(g, ids[i]);
            t->missing += row == NULL;
            if (row)
                memcpy(out + i * t->fx->dim, row, t->fx->row_bytes);
        }
        t->bad += fixture_bad_rows(t->fx, ids, TK_ROWS, out);
        t->failed += store_hyper_done(t->h, g, &err) != OC_OK;
    }
    return NULL;
}

/* A hyperbatch of TK_K batches of TK_ROWS rows, in memory or on disk under fx's plan/. */
static struct store_hyper *tk_open(const struct fixture *fx, struct oc_store *s, int disk)
{
    struct oc_err err;
    struct store_hyper *h = NULL;
    struct store_hyper_shape sh = {TK_K * TK_ROWS, TK_K, 2, TK_ROWS, disk, 1u << 20, 0};
    struct oc_store_config c;
    memset(&c, 0, sizeof(c));
    snprintf(disk_plan, sizeof(disk_plan), "%s/plan", fx->dir);
    c.plan_dir = disk_plan; /* not fed: prepared below, so no fill function */
    OC_CHECK_OK(store_hyper_open(s, &sh, &c, NULL, &h, &err), &err);
    return h;
}

/* A static store over a fresh fx whose epochs have hundreds of batches (groups close at TK_K),
   or NULL (fx freed) when it cannot be made. */
static struct oc_store *tk_store(struct fixture *fx)
{
    if (!fixture_init(fx, 2000, 100, OC_DTYPE_F32)) {
        fixture_free(fx);
        return NULL;
    }
    struct oc_store_config c = fixture_config(fx, NULL);
    c.batch_size = 1;
    return fixture_open("static", &c);
}

static void takes_out_of_order(int disk)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = tk_store(&fx);
    if (!s)
        return;
    struct store_hyper *h = tk_open(&fx, s, disk);
    /* within each group the two threads take its batches last first, interleaved; a take
       follows its batch's prepare: groups 1 and 2 first, 3 while they are taken (it waits
       for group 1 to be given back), taken once they are */
    static const uint64_t a[] = {3, 1, 7, 5, 11, 9}, b[] = {2, 0, 6, 4, 10, 8};
    struct taker ta = {&fx, h, a, 4, 0, 0, 0}, tb = {&fx, h, b, 4, 0, 0, 0};
    pthread_t th[2];
    for (uint64_t k = 0; k < TK_GROUPS * TK_K; k++) { /* prepare's side: closes at TK_K */
        uint64_t ids[TK_ROWS];
        int staged = 0;
        if (k == 2 * TK_K) {
            pthread_create(&th[0], NULL, take_batches, &ta);
            pthread_create(&th[1], NULL, take_batches, &tb);
        }
        tk_rows(k, ids);
        OC_CHECK_OK(store_hyper_begin(h, 0, k, TK_ROWS, &staged, &err), &err);
        OC_CHECK(staged);
        for (uint64_t i = 0; i < TK_ROWS; i++)
            store_hyper_add(h, store_row_of(s, ids[i]));
        OC_CHECK_OK(store_hyper_end(h, &err), &err);
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    ta.order += 4;
    tb.order += 4;
    ta.n = tb.n = 2;
    pthread_create(&th[0], NULL, take_batches, &ta);
    pthread_create(&th[1], NULL, take_batches, &tb);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    OC_CHECK(ta.failed == 0 && tb.failed == 0);
    OC_CHECK(ta.missing == 0 && tb.missing == 0);
    OC_CHECK(ta.bad == 0 && tb.bad == 0);
    struct oc_store_stats st;
    memset(&st, 0, sizeof(st));
    store_hyper_stats(h, &st);
    OC_CHECK(st.read_bytes >= TK_GROUPS * (TK_K * 20 + 10) * fx.row_bytes);
    /* on disk each batch's rows were written to its chunk: all of them, shared ones twice */
    OC_CHECK(st.plan_write_bytes == (disk ? TK_GROUPS * TK_K * TK_ROWS * fx.row_bytes : 0));
    /* a batch no group stages: never prepared, or taken already (its group given back) */
    struct store_hyper_batch *g = NULL;
    OC_CHECK_ERR(store_hyper_take(h, 0, 99, &g, &err), OC_ERR_INTERNAL, &err,
                 "epoch 0 batch 99 is not staged in a hyperbatch");
    OC_CHECK_ERR(store_hyper_take(h, 0, 3, &g, &err), OC_ERR_INTERNAL, &err,
                 "epoch 0 batch 3 is not staged");
    OC_CHECK(g == NULL);
    int staged = 0; /* one more batch, its group closed early: taken once, not twice */
    OC_CHECK_OK(store_hyper_begin(h, 0, 12, 1, &staged, &err), &err);
    store_hyper_add(h, 5);
    OC_CHECK_OK(store_hyper_end(h, &err), &err);
    OC_CHECK_OK(store_hyper_flush(h, &err), &err);
    OC_CHECK_OK(store_hyper_take(h, 0, 12, &g, &err), &err);
    struct store_hyper_batch *again = NULL;
    OC_CHECK_ERR(store_hyper_take(h, 0, 12, &again, &err), OC_ERR_INTERNAL, &err,
                 "epoch 0 batch 12 is not staged in a hyperbatch (never prepared, or taken");
    OC_CHECK(g && store_hyper_row(g, 5) && !store_hyper_row(g, 6));
    OC_CHECK_OK(store_hyper_done(h, g, &err), &err);
    oc_store_free(s); /* joins the read stage */
    store_hyper_free(h);
    fixture_free(&fx);
}

OC_TEST(takes_by_two_threads_out_of_order)
{
    takes_out_of_order(0);
}

OC_TEST(takes_by_two_threads_out_of_order_groups_on_disk)
{
    takes_out_of_order(1);
}

/*
 * Groups on disk when the disk fails: a full disk while a group is packed
 * fails its batches' takes with the error naming the group's scratch file,
 * and so does a chunk read back short (a truncated file).
 */
static void disk_group_fails(enum oc_fault_kind kind, int sys_errno, const char *want)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = tk_store(&fx);
    if (!s)
        return;
    struct store_hyper *h = tk_open(&fx, s, 1);
    if (kind == OC_FAULT_WRITE)
        oc_fault_arm_persistent(kind, 1, sys_errno); /* every write from the first on */
    for (uint64_t k = 0; k < TK_K; k++) {
        uint64_t ids[TK_ROWS];
        int staged = 0;
        tk_rows(k, ids);
        OC_CHECK_OK(store_hyper_begin(h, 0, k, TK_ROWS, &staged, &err), &err);
        for (uint64_t i = 0; i < TK_ROWS; i++)
            store_hyper_add(h, store_row_of(s, ids[i]));
        OC_CHECK_OK(store_hyper_end(h, &err), &err);
    }
    struct store_hyper_batch *g = NULL;
    if (kind == OC_FAULT_READ) { /* the group packs; its first batch's chunk reads short */
        struct store_hyper_batch *first = NULL;
        OC_CHECK_OK(store_hyper_take(h, 0, 0, &first, &err), &err);
        OC_CHECK_OK(store_hyper_done(h, first, &err), &err);
        oc_fault_arm(kind, 1, sys_errno);
    }
    int rc = store_hyper_take(h, 0, 1, &g, &err);
    oc_fault_disarm_all();
    OC_CHECK(rc != OC_OK && g == NULL);
    OC_CHECK(strstr(err.msg, "unlinked scratch") != NULL);
    OC_CHECK(strstr(err.msg, want) != NULL);
    if (rc == OC_OK || !strstr(err.msg, want))
        fprintf(stderr, "  got: %s\n", err.msg);
    oc_store_free(s);
    store_hyper_free(h);
    fixture_free(&fx);
}

OC_TEST(groups_on_disk_full_disk_names_the_file)
{
    disk_group_fails(OC_FAULT_WRITE, ENOSPC, "No space left");
}

OC_TEST(groups_on_disk_short_read_names_the_file)
{
    disk_group_fails(OC_FAULT_READ, 0, "truncated");
}

OC_TEST(helios_refuses_groups_that_do_not_fit)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 40000, 100, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct run r;
    uint64_t mem = 3 * fixture_fixed_bytes(&fx);
    OC_CHECK_OK(run_store(&fx, "helios", mem, 0, 1, &r, NULL), NULL);
    OC_CHECK_ERR(run_store(&fx, "helios", mem, 0.9, 1, &r, &err), OC_ERR_BUDGET, &err,
                 "two hyperbatch groups");
    OC_CHECK_ERR(oc_store_opt_apply(helios_hyperbatch(), 1.0, NULL, &err), OC_ERR_ARG, &err,
                 "--hyperbatch must be a number from 0 to 0.9");
    fixture_free(&fx);
}

/* A share out of range; a budget that holds ginex but not its two groups besides. */
OC_TEST(ginex_refuses_bad_hyperbatch)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 40000, 100, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    fixture_opt(&c, "superbatch", GX_S);
    OC_CHECK_ERR(oc_store_opt_set(&c, "hyperbatch", 0.95, &err), OC_ERR_ARG, &err,
                 "--hyperbatch must be a number from 0 to 0.9");
    OC_CHECK_ERR(oc_store_opt_set(&c, "hyperbatch", -0.1, &err), OC_ERR_ARG, &err,
                 "--hyperbatch must be a number from 0 to 0.9");
    /* the smallest budget plain ginex opens with; its groups at a share of 0.9 do not fit */
    struct oc_pipeline *p = NULL;
    OC_CHECK_OK(oc_pipeline_new("sizing", &p, &err), &err);
    struct oc_store_config cp = hyper_config(&fx, "ginex", 0, 0, p);
    uint64_t least = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&cp, 1, &least, &err), &err);
    oc_pipeline_free(p);
    struct run r;
    OC_CHECK_OK(run_store(&fx, "ginex", least, 0, 1, &r, NULL), NULL);
    OC_CHECK_ERR(run_store(&fx, "ginex", least, 0.9, 1, &r, &err), OC_ERR_BUDGET, &err,
                 "two hyperbatch groups");
    fixture_free(&fx);
}

OC_TEST_MAIN()
