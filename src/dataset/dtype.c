/*
 * dtype.c — the element types of dataset arrays: sizes, numpy descriptors
 * ("<f4"), short names ("f32"), indices' dtype for a node count, and IEEE
 * half <-> single conversion with round-to-nearest-even (NaN, infinities and
 * subnormals preserved).
 *
 * Place in the data flow: dataset (used by npy.c, manifest.c, importers,
 * the generator and the feature store when it widens f16 rows).
 * Thread-safety: pure functions over constant tables.
 * Ownership: returned strings are static.
 */
#include <string.h>

#include "offcore/dataset.h"

struct dtype_row {
    size_t size;
    const char *descr;
    const char *name;
    const char *alias; /* numpy's name, also accepted by oc_dtype_from_name */
};

static const struct dtype_row dtype_table[OC_DTYPE_COUNT] = {
    [OC_DTYPE_U8] = {1, "|u1", "u8", "uint8"},     [OC_DTYPE_I32] = {4, "<i4", "i32", "int32"},
    [OC_DTYPE_U32] = {4, "<u4", "u32", "uint32"},  [OC_DTYPE_I64] = {8, "<i8", "i64", "int64"},
    [OC_DTYPE_U64] = {8, "<u8", "u64", "uint64"},  [OC_DTYPE_F16] = {2, "<f2", "f16", "float16"},
    [OC_DTYPE_F32] = {4, "<f4", "f32", "float32"}, [OC_DTYPE_F64] = {8, "<f8", "f64", "float64"},
};

enum oc_dtype oc_ds_index_dtype_for(uint64_t n_nodes)
{
    return n_nodes <= ((uint64_t)1 << 32) ? OC_DTYPE_U32 : OC_DTYPE_U64;
}

size_t oc_dtype_size(enum oc_dtype t)
{
    if ((unsigned)t >= OC_DTYPE_COUNT)
        return 0;
    return dtype_table[t].size;
}

const char *oc_dtype_descr(enum oc_dtype t)
{
    if ((unsigned)t >= OC_DTYPE_COUNT)
        return "?";
    return dtype_table[t].descr;
}

const char *oc_dtype_name(enum oc_dtype t)
{
    if ((unsigned)t >= OC_DTYPE_COUNT)
        return "?";
    return dtype_table[t].name;
}

int oc_dtype_from_name(const char *name, enum oc_dtype *t)
{
    if (!name)
        return OC_ERR_ARG;
    for (int i = 0; i < OC_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].name) == 0 || strcmp(name, dtype_table[i].alias) == 0) {
            *t = (enum oc_dtype)i;
            return OC_OK;
        }
    }
    return OC_ERR_ARG;
}

/*
 * Bit-level conversion after numpy's npy_floatbits_to_halfbits: the value is
 * rounded once, to nearest with ties to even; a carry out of the significand
 * correctly bumps the exponent (and overflows to infinity above 65519.99).
 */
uint16_t oc_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t f_exp = x & 0x7f800000u;
    uint32_t f_sig = x & 0x007fffffu;

    if (f_exp >= 0x47800000u) { /* |f| >= 65536, infinity or NaN */
        if (f_exp == 0x7f800000u && f_sig != 0) {
            /* NaN: keep the top payload bits, force it quiet so it stays a NaN. */
            return (uint16_t)(sign | 0x7e00u | (f_sig >> 13));
        }
        return (uint16_t)(sign | 0x7c00u);
    }
    if (f_exp <= 0x38000000u) {  /* |f| < 2^-14: half subnormal or zero */
        if (f_exp < 0x33000000u) /* |f| < 2^-25: rounds to zero */
            return sign;
        uint32_t e = f_exp >> 23;
        uint32_t sig = 0x00800000u + f_sig;
        /* Keep 13 guard bits; the shift drops up to 11 low bits, which only
         * matter for telling an exact tie from a value just above it. */
        uint32_t lost = x & ((1u << (113 - e)) - 1u);
        sig >>= (113 - e);
        if ((sig & 0x00003fffu) != 0x00001000u || lost != 0)
            sig += 0x00001000u;
        return (uint16_t)(sign + (sig >> 13));
    }
    uint32_t h_exp = (f_exp - 0x38000000u) >> 13;
    if ((f_sig & 0x00003fffu) != 0x00001000u)
        f_sig += 0x00001000u;
    return (uint16_t)(sign + (uint16_t)((f_sig >> 13) + h_exp));
}

float oc_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t h_exp = (uint32_t)h & 0x7c00u;
    uint32_t h_sig = (uint32_t)h & 0x03ffu;
    uint32_t x;

    if (h_exp == 0) {
        if (h_sig == 0) {
            x = sign;
        } else { /* subnormal: normalize */
            uint32_t shift = 0;
            h_sig <<= 1;
            while ((h_sig & 0x0400u) == 0) {
                h_sig <<= 1;
                shift++;
            }
            x = sign + ((127u - 15u - shift) << 23) + ((h_sig & 0x03ffu) << 13);
        }
    } else if (h_exp == 0x7c00u) {
        x = sign | 0x7f800000u | (h_sig << 13);
    } else {
        x = sign + ((((uint32_t)h & 0x7fffu) + 0x1c000u) << 13);
    }
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}
