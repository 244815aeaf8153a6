/*
 * sampling.c — the samplers a feature strategy drives itself, off the batch
 * pipeline: ginex's inspector (superbatches sampled ahead) and diskgnn's
 * planner (windows sampled ahead). Two things they share:
 *
 *   - over an on-disk topology each neighbor-list miss is a random O_DIRECT
 *     read, so one sampling thread waits on the disk: such a sampler gets a
 *     pool of STORE_DISK_SAMPLERS threads from the store's pipeline
 *     (oc_pipeline_pool: a strategy starts no threads itself), which keeps
 *     that many reads in flight, and its budget counts
 *     STORE_DISK_SAMPLER_BYTES per thread; in RAM the stage samples on its
 *     own thread (a pool would compete with training's);
 *   - their topology reads belong in the run's `topology` figures beside the
 *     batch pipeline's sampler's: each sampler adds its counters to the
 *     store's tally (store_topo_add), which oc_store_stats reports.
 *
 * The pool changes no batch: the sampler splits a layer over its workers in
 * fixed chunks and keys every draw by (seed, epoch, batch, node), so any pool
 * size writes the same bytes (sample.h).
 *
 * Place in the data flow: store (shared by the strategies), on sample and
 * pipeline.
 * Thread-safety: store_sampler_pool is called by the pipeline's owner (the
 * store's open); the pool is then driven by one stage thread only.
 * store_topo_add is called by the thread driving the sampler, between its
 * sampling calls; the tally is atomics, read by any thread.
 * Ownership: the pool is the pipeline's (freed after its stages are joined);
 * the tally is the store's (registry.c allocates it with the store).
 */
#include <stdatomic.h>

#include "store/store_int.h"

uint32_t store_sampler_threads(const struct oc_graph *g)
{
    return g && g->disk ? STORE_DISK_SAMPLERS : 0;
}

uint64_t store_sampler_pool_bytes(const struct oc_graph *g)
{
    return store_sampler_threads(g) * (uint64_t)STORE_DISK_SAMPLER_BYTES;
}

int store_sampler_pool(struct oc_pipeline *stages, const struct oc_graph *g, struct oc_pool **out,
                       struct oc_err *err)
{
    *out = NULL;
    uint32_t n = store_sampler_threads(g);
    return n ? oc_pipeline_pool(stages, n, out, err) : OC_OK;
}

void store_topo_add(const struct oc_store *s, const struct oc_sampler *smp,
                    struct oc_topo_disk_stats *seen)
{
    struct oc_topo_disk_stats now, since;
    if (!smp)
        return;
    oc_sample_sampler_topo_stats(smp, &now);
    memset(&since, 0, sizeof(since));
    oc_sample_topo_stats_add_since(&since, &now, seen); /* what smp read since *seen */
    struct store_topo_tally *t = s->topo;
    if (t) { /* the tally is atomics: other samplers add to it, any thread reads it */
        atomic_fetch_add(&t->n_lookups, since.n_lookups);
        atomic_fetch_add(&t->n_hits, since.n_hits);
        atomic_fetch_add(&t->requested_bytes, since.requested_bytes);
        atomic_fetch_add(&t->read_bytes, since.read_bytes);
        atomic_fetch_add(&t->n_reads, since.n_reads);
    }
}

void store_topo_read(const struct oc_store *s, struct oc_topo_disk_stats *out)
{
    struct store_topo_tally *t = s->topo;
    if (!t) {
        memset(out, 0, sizeof(*out));
        return;
    }
    out->n_lookups = atomic_load(&t->n_lookups);
    out->n_hits = atomic_load(&t->n_hits);
    out->requested_bytes = atomic_load(&t->requested_bytes);
    out->read_bytes = atomic_load(&t->read_bytes);
    out->n_reads = atomic_load(&t->n_reads);
}
