/*
 * kg_generate.c — `offcore generate-kg`: a synthetic inductive KG at any
 * scale in bounded memory. Triple i of a graph is a pure function of (seed,
 * graph, i) (Philox), so the triples are drawn again on every pass instead of
 * being held:
 *
 *   entities have a class e mod K (K = 16); relation r sends class c to class
 *   (c (r + 1) + r) mod K (a rule: r1 then r2 determines the class reached),
 *   90% of tails follow it; heads, and tails within a class, are drawn with
 *   Chung-Lu weights (i + 1)^(-1/(gamma-1)), so degrees follow a power law.
 *
 *   pass 0: every head's fact count (forward + inverse + identity), 4 bytes an entity
 *   pass k: the triples touching heads [a_k, b_k), chosen so their facts fit
 *           mem_bytes, sorted by (head, relation, tail) and appended to
 *           <graph>_rel.npy and <graph>_tail.npy; indptr from the counts
 *
 * Place in the data flow: kg (cli generate-kg ──► here ──► kg_write.c).
 * Thread-safety: one call per thread.
 * Ownership: everything allocated is released before returning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kg/kg_int.h"
#include "offcore/rng.h"

#define GEN_CLASSES 16u
#define GEN_FOLLOW  0.9 /* share of tails in the rule's class */

void oc_kg_gen_opts_default(struct oc_kg_gen_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->n_entities = 100000;
    o->n_triples = 1000000;
    o->n_relations = 200;
    o->power_law = 2.2;
    o->n_queries = 1000;
    o->mem_bytes = (uint64_t)256 << 20;
}

struct gen {
    const struct oc_kg_gen_opts *o;
    uint64_t key; /* Philox key of the graph */
    uint64_t n_per_class;
};

/*
 * Index in [0, n) with probability proportional to (i + 1)^(-1 / (gamma - 1)),
 * Chung-Lu weights whose expected degrees follow a power law of exponent
 * gamma (inverse of the continuous CDF).
 */
static uint64_t power_index(uint32_t u, double gamma, uint64_t n)
{
    double b = 1.0 - 1.0 / (gamma - 1.0); /* 1 - alpha; alpha < 1 for gamma > 2 */
    double x = ((double)u + 0.5) / 4294967296.0;
    double i;
    if (fabs(b) < 1e-9)
        i = exp(x * log((double)n + 1.0)) - 1.0;
    else
        i = pow(x * (pow((double)n + 1.0, b) - 1.0) + 1.0, 1.0 / b) - 1.0;
    uint64_t k = i > 0 ? (uint64_t)i : 0;
    return k < n ? k : n - 1;
}

/* Triple i of the graph (i >= n_triples: query triples). */
static void triple(const struct gen *g, uint64_t i, uint32_t t[3])
{
    uint32_t u[4];
    oc_rng_block(g->key, i, 0, u);
    uint64_t n = g->o->n_entities;
    uint64_t h = power_index(u[0], g->o->power_law, n);
    uint32_t r = u[1] % g->o->n_relations;
    uint64_t ch = h % GEN_CLASSES;
    uint64_t ct = (ch * (r + 1) + r) % GEN_CLASSES;
    if ((double)u[3] / 4294967296.0 >= GEN_FOLLOW)
        ct = (u[3] >> 8) % GEN_CLASSES;
    uint64_t tail = power_index(u[2], g->o->power_law, g->n_per_class) * GEN_CLASSES + ct;
    if (tail >= n)
        tail = ct < n ? ct : 0;
    t[0] = (uint32_t)h;
    t[1] = r;
    t[2] = (uint32_t)tail;
}

static int fact_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* Streams indptr, rel and tail of one graph. */
static int write_facts(struct oc_kg_writer *w, enum oc_kg_graph gi, const struct gen *g,
                       struct oc_progress *bar, struct oc_err *err)
{
    const struct oc_kg_gen_opts *o = g->o;
    uint64_t n = o->n_entities, n_facts = 2 * o->n_triples + n;
    uint32_t R = o->n_relations;
    uint32_t *deg = oc_calloc(n, 4, "kg generator degrees", err);
    if (!deg)
        return err->status;
    for (uint64_t i = 0; i < o->n_triples; i++) {
        uint32_t t[3];
        triple(g, i, t);
        deg[t[0]]++;
        deg[t[2]]++;
    }
    struct oc_npy_writer *w_ip = NULL, *w_rel = NULL, *w_tail = NULL;
    uint64_t cap = o->mem_bytes / 12 > 1024 ? o->mem_bytes / 12 : 1024;
    uint32_t *buf = NULL, *col = NULL;
    int rc = oc_kg_writer_begin(w, gi, OC_KG_INDPTR, n + 1, &w_ip, err);
    if (!rc)
        rc = oc_kg_writer_begin(w, gi, OC_KG_REL, n_facts, &w_rel, err);
    if (!rc)
        rc = oc_kg_writer_begin(w, gi, OC_KG_TAIL, n_facts, &w_tail, err);
    uint64_t run = 0;
    for (uint64_t h = 0; !rc && h <= n; h++) { /* indptr from the counts (+1 identity) */
        uint64_t v = run;
        rc = oc_npy_writer_append(w_ip, &v, 8, err);
        if (h < n)
            run += (uint64_t)deg[h] + 1;
    }
    if (!rc && (!(buf = oc_alloc((size_t)cap * 12, "kg generator sort buffer", err)) ||
                !(col = oc_alloc((size_t)cap * 4, "kg generator sort buffer", err))))
        rc = err->status;
    for (uint64_t a = 0; !rc && a < n;) {
        uint64_t b = a, in = 0; /* heads [a, b) whose facts fit the buffer (at least one) */
        while (b < n && (b == a || in + deg[b] + 1 <= cap))
            in += (uint64_t)deg[b++] + 1;
        if (in > cap) {
            rc = OC_ERR(err, OC_ERR_BUDGET,
                        "generate-kg: entity %llu has %llu facts, more than --sort-mem holds",
                        (unsigned long long)a, (unsigned long long)in);
            break;
        }
        uint64_t k = 0;
        for (uint64_t i = 0; i < o->n_triples; i++) {
            uint32_t t[3];
            triple(g, i, t);
            if (t[0] >= a && t[0] < b) {
                uint32_t f[3] = {t[0], t[1], t[2]};
                memcpy(buf + 3 * k++, f, 12);
            }
            if (t[2] >= a && t[2] < b) {
                uint32_t f[3] = {t[2], t[1] + R, t[0]};
                memcpy(buf + 3 * k++, f, 12);
            }
        }
        for (uint64_t e = a; e < b; e++) {
            uint32_t f[3] = {(uint32_t)e, 2 * R, (uint32_t)e};
            memcpy(buf + 3 * k++, f, 12);
        }
        qsort(buf, (size_t)k, 12, fact_cmp);
        for (uint64_t j = 0; j < k; j++)
            col[j] = buf[3 * j + 1];
        rc = oc_npy_writer_append(w_rel, col, (size_t)k * 4, err);
        for (uint64_t j = 0; !rc && j < k; j++)
            col[j] = buf[3 * j + 2];
        if (!rc)
            rc = oc_npy_writer_append(w_tail, col, (size_t)k * 4, err);
        oc_progress_add(bar, k);
        a = b;
    }
    struct oc_npy_writer **ws[3] = {&w_ip, &w_rel, &w_tail};
    const enum oc_kg_array as[3] = {OC_KG_INDPTR, OC_KG_REL, OC_KG_TAIL};
    for (int k = 0; k < 3 && !rc; k++) { /* _end frees the writer whatever the result */
        struct oc_npy_writer *nw = *ws[k];
        *ws[k] = NULL;
        rc = oc_kg_writer_end(w, gi, as[k], nw, err);
    }
    oc_npy_writer_abort(w_ip);
    oc_npy_writer_abort(w_rel);
    oc_npy_writer_abort(w_tail);
    oc_free(buf);
    oc_free(col);
    oc_free(deg);
    return rc;
}

static int write_queries(struct oc_kg_writer *w, enum oc_kg_graph gi, const struct gen *g,
                         struct oc_err *err)
{
    uint64_t nq = g->o->n_queries;
    uint32_t *q = oc_alloc((size_t)nq * 12 + 12, "kg generator queries", err);
    if (!q)
        return err->status;
    int rc = OC_OK;
    for (int s = 0; s < OC_KG_SPLIT_COUNT && !rc; s++) {
        for (uint64_t j = 0; j < nq; j++)
            triple(g, g->o->n_triples + (uint64_t)s * nq + j, q + 3 * j);
        rc = oc_kg_writer_array(w, gi, s == OC_KG_VALID ? OC_KG_QVALID : OC_KG_QTEST, nq, q, err);
    }
    oc_free(q);
    return rc;
}

int oc_kg_generate(const char *out, const struct oc_kg_gen_opts *o, struct oc_progress *bar,
                   struct oc_err *err)
{
    if (o->n_entities < GEN_CLASSES || o->n_entities > UINT32_MAX)
        return OC_ERR(err, OC_ERR_ARG, "generate-kg: --entities must be in [%u, 2^32)",
                      GEN_CLASSES);
    if (o->n_relations < 4 || o->n_relations > (1u << 30))
        return OC_ERR(err, OC_ERR_ARG, "generate-kg: --relations must be in [4, 2^30]");
    if (o->n_triples < 1 || o->n_triples > ((uint64_t)1 << 40) || o->n_queries < 1)
        return OC_ERR(err, OC_ERR_ARG, "generate-kg: --triples and --queries must be >= 1");
    if (!(o->power_law > 1.5 && o->power_law < 10.0))
        return OC_ERR(err, OC_ERR_ARG, "generate-kg: --power-law must be in (1.5, 10)");
    struct oc_kg_writer *w = NULL;
    OC_KG_TRY(oc_kg_writer_new(out, &w, err));
    struct oc_kg_manifest *m = oc_kg_writer_manifest(w);
    m->n_relations = o->n_relations;
    snprintf(m->provenance, sizeof(m->provenance),
             "offcore generate-kg --entities %llu --triples %llu --relations %u --queries %llu "
             "--power-law %g --seed %llu",
             (unsigned long long)o->n_entities, (unsigned long long)o->n_triples, o->n_relations,
             (unsigned long long)o->n_queries, o->power_law, (unsigned long long)o->seed);
    oc_progress_phase(bar, "generate-kg: facts", 2 * (2 * o->n_triples + o->n_entities), "facts");
    int rc = OC_OK;
    for (int gi = 0; gi < OC_KG_GRAPH_COUNT && !rc; gi++) {
        struct gen g = {o, oc_rng_mix64(o->seed, 0x4B47454Eu + (uint64_t)gi),
                        (o->n_entities + GEN_CLASSES - 1) / GEN_CLASSES};
        struct oc_kg_graph_info *info = &m->graph[gi];
        info->n_entities = o->n_entities;
        info->n_triples = o->n_triples;
        info->n_facts = 2 * o->n_triples + o->n_entities;
        info->n_queries[OC_KG_VALID] = info->n_queries[OC_KG_TEST] = o->n_queries;
        rc = write_facts(w, (enum oc_kg_graph)gi, &g, bar, err);
        if (!rc)
            rc = write_queries(w, (enum oc_kg_graph)gi, &g, err);
    }
    if (!rc)
        rc = oc_kg_writer_commit(w, err);
    oc_kg_writer_free(w);
    oc_progress_finish(bar);
    return rc;
}
