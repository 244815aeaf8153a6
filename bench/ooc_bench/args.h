/*
 * args.h — ooc_bench's command line: its options (struct args), their
 * defaults and checks, and --help.
 *
 * Place in the data flow: bench/ooc_bench only (step 0, before anything runs).
 * Thread-safety: one caller (main).
 * Ownership: strings in struct args point into argv.
 */
#ifndef OOC_BENCH_ARGS_H
#define OOC_BENCH_ARGS_H

#include <stdint.h>

#include "offcore/sample.h"

#define MAX_EPOCHS 64
#define VAL_FRAC   0.01 /* small: evaluation is not what is measured */
#define HIDDEN     64   /* default --hidden */
#define CGROUP_OVERHEAD_MIB \
    64 /* what the process holds outside the accountant (docs/BENCHMARKS.md) */

struct args {
    char dir[2048];
    uint64_t nodes;
    uint32_t feat_dim;
    double avg_degree, train_frac, val_frac; /* val_frac: val and test each */
    uint64_t budget;                         /* 0 = feature bytes / 10 */
    uint32_t epochs;
    int32_t fanouts[OC_SAMPLE_MAX_LAYERS];
    uint32_t n_fanouts;
    uint64_t batch;
    unsigned threads;
    const char *strategies; /* comma list, NULL = all */
    uint64_t hidden;
    uint32_t superbatch; /* --superbatch: ginex's, 0 = its default */
    double hyperbatch;   /* --hyperbatch F: also each strategy with the option so (0: not) */
    int hyperbatch_disk; /* --hyperbatch-disk: those runs stage their groups on disk */
    int hyperbatch_only; /* --hyperbatch-only: only those runs (and memory) */
    int no_eval;         /* --no-eval: skip the sampled evaluation after each epoch */
    int topology_disk;   /* --topology-disk: every run keeps indices.npy on disk */
    int paper;     /* --preset paper: budget = smallest accepted + features / 10, per strategy */
    int no_cgroup; /* --no-cgroup: budgeted runs without a cgroup memory limit */
    const char *layout;   /* --layout ORDER: train on a laid-out copy (NULL: node id order) */
    uint64_t communities; /* --communities S: the generator's planted communities (0: none) */
    double mixing;        /* --mixing MU (NAN: the generator's default) */
    const char *json;     /* --json FILE: the results table as JSON (NULL: none) */
};

/*
 * Fills a from argv (defaults first, --preset paper's, then the options in
 * order); 0, or -1 after printing why to stderr. --help prints the usage and
 * exits.
 */
int parse_args(int argc, char **argv, struct args *a);

#endif
