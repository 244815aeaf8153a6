/*
 * kg_tiger_reads.c — a batch's slices that miss the Slice Cache: read O_DIRECT
 * from slices.bin (one read each), ahead on the reader stage or at once.
 *
 *   batch i loads: its misses ◄── the prefetch's (read while batch i - 1
 *                  trained), or queued and read now; its hits pinned (a hit
 *                  whose slot went meanwhile is read now)
 *   batch i trains: batch i + 1's misses, known exactly from the plan (the
 *                  slots as batch i's changeset leaves them), read on the
 *                  reader stage; after the last batch, the next superbatch's
 *                  batch 0 if its plan is ready and brings no new slices or
 *                  warm-ups
 *
 * Place in the data flow: kg (kg_tiger.c ──► here ──► kg_slice_store.c; the
 * reader stage of kg_tiger_stage.c runs tiger_read_ahead).
 * Thread-safety: the reader stage runs the io batch, and checks the records'
 * CRCs, between tiger_prefetch and its wait, when the training thread leaves
 * the io batch and t->next alone; everything else runs on the training thread,
 * deciding hits under the read side of the Slice Cache's lock.
 * Ownership: the read buffers are the executor's.
 */
#include <string.h>

#include "kg/kg_tiger_exec_int.h"

/* Reads slice id into dst (slot_bytes, aligned) through the io batch (queued only). */
int tiger_queue_read(struct kg_tiger *t, uint32_t id, uint8_t *dst, struct oc_err *err)
{
    uint64_t nb = (t->store.bytes[id] + OC_IO_ALIGN - 1) / OC_IO_ALIGN * OC_IO_ALIGN;
    return oc_io_batch_add(t->io, t->store.rd, t->store.off[id], (size_t)nb, dst, err);
}

int tiger_run_reads(struct kg_tiger *t, struct oc_err *err)
{
    uint64_t before = oc_io_batch_stats(t->io)->read_bytes;
    int rc = oc_io_batch_run(t->io, err);
    t->st.bytes_read += oc_io_batch_stats(t->io)->read_bytes - before;
    return rc;
}

/* A mark generation no slice or slot carries yet (the prefetches' marks). */
static uint32_t next_mark(struct kg_tiger *t)
{
    return tiger_next_gen(&t->mark_gen, t->mark, t->cap_slice, t->slot_mark, t->n_slots);
}

/* The reader's job: the queued reads of the next batch, and their records' CRCs. */
int tiger_read_ahead(struct kg_tiger *t, struct oc_err *err)
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
    int rc = tiger_job_wait(&t->reader, err);
    t->st.bytes_read += oc_io_batch_stats(t->io)->read_bytes - t->pf_before;
    return rc;
}

/* Waits for a prefetch nobody will use and forgets it. */
int tiger_prefetch_drop(struct kg_tiger *t, struct oc_err *err)
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
    OC_KG_TRY(oc_grow_by(&r->pos, &r->cap_pos, n, 4, OC_GROW_EXACT, "kg slice reads", err));
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t p = 0; p < n; p++) {
        uint32_t id = (uint32_t)sp->ids[p0 + p], s = t->slice_slot[id];
        int hit = t->mark[id] == g || (tiger_cached(t, id) && t->slot_mark[s] != g);
        r->pos[p] = hit ? KG_NONE : (uint32_t)k++;
    }
    oc_reclaim_lock_unlock(&t->lock);
    OC_KG_TRY(reads_reserve(t, r, k, 0, err));
    for (uint64_t p = 0; p < n; p++)
        if (r->pos[p] != KG_NONE)
            OC_KG_TRY(tiger_queue_read(t, (uint32_t)sp->ids[p0 + p],
                                       r->buf + (uint64_t)r->pos[p] * t->slot_bytes, err));
    r->n_miss = k;
    return OC_OK;
}

/*
 * Starts reading batch i of plan sp on the reader stage while batch b of
 * this superbatch (loaded) trains; sp is this superbatch's plan (i = b + 1)
 * or the next one's (i = 0, b the last). Its misses are those once batch b's
 * changeset is applied, which is what they are when batch i loads (nothing
 * else comes between: a next superbatch's plan is used only with no warm-up
 * reads and no new slices). The training thread does not touch t->io until
 * prefetch_wait.
 */
int tiger_prefetch(struct kg_tiger *t, uint32_t b, const struct sb_plan *sp, uint32_t i,
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
    int rc = tiger_job_start(&t->reader, err);
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
            if (exact && tiger_cached(t, id))
                wrong = id;
        } else if (tiger_cached(t, id)) {
            tiger_pin(t, t->slice_slot[id]);
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
            OC_KG_TRY(tiger_queue_read(t, (uint32_t)ids[p],
                                       t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes, err));
    OC_KG_TRY(tiger_run_reads(t, err));
    for (uint64_t p = 0; p < n; p++) /* (the others were checked as the reader read them) */
        if (t->cur.pos[p] != KG_NONE && t->cur.pos[p] >= first && t->cur.crc_checked)
            OC_KG_TRY(kg_slice_record_crc(&t->store, (uint32_t)ids[p],
                                          t->cur.buf + (uint64_t)t->cur.pos[p] * t->slot_bytes,
                                          err));
    t->cur.n_miss = k;
    return OC_OK;
}

/* Batch i's misses into t->cur: the prefetch's, or read now; its hits pinned. */
int tiger_load_misses(struct kg_tiger *t, uint32_t i, struct oc_err *err)
{
    if (t->pf_batch != i || t->pf_plan != t->p) {
        OC_KG_TRY(tiger_prefetch_drop(t, err));
        OC_KG_TRY(queue_misses(t, &t->cur, t->p, i, next_mark(t), err));
        t->cur.crc_checked = 0;
        OC_KG_TRY(tiger_run_reads(t, err));
    } else {
        t->pf_batch = KG_NONE;
        OC_KG_TRY(prefetch_wait(t, err));
        struct slice_reads r = t->cur;
        t->cur = t->next;
        t->next = r;
    }
    return pin_hits(t, i, err);
}

/*
 * The last batch b of this superbatch loads: if the next superbatch's plan is
 * ready (the planner done, without error) and starts with no warm-up reads
 * and no new slices (later epochs), its batch 0 is read while b trains.
 */
int tiger_prefetch_next(struct kg_tiger *t, uint32_t b, struct oc_err *err)
{
    int ready = t->job_valid && tiger_job_poll(&t->planner) && t->planner.rc == OC_OK;
    const struct sb_plan *np = t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0];
    if (!ready || np->n_warm || t->store.n_pend || np->n_batches == 0)
        return OC_OK;
    t->st.first_batches_ahead++;
    return tiger_prefetch(t, b, np, 0, err);
}
