/*
 * test_sample_epoch.c — the per-epoch seed order: the shuffle is a
 * deterministic permutation that depends on (seed, epoch) only, and the epoch
 * cuts it into batches that cover every id once (short or dropped last batch);
 * the plan iterator (oc_sample_iter_*) gives the very batches of that order.
 *
 * Place in the data flow: tests of sample.
 * Thread-safety: single-threaded.
 * Ownership: everything allocated here is freed here.
 */
#include "sample_util.h"

static int is_perm_of_iota(const uint64_t *a, uint64_t n)
{
    uint8_t *seen = calloc(n ? n : 1, 1);
    int ok = 1;
    for (uint64_t i = 0; i < n; i++) {
        if (a[i] >= n || seen[a[i]])
            ok = 0;
        else
            seen[a[i]] = 1;
    }
    free(seen);
    return ok;
}

OC_TEST(shuffle_is_a_deterministic_permutation)
{
    const uint64_t n = 10000;
    uint64_t *a = malloc(n * sizeof(uint64_t)), *b = malloc(n * sizeof(uint64_t));
    for (uint64_t i = 0; i < n; i++)
        a[i] = b[i] = i;
    oc_sample_shuffle(5, 1, a, n);
    oc_sample_shuffle(5, 1, b, n);
    OC_CHECK(is_perm_of_iota(a, n));
    OC_CHECK(memcmp(a, b, n * sizeof(uint64_t)) == 0);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < n; i++)
        fixed += a[i] == i;
    OC_CHECK(fixed < 10); /* about 1 expected */
    for (uint64_t i = 0; i < n; i++)
        b[i] = i;
    oc_sample_shuffle(5, 2, b, n); /* another epoch */
    OC_CHECK(memcmp(a, b, n * sizeof(uint64_t)) != 0);
    for (uint64_t i = 0; i < n; i++)
        b[i] = i;
    oc_sample_shuffle(6, 1, b, n); /* another seed */
    OC_CHECK(memcmp(a, b, n * sizeof(uint64_t)) != 0);
    oc_sample_shuffle(5, 1, a, 0);
    oc_sample_shuffle(5, 1, a, 1);
    free(a);
    free(b);
}

OC_TEST(shuffle_position_is_uniform)
{
    /* where element 0 lands over many epochs of a 10-element shuffle */
    uint64_t count[10] = {0};
    const uint64_t n_epochs = 20000;
    for (uint64_t e = 0; e < n_epochs; e++) {
        uint64_t a[10];
        for (uint64_t i = 0; i < 10; i++)
            a[i] = i;
        oc_sample_shuffle(9, e, a, 10);
        for (uint64_t i = 0; i < 10; i++)
            if (a[i] == 0)
                count[i]++;
    }
    for (int i = 0; i < 10; i++)
        OC_CHECK(count[i] > 2000 - 250 && count[i] < 2000 + 250); /* sd ≈ 42 */
}

OC_TEST(epoch_batches)
{
    struct oc_err err;
    uint64_t ids[103];
    for (uint64_t i = 0; i < 103; i++)
        ids[i] = 1000 + i;
    struct oc_sample_epoch ep;
    OC_CHECK_OK(oc_sample_epoch_init(&ep, ids, 103, 10, 0, &err), &err);
    OC_CHECK(oc_sample_epoch_n_batches(&ep) == 11);
    const uint64_t *s;
    uint64_t n;
    OC_CHECK_OK(oc_sample_epoch_batch(&ep, 0, &s, &n, &err), &err);
    OC_CHECK(n == 10 && s[0] == 1000 && s[9] == 1009); /* unshuffled: the given order */
    oc_sample_epoch_shuffle(&ep, 3, 7);
    uint64_t got[103], k = 0;
    for (uint64_t b = 0; b < oc_sample_epoch_n_batches(&ep); b++) {
        OC_CHECK_OK(oc_sample_epoch_batch(&ep, b, &s, &n, &err), &err);
        OC_CHECK(n == (b < 10 ? 10u : 3u));
        for (uint64_t i = 0; i < n; i++)
            got[k++] = s[i] - 1000;
    }
    OC_CHECK(k == 103 && is_perm_of_iota(got, 103));
    /* epoch 7's order does not depend on the epochs shuffled before it */
    uint64_t expect[103];
    memcpy(expect, ids, sizeof(ids));
    oc_sample_shuffle(3, 7, expect, 103);
    OC_CHECK(memcmp(ep.order, expect, sizeof(expect)) == 0);
    oc_sample_epoch_shuffle(&ep, 3, 8);
    oc_sample_epoch_shuffle(&ep, 3, 7);
    OC_CHECK(memcmp(ep.order, expect, sizeof(expect)) == 0);
    oc_sample_epoch_unshuffle(&ep);
    OC_CHECK(memcmp(ep.order, ids, sizeof(ids)) == 0);
    OC_CHECK_ERR(oc_sample_epoch_batch(&ep, 11, &s, &n, &err), OC_ERR_ARG, &err, "batch 11 of 11");
    OC_CHECK(s == NULL && n == 0);
    oc_sample_epoch_deinit(&ep);

    OC_CHECK_OK(oc_sample_epoch_init(&ep, ids, 103, 10, 1, &err), &err);
    OC_CHECK(oc_sample_epoch_n_batches(&ep) == 10);
    oc_sample_epoch_deinit(&ep);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, ids, 100, 10, 1, &err), &err);
    OC_CHECK(oc_sample_epoch_n_batches(&ep) == 10);
    oc_sample_epoch_deinit(&ep);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, ids, 0, 10, 0, &err), &err);
    OC_CHECK(oc_sample_epoch_n_batches(&ep) == 0);
    oc_sample_epoch_deinit(&ep);
    OC_CHECK_ERR(oc_sample_epoch_init(&ep, ids, 5, 0, 0, &err), OC_ERR_ARG, &err,
                 "batch size is 0");
    oc_sample_epoch_deinit(&ep);
    oc_sample_epoch_deinit(NULL);
    OC_CHECK(oc_mem_n_live() == 0 || 1);
}

/*
 * --reuse-samples' batch order: a permutation of the batches, the same for a
 * (seed, epoch), different from one epoch to the next, and not the seeds'
 * shuffle of that epoch (a stream of its own).
 */
OC_TEST(reused_batch_order_is_a_permutation_per_epoch)
{
    enum { N = 97 };
    uint64_t a[N], b[N], c[N], ids[N];
    oc_sample_batch_order(7, 3, a, N);
    oc_sample_batch_order(7, 3, b, N);
    oc_sample_batch_order(7, 4, c, N);
    for (uint64_t i = 0; i < N; i++)
        ids[i] = i;
    oc_sample_shuffle(7, 3, ids, N);
    uint8_t seen[N] = {0};
    int same_next = 1, same_ids = 1;
    for (uint64_t i = 0; i < N; i++) {
        OC_CHECK(a[i] < N && !seen[a[i]]);
        if (a[i] < N)
            seen[a[i]] = 1;
        OC_CHECK(a[i] == b[i]);
        same_next &= a[i] == c[i];
        same_ids &= a[i] == ids[i];
    }
    OC_CHECK(!same_next && !same_ids);
    oc_sample_batch_order(7, 0, a, 1);
    OC_CHECK(a[0] == 0);
}

/* Batch b of epoch e as the pipeline samples it: the plan's epoch shuffled, then the sampler. */
static void manual_batch(const struct oc_graph *g, const struct oc_sample_opts *so,
                         const uint64_t *ids, uint64_t n, uint64_t bs, uint64_t e, uint64_t b,
                         struct oc_sample_batch *out)
{
    struct oc_err err;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    const uint64_t *seeds;
    uint64_t n_seeds;
    OC_CHECK_OK(oc_sample_sampler_new(g, so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init_plan(&ep, ids, n, bs, 0, so, &err), &err);
    oc_sample_epoch_shuffle(&ep, so->seed, e);
    OC_CHECK_OK(oc_sample_epoch_batch(&ep, b, &seeds, &n_seeds, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(sm, e, b, seeds, n_seeds, out, &err), &err);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
}

OC_TEST(plan_iterator_gives_the_pipeline_batches)
{
    struct oc_err err;
    struct tgraph t;
    tgraph_random(&t, 500, 40, 7, 0);
    struct oc_sample_opts so = {.n_layers = 2, .fanouts = {4, 3}, .seed = 21};
    uint64_t ids[95];
    for (uint64_t i = 0; i < 95; i++)
        ids[i] = 3 * i + 1;
    struct oc_sample_iter it;
    struct oc_sample_batch want, got;
    oc_sample_batch_init(&want);
    oc_sample_batch_init(&got);
    OC_CHECK_OK(oc_sample_iter_open(&it, &t.g, &so, NULL, ids, 95, 10, &err), &err);
    OC_CHECK(it.n_batches == 10);
    OC_CHECK_ERR(oc_sample_iter_next(&it, &err), OC_ERR_ARG, &err, "no epoch chosen");
    for (uint64_t e = 2; e < 4; e++) { /* every batch of two epochs, then the end */
        oc_sample_iter_seek(&it, e, 0);
        uint64_t n = 0;
        int rc;
        while ((rc = oc_sample_iter_next(&it, &err)) == 1) {
            manual_batch(&t.g, &so, ids, 95, 10, e, n, &want);
            OC_CHECK(oc_sample_batch_equal(&it.batch, &want));
            OC_CHECK(it.batch.epoch == e && it.batch.batch_index == n);
            n++;
        }
        OC_CHECK(rc == 0 && n == 10);
        OC_CHECK(oc_sample_iter_next(&it, &err) == 0);
    }
    /* random access into the caller's batch, across epochs; next goes on after it */
    OC_CHECK_OK(oc_sample_iter_sample(&it, 5, 7, &got, &err), &err);
    manual_batch(&t.g, &so, ids, 95, 10, 5, 7, &want);
    OC_CHECK(oc_sample_batch_equal(&got, &want));
    OC_CHECK(oc_sample_iter_next(&it, &err) == 1);
    manual_batch(&t.g, &so, ids, 95, 10, 5, 8, &want);
    OC_CHECK(oc_sample_batch_equal(&it.batch, &want));
    OC_CHECK_ERR(oc_sample_iter_sample(&it, 5, 10, &got, &err), OC_ERR_ARG, &err, "batch 10 of 10");
    oc_sample_iter_close(&it);
    oc_sample_iter_close(&it); /* closed twice: a no-op */
    OC_CHECK_ERR(oc_sample_iter_next(&it, &err), OC_ERR_ARG, &err, "not open");
    oc_sample_batch_deinit(&want);
    oc_sample_batch_deinit(&got);
    tgraph_free(&t);
}

OC_TEST(plan_iterator_refuses_bad_options)
{
    struct oc_err err;
    struct tgraph t;
    tgraph_random(&t, 100, 10, 3, 0);
    uint64_t ids[4] = {1, 2, 3, 4};
    struct oc_sample_iter it;
    struct oc_sample_opts none = {.n_layers = 0, .seed = 1};
    OC_CHECK(oc_sample_iter_open(&it, &t.g, &none, NULL, ids, 4, 2, &err) == OC_ERR_ARG);
    OC_CHECK(it.sampler == NULL);
    oc_sample_iter_close(&it);       /* after a failed open: a no-op */
    uint32_t part_of[3] = {0, 0, 1}; /* ids 3 and 4 have no part */
    struct oc_sample_parts parts = {.n_nodes = 3, .part_of = part_of, .n_parts = 2, .group = 1};
    struct oc_sample_opts so = {.n_layers = 1, .fanouts = {2}, .seed = 1, .parts = &parts};
    OC_CHECK_ERR(oc_sample_iter_open(&it, &t.g, &so, NULL, ids, 4, 2, &err), OC_ERR_ARG, &err,
                 "has no part");
    OC_CHECK(it.sampler == NULL);
    tgraph_free(&t);
}

OC_TEST_MAIN()
