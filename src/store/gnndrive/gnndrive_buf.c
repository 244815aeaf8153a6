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
 * the callers hold; state[] is atomic (see gnndrive_int.h).
 * Ownership: the buffer owns its arrays (oc_alloc'd, freed by deinit).
 *
 * Why the reference count and valid bit sit with the slot rather than the
 * node: only mapped nodes have them, so the per-node table is 4 bytes and
 * the per-slot metadata 21 bytes, next to rows of hundreds of bytes.
 */
#include <string.h>

#include "store/gnndrive/gnndrive_int.h"

int gd_buf_init(struct gd_buf *b, uint64_t n_nodes, uint64_t n_slots, size_t row_bytes,
                struct oc_err *err)
{
    memset(b, 0, sizeof(*b));
    b->n_slots = n_slots;
    b->row_bytes = row_bytes;
    b->rows = oc_alloc_aligned(n_slots * row_bytes, OC_IO_ALIGN, "store gnndrive: row slots", err);
    b->node_slot = oc_alloc(n_nodes * sizeof(uint32_t), "store gnndrive: mapping table", err);
    b->slot_node = oc_alloc(n_slots * sizeof(uint64_t), "store gnndrive: reverse map", err);
    b->ref = oc_calloc(n_slots, sizeof(uint32_t), "store gnndrive: reference counts", err);
    b->prev = oc_alloc(n_slots * sizeof(uint32_t), "store gnndrive: standby list", err);
    b->next = oc_alloc(n_slots * sizeof(uint32_t), "store gnndrive: standby list", err);
    b->state = oc_alloc(n_slots * sizeof(atomic_uchar), "store gnndrive: slot states", err);
    if (!b->rows || !b->node_slot || !b->slot_node || !b->ref || !b->prev || !b->next || !b->state)
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
    oc_free(b->rows);
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
    uint32_t p = b->prev[k], n = b->next[k];
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

    for (; i < lim; i++) {
        uint64_t id = r->ids[i];
        uint32_t k = b->node_slot[id];
        if (k != GD_NONE) {
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
        standby_remove(b, k);
        if (b->slot_node[k] != GD_NO_NODE)
            b->node_slot[b->slot_node[k]] = GD_NONE;
        b->slot_node[k] = id;
        b->node_slot[id] = k;
        b->ref[k] = 1;
        atomic_store_explicit(&b->state[k], GD_LOADING, memory_order_relaxed);
        r->slots[i] = k;
        x->miss[x->n_miss++] = (struct gd_miss){id, k};
        r->n_misses++;
    }
    *pos = i;
}

uint64_t gd_buf_pin_valid(struct gd_buf *b, const uint64_t *ids, uint64_t n, uint32_t *slots)
{
    uint64_t hits = 0;
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

uint64_t gd_buf_unpin(struct gd_buf *b, const uint32_t *slots, uint64_t n)
{
    uint64_t freed = 0;
    for (uint64_t i = 0; i < n; i++)
        if (slots[i] != GD_NONE && --b->ref[slots[i]] == 0) {
            standby_push_tail(b, slots[i]);
            freed++;
        }
    return freed;
}

void gd_buf_release(struct gd_buf *b, const struct gd_rec *r)
{
    for (uint64_t i = 0; i < r->n_rows; i++) {
        uint32_t k = r->slots[i];
        if (--b->ref[k] == 0)
            standby_push_tail(b, k);
    }
}

int gd_grow_rows(void **a, size_t a_size, void **b, size_t b_size, uint64_t *cap, uint64_t rows,
                 const char *consumer, struct oc_err *err)
{
    if (rows <= *cap)
        return OC_OK;
    uint64_t want = rows + rows / 8; /* the next larger batch likely fits too */
    void *na = oc_realloc(*a, want * a_size, consumer, err);
    if (!na)
        return err ? err->status : OC_ERR_NOMEM;
    *a = na;
    void *nb = oc_realloc(*b, want * b_size, consumer, err);
    if (!nb)
        return err ? err->status : OC_ERR_NOMEM;
    *b = nb;
    *cap = want;
    return OC_OK;
}
