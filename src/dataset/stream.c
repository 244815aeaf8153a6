/*
 * stream.c — a chunked, checksumming sequential reader over one array file
 * (see struct oc_ds_stream in dataset_int.h). Validation and `offcore info`
 * scan files of any size through it with one fixed buffer, O_DIRECT where the
 * filesystem allows it so a scan does not flood the page cache.
 *
 * Place in the data flow: dataset (dataset_open.c, info.c).
 * Thread-safety: a stream belongs to one thread.
 * Ownership: the stream owns its file and buffer until oc_ds_stream_close.
 */
#include <inttypes.h>
#include <string.h>

#include "dataset/dataset_int.h"

int oc_ds_stream_open(struct oc_ds_stream *s, const char *path, uint64_t data_offset, size_t cap,
                      struct oc_err *err)
{
    int rc;
    memset(s, 0, sizeof(*s));
    s->path = path;
    s->cap = (size_t)oc_io_align_up(cap ? cap : OC_DS_CHUNK_BYTES);
    s->data_offset = data_offset;
    s->crc = 0; /* the CRC-32 of nothing */
    if ((rc = oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &s->f, err)))
        return rc;
    if ((rc = oc_file_size(s->f, &s->size, err)))
        goto fail;
    if (s->cap > oc_io_align_up(s->size) && s->size > 0)
        s->cap = (size_t)oc_io_align_up(s->size); /* small files: small buffer */
    if (!(s->buf = oc_io_buf_alloc(s->cap, "dataset scan", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    return OC_OK;
fail:
    oc_ds_stream_close(s);
    return rc;
}

int oc_ds_stream_next(struct oc_ds_stream *s, const uint8_t **p, size_t *n, struct oc_err *err)
{
    for (;;) {
        *p = NULL;
        *n = 0;
        if (s->off >= s->size)
            return OC_OK;
        size_t got;
        int rc = oc_file_pread_upto(s->f, s->buf, s->cap, s->off, &got, err);
        if (rc)
            return rc;
        if (got == 0)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: truncated: file ends at %" PRIu64 ", expected %" PRIu64 " bytes",
                          s->path, s->off, s->size);
        s->crc = oc_crc32(s->crc, s->buf, got);
        uint64_t start = s->off;
        s->off += got;
        if (s->off <= s->data_offset)
            continue; /* still inside the header */
        size_t skip = start < s->data_offset ? (size_t)(s->data_offset - start) : 0;
        *p = s->buf + skip;
        *n = got - skip;
        return OC_OK;
    }
}

int oc_ds_stream_next_elem(struct oc_ds_stream *s, size_t esize, uint64_t *v, struct oc_err *err)
{
    if (s->cur_pos + esize > s->cur_len) {
        int rc = oc_ds_stream_next(s, &s->cur, &s->cur_len, err);
        if (rc)
            return rc;
        s->cur_pos = 0;
        if (s->cur_len < esize)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: unexpected end of data at offset %" PRIu64,
                          s->path, s->off);
    }
    *v = oc_ds_get_uint(s->cur, esize, s->cur_pos / esize);
    s->cur_pos += esize;
    return OC_OK;
}

void oc_ds_stream_close(struct oc_ds_stream *s)
{
    if (s->f) {
        struct oc_err ignored;
        oc_file_close(s->f, &ignored);
    }
    oc_free(s->buf);
    memset(s, 0, sizeof(*s));
}
