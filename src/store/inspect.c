/*
 * inspect.c — oc_store_inspect: what the first batches of a training plan ask
 * of the feature file, for train's cost model (--strategy auto, train/auto.c).
 *
 *   plan (cfg) ──► sample n batches ──► trace of input ids ─┬─► static: hot set (hot.c)
 *                                                           ├─► LRU (plan/belady_sim.c)
 *                                                           ├─► Belady (plan/belady_api.c) at
 *                                                           │   ginex's own cache size
 *                                                           │   (ginex_size.c)
 *                                                           └─► pages → requests (merged)
 *   features.npy ──► oc_io_disk_of (io/probe.c): bandwidth, IOPS, crossover
 *
 * The caches are simulated warm: they start with the degree-ranked hot set
 * of cache_rows rows (LRU touched in that order, Belady given it as an
 * iteration before the first batch whose misses are not counted), so a few
 * batches show steady-state miss ratios instead of the cold misses every
 * cache has at the start of a run.
 *
 * Requests: the rows' byte ranges in features.npy (row order: the layout's
 * map), sorted, merged by the batch reader's own rule (io/span.c: pages
 * that touch, or holes of at most the disk's crossover, up to the store
 * reader's largest read) into the reads it would issue; the bytes read are
 * the pages of each request end to end.
 *
 * Place in the data flow: store; called by train before any store opens.
 * Thread-safety: one call at a time per config; the sampler may use cfg's
 * pool.
 * Ownership: everything allocated is freed before returning.
 */
#include <inttypes.h>
#include <string.h>

#include "offcore/progress.h"
#include "plan/belady.h"
#include "store/store_int.h"

#define INSPECT_MAX_ROWS ((uint64_t)1 << 22) /* trace ids held at most */

/* The strategy the hot-set helper names in its errors. */
static const struct store_strategy inspect_strategy = {.name = "auto"};

struct trace {
    uint64_t *ids, *off; /* ids of batch i: [off[i], off[i+1]) */
    uint64_t n, cap, n_batches;
};

static int trace_sample(const struct oc_store_config *cfg, uint32_t n_batches, struct trace *t,
                        uint64_t *max_rows, double *sample_s, struct oc_err *err)
{
    struct oc_sample_iter it;
    int rc;

    t->off = oc_calloc((size_t)n_batches + 1, sizeof(uint64_t), "store inspect: batches", err);
    if (!t->off)
        return err->status;
    if ((rc = oc_sample_iter_open(&it, cfg->graph, cfg->sample_opts, cfg->pool, cfg->train_ids,
                                  cfg->n_train, cfg->batch_size, err)))
        goto out;
    oc_sample_iter_seek(&it, cfg->reuse_samples ? 0 : cfg->first_epoch, 0);
    while (t->n_batches < n_batches && t->n < INSPECT_MAX_ROWS) {
        const struct oc_sample_batch *b = &it.batch;
        double t0 = oc_now_s();
        if ((rc = oc_sample_iter_next(&it, err)) <= 0)
            break;
        rc = OC_OK;
        *sample_s += oc_now_s() - t0;
        if ((rc = oc_grow_by(&t->ids, &t->cap, t->n + b->n_input, sizeof(uint64_t), OC_GROW_TWICE,
                             "store inspect: trace", err)))
            goto out;
        memcpy(t->ids + t->n, b->input_ids, b->n_input * sizeof(uint64_t));
        t->n += b->n_input;
        t->off[++t->n_batches] = t->n;
        *max_rows = b->n_input > *max_rows ? b->n_input : *max_rows;
    }
out:
    if (rc)
        oc_err_prefix(err, "store inspect: sampling the first batches");
    oc_sample_iter_close(&it);
    return rc;
}

/*
 * Requests and bytes for reading rows[0 .. n) (sorted here, then turned into
 * their byte offsets) of row_bytes each, as the store's readers merge them.
 */
static void count_requests(uint64_t *rows, uint64_t *tmp, uint64_t n, uint64_t data_offset,
                           uint64_t row_bytes, const struct oc_io_span_rule *rule,
                           uint64_t *requests, uint64_t *bytes)
{
    oc_sort_u64(rows, tmp, n);
    for (uint64_t k = 0; k < n; k++)
        rows[k] = data_offset + rows[k] * row_bytes;
    oc_io_span_count(rule, rows, n, row_bytes, requests, bytes);
}

/* Pages and requests of every batch's rows and of its rows outside the hot set. */
static int inspect_requests(const struct oc_store_config *cfg, const struct trace *t,
                            const uint8_t *hot, struct oc_store_inspection *out, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    uint64_t most = 0;
    for (uint64_t i = 0; i < t->n_batches; i++)
        most = t->off[i + 1] - t->off[i] > most ? t->off[i + 1] - t->off[i] : most;
    void *map = NULL;
    uint64_t *rows = oc_alloc((most ? most : 1) * sizeof(uint64_t), "store inspect: rows", err);
    uint64_t *miss = oc_alloc((most ? most : 1) * sizeof(uint64_t), "store inspect: rows", err);
    uint64_t *tmp = oc_alloc((most ? most : 1) * sizeof(uint64_t), "store inspect: rows", err);
    int rc = rows && miss && tmp ? OC_OK : err->status;
    if (rc == OC_OK && store_row_map_bytes(cfg->ds))
        rc = oc_dataset_load_feature_rows(cfg->ds, m->index_dtype, &map, "store inspect: layout",
                                          err);
    uint64_t data_offset = oc_dataset_data_offset(cfg->ds, OC_DS_FEATURES);
    /* the store's reader (store_disk_open): merging on, the disk's crossover, its bounce cap */
    const struct oc_io_span_rule rule = {
        1, out->disk.gap_bytes,
        STORE_DISK_BOUNCE_BYTES < OC_IO_MAX_READ ? STORE_DISK_BOUNCE_BYTES : OC_IO_MAX_READ};
    for (uint64_t i = 0; rc == OC_OK && i < t->n_batches; i++) {
        const uint64_t *ids = t->ids + t->off[i];
        uint64_t n = t->off[i + 1] - t->off[i], n_miss = 0;
        store_rows_of(cfg->ds, map, ids, n, rows);
        for (uint64_t k = 0; k < n; k++)
            if (!hot || !((hot[ids[k] >> 3] >> (ids[k] & 7)) & 1u))
                miss[n_miss++] = rows[k];
        count_requests(rows, tmp, n, data_offset, out->row_bytes, &rule, &out->all_requests,
                       &out->all_read_bytes);
        count_requests(miss, tmp, n_miss, data_offset, out->row_bytes, &rule, &out->miss_requests,
                       &out->miss_read_bytes);
        out->static_misses += n_miss;
    }
    oc_free(map);
    oc_free(rows);
    oc_free(miss);
    oc_free(tmp);
    return rc;
}

/*
 * Adds to *misses the misses of ids[0..n) through an LRU cache of cap ids,
 * warmed with warm[0..n_warm) (warm[0] the most recent).
 */
static int store_lru_misses(uint64_t cap, const uint64_t *warm, uint64_t n_warm,
                            const uint64_t *ids, uint64_t n, uint64_t *misses, struct oc_err *err)
{
    struct pl_lru lru;
    int rc = pl_lru_init(&lru, cap, err);
    if (rc)
        return rc;
    for (uint64_t k = n_warm; k-- > 0;) /* warm[0] touched last: the most recent */
        pl_lru_access(&lru, warm[k]);
    for (uint64_t k = 0; k < n; k++)
        *misses += !pl_lru_access(&lru, ids[k]);
    pl_lru_deinit(&lru);
    return OC_OK;
}

/*
 * LRU misses of the trace with n_hot rows, Belady's with b_cap rows, both
 * caches warm with the hottest of hot_ids (hottest first, at least
 * max(n_hot, b_cap) of them).
 */
static int inspect_caches(const struct trace *t, const uint64_t *hot_ids, uint64_t n_hot,
                          uint64_t b_cap, struct oc_store_inspection *out, struct oc_err *err)
{
    int rc = OC_OK;
    if (n_hot == 0) {
        out->lru_misses = t->n;
    } else {
        /* the hottest touched last: the most recent */
        if ((rc = store_lru_misses(n_hot, hot_ids, n_hot, t->ids, t->n, &out->lru_misses, err)))
            return rc;
    }
    if (b_cap == 0) {
        out->belady_misses = t->n;
        return OC_OK;
    }
    /* Belady: iteration 0 reads the hot ids (the warm cache), then the batches */
    uint64_t *ids = oc_alloc((b_cap + t->n) * sizeof(uint64_t), "store inspect: Belady trace", err);
    uint64_t *off = oc_alloc((t->n_batches + 2) * sizeof(uint64_t), "store inspect: Belady", err);
    struct oc_plan_belady *b = NULL;
    if (!ids || !off) {
        rc = err->status;
        goto out;
    }
    memcpy(ids, hot_ids, b_cap * sizeof(uint64_t));
    memcpy(ids + b_cap, t->ids, t->n * sizeof(uint64_t));
    off[0] = 0;
    for (uint64_t i = 0; i <= t->n_batches; i++)
        off[i + 1] = b_cap + t->off[i];
    struct oc_plan_belady_plan plan;
    if ((rc = oc_plan_belady_new(b_cap, &b, err)) ||
        (rc = oc_plan_belady_plan(b, ids, off, t->n_batches + 1, &plan, err)))
        goto out;
    for (uint64_t i = 1; i < plan.n_iters; i++)
        out->belady_misses += plan.n_miss[i];
out:
    oc_plan_belady_free(b);
    oc_free(ids);
    oc_free(off);
    return rc;
}

static uint64_t count_distinct(const struct trace *t, uint64_t n_nodes, uint8_t *seen)
{
    uint64_t d = 0;
    for (uint64_t k = 0; k < t->n; k++) {
        uint64_t v = t->ids[k];
        if (!((seen[v >> 3] >> (v & 7)) & 1u)) {
            seen[v >> 3] |= (uint8_t)(1u << (v & 7));
            d++;
        }
    }
    (void)n_nodes;
    return d;
}

static int inspect_disk(const struct oc_store_config *cfg, struct oc_io_disk *disk,
                        struct oc_err *err)
{
    struct oc_file *f = NULL;
    int rc = oc_file_open(oc_dataset_path(cfg->ds, OC_DS_FEATURES), OC_FILE_READ | OC_FILE_DIRECT,
                          &f, err);
    if (rc == OC_OK)
        rc = oc_io_disk_of(f, disk, err);
    oc_file_close(f, NULL);
    return rc;
}

int oc_store_inspect(const struct oc_store_config *cfg, uint32_t n_batches, uint64_t cache_rows,
                     struct oc_store_inspection *out, struct oc_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *missing = !cfg || !cfg->ds    ? "ds"
                          : !cfg->graph       ? "graph"
                          : !cfg->sample_opts ? "sample_opts"
                          : !cfg->train_ids   ? "train_ids"
                          : !cfg->n_train     ? "n_train"
                          : !cfg->batch_size  ? "batch_size"
                          : !n_batches        ? "batches to inspect"
                                              : NULL;
    if (missing)
        return OC_ERR(err, OC_ERR_ARG, "store inspect: the training plan has no %s", missing);
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    if (m->feat_dim == 0 || !m->files[OC_DS_FEATURES].present)
        return OC_ERR(err, OC_ERR_ARG, "store inspect: dataset %s has no node features",
                      oc_dataset_dir(cfg->ds));
    out->n_nodes = m->n_nodes;
    out->row_bytes = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    out->feature_bytes = out->n_nodes * out->row_bytes;
    out->cache_rows = cache_rows < out->n_nodes ? cache_rows : out->n_nodes;
    struct trace t = {0};
    uint64_t *hot_ids = NULL;
    uint8_t *bits = NULL;
    int rc;
    if ((rc = inspect_disk(cfg, &out->disk, err)) ||
        (rc = trace_sample(cfg, n_batches, &t, &out->max_rows, &out->sample_s, err)))
        goto out;
    out->n_batches = t.n_batches;
    out->input_rows = t.n;
    if (!(bits = oc_calloc(out->n_nodes / 8 + 1, 1, "store inspect: node bits", err))) {
        rc = err->status;
        goto out;
    }
    out->distinct_rows = count_distinct(&t, out->n_nodes, bits);
    memset(bits, 0, out->n_nodes / 8 + 1);
    struct oc_store view; /* what the hot-set helper reads of a store */
    memset(&view, 0, sizeof(view));
    view.strat = &inspect_strategy;
    view.ds = cfg->ds;
    view.n_nodes = out->n_nodes;
    if (cfg->mem_bytes) { /* ginex's own split of the budget; it cannot open: no cache */
        struct oc_err ignored;
        if (oc_store_ginex_cache_rows(cfg, &out->ginex_cache_rows, &ignored) != OC_OK)
            out->ginex_cache_rows = 0;
    } else {
        out->ginex_cache_rows = out->n_nodes;
    }
    if (out->ginex_cache_rows > out->n_nodes)
        out->ginex_cache_rows = out->n_nodes;
    uint64_t n_rank =
        out->cache_rows > out->ginex_cache_rows ? out->cache_rows : out->ginex_cache_rows;
    if ((rc = store_hot_select(&view, cfg, OC_STORE_HOTNESS_DEGREE, n_rank, 1, &hot_ids, err)))
        goto out;
    for (uint64_t k = 0; k < out->cache_rows; k++)
        bits[hot_ids[k] >> 3] |= (uint8_t)(1u << (hot_ids[k] & 7));
    if ((rc = inspect_requests(cfg, &t, bits, out, err)))
        goto out;
    memset(bits, 0, out->n_nodes / 8 + 1); /* the hot set of half the rows (diskgnn's cache) */
    for (uint64_t k = 0; k < out->cache_rows / 2; k++)
        bits[hot_ids[k] >> 3] |= (uint8_t)(1u << (hot_ids[k] & 7));
    for (uint64_t k = 0; k < t.n; k++)
        out->half_misses += !((bits[t.ids[k] >> 3] >> (t.ids[k] & 7)) & 1u);
    oc_free(bits); /* before the simulated caches: they take the most */
    bits = NULL;
    rc = inspect_caches(&t, hot_ids, out->cache_rows, out->ginex_cache_rows, out, err);
out:
    oc_free(bits);
    oc_free(hot_ids);
    oc_free(t.ids);
    oc_free(t.off);
    return rc;
}

uint64_t oc_store_reader_bytes(const struct oc_store_config *cfg)
{
    struct oc_store view; /* what the row-count helpers read of a store */
    memset(&view, 0, sizeof(view));
    view.n_nodes = oc_dataset_manifest(cfg->ds)->n_nodes;
    return STORE_DISK_BOUNCE_BYTES + store_budget_rows(&view, cfg) * STORE_ROW_SCRATCH_BYTES;
}
