/*
 * kg.h — knowledge-graph reasoning: the KG dataset (a training graph and a
 * disjoint inductive graph sharing one relation vocabulary, docs/FORMAT.md
 * section 9), its importer from the GraIL layout, the synthetic generator,
 * query-dependent subgraph extraction (RED-GNN's progressive propagation)
 * over an in-memory or on-disk fact graph, and filtered ranking.
 *
 * Place in the data flow: kg sits beside train (io, dataset, nn below it);
 * cli's import kg, generate-kg and kg-train drive it.
 *
 *   GraIL text ──► oc_kg_import ──► DIR (kg.json + .npy) ──► oc_kg_open
 *        ──► oc_kg_facts (RAM or O_DIRECT) ──► oc_kg_extract (per batch of queries)
 *        ──► nn RED-GNN (oc_nn_redgnn_*) ──► oc_kg_rank (filtered, all entities)
 *
 * Thread-safety: an opened KG, a fact source and an extractor are used by
 * one thread at a time; extraction fans out over a pool by query.
 * Ownership: objects from _new/_open are released with _free; arrays handed
 * out by an extractor belong to it and stay valid until its next call.
 */
#ifndef OFFCORE_KG_H
#define OFFCORE_KG_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/nn.h"
#include "offcore/progress.h"
#include "offcore/thread.h"

#define OC_KG_FORMAT_NAME    "offcore-kg"
#define OC_KG_FORMAT_VERSION 1
#define OC_KG_MAX_LAYERS     16 /* propagation steps an extractor grows */

/* The two graphs of an inductive KG dataset. */
enum oc_kg_graph {
    OC_KG_TRAIN, /* X_vK/: facts = train.txt; queries valid.txt, test.txt */
    OC_KG_IND,   /* X_vK_ind/: facts = train.txt; queries valid.txt, test.txt */
    OC_KG_GRAPH_COUNT,
};

/* Query triples beside a graph's facts. */
enum oc_kg_split {
    OC_KG_VALID,
    OC_KG_TEST,
    OC_KG_SPLIT_COUNT,
};

/* The arrays of one graph (file names "<graph>_<array>.npy"). */
enum oc_kg_array {
    OC_KG_INDPTR, /* u64 (N+1,): facts of head h at [indptr[h], indptr[h+1]) */
    OC_KG_REL,    /* u32 (F,): relation of each fact, < 2R+1 */
    OC_KG_TAIL,   /* u32 (F,): tail of each fact, < N */
    OC_KG_QVALID, /* u32 (n,3): valid.txt triples (head, relation < R, tail) */
    OC_KG_QTEST,  /* u32 (n,3): test.txt triples */
    OC_KG_ARRAY_COUNT,
};

/* "train" / "ind"; "indptr", "rel", ... */
const char *oc_kg_graph_name(enum oc_kg_graph g);
/* Writes "<graph>_<array>.npy" into buf. */
void oc_kg_file_name(enum oc_kg_graph g, enum oc_kg_array a, char *buf, size_t n);

struct oc_kg_file_info {
    uint64_t bytes;
    uint32_t crc32;
};

struct oc_kg_graph_info {
    uint64_t n_entities; /* N: entities of the graph's three files */
    uint64_t n_triples;  /* lines of train.txt */
    uint64_t n_facts;    /* F = 2 n_triples + N (inverse and identity facts added) */
    uint64_t n_queries[OC_KG_SPLIT_COUNT];
};

struct oc_kg_manifest {
    uint32_t version;
    char name[128];
    uint32_t n_relations; /* R; facts use 2R+1 relation ids: r, r+R (inverse), 2R (identity) */
    struct oc_kg_graph_info graph[OC_KG_GRAPH_COUNT];
    struct oc_kg_file_info files[OC_KG_GRAPH_COUNT][OC_KG_ARRAY_COUNT];
    char provenance[1024];
};

/* Relation ids of the augmented fact graph. */
static inline uint32_t oc_kg_n_rel_aug(const struct oc_kg_manifest *m)
{
    return 2 * m->n_relations + 1;
}

/* Serializes / strictly parses kg.json (unknown or missing keys name the key). */
int oc_kg_manifest_format(const struct oc_kg_manifest *m, char **text, struct oc_err *err);
int oc_kg_manifest_parse(const char *text, size_t len, const char *what, struct oc_kg_manifest *m,
                         struct oc_err *err);

/* ---- writing a KG dataset (kg_write.c) ---------------------------------- */

/*
 * Builds DIR atomically as the node-dataset builder does: arrays go into
 * "DIR.tmp-<host>-<pid>-<nonce>-<seq>/", kg.json last, then the directory is
 * renamed to DIR (which must not exist). Freed without commit: removed.
 */
struct oc_kg_writer;
int oc_kg_writer_new(const char *out_dir, struct oc_kg_writer **out, struct oc_err *err);
void oc_kg_writer_free(struct oc_kg_writer *w);
struct oc_kg_manifest *oc_kg_writer_manifest(struct oc_kg_writer *w);
/* Writes one whole array (u64 for INDPTR, u32 otherwise; n_cols 3 for queries). */
int oc_kg_writer_array(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                       uint64_t n_rows, const void *data, struct oc_err *err);
/* Checks the arrays against the manifest (oc_kg_open on the temporary), then renames. */
int oc_kg_writer_commit(struct oc_kg_writer *w, struct oc_err *err);

/*
 * Builds a graph's augmented CSR from its triples (n x 3, relation < R,
 * entities < n_entities): every (h, r, t) gives (h, r, t) and (t, r+R, h),
 * every entity e gives (e, 2R, e); facts of a head sorted by (relation,
 * tail). indptr (n_entities+1), rel and tail are oc_alloc'd.
 */
int oc_kg_build_csr(const uint32_t *triples, uint64_t n, uint64_t n_entities, uint32_t n_relations,
                    uint64_t **indptr, uint32_t **rel, uint32_t **tail, struct oc_err *err);

/* ---- opening (kg_open.c) ------------------------------------------------ */

struct oc_kg;

/*
 * Opens DIR: kg.json parses, every file exists with its recorded size, every
 * header is a 4096-byte header with the expected dtype and shape, indptr is
 * monotone from 0 to F, relations < 2R+1, tails < N, query ids in range
 * (relation < R), and CRCs match. Errors (OC_ERR_FORMAT) name the file and
 * the position at fault.
 */
int oc_kg_open(const char *dir, struct oc_kg **out, struct oc_err *err);
/*
 * Reads and strictly parses DIR/kg.json alone (no array is read or checked):
 * for what the manifest says before the dataset is opened (kg-train's preset).
 * OC_ERR_NOTFOUND if DIR has no kg.json.
 */
int oc_kg_read_manifest(const char *dir, struct oc_kg_manifest *m, struct oc_err *err);
void oc_kg_free(struct oc_kg *kg);
const struct oc_kg_manifest *oc_kg_manifest(const struct oc_kg *kg);
const char *oc_kg_dir(const struct oc_kg *kg);
/* Full path of one array file. */
const char *oc_kg_path(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_array a);
/* Loads a graph's queries (n x 3 u32, oc_alloc'd). */
int oc_kg_load_queries(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_split s,
                       uint32_t **triples, uint64_t *n, struct oc_err *err);

/* ---- importing and generating (kg_import.c, kg_generate.c) -------------- */

/*
 * Imports the GraIL layout: SRC is "X_vK" (the training graph's directory);
 * "SRC_ind" is its inductive graph. Lines are "head<TAB>relation<TAB>tail".
 * Entities are numbered per graph in order of first appearance (train.txt,
 * valid.txt, test.txt), relations in order of first appearance in the
 * training graph's files. Refused (OC_ERR_FORMAT naming file and line): a
 * line without three tab-separated fields, an empty file, a relation of the
 * inductive graph that the training graph does not have.
 */
int oc_kg_import_grail(const char *src, const char *out, struct oc_progress *bar,
                       struct oc_err *err);

struct oc_kg_gen_opts {
    uint64_t n_entities;  /* per graph */
    uint64_t n_triples;   /* per graph (train.txt); augmented facts are 2x + N */
    uint32_t n_relations; /* >= 4 */
    double power_law;     /* exponent of head/tail popularity (2.2) */
    uint64_t n_queries;   /* per split */
    uint64_t seed;
    uint64_t mem_bytes; /* bound on the facts held at once while building a CSR */
};
void oc_kg_gen_opts_default(struct oc_kg_gen_opts *o);
/*
 * Writes a synthetic inductive KG into OUT in bounded memory: power-law
 * entity popularity, relations in rule-like pairs (r2 follows r1 through a
 * shared relational pattern) so queries are learnable. Same options and seed
 * give identical files.
 */
int oc_kg_generate(const char *out, const struct oc_kg_gen_opts *o, struct oc_progress *bar,
                   struct oc_err *err);

/* ---- fact graphs and extraction (kg_facts.c, kg_extract.c) -------------- */

enum oc_kg_facts_where {
    OC_KG_FACTS_MEMORY, /* rel and tail arrays loaded */
    OC_KG_FACTS_DISK,   /* indptr in RAM; rel/tail read with O_DIRECT per head, counted */
};

struct oc_kg_facts;

int oc_kg_facts_open(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_facts_where where,
                     struct oc_kg_facts **out, struct oc_err *err);
void oc_kg_facts_free(struct oc_kg_facts *f);
uint64_t oc_kg_facts_n_entities(const struct oc_kg_facts *f);

/* I/O counters of an on-disk fact graph (zero for memory). */
struct oc_kg_facts_stats {
    uint64_t n_reads, bytes_read, bytes_requested;
};
void oc_kg_facts_stats(const struct oc_kg_facts *f, struct oc_kg_facts_stats *s);

/*
 * The subgraph of one batch of queries, layer by layer (RED-GNN's
 * progressive propagation, complete, no sampling). Layer l's nodes are
 * (query, entity) pairs sorted by query then entity; layer 0's are the heads.
 * Layer l's edges are every fact (e_s, rel, e_o) with (q, e_s) a node of
 * layer l-1, sorted by target node; the nodes of layer l are their targets
 * (every node of layer l-1 is among them, through its identity fact).
 */
struct oc_kg_layer {
    uint64_t n_prev, n_nodes, n_edges;
    const uint64_t *indptr;       /* n_nodes + 1: edges into node i */
    const uint32_t *src;          /* n_edges: node index in layer l-1 */
    const uint32_t *rel;          /* n_edges */
    const uint32_t *query;        /* n_edges: query (batch row) of the edge */
    const uint32_t *prev_to_node; /* n_prev: the node of layer l holding node i of layer l-1 */
    const uint32_t *node_query;   /* n_nodes */
    const uint32_t *node_entity;  /* n_nodes */
};

struct oc_kg_extractor;

int oc_kg_extractor_new(struct oc_kg_facts *facts, uint32_t n_layers, struct oc_pool *pool,
                        struct oc_kg_extractor **out, struct oc_err *err);
void oc_kg_extractor_free(struct oc_kg_extractor *x);
/*
 * Frees what grew with the largest batch extracted (its queries' layers, the
 * outputs, the workers' fetched facts), keeping the per-entity scratch: for a
 * phase that will not extract with it for a while (kg-train's test
 * evaluation on the other graph). The last outputs are gone; the next call
 * grows them again.
 */
void oc_kg_extractor_trim(struct oc_kg_extractor *x);
/*
 * Extracts the n_layers layers for queries with head entities heads[0..n).
 * layers (n_layers entries, caller storage) point into the extractor.
 */
int oc_kg_extract(struct oc_kg_extractor *x, const uint32_t *heads, uint32_t n,
                  struct oc_kg_layer *layers, struct oc_err *err);
/* Facts (edges) extracted since creation, summed over layers. */
uint64_t oc_kg_extractor_n_edges(const struct oc_kg_extractor *x);

/* ---- filtered ranking (kg_rank.c) --------------------------------------- */

/*
 * Queries grouped as RED-GNN evaluates them: triples (h, r, t) and their
 * inverses (t, r+R, h) grouped by (head, relation), answers sorted.
 */
struct oc_kg_qset {
    uint64_t n;
    uint32_t *head, *rel;
    uint64_t *ans_ptr; /* n + 1 */
    uint32_t *ans;
};
int oc_kg_qset_build(const uint32_t *triples, uint64_t n_triples, uint32_t n_relations,
                     struct oc_kg_qset *qs, struct oc_err *err);
void oc_kg_qset_deinit(struct oc_kg_qset *qs);

/*
 * The filter: every true tail of (head, relation) among the given triple
 * sets (and their inverses). Lookups by binary search.
 */
struct oc_kg_filter {
    struct oc_kg_qset all;
};
int oc_kg_filter_build(const uint32_t *const *triples, const uint64_t *n_triples, unsigned n_sets,
                       uint32_t n_relations, struct oc_kg_filter *f, struct oc_err *err);
void oc_kg_filter_deinit(struct oc_kg_filter *f);

struct oc_kg_metrics {
    double sum_rr;
    uint64_t n_ranked, n_hits1, n_hits10;
};
/*
 * Ranks every answer of query (head, rel) given the scores of all n_entities
 * entities, in RED-GNN's filtered setting as its utils.cal_ranks computes
 * it (average rank among all entities, minus the filtered true tails scoring
 * strictly higher): rank = 1 + #entities outside the filter scoring higher
 * + (#other entities scoring equal) / 2. Accumulates into m.
 */
int oc_kg_rank(const float *scores, uint64_t n_entities, uint32_t head, uint32_t rel,
               const uint32_t *answers, uint64_t n_answers, const struct oc_kg_filter *f,
               struct oc_kg_metrics *m, struct oc_err *err);
/*
 * The same ranking from the scores of the entities the query's subgraph
 * reached only: entity[0..n_reached) distinct and ascending, score[i] that
 * of entity[i]; every other entity scores 0, as in oc_kg_rank's dense
 * array. Counts (so the metrics) are exactly oc_kg_rank's, in O(n_reached +
 * answers x log n_reached) per answer instead of O(n_entities).
 */
int oc_kg_rank_reached(const uint32_t *entity, const float *score, uint64_t n_reached,
                       uint64_t n_entities, uint32_t head, uint32_t rel, const uint32_t *answers,
                       uint64_t n_answers, const struct oc_kg_filter *f, struct oc_kg_metrics *m,
                       struct oc_err *err);

/* ---- training (kg_train.c) --------------------------------------------- */

/*
 * kg-train, RED-GNN's inductive protocol (its train.py / base_model.py):
 * training queries are the training graph's valid.txt triples and their
 * inverses, in file order (the reference does not shuffle), over the
 * training graph's facts; model selection on the training graph's test.txt
 * queries (filter: its train+valid+test); test on the inductive graph's
 * valid.txt and test.txt queries over its own facts (filter: its
 * train+valid+test), every entity of the inductive graph a candidate. The
 * learning rate decays by `decay` after every epoch (ExponentialLR).
 */
/*
 * How a batch's loss is scaled. The reference's train_batch computes
 * sum_i (-pos_i + max + lse_i) with max of shape (n, 1) against (n,) terms,
 * so it sums n copies: its loss (and gradient) is n times the summed
 * cross-entropy of the batch's n queries. Under Adam a gradient's scale only
 * meets eps and the L2 term, so BATCH applies the L2 penalty divided by n
 * (the same up to eps and the weight in Adam's moments of an epoch's last,
 * shorter batch). The reported loss is the summed cross-entropy either way
 * (the reference prints n times it).
 */
enum oc_kg_loss_scale {
    OC_KG_LOSS_BATCH, /* as the reference: weight decay / queries of the batch */
    OC_KG_LOSS_SUM,   /* the plain summed cross-entropy: weight decay as given */
    OC_KG_LOSS_SCALE_COUNT,
};
/* "batch" / "sum". */
const char *oc_kg_loss_scale_name(enum oc_kg_loss_scale s);

/*
 * Where training batches' subgraphs come from (TIGER's baselines and TIGER,
 * thesis section V). Every mode extracts the same subgraphs, hence trains to
 * the same weights; all but BASIC read the training graph's facts on disk.
 */
enum oc_kg_extract_mode {
    OC_KG_EXTRACT_BASIC, /* each batch from the fact graph (--facts memory or disk) */
    OC_KG_EXTRACT_ATOM,  /* the Atom Cache (highest-degree atoms in RAM), misses from disk */
    OC_KG_EXTRACT_GINEX, /* subgraphs cut into slices in order, no reuse; slice store + cache */
    OC_KG_EXTRACT_TIGER, /* SiGMa slices, slice store, Slice Cache with Belady changesets */
    OC_KG_EXTRACT_COUNT,
};
/* "basic", "atom", "ginex-slices", "tiger"; parse: OC_ERR_ARG for another name. */
const char *oc_kg_extract_name(enum oc_kg_extract_mode m);
int oc_kg_extract_parse(const char *name, enum oc_kg_extract_mode *m, struct oc_err *err);

struct oc_kg_train_opts {
    uint32_t n_layers;
    uint64_t hidden, attn_dim;
    enum oc_nn_redgnn_act act;
    float dropout;
    double lr, weight_decay, decay;
    uint32_t batch, eval_batch, epochs;
    uint64_t seed;
    unsigned threads; /* 0 = all cores */
    enum oc_kg_facts_where facts;
    enum oc_kg_loss_scale loss_scale;
    enum oc_kg_extract_mode extract;
    uint32_t slice_size;        /* h: facts per slice (ginex-slices, tiger) */
    double alpha;               /* tiger: capacity threshold, a fraction of h */
    uint32_t hops;              /* tiger: k, at most layers - 1 */
    uint32_t superbatch;        /* ginex-slices, tiger: batches planned ahead */
    uint64_t atom_cache_bytes;  /* atom, ginex-slices, tiger: 0 = a share of the budget */
    uint64_t slice_cache_bytes; /* ginex-slices, tiger: 0 = a share of the budget */
    const char *plan_dir;       /* slice store root (NULL: DIR/plan) */
    const char *log_path;       /* NULL = none */
    const char *checkpoint_dir; /* NULL = none */
    int resume;
    int dry_run; /* open and measure (oc_kg_train_run), train nothing, write nothing */
};

/* hidden 32 (TIGER's setting), 3 layers, attn 5, relu, dropout 0.2, lr 0.005, decay 0.995,
 * weight decay 1e-4, batch 16, eval batch 64, 50 epochs, loss scale BATCH (the reference's). */
void oc_kg_train_opts_default(struct oc_kg_train_opts *o);
/*
 * The reference code's per-dataset settings (train.py) for a GraIL split
 * name ("WN18RR_v1" ... "nell_v4"): lr, decay, weight decay (lamb), hidden,
 * attention dim, dropout, activation, layers, batch. OC_ERR_NOTFOUND for
 * another name (o unchanged).
 */
int oc_kg_train_preset(const char *name, struct oc_kg_train_opts *o, struct oc_err *err);

struct oc_kg_eval {
    double mrr, hits1, hits10;
    uint64_t n_ranked;
};

struct oc_kg_epoch_stats {
    uint32_t epoch;
    double loss; /* summed over the epoch's queries, as the reference reports it */
    struct oc_kg_eval valid, test;
    double time_s, eval_s;
    uint64_t n_edges; /* facts extracted while training this epoch */
    /* where the training subgraphs came from, this epoch */
    enum oc_kg_extract_mode extract;
    double slicing_s, plan_s, extract_s, model_s; /* slicing incl. storing; Belady planning */
    double plan_wait_s; /* training waiting for a superbatch's slicing and plan (not overlapped) */
    uint64_t superbatches;        /* TIGER's superbatches started */
    uint64_t superbatches_ahead;  /* of them, sliced and planned while the one before trained */
    uint64_t first_batches_ahead; /* of them, batch 0 read while the one before trained */
    uint64_t slices_read, slices_accessed, slices_hit; /* from disk; wanted; from the cache */
    uint64_t bytes_read;                               /* from the training graph's files */
    uint64_t atoms_cached, atoms_disk; /* heads served by the Atom Cache / the fact graph */
    double delta_r, delta_u;           /* SliceRedundancyRate, SliceUtilizationRate */
    uint64_t n_slices;                 /* in the store */
    uint64_t atom_cache_bytes, slice_cache_bytes;
    uint64_t peak_rss_bytes;
    uint64_t mem_peak_bytes; /* the accountant's peak (what --mem-budget bounds) so far */
};

typedef void (*oc_kg_epoch_fn)(void *ctx, const struct oc_kg_epoch_stats *st);

struct oc_kg_train_result {
    uint32_t epochs_run, best_epoch;
    double best_valid_mrr;
    struct oc_kg_eval test_at_best;
    char weights_sha256[65];
    double time_s;
    /* measured before the first step under --mem-budget or with dry_run (else 0) */
    uint64_t held_bytes;      /* graphs, queries, filters, model, Adam state */
    uint64_t workspace_bytes; /* the model's workspace for the largest batches */
    uint64_t extract_bytes;   /* reserved for extraction's working memory (the most at once) */
    uint64_t fixed_bytes;     /* --extract's slicer and executor arrays */
    uint64_t need_bytes;      /* the smallest --mem-budget that fits (their sum) */
    double measure_s;
};

/*
 * Trains RED-GNN on the KG dataset in dir (see the CLI's kg-train). Under a
 * budget (oc_mem_set_budget) or with o->dry_run it first measures what
 * training and evaluation need (res->need_bytes and its parts: every batch's
 * subgraph extracted once, the model's workspace grown once to the largest),
 * with the accountant's limit lifted while it measures, and refuses a budget
 * below that with OC_ERR_BUDGET naming the smallest budget that fits and
 * each part; a budget that fits then never fails for memory in basic and
 * atom extraction (the caches are sized from what is left and give memory
 * back). With dry_run it returns after measuring: nothing is trained or
 * written. Errors name the file or option at fault.
 */
int oc_kg_train_run(const char *dir, const struct oc_kg_train_opts *o, oc_kg_epoch_fn on_epoch,
                    void *ctx, struct oc_kg_train_result *res, struct oc_err *err);

#endif
