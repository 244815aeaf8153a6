/*
 * import_ogb.c — imports an OGB node-property dataset in its raw layout:
 *
 *   SRC/raw/edge.csv.gz           "src,dst" per line (stored one way, as OGB
 *                                 ships ogbn-arxiv; symmetrized unless directed,
 *                                 as DGL users do with dgl.to_bidirected)
 *   SRC/raw/node-feat.csv.gz      F comma-separated floats per node (optional)
 *   SRC/raw/node-label.csv.gz     one label per node, "nan" = unlabeled (-1)
 *   SRC/raw/num-node-list.csv.gz  N (optional; else the label or feature line
 *                                 count, else the largest edge id + 1)
 *   SRC/raw/num-edge-list.csv.gz  E (optional; checked against edge.csv.gz)
 *   SRC/split/<name>/{train,valid,test}.csv.gz  one node id per line
 *
 * Each file may also be uncompressed (".csv"); gzip is detected by magic.
 *
 * Place in the data flow: dataset module; csv.gz -> edge sorter (CSC) and
 * builder (features row by row, labels, splits) -> dataset directory.
 * Memory: the sorter's budget plus one block of feature rows.
 * Thread-safety: one import per call.
 * Ownership: options and paths are borrowed.
 */
#include <string.h>

#include "dataset/import_int.h"

/* SRC/<dir>/<stem>.csv.gz, else .csv; *found = 0 when neither exists (path = the .gz name). */
static int find_csv(const char *src, const char *dir, const char *stem, char *path, int *found,
                    struct oc_err *err)
{
    static const char *const ext[2] = {".csv.gz", ".csv"};
    char rel[512];
    *found = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(rel, sizeof(rel), "%s/%s%s", dir, stem, ext[k]);
        int rc = oc_imp_path(path, src, rel, err);
        if (rc == OC_OK) /* absent only if nothing by that name exists */
            rc = oc_file_optional(path, found, err);
        if (rc || *found)
            return rc;
    }
    snprintf(rel, sizeof(rel), "%s/%s%s", dir, stem, ext[0]);
    return oc_imp_path(path, src, rel, err);
}

/* The single count of a num-node-list / num-edge-list file (one graph). */
static int read_count(const char *path, uint64_t *v, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    int seen = 0;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 0, &line, err);
        if (rc || !line)
            break;
        if (seen) {
            rc = OC_ERR(err, OC_ERR_UNSUPPORTED,
                        "%s:%llu: several graphs (graph-property datasets are not supported)", path,
                        (unsigned long long)oc_line_reader_lineno(r));
            break;
        }
        const char *p = line;
        uint64_t extra;
        if (oc_imp_scan_u64(&p, ',', v) != 1 || oc_imp_scan_u64(&p, ',', &extra) != 0) {
            rc = OC_IMP_ERR_AT(err, r, "expected one count, got \"%.60s\"", line);
            break;
        }
        seen = 1;
    }
    oc_line_reader_free(r);
    if (rc == OC_OK && !seen)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: empty", path);
    return rc;
}

/*
 * A declared num-node-list count must be the line count of node-label (else
 * node-feat): one line per node. Without either, nodes beyond the largest
 * edge id would hold nothing, which only an explicit --max-size accepts.
 */
static int vouch_nodes(const char *count_path, uint64_t n_nodes, const struct oc_import_opts *o,
                       const char *label_path, const char *feat_path, const char *edge_path,
                       struct oc_err *err)
{
    const char *per_node = label_path ? label_path : feat_path;
    uint64_t n;
    int rc;
    if (per_node) {
        if ((rc = oc_imp_count_lines(per_node, 1, &n, err)))
            return rc;
        if (n != n_nodes)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: %llu %s, expected one per node (%llu), as %s says", per_node,
                          (unsigned long long)n, label_path ? "labels" : "feature rows",
                          (unsigned long long)n_nodes, count_path);
        return OC_OK;
    }
    if ((rc = oc_imp_text_edges(edge_path, ',', 0, NULL, &n, NULL, NULL, err)))
        return rc;
    if (n_nodes > n)
        return oc_imp_unvouched(o, err,
                                "%s: %llu nodes, but there is no node-label or node-feat file "
                                "and the edges in %s name only %llu nodes",
                                count_path, (unsigned long long)n_nodes, edge_path,
                                (unsigned long long)n);
    return OC_OK;
}

/* Fields of the first data line of a csv (the feature width); 0 for an empty file. */
static int first_line_fields(const char *path, uint64_t *n, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    char *line;
    rc = oc_imp_next_data_line(r, 0, &line, err);
    if (rc == OC_OK)
        *n = line ? oc_imp_count_fields(line, ',') : 0;
    oc_line_reader_free(r);
    return rc;
}

/* Streams dense "f1,f2,...,fF" lines into the features; F from the first line. */
static int import_features(const char *path, struct oc_ds_builder *b,
                           const struct oc_import_opts *o, uint64_t n_nodes, uint32_t *feat_dim,
                           struct oc_progress *progress, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    struct oc_imp_feat f;
    memset(&f, 0, sizeof(f));
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    oc_progress_phase(progress, "import: features", n_nodes, "rows");
    uint64_t row = 0;
    uint32_t dim = 0;
    for (;;) {
        char *line;
        rc = oc_imp_next_data_line(r, 0, &line, err);
        if (rc)
            goto out;
        if (!line)
            break;
        if (dim == 0) {
            size_t nf = oc_imp_count_fields(line, ',');
            if (nf == 0 || nf > UINT32_MAX) {
                rc = OC_IMP_ERR_AT(err, r, "cannot use %zu feature columns", nf);
                goto out;
            }
            dim = (uint32_t)nf;
            rc = oc_imp_feat_begin(&f, b, o, path, n_nodes, dim, err);
            if (rc)
                goto out;
        }
        if (row >= n_nodes) {
            rc = OC_IMP_ERR_AT(err, r, "more feature rows than the %llu nodes",
                               (unsigned long long)n_nodes);
            goto out;
        }
        size_t n_free;
        float *dst = oc_imp_feat_rows(&f, &n_free);
        const char *p = line;
        uint32_t j = 0;
        float v;
        int s;
        while ((s = oc_imp_scan_f32(&p, ',', &v)) == 1) {
            if (j == dim)
                break;
            dst[j++] = v;
        }
        if (s < 0 || j != dim || (s == 1 && j == dim)) {
            memset(dst, 0, (size_t)dim * sizeof(float));
            if (s < 0)
                rc = OC_IMP_ERR_AT(err, r, "column %u is not a number", j + 1);
            else
                rc = OC_IMP_ERR_AT(err, r,
                                   "expected %u comma-separated values (as on the first "
                                   "line), found %s",
                                   dim, j < dim ? "fewer" : "more");
            goto out;
        }
        rc = oc_imp_feat_commit(&f, 1, err);
        if (rc)
            goto out;
        row++;
        if ((row & 0xfff) == 0)
            oc_progress_add(progress, 0x1000);
    }
    oc_progress_add(progress, row & 0xfff); /* rows not counted yet */
    if (row != n_nodes) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %llu feature rows, expected one per node (%llu)", path,
                    (unsigned long long)row, (unsigned long long)n_nodes);
        goto out;
    }
    if (dim == 0) {
        *feat_dim = 0;
        goto out;
    }
    rc = oc_imp_feat_end(&f, err);
    if (rc == OC_OK)
        *feat_dim = dim;
out:
    oc_imp_feat_abort(&f);
    oc_line_reader_free(r);
    return rc;
}

static int import_splits(const char *src, const char *name, struct oc_ds_builder *b,
                         const struct oc_import_opts *o, uint64_t n_nodes, struct oc_manifest *m,
                         struct oc_err *err)
{
    static const char *const stems[3] = {"train", "valid", "test"};
    static const enum oc_ds_file files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    char dir[OC_IMP_PATH_MAX], path[OC_IMP_PATH_MAX], rel[512];
    char **names = NULL;
    size_t cnt = 0;
    uint64_t n[3] = {0, 0, 0};
    int rc = oc_imp_path(dir, src, "split", err);
    if (rc == OC_OK)
        rc = oc_imp_list_dir(dir, "", "", 1, &names, &cnt, err);
    if (rc)
        return rc;
    const char *pick = NULL;
    if (o->split_name) {
        for (size_t i = 0; i < cnt; i++)
            if (strcmp(names[i], o->split_name) == 0)
                pick = names[i];
        if (!pick) {
            char avail[256] = "";
            size_t pos = 0;
            for (size_t i = 0; i < cnt && pos < sizeof(avail); i++) {
                int k = snprintf(avail + pos, sizeof(avail) - pos, "%s%s", i ? ", " : "", names[i]);
                pos += k > 0 ? (size_t)k : 0;
            }
            rc = OC_ERR(err, OC_ERR_NOTFOUND, "%s/%s: no such split folder (available: %s)", dir,
                        o->split_name, cnt ? avail : "none");
            goto out;
        }
    } else if (cnt == 0) {
        oc_log(OC_LOG_INFO, "%s has no split/ folder: train/val/test are empty", name);
        rc = oc_imp_split_empty(b, err);
        goto out;
    } else {
        pick = names[0];
        if (cnt > 1)
            oc_log(OC_LOG_INFO, "%s: %zu split folders, using split/%s", name, cnt, pick);
    }
    for (int k = 0; k < 3; k++) {
        int found;
        snprintf(rel, sizeof(rel), "split/%s", pick);
        rc = find_csv(src, rel, stems[k], path, &found, err);
        if (rc)
            goto out;
        if (!found) {
            rc = OC_ERR(err, OC_ERR_NOTFOUND, "%s: missing split file", path);
            goto out;
        }
        rc = oc_imp_split_ids_text(b, files[k], path, n_nodes, &n[k], err);
        if (rc)
            goto out;
    }
    m->n_train = n[0];
    m->n_val = n[1];
    m->n_test = n[2];
out:
    oc_imp_names_free(names, cnt);
    return rc;
}

int oc_import_ogb(const char *src, const char *out, const struct oc_import_opts *o,
                  struct oc_progress *progress, struct oc_err *err)
{
    struct oc_err local;
    if (!err)
        err = &local;
    oc_err_clear(err);
    struct oc_ds_builder *b = NULL;
    char name[128], edge_path[OC_IMP_PATH_MAX], feat_path[OC_IMP_PATH_MAX],
        label_path[OC_IMP_PATH_MAX], path[OC_IMP_PATH_MAX];
    int has_edge, has_feat, has_label, found;
    int rc = oc_imp_check_opts(o, err);
    if (rc)
        return rc;
    oc_imp_basename(src, name, sizeof(name));
    if (!oc_imp_is_dir(src))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a directory", src);
    rc = find_csv(src, "raw", "edge", edge_path, &has_edge, err);
    if (rc == OC_OK)
        rc = find_csv(src, "raw", "node-feat", feat_path, &has_feat, err);
    if (rc == OC_OK)
        rc = find_csv(src, "raw", "node-label", label_path, &has_label, err);
    if (rc)
        return rc;
    if (!has_edge)
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: missing (not an OGB raw directory?)", edge_path);

    /* Number of nodes. */
    uint64_t n_nodes = 0;
    rc = find_csv(src, "raw", "num-node-list", path, &found, err);
    if (rc == OC_OK && found) {
        rc = read_count(path, &n_nodes, err);
        if (rc == OC_OK)
            rc = vouch_nodes(path, n_nodes, o, has_label ? label_path : NULL,
                             has_feat ? feat_path : NULL, edge_path, err);
    } else if (rc == OC_OK && has_label)
        rc = oc_imp_count_lines(label_path, 1, &n_nodes, err);
    else if (rc == OC_OK && has_feat)
        rc = oc_imp_count_lines(feat_path, 1, &n_nodes, err);
    else if (rc == OC_OK)
        rc = oc_imp_text_edges(edge_path, ',', 0, NULL, &n_nodes, NULL, NULL, err);
    if (rc)
        return rc;
    uint64_t n_edges_expected = UINT64_MAX;
    rc = find_csv(src, "raw", "num-edge-list", path, &found, err);
    if (rc == OC_OK && found)
        rc = read_count(path, &n_edges_expected, err);
    if (rc)
        return rc;
    struct oc_ds_size s = {.n_nodes = n_nodes, .feat_dtype = o->feat_dtype, .labels = has_label};
    if (has_feat && (rc = first_line_fields(feat_path, &s.feat_dim, err)))
        return rc;
    rc = oc_imp_gate(&s, out, o, err);
    if (rc)
        return rc;

    rc = oc_ds_builder_new(out, &b, err);
    if (rc)
        return rc;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    oc_imp_manifest_init(m, OC_IMPORT_OGB, src, o, name);
    m->n_nodes = n_nodes;

    struct oc_imp_edges e;
    rc = oc_imp_edges_begin(&e, b, o, n_nodes, err);
    if (rc)
        goto out;
    uint64_t n_edges = 0;
    rc = oc_imp_text_edges(edge_path, ',', 0, &e, NULL, &n_edges, progress, err);
    if (rc == OC_OK && n_edges_expected != UINT64_MAX && n_edges != n_edges_expected)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %llu edges, but num-edge-list says %llu", edge_path,
                    (unsigned long long)n_edges, (unsigned long long)n_edges_expected);
    if (rc) {
        oc_imp_edges_abort(&e);
        goto out;
    }
    rc = oc_imp_edges_finish(&e, b, progress, err);
    if (rc)
        goto out;

    m->feat_dim = 0;
    if (has_feat) {
        rc = import_features(feat_path, b, o, n_nodes, &m->feat_dim, progress, err);
        if (rc)
            goto out;
    } else {
        oc_log(OC_LOG_INFO, "%s has no raw/node-feat.csv.gz: importing topology and labels only",
               name);
    }

    uint32_t n_classes = 0;
    if (has_label) {
        rc = oc_imp_labels_text(b, label_path, n_nodes, 0, 1, &n_classes, err);
    } else {
        oc_log(OC_LOG_INFO, "%s has no raw/node-label.csv.gz: importing without labels", name);
        rc = OC_OK;
    }
    if (rc)
        goto out;
    m->n_classes = n_classes;

    rc = import_splits(src, name, b, o, n_nodes, m, err);
    if (rc)
        goto out;
    rc = oc_ds_builder_commit_checked(b, err);
out:
    oc_ds_builder_free(b);
    return rc;
}
