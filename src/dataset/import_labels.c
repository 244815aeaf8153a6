/*
 * import_labels.c — labels and train/val/test splits from text (or gzip)
 * inputs: one label per line, one node id per line (index form), or one role
 * per node (role form: 0 train, 1 val, 2 test, -1 unused), streamed into
 * labels.npy / train_idx.npy / val_idx.npy / test_idx.npy.
 *
 * Place in the data flow: used by import_text.c and import_ogb.c; reads with
 * oc_line_reader, writes with the array sink of import_sink.c.
 * Memory: a split's size must be known before its .npy header is written, so
 * files are read twice (count, then write) instead of being held in RAM; a
 * role-form file is read once to count and once per role.
 * Thread-safety: one call per thread.
 * Ownership: paths are borrowed.
 */
#include <string.h>
#include <strings.h>

#include "dataset/import_int.h"

static const enum oc_ds_file split_files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};

static int is_nan_word(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (strncasecmp(line, "nan", 3) != 0)
        return 0;
    line += 3;
    while (*line == ' ' || *line == '\t' || *line == '\r')
        line++;
    return *line == '\0';
}

/* Parses one label line: an integer, or with allow_nan "nan" (-1) or an integral float. */
static int parse_label(const char *line, int allow_nan, int64_t *v)
{
    const char *p = line;
    int64_t x, extra;
    if (oc_imp_scan_i64(&p, ' ', &x) == 1 && oc_imp_scan_i64(&p, ' ', &extra) == 0) {
        *v = x;
        return 0;
    }
    if (!allow_nan)
        return -1;
    if (is_nan_word(line)) {
        *v = -1;
        return 0;
    }
    p = line;
    float f, fextra;
    if (oc_imp_scan_f32(&p, ' ', &f) == 1 && oc_imp_scan_f32(&p, ' ', &fextra) == 0 && f >= -1.0f &&
        f < 2147483648.0f && (float)(int64_t)f == f) {
        *v = (int64_t)f;
        return 0;
    }
    return -1;
}

int oc_imp_labels_text(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                       uint32_t n_classes_hint, int allow_nan, uint32_t *n_classes,
                       struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    struct oc_imp_array a;
    memset(&a, 0, sizeof(a));
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    rc = oc_imp_array_begin(&a, b, OC_DS_LABELS, OC_DTYPE_I32, n_nodes, err);
    if (rc)
        goto out;
    int64_t limit = n_classes_hint ? (int64_t)n_classes_hint : INT32_MAX;
    int64_t max = -1;
    uint64_t n = 0, blank_at = 0; /* blank lines may end the file, not split it */
    for (;;) {
        char *line;
        size_t len;
        rc = oc_line_reader_next(r, &line, &len, err);
        if (rc)
            goto out;
        if (!line)
            break;
        if (oc_imp_line_is_blank(line, 0)) {
            if (!blank_at)
                blank_at = oc_line_reader_lineno(r);
            continue;
        }
        if (blank_at) {
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s:%llu: blank line among the labels (one label per line, node by node)",
                        path, (unsigned long long)blank_at);
            goto out;
        }
        int64_t v;
        if (parse_label(line, allow_nan, &v) < 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected one integer label%s, got \"%.60s\"",
                               allow_nan ? " (or nan)" : "", line);
            goto out;
        }
        if (v < -1 || v >= limit) {
            rc = OC_IMP_ERR_AT(err, r, "label %lld out of range [-1, %lld)", (long long)v,
                               (long long)limit);
            goto out;
        }
        if (n == n_nodes) {
            rc = OC_IMP_ERR_AT(err, r, "more labels than the %llu nodes",
                               (unsigned long long)n_nodes);
            goto out;
        }
        if (v > max)
            max = v;
        rc = oc_imp_array_push(&a, v, err);
        if (rc)
            goto out;
        n++;
    }
    if (n != n_nodes) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %llu labels, expected one per node (%llu)", path,
                    (unsigned long long)n, (unsigned long long)n_nodes);
        goto out;
    }
    rc = oc_imp_array_end(&a, err);
    if (rc == OC_OK) {
        *n_classes = n_classes_hint ? n_classes_hint : (uint32_t)(max + 1);
        rc = oc_imp_labels_settle(b, *n_classes, err);
    }
out:
    oc_imp_array_abort(&a);
    oc_line_reader_free(r);
    return rc;
}

int oc_imp_labels_settle(struct oc_ds_builder *b, uint32_t n_classes, struct oc_err *err)
{
    if (n_classes > 0)
        return OC_OK;
    char path[OC_IMP_PATH_MAX];
    int rc = oc_imp_path(path, oc_ds_builder_tmp_dir(b), oc_ds_file_name(OC_DS_LABELS), err);
    if (rc == OC_OK)
        rc = oc_rm_rf(path, err);
    if (rc == OC_OK)
        memset(&oc_ds_builder_manifest(b)->files[OC_DS_LABELS], 0, sizeof(struct oc_ds_file_info));
    return rc;
}

/*
 * One pass over a file of one integer per line (blank lines skipped). With
 * role < -1 (index form) each value is a node id < n_nodes and is pushed to a
 * (if non-NULL); otherwise values are roles in {-1, 0, 1, 2}, counted into
 * counts[3] (if non-NULL), and line i's node id is pushed when its role is
 * `role`. *n_lines gets the number of values. With seen (a zeroed bitmap of
 * n_nodes bits, index form only) an id listed twice is an error.
 */
static int ids_pass(const char *path, uint64_t n_nodes, int role, struct oc_imp_array *a,
                    uint64_t counts[3], uint8_t *seen, uint64_t *n_lines, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    uint64_t n = 0;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 0, &line, err);
        if (rc || !line)
            break;
        const char *p = line;
        int64_t v, extra;
        if (oc_imp_scan_i64(&p, ' ', &v) != 1 || oc_imp_scan_i64(&p, ',', &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected one integer %s, got \"%.60s\"",
                               role < -1 ? "node id" : "role", line);
            break;
        }
        if (role < -1) {
            if (v < 0 || (uint64_t)v >= n_nodes) {
                rc = OC_IMP_ERR_AT(err, r, "node id %lld out of range [0, %llu)", (long long)v,
                                   (unsigned long long)n_nodes);
                break;
            }
            if (seen) {
                uint8_t bit = (uint8_t)(1u << (v & 7));
                if (seen[v >> 3] & bit) {
                    rc = OC_IMP_ERR_AT(err, r,
                                       "duplicate node id %lld (already listed on an earlier line; "
                                       "each id may appear once in a split)",
                                       (long long)v);
                    break;
                }
                seen[v >> 3] |= bit;
            }
            if (a)
                rc = oc_imp_array_push(a, v, err);
        } else {
            if (v < -1 || v > 2) {
                rc = OC_IMP_ERR_AT(err, r,
                                   "role %lld is not -1 (unused), 0 (train), 1 (val) or 2 (test)",
                                   (long long)v);
                break;
            }
            if (n >= n_nodes) {
                rc = OC_IMP_ERR_AT(err, r, "more lines than the %llu nodes",
                                   (unsigned long long)n_nodes);
                break;
            }
            if (counts && v >= 0)
                counts[v]++;
            if (a && v == role)
                rc = oc_imp_array_push(a, (int64_t)n, err);
        }
        if (rc)
            break;
        n++;
    }
    oc_line_reader_free(r);
    if (rc == OC_OK)
        *n_lines = n;
    return rc;
}

int oc_imp_split_ids_text(struct oc_ds_builder *b, enum oc_ds_file which, const char *path,
                          uint64_t n_nodes, uint64_t *n, struct oc_err *err)
{
    uint64_t cnt, cnt2;
    size_t bm = (size_t)((n_nodes + 7) / 8);
    uint8_t *seen = oc_calloc(bm ? bm : 1, 1, "import: split id bitmap", err);
    if (!seen)
        return err->status;
    int rc = ids_pass(path, n_nodes, -2, NULL, NULL, seen, &cnt, err);
    oc_free(seen);
    if (rc)
        return rc;
    struct oc_imp_array a;
    rc = oc_imp_array_begin(&a, b, which, OC_IMP_SPLIT_DTYPE, cnt, err);
    if (rc)
        return rc;
    rc = ids_pass(path, n_nodes, -2, &a, NULL, NULL, &cnt2, err);
    if (rc == OC_OK && cnt2 != cnt)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: changed while being read", path);
    if (rc) {
        oc_imp_array_abort(&a);
        return rc;
    }
    rc = oc_imp_array_end(&a, err);
    if (rc == OC_OK)
        *n = cnt;
    return rc;
}

int oc_imp_split_roles_text(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                            uint64_t n[3], struct oc_err *err)
{
    uint64_t counts[3] = {0, 0, 0}, lines;
    int rc = ids_pass(path, n_nodes, -1, NULL, counts, NULL, &lines, err);
    if (rc)
        return rc;
    if (lines != n_nodes)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %llu roles, expected one per node (%llu)", path,
                      (unsigned long long)lines, (unsigned long long)n_nodes);
    for (int role = 0; role < 3; role++) {
        struct oc_imp_array a;
        rc = oc_imp_array_begin(&a, b, split_files[role], OC_IMP_SPLIT_DTYPE, counts[role], err);
        if (rc)
            return rc;
        rc = ids_pass(path, n_nodes, role, &a, NULL, NULL, &lines, err);
        if (rc) {
            oc_imp_array_abort(&a);
            return rc;
        }
        rc = oc_imp_array_end(&a, err);
        if (rc)
            return rc;
        n[role] = counts[role];
    }
    return OC_OK;
}

int oc_imp_split_empty_one(struct oc_ds_builder *b, enum oc_ds_file which, struct oc_err *err)
{
    struct oc_imp_array a;
    int rc = oc_imp_array_begin(&a, b, which, OC_IMP_SPLIT_DTYPE, 0, err);
    if (rc == OC_OK)
        rc = oc_imp_array_end(&a, err);
    return rc;
}

int oc_imp_split_empty(struct oc_ds_builder *b, struct oc_err *err)
{
    for (int role = 0; role < 3; role++) {
        int rc = oc_imp_split_empty_one(b, split_files[role], err);
        if (rc)
            return rc;
    }
    return OC_OK;
}
