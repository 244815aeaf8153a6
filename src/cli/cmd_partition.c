/*
 * cmd_partition.c — `offcore partition DIR --parts N OUT`: the dataset in DIR
 * cut by METIS into N parts, one per rank of `mpirun -np N offcore train OUT
 * --distributed` (plan/part_set.c, docs/FORMAT.md section 10).
 *
 * Place in the data flow: cli → plan (partition and writer) → dataset.
 * Thread-safety: main thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/io.h"
#include "offcore/plan.h"
#include "offcore/progress.h"

int cmd_partition(int argc, char **argv)
{
    const char *plan_dir = NULL;
    uint32_t parts = 0;
    uint64_t budget = 0;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"parts", CLI_U32, &parts, "N",
         "parts to cut the dataset into, one per rank of the distributed run (2 to 256; "
         "required)",
         NULL},
        {"plan-dir", CLI_STR, &plan_dir, "PLAN",
         "where the METIS parts file is kept (default DIR/plan)", NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL,
         "hard limit on memory held (the topology, METIS's workspace and an 8-byte map per "
         "node; default: no limit)",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "partition",
        "DIR --parts N OUT [options]",
        "Write into the new directory OUT the dataset in DIR cut into N parts by METIS (nodes\n"
        "and training nodes balanced, edge cut minimised): OUT/part-K holds the features of\n"
        "part K's nodes, the whole topology, labels and splits, and the map from every node\n"
        "to its owner part and row; OUT/partition.json ties the parts of one run together.\n"
        "Train on it with mpirun -np N offcore train OUT --distributed.",
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
    if (parts == 0) {
        fprintf(stderr, "offcore partition: --parts N is required (N >= 2)\n");
        return 2;
    }
    cli_log_init(verbose);
    struct oc_err err;
    oc_err_clear(&err);
    oc_mem_set_budget(budget);
    double t0 = oc_now_s();
    struct oc_dataset *ds = NULL;
    struct oc_progress *bar = NULL;
    char dflt_plan[4200], run_id[OC_PLAN_RUN_ID_LEN + 1];
    rc = oc_path_join(dflt_plan, sizeof(dflt_plan), pos[0], "plan", &err);
    if (rc == OC_OK)
        rc = oc_dataset_open(pos[0], OC_DS_OPEN_DEFAULT, &ds, &err);
    if (rc == OC_OK)
        rc = oc_progress_new(quiet ? NULL : stderr, &bar, &err);
    if (rc == OC_OK)
        rc = oc_plan_part_set_write(ds, parts, plan_dir ? plan_dir : dflt_plan, pos[1], bar, run_id,
                                    &err);
    oc_progress_free(bar);
    oc_dataset_free(ds);
    if (rc == OC_OK) {
        char peak[32];
        printf("partitioned %s into %u parts as %s (run %s) in %.1f s (peak memory held %s)\n",
               pos[0], parts, pos[1], run_id, oc_now_s() - t0,
               oc_format_size(oc_mem_peak(), peak, sizeof(peak)));
    }
    return rc == OC_OK ? 0 : cli_fail(&err);
}
