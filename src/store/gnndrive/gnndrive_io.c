/*
 * gnndrive_io.c — an extractor's reads: the batch's missing rows are read
 * from features.npy in page-aligned groups through the extractor's batch
 * reader (io.h: io_uring with `depth` reads in flight into its bounce cells,
 * or pread where io_uring is unavailable or OC_NO_URING is set); each row is
 * copied into its buffer slot and the slot marked VALID, for the extractors
 * waiting on it, as soon as the read holding it completes (the reader's
 * per-request completion callback), not when the whole batch is in.
 *
 *   misses (sorted)   |r1| |r2|      |--r3--|            |r4|
 *   pages           [ p0  ][ p1  ][ p2  ][ p3  ]  ...  [ p9  ]
 *   groups          [==== one read ============]       [ p9  ]
 *
 * Rows shorter than a page (4 KiB, the O_DIRECT sector here) are read in
 * sector-aligned groups: the misses are sorted by id and given to the
 * reader in runs of about GD_READ_RUN rows cut between rows that share no
 * page; the reader puts rows whose aligned spans share or touch a page into
 * one read (up to its merged-read cap), so a page is never read twice for
 * one batch and the bytes read are only the pages holding requested rows.
 * Between runs the extractor notices a cancelled pipeline. A miss the
 * batch's hyperbatch group holds is copied from it, not read.
 *
 * Place in the data flow: store; called by the extract stage
 * (gnndrive_stage.c) between reserving a batch's slots and handing the batch
 * to the trainer.
 * Thread-safety: an extractor state (its reader and scratch) is used by one
 * extract thread at a time (lent through ex_q). Slot rows written here are
 * referenced by the extractor's batch (LOADING), so nobody else touches them
 * until the VALID store.
 * Ownership: the reader and scratch belong to the extractor state; the
 * reader's bounce cells belong to the ring while a read is in flight, and
 * oc_io_batch_run returns only after every read it issued completed.
 */
#include <inttypes.h>
#include <string.h>

#include "store/gnndrive/gnndrive_int.h"

/*
 * Misses read per run of the reader: the reader's request tables hold
 * 2 x GD_READ_RUN rows (a run ends past GD_READ_RUN at the first row that
 * shares no page with the one before, so no page is read twice, unless
 * 2 x GD_READ_RUN consecutive rows each share one with the next).
 */
#define GD_READ_RUN 1024u

int gd_io_init(struct gd_store *g, struct gd_extractor *x, struct oc_err *err)
{
    int rc;
    x->g = g;
    x->cap = g->z.max_rows;
    x->miss = oc_alloc(g->z.max_rows * sizeof(struct store_miss), "store gnndrive: misses", err);
    x->waits = oc_alloc(g->z.max_rows * sizeof(uint32_t), "store gnndrive: wait list", err);
    if (!x->miss || !x->waits)
        return err ? err->status : OC_ERR_NOMEM;
    if ((rc = oc_io_batch_new(GD_DEPTH, (size_t)GD_DEPTH * g->z.cell_bytes, &x->reader, err)) ||
        (rc = oc_io_batch_reserve(x->reader, 2 * GD_READ_RUN, err)))
        return rc;
    oc_io_batch_register_file(x->reader, g->file);        /* optional: a plain read otherwise */
    return oc_io_batch_fit_disk(x->reader, g->file, err); /* the block reader's crossover */
}

void gd_io_deinit(struct gd_extractor *x)
{
    oc_io_batch_free(x->reader);
    oc_free(x->miss);
    oc_free(x->waits);
    memset(x, 0, sizeof(*x));
}

uint64_t gd_io_extractor_bytes(size_t cell_bytes, unsigned depth, uint64_t max_rows)
{
    return (uint64_t)depth * cell_bytes + 4096 /* the reader itself */ +
           2 * GD_READ_RUN * oc_io_batch_request_bytes() +
           max_rows * (sizeof(struct store_miss) + sizeof(uint32_t));
}

/*
 * Wakes the extractors waiting for rows that were LOADING. The waiter count
 * is read with a read-modify-write: either it comes after a waiter's
 * increment (and sees it: broadcast, which cannot be lost, as the waiter
 * holds gd->mu from its increment to its wait), or the waiter's increment
 * reads from it and so sees every VALID stored before it (release sequence).
 */
static void notify_loaded(struct gd_store *g)
{
    if (atomic_fetch_add_explicit(&g->n_load_waiters, 0, memory_order_acq_rel) == 0)
        return;
    gd_lock(g);
    pthread_cond_broadcast(&g->loaded_cv);
    gd_unlock(g);
}

/* The reader's completion callback: the row is in its slot (tag). */
static void row_placed(void *ctx, uint64_t slot, void *dst, size_t len)
{
    struct gd_store *g = ctx;
    (void)dst;
    (void)len;
    atomic_store_explicit(&g->buf.state[slot], GD_VALID, memory_order_release);
    notify_loaded(g);
}

/* Reads misses [lo, hi) in one run of the reader; rows are placed by row_placed. */
static int read_run(struct gd_extractor *x, uint64_t lo, uint64_t hi, struct oc_err *err)
{
    struct gd_store *g = x->g;
    const struct oc_store *s = g->s;
    int rc = OC_OK;
    const struct oc_io_stats *st = oc_io_batch_stats(x->reader);
    uint64_t reads0 = st->n_reads, bytes0 = st->read_bytes;
    for (uint64_t m = lo; m < hi && rc == OC_OK; m++) {
        const struct store_miss *ms = &x->miss[m];
        uint8_t *slot = g->buf.c.rows + (size_t)ms->pos * s->row_bytes;
        const void *staged = x->hg ? store_hyper_row(x->hg, ms->id) : NULL;
        if (staged) { /* --hyperbatch: its group read it */
            memcpy(slot, staged, s->row_bytes);
            row_placed(g, ms->pos, slot, s->row_bytes);
            continue;
        }
        rc = oc_io_batch_add_cb(x->reader, g->file, store_file_off(s, ms->id), s->row_bytes, slot,
                                row_placed, g, ms->pos, err);
    }
    /* On an add failure this only empties the reader (what was added is read and placed). */
    struct oc_err ignore;
    int r2 = oc_io_batch_run(x->reader, rc ? &ignore : err);
    if (rc == OC_OK)
        rc = r2;
    x->cur->n_reads += st->n_reads - reads0;
    x->cur->read_bytes += st->read_bytes - bytes0;
    return rc;
}

/* Where the run starting at miss j ends (see GD_READ_RUN); misses are sorted. */
static uint64_t run_end(const struct gd_extractor *x, uint64_t j, uint64_t hi)
{
    const struct oc_store *s = x->g->s;
    uint64_t k = hi - j > GD_READ_RUN ? j + GD_READ_RUN : hi;
    while (k < hi && k < j + 2 * GD_READ_RUN &&
           oc_io_align_down(store_file_off(s, x->miss[k].id)) <=
               oc_io_align_down(store_file_off(s, x->miss[k - 1].id) + s->row_bytes - 1))
        k++;
    return k;
}

int gd_io_read(struct gd_extractor *x, uint64_t lo, uint64_t hi, struct oc_err *err)
{
    int rc = OC_OK;
    store_miss_sort(x->miss + lo, hi - lo);
    for (uint64_t j = lo; j < hi && rc == OC_OK;) {
        if (atomic_load_explicit(&x->g->stop, memory_order_acquire))
            return OC_ERR_CANCELLED;
        uint64_t k = run_end(x, j, hi);
        rc = read_run(x, j, k, err);
        j = k;
    }
    return rc;
}
