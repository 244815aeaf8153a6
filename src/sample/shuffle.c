/*
 * shuffle.c — the seed order of an epoch: a Fisher–Yates shuffle driven by
 * the counter-based RNG stream of (seed, epoch), and the cut into batches.
 *
 * With a partition (oc_sample_epoch_init_plan), the order is OUTRE's
 * partition batches instead: groups of parts, each group's seeds shuffled
 * together (sample.h, struct oc_sample_parts).
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
/* Partition order: no batch index reaches UINT64_MAX - 1 either; groups use their index as tag. */
#define SMP_PARTS_BATCH (UINT64_MAX - 1)
#define SMP_PARTS_TAG   0x5041525453ull /* "PARTS": above any group index (< 2^32) */

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

int oc_sample_epoch_init_plan(struct oc_sample_epoch *ep, const uint64_t *ids, uint64_t n_ids,
                              uint64_t batch_size, int drop_last, const struct oc_sample_opts *so,
                              struct oc_err *err)
{
    int rc = oc_sample_epoch_init(ep, ids, n_ids, batch_size, drop_last, err);
    const struct oc_sample_parts *p = so ? so->parts : NULL;
    if (rc != OC_OK || !p)
        return rc;
    if (p->n_parts == 0 || p->group == 0 || !p->part_of) {
        rc = OC_ERR(err, OC_ERR_ARG, "epoch: partition order with %u parts in groups of %u",
                    p->n_parts, p->group);
        goto fail;
    }
    ep->part_ptr =
        oc_calloc((size_t)p->n_parts + 1, sizeof(uint64_t), "epoch partition order", err);
    ep->part_ids =
        oc_alloc((size_t)(n_ids ? n_ids : 1) * sizeof(uint64_t), "epoch partition order", err);
    ep->part_perm = oc_alloc((size_t)p->n_parts * sizeof(uint32_t), "epoch partition order", err);
    if (!ep->part_ptr || !ep->part_ids || !ep->part_perm) {
        rc = err->status;
        goto fail;
    }
    for (uint64_t i = 0; i < n_ids; i++) { /* counting sort by part, stable */
        if (ids[i] >= p->n_nodes || p->part_of[ids[i]] >= p->n_parts) {
            rc = OC_ERR(err, OC_ERR_ARG, "epoch: seed %llu has no part (%llu nodes, %u parts)",
                        (unsigned long long)ids[i], (unsigned long long)p->n_nodes, p->n_parts);
            goto fail;
        }
        ep->part_ptr[p->part_of[ids[i]] + 1]++;
    }
    for (uint32_t q = 0; q < p->n_parts; q++)
        ep->part_ptr[q + 1] += ep->part_ptr[q];
    for (uint64_t i = 0; i < n_ids; i++) /* part_ptr[q] as q's fill cursor */
        ep->part_ids[ep->part_ptr[p->part_of[ids[i]]]++] = ids[i];
    for (uint32_t q = p->n_parts; q > 0; q--) /* shift back: part_ptr[q] = start of q */
        ep->part_ptr[q] = ep->part_ptr[q - 1];
    ep->part_ptr[0] = 0;
    ep->n_parts = p->n_parts;
    ep->group = p->group;
    return OC_OK;
fail:
    oc_sample_epoch_deinit(ep);
    return rc;
}

void oc_sample_epoch_deinit(struct oc_sample_epoch *ep)
{
    if (!ep)
        return;
    oc_free(ep->part_ptr);
    oc_free(ep->part_ids);
    oc_free(ep->part_perm);
    oc_free(ep->orig);
    oc_free(ep->order);
    memset(ep, 0, sizeof(*ep));
}

void oc_sample_epoch_unshuffle(struct oc_sample_epoch *ep)
{
    if (ep->n_ids)
        memcpy(ep->order, ep->orig, (size_t)ep->n_ids * sizeof(uint64_t));
}

/*
 * The partition order: parts permuted by the stream (seed, epoch, SMP_PARTS_BATCH,
 * SMP_PARTS_TAG), then each group of `group` consecutive parts: its ids copied
 * out and shuffled by the stream (seed, epoch, SMP_PARTS_BATCH, group index).
 */
static void epoch_part_order(struct oc_sample_epoch *ep, uint64_t seed, uint64_t epoch)
{
    struct oc_rng r;
    uint32_t *perm = ep->part_perm;
    for (uint32_t q = 0; q < ep->n_parts; q++)
        perm[q] = q;
    oc_rng_init(&r, seed, epoch, SMP_PARTS_BATCH, SMP_PARTS_TAG);
    for (uint32_t i = ep->n_parts; i > 1; i--) {
        uint32_t j = (uint32_t)oc_rng_below(&r, i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    uint64_t pos = 0;
    for (uint32_t g = 0; (uint64_t)g * ep->group < ep->n_parts; g++) {
        uint64_t lo = pos;
        for (uint32_t k = 0; k < ep->group && (uint64_t)g * ep->group + k < ep->n_parts; k++) {
            uint32_t q = perm[(uint64_t)g * ep->group + k];
            uint64_t n = ep->part_ptr[q + 1] - ep->part_ptr[q];
            memcpy(ep->order + pos, ep->part_ids + ep->part_ptr[q], (size_t)n * sizeof(uint64_t));
            pos += n;
        }
        oc_rng_init(&r, seed, epoch, SMP_PARTS_BATCH, g);
        for (uint64_t i = pos - lo; i > 1; i--) {
            uint64_t j = oc_rng_below(&r, i);
            uint64_t t = ep->order[lo + i - 1];
            ep->order[lo + i - 1] = ep->order[lo + j];
            ep->order[lo + j] = t;
        }
    }
}

void oc_sample_epoch_shuffle(struct oc_sample_epoch *ep, uint64_t seed, uint64_t epoch)
{
    if (ep->part_ptr) {
        epoch_part_order(ep, seed, epoch);
        return;
    }
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
