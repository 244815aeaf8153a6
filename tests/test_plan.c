/*
 * test_plan.c — the DiskGNN planner: a hand-checked tiny window (addresses,
 * packed rows, disk-cache rows, chunk and segment offsets, file bytes for
 * s = 1, 2, 3, 4 and m = 2); placement and file bytes of every s against a
 * brute-force reference on random traces (m = 1, 2, 3), the choice of the
 * smallest fitting s, the budget error; every address decodes back to its
 * row; bad traces; the MinHash order (deterministic, a permutation of the
 * identity order); page counts against a bitmap; access counts and the
 * hottest rows against brute force; an allocation fault loop; and the
 * acceptance test: on batches sampled from a generated graph, MinHash-ordered
 * disk caches touch strictly fewer pages than id-ordered ones.
 *
 * Place in the data flow: tests of plan (sample → trace → layout).
 * Thread-safety: single-threaded.
 * Ownership: every trace and layout is freed by the test that made it.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/generate.h"
#include "offcore/plan.h"
#include "offcore/rng.h"
#include "offcore/sample.h"
#include "plan/plan_int.h"
#include "plan/window.h"

#define PAGE OC_PLAN_PAGE

/* ---- traces ------------------------------------------------------------------------- */

/* A trace with its own (malloc'd) arrays and record sizes. */
struct tr {
    struct oc_plan_trace t;
    uint64_t *off, *rows, *rec;
};

static void tr_free(struct tr *x)
{
    free(x->off);
    free(x->rows);
    free(x->rec);
    memset(x, 0, sizeof(*x));
}

static void tr_wire(struct tr *x, uint64_t n_nodes, uint64_t n_batches)
{
    x->t.n_nodes = n_nodes;
    x->t.n_batches = n_batches;
    x->t.off = x->off;
    x->t.rows = x->rows;
}

/* T batches of 1..max_b distinct ids below U, skewed to small ids; record sizes 0..299. */
static struct tr random_tr(uint64_t seed, uint64_t T, uint64_t U, uint64_t max_b)
{
    struct tr x;
    struct oc_rng r;
    uint8_t *seen = calloc(U, 1);
    uint64_t n = 0;
    memset(&x, 0, sizeof(x));
    x.off = calloc(T + 1, sizeof(uint64_t));
    x.rows = calloc(T * max_b + 1, sizeof(uint64_t));
    x.rec = calloc(T + 1, sizeof(uint64_t));
    oc_rng_init(&r, seed, 1, 2, 3);
    for (uint64_t b = 0; b < T; b++) {
        uint64_t k = 1 + oc_rng_below(&r, max_b < U ? max_b : U), got = 0;
        while (got < k) {
            double u = oc_rng_uniform_f64(&r);
            uint64_t v = (uint64_t)((double)U * u * u);
            if (v >= U || seen[v])
                continue;
            seen[v] = 1;
            x.rows[n + got++] = v;
        }
        for (uint64_t i = n; i < n + k; i++)
            seen[x.rows[i]] = 0;
        n += k;
        x.off[b + 1] = n;
        x.rec[b] = oc_rng_below(&r, 300);
    }
    free(seen);
    tr_wire(&x, U, T);
    return x;
}

static struct oc_plan_opts opts_of(const struct tr *x, uint64_t row_bytes, const uint64_t *cpu,
                                   uint64_t n_cpu)
{
    struct oc_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.row_bytes = row_bytes;
    o.rec_bytes = x->rec;
    o.cpu_ids = cpu;
    o.n_cpu = n_cpu;
    return o;
}

/* The ids in [lo, hi) of U in steps of step: a stand-in CPU cache. */
static uint64_t *cpu_range(uint64_t lo, uint64_t hi, uint64_t step, uint64_t *n)
{
    uint64_t *c = calloc(hi + 1, sizeof(uint64_t));
    *n = 0;
    for (uint64_t v = lo; v < hi; v += step)
        c[(*n)++] = v;
    return c;
}

/* ---- brute-force reference ------------------------------------------------------------ */

static uint64_t rup(uint64_t x)
{
    return (x + PAGE - 1) / PAGE * PAGE;
}

static int in_batch(const struct oc_plan_trace *t, uint64_t b, uint64_t v)
{
    for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++)
        if (t->rows[i] == v)
            return 1;
    return 0;
}

/*
 * Straight from the definitions: a non-CPU access is shared when more than m
 * batches of its segment read the row (counted by scanning them); the file
 * is the page-rounded chunks then the page-rounded caches. tier[i] gets each
 * access's tier when non-NULL.
 */
static uint64_t ref_bytes(const struct oc_plan_trace *t, const struct oc_plan_opts *o, uint64_t s,
                          uint8_t *tier)
{
    uint64_t m = o->min_share ? o->min_share : 1, total = 0;
    for (uint64_t b0 = 0; b0 < t->n_batches; b0 += s) {
        uint64_t b1 = b0 + s < t->n_batches ? b0 + s : t->n_batches, shared = 0;
        for (uint64_t b = b0; b < b1; b++) {
            uint64_t packed = 0;
            for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
                uint64_t v = t->rows[i], cnt = 0, first = 1;
                int cpu = 0;
                for (uint64_t k = 0; k < o->n_cpu; k++)
                    cpu |= o->cpu_ids[k] == v;
                if (cpu) {
                    if (tier)
                        tier[i] = OC_PLAN_CPU;
                    continue;
                }
                for (uint64_t bb = b0; bb < b1; bb++)
                    cnt += (uint64_t)in_batch(t, bb, v);
                for (uint64_t bb = b0; bb < b; bb++)
                    first &= !in_batch(t, bb, v);
                if (cnt > m) {
                    shared += first;
                    if (tier)
                        tier[i] = OC_PLAN_DISK_CACHE;
                } else {
                    packed++;
                    if (tier)
                        tier[i] = OC_PLAN_PACKED;
                }
            }
            total += rup(OC_PLAN_CHUNK_HEADER + o->rec_bytes[b] + 8 * (t->off[b + 1] - t->off[b]) +
                         packed * o->row_bytes);
        }
        total += rup(shared * o->row_bytes);
    }
    return total;
}

/* ---- layout invariants ---------------------------------------------------------------- */

/*
 * Every access decodes to its row; packed rows ascending; each segment's
 * cache distinct; offsets consistent and page aligned; tier counts add up;
 * tiers and file bytes equal the reference's (with_ref: it is quadratic).
 */
static void check_layout_ref(const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                             const struct oc_plan_layout *l, int with_ref)
{
    uint64_t n = t->n_batches, n_acc = n ? t->off[n] : 0, cnt[4] = {0, 0, 0, 0};
    uint8_t *tier = calloc(n_acc + 1, 1);
    int ok = 1;
    if (with_ref)
        OC_CHECK(ref_bytes(t, o, l->s, tier) == l->file_bytes);
    OC_CHECK(l->n_segments == (n + l->s - 1) / l->s);
    OC_CHECK(l->chunk_off[0] == 0 && l->seg_byte_off[0] == l->chunk_off[n]);
    OC_CHECK(l->seg_byte_off[l->n_segments] == l->file_bytes && l->pack_off[0] == 0 &&
             l->seg_off[0] == 0);
    for (uint64_t b = 0; b < n; b++) {
        uint64_t j = b / l->s, np = l->pack_off[b + 1] - l->pack_off[b];
        ok &= l->chunk_off[b] % PAGE == 0;
        ok &=
            l->chunk_off[b + 1] - l->chunk_off[b] ==
            rup(oc_plan_chunk_bytes(o->rec_bytes[b], t->off[b + 1] - t->off[b], np, o->row_bytes));
        for (uint64_t p = 1; p < np; p++)
            ok &= l->pack_rows[l->pack_off[b] + p - 1] < l->pack_rows[l->pack_off[b] + p];
        for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
            uint64_t a = l->addr[i], idx = OC_PLAN_ADDR_INDEX(a), v = t->rows[i];
            enum oc_plan_where w = OC_PLAN_ADDR_WHERE(a);
            cnt[w]++;
            ok &= !with_ref || (uint8_t)w == tier[i];
            if (w == OC_PLAN_CPU)
                ok &= idx < o->n_cpu && o->cpu_ids[idx] == v;
            else if (w == OC_PLAN_DISK_CACHE)
                ok &= idx < l->seg_off[j + 1] - l->seg_off[j] &&
                      l->seg_rows[l->seg_off[j] + idx] == v;
            else if (w == OC_PLAN_PACKED)
                ok &= idx < np && l->pack_rows[l->pack_off[b] + idx] == v;
            else
                ok = 0;
        }
    }
    for (uint64_t j = 0; j < l->n_segments; j++) {
        uint64_t ns = l->seg_off[j + 1] - l->seg_off[j];
        uint64_t *c = malloc((ns + 1) * sizeof(uint64_t));
        memcpy(c, l->seg_rows + l->seg_off[j], ns * sizeof(uint64_t));
        qsort(c, ns, sizeof(uint64_t), oc_cmp_u64);
        for (uint64_t p = 1; p < ns; p++)
            ok &= c[p - 1] < c[p];
        free(c);
        ok &= l->seg_byte_off[j] % PAGE == 0 &&
              l->seg_byte_off[j + 1] - l->seg_byte_off[j] == rup(ns * o->row_bytes);
    }
    OC_CHECK(ok);
    OC_CHECK(cnt[OC_PLAN_CPU] == l->n_cpu_accesses && cnt[OC_PLAN_DISK_CACHE] == l->n_dc_accesses &&
             cnt[OC_PLAN_PACKED] == l->n_packed_accesses && cnt[OC_PLAN_GPU] == 0);
    OC_CHECK(l->n_cpu_accesses + l->n_dc_accesses + l->n_packed_accesses == n_acc);
    free(tier);
}

static void check_layout(const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                         const struct oc_plan_layout *l)
{
    check_layout_ref(t, o, l, 1);
}

/* ---- the tiny window, by hand --------------------------------------------------------- */

/*
 *   b0: 5 1 3    b1: 3 7 1    b2: 2 9 3    b3: 9 0     CPU cache {1}
 *   row_bytes 1500, records 10 20 30 40 bytes.
 */
static const uint64_t tiny_off[] = {0, 3, 6, 9, 11};
static const uint64_t tiny_rows[] = {5, 1, 3, 3, 7, 1, 2, 9, 3, 9, 0};
static const uint64_t tiny_rec[] = {10, 20, 30, 40};
static const uint64_t tiny_cpu[] = {1};
static const struct oc_plan_trace tiny = {10, 4, tiny_off, tiny_rows};

static struct oc_plan_opts tiny_opts(uint64_t s)
{
    struct oc_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.row_bytes = 1500;
    o.rec_bytes = tiny_rec;
    o.cpu_ids = tiny_cpu;
    o.n_cpu = 1;
    o.segment = s;
    o.identity_order = 1;
    return o;
}

#define C(w, i)       OC_PLAN_ADDR(OC_PLAN_##w, i)
#define SAME(a, b, n) (memcmp((a), (b), (n) * sizeof(uint64_t)) == 0)

OC_TEST(tiny_window_by_hand)
{
    struct oc_err err;
    struct oc_plan_layout l;
    uint64_t bytes;

    /* s = 1: no disk cache; chunks 3098, 3108, 4618, 3120 bytes → 1, 1, 2, 1 pages. */
    struct oc_plan_opts o = tiny_opts(1);
    OC_CHECK_OK(oc_plan_layout_build(&tiny, &o, &l, &err), &err);
    {
        const uint64_t addr[] = {C(PACKED, 1), C(CPU, 0),    C(PACKED, 0), C(PACKED, 0),
                                 C(PACKED, 1), C(CPU, 0),    C(PACKED, 0), C(PACKED, 2),
                                 C(PACKED, 1), C(PACKED, 1), C(PACKED, 0)};
        const uint64_t pack_off[] = {0, 2, 4, 7, 9}, pack_rows[] = {3, 5, 3, 7, 2, 3, 9, 0, 9};
        const uint64_t chunk_off[] = {0, 4096, 8192, 16384, 20480};
        OC_CHECK(l.s == 1 && l.n_segments == 4 && l.file_bytes == 20480);
        OC_CHECK(SAME(l.addr, addr, 11) && SAME(l.pack_off, pack_off, 5) &&
                 SAME(l.pack_rows, pack_rows, 9) && SAME(l.chunk_off, chunk_off, 5));
        for (int j = 0; j <= 4; j++)
            OC_CHECK(l.seg_off[j] == 0 && l.seg_byte_off[j] == 20480);
        OC_CHECK(l.n_cpu_accesses == 2 && l.n_dc_accesses == 0 && l.n_packed_accesses == 9);
        check_layout(&tiny, &o, &l);
    }
    oc_plan_layout_deinit(&l);

    /* s = 2: row 3 shared in segment 0 (b0, b1), row 9 in segment 1 (b2, b3). */
    o = tiny_opts(2);
    OC_CHECK_OK(oc_plan_layout_build(&tiny, &o, &l, &err), &err);
    {
        const uint64_t addr[] = {C(PACKED, 0), C(CPU, 0),        C(DISK_CACHE, 0), C(DISK_CACHE, 0),
                                 C(PACKED, 0), C(CPU, 0),        C(PACKED, 0),     C(DISK_CACHE, 0),
                                 C(PACKED, 1), C(DISK_CACHE, 0), C(PACKED, 0)};
        const uint64_t pack_off[] = {0, 1, 2, 4, 5}, pack_rows[] = {5, 7, 2, 3, 0};
        const uint64_t chunk_off[] = {0, 4096, 8192, 12288, 16384};
        const uint64_t seg_off[] = {0, 1, 2}, seg_rows[] = {3, 9};
        const uint64_t seg_byte_off[] = {16384, 20480, 24576};
        OC_CHECK(l.s == 2 && l.n_segments == 2 && l.file_bytes == 24576);
        OC_CHECK(SAME(l.addr, addr, 11) && SAME(l.pack_off, pack_off, 5) &&
                 SAME(l.pack_rows, pack_rows, 5) && SAME(l.chunk_off, chunk_off, 5) &&
                 SAME(l.seg_off, seg_off, 3) && SAME(l.seg_rows, seg_rows, 2) &&
                 SAME(l.seg_byte_off, seg_byte_off, 3));
        OC_CHECK(l.n_cpu_accesses == 2 && l.n_dc_accesses == 4 && l.n_packed_accesses == 5);
        check_layout(&tiny, &o, &l);
        uint64_t pages = 99;
        OC_CHECK_OK(oc_plan_layout_dc_pages(&l, &tiny, 0, &pages, &err), &err);
        OC_CHECK(pages == 1);
    }
    oc_plan_layout_deinit(&l);

    /* s = 3: segment 0 = b0..b2 shares row 3; segment 1 = b3 alone shares nothing. */
    o = tiny_opts(3);
    OC_CHECK_OK(oc_plan_file_bytes(&tiny, &o, 3, &bytes, &err), &err);
    OC_CHECK(bytes == 20480);
    OC_CHECK_OK(oc_plan_layout_build(&tiny, &o, &l, &err), &err);
    {
        const uint64_t pack_rows[] = {5, 7, 2, 9, 0, 9}, seg_byte_off[] = {16384, 20480, 20480};
        OC_CHECK(SAME(l.pack_rows, pack_rows, 6) && SAME(l.seg_byte_off, seg_byte_off, 3));
        OC_CHECK(l.seg_off[1] == 1 && l.seg_rows[0] == 3 && l.seg_off[2] == 1);
        check_layout(&tiny, &o, &l);
    }
    oc_plan_layout_deinit(&l);

    /* s = 4, m = 1: rows 3 and 9 shared; m = 2: only row 3 (read by 3 batches). */
    o = tiny_opts(4);
    OC_CHECK_OK(oc_plan_file_bytes(&tiny, &o, 4, &bytes, &err), &err);
    OC_CHECK(bytes == 20480);
    o.min_share = 2;
    OC_CHECK_OK(oc_plan_layout_build(&tiny, &o, &l, &err), &err);
    {
        const uint64_t pack_rows[] = {5, 7, 2, 9, 0, 9};
        OC_CHECK(l.n_segments == 1 && l.seg_off[1] == 1 && l.seg_rows[0] == 3);
        OC_CHECK(SAME(l.pack_rows, pack_rows, 6) && l.file_bytes == 16384 + 4096);
        OC_CHECK(l.addr[7] == C(PACKED, 1) && l.addr[9] == C(PACKED, 1) &&
                 l.addr[8] == C(DISK_CACHE, 0));
        check_layout(&tiny, &o, &l);
    }
    oc_plan_layout_deinit(&l);

    /* The file is 20480 at best (s = 1, 3, 4): the budget picks the smallest such s. */
    o = tiny_opts(0);
    o.disk_budget_bytes = 20480;
    OC_CHECK_OK(oc_plan_layout_build(&tiny, &o, &l, &err), &err);
    OC_CHECK(l.s == 1 && l.file_bytes == 20480);
    oc_plan_layout_deinit(&l);
    o.disk_budget_bytes = 20479;
    OC_CHECK_ERR(oc_plan_layout_build(&tiny, &o, &l, &err), OC_ERR_BUDGET, &err, "--disk-budget");
    OC_CHECK(strstr(err.msg, "20480") != NULL);
    OC_CHECK(l.addr == NULL && l.file_bytes == 0 && l.seg_rows == NULL);
    /* A fixed s over the budget is refused too. */
    o = tiny_opts(2);
    o.disk_budget_bytes = 20480;
    OC_CHECK_ERR(oc_plan_layout_build(&tiny, &o, &l, &err), OC_ERR_BUDGET, &err, "--disk-budget");
    OC_CHECK(l.addr == NULL);
}

OC_TEST(empty_window)
{
    struct oc_err err;
    struct oc_plan_layout l;
    uint64_t off0 = 0, bytes = 1;
    struct oc_plan_trace t = {10, 0, &off0, NULL};
    struct oc_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.row_bytes = 8;
    o.disk_budget_bytes = 1;
    OC_CHECK_OK(oc_plan_layout_build(&t, &o, &l, &err), &err);
    OC_CHECK(l.n_batches == 0 && l.n_segments == 0 && l.file_bytes == 0);
    OC_CHECK(l.chunk_off && l.chunk_off[0] == 0 && l.seg_byte_off && l.seg_byte_off[0] == 0);
    oc_plan_layout_deinit(&l);
    oc_plan_layout_deinit(&l); /* idempotent */
    oc_plan_layout_deinit(NULL);
    OC_CHECK_OK(oc_plan_file_bytes(&t, &o, 3, &bytes, &err), &err);
    OC_CHECK(bytes == 0);
}

/* ---- random traces against the reference ---------------------------------------------- */

OC_TEST(s1_puts_nothing_in_disk_caches)
{
    struct oc_err err;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct tr x = random_tr(seed, 20, 40, 12);
        uint64_t n_cpu, *cpu = cpu_range(0, 40, 7, &n_cpu);
        struct oc_plan_opts o = opts_of(&x, 100, cpu, n_cpu);
        struct oc_plan_layout l;
        o.segment = 1;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &l, &err), &err);
        OC_CHECK(l.n_dc_accesses == 0 && l.seg_off[l.n_segments] == 0);
        OC_CHECK(l.chunk_off[20] == l.file_bytes);
        check_layout(&x.t, &o, &l);
        oc_plan_layout_deinit(&l);
        free(cpu);
        tr_free(&x);
    }
}

/* Laid out batch by batch (oc_plan_batch_layout), a window gets the s = 1 layout's addresses
   and packed rows. */
OC_TEST(batch_layout_is_the_s1_layout)
{
    struct oc_err err;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct tr x = random_tr(seed, 20, 40, 12);
        uint64_t n_cpu, *cpu = cpu_range(seed % 3, 40, 5 + seed, &n_cpu);
        struct oc_plan_opts o = opts_of(&x, 100, cpu, n_cpu);
        struct oc_plan_layout l;
        o.segment = 1;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &l, &err), &err);
        uint64_t addr[12], pack[12], n_pack, n_packed = 0;
        struct oc_rank_set set;
        OC_CHECK_OK(oc_rank_set_build(&set, cpu, n_cpu, 40, "test", &err), &err);
        for (uint64_t t = 0; t < 40; t++) { /* keyed, then sorted and searched */
            uint64_t b = t % 20, n = x.off[b + 1] - x.off[b];
            plan_batch_layout(x.rows + x.off[b], n, &set, addr, pack, &n_pack, t < 20);
            OC_CHECK(n_pack == l.pack_off[b + 1] - l.pack_off[b]);
            OC_CHECK(memcmp(pack, l.pack_rows + l.pack_off[b], n_pack * sizeof(uint64_t)) == 0);
            OC_CHECK(memcmp(addr, l.addr + x.off[b], n * sizeof(uint64_t)) == 0);
            n_packed += t < 20 ? n_pack : 0;
        }
        OC_CHECK(n_packed == l.n_packed_accesses && n_packed > 0 && l.n_cpu_accesses > 0);
        oc_rank_set_free(&set);
        oc_plan_layout_deinit(&l);
        free(cpu);
        tr_free(&x);
    }
}

/* For m in {1, 2, 3} and every s: file bytes and placement equal the reference. */
OC_TEST(file_bytes_and_placement_match_brute_force)
{
    struct oc_err err;
    static const uint64_t rbs[] = {1, 100, 700, 5000};
    for (uint64_t seed = 1; seed <= 8; seed++) {
        uint64_t T = 5 + seed * 3, U = 20 + seed * 9;
        struct tr x = random_tr(seed, T, U, 4 + seed * 2);
        uint64_t n_cpu, *cpu = cpu_range(seed % 3, U / 2, 5, &n_cpu);
        for (uint32_t m = 0; m <= 3; m++) {
            struct oc_plan_opts o = opts_of(&x, rbs[seed % 4], cpu, seed & 1 ? n_cpu : 0);
            o.min_share = m;
            o.identity_order = (int)(seed & 2);
            for (uint64_t s = 1; s <= T + 2; s++) {
                uint64_t bytes = 0, want = ref_bytes(&x.t, &o, s, NULL);
                struct oc_plan_layout l;
                OC_CHECK_OK(oc_plan_file_bytes(&x.t, &o, s, &bytes, &err), &err);
                if (bytes != want)
                    fprintf(stderr, "  seed %llu m %u s %llu: %llu bytes, brute force %llu\n",
                            (unsigned long long)seed, m, (unsigned long long)s,
                            (unsigned long long)bytes, (unsigned long long)want);
                OC_CHECK(bytes == want);
                o.segment = s;
                OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &l, &err), &err);
                OC_CHECK(l.file_bytes == want && l.s == s);
                check_layout(&x.t, &o, &l);
                oc_plan_layout_deinit(&l);
            }
        }
        free(cpu);
        tr_free(&x);
    }
}

/* With s chosen by the budget: the smallest s whose reference size fits, else OC_ERR_BUDGET. */
OC_TEST(chosen_s_is_the_smallest_fitting)
{
    struct oc_err err;
    int saw_s_above_1 = 0;
    for (uint64_t seed = 11; seed <= 18; seed++) {
        uint64_t T = 16, U = 60;
        struct tr x = random_tr(seed, T, U, 20);
        struct oc_plan_opts o = opts_of(&x, 1000, NULL, 0);
        o.min_share = (uint32_t)(seed % 2);
        uint64_t *ref = calloc(T + 1, sizeof(uint64_t)), lo = UINT64_MAX, hi = 0;
        for (uint64_t s = 1; s <= T; s++) {
            ref[s] = ref_bytes(&x.t, &o, s, NULL);
            lo = ref[s] < lo ? ref[s] : lo;
            hi = ref[s] > hi ? ref[s] : hi;
        }
        /* Budgets at every distinct size, and between them. */
        for (uint64_t s = 1; s <= T; s++) {
            for (int d = 0; d < 2; d++) {
                uint64_t budget = ref[s] - (uint64_t)d, want = 0;
                for (uint64_t q = 1; q <= T && !want; q++)
                    if (ref[q] <= budget)
                        want = q;
                struct oc_plan_layout l;
                o.disk_budget_bytes = budget;
                int rc = oc_plan_layout_build(&x.t, &o, &l, &err);
                if (want) {
                    OC_CHECK_OK(rc, &err);
                    OC_CHECK(l.s == want && l.file_bytes == ref[want] && l.file_bytes <= budget);
                    saw_s_above_1 |= want > 1;
                } else {
                    OC_CHECK(rc == OC_ERR_BUDGET && strstr(err.msg, "--disk-budget"));
                    OC_CHECK(l.addr == NULL && l.pack_off == NULL && l.n_batches == 0);
                }
                oc_plan_layout_deinit(&l);
            }
        }
        /* Unlimited → s = 1. */
        struct oc_plan_layout l;
        o.disk_budget_bytes = 0;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &l, &err), &err);
        OC_CHECK(l.s == 1);
        oc_plan_layout_deinit(&l);
        o.disk_budget_bytes = lo - 1;
        OC_CHECK_ERR(oc_plan_layout_build(&x.t, &o, &l, &err), OC_ERR_BUDGET, &err,
                     "--disk-budget");
        char want_msg[64];
        snprintf(want_msg, sizeof(want_msg), "%llu bytes", (unsigned long long)lo);
        OC_CHECK(strstr(err.msg, want_msg) != NULL);
        free(ref);
        tr_free(&x);
    }
    OC_CHECK(saw_s_above_1);
}

/* ---- errors ----------------------------------------------------------------------------- */

OC_TEST(bad_traces_are_refused)
{
    struct oc_err err;
    struct oc_plan_layout l;
    uint64_t bytes, rec[3] = {0, 0, 0}, cpu_bad[2] = {4, 2}, cpu_big[1] = {10};
    uint64_t off[4] = {0, 2, 4, 5}, rows[5] = {1, 2, 3, 4, 5};
    struct oc_plan_trace t = {10, 3, off, rows};
    struct oc_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.row_bytes = 4;
    o.rec_bytes = rec;
    OC_CHECK_OK(oc_plan_layout_build(&t, &o, &l, &err), &err);
    oc_plan_layout_deinit(&l);

    rows[3] = 10; /* id out of range */
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "batch 1 reads id 10");
    OC_CHECK(l.addr == NULL);
    OC_CHECK_ERR(oc_plan_file_bytes(&t, &o, 1, &bytes, &err), OC_ERR_ARG, &err, "id 10");
    rows[3] = 3; /* the same row twice in batch 1 */
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err,
                 "batch 1 reads id 3 twice");
    rows[3] = 4;
    off[2] = 1; /* offsets go down */
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "decrease at batch 1");
    off[2] = 4;
    off[0] = 1;
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "not 0");
    off[0] = 0;
    o.cpu_ids = cpu_bad;
    o.n_cpu = 2;
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "cpu_ids not ascending");
    o.cpu_ids = cpu_big;
    o.n_cpu = 1;
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "cpu_ids[0] = 10");
    o.n_cpu = 0;
    o.row_bytes = 0;
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "row_bytes");
    o.row_bytes = 4;
    o.rec_bytes = NULL;
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "rec_bytes");
    o.rec_bytes = rec;
    OC_CHECK_ERR(oc_plan_file_bytes(&t, &o, 0, &bytes, &err), OC_ERR_ARG, &err, "segment size 0");
    rec[1] = UINT64_MAX - 10; /* the file's size overflows */
    OC_CHECK_ERR(oc_plan_layout_build(&t, &o, &l, &err), OC_ERR_ARG, &err, "overflows");
    OC_CHECK(l.addr == NULL);
    rec[1] = 0;
    OC_CHECK_OK(oc_plan_layout_build(&t, &o, &l, &err), &err);
    OC_CHECK_ERR(oc_plan_layout_dc_pages(&l, &t, 3, &bytes, &err), OC_ERR_ARG, &err, "batch 3");
    oc_plan_layout_deinit(&l);
    uint32_t counts[10];
    rows[4] = 11;
    OC_CHECK_ERR(oc_plan_count_accesses(&t, counts, &err), OC_ERR_ARG, &err, "batch 2 reads id 11");
}

/* ---- MinHash order ---------------------------------------------------------------------- */

OC_TEST(minhash_order_is_a_deterministic_permutation_of_identity)
{
    struct oc_err err;
    OC_CHECK(plan_minhash(0, 5) == plan_minhash(0, 5) && plan_minhash(0, 5) != plan_minhash(1, 5) &&
             plan_minhash(0, 5) != plan_minhash(0, 6));
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct tr x = random_tr(seed, 24, 200, 60);
        struct oc_plan_opts o = opts_of(&x, 64, NULL, 0);
        struct oc_plan_layout a, b, id;
        o.segment = 6;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &a, &err), &err);
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &b, &err), &err);
        o.identity_order = 1;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &id, &err), &err);
        uint64_t n_sh = a.seg_off[a.n_segments];
        OC_CHECK(n_sh > 10 && n_sh == id.seg_off[id.n_segments]);
        OC_CHECK(SAME(a.addr, b.addr, x.off[24]) && SAME(a.seg_rows, b.seg_rows, n_sh));
        OC_CHECK(SAME(a.seg_off, id.seg_off, a.n_segments + 1) && a.file_bytes == id.file_bytes);
        OC_CHECK(SAME(a.pack_rows, id.pack_rows, a.pack_off[24]));
        int differs = 0;
        for (uint64_t j = 0; j < a.n_segments; j++) {
            uint64_t o0 = a.seg_off[j], ns = a.seg_off[j + 1] - o0;
            uint64_t *c = malloc((ns + 1) * sizeof(uint64_t));
            memcpy(c, a.seg_rows + o0, ns * sizeof(uint64_t));
            qsort(c, ns, sizeof(uint64_t), oc_cmp_u64);
            OC_CHECK(SAME(c, id.seg_rows + o0, ns)); /* identity = ascending id */
            differs |= !SAME(a.seg_rows + o0, id.seg_rows + o0, ns);
            free(c);
            /* MinHash order: signatures nondecreasing along the cache. */
            uint64_t prev[PLAN_MINHASH_K + 1] = {0};
            for (uint64_t p = 0; p < ns; p++) {
                uint64_t sig[PLAN_MINHASH_K + 1], v = a.seg_rows[o0 + p];
                for (unsigned k = 0; k < PLAN_MINHASH_K; k++)
                    sig[k] = UINT64_MAX;
                sig[PLAN_MINHASH_K] = v;
                for (uint64_t bb = j * 6; bb < (j + 1) * 6 && bb < 24; bb++)
                    if (in_batch(&x.t, bb, v))
                        for (unsigned k = 0; k < PLAN_MINHASH_K; k++)
                            if (plan_minhash(k, bb) < sig[k])
                                sig[k] = plan_minhash(k, bb);
                if (p)
                    OC_CHECK(memcmp(prev, sig, sizeof(sig)) != 0);
                int le = 1;
                for (unsigned k = 0; p && k <= PLAN_MINHASH_K; k++)
                    if (prev[k] != sig[k]) {
                        le = prev[k] < sig[k];
                        break;
                    }
                OC_CHECK(le);
                memcpy(prev, sig, sizeof(sig));
            }
        }
        OC_CHECK(differs);
        check_layout(&x.t, &o, &id);
        o.identity_order = 0;
        check_layout(&x.t, &o, &a);
        oc_plan_layout_deinit(&a);
        oc_plan_layout_deinit(&b);
        oc_plan_layout_deinit(&id);
        tr_free(&x);
    }
}

/* ---- page counts ------------------------------------------------------------------------ */

OC_TEST(dc_pages_match_a_bitmap)
{
    struct oc_err err;
    static const uint64_t rbs[] = {1, 100, 4096, 5000, 9000};
    for (size_t r = 0; r < sizeof(rbs) / sizeof(rbs[0]); r++) {
        struct tr x = random_tr(30 + r, 20, 300, 80);
        struct oc_plan_opts o = opts_of(&x, rbs[r], NULL, 0);
        struct oc_plan_layout l;
        o.segment = 5;
        OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &l, &err), &err);
        uint64_t n_pages = l.file_bytes / PAGE + 1;
        uint8_t *bits = malloc(n_pages);
        for (uint64_t b = 0; b < 20; b++) {
            uint64_t want = 0, got = 0, j = b / l.s;
            memset(bits, 0, n_pages);
            for (uint64_t i = x.off[b]; i < x.off[b + 1]; i++) {
                if (OC_PLAN_ADDR_WHERE(l.addr[i]) != OC_PLAN_DISK_CACHE)
                    continue;
                uint64_t st = l.seg_byte_off[j] + OC_PLAN_ADDR_INDEX(l.addr[i]) * l.row_bytes;
                for (uint64_t y = st; y < st + l.row_bytes; y++) {
                    OC_CHECK(y < l.seg_byte_off[j + 1]);
                    want += !bits[y / PAGE];
                    bits[y / PAGE] = 1;
                }
            }
            OC_CHECK_OK(oc_plan_layout_dc_pages(&l, &x.t, b, &got, &err), &err);
            OC_CHECK(got == want);
        }
        free(bits);
        oc_plan_layout_deinit(&l);
        tr_free(&x);
    }
}

/* ---- counts and the hottest rows -------------------------------------------------------- */

OC_TEST(counts_and_hottest_match_brute_force)
{
    struct oc_err err;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        uint64_t U = 120;
        struct tr x = random_tr(seed, 30, U, 25);
        uint32_t *cnt = malloc(U * sizeof(uint32_t));
        OC_CHECK_OK(oc_plan_count_accesses(&x.t, cnt, &err), &err);
        uint64_t nz = 0;
        for (uint64_t v = 0; v < U; v++) {
            uint32_t want = 0;
            for (uint64_t b = 0; b < 30; b++)
                want += (uint32_t)in_batch(&x.t, b, v);
            OC_CHECK(cnt[v] == want);
            nz += want > 0;
        }
        for (uint64_t n = 0; n <= U + 3; n += 1 + n / 8) {
            uint64_t *ids = (uint64_t *)1, got = 99, want_n = n < nz ? n : nz;
            OC_CHECK_OK(oc_plan_hottest(cnt, U, n, &ids, &got, &err), &err);
            OC_CHECK(got == want_n && (got > 0 || ids == NULL));
            /* Brute force: a row is in iff fewer than n rows rank above it. */
            uint64_t k = 0;
            int ok = 1;
            for (uint64_t v = 0; v < U; v++) {
                uint64_t above = 0;
                for (uint64_t q = 0; q < U; q++)
                    above += cnt[q] > cnt[v] || (cnt[q] == cnt[v] && q < v);
                if (cnt[v] > 0 && above < n) {
                    ok &= k < got && ids[k] == v;
                    k++;
                }
            }
            OC_CHECK(ok && k == got);
            oc_free(ids);
        }
        free(cnt);
        tr_free(&x);
    }
    /* Saturation and ties at the top. */
    uint32_t c[5] = {UINT32_MAX, 3, UINT32_MAX, 0, 3};
    uint64_t *ids, n;
    OC_CHECK_OK(oc_plan_hottest(c, 5, 3, &ids, &n, &err), &err);
    OC_CHECK(n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 2);
    oc_free(ids);
    OC_CHECK_OK(oc_plan_hottest(c, 5, 1, &ids, &n, &err), &err);
    OC_CHECK(n == 1 && ids[0] == 0);
    oc_free(ids);
}

/* ---- allocation faults ------------------------------------------------------------------ */

OC_TEST(allocation_faults_fail_cleanly)
{
    struct oc_err err;
    struct tr x = random_tr(5, 16, 100, 30);
    uint64_t n_cpu, *cpu = cpu_range(0, 100, 9, &n_cpu);
    struct oc_plan_opts o = opts_of(&x, 3000, cpu, n_cpu);
    struct oc_plan_layout want;
    uint64_t fb;
    OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &want, &err), &err);
    o.disk_budget_bytes = UINT64_MAX;
    for (uint64_t s = 1; s <= 16; s++) {
        OC_CHECK_OK(oc_plan_file_bytes(&x.t, &o, s, &fb, &err), &err);
        o.disk_budget_bytes = fb < o.disk_budget_bytes ? fb : o.disk_budget_bytes;
    } /* the smallest file: the build scans several s */
    oc_plan_layout_deinit(&want);
    OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &want, &err), &err);
    OC_CHECK(want.s > 1);
    uint64_t want_pages = 0;
    for (uint64_t b = 0; b < 16; b++) {
        uint64_t p = 0;
        OC_CHECK_OK(oc_plan_layout_dc_pages(&want, &x.t, b, &p, &err), &err);
        want_pages += p;
    }
    OC_CHECK(want_pages > 0);
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        int done = 0, n_failed = 0;
        for (uint64_t nth = 1; nth < 100 && !done; nth++) {
            uint64_t live = oc_mem_n_live(), *ids = NULL, n_ids = 0, pages = 0, sum = 0;
            uint32_t cnt[100];
            struct oc_plan_layout l;
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, 0);
            int rc = oc_plan_layout_build(&x.t, &o, &l, &err);
            for (uint64_t b = 0; rc == OC_OK && b < 16; b++) {
                rc = oc_plan_layout_dc_pages(&l, &x.t, b, &pages, &err);
                sum += pages;
            }
            if (rc == OC_OK)
                rc = oc_plan_count_accesses(&x.t, cnt, &err);
            if (rc == OC_OK)
                rc = oc_plan_hottest(cnt, 100, 10, &ids, &n_ids, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (fired) {
                n_failed++;
                OC_CHECK(rc == OC_ERR_NOMEM);
                OC_CHECK(ids == NULL && n_ids == 0);
            } else {
                OC_CHECK_OK(rc, &err);
                OC_CHECK(l.s == want.s && SAME(l.addr, want.addr, x.off[16]) && n_ids == 10);
                OC_CHECK(sum == want_pages);
                done = 1;
            }
            oc_free(ids);
            oc_plan_layout_deinit(&l);
            OC_CHECK(l.addr == NULL);
            OC_CHECK(oc_mem_n_live() == live);
        }
        OC_CHECK(done && n_failed >= 8);
    }
    oc_plan_layout_deinit(&want);
    free(cpu);
    tr_free(&x);
}

/* ---- acceptance: sampled batches of a generated graph ----------------------------------- */

/* The input rows of T batches of 64 seeds sampled (fanouts 10, 5) from a generated graph. */
static int sampled_tr(struct tr *x, uint64_t n_nodes, uint64_t T)
{
    struct oc_generate_opts go;
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch bt;
    struct oc_graph g;
    uint64_t *indptr = NULL, *train = NULL, n_train = 0, n = 0, cap = 0;
    void *indices = NULL;
    char dir[700];
    int ok = 0;

    memset(x, 0, sizeof(*x));
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&bt);
    snprintf(dir, sizeof(dir), "%s/ds", oc_test_tmpdir());
    oc_generate_opts_default(&go);
    go.n_nodes = n_nodes;
    go.avg_degree = 10;
    go.feat_dim = 4;
    go.n_classes = 4;
    go.seed = 3;
    go.n_threads = 1;
    go.train_frac = 0.5;
    OC_CHECK_OK(oc_generate(&go, dir, NULL, &err), &err);
    OC_CHECK_OK(oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    if (!ds)
        goto out;
    const struct oc_manifest *mf = oc_dataset_manifest(ds);
    OC_CHECK_OK(oc_dataset_load_indptr(ds, &indptr, &err), &err);
    OC_CHECK_OK(oc_dataset_load_indices(ds, mf->index_dtype, &indices, &err), &err);
    OC_CHECK_OK(oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, &train, &n_train, &err), &err);
    if (!indptr || !indices || !train)
        goto out;
    memset(&g, 0, sizeof(g));
    g.n_nodes = mf->n_nodes;
    g.indptr = indptr;
    if (mf->index_dtype == OC_DTYPE_U32)
        g.indices32 = indices;
    else
        g.indices64 = indices;
    struct oc_sample_opts so = {.n_layers = 2, .fanouts = {10, 5}, .seed = 17};
    OC_CHECK_OK(oc_sample_sampler_new(&g, &so, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, train, n_train, 64, 1, &err), &err);
    if (!sm || oc_sample_epoch_n_batches(&ep) < T)
        goto out;
    oc_sample_epoch_shuffle(&ep, 17, 0);
    x->off = calloc(T + 1, sizeof(uint64_t));
    x->rec = calloc(T + 1, sizeof(uint64_t));
    for (uint64_t b = 0; b < T; b++) {
        const uint64_t *seeds;
        uint64_t ns;
        OC_CHECK_OK(oc_sample_epoch_batch(&ep, b, &seeds, &ns, &err), &err);
        if (oc_sample_neighbors(sm, 0, b, seeds, ns, &bt, &err) != OC_OK)
            goto out;
        if (n + bt.n_input > cap) {
            cap = 2 * (n + bt.n_input);
            x->rows = realloc(x->rows, cap * sizeof(uint64_t));
        }
        memcpy(x->rows + n, bt.input_ids, bt.n_input * sizeof(uint64_t));
        n += bt.n_input;
        x->off[b + 1] = n;
        x->rec[b] = oc_sample_batch_record_bytes(&bt);
    }
    tr_wire(x, mf->n_nodes, T);
    ok = 1;
out:
    oc_sample_batch_deinit(&bt);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    oc_free(indptr);
    oc_free(indices);
    oc_free(train);
    oc_dataset_free(ds);
    return ok;
}

OC_TEST(minhash_order_touches_fewer_pages_on_sampled_batches)
{
    struct oc_err err;
    struct tr x;
    const uint64_t T = 32;
    if (!sampled_tr(&x, 6000, T)) {
        OC_CHECK(0);
        tr_free(&x);
        return;
    }
    uint32_t *cnt = malloc(x.t.n_nodes * sizeof(uint32_t));
    uint64_t *cpu = NULL, n_cpu = 0;
    OC_CHECK_OK(oc_plan_count_accesses(&x.t, cnt, &err), &err);
    OC_CHECK_OK(oc_plan_hottest(cnt, x.t.n_nodes, 200, &cpu, &n_cpu, &err), &err);
    OC_CHECK(n_cpu == 200);
    static const uint64_t segs[] = {8, 16};
    static const uint64_t rbs[] = {256, 512};
    for (size_t si = 0; si < 2; si++) {
        for (size_t ri = 0; ri < 2; ri++) {
            struct oc_plan_opts o = opts_of(&x, rbs[ri], cpu, n_cpu);
            struct oc_plan_layout mh, id;
            o.segment = segs[si];
            OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &mh, &err), &err);
            o.identity_order = 1;
            OC_CHECK_OK(oc_plan_layout_build(&x.t, &o, &id, &err), &err);
            check_layout_ref(&x.t, &o, &id, 0);
            o.identity_order = 0;
            check_layout_ref(&x.t, &o, &mh, 0);
            uint64_t fb = 0;
            OC_CHECK_OK(oc_plan_file_bytes(&x.t, &o, segs[si], &fb, &err), &err);
            OC_CHECK(fb == mh.file_bytes);
            /* Same disk-cache contents per segment, same file. */
            OC_CHECK(mh.n_segments == id.n_segments && mh.file_bytes == id.file_bytes &&
                     SAME(mh.seg_off, id.seg_off, mh.n_segments + 1));
            for (uint64_t j = 0; j < mh.n_segments; j++) {
                uint64_t o0 = mh.seg_off[j], ns = mh.seg_off[j + 1] - o0;
                uint64_t *c = malloc((ns + 1) * sizeof(uint64_t));
                memcpy(c, mh.seg_rows + o0, ns * sizeof(uint64_t));
                qsort(c, ns, sizeof(uint64_t), oc_cmp_u64);
                OC_CHECK(SAME(c, id.seg_rows + o0, ns));
                free(c);
            }
            uint64_t p_mh = 0, p_id = 0;
            for (uint64_t b = 0; b < T; b++) {
                uint64_t a = 0, c = 0;
                OC_CHECK_OK(oc_plan_layout_dc_pages(&mh, &x.t, b, &a, &err), &err);
                OC_CHECK_OK(oc_plan_layout_dc_pages(&id, &x.t, b, &c, &err), &err);
                p_mh += a;
                p_id += c;
            }
            fprintf(stderr,
                    "  s %llu row %llu B: %llu disk-cache accesses, %llu rows; pages MinHash %llu "
                    "vs id order %llu\n",
                    (unsigned long long)segs[si], (unsigned long long)rbs[ri],
                    (unsigned long long)mh.n_dc_accesses,
                    (unsigned long long)mh.seg_off[mh.n_segments], (unsigned long long)p_mh,
                    (unsigned long long)p_id);
            OC_CHECK(mh.n_dc_accesses > 0);
            OC_CHECK(p_mh < p_id);
            oc_plan_layout_deinit(&mh);
            oc_plan_layout_deinit(&id);
        }
    }
    oc_free(cpu);
    free(cnt);
    tr_free(&x);
}

/* DiskGNN's window schedule: a head, short last windows, later epochs; by hand and covered. */
OC_TEST(window_schedule_by_hand)
{
    struct pl_windows w;
    uint64_t e, f, c;
    /* 10 batches an epoch in windows of 4, a head of 3, epochs 1 and 2 */
    pl_windows_init(&w, 10, 4, 3, 1, 3, 0);
    OC_CHECK(w.wpe == 3 && w.n_win == 6);
    static const uint64_t want[6][3] = {{1, 0, 3}, {1, 3, 4}, {1, 7, 3},
                                        {2, 0, 4}, {2, 4, 4}, {2, 8, 2}};
    for (uint64_t k = 0; k < 6; k++) {
        pl_windows_span(&w, k, &e, &f, &c);
        OC_CHECK(e == want[k][0] && f == want[k][1] && c == want[k][2]);
    }
    /* win 0: an epoch a window; reuse: a window per run epoch */
    pl_windows_init(&w, 10, 0, 0, 0, 2, 0);
    OC_CHECK(w.win == 10 && w.wpe == 1 && w.n_win == 2);
    pl_windows_span(&w, 1, &e, &f, &c);
    OC_CHECK(e == 1 && f == 0 && c == 10);
    pl_windows_init(&w, 10, 4, 0, 0, 5, 1);
    OC_CHECK(w.wpe == 3 && w.n_win == 5);
    /* every batch of every run epoch in exactly one window, in order */
    for (uint64_t nb = 1; nb <= 9; nb++)
        for (uint64_t win = 1; win <= nb; win++)
            for (uint64_t head = 0; head < nb; head++) {
                pl_windows_init(&w, nb, win, head, 2, 4, 0);
                uint64_t next_e = 2, next_b = 0;
                for (uint64_t k = 0; k < w.n_win; k++) {
                    pl_windows_span(&w, k, &e, &f, &c);
                    OC_CHECK(e == next_e && f == next_b && c >= 1 && f + c <= nb);
                    next_b = f + c;
                    if (next_b == nb)
                        next_e++, next_b = 0;
                }
                OC_CHECK(next_e == 4 && next_b == 0);
            }
}

OC_TEST_MAIN()
