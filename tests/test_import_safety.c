/*
 * test_import_safety.c — what `offcore import` and `offcore generate` refuse
 * before they write anything big, run as a user runs them (the binary, OC_BIN):
 * declared sizes the input does not hold (meta.txt num_nodes 99999999999999 on
 * a 6-node graph, num_features 4000000000, GraphBolt num 1e12, OGB
 * num-node-list 1e12, generate --nodes 1000 --feat-dim 100000000), outputs
 * over --max-size or over the free disk space, duplicate split ids (text, npy,
 * GraphBolt, OGB), a boolean train_idx.npy, and NaN/Inf features (text nan,
 * inf, 1e39; npy; OGB; f16 overflow) unless --allow-nonfinite. Every refusal
 * must exit 1 with a message naming the file and the problem, leave no output
 * (nor "<out>.tmp-*"), write next to nothing and delete nothing that was
 * there. Also: the checked commit refuses what oc_dataset_open refuses, and
 * generate --threads 5000 reports a sane peak.
 *
 * Place in the data flow: tests of src/dataset/size_gate.c, import_*.c,
 * builder.c (checked commit), generate.c and src/cli/cmd_{import,generate}.c.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "import_fixture.h"
#include "offcore/dataset.h"
#include "proc_util.h"

#define SMALL_BYTES ((uint64_t)1 << 20) /* what a refused run may leave: nothing big */

struct run {
    int code;
    char *out; /* stdout, oc_alloc'd */
    char *err; /* stderr, oc_alloc'd */
};

static void run_free(struct run *r)
{
    oc_free(r->out);
    oc_free(r->err);
}

/*
 * Runs OC_BIN with args (NULL-terminated; "SRC" and "OUT" stand for dir/src
 * and dir/out); its stdout and stderr go through files in dir.
 */
static struct run run_bin(const char *dir, const char *const *args)
{
    char outp[4096], errp[4096], srcd[4096], outd[4096];
    FX_PATH(outp, "%s/stdout.txt", dir);
    FX_PATH(errp, "%s/stderr.txt", dir);
    FX_PATH(srcd, "%s/src", dir);
    FX_PATH(outd, "%s/out", dir);
    char *argv[32];
    int n = 0;
    argv[n++] = getenv("OC_BIN");
    for (; args[n - 1] && n < 31; n++) {
        const char *a = args[n - 1];
        argv[n] = strcmp(a, "SRC") == 0 ? srcd : strcmp(a, "OUT") == 0 ? outd : (char *)a;
    }
    argv[n] = NULL;
    struct run r = {proc_wait(proc_spawn2(argv, outp, errp)), NULL, NULL};
    size_t len;
    struct oc_err err;
    if (oc_read_file(outp, 0, &r.out, &len, &err) != OC_OK)
        r.out = NULL;
    if (oc_read_file(errp, 0, &r.err, &len, &err) != OC_OK)
        r.err = NULL;
    remove(outp);
    remove(errp);
    return r;
}

/* Apparent bytes of every regular file under path (sparse files count in full). */
static uint64_t tree_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    uint64_t sum = 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        FX_PATH(p, "%s/%s", path, de->d_name);
        sum += tree_bytes(p);
    }
    closedir(d);
    return sum;
}

/*
 * One refused run in a fresh directory `dir` holding the source `src` (already
 * written) and a file keep.txt: exit 1, stderr has every substring of want
 * (NULL-terminated), OUT absent, no more than SMALL_BYTES added, keep.txt kept.
 */
static void expect_refused(const char *dir, const char *const *args, const char *const *want)
{
    char out[4096], keep[4096];
    FX_PATH(out, "%s/out", dir);
    fx_write(dir, "keep.txt", "pre-existing\n");
    FX_PATH(keep, "%s/keep.txt", dir);
    uint64_t before = tree_bytes(dir);
    struct run r = run_bin(dir, args);
    if (r.code != 1 || !r.err)
        fprintf(stderr, "  exit %d, stderr: %s\n", r.code, r.err ? r.err : "(none)");
    OC_CHECK(r.code == 1);
    for (int i = 0; want[i]; i++) {
        int found = r.err && strstr(r.err, want[i]) != NULL;
        if (!found)
            fprintf(stderr, "  stderr \"%s\" lacks \"%s\"\n", r.err ? r.err : "", want[i]);
        OC_CHECK(found);
    }
    OC_CHECK(!fx_output_left(out));
    uint64_t after = tree_bytes(dir);
    OC_CHECK(after <= before + SMALL_BYTES);
    OC_CHECK(oc_path_exists(keep));
    run_free(&r);
}

/* A run that must succeed and yield a dataset oc_dataset_open accepts. */
static void expect_ok(const char *dir, const char *const *args, const char *out)
{
    struct run r = run_bin(dir, args);
    if (r.code != 0)
        fprintf(stderr, "  exit %d, stderr: %s\n", r.code, r.err ? r.err : "(none)");
    OC_CHECK(r.code == 0);
    struct oc_dataset *ds = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_dataset_open(out, 0, &ds, &err), &err);
    oc_dataset_free(ds);
    run_free(&r);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define WANT(...) ((const char *const[]){__VA_ARGS__, NULL})

static const char *fresh(char *buf)
{
    snprintf(buf, 4096, "%s", oc_test_tmpdir());
    return buf;
}

/* The 6-node text graph of the issue; meta, features and train ids given. */
static void write_text(const char *dir, const char *meta, const char *features, const char *train)
{
    fx_write(dir, "src/meta.txt", meta);
    fx_write(dir, "src/edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n");
    fx_write(dir, "src/features.txt", features);
    fx_write(dir, "src/labels.txt", "0\n1\n0\n1\n0\n1\n");
    fx_write(dir, "src/train_idx.txt", train);
    fx_write(dir, "src/val_idx.txt", "4\n");
    fx_write(dir, "src/test_idx.txt", "5\n");
}

static const char *const meta_ok = "num_nodes 6\nnum_features 3\nnum_classes 2\n";
static const char *const feat_ok = "0 0 1.5\n2 1 -1\n5 2 0.25\n";

#define SKIP_WITHOUT_BIN()                                                             \
    do {                                                                               \
        if (!getenv("OC_BIN"))                                                         \
            OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest"); \
    } while (0)

OC_TEST(text_declared_sizes)
{
    SKIP_WITHOUT_BIN();
    char d[4096];
    /* The case: 19 GB of indptr.npy for a 6-node graph. */
    write_text(fresh(d), "num_nodes 99999999999999\nnum_features 3\nnum_classes 2\n", feat_ok,
               "0\n1\n");
    expect_refused(
        d, ARGS("import", "text", "SRC", "OUT", "--quiet"),
        WANT("labels.txt: 6 labels, expected one per node (99999999999999)", "meta.txt"));
    /* Labels beyond num_nodes are refused the same way, before any write. */
    write_text(fresh(d), "num_nodes 4\nnum_features 3\nnum_classes 2\n", feat_ok, "0\n1\n");
    expect_refused(d, ARGS("import", "text", "SRC", "OUT", "--quiet"),
                   WANT("labels.txt:5: more labels than the 4 nodes", "meta.txt"));
    /* num_features 4000000000: 96 GB of zero columns no file holds. */
    write_text(fresh(d), "num_nodes 6\nnum_features 4000000000\nnum_classes 2\n", feat_ok,
               "0\n1\n");
    expect_refused(d, ARGS("import", "text", "SRC", "OUT", "--quiet"),
                   WANT("meta.txt: num_features 4000000000", "features.txt uses only 3 columns",
                        "--max-size"));
    /* With a ceiling the zero columns are allowed up to it: here they exceed it. */
    expect_refused(d, ARGS("import", "text", "SRC", "OUT", "--quiet", "--max-size", "1G"),
                   WANT("out: the dataset would take", "over --max-size 1.00 GiB"));
    /* A few trailing zero columns (webkb declares 1703, uses 1702) still import. */
    write_text(fresh(d), "num_nodes 6\nnum_features 5\nnum_classes 2\n", feat_ok, "0\n1\n");
    char out[4096];
    FX_PATH(out, "%s/out", d);
    expect_ok(d, ARGS("import", "text", "SRC", "OUT", "--quiet"), out);
}

static void write_gb(const char *dir, const char *num, int with_feat, const int64_t *train,
                     uint64_t n_train);

OC_TEST(free_space_is_checked_before_writing)
{
    SKIP_WITHOUT_BIN();
    char d[4096], out[4096];
    /* 1.7 PB, no disk holds that: the ceiling is raised, the free space refuses. */
    fresh(d);
    FX_PATH(out, "%s/out", d);
    expect_refused(d,
                   ARGS("generate", "--nodes", "4294967000", "--feat-dim", "100000", "--max-size",
                        "100000000G", "--quiet", "OUT"),
                   WANT("/out: the dataset needs", "its filesystem has only"));
    /* The same through an importer: a GraphBolt num of 1e15 accepted by a huge ceiling. */
    const int64_t tr[2] = {0, 1};
    write_gb(fresh(d), "1000000000000000", 0, tr, 2);
    expect_refused(d,
                   ARGS("import", "graphbolt", "SRC", "OUT", "--quiet", "--max-size", "100000000G"),
                   WANT("/out: the dataset needs", "its filesystem has only"));
}

OC_TEST(generate_ceiling_and_threads)
{
    SKIP_WITHOUT_BIN();
    char d[4096], out[4096];
    /* The case: filled the disk with 5.3 GB RSS. */
    fresh(d);
    FX_PATH(out, "%s/out", d);
    expect_refused(d,
                   ARGS("generate", "--nodes", "1000", "--feat-dim", "100000000", "--quiet", "OUT"),
                   WANT("out: the dataset would take", "1000 nodes, 100000000-dim features",
                        "over --max-size 64.00 GiB"));
    /* An explicit ceiling below the dataset. */
    expect_refused(d, ARGS("generate", "--nodes", "100000", "--max-size", "10M", "--quiet", "OUT"),
                   WANT("over --max-size 10.00 MiB"));
    /* --threads 5000: capped, and the peak held stays what the work needs. */
    struct run r =
        run_bin(d, ARGS("generate", "--nodes", "20000", "--threads", "5000", "--quiet", "OUT"));
    OC_CHECK(r.code == 0);
    OC_CHECK(r.err && strstr(r.err, "--threads 5000 capped at") != NULL);
    const char *p = r.out ? strstr(r.out, "peak memory held ") : NULL;
    OC_CHECK(p != NULL);
    if (p) {
        double v = atof(p + strlen("peak memory held "));
        const char *unit = strpbrk(p + strlen("peak memory held "), "KMGT");
        OC_CHECK(unit && (*unit == 'K' || (*unit == 'M' && v < 512)));
        if (!unit || !(*unit == 'K' || (*unit == 'M' && v < 512)))
            fprintf(stderr, "  %s", r.out);
    }
    run_free(&r);
}

/* A GraphBolt directory: 6 nodes, csv edges; num and the optional parts given. */
static void write_gb(const char *dir, const char *num, int with_feat, const int64_t *train,
                     uint64_t n_train)
{
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "graph:\n"
             "  nodes:\n"
             "    - num: %s\n"
             "  edges:\n"
             "    - format: csv\n"
             "      path: edges.csv\n"
             "%s"
             "tasks:\n"
             "  - name: nc\n"
             "    num_classes: 2\n"
             "    train_set:\n"
             "      - data:\n"
             "          - {name: seeds, format: numpy, path: train.npy}\n",
             num,
             with_feat ? "feature_data:\n"
                         "  - {domain: node, name: feat, format: numpy, path: feat.npy}\n"
                         "  - {domain: node, name: label, format: numpy, path: label.npy}\n"
                       : "");
    fx_write(dir, "src/metadata.yaml", yaml);
    fx_write(dir, "src/edges.csv", "0,1\n1,2\n2,3\n3,4\n4,5\n");
    if (with_feat) {
        float feat[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        uint64_t fs[2] = {6, 2}, ls[1] = {6};
        fx_write_npy(dir, "src/feat.npy", OC_DTYPE_F32, 2, fs, feat, 0);
        int64_t lab[6] = {0, 1, 0, 1, 0, 1};
        fx_write_npy(dir, "src/label.npy", OC_DTYPE_I64, 1, ls, lab, 0);
    }
    uint64_t ts[1] = {n_train};
    fx_write_npy(dir, "src/train.npy", OC_DTYPE_I64, 1, ts, train, 0);
}

/* An OGB raw directory: 6 nodes; the node count, labels and train split given. */
static void write_ogb(const char *dir, const char *num_nodes, int with_labels, const char *feat,
                      const char *train)
{
    fx_gz_write(dir, "src/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,5\n");
    if (num_nodes)
        fx_gz_write(dir, "src/raw/num-node-list.csv.gz", num_nodes);
    if (with_labels)
        fx_gz_write(dir, "src/raw/node-label.csv.gz", "0\n1\n0\n1\n0\n1\n");
    if (feat)
        fx_gz_write(dir, "src/raw/node-feat.csv.gz", feat);
    fx_gz_write(dir, "src/split/s/train.csv.gz", train);
    fx_gz_write(dir, "src/split/s/valid.csv.gz", "4\n");
    fx_gz_write(dir, "src/split/s/test.csv.gz", "5\n");
}

OC_TEST(graphbolt_and_ogb_declared_sizes)
{
    SKIP_WITHOUT_BIN();
    char d[4096];
    const int64_t tr[2] = {0, 1};
    /* GraphBolt num: 1000000000000 with feature and label arrays of 6 rows. */
    write_gb(fresh(d), "1000000000000", 1, tr, 2);
    expect_refused(
        d, ARGS("import", "graphbolt", "SRC", "OUT", "--quiet"),
        WANT("feat.npy: feature array has 6 rows, expected 1000000000000", "metadata.yaml"));
    /* ... and without them: only the edges could vouch, and they name 6 nodes. */
    write_gb(fresh(d), "1000000000000", 0, tr, 2);
    expect_refused(d, ARGS("import", "graphbolt", "SRC", "OUT", "--quiet"),
                   WANT("metadata.yaml: graph.nodes[0].num is 1000000000000",
                        "edges.csv name only 6 nodes", "--max-size"));
    /* OGB num-node-list of 1e12 with 6 labels. */
    write_ogb(fresh(d), "1000000000000\n", 1, NULL, "0\n1\n");
    expect_refused(d, ARGS("import", "ogb", "SRC", "OUT", "--quiet"),
                   WANT("node-label.csv.gz: 6 labels, expected one per node (1000000000000)",
                        "num-node-list.csv.gz"));
    /* ... with features only, and with neither. */
    write_ogb(fresh(d), "1000000000000\n", 0, "1,2\n3,4\n5,6\n7,8\n9,10\n11,12\n", "0\n1\n");
    expect_refused(d, ARGS("import", "ogb", "SRC", "OUT", "--quiet"),
                   WANT("node-feat.csv.gz: 6 feature rows, expected one per node"));
    write_ogb(fresh(d), "1000000000000\n", 0, NULL, "0\n1\n");
    expect_refused(
        d, ARGS("import", "ogb", "SRC", "OUT", "--quiet"),
        WANT("num-node-list.csv.gz: 1000000000000 nodes", "name only 6 nodes", "--max-size"));
}

/* An npy directory: 6 nodes, edges.txt, labels, the given train_idx.npy. */
static void write_npy(const char *dir, enum oc_dtype feat_t, const void *feat,
                      enum oc_dtype train_t, const void *train, uint64_t n_train)
{
    fx_write(dir, "src/edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n");
    int64_t lab[6] = {0, 1, 0, 1, 0, 1};
    uint64_t ls[1] = {6}, fs[2] = {6, 2}, ts[1] = {n_train};
    fx_write_npy(dir, "src/labels.npy", OC_DTYPE_I64, 1, ls, lab, 0);
    if (feat)
        fx_write_npy(dir, "src/features.npy", feat_t, 2, fs, feat, 0);
    fx_write_npy(dir, "src/train_idx.npy", train_t, 1, ts, train, 0);
}

OC_TEST(duplicate_and_non_integer_split_ids)
{
    SKIP_WITHOUT_BIN();
    char d[4096];
    write_text(fresh(d), meta_ok, feat_ok, "0\n1\n1\n");
    expect_refused(d, ARGS("import", "text", "SRC", "OUT", "--quiet"),
                   WANT("train_idx.txt:3: duplicate node id 1"));
    const int64_t dup[3] = {0, 3, 0};
    write_npy(fresh(d), OC_DTYPE_F32, NULL, OC_DTYPE_I64, dup, 3);
    expect_refused(d, ARGS("import", "npy", "SRC", "OUT", "--quiet"),
                   WANT("train_idx.npy: duplicate node id 0 at index 2"));
    write_gb(fresh(d), "6", 1, dup, 3);
    expect_refused(d, ARGS("import", "graphbolt", "SRC", "OUT", "--quiet"),
                   WANT("train.npy: duplicate node id 0 at index 2"));
    write_ogb(fresh(d), NULL, 1, NULL, "2\n2\n");
    expect_refused(d, ARGS("import", "ogb", "SRC", "OUT", "--quiet"),
                   WANT("train.csv.gz:2: duplicate node id 2"));
    /* A boolean mask is not a list of ids (it used to import as ids 0 and 1). */
    const uint8_t mask[6] = {1, 1, 0, 0, 0, 0};
    fresh(d);
    fx_write(d, "src/edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n");
    int64_t lab[6] = {0, 1, 0, 1, 0, 1};
    uint64_t ls[1] = {6};
    fx_write_npy(d, "src/labels.npy", OC_DTYPE_I64, 1, ls, lab, 0);
    /* fx_write_npy writes descr "|u1" for U8: patch it to numpy's bool "|b1". */
    fx_write_npy(d, "src/train_idx.npy", OC_DTYPE_U8, 1, ls, mask, 0);
    char p[4096];
    FX_PATH(p, "%s/src/train_idx.npy", d);
    FILE *f = fopen(p, "r+b");
    OC_CHECK(f != NULL);
    if (f) {
        char hdr[128];
        size_t n = fread(hdr, 1, sizeof(hdr), f);
        char *u1 = n ? memmem(hdr, n, "|u1", 3) : NULL;
        OC_CHECK(u1 != NULL);
        if (u1) {
            fseek(f, (long)(u1 - hdr), SEEK_SET);
            fwrite("|b1", 1, 3, f);
        }
        fclose(f);
    }
    expect_refused(d, ARGS("import", "npy", "SRC", "OUT", "--quiet"),
                   WANT("train_idx.npy: a boolean array", "np.nonzero"));
    /* Float ids too. */
    const float fid[2] = {0, 1};
    write_npy(fresh(d), OC_DTYPE_F32, NULL, OC_DTYPE_F32, fid, 2);
    expect_refused(d, ARGS("import", "npy", "SRC", "OUT", "--quiet"),
                   WANT("train_idx.npy: dtype f32: node ids must be integers"));
}

OC_TEST(nonfinite_features)
{
    SKIP_WITHOUT_BIN();
    char d[4096], out[4096];
    static const char *const text_cases[3][2] = {
        {"0 0 1\n3 2 nan\n", "value nan"},
        {"0 0 1\n3 2 inf\n", "value inf"},
        {"0 0 1\n3 2 1e39\n", "value inf"},
    };
    for (int k = 0; k < 3; k++) {
        write_text(fresh(d), meta_ok, text_cases[k][0], "0\n1\n");
        expect_refused(
            d, ARGS("import", "text", "SRC", "OUT", "--quiet"),
            WANT("features.txt: feature row 3, column 2", text_cases[k][1], "--allow-nonfinite"));
    }
    /* f16 overflow when converting. */
    write_text(fresh(d), meta_ok, "0 0 1\n1 1 70000\n", "0\n1\n");
    expect_refused(d, ARGS("import", "text", "SRC", "OUT", "--quiet", "--dtype", "f16"),
                   WANT("features.txt: feature row 1, column 1", "does not fit f16"));
    /* --allow-nonfinite imports it, and the dataset opens. */
    FX_PATH(out, "%s/out", d);
    expect_ok(
        d, ARGS("import", "text", "SRC", "OUT", "--quiet", "--dtype", "f16", "--allow-nonfinite"),
        out);
    /* npy: a NaN (f32) and an Inf (f64). */
    const int64_t tr[2] = {0, 1};
    float f32[12] = {0};
    f32[9] = 0.0f / 0.0f;
    write_npy(fresh(d), OC_DTYPE_F32, f32, OC_DTYPE_I64, tr, 2);
    expect_refused(d, ARGS("import", "npy", "SRC", "OUT", "--quiet"),
                   WANT("features.npy: feature row 4, column 1", "nan"));
    double f64[12] = {0};
    f64[2] = -1.0 / 0.0;
    write_npy(fresh(d), OC_DTYPE_F64, f64, OC_DTYPE_I64, tr, 2);
    expect_refused(d, ARGS("import", "npy", "SRC", "OUT", "--quiet"),
                   WANT("features.npy: feature row 1, column 0", "-inf"));
    /* OGB csv. */
    write_ogb(fresh(d), NULL, 1, "1,2\n3,4\n5,nan\n7,8\n9,10\n11,12\n", "0\n1\n");
    expect_refused(d, ARGS("import", "ogb", "SRC", "OUT", "--quiet"),
                   WANT("node-feat.csv.gz: feature row 2, column 1", "nan"));
}

OC_TEST(checked_commit_refuses_what_open_refuses)
{
    char d[4096], out[4096];
    fresh(d);
    struct oc_err err;
    for (int checked = 0; checked < 2; checked++) {
        FX_PATH(out, "%s/ds%d", d, checked);
        struct oc_ds_builder *b = NULL;
        OC_CHECK_OK(oc_ds_builder_new(out, &b, &err), &err);
        if (!b)
            return;
        struct oc_manifest *m = oc_ds_builder_manifest(b);
        m->n_nodes = 2;
        m->n_edges = 1;
        uint64_t ip[3] = {0, 1, 1}, none = 0;
        uint32_t ix[1] = {5}; /* out of range: open refuses it */
        OC_CHECK_OK(oc_ds_builder_write_array(b, OC_DS_INDPTR, OC_DTYPE_U64, 3, ip, &err), &err);
        OC_CHECK_OK(oc_ds_builder_write_array(b, OC_DS_INDICES, OC_DTYPE_U32, 1, ix, &err), &err);
        for (int f = OC_DS_TRAIN_IDX; f <= OC_DS_TEST_IDX; f++)
            OC_CHECK_OK(
                oc_ds_builder_write_array(b, (enum oc_ds_file)f, OC_DTYPE_U64, 0, &none, &err),
                &err);
        if (checked) {
            OC_CHECK_ERR(oc_ds_builder_commit_checked(b, &err), OC_ERR_FORMAT, &err,
                         "neighbor id 5");
            OC_CHECK(strstr(err.msg, "the dataset would not open") != NULL);
            oc_ds_builder_free(b);
            OC_CHECK(!fx_output_left(out));
        } else {
            /* The plain commit (tests of open build corrupt datasets with it) still commits. */
            OC_CHECK_OK(oc_ds_builder_commit(b, &err), &err);
            oc_ds_builder_free(b);
            struct oc_dataset *ds = NULL;
            OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "neighbor id 5");
        }
    }
}

OC_TEST_MAIN()
