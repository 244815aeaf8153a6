/*
 * store.h — feature sources ("strategies"): where a batch's input feature
 * rows come from. Every strategy fills the same f32 rows in the same order,
 * so training is bit-for-bit identical whichever is used; strategies differ
 * only in where bytes come from (RAM, page cache, O_DIRECT reads, caches).
 *
 *   pipeline ──► oc_store_gather_batch(ids) ──► strategy ──► { RAM | mmap | O_DIRECT | cache }
 *                                                      └─ counts requested / read bytes, hits
 *
 * Strategies register themselves in one table (store/registry.c); the CLI's
 * `--strategy NAME` and the benchmark harness enumerate that table, so a new
 * strategy appears everywhere by adding one entry.
 *
 * Place in the data flow: store sits on dataset, io, sample (for
 * pre-sampling) and core; the batch pipeline (pipeline.h) and train call it.
 * Thread-safety: during an epoch the batch pipeline drives a store from three
 * threads (oc_store_hop and oc_store_sampled from its sample stage;
 * next_batch, load_batch and gather_batch from its fetch stage; oc_store_done
 * from the trainer's); between epochs the
 * training thread uses it (evaluation gathers, stats). It may use the pool
 * it was given inside gather. A strategy's background work (gnndrive's
 * extractors, ginex's inspector, diskgnn's loaders) runs as stages of the
 * pipeline in cfg->pipeline (the batch pipeline's, in training: an error in
 * either stops both), or of one the store makes and owns when it is NULL.
 * Ownership: the store borrows the dataset, graph, pool and pipeline for its
 * lifetime (a pipeline given at open is freed, joining the store's stages,
 * before oc_store_free);
 * `out` buffers passed to gather belong to the caller.
 */
#ifndef OFFCORE_STORE_H
#define OFFCORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"
#include "offcore/dataset.h"
#include "offcore/io.h"
#include "offcore/sample.h"
#include "offcore/thread.h"

/* Where a requested row was found. */
enum oc_store_tier {
    OC_STORE_TIER_GPU,        /* GPU cache (CUDA backend) */
    OC_STORE_TIER_CPU,        /* CPU RAM cache (or all of RAM for `memory`) */
    OC_STORE_TIER_DISK_CACHE, /* a disk-side cache laid out for locality */
    OC_STORE_TIER_PACKED,     /* a per-batch packed chunk */
    OC_STORE_TIER_DISK,       /* read from the feature file */
    OC_STORE_TIER_COUNT,
};

const char *oc_store_tier_name(enum oc_store_tier t);

/*
 * Counters of successful gathers since open (a failed gather adds only the
 * bytes its reads delivered). Row bytes are as stored in features.npy
 * (feat_dim x 2 for f16, x 4 for f32), so amplification compares what the
 * disk delivered with what was useful in the same units; the f32 rows handed
 * to the model are twice that for f16. Reads made at open (loading `memory`,
 * filling the `static` cache) are not counted.
 *
 * Per strategy: memory: every row tier CPU, nothing from disk. mmap: every
 * row tier DISK and requested_disk_bytes (a map cannot tell a page-cache hit
 * from a read); read_bytes is an estimate from the process's storage reads
 * (/proc/self/io) during the gather, n_reads its major page faults (see
 * store/mmap.c). direct: every row tier DISK, one read per row.
 * static: hits tier CPU, misses tier DISK. gnndrive: rows served from a
 * slot of its feature buffer (valid, on the standby list, or being loaded
 * by another extractor) tier CPU, rows its extractors read tier DISK;
 * standby_hits counts the rows whose slot was valid with no reference left
 * (reused from the standby LRU list), so standby_hits / requested_rows is
 * its standby-reuse hit ratio. ginex: hits tier CPU, misses tier DISK;
 * for the training batches it followed its plan on, trace_accesses counts
 * the rows requested and belady_misses those its cache missed, next to what
 * LRU (cold, one access at a time) and the degree-ranked static cache of the
 * same capacity would have missed on the same accesses (0 elsewhere).
 * helios: cached rows tier CPU, rows its ring read (and rows that did not fit
 * its staging, read at gather) tier DISK.
 */
#define OC_STORE_MAX_STAGES 4 /* stage_busy_us entries */

struct oc_store_stats {
    uint64_t requested_rows;
    uint64_t requested_bytes;      /* feature bytes requested (rows x stored row bytes) */
    uint64_t requested_disk_bytes; /* of those, bytes of rows that had to come from disk */
    uint64_t read_bytes;           /* bytes the disk delivered (page-rounded, merged) */
    uint64_t n_reads;              /* read requests issued to the disk */
    uint64_t tier_rows[OC_STORE_TIER_COUNT];
    uint64_t standby_hits; /* rows reused from a released buffer slot (gnndrive; else 0) */
    uint64_t trace_accesses, belady_misses, lru_misses, static_misses; /* ginex; else 0 */
    uint64_t held_bytes; /* memory the store holds now (caches, buffers, in-RAM features);
                            a level, not a counter; the page cache under `mmap` is not held */
    /* cache bytes given back to requests past --mem-budget and not taken back yet (a
       level; every strategy with a cache: their rows are read from disk meanwhile;
       else 0) */
    uint64_t given_back_bytes;
    /* diskgnn (else 0): bytes of sampled blocks, chunk headers and address tables read
       with the packed chunks (not features: kept out of read_bytes), and the wall time of
       offline sampling and of packing since open (at open, and in the background while
       training or evaluating: totals, which oc_store_stats_sub keeps as they are) */
    uint64_t graph_read_bytes, plan_sample_us, plan_pack_us;
    /* ginex (else 0): the inspector's wall time sampling (plan_sample_us, above) and
       building the superbatches' plans (Belady changesets) since open, totals as above */
    uint64_t plan_build_us;
    uint64_t plan_file_bytes;      /* diskgnn: bytes of packed window files on disk now (a level) */
    uint64_t plan_file_peak_bytes; /* diskgnn: the most bytes of window files on disk at once */
    /* diskgnn (else 0): bytes its background packing read from features.npy and wrote to
       window files (the windows after the first, packed while training runs): counters,
       so an epoch's disk traffic includes what its planner did meanwhile */
    uint64_t plan_read_bytes, plan_write_bytes;
    /* busy microseconds (in their function, minus blocked queue waits) of the strategy's
       own pipeline stages since open, in the order its stats table names them (diskgnn:
       feature loader, graph loader, feature assembler, planner; 0 elsewhere) */
    uint64_t stage_busy_us[OC_STORE_MAX_STAGES];
    /* training batches the strategy sampled a second time, beside the ones the batch
       pipeline sampled or loaded from it (ginex without its superbatch files), counted so
       the log tells (0 elsewhere) */
    uint64_t sampled_batches;
    /* CPU microseconds spent in the strategy's I/O path: helios: submitting on the sample
       stage, its completion stage and its SQPOLL kernel thread; gnndrive: its extract
       stage (0 elsewhere) */
    uint64_t io_cpu_us;
    /* outre's historical embeddings, counted as the trainer takes each batch (0 elsewhere):
       the last block's non-seed source nodes looked up, those pruned (their embedding came
       from the cache, their sub-tree was not sampled), embeddings the trainer pushed and
       those of them taken into the cache (--admit); emb_max_age (a level) is the oldest
       embedding used so far, in iterations */
    uint64_t emb_candidates, emb_pruned, emb_pushed, emb_admitted;
    uint64_t emb_max_age;
    /* neighbor-list reads of an on-disk topology by the samplers the strategy drives itself
       (ginex's inspector and its second sampling, diskgnn's planner): counters since open;
       the batch pipeline's sampler's are its own (batch_pipe.h); all zero in RAM */
    struct oc_topo_disk_stats topo;
};

/* amplification = read / requested-from-disk (1 when nothing came from disk). */
double oc_store_stats_amplification(const struct oc_store_stats *s);
/* Fraction of requested rows served by tier t. */
double oc_store_stats_hit_ratio(const struct oc_store_stats *s, enum oc_store_tier t);
/* a - b, field by field (per-epoch deltas of cumulative counters); held_bytes is a's. */
void oc_store_stats_sub(const struct oc_store_stats *a, const struct oc_store_stats *b,
                        struct oc_store_stats *out);

/* What a strategy may know when it prepares (training plan). */
struct oc_pipeline;

/* The most options one strategy declares (struct oc_store_opt). */
#define OC_STORE_MAX_OPTS 8
/*
 * A store whose ids are not the plan's node ids: a rank's part of a
 * partitioned dataset (train/dist_rows.c), whose store holds the part's rows
 * by local row and is gathered, per training batch, with the rows the rank's
 * micro-shards and the other ranks ask of it. `graph` is the plan's graph
 * (its batches are sampled on it; oc_store_config.graph is then the store's,
 * in its own ids: its in-degrees rank hotness). of(ctx, b, ids, cap, n)
 * writes into *ids (grown with oc_realloc to *cap entries; the caller's,
 * freed with oc_free) the *n ids, each < the store's n_nodes, that
 * oc_store_gather_batch will be given for the plan's batch b, in that order.
 * It is called from the strategy's threads (the opening thread, ginex's
 * inspector, diskgnn's planner, gnndrive's and helios's feeder) and must be
 * thread-safe; each id once per batch (as a batch's input ids). A strategy
 * that plans over the batches follows it (ginex's cache plan, diskgnn's
 * packed windows: their traces hold these ids); one that prepares each
 * batch ahead of its gather (gnndrive, helios) is fed the plan's batches as
 * these ids by a feeder of its own (no batch pipeline shows it them),
 * static's --hyperbatch groups too; outre profiles over it and keeps no
 * historical embeddings (it refuses --staleness above 0 with it); the
 * others serve the ids they are given.
 */
struct oc_store_accesses {
    const struct oc_graph *graph;
    int (*of)(void *ctx, const struct oc_sample_batch *b, uint64_t **ids, uint64_t *cap,
              uint64_t *n, struct oc_err *err);
    void *ctx;
};

struct oc_store_config {
    const struct oc_dataset *ds;
    const struct oc_graph *graph; /* in-memory or on-disk-backed topology view;
                                               may be NULL unless pre-sampling (degree
                                               hotness then loads indptr for a moment) */
    struct oc_pool *pool;         /* may be NULL; must not be running a task of
                                               the caller (gather runs oc_pool_run on it) */
    uint64_t mem_bytes;           /* RAM the store may hold (cache sizing);
                                               0 = unlimited (`static` caches every row) */
    /*
     * The training plan. Pre-sampling replays its epoch 0 (shuffle with
     * sample_opts->seed, batches of batch_size, last one short), and with
     * sample_opts and batch_size known the disk strategies size their
     * per-batch buffers from batch_size x prod(1 + fanout) rows, else from
     * min(n_nodes, 65536).
     */
    const struct oc_sample_opts *sample_opts;
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    uint32_t first_epoch, n_epochs; /* training runs epochs [first_epoch, n_epochs) */
    const char *plan_dir;           /* where derived artifacts may be written (DIR/plan) */
    int reuse_samples;              /* every epoch trains on epoch 0's batches (DiskGNN);
                                       the epoch argument of the batch calls is then 0.
                                       ginex and gnndrive refuse it (OC_ERR_UNSUPPORTED) */
    struct oc_pipeline *pipeline;   /* where the strategy adds its stages (and starts
                                       them); NULL: the store makes and owns one */
    uint64_t embed_dim;             /* the trainer's width of the last layer's input, whose
                                       rows it takes and pushes (struct oc_store_hist) to a
                                       strategy with historical embeddings (outre); 0 = the
                                       caller does not use embeddings (no pruning) */
    uint64_t batch_rows;            /* the most input rows one gather asks for: a training
                                       batch as train measured it (probe, with its margin),
                                       or an evaluation chunk; 0 = unknown. Sizes what the
                                       strategies reserve per batch (store_budget_rows);
                                       arrays grow through the accountant past it */
    uint32_t lanes;                 /* training gathers the batch pipeline may run at once
                                       (oc_store_gather_lanes); 0 or 1 = one at a time */
    struct oc_progress *progress;   /* borrowed, may be NULL; must outlive the store. Long
                                       setup shows here as phases (diskgnn: sampling and
                                       packing its first window), background work as a note
                                       on the caller's phase (diskgnn: the next window) */
    /*
     * The opened strategy's own options (struct oc_store_opt below), set with
     * oc_store_opt_apply or oc_store_opt_set: values in the order of its
     * table, which the strategy reads into its own options struct at open.
     * All zero (a memset config): every option 0, not its dflt (train sets
     * the defaults). oc_store_open refuses values set for another strategy.
     */
    struct oc_store_opt_values {
        uint32_t strategy; /* whose table v follows: the strategy's index + 1; 0 = none set */
        double v[OC_STORE_MAX_OPTS];
    } opts;
    const struct oc_store_accesses *accesses; /* borrowed, may be NULL: the store's ids are
                                                 not the plan's (see above) */
};

struct oc_store;
struct oc_progress;

/* The registered strategies, in registration order. */
uint32_t oc_store_n_strategies(void);
const char *oc_store_strategy_name(uint32_t i);
const char *oc_store_strategy_summary(uint32_t i);
/* Index of a strategy by name; OC_ERR_ARG listing the known names otherwise. */
int oc_store_strategy_find(const char *name, uint32_t *index, struct oc_err *err);
/*
 * The row buffers (batches of gathered feature rows) a batch pipeline of this
 * depth holds for the strategy: depth + 1 (one with the trainer, depth ahead),
 * or fewer for a strategy whose own records hold its batches ahead (helios:
 * its reads land in its stages, and a row buffer is taken only at the gather).
 * What a budgeted run reserves for batches in flight.
 */
uint32_t oc_store_strategy_row_buffers(uint32_t strategy, uint32_t depth);
/*
 * Whether the named strategy reads features.npy whole when it opens and so
 * checks its CRC within that read, for a dataset opened with
 * OC_DS_OPEN_DEFER_FEATURE_CRC (`memory`, diskgnn); 0 for any other name
 * (`auto` included): open such datasets with their checksums.
 */
int oc_store_strategy_checks_features(const char *name);

/*
 * A strategy's own option (`offcore train --<name>`), declared in the
 * strategy's table: the CLI lists it in --help under the strategy and parses
 * it, train refuses it with another --strategy, checks it against `min`, and
 * sets it in struct oc_store_config's opts before opening the store; the
 * strategy reads it into the field at `offset` of its own options struct
 * (its private header). Adding a strategy with options touches no CLI or
 * train code, nor struct oc_store_config.
 */
enum oc_store_opt_type {
    OC_STORE_OPT_U32,    /* uint32_t field; a whole number >= min */
    OC_STORE_OPT_F64,    /* double field; a finite number >= min */
    OC_STORE_OPT_FLAG,   /* int field set to 1 */
    OC_STORE_OPT_CHOICE, /* enum field (int-sized): the index of the value in `choices` */
    OC_STORE_OPT_TYPE_COUNT
};
struct oc_store_opt {
    const char *name; /* without dashes */
    enum oc_store_opt_type type;
    const char *metavar; /* U32/F64: the value's name in --help */
    const char *choices; /* CHOICE: "a|b|c"; the first is the default */
    const char *help;
    size_t offset;        /* of the value in the strategy's own options struct */
    double min;           /* U32/F64: smallest accepted value */
    int changes_training; /* part of the checkpoint's option fingerprint (e.g. --reorder) */
    double dflt;          /* value when not given (train sets it; in the fingerprint) */
    double max;           /* F64: largest accepted value; 0 = none */
    /* non-NULL: a nonzero value keeps this training state, which no checkpoint holds
       ("historical embeddings"), so --resume past the first epoch is refused */
    const char *outside_checkpoint;
};
/* The values of static's --hotness (the index of its choice): how `static` ranks rows. */
enum oc_store_hotness { OC_STORE_HOTNESS_DEGREE, OC_STORE_HOTNESS_PRESAMPLE };
/*
 * A figure only some strategies have, declared in the strategy's stats table:
 * the epoch line prints " | <label> <value>" (when label is set) and the JSON
 * log writes it as features.<group>.<key> (features.<key> without a group).
 */
struct oc_store_stat {
    const char *group; /* JSON object inside "features" ("miss_ratio", "plan"), or NULL */
    const char *key;   /* JSON key */
    const char *label; /* epoch line label, NULL = log only */
    enum oc_store_stat_unit {
        OC_STORE_STAT_RATIO,   /* "%.3f" */
        OC_STORE_STAT_SECONDS, /* "%.2fs" */
        OC_STORE_STAT_BYTES,   /* a size ("12.5 MiB") */
    } unit;
    /* from an epoch's stats: value(s), or, with value NULL, the uint64_t of struct
       oc_store_stats at byte offset `field` (OC_STORE_STAT_FIELD; SECONDS: microseconds) */
    double (*value)(const struct oc_store_stats *s);
    size_t field;
};
/* The `value, field` of a figure that is a field of struct oc_store_stats as it is. */
#define OC_STORE_STAT_FIELD(member) NULL, offsetof(struct oc_store_stats, member)
/* Figure f of an epoch's stats s (f->value, or its field). */
double oc_store_stat_value(const struct oc_store_stat *f, const struct oc_store_stats *s);
/* Whether a strategy writes plan files under oc_store_config.plan_dir (ginex, diskgnn). */
int oc_store_strategy_writes_plan(uint32_t strategy);
uint32_t oc_store_strategy_n_stats(uint32_t strategy);
/* Figure k of a strategy's stats table (NULL past the end). */
const struct oc_store_stat *oc_store_strategy_stat(uint32_t strategy, uint32_t k);

uint32_t oc_store_strategy_n_opts(uint32_t strategy);
/* Option k of a strategy's table (NULL past the end). */
const struct oc_store_opt *oc_store_strategy_opt(uint32_t strategy, uint32_t k);
/*
 * The first strategy (registration order) declaring option `name`, and the
 * option; OC_ERR_NOTFOUND if none does. A name may be declared by several
 * strategies (--hyperbatch: static and ginex), each in its own table.
 */
int oc_store_opt_find(const char *name, uint32_t *strategy, const struct oc_store_opt **opt);
/* Option `name` of the given strategy's table; OC_ERR_NOTFOUND if it has none such. */
int oc_store_opt_find_in(uint32_t strategy, const char *name, const struct oc_store_opt **opt);
/*
 * Checks value against opt (whole number, finite, >= min (and <= max), a
 * valid choice index) and sets it in cfg->opts at opt's place in its table;
 * OC_ERR_ARG naming --<name>, or when cfg holds another strategy's options
 * already. opt is one of the registry's (oc_store_strategy_opt,
 * oc_store_opt_find). cfg may be NULL to check only.
 */
int oc_store_opt_apply(const struct oc_store_opt *opt, double value, struct oc_store_config *cfg,
                       struct oc_err *err);
/* oc_store_opt_find (in the strategy whose options cfg holds already, if any) and
   oc_store_opt_apply: OC_ERR_ARG when no strategy has --<name>. */
int oc_store_opt_set(struct oc_store_config *cfg, const char *name, double value,
                     struct oc_err *err);

/*
 * Opens strategy `index` over cfg's dataset. Sizes caches from cfg->mem_bytes;
 * if the budget cannot hold what the strategy needs for one batch, fails with
 * OC_ERR_BUDGET saying how much is needed.
 */
int oc_store_open(uint32_t index, const struct oc_store_config *cfg, struct oc_store **out,
                  struct oc_err *err);
void oc_store_free(struct oc_store *s);
const char *oc_store_name(const struct oc_store *s);
/* Floats per output row (the dataset's feat_dim). */
uint32_t oc_store_feat_dim(const struct oc_store *s);

/*
 * Fills out (n x feat_dim f32, row-major) with the feature rows of ids, in
 * order, converting f16 to f32 (oc_f16_to_f32: the same bits whatever the
 * strategy). ids may repeat; an id >= n_nodes is OC_ERR_ARG. A read error
 * (OC_ERR_IO) or a truncated feature file (OC_ERR_FORMAT) is an error naming
 * the file and offset; out is then partly written. In steady state (batches
 * no larger than an earlier one) a gather allocates nothing.
 */
int oc_store_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                    struct oc_err *err);
/*
 * The input rows of training batch `batch` of `epoch` of the plan in the
 * config (sampled with cfg->sample_opts from cfg->train_ids shuffled by
 * (seed, epoch)), in the same row order as oc_store_gather. Strategies that
 * plan ahead (Belady caches, prefetching extractors) use the position to
 * follow their inspected trace; the others serve it as oc_store_gather.
 * Other reads (evaluation) go through oc_store_gather and must not disturb
 * a plan.
 */
int oc_store_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                          uint64_t n, float *out, struct oc_err *err);
/*
 * How many training gathers may run at once, each on its own thread through
 * oc_store_gather_batch_lane with its own lane in [0, n): 1 unless the
 * strategy keeps a reader per lane (direct, static, ginex) or needs none (mmap) and cfg->lanes
 * asked for more (within what the budget allows). Reads of one lane's batch then run
 * while another lane looks up, copies and waits, so the disk is kept busy
 * across batch boundaries.
 */
uint32_t oc_store_gather_lanes(const struct oc_store *s);
/*
 * oc_store_gather_batch on lane `lane` (< oc_store_gather_lanes): callable
 * from lanes' threads at once, one call per lane at a time. Each call counts
 * into the store's figures when it returns. Evaluation gathers
 * (oc_store_gather) use lane 0's reader and must not overlap a lane's call.
 */
int oc_store_gather_batch_lane(struct oc_store *s, uint32_t lane, uint64_t epoch, uint64_t batch,
                               const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);
/*
 * The index of the next batch of `epoch` to train: for a strategy that
 * reorders (gnndrive with --reorder) the next batch whose rows are ready
 * and that was not returned or gathered yet, waiting for one if need be;
 * for the others the next in plan order (0, 1, ... per epoch). Train then
 * samples that batch and passes it to oc_store_gather_batch. OC_ERR_NOTFOUND
 * once every batch of the epoch has been returned (or without a training
 * plan in the config); a pipeline error (OC_ERR_IO, OC_ERR_FORMAT) as
 * oc_store_gather_batch would report it.
 */
int oc_store_next_batch(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err);
/*
 * What the batch pipeline does differently for a strategy, fixed at open.
 */
struct oc_store_caps {
    /* batches the strategy takes in through oc_store_sampled before their gathers
       (gnndrive: its batch records; a further one waits until one is gathered): the
       batch pipeline keeps exactly this many sampled batches in flight (row buffers stay
       at its depth + 1, or oc_store_row_buffers), so the strategy's reads run that far
       ahead and any batch oc_store_next_batch returns is among them; a strategy that
       samples its own batches (caps batches) and has a lookahead (ginex --hyperbatch) has
       them loaded by the sample stage, that far ahead, instead of by the fetch stage.
       0: none */
    uint32_t lookahead;
    /* sampler threads the strategy wants feeding it (gnndrive --samplers, as GNNDrive's
       pool of samplers): the batch pipeline samples that many batches at once, each
       thread whole batches with its own sampler, and shows them to the strategy in plan
       order. 1 for every other strategy */
    uint32_t samplers;
    int hops;     /* takes batches hop by hop (helios): oc_store_hop with each hop's ids */
    int prunes;   /* prunes sampling by historical embeddings (outre, with a trainer that
                     uses them): the pipeline's sampler calls oc_store_hop with a mask */
    int batches;  /* samples the training batches itself (ginex, diskgnn): the pipeline
                     takes each from oc_store_load_batch instead of sampling it */
    int reorders; /* oc_store_next_batch returns batches out of plan order (gnndrive
                     --reorder) */
};
const struct oc_store_caps *oc_store_caps(const struct oc_store *s);

/*
 * A training batch's life in the store, driven by the batch pipeline:
 *
 *   sample stage:  oc_store_hop (per hop, caps.hops; the last block, caps.prunes)
 *                  ──► oc_store_sampled                       (in plan order)
 *   fetch stage:   [oc_store_next_batch | oc_store_load_batch] ──► oc_store_gather_batch
 *   trainer:       oc_store_done                       (via oc_batch_pipe_done)
 */

/*
 * Batch `batch` of `epoch` of the plan, as the strategy sampled it: equal
 * (oc_sample_batch_equal) to what oc_sample_neighbors gives for it. out's
 * arrays may be exchanged for the store's (free them with
 * oc_sample_batch_deinit as usual). Call it before oc_store_gather_batch of
 * the same batch, in plan order. OC_ERR_UNSUPPORTED for a strategy without
 * batches; OC_ERR_ARG for a batch out of plan order; pipeline errors
 * (OC_ERR_IO, OC_ERR_FORMAT naming the file and offset) as they happen.
 */
int oc_store_load_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                        struct oc_sample_batch *out, struct oc_err *err);
/*
 * Shows the strategy training batch `batch` of `epoch` of the plan as soon as
 * it is sampled, before its oc_store_gather_batch (the batch pipeline calls it
 * from its sample stage, in plan order, once per batch): a strategy may issue
 * the batch's reads or pin its rows. b is borrowed for the call. A no-op for
 * strategies that do nothing ahead.
 */
int oc_store_sampled(struct oc_store *s, uint64_t epoch, uint64_t batch,
                     const struct oc_sample_batch *b, struct oc_err *err);

/*
 * A training batch's embeddings at the input of the last layer (outre's
 * historical embeddings): the rows to take from the cache (pruned_pos: local
 * ids among the last block's source nodes; pruned_rows: n_pruned x embed_dim)
 * and the rows the trainer is to hand back once computed (push_pos, into
 * push_rows, n_push x embed_dim). Valid until oc_store_done of the same
 * batch; all zero for a store without pruning.
 */
struct oc_store_hist {
    uint64_t n_pruned;
    const uint32_t *pruned_pos;
    const float *pruned_rows;
    uint64_t n_push;
    const uint32_t *push_pos;
    float *push_rows;
    float *push_grad; /* the trainer writes, per push row, the L2 norm of the loss's
                         gradient at it (after backward): the store admits by it */
};

/*
 * One hop of training batch (epoch, batch) as the sampler produces it, from
 * the batch pipeline's sample stage, before the batch's oc_store_sampled:
 * - mask NULL (caps.hops: oc_sample_sampler_on_hop): ids are the nodes the
 *   hop added to the batch's input ids, in input order, so the strategy may
 *   start reading them while later hops are sampled;
 * - mask set (caps.prunes: oc_sample_sampler_on_prune, sample.h's
 *   oc_sample_prune_fn): ids are the last block's source nodes, the n_seeds
 *   seeds first; the strategy sets mask[i] = 1 for each whose embedding it
 *   serves from history (its sub-tree is not sampled) and fills *hist, which
 *   the pipeline hands to the trainer with the batch.
 * ids (and mask) are borrowed for the call.
 */
struct oc_store_hop {
    uint64_t epoch, batch;
    const uint64_t *ids;
    uint64_t n, n_seeds;
    uint8_t *mask;
    struct oc_store_hist *hist; /* with mask: filled (never NULL then) */
};
/* A no-op for a strategy without the capability the hop is for. */
int oc_store_hop(struct oc_store *s, const struct oc_store_hop *h, struct oc_err *err);
/*
 * The trainer is done with batch (epoch, batch) (oc_batch_pipe_done calls it
 * before the batch's slot is reused): outre takes the embeddings the trainer
 * pushed and, by their gradient norms, marks the --admit share to be taken
 * into its cache. Only after the batch was sampled or loaded.
 */
void oc_store_done(struct oc_store *s, uint64_t epoch, uint64_t batch);
/* oc_store_strategy_row_buffers for the open store's strategy. */
uint32_t oc_store_row_buffers(const struct oc_store *s, uint32_t depth);
/* Cumulative counters since open. */
void oc_store_stats(const struct oc_store *s, struct oc_store_stats *out);

/* ---- what a training plan asks of the disk (store/inspect.c: --strategy auto) ---- */

/*
 * The figures train's cost model (train/auto.c) predicts each strategy's
 * epoch from: the first n_batches batches of cfg's plan (epoch
 * cfg->first_epoch, sampled as train samples them), the disk under
 * features.npy (oc_io_disk_of: probed once per device, bounded to about half
 * a second) and the misses a cache of cache_rows rows would have on them.
 * Caches start warm with the degree-ranked hot set (what static holds and
 * what the others hold after a while), so the figures are steady-state ones
 * rather than cold-start: static (the hot set, never changed), LRU and
 * Belady (ginex's planner over the batches, at the capacity ginex's own
 * budget split gives it under cfg->mem_bytes), and the page cache mmap reads
 * through (an LRU of page_cache_bytes in 4 KiB pages, warm with the hot
 * rows' pages; the page cache is outside --mem-budget, so the caller says
 * how much of it the machine or the process's cgroup leaves). Read requests count 4 KiB pages merged as the batch reader merges
 * them (touching pages, or holes up to the disk's crossover gap_bytes), in
 * features.npy's row order (its layout); row_requests with merging off.
 */
struct oc_store_inspection {
    uint64_t n_batches;     /* inspected */
    uint64_t input_rows;    /* sum of their input rows */
    uint64_t max_rows;      /* the largest batch's */
    uint64_t distinct_rows; /* different nodes among them */
    uint64_t row_bytes;     /* one row as stored in features.npy */
    uint64_t feature_bytes; /* n_nodes x row_bytes */
    uint64_t n_nodes;
    uint64_t cache_rows;       /* the capacity static's and LRU's misses are for */
    uint64_t ginex_cache_rows; /* Belady's: ginex's cache under cfg (0: ginex cannot open) */
    uint64_t static_misses, lru_misses, belady_misses; /* summed over the batches */
    uint64_t half_misses; /* static's with half of cache_rows (diskgnn's cache beside its plan) */
    uint64_t all_requests, all_read_bytes;   /* reading every input row */
    uint64_t miss_requests, miss_read_bytes; /* reading static's misses */
    uint64_t lru_requests, lru_read_bytes;   /* reading the LRU's misses (gnndrive's buffer) */
    uint64_t row_requests, row_read_bytes;   /* every input row its own read (direct: unmerged) */
    uint64_t row_device_requests; /* those after the block layer's back merges (sorted reads) */
    uint64_t page_cache_pages;    /* mmap: 4 KiB pages of features.npy the page cache holds
                                  (page_cache_bytes, at most the file's) */
    uint64_t page_misses;         /* that page cache's misses (an LRU of pages, warm as the rest) */
    uint64_t page_miss_rows;      /* rows with a missing page: the prefetch's requests */
    double sample_s;              /* sampling the batches, wall seconds */
    double plan_s;                /* Belady's planning of them (ginex's planner), wall seconds */
    struct oc_io_disk disk;       /* the disk under features.npy */
};
/*
 * Fills out (see above). cfg needs ds, graph, sample_opts, train_ids,
 * n_train and batch_size (OC_ERR_ARG naming what is missing); its pool
 * samples. Holds the batches' ids (8 bytes per input row, at most 2^22 rows:
 * fewer batches past that), the hot set and the simulated caches (about 40
 * bytes per cached row or page) for the call. Errors name the file (features.npy,
 * sampling reads).
 */
int oc_store_inspect(const struct oc_store_config *cfg, uint32_t n_batches, uint64_t cache_rows,
                     uint64_t page_cache_bytes, struct oc_store_inspection *out,
                     struct oc_err *err);
/*
 * Bytes one lane's feature-file reader takes under cfg's plan (its bounce
 * buffer and request arrays for a batch's rows), which the caching
 * strategies (static, and the caches built like it) set aside from
 * cfg->mem_bytes before caching rows, per lane; cfg needs ds.
 */
uint64_t oc_store_reader_bytes(const struct oc_store_config *cfg);
/* Bytes a row costs in such a cache besides its stored bytes (id and slot lookup). */
#define OC_STORE_CACHE_ROW_EXTRA 12u

#endif
