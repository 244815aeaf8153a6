/*
 * kg_rank.c — queries grouped by (head, relation) and the filtered ranking of
 * RED-GNN's evaluation (utils.cal_ranks): every answer of a query is ranked
 * among all entities by its score; other true tails of (head, relation)
 * scoring higher do not count against it, ties count half.
 *
 *   rank(a) = 1 + #{e not a true tail : s_e > s_a} + #{e != a : s_e == s_a} / 2
 *
 * from every entity's score (oc_kg_rank) or, as kg-train evaluates, from the
 * scores of the entities the query's subgraph reached, the others counted
 * together at score 0 (oc_kg_rank_reached): same counts, without a pass over
 * all entities per answer.
 *
 * Place in the data flow: kg; kg-train builds the query sets and the filters
 * from the dataset's triples and ranks the model's scores.
 * Thread-safety: query sets and filters are read-only once built.
 * Ownership: a query set owns its arrays (_deinit).
 */
#include <stdlib.h>
#include <string.h>

#include "kg/kg_int.h"

static int trip_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* Groups n sorted (h, r, t) triples, dropping repeated ones. */
static int group(const uint32_t *t, uint64_t n, struct oc_kg_qset *qs, struct oc_err *err)
{
    memset(qs, 0, sizeof(*qs));
    uint64_t n_q = 0, n_a = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i && trip_cmp(t + 3 * i, t + 3 * (i - 1)) == 0)
            continue;
        n_a++;
        if (!i || t[3 * i] != t[3 * (i - 1)] || t[3 * i + 1] != t[3 * (i - 1) + 1])
            n_q++;
    }
    qs->head = oc_alloc((size_t)n_q * 4 + 4, "kg queries", err);
    qs->rel = oc_alloc((size_t)n_q * 4 + 4, "kg queries", err);
    qs->ans_ptr = oc_alloc((size_t)(n_q + 1) * 8, "kg queries", err);
    qs->ans = oc_alloc((size_t)n_a * 4 + 4, "kg queries", err);
    if (!qs->head || !qs->rel || !qs->ans_ptr || !qs->ans) {
        oc_kg_qset_deinit(qs);
        return err->status;
    }
    uint64_t q = 0, a = 0;
    qs->ans_ptr[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i && trip_cmp(t + 3 * i, t + 3 * (i - 1)) == 0)
            continue;
        if (!i || t[3 * i] != t[3 * (i - 1)] || t[3 * i + 1] != t[3 * (i - 1) + 1]) {
            if (a)
                qs->ans_ptr[q] = a;
            qs->head[q] = t[3 * i];
            qs->rel[q++] = t[3 * i + 1];
        }
        qs->ans[a++] = t[3 * i + 2];
    }
    qs->ans_ptr[q] = a;
    qs->n = q;
    return OC_OK;
}

/* Triples of several sets and their inverses (t, r + R, h), sorted. */
static int collect(const uint32_t *const *sets, const uint64_t *ns, unsigned n_sets, uint32_t n_rel,
                   uint32_t **out, uint64_t *n_out, struct oc_err *err)
{
    uint64_t n = 0;
    for (unsigned s = 0; s < n_sets; s++)
        n += 2 * ns[s];
    uint32_t *t = oc_alloc((size_t)n * 12 + 12, "kg queries", err);
    if (!t)
        return err->status;
    uint64_t k = 0;
    for (unsigned s = 0; s < n_sets; s++) {
        for (uint64_t i = 0; i < ns[s]; i++) {
            const uint32_t *x = sets[s] + 3 * i;
            uint32_t f[6] = {x[0], x[1], x[2], x[2], x[1] + n_rel, x[0]};
            memcpy(t + 3 * k, f, 24);
            k += 2;
        }
    }
    qsort(t, (size_t)n, 12, trip_cmp);
    *out = t;
    *n_out = n;
    return OC_OK;
}

int oc_kg_qset_build(const uint32_t *triples, uint64_t n_triples, uint32_t n_relations,
                     struct oc_kg_qset *qs, struct oc_err *err)
{
    uint32_t *t = NULL;
    uint64_t n = 0;
    OC_KG_TRY(collect(&triples, &n_triples, 1, n_relations, &t, &n, err));
    int rc = group(t, n, qs, err);
    oc_free(t);
    return rc;
}

void oc_kg_qset_deinit(struct oc_kg_qset *qs)
{
    oc_free(qs->head);
    oc_free(qs->rel);
    oc_free(qs->ans_ptr);
    oc_free(qs->ans);
    memset(qs, 0, sizeof(*qs));
}

int oc_kg_filter_build(const uint32_t *const *triples, const uint64_t *n_triples, unsigned n_sets,
                       uint32_t n_relations, struct oc_kg_filter *f, struct oc_err *err)
{
    uint32_t *t = NULL;
    uint64_t n = 0;
    OC_KG_TRY(collect(triples, n_triples, n_sets, n_relations, &t, &n, err));
    int rc = group(t, n, &f->all, err);
    oc_free(t);
    return rc;
}

void oc_kg_filter_deinit(struct oc_kg_filter *f)
{
    oc_kg_qset_deinit(&f->all);
}

/* The true tails of (head, rel) in the filter, or none. */
static void filter_find(const struct oc_kg_filter *f, uint32_t head, uint32_t rel,
                        const uint32_t **tails, uint64_t *n)
{
    uint64_t lo = 0, hi = f->all.n;
    *tails = NULL;
    *n = 0;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        uint32_t h = f->all.head[mid], r = f->all.rel[mid];
        if (h < head || (h == head && r < rel))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->all.n && f->all.head[lo] == head && f->all.rel[lo] == rel) {
        *tails = f->all.ans + f->all.ans_ptr[lo];
        *n = f->all.ans_ptr[lo + 1] - f->all.ans_ptr[lo];
    }
}

/* Accumulates one answer's rank = 1 + (greater - filtered greater) + (equal - 1) / 2. */
static void add_rank(struct oc_kg_metrics *m, uint64_t greater, uint64_t equal,
                     uint64_t filtered_greater)
{
    double rank = 1.0 + (double)(greater - filtered_greater) + (double)(equal - 1) / 2.0;
    m->sum_rr += 1.0 / rank;
    m->n_ranked++;
    m->n_hits1 += rank <= 1.0;
    m->n_hits10 += rank <= 10.0;
}

int oc_kg_rank(const float *scores, uint64_t n_entities, uint32_t head, uint32_t rel,
               const uint32_t *answers, uint64_t n_answers, const struct oc_kg_filter *f,
               struct oc_kg_metrics *m, struct oc_err *err)
{
    const uint32_t *tails = NULL;
    uint64_t n_tails = 0;
    filter_find(f, head, rel, &tails, &n_tails);
    for (uint64_t i = 0; i < n_answers; i++) {
        uint32_t a = answers[i];
        if (a >= n_entities)
            return OC_ERR(err, OC_ERR_ARG, "kg rank: answer %u out of range (%llu entities)", a,
                          (unsigned long long)n_entities);
        float s = scores[a];
        uint64_t greater = 0, equal = 0, filtered_greater = 0;
        for (uint64_t e = 0; e < n_entities; e++) {
            greater += scores[e] > s;
            equal += scores[e] == s;
        }
        for (uint64_t k = 0; k < n_tails; k++)
            filtered_greater += scores[tails[k]] > s;
        add_rank(m, greater, equal, filtered_greater);
    }
    return OC_OK;
}

/* The score of entity e among the reached ones (ascending), 0 if not reached. */
static float reached_score(const uint32_t *entity, const float *score, uint64_t n, uint32_t e)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (entity[mid] < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && entity[lo] == e ? score[lo] : 0.0f;
}

int oc_kg_rank_reached(const uint32_t *entity, const float *score, uint64_t n_reached,
                       uint64_t n_entities, uint32_t head, uint32_t rel, const uint32_t *answers,
                       uint64_t n_answers, const struct oc_kg_filter *f, struct oc_kg_metrics *m,
                       struct oc_err *err)
{
    for (uint64_t i = 0; i < n_reached; i++)
        if (entity[i] >= n_entities || (i && entity[i] <= entity[i - 1]))
            return OC_ERR(err, OC_ERR_INTERNAL,
                          "kg rank: reached entity %u at %llu out of range or out of order "
                          "(%llu entities)",
                          entity[i], (unsigned long long)i, (unsigned long long)n_entities);
    const uint32_t *tails = NULL;
    uint64_t n_tails = 0;
    filter_find(f, head, rel, &tails, &n_tails);
    uint64_t n_zero = n_entities - n_reached; /* the entities not reached: score 0 */
    for (uint64_t i = 0; i < n_answers; i++) {
        uint32_t a = answers[i];
        if (a >= n_entities)
            return OC_ERR(err, OC_ERR_ARG, "kg rank: answer %u out of range (%llu entities)", a,
                          (unsigned long long)n_entities);
        float s = reached_score(entity, score, n_reached, a);
        uint64_t greater = 0.0f > s ? n_zero : 0, equal = 0.0f == s ? n_zero : 0;
        uint64_t filtered_greater = 0;
        for (uint64_t e = 0; e < n_reached; e++) {
            greater += score[e] > s;
            equal += score[e] == s;
        }
        for (uint64_t k = 0; k < n_tails; k++)
            filtered_greater += reached_score(entity, score, n_reached, tails[k]) > s;
        add_rank(m, greater, equal, filtered_greater);
    }
    return OC_OK;
}
