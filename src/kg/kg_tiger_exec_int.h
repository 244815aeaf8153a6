/*
 * kg_tiger_exec_int.h — private to the executor of TIGER's super-batch loop
 * (kg_tiger*.c): its state and the calls its files make of each other.
 *
 *   kg_tiger.c        the executor's life and the steps kg_train drives
 *                     (superbatch, batch load / done, epoch end), stats
 *   kg_tiger_stage.c  the reader's and the planner's jobs, run as stages of
 *                     the executor's pipeline (src/pipeline/stage.c)
 *   kg_tiger_plan.c   a superbatch's plan (planner stage): slicing, the trace,
 *                     the Belady changesets
 *   kg_tiger_reads.c  a batch's misses: read ahead (reader stage) or now, its
 *                     hits pinned
 *   kg_tiger_cache.c  the Slice Cache's slots: states, pins, give-back and
 *                     take-back, warm-up fills
 *
 * Place in the data flow: kg (kg_train.c ──► kg_tiger*.c ──► kg_slice*.c, kg_facts.c).
 * Thread-safety: as each field says; the executor is driven by one training
 * thread; [lock]: under the Slice Cache's reclaim lock (kg_tiger_cache.c).
 * Ownership: the executor owns everything it points to but the
 * configuration's fact graph and Atom Cache.
 */
#ifndef OFFCORE_KG_TIGER_EXEC_INT_H
#define OFFCORE_KG_TIGER_EXEC_INT_H

#include "kg/kg_tiger_int.h"
#include "offcore/io.h"
#include "offcore/pipeline.h"
#include "offcore/plan.h"

/* A superbatch's trace (each batch's distinct slices) and the Slice Cache's changesets. */
struct sb_plan {
    uint32_t n_batches;
    uint64_t *ids, *iter_off;    /* batch b's slices: ids[iter_off[b] .. iter_off[b+1]) */
    uint64_t cap_ids, cap_iters; /* cap_iters: iter_off's and chg_off's */
    /* oc_plan_belady_plan's, copied (its arrays last only until its next plan) */
    uint64_t n_warm, cap_warm, cap_chg;
    uint64_t *warm_id, *chg_off; /* chg_off: n_batches + 1 */
    uint32_t *warm_slot, *chg_pos, *chg_slot;
    uint64_t n_slices; /* slices made once it was sliced */
    double slicing_s, plan_s;
};

/* A superbatch's heads: batch b's heads[boff[b] .. boff[b+1]). */
struct sb_job {
    uint32_t n_batches;
    uint32_t *heads;
    uint64_t *boff;
    uint64_t cap_heads, cap_boff;
};

struct kg_tiger;
/*
 * A job of one of the executor's one-thread stages (the reader, the planner;
 * kg_tiger_stage.c): it goes in through `in` and comes back through `done`.
 */
struct tiger_job {
    struct oc_queue *in, *done; /* its stage's queues, capacity 1 (NULL: not started) */
    int (*run)(struct kg_tiger *t, struct oc_err *err);
    struct kg_tiger *t;
    const char *what; /* its stage's name */
    int rc;           /* the job's result, its message in err: written by the stage thread */
    struct oc_err err;
    int running;  /* the training thread's: started, not come back yet */
    int finished; /* the training thread's: came back, its result not taken yet */
};

/* One batch's missing slices: where each position's record lies, and the records. */
struct slice_reads {
    uint8_t *buf;  /* n_miss records, slot_bytes each, in position order */
    uint64_t cap;  /* records buf holds */
    uint32_t *pos; /* per position of the batch: its record in buf, or KG_NONE (a hit) */
    uint64_t cap_pos, n_miss;
    int crc_checked; /* the records' CRCs were checked as they were read (by the reader) */
};

struct kg_tiger {
    struct kg_tiger_config c;
    struct kg_slicer slicer;
    struct kg_slice_store store;
    struct oc_plan_belady *belady;
    uint64_t n_slots, slot_bytes;
    uint8_t *cache;       /* n_slots x slot_bytes: an accounted mapping */
    size_t cache_len;     /* its bytes */
    uint8_t *slot_state;  /* n_slots: SLOT_GONE, SLOT_PIN [lock] */
    uint64_t n_live;      /* slots not gone [lock] */
    uint32_t *plan_slice; /* n_slots: the slice the plan keeps there, or KG_NONE */
    uint32_t *pinned;     /* the slots pinned by the loaded batch or the warm-up */
    uint64_t n_pinned, cap_pinned;
    uint32_t *back_slot; /* take_back's slots and their plan's slices */
    uint64_t *back_id;
    uint64_t cap_back;
    struct oc_reclaim_lock lock; /* slot states: the training thread reads, give_back writes */
    struct oc_giveback gb;       /* the give-back (core giveback.c; give_back its policy) */
    int inexact; /* a slot went since the cache last held all the plan says [lock] */
    uint64_t n_takes, taken_bytes;       /* [lock] */
    uint64_t gives_logged, takes_logged; /* kg_tiger_note's */
    uint32_t *slot_slice;                /* n_slots: slice held, or KG_NONE */
    uint32_t *slice_slot;                /* per slice: its slot, or KG_NONE */
    uint32_t *mark; /* per slice: the mark_gen of the last prefetch that marked it */
    uint64_t cap_slice;
    uint32_t mark_gen;
    /* the superbatches: p the one training, the other the planner's */
    struct sb_plan sb[2];
    struct sb_plan *p;
    /* the planner stage: plans job (slicing, trace, changesets) into the other sb */
    struct tiger_job planner;
    struct sb_job job; /* the superbatch planned ahead (valid: planned or being planned) */
    int job_valid;
    uint32_t *trace_mark; /* per slice: the trace_gen of the last batch that listed it */
    uint64_t cap_trace;
    uint32_t trace_gen;
    /* the batch */
    struct slice_reads cur; /* the loaded batch's */
    struct kg_atoms batch;
    struct oc_io_batch *io; /* the training thread's, or the reader's while a prefetch runs */
    /* the next batch's misses, read while this batch trains (the reader stage) */
    struct tiger_job reader;
    struct oc_pipeline *pipe;      /* the jobs' stages (NULL until one starts); cancelled: stop */
    uint32_t pf_batch;             /* the batch prefetched, or KG_NONE */
    const struct sb_plan *pf_plan; /* its superbatch: this one, or the next one (batch 0) */
    const uint64_t *pf_ids;        /* its slice ids */
    struct slice_reads next;       /* its reads */
    uint64_t pf_before;            /* the io batch's bytes read before them */
    uint64_t pf_n;                 /* its slices */
    uint32_t *slot_mark; /* n_slots: the mark_gen of the last prefetch whose changeset hits it */
    uint32_t *heads;     /* distinct training heads (metrics) */
    uint64_t n_heads;
    struct kg_tiger_stats st;
};

/* ---- shared helpers (kg_tiger.c) ---------------------------------------- */

/*
 * The next value of generation counter *gen, which no entry of the marks
 * a[0..na) and b[0..nb) carries yet (all cleared when the counter wraps).
 */
uint32_t tiger_next_gen(uint32_t *gen, uint32_t *a, uint64_t na, uint32_t *b, uint64_t nb);

/* ---- the stages' jobs (kg_tiger_stage.c) -------------------------------- */

/* Starts j (its stage on first use); the caller leaves the job's data alone until it came back. */
int tiger_job_start(struct tiger_job *j, struct oc_err *err);
/* Whether j came back (its result waits for tiger_job_wait); never blocks. */
int tiger_job_poll(struct tiger_job *j);
/* Waits until j is idle; the error of the job it ran since the last wait, if any. */
int tiger_job_wait(struct tiger_job *j, struct oc_err *err);
/* Whether kg_tiger_free asked the stages to stop (their pipeline cancelled). */
int tiger_quitting(struct kg_tiger *t);

/* ---- the plan (kg_tiger_plan.c) ----------------------------------------- */

int tiger_job_set(struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n,
                  struct oc_err *err);
int tiger_job_is(const struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n);
int tiger_plan_superbatch(struct kg_tiger *t, const struct sb_job *j, struct sb_plan *p,
                          struct oc_err *err);
/* The planner stage's job. */
int tiger_plan_ahead(struct kg_tiger *t, struct oc_err *err);
int tiger_planner_start(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff, uint32_t n,
                        struct oc_err *err);
int tiger_planner_wait(struct kg_tiger *t, struct oc_err *err);

/* ---- a batch's reads (kg_tiger_reads.c) --------------------------------- */

int tiger_queue_read(struct kg_tiger *t, uint32_t id, uint8_t *dst, struct oc_err *err);
int tiger_run_reads(struct kg_tiger *t, struct oc_err *err);
/* The reader stage's job. */
int tiger_read_ahead(struct kg_tiger *t, struct oc_err *err);
int tiger_prefetch(struct kg_tiger *t, uint32_t b, const struct sb_plan *sp, uint32_t i,
                   struct oc_err *err);
int tiger_prefetch_next(struct kg_tiger *t, uint32_t b, struct oc_err *err);
int tiger_prefetch_drop(struct kg_tiger *t, struct oc_err *err);
int tiger_load_misses(struct kg_tiger *t, uint32_t i, struct oc_err *err);

/* ---- the Slice Cache's slots (kg_tiger_cache.c) ------------------------- */

enum { SLOT_GONE = 1, SLOT_PIN = 2 }; /* slot_state bits */
/* Registers the cache's give-back with core's accountant (under --mem-budget). */
int tiger_cache_register(struct kg_tiger *t, struct oc_err *err);
int tiger_cached(const struct kg_tiger *t, uint32_t id);
void tiger_pin(struct kg_tiger *t, uint32_t s);
void tiger_unpin_all(struct kg_tiger *t);
int tiger_slices_reserve(struct kg_tiger *t, uint64_t n, struct oc_err *err);
int tiger_fill_slots(struct kg_tiger *t, const uint32_t *slots, const uint64_t *ids, uint64_t n,
                     struct oc_err *err);
int tiger_take_back(struct kg_tiger *t, struct oc_err *err);

#endif
