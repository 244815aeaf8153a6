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
#define GEN_SALT_CLASS   0x636c617373ull   /* "class" */
#define GEN_SALT_WEIGHT  0x776569676877ull /* "weigh" */
#define GEN_SALT_SPLIT   0x73706c6974ull   /* "split" */
#define GEN_SALT_CSIZE   0x6373697a65ull   /* "csize": community sizes */
#define GEN_SALT_CMEMBER 0x636d656dull     /* "cmem": community membership */
#define GEN_SALT_CDOM    0x63646f6dull     /* "cdom": dominant class of a community */
#define GEN_SALT_CKEEP   0x636b656570ull   /* "ckeep": node takes its community's class */

#define GEN_MAX_CLASSES 65535u

/*
 * A node's expected internal degree is kept below this share of its
 * community's size (gen_comm.c places hubs, gen_graph.c caps the rest).
 */
#define GEN_COMM_FILL 0.125

/*
 * Planted communities (--communities S, gen_comm.c): node i is in community
 * of[i], a hash of (seed, i) among the communities big enough for its
 * weight, so members are scattered over ids; community k has off[k+1] -
 * off[k] members. Memory: 4 bytes per node (of, freed once the graph's
 * tables hold the membership), 8 per community.
 */
struct gen_comm {
    uint64_t n_comm;  /* 0 = communities off */
    uint64_t *off;    /* n_comm + 1 offsets of the members grouped by community */
    uint32_t *of;     /* community of every node (n_nodes); NULL once drawing */
    double mixing;    /* μ in effect */
    double keep_prob; /* probability that a node takes its community's class */
};

struct oc_gen {
    struct oc_generate_opts o;
    struct gen_comm comm;
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

/* Class number for a 53-bit uniform h (binary search of the cumulative class table). */
static inline uint16_t gen_class_pick(const struct oc_gen *g, uint64_t h)
{
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

/* Class of node i from the hash of (seed, i) and the cumulative class table. */
static inline uint16_t gen_class_of(const struct oc_gen *g, uint64_t i)
{
    return gen_class_pick(g, oc_rng_mix64(g->o.seed ^ GEN_SALT_CLASS, i) >> 11);
}

/*
 * Fills g->comm from the options (n_comm = 0 when --communities is 0): the
 * community of every node, the sizes and the mixing in effect.
 */
int oc_gen_comm_init(struct oc_gen *g, struct oc_err *err);
void oc_gen_comm_deinit(struct gen_comm *c);

/*
 * The Chung–Lu weight of every node (power law, capped), a pure function of
 * (seed, i) and the options; *out is oc_alloc'd (n_nodes doubles).
 */
int oc_gen_weights(struct oc_gen *g, double **out, struct oc_err *err);

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
