/*
 * shard.c — micro-shards of a global batch for data-parallel training: the
 * sub-batch of one contiguous range of the batch's seeds, cut out of the
 * sampled batch (its seeds' L-hop subgraph with the very edges the batch
 * sampled, and the seeds' input rows), the fixed assignment of shards to
 * ranks, the fixed pairwise tree that sums the shards' gradients, and the
 * data-parallel state around them (train_dp: this rank's packets, their
 * exchange through dist.h, the sums).
 *
 *   batch b (seeds 0..B):   shard s = seeds [B s / M, B (s+1) / M)
 *   rank r of N:            shards [M r / N, M (r+1) / N)
 *   sum of M rows:          ((g0 + g1) + (g2 + g3)) + ...   (stride 1, 2, 4, ...)
 *
 * A shard's sub-batch is a function of the batch and the seed range alone,
 * so every rank that computes it gets the same nodes in the same order;
 * together with the fixed tree, N ranks train the weights one process
 * computes with the same --micro-shards M.
 *
 * Place in the data flow: train; the trainer cuts shards from the batch the
 * pipeline handed it.
 * Thread-safety: a train_shard and a train_dp are used by one thread (the
 * trainer's).
 * Ownership: a shard owns its arrays (grown, reused); its batch is a view of
 * them, never passed to oc_sample_batch_deinit. train_dp owns its packets.
 */
#include <assert.h>
#include <string.h>

#include "train/dist.h"
#include "train/train_int.h"

void train_shard_range(uint64_t n, uint32_t parts, uint32_t k, uint64_t *lo, uint64_t *hi)
{
    *lo = n * k / parts;
    *hi = n * (k + 1) / parts;
}

int train_grow(void *pp, uint64_t *cap, uint64_t n, size_t size, const char *what,
               struct oc_err *err)
{
    return oc_grow_by(pp, cap, n ? n : 1, size, OC_GROW_EXACT, what, err);
}

int train_shard_reserve(struct train_shard *sh, const struct oc_sample_batch *b, uint64_t dim,
                        double factor, struct oc_err *err)
{
    uint64_t n = (uint64_t)((double)b->n_input * factor) + 1;
    int rc;
    if ((rc = train_grow(&sh->ids, &sh->cap_nodes, n, sizeof(uint64_t), "shard input ids", err)) ||
        (rc = train_grow(&sh->old, &sh->cap_old, n, sizeof(uint32_t), "shard node map", err)) ||
        (rc = train_grow(&sh->map, &sh->cap_map, n, sizeof(uint32_t), "shard node map", err)) ||
        (rc = train_grow(&sh->x, &sh->cap_x, n * dim, sizeof(float), "shard input rows", err)))
        return rc;
    for (uint32_t l = 0; l < b->n_layers; l++) {
        uint64_t d = (uint64_t)((double)b->blocks[l].n_dst * factor) + 2;
        uint64_t e = (uint64_t)((double)b->blocks[l].n_edges * factor) + 1;
        if ((rc = train_grow(&sh->indptr[l], &sh->cap_indptr[l], d, sizeof(uint64_t), "shard block",
                             err)) ||
            (rc = train_grow(&sh->indices[l], &sh->cap_indices[l], e, sizeof(uint32_t),
                             "shard block", err)))
            return rc;
    }
    return OC_OK;
}

int train_shard_cut(struct train_shard *sh, const struct oc_sample_batch *b, const float *x,
                    const uint32_t *x_row, uint64_t dim, uint64_t lo, uint64_t hi,
                    struct oc_err *err)
{
    assert(lo <= hi && hi <= b->n_seeds);
    int rc;
    if ((rc = train_grow(&sh->map, &sh->cap_map, b->n_input, sizeof(uint32_t), "shard node map",
                         err)) ||
        (rc = train_grow(&sh->old, &sh->cap_old, b->n_input, sizeof(uint32_t), "shard node map",
                         err)))
        return rc;
    memset(sh->map, 0, b->n_input * sizeof(uint32_t)); /* batch position -> shard position + 1 */
    uint64_t n = 0;
    for (uint64_t k = lo; k < hi; k++) {
        sh->old[n] = (uint32_t)k;
        sh->map[k] = (uint32_t)++n;
    }
    struct oc_sample_batch *s = &sh->b;
    memset(s, 0, sizeof(*s));
    s->n_layers = b->n_layers;
    s->epoch = b->epoch;
    s->batch_index = b->batch_index;
    s->n_seeds = hi - lo;
    /* from the seeds down: block l's destinations are the nodes found so far (a prefix of
       its sources, as in every sampled batch), its sources those plus the new neighbors */
    for (uint32_t l = b->n_layers; l-- > 0;) {
        const struct oc_sample_block *bl = &b->blocks[l];
        uint64_t n_dst = n;
        if ((rc = train_grow(&sh->indptr[l], &sh->cap_indptr[l], n_dst + 1, sizeof(uint64_t),
                             "shard block", err)))
            return rc;
        uint64_t n_edges = 0;
        for (uint64_t d = 0; d < n_dst; d++)
            n_edges += bl->indptr[sh->old[d] + 1] - bl->indptr[sh->old[d]];
        if ((rc = train_grow(&sh->indices[l], &sh->cap_indices[l], n_edges, sizeof(uint32_t),
                             "shard block", err)))
            return rc;
        uint64_t e = 0;
        sh->indptr[l][0] = 0;
        for (uint64_t d = 0; d < n_dst; d++) {
            uint32_t o = sh->old[d];
            assert(o < bl->n_dst);
            for (uint64_t k = bl->indptr[o]; k < bl->indptr[o + 1]; k++) {
                uint32_t src = bl->indices[k];
                if (!sh->map[src]) {
                    sh->old[n] = src;
                    sh->map[src] = (uint32_t)++n;
                }
                sh->indices[l][e++] = sh->map[src] - 1;
            }
            sh->indptr[l][d + 1] = e;
        }
        s->blocks[l] = (struct oc_sample_block){.n_src = n,
                                                .n_dst = n_dst,
                                                .n_edges = e,
                                                .indptr = sh->indptr[l],
                                                .indices = sh->indices[l]};
    }
    if ((rc = train_grow(&sh->ids, &sh->cap_nodes, n, sizeof(uint64_t), "shard input ids", err)) ||
        (rc = train_grow(&sh->x, &sh->cap_x, n * dim, sizeof(float), "shard input rows", err)))
        return rc;
    for (uint64_t k = 0; k < n; k++) {
        sh->ids[k] = b->input_ids[sh->old[k]];
        uint64_t row = x_row ? x_row[sh->old[k]] : sh->old[k];
        assert(!x_row || row != UINT32_MAX); /* a row this rank holds */
        memcpy(sh->x + k * dim, x + row * dim, dim * sizeof(float));
    }
    s->n_input = n;
    s->input_ids = sh->ids;
    return OC_OK;
}

void train_shard_deinit(struct train_shard *sh)
{
    oc_free(sh->ids);
    oc_free(sh->old);
    oc_free(sh->map);
    oc_free(sh->x);
    for (uint32_t l = 0; l < OC_SAMPLE_MAX_LAYERS; l++) {
        oc_free(sh->indptr[l]);
        oc_free(sh->indices[l]);
    }
    memset(sh, 0, sizeof(*sh));
}

void train_shard_tree_sum(float *rows, uint32_t m, uint64_t pitch, uint64_t width)
{
    for (uint64_t stride = 1; stride < m; stride *= 2)
        for (uint64_t s = 0; s + stride < m; s += 2 * stride) {
            float *a = rows + s * pitch;
            const float *b = rows + (s + stride) * pitch;
            for (uint64_t k = 0; k < width; k++)
                a[k] += b[k];
        }
}

int train_dp_init(struct train_dp *dp, const struct oc_train_opts *o, uint64_t n_weights,
                  struct oc_err *err)
{
    memset(dp, 0, sizeof(*dp));
    if (o->micro_shards <= 1 && !o->distributed)
        return OC_OK;
    dp->on = 1;
    dp->m = o->micro_shards > 1 ? o->micro_shards : 1;
    dp->n_ranks = o->distributed ? oc_dist_size() : 1;
    dp->rank = o->distributed ? oc_dist_rank() : 0;
    assert(dp->n_ranks <= dp->m);
    uint64_t lo, hi;
    train_shard_range(dp->m, dp->n_ranks, dp->rank, &lo, &hi);
    dp->first = (uint32_t)lo;
    dp->last = (uint32_t)hi;
    dp->n_weights = n_weights;
    dp->width = n_weights + 2 * TRAIN_DP_STATS;
    dp->counts = oc_calloc(dp->n_ranks, sizeof(uint64_t), "micro-shard exchange", err);
    dp->send =
        oc_calloc((dp->last - dp->first) * dp->width, sizeof(float), "micro-shard gradients", err);
    dp->recv = oc_calloc(dp->m * dp->width, sizeof(float), "micro-shard gradients", err);
    if (!dp->counts || !dp->send || !dp->recv)
        return err->status;
    for (uint32_t r = 0; r < dp->n_ranks; r++) {
        train_shard_range(dp->m, dp->n_ranks, r, &lo, &hi);
        dp->counts[r] = (hi - lo) * dp->width;
    }
    return OC_OK;
}

void train_dp_deinit(struct train_dp *dp)
{
    oc_free(dp->counts);
    oc_free(dp->send);
    oc_free(dp->recv);
    train_shard_deinit(&dp->shard);
    memset(dp, 0, sizeof(*dp));
}

float *train_dp_packet(struct train_dp *dp, uint32_t s)
{
    assert(s >= dp->first && s < dp->last);
    return dp->send + (uint64_t)(s - dp->first) * dp->width;
}

int train_dp_exchange(struct train_dp *dp, double stats[TRAIN_DP_STATS], uint64_t *sent,
                      uint64_t *recvd, struct oc_err *err)
{
    int rc = oc_dist_allgather_f32(dp->send, dp->recv, dp->counts, err);
    if (rc)
        return rc;
    if (dp->n_ranks > 1) {
        uint64_t own = dp->counts[dp->rank] * sizeof(float);
        *sent += own * (dp->n_ranks - 1);
        *recvd += dp->m * dp->width * sizeof(float) - own;
    }
    memset(stats, 0, TRAIN_DP_STATS * sizeof(double));
    for (uint32_t s = 0; s < dp->m; s++) {
        double st[TRAIN_DP_STATS];
        memcpy(st, dp->recv + (uint64_t)s * dp->width + dp->n_weights, sizeof(st));
        for (int k = 0; k < TRAIN_DP_STATS; k++)
            stats[k] += st[k];
    }
    train_shard_tree_sum(dp->recv, dp->m, dp->width, dp->n_weights);
    return OC_OK;
}
