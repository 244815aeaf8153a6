/*
 * kg_train.c — `offcore kg-train`: RED-GNN trained on a KG dataset with the
 * reference's inductive protocol (kg.h), evaluated with filtered full
 * ranking every epoch, the test figures reported at the best validation MRR.
 *
 *   per epoch:  batches of training queries (file order) ──► extract L layers
 *               (training graph) ──► forward ──► loss over all entities
 *               ──► backward ──► Adam (lr decayed per epoch)
 *               ──► valid: rank (training graph) ──► test: rank (inductive graph)
 *               ──► JSON line (fsynced) ──► best.txt + checkpoint (atomic)
 *
 * Under --mem-budget (or --dry-run) the run first measures what it needs
 * (kg_budget.c: every batch's subgraph extracted once, the model's workspace
 * grown once to the largest) and refuses a budget below that before the
 * first step, naming the smallest that fits; the caches of --extract are
 * sized from what is left.
 *
 * Place in the data flow: kg (above nn and train's checkpoint and log);
 * the CLI's kg-train calls oc_kg_train_run.
 * Thread-safety: one run per thread; extraction and kernels fan out on the
 * run's pool, deterministically, so weights do not depend on --threads.
 * Ownership: the run owns everything it opens and frees it before returning.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kg/kg_train_int.h"
#include "offcore/io.h"
#include "offcore/train.h"

void oc_kg_train_opts_default(struct oc_kg_train_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->n_layers = 3;
    o->hidden = 32;
    o->attn_dim = 5;
    o->act = OC_NN_REDGNN_RELU;
    o->dropout = 0.2f;
    o->lr = 0.005;
    o->weight_decay = 1e-4;
    o->decay = 0.995;
    o->batch = 16;
    o->eval_batch = 64;
    o->epochs = 50;
    o->facts = OC_KG_FACTS_MEMORY;
    o->loss_scale = OC_KG_LOSS_BATCH;
    o->extract = OC_KG_EXTRACT_BASIC;
    o->slice_size = 512;
    o->alpha = 0.5;
    o->hops = 1;
    o->superbatch = 32;
}

static const char *const extract_names[OC_KG_EXTRACT_COUNT] = {"basic", "atom", "ginex-slices",
                                                               "tiger"};

const char *oc_kg_extract_name(enum oc_kg_extract_mode m)
{
    return (unsigned)m < OC_KG_EXTRACT_COUNT ? extract_names[m] : "?";
}

int oc_kg_extract_parse(const char *name, enum oc_kg_extract_mode *m, struct oc_err *err)
{
    for (int i = 0; i < OC_KG_EXTRACT_COUNT; i++)
        if (strcmp(name, extract_names[i]) == 0) {
            *m = (enum oc_kg_extract_mode)i;
            return OC_OK;
        }
    return OC_ERR(err, OC_ERR_ARG, "--extract %s: not basic, atom, ginex-slices or tiger", name);
}

const char *oc_kg_loss_scale_name(enum oc_kg_loss_scale s)
{
    return s == OC_KG_LOSS_BATCH ? "batch" : s == OC_KG_LOSS_SUM ? "sum" : "?";
}

/* LARS-research/RED-GNN inductive/train.py, per split. */
static const struct preset {
    const char *name;
    double lr, decay, lamb;
    uint64_t hidden, attn;
    float dropout;
    enum oc_nn_redgnn_act act;
    uint32_t layers, batch;
} presets[] = {
    {"WN18RR_v1", 0.005, 0.991, 0.0002, 64, 5, 0.21f, OC_NN_REDGNN_IDD, 5, 100},
    {"fb237_v1", 0.0092, 0.994, 0.0003, 32, 5, 0.23f, OC_NN_REDGNN_RELU, 3, 20},
    {"nell_v1", 0.0021, 0.9937, 0.000189, 48, 5, 0.2460f, OC_NN_REDGNN_RELU, 5, 10},
    {"WN18RR_v2", 0.0016, 0.994, 0.0004, 48, 3, 0.02f, OC_NN_REDGNN_RELU, 5, 20},
    {"fb237_v2", 0.0077, 0.993, 0.0002, 48, 5, 0.3f, OC_NN_REDGNN_RELU, 3, 10},
    {"nell_v2", 0.0075, 0.9996, 0.000066, 48, 5, 0.2881f, OC_NN_REDGNN_RELU, 3, 100},
    {"WN18RR_v3", 0.0014, 0.991, 0.000034, 64, 5, 0.28f, OC_NN_REDGNN_TANH, 5, 20},
    {"fb237_v3", 0.0006, 0.994, 0.000023, 48, 3, 0.27f, OC_NN_REDGNN_RELU, 3, 20},
    {"nell_v3", 0.0008, 0.995, 0.0004, 16, 3, 0.06f, OC_NN_REDGNN_RELU, 3, 10},
    {"WN18RR_v4", 0.006, 0.991, 0.000132, 32, 5, 0.11f, OC_NN_REDGNN_RELU, 5, 10},
    {"fb237_v4", 0.0052, 0.999, 0.000018, 48, 5, 0.07f, OC_NN_REDGNN_IDD, 5, 20},
    {"nell_v4", 0.0005, 1.0, 0.000398, 16, 5, 0.1472f, OC_NN_REDGNN_TANH, 5, 20},
};

int oc_kg_train_preset(const char *name, struct oc_kg_train_opts *o, struct oc_err *err)
{
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
        const struct preset *p = &presets[i];
        if (strcmp(name, p->name) != 0)
            continue;
        o->lr = p->lr;
        o->decay = p->decay;
        o->weight_decay = p->lamb;
        o->hidden = p->hidden;
        o->attn_dim = p->attn;
        o->dropout = p->dropout;
        o->act = p->act;
        o->n_layers = p->layers;
        o->batch = p->batch;
        return OC_OK;
    }
    return OC_ERR(err, OC_ERR_NOTFOUND, "no reference settings for '%s' (GraIL splits only)", name);
}

static int opts_check(const struct oc_kg_train_opts *o, struct oc_err *err)
{
    if (o->n_layers < 1 || o->n_layers > OC_KG_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "--layers %u outside [1, %d]", o->n_layers,
                      OC_KG_MAX_LAYERS);
    if (o->batch < 1 || o->eval_batch < 1 || o->epochs < 1)
        return OC_ERR(err, OC_ERR_ARG, "--batch, --eval-batch and --epochs must be at least 1");
    if (!isfinite(o->lr) || o->lr <= 0 || !isfinite(o->weight_decay) || o->weight_decay < 0 ||
        !isfinite(o->decay) || o->decay <= 0 || o->decay > 1)
        return OC_ERR(err, OC_ERR_ARG,
                      "--lr must be > 0, --weight-decay >= 0 and --decay in (0, 1], all finite");
    if ((unsigned)o->loss_scale >= OC_KG_LOSS_SCALE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "unknown loss scale %d", (int)o->loss_scale);
    if ((unsigned)o->extract >= OC_KG_EXTRACT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "unknown extraction mode %d", (int)o->extract);
    if (o->extract != OC_KG_EXTRACT_BASIC && o->facts != OC_KG_FACTS_DISK)
        return OC_ERR(err, OC_ERR_ARG,
                      "--extract %s reads the facts on disk: it needs --facts disk",
                      oc_kg_extract_name(o->extract));
    if (o->slice_size < 1 || o->slice_size > (1u << 24) || o->superbatch < 1 ||
        !(o->alpha >= 0.0 && o->alpha <= 1.0))
        return OC_ERR(err, OC_ERR_ARG,
                      "--slice-size must be in [1, 2^24], --superbatch at least 1, --alpha in "
                      "[0, 1]");
    if (o->extract == OC_KG_EXTRACT_TIGER && o->hops > o->n_layers - 1)
        return OC_ERR(err, OC_ERR_ARG, "--hops %u: at most --layers - 1 = %u", o->hops,
                      o->n_layers - 1);
    if (o->resume && !o->checkpoint_dir)
        return OC_ERR(err, OC_ERR_ARG, "--resume needs --checkpoint DIR");
    return OC_OK;
}

static int pair_queried(const uint64_t *keys, uint64_t n, uint32_t h, uint32_t r)
{
    uint64_t k = (uint64_t)h << 32 | r, lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == k;
}

/*
 * The facts of graph g the filter needs, as (h, r < R, t) triples: those
 * whose (h, r) or (t, r + R) is a pair some ranked query asks about (the
 * query triples of qs[0..n_qs), both directions). Ranking looks the filter up
 * only for those pairs, so this filters exactly as all the facts would, in a
 * fraction of the memory; the fact arrays are streamed in chunks, never
 * loaded whole (kg-train runs under budgets smaller than the fact graph).
 */
static int forward_facts(struct kg_run *r, enum oc_kg_graph g, const uint32_t *const *qs,
                         const uint64_t *n_qs, unsigned n_sets, uint32_t **out, uint64_t *n,
                         struct oc_err *err)
{
    *out = NULL;
    *n = 0;
    const uint32_t R = r->m->n_relations;
    uint64_t n_keys = 0;
    for (unsigned s = 0; s < n_sets; s++)
        n_keys += 2 * n_qs[s];
    uint64_t *keys = oc_alloc((size_t)n_keys * 8 + 8, "kg filter: queried pairs", err);
    if (!keys)
        return err->status;
    for (unsigned s = 0, k = 0; s < n_sets; s++)
        for (uint64_t i = 0; i < n_qs[s]; i++) {
            const uint32_t *x = qs[s] + 3 * i;
            keys[k++] = (uint64_t)x[0] << 32 | x[1];
            keys[k++] = (uint64_t)x[2] << 32 | (x[1] + R);
        }
    qsort(keys, (size_t)n_keys, 8, oc_cmp_u64);
    /* entities heading some queried pair: most facts are rejected by one bit, not two searches */
    uint64_t n_ent = r->m->graph[g].n_entities;
    uint64_t *heads = oc_calloc(n_ent / 64 + 1, 8, "kg filter: queried entities", err);
    if (!heads) {
        oc_free(keys);
        return err->status;
    }
    for (uint64_t i = 0; i < n_keys; i++)
        if ((keys[i] >> 32) < n_ent)
            heads[(keys[i] >> 32) / 64] |= 1ull << ((keys[i] >> 32) % 64);
    uint64_t rows, cols;
    void *ip = NULL;
    struct oc_file *fr = NULL, *ft = NULL;
    const uint64_t chunk = 65536;
    uint32_t *rel = NULL, *tail = NULL, *t = NULL;
    uint64_t k = 0, cap = 0;
    int rc =
        oc_npy_load_as(oc_kg_path(r->kg, g, OC_KG_INDPTR), OC_DTYPE_U64, &ip, &rows, &cols, err);
    if (!rc)
        rc = oc_file_open(oc_kg_path(r->kg, g, OC_KG_REL), OC_FILE_READ, &fr, err);
    if (!rc)
        rc = oc_file_open(oc_kg_path(r->kg, g, OC_KG_TAIL), OC_FILE_READ, &ft, err);
    if (!rc && (!(rel = oc_alloc((size_t)chunk * 4, "kg filter: staging", err)) ||
                !(tail = oc_alloc((size_t)chunk * 4, "kg filter: staging", err))))
        rc = err->status;
    const uint64_t *indptr = ip;
    uint64_t F = r->m->graph[g].n_facts, h = 0;
    for (uint64_t f0 = 0; !rc && f0 < F; f0 += chunk) {
        uint64_t m = F - f0 < chunk ? F - f0 : chunk;
        uint64_t off = OC_NPY_HEADER_BYTES + 4 * f0;
        if ((rc = oc_file_pread(fr, rel, (size_t)m * 4, off, err)) ||
            (rc = oc_file_pread(ft, tail, (size_t)m * 4, off, err)))
            break;
        for (uint64_t i = 0; i < m; i++) {
            while (indptr[h + 1] <= f0 + i)
                h++;
            uint32_t rv = rel[i], tv = tail[i];
            int by_head = heads[h / 64] >> (h % 64) & 1, by_tail = 0;
            if (tv < n_ent)
                by_tail = heads[tv / 64] >> (tv % 64) & 1;
            if (rv >= R || ((!by_head || !pair_queried(keys, n_keys, (uint32_t)h, rv)) &&
                            (!by_tail || !pair_queried(keys, n_keys, tv, rv + R))))
                continue;
            if ((rc = oc_grow(&t, &cap, k + 1, 12, 1024, "kg filter", err)) != OC_OK)
                break;
            t[3 * k] = (uint32_t)h;
            t[3 * k + 1] = rv;
            t[3 * k + 2] = tv;
            k++;
        }
    }
    struct oc_err e2;
    if (fr)
        oc_file_close(fr, &e2);
    if (ft)
        oc_file_close(ft, &e2);
    oc_free(ip);
    oc_free(rel);
    oc_free(tail);
    oc_free(keys);
    oc_free(heads);
    if (rc) {
        oc_free(t);
        return rc;
    }
    *out = t;
    *n = k;
    return OC_OK;
}

/* Extractor, facts and filter of graph g. */
static int graph_open(struct kg_run *r, enum oc_kg_graph g, struct oc_err *err)
{
    struct kg_graph_run *gr = &r->g[g];
    gr->n_entities = r->m->graph[g].n_entities;
    OC_KG_TRY(oc_kg_facts_open(r->kg, g, r->o->facts, &gr->facts, err));
    OC_KG_TRY(oc_kg_extractor_new(gr->facts, r->o->n_layers, r->pool, &gr->x, err));
    uint32_t *sets[3] = {NULL, NULL, NULL};
    uint64_t ns[3] = {0, 0, 0};
    int rc = oc_kg_load_queries(r->kg, g, OC_KG_VALID, &sets[1], &ns[1], err);
    if (!rc)
        rc = oc_kg_load_queries(r->kg, g, OC_KG_TEST, &sets[2], &ns[2], err);
    if (!rc)
        rc = forward_facts(r, g, (const uint32_t *const *)&sets[1], &ns[1], 2, &sets[0], &ns[0],
                           err);
    if (!rc)
        rc = oc_kg_filter_build((const uint32_t *const *)sets, ns, 3, r->m->n_relations,
                                &gr->filter, err);
    if (!rc && g == OC_KG_TRAIN) {
        /* training queries: valid.txt and inverses, interleaved in file order; valid: test.txt */
        r->n_train = 2 * ns[1];
        if (!(r->train_q = oc_alloc((size_t)r->n_train * 12 + 12, "kg training queries", err)))
            rc = err->status;
        for (uint64_t i = 0; !rc && i < ns[1]; i++) {
            const uint32_t *x = sets[1] + 3 * i;
            uint32_t q[6] = {x[0], x[1], x[2], x[2], x[1] + r->m->n_relations, x[0]};
            memcpy(r->train_q + 6 * i, q, sizeof(q));
        }
        if (!rc)
            rc = oc_kg_qset_build(sets[2], ns[2], r->m->n_relations, &r->valid, err);
    } else if (!rc) {
        rc = oc_kg_qset_build(sets[1], ns[1], r->m->n_relations, &r->test[0], err);
        if (!rc)
            rc = oc_kg_qset_build(sets[2], ns[2], r->m->n_relations, &r->test[1], err);
    }
    for (int i = 0; i < 3; i++)
        oc_free(sets[i]);
    return rc;
}

static void run_close(struct kg_run *r)
{
    if (r->g[OC_KG_TRAIN].facts)
        kg_facts_set_atoms(r->g[OC_KG_TRAIN].facts, NULL, NULL, 0);
    kg_tiger_free(r->tiger);
    kg_atom_cache_deinit(&r->atom_cache);
    oc_free(r->sb_off);
    oc_free(r->sb_heads);
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++) {
        oc_kg_extractor_free(r->g[g].x);
        oc_kg_facts_free(r->g[g].facts);
        oc_kg_filter_deinit(&r->g[g].filter);
    }
    oc_kg_qset_deinit(&r->valid);
    oc_kg_qset_deinit(&r->test[0]);
    oc_kg_qset_deinit(&r->test[1]);
    oc_free(r->train_q);
    oc_free(r->heads);
    oc_free(r->rels);
    oc_free(r->qptr);
    oc_free(r->ans_row);
    oc_nn_redgnn_free(r->model);
    oc_nn_backend_free(r->be);
    oc_pool_free(r->pool);
    oc_kg_free(r->kg);
}

enum kg_slice_mode kg_train_slice_mode(const struct oc_kg_train_opts *o)
{
    return o->extract == OC_KG_EXTRACT_TIGER ? KG_SLICE_SIGMA : KG_SLICE_SEQ;
}

/*
 * The caches of --extract, sized from what the budget leaves once the run is
 * open, the model's workspace grown and extraction's measured working memory
 * reserved (kg_budget.c; without --mem-budget: as if it left 8 times the
 * training graph's fact and indptr bytes, so that each cache holds all it
 * could want): atom takes a quarter of it for its Atom Cache; ginex-slices
 * and tiger an eighth for the Atom Cache and an eighth for the Slice Cache,
 * after the slicer's and executor's fixed arrays (kg_tiger_fixed_bytes)
 * (--atom-cache and --slice-cache set them instead). The rest stays for the
 * slicer's working memory; both caches give memory back when it needs more.
 */
static uint64_t budget_left(const struct kg_run *r)
{
    uint64_t b = oc_mem_budget(), used = oc_mem_used() + r->budget.reserve_bytes;
    if (b == 0) /* enough for every cache to hold the whole fact graph */
        return 8 * (r->m->graph[OC_KG_TRAIN].n_facts + r->m->graph[OC_KG_TRAIN].n_entities) * 8 +
               kg_tiger_fixed_bytes(kg_train_slice_mode(r->o), r->m->graph[OC_KG_TRAIN].n_entities,
                                    r->n_train, r->o->slice_size);
    return b > used ? b - used : 0;
}

/* Everything the slices depend on, as text, and its key (two CRC-32s). */
static uint64_t slice_key(const struct kg_run *r)
{
    const struct oc_kg_train_opts *o = r->o;
    const struct oc_kg_manifest *m = r->m;
    char text[512];
    int n = snprintf(text, sizeof(text),
                     "kg-slices v1 mode=%s N=%" PRIu64 " F=%" PRIu64
                     " crc=%08x,%08x,%08x,%08x layers=%u h=%u alpha=%.17g hops=%u batch=%u "
                     "superbatch=%u",
                     oc_kg_extract_name(o->extract), m->graph[0].n_entities, m->graph[0].n_facts,
                     m->files[0][OC_KG_INDPTR].crc32, m->files[0][OC_KG_REL].crc32,
                     m->files[0][OC_KG_TAIL].crc32, m->files[0][OC_KG_QVALID].crc32, o->n_layers,
                     o->slice_size, o->alpha, o->hops, o->batch, o->superbatch);
    return (uint64_t)oc_crc32(0, text, (uint64_t)n) << 32 |
           oc_crc32(0x9e3779b9u, text, (uint64_t)n);
}

static int extract_open(struct kg_run *r, const char *dir, struct oc_err *err)
{
    const struct oc_kg_train_opts *o = r->o;
    struct oc_kg_facts *f = r->g[OC_KG_TRAIN].facts;
    if (o->extract == OC_KG_EXTRACT_BASIC)
        return OC_OK;
    uint64_t left = budget_left(r);
    if (o->extract != OC_KG_EXTRACT_ATOM) {
        uint64_t fixed = kg_tiger_fixed_bytes(kg_train_slice_mode(o), r->g[OC_KG_TRAIN].n_entities,
                                              r->n_train, o->slice_size);
        left = left > fixed ? left - fixed : 0;
    }
    oc_log(OC_LOG_DEBUG, "kg-train: %" PRIu64 " bytes held, %" PRIu64 " left for the caches",
           oc_mem_used(), left);
    uint64_t share = o->extract == OC_KG_EXTRACT_ATOM ? left / 4 : left / 8;
    OC_KG_TRY(kg_atom_cache_build(&r->atom_cache, f,
                                  o->atom_cache_bytes ? o->atom_cache_bytes : share, err));
    if (oc_mem_budget()) /* it gives atoms back to the largest queries' working memory */
        OC_KG_TRY(kg_atom_cache_register(&r->atom_cache, err));
    kg_facts_set_atoms(f, NULL, r->atom_cache.index.bits ? &r->atom_cache : NULL, 0);
    if (o->extract == OC_KG_EXTRACT_ATOM)
        return OC_OK;
    uint64_t S = o->superbatch;
    if (!(r->sb_off = oc_alloc((size_t)(S + 1) * 16, "kg superbatch", err)) ||
        !(r->sb_heads = oc_alloc((size_t)S * o->batch * 8, "kg superbatch", err)))
        return err->status;
    uint32_t *heads = oc_alloc((size_t)r->n_train * 4 + 4, "kg tiger: heads", err);
    if (!heads)
        return err->status;
    for (uint64_t i = 0; i < r->n_train; i++)
        heads[i] = r->train_q[3 * i];
    char plan[4200];
    if (o->plan_dir)
        snprintf(plan, sizeof(plan), "%s", o->plan_dir);
    else
        snprintf(plan, sizeof(plan), "%s/plan", dir);
    struct kg_tiger_config c = {
        f,
        r->atom_cache.index.bits ? &r->atom_cache : NULL,
        {kg_train_slice_mode(o), o->slice_size, o->alpha, o->hops, o->n_layers},
        plan,
        slice_key(r),
        o->slice_cache_bytes ? o->slice_cache_bytes : share,
        heads,
        r->n_train};
    int rc = kg_tiger_new(&c, &r->tiger, err);
    oc_free(heads);
    return rc;
}

static int run_open(struct kg_run *r, const char *dir, struct oc_err *err)
{
    const struct oc_kg_train_opts *o = r->o;
    OC_KG_TRY(oc_kg_open(dir, &r->kg, err));
    r->m = oc_kg_manifest(r->kg);
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = o->threads ? o->threads : (unsigned)(n_cpu > 0 ? n_cpu : 1);
    OC_KG_TRY(oc_pool_new(threads, &r->pool, err));
    OC_KG_TRY(oc_nn_backend_new(OC_NN_BACKEND_CPU, r->pool, &r->be, err));
    struct oc_nn_redgnn_config cfg = {o->n_layers, o->hidden,  o->attn_dim, oc_kg_n_rel_aug(r->m),
                                      o->act,      o->dropout, o->seed};
    OC_KG_TRY(oc_nn_redgnn_new(r->be, &cfg, &r->model, err));
    OC_KG_TRY(graph_open(r, OC_KG_TRAIN, err));
    oc_log(OC_LOG_DEBUG, "kg-train: model and training graph open, %" PRIu64 " bytes held",
           oc_mem_used());
    OC_KG_TRY(graph_open(r, OC_KG_IND, err));
    oc_log(OC_LOG_DEBUG, "kg-train: inductive graph open, %" PRIu64 " bytes held", oc_mem_used());
    uint64_t bmax = o->batch > o->eval_batch ? o->batch : o->eval_batch;
    if (!(r->heads = oc_alloc((size_t)bmax * 4, "kg batch", err)) ||
        !(r->rels = oc_alloc((size_t)bmax * 4, "kg batch", err)) ||
        !(r->qptr = oc_alloc((size_t)(bmax + 1) * 8, "kg batch", err)) ||
        !(r->ans_row = oc_alloc((size_t)bmax * 8, "kg batch", err)))
        return err->status;
    return OC_OK;
}

/* Extracts and runs the model on n queries of graph g; *scores per node of the last layer. */
static int batch_forward(struct kg_run *r, enum oc_kg_graph g, uint32_t n,
                         const struct oc_nn_step *step, const float **scores, struct oc_err *err)
{
    uint32_t L = r->o->n_layers;
    double t0 = oc_now_s();
    OC_KG_TRY(oc_kg_extract(r->g[g].x, r->heads, n, r->layers, err));
    if (step->training)
        r->t_extract += oc_now_s() - t0;
    for (uint32_t l = 0; l < L; l++) {
        const struct oc_kg_layer *k = &r->layers[l];
        r->blocks[l] = (struct oc_nn_rel_block){
            k->n_prev, k->n_nodes, k->n_edges, oc_kg_n_rel_aug(r->m), n, k->indptr,
            k->src,    k->rel,     k->query};
        r->p2n[l] = k->prev_to_node;
    }
    struct oc_nn_redgnn_batch b = {n, r->rels, r->blocks, r->p2n};
    OC_KG_TRY(oc_nn_redgnn_forward(r->model, &b, step, scores, err));
    /* rows of each query in the last layer (contiguous: nodes sorted by query) */
    const struct oc_kg_layer *top = &r->layers[L - 1];
    memset(r->qptr, 0, (size_t)(n + 1) * 8);
    for (uint64_t i = 0; i < top->n_nodes; i++)
        r->qptr[top->node_query[i] + 1]++;
    for (uint32_t q = 0; q < n; q++)
        r->qptr[q + 1] += r->qptr[q];
    return OC_OK;
}

/* Row of entity e among query q's rows of the last layer, or -1. */
static int64_t find_row(const struct kg_run *r, uint32_t q, uint32_t e)
{
    const uint32_t *ent = r->layers[r->o->n_layers - 1].node_entity;
    uint64_t lo = r->qptr[q], hi = r->qptr[q + 1];
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (ent[mid] < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->qptr[q + 1] && ent[lo] == e ? (int64_t)lo : -1;
}

/* Superbatch heads: the (at most S) batches from batch bi on, into heads/off; their count. */
static uint32_t superbatch_heads(const struct kg_run *r, uint64_t bi, uint32_t *heads,
                                 uint64_t *off)
{
    const struct oc_kg_train_opts *o = r->o;
    uint64_t nb = (r->n_train + o->batch - 1) / o->batch;
    uint32_t S = (uint32_t)(bi >= nb ? 0 : nb - bi < o->superbatch ? nb - bi : o->superbatch);
    off[0] = 0;
    for (uint32_t i = 0; i < S; i++) {
        uint64_t b0 = (bi + i) * o->batch;
        uint64_t n = r->n_train - b0 < o->batch ? r->n_train - b0 : o->batch;
        for (uint64_t q = 0; q < n; q++)
            heads[off[i] + q] = r->train_q[3 * (b0 + q)];
        off[i + 1] = off[i] + n;
    }
    return S;
}

/*
 * TIGER's super-batch loop: the S batches from batch bi on start (sliced and
 * planned), and the S after them (within the epoch) are handed to the
 * planner to slice and plan while these train.
 */
static int superbatch_begin(struct kg_run *r, uint64_t bi, uint32_t *n_sb, struct oc_err *err)
{
    uint64_t S = r->o->superbatch;
    uint32_t *h_next = r->sb_heads + S * r->o->batch;
    uint64_t *o_next = r->sb_off + S + 1;
    uint32_t n = superbatch_heads(r, bi, r->sb_heads, r->sb_off);
    uint32_t n_next = superbatch_heads(r, bi + n, h_next, o_next);
    *n_sb = n;
    return kg_tiger_superbatch(r->tiger, r->sb_heads, r->sb_off, n, h_next, o_next, n_next, err);
}

static int train_epoch(struct kg_run *r, uint32_t epoch, struct oc_kg_epoch_stats *st,
                       struct oc_err *err)
{
    const struct oc_kg_train_opts *o = r->o;
    float lr = (float)(o->lr * pow(o->decay, (double)epoch));
    uint64_t e0 = oc_kg_extractor_n_edges(r->g[OC_KG_TRAIN].x);
    st->loss = 0.0;
    r->t_extract = 0.0;
    double t_model = 0.0;
    uint32_t sb_i = 0, sb_n = 0;
    for (uint64_t b0 = 0, bi = 0; b0 < r->n_train; b0 += o->batch, bi++) {
        uint32_t n = (uint32_t)(r->n_train - b0 < o->batch ? r->n_train - b0 : o->batch);
        for (uint32_t q = 0; q < n; q++) {
            r->heads[q] = r->train_q[3 * (b0 + q)];
            r->rels[q] = r->train_q[3 * (b0 + q) + 1];
        }
        if (r->tiger) {
            if (sb_i == sb_n) {
                OC_KG_TRY(superbatch_begin(r, bi, &sb_n, err));
                sb_i = 0;
            }
            double t0 = oc_now_s();
            OC_KG_TRY(kg_tiger_batch_load(r->tiger, sb_i, err));
            r->t_extract += oc_now_s() - t0;
        }
        struct oc_nn_step step = {1, epoch, bi};
        const float *scores = NULL;
        double t_b = oc_now_s(), x0 = r->t_extract;
        OC_KG_TRY(batch_forward(r, OC_KG_TRAIN, n, &step, &scores, err));
        if (r->tiger) {
            double t0 = oc_now_s();
            OC_KG_TRY(kg_tiger_batch_done(r->tiger, sb_i++, err));
            r->t_extract += oc_now_s() - t0;
        }
        for (uint32_t q = 0; q < n; q++)
            r->ans_row[q] = find_row(r, q, r->train_q[3 * (b0 + q) + 2]);
        double loss = 0.0;
        OC_KG_TRY(oc_nn_redgnn_loss(r->model, r->qptr, r->ans_row, r->g[OC_KG_TRAIN].n_entities,
                                    &loss, err));
        if (!isfinite(loss))
            return OC_ERR(err, OC_ERR_NUMERIC, "epoch %u batch %" PRIu64 ": loss is %g", epoch, bi,
                          loss);
        st->loss += loss;
        OC_KG_TRY(oc_nn_redgnn_backward(r->model, err));
        /*
         * The reference's loss is n times the summed cross-entropy (train_batch adds an (n, 1)
         * max to (n,) terms: the broadcast sums n copies). Adam does not see a gradient's scale
         * (but for eps), so scaling the loss by n is the L2 penalty divided by n.
         */
        double wd = o->weight_decay;
        if (o->loss_scale == OC_KG_LOSS_BATCH)
            wd /= n;
        struct oc_nn_adam opt;
        oc_nn_adam_default(&opt, lr, (float)wd);
        OC_KG_TRY(oc_nn_model_adam_step(oc_nn_redgnn_model(r->model), &opt, err));
        t_model += oc_now_s() - t_b - (r->t_extract - x0);
    }
    if (r->tiger)
        OC_KG_TRY(kg_tiger_epoch_end(r->tiger, err));
    st->n_edges = oc_kg_extractor_n_edges(r->g[OC_KG_TRAIN].x) - e0;
    st->extract_s = r->t_extract;
    st->model_s = t_model;
    return OC_OK;
}

/* Per-epoch figures of where the training subgraphs came from (differences of counters). */
struct extract_mark {
    struct oc_kg_facts_stats io;
    uint64_t from_batch, from_cache, from_graph;
    struct kg_tiger_stats t;
};

static void extract_mark(const struct kg_run *r, struct extract_mark *m)
{
    memset(m, 0, sizeof(*m));
    oc_kg_facts_stats(r->g[OC_KG_TRAIN].facts, &m->io);
    kg_facts_atom_counts(r->g[OC_KG_TRAIN].facts, &m->from_batch, &m->from_cache, &m->from_graph);
    if (r->tiger)
        kg_tiger_stats(r->tiger, &m->t);
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
}

static int extract_report(struct kg_run *r, const struct extract_mark *a,
                          struct oc_kg_epoch_stats *st, struct oc_err *err)
{
    struct extract_mark b;
    extract_mark(r, &b);
    st->extract = r->o->extract;
    st->bytes_read = b.io.bytes_read - a->io.bytes_read + b.t.bytes_read - a->t.bytes_read;
    st->atoms_cached = b.from_cache - a->from_cache;
    st->atoms_disk = r->o->extract == OC_KG_EXTRACT_BASIC ? 0 : b.from_graph - a->from_graph;
    st->atom_cache_bytes = kg_atom_cache_bytes(&r->atom_cache);
    kg_atom_cache_note(&r->atom_cache);
    st->peak_rss_bytes = peak_rss_bytes();
    if (!r->tiger)
        return OC_OK;
    st->slicing_s = b.t.slicing_s - a->t.slicing_s;
    st->plan_s = b.t.plan_s - a->t.plan_s;
    st->plan_wait_s = b.t.wait_s - a->t.wait_s;
    st->superbatches = b.t.superbatches - a->t.superbatches;
    st->superbatches_ahead = b.t.superbatches_ahead - a->t.superbatches_ahead;
    st->first_batches_ahead = b.t.first_batches_ahead - a->t.first_batches_ahead;
    st->slices_read = b.t.slices_read - a->t.slices_read + b.t.warm_reads - a->t.warm_reads;
    st->slices_accessed = b.t.slices_accessed - a->t.slices_accessed;
    st->slices_hit = b.t.slices_hit - a->t.slices_hit;
    st->slice_cache_bytes = b.t.cache_bytes;
    kg_tiger_note(r->tiger);
    struct kg_slice_metrics m;
    OC_KG_TRY(kg_tiger_metrics(r->tiger, &m, err));
    st->delta_r = m.delta_r;
    st->delta_u = m.delta_u;
    st->n_slices = m.n_slices;
    return OC_OK;
}

/* Filtered ranking of every answer of the query sets over graph g. */
static int evaluate(struct kg_run *r, enum oc_kg_graph g, const struct oc_kg_qset *sets,
                    unsigned n_sets, struct oc_kg_eval *out, struct oc_err *err)
{
    struct oc_kg_metrics m = {0, 0, 0, 0};
    uint64_t n_ent = r->g[g].n_entities;
    for (unsigned s = 0; s < n_sets; s++) {
        const struct oc_kg_qset *qs = &sets[s];
        for (uint64_t b0 = 0; b0 < qs->n; b0 += r->o->eval_batch) {
            uint32_t n = (uint32_t)(qs->n - b0 < r->o->eval_batch ? qs->n - b0 : r->o->eval_batch);
            memcpy(r->heads, qs->head + b0, (size_t)n * 4);
            memcpy(r->rels, qs->rel + b0, (size_t)n * 4);
            struct oc_nn_step step = {0, 0, 0};
            const float *scores = NULL;
            OC_KG_TRY(batch_forward(r, g, n, &step, &scores, err));
            const uint32_t *ent = r->layers[r->o->n_layers - 1].node_entity;
            for (uint32_t q = 0; q < n; q++) { /* a query's entities: distinct, ascending */
                uint64_t i0 = r->qptr[q], a0 = qs->ans_ptr[b0 + q], a1 = qs->ans_ptr[b0 + q + 1];
                OC_KG_TRY(oc_kg_rank_reached(ent + i0, scores + i0, r->qptr[q + 1] - i0, n_ent,
                                             qs->head[b0 + q], qs->rel[b0 + q], qs->ans + a0,
                                             a1 - a0, &r->g[g].filter, &m, err));
            }
        }
    }
    double n = m.n_ranked ? (double)m.n_ranked : 1.0;
    *out = (struct oc_kg_eval){m.sum_rr / n, (double)m.n_hits1 / n, (double)m.n_hits10 / n,
                               m.n_ranked};
    return OC_OK;
}

/* Everything that changes training, for the checkpoint. */
static void fingerprint(const struct kg_run *r, char *buf, size_t n)
{
    const struct oc_kg_train_opts *o = r->o;
    /* every array: the facts and training queries train, the others pick the best epoch */
    char crc[OC_KG_GRAPH_COUNT * OC_KG_ARRAY_COUNT * 9 + 1];
    size_t at = 0;
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++)
        for (int a = 0; a < OC_KG_ARRAY_COUNT; a++)
            at += (size_t)snprintf(crc + at, sizeof(crc) - at, "%s%08x", at ? "," : "",
                                   r->m->files[g][a].crc32);
    snprintf(buf, n,
             "kg-train v3 data=%s rel=%u crc=%s layers=%u hidden=%" PRIu64 " attn=%" PRIu64
             " act=%s dropout=%.9g lr=%.17g wd=%.17g decay=%.17g batch=%u loss=%s seed=%" PRIu64,
             r->m->name, r->m->n_relations, crc, o->n_layers, o->hidden, o->attn_dim,
             oc_nn_redgnn_act_name(o->act), (double)o->dropout, o->lr, o->weight_decay, o->decay,
             o->batch, oc_kg_loss_scale_name(o->loss_scale), o->seed);
}

/* The test figures at the best epoch beside the checkpoint (its position keeps the MRR only). */
static int best_save(const char *dir, const struct oc_kg_train_result *res, struct oc_err *err)
{
    char path[4200], text[256];
    snprintf(path, sizeof(path), "%s/kg-best.txt", dir);
    int n = snprintf(text, sizeof(text), "%u %.17g %.17g %.17g %.17g %" PRIu64 "\n",
                     res->best_epoch, res->best_valid_mrr, res->test_at_best.mrr,
                     res->test_at_best.hits1, res->test_at_best.hits10, res->test_at_best.n_ranked);
    OC_KG_TRY(oc_mkdir_p(dir, err));
    return oc_write_file_atomic(path, text, (size_t)n, err);
}

static int best_load(const char *dir, struct oc_kg_train_result *res, struct oc_err *err)
{
    char path[4200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/kg-best.txt", dir);
    OC_KG_TRY(oc_read_file(path, 4096, &text, &len, err));
    int k = sscanf(text, "%u %lg %lg %lg %lg %" SCNu64, &res->best_epoch, &res->best_valid_mrr,
                   &res->test_at_best.mrr, &res->test_at_best.hits1, &res->test_at_best.hits10,
                   &res->test_at_best.n_ranked);
    oc_free(text);
    return k == 6 ? OC_OK : OC_ERR(err, OC_ERR_FORMAT, "%s: malformed", path);
}

static int epoch_json(const struct oc_kg_epoch_stats *st, char *buf, size_t n)
{
    uint64_t acc = st->slices_accessed ? st->slices_accessed : 1;
    return snprintf(
        buf, n,
        "{\"epoch\":%u,\"loss\":%.9g,\"valid_mrr\":%.6f,\"valid_hits1\":%.6f,"
        "\"valid_hits10\":%.6f,\"test_mrr\":%.6f,\"test_hits1\":%.6f,"
        "\"test_hits10\":%.6f,\"time_s\":%.3f,\"eval_s\":%.3f,\"n_edges\":%" PRIu64
        ",\"extract\":\"%s\",\"slicing_s\":%.3f,\"plan_s\":%.3f,\"plan_wait_s\":%.3f,"
        "\"superbatches\":%" PRIu64 ",\"superbatches_ahead\":%" PRIu64
        ",\"first_batches_ahead\":%" PRIu64 ",\"extract_s\":%.3f,"
        "\"model_s\":%.3f,\"slices_read\":%" PRIu64 ",\"slices_accessed\":%" PRIu64
        ",\"slice_hit_ratio\":%.4f,\"delta_r\":%.4f,\"delta_u\":%.4f,\"slicing_score\":%.4f,"
        "\"n_slices\":%" PRIu64 ",\"atoms_cached\":%" PRIu64 ",\"atoms_disk\":%" PRIu64
        ",\"bytes_read\":%" PRIu64 ",\"atom_cache_bytes\":%" PRIu64
        ",\"slice_cache_bytes\":%" PRIu64 ",\"peak_rss_bytes\":%" PRIu64
        ",\"mem_peak_bytes\":%" PRIu64 "}",
        st->epoch, st->loss, st->valid.mrr, st->valid.hits1, st->valid.hits10, st->test.mrr,
        st->test.hits1, st->test.hits10, st->time_s, st->eval_s, st->n_edges,
        oc_kg_extract_name(st->extract), st->slicing_s, st->plan_s, st->plan_wait_s,
        st->superbatches, st->superbatches_ahead, st->first_batches_ahead, st->extract_s,
        st->model_s, st->slices_read, st->slices_accessed, (double)st->slices_hit / (double)acc,
        st->delta_r, st->delta_u, st->delta_r * st->delta_u, st->n_slices, st->atoms_cached,
        st->atoms_disk, st->bytes_read, st->atom_cache_bytes, st->slice_cache_bytes,
        st->peak_rss_bytes, st->mem_peak_bytes);
}

static int run_epochs(struct kg_run *r, oc_kg_epoch_fn on_epoch, void *ctx,
                      struct oc_kg_train_result *res, struct oc_err *err)
{
    const struct oc_kg_train_opts *o = r->o;
    char fp[1024];
    fingerprint(r, fp, sizeof(fp));
    struct oc_train_position pos = {0, 0, -1.0, 0.0, 0};
    struct oc_nn_model *base = oc_nn_redgnn_model(r->model);
    if (o->resume) {
        OC_KG_TRY(oc_train_checkpoint_load(o->checkpoint_dir, fp, base, &pos, err));
        if (pos.next_epoch > 0)
            OC_KG_TRY(best_load(o->checkpoint_dir, res, err));
    }
    struct oc_train_log *log = NULL;
    if (o->log_path)
        OC_KG_TRY(oc_train_log_open(o->log_path, pos.log_bytes, 0, &log, err));
    int rc = OC_OK;
    double t_run = oc_now_s();
    for (uint32_t e = pos.next_epoch; e < o->epochs && !rc; e++) {
        struct oc_kg_epoch_stats st = {.epoch = e};
        struct extract_mark mark;
        extract_mark(r, &mark);
        double t0 = oc_now_s();
        if ((rc = train_epoch(r, e, &st, err)) || (rc = extract_report(r, &mark, &st, err)))
            break;
        double t1 = oc_now_s();
        /* each graph's extraction buffers, grown to its largest batch, are let go while the
           other graph extracts: the test side's peak is not added to the training side's */
        if ((rc = evaluate(r, OC_KG_TRAIN, &r->valid, 1, &st.valid, err)))
            break;
        oc_kg_extractor_trim(r->g[OC_KG_TRAIN].x);
        if ((rc = evaluate(r, OC_KG_IND, r->test, 2, &st.test, err)))
            break;
        oc_kg_extractor_trim(r->g[OC_KG_IND].x);
        st.time_s = t1 - t0;
        st.eval_s = oc_now_s() - t1;
        st.peak_rss_bytes = peak_rss_bytes(); /* after evaluation too */
        st.mem_peak_bytes = oc_mem_peak();
        if (st.valid.mrr > res->best_valid_mrr || e == 0) {
            res->best_epoch = e;
            res->best_valid_mrr = st.valid.mrr;
            res->test_at_best = st.test;
        }
        res->epochs_run = e + 1;
        if (log) {
            char line[1536];
            epoch_json(&st, line, sizeof(line));
            if ((rc = oc_train_log_line(log, line, &pos.log_bytes, err)))
                break;
        }
        if (o->checkpoint_dir) {
            pos = (struct oc_train_position){e + 1, res->best_epoch, res->best_valid_mrr,
                                             res->test_at_best.mrr, pos.log_bytes};
            if ((rc = best_save(o->checkpoint_dir, res, err)) ||
                (rc = oc_train_checkpoint_save(o->checkpoint_dir, fp, base, &pos, err)))
                break;
        }
        if (on_epoch)
            on_epoch(ctx, &st);
    }
    res->time_s = oc_now_s() - t_run;
    uint8_t digest[32];
    if (!rc && (rc = oc_nn_model_params_sha256(base, digest, err)) == OC_OK)
        oc_nn_sha256_hex(digest, res->weights_sha256);
    if (!rc && log) {
        char line[768];
        snprintf(line, sizeof(line),
                 "{\"final\":true,\"best_epoch\":%u,\"valid_mrr\":%.6f,\"test_mrr\":%.6f,"
                 "\"test_hits1\":%.6f,\"test_hits10\":%.6f,\"n_ranked\":%" PRIu64
                 ",\"weights_sha256\":\"%s\"}",
                 res->best_epoch, res->best_valid_mrr, res->test_at_best.mrr,
                 res->test_at_best.hits1, res->test_at_best.hits10, res->test_at_best.n_ranked,
                 res->weights_sha256);
        rc = oc_train_log_line(log, line, NULL, err);
    }
    oc_train_log_close(log);
    return rc;
}

/*
 * Opens the run; under a budget or with --dry-run, measures what it needs
 * (kg_budget.c) with the accountant's limit lifted, so that a budget too
 * small is refused naming the smallest that fits (what is held then never
 * passes that smallest budget), and restores the limit.
 */
static int run_measured(struct kg_run *r, const char *dir, struct oc_kg_train_result *res,
                        struct oc_err *err)
{
    uint64_t budget = oc_mem_budget();
    if (!budget && !r->o->dry_run)
        return run_open(r, dir, err);
    oc_mem_set_budget(0);
    oc_mem_reset_peak();
    int rc = run_open(r, dir, err);
    if (!rc)
        rc = kg_budget_measure(r, oc_mem_peak(), err);
    oc_mem_set_budget(budget);
    if (!rc)
        rc = kg_budget_check(r, budget, err);
    const struct kg_budget *b = &r->budget;
    res->held_bytes = b->held_bytes;
    res->workspace_bytes = b->workspace_bytes;
    res->extract_bytes = b->reserve_bytes;
    res->fixed_bytes = b->fixed_bytes;
    res->need_bytes = b->need_bytes;
    res->measure_s = b->seconds;
    return rc;
}

int oc_kg_train_run(const char *dir, const struct oc_kg_train_opts *o, oc_kg_epoch_fn on_epoch,
                    void *ctx, struct oc_kg_train_result *res, struct oc_err *err)
{
    memset(res, 0, sizeof(*res));
    res->best_valid_mrr = -1.0;
    OC_KG_TRY(opts_check(o, err));
    struct kg_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    int rc = run_measured(&r, dir, res, err);
    if (!rc && !o->dry_run)
        rc = extract_open(&r, dir, err);
    if (!rc && !o->dry_run)
        rc = run_epochs(&r, on_epoch, ctx, res, err);
    if (rc == OC_ERR_BUDGET && (r.atom_cache.built_bytes || r.tiger)) {
        /* the caches were sized before the largest queries' working memory was known */
        struct kg_tiger_stats st = {0};
        if (r.tiger)
            kg_tiger_stats(r.tiger, &st);
        char a[32], b[32];
        uint64_t atoms = kg_atom_cache_bytes(&r.atom_cache);
        if (atoms + st.cache_bytes == 0)
            oc_err_prefix(err,
                          "kg-train --extract %s (its Atom Cache and Slice Cache gave back all "
                          "they held: --mem-budget is too small for extraction and the model)",
                          oc_kg_extract_name(o->extract));
        else
            oc_err_prefix(err,
                          "kg-train --extract %s (its Atom Cache still holds %s and its Slice "
                          "Cache %s of --mem-budget after giving back what they could; "
                          "--atom-cache and --slice-cache set them smaller)",
                          oc_kg_extract_name(o->extract), oc_format_size(atoms, a, sizeof(a)),
                          oc_format_size(st.cache_bytes, b, sizeof(b)));
    }
    run_close(&r);
    return rc;
}
