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
 * is an error naming it. Group states (under mu):
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

/* A group's state, under mu: what take may find in it. */
enum { HYPER_FREE, HYPER_STAGED, HYPER_TAKEN }; /* STAGED: being filled, or read */

struct hyper_entry {
    uint64_t epoch, batch;
    int taken; /* [mu] */
};

struct store_hyper_group {
    struct hyper_entry *batches; /* [mu] in prepare order; max_batches */
    uint32_t n_batches, n_done;  /* [mu] n_done: batches taken and done */
    int state;                   /* [mu] HYPER_FREE / STAGED / TAKEN */
    uint64_t *rows, n_rows;      /* rows of features.npy; ascending, unique once read */
    uint8_t *data;               /* n_rows rows as stored, in the order of rows */
    size_t row_bytes;
};

struct store_hyper {
    struct oc_store *s;
    uint64_t cap;         /* rows per group */
    uint64_t run_rows;    /* rows per run of the reader: min(cap, HYPER_RUN_ROWS) */
    uint32_t max_batches; /* batches per group */
    struct store_hyper_group groups[HYPER_GROUPS];
    uint64_t *sort_tmp; /* the read stage's radix scratch (cap) */
    struct store_disk disk;
    struct oc_pipeline *p;
    struct oc_queue *free_q, *read_q, *ready_q;
    /* prepare's side */
    struct store_hyper_group *cur;
    uint64_t count; /* batches prepared since open (epochs end at multiples of n_plan_batches) */
    /* the gathers' side (take and done: any threads) */
    pthread_mutex_t mu;       /* a leaf lock: no queue call is made with it held */
    pthread_cond_t cv;        /* a group was taken from ready_q, or its pop failed */
    int popping;              /* [mu] a taker waits on ready_q */
    const void **src;         /* store_hyper_gather's (one thread) */
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

static int read_group(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err)
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
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if ((rc = store_disk_open(s, 1, &h->disk, err)) ||
        (rc = oc_io_batch_reserve(h->disk.batch, h->run_rows, err)))
        return rc;
    if (!(h->sort_tmp = oc_alloc(cap * sizeof(uint64_t), "store hyperbatches: sort", err)))
        return err ? err->status : OC_ERR_NOMEM;
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct store_hyper_group *g = &h->groups[i];
        g->batches = oc_alloc(max_batches * sizeof(*g->batches), "store hyperbatches", err);
        g->rows = oc_alloc(cap * sizeof(uint64_t), "store hyperbatches: row ids", err);
        g->data = oc_alloc_aligned(cap * s->row_bytes, 64, "store hyperbatches: rows", err);
        g->row_bytes = s->row_bytes;
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
    pthread_mutex_destroy(&h->mu); /* initialized right after h's allocation */
    pthread_cond_destroy(&h->cv);
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
    if (h->cur && h->cur->n_rows + n_max > h->cap && (rc = close_group(h, err)))
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
    OC_ASSERT(h->cur->n_batches < h->max_batches);
    pthread_mutex_lock(&h->mu); /* takers look for their batch in it */
    h->cur->batches[h->cur->n_batches++] = (struct hyper_entry){epoch, batch, 0};
    pthread_mutex_unlock(&h->mu);
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
                                            struct hyper_entry **entry)
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
                     struct store_hyper_group **out, struct oc_err *err)
{
    struct hyper_entry *e = NULL;
    struct store_hyper_group *g;
    int rc = OC_OK;
    *out = NULL;
    pthread_mutex_lock(&h->mu);
    while ((g = find_batch(h, epoch, batch, &e)) && g->state != HYPER_TAKEN && rc == OC_OK)
        rc = pop_ready(h);
    if (g && rc == OC_OK) {
        e->taken = 1;
        *out = g;
    }
    pthread_mutex_unlock(&h->mu);
    if (rc)
        return oc_pipeline_status(h->p, err);
    if (!g)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store %s: epoch %" PRIu64 " batch %" PRIu64
                      " is not staged in a hyperbatch (never prepared, or taken already)",
                      h->s->strat->name, epoch, batch);
    return OC_OK;
}

const void *store_hyper_row(const struct store_hyper_group *g, uint64_t row)
{
    uint64_t k = oc_lower_bound_u64(g->rows, 0, g->n_rows, row);
    return k < g->n_rows && g->rows[k] == row ? g->data + k * g->row_bytes : NULL;
}

int store_hyper_done(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err)
{
    pthread_mutex_lock(&h->mu);
    OC_ASSERT(g->state == HYPER_TAKEN && g->n_done < g->n_batches);
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

/* A batch of taken group hg: its rows from the cache behind y, the group, or d. */
static int gather_taken(struct oc_store *s, struct store_hyper *h,
                        const struct store_hyper_group *hg, struct store_yield *y,
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
        } else if (!(src[i] = store_hyper_row(hg, store_row_of(s, ids[i])))) {
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
    struct store_hyper_group *hg;
    int rc = store_hyper_take(h, epoch, batch, &hg, err);
    if (rc)
        return rc;
    if ((rc = gather_taken(s, h, hg, y, d, ids, n, out, err)))
        return rc;
    return store_hyper_done(h, hg, err);
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
