/*
 * test_store_static.c — what the `static` cache holds: exactly the C hottest
 * rows by in-degree, or by occurrences among epoch 0's input ids (replayed
 * here independently with the sampler), ties to the lower id, in both lookup
 * layouts (sorted ids for small budgets, the node table for larger ones), at
 * 1 and 3 threads; cached rows are hits and the rest misses. Under a budget
 * the cache gives its coldest rows back to a request the budget could not
 * otherwise give and takes them back when memory frees, rows always right,
 * also while another thread gathers.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → store).
 * Thread-safety: test code is single-threaded; the store may use a pool.
 * Ownership: every store, pool and fixture is freed by the test that made it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "store/static/static_int.h"
#include "store_fixture.h"

static const uint64_t *g_hot; /* qsort context */

/* Hotter first, then lower id. */
static int by_hotness(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    if (g_hot[a] != g_hot[b])
        return g_hot[a] > g_hot[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* Occurrences of each node among the input ids of epoch 0's batches, as train would sample them. */
static uint64_t *epoch0_counts(const struct fixture *fx)
{
    struct oc_err err;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    uint64_t *counts = calloc(fx->n_nodes, sizeof(uint64_t));

    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx->train, fx->n_train, fx->batch_size, 0, &err), &err);
    oc_sample_epoch_shuffle(&ep, fx->so.seed, 0);
    for (uint64_t bi = 0; sm && bi < oc_sample_epoch_n_batches(&ep); bi++) {
        const uint64_t *seeds;
        uint64_t n;
        OC_CHECK_OK(oc_sample_epoch_batch(&ep, bi, &seeds, &n, &err), &err);
        OC_CHECK_OK(oc_sample_neighbors(sm, 0, bi, seeds, n, &b, &err), &err);
        for (uint64_t k = 0; k < b.n_input; k++)
            counts[b.input_ids[k]]++;
    }
    oc_sample_batch_deinit(&b);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    return counts;
}

/* Checks s caches exactly the n_cached hottest nodes of hot[], and that hits/misses follow. */
static void check_cached_set(const struct fixture *fx, struct oc_store *s, const uint64_t *hot)
{
    struct oc_err err;
    uint64_t n = fx->n_nodes, c = oc_store_static_n_cached(s);
    uint64_t *order = malloc(n * sizeof(uint64_t));
    uint8_t *want = calloc(n, 1);
    for (uint64_t v = 0; v < n; v++)
        order[v] = v;
    g_hot = hot;
    qsort(order, n, sizeof(uint64_t), by_hotness);
    for (uint64_t k = 0; k < c; k++)
        want[order[k]] = 1;
    uint64_t wrong = 0;
    for (uint64_t v = 0; v < n; v++)
        wrong += oc_store_static_is_cached(s, v) != want[v];
    OC_CHECK(wrong == 0);
    OC_CHECK(c > 0 && c < n);
    /* The boundary is a real choice: the last cached row is at least as hot as the first left. */
    OC_CHECK(hot[order[c - 1]] >= hot[order[c]]);

    /* The cached rows are hits, the others misses. */
    float *out = malloc(n * fx->dim * sizeof(float));
    struct oc_store_stats st0, st1;
    oc_store_stats(s, &st0);
    OC_CHECK_OK(oc_store_gather(s, order, c, out, &err), &err);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_CPU] - st0.tier_rows[OC_STORE_TIER_CPU] == c);
    OC_CHECK(st1.read_bytes == st0.read_bytes);
    OC_CHECK_OK(oc_store_gather(s, order + c, n - c, out + c * fx->dim, &err), &err);
    oc_store_stats(s, &st0);
    OC_CHECK(st0.tier_rows[OC_STORE_TIER_DISK] - st1.tier_rows[OC_STORE_TIER_DISK] == n - c);
    OC_CHECK(st0.requested_disk_bytes - st1.requested_disk_bytes == (n - c) * fx->row_bytes);
    OC_CHECK(st0.read_bytes >= st0.requested_disk_bytes);
    for (uint64_t k = 0; k < n; k++)
        OC_CHECK(memcmp(out + k * fx->dim, fx->ref + order[k] * fx->dim, fx->dim * 4) == 0);
    free(out);
    free(order);
    free(want);
}

static void hottest(enum oc_store_hotness hotness, enum oc_dtype dtype)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, dtype)) {
        fixture_free(&fx);
        return;
    }
    uint64_t *hot;
    if (hotness == OC_STORE_HOTNESS_PRESAMPLE) {
        /* counts first, equal counts by in-degree (one key: count x (max degree + 1) + degree) */
        hot = epoch0_counts(&fx);
        uint64_t max_deg = 0;
        for (uint64_t v = 0; v < fx.n_nodes; v++)
            if (fx.indptr[v + 1] - fx.indptr[v] > max_deg)
                max_deg = fx.indptr[v + 1] - fx.indptr[v];
        for (uint64_t v = 0; v < fx.n_nodes; v++)
            hot[v] = hot[v] * (max_deg + 1) + (fx.indptr[v + 1] - fx.indptr[v]);
    } else {
        hot = malloc(fx.n_nodes * sizeof(uint64_t));
        for (uint64_t v = 0; v < fx.n_nodes; v++)
            hot[v] = fx.indptr[v + 1] - fx.indptr[v];
    }
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    /* 250 rows: sorted ids win; 1500 rows: the node table wins. */
    static const uint64_t rows[] = {250, 1500};
    for (int p = 0; p < 2; p++)
        for (int r = 0; r < 2; r++) {
            struct oc_store_config c = fixture_config(&fx, p ? pool : NULL);
            fixture_opt(&c, "hotness", hotness);
            c.mem_bytes = fixture_fixed_bytes(&fx) + (r ? fx.n_nodes * 4 : 0) +
                          rows[r] * (fx.row_bytes + (r ? 0 : 12));
            struct oc_store *s = fixture_open("static", &c);
            if (!s)
                continue;
            uint64_t n_cached = oc_store_static_n_cached(s);
            OC_CHECK(n_cached >= rows[r] && n_cached < rows[r] + 40);
            struct oc_store_stats st;
            oc_store_stats(s, &st);
            OC_CHECK(st.held_bytes <= c.mem_bytes);
            /* table layout: 4 bytes per node; sorted: 8 + 4 per cached row (id, slot) */
            OC_CHECK(st.held_bytes >= STORE_DISK_BOUNCE_BYTES + n_cached * fx.row_bytes +
                                          (r ? fx.n_nodes * 4 : n_cached * 12));
            check_cached_set(&fx, s, hot);
            oc_store_free(s);
        }
    free(hot);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(degree_picks_highest_in_degree_f32)
{
    hottest(OC_STORE_HOTNESS_DEGREE, OC_DTYPE_F32);
}

OC_TEST(degree_picks_highest_in_degree_f16)
{
    hottest(OC_STORE_HOTNESS_DEGREE, OC_DTYPE_F16);
}

OC_TEST(presample_picks_most_accessed_in_epoch0_f32)
{
    hottest(OC_STORE_HOTNESS_PRESAMPLE, OC_DTYPE_F32);
}

OC_TEST(presample_picks_most_accessed_in_epoch0_f16)
{
    hottest(OC_STORE_HOTNESS_PRESAMPLE, OC_DTYPE_F16);
}

OC_TEST(unlimited_caches_everything)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 700, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    fixture_opt(&c, "hotness", OC_STORE_HOTNESS_PRESAMPLE);
    struct oc_store *s = fixture_open("static", &c);
    if (s) {
        OC_CHECK(oc_store_static_n_cached(s) == fx.n_nodes);
        uint64_t ids[3] = {0, 699, 0};
        float out[36];
        OC_CHECK_OK(oc_store_gather(s, ids, 3, out, &err), &err);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] == 3 && st.read_bytes == 0 && st.n_reads == 0);
        OC_CHECK(oc_store_stats_hit_ratio(&st, OC_STORE_TIER_CPU) == 1.0);
        oc_store_free(s);
    }
    fixture_free(&fx);
}

/* Gathers every node and compares with the file; returns the rows that differ. */
static uint64_t gather_all_wrong(const struct fixture *fx, struct oc_store *s)
{
    struct oc_err err;
    uint64_t n = fx->n_nodes, wrong = 0;
    uint64_t *ids = calloc(n, sizeof(uint64_t));
    float *out = calloc(n * fx->dim, sizeof(float));
    for (uint64_t v = 0; v < n; v++)
        ids[v] = n - 1 - v;
    OC_CHECK_OK(oc_store_gather(s, ids, n, out, &err), &err);
    for (uint64_t k = 0; k < n; k++)
        wrong += memcmp(out + k * fx->dim, fx->ref + ids[k] * fx->dim, fx->dim * 4) != 0;
    free(ids);
    free(out);
    return wrong;
}

/* Budget layouts: 1500 rows (node table) and 250 rows (sorted ids). */
static void yields_and_takes_back(int table)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    uint64_t rows = table ? 1500 : 250, before_open = oc_mem_used();
    c.mem_bytes = fixture_fixed_bytes(&fx) + (table ? fx.n_nodes * 4 : 0) +
                  rows * (fx.row_bytes + (table ? 0 : 12));
    struct oc_store *s = fixture_open("static", &c);
    if (!s) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK(gather_all_wrong(&fx, s) == 0); /* scratch for every row, as after a first epoch */
    uint64_t n_cached = oc_store_static_n_cached(s), used0 = oc_mem_used();
    uint8_t *was = malloc(fx.n_nodes);
    for (uint64_t v = 0; v < fx.n_nodes; v++)
        was[v] = (uint8_t)oc_store_static_is_cached(s, v);

    /* A request 100 rows past a tight budget: the cache gives its coldest rows back. */
    oc_mem_set_budget(used0 + 1000);
    size_t ask = 1000 + 100 * fx.row_bytes;
    void *big = oc_alloc(ask, "a larger batch", &err);
    OC_CHECK(big != NULL);
    uint64_t gone = oc_store_static_n_given_up(s);
    OC_CHECK(gone >= 100 && gone < n_cached && oc_store_static_n_cached(s) == n_cached - gone);
    OC_CHECK(oc_mem_used() <= used0 + 1000);
    /* The rows given back are the coldest: what is still cached was cached before. */
    uint64_t still = 0, wrong_set = 0;
    for (uint64_t v = 0; v < fx.n_nodes; v++) {
        int now = oc_store_static_is_cached(s, v);
        still += now;
        wrong_set += now && !was[v];
    }
    OC_CHECK(still == n_cached - gone && wrong_set == 0);
    OC_CHECK(gather_all_wrong(&fx, s) == 0);
    struct oc_store_stats st;
    oc_store_stats(s, &st);
    OC_CHECK(st.held_bytes <= c.mem_bytes);

    /* Freed again, and no budget: the next gather takes every row back. */
    oc_free(big);
    oc_mem_set_budget(0);
    struct oc_store_stats tb0, tb1;
    oc_store_stats(s, &tb0);
    OC_CHECK(gather_all_wrong(&fx, s) == 0);
    oc_store_stats(s, &tb1);
    OC_CHECK(oc_store_static_n_given_up(s) == 0 && oc_store_static_n_cached(s) == n_cached);
    uint64_t moved = 0;
    for (uint64_t v = 0; v < fx.n_nodes; v++)
        moved += oc_store_static_is_cached(s, v) != was[v];
    OC_CHECK(moved == 0 && oc_mem_used() == used0);
    struct oc_store_stats st0, st1;
    oc_store_stats(s, &st0);
    OC_CHECK(gather_all_wrong(&fx, s) == 0);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_CPU] - st0.tier_rows[OC_STORE_TIER_CPU] == n_cached);
    /* the rows taken back were read from disk, and are counted: more than the same gather
       reads with nothing to take back */
    OC_CHECK(tb1.n_reads - tb0.n_reads > st1.n_reads - st0.n_reads);
    OC_CHECK(tb1.read_bytes - tb0.read_bytes > st1.read_bytes - st0.read_bytes);

    /* Nothing left to give: the request fails with the budget's error, nothing lost. */
    oc_mem_set_budget(oc_mem_used() + 10);
    OC_CHECK(oc_alloc(1000 + n_cached * fx.row_bytes + 4096, "a huge batch", &err) == NULL);
    OC_CHECK(err.status == OC_ERR_BUDGET && strstr(err.msg, "a huge batch"));
    oc_mem_set_budget(0);
    OC_CHECK(gather_all_wrong(&fx, s) == 0);
    free(was);
    oc_store_free(s);
    OC_CHECK(oc_mem_used() == before_open);
    fixture_free(&fx);
}

OC_TEST(gives_rows_back_and_takes_them_back_table)
{
    yields_and_takes_back(1);
}

OC_TEST(gives_rows_back_and_takes_them_back_sorted)
{
    yields_and_takes_back(0);
}

/* Small batches (60 rows measured) and a budget that caches thousands of rows but not all:
   filling the cache stays inside the reader's budgeted arrays (it queued 4096 rows per run,
   past them, before its rows could be given back), and the table layout's ids are not kept. */
OC_TEST(small_batches_fill_a_budgeted_cache)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 12000, 4, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    for (int table = 0; table < 2; table++) {
        struct oc_store_config c = fixture_config(&fx, NULL);
        c.batch_rows = 60;
        uint64_t rows = 7000;
        c.mem_bytes = STORE_DISK_BOUNCE_BYTES + STORE_MIN_READER_ROWS * STORE_ROW_SCRATCH_BYTES +
                      512 +
                      (table ? fx.n_nodes * 4 + rows * fx.row_bytes : rows * (fx.row_bytes + 12));
        oc_mem_set_budget(oc_mem_used() + c.mem_bytes);
        struct oc_store *s = fixture_open("static", &c);
        oc_mem_set_budget(0);
        if (!s)
            continue;
        uint64_t n_cached = oc_store_static_n_cached(s);
        OC_CHECK(n_cached > 4096 && n_cached < fx.n_nodes);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.held_bytes <= c.mem_bytes);
        uint64_t ids[60];
        float out[60 * 4];
        for (uint64_t k = 0; k < 60; k++)
            ids[k] = (k * 7919) % fx.n_nodes;
        OC_CHECK_OK(oc_store_gather(s, ids, 60, out, &err), &err);
        OC_CHECK(fixture_bad_rows(&fx, ids, 60, out) == 0);
        oc_store_free(s);
    }
    fixture_free(&fx);
}

OC_TEST(unbudgeted_store_gives_nothing_back)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 700, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store *s = fixture_open("static", &c);
    if (s) {
        oc_mem_set_budget(oc_mem_used() + 10);
        OC_CHECK(oc_alloc(4096, "batch", &err) == NULL && err.status == OC_ERR_BUDGET);
        oc_mem_set_budget(0);
        OC_CHECK(oc_store_static_n_given_up(s) == 0 && oc_store_static_n_cached(s) == fx.n_nodes);
        oc_store_free(s);
    }
    fixture_free(&fx);
}

struct churn {
    struct fixture *fx;
    uint64_t budget;
    _Atomic int stop;
    uint64_t granted;
};

/* Another thread's requests past the budget, again and again, while the store gathers. */
static void *churn_thread(void *arg)
{
    struct churn *ch = arg;
    struct oc_err err;
    for (int i = 0; i < 400 && !atomic_load(&ch->stop); i++) {
        void *p = oc_alloc(2000 + (size_t)(i % 7) * 64 * ch->fx->row_bytes, "churn", &err);
        if (p)
            ch->granted++;
        oc_free(p);
    }
    return NULL;
}

OC_TEST(gives_back_while_another_thread_gathers)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    struct oc_store_config c = fixture_config(&fx, pool);
    c.mem_bytes = fixture_fixed_bytes(&fx) + fx.n_nodes * 4 + 1500 * fx.row_bytes;
    struct oc_store *s = fixture_open("static", &c);
    if (s) {
        uint64_t wrong = 0;
        OC_CHECK(gather_all_wrong(&fx, s) == 0); /* scratch grown before the budget tightens */
        struct churn ch = {&fx, 0, 0, 0};
        oc_mem_set_budget(oc_mem_used() + 1000);
        pthread_t t;
        pthread_create(&t, NULL, churn_thread, &ch);
        for (int i = 0; i < 60; i++)
            wrong += gather_all_wrong(&fx, s);
        atomic_store(&ch.stop, 1);
        pthread_join(t, NULL);
        oc_mem_set_budget(0);
        OC_CHECK(wrong == 0);
        OC_CHECK(gather_all_wrong(&fx, s) == 0 && oc_store_static_n_given_up(s) == 0);
        fprintf(stderr, "  %llu of the other thread's requests granted\n",
                (unsigned long long)ch.granted);
        OC_CHECK(ch.granted > 0);
        oc_store_free(s);
    }
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST_MAIN()
