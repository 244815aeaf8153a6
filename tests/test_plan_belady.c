/*
 * test_plan_belady.c — the Belady changeset planner (src/plan/belady.c, the
 * one ginex, kg's Slice Cache and --strategy auto use): its miss count
 * equals a brute-force Belady simulation on random traces and on traces of
 * real sampled batches, and the exhaustive optimum on tiny traces (so
 * Belady at batch granularity with the soonest-used warm-up is optimal);
 * its LRU and static counts equal direct simulations and are never below
 * Belady's; replaying a plan is consistent (a change fills a missed row into
 * a slot once, no row is cached twice, the cache is full once warm) in one
 * window and in windows of three batches; the trace and the id map; and the
 * reader of superbatch files that ginex's loader reads its batches back with.
 *
 * Place in the data flow: tests of plan (sample → trace → planner).
 * Thread-safety: single-threaded.
 * Ownership: every trace, planner and plan is freed by the test that made it.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "ginex_util.h"
#include "harness.h"

/* The fewest misses of any schedule (free initial set, then subsets of cache ∪ batch), U <= 10. */
static uint64_t exhaustive_optimum(const struct trace *t, uint64_t C)
{
    uint64_t U = max_id(t) + 1, S = 1ull << U, best = UINT64_MAX;
    uint64_t *dp = malloc(S * 8), *nd = malloc(S * 8);
    for (uint64_t m = 0; m < S; m++)
        dp[m] = (uint64_t)__builtin_popcountll(m) <= C ? 0 : UINT64_MAX;
    for (uint64_t i = 0; i < t->n_iters; i++) {
        uint64_t b = 0;
        for (uint64_t a = t->off[i]; a < t->off[i + 1]; a++)
            b |= 1ull << t->ids[a];
        for (uint64_t m = 0; m < S; m++)
            nd[m] = UINT64_MAX;
        for (uint64_t m = 0; m < S; m++) {
            if (dp[m] == UINT64_MAX)
                continue;
            uint64_t cost = dp[m] + (uint64_t)__builtin_popcountll(b & ~m), avail = m | b;
            for (uint64_t sub = avail;; sub = (sub - 1) & avail) {
                if ((uint64_t)__builtin_popcountll(sub) <= C && cost < nd[sub])
                    nd[sub] = cost;
                if (sub == 0)
                    break;
            }
        }
        uint64_t *x = dp;
        dp = nd;
        nd = x;
    }
    for (uint64_t m = 0; m < S; m++)
        if (dp[m] < best)
            best = dp[m];
    free(dp);
    free(nd);
    return best;
}

/* ---- driving the planner -------------------------------------------------------- */

/* Sums of the planner's counts over a run of windows. */
struct run_counts {
    uint64_t acc, belady, lru, stat;
    uint64_t replay_misses; /* misses of the plans replayed on a simulated cache */
    int ok;                 /* the replay found every plan consistent */
};

/*
 * Plans t in windows of `window` batches (0 = one window) with a cache of C,
 * replaying every plan on a simulated executor: warm-up rows fill empty
 * slots, a change puts a missed row of its batch into a slot once, no id is
 * cached twice, and the cache is full once it has seen C distinct rows.
 */
static struct run_counts plan_run_in(const struct trace *t, uint64_t C, uint64_t window,
                                     const uint8_t *static_bits, const char *dir,
                                     uint64_t *held_max)
{
    struct run_counts rc = {0, 0, 0, 0, 0, 1};
    struct oc_err err;
    struct pl_planner p;
    struct pl_trace tr;
    struct pl_plan plan;
    uint64_t U = max_id(t) + 1, distinct = 0;
    uint64_t *slot = malloc((C + 1) * sizeof(uint64_t));
    uint8_t *in = calloc(U, 1), *seen = calloc(U, 1), *used = calloc(C + 1, 1);
    for (uint64_t k = 0; k < C; k++)
        slot[k] = PL_EMPTY;
    pl_trace_init(&tr, U);
    pl_plan_init(&plan);
    OC_CHECK_OK(pl_planner_init(&p, C, U, NULL, 1, static_bits, &err), &err);
    if (dir) {
        OC_CHECK_OK(pl_spill_to_file(&tr.ids, dir, "trace", &err), &err);
        OC_CHECK_OK(pl_planner_spill_to(&p, dir, &err), &err);
        OC_CHECK_OK(pl_spill_to_file(&plan.chg, dir, "changes", &err), &err);
    }
    struct pl_change *chg = malloc((t->n_acc + 1) * sizeof(*chg));
    if (window == 0)
        window = t->n_iters;
    for (uint64_t w0 = 0; w0 < t->n_iters; w0 += window) {
        uint64_t w1 = w0 + window < t->n_iters ? w0 + window : t->n_iters;
        pl_trace_clear(&tr);
        for (uint64_t i = w0; i < w1; i++)
            OC_CHECK_OK(pl_trace_add_iter(&tr, t->ids + t->off[i], t->off[i + 1] - t->off[i], &err),
                        &err);
        plan.first_iter = w0;
        plan.n_iters = w1 - w0;
        int r = pl_plan_build(&p, &tr, &plan, &err);
        OC_CHECK_OK(r, &err);
        if (r)
            break;
        uint64_t held =
            pl_planner_held_bytes(&p) + pl_trace_held_bytes(&tr) + pl_plan_held_bytes(&plan);
        if (held_max && held > *held_max)
            *held_max = held;
        for (uint64_t w = 0; w < plan.n_warm; w++) {
            uint32_t s = plan.warm_slot[w];
            rc.ok &= s < C && slot[s] == PL_EMPTY && !in[plan.warm_id[w]];
            if (s < C && slot[s] == PL_EMPTY) {
                slot[s] = plan.warm_id[w];
                in[slot[s]] = 1;
            }
        }
        for (uint64_t i = 0; i < plan.n_iters; i++) {
            const uint64_t *b = t->ids + t->off[w0 + i];
            uint64_t nb = t->off[w0 + i + 1] - t->off[w0 + i];
            uint8_t *miss = calloc(nb + 1, 1);
            for (uint64_t j = 0; j < nb; j++) {
                miss[j] = !in[b[j]];
                rc.replay_misses += miss[j];
                distinct += !seen[b[j]];
                seen[b[j]] = 1;
            }
            memset(used, 0, C + 1);
            uint64_t n_chg = 0;
            OC_CHECK_OK(pl_plan_changes(&plan, i, chg, &n_chg, &err), &err);
            rc.ok &= n_chg <= plan.max_chg;
            for (uint64_t c = 0; c < n_chg; c++) {
                uint32_t pos = chg[c].pos, s = chg[c].slot;
                if (pos >= nb || !miss[pos] || s >= C || used[s] || in[b[pos]]) {
                    rc.ok = 0;
                    continue;
                }
                used[s] = 1;
                if (slot[s] != PL_EMPTY)
                    in[slot[s]] = 0;
                slot[s] = b[pos];
                in[b[pos]] = 1;
            }
            free(miss);
            uint64_t n_in = 0;
            for (uint64_t k = 0; k < C; k++)
                n_in += slot[k] != PL_EMPTY;
            /* full once warm: min(C, rows seen or warmed so far) */
            rc.ok &= n_in >= (distinct < C ? distinct : C);
            rc.acc += plan.cnt[i].n_acc;
            rc.belady += plan.cnt[i].n_belady;
            rc.lru += plan.cnt[i].n_lru;
            rc.stat += plan.cnt[i].n_static;
        }
    }
    pl_plan_deinit(&plan);
    pl_trace_deinit(&tr);
    pl_planner_deinit(&p);
    free(chg);
    free(slot);
    free(in);
    free(seen);
    free(used);
    return rc;
}

static struct run_counts plan_run(const struct trace *t, uint64_t C, uint64_t window,
                                  const uint8_t *static_bits)
{
    return plan_run_in(t, C, window, static_bits, NULL, NULL);
}

/* The C lowest ids (a stand-in static set for traces without a graph) as a bitmap. */
static uint8_t *low_ids_bitmap(uint64_t U, uint64_t C)
{
    uint8_t *bits = calloc(U / 8 + 1, 1);
    for (uint64_t v = 0; v < C && v < U; v++)
        bits[v >> 3] |= (uint8_t)(1u << (v & 7));
    return bits;
}

static uint64_t static_misses(const struct trace *t, const uint8_t *bits)
{
    uint64_t m = 0;
    for (uint64_t a = 0; a < t->n_acc; a++)
        m += !((bits[t->ids[a] >> 3] >> (t->ids[a] & 7)) & 1);
    return m;
}

/* Checks the planner on t for capacity C in one window and in windows of 3. */
static void check_trace(const struct trace *t, uint64_t C, const char *what)
{
    uint64_t U = max_id(t) + 1;
    uint8_t *bits = low_ids_bitmap(U, C);
    uint64_t want = brute_belady(t, C), lru = brute_lru(t, C), stat = static_misses(t, bits);
    struct run_counts one = plan_run(t, C, 0, bits), win = plan_run(t, C, 3, bits);
    if (one.belady != want || one.lru != lru || one.stat != stat || !one.ok || !win.ok)
        fprintf(stderr,
                "  %s C=%llu: belady %llu (brute force %llu) lru %llu (%llu) static %llu (%llu) "
                "replay ok %d/%d\n",
                what, (unsigned long long)C, (unsigned long long)one.belady,
                (unsigned long long)want, (unsigned long long)one.lru, (unsigned long long)lru,
                (unsigned long long)one.stat, (unsigned long long)stat, one.ok, win.ok);
    OC_CHECK(one.acc == t->n_acc && win.acc == t->n_acc);
    OC_CHECK(one.belady == want);
    OC_CHECK(one.replay_misses == one.belady && win.replay_misses == win.belady);
    OC_CHECK(one.ok && win.ok);
    OC_CHECK(one.lru == lru && win.lru == lru);
    OC_CHECK(one.stat == stat && win.stat == stat);
    OC_CHECK(one.belady <= lru && one.belady <= stat);
    /* Shorter lookahead can only lose, never beat the optimum. */
    OC_CHECK(win.belady >= one.belady);
    free(bits);
}

/* ---- planner tests --------------------------------------------------------------- */

OC_TEST(belady_matches_brute_force_on_random_traces)
{
    static const uint64_t caps[] = {0, 1, 2, 7, 30, 90, 199, 250};
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct trace t = random_trace(seed, 25 + seed * 3, 200, seed % 2 ? 40 : 90);
        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
            check_trace(&t, caps[c], "random");
        trace_free(&t);
    }
}

OC_TEST(belady_is_optimal_on_tiny_traces)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct trace t = random_trace(100 + seed, 9, 8, 1 + seed % 5);
        for (uint64_t C = 0; C <= 5; C++) {
            struct run_counts r = plan_run(&t, C, 0, NULL);
            uint64_t opt = exhaustive_optimum(&t, C);
            if (r.belady != opt)
                fprintf(stderr, "  seed %llu C=%llu: planner %llu, optimum %llu\n",
                        (unsigned long long)seed, (unsigned long long)C,
                        (unsigned long long)r.belady, (unsigned long long)opt);
            OC_CHECK(r.belady == opt);
            OC_CHECK(brute_belady(&t, C) == opt);
            OC_CHECK(r.belady <= brute_lru(&t, C));
        }
        trace_free(&t);
    }
}

OC_TEST(belady_matches_brute_force_on_sampled_batches)
{
    struct fixture fx;
    if (!fixture_init(&fx, 2000, 4, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    struct trace t = sampled_trace(&fx, 0, 2);
    OC_CHECK(t.n_iters == 2 * fixture_nb(&fx) && t.n_iters > 8);
    static const uint64_t caps[] = {50, 300, 900, 1800};
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
        check_trace(&t, caps[c], "sampled");
    trace_free(&t);
    fixture_free(&fx);
}

/* Entries of dir besides . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

/*
 * A superbatch of 2000 batches (about 400k accesses, several trace chunks and
 * spill buffers) planned with its trace, next uses and changes in files:
 * Belady's misses equal the brute-force simulator's, replaying it is
 * consistent, the counts equal planning in RAM, and the planner holds less
 * RAM than the trace itself (its RAM share does not grow with the superbatch).
 */
OC_TEST(long_superbatch_streamed_through_files)
{
    const char *dir = oc_test_tmpdir();
    struct trace t = random_trace(77, 2000, 5000, 400);
    OC_CHECK(t.n_acc > 300000);
    static const uint64_t caps[] = {0, 150, 1500};
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        uint64_t C = caps[c], held = 0, held_ram = 0;
        uint64_t want = brute_belady(&t, C);
        struct run_counts f = plan_run_in(&t, C, 0, NULL, dir, &held);
        struct run_counts m = plan_run_in(&t, C, 0, NULL, NULL, &held_ram);
        struct run_counts w = plan_run_in(&t, C, 700, NULL, dir, NULL);
        if (f.belady != want)
            fprintf(stderr, "  C=%llu: streamed belady %llu, brute force %llu\n",
                    (unsigned long long)C, (unsigned long long)f.belady, (unsigned long long)want);
        OC_CHECK(f.belady == want && m.belady == want);
        OC_CHECK(f.ok && w.ok && f.replay_misses == f.belady && w.replay_misses == w.belady);
        OC_CHECK(f.lru == m.lru && f.acc == t.n_acc && w.belady >= f.belady);
        OC_CHECK(held < t.n_acc * 4 && held_ram > t.n_acc * 8);
    }
    /* the scratch files were unlinked when created: nothing is left in dir */
    OC_CHECK(dir_entries(dir) == 0);
    trace_free(&t);
}

/* Batch `bi` of epoch 0 of fx's plan, sampled into b, as its superbatch record (oc_free it). */
static uint8_t *sampled_record(const struct fixture *fx, struct oc_sampler *sm, uint64_t bi,
                               struct oc_sample_batch *b, size_t *len)
{
    struct oc_err err;
    struct oc_sample_epoch ep;
    const uint64_t *seeds;
    uint64_t n;
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx->train, fx->n_train, fx->batch_size, 0, &err), &err);
    oc_sample_epoch_shuffle(&ep, fx->so.seed, 0);
    OC_CHECK_OK(oc_sample_epoch_batch(&ep, bi, &seeds, &n, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(sm, 0, bi, seeds, n, b, &err), &err);
    oc_sample_epoch_deinit(&ep);
    size_t cap = (size_t)oc_sample_batch_record_bytes(b);
    uint8_t *r = oc_alloc(cap, "test record", &err);
    OC_CHECK(r != NULL);
    OC_CHECK_OK(oc_sample_batch_serialize(b, r, cap, len, &err), &err);
    return r;
}

/*
 * The loader's reader of superbatch files (pl_sb_reader): a plan's batches
 * read back by their offsets equal the sampled ones; a record that is
 * another batch, or runs past a file replaced since (a refilled plan reopens
 * it), is OC_ERR_FORMAT naming the caller, file and offset; a plan with no
 * file, or one that cannot be opened, is not readable (sampled again).
 */
OC_TEST(superbatch_reader_reads_back_and_names_bad_records)
{
    struct fixture fx;
    if (!fixture_init(&fx, 300, 4, OC_DTYPE_F32))
        return;
    fx.batch_size = 16; /* two batches at least */
    struct oc_err err;
    struct oc_sampler *sm = NULL;
    struct oc_sample_batch b[2], got;
    size_t len[2];
    uint8_t *rec[2], *file = NULL;
    OC_CHECK_OK(oc_sample_sampler_new(&fx.g, &fx.so, NULL, &sm, &err), &err);
    oc_sample_batch_init(&got);
    for (uint64_t i = 0; i < 2; i++) {
        oc_sample_batch_init(&b[i]);
        rec[i] = sampled_record(&fx, sm, i, &b[i], &len[i]);
    }
    size_t size = 16 + len[0] + len[1] + PL_SB_FOOTER; /* the footer is not read back */
    file = calloc(1, size);
    oc_put_le64(file, len[0]);
    memcpy(file + 8, rec[0], len[0]);
    oc_put_le64(file + 8 + len[0], len[1]);
    memcpy(file + 16 + len[0], rec[1], len[1]);

    struct pl_sb_plan p;
    pl_sb_plan_init(&p);
    snprintf(p.sb_path, sizeof(p.sb_path), "%s/sb-0.ocsb", oc_test_tmpdir());
    OC_CHECK_OK(oc_write_file_atomic(p.sb_path, file, size, &err), &err);
    OC_CHECK_OK(pl_sb_plan_reserve_offsets(&p, 2, &err), &err);
    p.rec_off[0] = 0;
    p.rec_off[1] = 8 + len[0];
    p.b.n_iters = 2;

    struct pl_sb_reader r;
    pl_sb_reader_init(&r, "test loader");
    OC_CHECK(pl_sb_reader_use(&r, &p) == 1);
    for (uint64_t i = 2; i-- > 0;) {
        OC_CHECK_OK(pl_sb_reader_read(&r, &p, i, 0, i, fx.n_nodes, &got, &err), &err);
        OC_CHECK(oc_sample_batch_equal(&got, &b[i]));
    }
    OC_CHECK_ERR(pl_sb_reader_read(&r, &p, 0, 0, 1, fx.n_nodes, &got, &err), OC_ERR_FORMAT, &err,
                 "is epoch 0 batch 0, not epoch 0 batch 1");
    OC_CHECK(strstr(err.msg, "test loader: ") == err.msg && strstr(err.msg, p.sb_path));

    /* the file replaced by a shorter one: the open file still reads, the refilled plan not */
    OC_CHECK_OK(oc_write_file_atomic(p.sb_path, file, 8 + len[0] / 2, &err), &err);
    OC_CHECK(pl_sb_reader_use(&r, &p) == 1);
    OC_CHECK_OK(pl_sb_reader_read(&r, &p, 1, 0, 1, fx.n_nodes, &got, &err), &err);
    p.b.first_iter = 2; /* refilled: the file is opened again */
    OC_CHECK(pl_sb_reader_use(&r, &p) == 1);
    OC_CHECK_ERR(pl_sb_reader_read(&r, &p, 0, 0, 0, fx.n_nodes, &got, &err), OC_ERR_FORMAT, &err,
                 "runs past the file's");

    /* no file, or one that cannot be opened: the batches are sampled again */
    struct pl_sb_plan none;
    pl_sb_plan_init(&none);
    OC_CHECK(pl_sb_reader_use(&r, &none) == 0);
    snprintf(none.sb_path, sizeof(none.sb_path), "%s/missing.ocsb", oc_test_tmpdir());
    none.b.first_iter = 1;
    OC_CHECK(pl_sb_reader_use(&r, &none) == 0);

    pl_sb_reader_deinit(&r);
    pl_sb_plan_deinit(&none);
    pl_sb_plan_deinit(&p);
    for (uint64_t i = 0; i < 2; i++) {
        oc_free(rec[i]);
        oc_sample_batch_deinit(&b[i]);
    }
    oc_sample_batch_deinit(&got);
    oc_sample_sampler_free(sm);
    free(file);
    fixture_free(&fx);
}

OC_TEST(trace_rejects_repeated_ids)
{
    struct pl_trace tr;
    struct oc_err err;
    uint64_t a[3] = {4, 9, 4}, b[2] = {9, 4};
    struct pl_planner p;
    struct pl_plan plan;
    pl_trace_init(&tr, 10);
    pl_plan_init(&plan);
    OC_CHECK_OK(pl_planner_init(&p, 2, 10, NULL, 0, NULL, &err), &err);
    OC_CHECK_OK(pl_trace_add_iter(&tr, b, 2, &err), &err);
    OC_CHECK_OK(pl_trace_add_iter(&tr, a, 3, &err), &err);
    plan.n_iters = 2;
    OC_CHECK_ERR(pl_plan_build(&p, &tr, &plan, &err), OC_ERR_FORMAT, &err,
                 "plan belady: id 4 repeats in batch 1"); /* the planner named, not a store */
    pl_trace_clear(&tr);
    uint64_t big[2] = {3, 10};
    OC_CHECK_OK(pl_trace_add_iter(&tr, big, 2, &err), &err);
    plan.n_iters = 1;
    OC_CHECK_ERR(pl_plan_build(&p, &tr, &plan, &err), OC_ERR_FORMAT, &err,
                 "plan belady: id 10 in batch 0");
    pl_trace_clear(&tr);
    OC_CHECK_OK(pl_trace_add_iter(&tr, a, 2, &err), &err);
    OC_CHECK(tr.n_iters == 1 && tr.n_acc == 2);
    OC_CHECK_OK(pl_plan_build(&p, &tr, &plan, &err), &err);
    OC_CHECK(plan.n_warm == 2 && p.n_used == 2);
    uint64_t wide = (uint64_t)UINT32_MAX + 7;
    OC_CHECK_ERR(pl_trace_add_iter(&tr, &wide, 1, &err), OC_ERR_FORMAT, &err, "out of range");
    pl_plan_deinit(&plan);
    pl_planner_deinit(&p);
    pl_trace_deinit(&tr);
}

OC_TEST(id_map_deletes_and_grows)
{
    struct pl_hash h;
    struct oc_err err;
    uint64_t keys[3000];
    uint8_t in[3000];
    struct oc_rng r;
    oc_rng_init(&r, 1, 2, 3, 4);
    pl_hash_init(&h);
    OC_CHECK_OK(pl_hash_alloc(&h, 1000, "test", &err), &err);
    memset(in, 0, sizeof(in));
    for (uint32_t v = 0; v < 3000; v++)
        keys[v] = oc_rng_u64(&r) >> (v % 50); /* clustered keys collide more */
    for (int step = 0; step < 20000; step++) {
        uint32_t v = (uint32_t)oc_rng_below(&r, 1000);
        if (in[v])
            pl_hash_del(&h, keys, keys[v]);
        else
            pl_hash_put(&h, keys, v);
        in[v] ^= 1;
    }
    int bad = 0;
    for (uint32_t v = 0; v < 1000; v++)
        bad += pl_hash_get(&h, keys, keys[v]) != (in[v] ? v : PL_NONE);
    OC_CHECK(bad == 0);
    for (uint32_t v = 1000; v < 3000; v++) {
        OC_CHECK_OK(pl_hash_grow(&h, keys, h.n + 1, "test", &err), &err);
        pl_hash_put(&h, keys, v);
        in[v] = 1;
    }
    for (uint32_t v = 0; v < 3000; v++)
        bad += pl_hash_get(&h, keys, keys[v]) != (in[v] ? v : PL_NONE);
    OC_CHECK(bad == 0);
    pl_hash_deinit(&h);
}

OC_TEST_MAIN()
