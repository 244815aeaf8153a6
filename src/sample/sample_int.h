/*
 * sample_int.h — private to src/sample: the neighbor-access seam (in memory,
 * and the on-disk topology with its per-worker reader), the id→local
 * relabeling map and the batch array helpers shared by the sampler and the
 * record reader.
 *
 * Place in the data flow: inside sample (dataset ──► sample ──► plan).
 * Thread-safety: smp_graph_nbrs is pure and may run on any worker; a map, a
 * batch and a topology reader belong to one thread; an open on-disk topology
 * is immutable.
 * Ownership: a map owns its table; views returned by smp_graph_nbrs borrow
 * the graph's arrays; a topology owns its arrays and file, a reader its
 * batch and tables.
 */
#ifndef OFFCORE_SAMPLE_INT_H
#define OFFCORE_SAMPLE_INT_H

#include "offcore/sample.h"
#include <assert.h>

/*
 * The in-neighbors of one node of an in-memory view, borrowed. With the
 * degree below, the only place the sampler touches in-memory topology arrays.
 * An on-disk view (g->disk) is read through a per-worker smp_topo_reader
 * instead: whole chunks of lists are queued and read at once (see below).
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

/* v's in-degree from indptr alone (any view); OC_ERR_FORMAT if indptr decreases at v. */
static inline int smp_graph_degree(const struct oc_graph *g, uint64_t v, uint64_t *deg,
                                   struct oc_err *err)
{
    uint64_t lo = g->indptr[v], hi = g->indptr[v + 1];
    *deg = hi >= lo ? hi - lo : 0;
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

/* ---- on-disk topology (topo_disk.c, topo_read.c) ------------------------ */

#define SMP_TOPO_NONE UINT64_MAX /* table entry of a node whose list is not cached */

struct oc_io_batch;
struct oc_file;

struct oc_topo_disk {
    uint64_t n_nodes;
    uint64_t *indptr;     /* n_nodes + 1, owned */
    uint32_t index_bytes; /* 4 | 8 */
    struct oc_file *f;    /* indices, O_DIRECT where allowed */
    uint64_t data_offset; /* byte offset of indices[0] in f */
    uint64_t *table;      /* n_nodes: element offset of v's list in cache, or SMP_TOPO_NONE;
                        NULL when every list is cached (the cache is indices, offsets indptr) */
    void *cache;          /* cached lists (u32 | u64), packed in node-id order */
    unsigned io_depth;
    uint64_t io_bounce_bytes;
    struct oc_topo_disk_info info;
};

/* Streams all of indices.npy checking every id < n_nodes (oc_sample_graph_check). */
int smp_topo_check(const struct oc_topo_disk *t, struct oc_err *err);

/*
 * One sampler worker's access to an on-disk topology. smp_topo_fetch copies
 * a cached list at once and queues the read of an uncached one into the
 * caller's u64 slots; the slots hold their values only after the next
 * smp_topo_flush (a fetch may flush earlier reads itself when its tables
 * fill up). Belongs to one worker thread (it owns an io_uring ring).
 */
struct smp_topo_widen {
    uint64_t *dst; /* u32 values were read into the upper half of dst[0 .. n) */
    uint64_t n;
};

struct smp_topo_reader {
    const struct oc_topo_disk *t;
    struct oc_io_batch *batch;
    struct smp_topo_widen *widen; /* u32 lists waiting for their reads */
    uint64_t n_widen;
    uint64_t n_queued; /* requests since the last flush */
    uint64_t n_lookups, n_hits;
};

int smp_topo_reader_init(struct smp_topo_reader *r, const struct oc_topo_disk *t,
                         struct oc_err *err);
void smp_topo_reader_deinit(struct smp_topo_reader *r);
/*
 * dst[0 .. k) ← v's in-neighbors at positions pos[0 .. k) (ascending,
 * distinct, < deg(v)), or its whole list (pos NULL, k = deg(v)).
 */
int smp_topo_fetch(struct smp_topo_reader *r, uint64_t v, const uint64_t *pos, uint64_t k,
                   uint64_t *dst, struct oc_err *err);
/* Whether v's list is in the cache (v < n_nodes; with no table, every non-empty list). */
static inline int smp_topo_cached(const struct oc_topo_disk *t, uint64_t v)
{
    return t->table ? t->table[v] != SMP_TOPO_NONE : t->indptr[v + 1] > t->indptr[v];
}

/* The element offset of cached v's list in the cache. */
static inline uint64_t smp_topo_slot(const struct oc_topo_disk *t, uint64_t v)
{
    assert(smp_topo_cached(t, v));
    return t->table ? t->table[v] : t->indptr[v];
}

/* Hints that v's cache table entry will be read soon. */
static inline void smp_topo_prefetch_entry(const struct oc_topo_disk *t, uint64_t v)
{
    __builtin_prefetch(t->table ? &t->table[v] : &t->indptr[v], 0, 1);
}

/* Hints that v's cached list (if any) will be read soon; its table entry should be warm. */
static inline void smp_topo_prefetch_list(const struct oc_topo_disk *t, uint64_t v)
{
    if (smp_topo_cached(t, v))
        __builtin_prefetch((const char *)t->cache + smp_topo_slot(t, v) * t->index_bytes, 0, 1);
}

/* Runs the queued reads; every fetched slot holds its value after OC_OK. */
int smp_topo_flush(struct smp_topo_reader *r, struct oc_err *err);
/* Adds r's counters into st. */
void smp_topo_reader_stats(const struct smp_topo_reader *r, struct oc_topo_disk_stats *st);

/*
 * How batch and sampler arrays grow (oc_grow_by): by a half at least. Arrays
 * rewritten whole by each batch (blocks, the sampler's scratch) are taken
 * FRESH: their old blocks go before the new ones are taken (a lower peak).
 */
#define SMP_GROW_KEEP  (&(const struct oc_grow_policy){.div = 2})
#define SMP_GROW_FRESH (&(const struct oc_grow_policy){.div = 2, .discard = 1})

/* Batch arrays, grow-only: input_ids keep their contents, block arrays do not. */
int smp_batch_reserve_input(struct oc_sample_batch *b, uint64_t n, struct oc_err *err);
int smp_block_reserve(struct oc_sample_block *blk, uint64_t n_dst, uint64_t n_edges,
                      struct oc_err *err);
/* Marks the batch empty (n_layers 0, counts 0), keeping its arrays. */
void smp_batch_reset(struct oc_sample_batch *b);

#endif
