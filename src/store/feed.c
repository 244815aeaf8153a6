/*
 * feed.c — the feeder of a store whose strategy prepares each training
 * batch ahead of its gather: over other ids (oc_store_config.accesses: a
 * rank's part of a partitioned dataset) gnndrive (its extractors), helios
 * (its reads) and static's --hyperbatch groups (their misses); over the
 * plan's own ids the --hyperbatch-disk groups of static, helios, ginex and
 * gnndrive (many batches ahead). Fed groups own theirs (hyper.c:
 * store_hyper_open starts it). In a single-process run the batch
 * pipeline's sample stage shows them every batch (oc_store_sampled), but
 * only as far ahead as its slots hold sampled batches; a partitioned run
 * has no batch pipeline (train/dist_rows.c samples and gathers per batch
 * itself). So this stage samples the plan again, as ginex's inspector does,
 * keeping only the ids:
 *
 *   feed stage (one thread): for each batch (e, b) of the plan, in order
 *     sample (e, b) on the plan's graph ─► accesses->of: the store's ids for it
 *     ─► fn(s, e, b, {input_ids = those ids}) (the strategy's prepare: may
 *        wait for a free record) ─► next batch
 *
 * The batches are the trainer's (oc_sample_iter: same seed, order, keys), so
 * the ids are exactly those its gathers will ask for, and in that order
 * (struct oc_store_accesses).
 *
 * Place in the data flow: store (shared by gnndrive, helios and hyper.c), on
 * sample and pipeline.
 * Thread-safety: opened on the opening thread; then only the stage's thread
 * uses the sampler and the id buffer; n_fed is atomic (store_feed_count),
 * raised under mu, on whose cv store_feed_wait waits (any thread) until a
 * batch is fed or the pipeline is cancelled (feed_on_cancel sets stop under
 * mu; mu is a leaf). The stage checks the pipeline's cancellation between
 * batches; fn's waits end on the pipeline's cancel (closed queues).
 * Ownership: the feeder owns its sampler, batch and ids; it is freed by its
 * owner (the strategy, or its hyperbatch) after the store's stages are
 * joined (registry.c).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "store/store_int.h"

/* A sampler's batch and id map per input row (the batch pipeline's samplers: gnndrive.c). */
#define FEED_SAMPLER_ROW_BYTES 144u

struct store_feed {
    struct oc_store *s;
    const struct oc_store_accesses *acc; /* borrowed (the trainer's) */
    store_feed_fn fn;
    struct oc_pipeline *p;
    struct oc_queue *go; /* one token: the stage's single item, the whole plan */
    struct oc_sample_iter it;
    int it_open;
    uint64_t first_epoch, n_epochs;
    uint64_t *ids, cap;
    struct oc_sample_batch view; /* the mapped batch shown to fn (no blocks) */
    _Atomic uint64_t n_fed;      /* raised under mu */
    pthread_mutex_t mu;          /* a leaf: n_fed's raise and stop, for cv's waiters */
    pthread_cond_t cv;           /* a batch fed, or stop */
    int sync_made, stop;         /* stop: [mu] the pipeline was cancelled */
    char name[48];
};

/* One more batch fed: store_feed_wait's waiters woken. */
static void fed_one(struct store_feed *f)
{
    pthread_mutex_lock(&f->mu);
    atomic_fetch_add_explicit(&f->n_fed, 1, memory_order_release);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Runs once when the store's pipeline is cancelled (an error anywhere, or the store's free). */
static void feed_on_cancel(void *ctx)
{
    struct store_feed *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

uint64_t store_feed_bytes(const struct oc_store_config *cfg, uint64_t plan_rows, uint64_t rows)
{
    return sizeof(struct store_feed) + plan_rows * FEED_SAMPLER_ROW_BYTES +
           2 * cfg->n_train * sizeof(uint64_t) + rows * sizeof(uint64_t);
}

/* The feed stage: its one item is the plan, batch after batch. */
static int feed_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct store_feed *f = ctx;
    (void)st;
    (void)item;
    int rc = OC_OK;
    for (uint64_t e = f->first_epoch; rc == OC_OK && e < f->n_epochs; e++) {
        oc_sample_iter_seek(&f->it, e, 0);
        for (uint64_t b = 0; rc == OC_OK; b++) {
            if (oc_pipeline_cancelled(f->p))
                return OC_ERR_CANCELLED;
            int got = oc_sample_iter_next(&f->it, err);
            if (got <= 0) {
                rc = got;
                break;
            }
            uint64_t n = f->it.batch.n_input;
            uint64_t *ids = f->it.batch.input_ids; /* over the plan's own ids: no map */
            if (f->acc && (rc = f->acc->of(f->acc->ctx, &f->it.batch, &f->ids, &f->cap, &n, err)))
                break;
            f->view.epoch = e;
            f->view.batch_index = b;
            f->view.n_input = n;
            f->view.input_ids = f->acc ? f->ids : ids;
            if ((rc = f->fn(f->s, e, b, &f->view, err)) == OC_OK)
                fed_one(f);
        }
        if (rc && rc != OC_ERR_CANCELLED)
            oc_err_prefix(err, "%s: epoch %" PRIu64, f->name, e);
    }
    return rc;
}

int store_feed_start(struct oc_store *s, const struct oc_store_config *cfg, store_feed_fn fn,
                     struct store_feed **out, struct oc_err *err)
{
    OC_ASSERT(cfg->sample_opts && store_has_plan(cfg));
    struct store_feed *f = oc_calloc(1, sizeof(*f), "store: feeder", err);
    *out = f;
    if (!f)
        return err ? err->status : OC_ERR_NOMEM;
    f->s = s;
    f->acc = cfg->accesses;
    f->fn = fn;
    f->first_epoch = cfg->first_epoch;
    f->n_epochs = cfg->n_epochs;
    atomic_init(&f->n_fed, 0);
    if (pthread_mutex_init(&f->mu, NULL) != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "store %s: cannot make the feeder's lock", s->strat->name);
    if (pthread_cond_init(&f->cv, NULL) != 0) {
        pthread_mutex_destroy(&f->mu);
        return OC_ERR(err, OC_ERR_NOMEM, "store %s: cannot make the feeder's condition",
                      s->strat->name);
    }
    f->sync_made = 1;
    oc_sample_batch_init(&f->view);
    snprintf(f->name, sizeof(f->name), "store %s feed", s->strat->name);
    /* its own thread samples (the pool is training's); the options and ids are copied */
    int rc = oc_sample_iter_open(&f->it, store_plan_graph(cfg), cfg->sample_opts, NULL,
                                 cfg->train_ids, cfg->n_train, cfg->batch_size, err);
    f->it_open = rc == OC_OK;
    if (rc == OC_OK)
        rc = store_stages(s, &f->p, err);
    if (rc == OC_OK)
        rc = oc_pipeline_on_cancel(f->p, feed_on_cancel, f, err);
    if (rc == OC_OK)
        rc = oc_pipeline_queue(f->p, 1, &f->go, err);
    if (rc == OC_OK)
        oc_queue_push(f->go, f); /* capacity 1: never waits */
    if (rc == OC_OK)
        rc = oc_pipeline_stage(f->p, f->name, 1, f->go, feed_stage, f, NULL, err);
    return rc ? rc : oc_pipeline_start(f->p, err);
}

void store_feed_free(struct store_feed *f)
{
    if (!f)
        return;
    if (f->it_open)
        oc_sample_iter_close(&f->it);
    if (f->sync_made) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
    }
    oc_free(f->ids);
    oc_free(f);
}

int store_feed_wait(struct store_feed *f, uint64_t epoch, uint64_t batch, struct oc_err *err)
{
    const uint64_t nb = f->s->n_plan_batches;
    if (epoch < f->first_epoch || epoch >= f->n_epochs || batch >= nb)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "%s: batch %" PRIu64 " of epoch %" PRIu64
                      " is not in its plan (epochs %" PRIu64 " to %" PRIu64 ", %" PRIu64
                      " batches each)",
                      f->name, batch, epoch, f->first_epoch, f->n_epochs - 1, nb);
    const uint64_t want = (epoch - f->first_epoch) * nb + batch + 1;
    pthread_mutex_lock(&f->mu);
    while (atomic_load_explicit(&f->n_fed, memory_order_acquire) < want && !f->stop)
        pthread_cond_wait(&f->cv, &f->mu);
    int fed = atomic_load_explicit(&f->n_fed, memory_order_acquire) >= want;
    pthread_mutex_unlock(&f->mu);
    return fed ? OC_OK : store_stages_error(f->s, err);
}

void store_feed_close(struct store_feed *f, const char *who, const char *records, uint64_t served,
                      uint64_t direct)
{
    if (f)
        oc_log(OC_LOG_INFO,
               "store %s: %" PRIu64 " batches fed %s, %" PRIu64 " served from their %s, %" PRIu64
               " read directly",
               who, store_feed_count(f), f->acc ? "over the access map" : "ahead by its feeder",
               served, records, direct);
    store_feed_free(f);
}

uint64_t store_feed_count(const struct store_feed *f)
{
    return f ? atomic_load_explicit(&f->n_fed, memory_order_relaxed) : 0;
}
