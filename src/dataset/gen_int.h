/*
 * gen_int.h — private to the generator (generate.c, gen_graph.c,
 * gen_features.c): the shared generation state and the per-node hash
 * functions that make every output a pure function of (seed, node).
 *
 * Place in the data flow: dataset (generate → edge sorter → builder).
 * Thread-safety: struct oc_gen is filled by the calling thread; pool tasks
 * only read it (and write their own output slices).
 * Ownership: oc_gen_deinit frees everything the state holds; the builder and
 * pool are borrowed.
 */
#ifndef OFFCORE_GEN_INT_H
#define OFFCORE_GEN_INT_H

#include <stdint.h>

#include "offcore/dataset.h"
#include "offcore/generate.h"
#include "offcore/progress.h"
#include "offcore/rng.h"
#include "offcore/thread.h"

/* Stream ids: (seed, GEN_STREAM_x, item, 0) keys the Philox stream of one item. */
enum {
    GEN_STREAM_EDGES = 1,   /* chunk k of edge draws */
    GEN_STREAM_CENTRES = 2, /* class centre c */
    GEN_STREAM_NOISE = 3,   /* feature noise of node i */
};

/* Salts of the per-node hashes (oc_rng_mix64(seed ^ salt, i)). */
#define GEN_SALT_CLASS  0x636c617373ull   /* "class" */
#define GEN_SALT_WEIGHT 0x776569676877ull /* "weigh" */
#define GEN_SALT_SPLIT  0x73706c6974ull   /* "split" */

#define GEN_MAX_CLASSES 65535u

struct oc_gen {
    struct oc_generate_opts o;
    struct oc_pool *pool;
    struct oc_progress *progress;
    uint16_t *cls;       /* class of every node (n_nodes) */
    uint64_t *class_thr; /* cumulative class probabilities, scaled to 2^53 (n_classes) */
};

/* A uniform double in [0, 1) from a 64-bit hash (53 bits). */
static inline double gen_unit(uint64_t h)
{
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* Class of node i from the hash of (seed, i) and the cumulative class table. */
static inline uint16_t gen_class_of(const struct oc_gen *g, uint64_t i)
{
    uint64_t h = oc_rng_mix64(g->o.seed ^ GEN_SALT_CLASS, i) >> 11;
    uint32_t lo = 0, hi = g->o.n_classes - 1;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (h < g->class_thr[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return (uint16_t)lo;
}

/* Fills g->cls and g->class_thr (in parallel over node ranges). */
int oc_gen_classes(struct oc_gen *g, struct oc_err *err);

/*
 * Draws the edges (Chung–Lu weights, homophilous mixture) and feeds them in
 * chunk order to a symmetrizing sorter that writes indptr/indices into b.
 */
int oc_gen_graph(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err);

/* Writes features.npy, labels.npy and the three split files into b. */
int oc_gen_features(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err);
int oc_gen_labels_splits(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err);

#endif
