/*
 * sample_int.h — private to src/sample: the neighbor-access seam, the id→local
 * relabeling map and the batch array helpers shared by the sampler and the
 * record reader.
 *
 * Place in the data flow: inside sample (dataset ──► sample ──► plan).
 * Thread-safety: smp_graph_nbrs is pure and may run on any worker; a map and
 * a batch belong to one thread.
 * Ownership: a map owns its table; views returned by smp_graph_nbrs borrow
 * the graph's arrays.
 */
#ifndef OFFCORE_SAMPLE_INT_H
#define OFFCORE_SAMPLE_INT_H

#include "offcore/sample.h"

/*
 * The in-neighbors of one node as a borrowed view. This is the only place the
 * sampler touches topology arrays: an on-disk topology (neighbor cache, O_DIRECT
 * reads) replaces smp_graph_nbrs with a version that fills a per-worker buffer
 * and points i64 at it, and nothing else changes.
 */
struct smp_nbrs {
    uint64_t n;
    const uint32_t *i32; /* exactly one set */
    const uint64_t *i64;
};

static inline uint64_t smp_nbr_at(const struct smp_nbrs *nb, uint64_t i)
{
    return nb->i32 ? nb->i32[i] : nb->i64[i];
}

/* Fills nb with v's in-neighbors; OC_ERR_FORMAT if indptr decreases at v. */
static inline int smp_graph_nbrs(const struct oc_graph *g, uint64_t v, struct smp_nbrs *nb,
                                 struct oc_err *err)
{
    uint64_t lo = g->indptr[v], hi = g->indptr[v + 1];
    nb->n = hi >= lo ? hi - lo : 0;
    nb->i32 = g->indices32 ? g->indices32 + lo : NULL;
    nb->i64 = g->indices64 ? g->indices64 + lo : NULL;
    if (hi < lo)
        return OC_ERR(err, OC_ERR_FORMAT, "graph: indptr decreases at node %llu (%llu > %llu)",
                      (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
    return OC_OK;
}

/* Hints that v's indptr entry and the start of its neighbor list will be read soon. */
static inline void smp_graph_prefetch_ptr(const struct oc_graph *g, uint64_t v)
{
    __builtin_prefetch(&g->indptr[v], 0, 1);
}

/* The first and last line of a short list; a long one is read at random spots anyway. */
static inline void smp_graph_prefetch_nbrs(const struct oc_graph *g, uint64_t v)
{
    uint64_t lo = g->indptr[v], hi = g->indptr[v + 1];
    if (hi <= lo)
        return;
    if (g->indices32) {
        __builtin_prefetch(&g->indices32[lo], 0, 1);
        __builtin_prefetch(&g->indices32[hi - 1], 0, 1);
    } else {
        __builtin_prefetch(&g->indices64[lo], 0, 1);
        __builtin_prefetch(&g->indices64[hi - 1], 0, 1);
    }
}

/* Checks the cheap invariants of a view (not its arrays' contents). */
int smp_graph_check_view(const struct oc_graph *g, struct oc_err *err);

/*
 * Global id → local id, open addressing with linear probing. Slots are
 * stamped with the current generation, so clearing for the next batch is one
 * increment, not a memset of the table.
 */
struct smp_map_slot {
    uint64_t key;
    uint32_t val;
    uint32_t gen;
};

struct smp_map {
    struct smp_map_slot *slots;
    uint64_t cap;   /* a power of two, or 0 */
    unsigned shift; /* 64 - log2(cap) */
    uint32_t gen;
    uint64_t n_live; /* keys of the current generation */
};

void smp_map_init(struct smp_map *m);
void smp_map_deinit(struct smp_map *m);
/* Forgets every key (O(1) except once per 2^32 clears). */
void smp_map_clear(struct smp_map *m);
/* Grows (rehashing live keys) so that n_keys keys keep the load <= 1/2. */
int smp_map_reserve(struct smp_map *m, uint64_t n_keys, struct oc_err *err);

static inline uint64_t smp_map_hash(const struct smp_map *m, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> m->shift;
}

/*
 * Returns key's value, inserting `val` if absent (*inserted = 1). The map
 * must have room (smp_map_reserve).
 */
static inline uint32_t smp_map_get_or_put(struct smp_map *m, uint64_t key, uint32_t val,
                                          int *inserted)
{
    uint64_t mask = m->cap - 1;
    uint64_t i = smp_map_hash(m, key);
    for (;;) {
        struct smp_map_slot *s = &m->slots[i];
        if (s->gen != m->gen) {
            s->key = key;
            s->val = val;
            s->gen = m->gen;
            m->n_live++;
            *inserted = 1;
            return val;
        }
        if (s->key == key) {
            *inserted = 0;
            return s->val;
        }
        i = (i + 1) & mask;
    }
}

static inline void smp_map_prefetch(const struct smp_map *m, uint64_t key)
{
    __builtin_prefetch(&m->slots[smp_map_hash(m, key)], 1, 1);
}

/* Batch arrays, grow-only: input_ids keep their contents, block arrays do not. */
int smp_batch_reserve_input(struct oc_sample_batch *b, uint64_t n, struct oc_err *err);
int smp_block_reserve(struct oc_sample_block *blk, uint64_t n_dst, uint64_t n_edges,
                      struct oc_err *err);
/* Marks the batch empty (n_layers 0, counts 0), keeping its arrays. */
void smp_batch_reset(struct oc_sample_batch *b);

#endif
