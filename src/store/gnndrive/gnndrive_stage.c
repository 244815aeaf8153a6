/*
 * gnndrive_stage.c — the `gnndrive` pipeline: its feeding hook (called by
 * the batch pipeline's sample stage) and two stages, extract (E threads)
 * and release (one thread), connected by bounded queues of batch records
 * (the trainer side is oc_store_gather_batch, in gnndrive_serve.c, called by the
 * fetch stage). Stages and queues belong to the store's pipeline
 * (store_stages: the training pipeline given in the store's config, or one
 * the store owns).
 *
 *   prepare    the batch pipeline samples each batch of the plan once, in
 *              plan order, and shows it here: (--hyperbatch: its rows
 *              without a slot staged in a group, store/hyper.c) its input
 *              ids go into a free record (waiting for the release stage if
 *              none is) ─► extract_q
 *   extract    takes one batch at a time (and its hyperbatch group, whose
 *              rows it copies instead of reading): waits for its reservation turn,
 *              looks up every row (reuse a valid slot, wait-list a row being
 *              loaded, take the LRU standby slot for a miss), hands the
 *              turn on, reads the misses (rows placed as their reads
 *              complete), waits for its wait-listed rows ─► done_q
 *   release    drops the references of a batch the trainer has copied;
 *              slots reaching 0 join the standby list ─► free_q
 *
 * Why reservation goes in plan order (the ticket reserve_seq): a batch then
 * never waits for slots held by a later batch, so the earliest unfinished
 * batch can always be finished once the trainer has released the earlier
 * ones, and a buffer holding one batch at its bound is enough to never
 * deadlock, whatever the number of extractors and in plan order or
 * reordered. Open also asks for extractors x measured batch rows, so that
 * every extractor can hold a batch at once. Rows a batch finds LOADING
 * belong to an earlier batch's reads, which finish without waiting for
 * anything. A batch's hyperbatch group is taken before its turn, holding
 * no slot: the group closes once its last batch is fed, which the records
 * for two groups (gnndrive.c) let the sampler do.
 *
 * Errors and cancellation: a failing extract returns its error (naming the
 * batch, and the file and offset of a failed read) to the pipeline, whose
 * first error wins and cancels it: every queue closes, so blocked pushes and
 * pops return, and the cancel hook (gd_on_cancel) sets stop under gd->mu and
 * wakes every condition-variable wait (reservation turn, free slots, loading
 * rows). The same happens when anything else cancels the pipeline (the
 * trainer's error, Ctrl-C, another stage's error, oc_pipeline_free). The
 * trainer sees the error at its next call; the pipeline's owner joins the
 * threads.
 *
 * Place in the data flow: store, below gnndrive.c.
 * Thread-safety: see gnndrive_int.h (gd->mu is a leaf lock; queue calls are
 * never made with it held, nor is the pipeline failed or cancelled with it
 * held). n_prepared (atomic) is written by the feeding thread only.
 * Ownership: an extractor state belongs to the extract thread that popped it
 * from ex_q until it pushes it back; a record belongs to whichever stage
 * popped it last.
 */
#include <inttypes.h>
#include <unistd.h>

#include "store/gnndrive/gnndrive_int.h"

#define GD_RESERVE_CHUNK 4096u /* rows reserved per hold of gd->mu */

static int stopped(struct gd_store *g)
{
    return atomic_load_explicit(&g->stop, memory_order_acquire);
}

void gd_delay(struct gd_store *g, struct oc_rng *rng)
{
    unsigned d = atomic_load_explicit(&g->delay_us, memory_order_relaxed);
    if (d)
        usleep((useconds_t)oc_rng_below(rng, d));
}

static void wake_all(struct gd_store *g)
{
    pthread_cond_broadcast(&g->ticket_cv);
    pthread_cond_broadcast(&g->slot_cv);
    pthread_cond_broadcast(&g->loaded_cv);
}

/* Runs once when the pipeline is cancelled, on the cancelling thread (which holds no gd->mu). */
static void gd_on_cancel(void *ctx)
{
    struct gd_store *g = ctx;
    gd_lock(g);
    atomic_store_explicit(&g->stop, 1, memory_order_release);
    wake_all(g);
    gd_unlock(g);
}

/* ---- feeding the extractors (the batch pipeline's sample stage) ---------------- */

/* --hyperbatch: a fed batch's misses are its rows without a slot (store_hyper_prepare_by). */
static void hyper_lock(void *g)
{
    gd_lock(g);
}

static void hyper_unlock(void *g)
{
    gd_unlock(g);
}

static int hyper_miss(void *g, uint64_t id)
{
    return ((struct gd_store *)g)->buf.c.table[id] == GD_NONE;
}

static void no_lock(void *g)
{
    (void)g;
}

static int every_row(void *g, uint64_t id)
{
    (void)g;
    (void)id;
    return 1;
}

/* --hyperbatch-disk, the feeder's batch: the buffer it will meet is a group or two ahead,
   unknown here, so every row is staged (a row with a slot by then is not copied). */
int gd_stage_rows(struct oc_store *s, uint64_t epoch, uint64_t batch,
                  const struct oc_sample_batch *b, struct oc_err *err)
{
    struct gd_store *g = s->impl;
    const struct store_hyper_lookup lk = {g, no_lock, no_lock, every_row};
    return store_hyper_prepare_by(s, g->hyper, &lk, epoch, batch, b, err);
}

int gd_prepare(struct oc_store *s, uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
               struct oc_err *err)
{
    struct gd_store *g = s->impl;
    if (!g->z.pipeline || epoch < g->first_epoch || epoch >= g->n_epochs || batch >= g->n_batches)
        return OC_OK; /* not in the plan: its gather reads directly */
    uint64_t seq = (epoch - g->first_epoch) * g->n_batches + batch;
    uint64_t next = atomic_load_explicit(&g->n_prepared, memory_order_relaxed);
    if (seq != next) /* out of plan order: reservation goes by seq, so read it directly */
        return g->hyper && !store_hyper_fed(g->hyper) ? store_hyper_flush(g->hyper, err)
                                                      : OC_OK; /* staged ones are read */
    if (b->n_input <= g->buf.c.n) { /* slots given back under the budget: this batch's first */
        int rc = gd_take_back(g, b->n_input, err);
        if (rc)
            return oc_err_prefix(err, "batch %" PRIu64 " of epoch %" PRIu64, batch, epoch);
    }
    if (b->n_input > g->buf.c.n) {
        char need_s[32], have_s[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store gnndrive: batch %" PRIu64 " of epoch %" PRIu64 " has %" PRIu64
                      " input rows (%s as stored), more than the %" PRIu64
                      " row slots the store's budget of %s buys (every row of a batch is held "
                      "at once); raise --mem-budget",
                      batch, epoch, b->n_input,
                      oc_format_size(b->n_input * g->s->row_bytes, need_s, sizeof(need_s)),
                      g->buf.c.n, oc_format_size(g->mem_bytes, have_s, sizeof(have_s)));
    }
    void *item;
    const struct store_hyper_lookup lk = {g, hyper_lock, hyper_unlock, hyper_miss};
    int rc = g->hyper && !store_hyper_fed(g->hyper)
                 ? store_hyper_prepare_by(s, g->hyper, &lk, epoch, batch, b, err)
                 : OC_OK; /* with a feeder of its own, staged ahead */
    if (rc)
        return rc;
    if (stopped(g) || oc_queue_pop(g->free_q, &item) != OC_OK)
        return store_stages_error(g->s, err);
    struct gd_rec *r = item;
    void *const rows[] = {&r->ids, &r->slots};
    const size_t row_bytes[] = {sizeof(*r->ids), sizeof(*r->slots)};
    rc = oc_grow_all(rows, row_bytes, 2, &r->cap, b->n_input, GD_GROW,
                     "store gnndrive: batch record", err);
    if (rc) {
        oc_queue_push(g->free_q, r); /* back for the cleanup; the error below stops the run */
        oc_err_prefix(err, "batch %" PRIu64 " of epoch %" PRIu64 " (%" PRIu64 " input rows)", batch,
                      epoch, b->n_input);
        return rc;
    }
    gd_delay(g, &g->sampler_rng);
    r->seq = seq;
    r->epoch = epoch;
    r->batch = batch;
    r->n_rows = b->n_input;
    memcpy(r->ids, b->input_ids, r->n_rows * sizeof(uint64_t));
    r->n_hits = r->n_standby_hits = r->n_waited = r->n_misses = 0;
    r->read_bytes = r->n_reads = 0;
    atomic_store_explicit(&g->n_prepared, seq + 1, memory_order_release);
    if (oc_queue_push(g->extract_q, r) != OC_OK)
        return store_stages_error(g->s, err);
    return OC_OK;
}

/* ---- extractor --------------------------------------------------------------- */

/* Waits until every wait-listed row of the batch is VALID. */
static int wait_loaded(struct gd_extractor *x, const struct gd_rec *r)
{
    struct gd_store *g = x->g;
    for (uint64_t k = 0; k < x->n_waits; k++) {
        atomic_uchar *st = &g->buf.state[r->slots[x->waits[k]]];
        if (atomic_load_explicit(st, memory_order_acquire) == GD_VALID)
            continue;
        gd_lock(g);
        atomic_fetch_add_explicit(&g->n_load_waiters, 1,
                                  memory_order_acq_rel); /* see gnndrive_io.c */
        while (atomic_load_explicit(st, memory_order_acquire) != GD_VALID && !stopped(g))
            gd_wait(g, &g->loaded_cv);
        atomic_fetch_sub(&g->n_load_waiters, 1);
        gd_unlock(g);
        if (stopped(g))
            return OC_ERR_CANCELLED;
    }
    return OC_OK;
}

/*
 * Reserves every row of r in its turn, reading what is reserved whenever
 * the buffer runs out of standby slots (then waits for the release stage).
 * *flushed = misses already read.
 */
static int reserve_batch(struct gd_extractor *x, struct gd_rec *r, uint64_t *flushed,
                         struct oc_err *err)
{
    struct gd_store *g = x->g;
    uint64_t pos = 0;
    int rc = OC_OK;

    gd_lock(g);
    while (g->reserve_seq != r->seq && !stopped(g))
        gd_wait(g, &g->ticket_cv);
    while (pos < r->n_rows && !stopped(g)) {
        uint64_t lim = r->n_rows - pos > GD_RESERVE_CHUNK ? pos + GD_RESERVE_CHUNK : r->n_rows;
        gd_buf_reserve(g, x, r, &pos, lim);
        if (pos == lim) {
            if (pos < r->n_rows) { /* let the releaser in between chunks */
                gd_unlock(g);
                gd_lock(g);
            }
            continue;
        }
        /* Out of slots: start the reads reserved so far, then wait for the releaser. */
        gd_unlock(g);
        if (x->n_miss > *flushed) {
            rc = gd_io_read(x, *flushed, x->n_miss, err);
            *flushed = x->n_miss;
        }
        gd_lock(g);
        if (rc)
            break;
        g->n_slot_waiters++;
        while (g->buf.standby.front == OC_SLOT_NONE && !stopped(g))
            gd_wait(g, &g->slot_cv);
        g->n_slot_waiters--;
    }
    if (rc == OC_OK && stopped(g))
        rc = OC_ERR_CANCELLED;
    if (rc == OC_OK) { /* the next batch's turn */
        g->reserve_seq++;
        pthread_cond_broadcast(&g->ticket_cv);
    }
    gd_unlock(g);
    return rc;
}

static int extract_one(struct gd_extractor *x, struct gd_rec *r, struct oc_err *err)
{
    struct gd_store *g = x->g;
    uint64_t flushed = 0;

    x->cur = r;
    x->n_miss = x->n_waits = 0;
    gd_delay(g, &x->rng);
    void *const rows[] = {&x->miss, &x->waits};
    const size_t row_bytes[] = {sizeof(*x->miss), sizeof(*x->waits)};
    int rc = oc_grow_all(rows, row_bytes, 2, &x->cap, r->n_rows, GD_GROW,
                         "store gnndrive: extractor", err);
    /* every fed batch was staged: its misses, from its group (fed: once its feeder got there) */
    if (rc == OC_OK && g->hyper)
        rc = store_hyper_take(g->hyper, r->epoch, r->batch, &x->hg, err);
    if (rc == OC_OK)
        rc = reserve_batch(x, r, &flushed, err);
    if (rc == OC_OK) {
        gd_delay(g, &x->rng);
        rc = gd_io_read(x, flushed, x->n_miss, err);
    }
    if (rc == OC_OK && x->hg)
        rc = store_hyper_done(g->hyper, x->hg, err);
    x->hg = NULL;
    if (rc == OC_OK) {
        gd_delay(g, &x->rng);
        rc = wait_loaded(x, r);
    }
    x->cur = NULL;
    return rc;
}

/* The extract stage: one batch record from extract_q, extracted, to done_q. */
static int extract_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct gd_store *g = ctx;
    struct gd_rec *r = item;
    void *state;
    int rc = oc_stage_pop(st, g->ex_q, &state); /* E states for E threads: never waits */
    if (rc)
        return rc;
    struct gd_extractor *x = state;
    rc = extract_one(x, r, err);
    oc_stage_push(st, g->ex_q, x); /* fails only once cancelled, when nobody needs it */
    if (rc == OC_ERR_CANCELLED && oc_pipeline_cancelled(g->p))
        return rc;
    if (rc) {
        oc_err_prefix(err, "batch %" PRIu64 " of epoch %" PRIu64, r->batch, r->epoch);
        return rc;
    }
    atomic_fetch_add(&g->n_extracted, 1);
    return oc_stage_push(st, g->done_q, r);
}

/* The release stage: drops the references of a batch the trainer copied (or discarded). */
static int release_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct gd_store *g = ctx;
    struct gd_rec *r = item;
    (void)err;
    gd_delay(g, &g->releaser_rng);
    gd_lock(g);
    gd_buf_release(&g->buf, r);
    if (g->n_slot_waiters)
        pthread_cond_broadcast(&g->slot_cv);
    gd_unlock(g);
    return oc_stage_push(st, g->free_q, r); /* fails only once the pipeline is cancelled */
}

/* ---- start ----------------------------------------------------------------- */

static int add_stages(struct gd_store *g, struct oc_err *err)
{
    struct oc_queue **qs[] = {&g->free_q, &g->extract_q, &g->done_q, &g->release_q};
    int rc;
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
        if ((rc = oc_pipeline_queue(g->p, g->z.n_records, qs[i], err)))
            return rc;
    if ((rc = oc_pipeline_queue(g->p, g->z.n_extractors, &g->ex_q, err)))
        return rc;
    for (uint32_t i = 0; i < g->z.n_records; i++)
        oc_queue_push(g->free_q, &g->recs[i]); /* capacity n_records: never waits */
    for (uint32_t i = 0; i < g->z.n_extractors; i++)
        oc_queue_push(g->ex_q, &g->ex[i]);
    if ((rc = oc_pipeline_on_cancel(g->p, gd_on_cancel, g, err)) ||
        (rc = oc_pipeline_stage(g->p, "gnndrive extract", g->z.n_extractors, g->extract_q,
                                extract_stage, g, &g->extract_st, err)) ||
        (rc = oc_pipeline_stage(g->p, "gnndrive release", 1, g->release_q, release_stage, g, NULL,
                                err)))
        return rc;
    return oc_pipeline_start(g->p, err);
}

int gd_stages_start(struct gd_store *g, struct oc_err *err)
{
    int rc = store_stages(g->s, &g->p, err);
    return rc ? rc : add_stages(g, err);
}
