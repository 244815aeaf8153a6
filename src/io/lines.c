/*
 * lines.c — the line reader: plain text or gzip (detected by the magic bytes
 * 1f 8b), read in 1 MiB chunks through oc_file_pread_upto (so read fault
 * injection applies), split into NUL-terminated lines without "\n"/"\r\n".
 * A NUL byte inside a line is OC_ERR_FORMAT naming the file, line and column
 * (binary or zero-filled data, never text).
 *
 * Place in the data flow: io; the importers read edge lists, feature and
 * label text, OGB csv.gz files through here.
 *
 *   file --pread 1 MiB--> [raw] --inflate--> [buf: start ... scan ... end]
 *                         (gzip only)         lines are cut in place in buf
 *
 * gzip: inflateInit2(15 + 32) accepts gzip and zlib headers; concatenated
 * members are read one after another as gzip(1) does. Truncated or corrupt
 * data is OC_ERR_FORMAT naming the file and the line being read. zlib
 * allocates through oc_alloc (accounted, fault-injectable).
 *
 * Thread-safety: a reader belongs to one thread.
 * Ownership: the reader owns its file and buffers; a returned line points into
 * the reader's buffer and is valid until the next call.
 */
#include <inttypes.h>
#include <zlib.h>

#include "io/io_int.h"

#define LINE_CHUNK       (1u << 20)
#define LINE_MAX_DEFAULT ((size_t)64 << 20)

struct oc_line_reader {
    struct oc_file *f;
    uint64_t file_off;  /* next byte of the file to read */
    uint64_t file_size; /* size at open: a read that ends before it is a truncation */
    int file_eof;       /* the file has no more bytes */
    int text_eof;       /* no more text will arrive in buf */
    uint64_t lineno;    /* lines returned so far */
    size_t max_line;
    /* decoded text */
    char *buf;
    size_t cap, start, scan, end;
    /* gzip */
    int gz;
    int zs_ready;
    int zs_member_done; /* a member ended; more input may start another */
    z_stream zs;
    uint8_t *raw;
    int zalloc_status; /* status of a failed zlib allocation */
    struct oc_err *zalloc_err;
};

static voidpf line_zalloc(voidpf opaque, uInt items, uInt size)
{
    struct oc_line_reader *r = opaque;
    void *p = oc_calloc(items, size, "gzip inflate", r->zalloc_err);
    if (!p)
        r->zalloc_status = r->zalloc_err ? r->zalloc_err->status : OC_ERR_NOMEM;
    return p;
}

static void line_zfree(voidpf opaque, voidpf p)
{
    (void)opaque;
    oc_free(p);
}

void oc_line_reader_set_max_line(struct oc_line_reader *r, size_t bytes)
{
    r->max_line = bytes;
}

int oc_line_reader_open(const char *path, struct oc_line_reader **out, struct oc_err *err)
{
    struct oc_line_reader *r;
    uint8_t magic[2];
    size_t got;
    int rc;

    *out = NULL;
    r = oc_calloc(1, sizeof(*r), "line reader", err);
    if (!r)
        return err ? err->status : OC_ERR_NOMEM;
    r->max_line = LINE_MAX_DEFAULT;
    rc = oc_file_open(path, OC_FILE_READ, &r->f, err);
    if (rc)
        goto fail;
    rc = oc_file_size(r->f, &r->file_size, err);
    if (rc)
        goto fail;
    rc = oc_file_pread_upto(r->f, magic, sizeof(magic), 0, &got, err);
    if (rc)
        goto fail;
    r->gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    r->cap = 2 * (size_t)LINE_CHUNK;
    r->buf = oc_alloc(r->cap, "line reader buffer", err);
    if (!r->buf) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    if (r->gz) {
        r->raw = oc_alloc(LINE_CHUNK, "line reader gzip input", err);
        if (!r->raw) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto fail;
        }
        r->zs.zalloc = line_zalloc;
        r->zs.zfree = line_zfree;
        r->zs.opaque = r;
        r->zalloc_err = err;
        int zr = inflateInit2(&r->zs, 15 + 32);
        r->zalloc_err = NULL;
        if (zr != Z_OK) {
            rc = r->zalloc_status ? r->zalloc_status : OC_ERR_NOMEM;
            if (!r->zalloc_status)
                OC_ERR(err, rc, "%s: cannot start gzip decoding (zlib error %d)", path, zr);
            else
                oc_err_prefix(err, "%s", path);
            goto fail;
        }
        r->zs_ready = 1;
    }
    *out = r;
    return OC_OK;
fail:
    oc_line_reader_free(r);
    return rc;
}

void oc_line_reader_free(struct oc_line_reader *r)
{
    if (!r)
        return;
    if (r->zs_ready)
        inflateEnd(&r->zs);
    oc_file_close(r->f, NULL);
    oc_free(r->raw);
    oc_free(r->buf);
    oc_free(r);
}

uint64_t oc_line_reader_lineno(const struct oc_line_reader *r)
{
    return r->lineno;
}

uint64_t oc_line_reader_offset(const struct oc_line_reader *r)
{
    return r->file_off;
}

uint64_t oc_line_reader_size(const struct oc_line_reader *r)
{
    return r->file_size;
}

const char *oc_line_reader_path(const struct oc_line_reader *r)
{
    return oc_file_path(r->f);
}

/* Reads up to `room` bytes of the file at file_off into dst. */
static int read_chunk(struct oc_line_reader *r, void *dst, size_t room, size_t *got,
                      struct oc_err *err)
{
    size_t n = room < LINE_CHUNK ? room : LINE_CHUNK;
    int rc = oc_file_pread_upto(r->f, dst, n, r->file_off, got, err);
    if (rc)
        return rc;
    r->file_off += *got;
    if (*got < n) {
        if (r->file_off < r->file_size)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: truncated: read stopped at offset %llu of %llu bytes at line %llu",
                          oc_file_path(r->f), (unsigned long long)r->file_off,
                          (unsigned long long)r->file_size, (unsigned long long)r->lineno + 1);
        r->file_eof = 1;
    }
    return OC_OK;
}

/* The bad data follows all text decoded so far: name the line it falls in. */
static int gz_error(struct oc_line_reader *r, const char *what, struct oc_err *err)
{
    uint64_t line = r->lineno + 1;
    const char *p = r->buf + r->start, *e = r->buf + r->end;

    while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        line++;
        p++;
    }
    return OC_ERR(err, OC_ERR_FORMAT, "%s: %s gzip data at line %" PRIu64 "%s%s",
                  oc_file_path(r->f), what, line, r->zs.msg ? ": " : "",
                  r->zs.msg ? r->zs.msg : "");
}

/* Inflates into buf[end, cap - 1) until some output or end of input. */
static int fill_gz(struct oc_line_reader *r, struct oc_err *err)
{
    size_t room = r->cap - 1 - r->end;

    while (room > 0) {
        if (r->zs.avail_in == 0 && !r->file_eof) {
            size_t got;
            int rc = read_chunk(r, r->raw, LINE_CHUNK, &got, err);
            if (rc)
                return rc;
            r->zs.next_in = r->raw;
            r->zs.avail_in = (uInt)got;
        }
        if (r->zs.avail_in == 0 && r->file_eof) {
            if (!r->zs_member_done)
                return gz_error(r, "truncated", err);
            r->text_eof = 1;
            return OC_OK;
        }
        if (r->zs_member_done) {
            /* Another member follows (concatenated gzip, as gzip -d reads it). */
            if (inflateReset(&r->zs) != Z_OK)
                return gz_error(r, "corrupt", err);
            r->zs_member_done = 0;
        }
        r->zs.next_out = (Bytef *)r->buf + r->end;
        r->zs.avail_out = (uInt)room;
        r->zalloc_err = err;
        int zr = inflate(&r->zs, Z_NO_FLUSH);
        r->zalloc_err = NULL;
        size_t produced = room - r->zs.avail_out;
        r->end += produced;
        room -= produced;
        if (zr == Z_STREAM_END) {
            r->zs_member_done = 1;
        } else if (zr == Z_MEM_ERROR) {
            if (r->zalloc_status)
                return oc_err_prefix(err, "%s", oc_file_path(r->f));
            return OC_ERR(err, OC_ERR_NOMEM, "%s: gzip decoding out of memory", oc_file_path(r->f));
        } else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_STREAM_ERROR) {
            return gz_error(r, "corrupt", err);
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            return gz_error(r, "corrupt", err);
        }
        if (produced > 0)
            return OC_OK;
    }
    return OC_OK;
}

/* Appends more text to buf[end, cap - 1) (one byte stays free for a final NUL). */
static int fill(struct oc_line_reader *r, struct oc_err *err)
{
    size_t got;
    int rc;

    if (r->gz)
        return fill_gz(r, err);
    if (r->file_eof) {
        r->text_eof = 1;
        return OC_OK;
    }
    rc = read_chunk(r, r->buf + r->end, r->cap - 1 - r->end, &got, err);
    if (rc)
        return rc;
    r->end += got;
    if (got == 0)
        r->text_eof = 1;
    return OC_OK;
}

static int line_too_long(struct oc_line_reader *r, struct oc_err *err)
{
    return OC_ERR(err, OC_ERR_FORMAT, "%s: line %" PRIu64 " is longer than %zu bytes",
                  oc_file_path(r->f), r->lineno + 1, r->max_line);
}

/* Makes room after end: moves the partial line to the front, or grows the buffer. */
static int make_room(struct oc_line_reader *r, struct oc_err *err)
{
    if (r->start > 0) {
        size_t n = r->end - r->start;
        memmove(r->buf, r->buf + r->start, n);
        r->scan -= r->start;
        r->end = n;
        r->start = 0;
    }
    if (r->cap - 1 - r->end >= LINE_CHUNK / 2)
        return OC_OK;
    /* Room for max_line bytes plus "\r\n" and the NUL. */
    size_t limit = r->max_line + 3;
    if (r->cap >= limit)
        return OC_OK;
    size_t cap = r->cap * 2 < limit ? r->cap * 2 : limit;
    char *nb = oc_realloc(r->buf, cap, "line reader buffer", err);
    if (!nb)
        return err ? err->status : OC_ERR_NOMEM;
    r->buf = nb;
    r->cap = cap;
    return OC_OK;
}

int oc_line_reader_next(struct oc_line_reader *r, char **line, size_t *len, struct oc_err *err)
{
    *line = NULL;
    *len = 0;
    for (;;) {
        char *nl = memchr(r->buf + r->scan, '\n', r->end - r->scan);
        if (nl || (r->text_eof && r->start < r->end)) {
            char *s = r->buf + r->start;
            size_t n = nl ? (size_t)(nl - s) : r->end - r->start;
            r->start = nl ? (size_t)(nl - r->buf) + 1 : r->end;
            r->scan = r->start;
            if (n > 0 && s[n - 1] == '\r')
                n--;
            if (n > r->max_line)
                return line_too_long(r, err);
            const char *nul = memchr(s, '\0', n);
            if (nul)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "%s: line %" PRIu64 " has a NUL byte at column %zu (binary or "
                              "zero-filled data, not text)",
                              oc_file_path(r->f), r->lineno + 1, (size_t)(nul - s) + 1);
            s[n] = '\0';
            r->lineno++;
            *line = s;
            *len = n;
            return OC_OK;
        }
        if (r->text_eof)
            return OC_OK;
        r->scan = r->end;
        if (r->end - r->start > r->max_line + 1)
            return line_too_long(r, err);
        if (r->cap - 1 - r->end < LINE_CHUNK / 2 || r->start > 0) {
            int rc = make_room(r, err);
            if (rc)
                return rc;
        }
        if (r->cap - 1 == r->end)
            return line_too_long(r, err);
        int rc = fill(r, err);
        if (rc)
            return rc;
    }
}
