/*
 * cmd_kg_import.c — `offcore import kg SRC OUT`: a GraIL inductive split
 * (SRC = X_vK, beside it X_vK_ind) into a new KG dataset directory
 * (include/offcore/kg.h, docs/FORMAT.md section 9). cmd_import hands
 * "import kg ..." here, so the node importers' options are not offered.
 *
 * Place in the data flow: cli → kg (import).
 * Thread-safety: main thread.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "offcore/kg.h"

int cmd_kg_import(int argc, char **argv)
{
    uint64_t budget = 0;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"mem-budget", CLI_SIZE, &budget, NULL, "hard limit on memory held (default none)", NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "import kg",
        "SRC OUT [options]",
        "Import a GraIL inductive KG split into the new KG dataset directory OUT.",
        "SRC is the training graph's directory X_vK (train.txt, valid.txt, test.txt, one\n"
        "head<TAB>relation<TAB>tail per line); its inductive graph is read from SRC_ind.",
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
    oc_mem_set_budget(budget);
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_progress *bar = NULL;
    if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
        return cli_fail(&err);
    double t0 = oc_now_s();
    rc = oc_kg_import_grail(pos[0], pos[1], bar, &err);
    oc_progress_free(bar);
    if (rc != OC_OK)
        return cli_fail(&err);
    printf("imported %s (+ _ind) -> %s in %.1f s\n", pos[0], pos[1], oc_now_s() - t0);
    return 0;
}
