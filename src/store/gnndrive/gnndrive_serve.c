/*
 * gnndrive_serve.c — the trainer's side of the `gnndrive` strategy
 * (gnndrive.c: sizing, open, stats): gather_batch, next_batch and
 * evaluation gathers.
 *
 * Plan order and reordering. By default oc_store_gather_batch(epoch, b)
 * waits until batch b is extracted and serves batches in the plan's order,
 * so training is bit-identical to `memory`. With --reorder,
 * oc_store_next_batch returns the batches of an epoch in the order their
 * extraction completes (GNNDrive's behaviour); gather_batch then serves
 * from the buffer the batches next_batch returned and reads any other
 * directly. A gather_batch that does not match the pipeline (a batch already
 * served, outside the plan, or ids differing from what the sampler stage
 * sampled) is read directly, never waited for.
 *
 * Evaluation gathers (oc_store_gather) copy the rows VALID in the buffer
 * (a reference held while copying, so no extractor reuses the slot) and read
 * the rest from features.npy directly with O_DIRECT through the trainer
 * thread's batch reader (same-page merging, a bounce of a 16th of a batch at
 * its bound, within [256 KiB, 2 MiB], rows in chunks of a 256th of it): they
 * load nothing into the buffer, evict nothing and do not wait for the
 * pipeline.
 *
 *   done_q ──► pop_done ──► parked records ──► take_record (plan order)
 *          ──► serve: rows copied from their slots, f16 widened ──► release_q
 *
 * Place in the data flow: store (gnndrive); the trainer calls these through
 * the strategy table (gnndrive.c), fed by the extract stage (gnndrive_stage.c).
 * Thread-safety: the trainer's thread only (store.h); the parked records,
 * cursors and taken/consumed bitmaps are its own; buffer pins and unpins
 * take gd->mu; records go to the releaser through release_q.
 * Ownership: records belong to the store; a served or discarded record is
 * handed to the release stage.
 */
#include <inttypes.h>
#include <string.h>

#include "store/gnndrive/gnndrive_int.h"

/* ---- direct reads (evaluation, batches not in the pipeline) --------------------- */

/* Pins the chunk's rows VALID in the buffer (none without a pipeline: no buffer). */
static uint64_t pin_chunk(struct gd_store *g, const uint64_t *ids, uint64_t n)
{
    if (!g->z.pipeline) {
        for (uint64_t i = 0; i < n; i++)
            g->disk.slots[i] = GD_NONE;
        return 0;
    }
    gd_lock(g);
    uint64_t hits = gd_buf_pin_valid(&g->buf, ids, n, g->disk.slots);
    gd_unlock(g);
    return hits;
}

static void unpin_chunk(struct gd_store *g, uint64_t n, uint64_t hits)
{
    if (!hits)
        return;
    gd_lock(g);
    gd_buf_unpin(&g->buf, g->disk.slots, n);
    /* any slot let go may be one a waiter needs: a free one, or a draining one retired */
    if (g->n_slot_waiters)
        pthread_cond_broadcast(&g->slot_cv);
    gd_unlock(g);
}

int gd_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out, struct oc_err *err)
{
    struct gd_store *g = s->impl;
    int rc = OC_OK;
    uint64_t chunk = g->z.eval_bounce / 256, dim = s->feat_dim, all_hits = 0;
    for (uint64_t lo = 0; lo < n && rc == OC_OK; lo += chunk) {
        uint64_t hi = n - lo > chunk ? lo + chunk : n;
        uint64_t hits = pin_chunk(g, ids + lo, hi - lo);
        for (uint64_t i = lo; i < hi && rc == OC_OK; i++)
            if (g->disk.slots[i - lo] == GD_NONE)
                rc = store_disk_queue(s, &g->disk, ids[i], out + i * dim, err);
        if (rc)
            store_disk_discard(&g->disk);
        else if (hits < hi - lo)
            rc = store_disk_run(s, &g->disk, err);
        if (rc == OC_OK) /* hits from their slots, misses widened */
            rc = store_slots_copy(s, g->buf.c.rows, g->disk.slots, hi - lo, out + lo * dim, err);
        unpin_chunk(g, hi - lo, hits);
        all_hits += hits;
    }
    if (rc == OC_OK)
        store_count_gather(s, n, n - all_hits);
    return rc;
}

/* ---- the trainer's side ----------------------------------------------------------- */

/* Marks plan batch seq returned or consumed (counted once per epoch). */
static void mark_taken(struct gd_store *g, uint64_t seq)
{
    if (oc_bit_get(g->taken, seq))
        return;
    oc_bit_set(g->taken, seq);
    g->epoch_taken[seq / g->n_batches]++;
}

static void mark_consumed(struct gd_store *g, uint64_t seq)
{
    oc_bit_set(g->consumed, seq);
    mark_taken(g, seq);
}

/* Hands r to the releaser unused (its reads still count: the disk delivered them). */
static void discard(struct gd_store *g, struct gd_rec *r)
{
    g->s->stats.read_bytes += r->read_bytes;
    g->s->stats.n_reads += r->n_reads;
    mark_consumed(g, r->seq);
    g->n_discarded++;
    oc_queue_push(g->release_q, r);
}

static void unpark(struct gd_store *g, uint32_t i)
{
    g->parked[i] = g->parked[--g->n_parked];
}

/* Waits for the next extracted batch and parks it (or discards it if already consumed). */
static int pop_done(struct gd_store *g, struct oc_err *err)
{
    void *item;
    if (oc_queue_pop(g->done_q, &item) != OC_OK)
        return store_stages_error(g->s, err);
    g->n_popped++;
    struct gd_rec *r = item;
    if (oc_bit_get(g->consumed, r->seq))
        discard(g, r);
    else
        g->parked[g->n_parked++] = r;
    return OC_OK;
}

/*
 * The extracted record of plan batch seq, waiting for it in plan order;
 * *out NULL when it must be read directly instead (reordering and not
 * extracted yet, or every record parked).
 */
static int take_record(struct gd_store *g, uint64_t seq, struct gd_rec **out, struct oc_err *err)
{
    *out = NULL;
    for (;;) {
        for (uint32_t i = 0; i < g->n_parked;) {
            struct gd_rec *r = g->parked[i];
            if (r->seq == seq) {
                unpark(g, i);
                *out = r;
                return OC_OK;
            }
            if (!g->reorder && r->seq < seq) { /* skipped over in plan order */
                unpark(g, i);
                discard(g, r);
                continue;
            }
            i++;
        }
        if (g->reorder || g->n_parked == g->z.n_records)
            return OC_OK;
        int rc = pop_done(g, err);
        if (rc)
            return rc;
    }
}

/* Copies r's rows into out and counts them; r is then handed to the releaser. */
static int serve(struct gd_store *g, struct gd_rec *r, float *out, struct oc_err *err)
{
    struct oc_store *s = g->s;
    int rc = OC_OK;
    for (uint64_t i = 0; i < r->n_rows && rc == OC_OK; i++) {
        uint32_t k = r->slots[i];
        if (g->buf.c.slot_id[k] != r->ids[i] ||
            atomic_load_explicit(&g->buf.state[k], memory_order_acquire) != GD_VALID)
            rc = OC_ERR(err, OC_ERR_INTERNAL,
                        "store gnndrive: batch %" PRIu64 " of epoch %" PRIu64 ": row %" PRIu64
                        " (node %" PRIu64 ") is not in its slot %" PRIu32,
                        r->batch, r->epoch, i, r->ids[i], k);
    }
    if (rc == OC_OK)
        rc = store_slots_copy(s, g->buf.c.rows, r->slots, r->n_rows, out, err);
    if (rc == OC_OK) {
        OC_ASSERT(r->n_hits + r->n_waited + r->n_misses == r->n_rows); /* each row one of them */
        store_count_gather(s, r->n_rows, r->n_misses);
        s->stats.standby_hits += r->n_standby_hits;
        s->stats.read_bytes += r->read_bytes;
        s->stats.n_reads += r->n_reads;
        g->n_served++;
    }
    oc_queue_push(g->release_q, r);
    return rc;
}

static int in_plan(const struct gd_store *g, uint64_t epoch)
{
    return g->z.pipeline && epoch >= g->first_epoch && epoch < g->n_epochs;
}

int gd_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                    uint64_t n, float *out, struct oc_err *err)
{
    struct gd_store *g = s->impl;
    struct gd_rec *r = NULL;

    if (in_plan(g, epoch) && batch < g->n_batches) {
        uint64_t seq = (epoch - g->first_epoch) * g->n_batches + batch;
        /* only a batch fed to the extractors is waited for; the feeder feeds them all */
        if ((g->feed || seq < atomic_load_explicit(&g->n_prepared, memory_order_acquire)) &&
            !oc_bit_get(g->consumed, seq)) {
            int rc = take_record(g, seq, &r, err);
            if (rc)
                return rc;
            mark_consumed(g, seq);
        }
    }
    if (r && r->n_rows == n && memcmp(r->ids, ids, n * sizeof(uint64_t)) == 0)
        return serve(g, r, out, err);
    if (r) /* not the batch the plan sampled: the caller's ids rule */
        discard(g, r);
    g->n_direct++;
    return gd_gather(s, ids, n, out, err);
}

int gd_next_batch(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err)
{
    struct gd_store *g = s->impl;
    if (!in_plan(g, epoch))
        return store_next_in_order(s, epoch, batch, err);
    uint64_t ei = epoch - g->first_epoch, base = ei * g->n_batches;
    if (g->epoch_taken[ei] >= g->n_batches)
        return OC_ERR(err, OC_ERR_NOTFOUND,
                      "store gnndrive: every batch of epoch %" PRIu64 " was returned (%" PRIu64 ")",
                      epoch, g->n_batches);
    if (!g->reorder) {
        if (g->nb_epoch != epoch) {
            g->nb_epoch = epoch;
            g->cursor = 0;
        }
        while (oc_bit_get(g->taken, base + g->cursor))
            g->cursor++;
        *batch = g->cursor;
        mark_taken(g, base + g->cursor);
        return OC_OK;
    }
    for (;;) {
        struct gd_rec *best = NULL;
        for (uint32_t i = 0; i < g->n_parked;) {
            struct gd_rec *r = g->parked[i];
            if (r->epoch < epoch) { /* an earlier epoch the trainer left: never gathered */
                unpark(g, i);
                discard(g, r);
                continue;
            }
            if (oc_bit_get(g->taken, r->seq))
                return OC_ERR(err, OC_ERR_ARG,
                              "store gnndrive: batch %" PRIu64 " of epoch %" PRIu64
                              " was returned but not gathered; gather it before asking for the "
                              "next",
                              r->batch, r->epoch);
            if (r->epoch == epoch && (!best || r->seq < best->seq))
                best = r;
            i++;
        }
        if (best) {
            mark_taken(g, best->seq);
            *batch = best->batch;
            return OC_OK;
        }
        if (g->n_parked == g->z.n_records)
            return OC_ERR(err, OC_ERR_INTERNAL,
                          "store gnndrive: every batch record is parked, none of epoch %" PRIu64,
                          epoch);
        if (g->n_popped == atomic_load_explicit(&g->n_prepared, memory_order_acquire))
            return OC_ERR(err, OC_ERR_ARG,
                          "store gnndrive: no batch of epoch %" PRIu64
                          " is being extracted: prepare one (oc_store_sampled) first",
                          epoch);
        int rc = pop_done(g, err);
        if (rc)
            return rc;
    }
}
