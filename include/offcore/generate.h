/*
 * generate.h — a synthetic graph generator for any scale, in bounded memory:
 * power-law degrees (Chung–Lu weights), planted classes with community
 * structure (a stochastic-block mixture), optionally planted LFR-style
 * communities (--communities), class-correlated noisy features and
 * train/val/test splits. Deterministic per seed at any thread count.
 *
 * Place in the data flow: dataset module (generate → edge sorter → builder).
 * Thread-safety: one generation per call; it may use a thread pool inside.
 * Ownership: options are borrowed.
 */
#ifndef OFFCORE_GENERATE_H
#define OFFCORE_GENERATE_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/dataset.h"
#include "offcore/progress.h"

struct oc_generate_opts {
    uint64_t n_nodes;         /* in [2, 2^32 - 1) */
    double avg_degree;        /* directed edges per node after symmetrization, before dedup
                             (N·D/2 undirected draws; duplicates are dropped) */
    uint32_t feat_dim;        /* 0 = no features */
    uint32_t n_classes;       /* in [1, 65535] */
    enum oc_dtype feat_dtype; /* F32 or F16 */
    uint64_t seed;
    double homophily;     /* probability that a draw picks its second end inside the first
                             end's class (default 0.5) */
    double power_law;     /* exponent of the degree distribution, > 1 (default 2.2) */
    uint64_t communities; /* mean planted community size in nodes, in [2, n_nodes];
                             0 = none (default: the output is what it was before the option) */
    double mixing;        /* LFR's μ: the probability that a draw picks its second end outside the
                      first end's community (by the class rule above); in [0, 1].
                      NAN = unset (default): OC_GENERATE_MIXING_DEFAULT with communities,
                      and it must stay unset without them */
    double feat_signal;   /* norm of the class centres; the noise is N(0, 1) per dimension,
                             so difficulty does not depend on feat_dim (default 1.6) */
    double train_frac, val_frac, test_frac; /* defaults 0.10 / 0.05 / 0.10 */
    unsigned n_threads;                     /* 0 = all cores; the output does not depend on it */
    uint64_t mem_bytes; /* RAM for the edge sort (0 = 1 GiB); the generator's own
                             tables add about 30 bytes per node */
    uint64_t max_bytes; /* --max-size: ceiling on the dataset's bytes (0 = OC_GENERATE_MAX_BYTES);
                           the output must also fit the free space at `out` */
};

/*
 * Mixing used with communities when none is given: with it the share of edges
 * inside METIS parts of ~1000 nodes falls inside the range measured on real
 * graphs (docs/BENCHMARKS.md, "Generator calibration").
 */
#define OC_GENERATE_MIXING_DEFAULT 0.3

/* Default ceiling on a generated dataset's size: 64 GiB. */
#define OC_GENERATE_MAX_BYTES ((uint64_t)64 << 30)

/*
 * Defaults: 100000 nodes, degree 15, 128-dim f32 features, 10 classes, seed 0
 * and the values above. With them, nearest-class-centroid accuracy on a
 * node's own features is about 50% and on the mean of its neighbourhood about
 * 75%: learnable, not trivial, and the graph helps.
 */
void oc_generate_opts_default(struct oc_generate_opts *o);

/*
 * Writes a new dataset directory `out` (which must not exist): indptr,
 * indices (symmetric, no self-loops, no duplicates), features, labels (i32,
 * every node labelled) and train/val/test ids. Same options → identical
 * files at any thread count. On failure nothing is left at `out`.
 */
int oc_generate(const struct oc_generate_opts *o, const char *out, struct oc_progress *progress,
                struct oc_err *err);

#endif
