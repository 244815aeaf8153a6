/*
 * test_store.c — the feature store: the registry (names, unknown names, tier
 * names, stats helpers); every registered strategy gathers bit-identical f32
 * rows to `memory` (and `memory` to the file's values) on f32 and f16
 * datasets, random batches with duplicates, with and without a pool and
 * io_uring; stats sanity per strategy; mmap's page-cache counting;
 * steady-state gathers allocate
 * nothing; budgets too small; bad ids; a feature file truncated mid-run and
 * read faults give errors naming the file and offset; allocation faults at
 * open leave no leak; the batch reader's merge switch; the batch lifecycle
 * (capabilities, hops and loads a store cannot use, done only after sampled).
 *
 * Place in the data flow: tests of store (generate → dataset → store).
 * Thread-safety: test code is single-threaded; stores may use a pool.
 * Ownership: every store, pool and fixture is freed by the test that made it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/rng.h"
#include "store/static/static_int.h"
#include "store/store_int.h"
#include "store_fixture.h"

/* ---- registry ------------------------------------------------------------- */

OC_TEST(registry_names)
{
    struct oc_err err;
    uint32_t idx = 99;
    static const char *const want[] = {"memory", "mmap", "direct", "static"};

    OC_CHECK(oc_store_n_strategies() >= 4);
    for (uint32_t i = 0; i < 4; i++) {
        OC_CHECK_OK(oc_store_strategy_find(want[i], &idx, &err), &err);
        OC_CHECK(idx == i);
        OC_CHECK(strcmp(oc_store_strategy_name(i), want[i]) == 0);
        OC_CHECK(oc_store_strategy_summary(i) && oc_store_strategy_summary(i)[0]);
    }
    OC_CHECK(oc_store_strategy_name(oc_store_n_strategies()) == NULL);
    OC_CHECK_ERR(oc_store_strategy_find("belady", &idx, &err), OC_ERR_ARG, &err,
                 "known: memory, mmap, direct, static");
    OC_CHECK_ERR(oc_store_strategy_find(NULL, &idx, &err), OC_ERR_ARG, &err, "unknown strategy");
    OC_CHECK(strcmp(oc_store_tier_name(OC_STORE_TIER_CPU), "cpu") == 0);
    OC_CHECK(strcmp(oc_store_tier_name(OC_STORE_TIER_DISK), "disk") == 0);
    OC_CHECK(strcmp(oc_store_tier_name(OC_STORE_TIER_COUNT), "?") == 0);
}

OC_TEST(stats_helpers)
{
    struct oc_store_stats a, b, d;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    OC_CHECK(oc_store_stats_amplification(&a) == 1.0);
    OC_CHECK(oc_store_stats_hit_ratio(&a, OC_STORE_TIER_CPU) == 0.0);
    a.requested_rows = 10;
    a.requested_bytes = 1000;
    a.requested_disk_bytes = 400;
    a.read_bytes = 1000;
    a.n_reads = 3;
    a.tier_rows[OC_STORE_TIER_CPU] = 6;
    a.tier_rows[OC_STORE_TIER_DISK] = 4;
    a.held_bytes = 77;
    b.requested_rows = 4;
    b.requested_disk_bytes = 100;
    b.read_bytes = 200;
    b.tier_rows[OC_STORE_TIER_CPU] = 4;
    OC_CHECK(oc_store_stats_amplification(&a) == 2.5);
    OC_CHECK(oc_store_stats_hit_ratio(&a, OC_STORE_TIER_CPU) == 0.6);
    oc_store_stats_sub(&a, &b, &d);
    OC_CHECK(d.requested_rows == 6 && d.requested_disk_bytes == 300 && d.read_bytes == 800);
    OC_CHECK(d.tier_rows[OC_STORE_TIER_CPU] == 2 && d.tier_rows[OC_STORE_TIER_DISK] == 4);
    OC_CHECK(d.held_bytes == 77);
    OC_CHECK(oc_store_stats_amplification(&d) == 800.0 / 300.0);
}

/* ---- every strategy vs memory --------------------------------------------- */

/* Random ids, skewed to low ids, with duplicates (every 7th repeats an earlier one). */
static void random_ids(uint64_t *ids, uint64_t n, uint64_t n_nodes, uint64_t seed)
{
    struct oc_rng r;
    oc_rng_init(&r, seed, 1, 2, 3);
    for (uint64_t i = 0; i < n; i++) {
        if (i > 0 && i % 7 == 0)
            ids[i] = ids[oc_rng_below(&r, i)];
        else
            ids[i] = (uint64_t)((double)n_nodes * oc_rng_uniform_f64(&r) * oc_rng_uniform_f64(&r));
        if (ids[i] >= n_nodes)
            ids[i] = n_nodes - 1;
    }
}

/* A named store configuration to compare. */
struct variant {
    const char *strategy;
    const char *label;
    uint64_t mem_bytes; /* 0 = unlimited */
    enum oc_store_hotness hotness;
};

/* Checks one store's stats after gathers of `rows` rows in total. */
static void check_stats(const struct fixture *fx, const struct oc_store *s, uint64_t rows,
                        uint64_t mem_bytes)
{
    struct oc_store_stats st;
    const char *name = oc_store_name(s);
    oc_store_stats(s, &st);
    uint64_t tiers = 0;
    for (int t = 0; t < OC_STORE_TIER_COUNT; t++)
        tiers += st.tier_rows[t];
    OC_CHECK(st.requested_rows == rows);
    OC_CHECK(st.requested_bytes == rows * fx->row_bytes);
    OC_CHECK(tiers == rows);
    OC_CHECK(st.requested_disk_bytes == st.tier_rows[OC_STORE_TIER_DISK] * fx->row_bytes);
    if (mem_bytes)
        OC_CHECK(st.held_bytes <= mem_bytes);
    if (strcmp(name, "memory") == 0) {
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] == rows);
        OC_CHECK(st.requested_disk_bytes == 0 && st.read_bytes == 0 && st.n_reads == 0);
        OC_CHECK(st.held_bytes == fx->n_nodes * fx->dim * sizeof(float));
        OC_CHECK(oc_store_stats_amplification(&st) == 1.0);
    } else if (strcmp(name, "direct") == 0) {
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] == rows);
        OC_CHECK(st.n_reads == rows); /* rows < 4 KiB: one read each, duplicates included */
        OC_CHECK(st.read_bytes >= st.requested_disk_bytes);
        OC_CHECK(st.read_bytes >= rows * OC_IO_ALIGN);
        OC_CHECK(oc_store_stats_amplification(&st) >= 1.0);
        OC_CHECK(st.held_bytes >= STORE_DISK_BOUNCE_BYTES);
    } else if (strcmp(name, "static") == 0) {
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] == rows);
        if (st.tier_rows[OC_STORE_TIER_DISK])
            OC_CHECK(st.read_bytes > 0 && st.n_reads > 0 &&
                     st.n_reads <= st.tier_rows[OC_STORE_TIER_DISK]);
        OC_CHECK(st.held_bytes >= oc_store_static_n_cached(s) * fx->row_bytes);
    } else if (strcmp(name, "mmap") == 0) {
        /* Rows found in the page cache count as CPU-tier, the rest as disk. */
        OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] + st.tier_rows[OC_STORE_TIER_DISK] == rows);
        OC_CHECK(st.n_reads <= st.tier_rows[OC_STORE_TIER_DISK]);
        OC_CHECK(st.held_bytes == 0);
    }
}

/* Gathers the same random batches through `v` and checks them against fx->ref bit for bit. */
static void compare_variant(const struct fixture *fx, const struct variant *v, struct oc_pool *pool)
{
    static const uint64_t sizes[] = {1, 5, 600, 1500, 37};
    struct oc_err err;
    struct oc_store_config c = fixture_config(fx, pool);
    c.mem_bytes = v->mem_bytes;
    if (v->hotness != OC_STORE_HOTNESS_DEGREE) /* static's --hotness */
        fixture_opt(&c, "hotness", v->hotness);
    struct oc_store *s = fixture_open(v->strategy, &c);
    if (!s)
        return;
    uint64_t *ids = malloc(1500 * sizeof(uint64_t));
    float *out = malloc(1500 * fx->dim * sizeof(float));
    uint64_t rows = 0;
    int bad = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        uint64_t n = sizes[k];
        random_ids(ids, n, fx->n_nodes, k);
        memset(out, 0xA5, n * fx->dim * sizeof(float));
        OC_CHECK_OK(oc_store_gather(s, ids, n, out, &err), &err);
        for (uint64_t i = 0; i < n && !bad; i++)
            if (memcmp(out + i * fx->dim, fx->ref + ids[i] * fx->dim, fx->dim * sizeof(float))) {
                fprintf(stderr, "  %s (%s, %s): row %llu (id %llu) differs\n", v->strategy,
                        v->label, oc_dtype_name(fx->dtype), (unsigned long long)i,
                        (unsigned long long)ids[i]);
                bad = 1;
            }
        rows += n;
    }
    OC_CHECK(!bad);
    /* The last row of the file, alone and twice in a row. */
    ids[0] = ids[1] = fx->n_nodes - 1;
    OC_CHECK_OK(oc_store_gather(s, ids, 2, out, &err), &err);
    OC_CHECK(memcmp(out, fx->ref + (fx->n_nodes - 1) * fx->dim, fx->dim * sizeof(float)) == 0);
    OC_CHECK(memcmp(out + fx->dim, out, fx->dim * sizeof(float)) == 0);
    rows += 2;
    /* An empty gather is a no-op. */
    OC_CHECK_OK(oc_store_gather(s, ids, 0, out, &err), &err);
    check_stats(fx, s, rows, v->mem_bytes);
    if (getenv("OC_TEST_VERBOSE")) {
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        fprintf(stderr,
                "  %-7s %-17s %s dim %llu: cpu %llu disk %llu reads %llu read %llu amp %.2f held "
                "%llu cached %llu\n",
                v->strategy, v->label, oc_dtype_name(fx->dtype), (unsigned long long)fx->dim,
                (unsigned long long)st.tier_rows[OC_STORE_TIER_CPU],
                (unsigned long long)st.tier_rows[OC_STORE_TIER_DISK],
                (unsigned long long)st.n_reads, (unsigned long long)st.read_bytes,
                oc_store_stats_amplification(&st), (unsigned long long)st.held_bytes,
                (unsigned long long)oc_store_static_n_cached(s));
    }
    oc_store_free(s);
    free(ids);
    free(out);
}

static void all_match_memory(enum oc_dtype dtype, uint32_t dim)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    uint64_t fixed = fixture_fixed_bytes(&fx);
    const struct variant vs[] = {
        {"memory", "unlimited", 0, OC_STORE_HOTNESS_DEGREE},
        {"mmap", "unlimited", 0, OC_STORE_HOTNESS_DEGREE},
        {"direct", "unlimited", 0, OC_STORE_HOTNESS_DEGREE},
        {"direct", "budget", fixed + 4096, OC_STORE_HOTNESS_DEGREE},
        {"static", "all cached", 0, OC_STORE_HOTNESS_DEGREE},
        {"static", "degree, small", fixed + 300 * (fx.row_bytes + 8), OC_STORE_HOTNESS_DEGREE},
        {"static", "presample, table", fixed + 8000 + 1200 * fx.row_bytes,
         OC_STORE_HOTNESS_PRESAMPLE},
        {"static", "nothing cached", fixed + 8, OC_STORE_HOTNESS_PRESAMPLE},
    };
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
            compare_variant(&fx, &vs[i], p ? pool : NULL);
    /* Strategies registered later (by name, with the whole plan and no budget). */
    for (uint32_t i = 4; i < oc_store_n_strategies(); i++) {
        struct variant v = {oc_store_strategy_name(i), "registered", 0, OC_STORE_HOTNESS_DEGREE};
        compare_variant(&fx, &v, pool);
    }
    /* The pread fallback of the batch reader. */
    setenv("OC_NO_URING", "1", 1);
    compare_variant(&fx, &vs[2], pool);
    compare_variant(&fx, &vs[5], NULL);
    unsetenv("OC_NO_URING");
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(all_match_memory_f32)
{
    all_match_memory(OC_DTYPE_F32, 12);
}

OC_TEST(all_match_memory_f16)
{
    all_match_memory(OC_DTYPE_F16, 12);
}

/*
 * The batch lifecycle every strategy shares: capabilities fixed at open, a
 * pruning hop on a store that does not prune is a no-op that clears the
 * trainer's view, load refused where the strategy does not sample, and done
 * only after the batch was sampled (a debug assert stops the process).
 */
OC_TEST(batch_lifecycle_caps_and_order)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const char *name = oc_store_strategy_name(i);
        struct oc_store_config c = fixture_config(&fx, NULL);
        struct oc_store *s = fixture_open(name, &c);
        if (!s)
            continue;
        const struct oc_store_caps *caps = oc_store_caps(s);
        OC_CHECK(caps->samplers >= 1);
        OC_CHECK(caps->hops == (strcmp(name, "helios") == 0));
        OC_CHECK(caps->batches == (!strcmp(name, "ginex") || !strcmp(name, "diskgnn")));
        OC_CHECK(!caps->prunes && !caps->reorders); /* no embeddings asked, no --reorder */
        OC_CHECK(caps->lookahead == 0 || !strcmp(name, "gnndrive") || !strcmp(name, "helios"));
        const uint64_t ids[3] = {0, 1, 2};
        uint8_t mask[3] = {0, 0, 0};
        struct oc_store_hist h;
        memset(&h, 0xA5, sizeof(h));
        const struct oc_store_hop hop = {0, 0, ids, 3, 1, mask, &h};
        OC_CHECK_OK(oc_store_hop(s, &hop, &err), &err);
        OC_CHECK(mask[0] == 0 && mask[1] == 0 && mask[2] == 0);
        OC_CHECK(h.n_pruned == 0 && h.n_push == 0 && !h.pruned_rows && !h.push_rows);
        if (!caps->batches) {
            struct oc_sample_batch b;
            oc_sample_batch_init(&b);
            OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &b, &err), OC_ERR_UNSUPPORTED, &err,
                         "does not sample batches");
            oc_sample_batch_deinit(&b);
        }
        oc_store_free(s);
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store *s = fixture_open("memory", &c);
#ifndef NDEBUG
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr); /* assert()'s message is expected */
        oc_store_done(s, 0, 0);            /* never sampled: aborts */
        _exit(0);
    }
    int status = 0;
    OC_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    OC_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
#endif
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_store_sampled(s, 0, 0, &b, &err), &err);
    oc_store_done(s, 0, 0); /* in order: fine */
    oc_sample_batch_deinit(&b);
    oc_store_free(s);
    fixture_free(&fx);
}

/* Rows wider than a widening chunk (256 halves) and straddling pages. */
OC_TEST(all_match_memory_f16_wide)
{
    all_match_memory(OC_DTYPE_F16, 300);
}

/* Reads (after merging) of static with nothing cached, for 1500 random rows. */
static uint64_t static_miss_reads(const struct fixture *fx, uint64_t *ids, float *out)
{
    struct oc_err err;
    struct oc_store_config c = fixture_config(fx, NULL);
    c.mem_bytes = fixture_fixed_bytes(fx) + 8;
    struct oc_store *s = fixture_open("static", &c);
    struct oc_store_stats st = {0};
    if (!s)
        return 0;
    random_ids(ids, 1500, fx->n_nodes, 3);
    OC_CHECK_OK(oc_store_gather(s, ids, 1500, out, &err), &err);
    for (uint64_t i = 0; i < 1500; i++)
        OC_CHECK(memcmp(out + i * fx->dim, fx->ref + ids[i] * fx->dim, fx->dim * 4) == 0);
    oc_store_stats(s, &st);
    OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] == 1500);
    oc_store_free(s);
    return st.n_reads;
}

/*
 * The block reader's crossover (io/probe.c; OC_IO_GAP_BYTES stands in for a
 * probe, as the test files are too small to probe): every strategy still
 * gathers the file's rows bit for bit, and static's misses take fewer
 * requests than with only touching pages merged (holes read along).
 */
OC_TEST(gap_reads_match_memory)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 20000, 64, OC_DTYPE_F32)) { /* 256-byte rows, 1250 pages */
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    uint64_t *ids = malloc(1500 * sizeof(uint64_t));
    float *out = malloc(1500 * fx.dim * sizeof(float));
    uint64_t touching = static_miss_reads(&fx, ids, out);
    setenv("OC_IO_GAP_BYTES", "16384", 1);
    uint64_t gapped = static_miss_reads(&fx, ids, out);
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        struct variant v = {oc_store_strategy_name(i), "gap 16 KiB", 0, OC_STORE_HOTNESS_DEGREE};
        compare_variant(&fx, &v, pool);
    }
    unsetenv("OC_IO_GAP_BYTES");
    OC_CHECK(touching > 0 && gapped > 0 && gapped < touching);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  static misses: %llu reads, %llu with holes up to 16 KiB read along\n",
                (unsigned long long)touching, (unsigned long long)gapped);
    free(ids);
    free(out);
    oc_pool_free(pool);
    fixture_free(&fx);
}

/*
 * The cache's gather with a reader bounded to a few rows per run (diskgnn's
 * evaluation reader): the rows of an unbounded gather and of `memory`, the
 * reader's scratch held at the bound, the same tier counts.
 */
OC_TEST(bounded_cache_gather_matches_memory)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 3000, 37, OC_DTYPE_F16)) { /* widened misses too */
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store *m = fixture_open("memory", &c);
    struct store_cache cache;
    struct store_disk d[2];
    memset(&cache, 0, sizeof(cache));
    memset(d, 0, sizeof(d));
    uint64_t n = 1000, *ids = malloc(n * sizeof(uint64_t));
    float *want = malloc(n * fx.dim * sizeof(float)), *got = malloc(n * fx.dim * sizeof(float));
    cache.n = cache.n_live = 100; /* every 30th node: ids 0, 30, ... */
    cache.ids = malloc(cache.n * sizeof(uint64_t));
    cache.rows = malloc(cache.n * fx.dim * sizeof(float));
    if (m && ids && want && got && cache.ids && cache.rows) {
        for (uint64_t k = 0; k < cache.n; k++)
            cache.ids[k] = 30 * k;
        OC_CHECK_OK(oc_store_gather(m, cache.ids, cache.n, (float *)cache.rows, &err), &err);
        for (uint64_t k = 0; k < cache.n; k++) { /* the cache holds rows as stored: f16 */
            uint16_t *h = (uint16_t *)(cache.rows + k * m->row_bytes);
            const float *f = (const float *)cache.rows + k * fx.dim;
            for (uint64_t j = 0; j < fx.dim; j++)
                h[j] = oc_f32_to_f16(f[j]);
        }
        struct oc_rng rng;
        oc_rng_init(&rng, 9, 0, 0, 0);
        for (uint64_t k = 0; k < n; k++) /* hits, misses and repeats */
            ids[k] = k % 3 ? oc_rng_below(&rng, fx.n_nodes) : 30 * oc_rng_below(&rng, 100);
        OC_CHECK_OK(oc_store_gather(m, ids, n, want, &err), &err);
        struct oc_store_stats before = m->stats;
        uint64_t disk_rows[2];
        for (int bounded = 0; bounded < 2; bounded++) {
            OC_CHECK_OK(store_disk_open(m, 1, &d[bounded], &err), &err);
            d[bounded].max_rows = bounded ? 7 : 0;
            uint64_t rows0 = m->stats.tier_rows[OC_STORE_TIER_DISK];
            memset(got, 0xA5, n * fx.dim * sizeof(float));
            OC_CHECK_OK(store_cache_gather(m, &cache, &d[bounded], ids, n, got, &err), &err);
            OC_CHECK(memcmp(got, want, n * fx.dim * sizeof(float)) == 0);
            disk_rows[bounded] = m->stats.tier_rows[OC_STORE_TIER_DISK] - rows0;
        }
        OC_CHECK(disk_rows[0] == disk_rows[1] && disk_rows[0] > 0 && disk_rows[0] < n);
        OC_CHECK(d[0].cap_slots >= n && d[1].cap_slots == 7);
        m->stats = before;
    }
    store_disk_close(&d[0]);
    store_disk_close(&d[1]);
    free(cache.ids);
    free(cache.rows);
    free(ids);
    free(want);
    free(got);
    oc_store_free(m);
    fixture_free(&fx);
}

OC_TEST(row_widen_inplace)
{
    /* Every length around the chunk size, against a plain conversion. */
    for (uint64_t dim = 1; dim < 600; dim += (dim < 260 ? 1 : 37)) {
        float *row = malloc(dim * sizeof(float)), *want = malloc(dim * sizeof(float));
        uint16_t *h = malloc(dim * sizeof(uint16_t));
        for (uint64_t j = 0; j < dim; j++) {
            h[j] = oc_f32_to_f16((float)j * 0.37f - 11.0f);
            want[j] = oc_f16_to_f32(h[j]);
        }
        memcpy((uint8_t *)row + 2 * dim, h, dim * sizeof(uint16_t));
        store_row_widen_inplace(row, dim);
        OC_CHECK(memcmp(row, want, dim * sizeof(float)) == 0);
        free(row);
        free(want);
        free(h);
    }
}

/* ---- steady state, budgets, bad arguments ------------------------------- */

OC_TEST(steady_state_gathers_allocate_nothing)
{
    struct fixture fx;
    struct oc_pool *pool = NULL;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    uint64_t ids[1200];
    float *out = malloc(1200 * fx.dim * sizeof(float));
    for (uint32_t i = 0; i < 4; i++) {
        struct oc_store_config c = fixture_config(&fx, pool);
        if (i == 3)
            c.mem_bytes = fixture_fixed_bytes(&fx) + 200 * (fx.row_bytes + 8);
        struct oc_store *s = fixture_open(oc_store_strategy_name(i), &c);
        if (!s)
            continue;
        /* Steady state: the same batch sizes (and miss counts) as seen before. */
        for (uint64_t k = 0; k < 3; k++) {
            random_ids(ids, 1000 + k * 100, fx.n_nodes, 6 + k);
            OC_CHECK_OK(oc_store_gather(s, ids, 1000 + k * 100, out, &err), &err);
        }
        struct oc_store_stats st0, st1;
        oc_store_stats(s, &st0);
        uint64_t live = oc_mem_n_live();
        oc_fault_arm(OC_FAULT_ALLOC, 1, ENOMEM);
        for (uint64_t k = 0; k < 3; k++) {
            random_ids(ids, 1000 + k * 100, fx.n_nodes, 6 + k);
            OC_CHECK_OK(oc_store_gather(s, ids, 1000 + k * 100, out, &err), &err);
        }
        OC_CHECK(!oc_fault_fired(OC_FAULT_ALLOC));
        oc_fault_disarm_all();
        OC_CHECK(oc_mem_n_live() == live);
        oc_store_stats(s, &st1);
        OC_CHECK(st1.held_bytes == st0.held_bytes);
        oc_store_free(s);
    }
    free(out);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(budget_too_small)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = fixture_config(&fx, NULL);
    c.mem_bytes = fx.n_nodes * fx.dim * sizeof(float) - 1;
    OC_CHECK_ERR(oc_store_open(0, &c, &s, &err), OC_ERR_BUDGET, &err, "needs");
    OC_CHECK(strstr(err.msg, "96000 bytes") != NULL); /* 2000 x 12 x 4 */
    OC_CHECK(s == NULL);
    c.mem_bytes = 1 << 20;
    OC_CHECK_ERR(oc_store_open(2, &c, &s, &err), OC_ERR_BUDGET, &err, "needs");
    OC_CHECK_ERR(oc_store_open(3, &c, &s, &err), OC_ERR_BUDGET, &err, "needs at least");
    OC_CHECK(strstr(err.msg, "static") != NULL);
    /* mmap holds nothing of its own: any budget opens. */
    c.mem_bytes = 1;
    s = fixture_open("mmap", &c);
    oc_store_free(s);
    /* Exactly the memory strategy's need opens. */
    c.mem_bytes = fx.n_nodes * fx.dim * sizeof(float);
    s = fixture_open("memory", &c);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST(bad_arguments)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    float out[64];
    uint64_t ids[2] = {3, 0};
    if (!fixture_init(&fx, 500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    OC_CHECK_ERR(oc_store_open(oc_store_n_strategies(), &c, &s, &err), OC_ERR_ARG, &err,
                 "out of range");
    c.ds = NULL;
    OC_CHECK_ERR(oc_store_open(0, &c, &s, &err), OC_ERR_ARG, &err, "no dataset");
    c = fixture_config(&fx, NULL);
    fixture_opt(&c, "hotness", OC_STORE_HOTNESS_PRESAMPLE);
    c.train_ids = NULL;
    OC_CHECK_ERR(oc_store_open(3, &c, &s, &err), OC_ERR_ARG, &err, "train_ids");
    c = fixture_config(&fx, NULL);
    c.graph = NULL; /* degree hotness then reads indptr itself */
    c.mem_bytes = fixture_fixed_bytes(&fx) + 100 * (fx.row_bytes + 8);
    s = fixture_open("static", &c);
    if (s) {
        OC_CHECK(oc_store_static_n_cached(s) > 0);
        OC_CHECK(oc_store_feat_dim(s) == 12);
        ids[1] = fx.n_nodes;
        OC_CHECK_ERR(oc_store_gather(s, ids, 2, out, &err), OC_ERR_ARG, &err,
                     "id 500 at position 1 is out of range");
        OC_CHECK_ERR(oc_store_gather(s, NULL, 2, out, &err), OC_ERR_ARG, &err, "NULL ids");
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.requested_rows == 0);
        oc_store_free(s);
    }
    fixture_free(&fx);
}

/* ---- errors mid-run -------------------------------------------------------- */

/* mmap's prefetch looks at the page cache (mincore) before it asks the kernel
 * for pages: rows dropped from the cache count as disk rows, one read request
 * per run of adjacent missing pages; gathered again, the same rows are
 * resident and count as CPU-tier rows. Rows of 1024 f32 are one page each. */
OC_TEST(mmap_counts_page_cache)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store_stats a, b;
    if (!fixture_init(&fx, 300, 1024, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    const char *path = oc_dataset_path(fx.ds, OC_DS_FEATURES);
    OC_CHECK(oc_dataset_data_offset(fx.ds, OC_DS_FEATURES) % 4096 == 0 && fx.row_bytes == 4096);
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store *s = fixture_open("mmap", &c);
    int fd = open(path, O_RDONLY);
    OC_CHECK(fd >= 0);
    if (!s || fd < 0)
        goto out;
    /* Written pages must be clean before the kernel drops them; tmpfs keeps its pages. */
    struct statfs sf;
    int droppable = fstatfs(fd, &sf) == 0 && sf.f_type != TMPFS_MAGIC;
    if (!droppable)
        fprintf(stderr, "  %s is on tmpfs: its pages cannot be dropped, rows stay resident\n",
                path);
    OC_CHECK(fdatasync(fd) == 0);
    OC_CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    uint64_t ids[5] = {5, 6, 7, 200, 120}; /* 5..7: one run of three pages */
    float out[5 * 1024];
    OC_CHECK_OK(oc_store_gather(s, ids, 5, out, &err), &err);
    oc_store_stats(s, &a);
    for (int i = 0; i < 5; i++)
        OC_CHECK(memcmp(out + i * 1024, fx.ref + ids[i] * 1024, 4096) == 0);
    OC_CHECK(a.tier_rows[OC_STORE_TIER_CPU] + a.tier_rows[OC_STORE_TIER_DISK] == 5);
    OC_CHECK(!droppable || a.tier_rows[OC_STORE_TIER_DISK] >= 1); /* dropped clean pages */
    if (a.tier_rows[OC_STORE_TIER_DISK] == 5)
        OC_CHECK(a.n_reads == 3 && a.requested_disk_bytes == 5 * 4096);
    OC_CHECK_OK(oc_store_gather(s, ids, 5, out, &err), &err);
    oc_store_stats(s, &b);
    OC_CHECK(b.tier_rows[OC_STORE_TIER_CPU] - a.tier_rows[OC_STORE_TIER_CPU] == 5);
    OC_CHECK(b.tier_rows[OC_STORE_TIER_DISK] == a.tier_rows[OC_STORE_TIER_DISK]);
    OC_CHECK(b.n_reads == a.n_reads);
out:
    if (fd >= 0)
        close(fd);
    oc_store_free(s);
    fixture_free(&fx);
}

OC_TEST(truncated_feature_file)
{
    static const char *const names[] = {"mmap", "direct", "static"};
    struct oc_err err;
    for (size_t k = 0; k < 3; k++) {
        struct fixture fx;
        if (!fixture_init(&fx, 1000, 12, k == 1 ? OC_DTYPE_F16 : OC_DTYPE_F32)) {
            fixture_free(&fx);
            continue;
        }
        struct oc_store_config c = fixture_config(&fx, NULL);
        c.mem_bytes = fixture_fixed_bytes(&fx) + 50 * (fx.row_bytes + 8);
        struct oc_store *s = fixture_open(names[k], &c);
        const char *path = oc_dataset_path(fx.ds, OC_DS_FEATURES);
        uint64_t cut = 700;
        uint64_t off = oc_dataset_data_offset(fx.ds, OC_DS_FEATURES) + cut * fx.row_bytes;
        OC_CHECK(truncate(path, (off_t)(off + fx.row_bytes / 2)) == 0);
        uint64_t ids[300];
        float *out = malloc(300 * fx.dim * sizeof(float));
        for (uint64_t i = 0; i < 300; i++)
            ids[i] = cut + i;
        if (s) {
            OC_CHECK_ERR(oc_store_gather(s, ids, 300, out, &err), OC_ERR_FORMAT, &err,
                         "features.npy");
            OC_CHECK(strstr(err.msg, "offset") != NULL);
            OC_CHECK(strstr(err.msg, "truncated") != NULL);
            fprintf(stderr, "  %s: %s\n", names[k], err.msg);
            /* Rows before the cut still read, and the store is usable after the error. */
            for (uint64_t i = 0; i < 300; i++)
                ids[i] = cut - 1 - i;
            OC_CHECK_OK(oc_store_gather(s, ids, 300, out, &err), &err);
            OC_CHECK(memcmp(out, fx.ref + (cut - 1) * fx.dim, fx.dim * sizeof(float)) == 0);
        }
        oc_store_free(s);
        free(out);
        fixture_free(&fx);
    }
}

OC_TEST(read_faults)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    if (!fixture_init(&fx, 1000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    struct oc_store_config c = fixture_config(&fx, NULL);
    /* memory reads at open. */
    oc_fault_arm(OC_FAULT_READ, 1, EIO);
    OC_CHECK_ERR(oc_store_open(0, &c, &s, &err), OC_ERR_IO, &err, "features.npy");
    OC_CHECK(s == NULL);
    oc_fault_disarm_all();
    OC_CHECK(oc_mem_n_live() == live);
    /* direct and static read at gather; the store works again after the fault. */
    uint64_t ids[200];
    float *out = malloc(200 * fx.dim * sizeof(float));
    for (uint64_t i = 0; i < 200; i++)
        ids[i] = 999 - 3 * i;
    c.mem_bytes = fixture_fixed_bytes(&fx) + 20 * (fx.row_bytes + 8);
    for (uint32_t k = 2; k < 4; k++) {
        s = fixture_open(oc_store_strategy_name(k), &c);
        if (!s)
            continue;
        /* static merges its misses into a few reads: fail the first; direct also the 150th. */
        for (uint64_t nth = 1; nth <= (k == 2 ? 150u : 1u); nth += 149) {
            oc_fault_arm(OC_FAULT_READ, nth, EIO);
            OC_CHECK_ERR(oc_store_gather(s, ids, 200, out, &err), OC_ERR_IO, &err, "features.npy");
            OC_CHECK(strstr(err.msg, "offset") && strstr(err.msg, oc_store_name(s)));
            oc_fault_disarm_all();
        }
        /* A short read (errno 0) is a truncated file. */
        oc_fault_arm(OC_FAULT_READ, 1, 0);
        OC_CHECK_ERR(oc_store_gather(s, ids, 200, out, &err), OC_ERR_FORMAT, &err, "features.npy");
        oc_fault_disarm_all();
        OC_CHECK_OK(oc_store_gather(s, ids, 200, out, &err), &err);
        for (uint64_t i = 0; i < 200; i++)
            OC_CHECK(memcmp(out + i * fx.dim, fx.ref + ids[i] * fx.dim, fx.dim * 4) == 0);
        oc_store_free(s);
    }
    free(out);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST(alloc_faults_at_open)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 800, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    struct oc_store_config c = fixture_config(&fx, NULL);
    c.mem_bytes = fixture_fixed_bytes(&fx) + 100 * (fx.row_bytes + 8);
    uint64_t ids[64];
    float out[64 * 12];
    random_ids(ids, 64, fx.n_nodes, 9);
    for (uint32_t km = 0; km < 4 * FAULT_MODE_COUNT; km++) {
        uint32_t k = km / FAULT_MODE_COUNT;
        int mode = (int)(km % FAULT_MODE_COUNT);
        uint64_t base = oc_mem_n_live();
        memset(&c.opts, 0, sizeof(c.opts));
        if (strcmp(oc_store_strategy_name(k), "static") == 0)
            fixture_opt(&c, "hotness", OC_STORE_HOTNESS_PRESAMPLE);
        for (uint64_t nth = 1; nth < 400; nth++) {
            struct oc_store *s = NULL;
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = oc_store_open(k, &c, &s, &err);
            if (rc == OC_OK)
                rc = oc_store_gather(s, ids, 64, out, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (fired)
                OC_CHECK(rc == OC_ERR_NOMEM);
            else
                OC_CHECK(rc == OC_OK);
            oc_store_free(s);
            OC_CHECK(oc_mem_n_live() == base);
            if (!fired) {
                OC_CHECK(nth > 1); /* some allocation failed before this run reached none */
                if (getenv("OC_TEST_VERBOSE"))
                    fprintf(stderr, "  %s (%s): %llu allocations failed in turn\n",
                            oc_store_strategy_name(k), fault_mode_name(mode),
                            (unsigned long long)nth - 1);
                break;
            }
        }
    }
    fixture_free(&fx);
}

/* ---- the batch reader's merge switch -------------------------------------- */

OC_TEST(io_batch_merge_off)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    struct oc_io_batch *b = NULL;
    char path[700];
    uint8_t data[3 * 4096], out[8][100];

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 31 + 7);
    snprintf(path, sizeof(path), "%s/m.bin", oc_test_tmpdir());
    OC_CHECK_OK(oc_write_file_atomic(path, data, sizeof(data), &err), &err);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    OC_CHECK_OK(oc_io_batch_new(4, 1 << 16, &b, &err), &err);
    if (!f || !b)
        goto out;
    size_t held = oc_io_batch_held_bytes(b);
    OC_CHECK(held >= (1 << 16));
    for (int merge = 1; merge >= 0; merge--) {
        oc_io_batch_set_merge(b, merge);
        struct oc_io_stats st0 = *oc_io_batch_stats(b);
        for (int i = 0; i < 8; i++) /* 8 requests in page 1, the last one repeated */
            OC_CHECK_OK(
                oc_io_batch_add(b, f, 4096 + (uint64_t)(i < 7 ? i : 6) * 300, 100, out[i], &err),
                &err);
        OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
        const struct oc_io_stats *st = oc_io_batch_stats(b);
        OC_CHECK(st->n_reads - st0.n_reads == (merge ? 1u : 8u));
        OC_CHECK(st->read_bytes - st0.read_bytes == (merge ? 4096u : 8u * 4096u));
        for (int i = 0; i < 8; i++)
            OC_CHECK(memcmp(out[i], data + 4096 + (i < 7 ? i : 6) * 300, 100) == 0);
    }
    OC_CHECK(oc_io_batch_held_bytes(b) > held); /* request arrays now allocated */
out:
    oc_io_batch_free(b);
    oc_file_close(f, &err);
}

/*
 * A dataset opened with features.npy's CRC deferred, whose features changed
 * (same size, one bit): `memory` finds it in its load, `static` and `direct`
 * by the registry's read before their open, each naming the file; and only
 * the strategies that read the file whole say they check it.
 */
OC_TEST(a_deferred_features_checksum_is_checked_by_every_store)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 600, 8, OC_DTYPE_F32))
        return;
    const char *path = oc_dataset_path(fx.ds, OC_DS_FEATURES);
    FILE *f = fopen(path, "r+b");
    int c = f && fseek(f, 4096 + 77, SEEK_SET) == 0 ? fgetc(f) : EOF;
    OC_CHECK(c != EOF && fseek(f, 4096 + 77, SEEK_SET) == 0 && fputc(c ^ 0x20, f) != EOF);
    OC_CHECK(f && fclose(f) == 0);
    struct oc_dataset *deferred = NULL;
    OC_CHECK_OK(oc_dataset_open(fx.dir, OC_DS_OPEN_DEFER_FEATURE_CRC, &deferred, &err), &err);
    if (deferred) {
        const char *names[] = {"memory", "static", "direct"};
        for (int i = 0; i < 3; i++) {
            uint32_t index;
            struct oc_store *s = NULL;
            struct oc_store_config cfg = fixture_config(&fx, NULL);
            cfg.ds = deferred;
            OC_CHECK_OK(oc_store_strategy_find(names[i], &index, &err), &err);
            int rc = oc_store_open(index, &cfg, &s, &err);
            OC_CHECK(rc == OC_ERR_FORMAT && strstr(err.msg, path) &&
                     strstr(err.msg, "checksum mismatch"));
            oc_store_free(s);
        }
    }
    OC_CHECK(oc_store_strategy_checks_features("memory") &&
             oc_store_strategy_checks_features("diskgnn") &&
             !oc_store_strategy_checks_features("static") &&
             !oc_store_strategy_checks_features("auto") &&
             !oc_store_strategy_checks_features(NULL));
    oc_dataset_free(deferred);
    fixture_free(&fx);
}

/* ---- the slot cache's bound slots (cache_slots.c) ---------------------------- */

/* Binding, forgetting, unbinding and giving the top back, over a node table and over a hash. */
OC_TEST(bound_cache_binds_forgets_and_gives_top)
{
    struct oc_err err;
    for (int hash = 0; hash < 2; hash++) {
        struct store_cache c;
        uint64_t used = oc_mem_used(), live_allocs = oc_mem_n_live();
        OC_CHECK_OK(store_cache_init_bound(&c, 4, hash ? 0 : 100, 64, "test cache", &err), &err);
        OC_CHECK(c.n_live == 4 && oc_mem_used() > used && c.rows);
        OC_CHECK(store_cache_find(&c, 7) == STORE_NO_SLOT &&
                 store_cache_lookup(&c, 7) == STORE_NO_SLOT);
        for (uint32_t k = 0; k < 4; k++)
            store_cache_bind(&c, k, 10 + k);
        OC_CHECK(c.n_bound == 4 && store_cache_find(&c, 12) == 2 &&
                 store_cache_lookup(&c, 13) == 3);
        memset(c.rows + 2 * 64, 0xab, 64);
        /* a draining slot: its id no longer found, kept in slot_id; bound elsewhere meanwhile */
        store_cache_forget(&c, 1);
        OC_CHECK(store_cache_find(&c, 11) == STORE_NO_SLOT && c.slot_id[1] == 11 && c.n_bound == 3);
        store_cache_unbind(&c, 0);
        store_cache_bind(&c, 0, 11);
        store_cache_unbind(&c, 1); /* retiring the drained slot leaves slot 0's binding alone */
        OC_CHECK(store_cache_find(&c, 11) == 0 && c.slot_id[1] == STORE_NO_ID && c.n_bound == 3);
        /* the top two given back: unbound, their pages dropped, the rest kept */
        OC_CHECK(store_cache_give_top(&c, 2) == 2 && c.n_live == 2);
        OC_CHECK(store_cache_find(&c, 12) == STORE_NO_SLOT &&
                 store_cache_find(&c, 13) == STORE_NO_SLOT);
        OC_CHECK(c.n_bound == 1 && store_cache_find(&c, 11) == 0);
        oc_mem_release(2 * 64); /* the give-back's release (its caller's) */
        store_cache_free(&c);
        OC_CHECK(oc_mem_used() == used && oc_mem_n_live() == live_allocs);
        OC_CHECK(c.rows == NULL && c.n == 0);
    }
}

OC_TEST_MAIN()
