/*
 * kg_budget.c — what `kg-train` needs under --mem-budget, measured before
 * the first step, so that a budget too small is refused up front naming the
 * smallest that fits, and one that fits never fails later for memory.
 *
 *   run open (held) ──► extract every training batch, then the validation
 *   batches (training graph), in run order; let go ──► the test batches
 *   (inductive graph); let go: the most extraction holds at once, and the
 *   largest batch shapes (per layer: queries, nodes, edges)
 *   ──► oc_nn_redgnn_reserve: the model's workspace grown once to them
 *   ──► need = held + workspace + --extract's fixed arrays + the reserve
 *
 * Training takes its batches in file order, every epoch the same, so the
 * extraction measured here is exactly what each epoch's extraction grows to
 * (the extractor's arrays grow to the same capacities whatever the order;
 * each query runs on the worker its index names). Evaluation batches are
 * fixed too. The model's tensors are products of a batch's sizes, so the
 * per-layer maxima bound every batch (oc_nn_redgnn_reserve).
 *
 * Place in the data flow: kg (kg-train's start-up, before the caches are
 * sized from what is left).
 * Thread-safety: one run per thread; extraction fans out on the run's pool.
 * Ownership: nothing is allocated that outlives a call but the model's
 * workspace (the model's) and the extractors' readers (the extractors').
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kg/kg_train_int.h"

static uint64_t u64_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void shape_note(struct oc_nn_redgnn_shape *s, uint32_t n, const struct oc_kg_layer *layers,
                       uint32_t n_layers)
{
    s->n_query = u64_max(s->n_query, n);
    for (uint32_t l = 0; l < n_layers; l++) {
        s->n_nodes[l] = u64_max(s->n_nodes[l], layers[l].n_nodes);
        s->n_edges[l] = u64_max(s->n_edges[l], layers[l].n_edges);
    }
}

/* Every training batch, as train_epoch takes them. */
static int pass_train(struct kg_run *r, struct oc_err *err)
{
    const struct oc_kg_train_opts *o = r->o;
    for (uint64_t b0 = 0; b0 < r->n_train; b0 += o->batch) {
        uint32_t n = (uint32_t)(r->n_train - b0 < o->batch ? r->n_train - b0 : o->batch);
        for (uint32_t q = 0; q < n; q++)
            r->heads[q] = r->train_q[3 * (b0 + q)];
        OC_KG_TRY(oc_kg_extract(r->g[OC_KG_TRAIN].x, r->heads, n, r->layers, err));
        shape_note(&r->budget.train, n, r->layers, o->n_layers);
    }
    return OC_OK;
}

/* Every evaluation batch of the query sets over graph g, as evaluate takes them. */
static int pass_eval(struct kg_run *r, enum oc_kg_graph g, const struct oc_kg_qset *sets,
                     unsigned n_sets, struct oc_err *err)
{
    uint32_t B = r->o->eval_batch;
    for (unsigned s = 0; s < n_sets; s++)
        for (uint64_t b0 = 0; b0 < sets[s].n; b0 += B) {
            uint32_t n = (uint32_t)(sets[s].n - b0 < B ? sets[s].n - b0 : B);
            memcpy(r->heads, sets[s].head + b0, (size_t)n * 4);
            OC_KG_TRY(oc_kg_extract(r->g[g].x, r->heads, n, r->layers, err));
            shape_note(&r->budget.eval, n, r->layers, r->o->n_layers);
        }
    return OC_OK;
}

/* --extract's arrays held from extract_open on, and its transient buffers while it builds. */
static void extract_fixed(const struct kg_run *r, uint64_t *fixed, uint64_t *transient)
{
    const struct oc_kg_train_opts *o = r->o;
    uint64_t n_ent = r->g[OC_KG_TRAIN].n_entities;
    *fixed = *transient = 0;
    if (o->extract == OC_KG_EXTRACT_BASIC)
        return;
    *transient = n_ent * 8 + 8; /* the Atom Cache's build sorts every entity by degree */
    /* an Atom Cache of a set size is filled at start, before it could give anything back */
    *fixed = o->atom_cache_bytes;
    if (o->extract == OC_KG_EXTRACT_ATOM)
        return;
    uint64_t S = o->superbatch;
    *fixed += kg_tiger_fixed_bytes(kg_train_slice_mode(o), n_ent, r->n_train, o->slice_size) +
              (S + 1) * 16 + S * o->batch * 8;
    *transient = u64_max(*transient, r->n_train * 4 + 4); /* the training heads, once */
}

int kg_budget_measure(struct kg_run *r, uint64_t open_peak, struct oc_err *err)
{
    struct kg_budget *b = &r->budget;
    double t0 = oc_now_s();
    memset(b, 0, sizeof(*b));
    oc_mem_reset_peak();
    int rc = pass_train(r, err);
    if (!rc)
        rc = pass_eval(r, OC_KG_TRAIN, &r->valid, 1, err);
    uint64_t peak_train = oc_mem_peak();
    oc_kg_extractor_trim(r->g[OC_KG_TRAIN].x);
    uint64_t held_train = oc_mem_used();
    oc_mem_reset_peak();
    if (!rc)
        rc = pass_eval(r, OC_KG_IND, r->test, 2, err);
    uint64_t peak_test = oc_mem_peak();
    oc_kg_extractor_trim(r->g[OC_KG_IND].x);
    uint64_t held = oc_mem_used();
    if (rc) {
        oc_err_prefix(err, "kg-train: measuring the batches' subgraphs before training");
        return rc;
    }
    /* the inductive graph's readers grew after the training pass; in later epochs they hold
       that while the training graph extracts */
    uint64_t extract = u64_max(peak_train + (held - held_train), peak_test) - held;
    oc_mem_reset_peak();
    if ((rc = oc_nn_redgnn_reserve(r->model, &b->eval, &b->train, err))) {
        oc_err_prefix(err, "kg-train: growing the model's workspace to the largest batches");
        return rc;
    }
    uint64_t with_ws = oc_mem_used(), probe = oc_mem_peak() - with_ws;
    /* after evaluation, with both graphs' buffers let go: a checkpoint's (or its load's)
       copy of the model state, or the weights' hash */
    uint64_t state = oc_nn_model_state_bytes(oc_nn_redgnn_model(r->model)) + 4096;
    uint64_t fixed, transient;
    extract_fixed(r, &fixed, &transient);
    b->held_bytes = held;
    b->workspace_bytes = with_ws - held;
    b->extract_bytes = extract;
    b->fixed_bytes = fixed;
    b->reserve_bytes = u64_max(u64_max(extract, probe), u64_max(state, transient));
    b->need_bytes = u64_max(with_ws + fixed + b->reserve_bytes, open_peak);
    b->measured = 1;
    b->seconds = oc_now_s() - t0;
    char a[32], c[32], d[32], e[32];
    oc_log(OC_LOG_INFO,
           "kg-train: measured in %.2fs: %s held, %s the model's workspace, %s extraction, "
           "%s needed",
           b->seconds, oc_format_size(held, a, sizeof(a)),
           oc_format_size(b->workspace_bytes, c, sizeof(c)), oc_format_size(extract, d, sizeof(d)),
           oc_format_size(b->need_bytes, e, sizeof(e)));
    return OC_OK;
}

uint64_t kg_budget_mib(uint64_t need_bytes)
{
    return (need_bytes + (1u << 20) - 1) >> 20;
}

/* Sum of a shape's edges over the layers. */
static uint64_t shape_edges(const struct oc_nn_redgnn_shape *s, uint32_t n_layers)
{
    uint64_t e = 0;
    for (uint32_t l = 0; l < n_layers; l++)
        e += s->n_edges[l];
    return e;
}

int kg_budget_check(const struct kg_run *r, uint64_t budget_bytes, struct oc_err *err)
{
    const struct kg_budget *b = &r->budget;
    if (!budget_bytes || budget_bytes >= b->need_bytes)
        return OC_OK;
    char a[32], h[32], w[32], x[32], f[32];
    uint32_t L = r->o->n_layers;
    return OC_ERR(
        err, OC_ERR_BUDGET,
        "--mem-budget %s is too small for kg-train: the smallest that fits is --mem-budget "
        "%" PRIu64 "M (measured before the first step): the graphs, queries, filters, model "
        "and Adam state hold %s; the model's workspace for the largest batches (training: %" PRIu64
        " queries, up to %" PRIu64 " nodes and %" PRIu64
        " edges over %u layers; evaluation: %" PRIu64 " queries, up to %" PRIu64
        " nodes and %" PRIu64 " edges) takes %s; extracting their "
        "subgraphs %s more at once%s%s (a smaller --batch or --eval-batch needs less)",
        oc_format_size(budget_bytes, a, sizeof(a)), kg_budget_mib(b->need_bytes),
        oc_format_size(b->held_bytes, h, sizeof(h)), b->train.n_query, b->train.n_nodes[L - 1],
        shape_edges(&b->train, L), L, b->eval.n_query, b->eval.n_nodes[L - 1],
        shape_edges(&b->eval, L), oc_format_size(b->workspace_bytes, w, sizeof(w)),
        oc_format_size(b->reserve_bytes, x, sizeof(x)),
        b->fixed_bytes ? "; --extract's arrays and a set --atom-cache " : "",
        b->fixed_bytes ? oc_format_size(b->fixed_bytes, f, sizeof(f)) : "");
}
