/*
 * slot_list.h — a recency list over slot indices: the slots of a fixed-size
 * cache in one doubly linked list threaded through two u32 arrays (prev,
 * next), with O(1) unlink and push at either end. It orders nothing by
 * itself; its owner decides what an end means (least recently used at the
 * front, say) and which slots are on it.
 *
 *   front ⇄ ... ⇄ back        prev[k], next[k]: neighbours of slot k,
 *                              OC_SLOT_NONE at the ends and off the list
 *
 * Place in the data flow: core; gnndrive's standby list of unreferenced
 * buffer slots (store/gnndrive) and plan's LRU simulator (plan/belady_sim.c)
 * are such lists.
 * Thread-safety: none of its own; its owner's lock guards it.
 * Ownership: the list owns prev and next (oc_alloc'd, freed by deinit).
 */
#ifndef OFFCORE_SLOT_LIST_H
#define OFFCORE_SLOT_LIST_H

#include <stdint.h>

#include "offcore/core.h"

#define OC_SLOT_NONE UINT32_MAX

struct oc_slot_list {
    uint32_t *prev, *next; /* cap each */
    uint64_t cap;          /* slots [0, cap); fewer than OC_SLOT_NONE */
    uint32_t front, back;  /* OC_SLOT_NONE when empty */
    uint64_t n;            /* slots on the list */
};

/* An empty list over cap slots, its arrays accounted to `consumer`; OC_ERR_ARG past u32. */
int oc_slot_list_init(struct oc_slot_list *l, uint64_t cap, const char *consumer,
                      struct oc_err *err);
/* Frees the arrays; l is empty (and over 0 slots) again. */
void oc_slot_list_deinit(struct oc_slot_list *l);
/* Bytes the list of cap slots allocates. */
uint64_t oc_slot_list_bytes(uint64_t cap);
/* Puts slot k, not on the list, at the back / front. */
void oc_slot_list_push_back(struct oc_slot_list *l, uint32_t k);
void oc_slot_list_push_front(struct oc_slot_list *l, uint32_t k);
/* Takes slot k, on the list, off it. */
void oc_slot_list_unlink(struct oc_slot_list *l, uint32_t k);

#endif
