/*
 * npy.c — the .npy array file: header parsing (versions 1.0-3.0) and
 * formatting (padded to 4096 bytes so data is page-aligned), reading a file's
 * header, a streaming writer that checksums every byte, and whole-array
 * loading with dtype conversion and range checks.
 *
 *   offset 0      "\x93NUMPY" 0x01 0x00 <u16 header_len = 4086>
 *   offset 10     "{'descr': '<f4', 'fortran_order': False, 'shape': (N, F), }"
 *                 spaces ... '\n'                      (byte 4095)
 *   offset 4096   data, C order, little-endian, no padding
 *
 * Place in the data flow: dataset; the builder, importers and validation use
 * it. Thread-safety: all functions are reentrant; a writer belongs to one
 * thread. Ownership: a writer is freed by _close or _abort; load_as returns
 * an oc_alloc'd array owned by the caller.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* ---- header parsing ----------------------------------------------------- */

struct hparse {
    const char *p, *end;
    const char *what;
    struct oc_err *err;
};

static void hp_ws(struct hparse *hp)
{
    while (hp->p < hp->end && (*hp->p == ' ' || *hp->p == '\t' || *hp->p == '\n' || *hp->p == '\r'))
        hp->p++;
}

static int hp_fail(struct hparse *hp, const char *problem)
{
    return OC_ERR(hp->err, OC_ERR_FORMAT, "%s: malformed .npy header: %s", hp->what, problem);
}

/* A quoted Python string literal (no escapes) into out. */
static int hp_string(struct hparse *hp, char *out, size_t cap)
{
    if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"'))
        return hp_fail(hp, "expected a quoted string");
    char q = *hp->p++;
    size_t n = 0;
    while (hp->p < hp->end && *hp->p != q) {
        if (*hp->p == '\\' || *hp->p == '\0' || n + 1 >= cap)
            return hp_fail(hp, "bad string (escape, NUL or too long)");
        out[n++] = *hp->p++;
    }
    if (hp->p >= hp->end)
        return hp_fail(hp, "unterminated string");
    hp->p++;
    out[n] = '\0';
    return OC_OK;
}

static int hp_uint(struct hparse *hp, uint64_t *v)
{
    if (hp->p < hp->end && *hp->p == '-')
        return OC_ERR(hp->err, OC_ERR_FORMAT, "%s: negative dimension in .npy shape", hp->what);
    if (hp->p >= hp->end || *hp->p < '0' || *hp->p > '9')
        return hp_fail(hp, "expected a dimension");
    uint64_t x = 0;
    while (hp->p < hp->end && *hp->p >= '0' && *hp->p <= '9') {
        unsigned d = (unsigned)(*hp->p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return OC_ERR(hp->err, OC_ERR_FORMAT, "%s: .npy shape dimension overflows 64 bits",
                          hp->what);
        x = x * 10 + d;
        hp->p++;
    }
    if (hp->p < hp->end && *hp->p == 'L') /* Python 2 long */
        hp->p++;
    *v = x;
    return OC_OK;
}

static int hp_shape(struct hparse *hp, struct oc_npy_header *h)
{
    if (hp->p >= hp->end || *hp->p != '(')
        return hp_fail(hp, "shape is not a tuple");
    hp->p++;
    h->ndim = 0;
    for (;;) {
        hp_ws(hp);
        if (hp->p < hp->end && *hp->p == ')')
            break;
        if (h->ndim == OC_NPY_MAX_DIMS)
            return OC_ERR(hp->err, OC_ERR_FORMAT, "%s: .npy shape has more than %d dimensions",
                          hp->what, OC_NPY_MAX_DIMS);
        int rc = hp_uint(hp, &h->shape[h->ndim]);
        if (rc)
            return rc;
        h->ndim++;
        hp_ws(hp);
        if (hp->p < hp->end && *hp->p == ',') {
            hp->p++;
            continue;
        }
        if (hp->p < hp->end && *hp->p == ')')
            break;
        return hp_fail(hp, "expected ',' or ')' in shape");
    }
    hp->p++;
    return OC_OK;
}

/* Maps a numpy descr to our dtype; rejects big-endian, object and others by name. */
static int descr_to_dtype(const char *d, const char *what, enum oc_dtype *t, int *is_bool,
                          struct oc_err *err)
{
    char order = d[0];
    const char *code = d;
    if (order == '<' || order == '>' || order == '|' || order == '=')
        code = d + 1;
    else
        order = '=';
    if (strchr(code, 'O'))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: object dtype '%s' not supported", what, d);
    static const struct {
        const char *code;
        enum oc_dtype t;
    } codes[] = {
        {"u1", OC_DTYPE_U8},  {"b1", OC_DTYPE_U8},  {"i4", OC_DTYPE_I32},
        {"u4", OC_DTYPE_U32}, {"i8", OC_DTYPE_I64}, {"u8", OC_DTYPE_U64},
        {"f2", OC_DTYPE_F16}, {"f4", OC_DTYPE_F32}, {"f8", OC_DTYPE_F64},
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (strcmp(code, codes[i].code) != 0)
            continue;
        if (order == '>' && oc_dtype_size(codes[i].t) > 1)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: big-endian dtype '%s' not supported", what, d);
        *t = codes[i].t;
        *is_bool = strcmp(code, "b1") == 0;
        return OC_OK;
    }
    return OC_ERR(err, OC_ERR_FORMAT, "%s: unsupported dtype '%s'", what, d);
}

int oc_npy_parse_header(const void *buf, size_t len, const char *what, struct oc_npy_header *h,
                        struct oc_err *err)
{
    const uint8_t *b = buf;
    if (!what)
        what = "(npy)";
    memset(h, 0, sizeof(*h));
    if (len < 10)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: truncated .npy header (%zu bytes)", what, len);
    if (memcmp(b, npy_magic, sizeof(npy_magic)) != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: not a .npy file (bad magic)", what);
    unsigned major = b[6], minor = b[7];
    uint64_t hlen, prefix;
    if (major == 1) {
        hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8;
        prefix = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: truncated .npy header (%zu bytes)", what, len);
        hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
        prefix = 12;
    } else {
        return OC_ERR(err, OC_ERR_FORMAT, "%s: unsupported .npy version %u.%u", what, major, minor);
    }
    if (hlen > OC_NPY_MAX_HEADER_BYTES)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: .npy header length %" PRIu64 " too large", what,
                      hlen);
    if (len < prefix + hlen)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: truncated .npy header: needs %" PRIu64 " bytes, have %zu", what,
                      prefix + hlen, len);
    h->data_offset = prefix + hlen;

    struct hparse hp = {(const char *)b + prefix, (const char *)b + prefix + hlen, what, err};
    int have_descr = 0, have_fortran = 0, have_shape = 0, rc;
    char key[32], descr[32];
    hp_ws(&hp);
    if (hp.p >= hp.end || *hp.p != '{')
        return hp_fail(&hp, "expected '{'");
    hp.p++;
    for (;;) {
        hp_ws(&hp);
        if (hp.p < hp.end && *hp.p == '}')
            break;
        if ((rc = hp_string(&hp, key, sizeof(key))))
            return rc;
        hp_ws(&hp);
        if (hp.p >= hp.end || *hp.p != ':')
            return hp_fail(&hp, "expected ':'");
        hp.p++;
        hp_ws(&hp);
        int *seen;
        if (strcmp(key, "descr") == 0) {
            seen = &have_descr;
            if ((rc = hp_string(&hp, descr, sizeof(descr))))
                return rc;
        } else if (strcmp(key, "fortran_order") == 0) {
            seen = &have_fortran;
            size_t left = (size_t)(hp.end - hp.p);
            if (left >= 4 && memcmp(hp.p, "True", 4) == 0) {
                h->fortran_order = 1;
                hp.p += 4;
            } else if (left >= 5 && memcmp(hp.p, "False", 5) == 0) {
                h->fortran_order = 0;
                hp.p += 5;
            } else {
                return hp_fail(&hp, "fortran_order is not True or False");
            }
        } else if (strcmp(key, "shape") == 0) {
            seen = &have_shape;
            if ((rc = hp_shape(&hp, h)))
                return rc;
        } else {
            return OC_ERR(err, OC_ERR_FORMAT, "%s: unexpected key '%s' in .npy header", what, key);
        }
        if (*seen)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: duplicate key '%s' in .npy header", what, key);
        *seen = 1;
        hp_ws(&hp);
        if (hp.p < hp.end && *hp.p == ',') {
            hp.p++;
            continue;
        }
        if (hp.p < hp.end && *hp.p == '}')
            break;
        return hp_fail(&hp, "expected ',' or '}'");
    }
    hp.p++;
    hp_ws(&hp);
    if (hp.p != hp.end)
        return hp_fail(&hp, "trailing characters after the dict");
    if (!have_descr || !have_fortran || !have_shape)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: .npy header lacks '%s'", what,
                      !have_descr     ? "descr"
                      : !have_fortran ? "fortran_order"
                                      : "shape");
    if ((rc = descr_to_dtype(descr, what, &h->dtype, &h->is_bool, err)))
        return rc;
    return OC_OK;
}

int oc_npy_require_c_order(const struct oc_npy_header *h, const char *what, struct oc_err *err)
{
    int both = h->ndim >= 2 && h->shape[0] > 1 && h->shape[1] > 1;
    for (unsigned i = 2; both && i < h->ndim && i < OC_NPY_MAX_DIMS; i++)
        both = h->shape[i] > 1;
    if (h->fortran_order && h->ndim >= 2 && both)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: fortran_order True not supported here (save the array in C order: "
                      "np.ascontiguousarray)",
                      what);
    return OC_OK;
}

int oc_npy_n_elems(const struct oc_npy_header *h, uint64_t *n, struct oc_err *err)
{
    uint64_t x = 1;
    for (unsigned i = 0; i < h->ndim && i < OC_NPY_MAX_DIMS; i++) {
        if (h->shape[i] != 0 && x > UINT64_MAX / h->shape[i])
            return OC_ERR(err, OC_ERR_FORMAT, ".npy shape element count overflows 64 bits");
        x *= h->shape[i];
    }
    *n = x;
    return OC_OK;
}

/* Data bytes of a header, with overflow checks. */
static int npy_data_bytes(const struct oc_npy_header *h, const char *what, uint64_t *bytes,
                          struct oc_err *err)
{
    uint64_t n = 0;
    int rc = oc_npy_n_elems(h, &n, err);
    if (rc)
        return oc_err_prefix(err, "%s", what);
    uint64_t es = oc_dtype_size(h->dtype);
    if (n > (UINT64_MAX - h->data_offset) / es)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: .npy data size overflows 64 bits", what);
    *bytes = n * es;
    return OC_OK;
}

/* ---- header formatting -------------------------------------------------- */

int oc_npy_format_header(enum oc_dtype dtype, unsigned ndim, const uint64_t *shape,
                         uint8_t out[OC_NPY_HEADER_BYTES], struct oc_err *err)
{
    if ((unsigned)dtype >= OC_DTYPE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "npy header: invalid dtype %d", (int)dtype);
    if (ndim > OC_NPY_MAX_DIMS)
        return OC_ERR(err, OC_ERR_ARG, "npy header: %u dimensions (at most %d)", ndim,
                      OC_NPY_MAX_DIMS);
    char shp[OC_NPY_MAX_DIMS * 24 + 8];
    size_t n = 0;
    shp[n++] = '(';
    for (unsigned i = 0; i < ndim; i++)
        n += (size_t)snprintf(shp + n, sizeof(shp) - n, i ? ", %" PRIu64 : "%" PRIu64, shape[i]);
    if (ndim == 1)
        shp[n++] = ',';
    shp[n++] = ')';
    shp[n] = '\0';

    const size_t prefix = 10, hlen = OC_NPY_HEADER_BYTES - prefix;
    memset(out, ' ', OC_NPY_HEADER_BYTES);
    memcpy(out, npy_magic, sizeof(npy_magic));
    out[6] = 1;
    out[7] = 0;
    out[8] = (uint8_t)(hlen & 0xff);
    out[9] = (uint8_t)(hlen >> 8);
    char dict[256];
    int dn = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      oc_dtype_descr(dtype), shp);
    memcpy(out + prefix, dict, (size_t)dn);
    out[OC_NPY_HEADER_BYTES - 1] = '\n';
    return OC_OK;
}

/* Closes a file on a path that already failed or only read (close errors moot). */
static void file_close_quiet(struct oc_file *f)
{
    struct oc_err ignored;
    if (f)
        oc_file_close(f, &ignored);
}

/* ---- reading a file's header -------------------------------------------- */

/* Reads and parses the header of an open file; *size = the file's size. */
static int npy_read_header_f(struct oc_file *f, const char *path, struct oc_npy_header *h,
                             uint64_t *size, struct oc_err *err)
{
    uint8_t *buf = NULL;
    int rc = oc_file_size(f, size, err);
    if (rc)
        return rc;
    size_t cap = OC_NPY_HEADER_BYTES, got;
    if (!(buf = oc_alloc(cap, "npy header", err)))
        return err ? err->status : OC_ERR_NOMEM;
    if ((rc = oc_file_pread_upto(f, buf, cap, 0, &got, err)))
        goto out;
    if (got >= 12 && memcmp(buf, npy_magic, sizeof(npy_magic)) == 0) {
        /* Headers may be longer than one page (any version): read all of it. */
        uint64_t need = buf[6] == 1 ? 10 + ((uint64_t)buf[8] | (uint64_t)buf[9] << 8)
                                    : 12 + ((uint64_t)buf[8] | (uint64_t)buf[9] << 8 |
                                            (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24);
        if (need > cap && need <= OC_NPY_MAX_HEADER_BYTES + 12 && need <= *size) {
            uint8_t *nb = oc_realloc(buf, (size_t)need, "npy header", err);
            if (!nb) {
                rc = err ? err->status : OC_ERR_NOMEM;
                goto out;
            }
            buf = nb;
            cap = (size_t)need;
            if ((rc = oc_file_pread_upto(f, buf, cap, 0, &got, err)))
                goto out;
        }
    }
    rc = oc_npy_parse_header(buf, got, path, h, err);
out:
    oc_free(buf);
    return rc;
}

int oc_npy_read_header(const char *path, struct oc_npy_header *h, struct oc_err *err)
{
    struct oc_file *f = NULL;
    uint64_t size, data_bytes = 0;
    int rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc)
        return rc;
    if ((rc = npy_read_header_f(f, path, h, &size, err)))
        goto out;
    if ((rc = npy_data_bytes(h, path, &data_bytes, err)))
        goto out;
    if (size - h->data_offset < data_bytes)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: truncated: shape needs %" PRIu64 " data bytes after the %" PRIu64
                    "-byte header, the file has %" PRIu64,
                    path, data_bytes, h->data_offset, size - h->data_offset);
out:
    file_close_quiet(f);
    return rc;
}

/* ---- streaming writer --------------------------------------------------- */

struct oc_npy_writer {
    struct oc_writer *w;
    char *path;
    uint64_t want, got; /* data bytes */
    uint64_t file_bytes;
    uint32_t crc;
    unsigned ndim;
    uint64_t shape[OC_NPY_MAX_DIMS];
};

static void writer_free(struct oc_npy_writer *w, int unlink_file)
{
    if (!w)
        return;
    oc_writer_abort(w->w);
    if (unlink_file)
        unlink(w->path);
    oc_free(w->path);
    oc_free(w);
}

int oc_npy_writer_open(const char *path, enum oc_dtype dtype, unsigned ndim, const uint64_t *shape,
                       struct oc_npy_writer **out, struct oc_err *err)
{
    struct oc_npy_writer *w = NULL;
    uint8_t *hdr = NULL;
    int rc;
    *out = NULL;
    struct oc_npy_header h = {.dtype = dtype, .ndim = ndim, .data_offset = OC_NPY_HEADER_BYTES};
    if (ndim > OC_NPY_MAX_DIMS || (unsigned)dtype >= OC_DTYPE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "%s: invalid dtype or %u dimensions", path, ndim);
    for (unsigned i = 0; i < ndim; i++)
        h.shape[i] = shape[i];
    uint64_t data_bytes = 0;
    if (npy_data_bytes(&h, path, &data_bytes, err))
        return OC_ERR(err, OC_ERR_ARG, "%s: shape too large (size overflows 64 bits)", path);
    if (!(hdr = oc_alloc(OC_NPY_HEADER_BYTES, "npy header", err)))
        return err ? err->status : OC_ERR_NOMEM;
    if ((rc = oc_npy_format_header(dtype, ndim, shape, hdr, err)))
        goto fail;
    if (!(w = oc_calloc(1, sizeof(*w), "npy writer", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    if (!(w->path = oc_strdup(path, "npy writer", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    w->want = data_bytes;
    w->ndim = ndim;
    memcpy(w->shape, h.shape, sizeof(w->shape));
    size_t buf_bytes = OC_NPY_WRITER_BUF; /* small arrays get a small buffer */
    if (OC_NPY_HEADER_BYTES + data_bytes < buf_bytes)
        buf_bytes = (size_t)oc_io_align_up(OC_NPY_HEADER_BYTES + data_bytes);
    if ((rc = oc_writer_open(path, buf_bytes, &w->w, err)))
        goto fail;
    if ((rc = oc_writer_write(w->w, hdr, OC_NPY_HEADER_BYTES, err)))
        goto fail_unlink;
    w->crc = oc_crc32(0, hdr, OC_NPY_HEADER_BYTES);
    oc_free(hdr);
    *out = w;
    return OC_OK;
fail_unlink:
    writer_free(w, 1);
    oc_free(hdr);
    return rc;
fail:
    writer_free(w, 0);
    oc_free(hdr);
    return rc;
}

int oc_npy_writer_append(struct oc_npy_writer *w, const void *data, size_t bytes,
                         struct oc_err *err)
{
    if (bytes > w->want - w->got)
        return OC_ERR(err, OC_ERR_ARG,
                      "%s: writing %zu bytes past the end of the shape (%" PRIu64 " of %" PRIu64
                      " data bytes written)",
                      w->path, bytes, w->got, w->want);
    int rc = oc_writer_write(w->w, data, bytes, err);
    if (rc)
        return rc;
    w->crc = oc_crc32(w->crc, data, bytes);
    w->got += bytes;
    return OC_OK;
}

int oc_npy_writer_close(struct oc_npy_writer *w, uint64_t *file_bytes, uint32_t *crc,
                        struct oc_err *err)
{
    int rc;
    if (w->got != w->want) {
        rc = OC_ERR(err, OC_ERR_ARG,
                    "%s: closed after %" PRIu64 " of the shape's %" PRIu64 " data bytes", w->path,
                    w->got, w->want);
        writer_free(w, 1);
        return rc;
    }
    struct oc_writer *ww = w->w;
    w->w = NULL;
    if ((rc = oc_writer_close(ww, err))) {
        writer_free(w, 1);
        return rc;
    }
    if (file_bytes)
        *file_bytes = OC_NPY_HEADER_BYTES + w->got;
    if (crc)
        *crc = w->crc;
    writer_free(w, 0);
    return OC_OK;
}

void oc_npy_writer_abort(struct oc_npy_writer *w)
{
    writer_free(w, 1);
}

unsigned oc_npy_writer_shape(const struct oc_npy_writer *w, uint64_t shape[OC_NPY_MAX_DIMS])
{
    memcpy(shape, w->shape, sizeof(w->shape));
    return w->ndim;
}

/* ---- load with conversion ----------------------------------------------- */

enum vclass { V_UNSIGNED, V_SIGNED, V_FLOAT };

struct val {
    enum vclass c;
    uint64_t u;
    int64_t i;
    double d;
};

static struct val load_elem(enum oc_dtype t, const uint8_t *p)
{
    struct val v = {V_UNSIGNED, 0, 0, 0.0};
    switch (t) {
    case OC_DTYPE_U8:
        v.u = p[0];
        break;
    case OC_DTYPE_U32: {
        uint32_t x;
        memcpy(&x, p, 4);
        v.u = x;
        break;
    }
    case OC_DTYPE_U64:
        memcpy(&v.u, p, 8);
        break;
    case OC_DTYPE_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        v.c = V_SIGNED;
        v.i = x;
        break;
    }
    case OC_DTYPE_I64:
        v.c = V_SIGNED;
        memcpy(&v.i, p, 8);
        break;
    case OC_DTYPE_F16: {
        uint16_t x;
        memcpy(&x, p, 2);
        v.c = V_FLOAT;
        v.d = oc_f16_to_f32(x);
        break;
    }
    case OC_DTYPE_F32: {
        float x;
        memcpy(&x, p, 4);
        v.c = V_FLOAT;
        v.d = x;
        break;
    }
    case OC_DTYPE_F64:
        v.c = V_FLOAT;
        memcpy(&v.d, p, 8);
        break;
    default:
        break;
    }
    return v;
}

/* 0 ok, -1 out of range, -2 not an integer. */
static int store_elem(enum oc_dtype t, uint8_t *p, struct val v)
{
    if (t == OC_DTYPE_F16 || t == OC_DTYPE_F32 || t == OC_DTYPE_F64) {
        double d = v.c == V_FLOAT ? v.d : v.c == V_SIGNED ? (double)v.i : (double)v.u;
        if (t == OC_DTYPE_F64) {
            memcpy(p, &d, 8);
            return 0;
        }
        /* Finite values that would turn into infinities are range errors. */
        if (isfinite(d) && fabs(d) > (t == OC_DTYPE_F32 ? (double)FLT_MAX : 65520.0))
            return -1;
        float f = (float)d;
        if (t == OC_DTYPE_F32) {
            memcpy(p, &f, 4);
            return 0;
        }
        uint16_t h = oc_f32_to_f16(f);
        if (isfinite(d) && (h & 0x7fffu) == 0x7c00u)
            return -1;
        memcpy(p, &h, 2);
        return 0;
    }
    /* Integer destination: reduce the value to (negative?, magnitude). */
    int neg = 0;
    uint64_t mag = 0;
    if (v.c == V_UNSIGNED) {
        mag = v.u;
    } else if (v.c == V_SIGNED) {
        neg = v.i < 0;
        mag = neg ? (uint64_t)(-(v.i + 1)) + 1 : (uint64_t)v.i;
    } else {
        if (isnan(v.d) || v.d != floor(v.d))
            return -2;
        if (v.d >= 18446744073709551616.0 || v.d < -9223372036854775808.0)
            return -1;
        neg = v.d < 0;
        mag = neg ? (uint64_t)(-v.d) : (uint64_t)v.d;
    }
    uint64_t max_pos;
    uint64_t max_neg = 0; /* magnitude of the most negative value */
    switch (t) {
    case OC_DTYPE_U8:
        max_pos = UINT8_MAX;
        break;
    case OC_DTYPE_I32:
        max_pos = INT32_MAX;
        max_neg = (uint64_t)INT32_MAX + 1;
        break;
    case OC_DTYPE_U32:
        max_pos = UINT32_MAX;
        break;
    case OC_DTYPE_I64:
        max_pos = INT64_MAX;
        max_neg = (uint64_t)INT64_MAX + 1;
        break;
    default:
        max_pos = UINT64_MAX;
        break;
    }
    if (neg ? mag > max_neg : mag > max_pos)
        return -1;
    switch (t) {
    case OC_DTYPE_U8:
        p[0] = (uint8_t)mag;
        break;
    case OC_DTYPE_I32: {
        int32_t x = neg ? (int32_t)(-(int64_t)(mag - 1) - 1) : (int32_t)mag;
        memcpy(p, &x, 4);
        break;
    }
    case OC_DTYPE_U32: {
        uint32_t x = (uint32_t)mag;
        memcpy(p, &x, 4);
        break;
    }
    case OC_DTYPE_I64: {
        int64_t x = neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
        memcpy(p, &x, 8);
        break;
    }
    default:
        memcpy(p, &mag, 8);
        break;
    }
    return 0;
}

static int convert(enum oc_dtype from, enum oc_dtype to, const uint8_t *src, uint8_t *dst, size_t n,
                   uint64_t base, const char *path, struct oc_err *err)
{
    size_t fs = oc_dtype_size(from), ts = oc_dtype_size(to);
    if (from == OC_DTYPE_F16 && to == OC_DTYPE_F32) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            float f = oc_f16_to_f32(h);
            memcpy(dst + 4 * i, &f, 4);
        }
        return OC_OK;
    }
    for (size_t i = 0; i < n; i++) {
        struct val v = load_elem(from, src + i * fs);
        int r = store_elem(to, dst + i * ts, v);
        if (r == 0)
            continue;
        char vs[64];
        if (v.c == V_FLOAT)
            snprintf(vs, sizeof(vs), "%g", v.d);
        else if (v.c == V_SIGNED)
            snprintf(vs, sizeof(vs), "%" PRId64, v.i);
        else
            snprintf(vs, sizeof(vs), "%" PRIu64, v.u);
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %s value %s at index %" PRIu64 " %s %s", path,
                      oc_dtype_name(from), vs, base + i,
                      r == -2 ? "is not an integer, cannot convert to" : "out of range for",
                      oc_dtype_name(to));
    }
    return OC_OK;
}

int oc_npy_load_as(const char *path, enum oc_dtype want, void **data, uint64_t *n_rows,
                   uint64_t *n_cols, struct oc_err *err)
{
    struct oc_file *f = NULL;
    struct oc_npy_header h;
    uint8_t *out = NULL, *stage = NULL;
    uint64_t size, n;
    int rc;
    *data = NULL;
    if ((unsigned)want >= OC_DTYPE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "%s: invalid target dtype %d", path, (int)want);
    if ((rc = oc_file_open(path, OC_FILE_READ, &f, err)))
        return rc;
    if ((rc = npy_read_header_f(f, path, &h, &size, err)))
        goto fail;
    if (h.ndim != 1 && h.ndim != 2) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %u-D array, expected 1-D or 2-D", path, h.ndim);
        goto fail;
    }
    if ((rc = oc_npy_require_c_order(&h, path, err)))
        goto fail;
    uint64_t data_bytes = 0; /* set by npy_data_bytes; 0 quiets -O3 -Wmaybe-uninitialized */
    if ((rc = npy_data_bytes(&h, path, &data_bytes, err)))
        goto fail;
    if (size - h.data_offset < data_bytes) {
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: truncated: shape needs %" PRIu64 " data bytes, the file has %" PRIu64,
                    path, data_bytes, size - h.data_offset);
        goto fail;
    }
    n = data_bytes / oc_dtype_size(h.dtype);
    size_t ws = oc_dtype_size(want), fs = oc_dtype_size(h.dtype);
    if (n > SIZE_MAX / ws) {
        rc = OC_ERR(err, OC_ERR_ARG, "%s: %" PRIu64 " elements do not fit in memory", path, n);
        goto fail;
    }
    if (!(out = oc_alloc(n ? (size_t)n * ws : 1, "npy load", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    size_t chunk = OC_DS_CHUNK_BYTES / fs; /* elements per read */
    if (h.dtype != want && n > 0) {
        if (!(stage = oc_alloc((size_t)(n < chunk ? n : chunk) * fs, "npy load", err))) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto fail;
        }
    }
    for (uint64_t i = 0; i < n; i += chunk) {
        size_t k = (size_t)(n - i < chunk ? n - i : chunk);
        uint8_t *dst = stage ? stage : out + i * ws;
        if ((rc = oc_file_pread(f, dst, k * fs, h.data_offset + i * fs, err)))
            goto fail;
        if (stage && (rc = convert(h.dtype, want, stage, out + i * ws, k, i, path, err)))
            goto fail;
    }
    oc_free(stage);
    file_close_quiet(f);
    *data = out;
    if (n_rows)
        *n_rows = h.shape[0];
    if (n_cols)
        *n_cols = h.ndim == 2 ? h.shape[1] : 1;
    return OC_OK;
fail:
    oc_free(stage);
    oc_free(out);
    file_close_quiet(f);
    return rc;
}
