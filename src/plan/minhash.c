/*
 * minhash.c — the order of a segment's disk-cache rows (DiskGNN, Alg. 1):
 * rows accessed by similar sets of the segment's batches are placed next
 * to each other, so each batch's shared rows fall on fewer pages.
 *
 *   signature(row) = ( min over batches b of the segment that access row
 *                      of h_k(b) )  for k = 0..PLAN_MINHASH_K-1
 *   order: lexicographic by (sig_0, ..., sig_{K-1}, row id)
 *
 * Two rows with the same access set get the same signature and so sit
 * together; the probability that sig_k agrees is the Jaccard similarity of
 * the access sets, so similar rows cluster. h_k is a fixed splitmix64 mix
 * of (k, window batch index): plans are reproducible with no RNG state.
 *
 * Place in the data flow: plan; layout.c calls it once per segment while
 * building a layout.
 * Thread-safety: pure over its arguments.
 * Ownership: works in caller-provided memory; allocates nothing.
 */
#include <stdlib.h>

#include "plan/plan_int.h"

uint64_t plan_minhash(unsigned k, uint64_t b)
{
    uint64_t x = b * PLAN_MINHASH_K + k + UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* Entries of PLAN_MINHASH_K signature words then the row id, compared in that order. */
static int cmp_sig(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    for (unsigned k = 0; k <= PLAN_MINHASH_K; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

void plan_order_rows(const struct plan_ctx *c, const uint64_t *addr, uint64_t b0, uint64_t b1,
                     uint64_t *rows, uint64_t n, uint64_t *tmp, int identity)
{
    const uint64_t W = PLAN_MINHASH_K + 1;
    const struct oc_plan_trace *t = c->t;

    if (n < 2)
        return;
    if (identity) {
        qsort(rows, n, sizeof(uint64_t), oc_cmp_u64);
        return;
    }
    for (uint64_t p = 0; p < n; p++) {
        for (unsigned k = 0; k < PLAN_MINHASH_K; k++)
            tmp[p * W + k] = UINT64_MAX;
        tmp[p * W + PLAN_MINHASH_K] = rows[p];
    }
    for (uint64_t b = b0; b < b1; b++) {
        uint64_t h[PLAN_MINHASH_K];
        for (unsigned k = 0; k < PLAN_MINHASH_K; k++)
            h[k] = plan_minhash(k, b);
        for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
            if (OC_PLAN_ADDR_WHERE(addr[i]) != OC_PLAN_DISK_CACHE)
                continue;
            uint64_t *e = tmp + (uint64_t)c->mark[t->rows[i]] * W;
            for (unsigned k = 0; k < PLAN_MINHASH_K; k++)
                if (h[k] < e[k])
                    e[k] = h[k];
        }
    }
    qsort(tmp, n, W * sizeof(uint64_t), cmp_sig);
    for (uint64_t p = 0; p < n; p++)
        rows[p] = tmp[p * W + PLAN_MINHASH_K];
}
