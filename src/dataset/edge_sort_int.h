/*
 * edge_sort_int.h — private to the edge sorter (edge_sort.c) and its tests:
 * a knob that makes a small sorter use its wide (n_nodes >= 2^32) layout,
 * and the per-destination sorts.
 *
 * Place in the data flow: dataset; nothing outside edge_sort.c and tests.
 * Thread-safety: as the sorter (one thread at a time).
 * Ownership: nothing is transferred.
 */
#ifndef OFFCORE_EDGE_SORT_INT_H
#define OFFCORE_EDGE_SORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/dataset.h"

/*
 * Test knob: records of two u64 and u64 indices whatever n_nodes is, so the
 * wide code paths run on graphs small enough for a test. Call before any add.
 */
void oc_edge_sorter_force_wide(struct oc_edge_sorter *s);

/* Sorts v[0..n) ascending, in place (edge_sort_seg.c). */
void oc_es_sort_u32(uint32_t *v, size_t n);
void oc_es_sort_u64(uint64_t *v, size_t n);

#endif
