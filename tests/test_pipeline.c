/*
 * test_pipeline.c — the stage abstraction (first-wins error, cancellation
 * that unblocks every wait, clean join, busy time) and the batch pipeline
 * (every batch sampled exactly once, equal to the sampler's batch, features
 * equal to the file's, errors naming the batch, allocation faults ending
 * cleanly with no leak and no hang) over every registered strategy.
 *
 * Place in the data flow: tests (generate → dataset → store → pipeline).
 * Thread-safety: the stages run threads; checks run on the test's thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "fault_util.h"
#include "offcore/batch_pipe.h"
#include "store/static/static_int.h"
#include "store_fixture.h"

/* ---- stages --------------------------------------------------------------- */

struct chain {
    struct oc_queue *mid, *out;
    atomic_int n_seen;
    int fail_at; /* item value that fails (-1: none) */
};

static int pass_on(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct chain *c = ctx;
    atomic_fetch_add(&c->n_seen, 1);
    if ((int)(intptr_t)item == c->fail_at)
        return OC_ERR(err, OC_ERR_IO, "item %d failed", c->fail_at);
    return oc_stage_push(st, c->mid, item);
}

static int finish(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct chain *c = ctx;
    (void)err;
    return oc_stage_push(st, c->out, item);
}

OC_TEST(stages_pass_items_in_order_and_join)
{
    struct oc_err err;
    struct oc_pipeline *p;
    struct oc_queue *in;
    struct oc_stage *a, *b;
    struct chain c = {.fail_at = -1};
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pipeline_new("test", &p, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 4, &in, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 2, &c.mid, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 64, &c.out, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "first", 1, in, pass_on, &c, &a, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "second", 1, c.mid, finish, &c, &b, &err), &err);
    OC_CHECK_ERR(oc_pipeline_stage(p, "bad", 0, in, finish, &c, NULL, &err), OC_ERR_ARG, &err,
                 "needs threads");
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err);
    for (intptr_t i = 1; i <= 50; i++)
        OC_CHECK(oc_queue_push(in, (void *)i) == OC_OK);
    for (intptr_t i = 1; i <= 50; i++) {
        void *got;
        OC_CHECK(oc_queue_pop(c.out, &got) == OC_OK);
        OC_CHECK((intptr_t)got == i); /* one thread per stage keeps the order */
    }
    OC_CHECK(oc_pipeline_status(p, &err) == OC_OK);
    OC_CHECK(oc_stage_busy_s(a) >= 0.0 && strcmp(oc_stage_name(b), "second") == 0);
    oc_pipeline_free(p);
    OC_CHECK(oc_mem_n_live() == live);
}

OC_TEST(first_error_wins_and_unblocks_every_wait)
{
    struct oc_err err;
    struct oc_pipeline *p;
    struct oc_queue *in;
    struct chain c = {.fail_at = 3};
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pipeline_new("test", &p, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 8, &in, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &c.mid, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &c.out, &err), &err);
    /* two threads in the first stage: item 3 fails while the other blocks on a full queue */
    OC_CHECK_OK(oc_pipeline_stage(p, "first", 2, in, pass_on, &c, NULL, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "second", 1, c.mid, finish, &c, NULL, &err), &err);
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err);
    /* items up to 3 go in before anything can fail; item 3's failure may close the queue
       before the later pushes (a slow main thread, e.g. under TSan): they are then refused */
    for (intptr_t i = 1; i <= 8; i++) {
        int rc = oc_queue_push(in, (void *)i);
        OC_CHECK(rc == OC_OK || (i > 3 && rc == OC_ERR_CANCELLED));
    }
    /* the consumer never pops c.out: only the failure can unblock the stages */
    while (oc_pipeline_status(p, NULL) == OC_OK)
        usleep(1000);
    OC_CHECK_ERR(oc_pipeline_status(p, &err), OC_ERR_IO, &err, "first stage: item 3 failed");
    struct oc_err other;
    OC_ERR(&other, OC_ERR_FORMAT, "a later error");
    oc_pipeline_fail(p, &other); /* loses to the first */
    OC_CHECK_ERR(oc_pipeline_status(p, &err), OC_ERR_IO, &err, "item 3");
    void *got;
    OC_CHECK(oc_queue_push(in, (void *)9) == OC_ERR_CANCELLED);
    while (oc_queue_try_pop(c.out, &got) == OC_OK)
        ;
    OC_CHECK(oc_queue_pop(c.out, &got) == OC_ERR_CANCELLED);
    oc_pipeline_free(p); /* joins: would hang if a thread stayed blocked */
    OC_CHECK(oc_mem_n_live() == live);
}

/* A stage waiting on a condition variable of its own, woken by a cancel hook. */
struct cv_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, n_hook_calls;
};

static void wake_waiters(void *ctx)
{
    struct cv_wait *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    w->n_hook_calls++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int wait_for_stop(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct cv_wait *w = ctx;
    (void)st, (void)item, (void)err;
    pthread_mutex_lock(&w->mu);
    while (!w->stop)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return OC_ERR_CANCELLED;
}

OC_TEST(stage_added_after_start_runs_and_cancel_hook_wakes_it_once)
{
    struct oc_err err;
    struct oc_pipeline *p;
    struct oc_queue *in, *late_in;
    struct chain c = {.fail_at = -1};
    struct cv_wait w = {.stop = 0};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pipeline_new("test", &p, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 2, &in, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 2, &c.mid, &err), &err);
    OC_CHECK_OK(oc_pipeline_on_cancel(p, wake_waiters, &w, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "waits", 1, in, wait_for_stop, &w, NULL, &err), &err);
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err);
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err); /* idempotent: no second thread */
    /* a stage added to the running pipeline starts at once */
    OC_CHECK_OK(oc_pipeline_queue(p, 2, &late_in, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "late", 1, late_in, pass_on, &c, NULL, &err), &err);
    OC_CHECK(oc_queue_push(late_in, (void *)7) == OC_OK);
    void *got;
    OC_CHECK(oc_queue_pop(c.mid, &got) == OC_OK && (intptr_t)got == 7);
    OC_CHECK(oc_queue_push(in, (void *)1) == OC_OK); /* the waiting stage blocks on its cv */
    OC_CHECK(!oc_pipeline_cancelled(p));
    oc_pipeline_cancel(p);
    oc_pipeline_cancel(p);
    OC_CHECK(oc_pipeline_cancelled(p));
    OC_CHECK(w.n_hook_calls == 1);
    /* a hook added after the cancel runs at once; a queue added then is closed */
    OC_CHECK_OK(oc_pipeline_on_cancel(p, wake_waiters, &w, &err), &err);
    OC_CHECK(w.n_hook_calls == 2);
    struct oc_queue *after;
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &after, &err), &err);
    OC_CHECK(oc_queue_push(after, (void *)1) == OC_ERR_CANCELLED);
    oc_pipeline_free(p); /* joins: would hang without the hook */
    OC_CHECK(w.n_hook_calls == 2);
    OC_CHECK(oc_mem_n_live() == live);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}

OC_TEST(cancel_without_error)
{
    struct oc_err err;
    struct oc_pipeline *p;
    struct oc_queue *in;
    struct chain c = {.fail_at = -1};
    OC_CHECK_OK(oc_pipeline_new("test", &p, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 2, &in, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &c.mid, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "first", 1, in, pass_on, &c, NULL, &err), &err);
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err);
    OC_CHECK(oc_queue_push(in, (void *)1) == OC_OK);
    OC_CHECK(oc_queue_push(in, (void *)2) == OC_OK); /* blocks the stage: mid holds one */
    oc_pipeline_cancel(p);
    OC_CHECK_ERR(oc_pipeline_status(p, &err), OC_ERR_CANCELLED, &err, "cancelled");
    oc_pipeline_free(p);
}

/* Task t of a pool job: records which worker ran it. */
static int note_worker(void *ctx, uint64_t t, unsigned worker)
{
    unsigned *by = ctx;
    by[t] = worker + 1;
    return OC_OK;
}

struct pool_stage {
    struct oc_pool *pool;
    struct oc_queue *out;
    unsigned by[8];
    int rc;
};

/* A stage fanning one job out on the pool the pipeline made for it. */
static int fan_out(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    (void)err;
    struct pool_stage *ps = ctx;
    ps->rc = oc_pool_run(ps->pool, 8, note_worker, ps->by);
    return oc_stage_push(st, ps->out, item);
}

/*
 * A pipeline owns the pools its stages fan out on: a stage's tasks run on
 * the pool's workers (task t on worker t % n), the pool lives until the
 * pipeline is freed (no leak), and a fifth pool is refused by name.
 */
OC_TEST(pipeline_owns_the_pools_its_stages_fan_out_on)
{
    struct oc_err err;
    struct oc_pipeline *p;
    struct oc_queue *in;
    struct pool_stage ps;
    memset(&ps, 0, sizeof(ps));
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_pipeline_new("pools", &p, &err), &err);
    OC_CHECK_OK(oc_pipeline_pool(p, 4, &ps.pool, &err), &err);
    OC_CHECK(ps.pool != NULL && oc_pool_n_threads(ps.pool) == 4);
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &in, &err), &err);
    OC_CHECK_OK(oc_pipeline_queue(p, 1, &ps.out, &err), &err);
    OC_CHECK_OK(oc_pipeline_stage(p, "fan", 1, in, fan_out, &ps, NULL, &err), &err);
    OC_CHECK_OK(oc_pipeline_start(p, &err), &err);
    OC_CHECK(oc_queue_push(in, (void *)1) == OC_OK);
    void *done = NULL;
    OC_CHECK(oc_queue_pop(ps.out, &done) == OC_OK && done == (void *)1); /* the job ran */
    oc_pipeline_join(p);
    OC_CHECK(ps.rc == OC_OK);
    for (unsigned t = 0; t < 8; t++)
        OC_CHECK(ps.by[t] == t % 4 + 1);
    struct oc_pool *more;
    for (int k = 0; k < 3; k++)
        OC_CHECK_OK(oc_pipeline_pool(p, 1, &more, &err), &err);
    OC_CHECK_ERR(oc_pipeline_pool(p, 1, &more, &err), OC_ERR_INTERNAL, &err, "pools: more than 4");
    OC_CHECK(more == NULL);
    oc_pipeline_free(p);
    OC_CHECK(oc_mem_n_live() == live);
}

/* ---- the batch pipeline --------------------------------------------------------- */

static struct oc_store_config store_cfg(const struct fixture *fx, struct oc_pool *pool)
{
    struct oc_store_config c;
    memset(&c, 0, sizeof(c));
    c.ds = fx->ds;
    c.graph = &fx->g;
    c.pool = pool;
    c.sample_opts = &fx->so;
    c.train_ids = fx->train;
    c.n_train = fx->n_train;
    c.batch_size = fx->batch_size;
    c.first_epoch = 0;
    c.n_epochs = 2;
    return c;
}

static struct oc_batch_pipe_config pipe_cfg(const struct fixture *fx, struct oc_store *s,
                                            struct oc_pool *pool, uint32_t depth)
{
    struct oc_batch_pipe_config c;
    memset(&c, 0, sizeof(c));
    c.store = s;
    c.graph = &fx->g;
    c.sample = &fx->so;
    c.pool = pool;
    c.train_ids = fx->train;
    c.n_train = fx->n_train;
    c.batch_size = fx->batch_size;
    c.depth = depth;
    return c;
}

/*
 * Runs two epochs of strategy `index` through the pipeline; checks every
 * batch against a fresh sampler's and its rows against the file. Returns
 * the rows that differ.
 */
static uint64_t run_strategy(const struct fixture *fx, uint32_t index, uint32_t depth,
                             struct oc_pool *pool)
{
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_batch_pipe *bp = NULL;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch want;
    uint64_t bad = 0;
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&want);
    struct oc_store_config sc = store_cfg(fx, pool);
    char plan[800];
    snprintf(plan, sizeof(plan), "%s/plan", fx->dir);
    sc.plan_dir = plan;
    sc.lanes = depth; /* as train asks: direct and static gather depth batches at once */
    OC_CHECK_OK(oc_store_open(index, &sc, &s, &err), &err);
    struct oc_batch_pipe_config pc = pipe_cfg(fx, s, pool, depth);
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx->train, fx->n_train, fx->batch_size, 0, &err), &err);
    if (!s || !bp || !sm)
        goto out;
    uint64_t nb = oc_batch_pipe_n_batches(bp);
    for (uint64_t e = 0; e < 2; e++) {
        uint8_t *seen = calloc(nb, 1);
        if (e == 0) /* later epochs were started ahead, before the evaluation gather */
            OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
        OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
        oc_sample_epoch_shuffle(&ep, fx->so.seed, e);
        for (uint64_t i = 0; i < nb; i++) {
            struct oc_pipe_batch *pb;
            OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
            if (!pb)
                break;
            OC_CHECK(pb->epoch == e && pb->index < nb && !seen[pb->index]);
            OC_CHECK(pb->pos == i); /* in plan order, whichever lane finished first */
            seen[pb->index] = 1;
            const uint64_t *seeds;
            uint64_t n_seeds;
            OC_CHECK_OK(oc_sample_epoch_batch(&ep, pb->index, &seeds, &n_seeds, &err), &err);
            OC_CHECK_OK(oc_sample_neighbors(sm, e, pb->index, seeds, n_seeds, &want, &err), &err);
            OC_CHECK(oc_sample_batch_equal(&pb->batch, &want));
            for (uint64_t r = 0; r < pb->batch.n_input; r++)
                bad += memcmp(pb->x + r * fx->dim, fx->ref + pb->batch.input_ids[r] * fx->dim,
                              fx->dim * sizeof(float)) != 0;
            oc_batch_pipe_done(bp, pb);
        }
        struct oc_pipe_batch *none;
        OC_CHECK_ERR(oc_batch_pipe_next(bp, &none, &err), OC_ERR_NOTFOUND, &err, "handed out");
        free(seen);
        /* the next epoch is sampled ahead while the store serves an evaluation gather */
        if (e == 0)
            OC_CHECK_OK(oc_batch_pipe_epoch(bp, 1, &err), &err);
        uint64_t ids[3] = {0, fx->n_nodes - 1, 5};
        float rows[3 * 64];
        OC_CHECK_OK(oc_store_gather(s, ids, 3, rows, &err), &err);
    }
    struct oc_batch_pipe_stats st;
    oc_batch_pipe_stats(bp, &st);
    OC_CHECK(st.n_sampled == 2 * nb); /* exactly once per batch per epoch */
    OC_CHECK(st.n_fetched == 2 * nb);
    /* direct, static and ginex keep a reader per lane, mmap needs none: depth batches at once */
    const char *name = oc_store_name(s);
    int laned = !strcmp(name, "direct") || !strcmp(name, "static") || !strcmp(name, "mmap") ||
                !strcmp(name, "ginex");
    OC_CHECK(st.lanes == (laned ? depth : 1));
    OC_CHECK(oc_store_gather_lanes(s) == (laned ? depth : 1));
    /* a store with offline batches hands them over in the fetch stage: nothing to sample */
    OC_CHECK(st.wait_s >= 0.0 && st.fetch_busy_s > 0.0);
    OC_CHECK(oc_store_caps(s)->batches ? st.sample_busy_s == 0.0 : st.sample_busy_s > 0.0);
out:
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    oc_sample_batch_deinit(&want);
    if (ep.orig)
        oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    return bad;
}

static int fixture_for_pipe(struct fixture *fx)
{
    if (!fixture_init(fx, 3000, 48, OC_DTYPE_F32))
        return 0;
    fx->batch_size = 64;
    return 1;
}

OC_TEST(every_strategy_through_the_pipeline)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_pool *pool = NULL;
    if (!fixture_for_pipe(&fx))
        return;
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    uint64_t live = oc_mem_n_live();
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++)
        for (uint32_t depth = 1; depth <= 3; depth += 2) {
            uint64_t bad = run_strategy(&fx, i, depth, pool);
            if (bad)
                fprintf(stderr, "strategy %s depth %u: %" PRIu64 " rows differ\n",
                        oc_store_strategy_name(i), depth, bad);
            OC_CHECK(bad == 0);
        }
    OC_CHECK(oc_mem_n_live() == live);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(bad_config_and_out_of_order_epochs)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_batch_pipe *bp = NULL;
    if (!fixture_for_pipe(&fx))
        return;
    struct oc_store_config sc = store_cfg(&fx, NULL);
    OC_CHECK_OK(oc_store_open(0, &sc, &s, &err), &err);
    struct oc_batch_pipe_config pc = pipe_cfg(&fx, s, NULL, 0);
    OC_CHECK_ERR(oc_batch_pipe_new(&pc, &bp, &err), OC_ERR_ARG, &err, "depth");
    pc.depth = 1;
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    struct oc_pipe_batch *pb;
    OC_CHECK_ERR(oc_batch_pipe_next(bp, &pb, &err), OC_ERR_NOTFOUND, &err, NULL);
    OC_CHECK_OK(oc_batch_pipe_epoch(bp, 0, &err), &err);
    OC_CHECK_ERR(oc_batch_pipe_next(bp, &pb, &err), OC_ERR_ARG, &err, "not opened");
    OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
    OC_CHECK_ERR(oc_batch_pipe_open(bp, &err), OC_ERR_ARG, &err, "no epoch to open");
    OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
    oc_batch_pipe_done(bp, pb);
    OC_CHECK_ERR(oc_batch_pipe_epoch(bp, 1, &err), OC_ERR_ARG, &err, "not taken");
    oc_batch_pipe_free(bp); /* mid-epoch: cancels and joins */
    oc_store_free(s);
    fixture_free(&fx);
}

/* Runs epochs [0, n_epochs) through bp, taking and returning every batch; the first error. */
static int drain_epochs(struct oc_batch_pipe *bp, uint64_t n_epochs, struct oc_err *err)
{
    int rc = OC_OK;
    for (uint64_t e = 0; rc == OC_OK && e < n_epochs; e++) {
        rc = oc_batch_pipe_epoch(bp, e, err);
        if (rc == OC_OK)
            rc = oc_batch_pipe_open(bp, err);
        for (uint64_t i = 0; rc == OC_OK && i < oc_batch_pipe_n_batches(bp); i++) {
            struct oc_pipe_batch *pb;
            rc = oc_batch_pipe_next(bp, &pb, err);
            if (rc == OC_OK)
                oc_batch_pipe_done(bp, pb);
        }
    }
    return rc;
}

/*
 * A row buffer is lent between epochs only (evaluation gathers into it),
 * may be grown by the borrower, and must come back before the next open;
 * the next epoch then trains from it as before.
 */
OC_TEST(row_buffer_lent_between_epochs)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_batch_pipe *bp = NULL;
    if (!fixture_for_pipe(&fx))
        return;
    struct oc_store_config sc = store_cfg(&fx, NULL);
    OC_CHECK_OK(oc_store_open(0, &sc, &s, &err), &err);
    struct oc_batch_pipe_config pc = pipe_cfg(&fx, s, NULL, 1);
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    float *x = NULL;
    uint64_t cap = 0;
    OC_CHECK_OK(oc_batch_pipe_epoch(bp, 0, &err), &err);
    OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
    OC_CHECK_ERR(oc_batch_pipe_lend_rows(bp, &x, &cap, &err), OC_ERR_ARG, &err, "between epochs");
    for (uint64_t b = 0; b < oc_batch_pipe_n_batches(bp); b++) {
        struct oc_pipe_batch *pb;
        OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
        oc_batch_pipe_done(bp, pb);
    }
    OC_CHECK_OK(oc_batch_pipe_epoch(bp, 1, &err), &err); /* sampled ahead, not opened */
    OC_CHECK_OK(oc_batch_pipe_lend_rows(bp, &x, &cap, &err), &err);
    OC_CHECK(x != NULL && cap > 0); /* a buffer epoch 0 filled */
    float *x2;
    uint64_t cap2;
    OC_CHECK_ERR(oc_batch_pipe_lend_rows(bp, &x2, &cap2, &err), OC_ERR_ARG, &err, "one at a time");
    OC_CHECK(x2 == NULL && cap2 == 0);
    OC_CHECK_ERR(oc_batch_pipe_open(bp, &err), OC_ERR_ARG, &err, "returned");
    float *grown = oc_realloc(x, (cap + 1000) * sizeof(float), "test", &err);
    OC_CHECK(grown != NULL);
    oc_batch_pipe_return_rows(bp, grown ? grown : x, grown ? cap + 1000 : cap);
    OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
    for (uint64_t b = 0; b < oc_batch_pipe_n_batches(bp); b++) {
        struct oc_pipe_batch *pb;
        OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
        OC_CHECK(pb->epoch == 1 && pb->index == b);
        oc_batch_pipe_done(bp, pb);
    }
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    fixture_free(&fx);
}

/*
 * Under a budget with no room left, the batches larger than the pipeline's
 * reservation (reserve_rows = the median batch) get their row buffers from
 * the `static` cache, which gives its coldest rows back; the buffers shrink
 * back at the next smaller batch, and the cache takes its rows back once
 * memory is free. Every row stays right throughout.
 */
OC_TEST(larger_batches_take_memory_from_the_static_cache)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_batch_pipe *bp = NULL;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    uint32_t idx = 0;
    if (!fixture_for_pipe(&fx))
        return;
    /* the input rows of epoch 1's batches, for the median */
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_sampler_new(&fx.g, &fx.so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx.train, fx.n_train, fx.batch_size, 0, &err), &err);
    oc_sample_epoch_shuffle(&ep, fx.so.seed, 1);
    uint64_t nb = oc_sample_epoch_n_batches(&ep), *rows = calloc(nb, sizeof(uint64_t));
    for (uint64_t i = 0; i < nb; i++) {
        const uint64_t *seeds;
        uint64_t n;
        OC_CHECK_OK(oc_sample_epoch_batch(&ep, i, &seeds, &n, &err), &err);
        OC_CHECK_OK(oc_sample_neighbors(sm, 1, i, seeds, n, &b, &err), &err);
        rows[i] = b.n_input;
    }
    oc_sample_batch_deinit(&b);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    uint64_t median = 0, above = 0;
    for (uint64_t i = 0; i < nb; i++) { /* the smallest value with half the batches at or below */
        uint64_t le = 0;
        for (uint64_t j = 0; j < nb; j++)
            le += rows[j] <= rows[i];
        if (2 * le >= nb && (!median || rows[i] < median))
            median = rows[i];
    }
    for (uint64_t i = 0; i < nb; i++)
        above += rows[i] > median;
    OC_CHECK(above > 0);

    struct oc_store_config sc = store_cfg(&fx, NULL);
    sc.mem_bytes = fixture_fixed_bytes(&fx) + fx.n_nodes * 4 + fx.n_nodes * fx.row_bytes;
    OC_CHECK_OK(oc_store_strategy_find("static", &idx, &err), &err);
    OC_CHECK_OK(oc_store_open(idx, &sc, &s, &err), &err);
    struct oc_batch_pipe_config pc = pipe_cfg(&fx, s, NULL, 1);
    pc.reserve_rows = median;
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    uint64_t bad = 0, most_given = 0;
    for (uint64_t e = 0; e < 2 && s && bp; e++) {
        OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
        OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
        for (uint64_t i = 0; i < nb; i++) {
            struct oc_pipe_batch *pb;
            if (oc_batch_pipe_next(bp, &pb, &err) != OC_OK) {
                OC_CHECK_OK(err.status, &err);
                break;
            }
            for (uint64_t r = 0; r < pb->batch.n_input; r++)
                bad += memcmp(pb->x + r * fx.dim, fx.ref + pb->batch.input_ids[r] * fx.dim,
                              fx.dim * sizeof(float)) != 0;
            uint64_t given = oc_store_static_n_given_up(s);
            most_given = given > most_given ? given : most_given;
            oc_batch_pipe_done(bp, pb);
        }
        /* epoch 0 grew what grows once (sampler, scratch); epoch 1 runs with no room left */
        if (e == 0)
            oc_mem_set_budget(oc_mem_used() + 1024);
    }
    oc_mem_set_budget(0);
    OC_CHECK(bad == 0);
    OC_CHECK(most_given > 0);
    fprintf(stderr,
            "  %" PRIu64 " of %" PRIu64 " batches above the reserved %" PRIu64
            " rows; the cache gave up to %" PRIu64 " rows\n",
            above, nb, median, most_given);
    uint64_t ids[2] = {0, 1};
    float out[2 * 48];
    if (s) {
        OC_CHECK_OK(oc_store_gather(s, ids, 2, out, &err), &err); /* takes every row back */
        OC_CHECK(oc_store_static_n_given_up(s) == 0);
    }
    free(rows);
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    fixture_free(&fx);
}

/* The nth allocation fails somewhere in the pipeline: a clean error, no leak, no hang. */
OC_TEST(allocation_faults_end_cleanly)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_for_pipe(&fx))
        return;
    uint32_t direct;
    OC_CHECK_OK(oc_store_strategy_find("direct", &direct, &err), &err);
    uint64_t live = oc_mem_n_live();
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        int finished = 0;
        uint64_t n_failed = 0;
        for (uint64_t nth = 1; nth < 400 && !finished; nth++) {
            struct oc_store *s = NULL;
            struct oc_batch_pipe *bp = NULL;
            struct oc_store_config sc = store_cfg(&fx, NULL);
            int rc = oc_store_open(direct, &sc, &s, &err);
            OC_CHECK_OK(rc, &err);
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, 0);
            struct oc_batch_pipe_config pc = pipe_cfg(&fx, s, NULL, 2);
            rc = oc_batch_pipe_new(&pc, &bp, &err);
            if (rc == OC_OK)
                rc = drain_epochs(bp, 2, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (rc)
                OC_CHECK(fired && (rc == OC_ERR_NOMEM || rc == OC_ERR_CANCELLED) && err.msg[0]);
            else
                finished = !fired;
            n_failed += rc != OC_OK;
            oc_batch_pipe_free(bp);
            oc_store_free(s);
            OC_CHECK(oc_mem_n_live() == live);
        }
        OC_CHECK(finished && n_failed > 0);
    }
    fixture_free(&fx);
}

/* A read error while gathering ahead reaches the trainer naming the batch and the file. */
OC_TEST(read_error_names_the_batch)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_for_pipe(&fx))
        return;
    uint32_t direct;
    OC_CHECK_OK(oc_store_strategy_find("direct", &direct, &err), &err);
    struct oc_store *s = NULL;
    struct oc_batch_pipe *bp = NULL;
    struct oc_store_config sc = store_cfg(&fx, NULL);
    OC_CHECK_OK(oc_store_open(direct, &sc, &s, &err), &err);
    struct oc_batch_pipe_config pc = pipe_cfg(&fx, s, NULL, 2);
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    oc_fault_arm(OC_FAULT_READ, 40, EIO);
    int rc = drain_epochs(bp, 1, &err);
    oc_fault_disarm_all();
    OC_CHECK_ERR(rc, OC_ERR_IO, &err, "fetch stage: epoch 0 batch");
    OC_CHECK(strstr(err.msg, "features.npy") != NULL);
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    fixture_free(&fx);
}

OC_TEST_MAIN()
