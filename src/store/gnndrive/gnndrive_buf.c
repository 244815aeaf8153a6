/*
 * gnndrive_buf.c — GNNDrive's feature buffer: row slots with a mapping table
 * per node (node → slot), a reverse map (slot → node), a reference count and
 * a state per slot, and the standby list: the slots no batch references, in
 * LRU order, still holding their rows so a later batch can reuse them.
 *
 *   node_slot[v] ──► slot k ──► rows[k] (row_bytes, as stored)
 *                      │ slot_node[k] = v, ref[k], state[k]
 *   standby:  head ⇄ ... ⇄ tail      (doubly linked through prev/next;
 *             next victim    last released)
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
 * in use are [0, n_active); a give-back lowers n_active. A given-back slot
 * nobody references leaves the standby list at once (its whole pages go
 * back with madvise, its bytes to the accountant); one a batch in flight
 * still references drains: its batch reads it to the end, and the release
 * that drops its last reference retires it instead of putting it on the
 * standby list. Taking back puts slots [n_active, ...) back, EMPTY, at the
 * standby head.
 *
 *   rows: [ in use ........ | given back (some draining) ]
 *         0            n_active                      n_slots
 */
#include <string.h>
#include <sys/mman.h>

#include "store/gnndrive/gnndrive_int.h"

int gd_buf_init(struct gd_buf *b, uint64_t n_nodes, uint64_t n_slots, size_t row_bytes,
                struct oc_err *err)
{
    memset(b, 0, sizeof(*b));
    b->n_slots = b->n_active = n_slots;
    b->row_bytes = row_bytes;
    int rc;
    if (n_slots && (rc = oc_mem_map(n_slots * row_bytes, "store gnndrive: row slots", &b->rows,
                                    &b->map_bytes, err)))
        return rc;
    b->node_slot = oc_alloc(n_nodes * sizeof(uint32_t), "store gnndrive: mapping table", err);
    b->slot_node = oc_alloc(n_slots * sizeof(uint64_t), "store gnndrive: reverse map", err);
    b->ref = oc_calloc(n_slots, sizeof(uint32_t), "store gnndrive: reference counts", err);
    b->prev = oc_alloc(n_slots * sizeof(uint32_t), "store gnndrive: standby list", err);
    b->next = oc_alloc(n_slots * sizeof(uint32_t), "store gnndrive: standby list", err);
    b->state = oc_alloc(n_slots * sizeof(atomic_uchar), "store gnndrive: slot states", err);
    if (!b->node_slot || !b->slot_node || !b->ref || !b->prev || !b->next || !b->state)
        return err ? err->status : OC_ERR_NOMEM;
    for (uint64_t v = 0; v < n_nodes; v++)
        b->node_slot[v] = GD_NONE;
    /* Every slot EMPTY, on the standby list in index order. */
    for (uint64_t k = 0; k < n_slots; k++) {
        b->slot_node[k] = GD_NO_NODE;
        b->prev[k] = k ? (uint32_t)(k - 1) : GD_NONE;
        b->next[k] = k + 1 < n_slots ? (uint32_t)(k + 1) : GD_NONE;
        atomic_init(&b->state[k], GD_EMPTY);
    }
    b->head = n_slots ? 0 : GD_NONE;
    b->tail = n_slots ? (uint32_t)(n_slots - 1) : GD_NONE;
    b->n_standby = n_slots;
    return OC_OK;
}

void gd_buf_deinit(struct gd_buf *b)
{
    if (b->map_bytes) {
        munmap(b->rows, b->map_bytes);
        oc_mem_release((b->n_active + b->n_draining) * b->row_bytes);
    }
    oc_free(b->node_slot);
    oc_free(b->slot_node);
    oc_free(b->ref);
    oc_free(b->prev);
    oc_free(b->next);
    oc_free(b->state);
    memset(b, 0, sizeof(*b));
}

static void standby_remove(struct gd_buf *b, uint32_t k)
{
    OC_ASSERT(b->ref[k] == 0 && b->n_standby > 0); /* on the list exactly when unreferenced */
    uint32_t p = b->prev[k], n = b->next[k];
    OC_ASSERT(p != GD_NONE ? b->next[p] == k : b->head == k);
    OC_ASSERT(n != GD_NONE ? b->prev[n] == k : b->tail == k);
    if (p != GD_NONE)
        b->next[p] = n;
    else
        b->head = n;
    if (n != GD_NONE)
        b->prev[n] = p;
    else
        b->tail = p;
    b->prev[k] = b->next[k] = GD_NONE;
    b->n_standby--;
}

static void standby_push_tail(struct gd_buf *b, uint32_t k)
{
    OC_ASSERT(b->ref[k] == 0 && k < b->n_active);
    b->prev[k] = b->tail;
    b->next[k] = GD_NONE;
    if (b->tail != GD_NONE)
        b->next[b->tail] = k;
    else
        b->head = k;
    b->tail = k;
    b->n_standby++;
}

void gd_buf_reserve(struct gd_store *g, struct gd_extractor *x, struct gd_rec *r, uint64_t *pos,
                    uint64_t lim)
{
    struct gd_buf *b = &g->buf;
    uint64_t i = *pos;
    OC_ASSERT_HELD(&b->mu_held);

    for (; i < lim; i++) {
        uint64_t id = r->ids[i];
        uint32_t k = b->node_slot[id];
        if (k != GD_NONE) {
            OC_ASSERT(b->slot_node[k] == id && k < b->n_active); /* mapped: the two maps agree */
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
        if (b->head == GD_NONE)
            break; /* every slot is referenced: the caller waits for the releaser */
        k = b->head;
        OC_ASSERT(atomic_load_explicit(&b->state[k], memory_order_relaxed) != GD_LOADING);
        standby_remove(b, k);
        if (b->slot_node[k] != GD_NO_NODE)
            b->node_slot[b->slot_node[k]] = GD_NONE;
        b->slot_node[k] = id;
        b->node_slot[id] = k;
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
        uint32_t k = b->node_slot[ids[i]];
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

/* Whole pages of slots [lo, hi) back to the kernel (their rows read as zeros after). */
static void pages_back(const struct gd_buf *b, uint64_t lo, uint64_t hi)
{
    oc_mem_pages_back(b->rows, b->map_bytes, lo * b->row_bytes,
                      hi == b->n_slots ? b->map_bytes : hi * b->row_bytes);
}

/* Slot k's last reference is gone: to the standby tail, or retired if it was given back. */
static int slot_free(struct gd_buf *b, uint32_t k)
{
    OC_ASSERT(b->ref[k] == 0);
    if (k < b->n_active) {
        standby_push_tail(b, k);
        return 1;
    }
    b->slot_node[k] = GD_NO_NODE;
    atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
    oc_mem_release(b->row_bytes);
    OC_ASSERT(b->n_draining > 0); /* a referenced slot past n_active drains */
    if (--b->n_draining == 0)
        pages_back(b, b->n_active, b->n_slots);
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
        OC_ASSERT(k < b->n_slots && b->ref[k] > 0); /* reserved for r by gd_buf_reserve */
        if (--b->ref[k] == 0)
            slot_free(b, k);
    }
}

uint64_t gd_buf_give_back(struct gd_buf *b, uint64_t want, uint64_t floor)
{
    uint64_t rb = b->row_bytes, top = b->n_active, lo = top, n_free = 0;
    OC_ASSERT_HELD(&b->mu_held);
    while (lo > floor && n_free * rb < want)
        n_free += b->ref[--lo] == 0;
    if (n_free == 0)
        return 0;      /* every slot above the floor is in use: nothing to give now */
    uint64_t run = lo; /* start of the current run of unreferenced slots */
    for (uint64_t k = lo; k < top; k++) {
        uint64_t v = b->slot_node[k];
        if (v != GD_NO_NODE && b->node_slot[v] == k)
            b->node_slot[v] = GD_NONE;
        if (b->ref[k] == 0) {
            b->slot_node[k] = GD_NO_NODE;
            standby_remove(b, (uint32_t)k);
            atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
            continue;
        }
        b->n_draining++;       /* slot_node stays: its batch checks it (gnndrive_serve.c) */
        pages_back(b, run, k); /* the unreferenced run below this slot */
        run = k + 1;
    }
    b->n_active = lo;
    if (b->n_draining == 0)
        pages_back(b, lo, b->n_slots);
    else
        pages_back(b, run, top);
    oc_mem_release(n_free * rb);
    return n_free * rb;
}

void gd_buf_take_back(struct gd_buf *b, uint64_t rows)
{
    OC_ASSERT_HELD(&b->mu_held);
    OC_ASSERT(rows <= b->n_slots - b->n_active);
    for (uint64_t i = rows; i-- > 0;) { /* the lowest ends at the head */
        uint32_t k = (uint32_t)(b->n_active + i);
        OC_ASSERT(b->ref[k] == 0); /* not draining: given back and unreferenced */
        b->ref[k] = 0;
        b->slot_node[k] = GD_NO_NODE;
        atomic_store_explicit(&b->state[k], GD_EMPTY, memory_order_relaxed);
        b->prev[k] = GD_NONE;
        b->next[k] = b->head;
        if (b->head != GD_NONE)
            b->prev[b->head] = k;
        else
            b->tail = k;
        b->head = k;
        b->n_standby++;
    }
    b->n_active += rows;
}

uint64_t gd_buf_given_back_bytes(const struct gd_buf *b)
{
    OC_ASSERT_HELD(&b->mu_held);
    OC_ASSERT(b->n_active + b->n_draining <= b->n_slots);
    return (b->n_slots - b->n_active - b->n_draining) * b->row_bytes;
}
