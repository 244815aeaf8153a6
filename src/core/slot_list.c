/*
 * slot_list.c — the recency list over slot indices of slot_list.h: unlink
 * and push at either end in O(1), the list's shape asserted where asserts
 * are on (a slot's neighbours point back at it; the count matches the ends).
 *
 * Place in the data flow: core (below the caches that keep slots in order).
 * Thread-safety: none; the owner's lock.
 * Ownership: prev and next are the list's.
 */
#include <string.h>

#include "offcore/slot_list.h"

uint64_t oc_slot_list_bytes(uint64_t cap)
{
    return cap * 2 * sizeof(uint32_t);
}

int oc_slot_list_init(struct oc_slot_list *l, uint64_t cap, const char *consumer,
                      struct oc_err *err)
{
    memset(l, 0, sizeof(*l));
    l->front = l->back = OC_SLOT_NONE;
    if (cap >= OC_SLOT_NONE)
        return OC_ERR(err, OC_ERR_ARG, "%s: %llu slots are more than a list holds", consumer,
                      (unsigned long long)cap);
    if (cap == 0)
        return OC_OK;
    l->prev = oc_alloc(cap * sizeof(uint32_t), consumer, err);
    l->next = oc_alloc(cap * sizeof(uint32_t), consumer, err);
    if (!l->prev || !l->next) {
        oc_slot_list_deinit(l);
        return err ? err->status : OC_ERR_NOMEM;
    }
    for (uint64_t k = 0; k < cap; k++)
        l->prev[k] = l->next[k] = OC_SLOT_NONE;
    l->cap = cap;
    return OC_OK;
}

void oc_slot_list_deinit(struct oc_slot_list *l)
{
    oc_free(l->prev);
    oc_free(l->next);
    memset(l, 0, sizeof(*l));
    l->front = l->back = OC_SLOT_NONE;
}

void oc_slot_list_push_back(struct oc_slot_list *l, uint32_t k)
{
    OC_ASSERT(k < l->cap && l->n < l->cap);
    OC_ASSERT(l->prev[k] == OC_SLOT_NONE && l->next[k] == OC_SLOT_NONE && l->front != k);
    l->prev[k] = l->back;
    l->next[k] = OC_SLOT_NONE;
    if (l->back != OC_SLOT_NONE)
        l->next[l->back] = k;
    else
        l->front = k;
    l->back = k;
    l->n++;
}

void oc_slot_list_push_front(struct oc_slot_list *l, uint32_t k)
{
    OC_ASSERT(k < l->cap && l->n < l->cap);
    OC_ASSERT(l->prev[k] == OC_SLOT_NONE && l->next[k] == OC_SLOT_NONE && l->front != k);
    l->prev[k] = OC_SLOT_NONE;
    l->next[k] = l->front;
    if (l->front != OC_SLOT_NONE)
        l->prev[l->front] = k;
    else
        l->back = k;
    l->front = k;
    l->n++;
}

void oc_slot_list_unlink(struct oc_slot_list *l, uint32_t k)
{
    OC_ASSERT(k < l->cap && l->n > 0);
    uint32_t p = l->prev[k], n = l->next[k];
    OC_ASSERT(p != OC_SLOT_NONE ? l->next[p] == k : l->front == k); /* k is on the list */
    OC_ASSERT(n != OC_SLOT_NONE ? l->prev[n] == k : l->back == k);
    if (p != OC_SLOT_NONE)
        l->next[p] = n;
    else
        l->front = n;
    if (n != OC_SLOT_NONE)
        l->prev[n] = p;
    else
        l->back = p;
    l->prev[k] = l->next[k] = OC_SLOT_NONE;
    l->n--;
}
