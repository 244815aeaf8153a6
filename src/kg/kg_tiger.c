/*
 * kg_tiger.c — the executor of TIGER's super-batch loop (thesis section
 * V-A) for kg-train's ginex-slices and tiger modes:
 *
 *   superbatch (S batches' heads, training order)
 *     ──► slicing: heads without slices ──► kg_slicer_slice ──► slice store
 *     ──► per batch the distinct slices of its heads (mapping) = the trace
 *     ──► Belady changesets for the Slice Cache (ginex's planner,
 *         oc_store_belady) ──► warm-up reads into empty slots
 *   batch i: slices from the Slice Cache (a C x slot-bytes array, slot by
 *     direct addressing) or read O_DIRECT from slices.bin (one read each;
 *     batch i + 1's misses are read on a reader thread while batch i trains,
 *     known exactly from the plan: the slots as batch i's changeset leaves
 *     them)
 *     ──► batch atom map (entity ─► facts inside the records) ──► the fact
 *     graph serves extraction from it (strict: a light atom missing is an
 *     error), heavy atoms from the Atom Cache or disk
 *     ──► after the batch: its changeset copies read slices into their slots
 *
 * Place in the data flow: kg (kg_train.c ──► here ──► kg_slice*.c, kg_facts.c).
 * Thread-safety: the training thread only; the batch map is read by the
 * extraction workers between batch_load and batch_done; the reader thread
 * runs the io batch between prefetch and prefetch_wait, when the training
 * thread leaves it alone (handed over under mu).
 * Ownership: the executor owns the slicer, store, cache and buffers; it
 * borrows the fact graph, which it leaves with only the Atom Cache in front.
 */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "kg/kg_tiger_int.h"
#include "offcore/io.h"
#include "offcore/store.h"

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
    const struct kg_atoms *atom_cache_map; /* the Atom Cache (may be NULL) */
    struct kg_slicer slicer;
    struct kg_slice_store store;
    struct oc_store_belady *belady;
    uint64_t n_slots, slot_bytes;
    uint8_t *cache;       /* n_slots x slot_bytes */
    uint32_t *slot_slice; /* n_slots: slice held, or KG_NONE */
    uint32_t *slice_slot; /* per slice: its slot, or KG_NONE */
    uint32_t *mark;       /* per slice: last batch that listed it */
    uint64_t cap_slice;
    uint32_t mark_gen;
    /* the superbatch */
    uint64_t *ids, *iter_off;
    uint64_t cap_ids, cap_iters;
    struct oc_store_belady_plan plan;
    /* the batch */
    struct slice_reads cur; /* the loaded batch's */
    struct kg_atoms batch;
    struct oc_io_batch *io; /* the training thread's, or the reader's while a prefetch runs */
    /* the next batch's misses, read while this batch trains (one reader thread) */
    pthread_t reader;
    int reader_started, quit;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pf_state; /* PF_IDLE, PF_RUNNING, PF_DONE (under mu) */
    int pf_rc;    /* the reader's result, its message in pf_err */
    struct oc_err pf_err;
    uint32_t pf_batch;       /* the batch prefetched, or KG_NONE */
    struct slice_reads next; /* its reads */
    uint64_t pf_before;      /* the io batch's bytes read before them */
    uint64_t pf_p0, pf_n;    /* its positions in ids */
    uint32_t *slot_mark; /* n_slots: the mark_gen of the last prefetch whose changeset hits it */
    uint32_t sb_n;       /* batches of the current superbatch */
    uint32_t *heads;     /* distinct training heads (metrics) */
    uint64_t n_heads;
    struct kg_tiger_stats st;
};

enum { PF_IDLE, PF_RUNNING, PF_DONE };

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
    if (n <= t->cap_slice)
        return OC_OK;
    uint64_t c = t->cap_slice ? 2 * t->cap_slice : 1024;
    while (c < n)
        c *= 2;
    OC_KG_TRY(grow(&t->slice_slot, c, 4, "kg slice cache", err));
    OC_KG_TRY(grow(&t->mark, c, 4, "kg slice cache", err));
    for (uint64_t i = t->cap_slice; i < c; i++) {
        t->slice_slot[i] = KG_NONE;
        t->mark[i] = 0;
    }
    t->cap_slice = c;
    return OC_OK;
}

int kg_tiger_new(const struct kg_tiger_config *c, struct kg_tiger **out, struct oc_err *err)
{
    *out = NULL;
    struct kg_tiger *t = oc_calloc(1, sizeof(*t), "kg tiger", err);
    if (!t)
        return err->status;
    t->c = *c;
    t->atom_cache_map = c->atom_cache;
    t->pf_batch = KG_NONE;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    uint64_t n_ent = oc_kg_facts_n_entities(c->facts);
    int rc = kg_slicer_init(&t->slicer, c->facts, &c->slice, err);
    if (!rc)
        rc = kg_atoms_init(&t->batch, n_ent, err);
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
    if (!rc) {
        t->slot_bytes = kg_slice_record_max(c->slice.h);
        t->n_slots = c->cache_bytes / t->slot_bytes;
        if (t->n_slots >= KG_NONE)
            t->n_slots = KG_NONE - 1;
        rc = oc_store_belady_new(t->n_slots, &t->belady, err);
    }
    if (!rc && t->n_slots &&
        (!(t->cache = oc_alloc_aligned((size_t)(t->n_slots * t->slot_bytes), OC_IO_ALIGN,
                                       "kg slice cache", err)) ||
         !(t->slot_slice = oc_alloc((size_t)t->n_slots * 4, "kg slice cache", err)) ||
         !(t->slot_mark = oc_calloc(t->n_slots, 4, "kg slice cache", err))))
        rc = err->status;
    for (uint64_t s = 0; !rc && s < t->n_slots; s++)
        t->slot_slice[s] = KG_NONE;
    if (!rc)
        rc = slices_reserve(t, t->store.n_slices + 1, err);
    if (!rc)
        rc = oc_io_batch_new(64, (size_t)256 << 10, &t->io, err);
    if (rc) {
        kg_tiger_free(t);
        return rc;
    }
    t->st.cache_bytes = t->n_slots * t->slot_bytes;
    *out = t;
    return OC_OK;
}

uint64_t kg_tiger_fixed_bytes(uint64_t n_entities, uint64_t n_queries, uint32_t h)
{
    /* slicer: first_pos, map_off, map_n, stamp, depth, local; batch map; distinct heads */
    return n_entities * (4 + 8 + 4 + 4 + 4 + 4 + sizeof(void *)) + n_queries * 4 +
           ((uint64_t)256 << 10) + kg_slice_record_max(h);
}

void kg_tiger_free(struct kg_tiger *t)
{
    if (!t)
        return;
    if (t->reader_started) {
        pthread_mutex_lock(&t->mu);
        t->quit = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->reader, NULL); /* it finishes a read it started first */
    }
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    kg_slice_store_close(&t->store);
    kg_slicer_deinit(&t->slicer);
    kg_atoms_deinit(&t->batch);
    oc_store_belady_free(t->belady);
    oc_io_batch_free(t->io);
    void *arr[] = {t->cache,   t->slot_slice, t->slice_slot, t->mark,     t->ids,   t->iter_off,
                   t->cur.buf, t->cur.pos,    t->next.buf,   t->next.pos, t->heads, t->slot_mark};
    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++)
        oc_free(arr[i]);
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

/* A mark generation no slice or slot carries yet (all cleared when the counter wraps). */
static uint32_t next_mark(struct kg_tiger *t)
{
    if (++t->mark_gen == 0) {
        memset(t->mark, 0, (size_t)t->cap_slice * 4);
        if (t->n_slots)
            memset(t->slot_mark, 0, (size_t)t->n_slots * 4);
        t->mark_gen = 1;
    }
    return t->mark_gen;
}

/* The reader thread: runs the io batch each time a prefetch is queued, until quit. */
static void *reader_main(void *arg)
{
    struct kg_tiger *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->pf_state != PF_RUNNING && !t->quit)
            pthread_cond_wait(&t->cv, &t->mu);
        if (t->pf_state != PF_RUNNING)
            break; /* quit, nothing queued */
        pthread_mutex_unlock(&t->mu);
        int rc = oc_io_batch_run(t->io, &t->pf_err);
        /* the records' CRCs here, off the training thread (the store is not growing) */
        for (uint64_t p = 0; !rc && p < t->pf_n; p++)
            if (t->next.pos[p] != KG_NONE)
                rc = kg_slice_record_crc(&t->store, (uint32_t)t->ids[t->pf_p0 + p],
                                         t->next.buf + (uint64_t)t->next.pos[p] * t->slot_bytes,
                                         &t->pf_err);
        pthread_mutex_lock(&t->mu);
        t->pf_rc = rc;
        t->pf_state = PF_DONE;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Waits for the prefetch in flight; its bytes are counted, its error returned. */
static int prefetch_wait(struct kg_tiger *t, struct oc_err *err)
{
    pthread_mutex_lock(&t->mu);
    while (t->pf_state == PF_RUNNING)
        pthread_cond_wait(&t->cv, &t->mu);
    t->pf_state = PF_IDLE;
    int rc = t->pf_rc;
    pthread_mutex_unlock(&t->mu);
    t->st.bytes_read += oc_io_batch_stats(t->io)->read_bytes - t->pf_before;
    if (rc)
        *err = t->pf_err;
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

/*
 * Queues into r the reads of batch i's slices that miss the Slice Cache once
 * the changeset marked with generation g is applied (g fresh: none pending):
 * a slice hits if it is the final occupant of a slot that changeset fills,
 * or sits in a slot it leaves alone.
 */
static int queue_misses(struct kg_tiger *t, struct slice_reads *r, uint32_t i, uint32_t g,
                        struct oc_err *err)
{
    uint64_t p0 = t->iter_off[i], n = t->iter_off[i + 1] - p0, k = 0;
    if (n > r->cap_pos) {
        OC_KG_TRY(grow(&r->pos, n, 4, "kg slice reads", err));
        r->cap_pos = n;
    }
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)t->ids[p0 + p], s = t->slice_slot[id];
        int hit = t->mark[id] == g || (s != KG_NONE && t->slot_mark[s] != g);
        r->pos[p] = hit ? KG_NONE : (uint32_t)k++;
    }
    if (k > r->cap) {
        oc_free(r->buf);
        r->buf = NULL;
        r->cap = 0;
        if (!(r->buf = oc_alloc_aligned((size_t)(k * t->slot_bytes), OC_IO_ALIGN, "kg slice reads",
                                        err)))
            return err->status;
        r->cap = k;
    }
    for (uint64_t p = 0; p < n; p++)
        if (r->pos[p] != KG_NONE)
            OC_KG_TRY(queue_read(t, (uint32_t)t->ids[p0 + p],
                                 r->buf + (uint64_t)r->pos[p] * t->slot_bytes, err));
    r->n_miss = k;
    return OC_OK;
}

/*
 * Starts reading batch i's misses on the reader thread, while batch i - 1
 * (loaded) trains: the misses once batch i - 1's changeset is applied, which
 * is what they are when batch i loads. The training thread does not touch
 * t->io until prefetch_wait.
 */
static int prefetch(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    uint64_t q0 = t->iter_off[i - 1], c0 = t->plan.chg_off[i - 1], c1 = t->plan.chg_off[i];
    uint32_t g = next_mark(t);
    for (uint64_t c = c1; c > c0; c--) { /* last entry first: each slot's final occupant */
        uint32_t s = t->plan.chg_slot[c - 1];
        if (t->slot_mark[s] == g)
            continue;
        t->slot_mark[s] = g;
        t->mark[t->ids[q0 + t->plan.chg_pos[c - 1]]] = g;
    }
    OC_KG_TRY(queue_misses(t, &t->next, i, g, err));
    t->next.crc_checked = 1;
    t->pf_p0 = t->iter_off[i];
    t->pf_n = t->iter_off[i + 1] - t->pf_p0;
    t->pf_batch = i;
    t->pf_before = oc_io_batch_stats(t->io)->read_bytes;
    if (!t->reader_started) {
        int e = pthread_create(&t->reader, NULL, reader_main, t);
        if (e) {
            t->pf_batch = KG_NONE;
            return OC_ERR_ERRNO(err, OC_ERR_IO, e,
                                "kg slice reads: cannot start the reader thread");
        }
        t->reader_started = 1;
    }
    pthread_mutex_lock(&t->mu);
    t->pf_state = PF_RUNNING;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return OC_OK;
}

/* Batch i's misses into t->cur: the prefetch's, or read now. */
static int load_misses(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    if (t->pf_batch != i) {
        OC_KG_TRY(queue_misses(t, &t->cur, i, next_mark(t), err));
        t->cur.crc_checked = 0;
        return run_reads(t, err);
    }
    t->pf_batch = KG_NONE;
    OC_KG_TRY(prefetch_wait(t, err));
    struct slice_reads r = t->cur;
    t->cur = t->next;
    t->next = r;
    uint64_t p0 = t->iter_off[i], n = t->iter_off[i + 1] - p0;
    for (uint64_t p = 0; p < n; p++)
        if ((t->cur.pos[p] == KG_NONE) != (t->slice_slot[t->ids[p0 + p]] != KG_NONE))
            return OC_ERR(err, OC_ERR_INTERNAL,
                          "kg slice cache: batch %u's prefetch mispredicted slice %u", i,
                          (uint32_t)t->ids[p0 + p]);
    return OC_OK;
}

int kg_tiger_superbatch(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff,
                        uint32_t n_batches, struct oc_err *err)
{
    OC_KG_TRY(prefetch_drop(t, err)); /* a batch left untrained (a shorter epoch) */
    t->sb_n = n_batches;
    /* slicing (only what has no slices yet: epoch 0 of a run without a reusable store) */
    double t0 = oc_now_s();
    if (!t->store.loaded) {
        for (uint64_t i = 0; i < boff[n_batches]; i++)
            OC_KG_TRY(kg_slicer_slice(&t->slicer, heads[i], &t->store, err));
        kg_slicer_trim(&t->slicer); /* its scratch held a whole query's facts */
    }
    OC_KG_TRY(
        slices_reserve(t, (t->store.loaded ? t->store.n_slices : t->slicer.n_slices) + 1, err));
    double t1 = oc_now_s();
    t->st.slicing_s += t1 - t0;
    /* the trace: each batch's distinct slices */
    uint64_t n_ids = 0;
    if (n_batches + 1 > t->cap_iters) {
        OC_KG_TRY(grow(&t->iter_off, n_batches + 1, 8, "kg superbatch", err));
        t->cap_iters = n_batches + 1;
    }
    t->iter_off[0] = 0;
    for (uint32_t b = 0; b < n_batches; b++) {
        uint32_t g = next_mark(t);
        for (uint64_t i = boff[b]; i < boff[b + 1]; i++) {
            const uint32_t *ids;
            uint32_t k;
            kg_slice_store_slices_of(&t->store, &t->slicer, heads[i], &ids, &k);
            if (n_ids + k > t->cap_ids) {
                uint64_t c = t->cap_ids ? 2 * t->cap_ids : 4096;
                while (c < n_ids + k)
                    c *= 2;
                OC_KG_TRY(grow(&t->ids, c, 8, "kg superbatch", err));
                t->cap_ids = c;
            }
            for (uint32_t j = 0; j < k; j++)
                if (t->mark[ids[j]] != g) {
                    t->mark[ids[j]] = g;
                    t->ids[n_ids++] = ids[j];
                }
        }
        t->iter_off[b + 1] = n_ids;
    }
    OC_KG_TRY(oc_store_belady_plan(t->belady, t->ids, t->iter_off, n_batches, &t->plan, err));
    /* warm-up: empty slots take the slices used soonest */
    for (uint64_t w = 0; w < t->plan.n_warm; w++)
        OC_KG_TRY(queue_read(t, (uint32_t)t->plan.warm_id[w],
                             t->cache + t->plan.warm_slot[w] * t->slot_bytes, err));
    OC_KG_TRY(run_reads(t, err));
    for (uint64_t w = 0; w < t->plan.n_warm; w++) {
        uint32_t id = (uint32_t)t->plan.warm_id[w], s = t->plan.warm_slot[w];
        /* checked here: a cached record is not checked again when a batch uses it */
        OC_KG_TRY(kg_slice_record_crc(&t->store, id, t->cache + s * t->slot_bytes, err));
        t->slot_slice[s] = id;
        t->slice_slot[id] = s;
    }
    t->st.warm_reads += t->plan.n_warm;
    oc_log(OC_LOG_DEBUG,
           "kg tiger: superbatch of %u batches, %" PRIu64 " slice accesses; %" PRIu64
           " bytes held (slice cache %" PRIu64 ", planner %" PRIu64 ", read buffers %" PRIu64
           ", slices %" PRIu64 ")",
           n_batches, n_ids, oc_mem_used(), t->n_slots * t->slot_bytes,
           oc_store_belady_held_bytes(t->belady), (t->cur.cap + t->next.cap) * t->slot_bytes,
           t->store.n_slices);
    t->st.plan_s += oc_now_s() - t1;
    return OC_OK;
}

int kg_tiger_batch_load(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    uint64_t p0 = t->iter_off[i], n = t->iter_off[i + 1] - p0;
    OC_KG_TRY(load_misses(t, i, err));
    t->st.slices_accessed += n;
    t->st.slices_read += t->cur.n_miss;
    t->st.slices_hit += n - t->cur.n_miss;
    if (i + 1 < t->sb_n)
        OC_KG_TRY(prefetch(t, i + 1, err)); /* read while this batch trains */
    kg_atoms_clear(&t->batch);
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)t->ids[p0 + p];
        int hit = t->cur.pos[p] == KG_NONE;
        const uint8_t *rec = hit ? t->cache + (uint64_t)t->slice_slot[id] * t->slot_bytes
                                 : t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes;
        /* records from disk are checked against their CRC (by the reader when prefetched);
           cached ones were when read */
        OC_KG_TRY(kg_slice_record_map(&t->store, id, rec, !hit && !t->cur.crc_checked, &t->batch,
                                      t->c.facts, err));
    }
    kg_facts_set_atoms(t->c.facts, &t->batch, t->atom_cache_map, t->c.slice.h);
    return OC_OK;
}

int kg_tiger_batch_done(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    kg_facts_set_atoms(t->c.facts, NULL, t->atom_cache_map, 0);
    uint64_t p0 = t->iter_off[i];
    for (uint64_t c = t->plan.chg_off[i]; c < t->plan.chg_off[i + 1]; c++) {
        uint32_t pos = t->plan.chg_pos[c], s = t->plan.chg_slot[c];
        uint32_t id = (uint32_t)t->ids[p0 + pos], b = t->cur.pos[pos];
        if (b == KG_NONE)
            return OC_ERR(err, OC_ERR_INTERNAL, "kg slice cache: changeset takes slice %u, a hit",
                          id);
        if (t->slot_slice[s] != KG_NONE)
            t->slice_slot[t->slot_slice[s]] = KG_NONE;
        memcpy(t->cache + (uint64_t)s * t->slot_bytes, t->cur.buf + (uint64_t)b * t->slot_bytes,
               (size_t)t->slot_bytes);
        t->slot_slice[s] = id;
        t->slice_slot[id] = s;
    }
    kg_atoms_clear(&t->batch);
    return OC_OK;
}

int kg_tiger_epoch_end(struct kg_tiger *t, struct oc_err *err)
{
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
