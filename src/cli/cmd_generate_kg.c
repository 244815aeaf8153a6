/*
 * cmd_generate_kg.c — `offcore generate-kg OUT`: a synthetic inductive KG
 * dataset (include/offcore/kg.h, oc_kg_generate) for scale tests, written in
 * bounded memory.
 *
 * Place in the data flow: cli → kg (generate).
 * Thread-safety: main thread.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "offcore/kg.h"

int cmd_generate_kg(int argc, char **argv)
{
    struct oc_kg_gen_opts o;
    oc_kg_gen_opts_default(&o);
    uint64_t budget = 0;
    uint32_t relations = o.n_relations;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"entities", CLI_U64, &o.n_entities, "N", "entities per graph (100000)", NULL},
        {"triples", CLI_U64, &o.n_triples, "T",
         "triples per graph; the fact graph holds 2T + N facts (1000000)", NULL},
        {"relations", CLI_U32, &relations, "R", "relations (200)", NULL},
        {"queries", CLI_U64, &o.n_queries, "Q", "valid and test queries per graph (1000)", NULL},
        {"power-law", CLI_F64, &o.power_law, "G", "exponent of entity popularity (2.2)", NULL},
        {"seed", CLI_U64, &o.seed, "S", "random seed (0)", NULL},
        {"sort-mem", CLI_SIZE, &o.mem_bytes, NULL, "RAM for the facts sorted at once (256M)", NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL, "hard limit on memory held (default none)", NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    const struct cli_cmd cmd = {
        "generate-kg",
        "[options] OUT",
        "Generate a synthetic inductive KG dataset (a training and an inference graph, same\n"
        "relations) into the new directory OUT, in bounded memory.",
        "Entities fall in 16 classes; relation r sends class c to class (c(r+1)+r) mod 16 for\n"
        "90% of its triples (a learnable rule); popularity within a class is power-law.",
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
    o.n_relations = relations;
    oc_mem_set_budget(budget);
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_progress *bar = NULL;
    if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
        return cli_fail(&err);
    double t0 = oc_now_s();
    rc = oc_kg_generate(pos[0], &o, bar, &err);
    oc_progress_free(bar);
    if (rc != OC_OK)
        return cli_fail(&err);
    printf("generated %s in %.1f s\n", pos[0], oc_now_s() - t0);
    return 0;
}
