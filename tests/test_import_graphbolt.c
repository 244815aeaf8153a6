/*
 * test_import_graphbolt.c — the GraphBolt metadata.yaml importer on fixtures
 * this test writes (YAML text + hand-made .npy files): csv and numpy edges
 * (C and Fortran order), f64/f16 features, labels from a feature or from the
 * sets, and clear errors for missing keys, missing files, wrong shapes,
 * heterographs, unsupported formats and YAML syntax.
 *
 * Place in the data flow: tests of src/dataset/import_graphbolt.c.
 */
#include "harness.h"
#include "import_fixture.h"
#include "offcore/import.h"

static const char *const yaml_a = "dataset_name: gb_tiny\n"
                                  "graph:\n"
                                  "  nodes:\n"
                                  "    - num: 6\n"
                                  "  edges:\n"
                                  "    - format: csv\n"
                                  "      path: edges/edges.csv\n"
                                  "feature_data:\n"
                                  "  - domain: node\n"
                                  "    name: feat\n"
                                  "    format: numpy\n"
                                  "    in_memory: false\n"
                                  "    path: data/feat.npy\n"
                                  "  - domain: node\n"
                                  "    name: label\n"
                                  "    format: numpy\n"
                                  "    path: data/label.npy\n"
                                  "  - domain: edge\n"
                                  "    name: weight\n"
                                  "    format: numpy\n"
                                  "    path: data/absent-but-skipped.npy\n"
                                  "tasks:\n"
                                  "  - name: node_classification\n"
                                  "    num_classes: 4\n"
                                  "    train_set:\n"
                                  "      - data:\n"
                                  "          - name: seeds\n"
                                  "            format: numpy\n"
                                  "            path: set/train.npy\n"
                                  "    validation_set:\n"
                                  "      - data:\n"
                                  "          - name: seeds\n"
                                  "            format: numpy\n"
                                  "            path: set/val.npy\n"
                                  "    test_set:\n"
                                  "      - type: null\n"
                                  "        data:\n"
                                  "          - name: seed_nodes\n"
                                  "            format: numpy\n"
                                  "            in_memory: true\n"
                                  "            path: set/test.npy\n";

static void write_a(const char *dir)
{
    fx_write(dir, "metadata.yaml", yaml_a);
    fx_write(dir, "edges/edges.csv", "0,1\n1,2\n2,0\n3,4\n");
    double feat[12] = {0.5, 1, -2, 3, 0.25, 0, 0, 0, 9, 9, 1e10, -1};
    uint64_t fs[2] = {6, 2};
    fx_write_npy(dir, "data/feat.npy", OC_DTYPE_F64, 2, fs, feat, 0);
    int64_t lab[6] = {0, 1, 2, 3, -1, 1};
    uint64_t ls[1] = {6};
    fx_write_npy(dir, "data/label.npy", OC_DTYPE_I64, 1, ls, lab, 0);
    int64_t tr[2] = {0, 1}, va[1] = {2};
    int32_t te[2] = {3, 5};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "set/train.npy", OC_DTYPE_I64, 1, s2, tr, 0);
    fx_write_npy(dir, "set/val.npy", OC_DTYPE_I64, 1, s1, va, 0);
    fx_write_npy(dir, "set/test.npy", OC_DTYPE_I32, 1, s2, te, 0);
}

OC_TEST(graphbolt_csv_edges_feature_labels)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/gb", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_a(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct fx_ds d;
    fx_import_ok(OC_IMPORT_GRAPHBOLT, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(strcmp(d.m.name, "gb_tiny") == 0);
    OC_CHECK(d.m.n_nodes == 6 && d.m.n_edges == 8);
    OC_CHECK(fx_has_edge(&d, 2, 0) && fx_has_edge(&d, 0, 2) && fx_has_edge(&d, 4, 3));
    OC_CHECK(d.m.feat_dim == 2);
    float want[12] = {0.5f, 1, -2, 3, 0.25f, 0, 0, 0, 9, 9, 1e10f, -1};
    OC_CHECK(memcmp(d.feat, want, sizeof(want)) == 0);
    OC_CHECK(d.m.n_classes == 4 && d.labels[3] == 3 && d.labels[4] == -1);
    OC_CHECK(d.n_split[0] == 2 && d.n_split[1] == 1 && d.n_split[2] == 2);
    OC_CHECK(d.split[2][0] == 3 && d.split[2][1] == 5);
    OC_CHECK(strstr(d.m.provenance, "offcore import graphbolt") != NULL);
    fx_ds_free(&d);
}

static const char *const yaml_b =
    "graph:\n"
    "  nodes:\n"
    "    - type: paper\n"
    "      num: 5\n"
    "  edges:\n"
    "    - type: paper:cites:paper\n"
    "      format: numpy\n"
    "      path: edges.npy\n"
    "feature_data:\n"
    "  - {domain: node, type: paper, name: feat, format: numpy, path: feat.npy}\n"
    "tasks:\n"
    "  - name: nc\n"
    "    train_set:\n"
    "      - type: paper\n"
    "        data:\n"
    "          - {name: seeds, format: numpy, path: tr.npy}\n"
    "          - {name: labels, format: numpy, path: tr_lab.npy}\n"
    "    test_set:\n"
    "      - type: paper\n"
    "        data:\n"
    "          - {name: seeds, format: numpy, path: te.npy}\n"
    "          - {name: labels, format: numpy, path: te_lab.npy}\n";

static void write_b(const char *dir, int fortran)
{
    fx_write(dir, "metadata.yaml", yaml_b);
    /* edges (2, 3): 0->1, 1->2, 4->4 ; Fortran order stores the pairs interleaved */
    int32_t rows[6] = {0, 1, 4, 1, 2, 4};
    int32_t inter[6] = {0, 1, 1, 2, 4, 4};
    uint64_t es[2] = {2, 3};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I32, 2, es, fortran ? inter : rows, fortran);
    uint16_t feat[5];
    for (int i = 0; i < 5; i++)
        feat[i] = oc_f32_to_f16((float)i * 0.5f);
    uint64_t fs[1] = {5};
    fx_write_npy(dir, "feat.npy", OC_DTYPE_F16, 1, fs, feat, 0);
    uint64_t tr[2] = {0, 3}, te[1] = {4};
    int64_t trl[2] = {2, 1}, tel[1] = {0};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "tr.npy", OC_DTYPE_U64, 1, s2, tr, 0);
    fx_write_npy(dir, "tr_lab.npy", OC_DTYPE_I64, 1, s2, trl, 0);
    fx_write_npy(dir, "te.npy", OC_DTYPE_U64, 1, s1, te, 0);
    fx_write_npy(dir, "te_lab.npy", OC_DTYPE_I64, 1, s1, tel, 0);
}

OC_TEST(graphbolt_numpy_edges_set_labels)
{
    for (int fortran = 0; fortran < 2; fortran++) {
        const char *tmp = oc_test_tmpdir();
        char src[4096], out[4096];
        FX_PATH(src, "%s/gbb", tmp);
        FX_PATH(out, "%s/out", tmp);
        write_b(src, fortran);
        struct oc_import_opts o;
        oc_import_opts_default(&o);
        o.directed = 1;
        o.row_normalize = 1; /* one column: every non-zero row becomes 1 */
        struct fx_ds d;
        /* Fortran order (what np.save of a transposed array writes) reads the same edges */
        fx_import_ok(OC_IMPORT_GRAPHBOLT, src, out, &o, &d);
        if (!d.indptr)
            return;
        OC_CHECK(strcmp(d.m.name, "gbb") == 0);
        OC_CHECK(d.m.n_nodes == 5 && d.m.n_edges == 3 && d.m.directed);
        OC_CHECK(fx_has_edge(&d, 0, 1) && fx_has_edge(&d, 1, 2) && fx_has_edge(&d, 4, 4));
        OC_CHECK(!fx_has_edge(&d, 1, 0));
        OC_CHECK(d.m.feat_dim == 1);
        OC_CHECK(d.feat[0] == 0 && d.feat[1] == 1 && d.feat[4] == 1);
        OC_CHECK(d.m.n_classes == 3);
        int32_t want[5] = {2, -1, -1, 1, 0};
        OC_CHECK(memcmp(d.labels, want, sizeof(want)) == 0);
        OC_CHECK(d.n_split[0] == 2 && d.n_split[1] == 0 && d.n_split[2] == 1);
        fx_ds_free(&d);
    }
}

/* Writes fixture A, applies one edit (replace text in the YAML, or write a file), expects an error. */
static void expect_bad(const char *from, const char *to, void (*edit)(const char *dir), int status,
                       const char *substr)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/src", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_a(src);
    if (from) {
        const char *at = strstr(yaml_a, from);
        OC_CHECK(at != NULL);
        if (!at)
            return;
        size_t n = strlen(yaml_a) + strlen(to) + 1;
        char *y = malloc(n);
        snprintf(y, n, "%.*s%s%s", (int)(at - yaml_a), yaml_a, to, at + strlen(from));
        fx_write(src, "metadata.yaml", y);
        free(y);
    }
    if (edit)
        edit(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(oc_import_graphbolt(src, out, &o, NULL, &err), status, &err, substr);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  error: %s\n", err.msg);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(!fx_output_left(out));
}

static void edges_3xE(const char *dir)
{
    int64_t e[9] = {0, 1, 2, 1, 2, 0, 5, 5, 5};
    uint64_t s[2] = {3, 3};
    fx_write_npy(dir, "edges/e.npy", OC_DTYPE_I64, 2, s, e, 0);
}

static void feat_short(const char *dir)
{
    float f[5] = {0};
    uint64_t s[2] = {5, 1};
    fx_write_npy(dir, "data/feat.npy", OC_DTYPE_F32, 2, s, f, 0);
}

static void label_float(const char *dir)
{
    float f[6] = {0};
    uint64_t s[1] = {6};
    fx_write_npy(dir, "data/label.npy", OC_DTYPE_F32, 1, s, f, 0);
}

static void seeds_out_of_range(const char *dir)
{
    int64_t tr[2] = {0, 6};
    uint64_t s[1] = {2};
    fx_write_npy(dir, "set/train.npy", OC_DTYPE_I64, 1, s, tr, 0);
}

static void edge_csv_bad(const char *dir)
{
    fx_write(dir, "edges/edges.csv", "0,1\n1;2\n");
}

static void label_too_big(const char *dir)
{
    int64_t lab[6] = {0, 1, 2, 4, -1, 1};
    uint64_t ls[1] = {6};
    fx_write_npy(dir, "data/label.npy", OC_DTYPE_I64, 1, ls, lab, 0);
}

OC_TEST(graphbolt_bad_inputs)
{
    expect_bad("    - num: 6\n", "    - count: 6\n", NULL, OC_ERR_FORMAT,
               "metadata.yaml:4: graph.nodes[0]: missing key \"num\"");
    expect_bad("    - num: 6\n", "    - num: six\n", NULL, OC_ERR_FORMAT,
               "graph.nodes[0].num: expected a non-negative integer");
    expect_bad("path: edges/edges.csv", "path: edges/nope.csv", NULL, OC_ERR_NOTFOUND,
               "graph.edges[0]:");
    expect_bad("path: edges/edges.csv", "path: edges/nope.csv", NULL, OC_ERR_NOTFOUND,
               "nope.csv does not exist");
    expect_bad("      path: edges/edges.csv\n", "", NULL, OC_ERR_FORMAT,
               "graph.edges[0]: missing key \"path\"");
    expect_bad("graph:\n", "graf:\n", NULL, OC_ERR_FORMAT, "metadata: missing key \"graph\"");
    expect_bad("    - num: 6\n", "    - num: 6\n    - num: 3\n", NULL, OC_ERR_UNSUPPORTED,
               "only homogeneous graphs");
    expect_bad("format: csv", "format: parquet", NULL, OC_ERR_UNSUPPORTED,
               "format \"parquet\" is not supported");
    expect_bad("    format: numpy\n    in_memory: false\n", "    format: torch\n", NULL,
               OC_ERR_UNSUPPORTED, "feature_data[0]: format \"torch\"");
    expect_bad("name: seeds\n            format: numpy\n            path: set/train.npy",
               "name: node_pairs\n            format: numpy\n            path: set/train.npy", NULL,
               OC_ERR_UNSUPPORTED, "data \"node_pairs\" is not supported");
    expect_bad("    num_classes: 4\n", "    num_classes: [4\n", NULL, OC_ERR_FORMAT,
               "metadata.yaml:");
    expect_bad("    num_classes: 4\n", "    num_classes: 4\n  bad indentation: [\n", NULL,
               OC_ERR_FORMAT, "YAML");
    expect_bad("format: csv\n      path: edges/edges.csv", "format: numpy\n      path: edges/e.npy",
               edges_3xE, OC_ERR_FORMAT, "shape (3, 3), expected (2, E)");
    expect_bad(NULL, NULL, feat_short, OC_ERR_FORMAT, "feature array has 5 rows, expected 6");
    expect_bad(NULL, NULL, label_float, OC_ERR_FORMAT, "expected an integer array, found f32");
    expect_bad(NULL, NULL, seeds_out_of_range, OC_ERR_FORMAT, "node id 6 at index 1");
    expect_bad(NULL, NULL, edge_csv_bad, OC_ERR_FORMAT, "edges.csv:2: expected two node ids");
    expect_bad(NULL, NULL, label_too_big, OC_ERR_FORMAT, "label 4 of node 3 is out of range");

    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct oc_err err;
    char out[4096];
    FX_PATH(out, "%s/x", oc_test_tmpdir());
    OC_CHECK_ERR(oc_import_graphbolt(oc_test_tmpdir(), out, &o, NULL, &err), OC_ERR_NOTFOUND, &err,
                 "metadata.yaml");
}

OC_TEST_MAIN()
