/*
 * cmd_layout.c — `offcore layout DIR OUT --order degree|bfs|partition`: a
 * copy of the dataset in DIR whose feature rows are in a locality order
 * (plan/order.c), with the node -> row map beside them (dataset/relayout.c,
 * docs/FORMAT.md version 2). Every strategy reads through the map, so
 * training on OUT gives the weights training on DIR gives.
 *
 * Place in the data flow: cli → plan (the order) → dataset (the copy).
 * Thread-safety: main thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/dataset.h"
#include "offcore/plan.h"
#include "offcore/progress.h"
#include "offcore/sample.h"

#define LAYOUT_DEFAULT_BAND ((uint64_t)1 << 30) /* rows filled per scan without --mem-budget */
#define LAYOUT_PART_NODES   1000u               /* --part-nodes default: METIS parts' size */

struct layout_topo {
    uint64_t *indptr;
    void *indices;
    uint64_t *train;
    struct oc_graph g;
};

static void topo_free(struct layout_topo *t)
{
    oc_free(t->indptr);
    oc_free(t->indices);
    oc_free(t->train);
    memset(t, 0, sizeof(*t));
}

static int topo_load(const struct oc_dataset *ds, struct layout_topo *t, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    uint64_t n_train;
    memset(t, 0, sizeof(*t));
    int rc = oc_dataset_load_indptr(ds, &t->indptr, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_indices(ds, m->index_dtype, &t->indices, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, &t->train, &n_train, err);
    t->g.n_nodes = m->n_nodes;
    t->g.indptr = t->indptr;
    if (m->index_dtype == OC_DTYPE_U32)
        t->g.indices32 = t->indices;
    else
        t->g.indices64 = t->indices;
    return rc;
}

/* The order as rows (row_of, n_nodes entries), and how close it brings neighbours' rows. */
static int compute_order(const struct oc_dataset *ds, struct oc_plan_order_opts *o,
                         uint64_t **row_of, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    struct layout_topo t;
    int rc = topo_load(ds, &t, err);
    if (rc == OC_OK && !(*row_of = oc_alloc((m->n_nodes ? m->n_nodes : 1) * sizeof(uint64_t),
                                            "layout: rows", err)))
        rc = err->status;
    if (rc == OC_OK) {
        o->train_ids = t.train;
        o->n_train = m->n_train;
        double t0 = oc_now_s();
        rc = oc_plan_feature_order(ds, &t.g, o, *row_of, err);
        if (rc == OC_OK) {
            uint64_t rb = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
            oc_log(OC_LOG_INFO,
                   "layout %s: computed in %.1f s; edges whose ends' rows share a page or "
                   "neighbouring pages: %.1f%% (node id order: %.1f%%)",
                   oc_plan_order_name(o->order), oc_now_s() - t0,
                   100.0 * oc_plan_order_locality(&t.g, *row_of, rb),
                   100.0 * oc_plan_order_locality(&t.g, NULL, rb));
        }
    }
    topo_free(&t); /* before the copy: its band takes what they held */
    return rc;
}

int cmd_layout(int argc, char **argv)
{
    const char *order = "bfs", *plan_dir = NULL;
    uint64_t budget = 0, part_nodes = LAYOUT_PART_NODES;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"order", CLI_CHOICE, &order, "ORDER",
         "the rows' order: degree (in-degree descending), bfs (breadth-first from the hubs; "
         "default) or partition (METIS parts of --part-nodes nodes, part by part)",
         "degree|bfs|partition"},
        {"part-nodes", CLI_U64, &part_nodes, "N", "partition: nodes per part (default 1000)", NULL},
        {"plan-dir", CLI_STR, &plan_dir, "PLAN",
         "partition: where the parts file is kept (default DIR/plan)", NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL,
         "hard limit on memory held; the rest of it after the topology and maps is the band of "
         "rows filled per scan of the features (default: no limit, 1 GiB bands)",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL, "no progress bar", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "layout",
        "DIR OUT [options]",
        "Write into the new directory OUT a copy of the dataset in DIR whose feature rows are\n"
        "in a locality order, with the node -> row map beside them (feature_rows.npy). Node\n"
        "ids, topology, labels and splits are unchanged: training on OUT gives the weights\n"
        "training on DIR gives, with fewer pages read per batch.",
        NULL,
        opts,
        sizeof(opts) / sizeof(opts[0]),
        2,
        2,
        NULL};
    const char *pos[2];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    cli_log_init(verbose);
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_plan_order_opts o = {0};
    if (oc_plan_order_from_name(order, &o.order) != OC_OK || part_nodes == 0) {
        fprintf(stderr, "offcore layout: %s\n",
                part_nodes ? "bad --order" : "--part-nodes must be at least 1");
        return 2;
    }
    o.part_nodes = part_nodes;
    oc_mem_set_budget(budget);
    struct oc_dataset *ds = NULL;
    uint64_t *row_of = NULL;
    struct oc_progress *bar = NULL;
    char dflt_plan[4200];
    double t0 = oc_now_s();
    if ((rc = oc_dataset_open(pos[0], OC_DS_OPEN_DEFAULT, &ds, &err)))
        goto out;
    if (oc_dataset_manifest(ds)->feat_dim == 0) {
        rc = OC_ERR(&err, OC_ERR_ARG, "%s: has no features: there is nothing to lay out", pos[0]);
        goto out;
    }
    snprintf(dflt_plan, sizeof(dflt_plan), "%s/plan", pos[0]);
    o.plan_dir = plan_dir ? plan_dir : dflt_plan;
    if ((rc = compute_order(ds, &o, &row_of, &err)))
        goto out;
    uint64_t band = LAYOUT_DEFAULT_BAND;
    if (budget) {
        uint64_t used = oc_mem_used() + ((uint64_t)16 << 20); /* reads, writer, manifest */
        band = budget > used ? budget - used : 0;
    }
    if ((rc = oc_progress_new(quiet ? NULL : stderr, "layout", oc_dataset_manifest(ds)->n_nodes,
                              &bar, &err)))
        goto out;
    rc = oc_dataset_relayout(ds, row_of, order, pos[1], band, bar, &err);
out:
    oc_progress_free(bar);
    oc_free(row_of);
    if (rc == OC_OK) {
        char peak[32];
        printf("laid out %s as %s (order %s) in %.1f s (peak memory held %s)\n", pos[0], pos[1],
               order, oc_now_s() - t0, oc_format_size(oc_mem_peak(), peak, sizeof(peak)));
    }
    oc_dataset_free(ds);
    return rc == OC_OK ? 0 : cli_fail(&err);
}
