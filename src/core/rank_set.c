/*
 * rank_set.c — a set of ids below n, given once as ascending ids, that
 * answers "is v in it, and how many members are below v" in O(1): a bit per
 * id and, per 64 ids, the members before them. 12 bytes per 64 ids, so a
 * set over 30M nodes is 5.6 MB however many members it has (a binary search
 * over the members' ids, which the set replaces, touched ~23 cache lines of
 * a 40 MB array per lookup).
 *
 *   bits:    ...0 1 1 0 1...     before[w]: members in words 0..w-1
 *   rank(v): before[v/64] + popcount(bits[v/64] below v's bit)
 *
 * Place in the data flow: core; used by plan (a batch's CPU-cache
 * addresses) and the stores that lay batches out.
 * Thread-safety: built by one thread, then read-only.
 * Ownership: the set owns its arrays (oc_rank_set_free).
 */
#include <assert.h>
#include <string.h>

#include "offcore/core.h"

uint64_t oc_rank_set_bytes(uint64_t n)
{
    return (n + 63) / 64 * (sizeof(uint64_t) + sizeof(uint32_t));
}

int oc_rank_set_build(struct oc_rank_set *r, const uint64_t *ids, uint64_t k, uint64_t n,
                      const char *what, struct oc_err *err)
{
    uint64_t words = (n + 63) / 64;
    memset(r, 0, sizeof(*r));
    if (k > UINT32_MAX)
        return OC_ERR(err, OC_ERR_ARG, "%s: %llu members, more than a rank set holds", what,
                      (unsigned long long)k);
    r->n = n;
    r->bits = oc_calloc(words ? words : 1, sizeof(uint64_t), what, err);
    r->before = oc_alloc((words ? words : 1) * sizeof(uint32_t), what, err);
    if (!r->bits || !r->before) {
        oc_rank_set_free(r);
        return err->status;
    }
    for (uint64_t i = 0; i < k; i++) {
        assert(ids[i] < n && (i == 0 || ids[i - 1] < ids[i])); /* ascending, in range */
        r->bits[ids[i] >> 6] |= UINT64_C(1) << (ids[i] & 63);
    }
    uint32_t sum = 0;
    for (uint64_t w = 0; w < words; w++) {
        r->before[w] = sum;
        sum += (uint32_t)__builtin_popcountll(r->bits[w]);
    }
    assert(sum == k);
    return OC_OK;
}

void oc_rank_set_free(struct oc_rank_set *r)
{
    oc_free(r->bits);
    oc_free(r->before);
    memset(r, 0, sizeof(*r));
}
