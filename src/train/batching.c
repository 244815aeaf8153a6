/*
 * batching.c — how a training run builds its batches and how redundant they
 * are: the partition behind `--batching partition` (OUTRE's partition-based
 * batches; the plan module computes and keeps it, sample's epoch order uses
 * it) and the per-epoch Redundancy Ratio counters (OUTRE's RR, and the
 * distinct input rows of the epoch).
 *
 * Place in the data flow: train; run_setup opens the batching before the
 * store and the pipeline, which receive its struct oc_sample_parts through
 * their sampling options; the trainer adds each batch to the counters.
 * Thread-safety: the trainer's thread only.
 * Ownership: a batching owns its partition; the parts view points into it
 * and must not outlive it (the store and pipeline are freed first).
 */
#include <inttypes.h>
#include <string.h>

#include "train/train_int.h"

uint32_t train_partition_group(const struct oc_train_opts *o)
{
    return o->partition_group ? o->partition_group : TRAIN_PARTITION_GROUP;
}

int train_batching_open(const struct train_data *d, const struct oc_train_opts *o,
                        const char *plan_dir, struct train_batching *b, struct oc_err *err)
{
    memset(b, 0, sizeof(*b));
    if (o->batching != OC_TRAIN_BATCHING_PARTITION)
        return OC_OK;
    uint64_t n_train = d->n_split[TRAIN_SPLIT_TRAIN];
    uint32_t group = train_partition_group(o);
    uint32_t n_parts = oc_plan_partition_n_parts(d->n_nodes, n_train, o->batch_size, group);
    int rc = oc_plan_partition_get(d->ds, &d->graph, d->split[TRAIN_SPLIT_TRAIN], n_train, n_parts,
                                   o->partitioner, plan_dir, &b->part, err);
    if (rc != OC_OK) {
        oc_err_prefix(err, "--batching partition");
        return rc;
    }
    b->parts.n_nodes = b->part.n_nodes;
    b->parts.part_of = b->part.part_of;
    b->parts.n_parts = b->part.n_parts;
    b->parts.group = group;
    b->parts.key = b->part.key;
    b->on = 1;
    if (b->part.built)
        oc_log(OC_LOG_INFO, "partition batches: %u parts (%s, %.2fs) in groups of %u, saved to %s",
               n_parts, oc_plan_partitioner_name(o->partitioner), b->part.build_s, group,
               b->part.path[0] ? b->part.path : "(memory only)");
    else
        oc_log(OC_LOG_INFO, "partition batches: %u parts in groups of %u, reused from %s", n_parts,
               group, b->part.path);
    return OC_OK;
}

void train_batching_close(struct train_batching *b)
{
    oc_plan_partition_deinit(&b->part);
    memset(b, 0, sizeof(*b));
}

const struct oc_sample_parts *train_batching_parts(const struct train_batching *b)
{
    return b->on ? &b->parts : NULL;
}

int train_redundancy_init(struct train_redundancy *r, uint64_t n_nodes, struct oc_err *err)
{
    r->n_words = (n_nodes + 63) / 64;
    r->seen = oc_calloc((size_t)(r->n_words ? r->n_words : 1), sizeof(uint64_t),
                        "epoch distinct rows", err);
    return r->seen ? OC_OK : err->status;
}

void train_redundancy_deinit(struct train_redundancy *r)
{
    oc_free(r->seen);
    r->seen = NULL;
}

void train_redundancy_epoch(struct train_redundancy *r)
{
    memset(r->seen, 0, (size_t)r->n_words * sizeof(uint64_t));
}

void train_redundancy_add(struct train_redundancy *r, const struct oc_sample_batch *b,
                          struct oc_train_epoch_stats *st)
{
    double rr = b->n_seeds ? (double)b->n_input / (double)b->n_seeds : 0.0;
    if (st->seed_rows == 0 || rr < st->batch_rr_min)
        st->batch_rr_min = rr;
    if (rr > st->batch_rr_max)
        st->batch_rr_max = rr;
    st->input_rows += b->n_input;
    st->seed_rows += b->n_seeds;
    uint64_t fresh = 0;
    for (uint64_t i = 0; i < b->n_input; i++) {
        uint64_t v = b->input_ids[i], bit = UINT64_C(1) << (v & 63);
        fresh += (r->seen[v >> 6] & bit) == 0;
        r->seen[v >> 6] |= bit;
    }
    st->distinct_rows += fresh;
}
