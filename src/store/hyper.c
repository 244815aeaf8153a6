/*
 * hyper.c — hyperbatches (AGNES, KDD'26): the misses of the next batches of
 * the plan, grouped, read in one block pass ahead of their gathers. A batch
 * read alone asks for its missed rows one page each, at the disk's random
 * rate; the misses of K batches together are dense enough in the file that
 * the block reader (io/probe.c's crossover) merges them into long extents,
 * reading the gaps along, at the disk's sequential rate.
 *
 *   prepare (sample stage, plan order)        read stage (1 thread)          gathers (take .. done)
 *   free_q ─► group: each batch's missed rows ─► read_q ─► sort, dedupe, ─► ready_q ─► rows from
 *             appended; closed at K batches,              block pass into            the group; after
 *             when full, or at the epoch's end            the group's rows           its last batch ─► free_q
 *
 * Two groups circulate: one is read (or waits to be) while the other's
 * batches are gathered, so the reads of batches k+1 .. 2K overlap the
 * training of batches 1 .. K. A group holds up to cap rows (ids of file
 * rows, ascending after the read, and the rows as stored); a batch whose
 * misses do not fit an empty group is not staged (its gather reads them).
 *
 * Takes: a batch's take finds the group staging it (the groups' batch lists,
 * under mu) and, if that group is not read yet, waits for it: one taker at a
 * time pops ready_q, whose groups come in the order they were closed, marks
 * the group it gets TAKEN and wakes the others (cv). So takers may be several
 * threads, in any order within the groups being gathered (gnndrive's
 * extractors), or one thread in plan order (static, helios, ginex: one
 * gather lane). A group counts its batches done; the last done gives it
 * back to free_q. A batch no group stages (never prepared, or taken already)
 * is an error naming it.
 *
 * Fed groups (shape.fed: on disk, or over an access map): the pipeline's
 * slots hold too few batches, or none, so the groups' own feeder (feed.c)
 * samples the plan again on its own thread and prepares each batch through
 * the strategy's fill function; a take first waits until the feeder got to
 * its batch. Group states (under mu):
 *
 *   FREE ──begin pops it (free_q)──► STAGED ──a taker pops it (ready_q)──► TAKEN
 *     ▲                              (filled, closed, read)                  │
 *     └───────────────────── its last batch done (pushed to free_q) ─────────┘
 *
 * Place in the data flow: store, below the strategies that stage misses
 * (static and helios, whose batch pipeline shows them each sampled batch;
 * gnndrive, whose sampled hook stages the batches it feeds its extractors,
 * the misses of its buffer; ginex, whose loader knows each coming batch's
 * planned misses); on store_disk (rows.c) and the store's pipeline
 * (store_stages).
 * Thread-safety: prepare's side (cur, count, a group's rows while STAGED)
 * belongs to the sampling (or loading) thread, then the read stage; mu (a
 * leaf: no queue call is made with it held) guards the groups' batch
 * lists, states and done counts and the popping flag; a TAKEN group's rows
 * are read-only to its takers (mu orders the hand-over from the popping
 * taker); store_hyper_gather's sources (src) belong to its one thread; the
 * read counters and takes are atomics; the feeder's stage is the prepare
 * side of fed groups. Errors in the read stage fail the pipeline,
 * whose queues close, so both sides see them at their next pop.
 * Ownership: the hyperbatch owns its groups, reader, feeder and queues'
 * items; their stages run on the store's pipeline, joined before
 * store_hyper_free.
 */
#include <inttypes.h>
#include <string.h>

#include "store/hyper_group_int.h"

static uint64_t run_rows(uint64_t cap)
{
    return cap < HYPER_RUN_ROWS ? cap : HYPER_RUN_ROWS;
}

/* The struct, the groups and the sort scratch (what open allocates besides its reader, or
   on disk besides hyper_disk_fixed_bytes): in memory a group holds its rows, on disk their ids. */
static uint64_t groups_bytes(const struct oc_store *s, const struct store_hyper_shape *sh)
{
    uint64_t group = sh->cap * (sizeof(uint64_t) + (sh->disk ? 0 : s->row_bytes)) +
                     sh->max_batches * sizeof(struct store_hyper_batch);
    return sizeof(struct store_hyper) + HYPER_GROUPS * group;
}

/* Rows the read stage's sort scratch holds at open: a group's, or on disk a batch's (grown
   past it by a larger batch). */
static uint64_t sort_rows(const struct store_hyper_shape *sh)
{
    return sh->disk ? sh->batch_rows : sh->cap;
}

static uint64_t hyper_bytes(const struct oc_store *s, const struct store_hyper_shape *sh)
{
    uint64_t groups = groups_bytes(s, sh) + sort_rows(sh) * sizeof(uint64_t);
    if (sh->disk)
        return groups + hyper_disk_fixed_bytes(s, sh);
    return groups + STORE_DISK_BOUNCE_BYTES + run_rows(sh->cap) * STORE_ROW_SCRATCH_BYTES;
}

/* The sampled batches the pipeline's slots hold for the two groups (none when fed). */
static uint64_t hyper_slot_bytes(const struct store_hyper_shape *sh)
{
    return sh->fed ? 0 : 2ull * sh->max_batches * sh->batch_rows * STORE_HYPER_SLOT_ROW_BYTES;
}

static uint32_t clamp_batches(uint64_t k, uint32_t most)
{
    return k < 2 ? 2 : k > most ? most : (uint32_t)k;
}

/*
 * In memory: rows per group when the share of mem_bytes stages two groups
 * (each row: its id, the row, and the read stage's sort scratch), at least
 * one batch's rows (a share too small for that is refused by the strategy's
 * budget check); batches per group: two per batch bound of rows (a hit ratio
 * up to a half fills a group), at most STORE_HYPER_MAX_BATCHES. On disk:
 * batches per group when the share, past the fixed buffers, holds per batch
 * the ids of a batch bound of rows in both groups and the sort scratch, and
 * the two sampled batches a group's batch keeps in the pipeline slots (at
 * most STORE_HYPER_MAX_DISK_BATCHES); rows per group: that many batch bounds.
 */
uint64_t store_hyper_size(const struct oc_store *s, double share, uint64_t mem_bytes,
                          uint64_t batch_rows, struct store_hyper_shape *sh)
{
    uint64_t budget = (uint64_t)(share * (double)mem_bytes);
    if (batch_rows == 0)
        batch_rows = 1;
    sh->batch_rows = batch_rows;
    if (sh->takers == 0)
        sh->takers = 1;
    if (sh->disk) {
        sh->part_bytes = hyper_disk_part_bytes(s, budget);
        sh->max_batches = STORE_HYPER_MAX_DISK_BATCHES; /* bounds the offsets for the sizing */
        uint64_t fixed = hyper_disk_fixed_bytes(s, sh) + batch_rows * sizeof(uint64_t); /* sort */
        uint64_t per_batch = /* its ids in both groups, its sampled batch in both (unless fed) */
            batch_rows * (2 * sizeof(uint64_t) + (sh->fed ? 0 : 2ull * STORE_HYPER_SLOT_ROW_BYTES));
        sh->max_batches = clamp_batches(budget > fixed ? (budget - fixed) / per_batch : 0,
                                        STORE_HYPER_MAX_DISK_BATCHES);
        sh->cap = sh->max_batches * batch_rows;
    } else {
        uint64_t per_row = 2 * (sizeof(uint64_t) + s->row_bytes) + sizeof(uint64_t);
        uint64_t c = budget / per_row;
        sh->cap = c < batch_rows ? batch_rows : c;
        sh->max_batches = clamp_batches(2 * sh->cap / batch_rows, STORE_HYPER_MAX_BATCHES);
    }
    /* and the sampled batches the pipeline slots the two groups hold beyond its own */
    return hyper_bytes(s, sh) + hyper_slot_bytes(sh);
}

int store_hyper_disk_alone(const struct oc_store *s, struct oc_err *err)
{
    return OC_ERR(err, OC_ERR_ARG,
                  "store %s: --hyperbatch-disk stages hyperbatch groups, and there are none "
                  "without --hyperbatch F",
                  s->strat->name);
}

/* ---- the read stage ------------------------------------------------------- */

static int read_group(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err)
{
    struct oc_store *s = h->s;
    uint64_t n = 0, queued = 0;
    const struct oc_io_stats *st = oc_io_batch_stats(h->disk_reader.batch);
    uint64_t read0 = st->read_bytes, n0 = st->n_reads;
    int rc = OC_OK;
    oc_sort_u64(g->rows, h->sort_tmp, g->n_rows);
    for (uint64_t i = 0; i < g->n_rows; i++)
        if (n == 0 || g->rows[i] != g->rows[n - 1])
            g->rows[n++] = g->rows[i];
    g->n_rows = n;
    for (uint64_t k = 0; k < n && rc == OC_OK; k++) {
        rc = oc_io_batch_add(h->disk_reader.batch, h->disk_reader.f, store_file_off(s, g->rows[k]),
                             s->row_bytes, g->data + k * s->row_bytes, err);
        if (rc == OC_OK && ++queued == h->run_rows) {
            rc = store_disk_run_counted(s, &h->disk_reader, 0, err);
            queued = 0;
        }
    }
    if (rc)
        store_disk_discard(&h->disk_reader);
    else if (queued)
        rc = store_disk_run_counted(s, &h->disk_reader, 0, err);
    atomic_fetch_add(&h->read_bytes, st->read_bytes - read0);
    atomic_fetch_add(&h->n_reads, st->n_reads - n0);
    if (rc)
        oc_err_prefix(err, "store %s: hyperbatch of %" PRIu64 " rows", s->strat->name, n);
    return rc;
}

static int read_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct store_hyper *h = ctx;
    int rc = h->shape.disk ? hyper_disk_pack(h, item, err) : read_group(h, item, err);
    return rc ? rc : oc_stage_push(st, h->ready_q, item);
}

/* ---- lifetime ------------------------------------------------------------- */

int store_hyper_open(struct oc_store *s, const struct store_hyper_shape *sh,
                     const struct oc_store_config *cfg, store_feed_fn fill,
                     struct store_hyper **out, struct oc_err *err)
{
    struct store_hyper *h = oc_calloc(1, sizeof(*h), "store hyperbatches", err);
    uint64_t cap = sh->cap;
    int rc;
    *out = h;
    if (!h)
        return err ? err->status : OC_ERR_NOMEM;
    h->s = s;
    h->shape = *sh;
    h->run_rows = run_rows(cap);
    atomic_init(&h->read_bytes, 0);
    atomic_init(&h->n_reads, 0);
    atomic_init(&h->write_bytes, 0);
    atomic_init(&h->n_taken, 0);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (h->shape.disk)
        rc = hyper_disk_open(h, cfg->plan_dir, err);
    else if ((rc = store_disk_open(s, 1, &h->disk_reader, err)) == OC_OK)
        rc = oc_io_batch_reserve(h->disk_reader.batch, h->run_rows, err);
    if (rc)
        return rc;
    atomic_init(&h->cap_sort, sort_rows(sh));
    if (!(h->sort_tmp =
              oc_alloc(sort_rows(sh) * sizeof(uint64_t), "store hyperbatches: sort", err)))
        return err ? err->status : OC_ERR_NOMEM;
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct store_hyper_group *g = &h->groups[i];
        g->batches =
            oc_alloc(h->shape.max_batches * sizeof(*g->batches), "store hyperbatches", err);
        g->rows = oc_alloc(cap * sizeof(uint64_t), "store hyperbatches: row ids", err);
        g->data = h->shape.disk
                      ? NULL
                      : oc_alloc_aligned(cap * s->row_bytes, 64, "store hyperbatches: rows", err);
        g->row_bytes = s->row_bytes;
        if (!g->batches || !g->rows || (!h->shape.disk && !g->data))
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
    char b_s[32];
    oc_log(OC_LOG_INFO,
           "store %s: hyperbatches of up to %u batches and %" PRIu64 " missed rows%s (%s for two "
           "groups and their %s%s)",
           s->strat->name, sh->max_batches, cap, h->shape.disk ? " staged on disk" : "",
           oc_format_size(hyper_bytes(s, sh) + hyper_slot_bytes(sh), b_s, sizeof(b_s)),
           h->shape.disk ? "packing scan" : "reader",
           sh->fed ? "" : ", with the pipeline's slots of their batches");
    if ((rc = oc_pipeline_start(h->p, err)))
        return rc;
    /* after the read stage: the feeder's fill waits on its free groups */
    return sh->fed ? store_feed_start(s, cfg, fill, &h->feed, err) : OC_OK;
}

void store_hyper_free(struct store_hyper *h)
{
    if (!h)
        return;
    if (h->feed) /* a fed one is freed by its strategy's free, so h->s is still there */
        store_feed_close(h->feed, h->s->strat->name, "hyperbatch groups",
                         atomic_load_explicit(&h->n_taken, memory_order_relaxed), 0);
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        for (uint32_t k = 0; h->groups[i].batches && k < h->groups[i].n_batches; k++)
            hyper_disk_done(&h->groups[i].batches[k]); /* a take an error left not done */
        oc_free(h->groups[i].batches);
        oc_free(h->groups[i].rows);
        oc_free(h->groups[i].data);
    }
    oc_free(h->sort_tmp);
    oc_free(h->src);
    if (h->shape.disk)
        hyper_disk_close(h);
    store_disk_close(&h->disk_reader); /* zeroed on disk: a no-op */
    pthread_mutex_destroy(&h->mu);     /* initialized right after h's allocation */
    pthread_cond_destroy(&h->cv);
    oc_free(h);
}

int store_hyper_fed(const struct store_hyper *h)
{
    return h && h->shape.fed;
}

uint32_t store_hyper_lookahead(const struct store_hyper *h)
{
    /* a group being gathered, the next one filled, and the batch waiting for a free group */
    return h && !h->shape.fed ? HYPER_GROUPS * h->shape.max_batches + 2 : 0;
}

/* ---- prepare's side ------------------------------------------------------- */

static int close_group(struct store_hyper *h, struct oc_err *err)
{
    struct store_hyper_group *g = h->cur;
    h->cur = NULL;
    if (oc_queue_push(h->read_q, g) != OC_OK)
        return oc_pipeline_status(h->p, err);
    return OC_OK;
}

int store_hyper_begin(struct store_hyper *h, uint64_t epoch, uint64_t batch, uint64_t n_max,
                      int *staged, struct oc_err *err)
{
    int rc;
    if (h->cur && h->cur->n_rows + n_max > h->shape.cap && (rc = close_group(h, err)))
        return rc;
    if (!h->cur) {
        void *got;
        if (oc_queue_pop(h->free_q, &got) != OC_OK)
            return oc_pipeline_status(h->p, err);
        h->cur = got;
        h->cur->n_rows = 0;
        pthread_mutex_lock(&h->mu);
        h->cur->n_batches = h->cur->n_done = 0;
        h->cur->state = HYPER_STAGED;
        pthread_mutex_unlock(&h->mu);
    }
    OC_ASSERT(h->cur->n_batches < h->shape.max_batches);
    if (h->shape.disk) /* where its rows start in the group's */
        h->cur->boff[h->cur->n_batches] = h->cur->n_rows;
    pthread_mutex_lock(&h->mu); /* takers look for their batch in it */
    h->cur->batches[h->cur->n_batches++] =
        (struct store_hyper_batch){h->cur, epoch, batch, 0, NULL};
    pthread_mutex_unlock(&h->mu);
    *staged = h->cur->n_rows + n_max <= h->shape.cap; /* else its gather reads its misses */
    return OC_OK;
}

void store_hyper_add(struct store_hyper *h, uint64_t row)
{
    OC_ASSERT(h->cur);
    if (h->cur->n_rows < h->shape.cap) /* else (more misses than begun with) its gather reads it */
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
    if (h->shape.disk) /* and where they end */
        h->cur->boff[h->cur->n_batches] = h->cur->n_rows;
    if (h->cur->n_batches == h->shape.max_batches || (per_epoch && h->count % per_epoch == 0))
        return close_group(h, err);
    return OC_OK;
}

int store_hyper_prepare_by(struct oc_store *s, struct store_hyper *h,
                           const struct store_hyper_lookup *lk, uint64_t epoch, uint64_t batch,
                           const struct oc_sample_batch *b, struct oc_err *err)
{
    int staged, rc;
    uint64_t misses = 0;
    /* counted first, then appended, each pass under the lookup's lock, but not begin, which
       may wait for a free group: a row evicted in between only turns a hit into a miss,
       which the group drops past its room and the gather reads itself */
    lk->lock(lk->ctx);
    for (uint64_t i = 0; i < b->n_input; i++)
        misses += b->input_ids[i] < s->n_nodes && lk->miss(lk->ctx, b->input_ids[i]);
    lk->unlock(lk->ctx);
    if ((rc = store_hyper_begin(h, epoch, batch, misses, &staged, err)))
        return rc;
    lk->lock(lk->ctx);
    for (uint64_t i = 0; staged && i < b->n_input; i++)
        if (b->input_ids[i] < s->n_nodes && lk->miss(lk->ctx, b->input_ids[i]))
            store_hyper_add(h, store_row_of(s, b->input_ids[i]));
    lk->unlock(lk->ctx);
    return store_hyper_end(h, err);
}

/* store_cache's lookup under a yield's read side (static, helios). */
static void yield_lock(void *y)
{
    store_yield_read_lock(y);
}

static void yield_unlock(void *y)
{
    store_yield_read_unlock(y);
}

static int cache_miss(void *y, uint64_t id)
{
    return store_cache_lookup(((struct store_yield *)y)->cache, id) == STORE_NO_SLOT;
}

int store_hyper_prepare(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                        uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
                        struct oc_err *err)
{
    const struct store_hyper_lookup lk = {y, yield_lock, yield_unlock, cache_miss};
    return store_hyper_prepare_by(s, h, &lk, epoch, batch, b, err);
}

int store_hyper_prepare_bits(struct oc_store *s, struct store_hyper *h, uint64_t epoch,
                             uint64_t batch, const struct oc_sample_batch *b, const uint8_t *bits,
                             struct oc_err *err)
{
    uint64_t n = b->n_input, misses = 0;
    int rc, staged;
    for (uint64_t k = 0; k < (n + 7) / 8; k++)
        misses += (uint64_t)__builtin_popcount(bits[k]);
    if ((rc = store_hyper_begin(h, epoch, batch, misses, &staged, err)))
        return rc;
    for (uint64_t j = 0; staged && j < n; j++)
        if (oc_bit_get(bits, j))
            store_hyper_add(h, store_row_of(s, b->input_ids[j]));
    return store_hyper_end(h, err);
}

/* ---- gather's side -------------------------------------------------------- */

/* With mu held: the group staging (epoch, batch) not taken yet, and its entry; NULL if none. */
static struct store_hyper_group *find_batch(struct store_hyper *h, uint64_t epoch, uint64_t batch,
                                            struct store_hyper_batch **entry)
{
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct store_hyper_group *g = &h->groups[i];
        for (uint32_t k = 0; g->state != HYPER_FREE && k < g->n_batches; k++)
            if (!g->batches[k].taken && g->batches[k].epoch == epoch &&
                g->batches[k].batch == batch) {
                *entry = &g->batches[k];
                return g;
            }
    }
    return NULL;
}

/*
 * With mu held, the batch's group staged but not taken: one taker at a time
 * pops ready_q (mu let go meanwhile; the groups come in the order they were
 * closed, so the one it pops may be another taker's), the others wait for it.
 */
static int pop_ready(struct store_hyper *h)
{
    if (h->popping) {
        pthread_cond_wait(&h->cv, &h->mu);
        return OC_OK;
    }
    void *got;
    h->popping = 1;
    pthread_mutex_unlock(&h->mu);
    int rc = oc_queue_pop(h->ready_q, &got);
    pthread_mutex_lock(&h->mu);
    h->popping = 0;
    if (rc == OC_OK)
        ((struct store_hyper_group *)got)->state = HYPER_TAKEN;
    pthread_cond_broadcast(&h->cv);
    return rc;
}

int store_hyper_take(struct store_hyper *h, uint64_t epoch, uint64_t batch,
                     struct store_hyper_batch **out, struct oc_err *err)
{
    struct store_hyper_batch *e = NULL;
    struct store_hyper_group *g;
    int rc = OC_OK;
    *out = NULL;
    /* fed: the feeder, not this batch's sampling, prepared it, and may not have yet */
    if (h->feed && (rc = store_feed_wait(h->feed, epoch, batch, err)))
        return rc;
    pthread_mutex_lock(&h->mu);
    while ((g = find_batch(h, epoch, batch, &e)) && g->state != HYPER_TAKEN && rc == OC_OK)
        rc = pop_ready(h);
    if (g && rc == OC_OK)
        e->taken = 1;
    pthread_mutex_unlock(&h->mu);
    if (rc)
        return oc_pipeline_status(h->p, err);
    if (!g)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store %s: epoch %" PRIu64 " batch %" PRIu64
                      " is not staged in a hyperbatch (never prepared, or taken already)",
                      h->s->strat->name, epoch, batch);
    if (h->shape.disk && (rc = hyper_disk_take(h, e, err))) {
        store_hyper_done(h, e, NULL); /* the group still comes back */
        return rc;
    }
    atomic_fetch_add_explicit(&h->n_taken, 1, memory_order_relaxed);
    *out = e;
    return OC_OK;
}

const void *store_hyper_row(const struct store_hyper_batch *t, uint64_t row)
{
    const struct store_hyper_group *g = t->g;
    if (g->data == NULL) /* on disk */
        return hyper_disk_row(t, row);
    uint64_t k = oc_lower_bound_u64(g->rows, 0, g->n_rows, row);
    return k < g->n_rows && g->rows[k] == row ? g->data + k * g->row_bytes : NULL;
}

int store_hyper_done(struct store_hyper *h, struct store_hyper_batch *t, struct oc_err *err)
{
    struct store_hyper_group *g = t->g;
    hyper_disk_done(t); /* its chunk, if any */
    pthread_mutex_lock(&h->mu);
    OC_ASSERT(g->state == HYPER_TAKEN && g->n_done < g->n_batches && t->taken);
    int last = ++g->n_done == g->n_batches;
    if (last)
        g->state = HYPER_FREE; /* no taker finds it from here on */
    pthread_mutex_unlock(&h->mu);
    if (last && oc_queue_push(h->free_q, g) != OC_OK) /* room for every group: never waits */
        return oc_pipeline_status(h->p, err);
    return OC_OK;
}

static const void **hyper_src(struct store_hyper *h, uint64_t n, struct oc_err *err)
{
    uint64_t cap = atomic_load(&h->cap_src);
    if (oc_grow_by(&h->src, &cap, n, sizeof(*h->src), OC_GROW_TWICE, "store hyperbatches: sources",
                   err))
        return NULL;
    atomic_store(&h->cap_src, cap);
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

/* Taken batch hb: its rows from the cache behind y, its group, or d. */
static int gather_taken(struct oc_store *s, struct store_hyper *h,
                        const struct store_hyper_batch *hb, struct store_yield *y,
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
        } else if (!(src[i] = store_hyper_row(hb, store_row_of(s, ids[i])))) {
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
    if (rc == OC_OK)
        store_count_gather(s, n, n - hits);
    return rc;
}

int store_hyper_gather(struct oc_store *s, struct store_hyper *h, struct store_yield *y,
                       struct store_disk *d, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                       uint64_t n, float *out, struct oc_err *err)
{
    struct store_hyper_batch *hb;
    int rc = store_hyper_take(h, epoch, batch, &hb, err);
    if (rc)
        return rc;
    if ((rc = gather_taken(s, h, hb, y, d, ids, n, out, err)))
        return rc;
    return store_hyper_done(h, hb, err);
}

void store_hyper_stats(const struct store_hyper *h, struct oc_store_stats *out)
{
    if (!h)
        return;
    out->read_bytes += atomic_load(&h->read_bytes);
    out->n_reads += atomic_load(&h->n_reads);
    out->plan_write_bytes += atomic_load(&h->write_bytes);
    const struct store_hyper_shape *sh = &h->shape;
    out->held_bytes +=
        groups_bytes(h->s, sh) + atomic_load(&h->cap_sort) * sizeof(uint64_t) +
        atomic_load(&h->cap_src) * sizeof(*h->src) +
        (h->shape.disk ? hyper_disk_fixed_bytes(h->s, sh) : store_disk_held_bytes(&h->disk_reader));
}
