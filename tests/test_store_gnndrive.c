/*
 * test_store_gnndrive.c — the `gnndrive` strategy: gather_batch rows
 * bit-identical to `memory` over two epochs (f32, f16, rows wider than a
 * page) with evaluation gathers in between; training through oc_train_run
 * under a budget gives memory's weights; a stress run with six extractors,
 * a buffer at its minimum and random delays (run under TSan by `make
 * tsan`) delivers every batch once with every row equal to the file's;
 * reordering returns each batch of an epoch exactly once; plan-order
 * skips; read errors (EIO, short reads, a truncated features.npy) end
 * cleanly with no leak, through io_uring and the pread fallback; a budget
 * below the minimum is OC_ERR_BUDGET; allocation faults at open and in the
 * threads fail cleanly; on one pipeline with the batch pipeline (as in
 * training) an extractor's error reaches the trainer; cancelling the
 * pipeline ends every wait of the extractors and the feeder; no thread is
 * left after free.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → store).
 * Thread-safety: test code drives each store from one thread; the store runs
 * its own threads.
 * Ownership: every store, pool and fixture is freed by the test that made it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/batch_pipe.h"
#include "offcore/pipeline.h"
#include "offcore/rng.h"
#include "offcore/train.h"
#include "proc_util.h"
#include "store/gnndrive/gnndrive_int.h"
#include "store_fixture.h"

/* ---- helpers -------------------------------------------------------------------- */

/* A fixture whose batches (64 seeds, fanouts 4,3: at most 1280 rows) are small next to N. */
static int gd_fixture(struct fixture *fx, uint64_t n, uint32_t dim, enum oc_dtype dtype)
{
    if (!fixture_init(fx, n, dim, dtype))
        return 0;
    fx->batch_size = 64;
    return 1;
}

static struct oc_store_config gd_config(const struct fixture *fx, struct oc_pool *pool,
                                        uint32_t n_extractors, uint32_t n_epochs)
{
    struct oc_store_config c = fixture_config(fx, pool);
    fixture_opt(&c, "extractors", n_extractors);
    c.first_epoch = 0;
    c.n_epochs = n_epochs;
    return c;
}

static uint64_t min_budget(const struct oc_store_config *c)
{
    struct oc_err err;
    uint64_t b = 0;
    OC_CHECK_OK(oc_store_gnndrive_min_budget(c, &b, &err), &err);
    return b;
}

/* Replays the plan as train does: shuffle(seed, epoch), batches, oc_sample_neighbors. */
struct replay {
    struct oc_sampler *sm;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    uint64_t epoch;
};

static void replay_init(struct replay *p, const struct fixture *fx)
{
    struct oc_err err;
    memset(p, 0, sizeof(*p));
    oc_sample_batch_init(&p->b);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &p->sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&p->ep, fx->train, fx->n_train, fx->batch_size, 0, &err),
                &err);
    p->epoch = UINT64_MAX;
}

static const struct oc_sample_batch *replay_batch(struct replay *p, const struct fixture *fx,
                                                  uint64_t e, uint64_t bi)
{
    struct oc_err err;
    const uint64_t *seeds;
    uint64_t n;
    if (p->epoch != e) {
        oc_sample_epoch_shuffle(&p->ep, fx->so.seed, e);
        p->epoch = e;
    }
    OC_CHECK_OK(oc_sample_epoch_batch(&p->ep, bi, &seeds, &n, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(p->sm, e, bi, seeds, n, &p->b, &err), &err);
    return &p->b;
}

static void replay_free(struct replay *p)
{
    oc_sample_batch_deinit(&p->b);
    oc_sample_epoch_deinit(&p->ep);
    oc_sample_sampler_free(p->sm);
}

/* Epoch 0's batches (input ids only, malloc'd), sampled before any fault is armed. */
static struct oc_sample_batch *plan_inputs(const struct fixture *fx, uint64_t *nb)
{
    struct replay p;
    replay_init(&p, fx);
    *nb = oc_sample_epoch_n_batches(&p.ep);
    struct oc_sample_batch *bs = calloc(*nb, sizeof(*bs));
    for (uint64_t b = 0; bs && b < *nb; b++) {
        const struct oc_sample_batch *sb = replay_batch(&p, fx, 0, b);
        bs[b].n_input = sb->n_input;
        bs[b].input_ids = malloc(sb->n_input * sizeof(uint64_t));
        memcpy(bs[b].input_ids, sb->input_ids, sb->n_input * sizeof(uint64_t));
    }
    replay_free(&p);
    return bs;
}

static void plan_inputs_free(struct oc_sample_batch *bs, uint64_t nb)
{
    for (uint64_t b = 0; bs && b < nb; b++)
        free(bs[b].input_ids);
    free(bs);
}

static void random_ids(uint64_t *ids, uint64_t n, uint64_t n_nodes, uint64_t seed)
{
    struct oc_rng r;
    oc_rng_init(&r, seed, 4, 5, 6);
    for (uint64_t i = 0; i < n; i++)
        ids[i] = oc_rng_below(&r, n_nodes);
}

/*
 * Runs n_epochs of the plan through the batch pipeline (which samples each
 * batch once and feeds it to the store with oc_store_sampled) with an
 * evaluation gather between epochs; checks every row against the file (and
 * against mem's gather when mem is set). *rows = rows of the training
 * batches; returns the rows that differ.
 */
static uint64_t run_plan(const struct fixture *fx, struct oc_store *s, struct oc_store *mem,
                         uint32_t n_epochs, uint64_t *rows)
{
    struct oc_err err;
    struct oc_batch_pipe *bp = NULL;
    uint64_t bad = 0, cap = 0;
    float *ref = NULL;
    struct oc_batch_pipe_config pc = fixture_pipe_config(fx, s, 2);
    *rows = 0;
    OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    uint64_t nb = bp ? oc_batch_pipe_n_batches(bp) : 0;
    for (uint32_t e = 0; e < n_epochs && bp; e++) {
        OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
        OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
        for (uint64_t b = 0; b < nb; b++) {
            struct oc_pipe_batch *pb;
            int rc = oc_batch_pipe_next(bp, &pb, &err);
            OC_CHECK_OK(rc, &err);
            if (rc)
                goto done;
            uint64_t n = pb->batch.n_input;
            bad += fixture_bad_rows(fx, pb->batch.input_ids, n, pb->x);
            if (mem) {
                if (n > cap) {
                    cap = n;
                    ref = realloc(ref, cap * fx->dim * sizeof(float));
                }
                OC_CHECK_OK(
                    oc_store_gather_batch(mem, e, pb->index, pb->batch.input_ids, n, ref, &err),
                    &err);
                bad += memcmp(pb->x, ref, n * fx->dim * sizeof(float)) != 0;
            }
            *rows += n;
            oc_batch_pipe_done(bp, pb);
        }
        /* Evaluation between epochs: direct reads, the pipeline undisturbed. */
        uint64_t ids[700];
        float *ev = malloc(700 * fx->dim * sizeof(float));
        random_ids(ids, 700, fx->n_nodes, e);
        OC_CHECK_OK(oc_store_gather(s, ids, 700, ev, &err), &err);
        bad += fixture_bad_rows(fx, ids, 700, ev);
        free(ev);
    }
done:
    oc_batch_pipe_free(bp);
    free(ref);
    return bad;
}

/* ---- bit-identical to memory ------------------------------------------------------ */

static void matches_memory(uint64_t n_nodes, uint32_t dim, enum oc_dtype dtype)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!gd_fixture(&fx, n_nodes, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, pool, 2, 2);
    struct oc_store_config cm = fixture_config(&fx, pool);
    /* The minimum plus a few hundred slots: rows get evicted and reused. */
    c.mem_bytes = min_budget(&c) + 300 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c), *mem = fixture_open("memory", &cm);
    if (s && mem) {
        uint64_t rows = 0;
        OC_CHECK(run_plan(&fx, s, mem, 2, &rows) == 0);
        struct oc_store_gnndrive_info info;
        OC_CHECK(oc_store_gnndrive_info(s, &info));
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size;
        OC_CHECK(info.z.pipeline && info.z.n_extractors == 2);
        OC_CHECK(info.z.n_slots >= info.z.min_slots && info.z.n_slots < fx.n_nodes);
        OC_CHECK(info.n_served == 2 * nb && info.n_direct == 0 && info.n_discarded == 0);
        OC_CHECK(info.n_extracted == 2 * nb);
        OC_CHECK(st.requested_rows == rows + 2 * 700);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] ==
                 st.requested_rows);
        OC_CHECK(st.requested_disk_bytes == st.tier_rows[OC_STORE_TIER_DISK] * fx.row_bytes);
        OC_CHECK(st.standby_hits > 0 && st.standby_hits <= st.tier_rows[OC_STORE_TIER_CPU]);
        OC_CHECK(st.read_bytes >= st.requested_disk_bytes && st.n_reads > 0);
        OC_CHECK(st.held_bytes <= c.mem_bytes);
        fprintf(stderr,
                "  %s dim %u: %llu rows, cpu %.3f (standby %.3f), amplification %.2f, %llu "
                "slots (min %llu)\n",
                oc_dtype_name(dtype), dim, (unsigned long long)rows,
                oc_store_stats_hit_ratio(&st, OC_STORE_TIER_CPU),
                (double)st.standby_hits / (double)st.requested_rows,
                oc_store_stats_amplification(&st), (unsigned long long)info.z.n_slots,
                (unsigned long long)info.z.min_slots);
    }
    oc_store_free(s);
    oc_store_free(mem);
    OC_CHECK(oc_mem_n_live() == live);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(matches_memory_f32)
{
    matches_memory(20000, 12, OC_DTYPE_F32);
}

OC_TEST(matches_memory_f16)
{
    matches_memory(20000, 12, OC_DTYPE_F16);
}

/* Rows longer than a page (4400 bytes), straddling up to three pages. */
OC_TEST(matches_memory_wide_rows)
{
    matches_memory(6000, 1100, OC_DTYPE_F32);
}

OC_TEST(pread_fallback_matches_memory)
{
    setenv("OC_NO_URING", "1", 1);
    matches_memory(20000, 12, OC_DTYPE_F16);
    unsetenv("OC_NO_URING");
}

/* ---- training ------------------------------------------------------------------------ */

static void add_epoch(void *p, const struct oc_train_epoch_stats *st)
{
    struct oc_store_stats *sum = p;
    sum->read_bytes += st->store.read_bytes;
    sum->standby_hits += st->store.standby_hits;
    sum->requested_rows += st->store.requested_rows;
}

OC_TEST(train_matches_memory_weights)
{
    char dir[700];
    struct oc_err err;
    snprintf(dir, sizeof(dir), "%s/train", oc_test_tmpdir());
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 12000;
    g.avg_degree = 6;
    g.feat_dim = 100;
    g.n_classes = 5;
    g.train_frac = 0.1;
    g.seed = 3;
    g.n_threads = 1;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    struct oc_train_opts o;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.fanouts[0] = o.fanouts[1] = 4;
    o.batch_size = 100;
    o.epochs = 2;
    o.hidden = 16;
    o.n_threads = 2;
    o.seed = 4;
    o.eval = OC_TRAIN_EVAL_SAMPLED;
    o.eval_batch_size = 100;
    struct oc_train_result ref, res;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    /* Features are 4.8 MB; the budget leaves the buffer a fraction of them. */
    o.strategy = "gnndrive";
    o.mem_budget = 9u << 20;
    struct oc_store_stats sum;
    memset(&sum, 0, sizeof(sum));
    OC_CHECK_OK(oc_train_run(dir, &o, add_epoch, &sum, NULL, &res, &err), &err);
    fprintf(stderr, "  memory %s\n  gnndrive %s: %llu bytes read, standby hits %.3f\n",
            ref.weights_sha256, res.weights_sha256, (unsigned long long)sum.read_bytes,
            sum.requested_rows ? (double)sum.standby_hits / (double)sum.requested_rows : 0.0);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(sum.read_bytes > 0);
    OC_CHECK(sum.standby_hits > 0);
    /* A budget too small for two batches in the buffer. */
    o.mem_budget = 5u << 20;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_BUDGET, &err,
                 "store gnndrive: needs at least");
}

/* ---- stress: many extractors, a minimal buffer, random delays ------------------------ */

static void stress(enum oc_dtype dtype, uint32_t dim, int no_uring)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, pool, 6, 2);
    c.mem_bytes = min_budget(&c) + fx.row_bytes + 21; /* one slot above the minimum */
    struct oc_store *s = fixture_open("gnndrive", &c);
    if (s) {
        oc_store_gnndrive_set_delay(s, 300);
        uint64_t rows = 0;
        OC_CHECK(run_plan(&fx, s, NULL, 2, &rows) == 0);
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size;
        OC_CHECK(info.z.n_slots == info.z.min_slots + 1);
        OC_CHECK(info.n_served == 2 * nb && info.n_extracted == 2 * nb);
        OC_CHECK(info.n_direct == 0 && info.n_discarded == 0);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] ==
                 st.requested_rows);
        fprintf(stderr, "  %s%s: %llu batches, %llu rows, cpu %.3f, standby %.3f\n",
                oc_dtype_name(dtype), no_uring ? " (pread)" : "", (unsigned long long)(2 * nb),
                (unsigned long long)rows, oc_store_stats_hit_ratio(&st, OC_STORE_TIER_CPU),
                (double)st.standby_hits / (double)st.requested_rows);
    }
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    unsetenv("OC_NO_URING");
    oc_pool_free(pool);
    fixture_free(&fx);
}

/* 16-byte rows: 256 to a page, so batches share pages and wait for each other's rows. */
OC_TEST(stress_six_extractors_min_buffer)
{
    stress(OC_DTYPE_F16, 8, 0);
}

OC_TEST(stress_six_extractors_pread)
{
    stress(OC_DTYPE_F32, 12, 1);
}

/* ---- batch order --------------------------------------------------------------------- */

OC_TEST(reorder_delivers_each_batch_once)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, NULL, 4, 2);
    fixture_opt(&c, "reorder", 1);
    c.mem_bytes = min_budget(&c) + 1000 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    struct oc_batch_pipe *bp = NULL;
    uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size, out_of_order = 0, bad = 0;
    uint8_t *seen = calloc(nb, 1);
    if (s) {
        oc_store_gnndrive_set_delay(s, 200);
        struct oc_batch_pipe_config pc = fixture_pipe_config(&fx, s, 1);
        OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
        for (uint32_t e = 0; e < 2 && bp; e++) {
            memset(seen, 0, nb);
            OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
            OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
            for (uint64_t k = 0; k < nb; k++) {
                struct oc_pipe_batch *pb;
                OC_CHECK_OK(oc_batch_pipe_next(bp, &pb, &err), &err);
                if (!pb)
                    break;
                uint64_t b = pb->index;
                if (b >= nb || seen[b]) {
                    OC_CHECK(b < nb && !seen[b]);
                    break;
                }
                seen[b] = 1;
                out_of_order += b != k;
                bad += fixture_bad_rows(&fx, pb->batch.input_ids, pb->batch.n_input, pb->x);
                oc_batch_pipe_done(bp, pb);
            }
        }
        oc_batch_pipe_free(bp);
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        OC_CHECK(bad == 0);
        OC_CHECK(info.n_served == 2 * nb && info.n_direct == 0 && info.n_discarded == 0);
        fprintf(stderr, "  %llu of %llu batches out of plan order\n",
                (unsigned long long)out_of_order, (unsigned long long)(2 * nb));
    }
    oc_store_free(s);
    /* Announcing twice without gathering is refused rather than waited on; so is
       asking before any batch was prepared. */
    c.n_epochs = 1;
    s = fixture_open("gnndrive", &c);
    struct replay p;
    replay_init(&p, &fx);
    if (s) {
        uint64_t b1, b2;
        OC_CHECK_ERR(oc_store_next_batch(s, 0, &b1, &err), OC_ERR_ARG, &err, "prepare one");
        for (uint64_t b = 0; b < 2; b++)
            OC_CHECK_OK(oc_store_sampled(s, 0, b, replay_batch(&p, &fx, 0, b), &err), &err);
        OC_CHECK_OK(oc_store_next_batch(s, 0, &b1, &err), &err);
        OC_CHECK_ERR(oc_store_next_batch(s, 0, &b2, &err), OC_ERR_ARG, &err, "not gathered");
    }
    oc_store_free(s);
    free(seen);
    replay_free(&p);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST(plan_order_next_batch_and_skips)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, NULL, 2, 2);
    c.mem_bytes = min_budget(&c) + 1000 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    struct replay p;
    replay_init(&p, &fx);
    uint64_t nb = oc_sample_epoch_n_batches(&p.ep);
    float *out = malloc(2000 * fx.dim * sizeof(float));
    if (s) {
        /* In plan order, next_batch counts 0, 1, ... per epoch. */
        for (uint64_t k = 0; k < nb; k++) {
            uint64_t b = UINT64_MAX;
            OC_CHECK_OK(oc_store_next_batch(s, 1, &b, &err), &err);
            OC_CHECK(b == k);
        }
        uint64_t b;
        OC_CHECK_ERR(oc_store_next_batch(s, 1, &b, &err), OC_ERR_NOTFOUND, &err, NULL);
        /* Batches 0 and 1 skipped: discarded when batch 2 is asked for. */
        for (uint64_t k = 0; k < 5; k++)
            OC_CHECK_OK(oc_store_sampled(s, 0, k, replay_batch(&p, &fx, 0, k), &err), &err);
        /* out of plan order: not fed (its gather would read directly) */
        OC_CHECK_OK(oc_store_sampled(s, 0, 7, replay_batch(&p, &fx, 0, 7), &err), &err);
        uint64_t order[] = {2, 3, 0, 4};
        for (size_t k = 0; k < 4; k++) {
            const struct oc_sample_batch *sb = replay_batch(&p, &fx, 0, order[k]);
            OC_CHECK_OK(
                oc_store_gather_batch(s, 0, order[k], sb->input_ids, sb->n_input, out, &err), &err);
            OC_CHECK(fixture_bad_rows(&fx, sb->input_ids, sb->n_input, out) == 0);
        }
        /* Ids that are not what the plan sampled: read directly, still right. */
        OC_CHECK_OK(oc_store_sampled(s, 0, 5, replay_batch(&p, &fx, 0, 5), &err), &err);
        const struct oc_sample_batch *sb = replay_batch(&p, &fx, 0, 6);
        OC_CHECK_OK(oc_store_gather_batch(s, 0, 5, sb->input_ids, sb->n_input, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, sb->input_ids, sb->n_input, out) == 0);
        /* Outside the plan: read directly. */
        OC_CHECK_OK(oc_store_gather_batch(s, 9, 0, sb->input_ids, sb->n_input, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, sb->input_ids, sb->n_input, out) == 0);
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        OC_CHECK(info.n_served == 3);                          /* 2, 3, 4 */
        OC_CHECK(info.n_discarded == 3 && info.n_direct == 3); /* 0, 1, 5 / 0, 5, epoch 9 */
    }
    oc_store_free(s);
    /* Without a plan: no threads, every gather direct, next_batch in order. */
    c.n_epochs = 0;
    s = fixture_open("gnndrive", &c);
    if (s) {
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        OC_CHECK(!info.z.pipeline);
        const struct oc_sample_batch *sb = replay_batch(&p, &fx, 0, 1);
        OC_CHECK_OK(oc_store_gather_batch(s, 0, 1, sb->input_ids, sb->n_input, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, sb->input_ids, sb->n_input, out) == 0);
        uint64_t b = 9;
        OC_CHECK_OK(oc_store_next_batch(s, 0, &b, &err), &err);
        OC_CHECK(b == 0);
    }
    oc_store_free(s);
    /* The in-order default of the other strategies (which refuse gnndrive's options). */
    c.mem_bytes = 0;
    memset(&c.opts, 0, sizeof(c.opts));
    s = fixture_open("direct", &c);
    if (s) {
        uint64_t b = 9;
        OC_CHECK_OK(oc_store_next_batch(s, 3, &b, &err), &err);
        OC_CHECK(b == 0);
        OC_CHECK_OK(oc_store_next_batch(s, 3, &b, &err), &err);
        OC_CHECK(b == 1);
        OC_CHECK_OK(oc_store_next_batch(s, 4, &b, &err), &err);
        OC_CHECK(b == 0);
    }
    oc_store_free(s);
    free(out);
    replay_free(&p);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* ---- errors ------------------------------------------------------------------------ */

/* Runs epoch 0 of the plan through the batch pipeline until an error; returns it (OC_OK if none). */
static int plan_until_error(const struct fixture *fx, struct oc_store *s, struct oc_err *err)
{
    struct oc_batch_pipe *bp = NULL;
    struct oc_batch_pipe_config pc = fixture_pipe_config(fx, s, 2);
    int rc = oc_batch_pipe_new(&pc, &bp, err);
    if (rc == OC_OK)
        rc = oc_batch_pipe_epoch(bp, 0, err);
    if (rc == OC_OK)
        rc = oc_batch_pipe_open(bp, err);
    for (uint64_t b = 0; rc == OC_OK && b < oc_batch_pipe_n_batches(bp); b++) {
        struct oc_pipe_batch *pb;
        rc = oc_batch_pipe_next(bp, &pb, err);
        if (rc == OC_OK) {
            OC_CHECK(fixture_bad_rows(fx, pb->batch.input_ids, pb->batch.n_input, pb->x) == 0);
            oc_batch_pipe_done(bp, pb);
        }
    }
    oc_batch_pipe_free(bp);
    return rc;
}

static void read_faults(int no_uring)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, NULL, 3, 1);
    c.mem_bytes = min_budget(&c) + 500 * (fx.row_bytes + 21);
    static const struct {
        uint64_t nth;
        int e, want;
    } faults[] = {{1, EIO, OC_ERR_IO}, {40, EIO, OC_ERR_IO}, {7, 0, OC_ERR_FORMAT}};
    for (size_t k = 0; k < sizeof(faults) / sizeof(faults[0]); k++) {
        oc_fault_arm(OC_FAULT_READ, faults[k].nth, faults[k].e);
        struct oc_store *s = fixture_open("gnndrive", &c);
        if (!s)
            continue;
        int rc = plan_until_error(&fx, s, &err);
        OC_CHECK(rc == faults[k].want);
        OC_CHECK(strstr(err.msg, "features.npy") && strstr(err.msg, "offset"));
        OC_CHECK(strstr(err.msg, "gnndrive") != NULL);
        if (k == 0)
            fprintf(stderr, "  %s\n", err.msg);
        oc_fault_disarm_all();
        /* The error stays; evaluation reads still work. */
        uint64_t ids[50];
        float out[50 * 12];
        random_ids(ids, 50, fx.n_nodes, 3);
        OC_CHECK_OK(oc_store_gather(s, ids, 50, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, ids, 50, out) == 0);
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
    }
    unsetenv("OC_NO_URING");
    fixture_free(&fx);
}

OC_TEST(read_faults_uring)
{
    read_faults(0);
}

OC_TEST(read_faults_pread)
{
    read_faults(1);
}

OC_TEST(truncated_feature_file)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    const char *path = oc_dataset_path(fx.ds, OC_DS_FEATURES);
    uint64_t cut = 15000;
    uint64_t off = oc_dataset_data_offset(fx.ds, OC_DS_FEATURES) + cut * fx.row_bytes;
    struct oc_store_config c = gd_config(&fx, NULL, 2, 1);
    c.mem_bytes = min_budget(&c) + 500 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    OC_CHECK(truncate(path, (off_t)(off + fx.row_bytes / 2)) == 0);
    if (s) {
        OC_CHECK_ERR(plan_until_error(&fx, s, &err), OC_ERR_FORMAT, &err, "features.npy");
        OC_CHECK(strstr(err.msg, "truncated") && strstr(err.msg, "offset"));
        fprintf(stderr, "  %s\n", err.msg);
        uint64_t ids[2] = {cut - 1, cut + 1};
        float out[2 * 12];
        OC_CHECK_ERR(oc_store_gather(s, ids, 2, out, &err), OC_ERR_FORMAT, &err, "truncated");
        OC_CHECK_OK(oc_store_gather(s, ids, 1, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, ids, 1, out) == 0);
    }
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* ---- the pipeline: shared with the trainer, cancellation, threads ------------------- */

/*
 * As in training: one pipeline holds the store's stages and the batch
 * pipeline's. An extractor's read error fails it, reaches the trainer with
 * the file and offset, and freeing the pipeline, then the rest, leaves no
 * thread and no allocation behind.
 */
OC_TEST(shared_pipeline_stage_error_reaches_trainer)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    int threads = proc_n_threads();
    for (int fail = 0; fail < 2; fail++) {
        struct oc_pipeline *p = NULL;
        struct oc_batch_pipe *bp = NULL;
        OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
        struct oc_store_config c = gd_config(&fx, NULL, 2, 1);
        c.mem_bytes = min_budget(&c) + 500 * (fx.row_bytes + 21);
        c.pipeline = p;
        struct oc_store *s = fixture_open("gnndrive", &c);
        OC_CHECK(proc_n_threads_is(threads + 3)); /* 2 extractors, 1 releaser */
        struct oc_batch_pipe_config pc = fixture_pipe_config(&fx, s, 2);
        pc.pipeline = p;
        if (fail)
            oc_fault_arm(OC_FAULT_READ, 3, EIO);
        int rc = s ? oc_batch_pipe_new(&pc, &bp, &err) : OC_ERR_INTERNAL;
        if (rc == OC_OK)
            rc = oc_batch_pipe_epoch(bp, 0, &err);
        if (rc == OC_OK)
            rc = oc_batch_pipe_open(bp, &err);
        uint64_t n_got = 0;
        for (uint64_t b = 0; rc == OC_OK && b < oc_batch_pipe_n_batches(bp); b++) {
            struct oc_pipe_batch *pb;
            rc = oc_batch_pipe_next(bp, &pb, &err);
            if (rc == OC_OK) {
                OC_CHECK(fixture_bad_rows(&fx, pb->batch.input_ids, pb->batch.n_input, pb->x) == 0);
                oc_batch_pipe_done(bp, pb);
                n_got++;
            }
        }
        oc_fault_disarm_all();
        if (fail) {
            OC_CHECK_ERR(rc, OC_ERR_IO, &err, "features.npy");
            OC_CHECK(strstr(err.msg, "offset") && strstr(err.msg, "gnndrive") &&
                     strstr(err.msg, "extract"));
            fprintf(stderr, "  after %llu batches: %s\n", (unsigned long long)n_got, err.msg);
            struct oc_err e2;
            OC_CHECK(oc_pipeline_status(p, &e2) == OC_ERR_IO);
            OC_CHECK(strstr(e2.msg, "features.npy") != NULL);
        } else {
            OC_CHECK_OK(rc, &err);
            OC_CHECK(n_got == oc_batch_pipe_n_batches(bp));
        }
        oc_pipeline_free(p); /* joins every stage first, as train does */
        OC_CHECK(proc_n_threads_is(threads));
        oc_batch_pipe_free(bp);
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
    }
    fixture_free(&fx);
}

struct prep_job {
    struct oc_store *s;
    const struct oc_sample_batch *b;
    uint64_t batch;
    int rc;
    struct oc_err err;
};

static void *prepare_thread(void *arg)
{
    struct prep_job *j = arg;
    j->rc = oc_store_sampled(j->s, 0, j->batch, j->b, &j->err);
    return NULL;
}

/*
 * Extractors stuck waiting (no free slot, the reservation turn) and the
 * feeder stuck waiting for a free record, because the trainer takes nothing:
 * cancelling the pipeline (as Ctrl-C or another stage's error does) ends
 * every wait; the store's own pipeline is cancelled and joined at free, a
 * borrowed one by its owner. No thread is left either way.
 */
OC_TEST(cancel_while_extractors_wait)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    int threads = proc_n_threads();
    uint64_t nb;
    struct oc_sample_batch *bs = plan_inputs(&fx, &nb);
    for (int borrowed = 0; borrowed < 2; borrowed++) {
        struct oc_pipeline *p = NULL;
        struct oc_store_config c = gd_config(&fx, NULL, 3, 1);
        c.mem_bytes = min_budget(&c); /* the smallest buffer: extractors soon wait */
        if (borrowed) {
            OC_CHECK_OK(oc_pipeline_new("test pipeline", &p, &err), &err);
            c.pipeline = p;
        }
        struct oc_store *s = fixture_open("gnndrive", &c);
        if (!s) {
            oc_pipeline_free(p);
            continue;
        }
        oc_store_gnndrive_set_delay(s, 300);
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        uint64_t fed = 0;
        for (; fed < info.z.n_records && fed < nb; fed++)
            OC_CHECK_OK(oc_store_sampled(s, 0, fed, &bs[fed], &err), &err);
        /*
         * Every record is out: with a borrowed pipeline, a further prepare (on
         * another thread) waits for the releaser, which never runs.
         */
        struct prep_job j = {s, &bs[fed], fed, OC_OK, {0}};
        pthread_t t;
        int waiting = borrowed && fed < nb && pthread_create(&t, NULL, prepare_thread, &j) == 0;
        OC_CHECK(waiting == borrowed);
        usleep(200000);
        oc_store_gnndrive_info(s, &info);
        fprintf(stderr, "  %s pipeline: %llu of %llu fed batches extracted before the cancel\n",
                borrowed ? "borrowed" : "own", (unsigned long long)info.n_extracted,
                (unsigned long long)fed);
        OC_CHECK(info.n_extracted < fed); /* some extractor is waiting for slots */
        if (borrowed) {
            oc_pipeline_cancel(p);
            if (waiting)
                pthread_join(t, NULL);
            OC_CHECK(j.rc != OC_OK);
            OC_CHECK(oc_pipeline_status(p, &err) == OC_ERR_CANCELLED);
            oc_pipeline_free(p);
        }
        oc_store_free(s); /* its own pipeline: cancelled and joined here */
        OC_CHECK(proc_n_threads_is(threads));
        OC_CHECK(oc_mem_n_live() == live);
    }
    plan_inputs_free(bs, nb);
    fixture_free(&fx);
}

/*
 * After an epoch with room for every row, evaluation finds the rows the
 * batches loaded in the buffer (tier CPU, nothing read) and reads the others;
 * hits and misses mixed give the file's rows, f16 widened.
 */
static void evaluation_through_buffer(enum oc_dtype dtype)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 5000, 12, dtype)) {
        fixture_free(&fx);
        return;
    }
    uint64_t nb, rows = 0;
    struct oc_sample_batch *bs = plan_inputs(&fx, &nb);
    struct oc_store_config c = gd_config(&fx, NULL, 2, 2);
    c.mem_bytes = 0; /* a slot for every row: nothing the epoch loaded is evicted */
    struct oc_store *s = fixture_open("gnndrive", &c);
    if (s) {
        OC_CHECK(run_plan(&fx, s, NULL, 1, &rows) == 0);
        uint64_t n = bs[0].n_input;
        float *out = malloc((n + 700) * fx.dim * sizeof(float));
        struct oc_store_stats st0, st1;
        oc_store_stats(s, &st0);
        OC_CHECK_OK(oc_store_gather(s, bs[0].input_ids, n, out, &err), &err);
        oc_store_stats(s, &st1);
        OC_CHECK(st1.tier_rows[OC_STORE_TIER_CPU] - st0.tier_rows[OC_STORE_TIER_CPU] == n);
        OC_CHECK(st1.read_bytes == st0.read_bytes && st1.n_reads == st0.n_reads);
        OC_CHECK(fixture_bad_rows(&fx, bs[0].input_ids, n, out) == 0);
        /* every node: the loaded ones hit, the rest (never in a batch) are read */
        uint64_t *all = malloc(fx.n_nodes * sizeof(uint64_t));
        for (uint64_t v = 0; v < fx.n_nodes; v++)
            all[v] = fx.n_nodes - 1 - v;
        float *every = malloc(fx.n_nodes * fx.dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather(s, all, fx.n_nodes, every, &err), &err);
        oc_store_stats(s, &st0);
        uint64_t hit = st0.tier_rows[OC_STORE_TIER_CPU] - st1.tier_rows[OC_STORE_TIER_CPU];
        OC_CHECK(hit >= n && hit < fx.n_nodes);
        OC_CHECK(fixture_bad_rows(&fx, all, fx.n_nodes, every) == 0);
        free(all);
        free(every);
        free(out);
    }
    oc_store_free(s);
    plan_inputs_free(bs, nb);
    fixture_free(&fx);
}

OC_TEST(evaluation_reads_what_the_buffer_holds_f32)
{
    evaluation_through_buffer(OC_DTYPE_F32);
}

OC_TEST(evaluation_reads_what_the_buffer_holds_f16)
{
    evaluation_through_buffer(OC_DTYPE_F16);
}

/* ---- budgets and allocation faults -------------------------------------------------- */

OC_TEST(budget_below_minimum)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_store_strategy_find("gnndrive", &idx, &err), &err);
    struct oc_store_config c2 = gd_config(&fx, NULL, 2, 1), c6 = gd_config(&fx, NULL, 6, 1);
    uint64_t min2 = min_budget(&c2), min6 = min_budget(&c6);
    OC_CHECK(min6 > min2);
    c6.mem_bytes = min6 - 1;
    OC_CHECK_ERR(oc_store_open(idx, &c6, &s, &err), OC_ERR_BUDGET, &err, "needs at least");
    OC_CHECK(strstr(err.msg, "one batch") && strstr(err.msg, "the 1280 rows training reserves"));
    OC_CHECK(s == NULL);
    fprintf(stderr, "  %s\n", err.msg);
    c6.mem_bytes = min6;
    s = fixture_open("gnndrive", &c6);
    if (s) {
        struct oc_store_gnndrive_info info;
        struct oc_store_stats st;
        oc_store_gnndrive_info(s, &info);
        oc_store_stats(s, &st);
        /* One batch at its bound (no measure from train given): 1280 rows. */
        OC_CHECK(info.z.n_slots == info.z.min_slots && info.z.min_slots == 1280);
        OC_CHECK(info.z.est_rows > 0 && info.z.est_rows <= 1280 && info.z.max_rows == 1280);
        OC_CHECK(st.held_bytes <= min6);
    }
    oc_store_free(s);
    /* A fanout of -1 makes the largest batch every node: the buffer must hold them all. */
    fx.so.fanouts[0] = OC_SAMPLE_ALL;
    c2.mem_bytes = 4u << 20;
    OC_CHECK_ERR(oc_store_open(idx, &c2, &s, &err), OC_ERR_BUDGET, &err, "20000 row slots");
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/*
 * Batch records and extractor scratch sized for fewer rows than the batches
 * have (train's measure, cfg->batch_rows) grow as the batches come: every
 * row still right; and under a budget that cannot give the growth, the
 * error names the batch and its rows, with no hang and no leak.
 */
OC_TEST(records_grow_past_reserved_rows)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, NULL, 2, 1);
    c.batch_rows = 50;
    c.mem_bytes = min_budget(&c) + 200 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    if (s) {
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        OC_CHECK(info.z.max_rows == 50 && info.z.min_slots == info.z.est_rows);
        uint64_t rows = 0;
        OC_CHECK(run_plan(&fx, s, NULL, 1, &rows) == 0);
        OC_CHECK(rows > 50 * 4);
    }
    oc_store_free(s);
    uint64_t nb;
    struct oc_sample_batch *bs = plan_inputs(&fx, &nb);
    /* Nothing free in the budget: the buffer gives row slots for the growth. */
    s = fixture_open("gnndrive", &c);
    if (s) {
        uint64_t budget = oc_mem_budget();
        oc_mem_set_budget(oc_mem_used() + 64);
        OC_CHECK_OK(oc_store_sampled(s, 0, 0, &bs[0], &err), &err);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes > 0);
        oc_mem_set_budget(budget);
    }
    oc_store_free(s);
    /* The buffer already down to a batch's worth: the growth fails, naming the batch. */
    s = fixture_open("gnndrive", &c);
    if (s) {
        uint64_t budget = oc_mem_budget();
        oc_mem_set_budget(oc_mem_used() + 64);
        OC_CHECK(oc_alloc(oc_mem_budget() / 2, "more than the buffer can give", &err) == NULL);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes > 0);
        oc_mem_set_budget(oc_mem_used() + 64); /* nothing more to give */
        int rc = oc_store_sampled(s, 0, 0, &bs[0], &err);
        oc_mem_set_budget(budget);
        OC_CHECK_ERR(rc, OC_ERR_BUDGET, &err, "batch 0 of epoch 0 (");
        OC_CHECK(strstr(err.msg, "input rows): memory budget exceeded: store gnndrive") != NULL);
        fprintf(stderr, "  %s\n", err.msg);
    }
    oc_store_free(s);
    plan_inputs_free(bs, nb);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/*
 * Under a budget, a request in the middle of an epoch that the budget cannot
 * otherwise give takes row slots from the buffer (their rows are read again
 * by the batches after it, every row right); once it is freed, the next
 * batches take the slots back.
 */
OC_TEST(buffer_gives_slots_back_and_takes_them_back)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 64, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live(), used0 = oc_mem_used();
    struct oc_store_config c = gd_config(&fx, NULL, 2, 4);
    c.mem_bytes = min_budget(&c) + 3000 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    struct oc_batch_pipe *bp = NULL;
    struct oc_batch_pipe_config pc = fixture_pipe_config(&fx, s, 2);
    if (s)
        OC_CHECK_OK(oc_batch_pipe_new(&pc, &bp, &err), &err);
    uint64_t nb = bp ? oc_batch_pipe_n_batches(bp) : 0, bad = 0;
    struct oc_store_stats st, st0, st1, st2;
    void *big = NULL;
    OC_CHECK(!bp || nb >= 3);
    for (uint32_t e = 0; e < 4 && bp; e++) {
        if (e == 1) /* between epochs: the fetch stage gathers once the epoch is open */
            oc_store_stats(s, &st0);
        if (e == 2)
            oc_store_stats(s, &st1);
        if (e == 3)
            oc_store_stats(s, &st2);
        OC_CHECK_OK(oc_batch_pipe_epoch(bp, e, &err), &err);
        OC_CHECK_OK(oc_batch_pipe_open(bp, &err), &err);
        for (uint64_t b = 0; b < nb; b++) {
            struct oc_pipe_batch *pb;
            if (e == 1 && b == 1) { /* every slot used by now: 500 rows past the budget */
                uint64_t used = oc_mem_used();
                oc_mem_set_budget(used + 1000);
                big = oc_alloc(1000 + 500 * fx.row_bytes, "a larger batch", &err);
                OC_CHECK(big != NULL);
                OC_CHECK(oc_mem_used() <= used + 1000);
            }
            if (e == 2 && b == 0) {
                oc_free(big);
                big = NULL;
                oc_mem_set_budget(0);
            }
            int rc = oc_batch_pipe_next(bp, &pb, &err);
            OC_CHECK_OK(rc, &err);
            if (rc)
                break;
            bad += fixture_bad_rows(&fx, pb->batch.input_ids, pb->batch.n_input, pb->x);
            oc_batch_pipe_done(bp, pb);
        }
        if (e == 1) { /* between epochs (the fetch stage is idle): still given back */
            oc_store_stats(s, &st);
            OC_CHECK(st.given_back_bytes >= 500 * fx.row_bytes);
        }
    }
    OC_CHECK(bad == 0);
    if (s) {
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes == 0);
        /* the last epoch ran on the whole buffer again: more of its rows hit than epoch 1's */
        uint64_t hit1 = st1.tier_rows[OC_STORE_TIER_CPU] - st0.tier_rows[OC_STORE_TIER_CPU];
        uint64_t hit3 = st.tier_rows[OC_STORE_TIER_CPU] - st2.tier_rows[OC_STORE_TIER_CPU];
        OC_CHECK(hit3 > hit1);
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr,
                    "  rows from the buffer: %" PRIu64 " in epoch 1 (slots given back), "
                    "%" PRIu64 " in epoch 3\n",
                    hit1, hit3);
    }
    oc_free(big);
    oc_mem_set_budget(0);
    oc_batch_pipe_free(bp);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live && oc_mem_used() == used0);
    fixture_free(&fx);
}

/*
 * Row slots given back down to the buffer's minimum: a batch larger than the
 * slots in use needs some back before it is fed. While the request holds the
 * budget that fails, naming the batch; once it is freed the batch takes them
 * back and its rows come out right.
 */
OC_TEST(larger_batch_takes_its_slots_back)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 20000, 64, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = gd_config(&fx, NULL, 2, 1);
    c.mem_bytes = min_budget(&c) + 3000 * (fx.row_bytes + 21);
    struct oc_store *s = fixture_open("gnndrive", &c);
    if (s) {
        struct oc_store_gnndrive_info info;
        oc_store_gnndrive_info(s, &info);
        uint64_t used = oc_mem_used();
        oc_mem_set_budget(used + 1000);
        void *big = oc_alloc(1000 + 2500 * fx.row_bytes, "a larger batch", &err);
        OC_CHECK(big != NULL);
        struct oc_store_stats st0, st1;
        oc_store_stats(s, &st0);
        OC_CHECK(st0.given_back_bytes >= 2500 * fx.row_bytes);
        /* 50 rows more than the slots left in use, distinct nodes */
        struct oc_sample_batch b;
        oc_sample_batch_init(&b);
        b.n_input = info.z.n_slots - st0.given_back_bytes / fx.row_bytes + 50;
        b.input_ids = malloc(b.n_input * sizeof(uint64_t));
        for (uint64_t i = 0; i < b.n_input; i++)
            b.input_ids[i] = (i * 7919) % fx.n_nodes;
        OC_CHECK(b.n_input < fx.n_nodes && b.n_input <= info.z.n_slots);
        OC_CHECK_ERR(oc_store_sampled(s, 0, 0, &b, &err), OC_ERR_BUDGET, &err,
                     "row slots it gave back");
        OC_CHECK(strstr(err.msg, "batch 0 of epoch 0") != NULL);
        fprintf(stderr, "  %s\n", err.msg);
        oc_free(big);
        oc_mem_set_budget(0);
        OC_CHECK_OK(oc_store_sampled(s, 0, 0, &b, &err), &err);
        oc_store_stats(s, &st1);
        OC_CHECK(st1.given_back_bytes < st0.given_back_bytes);
        float *out = malloc(b.n_input * fx.dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, b.input_ids, b.n_input, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, b.input_ids, b.n_input, out) == 0);
        free(out);
        free(b.input_ids);
    }
    oc_mem_set_budget(0);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST(alloc_faults)
{
    struct fixture fx;
    struct oc_err err;
    if (!gd_fixture(&fx, 5000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = gd_config(&fx, NULL, 2, 1);
    c.batch_rows = 50; /* records and scratch grow: those allocations fail in turn too */
    c.mem_bytes = min_budget(&c) + 100 * (fx.row_bytes + 21);
    uint64_t nb;
    struct oc_sample_batch *bs = plan_inputs(&fx, &nb);
    float *out = malloc(2000 * fx.dim * sizeof(float));
    uint64_t base = oc_mem_n_live();
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find("gnndrive", &idx, &err), &err);
    /* with the store's own pipeline, then with a borrowed one freed before the store (train) */
    for (int mode = 0; mode < 2 * FAULT_MODE_COUNT; mode++) {
        int borrowed = mode >= FAULT_MODE_COUNT;
        for (uint64_t nth = 1; nth < 400; nth++) {
            struct oc_store *s = NULL;
            struct oc_pipeline *pipe = NULL;
            if (borrowed)
                OC_CHECK_OK(oc_pipeline_new("test pipeline", &pipe, &err), &err);
            c.pipeline = pipe;
            fault_arm_mode(mode % FAULT_MODE_COUNT, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = oc_store_open(idx, &c, &s, &err);
            /* A failure in a thread surfaces at the next call. */
            for (uint64_t b = 0; b < nb && rc == OC_OK; b++) {
                rc = oc_store_sampled(s, 0, b, &bs[b], &err);
                if (rc == OC_OK)
                    rc = oc_store_gather_batch(s, 0, b, bs[b].input_ids, bs[b].n_input, out, &err);
            }
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            oc_pipeline_free(pipe);
            oc_store_free(s);
            if (fired ? rc != OC_ERR_NOMEM : rc != OC_OK)
                fprintf(stderr, "  %s alloc #%llu: %s: %s\n", fault_mode_name(mode % 2),
                        (unsigned long long)nth, oc_status_str(rc), err.msg);
            OC_CHECK(fired ? rc == OC_ERR_NOMEM : rc == OC_OK);
            OC_CHECK(oc_mem_n_live() == base);
            if (!fired) {
                OC_CHECK(nth > 1);
                fprintf(stderr, "  %s, %s pipeline: %llu allocations failed in turn\n",
                        fault_mode_name(mode % 2), borrowed ? "borrowed" : "own",
                        (unsigned long long)nth - 1);
                break;
            }
        }
    }
    plan_inputs_free(bs, nb);
    free(out);
    fixture_free(&fx);
}

OC_TEST_MAIN()
