/*
 * plan_iter.c — a training plan's batches, sampled one after the other: the
 * one copy of "a sampler over the graph, the plan's epoch (random or
 * partition order, oc_sample_epoch_init_plan), epoch e shuffled, its batches
 * sampled in order" that the strategies' probes, pre-sampling and ginex's
 * inspector share.
 *
 *   open (sampler + plan epoch) ──► seek(e, b) ──► next ──► next ──► ... ──► 0 (end of epoch)
 *                                   (shuffles e unless it already is)
 *
 * Place in the data flow: sample; used by store at open (hot sets, probes,
 * profiles), by store's inspect (--strategy auto) and by ginex's inspector.
 * The batches are the pipeline's: the same epoch order and the same
 * oc_sample_neighbors(epoch, batch) calls.
 * Thread-safety: an iterator belongs to one thread at a time (its sampler
 * may use the pool it was given).
 * Ownership: the iterator owns its sampler, epoch and batch; the graph,
 * options, ids and pool are borrowed and must outlive it.
 */
#include <string.h>

#include "offcore/sample.h"

int oc_sample_iter_open(struct oc_sample_iter *it, const struct oc_graph *g,
                        const struct oc_sample_opts *so, struct oc_pool *pool, const uint64_t *ids,
                        uint64_t n_ids, uint64_t batch_size, struct oc_err *err)
{
    memset(it, 0, sizeof(*it));
    oc_sample_batch_init(&it->batch);
    it->epoch = UINT64_MAX;
    int rc = oc_sample_sampler_new(g, so, pool, &it->sampler, err);
    if (rc == OC_OK)
        rc = oc_sample_epoch_init_plan(&it->ep, ids, n_ids, batch_size, 0, so, err);
    if (rc != OC_OK) {
        oc_sample_iter_close(it);
        return rc;
    }
    it->seed = so->seed;
    it->n_batches = oc_sample_epoch_n_batches(&it->ep);
    return OC_OK;
}

void oc_sample_iter_close(struct oc_sample_iter *it)
{
    if (!it)
        return;
    oc_sample_batch_deinit(&it->batch);
    oc_sample_epoch_deinit(&it->ep);
    oc_sample_sampler_free(it->sampler);
    memset(it, 0, sizeof(*it));
    it->epoch = UINT64_MAX;
}

void oc_sample_iter_seek(struct oc_sample_iter *it, uint64_t epoch, uint64_t batch)
{
    if (epoch != it->epoch) {
        oc_sample_epoch_shuffle(&it->ep, it->seed, epoch);
        it->epoch = epoch;
    }
    it->next = batch;
}

int oc_sample_iter_sample(struct oc_sample_iter *it, uint64_t epoch, uint64_t batch,
                          struct oc_sample_batch *out, struct oc_err *err)
{
    const uint64_t *seeds;
    uint64_t n_seeds;
    if (!it->sampler)
        return OC_ERR(err, OC_ERR_ARG, "sample iterator: not open");
    oc_sample_iter_seek(it, epoch, batch);
    int rc = oc_sample_epoch_batch(&it->ep, batch, &seeds, &n_seeds, err);
    if (rc == OC_OK)
        rc = oc_sample_neighbors(it->sampler, epoch, batch, seeds, n_seeds, out, err);
    if (rc == OC_OK)
        it->next = batch + 1;
    return rc;
}

int oc_sample_iter_next(struct oc_sample_iter *it, struct oc_err *err)
{
    if (!it->sampler || it->epoch == UINT64_MAX)
        return OC_ERR(err, OC_ERR_ARG, "sample iterator: %s",
                      it->sampler ? "no epoch chosen (oc_sample_iter_seek)" : "not open");
    if (it->next >= it->n_batches)
        return 0;
    int rc = oc_sample_iter_sample(it, it->epoch, it->next, &it->batch, err);
    return rc == OC_OK ? 1 : rc;
}
