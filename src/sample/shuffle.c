/*
 * shuffle.c — the seed order of an epoch: a Fisher–Yates shuffle driven by
 * the counter-based RNG stream of (seed, epoch), and the cut into batches.
 *
 * Place in the data flow: sample; train (and the strategies that sample
 * ahead) ask it for batch b's seed nodes, then call the sampler.
 * Thread-safety: oc_sample_shuffle is pure; an epoch belongs to one thread
 * (const calls may be shared once the order is set).
 * Ownership: an epoch owns its two copies of the ids.
 */
#include <string.h>

#include "offcore/rng.h"
#include "sample/sample_int.h"

/* Stream ids of the shuffle: no neighbor draw uses batch = UINT64_MAX with this tag. */
#define SMP_SHUFFLE_BATCH UINT64_MAX
#define SMP_SHUFFLE_TAG   0x53485546464C45ull /* "SHUFFLE" */

/* Fisher-Yates over ids[0..n) on the stream (seed, epoch, SMP_SHUFFLE_BATCH, tag). */
static void shuffle_stream(uint64_t seed, uint64_t epoch, uint64_t tag, uint64_t *ids, uint64_t n)
{
    struct oc_rng r;
    oc_rng_init(&r, seed, epoch, SMP_SHUFFLE_BATCH, tag);
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = oc_rng_below(&r, i);
        uint64_t t = ids[i - 1];
        ids[i - 1] = ids[j];
        ids[j] = t;
    }
}

void oc_sample_shuffle(uint64_t seed, uint64_t epoch, uint64_t *ids, uint64_t n)
{
    shuffle_stream(seed, epoch, SMP_SHUFFLE_TAG, ids, n);
}

#define SMP_ORDER_TAG 0x42415443484F5244ull /* "BATCHORD" */

void oc_sample_batch_order(uint64_t seed, uint64_t epoch, uint64_t *order, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    shuffle_stream(seed, epoch, SMP_ORDER_TAG, order, n);
}

int oc_sample_epoch_init(struct oc_sample_epoch *ep, const uint64_t *ids, uint64_t n_ids,
                         uint64_t batch_size, int drop_last, struct oc_err *err)
{
    memset(ep, 0, sizeof(*ep));
    if (batch_size == 0)
        return OC_ERR(err, OC_ERR_ARG, "epoch: batch size is 0");
    if (n_ids && !ids)
        return OC_ERR(err, OC_ERR_ARG, "epoch: ids is NULL");
    if (n_ids > SIZE_MAX / sizeof(uint64_t))
        return OC_ERR(err, OC_ERR_ARG, "epoch: %llu ids is too many", (unsigned long long)n_ids);
    size_t bytes = (size_t)(n_ids ? n_ids : 1) * sizeof(uint64_t);
    ep->orig = oc_alloc(bytes, "epoch seed ids", err);
    if (!ep->orig)
        return err->status;
    ep->order = oc_alloc(bytes, "epoch seed order", err);
    if (!ep->order) {
        oc_free(ep->orig);
        ep->orig = NULL;
        return err->status;
    }
    if (n_ids)
        memcpy(ep->orig, ids, (size_t)n_ids * sizeof(uint64_t));
    ep->n_ids = n_ids;
    ep->batch_size = batch_size;
    ep->drop_last = drop_last != 0;
    oc_sample_epoch_unshuffle(ep);
    return OC_OK;
}

void oc_sample_epoch_deinit(struct oc_sample_epoch *ep)
{
    if (!ep)
        return;
    oc_free(ep->orig);
    oc_free(ep->order);
    memset(ep, 0, sizeof(*ep));
}

void oc_sample_epoch_unshuffle(struct oc_sample_epoch *ep)
{
    if (ep->n_ids)
        memcpy(ep->order, ep->orig, (size_t)ep->n_ids * sizeof(uint64_t));
}

void oc_sample_epoch_shuffle(struct oc_sample_epoch *ep, uint64_t seed, uint64_t epoch)
{
    oc_sample_epoch_unshuffle(ep);
    oc_sample_shuffle(seed, epoch, ep->order, ep->n_ids);
}

uint64_t oc_sample_epoch_n_batches(const struct oc_sample_epoch *ep)
{
    if (ep->batch_size == 0)
        return 0;
    uint64_t full = ep->n_ids / ep->batch_size;
    return full + (!ep->drop_last && ep->n_ids % ep->batch_size ? 1 : 0);
}

int oc_sample_epoch_batch(const struct oc_sample_epoch *ep, uint64_t b, const uint64_t **seeds,
                          uint64_t *n_seeds, struct oc_err *err)
{
    *seeds = NULL;
    *n_seeds = 0;
    uint64_t nb = oc_sample_epoch_n_batches(ep);
    if (b >= nb)
        return OC_ERR(err, OC_ERR_ARG, "epoch: batch %llu of %llu does not exist",
                      (unsigned long long)b, (unsigned long long)nb);
    uint64_t lo = b * ep->batch_size;
    uint64_t hi = ep->n_ids - lo < ep->batch_size ? ep->n_ids : lo + ep->batch_size;
    *seeds = ep->order + lo;
    *n_seeds = hi - lo;
    return OC_OK;
}
