/*
 * import_sink.c — the streaming pieces every importer shares: strict scanners
 * for numbers in text lines, the edge sink (a 64 Ki-pair buffer in front of
 * the external sorter), text edge lists, the feature sink (a block of rows,
 * optional row normalization and f16 conversion, appended to features.npy)
 * and the 1-D array sink used for labels and splits.
 *
 * Place in the data flow: between the source readers of import_*.c and
 * oc_edge_sorter / oc_ds_builder.
 * Thread-safety: sinks belong to one thread.
 * Ownership: sinks live in caller storage; _finish/_end release them on
 * success and failure alike, _abort on paths that never reach _end.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/import_int.h"

/* ---- scanners ------------------------------------------------------------ */

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

/* After a field ending at q: a blank (sep ' ') or optional blanks then sep or the end. */
static int finish_field(const char **p, const char *q, char sep)
{
    if (sep == ' ') {
        if (*q != '\0' && *q != ' ' && *q != '\t' && *q != '\r')
            return -1;
        *p = q;
        return 1;
    }
    q = skip_blanks(q);
    if (*q == sep) {
        *p = q + 1;
        return 1;
    }
    if (*q == '\0') {
        *p = q;
        return 1;
    }
    return -1;
}

static int scan_digits(const char **q, uint64_t limit, uint64_t *v)
{
    const char *s = *q;
    if (!isdigit((unsigned char)*s))
        return -1;
    uint64_t x = 0;
    while (isdigit((unsigned char)*s)) {
        uint64_t d = (uint64_t)(*s - '0');
        if (x > (limit - d) / 10)
            return -1;
        x = x * 10 + d;
        s++;
    }
    *q = s;
    *v = x;
    return 1;
}

int oc_imp_scan_u64(const char **p, char sep, uint64_t *v)
{
    const char *q = skip_blanks(*p);
    if (*q == '\0') {
        *p = q;
        return 0;
    }
    if (*q == '+')
        q++;
    uint64_t x;
    if (scan_digits(&q, UINT64_MAX, &x) < 0)
        return -1;
    int rc = finish_field(p, q, sep);
    if (rc > 0)
        *v = x;
    return rc;
}

int oc_imp_scan_i64(const char **p, char sep, int64_t *v)
{
    const char *q = skip_blanks(*p);
    if (*q == '\0') {
        *p = q;
        return 0;
    }
    int neg = 0;
    if (*q == '+' || *q == '-')
        neg = *q++ == '-';
    uint64_t x;
    if (scan_digits(&q, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &x) < 0)
        return -1;
    int rc = finish_field(p, q, sep);
    if (rc > 0)
        *v = neg ? (x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x) : (int64_t)x;
    return rc;
}

int oc_imp_scan_f32(const char **p, char sep, float *v)
{
    const char *q = skip_blanks(*p);
    if (*q == '\0') {
        *p = q;
        return 0;
    }
    char *end;
    float x = strtof(q, &end);
    if (end == q)
        return -1;
    int rc = finish_field(p, end, sep);
    if (rc > 0)
        *v = x;
    return rc;
}

int oc_imp_line_is_blank(const char *line, int allow_comment)
{
    const char *q = skip_blanks(line);
    return *q == '\0' || (allow_comment && *q == '#');
}

int oc_imp_next_data_line(struct oc_line_reader *r, int allow_comment, char **line,
                          struct oc_err *err)
{
    size_t len;
    int rc;
    do {
        rc = oc_line_reader_next(r, line, &len, err);
    } while (rc == OC_OK && *line && oc_imp_line_is_blank(*line, allow_comment));
    return rc;
}

size_t oc_imp_count_fields(const char *line, char sep)
{
    const char *q = skip_blanks(line);
    if (*q == '\0')
        return 0;
    size_t n = 1;
    if (sep == ' ') {
        while (*q) {
            if (*q == ' ' || *q == '\t' || *q == '\r') {
                q = skip_blanks(q);
                if (*q)
                    n++;
            } else {
                q++;
            }
        }
        return n;
    }
    for (; *q; q++) {
        if (*q == sep && *skip_blanks(q + 1) != '\0')
            n++;
    }
    return n;
}

/* ---- edge sink ----------------------------------------------------------- */

#define EDGE_BUF 65536u

int oc_imp_edges_begin(struct oc_imp_edges *e, struct oc_ds_builder *b,
                       const struct oc_import_opts *o, uint64_t n_nodes, struct oc_err *err)
{
    int rc;
    memset(e, 0, sizeof(*e));
    e->n_nodes = n_nodes;
    e->src = oc_alloc(EDGE_BUF * sizeof(uint64_t), "import: edge buffer", err);
    e->dst = e->src ? oc_alloc(EDGE_BUF * sizeof(uint64_t), "import: edge buffer", err) : NULL;
    if (!e->dst) {
        rc = err->status;
        goto fail;
    }
    e->cap = EDGE_BUF;
    struct oc_edge_sort_opts so = {
        .n_nodes = n_nodes,
        .symmetrize = !o->directed,
        .keep_duplicates = o->keep_duplicates,
        .remove_self_loops = o->remove_self_loops,
        .mem_bytes = o->mem_bytes,
    };
    /* The sorter keeps its runs in a directory of its own inside the builder's. */
    rc = oc_edge_sorter_new(&so, oc_ds_builder_tmp_dir(b), &e->sorter, err);
    if (rc)
        goto fail;
    return OC_OK;
fail:
    oc_imp_edges_abort(e);
    return rc;
}

static int edges_flush(struct oc_imp_edges *e, struct oc_err *err)
{
    if (e->n_buf == 0)
        return OC_OK;
    int rc = oc_edge_sorter_add(e->sorter, e->src, e->dst, e->n_buf, err);
    e->n_buf = 0;
    return rc;
}

int oc_imp_edges_add(struct oc_imp_edges *e, uint64_t src, uint64_t dst, struct oc_err *err)
{
    e->src[e->n_buf] = src;
    e->dst[e->n_buf] = dst;
    if (++e->n_buf == e->cap)
        return edges_flush(e, err);
    return OC_OK;
}

int oc_imp_edges_finish(struct oc_imp_edges *e, struct oc_ds_builder *b,
                        struct oc_progress *progress, struct oc_err *err)
{
    int rc = edges_flush(e, err);
    if (rc == OC_OK) {
        oc_free(e->src);
        oc_free(e->dst);
        e->src = e->dst = NULL;
        oc_progress_phase(progress, "import: sort edges", 0, "edges");
        rc = oc_edge_sorter_finish(e->sorter, b, progress, err);
    }
    oc_imp_edges_abort(e);
    return rc;
}

void oc_imp_edges_abort(struct oc_imp_edges *e)
{
    oc_edge_sorter_free(e->sorter);
    e->sorter = NULL;
    oc_free(e->src);
    oc_free(e->dst);
    e->src = e->dst = NULL;
}

int oc_imp_text_edges(const char *path, char sep, int allow_comment, struct oc_imp_edges *e,
                      uint64_t *max_id_plus1, uint64_t *n_edges, struct oc_progress *progress,
                      struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    uint64_t max1 = 0, n = 0, shown = 0; /* bytes of the file the progress has counted */
    if (progress) {
        const char *base = strrchr(path, '/');
        char label[96];
        snprintf(label, sizeof(label), "import: %s", base ? base + 1 : path);
        oc_progress_phase(progress, label, oc_line_reader_size(r), OC_PROGRESS_BYTES);
    }
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, allow_comment, &line, err);
        if (rc || !line)
            break;
        const char *p = line;
        uint64_t u = 0, v = 0, extra;
        if (oc_imp_scan_u64(&p, sep, &u) != 1 || oc_imp_scan_u64(&p, sep, &v) != 1 ||
            oc_imp_scan_u64(&p, sep, &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected two node ids \"u%sv\", got \"%.60s\"",
                               sep == ',' ? "," : " ", line);
            break;
        }
        if (e && (u >= e->n_nodes || v >= e->n_nodes)) {
            rc = OC_IMP_ERR_AT(err, r, "node id %llu out of range (the graph has %llu nodes)",
                               (unsigned long long)(u >= e->n_nodes ? u : v),
                               (unsigned long long)e->n_nodes);
            break;
        }
        if (u + 1 > max1)
            max1 = u + 1;
        if (v + 1 > max1)
            max1 = v + 1;
        n++;
        if (e) {
            rc = oc_imp_edges_add(e, u, v, err);
            if (rc)
                break;
        }
        if ((n & 0xffff) == 0) {
            uint64_t at = oc_line_reader_offset(r);
            oc_progress_add(progress, at - shown);
            shown = at;
        }
    }
    if (rc == OC_OK)
        oc_progress_add(progress, oc_line_reader_offset(r) - shown);
    oc_line_reader_free(r);
    if (rc)
        return rc;
    if (max_id_plus1)
        *max_id_plus1 = max1;
    if (n_edges)
        *n_edges = n;
    return OC_OK;
}

/* ---- feature sink -------------------------------------------------------- */

static size_t feat_block_bytes(uint64_t mem_bytes)
{
    uint64_t b = mem_bytes ? mem_bytes / 16 : (16u << 20);
    if (b < (256u << 10))
        b = 256u << 10;
    if (b > (64u << 20))
        b = 64u << 20;
    return (size_t)b;
}

int oc_imp_feat_begin(struct oc_imp_feat *f, struct oc_ds_builder *b,
                      const struct oc_import_opts *o, const char *path, uint64_t n_rows,
                      uint32_t dim, struct oc_err *err)
{
    memset(f, 0, sizeof(*f));
    if (dim == 0)
        return OC_ERR(err, OC_ERR_INTERNAL, "import: feature width 0");
    f->b = b;
    f->path = path;
    f->allow_nonfinite = o->allow_nonfinite;
    f->dtype = o->feat_dtype;
    f->row_normalize = o->row_normalize;
    f->dim = dim;
    f->n_rows = n_rows;
    size_t row_bytes = (size_t)dim * sizeof(float);
    uint64_t cap = feat_block_bytes(o->mem_bytes) / row_bytes;
    if (cap < 1)
        cap = 1;
    if (cap > n_rows)
        cap = n_rows ? n_rows : 1;
    f->rows_cap = (size_t)cap;
    f->block = oc_calloc(f->rows_cap, row_bytes, "import: feature rows", err);
    if (!f->block)
        return err->status;
    uint64_t shape[2] = {n_rows, dim};
    int rc = oc_ds_builder_begin_array(b, OC_DS_FEATURES, f->dtype, 2, shape, &f->w, err);
    if (rc) {
        f->w = NULL;
        oc_imp_feat_abort(f);
    }
    return rc;
}

float *oc_imp_feat_rows(struct oc_imp_feat *f, size_t *n_free)
{
    uint64_t left = f->n_rows - f->rows_done - f->rows_in_block;
    size_t room = f->rows_cap - f->rows_in_block;
    *n_free = left < room ? (size_t)left : room;
    return f->block + f->rows_in_block * (size_t)f->dim;
}

/* Element i of the block (row-major) as "<path>: row R, column C". */
static int nonfinite_err(const struct oc_imp_feat *f, size_t i, float x, const char *why,
                         struct oc_err *err)
{
    return OC_ERR(err, OC_ERR_FORMAT,
                  "%s: feature row %llu, column %llu: value %g %s (--allow-nonfinite imports it "
                  "anyway)",
                  f->path ? f->path : "features", (unsigned long long)(f->rows_done + i / f->dim),
                  (unsigned long long)(i % f->dim), (double)x, why);
}

static int feat_flush(struct oc_imp_feat *f, struct oc_err *err)
{
    size_t n = f->rows_in_block * (size_t)f->dim;
    if (n == 0)
        return OC_OK;
    size_t bytes = n * sizeof(float);
    if (f->dtype == OC_DTYPE_F16) {
        /* In place: half i lands at 2i, below single i at 4i, which is read first. */
        uint8_t *base = (uint8_t *)f->block;
        for (size_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, base + 4 * i, sizeof(x));
            uint16_t h = oc_f32_to_f16(x);
            if (!f->allow_nonfinite && (h & 0x7c00u) == 0x7c00u) /* f16 inf or nan */
                return nonfinite_err(f, i, x, "does not fit f16 (largest 65504)", err);
            memcpy(base + 2 * i, &h, sizeof(h));
        }
        bytes = n * sizeof(uint16_t);
    }
    int rc = oc_npy_writer_append(f->w, f->block, bytes, err);
    f->rows_done += f->rows_in_block;
    f->rows_in_block = 0;
    memset(f->block, 0, n * sizeof(float));
    return rc;
}

int oc_imp_feat_commit(struct oc_imp_feat *f, size_t n, struct oc_err *err)
{
    if (!f->allow_nonfinite) {
        const float *v = f->block + f->rows_in_block * (size_t)f->dim;
        for (size_t i = 0; i < n * (size_t)f->dim; i++) {
            if (!isfinite(v[i]))
                return nonfinite_err(f, f->rows_in_block * (size_t)f->dim + i, v[i],
                                     "is not finite (NaN, Inf, or beyond the f32 range)", err);
        }
    }
    if (f->row_normalize) {
        for (size_t i = 0; i < n; i++) {
            float *row = f->block + (f->rows_in_block + i) * (size_t)f->dim;
            double sum = 0;
            for (uint32_t j = 0; j < f->dim; j++)
                sum += row[j];
            if (sum != 0) {
                for (uint32_t j = 0; j < f->dim; j++) {
                    row[j] = (float)(row[j] / sum);
                    if (!f->allow_nonfinite && !isfinite(row[j]))
                        return nonfinite_err(f, (f->rows_in_block + i) * (size_t)f->dim + j, row[j],
                                             "after row normalization (a tiny row sum)", err);
                }
            }
        }
    }
    f->rows_in_block += n;
    if (f->rows_in_block == f->rows_cap || f->rows_done + f->rows_in_block == f->n_rows)
        return feat_flush(f, err);
    return OC_OK;
}

int oc_imp_feat_end(struct oc_imp_feat *f, struct oc_err *err)
{
    int rc = feat_flush(f, err);
    if (rc == OC_OK && f->rows_done != f->n_rows)
        rc = OC_ERR(err, OC_ERR_INTERNAL, "import: %llu of %llu feature rows written",
                    (unsigned long long)f->rows_done, (unsigned long long)f->n_rows);
    if (rc) {
        oc_imp_feat_abort(f);
        return rc;
    }
    struct oc_npy_writer *w = f->w;
    f->w = NULL;
    rc = oc_ds_builder_end_array(f->b, OC_DS_FEATURES, w, err);
    oc_imp_feat_abort(f);
    return rc;
}

void oc_imp_feat_abort(struct oc_imp_feat *f)
{
    if (f->w)
        oc_npy_writer_abort(f->w);
    f->w = NULL;
    oc_free(f->block);
    f->block = NULL;
}

/* ---- 1-D array sink ------------------------------------------------------ */

#define ARRAY_BUF 65536u

int oc_imp_array_begin(struct oc_imp_array *a, struct oc_ds_builder *b, enum oc_ds_file which,
                       enum oc_dtype dtype, uint64_t n, struct oc_err *err)
{
    memset(a, 0, sizeof(*a));
    a->b = b;
    a->which = which;
    a->dtype = dtype;
    a->n_total = n;
    a->cap = n < ARRAY_BUF ? (size_t)n : ARRAY_BUF;
    if (a->cap == 0)
        a->cap = 1;
    a->buf = oc_alloc(a->cap * oc_dtype_size(dtype), "import: array buffer", err);
    if (!a->buf)
        return err->status;
    uint64_t shape[1] = {n};
    int rc = oc_ds_builder_begin_array(b, which, dtype, 1, shape, &a->w, err);
    if (rc) {
        a->w = NULL;
        oc_imp_array_abort(a);
    }
    return rc;
}

static int array_flush(struct oc_imp_array *a, struct oc_err *err)
{
    if (a->n_buf == 0)
        return OC_OK;
    int rc = oc_npy_writer_append(a->w, a->buf, a->n_buf * oc_dtype_size(a->dtype), err);
    a->n_done += a->n_buf;
    a->n_buf = 0;
    return rc;
}

int oc_imp_array_push(struct oc_imp_array *a, int64_t v, struct oc_err *err)
{
    if (a->n_done + a->n_buf >= a->n_total)
        return OC_ERR(err, OC_ERR_INTERNAL, "import: more than %llu values for %s",
                      (unsigned long long)a->n_total, oc_ds_file_name(a->which));
    switch (a->dtype) {
    case OC_DTYPE_I32: {
        int32_t x = (int32_t)v;
        memcpy(a->buf + a->n_buf * 4, &x, 4);
        break;
    }
    case OC_DTYPE_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(a->buf + a->n_buf * 4, &x, 4);
        break;
    }
    case OC_DTYPE_I64:
        memcpy(a->buf + a->n_buf * 8, &v, 8);
        break;
    case OC_DTYPE_U64: {
        uint64_t x = (uint64_t)v;
        memcpy(a->buf + a->n_buf * 8, &x, 8);
        break;
    }
    default:
        return OC_ERR(err, OC_ERR_INTERNAL, "import: array dtype %s", oc_dtype_name(a->dtype));
    }
    if (++a->n_buf == a->cap)
        return array_flush(a, err);
    return OC_OK;
}

int oc_imp_array_end(struct oc_imp_array *a, struct oc_err *err)
{
    int rc = array_flush(a, err);
    if (rc == OC_OK && a->n_done != a->n_total)
        rc = OC_ERR(err, OC_ERR_INTERNAL, "import: %llu of %llu values written to %s",
                    (unsigned long long)a->n_done, (unsigned long long)a->n_total,
                    oc_ds_file_name(a->which));
    if (rc) {
        oc_imp_array_abort(a);
        return rc;
    }
    struct oc_npy_writer *w = a->w;
    a->w = NULL;
    rc = oc_ds_builder_end_array(a->b, a->which, w, err);
    oc_imp_array_abort(a);
    return rc;
}

void oc_imp_array_abort(struct oc_imp_array *a)
{
    if (a->w)
        oc_npy_writer_abort(a->w);
    a->w = NULL;
    oc_free(a->buf);
    a->buf = NULL;
}
