/*
 * cmd_generate.c — `offcore generate`: a synthetic dataset of any size,
 * written in bounded memory (see include/offcore/generate.h).
 *
 * Place in the data flow: cli → dataset (generate).
 * Thread-safety: main thread; the generator uses its own pool.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/generate.h"
#include "offcore/plan.h"

struct generate_job {
    const struct oc_generate_opts *o;
    struct oc_progress *bar;
};

static int generate_into(void *ctx, const char *dir, struct oc_err *err)
{
    const struct generate_job *j = ctx;
    return oc_generate(j->o, dir, j->bar, err);
}

int cmd_generate(int argc, char **argv)
{
    struct oc_generate_opts o;
    oc_generate_opts_default(&o);
    const char *dtype = "f32";
    uint32_t threads = 0;
    uint64_t budget = 0, sort_mem = 0;
    const char *layout = NULL;
    uint64_t part_nodes = CLI_PART_NODES_UNSET;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"nodes", CLI_U64, &o.n_nodes, "N", "number of nodes (default 100000)", NULL},
        {"avg-degree", CLI_F64, &o.avg_degree, "D", "average directed degree (default 15)", NULL},
        {"feat-dim", CLI_U32, &o.feat_dim, "F", "feature dimension (default 128)", NULL},
        {"classes", CLI_U32, &o.n_classes, "C", "number of classes (default 10)", NULL},
        {"dtype", CLI_CHOICE, &dtype, NULL, "feature dtype (default f32)", "f32|f16"},
        {"seed", CLI_U64, &o.seed, "S", "random seed (default 0); same seed, same files", NULL},
        {"homophily", CLI_F64, &o.homophily, "P", "fraction of edges inside a class (0.5)", NULL},
        {"power-law", CLI_F64, &o.power_law, "G", "degree power-law exponent (2.2)", NULL},
        {"communities", CLI_U64, &o.communities, "S",
         "plant LFR-style communities of mean size S nodes, scattered over ids (0 = none)", NULL},
        {"mixing", CLI_F64, &o.mixing, "MU",
         "with --communities: share of draws leaving the community (LFR mu, 0.3)", NULL},
        {"feat-signal", CLI_F64, &o.feat_signal, "X",
         "norm of the class centre vs unit noise per dimension (1.6)", NULL},
        {"train-frac", CLI_F64, &o.train_frac, "X", "fraction of nodes in train (0.10)", NULL},
        {"val-frac", CLI_F64, &o.val_frac, "X", "fraction of nodes in val (0.05)", NULL},
        {"test-frac", CLI_F64, &o.test_frac, "X", "fraction of nodes in test (0.10)", NULL},
        {"threads", CLI_U32, &threads, "T",
         "worker threads (default: all cores; capped at 4 per core or 64, whichever is more)",
         NULL},
        {"sort-mem", CLI_SIZE, &sort_mem, NULL, "RAM for the external edge sort (default 1G)",
         NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL, "hard limit on memory held (default none)", NULL},
        {"max-size", CLI_SIZE, &o.max_bytes, NULL,
         "refuse a dataset larger than this (default 64G); it must also fit the free disk space",
         NULL},
        CLI_LAYOUT_OPTS(layout, part_nodes),
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "generate",
        "[options] OUT",
        "Generate a synthetic node-classification dataset into the new directory OUT:\n"
        "power-law degrees, planted classes with community structure, class-correlated\n"
        "noisy features, train/val/test splits. Deterministic per seed.",
        NULL,
        opts,
        sizeof(opts) / sizeof(opts[0]),
        1,
        1,
        NULL};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    cli_log_init(verbose);
    struct oc_err err;
    oc_err_clear(&err);
    if (oc_dtype_from_name(dtype, &o.feat_dtype) != OC_OK) {
        fprintf(stderr, "offcore generate: bad --dtype '%s'\n", dtype);
        return 2;
    }
    o.n_threads = threads;
    if (sort_mem)
        o.mem_bytes = sort_mem;
    struct oc_plan_order_opts lo;
    if (cli_layout_opts("generate", layout, part_nodes, &lo))
        return 2;
    oc_mem_set_budget(budget);
    struct oc_progress *bar = NULL;
    if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
        return cli_fail(&err);
    double t0 = oc_now_s();
    struct generate_job job = {&o, bar};
    rc = layout ? cli_write_laid_out(pos[0], &lo, quiet, generate_into, &job, &err)
                : generate_into(&job, pos[0], &err);
    oc_progress_free(bar);
    if (rc != OC_OK)
        return cli_fail(&err);
    char peak[32];
    printf("generated %s: %llu nodes, %u-dim %s features, %u classes%s%s in %.1f s (peak memory "
           "held %s)\n",
           pos[0], (unsigned long long)o.n_nodes, o.feat_dim, dtype, o.n_classes,
           layout ? ", laid out in order " : "", layout ? layout : "", oc_now_s() - t0,
           oc_format_size(oc_mem_peak(), peak, sizeof(peak)));
    return 0;
}
