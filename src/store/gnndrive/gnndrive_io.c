/*
 * gnndrive_io.c — an extractor's reads: the batch's missing rows, sorted by
 * id, are read from features.npy in page-aligned groups through the
 * extractor's own io_uring ring without waiting; each row is copied into its
 * buffer slot as the read holding it completes, and the slot is marked VALID
 * for the extractors waiting on it. Where io_uring is unavailable (or
 * OC_NO_URING is set) every group is read with pread as it is formed.
 *
 *   misses (sorted)   |r1| |r2|      |--r3--|            |r4|
 *   pages           [ p0  ][ p1  ][ p2  ][ p3  ]  ...  [ p9  ]
 *   groups          [==== one read ============]       [ p9  ]
 *
 * Rows shorter than a page (4 KiB, the O_DIRECT sector here) are read in
 * sector-aligned groups: rows whose aligned spans share or touch a page go
 * into one read, up to one bounce cell (max(16 KiB, a row's span)), so a page
 * is never read twice for one batch and the bytes read are only the pages
 * holding requested rows.
 *
 * Place in the data flow: store; called by the extractor threads
 * (gnndrive_stage.c) between reserving a batch's slots and handing the batch
 * to the trainer.
 * Thread-safety: an extractor's ring, cells and read table belong to its
 * thread. Slot rows written here are referenced by the extractor's batch
 * (LOADING), so nobody else touches them until the VALID store.
 * Ownership: a cell belongs to the ring from submission until its completion
 * has been handled; gd_io_drain waits for all of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "store/gnndrive/gnndrive_int.h"

int gd_io_init(struct gd_store *g, struct gd_extractor *x, struct oc_err *err)
{
    x->g = g;
    x->cells = oc_io_buf_alloc(g->depth * g->cell_bytes, "store gnndrive: read cells", err);
    x->free_cells = oc_alloc(g->depth * sizeof(uint32_t), "store gnndrive: read table", err);
    x->reads = oc_alloc(g->depth * sizeof(struct gd_read), "store gnndrive: read table", err);
    x->miss = oc_alloc(g->max_rows * sizeof(struct gd_miss), "store gnndrive: misses", err);
    x->waits = oc_alloc(g->max_rows * sizeof(uint32_t), "store gnndrive: wait list", err);
    if (!x->cells || !x->free_cells || !x->reads || !x->miss || !x->waits)
        return err ? err->status : OC_ERR_NOMEM;
    for (unsigned c = 0; c < g->depth; c++)
        x->free_cells[c] = g->depth - 1 - c;
    x->n_free = g->depth;
#ifdef OC_HAVE_URING
    const char *env = getenv("OC_NO_URING");
    if (env && env[0] && strcmp(env, "0") != 0) {
        oc_log(OC_LOG_DEBUG, "store gnndrive: OC_NO_URING set; extractors use pread");
    } else {
        int fe = 0, r;
        if (oc_fault_hit(OC_FAULT_URING_SETUP, &fe))
            r = -(fe ? fe : ENOSYS);
        else
            r = io_uring_queue_init(g->depth, &x->ring, 0);
        if (r < 0) {
            char eb[128];
            oc_log(OC_LOG_INFO, "store gnndrive: io_uring unavailable (%s); extractors use pread",
                   store_strerror(-r, eb, sizeof(eb)));
        } else {
            x->use_uring = 1;
        }
    }
#endif
    return OC_OK;
}

void gd_io_deinit(struct gd_extractor *x)
{
#ifdef OC_HAVE_URING
    if (x->use_uring)
        io_uring_queue_exit(&x->ring);
#endif
    x->use_uring = 0;
    oc_free(x->cells);
    oc_free(x->free_cells);
    oc_free(x->reads);
    oc_free(x->miss);
    oc_free(x->waits);
    x->cells = NULL;
    x->free_cells = NULL;
    x->reads = NULL;
    x->miss = NULL;
    x->waits = NULL;
}

size_t gd_io_held_bytes(const struct gd_store *g)
{
    return g->depth * (g->cell_bytes + sizeof(uint32_t) + sizeof(struct gd_read)) +
           g->max_rows * (sizeof(struct gd_miss) + sizeof(uint32_t));
}

/* ---- sorting (in place, allocation-free) ---------------------------------- */

static void miss_sift(struct gd_miss *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c].id < a[c + 1].id)
            c++;
        if (a[root].id >= a[c].id)
            return;
        struct gd_miss t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

static void miss_sort(struct gd_miss *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        miss_sift(a, i, n);
    for (size_t i = n; i-- > 1;) {
        struct gd_miss t = a[0];
        a[0] = a[i];
        a[i] = t;
        miss_sift(a, 0, i);
    }
}

/* ---- completion: place rows ------------------------------------------------- */

static uint8_t *cell_of(const struct gd_extractor *x, unsigned c)
{
    return x->cells + (size_t)c * x->g->cell_bytes;
}

/*
 * Copies every row of read c into its slot and marks it VALID; a row past
 * what the read delivered (end of file) is a truncated file.
 */
static int place_rows(struct gd_extractor *x, unsigned c, struct oc_err *err)
{
    const struct gd_store *g = x->g;
    const struct oc_store *s = g->s;
    const struct gd_read *rd = &x->reads[c];
    const uint8_t *cell = cell_of(x, c);
    uint64_t have_end = rd->off + rd->got;

    for (uint32_t m = rd->first; m < rd->end; m++) {
        const struct gd_miss *ms = &x->miss[m];
        uint64_t off = store_row_off(s, ms->id);
        if (off + s->row_bytes > have_end)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: truncated: wanted %zu bytes at offset %" PRIu64
                          ", file ends at %" PRIu64,
                          s->path, s->row_bytes, off, have_end);
        memcpy(g->buf.rows + (size_t)ms->slot * s->row_bytes, cell + (off - rd->off), s->row_bytes);
        atomic_store_explicit(&g->buf.state[ms->slot], GD_VALID, memory_order_release);
    }
    return OC_OK;
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
    pthread_mutex_lock(&g->mu);
    pthread_cond_broadcast(&g->loaded_cv);
    pthread_mutex_unlock(&g->mu);
}

static void free_cell(struct gd_extractor *x, unsigned c)
{
    x->free_cells[x->n_free++] = c;
}

/* ---- pread fallback ---------------------------------------------------------- */

static int read_pread(struct gd_extractor *x, unsigned c, struct oc_err *err)
{
    struct gd_read *rd = &x->reads[c];
    size_t got = 0;
    int rc = oc_file_pread_upto(x->g->file, cell_of(x, c), rd->len, rd->off, &got, err);
    x->cur->n_reads++;
    if (rc == OC_OK) {
        rd->got = (uint32_t)got;
        x->cur->read_bytes += got;
        rc = place_rows(x, c, err);
    }
    free_cell(x, c);
    if (rc == OC_OK)
        notify_loaded(x->g);
    return rc;
}

/* ---- io_uring ---------------------------------------------------------------- */

#ifdef OC_HAVE_URING

/* Queues the rest of read c (from got on). */
static int uring_prep(struct gd_extractor *x, unsigned c, struct oc_err *err)
{
    struct gd_read *rd = &x->reads[c];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&x->ring);
    if (!sqe) {
        io_uring_submit(&x->ring);
        x->need_submit = 0;
        sqe = io_uring_get_sqe(&x->ring);
        if (!sqe)
            return OC_ERR(err, OC_ERR_INTERNAL, "%s: io_uring submission queue full",
                          x->g->s->path);
    }
    io_uring_prep_read(sqe, oc_file_fd(x->g->file), cell_of(x, c) + rd->got, rd->len - rd->got,
                       rd->off + rd->got);
    io_uring_sqe_set_data64(sqe, (uint64_t)c);
    x->need_submit++;
    return OC_OK;
}

/* Queues the rest of read c again; its cell is freed if that fails. */
static int uring_reissue(struct gd_extractor *x, unsigned c, struct oc_err *err)
{
    int rc = uring_prep(x, c, err);
    if (rc)
        free_cell(x, c);
    return rc;
}

/* Handles one completion of read c: reissues the rest of a short read, or places the rows. */
static int uring_complete(struct gd_extractor *x, unsigned c, int res, struct oc_err *err)
{
    struct gd_read *rd = &x->reads[c];
    int fe = 0;

    if (oc_fault_hit(OC_FAULT_READ, &fe))
        res = fe ? -fe : 0; /* errno 0: a short read, i.e. premature end of file */
    if (res < 0) {
        if ((res == -EINTR || res == -EAGAIN) && !x->failed)
            return uring_reissue(x, c, err);
        free_cell(x, c);
        return OC_ERR_ERRNO(err, OC_ERR_IO, -res,
                            "%s: read of %" PRIu32 " bytes at offset %" PRIu64 " failed",
                            x->g->s->path, rd->len - rd->got, rd->off + rd->got);
    }
    rd->got += (uint32_t)res;
    x->cur->read_bytes += (uint64_t)res;
    /* More to come unless end of file (O_DIRECT stops short, unaligned, only there). */
    if (res > 0 && rd->got < rd->len && !x->failed &&
        !(oc_file_is_direct(x->g->file) && (rd->got & (OC_IO_ALIGN - 1))))
        return uring_reissue(x, c, err);
    int rc = x->failed ? OC_OK : place_rows(x, c, err);
    free_cell(x, c);
    return rc;
}

static int uring_submit(struct gd_extractor *x, unsigned wait_nr, struct oc_err *err)
{
    for (unsigned tries = 0;; tries++) {
        int r = wait_nr ? io_uring_submit_and_wait(&x->ring, wait_nr) : io_uring_submit(&x->ring);
        if (r >= 0 || r == -EINTR || r == -ETIME) {
            x->need_submit = 0;
            return OC_OK;
        }
        if ((r == -EAGAIN || r == -EBUSY) && tries < 10000) {
            usleep(50);
            continue;
        }
        return OC_ERR_ERRNO(err, OC_ERR_IO, -r, "store gnndrive: io_uring_submit failed");
    }
}

/* The ring is unusable: nothing more will complete through it (see batch.c's same case). */
static void uring_abandon(struct gd_extractor *x)
{
    io_uring_queue_exit(&x->ring);
    x->use_uring = 0;
    x->n_free = x->g->depth;
    for (unsigned c = 0; c < x->g->depth; c++)
        x->free_cells[c] = c;
    oc_log(OC_LOG_WARN, "store gnndrive: io_uring failed; extractor %u falls back to pread",
           x->idx);
}

#endif /* OC_HAVE_URING */

int gd_io_reap(struct gd_extractor *x, int wait, struct oc_err *err)
{
#ifdef OC_HAVE_URING
    if (!x->use_uring)
        return OC_OK; /* pread: nothing is ever in flight */
    int rc = OC_OK;
    unsigned in_flight = x->g->depth - x->n_free;
    if (x->need_submit || (wait && in_flight)) {
        rc = uring_submit(x, wait && in_flight ? 1 : 0, err);
        if (rc) {
            x->failed = 1;
            uring_abandon(x);
            return rc;
        }
    }
    unsigned placed = 0;
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&x->ring, &cqe) == 0) {
        unsigned c = (unsigned)io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&x->ring, cqe);
        struct oc_err e2;
        int r2 = uring_complete(x, c, res, rc ? &e2 : err);
        if (r2 && rc == OC_OK) {
            rc = r2;
            x->failed = 1;
        }
        placed++;
    }
    if (x->need_submit) {
        struct oc_err e2;
        int r2 = uring_submit(x, 0, rc ? &e2 : err);
        if (r2) {
            if (rc == OC_OK)
                rc = r2;
            x->failed = 1;
            uring_abandon(x);
        }
    }
    if (placed)
        notify_loaded(x->g);
    return rc;
#else
    (void)x;
    (void)wait;
    (void)err;
    return OC_OK;
#endif
}

int gd_io_drain(struct gd_extractor *x, struct oc_err *err)
{
    int rc = OC_OK;
    while (x->n_free < x->g->depth) {
        struct oc_err e2;
        int r2 = gd_io_reap(x, 1, rc ? &e2 : err);
        if (r2 && rc == OC_OK)
            rc = r2;
    }
    return rc;
}

int gd_io_submit(struct gd_extractor *x, uint64_t lo, uint64_t hi, struct oc_err *err)
{
    const struct gd_store *g = x->g;
    const struct oc_store *s = g->s;
    uint64_t j = lo;
    int rc = OC_OK;

    miss_sort(x->miss + lo, (size_t)(hi - lo));
    while (j < hi && rc == OC_OK) {
        if (x->failed || atomic_load_explicit(&g->stop, memory_order_relaxed))
            return OC_ERR_CANCELLED;
        if (x->n_free == 0) {
            rc = gd_io_reap(x, 1, err);
            continue;
        }
        /* A group: rows whose aligned spans share or touch a page, within one cell. */
        uint64_t off = store_row_off(s, x->miss[j].id);
        uint64_t start = oc_io_align_down(off), end = oc_io_align_up(off + s->row_bytes);
        uint64_t k = j + 1;
        for (; k < hi; k++) {
            uint64_t o2 = store_row_off(s, x->miss[k].id);
            uint64_t s2 = oc_io_align_down(o2), e2 = oc_io_align_up(o2 + s->row_bytes);
            if (s2 > end || (e2 > end ? e2 : end) - start > g->cell_bytes)
                break;
            if (e2 > end)
                end = e2;
        }
        unsigned c = x->free_cells[--x->n_free];
        x->reads[c] = (struct gd_read){start, (uint32_t)(end - start), 0, (uint32_t)j, (uint32_t)k};
        j = k;
#ifdef OC_HAVE_URING
        if (x->use_uring) {
            x->cur->n_reads++;
            rc = uring_prep(x, c, err);
            if (rc)
                free_cell(x, c);
            else if (x->need_submit >= 16)
                rc = gd_io_reap(x, 0, err); /* submit now, handle what finished */
            continue;
        }
#endif
        rc = read_pread(x, c, err);
    }
    if (rc == OC_OK)
        rc = gd_io_reap(x, 0, err); /* submit the rest without waiting */
    if (rc)
        x->failed = 1;
    return rc;
}
