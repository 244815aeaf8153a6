/*
 * write_behind.c — positional writes handed to a thread of their own: the
 * caller fills one of a few buffers and queues it with its offset; the
 * thread writes queued buffers in order (oc_file_pwrite, so the fault
 * points apply) and hands them back. The caller's copying overlaps the
 * writes' time in the kernel (page-cache copies, dirty-page throttling
 * inside a memory cgroup), which was half of diskgnn's packing time.
 *
 *   caller:  buf ◄── free ◄──┐
 *            fill, put ──► queue ──► thread: pwrite ──┘
 *
 * oc_write_behind_copy fills the buffers itself: bytes that follow the
 * ones before them in the file join their buffer, anything else starts
 * the next one (coalesced writes from scattered copies).
 *
 * The first failed write is the error every later buf, put, copy and flush
 * returns (its message names the file); queued writes after it are
 * dropped. Writes never overlap in the file (the caller's ranges), so their
 * order does not matter for the result, only for the error's.
 *
 * Place in the data flow: io; diskgnn's packers write chunks through it.
 * Thread-safety: one caller thread (buf, put, flush, free) and the writer
 * thread; the queue, the free list and the error are under one mutex.
 * Ownership: the write-behind owns its buffers and thread, not the file
 * (which must stay open until flush or free returns).
 */
#include <pthread.h>
#include <string.h>

#include "io/io_int.h"

struct job {
    uint8_t *buf;
    size_t len;
    uint64_t off;
};

struct oc_write_behind {
    struct oc_file *f;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job queued, a buffer back, stop set */
    uint8_t *mem;      /* every buffer, one after the other */
    uint8_t **free_bufs;
    unsigned n_free, n_bufs;
    struct job *q; /* circular, n_bufs entries */
    unsigned q_head, q_len;
    int busy; /* the thread is writing a job */
    int stop;
    int status; /* of the first failed write, OC_OK if none */
    struct oc_err err;
    size_t buf_bytes;
    /* oc_write_behind_copy's buffer being filled (the caller's): bytes from fill_off */
    uint8_t *fill;
    size_t fill_len;
    uint64_t fill_off;
};

static void *run(void *arg)
{
    struct oc_write_behind *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->q_len == 0 && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->q_len == 0)
            break; /* stopped, nothing left */
        struct job j = w->q[w->q_head];
        w->q_head = (w->q_head + 1) % w->n_bufs;
        w->q_len--;
        w->busy = 1;
        int failed = w->status != OC_OK;
        pthread_mutex_unlock(&w->mu);
        struct oc_err e;
        int rc = failed ? OC_OK : oc_file_pwrite(w->f, j.buf, j.len, j.off, &e);
        pthread_mutex_lock(&w->mu);
        if (rc && w->status == OC_OK) {
            w->status = rc;
            w->err = e;
        }
        w->busy = 0;
        w->free_bufs[w->n_free++] = j.buf;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int oc_write_behind_new(struct oc_file *f, unsigned n_bufs, size_t buf_bytes,
                        struct oc_write_behind **out, struct oc_err *err)
{
    struct oc_write_behind *w = oc_calloc(1, sizeof(*w), "io write-behind", err);
    *out = NULL;
    if (!w)
        return err->status;
    w->f = f;
    w->n_bufs = n_bufs ? n_bufs : 1;
    w->buf_bytes = buf_bytes ? buf_bytes : 1;
    w->free_bufs = oc_calloc(w->n_bufs, sizeof(*w->free_bufs), "io write-behind", err);
    w->q = oc_calloc(w->n_bufs, sizeof(*w->q), "io write-behind", err);
    w->mem = oc_alloc(w->n_bufs * w->buf_bytes, "io write-behind", err);
    int rc = w->free_bufs && w->q && w->mem ? OC_OK : err->status;
    for (unsigned i = 0; rc == OC_OK && i < w->n_bufs; i++)
        w->free_bufs[w->n_free++] = w->mem + i * w->buf_bytes;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (rc == OC_OK && (rc = pthread_create(&w->thread, NULL, run, w)) != 0)
        rc =
            OC_ERR_ERRNO(err, OC_ERR_IO, rc, "%s: cannot start its writer thread", oc_file_path(f));
    if (rc) {
        oc_free(w->mem);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        oc_free(w->free_bufs);
        oc_free(w->q);
        oc_free(w);
        return rc;
    }
    *out = w;
    return OC_OK;
}

/* The first failure, copied into err (the caller's mutex held). */
static int failed(struct oc_write_behind *w, struct oc_err *err)
{
    if (err)
        *err = w->err;
    return w->status;
}

void *oc_write_behind_buf(struct oc_write_behind *w, struct oc_err *err)
{
    pthread_mutex_lock(&w->mu);
    while (w->n_free == 0 && w->status == OC_OK)
        pthread_cond_wait(&w->cv, &w->mu);
    void *buf = NULL;
    if (w->status != OC_OK)
        failed(w, err);
    else
        buf = w->free_bufs[--w->n_free];
    pthread_mutex_unlock(&w->mu);
    return buf;
}

int oc_write_behind_put(struct oc_write_behind *w, void *buf, size_t len, uint64_t off,
                        struct oc_err *err)
{
    OC_ASSERT(len <= w->buf_bytes && (uint8_t *)buf >= w->mem &&
              (uint8_t *)buf < w->mem + (size_t)w->n_bufs * w->buf_bytes);
    pthread_mutex_lock(&w->mu);
    OC_ASSERT(w->q_len < w->n_bufs);
    w->q[(w->q_head + w->q_len) % w->n_bufs] = (struct job){buf, len, off};
    w->q_len++;
    int rc = w->status != OC_OK ? failed(w, err) : OC_OK;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* Queues the buffer oc_write_behind_copy was filling, if any. */
static int put_fill(struct oc_write_behind *w, struct oc_err *err)
{
    uint8_t *buf = w->fill;
    w->fill = NULL;
    return buf ? oc_write_behind_put(w, buf, w->fill_len, w->fill_off, err) : OC_OK;
}

int oc_write_behind_copy(struct oc_write_behind *w, const void *src, size_t len, uint64_t off,
                         struct oc_err *err)
{
    int rc;
    if (w->fill && (off != w->fill_off + w->fill_len || w->fill_len + len > w->buf_bytes) &&
        (rc = put_fill(w, err)))
        return rc;
    if (len > w->buf_bytes) /* larger than a buffer: written now (ranges never overlap) */
        return oc_file_pwrite(w->f, src, len, off, err);
    if (!w->fill) {
        if (!(w->fill = oc_write_behind_buf(w, err)))
            return w->status;
        w->fill_off = off;
        w->fill_len = 0;
    }
    memcpy(w->fill + w->fill_len, src, len);
    w->fill_len += len;
    return OC_OK;
}

int oc_write_behind_flush(struct oc_write_behind *w, struct oc_err *err)
{
    int rc = put_fill(w, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&w->mu);
    while (w->q_len > 0 || w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    rc = w->status != OC_OK ? failed(w, err) : OC_OK;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void oc_write_behind_free(struct oc_write_behind *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL); /* writes what is queued (or drops it after a failure) */
    OC_ASSERT(w->q_len == 0 && !w->busy);
    oc_free(w->mem); /* a buffer the caller took and never put goes with the rest */
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    oc_free(w->free_bufs);
    oc_free(w->q);
    oc_free(w);
}
