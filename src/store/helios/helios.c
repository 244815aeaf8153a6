/*
 * helios.c — the `helios` strategy (Helios, on the CPU): a RAM cache of the
 * hottest rows by a pre-sampled epoch, and a deep, per-hop pipeline of
 * asynchronous row reads through one io_uring ring (SQPOLL, registered
 * buffer and file: no syscall per read) with one submitter and a separate
 * completion stage (helios_io.c):
 *
 *   sample stage ─hop─► submit misses ─► ring ─► complete stage ─► done_q
 *   (batch pipeline)                                                  │
 *   fetch stage: gather_batch ◄───────────────────────────────────────┘
 *     cached rows from the cache, staged rows from the record's stage,
 *     overflow rows read now; f16 widened ─► the record back to free_q
 *
 * This file: sizing and open, the trainer's side (gather_batch, evaluation
 * gathers), stats and options.
 *
 * Sizing (cfg->mem_bytes; everything through oc_alloc). B = a batch's rows at
 * their bound (store_expected_rows); M = the largest of the first batches
 * measured at open plus a quarter. Fixed: HL_N_RECORDS records of B rows
 * (ids 8, slot 4, at 8 bytes a row), the submitter's miss scratch (16 bytes
 * per row of B), the trainer's reader (2 MiB bounce and STORE_ROW_SCRATCH_BYTES
 * per row of B for rows read at gather). The stage of a record (one row's
 * pages per row of M) comes next: half of what the budget leaves after the
 * fixed part at most (a smaller stage only sends more rows to the gather's
 * own reads); the rest is the cache (store_cache_plan), filled with the
 * hottest rows of a pre-sampled epoch 0 (store_hot_select, presample; by
 * in-degree without a training plan). Since a record stages only its
 * misses, the stage is then sized again to M' = the most rows of those
 * batches that cache misses, plus a quarter, and the cache takes what that
 * frees, again while the larger cache frees more (size_to_misses, up to
 * HL_SIZING_ROUNDS times). mem_bytes 0 caches every row. Under a
 * budget the cache gives rows back to requests past it and takes them back
 * (../cache_yield.c): the sample stage looks a hop up under the cache's read
 * side, and serve reads the rows whose slots went back since with the
 * overflow rows.
 *
 * Hyperbatches (--hyperbatch F, store/hyper.c, with a plan and a batch
 * pipeline): the share F of the budget holds two groups of the sampled
 * batches' cache misses (store_hyper_prepare on the sampled hook), each read
 * in one block pass by the groups' stage, and the gather takes its rows from
 * the cache, the group, or the disk; no records, stage, ring or per-hop
 * reads then (pipeline 0, caps.hops 0); the cache is sized from what the
 * groups leave, by pre-sampled hotness as before.
 *
 * Over other ids (cfg->accesses: a partitioned dataset's part, which no
 * batch pipeline feeds) a feeder stage of the store's pipeline (../feed.c)
 * samples the plan's batches and shows each to hl_prepare_batch whole (no
 * hops) as the access map's ids, in plan order; pre-sampled hotness and the
 * measured batches count those ids, the budget counts the feeder
 * (store_feed_bytes), and every plan batch's gather waits for its record.
 * --hyperbatch is refused there (its groups are filled by the batch
 * pipeline).
 *
 * Cores (--io-cores N): the last N of the CPUs the process may use (its
 * affinity mask) are the I/O path's: the ring polls
 * with SQPOLL, its kernel thread pinned to the last core, the completion
 * stage to the first of them; 0 = automatic: one core on machines of 4 or
 * more, none below, and then no SQPOLL (its thread spins for 2 ms after each
 * burst, CPU the compute would lose): a plain ring, nothing pinned. With I/O
 * cores the compute pool (train's, cfg->pool) is pinned to the other cores:
 * its workers and the thread that opens the store (the trainer, its worker 0):
 * helios_cores.c.
 *
 * Plan order: gather_batch(epoch, b) waits for batch b's record when the
 * sample stage prepared it, so training is bit-identical to `memory`; a
 * batch outside the plan, prepared out of order or whose ids differ, is read
 * directly (store_cache_gather). Stats: tier CPU = cached rows, tier DISK =
 * staged and overflow rows; io_cpu_us = submitter CPU (sample stage) +
 * completion stage CPU + the SQPOLL thread's CPU.
 *
 * Place in the data flow: store; train's batch pipeline feeds and drains it.
 * Thread-safety: see helios_int.h; evaluation gathers run between epochs on
 * the training thread, never alongside the fetch stage.
 * Ownership: the store owns what helios_int.h lists; the registry joins the
 * pipeline's threads before hl_free runs.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/helios/helios_int.h"

#define HL_DEPTH           4096u /* reads in flight */
#define HL_MEASURE_BATCHES 8u
#define HL_SIZING_ROUNDS   4u  /* stage and cache sized again while the cache grows */
#define HL_ROW_META_BYTES  20u /* per row of a record: id 8, slot 4, at 8 */
#define HL_SQ_IDLE_MS      2u

struct hl_sizing {
    uint64_t fixed, stage_bytes, n_cached;
    int use_table;
};

static void hl_size(const struct oc_store *s, const struct oc_store_config *cfg, uint64_t max_rows,
                    uint64_t est_rows, uint64_t plan_rows, int pipeline, struct hl_sizing *z)
{
    uint64_t page_rows = oc_io_align_up(s->row_bytes);
    memset(z, 0, sizeof(*z));
    z->fixed = sizeof(struct hl_store) + STORE_DISK_BOUNCE_BYTES +
               store_budget_rows(s, cfg) * STORE_ROW_SCRATCH_BYTES;
    uint64_t want = 0;
    if (pipeline) {
        z->fixed += HL_N_RECORDS * (sizeof(struct hl_rec) + max_rows * HL_ROW_META_BYTES) +
                    max_rows * sizeof(struct store_miss) +
                    4 * (HL_N_RECORDS * sizeof(void *) + 128);
        want = est_rows * page_rows;
        if (cfg->accesses) /* a part's store: its feeder samples the plan's batches */
            z->fixed += store_feed_bytes(cfg, plan_rows, max_rows);
    }
    if (cfg->mem_bytes == 0) {
        z->stage_bytes = oc_io_align_up(want);
        z->n_cached = s->n_nodes;
        z->use_table = s->n_nodes < STORE_NO_SLOT;
        return;
    }
    uint64_t avail = cfg->mem_bytes > z->fixed ? cfg->mem_bytes - z->fixed : 0;
    /* per record: the stage, plus its span table and results (16 + 8 bytes a page) */
    uint64_t per_stage_byte_num = OC_IO_ALIGN + sizeof(struct hl_span) + sizeof(int64_t);
    uint64_t stage = want;
    if (HL_N_RECORDS * stage / OC_IO_ALIGN * per_stage_byte_num > avail / 2)
        stage = avail / 2 / HL_N_RECORDS / per_stage_byte_num * OC_IO_ALIGN;
    z->stage_bytes = oc_io_align_down(stage);
    uint64_t stage_total = HL_N_RECORDS * z->stage_bytes / OC_IO_ALIGN * per_stage_byte_num;
    store_cache_plan(s, avail - stage_total, sizeof(uint64_t), &z->n_cached, &z->use_table);
}

static atomic_int stage_every_row; /* test knob: size_to_misses skipped */

/*
 * A record stages only the rows of its batch that the cache misses, so its
 * stage is sized to those: with the cache z gives when every input row is
 * staged (est_rows), the measured batches' misses, plus a quarter, size the
 * stage again, and the cache takes what that frees (its misses can only be
 * fewer). *ids: the z->n_cached hottest rows by pre-sampled hotness,
 * ascending, for store_cache_fill. A batch missing more leaves the rest
 * unstaged (overflow, read by the gather), as before.
 */
static int size_to_misses(struct oc_store *s, const struct oc_store_config *cfg, uint64_t max_rows,
                          uint64_t est_rows, uint64_t plan_rows, struct hl_sizing *z,
                          uint64_t **ids, struct oc_err *err)
{
    struct hl_sizing most; /* no stage at all: the most rows the cache could hold */
    hl_size(s, cfg, max_rows, 0, plan_rows, 1, &most);
    uint64_t *hot = NULL, rows = 0, misses = 0;
    int rc = store_hot_select(s, cfg, OC_STORE_HOTNESS_PRESAMPLE, most.n_cached, 1, &hot, err);
    uint8_t *bits =
        rc ? NULL : oc_calloc(oc_bits_bytes(s->n_nodes), 1, "store helios: sizing", err);
    if (!rc && !bits)
        rc = err ? err->status : OC_ERR_NOMEM;
    /* a larger cache misses fewer rows, which shrinks the stage again: to a fixed point */
    uint64_t staged = est_rows, n_set = 0;
    for (uint32_t round = 0; !rc && round < HL_SIZING_ROUNDS; round++) {
        for (; n_set < z->n_cached; n_set++) /* the cache only grows: add its new rows */
            oc_bit_set(bits, hot[n_set]);
        rc = store_measure_misses(cfg, HL_MEASURE_BATCHES, "helios", bits, &rows, &misses, NULL,
                                  err);
        if (rc || misses >= staged)
            break;
        uint64_t n_before = z->n_cached;
        hl_size(s, cfg, max_rows, misses, plan_rows, 1, z);
        staged = misses;
        oc_log(OC_LOG_DEBUG,
               "store helios: a batch of the first %u reads up to %" PRIu64 " rows, %" PRIu64
               " missing the %" PRIu64 " hottest (both plus a quarter): %" PRIu64 " rows cached",
               HL_MEASURE_BATCHES, rows, misses, n_before, z->n_cached);
        if (z->n_cached <= n_before)
            break;
    }
    oc_free(bits);
    if (rc) {
        oc_free(hot);
        return rc;
    }
    qsort(hot, (size_t)z->n_cached, sizeof(*hot), oc_cmp_u64);
    /* the cache keeps the array (its sorted ids): only the rows it holds */
    uint64_t *fit = oc_realloc(hot, (size_t)(z->n_cached ? z->n_cached : 1) * sizeof(*hot),
                               "store helios: cached ids", err);
    *ids = fit ? fit : hot;
    return OC_OK;
}

static int alloc_records(struct oc_store *s, struct hl_store *h, struct oc_err *err)
{
    uint32_t cap_spans = (uint32_t)(h->stage_bytes / OC_IO_ALIGN);
    if (h->stage_bytes) {
        h->arena = oc_io_buf_alloc(h->n_records * h->stage_bytes, "store helios: stage", err);
        if (!h->arena)
            return err->status;
    }
    h->recs = oc_calloc(h->n_records, sizeof(struct hl_rec), "store helios: records", err);
    h->miss = oc_alloc(h->max_rows * sizeof(struct store_miss), "store helios: misses", err);
    if (!h->recs || !h->miss)
        return err->status;
    for (uint32_t i = 0; i < h->n_records; i++) {
        struct hl_rec *r = &h->recs[i];
        r->index = i;
        r->cap_spans = cap_spans;
        r->stage = h->arena ? h->arena + i * h->stage_bytes : NULL;
        r->ids = oc_alloc(h->max_rows * sizeof(uint64_t), "store helios: batch ids", err);
        r->slot = oc_alloc(h->max_rows * sizeof(uint32_t), "store helios: batch slots", err);
        r->at = oc_alloc(h->max_rows * sizeof(uint64_t), "store helios: batch rows", err);
        r->spans = oc_alloc((cap_spans ? cap_spans : 1) * sizeof(struct hl_span),
                            "store helios: spans", err);
        r->res =
            oc_alloc((cap_spans ? cap_spans : 1) * sizeof(int64_t), "store helios: spans", err);
        if (!r->ids || !r->slot || !r->at || !r->spans || !r->res)
            return err->status;
    }
    int rc = oc_file_open(s->path, OC_FILE_READ | OC_FILE_DIRECT, &h->file, err);
    if (rc)
        return rc;
    /* SQPOLL only with a core for it: its polling thread would take compute's CPU */
    struct oc_io_ring_config rcfg = {
        h->file,         h->depth,  h->arena,     h->n_records * h->stage_bytes,
        h->io_cores > 0, h->sq_cpu, HL_SQ_IDLE_MS};
    return oc_io_ring_new(&rcfg, &h->ring, err);
}

/* --hyperbatch F: the groups' shape (cap 0: none) and their bytes. */
struct hl_hyper {
    struct store_hyper_shape sh;
    uint64_t bytes;
};

/* A batch's cache misses staged in a hyperbatch group. */
static int hl_stage_misses(struct oc_store *s, uint64_t epoch, uint64_t batch,
                           const struct oc_sample_batch *b, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    return store_hyper_prepare(s, h->hyper, &h->yield, epoch, batch, b, err);
}

static int hl_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct hl_opts opts;
    store_opts_read(&oc_store_helios, cfg, &opts);
    struct hl_sizing z;
    uint64_t est = 0, plan_rows = 0, misses = 0, *ids = NULL;
    int rc;
    int pipeline = store_has_plan(cfg);
    uint64_t max_rows = store_expected_rows(s, cfg);
    if (cfg->accesses && opts.hyperbatch > 0)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store helios: --hyperbatch on a partitioned dataset's part: its groups are "
                      "filled by the batch pipeline, which a partitioned run has not (the "
                      "store's feeder stages each batch's reads over the access map instead)");
    /* --hyperbatch: groups instead of records; sized on the budget without them */
    struct hl_hyper hy;
    memset(&hy, 0, sizeof(hy));
    struct oc_store_config sized = *cfg;
    if (opts.hyperbatch_disk && opts.hyperbatch <= 0)
        return store_hyper_disk_alone(s, err);
    if (pipeline && opts.hyperbatch > 0 && cfg->mem_bytes && cfg->pipeline) {
        uint64_t rows = store_budget_rows(s, cfg);
        hy.sh.disk = hy.sh.fed = opts.hyperbatch_disk; /* on disk its feeder fills them */
        hy.bytes = store_hyper_size(s, opts.hyperbatch, cfg->mem_bytes, rows, &hy.sh) +
                   (hy.sh.fed ? store_feed_bytes(cfg, max_rows, rows) : 0);
        sized.mem_bytes = cfg->mem_bytes > hy.bytes ? cfg->mem_bytes - hy.bytes : 0;
    }
    /* each hop's reads issued as it is sampled (a part's feeder shows whole batches) */
    s->caps.hops = !hy.sh.cap && !cfg->accesses;
    if (pipeline && !hy.sh.cap &&
        (rc = store_measure_misses(cfg, HL_MEASURE_BATCHES, "helios", NULL, &est, &misses,
                                   &plan_rows, err)))
        return rc;
    hl_size(s, &sized, max_rows, est < max_rows ? est : max_rows, plan_rows, pipeline && !hy.sh.cap,
            &z);
    if (hy.sh.cap && cfg->mem_bytes < z.fixed + hy.bytes) {
        char need_s[32], have_s[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store helios: needs at least %s (a %u-byte bounce buffer and request "
                      "arrays, and two hyperbatch groups of at least a batch's %" PRIu64
                      " rows, their reader and the sampled batches they hold) before caching "
                      "any row; the store's budget is %s",
                      oc_format_size(z.fixed + hy.bytes, need_s, sizeof(need_s)),
                      STORE_DISK_BOUNCE_BYTES, store_budget_rows(s, cfg),
                      oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
    }
    if (cfg->mem_bytes && cfg->mem_bytes < z.fixed) {
        char need_s[32], have_s[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store helios: needs at least %s (%u batch records of %" PRIu64
                      " rows, a %u-byte bounce buffer and request arrays) before staging or "
                      "caching any row; the store's budget is %s",
                      oc_format_size(z.fixed, need_s, sizeof(need_s)), HL_N_RECORDS, max_rows,
                      STORE_DISK_BOUNCE_BYTES,
                      oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
    }
    uint64_t est_staged = est < max_rows ? est : max_rows;
    if (pipeline && !hy.sh.cap && cfg->mem_bytes && z.n_cached < s->n_nodes &&
        !atomic_load(&stage_every_row) &&
        (rc = size_to_misses(s, cfg, max_rows, est_staged, plan_rows, &z, &ids, err)))
        return rc;
    if (z.n_cached >= s->n_nodes)
        z.stage_bytes = 0; /* nothing can miss: no stage (a row given back is read at gather) */
    struct hl_store *h = oc_calloc(1, sizeof(*h), "store helios", err);
    if (!h) {
        oc_free(ids);
        return err ? err->status : OC_ERR_NOMEM;
    }
    s->impl = h;
    h->s = s;
    h->pipeline = pipeline && !hy.sh.cap;
    h->max_rows = max_rows;
    h->est_rows = est;
    h->stage_bytes = z.stage_bytes;
    h->n_records = HL_N_RECORDS;
    h->depth = HL_DEPTH;
    h->first_epoch = cfg->first_epoch;
    h->n_epochs = cfg->n_epochs;
    h->n_batches = s->n_plan_batches;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->sync_ready = 1;
    hl_split_cores(h, opts.io_cores);
    if (h->io_cores && cfg->pool)
        hl_pin_compute(h, cfg->pool);
    rc = store_yield_init(&h->yield, &h->cache, s->row_bytes, "store helios", err);
    h->yield_ready = rc == OC_OK;
    if (rc == OC_OK)
        rc = store_disk_open(s, 1, &h->disk, err);
    if (rc) {
        oc_free(ids); /* chosen by size_to_misses, not yet the cache's */
        return rc;
    }
    enum oc_store_hotness hot = pipeline ? OC_STORE_HOTNESS_PRESAMPLE : OC_STORE_HOTNESS_DEGREE;
    if ((!ids && (rc = store_hot_select(s, cfg, hot, z.n_cached, 0, &ids, err))) ||
        (rc = store_cache_fill(s, &h->cache, &h->disk, z.n_cached, z.use_table, ids, &h->yield,
                               "helios", err)) ||
        (cfg->mem_bytes && (rc = store_yield_register(&h->yield, err))))
        return rc;
    h->held_bytes = z.fixed + store_cache_held_bytes(s, &h->cache) +
                    (pipeline ? h->n_records * (h->stage_bytes / OC_IO_ALIGN) *
                                    (OC_IO_ALIGN + sizeof(struct hl_span) + sizeof(int64_t))
                              : 0);
    oc_log(OC_LOG_INFO,
           "store helios: %" PRIu64 " of %" PRIu64 " rows cached (%s hotness), %u records of "
           "%" PRIu64 " staged bytes",
           h->cache.n, s->n_nodes, pipeline ? "pre-sampled" : "degree", h->n_records,
           h->stage_bytes);
    if (hy.sh.cap) {
        /* on disk (hy.sh.fed) many batches ahead: sampled again by the groups' feeder */
        if ((rc = store_hyper_open(s, &hy.sh, cfg, hl_stage_misses, &h->hyper, err)))
            return rc;
        s->caps.lookahead = store_hyper_lookahead(h->hyper);
    }
    if (!h->pipeline)
        return OC_OK;
    s->caps.lookahead = h->n_records; /* up to n_records batches read ahead of their gathers */
    if ((rc = alloc_records(s, h, err)) || (rc = hl_stages_start(h, err)))
        return rc;
    /* a part's store (no batch pipeline shows it the batches, nor their hops): its own
       feeder shows each batch whole, its reads staged at once */
    return cfg->accesses ? store_feed_start(s, cfg, hl_prepare_batch, &h->feed, err) : OC_OK;
}

static void hl_free(struct oc_store *s)
{
    struct hl_store *h = s->impl;
    if (!h)
        return;
    /* first: reads still in flight (after an error or a cancel) land in the arena */
    int drained = oc_io_ring_free(h->ring);
    /* its stage was joined with the others */
    store_feed_close(h->feed, "helios", "records", h->n_served, h->n_direct);
    store_hyper_free(h->hyper); /* its stages (read, feeder) were joined (store_stages) */
    hl_unpin_compute(h);
    for (uint32_t i = 0; h->recs && i < h->n_records; i++) {
        oc_free(h->recs[i].ids);
        oc_free(h->recs[i].slot);
        oc_free(h->recs[i].at);
        oc_free(h->recs[i].spans);
        oc_free(h->recs[i].res);
    }
    oc_free(h->recs);
    oc_free(h->miss);
    if (drained)
        oc_free(h->arena); /* else left allocated: the kernel may still write into it */
    oc_file_close(h->file, NULL);
    if (h->yield_ready)
        store_yield_deinit(&h->yield); /* unregistered first: waits for a reclaim in progress */
    store_disk_close(&h->disk);
    store_cache_free(&h->cache);
    if (h->sync_ready) {
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
    }
    oc_free(h);
    s->impl = NULL;
}

/* ---- the trainer's side ----------------------------------------------------- */

static int hl_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                     struct oc_err *err)
{
    struct hl_store *h = s->impl;
    return store_yield_gather(s, &h->yield, &h->disk, ids, n, out, err);
}

/* A record the trainer will not use: its reads still count (the disk delivered them). */
static void release(struct hl_store *h, struct hl_rec *r)
{
    h->s->stats.read_bytes += r->read_bytes;
    h->s->stats.n_reads += r->n_spans;
    oc_queue_push(h->free_q, r); /* capacity n_records: never waits */
}

/* The finished record of plan batch seq (records finish in plan order); NULL: read directly. */
static int take_record(struct hl_store *h, uint64_t seq, struct hl_rec **out, struct oc_err *err)
{
    *out = NULL;
    for (;;) {
        struct hl_rec *r = h->held;
        h->held = NULL;
        if (!r) {
            void *item;
            if (oc_queue_pop(h->done_q, &item) != OC_OK)
                return store_stages_error(h->s, err);
            r = item;
        }
        if (r->seq == seq) {
            *out = r;
            return OC_OK;
        }
        if (r->seq > seq) { /* seq was skipped by the submitter: keep r for its turn */
            h->held = r;
            return OC_OK;
        }
        release(h, r); /* an earlier batch the trainer did not gather */
    }
}

struct hl_copy {
    const struct oc_store *s;
    const struct hl_store *h;
    const struct hl_rec *r;
    float *out;
};

static void copy_rows(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct hl_copy *j = ctx;
    const struct oc_store *s = j->s;
    const struct hl_rec *r = j->r;
    for (uint64_t i = lo; i < hi; i++) {
        float *dst = j->out + i * s->feat_dim;
        if (r->slot[i] != STORE_NO_SLOT)
            store_row_to_f32(s->dtype, j->h->cache.rows + (uint64_t)r->slot[i] * s->row_bytes,
                             s->feat_dim, dst);
        else if (r->at[i] != HL_NO_AT)
            store_row_to_f32(s->dtype, r->stage + r->at[i], s->feat_dim, dst);
        else if (s->dtype == OC_DTYPE_F16) /* read at gather into the upper half */
            store_row_widen_inplace(dst, s->feat_dim);
    }
}

/*
 * Rows of r cached when their hop was looked up whose slots the cache has
 * given back since (slot >= live, under the cache's read side): no slot now,
 * read with the overflow rows; returns how many.
 */
static uint64_t drop_given_back(struct hl_rec *r, uint64_t live)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < r->n_rows; i++)
        if (r->slot[i] != STORE_NO_SLOT && r->slot[i] >= live) {
            r->slot[i] = STORE_NO_SLOT;
            n++;
        }
    return n;
}

static int serve(struct hl_store *h, struct hl_rec *r, float *out, struct oc_err *err)
{
    struct oc_store *s = h->s;
    int rc = store_yield_reserve(s, &h->yield, &h->disk, r->n_rows, err);
    if (rc) {
        release(h, r);
        return rc;
    }
    store_yield_read_lock(&h->yield);
    uint64_t gone = drop_given_back(r, h->cache.n_live), direct = r->n_overflow + gone;
    for (uint64_t i = 0; i < r->n_rows && rc == OC_OK && direct; i++)
        if (r->slot[i] == STORE_NO_SLOT && r->at[i] == HL_NO_AT)
            rc = store_disk_queue(s, &h->disk, r->ids[i], out + i * s->feat_dim, err);
    if (rc)
        store_disk_discard(&h->disk);
    else if (direct)
        rc = store_disk_run(s, &h->disk, err);
    if (rc == OC_OK) {
        struct hl_copy j = {s, h, r, out};
        rc = store_for_rows(s->pool, r->n_rows, copy_rows, &j, err);
    }
    store_yield_read_unlock(&h->yield);
    if (rc == OC_OK) {
        uint64_t disk_rows = r->n_staged + direct;
        s->stats.tier_rows[OC_STORE_TIER_CPU] += r->n_cached - gone;
        s->stats.tier_rows[OC_STORE_TIER_DISK] += disk_rows;
        s->stats.requested_disk_bytes += disk_rows * (uint64_t)s->row_bytes;
        h->n_served++;
    }
    release(h, r);
    return rc;
}

static int hl_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                           uint64_t n, float *out, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    struct hl_rec *r = NULL;
    if (h->pipeline && epoch >= h->first_epoch && epoch < h->n_epochs && batch < h->n_batches) {
        uint64_t seq = (epoch - h->first_epoch) * h->n_batches + batch;
        /* a prepared batch is waited for; the feeder prepares them all */
        if (h->feed || seq < atomic_load_explicit(&h->n_prepared, memory_order_acquire)) {
            int rc = take_record(h, seq, &r, err);
            if (rc)
                return rc;
        }
    }
    if (r && r->n_rows == n && memcmp(r->ids, ids, n * sizeof(uint64_t)) == 0)
        return serve(h, r, out, err);
    if (r) /* not the batch the plan sampled: the caller's ids rule */
        release(h, r);
    h->n_direct++;
    return hl_gather(s, ids, n, out, err);
}

/* ---- stats and options ---------------------------------------------------------- */

static void hl_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct hl_store *h = s->impl;
    uint64_t given = store_yield_missing(&h->yield) * s->row_bytes;
    out->held_bytes = h->held_bytes + store_disk_held_bytes(&h->disk) - given;
    out->given_back_bytes = given;
    store_hyper_stats(h->hyper, out);
    if (!h->pipeline)
        return;
    double comp_cpu = h->comp_st ? oc_stage_cpu_s(h->comp_st) : 0;
    uint64_t sub = atomic_load(&h->submit_cpu_ns), sq = oc_io_ring_sq_cpu_ns(h->ring);
    out->io_cpu_us = (uint64_t)(comp_cpu * 1e6) + (sub + sq) / 1000u;
    oc_log(OC_LOG_DEBUG,
           "store helios: I/O CPU since open: submission %.3f s, completion stage %.3f s, "
           "SQPOLL thread %.3f s",
           (double)sub * 1e-9, comp_cpu, (double)sq * 1e-9);
    out->stage_busy_us[0] = atomic_load(&h->submit_ns) / 1000u;
    out->stage_busy_us[1] = h->comp_st ? (uint64_t)(oc_stage_busy_s(h->comp_st) * 1e6) : 0;
}

/* Busy seconds of submission (on the sample stage, per hop) and of the completion stage. */
static const struct oc_store_stat helios_stat_table[] = {
    {"stage_busy_s", "submit", "Submit", OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[0])},
    {"stage_busy_s", "complete", "Complete", OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[1])},
    {NULL, "io_cpu_s_per_gib", "I/O CPU s/GiB", OC_STORE_STAT_RATIO, store_io_cpu_s_per_gib, 0},
    STORE_HYPER_STAT,
};

static const struct oc_store_opt helios_opts[] = {
    {"io-cores", OC_STORE_OPT_U32, "N", NULL,
     "cores for the I/O path: io_uring SQPOLL, its thread and the completion stage pinned "
     "to the last N of the CPUs the process may use (0 = auto: 1 with 4 or more; none: a "
     "plain ring)",
     offsetof(struct hl_opts, io_cores), 0, 0, 0, 0, NULL},
    {"hyperbatch", OC_STORE_OPT_F64, "F", NULL,
     "share of the budget that stages the misses of the coming batches, read in one block "
     "pass per group (AGNES's hyperbatches) instead of per-hop reads; 0 = per-hop reads",
     offsetof(struct hl_opts, hyperbatch), 0, 0, 0, 0.9, NULL},
    {"hyperbatch-disk", OC_STORE_OPT_FLAG, NULL, NULL, STORE_HYPER_DISK_HELP,
     offsetof(struct hl_opts, hyperbatch_disk), 0, 0, 0, 0, NULL},
};

void oc_store_helios_stage_every_row(int on)
{
    atomic_store(&stage_every_row, on);
}

void oc_store_helios_sizes(const struct oc_store *s, uint64_t *cached_rows, uint64_t *stage_rows)
{
    const struct hl_store *h = s && s->strat == &oc_store_helios ? s->impl : NULL;
    *cached_rows = h ? h->cache.n : 0;
    *stage_rows = h ? h->stage_bytes / oc_io_align_up(s->row_bytes) : 0;
}

const struct store_cache *oc_store_helios_cache(const struct oc_store *s)
{
    const struct hl_store *h = s && s->strat == &oc_store_helios ? s->impl : NULL;
    return h ? &h->cache : NULL;
}

void oc_store_helios_set_depth(struct oc_store *s, unsigned depth)
{
    struct hl_store *h = s && s->strat == &oc_store_helios ? s->impl : NULL;
    if (h && depth >= 1 && depth <= h->depth)
        h->depth = depth;
}

enum oc_io_ring_mode oc_store_helios_ring_mode(const struct oc_store *s)
{
    const struct hl_store *h = s && s->strat == &oc_store_helios ? s->impl : NULL;
    return h && h->ring ? oc_io_ring_mode(h->ring) : OC_IO_RING_PREAD;
}

/* A sampled batch: sealed (its record complete), or with hyperbatches its misses staged
   (on disk by the groups' feeder: hl_stage_misses). */
static int hl_sampled(struct oc_store *s, uint64_t epoch, uint64_t batch,
                      const struct oc_sample_batch *b, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    if (h->hyper)
        return store_hyper_fed(h->hyper) ? OC_OK : hl_stage_misses(s, epoch, batch, b, err);
    return hl_prepare_batch(s, epoch, batch, b, err);
}

/* A hop's new input ids: their reads issued at once (helios prunes nothing). */
static int hl_hop(struct oc_store *s, const struct oc_store_hop *hop, struct oc_err *err)
{
    if (hop->mask)
        return OC_OK;
    return hl_prepare_hop(s, hop->epoch, hop->batch, hop->ids, hop->n, err);
}

/* A plan batch from its record or its hyperbatch group; evaluation through the cache. */
static int hl_gather_at(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                        uint64_t n, float *out, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    if (epoch == STORE_OFF_PLAN)
        return hl_gather(s, ids, n, out, err);
    if (!h->hyper)
        return hl_gather_batch(s, epoch, batch, ids, n, out, err);
    return store_hyper_gather(s, h->hyper, &h->yield, &h->disk, epoch, batch, ids, n, out, err);
}

const struct store_strategy oc_store_helios = {
    .name = "helios",
    .no_reuse_samples = "it reads each epoch's batches as they are sampled",
    .row_buffers = HL_N_RECORDS, /* its records hold the batches ahead: one row buffer ahead */
    .summary = "hottest rows by a pre-sampled epoch in a RAM cache; per-hop asynchronous reads "
               "through io_uring SQPOLL with fixed buffers, a separate completion stage "
               "(Helios, on the CPU)",
    .open = hl_open,
    .hop = hl_hop,
    .sampled = hl_sampled,
    .gather = hl_gather_at,
    .stats = hl_stats,
    .free = hl_free,
    .opts = helios_opts,
    .n_opts = sizeof(helios_opts) / sizeof(helios_opts[0]),
    .opts_size = sizeof(struct hl_opts),
    .stat_table = helios_stat_table,
    .n_stats = sizeof(helios_stat_table) / sizeof(helios_stat_table[0]),
    .serves_accesses = 1, /* its own feeder over the access map (store_feed_start) */
};
