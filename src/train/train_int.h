/*
 * train_int.h — private pieces of the train module: the in-memory dataset,
 * the feature gather, evaluation, checkpoints and the JSON-lines log.
 *
 * Place in the data flow: train (dataset + sample + nn → epochs).
 * Thread-safety: one training run owns all of this; the gather and the
 * evaluation use the run's pool with a fixed partition.
 */
#ifndef OFFCORE_TRAIN_INT_H
#define OFFCORE_TRAIN_INT_H

#include <pthread.h>
#include <stdio.h>

#include "offcore/dataset.h"
#include "offcore/io.h"
#include "offcore/nn.h"
#include "offcore/plan.h"
#include "offcore/sample.h"
#include "offcore/thread.h"
#include "offcore/train.h"

enum train_split { TRAIN_SPLIT_TRAIN, TRAIN_SPLIT_VAL, TRAIN_SPLIT_TEST, TRAIN_SPLIT_COUNT };

/* Topology, labels and splits in RAM; features come from a store (store.h). */
struct train_data {
    struct oc_dataset *ds;
    uint64_t n_nodes, feat_dim, n_classes;
    uint64_t *indptr;
    void *indices;             /* u32 or u64 as on disk; NULL with disk topology */
    struct oc_topo_disk *topo; /* disk topology (owns its own indptr) */
    struct oc_graph graph;
    int32_t *labels;
    uint64_t *split[TRAIN_SPLIT_COUNT];
    uint64_t n_split[TRAIN_SPLIT_COUNT];
    uint64_t *out_deg;   /* out-degree in the whole graph, self-edges excluded; NULL
                            unless loaded with out_degrees (GCN) */
    uint64_t max_in_deg; /* the largest in-degree (neighbor-list length) */
};

/*
 * Input rows one chunk of exact inference may gather: eval_batch_size x 16
 * (at most N), raised to the largest in-degree + 1 so one destination always
 * fits. Chunks are cut so the sum of their destinations' in-degree + 1 (a
 * bound on their input rows) stays within it, so the run's memory estimate
 * holds on skewed graphs.
 */
uint64_t train_eval_chunk_rows(const struct train_data *d, const struct oc_train_opts *o);

/* Loads everything but features; with topo_opts != NULL the indices stay on disk, else they are
   checked as they are loaded (one read). The CRC of features.npy is left to the store when
   `strategy` checks it (oc_store_strategy_checks_features), else checked here. out_degrees:
   count d->out_deg (GCN's normalization reads it; NULL otherwise). */
int train_data_load(const char *dir, const struct oc_topo_disk_opts *topo_opts,
                    const char *strategy, int out_degrees, struct train_data *d,
                    struct oc_err *err);
/* As train_data_load, for a dataset without features whose rows come from elsewhere
   (a part of a partitioned dataset: its rows.npy) of feat_dim columns. */
int train_data_load_dim(const char *dir, const struct oc_topo_disk_opts *topo_opts,
                        const char *strategy, uint64_t feat_dim, int out_degrees,
                        struct train_data *d, struct oc_err *err);
void train_data_deinit(struct train_data *d);

/*
 * Input rows for the model: rows ids[0..n) copied into *buf (grown, owned by
 * the caller) and wrapped as tensor x, either from a host matrix (dim floats
 * per row; rows split over the pool in fixed ranges) or from a feature store.
 */
struct train_gather {
    float *buf;
    uint64_t cap_floats;
};
/* Grows g's buffer to hold n rows of dim floats (oc_realloc: it may be a lent one). */
int train_gather_reserve(struct train_gather *g, uint64_t n, uint64_t dim, struct oc_err *err);
int train_gather_rows(struct train_gather *g, const float *src, uint64_t dim, const uint64_t *ids,
                      uint64_t n, struct oc_pool *pool, struct oc_nn_backend *be,
                      struct oc_nn_tensor *x, struct oc_err *err);
/* epoch_batch = {epoch, batch} for a training batch of the plan, NULL for other reads. */
int train_gather_store(struct train_gather *g, struct oc_store *store, const uint64_t *epoch_batch,
                       uint64_t dim, const uint64_t *ids, uint64_t n, struct oc_nn_backend *be,
                       struct oc_nn_tensor *x, struct oc_err *err);
void train_gather_deinit(struct train_gather *g);

/*
 * Fills nn blocks from a sampled batch (views, no copy). src_out_deg (may be
 * NULL) holds the whole-graph out-degree of each input node; as every block's
 * sources are a prefix of the input nodes, all blocks share it. GCN then
 * normalizes by true degrees, so full-neighbor mini-batch training equals
 * full-graph GraphConv and matches exact layer-wise inference.
 */
void train_blocks_from_batch(const struct oc_sample_batch *b, const uint64_t *src_out_deg,
                             struct oc_nn_block *blocks);

/* Whole-graph out-degrees of a batch's input nodes (buffer grown and reused); deg->deg is NULL
   when out_deg is (not loaded: the model does not read them). */
struct train_degrees {
    uint64_t *deg;
    uint64_t cap;
};
int train_src_degrees(const struct oc_sample_batch *b, const uint64_t *out_deg,
                      struct train_degrees *deg, struct oc_err *err);

/* The labels of a batch's seeds, one per output row (buffer grown and reused). */
struct train_labels {
    int32_t *labels;
    uint64_t cap;
};
int train_labels_of(struct train_labels *out, const int32_t *labels, const uint64_t *seeds,
                    uint64_t n, struct oc_err *err);

/* ---- micro-shards (shard.c) --------------------------------------------- */

/*
 * One micro-shard of a global batch: the sub-batch of the seeds [lo, hi)
 * (b: a view of the arrays below, prefix-ordered as every sampled batch:
 * seeds first, then each layer's new neighbors in the order the batch's
 * edges name them) and its input rows x (n_input x dim).
 */
struct train_shard {
    struct oc_sample_batch b;
    uint64_t *ids;
    uint32_t *old, *map; /* shard position -> batch position; batch position -> shard's + 1 */
    float *x;
    uint64_t *indptr[OC_SAMPLE_MAX_LAYERS];
    uint32_t *indices[OC_SAMPLE_MAX_LAYERS];
    uint64_t cap_nodes, cap_old, cap_map, cap_x;
    uint64_t cap_indptr[OC_SAMPLE_MAX_LAYERS], cap_indices[OC_SAMPLE_MAX_LAYERS];
};
/* Part k of parts of n items: [n k / parts, n (k+1) / parts). */
void train_shard_range(uint64_t n, uint32_t parts, uint32_t k, uint64_t *lo, uint64_t *hi);
/* Grows *(void **)pp to exactly n elements of size bytes (at least one) when *cap is smaller
   (oc_grow_by, no slack); on failure nothing changes. */
int train_grow(void *pp, uint64_t *cap, uint64_t n, size_t size, const char *what,
               struct oc_err *err);
/*
 * Cuts the shard of seeds [lo, hi) of batch b (input rows x, dim floats
 * each) into sh. Batch position p's row is row x_row[p] of x, or row p
 * with x_row NULL (a partitioned run holds only the rows its shards read).
 */
int train_shard_cut(struct train_shard *sh, const struct oc_sample_batch *b, const float *x,
                    const uint32_t *x_row, uint64_t dim, uint64_t lo, uint64_t hi,
                    struct oc_err *err);
/* Grows sh's arrays to hold a shard of up to factor x b's size (under a budget, at start). */
int train_shard_reserve(struct train_shard *sh, const struct oc_sample_batch *b, uint64_t dim,
                        double factor, struct oc_err *err);
void train_shard_deinit(struct train_shard *sh);
/* Sums the first width floats of rows[0 .. m) (pitch floats apart) into row 0 by the fixed
   pairwise tree. */
void train_shard_tree_sum(float *rows, uint32_t m, uint64_t pitch, uint64_t width);

#define TRAIN_MAX_MICRO_SHARDS 4096
#define TRAIN_DP_STATS         3 /* doubles after a shard's gradients: loss sum, counted, correct */

/*
 * Data-parallel state of a run with micro-shards (--micro-shards M > 1, or
 * --distributed): this rank's shards [first, last) of the m per batch, and
 * the packets the ranks exchange: per shard its gradients scaled to the
 * batch's mean loss (n_weights floats), then TRAIN_DP_STATS doubles.
 */
struct train_dp {
    int on;
    uint32_t m, n_ranks, rank, first, last;
    uint64_t n_weights, width; /* floats of gradients; floats per packet */
    float *send;               /* this rank's packets */
    float *recv;               /* all m packets, shard order (= rank order) */
    uint64_t *counts;          /* floats each rank sends */
    struct train_shard shard;
};
/* Sets dp up for o (micro_shards, distributed: oc_dist_rank/size) and n_weights. */
int train_dp_init(struct train_dp *dp, const struct oc_train_opts *o, uint64_t n_weights,
                  struct oc_err *err);
void train_dp_deinit(struct train_dp *dp);
/* The packet of shard s (this rank's: first <= s < last) in dp->send. */
float *train_dp_packet(struct train_dp *dp, uint32_t s);
/*
 * Exchanges the packets (an all-gather in rank order), sums the gradients
 * into dp->recv's first packet by the fixed tree and the statistics in shard
 * order into stats; adds this rank's traffic to *sent and *recvd.
 */
int train_dp_exchange(struct train_dp *dp, double stats[TRAIN_DP_STATS], uint64_t *sent,
                      uint64_t *recvd, struct oc_err *err);

/* ---- partitioned features (dist_rows.c) ---------------------------------- */

/*
 * What finding a batch's rows for one rank takes (dist_rows.c): the
 * positions its shards read (reach) and the rows of one gather without
 * repeats (where: per local row, its index among them). One per thread: the
 * trainer's, and the store's access map's.
 */
struct train_part_scan {
    uint32_t *slot;  /* per batch position: its row of x, UINT32_MAX if not read here */
    uint32_t *pos;   /* batch positions the shards read */
    uint32_t *where; /* n_local: index of a local row in the gather, UINT32_MAX if not in it */
    uint32_t *idx;   /* per requested row: its index in the gather (before the gather, the
                        trainer's rows_start keeps each position's source in it) */
    uint32_t *rows;  /* the access map's: every rank's requests of this one, in order */
    uint64_t cap_slot, cap_pos, cap_idx, cap_rows;
};

/*
 * The cache of other parts' rows (--remote-cache, dist_cache.c): a static
 * hot set, every rank's the nodes of highest whole-graph in-degree (ties:
 * lower id) among those it does not own, as many as its bytes hold; each
 * rank computes every rank's alone, so an owner knows which of its rows a
 * rank will not ask for (the access map). Filled once before training, in
 * one collective fetch; part_rows then copies those rows from it.
 */
struct train_part_cache {
    uint64_t bytes;      /* --remote-cache */
    uint64_t n_max;      /* rows the bytes hold (every rank's bound) */
    uint64_t n;          /* rows this rank's holds (n_max, or every node of other parts) */
    uint64_t *ids;       /* their node ids, ascending: row k of rows is ids[k]'s */
    float *rows;         /* n x feat_dim */
    int live;            /* filled: part_rows serves from it */
    uint64_t *hot;       /* n_parts x words: bit i of rank r's: local row i is in r's cache */
    uint64_t words;      /* per rank: ceil(n_local / 64) */
    uint64_t fill_bytes; /* what the fill fetched, not yet in an epoch's stats */
    uint64_t rows_bytes; /* what rows holds, taken from the store's share of the budget */
};

/*
 * A run on a partitioned dataset (offcore partition): this rank's part, the
 * feature store's view of its rows (a features-only dataset over rows.npy:
 * store ids are the part's local rows) and the in-degrees the store ranks
 * them by, the map that tells a planning store (ginex) which rows each
 * batch asks of it, and the buffers of the per-batch exchange that fetches
 * the other rows its micro-shards read from their owners.
 */
struct train_part {
    int on;
    struct oc_plan_part part;
    uint32_t m;                        /* micro-shards per batch (--micro-shards) */
    struct oc_dataset *rows_ds;        /* rows.npy as a dataset of n_local nodes (the store's) */
    struct oc_graph graph;             /* n_local nodes, indptr only: local row i's in-degree in the
                                   whole graph (the store's hotness); no edges */
    uint64_t *deg_indptr;              /* graph.indptr's array */
    struct oc_store_accesses accesses; /* the store's ids per batch (train_part_accesses) */
    struct train_part_scan scan;       /* the trainer's */
    struct train_part_scan acc_scan;   /* the access map's, under acc_mu */
    pthread_mutex_t acc_mu;
    int acc_mu_made;
    float *x;            /* the input rows of the shards' positions (scan.slot) */
    float *x_held;       /* the previous batch's x, while this one's rows come in */
    uint32_t *slot_held; /* and its scan.slot */
    uint64_t cap_x_held, cap_slot_held;
    const uint32_t *step_slot; /* the slots of the batch training (train_step_sharded) */
    struct train_part_flight {
        int on;   /* rows_start ran, rows_finish has not */
        float *x; /* where the fetched rows go */
        uint64_t n_req, dim;
    } flight;
    uint64_t *send_n, *offs;
    uint32_t *req, *serve; /* rows asked of others (then their positions); rows asked of me */
    uint32_t *own;         /* rows of x this rank fills from its own store (then their rows) */
    uint64_t *ids;         /* one gather's local rows, each once: those served, then own */
    float *rows;           /* what the gather returned */
    float *reply, *got;    /* the rows asked of this rank, in order; the rows fetched */
    uint64_t cap_x, cap_ranks, cap_offs, cap_req, cap_serve, cap_own, cap_ids, cap_rows, cap_reply,
        cap_got;
    struct train_part_cache cache; /* --remote-cache (dist_cache.c) */
};
/* Row buffers a partitioned run holds per batch (x and the previous batch's, the gathered rows,
   the fetched rows). */
#define TRAIN_PART_ROW_BUFFERS 4u
/*
 * Opens rank oc_dist_rank()'s part of the partitioned dataset dir
 * (oc_plan_part_open: refused when its part count is not the world size,
 * a part is missing, truncated or of another run), checks that every
 * rank's part has the same run id and opens the store's view of its rows;
 * refuses options this version lacks (--hyperbatch but static's,
 * --reuse-samples, --topology-disk; a strategy that cannot
 * serve a part is refused when the store opens: struct oc_store_accesses).
 */
int train_part_open(struct train_part *tp, const char *dir, const struct oc_train_opts *o,
                    struct oc_err *err);
/*
 * After d (the part's dataset: the whole graph's topology) is loaded: checks
 * its node count against the part's, builds tp->graph and the access map
 * (tp->accesses: batches sampled on d's graph; the rows the ranks' shards
 * ask of this one, each once, in train_part_fill_start's order).
 */
int train_part_graph(struct train_part *tp, const struct train_data *d, struct oc_err *err);
/*
 * The input rows of batch `batch` of epoch e (b) that the micro-shards of
 * its seeds [lo, hi) read, in two halves around the previous batch's step:
 * train_part_fill_start gathers the rows other ranks ask of this one and
 * its own, each once, in one oc_store_gather_batch of store (opened over
 * tp->rows_ds with tp->accesses), takes the cached ones and starts the
 * exchange that fetches the others (every rank joins it), adding the rows
 * to st (local_rows, remote_rows, remote_cache_hits, remote_bytes,
 * served_rows); train_part_fill_finish waits for it and gives *x (batch
 * position p's row is row (*slot)[p], for train_shard_cut). Both stay
 * valid until the fill after the next one starts. One fill at a time.
 */
int train_part_fill_start(struct train_part *tp, struct oc_store *store, uint64_t e, uint64_t batch,
                          const struct oc_sample_batch *b, uint64_t lo, uint64_t hi, uint64_t dim,
                          struct oc_train_epoch_stats *st, struct oc_err *err);
int train_part_fill_finish(struct train_part *tp, float **x, const uint32_t **slot,
                           struct oc_err *err);
/*
 * The feature rows of nodes ids[0 .. n) into out (n x dim), fetched from
 * their owners as train_part_fill_start does, off the training plan (evaluation).
 * A collective: every rank calls it the same number of times, with n = 0
 * when it has nothing to fetch.
 */
int train_part_fetch(struct train_part *tp, struct oc_store *store, const uint64_t *ids, uint64_t n,
                     uint64_t dim, float *out, struct oc_err *err);
void train_part_close(struct train_part *tp);
/*
 * The rows of n nodes (row i: node ids[sel ? sel[i] : i]) into x (n x dim):
 * the collective behind train_part_fill_start and train_part_fetch (dist_rows.c),
 * for batch e_b[0], e_b[1] of the plan or off the plan (e_b NULL); st (may
 * be NULL) gets the counts.
 */
int train_part_rows(struct train_part *tp, struct oc_store *store, const uint64_t *e_b,
                    const uint64_t *ids, const uint32_t *sel, uint64_t n, uint64_t dim, float *x,
                    struct oc_train_epoch_stats *st, struct oc_err *err);
/*
 * --remote-cache (dist_cache.c). train_part_cache_plan, once tp->graph's
 * whole-graph degrees are known (train_part_graph; graph: the whole graph):
 * every rank's hot set, this rank's ids and, per other rank, which of this
 * part's rows it caches. Nothing without tp->cache.bytes.
 */
int train_part_cache_plan(struct train_part *tp, const struct oc_graph *graph, struct oc_err *err);
/*
 * The cache's rows, taken from the store's share of --mem-budget
 * (*store_bytes; NULL without a budget): OC_ERR_BUDGET naming both when
 * they do not leave the store some of it.
 */
int train_part_cache_open(struct train_part *tp, uint64_t *store_bytes, struct oc_err *err);
/*
 * Fills the cache from the rows' owners, a collective every rank joins (with
 * or without a cache: the same number of rounds), chunk rows at most asked
 * per rank and round; off the training plan.
 */
int train_part_cache_fill(struct train_part *tp, struct oc_store *store, uint64_t chunk,
                          struct oc_err *err);
/* The cache's row of node v, or NULL (no cache, not filled, v not in it). */
const float *train_part_cached(const struct train_part *tp, uint64_t v);
/* Whether rank r caches this part's local row `row` (so it will not ask for it). */
static inline int train_part_hot(const struct train_part *tp, uint32_t r, uint32_t row)
{
    const struct train_part_cache *c = &tp->cache;
    return c->hot && ((c->hot[r * c->words + row / 64] >> (row % 64)) & 1u);
}
void train_part_cache_close(struct train_part_cache *c);

/* ---- working set (working_set.c) ------------------------------------------- */

#define WS_PROBE_BATCHES 4  /* full training batches sampled to measure a batch */
#define WS_MARGIN_PCT    25 /* reserved above the largest probed batch and its workspace */

/* What one batch in flight takes, measured (probe) or bounded (fanouts). */
struct train_ws {
    int measured;        /* from a probe of real batches (else the fanout bound) */
    uint64_t batch_rows; /* input rows reserved per batch in flight */
    uint64_t seeds;      /* seeds of the batch batch_rows was measured on */
    uint64_t step_bytes; /* a step's activations and gradients (measured: held already) */
};

/* Input rows of a batch of `seeds` seeds at most: seeds x prod(1 + fanout), at most N. */
uint64_t train_batch_rows_bound(const struct train_data *d, const struct oc_train_opts *o,
                                uint64_t seeds);
void train_ws_from_bound(const struct train_data *d, const struct oc_train_opts *o,
                         struct train_ws *ws);
/* largest_rows of a batch of `seeds` seeds; step_bytes the workspace its step left held. */
void train_ws_from_probe(const struct train_data *d, const struct oc_train_opts *o,
                         uint64_t largest_rows, uint64_t seeds, uint64_t step_bytes,
                         struct train_ws *ws);
/* The most input rows one gather asks the store for: a batch in flight, or evaluation's. */
uint64_t train_ws_gather_rows(const struct train_ws *ws, const struct train_data *d,
                              const struct oc_train_opts *o);
/*
 * Bytes the run needs besides the feature store and what it holds already:
 * row_buffers pipeline row buffers (oc_store_strategy_row_buffers), the
 * larger of a step (unmeasured) and evaluation, and state_bytes (the
 * checkpoint's copy of the model state).
 */
uint64_t train_ws_bytes(const struct train_ws *ws, const struct train_data *d,
                        const struct oc_train_opts *o, uint64_t state_bytes, uint32_t row_buffers);

/* ---- evaluation metrics (metric.c) -------------------------------------- */

/* Index of the first maximum of a row (as torch.argmax on CPU). */
uint64_t train_row_argmax(const float *row, uint64_t n);
/* A key of a score that sorts as the score does (unsigned); -0 and +0 get one key. */
uint64_t train_score_key(double score);
/*
 * ROC-AUC from the keys (train_score_key) of the positives' and the
 * negatives' scores, sorted in place (tmp: room for the larger count): the
 * share of (positive, negative) pairs where the positive scores higher, ties
 * counting one half. NaN when either count is 0.
 */
double train_rocauc_keys(uint64_t *pos, uint64_t n_pos, uint64_t *neg, uint64_t n_neg,
                         uint64_t *tmp);
/* Mean F1 over the classes with 2 TP + FP + FN > 0; 0 when there is none. */
double train_f1_macro(const uint64_t *tp, const uint64_t *fp, const uint64_t *fn,
                      uint64_t n_classes);

/* One split's metric, accumulated from logit rows. */
struct train_metric {
    enum oc_train_metric kind;
    uint64_t n_classes;
    uint64_t n, correct; /* labelled rows added, and those whose argmax is their label */
    /* rocauc: score keys of the positives (label 1) and negatives, a sort buffer */
    uint64_t *pos, *neg, *tmp;
    uint64_t n_pos, n_neg, cap_pos, cap_neg;
    int nan;                /* a NaN score was added: the value is NaN */
    uint64_t *tp, *fp, *fn; /* f1-macro: per class (one allocation, at tp) */
};
/*
 * Sets m up for `kind`; rocauc (n_classes must be 2) holds up to cap_pos
 * positive and cap_neg negative rows between resets.
 */
int train_metric_init(struct train_metric *m, enum oc_train_metric kind, uint64_t n_classes,
                      uint64_t cap_pos, uint64_t cap_neg, struct oc_err *err);
/* What train_metric_init allocates for a split of n_rows labelled rows, at most. */
uint64_t train_metric_bytes(enum oc_train_metric kind, uint64_t n_classes, uint64_t n_rows);
void train_metric_deinit(struct train_metric *m);
/* Forgets the rows added (a new evaluation). */
void train_metric_reset(struct train_metric *m);
/* Adds one labelled row: its n_out (= n_classes) logits and its label in [0, n_out). */
void train_metric_add(struct train_metric *m, const float *row, uint64_t n_out, int32_t label);
/* The metric over the rows added (rocauc: sorts them); see metric.c for empty cases. */
double train_metric_value(struct train_metric *m);
/*
 * Under --distributed (the group on, more than one rank), makes m, which
 * holds this rank's share of a split, the whole split's on every rank: the
 * counts summed, rocauc's score keys gathered rank by rank (the value does
 * not depend on their order: they are sorted). A collective: every rank calls
 * it for the same split. A no-op without the group.
 */
int train_metric_reduce(struct train_metric *m, struct oc_err *err);
/* Labelled nodes of split s with label 1 (*n_pos) and with another label (*n_neg). */
void train_split_binary_counts(const struct train_data *d, int s, uint64_t *n_pos, uint64_t *n_neg);
/*
 * Checks that o->metric can be computed on d: rocauc needs two classes and
 * both classes among the labelled nodes of the validation and test splits
 * (OC_ERR_ARG naming dir, the split and the counts otherwise).
 */
int train_metric_check(const struct train_data *d, const struct oc_train_opts *o, const char *dir,
                       struct oc_err *err);

/*
 * Accuracy over the nodes ids[0..n): exact layer-wise inference over the
 * whole graph (all neighbors) computing only what is needed, or sampled
 * mini-batches (stream ids distinct from training's).
 */
struct train_eval;
int train_eval_new(const struct train_data *d, struct oc_store *store, struct oc_nn_model *m,
                   struct oc_nn_backend *be, struct oc_pool *pool, const struct oc_train_opts *o,
                   const char *scratch_dir, struct train_eval **out, struct oc_err *err);
/*
 * Evaluation on a partitioned dataset: input rows fetched from their owners
 * through tp (train_part_fetch) instead of gathered from the store alone.
 */
void train_eval_set_part(struct train_eval *ev, struct train_part *tp);
void train_eval_free(struct train_eval *ev);
/*
 * Computes accuracy on every split in one pass (full inference runs once per
 * call), and o->metric on the validation and test splits into metric[] (the
 * accuracy itself with acc; the training split's entry is 0). Gathered input rows go into *rows (*cap_rows floats), a buffer the
 * batch pipeline lent (oc_batch_pipe_lend_rows), grown with oc_realloc when
 * needed; *rows and *cap_rows are updated for handing it back.
 */
int train_eval_run(struct train_eval *ev, uint64_t epoch, float **rows, uint64_t *cap_rows,
                   double acc[TRAIN_SPLIT_COUNT], double metric[TRAIN_SPLIT_COUNT],
                   struct oc_err *err);
/*
 * What the last train_eval_run evaluated, in units of sampled batches (both
 * splits) or chunks of full inference's last layer: *own by this rank, *all
 * by every rank together (the same unless --distributed).
 */
void train_eval_units(const struct train_eval *ev, uint64_t *own, uint64_t *all);

/* ---- a layer's output table of exact inference (eval_table.c) ----------- */

/*
 * The hidden layers' output tables of --eval full (two at a time at most)
 * stay in RAM unless they take more than 1/EVAL_TABLES_BUDGET_SHARE of
 * --mem-budget; then they go to a scratch file.
 */
#define EVAL_TABLES_BUDGET_SHARE 4
uint64_t train_eval_tables_bytes(const struct train_data *d, const struct oc_train_opts *o);
int train_eval_tables_on_disk(const struct train_data *d, const struct oc_train_opts *o);

/* Staging memory of the scratch files of --eval full under a budget: the
   writer's buffer (eval_table.c) and the reader's bounce buffer (eval.c). */
#define EVAL_TABLE_WRITE_BYTES (1u << 20)
#define EVAL_IO_BOUNCE_BYTES   (2u << 20)
#define EVAL_SCRATCH_IO_BYTES  (EVAL_TABLE_WRITE_BYTES + EVAL_IO_BOUNCE_BYTES)

/*
 * n_rows x dim floats written in row order by chunks (eval_table_rows gives
 * the tensor to compute a chunk into, eval_table_put commits it), then read by
 * id (eval_table_gather) once eval_table_finish has sealed it. In RAM, or with
 * on_disk in a scratch file that is unlinked as soon as it is complete.
 */
struct eval_table {
    int on_disk;
    uint64_t n_rows, dim, next_row;
    struct oc_nn_tensor ram;   /* in RAM: the whole table */
    struct oc_nn_tensor chunk; /* on disk: the chunk being computed */
    struct oc_writer *w;       /* on disk, while writing */
    struct oc_file *f;         /* on disk, once finished (O_DIRECT, unlinked) */
    char path[4096];           /* the scratch file's name until it is unlinked */
};
void eval_table_init(struct eval_table *t, struct oc_nn_backend *be, int on_disk);
void eval_table_deinit(struct eval_table *t);
int eval_table_begin(struct eval_table *t, const char *scratch_dir, uint64_t n_rows, uint64_t dim,
                     struct oc_err *err);
int eval_table_rows(struct eval_table *t, uint64_t lo, uint64_t n, struct oc_nn_tensor *out,
                    struct oc_err *err);
int eval_table_put(struct eval_table *t, uint64_t lo, uint64_t n, struct oc_err *err);
int eval_table_finish(struct eval_table *t, struct oc_err *err);
int eval_table_gather(struct eval_table *t, struct oc_io_batch *io, struct train_gather *g,
                      const uint64_t *ids, uint64_t n, struct oc_pool *pool,
                      struct oc_nn_backend *be, struct oc_nn_tensor *x, struct oc_err *err);

/* ---- batch construction and redundancy (batching.c) --------------------- */

#define TRAIN_PARTITION_GROUP 4 /* --partition-batch default */

/* Parts per group of --batching partition (--partition-batch, or the default). */
uint32_t train_partition_group(const struct oc_train_opts *o);

/* The partition behind --batching partition and the order it gives the sampler's epochs. */
struct train_batching {
    struct oc_plan_partition part;
    struct oc_sample_parts parts;
    int on; /* --batching partition */
};
/*
 * With --batching partition: the partition of d's graph into
 * oc_plan_partition_n_parts(...) parts, read from or written to plan_dir,
 * logged (parts, groups, built or reused). A no-op for random batches.
 */
int train_batching_open(const struct train_data *d, const struct oc_train_opts *o,
                        const char *plan_dir, struct train_batching *b, struct oc_err *err);
void train_batching_close(struct train_batching *b);
/* What oc_sample_opts.parts takes: NULL for random batches. */
const struct oc_sample_parts *train_batching_parts(const struct train_batching *b);

/* The distinct input rows of an epoch: one bit per node (through the accountant). */
struct train_redundancy {
    uint64_t *seen;
    uint64_t n_words;
};
int train_redundancy_init(struct train_redundancy *r, uint64_t n_nodes, struct oc_err *err);
void train_redundancy_deinit(struct train_redundancy *r);
/* Clears the bits: a new epoch. */
void train_redundancy_epoch(struct train_redundancy *r);
/* Adds batch b's input rows and seeds to st (input_rows, seed_rows, distinct_rows). */
void train_redundancy_add(struct train_redundancy *r, const struct oc_sample_batch *b,
                          struct oc_train_epoch_stats *st);

/* The strategy o trains with: --strategy, else `memory`. */
static inline const char *train_strategy_name(const struct oc_train_opts *o)
{
    return o->strategy ? o->strategy : "memory";
}

/* ---- checkpoint --------------------------------------------------------- */

/* A digest of everything that changes training (dataset, model, options). */
void train_opts_fingerprint(const struct oc_train_opts *o, const struct oc_manifest *m, char *buf,
                            size_t n);
/*
 * Checks and loads a checkpoint held in buf[0 .. len) (path names it in
 * messages): OC_ERR_FORMAT for anything but a whole checkpoint of this
 * version, OC_ERR_ARG if its fingerprint differs; m and pos are written only
 * from a record whose CRC checks. The fuzz target tests/fuzz/fuzz_checkpoint.c
 * calls it directly.
 */
int train_checkpoint_parse(const void *buf, size_t len, const char *path, const char *fingerprint,
                           struct oc_nn_model *m, struct oc_train_position *pos,
                           struct oc_err *err);

/* ---- JSON-lines log ----------------------------------------------------- */

/*
 * The run's memory plan, written with every epoch line under "memory": the
 * budget (0: none), what was held at start (topology, labels, model, a
 * step's workspace), the working set reserved beside the store (batches in
 * flight, evaluation) and what the store was given (the rest).
 */
void train_log_set_plan(struct oc_train_log *l, uint64_t budget, const struct oc_train_result *r);
/*
 * Appends one epoch object (with val_<key> and test_<key> of metric unless it
 * is acc); *bytes = file size after it (durable).
 */
int train_log_epoch(struct oc_train_log *l, const struct oc_train_epoch_stats *st,
                    enum oc_train_metric metric, uint64_t *bytes, struct oc_err *err);
int train_log_final(struct oc_train_log *l, const struct oc_train_result *r,
                    const struct oc_train_opts *o, struct oc_err *err);

#endif
