/*
 * part_set.c — `offcore partition`: a dataset cut into N parts, one per rank
 * of `train --distributed` (docs/FORMAT.md section 10).
 *
 *   DIR ──METIS (partition.c)──► part_of[v] ──► local row of v = rank of v
 *                                               among its part's nodes (id order)
 *   OUT.tmp-…/ (marked)
 *     part-k/   dataset without features (topology, labels, splits: copies)
 *               rows.npy   one scan of DIR/features.npy, each row appended
 *                          to its owner's file (all N open at once)
 *               owner.npy  u32 (N, 2): owner, row; the same bytes in every part
 *               part.json  run id, counts, files' sizes and CRC-32s (last)
 *     partition.json       run id, parts' sizes, each part.json's size, CRC
 *   ──rename──► OUT
 *
 * Place in the data flow: plan (the partition) → dataset (arrays, builder);
 * the CLI's `partition`. Reads the topology in memory.
 * Thread-safety: one call per output.
 * Ownership: everything allocated is freed before return; the temporary is
 * registered for removal on a signal and removed on failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "offcore/io.h"
#include "offcore/plan.h"
#include "plan/part_set_int.h"

/* What the writer holds: topology, the partition, the local rows. */
struct pw {
    const struct oc_dataset *ds;
    const struct oc_manifest *m;
    uint32_t n_parts;
    char run_id[OC_PLAN_RUN_ID_LEN + 1];
    uint32_t *owner;   /* 2 x n_nodes: part, row */
    uint64_t *n_local; /* n_parts */
    uint64_t *file_bytes;
    uint32_t *file_crc; /* per part: part.json's */
    struct oc_progress *progress;
};

static int run_id_new(char out[OC_PLAN_RUN_ID_LEN + 1], struct oc_err *err)
{
    uint8_t b[OC_PLAN_RUN_ID_LEN / 2];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return OC_ERR_ERRNO(err, OC_ERR_IO, errno, "partition: getrandom for the run id");
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return OC_OK;
}

/* The METIS partition of ds's topology (kept under plan_dir), as the (part, row) map. */
static int pw_partition(struct pw *w, const char *plan_dir, struct oc_err *err)
{
    const struct oc_manifest *m = w->m;
    uint64_t *indptr = NULL, *train = NULL, n_train = 0;
    void *indices = NULL;
    struct oc_plan_partition p;
    memset(&p, 0, sizeof(p));
    int rc = oc_dataset_load_indptr(w->ds, &indptr, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_indices(w->ds, m->index_dtype, &indices, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_split(w->ds, OC_DS_TRAIN_IDX, &train, &n_train, err);
    if (rc == OC_OK) {
        struct oc_graph g = {m->n_nodes, indptr, NULL, NULL, NULL};
        if (m->index_dtype == OC_DTYPE_U32)
            g.indices32 = indices;
        else
            g.indices64 = indices;
        oc_progress_phase(w->progress, "partition: METIS", 0, NULL);
        rc = oc_plan_partition_get(w->ds, &g, train, n_train, w->n_parts, OC_PLAN_PART_METIS,
                                   plan_dir, &p, err);
    }
    oc_free(indptr);
    oc_free(indices);
    oc_free(train);
    if (rc)
        return rc;
    w->owner = oc_alloc(2 * m->n_nodes * sizeof(uint32_t), "partition: node map", err);
    w->n_local = oc_calloc(w->n_parts, sizeof(uint64_t), "partition: part sizes", err);
    w->file_bytes = oc_calloc(w->n_parts, sizeof(uint64_t), "partition: part sizes", err);
    w->file_crc = oc_calloc(w->n_parts, sizeof(uint32_t), "partition: part sizes", err);
    if (!w->owner || !w->n_local || !w->file_bytes || !w->file_crc) {
        oc_plan_partition_deinit(&p);
        return err->status;
    }
    for (uint64_t v = 0; v < m->n_nodes; v++) {
        uint32_t k = p.part_of[v];
        w->owner[2 * v] = k;
        w->owner[2 * v + 1] = (uint32_t)w->n_local[k]++;
    }
    oc_plan_partition_deinit(&p);
    for (uint32_t k = 0; k < w->n_parts; k++)
        if (w->n_local[k] == 0)
            return OC_ERR(err, OC_ERR_ARG,
                          "partition: METIS left part %u of %u empty (%" PRIu64
                          " nodes): use fewer --parts",
                          k, w->n_parts, m->n_nodes);
    return OC_OK;
}

/* Copies one array of the source unchanged into the builder. */
static int copy_array(struct pw *w, enum oc_ds_file f, struct oc_ds_builder *b, uint8_t *buf,
                      struct oc_err *err)
{
    const char *path = oc_dataset_path(w->ds, f);
    struct oc_npy_header h;
    struct oc_npy_writer *nw = NULL;
    struct oc_file *in = NULL;
    uint64_t size;
    int rc;
    if ((rc = oc_npy_read_header(path, &h, err)) ||
        (rc = oc_file_open(path, OC_FILE_READ, &in, err)) || (rc = oc_file_size(in, &size, err)) ||
        (rc = oc_ds_builder_begin_array(b, f, h.dtype, h.ndim, h.shape, &nw, err)))
        goto out;
    for (uint64_t off = h.data_offset; off < size && rc == OC_OK;) {
        size_t len = (size_t)(size - off < PART_IO_BYTES ? size - off : PART_IO_BYTES);
        if ((rc = oc_file_pread(in, buf, len, off, err)) == OC_OK)
            rc = oc_npy_writer_append(nw, buf, len, err);
        off += len;
    }
    if (rc)
        oc_npy_writer_abort(nw);
    else
        rc = oc_ds_builder_end_array(b, f, nw, err);
out:
    if (in) {
        struct oc_err ignored;
        oc_file_close(in, &ignored);
    }
    return rc;
}

/* part-k's dataset: the source's topology, labels and splits, no features; the same
   manifest in every part (so a checkpoint's fingerprint is every rank's). */
static int write_part_dataset(struct pw *w, const char *dir, uint8_t *buf, struct oc_err *err)
{
    struct oc_ds_builder *b = NULL;
    int rc = oc_ds_builder_new(dir, &b, err);
    if (rc)
        return rc;
    struct oc_manifest *bm = oc_ds_builder_manifest(b);
    *bm = *w->m;
    memset(bm->files, 0, sizeof(bm->files));
    bm->feat_dim = 0;
    bm->layout[0] = '\0';
    snprintf(bm->provenance, sizeof(bm->provenance), "offcore partition --parts %u (run %s) of %s",
             w->n_parts, w->run_id, w->m->name);
    static const enum oc_ds_file copied[] = {OC_DS_INDPTR,    OC_DS_INDICES, OC_DS_LABELS,
                                             OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]) && rc == OC_OK; i++)
        if (copied[i] != OC_DS_LABELS || w->m->n_classes > 0)
            rc = copy_array(w, copied[i], b, buf, err);
    if (rc == OC_OK)
        rc = oc_ds_builder_commit(b, err);
    oc_ds_builder_free(b);
    return rc;
}

/* Every part's rows.npy in one scan of the source's features (node-id order). */
static int write_rows(struct pw *w, const char *tmp, uint8_t *buf, struct oc_err *err)
{
    const struct oc_manifest *m = w->m;
    const uint64_t row_bytes = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    /* rows per read: at least one (write_parts sized buf for a row larger than PART_IO_BYTES) */
    const uint64_t per_read = PART_IO_BYTES / row_bytes ? PART_IO_BYTES / row_bytes : 1;
    struct oc_npy_writer **nw = oc_calloc(w->n_parts, sizeof(*nw), "partition: writers", err);
    struct oc_file *in = NULL;
    if (!nw)
        return err->status;
    int rc = oc_file_open(oc_dataset_path(w->ds, OC_DS_FEATURES), OC_FILE_READ, &in, err);
    for (uint32_t k = 0; k < w->n_parts && rc == OC_OK; k++) {
        char path[4400];
        uint64_t shape[2] = {w->n_local[k], m->feat_dim};
        snprintf(path, sizeof(path), "%s/part-%u/" PART_ROWS, tmp, k);
        rc = oc_npy_writer_open(path, m->feat_dtype, 2, shape, &nw[k], err);
    }
    const uint64_t off0 = oc_dataset_data_offset(w->ds, OC_DS_FEATURES);
    oc_progress_phase(w->progress, "partition: rows", m->n_nodes, "rows");
    for (uint64_t v = 0; v < m->n_nodes && rc == OC_OK;) {
        uint64_t n = m->n_nodes - v < per_read ? m->n_nodes - v : per_read;
        rc = oc_file_pread(in, buf, (size_t)(n * row_bytes), off0 + v * row_bytes, err);
        for (uint64_t i = 0; i < n && rc == OC_OK; i++)
            rc = oc_npy_writer_append(nw[w->owner[2 * (v + i)]], buf + i * row_bytes,
                                      (size_t)row_bytes, err);
        v += n;
        oc_progress_add(w->progress, n);
    }
    for (uint32_t k = 0; k < w->n_parts; k++) {
        if (!nw[k])
            continue;
        if (rc)
            oc_npy_writer_abort(nw[k]);
        else
            rc = oc_npy_writer_close(nw[k], NULL, NULL, err);
    }
    oc_free(nw);
    if (in) {
        struct oc_err ignored;
        oc_file_close(in, &ignored);
    }
    return rc;
}

/* Size and CRC-32 of a whole file. */
static int file_crc(const char *path, uint8_t *buf, uint64_t *bytes, uint32_t *crc,
                    struct oc_err *err)
{
    struct oc_file *f = NULL;
    int rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc == OC_OK)
        rc = oc_file_size(f, bytes, err);
    *crc = 0;
    for (uint64_t off = 0; rc == OC_OK && off < *bytes;) {
        size_t len = (size_t)(*bytes - off < PART_IO_BYTES ? *bytes - off : PART_IO_BYTES);
        if ((rc = oc_file_pread(f, buf, len, off, err)) == OC_OK)
            *crc = oc_crc32(*crc, buf, len);
        off += len;
    }
    if (f) {
        struct oc_err ignored;
        oc_file_close(f, &ignored);
    }
    return rc;
}

/* Integers as raw JSON numbers (cJSON would print large ones as 1e+15). */
static int add_u64(cJSON *o, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    return cJSON_AddRawToObject(o, key, buf) != NULL;
}

static cJSON *file_entry(uint64_t bytes, uint32_t crc)
{
    char hex[9];
    snprintf(hex, sizeof(hex), "%08" PRIx32, crc);
    cJSON *o = cJSON_CreateObject();
    if (o && (!add_u64(o, "bytes", bytes) || !cJSON_AddStringToObject(o, "crc32", hex))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The keys part.json and partition.json share. */
static int add_common(cJSON *o, const char *format, const struct pw *w)
{
    return cJSON_AddStringToObject(o, "format", format) &&
           add_u64(o, "version", PART_SET_VERSION) &&
           cJSON_AddStringToObject(o, "run_id", w->run_id) && add_u64(o, "n_parts", w->n_parts) &&
           add_u64(o, "n_nodes", w->m->n_nodes) && add_u64(o, "feat_dim", w->m->feat_dim) &&
           cJSON_AddStringToObject(o, "feat_dtype", oc_dtype_name(w->m->feat_dtype));
}

/* Writes a cJSON document atomically at path; frees it. */
static int write_json(cJSON *o, int ok, const char *path, struct oc_err *err)
{
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: formatting JSON", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON's terminator becomes the final newline */
    int rc = oc_write_file_atomic(path, text, len + 1, err);
    cJSON_free(text);
    return rc;
}

/* part-k/part.json (after its files); its size and CRC go into w for partition.json. */
static int write_part_json(struct pw *w, const char *part_dir, uint32_t k, uint8_t *buf,
                           struct oc_err *err)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && add_common(o, PART_FORMAT, w) && add_u64(o, "part", k) &&
             add_u64(o, "n_local", w->n_local[k]);
    cJSON *files = ok ? cJSON_AddObjectToObject(o, "files") : NULL;
    ok = ok && files;
    int rc = OC_OK;
    for (int i = 0; i < PART_N_FILES && ok && rc == OC_OK; i++) {
        char path[4500];
        uint64_t bytes;
        uint32_t crc;
        snprintf(path, sizeof(path), "%s/%s", part_dir, part_file_names[i]);
        if ((rc = file_crc(path, buf, &bytes, &crc, err)) == OC_OK) {
            cJSON *e = file_entry(bytes, crc);
            ok = e && cJSON_AddItemToObject(files, part_file_names[i], e);
        }
    }
    if (rc) {
        cJSON_Delete(o);
        return rc;
    }
    char path[4500];
    snprintf(path, sizeof(path), "%s/" PART_JSON, part_dir);
    if ((rc = write_json(o, ok, path, err)))
        return rc;
    return file_crc(path, buf, &w->file_bytes[k], &w->file_crc[k], err);
}

static int write_set_json(struct pw *w, const char *tmp, struct oc_err *err)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && add_common(o, PART_SET_FORMAT, w) &&
             cJSON_AddStringToObject(o, "partitioner", "metis") &&
             cJSON_AddStringToObject(o, "source", w->m->name);
    cJSON *parts = ok ? cJSON_AddArrayToObject(o, "parts") : NULL;
    ok = ok && parts;
    for (uint32_t k = 0; k < w->n_parts && ok; k++) {
        cJSON *e = file_entry(w->file_bytes[k], w->file_crc[k]);
        ok = e && add_u64(e, "n_local", w->n_local[k]) && cJSON_AddItemToArray(parts, e);
    }
    char path[4400];
    snprintf(path, sizeof(path), "%s/" PART_SET_JSON, tmp);
    return write_json(o, ok, path, err);
}

/* Every part under tmp, then partition.json. */
static int write_parts(struct pw *w, const char *tmp, struct oc_err *err)
{
    const uint64_t row_bytes = (uint64_t)w->m->feat_dim * oc_dtype_size(w->m->feat_dtype);
    uint64_t cap = row_bytes > PART_IO_BYTES ? row_bytes : PART_IO_BYTES;
    uint8_t *buf = oc_alloc(cap, "partition: copy buffer", err);
    if (!buf)
        return err->status;
    int rc = OC_OK;
    oc_progress_phase(w->progress, "partition: topology", w->n_parts, "parts");
    for (uint32_t k = 0; k < w->n_parts && rc == OC_OK; k++) {
        char dir[4400], path[4500];
        snprintf(dir, sizeof(dir), "%s/part-%u", tmp, k);
        uint64_t shape[2] = {w->m->n_nodes, 2};
        struct oc_npy_writer *nw = NULL;
        if ((rc = write_part_dataset(w, dir, buf, err)))
            break;
        snprintf(path, sizeof(path), "%s/" PART_OWNER, dir);
        if ((rc = oc_npy_writer_open(path, OC_DTYPE_U32, 2, shape, &nw, err)))
            break;
        if ((rc = oc_npy_writer_append(nw, w->owner, 2 * w->m->n_nodes * sizeof(uint32_t), err)))
            oc_npy_writer_abort(nw);
        else
            rc = oc_npy_writer_close(nw, NULL, NULL, err);
        oc_progress_add(w->progress, 1);
    }
    if (rc == OC_OK)
        rc = write_rows(w, tmp, buf, err);
    for (uint32_t k = 0; k < w->n_parts && rc == OC_OK; k++) {
        char dir[4400];
        snprintf(dir, sizeof(dir), "%s/part-%u", tmp, k);
        rc = write_part_json(w, dir, k, buf, err);
    }
    if (rc == OC_OK)
        rc = write_set_json(w, tmp, err);
    oc_free(buf);
    return rc;
}

static int check_input(const struct oc_dataset *ds, uint32_t n_parts, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    const char *dir = oc_dataset_dir(ds);
    if (m->feat_dim == 0)
        return OC_ERR(err, OC_ERR_ARG, "%s: has no features: there is nothing to partition", dir);
    if (m->layout[0])
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "%s: its features have a layout (%s): partition the dataset in node-id "
                      "order it was laid out from",
                      dir, m->layout);
    if (m->n_nodes > UINT32_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "%s: %" PRIu64 " nodes: partition takes < 2^32", dir,
                      m->n_nodes);
    if (n_parts < 2 || n_parts > OC_PLAN_PARTS_MAX || n_parts > m->n_nodes)
        return OC_ERR(err, OC_ERR_ARG,
                      "--parts %u: from 2 to %d, and at most the %" PRIu64 " nodes of %s", n_parts,
                      OC_PLAN_PARTS_MAX, m->n_nodes, dir);
    return OC_OK;
}

int oc_plan_part_set_write(const struct oc_dataset *ds, uint32_t n_parts, const char *plan_dir,
                           const char *out, struct oc_progress *progress,
                           char run_id[OC_PLAN_RUN_ID_LEN + 1], struct oc_err *err)
{
    char dir[4200], tmp[4300];
    int rc = check_input(ds, n_parts, err);
    if (rc == OC_OK)
        rc = oc_out_dir_path(dir, sizeof(dir), out, err);
    if (rc == OC_OK && oc_path_exists(dir))
        rc = OC_ERR(err, OC_ERR_EXISTS, "%s: already exists (will not overwrite it)", dir);
    if (rc == OC_OK)
        rc = oc_tmp_name(tmp, sizeof(tmp), dir, err);
    if (rc)
        return rc;
    struct pw w;
    memset(&w, 0, sizeof(w));
    w.ds = ds;
    w.m = oc_dataset_manifest(ds);
    w.n_parts = n_parts;
    w.progress = progress;
    if ((rc = run_id_new(w.run_id, err)) || (rc = pw_partition(&w, plan_dir, err)))
        goto out;
    if ((rc = oc_tmp_create(tmp, OC_TMP_DIR, err)) || (rc = oc_dir_mark(tmp, err)) ||
        (rc = write_parts(&w, tmp, err))) {
        struct oc_err ignored;
        oc_rm_rf(tmp, &ignored);
        oc_tmp_unregister(tmp);
        goto out;
    }
    oc_dir_unmark(tmp);
    if ((rc = oc_tmp_commit(tmp, dir, err))) {
        struct oc_err ignored;
        oc_rm_rf(tmp, &ignored);
        oc_tmp_unregister(tmp);
        goto out;
    }
    memcpy(run_id, w.run_id, sizeof(w.run_id));
out:
    oc_free(w.owner);
    oc_free(w.n_local);
    oc_free(w.file_bytes);
    oc_free(w.file_crc);
    return rc;
}

int oc_plan_part_set_is(const char *dir)
{
    char path[4400];
    struct stat st;
    snprintf(path, sizeof(path), "%s/" PART_SET_JSON, dir);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
