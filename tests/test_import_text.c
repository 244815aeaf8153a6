/*
 * test_import_text.c — the plain-text importer: every node-classification
 * folder of shared/datasets imports and opens with counts matching meta.txt;
 * Cora is compared value by value with its text files; a small fixture
 * checks row normalization, f16, direction, self-loops, split selection and
 * the errors for malformed inputs (file:line, nothing left at the output).
 *
 * Place in the data flow: tests of src/dataset/import_text.c (+ sinks).
 * OC_TEST_QUICK=1 (or an ASan build) skips the two largest feature matrices.
 */
#include <math.h>

#include "harness.h"
#include "import_fixture.h"
#include "offcore/import.h"

#if defined(__SANITIZE_ADDRESS__)
#    define ASAN_BUILD 1
#elif defined(__has_feature)
#    if __has_feature(address_sanitizer)
#        define ASAN_BUILD 1
#    endif
#endif
#ifndef ASAN_BUILD
#    define ASAN_BUILD 0
#endif

static uint64_t count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    uint64_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static uint64_t meta_value(const char *dir, const char *key, uint64_t dflt)
{
    char p[4096], k[128];
    unsigned long long v;
    FX_PATH(p, "%s/meta.txt", dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return dflt;
    while (fscanf(f, "%127s %llu", k, &v) == 2) {
        if (strcmp(k, key) == 0) {
            fclose(f);
            return v;
        }
    }
    fclose(f);
    return dflt;
}

/* Counts of roles 0/1/2 in a role-form split file. */
static void role_counts(const char *path, uint64_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    FILE *f = fopen(path, "r");
    int r;
    while (f && fscanf(f, "%d", &r) == 1)
        if (r >= 0 && r <= 2)
            n[r]++;
    if (f)
        fclose(f);
}

static const char *shared_datasets(void)
{
    static char p[700];
    const char *s = oc_test_shared();
    if (!s)
        return NULL;
    FX_PATH(p, "%s/datasets", s);
    return p;
}

/* Imports one shared folder and checks the counts against its text files. */
static void check_folder(const char *rel, enum oc_dtype feat_dtype)
{
    const char *root = shared_datasets();
    char src[4096], out[4096], p[4096];
    FX_PATH(src, "%s/%s", root, rel);
    FX_PATH(out, "%s/ds", oc_test_tmpdir());
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    o.feat_dtype = feat_dtype;
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    fprintf(stderr, "  importing %s\n", rel);
    OC_CHECK_OK(oc_import(OC_IMPORT_TEXT, src, out, &o, NULL, &err), &err);
    OC_CHECK(oc_mem_n_live() == live);
    struct fx_ds d;
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    if (!d.indptr)
        return;
    uint64_t n = meta_value(src, "num_nodes", 0);
    int has_feat = meta_value(src, "features_available", 1) != 0;
    FX_PATH(p, "%s/edges.txt", src);
    uint64_t und = count_lines(p);
    FX_PATH(p, "%s/self_loops.txt", src);
    uint64_t loops = count_lines(p);
    OC_CHECK(und == meta_value(src, "num_edges_undirected", 0));
    OC_CHECK(d.m.n_nodes == n);
    OC_CHECK(d.m.n_edges == 2 * und + loops);
    OC_CHECK(d.indptr[n] == d.m.n_edges);
    OC_CHECK(d.m.feat_dim == (has_feat ? meta_value(src, "num_features", 0) : 0));
    OC_CHECK(d.m.n_classes == meta_value(src, "num_classes", 0));
    OC_CHECK(d.m.directed == 0);
    OC_CHECK(d.m.feat_dtype == feat_dtype);
    OC_CHECK(strstr(d.m.provenance, "offcore import text") != NULL);

    /* Expected splits: index form, else role-form file 0 of the first split source. */
    uint64_t want[3] = {0, 0, 0};
    FX_PATH(p, "%s/train_idx.txt", src);
    if (oc_path_exists(p)) {
        want[0] = count_lines(p);
        FX_PATH(p, "%s/val_idx.txt", src);
        want[1] = count_lines(p);
        FX_PATH(p, "%s/test_idx.txt", src);
        want[2] = count_lines(p);
    } else {
        const char *cands[3] = {"splits/split_0.txt", "splits_geom_gcn/split_0.txt",
                                "split_random_60_20_20_seed0.txt"};
        for (int i = 0; i < 3; i++) {
            FX_PATH(p, "%s/%s", src, cands[i]);
            if (oc_path_exists(p)) {
                role_counts(p, want);
                break;
            }
        }
    }
    for (int i = 0; i < 3; i++)
        OC_CHECK(d.n_split[i] == want[i]);
    if (strcmp(rel, "github-musae") == 0)
        OC_CHECK(want[0] == 0 && d.n_split[0] == 0);
    else
        OC_CHECK(d.n_split[0] > 0);

    /* Symmetric: every u -> v has v -> u (spot check over the first 2000 nodes). */
    for (uint64_t v = 0; v < n && v < 2000; v++)
        for (uint64_t i = d.indptr[v]; i < d.indptr[v + 1]; i++)
            if (!fx_has_edge(&d, v, d.indices[i])) {
                OC_CHECK(!"edge without its reverse");
                v = n;
                break;
            }
    fx_ds_free(&d);
    struct oc_err e2;
    oc_rm_rf(out, &e2);
}

OC_TEST(text_all_shared_folders)
{
    if (!shared_datasets())
        OC_SKIP("shared datasets absent");
    int quick = (getenv("OC_TEST_QUICK") && atoi(getenv("OC_TEST_QUICK"))) || ASAN_BUILD;
    static const char *const small[] = {
        "cora",
        "citeseer",
        "pubmed",
        "tolokers",
        "actor",
        "chameleon-filtered",
        "squirrel-filtered",
        "webkb/cornell",
        "webkb/texas",
        "webkb/wisconsin",
        "github-musae",
    };
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        check_folder(small[i], i % 2 ? OC_DTYPE_F16 : OC_DTYPE_F32);
    if (quick) {
        fprintf(stderr, "  quick: skipping facebook and twitch-de\n");
        return;
    }
    check_folder("twitch-de", OC_DTYPE_F16);
    check_folder("facebook", OC_DTYPE_F16);
}

OC_TEST(text_cora_values)
{
    const char *root = shared_datasets();
    if (!root)
        OC_SKIP("shared datasets absent");
    char src[4096], out[4096], p[4096];
    FX_PATH(src, "%s/cora", root);
    FX_PATH(out, "%s/cora", oc_test_tmpdir());
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct oc_err err;
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    struct fx_ds d;
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 2708);
    OC_CHECK(d.m.n_edges == 10556);
    OC_CHECK(d.m.feat_dim == 1433);
    OC_CHECK(d.m.n_classes == 7);
    OC_CHECK(d.n_split[0] == 140 && d.n_split[1] == 500 && d.n_split[2] == 1000);
    OC_CHECK(strcmp(d.m.name, "cora") == 0);
    OC_CHECK(d.m.index_dtype == OC_DTYPE_U32);
    /* Planetoid order: node 0 is class 3, nodes 1 and 2 are class 4; train = 0..139. */
    OC_CHECK(d.labels[0] == 3 && d.labels[1] == 4 && d.labels[2] == 4);
    OC_CHECK(d.split[0][0] == 0 && d.split[0][139] == 139);
    OC_CHECK(d.split[1][0] == 140 && d.split[2][0] == 1708 && d.split[2][999] == 2707);
    OC_CHECK(d.feat[0 * 1433 + 19] == 1.0f && d.feat[0 * 1433 + 81] == 1.0f);
    OC_CHECK(d.feat[0 * 1433 + 18] == 0.0f && d.feat[0 * 1433 + 20] == 0.0f);

    /* Every feature entry of the text equals the matrix; nothing else is non-zero. */
    FX_PATH(p, "%s/features.txt", src);
    FILE *f = fopen(p, "r");
    OC_CHECK(f != NULL);
    unsigned long long node, col;
    float val;
    uint64_t nnz_text = 0, bad = 0;
    while (f && fscanf(f, "%llu %llu %g", &node, &col, &val) == 3) {
        nnz_text++;
        bad += d.feat[node * 1433 + col] != val;
    }
    if (f)
        fclose(f);
    uint64_t nnz = 0;
    for (uint64_t i = 0; i < 2708ull * 1433; i++)
        nnz += d.feat[i] != 0;
    OC_CHECK(nnz_text == 49216);
    OC_CHECK(bad == 0);
    OC_CHECK(nnz == nnz_text);

    /* Labels line by line. */
    FX_PATH(p, "%s/labels.txt", src);
    f = fopen(p, "r");
    int lab;
    uint64_t i = 0;
    bad = 0;
    while (f && fscanf(f, "%d", &lab) == 1)
        bad += d.labels[i++] != lab;
    if (f)
        fclose(f);
    OC_CHECK(i == 2708 && bad == 0);

    /* Edges: both directions of every line, sorted in-neighbor lists. */
    FX_PATH(p, "%s/edges.txt", src);
    f = fopen(p, "r");
    unsigned long long u, v;
    bad = 0;
    while (f && fscanf(f, "%llu %llu", &u, &v) == 2)
        bad += !fx_has_edge(&d, u, v) || !fx_has_edge(&d, v, u);
    if (f)
        fclose(f);
    OC_CHECK(bad == 0);
    for (uint64_t w = 0; w < 2708; w++)
        for (uint64_t k = d.indptr[w] + 1; k < d.indptr[w + 1]; k++)
            bad += d.indices[k - 1] >= d.indices[k];
    OC_CHECK(bad == 0);
    fx_ds_free(&d);
}

OC_TEST(text_self_loops_direction_and_splits)
{
    const char *root = shared_datasets();
    if (!root)
        OC_SKIP("shared datasets absent");
    char src[4096], out[4096], p[4096];
    struct oc_import_opts o;
    struct oc_err err;
    struct fx_ds d;
    const char *tmp = oc_test_tmpdir();

    /* CiteSeer: 124 self-loops from self_loops.txt, unless removed. */
    FX_PATH(src, "%s/citeseer", root);
    oc_import_opts_default(&o);
    o.remove_self_loops = 1;
    FX_PATH(out, "%s/citeseer-noloops", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.m.n_edges == 9104);
    OC_CHECK(d.labels && d.labels[2407] == -1);
    OC_CHECK(strstr(d.m.provenance, "--remove-self-loops") != NULL);
    fx_ds_free(&d);

    /* Cornell directed: edges_directed.txt, 298 unique pairs incl. 3 self-loops. */
    FX_PATH(src, "%s/webkb/cornell", root);
    oc_import_opts_default(&o);
    o.directed = 1;
    FX_PATH(out, "%s/cornell-dir", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.m.n_edges == 298);
    OC_CHECK(d.m.directed == 1);
    OC_CHECK(fx_has_edge(&d, 1, 90));
    fx_ds_free(&d);
    o.remove_self_loops = 1;
    FX_PATH(out, "%s/cornell-dir-noloops", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.m.n_edges == 295);
    fx_ds_free(&d);

    /* Cora with an explicit split index: the Geom-GCN role-form split_3. */
    FX_PATH(src, "%s/cora", root);
    oc_import_opts_default(&o);
    o.split_index = 3;
    FX_PATH(out, "%s/cora-s3", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    uint64_t want[3];
    FX_PATH(p, "%s/splits_geom_gcn/split_3.txt", src);
    role_counts(p, want);
    OC_CHECK(want[0] == 1192 && want[1] == 796 && want[2] == 497);
    OC_CHECK(d.n_split[0] == want[0] && d.n_split[1] == want[1] && d.n_split[2] == want[2]);
    fx_ds_free(&d);
    o.split_index = 10;
    FX_PATH(out, "%s/cora-s10", tmp);
    OC_CHECK_ERR(oc_import_text(src, out, &o, NULL, &err), OC_ERR_ARG, &err, "split index 10");
    OC_CHECK(!fx_output_left(out));
}

/* A 5-node fixture: features rows 0, 2, 4 non-zero; rows 1 and 3 empty. */
static void write_small(const char *dir)
{
    fx_write(dir, "meta.txt", "num_nodes 5\nnum_features 3\nnum_classes 2\n");
    fx_write(dir, "edges.txt", "0 1\n1 2\n3 4\n");
    fx_write(dir, "features.txt", "0 0 1\n0 2 3\n2 1 0.5\n4 0 2\n4 1 2\n");
    fx_write(dir, "labels.txt", "0\n1\n-1\n1\n0\n");
    fx_write(dir, "splits/split_0.txt", "0\n1\n2\n-1\n0\n");
    fx_write(dir, "splits/split_2.txt", "1\n1\n1\n0\n2\n");
    fx_write(dir, "splits/split_10.txt", "2\n2\n2\n2\n0\n");
}

OC_TEST(text_fixture_values)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/small", tmp);
    write_small(src);
    struct oc_import_opts o;
    struct oc_err err;
    struct fx_ds d;
    oc_import_opts_default(&o);
    FX_PATH(out, "%s/plain", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_edges == 6);
    OC_CHECK(fx_has_edge(&d, 0, 1) && fx_has_edge(&d, 1, 0) && fx_has_edge(&d, 4, 3));
    OC_CHECK(!fx_has_edge(&d, 0, 2));
    float want[15] = {1, 0, 3, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0, 2, 2, 0};
    OC_CHECK(memcmp(d.feat, want, sizeof(want)) == 0);
    OC_CHECK(d.labels[2] == -1 && d.labels[3] == 1);
    /* role-form split 0: train {0, 4}, val {1}, test {2} */
    OC_CHECK(d.n_split[0] == 2 && d.split[0][0] == 0 && d.split[0][1] == 4);
    OC_CHECK(d.n_split[1] == 1 && d.split[1][0] == 1);
    OC_CHECK(d.n_split[2] == 1 && d.split[2][0] == 2);
    fx_ds_free(&d);

    /* Row normalization + f16 + directed + natural order of split files. */
    o.row_normalize = 1;
    o.feat_dtype = OC_DTYPE_F16;
    o.directed = 1;
    o.split_index = 2;
    o.name = "tiny";
    FX_PATH(out, "%s/norm", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_edges == 3 && d.m.directed == 1);
    OC_CHECK(fx_has_edge(&d, 0, 1) && !fx_has_edge(&d, 1, 0));
    OC_CHECK(d.m.feat_dtype == OC_DTYPE_F16);
    float wn[15] = {0.25f, 0, 0.75f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0.5f, 0.5f, 0};
    OC_CHECK(memcmp(d.feat, wn, sizeof(wn)) == 0);
    /* natural order split_0, split_2, split_10: index 2 is split_10 (train {4}, test 0..3) */
    OC_CHECK(d.n_split[0] == 1 && d.split[0][0] == 4);
    OC_CHECK(d.n_split[1] == 0 && d.n_split[2] == 4);
    OC_CHECK(strcmp(d.m.name, "tiny") == 0);
    OC_CHECK(strstr(d.m.provenance, "--row-normalize") && strstr(d.m.provenance, "--directed") &&
             strstr(d.m.provenance, "--dtype f16") && strstr(d.m.provenance, "--split 2"));
    fx_ds_free(&d);

    /* The output exists now: refused, and the existing dataset is untouched. */
    OC_CHECK_ERR(oc_import_text(src, out, &o, NULL, &err), OC_ERR_EXISTS, &err, out);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    fx_ds_free(&d);

    /* A split option of another kind is refused, not ignored. */
    FX_PATH(out, "%s/other-kind", tmp);
    OC_CHECK_ERR(oc_import(OC_IMPORT_NPY, src, out, &o, NULL, &err), OC_ERR_ARG, &err,
                 "--split chooses a text dataset's");
    o.split_index = 0;
    o.split_name = "time";
    OC_CHECK_ERR(oc_import(OC_IMPORT_TEXT, src, out, &o, NULL, &err), OC_ERR_ARG, &err,
                 "import text: --ogb-split");
    OC_CHECK(!oc_path_exists(out));
}

OC_TEST(text_no_features_no_splits)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/nofeat", tmp);
    fx_write(src, "meta.txt", "num_nodes 4\nnum_features 7\nnum_classes 3\nfeatures_available 0\n");
    fx_write(src, "edges.txt", "0 1\n2 3\n");
    fx_write(src, "labels.txt", "0\n1\n2\n2\n");
    struct oc_import_opts o;
    struct oc_err err;
    struct fx_ds d;
    oc_import_opts_default(&o);
    FX_PATH(out, "%s/out", tmp);
    OC_CHECK_OK(oc_import_text(src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.m.feat_dim == 0 && d.feat == NULL);
    OC_CHECK(d.m.n_classes == 3 && d.labels && d.labels[3] == 2);
    OC_CHECK(d.n_split[0] == 0 && d.n_split[1] == 0 && d.n_split[2] == 0);
    fx_ds_free(&d);
    /* Asking for a role-form split that does not exist is an error. */
    o.split_index = 1;
    FX_PATH(out, "%s/out2", tmp);
    OC_CHECK_ERR(oc_import_text(src, out, &o, NULL, &err), OC_ERR_NOTFOUND, &err,
                 "no role-form split");
    OC_CHECK(!fx_output_left(out));
}

/* Writes the small fixture with one file replaced, imports, expects an error. */
static void expect_bad(const char *rel, const char *text, int status, const char *substr)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/src", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_small(src);
    fx_write(src, rel, text);
    struct oc_import_opts o;
    struct oc_err err;
    oc_import_opts_default(&o);
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(oc_import_text(src, out, &o, NULL, &err), status, &err, substr);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  error: %s\n", err.msg);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(!fx_output_left(out));
}

OC_TEST(text_bad_inputs)
{
    expect_bad("features.txt", "0 0 1\n2 1 1\n1 0 1\n", OC_ERR_FORMAT,
               "features.txt:3: not sorted");
    expect_bad("features.txt", "0 1 1\n0 1 2\n", OC_ERR_FORMAT, "features.txt:2: not sorted");
    expect_bad("features.txt", "0 0 1\n1 3 1\n", OC_ERR_FORMAT,
               "features.txt:2: column 3 out of range");
    expect_bad("features.txt", "0 0 1\n5 0 1\n", OC_ERR_FORMAT,
               "features.txt:2: node 5 out of range");
    expect_bad("features.txt", "0 0 1\n1 x 1\n", OC_ERR_FORMAT, "features.txt:2: expected");
    expect_bad("edges.txt", "0 1\n1 7\n", OC_ERR_FORMAT, "edges.txt:2: node id 7 out of range");
    expect_bad("edges.txt", "0 1\n1\n", OC_ERR_FORMAT, "edges.txt:2: expected two node ids");
    expect_bad("edges.txt", "0 1\n1 2 3\n", OC_ERR_FORMAT, "edges.txt:2");
    expect_bad("edges.txt", "0 -1\n", OC_ERR_FORMAT, "edges.txt:1");
    expect_bad("labels.txt", "0\n1\n2\n1\n0\n", OC_ERR_FORMAT,
               "labels.txt:3: label 2 out of range");
    expect_bad("labels.txt", "0\n1\n1\n", OC_ERR_FORMAT, "3 labels, expected one per node (5)");
    expect_bad("labels.txt", "0\n1\n1\n0\n0\n1\n", OC_ERR_FORMAT, "labels.txt:6: more labels");
    expect_bad("labels.txt", "0\n1\n\n1\n0\n0\n", OC_ERR_FORMAT,
               "labels.txt:3: blank line among the labels");
    expect_bad("meta.txt", "num_features 3\n", OC_ERR_FORMAT, "meta.txt: no num_nodes");
    expect_bad("meta.txt", "num_nodes five\n", OC_ERR_FORMAT, "meta.txt:1: num_nodes");
    expect_bad("splits/split_0.txt", "0\n1\n3\n0\n0\n", OC_ERR_FORMAT, "split_0.txt:3: role 3");
    expect_bad("splits/split_0.txt", "0\n1\n", OC_ERR_FORMAT, "2 roles, expected one per node");
    /* train_idx.txt alone is fine now (each split file stands on its own); a meta.txt that
       declares away the labels.txt that is there is a contradiction. */
    expect_bad("meta.txt", "num_nodes 5\nnum_features 3\nnum_classes 0\n", OC_ERR_FORMAT,
               "declares num_classes 0");
    expect_bad("self_loops.txt", "1\n9\n", OC_ERR_FORMAT, "self_loops.txt:2: node id 9");
    /* A zero-filled tail (what a crash can leave) is not blank lines: refused. */
    {
        char src[4096];
        FX_PATH(src, "%s/src", oc_test_tmpdir());
        write_small(src);
        char p[4096], zeros[64] = {0};
        FX_PATH(p, "%s/edges.txt", src);
        FILE *f = fopen(p, "ab");
        OC_CHECK(f && fwrite(zeros, 1, sizeof(zeros), f) == sizeof(zeros));
        if (f)
            fclose(f);
        struct oc_import_opts o;
        struct oc_err err;
        char out[4096];
        oc_import_opts_default(&o);
        FX_PATH(out, "%s/out", oc_test_tmpdir());
        OC_CHECK_ERR(oc_import_text(src, out, &o, NULL, &err), OC_ERR_FORMAT, &err,
                     "edges.txt: line 4 has a NUL byte at column 1");
        OC_CHECK(!fx_output_left(out));
    }

    struct oc_import_opts o;
    struct oc_err err;
    oc_import_opts_default(&o);
    char out[4096];
    FX_PATH(out, "%s/x", oc_test_tmpdir());
    OC_CHECK_ERR(oc_import_text("/nonexistent/dir", out, &o, NULL, &err), OC_ERR_NOTFOUND, &err,
                 "/nonexistent/dir");
    o.feat_dtype = OC_DTYPE_F64;
    OC_CHECK_ERR(oc_import_text("/tmp", out, &o, NULL, &err), OC_ERR_ARG, &err, "f32 or f16");
}

/* OUT given as "dir/" builds dir (not a temporary inside it); "." and ".." name no new
   directory and are refused before anything is created. */
/* Blank lines ending labels.txt (as editors and exporters leave them) are not labels. */
OC_TEST(text_labels_trailing_blank_lines)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/trailing", tmp);
    write_small(src);
    fx_write(src, "labels.txt", "0\n1\n-1\n1\n0\n\n \n\n");
    FX_PATH(out, "%s/trailing-out", tmp);
    struct oc_import_opts o;
    struct fx_ds d;
    oc_import_opts_default(&o);
    fx_import_ok(OC_IMPORT_TEXT, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 5 && d.labels[1] == 1 && d.labels[2] == -1 && d.labels[4] == 0);
    fx_ds_free(&d);
}

OC_TEST(text_output_path_forms)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096], given[4096];
    FX_PATH(src, "%s/src", tmp);
    write_small(src);
    struct oc_import_opts o;
    struct oc_err err;
    struct fx_ds d;
    oc_import_opts_default(&o);
    FX_PATH(out, "%s/slash", tmp);
    FX_PATH(given, "%s/slash//", tmp);
    OC_CHECK_OK(oc_import_text(src, given, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.m.n_nodes == 5);
    fx_ds_free(&d);
    FX_PATH(given, "%s/new/..", tmp);
    OC_CHECK_ERR(oc_import_text(src, given, &o, NULL, &err), OC_ERR_ARG, &err,
                 "names no new directory");
    FX_PATH(out, "%s/new", tmp);
    OC_CHECK(!oc_path_exists(out));
    OC_CHECK_ERR(oc_import_text(src, ".", &o, NULL, &err), OC_ERR_ARG, &err,
                 "names no new directory");
    OC_CHECK_ERR(oc_import_text(src, "/", &o, NULL, &err), OC_ERR_ARG, &err,
                 "names no new directory");
}

/* Manifest strings are valid UTF-8 whatever bytes the names came from, cut or not. */
OC_TEST(utf8_copy_makes_valid_utf8)
{
    char b[8];
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "caf\xc3\xa9"), "caf\xc3\xa9") == 0);
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "caf\xe9"), "caf?") == 0);
    /* 3 two-byte characters fit in 7 bytes; the 4th would be cut: stop before it */
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"),
                    "\xc3\xa9\xc3\xa9\xc3\xa9") == 0);
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "\xc0\xaf"), "??") == 0);      /* overlong */
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "\xed\xa0\x80"), "???") == 0); /* surrogate */
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "\xf4\x90\x80\x80"), "????") == 0);
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "a\xe2\x82"), "a??") == 0); /* truncated */
    OC_CHECK(strcmp(oc_utf8_copy(b, sizeof(b), "\xf0\x9f\x98\x80!"), "\xf0\x9f\x98\x80!") == 0);
}

OC_TEST(import_kind_names)
{
    enum oc_import_kind k;
    for (int i = 0; i < OC_IMPORT_KIND_COUNT; i++) {
        OC_CHECK(oc_import_kind_from_name(oc_import_kind_name((enum oc_import_kind)i), &k) ==
                 OC_OK);
        OC_CHECK((int)k == i);
    }
    OC_CHECK(oc_import_kind_from_name("csv", &k) == OC_ERR_ARG);
    OC_CHECK(strcmp(oc_import_kind_name(OC_IMPORT_GRAPHBOLT), "graphbolt") == 0);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    OC_CHECK(o.feat_dtype == OC_DTYPE_F32 && o.split_index == 0 && !o.directed &&
             o.split_name == NULL && o.mem_bytes == 0);
}

OC_TEST_MAIN()
