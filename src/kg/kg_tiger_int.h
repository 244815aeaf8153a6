/*
 * kg_tiger_int.h — private to src/kg (and tests): TIGER's slice-and-cache
 * extraction for kg-train (the Ginex/OUTRE/TIGER thesis, section V).
 *
 *   kg_atoms.c        atom maps: entity ─► its facts (rel[k] then tail[k]),
 *                     direct-addressed; the Atom Cache (highest-degree atoms,
 *                     built once, giving atoms back under the budget) and each
 *                     batch's map of loaded slices
 *   kg_slice.c        SiGMa (slice matching + slice generation) or ginex's
 *                     sequential slicing: query entity ─► disjoint slices
 *   kg_slice_map.c    the query-entity-to-slice mapping (the slicer's, or a
 *                     reused store's), found through an id map
 *   kg_slice_store.c  the slice store on SSD under DIR/plan/tiger-<key>/
 *                     (records + index, CRC-checked, atomic commit)
 *   kg_tiger*.c       the super-batch loop's executor: slices of a batch from
 *                     the Slice Cache (kg_tiger_cache.c) or the store
 *                     (kg_tiger_reads.c), Belady changesets (kg_tiger_plan.c,
 *                     oc_plan_belady), the batch map for extraction
 *                     (kg_tiger.c); its reader and planner are pipeline stages
 *                     (kg_tiger_stage.c)
 *
 * Place in the data flow: kg (kg_train.c ──► here ──► kg_facts.c / kg_extract.c).
 * Thread-safety: the training thread drives the executor, which runs the
 * slicer and the Belady planner on its planner stage and slice reads on its
 * reader stage, one-thread stages of its pipeline handed one job at a time
 * (kg_tiger_stage.c); the atom maps are read by
 * the extraction workers while no one writes them, but for the Atom Cache's
 * giving back, which takes its lock's write side.
 * Ownership: documented per object; every array is oc_alloc'd but the Atom
 * Cache's pool (an accounted mapping).
 */
#ifndef OFFCORE_KG_TIGER_INT_H
#define OFFCORE_KG_TIGER_INT_H

#include <stdatomic.h>

#include "kg/kg_int.h"
#include "offcore/id_map.h"
#include "offcore/thread.h"

#define KG_NONE UINT32_MAX

/* ---- atom maps (kg_atoms.c) ---------------------------------------------- */

/*
 * entity ─► its facts, laid out rel[0..k) then tail[0..k) (k = its degree, from
 * the fact graph's indptr), or NULL: an id map from the entity to its place
 * in `facts`, so a map holds bytes for what it holds (a batch's atoms), not
 * for every entity, and is cleared in O(1).
 */
struct kg_atoms {
    uint64_t n_entities;
    struct oc_id_map index; /* entity ─► its place in facts */
    const uint32_t **facts;
    uint64_t n, cap;
};
int kg_atoms_init(struct kg_atoms *a, uint64_t n_entities, struct oc_err *err);
void kg_atoms_deinit(struct kg_atoms *a);
int kg_atoms_put(struct kg_atoms *a, uint32_t e, const uint32_t *facts, struct oc_err *err);
void kg_atoms_clear(struct kg_atoms *a);
/* e's facts, or NULL. Read-only: several threads may look up while no one puts. */
static inline const uint32_t *kg_atoms_get(const struct kg_atoms *a, uint32_t e)
{
    uint32_t i;
    return oc_id_map_get(&a->index, e, &i) ? a->facts[i] : NULL;
}

/*
 * The Atom Cache: the atoms of the highest-degree entities (ties: lower id
 * first) whose facts and index fit in `bytes`, read once from the fact graph
 * (through its reader: O_DIRECT when on disk). Its index is direct-addressed
 * and compact: a bit per entity, a count per 64 entities (the cached ones
 * before them) and per cached atom its place in the pool, about 0.19 bytes
 * an entity instead of a pointer's 8. Registered with the accountant
 * (kg_atom_cache_register, under a budget), it gives atoms back, lowest
 * degree first, then its index, to requests that would pass the budget (the
 * query subgraphs' working memory is only known as they come); those atoms
 * are read from the fact graph from then on, the same facts.
 */
struct kg_atom_cache {
    const struct oc_kg_facts *facts; /* borrowed: the atoms' degrees */
    uint64_t n_entities;
    struct oc_rank_set index; /* the entities cached at build (core's rank set) [lock] */
    uint64_t *at; /* per cached atom, by its rank in index: its facts' place in the pool, or gone */
    uint32_t *order; /* the atoms in pool order (degree descending) */
    uint32_t *pool;  /* the cached atoms' facts: an accounted mapping */
    size_t pool_len;
    uint64_t n_atoms, n_facts, built_bytes, index_bytes; /* live atoms, facts [lock] */
    _Atomic uint64_t bytes;                              /* live: index + facts */
    uint64_t gives_logged;                               /* kg_atom_cache_note's (one thread) */
    struct oc_reclaim_lock lock;                         /* lookups: read; giving back: write */
    struct oc_giveback gb; /* the give-back (core giveback.c; give_back its policy) */
};
int kg_atom_cache_build(struct kg_atom_cache *c, struct oc_kg_facts *f, uint64_t bytes,
                        struct oc_err *err);
int kg_atom_cache_register(struct kg_atom_cache *c, struct oc_err *err);
/*
 * Lookups hold the read side (nothing allocates while it is held: a reclaim
 * asked by this thread meanwhile would give nothing); get returns e's facts
 * (rel[k] then tail[k]) or NULL.
 */
void kg_atom_cache_read_lock(const struct kg_atom_cache *c);
void kg_atom_cache_read_unlock(const struct kg_atom_cache *c);
const uint32_t *kg_atom_cache_get(const struct kg_atom_cache *c, uint32_t e);
uint64_t kg_atom_cache_bytes(const struct kg_atom_cache *c);
/* Logs (INFO) the bytes given back so far, if it gave any since the last note. */
void kg_atom_cache_note(struct kg_atom_cache *c);
void kg_atom_cache_deinit(struct kg_atom_cache *c);

/*
 * Puts atom maps in front of a fact graph's fetches: a head found in `batch`
 * (may be NULL), else in `cache` (may be NULL), else the graph itself. With
 * strict_below > 0, a head of degree < strict_below missing from `batch` is
 * OC_ERR_FORMAT: the slices of the batch should have held it. Set while no
 * extraction runs.
 */
void kg_facts_set_atoms(struct oc_kg_facts *f, const struct kg_atoms *batch,
                        const struct kg_atom_cache *cache, uint32_t strict_below);
/*
 * The reader consults only `cache` (may be NULL), never the maps set by
 * kg_facts_set_atoms: it can fetch while another thread sets them.
 */
void kg_facts_reader_own_atoms(struct oc_kg_facts_reader *r, const struct kg_atom_cache *cache);
/* Degree of head h. */
uint64_t kg_facts_degree(const struct oc_kg_facts *f, uint32_t h);
/* Heads served by the batch map / the atom cache / the graph since open. */
void kg_facts_atom_counts(const struct oc_kg_facts *f, uint64_t *from_batch, uint64_t *from_cache,
                          uint64_t *from_graph);

/* ---- the query-entity-to-slice mapping (kg_slice_map.c) ------------------ */

/*
 * Query entity ─► its slice ids: ids[off .. off + n) of the entity's place
 * (places in the order entities were mapped), found through an id map. An
 * entity's ids are pushed, then the entity is closed over them.
 */
struct kg_slice_head {
    uint64_t off; /* its first id in ids */
    uint32_t entity, n;
};
struct kg_slice_map {
    struct oc_id_map index;      /* entity ─► its place */
    struct kg_slice_head *heads; /* per place */
    uint64_t n_heads, cap_heads;
    uint32_t *ids;
    uint64_t n_ids, cap_ids;
};
void kg_slice_map_init(struct kg_slice_map *m);
void kg_slice_map_deinit(struct kg_slice_map *m);
/* Appends a slice id for the entity being mapped. */
int kg_slice_map_push(struct kg_slice_map *m, uint32_t id, struct oc_err *err);
/* Maps e to the ids pushed since first; OC_ERR_FORMAT if e is mapped already. */
int kg_slice_map_close(struct kg_slice_map *m, uint32_t e, uint64_t first, struct oc_err *err);
/* Its places sorted by entity (*order: n_heads places, oc_free'd by the caller). */
int kg_slice_map_by_entity(const struct kg_slice_map *m, uint32_t **order, struct oc_err *err);
/* Whether e is mapped. */
static inline int kg_slice_map_has(const struct kg_slice_map *m, uint32_t e)
{
    uint32_t p;
    return oc_id_map_get(&m->index, e, &p);
}
/* Whether e is mapped; its slice ids in *ids, *n. */
static inline int kg_slice_map_find(const struct kg_slice_map *m, uint32_t e, const uint32_t **ids,
                                    uint32_t *n)
{
    uint32_t p;
    if (!oc_id_map_get(&m->index, e, &p)) {
        *ids = NULL;
        *n = 0;
        return 0;
    }
    *ids = m->ids + m->heads[p].off;
    *n = m->heads[p].n;
    return 1;
}

/* ---- slicing (kg_slice.c) ------------------------------------------------- */

enum kg_slice_mode {
    KG_SLICE_SIGMA, /* TIGER: match existing slices, then DFS + FFD generation */
    KG_SLICE_SEQ,   /* ginex baseline: each subgraph cut in order, no reuse */
};

struct kg_slice_opts {
    enum kg_slice_mode mode;
    uint32_t h;      /* slice capacity in facts */
    double alpha;    /* capacity threshold, a fraction of h */
    uint32_t hops;   /* k: the neighbours whose slices are matched first, the DFS roots */
    uint32_t layers; /* L: a query's atoms are its (L-1)-hop neighbourhood */
};

/*
 * The slices made so far (slice i: atoms[atom_off[i] .. atom_off[i+1]), the
 * sum of their degrees its payload <= h) and, per query entity sliced, its
 * slice ids (disjoint; their atoms are exactly the entity's atoms of degree
 * < h). Heavier atoms are in no slice: extraction reads them from the Atom
 * Cache or the fact graph.
 */
struct kg_slicer {
    struct kg_slice_opts o;
    struct oc_kg_facts *facts; /* borrowed */
    struct oc_kg_facts_reader *reader;
    uint64_t n_entities;
    /* slices */
    uint64_t n_slices, cap_slices;
    uint64_t *atom_off; /* n_slices + 1 */
    uint32_t *payload, *util;
    uint32_t *atoms; /* per atom entry */
    uint64_t n_pos, cap_pos;
    /* SiGMa, for matching: the slices whose first atom is entity e, chained from
       first_slice[e] through next_first (per slice), KG_NONE-ended */
    uint32_t *first_slice, *next_first;
    uint64_t *rem_bits;      /* SiGMa, while matching: per entity, in G'_q and unassigned */
    struct kg_slice_map map; /* query entity ─► slices */
    int open;                /* kg_slicer_init'd (not idle) */
    /* scratch of one query */
    struct oc_id_map local_of; /* entity ─► its local atom index */
    uint32_t *q_atoms;         /* the (L-1)-hop neighbourhood in BFS order */
    uint32_t *q_depth;         /* their BFS depths */
    uint32_t *q_deg;           /* their degrees (an atom's weight) */
    uint64_t *q_foff; /* offsets of their facts in q_rel/q_tail, or UINT64_MAX (not read) */
    uint64_t n_q, cap_q;
    uint32_t *q_rel, *q_tail; /* the facts read, concatenated in reading order */
    uint64_t n_qf, cap_qf;
    uint32_t *fetch_ids;             /* per local atom: the entities of one read */
    uint8_t *rem, *visited, *packed; /* per local atom: in G'_q, DFS state */
    uint32_t *light, *stack, *bin_of, *bin_load, *tmp; /* per local atom */
    uint32_t *bin_start; /* per bin + 1: where its atoms start, grouped by bin */
    uint32_t *ff_tree;   /* First-Fit: max-tree of the bins' free capacity (4 per atom) */
    uint32_t ff_leaves;  /* its leaves: a power of two >= the query's light atoms */
    uint64_t n_light;
    uint32_t *cand; /* candidates */
    uint64_t cap_cand;
    const uint32_t **p_rel, **p_tail; /* one slice's atoms' facts, for the store */
    uint32_t *p_deg;
    uint64_t *keys; /* sort keys */
    uint64_t cap_keys;
    uint64_t n_sliced_queries;
};

int kg_slicer_init(struct kg_slicer *s, struct oc_kg_facts *f, const struct kg_slice_opts *o,
                   struct oc_err *err);
void kg_slicer_deinit(struct kg_slicer *s);
/*
 * A slicer that slices nothing (kg-train with a reused slice store): its
 * options and entity count for the metrics, none of its arrays; has() is
 * false for every entity; deinit is safe.
 */
void kg_slicer_idle(struct kg_slicer *s, struct oc_kg_facts *f, const struct kg_slice_opts *o);
/*
 * Frees the scratch of one query (its atoms, their facts, the packing
 * arrays), which grows to the largest query sliced: between superbatches
 * the memory is training's (it grows again as the next slicing needs).
 */
void kg_slicer_trim(struct kg_slicer *s);
/* Whether entity q has its slices. */
int kg_slicer_has(const struct kg_slicer *s, uint32_t q);

struct kg_slice_store;
/*
 * Slices query entity q (no-op if it has slices): its atoms (BFS over L-1
 * hops), matched against the existing slices (SiGMa), the rest generated;
 * every new slice is appended to the store (may be NULL in tests).
 */
int kg_slicer_slice(struct kg_slicer *s, uint32_t q, struct kg_slice_store *st, struct oc_err *err);
/* q's atoms of degree < h (its sliceable subgraph G_q), in BFS order, into the scratch. */
int kg_slicer_atoms_of(struct kg_slicer *s, uint32_t q, const uint32_t **atoms, uint64_t *n,
                       struct oc_err *err);

/*
 * SliceRedundancyRate and SliceUtilizationRate over the query entities
 * qs[0..n) (distinct, each with slices in st or s):
 *   delta_R = sum |S_q| / sum ceil(|G_q| / h)
 *   delta_U = |U S_q| / sum |S_q|
 * with |G_q| the payload of q's slices (they cover G_q exactly once).
 */
struct kg_slice_metrics {
    double delta_r, delta_u;
    uint64_t n_queries, n_slice_refs, n_distinct, min_slices, n_slices;
};
int kg_slice_metrics(const struct kg_slice_store *st, const struct kg_slicer *s, const uint32_t *qs,
                     uint64_t n, struct kg_slice_metrics *m, struct oc_err *err);
/*
 * Theorem 2's lower bound on delta_R, from the atoms themselves (A: the
 * distinct atoms of degree < h of the G_q, recomputed by BFS):
 *   ceil(sum_{a in A} w_a / h) / (delta_U x sum ceil(|G_q| / h))
 */
int kg_slice_bound_r(struct kg_slicer *s, const uint32_t *qs, uint64_t n,
                     const struct kg_slice_metrics *m, double *bound, struct oc_err *err);

/* ---- the slice store (kg_slice_store.c) ---------------------------------- */

/* Where a slice's record lies and what it holds. */
struct kg_slice_place {
    uint64_t off;
    uint32_t bytes, crc, payload;
};

/*
 * DIR/plan/tiger-<key>/ (or seq-<key>/): slices.bin holds the records (each
 * starts on a 4 KiB boundary: header, atom table, facts), index.bin the
 * slices' places and CRCs and the query-entity ─► slices mapping. Written
 * under temporary names while epoch 0 slices, renamed at commit (index
 * last); reopened only if every CRC matches.
 *
 * Two sides: append (the slicer's: the record file's writer, its end, the
 * pending places) may run on one thread while another reads published
 * slices (their places, records through rd); publish, commit and close run
 * while no append does.
 */
struct kg_slice_store {
    char dir[4096], rec_path[4200], idx_path[4200], rec_tmp[4300];
    uint64_t key;
    uint32_t h;
    uint64_t n_entities;
    int loaded, committed;
    struct oc_file *w;      /* the records while they are written (buffered) */
    struct oc_file *rd;     /* the records, O_DIRECT */
    uint64_t end;           /* bytes of records */
    uint64_t n_slices, cap; /* published slices (readable) */
    uint64_t *off;          /* per slice: offset in slices.bin */
    uint32_t *bytes, *crc, *payload;
    /* slices appended but not yet published: the slicer's side (see below) */
    struct kg_slice_place *pend;
    uint64_t n_pend, cap_pend;
    /* the mapping when loaded from index.bin (else the slicer's) */
    struct kg_slice_map map;
    uint8_t *rec; /* one record being built */
    uint64_t cap_rec;
    uint64_t max_rec_bytes; /* record bytes at most: 16 + 16 h, rounded to 4 KiB */
};

/*
 * The most atoms a slice of capacity h holds: 1 + (h - 1) / 2. A query's
 * atoms but the query entity itself are reached through a fact, so they hold
 * its inverse and their identity fact (FORMAT.md section 9): 2 facts or more
 * each. The slicer cuts a slice that would hold more (a fact graph lacking
 * inverse facts) into pieces of at most this many atoms.
 */
uint32_t kg_slice_atoms_max(uint32_t h);
/*
 * Record bytes of a slice of capacity h at most: header, kg_slice_atoms_max
 * atoms' table, h facts, rounded to 4 KiB: the Slice Cache's slot (one page
 * for h = 256, where 2 atoms a fact would take two).
 */
uint64_t kg_slice_record_max(uint32_t h);
/*
 * Opens the store for key under plan_dir: loaded (*loaded = 1) if index.bin
 * and slices.bin are there, match key, h and n_entities, cover every entity
 * of need[0..n_need), and every record's CRC matches; otherwise whatever is
 * there is removed (logged, with why) and an empty store is started under
 * temporary names.
 */
int kg_slice_store_open(struct kg_slice_store *st, const char *plan_dir, const char *tag,
                        uint64_t key, uint32_t h, uint64_t n_entities, const uint32_t *need,
                        uint64_t n_need, const struct oc_kg_facts *f, struct oc_err *err);
void kg_slice_store_close(struct kg_slice_store *st);
/*
 * Appends slice number st->n_slices + st->n_pend: atoms[0..n), atom i's
 * facts rel[i][0..deg[i]), tail[i][..). Its record is written at once; its
 * place is pending until kg_slice_store_publish.
 */
int kg_slice_store_append(struct kg_slice_store *st, const uint32_t *atoms, uint32_t n,
                          const uint32_t *const *rel, const uint32_t *const *tail,
                          const uint32_t *deg, uint32_t payload, struct oc_err *err);
/* Makes the pending slices readable (their places join off/bytes/crc/payload). */
int kg_slice_store_publish(struct kg_slice_store *st, struct oc_err *err);
/* Writes index.bin with the slicer's mapping, fsyncs, renames both files into place. */
int kg_slice_store_commit(struct kg_slice_store *st, const struct kg_slicer *s, struct oc_err *err);
/* Slices of query entity q (the loaded mapping or the slicer's). */
void kg_slice_store_slices_of(const struct kg_slice_store *st, const struct kg_slicer *s,
                              uint32_t q, const uint32_t **ids, uint32_t *n);
/* Checks a record read back against its CRC; OC_ERR_FORMAT names the file and slice. */
int kg_slice_record_crc(const struct kg_slice_store *st, uint32_t id, const uint8_t *buf,
                        struct oc_err *err);
/*
 * Checks a record read back (bytes at buf, record bytes of slice id) against
 * its CRC (when check_crc) and layout (atom degrees as the fact graph's) and
 * puts its atoms into map. OC_ERR_FORMAT names the file and slice.
 */
int kg_slice_record_map(const struct kg_slice_store *st, uint32_t id, const uint8_t *buf,
                        int check_crc, struct kg_atoms *map, const struct oc_kg_facts *f,
                        struct oc_err *err);

/* ---- the executor (kg_tiger.c) ------------------------------------------- */

struct kg_tiger_stats {
    double slicing_s, plan_s; /* on whichever thread ran them */
    double wait_s;            /* the training thread's wait for a superbatch's plan */
    uint64_t superbatches, superbatches_ahead; /* started; of them, planned on the planner */
    uint64_t first_batches_ahead;              /* of them, batch 0 read ahead */
    uint64_t slices_read, slices_hit, slices_accessed, bytes_read;
    uint64_t warm_reads, cache_bytes;
};

struct kg_tiger;
struct kg_tiger_config {
    struct oc_kg_facts *facts;              /* the training graph, on disk */
    const struct kg_atom_cache *atom_cache; /* in front of it (may be NULL) */
    struct kg_slice_opts slice;
    const char *plan_dir;  /* DIR/plan */
    uint64_t key;          /* of everything the slices depend on */
    uint64_t cache_bytes;  /* the Slice Cache */
    const uint32_t *heads; /* every training query's head, in order */
    uint64_t n_queries;
};
int kg_tiger_new(const struct kg_tiger_config *c, struct kg_tiger **out, struct oc_err *err);
/*
 * Bytes an executor holds from the start whatever its caches (SiGMa's
 * per-entity first slice and remaining bit, the distinct heads, the io batch, the record
 * buffer), for n_entities entities, n_queries training queries and slices of
 * h facts: kg-train sizes the caches from what is left after it. What grows
 * with the slices (their tables, the mapping, the index of SiGMa's atoms) and
 * with a query or a batch (the slicer's scratch, the batch map) is not in it.
 */
uint64_t kg_tiger_fixed_bytes(enum kg_slice_mode mode, uint64_t n_entities, uint64_t n_queries,
                              uint32_t h);
void kg_tiger_free(struct kg_tiger *t);
/*
 * Starts a superbatch: n_batches batches, batch i the heads
 * heads[boff[i] .. boff[i+1]). Its plan (its heads not sliced yet sliced,
 * the Slice Cache's changesets over it) is the one made ahead, or made now
 * (an epoch's first). Then the next superbatch (next_n batches; 0: none, the
 * epoch's last) is sliced and planned on the planner stage while this one
 * trains; the next call must start that one.
 */
int kg_tiger_superbatch(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff,
                        uint32_t n_batches, const uint32_t *next_heads, const uint64_t *next_boff,
                        uint32_t next_n, struct oc_err *err);
/* Loads batch i's slices (cache, then disk), fills the batch map, sets it on the facts. */
int kg_tiger_batch_load(struct kg_tiger *t, uint32_t i, struct oc_err *err);
/* Applies batch i's changeset and clears the batch map. */
int kg_tiger_batch_done(struct kg_tiger *t, uint32_t i, struct oc_err *err);
/* After the last superbatch of an epoch: commits the store if slices were made. */
int kg_tiger_epoch_end(struct kg_tiger *t, struct oc_err *err);
/* Its counters; cache_bytes the Slice Cache's live slots now. */
void kg_tiger_stats(const struct kg_tiger *t, struct kg_tiger_stats *s);
/* Logs (INFO) what the Slice Cache gave back and took back, if either changed since the last note. */
void kg_tiger_note(struct kg_tiger *t);
/* Slicing metrics over the distinct heads of every training query. */
int kg_tiger_metrics(struct kg_tiger *t, struct kg_slice_metrics *m, struct oc_err *err);
/* Whether the store was reused from an earlier run. */
int kg_tiger_reused(const struct kg_tiger *t);
const struct kg_slicer *kg_tiger_slicer(const struct kg_tiger *t);
const struct kg_slice_store *kg_tiger_store(const struct kg_tiger *t);

#endif
