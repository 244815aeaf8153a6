/*
 * kg_tiger.c — the executor of TIGER's super-batch loop (thesis section
 * V-A) for kg-train's ginex-slices and tiger modes:
 *
 *   superbatch k + 1 (S batches' heads, training order), on the planner
 *   stage while superbatch k trains (an epoch's first: on the training
 *   thread before it): sliced, traced and given its Belady changesets
 *   (kg_tiger_plan.c)
 *   superbatch start: the plan made ahead is taken (it must be this
 *     superbatch's), the pending slices published, gone slots taken back,
 *     warm-up reads into empty slots (kg_tiger_cache.c)
 *   batch i: slices from the Slice Cache (a C x slot-bytes array, slot by
 *     direct addressing) or read O_DIRECT from slices.bin, batch i + 1's
 *     misses read ahead on the reader stage while batch i trains
 *     (kg_tiger_reads.c)
 *     ──► batch atom map (entity ─► facts inside the records) ──► the fact
 *     graph serves extraction from it (strict: a light atom missing is an
 *     error), heavy atoms from the Atom Cache or disk
 *     ──► after the batch: its changeset copies read slices into their slots
 *
 * The other files: kg_tiger_exec_int.h (the executor's state),
 * kg_tiger_stage.c (the reader and planner as pipeline stages).
 *
 * Place in the data flow: kg (kg_train.c ──► here ──► kg_slice*.c, kg_facts.c).
 * Thread-safety: the training thread drives the executor; the extraction
 * workers read the batch map between batch_load and batch_done. The reader
 * and the planner are one-thread stages of the executor's own pipeline
 * (src/pipeline/stage.c), started on first use, each handed one job at a
 * time through its queues (kg_tiger_stage.c); a job's data is the stage's
 * between its start and its wait. The slots' states are under `lock`
 * (kg_tiger_cache.c).
 * Ownership: the executor owns the slicer, store, cache, buffers and its
 * pipeline; it borrows the fact graph, which it leaves with only the Atom
 * Cache in front.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

#include "kg/kg_tiger_exec_int.h"

/*
 * The next value of generation counter *gen, which no entry of the marks
 * a[0..na) and b[0..nb) carries yet (all cleared when the counter wraps).
 */
uint32_t tiger_next_gen(uint32_t *gen, uint32_t *a, uint64_t na, uint32_t *b, uint64_t nb)
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

int kg_tiger_new(const struct kg_tiger_config *c, struct kg_tiger **out, struct oc_err *err)
{
    *out = NULL;
    struct kg_tiger *t = oc_calloc(1, sizeof(*t), "kg tiger", err);
    if (!t)
        return err->status;
    t->c = *c;
    t->pf_batch = KG_NONE;
    t->p = &t->sb[0];
    t->reader = (struct tiger_job){.run = tiger_read_ahead, .t = t, .what = "kg slice reader"};
    t->planner = (struct tiger_job){.run = tiger_plan_ahead, .t = t, .what = "kg planner"};
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
        kg_facts_reader_own_atoms(t->slicer.reader, c->atom_cache); /* on the planner stage */
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
        rc = tiger_slices_reserve(t, t->store.n_slices + 1, err);
    if (!rc)
        rc = oc_io_batch_new(64, (size_t)256 << 10, &t->io, err);
    /* the slice tables grow after the cache was sized: it gives slots back */
    if (!rc && t->n_slots && oc_mem_budget())
        rc = tiger_cache_register(t, err);
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
       would slice (tiger_plan_superbatch sees the pipeline cancelled) */
    oc_pipeline_free(t->pipe);
    oc_giveback_unregister(&t->gb); /* waits for a give-back in progress */
    if (t->cache) {
        munmap(t->cache, t->cache_len);
        oc_mem_release(t->n_live * t->slot_bytes);
    }
    oc_reclaim_lock_destroy(&t->lock);
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

int kg_tiger_superbatch(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff,
                        uint32_t n_batches, const uint32_t *next_heads, const uint64_t *next_boff,
                        uint32_t next_n, struct oc_err *err)
{
    struct sb_plan *next = t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0];
    if (t->pf_plan != next || t->pf_batch != 0) /* batch 0 of this one may be read already */
        OC_KG_TRY(tiger_prefetch_drop(t, err)); /* else: a batch left untrained */
    double t0 = oc_now_s();
    OC_KG_TRY(tiger_planner_wait(t, err));
    t->st.superbatches++;
    if (!t->job_valid) { /* not planned ahead (an epoch's first): planned here */
        OC_KG_TRY(tiger_job_set(&t->job, heads, boff, n_batches, err));
        OC_KG_TRY(tiger_plan_superbatch(t, &t->job, next, err));
    } else if (!tiger_job_is(&t->job, heads, boff, n_batches)) {
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
    OC_KG_TRY(tiger_slices_reserve(t, next->n_slices + 1, err));
    OC_KG_TRY(tiger_take_back(t, err));
    /* warm-up: empty slots take the slices used soonest */
    OC_KG_TRY(tiger_fill_slots(t, t->p->warm_slot, t->p->warm_id, t->p->n_warm, err));
    oc_log(OC_LOG_DEBUG,
           "kg tiger: superbatch of %u batches, %" PRIu64 " slice accesses; %" PRIu64
           " bytes held (slice cache %" PRIu64 ", planner %" PRIu64 ", read buffers %" PRIu64
           ", slices %" PRIu64 ")",
           n_batches, t->p->iter_off[n_batches], oc_mem_used(), t->n_slots * t->slot_bytes,
           oc_plan_belady_held_bytes(t->belady), (t->cur.cap + t->next.cap) * t->slot_bytes,
           t->store.n_slices);
    /* the next superbatch is sliced and planned while this one trains */
    return next_n ? tiger_planner_start(t, next_heads, next_boff, next_n, err) : OC_OK;
}

int kg_tiger_batch_load(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    uint64_t p0 = t->p->iter_off[i], n = t->p->iter_off[i + 1] - p0;
    OC_KG_TRY(tiger_load_misses(t, i, err));
    t->st.slices_accessed += n;
    t->st.slices_read += t->cur.n_miss;
    t->st.slices_hit += n - t->cur.n_miss;
    if (i + 1 < t->p->n_batches)
        OC_KG_TRY(tiger_prefetch(t, i, t->p, i + 1, err)); /* read while this batch trains */
    else
        OC_KG_TRY(tiger_prefetch_next(t, i, err));
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
    tiger_unpin_all(t); /* the batch is done with its slots */
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
    OC_KG_TRY(tiger_prefetch_drop(t, err));
    OC_KG_TRY(tiger_planner_wait(t, err)); /* a superbatch planned for a shorter epoch: */
    t->job_valid = 0;                      /* its slices are kept, its plan is not */
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
