/*
 * kg_extract.c — query-dependent subgraphs as RED-GNN's progressive
 * propagation grows them (load_data.get_neighbors), complete, no sampling:
 *
 *   layer 0 nodes: {(q, h_q)}
 *   layer l:  every fact (e_s, rel, e_o) with (q, e_s) a node of layer l-1
 *             ──► nodes of layer l = {(q, e_o)}, sorted by (q, entity)
 *             ──► edges sorted by target node (stable: by source, then fact)
 *
 * Each query is extracted on its own (a pool task; task t runs on worker
 * t mod threads, with that worker's scratch: an id map from the layer's
 * entities to their first-seen index, sized to the layer, not to the entity
 * count, and the fetched facts), then the queries' layers are concatenated
 * in query order, so the result does not depend on the thread count.
 *
 * Place in the data flow: kg (kg_facts.c ──► here ──► nn RED-GNN).
 * Thread-safety: one extraction at a time per extractor; it fans out over
 * the pool given at creation.
 * Ownership: the extractor owns every output array (valid until its next
 * call or oc_kg_extractor_trim) and its scratch; it borrows the fact graph
 * and the pool.
 */
#include <stdlib.h>
#include <string.h>

#include "kg/kg_int.h"
#include "offcore/id_map.h"

struct u32vec {
    uint32_t *v;
    uint64_t n, cap;
};

static int vec_reserve(struct u32vec *a, uint64_t n, struct oc_err *err)
{
    return oc_grow(&a->v, &a->cap, n, 4, 64, "kg extraction", err);
}

/* One query's layers (kept between calls, reused). */
struct qlayers {
    struct u32vec ent[OC_KG_MAX_LAYERS]; /* nodes: entities, ascending */
    struct u32vec src[OC_KG_MAX_LAYERS]; /* edges by target: source (local, layer l-1) */
    struct u32vec rel[OC_KG_MAX_LAYERS];
    struct u32vec deg[OC_KG_MAX_LAYERS]; /* in-degree of each node */
    struct u32vec p2n[OC_KG_MAX_LAYERS]; /* local prev node -> local node */
};

struct worker {
    struct oc_kg_facts_reader *reader;
    struct oc_id_map seen; /* the layer's entities ─► their first-seen index */
    struct u32vec f_rel, f_tail, f_src, f_seen, rank, place, sort_tmp;
    struct oc_err err; /* this worker's failure in the call in progress */
};

/* The batch output of one layer. */
struct out_layer {
    struct u32vec src, rel, query, p2n, node_query, node_entity;
    uint64_t *indptr;
    uint64_t indptr_cap;
};

struct oc_kg_extractor {
    struct oc_kg_facts *facts;
    struct oc_pool *pool;
    uint32_t n_layers;
    uint64_t n_entities;
    struct worker *workers;
    unsigned n_workers;
    struct qlayers *q;
    uint32_t q_cap;
    struct out_layer out[OC_KG_MAX_LAYERS];
    uint64_t n_edges_total;
    /* the call in progress */
    const uint32_t *heads;
};

static void vec_free(struct u32vec *a)
{
    oc_free(a->v);
    memset(a, 0, sizeof(*a));
}

/* A worker's arrays that grow with the largest query it fetched. */
static void worker_trim(struct worker *w)
{
    struct u32vec *vs[] = {&w->f_rel, &w->f_tail, &w->f_src,   &w->f_seen,
                           &w->rank,  &w->place,  &w->sort_tmp};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
        vec_free(vs[i]);
    oc_id_map_deinit(&w->seen);
}

static void worker_deinit(struct worker *w)
{
    oc_kg_facts_reader_free(w->reader);
    worker_trim(w);
}

static void qlayers_deinit(struct qlayers *q)
{
    for (int l = 0; l < OC_KG_MAX_LAYERS; l++) {
        struct u32vec *vs[] = {&q->ent[l], &q->src[l], &q->rel[l], &q->deg[l], &q->p2n[l]};
        for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
            vec_free(vs[i]);
    }
}

void oc_kg_extractor_trim(struct oc_kg_extractor *x)
{
    if (!x)
        return;
    for (unsigned i = 0; x->workers && i < x->n_workers; i++)
        worker_trim(&x->workers[i]);
    for (uint32_t i = 0; i < x->q_cap; i++)
        qlayers_deinit(&x->q[i]);
    oc_free(x->q);
    x->q = NULL;
    x->q_cap = 0;
    for (int l = 0; l < OC_KG_MAX_LAYERS; l++) {
        struct out_layer *o = &x->out[l];
        struct u32vec *vs[] = {&o->src, &o->rel,        &o->query,
                               &o->p2n, &o->node_query, &o->node_entity};
        for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
            vec_free(vs[i]);
        oc_free(o->indptr);
        o->indptr = NULL;
        o->indptr_cap = 0;
    }
}

void oc_kg_extractor_free(struct oc_kg_extractor *x)
{
    if (!x)
        return;
    oc_kg_extractor_trim(x);
    for (unsigned i = 0; x->workers && i < x->n_workers; i++)
        worker_deinit(&x->workers[i]);
    oc_free(x->workers);
    oc_free(x);
}

int oc_kg_extractor_new(struct oc_kg_facts *facts, uint32_t n_layers, struct oc_pool *pool,
                        struct oc_kg_extractor **out, struct oc_err *err)
{
    *out = NULL;
    if (n_layers < 1 || n_layers > OC_KG_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "kg extractor: %u layers outside [1, %d]", n_layers,
                      OC_KG_MAX_LAYERS);
    struct oc_kg_extractor *x = oc_calloc(1, sizeof(*x), "kg extractor", err);
    if (!x)
        return err->status;
    x->facts = facts;
    x->pool = pool;
    x->n_layers = n_layers;
    x->n_entities = oc_kg_facts_n_entities(facts);
    x->n_workers = pool ? oc_pool_n_threads(pool) : 1;
    int rc = OC_OK;
    if (!(x->workers = oc_calloc(x->n_workers, sizeof(*x->workers), "kg extractor", err)))
        rc = err->status;
    for (unsigned i = 0; !rc && i < x->n_workers; i++) {
        struct worker *w = &x->workers[i];
        oc_id_map_init(&w->seen);
        rc = oc_kg_facts_reader_new(facts, &w->reader, err);
    }
    if (rc) {
        oc_kg_extractor_free(x);
        return rc;
    }
    *out = x;
    return OC_OK;
}

uint64_t oc_kg_extractor_n_edges(const struct oc_kg_extractor *x)
{
    return x->n_edges_total;
}

/* Layer l of one query from its layer l-1 nodes (prev). */
static int extract_layer(struct oc_kg_extractor *x, struct worker *w, struct qlayers *q, uint32_t l,
                         const uint32_t *prev, uint64_t n_prev, struct oc_err *err)
{
    uint64_t n_f = 0;
    for (uint64_t i = 0; i < n_prev; i++)
        n_f += oc_kg_facts_begin(x->facts, prev[i] + 1) - oc_kg_facts_begin(x->facts, prev[i]);
    OC_KG_TRY(vec_reserve(&w->f_rel, n_f, err));
    OC_KG_TRY(vec_reserve(&w->f_tail, n_f, err));
    OC_KG_TRY(vec_reserve(&w->f_src, n_f, err));
    OC_KG_TRY(oc_kg_facts_fetch(w->reader, prev, n_prev, w->f_rel.v, w->f_tail.v, err));
    for (uint64_t i = 0, at = 0; i < n_prev; i++) {
        uint64_t k =
            oc_kg_facts_begin(x->facts, prev[i] + 1) - oc_kg_facts_begin(x->facts, prev[i]);
        for (uint64_t j = 0; j < k; j++)
            w->f_src.v[at++] = (uint32_t)i;
    }
    /* targets, deduplicated in first-seen order (f_seen: each fact's), then sorted
       (rank: a first-seen index's place in the sorted layer) */
    struct u32vec *ent = &q->ent[l];
    OC_KG_TRY(vec_reserve(ent, n_f, err));
    OC_KG_TRY(vec_reserve(&w->f_seen, n_f, err));
    oc_id_map_clear(&w->seen);
    OC_KG_TRY(oc_id_map_reserve(&w->seen, n_f < x->n_entities ? n_f : x->n_entities,
                                "kg extraction", err));
    ent->n = 0;
    for (uint64_t e = 0; e < n_f; e++) {
        int fresh;
        uint32_t t = w->f_tail.v[e];
        w->f_seen.v[e] = oc_id_map_get_or_put(&w->seen, t, (uint32_t)ent->n, &fresh);
        if (fresh)
            ent->v[ent->n++] = t;
    }
    OC_KG_TRY(vec_reserve(&w->sort_tmp, ent->n, err));
    OC_KG_TRY(vec_reserve(&w->rank, ent->n, err));
    oc_sort_u32(ent->v, w->sort_tmp.v, ent->n);
    for (uint64_t i = 0; i < ent->n; i++) {
        uint32_t u = 0;
        oc_id_map_get(&w->seen, ent->v[i], &u);
        w->rank.v[u] = (uint32_t)i;
    }
    /* edges by target: counting sort, stable */
    struct u32vec *deg = &q->deg[l], *src = &q->src[l], *rel = &q->rel[l], *p2n = &q->p2n[l];
    OC_KG_TRY(vec_reserve(deg, ent->n + 1, err));
    OC_KG_TRY(vec_reserve(&w->place, ent->n + 1, err));
    OC_KG_TRY(vec_reserve(src, n_f, err));
    OC_KG_TRY(vec_reserve(rel, n_f, err));
    OC_KG_TRY(vec_reserve(p2n, n_prev, err));
    memset(deg->v, 0, (size_t)ent->n * 4);
    for (uint64_t e = 0; e < n_f; e++)
        deg->v[w->rank.v[w->f_seen.v[e]]]++;
    deg->n = ent->n;
    uint32_t run = 0;
    for (uint64_t i = 0; i < ent->n; i++) {
        w->place.v[i] = run;
        run += deg->v[i];
    }
    for (uint64_t e = 0; e < n_f; e++) {
        uint32_t p = w->place.v[w->rank.v[w->f_seen.v[e]]]++;
        src->v[p] = w->f_src.v[e];
        rel->v[p] = w->f_rel.v[e];
    }
    src->n = rel->n = n_f;
    /* each node of layer l-1 is one of layer l through its identity fact */
    for (uint64_t i = 0; i < n_prev; i++) {
        uint32_t u;
        if (!oc_id_map_get(&w->seen, prev[i], &u))
            return OC_ERR(err, OC_ERR_FORMAT,
                          "kg extract: entity %u has no identity fact (layer %u lost it)", prev[i],
                          l + 1);
        p2n->v[i] = w->rank.v[u];
    }
    p2n->n = n_prev;
    return OC_OK;
}

static int extract_query(void *ctx, uint64_t task, unsigned worker)
{
    struct oc_kg_extractor *x = ctx;
    struct worker *w = &x->workers[worker];
    struct qlayers *q = &x->q[task];
    struct oc_err *err = &w->err;
    const uint32_t *prev = &x->heads[task];
    uint64_t n_prev = 1;
    if (x->heads[task] >= x->n_entities)
        return OC_ERR(err, OC_ERR_ARG, "kg extract: head %u out of range (%llu entities)",
                      x->heads[task], (unsigned long long)x->n_entities);
    for (uint32_t l = 0; l < x->n_layers; l++) {
        int rc = extract_layer(x, w, q, l, prev, n_prev, err);
        if (rc)
            return rc;
        prev = q->ent[l].v;
        n_prev = q->ent[l].n;
    }
    return OC_OK;
}

/* Concatenates the queries' layer l in query order. */
static int merge_layer(struct oc_kg_extractor *x, uint32_t n, uint32_t l, struct oc_kg_layer *out,
                       struct oc_err *err)
{
    struct out_layer *o = &x->out[l];
    uint64_t nn = 0, ne = 0, np = 0;
    for (uint32_t i = 0; i < n; i++) {
        nn += x->q[i].ent[l].n;
        ne += x->q[i].src[l].n;
        np += x->q[i].p2n[l].n;
    }
    OC_KG_TRY(
        oc_grow_by(&o->indptr, &o->indptr_cap, nn + 1, 8, OC_GROW_EXACT, "kg extraction", err));
    OC_KG_TRY(vec_reserve(&o->src, ne, err));
    OC_KG_TRY(vec_reserve(&o->rel, ne, err));
    OC_KG_TRY(vec_reserve(&o->query, ne, err));
    OC_KG_TRY(vec_reserve(&o->p2n, np, err));
    OC_KG_TRY(vec_reserve(&o->node_query, nn, err));
    OC_KG_TRY(vec_reserve(&o->node_entity, nn, err));
    uint64_t node0 = 0, prev0 = 0, e0 = 0, p0 = 0;
    o->indptr[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct qlayers *q = &x->q[i];
        uint64_t k = q->ent[l].n, m = q->src[l].n, kp = q->p2n[l].n;
        for (uint64_t j = 0; j < k; j++) {
            o->node_query.v[node0 + j] = i;
            o->node_entity.v[node0 + j] = q->ent[l].v[j];
            o->indptr[node0 + j + 1] = o->indptr[node0 + j] + q->deg[l].v[j];
        }
        for (uint64_t j = 0; j < m; j++) {
            o->src.v[e0 + j] = (uint32_t)(prev0 + q->src[l].v[j]);
            o->rel.v[e0 + j] = q->rel[l].v[j];
            o->query.v[e0 + j] = i;
        }
        for (uint64_t j = 0; j < kp; j++)
            o->p2n.v[p0 + j] = (uint32_t)(node0 + q->p2n[l].v[j]);
        node0 += k;
        prev0 += kp;
        e0 += m;
        p0 += kp;
    }
    *out = (struct oc_kg_layer){np,       nn,         ne,       o->indptr,       o->src.v,
                                o->rel.v, o->query.v, o->p2n.v, o->node_query.v, o->node_entity.v};
    x->n_edges_total += ne;
    return OC_OK;
}

int oc_kg_extract(struct oc_kg_extractor *x, const uint32_t *heads, uint32_t n,
                  struct oc_kg_layer *layers, struct oc_err *err)
{
    if (n > x->q_cap) {
        struct qlayers *q = oc_realloc(x->q, (size_t)n * sizeof(*q), "kg extraction", err);
        if (!q)
            return err->status;
        memset(q + x->q_cap, 0, (size_t)(n - x->q_cap) * sizeof(*q));
        x->q = q;
        x->q_cap = n;
    }
    x->heads = heads;
    for (unsigned i = 0; i < x->n_workers; i++)
        oc_err_clear(&x->workers[i].err);
    int rc = oc_pool_run(x->pool, n, extract_query, x);
    if (rc) {
        for (unsigned i = 0; i < x->n_workers; i++)
            if (x->workers[i].err.status) {
                *err = x->workers[i].err;
                return rc;
            }
        return OC_ERR(err, rc, "kg extraction failed (%s)", oc_status_str(rc));
    }
    for (uint32_t l = 0; l < x->n_layers; l++)
        OC_KG_TRY(merge_layer(x, n, l, &layers[l], err));
    return OC_OK;
}
