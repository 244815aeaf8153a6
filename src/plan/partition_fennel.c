/*
 * partition_fennel.c — Fennel, the streaming partitioner OUTRE cites
 * (Tsourakakis, Gkantsidis, Radunovic, Vojnovic, WSDM 2014), as the
 * alternative to METIS for `--partitioner fennel`: passes over the nodes in
 * id order (restreamed, Nishimura and Ugander, KDD 2013: FENNEL_PASSES
 * passes, a later one counting a neighbour not yet placed in it in its part
 * of the pass before), each node placed in the part i that maximises
 *
 *   |N(v) ∩ P_i| - alpha * gamma * |P_i|^(gamma - 1),   gamma = 1.5,
 *   alpha = sqrt(k) * m / n^1.5   (m undirected edges, n nodes, k parts)
 *
 * among the parts with room: at most ceil(1.1 n / k) nodes, and for a
 * training node at most ceil(1.1 n_train / k) training nodes (METIS balances
 * both too). Only the parts of v's placed neighbours and the smallest part
 * with room can win (the penalty grows with size), so a node costs its
 * degree, plus a scan of the parts when the smallest one fills or refuses a
 * training node. Ties go to the lower part: the same inputs give the same
 * parts.
 *
 * Place in the data flow: plan, called by partition.c on the adjacency it
 * builds for either partitioner.
 * Thread-safety: one call, one thread.
 * Ownership: its counters are oc_alloc'd (consumer "partition") and freed.
 */
#include <math.h>
#include <string.h>

#include "plan/plan_int.h"

#define FENNEL_GAMMA  1.5
#define FENNEL_SLACK  1.1 /* nu: a part holds at most 1.1 x its even share */
#define FENNEL_PASSES 4   /* restreaming: later passes see every neighbour's part */
#define NONE          UINT32_MAX

struct fennel {
    uint64_t *size, *tsize;
    uint64_t cap, tcap;
    uint32_t k;
    uint32_t small; /* the smallest part with room for any node (lowest on ties) */
};

static int room(const struct fennel *f, uint32_t p, int train)
{
    return f->size[p] < f->cap && (!train || f->tsize[p] < f->tcap);
}

/* The smallest part with room for a node of this kind (ties: lowest); NONE if none. */
static uint32_t smallest(const struct fennel *f, int train)
{
    uint32_t best = NONE;
    for (uint32_t p = 0; p < f->k; p++)
        if (room(f, p, train) && (best == NONE || f->size[p] < f->size[best]))
            best = p;
    return best;
}

/*
 * Where a training node goes when no part is under both limits (one part can
 * be full of nodes while every other is full of training nodes: ids that
 * follow locality fill parts before the training nodes come): among the parts
 * with room for a node, the one with the fewest training nodes (ties: lowest);
 * then the smallest of all (k x cap >= 1.1 n: not reached).
 */
static uint32_t overflow_part(const struct fennel *f)
{
    uint32_t best = NONE;
    for (uint32_t p = 0; p < f->k; p++)
        if (room(f, p, 0) && (best == NONE || f->tsize[p] < f->tsize[best]))
            best = p;
    if (best == NONE)
        for (uint32_t p = 0; p < f->k; p++)
            if (best == NONE || f->size[p] < f->size[best])
                best = p;
    return best;
}

/*
 * One pass in node order: a neighbour u already placed in this pass (u < v)
 * counts in its new part, one not yet placed in its part of the previous
 * pass (prev; NONE in the first), as restreaming Fennel does.
 */
static void fennel_pass(struct fennel *state, const int32_t *xadj, const int32_t *adj, uint64_t n,
                        const uint8_t *is_train, double alpha, const uint32_t *prev,
                        uint32_t *part_of, uint32_t *cnt, uint32_t *touched)
{
    struct fennel f = *state;
    for (uint64_t v = 0; v < n; v++) {
        int train = is_train[v];
        uint32_t nt = 0;
        for (int32_t e = xadj[v]; e < xadj[v + 1]; e++) {
            uint64_t u = (uint64_t)adj[e];
            uint32_t p = u < v ? part_of[u] : prev[u];
            if (p != NONE && cnt[p]++ == 0)
                touched[nt++] = p;
        }
        /* the smallest part with room is the best of the parts v has no neighbour in */
        uint32_t best = room(&f, f.small, train) ? f.small : smallest(&f, train);
        if (best == NONE)
            best = overflow_part(&f); /* and the neighbours' parts below have no room either */
        double best_score =
            (double)cnt[best] - alpha * FENNEL_GAMMA * pow((double)f.size[best], FENNEL_GAMMA - 1);
        for (uint32_t i = 0; i < nt; i++) {
            uint32_t p = touched[i];
            if (!room(&f, p, train))
                continue;
            double sc =
                (double)cnt[p] - alpha * FENNEL_GAMMA * pow((double)f.size[p], FENNEL_GAMMA - 1);
            if (sc > best_score || (sc == best_score && p < best)) {
                best = p;
                best_score = sc;
            }
        }
        for (uint32_t i = 0; i < nt; i++)
            cnt[touched[i]] = 0;
        part_of[v] = best;
        f.size[best]++;
        f.tsize[best] += (uint64_t)train;
        if (best == f.small || !room(&f, f.small, 0)) {
            uint32_t s = smallest(&f, 0);
            f.small = s == NONE ? 0 : s;
        }
    }
    *state = f;
}

int plan_fennel(const int32_t *xadj, const int32_t *adj, uint64_t n, const uint8_t *is_train,
                uint64_t n_train, uint32_t n_parts, uint32_t *part_of, struct oc_err *err)
{
    struct fennel f = {.k = n_parts};
    f.cap = (uint64_t)ceil(FENNEL_SLACK * (double)n / n_parts);
    f.tcap = (uint64_t)ceil(FENNEL_SLACK * (double)n_train / n_parts);
    if (f.cap < 1)
        f.cap = 1;
    if (f.tcap < 1)
        f.tcap = 1;
    f.size = oc_calloc(n_parts, sizeof(uint64_t), "partition fennel", err);
    f.tsize = oc_calloc(n_parts, sizeof(uint64_t), "partition fennel", err);
    uint32_t *cnt = oc_calloc(n_parts, sizeof(uint32_t), "partition fennel", err);
    uint32_t *touched = oc_alloc((size_t)n_parts * sizeof(uint32_t), "partition fennel", err);
    uint32_t *prev = oc_alloc((size_t)(n ? n : 1) * sizeof(uint32_t), "partition fennel", err);
    int rc = OC_OK;
    if (!f.size || !f.tsize || !cnt || !touched || !prev) {
        rc = err->status;
        goto out;
    }
    double m = (double)xadj[n] / 2.0;
    double alpha = sqrt((double)n_parts) * m / pow((double)n, 1.5);
    for (uint64_t v = 0; v < n; v++)
        prev[v] = NONE;
    for (uint32_t pass = 0; pass < FENNEL_PASSES; pass++) {
        if (pass > 0)
            memcpy(prev, part_of, (size_t)n * sizeof(uint32_t));
        memset(f.size, 0, (size_t)n_parts * sizeof(uint64_t));
        memset(f.tsize, 0, (size_t)n_parts * sizeof(uint64_t));
        f.small = 0;
        fennel_pass(&f, xadj, adj, n, is_train, alpha, prev, part_of, cnt, touched);
    }
out:
    oc_free(f.size);
    oc_free(f.tsize);
    oc_free(cnt);
    oc_free(touched);
    oc_free(prev);
    return rc;
}
