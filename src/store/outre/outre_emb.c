/*
 * outre_emb.c — outre's historical embedding cache and its per-batch
 * records: the sampling hook that prunes a last-block source whose cached
 * embedding is younger than `staleness` iterations (and lists the cached
 * nodes to push), and the trainer's view of a batch (the pruned rows to use,
 * the rows to push back).
 *
 * Place in the data flow: store; the hop hook (oc_store_hop with the last
 * block's mask) runs on the batch pipeline's sample stage inside
 * oc_sample_neighbors, the done hook (oc_store_done) on the trainer's thread
 * (outre_int.h has the timeline and why it is deterministic).
 * Thread-safety: see outre_int.h: the cache and a record's lists belong to
 * the sample stage, a handed-out batch's push rows to the trainer, ordered by
 * the pipeline's free-slot queue.
 * Ownership: the store's; records grow through the accountant and keep
 * their memory.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/outre/outre_int.h"

#define NO_ITER UINT64_MAX

int outre_emb_init(struct oc_store *s, struct outre_store *o, const uint64_t *ids, uint64_t n,
                   uint64_t dim, struct oc_err *err)
{
    struct outre_emb *e = &o->emb;
    e->n_slots = n;
    e->dim = dim;
    for (uint32_t k = 0; k < OUTRE_SLOTS; k++)
        o->recs[k].g = NO_ITER;
    if (n == 0)
        return OC_OK;
    e->slot_of = oc_alloc(s->n_nodes * sizeof(uint32_t), "store outre: embedding table", err);
    e->iter = oc_calloc(n, sizeof(uint64_t), "store outre: embedding iterations", err);
    e->rows = oc_alloc(n * dim * sizeof(float), "store outre: embeddings", err);
    if (!e->slot_of || !e->iter || !e->rows)
        return err->status;
    for (uint64_t v = 0; v < s->n_nodes; v++)
        e->slot_of[v] = STORE_NO_SLOT;
    for (uint64_t k = 0; k < n; k++)
        e->slot_of[ids[k]] = (uint32_t)k;
    return OC_OK;
}

void outre_emb_free(struct outre_store *o)
{
    oc_free(o->emb.slot_of);
    oc_free(o->emb.iter);
    oc_free(o->emb.rows);
    for (uint32_t k = 0; k < OUTRE_SLOTS; k++) {
        struct outre_rec *r = &o->recs[k];
        oc_free(r->pruned_pos);
        oc_free(r->push_pos);
        oc_free(r->push_ids);
        oc_free(r->push_grad);
        oc_free(r->grad_order);
        oc_free(r->admitted);
        oc_free(r->rows);
    }
}

uint64_t outre_emb_held_bytes(const struct oc_store *s, const struct outre_store *o)
{
    const struct outre_emb *e = &o->emb;
    uint64_t b = e->n_slots ? s->n_nodes * 4 + e->n_slots * (8 + e->dim * 4) : 0;
    for (uint32_t k = 0; k < OUTRE_SLOTS; k++)
        b += atomic_load_explicit(&o->recs[k].cap, memory_order_relaxed) *
             OUTRE_REC_ROW_BYTES(e->dim);
    return b;
}

uint64_t outre_emb_bytes(const struct oc_store *s, const struct outre_profile *p, uint64_t n,
                         uint64_t dim)
{
    if (n == 0)
        return 0;
    uint64_t per_batch = p->max_last_src + p->max_last_src / 4;
    if (per_batch > n)
        per_batch = n;
    return s->n_nodes * 4 + n * (8 + dim * 4) + OUTRE_SLOTS * per_batch * OUTRE_REC_ROW_BYTES(dim);
}

/* Room for n cached rows in r (grown by a quarter again up to the slots, kept). */
static int rec_reserve(struct outre_rec *r, uint64_t n, uint64_t n_slots, uint64_t dim,
                       struct oc_err *err)
{
    if (n <= atomic_load_explicit(&r->cap, memory_order_relaxed))
        return OC_OK;
    /* a quarter again, but never past the slots: a record lists each cached node once */
    uint64_t want = n + n / 4;
    if (want > n_slots)
        want = n_slots > n ? n_slots : n;
    void **arr[] = {(void **)&r->pruned_pos, (void **)&r->push_pos,   (void **)&r->push_ids,
                    (void **)&r->push_grad,  (void **)&r->grad_order, (void **)&r->admitted,
                    (void **)&r->rows};
    const uint64_t size[] = {4, 4, 8, 4, 4, 1, dim * 4}; /* bytes per row: OUTRE_REC_ROW_BYTES */
    for (size_t i = 0; i < sizeof(size) / sizeof(size[0]); i++) {
        void *q = oc_realloc(*arr[i], want * size[i], "store outre: batch embeddings", err);
        if (!q)
            return err->status;
        *arr[i] = q;
    }
    atomic_store_explicit(&r->cap, want, memory_order_relaxed);
    return OC_OK;
}

/*
 * Takes in what the trainer pushed for r's batch: each admitted row stamped
 * with its iteration; a row not admitted empties its slot.
 */
static void rec_apply(struct outre_emb *e, const struct outre_rec *r)
{
    if (r->g == NO_ITER || !r->done)
        return; /* never trained (the run stopped first): nothing to take */
    const float *push = r->rows + r->n_pruned * e->dim;
    for (uint64_t k = 0; k < r->n_push; k++) {
        uint32_t slot = e->slot_of[r->push_ids[k]];
        if (!r->admitted[k]) { /* not stable enough: computed afresh when next needed */
            e->iter[slot] = 0;
            continue;
        }
        memcpy(e->rows + (uint64_t)slot * e->dim, push + k * e->dim, e->dim * 4);
        e->iter[slot] = r->g + 1;
    }
}

/* The trainer's view of record r (its arrays as they are now). */
static void rec_hist(const struct outre_rec *r, uint64_t dim, struct oc_store_hist *out)
{
    out->n_pruned = r->n_pruned;
    out->pruned_pos = r->pruned_pos;
    out->pruned_rows = r->rows;
    out->n_push = r->n_push;
    out->push_pos = r->push_pos;
    out->push_rows = r->rows + r->n_pruned * dim;
    out->push_grad = r->push_grad;
}

/* Marks the pruned sources of h and lists the pushes into the batch's record. */
static int rec_fill(struct oc_store *s, struct outre_rec *r, const struct oc_store_hop *h,
                    struct oc_err *err)
{
    struct outre_store *o = s->impl;
    struct outre_emb *e = &o->emb;
    const uint64_t *ids = h->ids, n = h->n, n_seeds = h->n_seeds, g = r->g;
    uint8_t *mask = h->mask;
    if (e->n_slots == 0)
        return OC_OK; /* nothing cached: nothing pruned, nothing to push */
    uint64_t n_cached = 0;
    for (uint64_t i = 0; i < n; i++)
        n_cached += e->slot_of[ids[i]] != STORE_NO_SLOT;
    int rc = rec_reserve(r, n_cached, e->n_slots, e->dim, err);
    if (rc)
        return rc;
    /* the pruned rows go to the front now; the pushes' positions are kept and their rows
       follow the pruned ones once all are known (the trainer writes them there) */
    for (uint64_t i = 0; i < n; i++) {
        uint32_t slot = e->slot_of[ids[i]];
        if (slot == STORE_NO_SLOT)
            continue;
        uint64_t it = e->iter[slot];
        /* computed at iteration it - 1 <= g - K: fresh while younger than staleness */
        if (i >= n_seeds && it && g - (it - 1) < o->staleness) {
            mask[i] = 1;
            r->pruned_pos[r->n_pruned] = (uint32_t)i;
            memcpy(r->rows + r->n_pruned * e->dim, e->rows + (uint64_t)slot * e->dim, e->dim * 4);
            r->n_pruned++;
            if (g - (it - 1) > r->max_age)
                r->max_age = g - (it - 1);
        } else { /* computed afresh by this batch: pushed once trained */
            r->push_pos[r->n_push] = (uint32_t)i;
            r->push_ids[r->n_push] = ids[i];
            r->n_push++;
        }
    }
    return OC_OK;
}

int outre_hop(struct oc_store *s, const struct oc_store_hop *h, struct oc_err *err)
{
    struct outre_store *o = s->impl;
    struct outre_emb *e = &o->emb;
    if (!h->mask)
        return OC_OK; /* it takes whole batches */
    uint64_t epoch = h->epoch, batch = h->batch;
    uint64_t g = epoch * o->n_batches + batch;
    struct outre_rec *r = &o->recs[g % OUTRE_SLOTS];
    if (r->g != NO_ITER && r->g + OUTRE_SLOTS != g)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store outre: batch %" PRIu64 " of epoch %" PRIu64
                      " sampled out of order (record holds iteration %" PRIu64 ")",
                      batch, epoch, r->g);
    rec_apply(e, r);
    r->g = g;
    r->done = 0;
    r->n_pruned = r->n_push = r->max_age = 0;
    r->n_cand = h->n - h->n_seeds;
    int rc = rec_fill(s, r, h, err);
    if (rc == OC_OK)
        rec_hist(r, e->dim, h->hist); /* the arrays hold still until the batch is done */
    return rc;
}

static int cmp_f32(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

uint64_t outre_admit_select(float *norm, uint64_t n, double admit, float *scratch,
                            uint8_t *admitted)
{
    for (uint64_t i = 0; i < n; i++)
        if (isnan(norm[i]))
            norm[i] = INFINITY; /* after every finite norm */
    /* floor(admit x n), the product nudged up so that 0.29 x 100 gives 29, not 28 */
    uint64_t k = admit >= 1.0 ? n : admit > 0.0 ? (uint64_t)(admit * (double)n * (1.0 + 1e-12)) : 0;
    k = k < n ? k : n;
    if (k == n || k == 0) {
        for (uint64_t i = 0; i < n; i++) /* (a record with no rows has no arrays yet) */
            admitted[i] = k == n;
        return k;
    }
    for (uint64_t i = 0; i < n; i++)
        scratch[i] = norm[i];
    qsort(scratch, n, sizeof(float), cmp_f32);
    float thr = scratch[k - 1]; /* the k-th smallest: below it admitted, at it while k lasts */
    uint64_t below = 0;
    for (uint64_t i = 0; i < n; i++)
        below += norm[i] < thr;
    uint64_t ties = k - below; /* rows at thr admitted, first in position order */
    for (uint64_t i = 0; i < n; i++) {
        int at = norm[i] == thr && ties > 0;
        admitted[i] = norm[i] < thr || at;
        ties -= (uint64_t)at;
    }
    return k;
}

void outre_done(struct oc_store *s, uint64_t epoch, uint64_t batch)
{
    struct outre_store *o = s->impl;
    if (!o->prunes)
        return;
    uint64_t g = epoch * o->n_batches + batch;
    struct outre_rec *r = &o->recs[g % OUTRE_SLOTS];
    /* K records, K batches in flight: the batch's record is still its own */
    OC_ASSERT(r->g == g && !r->done);
    if (r->g != g)
        return;
    uint64_t k = outre_admit_select(r->push_grad, r->n_push, o->admit, r->grad_order, r->admitted);
    r->done = 1;
    o->n_cand += r->n_cand;
    o->n_pruned += r->n_pruned;
    if (r->max_age > o->max_age)
        o->max_age = r->max_age;
    o->n_pushed += r->n_push;
    o->n_admitted += k;
}
