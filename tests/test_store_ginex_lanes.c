/*
 * test_store_ginex_lanes.c — the `ginex` executor on two gather lanes, as the
 * batch pipeline drives it: two threads gather alternate batches at once and
 * every row is the file's, the executor misses exactly what its plan
 * predicted, evaluation gathers between them stay right, a lane waiting for
 * its turn wakes with the pipeline's error when the pipeline is cancelled,
 * and a budget too small for a second lane's reader gives one lane.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → store).
 * Thread-safety: two test threads gather on lanes 0 and 1 (one call per lane
 * at a time, as store.h asks); the rest runs on the main thread.
 * Ownership: every store, pool, pipeline, trace and fixture is freed by the
 * test that made it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ginex_util.h"
#include "harness.h"
#include "offcore/pipeline.h"

#define MIB (1024ull * 1024ull)

/* A config for epochs [0, 2) whose budget gives `lanes` lanes (the smallest such, in MiB steps). */
static struct oc_store_config lanes_config(const struct fixture *fx, struct oc_pool *pool,
                                           uint32_t lanes)
{
    struct oc_err err;
    struct oc_store_config c = fixture_config(fx, pool);
    c.n_epochs = 2;
    c.lanes = lanes;
    uint64_t b = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 500, &b, &err), &err);
    for (c.mem_bytes = b; c.mem_bytes < b + 128 * MIB; c.mem_bytes += MIB) {
        struct oc_store *s = fixture_open("ginex", &c);
        uint32_t got = s ? oc_store_gather_lanes(s) : 0;
        oc_store_free(s);
        if (got == lanes)
            return c;
    }
    OC_CHECK(!"no budget below 128 MiB more gives the lanes");
    return c;
}

struct lane_job {
    const struct fixture *fx;
    struct oc_store *s;
    const struct trace *t;
    uint64_t nb, first, step; /* batches first, first + step, ... of the trace */
    uint32_t lane;
    float *out;
    uint64_t bad;
    int rc;
    struct oc_err err;
    uint64_t end;           /* stop before this batch of the trace (0: its end) */
    _Atomic uint64_t *done; /* batches gathered, counted when set */
};

/* Gathers batches first, first + step, ... of the trace on its lane. */
static void *gather_lane(void *arg)
{
    struct lane_job *j = arg;
    uint64_t end = j->end ? j->end : j->t->n_iters;
    for (uint64_t i = j->first; i < end && j->rc == OC_OK; i += j->step) {
        const uint64_t *ids = j->t->ids + j->t->off[i];
        uint64_t n = j->t->off[i + 1] - j->t->off[i];
        j->rc = oc_store_gather_batch_lane(j->s, j->lane, i / j->nb, i % j->nb, ids, n, j->out,
                                           &j->err);
        if (j->rc == OC_OK)
            j->bad += fixture_bad_rows(j->fx, ids, n, j->out);
        if (j->done)
            atomic_fetch_add(j->done, 1);
    }
    return NULL;
}

static uint64_t max_batch(const struct trace *t)
{
    uint64_t m = 0;
    for (uint64_t i = 0; i < t->n_iters; i++)
        if (t->off[i + 1] - t->off[i] > m)
            m = t->off[i + 1] - t->off[i];
    return m;
}

/* Runs two lanes over batches [from, to) of the trace (lane l: from + l, from + l + 2, ...). */
static void run_lanes(struct lane_job jobs[2], pthread_t th[2], const struct fixture *fx,
                      struct oc_store *s, const struct trace *t, uint64_t from, uint64_t to,
                      float *outs[2], _Atomic uint64_t *done)
{
    for (uint32_t l = 0; l < 2; l++) {
        jobs[l] = (struct lane_job){fx,  s,  t,   t->n_iters / 2, from + l, 2, l, outs[l], 0, OC_OK,
                                    {0}, to, done};
        OC_CHECK(pthread_create(&th[l], NULL, gather_lane, &jobs[l]) == 0);
    }
}

static uint64_t join_lanes(struct lane_job jobs[2], pthread_t th[2])
{
    uint64_t bad = 0;
    for (uint32_t l = 0; l < 2; l++) {
        pthread_join(th[l], NULL);
        OC_CHECK_OK(jobs[l].rc, &jobs[l].err);
        bad += jobs[l].bad;
    }
    return bad;
}

OC_TEST(two_lanes_gather_at_once_as_the_plan_says)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 6000, 1024, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    struct oc_store_config c = lanes_config(&fx, pool, 2);
    struct oc_store *s = fixture_open("ginex", &c);
    struct trace t = sampled_trace(&fx, 0, 2);
    if (s) {
        OC_CHECK(oc_store_gather_lanes(s) == 2);
        OC_CHECK(oc_store_ginex_capacity(s) < fx.n_nodes); /* rows are evicted and inserted */
        struct lane_job jobs[2];
        pthread_t th[2];
        float *outs[2];
        for (uint32_t l = 0; l < 2; l++)
            outs[l] = malloc(max_batch(&t) * fx.dim * sizeof(float));
        run_lanes(jobs, th, &fx, s, &t, 0, t.n_iters, outs, NULL);
        OC_CHECK(join_lanes(jobs, th) == 0);
        for (uint32_t l = 0; l < 2; l++)
            free(outs[l]);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.trace_accesses == t.n_acc && st.requested_rows == t.n_acc);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] == st.belady_misses);
        OC_CHECK(st.belady_misses > 0 && st.belady_misses < st.trace_accesses);
        /* after the plan, an evaluation gather through the cache */
        uint64_t ids[64];
        float *rows = malloc(64 * fx.dim * sizeof(float));
        for (uint64_t k = 0; k < 64; k++)
            ids[k] = (k * 977) % fx.n_nodes;
        OC_CHECK_OK(oc_store_gather(s, ids, 64, rows, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, ids, 64, rows) == 0);
        free(rows);
    }
    oc_store_free(s);
    trace_free(&t);
    oc_pool_free(pool);
    fixture_free(&fx);
}

/*
 * While two lanes gather, a request past the budget that nothing else can
 * give takes cache slots (the give-back waits for the executor to be quiet);
 * the batches after it miss more than the plan says and every row stays
 * right; once freed, the next planned batch takes the slots back.
 */
OC_TEST(cache_gives_slots_back_while_lanes_gather)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 6000, 1024, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    struct oc_store_config c = lanes_config(&fx, pool, 2);
    struct oc_store *s = fixture_open("ginex", &c);
    struct trace t = sampled_trace(&fx, 0, 2);
    uint64_t used0 = oc_mem_used();
    if (s && t.n_iters >= 8) {
        struct lane_job jobs[2];
        pthread_t th[2];
        float *outs[2];
        _Atomic uint64_t done = 0;
        for (uint32_t l = 0; l < 2; l++)
            outs[l] = malloc(max_batch(&t) * fx.dim * sizeof(float));
        uint64_t nb = t.n_iters / 2, mid = nb + nb / 2;
        /* epoch 0: the lanes' scratch grows to its batches */
        run_lanes(jobs, th, &fx, s, &t, 0, nb, outs, NULL);
        uint64_t bad = join_lanes(jobs, th);
        /* the first half of epoch 1, with a request past a budget at what is held */
        run_lanes(jobs, th, &fx, s, &t, nb, mid, outs, &done);
        while (atomic_load(&done) < 2)
            usleep(100);
        uint64_t budget = oc_mem_used() + 1000;
        oc_mem_set_budget(budget);
        void *big = oc_alloc(1000 + 10 * fx.row_bytes, "a larger batch", &err);
        OC_CHECK(big != NULL && oc_mem_used() <= budget);
        bad += join_lanes(jobs, th);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes >= 10 * fx.row_bytes);
        /* freed: the next planned batch takes the slots back */
        oc_free(big);
        oc_mem_set_budget(0);
        run_lanes(jobs, th, &fx, s, &t, mid, t.n_iters, outs, NULL);
        bad += join_lanes(jobs, th);
        OC_CHECK(bad == 0);
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes == 0);
        OC_CHECK(st.trace_accesses == t.n_acc);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] > st.belady_misses); /* slots were missing */
        for (uint32_t l = 0; l < 2; l++)
            free(outs[l]);
    }
    oc_mem_set_budget(0);
    oc_store_free(s);
    OC_CHECK(oc_mem_used() < used0); /* the store's rows went back whole */
    trace_free(&t);
    oc_pool_free(pool);
    fixture_free(&fx);
}

/*
 * Batch 2 on lane 1 waits for batch 1's turn, which never comes: failing the
 * pipeline (another stage's error, as in training) wakes it with that error.
 */
OC_TEST(a_lane_waiting_for_its_turn_wakes_on_cancel)
{
    struct fixture fx;
    struct oc_pipeline *p = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 6000, 1024, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pipeline_new("training pipeline", &p, &err), &err);
    struct oc_store_config c = lanes_config(&fx, NULL, 2);
    c.pipeline = p;
    struct oc_store *s = fixture_open("ginex", &c);
    struct trace t = sampled_trace(&fx, 0, 2);
    if (s) {
        /* batch 2 alone, on lane 1 */
        struct lane_job j = {&fx,  s, &t,    t.n_iters / 2, 2, t.n_iters, 1,
                             NULL, 0, OC_OK, {0},           0, NULL};
        j.out = malloc(max_batch(&t) * fx.dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather_batch_lane(s, 0, 0, 0, t.ids, t.off[1], j.out, &err), &err);
        pthread_t th;
        OC_CHECK(pthread_create(&th, NULL, gather_lane, &j) == 0);
        usleep(100 * 1000);
        struct oc_err why;
        OC_ERR(&why, OC_ERR_IO, "fetch stage: a read failed");
        oc_pipeline_fail(p, &why);
        pthread_join(th, NULL);
        OC_CHECK_ERR(j.rc, OC_ERR_IO, &j.err, "a read failed");
        free(j.out);
    }
    oc_pipeline_free(p);
    oc_store_free(s);
    trace_free(&t);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* At the smallest budget a second lane's reader does not fit: one lane, the plan as before. */
OC_TEST(small_budget_gives_one_lane)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 64, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    c.n_epochs = 1;
    c.lanes = 2;
    uint64_t b = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 1, &b, &err), &err);
    c.mem_bytes = b;
    struct oc_store *s = fixture_open("ginex", &c);
    if (s)
        OC_CHECK(oc_store_gather_lanes(s) == 1);
    oc_store_free(s);
    fixture_free(&fx);
}

/*
 * An explicit superbatch whose accesses stay in RAM (no plan directory) and
 * two lanes asked for: at every budget from the smallest up the store opens,
 * and its cache and what it holds fit the budget, with one lane or two.
 */
OC_TEST(every_budget_from_the_smallest_opens_with_lanes)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 64, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    c.n_epochs = 100;
    c.lanes = 2;
    fixture_opt(&c, "superbatch", 100000); /* every epoch: its accesses outweigh a lane's reader */
    c.plan_dir = NULL;
    uint64_t b = 0, opened = 0, two = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 1, &b, &err), &err);
    for (uint64_t m = b; m < b + 8 * MIB; m += 128 * 1024) {
        c.mem_bytes = m;
        struct oc_store *s = fixture_open("ginex", &c);
        OC_CHECK(s != NULL);
        if (!s)
            break;
        opened++;
        two += oc_store_gather_lanes(s) == 2;
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(oc_store_ginex_capacity(s) * fx.row_bytes < m && st.held_bytes <= m);
        oc_store_free(s);
    }
    fprintf(stderr, "  %llu budgets opened, %llu with two lanes\n", (unsigned long long)opened,
            (unsigned long long)two);
    OC_CHECK(two > 0);
    fixture_free(&fx);
}

OC_TEST_MAIN()
