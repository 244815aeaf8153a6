/*
 * test_sample_topo_disk.c — on-disk topology (`--topology disk`): sampled and
 * full-layer batches bit-identical to in-memory topology for every cache size
 * (none, part, all), thread count (1 to 3), index width (u32, u64), io_uring
 * or pread, and lists longer than one read; the neighbor cache holds exactly
 * the top of the in-degree ranking; traffic counters; budget, argument and
 * format errors; a file truncated under a running sampler; read and
 * allocation faults with no leak.
 *
 * Place in the data flow: tests of sample (over dataset and io).
 * Thread-safety: single test thread; pools of 1 to 3 workers inside.
 * Ownership: every object created here is freed here; leak checks use
 * oc_mem_n_live. In-memory reference graphs come from malloc (sample_util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <unistd.h>

#include "fault_util.h"
#include "offcore/generate.h"
#include "sample_util.h"

/* ---- fixtures ------------------------------------------------------------ */

/* A generated dataset (power-law degrees, u32 ids), made once per run. */
static const char *gen_dataset(void)
{
    static char dir[700];
    if (dir[0])
        return dir;
    snprintf(dir, sizeof(dir), "%s/gen", oc_test_tmpdir());
    struct oc_generate_opts o;
    oc_generate_opts_default(&o);
    o.n_nodes = 7000;
    o.avg_degree = 14;
    o.feat_dim = 0;
    o.n_classes = 4;
    o.seed = 11;
    o.n_threads = 1;
    o.mem_bytes = 8u << 20;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&o, dir, NULL, &err), &err);
    return dir;
}

/* Loads a dataset's topology into a tgraph (malloc'd) as the in-memory reference. */
static void tgraph_load(struct tgraph *t, const struct oc_dataset *ds)
{
    struct oc_err err;
    uint64_t *indptr = NULL;
    void *idx = NULL;
    OC_CHECK_OK(oc_dataset_load_indptr(ds, &indptr, &err), &err);
    OC_CHECK_OK(oc_dataset_load_indices(ds, OC_DTYPE_U64, &idx, &err), &err);
    tgraph_from(t, oc_dataset_manifest(ds)->n_nodes, indptr, idx, 0);
    oc_free(indptr);
    oc_free(idx);
}

/* Writes t's indices as a .npy (4096-byte header) at dir/name; returns the path (static). */
static const char *write_npy(const struct tgraph *t, const char *dir, const char *name)
{
    static char path[800];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct oc_err err;
    uint64_t m = t->indptr[t->g.n_nodes];
    struct oc_npy_writer *w;
    OC_CHECK_OK(oc_npy_writer_open(path, t->idx32 ? OC_DTYPE_U32 : OC_DTYPE_U64, 1, &m, &w, &err),
                &err);
    OC_CHECK_OK(oc_npy_writer_append(w, t->idx32 ? (const void *)t->idx32 : t->idx64,
                                     m * (t->idx32 ? 4 : 8), &err),
                &err);
    OC_CHECK_OK(oc_npy_writer_close(w, NULL, NULL, &err), &err);
    return path;
}

static uint64_t fixed_bytes(uint64_t n)
{
    return (n + 1) * 8 + n * 8;
}

static struct oc_topo_disk *open_file(const struct tgraph *t, const char *path, uint64_t off,
                                      uint64_t budget, unsigned depth, uint64_t bounce)
{
    struct oc_err err;
    struct oc_topo_disk_opts o = {
        .budget_bytes = budget, .io_depth = depth, .io_bounce_bytes = bounce};
    struct oc_topo_disk *d = NULL;
    OC_CHECK_OK(oc_sample_topo_disk_new_file(path, off, t->idx32 ? OC_DTYPE_U32 : OC_DTYPE_U64,
                                             t->g.n_nodes, t->indptr, &o, &d, &err),
                &err);
    return d;
}

static struct oc_sampler *sampler_over(const struct oc_graph *g, uint32_t n_layers,
                                       const int32_t *fanouts, struct oc_pool *pool)
{
    struct oc_err err;
    struct oc_sample_opts o = {.n_layers = n_layers, .seed = 77};
    memcpy(o.fanouts, fanouts, n_layers * sizeof(int32_t));
    struct oc_sampler *s = NULL;
    OC_CHECK_OK(oc_sample_sampler_new(g, &o, pool, &s, &err), &err);
    return s;
}

#define N_BATCHES 3
#define BATCH     700

/*
 * Samples N_BATCHES batches and full-layer blocks over t in memory and over
 * d at 1, 2 and 3 threads; every batch must be bit-identical. Returns the
 * summed traffic of the disk samplers.
 */
static struct oc_topo_disk_stats compare_with_memory(const struct tgraph *t,
                                                     const struct oc_topo_disk *d,
                                                     uint32_t n_layers, const int32_t *fanouts)
{
    struct oc_err err;
    struct oc_topo_disk_stats sum = {0};
    struct oc_graph gd;
    oc_sample_topo_disk_graph(d, &gd);
    uint64_t n = t->g.n_nodes;
    uint64_t *perm = tperm(n, 5);
    const int32_t all[1] = {OC_SAMPLE_ALL};
    struct oc_sample_batch ref[N_BATCHES + 1], b;
    oc_sample_batch_init(&b);
    struct oc_sampler *sm = sampler_over(&t->g, n_layers, fanouts, NULL);
    struct oc_sampler *fm = sampler_over(&t->g, 1, all, NULL);
    for (uint64_t i = 0; i < N_BATCHES; i++) {
        oc_sample_batch_init(&ref[i]);
        OC_CHECK_OK(oc_sample_neighbors(sm, 2, i, perm + i * BATCH, BATCH, &ref[i], &err), &err);
        OC_CHECK(check_batch(t, &ref[i], perm + i * BATCH, BATCH, n_layers, fanouts) == 0);
    }
    oc_sample_batch_init(&ref[N_BATCHES]);
    OC_CHECK_OK(oc_sample_full_layer(fm, perm, 2000, &ref[N_BATCHES], &err), &err);
    for (unsigned nt = 1; nt <= 3; nt++) {
        struct oc_pool *pool;
        OC_CHECK_OK(oc_pool_new(nt, &pool, &err), &err);
        struct oc_sampler *sd = sampler_over(&gd, n_layers, fanouts, pool);
        struct oc_sampler *fd = sampler_over(&gd, 1, all, pool);
        for (int rep = 0; rep < 2 && sd && fd; rep++) {
            for (uint64_t i = 0; i < N_BATCHES; i++) {
                OC_CHECK_OK(oc_sample_neighbors(sd, 2, i, perm + i * BATCH, BATCH, &b, &err), &err);
                OC_CHECK(oc_sample_batch_equal(&ref[i], &b));
            }
            OC_CHECK_OK(oc_sample_full_layer(fd, perm, 2000, &b, &err), &err);
            OC_CHECK(oc_sample_batch_equal(&ref[N_BATCHES], &b));
        }
        struct oc_topo_disk_stats st;
        if (sd) {
            oc_sample_sampler_topo_stats(sd, &st);
            sum.n_lookups += st.n_lookups;
            sum.n_hits += st.n_hits;
            sum.requested_bytes += st.requested_bytes;
            sum.read_bytes += st.read_bytes;
            sum.n_reads += st.n_reads;
        }
        oc_sample_sampler_free(sd);
        oc_sample_sampler_free(fd);
        oc_pool_free(pool);
    }
    for (uint64_t i = 0; i <= N_BATCHES; i++)
        oc_sample_batch_deinit(&ref[i]);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(sm);
    oc_sample_sampler_free(fm);
    free(perm);
    return sum;
}

/* ---- identical batches --------------------------------------------------- */

OC_TEST(generated_dataset_same_batches_as_memory)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(gen_dataset(), 0, &ds, &err), &err);
    if (!ds)
        return;
    uint64_t base = oc_mem_n_live();
    struct tgraph t;
    tgraph_load(&t, ds);
    uint64_t n = t.g.n_nodes, m = t.indptr[n];
    const int32_t f[3] = {4, 7, 12};
    const uint64_t budgets[3] = {fixed_bytes(n), fixed_bytes(n) + m * 4 / 3, UINT64_MAX};
    for (int k = 0; k < 3; k++) {
        struct oc_topo_disk_opts o = {.budget_bytes = budgets[k]};
        struct oc_topo_disk *d = NULL;
        OC_CHECK_OK(oc_sample_topo_disk_new(ds, &o, &d, &err), &err);
        if (!d)
            continue;
        struct oc_topo_disk_info info;
        oc_sample_topo_disk_info(d, &info);
        OC_CHECK(info.n_nodes == n && info.n_edges == m && info.index_bytes == 4);
        OC_CHECK(info.indptr_bytes + info.table_bytes + info.cache_bytes <= budgets[k]);
        struct oc_topo_disk_stats st = compare_with_memory(&t, d, 3, f);
        OC_CHECK(st.n_lookups > 0 && st.n_hits <= st.n_lookups);
        if (k == 0) { /* nothing cached: every list comes from disk */
            OC_CHECK(info.n_cached_nodes == 0 && info.cache_bytes == 0);
            OC_CHECK(st.n_hits == 0 && st.n_reads > 0 && st.read_bytes >= st.requested_bytes);
        } else if (k == 1) {
            OC_CHECK(info.n_cached_nodes > 0 && info.n_cached_edges < m);
            OC_CHECK(st.n_hits > 0 && st.n_hits < st.n_lookups && st.n_reads > 0);
        } else { /* everything cached: hit ratio 1, no read after open, no table */
            OC_CHECK(info.n_cached_edges == m && info.cache_bytes == m * 4);
            OC_CHECK(info.table_bytes == 0);
            OC_CHECK(info.build_read_bytes >= m * 4 && info.build_reads > 0);
            OC_CHECK(st.n_hits == st.n_lookups && st.n_reads == 0 && st.read_bytes == 0);
        }
        struct oc_graph g;
        oc_sample_topo_disk_graph(d, &g);
        OC_CHECK_OK(oc_sample_graph_check(&g, &err), &err);
        oc_sample_topo_disk_free(d);
    }
    tgraph_free(&t);
    OC_CHECK(oc_mem_n_live() == base);
    oc_dataset_free(ds);
}

OC_TEST(u64_ids_and_unaligned_offset_same_batches)
{
    const char *dir = oc_test_tmpdir();
    for (int wide = 0; wide <= 1; wide++) {
        struct tgraph t;
        tgraph_random(&t, 5000, 400, 21, wide);
        uint64_t n = t.g.n_nodes, m = t.indptr[n], es = wide ? 8 : 4;
        /* u64 through a .npy; u32 at byte 100 of a raw file (reads are not page-aligned) */
        const char *path;
        uint64_t off;
        if (wide) {
            path = write_npy(&t, dir, "idx64.npy");
            off = OC_NPY_HEADER_BYTES;
        } else {
            static char raw[800];
            snprintf(raw, sizeof(raw), "%s/idx32.raw", dir);
            FILE *fp = fopen(raw, "wb");
            char junk[100] = {0};
            OC_CHECK(fp && fwrite(junk, 1, 100, fp) == 100 && fwrite(t.idx32, 4, m, fp) == m &&
                     fclose(fp) == 0);
            path = raw;
            off = 100;
        }
        const int32_t f[2] = {3, 25};
        const uint64_t budgets[3] = {fixed_bytes(n), fixed_bytes(n) + m * es / 4, UINT64_MAX};
        for (int k = 0; k < 3; k++) {
            struct oc_topo_disk *d = open_file(&t, path, off, budgets[k], 0, 0);
            if (!d)
                continue;
            struct oc_topo_disk_stats st = compare_with_memory(&t, d, 2, f);
            OC_CHECK(k < 2 ? st.n_reads > 0 : st.n_reads == 0);
            oc_sample_topo_disk_free(d);
        }
        tgraph_free(&t);
    }
}

OC_TEST(small_staging_and_pread_same_batches)
{
    /* a 4 KiB staging area, 2 reads in flight, then the pread fallback */
    const char *dir = oc_test_tmpdir();
    struct tgraph t;
    tgraph_random(&t, 4000, 3000, 4, 0);
    const char *path = write_npy(&t, dir, "indices.npy");
    const int32_t f[2] = {40, 6};
    for (int no_uring = 0; no_uring <= 1; no_uring++) {
        if (no_uring)
            setenv("OC_NO_URING", "1", 1);
        struct oc_topo_disk *d =
            open_file(&t, path, OC_NPY_HEADER_BYTES, fixed_bytes(t.g.n_nodes) + 20000, 2, 4096);
        if (d) {
            struct oc_topo_disk_stats st = compare_with_memory(&t, d, 2, f);
            OC_CHECK(st.n_reads > 0 && st.n_hits > 0);
        }
        oc_sample_topo_disk_free(d);
    }
    unsetenv("OC_NO_URING");
    tgraph_free(&t);
}

/* Node 1 has every other node as in-neighbor (1.2 MB of u32: more than one 1 MiB read). */
static void star_graph(struct tgraph *t, uint64_t n)
{
    uint64_t *indptr = malloc((n + 1) * sizeof(uint64_t));
    uint64_t *idx = malloc((3 * n) * sizeof(uint64_t));
    uint64_t m = 0;
    indptr[0] = 0;
    for (uint64_t v = 0; v < n; v++) {
        if (v == 1) {
            for (uint64_t u = 0; u < n; u++)
                if (u != 1)
                    idx[m++] = u;
        } else {
            idx[m++] = 1;
            if (v % 3 == 0 && v + 1 < n)
                idx[m++] = v + 1;
        }
        indptr[v + 1] = m;
    }
    tgraph_from(t, n, indptr, idx, 0);
    free(indptr);
    free(idx);
}

OC_TEST(hub_longer_than_one_read)
{
    const char *dir = oc_test_tmpdir();
    struct tgraph t;
    star_graph(&t, 300001);
    const char *path = write_npy(&t, dir, "star.npy");
    struct oc_err err;
    const int32_t all[1] = {OC_SAMPLE_ALL};
    const int32_t f[2] = {2, 50};
    const uint64_t seeds[3] = {1, 7, 299999};
    for (unsigned nt = 1; nt <= 2; nt++) {
        struct oc_pool *pool;
        OC_CHECK_OK(oc_pool_new(nt, &pool, &err), &err);
        struct oc_topo_disk *d =
            open_file(&t, path, OC_NPY_HEADER_BYTES, fixed_bytes(t.g.n_nodes), 0, 64 << 10);
        struct oc_graph gd;
        oc_sample_topo_disk_graph(d, &gd);
        struct oc_sample_batch a, b;
        oc_sample_batch_init(&a);
        oc_sample_batch_init(&b);
        for (int sampled = 0; sampled <= 1; sampled++) {
            uint32_t nl = sampled ? 2 : 1;
            const int32_t *fo = sampled ? f : all;
            struct oc_sampler *sm = sampler_over(&t.g, nl, fo, NULL);
            struct oc_sampler *sd = sampler_over(&gd, nl, fo, pool);
            OC_CHECK_OK(oc_sample_neighbors(sm, 1, 2, seeds, 3, &a, &err), &err);
            OC_CHECK_OK(oc_sample_neighbors(sd, 1, 2, seeds, 3, &b, &err), &err);
            OC_CHECK(oc_sample_batch_equal(&a, &b));
            OC_CHECK(b.blocks[nl - 1].n_edges >= (sampled ? 50u : 300000u));
            struct oc_topo_disk_stats st;
            oc_sample_sampler_topo_stats(sd, &st);
            if (!sampled) /* the hub's whole list, in pieces of at most 64 KiB */
                OC_CHECK(st.requested_bytes >= 300000 * 4 && st.n_reads >= 300000 * 4 / 65536);
            else /* 50 drawn of 300000: far fewer bytes than the list */
                OC_CHECK(st.read_bytes < 300000 * 4);
            oc_sample_sampler_free(sm);
            oc_sample_sampler_free(sd);
        }
        oc_sample_batch_deinit(&a);
        oc_sample_batch_deinit(&b);
        oc_sample_topo_disk_free(d);
        oc_pool_free(pool);
    }
    tgraph_free(&t);
}

/* ---- the neighbor cache --------------------------------------------------- */

/* Whether u ranks before v: higher in-degree, then lower id. */
/*
 * A full layer over 600 seeds (i x step + first, mod n) equals the in-memory
 * graph's: the cached lists hold the right ids.
 */
static void check_full_layer(const struct tgraph *t, const struct oc_topo_disk *d, uint64_t step,
                             uint64_t first)
{
    const int32_t all[1] = {OC_SAMPLE_ALL};
    struct oc_graph gd;
    oc_sample_topo_disk_graph(d, &gd);
    struct oc_sampler *sm = sampler_over(&t->g, 1, all, NULL);
    struct oc_sampler *sd = sampler_over(&gd, 1, all, NULL);
    uint64_t seeds[600];
    for (uint64_t i = 0; i < 600; i++)
        seeds[i] = (i * step + first) % t->g.n_nodes;
    struct oc_err err;
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_full_layer(sm, seeds, 600, &a, &err), &err);
    OC_CHECK_OK(oc_sample_full_layer(sd, seeds, 600, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&a, &b));
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(sm);
    oc_sample_sampler_free(sd);
}

static int ranks_before(const struct tgraph *t, uint64_t u, uint64_t v)
{
    uint64_t du = tgraph_deg(t, u), dv = tgraph_deg(t, v);
    return du != dv ? du > dv : u < v;
}

/*
 * The cached set is a prefix of the ranking (every cached node ranks before
 * every uncached one with a list), its lists fit, and the next node would not.
 */
static void check_cache(const struct tgraph *t, const struct oc_topo_disk *d, uint64_t budget)
{
    uint64_t n = t->g.n_nodes, es = t->idx32 ? 4 : 8;
    struct oc_topo_disk_info info;
    oc_sample_topo_disk_info(d, &info);
    uint64_t worst_in = UINT64_MAX, best_out = UINT64_MAX, n_cached = 0, edges = 0, min_deg = 0;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t dv = tgraph_deg(t, v);
        if (oc_sample_topo_disk_is_cached(d, v)) {
            OC_CHECK(dv > 0);
            n_cached++;
            edges += dv;
            if (worst_in == UINT64_MAX || ranks_before(t, worst_in, v))
                worst_in = v;
        } else if (dv > 0 && (best_out == UINT64_MAX || ranks_before(t, v, best_out))) {
            best_out = v;
        }
    }
    OC_CHECK(!oc_sample_topo_disk_is_cached(d, n));
    if (worst_in != UINT64_MAX && best_out != UINT64_MAX)
        OC_CHECK(ranks_before(t, worst_in, best_out));
    if (worst_in != UINT64_MAX)
        min_deg = tgraph_deg(t, worst_in);
    OC_CHECK(info.n_cached_nodes == n_cached && info.n_cached_edges == edges);
    OC_CHECK(info.cache_bytes == edges * es && info.min_cached_degree == min_deg);
    /* a budget that holds indptr and every list caches them all with no table */
    const uint64_t whole = (n + 1) * 8 + t->indptr[n] * es;
    OC_CHECK((info.table_bytes == 0) == (budget >= whole));
    if (budget >= whole) {
        OC_CHECK(edges == t->indptr[n] && best_out == UINT64_MAX);
        return;
    }
    OC_CHECK(info.table_bytes == n * 8);
    uint64_t avail = budget - fixed_bytes(n);
    OC_CHECK(edges * es <= avail);
    if (best_out != UINT64_MAX)
        OC_CHECK((edges + tgraph_deg(t, best_out)) * es > avail);
}

OC_TEST(cache_holds_the_highest_in_degree_nodes)
{
    /* degrees: node 7 → 20000, nodes 3 and 9 → 17000 (a tie: 3 first), the rest ≤ 12 */
    const uint64_t n = 40000;
    uint64_t *indptr = malloc((n + 1) * sizeof(uint64_t));
    uint64_t *idx = malloc((n * 13 + 60000) * sizeof(uint64_t));
    uint64_t m = 0;
    indptr[0] = 0;
    for (uint64_t v = 0; v < n; v++) {
        struct oc_rng r;
        oc_rng_init(&r, 9, v, 0, 0);
        uint64_t d = v == 7 ? 20000 : v == 3 || v == 9 ? 17000 : oc_rng_below(&r, 13);
        uint64_t step = n / (d + 1);
        for (uint64_t j = 0; j < d; j++)
            idx[m++] = j * step + (v % step);
        indptr[v + 1] = m;
    }
    struct tgraph t;
    tgraph_from(&t, n, indptr, idx, 0);
    free(indptr);
    free(idx);
    const char *path = write_npy(&t, oc_test_tmpdir(), "rank.npy");
    uint64_t fx = fixed_bytes(n), small = 0;
    for (uint64_t v = 0; v < n; v++)
        if (v != 3 && v != 7 && v != 9)
            small += tgraph_deg(&t, v);
    const uint64_t budgets[] = {
        fx,                             /* nothing */
        fx + 20000 * 4 - 1,             /* not even the top node */
        fx + 20000 * 4 + 17000 * 4,     /* 7 and 3, not 9 (tie broken by id) */
        fx + 54000 * 4 + 1000,          /* the three hubs and some of the highest small degrees */
        fx + 54000 * 4 + small * 4 / 2, /* a cut inside the small degrees */
        fx + 54000 * 4 + small * 4 - 4, /* all but (part of) the last degree */
        fx + 54000 * 4 + small * 4,     /* exactly everything */
        (n + 1) * 8 + 54000 * 4 + small * 4 - 1, /* one byte short of everything, no table */
        (n + 1) * 8 + 54000 * 4 + small * 4,     /* everything and no table */
        UINT64_MAX,
    };
    for (size_t k = 0; k < sizeof(budgets) / sizeof(budgets[0]); k++) {
        struct oc_topo_disk *d = open_file(&t, path, OC_NPY_HEADER_BYTES, budgets[k], 0, 0);
        if (!d)
            continue;
        check_cache(&t, d, budgets[k]);
        if (k == 2)
            OC_CHECK(oc_sample_topo_disk_is_cached(d, 7) && oc_sample_topo_disk_is_cached(d, 3) &&
                     !oc_sample_topo_disk_is_cached(d, 9));
        if (k == 3)
            OC_CHECK(oc_sample_topo_disk_is_cached(d, 9));
        struct oc_topo_disk_info info;
        oc_sample_topo_disk_info(d, &info);
        if (k == 6 || k >= 8)
            OC_CHECK(info.n_cached_edges == t.indptr[n]);
        /* the cached lists hold the right ids: full layer over the hubs and some nodes */
        check_full_layer(&t, d, 67, 3);
        oc_sample_topo_disk_free(d);
    }
    tgraph_free(&t);
}

/* Ginex's quantized ranking key, straight from its definition: log2((out + 1) / in) in 16ths. */
static long ginex_key(uint64_t out, uint64_t in)
{
    long k = (long)floor(log2(((double)out + 1.0) / (double)in) * 16) + 1024;
    return k < 0 ? 0 : k > 2047 ? 2047 : k;
}

/*
 * --topo-rank ginex: the cache holds the nodes of highest out-degree /
 * in-degree (Ginex: accesses per cached byte), a prefix of that ranking
 * whose lists fit; a hub with many in-neighbors but no out-neighbors, first
 * by degree, is not cached at a small budget; the cached lists are right.
 * An id past the node count in indices is a format error naming the file.
 */
OC_TEST(ginex_rank_caches_the_most_accesses_per_byte)
{
    const uint64_t n = 6000;
    uint64_t *indptr = malloc((n + 1) * sizeof(uint64_t));
    uint64_t *idx = malloc(n * 400 * sizeof(uint64_t));
    uint64_t m = 0;
    indptr[0] = 0;
    for (uint64_t v = 0; v < n; v++) {
        struct oc_rng r;
        oc_rng_init(&r, 21, v, 0, 0);
        uint64_t d = v == 5 ? 300 : 1 + oc_rng_below(&r, 12);
        for (uint64_t j = 0; j < d; j++) { /* neighbors skewed to low ids, never node 5 */
            double x = oc_rng_uniform_f64(&r);
            uint64_t u = (uint64_t)((double)n * x * x * x);
            idx[m++] = u == 5 || u >= n ? 6 : u;
        }
        qsort(idx + indptr[v], d, sizeof(uint64_t), tg_cmp_u64);
        indptr[v + 1] = m;
    }
    struct tgraph t;
    tgraph_from(&t, n, indptr, idx, 0);
    uint64_t *out = calloc(n, sizeof(uint64_t));
    for (uint64_t e = 0; e < m; e++)
        out[idx[e]]++;
    const char *path = write_npy(&t, oc_test_tmpdir(), "ginex-rank.npy");
    uint64_t fx = fixed_bytes(n), es = t.idx32 ? 4 : 8;
    const uint64_t budgets[] = {fx, fx + m * es / 50, fx + m * es / 3, fx + m * es, UINT64_MAX};
    for (size_t k = 0; k < sizeof(budgets) / sizeof(budgets[0]); k++) {
        struct oc_err err;
        struct oc_topo_disk_opts o = {.budget_bytes = budgets[k], .rank = OC_TOPO_RANK_GINEX};
        struct oc_topo_disk *d = NULL;
        OC_CHECK_OK(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES,
                                                 t.idx32 ? OC_DTYPE_U32 : OC_DTYPE_U64, n, t.indptr,
                                                 &o, &d, &err),
                    &err);
        if (!d)
            continue;
        long min_in = LONG_MAX, max_out = -1;
        uint64_t edges = 0, n_cached = 0;
        for (uint64_t v = 0; v < n; v++) {
            uint64_t dv = tgraph_deg(&t, v);
            long key = dv ? ginex_key(out[v], dv) : -1;
            if (oc_sample_topo_disk_is_cached(d, v)) {
                edges += dv;
                n_cached++;
                min_in = key < min_in ? key : min_in;
            } else if (dv && key > max_out) {
                max_out = key;
            }
        }
        struct oc_topo_disk_info info;
        oc_sample_topo_disk_info(d, &info);
        OC_CHECK(info.rank == OC_TOPO_RANK_GINEX);
        OC_CHECK(info.n_cached_nodes == n_cached && info.n_cached_edges == edges);
        OC_CHECK(budgets[k] == UINT64_MAX || edges * es <= budgets[k] - fx);
        OC_CHECK(n_cached == 0 || max_out <= min_in); /* a prefix of the ranking */
        if (k == 1) /* the hub ranks first by degree, last by accesses per byte */
            OC_CHECK(n_cached > 0 && !oc_sample_topo_disk_is_cached(d, 5));
        if (k >= 3)
            OC_CHECK(edges == m);
        check_full_layer(&t, d, 37, 5);
        oc_sample_topo_disk_free(d);
    }
    /* an id past the node count: the scan names the file and the offset */
    idx[m / 2] = n + 3;
    struct tgraph bad;
    tgraph_from(&bad, n, indptr, idx, 0);
    const char *bad_path = write_npy(&bad, oc_test_tmpdir(), "ginex-rank-bad.npy");
    struct oc_err err;
    struct oc_topo_disk_opts o = {.budget_bytes = fx + m, .rank = OC_TOPO_RANK_GINEX};
    struct oc_topo_disk *d = NULL;
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(bad_path, OC_NPY_HEADER_BYTES,
                                              bad.idx32 ? OC_DTYPE_U32 : OC_DTYPE_U64, n,
                                              bad.indptr, &o, &d, &err),
                 OC_ERR_FORMAT, &err, "is not below 6000 nodes");
    OC_CHECK(d == NULL && strstr(err.msg, "ginex-rank-bad.npy") != NULL);
    tgraph_free(&bad);
    tgraph_free(&t);
    free(out);
    free(indptr);
    free(idx);
}

/* ---- errors -------------------------------------------------------------- */

OC_TEST(budget_and_argument_errors)
{
    struct tgraph t;
    tgraph_random(&t, 1000, 30, 2, 0);
    const char *path = write_npy(&t, oc_test_tmpdir(), "i.npy");
    struct oc_err err;
    struct oc_topo_disk *d = NULL;
    struct oc_topo_disk_opts o = {.budget_bytes = fixed_bytes(1000) - 1};
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_U32, 1000,
                                              t.indptr, &o, &d, &err),
                 OC_ERR_BUDGET, &err, "(16008 B)");
    OC_CHECK(d == NULL);
    o.budget_bytes = UINT64_MAX;
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_F32, 1000,
                                              t.indptr, &o, &d, &err),
                 OC_ERR_ARG, &err, "u32 or u64");
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_U32, 1000,
                                              t.indptr, NULL, &d, &err),
                 OC_ERR_ARG, &err, "no options");
    char missing[900];
    snprintf(missing, sizeof(missing), "%s.missing", path);
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(missing, OC_NPY_HEADER_BYTES, OC_DTYPE_U32, 1000,
                                              t.indptr, &o, &d, &err),
                 OC_ERR_NOTFOUND, &err, ".missing");
    /* the file is shorter than indptr says (a u64 reading of u32 data) */
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_U64, 1000,
                                              t.indptr, &o, &d, &err),
                 OC_ERR_FORMAT, &err, "truncated");
    uint64_t *bad = malloc(1001 * sizeof(uint64_t));
    memcpy(bad, t.indptr, 1001 * sizeof(uint64_t));
    bad[500] = bad[501] + 1;
    OC_CHECK_ERR(oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_U32, 1000, bad,
                                              &o, &d, &err),
                 OC_ERR_FORMAT, &err, "indptr decreases at node 500");
    free(bad);
    OC_CHECK(d == NULL);

    /* a view that does not match its topology */
    d = open_file(&t, path, OC_NPY_HEADER_BYTES, UINT64_MAX, 0, 0);
    struct oc_graph g;
    oc_sample_topo_disk_graph(d, &g);
    g.indices32 = t.idx32;
    struct oc_sample_opts so = {.n_layers = 1, .fanouts = {3}};
    struct oc_sampler *s = NULL;
    OC_CHECK_ERR(oc_sample_sampler_new(&g, &so, NULL, &s, &err), OC_ERR_ARG, &err,
                 "no in-memory indices");
    oc_sample_topo_disk_graph(d, &g);
    g.n_nodes = 999;
    OC_CHECK_ERR(oc_sample_sampler_new(&g, &so, NULL, &s, &err), OC_ERR_ARG, &err,
                 "does not match");
    oc_sample_topo_disk_free(d);

    /* an id out of range in the file: oc_sample_graph_check and the sampler say where */
    t.idx32[t.indptr[600] + 1] = 5000;
    path = write_npy(&t, oc_test_tmpdir(), "bad.npy");
    d = open_file(&t, path, OC_NPY_HEADER_BYTES, fixed_bytes(1000), 0, 0);
    oc_sample_topo_disk_graph(d, &g);
    OC_CHECK_ERR(oc_sample_graph_check(&g, &err), OC_ERR_FORMAT, &err,
                 "in-neighbor 5000 of node 600");
    const int32_t all[1] = {OC_SAMPLE_ALL};
    s = sampler_over(&g, 1, all, NULL);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    const uint64_t seeds[2] = {3, 600};
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, seeds, 2, &b, &err), OC_ERR_FORMAT, &err,
                 "in-neighbor 5000 of node 600 is >= n_nodes 1000");
    OC_CHECK(b.n_layers == 0);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    oc_sample_topo_disk_free(d);
    tgraph_free(&t);
}

OC_TEST(truncated_under_a_running_sampler)
{
    struct tgraph t;
    tgraph_random(&t, 6000, 200, 8, 0);
    const char *path = write_npy(&t, oc_test_tmpdir(), "trunc.npy");
    uint64_t n = t.g.n_nodes, m = t.indptr[n];
    uint64_t *perm = tperm(n, 3);
    const int32_t f[2] = {5, 10};
    struct oc_err err;
    uint64_t base = oc_mem_n_live();
    for (unsigned nt = 1; nt <= 3; nt++) {
        /* a fresh, whole file for each round */
        path = write_npy(&t, oc_test_tmpdir(), "trunc.npy");
        struct oc_pool *pool;
        OC_CHECK_OK(oc_pool_new(nt, &pool, &err), &err);
        struct oc_topo_disk *d = open_file(&t, path, OC_NPY_HEADER_BYTES, fixed_bytes(n), 0, 0);
        struct oc_graph gd;
        oc_sample_topo_disk_graph(d, &gd);
        struct oc_sampler *s = sampler_over(&gd, 2, f, pool);
        struct oc_sample_batch b;
        oc_sample_batch_init(&b);
        OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, perm, 2000, &b, &err), &err);
        OC_CHECK(truncate(path, (off_t)(OC_NPY_HEADER_BYTES + m * 4 / 2)) == 0);
        OC_CHECK_ERR(oc_sample_neighbors(s, 0, 1, perm, 2000, &b, &err), OC_ERR_FORMAT, &err,
                     "trunc.npy: truncated");
        OC_CHECK(strstr(err.msg, "at offset") != NULL);
        OC_CHECK(b.n_layers == 0);
        /* still usable: seeds whose lists lie in the first half read fine */
        const uint64_t low[2] = {1, 2};
        const int32_t one[1] = {OC_SAMPLE_ALL};
        struct oc_sampler *s1 = sampler_over(&gd, 1, one, pool);
        OC_CHECK_OK(oc_sample_neighbors(s1, 0, 0, low, 2, &b, &err), &err);
        oc_sample_sampler_free(s1);
        oc_sample_batch_deinit(&b);
        oc_sample_sampler_free(s);
        oc_sample_topo_disk_free(d);
        oc_pool_free(pool);
    }
    OC_CHECK(oc_mem_n_live() == base);
    free(perm);
    tgraph_free(&t);
}

/* Opens a topology and samples three batches; returns the first failure. */
static int open_and_sample(const struct tgraph *t, const char *path, uint64_t budget,
                           struct oc_pool *pool, const uint64_t *perm, struct oc_err *err)
{
    const int32_t f[2] = {6, 9};
    struct oc_topo_disk_opts o = {.budget_bytes = budget, .io_bounce_bytes = 16384};
    struct oc_topo_disk *d = NULL;
    int rc = oc_sample_topo_disk_new_file(path, OC_NPY_HEADER_BYTES, OC_DTYPE_U32, t->g.n_nodes,
                                          t->indptr, &o, &d, err);
    if (rc != OC_OK)
        return rc;
    struct oc_graph gd;
    oc_sample_topo_disk_graph(d, &gd);
    struct oc_sample_opts so = {.n_layers = 2, .seed = 3};
    memcpy(so.fanouts, f, sizeof(f));
    struct oc_sampler *s = NULL;
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    rc = oc_sample_sampler_new(&gd, &so, pool, &s, err);
    for (uint64_t i = 0; rc == OC_OK && i < 3; i++) {
        rc = oc_sample_neighbors(s, 0, i, perm + 300 * i, 300, &b, err);
        if (rc != OC_OK)
            OC_CHECK(b.n_layers == 0);
        else
            OC_CHECK(check_batch(t, &b, perm + 300 * i, 300, 2, f) == 0);
    }
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    oc_sample_topo_disk_free(d);
    return rc;
}

OC_TEST(read_and_allocation_faults_are_clean)
{
    struct tgraph t;
    tgraph_random(&t, 3000, 150, 17, 0);
    const char *path = write_npy(&t, oc_test_tmpdir(), "fault.npy");
    uint64_t n = t.g.n_nodes;
    uint64_t *perm = tperm(n, 6);
    uint64_t budget = fixed_bytes(n) + t.indptr[n] * 4 / 3;
    struct oc_err err;
    uint64_t base = oc_mem_n_live();
    for (int km = 0; km < 2 * FAULT_MODE_COUNT; km++) {
        int kind = km / FAULT_MODE_COUNT, mode = km % FAULT_MODE_COUNT;
        int done = 0, fired_io = 0;
        for (uint64_t nth = 1; nth < 400 && !done;
             nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 4 : 0)) {
            struct oc_pool *pool;
            OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
            enum oc_fault_kind fk = kind ? OC_FAULT_ALLOC : OC_FAULT_READ;
            fault_arm_mode(mode, fk, nth, kind ? 0 : EIO);
            int rc = open_and_sample(&t, path, budget, pool, perm, &err);
            int fired = oc_fault_fired(fk);
            oc_fault_disarm_all();
            if (!fired) {
                OC_CHECK_OK(rc, &err);
                done = 1;
            } else if (kind == 0) {
                OC_CHECK_ERR(rc, OC_ERR_IO, &err, "fault.npy: read of");
                OC_CHECK(strstr(err.msg, "at offset") != NULL);
                fired_io++;
            } else {
                OC_CHECK(rc == OC_ERR_NOMEM);
            }
            oc_pool_free(pool);
            OC_CHECK(oc_mem_n_live() == base);
        }
        OC_CHECK(done);
        if (kind == 0)
            OC_CHECK(fired_io > 3); /* at open (cache fill) and while sampling */
    }
    free(perm);
    tgraph_free(&t);
}

OC_TEST_MAIN()
