/*
 * test_core.c — unit tests of the core module: error records, the memory
 * accountant and budget, fault injection, size parsing, the Philox RNG
 * (known-answer vectors and statistics), the MPMC queue, the thread pool,
 * the lock between a cache's readers and its reclaimer (the progress report:
 * test_progress.c).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "offcore/id_map.h"
#include "offcore/progress.h"
#include "offcore/rng.h"
#include "offcore/slot_list.h"
#include "offcore/thread.h"

OC_TEST(err_record_and_prefix)
{
    struct oc_err err;
    oc_err_clear(&err);
    OC_CHECK(err.status == OC_OK && err.msg[0] == '\0');
    int rc = OC_ERR_ERRNO(&err, OC_ERR_IO, ENOENT, "%s: cannot open", "/x/y");
    OC_CHECK(rc == OC_ERR_IO && err.sys_errno == ENOENT);
    OC_CHECK(strstr(err.msg, "/x/y: cannot open") && strstr(err.msg, "No such file"));
    oc_err_prefix(&err, "importing %s", "cora");
    OC_CHECK(strncmp(err.msg, "importing cora: /x/y", 20) == 0);
    OC_CHECK(oc_status_from_errno(ENOSPC) == OC_ERR_NOSPC);
    OC_CHECK(strcmp(oc_status_str(OC_ERR_BUDGET), "over memory budget") == 0);
}

OC_TEST(accountant_counts_and_budget)
{
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live(), used0 = oc_mem_used();
    char *a = oc_alloc(1000, "test a", &err);
    OC_CHECK(a != NULL);
    OC_CHECK(oc_mem_used() == used0 + 1000);
    OC_CHECK(oc_mem_n_live() == live0 + 1);
    void *b = oc_alloc_aligned(8192, 4096, "test b", &err);
    OC_CHECK(b && ((uintptr_t)b & 4095) == 0);
    OC_CHECK(oc_mem_used() == used0 + 1000 + 8192);
    a = oc_realloc(a, 5000, "test a", &err);
    OC_CHECK(a && oc_mem_used() == used0 + 5000 + 8192);
    oc_mem_set_budget(used0 + 20000);
    void *c = oc_alloc(30000, "feature cache", &err);
    OC_CHECK(c == NULL && err.status == OC_ERR_BUDGET);
    OC_CHECK(strstr(err.msg, "feature cache") && strstr(err.msg, "budget"));
    OC_CHECK(strstr(err.msg, "29.30 KiB"));
    OC_CHECK(oc_mem_used() == used0 + 5000 + 8192);
    OC_CHECK(oc_mem_reserve(100000, "mmap", &err) == OC_ERR_BUDGET);
    oc_mem_set_budget(0);
    oc_free(a);
    oc_free(b);
    oc_free(NULL);
    OC_CHECK(oc_mem_used() == used0 && oc_mem_n_live() == live0);
    OC_CHECK(oc_mem_peak() >= used0 + 13192);
    OC_CHECK(oc_calloc(SIZE_MAX / 2, 4, "overflow", &err) == NULL);
}

/* A holder for the reclaimer tests: `held` accounted bytes, all of which it gives back if asked. */
struct holder {
    uint64_t held, asked, calls;
};

static uint64_t holder_reclaim(void *ctx, uint64_t want)
{
    struct holder *f = ctx;
    uint64_t give = want < f->held ? want : f->held;
    f->calls++;
    f->asked += want;
    f->held -= give;
    oc_mem_release(give);
    return give;
}

/* A holder that, the first time it gives back, lets "another thread" take part of it at once. */
static uint64_t thief_reclaim(void *ctx, uint64_t want)
{
    struct holder *f = ctx;
    uint64_t give = holder_reclaim(ctx, want);
    struct oc_err err;
    if (f->calls == 1 && oc_mem_reserve(give / 2, "another thread", &err) == OC_OK)
        f->asked += 1u << 30; /* marks the theft */
    return give;
}

/*
 * What a reclaim gave back and another thread took before the request could
 * is asked for again: the request still succeeds (the accountant's second
 * round), and the budget holds.
 */
OC_TEST(accountant_asks_again_when_reclaimed_memory_is_taken)
{
    struct oc_err err;
    uint64_t used0 = oc_mem_used();
    struct holder f = {8000, 0, 0};
    OC_CHECK_OK(oc_mem_reserve(f.held, "cache", &err), &err);
    OC_CHECK_OK(oc_mem_reclaimer_add(thief_reclaim, &f, &err), &err);
    oc_mem_set_budget(used0 + 8000);
    void *a = oc_alloc(2000, "batch", &err);
    OC_CHECK(a != NULL);
    OC_CHECK(f.calls == 2 && f.asked > (1u << 30)); /* stolen from, then asked again */
    OC_CHECK(oc_mem_used() <= used0 + 8000);
    oc_mem_reclaimer_remove(thief_reclaim, &f);
    oc_free(a);
    oc_mem_set_budget(0);
    oc_mem_release(f.held + 1000); /* the cache's rest and what "another thread" took */
    OC_CHECK(oc_mem_used() == used0);
}

OC_TEST(accountant_asks_reclaimers_before_refusing)
{
    struct oc_err err;
    uint64_t used0 = oc_mem_used();
    struct holder f = {6000, 0, 0}, g = {1000, 0, 0};
    OC_CHECK_OK(oc_mem_reserve(f.held + g.held, "caches", &err), &err);
    OC_CHECK_OK(oc_mem_reclaimer_add(holder_reclaim, &f, &err), &err);
    OC_CHECK_OK(oc_mem_reclaimer_add(holder_reclaim, &g, &err), &err);
    oc_mem_set_budget(used0 + 10000);
    /* Within the budget: nobody is asked. */
    void *a = oc_alloc(2000, "batch", &err);
    OC_CHECK(a != NULL && f.calls == 0 && g.calls == 0);
    /* 4000 more than the budget has: the first reclaimer gives exactly that. */
    void *b = oc_alloc(5000, "larger batch", &err);
    OC_CHECK(b != NULL && f.calls == 1 && f.asked == 4000 && f.held == 2000 && g.calls == 0);
    OC_CHECK(oc_mem_used() <= used0 + 10000);
    /* More than both hold: they give all they have and the request still fails, clearly. */
    void *c = oc_alloc(4000, "huge batch", &err);
    OC_CHECK(c == NULL && err.status == OC_ERR_BUDGET && strstr(err.msg, "huge batch"));
    /* (a second round asks both again, and they give nothing: no third) */
    OC_CHECK(f.held == 0 && g.held == 0 && f.calls == 3 && g.calls == 2);
    /* Removed reclaimers are not asked again. */
    oc_mem_reclaimer_remove(holder_reclaim, &f);
    oc_mem_reclaimer_remove(holder_reclaim, &g);
    OC_CHECK(oc_alloc(9000, "after", &err) == NULL && f.calls == 3 && g.calls == 2);
    oc_mem_set_budget(0);
    oc_free(a);
    oc_free(b);
    OC_CHECK(oc_mem_used() == used0);
    /* The table has room for OC_MEM_MAX_RECLAIMERS. */
    struct holder many[OC_MEM_MAX_RECLAIMERS + 1];
    for (int i = 0; i < OC_MEM_MAX_RECLAIMERS; i++)
        OC_CHECK_OK(oc_mem_reclaimer_add(holder_reclaim, &many[i], &err), &err);
    OC_CHECK_ERR(oc_mem_reclaimer_add(holder_reclaim, &many[OC_MEM_MAX_RECLAIMERS], &err),
                 OC_ERR_UNSUPPORTED, &err, "reclaimers");
    for (int i = 0; i < OC_MEM_MAX_RECLAIMERS; i++)
        oc_mem_reclaimer_remove(holder_reclaim, &many[i]);
}

OC_TEST(fault_injection_fails_nth_alloc_once)
{
    struct oc_err err;
    oc_fault_arm(OC_FAULT_ALLOC, 3, ENOMEM);
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = oc_alloc(16, "loop", &err);
    OC_CHECK(p[0] && p[1] && !p[2] && p[3] && p[4]);
    OC_CHECK(oc_fault_fired(OC_FAULT_ALLOC));
    OC_CHECK(err.status == OC_OK || strstr(err.msg, "loop"));
    for (int i = 0; i < 5; i++)
        oc_free(p[i]);
    int e = 0;
    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    OC_CHECK(oc_fault_hit(OC_FAULT_WRITE, &e) == 1 && e == ENOSPC);
    OC_CHECK(oc_fault_hit(OC_FAULT_WRITE, &e) == 0);
    oc_fault_disarm_all();
    OC_CHECK(oc_fault_hit(OC_FAULT_READ, &e) == 0);
}

OC_TEST(grow_doubles_keeps_contents_and_changes_nothing_on_failure)
{
    struct oc_err err;
    uint32_t *a = NULL;
    uint64_t cap = 0;
    OC_CHECK_OK(oc_grow(&a, &cap, 0, 4, 16, "test grow", &err), &err);
    OC_CHECK(a == NULL && cap == 0); /* nothing asked, nothing allocated */
    OC_CHECK_OK(oc_grow(&a, &cap, 5, 4, 16, "test grow", &err), &err);
    OC_CHECK(a && cap == 16);
    for (uint32_t i = 0; i < 16; i++)
        a[i] = i * 3;
    OC_CHECK_OK(oc_grow(&a, &cap, 70, 4, 16, "test grow", &err), &err);
    OC_CHECK(cap == 128 && a[15] == 45 && a[0] == 0); /* 16 doubled until it holds 70 */
    /* two arrays sharing a capacity; the second's allocation fails: the capacity is unchanged
     * and both arrays still hold what they held */
    uint64_t *b = NULL;
    uint64_t cap2 = 0;
    void *const both[] = {&a, &b};
    const size_t sz[] = {4, 8};
    OC_CHECK_OK(oc_grow_all(both, sz, 2, &cap2, 100, OC_GROW_DOUBLE(1), "test grow", &err), &err);
    OC_CHECK(cap2 == 128 && a[15] == 45);
    b[127] = 9;
    oc_fault_arm(OC_FAULT_ALLOC, 2, ENOMEM);
    OC_CHECK(oc_grow_all(both, sz, 2, &cap2, 129, OC_GROW_DOUBLE(1), "test grow", &err) ==
             OC_ERR_NOMEM);
    oc_fault_disarm_all();
    OC_CHECK(cap2 == 128 && a[15] == 45 && b[127] == 9);
    /* a count whose bytes overflow: refused, naming the consumer, nothing changed */
    OC_CHECK(oc_grow(&b, &cap2, UINT64_MAX / 2, 8, 1, "test grow", &err) == OC_ERR_NOMEM &&
             strstr(err.msg, "test grow") != NULL && cap2 == 128 && b[127] == 9);
    OC_CHECK(oc_grow(&b, &cap2, UINT64_MAX, 1, 1, "test grow", &err) == OC_ERR_NOMEM);
    /* over the budget: the accountant's error, the array unchanged */
    oc_mem_set_budget(oc_mem_used() + 1024);
    OC_CHECK(oc_grow(&a, &cap, 1u << 20, 4, 16, "test grow", &err) == OC_ERR_BUDGET &&
             strstr(err.msg, "test grow") != NULL && cap == 128 && a[15] == 45);
    oc_mem_set_budget(0);
    oc_free(a);
    oc_free(b);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(grow_by_a_policy)
{
    struct oc_err err;
    uint8_t *a = NULL;
    uint64_t cap = 0;
    /* doubling by steps ends where the largest request does, in any order */
    uint64_t c1 = 0, c2 = 0;
    OC_CHECK_OK(oc_grow_by(&a, &c1, 100, 1, OC_GROW_DOUBLE(16), "test grow", &err), &err);
    OC_CHECK_OK(oc_grow_by(&a, &c1, 150, 1, OC_GROW_DOUBLE(16), "test grow", &err), &err);
    OC_CHECK_OK(oc_grow_by(&a, &c2, 150, 1, OC_GROW_DOUBLE(16), "test grow", &err), &err);
    OC_CHECK(c1 == 256 && c2 == 256);
    /* twice, or n itself when twice is not enough */
    c1 = 16;
    OC_CHECK_OK(oc_grow_by(&a, &c1, 17, 1, OC_GROW_TWICE, "test grow", &err), &err);
    OC_CHECK(c1 == 32);
    OC_CHECK_OK(oc_grow_by(&a, &c1, 70, 1, OC_GROW_TWICE, "test grow", &err), &err);
    OC_CHECK(c1 == 70);
    oc_free(a);
    a = NULL;
    OC_CHECK_OK(oc_grow_by(&a, &cap, 10, 1, OC_GROW_QUARTER(64), "test grow", &err), &err);
    OC_CHECK(cap == 64);
    a[63] = 7;
    OC_CHECK_OK(oc_grow_by(&a, &cap, 65, 1, OC_GROW_QUARTER(64), "test grow", &err), &err);
    OC_CHECK(cap == 80 && a[63] == 7); /* a quarter more, contents kept */
    OC_CHECK_OK(oc_grow_by(&a, &cap, 1000, 1, OC_GROW_QUARTER(64), "test grow", &err), &err);
    OC_CHECK(cap == 1000 && a[63] == 7); /* n itself when a quarter is not enough */
    OC_CHECK_OK(oc_grow_by(&a, &cap, 1001, 1, OC_GROW_EXACT, "test grow", &err), &err);
    OC_CHECK(cap == 1001 && a[63] == 7); /* no slack */
    /* discarding: the old block goes first; a failure leaves the array empty */
    const struct oc_grow_policy fresh = {.div = 2, .discard = 1};
    OC_CHECK_OK(oc_grow_by(&a, &cap, 1002, 1, &fresh, "test grow", &err), &err);
    OC_CHECK(cap == 1501 && oc_mem_n_live() == 1);
    oc_mem_set_budget(oc_mem_used() + 4096);
    OC_CHECK(oc_grow_by(&a, &cap, 8192, 1, &fresh, "test grow", &err) == OC_ERR_BUDGET &&
             strstr(err.msg, "test grow") != NULL && a == NULL && cap == 0);
    oc_mem_set_budget(0);
    /* a quarter more than a capacity near the limit does not wrap around */
    uint64_t big = UINT64_MAX - 1;
    OC_CHECK(oc_grow_by(&a, &big, UINT64_MAX, 1, OC_GROW_QUARTER(0), "test grow", &err) ==
             OC_ERR_NOMEM);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(id_map_finds_what_was_put_across_growth_and_clears)
{
    struct oc_err err;
    struct oc_id_map m;
    oc_id_map_init(&m);
    uint32_t v = 7;
    OC_CHECK(!oc_id_map_get(&m, 5, &v) && v == 7); /* empty: no slots at all */
    OC_CHECK(oc_id_map_bytes(&m) == 0);
    /* keys spread over 2^40 and 0; values their insertion rank; growth keeps them */
    uint64_t n = 0;
    int bad = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t key = i * 0x10000001ull % ((uint64_t)1 << 40);
        OC_CHECK_OK(oc_id_map_reserve(&m, n + 1, "test id map", &err), &err);
        int ins = 0;
        uint32_t got = oc_id_map_get_or_put(&m, key, (uint32_t)n, &ins);
        bad |= !ins || got != n;
        n++;
        got = oc_id_map_get_or_put(&m, key, 999999, &ins); /* present: not replaced */
        bad |= ins || got != n - 1;
    }
    OC_CHECK(!bad && m.n_live == 5000 &&
             oc_id_map_bytes(&m) >= 10000 * sizeof(struct oc_id_map_slot));
    for (uint64_t i = 0; i < 5000; i++)
        bad |= !oc_id_map_get(&m, i * 0x10000001ull % ((uint64_t)1 << 40), &v) || v != i;
    bad |= oc_id_map_get(&m, 3, &v); /* never put */
    OC_CHECK(!bad);
    /* a clear forgets every key and keeps the slots */
    uint64_t bytes = oc_id_map_bytes(&m);
    oc_id_map_clear(&m);
    OC_CHECK(m.n_live == 0 && oc_id_map_bytes(&m) == bytes && !oc_id_map_get(&m, 0, &v));
    /* a budget too small for the slots: a clear error naming the consumer, the map unchanged */
    oc_mem_set_budget(oc_mem_used() + 1024);
    OC_CHECK(oc_id_map_reserve(&m, 1u << 20, "test id map", &err) == OC_ERR_BUDGET &&
             strstr(err.msg, "test id map") != NULL);
    oc_mem_set_budget(0);
    OC_CHECK(oc_id_map_bytes(&m) == bytes);
    oc_id_map_deinit(&m);
    OC_CHECK(oc_mem_n_live() == 0);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

OC_TEST(sort_u64_and_u32_match_qsort)
{
    uint64_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 20000};
    struct oc_rng r;
    oc_rng_init(&r, 11, 0, 0, 0);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        uint64_t n = sizes[k];
        for (int kind = 0; kind < 4; kind++) {
            uint64_t *a = malloc(n * 8 + 8), *b = malloc(n * 8 + 8), *tmp = malloc(n * 8 + 8);
            for (uint64_t i = 0; i < n; i++) {
                uint64_t x = (uint64_t)oc_rng_u32(&r) << 32 | oc_rng_u32(&r);
                /* random; few distinct; keys sharing high bytes (as ~small << 32 | id); sorted
                   descending */
                a[i] = kind == 0   ? x
                       : kind == 1 ? x % 5
                       : kind == 2 ? (uint64_t) ~(uint32_t)(x % 300) << 32 | (uint32_t)(x >> 40)
                                   : n - i;
            }
            memcpy(b, a, n * 8);
            oc_sort_u64(a, tmp, n);
            qsort(b, n, 8, oc_cmp_u64);
            OC_CHECK(n == 0 || memcmp(a, b, n * 8) == 0);
            /* the same keys' low halves as u32 */
            uint32_t *c = (uint32_t *)(void *)tmp, *d = malloc(n * 8 + 8);
            for (uint64_t i = 0; i < n; i++)
                c[i] = (uint32_t)b[n - 1 - i] ^ (uint32_t)(b[i] >> 32);
            memcpy(d, c, n * 4);
            oc_sort_u32(c, d + n, n);
            qsort(d, n, 4, cmp_u32);
            OC_CHECK(n == 0 || memcmp(c, d, n * 4) == 0);
            free(d);
            free(a);
            free(b);
            free(tmp);
        }
    }
}

OC_TEST(parse_and_format_sizes)
{
    struct oc_err err;
    uint64_t b = 0;
    OC_CHECK_OK(oc_parse_size("512M", &b, &err), &err);
    OC_CHECK(b == 512ull << 20);
    OC_CHECK_OK(oc_parse_size("4GiB", &b, &err), &err);
    OC_CHECK(b == 4ull << 30);
    OC_CHECK_OK(oc_parse_size("1.5G", &b, &err), &err);
    OC_CHECK(b == 3ull << 29);
    OC_CHECK_OK(oc_parse_size("1000", &b, &err), &err);
    OC_CHECK(b == 1000);
    OC_CHECK_ERR(oc_parse_size("12X", &b, &err), OC_ERR_ARG, &err, "unknown unit");
    OC_CHECK_ERR(oc_parse_size("-1G", &b, &err), OC_ERR_ARG, &err, "bad size");
    OC_CHECK_ERR(oc_parse_size("G", &b, &err), OC_ERR_ARG, &err, "bad size");
    OC_CHECK_ERR(oc_parse_size("4Gx", &b, &err), OC_ERR_ARG, &err, "trailing");
    OC_CHECK_ERR(oc_parse_size("0.5", &b, &err), OC_ERR_ARG, &err, "less than one byte");
    OC_CHECK_ERR(oc_parse_size(" -1", &b, &err), OC_ERR_ARG, &err, "bad size");
    OC_CHECK_OK(oc_parse_size("0", &b, &err), &err);
    OC_CHECK(b == 0);
    char buf[32];
    OC_CHECK(strcmp(oc_format_size(3ull << 29, buf, sizeof(buf)), "1.50 GiB") == 0);
    OC_CHECK(strcmp(oc_format_size(12, buf, sizeof(buf)), "12 B") == 0);
}

/* Known-answer vectors of Philox4x32-10 from Random123's kat_vectors. */
OC_TEST(philox_known_answers)
{
    uint32_t out[4];
    oc_rng_block(0, 0, 0, out);
    OC_CHECK(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu &&
             out[3] == 0x9b00dbd8u);
    oc_rng_block(UINT64_MAX, UINT64_MAX, UINT64_MAX, out);
    OC_CHECK(out[0] == 0x408f276du && out[1] == 0x41c83b0eu && out[2] == 0xa20bc7c6u &&
             out[3] == 0x6d5451fdu);
    oc_rng_block(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull, out);
    OC_CHECK(out[0] == 0xd16cfe09u && out[1] == 0x94fdccebu && out[2] == 0x5001e420u &&
             out[3] == 0x24126ea1u);
}

OC_TEST(rng_streams_deterministic_and_independent)
{
    struct oc_rng a, b, c;
    oc_rng_init(&a, 42, 1, 2, 3);
    oc_rng_init(&b, 42, 1, 2, 3);
    oc_rng_init(&c, 42, 1, 2, 4);
    int same = 1, diff = 0;
    for (int i = 0; i < 100; i++) {
        uint32_t x = oc_rng_u32(&a), y = oc_rng_u32(&b), z = oc_rng_u32(&c);
        same &= x == y;
        diff += x != z;
    }
    OC_CHECK(same);
    OC_CHECK(diff > 95);
}

OC_TEST(rng_distributions)
{
    struct oc_rng r;
    oc_rng_init(&r, 7, 0, 0, 0);
    enum { N = 200000, K = 10 };
    uint64_t hist[K] = {0};
    for (int i = 0; i < N; i++)
        hist[oc_rng_below(&r, K)]++;
    double chi2 = 0;
    for (int k = 0; k < K; k++) {
        double d = (double)hist[k] - N / K;
        chi2 += d * d / (N / K);
    }
    OC_CHECK(chi2 < 30.0); /* 9 degrees of freedom: p < 0.001 beyond ~27.9 */
    double sum = 0, sq = 0;
    float umin = 1, umax = 0;
    for (int i = 0; i < N; i++) {
        float u = oc_rng_uniform(&r);
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
        double g = oc_rng_normal(&r);
        sum += g;
        sq += g * g;
    }
    OC_CHECK(umin >= 0.0f && umax < 1.0f);
    OC_CHECK(fabs(sum / N) < 0.01);
    OC_CHECK(fabs(sq / N - 1.0) < 0.02);
    uint64_t big = (1ull << 40) + 17;
    for (int i = 0; i < 1000; i++)
        OC_CHECK(oc_rng_below(&r, big) < big);
}

struct queue_ctx {
    struct oc_queue *q;
    uint64_t sum;
    pthread_mutex_t mu;
};

static void *queue_producer(void *p)
{
    struct queue_ctx *c = p;
    for (uintptr_t i = 1; i <= 10000; i++)
        oc_queue_push(c->q, (void *)i);
    return NULL;
}

static void *queue_consumer(void *p)
{
    struct queue_ctx *c = p;
    void *item;
    uint64_t local = 0;
    while (oc_queue_pop(c->q, &item) == OC_OK)
        local += (uintptr_t)item;
    pthread_mutex_lock(&c->mu);
    c->sum += local;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

OC_TEST(queue_mpmc_delivers_everything_once)
{
    struct oc_err err;
    struct queue_ctx c = {0};
    pthread_mutex_init(&c.mu, NULL);
    OC_CHECK_OK(oc_queue_new(4, &c.q, &err), &err);
    pthread_t prod[3], cons[3];
    for (int i = 0; i < 3; i++) {
        pthread_create(&prod[i], NULL, queue_producer, &c);
        pthread_create(&cons[i], NULL, queue_consumer, &c);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(prod[i], NULL);
    oc_queue_close(c.q);
    for (int i = 0; i < 3; i++)
        pthread_join(cons[i], NULL);
    OC_CHECK(c.sum == 3ull * 10000 * 10001 / 2);
    OC_CHECK(oc_queue_push(c.q, (void *)1) == OC_ERR_CANCELLED);
    void *item;
    OC_CHECK(oc_queue_try_pop(c.q, &item) == OC_ERR_CANCELLED);
    oc_queue_free(c.q);
    pthread_mutex_destroy(&c.mu);
    OC_CHECK_ERR(oc_queue_new(0, &c.q, &err), OC_ERR_ARG, &err, "capacity");
}

OC_TEST(queue_try_pop_and_len)
{
    struct oc_err err;
    struct oc_queue *q;
    OC_CHECK_OK(oc_queue_new(2, &q, &err), &err);
    void *item;
    OC_CHECK(oc_queue_try_pop(q, &item) == OC_ERR_NOTFOUND);
    oc_queue_push(q, (void *)5);
    OC_CHECK(oc_queue_len(q) == 1);
    OC_CHECK(oc_queue_try_pop(q, &item) == OC_OK && item == (void *)5);
    oc_queue_push(q, (void *)6);
    oc_queue_close(q);
    OC_CHECK(oc_queue_pop(q, &item) == OC_OK && item == (void *)6); /* drains after close */
    OC_CHECK(oc_queue_pop(q, &item) == OC_ERR_CANCELLED);
    OC_CHECK(oc_queue_closed(q));
    oc_queue_free(q);
    OC_CHECK_OK(oc_queue_new(1, &q, &err), &err);
    OC_CHECK(!oc_queue_closed(q));
    oc_queue_free(q);
}

struct pool_ctx {
    uint64_t out[1000];
    unsigned worker_of[1000];
    uint64_t fail_from;
    uint64_t slow_task_plus1; /* 0: none; else task slow_task_plus1 - 1 takes 200 us */
};

static int pool_task(void *p, uint64_t t, unsigned worker)
{
    struct pool_ctx *c = p;
    if (t + 1 == c->slow_task_plus1) {
        const struct timespec slow = {0, 200 * 1000};
        nanosleep(&slow, NULL);
    }
    if (t >= c->fail_from && t % 7 == 3)
        return OC_ERR_IO - (int)(t % 2); /* distinguishable codes */
    c->out[t] = t * t;
    c->worker_of[t] = worker;
    return OC_OK;
}

OC_TEST(pool_fixed_partition_and_lowest_error)
{
    struct oc_err err;
    for (unsigned n = 1; n <= 4; n++) {
        struct oc_pool *p;
        OC_CHECK_OK(oc_pool_new(n, &p, &err), &err);
        OC_CHECK(oc_pool_n_threads(p) == n);
        for (int rep = 0; rep < 20; rep++) {
            struct pool_ctx c;
            memset(&c, 0, sizeof(c));
            c.fail_from = UINT64_MAX;
            OC_CHECK(oc_pool_run(p, 1000, pool_task, &c) == OC_OK);
            int ok = 1;
            for (uint64_t t = 0; t < 1000; t++)
                ok &= c.out[t] == t * t && c.worker_of[t] == t % n;
            OC_CHECK(ok);
            c.fail_from = 501; /* tasks 501+ with t%7==3 fail; the lowest is 507 (odd) */
            OC_CHECK(oc_pool_run(p, 1000, pool_task, &c) == OC_ERR_IO - 1);
        }
        oc_pool_free(p);
    }
    OC_CHECK_ERR(oc_pool_new(0, &(struct oc_pool *){NULL}, &err), OC_ERR_ARG, &err, "thread");
}

/* A job that holds the pool until released. */
struct hold_ctx {
    struct oc_pool *p;
    atomic_int started, release;
};

static int hold_task(void *p, uint64_t t, unsigned worker)
{
    (void)t;
    (void)worker;
    struct hold_ctx *h = p;
    atomic_store(&h->started, 1);
    while (!atomic_load(&h->release))
        sched_yield();
    return OC_OK;
}

static void *hold_pool(void *arg)
{
    struct hold_ctx *h = arg;
    oc_pool_run(h->p, 1, hold_task, h);
    return NULL;
}

/*
 * Jobs back to back (workers caught while they spin), after pauses past the
 * spin (workers woken from sleep) and with a worker's task slower than the
 * spin (the caller sleeps until it is done), at more threads than this
 * machine's cores too: every job runs all its tasks on their workers, and its
 * error is its own, never a previous job's; the pool is freed right after a
 * job, its workers spinning.
 */
OC_TEST(pool_jobs_back_to_back_and_after_pauses)
{
    struct oc_err err;
    const struct timespec pause = {0, 300 * 1000}; /* past the 50 us spin */
    for (unsigned n = 2; n <= 3; n++) {
        struct oc_pool *p;
        OC_CHECK_OK(oc_pool_new(n, &p, &err), &err);
        int ok = 1;
        for (int job = 0; job < 3000; job++) {
            struct pool_ctx c;
            memset(&c, 0, sizeof(c));
            c.fail_from = job % 5 == 4 ? 0 : UINT64_MAX; /* every 5th fails at task 3 */
            c.slow_task_plus1 = job % 7 == 2 ? 2 : 0;    /* task 1: worker 1's */
            uint64_t tasks = 4 + (uint64_t)job % 13;
            int rc = oc_pool_run(p, tasks, pool_task, &c);
            ok &= rc == (job % 5 == 4 ? OC_ERR_IO - 1 : OC_OK);
            for (uint64_t t = 0; t < tasks && rc == OC_OK; t++)
                ok &= c.out[t] == t * t && c.worker_of[t] == t % n;
            if (job % 50 == 25)
                nanosleep(&pause, NULL);
        }
        OC_CHECK(ok);
        oc_pool_free(p);
    }
}

OC_TEST(pool_run_or_inline_does_not_wait_for_a_busy_pool)
{
    struct oc_err err;
    struct oc_pool *p;
    OC_CHECK_OK(oc_pool_new(2, &p, &err), &err);
    struct pool_ctx c;
    memset(&c, 0, sizeof(c));
    c.fail_from = UINT64_MAX;
    /* free: on the pool, as oc_pool_run */
    OC_CHECK(oc_pool_run_or_inline(p, 1000, pool_task, &c) == OC_OK);
    int ok = 1;
    for (uint64_t t = 0; t < 1000; t++)
        ok &= c.out[t] == t * t && c.worker_of[t] == t % 2;
    OC_CHECK(ok);
    /* busy (another thread's job holds it until released): every task on this thread, now */
    struct hold_ctx h = {.p = p};
    pthread_t th;
    OC_CHECK(pthread_create(&th, NULL, hold_pool, &h) == 0);
    while (!atomic_load(&h.started))
        sched_yield();
    memset(&c, 0, sizeof(c));
    c.fail_from = UINT64_MAX;
    for (uint64_t t = 0; t < 1000; t++)
        c.worker_of[t] = 99;
    OC_CHECK(oc_pool_run_or_inline(p, 1000, pool_task, &c) == OC_OK);
    OC_CHECK(!atomic_load(&h.release)); /* returned while the other job still ran */
    ok = 1;
    for (uint64_t t = 0; t < 1000; t++)
        ok &= c.out[t] == t * t && c.worker_of[t] == 0;
    OC_CHECK(ok);
    c.fail_from = 501; /* errors as oc_pool_run reports them: the lowest failing task's */
    OC_CHECK(oc_pool_run_or_inline(p, 1000, pool_task, &c) == OC_ERR_IO - 1);
    atomic_store(&h.release, 1);
    pthread_join(th, NULL);
    OC_CHECK(oc_pool_run_or_inline(NULL, 10, pool_task, &c) == OC_OK);
    oc_pool_free(p);
}

/* ---- the reclaim lock ---- */

/* A reader that takes the read side again as soon as it lets it go, holding it ~0.2 ms each time. */
struct reader_ctx {
    struct oc_reclaim_lock *l;
    _Atomic int stop;
    _Atomic uint64_t holds;
};

static void *keep_reading(void *p)
{
    struct reader_ctx *r = p;
    const struct timespec hold = {0, 200 * 1000};
    while (!atomic_load(&r->stop)) {
        oc_reclaim_lock_read(r->l);
        nanosleep(&hold, NULL);
        atomic_fetch_add(&r->holds, 1);
        oc_reclaim_lock_unlock(r->l);
    }
    return NULL;
}

/*
 * Two readers whose holds overlap (so the read side is never free) do not
 * keep a reclaim out: it waits for the holds in progress only, and gets the
 * write side well within its wait (a reader-preferring lock times out here).
 */
OC_TEST(reclaim_lock_not_starved_by_overlapping_readers)
{
    struct oc_err err;
    struct oc_reclaim_lock l;
    OC_CHECK_OK(oc_reclaim_lock_init(&l, "test cache", &err), &err);
    struct reader_ctx r[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        r[k].l = &l;
        atomic_init(&r[k].stop, 0);
        atomic_init(&r[k].holds, 0);
        OC_CHECK(pthread_create(&th[k], NULL, keep_reading, &r[k]) == 0);
        while (atomic_load(&r[k].holds) < 5) /* the second starts while the first reads */
            sched_yield();
    }
    for (int round = 0; round < 5; round++) {
        double t0 = oc_now_s();
        int got = oc_reclaim_lock_reclaim(&l, 2);
        double waited = oc_now_s() - t0;
        OC_CHECK(got == 1 && waited < 1.0);
        if (got)
            oc_reclaim_lock_unlock(&l);
        uint64_t h0 = atomic_load(&r[0].holds), h1 = atomic_load(&r[1].holds);
        while (atomic_load(&r[0].holds) < h0 + 3 || atomic_load(&r[1].holds) < h1 + 3)
            sched_yield(); /* the readers are back to overlapping */
    }
    for (int k = 0; k < 2; k++) {
        atomic_store(&r[k].stop, 1);
        pthread_join(th[k], NULL);
    }
    oc_reclaim_lock_destroy(&l);
}

/* A thread that takes one side of the lock, notes when it got it (in order), holds it 10 ms. */
struct taker {
    struct oc_reclaim_lock *l;
    int writer;
    _Atomic unsigned *seq;
    _Atomic unsigned got_at; /* 0: not yet */
};

static void *take_and_note(void *p)
{
    struct taker *t = p;
    const struct timespec hold = {0, 10 * 1000 * 1000};
    int got = 1;
    if (t->writer)
        got = oc_reclaim_lock_reclaim(t->l, 5);
    else
        oc_reclaim_lock_read(t->l);
    atomic_store(&t->got_at, got ? atomic_fetch_add(t->seq, 1) + 1 : 1000);
    if (got) {
        nanosleep(&hold, NULL);
        oc_reclaim_lock_unlock(t->l);
    }
    return NULL;
}

/*
 * The order writer preference gives: while a reader holds the lock and a
 * reclaim waits, a second reader waits too, and gets in after the reclaim
 * (glibc's reader-preferring lock lets it in first: the test fails with it).
 */
OC_TEST(reclaim_lock_new_readers_wait_behind_a_waiting_reclaim)
{
    struct oc_err err;
    struct oc_reclaim_lock l;
    OC_CHECK_OK(oc_reclaim_lock_init(&l, "test cache", &err), &err);
    _Atomic unsigned seq = 0;
    struct taker w = {&l, 1, &seq, 0}, r = {&l, 0, &seq, 0};
    const struct timespec settle = {0, 100 * 1000 * 1000};
    pthread_t tw, tr;
    oc_reclaim_lock_read(&l);
    OC_CHECK(pthread_create(&tw, NULL, take_and_note, &w) == 0);
    nanosleep(&settle, NULL); /* the reclaim is waiting on this thread's read side */
    OC_CHECK(pthread_create(&tr, NULL, take_and_note, &r) == 0);
    nanosleep(&settle, NULL);
    OC_CHECK(atomic_load(&w.got_at) == 0 && atomic_load(&r.got_at) == 0); /* both wait */
    oc_reclaim_lock_unlock(&l);
    pthread_join(tw, NULL);
    pthread_join(tr, NULL);
    OC_CHECK(atomic_load(&w.got_at) == 1 && atomic_load(&r.got_at) == 2);
    oc_reclaim_lock_destroy(&l);
}

struct reclaim_ctx {
    struct oc_reclaim_lock *l;
    int got;
    double waited;
};

static void *reclaim_from_another_thread(void *p)
{
    struct reclaim_ctx *c = p;
    double t0 = oc_now_s();
    c->got = oc_reclaim_lock_reclaim(c->l, 1);
    c->waited = oc_now_s() - t0;
    if (c->got)
        oc_reclaim_lock_unlock(c->l);
    return NULL;
}

static struct reclaim_ctx reclaim_elsewhere(struct oc_reclaim_lock *l)
{
    struct reclaim_ctx c = {l, -1, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, reclaim_from_another_thread, &c) == 0)
        pthread_join(th, NULL);
    return c;
}

/*
 * A reclaim on a thread that holds the lock (read or write side, one lock
 * among several held) gives nothing at once instead of waiting on itself; on
 * another thread it waits its time out while the lock is held, and gets the
 * write side once it is free.
 */
OC_TEST(reclaim_lock_gives_nothing_to_its_holder_and_times_out_elsewhere)
{
    struct oc_err err;
    struct oc_reclaim_lock a, b, never;
    memset(&never, 0, sizeof(never));
    oc_reclaim_lock_destroy(&never); /* never made: nothing to do */
    OC_CHECK_OK(oc_reclaim_lock_init(&a, "cache a", &err), &err);
    OC_CHECK_OK(oc_reclaim_lock_init(&b, "cache b", &err), &err);
    oc_reclaim_lock_read(&a);
    oc_reclaim_lock_read(&b);
    double t0 = oc_now_s();
    OC_CHECK(oc_reclaim_lock_reclaim(&a, 5) == 0 && oc_reclaim_lock_reclaim(&b, 5) == 0);
    OC_CHECK(oc_now_s() - t0 < 1.0);
    struct reclaim_ctx c = reclaim_elsewhere(&a); /* held here: times out there */
    OC_CHECK(c.got == 0 && c.waited >= 0.9);
    oc_reclaim_lock_unlock(&a);
    OC_CHECK(oc_reclaim_lock_reclaim(&b, 5) == 0); /* b still held */
    c = reclaim_elsewhere(&a);                     /* a free: had at once */
    OC_CHECK(c.got == 1 && c.waited < 0.5);
    OC_CHECK(oc_reclaim_lock_reclaim(&a, 1) == 1); /* and here too */
    oc_reclaim_lock_unlock(&a);
    oc_reclaim_lock_unlock(&b);
    oc_reclaim_lock_write(&a); /* taking back: the write side, held */
    OC_CHECK(oc_reclaim_lock_reclaim(&a, 5) == 0);
    oc_reclaim_lock_unlock(&a);
    OC_CHECK(oc_reclaim_lock_reclaim(&b, 1) == 1);
    oc_reclaim_lock_unlock(&b);
    oc_reclaim_lock_destroy(&a);
    oc_reclaim_lock_destroy(&b);
}

/* oc_reclaim_lock_held: either side, this thread only; the asserts of "lock held" use it. */
OC_TEST(reclaim_lock_held_by_this_thread_only)
{
    struct oc_err err;
    struct oc_reclaim_lock a;
    OC_CHECK_OK(oc_reclaim_lock_init(&a, "cache a", &err), &err);
    OC_CHECK(!oc_reclaim_lock_held(&a));
    oc_reclaim_lock_read(&a);
    OC_CHECK(oc_reclaim_lock_held(&a));
    struct reclaim_ctx c = reclaim_elsewhere(&a); /* another thread does not hold it */
    OC_CHECK(c.got == 0);
    oc_reclaim_lock_unlock(&a);
    OC_CHECK(!oc_reclaim_lock_held(&a));
    oc_reclaim_lock_write(&a);
    OC_CHECK(oc_reclaim_lock_held(&a));
    oc_reclaim_lock_unlock(&a);
    oc_reclaim_lock_destroy(&a);
}

#ifndef NDEBUG
static void *held_elsewhere(void *arg)
{
    struct oc_held *h = arg;
    /* what OC_ASSERT_HELD compares: the holder is not this thread */
    return (void *)(uintptr_t)(atomic_load(&h->tid) == (unsigned long)pthread_self());
}
#endif

/*
 * OC_ASSERT and the held-by records: with asserts on (Debug, sanitizer builds)
 * a false OC_ASSERT stops the process and OC_HELD_* track the holder; with
 * NDEBUG the condition is not even evaluated.
 */
OC_TEST(asserts_on_where_debug_off_where_ndebug)
{
    int evaluated = 0;
    OC_ASSERT(++evaluated == 1);
#ifdef NDEBUG
    OC_CHECK(evaluated == 0);
#else
    OC_CHECK(evaluated == 1);
    struct oc_held h = {0};
    OC_HELD_TAKE(&h);
    OC_ASSERT_HELD(&h); /* held here: passes */
    pthread_t t;
    void *other = NULL;
    OC_CHECK(pthread_create(&t, NULL, held_elsewhere, &h) == 0 && pthread_join(t, &other) == 0);
    OC_CHECK(other == NULL); /* the assert would fail on another thread */
    OC_HELD_DROP(&h);
    OC_CHECK(atomic_load(&h.tid) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr); /* assert()'s message is expected */
        OC_ASSERT_HELD(&h);                /* dropped: aborts */
        _exit(0);
    }
    int status = 0;
    OC_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    OC_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
#endif
}

/* Rank sets: membership and rank against a count, at word edges, empty and full; too many
   members is refused. */
OC_TEST(rank_set_membership_and_rank)
{
    struct oc_err err;
    struct oc_rank_set r;
    static const uint64_t sizes[] = {1, 63, 64, 65, 200, 1000};
    for (int t = 0; t < 6; t++) {
        uint64_t n = sizes[t], ids[1000], k = 0;
        for (int mode = 0; mode < 3; mode++) {
            k = 0;
            for (uint64_t v = 0; v < n; v++)
                if (mode == 1 || (mode == 2 && (v * 2654435761u) % 7 < 3))
                    ids[k++] = v;
            OC_CHECK_OK(oc_rank_set_build(&r, ids, k, n, "test", &err), &err);
            uint64_t below = 0, rank = 0;
            for (uint64_t v = 0; v < n; v++) {
                int in = below < k && ids[below] == v;
                OC_CHECK(oc_rank_set_find(&r, v, &rank) == in);
                if (in)
                    OC_CHECK(rank == below++);
            }
            OC_CHECK(below == k);
            oc_rank_set_free(&r);
        }
    }
    OC_CHECK(oc_rank_set_bytes(65) == 24);
    OC_CHECK_ERR(
        oc_rank_set_build(&r, NULL, (uint64_t)UINT32_MAX + 1, UINT64_C(1) << 33, "big set", &err),
        OC_ERR_ARG, &err, "big set");
}

/* Rank sets filled in any order (repeats allowed) answer as one built from the ascending ids;
   build takes any order too. */
OC_TEST(rank_set_any_order_matches_ascending)
{
    struct oc_err err;
    static const uint64_t sizes[] = {1, 64, 65, 1000};
    for (int t = 0; t < 4; t++) {
        uint64_t n = sizes[t], sorted[1000], shuffled[1000], k = 0;
        for (uint64_t v = 0; v < n; v++)
            if ((v * 2654435761u) % 5 < 2 || v == n - 1)
                sorted[k++] = v;
        for (uint64_t i = 0; i < k; i++) /* a permutation: i * 7919 mod k (7919 prime > 1000) */
            shuffled[i] = sorted[(i * 7919) % k];
        struct oc_rank_set a, b, c;
        OC_CHECK_OK(oc_rank_set_build(&a, sorted, k, n, "sorted", &err), &err);
        OC_CHECK_OK(oc_rank_set_build(&b, shuffled, k, n, "shuffled", &err), &err);
        OC_CHECK_OK(oc_rank_set_init(&c, n, "added", &err), &err);
        for (uint64_t i = k; i > 0; i--) /* backwards, and each twice */
            OC_CHECK_OK(oc_rank_set_add(&c, shuffled[i - 1], &err), &err);
        for (uint64_t i = 0; i < k; i++)
            OC_CHECK_OK(oc_rank_set_add(&c, shuffled[i], &err), &err);
        OC_CHECK_OK(oc_rank_set_seal(&c, &err), &err);
        OC_CHECK(a.n_members == k && b.n_members == k && c.n_members == k);
        for (uint64_t v = 0; v < n; v++) {
            uint64_t ra = 7, rb = 8, rc = 9;
            int in = oc_rank_set_find(&a, v, &ra);
            OC_CHECK(oc_rank_set_find(&b, v, &rb) == in && oc_rank_set_find(&c, v, &rc) == in);
            if (in)
                OC_CHECK(ra == rb && ra == rc);
        }
        oc_rank_set_free(&a);
        oc_rank_set_free(&b);
        oc_rank_set_free(&c);
    }
}

/* Bad input is refused naming the set: an id out of range, an id twice, adding after the seal,
   sealing twice; a freed set frees again harmlessly. */
OC_TEST(rank_set_bad_input_is_refused)
{
    struct oc_err err;
    struct oc_rank_set r;
    uint64_t out[] = {3, 10}, twice[] = {4, 2, 4};
    OC_CHECK_ERR(oc_rank_set_build(&r, out, 2, 10, "cpu cache ids", &err), OC_ERR_ARG, &err,
                 "cpu cache ids: id 10 out of range");
    OC_CHECK(r.bits == NULL && r.before == NULL);
    OC_CHECK_ERR(oc_rank_set_build(&r, twice, 3, 10, "atom ids", &err), OC_ERR_ARG, &err,
                 "atom ids: 3 ids given, 2 distinct");
    OC_CHECK(r.bits == NULL);
    OC_CHECK_OK(oc_rank_set_init(&r, 100, "kg atoms", &err), &err);
    OC_CHECK_ERR(oc_rank_set_add(&r, 100, &err), OC_ERR_ARG, &err, "kg atoms: id 100 out of range");
    OC_CHECK_OK(oc_rank_set_add(&r, 99, &err), &err);
    OC_CHECK_OK(oc_rank_set_seal(&r, &err), &err);
    OC_CHECK_ERR(oc_rank_set_add(&r, 5, &err), OC_ERR_ARG, &err,
                 "kg atoms: id 5 added to a sealed");
    OC_CHECK_ERR(oc_rank_set_seal(&r, &err), OC_ERR_ARG, &err, "sealed twice");
    uint64_t rank = 1;
    OC_CHECK(oc_rank_set_find(&r, 99, &rank) == 1 && rank == 0);
    OC_CHECK(oc_rank_set_find(&r, 5, &rank) == 0);
    oc_rank_set_free(&r);
    oc_rank_set_free(&r);
}

/* Walks l from front to back into out (at most cap), checking the back links; returns the count. */
static uint64_t slot_list_walk(const struct oc_slot_list *l, uint32_t *out, uint64_t cap)
{
    uint64_t n = 0;
    uint32_t prev = OC_SLOT_NONE;
    for (uint32_t k = l->front; k != OC_SLOT_NONE && n < cap; prev = k, k = l->next[k]) {
        OC_CHECK(l->prev[k] == prev);
        out[n++] = k;
    }
    OC_CHECK(l->back == prev && n == l->n);
    return n;
}

OC_TEST(slot_list_keeps_order_at_both_ends)
{
    struct oc_err err;
    struct oc_slot_list l;
    uint32_t got[8];
    OC_CHECK_OK(oc_slot_list_init(&l, 6, "test list", &err), &err);
    OC_CHECK(l.n == 0 && l.front == OC_SLOT_NONE && l.back == OC_SLOT_NONE);
    for (uint32_t k = 0; k < 4; k++)
        oc_slot_list_push_back(&l, k); /* 0 1 2 3 */
    oc_slot_list_push_front(&l, 5);    /* 5 0 1 2 3 */
    oc_slot_list_unlink(&l, 1);        /* 5 0 2 3 */
    oc_slot_list_unlink(&l, 5);        /* 0 2 3: the front */
    oc_slot_list_unlink(&l, 3);        /* 0 2: the back */
    oc_slot_list_push_back(&l, 1);     /* 0 2 1 */
    OC_CHECK(slot_list_walk(&l, got, 8) == 3 && got[0] == 0 && got[1] == 2 && got[2] == 1);
    oc_slot_list_unlink(&l, 0);
    oc_slot_list_unlink(&l, 2);
    oc_slot_list_unlink(&l, 1);
    OC_CHECK(slot_list_walk(&l, got, 8) == 0 && l.front == OC_SLOT_NONE);
    oc_slot_list_push_front(&l, 4); /* the only one: both ends */
    OC_CHECK(l.front == 4 && l.back == 4 && l.n == 1);
    oc_slot_list_deinit(&l);
    oc_slot_list_deinit(&l);
    OC_CHECK(oc_slot_list_bytes(6) == 48);
    OC_CHECK_ERR(oc_slot_list_init(&l, (uint64_t)OC_SLOT_NONE, "standby list", &err), OC_ERR_ARG,
                 &err, "standby list: 4294967295 slots are more than a list holds");
    OC_CHECK(l.prev == NULL && l.n == 0);
}

/* A bitmap over ids: each bit set alone, bytes enough for the last id. */
OC_TEST(bits_set_and_get_each_id)
{
    uint8_t m[3] = {0};
    OC_CHECK(oc_bits_bytes(0) == 1 && oc_bits_bytes(7) == 1 && oc_bits_bytes(16) == 3);
    const uint64_t set[] = {0, 7, 8, 13, 16};
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
        oc_bit_set(m, set[i]);
    for (uint64_t v = 0; v < 24; v++)
        OC_CHECK(oc_bit_get(m, v) == (v == 0 || v == 7 || v == 8 || v == 13 || v == 16));
    OC_CHECK(m[0] == 0x81 && m[1] == 0x21 && m[2] == 0x01);
}

OC_TEST_MAIN()
