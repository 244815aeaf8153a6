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

#define LAYOUT_PART_NODES 1000u /* --part-nodes default: METIS parts' size */

int cmd_layout(int argc, char **argv)
{
    const char *order = "bfs", *plan_dir = NULL;
    uint64_t budget = 0, part_nodes = LAYOUT_PART_NODES;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"order", CLI_CHOICE, &order, "ORDER",
         "the rows' order: degree (in-degree descending), bfs (breadth-first from the hubs; "
         "default), partition (METIS parts of --part-nodes nodes, part by part) or lpa "
         "(label propagation's communities, capped at 4 x --part-nodes; scales where METIS "
         "does not)",
         "degree|bfs|partition|lpa"},
        {"part-nodes", CLI_U64, &part_nodes, "N",
         "partition: nodes per part; lpa: a quarter of the largest community (default 1000)", NULL},
        {"plan-dir", CLI_STR, &plan_dir, "PLAN",
         "partition: where the parts file is kept (default DIR/plan)", NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL,
         "hard limit on memory held; the rest of it after the topology and maps is the band of "
         "rows filled per scan of the features (default: no limit, 1 GiB bands)",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
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
    struct oc_progress *bar = NULL;
    char dflt_plan[4200];
    double t0 = oc_now_s();
    if ((rc = oc_dataset_open(pos[0], OC_DS_OPEN_DEFAULT, &ds, &err)))
        goto out;
    snprintf(dflt_plan, sizeof(dflt_plan), "%s/plan", pos[0]);
    o.plan_dir = plan_dir ? plan_dir : dflt_plan;
    if ((rc = oc_progress_new(quiet ? NULL : stderr, &bar, &err)))
        goto out;
    rc = oc_plan_layout_dataset(ds, &o, pos[1], OC_PLAN_LAYOUT_BAND_LEFT, bar, &err);
out:
    oc_progress_free(bar);
    if (rc == OC_OK) {
        char peak[32];
        printf("laid out %s as %s (order %s) in %.1f s (peak memory held %s)\n", pos[0], pos[1],
               order, oc_now_s() - t0, oc_format_size(oc_mem_peak(), peak, sizeof(peak)));
    }
    oc_dataset_free(ds);
    return rc == OC_OK ? 0 : cli_fail(&err);
}
