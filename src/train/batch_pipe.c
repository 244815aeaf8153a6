/*
 * batch_pipe.c — the batch pipeline: every training batch is sampled exactly
 * once, ahead of the trainer, shown to the feature strategy as soon as it is
 * sampled (oc_store_sampled: issue its reads, pin its rows), and its
 * features are gathered while earlier batches train; oc_batch_pipe_done ends
 * the batch's life in the store (oc_store_done) before its slot is reused.
 *
 *   oc_batch_pipe_epoch ──epoch_q──► sample stage ──fetch_q──► fetch stage ──ready_q──► trainer
 *                                        ▲ pops a free slot       ▲ gate_q: │ lanes > 1:   ▲ │
 *                                        │           oc_batch_pipe_open     └─gather_q──►  │ │
 *                                        │                          gather stage (lanes) ──┘ │
 *                                        └──────────────── free_q ◄── oc_batch_pipe_done ◄───┘
 *
 * An epoch is started (sampled ahead) as soon as the previous one was handed
 * out, so its first batches are sampled and shown to the strategy while the
 * trainer evaluates; the fetch stage gathers none of them before the trainer
 * opens the epoch (a token on gate_q), so between epochs the store is the
 * trainer's for evaluation gathers.
 *
 * Two kinds of buffer circulate. Slots hold a sampled batch (its blocks: small);
 * depth + 1 row buffers hold gathered feature rows (large): one with the
 * trainer, up to depth gathered ahead of it (fewer for a store whose own
 * records hold its batches ahead, oc_store_row_buffers: helios's reads land
 * in its stages, so one row buffer ahead is all it fills). The fetch stage takes a row
 * buffer for each batch it gathers; oc_batch_pipe_done returns both. There
 * are depth + 1 slots too, or, for a store that takes batches in ahead of
 * their gathers (caps lookahead, gnndrive's batch records), that many,
 * so its reads run that far ahead while only depth + 1 batches of rows are
 * held. Buffers keep their memory, so after the first batches nothing is
 * allocated per batch; one grown past cfg.reserve_rows for a larger batch
 * shrinks back to it at its next smaller one.
 *
 * The sample stage samples batch b of epoch e from (seed, e, b) exactly as
 * the trainer would (a store that wants hops, helios, is shown each hop's
 * new input ids as the sampler produces them, oc_store_hop, then the
 * whole batch; a store with historical embeddings, outre, decides through
 * the sampler's pruning hook, oc_store_hop with a mask, which sub-trees are
 * not sampled, and fills the batch's `hist` for the trainer);
 * for a strategy that samples itself (diskgnn's offline
 * windows, ginex's superbatches) the fetch stage takes the batch from the
 * store instead (oc_store_load_batch), or, when that store has a lookahead
 * (ginex --hyperbatch: it stages each loaded batch's misses), the sample
 * stage does, as far ahead as its slots go; so there too each batch is
 * sampled once. The fetch
 * stage gathers slots in the order they come, except for a strategy that
 * reorders (gnndrive --reorder), for which it asks oc_store_next_batch which
 * batch to serve next among those sampled (pending).
 *
 * Sampler threads: a store that wants several (caps samplers, gnndrive
 * --samplers S, as GNNDrive's pool of samplers) gets a draw stage of S
 * threads between the sample stage and the store. The sample stage then only
 * takes a slot, copies the batch's seeds into it and hands it on (draw_q); a
 * draw thread takes a sampler token (drawer_q: each sampler has its own
 * one-thread pool, so S batches are sampled at once, each whole) and samples
 * it; the order stage puts the drawn batches back in the sample stage's order
 * (seq) and prepares them there, so the store sees exactly the batches and the
 * order one sampler gives it. Not for a store that takes hops or prunes
 * (helios, outre), whose hooks follow one sampler's order.
 *
 *   sample stage ──draw_q──► draw stage (S threads, drawer_q) ──order_q──► order stage ──fetch_q──►
 *
 * Gather lanes: a store that can gather several batches at once (lanes > 1:
 * direct, static and ginex keep a reader per lane, mmap needs none;
 * oc_store_gather_lanes) has its
 * gathers run by a gather stage of that many threads (at most depth), so
 * one batch's reads are in flight while another's rows are looked up,
 * copied and waited for: the disk does not idle between batches. The fetch
 * stage then only takes a row buffer and hands the batch on; a lane takes a
 * lane token (lane_q: which reader is free), gathers and pushes the batch
 * to ready_q. Batches may then come out of order, and the trainer puts them
 * back in plan order (`early`): what is learned does not change.
 *
 * Place in the data flow: train (store + sample → trainer), built from
 * pipeline stages; its stages share the pipeline the store runs its own on.
 * Thread-safety: the sample stage's thread owns the sampler and the shuffled
 * epoch; the fetch stage's thread owns `pending`; a slot belongs to the
 * stage that popped it (the queues order the hand-overs); a lane token
 * belongs to the gather thread that popped it; the trainer owns `handed`,
 * `early` and wait_s. Counters read by oc_batch_pipe_stats are atomics.
 * Ownership: the pipeline owns the slots, the sampler, the epoch and the
 * stages; the store, graph, pool and training ids are borrowed.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include "offcore/batch_pipe.h"
#include "offcore/progress.h"

struct bp_job {
    uint64_t epoch;
};

/* A buffer of gathered feature rows. */
struct bp_rows {
    float *x;
    uint64_t cap_floats;
};

#define BP_NO_EPOCH  UINT64_MAX
#define BP_MAX_LANES 4 /* gather lanes at most (the store's own limit is its business) */

struct oc_batch_pipe {
    struct oc_batch_pipe_config cfg; /* cfg.sample points at so */
    struct oc_sample_opts so;
    uint64_t feat_dim, n_batches;
    int has_batches, reorder;
    int load_ahead; /* has_batches and a lookahead: the sample stage loads them */
    struct oc_pipeline *p;
    int own_p; /* p made here (else the caller's, freed by the caller first) */
    struct oc_queue *epoch_q, *free_q, *fetch_q, *ready_q, *gate_q, *rows_q;
    struct oc_stage *sample_st, *fetch_st;
    /* gather lanes (lanes > 1) */
    uint32_t lanes;
    struct oc_queue *gather_q, *lane_q;
    struct oc_stage *gather_st;
    uint32_t lane_ids[BP_MAX_LANES];
    struct oc_pipe_batch *slots;
    uint32_t n_slots;
    struct bp_rows *rows;
    uint32_t n_rows;
    struct bp_job jobs[2];
    unsigned next_job;
    /* sample stage */
    struct oc_sampler *sampler;     /* one sampler on the shared pool (n_draw == 0) */
    struct oc_pipe_batch *sampling; /* the batch the sampler is on (its hooks') */
    /* sampler threads (n_draw > 1; else 0): samplers with their own pools, each batch
       slot's seeds (batch_size each), and the order stage's batches ahead of their turn */
    uint32_t n_draw;
    struct oc_sampler **drawers;
    struct oc_pool **draw_pools;
    uint64_t *seed_buf, *seed_n;
    struct oc_queue *draw_q, *drawer_q, *order_q;
    struct oc_stage *draw_st, *order_st;
    struct oc_pipe_batch **held;
    uint32_t n_held;
    uint64_t next_seq, seq;
    struct oc_sample_epoch ep;
    uint64_t *order; /* reused samples: the training epoch's batch order */
    /* fetch stage */
    struct oc_pipe_batch **pending;
    uint32_t n_pending;
    uint64_t fetch_epoch; /* the epoch the gate was last opened for (BP_NO_EPOCH: none) */
    /* trainer */
    struct oc_pipe_batch **early; /* lanes: batches popped ahead of their turn (n_slots) */
    uint32_t n_early;
    uint64_t handed, epoch;
    int in_epoch, opened;
    struct bp_rows *lent; /* a row buffer lent between epochs (evaluation), or NULL */
    double wait_s;
    atomic_uint_least64_t n_sampled, n_fetched, sample_ns;
};

/* ---- sample stage ------------------------------------------------------ */

/* The sampler's per-hop hook: each hop's new input ids to the store as they appear. */
static int hop_to_store(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t lo,
                        uint64_t hi, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    const struct oc_store_hop h = {epoch, batch, ids + lo, hi - lo, 0, NULL, NULL};
    return oc_store_hop(bp->cfg.store, &h, err);
}

/*
 * The sampler's pruning hook: the last block's sources to the store (outre's
 * historical embeddings), which fills the batch's view for the trainer.
 */
static int prune_by_store(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                          uint64_t n, uint64_t n_seeds, uint8_t *mask, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    struct oc_pipe_batch *pb = bp->sampling;
    OC_ASSERT(pb && pb->epoch == epoch && pb->index == batch);
    const struct oc_store_hop h = {epoch, batch, ids, n, n_seeds, mask, &pb->hist};
    return oc_store_hop(bp->cfg.store, &h, err);
}

static int sample_epoch(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    const struct bp_job *job = item;
    /* the sample epoch, and the training epoch's order of its batches */
    uint64_t e = bp->cfg.reuse_samples ? 0 : job->epoch;
    int rc;
    if (!bp->has_batches && bp->cfg.no_shuffle)
        oc_sample_epoch_unshuffle(&bp->ep);
    else if (!bp->has_batches)
        oc_sample_epoch_shuffle(&bp->ep, bp->cfg.sample->seed, e);
    if (bp->cfg.reuse_samples)
        oc_sample_batch_order(bp->cfg.sample->seed, job->epoch, bp->order, bp->n_batches);
    uint64_t b = 0;
    for (uint64_t k = 0; k < bp->n_batches; k++) {
        void *got;
        b = bp->cfg.reuse_samples ? bp->order[k] : k;
        if ((rc = oc_stage_pop(st, bp->free_q, &got)))
            return rc;
        struct oc_pipe_batch *pb = got;
        pb->epoch = e;
        pb->index = b;
        pb->pos = k;
        memset(&pb->hist, 0, sizeof(pb->hist));
        if (!bp->has_batches) {
            const uint64_t *seeds;
            uint64_t n_seeds;
            double t0 = oc_now_s();
            if ((rc = oc_sample_epoch_batch(&bp->ep, b, &seeds, &n_seeds, err)))
                goto fail;
            if (bp->n_draw) { /* a draw thread samples it, from a copy of its seeds */
                uint64_t at = (uint64_t)(pb - bp->slots);
                memcpy(bp->seed_buf + at * bp->cfg.batch_size, seeds, n_seeds * sizeof(uint64_t));
                bp->seed_n[at] = n_seeds;
                pb->seq = bp->seq++;
                if ((rc = oc_stage_push(st, bp->draw_q, pb)))
                    return rc;
                continue;
            }
            bp->sampling = pb; /* the hooks' batch (prune_by_store) */
            rc = oc_sample_neighbors(bp->sampler, e, b, seeds, n_seeds, &pb->batch, err);
            bp->sampling = NULL;
            if (rc || (rc = oc_store_sampled(bp->cfg.store, e, b, &pb->batch, err)))
                goto fail;
            /* counted before the hand-over, so the trainer sees them with the batch */
            atomic_fetch_add(&bp->sample_ns, (uint64_t)((oc_now_s() - t0) * 1e9));
            atomic_fetch_add(&bp->n_sampled, 1);
        } else if (bp->load_ahead) {
            if ((rc = oc_store_load_batch(bp->cfg.store, e, b, &pb->batch, err)))
                goto fail;
            atomic_fetch_add(&bp->n_sampled, 1);
        }
        if ((rc = oc_stage_push(st, bp->fetch_q, pb)))
            return rc;
    }
    return OC_OK;
fail:
    oc_err_prefix(err, "epoch %" PRIu64 " batch %" PRIu64, e, b);
    return rc;
}

/* ---- sampler threads --------------------------------------------------- */

/* Samples one batch on a free sampler (a drawer token) and hands it to the order stage. */
static int draw_batch(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    struct oc_pipe_batch *pb = item;
    uint64_t at = (uint64_t)(pb - bp->slots);
    void *token;
    int rc;
    if ((rc = oc_stage_pop(st, bp->drawer_q, &token)))
        return rc;
    double t0 = oc_now_s();
    rc = oc_sample_neighbors(token, pb->epoch, pb->index, bp->seed_buf + at * bp->cfg.batch_size,
                             bp->seed_n[at], &pb->batch, err);
    /* never blocks: the queue holds every token; closed means cancelled */
    (void)oc_stage_push(st, bp->drawer_q, token);
    if (rc) {
        oc_err_prefix(err, "epoch %" PRIu64 " batch %" PRIu64, pb->epoch, pb->index);
        return rc;
    }
    atomic_fetch_add(&bp->sample_ns, (uint64_t)((oc_now_s() - t0) * 1e9));
    return oc_stage_push(st, bp->order_q, pb);
}

/* Prepares the drawn batches in the sample stage's order and hands them to the fetch stage. */
static int order_batch(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    bp->held[bp->n_held++] = item; /* at most every slot */
    for (;;) {
        uint32_t k = 0;
        while (k < bp->n_held && bp->held[k]->seq != bp->next_seq)
            k++;
        if (k == bp->n_held)
            return OC_OK; /* its turn's batch is still being drawn */
        struct oc_pipe_batch *pb = bp->held[k];
        bp->held[k] = bp->held[--bp->n_held];
        bp->next_seq++;
        double t0 = oc_now_s();
        int rc = oc_store_sampled(bp->cfg.store, pb->epoch, pb->index, &pb->batch, err);
        if (rc) {
            oc_err_prefix(err, "epoch %" PRIu64 " batch %" PRIu64, pb->epoch, pb->index);
            return rc;
        }
        atomic_fetch_add(&bp->sample_ns, (uint64_t)((oc_now_s() - t0) * 1e9));
        atomic_fetch_add(&bp->n_sampled, 1);
        if ((rc = oc_stage_push(st, bp->fetch_q, pb)))
            return rc;
    }
}

/* The samplers, their pools and queues, and the draw and order stages (n_draw of them). */
static int draw_open(struct oc_batch_pipe *bp, uint32_t n_draw, struct oc_err *err)
{
    const struct oc_batch_pipe_config *cfg = &bp->cfg;
    int rc;
    bp->n_draw = n_draw;
    bp->drawers = oc_calloc(n_draw, sizeof(*bp->drawers), "pipeline samplers", err);
    bp->draw_pools = oc_calloc(n_draw, sizeof(*bp->draw_pools), "pipeline samplers", err);
    bp->held = oc_calloc(bp->n_slots, sizeof(*bp->held), "pipeline slots", err);
    bp->seed_n = oc_calloc(bp->n_slots, sizeof(*bp->seed_n), "pipeline slots", err);
    bp->seed_buf =
        oc_alloc(bp->n_slots * cfg->batch_size * sizeof(uint64_t), "pipeline seeds", err);
    if (!bp->drawers || !bp->draw_pools || !bp->held || !bp->seed_n || !bp->seed_buf)
        return err ? err->status : OC_ERR_NOMEM;
    for (uint32_t i = 0; i < n_draw; i++)
        if ((rc = oc_pool_new(1, &bp->draw_pools[i], err)) ||
            (rc = oc_sample_sampler_new(cfg->graph, cfg->sample, bp->draw_pools[i], &bp->drawers[i],
                                        err)))
            return rc;
    if ((rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->draw_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, n_draw, &bp->drawer_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->order_q, err)) ||
        (rc = oc_pipeline_stage(bp->p, "draw", n_draw, bp->draw_q, draw_batch, bp, &bp->draw_st,
                                err)) ||
        (rc = oc_pipeline_stage(bp->p, "order", 1, bp->order_q, order_batch, bp, &bp->order_st,
                                err)))
        return rc;
    for (uint32_t i = 0; i < n_draw; i++)
        if (oc_queue_push(bp->drawer_q, bp->drawers[i]) != OC_OK)
            return oc_pipeline_status(bp->p, err);
    return OC_OK;
}

/* ---- fetch stage ------------------------------------------------------- */

static int fetch_one(struct oc_batch_pipe *bp, struct oc_stage *st, struct oc_pipe_batch *pb,
                     struct oc_err *err)
{
    int rc;
    void *got;
    if ((rc = oc_stage_pop(st, bp->rows_q, &got)))
        return rc;
    struct bp_rows *r = got;
    pb->rows = r; /* from here on returned with the slot, even if the gather fails */
    if (bp->has_batches && !bp->load_ahead) {
        if ((rc = oc_store_load_batch(bp->cfg.store, pb->epoch, pb->index, &pb->batch, err)))
            return rc;
        atomic_fetch_add(&bp->n_sampled, 1);
    }
    uint64_t n = pb->batch.n_input, floats = n * bp->feat_dim;
    uint64_t keep = bp->cfg.reserve_rows * bp->feat_dim;
    if (keep && r->cap_floats > keep && floats <= keep) { /* after a larger batch: give it back */
        float *x = oc_realloc(r->x, keep * sizeof(float), "pipeline batch features", err);
        if (x) { /* shrinking: the accountant never refuses; a failed realloc keeps the block */
            r->x = x;
            r->cap_floats = keep;
        }
    }
    if ((rc = oc_grow_by(&r->x, &r->cap_floats, floats, sizeof(float), OC_GROW_EXACT,
                         "pipeline batch features", err)))
        return oc_err_prefix(err, "%" PRIu64 " input rows", n);
    pb->x = r->x;
    if (bp->lanes > 1)
        return OC_OK; /* a gather lane does it */
    return oc_store_gather_batch(bp->cfg.store, pb->epoch, pb->index, pb->batch.input_ids, n, pb->x,
                                 err);
}

/* Gathers pb (plan order), or the pending batches in the store's order (reorder). */
static int fetch_batch(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    struct oc_pipe_batch *pb = item;
    /* a batch handed on belongs to the trainer: only these locals name it afterwards */
    const uint64_t epoch = pb->epoch;
    uint64_t index = pb->index;
    int rc;
    if (epoch != bp->fetch_epoch || pb->pos == 0) { /* wait for the trainer to open it */
        void *token;
        if ((rc = oc_stage_pop(st, bp->gate_q, &token)))
            return rc;
        bp->fetch_epoch = epoch;
    }
    bp->pending[bp->n_pending++] = pb;
    while (bp->n_pending > 0) {
        uint32_t k = 0;
        if (bp->reorder) {
            uint64_t b;
            if ((rc = oc_store_next_batch(bp->cfg.store, epoch, &b, err)))
                goto fail;
            index = b;
            for (;;) { /* b was prepared: it is pending, or still on its way */
                for (k = 0; k < bp->n_pending && bp->pending[k]->index != b; k++)
                    ;
                if (k < bp->n_pending)
                    break;
                void *more;
                if (bp->n_pending == bp->n_slots)
                    return OC_ERR(err, OC_ERR_INTERNAL,
                                  "store %s served batch %" PRIu64 " that was not sampled",
                                  oc_store_name(bp->cfg.store), b);
                if ((rc = oc_stage_pop(st, bp->fetch_q, &more)))
                    return rc;
                bp->pending[bp->n_pending++] = more;
            }
        }
        pb = bp->pending[k];
        index = pb->index;
        bp->pending[k] = bp->pending[--bp->n_pending];
        if ((rc = fetch_one(bp, st, pb, err)))
            goto fail;
        if (bp->lanes > 1) {
            if ((rc = oc_stage_push(st, bp->gather_q, pb)))
                return rc;
            continue;
        }
        atomic_fetch_add(&bp->n_fetched, 1);
        if ((rc = oc_stage_push(st, bp->ready_q, pb)))
            return rc;
    }
    return OC_OK;
fail:
    oc_err_prefix(err, "epoch %" PRIu64 " batch %" PRIu64, epoch, index);
    return rc;
}

/* ---- gather lanes ------------------------------------------------------ */

/* One batch's gather on a free lane (a lane token: which reader of the store is free). */
static int gather_on_lane(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct oc_batch_pipe *bp = ctx;
    struct oc_pipe_batch *pb = item;
    const uint64_t epoch = pb->epoch, index = pb->index;
    void *token;
    int rc;
    if ((rc = oc_stage_pop(st, bp->lane_q, &token)))
        return rc;
    uint32_t lane = *(const uint32_t *)token;
    rc = oc_store_gather_batch_lane(bp->cfg.store, lane, epoch, index, pb->batch.input_ids,
                                    pb->batch.n_input, pb->x, err);
    /* never blocks: the queue holds every token; closed means cancelled */
    (void)oc_stage_push(st, bp->lane_q, token);
    if (rc) {
        oc_err_prefix(err, "epoch %" PRIu64 " batch %" PRIu64, epoch, index);
        return rc;
    }
    atomic_fetch_add(&bp->n_fetched, 1);
    return oc_stage_push(st, bp->ready_q, pb); /* pb belongs to the trainer from here */
}

/* ---- lifetime ---------------------------------------------------------- */

void oc_batch_pipe_free(struct oc_batch_pipe *bp)
{
    if (!bp)
        return;
    if (bp->own_p)
        oc_pipeline_free(bp->p); /* cancels and joins before the slots go */
    /* else its owner freed it, joining the stages, before this (batch_pipe.h) */
    /* a buffer still lent is freed here with the others (bp->rows owns them all) */
    for (uint32_t i = 0; bp->slots && i < bp->n_slots; i++)
        oc_sample_batch_deinit(&bp->slots[i].batch);
    for (uint32_t i = 0; bp->rows && i < bp->n_rows; i++)
        oc_free(bp->rows[i].x);
    oc_free(bp->slots);
    oc_free(bp->rows);
    oc_free(bp->pending);
    oc_free(bp->early);
    oc_free(bp->order);
    if (bp->ep.orig)
        oc_sample_epoch_deinit(&bp->ep);
    oc_sample_sampler_free(bp->sampler);
    for (uint32_t i = 0; bp->drawers && i < bp->n_draw; i++)
        oc_sample_sampler_free(bp->drawers[i]);
    for (uint32_t i = 0; bp->draw_pools && i < bp->n_draw; i++)
        oc_pool_free(bp->draw_pools[i]);
    oc_free(bp->drawers);
    oc_free(bp->draw_pools);
    oc_free(bp->held);
    oc_free(bp->seed_n);
    oc_free(bp->seed_buf);
    oc_free(bp);
}

int oc_batch_pipe_new(const struct oc_batch_pipe_config *cfg, struct oc_batch_pipe **out,
                      struct oc_err *err)
{
    *out = NULL;
    if (!cfg->store || !cfg->graph || !cfg->sample || !cfg->train_ids || !cfg->n_train ||
        !cfg->batch_size || cfg->depth == 0)
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: needs a store, a graph, sampling options, training ids, "
                      "a batch size and a depth of at least 1");
    const struct oc_store_caps *caps = oc_store_caps(cfg->store);
    if (caps->batches && cfg->no_shuffle)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "strategy %s samples its own shuffled batches: it cannot keep the seeds "
                      "in order (shuffle them)",
                      oc_store_name(cfg->store));
    struct oc_batch_pipe *bp = oc_calloc(1, sizeof(*bp), "batch pipeline", err);
    if (!bp)
        return err ? err->status : OC_ERR_NOMEM;
    int rc;
    bp->cfg = *cfg;
    bp->so = *cfg->sample;
    bp->cfg.sample = &bp->so;
    bp->feat_dim = oc_store_feat_dim(cfg->store);
    bp->has_batches = caps->batches;
    bp->load_ahead = caps->batches && caps->lookahead;
    bp->reorder = caps->reorders;
    bp->n_batches = (cfg->n_train + cfg->batch_size - 1) / cfg->batch_size;
    /*
     * A store with a lookahead takes in that many prepared batches before
     * their gathers (a further prepare would wait for one to be gathered): it
     * gets exactly that many slots, so its reads run that far ahead, the
     * sample stage (which may run ahead while the fetch stage waits at the
     * gate) never waits on the store for long, and any batch a reordering
     * store serves is among the pending ones.
     */
    uint32_t ahead = caps->lookahead;
    bp->n_slots = ahead ? ahead : cfg->depth + 1;
    uint32_t rows = oc_store_row_buffers(cfg->store, cfg->depth); /* what train reserved */
    bp->n_rows = rows < bp->n_slots ? rows : bp->n_slots;
    /* lanes: at most the batches gathered ahead of the trainer, and only in plan order */
    bp->lanes = oc_store_gather_lanes(cfg->store);
    if (bp->lanes > cfg->depth)
        bp->lanes = cfg->depth;
    if (bp->lanes > BP_MAX_LANES)
        bp->lanes = BP_MAX_LANES;
    if (bp->reorder || bp->lanes < 1)
        bp->lanes = 1;
    atomic_init(&bp->n_sampled, 0);
    atomic_init(&bp->n_fetched, 0);
    atomic_init(&bp->sample_ns, 0);
    bp->fetch_epoch = BP_NO_EPOCH;
    bp->slots = oc_calloc(bp->n_slots, sizeof(*bp->slots), "pipeline slots", err);
    bp->pending = oc_calloc(bp->n_slots, sizeof(*bp->pending), "pipeline slots", err);
    bp->rows = oc_calloc(bp->n_rows, sizeof(*bp->rows), "pipeline row buffers", err);
    bp->early = oc_calloc(bp->n_slots, sizeof(*bp->early), "pipeline slots", err);
    if (!bp->slots || !bp->pending || !bp->rows || !bp->early) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    for (uint32_t i = 0; i < bp->n_slots; i++)
        oc_sample_batch_init(&bp->slots[i].batch);
    uint64_t reserve_floats = cfg->reserve_now ? cfg->reserve_rows * bp->feat_dim : 0;
    for (uint32_t i = 0; reserve_floats && i < bp->n_rows; i++) {
        if (!(bp->rows[i].x =
                  oc_alloc(reserve_floats * sizeof(float), "pipeline batch features", err))) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto fail;
        }
        bp->rows[i].cap_floats = reserve_floats;
    }
    /* sampler threads: as many as the store wants, at most a slot each, never with hooks */
    uint32_t n_draw = caps->samplers;
    n_draw = n_draw < bp->n_slots ? n_draw : bp->n_slots;
    if (bp->has_batches || caps->hops || caps->prunes)
        n_draw = 1;
    if (!bp->has_batches &&
        ((n_draw == 1 &&
          (rc = oc_sample_sampler_new(cfg->graph, cfg->sample, cfg->pool, &bp->sampler, err))) ||
         (rc = oc_sample_epoch_init_plan(&bp->ep, cfg->train_ids, cfg->n_train, cfg->batch_size, 0,
                                         cfg->sample, err))))
        goto fail;
    if (cfg->reuse_samples &&
        !(bp->order = oc_alloc(bp->n_batches * sizeof(uint64_t), "batch order", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    if (bp->sampler && caps->hops)
        oc_sample_sampler_on_hop(bp->sampler, hop_to_store, bp);
    if (bp->sampler && caps->prunes)
        oc_sample_sampler_on_prune(bp->sampler, prune_by_store, bp);
    bp->p = cfg->pipeline;
    if (!bp->p) {
        if ((rc = oc_pipeline_new("batch pipeline", &bp->p, err)))
            goto fail;
        bp->own_p = 1;
    }
    if ((rc = oc_pipeline_queue(bp->p, 2, &bp->epoch_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->free_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->fetch_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->ready_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, 1, &bp->gate_q, err)) ||
        (rc = oc_pipeline_queue(bp->p, bp->n_rows, &bp->rows_q, err)) ||
        (rc = oc_pipeline_stage(bp->p, "sample", 1, bp->epoch_q, sample_epoch, bp, &bp->sample_st,
                                err)) ||
        (rc = oc_pipeline_stage(bp->p, "fetch", 1, bp->fetch_q, fetch_batch, bp, &bp->fetch_st,
                                err)))
        goto fail;
    if (n_draw > 1 && (rc = draw_open(bp, n_draw, err)))
        goto fail;
    if (bp->lanes > 1 && ((rc = oc_pipeline_queue(bp->p, bp->n_slots, &bp->gather_q, err)) ||
                          (rc = oc_pipeline_queue(bp->p, bp->lanes, &bp->lane_q, err)) ||
                          (rc = oc_pipeline_stage(bp->p, "gather", bp->lanes, bp->gather_q,
                                                  gather_on_lane, bp, &bp->gather_st, err))))
        goto fail;
    /* a push fails only on a closed queue: a stage the store started on the shared pipeline
       has failed already (diskgnn's planner), and that error is the one to report */
    for (uint32_t i = 0; rc == OC_OK && i < bp->n_slots; i++)
        rc = oc_queue_push(bp->free_q, &bp->slots[i]);
    for (uint32_t i = 0; rc == OC_OK && i < bp->n_rows; i++)
        rc = oc_queue_push(bp->rows_q, &bp->rows[i]);
    for (uint32_t i = 0; rc == OC_OK && bp->lanes > 1 && i < bp->lanes; i++) {
        bp->lane_ids[i] = i;
        rc = oc_queue_push(bp->lane_q, &bp->lane_ids[i]);
    }
    if (rc != OC_OK) {
        rc = oc_pipeline_status(bp->p, err);
        goto fail;
    }
    if ((rc = oc_pipeline_start(bp->p, err)))
        goto fail;
    *out = bp;
    return OC_OK;
fail:
    if (!bp->own_p)
        oc_pipeline_join(bp->p); /* our stages may have started on it: none runs after this */
    oc_batch_pipe_free(bp);
    return rc;
}

uint64_t oc_batch_pipe_n_batches(const struct oc_batch_pipe *bp)
{
    return bp->n_batches;
}

uint32_t oc_batch_pipe_n_rows(const struct oc_batch_pipe *bp)
{
    return bp->n_rows;
}

int oc_batch_pipe_epoch(struct oc_batch_pipe *bp, uint64_t e, struct oc_err *err)
{
    if (bp->in_epoch && bp->handed < bp->n_batches)
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: epoch %" PRIu64 " started with %" PRIu64
                      " batches of epoch %" PRIu64 " not taken",
                      e, bp->n_batches - bp->handed, bp->epoch);
    struct bp_job *job = &bp->jobs[bp->next_job];
    bp->next_job ^= 1;
    job->epoch = e;
    bp->epoch = e;
    bp->handed = 0;
    bp->in_epoch = 1;
    bp->opened = 0;
    if (oc_queue_push(bp->epoch_q, job) != OC_OK)
        return oc_pipeline_status(bp->p, err);
    return OC_OK;
}

int oc_batch_pipe_lend_rows(struct oc_batch_pipe *bp, float **x, uint64_t *cap_floats,
                            struct oc_err *err)
{
    *x = NULL;
    *cap_floats = 0;
    if (bp->lent || (bp->opened && bp->handed < bp->n_batches))
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: a row buffer is lent only between epochs, one at a time");
    void *got;
    if (oc_queue_try_pop(bp->rows_q, &got) != OC_OK) /* every batch given back: all are here */
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: no idle row buffer (a batch was not given back)");
    bp->lent = got;
    *x = bp->lent->x;
    *cap_floats = bp->lent->cap_floats;
    return OC_OK;
}

void oc_batch_pipe_return_rows(struct oc_batch_pipe *bp, float *x, uint64_t cap_floats)
{
    if (!bp->lent)
        return;
    bp->lent->x = x;
    bp->lent->cap_floats = cap_floats;
    (void)oc_queue_push(bp->rows_q, bp->lent); /* never blocks: the queue holds every buffer */
    bp->lent = NULL;
}

int oc_batch_pipe_open(struct oc_batch_pipe *bp, struct oc_err *err)
{
    static int token;
    if (!bp->in_epoch || bp->opened)
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: no epoch to open (start one with oc_batch_pipe_epoch)");
    if (bp->lent)
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: a lent row buffer must be returned before the epoch opens");
    bp->opened = 1;
    if (oc_queue_push(bp->gate_q, &token) != OC_OK)
        return oc_pipeline_status(bp->p, err);
    return OC_OK;
}

int oc_batch_pipe_next(struct oc_batch_pipe *bp, struct oc_pipe_batch **out, struct oc_err *err)
{
    *out = NULL;
    if (!bp->in_epoch || bp->handed >= bp->n_batches)
        return OC_ERR(err, OC_ERR_NOTFOUND,
                      "batch pipeline: every batch of epoch %" PRIu64 " was handed out", bp->epoch);
    if (!bp->opened)
        return OC_ERR(err, OC_ERR_ARG,
                      "batch pipeline: epoch %" PRIu64 " was not opened (oc_batch_pipe_open)",
                      bp->epoch);
    double t0 = oc_now_s();
    struct oc_pipe_batch *next = NULL;
    for (;;) { /* lanes may finish out of order: the batch at position `handed` is next */
        for (uint32_t k = 0; k < bp->n_early && !next; k++)
            if (bp->early[k]->pos == bp->handed) {
                next = bp->early[k];
                bp->early[k] = bp->early[--bp->n_early];
            }
        if (next)
            break;
        void *item;
        int rc = oc_queue_pop(bp->ready_q, &item);
        if (rc) {
            bp->wait_s += oc_now_s() - t0;
            return oc_pipeline_status(bp->p, err);
        }
        next = item;
        if (bp->lanes > 1 && next->pos != bp->handed) {
            if (bp->n_early == bp->n_slots) /* cannot happen: every slot is accounted for */
                return OC_ERR(err, OC_ERR_INTERNAL,
                              "batch pipeline: batch %" PRIu64 " of epoch %" PRIu64 " never came",
                              bp->handed, bp->epoch);
            bp->early[bp->n_early++] = next;
            next = NULL;
        }
    }
    bp->wait_s += oc_now_s() - t0;
    bp->handed++;
    *out = next;
    return OC_OK;
}

void oc_batch_pipe_done(struct oc_batch_pipe *bp, struct oc_pipe_batch *b)
{
    /* the store's part of the batch ends before its slot can be sampled into again */
    oc_store_done(bp->cfg.store, b->epoch, b->index);
    memset(&b->hist, 0, sizeof(b->hist));
    /* never blocks: the free queue holds every slot; closed means cancelled */
    if (b->rows)
        (void)oc_queue_push(bp->rows_q, b->rows);
    b->rows = NULL;
    b->x = NULL;
    (void)oc_queue_push(bp->free_q, b);
}

void oc_batch_pipe_stats(const struct oc_batch_pipe *bp, struct oc_batch_pipe_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->n_sampled = atomic_load(&bp->n_sampled);
    out->n_fetched = atomic_load(&bp->n_fetched);
    out->sample_busy_s = (double)atomic_load(&bp->sample_ns) * 1e-9;
    out->fetch_busy_s =
        oc_stage_busy_s(bp->fetch_st) + (bp->gather_st ? oc_stage_busy_s(bp->gather_st) : 0);
    out->lanes = bp->lanes;
    out->wait_s = bp->wait_s;
    out->samplers = bp->n_draw ? bp->n_draw : 1;
    if (bp->sampler)
        oc_sample_sampler_topo_stats(bp->sampler, &out->topo);
    for (uint32_t i = 0; i < bp->n_draw; i++) {
        struct oc_topo_disk_stats t, zero = {0};
        oc_sample_sampler_topo_stats(bp->drawers[i], &t);
        oc_sample_topo_stats_add_since(&out->topo, &t, &zero); /* each drawer's since open */
    }
}
