/*
 * test_edge_sort.c — the external edge sorter against a naive in-memory
 * reference: random edge lists with duplicates and self-loops under every
 * combination of symmetrize / keep_duplicates / remove_self_loops, in memory
 * and with a tiny memory limit (many buckets, recursive splits, a hub, runs
 * of identical edges), the wide record layout, bad ids, and fault loops.
 *
 * Place in the data flow: tests of dataset (edge sorter → builder).
 * Thread-safety: single-threaded.
 * Ownership: every array is oc_alloc'd and freed by the test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/edge_sort_int.h"
#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/io.h"
#include "offcore/rng.h"

/* Entries of dir whose name starts with prefix ("" = all), or -1 if dir cannot be read. */
static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
            n++;
    }
    closedir(d);
    return n;
}

struct edges {
    uint64_t *src, *dst;
    size_t n;
};

static void edges_free(struct edges *e)
{
    free(e->src);
    free(e->dst);
    memset(e, 0, sizeof(*e));
}

/* Random edges; `hub` >= 0 receives `hub_share` of them (with many duplicates). */
static struct edges random_edges(uint64_t seed, uint64_t n_nodes, size_t n, int64_t hub,
                                 double hub_share)
{
    struct edges e = {malloc(n * 8), malloc(n * 8), n};
    struct oc_rng r;
    oc_rng_init(&r, seed, 77, 0, 0);
    for (size_t i = 0; i < n; i++) {
        e.src[i] = oc_rng_below(&r, n_nodes);
        if (hub >= 0 && oc_rng_uniform(&r) < hub_share)
            e.dst[i] = (uint64_t)hub;
        else
            e.dst[i] = oc_rng_below(&r, n_nodes);
        if (i % 17 == 0)
            e.dst[i] = e.src[i]; /* self-loops */
        if (i % 13 == 0 && i > 0) {
            e.src[i] = e.src[i - 1]; /* duplicates */
            e.dst[i] = e.dst[i - 1];
        }
    }
    return e;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1])
        return x[1] < y[1] ? -1 : 1;
    return 0;
}

/* The reference: indptr (n_nodes + 1) and indices, malloc'd. */
static void reference(const struct edges *e, const struct oc_edge_sort_opts *o, uint64_t **indptr,
                      uint64_t **indices, uint64_t *n_out)
{
    uint64_t *rec = malloc(e->n * 2 * 2 * 8 + 16);
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++) {
        uint64_t u = e->src[i], v = e->dst[i];
        if (u == v && o->remove_self_loops)
            continue;
        rec[2 * n] = v;
        rec[2 * n + 1] = u;
        n++;
        if (o->symmetrize && u != v) {
            rec[2 * n] = u;
            rec[2 * n + 1] = v;
            n++;
        }
    }
    qsort(rec, n, 16, cmp_pair);
    uint64_t *ip = calloc(o->n_nodes + 1, 8);
    uint64_t *ix = malloc(n * 8 + 8);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!o->keep_duplicates && i > 0 && cmp_pair(rec + 2 * i, rec + 2 * (i - 1)) == 0)
            continue;
        ix[m++] = rec[2 * i + 1];
        ip[rec[2 * i] + 1]++;
    }
    for (uint64_t v = 0; v < o->n_nodes; v++)
        ip[v + 1] += ip[v];
    free(rec);
    *indptr = ip;
    *indices = ix;
    *n_out = m;
}

/* Sorts e with o (mem, wide) through a builder in dir and compares with the reference. */
static void check_sort(const struct edges *e, const struct oc_edge_sort_opts *o, int wide,
                       size_t batch)
{
    struct oc_err err;
    oc_err_clear(&err);
    uint64_t live = oc_mem_n_live();
    char out[700];
    snprintf(out, sizeof(out), "%s/ds", oc_test_tmpdir());
    struct oc_ds_builder *b = NULL;
    struct oc_edge_sorter *s = NULL;
    OC_CHECK_OK(oc_ds_builder_new(out, &b, &err), &err);
    if (!b)
        return;
    OC_CHECK_OK(oc_edge_sorter_new(o, oc_ds_builder_tmp_dir(b), &s, &err), &err);
    if (!s) {
        oc_ds_builder_free(b);
        return;
    }
    if (wide)
        oc_edge_sorter_force_wide(s);
    for (size_t i = 0; i < e->n; i += batch) {
        size_t m = e->n - i < batch ? e->n - i : batch;
        OC_CHECK_OK(oc_edge_sorter_add(s, e->src + i, e->dst + i, m, &err), &err);
    }
    OC_CHECK_OK(oc_edge_sorter_finish(s, b, NULL, &err), &err);
    oc_edge_sorter_free(s);

    uint64_t *ip_ref, *ix_ref, n_ref;
    reference(e, o, &ip_ref, &ix_ref, &n_ref);
    const struct oc_manifest *m = oc_ds_builder_manifest(b);
    OC_CHECK(m->n_edges == n_ref);
    OC_CHECK(m->index_dtype == (wide ? OC_DTYPE_U64 : OC_DTYPE_U32));

    char path[800];
    void *ip = NULL, *ix = NULL;
    uint64_t rows, cols;
    snprintf(path, sizeof(path), "%s/indptr.npy", oc_ds_builder_tmp_dir(b));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_U64, &ip, &rows, &cols, &err), &err);
    OC_CHECK(rows == o->n_nodes + 1);
    if (ip && rows == o->n_nodes + 1)
        OC_CHECK(memcmp(ip, ip_ref, rows * 8) == 0);
    snprintf(path, sizeof(path), "%s/indices.npy", oc_ds_builder_tmp_dir(b));
    struct oc_npy_header h;
    OC_CHECK_OK(oc_npy_read_header(path, &h, &err), &err);
    OC_CHECK(h.dtype == (wide ? OC_DTYPE_U64 : OC_DTYPE_U32));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_U64, &ix, &rows, &cols, &err), &err);
    OC_CHECK(rows == n_ref);
    if (ix && rows == n_ref && n_ref > 0)
        OC_CHECK(memcmp(ix, ix_ref, n_ref * 8) == 0);
    /* No scratch left in the dataset's directory: only the two arrays (and the marker). */
    OC_CHECK(count_entries(oc_ds_builder_tmp_dir(b), "") == 3);
    oc_free(ip);
    oc_free(ix);
    free(ip_ref);
    free(ix_ref);
    oc_ds_builder_free(b);
    OC_CHECK(!oc_path_exists(out));
    OC_CHECK(oc_mem_n_live() == live);
}

static void check_all_modes(const struct edges *e, uint64_t n_nodes, uint64_t mem, int wide)
{
    for (int mode = 0; mode < 8; mode++) {
        struct oc_edge_sort_opts o = {
            .n_nodes = n_nodes,
            .symmetrize = mode & 1,
            .keep_duplicates = (mode >> 1) & 1,
            .remove_self_loops = (mode >> 2) & 1,
            .mem_bytes = mem,
        };
        check_sort(e, &o, wide, 1000 + (size_t)mode * 777);
    }
}

OC_TEST(sort_in_memory_all_modes)
{
    struct edges e = random_edges(1, 500, 4000, -1, 0);
    check_all_modes(&e, 500, 0, 0);
    edges_free(&e);
}

OC_TEST(sort_tiny_memory_many_buckets)
{
    /* 32 KiB: ~1300 records per group, so 30000 edges spill and group many buckets. */
    struct edges e = random_edges(2, 5000, 30000, -1, 0);
    check_all_modes(&e, 5000, 32 << 10, 0);
    edges_free(&e);
}

OC_TEST(sort_skewed_hub_recursive_split)
{
    /* Node 4321 receives ~70% of 20000 edges: its bucket must be split by src. */
    struct edges e = random_edges(3, 10000, 20000, 4321, 0.7);
    check_all_modes(&e, 10000, 32 << 10, 0);
    edges_free(&e);
}

OC_TEST(sort_identical_edges_beyond_memory)
{
    /* 6000 copies of one edge (plus noise): a bucket of identical records. */
    struct edges e = random_edges(4, 300, 8000, -1, 0);
    for (size_t i = 0; i < 6000; i++) {
        e.src[i] = 5;
        e.dst[i] = 9;
    }
    check_all_modes(&e, 300, 32 << 10, 0);
    edges_free(&e);
}

OC_TEST(sort_wide_node_range)
{
    /* Many nodes, few edges: the counters, not the records, force splits. */
    struct edges e = random_edges(5, 400000, 3000, -1, 0);
    struct oc_edge_sort_opts o = {.n_nodes = 400000, .symmetrize = 1, .mem_bytes = 32 << 10};
    check_sort(&e, &o, 0, 3000);
    edges_free(&e);
}

OC_TEST(sort_wide_records)
{
    struct edges e = random_edges(6, 3000, 20000, 17, 0.5);
    check_all_modes(&e, 3000, 32 << 10, 1);
    check_all_modes(&e, 3000, 0, 1);
    edges_free(&e);
}

OC_TEST(sort_empty_and_single)
{
    struct edges e = {malloc(8), malloc(8), 0};
    struct oc_edge_sort_opts o = {.n_nodes = 10, .symmetrize = 1};
    check_sort(&e, &o, 0, 1);
    e.src[0] = 3;
    e.dst[0] = 3;
    e.n = 1;
    check_sort(&e, &o, 0, 1);
    o.remove_self_loops = 1;
    check_sort(&e, &o, 0, 1);
    edges_free(&e);
}

OC_TEST(sort_rejects_out_of_range_and_misuse)
{
    struct oc_err err;
    oc_err_clear(&err);
    uint64_t live = oc_mem_n_live();
    struct oc_edge_sort_opts o = {.n_nodes = 10};
    struct oc_edge_sorter *s = NULL;
    OC_CHECK_OK(oc_edge_sorter_new(&o, oc_test_tmpdir(), &s, &err), &err);
    uint64_t src[3] = {1, 2, 3}, dst[3] = {4, 10, 5};
    OC_CHECK_ERR(oc_edge_sorter_add(s, src, dst, 3, &err), OC_ERR_ARG, &err, "2 -> 10");
    OC_CHECK(strstr(err.msg, "edge 1 ") != NULL);
    src[1] = 99;
    dst[1] = 1;
    OC_CHECK_ERR(oc_edge_sorter_add(s, src, dst, 3, &err), OC_ERR_ARG, &err, "out of range");
    oc_edge_sorter_free(s);
    OC_CHECK(oc_mem_n_live() == live);
}

/* Sorts `e` with faults armed; returns whether the fault fired. */
static int sort_with_fault(const struct edges *e, int mode, enum oc_fault_kind kind, uint64_t nth,
                           int errv, uint64_t mem)
{
    struct oc_err err;
    oc_err_clear(&err);
    uint64_t live = oc_mem_n_live();
    char out[700];
    snprintf(out, sizeof(out), "%s/ds", oc_test_tmpdir());
    struct oc_ds_builder *b = NULL;
    struct oc_edge_sorter *s = NULL;
    struct oc_edge_sort_opts o = {.n_nodes = 300, .symmetrize = 1, .mem_bytes = mem};
    int rc = oc_ds_builder_new(out, &b, &err);
    OC_CHECK(rc == OC_OK);
    if (rc != OC_OK)
        return 0;
    char tmp[800];
    snprintf(tmp, sizeof(tmp), "%s", oc_ds_builder_tmp_dir(b));
    fault_arm_mode(mode, kind, nth, errv);
    rc = oc_edge_sorter_new(&o, tmp, &s, &err);
    for (size_t i = 0; rc == OC_OK && i < e->n; i += 1000)
        rc = oc_edge_sorter_add(s, e->src + i, e->dst + i, e->n - i < 1000 ? e->n - i : 1000, &err);
    if (rc == OC_OK)
        rc = oc_edge_sorter_finish(s, b, NULL, &err);
    int fired = oc_fault_fired(kind);
    oc_fault_disarm_all();
    if (fired && rc == OC_OK) {
        fprintf(stderr, "  %s fault %d #%llu fired but the sort succeeded\n", fault_mode_name(mode),
                (int)kind, (unsigned long long)nth);
        OC_CHECK(rc != OC_OK);
    }
    if (!fired)
        OC_CHECK_OK(rc, &err);
    oc_edge_sorter_free(s);
    /* The sorter's scratch directory is gone even though the builder is still alive. */
    OC_CHECK(count_entries(tmp, "edge-sort") == 0);
    oc_ds_builder_free(b);
    if (oc_mem_n_live() != live) {
        fprintf(stderr, "  leak after %s fault %d #%llu: %s\n", fault_mode_name(mode), (int)kind,
                (unsigned long long)nth, err.msg);
        OC_CHECK(oc_mem_n_live() == live);
    }
    return fired;
}

OC_TEST(sort_fault_loops)
{
    /* 300 nodes, 2500 edges, 32 KiB: a few spills, a hub split, the scratch copy. */
    struct edges e = random_edges(7, 300, 2500, 11, 0.6);
    const struct {
        enum oc_fault_kind kind;
        int errv;
    } faults[] = {{OC_FAULT_ALLOC, ENOMEM}, {OC_FAULT_READ, EIO},  {OC_FAULT_READ, 0},
                  {OC_FAULT_WRITE, ENOSPC}, {OC_FAULT_WRITE, EIO}, {OC_FAULT_OPEN, EMFILE}};
    for (size_t fm = 0; fm < FAULT_MODE_COUNT * sizeof(faults) / sizeof(faults[0]); fm++) {
        size_t f = fm / FAULT_MODE_COUNT;
        int mode = (int)(fm % FAULT_MODE_COUNT);
        /* Every one of the first operations, then a sparser sample up to the last. */
        uint64_t nth = 1;
        while (nth < 1000000 &&
               sort_with_fault(&e, mode, faults[f].kind, nth, faults[f].errv, 32 << 10))
            nth += nth < 24 ? 1 : nth / 8;
        OC_CHECK(nth > 1); /* each kind of operation happens at least once */
    }
    edges_free(&e);
}

OC_TEST_MAIN()
