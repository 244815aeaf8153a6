/*
 * topo_disk.c — opening an on-disk topology: indptr in RAM, indices.npy
 * opened with O_DIRECT, and Ginex's neighbor cache built by ranking nodes (by
 * in-degree, or as Ginex ranks them: out-degree / in-degree, the out-degrees
 * counted by one sequential scan of indices) and filling the cache with one
 * pass of merged reads.
 *
 * Place in the data flow: dataset (indptr.npy, indices.npy) ──► sample. The
 * sampler reads uncached lists through topo_read.c during sampling.
 * Thread-safety: opening belongs to one thread; the opened topology is never
 * written again and may be shared by any number of samplers and threads.
 * Ownership: the topology owns indptr, the table, the cache and the file.
 *
 * Ranking without sorting N nodes (a sort would need N × 16 B more than the
 * budget allows): degrees below TOPO_HIST are counted in a histogram, the few
 * nodes at or above it (at most E / TOPO_HIST) are sorted. Walking the ranking
 * (big nodes by degree descending then id, then histogram degrees descending)
 * finds where the cache budget runs out: after the first n_big_take big
 * nodes, or at degree cut_deg of which the cut_take lowest ids still fit.
 *
 *   rank:  big[0] big[1] ... | deg H-1 ... deg cut_deg+1 | cut_take of cut_deg | rest
 *          └──────────────────── cached ───────────────────────────────┘
 *   cache: [ list of the lowest cached id | next cached id | ... ]  (node-id order)
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/io.h"
#include "sample/sample_int.h"

#define TOPO_HIST           16384u /* degrees counted exactly; larger ones are sorted */
#define TOPO_BUILD_REQS     4096u  /* requests per read round while filling the cache */
#define TOPO_DEFAULT_DEPTH  64u
#define TOPO_DEFAULT_BOUNCE (1u << 20)
#define TOPO_CHECK_ELEMS    (1u << 17) /* ids per read in smp_topo_check */
#define TOPO_RATIO_STEPS    16         /* Ginex ranking: buckets per doubling of the ratio */
#define TOPO_RATIO_BUCKETS  (128 * TOPO_RATIO_STEPS) /* ratios 2^-64 .. 2^64 */
#define TOPO_SCAN_BYTES     (1u << 20)               /* the out-degree scan's reads */

struct topo_big {
    uint64_t deg, v;
};

static int cmp_big(const void *x, const void *y)
{
    const struct topo_big *a = x, *b = y;
    if (a->deg != b->deg)
        return a->deg > b->deg ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

static uint64_t fixed_bytes(uint64_t n_nodes)
{
    return (n_nodes + 1) * sizeof(uint64_t) + n_nodes * sizeof(uint64_t);
}

static int budget_error(uint64_t n_nodes, const struct oc_topo_disk_opts *o, struct oc_err *err)
{
    char a[32], b[32];
    uint64_t need = fixed_bytes(n_nodes);
    return OC_ERR(err, OC_ERR_BUDGET,
                  "topology: a budget of %s (%" PRIu64 " B) is too small: indptr and the "
                  "cache table of %" PRIu64 " nodes need %s (%" PRIu64 " B) before any list "
                  "is cached",
                  oc_format_size(o->budget_bytes, a, sizeof(a)), o->budget_bytes, n_nodes,
                  oc_format_size(need, b, sizeof(b)), need);
}

/* Checks the options and that indptr alone fits; the rest is checked once the edges are known. */
static int check_budget(uint64_t n_nodes, const struct oc_topo_disk_opts *o, struct oc_err *err)
{
    if (!o)
        return OC_ERR(err, OC_ERR_ARG, "topology: no options given");
    if (n_nodes == 0 || n_nodes >= (UINT64_MAX >> 5))
        return OC_ERR(err, OC_ERR_ARG, "topology: %" PRIu64 " nodes is not supported", n_nodes);
    if (o->budget_bytes < (n_nodes + 1) * sizeof(uint64_t))
        return budget_error(n_nodes, o, err);
    return OC_OK;
}

void oc_sample_topo_disk_free(struct oc_topo_disk *t)
{
    if (!t)
        return;
    oc_file_close(t->f, NULL);
    oc_free(t->indptr);
    oc_free(t->table);
    oc_free(t->cache);
    oc_free(t);
}

/* The cache being laid out in node-id order: offsets, nodes, smallest cached list. */
struct placing {
    uint64_t off, n_cached, min_deg;
};

/* Node v (d neighbors) gets the next offset in the cache if take, else none (no table: all). */
static void place(struct oc_topo_disk *t, uint64_t v, uint64_t d, int take, struct placing *pl)
{
    if (!take) {
        if (t->table)
            t->table[v] = SMP_TOPO_NONE;
        return;
    }
    if (t->table)
        t->table[v] = pl->off;
    pl->off += d;
    pl->n_cached++;
    if (pl->n_cached == 1 || d < pl->min_deg)
        pl->min_deg = d;
}

/* The info's cache counters from a finished placing. */
static void placed(struct oc_topo_disk *t, const struct placing *pl)
{
    t->info.n_cached_nodes = pl->n_cached;
    t->info.n_cached_edges = pl->off;
    t->info.cache_bytes = pl->off * t->index_bytes;
    t->info.min_cached_degree = pl->n_cached ? pl->min_deg : 0;
}

/*
 * Ranks the nodes and marks the cached ones in t->table (element offsets,
 * assigned in node-id order). Sets the info's cache counters.
 */
static int select_cached(struct oc_topo_disk *t, uint64_t avail, struct oc_err *err)
{
    const uint64_t n = t->n_nodes, es = t->index_bytes;
    const uint64_t *indptr = t->indptr;
    uint64_t *hist = oc_calloc(TOPO_HIST, sizeof(uint64_t), "topology ranking", err);
    if (!hist)
        return err->status;
    struct topo_big *big = NULL;
    uint64_t n_big = 0, cap_big = 0;
    int rc = OC_OK;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t d = indptr[v + 1] - indptr[v]; /* nondecreasing: checked by the caller */
        if (d < TOPO_HIST) {
            hist[d]++;
            continue;
        }
        if ((rc = oc_grow(&big, &cap_big, n_big + 1, sizeof(*big), 256, "topology ranking", err)))
            goto out;
        big[n_big++] = (struct topo_big){d, v};
    }
    if (n_big)
        qsort(big, (size_t)n_big, sizeof(*big), cmp_big);

    /* walk the ranking until the budget runs out */
    uint64_t n_big_take = 0, cut_deg = 0, cut_take = 0;
    while (n_big_take < n_big && big[n_big_take].deg * es <= avail) {
        avail -= big[n_big_take].deg * es;
        n_big_take++;
    }
    if (n_big_take < n_big) {
        cut_deg = TOPO_HIST; /* no histogram degree is taken */
    } else {
        for (uint64_t d = TOPO_HIST - 1; d >= 1; d--) {
            if (!hist[d])
                continue;
            uint64_t fit = avail / (d * es);
            if (fit < hist[d]) {
                cut_deg = d;
                cut_take = fit;
                break;
            }
            avail -= hist[d] * d * es;
        }
    }

    for (uint64_t v = 0; v < n; v++)
        t->table[v] = SMP_TOPO_NONE;
    for (uint64_t i = 0; i < n_big_take; i++)
        t->table[big[i].v] = 0; /* taken; the offset is assigned below */
    struct placing pl = {0, 0, 0};
    uint64_t seen_cut = 0;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t d = indptr[v + 1] - indptr[v];
        int take;
        if (d == 0)
            take = 0;
        else if (d >= TOPO_HIST)
            take = t->table[v] == 0;
        else
            take = d > cut_deg || (d == cut_deg && seen_cut++ < cut_take);
        place(t, v, d, take, &pl);
    }
    placed(t, &pl);
out:
    oc_free(hist);
    oc_free(big);
    return rc;
}

/*
 * Ginex's ranking: out-degrees counted into t->table by a sequential scan of
 * the indices (every id checked against n_nodes: OC_ERR_FORMAT naming the
 * file and offset).
 */
static int count_out_degrees(struct oc_topo_disk *t, const char *path, struct oc_err *err)
{
    const uint64_t n = t->n_nodes, es = t->index_bytes, n_edges = t->indptr[n];
    const uint64_t start = t->data_offset;
    uint8_t *buf = oc_io_buf_alloc(TOPO_SCAN_BYTES, "topology out-degree scan", err);
    if (!buf)
        return err->status;
    memset(t->table, 0, (size_t)n * sizeof(uint64_t));
    int rc = OC_OK;
    for (uint64_t j = 0; j < n_edges && rc == OC_OK;) { /* j: the next id */
        uint64_t pos = oc_io_align_down(start + j * es);
        size_t got = 0;
        if ((rc = oc_file_pread_upto(t->f, buf, TOPO_SCAN_BYTES, pos, &got, err)))
            break;
        uint64_t j0 = j;
        for (; j < n_edges && start + (j + 1) * es <= pos + got; j++) {
            const uint8_t *p = buf + (start + j * es - pos);
            uint64_t v = es == 4 ? oc_get_le32(p) : oc_get_le64(p);
            if (v >= n) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: id %" PRIu64 " at offset %" PRIu64 " is not below %" PRIu64
                            " nodes",
                            path, v, start + j * es, n);
                break;
            }
            t->table[v]++;
        }
        if (rc == OC_OK && j == j0)
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: truncated: id %" PRIu64 " at offset %" PRIu64 " is past the end", path,
                        j, start + j * es);
    }
    oc_free(buf);
    return rc;
}

/* The ratio bucket of a node with out-degree out and in-degree d > 0. */
static unsigned ratio_bucket(uint64_t out, uint64_t d)
{
    double r = log2(((double)out + 1.0) / (double)d) * TOPO_RATIO_STEPS;
    long k = (long)floor(r) + TOPO_RATIO_BUCKETS / 2;
    return k < 0 ? 0u : k >= (long)TOPO_RATIO_BUCKETS ? TOPO_RATIO_BUCKETS - 1 : (unsigned)k;
}

/*
 * Ginex's selection: nodes by out/in ratio, highest first (buckets of
 * 1/TOPO_RATIO_STEPS of a doubling; within the bucket where the budget runs
 * out, lower ids first while their lists fit). t->table holds the
 * out-degrees on entry and the cache offsets on return.
 */
static int select_cached_ratio(struct oc_topo_disk *t, uint64_t avail, struct oc_err *err)
{
    const uint64_t n = t->n_nodes, es = t->index_bytes;
    const uint64_t *indptr = t->indptr;
    uint64_t *cost = oc_calloc(TOPO_RATIO_BUCKETS, sizeof(uint64_t), "topology ranking", err);
    if (!cost)
        return err->status;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t d = indptr[v + 1] - indptr[v];
        if (d)
            cost[ratio_bucket(t->table[v], d)] += d * es;
    }
    long cut = -1; /* buckets above it are taken whole; in it, lists while they fit */
    for (long k = TOPO_RATIO_BUCKETS - 1; k >= 0; k--) {
        if (cost[k] > avail) {
            cut = k;
            break;
        }
        avail -= cost[k];
    }
    struct placing pl = {0, 0, 0};
    for (uint64_t v = 0; v < n; v++) {
        uint64_t d = indptr[v + 1] - indptr[v];
        long k = d ? (long)ratio_bucket(t->table[v], d) : 0;
        int take = d && (k > cut || (k == cut && d * es <= avail));
        if (take && k == cut)
            avail -= d * es;
        place(t, v, d, take, &pl);
    }
    placed(t, &pl);
    oc_free(cost);
    return OC_OK;
}

/* Queues one merged range of cached lists; runs the batch every TOPO_BUILD_REQS ranges. */
static int queue_range(struct oc_topo_disk *t, struct oc_io_batch *b, uint64_t file_elem,
                       uint64_t cache_elem, uint64_t n_elems, uint64_t *n_queued,
                       struct oc_err *err)
{
    const uint64_t es = t->index_bytes;
    int rc = oc_io_batch_add(b, t->f, t->data_offset + file_elem * es, (size_t)(n_elems * es),
                             (uint8_t *)t->cache + cache_elem * es, err);
    if (rc == OC_OK && ++*n_queued >= TOPO_BUILD_REQS) {
        rc = oc_io_batch_run(b, err);
        *n_queued = 0;
    }
    return rc;
}

/* Reads every cached list into the cache, merging the lists of consecutive nodes. */
static int fill_cache(struct oc_topo_disk *t, struct oc_err *err)
{
    struct oc_io_batch *b;
    int rc = oc_io_batch_new(t->io_depth, (size_t)t->io_bounce_bytes, &b, err);
    if (rc != OC_OK)
        return rc;
    uint64_t run_file = 0, run_cache = 0, run_len = 0; /* the range being merged, elements */
    uint64_t n_queued = 0;
    for (uint64_t v = 0; v < t->n_nodes && rc == OC_OK; v++) {
        if (!smp_topo_cached(t, v))
            continue;
        uint64_t c = smp_topo_slot(t, v);
        uint64_t lo = t->indptr[v], d = t->indptr[v + 1] - lo;
        if (run_len && run_file + run_len == lo && run_cache + run_len == c) {
            run_len += d;
            continue;
        }
        if (run_len)
            rc = queue_range(t, b, run_file, run_cache, run_len, &n_queued, err);
        run_file = lo;
        run_cache = c;
        run_len = d;
    }
    if (rc == OC_OK && run_len)
        rc = queue_range(t, b, run_file, run_cache, run_len, &n_queued, err);
    if (rc == OC_OK)
        rc = oc_io_batch_run(b, err);
    t->info.build_read_bytes = oc_io_batch_stats(b)->read_bytes;
    t->info.build_reads = oc_io_batch_stats(b)->n_reads;
    oc_io_batch_free(b);
    if (rc != OC_OK)
        oc_err_prefix(err, "topology: filling the neighbor cache");
    return rc;
}

/* Takes ownership of t->indptr (already set); builds everything else. */
static int topo_build(struct oc_topo_disk *t, const char *path, const struct oc_topo_disk_opts *o,
                      struct oc_err *err)
{
    const uint64_t n = t->n_nodes, es = t->index_bytes;
    const uint64_t *indptr = t->indptr;
    if (indptr[0] != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: indptr[0] is %" PRIu64 ", not 0", path, indptr[0]);
    for (uint64_t v = 0; v < n; v++)
        if (indptr[v + 1] < indptr[v])
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: indptr decreases at node %" PRIu64 " (%" PRIu64 " > %" PRIu64 ")",
                          path, v, indptr[v], indptr[v + 1]);
    uint64_t n_edges = indptr[n];
    if (n_edges > (UINT64_MAX - t->data_offset) / es)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %" PRIu64 " edges is too many", path, n_edges);
    t->info.n_nodes = n;
    t->info.n_edges = n_edges;
    t->info.index_bytes = (uint32_t)es;
    t->info.budget_bytes = o->budget_bytes;
    t->info.indptr_bytes = (n + 1) * sizeof(uint64_t);
    t->info.table_bytes = n * sizeof(uint64_t);
    t->io_depth = o->io_depth ? o->io_depth : TOPO_DEFAULT_DEPTH;
    t->io_bounce_bytes = o->io_bounce_bytes ? o->io_bounce_bytes : TOPO_DEFAULT_BOUNCE;

    int rc = oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &t->f, err);
    if (rc != OC_OK)
        return rc;
    t->info.direct = oc_file_is_direct(t->f);
    uint64_t size;
    if ((rc = oc_file_size(t->f, &size, err)) != OC_OK)
        return rc;
    uint64_t need = t->data_offset + n_edges * es;
    if (size < need)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: truncated: %" PRIu64 " ids of %" PRIu64 " bytes at offset %" PRIu64
                      " end at %" PRIu64 ", file ends at %" PRIu64,
                      path, n_edges, es, t->data_offset, need, size);

    t->info.rank = o->rank;
    if (o->budget_bytes - t->info.indptr_bytes >= n_edges * es) {
        /* every list fits beside indptr: the cache is indices itself, indptr its offsets */
        t->info.table_bytes = 0;
        struct placing pl = {0, 0, 0};
        for (uint64_t v = 0; v < n; v++)
            place(t, v, indptr[v + 1] - indptr[v], indptr[v + 1] > indptr[v], &pl);
        placed(t, &pl);
        assert(pl.off == n_edges);
    } else if (o->budget_bytes < fixed_bytes(n)) {
        return budget_error(n, o, err);
    } else if (!(t->table = oc_alloc((size_t)n * sizeof(uint64_t), "topology cache table", err))) {
        return err->status;
    } else if (o->rank == OC_TOPO_RANK_GINEX && o->budget_bytes - fixed_bytes(n) >= es) {
        uint64_t avail = o->budget_bytes - fixed_bytes(n);
        if ((rc = count_out_degrees(t, path, err)) != OC_OK ||
            (rc = select_cached_ratio(t, avail, err)) != OC_OK)
            return rc;
    } else if ((rc = select_cached(t, o->budget_bytes - fixed_bytes(n), err)) != OC_OK) {
        return rc;
    }
    if (t->info.cache_bytes) {
        t->cache = oc_alloc((size_t)t->info.cache_bytes, "topology neighbor cache", err);
        if (!t->cache)
            return err->status;
        if ((rc = fill_cache(t, err)) != OC_OK)
            return rc;
    }
    return OC_OK;
}

int oc_sample_topo_disk_new_file(const char *indices_path, uint64_t data_offset,
                                 enum oc_dtype index_dtype, uint64_t n_nodes,
                                 const uint64_t *indptr, const struct oc_topo_disk_opts *opts,
                                 struct oc_topo_disk **out, struct oc_err *err)
{
    *out = NULL;
    if (!indices_path || !indptr)
        return OC_ERR(err, OC_ERR_ARG, "topology: no indices path or indptr given");
    if (index_dtype != OC_DTYPE_U32 && index_dtype != OC_DTYPE_U64)
        return OC_ERR(err, OC_ERR_ARG, "topology: %s: index dtype must be u32 or u64, not %s",
                      indices_path, oc_dtype_name(index_dtype));
    int rc = check_budget(n_nodes, opts, err);
    if (rc != OC_OK)
        return rc;
    if (index_dtype == OC_DTYPE_U32 && n_nodes > (uint64_t)UINT32_MAX + 1)
        return OC_ERR(err, OC_ERR_ARG, "topology: %s: u32 ids cannot address %" PRIu64 " nodes",
                      indices_path, n_nodes);
    struct oc_topo_disk *t = oc_calloc(1, sizeof(*t), "topology", err);
    if (!t)
        return err->status;
    t->n_nodes = n_nodes;
    t->index_bytes = (uint32_t)oc_dtype_size(index_dtype);
    t->data_offset = data_offset;
    t->indptr = oc_alloc((size_t)(n_nodes + 1) * sizeof(uint64_t), "topology indptr", err);
    if (!t->indptr)
        goto fail;
    memcpy(t->indptr, indptr, (size_t)(n_nodes + 1) * sizeof(uint64_t));
    if (topo_build(t, indices_path, opts, err) != OC_OK)
        goto fail;
    *out = t;
    return OC_OK;
fail:
    rc = err->status;
    oc_sample_topo_disk_free(t);
    return rc;
}

int oc_sample_topo_disk_new(const struct oc_dataset *ds, const struct oc_topo_disk_opts *opts,
                            struct oc_topo_disk **out, struct oc_err *err)
{
    *out = NULL;
    if (!ds)
        return OC_ERR(err, OC_ERR_ARG, "topology: no dataset given");
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    int rc = check_budget(m->n_nodes, opts, err);
    if (rc != OC_OK)
        return rc;
    struct oc_topo_disk *t = oc_calloc(1, sizeof(*t), "topology", err);
    if (!t)
        return err->status;
    t->n_nodes = m->n_nodes;
    t->index_bytes = (uint32_t)oc_dtype_size(m->index_dtype);
    t->data_offset = oc_dataset_data_offset(ds, OC_DS_INDICES);
    if (oc_dataset_load_indptr(ds, &t->indptr, err) != OC_OK ||
        topo_build(t, oc_dataset_path(ds, OC_DS_INDICES), opts, err) != OC_OK) {
        rc = err->status;
        oc_sample_topo_disk_free(t);
        return rc;
    }
    *out = t;
    return OC_OK;
}

void oc_sample_topo_disk_graph(const struct oc_topo_disk *t, struct oc_graph *g)
{
    *g = (struct oc_graph){.n_nodes = t->n_nodes, .indptr = t->indptr, .disk = t};
}

int oc_sample_topo_disk_is_cached(const struct oc_topo_disk *t, uint64_t v)
{
    return v < t->n_nodes && smp_topo_cached(t, v);
}

void oc_sample_topo_disk_info(const struct oc_topo_disk *t, struct oc_topo_disk_info *info)
{
    *info = t->info;
}

int smp_topo_check(const struct oc_topo_disk *t, struct oc_err *err)
{
    const uint64_t n = t->n_nodes, es = t->index_bytes, m = t->indptr[n];
    uint8_t *buf = oc_alloc((size_t)TOPO_CHECK_ELEMS * es, "topology check buffer", err);
    if (!buf)
        return err->status;
    struct oc_io_batch *b;
    int rc = oc_io_batch_new(t->io_depth, (size_t)t->io_bounce_bytes, &b, err);
    uint64_t v = 0;
    for (uint64_t e0 = 0; rc == OC_OK && e0 < m; e0 += TOPO_CHECK_ELEMS) {
        uint64_t k = m - e0 < TOPO_CHECK_ELEMS ? m - e0 : TOPO_CHECK_ELEMS;
        if ((rc = oc_io_batch_add(b, t->f, t->data_offset + e0 * es, (size_t)(k * es), buf, err)) !=
                OC_OK ||
            (rc = oc_io_batch_run(b, err)) != OC_OK)
            break;
        for (uint64_t i = 0; i < k; i++) {
            uint64_t u;
            if (es == 4) {
                uint32_t x;
                memcpy(&x, buf + i * 4, 4);
                u = x;
            } else {
                memcpy(&u, buf + i * 8, 8);
            }
            if (u < n)
                continue;
            while (t->indptr[v + 1] <= e0 + i)
                v++;
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: in-neighbor %" PRIu64 " of node %" PRIu64 " (offset %" PRIu64
                        ") is >= n_nodes %" PRIu64,
                        oc_file_path(t->f), u, v, t->data_offset + (e0 + i) * es, n);
            break;
        }
    }
    oc_io_batch_free(b);
    oc_free(buf);
    return rc;
}
