/*
 * loader.c — the batch pipeline without a model, for trainers outside
 * offcore (loader.h): loads the dataset as train does (train_data_load),
 * sizes the store from the memory budget minus what is held and what the
 * batches in flight need, opens the store and the batch pipeline on one
 * pipeline, and hands the epoch's batches out one by one.
 *
 *   new: budget ─► data ─► pool ─► probe (budget only) ─► store (on the stages) ─► batch pipeline
 *   epoch(e): drain the rest of e-1 ─► oc_batch_pipe_epoch(e) ─► open
 *             (e was started already when e-1's last batch was handed out: open only)
 *   next / done: oc_batch_pipe_next / _done, counting what the caller holds
 *   world_size > 1: next also cuts rank's share of the batch (train_shard_cut,
 *   seeds [B r / n, B (r+1) / n)) into the held slot's own shard
 *
 * Place in the data flow: train (dataset + sample + store + pipeline →
 * caller); src/api wraps it in the versioned C API.
 * Thread-safety: one thread drives a loader (see loader.h).
 * Ownership: everything here is the loader's and freed by oc_loader_free.
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "offcore/loader.h"
#include "train/train_int.h"

#define LOADER_NO_EPOCH UINT64_MAX

struct oc_loader {
    struct oc_loader_opts o;
    char strategy[64];
    struct train_data data;
    const uint64_t *ids; /* the split's seeds (in data) */
    uint64_t n_ids;
    struct oc_sample_opts so;
    struct oc_pool *pool;
    struct oc_pipeline *stages;
    struct oc_store *store;
    struct oc_batch_pipe *pipe;
    uint64_t batch_rows; /* under a budget: input rows reserved per batch in flight */
    uint64_t epoch, next_epoch, handed, n_batches;
    uint32_t n_held;
    struct oc_pipe_batch **held; /* the n_held batches handed out (room for the pipe's rows) */
    struct train_shard *shares;  /* world_size > 1: held[i]'s share is shares[i] */
    uint32_t n_shares;
    int ahead; /* next_epoch was started when the last batch was handed out */
    /* oc_loader_sample's reference sampler (made on first use, runs on the caller's thread) */
    struct oc_sampler *ref;
    struct oc_sample_epoch ref_ep;
};

void oc_loader_opts_default(struct oc_loader_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->n_layers = 2;
    o->fanouts[0] = 10;
    o->fanouts[1] = 25;
    o->batch_size = 1000;
    o->shuffle = 1;
    o->split = OC_LOADER_TRAIN;
    o->n_epochs = 1;
    o->depth = 2;
    o->world_size = 1;
}

static int loader_opts_check(const struct oc_loader_opts *o, struct oc_err *err)
{
    if (o->n_layers < 1 || o->n_layers > OC_SAMPLE_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "loader: %u layers: must be between 1 and %d", o->n_layers,
                      OC_SAMPLE_MAX_LAYERS);
    for (uint32_t l = 0; l < o->n_layers; l++)
        if (o->fanouts[l] < 1 && o->fanouts[l] != OC_SAMPLE_ALL)
            return OC_ERR(err, OC_ERR_ARG, "loader: fanout %d is not a positive count or -1 (all)",
                          o->fanouts[l]);
    if (o->batch_size == 0)
        return OC_ERR(err, OC_ERR_ARG, "loader: the batch size must be at least 1");
    if ((unsigned)o->split >= OC_LOADER_SPLIT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "loader: split %u is not train (0), val (1) or test (2)",
                      (unsigned)o->split);
    if (o->n_epochs == 0)
        return OC_ERR(err, OC_ERR_ARG, "loader: the number of epochs must be at least 1");
    if (o->depth == 0 || o->depth > 64)
        return OC_ERR(err, OC_ERR_ARG, "loader: depth %u: must be between 1 and 64", o->depth);
    if (o->world_size == 0 || o->rank >= o->world_size)
        return OC_ERR(err, OC_ERR_ARG,
                      "loader: rank %u of world_size %u: world_size must be at least 1 and rank "
                      "from 0 to world_size - 1",
                      o->rank, o->world_size);
    uint32_t index;
    return oc_store_strategy_find(o->strategy ? o->strategy : "memory", &index, err);
}

static int loader_ref_sample(struct oc_loader *l, uint64_t e, uint64_t b,
                             struct oc_sample_batch *out, struct oc_err *err);

/*
 * Under a budget: what the batches in flight take (train's working-set
 * figure for a model-less run: the row buffers strategy `index` holds, and
 * their ids), measured as
 * train measures it on the first full batches of epoch 0 (sampled here and
 * dropped; the pipeline samples them again with the same keys), checked
 * against what loading left; the rest goes to the store.
 */
static int loader_store_bytes(struct oc_loader *l, uint32_t index, uint64_t *store_bytes,
                              uint64_t *batch_rows, struct oc_err *err)
{
    struct oc_train_opts to;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &to);
    to.n_layers = to.n_fanouts = l->o.n_layers;
    memcpy(to.fanouts, l->o.fanouts, sizeof(to.fanouts));
    to.batch_size = l->o.batch_size;
    to.eval = OC_TRAIN_EVAL_NONE;
    to.hidden = 0; /* no model: no step workspace */
    uint64_t n_full = l->n_ids / l->o.batch_size, largest = 0;
    uint64_t n_probe = n_full < WS_PROBE_BATCHES ? (n_full ? n_full : 1) : WS_PROBE_BATCHES;
    struct oc_sample_batch probe;
    oc_sample_batch_init(&probe);
    int rc = OC_OK;
    for (uint64_t b = 0; b < n_probe && rc == OC_OK; b++)
        if ((rc = loader_ref_sample(l, 0, b, &probe, err)) == OC_OK && probe.n_input > largest)
            largest = probe.n_input;
    oc_sample_batch_deinit(&probe);
    if (rc)
        return rc;
    struct train_ws ws;
    train_ws_from_probe(&l->data, &to, largest, l->o.batch_size, 0, &ws);
    uint32_t n_rows = oc_store_strategy_row_buffers(index, l->o.depth);
    uint64_t held = oc_mem_used(), work = train_ws_bytes(&ws, &l->data, &to, 0, n_rows);
    *batch_rows = ws.batch_rows;
    if (held + work >= l->o.mem_budget) {
        char a[32], b[32], c[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "memory budget %s is too small: the topology, labels and splits hold %s "
                      "and %u batches in flight (%" PRIu64 " input rows each, measured) need "
                      "%s before any feature store (a smaller batch size, fanout or depth "
                      "needs less)",
                      oc_format_size(l->o.mem_budget, a, sizeof(a)),
                      oc_format_size(held, b, sizeof(b)), n_rows, ws.batch_rows,
                      oc_format_size(work, c, sizeof(c)));
    }
    *store_bytes = l->o.mem_budget - held - work;
    return OC_OK;
}

static int loader_open_store(struct oc_loader *l, const char *dir, struct oc_err *err)
{
    char plan_dir[4096];
    int rc;
    if (l->o.plan_dir) {
        if (!*l->o.plan_dir || strlen(l->o.plan_dir) >= sizeof(plan_dir))
            return OC_ERR(err, OC_ERR_ARG, "loader: plan directory '%s': empty or too long",
                          l->o.plan_dir);
        snprintf(plan_dir, sizeof(plan_dir), "%s", l->o.plan_dir);
    } else if ((rc = oc_path_join(plan_dir, sizeof(plan_dir), dir, "plan", err))) {
        return rc;
    }
    uint32_t index;
    if ((rc = oc_store_strategy_find(l->strategy, &index, err)))
        return rc;
    struct oc_store_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ds = l->data.ds;
    cfg.graph = &l->data.graph;
    cfg.pool = l->pool;
    cfg.sample_opts = &l->so;
    cfg.n_epochs = l->o.n_epochs;
    cfg.plan_dir = plan_dir;
    cfg.train_ids = l->ids;
    cfg.n_train = l->n_ids;
    cfg.batch_size = l->o.batch_size;
    cfg.lanes = l->o.depth; /* the pipeline gathers at most depth batches at once */
    if (l->o.mem_budget &&
        (rc = loader_store_bytes(l, index, &cfg.mem_bytes, &cfg.batch_rows, err)))
        return rc;
    l->batch_rows = cfg.batch_rows;
    if (l->o.store_bytes && (!cfg.mem_bytes || l->o.store_bytes < cfg.mem_bytes))
        cfg.mem_bytes = l->o.store_bytes; /* leaves room for other loaders under the budget */
    if ((rc = oc_pipeline_new("loader pipeline", &l->stages, err)))
        return rc;
    cfg.pipeline = l->stages;
    if ((rc = oc_store_open(index, &cfg, &l->store, err)))
        oc_err_prefix(err, "strategy %s", l->strategy);
    return rc;
}

static int loader_open_pipe(struct oc_loader *l, struct oc_err *err)
{
    struct oc_batch_pipe_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.store = l->store;
    pc.graph = &l->data.graph;
    pc.sample = &l->so;
    pc.pool = l->pool;
    pc.train_ids = l->ids;
    pc.n_train = l->n_ids;
    pc.batch_size = l->o.batch_size;
    pc.depth = l->o.depth;
    pc.pipeline = l->stages;
    pc.no_shuffle = !l->o.shuffle;
    /* under a budget the row buffers are held from the start: a loader opened later (the
       budget is the process's) sees them */
    pc.reserve_rows = l->batch_rows; /* and a buffer grown for a larger batch shrinks back */
    pc.reserve_now = 1;
    int rc = oc_batch_pipe_new(&pc, &l->pipe, err);
    if (rc == OC_OK) {
        l->n_batches = oc_batch_pipe_n_batches(l->pipe);
        uint32_t n = oc_batch_pipe_n_rows(l->pipe);
        if (!(l->held =
                  oc_alloc((size_t)(n ? n : 1) * sizeof(*l->held), "loader: held batches", err)))
            rc = err->status;
        else if (l->o.world_size > 1 &&
                 !(l->shares = oc_calloc(n ? n : 1, sizeof(*l->shares), "loader: shares", err)))
            rc = err->status;
        else if (l->shares)
            l->n_shares = n ? n : 1;
    }
    return rc;
}

int oc_loader_new(const char *dir, const struct oc_loader_opts *o, struct oc_loader **out,
                  struct oc_err *err)
{
    *out = NULL;
    int rc = loader_opts_check(o, err);
    if (rc)
        return rc;
    struct oc_loader *l = oc_calloc(1, sizeof(*l), "loader", err);
    if (!l)
        return err->status;
    l->o = *o;
    snprintf(l->strategy, sizeof(l->strategy), "%s", o->strategy ? o->strategy : "memory");
    l->o.strategy = l->strategy;
    l->o.plan_dir = NULL; /* borrowed for this call only */
    l->epoch = LOADER_NO_EPOCH;
    l->so.n_layers = o->n_layers;
    memcpy(l->so.fanouts, o->fanouts, sizeof(l->so.fanouts));
    l->so.seed = o->seed;
    uint64_t prev_budget = oc_mem_budget();
    oc_mem_set_budget(o->mem_budget); /* before loading: the topology counts */
    unsigned n_threads = o->n_threads;
    if (n_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (unsigned)n : 1;
    }
    static const enum train_split splits[OC_LOADER_SPLIT_COUNT] = {
        TRAIN_SPLIT_TRAIN, TRAIN_SPLIT_VAL, TRAIN_SPLIT_TEST};
    if ((rc = train_data_load(dir, NULL, l->strategy, 0, &l->data, err)))
        goto fail;
    l->ids = l->data.split[splits[o->split]];
    l->n_ids = l->data.n_split[splits[o->split]];
    if (l->n_ids == 0) {
        rc = OC_ERR(err, OC_ERR_ARG, "%s: the %s split is empty", dir,
                    o->split == OC_LOADER_VAL ? "validation" : "test");
        goto fail;
    }
    l->o.plan_dir = o->plan_dir;
    if ((rc = oc_pool_new(n_threads, &l->pool, err)) || (rc = loader_open_store(l, dir, err)) ||
        (rc = loader_open_pipe(l, err)))
        goto fail;
    l->o.plan_dir = NULL;
    *out = l;
    return OC_OK;
fail:
    l->o.plan_dir = NULL;
    oc_loader_free(l);
    oc_mem_set_budget(prev_budget); /* a loader that did not open sets nothing */
    return rc;
}

void oc_loader_free(struct oc_loader *l)
{
    if (!l)
        return;
    oc_pipeline_free(l->stages); /* joins every stage before the pipe and the store go */
    oc_batch_pipe_free(l->pipe);
    oc_free(l->held);
    for (uint32_t i = 0; i < l->n_shares; i++)
        train_shard_deinit(&l->shares[i]);
    oc_free(l->shares);
    oc_store_free(l->store);
    oc_pool_free(l->pool);
    oc_sample_sampler_free(l->ref);
    if (l->ref_ep.orig)
        oc_sample_epoch_deinit(&l->ref_ep);
    train_data_deinit(&l->data);
    oc_free(l);
}

uint64_t oc_loader_n_batches(const struct oc_loader *l)
{
    return l->n_batches;
}

uint64_t oc_loader_feat_dim(const struct oc_loader *l)
{
    return l->data.feat_dim;
}

uint32_t oc_loader_max_held(const struct oc_loader *l)
{
    return oc_batch_pipe_n_rows(l->pipe) - 1;
}

const int32_t *oc_loader_labels(const struct oc_loader *l)
{
    return l->data.labels;
}

int oc_loader_epoch(struct oc_loader *l, uint64_t e, struct oc_err *err)
{
    if (e != l->next_epoch || e >= l->o.n_epochs)
        return OC_ERR(err, OC_ERR_ARG,
                      "loader: epoch %" PRIu64 " cannot start: epochs run in order from 0 up to "
                      "the %u the loader was opened for, and the next is %" PRIu64,
                      e, l->o.n_epochs, l->next_epoch);
    if (l->n_held)
        return OC_ERR(err, OC_ERR_ARG,
                      "loader: epoch %" PRIu64 " cannot start while %u batches are held "
                      "(release them first)",
                      e, l->n_held);
    int rc;
    if (l->ahead) { /* sampled ahead since the last batch of e - 1 (or that start failed) */
        l->ahead = 0;
        if ((rc = oc_pipeline_status(l->stages, err)) || (rc = oc_batch_pipe_open(l->pipe, err)))
            return rc;
        goto opened;
    }
    while (l->epoch != LOADER_NO_EPOCH && l->handed < l->n_batches) {
        struct oc_pipe_batch *b; /* the rest of the unfinished epoch */
        if ((rc = oc_batch_pipe_next(l->pipe, &b, err)))
            return rc;
        l->handed++;
        oc_batch_pipe_done(l->pipe, b);
    }
    if ((rc = oc_batch_pipe_epoch(l->pipe, e, err)) || (rc = oc_batch_pipe_open(l->pipe, err)))
        return rc;
opened:
    l->epoch = e;
    l->next_epoch = e + 1;
    l->handed = 0;
    return OC_OK;
}

int oc_loader_next(struct oc_loader *l, struct oc_pipe_batch **out, struct oc_err *err)
{
    *out = NULL;
    if (l->epoch == LOADER_NO_EPOCH)
        return OC_ERR(err, OC_ERR_ARG, "loader: no epoch started");
    if (l->handed == l->n_batches)
        return OC_ERR(err, OC_ERR_NOTFOUND, "loader: every batch of epoch %" PRIu64 " was taken",
                      l->epoch);
    if (l->n_held > oc_loader_max_held(l))
        return OC_ERR(err, OC_ERR_ARG,
                      "loader: %u batches are held and at most %u may be when the next is "
                      "taken (release one)",
                      l->n_held, oc_loader_max_held(l));
    int rc = oc_batch_pipe_next(l->pipe, out, err);
    if (rc)
        return rc;
    l->handed++;
    l->held[l->n_held++] = *out;
    if (l->shares) { /* the rank's share, by the rule of train's micro-shards */
        uint64_t lo, hi;
        const struct oc_sample_batch *b = &(*out)->batch;
        train_shard_range(b->n_seeds, l->o.world_size, l->o.rank, &lo, &hi);
        if ((rc = train_shard_cut(&l->shares[l->n_held - 1], b, (*out)->x, NULL, l->data.feat_dim,
                                  lo, hi, err))) {
            oc_loader_done(l, *out);
            *out = NULL;
            return rc;
        }
    }
    /* as train does: the next epoch is sampled (and shown to the store) while the caller
       still trains on this one's last batches; its gathers wait for oc_loader_epoch */
    if (l->handed == l->n_batches && l->next_epoch < l->o.n_epochs) {
        struct oc_err ignored; /* a failure cancels the pipeline: oc_loader_epoch reports it */
        (void)oc_batch_pipe_epoch(l->pipe, l->next_epoch, &ignored);
        l->ahead = 1;
    }
    return OC_OK;
}

void oc_loader_done(struct oc_loader *l, struct oc_pipe_batch *b)
{
    uint32_t i = 0;
    while (b && i < l->n_held && l->held[i] != b)
        i++;
    if (!b || i == l->n_held)
        return; /* not held: released already (a copy of a batch released twice) */
    l->held[i] = l->held[--l->n_held];
    if (l->shares) { /* the share goes with its batch; the freed one keeps its arrays */
        struct train_shard t = l->shares[i];
        l->shares[i] = l->shares[l->n_held];
        l->shares[l->n_held] = t;
    }
    oc_batch_pipe_done(l->pipe, b);
}

void oc_loader_view(const struct oc_loader *l, const struct oc_pipe_batch *b,
                    const struct oc_sample_batch **batch, const float **x)
{
    *batch = NULL;
    *x = NULL;
    for (uint32_t i = 0; b && i < l->n_held; i++)
        if (l->held[i] == b) {
            *batch = l->shares ? &l->shares[i].b : &b->batch;
            *x = l->shares ? l->shares[i].x : b->x;
            return;
        }
}

/* Batch b of epoch e from the reference sampler (made on first use), without a range check. */
static int loader_ref_sample(struct oc_loader *l, uint64_t e, uint64_t b,
                             struct oc_sample_batch *out, struct oc_err *err)
{
    int rc;
    if (!l->ref && (rc = oc_sample_sampler_new(&l->data.graph, &l->so, NULL, &l->ref, err)))
        return rc;
    if (!l->ref_ep.orig &&
        (rc = oc_sample_epoch_init(&l->ref_ep, l->ids, l->n_ids, l->o.batch_size, 0, err)))
        return rc;
    if (l->o.shuffle)
        oc_sample_epoch_shuffle(&l->ref_ep, l->o.seed, e);
    else
        oc_sample_epoch_unshuffle(&l->ref_ep);
    const uint64_t *seeds;
    uint64_t n_seeds;
    if ((rc = oc_sample_epoch_batch(&l->ref_ep, b, &seeds, &n_seeds, err)))
        return rc;
    return oc_sample_neighbors(l->ref, e, b, seeds, n_seeds, out, err);
}

int oc_loader_sample(struct oc_loader *l, uint64_t e, uint64_t b, struct oc_sample_batch *out,
                     struct oc_err *err)
{
    if (b >= l->n_batches)
        return OC_ERR(err, OC_ERR_ARG,
                      "loader: batch %" PRIu64 " is out of range (%" PRIu64 " batches per epoch)",
                      b, l->n_batches);
    return loader_ref_sample(l, e, b, out, err);
}

void oc_loader_stats(const struct oc_loader *l, struct oc_loader_stats *out)
{
    memset(out, 0, sizeof(*out));
    oc_store_stats(l->store, &out->store);
    oc_batch_pipe_stats(l->pipe, &out->pipe);
    out->mem_used = oc_mem_used();
    out->mem_peak = oc_mem_peak();
}
