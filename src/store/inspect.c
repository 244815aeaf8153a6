/*
 * inspect.c — oc_store_inspect: what the first batches of a training plan ask
 * of the feature file, for train's cost model (--strategy auto, train/auto.c).
 *
 *   plan (cfg) ──► sample n batches ──► trace of input ids ─┬─► static: hot set (hot.c)
 *                                                           ├─► LRU (plan/belady_sim.c)
 *                                                           ├─► page cache: an LRU of 4 KiB
 *                                                           │   pages (mmap), as large as the
 *                                                           │   caller says the OS leaves it
 *                                                           ├─► Belady (plan/belady_api.c) at
 *                                                           │   ginex's own cache size
 *                                                           │   (ginex_size.c), timed
 *                                                           └─► pages → requests (merged)
 *   features.npy ──► oc_io_disk_of (io/probe.c): bandwidth, IOPS, crossover
 *
 * The caches are simulated warm: they start with the degree-ranked hot set
 * of cache_rows rows (LRU touched in that order, the page cache with those
 * rows' pages, Belady given it as an iteration before the first batch whose
 * misses are not counted), so a few batches show steady-state miss ratios
 * instead of the cold misses every cache has at the start of a run. A page
 * cache as large as features.npy misses nothing (not simulated).
 *
 * Requests: the rows' byte ranges in features.npy (row order: the layout's
 * map), sorted, merged by the batch reader's own rule (io/span.c: pages
 * that touch, or holes of at most the disk's crossover, up to the store
 * reader's largest read) into the reads it would issue; the bytes read are
 * the pages of each request end to end. Of every row, of static's misses and
 * of the LRU's; and of every row with merging off (direct's reads).
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

/*
 * The caches that see the batches in order beside their requests: an LRU of
 * cache_rows ids (gnndrive's buffer) and the page cache mmap reads through
 * (an LRU of page_cache_pages pages of features.npy), both warm with the hot
 * set (its coldest touched first, so the hottest are the most recent).
 */
struct inspect_sims {
    struct pl_lru rows, pages;
    int have_rows;  /* 0: no rows cached, every one misses */
    int have_pages; /* 0: every page cached (a cache as large as the file), nothing misses */
    int no_pages;   /* a page cache of no page: every page misses */
    uint64_t data_offset, row_bytes;
};

/* The first and last page of file row r. */
static void row_pages(const struct inspect_sims *sm, uint64_t r, uint64_t *p0, uint64_t *p1)
{
    uint64_t off = sm->data_offset + r * sm->row_bytes;
    *p0 = off / OC_IO_ALIGN;
    *p1 = (off + sm->row_bytes - 1) / OC_IO_ALIGN;
}

static int sims_init(const struct oc_store_config *cfg, const void *map, const uint64_t *hot_ids,
                     uint64_t page_cache_bytes, struct oc_store_inspection *out,
                     struct inspect_sims *sm, struct oc_err *err)
{
    int rc;
    memset(sm, 0, sizeof(*sm));
    sm->data_offset = oc_dataset_data_offset(cfg->ds, OC_DS_FEATURES);
    sm->row_bytes = out->row_bytes;
    uint64_t file_pages = (sm->data_offset + out->feature_bytes + OC_IO_ALIGN - 1) / OC_IO_ALIGN;
    out->page_cache_pages = page_cache_bytes / OC_IO_ALIGN;
    if (out->page_cache_pages > file_pages)
        out->page_cache_pages = file_pages;
    if (out->cache_rows) {
        if ((rc = pl_lru_init(&sm->rows, out->cache_rows, err)))
            return rc;
        sm->have_rows = 1;
        for (uint64_t k = out->cache_rows; k-- > 0;)
            pl_lru_access(&sm->rows, hot_ids[k]);
    }
    /* a page cache as large as the file misses nothing once warm: no simulation */
    if (out->page_cache_pages == file_pages)
        return OC_OK;
    if (out->page_cache_pages == 0) {
        sm->no_pages = 1;
        return OC_OK;
    }
    if ((rc = pl_lru_init(&sm->pages, out->page_cache_pages, err)))
        return rc;
    sm->have_pages = 1;
    for (uint64_t k = out->cache_rows; k-- > 0;) {
        uint64_t r, p0, p1;
        store_rows_of(cfg->ds, map, &hot_ids[k], 1, &r);
        row_pages(sm, r, &p0, &p1);
        for (uint64_t p = p0; p <= p1; p++)
            pl_lru_access(&sm->pages, p);
    }
    return OC_OK;
}

static void sims_deinit(struct inspect_sims *sm)
{
    if (sm->have_rows)
        pl_lru_deinit(&sm->rows);
    if (sm->have_pages)
        pl_lru_deinit(&sm->pages);
}

/* File row r through the page cache: adds its missing pages and whether it had one. */
static void sims_page(struct inspect_sims *sm, uint64_t r, struct oc_store_inspection *out)
{
    if (!sm->have_pages && !sm->no_pages)
        return;
    uint64_t p0, p1, missing = 0;
    row_pages(sm, r, &p0, &p1);
    for (uint64_t p = p0; p <= p1; p++)
        missing += sm->no_pages || !pl_lru_access(&sm->pages, p);
    out->page_misses += missing;
    out->page_miss_rows += missing > 0;
}

/*
 * The device requests of reads of n rows at sorted file offsets offs, each
 * its own read of its page span (merging off) submitted in that order: the
 * kernel's block layer merges a read into the one before when it starts on
 * the page after that one's last (a back merge), never two reads of one page.
 */
static uint64_t device_requests(const uint64_t *offs, uint64_t n, uint64_t row_bytes)
{
    uint64_t reqs = 0, last = UINT64_MAX;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t p0 = offs[k] / OC_IO_ALIGN, p1 = (offs[k] + row_bytes - 1) / OC_IO_ALIGN;
        reqs += last == UINT64_MAX || p0 != last + 1;
        last = p1;
    }
    return reqs;
}

/* Scratch of inspect_requests: one batch's rows, each kind of miss, the sort's buffer. */
struct inspect_rows {
    uint64_t *rows, *miss, *lru, *tmp;
};

/*
 * Pages and requests of every batch's rows (merged, and each row its own
 * read), of its rows outside the hot set and of the LRU's misses; the LRU
 * and page cache misses.
 */
static void inspect_batches(const struct oc_store_config *cfg, const struct trace *t,
                            const uint8_t *hot, const void *map, struct inspect_sims *sm,
                            struct inspect_rows *w, struct oc_store_inspection *out)
{
    /* the store's reader (store_disk_open): merging on, the disk's crossover, its bounce cap */
    const uint64_t cap =
        STORE_DISK_BOUNCE_BYTES < OC_IO_MAX_READ ? STORE_DISK_BOUNCE_BYTES : OC_IO_MAX_READ;
    const struct oc_io_span_rule rule = {1, out->disk.gap_bytes, cap};
    const struct oc_io_span_rule unmerged = {0, 0, cap}; /* direct's: merging off */
    for (uint64_t i = 0; i < t->n_batches; i++) {
        const uint64_t *ids = t->ids + t->off[i];
        uint64_t n = t->off[i + 1] - t->off[i], n_miss = 0, n_lru = 0;
        store_rows_of(cfg->ds, map, ids, n, w->rows);
        for (uint64_t k = 0; k < n; k++) {
            if (!hot || !oc_bit_get(hot, ids[k]))
                w->miss[n_miss++] = w->rows[k];
            if (!sm->have_rows || !pl_lru_access(&sm->rows, ids[k]))
                w->lru[n_lru++] = w->rows[k];
            sims_page(sm, w->rows[k], out);
        }
        count_requests(w->rows, w->tmp, n, sm->data_offset, out->row_bytes, &rule,
                       &out->all_requests, &out->all_read_bytes);
        oc_io_span_count(&unmerged, w->rows, n, out->row_bytes, &out->row_requests,
                         &out->row_read_bytes); /* rows: now their sorted offsets */
        out->row_device_requests += device_requests(w->rows, n, out->row_bytes);
        count_requests(w->miss, w->tmp, n_miss, sm->data_offset, out->row_bytes, &rule,
                       &out->miss_requests, &out->miss_read_bytes);
        count_requests(w->lru, w->tmp, n_lru, sm->data_offset, out->row_bytes, &rule,
                       &out->lru_requests, &out->lru_read_bytes);
        out->static_misses += n_miss;
        out->lru_misses += n_lru;
    }
}

static int inspect_requests(const struct oc_store_config *cfg, const struct trace *t,
                            const uint8_t *hot, const uint64_t *hot_ids, uint64_t page_cache_bytes,
                            struct oc_store_inspection *out, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    uint64_t most = 1;
    for (uint64_t i = 0; i < t->n_batches; i++)
        most = t->off[i + 1] - t->off[i] > most ? t->off[i + 1] - t->off[i] : most;
    void *map = NULL;
    struct inspect_sims sm;
    memset(&sm, 0, sizeof(sm));
    struct inspect_rows w;
    w.rows = oc_alloc(most * sizeof(uint64_t), "store inspect: rows", err);
    w.miss = oc_alloc(most * sizeof(uint64_t), "store inspect: rows", err);
    w.lru = oc_alloc(most * sizeof(uint64_t), "store inspect: rows", err);
    w.tmp = oc_alloc(most * sizeof(uint64_t), "store inspect: rows", err);
    int rc = w.rows && w.miss && w.lru && w.tmp ? OC_OK : err->status;
    if (rc == OC_OK && store_row_map_bytes(cfg->ds))
        rc = oc_dataset_load_feature_rows(cfg->ds, m->index_dtype, &map, "store inspect: layout",
                                          err);
    if (rc == OC_OK &&
        (rc = sims_init(cfg, map, hot_ids, page_cache_bytes, out, &sm, err)) == OC_OK)
        inspect_batches(cfg, t, hot, map, &sm, &w, out);
    sims_deinit(&sm);
    oc_free(map);
    oc_free(w.rows);
    oc_free(w.miss);
    oc_free(w.lru);
    oc_free(w.tmp);
    return rc;
}

/*
 * Belady's misses of the trace with b_cap rows, warm with the hottest b_cap
 * of hot_ids, and the seconds its planning took.
 */
static int inspect_belady(const struct trace *t, const uint64_t *hot_ids, uint64_t b_cap,
                          struct oc_store_inspection *out, struct oc_err *err)
{
    int rc = OC_OK;
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
    double t0 = oc_now_s();
    if ((rc = oc_plan_belady_new(b_cap, &b, err)) ||
        (rc = oc_plan_belady_plan(b, ids, off, t->n_batches + 1, &plan, err)))
        goto out;
    /* the batches' share of it: the warm iteration's b_cap accesses were planned too */
    out->plan_s = (oc_now_s() - t0) * (double)t->n / (double)(b_cap + t->n);
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
        if (!oc_bit_get(seen, v)) {
            oc_bit_set(seen, v);
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
                     uint64_t page_cache_bytes, struct oc_store_inspection *out, struct oc_err *err)
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
    if (!(bits = oc_calloc(oc_bits_bytes(out->n_nodes), 1, "store inspect: node bits", err))) {
        rc = err->status;
        goto out;
    }
    out->distinct_rows = count_distinct(&t, out->n_nodes, bits);
    memset(bits, 0, oc_bits_bytes(out->n_nodes));
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
        oc_bit_set(bits, hot_ids[k]);
    if ((rc = inspect_requests(cfg, &t, bits, hot_ids, page_cache_bytes, out, err)))
        goto out;
    memset(bits, 0,
           oc_bits_bytes(out->n_nodes)); /* the hot set of half the rows (diskgnn's cache) */
    for (uint64_t k = 0; k < out->cache_rows / 2; k++)
        oc_bit_set(bits, hot_ids[k]);
    for (uint64_t k = 0; k < t.n; k++)
        out->half_misses += !oc_bit_get(bits, t.ids[k]);
    oc_free(bits); /* before Belady's planner: it takes the most */
    bits = NULL;
    rc = inspect_belady(&t, hot_ids, out->ginex_cache_rows, out, err);
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
