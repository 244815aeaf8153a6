/*
 * ginex_util.h — helpers for the ginex tests: traces of batches (random, or
 * the fixture's planned batches sampled as train samples them) and
 * brute-force simulators straight from the definitions: Belady at batch
 * granularity and LRU one access at a time.
 *
 * Place in the data flow: tests only (sample → traces → simulators).
 * Thread-safety: single-threaded test code.
 * Ownership: trace arrays come from malloc and are freed by trace_free.
 */
#ifndef OFFCORE_TEST_GINEX_UTIL_H
#define OFFCORE_TEST_GINEX_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "offcore/rng.h"
#include "store/ginex/ginex_int.h"
#include "store_fixture.h"

/* ---- traces and brute-force simulators ---------------------------------------- */

/* Batches of distinct ids: off[i]..off[i+1] in ids. */
struct trace {
    uint64_t n_iters, n_acc;
    uint64_t *off, *ids;
};

static inline void trace_free(struct trace *t)
{
    free(t->off);
    free(t->ids);
    memset(t, 0, sizeof(*t));
}

/* T batches of 1..max_b distinct ids below U, skewed to small ids. */
static inline struct trace random_trace(uint64_t seed, uint64_t T, uint64_t U, uint64_t max_b)
{
    struct trace t = {T, 0, calloc(T + 1, sizeof(uint64_t)), calloc(T * max_b, sizeof(uint64_t))};
    uint8_t *seen = calloc(U, 1);
    struct oc_rng r;
    oc_rng_init(&r, seed, 3, 5, 7);
    for (uint64_t i = 0; i < T; i++) {
        uint64_t b = 1 + oc_rng_below(&r, max_b < U ? max_b : U);
        uint64_t got = 0;
        while (got < b) {
            double x = oc_rng_uniform_f64(&r);
            uint64_t id = (uint64_t)((double)U * x * x);
            if (id >= U || seen[id])
                continue;
            seen[id] = 1;
            t.ids[t.n_acc + got++] = id;
        }
        for (uint64_t k = 0; k < b; k++)
            seen[t.ids[t.n_acc + k]] = 0;
        t.n_acc += b;
        t.off[i + 1] = t.n_acc;
    }
    free(seen);
    return t;
}

/* The planned training batches of epochs [e0, e1) of the fixture, as train samples them. */
static inline struct trace sampled_trace(const struct fixture *fx, uint64_t e0, uint64_t e1)
{
    struct oc_err err;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    struct trace t = {0, 0, calloc(1, sizeof(uint64_t)), NULL};
    uint64_t cap = 0;

    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx->train, fx->n_train, fx->batch_size, 0, &err), &err);
    for (uint64_t e = e0; sm && e < e1; e++) {
        oc_sample_epoch_shuffle(&ep, fx->so.seed, e);
        for (uint64_t bi = 0; bi < oc_sample_epoch_n_batches(&ep); bi++) {
            const uint64_t *seeds;
            uint64_t n;
            OC_CHECK_OK(oc_sample_epoch_batch(&ep, bi, &seeds, &n, &err), &err);
            OC_CHECK_OK(oc_sample_neighbors(sm, e, bi, seeds, n, &b, &err), &err);
            if (t.n_acc + b.n_input > cap) {
                cap = 2 * (t.n_acc + b.n_input);
                t.ids = realloc(t.ids, cap * sizeof(uint64_t));
            }
            memcpy(t.ids + t.n_acc, b.input_ids, b.n_input * sizeof(uint64_t));
            t.n_acc += b.n_input;
            t.off = realloc(t.off, (t.n_iters + 2) * sizeof(uint64_t));
            t.off[++t.n_iters] = t.n_acc;
        }
    }
    oc_sample_batch_deinit(&b);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    return t;
}

static inline uint64_t max_id(const struct trace *t)
{
    uint64_t m = 0;
    for (uint64_t a = 0; a < t->n_acc; a++)
        if (t->ids[a] > m)
            m = t->ids[a];
    return m;
}

/*
 * Every id's iterations, ascending (CSR: occ[start[id]..start[id+1])), so the
 * next use after i is a binary search: the brute-force simulator stays
 * straight from the definition and runs on traces of thousands of batches.
 */
struct occurrences {
    uint64_t *start, *occ;
};

static inline struct occurrences occurrences_of(const struct trace *t, uint64_t U)
{
    struct occurrences o = {calloc(U + 1, 8), malloc((t->n_acc + 1) * 8)};
    uint64_t *fill = calloc(U + 1, 8);
    for (uint64_t a = 0; a < t->n_acc; a++)
        o.start[t->ids[a] + 1]++;
    for (uint64_t v = 0; v < U; v++)
        o.start[v + 1] += o.start[v];
    for (uint64_t i = 0; i < t->n_iters; i++)
        for (uint64_t a = t->off[i]; a < t->off[i + 1]; a++)
            o.occ[o.start[t->ids[a]] + fill[t->ids[a]]++] = i;
    free(fill);
    return o;
}

/* First iteration after i that reads id, or T. */
static inline uint64_t next_use(const struct trace *t, const struct occurrences *o, uint64_t i,
                                uint64_t id)
{
    uint64_t lo = o->start[id], hi = o->start[id + 1];
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (o->occ[mid] <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->start[id + 1] ? o->occ[lo] : t->n_iters;
}

static const uint64_t *g_nu; /* qsort context: next use per id (brute_belady) */

static inline int by_next_use(const void *x, const void *y)
{
    uint64_t a = g_nu[*(const uint64_t *)x], b = g_nu[*(const uint64_t *)y];
    return (a > b) - (a < b);
}

/*
 * Belady at batch granularity, straight from the definition: the cache starts
 * with the C rows used first (free), each batch misses what is not cached, then
 * the cache keeps the C rows of (cache ∪ batch) used soonest.
 */
static inline uint64_t brute_belady(const struct trace *t, uint64_t C)
{
    uint64_t U = max_id(t) + 1, n = 0, misses = 0;
    uint8_t *in = calloc(U, 1);
    uint64_t *cand = malloc((C + t->n_acc + 1) * sizeof(uint64_t)), *nu = calloc(U, 8);
    struct occurrences o = occurrences_of(t, U);
    for (uint64_t a = 0; a < t->n_acc && n < C; a++)
        if (!in[t->ids[a]]) {
            in[t->ids[a]] = 1;
            n++;
        }
    for (uint64_t i = 0; i < t->n_iters; i++) {
        uint64_t k = 0;
        for (uint64_t v = 0; v < U; v++)
            if (in[v])
                cand[k++] = v;
        for (uint64_t a = t->off[i]; a < t->off[i + 1]; a++)
            if (!in[t->ids[a]]) {
                misses++;
                cand[k++] = t->ids[a];
            }
        for (uint64_t j = 0; j < k; j++)
            nu[cand[j]] = next_use(t, &o, i, cand[j]);
        g_nu = nu;
        qsort(cand, k, sizeof(uint64_t), by_next_use);
        memset(in, 0, U);
        for (uint64_t j = 0; j < k && j < C; j++)
            in[cand[j]] = 1;
    }
    free(in);
    free(cand);
    free(nu);
    free(o.start);
    free(o.occ);
    return misses;
}

/* LRU, one access at a time, cold. */
static inline uint64_t brute_lru(const struct trace *t, uint64_t C)
{
    uint64_t U = max_id(t) + 1, misses = 0, n = 0;
    uint64_t *stamp = calloc(U, 8); /* last access + 1; 0 = not cached */
    for (uint64_t a = 0; a < t->n_acc; a++) {
        uint64_t id = t->ids[a];
        if (!stamp[id]) {
            misses++;
            if (C == 0)
                continue;
            if (n == C) {
                uint64_t victim = 0, best = UINT64_MAX;
                for (uint64_t v = 0; v < U; v++)
                    if (stamp[v] && stamp[v] < best) {
                        best = stamp[v];
                        victim = v;
                    }
                stamp[victim] = 0;
            } else {
                n++;
            }
        }
        stamp[id] = a + 1;
    }
    free(stamp);
    return misses;
}

/* Batches per epoch of the fixture's plan. */
static inline uint64_t fixture_nb(const struct fixture *fx)
{
    return (fx->n_train + fx->batch_size - 1) / fx->batch_size;
}

#endif
