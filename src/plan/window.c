/*
 * window.c — DiskGNN's window planner (window.h): the schedule of windows
 * over a run's epochs, and a window's batches sampled offline into its
 * trace.
 *
 * Place in the data flow: plan; sampler ──► trace ──► store's diskgnn (lays
 * out and packs it).
 * Thread-safety: a pl_window is driven by one thread at a time.
 * Ownership: the pl_window owns its sampler and arrays (pl_window_close).
 */
#include <inttypes.h>
#include <string.h>

#include "plan/window.h"

/* ---- the schedule ------------------------------------------------------------ */

/* Windows of the first epoch after its head: batches [head, nb) in windows of win. */
static uint64_t head_rest(const struct pl_windows *w)
{
    return w->head ? pl_windows_per_epoch(w->nb - w->head, w->win) : 0;
}

void pl_windows_init(struct pl_windows *w, uint64_t nb, uint64_t win, uint64_t head,
                     uint64_t first_epoch, uint64_t n_epochs, int reuse)
{
    w->nb = nb;
    w->win = win ? win : nb;
    w->head = head;
    w->first_epoch = first_epoch;
    w->wpe = pl_windows_per_epoch(nb, w->win);
    /* reuse: run epochs, each through every window; fresh samples: windows */
    w->n_win = (n_epochs - first_epoch) * (reuse ? 1 : w->wpe);
    if (head) /* the first epoch: its head and the windows of the rest */
        w->n_win += 1 + head_rest(w) - w->wpe;
}

void pl_windows_span(const struct pl_windows *w, uint64_t k, uint64_t *epoch, uint64_t *first,
                     uint64_t *count)
{
    uint64_t W = w->win, h = w->head;
    if (h && k == 0) {
        *epoch = w->first_epoch, *first = 0, *count = h;
        return;
    }
    if (h && k - 1 < head_rest(w)) {
        *epoch = w->first_epoch;
        *first = h + (k - 1) * W;
    } else {
        k -= h ? 1 + head_rest(w) : 0; /* windows of the epochs after the head's */
        *epoch = w->first_epoch + (h ? 1 : 0) + k / w->wpe;
        *first = (k % w->wpe) * W;
    }
    *count = w->nb - *first < W ? w->nb - *first : W;
}

/* ---- a window's trace ----------------------------------------------------------- */

int pl_window_open(struct pl_window *w, const struct pl_window_config *c, struct oc_err *err)
{
    int rc;
    memset(w, 0, sizeof(*w));
    w->c = *c;
    w->so = *c->so;
    w->c.so = &w->so;
    if ((rc = oc_sample_iter_open(&w->it, c->graph, &w->so, c->pool, c->train_ids, c->n_train,
                                  c->batch_size, err)))
        return rc;
    w->nb_epoch = w->n_batches = w->it.n_batches;
    w->off = oc_calloc(w->nb_epoch + 1, sizeof(uint64_t), "window planner: trace", err);
    w->rec_bytes = oc_calloc(w->nb_epoch + 1, sizeof(uint64_t), "window planner: trace", err);
    return w->off && w->rec_bytes ? OC_OK : err->status;
}

void pl_window_close(struct pl_window *w)
{
    oc_sample_iter_close(&w->it);
    oc_free(w->acc); /* the view's ids (the view itself holds no array of its own) */
    oc_free(w->rows);
    oc_free(w->off);
    oc_free(w->rec_bytes);
    memset(w, 0, sizeof(*w));
}

int pl_window_repool(struct pl_window *w, struct oc_pool *pool, struct oc_err *err)
{
    if (w->c.sampled)
        w->c.sampled(w->c.ctx, w->it.sampler); /* its reads so far, kept */
    oc_sample_sampler_free(w->it.sampler);
    w->it.sampler = NULL;
    return oc_sample_sampler_new(w->c.graph, &w->so, pool, &w->it.sampler, err);
}

int pl_window_reserve(struct pl_window *w, uint64_t n, struct oc_err *err)
{
    return oc_grow_by(&w->rows, &w->cap_rows, n, sizeof(uint64_t), OC_GROW_QUARTER(0),
                      "window planner: trace", err);
}

/* The batch sampled last as its accesses (the hook's ids), into w->view. */
static int map_batch(struct pl_window *w, struct oc_err *err)
{
    const struct oc_sample_batch *b = &w->it.batch;
    uint64_t n = 0;
    int rc = w->c.accesses(w->c.accesses_ctx, b, &w->acc, &w->cap_acc, &n, err);
    if (rc)
        return oc_err_prefix(err, "%s: the accesses of epoch %" PRIu64 " batch %" PRIu64, w->c.who,
                             b->epoch, b->batch_index);
    struct oc_sample_batch *v = &w->view;
    v->n_layers = 1;
    v->epoch = b->epoch;
    v->batch_index = b->batch_index;
    v->n_seeds = 0;
    v->n_input = n;
    v->input_ids = w->acc;
    w->view_indptr = 0;
    v->blocks[0] =
        (struct oc_sample_block){.n_src = n, .indptr = &w->view_indptr, .indices = &w->view_index};
    return OC_OK;
}

int pl_window_next(struct pl_window *w, struct oc_err *err)
{
    int rc = OC_OK;
    if (w->c.cancelled && w->c.cancelled(w->c.ctx))
        return OC_ERR(err, OC_ERR_CANCELLED, "%s: planning cancelled", w->c.who);
    rc = oc_sample_iter_next(&w->it, err);
    if (w->c.sampled) /* the run's topology figures */
        w->c.sampled(w->c.ctx, w->it.sampler);
    if (rc == 0)
        rc = OC_ERR(err, OC_ERR_INTERNAL, "%s: batch %" PRIu64 " is past the epoch's %" PRIu64,
                    w->c.who, w->it.next, w->it.n_batches);
    if (rc < 0)
        return rc;
    if (w->it.batch.n_input > w->max_sampled)
        w->max_sampled = w->it.batch.n_input;
    return w->c.accesses ? map_batch(w, err) : OC_OK;
}

/* The last sampled batch's rows (as the window holds it), at off[i] (reserved), as batch i
   of the trace. */
static void put_rows(struct pl_window *w, uint64_t i, uint64_t at)
{
    const struct oc_sample_batch *b = pl_window_batch(w);
    /* (a batch may ask nothing of a store over other ids: no rows, maybe no array yet) */
    if (b->n_input && w->c.rows_of)
        w->c.rows_of(w->c.ctx, b->input_ids, b->n_input, w->rows + at);
    else if (b->n_input)
        memcpy(w->rows + at, b->input_ids, b->n_input * sizeof(uint64_t));
    w->off[i + 1] = at + b->n_input;
    w->rec_bytes[i] = oc_sample_batch_record_bytes(b);
}

int pl_window_sample(struct pl_window *w, uint64_t epoch, uint64_t first, uint64_t count,
                     int (*each)(void *ctx, uint64_t i, struct oc_err *err), void *ctx,
                     struct oc_err *err)
{
    int rc;
    w->n_batches = 0;
    if (first > w->nb_epoch || count > w->nb_epoch - first)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "%s: window of batches %" PRIu64 "+%" PRIu64 " of %" PRIu64, w->c.who, first,
                      count, w->nb_epoch);
    oc_sample_iter_seek(&w->it, epoch, first);
    w->off[0] = 0;
    for (uint64_t i = 0; i < count; i++) {
        if ((rc = pl_window_next(w, err)) ||
            (rc = pl_window_reserve(w, w->off[i] + pl_window_batch(w)->n_input, err)))
            return rc;
        put_rows(w, i, w->off[i]);
        if (each && (rc = each(ctx, i, err)))
            return rc;
    }
    w->epoch = epoch;
    w->first = first;
    w->n_batches = count;
    return OC_OK;
}

int pl_window_probe(struct pl_window *w, uint64_t epoch, uint64_t count, uint32_t *counts,
                    struct oc_err *err)
{
    int rc = OC_OK;
    w->epoch = epoch;
    w->first = 0;
    w->n_batches = 0;
    w->off[0] = 0;
    oc_sample_iter_seek(&w->it, epoch, 0);
    for (uint64_t i = 0; i < count && i < w->nb_epoch; i++) {
        if ((rc = pl_window_next(w, err)) ||
            (rc = pl_window_reserve(w, pl_window_batch(w)->n_input, err)))
            return rc;
        put_rows(w, i, 0); /* no trace: the batch's rows at 0 */
        uint64_t n = pl_window_batch(w)->n_input;
        w->off[i + 1] = w->off[i] + n;
        for (uint64_t k = 0; k < n; k++)
            counts[w->rows[k]] += counts[w->rows[k]] < UINT32_MAX;
        w->n_batches = i + 1;
    }
    return OC_OK;
}
