/*
 * outre_int.h — private to src/store/outre: the `outre` strategy (OUTRE,
 * VLDB 2024): a feature cache (store/cache.c, as `static`) beside a
 * historical embedding cache whose fresh entries prune sampling, the cache
 * budget split between the two by a profiling pass (OUTRE's alpha search).
 *
 *   open:  profile (outre_profile.c) ──► alpha search ──► feature cache rows
 *          (hottest input rows) + embedding slots (most frequent last-block
 *          sources)
 *   batch g (= epoch x batches per epoch + batch), in the training pipeline:
 *     sample stage: oc_store_hop(g, last block): record g mod K first takes in the
 *       embeddings the trainer pushed for batch g - K, then every non-seed
 *       source of the last block with an embedding younger than `staleness`
 *       iterations is pruned (its rows copied into the record) and every
 *       cached node computed afresh is listed to be pushed; the record's
 *       view (struct oc_store_hist) travels with the batch to the trainer
 *     trainer: forward with the pruned rows ─► push rows written into the
 *       record ─► backward ─► their gradient norms written ─►
 *       oc_batch_pipe_done ─► oc_store_done(g): the `admit` share with the smallest
 *       norms is marked to be taken in (FreshGNN's gradient criterion: a small
 *       gradient marks an embedding the loss is not pulling on, a stable one)
 *
 * Why K records make it deterministic: the pipeline keeps exactly K =
 * OUTRE_SLOTS sampled batches in flight (oc_store_caps: lookahead), so the sample
 * stage starts batch g only after the trainer gave back batch g - K (the
 * free-slot queue orders the two, which also publishes the trainer's writes).
 * So the cache that batch g sees holds exactly the pushes of batches <= g - K,
 * applied in order by one thread, whatever the timing: the same seed gives
 * the same pruning and the same weights. An embedding is therefore at least
 * K iterations old when used.
 *
 * Thread-safety: the embedding cache and the records' pruned/push lists are
 * written by the sample stage only; a record's push rows, gradient norms,
 * sort scratch and admission marks by the trainer, for a batch in its hands;
 * gathers (fetch stage or evaluation) touch only the feature cache and its
 * reader; counters read by stats are the trainer's.
 * Ownership: everything here belongs to the store.
 */
#ifndef OFFCORE_STORE_OUTRE_INT_H
#define OFFCORE_STORE_OUTRE_INT_H

#include "store/store_int.h"

#define OUTRE_SLOTS             4u    /* sampled batches in flight (records) */
#define OUTRE_PROFILE_BATCHES   16u   /* batches sampled by the profiling pass */
#define OUTRE_ALPHA_STEPS       20u   /* the alpha search tries 0, 1/20, ..., 1 */
#define OUTRE_TIMED_ROWS        4096u /* rows read to time a feature read */
#define OUTRE_DEFAULT_STALENESS 100
#define OUTRE_DEFAULT_ADMIT     0.05

/* The options `offcore train` offers for outre (its table in outre.c; store_opts_read). */
struct outre_store_opts {
    uint32_t staleness; /* an embedding is used while younger than this many iterations
                           (batches); 0 = no embedding cache */
    double admit;       /* share of a batch's freshly computed embeddings taken into the
                           cache, those with the smallest gradient norm; 0..1 */
    double embed_nodes; /* share of the nodes given an embedding slot (the most frequent
                           candidates), in place of the alpha search's choice; 0 = the
                           search chooses */
};

/*
 * One batch's embeddings: its cached nodes among the last block's sources,
 * the pruned ones (rows taken from the cache) first, then those to push:
 *   rows: [ pruned 0 .. n_pruned-1 | push 0 .. n_push-1 ]   (dim floats each)
 */
struct outre_rec {
    uint64_t g; /* global iteration, UINT64_MAX = none */
    int done;   /* the trainer filled the push rows */
    uint64_t n_cand, n_pruned, n_push, max_age;
    /* rows (and positions) the arrays hold: grown by the sample stage, read by stats */
    _Atomic uint64_t cap;
    uint32_t *pruned_pos, *push_pos;
    uint64_t *push_ids;
    float *push_grad;  /* per push row: its gradient's L2 norm (the trainer's) */
    float *grad_order; /* scratch: the norms sorted (oc_store_done) */
    uint8_t *admitted; /* per push row: taken into the cache (oc_store_done) */
    float *rows;
};

/* Bytes of one record row: its embedding, positions, id, gradient norm (twice), admission. */
#define OUTRE_REC_ROW_BYTES(dim) ((dim)*4 + 25)

/* The historical embedding cache: a slot per chosen node. */
struct outre_emb {
    uint64_t n_slots, dim;
    uint32_t *slot_of; /* node -> slot or STORE_NO_SLOT (NULL when n_slots == 0) */
    uint64_t *iter;    /* per slot: iteration it was computed + 1, 0 = empty */
    float *rows;       /* n_slots x dim */
};

/* What the profiling pass measured and what the alpha search chose (logged). */
struct outre_profile {
    uint64_t n_batches, rows, rows_pruned_all, candidates; /* sampled, without / with pruning */
    uint64_t max_last_src; /* the most sources of the last block in one profiled batch */
    double sample_s_per_row, read_s_per_row;
    uint32_t *feat_count; /* per node: times an input row (freed after open) */
    uint32_t *cand_count; /* per node: times a last-block non-seed source */
    double alpha;         /* share of the cache budget given to embeddings */
    uint64_t emb_slots, feat_rows;
    double est_saving_s, est_pruned; /* per profiled batch, at the chosen split */
    int fixed_split;                 /* --embed-nodes set the embedding side, not the search */
};

struct outre_store {
    struct store_disk disk;
    struct store_cache cache; /* feature rows (cache.c); n_live: yield's lock */
    struct store_yield yield; /* its rows, given back under a budget and taken back */
    int yield_ready;
    struct outre_emb emb;
    struct outre_rec recs[OUTRE_SLOTS];
    uint32_t staleness;
    double admit;       /* share of a batch's pushes admitted, by smallest gradient norm */
    uint64_t n_batches; /* per epoch, for the global iteration */
    int prunes;         /* embeddings on: staleness > 0, a trainer using them, 2+ layers */
    struct outre_profile prof;
    /* the trainer's counters (oc_store_done) */
    uint64_t n_cand, n_pruned, n_pushed, n_admitted, max_age;
};

/* Profiles cfg's plan (counts, sizes, times) into p; OC_ERR_BUDGET if the counts do not fit. */
int outre_profile_run(struct oc_store *s, struct outre_store *o, const struct oc_store_config *cfg,
                      struct oc_err *err);
/*
 * Splits avail bytes between the embedding side (outre_emb_bytes of dim-wide
 * embeddings) and the feature cache (rows with their lookup) to maximise the
 * estimated saving; sets p->alpha (the embedding side's share), emb_slots,
 * feat_rows, est_*.
 */
int outre_alpha_search(const struct oc_store *s, const struct outre_store *o, uint64_t avail,
                       uint64_t dim, struct outre_profile *p, struct oc_err *err);
/*
 * Bytes the embedding side takes with n slots: the node table, the slots, and
 * the records of the batches in flight (each up to min(n, the profile's most
 * last-block sources + a quarter) rows). 0 for n = 0.
 */
uint64_t outre_emb_bytes(const struct oc_store *s, const struct outre_profile *p, uint64_t n,
                         uint64_t dim);
/* The k ids with the highest counts (ties to the lower id), ascending; *out oc_alloc'd. */
int outre_top_ids(const uint32_t *count, uint64_t n, uint64_t k, uint64_t **out,
                  struct oc_err *err);

/* ---- the embedding cache and the records (outre_emb.c) ----------------- */

int outre_emb_init(struct oc_store *s, struct outre_store *o, const uint64_t *ids, uint64_t n,
                   uint64_t dim, struct oc_err *err);
void outre_emb_free(struct outre_store *o);
uint64_t outre_emb_held_bytes(const struct oc_store *s, const struct outre_store *o);
/* The hop hook: the last block's sources pruned, h->hist filled (other hops: nothing). */
int outre_hop(struct oc_store *s, const struct oc_store_hop *h, struct oc_err *err);
/* The done hook: the --admit share of the batch's pushes marked, the counters added. */
void outre_done(struct oc_store *s, uint64_t epoch, uint64_t batch);
/*
 * Marks in admitted[0 .. n) the k = floor(admit x n) (n when admit >= 1, 0
 * when admit <= 0) rows with the smallest norms, ties to the lower position
 * (a NaN norm counts as +inf and is rewritten so); scratch holds n floats.
 * Returns k, the rows marked.
 */
uint64_t outre_admit_select(float *norm, uint64_t n, double admit, float *scratch,
                            uint8_t *admitted);

#endif
