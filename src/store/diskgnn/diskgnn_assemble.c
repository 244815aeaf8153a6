/*
 * diskgnn_assemble.c — diskgnn's feature assembler, in the batch pipeline's
 * fetch stage: a loaded chunk's packed rows (one sequential extent of the
 * window file, in file order through the inverse of the address table) and
 * disk-cache rows are read by io_uring in runs of c.row_run rows straight
 * into the pipeline's row buffer; CPU-cache rows are copied from the cache
 * under its read side, and rows the cache gave back are read from
 * features.npy through the store's reader.
 *
 *   slot (chunk: header, record, address table) ──► read_rows ──► assemble_locked ──► out
 *
 * Place in the data flow: store (diskgnn); diskgnn_pipe.c's ready_q ──►
 * dg_pipe_next ──► dg_pipe_assemble (here) ──► the trainer.
 * Thread-safety: the fetch stage alone runs it (the pipe's io batch and
 * inverse map are its); the cache's read side and the reader's mutex are
 * taken in the order every user of the two keeps (assemble_locked).
 * Ownership: out is the caller's; the slot stays the caller's until
 * dg_pipe_release.
 */
#include <inttypes.h>
#include <pthread.h>

#include "store/diskgnn/diskgnn_int.h"

/* Where row k of out gets its stored bytes (store_stored_dst). */
static void *row_dst(const struct oc_store *s, float *out, uint64_t k)
{
    return store_stored_dst(s, out + k * s->feat_dim);
}

/* Queues one row for the assembler's reader, running it every c.row_run rows. */
static int queue_row(struct dg_pipe *p, struct oc_file *f, uint64_t at, void *dst, uint64_t *queued,
                     struct oc_err *err)
{
    int rc = oc_io_batch_add(p->io, f, at, p->s->row_bytes, dst, err);
    if (rc == OC_OK && ++*queued == p->c.row_run) {
        *queued = 0;
        rc = oc_io_batch_run(p->io, err);
    }
    return rc;
}

/*
 * Reads slot sl's packed rows (ascending in the chunk, so one sequential
 * extent, in file order through the inverse of the address table) and its
 * disk-cache rows from the window file straight into their rows of out, in
 * runs of c.row_run rows; counts the reads in sl's info. f16 rows
 * are widened by the caller.
 */
static int read_rows(struct dg_pipe *p, struct dg_slot *sl, float *out, struct oc_err *err)
{
    const struct oc_store *s = p->s;
    struct dg_window *w = sl->w;
    uint64_t n = sl->info.n_input, rb = s->row_bytes, queued = 0;
    const uint8_t *addr = sl->buf + OC_PLAN_CHUNK_HEADER + sl->rec_bytes;
    const struct oc_io_stats *io = oc_io_batch_stats(p->io);
    uint64_t read0 = io->read_bytes, reads0 = io->n_reads;
    int rc;
    if (sl->info.n_packed > p->cap_inv) {
        uint32_t *inv = oc_alloc(sl->info.n_packed * sizeof(uint32_t),
                                 "store diskgnn: the assembler's row map", err);
        if (!inv)
            return err->status;
        oc_free(p->inv);
        atomic_fetch_add(&p->held, (sl->info.n_packed - p->cap_inv) * sizeof(uint32_t));
        p->inv = inv;
        p->cap_inv = sl->info.n_packed;
    }
    for (uint64_t k = 0; k < n; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k);
        if (OC_PLAN_ADDR_WHERE(code) == OC_PLAN_PACKED) /* the loader checked every code */
            p->inv[OC_PLAN_ADDR_INDEX(code)] = (uint32_t)k;
    }
    if ((rc = oc_io_batch_fit_disk(p->io, w->f, err)))
        return rc;
    uint64_t packed_at = sl->chunk_at + oc_plan_chunk_meta_bytes(sl->rec_bytes, n);
    for (uint64_t j = 0; j < sl->info.n_packed && rc == OC_OK; j++)
        rc = queue_row(p, w->f, packed_at + j * rb, row_dst(s, out, p->inv[j]), &queued, err);
    for (uint64_t k = 0; k < n && rc == OC_OK; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k);
        if (OC_PLAN_ADDR_WHERE(code) == OC_PLAN_DISK_CACHE)
            rc = queue_row(p, w->f, w->seg_byte_off[sl->seg] + OC_PLAN_ADDR_INDEX(code) * rb,
                           row_dst(s, out, k), &queued, err);
    }
    /* a run empties the batch also on failure (the queued destinations are out's rows) */
    struct oc_err ignore;
    int run = oc_io_batch_run(p->io, rc ? &ignore : err);
    rc = rc ? rc : run;
    /* what was read counts even on failure (the trainer adds a batch's info to the store's) */
    sl->info.feat_read_bytes += io->read_bytes - read0;
    sl->info.n_reads += io->n_reads - reads0;
    if (rc)
        return oc_err_prefix(err, "store diskgnn: batch %" PRIu64 ", packed and disk-cache rows",
                             sl->info.index);
    return OC_OK;
}

/*
 * The CPU-cache rows of slot sl into out, from the cache (those at slots >=
 * live, given back, were read into place already), and every row read from
 * disk widened when rows are stored as f16.
 */
static void assemble(const struct dg_pipe *p, const struct dg_slot *sl, uint64_t live, float *out)
{
    const struct oc_store *s = p->s;
    uint64_t rb = s->row_bytes, dim = s->feat_dim;
    const uint8_t *addr = sl->buf + OC_PLAN_CHUNK_HEADER + sl->rec_bytes;
    for (uint64_t k = 0; k < sl->info.n_input; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k), idx = OC_PLAN_ADDR_INDEX(code);
        if (OC_PLAN_ADDR_WHERE(code) == OC_PLAN_CPU && idx < live)
            store_row_to_f32(s->dtype, p->c.cache->rows + idx * rb, dim, out + k * dim);
        else if (s->dtype == OC_DTYPE_F16)
            store_row_widen_inplace(out + k * dim, dim);
    }
}

/* How many of slot sl's CPU-cache rows are at slots >= live (given back). */
static uint64_t count_given_back(const struct dg_slot *sl, uint64_t live)
{
    const uint8_t *addr = sl->buf + OC_PLAN_CHUNK_HEADER + sl->rec_bytes;
    uint64_t n = 0;
    for (uint64_t k = 0; k < sl->info.n_input; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k);
        n += OC_PLAN_ADDR_WHERE(code) == OC_PLAN_CPU && OC_PLAN_ADDR_INDEX(code) >= live;
    }
    return n;
}

/*
 * Reads the CPU-cache rows of slot sl at slots >= live from features.npy
 * into their rows of out, through the store's reader (its mutex held by the
 * caller), and counts them and their reads in sl's info.
 */
static int read_given_back(struct dg_pipe *p, struct dg_slot *sl, const uint64_t *ids,
                           uint64_t live, float *out, struct oc_err *err)
{
    struct store_disk *d = p->c.disk;
    const struct oc_io_stats *io = oc_io_batch_stats(d->batch);
    uint64_t read0 = io->read_bytes, reads0 = io->n_reads;
    const uint8_t *addr = sl->buf + OC_PLAN_CHUNK_HEADER + sl->rec_bytes;
    uint64_t n = 0, dim = p->s->feat_dim;
    int rc = OC_OK;
    for (uint64_t k = 0; k < sl->info.n_input && rc == OC_OK; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k);
        if (OC_PLAN_ADDR_WHERE(code) != OC_PLAN_CPU || OC_PLAN_ADDR_INDEX(code) < live)
            continue;
        uint64_t row;
        store_rows_of(p->s->ds, p->s->row_map, ids + k, 1, &row); /* row space */
        rc = store_disk_queue_row(p->s, d, row, out + k * dim, err);
        n++;
        if (rc == OC_OK && d->max_rows && n % d->max_rows == 0) /* the reader's bounded runs */
            rc = oc_io_batch_run(d->batch, err);
    }
    if (rc)
        store_disk_discard(d);
    else
        rc = oc_io_batch_run(d->batch, err);
    /* what was read counts even on failure (the trainer adds a batch's info to the store's) */
    sl->info.feat_read_bytes += io->read_bytes - read0;
    sl->info.n_reads += io->n_reads - reads0;
    if (rc)
        return oc_err_prefix(err, "store diskgnn: batch %" PRIu64 ", rows the CPU cache gave back",
                             sl->info.index);
    sl->info.n_cpu -= n;
    sl->info.n_file += n;
    return OC_OK;
}

/*
 * Assembles slot sl into out under the cache's read side; rows the cache
 * gave back are read first, with the reader's mutex taken (and its scratch
 * grown for the batch) before the read side: the order every user of the
 * two keeps.
 */
static int assemble_locked(struct dg_pipe *p, struct dg_slot *sl, const uint64_t *ids, float *out,
                           struct oc_err *err)
{
    int have_disk = 0, rc = OC_OK;
    for (;;) {
        if (!have_disk && store_yield_missing(p->c.yield)) {
            pthread_mutex_lock(p->c.disk_mu);
            have_disk = 1;
            /* the reader's scratch first, outside the read side: the cache can give for it */
            if ((rc = store_disk_reserve(p->c.disk, sl->info.n_input, err)))
                break;
        }
        store_yield_read_lock(p->c.yield);
        uint64_t live = p->c.cache->n_live;
        uint64_t n = live < p->c.cache->n ? count_given_back(sl, live) : 0;
        if (n && !have_disk) { /* given back since the look: take the mutex first, again */
            store_yield_read_unlock(p->c.yield);
            continue;
        }
        if (n)
            rc = read_given_back(p, sl, ids, live, out, err);
        if (rc == OC_OK)
            assemble(p, sl, live, out);
        store_yield_read_unlock(p->c.yield);
        break;
    }
    if (have_disk)
        pthread_mutex_unlock(p->c.disk_mu);
    return rc;
}

int dg_pipe_assemble(struct dg_pipe *p, struct dg_slot *slot, const uint64_t *ids, float *out,
                     struct oc_err *err)
{
    double t0 = oc_now_s();
    int rc = read_rows(p, slot, out, err);
    if (rc == OC_OK)
        rc = assemble_locked(p, slot, ids, out, err);
    atomic_fetch_add(&p->assemble_us, (uint64_t)((oc_now_s() - t0) * 1e6));
    return rc;
}
