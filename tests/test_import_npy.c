/*
 * test_import_npy.c — the edge-list + .npy importer on fixtures this test
 * writes: (E, 2), (2, E) and text edge lists, how N is found, dtype
 * conversions of features/labels/ids, optional splits, and the errors for
 * wrong shapes, ids out of range and missing files.
 *
 * Place in the data flow: tests of src/dataset/import_npy.c and
 * import_npyin.c.
 */
#include "harness.h"
#include "import_fixture.h"
#include "offcore/import.h"

/* 5 nodes: (E, 2) int64 edges with a duplicate, f32 features, i32 labels, u32 splits. */
static void write_full(const char *dir)
{
    int64_t e[10] = {0, 1, 1, 2, 0, 1, 3, 3, 2, 4};
    uint64_t es[2] = {5, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I64, 2, es, e, 0);
    float f[15];
    for (int i = 0; i < 15; i++)
        f[i] = (float)i - 7.0f;
    uint64_t fs[2] = {5, 3};
    fx_write_npy(dir, "features.npy", OC_DTYPE_F32, 2, fs, f, 0);
    int32_t lab[5] = {1, 0, -1, 2, 1};
    uint64_t ls[1] = {5};
    fx_write_npy(dir, "labels.npy", OC_DTYPE_I32, 1, ls, lab, 0);
    uint32_t tr[2] = {0, 1}, va[1] = {3}, te[1] = {4};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "train_idx.npy", OC_DTYPE_U32, 1, s2, tr, 0);
    fx_write_npy(dir, "val_idx.npy", OC_DTYPE_U32, 1, s1, va, 0);
    fx_write_npy(dir, "test_idx.npy", OC_DTYPE_U32, 1, s1, te, 0);
}

OC_TEST(npy_full)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/npyset", tmp);
    write_full(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct fx_ds d;
    FX_PATH(out, "%s/out", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    /* 0-1 (twice), 1-2, 3-3, 2-4 -> symmetrized, deduplicated: 2+2+1+2 = 7 */
    OC_CHECK(d.m.n_nodes == 5 && d.m.n_edges == 7);
    OC_CHECK(fx_count_edge(&d, 0, 1) == 1 && fx_count_edge(&d, 1, 0) == 1);
    OC_CHECK(fx_count_edge(&d, 3, 3) == 1 && fx_has_edge(&d, 4, 2));
    OC_CHECK(d.m.feat_dim == 3 && d.feat[0] == -7.0f && d.feat[14] == 7.0f);
    OC_CHECK(d.m.n_classes == 3 && d.labels[2] == -1 && d.labels[3] == 2);
    OC_CHECK(d.n_split[0] == 2 && d.n_split[1] == 1 && d.split[1][0] == 3 && d.n_split[2] == 1);
    OC_CHECK(strcmp(d.m.name, "npyset") == 0);
    fx_ds_free(&d);

    /* keep duplicates, drop self-loops, f16 */
    o.keep_duplicates = 1;
    o.remove_self_loops = 1;
    o.feat_dtype = OC_DTYPE_F16;
    FX_PATH(out, "%s/out2", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_edges == 8);
    OC_CHECK(fx_count_edge(&d, 0, 1) == 2 && fx_count_edge(&d, 3, 3) == 0);
    OC_CHECK(d.m.feat_dtype == OC_DTYPE_F16 && d.feat[14] == 7.0f);
    fx_ds_free(&d);
}

OC_TEST(npy_text_edges_and_shapes)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct fx_ds d;

    /* edges.txt only: comments, tabs, blank lines; N = max id + 1; nothing else. */
    FX_PATH(src, "%s/txt", tmp);
    fx_write(src, "edges.txt", "# a comment\n0\t1\n\n  2 6\n# end\n");
    FX_PATH(out, "%s/txt-out", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 7 && d.m.n_edges == 4 && d.m.feat_dim == 0 && d.m.n_classes == 0);
    OC_CHECK(fx_has_edge(&d, 6, 2) && fx_has_edge(&d, 2, 6));
    OC_CHECK(d.n_split[0] == 0 && d.n_split[1] == 0 && d.n_split[2] == 0);
    fx_ds_free(&d);

    /* (2, E) u32 edges; (2, 2) is read as (2, E); labels u8 give N; only a train split. */
    FX_PATH(src, "%s/two", tmp);
    uint32_t e[4] = {0, 1, 2, 3}; /* 0->2, 1->3 */
    uint64_t es[2] = {2, 2};
    fx_write_npy(src, "edges.npy", OC_DTYPE_U32, 2, es, e, 0);
    uint8_t lab[6] = {0, 1, 0, 1, 0, 1};
    uint64_t ls[1] = {6};
    fx_write_npy(src, "labels.npy", OC_DTYPE_U8, 1, ls, lab, 0);
    int64_t tr[3] = {5, 0, 2};
    uint64_t ts[2] = {3, 1};
    fx_write_npy(src, "train_idx.npy", OC_DTYPE_I64, 2, ts, tr, 0);
    o.directed = 1;
    FX_PATH(out, "%s/two-out", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 6 && d.m.n_edges == 2);
    OC_CHECK(fx_has_edge(&d, 0, 2) && fx_has_edge(&d, 1, 3) && !fx_has_edge(&d, 0, 1));
    OC_CHECK(d.m.n_classes == 2 && d.labels[5] == 1);
    OC_CHECK(d.n_split[0] == 3 && d.split[0][0] == 5 && d.n_split[1] == 0);
    fx_ds_free(&d);

    /* (E, 2) in Fortran order (np.save of edge_index.T): sources, then destinations. */
    FX_PATH(src, "%s/fortran", tmp);
    int64_t fe[6] = {0, 1, 4, 2, 3, 0}; /* 0->2, 1->3, 4->0 */
    uint64_t fs[2] = {3, 2};
    fx_write_npy(src, "edges.npy", OC_DTYPE_I64, 2, fs, fe, 1);
    FX_PATH(out, "%s/fortran-out", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 5 && d.m.n_edges == 3);
    OC_CHECK(fx_has_edge(&d, 0, 2) && fx_has_edge(&d, 1, 3) && fx_has_edge(&d, 4, 0));
    fx_ds_free(&d);

    /* Larger than one read chunk: 100000 edges i -> (i + 1) % N in (E, 2) order. */
    FX_PATH(src, "%s/big", tmp);
    enum { NB = 100000 };
    int64_t *big = malloc(sizeof(int64_t) * 2 * NB);
    for (int64_t i = 0; i < NB; i++) {
        big[2 * i] = i;
        big[2 * i + 1] = (i + 1) % NB;
    }
    uint64_t bs[2] = {NB, 2};
    fx_write_npy(src, "edges.npy", OC_DTYPE_I64, 2, bs, big, 0);
    free(big);
    FX_PATH(out, "%s/big-out", tmp);
    fx_import_ok(OC_IMPORT_NPY, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == NB && d.m.n_edges == NB);
    OC_CHECK(fx_has_edge(&d, 99999, 0) && fx_has_edge(&d, 41234, 41235));
    fx_ds_free(&d);
}

static void expect_bad(void (*edit)(const char *dir), int status, const char *substr)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/src", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_full(src);
    edit(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(oc_import_npy(src, out, &o, NULL, &err), status, &err, substr);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  error: %s\n", err.msg);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(!fx_output_left(out));
}

static void edges_1d(const char *dir)
{
    int64_t e[4] = {0, 1, 2, 3};
    uint64_t s[1] = {4};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I64, 1, s, e, 0);
}

static void edges_3col(const char *dir)
{
    int64_t e[12] = {0, 1, 2, 3, 4, 0, 1, 1, 1, 2, 2, 2};
    uint64_t s[2] = {4, 3};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I64, 2, s, e, 0);
}

static void edges_negative(const char *dir)
{
    int32_t e[4] = {0, 1, 2, -3};
    uint64_t s[2] = {2, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I32, 2, s, e, 0);
}

static void edges_too_big(const char *dir)
{
    int32_t e[4] = {0, 1, 2, 5};
    uint64_t s[2] = {2, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I32, 2, s, e, 0);
}

static void edges_float(const char *dir)
{
    float e[4] = {0, 1, 2, 3};
    uint64_t s[2] = {2, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_F32, 2, s, e, 0);
}

static void feat_rows(const char *dir)
{
    float f[12] = {0};
    uint64_t s[2] = {4, 3};
    fx_write_npy(dir, "features.npy", OC_DTYPE_F32, 2, s, f, 0);
}

static void feat_fortran(const char *dir)
{
    float f[15] = {0};
    uint64_t s[2] = {5, 3};
    fx_write_npy(dir, "features.npy", OC_DTYPE_F32, 2, s, f, 1);
}

static void edges_u64_too_big(const char *dir)
{
    uint64_t e[6] = {0, 1, 2, 1, 2, (uint64_t)1 << 63};
    uint64_t s[2] = {2, 3};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_U64, 2, s, e, 0);
}

static void labels_bad(const char *dir)
{
    int32_t lab[5] = {1, 0, -2, 2, 1};
    uint64_t s[1] = {5};
    fx_write_npy(dir, "labels.npy", OC_DTYPE_I32, 1, s, lab, 0);
}

static void labels_2d(const char *dir)
{
    int32_t lab[10] = {0};
    uint64_t s[2] = {5, 2};
    fx_write_npy(dir, "labels.npy", OC_DTYPE_I32, 2, s, lab, 0);
}

static void split_bad(const char *dir)
{
    int64_t v[2] = {3, 5};
    uint64_t s[1] = {2};
    fx_write_npy(dir, "val_idx.npy", OC_DTYPE_I64, 1, s, v, 0);
}

static void no_edges(const char *dir)
{
    char p[4096];
    FX_PATH(p, "%s/edges.npy", dir);
    remove(p);
}

static void truncated(const char *dir)
{
    char p[4096];
    FX_PATH(p, "%s/features.npy", dir);
    if (truncate(p, 100) != 0)
        perror(p);
}

OC_TEST(npy_bad_inputs)
{
    expect_bad(edges_1d, OC_ERR_FORMAT,
               "edges.npy: edge array has shape (4,), expected (2, E) or (E, 2)");
    expect_bad(edges_3col, OC_ERR_FORMAT, "shape (4, 3)");
    expect_bad(edges_negative, OC_ERR_FORMAT, "edge 1 (1 -> -3) has a negative node id");
    expect_bad(edges_too_big, OC_ERR_FORMAT, "edge 1 (1 -> 5) has a node id out of range [0, 5)");
    expect_bad(edges_float, OC_ERR_FORMAT, "expected an integer array, found f32");
    expect_bad(feat_rows, OC_ERR_FORMAT, "feature array has 4 rows, expected 5");
    expect_bad(feat_fortran, OC_ERR_UNSUPPORTED, "features.npy: Fortran-order feature matrix");
    expect_bad(edges_u64_too_big, OC_ERR_FORMAT,
               "edges.npy: value at element 5 does not fit a signed 64-bit id");
    expect_bad(labels_bad, OC_ERR_FORMAT, "label -2 of node 2");
    expect_bad(labels_2d, OC_ERR_FORMAT, "labels must be a 1-D array");
    expect_bad(split_bad, OC_ERR_FORMAT, "val_idx.npy: node id 5 at index 1");
    expect_bad(no_edges, OC_ERR_NOTFOUND, "neither edges.npy nor edges.txt");
    expect_bad(truncated, OC_ERR_FORMAT, "features.npy");
}

OC_TEST_MAIN()
