/*
 * gnndrive_yield.c — GNNDrive's feature buffer under --mem-budget: the
 * policy of its give-back (core's oc_giveback, the tree's one mechanism),
 * giving row slots back to a request the budget could not otherwise give (a
 * larger batch), and taking them back when memory frees up (gnndrive_buf.c
 * does the slot work).
 *
 *   request past the budget ──► gd_give: top slots given back (never
 *   below a batch's worth: the largest batch prepared so far, at least
 *   the buffer's minimum), unmapped; their rows are read from disk again
 *   next time ──► gd_take_back (sample stage, each prepared batch): the
 *   slots back once the budget has room (a margin left), or at once the
 *   slots a larger batch needs
 *
 * What is learned never changes: a row comes from its slot or the file,
 * the same bytes.
 *
 * Place in the data flow: store; gnndrive.c registers the give-back at open
 * (a budgeted store with a training plan) and gnndrive_stage.c's gd_prepare
 * calls gd_take_back before it feeds a batch.
 * Thread-safety: the policy runs on whichever thread asks the accountant
 * and takes gd->mu (a leaf lock: no allocation happens under it, so the
 * reclaimer cannot be asked on a thread that holds it); taking back
 * reserves outside gd->mu (oc_giveback_reserve: that thread's own reclaims
 * give nothing) and commits under it, on the sample stage's thread.
 * Ownership: nothing of its own; the give-back lives in struct gd_store.
 */
#include <inttypes.h>

#include "store/gnndrive/gnndrive_int.h"

/* The give-back's policy: the top slots above a batch's worth (gd_buf_give_back releases them). */
static uint64_t gd_give(void *owner, uint64_t goal, uint64_t *released)
{
    struct gd_store *g = owner;
    gd_lock(g);
    uint64_t floor = g->z.min_slots > g->max_input_seen ? g->z.min_slots : g->max_input_seen;
    uint64_t got = gd_buf_give_back(&g->buf, goal, floor);
    gd_unlock(g);
    *released = got;
    return got;
}

int gd_yield_register(struct gd_store *g, struct oc_err *err)
{
    uint64_t buffer_bytes = g->buf.c.n * g->buf.c.row_bytes;
    oc_giveback_init(&g->gb, "store gnndrive", buffer_bytes, NULL, gd_give, g);
    return oc_giveback_register(&g->gb, err);
}

/* With gd->mu held: the first given-back slot still referenced (n_slots if none). */
static uint64_t first_draining(const struct gd_buf *b)
{
    uint64_t k = b->c.n_live;
    if (b->n_draining == 0)
        return b->c.n;
    while (k < b->c.n && b->ref[k] == 0)
        k++;
    return k;
}

int gd_take_back(struct gd_store *g, uint64_t need, struct oc_err *err)
{
    struct gd_buf *b = &g->buf;
    uint64_t rb = b->c.row_bytes;
    gd_lock(g);
    if (need > g->max_input_seen)
        g->max_input_seen = need; /* give-backs keep this batch's worth from now on */
    uint64_t given = gd_buf_given_back_bytes(b);
    for (;;) {
        uint64_t active = b->c.n_live, upto = first_draining(b);
        uint64_t must = need > active ? need - active : 0;
        if (upto == b->c.n && active == b->c.n)
            break;                  /* nothing given back */
        if (must > upto - active) { /* a larger batch, and slots it needs still drain */
            g->n_slot_waiters++;
            while (first_draining(b) - b->c.n_live < must && !atomic_load(&g->stop))
                gd_wait(g, &g->slot_cv);
            g->n_slot_waiters--;
            if (atomic_load(&g->stop))
                break;
            continue;
        }
        uint64_t rows = oc_giveback_take_rows(&g->gb, upto - active, must, rb);
        if (rows == 0)
            break; /* nothing, or too little to be worth it while no batch needs it */
        gd_unlock(g);
        int rc =
            oc_giveback_reserve(&g->gb, rows * rb, "store gnndrive: row slots taken back", err);
        gd_lock(g);
        if (rc) {
            gd_unlock(g);
            if (!must)
                return OC_OK; /* the room went to someone else: later */
            return oc_err_prefix(err,
                                 "store gnndrive: a batch of %" PRIu64 " input rows needs %" PRIu64
                                 " of the row slots it gave back",
                                 need, must);
        }
        if (b->c.n_live != active || first_draining(b) - active < rows) {
            oc_mem_release(rows * rb); /* moved meanwhile: look again */
            continue;
        }
        gd_buf_take_back(b, rows);
        if (g->n_slot_waiters)
            pthread_cond_broadcast(&g->slot_cv);
        store_cache_log_took("store gnndrive", rows, gd_buf_given_back_bytes(b) / rb, rb);
        break;
    }
    gd_unlock(g);
    if (oc_giveback_unlogged(&g->gb)) /* the give-backs since the last log */
        store_cache_log_gave("store gnndrive", given / rb, rb, "their rows are read from disk");
    return OC_OK;
}
