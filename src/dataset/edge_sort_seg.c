/*
 * edge_sort_seg.c — in-place ascending sorts of the source ids of one
 * destination (introsort with an insertion-sort tail), for the edge sorter.
 * Most segments are short (a node's in-degree), a few are hubs.
 *
 * Place in the data flow: dataset (edge sorter, finish phase).
 * Thread-safety: pure functions on caller memory.
 * Ownership: none.
 */
#include <stddef.h>
#include <stdint.h>

#include "dataset/edge_sort_int.h"

/* ---- small sorts of one destination's source ids ------------------------- */

#define ES_DEFINE_SORT(name, T)                                                             \
    static void name##_insertion(T *v, size_t n)                                            \
    {                                                                                       \
        for (size_t i = 1; i < n; i++) {                                                    \
            T x = v[i];                                                                     \
            size_t j = i;                                                                   \
            while (j > 0 && v[j - 1] > x) {                                                 \
                v[j] = v[j - 1];                                                            \
                j--;                                                                        \
            }                                                                               \
            v[j] = x;                                                                       \
        }                                                                                   \
    }                                                                                       \
    static void name##_sift(T *v, size_t n, size_t i)                                       \
    {                                                                                       \
        for (;;) {                                                                          \
            size_t c = 2 * i + 1;                                                           \
            if (c >= n)                                                                     \
                return;                                                                     \
            if (c + 1 < n && v[c + 1] > v[c])                                               \
                c++;                                                                        \
            if (v[i] >= v[c])                                                               \
                return;                                                                     \
            T t = v[i];                                                                     \
            v[i] = v[c];                                                                    \
            v[c] = t;                                                                       \
            i = c;                                                                          \
        }                                                                                   \
    }                                                                                       \
    static void name##_heap(T *v, size_t n)                                                 \
    {                                                                                       \
        for (size_t i = n / 2; i-- > 0;)                                                    \
            name##_sift(v, n, i);                                                           \
        for (size_t k = n; k-- > 1;) {                                                      \
            T t = v[0];                                                                     \
            v[0] = v[k];                                                                    \
            v[k] = t;                                                                       \
            name##_sift(v, k, 0);                                                           \
        }                                                                                   \
    }                                                                                       \
    /* Introsort: quicksort on the larger side iteratively, heapsort past a depth limit. */ \
    void name(T *v, size_t n)                                                               \
    {                                                                                       \
        unsigned depth = 0;                                                                 \
        while (n > 24) {                                                                    \
            if (++depth > 64) {                                                             \
                name##_heap(v, n);                                                          \
                return;                                                                     \
            }                                                                               \
            T a = v[0], b = v[n / 2], c = v[n - 1];                                         \
            T p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));    \
            size_t i = 0, j = n - 1;                                                        \
            for (;;) {                                                                      \
                while (v[i] < p)                                                            \
                    i++;                                                                    \
                while (v[j] > p)                                                            \
                    j--;                                                                    \
                if (i >= j)                                                                 \
                    break;                                                                  \
                T t = v[i];                                                                 \
                v[i] = v[j];                                                                \
                v[j] = t;                                                                   \
                i++;                                                                        \
                j--;                                                                        \
            }                                                                               \
            /* [0, j] <= p <= [j+1, n) */                                                   \
            size_t nl = j + 1;                                                              \
            if (nl < n - nl) {                                                              \
                name(v, nl);                                                                \
                v += nl;                                                                    \
                n -= nl;                                                                    \
            } else {                                                                        \
                name(v + nl, n - nl);                                                       \
                n = nl;                                                                     \
            }                                                                               \
        }                                                                                   \
        name##_insertion(v, n);                                                             \
    }

ES_DEFINE_SORT(oc_es_sort_u32, uint32_t)
ES_DEFINE_SORT(oc_es_sort_u64, uint64_t)
