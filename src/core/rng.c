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

uint64_t oc_rng_mix64(uint64_t seed, uint64_t x)
{
    uint64_t z = x + seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void oc_rng_init(struct oc_rng *r, uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t stream = oc_rng_mix64(oc_rng_mix64(oc_rng_mix64(0x5EED, a), b), c);
    r->key[0] = (uint32_t)seed;
    r->key[1] = (uint32_t)(seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = 0;
    r->ctr[2] = (uint32_t)stream;
    r->ctr[3] = (uint32_t)(stream >> 32);
    r->n_out = 0;
}

uint32_t oc_rng_u32(struct oc_rng *r)
{
    if (r->n_out == 0) {
        oc_rng_philox10(r->key, r->ctr, r->out);
        if (++r->ctr[0] == 0)
            r->ctr[1]++;
        r->n_out = 4;
    }
    return r->out[4 - r->n_out--];
}

uint64_t oc_rng_u64(struct oc_rng *r)
{
    uint64_t hi = oc_rng_u32(r);
    return (hi << 32) | oc_rng_u32(r);
}

uint64_t oc_rng_below(struct oc_rng *r, uint64_t n)
{
    if (n <= UINT32_MAX) {
        /* Lemire's multiply-shift with rejection. */
        uint32_t n32 = (uint32_t)n;
        uint64_t m = (uint64_t)oc_rng_u32(r) * n32;
        uint32_t lo = (uint32_t)m;
        if (lo < n32) {
            uint32_t t = (uint32_t)(-n32) % n32;
            while (lo < t) {
                m = (uint64_t)oc_rng_u32(r) * n32;
                lo = (uint32_t)m;
            }
        }
        return m >> 32;
    }
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
