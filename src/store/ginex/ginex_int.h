/*
 * ginex_int.h — private to the `ginex` strategy (ginex.c, ginex_exec.c,
 * ginex_size.c, ginex_inspect.c): the inspector stage, the sizing, and the
 * store with its executor. The plans are plan's: the superbatch planner
 * (sampling ahead, superbatch files, a struct pl_sb_plan per superbatch:
 * src/plan/superbatch.h) over the Belady changeset planner with its trace,
 * spills, id map and LRU simulator (src/plan/belady.h).
 *
 * Place in the data flow: store. The inspector (a pipeline stage on the
 * store's pipeline, store_stages) has the planner sample superbatch k+1
 * ahead, write it to DIR/plan/ginex-<key>/ and plan it; the executor (the
 * batch pipeline's fetch stage or its gather lanes, in
 * oc_store_gather_batch) follows plan k.
 *
 *   inspector stage                           fetch stage / gather lanes (executor)
 *   ────────────────                          ──────────────────────────
 *   pop to_fill ─► sample / reuse superbatch ─►  gather batch t of plan k:
 *   trace ─► pl_plan_build ─► push done       lookup, changeset t (map) ─► disk
 *                                             misses ─► hits out, inserts in, widen f16
 *               to_fill ◄── plan k (refill) ◄─  (plan k done) pop done = k+1
 *
 * Thread-safety: the planner belongs to the inspector stage's thread; a plan
 * belongs to whoever popped it from a queue last (the queues' locks order
 * the hand-offs), read by the loader and the executor until the executor
 * gives it back; the store's turns: ginex_exec.c.
 * Ownership: every array is oc_alloc'd by the object that holds it and
 * released by its _deinit; id arrays passed in are borrowed.
 */
#ifndef OFFCORE_STORE_GINEX_INT_H
#define OFFCORE_STORE_GINEX_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "plan/superbatch.h"
#include "store/store_int.h"

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
    int misses;                        /* plans carry their miss bitmaps (--hyperbatch) */
};

/* ---- sizing (ginex_size.c) ------------------------------------------------ */

/* The training plan's shape: batches per epoch, first and end iteration (0s: nothing to plan). */
int gx_plan_shape(const struct oc_store_config *cfg, uint64_t *nb, uint64_t *t0, uint64_t *t_end,
                  struct oc_err *err);

/* Input rows of the plan's first batch (iteration t0), sampled once. */
int gx_probe_rows(const struct oc_store_config *cfg, uint64_t nb, uint64_t t0, uint64_t *rows,
                  struct oc_err *err);

/* --hyperbatch F: the groups' shape (cap 0: none) and the bytes they take. */
struct gx_hyper_shape {
    struct store_hyper_shape sh;
    uint64_t bytes;
};

/*
 * Superbatch length S, accesses per superbatch, cache rows C and gather
 * lanes (cfg->lanes while all lanes' readers and changesets take at most a
 * quarter of the budget and half of what the executor and inspector leave;
 * one with hyperbatches, whose shape goes to *hs, may be NULL) for a store whose executor struct takes exec_struct_bytes, given the first
 * batch's input rows (probe; 0 = unknown) and where the spills go (spill_dir,
 * "" = RAM); OC_ERR_BUDGET (err may be NULL) when the budget cannot hold the
 * executor, the inspector and, with spills in RAM, one batch of accesses.
 */
int gx_plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                     uint64_t exec_struct_bytes, uint64_t n_iters, uint64_t probe,
                     const char *spill_dir, uint64_t *S_out, uint64_t *acc_out, uint64_t *C_out,
                     uint32_t *lanes_out, struct gx_hyper_shape *hs, struct oc_err *err);

/*
 * The plan directory of a ginex store over cfg, PLAN/ginex-<key>, created
 * (stale temporaries of finished runs removed) into dir (n bytes); "" and 0
 * returned when there is none (no --plan-dir, not creatable or not
 * writable: logged). The superbatch files and the planner's spills go there.
 */
int gx_plan_dir(const struct oc_store *s, const struct oc_store_config *cfg, char *dir, size_t n,
                uint64_t *key);

/*
 * Creates the inspector, its sampler (over an on-disk topology on a pool of
 * the store's pipeline, store_sampler_pool), planner and trace; starts its
 * stage on the store's pipeline (store_stages), which fills the two plans with
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
int gx_inspector_next(struct gx_inspector *in, struct pl_sb_plan **plan, struct oc_err *err);
/* Gives a finished plan back, to be refilled with the superbatch after the next. */
void gx_inspector_release(struct gx_inspector *in, struct pl_sb_plan *plan);
/* Memory the inspector holds (any thread). */
uint64_t gx_inspector_held_bytes(const struct gx_inspector *in);
/* Microseconds it spent sampling and building plans since open, at open too (thread-safe). */
void gx_inspector_times(const struct gx_inspector *in, uint64_t *sample_us, uint64_t *build_us);
/* The plan directory (empty string when plans are not persisted). */
const char *gx_inspector_dir(const struct gx_inspector *in);
/* Superbatches reused from files / sampled, so far (any thread). */
void gx_inspector_counts(const struct gx_inspector *in, uint64_t *reused, uint64_t *sampled);

/* The options `offcore train` offers for ginex (its table in ginex.c; store_opts_read). */
struct gx_opts {
    uint32_t superbatch; /* batches per superbatch; 0 = an epoch (at most 1024) with a
                            writable plan directory, else up to 16, each cut where its
                            accesses fill a quarter of mem_bytes */
    double hyperbatch;   /* share of mem_bytes that stages the planned misses of the coming
                            batches (store/hyper.c); 0 = none */
    int hyperbatch_disk; /* its groups staged on disk (--hyperbatch-disk) */
};

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

/* ---- the store and its executor (ginex.c, ginex_exec.c) ------------------------ */

/* One gather lane's executor state (lane 0 also serves evaluation gathers). */
struct gx_lane {
    struct store_disk disk; /* its slots: per gather, the slot of each row, or PL_NONE (a miss) */
    struct pl_change *chg;  /* one batch's changeset; a skipped change has slot PL_NONE */
    uint64_t cap_chg, n_chg;
};

struct ginex_store {
    struct gx_lane lane[STORE_MAX_LANES]; /* s->n_lanes of them */
    /* C slots bound by the plan's changesets (cache_int.h, a bound cache over a hash): slots
       [0, n_live) hold rows; [n_live, C) were given back, empty, skipped by the plan (written
       by a give-back under mu while the executor is quiet, or by the map's turn) */
    struct store_cache cache;
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
    struct oc_giveback gb;      /* the give-back (core giveback.c; gx_give its policy) */
    struct oc_pipeline *stages; /* whose cancel sets cancelled; its error is the one repeated */
    struct pl_sb_plan *cur, *nxt;
    int failed; /* the inspector or a planned gather failed: training calls repeat the error */
    struct oc_err fail;
    uint64_t n_unplanned, n_diverged;
    /* the loader (ginex_load_batch): the batches the inspector sampled, read back */
    struct pl_sb_reader rd;
    /* without a superbatch file (it could not be written): a sampler of its own */
    const struct oc_graph *graph;
    struct oc_sample_opts so;
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    struct oc_sample_iter fb; /* opened on the first such batch (fb.sampler set) */
    uint64_t n_fb_sampled;    /* batches sampled a second time that way */
    /* fb's topology reads added to the store's (store_topo_add) */
    struct oc_topo_disk_stats fb_topo_seen;
    /* --hyperbatch: the planned misses of the loaded batches, staged (store/hyper.c); the
       loader (its prepare side, or the feeder's thread) reads each batch's miss bitmap into
       miss; cap_miss is its room, atomic: stats read it on another thread */
    struct store_hyper *hyper;
    struct store_hyper_batch *hyper_taken; /* the batch being gathered, from its group */
    uint8_t *miss;
    _Atomic uint64_t cap_miss;
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
               const struct pl_sb_plan *p, int count, struct oc_err *err);
/* The store's pipeline was cancelled: every wait of the executor and loader ends. */
void gx_on_cancel(void *ctx);
/* Under g->mu: the recorded failure or the pipeline's error after a cancel, else OC_OK. */
int gx_stop(const struct ginex_store *g, struct oc_err *err);
/*
 * The give-back's policy (a budgeted store registers g->gb with it): once no
 * gather is between its map's turn and its copy turn (new turns wait), the
 * last live slots leave the map and their pages go back; the plan skips
 * them until the map's turn takes them back (gx_exec_gather_batch).
 */
uint64_t gx_give(void *owner, uint64_t goal, uint64_t *released);
/* oc_store_gather: through the cache without changing it (waits for planned copies). */
int gx_exec_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                   struct oc_err *err);
/* oc_store_gather_batch(_lane): planned batches in their turns, others as gx_exec_gather. */
int gx_exec_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                         uint64_t n, float *out, struct oc_err *err);

#endif
