/*
 * import_npy.c — imports an edge list plus NumPy arrays:
 *
 *   SRC/edges.npy      (2, E) or (E, 2) integer array, or else
 *   SRC/edges.txt      "u v" per line (blanks or tabs; '#' comment lines)
 *   SRC/features.npy   N x F (or N) numeric array, optional
 *   SRC/labels.npy     N integers, -1 = unlabeled, optional
 *   SRC/train_idx.npy, val_idx.npy, test_idx.npy   node ids, each optional
 *
 * N is the length of labels.npy, else the rows of features.npy, else the
 * largest edge id + 1 (one extra pass over the edges).
 *
 * Place in the data flow: dataset module; .npy/.txt -> edge sorter (CSC) and
 * builder (features a block of rows at a time, labels, splits).
 * Memory: the sorter's budget plus one block of feature rows.
 * Thread-safety: one import per call.
 * Ownership: options and paths are borrowed.
 */
#include <string.h>

#include "dataset/import_int.h"

static const char *const split_names[3] = {"train_idx.npy", "val_idx.npy", "test_idx.npy"};
static const enum oc_ds_file split_files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};

static int import_edges(const char *path, int is_npy, struct oc_ds_builder *b,
                        const struct oc_import_opts *o, uint64_t n_nodes,
                        struct oc_progress *progress, struct oc_err *err)
{
    struct oc_imp_edges e;
    int rc = oc_imp_edges_begin(&e, b, o, n_nodes, err);
    if (rc)
        return rc;
    if (is_npy)
        rc = oc_imp_npy_edges(path, 1, &e, NULL, NULL, progress, err);
    else
        rc = oc_imp_text_edges(path, ' ', 1, &e, NULL, NULL, progress, err);
    if (rc) {
        oc_imp_edges_abort(&e);
        return rc;
    }
    return oc_imp_edges_finish(&e, b, progress, err);
}

/*
 * The size gate: every size comes from an array header whose file holds the
 * data, so only consistency is checked (labels and features agree on N)
 * before oc_imp_gate on nodes, edges (stored both ways unless directed),
 * features, labels and split ids.
 */
static int gate(const char *src, const char *out, const struct oc_import_opts *o,
                const char *edge_path, int edges_npy, const char *feat_path, const char *label_path,
                uint64_t n_nodes, struct oc_err *err)
{
    char path[OC_IMP_PATH_MAX];
    uint64_t rows, cols;
    struct oc_ds_size s = {.n_nodes = n_nodes, .feat_dtype = o->feat_dtype, .labels = !!label_path};
    int rc;
    if (feat_path) {
        if ((rc = oc_imp_npy_dims(feat_path, &rows, &cols, err)))
            return rc;
        if (rows != n_nodes)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: feature array has %llu rows, expected %llu (nodes: the length of "
                          "%s)",
                          feat_path, (unsigned long long)rows, (unsigned long long)n_nodes,
                          label_path);
        s.feat_dim = cols;
    }
    if (edges_npy) {
        if ((rc = oc_imp_npy_edge_count(edge_path, &s.n_edges, err)))
            return rc;
        if (!o->directed)
            s.n_edges = s.n_edges > UINT64_MAX / 2 ? UINT64_MAX : 2 * s.n_edges;
    }
    for (int k = 0; k < 3; k++) {
        int present;
        if ((rc = oc_imp_path(path, src, split_names[k], err)) ||
            (rc = oc_file_optional(path, &present, err)))
            return rc;
        if (present) {
            if ((rc = oc_imp_npy_dims(path, &rows, &cols, err)))
                return rc;
            s.n_split_ids += rows;
        }
    }
    return oc_imp_gate(&s, out, o, err);
}

int oc_import_npy(const char *src, const char *out, const struct oc_import_opts *o,
                  struct oc_progress *progress, struct oc_err *err)
{
    struct oc_err local;
    if (!err)
        err = &local;
    oc_err_clear(err);
    struct oc_ds_builder *b = NULL;
    char name[128], edge_path[OC_IMP_PATH_MAX], feat_path[OC_IMP_PATH_MAX],
        label_path[OC_IMP_PATH_MAX], path[OC_IMP_PATH_MAX];
    int rc = oc_imp_check_opts(o, err);
    if (rc)
        return rc;
    oc_imp_basename(src, name, sizeof(name));
    if (!oc_imp_is_dir(src))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a directory", src);
    rc = oc_imp_path(edge_path, src, "edges.npy", err);
    if (rc == OC_OK)
        rc = oc_imp_path(feat_path, src, "features.npy", err);
    if (rc == OC_OK)
        rc = oc_imp_path(label_path, src, "labels.npy", err);
    if (rc)
        return rc;
    /* Optional inputs are absent only when nothing by their name exists: a FIFO, directory,
       device or dangling link named like one is an error, never "no such input". */
    int edges_npy, edges_txt = 0, has_feat, has_label;
    if ((rc = oc_file_optional(edge_path, &edges_npy, err)))
        return rc;
    if (!edges_npy) {
        if ((rc = oc_imp_path(edge_path, src, "edges.txt", err)) ||
            (rc = oc_file_optional(edge_path, &edges_txt, err)))
            return rc;
        if (!edges_txt)
            return OC_ERR(err, OC_ERR_NOTFOUND, "%s: neither edges.npy nor edges.txt", src);
    }
    if ((rc = oc_file_optional(feat_path, &has_feat, err)) ||
        (rc = oc_file_optional(label_path, &has_label, err)))
        return rc;

    uint64_t n_nodes = 0;
    struct oc_npy_header h;
    if (has_label || has_feat) {
        rc = oc_npy_read_header(has_label ? label_path : feat_path, &h, err);
        if (rc)
            return rc;
        n_nodes = h.ndim ? h.shape[0] : 0;
    } else if (edges_npy) {
        rc = oc_imp_npy_edges(edge_path, 1, NULL, &n_nodes, NULL, NULL, err);
    } else {
        rc = oc_imp_text_edges(edge_path, ' ', 1, NULL, &n_nodes, NULL, NULL, err);
    }
    if (rc)
        return rc;
    rc = gate(src, out, o, edge_path, edges_npy, has_feat ? feat_path : NULL,
              has_label ? label_path : NULL, n_nodes, err);
    if (rc)
        return rc;

    rc = oc_ds_builder_new(out, &b, err);
    if (rc)
        return rc;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    oc_imp_manifest_init(m, OC_IMPORT_NPY, src, o, name);
    m->n_nodes = n_nodes;

    rc = import_edges(edge_path, edges_npy, b, o, n_nodes, progress, err);
    if (rc)
        goto out;

    m->feat_dim = 0;
    if (has_feat) {
        rc = oc_imp_feat_from_npy(b, o, feat_path, n_nodes, &m->feat_dim, progress, err);
    } else {
        oc_log(OC_LOG_INFO, "%s has no features.npy: importing topology and labels only", name);
    }
    if (rc)
        goto out;

    uint32_t n_classes = 0;
    if (has_label) {
        rc = oc_imp_labels_npy(b, label_path, n_nodes, 0, &n_classes, err);
    } else {
        oc_log(OC_LOG_INFO, "%s has no labels.npy: importing without labels", name);
        rc = OC_OK;
    }
    if (rc)
        goto out;
    m->n_classes = n_classes;

    uint64_t n[3] = {0, 0, 0};
    int n_found = 0;
    for (int k = 0; k < 3; k++) {
        int present;
        if ((rc = oc_imp_path(path, src, split_names[k], err)) ||
            (rc = oc_file_optional(path, &present, err)))
            goto out;
        if (present) {
            n_found++;
            rc = oc_imp_split_ids_npy(b, split_files[k], path, n_nodes, &n[k], err);
        } else {
            rc = oc_imp_split_empty_one(b, split_files[k], err);
        }
        if (rc)
            goto out;
    }
    if (n_found == 0)
        oc_log(OC_LOG_INFO, "%s has no *_idx.npy: train/val/test are empty", name);
    m->n_train = n[0];
    m->n_val = n[1];
    m->n_test = n[2];
    rc = oc_ds_builder_commit_checked(b, err);
out:
    oc_ds_builder_free(b);
    return rc;
}
