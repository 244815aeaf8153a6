/*
 * rng.h — counter-based random numbers (Philox4x32-10) keyed by a seed and up
 * to three stream ids, e.g. (seed, epoch, batch) or (seed, node, layer).
 *
 * Place in the data flow: core; used wherever randomness must not depend on
 * thread ids or call order (sampling, shuffles, the generator, dropout).
 * Thread-safety: a struct oc_rng is owned by one thread; two generators built
 * from the same (seed, ids) yield the same sequence on any thread.
 */
#ifndef OFFCORE_RNG_H
#define OFFCORE_RNG_H

#include <stdint.h>

struct oc_rng {
    uint32_t key[2];
    uint32_t ctr[4];
    uint32_t out[4];
    unsigned n_out; /* unread words left in out[] */
};

/* A stream for (seed, a, b, c): independent of every other tuple. */
static inline void oc_rng_init(struct oc_rng *r, uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
static inline uint32_t oc_rng_u32(struct oc_rng *r);
uint64_t oc_rng_u64(struct oc_rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
static inline uint64_t oc_rng_below(struct oc_rng *r, uint64_t n);
/* oc_rng_below for n > 2^32 - 1. */
uint64_t oc_rng_below_wide(struct oc_rng *r, uint64_t n);
/* Uniform float in [0, 1) with 24 random bits; double with 53. */
float oc_rng_uniform(struct oc_rng *r);
double oc_rng_uniform_f64(struct oc_rng *r);
/* Standard normal (Box–Muller, both values used in turn is not done: stateless per call). */
float oc_rng_normal(struct oc_rng *r);

/* Philox4x32-10's round multipliers and key increments (Salmon et al. 2011). */
#define OC_RNG_PHILOX_M0 0xD2511F53u
#define OC_RNG_PHILOX_M1 0xCD9E8D57u
#define OC_RNG_PHILOX_W0 0x9E3779B9u
#define OC_RNG_PHILOX_W1 0xBB67AE85u

/* Philox4x32-10: out = Philox(key, ctr). Inline so element-wise kernels can unroll it. */
static inline void oc_rng_philox10(const uint32_t key_in[2], const uint32_t ctr_in[4],
                                   uint32_t out[4])
{
    uint32_t k0 = key_in[0], k1 = key_in[1];
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)OC_RNG_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)OC_RNG_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += OC_RNG_PHILOX_W0;
        k1 += OC_RNG_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* One Philox block as a pure function: out = Philox(key = seed, counter = (a, b)). */
static inline void oc_rng_block(uint64_t seed, uint64_t a, uint64_t b, uint32_t out[4])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32)};
    oc_rng_philox10(key, ctr, out);
}
/* A 64-bit mix of (seed, x): splitmix64 finalizer; for hashing ids. */
static inline uint64_t oc_rng_mix64(uint64_t seed, uint64_t x)
{
    uint64_t z = x + seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The generator's hot calls are inline: the sampler draws one number per sampled edge. */
static inline void oc_rng_init(struct oc_rng *r, uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
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

static inline uint32_t oc_rng_u32(struct oc_rng *r)
{
    if (r->n_out == 0) {
        oc_rng_philox10(r->key, r->ctr, r->out);
        if (++r->ctr[0] == 0)
            r->ctr[1]++;
        r->n_out = 4;
    }
    return r->out[4 - r->n_out--];
}

static inline uint64_t oc_rng_below(struct oc_rng *r, uint64_t n)
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
    return oc_rng_below_wide(r, n);
}

#endif
