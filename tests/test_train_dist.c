/*
 * test_train_dist.c — the pieces of data-parallel training that need no
 * mpirun: a micro-shard cut out of a hand-built sampled batch (golden: its
 * nodes, edges and input rows), the fixed pairwise tree that sums shards'
 * gradients (an order where float rounding tells the tree from a running
 * sum), the dist module outside a process group (rank 0 of 1; in a build
 * without MPI, --distributed refused with how to get it), and the option
 * checks (--distributed outside mpirun, too many micro-shards, outre's
 * historical embeddings refused but not outre with --staleness 0); and
 * in a run, micro-shards train the batches' mean loss.
 * tests/test_train_mpi.sh runs the ranks themselves.
 *
 * Place in the data flow: tests (train/shard.c, train/dist.h, train.c's checks).
 * Thread-safety: single-threaded test code.
 * Ownership: everything is freed before each test returns.
 */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "offcore/generate.h"
#include "offcore/train.h"
#include "train/dist.h"
#include "train/train_int.h"

/*
 * Input positions 0..5 (ids 10..15), seeds 0..2.
 *   block 1 (seeds <- 0..4): 0 <- {3, 1}, 1 <- {4}, 2 <- {0, 3}
 *   block 0 (0..4 <- 0..5):  0 <- {5}, 1 <- {0}, 2 <- {}, 3 <- {2, 5}, 4 <- {1}
 */
static uint64_t ids[6] = {10, 11, 12, 13, 14, 15};
static uint64_t ip1[4] = {0, 2, 3, 5};
static uint32_t ix1[5] = {3, 1, 4, 0, 3};
static uint64_t ip0[6] = {0, 1, 2, 2, 4, 5};
static uint32_t ix0[5] = {5, 0, 2, 5, 1};

static void golden_batch(struct oc_sample_batch *b)
{
    memset(b, 0, sizeof(*b));
    b->n_layers = 2;
    b->n_seeds = 3;
    b->n_input = 6;
    b->input_ids = ids;
    b->blocks[1] = (struct oc_sample_block){
        .n_src = 5, .n_dst = 3, .n_edges = 5, .indptr = ip1, .indices = ix1};
    b->blocks[0] = (struct oc_sample_block){
        .n_src = 6, .n_dst = 5, .n_edges = 5, .indptr = ip0, .indices = ix0};
}

OC_TEST(shard_cut_golden)
{
    struct oc_sample_batch b;
    golden_batch(&b);
    float x[12];
    for (int p = 0; p < 6; p++) {
        x[2 * p] = (float)p;
        x[2 * p + 1] = 100.0f + (float)p;
    }
    struct train_shard sh;
    memset(&sh, 0, sizeof(sh));
    struct oc_err err;
    /* seeds 1 and 2: new order 1, 2 | 4, 0, 3 (block 1's new sources) | 5 (block 0's) */
    OC_CHECK_OK(train_shard_cut(&sh, &b, x, NULL, 2, 1, 3, &err), &err);
    const struct oc_sample_batch *s = &sh.b;
    OC_CHECK(s->n_seeds == 2 && s->n_input == 6 && s->n_layers == 2);
    const uint64_t want_ids[6] = {11, 12, 14, 10, 13, 15};
    OC_CHECK(memcmp(s->input_ids, want_ids, sizeof(want_ids)) == 0);
    OC_CHECK(s->blocks[1].n_dst == 2 && s->blocks[1].n_src == 5 && s->blocks[1].n_edges == 3);
    const uint64_t want_ip1[3] = {0, 1, 3};
    const uint32_t want_ix1[3] = {2, 3, 4};
    OC_CHECK(memcmp(s->blocks[1].indptr, want_ip1, sizeof(want_ip1)) == 0);
    OC_CHECK(memcmp(s->blocks[1].indices, want_ix1, sizeof(want_ix1)) == 0);
    OC_CHECK(s->blocks[0].n_dst == 5 && s->blocks[0].n_src == 6 && s->blocks[0].n_edges == 5);
    const uint64_t want_ip0[6] = {0, 1, 1, 2, 3, 5};
    const uint32_t want_ix0[5] = {3, 0, 5, 1, 5};
    OC_CHECK(memcmp(s->blocks[0].indptr, want_ip0, sizeof(want_ip0)) == 0);
    OC_CHECK(memcmp(s->blocks[0].indices, want_ix0, sizeof(want_ix0)) == 0);
    const int old[6] = {1, 2, 4, 0, 3, 5};
    for (int k = 0; k < 6; k++)
        OC_CHECK(sh.x[2 * k] == (float)old[k] && sh.x[2 * k + 1] == 100.0f + (float)old[k]);
    /* the whole batch as one shard is the batch itself; a cut is reusable */
    OC_CHECK_OK(train_shard_cut(&sh, &b, x, NULL, 2, 0, 3, &err), &err);
    OC_CHECK(sh.b.n_input == 6 && memcmp(sh.b.input_ids, ids, sizeof(ids)) == 0);
    OC_CHECK(memcmp(sh.b.blocks[1].indices, ix1, sizeof(ix1)) == 0);
    OC_CHECK(memcmp(sh.b.blocks[0].indptr, ip0, sizeof(ip0)) == 0);
    /* seed 0 alone: only what it reaches */
    OC_CHECK_OK(train_shard_cut(&sh, &b, x, NULL, 2, 0, 1, &err), &err);
    OC_CHECK(sh.b.n_input == 5 && sh.b.blocks[1].n_src == 3 && sh.b.blocks[0].n_dst == 3);
    train_shard_deinit(&sh);
}

OC_TEST(shard_ranges_cover_everything_once)
{
    for (uint32_t parts = 1; parts <= 7; parts++)
        for (uint64_t n = 0; n <= 20; n++) {
            uint64_t next = 0;
            for (uint32_t k = 0; k < parts; k++) {
                uint64_t lo, hi;
                train_shard_range(n, parts, k, &lo, &hi);
                OC_CHECK(lo == next && hi >= lo);
                next = hi;
            }
            OC_CHECK(next == n);
        }
}

OC_TEST(tree_sum_is_a_fixed_pairwise_tree)
{
    /* (a + b) + (c + d) = 0 in float; the running sum ((a + b) + c) + d = 1 */
    float rows[4 * 3] = {1e8f, 7, 0, 1, 7, 0, -1e8f, 7, 0, 1, 7, 0};
    train_shard_tree_sum(rows, 4, 3, 1);
    OC_CHECK(rows[0] == 0.0f);
    OC_CHECK(rows[1] == 7.0f);     /* past width: untouched */
    float three[3] = {1e8f, 1, 1}; /* (r0 + r1) + r2: each 1 is lost */
    train_shard_tree_sum(three, 3, 1, 1);
    OC_CHECK(three[0] == 1e8f);
    float one[1] = {5};
    train_shard_tree_sum(one, 1, 1, 1);
    OC_CHECK(one[0] == 5.0f);
}

OC_TEST(dist_outside_a_group_is_rank_0_of_1)
{
    OC_CHECK(!oc_dist_on() && oc_dist_rank() == 0 && oc_dist_size() == 1);
    float send[3] = {1, 2, 3}, recv[3] = {0};
    uint64_t counts[1] = {3};
    struct oc_err err;
    OC_CHECK_OK(oc_dist_allgather_f32(send, recv, counts, &err), &err);
    OC_CHECK(memcmp(send, recv, sizeof(send)) == 0);
    if (oc_dist_built())
        return; /* the refusal of a build without MPI: test_dist_none */
    OC_CHECK_ERR(oc_dist_init(&err), OC_ERR_UNSUPPORTED, &err, "built without MPI");
    OC_CHECK(!oc_dist_on());
}

OC_TEST(options_refused)
{
    struct oc_train_opts o;
    struct oc_err err;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.distributed = 1;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "not in an MPI process group");
    o.distributed = 0;
    o.micro_shards = TRAIN_MAX_MICRO_SHARDS + 1;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--micro-shards 4097");
    o.micro_shards = 4;
    OC_CHECK_OK(oc_train_opts_check(&o, &err), &err);
    o.strategy = "outre"; /* its historical embeddings (the default --staleness 100) */
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_UNSUPPORTED, &err,
                 "outre's historical embeddings (--staleness 100) are kept per whole batch");
    OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 0, &err), &err); /* a feature cache alone */
    OC_CHECK_OK(oc_train_opts_check(&o, &err), &err);
    o.n_store_opts = 0;
    o.strategy = "gnndrive";
    OC_CHECK_OK(oc_train_opts_set(&o, "reorder", 1, &err), &err);
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--reorder");
}

static const char *dataset(void)
{
    static char dir[1024];
    if (dir[0])
        return dir;
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    g.avg_degree = 6;
    g.feat_dim = 16;
    g.n_classes = 4;
    g.train_frac = 0.3;
    snprintf(dir, sizeof(dir), "%s/g", oc_test_tmpdir());
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    return dir;
}

static void last_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    *(struct oc_train_epoch_stats *)ctx = *st;
}

/*
 * One process, no dropout: M micro-shards (uneven: 301 seeds in 4) train the
 * batches' mean loss, so the losses follow whole batches' to float rounding;
 * the same M gives the same weights again; M = 1 is the plain path.
 */
OC_TEST(micro_shards_train_the_batch_mean)
{
    struct oc_train_opts o;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.epochs = 4;
    o.batch_size = 301;
    o.dropout = 0.0f;
    o.eval = OC_TRAIN_EVAL_NONE;
    o.n_threads = 1;
    struct oc_train_result whole, one, m4, again;
    struct oc_train_epoch_stats st;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dataset(), &o, NULL, NULL, NULL, &whole, &err), &err);
    o.micro_shards = 1;
    OC_CHECK_OK(oc_train_run(dataset(), &o, NULL, NULL, NULL, &one, &err), &err);
    OC_CHECK(strcmp(whole.weights_sha256, one.weights_sha256) == 0);
    o.micro_shards = 4;
    OC_CHECK_OK(oc_train_run(dataset(), &o, last_epoch, &st, NULL, &m4, &err), &err);
    OC_CHECK_OK(oc_train_run(dataset(), &o, NULL, NULL, NULL, &again, &err), &err);
    OC_CHECK(strcmp(m4.weights_sha256, again.weights_sha256) == 0);
    OC_CHECK(strcmp(m4.weights_sha256, whole.weights_sha256) != 0); /* another sum order */
    double rel = fabs(m4.final_loss - whole.final_loss) / whole.final_loss;
    if (rel > 1e-5)
        fprintf(stderr, "  final loss %.9g (4 shards) vs %.9g (whole batches)\n", m4.final_loss,
                whole.final_loss);
    OC_CHECK(rel <= 1e-5);
    OC_CHECK(st.ranks == 1 && st.micro_shards == 4 && st.grad_sent_bytes == 0);
}

OC_TEST_MAIN()
