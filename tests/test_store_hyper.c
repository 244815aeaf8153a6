/*
 * test_store_hyper.c — hyperbatches at the store (static --hyperbatch,
 * store/hyper.c) through the batch pipeline: every gathered row equals the
 * file's, and with the same cached rows as a plain `static` store the
 * groups' block passes read the same misses in fewer requests (each page
 * once per group instead of once per batch, neighbours merged).
 *
 * Place in the data flow: tests (store + batch pipeline on a generated dataset).
 * Thread-safety: single-threaded test code; the pipeline runs its own threads.
 */
#include <stdlib.h>

#include "offcore/pipeline.h"
#include "store/static/static_int.h"
#include "store_fixture.h"

struct run {
    uint64_t n_cached, n_reads, read_bytes, bad, rows;
};

/*
 * Opens static over fx with budget mem (hyperbatch share: 0 = plain) on its own
 * pipeline, runs two epochs of the plan through the batch pipeline, and fills r.
 * Only the cache size when `count_only`.
 */
static int run_static(const struct fixture *fx, uint64_t mem, double share, int count_only,
                      struct run *r)
{
    struct oc_err err;
    struct oc_pipeline *p = NULL;
    struct oc_batch_pipe *bp = NULL;
    memset(r, 0, sizeof(*r));
    OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
    struct oc_store_config c = fixture_config(fx, NULL);
    c.mem_bytes = mem;
    fixture_opt(&c, "hyperbatch", share);
    c.pipeline = p;
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find("static", &idx, &err), &err);
    int rc = oc_store_open(idx, &c, &s, &err);
    if (rc) {
        oc_pipeline_free(p);
        return rc;
    }
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
    }
    oc_pipeline_free(p); /* joins the stages before the pipe and the store go */
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    return OC_OK;
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
    fprintf(stderr,
            "  %s: %llu rows cached (plain %llu); hyperbatches %llu reads, %llu bytes; plain "
            "%llu reads, %llu bytes\n",
            dtype == OC_DTYPE_F16 ? "f16" : "f32", (unsigned long long)h.n_cached,
            (unsigned long long)p.n_cached, (unsigned long long)h.n_reads,
            (unsigned long long)h.read_bytes, (unsigned long long)p.n_reads,
            (unsigned long long)p.read_bytes);
    OC_CHECK(h.bad == 0 && p.bad == 0);
    OC_CHECK(h.rows > 0 && h.rows == p.rows);
    OC_CHECK(p.n_cached == h.n_cached && h.n_cached > 0);
    OC_CHECK(h.n_reads > 0 && h.n_reads < p.n_reads);
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

OC_TEST_MAIN()
