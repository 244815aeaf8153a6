/*
 * ginex_int.h — private to the `ginex` strategy (ginex.c, ginex_exec.c,
 * ginex_size.c, ginex_plan.c, ginex_sim.c, ginex_inspect.c): the id map, the
 * superbatch trace, the Belady changeset planner, the LRU simulator, the
 * inspector stage, and the store with its executor.
 *
 * Place in the data flow: store. The inspector (a pipeline stage on the
 * store's pipeline, store_stages) samples superbatch k+1 ahead with its own sampler, writes it to
 * DIR/plan/ginex-<key>/, and turns its input ids into a gx_plan; the
 * executor (the batch pipeline's fetch stage or its gather lanes, in
 * oc_store_gather_batch) follows plan k.
 *
 *   inspector stage                           fetch stage / gather lanes (executor)
 *   ────────────────                          ──────────────────────────
 *   pop to_fill ─► sample / reuse superbatch ─►  gather batch t of plan k:
 *   trace ─► gx_plan_build ─► push done       lookup, changeset t (map) ─► disk
 *                                             misses ─► hits out, inserts in, widen f16
 *               to_fill ◄── plan k (refill) ◄─  (plan k done) pop done = k+1
 *
 * Thread-safety: a gx_trace, gx_planner and gx_lru belong to the inspector
 * stage's thread; a gx_plan belongs to whoever popped it from a queue last (the
 * queues' locks order the hand-offs), read by the loader and the executor
 * until the executor gives it back; the store's turns: ginex_exec.c. The tests drive all of them on one
 * thread.
 * Ownership: every array is oc_alloc'd by the object that holds it and
 * released by its _deinit; id arrays passed in are borrowed.
 */
#ifndef OFFCORE_STORE_GINEX_INT_H
#define OFFCORE_STORE_GINEX_INT_H

#include <stdint.h>

#include "store/store_int.h"

#define GX_NONE  UINT32_MAX /* no slot / no local / empty map entry */
#define GX_EMPTY UINT64_MAX /* a cache slot holding no row */
#define GX_INF   UINT32_MAX /* next use: none left in the superbatch */

/* ---- id map (ginex_sim.c) -------------------------------------------------- */

/*
 * Open addressing with linear probing from u64 keys to u32 values, where the
 * key of value v lives in the caller's array keys[v] (slot ids, local ids), so
 * an entry is 4 bytes. Capacity is a power of two at least twice the keys it
 * was sized for; deletion shifts the following entries back (no tombstones).
 */
struct gx_hash {
    uint32_t *tab; /* cap entries: a value, or GX_NONE */
    uint64_t cap;  /* 0 or a power of two */
    unsigned shift;
    uint64_t n;
};

void gx_hash_init(struct gx_hash *h);
void gx_hash_deinit(struct gx_hash *h);
/* Bytes of the table for n keys (what gx_hash_alloc(n) allocates). */
uint64_t gx_hash_bytes(uint64_t n_keys);
/* An empty table for up to n_keys keys (the old one is freed). */
int gx_hash_alloc(struct gx_hash *h, uint64_t n_keys, const char *consumer, struct oc_err *err);
/* Makes room for n_keys keys, rehashing what it holds (keys[] as for get). */
int gx_hash_grow(struct gx_hash *h, const uint64_t *keys, uint64_t n_keys, const char *consumer,
                 struct oc_err *err);
void gx_hash_clear(struct gx_hash *h);
uint32_t gx_hash_get(const struct gx_hash *h, const uint64_t *keys, uint64_t key);
/* Adds value v under keys[v], which must not be present; the table must have room. */
void gx_hash_put(struct gx_hash *h, const uint64_t *keys, uint32_t v);
/* Removes key (no-op if absent); keys[] must still hold the key of every entry. */
void gx_hash_del(struct gx_hash *h, const uint64_t *keys, uint64_t key);

/* ---- LRU simulator (ginex_sim.c) ------------------------------------------- */

/* An LRU cache of `cap` ids over accesses one at a time, cold at start. */
struct gx_lru {
    uint64_t cap, n;
    uint64_t *id;          /* node -> id */
    uint32_t *prev, *next; /* recency list: head = most recent */
    uint32_t head, tail;
    struct gx_hash map; /* id -> node */
};

/* Bytes gx_lru_init(cap) allocates. */
uint64_t gx_lru_bytes(uint64_t cap);
int gx_lru_init(struct gx_lru *l, uint64_t cap, struct oc_err *err);
void gx_lru_deinit(struct gx_lru *l);
/* Touches id: 1 if it was cached (hit), 0 if not (it is now, evicting the least recent). */
int gx_lru_access(struct gx_lru *l, uint64_t id);

/* ---- spills (ginex_spill.c) -------------------------------------------------- */

#define GX_SPILL_BUF_BYTES (64u << 10) /* write buffer of a spill in a file */

/*
 * An array of n elements of `elem` bytes, appended to (or put at a position)
 * and read back in ranges; in RAM (oc_alloc'd, grown by a quarter) or, after
 * gx_spill_to_file, in an unlinked scratch file under a directory with a
 * write buffer. Reads see everything written (pending appends are flushed).
 */
struct gx_spill {
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

void gx_spill_init(struct gx_spill *sp, uint32_t elem, const char *what);
void gx_spill_deinit(struct gx_spill *sp);
/* Moves the (empty) spill into a scratch file under dir, named after name. */
int gx_spill_to_file(struct gx_spill *sp, const char *dir, const char *name, struct oc_err *err);
int gx_spill_in_file(const struct gx_spill *sp);
/* Empties it (memory and file are kept for reuse). */
void gx_spill_clear(struct gx_spill *sp);
int gx_spill_append(struct gx_spill *sp, const void *e, uint64_t n, struct oc_err *err);
/* Writes n elements at position at (the spill grows to at + n if shorter). */
int gx_spill_put(struct gx_spill *sp, uint64_t at, const void *e, uint64_t n, struct oc_err *err);
/* Reads elements [at, at + n) (OC_ERR_INTERNAL past the end). */
int gx_spill_get(struct gx_spill *sp, uint64_t at, uint64_t n, void *out, struct oc_err *err);
/* Writes the buffered appends to the file (no-op in RAM). */
int gx_spill_flush(struct gx_spill *sp, struct oc_err *err);
/* RAM held: the array, or the write buffer. */
uint64_t gx_spill_held_bytes(const struct gx_spill *sp);

/* ---- superbatch trace (ginex_plan.c) --------------------------------------- */

/*
 * The input ids of a superbatch's batches, in order: iteration offsets in RAM
 * (8 bytes per batch), the ids in a spill (4 bytes each when every id fits
 * 32 bits, else 8), so in a file a trace costs no RAM per access.
 *
 *   iter_off:  [0, |B0|, |B0|+|B1|, ...]         n_iters + 1
 *   ids:       every access's node id             n_acc
 */
struct gx_trace {
    uint64_t n_iters, n_acc;
    uint64_t max_rows; /* most accesses of one batch */
    uint64_t *iter_off;
    uint64_t cap_iters;
    struct gx_spill ids;
};

/* An empty trace in RAM, for ids below n_nodes (UINT64_MAX: any). */
void gx_trace_init(struct gx_trace *t, uint64_t n_nodes);
void gx_trace_deinit(struct gx_trace *t);
/* Empties the trace, keeping its memory and file. */
void gx_trace_clear(struct gx_trace *t);
/* Appends one batch's input ids (checked for repeats by the planner). */
int gx_trace_add_iter(struct gx_trace *t, const uint64_t *ids, uint64_t n, struct oc_err *err);
/* Reads the ids of accesses [a, a + n). */
int gx_trace_ids(struct gx_trace *t, uint64_t a, uint64_t n, uint64_t *out, struct oc_err *err);
/* Memory held. */
uint64_t gx_trace_held_bytes(const struct gx_trace *t);

/* ---- the plan of one superbatch (ginex_plan.c) ------------------------------ */

/* Per iteration: accesses and the misses each policy would have had on them. */
struct gx_counts {
    uint64_t n_acc, n_belady, n_lru, n_static;
};

/* One change: after the batch's gather, slot `slot` takes the row at output position `pos`. */
struct gx_change {
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
struct gx_plan {
    uint64_t first_iter; /* plan iteration (epoch x batches per epoch + batch) of iteration 0 */
    uint64_t n_iters;
    uint64_t n_warm;
    uint64_t *warm_id;
    uint32_t *warm_slot;
    uint64_t *chg_off;     /* n_iters + 1 */
    struct gx_spill chg;   /* struct gx_change elements */
    struct gx_counts *cnt; /* n_iters */
    uint64_t max_chg;      /* most changes of one iteration */
    uint64_t cap_iters, cap_warm;
    /*
     * Where its batches can be read back (ginex_load_batch): the superbatch
     * file, complete under its final name ("" when it could not be written),
     * and the offset of each batch's length prefix in it.
     */
    char sb_path[4200];
    uint64_t *rec_off; /* n_iters */
    uint64_t cap_rec_off;
    /* The inspector's result for this plan: OC_OK, or why it could not be made. */
    int status;
    struct oc_err err;
};

void gx_plan_init(struct gx_plan *p);
void gx_plan_deinit(struct gx_plan *p);
uint64_t gx_plan_held_bytes(const struct gx_plan *p);
/* The changes of iteration it into out (room for max_chg), their count in *n. */
int gx_plan_changes(struct gx_plan *p, uint64_t it, struct gx_change *out, uint64_t *n,
                    struct oc_err *err);

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
struct gx_planner {
    uint64_t cap;      /* C */
    uint64_t *slot_id; /* C: id in slot, or GX_EMPTY */
    uint64_t n_used;
    uint64_t n_nodes;
    const uint64_t *indptr; /* in-degrees for the infinite buckets (borrowed; may be NULL) */
    uint32_t *first_use;    /* n_nodes: next use while walking backward */
    struct gx_spill nxt;    /* per access: the iteration of its row's next use */
    /* entries: cached rows and this batch's candidates */
    uint64_t cap_ent, n_free_ent;
    uint64_t *ent_id;
    uint32_t *key, *link, *slot_of, *free_ent;
    uint8_t *state;
    struct gx_hash map; /* id -> entry */
    uint32_t *head;
    uint64_t cap_head;
    uint32_t *free_slots; /* C */
    /* one batch: ids, next uses, entries, candidates */
    uint64_t *b_id;
    uint32_t *b_nxt, *b_ent, *pend_pos, *pend_ent;
    uint64_t cap_rows;
    /* the other policies of the same capacity, on the same accesses */
    struct gx_lru lru;
    const uint8_t *static_bits; /* the degree-ranked cache's rows as a bitmap (borrowed) */
};

/* Bytes the planner allocates for C slots over n_nodes nodes, besides per-batch scratch. */
uint64_t gx_planner_fixed_bytes(uint64_t cap, uint64_t n_nodes, int with_lru);

int gx_planner_init(struct gx_planner *p, uint64_t cap, uint64_t n_nodes, const uint64_t *indptr,
                    int with_lru, const uint8_t *static_bits, struct oc_err *err);
/* Lets ids below n_nodes be planned (grows the per-node array; never shrinks). */
int gx_planner_reserve_nodes(struct gx_planner *p, uint64_t n_nodes, struct oc_err *err);
/* Puts the next-use spill in a scratch file under dir (else it is in RAM). */
int gx_planner_spill_to(struct gx_planner *p, const char *dir, struct oc_err *err);
void gx_planner_deinit(struct gx_planner *p);
uint64_t gx_planner_held_bytes(const struct gx_planner *p);

/*
 * Builds out (first_iter and n_iters already set; n_iters must equal
 * t->n_iters) from the trace of the superbatch and the carried cache, and
 * leaves the cache as the plan does. An id repeated within a batch, or not
 * below n_nodes, is OC_ERR_FORMAT (a corrupt plan file). OC_ERR_NOMEM /
 * OC_ERR_BUDGET if scratch cannot grow; I/O errors of the spills as they are.
 */
int gx_plan_build(struct gx_planner *p, struct gx_trace *t, struct gx_plan *out,
                  struct oc_err *err);

/* ---- the inspector (ginex_inspect.c) ---------------------------------------- */

/*
 * Budget per access of a superbatch whose spills are in RAM (no plan
 * directory: trace id, next use, changes of both plans; growth slack
 * included; with a plan directory an access costs disk, not RAM:
 * GX_DISK_PER_ACCESS besides the batch records) and per cache slot besides
 * its row (the executor's slot id and map, the planner's slot id, entry and
 * map, free stacks, the LRU simulation, warm-up lists of both plans).
 */
#define GX_BYTES_PER_ACCESS 36u
#define GX_DISK_PER_ACCESS  20u
#define GX_BYTES_PER_SLOT   152u

struct gx_inspector;

/* What the inspector samples: the training plan, read at new. */
struct gx_inspect_config {
    const struct oc_store_config *cfg; /* graph, train ids, batch size, plan dir */
    uint64_t n_batches;                /* per epoch */
    uint64_t t0, t_end;                /* plan iterations [t0, t_end) */
    uint64_t superbatch;               /* S: most batches per superbatch */
    uint64_t max_acc;                  /* most accesses per superbatch (one batch always fits) */
    uint64_t capacity;                 /* C */
    const uint8_t *static_bits;        /* borrowed, may be NULL */
    const char *dir;                   /* plan directory from gx_plan_dir ("" = none) */
    uint64_t key;                      /* its plan key */
};

/* ---- sizing (ginex_size.c) ------------------------------------------------ */

/* The training plan's shape: batches per epoch, first and end iteration (0s: nothing to plan). */
int gx_plan_shape(const struct oc_store_config *cfg, uint64_t *nb, uint64_t *t0, uint64_t *t_end,
                  struct oc_err *err);

/* Input rows of the plan's first batch (iteration t0), sampled once. */
int gx_probe_rows(const struct oc_store_config *cfg, uint64_t nb, uint64_t t0, uint64_t *rows,
                  struct oc_err *err);

/*
 * Superbatch length S, accesses per superbatch, cache rows C and gather
 * lanes (cfg->lanes while all lanes' readers and changesets take at most a
 * quarter of the budget and half of what the executor and inspector leave)
 * for a store whose executor struct takes exec_struct_bytes, given the first
 * batch's input rows (probe; 0 = unknown) and where the spills go (spill_dir,
 * "" = RAM); OC_ERR_BUDGET (err may be NULL) when the budget cannot hold the
 * executor, the inspector and, with spills in RAM, one batch of accesses.
 */
int gx_plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                     uint64_t exec_struct_bytes, uint64_t n_iters, uint64_t probe,
                     const char *spill_dir, uint64_t *S_out, uint64_t *acc_out, uint64_t *C_out,
                     uint32_t *lanes_out, struct oc_err *err);

/*
 * The plan directory of a ginex store over cfg, PLAN/ginex-<key>, created
 * (stale temporaries of finished runs removed) into dir (n bytes); "" and 0
 * returned when there is none (no --plan-dir, not creatable or not
 * writable: logged). The superbatch files and the planner's spills go there.
 */
int gx_plan_dir(const struct oc_store *s, const struct oc_store_config *cfg, char *dir, size_t n,
                uint64_t *key);

/*
 * Creates the inspector, its sampler, planner and trace; starts its stage on
 * the store's pipeline (store_stages), which fills the two plans with
 * superbatches 0 and 1. A superbatch is the next S batches, cut short before
 * a batch that would take its accesses past max_acc. With a plan directory
 * (ic->dir) the trace, the next uses and the changesets are spilled to
 * unlinked scratch files there.
 */
int gx_inspector_new(struct oc_store *s, const struct gx_inspect_config *ic,
                     struct gx_inspector **out, struct oc_err *err);
/*
 * Frees everything; its stage was joined before (the registry joins the
 * store's pipeline, abandoning the superbatch being sampled).
 */
void gx_inspector_free(struct gx_inspector *in);
/*
 * The next plan, in superbatch order, waiting for the inspector. Fails with
 * the inspector's error (sampling, planning) for that superbatch.
 */
int gx_inspector_next(struct gx_inspector *in, struct gx_plan **plan, struct oc_err *err);
/* Gives a finished plan back, to be refilled with the superbatch after the next. */
void gx_inspector_release(struct gx_inspector *in, struct gx_plan *plan);
/* Memory the inspector holds (any thread). */
uint64_t gx_inspector_held_bytes(const struct gx_inspector *in);
/* Training batches its sampler has sampled since open (thread-safe). */
uint64_t gx_inspector_sampled_batches(const struct gx_inspector *in);
/* The plan directory (empty string when plans are not persisted). */
const char *gx_inspector_dir(const struct gx_inspector *in);
/* Superbatches reused from files / sampled, so far (any thread). */
void gx_inspector_counts(const struct gx_inspector *in, uint64_t *reused, uint64_t *sampled);

/*
 * Bytes the inspector holds besides GX_BYTES_PER_ACCESS per access (spills
 * in RAM) and GX_BYTES_PER_SLOT per slot: itself, its sampler and one batch
 * of up to `rows` inputs of n_layers layers, the record buffer, the plan file
 * writer, the planner's per-batch entries and per-node next-use array,
 * per-batch arrays of S batches, the spills' write buffers.
 */
uint64_t gx_inspector_fixed_bytes(uint64_t superbatch, uint64_t rows, uint32_t n_layers,
                                  uint64_t n_nodes);

/* ---- test knobs --------------------------------------------------------------- */

/* For a `ginex` store (0 otherwise): cache capacity in rows, rows cached now, superbatch. */
uint64_t oc_store_ginex_capacity(const struct oc_store *s);
uint64_t oc_store_ginex_n_cached(const struct oc_store *s);
uint64_t oc_store_ginex_superbatch(const struct oc_store *s);
/* Most accesses a superbatch of a `ginex` store may have. */
uint64_t oc_store_ginex_max_accesses(const struct oc_store *s);
/* The smallest cfg->mem_bytes with which a `ginex` store over cfg caches at least `rows` rows. */
int oc_store_ginex_budget_for(const struct oc_store_config *cfg, uint64_t rows, uint64_t *bytes,
                              struct oc_err *err);
/* The plan directory of a `ginex` store ("" if none). */
const char *oc_store_ginex_plan_dir(const struct oc_store *s);
/* Superbatches reused from plan files and sampled by a `ginex` store so far. */
void oc_store_ginex_plan_counts(const struct oc_store *s, uint64_t *reused, uint64_t *sampled);

/* ---- superbatch plan files (ginex_inspect.c) ---------------------------- */

#define GX_SB_FOOTER 64u /* footer bytes at the end of a superbatch file */

/* What a superbatch file must hold to be reused. */
struct gx_sb_expect {
    uint64_t key;      /* plan key (topology, sampling options, batch size, training ids) */
    uint64_t first;    /* its first iteration */
    uint64_t most;     /* batches it must hold (fewer only if cut short) */
    uint64_t nb;       /* batches per epoch */
    uint64_t n_nodes;  /* ids are below this */
    uint64_t max_acc;  /* accesses this run's budget holds */
    uint32_t n_layers; /* of every batch */
};

/* Reads len bytes at off of the file being checked. */
typedef int (*gx_sb_read_fn)(void *ctx, void *buf, size_t len, uint64_t off, struct oc_err *err);

/* The footer of a file of n batches from x->first (flags bit 0: cut short by max_acc). */
void gx_sb_footer(const struct gx_sb_expect *x, uint64_t n, uint32_t flags,
                  uint8_t f[GX_SB_FOOTER]);
/*
 * Checks a superbatch file of size bytes read through rd: footer, then every
 * record (length, sample-batch record, epoch and batch numbers, layers,
 * accesses), adding each batch's input ids to trace (cleared first by the
 * caller). Record bytes go through *rec (grown as needed, *cap_rec bytes),
 * batches through *batch; rec_off (may be NULL; x->most entries) gets the
 * offset of each batch's length prefix. OC_OK: *n_iters batches were added. OC_ERR_FORMAT:
 * not usable, why (why_n bytes) or err says why. Other statuses (out of
 * memory, I/O) are returned as they are. The fuzz target
 * tests/fuzz/fuzz_ginex_superbatch.c calls it on memory.
 */
int gx_sb_parse(const struct gx_sb_expect *x, gx_sb_read_fn rd, void *ctx, uint64_t size,
                uint8_t **rec, uint64_t *cap_rec, struct oc_sample_batch *batch,
                struct gx_trace *trace, uint64_t *rec_off, uint64_t *n_iters, char *why,
                size_t why_n, struct oc_err *err);
/* Grows *rec (*cap_rec bytes) to hold bytes, by a quarter at least. */
int gx_rec_reserve(uint8_t **rec, uint64_t *cap_rec, uint64_t bytes, struct oc_err *err);
/* Grows p->rec_off to n entries. */
int gx_plan_reserve_offsets(struct gx_plan *p, uint64_t n, struct oc_err *err);

/* ---- the store and its executor (ginex.c, ginex_exec.c) ------------------------ */

/* One gather lane's executor state (lane 0 also serves evaluation gathers). */
struct gx_lane {
    struct store_disk disk; /* its slots: per gather, the slot of each row, or GX_NONE (a miss) */
    struct gx_change *chg;  /* one batch's changeset; a skipped change has slot GX_NONE */
    uint64_t cap_chg, n_chg;
};

struct ginex_store {
    struct gx_lane lane[STORE_MAX_LANES]; /* s->n_lanes of them */
    uint64_t cap;                         /* C, rows */
    uint64_t row_bytes;                   /* the store's */
    uint8_t *rows;                        /* C x row_bytes, as stored: an anonymous mapping */
    size_t map_bytes;                     /* its length */
    /* slots [0, live) hold rows; [live, C) were given back, empty, skipped by the plan
       (written by a give-back under mu while the executor is quiet, or by the map's turn) */
    _Atomic uint64_t live;
    uint64_t *slot_id; /* C: id in the slot, or GX_EMPTY */
    uint64_t n_cached;
    struct gx_hash map;   /* id -> slot */
    uint8_t *static_bits; /* the degree-ranked cache of C rows, for its miss count */
    uint64_t static_bytes;
    uint64_t S, max_acc, nb, t0, t_end;
    uint64_t load_rows; /* warm-up rows per batch run: min(GX_LOAD_ROWS, rows of one batch) */
    struct gx_inspector *insp;
    /*
     * The turns (under mu, waited for on cv): planned iteration t takes the
     * cache's map and plan when t_next == t (in_meta while it does), and
     * copies rows into and out of the cache's slots when t_copy == t; an
     * unplanned gather (evaluation, out of order) runs alone (excl) once
     * every planned one before it has copied. cur is the plan being
     * executed, nxt the one after it once the loader (or the executor) took
     * it from the inspector (popping while one of them waits for it).
     */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    OC_DEBUG_ONLY(struct oc_held mu_held;) /* mu's holder (gx_lock), for "under g->mu" asserts */
    int sync_made;
    uint64_t t_next, t_copy, t_load;
    int in_meta, excl, popping, cancelled;
    int yielding;               /* a give-back waits for the executor to be quiet: no turn starts */
    int reclaiming;             /* registered with the accountant */
    uint64_t n_yields;          /* [mu] */
    uint64_t n_yields_logged;   /* [mu] */
    struct oc_pipeline *stages; /* whose cancel sets cancelled; its error is the one repeated */
    struct gx_plan *cur, *nxt;
    int failed; /* the inspector or a planned gather failed: training calls repeat the error */
    struct oc_err fail;
    uint64_t n_unplanned, n_diverged;
    /* the loader (ginex_load_batch): the batches the inspector sampled, read back */
    struct oc_file *sb_file;       /* the current plan's superbatch file, or NULL */
    uint64_t sb_bytes;             /* its size when opened */
    const struct gx_plan *sb_plan; /* the plan sb_file belongs to (and its first iteration) */
    uint64_t sb_first;
    uint8_t *rec; /* one batch's record */
    uint64_t cap_rec;
    /* without a superbatch file (it could not be written): a sampler of its own */
    const struct oc_graph *graph;
    struct oc_sample_opts so;
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    struct oc_sample_iter fb; /* opened on the first such batch (fb.sampler set) */
    uint64_t n_fb_sampled;    /* batches sampled a second time that way */
};

/* g->mu: locked, unlocked and waited on through these, which record its holder for asserts. */
static inline void gx_lock(struct ginex_store *g)
{
    pthread_mutex_lock(&g->mu);
    OC_HELD_TAKE(&g->mu_held);
}
static inline void gx_unlock(struct ginex_store *g)
{
    OC_HELD_DROP(&g->mu_held);
    pthread_mutex_unlock(&g->mu);
}
static inline void gx_wait(struct ginex_store *g)
{
    OC_HELD_DROP(&g->mu_held);
    pthread_cond_wait(&g->cv, &g->mu);
    OC_HELD_TAKE(&g->mu_held);
}
static inline int gx_timedwait(struct ginex_store *g, const struct timespec *until)
{
    OC_HELD_DROP(&g->mu_held);
    int rc = pthread_cond_timedwait(&g->cv, &g->mu, until);
    OC_HELD_TAKE(&g->mu_held);
    return rc;
}

/* Reads plan p's warm-up rows into their slots through reader d (count: into the stats). */
int gx_warm_up(struct oc_store *s, struct ginex_store *g, struct store_disk *d,
               const struct gx_plan *p, int count, struct oc_err *err);
/* The store's pipeline was cancelled: every wait of the executor and loader ends. */
void gx_on_cancel(void *ctx);
/* Under g->mu: the recorded failure or the pipeline's error after a cancel, else OC_OK. */
int gx_stop(const struct ginex_store *g, struct oc_err *err);
/*
 * The accountant's reclaimer (a budgeted store registers it): once no
 * gather is between its map's turn and its copy turn (new turns wait), the
 * last live slots leave the map and their pages go back; the plan skips
 * them until the map's turn takes them back (gx_exec_gather_batch).
 */
uint64_t gx_yield(void *ctx, uint64_t want);
/* oc_store_gather: through the cache without changing it (waits for planned copies). */
int gx_exec_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                   struct oc_err *err);
/* oc_store_gather_batch(_lane): planned batches in their turns, others as gx_exec_gather. */
int gx_exec_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                         uint64_t n, float *out, struct oc_err *err);

#endif
