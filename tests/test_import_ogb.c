/*
 * test_import_ogb.c — the OGB raw-directory importer on fixtures this test
 * writes with zlib: values, symmetrization, how N is found, split folder
 * choice, and clear file:line errors for ids out of range, wrong column
 * counts, missing split files, corrupt gzip.
 *
 * Place in the data flow: tests of src/dataset/import_ogb.c.
 */
#include "harness.h"
#include "import_fixture.h"
#include "offcore/import.h"

/* 6 nodes (5 isolated), 4 stored edges, 2 features, labels with one nan. */
static void write_ogb(const char *dir)
{
    fx_gz_write(dir, "raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n");
    fx_gz_write(dir, "raw/node-feat.csv.gz", "0.5,1\n-1.25,2\n3,0\n0,0\n1e-3,7.5\n-0,4\n");
    fx_gz_write(dir, "raw/node-label.csv.gz", "0\n1\nnan\n2\n1\n0\n");
    fx_gz_write(dir, "raw/num-node-list.csv.gz", "6\n");
    fx_gz_write(dir, "raw/num-edge-list.csv.gz", "4\n");
    fx_gz_write(dir, "split/time/train.csv.gz", "0\n1\n");
    fx_gz_write(dir, "split/time/valid.csv.gz", "3\n");
    fx_gz_write(dir, "split/time/test.csv.gz", "4\n5\n");
}

OC_TEST(ogb_values)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/ogbn_tiny", tmp);
    write_ogb(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct fx_ds d;
    FX_PATH(out, "%s/out", tmp);
    fx_import_ok(OC_IMPORT_OGB, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_nodes == 6 && d.m.n_edges == 8 && !d.m.directed);
    OC_CHECK(fx_has_edge(&d, 0, 1) && fx_has_edge(&d, 1, 0) && fx_has_edge(&d, 0, 2) &&
             fx_has_edge(&d, 2, 0) && fx_has_edge(&d, 4, 3));
    OC_CHECK(d.indptr[6] - d.indptr[5] == 0);
    OC_CHECK(d.m.feat_dim == 2);
    float want[12] = {0.5f, 1, -1.25f, 2, 3, 0, 0, 0, 1e-3f, 7.5f, -0.0f, 4};
    OC_CHECK(memcmp(d.feat, want, sizeof(want)) == 0);
    OC_CHECK(d.m.n_classes == 3);
    OC_CHECK(d.labels[0] == 0 && d.labels[2] == -1 && d.labels[3] == 2);
    OC_CHECK(d.n_split[0] == 2 && d.split[0][1] == 1);
    OC_CHECK(d.n_split[1] == 1 && d.split[1][0] == 3);
    OC_CHECK(d.n_split[2] == 2 && d.split[2][1] == 5);
    OC_CHECK(strcmp(d.m.name, "ogbn_tiny") == 0);
    OC_CHECK(strstr(d.m.provenance, "offcore import ogb") != NULL);
    fx_ds_free(&d);

    /* Directed keeps the stored direction only; f16 + named split folder. */
    o.directed = 1;
    o.feat_dtype = OC_DTYPE_F16;
    o.split_name = "time";
    FX_PATH(out, "%s/dir", tmp);
    fx_import_ok(OC_IMPORT_OGB, src, out, &o, &d);
    if (!d.indptr)
        return;
    OC_CHECK(d.m.n_edges == 4 && d.m.directed);
    OC_CHECK(fx_has_edge(&d, 0, 1) && !fx_has_edge(&d, 1, 0));
    OC_CHECK(d.feat[8] == oc_f16_to_f32(oc_f32_to_f16(1e-3f)) && d.feat[9] == 7.5f);
    OC_CHECK(strstr(d.m.provenance, "--ogb-split time") != NULL);
    fx_ds_free(&d);
}

OC_TEST(ogb_node_count_sources)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096], p[4096];
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct fx_ds d;

    /* Without num-node-list: N from the label lines. */
    FX_PATH(src, "%s/a", tmp);
    write_ogb(src);
    FX_PATH(p, "%s/raw/num-node-list.csv.gz", src);
    remove(p);
    FX_PATH(out, "%s/a-out", tmp);
    fx_import_ok(OC_IMPORT_OGB, src, out, &o, &d);
    OC_CHECK(d.m.n_nodes == 6);
    fx_ds_free(&d);

    /* Only edges (plain .csv) and two split folders: N = max id + 1, first folder sorted. */
    FX_PATH(src, "%s/b", tmp);
    fx_write(src, "raw/edge.csv", "0,1\n3,4\n4,4\n");
    fx_gz_write(src, "split/b_second/train.csv.gz", "0\n");
    fx_gz_write(src, "split/b_second/valid.csv.gz", "");
    fx_gz_write(src, "split/b_second/test.csv.gz", "");
    fx_gz_write(src, "split/a_first/train.csv.gz", "1\n2\n");
    fx_gz_write(src, "split/a_first/valid.csv.gz", "3\n");
    fx_gz_write(src, "split/a_first/test.csv.gz", "4\n");
    FX_PATH(out, "%s/b-out", tmp);
    fx_import_ok(OC_IMPORT_OGB, src, out, &o, &d);
    OC_CHECK(d.m.n_nodes == 5 && d.m.n_edges == 5); /* 2 pairs both ways + one self-loop */
    OC_CHECK(fx_count_edge(&d, 4, 4) == 1);
    OC_CHECK(d.m.feat_dim == 0 && d.m.n_classes == 0 && d.labels == NULL);
    OC_CHECK(d.n_split[0] == 2 && d.n_split[1] == 1 && d.n_split[2] == 1);
    fx_ds_free(&d);

    /* No split/ folder at all: empty splits. */
    FX_PATH(src, "%s/c", tmp);
    fx_write(src, "raw/edge.csv", "0,1\n");
    FX_PATH(out, "%s/c-out", tmp);
    fx_import_ok(OC_IMPORT_OGB, src, out, &o, &d);
    OC_CHECK(d.m.n_nodes == 2 && d.n_split[0] == 0);
    fx_ds_free(&d);
}

/* Writes the fixture, replaces one file (text NULL: deletes it), expects an error. */
static void expect_bad(const char *rel, const char *text, const struct oc_import_opts *opt,
                       int status, const char *substr)
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096], p[4096];
    FX_PATH(src, "%s/src", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_ogb(src);
    if (text) {
        fx_gz_write(src, rel, text);
    } else {
        FX_PATH(p, "%s/%s", src, rel);
        remove(p);
    }
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(oc_import_ogb(src, out, opt ? opt : &o, NULL, &err), status, &err, substr);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  error: %s\n", err.msg);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(!fx_output_left(out));
}

OC_TEST(ogb_bad_inputs)
{
    expect_bad("raw/edge.csv.gz", "0,1\n1,9\n", NULL, OC_ERR_FORMAT,
               "edge.csv.gz:2: node id 9 out of range (the graph has 6 nodes)");
    expect_bad("raw/edge.csv.gz", "0,1\n1,2,3\n", NULL, OC_ERR_FORMAT,
               "edge.csv.gz:2: expected two node ids \"u,v\"");
    expect_bad("raw/edge.csv.gz", "0 1\n", NULL, OC_ERR_FORMAT, "edge.csv.gz:1: expected");
    expect_bad("raw/edge.csv.gz", "0,1\n1,2\n", NULL, OC_ERR_FORMAT,
               "2 edges, but num-edge-list says 4");
    expect_bad("raw/node-feat.csv.gz", "1,2\n3,4\n5,6,7\n1,1\n1,1\n1,1\n", NULL, OC_ERR_FORMAT,
               "node-feat.csv.gz:3: expected 2 comma-separated values");
    expect_bad("raw/node-feat.csv.gz", "1,2\n3\n", NULL, OC_ERR_FORMAT,
               "node-feat.csv.gz:2: expected 2");
    expect_bad("raw/node-feat.csv.gz", "1,2\n3,abc\n", NULL, OC_ERR_FORMAT,
               "node-feat.csv.gz:2: column 2 is not a number");
    expect_bad("raw/node-feat.csv.gz", "1,2\n3,4\n", NULL, OC_ERR_FORMAT,
               "2 feature rows, expected one per node (6)");
    expect_bad("raw/node-label.csv.gz", "0\nabc\n1\n1\n1\n1\n", NULL, OC_ERR_FORMAT,
               "node-label.csv.gz:2: expected one integer label");
    expect_bad("raw/node-label.csv.gz", "0\n1\n", NULL, OC_ERR_FORMAT,
               "2 labels, expected one per node (6)");
    expect_bad("raw/num-node-list.csv.gz", "6\n7\n", NULL, OC_ERR_UNSUPPORTED, "several graphs");
    expect_bad("split/time/valid.csv.gz", NULL, NULL, OC_ERR_NOTFOUND,
               "split/time/valid.csv.gz: missing split file");
    expect_bad("split/time/test.csv.gz", "4\n6\n", NULL, OC_ERR_FORMAT,
               "test.csv.gz:2: node id 6 out of range");
    expect_bad("split/time/train.csv.gz", "0\nx\n", NULL, OC_ERR_FORMAT,
               "train.csv.gz:2: expected one integer node id");
    expect_bad("raw/edge.csv.gz", NULL, NULL, OC_ERR_NOTFOUND, "edge.csv.gz: missing");
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    o.split_name = "random";
    expect_bad("raw/num-edge-list.csv.gz", "4\n", &o, OC_ERR_NOTFOUND,
               "random: no such split folder (available: time)");

    /* Corrupt gzip: the line reader's error names the file. */
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096], p[4096];
    FX_PATH(src, "%s/src", tmp);
    FX_PATH(out, "%s/out", tmp);
    write_ogb(src);
    FX_PATH(p, "%s/raw/node-label.csv.gz", src);
    FILE *f = fopen(p, "wb");
    fwrite("\x1f\x8b\x08\x00garbage-garbage-garbage", 1, 27, f);
    fclose(f);
    struct oc_err err;
    oc_import_opts_default(&o);
    int rc = oc_import_ogb(src, out, &o, NULL, &err);
    OC_CHECK(rc != OC_OK);
    OC_CHECK(strstr(err.msg, "node-label.csv.gz") != NULL);
    OC_CHECK(!fx_output_left(out));
}

OC_TEST_MAIN()
