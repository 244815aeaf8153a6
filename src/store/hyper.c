/*
 * hyper.c — hyperbatches (AGNES, KDD'26): the misses of the next batches of
 * the plan, grouped, read in one block pass ahead of their gathers. A batch
 * read alone asks for its missed rows one page each, at the disk's random
 * rate; the misses of K batches together are dense enough in the file that
 * the block reader (io/probe.c's crossover) merges them into long extents,
 * reading the gaps along, at the disk's sequential rate.
 *
 *   prepare (sample stage, plan order)        read stage (1 thread)          gather (fetch stage)
 *   free_q ─► group: each batch's missed rows ─► read_q ─► sort, dedupe, ─► ready_q ─► rows from
 *             appended; closed at K batches,              block pass into            the group; after
 *             when full, or at the epoch's end            the group's rows           its last batch ─► free_q
 *
 * Two groups circulate: one is read (or waits to be) while the other's
 * batches are gathered, so the reads of batches k+1 .. 2K overlap the
 * training of batches 1 .. K. A group holds up to cap rows (ids of file
 * rows, ascending after the read, and the rows as stored); a batch whose
 * misses do not fit an empty group is not staged (its gather reads them).
 * Gathers take batches in the order they were prepared (the batch pipeline
 * fetches in plan order; a strategy with hyperbatches has one lane), which
 * is checked.
 *
 * Place in the data flow: store, below the strategies that stage misses
 * (static and helios, whose batch pipeline shows them each sampled batch;
 * ginex, whose loader knows each coming batch's planned misses); on
 * store_disk (rows.c) and the store's pipeline (store_stages). The gather
 * side is one thread taking batches in prepared order: a strategy whose
 * batches are consumed by several threads or out of order (gnndrive's
 * extractors, --reorder) does not fit it as it is.
 * Thread-safety: prepare's side (cur, count) belongs to the sampling (or
 * loading) thread, the gather side (taken, src) to the fetching thread, a group to
 * whichever side popped it last (the queues order the hand-overs); the
 * read counters are atomics. Errors in the read stage fail the pipeline,
 * whose queues close, so both sides see them at their next pop.
 * Ownership: the hyperbatch owns its groups, reader and queues' items; its
 * stage runs on the store's pipeline, joined before store_hyper_free.
 */
#include <inttypes.h>
#include <string.h>

#include "store/store_int.h"

#define HYPER_GROUPS   2u
#define HYPER_RUN_ROWS 16384u /* rows the read stage queues per run of its reader, at most */

struct hyper_entry {
    uint64_t epoch, batch;
};

struct hyper_group {
    struct hyper_entry *batches; /* in prepare order; max_batches */
    uint32_t n_batches, next;    /* next: the first not yet gathered */
    uint64_t *rows, n_rows;      /* rows of features.npy; ascending, unique once read */
    uint8_t *data;               /* n_rows rows as stored, in the order of rows */
};

struct store_hyper {
    struct oc_store *s;
    uint64_t cap;         /* rows per group */
    uint64_t run_rows;    /* rows per run of the reader: min(cap, HYPER_RUN_ROWS) */
    uint32_t max_batches; /* batches per group */
    struct hyper_group groups[HYPER_GROUPS];
    uint64_t *sort_tmp; /* the read stage's radix scratch (cap) */
    struct store_disk disk;
    struct oc_pipeline *p;
    struct oc_queue *free_q, *read_q, *ready_q;
    /* prepare's side */
    struct hyper_group *cur;
    uint64_t count; /* batches prepared since open (epochs end at multiples of n_plan_batches) */
    /* gather's side */
    struct hyper_group *taken;
    const void **src;
    _Atomic uint64_t cap_src; /* read by stats on any thread */
    _Atomic uint64_t read_bytes, n_reads;
};

static uint64_t run_rows(uint64_t cap)
{
    return cap < HYPER_RUN_ROWS ? cap : HYPER_RUN_ROWS;
}

/* The struct, the groups and the sort scratch (what open allocates besides its reader). */
static uint64_t groups_bytes(const struct oc_store *s, uint64_t cap, uint32_t max_batches)
{
    uint64_t group =
        cap * (sizeof(uint64_t) + s->row_bytes) + max_batches * sizeof(struct hyper_entry);
    return sizeof(struct store_hyper) + HYPER_GROUPS * group + cap * sizeof(uint64_t);
}

uint64_t store_hyper_bytes(const struct oc_store *s, uint64_t cap, uint32_t max_batches)
{
    return groups_bytes(s, cap, max_batches) + STORE_DISK_BOUNCE_BYTES +
           run_rows(cap) * STORE_ROW_SCRATCH_BYTES;
}

/*
 * Rows per group when the share of mem_bytes stages two groups (each row: its
 * id, the row, and the read stage's sort scratch), at least one batch's rows
 * (a share too small for that is refused by the strategy's budget check).
 * Batches per group: two per batch bound of rows (a hit ratio up to a half
 * fills a group), at most STORE_HYPER_MAX_BATCHES.
 */
uint64_t store_hyper_size(const struct oc_store *s, double share, uint64_t mem_bytes,
                          uint64_t batch_rows, uint64_t *cap, uint32_t *max_batches)
{
    uint64_t per_row = 2 * (sizeof(uint64_t) + s->row_bytes) + sizeof(uint64_t);
    uint64_t c = (uint64_t)(share * (double)mem_bytes) / per_row;
    if (batch_rows == 0)
        batch_rows = 1;
    if (c < batch_rows)
        c = batch_rows;
    uint64_t k = 2 * c / batch_rows;
    *max_batches = k < 2 ? 2 : k > STORE_HYPER_MAX_BATCHES ? STORE_HYPER_MAX_BATCHES : (uint32_t)k;
    *cap = c;
    /* and the sampled batches the pipeline slots the two groups hold beyond its own */
    return store_hyper_bytes(s, c, *max_batches) +
           2ull * *max_batches * batch_rows * STORE_HYPER_SLOT_ROW_BYTES;
}

/* ---- the read stage ------------------------------------------------------- */

static int read_group(struct store_hyper *h, struct hyper_group *g, struct oc_err *err)
{
    struct oc_store *s = h->s;
    uint64_t n = 0, queued = 0;
    const struct oc_io_stats *st = oc_io_batch_stats(h->disk.batch);
    uint64_t read0 = st->read_bytes, n0 = st->n_reads;
    int rc = OC_OK;
    oc_sort_u64(g->rows, h->sort_tmp, g->n_rows);
    for (uint64_t i = 0; i < g->n_rows; i++)
        if (n == 0 || g->rows[i] != g->rows[n - 1])
            g->rows[n++] = g->rows[i];
    g->n_rows = n;
    for (uint64_t k = 0; k < n && rc == OC_OK; k++) {
        rc = oc_io_batch_add(h->disk.batch, h->disk.f, store_file_off(s, g->rows[k]), s->row_bytes,
                             g->data + k * s->row_bytes, err);
        if (rc == OC_OK && ++queued == h->run_rows) {
            rc = store_disk_run_counted(s, &h->disk, 0, err);
            queued = 0;
        }
    }
    if (rc)
        store_disk_discard(&h->disk);
    else if (queued)
        rc = store_disk_run_counted(s, &h->disk, 0, err);
    atomic_fetch_add(&h->read_bytes, st->read_bytes - read0);
    atomic_fetch_add(&h->n_reads, st->n_reads - n0);
    if (rc)
        oc_err_prefix(err, "store %s: hyperbatch of %" PRIu64 " rows", s->strat->name, n);
    return rc;
}

static int read_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct store_hyper *h = ctx;
    int rc = read_group(h, item, err);
    return rc ? rc : oc_stage_push(st, h->ready_q, item);
}

/* ---- lifetime ------------------------------------------------------------- */

int store_hyper_open(struct oc_store *s, uint64_t cap, uint32_t max_batches,
                     struct store_hyper **out, struct oc_err *err)
{
    struct store_hyper *h = oc_calloc(1, sizeof(*h), "store hyperbatches", err);
    int rc;
    *out = h;
    if (!h)
        return err ? err->status : OC_ERR_NOMEM;
    h->s = s;
    h->cap = cap;
    h->run_rows = run_rows(cap);
    h->max_batches = max_batches;
    atomic_init(&h->read_bytes, 0);
    atomic_init(&h->n_reads, 0);
    if ((rc = store_disk_open(s, 1, &h->disk, err)) ||
        (rc = oc_io_batch_reserve(h->disk.batch, h->run_rows, err)))
        return rc;
    if (!(h->sort_tmp = oc_alloc(cap * sizeof(uint64_t), "store hyperbatches: sort", err)))
        return err ? err->status : OC_ERR_NOMEM;
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct hyper_group *g = &h->groups[i];
        g->batches = oc_alloc(max_batches * sizeof(*g->batches), "store hyperbatches", err);
        g->rows = oc_alloc(cap * sizeof(uint64_t), "store hyperbatches: row ids", err);
        g->data = oc_alloc_aligned(cap * s->row_bytes, 64, "store hyperbatches: rows", err);
        if (!g->batches || !g->rows || !g->data)
            return err ? err->status : OC_ERR_NOMEM;
    }
    if ((rc = store_stages(s, &h->p, err)) ||
        (rc = oc_pipeline_queue(h->p, HYPER_GROUPS, &h->free_q, err)) ||
        (rc = oc_pipeline_queue(h->p, HYPER_GROUPS, &h->read_q, err)) ||
        (rc = oc_pipeline_queue(h->p, HYPER_GROUPS, &h->ready_q, err)))
        return rc;
    for (uint32_t i = 0; i < HYPER_GROUPS; i++)
        if (oc_queue_push(h->free_q, &h->groups[i]) != OC_OK)
            return oc_pipeline_status(h->p, err);
    if ((rc = oc_pipeline_stage(h->p, "hyperbatch read", 1, h->read_q, read_stage, h, NULL, err)))
        return rc;
    return oc_pipeline_start(h->p, err);
}

void store_hyper_free(struct store_hyper *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        oc_free(h->groups[i].batches);
        oc_free(h->groups[i].rows);
        oc_free(h->groups[i].data);
    }
    oc_free(h->sort_tmp);
    oc_free(h->src);
    store_disk_close(&h->disk);
    oc_free(h);
}

uint32_t store_hyper_lookahead(const struct store_hyper *h)
{
    /* a group being gathered, the next one filled, and the batch waiting for a free group */
    return h ? HYPER_GROUPS * h->max_batches + 2 : 0;
}

/* ---- prepare's side ------------------------------------------------------- */

static int close_group(struct store_hyper *h, struct oc_err *err)
{
    struct hyper_group *g = h->cur;
    h->cur = NULL;
    if (oc_queue_push(h->read_q, g) != OC_OK)
        return oc_pipeline_status(h->p, err);
    return OC_OK;
}

int store_hyper_begin(struct store_hyper *h, uint64_t epoch, uint64_t batch, uint64_t n_max,
                      int *staged, struct oc_err *err)
{
    int rc;
    if (h->cur && h->cur->n_rows + n_max > h->cap && (rc = close_group(h, err)))
        return rc;
    if (!h->cur) {
        void *got;
        if (oc_queue_pop(h->free_q, &got) != OC_OK)
            return oc_pipeline_status(h->p, err);
        h->cur = got;
        h->cur->n_batches = h->cur->next = 0;
        h->cur->n_rows = 0;
    }
    OC_ASSERT(h->cur->n_batches < h->max_batches);
    h->cur->batches[h->cur->n_batches++] = (struct hyper_entry){epoch, batch};
    *staged = h->cur->n_rows + n_max <= h->cap; /* else its gather reads its misses */
    return OC_OK;
}

void store_hyper_add(struct store_hyper *h, uint64_t row)
{
    OC_ASSERT(h->cur);
    if (h->cur->n_rows < h->cap) /* else (more misses than begun with) its gather reads it */
        h->cur->rows[h->cur->n_rows++] = row;
}

int store_hyper_flush(struct store_hyper *h, struct oc_err *err)
{
    return h->cur ? close_group(h, err) : OC_OK;
}

int store_hyper_end(struct store_hyper *h, struct oc_err *err)
{
    uint64_t per_epoch = h->s->n_plan_batches;
    h->count++;
    if (h->cur->n_batches == h->max_batches || (per_epoch && h->count % per_epoch == 0))
        return close_group(h, err);
    return OC_OK;
}

/* Whether a prepared batch's input id joins the group: a cache miss (under the read side). */
static int prepared_miss(const struct oc_store *s, const struct store_cache *c, uint64_t id)
{
    return id < s->n_nodes && store_cache_lookup(c, id) == STORE_NO_SLOT;
}

int store_hyper_prepare(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                        uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
                        struct oc_err *err)
{
    int staged, rc;
    uint64_t misses = 0;
    /* counted first, then appended, each pass under the read side, but not begin, which
       may wait for a free group: a give-back in between only turns hits into misses,
       which the group drops past its room and the gather reads itself */
    store_yield_read_lock(y);
    for (uint64_t i = 0; i < b->n_input; i++)
        misses += prepared_miss(s, y->cache, b->input_ids[i]);
    store_yield_read_unlock(y);
    if ((rc = store_hyper_begin(h, epoch, batch, misses, &staged, err)))
        return rc;
    store_yield_read_lock(y);
    for (uint64_t i = 0; staged && i < b->n_input; i++)
        if (prepared_miss(s, y->cache, b->input_ids[i]))
            store_hyper_add(h, store_row_of(s, b->input_ids[i]));
    store_yield_read_unlock(y);
    return store_hyper_end(h, err);
}

/* ---- gather's side -------------------------------------------------------- */

int store_hyper_take(struct store_hyper *h, uint64_t epoch, uint64_t batch, struct oc_err *err)
{
    if (!h->taken) {
        void *got;
        if (oc_queue_pop(h->ready_q, &got) != OC_OK)
            return oc_pipeline_status(h->p, err);
        h->taken = got;
    }
    const struct hyper_group *g = h->taken;
    OC_ASSERT(g->next < g->n_batches);
    if (g->batches[g->next].epoch != epoch || g->batches[g->next].batch != batch)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store %s: gather of epoch %" PRIu64 " batch %" PRIu64
                      " out of the prepared order (epoch %" PRIu64 " batch %" PRIu64 " is next)",
                      h->s->strat->name, epoch, batch, g->batches[g->next].epoch,
                      g->batches[g->next].batch);
    return OC_OK;
}

const void *store_hyper_row(const struct store_hyper *h, uint64_t row)
{
    const struct hyper_group *g = h->taken;
    OC_ASSERT(g);
    uint64_t k = oc_lower_bound_u64(g->rows, 0, g->n_rows, row);
    return k < g->n_rows && g->rows[k] == row ? g->data + k * h->s->row_bytes : NULL;
}

int store_hyper_done(struct store_hyper *h, struct oc_err *err)
{
    struct hyper_group *g = h->taken;
    if (++g->next < g->n_batches)
        return OC_OK;
    h->taken = NULL;
    if (oc_queue_push(h->free_q, g) != OC_OK)
        return oc_pipeline_status(h->p, err);
    return OC_OK;
}

static const void **hyper_src(struct store_hyper *h, uint64_t n, struct oc_err *err)
{
    if (n > h->cap_src) {
        uint64_t cap = n > 2 * h->cap_src ? n : 2 * h->cap_src;
        const void **p = oc_realloc(h->src, cap * sizeof(*p), "store hyperbatches: sources", err);
        if (!p)
            return NULL;
        h->src = p;
        h->cap_src = cap;
    }
    return h->src;
}

struct hyper_job {
    const struct oc_store *s;
    const void *const *src;
    float *out;
};

/* Rows from the cache or the group: converted; rows read for this gather: f16 widened. */
static void hyper_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct hyper_job *j = ctx;
    uint64_t dim = j->s->feat_dim;
    for (uint64_t i = lo; i < hi; i++) {
        if (j->src[i])
            store_row_to_f32(j->s->dtype, j->src[i], dim, j->out + i * dim);
        else if (j->s->dtype == OC_DTYPE_F16)
            store_row_widen_inplace(j->out + i * dim, dim);
    }
}

/* The taken group's batch: its rows from the cache behind y, the group, or d. */
static int gather_taken(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                        struct store_disk *d, const uint64_t *ids, uint64_t n, float *out,
                        struct oc_err *err)
{
    uint64_t hits = 0, direct = 0;
    int rc = store_yield_reserve(s, y, d, n, err);
    const void **src = rc ? NULL : hyper_src(h, n, err);
    if (!src)
        return rc ? rc : err ? err->status : OC_ERR_NOMEM;
    store_yield_read_lock(y);
    const struct store_cache *c = y->cache;
    for (uint64_t i = 0; i < n && rc == OC_OK; i++) {
        uint32_t slot = store_cache_lookup(c, ids[i]);
        if (slot != STORE_NO_SLOT) {
            src[i] = c->rows + (uint64_t)slot * s->row_bytes;
            hits++;
        } else if (!(src[i] = store_hyper_row(h, store_row_of(s, ids[i])))) {
            rc = store_disk_queue(s, d, ids[i], out + i * s->feat_dim, err); /* not staged */
            direct++;
        }
    }
    if (rc)
        store_disk_discard(d);
    else if (direct)
        rc = store_disk_run(s, d, err);
    struct hyper_job j = {s, src, out};
    if (rc == OC_OK)
        rc = store_for_rows(s->pool, n, hyper_copy, &j, err);
    store_yield_read_unlock(y);
    if (rc)
        return rc;
    s->stats.requested_disk_bytes += (n - hits) * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += hits;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += n - hits;
    return OC_OK;
}

int store_hyper_gather(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                       struct store_disk *d, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                       uint64_t n, float *out, struct oc_err *err)
{
    int rc;
    if ((rc = store_hyper_take(h, epoch, batch, err)) ||
        (rc = gather_taken(s, h, y, d, ids, n, out, err)))
        return rc;
    return store_hyper_done(h, err);
}

void store_hyper_stats(const struct store_hyper *h, struct oc_store_stats *out)
{
    if (!h)
        return;
    out->read_bytes += atomic_load(&h->read_bytes);
    out->n_reads += atomic_load(&h->n_reads);
    out->held_bytes += groups_bytes(h->s, h->cap, h->max_batches) +
                       atomic_load(&h->cap_src) * sizeof(*h->src) + store_disk_held_bytes(&h->disk);
}
