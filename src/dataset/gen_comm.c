/*
 * gen_comm.c — the generator's planted communities (`--communities S`,
 * `--mixing μ`), LFR-style: heavy-tailed sizes, members scattered over node
 * ids, hubs only in communities that can hold their internal degree, a
 * dominant class per community.
 *
 *   sizes     s_k = (a^-½ − u_k (a^-½ − b^-½))^-2, u_k = hash(seed, k): the
 *             power law p(s) ∝ s^-1.5 on [a, b] = [max(2, S/4), min(4S, N)],
 *             whose mean is sqrt(a·b) = S; drawn until they cover N, the last
 *             one taking the remainder when less than a would be left. These
 *             are targets: the realized sizes come from the assignment.
 *   members   node i needs a community of at least
 *               need_i = (1 − μ)·D·w_i / mean(w) / GEN_COMM_FILL
 *             members (its expected internal degree, with room to spare);
 *             it joins one of the communities whose target is ≥ need_i (the
 *             largest if none is), picked with probability ∝ target size by
 *             hash(seed, i). Most nodes can go anywhere, so realized sizes
 *             follow the targets; hubs land in the large ones, as in LFR.
 *             Membership is a hash of the node id: no id locality for a
 *             layout to inherit.
 *   classes   node i takes its community's dominant class (drawn from the
 *             class distribution by hash(seed, k)) with probability
 *             sqrt(homophily), else its own hashed class: the marginal class
 *             distribution is unchanged, and an intra-community edge joins
 *             two nodes of the same class about as often (≈ homophily) as a
 *             draw under the class rule does.
 *
 * Place in the data flow: dataset (generate: communities → classes → graph).
 * Thread-safety: filled by the calling thread (pool tasks write disjoint
 * slices of `of`) before any other phase reads it.
 * Ownership: off and of are oc_alloc'd; oc_gen_comm_deinit frees them.
 */
#include <math.h>
#include <string.h>

#include "dataset/gen_int.h"

#define GEN_COMM_BLOCK ((uint64_t)1 << 16) /* nodes per pool task */

struct size_law {
    double ia, ib; /* a^-1/2, b^-1/2 */
    uint64_t min;  /* smallest size a community may have */
};

static uint64_t size_draw(const struct oc_gen *g, const struct size_law *l, uint64_t k)
{
    double u = gen_unit(oc_rng_mix64(g->o.seed ^ GEN_SALT_CSIZE, k));
    double x = l->ia - u * (l->ia - l->ib);
    uint64_t s = (uint64_t)llround(1.0 / (x * x));
    return s < l->min ? l->min : s;
}

/* Walks the target sizes; fills size[] when it is not NULL. Returns the count. */
static uint64_t size_walk(const struct oc_gen *g, const struct size_law *l, uint64_t *size)
{
    const uint64_t n = g->o.n_nodes;
    uint64_t pos = 0, k = 0;
    while (pos < n) {
        uint64_t s = size_draw(g, l, k);
        if (s >= n - pos || n - pos - s < l->min)
            s = n - pos;
        pos += s;
        if (size)
            size[k] = s;
        k++;
    }
    return k;
}

struct assign_ctx {
    const struct oc_gen *g;
    const double *w;
    double need_per_w;      /* need_i = w_i · need_per_w */
    const uint64_t *ssize;  /* target sizes, descending */
    const uint64_t *scum;   /* scum[j] = ssize[0] + ... + ssize[j] */
    const uint32_t *sorder; /* community of ssize[j] */
    uint64_t n_comm;
    uint32_t *of;
};

static int assign_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct assign_ctx *a = ctx;
    const uint64_t n = a->g->o.n_nodes, nk = a->n_comm;
    uint64_t lo = task * GEN_COMM_BLOCK;
    uint64_t hi = lo + GEN_COMM_BLOCK < n ? lo + GEN_COMM_BLOCK : n;
    for (uint64_t i = lo; i < hi; i++) {
        double need = a->w[i] * a->need_per_w;
        /* e = how many communities (the largest first) are big enough; at least one. */
        uint64_t b = 0, e = nk;
        while (b < e) {
            uint64_t mid = (b + e) / 2;
            if ((double)a->ssize[mid] >= need)
                b = mid + 1;
            else
                e = mid;
        }
        uint64_t n_ok = b ? b : 1;
        uint64_t x = (uint64_t)(gen_unit(oc_rng_mix64(a->g->o.seed ^ GEN_SALT_CMEMBER, i)) *
                                (double)a->scum[n_ok - 1]);
        b = 0, e = n_ok - 1;
        while (b < e) { /* first j with x < scum[j] */
            uint64_t mid = (b + e) / 2;
            if (x < a->scum[mid])
                e = mid;
            else
                b = mid + 1;
        }
        a->of[i] = a->sorder[b];
    }
    return OC_OK;
}

/* Sorts community ids by target size, descending (ties by id: deterministic). */
static void sort_desc(uint32_t *ord, const uint64_t *size, uint64_t n, uint32_t *tmp)
{
    for (uint64_t width = 1; width < n; width *= 2) { /* bottom-up merge sort */
        for (uint64_t lo = 0; lo < n; lo += 2 * width) {
            uint64_t mid = lo + width < n ? lo + width : n;
            uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = size[ord[j]] > size[ord[i]] ? ord[j++] : ord[i++];
            while (i < mid)
                tmp[k++] = ord[i++];
            while (j < hi)
                tmp[k++] = ord[j++];
        }
        memcpy(ord, tmp, (size_t)n * sizeof(uint32_t));
    }
}

int oc_gen_comm_init(struct oc_gen *g, struct oc_err *err)
{
    struct gen_comm *c = &g->comm;
    memset(c, 0, sizeof(*c));
    if (g->o.communities == 0)
        return OC_OK;
    const uint64_t n = g->o.n_nodes;
    const double s = (double)g->o.communities;
    double a = s / 4 < 2 ? 2 : s / 4, b = 4 * s > (double)n ? (double)n : 4 * s;
    if (b < a)
        b = a;
    struct size_law l = {1.0 / sqrt(a), 1.0 / sqrt(b), (uint64_t)ceil(a)};
    c->mixing = isnan(g->o.mixing) ? OC_GENERATE_MIXING_DEFAULT : g->o.mixing;
    c->keep_prob = sqrt(g->o.homophily);
    uint64_t nk = size_walk(g, &l, NULL);
    uint64_t *ssize = NULL, *scum = NULL;
    uint32_t *ord = NULL, *tmp = NULL;
    double *w = NULL;
    int rc = OC_OK;
    if (!(ssize = oc_alloc((size_t)nk * sizeof(uint64_t), "generate: community sizes", err)) ||
        !(scum = oc_alloc((size_t)nk * sizeof(uint64_t), "generate: community sizes", err)) ||
        !(ord = oc_alloc((size_t)nk * sizeof(uint32_t), "generate: community order", err)) ||
        !(tmp = oc_alloc((size_t)nk * sizeof(uint32_t), "generate: community order", err)) ||
        !(c->off = oc_calloc(nk + 1, sizeof(uint64_t), "generate: community offsets", err)) ||
        !(c->of = oc_alloc((size_t)n * sizeof(uint32_t), "generate: node communities", err))) {
        rc = err->status;
        goto out;
    }
    c->n_comm = nk;
    size_walk(g, &l, scum); /* scum holds the sizes by id for the sort */
    for (uint64_t k = 0; k < nk; k++)
        ord[k] = (uint32_t)k;
    sort_desc(ord, scum, nk, tmp);
    for (uint64_t j = 0; j < nk; j++)
        ssize[j] = scum[ord[j]];
    for (uint64_t j = 0; j < nk; j++)
        scum[j] = ssize[j] + (j ? scum[j - 1] : 0);
    if ((rc = oc_gen_weights(g, &w, err)) != OC_OK)
        goto out;
    double mean_w = 0;
    for (uint64_t i = 0; i < n; i++)
        mean_w += w[i];
    mean_w /= (double)n;
    struct assign_ctx ac = {
        .g = g,
        .w = w,
        .need_per_w = (1.0 - c->mixing) * g->o.avg_degree / mean_w / GEN_COMM_FILL,
        .ssize = ssize,
        .scum = scum,
        .sorder = ord,
        .n_comm = nk,
        .of = c->of,
    };
    rc = oc_pool_run(g->pool, (n + GEN_COMM_BLOCK - 1) / GEN_COMM_BLOCK, assign_task, &ac);
    if (rc != OC_OK)
        goto out;
    /* Realized offsets: community k holds off[k] .. off[k+1] in member order. */
    for (uint64_t i = 0; i < n; i++)
        c->off[c->of[i] + 1]++;
    for (uint64_t k = 0; k < nk; k++)
        c->off[k + 1] += c->off[k];
out:
    oc_free(w);
    oc_free(ssize);
    oc_free(scum);
    oc_free(ord);
    oc_free(tmp);
    return rc;
}

void oc_gen_comm_deinit(struct gen_comm *c)
{
    oc_free(c->off);
    oc_free(c->of);
    memset(c, 0, sizeof(*c));
}
