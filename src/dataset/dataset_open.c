/*
 * dataset_open.c — opening a dataset directory: manifest, then every listed
 * array checked for presence, exact size, header (dtype, shape derived from
 * the manifest, 4096-byte header), CRC-32 and content (indptr monotone from 0
 * to n_edges; neighbor ids < n_nodes and ascending per node: topology_scan.c,
 * at open or, deferred, as oc_dataset_load_topology reads them; labels in
 * [-1, n_classes); split ids < n_nodes without duplicates). Arrays are
 * streamed in 8 MiB chunks, so memory stays bounded whatever their size
 * (splits need two bitmaps of n_nodes bits). Also the whole-array loaders.
 *
 * Place in the data flow: dataset; sample, plan, store and the CLI open
 * datasets through here.
 * Thread-safety: an opened dataset is immutable and may be shared.
 * Ownership: the dataset owns its paths; loaders return oc_alloc'd arrays.
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

#define MANIFEST_NAME      "manifest.json"
#define MANIFEST_MAX_BYTES ((size_t)1 << 20)

struct oc_dataset {
    char *dir;
    struct oc_manifest m;
    char *paths[OC_DS_FILE_COUNT];
    uint64_t data_offset[OC_DS_FILE_COUNT];
    unsigned flags; /* enum oc_ds_open_flags it was opened with */
};

/* The dtype and shape an array must have, from the manifest. */
static void expected_shape(const struct oc_manifest *m, enum oc_ds_file f, enum oc_dtype *dt,
                           unsigned *ndim, uint64_t shape[OC_NPY_MAX_DIMS])
{
    *ndim = 1;
    switch (f) {
    case OC_DS_INDPTR:
        *dt = OC_DTYPE_U64;
        shape[0] = m->n_nodes + 1;
        break;
    case OC_DS_INDICES:
        *dt = m->index_dtype;
        shape[0] = m->n_edges;
        break;
    case OC_DS_FEATURES:
        *dt = m->feat_dtype;
        *ndim = 2;
        shape[0] = m->n_nodes;
        shape[1] = m->feat_dim;
        break;
    case OC_DS_LABELS:
        *dt = OC_DTYPE_I32;
        shape[0] = m->n_nodes;
        break;
    case OC_DS_TRAIN_IDX:
        *dt = OC_DTYPE_U64;
        shape[0] = m->n_train;
        break;
    case OC_DS_VAL_IDX:
        *dt = OC_DTYPE_U64;
        shape[0] = m->n_val;
        break;
    case OC_DS_FEATURE_ROWS:
        *dt = m->index_dtype;
        shape[0] = m->n_nodes;
        break;
    default:
        *dt = OC_DTYPE_U64;
        shape[0] = m->n_test;
        break;
    }
}

static void format_shape(char *buf, size_t n, unsigned ndim, const uint64_t *shape)
{
    size_t k = (size_t)snprintf(buf, n, "(");
    for (unsigned i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %" PRIu64 : "%" PRIu64, shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, ndim == 1 ? ",)" : ")");
}

/* Presence, exact size and header of one listed array. */
static int check_file(struct oc_dataset *ds, enum oc_ds_file f, struct oc_err *err)
{
    const char *path = ds->paths[f];
    const struct oc_ds_file_info *fi = &ds->m.files[f];
    struct oc_file *file = NULL;
    struct oc_npy_header h;
    uint64_t size;
    int rc;
    if (!oc_path_exists(path))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: missing (listed in %s)", path, MANIFEST_NAME);
    if ((rc = oc_file_open(path, OC_FILE_READ, &file, err)))
        return rc;
    rc = oc_file_size(file, &size, err);
    struct oc_err ignored;
    oc_file_close(file, &ignored);
    if (rc)
        return rc;
    if (size != fi->bytes)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %s: file is %" PRIu64 " bytes, %s says %" PRIu64,
                      path, size < fi->bytes ? "truncated" : "size mismatch", size, MANIFEST_NAME,
                      fi->bytes);
    if ((rc = oc_npy_read_header(path, &h, err)) || (rc = oc_npy_require_c_order(&h, path, err)))
        return rc;
    enum oc_dtype dt;
    unsigned ndim;
    uint64_t shape[OC_NPY_MAX_DIMS] = {0};
    expected_shape(&ds->m, f, &dt, &ndim, shape);
    if (h.dtype != dt)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: dtype %s, expected %s", path, oc_dtype_name(h.dtype),
                      oc_dtype_name(dt));
    if (h.ndim != ndim || memcmp(h.shape, shape, ndim * sizeof(uint64_t)) != 0) {
        char got[128], want[128];
        format_shape(got, sizeof(got), h.ndim, h.shape);
        format_shape(want, sizeof(want), ndim, shape);
        return OC_ERR(err, OC_ERR_FORMAT, "%s: shape %s, expected %s from %s", path, got, want,
                      MANIFEST_NAME);
    }
    if (h.data_offset != OC_NPY_HEADER_BYTES)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: header is %" PRIu64 " bytes, the format requires %u (page-aligned data)",
                      path, h.data_offset, OC_NPY_HEADER_BYTES);
    uint64_t data_bytes = 1;
    for (unsigned i = 0; i < ndim; i++)
        data_bytes *= shape[i];
    data_bytes *= oc_dtype_size(dt);
    if (size != h.data_offset + data_bytes)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: %" PRIu64 " bytes of data after the header, the shape needs %" PRIu64,
                      path, size - h.data_offset, data_bytes);
    ds->data_offset[f] = h.data_offset;
    return OC_OK;
}

static int compare_crc(const struct oc_dataset *ds, enum oc_ds_file f, uint32_t crc,
                       struct oc_err *err)
{
    if (crc != ds->m.files[f].crc32)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: checksum mismatch: crc32 %08" PRIx32 ", %s says %08" PRIx32,
                      ds->paths[f], crc, MANIFEST_NAME, ds->m.files[f].crc32);
    return OC_OK;
}

static int check_crc(const struct oc_dataset *ds, enum oc_ds_file f, const struct oc_ds_stream *s,
                     unsigned flags, struct oc_err *err)
{
    if (flags & OC_DS_OPEN_SKIP_CHECKSUM)
        return OC_OK;
    return compare_crc(ds, f, s->crc, err);
}

/* The topology's content (topology_scan.c); `copy` the arrays as they are read, or NULL. */
static int scan_topology(const struct oc_dataset *ds, unsigned flags, uint64_t *indptr,
                         void *indices, struct oc_err *err)
{
    const struct oc_manifest *m = &ds->m;
    uint32_t crc = 0;
    int rc = oc_ds_scan_indptr(ds->paths[OC_DS_INDPTR], m->n_nodes, m->n_edges, indptr, &crc, err);
    if (rc == OC_OK && !(flags & OC_DS_OPEN_SKIP_CHECKSUM))
        rc = compare_crc(ds, OC_DS_INDPTR, crc, err);
    if (rc == OC_OK)
        rc = oc_ds_scan_indices(ds->paths[OC_DS_INDICES], ds->paths[OC_DS_INDPTR], indptr,
                                m->n_nodes, m->n_edges, oc_dtype_size(m->index_dtype), indices,
                                &crc, err);
    if (rc == OC_OK && !(flags & OC_DS_OPEN_SKIP_CHECKSUM))
        rc = compare_crc(ds, OC_DS_INDICES, crc, err);
    return rc;
}

static int scan_labels(const struct oc_dataset *ds, unsigned flags, struct oc_err *err)
{
    const char *path = ds->paths[OC_DS_LABELS];
    const int64_t n_classes = ds->m.n_classes;
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint64_t i = 0;
    int rc = oc_ds_stream_open(&s, path, OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / 4; k++, i++) {
            int32_t v;
            memcpy(&v, p + 4 * k, 4);
            if (v < -1 || v >= n_classes) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: label %" PRId32 " of node %" PRIu64 " out of range [-1, %" PRId64
                            ")",
                            path, v, i, n_classes);
                goto out;
            }
        }
    }
    if (!rc)
        rc = check_crc(ds, OC_DS_LABELS, &s, flags, err);
out:
    oc_ds_stream_close(&s);
    return rc;
}

/* Ids < n_nodes, no duplicates (bitmap `cur`); overlap with earlier splits (`any`) is logged. */
static int scan_split(const struct oc_dataset *ds, enum oc_ds_file f, uint8_t *cur, uint8_t *any,
                      unsigned flags, struct oc_err *err)
{
    const char *path = ds->paths[f];
    const uint64_t n_nodes = ds->m.n_nodes;
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint64_t pos = 0, n_overlap = 0;
    int rc = oc_ds_stream_open(&s, path, OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    memset(cur, 0, (size_t)((n_nodes + 7) / 8));
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / 8; k++, pos++) {
            uint64_t v = oc_ds_get_uint(p, 8, k);
            if (v >= n_nodes) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: node id %" PRIu64 " at position %" PRIu64
                            " out of range (n_nodes %" PRIu64 ")",
                            path, v, pos, n_nodes);
                goto out;
            }
            uint8_t bit = (uint8_t)(1u << (v & 7));
            if (cur[v >> 3] & bit) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: duplicate node id %" PRIu64 " at position %" PRIu64, path, v, pos);
                goto out;
            }
            cur[v >> 3] |= bit;
            if (any[v >> 3] & bit)
                n_overlap++;
        }
    }
    if (rc)
        goto out;
    if ((rc = check_crc(ds, f, &s, flags, err)))
        goto out;
    for (uint64_t b = 0; b < (n_nodes + 7) / 8; b++)
        any[b] |= cur[b];
    if (n_overlap) { /* named by file and dataset: at import, path is the temporary's */
        const char *base = strrchr(path, '/');
        oc_log(OC_LOG_WARN,
               "%s of dataset '%s': %" PRIu64 " node ids also appear in an earlier split",
               base ? base + 1 : path, ds->m.name, n_overlap);
    }
out:
    oc_ds_stream_close(&s);
    return rc;
}

/*
 * The feature layout's map is a permutation: every row < n_nodes, none given
 * to two nodes (bitmap `seen`, n_nodes bits). Run at open and again by the
 * loader, so a map a store indexes with is never out of range.
 */
static int scan_feature_rows(const struct oc_dataset *ds, uint8_t *seen, int with_crc,
                             unsigned flags, void *copy, struct oc_err *err)
{
    const char *path = ds->paths[OC_DS_FEATURE_ROWS];
    const uint64_t n_nodes = ds->m.n_nodes;
    const size_t es = oc_dtype_size(ds->m.index_dtype);
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint64_t v = 0;
    int rc = oc_ds_stream_open(&s, path, OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    memset(seen, 0, (size_t)((n_nodes + 7) / 8));
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / es; k++, v++) {
            uint64_t r = oc_ds_get_uint(p, es, k);
            if (v >= n_nodes || r >= n_nodes) {
                rc = v >= n_nodes ? OC_ERR(err, OC_ERR_FORMAT,
                                           "%s: changed: more than %" PRIu64 " rows", path, n_nodes)
                                  : OC_ERR(err, OC_ERR_FORMAT,
                                           "%s: row %" PRIu64 " of node %" PRIu64
                                           " out of range (n_nodes %" PRIu64 ")",
                                           path, r, v, n_nodes);
                goto out;
            }
            uint8_t bit = (uint8_t)(1u << (r & 7));
            if (seen[r >> 3] & bit) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: row %" PRIu64 " of node %" PRIu64
                            " is an earlier node's too: not a permutation",
                            path, r, v);
                goto out;
            }
            seen[r >> 3] |= bit;
            if (copy && es == 4)
                ((uint32_t *)copy)[v] = (uint32_t)r;
            else if (copy)
                ((uint64_t *)copy)[v] = r;
        }
    }
    if (rc == OC_OK && v != n_nodes)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: changed: %" PRIu64 " rows, expected %" PRIu64, path, v,
                    n_nodes);
    if (rc == OC_OK && with_crc)
        rc = check_crc(ds, OC_DS_FEATURE_ROWS, &s, flags, err);
out:
    oc_ds_stream_close(&s);
    return rc;
}

static int scan_features(const struct oc_dataset *ds, unsigned flags, struct oc_err *err)
{
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    if (flags & (OC_DS_OPEN_SKIP_CHECKSUM | OC_DS_OPEN_DEFER_FEATURE_CRC))
        return OC_OK; /* nothing to check but the checksum, or the reader checks it */
    int rc = oc_ds_stream_open(&s, ds->paths[OC_DS_FEATURES], OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0)
        ;
    if (!rc)
        rc = check_crc(ds, OC_DS_FEATURES, &s, flags, err);
    oc_ds_stream_close(&s);
    return rc;
}

static int validate(struct oc_dataset *ds, unsigned flags, struct oc_err *err)
{
    int rc;
    uint8_t *cur = NULL, *any = NULL;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        if (ds->m.files[f].present && (rc = check_file(ds, (enum oc_ds_file)f, err)))
            return rc;
    }
    if (!(flags & OC_DS_OPEN_DEFER_TOPOLOGY) && (rc = scan_topology(ds, flags, NULL, NULL, err)))
        return rc;
    if (ds->m.files[OC_DS_LABELS].present && (rc = scan_labels(ds, flags, err)))
        return rc;
    size_t bm = (size_t)((ds->m.n_nodes + 7) / 8);
    if (!(cur = oc_alloc(bm ? bm : 1, "dataset validation bitmap", err)) ||
        !(any = oc_calloc(bm ? bm : 1, 1, "dataset validation bitmap", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto out;
    }
    for (int f = OC_DS_TRAIN_IDX; f <= OC_DS_TEST_IDX; f++) {
        if ((rc = scan_split(ds, (enum oc_ds_file)f, cur, any, flags, err)))
            goto out;
    }
    if (ds->m.files[OC_DS_FEATURE_ROWS].present &&
        (rc = scan_feature_rows(ds, cur, 1, flags, NULL, err)))
        goto out;
    if (ds->m.files[OC_DS_FEATURES].present)
        rc = scan_features(ds, flags, err);
out:
    oc_free(cur);
    oc_free(any);
    return rc;
}

static char *join_dup(const char *dir, const char *name, struct oc_err *err)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = oc_alloc(n, "dataset paths", err);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int oc_dataset_open(const char *dir, unsigned flags, struct oc_dataset **out, struct oc_err *err)
{
    struct oc_dataset *ds = NULL;
    char *mpath = NULL, *text = NULL;
    size_t len;
    int rc;
    *out = NULL;
    if (!(ds = oc_calloc(1, sizeof(*ds), "dataset", err)))
        return err ? err->status : OC_ERR_NOMEM;
    if (!(ds->dir = oc_strdup(dir, "dataset paths", err)))
        goto nomem;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        if (!(ds->paths[f] = join_dup(dir, oc_ds_file_name((enum oc_ds_file)f), err)))
            goto nomem;
    }
    if (!(mpath = join_dup(dir, MANIFEST_NAME, err)))
        goto nomem;
    if (!oc_path_exists(mpath)) {
        rc =
            OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a dataset directory (no %s)", dir, MANIFEST_NAME);
        goto fail;
    }
    if ((rc = oc_read_file(mpath, MANIFEST_MAX_BYTES, &text, &len, err)))
        goto fail;
    if ((rc = oc_manifest_parse(text, len, mpath, &ds->m, err)))
        goto fail;
    ds->flags = flags;
    if ((rc = validate(ds, flags, err)))
        goto fail;
    oc_free(text);
    oc_free(mpath);
    *out = ds;
    return OC_OK;
nomem:
    rc = err ? err->status : OC_ERR_NOMEM;
fail:
    oc_free(text);
    oc_free(mpath);
    oc_dataset_free(ds);
    return rc;
}

int oc_dataset_open_features(const char *dir, const char *path, struct oc_dataset **out,
                             struct oc_err *err)
{
    struct oc_dataset *ds = NULL;
    struct oc_npy_header h;
    int rc;
    *out = NULL;
    if ((rc = oc_npy_read_header(path, &h, err)) || (rc = oc_npy_require_c_order(&h, path, err)))
        return rc;
    if (h.ndim != 2 || h.shape[1] == 0 || h.shape[1] > OC_MANIFEST_MAX_DIM ||
        (h.dtype != OC_DTYPE_F32 && h.dtype != OC_DTYPE_F16))
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: not a feature matrix (want 2 dimensions of f32 or f16, at most %u "
                      "columns)",
                      path, OC_MANIFEST_MAX_DIM);
    if (!(ds = oc_calloc(1, sizeof(*ds), "dataset", err)))
        return err ? err->status : OC_ERR_NOMEM;
    struct oc_manifest *m = &ds->m;
    m->version = OC_FORMAT_VERSION;
    snprintf(m->name, sizeof(m->name), "features");
    m->n_nodes = h.shape[0];
    m->feat_dim = (uint32_t)h.shape[1];
    m->feat_dtype = h.dtype;
    m->index_dtype = oc_ds_index_dtype_for(m->n_nodes);
    m->files[OC_DS_FEATURES].present = 1;
    ds->flags = OC_DS_OPEN_SKIP_CHECKSUM;
    if (!(ds->dir = oc_strdup(dir, "dataset paths", err)))
        goto nomem;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        ds->paths[f] = f == OC_DS_FEATURES
                           ? oc_strdup(path, "dataset paths", err)
                           : join_dup(dir, oc_ds_file_name((enum oc_ds_file)f), err);
        if (!ds->paths[f])
            goto nomem;
    }
    struct oc_file *file = NULL;
    uint64_t size = 0, want = h.data_offset + m->n_nodes * m->feat_dim * oc_dtype_size(h.dtype);
    m->files[OC_DS_FEATURES].bytes = want;
    if ((rc = oc_file_open(path, OC_FILE_READ, &file, err)) == OC_OK) {
        rc = oc_file_size(file, &size, err);
        oc_file_close(file, NULL);
    }
    if (rc == OC_OK && size != want)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: %s: file is %" PRIu64 " bytes, its header's shape needs %" PRIu64, path,
                    size < want ? "truncated" : "size mismatch", size, want);
    if (rc == OC_OK) /* the header as a dataset's features.npy must have it */
        rc = check_file(ds, OC_DS_FEATURES, err);
    if (rc) {
        oc_dataset_free(ds);
        return rc;
    }
    *out = ds;
    return OC_OK;
nomem:
    rc = err ? err->status : OC_ERR_NOMEM;
    oc_dataset_free(ds);
    return rc;
}

void oc_dataset_free(struct oc_dataset *ds)
{
    if (!ds)
        return;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++)
        oc_free(ds->paths[f]);
    oc_free(ds->dir);
    oc_free(ds);
}

const struct oc_manifest *oc_dataset_manifest(const struct oc_dataset *ds)
{
    return &ds->m;
}

const char *oc_dataset_dir(const struct oc_dataset *ds)
{
    return ds->dir;
}

const char *oc_dataset_path(const struct oc_dataset *ds, enum oc_ds_file f)
{
    if ((unsigned)f >= OC_DS_FILE_COUNT)
        return NULL;
    return ds->paths[f];
}

uint64_t oc_dataset_data_offset(const struct oc_dataset *ds, enum oc_ds_file f)
{
    if ((unsigned)f >= OC_DS_FILE_COUNT)
        return 0;
    return ds->data_offset[f];
}

/* ---- loaders -------------------------------------------------------------- */

/* Loads one present array as `want`, checking it still has the validated length. */
static int load(const struct oc_dataset *ds, enum oc_ds_file f, enum oc_dtype want,
                uint64_t want_rows, void **data, struct oc_err *err)
{
    uint64_t rows, cols;
    *data = NULL;
    if (!ds->m.files[f].present)
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: dataset has no %s", ds->dir, oc_ds_file_name(f));
    int rc = oc_npy_load_as(ds->paths[f], want, data, &rows, &cols, err);
    if (rc)
        return rc;
    if (rows != want_rows || cols != 1) {
        oc_free(*data);
        *data = NULL;
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: changed since the dataset was opened (%" PRIu64
                      " rows, expected %" PRIu64 ")",
                      ds->paths[f], rows, want_rows);
    }
    return OC_OK;
}

int oc_dataset_load_indptr(const struct oc_dataset *ds, uint64_t **indptr, struct oc_err *err)
{
    return load(ds, OC_DS_INDPTR, OC_DTYPE_U64, ds->m.n_nodes + 1, (void **)indptr, err);
}

int oc_dataset_load_indices(const struct oc_dataset *ds, enum oc_dtype want, void **indices,
                            struct oc_err *err)
{
    *indices = NULL;
    if (want != OC_DTYPE_U32 && want != OC_DTYPE_U64)
        return OC_ERR(err, OC_ERR_ARG, "%s: indices load as u32 or u64, not %s",
                      ds->paths[OC_DS_INDICES], oc_dtype_name(want));
    return load(ds, OC_DS_INDICES, want, ds->m.n_edges, indices, err);
}

int oc_dataset_load_topology(const struct oc_dataset *ds, uint64_t **indptr, void **indices,
                             struct oc_err *err)
{
    const struct oc_manifest *m = &ds->m;
    *indptr = NULL;
    *indices = NULL;
    if (!(ds->flags & OC_DS_OPEN_DEFER_TOPOLOGY)) { /* checked at open: a plain load */
        int rc = oc_dataset_load_indptr(ds, indptr, err);
        if (rc == OC_OK && (rc = oc_dataset_load_indices(ds, m->index_dtype, indices, err))) {
            oc_free(*indptr);
            *indptr = NULL;
        }
        return rc;
    }
    uint64_t *ip = oc_alloc((m->n_nodes + 1) * sizeof(uint64_t), "topology: indptr", err);
    size_t es = oc_dtype_size(m->index_dtype);
    void *ix = ip ? oc_alloc(m->n_edges ? m->n_edges * es : 1, "topology: indices", err) : NULL;
    int rc =
        ip && ix ? scan_topology(ds, ds->flags, ip, ix, err) : (err ? err->status : OC_ERR_NOMEM);
    if (rc) {
        oc_free(ip);
        oc_free(ix);
        return rc;
    }
    *indptr = ip;
    *indices = ix;
    return OC_OK;
}

int oc_dataset_load_labels(const struct oc_dataset *ds, int32_t **labels, struct oc_err *err)
{
    return load(ds, OC_DS_LABELS, OC_DTYPE_I32, ds->m.n_nodes, (void **)labels, err);
}

int oc_dataset_load_split(const struct oc_dataset *ds, enum oc_ds_file which, uint64_t **ids,
                          uint64_t *n, struct oc_err *err)
{
    *ids = NULL;
    *n = 0;
    uint64_t want;
    if (which == OC_DS_TRAIN_IDX)
        want = ds->m.n_train;
    else if (which == OC_DS_VAL_IDX)
        want = ds->m.n_val;
    else if (which == OC_DS_TEST_IDX)
        want = ds->m.n_test;
    else
        return OC_ERR(err, OC_ERR_ARG, "%s: %s is not a split", ds->dir, oc_ds_file_name(which));
    int rc = load(ds, which, OC_DTYPE_U64, want, (void **)ids, err);
    if (!rc)
        *n = want;
    return rc;
}

int oc_dataset_load_feature_rows(const struct oc_dataset *ds, enum oc_dtype want, void **rows,
                                 const char *what, struct oc_err *err)
{
    *rows = NULL;
    if (!ds->m.files[OC_DS_FEATURE_ROWS].present)
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: dataset has no feature layout", ds->dir);
    if (want != ds->m.index_dtype)
        return OC_ERR(err, OC_ERR_ARG, "%s: feature rows load as %s, not %s",
                      ds->paths[OC_DS_FEATURE_ROWS], oc_dtype_name(ds->m.index_dtype),
                      oc_dtype_name(want));
    uint64_t n = ds->m.n_nodes, bm = (n + 7) / 8;
    uint8_t *seen = oc_alloc(bm ? bm : 1, "dataset validation bitmap", err);
    void *map = oc_alloc(n ? n * oc_dtype_size(want) : 1, what, err);
    int rc = seen && map ? scan_feature_rows(ds, seen, 1, 0, map, err)
                         : (err ? err->status : OC_ERR_NOMEM);
    oc_free(seen);
    if (rc)
        oc_free(map);
    else
        *rows = map;
    return rc;
}

/* ---- features.npy's checksum, followed by its reader ---------------------- */

#define FEATURES_CRC_CHUNK OC_DS_CHUNK_BYTES /* the read of the rest, without a buffer given */

int oc_dataset_features_crc_deferred(const struct oc_dataset *ds)
{
    return (ds->flags & OC_DS_OPEN_DEFER_FEATURE_CRC) && !(ds->flags & OC_DS_OPEN_SKIP_CHECKSUM) &&
           ds->m.files[OC_DS_FEATURES].present;
}

/* Reads features.npy's bytes [c->at, size) into c through buf (cap bytes, aligned), read
   ahead (oc_io_scan). */
static int features_crc_read_rest(const struct oc_dataset *ds, struct oc_crc_follow *c,
                                  uint8_t *buf, size_t cap, struct oc_err *err)
{
    uint64_t size = ds->m.files[OC_DS_FEATURES].bytes;
    struct oc_io_scan sc;
    int rc = oc_io_scan_open(&sc, ds->paths[OC_DS_FEATURES], buf, cap, c, err);
    for (uint64_t off = c->at; off < size && rc == OC_OK;) {
        uint64_t n = oc_io_scan_units(&sc, off, 1);
        const uint8_t *p;
        n = n < size - off ? n : size - off;
        rc = oc_io_scan_read(&sc, off, n, &p, err);
        off += n;
    }
    oc_io_scan_close(&sc);
    return rc;
}

int oc_dataset_features_crc_begin(const struct oc_dataset *ds, struct oc_crc_follow *c,
                                  struct oc_err *err)
{
    *c = (struct oc_crc_follow){0, 0};
    struct oc_file *f = NULL;
    uint64_t n = ds->data_offset[OC_DS_FEATURES];
    uint8_t *head = oc_alloc(n ? n : 1, "dataset: features.npy's header", err);
    int rc = head ? oc_file_open(ds->paths[OC_DS_FEATURES], OC_FILE_READ, &f, err)
                  : (err ? err->status : OC_ERR_NOMEM);
    if (rc == OC_OK && (rc = oc_file_pread(f, head, n, 0, err)) == OC_OK)
        oc_crc_follow_feed(c, 0, head, n);
    oc_file_close(f, NULL);
    oc_free(head);
    return rc;
}

int oc_dataset_features_crc_finish(const struct oc_dataset *ds, struct oc_crc_follow *c,
                                   uint8_t *buf, size_t cap, uint64_t *read_bytes,
                                   struct oc_err *err)
{
    uint64_t from = c->at, size = ds->m.files[OC_DS_FEATURES].bytes;
    uint8_t *own = NULL;
    int rc = OC_OK;
    if (from < size && (!buf || cap < oc_io_scan_bytes_for(0))) {
        cap = FEATURES_CRC_CHUNK;
        if (!(buf = own = oc_io_buf_alloc(cap, "dataset: checking features.npy", err)))
            return err ? err->status : OC_ERR_NOMEM;
    }
    if (from < size)
        rc = features_crc_read_rest(ds, c, buf, cap, err);
    oc_free(own);
    if (read_bytes)
        *read_bytes = size > from ? size - from : 0;
    if (rc == OC_OK)
        assert(c->at == size); /* open checked the size; the rest was read */
    return rc ? rc : compare_crc(ds, OC_DS_FEATURES, c->crc, err);
}
