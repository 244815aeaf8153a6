/*
 * rank_set.c — a set of ids below n that answers "is v in it, and how many
 * members are below v" in O(1): a bit per id and, per 64 ids, the members
 * before them. 12 bytes per 64 ids, so a set over 30M nodes is 5.6 MB
 * however many members it has (a binary search over the members' ids,
 * which the set replaces, touched ~23 cache lines of a 40 MB array per
 * lookup).
 *
 *   bits:    ...0 1 1 0 1...     before[w]: members in words 0..w-1
 *   rank(v): before[v/64] + popcount(bits[v/64] below v's bit)
 *
 *   init ──► add (any order, repeats allowed) ... ──► seal ──► find ...
 *   build(ids) = init, add each, seal (the ids distinct)
 *
 * Place in the data flow: core; used by plan (a batch's CPU-cache
 * addresses), the stores that lay batches out and kg's Atom Cache (its
 * entities, added in degree order).
 * Thread-safety: filled and sealed by one thread, then read-only.
 * Ownership: the set owns its arrays (oc_rank_set_free); `what` is borrowed.
 */
#include <string.h>

#include "offcore/core.h"

uint64_t oc_rank_set_bytes(uint64_t n)
{
    return (n + 63) / 64 * (sizeof(uint64_t) + sizeof(uint32_t));
}

int oc_rank_set_init(struct oc_rank_set *r, uint64_t n, const char *what, struct oc_err *err)
{
    uint64_t words = (n + 63) / 64;
    memset(r, 0, sizeof(*r));
    r->n = n;
    r->what = what;
    r->bits = oc_calloc(words ? words : 1, sizeof(uint64_t), what, err);
    r->before = oc_alloc((words ? words : 1) * sizeof(uint32_t), what, err);
    if (!r->bits || !r->before) {
        oc_rank_set_free(r);
        return err->status;
    }
    return OC_OK;
}

int oc_rank_set_add(struct oc_rank_set *r, uint64_t v, struct oc_err *err)
{
    if (r->sealed)
        return OC_ERR(err, OC_ERR_ARG, "%s: id %llu added to a sealed rank set", r->what,
                      (unsigned long long)v);
    if (v >= r->n)
        return OC_ERR(err, OC_ERR_ARG, "%s: id %llu out of range (ids below %llu)", r->what,
                      (unsigned long long)v, (unsigned long long)r->n);
    r->bits[v >> 6] |= UINT64_C(1) << (v & 63);
    return OC_OK;
}

int oc_rank_set_seal(struct oc_rank_set *r, struct oc_err *err)
{
    if (r->sealed)
        return OC_ERR(err, OC_ERR_ARG, "%s: rank set sealed twice", r->what);
    uint64_t words = (r->n + 63) / 64, sum = 0;
    for (uint64_t w = 0; w < words; w++) {
        r->before[w] = (uint32_t)sum;
        sum += (uint64_t)__builtin_popcountll(r->bits[w]);
        if (sum > UINT32_MAX)
            return OC_ERR(err, OC_ERR_ARG, "%s: more than %llu members, more than a rank set holds",
                          r->what, (unsigned long long)UINT32_MAX);
    }
    r->n_members = sum;
    r->sealed = 1;
    return OC_OK;
}

int oc_rank_set_build(struct oc_rank_set *r, const uint64_t *ids, uint64_t k, uint64_t n,
                      const char *what, struct oc_err *err)
{
    memset(r, 0, sizeof(*r));
    if (k > UINT32_MAX)
        return OC_ERR(err, OC_ERR_ARG, "%s: %llu members, more than a rank set holds", what,
                      (unsigned long long)k);
    int rc = oc_rank_set_init(r, n, what, err);
    for (uint64_t i = 0; !rc && i < k; i++)
        rc = oc_rank_set_add(r, ids[i], err);
    if (!rc)
        rc = oc_rank_set_seal(r, err);
    if (!rc && r->n_members != k)
        rc = OC_ERR(err, OC_ERR_ARG, "%s: %llu ids given, %llu distinct (an id given twice)", what,
                    (unsigned long long)k, (unsigned long long)r->n_members);
    if (rc)
        oc_rank_set_free(r);
    return rc;
}

void oc_rank_set_free(struct oc_rank_set *r)
{
    oc_free(r->bits);
    oc_free(r->before);
    memset(r, 0, sizeof(*r));
}
