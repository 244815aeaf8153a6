/*
 * import_graphbolt.c — imports a DGL GraphBolt OnDiskDataset directory
 * described by SRC/metadata.yaml (homogeneous graphs, node classification):
 *
 *   dataset_name: <name>
 *   graph:
 *     nodes: [{num: N}]                    one node type only
 *     edges: [{format: csv|numpy, path: P}] csv "src,dst" lines, numpy (2, E)
 *   feature_data:                          domain node, format numpy:
 *     - {domain: node, name: feat,  format: numpy, path: P}   N x F floats
 *     - {domain: node, name: label, format: numpy, path: P}   N integers
 *   tasks:
 *     - num_classes: C
 *       train_set | validation_set | test_set:
 *         - data:
 *             - {name: seeds (or seed_nodes), format: numpy, path: P}
 *             - {name: labels, format: numpy, path: P}   optional
 *
 * Labels come from the "label" feature, else from the sets' labels (nodes
 * in no set are -1). Paths are relative to SRC. Edges are stored one way and
 * are symmetrized unless opts.directed, like the rest of offcore.
 *
 * The YAML is loaded with libyaml's document API (it allocates on its own;
 * the document is deleted on every path); offcore walks that tree.
 *
 * Place in the data flow: dataset module; metadata.yaml + .npy/.csv ->
 * edge sorter (CSC) and builder -> dataset directory.
 * Memory: the sorter's budget, one block of feature rows, and, only when
 * labels come from the sets, an N-entry int32 label array.
 * Thread-safety: one import per call.
 * Ownership: options and paths are borrowed.
 */
#include <string.h>
#include <yaml.h>

#include "dataset/import_int.h"

#define GB_MAX_YAML (16u << 20)

struct gb_file {
    int present;
    int line; /* metadata.yaml line of the entry */
    char path[OC_IMP_PATH_MAX];
};

struct gb_set {
    struct gb_file seeds, labels;
};

struct gb_meta {
    char name[128];
    uint64_t n_nodes;
    int edges_numpy;
    struct gb_file edges, feat, label;
    uint32_t n_classes;
    struct gb_set sets[3];
};

struct gb {
    yaml_document_t doc;
    const char *yaml_path;
    const char *dir;
};

static const char *const set_keys[3] = {"train_set", "validation_set", "test_set"};

static int line_of(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(struct gb *g, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(&g->doc, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(&g->doc, p->value);
    }
    return NULL;
}

static size_t seq_len(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        return 0;
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(struct gb *g, yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(&g->doc, n->data.sequence.items.start[i]);
}

/* A required child of kind want (YAML_*_NODE); errors name the line and key path. */
static int need(struct gb *g, yaml_node_t *parent, const char *ctx, const char *key,
                yaml_node_type_t want, yaml_node_t **out, struct oc_err *err)
{
    static const char *const kinds[] = {"", "a value", "a list", "a mapping"};
    yaml_node_t *n = map_get(g, parent, key);
    *out = n;
    if (!n)
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: %s: missing key \"%s\"", g->yaml_path,
                      line_of(parent), ctx, key);
    if (n->type != want)
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: %s.%s: expected %s", g->yaml_path, line_of(n),
                      ctx, key, kinds[want]);
    return OC_OK;
}

static int need_u64(struct gb *g, yaml_node_t *parent, const char *ctx, const char *key,
                    uint64_t *v, struct oc_err *err)
{
    yaml_node_t *n;
    int rc = need(g, parent, ctx, key, YAML_SCALAR_NODE, &n, err);
    if (rc)
        return rc;
    const char *p = scalar(n);
    uint64_t extra;
    if (oc_imp_scan_u64(&p, ' ', v) != 1 || oc_imp_scan_u64(&p, ' ', &extra) != 0)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s:%d: %s.%s: expected a non-negative integer, got "
                      "\"%.40s\"",
                      g->yaml_path, line_of(n), ctx, key, scalar(n));
    return OC_OK;
}

/* Reads "format" (must be one of allowed, '|'-separated) and "path" (must exist). */
static int file_entry(struct gb *g, yaml_node_t *entry, const char *ctx, const char *allowed,
                      struct gb_file *f, const char **format, struct oc_err *err)
{
    yaml_node_t *fmt, *path;
    int rc = need(g, entry, ctx, "format", YAML_SCALAR_NODE, &fmt, err);
    if (rc == OC_OK)
        rc = need(g, entry, ctx, "path", YAML_SCALAR_NODE, &path, err);
    if (rc)
        return rc;
    const char *fs = scalar(fmt);
    size_t lf = strlen(fs);
    int ok = 0;
    for (const char *a = allowed; *a;) {
        size_t la = strcspn(a, "|");
        if (la == lf && strncmp(a, fs, la) == 0)
            ok = 1;
        a += la + (a[la] == '|');
    }
    if (!ok)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "%s:%d: %s: format \"%s\" is not supported (%s)",
                      g->yaml_path, line_of(fmt), ctx, fs, allowed);
    const char *rel = scalar(path);
    if (rel[0] == '/') /* GraphBolt paths are relative; an absolute one is taken as is */
        rc = oc_imp_path(f->path, "/", rel + 1, err);
    else
        rc = oc_imp_path(f->path, g->dir, rel, err);
    if (rc)
        return rc;
    if (!oc_imp_is_file(f->path))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s:%d: %s: %s does not exist", g->yaml_path,
                      line_of(path), ctx, f->path);
    f->present = 1;
    f->line = line_of(entry);
    if (format)
        *format = fs;
    return OC_OK;
}

static int parse_graph(struct gb *g, yaml_node_t *root, struct gb_meta *m, struct oc_err *err)
{
    yaml_node_t *graph, *nodes, *edges;
    int rc = need(g, root, "metadata", "graph", YAML_MAPPING_NODE, &graph, err);
    if (rc == OC_OK)
        rc = need(g, graph, "graph", "nodes", YAML_SEQUENCE_NODE, &nodes, err);
    if (rc == OC_OK)
        rc = need(g, graph, "graph", "edges", YAML_SEQUENCE_NODE, &edges, err);
    if (rc)
        return rc;
    if (seq_len(nodes) != 1 || seq_len(edges) != 1)
        return OC_ERR(
            err, seq_len(nodes) == 0 || seq_len(edges) == 0 ? OC_ERR_FORMAT : OC_ERR_UNSUPPORTED,
            "%s:%d: graph has %zu node types and %zu edge types: only homogeneous "
            "graphs (one of each) are supported",
            g->yaml_path, line_of(graph), seq_len(nodes), seq_len(edges));
    rc = need_u64(g, seq_at(g, nodes, 0), "graph.nodes[0]", "num", &m->n_nodes, err);
    if (rc)
        return rc;
    const char *fmt = NULL;
    rc = file_entry(g, seq_at(g, edges, 0), "graph.edges[0]", "csv|numpy", &m->edges, &fmt, err);
    if (rc)
        return rc;
    m->edges_numpy = strcmp(fmt, "numpy") == 0;
    return OC_OK;
}

static int parse_features(struct gb *g, yaml_node_t *root, struct gb_meta *m, struct oc_err *err)
{
    yaml_node_t *fd = map_get(g, root, "feature_data");
    if (!fd)
        return OC_OK;
    if (fd->type != YAML_SEQUENCE_NODE)
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: feature_data: expected a list", g->yaml_path,
                      line_of(fd));
    for (size_t i = 0; i < seq_len(fd); i++) {
        yaml_node_t *e = seq_at(g, fd, i), *dom, *nm;
        char ctx[64];
        snprintf(ctx, sizeof(ctx), "feature_data[%zu]", i);
        int rc = need(g, e, ctx, "domain", YAML_SCALAR_NODE, &dom, err);
        if (rc == OC_OK)
            rc = need(g, e, ctx, "name", YAML_SCALAR_NODE, &nm, err);
        if (rc)
            return rc;
        struct gb_file *dst = NULL;
        if (strcmp(scalar(dom), "node") == 0 && strcmp(scalar(nm), "feat") == 0)
            dst = &m->feat;
        else if (strcmp(scalar(dom), "node") == 0 && strcmp(scalar(nm), "label") == 0)
            dst = &m->label;
        if (!dst) {
            oc_log(OC_LOG_INFO, "%s:%d: skipping %s feature \"%s\"", g->yaml_path, line_of(e),
                   scalar(dom), scalar(nm));
            continue;
        }
        if (dst->present)
            return OC_ERR(err, OC_ERR_UNSUPPORTED,
                          "%s:%d: a second node feature \"%s\" (line %d): several node types "
                          "are not supported",
                          g->yaml_path, line_of(e), scalar(nm), dst->line);
        rc = file_entry(g, e, ctx, "numpy", dst, NULL, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

static int parse_tasks(struct gb *g, yaml_node_t *root, struct gb_meta *m, struct oc_err *err)
{
    yaml_node_t *tasks = map_get(g, root, "tasks");
    if (!tasks)
        return OC_OK;
    if (tasks->type != YAML_SEQUENCE_NODE)
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: tasks: expected a list", g->yaml_path,
                      line_of(tasks));
    if (seq_len(tasks) == 0)
        return OC_OK;
    if (seq_len(tasks) > 1)
        oc_log(OC_LOG_INFO, "%s: %zu tasks, importing the first", g->yaml_path, seq_len(tasks));
    yaml_node_t *t = seq_at(g, tasks, 0);
    if (t->type != YAML_MAPPING_NODE)
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: tasks[0]: expected a mapping", g->yaml_path,
                      line_of(t));
    if (map_get(g, t, "num_classes")) {
        uint64_t c;
        int rc = need_u64(g, t, "tasks[0]", "num_classes", &c, err);
        if (rc)
            return rc;
        if (c > INT32_MAX)
            return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: tasks[0].num_classes %llu is too large",
                          g->yaml_path, line_of(t), (unsigned long long)c);
        m->n_classes = (uint32_t)c;
    }
    for (int s = 0; s < 3; s++) {
        yaml_node_t *set = map_get(g, t, set_keys[s]), *data;
        if (!set)
            continue;
        char ctx[96];
        snprintf(ctx, sizeof(ctx), "tasks[0].%s", set_keys[s]);
        if (set->type != YAML_SEQUENCE_NODE || seq_len(set) == 0)
            return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: %s: expected a non-empty list", g->yaml_path,
                          line_of(set), ctx);
        if (seq_len(set) > 1)
            return OC_ERR(err, OC_ERR_UNSUPPORTED,
                          "%s:%d: %s has %zu node types: only homogeneous graphs are supported",
                          g->yaml_path, line_of(set), ctx, seq_len(set));
        snprintf(ctx, sizeof(ctx), "tasks[0].%s[0]", set_keys[s]);
        int rc = need(g, seq_at(g, set, 0), ctx, "data", YAML_SEQUENCE_NODE, &data, err);
        if (rc)
            return rc;
        for (size_t i = 0; i < seq_len(data); i++) {
            yaml_node_t *d = seq_at(g, data, i);
            char dctx[128];
            snprintf(dctx, sizeof(dctx), "%s.data[%zu]", ctx, i);
            const char *nm = scalar(map_get(g, d, "name"));
            struct gb_file *dst;
            if (!nm || strcmp(nm, "seeds") == 0 || strcmp(nm, "seed_nodes") == 0)
                dst = &m->sets[s].seeds;
            else if (strcmp(nm, "labels") == 0)
                dst = &m->sets[s].labels;
            else
                return OC_ERR(err, OC_ERR_UNSUPPORTED,
                              "%s:%d: %s: data \"%s\" is not supported (node classification "
                              "sets hold seeds and labels)",
                              g->yaml_path, line_of(d), dctx, nm);
            if (dst->present)
                return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: %s: a second \"%s\" entry", g->yaml_path,
                              line_of(d), dctx, nm ? nm : "seeds");
            rc = file_entry(g, d, dctx, "numpy", dst, NULL, err);
            if (rc)
                return rc;
        }
        if (!m->sets[s].seeds.present)
            return OC_ERR(err, OC_ERR_FORMAT, "%s:%d: %s: no \"seeds\" data", g->yaml_path,
                          line_of(data), ctx);
    }
    return OC_OK;
}

static int parse_metadata(const char *yaml_path, const char *dir, struct gb_meta *m,
                          struct oc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    memset(m, 0, sizeof(*m));
    int rc = oc_read_file(yaml_path, GB_MAX_YAML, &text, &len, err);
    if (rc)
        return rc;
    struct gb g = {.yaml_path = yaml_path, .dir = dir};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        oc_free(text);
        return OC_ERR(err, OC_ERR_NOMEM, "%s: cannot initialize the YAML parser", yaml_path);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &g.doc)) {
        rc = OC_ERR(err, parser.error == YAML_MEMORY_ERROR ? OC_ERR_NOMEM : OC_ERR_FORMAT,
                    "%s:%zu: YAML: %s%s%s", yaml_path, parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "parse error", parser.context ? " " : "",
                    parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        oc_free(text);
        return rc;
    }
    yaml_parser_delete(&parser);
    oc_free(text);
    yaml_node_t *root = yaml_document_get_root_node(&g.doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: expected a YAML mapping at the top", yaml_path);
        goto out;
    }
    const char *name = scalar(map_get(&g, root, "dataset_name"));
    if (name)
        snprintf(m->name, sizeof(m->name), "%s", name);
    rc = parse_graph(&g, root, m, err);
    if (rc == OC_OK)
        rc = parse_features(&g, root, m, err);
    if (rc == OC_OK)
        rc = parse_tasks(&g, root, m, err);
out:
    yaml_document_delete(&g.doc);
    return rc;
}

/* Labels from the sets: label[seeds[i]] = labels[i]; nodes in no set stay -1. */
static int labels_from_sets(struct oc_ds_builder *b, const struct gb_meta *m, uint32_t *n_classes,
                            struct oc_err *err)
{
    enum { CHUNK = 32768 };
    int32_t *lab = NULL;
    int64_t *ids = NULL, *vals = NULL;
    struct oc_imp_npy rs, rl;
    memset(&rs, 0, sizeof(rs));
    memset(&rl, 0, sizeof(rl));
    int rc = OC_OK;
    lab = oc_alloc(m->n_nodes ? m->n_nodes * sizeof(int32_t) : 1, "import: set labels", err);
    ids = lab ? oc_alloc(2 * CHUNK * sizeof(int64_t), "import: set labels", err) : NULL;
    if (!ids) {
        rc = err->status;
        goto out;
    }
    vals = ids + CHUNK;
    for (uint64_t i = 0; i < m->n_nodes; i++)
        lab[i] = -1;
    int64_t limit = m->n_classes ? (int64_t)m->n_classes : INT32_MAX, max = -1;
    for (int s = 0; s < 3; s++) {
        const struct gb_set *set = &m->sets[s];
        if (!set->labels.present)
            continue;
        rc = oc_imp_npy_open_vector(&rs, set->seeds.path, "seeds", err);
        if (rc == OC_OK)
            rc = oc_imp_npy_open_vector(&rl, set->labels.path, "labels", err);
        if (rc)
            goto out;
        if (rs.n_rows != rl.n_rows) {
            rc = OC_ERR(err, OC_ERR_FORMAT, "%s: %llu labels for %llu seeds (%s)", set->labels.path,
                        (unsigned long long)rl.n_rows, (unsigned long long)rs.n_rows,
                        set->seeds.path);
            goto out;
        }
        for (uint64_t j = 0; j < rs.n_rows;) {
            size_t k = rs.n_rows - j < CHUNK ? (size_t)(rs.n_rows - j) : CHUNK;
            rc = oc_imp_npy_read(&rs, j, k, OC_DTYPE_I64, ids, err);
            if (rc == OC_OK)
                rc = oc_imp_npy_read(&rl, j, k, OC_DTYPE_I64, vals, err);
            if (rc)
                goto out;
            for (size_t i = 0; i < k; i++) {
                if (ids[i] < 0 || (uint64_t)ids[i] >= m->n_nodes) {
                    rc = OC_ERR(err, OC_ERR_FORMAT, "%s: node id %lld out of range [0, %llu)",
                                set->seeds.path, (long long)ids[i], (unsigned long long)m->n_nodes);
                    goto out;
                }
                if (vals[i] < -1 || vals[i] >= limit) {
                    rc = OC_ERR(err, OC_ERR_FORMAT, "%s: label %lld out of range [-1, %lld)",
                                set->labels.path, (long long)vals[i], (long long)limit);
                    goto out;
                }
                lab[ids[i]] = (int32_t)vals[i];
                if (vals[i] > max)
                    max = vals[i];
            }
            j += k;
        }
        oc_imp_npy_close(&rs);
        oc_imp_npy_close(&rl);
    }
    rc = oc_ds_builder_write_array(b, OC_DS_LABELS, OC_DTYPE_I32, m->n_nodes, lab, err);
    if (rc == OC_OK) {
        *n_classes = m->n_classes ? m->n_classes : (uint32_t)(max + 1);
        rc = oc_imp_labels_settle(b, *n_classes, err);
    }
out:
    oc_imp_npy_close(&rs);
    oc_imp_npy_close(&rl);
    oc_free(ids);
    oc_free(lab);
    return rc;
}

/*
 * The size gate: graph.nodes[0].num must be the rows of the node feature and
 * label arrays; without either, every node beyond the largest edge id would
 * hold nothing, which only an explicit --max-size accepts. Then oc_imp_gate.
 */
static int gate(const char *yaml_path, const char *out, const struct oc_import_opts *o,
                const struct gb_meta *meta, struct oc_err *err)
{
    struct oc_ds_size s = {.n_nodes = meta->n_nodes,
                           .feat_dtype = o->feat_dtype,
                           .labels = meta->label.present || meta->sets[0].labels.present};
    const struct gb_file *per_node[2] = {&meta->feat, &meta->label};
    uint64_t rows, cols;
    int rc, vouched = 0;
    for (int k = 0; k < 2; k++) {
        if (!per_node[k]->present)
            continue;
        if ((rc = oc_imp_npy_dims(per_node[k]->path, &rows, &cols, err)))
            return rc;
        if (rows != meta->n_nodes)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: %s %llu %s, expected %llu (nodes: graph.nodes[0].num in %s)",
                          per_node[k]->path, k == 0 ? "feature array has" : "label array has",
                          (unsigned long long)rows, k == 0 ? "rows" : "labels",
                          (unsigned long long)meta->n_nodes, yaml_path);
        if (k == 0)
            s.feat_dim = cols;
        vouched = 1;
    }
    if (meta->edges_numpy) {
        if ((rc = oc_imp_npy_edge_count(meta->edges.path, &s.n_edges, err)))
            return rc;
        if (!o->directed)
            s.n_edges = s.n_edges > UINT64_MAX / 2 ? UINT64_MAX : 2 * s.n_edges;
    }
    if (!vouched) {
        uint64_t max1 = 0;
        if (meta->edges_numpy)
            rc = oc_imp_npy_edges(meta->edges.path, 0, NULL, &max1, NULL, NULL, err);
        else
            rc = oc_imp_text_edges(meta->edges.path, ',', 0, NULL, &max1, NULL, NULL, err);
        if (rc)
            return rc;
        if (meta->n_nodes > max1 &&
            (rc = oc_imp_unvouched(o, err,
                                   "%s: graph.nodes[0].num is %llu but no node feature or label "
                                   "array says so and the edges in %s name only %llu nodes",
                                   yaml_path, (unsigned long long)meta->n_nodes, meta->edges.path,
                                   (unsigned long long)max1)))
            return rc;
    }
    return oc_imp_gate(&s, out, o, err);
}

int oc_import_graphbolt(const char *src, const char *out, const struct oc_import_opts *o,
                        struct oc_progress *progress, struct oc_err *err)
{
    static const enum oc_ds_file split_files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    struct oc_err local;
    if (!err)
        err = &local;
    oc_err_clear(err);
    struct oc_ds_builder *b = NULL;
    struct gb_meta *meta = NULL;
    char yaml_path[OC_IMP_PATH_MAX], name[128];
    int rc = oc_imp_check_opts(o, err);
    if (rc)
        return rc;
    if (!oc_imp_is_dir(src))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a directory", src);
    rc = oc_imp_path(yaml_path, src, "metadata.yaml", err);
    if (rc)
        return rc;
    meta = oc_alloc(sizeof(*meta), "import: graphbolt metadata", err);
    if (!meta)
        return err->status;
    rc = parse_metadata(yaml_path, src, meta, err);
    if (rc)
        goto out;
    if (meta->name[0])
        snprintf(name, sizeof(name), "%s", meta->name);
    else
        oc_imp_basename(src, name, sizeof(name));
    rc = gate(yaml_path, out, o, meta, err);
    if (rc)
        goto out;

    rc = oc_ds_builder_new(out, &b, err);
    if (rc)
        goto out;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    oc_imp_manifest_init(m, OC_IMPORT_GRAPHBOLT, src, o, name);
    m->n_nodes = meta->n_nodes;

    struct oc_imp_edges e;
    rc = oc_imp_edges_begin(&e, b, o, meta->n_nodes, err);
    if (rc)
        goto out;
    if (meta->edges_numpy)
        rc = oc_imp_npy_edges(meta->edges.path, 0, &e, NULL, NULL, progress, err);
    else
        rc = oc_imp_text_edges(meta->edges.path, ',', 0, &e, NULL, NULL, progress, err);
    if (rc) {
        oc_imp_edges_abort(&e);
        goto out;
    }
    rc = oc_imp_edges_finish(&e, b, progress, err);
    if (rc)
        goto out;

    m->feat_dim = 0;
    if (meta->feat.present) {
        rc =
            oc_imp_feat_from_npy(b, o, meta->feat.path, meta->n_nodes, &m->feat_dim, progress, err);
        if (rc)
            goto out;
    } else {
        oc_log(OC_LOG_INFO, "%s has no node feature \"feat\": importing topology and labels only",
               name);
    }

    int set_labels = 0;
    for (int s = 0; s < 3; s++)
        set_labels |= meta->sets[s].labels.present;
    uint32_t n_classes = meta->n_classes;
    if (meta->label.present) {
        rc =
            oc_imp_labels_npy(b, meta->label.path, meta->n_nodes, meta->n_classes, &n_classes, err);
    } else if (set_labels) {
        rc = labels_from_sets(b, meta, &n_classes, err);
    } else {
        oc_log(OC_LOG_INFO, "%s has no labels: importing without them", name);
        n_classes = 0;
    }
    if (rc)
        goto out;
    m->n_classes = n_classes;

    uint64_t n[3] = {0, 0, 0};
    for (int s = 0; s < 3; s++) {
        if (meta->sets[s].seeds.present) {
            rc = oc_imp_split_ids_npy(b, split_files[s], meta->sets[s].seeds.path, meta->n_nodes,
                                      &n[s], err);
        } else {
            rc = oc_imp_split_empty_one(b, split_files[s], err);
        }
        if (rc)
            goto out;
    }
    m->n_train = n[0];
    m->n_val = n[1];
    m->n_test = n[2];
    rc = oc_ds_builder_commit_checked(b, err);
out:
    oc_ds_builder_free(b);
    oc_free(meta);
    return rc;
}
