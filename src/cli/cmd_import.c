/*
 * cmd_import.c — `offcore import KIND SRC OUT`: text, OGB, GraphBolt or npy
 * data into a new offcore dataset directory (include/offcore/import.h).
 *
 * Place in the data flow: cli → dataset (import).
 * Thread-safety: main thread.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/import.h"
#include "offcore/plan.h"

struct import_job {
    enum oc_import_kind kind;
    const char *src;
    const struct oc_import_opts *o;
    struct oc_progress *bar;
};

static int import_into(void *ctx, const char *dir, struct oc_err *err)
{
    const struct import_job *j = ctx;
    return oc_import(j->kind, j->src, dir, j->o, j->bar, err);
}

int cmd_import(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "kg") == 0)
        return cmd_kg_import(argc - 1, argv + 1);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    const char *dtype = "f32";
    uint32_t split = 0;
    uint64_t budget = 0, sort_mem = 0;
    const char *layout = NULL;
    uint64_t part_nodes = CLI_PART_NODES_UNSET;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"directed", CLI_FLAG, &o.directed, NULL,
         "keep edge direction (default: symmetrize, as dgl.to_bidirected)", NULL},
        {"keep-duplicates", CLI_FLAG, &o.keep_duplicates, NULL,
         "keep duplicate edges (default: one copy of each edge)", NULL},
        {"remove-self-loops", CLI_FLAG, &o.remove_self_loops, NULL,
         "drop self-loops (default: keep one copy)", NULL},
        {"dtype", CLI_CHOICE, &dtype, NULL, "feature dtype to store (default f32)", "f32|f16"},
        {"row-normalize", CLI_FLAG, &o.row_normalize, NULL,
         "divide each feature row by its sum (Planetoid preprocessing)", NULL},
        {"split", CLI_U32, &split, "K", "text: which role-form split file to use (default 0)",
         NULL},
        {"ogb-split", CLI_STR, &o.split_name, "NAME", "ogb: split folder (default: first)", NULL},
        {"name", CLI_STR, &o.name, "NAME", "dataset name (default: from the source)", NULL},
        {"allow-nonfinite", CLI_FLAG, &o.allow_nonfinite, NULL,
         "import NaN/Inf feature values (default: refuse, naming file, row, column)", NULL},
        {"max-size", CLI_SIZE, &o.max_bytes, NULL,
         "ceiling on the dataset's size; also accepts declared sizes the input does not "
         "vouch for (default: none, only free disk space)",
         NULL},
        {"sort-mem", CLI_SIZE, &sort_mem, NULL, "RAM for the external edge sort (default 256M)",
         NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL, "hard limit on memory held (default none)", NULL},
        CLI_LAYOUT_OPTS(layout, part_nodes),
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "import",
        "text|ogb|graphbolt|npy|kg SRC OUT [options]",
        "Import a dataset into the new offcore dataset directory OUT.",
        "kinds:\n"
        "  text       the plain-text layout of shared/datasets (meta.txt, edges.txt, "
        "features.txt,\n"
        "             labels.txt, train/val/test_idx.txt or role-form split files)\n"
        "  ogb        an OGB node-property directory (raw/*.csv.gz, split/<name>/*.csv.gz)\n"
        "  graphbolt  a DGL GraphBolt directory with metadata.yaml\n"
        "  npy        a directory with edges.npy|edges.txt, features.npy, labels.npy and\n"
        "             optional train_idx.npy, val_idx.npy, test_idx.npy\n"
        "  kg         a GraIL inductive KG split (X_vK + X_vK_ind); see `import kg --help`",
        opts,
        sizeof(opts) / sizeof(opts[0]),
        3,
        3,
        NULL};
    const char *pos[3];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (strcmp(pos[0], "kg") == 0 && argc <= 64) { /* options came before the kind */
        char *rest[64];
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (argv[i] != pos[0])
                rest[n++] = argv[i];
        return cmd_kg_import(n, rest);
    }
    cli_log_init(verbose);
    enum oc_import_kind kind;
    if (oc_import_kind_from_name(pos[0], &kind) != OC_OK) {
        fprintf(stderr,
                "offcore import: unknown kind '%s' (expected text, ogb, graphbolt or npy)\n",
                pos[0]);
        return 2;
    }
    if (oc_dtype_from_name(dtype, &o.feat_dtype) != OC_OK)
        return 2;
    if (split > INT32_MAX) {
        fprintf(stderr, "offcore import: bad value '%u' for --split: too large\n", split);
        return 2;
    }
    o.split_index = (int)split;
    if (sort_mem)
        o.mem_bytes = sort_mem;
    struct oc_plan_order_opts lo;
    if (cli_layout_opts("import", layout, part_nodes, &lo))
        return 2;
    oc_mem_set_budget(budget);
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_progress *bar = NULL;
    if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
        return cli_fail(&err);
    double t0 = oc_now_s();
    struct import_job job = {kind, pos[1], &o, bar};
    rc = layout ? cli_write_laid_out(pos[2], &lo, quiet, import_into, &job, &err)
                : import_into(&job, pos[2], &err);
    oc_progress_free(bar);
    if (rc != OC_OK)
        return cli_fail(&err);
    printf("imported %s -> %s%s%s in %.1f s\n", pos[1], pos[2],
           layout ? ", laid out in order " : "", layout ? layout : "", oc_now_s() - t0);
    return 0;
}
