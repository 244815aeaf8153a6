/*
 * test_store_hyper.c — hyperbatches at the store (static, ginex and helios
 * --hyperbatch, store/hyper.c) through the batch pipeline: every gathered
 * row equals the file's, and with the same cached rows as a plain store of
 * the same strategy the groups' block passes read the same misses in fewer
 * requests (each page once per group instead of once per batch, neighbours
 * merged); a share out of range, or one whose groups do not fit the budget,
 * is refused naming it.
 *
 * Place in the data flow: tests (store + batch pipeline on a generated dataset).
 * Thread-safety: single-threaded test code; the pipeline runs its own threads.
 */
#include <stdlib.h>

#include "offcore/pipeline.h"
#include "store/ginex/ginex_int.h"
#include "store/helios/helios_int.h"
#include "store/static/static_int.h"
#include "store_fixture.h"

struct run {
    uint64_t n_cached, n_reads, read_bytes, requested, bad, rows;
};

#define GX_S 16u /* ginex's superbatch in these tests */

/* helios's --hyperbatch (static declares the name first). */
static const struct oc_store_opt *helios_hyperbatch(void)
{
    uint32_t i = 0;
    const struct oc_store_opt *opt = NULL;
    OC_CHECK_OK(oc_store_strategy_find("helios", &i, NULL), NULL);
    OC_CHECK(oc_store_opt_find_in(i, "hyperbatch", &opt) == OC_OK);
    return opt;
}

/* A config of `strategy` over fx's two epochs with budget mem and hyperbatch share (0: none). */
static struct oc_store_config hyper_config(const struct fixture *fx, const char *strategy,
                                           uint64_t mem, double share, struct oc_pipeline *p)
{
    struct oc_store_config c = fixture_config(fx, NULL);
    c.mem_bytes = mem;
    c.pipeline = p;
    if (strcmp(strategy, "ginex") == 0) {
        c.n_epochs = 2;
        fixture_opt(&c, "superbatch", GX_S); /* first: the config holds ginex's options */
        if (share > 0)
            fixture_opt(&c, "hyperbatch", share);
    } else if (strcmp(strategy, "helios") == 0) {
        c.n_epochs = 2;
        if (share > 0)
            OC_CHECK_OK(oc_store_opt_apply(helios_hyperbatch(), share, &c, NULL), NULL);
    } else {
        fixture_opt(&c, "hyperbatch", share);
    }
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
    else
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
    uint64_t mem = feat / 2 + 12 * fixture_fixed_bytes(&fx);
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

/* A budget helios opens with but whose hyperbatch groups at 0.9 of it do not fit. */
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
