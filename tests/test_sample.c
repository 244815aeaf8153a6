/*
 * test_sample.c — the neighbor sampler: hand-checked blocks on a tiny graph,
 * the invariants of sampled batches, determinism across thread counts and
 * index widths, independence across (epoch, batch), the distribution of the
 * draws, layer-wise full blocks, argument and graph errors, and allocation
 * failures.
 *
 * Place in the data flow: tests of sample.
 * Thread-safety: single test thread; pools of 1 to 3 workers inside.
 * Ownership: every object created here is freed here; leak checks use
 * oc_mem_n_live.
 */
#include <math.h>

#include "fault_util.h"
#include "sample_util.h"

/*
 * The golden graph (CSC, in-neighbors):
 *   0 ← {1, 2}   1 ← {0, 3, 4}   2 ← {5}   3 ← {}   4 ← {0, 1, 2, 3, 5}   5 ← {4}
 */
static const uint64_t gold_indptr[7] = {0, 2, 5, 6, 6, 11, 12};
static const uint64_t gold_indices[12] = {1, 2, 0, 3, 4, 5, 0, 1, 2, 3, 5, 4};

static void sampler_for(const struct tgraph *t, uint32_t n_layers, const int32_t *fanouts,
                        uint64_t seed, struct oc_pool *pool, struct oc_sampler **s)
{
    struct oc_err err;
    struct oc_sample_opts o = {.n_layers = n_layers, .seed = seed};
    for (uint32_t l = 0; l < n_layers; l++)
        o.fanouts[l] = fanouts[l];
    *s = NULL;
    OC_CHECK_OK(oc_sample_sampler_new(&t->g, &o, pool, s, &err), &err);
}

static int block_is(const struct oc_sample_block *b, uint64_t n_src, uint64_t n_dst,
                    const uint64_t *indptr, const uint32_t *indices)
{
    if (b->n_src != n_src || b->n_dst != n_dst || b->n_edges != indptr[n_dst])
        return 0;
    return memcmp(b->indptr, indptr, (n_dst + 1) * sizeof(uint64_t)) == 0 &&
           memcmp(b->indices, indices, indptr[n_dst] * sizeof(uint32_t)) == 0;
}

OC_TEST(golden_full_neighbors)
{
    for (int wide = 0; wide <= 1; wide++) {
        struct tgraph t;
        tgraph_from(&t, 6, gold_indptr, gold_indices, wide);
        struct oc_err err;
        OC_CHECK_OK(oc_sample_graph_check(&t.g, &err), &err);
        const int32_t all[2] = {-1, -1};
        struct oc_sampler *s;
        sampler_for(&t, 2, all, 7, NULL, &s);
        struct oc_sample_batch b;
        oc_sample_batch_init(&b);

        /* seeds 4, 1: relabel 4→0 1→1, then 0→2 2→3 3→4 5→5 in first appearance */
        const uint64_t seeds[2] = {4, 1};
        OC_CHECK_OK(oc_sample_neighbors(s, 3, 9, seeds, 2, &b, &err), &err);
        const uint64_t ids[6] = {4, 1, 0, 2, 3, 5};
        OC_CHECK(b.n_layers == 2 && b.n_seeds == 2 && b.n_input == 6);
        OC_CHECK(b.epoch == 3 && b.batch_index == 9);
        OC_CHECK(memcmp(b.input_ids, ids, sizeof(ids)) == 0);
        const uint64_t p1[3] = {0, 5, 8};
        const uint32_t i1[8] = {2, 1, 3, 4, 5, 2, 4, 0};
        OC_CHECK(block_is(&b.blocks[1], 6, 2, p1, i1));
        const uint64_t p0[7] = {0, 5, 8, 10, 11, 11, 12};
        const uint32_t i0[12] = {2, 1, 3, 4, 5, 2, 4, 0, 1, 3, 5, 0};
        OC_CHECK(block_is(&b.blocks[0], 6, 6, p0, i0));
        OC_CHECK(oc_sample_batch_n_edges(&b) == 20);

        /* seed 2: 2←5 adds 5, then 5←4 adds 4 in the input block */
        const uint64_t seed2[1] = {2};
        OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, seed2, 1, &b, &err), &err);
        const uint64_t ids2[3] = {2, 5, 4};
        OC_CHECK(b.n_input == 3 && memcmp(b.input_ids, ids2, sizeof(ids2)) == 0);
        const uint64_t q1[2] = {0, 1};
        const uint32_t j1[1] = {1};
        OC_CHECK(block_is(&b.blocks[1], 2, 1, q1, j1));
        const uint64_t q0[3] = {0, 1, 2};
        const uint32_t j0[2] = {1, 2};
        OC_CHECK(block_is(&b.blocks[0], 3, 2, q0, j0));

        /* a node without in-neighbors: empty blocks */
        const uint64_t seed3[1] = {3};
        OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, seed3, 1, &b, &err), &err);
        OC_CHECK(b.n_input == 1 && b.blocks[0].n_edges == 0 && b.blocks[1].n_edges == 0);
        OC_CHECK(b.blocks[0].indptr[1] == 0);

        /* fanout 0 in the input layer: block 0 has no edges */
        const int32_t f0[2] = {0, -1};
        struct oc_sampler *s0;
        sampler_for(&t, 2, f0, 7, NULL, &s0);
        OC_CHECK_OK(oc_sample_neighbors(s0, 0, 0, seeds, 2, &b, &err), &err);
        OC_CHECK(b.n_input == 6 && b.blocks[0].n_edges == 0 && b.blocks[1].n_edges == 8);
        OC_CHECK(check_batch(&t, &b, seeds, 2, 2, f0) == 0);

        oc_sample_sampler_free(s0);
        oc_sample_batch_deinit(&b);
        oc_sample_sampler_free(s);
        tgraph_free(&t);
    }
}

OC_TEST(golden_sampled_small_fanout)
{
    /* fanout 2 on node 4 (degree 5): two distinct in-neighbors, ascending */
    struct tgraph t;
    tgraph_from(&t, 6, gold_indptr, gold_indices, 0);
    const int32_t f[1] = {2};
    struct oc_sampler *s;
    sampler_for(&t, 1, f, 1, NULL, &s);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    struct oc_err err;
    const uint64_t seeds[3] = {4, 0, 2};
    for (uint64_t e = 0; e < 50; e++) {
        OC_CHECK_OK(oc_sample_neighbors(s, e, 0, seeds, 3, &b, &err), &err);
        OC_CHECK(check_batch(&t, &b, seeds, 3, 1, f) == 0);
        /* nodes with degree <= fanout keep all their in-neighbors */
        OC_CHECK(b.blocks[0].indptr[1] == 2 && b.blocks[0].indptr[3] == 5);
    }
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    tgraph_free(&t);
}

OC_TEST(sampled_invariants)
{
    struct tgraph t;
    tgraph_random(&t, 3000, 200, 11, 0);
    const int32_t cases[4][3] = {{5, 3, 2}, {40, -1, 10}, {-1, 0, 7}, {1, 1, 1}};
    uint64_t *perm = tperm(t.g.n_nodes, 5);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    struct oc_err err;
    for (int c = 0; c < 4; c++) {
        struct oc_sampler *s;
        sampler_for(&t, 3, cases[c], 99, NULL, &s);
        for (uint64_t bi = 0; bi < 6; bi++) {
            uint64_t n = 1 + bi * 37;
            OC_CHECK_OK(oc_sample_neighbors(s, 1, bi, perm + bi * 300, n, &b, &err), &err);
            OC_CHECK(check_batch(&t, &b, perm + bi * 300, n, 3, cases[c]) == 0);
        }
        oc_sample_sampler_free(s);
    }
    free(perm);
    oc_sample_batch_deinit(&b);
    tgraph_free(&t);
}

OC_TEST(same_batch_at_any_thread_count_and_width)
{
    struct tgraph t32, t64;
    tgraph_random(&t32, 6000, 120, 3, 0);
    tgraph_random(&t64, 6000, 120, 3, 1);
    const int32_t f[3] = {8, 40, 3};
    uint64_t *perm = tperm(t32.g.n_nodes, 8);
    struct oc_err err;
    struct oc_sample_batch ref, b;
    oc_sample_batch_init(&ref);
    oc_sample_batch_init(&b);
    struct oc_sampler *s;
    sampler_for(&t32, 3, f, 2024, NULL, &s);
    OC_CHECK_OK(oc_sample_neighbors(s, 4, 17, perm, 900, &ref, &err), &err);
    OC_CHECK(check_batch(&t32, &ref, perm, 900, 3, f) == 0);
    OC_CHECK(ref.blocks[0].n_dst > 3 * 512); /* every worker of 3 gets chunks */
    oc_sample_sampler_free(s);
    for (unsigned nt = 1; nt <= 3; nt++) {
        struct oc_pool *pool;
        OC_CHECK_OK(oc_pool_new(nt, &pool, &err), &err);
        for (int wide = 0; wide <= 1; wide++) {
            sampler_for(wide ? &t64 : &t32, 3, f, 2024, pool, &s);
            for (int rep = 0; rep < 2; rep++) {
                OC_CHECK_OK(oc_sample_neighbors(s, 4, 17, perm, 900, &b, &err), &err);
                OC_CHECK(oc_sample_batch_equal(&ref, &b));
            }
            oc_sample_sampler_free(s);
        }
        oc_pool_free(pool);
    }
    free(perm);
    oc_sample_batch_deinit(&ref);
    oc_sample_batch_deinit(&b);
    tgraph_free(&t32);
    tgraph_free(&t64);
}

OC_TEST(epoch_and_batch_change_the_draw)
{
    struct tgraph t;
    tgraph_random(&t, 2000, 100, 4, 0);
    const int32_t f[2] = {5, 5};
    uint64_t *perm = tperm(t.g.n_nodes, 1);
    struct oc_err err;
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    struct oc_sampler *s, *s2;
    sampler_for(&t, 2, f, 1, NULL, &s);
    sampler_for(&t, 2, f, 2, NULL, &s2);
    OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, perm, 200, &a, &err), &err);
    const uint64_t eb[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    for (int i = 0; i < 3; i++) {
        OC_CHECK_OK(oc_sample_neighbors(s, eb[i][0], eb[i][1], perm, 200, &b, &err), &err);
        OC_CHECK(check_batch(&t, &b, perm, 200, 2, f) == 0);
        b.epoch = a.epoch; /* compare the draws only */
        b.batch_index = a.batch_index;
        OC_CHECK(!oc_sample_batch_equal(&a, &b));
    }
    /* layers draw independently: a seed is a destination of both blocks, and
       its two neighbor lists (of a hub, 5 of many) differ somewhere */
    uint64_t differ = 0;
    for (uint64_t i = 0; i < a.n_seeds; i++) {
        const struct oc_sample_block *b0 = &a.blocks[0], *b1 = &a.blocks[1];
        uint64_t n0 = b0->indptr[i + 1] - b0->indptr[i], n1 = b1->indptr[i + 1] - b1->indptr[i];
        if (n0 != n1 || memcmp(b0->indices + b0->indptr[i], b1->indices + b1->indptr[i],
                               n0 * sizeof(uint32_t)) != 0)
            differ++;
    }
    OC_CHECK(differ > 0);
    /* another run seed changes it too; the same arguments do not */
    OC_CHECK_OK(oc_sample_neighbors(s2, 0, 0, perm, 200, &b, &err), &err);
    OC_CHECK(!oc_sample_batch_equal(&a, &b));
    OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, perm, 200, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&a, &b));
    oc_sample_sampler_free(s);
    oc_sample_sampler_free(s2);
    free(perm);
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    tgraph_free(&t);
}

/* Star: node 0's in-neighbors are 1..deg. Each should be drawn with p = k/deg. */
static void check_distribution(uint64_t deg, int32_t k, uint64_t n_epochs)
{
    uint64_t *indptr = malloc((deg + 2) * sizeof(uint64_t));
    uint64_t *idx = malloc(deg * sizeof(uint64_t));
    indptr[0] = 0;
    for (uint64_t v = 1; v <= deg + 1; v++)
        indptr[v] = deg;
    for (uint64_t j = 0; j < deg; j++)
        idx[j] = j + 1;
    struct tgraph t;
    tgraph_from(&t, deg + 1, indptr, idx, 0);
    free(indptr);
    free(idx);
    const int32_t f[1] = {k};
    struct oc_sampler *s;
    sampler_for(&t, 1, f, 77, NULL, &s);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    uint64_t *count = calloc(deg + 1, sizeof(uint64_t));
    uint64_t *pair = calloc(deg + 1, sizeof(uint64_t)); /* times 1 and j were drawn together */
    struct oc_err err;
    const uint64_t seed0[1] = {0};
    for (uint64_t e = 0; e < n_epochs; e++) {
        OC_CHECK_OK(oc_sample_neighbors(s, e, 3, seed0, 1, &b, &err), &err);
        OC_CHECK(b.blocks[0].n_edges == (uint64_t)k);
        int has1 = 0;
        for (uint64_t x = 0; x < b.blocks[0].n_edges; x++)
            has1 |= b.input_ids[b.blocks[0].indices[x]] == 1;
        for (uint64_t x = 0; x < b.blocks[0].n_edges; x++) {
            uint64_t u = b.input_ids[b.blocks[0].indices[x]];
            count[u]++;
            if (has1)
                pair[u]++;
        }
    }
    double p = (double)k / (double)deg;
    double mean = (double)n_epochs * p;
    double sd = sqrt((double)n_epochs * p * (1 - p));
    double chi2 = 0;
    int worst_ok = 1;
    for (uint64_t u = 1; u <= deg; u++) {
        double d = (double)count[u] - mean;
        chi2 += d * d / mean;
        if (fabs(d) > 6 * sd) {
            fprintf(stderr, "  neighbor %llu drawn %llu times, expected %.0f ± %.0f\n",
                    (unsigned long long)u, (unsigned long long)count[u], mean, sd);
            worst_ok = 0;
        }
    }
    OC_CHECK(worst_ok);
    /* E[Σ(c - E)²/E] = deg·(1-p), as each count is Binomial(n, p) */
    double want = (1 - p) * (double)deg;
    OC_CHECK(chi2 < want + 6 * sqrt(2 * want) + 5);
    /* pairs: P(j | 1 drawn) = (k-1)/(deg-1) — catches draws that are uniform per
       element but correlated, e.g. a random window of consecutive neighbors */
    double pj = (double)(k - 1) / (double)(deg - 1);
    double m1 = (double)count[1] * pj;
    double sd1 = sqrt((double)count[1] * pj * (1 - pj));
    int pair_ok = 1;
    for (uint64_t u = 2; u <= deg; u++)
        if (fabs((double)pair[u] - m1) > 6 * sd1 + 1)
            pair_ok = 0;
    OC_CHECK(pair_ok);
    free(count);
    free(pair);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    tgraph_free(&t);
}

OC_TEST(draws_are_uniform_without_replacement)
{
    check_distribution(40, 10, 4000);  /* degree <= 512: bitmap path */
    check_distribution(120, 50, 2000); /* bitmap path, large fanout */
    check_distribution(7, 6, 3000);
    check_distribution(700, 10, 4000); /* degree > 512, small fanout: linear-scan path */
    check_distribution(600, 50, 3000); /* degree > 512, large fanout: hash-set path */
}

OC_TEST(full_layer_blocks)
{
    struct tgraph t;
    tgraph_random(&t, 2500, 300, 6, 0);
    const int32_t all[1] = {-1};
    const int32_t f[2] = {3, 3};
    struct oc_pool *pool;
    struct oc_err err;
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    struct oc_sampler *s, *sall;
    sampler_for(&t, 2, f, 5, pool, &s);
    sampler_for(&t, 1, all, 5, pool, &sall);
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    /* layer-wise inference walks the nodes in chunks: ids lo .. hi */
    uint64_t *chunk = malloc(1000 * sizeof(uint64_t));
    for (uint64_t lo = 0; lo < t.g.n_nodes; lo += 1000) {
        uint64_t n = t.g.n_nodes - lo < 1000 ? t.g.n_nodes - lo : 1000;
        for (uint64_t i = 0; i < n; i++)
            chunk[i] = lo + i;
        OC_CHECK_OK(oc_sample_full_layer(s, chunk, n, &a, &err), &err);
        OC_CHECK(a.n_layers == 1 && a.epoch == 0 && a.batch_index == 0);
        OC_CHECK(check_batch(&t, &a, chunk, n, 1, all) == 0);
        uint64_t want_edges = t.indptr[lo + n] - t.indptr[lo];
        OC_CHECK(a.blocks[0].n_edges == want_edges);
        OC_CHECK_OK(oc_sample_neighbors(sall, 0, 0, chunk, n, &b, &err), &err);
        OC_CHECK(oc_sample_batch_equal(&a, &b));
    }
    free(chunk);
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    oc_sample_sampler_free(sall);
    oc_pool_free(pool);
    tgraph_free(&t);
}

OC_TEST(batch_reuse_matches_fresh)
{
    struct tgraph t;
    tgraph_random(&t, 4000, 150, 9, 0);
    const int32_t f[2] = {10, 10};
    uint64_t *perm = tperm(t.g.n_nodes, 2);
    struct oc_sampler *s;
    sampler_for(&t, 2, f, 3, NULL, &s);
    struct oc_err err;
    struct oc_sample_batch reused, fresh;
    oc_sample_batch_init(&reused);
    const uint64_t sizes[4] = {1000, 3, 400, 1};
    for (int i = 0; i < 4; i++) {
        OC_CHECK_OK(oc_sample_neighbors(s, 2, (uint64_t)i, perm, sizes[i], &reused, &err), &err);
        oc_sample_batch_init(&fresh);
        OC_CHECK_OK(oc_sample_neighbors(s, 2, (uint64_t)i, perm, sizes[i], &fresh, &err), &err);
        OC_CHECK(oc_sample_batch_equal(&reused, &fresh));
        oc_sample_batch_deinit(&fresh);
    }
    /* steady state: the same batch again allocates nothing */
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_sample_neighbors(s, 2, 0, perm, 1000, &reused, &err), &err);
    OC_CHECK(oc_mem_n_live() == live);
    free(perm);
    oc_sample_batch_deinit(&reused);
    oc_sample_sampler_free(s);
    tgraph_free(&t);
}

/* Records the hops a sampler shows: their [lo, hi) ranges and ids; fails at hop `fail_at`. */
struct hop_log {
    uint64_t lo[8], hi[8], epoch, batch;
    uint64_t *ids;
    int n, fail_at;
};

static int log_hop(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t lo,
                   uint64_t hi, struct oc_err *err)
{
    struct hop_log *h = ctx;
    if (h->n == h->fail_at)
        return OC_ERR(err, OC_ERR_IO, "hop %d refused", h->n);
    h->lo[h->n] = lo;
    h->hi[h->n] = hi;
    h->epoch = epoch;
    h->batch = batch;
    memcpy(h->ids + lo, ids + lo, (hi - lo) * sizeof(uint64_t));
    h->n++;
    return OC_OK;
}

OC_TEST(hop_hook_partitions_input_ids_and_changes_nothing)
{
    struct tgraph t;
    tgraph_random(&t, 4000, 150, 9, 0);
    const int32_t f[2] = {10, 10};
    uint64_t *perm = tperm(t.g.n_nodes, 2);
    struct oc_sampler *s;
    sampler_for(&t, 2, f, 3, NULL, &s);
    struct oc_err err;
    struct oc_sample_batch ref, b;
    oc_sample_batch_init(&ref);
    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_neighbors(s, 5, 7, perm, 300, &ref, &err), &err);
    struct hop_log h;
    memset(&h, 0, sizeof(h));
    h.fail_at = -1;
    h.ids = calloc(ref.n_input, sizeof(uint64_t));
    oc_sample_sampler_on_hop(s, log_hop, &h);
    OC_CHECK_OK(oc_sample_neighbors(s, 5, 7, perm, 300, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&ref, &b));
    OC_CHECK(h.n == 3 && h.epoch == 5 && h.batch == 7);
    OC_CHECK(h.lo[0] == 0 && h.hi[0] == 300);
    for (int k = 1; k < h.n; k++)
        OC_CHECK(h.lo[k] == h.hi[k - 1]);
    OC_CHECK(h.hi[h.n - 1] == ref.n_input);
    OC_CHECK(memcmp(h.ids, ref.input_ids, ref.n_input * sizeof(uint64_t)) == 0);
    /* a hook's error stops the sampling with it */
    memset(h.lo, 0, sizeof(h.lo));
    h.n = 0;
    h.fail_at = 1;
    OC_CHECK_ERR(oc_sample_neighbors(s, 5, 7, perm, 300, &b, &err), OC_ERR_IO, &err,
                 "hop 1 refused");
    oc_sample_sampler_on_hop(s, NULL, NULL);
    OC_CHECK_OK(oc_sample_neighbors(s, 5, 7, perm, 300, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&ref, &b));
    free(h.ids);
    free(perm);
    oc_sample_batch_deinit(&ref);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    tgraph_free(&t);
}

OC_TEST(bad_arguments)
{
    struct tgraph t;
    tgraph_from(&t, 6, gold_indptr, gold_indices, 0);
    struct oc_err err;
    struct oc_sampler *s = (struct oc_sampler *)&t; /* must be reset to NULL on failure */
    struct oc_sample_opts o = {.n_layers = 0, .seed = 1};
    OC_CHECK_ERR(oc_sample_sampler_new(&t.g, &o, NULL, &s, &err), OC_ERR_ARG, &err, "0 layers");
    OC_CHECK(s == NULL);
    o.n_layers = OC_SAMPLE_MAX_LAYERS + 1;
    OC_CHECK_ERR(oc_sample_sampler_new(&t.g, &o, NULL, &s, &err), OC_ERR_ARG, &err, "9 layers");
    o.n_layers = 2;
    o.fanouts[0] = 5;
    o.fanouts[1] = -2;
    OC_CHECK_ERR(oc_sample_sampler_new(&t.g, &o, NULL, &s, &err), OC_ERR_ARG, &err,
                 "fanout -2 of layer 1");
    o.fanouts[1] = -1;
    OC_CHECK_ERR(oc_sample_sampler_new(NULL, &o, NULL, &s, &err), OC_ERR_ARG, &err, "no graph");
    OC_CHECK_ERR(oc_sample_sampler_new(&t.g, NULL, NULL, &s, &err), OC_ERR_ARG, &err, "no options");
    struct oc_graph g = t.g;
    g.indices64 = (const uint64_t *)t.idx32;
    OC_CHECK_ERR(oc_sample_sampler_new(&g, &o, NULL, &s, &err), OC_ERR_ARG, &err, "both are");
    g.indices64 = NULL;
    g.indices32 = NULL;
    OC_CHECK_ERR(oc_sample_sampler_new(&g, &o, NULL, &s, &err), OC_ERR_ARG, &err, "neither is");
    g = t.g;
    g.n_nodes = 0;
    OC_CHECK_ERR(oc_sample_sampler_new(&g, &o, NULL, &s, &err), OC_ERR_ARG, &err, "n_nodes is 0");

    OC_CHECK_OK(oc_sample_sampler_new(&t.g, &o, NULL, &s, &err), &err);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    const uint64_t out_of_range[2] = {1, 6};
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, out_of_range, 2, &b, &err), OC_ERR_ARG, &err,
                 "seed 6 (position 1) is >= n_nodes 6");
    OC_CHECK(b.n_layers == 0);
    const uint64_t dup[3] = {4, 1, 4};
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, dup, 3, &b, &err), OC_ERR_ARG, &err,
                 "seed 4 appears twice (positions 0 and 2)");
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, dup, 0, &b, &err), OC_ERR_ARG, &err, "no seed");
    OC_CHECK_ERR(oc_sample_full_layer(s, dup, 3, &b, &err), OC_ERR_ARG, &err, "twice");
    /* the batch is still usable after failures */
    OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, dup, 2, &b, &err), &err);
    OC_CHECK(check_batch(&t, &b, dup, 2, 2, o.fanouts) == 0);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    oc_sample_sampler_free(NULL);
    oc_sample_batch_deinit(NULL);
    tgraph_free(&t);
}

OC_TEST(malformed_graph_is_a_format_error)
{
    struct oc_err err;
    const int32_t all[2] = {-1, -1};
    /* indptr decreasing at node 2 */
    const uint64_t bad_ptr[7] = {0, 2, 5, 4, 6, 11, 12};
    struct tgraph t;
    tgraph_from(&t, 6, bad_ptr, gold_indices, 0);
    OC_CHECK_ERR(oc_sample_graph_check(&t.g, &err), OC_ERR_FORMAT, &err,
                 "indptr decreases at node 2");
    struct oc_sampler *s;
    sampler_for(&t, 2, all, 1, NULL, &s);
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    const uint64_t seed2[1] = {2};
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, seed2, 1, &b, &err), OC_ERR_FORMAT, &err,
                 "indptr decreases at node 2");
    OC_CHECK(b.n_layers == 0);
    oc_sample_sampler_free(s);
    tgraph_free(&t);

    /* an in-neighbor id past the graph, seen only through node 5 */
    uint64_t bad_idx[12];
    memcpy(bad_idx, gold_indices, sizeof(bad_idx));
    bad_idx[11] = 6;
    tgraph_from(&t, 6, gold_indptr, bad_idx, 1);
    OC_CHECK_ERR(oc_sample_graph_check(&t.g, &err), OC_ERR_FORMAT, &err,
                 "in-neighbor 6 of node 5 is >= n_nodes 6");
    sampler_for(&t, 2, all, 1, NULL, &s);
    const uint64_t seed0[1] = {0};
    OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, seed0, 1, &b, &err), &err);
    OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, seed2, 1, &b, &err), OC_ERR_FORMAT, &err,
                 "in-neighbor 6 of node 5");
    oc_sample_sampler_free(s);
    tgraph_free(&t);

    const uint64_t nonzero[7] = {1, 2, 5, 6, 6, 11, 12};
    tgraph_from(&t, 6, nonzero, gold_indices, 0);
    OC_CHECK_ERR(oc_sample_graph_check(&t.g, &err), OC_ERR_FORMAT, &err, "indptr[0] is 1");
    oc_sample_batch_deinit(&b);
    tgraph_free(&t);
}

/* The error from a failing task names the lowest failing chunk, whatever the thread count. */
OC_TEST(parallel_error_is_deterministic)
{
    struct tgraph t;
    tgraph_random(&t, 5000, 20, 12, 0);
    /* corrupt two nodes' lists far apart: node 4000 is in a later chunk than node 100 */
    t.idx32[t.indptr[100]] = 99999;
    t.idx32[t.indptr[4000]] = 88888;
    OC_CHECK(tgraph_deg(&t, 100) > 0 && tgraph_deg(&t, 4000) > 0);
    uint64_t *ids = malloc(5000 * sizeof(uint64_t));
    for (uint64_t i = 0; i < 5000; i++)
        ids[i] = 4999 - i; /* node 4000 comes first in the destination order */
    const int32_t all[1] = {-1};
    struct oc_err err;
    for (unsigned nt = 1; nt <= 3; nt++) {
        struct oc_pool *pool;
        OC_CHECK_OK(oc_pool_new(nt, &pool, &err), &err);
        struct oc_sampler *s;
        sampler_for(&t, 1, all, 1, pool, &s);
        struct oc_sample_batch b;
        oc_sample_batch_init(&b);
        OC_CHECK_ERR(oc_sample_neighbors(s, 0, 0, ids, 5000, &b, &err), OC_ERR_FORMAT, &err,
                     "in-neighbor 88888 of node 4000");
        oc_sample_batch_deinit(&b);
        oc_sample_sampler_free(s);
        oc_pool_free(pool);
    }
    free(ids);
    tgraph_free(&t);
}

OC_TEST(allocation_failures_are_clean)
{
    struct tgraph t;
    tgraph_random(&t, 3000, 100, 13, 0);
    const int32_t f[3] = {40, 5, -1};
    uint64_t *perm = tperm(t.g.n_nodes, 3);
    struct oc_err err;
    uint64_t base = oc_mem_n_live();
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        int done = 0;
        uint64_t n_failed = 0;
        for (uint64_t nth = 1; nth < 200 && !done; nth++) {
            struct oc_pool *pool;
            OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, 0);
            struct oc_sample_opts o = {.n_layers = 3, .seed = 1};
            memcpy(o.fanouts, f, sizeof(f));
            struct oc_sampler *s = NULL;
            struct oc_sample_batch b;
            oc_sample_batch_init(&b);
            int rc = oc_sample_sampler_new(&t.g, &o, pool, &s, &err);
            for (uint64_t i = 0; rc == OC_OK && i < 3; i++)
                rc = oc_sample_neighbors(s, 0, i, perm + 100 * i, 10 + 300 * i, &b, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (!fired) {
                OC_CHECK(rc == OC_OK);
                done = 1;
            } else {
                n_failed++;
                OC_CHECK(rc == OC_ERR_NOMEM);
                OC_CHECK(b.n_layers == 0);
                /* a failed batch is reusable once memory is back */
                if (s) {
                    OC_CHECK_OK(oc_sample_neighbors(s, 0, 0, perm, 10, &b, &err), &err);
                    OC_CHECK(check_batch(&t, &b, perm, 10, 3, f) == 0);
                }
            }
            oc_sample_batch_deinit(&b);
            oc_sample_sampler_free(s);
            oc_pool_free(pool);
            OC_CHECK(oc_mem_n_live() == base);
        }
        OC_CHECK(done && n_failed > 0);
    }
    free(perm);
    tgraph_free(&t);
}

OC_TEST_MAIN()
