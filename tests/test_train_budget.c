/*
 * test_train_budget.c — the start-up memory check is sized from measured
 * batches, not from the fanout bound: with the papers' model shape
 * (GraphSAGE, 3 layers, fanout 15,10,5) the smallest --mem-budget `direct`
 * accepts and trains under is at most 1.3x the most memory the same run holds
 * without a budget (through the accountant), on a power-law and on a
 * near-uniform graph, and so for GAT (4 heads) and GCN at fanout 10,10; a
 * budget below that is refused at start (OC_ERR_BUDGET), not run out of midway;
 * and the weights are those of the unbudgeted run.
 *
 * Place in the data flow: tests (generate → train, in-process, with the
 * accountant's hard limit set as the CLI sets it).
 * Thread-safety: single-threaded test code; training runs its pipeline.
 * Ownership: datasets live under the test's temporary directory.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "offcore/generate.h"
#include "offcore/train.h"

static enum oc_nn_model_kind shape_model = OC_NN_MODEL_SAGE;

/*
 * The shapes, narrower: SAGE 3 layers, fanout 15,10,5; GAT 2 layers,
 * 4 heads, fanout 10,10; GCN 2 layers, fanout 10,10.
 */
static void paper_shape(struct oc_train_opts *o)
{
    oc_train_opts_default(shape_model, o);
    if (shape_model == OC_NN_MODEL_SAGE) {
        o->n_layers = 3;
        o->n_fanouts = 3;
        o->fanouts[0] = 15;
        o->fanouts[1] = 10;
        o->fanouts[2] = 5;
    } else {
        o->n_layers = 2;
        o->n_fanouts = 2;
        o->fanouts[0] = o->fanouts[1] = 10;
    }
    if (shape_model == OC_NN_MODEL_GAT)
        o->heads = 4;
    o->hidden = shape_model == OC_NN_MODEL_GAT ? 16 : 64;
    o->batch_size = 256;
    o->eval_batch_size = 256;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->epochs = 1;
    o->n_threads = 2;
    o->strategy = "direct";
}

/* Trains under a hard limit of `budget` bytes (0: none); the run's status. */
static int train_under(const char *dir, uint64_t budget, uint64_t *peak, char *sha,
                       struct oc_err *err)
{
    struct oc_train_opts o;
    paper_shape(&o);
    o.mem_budget = budget;
    uint64_t base = oc_mem_used();
    oc_mem_reset_peak();
    oc_mem_set_budget(budget ? base + budget : 0);
    struct oc_train_result res;
    int rc = oc_train_run(dir, &o, NULL, NULL, NULL, &res, err);
    oc_mem_set_budget(0);
    if (peak)
        *peak = oc_mem_peak() - base;
    if (rc == OC_OK && sha)
        memcpy(sha, res.weights_sha256, sizeof(res.weights_sha256));
    return rc;
}

static void check_graph(const char *name, double power_law)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 40000;
    g.avg_degree = 12;
    g.feat_dim = 64;
    g.n_classes = 5;
    g.power_law = power_law;
    g.train_frac = 0.02;
    g.val_frac = 0.01;
    g.test_frac = 0.01;
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/%s", oc_test_tmpdir(), name);
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    uint64_t peak = 0;
    char ref[65] = {0}, sha[65] = {0};
    OC_CHECK_OK(train_under(dir, 0, &peak, ref, &err), &err);
    /* the smallest budget that trains, to 1/64 of the peak */
    uint64_t lo = peak / 4, hi = 4 * peak, step = peak / 64;
    int lo_rc = train_under(dir, lo, NULL, NULL, &err);
    OC_CHECK(lo_rc == OC_ERR_BUDGET); /* refused at start, saying what it needs */
    OC_CHECK(train_under(dir, hi, NULL, sha, &err) == OC_OK);
    while (hi - lo > step) {
        uint64_t mid = lo + (hi - lo) / 2;
        int rc = train_under(dir, mid, NULL, NULL, &err);
        OC_CHECK(rc == OC_OK || rc == OC_ERR_BUDGET || rc == OC_ERR_NOMEM);
        if (rc == OC_OK) {
            hi = mid;
        } else {
            lo = mid;
            lo_rc = rc;
        }
    }
    /* the largest budget that fails is refused by the start-up check: a run it lets start
       does not run out of its budget midway */
    if (lo_rc != OC_ERR_BUDGET)
        fprintf(stderr, "  %s: the largest failing budget failed with %s, not at start\n", name,
                oc_status_str(lo_rc));
    OC_CHECK(lo_rc == OC_ERR_BUDGET);
    OC_CHECK_OK(train_under(dir, hi, NULL, sha, &err), &err);
    fprintf(stderr,
            "  %s: held at most %.2f MiB without a budget; smallest budget %.2f MiB (%.2fx)\n",
            name, (double)peak / 1048576.0, (double)hi / 1048576.0, (double)hi / (double)peak);
    OC_CHECK(hi <= peak + peak * 3 / 10);
    OC_CHECK(strcmp(sha, ref) == 0);
}

OC_TEST(smallest_budget_within_1_3x_of_the_unbudgeted_peak_power_law)
{
    check_graph("power-law", 2.2);
}

OC_TEST(smallest_budget_within_1_3x_of_the_unbudgeted_peak_uniform)
{
    check_graph("uniform", 50.0);
}

OC_TEST(smallest_budget_within_1_3x_for_gat_and_gcn_at_fanout_10_10)
{
    shape_model = OC_NN_MODEL_GAT;
    check_graph("gat-power-law", 2.2);
    shape_model = OC_NN_MODEL_GCN;
    check_graph("gcn-power-law", 2.2);
    shape_model = OC_NN_MODEL_SAGE;
}

OC_TEST_MAIN()
