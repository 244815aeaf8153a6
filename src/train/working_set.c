/*
 * working_set.c — the memory a training run needs besides the feature store,
 * from what was measured on real batches at start-up (train.c's probe) where
 * there is a measurement, and from bounds where there is none.
 *
 *   probe (train.c, under --mem-budget): sample the first full batches of the
 *   first epoch ─► the largest input-row count ─► one forward + backward on it
 *   ─► the workspace the model, degrees and labels keep ─► struct train_ws
 *
 *   train_ws_bytes(n) = n row buffers of batch_rows rows (the pipeline's:
 *                         depth + 1, or the strategy's fewer,
 *                         oc_store_strategy_row_buffers)
 *                         + max(nothing more for a step: its workspace is held
 *                               already, evaluation's extra rows and buffers)
 *                         + the checkpoint's copy of the model state
 *
 * A batch in flight is reserved batch_rows = WS_MARGIN x the largest probed
 * batch (never more than the fanout bound): batch sizes of one configuration
 * vary by a few percent, so the margin covers the batches not probed; a batch
 * larger still grows its row buffer through the accountant, and fails with
 * OC_ERR_BUDGET naming the batch if the budget cannot give it. Without a
 * probe (no budget) the fanout bound is used, as nothing is sized from it.
 *
 * Place in the data flow: train (start-up, before the store is opened).
 * Thread-safety: pure functions of their arguments.
 * Ownership: nothing is allocated here.
 */
#include "train/train_int.h"

#define EVAL_CHUNK_ROW_BYTES 128 /* exact inference's sampling state per chunk row */

uint64_t train_batch_rows_bound(const struct train_data *d, const struct oc_train_opts *o,
                                uint64_t seeds)
{
    uint64_t n = seeds;
    for (uint32_t l = 0; l < o->n_layers; l++) {
        uint64_t f = o->fanouts[l] < 0 ? d->n_nodes : (uint64_t)o->fanouts[l] + 1;
        n = n > d->n_nodes / f ? d->n_nodes : n * f;
    }
    return n;
}

/* A step's activations and gradients over `rows` input rows, bounded from the widths. */
static uint64_t step_bytes_bound(const struct oc_train_opts *o, uint64_t rows)
{
    return rows * 4 * o->hidden * o->heads * o->n_layers * sizeof(float);
}

void train_ws_from_bound(const struct train_data *d, const struct oc_train_opts *o,
                         struct train_ws *ws)
{
    ws->measured = 0;
    ws->batch_rows = train_batch_rows_bound(d, o, o->batch_size);
    ws->seeds = o->batch_size;
    ws->step_bytes = step_bytes_bound(o, ws->batch_rows);
}

void train_ws_from_probe(const struct train_data *d, const struct oc_train_opts *o,
                         uint64_t largest_rows, uint64_t seeds, uint64_t step_bytes,
                         struct train_ws *ws)
{
    uint64_t bound = train_batch_rows_bound(d, o, o->batch_size);
    uint64_t rows = largest_rows + largest_rows * WS_MARGIN_PCT / 100;
    ws->measured = 1;
    ws->batch_rows = rows < bound ? rows : bound;
    ws->seeds = seeds ? seeds : 1;
    ws->step_bytes = step_bytes + step_bytes * WS_MARGIN_PCT / 100;
}

/* Rows of a batch of `seeds` seeds, scaled from the reserved batch (at most the bound). */
static uint64_t scaled_rows(const struct train_ws *ws, const struct train_data *d,
                            const struct oc_train_opts *o, uint64_t seeds)
{
    uint64_t bound = train_batch_rows_bound(d, o, seeds);
    if (!ws->measured)
        return bound;
    double per_seed = (double)ws->batch_rows / (double)ws->seeds;
    double rows = per_seed * (double)seeds;
    return rows >= (double)bound ? bound : (uint64_t)rows + 1;
}

uint64_t train_ws_gather_rows(const struct train_ws *ws, const struct train_data *d,
                              const struct oc_train_opts *o)
{
    uint64_t eval = o->eval == OC_TRAIN_EVAL_FULL      ? train_eval_chunk_rows(d, o)
                    : o->eval == OC_TRAIN_EVAL_SAMPLED ? scaled_rows(ws, d, o, o->eval_batch_size)
                                                       : 0;
    return eval > ws->batch_rows ? eval : ws->batch_rows;
}

uint64_t train_ws_bytes(const struct train_ws *ws, const struct train_data *d,
                        const struct oc_train_opts *o, uint64_t state_bytes, uint32_t row_buffers)
{
    uint64_t n = ws->batch_rows;
    uint64_t width = o->hidden * o->heads;
    uint64_t widest = width > d->feat_dim ? width : d->feat_dim;
    uint64_t row_floats = n * d->feat_dim; /* what one pipeline row buffer holds */
    uint64_t pipe = row_buffers * (row_floats * sizeof(float) + n * 16);
    /* a measured step's workspace is held already (the probe grew it): counted in `held` */
    uint64_t step = ws->measured ? 0 : ws->step_bytes;
    uint64_t eval, eval_floats; /* eval_floats: what it gathers into the lent buffer */
    if (o->eval == OC_TRAIN_EVAL_NONE) {
        eval = eval_floats = 0;
    } else if (o->eval == OC_TRAIN_EVAL_FULL) {
        /* one chunk's input rows (the lent buffer), ids, degrees and block, the split of each
           node, and the hidden layers' output tables (n_layers - 1, two at a time): in RAM
           (see train_eval_tables_on_disk), else a chunk of each plus the scratch writer and
           reader */
        uint64_t out = width > d->n_classes ? width : d->n_classes;
        uint64_t chunk = train_eval_chunk_rows(d, o), b = o->eval_batch_size;
        uint64_t tables = o->n_layers > 2 ? 2 : o->n_layers - 1;
        eval_floats = chunk * widest;
        /* per chunk row: the sampler's edge buffer and indices (12 B), input ids and id map
           (up to 80 B after power-of-two growth), degrees (8 B), with room for a realloc */
        eval = d->n_nodes + chunk * EVAL_CHUNK_ROW_BYTES +
               b * (sizeof(uint64_t) + out * sizeof(float));
        if (train_eval_tables_on_disk(d, o))
            eval += tables * b * out * sizeof(float) + chunk * oc_io_batch_request_bytes() +
                    EVAL_SCRATCH_IO_BYTES;
        else
            eval += train_eval_tables_bytes(d, o);
    } else {
        /* sampled evaluation batches, outside the pipeline; their workspace grows past the
           training step's when they are larger */
        uint64_t m = scaled_rows(ws, d, o, o->eval_batch_size);
        eval_floats = m * d->feat_dim;
        eval = m * 16;
        if (!ws->measured)
            eval += step_bytes_bound(o, m);
        else if (m > n)
            eval += (uint64_t)((double)ws->step_bytes * (double)(m - n) / (double)n);
    }
    if (eval_floats > row_floats) /* the lent buffer grows */
        eval += (eval_floats - row_floats) * sizeof(float);
    if (o->eval != OC_TRAIN_EVAL_NONE) /* --metric's per-split accumulators */
        for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++)
            eval += train_metric_bytes(o->metric, d->n_classes, d->n_split[s]);
    return pipe + (step > eval ? step : eval) + state_bytes;
}
