/*
 * test_part_set.c — partitioned datasets (`offcore partition`, docs/FORMAT.md
 * section 10) without MPI: every part opens and checks; each part's
 * featureless dataset is the source's topology, labels and splits; the map
 * sends every node to exactly one (part, row) and that row of the owner's
 * rows.npy holds the node's features bit for bit; parts are balanced
 * enough to be parts (none empty); the writer refuses bad input (too few or
 * too many parts, an existing output, no features, a laid-out dataset) and
 * leaves no temporary; the reader refuses a part count unlike the run's, a
 * part of another run, a missing part, a truncated or damaged file, and a
 * manifest that is not strict JSON (a fraction, an unknown key), each
 * naming the file; `offcore partition` refuses a missing or bad --parts and
 * `offcore info` lists a partition's parts and refuses a damaged one.
 *
 * Place in the data flow: tests of plan/part_set.c and plan/part_open.c.
 * Thread-safety: single-threaded. Ownership: files live in oc_test_tmpdir().
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_util.h"
#include "harness.h"
#include "offcore/io.h"
#include "offcore/plan.h"
#include "proc_util.h"

static const char *graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    g.avg_degree = 6;
    g.feat_dim = 12;
    g.n_classes = 3;
    g.seed = 11;
    return gen_once(&g);
}

/* Partitions graph() into n parts at tmpdir/name; the path, or NULL. */
static const char *part_set(uint32_t n, const char *name, char run_id[OC_PLAN_RUN_ID_LEN + 1])
{
    static char out[8][800];
    static int k;
    k = (k + 1) % 8;
    snprintf(out[k], sizeof(out[k]), "%s/%s", oc_test_tmpdir(), name);
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    char plan[900];
    snprintf(plan, sizeof(plan), "%s/plan-%s", oc_test_tmpdir(), name);
    const char *src = graph();
    int rc = src ? oc_dataset_open(src, 0, &ds, &err) : OC_ERR_NOTFOUND;
    OC_CHECK_OK(rc, &err);
    if (rc == OC_OK) {
        rc = oc_plan_part_set_write(ds, n, plan, out[k], NULL, run_id, &err);
        OC_CHECK_OK(rc, &err);
    }
    oc_dataset_free(ds);
    return rc == OC_OK ? out[k] : NULL;
}

/* Reads a whole file into a malloc'd buffer. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    OC_CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

/* cp -r src dst (through the shell: a test fixture). */
static void copy_tree(const char *src, const char *dst)
{
    char cmd[3 * 4096 + 64]; /* three paths of up to PATH_MAX and the words between */
    snprintf(cmd, sizeof(cmd), "rm -rf '%.4000s' && cp -r '%.4000s' '%.4000s'", dst, src, dst);
    OC_CHECK(system(cmd) == 0);
}

OC_TEST(every_node_has_one_owner_row_holding_its_features)
{
    char run_id[OC_PLAN_RUN_ID_LEN + 1];
    const char *out = part_set(3, "p3", run_id);
    if (!out)
        return;
    struct oc_err err;
    struct oc_dataset *src = NULL;
    OC_CHECK_OK(oc_dataset_open(graph(), 0, &src, &err), &err);
    if (!src)
        return;
    const struct oc_manifest *m = oc_dataset_manifest(src);
    float *feat = NULL;
    uint64_t rows = 0, cols = 0;
    OC_CHECK_OK(oc_npy_load_as(oc_dataset_path(src, OC_DS_FEATURES), OC_DTYPE_F32, (void **)&feat,
                               &rows, &cols, &err),
                &err);
    struct oc_plan_part p[3];
    float *part_rows[3] = {NULL, NULL, NULL};
    uint64_t total = 0;
    for (uint32_t k = 0; k < 3; k++) {
        OC_CHECK_OK(oc_plan_part_open(out, k, 3, &p[k], &err), &err);
        OC_CHECK(strcmp(p[k].run_id, run_id) == 0);
        OC_CHECK(p[k].n_nodes == m->n_nodes && p[k].feat_dim == m->feat_dim);
        OC_CHECK(p[k].n_local > 0);
        total += p[k].n_local;
        uint64_t r = 0, c = 0;
        OC_CHECK_OK(oc_npy_load_as(p[k].rows, OC_DTYPE_F32, (void **)&part_rows[k], &r, &c, &err),
                    &err);
        OC_CHECK(r == p[k].n_local && c == m->feat_dim);
        /* the part's dataset: the source's topology, labels and splits, no features */
        struct oc_dataset *pd = NULL;
        OC_CHECK_OK(oc_dataset_open(p[k].dir, 0, &pd, &err), &err);
        if (pd) {
            const struct oc_manifest *pm = oc_dataset_manifest(pd);
            OC_CHECK(pm->feat_dim == 0 && pm->n_nodes == m->n_nodes && pm->n_edges == m->n_edges);
            OC_CHECK(pm->files[OC_DS_INDICES].crc32 == m->files[OC_DS_INDICES].crc32);
            OC_CHECK(pm->files[OC_DS_TRAIN_IDX].crc32 == m->files[OC_DS_TRAIN_IDX].crc32);
            OC_CHECK(pm->files[OC_DS_LABELS].crc32 == m->files[OC_DS_LABELS].crc32);
        }
        oc_dataset_free(pd);
    }
    OC_CHECK(total == m->n_nodes);
    uint64_t bad = 0;
    for (uint64_t v = 0; feat && v < m->n_nodes; v++) {
        uint32_t k = p[0].owner[2 * v], row = p[0].owner[2 * v + 1];
        for (uint32_t j = 1; j < 3; j++) /* the same map in every part */
            bad += p[j].owner[2 * v] != k || p[j].owner[2 * v + 1] != row;
        if (k < 3 && part_rows[k] && row < p[k].n_local)
            bad += memcmp(part_rows[k] + (uint64_t)row * m->feat_dim, feat + v * m->feat_dim,
                          m->feat_dim * sizeof(float)) != 0;
        else
            bad++;
    }
    OC_CHECK(bad == 0);
    for (uint32_t k = 0; k < 3; k++) {
        oc_free(part_rows[k]);
        oc_plan_part_close(&p[k]);
    }
    oc_free(feat);
    oc_dataset_free(src);
}

OC_TEST(the_writer_refuses_bad_input_and_leaves_no_temporary)
{
    const char *src = graph();
    if (!src)
        return;
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(src, 0, &ds, &err), &err);
    if (!ds)
        return;
    char out[800], plan[800], id[OC_PLAN_RUN_ID_LEN + 1];
    snprintf(out, sizeof(out), "%s/refused", oc_test_tmpdir());
    snprintf(plan, sizeof(plan), "%s/plan-refused", oc_test_tmpdir());
    OC_CHECK_ERR(oc_plan_part_set_write(ds, 1, plan, out, NULL, id, &err), OC_ERR_ARG, &err,
                 "--parts 1: from 2 to 256");
    OC_CHECK_ERR(oc_plan_part_set_write(ds, 257, plan, out, NULL, id, &err), OC_ERR_ARG, &err,
                 "--parts 257");
    OC_CHECK(!oc_path_exists(out));
    OC_CHECK_ERR(oc_plan_part_set_write(ds, 2, plan, src, NULL, id, &err), OC_ERR_EXISTS, &err,
                 "already exists");
    oc_dataset_free(ds);
    /* no features: the part of a partition (a featureless dataset) cannot be partitioned */
    char run_id[OC_PLAN_RUN_ID_LEN + 1], part0[900];
    const char *p2 = part_set(2, "again", run_id);
    if (!p2)
        return;
    snprintf(part0, sizeof(part0), "%s/part-0", p2);
    OC_CHECK_OK(oc_dataset_open(part0, 0, &ds, &err), &err);
    if (ds)
        OC_CHECK_ERR(oc_plan_part_set_write(ds, 2, plan, out, NULL, id, &err), OC_ERR_ARG, &err,
                     "has no features");
    oc_dataset_free(ds);
    /* nothing left beside the outputs: no OUT.tmp-* */
    DIR *d = opendir(oc_test_tmpdir());
    OC_CHECK(d != NULL);
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        OC_CHECK(strstr(e->d_name, ".tmp-") == NULL);
    if (d)
        closedir(d);
}

OC_TEST(the_reader_refuses_parts_that_do_not_belong_together)
{
    char a_id[OC_PLAN_RUN_ID_LEN + 1], b_id[OC_PLAN_RUN_ID_LEN + 1];
    const char *a = part_set(2, "a", a_id), *b = part_set(2, "b", b_id);
    if (!a || !b)
        return;
    OC_CHECK(strcmp(a_id, b_id) != 0);
    struct oc_err err;
    struct oc_plan_part p;
    char dir[900], src[900], path[1000];
    /* a part count unlike the ranks' */
    OC_CHECK_ERR(oc_plan_part_open(a, 0, 3, &p, &err), OC_ERR_ARG, &err,
                 "a partition into 2 parts, but this run has 3 rank(s)");
    /* not a partitioned dataset at all */
    OC_CHECK_ERR(oc_plan_part_open(graph(), 0, 2, &p, &err), OC_ERR_NOTFOUND, &err,
                 "partition.json: missing");
    /* a part of another run */
    snprintf(dir, sizeof(dir), "%s/mixed", oc_test_tmpdir());
    copy_tree(a, dir);
    snprintf(path, sizeof(path), "%s/part-1", dir);
    snprintf(src, sizeof(src), "%s/part-1", b);
    copy_tree(src, path);
    OC_CHECK_OK(oc_plan_part_open(dir, 0, 2, &p, &err), &err); /* part 0 is still a's */
    oc_plan_part_close(&p);
    OC_CHECK_ERR(oc_plan_part_open(dir, 1, 2, &p, &err), OC_ERR_FORMAT, &err,
                 "another partition run");
    OC_CHECK(strstr(err.msg, "mixed/part-1/part.json") != NULL);
    /* a missing part */
    snprintf(path, sizeof(path), "rm -rf '%s/part-1'", dir);
    OC_CHECK(system(path) == 0);
    OC_CHECK_ERR(oc_plan_part_open(dir, 1, 2, &p, &err), OC_ERR_NOTFOUND, &err,
                 "part-1/part.json: missing: part 1");
    /* a truncated file, a damaged one */
    copy_tree(a, dir);
    snprintf(path, sizeof(path), "%s/part-0/owner.npy", dir);
    OC_CHECK(truncate(path, 4096 + 8) == 0);
    OC_CHECK_ERR(oc_plan_part_open(dir, 0, 2, &p, &err), OC_ERR_FORMAT, &err,
                 "owner.npy: truncated: file is 4104 bytes");
    copy_tree(a, dir);
    snprintf(path, sizeof(path), "%s/part-1/rows.npy", dir);
    size_t len = 0;
    char *data = slurp(path, &len);
    OC_CHECK(data && len > 5000);
    if (data) {
        data[5000] ^= 1;
        spit(path, data, len);
        free(data);
    }
    OC_CHECK_ERR(oc_plan_part_open(dir, 1, 2, &p, &err), OC_ERR_FORMAT, &err,
                 "rows.npy: checksum mismatch");
    /* partition.json: strict JSON (no fraction, no unknown key), each refused naming it */
    copy_tree(a, dir);
    snprintf(path, sizeof(path), "%s/partition.json", dir);
    char *text = slurp(path, &len);
    OC_CHECK(text != NULL);
    if (text) {
        char *n = strstr(text, "\"n_parts\":");
        OC_CHECK(n != NULL);
        char *two = n ? strchr(n, '2') : NULL;
        if (two) {
            char bad[4096];
            snprintf(bad, sizeof(bad), "%.*s2.0%s", (int)(two - text), text, two + 1);
            spit(path, bad, strlen(bad));
            OC_CHECK_ERR(oc_plan_part_open(dir, 0, 2, &p, &err), OC_ERR_FORMAT, &err,
                         "is not a plain non-negative integer");
            snprintf(bad, sizeof(bad), "{\"extra\": 1, %s", text + 1);
            spit(path, bad, strlen(bad));
            OC_CHECK_ERR(oc_plan_part_open(dir, 0, 2, &p, &err), OC_ERR_FORMAT, &err,
                         "unknown key 'extra'");
            OC_CHECK(strstr(err.msg, "partition.json") != NULL);
        }
        free(text);
    }
}

OC_TEST(cli_partition_and_info)
{
    const char *src = graph();
    if (!src || !getenv("OC_BIN"))
        OC_SKIP("no dataset or no OC_BIN");
    char out[800], bad[800], path[900];
    snprintf(out, sizeof(out), "%s/cli-p2", oc_test_tmpdir());
    struct proc_run r;
    const char *no_parts[] = {"partition", src, out, "--quiet", NULL};
    proc_run_cli(no_parts, 60, &r);
    OC_CHECK(r.code == 2 && r.err && strstr(r.err, "--parts N is required"));
    OC_CHECK(!oc_path_exists(out));
    proc_run_free(&r);
    const char *one[] = {"partition", src, out, "--parts", "1", "--quiet", NULL};
    proc_run_cli(one, 60, &r);
    OC_CHECK(r.code == 2 && r.err && strstr(r.err, "--parts 1: from 2 to 256"));
    proc_run_free(&r);
    const char *two[] = {"partition", src, out, "--parts", "2", "--quiet", NULL};
    proc_run_cli(two, 120, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, "into 2 parts"));
    proc_run_free(&r);
    const char *info[] = {"info", out, NULL};
    proc_run_cli(info, 60, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, "2 parts (offcore partition, run ") &&
             strstr(r.out, "part 1 ") && strstr(r.out, "features     none"));
    proc_run_free(&r);
    /* a damaged part: info refuses, naming the file */
    snprintf(bad, sizeof(bad), "%s/cli-bad", oc_test_tmpdir());
    copy_tree(out, bad);
    snprintf(path, sizeof(path), "%s/part-1/owner.npy", bad);
    OC_CHECK(truncate(path, 5000) == 0);
    const char *info_bad[] = {"info", bad, NULL};
    proc_run_cli(info_bad, 60, &r);
    OC_CHECK(r.code == 1 && r.err && strstr(r.err, "cli-bad/part-1/owner.npy: truncated"));
    proc_run_free(&r);
}

OC_TEST_MAIN()
