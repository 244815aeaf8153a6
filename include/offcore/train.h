/*
 * train.h — mini-batch GNN training end to end: load a dataset, sample
 * batches, gather input features, forward/backward/Adam, evaluate (exact
 * layer-wise full-neighbor inference or sampled mini-batches), report test
 * accuracy (or ROC-AUC / macro F1, --metric) at the best validation epoch, log
 * JSON lines, checkpoint and resume.
 *
 * Place in the data flow: train sits on sample, nn and dataset; the CLI calls
 * it. Everything random is keyed by (seed, epoch, batch, ...), so a run is a
 * pure function of its dataset and options: same seed → same loss sequence
 * and weights at any thread count, and a resumed run ends with the weights of
 * an uninterrupted one.
 * Thread-safety: one run per call; it owns its thread pool.
 * Ownership: options and strings are borrowed for the call.
 */
#ifndef OFFCORE_TRAIN_H
#define OFFCORE_TRAIN_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/nn.h"
#include "offcore/progress.h"
#include "offcore/sample.h"
#include "offcore/store.h"

enum oc_train_eval {
    OC_TRAIN_EVAL_FULL,    /* exact layer-wise inference with all neighbors */
    OC_TRAIN_EVAL_SAMPLED, /* mini-batches sampled with the training fanouts */
    OC_TRAIN_EVAL_NONE,    /* no evaluation: training only */
    OC_TRAIN_EVAL_COUNT,
};

/*
 * What evaluation reports and model selection maximizes (--metric). The
 * weights trained are the same whatever the metric; only the best epoch (and
 * the test figure reported at it) may differ.
 */
enum oc_train_metric {
    OC_TRAIN_METRIC_ACC,      /* accuracy: the first maximal logit is the label (default) */
    OC_TRAIN_METRIC_ROCAUC,   /* two classes only: ROC-AUC of logit[1] - logit[0], ties as
                                 average ranks (Mann-Whitney U); class 1 is the positive one */
    OC_TRAIN_METRIC_F1_MACRO, /* mean F1 over the classes among the split's labels or
                                 predictions (sklearn's average="macro") */
    OC_TRAIN_METRIC_COUNT,
};
/* "acc", "rocauc", "f1-macro" (as --metric takes them); "?" out of range. */
const char *oc_train_metric_name(enum oc_train_metric m);
/* The name in JSON log keys: "acc", "rocauc", "f1_macro" (val_<key>, best_val_<key>, ...). */
const char *oc_train_metric_key(enum oc_train_metric m);
/* The name on the epoch line: "Acc", "ROC-AUC", "F1-macro". */
const char *oc_train_metric_label(enum oc_train_metric m);
/* Parses a --metric value; OC_ERR_ARG naming it and the choices otherwise. */
int oc_train_metric_parse(const char *s, enum oc_train_metric *out, struct oc_err *err);

#define OC_TRAIN_MAX_STORE_OPTS 16

struct oc_train_opts {
    enum oc_nn_model_kind model;
    uint32_t n_layers;
    uint64_t hidden;
    uint32_t heads;                        /* GAT hidden heads */
    int32_t fanouts[OC_SAMPLE_MAX_LAYERS]; /* [0] = input layer; -1 = all neighbors */
    uint32_t n_fanouts;
    uint64_t batch_size;
    uint64_t eval_batch_size;
    uint32_t epochs;
    float lr, weight_decay, dropout;
    float input_dropout; /* dropout on the input features; < 0 = the model's DGL default */
    unsigned n_threads;  /* 0 = all cores */
    uint64_t seed;
    enum oc_train_eval eval;
    uint32_t eval_every;         /* evaluate after every Nth epoch and the last (0 or 1: every) */
    enum oc_train_metric metric; /* reported on val/test and maximized on val (default acc);
                                    rocauc needs 2 classes and both in the val and test
                                    splits; not with --eval none (OC_ERR_ARG) */
    const char *scratch_dir;     /* --eval full under a budget: where layer outputs go while
                                evaluating (NULL = the plan directory) */
    const char *log_path;        /* JSON lines, NULL = none */
    const char *checkpoint_dir;  /* NULL = none */
    int resume;                  /* continue from checkpoint_dir */
    const char *strategy;        /* feature store (store.h registry), NULL = "memory";
                                    "auto": predicted fastest (train/auto.c, docs/AUTO.md) */
    int allow_approximate;       /* --strategy auto may pick strategies that change training
                                    (outre, diskgnn with reuse_samples) */
    uint64_t mem_budget;         /* hard limit on memory held (0 = none): sizes the caches */
    int topology_disk;           /* indices stay on disk, read with O_DIRECT (Ginex's cache) */
    uint64_t topo_cache_bytes;   /* disk topology: indptr + table + neighbor cache; 0 = half of
                                  mem_budget, or every list without a budget */
    int topo_rank;               /* disk topology: enum oc_topo_rank of the neighbor cache */
    int reuse_samples;           /* every epoch trains on epoch 0's batches (DiskGNN's
                                      behavior; changes training, so it is in the checkpoint
                                      fingerprint); ginex and gnndrive refuse it */
    /* the strategy's own options (store.h, struct oc_store_opt), set with oc_train_opts_set */
    struct oc_train_store_opt {
        const char *name; /* an option of the strategy's table, e.g. "superbatch" */
        double value;     /* a number, 1 for a flag, the index of a choice */
    } store_opts[OC_TRAIN_MAX_STORE_OPTS];
    uint32_t n_store_opts;
    int dry_run; /* open everything (dataset, probe, store, pipeline, evaluator) and
                             stop before the first epoch: checks options and budget */
    enum oc_train_batching {
        OC_TRAIN_BATCHING_RANDOM,    /* seeds shuffled from (seed, epoch) (default) */
        OC_TRAIN_BATCHING_PARTITION, /* OUTRE's partition batches (sample.h, struct
                                        oc_sample_parts): changes training, so it and
                                        partition_group are in the checkpoint fingerprint */
        OC_TRAIN_BATCHING_COUNT
    } batching;
    uint32_t partition_group; /* parts per group with partition batching (0 = 4) */
    int partitioner;          /* enum oc_plan_partitioner of partition batching (0 = METIS);
                                 Fennel is in the checkpoint fingerprint */
    const char *plan_dir;     /* where plan files go (ginex superbatches, diskgnn windows, the
                             partition of --batching partition);
                             NULL = DIR/plan. Where, not what: their names carry a key of
                             their content, so it is in no fingerprint */
    /*
     * Data parallel (docs/CLI.md, Scale-out): every global batch is cut into
     * micro_shards sub-batches of its seeds (0 or 1: the batch whole, as
     * before), each with its own forward and backward, their gradients
     * scaled to the batch's mean loss and summed in a fixed tree order
     * (changes the weights' last bits, so it is in the checkpoint
     * fingerprint). With distributed (mpirun, src/train/dist.h) rank r of N
     * computes shards [M r / N, M (r+1) / N) and the ranks exchange them:
     * the weights equal one process's with the same micro_shards. Only rank
     * 0 evaluates, logs and checkpoints.
     */
    uint32_t micro_shards;
    int distributed;
    /* a partitioned dataset: bytes of this rank's memory (inside mem_budget, taken from the
       store's share) that keep other parts' f32 rows of highest in-degree, fetched once, so
       batches ask their owners only for the rest (0 = none; the weights do not change) */
    uint64_t remote_cache_bytes;
};

/*
 * Sets a strategy's own option by name (replacing an earlier value of it);
 * oc_train_opts_check refuses it unless o->strategy declares it. OC_ERR_ARG
 * for a name no strategy declares or a full table.
 */
int oc_train_opts_set(struct oc_train_opts *o, const char *name, double value, struct oc_err *err);
/* The value set for option `name`, or dflt. */
double oc_train_opts_get(const struct oc_train_opts *o, const char *name, double dflt);

/*
 * DGL example defaults for a model kind (2 layers everywhere):
 *   sage: hidden 16, fanout 10,25, batch 1000, lr 0.003, wd 0, dropout 0.5, 20 epochs
 *   gcn:  hidden 16, fanout -1,-1, batch 1024, lr 0.01, wd 5e-4, dropout 0.5, 200 epochs
 *   gat:  hidden 8 x 8 heads, fanout -1,-1, batch 1024, lr 0.005, wd 5e-4, dropout 0.6,
 *         200 epochs
 * eval full, seed 0, threads 0 (all cores), eval batch 4096.
 */
void oc_train_opts_default(enum oc_nn_model_kind kind, struct oc_train_opts *o);

/* Stage times are wall seconds inside the epoch. */
struct oc_train_epoch_stats {
    uint32_t epoch;                            /* 0-based */
    uint32_t strategy;                         /* the store registry's index of the strategy
                                                  training (--strategy auto: its pick) */
    double loss, train_acc, val_acc, test_acc; /* val/test: 0 unless evaluated */
    double val_metric, test_metric;            /* --metric's (= val/test_acc with acc) */
    int evaluated;                             /* this epoch ran evaluation (--eval-every) */
    double time_s;
    /*
     * Stage times. sample_s and gather_s are the busy seconds of the batch
     * pipeline's sample and fetch stages (they run beside the trainer, so
     * they overlap the others); wait_s is how long the trainer waited for
     * its next batch; forward_s .. optimizer_s are the trainer's own.
     */
    double sample_s, gather_s, wait_s, forward_s, backward_s, optimizer_s, eval_s;
    uint64_t n_batches;
    uint64_t n_sampled;     /* batches sampled (or loaded from an offline sample) this epoch */
    uint32_t depth;         /* batches the pipeline fetched ahead of the one training */
    uint32_t lanes;         /* gathers it ran at once (oc_store_gather_lanes, at most depth) */
    uint32_t samplers;      /* batches it sampled at once (oc_store_caps: gnndrive) */
    uint64_t sampled_edges; /* edges of this epoch's training batches (all layers) */
    /*
     * OUTRE's Redundancy Ratio: input rows of the epoch's batches (the
     * collective L-hop neighbourhoods, sum of |N~_b|) over their seeds (sum
     * of |N_b|); distinct_rows counts the different nodes among the input
     * rows, so input_rows / distinct_rows is how often a row is asked for.
     */
    uint64_t input_rows, seed_rows, distinct_rows;
    double batch_rr_min, batch_rr_max; /* the per-batch ratio n_input / n_seeds, least and most */
    struct oc_store_stats store;       /* this epoch's training gathers (evaluation excluded) */
    /* disk topology: this epoch's sampling of training batches, the batch pipeline's and
       the strategy's own samplers' (store stats `topo`: ginex's inspector, diskgnn's
       planner; in the first epoch all they read since the store opened) */
    struct oc_topo_disk_stats topo;
    uint64_t gemm_flops;     /* dense work of the training steps (evaluation excluded) */
    double gemm_s;           /* and the seconds it took */
    uint64_t peak_mem_bytes; /* most memory held through the accountant so far */
    uint64_t peak_rss_bytes; /* the process's peak resident set so far */
    /* data parallel: ranks, micro-shards per batch (1: whole batches), and this rank's
       gradient traffic this epoch (bytes it sent to and received from the others) and
       seconds in the exchange */
    uint32_t ranks, micro_shards;
    uint64_t grad_sent_bytes, grad_recv_bytes;
    double exchange_s;
    /* a partitioned dataset (offcore partition): the input rows the ranks' micro-shards read
       this epoch, summed over the ranks: from their own part, from other parts (remote_rows:
       asked; remote_cache_hits of them from the rank's --remote-cache, the rest fetched from
       their owners: remote_bytes of rows exchanged) and served to others (= the rows fetched);
       remote_cache_rows: the rows the ranks' caches hold, remote_fill_bytes: the bytes their
       one fill fetched (in the first epoch a run trains) */
    int partitioned;
    uint64_t local_rows, remote_rows, remote_bytes, served_rows;
    uint64_t remote_cache_hits, remote_cache_rows, remote_fill_bytes;
    /* the fill one batch ahead, as it ran: the batches whose row exchange was in flight (its
       MPI request outstanding) through the previous batch's step, and of them those MPI
       reported complete when the step ended (no wait left), summed over the ranks; this
       rank's seconds of steps run with rows in flight, and of the fill's second half after
       them (the wait left, placing the fetched rows) */
    uint64_t remote_overlapped, remote_hidden;
    double remote_overlap_s, remote_wait_s;
    /* evaluation's work this epoch (0 when not evaluated), in sampled batches (validation and
       test) or chunks of --eval full's last layer: all of it, and this rank's share */
    uint64_t eval_units, eval_units_own;
};

typedef void (*oc_train_epoch_fn)(void *ctx, const struct oc_train_epoch_stats *st);

struct oc_train_result {
    uint32_t epochs_run; /* epochs executed in this call (after a resume: the rest) */
    int evaluated;       /* some epoch ran evaluation; else best_* and test_acc_* are 0 */
    uint32_t best_epoch; /* the last epoch with the highest validation --metric */
    double best_val_acc; /* both in --metric's units: accuracy, ROC-AUC or macro F1 */
    double test_acc_at_best_val;
    double final_loss;
    char weights_sha256[65]; /* empty after a dry run */
    /* the memory plan at start (under a budget; 0 without one) */
    uint64_t held_bytes;         /* topology, labels, model and a step's workspace */
    uint64_t working_set_bytes;  /* batches in flight, evaluation, checkpoint state */
    uint64_t store_bytes;        /* what the feature store was given: the rest */
    uint64_t remote_cache_bytes; /* --remote-cache's rows of other parts, besides the store's */
    uint32_t depth;              /* batches fetched ahead of the trainer */
    /* the strategy that ran (--strategy auto: its pick) and, with auto, its predicted epoch
       seconds against the mean measured training seconds of the epochs run (0 otherwise) */
    char strategy[32];
    int reuse_samples; /* auto picked diskgnn --reuse-samples */
    double predicted_epoch_s, measured_epoch_s;
};

/*
 * Trains on the dataset in dir. on_epoch (may be NULL) is called after every
 * epoch. With checkpoint_dir set, model, optimizer and position are saved
 * atomically after every epoch; with resume, training continues after the
 * last saved epoch (the options must match the checkpoint's: OC_ERR_ARG
 * naming the difference otherwise). Errors name the file or option at fault.
 */
int oc_train_run(const char *dir, const struct oc_train_opts *o, oc_train_epoch_fn on_epoch,
                 void *ctx, struct oc_progress *progress, struct oc_train_result *res,
                 struct oc_err *err);

/* Checks an option set for consistency (fanouts vs layers, batch > 0, ...). */
int oc_train_opts_check(const struct oc_train_opts *o, struct oc_err *err);

/* ---- checkpoints and the JSON-lines log (shared with kg-train) ----------- */

/* Where a run stands after a completed epoch. */
struct oc_train_position {
    uint32_t next_epoch;
    uint32_t best_epoch;
    double best_val_acc, test_acc_at_best_val; /* in --metric; kg-train: validation and
                                                  test MRR */
    uint64_t log_bytes;                        /* size of the JSON log after that epoch's line */
};

/*
 * DIR/checkpoint.bin, replaced atomically: the fingerprint (every option and
 * the data that change training), the position and the model's state record.
 */
int oc_train_checkpoint_save(const char *dir, const char *fingerprint, const struct oc_nn_model *m,
                             const struct oc_train_position *pos, struct oc_err *err);
/* OC_ERR_NOTFOUND if there is no checkpoint; OC_ERR_ARG if the fingerprint differs. */
int oc_train_checkpoint_load(const char *dir, const char *fingerprint, struct oc_nn_model *m,
                             struct oc_train_position *pos, struct oc_err *err);

struct oc_train_log;
/*
 * Opens path for appending after truncating it to keep_bytes (resume) or to
 * 0. strategy: the run's index in the store registry (its stats table is
 * logged by train's epoch lines; any value for oc_train_log_line).
 */
int oc_train_log_open(const char *path, uint64_t keep_bytes, uint32_t strategy,
                      struct oc_train_log **out, struct oc_err *err);
void oc_train_log_close(struct oc_train_log *l);
/* Appends one line of JSON text (a newline is added) durably; *bytes = file size after it. */
int oc_train_log_line(struct oc_train_log *l, const char *json, uint64_t *bytes,
                      struct oc_err *err);

#endif
