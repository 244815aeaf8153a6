/*
 * sample_util.h — helpers for the sample tests: small random CSC graphs with
 * skewed degrees (u32 or u64 indices), edge lookup, and a checker of every
 * invariant a sampled batch must hold.
 *
 * Place in the data flow: tests only.
 * Thread-safety: none needed (single-threaded test code).
 * Ownership: tgraph arrays come from malloc (so the library's allocation
 * counters and fault injection only see the library) and are freed by
 * tgraph_free.
 */
#ifndef OFFCORE_TEST_SAMPLE_UTIL_H
#define OFFCORE_TEST_SAMPLE_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "offcore/rng.h"
#include "offcore/sample.h"

struct tgraph {
    struct oc_graph g;
    uint64_t *indptr;
    uint32_t *idx32;
    uint64_t *idx64;
};

static int tg_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* A graph from explicit CSC arrays (copied); wide = u64 indices. */
static inline void tgraph_from(struct tgraph *t, uint64_t n, const uint64_t *indptr,
                               const uint64_t *indices, int wide)
{
    memset(t, 0, sizeof(*t));
    uint64_t m = indptr[n];
    t->indptr = malloc((n + 1) * sizeof(uint64_t));
    memcpy(t->indptr, indptr, (n + 1) * sizeof(uint64_t));
    if (wide) {
        t->idx64 = malloc((m ? m : 1) * sizeof(uint64_t));
        for (uint64_t e = 0; e < m; e++)
            t->idx64[e] = indices[e];
    } else {
        t->idx32 = malloc((m ? m : 1) * sizeof(uint32_t));
        for (uint64_t e = 0; e < m; e++)
            t->idx32[e] = (uint32_t)indices[e];
    }
    t->g = (struct oc_graph){
        .n_nodes = n, .indptr = t->indptr, .indices32 = t->idx32, .indices64 = t->idx64};
}

/*
 * n nodes; every 16th node has up to `hub_deg` in-neighbors, the rest up to 12;
 * neighbors distinct and ascending; some nodes have none.
 */
static inline void tgraph_random(struct tgraph *t, uint64_t n, uint64_t hub_deg, uint64_t seed,
                                 int wide)
{
    uint64_t *indptr = malloc((n + 1) * sizeof(uint64_t));
    uint64_t cap = 16, m = 0;
    uint64_t *idx = malloc(cap * sizeof(uint64_t));
    indptr[0] = 0;
    for (uint64_t v = 0; v < n; v++) {
        struct oc_rng r;
        oc_rng_init(&r, seed, v, 0, 0);
        uint64_t d = oc_rng_below(&r, v % 16 == 0 ? hub_deg + 1 : 13);
        if (m + d > cap) {
            while (m + d > cap)
                cap *= 2;
            idx = realloc(idx, cap * sizeof(uint64_t));
        }
        for (uint64_t j = 0; j < d; j++) /* skewed sources: low ids are popular */
            idx[m + j] = (uint64_t)((double)n * oc_rng_uniform_f64(&r) * oc_rng_uniform_f64(&r));
        qsort(idx + m, d, sizeof(uint64_t), tg_cmp_u64);
        uint64_t k = 0;
        for (uint64_t j = 0; j < d; j++)
            if (k == 0 || idx[m + k - 1] != idx[m + j])
                idx[m + k++] = idx[m + j];
        m += k;
        indptr[v + 1] = m;
    }
    tgraph_from(t, n, indptr, idx, wide);
    free(indptr);
    free(idx);
}

static inline void tgraph_free(struct tgraph *t)
{
    free(t->indptr);
    free(t->idx32);
    free(t->idx64);
    memset(t, 0, sizeof(*t));
}

static inline uint64_t tgraph_deg(const struct tgraph *t, uint64_t v)
{
    return t->indptr[v + 1] - t->indptr[v];
}

static inline uint64_t tgraph_nbr(const struct tgraph *t, uint64_t v, uint64_t j)
{
    uint64_t e = t->indptr[v] + j;
    return t->idx32 ? t->idx32[e] : t->idx64[e];
}

static inline int tgraph_has_edge(const struct tgraph *t, uint64_t v, uint64_t u)
{
    uint64_t lo = 0, hi = tgraph_deg(t, v);
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2, x = tgraph_nbr(t, v, mid);
        if (x == u)
            return 1;
        if (x < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* A deterministic permutation of the node ids (malloc'd): its prefixes are distinct seeds. */
static inline uint64_t *tperm(uint64_t n_nodes, uint64_t seed)
{
    uint64_t *all = malloc(n_nodes * sizeof(uint64_t));
    for (uint64_t i = 0; i < n_nodes; i++)
        all[i] = i;
    oc_sample_shuffle(seed, 0, all, n_nodes);
    return all;
}

/*
 * Checks every invariant of a sampled batch; returns the number of problems
 * (each printed). fanouts as given to the sampler.
 */
static inline int check_batch(const struct tgraph *t, const struct oc_sample_batch *b,
                              const uint64_t *seeds, uint64_t n_seeds, uint32_t n_layers,
                              const int32_t *fanouts)
{
    int bad = 0;
#define CB_FAIL(...)                      \
    do {                                  \
        if (bad++ < 5) {                  \
            fprintf(stderr, "  batch: "); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n");        \
        }                                 \
    } while (0)
    if (b->n_layers != n_layers || b->n_seeds != n_seeds) {
        CB_FAIL("n_layers %u n_seeds %llu", b->n_layers, (unsigned long long)b->n_seeds);
        return bad;
    }
    for (uint64_t i = 0; i < n_seeds; i++)
        if (b->input_ids[i] != seeds[i])
            CB_FAIL("input_ids[%llu] is not seed", (unsigned long long)i);
    if (b->blocks[0].n_src != b->n_input)
        CB_FAIL("block 0 n_src != n_input");
    if (b->blocks[n_layers - 1].n_dst != n_seeds)
        CB_FAIL("last block n_dst != n_seeds");
    uint64_t *sorted = malloc((b->n_input ? b->n_input : 1) * sizeof(uint64_t));
    memcpy(sorted, b->input_ids, b->n_input * sizeof(uint64_t));
    qsort(sorted, b->n_input, sizeof(uint64_t), tg_cmp_u64);
    for (uint64_t i = 1; i < b->n_input; i++)
        if (sorted[i] == sorted[i - 1])
            CB_FAIL("input id %llu twice", (unsigned long long)sorted[i]);
    free(sorted);
    for (uint32_t l = 0; l < n_layers; l++) {
        const struct oc_sample_block *blk = &b->blocks[l];
        if (l + 1 < n_layers && blk->n_dst != b->blocks[l + 1].n_src)
            CB_FAIL("block %u n_dst != block %u n_src", l, l + 1);
        if (blk->n_dst > blk->n_src || blk->indptr[0] != 0 ||
            blk->indptr[blk->n_dst] != blk->n_edges)
            CB_FAIL("block %u counts", l);
        uint64_t next_new = blk->n_dst;
        for (uint64_t i = 0; i < blk->n_dst; i++) {
            uint64_t v = b->input_ids[i];
            uint64_t deg = tgraph_deg(t, v);
            uint64_t want =
                fanouts[l] < 0 || deg <= (uint64_t)fanouts[l] ? deg : (uint64_t)fanouts[l];
            uint64_t lo = blk->indptr[i], hi = blk->indptr[i + 1];
            if (hi - lo != want)
                CB_FAIL("block %u node %llu: %llu neighbors, want %llu", l, (unsigned long long)v,
                        (unsigned long long)(hi - lo), (unsigned long long)want);
            uint64_t prev = 0;
            for (uint64_t e = lo; e < hi; e++) {
                uint32_t loc = blk->indices[e];
                if (loc >= blk->n_src) {
                    CB_FAIL("block %u local %u >= n_src", l, loc);
                    continue;
                }
                if (loc >= next_new) {
                    if (loc != next_new)
                        CB_FAIL("block %u: new source %u out of first-appearance order", l, loc);
                    next_new = loc + 1;
                }
                uint64_t u = b->input_ids[loc];
                if (!tgraph_has_edge(t, v, u))
                    CB_FAIL("block %u: %llu is not an in-neighbor of %llu", l,
                            (unsigned long long)u, (unsigned long long)v);
                if (e > lo && u <= prev)
                    CB_FAIL("block %u node %llu: neighbors not strictly ascending", l,
                            (unsigned long long)v);
                prev = u;
            }
        }
        if (next_new != blk->n_src)
            CB_FAIL("block %u: %llu sources but only %llu reached", l,
                    (unsigned long long)blk->n_src, (unsigned long long)next_new);
    }
#undef CB_FAIL
    return bad;
}

#endif
