/*
 * gnndrive_buf.c — GNNDrive's feature buffer: the policy of a bound
 * store_cache (cache_int.h: row slots, node → slot table, slot → node) — a
 * reference count and a state per slot, and the standby list (core's
 * oc_slot_list): the slots no batch references, in LRU order, still holding
 * their rows so a later batch can reuse them.
 *
 *   c.table[v] ──► slot k ──► c.rows[k] (row_bytes, as stored)
 *                    │ c.slot_id[k] = v, ref[k], state[k]
 *   standby:  front ⇄ ... ⇄ back      (oc_slot_list;
 *             next victim   last released)
 *
 * Place in the data flow: store; the extractors reserve slots for a batch
 * (gd_buf_reserve), the releaser returns them (gd_buf_release).
 * Thread-safety: everything here except state[] is guarded by gd->mu, which
 * the callers hold (asserted: gd_lock records its holder where asserts are
 * on); state[] is atomic (see gnndrive_int.h). The invariants of the slot
 * state diagram (gnndrive_int.h) are asserted where they are relied on: a
 * slot is on the standby list exactly when its reference count is 0, a miss
 * takes an unreferenced slot to LOADING, a release never drops a count below 0.
 * Ownership: the buffer owns its arrays (oc_alloc'd, freed by deinit).
 *
 * Why the reference count and valid bit sit with the slot rather than the
 * node: only mapped nodes have them, so the per-node table is 4 bytes and
 * the per-slot metadata 21 bytes, next to rows of hundreds of bytes.
 *
 * Giving slots back (a budgeted store, gnndrive_yield.c's give-back): the slots
 * in use are [0, c.n_live); a give-back lowers it. A given-back slot
 * nobody references leaves the standby list at once (its whole pages go
 * back with madvise, its bytes to the accountant); one a batch in flight
 * still references drains: its batch reads it to the end, and the release
 * that drops its last reference retires it instead of putting it on the
 * standby list. Taking back puts slots [c.n_live, ...) back, EMPTY, at the
 * standby front.
 *
 *   rows: [ in use ........ | given back (some draining) ]
 *         0            c.n_live                          c.n
 */
#include <string.h>

#include "store/gnndrive/gnndrive_int.h"

int gd_buf_init(struct gd_buf *b, uint64_t n_nodes, uint64_t n_slots, size_t row_bytes,
                struct oc_err *err)
{
    memset(b, 0, sizeof(*b));
    int rc;
    if ((rc = store_cache_init_bound(&b->c, n_slots, n_nodes, row_bytes,
                                     "store gnndrive: row slots", err)) ||
        (rc = oc_slot_list_init(&b->standby, n_slots, "store gnndrive: standby list", err)))
        return rc;
    b->ref = oc_calloc(n_slots, sizeof(uint32_t), "store gnndrive: reference counts", err);
    b->state = oc_alloc(n_slots * sizeof(atomic_uchar), "store gnndrive: slot states", err);
    if (n_slots && (!b->ref || !b->state))
        return err ? err->status : OC_ERR_NOMEM;
    /* Every slot EMPTY, on the standby list in index order. */
    for (uint64_t k = 0; k < n_slots; k++) {
        atomic_init(&b->state[k], GD_EMPTY);
        oc_slot_list_push_back(&b->standby, (uint32_t)k);
    }
    return OC_OK;
}

void gd_buf_deinit(struct gd_buf *b)
{
    oc_mem_release(b->n_draining * b->c.row_bytes); /* store_cache_free releases the live ones */
    store_cache_free(&b->c);
    oc_slot_list_deinit(&b->standby);
    oc_free(b->ref);
    oc_free(b->state);
    memset(b, 0, sizeof(*b));
}

/* Slot k, unreferenced, leaves the standby list. */
static void standby_remove(struct gd_buf *b, uint32_t k)
{
    OC_ASSERT(b->ref[k] == 0); /* on the list exactly when unreferenced */
    oc_slot_list_unlink(&b->standby, k);
}

void gd_buf_reserve(struct gd_store *g, struct gd_extractor *x, struct gd_rec *r, uint64_t *pos,
                    uint64_t lim)
{
    struct gd_buf *b = &g->buf;
    uint64_t i = *pos;
    OC_ASSERT_HELD(&b->mu_held);

    for (; i < lim; i++) {
        uint64_t id = r->ids[i];
        uint32_t k = b->c.table[id];
        if (k != GD_NONE) {
            OC_ASSERT(b->c.slot_id[k] == id && k < b->c.n_live); /* the two maps agree */
            OC_ASSERT(b->ref[k] > 0 ||
                      atomic_load_explicit(&b->state[k], memory_order_relaxed) == GD_VALID);
            if (b->ref[k] == 0) { /* valid, on standby: reuse it */
                standby_remove(b, k);
                r->n_standby_hits++;
            }
            b->ref[k]++;
            r->slots[i] = k;
            if (atomic_load_explicit(&b->state[k], memory_order_acquire) == GD_VALID) {
                r->n_hits++;
            } else {
                x->waits[x->n_waits++] = (uint32_t)i;
                r->n_waited++;
            }
            continue;
        }
        if (b->standby.front == OC_SLOT_NONE)
            break; /* every slot is referenced: the caller waits for the releaser */
        k = b->standby.front;
        OC_ASSERT(atomic_load_explicit(&b->state[k], memory_order_relaxed) != GD_LOADING);
        standby_remove(b, k);
        store_cache_unbind(&b->c, k);
        store_cache_bind(&b->c, k, id);
        b->ref[k] = 1;
        atomic_store_explicit(&b->state[k], GD_LOADING, memory_order_relaxed);
        r->slots[i] = k;
        x->miss[x->n_miss++] = (struct store_miss){store_row_of(g->s, id), k}; /* by file row */
        r->n_misses++;
    }
    *pos = i;
}

uint64_t gd_buf_pin_valid(struct gd_buf *b, const uint64_t *ids, uint64_t n, uint32_t *slots)
{
    uint64_t hits = 0;
    OC_ASSERT_HELD(&b->mu_held);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = b->c.table[ids[i]];
        if (k == GD_NONE || atomic_load_explicit(&b->state[k], memory_order_acquire) != GD_VALID) {
            slots[i] = GD_NONE;
            continue;
        }
        if (b->ref[k] == 0)
            standby_remove(b, k);
        b->ref[k]++;
        slots[i] = k;
        hits++;
    }
    return hits;
}

/* Slot k's last reference is gone: to the standby back, or retired if it was given back. */
static int slot_free(struct gd_buf *b, uint32_t k)
{
    OC_ASSERT(b->ref[k] == 0);
    if (k < b->c.n_live) {
        oc_slot_list_push_back(&b->standby, k);
        return 1;
    }
    store_cache_unbind(&b->c, k);
    atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
    oc_mem_release(b->c.row_bytes);
    OC_ASSERT(b->n_draining > 0); /* a referenced slot past n_live drains */
    if (--b->n_draining == 0)
        store_cache_pages_back(&b->c, b->c.n_live, b->c.n);
    return 0;
}

uint64_t gd_buf_unpin(struct gd_buf *b, const uint32_t *slots, uint64_t n)
{
    uint64_t freed = 0;
    OC_ASSERT_HELD(&b->mu_held);
    for (uint64_t i = 0; i < n; i++) {
        OC_ASSERT(slots[i] == GD_NONE || b->ref[slots[i]] > 0); /* pinned by gd_buf_pin_valid */
        if (slots[i] != GD_NONE && --b->ref[slots[i]] == 0)
            freed += slot_free(b, slots[i]);
    }
    return freed;
}

void gd_buf_release(struct gd_buf *b, const struct gd_rec *r)
{
    OC_ASSERT_HELD(&b->mu_held);
    for (uint64_t i = 0; i < r->n_rows; i++) {
        uint32_t k = r->slots[i];
        OC_ASSERT(k < b->c.n && b->ref[k] > 0); /* reserved for r by gd_buf_reserve */
        if (--b->ref[k] == 0)
            slot_free(b, k);
    }
}

uint64_t gd_buf_give_back(struct gd_buf *b, uint64_t want, uint64_t floor)
{
    struct store_cache *c = &b->c;
    uint64_t rb = c->row_bytes, top = c->n_live, lo = top, n_free = 0;
    OC_ASSERT_HELD(&b->mu_held);
    while (lo > floor && n_free * rb < want)
        n_free += b->ref[--lo] == 0;
    if (n_free == 0)
        return 0;      /* every slot above the floor is in use: nothing to give now */
    uint64_t run = lo; /* start of the current run of unreferenced slots */
    for (uint64_t k = lo; k < top; k++) {
        if (b->ref[k] == 0) {
            store_cache_unbind(c, (uint32_t)k);
            standby_remove(b, (uint32_t)k);
            atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
            continue;
        }
        store_cache_forget(c, (uint32_t)k); /* slot_id stays: its batch checks it (serve) */
        b->n_draining++;
        store_cache_pages_back(c, run, k); /* the unreferenced run below this slot */
        run = k + 1;
    }
    c->n_live = lo;
    store_cache_pages_back(c, b->n_draining ? run : lo, b->n_draining ? top : c->n);
    oc_mem_release(n_free * rb);
    return n_free * rb;
}

void gd_buf_take_back(struct gd_buf *b, uint64_t rows)
{
    OC_ASSERT_HELD(&b->mu_held);
    OC_ASSERT(rows <= b->c.n - b->c.n_live);
    for (uint64_t i = rows; i-- > 0;) { /* the lowest ends at the front */
        uint32_t k = (uint32_t)(b->c.n_live + i);
        OC_ASSERT(b->ref[k] == 0 && b->c.slot_id[k] == STORE_NO_ID); /* given back, not draining */
        atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
        oc_slot_list_push_front(&b->standby, k);
    }
    b->c.n_live += rows;
}

uint64_t gd_buf_given_back_bytes(const struct gd_buf *b)
{
    OC_ASSERT_HELD(&b->mu_held);
    OC_ASSERT(b->c.n_live + b->n_draining <= b->c.n);
    return (b->c.n - b->c.n_live - b->n_draining) * b->c.row_bytes;
}
