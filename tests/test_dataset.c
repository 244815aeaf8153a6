/*
 * test_dataset.c — the dataset directory end to end: a tiny hand-checked
 * graph built with the builder, opened, loaded and summarized; then one
 * corruption at a time (through the builder, or by patching files and
 * re-sealing the manifest so the content check is what fires), each
 * rejected with a message naming the file and the problem; builder
 * atomicity under write/alloc faults; a larger graph that crosses chunk
 * boundaries of the streaming checks.
 *
 * Place in the data flow: tests of dataset/{builder,dataset_open,info}.c.
 * Thread-safety: single-threaded. Ownership: files live in oc_test_tmpdir().
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ds_util.h"
#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

/*
 * The tiny graph (CSC, in-neighbors):      degrees  2 1 2 2 0 0
 *   node 0 <- 1, 2                         sorted   0 0 1 2 2 2
 *   node 1 <- 0                            median = d[2] = 1, p99 = d[5] = 2
 *   node 2 <- 0, 2   (self-loop)
 *   node 3 <- 1, 4   (node 4 only has an out-edge: not isolated)
 *   node 4, node 5   (node 5 is isolated)
 */
struct tiny {
    uint64_t indptr[7];
    uint32_t indices[7];
    float feat[6 * 3];
    int32_t labels[6];
    uint64_t train[2], val[1], test[2];
    /* knobs for writing malformed arrays */
    enum oc_dtype indptr_dtype;
    uint64_t feat_shape[2];
    uint64_t n_labels;
    int skip_labels;
};

static void tiny_init(struct tiny *t)
{
    static const uint64_t ip[7] = {0, 2, 3, 5, 7, 7, 7};
    static const uint32_t ix[7] = {1, 2, 0, 0, 2, 1, 4};
    static const int32_t lb[6] = {0, 1, 2, -1, 0, 1};
    memset(t, 0, sizeof(*t));
    memcpy(t->indptr, ip, sizeof(ip));
    memcpy(t->indices, ix, sizeof(ix));
    memcpy(t->labels, lb, sizeof(lb));
    for (int i = 0; i < 18; i++)
        t->feat[i] = (float)i * 0.5f;
    t->train[0] = 0;
    t->train[1] = 1;
    t->val[0] = 2;
    t->test[0] = 3;
    t->test[1] = 5;
    t->indptr_dtype = OC_DTYPE_U64;
    t->feat_shape[0] = 6;
    t->feat_shape[1] = 3;
    t->n_labels = 6;
}

static int tiny_build(const char *out, const struct tiny *t, struct oc_err *err)
{
    struct oc_ds_builder *b = NULL;
    struct oc_npy_writer *w = NULL;
    int rc = oc_ds_builder_new(out, &b, err);
    if (rc)
        return rc;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    m->n_nodes = 6;
    m->n_edges = 7;
    m->feat_dim = 3;
    m->n_classes = 3;
    m->directed = 1;
    m->feat_dtype = OC_DTYPE_F32;
    m->index_dtype = OC_DTYPE_U32;
    snprintf(m->provenance, sizeof(m->provenance), "test_dataset tiny");
    uint32_t ip32[7];
    for (int i = 0; i < 7; i++)
        ip32[i] = (uint32_t)t->indptr[i];
    if ((rc = oc_ds_builder_write_array(
             b, OC_DS_INDPTR, t->indptr_dtype, 7,
             t->indptr_dtype == OC_DTYPE_U64 ? (void *)t->indptr : (void *)ip32, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_INDICES, OC_DTYPE_U32, 7, t->indices, err)))
        goto out;
    if ((rc =
             oc_ds_builder_begin_array(b, OC_DS_FEATURES, OC_DTYPE_F32, 2, t->feat_shape, &w, err)))
        goto out;
    static float row[16];
    for (uint64_t r = 0; r < t->feat_shape[0]; r++) {
        for (uint64_t c = 0; c < t->feat_shape[1]; c++)
            row[c] = r < 6 && c < 3 ? t->feat[r * 3 + c] : 9.0f;
        if ((rc = oc_npy_writer_append(w, row, t->feat_shape[1] * sizeof(float), err))) {
            oc_npy_writer_abort(w);
            goto out;
        }
    }
    if ((rc = oc_ds_builder_end_array(b, OC_DS_FEATURES, w, err)))
        goto out;
    if (!t->skip_labels && (rc = oc_ds_builder_write_array(b, OC_DS_LABELS, OC_DTYPE_I32,
                                                           t->n_labels, t->labels, err)))
        goto out;
    if ((rc = oc_ds_builder_write_array(b, OC_DS_TRAIN_IDX, OC_DTYPE_U64, 2, t->train, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_VAL_IDX, OC_DTYPE_U64, 1, t->val, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_TEST_IDX, OC_DTYPE_U64, 2, t->test, err)))
        goto out;
    rc = oc_ds_builder_commit(b, err);
out:
    oc_ds_builder_free(b);
    return rc;
}

static void patch_byte(const char *path, long off, int xor_mask)
{
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ xor_mask, f);
    fclose(f);
}

static void patch_u64(const char *path, uint64_t index, uint64_t v)
{
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    fseek(f, (long)(4096 + 8 * index), SEEK_SET);
    fwrite(&v, 8, 1, f);
    fclose(f);
}

/* Whether any "<out>.tmp*" entry (a builder's temporary) sits beside out. */
static int tmp_sibling_exists(const char *out)
{
    char dir[800];
    const char *slash = strrchr(out, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - out) : 1, slash ? out : ".");
    const char *base = slash ? slash + 1 : out;
    size_t bl = strlen(base);
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        n += strncmp(de->d_name, base, bl) == 0 && strncmp(de->d_name + bl, ".tmp", 4) == 0;
    if (d)
        closedir(d);
    return n > 0;
}

static char *fresh(const char *name)
{
    static char buf[800];
    snprintf(buf, sizeof(buf), "%s/%s", oc_test_tmpdir(), name);
    return buf;
}

OC_TEST(tiny_build_open_info)
{
    struct tiny t;
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    uint64_t live0 = oc_mem_n_live();
    const char *out = fresh("tiny");
    tiny_init(&t);
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    OC_CHECK(oc_path_exists(out) && !tmp_sibling_exists(out));
    OC_CHECK_OK(oc_dataset_open(out, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    if (!ds)
        return;
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    OC_CHECK(m->n_nodes == 6 && m->n_edges == 7 && m->n_train == 2 && m->n_val == 1 &&
             m->n_test == 2);
    OC_CHECK(strcmp(m->name, "tiny") == 0 && strcmp(m->provenance, "test_dataset tiny") == 0);
    OC_CHECK(strcmp(oc_dataset_dir(ds), out) == 0);
    OC_CHECK(strcmp(oc_dataset_path(ds, OC_DS_FEATURES), path_in(out, "features.npy")) == 0);
    OC_CHECK(oc_dataset_data_offset(ds, OC_DS_FEATURES) == 4096);
    OC_CHECK(m->files[OC_DS_INDPTR].bytes == 4096 + 56);

    struct oc_ds_info info;
    OC_CHECK_OK(oc_dataset_info(ds, &info, &err), &err);
    OC_CHECK(info.n_nodes == 6 && info.n_edges == 7);
    OC_CHECK(info.deg_min == 0 && info.deg_max == 2 && info.deg_median == 1 && info.deg_p99 == 2);
    OC_CHECK(info.deg_mean > 7.0 / 6 - 1e-12 && info.deg_mean < 7.0 / 6 + 1e-12);
    OC_CHECK(info.n_isolated == 1 && info.n_self_loops == 1);
    OC_CHECK(info.n_unlabeled == 1 && info.n_classes == 3);
    OC_CHECK(info.class_count[0] == 2 && info.class_count[1] == 2 && info.class_count[2] == 1);
    OC_CHECK(info.bytes_topology == (4096 + 56) + (4096 + 28));
    OC_CHECK(info.bytes_features == 4096 + 72);
    OC_CHECK(info.bytes_total == 8276 + 4168 + 4120 + 4112 + 4104 + 4112);
    oc_ds_info_deinit(&info);

    uint64_t *ip = NULL, *ids = NULL, n = 0;
    void *ix = NULL;
    int32_t *lb = NULL;
    OC_CHECK_OK(oc_dataset_load_indptr(ds, &ip, &err), &err);
    OC_CHECK(ip && memcmp(ip, t.indptr, sizeof(t.indptr)) == 0);
    OC_CHECK_OK(oc_dataset_load_indices(ds, OC_DTYPE_U64, &ix, &err), &err);
    OC_CHECK(ix && ((uint64_t *)ix)[6] == 4 && ((uint64_t *)ix)[0] == 1);
    oc_free(ix);
    OC_CHECK_OK(oc_dataset_load_indices(ds, OC_DTYPE_U32, &ix, &err), &err);
    OC_CHECK(ix && memcmp(ix, t.indices, sizeof(t.indices)) == 0);
    void *ix2 = NULL;
    OC_CHECK_ERR(oc_dataset_load_indices(ds, OC_DTYPE_I32, &ix2, &err), OC_ERR_ARG, &err,
                 "u32 or u64");
    OC_CHECK(ix2 == NULL);
    OC_CHECK_OK(oc_dataset_load_labels(ds, &lb, &err), &err);
    OC_CHECK(lb && memcmp(lb, t.labels, sizeof(t.labels)) == 0);
    OC_CHECK_OK(oc_dataset_load_split(ds, OC_DS_TEST_IDX, &ids, &n, &err), &err);
    OC_CHECK(n == 2 && ids[1] == 5);
    uint64_t *ids2 = NULL;
    OC_CHECK_ERR(oc_dataset_load_split(ds, OC_DS_LABELS, &ids2, &n, &err), OC_ERR_ARG, &err,
                 "not a split");
    oc_free(ip);
    oc_free(ix);
    oc_free(lb);
    oc_free(ids);
    float *feat = NULL;
    uint64_t rows, cols;
    OC_CHECK_OK(oc_npy_load_as(oc_dataset_path(ds, OC_DS_FEATURES), OC_DTYPE_F32, (void **)&feat,
                               &rows, &cols, &err),
                &err);
    OC_CHECK(rows == 6 && cols == 3 && feat && feat[17] == 8.5f);
    oc_free(feat);
    oc_dataset_free(ds);

    /* an existing output is refused */
    struct oc_ds_builder *b = NULL;
    OC_CHECK_ERR(oc_ds_builder_new(out, &b, &err), OC_ERR_EXISTS, &err, out);
    OC_CHECK(b == NULL);
    OC_CHECK(oc_mem_n_live() == live0);
}

/* Builds a dataset from a modified tiny graph and checks open's error. */
static void expect_open_fails(const char *name, const struct tiny *t, const char *file,
                              const char *substr)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    const char *out = fresh(name);
    OC_CHECK_OK(tiny_build(out, t, &err), &err);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, substr);
    OC_CHECK(ds == NULL);
    OC_CHECK(strstr(err.msg, path_in(out, file)) != NULL);
    if (!strstr(err.msg, path_in(out, file)))
        fprintf(stderr, "  (message: %s)\n", err.msg);
    /* deferred, the topology's content is the load's to refuse, with the same message */
    int topo = !strcmp(file, "indptr.npy") || !strcmp(file, "indices.npy");
    int content = topo && !strstr(substr, "dtype") && !strstr(substr, "shape");
    int rc = oc_dataset_open(out, OC_DS_OPEN_DEFER_TOPOLOGY, &ds, &err);
    OC_CHECK(content ? rc == OC_OK : rc == OC_ERR_FORMAT && strstr(err.msg, substr));
    if (rc == OC_OK) {
        uint64_t *ip = NULL;
        void *ix = NULL;
        OC_CHECK_ERR(oc_dataset_load_topology(ds, &ip, &ix, &err), OC_ERR_FORMAT, &err, substr);
        OC_CHECK(ip == NULL && ix == NULL && strstr(err.msg, path_in(out, file)));
        oc_dataset_free(ds);
    }
}

static char warned[512]; /* the last warning logged */

static void capture_warning(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    if (level >= OC_LOG_WARN)
        snprintf(warned, sizeof(warned), "%s", msg);
}

OC_TEST(content_corruptions)
{
    struct tiny t;
    uint64_t live0 = oc_mem_n_live();

    tiny_init(&t);
    t.indptr[3] = 1;
    expect_open_fails("mono", &t, "indptr.npy", "not monotone: indptr[3] = 1 < indptr[2] = 3");
    tiny_init(&t);
    t.indptr[0] = 1;
    expect_open_fails("ip0", &t, "indptr.npy", "indptr[0] is 1, expected 0");
    tiny_init(&t);
    t.indptr[4] = t.indptr[5] = t.indptr[6] = 6;
    expect_open_fails("iplast", &t, "indptr.npy", "indptr[6] = 6, expected n_edges 7");
    tiny_init(&t);
    t.indptr[4] = 8;
    expect_open_fails("ipbig", &t, "indptr.npy", "indptr[4] = 8 exceeds n_edges 7");
    tiny_init(&t);
    t.indices[5] = 9;
    expect_open_fails("nbr", &t, "indices.npy",
                      "neighbor id 9 at position 5 out of range (n_nodes 6)");
    tiny_init(&t);
    t.indices[0] = 3; /* node 0 <- 3, 2: not ascending */
    expect_open_fails("sorted", &t, "indices.npy",
                      "in-neighbors of node 0 not ascending at position 1 (2 after 3)");
    tiny_init(&t);
    t.indices[6] = 0; /* node 3 <- 1, 0 */
    expect_open_fails("sorted3", &t, "indices.npy", "in-neighbors of node 3 not ascending");
    tiny_init(&t);
    t.labels[4] = 3;
    expect_open_fails("label", &t, "labels.npy", "label 3 of node 4 out of range [-1, 3)");
    tiny_init(&t);
    t.labels[0] = -2;
    expect_open_fails("labelneg", &t, "labels.npy", "label -2 of node 0 out of range");
    tiny_init(&t);
    t.test[1] = 6;
    expect_open_fails("split", &t, "test_idx.npy",
                      "node id 6 at position 1 out of range (n_nodes 6)");
    tiny_init(&t);
    t.train[1] = 0;
    expect_open_fails("dup", &t, "train_idx.npy", "duplicate node id 0 at position 1");
    tiny_init(&t);
    t.indptr_dtype = OC_DTYPE_U32;
    expect_open_fails("dtype", &t, "indptr.npy", "dtype u32, expected u64");
    tiny_init(&t);
    t.feat_shape[1] = 4;
    expect_open_fails("fshape", &t, "features.npy", "shape (6, 4), expected (6, 3)");
    tiny_init(&t);
    t.n_labels = 5;
    expect_open_fails("lshape", &t, "labels.npy", "shape (5,), expected (6,)");
    OC_CHECK(oc_mem_n_live() == live0);

    /* overlapping splits are allowed, and logged naming the file and dataset (not the
       directory, which at import is the temporary one) */
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    tiny_init(&t);
    t.val[0] = 1;
    const char *out = fresh("overlap");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    warned[0] = '\0';
    oc_log_set_callback(capture_warning, NULL, OC_LOG_WARN);
    OC_CHECK_OK(oc_dataset_open(out, 0, &ds, &err), &err);
    oc_log_set_callback(NULL, NULL, OC_LOG_WARN);
    OC_CHECK(strncmp(warned, "val_idx.npy of dataset '", 24) == 0 &&
             strstr(warned, "1 node ids also appear in an earlier split"));
    oc_dataset_free(ds);
}

/*
 * DIR's features.npy has a flipped byte: an open that defers its checksum
 * succeeds, and the check is the reader's: folding the whole file in
 * (pieces that overlap) and finishing reads nothing more; folding a part,
 * skipping one and finishing reads from the skip; either way the mismatch is
 * found naming the file.
 */
static void check_deferred_features_crc(const char *dir)
{
    struct oc_dataset *ds = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_dataset_open(dir, OC_DS_OPEN_DEFER_FEATURE_CRC, &ds, &err), &err);
    if (!ds)
        return;
    OC_CHECK(oc_dataset_features_crc_deferred(ds));
    const char *path = oc_dataset_path(ds, OC_DS_FEATURES);
    char *data = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(path, 0, &data, &len, &err), &err);
    for (int skip = 0; skip < 2 && data; skip++) {
        struct oc_crc_follow c;
        uint64_t extra = UINT64_MAX;
        OC_CHECK_OK(oc_dataset_features_crc_begin(ds, &c, &err), &err);
        OC_CHECK(c.at == 4096);
        uint64_t a = (len - 4096) / 4; /* the data in quarters */
        OC_CHECK(a > 1);
        oc_crc_follow_feed(&c, 4096, data + 4096, a);
        oc_crc_follow_feed(&c, 4096 + a / 2, data + 4096 + a / 2, 2 * a - a / 2); /* overlaps */
        uint64_t next = 4096 + (skip ? 3 : 2) * a; /* a gap, or none */
        oc_crc_follow_feed(&c, next, data + next, len - next);
        OC_CHECK(c.at == (skip ? 4096 + 2 * a : len));
        OC_CHECK_ERR(oc_dataset_features_crc_finish(ds, &c, NULL, 0, &extra, &err), OC_ERR_FORMAT,
                     &err, "checksum mismatch");
        OC_CHECK(strstr(err.msg, path) != NULL);
        OC_CHECK(extra == (skip ? len - 4096 - 2 * a : 0));
    }
    oc_free(data);
    oc_dataset_free(ds);
}

OC_TEST(file_corruptions)
{
    struct tiny t;
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    uint64_t live0 = oc_mem_n_live();
    tiny_init(&t);

    /* truncate each file by one byte: size mismatch against the manifest; then with the
     * manifest resealed: the header's shape no longer fits the file */
    for (int f = 0; f < OC_DS_FEATURE_ROWS; f++) { /* every file of version 1 (test_layout: 2) */
        const char *name = oc_ds_file_name((enum oc_ds_file)f);
        char label[64];
        snprintf(label, sizeof(label), "trunc-%d", f);
        const char *out = fresh(label);
        OC_CHECK_OK(tiny_build(out, &t, &err), &err);
        char p[1100];
        snprintf(p, sizeof(p), "%.800s/%.200s", out, name);
        struct stat st;
        OC_CHECK(stat(p, &st) == 0);
        OC_CHECK(truncate(p, st.st_size - 1) == 0);
        OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "truncated: file is");
        OC_CHECK(strstr(err.msg, p) && strstr(err.msg, "manifest.json says"));
        reseal(out);
        OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "truncated");
        OC_CHECK(strstr(err.msg, p) != NULL);
        if (!strstr(err.msg, p))
            fprintf(stderr, "  (message: %s)\n", err.msg);
    }

    /* flip a byte: checksum mismatch (content still valid); skipped with the flag */
    const char *out = fresh("flip");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    patch_byte(path_in(out, "features.npy"), 4096 + 13, 0x01);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "checksum mismatch");
    OC_CHECK(strstr(err.msg, path_in(out, "features.npy")) != NULL);
    OC_CHECK_OK(oc_dataset_open(out, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err), &err);
    OC_CHECK(!oc_dataset_features_crc_deferred(ds));
    oc_dataset_free(ds);
    ds = NULL;
    check_deferred_features_crc(out);
    reseal(out);
    patch_byte(path_in(out, "labels.npy"), 4096, 0x01); /* label 0 -> 1: valid */
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "checksum mismatch");
    OC_CHECK(strstr(err.msg, path_in(out, "labels.npy")) != NULL);
    reseal(out);
    patch_byte(path_in(out, "indptr.npy"), 200, 0x01); /* header padding ' ' -> '!' */
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "malformed .npy header");
    OC_CHECK(strstr(err.msg, path_in(out, "indptr.npy")) != NULL);

    /* a feature matrix marked Fortran-order (header "False" -> "True "): refused, named */
    out = fresh("fortran");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    {
        char hdr[200] = {0};
        FILE *f = fopen(path_in(out, "features.npy"), "r+b");
        OC_CHECK(f && fread(hdr, 1, sizeof(hdr) - 1, f) > 0);
        char *at = f ? strstr(hdr + 10, "False") : NULL;
        OC_CHECK(at != NULL);
        if (at) {
            fseek(f, (long)(at - hdr), SEEK_SET);
            fputs("True ", f);
        }
        if (f)
            fclose(f);
    }
    reseal(out);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err,
                 "fortran_order True not supported");
    OC_CHECK(strstr(err.msg, path_in(out, "features.npy")) != NULL);

    /* content corruption patched in place, manifest resealed: the content check fires */
    out = fresh("patched");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    patch_u64(path_in(out, "val_idx.npy"), 0, 1000);
    reseal(out);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err,
                 "node id 1000 at position 0 out of range");
    OC_CHECK(strstr(err.msg, path_in(out, "val_idx.npy")) != NULL);

    /* missing file */
    out = fresh("missing");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    OC_CHECK(unlink(path_in(out, "labels.npy")) == 0);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, "missing");
    OC_CHECK(strstr(err.msg, path_in(out, "labels.npy")) != NULL);

    /* version 2 */
    out = fresh("v2");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    char *text;
    size_t len;
    OC_CHECK_OK(oc_read_file(path_in(out, "manifest.json"), 0, &text, &len, &err), &err);
    char *v = strstr(text, "\"version\":\t1");
    OC_CHECK(v != NULL);
    if (v)
        v[strlen("\"version\":\t")] = '3';
    OC_CHECK_OK(oc_write_file_atomic(path_in(out, "manifest.json"), text, len, &err), &err);
    oc_free(text);
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err,
                 "unknown format version 3 (this build reads 1 and 2)");
    OC_CHECK(strstr(err.msg, path_in(out, "manifest.json")) != NULL);

    /* not a dataset */
    OC_CHECK_ERR(oc_dataset_open(oc_test_tmpdir(), 0, &ds, &err), OC_ERR_NOTFOUND, &err,
                 "not a dataset directory");
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(builder_refuses_incomplete)
{
    struct tiny t;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    tiny_init(&t);
    t.skip_labels = 1; /* n_classes 3 but no labels.npy */
    const char *out = fresh("incomplete");
    OC_CHECK_ERR(tiny_build(out, &t, &err), OC_ERR_ARG, &err, "files table lacks labels.npy");
    OC_CHECK(strstr(err.msg, "cannot commit") != NULL);
    OC_CHECK(!oc_path_exists(out) && !tmp_sibling_exists(out));
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(builder_faults)
{
    struct tiny t;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    tiny_init(&t);
    static const enum oc_fault_kind kinds[5] = {OC_FAULT_WRITE, OC_FAULT_ALLOC, OC_FAULT_OPEN,
                                                OC_FAULT_FSYNC, OC_FAULT_RENAME};
    static const int errs[5] = {ENOSPC, ENOMEM, EMFILE, EIO, EIO};
    static const int min_fired[5] = {7, 7, 7, 2, 1};
    for (int km = 0; km < 5 * FAULT_MODE_COUNT; km++) {
        int k = km / FAULT_MODE_COUNT, mode = km % FAULT_MODE_COUNT;
        int n_fired = 0;
        for (uint64_t nth = 1; nth < 400; nth++) {
            char label[64];
            snprintf(label, sizeof(label), "fault-%d-%d-%d", k, mode, (int)nth);
            const char *out = fresh(label);
            fault_arm_mode(mode, kinds[k], nth, errs[k]);
            int rc = tiny_build(out, &t, &err);
            int fired = oc_fault_fired(kinds[k]);
            oc_fault_disarm_all();
            if (!fired) {
                OC_CHECK(rc == OC_OK && oc_path_exists(out));
                break;
            }
            n_fired++;
            OC_CHECK(rc != OC_OK);
            OC_CHECK(!oc_path_exists(out));
            OC_CHECK(!tmp_sibling_exists(out));
            OC_CHECK(oc_mem_n_live() == live0);
        }
        if (n_fired < min_fired[k])
            fprintf(stderr, "  %s %s: only %d faults fired\n", fault_mode_name(mode),
                    oc_fault_kind_name(kinds[k]), n_fired);
        OC_CHECK(n_fired >= min_fired[k]);
    }
}

OC_TEST(open_faults)
{
    struct tiny t;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    tiny_init(&t);
    const char *out = fresh("openfault");
    OC_CHECK_OK(tiny_build(out, &t, &err), &err);
    static const enum oc_fault_kind kinds[4] = {OC_FAULT_READ, OC_FAULT_READ, OC_FAULT_ALLOC,
                                                OC_FAULT_OPEN};
    static const int errs[4] = {EIO, 0, ENOMEM, EACCES};
    static const int min_fired[4] = {10, 10, 10, 8};
    for (int km = 0; km < 4 * FAULT_MODE_COUNT; km++) {
        int k = km / FAULT_MODE_COUNT, mode = km % FAULT_MODE_COUNT;
        int n_fired = 0;
        for (uint64_t nth = 1; nth < 400; nth++) {
            struct oc_dataset *ds = NULL;
            struct oc_ds_info info;
            fault_arm_mode(mode, kinds[k], nth, errs[k]);
            int rc = oc_dataset_open(out, 0, &ds, &err);
            if (rc == OC_OK) {
                rc = oc_dataset_info(ds, &info, &err);
                if (rc == OC_OK)
                    oc_ds_info_deinit(&info);
            }
            int fired = oc_fault_fired(kinds[k]);
            oc_fault_disarm_all();
            oc_dataset_free(ds);
            if (!fired) {
                OC_CHECK(rc == OC_OK);
                break;
            }
            n_fired++;
            /* a short read that lands exactly at end of file is no error */
            OC_CHECK(rc != OC_OK || errs[k] == 0);
            OC_CHECK(rc == OC_OK || strlen(err.msg) > 0);
            OC_CHECK(oc_mem_n_live() == live0);
        }
        if (n_fired < min_fired[k])
            fprintf(stderr, "  %s %s: only %d faults fired\n", fault_mode_name(mode),
                    oc_fault_kind_name(kinds[k]), n_fired);
        OC_CHECK(n_fired >= min_fired[k]);
    }
}

/*
 * A graph large enough that indptr spans several 1 MiB scan chunks:
 * N = 200000, deg(v) = v % 4 with in-neighbors 0..deg-1, except node 7 with
 * in-neighbors 0..69999 (self-loop; its degree lands in the "big" list).
 */
#define BIG_N   200000u
#define BIG_HUB 70000u

static int big_build_hub(const char *out, uint32_t hub, int corrupt_last, struct oc_err *err)
{
    uint64_t *ip = NULL;
    uint32_t *ix = NULL;
    struct oc_ds_builder *b = NULL;
    int rc = OC_ERR_NOMEM;
    ip = oc_alloc((BIG_N + 1) * sizeof(uint64_t), "test", err);
    ix = oc_alloc((330000 + (uint64_t)hub) * sizeof(uint32_t), "test", err);
    if (!ip || !ix)
        goto out;
    uint64_t e = 0;
    ip[0] = 0;
    for (uint32_t v = 0; v < BIG_N; v++) {
        uint32_t d = v == 7 ? hub : v % 4;
        for (uint32_t j = 0; j < d; j++) /* ascending, < BIG_N */
            ix[e++] = d <= BIG_N ? j : (uint32_t)((uint64_t)j * BIG_N / d);
        ip[v + 1] = e;
    }
    if (corrupt_last)
        ix[e - 1] = BIG_N;
    if ((rc = oc_ds_builder_new(out, &b, err)))
        goto out;
    struct oc_manifest *m = oc_ds_builder_manifest(b);
    m->n_nodes = BIG_N;
    m->n_edges = e;
    uint64_t tr[3] = {5, 199999, 7};
    if ((rc = oc_ds_builder_write_array(b, OC_DS_INDPTR, OC_DTYPE_U64, BIG_N + 1, ip, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_INDICES, OC_DTYPE_U32, e, ix, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_TRAIN_IDX, OC_DTYPE_U64, 3, tr, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_VAL_IDX, OC_DTYPE_U64, 0, NULL, err)) ||
        (rc = oc_ds_builder_write_array(b, OC_DS_TEST_IDX, OC_DTYPE_U64, 0, NULL, err)))
        goto out;
    rc = oc_ds_builder_commit(b, err);
out:
    oc_ds_builder_free(b);
    oc_free(ip);
    oc_free(ix);
    return rc;
}

static int big_build(const char *out, int corrupt_last, struct oc_err *err)
{
    return big_build_hub(out, BIG_HUB, corrupt_last, err);
}

/* Loads the topology of DIR opened with `flags`; the arrays are the caller's. */
static int load_topo(const char *dir, unsigned flags, uint64_t **ip, void **ix, struct oc_err *err)
{
    struct oc_dataset *ds = NULL;
    *ip = NULL;
    *ix = NULL;
    int rc = oc_dataset_open(dir, flags, &ds, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_topology(ds, ip, ix, err);
    oc_dataset_free(ds);
    return rc;
}

/*
 * A deferred topology (OC_DS_OPEN_DEFER_TOPOLOGY) is checked as it is loaded:
 * indices over several 8 MiB scan chunks load equal to the checked open's
 * arrays; a bad id, a broken order and a flipped byte each pass the deferred
 * open and are refused by the load with the open's message naming the file,
 * returning nothing.
 */
OC_TEST(deferred_topology_is_checked_as_loaded)
{
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    const uint32_t hub = 2400000; /* 9.6 MB of u32 ids: two scan chunks */
    const char *out = fresh("topo-deferred");
    OC_CHECK_OK(big_build_hub(out, hub, 0, &err), &err);
    uint64_t *ip0 = NULL, *ip1 = NULL;
    void *ix0 = NULL, *ix1 = NULL;
    OC_CHECK_OK(load_topo(out, 0, &ip0, &ix0, &err), &err);
    OC_CHECK_OK(load_topo(out, OC_DS_OPEN_DEFER_TOPOLOGY, &ip1, &ix1, &err), &err);
    uint64_t e = ip0 ? ip0[BIG_N] : 0;
    OC_CHECK(e > hub && ip1 && ix0 && ix1);
    if (ip0 && ip1 && ix0 && ix1) {
        OC_CHECK(memcmp(ip0, ip1, (BIG_N + 1) * sizeof(uint64_t)) == 0);
        OC_CHECK(memcmp(ix0, ix1, e * sizeof(uint32_t)) == 0);
    }
    oc_free(ip0);
    oc_free(ip1);
    oc_free(ix0);
    oc_free(ix1);

    /* the last id out of range: found past the first chunk */
    out = fresh("topo-deferred-bad");
    OC_CHECK_OK(big_build_hub(out, hub, 1, &err), &err);
    OC_CHECK_ERR(load_topo(out, OC_DS_OPEN_DEFER_TOPOLOGY, &ip1, &ix1, &err), OC_ERR_FORMAT, &err,
                 "out of range (n_nodes 200000)");
    OC_CHECK(strstr(err.msg, path_in(out, "indices.npy")) && !ip1 && !ix1);

    /* a flipped byte that keeps the content valid: the CRC, and the file named */
    out = fresh("topo-deferred-flip");
    OC_CHECK_OK(big_build_hub(out, hub, 0, &err), &err);
    patch_byte(path_in(out, "indices.npy"), 4096 + 4 * 5, 0x01); /* node 3: 0, 1, 2 -> 3 */
    OC_CHECK_ERR(load_topo(out, OC_DS_OPEN_DEFER_TOPOLOGY, &ip1, &ix1, &err), OC_ERR_FORMAT, &err,
                 "checksum mismatch");
    OC_CHECK(strstr(err.msg, path_in(out, "indices.npy")) && !ip1 && !ix1);
    OC_CHECK_OK(
        load_topo(out, OC_DS_OPEN_DEFER_TOPOLOGY | OC_DS_OPEN_SKIP_CHECKSUM, &ip1, &ix1, &err),
        &err);
    oc_free(ip1);
    oc_free(ix1);
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(big_graph_streaming)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    uint64_t live0 = oc_mem_n_live();
    const char *out = fresh("big");
    OC_CHECK_OK(big_build(out, 0, &err), &err);
    OC_CHECK_OK(oc_dataset_open(out, 0, &ds, &err), &err);
    if (!ds)
        return;
    struct oc_ds_info info;
    OC_CHECK_OK(oc_dataset_info(ds, &info, &err), &err);
    uint64_t e = 50000 + 100000 + 3 * 49999 + BIG_HUB;
    OC_CHECK(info.n_edges == e && oc_dataset_manifest(ds)->n_edges == e);
    OC_CHECK(info.deg_min == 0 && info.deg_max == BIG_HUB);
    OC_CHECK(info.deg_median == 1 && info.deg_p99 == 3);
    OC_CHECK(info.n_self_loops == 1);
    OC_CHECK(info.n_isolated == 32500);
    OC_CHECK(info.n_unlabeled == BIG_N && info.n_classes == 0);
    oc_ds_info_deinit(&info);
    oc_dataset_free(ds);
    ds = NULL;

    out = fresh("big-bad");
    OC_CHECK_OK(big_build(out, 1, &err), &err);
    char want[128];
    snprintf(want, sizeof(want), "neighbor id %u at position %llu out of range", BIG_N,
             (unsigned long long)(e - 1));
    OC_CHECK_ERR(oc_dataset_open(out, 0, &ds, &err), OC_ERR_FORMAT, &err, want);
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(shared_empty_graph)
{
    /* zero nodes: only empty arrays */
    struct oc_err err;
    struct oc_ds_builder *b = NULL;
    struct oc_dataset *ds = NULL;
    const char *out = fresh("empty");
    uint64_t zero = 0;
    OC_CHECK_OK(oc_ds_builder_new(out, &b, &err), &err);
    OC_CHECK_OK(oc_ds_builder_write_array(b, OC_DS_INDPTR, OC_DTYPE_U64, 1, &zero, &err), &err);
    OC_CHECK_OK(oc_ds_builder_write_array(b, OC_DS_INDICES, OC_DTYPE_U32, 0, NULL, &err), &err);
    for (int f = OC_DS_TRAIN_IDX; f <= OC_DS_TEST_IDX; f++)
        OC_CHECK_OK(oc_ds_builder_write_array(b, (enum oc_ds_file)f, OC_DTYPE_U64, 0, NULL, &err),
                    &err);
    OC_CHECK_OK(oc_ds_builder_commit(b, &err), &err);
    oc_ds_builder_free(b);
    OC_CHECK_OK(oc_dataset_open(out, 0, &ds, &err), &err);
    struct oc_ds_info info;
    if (ds) {
        OC_CHECK_OK(oc_dataset_info(ds, &info, &err), &err);
        OC_CHECK(info.n_nodes == 0 && info.deg_max == 0 && info.n_isolated == 0);
        oc_ds_info_deinit(&info);
    }
    oc_dataset_free(ds);
}

/* A feature matrix (`offcore partition`'s rows.npy) opened as a features-only dataset. */
OC_TEST(features_view)
{
    struct oc_err err;
    const char *dir = fresh("view");
    char path[900], bad[900];
    snprintf(path, sizeof(path), "%s.rows.npy", dir);
    snprintf(bad, sizeof(bad), "%s.flat.npy", dir);
    float rows[3 * 4];
    for (int i = 0; i < 12; i++)
        rows[i] = (float)i * 0.25f;
    uint64_t shape[2] = {3, 4}, flat = 12;
    struct oc_npy_writer *w = NULL;
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_F32, 2, shape, &w, &err), &err);
    OC_CHECK_OK(oc_npy_writer_append(w, rows, sizeof(rows), &err), &err);
    OC_CHECK_OK(oc_npy_writer_close(w, NULL, NULL, &err), &err);
    OC_CHECK_OK(oc_npy_writer_open(bad, OC_DTYPE_F32, 1, &flat, &w, &err), &err);
    OC_CHECK_OK(oc_npy_writer_append(w, rows, sizeof(rows), &err), &err);
    OC_CHECK_OK(oc_npy_writer_close(w, NULL, NULL, &err), &err);

    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open_features(dir, path, &ds, &err), &err);
    if (ds) {
        const struct oc_manifest *m = oc_dataset_manifest(ds);
        OC_CHECK(m->n_nodes == 3 && m->feat_dim == 4 && m->feat_dtype == OC_DTYPE_F32);
        OC_CHECK(m->files[OC_DS_FEATURES].present && !m->files[OC_DS_INDPTR].present);
        OC_CHECK(m->files[OC_DS_FEATURES].bytes == OC_NPY_HEADER_BYTES + sizeof(rows));
        OC_CHECK(strcmp(oc_dataset_path(ds, OC_DS_FEATURES), path) == 0);
        OC_CHECK(oc_dataset_data_offset(ds, OC_DS_FEATURES) == OC_NPY_HEADER_BYTES);
        OC_CHECK(strcmp(oc_dataset_dir(ds), dir) == 0);
        OC_CHECK(!oc_dataset_features_crc_deferred(ds));
    }
    oc_dataset_free(ds);
    ds = NULL;
    /* not a matrix, truncated: refused naming the file */
    OC_CHECK_ERR(oc_dataset_open_features(dir, bad, &ds, &err), OC_ERR_FORMAT, &err,
                 "not a feature matrix");
    OC_CHECK(ds == NULL && strstr(err.msg, bad) != NULL);
    OC_CHECK(truncate(path, OC_NPY_HEADER_BYTES + sizeof(rows) - 4) == 0);
    OC_CHECK_ERR(oc_dataset_open_features(dir, path, &ds, &err), OC_ERR_FORMAT, &err, "truncated");
    OC_CHECK(ds == NULL && strstr(err.msg, path) != NULL);
}

OC_TEST_MAIN()
