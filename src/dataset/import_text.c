/*
 * import_text.c — imports the plain-text layout of shared/datasets:
 *
 *   SRC/meta.txt             "key value": num_nodes (required), num_features,
 *                            num_classes, features_available (0 = none)
 *   SRC/edges.txt            "u v", u < v, each undirected edge once
 *   SRC/edges_directed.txt   original direction (used with --directed)
 *   SRC/self_loops.txt       node ids with a self-loop (citeseer)
 *   SRC/features.txt         sparse COO "node col value", sorted by node, col
 *   SRC/labels.txt           line i = label of node i, -1 = unlabeled
 *   SRC/{train,val,test}_idx.txt           index-form split, or role form:
 *   SRC/splits/K.txt, SRC/splits_geom_gcn/K.txt or SRC/split_K.txt
 *                            line i = 0 train / 1 val / 2 test / -1 unused
 *
 * Place in the data flow: dataset module; text files -> edge sorter (CSC)
 * and builder (features row by row, labels, splits) -> dataset directory.
 * Memory: the sorter's budget plus one block of feature rows.
 * Thread-safety: one import per call.
 * Ownership: options and paths are borrowed.
 */
#include <string.h>

#include "dataset/import_int.h"

struct text_meta {
    uint64_t n_nodes;
    uint64_t n_features;
    uint64_t n_classes;
    int has_nodes;
    int has_classes; /* a num_classes line was given */
    int features_available;
};

static int read_meta(const char *path, struct text_meta *m, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    memset(m, 0, sizeof(*m));
    m->features_available = 1;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 1, &line, err);
        if (rc || !line)
            break;
        char *sp = line + strcspn(line, " \t");
        if (*sp == '\0') {
            rc = OC_IMP_ERR_AT(err, r, "expected \"key value\", got \"%.60s\"", line);
            break;
        }
        *sp = '\0';
        const char *key = line, *p = sp + 1;
        uint64_t *dst = NULL;
        uint64_t avail = 0;
        if (strcmp(key, "num_nodes") == 0)
            dst = &m->n_nodes;
        else if (strcmp(key, "num_features") == 0)
            dst = &m->n_features;
        else if (strcmp(key, "num_classes") == 0)
            dst = &m->n_classes;
        else if (strcmp(key, "features_available") == 0)
            dst = &avail;
        else
            continue;
        uint64_t extra;
        if (oc_imp_scan_u64(&p, ' ', dst) != 1 || oc_imp_scan_u64(&p, ' ', &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "%s: expected a non-negative integer", key);
            break;
        }
        if (dst == &m->n_nodes)
            m->has_nodes = 1;
        if (dst == &m->n_classes)
            m->has_classes = 1;
        if (dst == &avail)
            m->features_available = avail != 0;
    }
    if (rc == OC_OK && !m->has_nodes)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: no num_nodes line", path);
    if (rc == OC_OK && m->n_features > UINT32_MAX)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: num_features %llu is too large", path,
                    (unsigned long long)m->n_features);
    if (rc == OC_OK && m->n_classes > INT32_MAX)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: num_classes %llu is too large", path,
                    (unsigned long long)m->n_classes);
    oc_line_reader_free(r);
    return rc;
}

/* Adds (v, v) for every node id listed in self_loops.txt. */
static int add_self_loops(const char *path, struct oc_imp_edges *e, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 1, &line, err);
        if (rc || !line)
            break;
        const char *p = line;
        uint64_t v, extra;
        if (oc_imp_scan_u64(&p, ' ', &v) != 1 || oc_imp_scan_u64(&p, ' ', &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected one node id, got \"%.60s\"", line);
            break;
        }
        if (v >= e->n_nodes) {
            rc = OC_IMP_ERR_AT(err, r, "node id %llu out of range (the graph has %llu nodes)",
                               (unsigned long long)v, (unsigned long long)e->n_nodes);
            break;
        }
        rc = oc_imp_edges_add(e, v, v, err);
        if (rc)
            break;
    }
    oc_line_reader_free(r);
    return rc;
}

static int import_edges(const char *src, const char *name, struct oc_ds_builder *b,
                        const struct oc_import_opts *o, uint64_t n_nodes,
                        struct oc_progress *progress, struct oc_err *err)
{
    char path[OC_IMP_PATH_MAX];
    int rc = OC_OK;
    int directed_file = 0, loops = 0;
    if (o->directed) {
        if ((rc = oc_imp_path(path, src, "edges_directed.txt", err)) ||
            (rc = oc_file_optional(path, &directed_file, err)))
            return rc;
        if (!directed_file)
            oc_log(OC_LOG_INFO, "%s: no edges_directed.txt: keeping edges.txt pairs as u -> v",
                   name);
    }
    if (!directed_file) {
        rc = oc_imp_path(path, src, "edges.txt", err);
        if (rc)
            return rc;
    }
    struct oc_imp_edges e;
    rc = oc_imp_edges_begin(&e, b, o, n_nodes, err);
    if (rc)
        return rc;
    rc = oc_imp_text_edges(path, ' ', 1, &e, NULL, NULL, progress, err);
    if (rc == OC_OK && !o->remove_self_loops) {
        rc = oc_imp_path(path, src, "self_loops.txt", err);
        if (rc == OC_OK)
            rc = oc_file_optional(path, &loops, err);
        if (rc == OC_OK && loops)
            rc = add_self_loops(path, &e, err);
    }
    if (rc) {
        oc_imp_edges_abort(&e);
        return rc;
    }
    return oc_imp_edges_finish(&e, b, progress, err);
}

/*
 * Streams sparse COO "node col value" lines (sorted) into dense feature rows.
 * With b == NULL the file is only checked (same errors, nothing written) and
 * *n_cols (may be NULL otherwise) gets one more than the largest column used.
 */
static int import_features(const char *path, struct oc_ds_builder *b,
                           const struct oc_import_opts *o, uint64_t n_nodes, uint64_t dim,
                           uint64_t *n_cols, struct oc_progress *progress, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    struct oc_imp_feat f;
    memset(&f, 0, sizeof(f));
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    if (b && (rc = oc_imp_feat_begin(&f, b, o, path, n_nodes, (uint32_t)dim, err)))
        goto out;
    oc_progress_phase(progress, "import: features", n_nodes, "rows");
    uint64_t cur = 0;  /* node whose row is being filled */
    int64_t last = -1; /* last column set in that row */
    uint64_t cols = 0;
    size_t n_free;
    float *row = b && n_nodes ? oc_imp_feat_rows(&f, &n_free) : NULL;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 0, &line, err);
        if (rc)
            goto out;
        if (!line)
            break;
        const char *p = line;
        uint64_t node, col;
        float val, extra;
        if (oc_imp_scan_u64(&p, ' ', &node) != 1 || oc_imp_scan_u64(&p, ' ', &col) != 1 ||
            oc_imp_scan_f32(&p, ' ', &val) != 1 || oc_imp_scan_f32(&p, ' ', &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected \"node col value\", got \"%.60s\"", line);
            goto out;
        }
        if (node >= n_nodes) {
            rc = OC_IMP_ERR_AT(err, r, "node %llu out of range (num_nodes %llu)",
                               (unsigned long long)node, (unsigned long long)n_nodes);
            goto out;
        }
        if (col >= dim) {
            rc = OC_IMP_ERR_AT(err, r, "column %llu out of range (num_features %llu)",
                               (unsigned long long)col, (unsigned long long)dim);
            goto out;
        }
        if (node < cur || (node == cur && (int64_t)col <= last)) {
            rc = OC_IMP_ERR_AT(err, r,
                               "not sorted by node then column: (%llu, %llu) after (%llu, %lld)",
                               (unsigned long long)node, (unsigned long long)col,
                               (unsigned long long)cur, (long long)last);
            goto out;
        }
        if (!b) {
            cur = node;
            last = (int64_t)col;
            if (col + 1 > cols)
                cols = col + 1;
            continue;
        }
        while (cur < node) {
            rc = oc_imp_feat_commit(&f, 1, err);
            if (rc)
                goto out;
            cur++;
            last = -1;
            row = oc_imp_feat_rows(&f, &n_free);
            if ((cur & 0xfff) == 0)
                oc_progress_add(progress, 0x1000);
        }
        row[col] = val;
        last = (int64_t)col;
    }
    if (!b) {
        if (n_cols)
            *n_cols = cols;
        goto out;
    }
    oc_progress_add(progress, n_nodes - (cur & ~(uint64_t)0xfff)); /* rows not counted yet */
    while (cur < n_nodes) {
        rc = oc_imp_feat_commit(&f, 1, err);
        if (rc)
            goto out;
        cur++;
        if (cur < n_nodes)
            row = oc_imp_feat_rows(&f, &n_free);
    }
    rc = oc_imp_feat_end(&f, err);
out:
    oc_imp_feat_abort(&f);
    oc_line_reader_free(r);
    return rc;
}

/*
 * The size gate: num_nodes must be the number of labels.txt's non-blank lines
 * (one per node; blank lines may only end the file, which the labels pass checks); features.txt is checked line by line (the import's own errors) and
 * num_features may exceed the columns it uses only within a tolerance (the
 * wider rows are all zero: the input cannot vouch for them, only --max-size
 * can); then oc_imp_gate on the nodes and features (edges are not counted
 * ahead).
 */
#define UNVOUCHED_ZERO_BYTES ((uint64_t)64 << 20)

static int gate(const char *src, const char *out, const struct oc_import_opts *o,
                const struct text_meta *meta, int with_features, struct oc_err *err)
{
    char path[OC_IMP_PATH_MAX], meta_path[OC_IMP_PATH_MAX];
    uint64_t n;
    int rc = oc_imp_path(meta_path, src, "meta.txt", err);
    if (rc == OC_OK)
        rc = oc_imp_path(path, src, "labels.txt", err);
    if (rc == OC_OK)
        rc = oc_imp_count_lines(path, 1, &n, err); /* blank lines: the labels pass decides */
    if (rc)
        return rc;
    /* The labels pass's own messages, before anything is written. */
    if (n > meta->n_nodes)
        return OC_ERR(
            err, OC_ERR_FORMAT, "%s:%llu: more labels than the %llu nodes (num_nodes in %s)", path,
            (unsigned long long)meta->n_nodes + 1, (unsigned long long)meta->n_nodes, meta_path);
    if (n < meta->n_nodes)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: %llu labels, expected one per node (%llu), as num_nodes in %s says",
                      path, (unsigned long long)n, (unsigned long long)meta->n_nodes, meta_path);
    struct oc_ds_size s = {.n_nodes = meta->n_nodes, .feat_dtype = o->feat_dtype, .labels = 1};
    if (with_features) {
        if ((rc = oc_imp_path(path, src, "features.txt", err)) ||
            (rc = import_features(path, NULL, o, meta->n_nodes, meta->n_features, &n, NULL, err)))
            return rc;
        /*
         * Columns beyond the largest one used are all zero (webkb declares 1703
         * and uses 1702): accepted while they are at most as many as the used
         * ones or take at most 64 MiB, else only under an explicit --max-size.
         */
        uint64_t extra = meta->n_features > n ? meta->n_features - n : 0;
        uint64_t es = oc_dtype_size(o->feat_dtype);
        int small = meta->n_nodes == 0 || extra <= (UNVOUCHED_ZERO_BYTES / es) / meta->n_nodes;
        if (extra > n && !small &&
            (rc = oc_imp_unvouched(o, err,
                                   "%s: num_features %llu but %s uses only %llu columns "
                                   "(the others would be all zero)",
                                   meta_path, (unsigned long long)meta->n_features, path,
                                   (unsigned long long)n)))
            return rc;
        s.feat_dim = meta->n_features;
    }
    return oc_imp_gate(&s, out, o, err);
}

static int import_splits(const char *src, const char *name, struct oc_ds_builder *b,
                         const struct oc_import_opts *o, uint64_t n_nodes, struct oc_manifest *m,
                         struct oc_err *err)
{
    static const char *const idx_names[3] = {"train_idx.txt", "val_idx.txt", "test_idx.txt"};
    static const enum oc_ds_file idx_files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    char path[OC_IMP_PATH_MAX];
    uint64_t n[3] = {0, 0, 0};
    int rc = oc_imp_path(path, src, idx_names[0], err);
    if (rc)
        return rc;
    /* Index form: each of the three files stands on its own (a missing one is an empty
       split); a name that exists but is no regular file (or a dangling link) is an error. */
    int present[3] = {0, 0, 0};
    for (int k = 0; k < 3 && o->split_index == 0; k++)
        if ((rc = oc_imp_path(path, src, idx_names[k], err)) ||
            (rc = oc_file_optional(path, &present[k], err)))
            return rc;
    if (present[0] || present[1] || present[2]) {
        for (int k = 0; k < 3; k++) {
            rc = oc_imp_path(path, src, idx_names[k], err);
            if (rc)
                return rc;
            if (!present[k]) {
                oc_log(OC_LOG_INFO, "%s has no %s: that split is empty", name, idx_names[k]);
                rc = oc_imp_split_empty_one(b, idx_files[k], err);
            } else {
                rc = oc_imp_split_ids_text(b, idx_files[k], path, n_nodes, &n[k], err);
            }
            if (rc)
                return rc;
        }
    } else {
        /* Role form: the first of splits/, splits_geom_gcn/, top-level split_*.txt. */
        static const char *const dirs[2] = {"splits", "splits_geom_gcn"};
        char dir[OC_IMP_PATH_MAX];
        char **names = NULL;
        size_t cnt = 0;
        const char *where = NULL;
        for (int d = 0; d < 2 && cnt == 0; d++) {
            rc = oc_imp_path(dir, src, dirs[d], err);
            if (rc == OC_OK)
                rc = oc_imp_list_dir(dir, "", ".txt", 0, &names, &cnt, err);
            if (rc)
                return rc;
            where = dirs[d];
        }
        if (cnt == 0) {
            snprintf(dir, sizeof(dir), "%s", src);
            rc = oc_imp_list_dir(dir, "split_", ".txt", 0, &names, &cnt, err);
            if (rc)
                return rc;
            where = ".";
        }
        int k = o->split_index;
        if (cnt == 0) {
            if (k > 0)
                return OC_ERR(err, OC_ERR_NOTFOUND,
                              "%s: no role-form split files (splits/, splits_geom_gcn/ or "
                              "split_*.txt) for split index %d",
                              src, o->split_index);
            oc_log(OC_LOG_INFO, "%s has no split files: train/val/test are empty", name);
            rc = oc_imp_split_empty(b, err);
        } else if ((size_t)k >= cnt) {
            rc = OC_ERR(err, OC_ERR_ARG, "%s: split index %d out of range: %s has %zu split files",
                        src, k, where, cnt);
        } else {
            rc = oc_imp_path(path, dir, names[k], err);
            if (rc == OC_OK) {
                oc_log(OC_LOG_INFO, "%s: role-form split %s/%s", name, where, names[k]);
                rc = oc_imp_split_roles_text(b, path, n_nodes, n, err);
            }
        }
        oc_imp_names_free(names, cnt);
        if (rc)
            return rc;
    }
    m->n_train = n[0];
    m->n_val = n[1];
    m->n_test = n[2];
    return OC_OK;
}

int oc_import_text(const char *src, const char *out, const struct oc_import_opts *o,
                   struct oc_progress *progress, struct oc_err *err)
{
    struct oc_err local;
    if (!err)
        err = &local;
    oc_err_clear(err);
    struct oc_ds_builder *b = NULL;
    char path[OC_IMP_PATH_MAX], name[128];
    struct text_meta meta;
    int rc = oc_imp_check_opts(o, err);
    if (rc)
        return rc;
    oc_imp_basename(src, name, sizeof(name));
    if (!oc_imp_is_dir(src))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a directory", src);
    rc = oc_imp_path(path, src, "meta.txt", err);
    if (rc == OC_OK)
        rc = read_meta(path, &meta, err);
    if (rc)
        return rc;
    rc = oc_imp_path(path, src, "features.txt", err);
    if (rc)
        return rc;
    int feat_present;
    if ((rc = oc_file_optional(path, &feat_present, err)))
        return rc;
    /* A present features.txt or labels.txt that meta.txt declares away is a contradiction,
       not something to drop silently. */
    if (feat_present && meta.features_available && meta.n_features == 0)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: present, but meta.txt declares num_features 0 (or has no "
                      "num_features line; features_available 0 marks a dataset without "
                      "features): refusing the contradiction",
                      path);
    int with_features = meta.features_available && meta.n_features > 0 && feat_present;
    rc = gate(src, out, o, &meta, with_features, err);
    if (rc)
        return rc;

    rc = oc_ds_builder_new(out, &b, err);
    if (rc)
        return rc;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    oc_imp_manifest_init(m, OC_IMPORT_TEXT, src, o, name);
    m->n_nodes = meta.n_nodes;

    rc = import_edges(src, name, b, o, meta.n_nodes, progress, err);
    if (rc)
        goto out;

    m->feat_dim = 0;
    rc = oc_imp_path(path, src, "features.txt", err);
    if (rc)
        goto out;
    if (!meta.features_available || meta.n_features == 0) {
        oc_log(OC_LOG_INFO, "%s has no features: importing topology and labels only", name);
    } else if (!feat_present) {
        rc = OC_ERR(err, OC_ERR_NOTFOUND,
                    "%s: missing (meta.txt announces %llu features; features_available 0 "
                    "marks a dataset without them)",
                    path, (unsigned long long)meta.n_features);
        goto out;
    } else {
        rc = import_features(path, b, o, meta.n_nodes, meta.n_features, NULL, progress, err);
        if (rc)
            goto out;
        m->feat_dim = (uint32_t)meta.n_features;
    }

    uint32_t n_classes = 0;
    int labels_present = 0;
    rc = oc_imp_path(path, src, "labels.txt", err);
    if (rc == OC_OK)
        rc = oc_file_optional(path, &labels_present, err);
    if (rc == OC_OK && labels_present && meta.has_classes && meta.n_classes == 0)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: present, but meta.txt declares num_classes 0: refusing the "
                    "contradiction",
                    path);
    if (rc == OC_OK)
        rc =
            oc_imp_labels_text(b, path, meta.n_nodes, (uint32_t)meta.n_classes, 0, &n_classes, err);
    if (rc)
        goto out;
    m->n_classes = n_classes;

    rc = import_splits(src, name, b, o, meta.n_nodes, m, err);
    if (rc)
        goto out;
    rc = oc_ds_builder_commit_checked(b, err);
out:
    oc_ds_builder_free(b);
    return rc;
}
