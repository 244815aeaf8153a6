/*
 * kg_tiger.c — the executor of TIGER's super-batch loop (thesis section
 * V-A) for kg-train's ginex-slices and tiger modes:
 *
 *   superbatch k + 1 (S batches' heads, training order), on the planner
 *   thread while superbatch k trains (an epoch's first: on the training
 *   thread before it):
 *     ──► slicing: heads without slices ──► kg_slicer_slice ──► slice store
 *         (records written, their places pending until k + 1 starts)
 *     ──► per batch the distinct slices of its heads (mapping) = the trace
 *     ──► Belady changesets for the Slice Cache (ginex's planner,
 *         oc_plan_belady), copied into the plan of k + 1
 *   superbatch start: the plan made ahead is taken (it must be this
 *     superbatch's), the pending slices published, warm-up reads into
 *     empty slots
 *   batch i: slices from the Slice Cache (a C x slot-bytes array, slot by
 *     direct addressing) or read O_DIRECT from slices.bin (one read each;
 *     batch i + 1's misses are read on a reader thread while batch i trains,
 *     known exactly from the plan: the slots as batch i's changeset leaves
 *     them; after the last batch, the next superbatch's batch 0 if its plan
 *     is ready and brings no new slices or warm-ups)
 *     ──► batch atom map (entity ─► facts inside the records) ──► the fact
 *     graph serves extraction from it (strict: a light atom missing is an
 *     error), heavy atoms from the Atom Cache or disk
 *     ──► after the batch: its changeset copies read slices into their slots
 *
 * Giving memory back (under --mem-budget the Slice Cache gives back through
 * core's oc_giveback, give_back its policy: the slice tables grow as epoch 0 slices, after the
 * cache was sized): a give-back marks the highest slots that no loaded batch
 * or warm-up read pins gone and returns their pages. A gone slot holds
 * nothing: changesets and warm-ups into it are skipped, so a slice the plan
 * keeps there is read from the store when used (a hit predicted for a
 * prefetched batch is checked again as the batch loads and read then if its
 * slot went). At a superbatch's start, gone slots come back when the budget
 * has room again, each with the slice the plan keeps there read into it
 * (plan_slice), so that the cache again holds what the plan says. Both are
 * logged (kg_tiger_note). The slices are the same bytes from the cache or the
 * store, so nothing learned changes.
 *
 * Place in the data flow: kg (kg_train.c ──► here ──► kg_slice*.c, kg_facts.c).
 * Thread-safety: three threads, handing over under mu. The training thread
 * drives it; the extraction workers read the batch map between batch_load
 * and batch_done. The reader and the planner are one-thread stages of the
 * executor's own pipeline (src/pipeline/stage.c), started on first use; a
 * job is handed over as the worker itself through its stage's queue, and
 * its end is signalled back under mu (W_IDLE ─► W_RUNNING ─► W_DONE ─►
 * W_IDLE, the last step by the training thread's wait). The reader thread
 * runs the io batch between prefetch and prefetch_wait, when the training
 * thread leaves it alone. The planner thread owns the slicer, the Belady planner, the store's append side, the
 * plan not training and trace_mark between planner_start and planner_wait;
 * the slicer reads the fact graph through its own reader, which ignores the
 * atom maps batches set. The slots' states (gone, pinned) are under `lock`:
 * the training thread holds its read side while it decides hits, pins, and
 * writes slots (never allocating meanwhile), the give-back (any thread) its
 * write side.
 * Ownership: the executor owns the slicer, store, cache and buffers; it
 * borrows the fact graph, which it leaves with only the Atom Cache in front.
 */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "kg/kg_tiger_int.h"
#include "offcore/io.h"
#include "offcore/pipeline.h"
#include "offcore/plan.h"

/* A superbatch's trace (each batch's distinct slices) and the Slice Cache's changesets. */
struct sb_plan {
    uint32_t n_batches;
    uint64_t *ids, *iter_off; /* batch b's slices: ids[iter_off[b] .. iter_off[b+1]) */
    uint64_t cap_ids, cap_iters;
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
/* A one-thread stage that runs one job at a time for the training thread (the reader, the planner). */
struct worker {
    struct oc_queue *q; /* its stage's input: the worker itself, once per job (NULL: not started) */
    int state;          /* W_IDLE, W_RUNNING, W_DONE (under the executor's mu) */
    int rc;             /* the job's result, its message in err */
    struct oc_err err;
    int (*run)(struct kg_tiger *t, struct oc_err *err);
    struct kg_tiger *t;
    const char *what; /* its stage's name */
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
    /* the planner thread: plans job (slicing, trace, changesets) into the other sb */
    struct worker planner;
    struct sb_job job; /* the superbatch planned ahead (valid: planned or being planned) */
    int job_valid;
    uint32_t *trace_mark; /* per slice: the trace_gen of the last batch that listed it */
    uint64_t cap_trace;
    uint32_t trace_gen;
    /* the batch */
    struct slice_reads cur; /* the loaded batch's */
    struct kg_atoms batch;
    struct oc_io_batch *io; /* the training thread's, or the reader's while a prefetch runs */
    /* the next batch's misses, read while this batch trains (one reader thread) */
    struct worker reader;
    struct oc_pipeline *pipe; /* the workers' stages (NULL until one starts); cancelled: stop */
    pthread_mutex_t mu;       /* the workers' states */
    pthread_cond_t cv;
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

enum { W_IDLE, W_RUNNING, W_DONE };
enum { SLOT_GONE = 1, SLOT_PIN = 2 };

/* Whether slice id is in a live slot (the lock's read side held). */
static int cached(const struct kg_tiger *t, uint32_t id)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    uint32_t s = t->slice_slot[id];
    return s != KG_NONE && !(t->slot_state[s] & SLOT_GONE);
}

/*
 * The give-back's policy (the write side held): the highest slots neither
 * gone nor pinned go, until at least goal bytes went back or none is left.
 */
static uint64_t give_back(void *owner, uint64_t goal, uint64_t *released)
{
    struct kg_tiger *t = owner;
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    uint64_t sb = t->slot_bytes, n = 0, hi = 0; /* slots [s, hi) go */
    for (uint64_t s = t->n_slots; s > 0; s--) {
        int go = n * sb < goal && !t->slot_state[s - 1]; /* not gone already nor pinned */
        if (go) {
            t->slot_state[s - 1] = SLOT_GONE;
            hi = hi ? hi : s;
            n++;
        }
        if (hi && (!go || s == 1)) { /* a run ends: its pages back at once */
            oc_mem_pages_back(t->cache, t->cache_len, (go ? s - 1 : s) * sb, hi * sb);
            hi = 0;
        }
        if (n * sb >= goal && !hi)
            break;
    }
    t->n_live -= n;
    t->inexact |= n > 0;
    *released = 0; /* the give-back releases them after the unlock */
    return n * sb;
}

/* Pins slot s for the loaded batch or the warm-up (lock held; cap_pinned room). */
static void pin(struct kg_tiger *t, uint32_t s)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock) && t->n_pinned < t->cap_pinned);
    OC_ASSERT(!(t->slot_state[s] & SLOT_GONE)); /* a gone slot holds nothing to pin */
    t->slot_state[s] |= SLOT_PIN;
    t->pinned[t->n_pinned++] = s;
}

/* Unpins every slot pinned (lock held). */
static void unpin_all(struct kg_tiger *t)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    for (uint64_t k = 0; k < t->n_pinned; k++)
        t->slot_state[t->pinned[k]] &= (uint8_t)~SLOT_PIN;
    t->n_pinned = 0;
}

static int read_ahead(struct kg_tiger *t, struct oc_err *err);
static int plan_ahead(struct kg_tiger *t, struct oc_err *err);

static int grow(void *pp, uint64_t n, size_t elem, const char *what, struct oc_err *err)
{
    void **p = pp;
    void *q = oc_realloc(*p, (size_t)(n * elem), what, err);
    if (!q)
        return err->status;
    *p = q;
    return OC_OK;
}

/* Per-slice arrays cover n slices. */
static int slices_reserve(struct kg_tiger *t, uint64_t n, struct oc_err *err)
{
    uint64_t old = t->cap_slice;
    void *const arr[] = {&t->slice_slot, &t->mark};
    const size_t sz[] = {4, 4};
    OC_KG_TRY(oc_grow_all(arr, sz, 2, &t->cap_slice, n, 1024, "kg slice cache", err));
    for (uint64_t i = old; i < t->cap_slice; i++) {
        t->slice_slot[i] = KG_NONE;
        t->mark[i] = 0;
    }
    return OC_OK;
}

int kg_tiger_new(const struct kg_tiger_config *c, struct kg_tiger **out, struct oc_err *err)
{
    *out = NULL;
    struct kg_tiger *t = oc_calloc(1, sizeof(*t), "kg tiger", err);
    if (!t)
        return err->status;
    t->c = *c;
    t->pf_batch = KG_NONE;
    t->p = &t->sb[0];
    t->reader = (struct worker){.run = read_ahead, .t = t, .what = "kg slice reader"};
    t->planner = (struct worker){.run = plan_ahead, .t = t, .what = "kg planner"};
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    uint64_t n_ent = oc_kg_facts_n_entities(c->facts);
    int rc = kg_atoms_init(&t->batch, n_ent, err);
    /* distinct heads, in first-appearance order */
    uint8_t *seen = rc ? NULL : oc_calloc(n_ent, 1, "kg tiger", err);
    if (!rc && (!seen || !(t->heads = oc_alloc((size_t)c->n_queries * 4 + 4, "kg tiger", err))))
        rc = err->status;
    for (uint64_t i = 0; !rc && i < c->n_queries; i++) {
        uint32_t h = c->heads[i];
        if (h >= n_ent) {
            rc = OC_ERR(err, OC_ERR_ARG, "kg tiger: head %u out of range", h);
            break;
        }
        if (!seen[h]) {
            seen[h] = 1;
            t->heads[t->n_heads++] = h;
        }
    }
    oc_free(seen);
    const char *tag = c->slice.mode == KG_SLICE_SIGMA ? "tiger" : "ginex-slices";
    if (!rc)
        rc = kg_slice_store_open(&t->store, c->plan_dir, tag, c->key, c->slice.h, n_ent, t->heads,
                                 t->n_heads, c->facts, err);
    /* a reused store maps every head: the slicer's per-entity arrays are not made */
    if (!rc && t->store.loaded)
        kg_slicer_idle(&t->slicer, c->facts, &c->slice);
    else if (!rc && !(rc = kg_slicer_init(&t->slicer, c->facts, &c->slice, err)))
        kg_facts_reader_own_atoms(t->slicer.reader, c->atom_cache); /* on the planner thread */
    if (!rc) {
        t->slot_bytes = kg_slice_record_max(c->slice.h);
        t->n_slots = c->cache_bytes / t->slot_bytes;
        if (t->n_slots >= KG_NONE)
            t->n_slots = KG_NONE - 1;
        rc = oc_plan_belady_new(t->n_slots, &t->belady, err);
    }
    if (!rc)
        rc = oc_reclaim_lock_init(&t->lock, "kg slice cache", err);
    if (!rc && t->n_slots &&
        (!(t->slot_slice = oc_alloc((size_t)t->n_slots * 4, "kg slice cache", err)) ||
         !(t->slot_mark = oc_calloc(t->n_slots, 4, "kg slice cache", err)) ||
         !(t->slot_state = oc_calloc(t->n_slots, 1, "kg slice cache", err)) ||
         !(t->plan_slice = oc_alloc((size_t)t->n_slots * 4, "kg slice cache", err))))
        rc = err->status;
    if (!rc && t->n_slots &&
        !(rc = oc_mem_map(t->n_slots * t->slot_bytes, "kg slice cache", &t->cache, &t->cache_len,
                          err)))
        t->n_live = t->n_slots;
    for (uint64_t s = 0; !rc && s < t->n_slots; s++)
        t->slot_slice[s] = t->plan_slice[s] = KG_NONE;
    if (!rc)
        rc = slices_reserve(t, t->store.n_slices + 1, err);
    if (!rc)
        rc = oc_io_batch_new(64, (size_t)256 << 10, &t->io, err);
    /* the slice tables grow after the cache was sized: it gives slots back */
    if (!rc && t->n_slots && oc_mem_budget()) {
        oc_giveback_init(&t->gb, "kg slice cache", t->n_slots * t->slot_bytes, &t->lock, give_back,
                         t);
        rc = oc_giveback_register(&t->gb, err);
    }
    if (rc) {
        kg_tiger_free(t);
        return rc;
    }
    t->st.cache_bytes = t->n_slots * t->slot_bytes;
    *out = t;
    return OC_OK;
}

uint64_t kg_tiger_fixed_bytes(enum kg_slice_mode mode, uint64_t n_entities, uint64_t n_queries,
                              uint32_t h)
{
    /* SiGMa's first slice per entity and its bit of remaining atoms; distinct heads; the io
       batch; a record */
    return (mode == KG_SLICE_SIGMA ? n_entities * 4 + (n_entities + 63) / 64 * 8 : 0) +
           n_queries * 4 + ((uint64_t)256 << 10) + kg_slice_record_max(h);
}

void kg_tiger_free(struct kg_tiger *t)
{
    if (!t)
        return;
    /* the reader finishes a read it started first; the planner stops at the next head it
       would slice (plan_superbatch sees the pipeline cancelled) */
    oc_pipeline_free(t->pipe);
    oc_giveback_unregister(&t->gb); /* waits for a give-back in progress */
    if (t->cache) {
        munmap(t->cache, t->cache_len);
        oc_mem_release(t->n_live * t->slot_bytes);
    }
    oc_reclaim_lock_destroy(&t->lock);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    kg_slice_store_close(&t->store);
    kg_slicer_deinit(&t->slicer);
    kg_atoms_deinit(&t->batch);
    oc_plan_belady_free(t->belady);
    oc_io_batch_free(t->io);
    void *arr[] = {t->slot_state, t->slot_slice, t->slice_slot, t->mark,   t->cur.buf,
                   t->cur.pos,    t->next.buf,   t->next.pos,   t->heads,  t->slot_mark,
                   t->trace_mark, t->job.heads,  t->job.boff,   t->pinned, t->plan_slice,
                   t->back_slot,  t->back_id};
    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++)
        oc_free(arr[i]);
    for (int k = 0; k < 2; k++) {
        struct sb_plan *p = &t->sb[k];
        void *pa[] = {p->ids,       p->iter_off, p->warm_id, p->chg_off,
                      p->warm_slot, p->chg_pos,  p->chg_slot};
        for (size_t i = 0; i < sizeof(pa) / sizeof(pa[0]); i++)
            oc_free(pa[i]);
    }
    oc_free(t);
}

/* Reads slice id into dst (slot_bytes, aligned) through the io batch (queued only). */
static int queue_read(struct kg_tiger *t, uint32_t id, uint8_t *dst, struct oc_err *err)
{
    uint64_t nb = (t->store.bytes[id] + OC_IO_ALIGN - 1) / OC_IO_ALIGN * OC_IO_ALIGN;
    return oc_io_batch_add(t->io, t->store.rd, t->store.off[id], (size_t)nb, dst, err);
}

static int run_reads(struct kg_tiger *t, struct oc_err *err)
{
    uint64_t before = oc_io_batch_stats(t->io)->read_bytes;
    int rc = oc_io_batch_run(t->io, err);
    t->st.bytes_read += oc_io_batch_stats(t->io)->read_bytes - before;
    return rc;
}

/*
 * The next value of generation counter *gen, which no entry of the marks
 * a[0..na) and b[0..nb) carries yet (all cleared when the counter wraps).
 */
static uint32_t next_gen(uint32_t *gen, uint32_t *a, uint64_t na, uint32_t *b, uint64_t nb)
{
    if (++*gen == 0) {
        if (na)
            memset(a, 0, (size_t)na * 4);
        if (nb)
            memset(b, 0, (size_t)nb * 4);
        *gen = 1;
    }
    return *gen;
}

/* A mark generation no slice or slot carries yet (the prefetches' marks). */
static uint32_t next_mark(struct kg_tiger *t)
{
    return next_gen(&t->mark_gen, t->mark, t->cap_slice, t->slot_mark, t->n_slots);
}

/*
 * A worker's stage function: runs the job of worker `item`. Its error goes to
 * the worker (worker_wait hands it to the training thread), not to the
 * pipeline, which only the executor's end cancels.
 */
static int worker_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    (void)ctx, (void)st, (void)err;
    struct worker *w = item;
    struct kg_tiger *t = w->t;
    int rc = w->run(t, &w->err);
    pthread_mutex_lock(&t->mu);
    OC_ASSERT(w->state == W_RUNNING);
    w->rc = rc;
    w->state = W_DONE;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return OC_OK;
}

/* w's stage, on first use: the pipeline, its queue (one job at a time) and its thread. */
static int worker_stage_add(struct worker *w, struct oc_err *err)
{
    struct kg_tiger *t = w->t;
    if (!t->pipe)
        OC_KG_TRY(oc_pipeline_new("kg slice pipeline", &t->pipe, err));
    struct oc_queue *q;
    OC_KG_TRY(oc_pipeline_queue(t->pipe, 1, &q, err));
    OC_KG_TRY(oc_pipeline_stage(t->pipe, w->what, 1, q, worker_stage, t, NULL, err));
    w->q = q;
    return oc_pipeline_start(t->pipe, err);
}

/* Starts w's job (its stage on first use); the caller leaves the job's data alone until worker_wait. */
static int worker_start(struct worker *w, struct oc_err *err)
{
    if (!w->q)
        OC_KG_TRY(worker_stage_add(w, err));
    pthread_mutex_lock(&w->t->mu);
    OC_ASSERT(w->state == W_IDLE); /* one job at a time: the queue of one never blocks */
    w->state = W_RUNNING;
    pthread_mutex_unlock(&w->t->mu);
    if (oc_queue_push(w->q, w) != OC_OK) {
        pthread_mutex_lock(&w->t->mu);
        w->state = W_IDLE;
        pthread_mutex_unlock(&w->t->mu);
        return OC_ERR(err, OC_ERR_CANCELLED, "kg slices: the %s stage was stopped", w->what);
    }
    return OC_OK;
}

/* Waits until w is idle; the error of the job it ran since the last wait, if any. */
static int worker_wait(struct worker *w, struct oc_err *err)
{
    pthread_mutex_lock(&w->t->mu);
    while (w->state == W_RUNNING)
        pthread_cond_wait(&w->t->cv, &w->t->mu);
    int rc = w->state == W_DONE ? w->rc : OC_OK;
    w->state = W_IDLE;
    pthread_mutex_unlock(&w->t->mu);
    if (rc)
        *err = w->err;
    return rc;
}

/* The reader's job: the queued reads of the next batch, and their records' CRCs. */
static int read_ahead(struct kg_tiger *t, struct oc_err *err)
{
    int rc = oc_io_batch_run(t->io, err);
    /* the CRCs here, off the training thread (published slices do not move meanwhile) */
    for (uint64_t p = 0; !rc && p < t->pf_n; p++)
        if (t->next.pos[p] != KG_NONE)
            rc = kg_slice_record_crc(&t->store, (uint32_t)t->pf_ids[p],
                                     t->next.buf + (uint64_t)t->next.pos[p] * t->slot_bytes, err);
    return rc;
}

/* Waits for the prefetch in flight; its bytes are counted, its error returned. */
static int prefetch_wait(struct kg_tiger *t, struct oc_err *err)
{
    int rc = worker_wait(&t->reader, err);
    t->st.bytes_read += oc_io_batch_stats(t->io)->read_bytes - t->pf_before;
    return rc;
}

/* Waits for a prefetch nobody will use and forgets it. */
static int prefetch_drop(struct kg_tiger *t, struct oc_err *err)
{
    if (t->pf_batch == KG_NONE)
        return OC_OK;
    t->pf_batch = KG_NONE;
    return prefetch_wait(t, err);
}

/* r's buffer holds k records; the first `keep` are kept. */
static int reads_reserve(struct kg_tiger *t, struct slice_reads *r, uint64_t k, uint64_t keep,
                         struct oc_err *err)
{
    if (k <= r->cap)
        return OC_OK;
    uint8_t *b = oc_alloc_aligned((size_t)(k * t->slot_bytes), OC_IO_ALIGN, "kg slice reads", err);
    if (!b)
        return err->status;
    if (keep)
        memcpy(b, r->buf, (size_t)(keep * t->slot_bytes));
    oc_free(r->buf);
    r->buf = b;
    r->cap = k;
    return OC_OK;
}

/*
 * Queues into r the reads of batch i of plan sp whose slices miss the Slice
 * Cache once the changeset marked with generation g is applied (g fresh:
 * none pending): a slice hits if it is the final occupant of a live slot that
 * changeset fills, or sits in a live slot it leaves alone. (A slot may go
 * before the batch loads: load_misses checks the hits again.)
 */
static int queue_misses(struct kg_tiger *t, struct slice_reads *r, const struct sb_plan *sp,
                        uint32_t i, uint32_t g, struct oc_err *err)
{
    uint64_t p0 = sp->iter_off[i], n = sp->iter_off[i + 1] - p0, k = 0;
    if (n > r->cap_pos) {
        OC_KG_TRY(grow(&r->pos, n, 4, "kg slice reads", err));
        r->cap_pos = n;
    }
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)sp->ids[p0 + p], s = t->slice_slot[id];
        int hit = t->mark[id] == g || (cached(t, id) && t->slot_mark[s] != g);
        r->pos[p] = hit ? KG_NONE : (uint32_t)k++;
    }
    oc_reclaim_lock_unlock(&t->lock);
    OC_KG_TRY(reads_reserve(t, r, k, 0, err));
    for (uint64_t p = 0; p < n; p++)
        if (r->pos[p] != KG_NONE)
            OC_KG_TRY(queue_read(t, (uint32_t)sp->ids[p0 + p],
                                 r->buf + (uint64_t)r->pos[p] * t->slot_bytes, err));
    r->n_miss = k;
    return OC_OK;
}

/*
 * Starts reading batch i of plan sp on the reader thread while batch b of
 * this superbatch (loaded) trains; sp is this superbatch's plan (i = b + 1)
 * or the next one's (i = 0, b the last). Its misses are those once batch b's
 * changeset is applied, which is what they are when batch i loads (nothing
 * else comes between: a next superbatch's plan is used only with no warm-up
 * reads and no new slices). The training thread does not touch t->io until
 * prefetch_wait.
 */
static int prefetch(struct kg_tiger *t, uint32_t b, const struct sb_plan *sp, uint32_t i,
                    struct oc_err *err)
{
    uint64_t q0 = t->p->iter_off[b], c0 = t->p->chg_off[b], c1 = t->p->chg_off[b + 1];
    uint32_t g = next_mark(t);
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t c = c1; c > c0; c--) { /* last entry first: each slot's final occupant */
        uint32_t s = t->p->chg_slot[c - 1];
        if (t->slot_mark[s] == g)
            continue;
        t->slot_mark[s] = g;
        if (!(t->slot_state[s] & SLOT_GONE)) /* (the changeset skips a gone one) */
            t->mark[t->p->ids[q0 + t->p->chg_pos[c - 1]]] = g;
    }
    oc_reclaim_lock_unlock(&t->lock);
    OC_KG_TRY(queue_misses(t, &t->next, sp, i, g, err));
    t->next.crc_checked = 1;
    t->pf_ids = sp->ids + sp->iter_off[i];
    t->pf_n = sp->iter_off[i + 1] - sp->iter_off[i];
    t->pf_plan = sp;
    t->pf_batch = i;
    t->pf_before = oc_io_batch_stats(t->io)->read_bytes;
    int rc = worker_start(&t->reader, err);
    if (rc)
        t->pf_batch = KG_NONE;
    return rc;
}

/*
 * Pins the slots of batch i's hits (t->cur) until batch_done; a hit whose
 * slot went meanwhile (given back) is read now. Unless a slot went since the
 * cache last held all the plan says, the hits must be exactly the cached
 * slices.
 */
static int pin_hits(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    const uint64_t *ids = t->p->ids + t->p->iter_off[i];
    uint64_t n = t->p->iter_off[i + 1] - t->p->iter_off[i], first = t->cur.n_miss, k = first;
    OC_KG_TRY(oc_grow(&t->pinned, &t->cap_pinned, t->n_pinned + n, 4, 256, "kg slice cache", err));
    oc_reclaim_lock_read(&t->lock);
    int exact = !t->inexact;
    uint32_t wrong = KG_NONE;
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)ids[p];
        if (t->cur.pos[p] != KG_NONE) {
            if (exact && cached(t, id))
                wrong = id;
        } else if (cached(t, id)) {
            pin(t, t->slice_slot[id]);
        } else {
            t->cur.pos[p] = (uint32_t)k++;
            if (exact)
                wrong = id;
        }
    }
    oc_reclaim_lock_unlock(&t->lock);
    if (wrong != KG_NONE)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "kg slice cache: batch %u's prefetch mispredicted slice %u", i, wrong);
    if (k == first)
        return OC_OK;
    OC_KG_TRY(reads_reserve(t, &t->cur, k, first, err));
    for (uint64_t p = 0; p < n; p++)
        if (t->cur.pos[p] != KG_NONE && t->cur.pos[p] >= first)
            OC_KG_TRY(queue_read(t, (uint32_t)ids[p],
                                 t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes, err));
    OC_KG_TRY(run_reads(t, err));
    for (uint64_t p = 0; p < n; p++) /* (the others were checked as the reader read them) */
        if (t->cur.pos[p] != KG_NONE && t->cur.pos[p] >= first && t->cur.crc_checked)
            OC_KG_TRY(kg_slice_record_crc(&t->store, (uint32_t)ids[p],
                                          t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes,
                                          err));
    t->cur.n_miss = k;
    return OC_OK;
}

/* Batch i's misses into t->cur: the prefetch's, or read now; its hits pinned. */
static int load_misses(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    if (t->pf_batch != i || t->pf_plan != t->p) {
        OC_KG_TRY(prefetch_drop(t, err));
        OC_KG_TRY(queue_misses(t, &t->cur, t->p, i, next_mark(t), err));
        t->cur.crc_checked = 0;
        OC_KG_TRY(run_reads(t, err));
    } else {
        t->pf_batch = KG_NONE;
        OC_KG_TRY(prefetch_wait(t, err));
        struct slice_reads r = t->cur;
        t->cur = t->next;
        t->next = r;
    }
    return pin_hits(t, i, err);
}

/* Whether kg_tiger_free asked the stages to stop (their pipeline cancelled). */
static int quitting(struct kg_tiger *t)
{
    return t->pipe && oc_pipeline_cancelled(t->pipe);
}

/* Copies a superbatch's heads into j. */
static int job_set(struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n,
                   struct oc_err *err)
{
    if (n + 1 > j->cap_boff) {
        OC_KG_TRY(grow(&j->boff, n + 1, 8, "kg superbatch", err));
        j->cap_boff = n + 1;
    }
    if (boff[n] > j->cap_heads) {
        OC_KG_TRY(grow(&j->heads, boff[n], 4, "kg superbatch", err));
        j->cap_heads = boff[n];
    }
    j->n_batches = n;
    memcpy(j->boff, boff, (size_t)(n + 1) * 8);
    memcpy(j->heads, heads, (size_t)boff[n] * 4);
    return OC_OK;
}

/* Whether j holds these heads. */
static int job_is(const struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n)
{
    return j->n_batches == n && memcmp(j->boff, boff, (size_t)(n + 1) * 8) == 0 &&
           memcmp(j->heads, heads, (size_t)boff[n] * 4) == 0;
}

/* The Belady planner's plan, copied into p (its arrays last only until its next plan). */
static int plan_copy(struct sb_plan *p, const struct oc_plan_belady_plan *bp, struct oc_err *err)
{
    if (bp->n_warm > p->cap_warm) {
        OC_KG_TRY(grow(&p->warm_id, bp->n_warm, 8, "kg superbatch", err));
        OC_KG_TRY(grow(&p->warm_slot, bp->n_warm, 4, "kg superbatch", err));
        p->cap_warm = bp->n_warm;
    }
    if (bp->n_chg > p->cap_chg) {
        OC_KG_TRY(grow(&p->chg_pos, bp->n_chg, 4, "kg superbatch", err));
        OC_KG_TRY(grow(&p->chg_slot, bp->n_chg, 4, "kg superbatch", err));
        p->cap_chg = bp->n_chg;
    }
    OC_KG_TRY(grow(&p->chg_off, p->n_batches + 1, 8, "kg superbatch", err));
    p->n_warm = bp->n_warm;
    memcpy(p->chg_off, bp->chg_off, (size_t)(p->n_batches + 1) * 8);
    if (bp->n_warm) { /* (none: the arrays may be NULL) */
        memcpy(p->warm_id, bp->warm_id, (size_t)bp->n_warm * 8);
        memcpy(p->warm_slot, bp->warm_slot, (size_t)bp->n_warm * 4);
    }
    if (bp->n_chg) {
        memcpy(p->chg_pos, bp->chg_pos, (size_t)bp->n_chg * 4);
        memcpy(p->chg_slot, bp->chg_slot, (size_t)bp->n_chg * 4);
    }
    return OC_OK;
}

/*
 * Plans superbatch j into p: slices its heads that have none yet (epoch 0 of
 * a run without a reusable store; the records are written, their places
 * pending), lists each batch's distinct slices and runs the Belady planner.
 * Runs on the planner thread, or on the training thread while it is idle.
 */
static int plan_superbatch(struct kg_tiger *t, const struct sb_job *j, struct sb_plan *p,
                           struct oc_err *err)
{
    double t0 = oc_now_s();
    p->n_batches = j->n_batches;
    if (!t->store.loaded) {
        for (uint64_t i = 0; i < j->boff[j->n_batches]; i++) {
            if (quitting(t))
                return OC_ERR(err, OC_ERR_CANCELLED, "kg slicer: closed");
            OC_KG_TRY(kg_slicer_slice(&t->slicer, j->heads[i], &t->store, err));
        }
        kg_slicer_trim(&t->slicer); /* its scratch held a whole query's facts */
    }
    p->n_slices = t->store.loaded ? t->store.n_slices : t->slicer.n_slices;
    if (p->n_slices + 1 > t->cap_trace) {
        OC_KG_TRY(grow(&t->trace_mark, p->n_slices + 1, 4, "kg superbatch", err));
        memset(t->trace_mark + t->cap_trace, 0, (size_t)(p->n_slices + 1 - t->cap_trace) * 4);
        t->cap_trace = p->n_slices + 1;
    }
    double t1 = oc_now_s();
    p->slicing_s = t1 - t0;
    /* the trace: each batch's distinct slices */
    uint64_t n_ids = 0;
    if (j->n_batches + 1 > p->cap_iters) {
        OC_KG_TRY(grow(&p->iter_off, j->n_batches + 1, 8, "kg superbatch", err));
        p->cap_iters = j->n_batches + 1;
    }
    p->iter_off[0] = 0;
    for (uint32_t b = 0; b < j->n_batches; b++) {
        uint32_t g = next_gen(&t->trace_gen, t->trace_mark, t->cap_trace, NULL, 0);
        for (uint64_t i = j->boff[b]; i < j->boff[b + 1]; i++) {
            const uint32_t *ids;
            uint32_t k;
            kg_slice_store_slices_of(&t->store, &t->slicer, j->heads[i], &ids, &k);
            OC_KG_TRY(oc_grow(&p->ids, &p->cap_ids, n_ids + k, 8, 4096, "kg superbatch", err));
            for (uint32_t x = 0; x < k; x++)
                if (t->trace_mark[ids[x]] != g) {
                    t->trace_mark[ids[x]] = g;
                    p->ids[n_ids++] = ids[x];
                }
        }
        p->iter_off[b + 1] = n_ids;
    }
    struct oc_plan_belady_plan bp;
    OC_KG_TRY(oc_plan_belady_plan(t->belady, p->ids, p->iter_off, j->n_batches, &bp, err));
    OC_KG_TRY(plan_copy(p, &bp, err));
    p->plan_s = oc_now_s() - t1;
    return OC_OK;
}

/* The planner's job: t->job into the superbatch not training. */
static int plan_ahead(struct kg_tiger *t, struct oc_err *err)
{
    return plan_superbatch(t, &t->job, t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0], err);
}

/* Waits until the planner is idle; the error of the plan it ran, if any (that plan dropped). */
static int planner_wait(struct kg_tiger *t, struct oc_err *err)
{
    int rc = worker_wait(&t->planner, err);
    if (rc)
        t->job_valid = 0;
    return rc;
}

/* Starts planning superbatch (heads, boff, n) on the planner thread. */
static int planner_start(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff,
                         uint32_t n, struct oc_err *err)
{
    OC_KG_TRY(job_set(&t->job, heads, boff, n, err));
    OC_KG_TRY(worker_start(&t->planner, err));
    t->job_valid = 1;
    return OC_OK;
}

/*
 * Reads slices ids[k] into slots slots[k] (k < n), which the plan says hold
 * them from now on (plan_slice); a gone slot's read is skipped, the others
 * are pinned while they are read. Their records are checked here: a cached
 * record is not checked again when a batch uses it.
 */
static int fill_slots(struct kg_tiger *t, const uint32_t *slots, const uint64_t *ids, uint64_t n,
                      struct oc_err *err)
{
    if (!n)
        return OC_OK;
    OC_KG_TRY(oc_grow(&t->pinned, &t->cap_pinned, t->n_pinned + n, 4, 256, "kg slice cache", err));
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t k = 0; k < n; k++) {
        t->plan_slice[slots[k]] = (uint32_t)ids[k];
        if (!(t->slot_state[slots[k]] & SLOT_GONE))
            pin(t, slots[k]);
    }
    oc_reclaim_lock_unlock(&t->lock);
    /* (a pinned or gone slot's state is written by this thread only) */
    int rc = OC_OK;
    for (uint64_t k = 0; !rc && k < n; k++)
        if (t->slot_state[slots[k]] & SLOT_PIN)
            rc = queue_read(t, (uint32_t)ids[k], t->cache + slots[k] * t->slot_bytes, err);
    if (!rc)
        rc = run_reads(t, err);
    for (uint64_t k = 0; !rc && k < n; k++)
        if (t->slot_state[slots[k]] & SLOT_PIN)
            rc = kg_slice_record_crc(&t->store, (uint32_t)ids[k],
                                     t->cache + slots[k] * t->slot_bytes, err);
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t k = 0; !rc && k < n; k++) {
        uint32_t id = (uint32_t)ids[k], s = slots[k];
        if (!(t->slot_state[s] & SLOT_PIN))
            continue;
        if (t->slot_slice[s] != KG_NONE)
            t->slice_slot[t->slot_slice[s]] = KG_NONE;
        t->slot_slice[s] = id;
        t->slice_slot[id] = s;
        t->st.warm_reads++;
    }
    unpin_all(t);
    oc_reclaim_lock_unlock(&t->lock);
    return rc;
}

/*
 * At a superbatch's start (training thread, the planner idle): gone slots
 * come back, lowest first, as far as the budget has room (oc_reclaim_room),
 * each with the slice the plan keeps there read into it, so that the cache
 * holds again what the plan says it holds.
 */
static int take_back(struct kg_tiger *t, struct oc_err *err)
{
    if (!t->gb.registered)
        return OC_OK;
    oc_reclaim_lock_read(&t->lock);
    uint64_t gone = t->n_slots - t->n_live;
    oc_reclaim_lock_unlock(&t->lock);
    uint64_t sb = t->slot_bytes, k = oc_giveback_take_rows(&t->gb, gone, 0, sb);
    if (k == 0)
        return OC_OK; /* nothing, or too little to be worth it */
    /* a read-ahead batch 0 shares the io batch and was predicted on the slots as they were */
    OC_KG_TRY(prefetch_drop(t, err));
    void *const back[] = {&t->back_slot, &t->back_id};
    const size_t back_sz[] = {4, 8};
    OC_KG_TRY(oc_grow_all(back, back_sz, 2, &t->cap_back, k, 256, "kg slice cache", err));
    struct oc_err e;
    if (oc_mem_reserve(k * sb, "kg slice cache", &e))
        return OC_OK; /* taken meanwhile: it stays as it is */
    oc_reclaim_lock_read(&t->lock);
    uint64_t got = 0, n = 0;
    for (uint64_t s = 0; s < t->n_slots && got < k; s++) {
        if (!(t->slot_state[s] & SLOT_GONE))
            continue;
        if (t->slot_slice[s] != KG_NONE && t->slice_slot[t->slot_slice[s]] == s)
            t->slice_slot[t->slot_slice[s]] = KG_NONE;
        t->slot_slice[s] = KG_NONE;
        t->slot_state[s] = 0;
        got++;
        if (t->plan_slice[s] != KG_NONE) {
            t->back_slot[n] = (uint32_t)s;
            t->back_id[n++] = t->plan_slice[s];
        }
    }
    t->n_live += got;
    t->inexact = t->n_live < t->n_slots; /* all back: fill_slots reads what the plan says */
    t->n_takes += got > 0;
    t->taken_bytes += got * sb;
    oc_reclaim_lock_unlock(&t->lock);
    if (got < k) /* (not expected: only this thread makes gone slots live) */
        oc_mem_release((k - got) * sb);
    return fill_slots(t, t->back_slot, t->back_id, n, err);
}

int kg_tiger_superbatch(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff,
                        uint32_t n_batches, const uint32_t *next_heads, const uint64_t *next_boff,
                        uint32_t next_n, struct oc_err *err)
{
    struct sb_plan *next = t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0];
    if (t->pf_plan != next || t->pf_batch != 0) /* batch 0 of this one may be read already */
        OC_KG_TRY(prefetch_drop(t, err));       /* else: a batch left untrained */
    double t0 = oc_now_s();
    OC_KG_TRY(planner_wait(t, err));
    t->st.superbatches++;
    if (!t->job_valid) { /* not planned ahead (an epoch's first): planned here */
        OC_KG_TRY(job_set(&t->job, heads, boff, n_batches, err));
        OC_KG_TRY(plan_superbatch(t, &t->job, next, err));
    } else if (!job_is(&t->job, heads, boff, n_batches)) {
        /* the Belady planner's cache has moved on to the superbatch planned */
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "kg slice cache: the superbatch started is not the one planned ahead");
    } else {
        t->st.superbatches_ahead++;
    }
    t->job_valid = 0;
    t->p = next;
    t->st.wait_s += oc_now_s() - t0;
    t->st.slicing_s += next->slicing_s;
    t->st.plan_s += next->plan_s;
    if (t->pf_batch != KG_NONE && (t->store.n_pend || t->p->n_warm))
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "kg slice cache: batch 0 read ahead of a superbatch with new slices or "
                      "warm-up reads");
    /* no slice moves under a read ahead in flight: it was started only with none pending */
    OC_KG_TRY(kg_slice_store_publish(&t->store, err));
    OC_KG_TRY(slices_reserve(t, next->n_slices + 1, err));
    OC_KG_TRY(take_back(t, err));
    /* warm-up: empty slots take the slices used soonest */
    OC_KG_TRY(fill_slots(t, t->p->warm_slot, t->p->warm_id, t->p->n_warm, err));
    oc_log(OC_LOG_DEBUG,
           "kg tiger: superbatch of %u batches, %" PRIu64 " slice accesses; %" PRIu64
           " bytes held (slice cache %" PRIu64 ", planner %" PRIu64 ", read buffers %" PRIu64
           ", slices %" PRIu64 ")",
           n_batches, t->p->iter_off[n_batches], oc_mem_used(), t->n_slots * t->slot_bytes,
           oc_plan_belady_held_bytes(t->belady), (t->cur.cap + t->next.cap) * t->slot_bytes,
           t->store.n_slices);
    /* the next superbatch is sliced and planned while this one trains */
    return next_n ? planner_start(t, next_heads, next_boff, next_n, err) : OC_OK;
}

/*
 * The last batch b of this superbatch loads: if the next superbatch's plan is
 * ready (the planner done, without error) and starts with no warm-up reads
 * and no new slices (later epochs), its batch 0 is read while b trains.
 */
static int prefetch_next(struct kg_tiger *t, uint32_t b, struct oc_err *err)
{
    pthread_mutex_lock(&t->mu);
    int ready = t->job_valid && t->planner.state == W_DONE && t->planner.rc == OC_OK;
    pthread_mutex_unlock(&t->mu);
    const struct sb_plan *np = t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0];
    if (!ready || np->n_warm || t->store.n_pend || np->n_batches == 0)
        return OC_OK;
    t->st.first_batches_ahead++;
    return prefetch(t, b, np, 0, err);
}

int kg_tiger_batch_load(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    uint64_t p0 = t->p->iter_off[i], n = t->p->iter_off[i + 1] - p0;
    OC_KG_TRY(load_misses(t, i, err));
    t->st.slices_accessed += n;
    t->st.slices_read += t->cur.n_miss;
    t->st.slices_hit += n - t->cur.n_miss;
    if (i + 1 < t->p->n_batches)
        OC_KG_TRY(prefetch(t, i, t->p, i + 1, err)); /* read while this batch trains */
    else
        OC_KG_TRY(prefetch_next(t, i, err));
    kg_atoms_clear(&t->batch);
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)t->p->ids[p0 + p];
        int hit = t->cur.pos[p] == KG_NONE;
        const uint8_t *rec = hit ? t->cache + (uint64_t)t->slice_slot[id] * t->slot_bytes
                                 : t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes;
        /* records from disk are checked against their CRC (by the reader when prefetched);
           cached ones were when read */
        OC_KG_TRY(kg_slice_record_map(&t->store, id, rec, !hit && !t->cur.crc_checked, &t->batch,
                                      t->c.facts, err));
    }
    kg_facts_set_atoms(t->c.facts, &t->batch, t->c.atom_cache, t->c.slice.h);
    return OC_OK;
}

int kg_tiger_batch_done(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    kg_facts_set_atoms(t->c.facts, NULL, t->c.atom_cache, 0);
    uint64_t p0 = t->p->iter_off[i];
    uint32_t bad = KG_NONE;
    oc_reclaim_lock_read(&t->lock);
    unpin_all(t); /* the batch is done with its slots */
    for (uint64_t c = t->p->chg_off[i]; c < t->p->chg_off[i + 1] && bad == KG_NONE; c++) {
        uint32_t pos = t->p->chg_pos[c], s = t->p->chg_slot[c];
        uint32_t id = (uint32_t)t->p->ids[p0 + pos], b = t->cur.pos[pos];
        if (b == KG_NONE)
            bad = id;
        else
            t->plan_slice[s] = id;
        if (b != KG_NONE && !(t->slot_state[s] & SLOT_GONE)) {
            if (t->slot_slice[s] != KG_NONE)
                t->slice_slot[t->slot_slice[s]] = KG_NONE;
            memcpy(t->cache + (uint64_t)s * t->slot_bytes, t->cur.buf + (uint64_t)b * t->slot_bytes,
                   (size_t)t->slot_bytes);
            t->slot_slice[s] = id;
            t->slice_slot[id] = s;
        }
    }
    oc_reclaim_lock_unlock(&t->lock);
    kg_atoms_clear(&t->batch);
    if (bad != KG_NONE)
        return OC_ERR(err, OC_ERR_INTERNAL, "kg slice cache: changeset takes slice %u, a hit", bad);
    return OC_OK;
}

int kg_tiger_epoch_end(struct kg_tiger *t, struct oc_err *err)
{
    OC_KG_TRY(prefetch_drop(t, err));
    OC_KG_TRY(planner_wait(t, err)); /* a superbatch planned for a shorter epoch: */
    t->job_valid = 0;                /* its slices are kept, its plan is not */
    OC_KG_TRY(kg_slice_store_publish(&t->store, err));
    if (t->store.loaded || t->store.committed)
        return OC_OK;
    for (uint64_t i = 0; i < t->n_heads; i++)
        if (!kg_slicer_has(&t->slicer, t->heads[i]))
            return OC_OK; /* a shorter epoch (tests) left heads unsliced: nothing to commit */
    double t0 = oc_now_s();
    int rc = kg_slice_store_commit(&t->store, &t->slicer, err);
    t->st.slicing_s += oc_now_s() - t0;
    return rc;
}

void kg_tiger_stats(const struct kg_tiger *t, struct kg_tiger_stats *s)
{
    *s = t->st;
    if (!t->gb.registered)
        return;
    oc_reclaim_lock_read((struct oc_reclaim_lock *)&t->lock);
    s->cache_bytes = t->n_live * t->slot_bytes;
    oc_reclaim_lock_unlock((struct oc_reclaim_lock *)&t->lock);
}

void kg_tiger_note(struct kg_tiger *t)
{
    if (!t->gb.registered)
        return;
    oc_reclaim_lock_read(&t->lock);
    uint64_t gives = oc_giveback_gives(&t->gb), given = oc_giveback_given_bytes(&t->gb);
    uint64_t takes = t->n_takes;
    uint64_t taken = t->taken_bytes, live = t->n_live * t->slot_bytes;
    oc_reclaim_lock_unlock(&t->lock);
    if (gives == t->gives_logged && takes == t->takes_logged)
        return;
    t->gives_logged = gives;
    t->takes_logged = takes;
    char a[32], b[32], c[32];
    oc_log(OC_LOG_INFO,
           "kg slice cache: gave %s back to requests past --mem-budget and took %s back since "
           "the start (%s held); the slices of slots given back are read from the slice store",
           oc_format_size(given, a, sizeof(a)), oc_format_size(taken, b, sizeof(b)),
           oc_format_size(live, c, sizeof(c)));
}

int kg_tiger_metrics(struct kg_tiger *t, struct kg_slice_metrics *m, struct oc_err *err)
{
    uint32_t *qs = oc_alloc((size_t)t->n_heads * 4 + 4, "kg slice metrics", err);
    if (!qs)
        return err->status;
    uint64_t n = 0; /* the heads sliced so far (all, after epoch 0) */
    for (uint64_t i = 0; i < t->n_heads; i++)
        if (t->store.loaded || kg_slicer_has(&t->slicer, t->heads[i]))
            qs[n++] = t->heads[i];
    int rc = kg_slice_metrics(&t->store, &t->slicer, qs, n, m, err);
    oc_free(qs);
    return rc;
}

int kg_tiger_reused(const struct kg_tiger *t)
{
    return t->store.loaded;
}

const struct kg_slicer *kg_tiger_slicer(const struct kg_tiger *t)
{
    return &t->slicer;
}

const struct kg_slice_store *kg_tiger_store(const struct kg_tiger *t)
{
    return &t->store;
}
