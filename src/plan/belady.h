/*
 * belady.h — the Belady changeset planner of plan/ (Ginex's, exact, at batch
 * granularity) and what it stands on: spills (arrays in RAM or in unlinked
 * scratch files), the id map, the LRU simulator, the trace of a superbatch
 * and its plan. For the callers that drive the planner themselves (plan's
 * superbatch planner, superbatch.h, and store's ginex executor); others use the
 * oc_plan_belady_* API of offcore/plan.h (kg's Slice Cache, --strategy auto).
 *
 *   trace (ids of iterations 0..S-1) ─┐
 *   cache as the last plan left it ───┴─► pl_plan_build ─► plan: warm-up reads,
 *                                                          per iteration the
 *                                                          changes (pos ─► slot)
 *
 * Place in the data flow: plan (spill.c, belady_sim.c, belady.c,
 * belady_api.c); used by superbatch.c and store's ginex (store may include
 * plan).
 * Thread-safety: a spill, map, LRU, trace, planner and plan are driven by one
 * thread at a time; a plan may be handed to another thread through a queue.
 * Ownership: every array is oc_alloc'd by the object that holds it and
 * released by its _deinit; id arrays passed in are borrowed.
 */
#ifndef OFFCORE_PLAN_BELADY_H
#define OFFCORE_PLAN_BELADY_H

#include <stdint.h>

#include "offcore/io.h"
#include "offcore/plan.h"
#include "offcore/slot_list.h"

#define PL_NONE  UINT32_MAX /* no slot / no local / empty map entry */
#define PL_EMPTY UINT64_MAX /* a cache slot holding no row */
#define PL_INF   UINT32_MAX /* next use: none left in the superbatch */

/* ---- id map (belady_sim.c) ------------------------------------------------- */

/*
 * Open addressing with linear probing from u64 keys to u32 values, where the
 * key of value v lives in the caller's array keys[v] (slot ids, local ids), so
 * an entry is 4 bytes. Capacity is a power of two at least twice the keys it
 * was sized for; deletion shifts the following entries back (no tombstones).
 */
struct pl_hash {
    uint32_t *tab; /* cap entries: a value, or PL_NONE */
    uint64_t cap;  /* 0 or a power of two */
    unsigned shift;
    uint64_t n;
};

void pl_hash_init(struct pl_hash *h);
void pl_hash_deinit(struct pl_hash *h);
/* Bytes of the table for n keys (what pl_hash_alloc(n) allocates). */
uint64_t pl_hash_bytes(uint64_t n_keys);
/* An empty table for up to n_keys keys (the old one is freed). */
int pl_hash_alloc(struct pl_hash *h, uint64_t n_keys, const char *consumer, struct oc_err *err);
/* Makes room for n_keys keys, rehashing what it holds (keys[] as for get). */
int pl_hash_grow(struct pl_hash *h, const uint64_t *keys, uint64_t n_keys, const char *consumer,
                 struct oc_err *err);
void pl_hash_clear(struct pl_hash *h);
uint32_t pl_hash_get(const struct pl_hash *h, const uint64_t *keys, uint64_t key);
/* Adds value v under keys[v], which must not be present; the table must have room. */
void pl_hash_put(struct pl_hash *h, const uint64_t *keys, uint32_t v);
/* Removes key (no-op if absent); keys[] must still hold the key of every entry. */
void pl_hash_del(struct pl_hash *h, const uint64_t *keys, uint64_t key);

/* ---- LRU simulator (belady_sim.c) ------------------------------------------ */

/* An LRU cache of `cap` ids over accesses one at a time, cold at start. */
struct pl_lru {
    uint64_t cap, n;
    uint64_t *id;               /* node -> id */
    struct oc_slot_list recent; /* the nodes, most recent at the front */
    struct pl_hash map;         /* id -> node */
};

/* Bytes pl_lru_init(cap) allocates. */
uint64_t pl_lru_bytes(uint64_t cap);
int pl_lru_init(struct pl_lru *l, uint64_t cap, struct oc_err *err);
void pl_lru_deinit(struct pl_lru *l);
/* Touches id: 1 if it was cached (hit), 0 if not (it is now, evicting the least recent). */
int pl_lru_access(struct pl_lru *l, uint64_t id);

/* ---- spills (spill.c) -------------------------------------------------------- */

#define PL_SPILL_BUF_BYTES (64u << 10) /* write buffer of a spill in a file */

/*
 * An array of n elements of `elem` bytes, appended to (or put at a position)
 * and read back in ranges; in RAM (oc_alloc'd, grown by a quarter) or, after
 * pl_spill_to_file, in an unlinked scratch file under a directory with a
 * write buffer. Reads see everything written (pending appends are flushed).
 */
struct pl_spill {
    uint32_t elem;
    uint64_t n;   /* elements */
    uint8_t *mem; /* RAM backend: cap elements */
    uint64_t cap;
    struct oc_file *f; /* file backend */
    uint8_t *buf;      /* its write buffer: the last n_buf elements appended */
    uint64_t n_buf;
    char path[4500];
    const char *what; /* consumer name, for the accountant and errors */
};

void pl_spill_init(struct pl_spill *sp, uint32_t elem, const char *what);
void pl_spill_deinit(struct pl_spill *sp);
/* Moves the (empty) spill into a scratch file under dir, named after name. */
int pl_spill_to_file(struct pl_spill *sp, const char *dir, const char *name, struct oc_err *err);
int pl_spill_in_file(const struct pl_spill *sp);
/* Empties it (memory and file are kept for reuse). */
void pl_spill_clear(struct pl_spill *sp);
int pl_spill_append(struct pl_spill *sp, const void *e, uint64_t n, struct oc_err *err);
/* Writes n elements at position at (the spill grows to at + n if shorter). */
int pl_spill_put(struct pl_spill *sp, uint64_t at, const void *e, uint64_t n, struct oc_err *err);
/* Reads elements [at, at + n) (OC_ERR_INTERNAL past the end). */
int pl_spill_get(struct pl_spill *sp, uint64_t at, uint64_t n, void *out, struct oc_err *err);
/* Writes the buffered appends to the file (no-op in RAM). */
int pl_spill_flush(struct pl_spill *sp, struct oc_err *err);
/* RAM held: the array, or the write buffer. */
uint64_t pl_spill_held_bytes(const struct pl_spill *sp);

/* ---- superbatch trace (belady.c) ------------------------------------------ */

/*
 * The input ids of a superbatch's batches, in order: iteration offsets in RAM
 * (8 bytes per batch), the ids in a spill (4 bytes each when every id fits
 * 32 bits, else 8), so in a file a trace costs no RAM per access.
 *
 *   iter_off:  [0, |B0|, |B0|+|B1|, ...]         n_iters + 1
 *   ids:       every access's node id             n_acc
 */
struct pl_trace {
    uint64_t n_iters, n_acc;
    uint64_t max_rows; /* most accesses of one batch */
    uint64_t *iter_off;
    uint64_t cap_iters;
    struct pl_spill ids;
};

/* An empty trace in RAM, for ids below n_nodes (UINT64_MAX: any). */
void pl_trace_init(struct pl_trace *t, uint64_t n_nodes);
void pl_trace_deinit(struct pl_trace *t);
/* Empties the trace, keeping its memory and file. */
void pl_trace_clear(struct pl_trace *t);
/* Appends one batch's input ids (checked for repeats by the planner). */
int pl_trace_add_iter(struct pl_trace *t, const uint64_t *ids, uint64_t n, struct oc_err *err);
/* Reads the ids of accesses [a, a + n). */
int pl_trace_ids(struct pl_trace *t, uint64_t a, uint64_t n, uint64_t *out, struct oc_err *err);
/* Memory held. */
uint64_t pl_trace_held_bytes(const struct pl_trace *t);

/* ---- the plan of one superbatch (belady.c) --------------------------------- */

/* Per iteration: accesses and the misses each policy would have had on them. */
struct pl_counts {
    uint64_t n_acc, n_belady, n_lru, n_static;
};

/* One change: after the batch's gather, slot `slot` takes the row at output position `pos`. */
struct pl_change {
    uint32_t pos, slot;
};

/*
 * What the executor does over a superbatch, for a cache of C slots:
 *
 *   warm:     before iteration 0, read row warm_id[w] from disk into slot
 *             warm_slot[w] (only while the cache has empty slots: the rows
 *             used soonest)
 *   changes:  after iteration i's gather, for each change c in [chg_off[i],
 *             chg_off[i+1]) of the chg spill: slot c.slot drops its row (the
 *             eviction) and takes the row at output position c.pos (a miss
 *             of iteration i, read from disk by that very gather: no extra read)
 *
 * A slot appears at most once per iteration. The changes live in a spill (a
 * file when the inspector has a plan directory), read back per batch.
 */
struct pl_plan {
    uint64_t first_iter; /* plan iteration (epoch x batches per epoch + batch) of iteration 0 */
    uint64_t n_iters;
    uint64_t n_warm;
    uint64_t *warm_id;
    uint32_t *warm_slot;
    uint64_t *chg_off;     /* n_iters + 1 */
    struct pl_spill chg;   /* struct pl_change elements */
    struct pl_counts *cnt; /* n_iters */
    uint64_t max_chg;      /* most changes of one iteration */
    uint64_t cap_iters, cap_warm;
    /*
     * With with_miss set (before a build): per iteration a bitmap of which of
     * its accesses miss (bit j % 8 of byte j / 8, in trace order), bytes
     * [miss_off[i], miss_off[i+1]) of the miss spill (ginex --hyperbatch
     * stages those rows ahead of the gather).
     */
    int with_miss;
    uint64_t *miss_off; /* n_iters + 1 (cap_iters) */
    struct pl_spill miss;
};

void pl_plan_init(struct pl_plan *p);
void pl_plan_deinit(struct pl_plan *p);
uint64_t pl_plan_held_bytes(const struct pl_plan *p);
/* The changes of iteration it into out (room for max_chg), their count in *n. */
int pl_plan_changes(struct pl_plan *p, uint64_t it, struct pl_change *out, uint64_t *n,
                    struct oc_err *err);
/* Iteration it's miss bitmap (a plan built with with_miss) into out, room for (n_acc + 7) / 8
   bytes of it. */
int pl_plan_misses(struct pl_plan *p, uint64_t it, uint8_t *out, struct oc_err *err);

/*
 * The planner: the cache contents as the plans leave them (slot -> id),
 * carried from one superbatch to the next, and its scratch.
 *
 * Belady at iteration granularity (the gathered batch is where inserted rows
 * come from, so a row may enter the cache only in an iteration that reads
 * it): after iteration i the cache holds the C rows with the soonest next use
 * among (cache ∪ rows of iteration i). Next uses beyond the superbatch are
 * unknown (infinite); among those, rows of lower in-degree go first.
 *
 * Linear in the accesses, streamed: a backward pass over the trace gives
 * every access the iteration of its row's next use (a per-node "next use so
 * far" array, written to the nxt spill); a forward pass then reads one batch
 * of ids and next uses at a time. Only cached rows and the current batch's
 * candidates are held, as entries (at most C + rows of one batch), in buckets
 * by next use (one bucket per iteration, then 64 "never again in this
 * superbatch" buckets by log2 in-degree), singly linked:
 *
 *   bucket:  0   1   2  ...  S-1 | inf,deg 2^63 ... inf,deg 1
 *                ▲                                        ▲
 *           hits of iteration 1                    evicted first
 *
 * The entries of bucket i are exactly iteration i's hits. Misses are taken in
 * batch order: one enters if the cache has room, or if the fullest-key bucket
 * (a pointer that only moves down within an iteration) holds a row used later
 * than it, which is evicted; ties keep the cached row. Cost O(accesses + C +
 * S x 64 + nodes) per superbatch; RAM O(C + rows of one batch + nodes x 4 B).
 */
struct pl_planner {
    uint64_t cap;      /* C */
    uint64_t *slot_id; /* C: id in slot, or PL_EMPTY */
    uint64_t n_used;
    uint64_t n_nodes;
    const uint64_t *indptr; /* in-degrees for the infinite buckets (borrowed; may be NULL) */
    uint32_t *first_use;    /* n_nodes: next use while walking backward */
    struct pl_spill nxt;    /* per access: the iteration of its row's next use */
    /* entries: cached rows and this batch's candidates */
    uint64_t cap_ent, n_free_ent;
    uint64_t *ent_id;
    uint32_t *key, *link, *slot_of, *free_ent;
    uint8_t *state;
    struct pl_hash map; /* id -> entry */
    uint32_t *head;
    uint64_t cap_head;
    uint32_t *free_slots; /* C */
    /* one batch: ids, next uses, entries, candidates */
    uint64_t *b_id;
    uint32_t *b_nxt, *b_ent, *pend_pos, *pend_ent;
    uint64_t cap_rows;
    /* the other policies of the same capacity, on the same accesses */
    struct pl_lru lru;
    const uint8_t *static_bits; /* the degree-ranked cache's rows as a bitmap (borrowed) */
};

/* Bytes the planner allocates for C slots over n_nodes nodes, besides per-batch scratch. */
uint64_t pl_planner_fixed_bytes(uint64_t cap, uint64_t n_nodes, int with_lru);

int pl_planner_init(struct pl_planner *p, uint64_t cap, uint64_t n_nodes, const uint64_t *indptr,
                    int with_lru, const uint8_t *static_bits, struct oc_err *err);
/* Lets ids below n_nodes be planned (grows the per-node array; never shrinks). */
int pl_planner_reserve_nodes(struct pl_planner *p, uint64_t n_nodes, struct oc_err *err);
/* Puts the next-use spill in a scratch file under dir (else it is in RAM). */
int pl_planner_spill_to(struct pl_planner *p, const char *dir, struct oc_err *err);
void pl_planner_deinit(struct pl_planner *p);
uint64_t pl_planner_held_bytes(const struct pl_planner *p);

/*
 * Builds out (first_iter and n_iters already set; n_iters must equal
 * t->n_iters) from the trace of the superbatch and the carried cache, and
 * leaves the cache as the plan does. An id repeated within a batch, or not
 * below n_nodes, is OC_ERR_FORMAT (a corrupt plan file). OC_ERR_NOMEM /
 * OC_ERR_BUDGET if scratch cannot grow; I/O errors of the spills as they are.
 */
int pl_plan_build(struct pl_planner *p, struct pl_trace *t, struct pl_plan *out,
                  struct oc_err *err);

#endif
