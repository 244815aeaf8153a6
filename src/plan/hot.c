/*
 * hot.c — access counts over a window and the hottest rows by them (what a
 * caller puts in the CPU cache before building a layout).
 *
 * Place in the data flow: plan; store's diskgnn strategy counts a window's
 * trace, picks the hottest rows for the CPU cache, then builds the layout.
 * Thread-safety: pure over their arguments.
 * Ownership: counts is caller storage; the ids from oc_plan_hottest are
 * oc_alloc'd (consumer "plan") and the caller's to oc_free.
 */
#include <string.h>

#include "plan/plan_int.h"

int oc_plan_count_accesses(const struct oc_plan_trace *t, uint32_t *counts, struct oc_err *err)
{
    struct oc_err tmp;
    if (!err)
        err = &tmp;
    if (!t || (t->n_nodes && !counts) || (t->n_batches && (!t->off || !t->rows)))
        return OC_ERR(err, OC_ERR_ARG, "plan: count accesses: NULL trace or counts");
    if (t->n_nodes)
        memset(counts, 0, t->n_nodes * sizeof(uint32_t));
    if (t->n_batches && t->off[0] != 0)
        return OC_ERR(err, OC_ERR_ARG, "plan: trace offsets start at %llu, not 0",
                      (unsigned long long)t->off[0]);
    for (uint64_t b = 0; b < t->n_batches; b++) {
        if (t->off[b + 1] < t->off[b])
            return OC_ERR(err, OC_ERR_ARG, "plan: trace offsets decrease at batch %llu",
                          (unsigned long long)b);
        for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
            uint64_t v = t->rows[i];
            if (v >= t->n_nodes)
                return OC_ERR(err, OC_ERR_ARG, "plan: batch %llu reads id %llu >= n_nodes %llu",
                              (unsigned long long)b, (unsigned long long)v,
                              (unsigned long long)t->n_nodes);
            if (counts[v] != UINT32_MAX)
                counts[v]++;
        }
    }
    return OC_OK;
}

static uint64_t n_at_least(const uint32_t *counts, uint64_t n_nodes, uint32_t c)
{
    uint64_t n = 0;
    for (uint64_t v = 0; v < n_nodes; v++)
        n += counts[v] >= c;
    return n;
}

/*
 * Threshold selection instead of a sort or a heap: T = the largest count
 * with at least n rows at >= T; every row above T is taken, then rows at
 * exactly T by ascending id until n. 32 passes over counts and no memory
 * but the answer, which comes out ascending by construction.
 */
int oc_plan_hottest(const uint32_t *counts, uint64_t n_nodes, uint64_t n, uint64_t **ids,
                    uint64_t *n_out, struct oc_err *err)
{
    struct oc_err tmp;
    if (!err)
        err = &tmp;
    if (!ids || !n_out || (n_nodes && !counts))
        return OC_ERR(err, OC_ERR_ARG, "plan: hottest: NULL argument");
    *ids = NULL;
    *n_out = 0;
    uint64_t nz = n_nodes ? n_at_least(counts, n_nodes, 1) : 0;
    uint32_t T = 1;
    if (n == 0 || nz == 0)
        return OC_OK;
    if (n > nz) {
        n = nz;
    } else {
        uint32_t lo = 1, hi = UINT32_MAX; /* n_at_least(lo) >= n holds */
        while (lo < hi) {
            uint32_t mid = lo + (uint32_t)((hi - lo + 1) / 2);
            if (n_at_least(counts, n_nodes, mid) >= n)
                lo = mid;
            else
                hi = mid - 1;
        }
        T = lo;
    }
    uint64_t above = T == UINT32_MAX ? 0 : n_at_least(counts, n_nodes, T + 1);
    uint64_t eq_left = n - above, k = 0;
    uint64_t *out = oc_alloc(n * sizeof(uint64_t), PLAN_CONSUMER, err);
    if (!out)
        return err->status;
    for (uint64_t v = 0; v < n_nodes && k < n; v++) {
        if (counts[v] > T) {
            out[k++] = v;
        } else if (counts[v] == T && eq_left) {
            out[k++] = v;
            eq_left--;
        }
    }
    *ids = out;
    *n_out = k;
    return OC_OK;
}
