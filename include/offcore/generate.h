/*
 * generate.h — a synthetic graph generator for any scale, in bounded memory:
 * power-law degrees (Chung–Lu weights), planted classes with community
 * structure (a stochastic-block mixture), class-correlated noisy features and
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
    uint64_t n_nodes;
    double avg_degree;    /* directed edges per node after symmetrization */
    uint32_t feat_dim;
    uint32_t n_classes;
    enum oc_dtype feat_dtype; /* F32 or F16 */
    uint64_t seed;
    double homophily;     /* fraction of edges inside a class (default 0.75) */
    double power_law;     /* exponent of the degree distribution (default 2.2) */
    double feat_signal;   /* class-centre strength relative to unit noise (default 0.45) */
    double train_frac, val_frac, test_frac; /* defaults 0.10 / 0.05 / 0.10 */
    unsigned n_threads;   /* 0 = all cores */
    uint64_t mem_bytes;   /* RAM for sorting/buffering (0 = 1 GiB) */
};

void oc_generate_opts_default(struct oc_generate_opts *o);

int oc_generate(const struct oc_generate_opts *o, const char *out, struct oc_progress *progress,
                struct oc_err *err);

#endif
