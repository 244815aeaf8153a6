/*
 * test_import_fault.c — fault loops over the importers: on tiny fixtures,
 * fail the 1st, 2nd, ... allocation (ENOMEM), read (EIO, short read), write
 * (ENOSPC, EIO), open (EACCES), fsync (EIO) or rename (EXDEV) until an import
 * completes without the fault firing, once with only that operation failing
 * (one-shot) and once with it and every later one failing (persistent).
 * Every import the fault hit must fail with an error, leak nothing
 * (oc_mem_n_live) and leave no dataset (nor "<out>.tmp-*") at the output;
 * the import that completes must equal the fault-free reference. A short
 * read may succeed only where it stood in for a read at end of file and the
 * result still equals the reference.
 *
 * Place in the data flow: tests of src/dataset/import*.c over the real
 * builder, sorter and io layers.
 */
#include <errno.h>

#include "fault_util.h"
#include "harness.h"
#include "import_fixture.h"
#include "offcore/import.h"

/* 30 nodes: a ring plus chords, 2 self-loops, sparse features, role-form split. */
static void write_text(const char *dir)
{
    char buf[8192];
    size_t pos = 0;
    fx_write(dir, "meta.txt", "num_nodes 30\nnum_features 4\nnum_classes 3\n");
    for (int i = 0; i < 29; i++)
        pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d %d\n", i, i + 1);
    for (int i = 0; i < 23; i += 2)
        pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d %d\n", i, i + 7);
    fx_write(dir, "edges.txt", buf);
    fx_write(dir, "self_loops.txt", "3\n7\n");
    pos = 0;
    for (int i = 0; i < 30; i++) {
        int a = i % 4, b = (i + 2) % 4;
        if (i % 3 == 0 && b < a)
            pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d %d 1\n", i, b);
        if (i != 11)
            pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d %d %g\n", i, a, i + 0.5);
        if (i % 3 == 0 && b > a)
            pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d %d 1\n", i, b);
    }
    fx_write(dir, "features.txt", buf);
    pos = 0;
    for (int i = 0; i < 30; i++)
        pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d\n", i == 5 ? -1 : i % 3);
    fx_write(dir, "labels.txt", buf);
    pos = 0;
    for (int i = 0; i < 30; i++)
        pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%d\n",
                                i % 3 == 0   ? 0
                                : i % 3 == 1 ? 1
                                : i % 5 == 2 ? 2
                                             : -1);
    fx_write(dir, "splits/split_0.txt", buf);
}

/* The same graph as npy + OGB csv.gz sources (a few rows only). */
static void write_npy(const char *dir)
{
    int64_t e[16] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0, 2, 2, 1, 4};
    uint64_t es[2] = {8, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I64, 2, es, e, 0);
    double f[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    uint64_t fs[2] = {6, 2};
    fx_write_npy(dir, "features.npy", OC_DTYPE_F64, 2, fs, f, 0);
    int32_t lab[6] = {0, 1, 2, 0, 1, -1};
    uint64_t ls[1] = {6};
    fx_write_npy(dir, "labels.npy", OC_DTYPE_I32, 1, ls, lab, 0);
    int64_t tr[2] = {0, 1}, te[1] = {4};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "train_idx.npy", OC_DTYPE_I64, 1, s2, tr, 0);
    fx_write_npy(dir, "test_idx.npy", OC_DTYPE_I64, 1, s1, te, 0);
}

static void write_ogb(const char *dir)
{
    fx_gz_write(dir, "raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,5\n5,0\n");
    fx_gz_write(dir, "raw/node-feat.csv.gz", "1,2\n3,4\n5,6\n7,8\n9,10\n11,12\n");
    fx_gz_write(dir, "raw/node-label.csv.gz", "0\n1\nnan\n1\n0\n2\n");
    fx_gz_write(dir, "raw/num-node-list.csv.gz", "6\n");
    fx_gz_write(dir, "split/s/train.csv.gz", "0\n1\n");
    fx_gz_write(dir, "split/s/valid.csv.gz", "2\n");
    fx_gz_write(dir, "split/s/test.csv.gz", "3\n5\n");
}

/* GraphBolt: csv edges, f32 features, labels from the sets. */
static void write_graphbolt(const char *dir)
{
    fx_write(dir, "metadata.yaml",
             "dataset_name: gbf\n"
             "graph:\n"
             "  nodes: [{num: 6}]\n"
             "  edges: [{format: csv, path: e.csv}]\n"
             "feature_data:\n"
             "  - {domain: node, name: feat, format: numpy, path: f.npy}\n"
             "tasks:\n"
             "  - num_classes: 3\n"
             "    train_set:\n"
             "      - data:\n"
             "          - {name: seeds, format: numpy, path: tr.npy}\n"
             "          - {name: labels, format: numpy, path: trl.npy}\n"
             "    test_set:\n"
             "      - data: [{name: seeds, format: numpy, path: te.npy}]\n");
    fx_write(dir, "e.csv", "0,1\n1,2\n2,3\n3,4\n4,5\n");
    float f[6] = {1, 2, 3, 4, 5, 6};
    uint64_t fs[2] = {6, 1};
    fx_write_npy(dir, "f.npy", OC_DTYPE_F32, 2, fs, f, 0);
    int64_t tr[2] = {0, 3}, trl[2] = {2, 1}, te[1] = {5};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "tr.npy", OC_DTYPE_I64, 1, s2, tr, 0);
    fx_write_npy(dir, "trl.npy", OC_DTYPE_I64, 1, s2, trl, 0);
    fx_write_npy(dir, "te.npy", OC_DTYPE_I64, 1, s1, te, 0);
}

static int same_dataset(const struct fx_ds *a, const struct fx_ds *b)
{
    const struct oc_manifest *x = &a->m, *y = &b->m;
    if (x->n_nodes != y->n_nodes || x->n_edges != y->n_edges || x->feat_dim != y->feat_dim ||
        x->n_classes != y->n_classes)
        return 0;
    if (memcmp(a->indptr, b->indptr, (x->n_nodes + 1) * sizeof(uint64_t)) ||
        memcmp(a->indices, b->indices, x->n_edges * sizeof(uint64_t)))
        return 0;
    if (x->feat_dim && memcmp(a->feat, b->feat, x->n_nodes * x->feat_dim * sizeof(float)))
        return 0;
    if (x->n_classes && memcmp(a->labels, b->labels, x->n_nodes * sizeof(int32_t)))
        return 0;
    for (int i = 0; i < 3; i++)
        if (a->n_split[i] != b->n_split[i] ||
            (a->n_split[i] && memcmp(a->split[i], b->split[i], a->n_split[i] * 8)))
            return 0;
    return 1;
}

struct fault_case {
    enum oc_fault_kind kind;
    int sys_errno;
    const char *what;
};

static const struct fault_case cases[] = {
    {OC_FAULT_ALLOC, ENOMEM, "alloc ENOMEM"}, {OC_FAULT_READ, EIO, "read EIO"},
    {OC_FAULT_READ, 0, "short read"},         {OC_FAULT_WRITE, ENOSPC, "write ENOSPC"},
    {OC_FAULT_WRITE, EIO, "write EIO"},       {OC_FAULT_OPEN, EACCES, "open EACCES"},
    {OC_FAULT_FSYNC, EIO, "fsync EIO"},       {OC_FAULT_RENAME, EXDEV, "rename EXDEV"},
};

static void fault_loop(enum oc_import_kind kind, void (*write_src)(const char *dir))
{
    const char *tmp = oc_test_tmpdir();
    char src[4096], out[4096];
    FX_PATH(src, "%s/src", tmp);
    write_src(src);
    struct oc_import_opts o;
    oc_import_opts_default(&o);
    o.mem_bytes = 64 << 10;
    struct oc_err err;
    struct fx_ds ref;
    FX_PATH(out, "%s/ref", tmp);
    OC_CHECK_OK(oc_import(kind, src, out, &o, NULL, &err), &err);
    OC_CHECK_OK(fx_ds_load(out, &ref, &err), &err);
    if (!ref.indptr)
        return;
    FX_PATH(out, "%s/out", tmp);
    for (size_t cm = 0; cm < FAULT_MODE_COUNT * sizeof(cases) / sizeof(cases[0]); cm++) {
        const struct fault_case *fc = &cases[cm / FAULT_MODE_COUNT];
        int mode = (int)(cm % FAULT_MODE_COUNT);
        uint64_t nth;
        int done = 0;
        uint64_t n_runs = 0;
        /* one-shot: every nth; persistent: sampled (its early nth cover the later ones' paths) */
        for (nth = 1; nth < 100000 && !done;
             nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0), n_runs++) {
            uint64_t live = oc_mem_n_live();
            oc_err_clear(&err);
            fault_arm_mode(mode, fc->kind, nth, fc->sys_errno);
            int rc = oc_import(kind, src, out, &o, NULL, &err);
            int fired = oc_fault_fired(fc->kind);
            oc_fault_disarm_all();
            if (oc_mem_n_live() != live) {
                fprintf(stderr, "  %s %s #%llu: %llu allocations leaked (%s)\n",
                        fault_mode_name(mode), fc->what, (unsigned long long)nth,
                        (unsigned long long)(oc_mem_n_live() - live), err.msg);
                OC_CHECK(oc_mem_n_live() == live);
            }
            if (!fired) {
                OC_CHECK_OK(rc, &err);
                struct fx_ds d;
                OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
                OC_CHECK(d.indptr && same_dataset(&ref, &d));
                fx_ds_free(&d);
                struct oc_err e2;
                oc_rm_rf(out, &e2);
                done = 1;
                continue;
            }
            if (rc == OC_OK) {
                /*
                 * A short read that replaced the read which would have hit the end of
                 * the file anyway changes nothing: fine, as long as the result is the
                 * reference. Any other fault that fired must have failed the import.
                 */
                struct fx_ds d;
                int same = fx_ds_load(out, &d, &err) == OC_OK && same_dataset(&ref, &d);
                fx_ds_free(&d);
                if (fc->sys_errno != 0 || !same) {
                    fprintf(stderr, "  %s %s #%llu fired but the import succeeded (%s)\n",
                            fault_mode_name(mode), fc->what, (unsigned long long)nth,
                            same ? "same data" : "WRONG data");
                    OC_CHECK(!"import succeeded although the fault fired");
                }
                struct oc_err e2;
                oc_rm_rf(out, &e2);
                continue;
            }
            OC_CHECK(err.status == rc && err.msg[0] != '\0');
            if (fx_output_left(out)) {
                fprintf(stderr, "  %s %s #%llu left output behind (%s)\n", fault_mode_name(mode),
                        fc->what, (unsigned long long)nth, err.msg);
                OC_CHECK(!fx_output_left(out));
                break;
            }
        }
        OC_CHECK(done);
        OC_CHECK(n_runs > 1); /* the last run is the one the fault did not reach */
        fprintf(stderr, "  %s %s: %llu faults injected\n", fault_mode_name(mode), fc->what,
                (unsigned long long)(n_runs - 1));
    }
    fx_ds_free(&ref);
}

/* Plain-text inputs go through oc_line_reader, which must report a short read as truncation. */
OC_TEST(fault_text)
{
    fault_loop(OC_IMPORT_TEXT, write_text);
}

OC_TEST(fault_npy)
{
    fault_loop(OC_IMPORT_NPY, write_npy);
}

OC_TEST(fault_ogb)
{
    fault_loop(OC_IMPORT_OGB, write_ogb);
}

OC_TEST(fault_graphbolt)
{
    fault_loop(OC_IMPORT_GRAPHBOLT, write_graphbolt);
}

OC_TEST_MAIN()
