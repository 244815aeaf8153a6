/*
 * test_store_diskgnn_stages.c — the `diskgnn` strategy's stages (planner,
 * feature loader, graph loader; the feature assembler runs in the batch
 * pipeline's fetch stage) on the pipeline of pipeline.h: opened on a shared
 * pipeline as train does, a loader error reaches the trainer through the
 * batch pipeline with the file and offset named; a cancellation while the
 * graph loader, the loader and the planner wait (or pack) unblocks them all, records no error of its own and leaves
 * no file; with a pipeline of its own the store starts its stages at open
 * and joins them at free, each stage's busy time in the store's stats.
 * Every case ends with no leak and no thread left.
 *
 * Place in the data flow: tests of store and pipeline (generate → dataset →
 * sample → plan → store → batch pipeline).
 * Thread-safety: the test's thread drives; the stages run threads (the
 * file runs under TSan).
 * Ownership: each test frees its pipeline (joining the stages) first, then
 * the batch pipeline and the store, as train does.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "diskgnn_util.h"
#include "fault_util.h"
#include "offcore/batch_pipe.h"
#include "offcore/pipeline.h"
#include "proc_util.h"
#include "store_fixture.h"

/* PLAN/diskgnn's files: named ones and the windows this process holds open. */
static int n_plan_files(const char *plan)
{
    return plan_files(plan, NULL);
}

/* diskgnn over fx for epochs [0, n_epochs), its stages on p (NULL: its own). */
static struct oc_store *open_diskgnn(const struct fixture *fx, const char *plan,
                                     struct oc_pipeline *p, uint32_t n_epochs, int reuse,
                                     struct oc_err *err)
{
    struct oc_store_config c = fixture_config(fx, NULL);
    struct oc_store *s = NULL;
    uint32_t idx;
    c.n_epochs = n_epochs;
    c.plan_dir = plan;
    c.reuse_samples = reuse;
    c.pipeline = p;
    if (oc_store_strategy_find("diskgnn", &idx, err) == OC_OK)
        OC_CHECK_OK(oc_store_open(idx, &c, &s, err), err);
    return s;
}

/* Takes batch `batch` of `epoch` from s and gathers it, as the fetch stage does. */
static int take_batch(const struct fixture *fx, struct oc_store *s, uint64_t epoch, uint64_t batch,
                      struct oc_err *err)
{
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    int rc = oc_store_load_batch(s, epoch, batch, &b, err);
    if (rc == OC_OK) {
        float *out = malloc(b.n_input * fx->dim * sizeof(float) + 1);
        rc = oc_store_gather_batch(s, epoch, batch, b.input_ids, b.n_input, out, err);
        free(out);
    }
    oc_sample_batch_deinit(&b);
    return rc;
}

/*
 * The batch pipeline and diskgnn on one pipeline, as in training: the
 * loader's read error fails the pipeline, and the trainer's next batch
 * returns it, naming the window file and the offset.
 */
OC_TEST(loader_error_reaches_the_trainer_through_the_shared_pipeline)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    int threads = proc_n_threads();
    uint64_t live = oc_mem_n_live();
    struct oc_pipeline *p = NULL;
    struct oc_batch_pipe *bp = NULL;
    OC_CHECK_OK(oc_pipeline_new("training pipeline", &p, &err), &err);
    /* reused samples: no planner, so the loader makes every read after open */
    struct oc_store *s = p ? open_diskgnn(&fx, plan, p, 2, 1, &err) : NULL;
    if (s) {
        struct oc_batch_pipe_config pc;
        memset(&pc, 0, sizeof(pc));
        pc.store = s;
        pc.graph = &fx.g;
        pc.sample = &fx.so;
        pc.train_ids = fx.train;
        pc.n_train = fx.n_train;
        pc.batch_size = fx.batch_size;
        pc.depth = 1;
        pc.pipeline = p;
        pc.reuse_samples = 1; /* the store's reused window, in each epoch's order */
        OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    }
    if (bp) {
        oc_fault_arm_persistent(OC_FAULT_READ, 1, EIO);
        int rc = OC_OK;
        for (uint64_t e = 0; e < 2 && rc == OC_OK; e++) {
            rc = oc_batch_pipe_epoch(bp, e, &err);
            if (rc == OC_OK)
                rc = oc_batch_pipe_open(bp, &err);
            for (uint64_t i = 0; rc == OC_OK && i < oc_batch_pipe_n_batches(bp); i++) {
                struct oc_pipe_batch *pb;
                if ((rc = oc_batch_pipe_next(bp, &pb, &err)) == OC_OK)
                    oc_batch_pipe_done(bp, pb);
            }
        }
        OC_CHECK(oc_fault_fired(OC_FAULT_READ));
        oc_fault_disarm_all();
        OC_CHECK_ERR(rc, OC_ERR_IO, &err, "diskgnn feature loader stage");
        OC_CHECK(strstr(err.msg, "/diskgnn/w") != NULL && strstr(err.msg, "offset") != NULL);
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr, "  the trainer got: %s\n", err.msg);
        struct oc_err first;
        OC_CHECK(oc_pipeline_status(p, &first) == OC_ERR_IO && strcmp(first.msg, err.msg) == 0);
    }
    oc_fault_disarm_all();
    oc_pipeline_free(p); /* joins every stage before the batch pipeline and the store go */
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    OC_CHECK(proc_n_threads_is(threads));
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(n_plan_files(plan) == 0);
    fixture_free(&fx);
}

/*
 * Cancelled with the graph loader waiting for the trainer to take a batch, the
 * loader for a free chunk buffer and the planner packing or waiting: every
 * wait returns, the next batches end with OC_ERR_CANCELLED (no stage turns
 * the cancellation into an error), the join does not hang, no file is left.
 */
OC_TEST(cancellation_unblocks_every_stage)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 3000, 24, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    int threads = proc_n_threads();
    uint64_t live = oc_mem_n_live();
    /* cancelled at once (the planner mid-window), after a moment and after a batch */
    for (int k = 0; k < 3; k++) {
        struct oc_pipeline *p = NULL;
        OC_CHECK_OK(oc_pipeline_new("test", &p, &err), &err);
        struct oc_store *s = p ? open_diskgnn(&fx, plan, p, 4, 0, &err) : NULL;
        if (!s) {
            oc_pipeline_free(p);
            break;
        }
        OC_CHECK(proc_n_threads_is(threads + 3)); /* the planner and the two loaders */
        if (k >= 1)
            usleep(100 * 1000); /* the loaders fill their queues and wait */
        if (k == 2)
            OC_CHECK_OK(take_batch(&fx, s, 0, 0, &err), &err);
        oc_pipeline_cancel(p);
        int rc = OC_OK;
        for (uint64_t i = (uint64_t)(k == 2); i < 8 && rc == OC_OK; i++)
            rc = take_batch(&fx, s, 0, i, &err); /* what was assembled, then the cancellation */
        OC_CHECK_ERR(rc, OC_ERR_CANCELLED, &err, "cancelled");
        OC_CHECK_ERR(oc_pipeline_status(p, &err), OC_ERR_CANCELLED, &err, NULL);
        oc_pipeline_free(p);
        OC_CHECK(proc_n_threads_is(threads));
        oc_store_free(s);
        OC_CHECK(n_plan_files(plan) == 0);
    }
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/*
 * Without a pipeline in the config the store makes its own: the stages run
 * from open (the first batches are assembled before the trainer asks) and
 * oc_store_free joins them, at any point of the plan.
 */
OC_TEST(own_pipeline_is_joined_at_free)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    int threads = proc_n_threads();
    uint64_t live = oc_mem_n_live();
    for (int reuse = 0; reuse < 2; reuse++) {
        struct oc_store *s = open_diskgnn(&fx, plan, NULL, 3, reuse, &err);
        if (!s)
            break;
        OC_CHECK(proc_n_threads_is(threads + (reuse ? 2 : 3)));
        uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size, order[64];
        OC_CHECK(nb <= 64);
        for (uint64_t e = 0; e < 3 && nb <= 64; e++) {
            oc_sample_batch_order(fx.so.seed, e, order, nb); /* reuse: each epoch's order */
            for (uint64_t i = 0; i < nb; i++)
                OC_CHECK_OK(take_batch(&fx, s, reuse ? 0 : e, reuse ? order[i] : i, &err), &err);
        }
        OC_CHECK_ERR(take_batch(&fx, s, 3, 0, &err), OC_ERR_ARG, &err, "plan's next batch");
        struct oc_store_stats st; /* every stage that ran was busy, and the assembler (in the
                                     gathers); no planner with reuse */
        oc_store_stats(s, &st);
        OC_CHECK(st.stage_busy_us[0] > 0 && st.stage_busy_us[1] > 0 && st.stage_busy_us[2] > 0);
        OC_CHECK(reuse ? st.stage_busy_us[3] == 0 : st.stage_busy_us[3] > 0);
        oc_store_free(s);
        OC_CHECK(proc_n_threads_is(threads));
        OC_CHECK(n_plan_files(plan) == 0);
    }
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST_MAIN()
