/*
 * cpu_philox.c — eight Philox4x32-10 blocks at once, for dropout's masks:
 * counters (stream, b0 .. b0 + 7) under key seed, the same numbers as eight
 * oc_rng_block calls (core/rng.c).
 *
 *   oc_nn_philox_x8 ─► AVX2 here?  yes ─► philox_x8_avx2: the 8 blocks are the 8
 *                                         32-bit lanes of 4 registers; a round's
 *                                         32x32->64 products are 2 vpmuludq per
 *                                         register (even lanes, odd lanes)
 *                                  no  ─► oc_nn_philox_x8_scalar: eight oc_rng_block
 *
 * GCC does not vectorize the widening multiplies of a lane-wise scalar form:
 * its 64-bit imuls made dropout cost 2.7 ns an element on one core. Integer
 * arithmetic is exact, so both forms give the same bits. The round's
 * constants are core's (offcore/rng.h).
 *
 * Place in the data flow: nn CPU backend; cpu_elem.c's dropout.
 * Thread-safety: pure functions.
 * Ownership: the caller's out array.
 */
#include "cpu_int.h"
#include "offcore/rng.h"

void oc_nn_philox_x8_scalar(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4])
{
    for (unsigned l = 0; l < 8; l++)
        oc_rng_block(seed, stream, b0 + l, out[l]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#    include <immintrin.h>

#    define OC_NN_AVX2 __attribute__((target("avx2")))

/* The 64-bit products of c's eight 32-bit lanes by m: their low and high halves, lane-wise. */
OC_NN_AVX2 static inline void mul_lanes(__m256i c, __m256i m, __m256i *lo, __m256i *hi)
{
    __m256i even = _mm256_mul_epu32(c, m);                       /* lanes 0, 2, 4, 6 */
    __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m); /* lanes 1, 3, 5, 7 */
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

OC_NN_AVX2 static void philox_x8_avx2(uint64_t seed, uint64_t stream, uint64_t b0,
                                      uint32_t out[8][4])
{
    uint32_t lo[8], hi[8];
    for (unsigned l = 0; l < 8; l++) {
        lo[l] = (uint32_t)(b0 + l);
        hi[l] = (uint32_t)((b0 + l) >> 32);
    }
    __m256i c0 = _mm256_set1_epi32((int)(uint32_t)stream);
    __m256i c1 = _mm256_set1_epi32((int)(uint32_t)(stream >> 32));
    __m256i c2 = _mm256_loadu_si256((const __m256i *)lo);
    __m256i c3 = _mm256_loadu_si256((const __m256i *)hi);
    __m256i m0 = _mm256_set1_epi32((int)OC_RNG_PHILOX_M0),
            m1 = _mm256_set1_epi32((int)OC_RNG_PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        __m256i lo0, hi0, lo1, hi1;
        mul_lanes(c0, m0, &lo0, &hi0);
        mul_lanes(c2, m1, &lo1, &hi1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += OC_RNG_PHILOX_W0;
        k1 += OC_RNG_PHILOX_W1;
    }
    /* lanes to blocks: out[l] = (c0[l], c1[l], c2[l], c3[l]) */
    __m256i a = _mm256_unpacklo_epi32(c0, c1), b = _mm256_unpackhi_epi32(c0, c1);
    __m256i c = _mm256_unpacklo_epi32(c2, c3), d = _mm256_unpackhi_epi32(c2, c3);
    __m256i r04 = _mm256_unpacklo_epi64(a, c), r15 = _mm256_unpackhi_epi64(a, c);
    __m256i r26 = _mm256_unpacklo_epi64(b, d), r37 = _mm256_unpackhi_epi64(b, d);
    __m256i *o = (__m256i *)out;
    _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(r04, r15, 0x20)); /* blocks 0, 1 */
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(r26, r37, 0x20)); /* blocks 2, 3 */
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(r04, r15, 0x31)); /* blocks 4, 5 */
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(r26, r37, 0x31)); /* blocks 6, 7 */
}

int oc_nn_philox_x8_vector(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4])
{
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    philox_x8_avx2(seed, stream, b0, out);
    return 1;
}
#else
int oc_nn_philox_x8_vector(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4])
{
    (void)seed, (void)stream, (void)b0, (void)out;
    return 0;
}
#endif

void oc_nn_philox_x8(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t out[8][4])
{
    if (!oc_nn_philox_x8_vector(seed, stream, b0, out))
        oc_nn_philox_x8_scalar(seed, stream, b0, out);
}
