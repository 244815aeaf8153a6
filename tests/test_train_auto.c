/*
 * test_train_auto.c — `--strategy auto`: the cost model's formulas on
 * hand-made figures (each prediction, their order, the pick, exclusions and
 * --allow-approximate's gate); oc_store_inspect's miss counts against brute
 * force; a run without a budget picks memory, one whose budget cannot hold
 * the features never does and trains to memory's weights, and both log the
 * predictions and the final predicted-against-measured record; options auto
 * refuses; `--mem-budget auto` through the CLI.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_util.h"
#include "harness.h"
#include "offcore/train.h"
#include "proc_util.h"
#include "store/ginex/ginex_int.h"
#include "store_fixture.h"
#include "train/auto_int.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

/*
 * B = 10 batches of R = 1000 rows; compute 0.01 s and sampling 0.002 s per
 * batch (cpu = 0.12 s), Belady's planning 0.001 s; rows of 4097 bytes (2
 * pages each, on average); disk 1e8 B/s and 1e4 IOPS; 2 lanes; misses static
 * 0.5, LRU 0.6, Belady 0.3 (ginex's cache of 100 rows), static at half the
 * cache (diskgnn's) 0.7; merged, a miss of static's costs 0.5 requests and
 * 8192 bytes, one of the LRU's 0.4 and 8000, a row when all miss 0.25 and
 * 6000; unmerged, a row is 1 request of 8192 bytes; the page cache misses
 * 1.2 pages per row, on 0.6 of the rows; the store's share 1e6 bytes, every
 * row as f32 4e7 (memory excluded), features.npy 2e7 bytes.
 */
static struct auto_inputs hand_inputs(void)
{
    struct auto_inputs in;
    memset(&in, 0, sizeof(in));
    in.n_batches = 10;
    in.rows = 1000;
    in.compute_s = 0.01;
    in.sample_s = 0.002;
    in.plan_s = 0.001;
    in.row_bytes = 4097;
    in.feature_bytes = 20000000;
    in.f32_bytes = 40000000;
    in.store_bytes = 1000000;
    in.ginex_cache_rows = 100;
    in.static_miss = 0.5;
    in.lru_miss = 0.6;
    in.belady_miss = 0.3;
    in.half_miss = 0.7;
    in.miss_req_per_row = 0.5;
    in.miss_bytes_per_row = 8192;
    in.lru_req_per_row = 0.4;
    in.lru_bytes_per_row = 8000;
    in.all_req_per_row = 0.25;
    in.all_bytes_per_row = 6000;
    in.row_req_per_row = 1;
    in.row_bytes_per_row = 8192;
    in.page_miss = 1.2;
    in.page_req = 0.6;
    in.lanes = 2;
    in.seq_bps = 1e8;
    in.rand_iops = 1e4;
    return in;
}

OC_TEST(model_formulas_on_hand_made_inputs)
{
    struct auto_inputs in = hand_inputs();
    struct auto_prediction p[AUTO_CAND_COUNT];
    enum auto_cand pick = auto_predict(&in, p);
    /* seconds per static miss: the probe's one-page reads hold a page's transfer, the rest
       streams */
    double merged = 0.5 / 1e4 + (8192 - 0.5 * 4096) / 1e8;
    OC_CHECK(p[AUTO_MEMORY].excluded && strstr(p[AUTO_MEMORY].why, "40000000"));
    /* static: 250 requests a batch, at least 64 in flight: the probe's IOPS */
    OC_CHECK(NEAR(p[AUTO_STATIC].io_s, 5000 * merged)); /* 0.5572 */
    OC_CHECK(NEAR(p[AUTO_STATIC].epoch_s, 5000 * merged));
    OC_CHECK(NEAR(p[AUTO_HELIOS].epoch_s, p[AUTO_STATIC].epoch_s));
    /* ginex: Belady's misses, sparser than static's: static's requests per row; its planning
       on the CPU */
    OC_CHECK(NEAR(p[AUTO_GINEX].epoch_s, 3000 * merged)); /* 0.33432 */
    OC_CHECK(NEAR(p[AUTO_GINEX].cpu_s, 0.13));
    /* gnndrive: the LRU's misses, merged as the LRU's are */
    OC_CHECK(NEAR(p[AUTO_GNNDRIVE].epoch_s, 6000 * (0.4 / 1e4 + (8000 - 0.4 * 4096) / 1e8)));
    /* direct: one read per row, of its span */
    OC_CHECK(NEAR(p[AUTO_DIRECT].epoch_s, 10000 * (1 / 1e4 + 4096 / 1e8))); /* 1.4096 */
    /* mmap: the page cache's misses, 2 x 64 x 0.6 in flight */
    OC_CHECK(NEAR(p[AUTO_MMAP].epoch_s, 6000 / 1e4 + 6000 * 4096 / 1e8)); /* 0.84576 */
    OC_CHECK(NEAR(p[AUTO_MMAP].read_bytes, 12000 * 4096.0));
    /* one scan of the features per epoch (a streamed window), plus packed misses written and
       read back */
    OC_CHECK(NEAR(p[AUTO_DISKGNN].epoch_s, (2e7 + 2 * 7000 * 4097.0) / 1e8)); /* 0.77 */
    OC_CHECK(NEAR(p[AUTO_DISKGNN_REUSE].epoch_s, 7000 * 4097.0 / 1e8));
    OC_CHECK(NEAR(p[AUTO_DISKGNN_REUSE].cpu_s, 0.1));
    OC_CHECK(NEAR(p[AUTO_STATIC].cpu_s, 0.12));
    /* the fastest bit-identical one, the approximate ones gated */
    OC_CHECK(pick == AUTO_GINEX);
    OC_CHECK(p[AUTO_DISKGNN_REUSE].excluded && p[AUTO_OUTRE].excluded);
    OC_CHECK(strstr(p[AUTO_OUTRE].why, "--allow-approximate") != NULL);
    OC_CHECK(p[AUTO_GINEX].epoch_s < p[AUTO_STATIC].epoch_s &&
             p[AUTO_STATIC].epoch_s < p[AUTO_GNNDRIVE].epoch_s &&
             p[AUTO_GNNDRIVE].epoch_s < p[AUTO_DISKGNN].epoch_s &&
             p[AUTO_DISKGNN].epoch_s < p[AUTO_MMAP].epoch_s &&
             p[AUTO_MMAP].epoch_s < p[AUTO_DIRECT].epoch_s);
    /* --allow-approximate admits diskgnn --reuse-samples, here the fastest */
    in.allow_approximate = 1;
    pick = auto_predict(&in, p);
    OC_CHECK(pick == AUTO_DISKGNN_REUSE && p[AUTO_DISKGNN_REUSE].reuse_samples);
    OC_CHECK(!p[AUTO_OUTRE].excluded && p[AUTO_OUTRE].approximate);
    /* compute-bound: every strategy waits for the CPU, so ties go to the simplest */
    in = hand_inputs();
    in.compute_s = 10;
    pick = auto_predict(&in, p);
    OC_CHECK(pick == AUTO_STATIC);
}

/*
 * The terms of the strategies that read row by row: each is bounded by what
 * its reader has in flight and by what its cache keeps.
 */
OC_TEST(model_row_readers_in_flight_and_their_caches)
{
    struct auto_inputs in = hand_inputs();
    struct auto_prediction p[AUTO_CAND_COUNT];
    /* mmap's page cache covers the file: no page misses, memory's epoch */
    in.page_miss = in.page_req = 0;
    auto_predict(&in, p);
    OC_CHECK(p[AUTO_MMAP].io_s == 0 && NEAR(p[AUTO_MMAP].epoch_s, 0.12));
    in.store_bytes = 0; /* without a budget memory is the candidate with the same epoch */
    OC_CHECK(auto_predict(&in, p) == AUTO_MEMORY && NEAR(p[AUTO_MEMORY].epoch_s, 0.12));
    /* few missing rows: 2 lanes x 64 x 0.1 = 12.8 pages in flight, each waiting the latency
       the probe saw at 64 (Little's law): IOPS 1e4 x 12.8 / 64 */
    in = hand_inputs();
    in.page_req = 0.1;
    in.page_miss = 0.1;
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_MMAP].io_s, 1000 / 2000.0)); /* one page a read: no more to stream */
    /* one lane reads a batch at a time: direct's 256 in flight still saturate the disk */
    in.lanes = 1;
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_DIRECT].io_s, 10000 * (1 / 1e4 + 4096 / 1e8)));
    OC_CHECK(NEAR(p[AUTO_MMAP].io_s, 1000 / 1000.0)); /* 6.4 in flight */
    /* batches of 8 rows: direct has 2 x 8 in flight, gnndrive 2 x 8 x 0.6 x 0.4 */
    in = hand_inputs();
    in.rows = 8;
    in.n_batches = 1250; /* the same 10000 rows */
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_DIRECT].io_s, 10000 / (1e4 * 16 / 64) + 10000 * 4096 / 1e8));
    OC_CHECK(
        NEAR(p[AUTO_GNNDRIVE].io_s, 2400 / (1e4 * 3.84 / 64) + (6000 * 8000 - 2400 * 4096) / 1e8));
    /* a disk faster with more in flight (the probe's 2e4 at 256): static's and direct's 512
       in flight get it all, gnndrive's and mmap's 76.8 a linear share from 64 to 256 */
    in = hand_inputs();
    in.rand_iops_deep = 2e4;
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_STATIC].io_s, 2500 / 2e4 + (5000 * 8192 - 2500 * 4096) / 1e8));
    OC_CHECK(NEAR(p[AUTO_DIRECT].io_s, 10000 / 2e4 + 10000 * 4096 / 1e8));
    /* gnndrive's reads of 20000 bytes: its bounce of 64 cells of 12288 bytes holds 39.3 */
    double gq = 2 * 64 * 12288 / 20000.0;
    OC_CHECK(NEAR(p[AUTO_GNNDRIVE].io_s,
                  2400 / (1e4 + 1e4 * (gq - 64) / 192) + (6000 * 8000 - 2400 * 4096) / 1e8));
    OC_CHECK(NEAR(p[AUTO_MMAP].io_s, 6000 / (1e4 + 1e4 * 12.8 / 192) + 6000 * 4096 / 1e8));
    in.rand_iops_deep = 5e3; /* slower deeper (noise): the disk is taken as saturated at 64 */
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_DIRECT].io_s, 10000 * (1 / 1e4 + 4096 / 1e8)));
    /* ginex's misses between static's and the LRU's: their requests per row interpolated */
    in = hand_inputs();
    in.belady_miss = 0.55;
    auto_predict(&in, p);
    OC_CHECK(NEAR(p[AUTO_GINEX].io_s, 5500 * (0.45 / 1e4 + (8096 - 0.45 * 4096) / 1e8)));
    /* ginex whose split of the budget leaves no cache is not a candidate */
    in.ginex_cache_rows = 0;
    auto_predict(&in, p);
    OC_CHECK(p[AUTO_GINEX].excluded && strstr(p[AUTO_GINEX].why, "does not open"));
    in.store_bytes = 0; /* no budget: it caches every row */
    in.ginex_cache_rows = 0;
    auto_predict(&in, p);
    OC_CHECK(!p[AUTO_GINEX].excluded);
}

OC_TEST(budget_holding_the_features_picks_memory)
{
    struct auto_inputs in = hand_inputs();
    struct auto_prediction p[AUTO_CAND_COUNT];
    in.store_bytes = in.f32_bytes; /* exactly fits */
    in.static_miss = in.lru_miss = in.belady_miss = in.half_miss = 0;
    OC_CHECK(auto_predict(&in, p) == AUTO_MEMORY && !p[AUTO_MEMORY].excluded);
    in.store_bytes = 0; /* no budget */
    OC_CHECK(auto_predict(&in, p) == AUTO_MEMORY);
    in.store_bytes = in.f32_bytes - 1;
    OC_CHECK(auto_predict(&in, p) != AUTO_MEMORY && p[AUTO_MEMORY].excluded);
}

/* The order the next candidates are opened in when a pick does not fit the budget. */
OC_TEST(candidates_ordered_fastest_first_ties_keep_the_simpler)
{
    struct auto_inputs in = hand_inputs();
    struct auto_prediction p[AUTO_CAND_COUNT];
    enum auto_cand order[AUTO_CAND_COUNT];
    enum auto_cand best = auto_predict(&in, p);
    uint32_t n = auto_order(p, order);
    /* memory and the two approximate ones are excluded: 7 left, fastest first */
    OC_CHECK(n == 7 && order[0] == best && order[0] == AUTO_GINEX);
    OC_CHECK(order[1] == AUTO_STATIC && order[2] == AUTO_HELIOS); /* a tie: registry order */
    for (uint32_t k = 1; k < n; k++)
        OC_CHECK(p[order[k - 1]].epoch_s <= p[order[k]].epoch_s && !p[order[k]].excluded);
    OC_CHECK(order[n - 1] == AUTO_DIRECT);
    /* a candidate that did not open is left out of a new order */
    p[AUTO_GINEX].excluded = 1;
    n = auto_order(p, order);
    OC_CHECK(n == 6 && order[0] == AUTO_STATIC);
    /* the pick's record when the fastest did not fit */
    static struct train_auto a;
    memset(&a, 0, sizeof(a));
    a.in = hand_inputs();
    a.pick = a.best = auto_predict(&a.in, a.pred);
    train_auto_skip(&a, AUTO_GINEX, "store ginex: needs at least 6.81 MiB");
    train_auto_opened(&a, AUTO_STATIC);
    OC_CHECK(a.pick == AUTO_STATIC && a.pred[AUTO_GINEX].excluded);
    OC_CHECK(strstr(a.pred[AUTO_GINEX].why, "does not open within the budget: store ginex"));
    OC_CHECK(strstr(a.reason, "static: the fastest predicted epoch") &&
             strstr(a.reason, "that open within the budget"));
}

/* Misses of a cache holding the c highest in-degree nodes (ties: lower id), brute force. */
static uint64_t brute_static(const struct fixture *fx, const struct oc_store_config *c,
                             uint32_t n_batches, uint64_t cap, uint64_t *rows)
{
    uint64_t n = fx->n_nodes;
    uint8_t *hot = calloc(n, 1);
    for (uint64_t k = 0; k < cap; k++) {
        uint64_t best = n;
        for (uint64_t v = 0; v < n; v++) {
            if (hot[v])
                continue;
            if (best == n ||
                fx->indptr[v + 1] - fx->indptr[v] > fx->indptr[best + 1] - fx->indptr[best])
                best = v;
        }
        hot[best] = 1;
    }
    struct oc_err err;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&b);
    OC_CHECK_OK(oc_sample_sampler_new(c->graph, c->sample_opts, NULL, &sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init_plan(&ep, c->train_ids, c->n_train, c->batch_size, 0,
                                          c->sample_opts, &err),
                &err);
    oc_sample_epoch_shuffle(&ep, c->sample_opts->seed, 0);
    uint64_t miss = 0;
    *rows = 0;
    for (uint64_t i = 0; i < n_batches; i++) {
        const uint64_t *seeds;
        uint64_t ns;
        OC_CHECK_OK(oc_sample_epoch_batch(&ep, i, &seeds, &ns, &err), &err);
        OC_CHECK_OK(oc_sample_neighbors(sm, 0, i, seeds, ns, &b, &err), &err);
        for (uint64_t k = 0; k < b.n_input; k++)
            miss += !hot[b.input_ids[k]];
        *rows += b.n_input;
    }
    oc_sample_batch_deinit(&b);
    oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    free(hot);
    return miss;
}

OC_TEST(inspection_counts_misses_as_brute_force)
{
    struct fixture fx;
    if (!fixture_init(&fx, 3000, 24, OC_DTYPE_F32))
        return;
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store_inspection ins;
    struct oc_err err;
    uint64_t rows = 0;
    /* a cache of 400 rows: static as brute force, Belady no worse than static or LRU */
    OC_CHECK_OK(oc_store_inspect(&c, 5, 400, UINT64_MAX, &ins, &err), &err);
    OC_CHECK(ins.n_batches == 5 && ins.row_bytes == 96 && ins.n_nodes == 3000);
    OC_CHECK(ins.static_misses == brute_static(&fx, &c, 5, 400, &rows));
    OC_CHECK(ins.input_rows == rows && ins.distinct_rows <= rows && ins.max_rows * 5 >= rows);
    OC_CHECK(ins.static_misses > 0 && ins.static_misses < rows);
    OC_CHECK(ins.ginex_cache_rows == 3000); /* no budget: ginex caches every row */
    OC_CHECK(ins.half_misses >= ins.static_misses && ins.half_misses < rows); /* 200 rows */
    OC_CHECK(ins.belady_misses <= ins.static_misses && ins.belady_misses <= ins.lru_misses);
    /* every row's bytes are read, in no more requests than rows */
    OC_CHECK(ins.all_read_bytes >= rows * 96 && ins.all_requests <= rows);
    OC_CHECK(ins.miss_read_bytes >= ins.static_misses * 96 &&
             ins.miss_requests <= ins.static_misses);
    OC_CHECK(ins.sample_s > 0 && ins.feature_bytes == 3000 * 96);
    /* everything cached: no misses; nothing cached: every row misses */
    OC_CHECK_OK(oc_store_inspect(&c, 5, 3000, UINT64_MAX, &ins, &err), &err);
    OC_CHECK(ins.static_misses == 0 && ins.lru_misses == 0 && ins.belady_misses == 0);
    OC_CHECK_OK(oc_store_inspect(&c, 5, 0, UINT64_MAX, &ins, &err), &err);
    OC_CHECK(ins.static_misses == rows && ins.lru_misses == rows && ins.belady_misses == 0);
    /* under a budget Belady runs at ginex's own cache size: the budget ginex needs for 1000
       rows gives it 1000, the one for 2000 rows 2000, with fewer misses */
    c.n_epochs = 1;
    uint64_t b1 = 0, b2 = 0;
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 1000, &b1, &err), &err);
    OC_CHECK_OK(oc_store_ginex_budget_for(&c, 2000, &b2, &err), &err);
    c.mem_bytes = b1;
    OC_CHECK_OK(oc_store_inspect(&c, 5, 0, UINT64_MAX, &ins, &err), &err);
    uint64_t miss1 = ins.belady_misses;
    OC_CHECK(ins.ginex_cache_rows == 1000);
    c.mem_bytes = b2;
    OC_CHECK_OK(oc_store_inspect(&c, 5, 0, UINT64_MAX, &ins, &err), &err);
    OC_CHECK(ins.ginex_cache_rows == 2000);
    OC_CHECK(ins.belady_misses < miss1 && miss1 < rows);
    c.mem_bytes = 0;
    OC_CHECK(ins.all_requests == ins.miss_requests && ins.all_read_bytes == ins.miss_read_bytes);
    /* a plan without batches is refused, naming what is missing */
    c.batch_size = 0;
    OC_CHECK_ERR(oc_store_inspect(&c, 5, 10, UINT64_MAX, &ins, &err), OC_ERR_ARG, &err,
                 "batch_size");
    fixture_free(&fx);
}

/*
 * mmap's page cache: an LRU of the pages the OS leaves it misses less as it
 * grows (LRU is a stack algorithm: the same accesses, a larger cache), and
 * nothing once it holds features.npy; then mmap's predicted epoch is
 * memory's. Direct's unmerged reads are one per row; the LRU's merged misses
 * are no more than its misses.
 */
OC_TEST(inspection_page_cache_covers_the_file)
{
    struct fixture fx;
    if (!fixture_init(&fx, 3000, 24, OC_DTYPE_F32))
        return;
    struct oc_store_config c = fixture_config(&fx, NULL);
    struct oc_store_inspection ins;
    struct oc_err err;
    uint64_t prev = UINT64_MAX, rows = 0;
    const uint64_t caches[] = {4096, 16384, 65536, 3000 * 96 + 8192};
    for (size_t k = 0; k < sizeof(caches) / sizeof(caches[0]); k++) {
        OC_CHECK_OK(oc_store_inspect(&c, 5, 400, caches[k], &ins, &err), &err);
        rows = ins.input_rows;
        OC_CHECK(k == 3 || ins.page_cache_pages == caches[k] / 4096);
        OC_CHECK(ins.page_misses <= prev && ins.page_miss_rows <= ins.page_misses &&
                 ins.page_misses <= 2 * rows && ins.page_miss_rows <= rows);
        prev = ins.page_misses;
        /* every row its own read of its page span (96-byte rows: 1 or 2 pages) */
        OC_CHECK(ins.row_requests == rows && ins.row_read_bytes >= rows * 4096 &&
                 ins.row_read_bytes <= rows * 8192);
        /* the block layer merges sorted reads that follow each other: fewer, not none */
        OC_CHECK(ins.row_device_requests < rows && ins.row_device_requests > 0);
        OC_CHECK(ins.lru_requests <= ins.lru_misses && ins.lru_read_bytes >= ins.lru_misses * 96);
    }
    OC_CHECK(prev == 0 && ins.page_miss_rows == 0); /* it holds the file */
    OC_CHECK_OK(oc_store_inspect(&c, 5, 400, 4096, &ins, &err), &err);
    OC_CHECK(ins.page_misses > 0 && ins.page_miss_rows > rows / 2); /* one page of ~71 */
    OC_CHECK_OK(oc_store_inspect(&c, 5, 400, 0, &ins, &err), &err); /* no page cache at all */
    OC_CHECK(ins.page_miss_rows == rows && ins.page_misses >= rows);
    /* the model: mmap falls to memory's epoch as the page cache covers the file */
    struct auto_inputs in = hand_inputs();
    struct auto_prediction p[AUTO_CAND_COUNT];
    double last = INFINITY;
    for (size_t k = 0; k < sizeof(caches) / sizeof(caches[0]); k++) {
        OC_CHECK_OK(oc_store_inspect(&c, 5, 400, caches[k], &ins, &err), &err);
        in.page_miss = (double)ins.page_misses / (double)ins.input_rows;
        in.page_req = (double)ins.page_miss_rows / (double)ins.input_rows;
        auto_predict(&in, p);
        OC_CHECK(p[AUTO_MMAP].epoch_s <= last);
        last = p[AUTO_MMAP].epoch_s;
    }
    OC_CHECK(NEAR(last, 0.12)); /* memory's epoch: compute and sampling */
    fixture_free(&fx);
}

static const char *auto_graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 50000;
    g.avg_degree = 6;
    g.feat_dim = 100;
    g.n_classes = 5;
    g.train_frac = 0.1;
    g.seed = 5;
    return gen_once(&g);
}

static void auto_opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = 256;
    o->epochs = 2;
    o->hidden = 16;
    o->n_threads = 2;
    o->seed = 9;
    o->eval = OC_TRAIN_EVAL_NONE;
}

/* The whole file (oc_free it). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* The log holds the predictions (every candidate) and the final record of the pick. */
static void check_log(const char *path, const char *pick)
{
    char *log = slurp(path);
    OC_CHECK(log != NULL);
    if (!log)
        return;
    char want[64];
    snprintf(want, sizeof(want), "\"pick\":\"%s\"", pick);
    OC_CHECK(strstr(log, "{\"auto\":true") != NULL && strstr(log, want) != NULL);
    OC_CHECK(strstr(log, "\"predictions\":[") != NULL && strstr(log, "\"reason\":") != NULL);
    static const char *const names[] = {"memory",   "static", "helios", "ginex", "diskgnn",
                                        "gnndrive", "direct", "mmap",   "outre"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(want, sizeof(want), "{\"strategy\":\"%s\"", names[i]);
        OC_CHECK(strstr(log, want) != NULL);
    }
    const char *fin = strstr(log, "\"final\":true");
    OC_CHECK(fin && strstr(fin, "\"auto\":{") && strstr(fin, "\"predicted_epoch_s\":") &&
             strstr(fin, "\"measured_epoch_s\":"));
    free(log);
}

OC_TEST(run_without_budget_picks_memory_and_logs_it)
{
    const char *dir = auto_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct oc_train_opts o;
    auto_opts(&o);
    struct oc_train_result ref, res;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    char log[700];
    snprintf(log, sizeof(log), "%s/auto_free.jsonl", oc_test_tmpdir());
    o.strategy = "auto";
    o.log_path = log;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    OC_CHECK(strcmp(res.strategy, "memory") == 0);
    OC_CHECK(res.predicted_epoch_s > 0 && res.measured_epoch_s > 0);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    check_log(log, "memory");
}

OC_TEST(budget_below_the_features_never_picks_memory)
{
    const char *dir = auto_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct oc_train_opts o;
    auto_opts(&o);
    struct oc_train_result ref, res;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    char log[700];
    snprintf(log, sizeof(log), "%s/auto_budget.jsonl", oc_test_tmpdir());
    o.strategy = "auto";
    o.log_path = log;
    o.mem_budget = 18u << 20; /* the features alone, as f32, take 20 MB */
    oc_mem_set_budget(o.mem_budget);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    oc_mem_set_budget(0);
    OC_CHECK(res.strategy[0] && strcmp(res.strategy, "memory") != 0);
    OC_CHECK(!res.reuse_samples && strcmp(res.strategy, "outre") != 0);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0); /* bit-identical */
    check_log(log, res.strategy);
    char *text = slurp(log);
    OC_CHECK(text && strstr(text, "\"strategy\":\"memory\",\"reuse_samples\":false,"
                                  "\"approximate\":false,\"excluded\":\"every row as f32"));
    free(text);
}

OC_TEST(options_auto_refuses)
{
    struct oc_train_opts o;
    struct oc_err err;
    auto_opts(&o);
    o.allow_approximate = 1;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "needs --strategy auto");
    o.strategy = "auto";
    OC_CHECK_OK(oc_train_opts_check(&o, &err), &err);
    o.checkpoint_dir = "/tmp/nowhere";
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--checkpoint-dir");
    o.checkpoint_dir = NULL;
    o.allow_approximate = 0;
    o.reuse_samples = 1;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--reuse-samples");
    o.reuse_samples = 0;
    OC_CHECK_OK(oc_train_opts_set(&o, "superbatch", 4, &err), &err);
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--superbatch");
    o.n_store_opts = 0;
    o.plan_dir = "/tmp/plans"; /* auto may pick a strategy writing plans */
    OC_CHECK_OK(oc_train_opts_check(&o, &err), &err);
}

OC_TEST(mem_budget_auto_through_the_cli)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *dir = auto_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    uint64_t avail = 0;
    struct oc_err err;
    OC_CHECK_OK(oc_mem_available(&avail, NULL, &err), &err);
    OC_CHECK(avail > 0);
    struct proc_run r;
    const char *args[] = {"train",        dir,       "--strategy", "auto",
                          "--mem-budget", "auto",    "--dry-run",  "--eval",
                          "none",         "--quiet", NULL};
    proc_run_cli(args, 300, &r);
    if (avail < (1ull << 30)) { /* too little free memory for a budget here */
        OC_CHECK(r.code == 0 || (r.err && strstr(r.err, "--mem-budget")));
    } else {
        OC_CHECK(r.code == 0);
        OC_CHECK(r.err && strstr(r.err, "--mem-budget auto: ") && strstr(r.err, "less a margin"));
        OC_CHECK(r.err && strstr(r.err, "auto: picked "));
        OC_CHECK(r.out && strstr(r.out, "dry run: --mem-budget"));
    }
    proc_run_free(&r);
    /* a log with the predictions is one `offcore report` draws */
    char log[700], page[700];
    snprintf(log, sizeof(log), "%s/auto_cli.jsonl", oc_test_tmpdir());
    snprintf(page, sizeof(page), "%s/auto_cli.html", oc_test_tmpdir());
    const char *train[] = {"train",  dir,    "--strategy", "auto", "--epochs", "1",
                           "--eval", "none", "--log",      log,    "--quiet",  NULL};
    proc_run_cli(train, 300, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, "auto: picked memory, predicted epoch"));
    proc_run_free(&r);
    const char *report[] = {"report", log, "-o", page, NULL};
    proc_run_cli(report, 60, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    const char *bad[] = {"train", dir, "--mem-budget", "lots", NULL};
    proc_run_cli(bad, 60, &r);
    OC_CHECK(r.code == 2 && r.err && strstr(r.err, "--mem-budget 'lots'"));
    proc_run_free(&r);
    const char *approx[] = {"train", dir, "--allow-approximate", NULL};
    proc_run_cli(approx, 60, &r);
    OC_CHECK(r.code == 2 && r.err && strstr(r.err, "--allow-approximate needs --strategy auto"));
    proc_run_free(&r);
}

OC_TEST_MAIN()
