/*
 * import_npyin.c — .npy files as importer inputs, read a chunk at a time
 * with dtype conversion: edge arrays ((2, E) or (E, 2), C or Fortran order)
 * into the edge sink, N x F float matrices into the feature sink, integer
 * labels and split id lists into labels.npy / *_idx.npy.
 *
 * Place in the data flow: used by import_npy.c and import_graphbolt.c; reads
 * through oc_file (pread) and writes through the sinks of import_sink.c.
 * Memory: a 256 KiB scratch per open file plus one chunk of converted values;
 * no input is ever loaded whole.
 * Thread-safety: one reader per thread.
 * Ownership: struct oc_imp_npy lives in caller storage; _close releases it.
 */
#include <limits.h>
#include <string.h>

#include "dataset/import_int.h"

#define NPY_SCRATCH (256u << 10)
#define NPY_CHUNK   32768u /* values converted per step */

int oc_imp_npy_open(struct oc_imp_npy *r, const char *path, struct oc_err *err)
{
    memset(r, 0, sizeof(*r));
    int rc = oc_npy_read_header(path, &r->h, err);
    if (rc)
        return rc;
    if (r->h.ndim < 1 || r->h.ndim > 2)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: expected a 1-D or 2-D array, found %u dimensions",
                      path, r->h.ndim);
    r->n_rows = r->h.shape[0];
    r->n_cols = r->h.ndim == 2 ? r->h.shape[1] : 1;
    r->scratch = oc_alloc(NPY_SCRATCH, "import: npy read buffer", err);
    if (!r->scratch)
        return err->status;
    r->scratch_bytes = NPY_SCRATCH;
    rc = oc_file_open(path, OC_FILE_READ, &r->f, err);
    if (rc) {
        r->f = NULL;
        oc_imp_npy_close(r);
    }
    return rc;
}

void oc_imp_npy_close(struct oc_imp_npy *r)
{
    if (r->f) {
        struct oc_err ignored;
        oc_file_close(r->f, &ignored);
    }
    r->f = NULL;
    oc_free(r->scratch);
    r->scratch = NULL;
}

const char *oc_imp_npy_path(const struct oc_imp_npy *r)
{
    return oc_file_path(r->f);
}

static int is_float(enum oc_dtype t)
{
    return t == OC_DTYPE_F16 || t == OC_DTYPE_F32 || t == OC_DTYPE_F64;
}

/* Converts n values of dtype t at src to int64 (integers only); returns -1 on overflow
   (*bad = the value's index). */
static int to_i64(enum oc_dtype t, const uint8_t *src, size_t n, int64_t *out, size_t *bad)
{
    *bad = 0;
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case OC_DTYPE_U8:
            out[i] = src[i];
            break;
        case OC_DTYPE_I32: {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = x;
            break;
        }
        case OC_DTYPE_U32: {
            uint32_t x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = x;
            break;
        }
        case OC_DTYPE_I64:
            memcpy(&out[i], src + 8 * i, 8);
            break;
        case OC_DTYPE_U64: {
            uint64_t x;
            memcpy(&x, src + 8 * i, 8);
            if (x > (uint64_t)INT64_MAX) {
                *bad = i;
                return -1;
            }
            out[i] = (int64_t)x;
            break;
        }
        default:
            return -1;
        }
    }
    return 0;
}

static void to_f32(enum oc_dtype t, const uint8_t *src, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case OC_DTYPE_U8:
            out[i] = src[i];
            break;
        case OC_DTYPE_I32: {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = (float)x;
            break;
        }
        case OC_DTYPE_U32: {
            uint32_t x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = (float)x;
            break;
        }
        case OC_DTYPE_I64: {
            int64_t x;
            memcpy(&x, src + 8 * i, 8);
            out[i] = (float)x;
            break;
        }
        case OC_DTYPE_U64: {
            uint64_t x;
            memcpy(&x, src + 8 * i, 8);
            out[i] = (float)x;
            break;
        }
        case OC_DTYPE_F16: {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = oc_f16_to_f32(h);
            break;
        }
        case OC_DTYPE_F32:
            memcpy(&out[i], src + 4 * i, 4);
            break;
        case OC_DTYPE_F64: {
            double x;
            memcpy(&x, src + 8 * i, 8);
            out[i] = (float)x;
            break;
        }
        default:
            out[i] = 0;
            break;
        }
    }
}

int oc_imp_npy_read(struct oc_imp_npy *r, uint64_t first, size_t n, enum oc_dtype want, void *out,
                    struct oc_err *err)
{
    const char *path = oc_file_path(r->f);
    if (want == OC_DTYPE_I64 && is_float(r->h.dtype))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: expected an integer array, found %s", path,
                      oc_dtype_name(r->h.dtype));
    size_t es = oc_dtype_size(r->h.dtype);
    size_t per = r->scratch_bytes / es;
    size_t done = 0;
    while (done < n) {
        size_t k = n - done < per ? n - done : per;
        uint64_t off = r->h.data_offset + (first + done) * (uint64_t)es;
        int rc = oc_file_pread(r->f, r->scratch, k * es, off, err);
        if (rc)
            return rc;
        if (want == OC_DTYPE_I64) {
            size_t bad;
            if (to_i64(r->h.dtype, r->scratch, k, (int64_t *)out + done, &bad) < 0)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "%s: value at element %llu does not fit a signed 64-bit id", path,
                              (unsigned long long)(first + done + bad));
        } else {
            to_f32(r->h.dtype, r->scratch, k, (float *)out + done);
        }
        done += k;
    }
    return OC_OK;
}

/* ---- edges --------------------------------------------------------------- */

int oc_imp_npy_edges(const char *path, int allow_e2, struct oc_imp_edges *e, uint64_t *max_id_plus1,
                     uint64_t *n_edges, struct oc_progress *progress, struct oc_err *err)
{
    struct oc_imp_npy r;
    int64_t *buf = NULL;
    int rc = oc_imp_npy_open(&r, path, err);
    if (rc)
        return rc;
    uint64_t n = 0;
    int rows; /* src and dst are two contiguous runs (else interleaved pairs) */
    if (r.h.ndim == 2 && r.h.shape[0] == 2) {
        n = r.h.shape[1];
        rows = !r.h.fortran_order;
    } else if (allow_e2 && r.h.ndim == 2 && r.h.shape[1] == 2) {
        n = r.h.shape[0];
        rows = r.h.fortran_order;
    } else {
        char shape[64];
        if (r.h.ndim == 1)
            snprintf(shape, sizeof(shape), "(%llu,)", (unsigned long long)r.h.shape[0]);
        else
            snprintf(shape, sizeof(shape), "(%llu, %llu)", (unsigned long long)r.h.shape[0],
                     (unsigned long long)r.h.shape[1]);
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: edge array has shape %s, expected (2, E)%s", path,
                    shape, allow_e2 ? " or (E, 2)" : "");
        goto out;
    }
    buf = oc_alloc(4 * NPY_CHUNK * sizeof(int64_t), "import: npy edge chunk", err);
    if (!buf) {
        rc = err->status;
        goto out;
    }
    uint64_t max1 = 0;
    oc_progress_phase(progress, "import: edges", n, "edges");
    for (uint64_t j = 0; j < n;) {
        size_t k = n - j < NPY_CHUNK ? (size_t)(n - j) : NPY_CHUNK;
        int64_t *s = buf, *d = buf + NPY_CHUNK;
        if (rows) {
            rc = oc_imp_npy_read(&r, j, k, OC_DTYPE_I64, s, err);
            if (!rc)
                rc = oc_imp_npy_read(&r, n + j, k, OC_DTYPE_I64, d, err);
        } else {
            int64_t *pairs = buf + 2 * NPY_CHUNK;
            rc = oc_imp_npy_read(&r, 2 * j, 2 * k, OC_DTYPE_I64, pairs, err);
            for (size_t i = 0; !rc && i < k; i++) {
                s[i] = pairs[2 * i];
                d[i] = pairs[2 * i + 1];
            }
        }
        if (rc)
            goto out;
        for (size_t i = 0; i < k; i++) {
            if (s[i] < 0 || d[i] < 0) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: edge %llu (%lld -> %lld) has a negative node id", path,
                            (unsigned long long)(j + i), (long long)s[i], (long long)d[i]);
                goto out;
            }
            if (e && ((uint64_t)s[i] >= e->n_nodes || (uint64_t)d[i] >= e->n_nodes)) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: edge %llu (%lld -> %lld) has a node id out of range [0, %llu)",
                            path, (unsigned long long)(j + i), (long long)s[i], (long long)d[i],
                            (unsigned long long)e->n_nodes);
                goto out;
            }
            uint64_t u = (uint64_t)s[i], v = (uint64_t)d[i];
            if (u + 1 > max1)
                max1 = u + 1;
            if (v + 1 > max1)
                max1 = v + 1;
            if (e) {
                rc = oc_imp_edges_add(e, u, v, err);
                if (rc)
                    goto out;
            }
        }
        j += k;
        oc_progress_add(progress, k);
    }
    if (max_id_plus1)
        *max_id_plus1 = max1;
    if (n_edges)
        *n_edges = n;
out:
    oc_free(buf);
    oc_imp_npy_close(&r);
    return rc;
}

/* ---- features ------------------------------------------------------------ */

int oc_imp_feat_from_npy(struct oc_ds_builder *b, const struct oc_import_opts *o, const char *path,
                         uint64_t n_nodes, uint32_t *feat_dim, struct oc_progress *progress,
                         struct oc_err *err)
{
    struct oc_imp_npy r;
    struct oc_imp_feat f;
    memset(&f, 0, sizeof(f));
    int rc = oc_imp_npy_open(&r, path, err);
    if (rc)
        return rc;
    if (r.n_rows != n_nodes) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: feature array has %llu rows, expected %llu (nodes)",
                    path, (unsigned long long)r.n_rows, (unsigned long long)n_nodes);
        goto out;
    }
    if (r.n_cols == 0 || r.n_cols > UINT32_MAX) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: feature width %llu is not supported", path,
                    (unsigned long long)r.n_cols);
        goto out;
    }
    if (r.h.fortran_order && r.n_cols > 1 && r.n_rows > 1) {
        rc = OC_ERR(err, OC_ERR_UNSUPPORTED,
                    "%s: Fortran-order feature matrix (save it with np.ascontiguousarray)", path);
        goto out;
    }
    uint32_t dim = (uint32_t)r.n_cols;
    rc = oc_imp_feat_begin(&f, b, o, path, n_nodes, dim, err);
    if (rc)
        goto out;
    oc_progress_phase(progress, "import: features", n_nodes, "rows");
    for (uint64_t row = 0; row < n_nodes;) {
        size_t n_free;
        float *dst = oc_imp_feat_rows(&f, &n_free);
        rc = oc_imp_npy_read(&r, row * dim, n_free * dim, OC_DTYPE_F32, dst, err);
        if (!rc)
            rc = oc_imp_feat_commit(&f, n_free, err);
        if (rc)
            goto out;
        row += n_free;
        oc_progress_add(progress, n_free);
    }
    rc = oc_imp_feat_end(&f, err);
    if (rc == OC_OK)
        *feat_dim = dim;
out:
    oc_imp_feat_abort(&f);
    oc_imp_npy_close(&r);
    return rc;
}

/* ---- labels and split ids ------------------------------------------------ */

int oc_imp_npy_open_vector(struct oc_imp_npy *r, const char *path, const char *what,
                           struct oc_err *err)
{
    int rc = oc_imp_npy_open(r, path, err);
    if (rc)
        return rc;
    if (r->n_cols != 1) {
        oc_imp_npy_close(r);
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %s must be a 1-D array, found shape (%llu, %llu)",
                      path, what, (unsigned long long)r->n_rows, (unsigned long long)r->n_cols);
    }
    return OC_OK;
}

/* Accepts value v at element i of the vector at path, or fills err and fails. */
typedef int (*npy_check_fn)(void *ctx, const char *path, int64_t v, uint64_t i, struct oc_err *err);

/*
 * Streams the n_rows values of vector r (read as int64, NPY_CHUNK at a time
 * through a buffer named `chunk_name`) into a new builder array `which`,
 * passing each value through check before it is pushed.
 */
static int npy_vector_to_array(struct oc_imp_npy *r, struct oc_ds_builder *b, enum oc_ds_file which,
                               enum oc_dtype dtype, const char *chunk_name, npy_check_fn check,
                               void *ctx, struct oc_err *err)
{
    const char *path = oc_imp_npy_path(r);
    uint64_t cnt = r->n_rows;
    struct oc_imp_array a;
    memset(&a, 0, sizeof(a));
    int rc;
    int64_t *buf = oc_alloc(NPY_CHUNK * sizeof(int64_t), chunk_name, err);
    if (!buf) {
        rc = err->status;
        goto out;
    }
    rc = oc_imp_array_begin(&a, b, which, dtype, cnt, err);
    if (rc)
        goto out;
    for (uint64_t j = 0; j < cnt;) {
        size_t k = cnt - j < NPY_CHUNK ? (size_t)(cnt - j) : NPY_CHUNK;
        rc = oc_imp_npy_read(r, j, k, OC_DTYPE_I64, buf, err);
        for (size_t i = 0; !rc && i < k; i++) {
            rc = check(ctx, path, buf[i], j + i, err);
            if (rc)
                break;
            rc = oc_imp_array_push(&a, buf[i], err);
        }
        if (rc)
            goto out;
        j += k;
    }
    rc = oc_imp_array_end(&a, err);
out:
    oc_imp_array_abort(&a);
    oc_free(buf);
    return rc;
}

struct label_check {
    int64_t limit; /* labels in [-1, limit) */
    int64_t max;
};

static int check_label(void *ctx, const char *path, int64_t v, uint64_t i, struct oc_err *err)
{
    struct label_check *c = ctx;
    if (v < -1 || v >= c->limit)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: label %lld of node %llu is out of range "
                      "[-1, %lld)",
                      path, (long long)v, (unsigned long long)i, (long long)c->limit);
    if (v > c->max)
        c->max = v;
    return OC_OK;
}

int oc_imp_labels_npy(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                      uint32_t n_classes_hint, uint32_t *n_classes, struct oc_err *err)
{
    struct oc_imp_npy r;
    int rc = oc_imp_npy_open_vector(&r, path, "labels", err);
    if (rc)
        return rc;
    struct label_check c = {.limit = n_classes_hint ? (int64_t)n_classes_hint : INT32_MAX,
                            .max = -1};
    if (r.n_rows != n_nodes)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %llu labels, expected %llu (nodes)", path,
                    (unsigned long long)r.n_rows, (unsigned long long)n_nodes);
    else
        rc = npy_vector_to_array(&r, b, OC_DS_LABELS, OC_DTYPE_I32, "import: npy label chunk",
                                 check_label, &c, err);
    oc_imp_npy_close(&r);
    if (rc == OC_OK) {
        *n_classes = n_classes_hint ? n_classes_hint : (uint32_t)(c.max + 1);
        rc = oc_imp_labels_settle(b, *n_classes, err);
    }
    return rc;
}

struct id_check {
    uint64_t n_nodes;
    uint8_t *seen; /* n_nodes bits */
};

static int check_node_id(void *ctx, const char *path, int64_t v, uint64_t i, struct oc_err *err)
{
    struct id_check *c = ctx;
    if (v < 0 || (uint64_t)v >= c->n_nodes)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: node id %lld at index %llu is out of range [0, %llu)", path,
                      (long long)v, (unsigned long long)i, (unsigned long long)c->n_nodes);
    uint8_t bit = (uint8_t)(1u << (v & 7));
    if (c->seen[v >> 3] & bit)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: duplicate node id %lld at index %llu (each id may appear once in a "
                      "split)",
                      path, (long long)v, (unsigned long long)i);
    c->seen[v >> 3] |= bit;
    return OC_OK;
}

int oc_imp_split_ids_npy(struct oc_ds_builder *b, enum oc_ds_file which, const char *path,
                         uint64_t n_nodes, uint64_t *n, struct oc_err *err)
{
    struct oc_imp_npy r;
    int rc = oc_imp_npy_open_vector(&r, path, "a node id list", err);
    if (rc)
        return rc;
    uint64_t cnt = r.n_rows;
    struct id_check c = {.n_nodes = n_nodes, .seen = NULL};
    size_t bm = (size_t)((n_nodes + 7) / 8);
    if (r.h.is_bool) {
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: a boolean array (a mask?), not node ids: save the ids instead, "
                    "np.nonzero(mask)[0]",
                    path);
    } else if (is_float(r.h.dtype)) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: dtype %s: node ids must be integers", path,
                    oc_dtype_name(r.h.dtype));
    } else if (!(c.seen = oc_calloc(bm ? bm : 1, 1, "import: split id bitmap", err))) {
        rc = err->status;
    } else {
        rc = npy_vector_to_array(&r, b, which, OC_IMP_SPLIT_DTYPE, "import: npy id chunk",
                                 check_node_id, &c, err);
    }
    oc_free(c.seen);
    oc_imp_npy_close(&r);
    if (rc == OC_OK)
        *n = cnt;
    return rc;
}

/* ---- sizes for the gate --------------------------------------------------- */

int oc_imp_npy_dims(const char *path, uint64_t *n_rows, uint64_t *n_cols, struct oc_err *err)
{
    struct oc_npy_header h;
    int rc = oc_npy_read_header(path, &h, err);
    if (rc)
        return rc;
    *n_rows = h.ndim ? h.shape[0] : 1;
    *n_cols = 1;
    for (unsigned i = 1; i < h.ndim; i++)
        *n_cols *= h.shape[i];
    return OC_OK;
}

int oc_imp_npy_edge_count(const char *path, uint64_t *n_edges, struct oc_err *err)
{
    uint64_t rows, cols;
    int rc = oc_imp_npy_dims(path, &rows, &cols, err);
    if (rc == OC_OK)
        *n_edges = rows == 2 ? cols : rows;
    return rc;
}
