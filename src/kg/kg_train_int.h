/*
 * kg_train_int.h — private to src/kg: the state of one `kg-train` run
 * (kg_train.c) and the measurement of what it needs under a memory budget
 * (kg_budget.c).
 *
 * Place in the data flow: kg internals (kg-train).
 * Thread-safety: a run belongs to one thread.
 * Ownership: the run owns everything in it (kg_train.c's run_close frees it).
 */
#ifndef OFFCORE_KG_TRAIN_INT_H
#define OFFCORE_KG_TRAIN_INT_H

#include "kg/kg_tiger_int.h"
#include "offcore/nn.h"

struct kg_graph_run {
    struct oc_kg_facts *facts;
    struct oc_kg_extractor *x;
    struct oc_kg_filter filter;
    uint64_t n_entities;
};

/*
 * What the run needs, measured before the first step (kg_budget_measure):
 *
 *   need = held + workspace + fixed + reserve
 *          held:      graphs' indptr (and facts in RAM), queries, filters, model, Adam state,
 *                     the fact readers' buffers
 *          workspace: the model's, grown once to the largest batches (held from then on)
 *          fixed:     --extract's slicer and executor arrays, superbatch arrays
 *          reserve:   the most extraction holds at once (training batches and validation on
 *                     the training graph, test batches on the inductive graph), or a
 *                     checkpoint's copy of the model, or the Atom Cache's build, the most
 */
struct kg_budget {
    int measured;
    uint64_t held_bytes, workspace_bytes, fixed_bytes, reserve_bytes, extract_bytes;
    uint64_t need_bytes;
    struct oc_nn_redgnn_shape train, eval; /* the largest batches, layer by layer */
    double seconds;
};

struct kg_run {
    const struct oc_kg_train_opts *o;
    struct oc_kg *kg;
    const struct oc_kg_manifest *m;
    struct oc_pool *pool;
    struct oc_nn_backend *be;
    struct oc_nn_redgnn *model;
    struct kg_graph_run g[OC_KG_GRAPH_COUNT];
    uint32_t *train_q; /* (h, r, t) per training query */
    uint64_t n_train;
    struct oc_kg_qset valid, test[2];
    /* per batch */
    struct oc_kg_layer layers[OC_KG_MAX_LAYERS];
    struct oc_nn_rel_block blocks[OC_KG_MAX_LAYERS];
    const uint32_t *p2n[OC_KG_MAX_LAYERS];
    uint32_t *heads, *rels;
    uint64_t *qptr;
    int64_t *ans_row;
    /* --extract: the training graph's Atom Cache and TIGER's executor */
    struct kg_atom_cache atom_cache;
    struct kg_tiger *tiger;
    uint64_t *sb_off;   /* superbatches (this, next): query offset of each batch (superbatch + 1) */
    uint32_t *sb_heads; /* (this, next): their heads */
    double t_extract;   /* extraction seconds of the epoch's training batches */
    struct kg_budget budget;
};

/*
 * Measures what the open run r needs (r->budget), with the accountant's
 * limit lifted by the caller (so that a budget too small is answered with
 * the smallest that fits, not with the first refused allocation): extracts
 * every training batch and every evaluation batch in the order training
 * and evaluation take them (each graph's extraction buffers let go after,
 * as run_epochs does), grows the model's workspace once to the largest
 * batches (oc_nn_redgnn_reserve: no step of training or evaluation grows it
 * after) and adds --extract's fixed arrays. open_peak: the accountant's peak
 * while the run opened (its transient buffers), a floor for need_bytes.
 * Weights and training are unchanged.
 */
int kg_budget_measure(struct kg_run *r, uint64_t open_peak, struct oc_err *err);
/*
 * OC_ERR_BUDGET when budget_bytes (not 0) is below r->budget.need_bytes:
 * the message names the smallest budget that fits and what each part needs.
 */
int kg_budget_check(const struct kg_run *r, uint64_t budget_bytes, struct oc_err *err);
/* Whole MiB, rounded up: the smallest --mem-budget SIZE (as "NM") that fits need. */
uint64_t kg_budget_mib(uint64_t need_bytes);
/* Slicer modes of --extract: SiGMa for tiger, in order for ginex-slices. */
enum kg_slice_mode kg_train_slice_mode(const struct oc_kg_train_opts *o);

#endif
