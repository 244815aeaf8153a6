/*
 * sort.c — sorting of unsigned keys for the modules' hot paths (kg's
 * extraction layers, SiGMa's candidates): least-significant-digit radix by
 * bytes through a scratch array, skipping a pass whose byte is the same in
 * every key; insertion sort for a few. (qsort's comparator calls took a
 * sixth of kg-train, and a quarter of SiGMa's matching.)
 *
 * Place in the data flow: core; used by kg.
 * Thread-safety: none needed (the caller's arrays only).
 * Ownership: the caller's.
 */
#include <string.h>

#include "offcore/core.h"

/* The sort of T keys of `bits` bits, as NAME(a, tmp, n). */
#define OC_RADIX_SORT(NAME, T, bits)                           \
    void NAME(T *a, T *tmp, uint64_t n)                        \
    {                                                          \
        if (n < 64) {                                          \
            for (uint64_t i = 1; i < n; i++) {                 \
                T x = a[i];                                    \
                uint64_t j = i;                                \
                for (; j > 0 && a[j - 1] > x; j--)             \
                    a[j] = a[j - 1];                           \
                a[j] = x;                                      \
            }                                                  \
            return;                                            \
        }                                                      \
        T *src = a, *dst = tmp;                                \
        for (unsigned shift = 0; shift < (bits); shift += 8) { \
            uint64_t count[256] = {0};                         \
            for (uint64_t i = 0; i < n; i++)                   \
                count[src[i] >> shift & 255]++;                \
            if (count[src[0] >> shift & 255] == n)             \
                continue; /* every key has this byte */        \
            uint64_t at = 0;                                   \
            for (unsigned b = 0; b < 256; b++) {               \
                uint64_t c = count[b];                         \
                count[b] = at;                                 \
                at += c;                                       \
            }                                                  \
            for (uint64_t i = 0; i < n; i++)                   \
                dst[count[src[i] >> shift & 255]++] = src[i];  \
            T *t = src;                                        \
            src = dst;                                         \
            dst = t;                                           \
        }                                                      \
        if (src != a)                                          \
            memcpy(a, src, (size_t)n * sizeof(T));             \
    }

OC_RADIX_SORT(oc_sort_u32, uint32_t, 32)
OC_RADIX_SORT(oc_sort_u64, uint64_t, 64)
