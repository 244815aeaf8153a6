/*
 * sampling_int.h — private to src/store: the plan's batches as a strategy
 * samples or keys them itself, off the batch pipeline: samplers with their
 * pools and topology tally (sampling.c), the feeder of a store over other
 * ids (feed.c), hotness by degree or pre-sampling (hot.c) and plan files'
 * content keys (plan_key.c).
 *
 * Place in the data flow: beside the batch pipeline's sample stage; ginex's
 * inspector, diskgnn's planner, the feeder of gnndrive and helios, and the
 * hot sets of static, ginex, helios and outre sample the plan through it.
 * Thread-safety: a sampler is driven by one thread (a stage); the topology
 * tally is atomic; the feeder runs on its own stage and calls back on it.
 * Ownership: a feeder owns its sampler and scratch (store_feed_free);
 * configs, graphs and stores are borrowed.
 */
#ifndef OFFCORE_STORE_SAMPLING_INT_H
#define OFFCORE_STORE_SAMPLING_INT_H

#include <stdint.h>

#include "store/strategy_int.h"

/* The first field of a training plan cfg lacks ("graph", "sample_opts", "train_ids",
   "n_train", "batch_size"), or NULL: for the errors of what needs the plan. */
static inline const char *store_plan_missing(const struct oc_store_config *cfg)
{
    return !cfg->graph         ? "graph"
           : !cfg->sample_opts ? "sample_opts"
           : !cfg->train_ids   ? "train_ids"
           : !cfg->n_train     ? "n_train"
           : !cfg->batch_size  ? "batch_size"
                               : NULL;
}

/* A training plan in cfg: what a strategy that samples or sees the plan's batches needs. */
static inline int store_has_plan(const struct oc_store_config *cfg)
{
    return !store_plan_missing(cfg) && cfg->n_epochs > cfg->first_epoch;
}

/* The graph the plan's batches are sampled on: cfg->accesses's, else cfg->graph. */
static inline const struct oc_graph *store_plan_graph(const struct oc_store_config *cfg)
{
    return cfg->accesses ? cfg->accesses->graph : cfg->graph;
}

/*
 * The samplers a strategy drives itself, off the batch pipeline (ginex's
 * inspector, diskgnn's planner; sampling.c). Over an on-disk topology each
 * gets a pool of STORE_DISK_SAMPLERS threads: they wait on neighbor-list
 * reads, not on a core, so more of them keep more reads in flight (the
 * batches are the same for any count); each holds a topology reader (its
 * ring's staging) and scratch, STORE_DISK_SAMPLER_BYTES at most. In RAM the
 * stage samples on its own thread, beside training's pool.
 */
#define STORE_DISK_SAMPLERS      4u
#define STORE_DISK_SAMPLER_BYTES (2u << 20)

/* Pool threads of a strategy's sampler over g: STORE_DISK_SAMPLERS on disk, else 0. */
uint32_t store_sampler_threads(const struct oc_graph *g);
/* What those threads hold, for the strategy's budget: threads x STORE_DISK_SAMPLER_BYTES. */
uint64_t store_sampler_pool_bytes(const struct oc_graph *g);
/*
 * The pool a sampler over g, driven by one stage of `stages`, runs on: over
 * an on-disk topology store_sampler_threads(g) threads the pipeline owns
 * (oc_pipeline_pool: freed with it, after its stages are joined, so the
 * sampler must not sample after that), else NULL (the stage's own thread).
 * Called by the pipeline's owner (the store's open).
 */
int store_sampler_pool(struct oc_pipeline *stages, const struct oc_graph *g, struct oc_pool **out,
                       struct oc_err *err);
/*
 * Adds smp's topology counters since *seen (all zero for a new sampler) to
 * the store's topology figures (struct oc_store_stats, `topo`), then sets
 * *seen to them. From the thread driving smp, between its sampling calls;
 * before freeing smp, so nothing it read is lost. smp NULL: nothing.
 */
void store_topo_add(const struct oc_store *s, const struct oc_sampler *smp,
                    struct oc_topo_disk_stats *seen);
/* The store's tally so far (any thread). */
void store_topo_read(const struct oc_store *s, struct oc_topo_disk_stats *out);

/*
 * The feeder of a store over other ids (cfg->accesses; feed.c) whose
 * strategy prepares each batch of the plan ahead of its gather (gnndrive's
 * extractors, helios's reads, static's hyperbatch groups), which the batch pipeline would show it
 * (oc_store_sampled) but a partitioned run does not (train/dist_rows.c
 * gathers per batch itself): a stage of the store's pipeline, one thread,
 * samples the plan's batches on cfg->accesses->graph in plan order (epochs
 * [first_epoch, n_epochs), exactly as the trainer samples them), turns each
 * into the ids the store will be gathered with for it (the access map) and
 * calls fn(s, epoch, batch, b) with b's input_ids and n_input those (its
 * blocks empty). fn may block (a free record or group); it returns an error to fail
 * the pipeline, and the feeder stops once the pipeline is cancelled.
 */
struct store_feed;
typedef int (*store_feed_fn)(struct oc_store *s, uint64_t epoch, uint64_t batch,
                             const struct oc_sample_batch *b, struct oc_err *err);
/* What the feeder holds for a plan whose batches have at most plan_rows input rows, of which at
   most rows are the store's: its sampler and batch, the epoch's order, the mapped ids. */
uint64_t store_feed_bytes(const struct oc_store_config *cfg, uint64_t plan_rows, uint64_t rows);
/* Opens the feeder (its sampler, on the calling thread) and starts its stage on store_stages.
   *out is set even on failure (free it with store_feed_free after the stages are joined). */
int store_feed_start(struct oc_store *s, const struct oc_store_config *cfg, store_feed_fn fn,
                     struct store_feed **out, struct oc_err *err);
void store_feed_free(struct store_feed *f);
/* Logs (rank's INFO) what f fed and how its batches were gathered, by the store `who`, from
   their `records` (served) or read directly; then frees f (NULL: nothing logged). */
void store_feed_close(struct store_feed *f, const char *who, const char *records, uint64_t served,
                      uint64_t direct);
/* Batches fed so far (any thread). */
uint64_t store_feed_count(const struct store_feed *f);
/*
 * Waits until f fed batch `batch` of `epoch` of the plan (any thread; for a
 * strategy whose gather of a batch must come after its prepare: static's
 * hyperbatch groups). The pipeline's error (or that it closed) once it is
 * cancelled first; OC_ERR_INTERNAL for a batch outside f's plan.
 */
int store_feed_wait(struct store_feed *f, uint64_t epoch, uint64_t batch, struct oc_err *err);

/* ---- hotness (hot.c) ----------------------------------------------------- */

/*
 * The n (≤ n_nodes) hottest rows by hotness, ties to the lower id, as an
 * oc_alloc'd array (*ids = NULL when n == 0): ascending, or with hottest_first
 * the hottest first (also when n == n_nodes: every node ranked; without it,
 * every node is just 0 .. n - 1, nothing measured). Checks the hotness
 * options (pre-sampling needs graph, sample_opts, train_ids, n_train,
 * batch_size: OC_ERR_ARG naming what is missing) even when n == 0.
 */
int store_hot_select(const struct oc_store *s, const struct oc_store_config *cfg,
                     enum oc_store_hotness hotness, uint64_t n, int hottest_first, uint64_t **ids,
                     struct oc_err *err);

/*
 * Plan files' content keys (plan_key.c): FNV-1a over tag, topology (counts,
 * index dtype, sizes and CRCs of indptr and indices), fanouts, seed, batch
 * size and training ids (and a partition batching's key).
 */
uint64_t store_plan_key(const struct oc_store *s, const struct oc_store_config *cfg,
                        const char *tag);

#endif
