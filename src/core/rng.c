/*
 * rng.c — Philox4x32-10 (Salmon et al., SC'11), a counter-based generator:
 * output block = Philox(key, counter). The key is the seed; the upper half of
 * the counter is a hash of the stream ids; the lower half counts blocks. Any
 * value is a pure function of (seed, ids, position), so results never depend
 * on which thread asked or in which order.
 *
 * Place in the data flow: core; used by sample, train, generate.
 * Thread-safety: a struct oc_rng is owned by one thread; the rest is pure.
 */
#include <math.h>

#include "offcore/rng.h"

uint64_t oc_rng_u64(struct oc_rng *r)
{
    uint64_t hi = oc_rng_u32(r);
    return (hi << 32) | oc_rng_u32(r);
}

uint64_t oc_rng_below_wide(struct oc_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = oc_rng_u64(r);
    } while (x >= limit);
    return x % n;
}

float oc_rng_uniform(struct oc_rng *r)
{
    return (float)(oc_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

double oc_rng_uniform_f64(struct oc_rng *r)
{
    return (double)(oc_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

float oc_rng_normal(struct oc_rng *r)
{
    /* Box–Muller; u1 in (0, 1] so log is finite. */
    double u1 = 1.0 - oc_rng_uniform_f64(r);
    double u2 = oc_rng_uniform_f64(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
