/*
 * relayout.c — writes a dataset's copy whose features.npy rows are in a
 * given order (a feature layout, docs/FORMAT.md version 2): node v's
 * features become row row_of[v], and feature_rows.npy records the map. Node
 * ids, topology, labels and splits are copied unchanged, so the sampler and
 * the model see the same graph and training gives the same weights.
 *
 *   source features (file order) ──scan──► band [lo, hi) of output rows
 *        read ahead (oc_io_scan),    each row whose output row falls
 *        once per band                in the band is copied into place
 *                                         │
 *                                         └──► appended to the new features.npy
 *
 * Every read and write is sequential; the band (mem_bytes) bounds memory, so
 * a file of F bytes takes ceil(F / band) scans of the source. A source that
 * already has a layout is composed with it (source row -> output row).
 *
 * Place in the data flow: dataset; the CLI's `layout` (order from plan/).
 * Thread-safety: one call per output.
 * Ownership: row_of is borrowed; everything else is freed before return.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

#define RELAYOUT_READ_BYTES ((uint64_t)8 << 20) /* the reads' buffer: a scan's two halves */
#define RELAYOUT_BAND_MIN   ((uint64_t)1 << 20) /* the band when mem_bytes leaves less */

/* The reads' buffer: two halves of a scan, each a row at least. */
static uint64_t reads_bytes(uint64_t rb)
{
    uint64_t b = oc_io_scan_bytes_for(rb);
    return b > RELAYOUT_READ_BYTES ? b : RELAYOUT_READ_BYTES;
}

uint64_t oc_dataset_relayout_fixed_bytes(const struct oc_dataset *ds)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    uint64_t rb = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    /* the map to output rows (8 a node), the reads, a writer, and the builder's own */
    return (m->n_nodes ? m->n_nodes : 1) * sizeof(uint64_t) + reads_bytes(rb) + OC_NPY_WRITER_BUF +
           OC_NPY_HEADER_BYTES + ((uint64_t)1 << 20);
}

/* Copies one array of the source unchanged (same header, same bytes). */
static int copy_array(const struct oc_dataset *ds, enum oc_ds_file f, struct oc_ds_builder *b,
                      uint8_t *buf, uint64_t buf_bytes, struct oc_progress *progress,
                      struct oc_err *err)
{
    const char *path = oc_dataset_path(ds, f);
    struct oc_npy_header h;
    struct oc_npy_writer *w = NULL;
    struct oc_io_scan sc = {0};
    int rc;
    if ((rc = oc_npy_read_header(path, &h, err)) ||
        (rc = oc_io_scan_open(&sc, path, buf, buf_bytes, NULL, err)))
        goto out;
    if ((rc = oc_ds_builder_begin_array(b, f, h.dtype, h.ndim, h.shape, &w, err)))
        goto out;
    oc_progress_add(progress, h.data_offset); /* the phase counts whole files */
    for (uint64_t off = h.data_offset, size = sc.file_bytes; off < size && rc == OC_OK;) {
        uint64_t len = oc_io_scan_units(&sc, off, 1);
        const uint8_t *p;
        len = len < size - off ? len : size - off;
        if ((rc = oc_io_scan_read(&sc, off, len, &p, err)) == OC_OK)
            rc = oc_npy_writer_append(w, p, (size_t)len, err);
        off += len;
        oc_progress_add(progress, len);
    }
    if (rc)
        oc_npy_writer_abort(w);
    else
        rc = oc_ds_builder_end_array(b, f, w, err);
out:
    oc_io_scan_close(&sc);
    return rc;
}

/* dst[r] = output row of source row r: row_of composed with the source's own layout. */
static int source_to_output(const struct oc_dataset *ds, const uint64_t *row_of, uint64_t **dst,
                            struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    const uint64_t n = m->n_nodes;
    void *old = NULL;
    *dst = oc_alloc((n ? n : 1) * sizeof(uint64_t), "dataset layout: rows", err);
    if (!*dst)
        return err ? err->status : OC_ERR_NOMEM;
    if (!m->layout[0]) {
        memcpy(*dst, row_of, n * sizeof(uint64_t));
        return OC_OK;
    }
    int rc = oc_dataset_load_feature_rows(ds, m->index_dtype, &old, "dataset layout: rows", err);
    if (rc)
        return rc;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t r = m->index_dtype == OC_DTYPE_U32 ? ((const uint32_t *)old)[v]
                                                    : ((const uint64_t *)old)[v];
        (*dst)[r] = row_of[v];
    }
    oc_free(old);
    return OC_OK;
}

/*
 * One band of output rows [lo, hi): a scan of the source (sc, just opened), rows copied into
 * place; progress counts the source's bytes scanned (runs skipped included).
 */
static int fill_band(struct oc_io_scan *sc, uint64_t data_off, uint64_t n, uint64_t rb,
                     const uint64_t *dst, uint64_t lo, uint64_t hi, uint8_t *band,
                     struct oc_progress *progress, struct oc_err *err)
{
    int rc = OC_OK;
    for (uint64_t r0 = 0, k; r0 < n && rc == OC_OK; r0 += k) {
        k = oc_io_scan_units(sc, data_off + r0 * rb, rb);
        k = n - r0 < k ? n - r0 : k;
        oc_progress_add(progress, k * rb);
        int any = 0;
        for (uint64_t i = 0; i < k && !any; i++)
            any = dst[r0 + i] >= lo && dst[r0 + i] < hi;
        if (!any)
            continue; /* nothing of this run lands in the band */
        const uint8_t *p;
        if ((rc = oc_io_scan_read(sc, data_off + r0 * rb, k * rb, &p, err)))
            break;
        for (uint64_t i = 0; i < k; i++)
            if (dst[r0 + i] >= lo && dst[r0 + i] < hi)
                memcpy(band + (dst[r0 + i] - lo) * rb, p + i * rb, rb);
    }
    return rc;
}

static int write_features(const struct oc_dataset *ds, const uint64_t *dst, uint64_t mem_bytes,
                          struct oc_ds_builder *b, uint8_t *buf, uint64_t buf_bytes,
                          struct oc_progress *progress, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    const uint64_t n = m->n_nodes, rb = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    uint64_t band_bytes = mem_bytes > RELAYOUT_BAND_MIN ? mem_bytes : RELAYOUT_BAND_MIN;
    uint64_t band_rows = band_bytes / rb ? band_bytes / rb : 1;
    if (band_rows > n)
        band_rows = n ? n : 1;
    uint64_t shape[2] = {n, m->feat_dim};
    uint64_t n_bands = n ? (n + band_rows - 1) / band_rows : 0;
    oc_progress_phase(progress, n_bands > 1 ? "layout: features (scans)" : "layout: features",
                      n_bands * n * rb, OC_PROGRESS_BYTES); /* each band scans the source */
    struct oc_npy_writer *w = NULL;
    uint8_t *band = oc_alloc(band_rows * rb, "dataset layout: band", err);
    int rc = band ? OC_OK : (err ? err->status : OC_ERR_NOMEM);
    if (rc == OC_OK)
        rc = oc_ds_builder_begin_array(b, OC_DS_FEATURES, m->feat_dtype, 2, shape, &w, err);
    uint64_t data_off = oc_dataset_data_offset(ds, OC_DS_FEATURES);
    for (uint64_t lo = 0; lo < n && rc == OC_OK; lo += band_rows) {
        uint64_t hi = n - lo < band_rows ? n : lo + band_rows;
        struct oc_io_scan sc; /* a scan of the source per band */
        rc = oc_io_scan_open(&sc, oc_dataset_path(ds, OC_DS_FEATURES), buf, buf_bytes, NULL, err);
        if (rc == OC_OK)
            rc = fill_band(&sc, data_off, n, rb, dst, lo, hi, band, progress, err);
        oc_io_scan_close(&sc);
        if (rc == OC_OK)
            rc = oc_npy_writer_append(w, band, (size_t)((hi - lo) * rb), err);
    }
    if (w && rc)
        oc_npy_writer_abort(w);
    else if (w)
        rc = oc_ds_builder_end_array(b, OC_DS_FEATURES, w, err);
    oc_free(band);
    return rc;
}

/* feature_rows.npy: row_of in the index dtype. */
static int write_rows(const struct oc_manifest *m, const uint64_t *row_of, struct oc_ds_builder *b,
                      uint8_t *buf, struct oc_err *err)
{
    const uint64_t n = m->n_nodes;
    const size_t es = oc_dtype_size(m->index_dtype);
    const uint64_t per = RELAYOUT_READ_BYTES / es;
    struct oc_npy_writer *w;
    int rc = oc_ds_builder_begin_array(b, OC_DS_FEATURE_ROWS, m->index_dtype, 1, &n, &w, err);
    for (uint64_t v0 = 0; v0 < n && rc == OC_OK; v0 += per) {
        uint64_t k = n - v0 < per ? n - v0 : per;
        for (uint64_t i = 0; i < k; i++) {
            if (es == 4) {
                uint32_t r = (uint32_t)row_of[v0 + i];
                memcpy(buf + 4 * i, &r, 4);
            } else {
                memcpy(buf + 8 * i, &row_of[v0 + i], 8);
            }
        }
        rc = oc_npy_writer_append(w, buf, (size_t)(k * es), err);
    }
    if (rc) {
        oc_npy_writer_abort(w);
        return rc;
    }
    return oc_ds_builder_end_array(b, OC_DS_FEATURE_ROWS, w, err);
}

int oc_dataset_relayout(const struct oc_dataset *ds, const uint64_t *row_of, const char *layout,
                        const char *out, uint64_t mem_bytes, struct oc_progress *progress,
                        struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    struct oc_ds_builder *b = NULL;
    uint64_t *dst = NULL;
    uint8_t *buf = NULL;
    int rc;
    if (m->feat_dim == 0)
        return OC_ERR(err, OC_ERR_ARG, "%s: has no features: there is nothing to lay out",
                      oc_dataset_dir(ds));
    if (!layout || !*layout || strlen(layout) >= sizeof(m->layout))
        return OC_ERR(err, OC_ERR_ARG, "layout: invalid layout name");
    if ((rc = oc_ds_builder_new(out, &b, err)))
        return rc;
    struct oc_manifest *bm = oc_ds_builder_manifest(b);
    *bm = *m;
    memset(bm->files, 0, sizeof(bm->files));
    snprintf(bm->layout, sizeof(bm->layout), "%s", layout);
    size_t pl = strlen(bm->provenance);
    snprintf(bm->provenance + pl, sizeof(bm->provenance) - pl, "%soffcore layout --order %s",
             pl ? "; " : "", layout);
    /* reads (two halves of a scan, each a row at least) and the map's writes */
    uint64_t buf_bytes = reads_bytes((uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype));
    if (!(buf = oc_io_buf_alloc(buf_bytes, "dataset layout: reads", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto out;
    }
    static const enum oc_ds_file same[] = {OC_DS_INDPTR,    OC_DS_INDICES, OC_DS_LABELS,
                                           OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    uint64_t same_bytes = 0;
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        same_bytes += m->files[same[i]].present ? m->files[same[i]].bytes : 0;
    oc_progress_phase(progress, "layout: copy topology", same_bytes, OC_PROGRESS_BYTES);
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]) && rc == OC_OK; i++)
        if (m->files[same[i]].present)
            rc = copy_array(ds, same[i], b, buf, buf_bytes, progress, err);
    if (rc == OC_OK)
        rc = source_to_output(ds, row_of, &dst, err);
    if (rc == OC_OK)
        rc = write_features(ds, dst, mem_bytes, b, buf, buf_bytes, progress, err);
    oc_free(dst); /* before the map's own buffer: only one N-sized array at a time */
    dst = NULL;
    if (rc == OC_OK)
        rc = write_rows(m, row_of, b, buf, err);
    if (rc == OC_OK)
        rc = oc_ds_builder_commit_checked(b, err);
    oc_progress_finish(progress);
out:
    oc_free(buf);
    oc_ds_builder_free(b);
    return rc;
}
