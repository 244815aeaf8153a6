/*
 * sampler.c — multi-layer node-wise neighbor sampling into DGL-style blocks.
 *
 * Place in the data flow: dataset (topology) ──► sample ──► plan / pipeline.
 * Thread-safety: one thread drives a sampler; inside a call the work of each
 * layer is split over the pool in fixed chunks of destination nodes.
 * Ownership: the sampler owns its workspace (per-worker scratch and, over an
 * on-disk topology, per-worker readers; the id map; the buffer of sampled
 * global ids); the graph arrays and the pool are borrowed; the caller's batch
 * owns its arrays.
 *
 * One layer (block l, destination nodes = input_ids[0 .. n_dst)):
 *
 *   A  count    (parallel, chunk t = dst [t·C, (t+1)·C))
 *               indptr[i+1] = min(fanout, deg(v_i)), chunk_edges[t] = Σ
 *   -  prefix   (sequential over chunks) chunk_base[t], n_edges
 *   B  draw     (parallel) indptr[i+1] = chunk_base[t] + running count;
 *               gids[indptr[i] ..) = v_i's chosen in-neighbors, ascending
 *               (on disk: the chunk's reads are queued, run at once, then checked)
 *   C  relabel  (sequential, in edge order) indices[e] = local id of gids[e];
 *               a global id seen for the first time is appended to input_ids
 *
 * OUTRE's pruning (oc_sample_sampler_on_prune): after the last block, the
 * hook marks some of its non-seed sources; in block L-2 phase A gives them a
 * count of 0, so B draws nothing for them and C never sees their sub-trees.
 *
 * Why it is deterministic: the chunk size C is a constant, not a function of
 * the thread count; node v's draw uses only the RNG stream
 * (seed, epoch, batch, v·8 + l); and local ids are assigned in one ordered
 * pass. So any pool, of any size, writes the same bytes. An on-disk topology
 * changes only where phase B's ids come from: the positions are drawn before
 * the list is read, from the same stream.
 */
#include <stdlib.h>
#include <string.h>

#include "offcore/id_map.h"
#include "offcore/rng.h"
#include "sample/sample_int.h"

#define SMP_CHUNK          512 /* destination nodes per task */
#define SMP_LINEAR_K       32  /* up to this fanout, Floyd's membership test is a linear scan */
#define SMP_PREFETCH       16  /* nodes prefetched ahead in the per-node loops */
#define SMP_PREFETCH_EDGES 64  /* map slots prefetched ahead in the relabel loop */
#define SMP_BITMAP_MAX     512 /* up to this degree, Floyd's membership test is a bitmap */

struct smp_worker {
    uint64_t *pos;     /* chosen positions, k_max */
    uint64_t *set;     /* Floyd membership set (position + 1; 0 = empty), set_cap */
    uint64_t set_cap;  /* power of two >= 2·k_max, or 0 when k_max <= SMP_LINEAR_K */
    uint64_t bad_task; /* lowest task that failed on this worker, UINT64_MAX = none */
    struct oc_err err;
    struct smp_topo_reader rd; /* on-disk topology only */
};

/* The layer being sampled, shared read-only by the tasks of one pool run. */
struct smp_layer {
    const uint64_t *dst; /* global ids of the destination nodes */
    uint64_t n_dst;
    int64_t fanout; /* < 0 = all */
    uint64_t epoch, batch;
    uint32_t layer;
    struct oc_sample_block *blk;
    const uint8_t *pruned; /* this layer: dst i in [n_keep, n_keep + n_pruned_span) with
                              pruned[i - n_keep] set takes no neighbours (NULL = none) */
    uint64_t n_keep, n_pruned_span;
};

struct oc_sampler {
    struct oc_graph g; /* a copy of the view; its arrays are borrowed */
    struct oc_sample_opts opts;
    struct oc_pool *pool;
    unsigned n_workers;
    struct smp_worker *workers;
    struct oc_id_map map;
    uint64_t *gids; /* sampled global ids of the current layer */
    uint64_t cap_gids;
    uint64_t *chunk_edges; /* per chunk: edges (phase A), then base (phase B) */
    uint64_t cap_chunks;
    struct smp_layer cur;
    oc_sample_hop_fn hop_fn; /* per-hop hook (oc_sample_neighbors only), or NULL */
    void *hop_ctx;
    oc_sample_prune_fn prune_fn; /* OUTRE's pruning hook (oc_sample_neighbors only), or NULL */
    void *prune_ctx;
    uint8_t *mask; /* its mask, cap_mask bytes */
    uint64_t cap_mask;
};

int oc_sample_sampler_new(const struct oc_graph *g, const struct oc_sample_opts *opts,
                          struct oc_pool *pool, struct oc_sampler **out, struct oc_err *err)
{
    *out = NULL;
    int rc = smp_graph_check_view(g, err);
    if (rc != OC_OK)
        return rc;
    if (!opts)
        return OC_ERR(err, OC_ERR_ARG, "sampler: no options given");
    if (opts->n_layers < 1 || opts->n_layers > OC_SAMPLE_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "sampler: %u layers, expected 1 to %d", opts->n_layers,
                      OC_SAMPLE_MAX_LAYERS);
    uint64_t k_max = 0;
    for (uint32_t l = 0; l < opts->n_layers; l++) {
        int32_t f = opts->fanouts[l];
        if (f < OC_SAMPLE_ALL)
            return OC_ERR(err, OC_ERR_ARG,
                          "sampler: fanout %d of layer %u is invalid (>= 0, or -1 for all)", f, l);
        if (f > 0 && (uint64_t)f > k_max)
            k_max = (uint64_t)f;
    }
    struct oc_sampler *s = oc_calloc(1, sizeof(*s), "sampler", err);
    if (!s)
        return err->status;
    s->g = *g;
    s->opts = *opts;
    s->pool = pool;
    oc_id_map_init(&s->map);
    s->n_workers = oc_pool_n_threads(pool);
    s->workers = oc_calloc(s->n_workers, sizeof(*s->workers), "sampler workers", err);
    if (!s->workers)
        goto fail;
    for (unsigned w = 0; w < s->n_workers; w++) {
        struct smp_worker *wk = &s->workers[w];
        wk->pos = oc_alloc((size_t)(k_max ? k_max : 1) * sizeof(uint64_t), "sampler scratch", err);
        if (!wk->pos)
            goto fail;
        if (k_max > SMP_LINEAR_K) {
            wk->set_cap = 1;
            while (wk->set_cap < 2 * k_max)
                wk->set_cap <<= 1;
            wk->set = oc_calloc((size_t)wk->set_cap, sizeof(uint64_t), "sampler scratch", err);
            if (!wk->set)
                goto fail;
        }
        if (g->disk && smp_topo_reader_init(&wk->rd, g->disk, err) != OC_OK)
            goto fail;
    }
    *out = s;
    return OC_OK;
fail:
    rc = err->status;
    oc_sample_sampler_free(s);
    return rc;
}

void oc_sample_sampler_free(struct oc_sampler *s)
{
    if (!s)
        return;
    for (unsigned w = 0; s->workers && w < s->n_workers; w++) {
        oc_free(s->workers[w].pos);
        oc_free(s->workers[w].set);
        smp_topo_reader_deinit(&s->workers[w].rd);
    }
    oc_free(s->workers);
    oc_id_map_deinit(&s->map);
    oc_free(s->gids);
    oc_free(s->chunk_edges);
    oc_free(s->mask);
    oc_free(s);
}

/* ---- drawing ------------------------------------------------------------ */

static void sort_u64(uint64_t *a, uint64_t n)
{
    if (n > SMP_LINEAR_K) {
        qsort(a, (size_t)n, sizeof(uint64_t), oc_cmp_u64);
        return;
    }
    for (uint64_t i = 1; i < n; i++) {
        uint64_t x = a[i], j = i;
        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Inserts p into the worker's set; returns 0 if it was already there. */
static int set_add(struct smp_worker *wk, uint64_t p)
{
    uint64_t mask = wk->set_cap - 1;
    uint64_t i = (p * 0x9E3779B97F4A7C15ull) >> 32 & mask;
    while (wk->set[i]) {
        if (wk->set[i] == p + 1)
            return 0;
        i = (i + 1) & mask;
    }
    wk->set[i] = p + 1;
    return 1;
}

static void set_remove_all(struct smp_worker *wk, const uint64_t *pos, uint64_t k)
{
    /* zero exactly the slots used, so the set is empty for the next node */
    uint64_t mask = wk->set_cap - 1;
    for (uint64_t j = 0; j < k; j++) {
        uint64_t i = (pos[j] * 0x9E3779B97F4A7C15ull) >> 32 & mask;
        while (wk->set[i] != pos[j] + 1)
            i = (i + 1) & mask;
        wk->set[i] = 0;
    }
    /* a removal can break another key's probe chain only if that key is
       still present; all keys of this node are removed, so none is */
}

/*
 * Chooses k distinct positions of [0, d) uniformly (Floyd's algorithm: one
 * draw per chosen element, whatever d) and sorts them. The membership test is
 * a bitmap up to degree SMP_BITMAP_MAX (its bits read in order are the sorted
 * positions), else a linear scan for small k or a hash set; the same draws
 * give the same positions whichever is used.
 */
static void draw_positions(struct smp_worker *wk, struct oc_rng *r, uint64_t d, uint64_t k)
{
    uint64_t *pos = wk->pos;
    uint64_t n = 0;
    if (d <= SMP_BITMAP_MAX) { /* membership in a bitmap; its set bits are the sorted positions */
        uint64_t bits[SMP_BITMAP_MAX / 64] = {0};
        for (uint64_t j = d - k; j < d; j++) {
            uint64_t t = oc_rng_below(r, j + 1);
            if (bits[t / 64] >> (t % 64) & 1)
                t = j; /* j > every earlier candidate: always new */
            bits[t / 64] |= 1ull << (t % 64);
        }
        for (uint64_t w = 0; w < (d + 63) / 64; w++)
            for (uint64_t b = bits[w]; b; b &= b - 1)
                pos[n++] = w * 64 + (uint64_t)__builtin_ctzll(b);
        return;
    }
    for (uint64_t j = d - k; j < d; j++) {
        uint64_t t = oc_rng_below(r, j + 1);
        int fresh;
        if (k <= SMP_LINEAR_K) {
            fresh = 1;
            for (uint64_t q = 0; q < n; q++)
                if (pos[q] == t) {
                    fresh = 0;
                    break;
                }
        } else {
            fresh = set_add(wk, t);
            if (!fresh)
                set_add(wk, j); /* j > every earlier candidate: always new */
        }
        pos[n++] = fresh ? t : j;
    }
    if (k > SMP_LINEAR_K)
        set_remove_all(wk, pos, k);
    sort_u64(pos, k);
}

/* ---- the layer's phases ------------------------------------------------- */

static void worker_fail(struct smp_worker *wk, uint64_t task)
{
    if (task < wk->bad_task)
        wk->bad_task = task;
}

static uint64_t take_count(int64_t fanout, uint64_t deg)
{
    return fanout < 0 || deg <= (uint64_t)fanout ? deg : (uint64_t)fanout;
}

static int phase_count(void *ctx, uint64_t task, unsigned worker)
{
    struct oc_sampler *s = ctx;
    struct smp_layer *L = &s->cur;
    struct smp_worker *wk = &s->workers[worker];
    uint64_t lo = task * SMP_CHUNK;
    uint64_t hi = lo + SMP_CHUNK < L->n_dst ? lo + SMP_CHUNK : L->n_dst;
    uint64_t sum = 0;
    for (uint64_t i = lo; i < hi; i++) {
        if (i + SMP_PREFETCH < hi)
            smp_graph_prefetch_ptr(&s->g, L->dst[i + SMP_PREFETCH]);
        uint64_t deg;
        int rc = smp_graph_degree(&s->g, L->dst[i], &deg, &wk->err);
        if (rc != OC_OK) {
            worker_fail(wk, task);
            return rc;
        }
        uint64_t c = take_count(L->fanout, deg);
        if (L->pruned && i >= L->n_keep && i - L->n_keep < L->n_pruned_span &&
            L->pruned[i - L->n_keep])
            c = 0; /* OUTRE: its embedding above this block comes from a cache */
        L->blk->indptr[i + 1] = c;
        sum += c;
    }
    s->chunk_edges[task] = sum;
    return OC_OK;
}

/*
 * Checks that the ids drawn for dst[lo .. hi) of task `task` are < n_nodes.
 * indptr[lo] belongs to the previous chunk (maybe still being written by
 * another worker), so the chunk's base offset is taken from chunk_edges.
 */
static int check_ids(struct oc_sampler *s, struct smp_worker *wk, uint64_t task, uint64_t lo,
                     uint64_t hi)
{
    const struct smp_layer *L = &s->cur;
    const uint64_t *indptr = L->blk->indptr;
    uint64_t e = s->chunk_edges[task];
    for (uint64_t i = lo; i < hi; i++)
        for (; e < indptr[i + 1]; e++)
            if (s->gids[e] >= s->g.n_nodes)
                return OC_ERR(&wk->err, OC_ERR_FORMAT,
                              "graph: in-neighbor %llu of node %llu is >= n_nodes %llu",
                              (unsigned long long)s->gids[e], (unsigned long long)L->dst[i],
                              (unsigned long long)s->g.n_nodes);
    return OC_OK;
}

/* Phase B over an on-disk topology: queue the chunk's lists, read them at once, check. */
static int phase_draw_disk(void *ctx, uint64_t task, unsigned worker)
{
    struct oc_sampler *s = ctx;
    struct smp_layer *L = &s->cur;
    struct smp_worker *wk = &s->workers[worker];
    uint64_t *indptr = L->blk->indptr;
    uint64_t lo = task * SMP_CHUNK;
    uint64_t hi = lo + SMP_CHUNK < L->n_dst ? lo + SMP_CHUNK : L->n_dst;
    uint64_t off = s->chunk_edges[task];
    int rc = OC_OK;
    for (uint64_t i = lo; i < hi && rc == OC_OK; i++) {
        if (i + SMP_PREFETCH < hi) {
            smp_graph_prefetch_ptr(&s->g, L->dst[i + SMP_PREFETCH]);
            smp_topo_prefetch_entry(s->g.disk, L->dst[i + SMP_PREFETCH]);
        }
        if (i + SMP_PREFETCH / 2 < hi)
            smp_topo_prefetch_list(s->g.disk, L->dst[i + SMP_PREFETCH / 2]);
        uint64_t v = L->dst[i];
        uint64_t c = indptr[i + 1];
        uint64_t deg = s->g.indptr[v + 1] - s->g.indptr[v]; /* checked in phase A */
        const uint64_t *pos = NULL;
        if (c < deg) {
            struct oc_rng r;
            oc_rng_init(&r, s->opts.seed, L->epoch, L->batch, v * OC_SAMPLE_MAX_LAYERS + L->layer);
            draw_positions(wk, &r, deg, c);
            pos = wk->pos;
        }
        rc = smp_topo_fetch(&wk->rd, v, pos, c, s->gids + off, &wk->err);
        off += c;
        indptr[i + 1] = off;
    }
    if (rc == OC_OK)
        rc = smp_topo_flush(&wk->rd, &wk->err);
    if (rc == OC_OK)
        rc = check_ids(s, wk, task, lo, hi);
    if (rc != OC_OK)
        worker_fail(wk, task);
    return rc;
}

static int phase_draw(void *ctx, uint64_t task, unsigned worker)
{
    struct oc_sampler *s = ctx;
    struct smp_layer *L = &s->cur;
    struct smp_worker *wk = &s->workers[worker];
    uint64_t *indptr = L->blk->indptr;
    uint64_t n_nodes = s->g.n_nodes;
    uint64_t lo = task * SMP_CHUNK;
    uint64_t hi = lo + SMP_CHUNK < L->n_dst ? lo + SMP_CHUNK : L->n_dst;
    uint64_t off = s->chunk_edges[task];
    for (uint64_t i = lo; i < hi; i++) {
        if (i + SMP_PREFETCH < hi)
            smp_graph_prefetch_ptr(&s->g, L->dst[i + SMP_PREFETCH]);
        if (i + SMP_PREFETCH / 2 < hi)
            smp_graph_prefetch_nbrs(&s->g, L->dst[i + SMP_PREFETCH / 2]);
        uint64_t v = L->dst[i];
        uint64_t c = indptr[i + 1];
        struct smp_nbrs nb;
        int rc = smp_graph_nbrs(&s->g, v, &nb, &wk->err); /* checked in phase A */
        uint64_t *outp = s->gids + off;
        if (c == nb.n) {
            for (uint64_t j = 0; j < c; j++)
                outp[j] = smp_nbr_at(&nb, j);
        } else {
            struct oc_rng r;
            oc_rng_init(&r, s->opts.seed, L->epoch, L->batch, v * OC_SAMPLE_MAX_LAYERS + L->layer);
            draw_positions(wk, &r, nb.n, c);
            for (uint64_t j = 0; j < c; j++)
                outp[j] = smp_nbr_at(&nb, wk->pos[j]);
        }
        for (uint64_t j = 0; j < c && rc == OC_OK; j++)
            if (outp[j] >= n_nodes)
                rc = OC_ERR(&wk->err, OC_ERR_FORMAT,
                            "graph: in-neighbor %llu of node %llu is >= n_nodes %llu",
                            (unsigned long long)outp[j], (unsigned long long)v,
                            (unsigned long long)n_nodes);
        if (rc != OC_OK) {
            worker_fail(wk, task);
            return rc;
        }
        off += c;
        indptr[i + 1] = off;
    }
    return OC_OK;
}

/* Runs fn over n_tasks; on failure copies the lowest failing task's error into err. */
static int run_tasks(struct oc_sampler *s, uint64_t n_tasks, oc_pool_fn fn, struct oc_err *err)
{
    for (unsigned w = 0; w < s->n_workers; w++)
        s->workers[w].bad_task = UINT64_MAX;
    int rc = oc_pool_run(s->pool, n_tasks, fn, s);
    if (rc == OC_OK)
        return OC_OK;
    unsigned best = 0;
    for (unsigned w = 1; w < s->n_workers; w++)
        if (s->workers[w].bad_task < s->workers[best].bad_task)
            best = w;
    if (s->workers[best].bad_task == UINT64_MAX)
        return OC_ERR(err, rc, "sampler: a task failed without an error record");
    if (err)
        *err = s->workers[best].err;
    return rc;
}

/* Block l from the destination nodes input_ids[0 .. *n_known); appends new sources. */
static int sample_layer(struct oc_sampler *s, struct oc_sample_batch *out, uint32_t l,
                        int64_t fanout, uint64_t *n_known, const uint8_t *pruned, uint64_t n_keep,
                        uint64_t n_pruned_span, struct oc_err *err)
{
    struct oc_sample_block *blk = &out->blocks[l];
    uint64_t n_dst = *n_known;
    int rc = smp_block_reserve(blk, n_dst, 0, err);
    if (rc != OC_OK)
        return rc;
    uint64_t n_chunks = (n_dst + SMP_CHUNK - 1) / SMP_CHUNK;
    rc = oc_grow_by(&s->chunk_edges, &s->cap_chunks, n_chunks, sizeof(uint64_t), SMP_GROW_FRESH,
                    "sampler chunk table", err);
    if (rc != OC_OK)
        return rc;
    s->cur = (struct smp_layer){.dst = out->input_ids,
                                .n_dst = n_dst,
                                .fanout = fanout,
                                .epoch = out->epoch,
                                .batch = out->batch_index,
                                .layer = l,
                                .blk = blk,
                                .pruned = pruned,
                                .n_keep = n_keep,
                                .n_pruned_span = n_pruned_span};
    rc = run_tasks(s, n_chunks, phase_count, err);
    if (rc != OC_OK)
        return rc;
    uint64_t n_edges = 0;
    for (uint64_t t = 0; t < n_chunks; t++) {
        uint64_t c = s->chunk_edges[t];
        s->chunk_edges[t] = n_edges;
        n_edges += c;
    }
    if ((rc = smp_block_reserve(blk, n_dst, n_edges, err)) != OC_OK ||
        (rc = oc_grow_by(&s->gids, &s->cap_gids, n_edges ? n_edges : 1, sizeof(uint64_t),
                         SMP_GROW_FRESH, "sampler edge buffer", err)) != OC_OK)
        return rc;
    blk->indptr[0] = 0;
    rc = run_tasks(s, n_chunks, s->g.disk ? phase_draw_disk : phase_draw, err);
    if (rc != OC_OK)
        return rc;

    /* the map and input_ids grow as new nodes appear (a batch uses far fewer
       than the n_dst + n_edges worst case, and a smaller map stays in cache) */
    uint64_t known = *n_known;
    uint64_t max_known = n_dst + n_edges < s->g.n_nodes ? n_dst + n_edges : s->g.n_nodes;
    uint64_t *ids = out->input_ids;
    uint32_t *indices = blk->indices;
    const uint64_t *gids = s->gids;
    uint64_t room = 0; /* nodes that fit before the next growth */
    for (uint64_t e = 0; e < n_edges; e++) {
        if (known >= room && known < max_known) {
            uint64_t want = known * 2 > 4096 ? known * 2 : 4096;
            want = want < max_known ? want : max_known;
            if ((rc = smp_batch_reserve_input(out, want, err)) != OC_OK ||
                (rc = oc_id_map_reserve(&s->map, want, "sample id map", err)) != OC_OK)
                return rc;
            ids = out->input_ids;
            room = out->cap_input < s->map.cap / 2 ? out->cap_input : s->map.cap / 2;
        }
        if (e + SMP_PREFETCH_EDGES < n_edges)
            oc_id_map_prefetch(&s->map, gids[e + SMP_PREFETCH_EDGES]);
        int ins;
        uint32_t id = oc_id_map_get_or_put(&s->map, gids[e], (uint32_t)known, &ins);
        if (ins) {
            if (known > UINT32_MAX)
                return OC_ERR(err, OC_ERR_UNSUPPORTED,
                              "sampler: block %u has more than 2^32 source nodes", l);
            ids[known++] = gids[e];
        }
        indices[e] = id;
    }
    blk->n_dst = n_dst;
    blk->n_src = known;
    blk->n_edges = n_edges;
    *n_known = known;
    return OC_OK;
}

static int sample_run(struct oc_sampler *s, uint32_t n_layers, const int32_t *fanouts,
                      uint64_t epoch, uint64_t batch_index, const uint64_t *seeds, uint64_t n_seeds,
                      oc_sample_hop_fn hop, oc_sample_prune_fn prune, struct oc_sample_batch *out,
                      struct oc_err *err)
{
    smp_batch_reset(out);
    if (!seeds && n_seeds)
        return OC_ERR(err, OC_ERR_ARG, "sampler: seeds is NULL");
    if (n_seeds == 0)
        return OC_ERR(err, OC_ERR_ARG, "sampler: no seed nodes given");
    if (n_seeds > UINT32_MAX)
        return OC_ERR(err, OC_ERR_ARG, "sampler: %llu seed nodes, at most 2^32 - 1",
                      (unsigned long long)n_seeds);
    uint64_t cap = n_seeds < s->g.n_nodes ? n_seeds : s->g.n_nodes;
    oc_id_map_clear(&s->map); /* first, so that growing it rehashes nothing */
    int rc;
    if ((rc = smp_batch_reserve_input(out, cap, err)) != OC_OK ||
        (rc = oc_id_map_reserve(&s->map, cap, "sample id map", err)) != OC_OK)
        return rc;
    for (uint64_t i = 0; i < n_seeds; i++) {
        uint64_t v = seeds[i];
        if (v >= s->g.n_nodes)
            return OC_ERR(err, OC_ERR_ARG, "sampler: seed %llu (position %llu) is >= n_nodes %llu",
                          (unsigned long long)v, (unsigned long long)i,
                          (unsigned long long)s->g.n_nodes);
        int ins;
        uint32_t at = oc_id_map_get_or_put(&s->map, v, (uint32_t)i, &ins);
        if (!ins)
            return OC_ERR(err, OC_ERR_ARG,
                          "sampler: seed %llu appears twice (positions %u and %llu)",
                          (unsigned long long)v, at, (unsigned long long)i);
        out->input_ids[i] = v;
    }
    out->epoch = epoch;
    out->batch_index = batch_index;
    uint64_t n_known = n_seeds;
    if (hop && (rc = hop(s->hop_ctx, epoch, batch_index, out->input_ids, 0, n_seeds, err)))
        return rc;
    const uint8_t *pruned = NULL; /* the mask for block L-2, once the hook set it */
    uint64_t n_span = 0;
    for (uint32_t l = n_layers; l-- > 0;) {
        uint64_t lo = n_known;
        int below_last = l + 2 == n_layers;
        rc = sample_layer(s, out, l, fanouts[l], &n_known, below_last ? pruned : NULL, n_seeds,
                          n_span, err);
        if (rc == OC_OK && hop && n_known > lo)
            rc = hop(s->hop_ctx, epoch, batch_index, out->input_ids, lo, n_known, err);
        if (rc == OC_OK && prune && l + 1 == n_layers && n_layers >= 2) {
            /* the last block's sources: the hook marks those whose sub-tree is not needed (it
               runs once per batch, also when no source but the seeds was found: its record) */
            if (n_known > s->cap_mask) {
                oc_free(s->mask);
                s->cap_mask = 0;
                if (!(s->mask = oc_alloc((size_t)n_known + n_known / 2, "sampler prune mask", err)))
                    return err->status;
                s->cap_mask = n_known + n_known / 2;
            }
            memset(s->mask, 0, (size_t)n_known);
            rc = prune(s->prune_ctx, epoch, batch_index, out->input_ids, n_known, n_seeds, s->mask,
                       err);
            pruned = s->mask + n_seeds; /* seeds are never pruned */
            n_span = n_known - n_seeds;
        }
        if (rc != OC_OK)
            return rc;
    }
    out->n_layers = n_layers;
    out->n_seeds = n_seeds;
    out->n_input = n_known;
    return OC_OK;
}

int oc_sample_neighbors(struct oc_sampler *s, uint64_t epoch, uint64_t batch_index,
                        const uint64_t *seeds, uint64_t n_seeds, struct oc_sample_batch *out,
                        struct oc_err *err)
{
    int rc = sample_run(s, s->opts.n_layers, s->opts.fanouts, epoch, batch_index, seeds, n_seeds,
                        s->hop_fn, s->prune_fn, out, err);
    if (rc != OC_OK)
        smp_batch_reset(out);
    return rc;
}

int oc_sample_full_layer(struct oc_sampler *s, const uint64_t *dst, uint64_t n_dst,
                         struct oc_sample_batch *out, struct oc_err *err)
{
    static const int32_t all[1] = {OC_SAMPLE_ALL};
    int rc = sample_run(s, 1, all, 0, 0, dst, n_dst, NULL, NULL, out, err);
    if (rc != OC_OK)
        smp_batch_reset(out);
    return rc;
}

void oc_sample_sampler_on_hop(struct oc_sampler *s, oc_sample_hop_fn fn, void *ctx)
{
    s->hop_fn = fn;
    s->hop_ctx = fn ? ctx : NULL;
}

void oc_sample_sampler_on_prune(struct oc_sampler *s, oc_sample_prune_fn fn, void *ctx)
{
    s->prune_fn = fn;
    s->prune_ctx = fn ? ctx : NULL;
}

void oc_sample_sampler_topo_stats(const struct oc_sampler *s, struct oc_topo_disk_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned w = 0; s->g.disk && w < s->n_workers; w++)
        smp_topo_reader_stats(&s->workers[w].rd, out);
}

void oc_sample_topo_stats_add_since(struct oc_topo_disk_stats *to,
                                    const struct oc_topo_disk_stats *now,
                                    struct oc_topo_disk_stats *mark)
{
    OC_ASSERT(now->n_lookups >= mark->n_lookups && now->n_reads >= mark->n_reads);
    to->n_lookups += now->n_lookups - mark->n_lookups;
    to->n_hits += now->n_hits - mark->n_hits;
    to->requested_bytes += now->requested_bytes - mark->requested_bytes;
    to->read_bytes += now->read_bytes - mark->read_bytes;
    to->n_reads += now->n_reads - mark->n_reads;
    *mark = *now;
}
