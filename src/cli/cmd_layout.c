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
#include "offcore/plan.h"
#include "offcore/progress.h"

int cmd_layout(int argc, char **argv)
{
    const char *order = "bfs", *plan_dir = NULL;
    uint64_t budget = 0, part_nodes = CLI_PART_NODES_UNSET;
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
    struct oc_plan_order_opts o;
    if (cli_layout_opts("layout", order, part_nodes, &o))
        return 2;
    oc_mem_set_budget(budget);
    double t0 = oc_now_s();
    rc = cli_layout_run(pos[0], pos[1], &o, plan_dir, quiet, &err);
    if (rc == OC_OK) {
        char peak[32];
        printf("laid out %s as %s (order %s) in %.1f s (peak memory held %s)\n", pos[0], pos[1],
               order, oc_now_s() - t0, oc_format_size(oc_mem_peak(), peak, sizeof(peak)));
    }
    return rc == OC_OK ? 0 : cli_fail(&err);
}
