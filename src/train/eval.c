/*
 * eval.c — accuracy on the train/val/test splits after an epoch, and the
 * --metric (metric.c) on val/test from the same logits, two ways:
 *   full:    exact layer-wise inference (DGL's `inference`): layer l is
 *            evaluated for every node from layer l-1's output of every node,
 *            with all neighbors, in chunks of at most eval_batch_size
 *            destinations whose in-degrees + 1 sum to at most
 *            train_eval_chunk_rows (the rows the memory estimate reserved);
 *            GCN uses whole-graph out-degrees so the result equals
 *            full-graph GraphConv. Each hidden layer's output table is kept
 *            in RAM, or when they would take over a quarter of --mem-budget in a
 *            scratch file read back by id
 *            (eval_table.c); the last layer is scored chunk by chunk and
 *            never stored whole.
 *   sampled: mini-batches of the validation and test splits sampled with
 *            the training fanouts (RNG streams distinct from training's), no
 *            dropout; the training split is not run again (the epoch's train
 *            accuracy is measured on its training batches).
 * Under --distributed every rank evaluates (a collective): rank r of N takes
 * batches [B r / N, B (r+1) / N) of the B sampled batches (the validation
 * split's, then the test split's, in order), or the
 * chunks [C r / N, C (r+1) / N) of full inference's last layer (each rank
 * computes the hidden layers whole: every chunk reads every node's output),
 * the same batches and chunks one process computes; eval_reduce then sums
 * the counts and reduces the --metric (train_metric_reduce), so every rank
 * gets one process's numbers, bit for bit. On a partitioned dataset
 * (train_eval_set_part) input feature rows are fetched from their owners
 * (train_part_fetch, a collective): a rank with fewer batches or chunks of
 * its own than another joins the other's remaining fetches with none.
 *
 * Place in the data flow: train; uses sample (blocks) and nn (layers).
 * Thread-safety: one evaluation at a time per run; kernels use the pool.
 * Ownership: owns its sampler, buffers and tensors; borrows data and model.
 */
#include <string.h>

#include "train/dist.h"
#include "train/train_int.h"

/* Reads in flight of the scratch reader of --eval full under a budget. */
#define EVAL_IO_DEPTH 256u

struct train_eval {
    const struct train_data *d;
    struct oc_store *store;
    struct oc_nn_model *m;
    struct oc_nn_backend *be;
    struct oc_pool *pool;
    const struct oc_train_opts *o;
    struct oc_sampler *sampler; /* full: 1 layer, all neighbors; sampled: training fanouts */
    struct oc_sample_batch batch;
    struct oc_sample_epoch split_ep[TRAIN_SPLIT_COUNT];
    struct train_gather gather;
    struct train_degrees src_deg; /* whole-graph out-degree of the batch's input nodes */
    struct train_labels labels;
    struct train_metric metric[TRAIN_SPLIT_COUNT]; /* val/test, unless --metric acc */
    /* full */
    uint64_t chunk_rows;        /* see train_eval_chunk_rows */
    uint64_t *chunk_ids;        /* one chunk's destinations */
    uint8_t *split_of;          /* per node: bit s set if it is in split s */
    struct eval_table table[2]; /* ping-pong layer outputs (hidden layers only) */
    struct oc_nn_tensor logits; /* the last layer's output of one chunk */
    struct oc_io_batch *io;     /* reads a table from its scratch file */
    char scratch[4096];         /* where scratch files go (on disk only) */
    uint32_t rank, n_ranks;     /* --distributed: this rank's share of the batches / chunks */
    struct train_part *part;    /* a partitioned dataset's (borrowed): rows from their owners */
    uint64_t units_own, units;  /* the last run's batches or last-layer chunks: own, all */
};

uint64_t train_eval_chunk_rows(const struct train_data *d, const struct oc_train_opts *o)
{
    uint64_t rows = o->eval_batch_size;
    rows = rows > d->n_nodes / 16 ? d->n_nodes : rows * 16;
    return d->max_in_deg + 1 > rows ? d->max_in_deg + 1 : rows;
}

static int eval_full_new(struct train_eval *ev, const char *scratch_dir, struct oc_err *err)
{
    const struct train_data *d = ev->d;
    int on_disk = train_eval_tables_on_disk(d, ev->o);
    ev->chunk_rows = train_eval_chunk_rows(d, ev->o);
    ev->chunk_ids = oc_alloc(ev->o->eval_batch_size * sizeof(uint64_t), "evaluation node ids", err);
    ev->split_of = oc_calloc(d->n_nodes, 1, "evaluation split of each node", err);
    if (!ev->chunk_ids || !ev->split_of)
        return err->status;
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        for (uint64_t i = 0; i < d->n_split[s]; i++)
            ev->split_of[d->split[s][i]] |= (uint8_t)(1u << s);
    ev->table[0].on_disk = ev->table[1].on_disk = on_disk;
    if (!on_disk)
        return OC_OK;
    int rc;
    if (!scratch_dir || !*scratch_dir || strlen(scratch_dir) >= sizeof(ev->scratch))
        return OC_ERR(err, OC_ERR_ARG, "--scratch '%s': empty or too long",
                      scratch_dir ? scratch_dir : "");
    snprintf(ev->scratch, sizeof(ev->scratch), "%s", scratch_dir);
    /* A refused scratch directory leaves nothing this call created (made: its first new
       directory). Only a directory offcore made or found empty is marked, and only in a
       marked one are unmarked scratch files of dead runs removed. */
    char made[4096];
    int owned = 0;
    unsigned n_stale;
    if ((rc = oc_mkdir_p_made(ev->scratch, made, sizeof(made), err)))
        return rc;
    if ((rc = oc_dir_make_owned(ev->scratch, &owned, err)) ||
        (rc = oc_fs_check_space(ev->scratch, train_eval_tables_bytes(d, ev->o),
                                "layer-wise inference (--eval full under --mem-budget)", err)) ||
        /* stale scratch of a run that died before unlinking it */
        (rc = oc_tmp_clean_stale(ev->scratch, "eval-layer.f32", &n_stale, err)) ||
        (rc = oc_io_batch_new(EVAL_IO_DEPTH, EVAL_IO_BOUNCE_BYTES, &ev->io, err)) ||
        (rc = oc_io_batch_reserve(ev->io, ev->chunk_rows, err))) {
        if (made[0]) {
            oc_dir_unmark(ev->scratch);
            oc_rmdir_made(ev->scratch, made);
        }
        return rc;
    }
    return OC_OK;
}

uint64_t train_eval_tables_bytes(const struct train_data *d, const struct oc_train_opts *o)
{
    uint64_t width = o->hidden * o->heads, tables = o->n_layers > 2 ? 2 : o->n_layers - 1;
    return tables * d->n_nodes * width * sizeof(float);
}

int train_eval_tables_on_disk(const struct train_data *d, const struct oc_train_opts *o)
{
    return o->eval == OC_TRAIN_EVAL_FULL && o->mem_budget &&
           train_eval_tables_bytes(d, o) > o->mem_budget / EVAL_TABLES_BUDGET_SHARE;
}

int train_eval_new(const struct train_data *d, struct oc_store *store, struct oc_nn_model *m,
                   struct oc_nn_backend *be, struct oc_pool *pool, const struct oc_train_opts *o,
                   const char *scratch_dir, struct train_eval **out, struct oc_err *err)
{
    *out = NULL;
    struct train_eval *ev = oc_calloc(1, sizeof(*ev), "evaluator", err);
    if (!ev)
        return err->status;
    ev->d = d;
    ev->store = store;
    ev->m = m;
    ev->be = be;
    ev->pool = pool;
    ev->o = o;
    ev->rank = o->distributed ? oc_dist_rank() : 0;
    ev->n_ranks = o->distributed ? oc_dist_size() : 1;
    oc_sample_batch_init(&ev->batch);
    eval_table_init(&ev->table[0], be, 0);
    eval_table_init(&ev->table[1], be, 0);
    oc_nn_tensor_init(&ev->logits, be, OC_NN_F32);
    int rc;
    if (o->metric != OC_TRAIN_METRIC_ACC)
        for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++) {
            uint64_t n_pos = 0, n_neg = 0;
            if (o->metric == OC_TRAIN_METRIC_ROCAUC)
                train_split_binary_counts(d, s, &n_pos, &n_neg);
            if ((rc =
                     train_metric_init(&ev->metric[s], o->metric, d->n_classes, n_pos, n_neg, err)))
                goto fail;
        }
    struct oc_sample_opts so = {0};
    so.seed = o->seed;
    if (o->eval == OC_TRAIN_EVAL_FULL) {
        so.n_layers = 1;
        so.fanouts[0] = OC_SAMPLE_ALL;
        if ((rc = eval_full_new(ev, scratch_dir, err)))
            goto fail;
    } else {
        so.n_layers = o->n_layers;
        memcpy(so.fanouts, o->fanouts, sizeof(so.fanouts));
        for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
            if ((rc = oc_sample_epoch_init(&ev->split_ep[s], d->split[s], d->n_split[s],
                                           o->eval_batch_size, 0, err)))
                goto fail;
    }
    if ((rc = oc_sample_sampler_new(&d->graph, &so, pool, &ev->sampler, err)))
        goto fail;
    *out = ev;
    return OC_OK;
fail:
    train_eval_free(ev);
    return rc;
}

void train_eval_free(struct train_eval *ev)
{
    if (!ev)
        return;
    oc_sample_sampler_free(ev->sampler);
    oc_sample_batch_deinit(&ev->batch);
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        if (ev->split_ep[s].orig)
            oc_sample_epoch_deinit(&ev->split_ep[s]);
    train_gather_deinit(&ev->gather);
    oc_free(ev->chunk_ids);
    oc_free(ev->split_of);
    oc_free(ev->src_deg.deg);
    oc_free(ev->labels.labels);
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        train_metric_deinit(&ev->metric[s]);
    eval_table_deinit(&ev->table[0]);
    eval_table_deinit(&ev->table[1]);
    oc_nn_tensor_deinit(&ev->logits);
    oc_io_batch_free(ev->io);
    oc_free(ev);
}

/* Starts an evaluation of the --metric (a no-op with acc). */
static void metrics_reset(struct train_eval *ev)
{
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
        if (ev->o->metric != OC_TRAIN_METRIC_ACC)
            train_metric_reset(&ev->metric[s]);
}

/* The --metric of val and test into metric[] (their accuracy with acc). */
static void metrics_value(struct train_eval *ev, const double acc[TRAIN_SPLIT_COUNT],
                          double metric[TRAIN_SPLIT_COUNT])
{
    metric[TRAIN_SPLIT_TRAIN] = 0.0;
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
        metric[s] =
            ev->o->metric == OC_TRAIN_METRIC_ACC ? acc[s] : train_metric_value(&ev->metric[s]);
}

/*
 * Under --distributed, the whole evaluation from every rank's share: the
 * per-split correct and counted rows summed and the --metric accumulators
 * reduced (train_metric_reduce), so every rank holds what one process
 * computes.
 */
static int eval_reduce(struct train_eval *ev, uint64_t correct[TRAIN_SPLIT_COUNT],
                       uint64_t counted[TRAIN_SPLIT_COUNT], struct oc_err *err)
{
    if (ev->n_ranks < 2)
        return OC_OK;
    uint64_t v[2 * TRAIN_SPLIT_COUNT];
    memcpy(v, correct, TRAIN_SPLIT_COUNT * sizeof(uint64_t));
    memcpy(v + TRAIN_SPLIT_COUNT, counted, TRAIN_SPLIT_COUNT * sizeof(uint64_t));
    int rc = oc_dist_sum_u64(v, 2 * TRAIN_SPLIT_COUNT, err);
    if (rc)
        return rc;
    memcpy(correct, v, TRAIN_SPLIT_COUNT * sizeof(uint64_t));
    memcpy(counted, v + TRAIN_SPLIT_COUNT, TRAIN_SPLIT_COUNT * sizeof(uint64_t));
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
        if (ev->o->metric != OC_TRAIN_METRIC_ACC && (rc = train_metric_reduce(&ev->metric[s], err)))
            return rc;
    return OC_OK;
}

/* The end of the chunk of exact inference that starts at destination lo. */
static uint64_t full_chunk_end(const struct train_eval *ev, uint64_t lo)
{
    const uint64_t *indptr = ev->d->graph.indptr;
    uint64_t rows = 0, hi;
    for (hi = lo; hi < ev->d->n_nodes && hi - lo < ev->o->eval_batch_size; hi++) {
        uint64_t r = indptr[hi + 1] - indptr[hi] + 1;
        if (hi > lo && rows + r > ev->chunk_rows)
            break;
        rows += r;
    }
    return hi;
}

/* The feature rows of ids into ev's gather buffer, as x: from the store, or their owners. */
static int eval_gather(struct train_eval *ev, const uint64_t *ids, uint64_t n,
                       struct oc_nn_tensor *x, struct oc_err *err)
{
    uint64_t dim = ev->d->feat_dim;
    if (!ev->part)
        return train_gather_store(&ev->gather, ev->store, NULL, dim, ids, n, ev->be, x, err);
    int rc = train_gather_reserve(&ev->gather, n, dim, err);
    if (rc == OC_OK)
        rc = train_part_fetch(ev->part, ev->store, ids, n, dim, ev->gather.buf, err);
    if (rc == OC_OK)
        rc = oc_nn_tensor_wrap(ev->be, OC_NN_F32, ev->gather.buf, n, dim, x, err);
    return rc;
}

/*
 * On a partitioned dataset: the fetches this rank joins with nothing after
 * its own `own` units, so that it makes as many as a rank with the most
 * units of `units` split over the ranks (train_shard_range's shares differ
 * by one at most).
 */
static int eval_pad(struct train_eval *ev, uint64_t units, uint64_t own, struct oc_err *err)
{
    uint64_t most = (units + ev->n_ranks - 1) / ev->n_ranks;
    for (uint64_t k = own; ev->part && k < most; k++) {
        int rc = train_part_fetch(ev->part, ev->store, NULL, 0, ev->d->feat_dim, NULL, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

/*
 * One layer of exact inference for destinations [lo, lo + n): their blocks
 * with every neighbor, input rows from the feature store (layer 0) or from
 * the previous layer's table, output into out.
 */
static int full_chunk(struct train_eval *ev, uint32_t l, struct eval_table *in, uint64_t lo,
                      uint64_t n, struct oc_nn_tensor *out, struct oc_err *err)
{
    const struct train_data *d = ev->d;
    for (uint64_t i = 0; i < n; i++)
        ev->chunk_ids[i] = lo + i;
    int rc;
    if ((rc = oc_sample_full_layer(ev->sampler, ev->chunk_ids, n, &ev->batch, err)))
        return rc;
    const struct oc_sample_block *sb = &ev->batch.blocks[0];
    if ((rc = train_src_degrees(&ev->batch, d->out_deg, &ev->src_deg, err)))
        return rc;
    struct oc_nn_block blk = {sb->n_src, sb->n_dst, sb->indptr, sb->indices, ev->src_deg.deg};
    struct oc_nn_tensor x;
    if (l == 0)
        rc = eval_gather(ev, ev->batch.input_ids, sb->n_src, &x, err);
    else
        rc = eval_table_gather(in, ev->io, &ev->gather, ev->batch.input_ids, sb->n_src, ev->pool,
                               ev->be, &x, err);
    if (rc)
        return rc;
    return oc_nn_model_forward_layer(ev->m, l, &blk, &x, out, err);
}

static int eval_full(struct train_eval *ev, double acc[TRAIN_SPLIT_COUNT], struct oc_err *err)
{
    const struct train_data *d = ev->d;
    uint32_t n_layers = oc_nn_model_config(ev->m)->n_layers;
    uint64_t correct[TRAIN_SPLIT_COUNT] = {0}, counted[TRAIN_SPLIT_COUNT] = {0};
    /* the last layer's chunks, numbered in order: this rank scores [first, end) of them (every
       rank computes the hidden layers whole, as each needs every node's output) */
    uint64_t n_chunks = 0, first = 0, end = 0;
    for (uint64_t lo = 0; lo < d->n_nodes; lo = full_chunk_end(ev, lo))
        n_chunks++;
    train_shard_range(n_chunks, ev->n_ranks, ev->rank, &first, &end);
    ev->units = n_chunks;
    ev->units_own = end - first;
    int rc;
    for (uint32_t l = 0; l < n_layers; l++) {
        uint64_t in_dim, out_dim;
        if ((rc = oc_nn_model_layer_dims(ev->m, l, &in_dim, &out_dim, err)))
            return rc;
        int last = l + 1 == n_layers;
        struct eval_table *in = &ev->table[(l + 1) % 2], *outt = &ev->table[l % 2];
        if (!last && (rc = eval_table_begin(outt, ev->scratch, d->n_nodes, out_dim, err)))
            return rc;
        uint64_t k = 0;
        for (uint64_t lo = 0, hi; lo < d->n_nodes; lo = hi, k++) {
            hi = full_chunk_end(ev, lo);
            if (last && (k < first || k >= end))
                continue;
            uint64_t n = hi - lo;
            struct oc_nn_tensor out;
            if (last)
                rc = oc_nn_tensor_resize(&ev->logits, n, out_dim, "inference logits", err);
            else
                rc = eval_table_rows(outt, lo, n, &out, err);
            if (rc || (rc = full_chunk(ev, l, in, lo, n, last ? &ev->logits : &out, err)))
                return rc;
            if (!last) {
                if ((rc = eval_table_put(outt, lo, n, err)))
                    return rc;
                continue;
            }
            /* the last layer is scored as it is computed: its logits are never stored whole */
            const float *logits = ev->logits.data;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = lo + i;
                if (!ev->split_of[v] || d->labels[v] < 0)
                    continue;
                const float *row = logits + i * out_dim;
                int hit = train_row_argmax(row, out_dim) == (uint64_t)d->labels[v];
                for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
                    if (ev->split_of[v] & (1u << s)) {
                        counted[s]++;
                        correct[s] += (uint64_t)hit;
                        if (s != TRAIN_SPLIT_TRAIN && ev->o->metric != OC_TRAIN_METRIC_ACC)
                            train_metric_add(&ev->metric[s], row, out_dim, d->labels[v]);
                    }
            }
        }
        if (!last && (rc = eval_table_finish(outt, err)))
            return rc;
        /* one layer: its chunks read features, this rank's share of them only */
        if (last && l == 0 && (rc = eval_pad(ev, n_chunks, end - first, err)))
            return rc;
    }
    if ((rc = eval_reduce(ev, correct, counted, err)))
        return rc;
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        acc[s] = counted[s] ? (double)correct[s] / (double)counted[s] : 0.0;
    return OC_OK;
}

static int eval_sampled(struct train_eval *ev, uint64_t epoch, double acc[TRAIN_SPLIT_COUNT],
                        struct oc_err *err)
{
    const struct train_data *d = ev->d;
    struct oc_nn_block blocks[OC_SAMPLE_MAX_LAYERS];
    int rc;
    uint64_t correct[TRAIN_SPLIT_COUNT] = {0}, counted[TRAIN_SPLIT_COUNT] = {0};
    /* the validation batches, then the test batches, numbered in order: this rank evaluates
       [first, end) of them (all in one process) */
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
        ev->units += oc_sample_epoch_n_batches(&ev->split_ep[s]);
    uint64_t first, end, at = 0;
    train_shard_range(ev->units, ev->n_ranks, ev->rank, &first, &end);
    ev->units_own = end - first;
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++) {
        struct oc_sample_epoch *ep = &ev->split_ep[s];
        uint64_t nb = oc_sample_epoch_n_batches(ep), lo = first > at ? first - at : 0;
        uint64_t hi = end > at ? (end - at < nb ? end - at : nb) : 0;
        at += nb;
        for (uint64_t b = lo; b < hi; b++) {
            const uint64_t *seeds;
            uint64_t n_seeds;
            if ((rc = oc_sample_epoch_batch(ep, b, &seeds, &n_seeds, err)))
                return rc;
            /* Streams (1 + split) << 32 | epoch never meet training's epoch numbers. */
            uint64_t stream = ((uint64_t)(s + 1) << 32) | epoch;
            if ((rc = oc_sample_neighbors(ev->sampler, stream, b, seeds, n_seeds, &ev->batch, err)))
                return rc;
            if ((rc = train_src_degrees(&ev->batch, d->out_deg, &ev->src_deg, err)))
                return rc;
            train_blocks_from_batch(&ev->batch, ev->src_deg.deg, blocks);
            struct oc_nn_tensor x;
            if ((rc = eval_gather(ev, ev->batch.input_ids, ev->batch.n_input, &x, err)))
                return rc;
            const struct oc_nn_tensor *logits;
            struct oc_nn_step step = {0, stream, b};
            if ((rc = oc_nn_model_forward(ev->m, blocks, &x, &step, &logits, err)))
                return rc;
            if ((rc = train_labels_of(&ev->labels, d->labels, seeds, n_seeds, err)))
                return rc;
            struct oc_nn_loss loss;
            if ((rc = oc_nn_model_loss(ev->m, ev->labels.labels, &loss, err)))
                return rc;
            if (ev->o->metric != OC_TRAIN_METRIC_ACC)
                for (uint64_t i = 0; i < n_seeds; i++)
                    if (ev->labels.labels[i] >= 0)
                        train_metric_add(&ev->metric[s],
                                         (const float *)logits->data + i * logits->n_cols,
                                         logits->n_cols, ev->labels.labels[i]);
            correct[s] += loss.n_correct;
            counted[s] += loss.n_counted;
        }
    }
    if ((rc = eval_pad(ev, ev->units, ev->units_own, err)) ||
        (rc = eval_reduce(ev, correct, counted, err)))
        return rc;
    /* the training split is not evaluated again: its accuracy comes from the training batches */
    acc[TRAIN_SPLIT_TRAIN] = 0.0;
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
        acc[s] = counted[s] ? (double)correct[s] / (double)counted[s] : 0.0;
    return OC_OK;
}

int train_eval_run(struct train_eval *ev, uint64_t epoch, float **rows, uint64_t *cap_rows,
                   double acc[TRAIN_SPLIT_COUNT], double metric[TRAIN_SPLIT_COUNT],
                   struct oc_err *err)
{
    metrics_reset(ev);
    ev->units = ev->units_own = 0;
    /* gathered rows go into the buffer lent for the evaluation (grown as needed) */
    ev->gather.buf = *rows;
    ev->gather.cap_floats = *cap_rows;
    int rc = ev->o->eval == OC_TRAIN_EVAL_FULL ? eval_full(ev, acc, err)
                                               : eval_sampled(ev, epoch, acc, err);
    *rows = ev->gather.buf;
    *cap_rows = ev->gather.cap_floats;
    ev->gather.buf = NULL;
    ev->gather.cap_floats = 0;
    if (rc == OC_OK)
        metrics_value(ev, acc, metric);
    return rc;
}

void train_eval_set_part(struct train_eval *ev, struct train_part *tp)
{
    ev->part = tp;
}

void train_eval_units(const struct train_eval *ev, uint64_t *own, uint64_t *all)
{
    *own = ev->units_own;
    *all = ev->units;
}
