/*
 * test_layout.c — feature layouts (docs/FORMAT.md version 2, `offcore
 * layout`): each order is a permutation whose rewritten rows hold each
 * node's features, in bands smaller than the file and composed over a
 * layout already there; on a graph with planted communities the community
 * orders (METIS parts, label propagation) bring a third of the edges' rows within one
 * merged read; every strategy trains on a laid-out copy to the
 * weights `memory` trains on the original, under a budget that forces disk
 * reads; damaged or inconsistent layouts are refused naming the file; a
 * store budget smaller than the map is refused saying so; the CLI refuses
 * bad arguments; `generate --layout` and `import --layout` write what
 * generate or import then `layout` write, and leave no temporary behind.
 *
 * Place in the data flow: tests of plan/order.c, dataset/relayout.c, the
 * manifest's version 2 and the store's row map (store/registry.c).
 * Thread-safety: single-threaded. Ownership: files live in oc_test_tmpdir().
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ds_util.h"
#include "gen_util.h"
#include "harness.h"
#include "import_fixture.h"
#include "offcore/generate.h"
#include "offcore/plan.h"
#include "offcore/store.h"
#include "offcore/train.h"
#include "proc_util.h"

/* The out-of-core test graph: 50000 nodes, 400-byte rows (20 MB of features). */
static const char *graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 50000;
    g.avg_degree = 6;
    g.feat_dim = 100;
    g.n_classes = 5;
    g.train_frac = 0.1;
    g.seed = 5;
    return gen_once(&g);
}

/* Lays src out in `order` into tmpdir/name (band_bytes per scan); the new path or NULL. */
static const char *lay_out(const char *src, int order, const char *name, uint64_t band_bytes)
{
    static char out[4][800];
    static int k;
    k = (k + 1) % 4;
    snprintf(out[k], sizeof(out[k]), "%s/%s", oc_test_tmpdir(), name);
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    int rc = oc_dataset_open(src, 0, &ds, &err);
    OC_CHECK_OK(rc, &err);
    struct oc_plan_order_opts o = {order, 1000, NULL, 0, NULL};
    if (rc == OC_OK) {
        rc = oc_plan_layout_dataset(ds, &o, out[k], band_bytes, NULL, &err);
        OC_CHECK_OK(rc, &err);
    }
    oc_dataset_free(ds);
    return rc == OC_OK ? out[k] : NULL;
}

/* Rows of `laid` whose node's features differ from `orig`'s (every node checked). */
static uint64_t rows_differing(const char *orig, const char *laid)
{
    struct oc_err err;
    struct oc_dataset *a = NULL, *b = NULL;
    char *fa = NULL, *fb = NULL;
    void *map = NULL;
    size_t la, lb;
    uint64_t bad = UINT64_MAX;
    OC_CHECK_OK(oc_dataset_open(orig, 0, &a, &err), &err);
    OC_CHECK_OK(oc_dataset_open(laid, 0, &b, &err), &err);
    if (!a || !b)
        goto out;
    const struct oc_manifest *m = oc_dataset_manifest(b);
    OC_CHECK_OK(oc_dataset_load_feature_rows(b, OC_DTYPE_U32, &map, "test", &err), &err);
    OC_CHECK_OK(oc_read_file(oc_dataset_path(a, OC_DS_FEATURES), 0, &fa, &la, &err), &err);
    OC_CHECK_OK(oc_read_file(oc_dataset_path(b, OC_DS_FEATURES), 0, &fb, &lb, &err), &err);
    if (!map || !fa || !fb || la != lb)
        goto out;
    uint64_t rb = (uint64_t)m->feat_dim * 4, moved = 0;
    bad = 0;
    for (uint64_t v = 0; v < m->n_nodes; v++) {
        uint64_t r = ((const uint32_t *)map)[v];
        bad += memcmp(fa + 4096 + v * rb, fb + 4096 + r * rb, rb) != 0;
        moved += r != v;
    }
    OC_CHECK(moved > m->n_nodes / 2); /* a layout, not the identity */
out:
    oc_free(map);
    oc_free(fa);
    oc_free(fb);
    oc_dataset_free(a);
    oc_dataset_free(b);
    return bad;
}

/* Under a budget the band is what the budget leaves after the layout's own buffers (the map to
   output rows of 8 bytes a node, its reads, a writer): 600,000 nodes make that map 4.6 MiB,
   more than a fixed reserve of 16 MiB left room for (such a reserve fails here, a 4 MiB writer
   past a 26 MiB budget), and the copy fits and is right. */
OC_TEST(the_band_leaves_room_for_the_layouts_own_buffers)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 600000;
    g.avg_degree = 2;
    g.feat_dim = 4;
    g.n_classes = 2;
    g.seed = 11;
    const char *src = gen_once(&g);
    OC_CHECK(src != NULL);
    if (!src)
        return;
    oc_mem_set_budget(oc_mem_used() + ((uint64_t)26 << 20)); /* a band of a few MiB */
    const char *laid = lay_out(src, OC_PLAN_ORDER_DEGREE, "band-room", OC_PLAN_LAYOUT_BAND_LEFT);
    oc_mem_set_budget(0);
    OC_CHECK(laid && rows_differing(src, laid) == 0);
}

OC_TEST(each_order_moves_every_row_with_its_node)
{
    const char *src = graph();
    OC_CHECK(src != NULL);
    if (!src)
        return;
    for (int order = 0; order < OC_PLAN_ORDER_COUNT; order++) {
        char name[64];
        snprintf(name, sizeof(name), "rows-%s", oc_plan_order_name(order));
        /* 2 MiB bands: the 20 MB file is read ten times, each band filled from every scan */
        const char *out = lay_out(src, order, name, 2u << 20);
        OC_CHECK(out != NULL);
        if (!out)
            continue;
        OC_CHECK(rows_differing(src, out) == 0);
        struct oc_err err;
        struct oc_dataset *a = NULL, *b = NULL;
        OC_CHECK_OK(oc_dataset_open(src, 0, &a, &err), &err);
        OC_CHECK_OK(oc_dataset_open(out, 0, &b, &err), &err);
        if (a && b) {
            const struct oc_manifest *ma = oc_dataset_manifest(a), *mb = oc_dataset_manifest(b);
            OC_CHECK(mb->version == 2 && strcmp(mb->layout, oc_plan_order_name(order)) == 0);
            OC_CHECK(ma->version == 1 && ma->layout[0] == '\0');
            for (int f = 0; f < OC_DS_FILE_COUNT; f++) /* all but the features: the same bytes */
                if (f != OC_DS_FEATURES && f != OC_DS_FEATURE_ROWS)
                    OC_CHECK(ma->files[f].crc32 == mb->files[f].crc32);
        }
        oc_dataset_free(a);
        oc_dataset_free(b);
    }
    /* a layout of a laid-out dataset composes: rows still follow their nodes */
    const char *deg = lay_out(src, OC_PLAN_ORDER_DEGREE, "rows-twice-1", 0);
    const char *twice = deg ? lay_out(deg, OC_PLAN_ORDER_BFS, "rows-twice-2", 3u << 20) : NULL;
    OC_CHECK(twice != NULL);
    if (twice)
        OC_CHECK(rows_differing(src, twice) == 0);
}

/* On a graph with planted communities the community orders bring neighbours' rows together. */
OC_TEST(community_orders_bring_neighbours_rows_together)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 20000;
    g.avg_degree = 10;
    g.feat_dim = 128; /* 512-byte rows: 128 per 64 KiB */
    g.communities = 100;
    char dir[800];
    snprintf(dir, sizeof(dir), "%s/comm", oc_test_tmpdir());
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    uint64_t *indptr = NULL, *row_of = NULL;
    void *indices = NULL;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
    OC_CHECK_OK(oc_dataset_open(dir, 0, &ds, &err), &err);
    if (!ds)
        return;
    OC_CHECK_OK(oc_dataset_load_indptr(ds, &indptr, &err), &err);
    OC_CHECK_OK(oc_dataset_load_indices(ds, OC_DTYPE_U32, &indices, &err), &err);
    row_of = oc_alloc(g.n_nodes * sizeof(uint64_t), "test", &err);
    struct oc_graph gr = {g.n_nodes, indptr, indices, NULL, NULL};
    double ids = oc_plan_order_locality(&gr, NULL, 512);
    for (int order = OC_PLAN_ORDER_PARTITION; order <= OC_PLAN_ORDER_LPA; order++) {
        struct oc_plan_order_opts o = {order, 100, NULL, 0, NULL};
        OC_CHECK_OK(oc_plan_feature_order(ds, &gr, &o, row_of, &err), &err);
        double loc = oc_plan_order_locality(&gr, row_of, 512);
        fprintf(stderr, "  %-9s edges within 64 KiB: %.3f (node id order %.3f)\n",
                oc_plan_order_name(order), loc, ids);
        OC_CHECK(loc > 0.3 && loc > 10 * ids);
    }
    oc_free(row_of);
    oc_free(indptr);
    oc_free(indices);
    oc_dataset_free(ds);
}

static void opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = 256;
    o->epochs = 2;
    o->hidden = 16;
    o->n_threads = 2;
    o->seed = 9;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->eval_batch_size = 256;
}

static void add_reads(void *p, const struct oc_train_epoch_stats *st)
{
    *(uint64_t *)p += st->store.read_bytes;
}

OC_TEST(every_strategy_on_a_layout_trains_bit_identical_to_memory)
{
    const char *src = graph();
    const char *laid = src ? lay_out(src, OC_PLAN_ORDER_BFS, "train-bfs", 0) : NULL;
    OC_CHECK(laid != NULL);
    if (!laid)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    opts(&o);
    OC_CHECK_OK(oc_train_run(src, &o, NULL, NULL, NULL, &ref, &err), &err);
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const char *name = oc_store_strategy_name(i);
        opts(&o);
        o.strategy = name;
        if (strcmp(name, "outre") == 0) /* without embeddings: a feature cache, exact */
            OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 0, &err), &err);
        /* as test_train_ooc's budgets (20 MB of features), and the map's 0.2 MB */
        o.mem_budget = strcmp(name, "memory") == 0    ? 0
                       : strcmp(name, "diskgnn") == 0 ? 36u << 20
                       : strcmp(name, "helios") == 0  ? 22u << 20
                                                      : 28u << 20;
        uint64_t read = 0;
        OC_CHECK_OK(oc_train_run(laid, &o, add_reads, &read, NULL, &res, &err), &err);
        fprintf(stderr, "  %-8s %s, %llu bytes read\n", name, res.weights_sha256,
                (unsigned long long)read);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        if (strcmp(name, "mmap") != 0 && strcmp(name, "memory") != 0)
            OC_CHECK(read > 0); /* the rows came through the map from disk */
    }
}

/* A small graph laid out (degree) into a fresh directory for one damage. */
static const char *small_layout(const char *name)
{
    static char src[800];
    if (!src[0]) {
        struct oc_generate_opts g;
        oc_generate_opts_default(&g);
        g.n_nodes = 3000;
        g.feat_dim = 8;
        snprintf(src, sizeof(src), "%s/small", oc_test_tmpdir());
        struct oc_err err;
        OC_CHECK_OK(oc_generate(&g, src, NULL, &err), &err);
    }
    return lay_out(src, OC_PLAN_ORDER_DEGREE, name, 0);
}

static void put_u32(const char *path, uint64_t index, uint32_t v)
{
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    fseek(f, (long)(4096 + 4 * index), SEEK_SET);
    fwrite(&v, 4, 1, f);
    fclose(f);
}

static uint32_t get_u32(const char *path, uint64_t index)
{
    uint32_t v = 0;
    FILE *f = fopen(path, "rb");
    OC_CHECK(f != NULL);
    if (f) {
        fseek(f, (long)(4096 + 4 * index), SEEK_SET);
        OC_CHECK(fread(&v, 4, 1, f) == 1);
        fclose(f);
    }
    return v;
}

static void expect_refused(const char *dir, const char *file, const char *substr)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    OC_CHECK_ERR(oc_dataset_open(dir, 0, &ds, &err), OC_ERR_FORMAT, &err, substr);
    OC_CHECK(ds == NULL);
    OC_CHECK(strstr(err.msg, file) != NULL);
    if (!strstr(err.msg, file))
        fprintf(stderr, "  (message: %s)\n", err.msg);
    oc_dataset_free(ds);
}

/* Rewrites manifest.json with `from` replaced by `to` (the first time it occurs). */
static void edit_manifest(const char *dir, const char *from, const char *to)
{
    struct oc_err err;
    char *text = NULL, buf[1 << 14];
    size_t len;
    OC_CHECK_OK(oc_read_file(path_in(dir, "manifest.json"), 0, &text, &len, &err), &err);
    char *at = text ? strstr(text, from) : NULL;
    OC_CHECK(at != NULL);
    if (at) {
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        OC_CHECK_OK(oc_write_file_atomic(path_in(dir, "manifest.json"), buf, strlen(buf), &err),
                    &err);
    }
    oc_free(text);
}

OC_TEST(damaged_layouts_are_refused_naming_the_file)
{
    const char *d;
    if ((d = small_layout("dmg-dup"))) { /* node 1 given node 0's row: resealed, so content */
        char p[1100];
        snprintf(p, sizeof(p), "%s/feature_rows.npy", d);
        put_u32(p, 1, get_u32(p, 0));
        reseal(d);
        expect_refused(d, p, "not a permutation");
    }
    if ((d = small_layout("dmg-range"))) {
        char p[1100];
        snprintf(p, sizeof(p), "%s/feature_rows.npy", d);
        put_u32(p, 7, 3000);
        reseal(d);
        expect_refused(d, p, "out of range");
    }
    if ((d = small_layout("dmg-crc"))) { /* two rows swapped: still a permutation, not the one */
        char p[1100];
        snprintf(p, sizeof(p), "%s/feature_rows.npy", d);
        uint32_t a = get_u32(p, 0), b = get_u32(p, 1);
        put_u32(p, 0, b);
        put_u32(p, 1, a);
        expect_refused(d, p, "checksum mismatch");
    }
    if ((d = small_layout("dmg-short"))) {
        char p[1100];
        snprintf(p, sizeof(p), "%s/feature_rows.npy", d);
        OC_CHECK(truncate(p, 4096 + 4 * 100) == 0);
        expect_refused(d, p, "truncated");
    }
    if ((d = small_layout("dmg-nokey"))) { /* version 2 without its layout's name */
        edit_manifest(d, "\"layout\"", "\"layouts\"");
        expect_refused(d, "manifest.json", "unknown key");
    }
    if ((d = small_layout("dmg-v1"))) { /* version 1 listing a map */
        edit_manifest(d, "\"version\":\t2", "\"version\":\t1");
        expect_refused(d, "manifest.json", "version 2 key");
    }
    if ((d = small_layout("dmg-name"))) {
        edit_manifest(d, "\"layout\":\t\"degree\"", "\"layout\":\t\"Degree!\"");
        expect_refused(d, "manifest.json", "'layout' must be");
    }
    if ((d = small_layout("dmg-v3"))) {
        edit_manifest(d, "\"version\":\t2", "\"version\":\t3");
        expect_refused(d, "manifest.json", "this build reads 1 and 2");
    }
}

OC_TEST(a_store_budget_below_the_map_is_refused)
{
    const char *d = small_layout("budget");
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(d, 0, &ds, &err), &err);
    if (!ds)
        return;
    struct oc_store_config c;
    memset(&c, 0, sizeof(c));
    c.ds = ds;
    c.mem_bytes = 4 * 3000; /* the map's exact size: nothing left for the strategy */
    uint32_t idx = 0;
    struct oc_store *s = NULL;
    OC_CHECK_OK(oc_store_strategy_find("direct", &idx, &err), &err);
    OC_CHECK_ERR(oc_store_open(idx, &c, &s, &err), OC_ERR_BUDGET, &err, "feature_rows.npy");
    OC_CHECK(s == NULL);
    oc_dataset_free(ds);
}

OC_TEST(cli_layout_refuses_bad_arguments)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *src = small_layout("cli-src");
    if (!src)
        return;
    char out[900];
    snprintf(out, sizeof(out), "%s/cli-out", oc_test_tmpdir());
    struct proc_run r;
    const char *bad_order[] = {"layout", src, out, "--order", "random", NULL};
    proc_run_cli(bad_order, 60, &r);
    OC_CHECK(r.code == 2);
    OC_CHECK(access(out, F_OK) != 0);
    proc_run_free(&r);
    const char *exists[] = {"layout", src, src, "--quiet", NULL}; /* OUT exists: kept whole */
    proc_run_cli(exists, 60, &r);
    OC_CHECK(r.code == 1 && r.err && strstr(r.err, src));
    proc_run_free(&r);
    const char *ok[] = {"layout", src, out, "--order", "bfs", "--quiet", NULL};
    proc_run_cli(ok, 60, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    const char *info[] = {"info", out, NULL};
    proc_run_cli(info, 60, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, "layout 'bfs'"));
    proc_run_free(&r);
}

/* Whether the files name of directories a and b hold the same bytes. */
static int same_file(const char *a, const char *b, const char *name)
{
    char pa[1000], pb[1000];
    snprintf(pa, sizeof(pa), "%s/%s", a, name);
    snprintf(pb, sizeof(pb), "%s/%s", b, name);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Entries of dir whose name starts with prefix ".tmp" after base (leftover temporaries). */
static int temporaries_of(const char *dir, const char *base)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c '^%s\\.tmp' >/dev/null", dir, base);
    return system(cmd) == 0;
}

/* OUT written by `cmd --layout degree` equals `cmd` then `layout --order degree`. */
static void check_laid_out_on_the_way(const char *dir, const char *const *with,
                                      const char *const *without, const char *base)
{
    char a[900], b[900], c[900];
    snprintf(a, sizeof(a), "%s/%s-a", dir, base);
    snprintf(b, sizeof(b), "%s/%s-b", dir, base);
    snprintf(c, sizeof(c), "%s/%s-c", dir, base);
    struct proc_run r;
    proc_run_cli(with, 120, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, "laid out in order degree"));
    proc_run_free(&r);
    proc_run_cli(without, 120, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    const char *lay[] = {"layout", b, c, "--order", "degree", "--quiet", NULL};
    proc_run_cli(lay, 120, &r);
    if (r.code != 0)
        fprintf(stderr, "  layout: %s\n", r.err ? r.err : "(no stderr)");
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    OC_CHECK(same_file(a, c, "features.npy"));
    OC_CHECK(same_file(a, c, "feature_rows.npy"));
    OC_CHECK(!same_file(a, b, "features.npy"));
    char a_base[64];
    snprintf(a_base, sizeof(a_base), "%s-a", base);
    OC_CHECK(!temporaries_of(dir, a_base));
    proc_run_cli(with, 60, &r); /* OUT exists: refused before anything is written */
    OC_CHECK(r.code == 1 && r.err && strstr(r.err, "already exists"));
    OC_CHECK(!temporaries_of(dir, a_base));
    proc_run_free(&r);
}

OC_TEST(generate_and_import_lay_out_on_the_way)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *dir = oc_test_tmpdir();
    char a[900], b[900], src[900];
    snprintf(a, sizeof(a), "%s/gl-a", dir);
    snprintf(b, sizeof(b), "%s/gl-b", dir);
    const char *gen_with[] = {"generate", "--nodes",  "3000",   "--feat-dim", "8", "--seed",
                              "3",        "--layout", "degree", "--quiet",    a,   NULL};
    const char *gen_without[] = {"generate", "--nodes", "3000", "--feat-dim", "8", "--seed",
                                 "3",        "--quiet", b,      NULL};
    check_laid_out_on_the_way(dir, gen_with, gen_without, "gl");
    snprintf(src, sizeof(src), "%s/il-src", dir);
    fx_write(src, "meta.txt", "num_nodes 6\nnum_features 2\nnum_classes 2\n");
    fx_write(src, "edges.txt", "0 5\n1 5\n2 5\n3 5\n4 1\n");
    fx_write(src, "features.txt", "0 0 1\n1 1 0.5\n5 0 2\n");
    fx_write(src, "labels.txt", "0\n1\n0\n1\n0\n1\n");
    fx_write(src, "train_idx.txt", "0\n1\n");
    snprintf(a, sizeof(a), "%s/il-a", dir);
    snprintf(b, sizeof(b), "%s/il-b", dir);
    const char *imp_with[] = {"import", "text", src, a, "--layout", "degree", "--quiet", NULL};
    const char *imp_without[] = {"import", "text", src, b, "--quiet", NULL};
    check_laid_out_on_the_way(dir, imp_with, imp_without, "il");
    struct proc_run r; /* --part-nodes alone would be ignored: refused */
    snprintf(a, sizeof(a), "%s/gl-pn", dir);
    const char *pn[] = {"generate", "--nodes", "100", "--part-nodes", "10", a, NULL};
    proc_run_cli(pn, 60, &r);
    OC_CHECK(r.code == 2 && r.err && strstr(r.err, "--part-nodes needs --layout"));
    OC_CHECK(access(a, F_OK) != 0);
    proc_run_free(&r);
}

OC_TEST_MAIN()
