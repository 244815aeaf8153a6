/*
 * writer.c — the buffered sequential writer: appends to a new or truncated
 * file through one aligned buffer, written with large O_DIRECT pwrite calls
 * where the filesystem allows (buffered otherwise), fsynced on close.
 *
 * Place in the data flow: io; the dataset builder, importers, the generator
 * and the planner write their large outputs (.npy arrays, sorted runs,
 * packed chunks) through here.
 *
 *   file:   [ flushed: whole buffers ][ used (in memory) ]
 *   close:  pad the tail to OC_IO_ALIGN with zeros, write it, truncate the
 *           file back to flushed + used, fsync, close.
 *
 * Thread-safety: a writer belongs to one thread.
 * Ownership: the writer owns its file and buffer; close and abort free it.
 * After a failed write the writer only reports the failure again; the caller
 * aborts it (and removes the partial file).
 */
#include <inttypes.h>

#include "io/io_int.h"

struct oc_writer {
    struct oc_file *f;
    uint8_t *buf;
    size_t cap;
    size_t used;
    uint64_t flushed;
    int failed; /* status of the first failure, 0 if none */
};

int oc_writer_open(const char *path, size_t buf_bytes, struct oc_writer **out, struct oc_err *err)
{
    struct oc_writer *w;
    int rc;

    *out = NULL;
    w = oc_calloc(1, sizeof(*w), "io writer", err);
    if (!w)
        return err ? err->status : OC_ERR_NOMEM;
    w->cap = (size_t)oc_io_align_up(buf_bytes < OC_IO_ALIGN ? OC_IO_ALIGN : buf_bytes);
    w->buf = oc_io_buf_alloc(w->cap, "io writer buffer", err);
    if (!w->buf) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    rc = oc_file_open(path, OC_FILE_WRITE | OC_FILE_TRUNC | OC_FILE_DIRECT, &w->f, err);
    if (rc)
        goto fail;
    *out = w;
    return OC_OK;
fail:
    oc_free(w->buf);
    oc_free(w);
    return rc;
}

static int writer_flush(struct oc_writer *w, size_t n, struct oc_err *err)
{
    int rc = oc_file_pwrite(w->f, w->buf, n, w->flushed, err);
    if (rc) {
        w->failed = rc;
        return rc;
    }
    w->flushed += n;
    w->used = 0;
    return OC_OK;
}

int oc_writer_write(struct oc_writer *w, const void *data, size_t len, struct oc_err *err)
{
    const uint8_t *p = data;

    if (w->failed)
        return OC_ERR(err, w->failed, "%s: write after an earlier failure", oc_file_path(w->f));
    while (len > 0) {
        size_t n = w->cap - w->used;
        if (n > len)
            n = len;
        memcpy(w->buf + w->used, p, n);
        w->used += n;
        p += n;
        len -= n;
        if (w->used == w->cap) {
            int rc = writer_flush(w, w->cap, err);
            if (rc)
                return rc;
        }
    }
    return OC_OK;
}

uint64_t oc_writer_offset(const struct oc_writer *w)
{
    return w->flushed + w->used;
}

int oc_writer_close(struct oc_writer *w, struct oc_err *err)
{
    int rc = OC_OK, crc;

    if (!w)
        return OC_OK;
    if (w->failed) {
        rc = OC_ERR(err, w->failed, "%s: close after an earlier failure", oc_file_path(w->f));
        goto out;
    }
    if (w->used > 0) {
        uint64_t size = w->flushed + w->used;
        size_t n = w->used;
        if (oc_file_is_direct(w->f)) {
            n = (size_t)oc_io_align_up(w->used);
            memset(w->buf + w->used, 0, n - w->used);
        }
        rc = writer_flush(w, n, err);
        if (rc)
            goto out;
        if (w->flushed != size) {
            rc = oc_file_truncate(w->f, size, err);
            if (rc)
                goto out;
            w->flushed = size;
        }
    }
    rc = oc_file_sync(w->f, err);
out:
    /* Close even after a failure; report the first error. */
    crc = oc_file_close(w->f, rc ? NULL : err);
    if (!rc)
        rc = crc;
    oc_free(w->buf);
    oc_free(w);
    return rc;
}

void oc_writer_abort(struct oc_writer *w)
{
    if (!w)
        return;
    oc_file_close(w->f, NULL);
    oc_free(w->buf);
    oc_free(w);
}
