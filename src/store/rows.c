/*
 * rows.c — helpers shared by the strategies: converting stored rows to f32,
 * widening f16 rows in place, row loops over the pool, and the feature-file
 * reader (O_DIRECT file + io_uring batch reader) used by `direct` and by the
 * misses of `static`.
 *
 * Place in the data flow: store; between io (oc_file, oc_io_batch) and the
 * strategies' gathers.
 * Thread-safety: store_row_* are pure. store_for_rows runs tasks on the pool,
 * each over a fixed range of rows. A struct store_disk serves one gather at
 * a time (its batch reader owns a ring): a strategy with lanes has one per
 * lane.
 * Ownership: the output rows are the caller's; store_disk owns its file and
 * batch reader.
 *
 * Why f16 rows are read into the upper half of their output row: an f32 row
 * of dim floats is 4·dim bytes, the stored f16 row 2·dim. Reading the half
 * row to bytes [2·dim, 4·dim) and widening front to back never overwrites a
 * half not yet converted (float j ends at byte 4j+4 ≤ 2·dim + 2j + 2 for
 * j < dim), so no staging buffer is needed and gathers stay allocation-free.
 */
#include <string.h>

#include "store/store_int.h"

#define WIDEN_CHUNK 256u /* halves copied out per step of the in-place widening */

void store_row_to_f32(enum oc_dtype dtype, const void *src, uint64_t dim, float *dst)
{
    if (dtype == OC_DTYPE_F32) {
        memcpy(dst, src, dim * sizeof(float));
        return;
    }
    const uint8_t *p = src;
    for (uint64_t j = 0; j < dim; j++) {
        uint16_t h;
        memcpy(&h, p + 2 * j, sizeof(h));
        dst[j] = oc_f16_to_f32(h);
    }
}

void store_row_widen_inplace(float *dst, uint64_t dim)
{
    const uint8_t *half = (const uint8_t *)dst + 2 * dim;
    uint16_t tmp[WIDEN_CHUNK];

    /*
     * Chunk [j, j+k): its halves are copied out (memcpy: byte accesses, so the
     * compiler keeps them ordered against the float stores) before floats
     * [j, j+k) are written; those end at byte 4(j+k) ≤ 2·dim + 2(j+k) =
     * start of the next chunk's halves, as j + k ≤ dim.
     */
    for (uint64_t j = 0; j < dim; j += WIDEN_CHUNK) {
        uint64_t k = dim - j < WIDEN_CHUNK ? dim - j : WIDEN_CHUNK;
        memcpy(tmp, half + 2 * j, k * sizeof(uint16_t));
        for (uint64_t t = 0; t < k; t++)
            dst[j + t] = oc_f16_to_f32(tmp[t]);
    }
}

struct rows_job {
    store_rows_fn fn;
    void *ctx;
    uint64_t n;
};

static int rows_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    const struct rows_job *j = ctx;
    uint64_t lo = task * STORE_ROWS_PER_TASK;
    uint64_t hi = lo + STORE_ROWS_PER_TASK < j->n ? lo + STORE_ROWS_PER_TASK : j->n;
    j->fn(j->ctx, lo, hi);
    return OC_OK;
}

int store_for_rows(struct oc_pool *pool, uint64_t n, store_rows_fn fn, void *ctx,
                   struct oc_err *err)
{
    if (n == 0)
        return OC_OK;
    if (!pool || n <= STORE_ROWS_PER_TASK) {
        fn(ctx, 0, n);
        return OC_OK;
    }
    struct rows_job j = {fn, ctx, n};
    /* the pipeline's gathers copy on their own thread while the trainer's kernels hold the
       pool, instead of queueing behind them (the copies are the same bytes either way) */
    int rc = oc_pool_run_or_inline(pool, (n + STORE_ROWS_PER_TASK - 1) / STORE_ROWS_PER_TASK,
                                   rows_task, &j);
    if (rc)
        return OC_ERR(err, rc, "store: row copy on the pool failed");
    return OC_OK;
}

void store_shape(struct oc_store *s, const struct oc_store_config *cfg)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    s->dtype = m->feat_dtype;
    s->n_nodes = m->n_nodes;
    s->feat_dim = m->feat_dim;
    s->row_bytes = (size_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    if (cfg->n_train && cfg->batch_size)
        s->n_plan_batches = (cfg->n_train + cfg->batch_size - 1) / cfg->batch_size;
}

uint64_t store_expected_rows(const struct oc_store *s, const struct oc_store_config *cfg)
{
    const struct oc_sample_opts *so = cfg->sample_opts;
    uint64_t rows;

    if (!so || cfg->batch_size == 0)
        return s->n_nodes < 65536 ? s->n_nodes : 65536;
    rows = cfg->batch_size;
    for (uint32_t l = 0; l < so->n_layers && l < OC_SAMPLE_MAX_LAYERS && rows < s->n_nodes; l++) {
        if (so->fanouts[l] < 0)
            return s->n_nodes;
        uint64_t grow = 1 + (uint64_t)so->fanouts[l];
        rows = rows > s->n_nodes / grow ? s->n_nodes : rows * grow;
    }
    return rows < s->n_nodes ? rows : s->n_nodes;
}

int store_measure_misses(const struct oc_store_config *cfg, uint32_t n_measure, const char *who,
                         const uint8_t *cached, uint64_t *rows, uint64_t *misses,
                         uint64_t *plan_rows, struct oc_err *err)
{
    struct oc_sample_iter it;
    uint64_t most = 0, most_miss = 0, most_plan = 0, *acc = NULL, cap_acc = 0;
    int rc = oc_sample_iter_open(&it, store_plan_graph(cfg), cfg->sample_opts, cfg->pool,
                                 cfg->train_ids, cfg->n_train, cfg->batch_size, err);
    if (rc == OC_OK)
        oc_sample_iter_seek(&it, cfg->first_epoch, 0);
    for (uint32_t i = 0; rc == OC_OK && i < n_measure; i++) {
        const struct oc_sample_batch *b = &it.batch;
        if ((rc = oc_sample_iter_next(&it, err)) <= 0)
            break;
        rc = OC_OK;
        /* the ids the store is gathered with for b: its own, or the access map's */
        const uint64_t *ids = b->input_ids;
        uint64_t n = b->n_input;
        if (cfg->accesses &&
            (rc = cfg->accesses->of(cfg->accesses->ctx, b, &acc, &cap_acc, &n, err)) == OC_OK)
            ids = acc;
        uint64_t miss = n;
        for (uint64_t k = 0; rc == OC_OK && cached && k < n; k++)
            miss -= (uint64_t)oc_bit_get(cached, ids[k]);
        most = n > most ? n : most;
        most_miss = miss > most_miss ? miss : most_miss;
        most_plan = b->n_input > most_plan ? b->n_input : most_plan;
    }
    if (rc)
        oc_err_prefix(err, "store %s: sampling the first batches at open", who);
    oc_free(acc);
    oc_sample_iter_close(&it);
    *rows = most + (most + 3) / 4;
    *misses = most_miss + (most_miss + 3) / 4;
    if (plan_rows)
        *plan_rows = most_plan + (most_plan + 3) / 4;
    return rc;
}

uint64_t store_batch_rows(const struct oc_store *s, const struct oc_store_config *cfg)
{
    uint64_t bound = store_expected_rows(s, cfg);
    return cfg->batch_rows && cfg->batch_rows < bound ? cfg->batch_rows : bound;
}

uint64_t store_budget_rows(const struct oc_store *s, const struct oc_store_config *cfg)
{
    uint64_t rows = store_batch_rows(s, cfg);
    return rows > STORE_MIN_READER_ROWS ? rows : STORE_MIN_READER_ROWS;
}

static void miss_sift(struct store_miss *a, uint64_t root, uint64_t n)
{
    for (;;) {
        uint64_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c].id < a[c + 1].id)
            c++;
        if (a[root].id >= a[c].id)
            return;
        struct store_miss t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

void store_miss_sort(struct store_miss *a, uint64_t n)
{
    for (uint64_t i = n / 2; i-- > 0;)
        miss_sift(a, i, n);
    for (uint64_t i = n; i-- > 1;) {
        struct store_miss t = a[0];
        a[0] = a[i];
        a[i] = t;
        miss_sift(a, 0, i);
    }
}

/* ---- the feature file through the batch reader ---------------------------- */

int store_disk_open(const struct oc_store *s, int merge, struct store_disk *d, struct oc_err *err)
{
    return store_disk_open_sized(s, merge, STORE_DISK_BOUNCE_BYTES, d, err);
}

int store_disk_open_sized(const struct oc_store *s, int merge, size_t bounce_bytes,
                          struct store_disk *d, struct oc_err *err)
{
    int rc;

    memset(d, 0, sizeof(*d));
    if ((rc = oc_file_open(s->path, OC_FILE_READ | OC_FILE_DIRECT, &d->f, err)))
        return rc;
    if ((rc = oc_io_batch_new(STORE_DISK_DEPTH, bounce_bytes, &d->batch, err))) {
        oc_file_close(d->f, NULL);
        d->f = NULL;
        return rc;
    }
    oc_io_batch_set_merge(d->batch, merge);
    oc_io_batch_register_file(d->batch, d->f); /* optional: a plain read otherwise */
    /* the block reader: holes cheaper to read than a request are read along (io/probe.c) */
    if (merge && (rc = oc_io_batch_fit_disk(d->batch, d->f, err))) {
        store_disk_close(d);
        return rc;
    }
    return OC_OK;
}

void store_disk_close(struct store_disk *d)
{
    oc_io_batch_free(d->batch);
    oc_free(d->slots);
    oc_free(d->miss);
    oc_file_close(d->f, NULL); /* read-only: nothing to lose on close */
    memset(d, 0, sizeof(*d));
}

int store_disk_queue_row(const struct oc_store *s, struct store_disk *d, uint64_t row,
                         float *out_row, struct oc_err *err)
{
    return oc_io_batch_add(d->batch, d->f, store_file_off(s, row), s->row_bytes,
                           store_stored_dst(s, out_row), err);
}

int store_disk_queue(const struct oc_store *s, struct store_disk *d, uint64_t id, float *out_row,
                     struct oc_err *err)
{
    return store_disk_queue_row(s, d, store_row_of(s, id), out_row, err);
}

int store_disk_run_counted(struct oc_store *s, struct store_disk *d, int counted,
                           struct oc_err *err)
{
    const struct oc_io_stats *st = oc_io_batch_stats(d->batch);
    uint64_t read0 = st->read_bytes, n0 = st->n_reads;
    int rc = oc_io_batch_run(d->batch, err);
    /* Count what was read even on failure: the disk delivered it. */
    if (counted) {
        s->stats.read_bytes += st->read_bytes - read0;
        s->stats.n_reads += st->n_reads - n0;
    }
    return rc;
}

int store_disk_run(struct oc_store *s, struct store_disk *d, struct oc_err *err)
{
    int rc = store_disk_run_counted(s, d, 1, err);
    if (rc)
        oc_err_prefix(err, "store %s: gather", s->strat->name);
    return rc;
}

int store_disk_reserve(struct store_disk *d, uint64_t n, struct oc_err *err)
{
    int rc;
    if (d->max_rows && n > d->max_rows &&
        (rc = oc_grow_by(&d->miss, &d->cap_miss, n, sizeof(*d->miss), OC_GROW_TWICE,
                         "store cache: misses", err)))
        return rc;
    if (d->max_rows && n > d->max_rows)
        n = d->max_rows;
    if ((rc = oc_grow_by(&d->slots, &d->cap_slots, n, sizeof(uint32_t), OC_GROW_TWICE,
                         "store cache: slots", err)))
        return rc;
    return oc_io_batch_reserve(d->batch, n, err);
}

void store_disk_discard(struct store_disk *d)
{
    struct oc_err ignore;
    oc_io_batch_run(d->batch, &ignore);
}

size_t store_disk_held_bytes(const struct store_disk *d)
{
    return (d->batch ? oc_io_batch_held_bytes(d->batch) : 0) + d->cap_slots * sizeof(uint32_t) +
           d->cap_miss * sizeof(struct store_miss);
}

uint32_t store_lanes_for(const struct oc_store_config *cfg, uint64_t lane_bytes, uint64_t room)
{
    uint32_t n = cfg->lanes < 1 ? 1 : cfg->lanes > STORE_MAX_LANES ? STORE_MAX_LANES : cfg->lanes;
    while (n > 1 && room && lane_bytes > room / n)
        n--;
    return n;
}

int store_disks_open(const struct oc_store *s, int merge, struct store_disk *d, uint32_t n,
                     struct oc_err *err)
{
    int rc = OC_OK;
    for (uint32_t i = 0; i < n && rc == OC_OK; i++)
        rc = store_disk_open(s, merge, &d[i], err);
    return rc;
}

void store_disks_close(struct store_disk *d, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        store_disk_close(&d[i]);
}

size_t store_disks_held_bytes(const struct store_disk *d, uint32_t n)
{
    size_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += store_disk_held_bytes(&d[i]);
    return sum;
}

struct widen_job {
    float *out;
    uint64_t dim;
};

static void widen_rows(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct widen_job *j = ctx;
    for (uint64_t i = lo; i < hi; i++)
        store_row_widen_inplace(j->out + i * j->dim, j->dim);
}

int store_disk_widen_all(const struct oc_store *s, float *out, uint64_t n, struct oc_err *err)
{
    if (s->dtype != OC_DTYPE_F16)
        return OC_OK;
    struct widen_job j = {out, s->feat_dim};
    return store_for_rows(s->pool, n, widen_rows, &j, err);
}
