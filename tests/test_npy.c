/*
 * test_npy.c — dtype tables, f16 <-> f32 conversion (rounding, NaN, Inf,
 * subnormals), .npy header parse/format (numpy-written headers, versions
 * 1-3, rejected variants), the streaming writer (size, CRC-32, shape
 * enforcement, fault injection) and load_as conversions with range checks.
 *
 * Place in the data flow: tests of dataset/npy.c and dataset/dtype.c.
 * Thread-safety: single-threaded. Ownership: files live in oc_test_tmpdir().
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <zlib.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

/* ---- dtype ---------------------------------------------------------------- */

OC_TEST(dtype_tables)
{
    OC_CHECK(oc_dtype_size(OC_DTYPE_U8) == 1);
    OC_CHECK(oc_dtype_size(OC_DTYPE_F16) == 2);
    OC_CHECK(oc_dtype_size(OC_DTYPE_I32) == 4);
    OC_CHECK(oc_dtype_size(OC_DTYPE_U64) == 8);
    OC_CHECK(strcmp(oc_dtype_descr(OC_DTYPE_F32), "<f4") == 0);
    OC_CHECK(strcmp(oc_dtype_descr(OC_DTYPE_U8), "|u1") == 0);
    OC_CHECK(strcmp(oc_dtype_name(OC_DTYPE_U64), "u64") == 0);
    for (int i = 0; i < OC_DTYPE_COUNT; i++) {
        enum oc_dtype t;
        OC_CHECK(oc_dtype_from_name(oc_dtype_name((enum oc_dtype)i), &t) == OC_OK);
        OC_CHECK(t == (enum oc_dtype)i);
    }
    enum oc_dtype t = OC_DTYPE_U8;
    OC_CHECK(oc_dtype_from_name("float16", &t) == OC_OK && t == OC_DTYPE_F16);
    OC_CHECK(oc_dtype_from_name("f17", &t) == OC_ERR_ARG);
    OC_CHECK(oc_dtype_size(OC_DTYPE_COUNT) == 0);
}

static uint32_t fbits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

static float fval(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

OC_TEST(f16_known_values)
{
    OC_CHECK(oc_f32_to_f16(0.0f) == 0x0000);
    OC_CHECK(oc_f32_to_f16(-0.0f) == 0x8000);
    OC_CHECK(oc_f32_to_f16(1.0f) == 0x3c00);
    OC_CHECK(oc_f32_to_f16(-2.0f) == 0xc000);
    OC_CHECK(oc_f32_to_f16(0.333333333f) == 0x3555);
    OC_CHECK(oc_f32_to_f16(65504.0f) == 0x7bff);
    OC_CHECK(oc_f32_to_f16(65519.0f) == 0x7bff); /* rounds down to max */
    OC_CHECK(oc_f32_to_f16(65520.0f) == 0x7c00); /* tie to even = inf */
    OC_CHECK(oc_f32_to_f16(1e10f) == 0x7c00);
    OC_CHECK(oc_f32_to_f16(-INFINITY) == 0xfc00);
    uint16_t nan = oc_f32_to_f16(NAN);
    OC_CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x03ff) != 0);
    /* NaN whose payload lives only in low bits stays NaN */
    uint16_t nan2 = oc_f32_to_f16(fval(0x7f800001u));
    OC_CHECK((nan2 & 0x7c00) == 0x7c00 && (nan2 & 0x03ff) != 0);
    /* subnormals: 2^-24 is the smallest */
    OC_CHECK(oc_f32_to_f16(ldexpf(1.0f, -24)) == 0x0001);
    OC_CHECK(oc_f32_to_f16(ldexpf(1.0f, -25)) == 0x0000);           /* tie to even: 0 */
    OC_CHECK(oc_f32_to_f16(ldexpf(1.0f, -25) * 1.0001f) == 0x0001); /* above the tie */
    OC_CHECK(oc_f32_to_f16(ldexpf(3.0f, -25)) == 0x0002);           /* 1.5 ulp: tie to 2 */
    OC_CHECK(oc_f32_to_f16(ldexpf(1.0f, -14)) == 0x0400);           /* smallest normal */
    OC_CHECK(oc_f32_to_f16(ldexpf(1023.0f, -24)) == 0x03ff);        /* largest subnormal */
    OC_CHECK(oc_f32_to_f16(ldexpf(2047.0f, -25)) == 0x0400);        /* carries into normal */
    /* normal ties: 1 + 2^-11 is halfway between 1 and 1+2^-10 -> even (1.0) */
    OC_CHECK(oc_f32_to_f16(1.0f + ldexpf(1.0f, -11)) == 0x3c00);
    OC_CHECK(oc_f32_to_f16(1.0f + ldexpf(3.0f, -11)) == 0x3c02);
    OC_CHECK(oc_f32_to_f16(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20)) == 0x3c01);

    OC_CHECK(oc_f16_to_f32(0x3c00) == 1.0f);
    OC_CHECK(oc_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    OC_CHECK(oc_f16_to_f32(0x03ff) == ldexpf(1023.0f, -24));
    OC_CHECK(oc_f16_to_f32(0x7bff) == 65504.0f);
    OC_CHECK(isinf(oc_f16_to_f32(0x7c00)) && oc_f16_to_f32(0xfc00) < 0);
    OC_CHECK(isnan(oc_f16_to_f32(0x7e00)));
    OC_CHECK(fbits(oc_f16_to_f32(0x8000)) == 0x80000000u);
}

OC_TEST(f16_roundtrip_all)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = oc_f16_to_f32((uint16_t)h);
        uint16_t back = oc_f32_to_f16(f);
        if (isnan(f)) {
            bad += !((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
            bad += (back & 0x8000) != (h & 0x8000);
        } else {
            bad += back != h;
        }
    }
    OC_CHECK(bad == 0);
    /* every f32 between two adjacent halfs rounds to the nearer one */
    int wrong = 0;
    for (uint32_t x = 0x38800000u; x < 0x47800000u; x += 4099) { /* normal range, sampled */
        float f = fval(x);
        uint16_t h = oc_f32_to_f16(f);
        float lo = oc_f16_to_f32(h);
        if (isinf(lo)) { /* only at and above 65520 */
            wrong += f < 65520.0f;
            continue;
        }
        float other = oc_f16_to_f32((uint16_t)(f >= lo ? h + 1 : h - 1));
        if (fabsf(f - lo) > fabsf(f - other))
            wrong++;
    }
    OC_CHECK(wrong == 0);
}

/* ---- header ---------------------------------------------------------------- */

/* A header as numpy writes it: dict, spaces, '\n', total a multiple of 64. */
static size_t numpy_header(uint8_t *buf, int major, const char *dict)
{
    size_t prefix = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (prefix + dl + 1 + 63) / 64 * 64;
    size_t hlen = total - prefix;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    if (major == 1) {
        buf[8] = (uint8_t)(hlen & 0xff);
        buf[9] = (uint8_t)(hlen >> 8);
    } else {
        buf[8] = (uint8_t)(hlen & 0xff);
        buf[9] = (uint8_t)(hlen >> 8);
        buf[10] = buf[11] = 0;
    }
    memset(buf + prefix, ' ', hlen);
    memcpy(buf + prefix, dict, dl);
    buf[total - 1] = '\n';
    return total;
}

OC_TEST(header_numpy_written)
{
    uint8_t buf[256];
    struct oc_npy_header h;
    struct oc_err err;
    size_t n = numpy_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }");
    OC_CHECK(n == 128);
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK(h.dtype == OC_DTYPE_F32 && h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 4);
    OC_CHECK(h.data_offset == 128 && h.fortran_order == 0);
    uint64_t ne;
    OC_CHECK_OK(oc_npy_n_elems(&h, &ne, &err), &err);
    OC_CHECK(ne == 12);

    n = numpy_header(buf, 2, "{\"descr\":\"<i8\",\"fortran_order\":False,\"shape\":(7,)}");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK(h.dtype == OC_DTYPE_I64 && h.ndim == 1 && h.shape[0] == 7 && h.data_offset == 64);

    n = numpy_header(buf, 3, "{'shape': (), 'fortran_order': False, 'descr': '|u1'}");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK(h.dtype == OC_DTYPE_U8 && h.ndim == 0);
    OC_CHECK_OK(oc_npy_n_elems(&h, &ne, &err), &err);
    OC_CHECK(ne == 1);

    /* 1-D fortran order is the same bytes: accepted */
    n = numpy_header(buf, 1, "{'descr': '<f2', 'fortran_order': True, 'shape': (5,), }");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK(h.dtype == OC_DTYPE_F16 && h.shape[0] == 5);

    /* 2-D Fortran order is reported; a reader assuming C order refuses it, naming the file
       (not a (1, N) or (N, 1) array: the same bytes either way) */
    n = numpy_header(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK(h.fortran_order == 1 && h.ndim == 2);
    OC_CHECK_ERR(oc_npy_require_c_order(&h, "x.npy", &err), OC_ERR_FORMAT, &err,
                 "x.npy: fortran_order True not supported");
    n = numpy_header(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK_OK(oc_npy_require_c_order(&h, "x.npy", &err), &err);

    n = numpy_header(buf, 1, "{'descr': '<u4', 'fortran_order': False, 'shape': (0, 16), }");
    OC_CHECK_OK(oc_npy_parse_header(buf, n, "x.npy", &h, &err), &err);
    OC_CHECK_OK(oc_npy_n_elems(&h, &ne, &err), &err);
    OC_CHECK(ne == 0);
}

static void expect_bad(const char *dict, const char *substr)
{
    uint8_t buf[512];
    struct oc_npy_header h;
    struct oc_err err;
    size_t n = numpy_header(buf, 1, dict);
    OC_CHECK_ERR(oc_npy_parse_header(buf, n, "bad.npy", &h, &err), OC_ERR_FORMAT, &err, substr);
    OC_CHECK(strstr(err.msg, "bad.npy") != NULL);
}

OC_TEST(header_rejects)
{
    expect_bad("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", "big-endian");
    expect_bad("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "object dtype");
    expect_bad("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "unsupported dtype");
    expect_bad("{'descr': '<f4', 'shape': (3,), }", "lacks 'fortran_order'");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", "unexpected key");
    expect_bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
               "duplicate");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", "negative");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }", "malformed");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5), }",
               "more than 4 dimensions");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
               "overflows");
    expect_bad("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", "fortran_order");
    expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", "trailing");
    expect_bad("['descr', '<f4']", "expected '{'");
    expect_bad("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }",
               "quoted string");

    uint8_t buf[64] = "\x93NUMPY\x01\x00\xff\xff{";
    struct oc_npy_header h;
    struct oc_err err;
    OC_CHECK_ERR(oc_npy_parse_header(buf, 11, "t.npy", &h, &err), OC_ERR_FORMAT, &err,
                 "truncated .npy header");
    OC_CHECK_ERR(oc_npy_parse_header(buf, 5, "t.npy", &h, &err), OC_ERR_FORMAT, &err, "truncated");
    uint8_t big[12] = "\x93NUMPY\x02\x00\xff\xff\xff\x7f";
    OC_CHECK_ERR(oc_npy_parse_header(big, 12, "t.npy", &h, &err), OC_ERR_FORMAT, &err, "too large");
    OC_CHECK_ERR(oc_npy_parse_header("PK\x03\x04zipfile!", 14, "t.npy", &h, &err), OC_ERR_FORMAT,
                 &err, "bad magic");
    uint8_t v9[16] = "\x93NUMPY\x09\x00\x00\x00";
    OC_CHECK_ERR(oc_npy_parse_header(v9, 16, "t.npy", &h, &err), OC_ERR_FORMAT, &err,
                 "version 9.0");

    struct oc_npy_header ov = {
        .dtype = OC_DTYPE_F32, .ndim = 3, .shape = {1ull << 32, 1ull << 32, 2}};
    uint64_t ne;
    OC_CHECK_ERR(oc_npy_n_elems(&ov, &ne, &err), OC_ERR_FORMAT, &err, "overflow");
}

OC_TEST(header_format_roundtrip)
{
    static uint8_t out[OC_NPY_HEADER_BYTES];
    struct oc_npy_header h;
    struct oc_err err;
    uint64_t shape[4] = {123456789012ull, 7, 0, 3};
    for (unsigned nd = 0; nd <= 4; nd++) {
        OC_CHECK_OK(oc_npy_format_header(OC_DTYPE_F16, nd, shape, out, &err), &err);
        OC_CHECK(out[OC_NPY_HEADER_BYTES - 1] == '\n' && out[8] == (4086 & 0xff) && out[9] == 15);
        OC_CHECK_OK(oc_npy_parse_header(out, sizeof(out), "f", &h, &err), &err);
        OC_CHECK(h.ndim == nd && h.dtype == OC_DTYPE_F16 && h.data_offset == 4096);
        for (unsigned i = 0; i < nd; i++)
            OC_CHECK(h.shape[i] == shape[i]);
    }
    OC_CHECK(memcmp(out + 10, "{'descr': '<f2', 'fortran_order': False, 'shape': (", 51) == 0);
    OC_CHECK_OK(oc_npy_format_header(OC_DTYPE_U64, 1, shape, out, &err), &err);
    OC_CHECK(strstr((char *)out + 10, "'shape': (123456789012,), }") != NULL);
    OC_CHECK_ERR(oc_npy_format_header(OC_DTYPE_U64, 5, shape, out, &err), OC_ERR_ARG, &err,
                 "dimensions");
    /* one byte short of the header */
    OC_CHECK_ERR(oc_npy_parse_header(out, OC_NPY_HEADER_BYTES - 1, "f", &h, &err), OC_ERR_FORMAT,
                 &err, "truncated");
}

/* ---- writer, read_header, load_as ---------------------------------------- */

static uint32_t file_crc(const char *path, uint64_t *size)
{
    char *data;
    size_t len;
    struct oc_err err;
    if (oc_read_file(path, 0, &data, &len, &err) != OC_OK)
        return 0;
    uint32_t c = (uint32_t)crc32(0, (const Bytef *)data, (uInt)len);
    *size = len;
    oc_free(data);
    return c;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    OC_CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

OC_TEST(writer_roundtrip)
{
    const char *dir = oc_test_tmpdir();
    char path[700];
    snprintf(path, sizeof(path), "%s/a.npy", dir);
    struct oc_err err;
    struct oc_npy_writer *w;
    uint64_t shape[2] = {3, 2};
    float vals[6] = {1, 2, 3, 4, 5, 6.5f};
    uint64_t live0 = oc_mem_n_live();
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_F32, 2, shape, &w, &err), &err);
    OC_CHECK_OK(oc_npy_writer_append(w, vals, 8, &err), &err);
    OC_CHECK_OK(oc_npy_writer_append(w, vals + 2, 16, &err), &err);
    OC_CHECK_ERR(oc_npy_writer_append(w, vals, 4, &err), OC_ERR_ARG, &err, "past the end");
    uint64_t bytes = 0, fsize = 0;
    uint32_t crc = 0;
    OC_CHECK_OK(oc_npy_writer_close(w, &bytes, &crc, &err), &err);
    OC_CHECK(bytes == 4096 + 24);
    OC_CHECK(crc == file_crc(path, &fsize) && fsize == bytes && crc != 0);

    struct oc_npy_header h;
    OC_CHECK_OK(oc_npy_read_header(path, &h, &err), &err);
    OC_CHECK(h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 2 && h.data_offset == 4096);

    void *data;
    uint64_t rows, cols;
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), &err);
    OC_CHECK(rows == 3 && cols == 2 && memcmp(data, vals, sizeof(vals)) == 0);
    oc_free(data);
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F16, &data, &rows, &cols, &err), &err);
    OC_CHECK(((uint16_t *)data)[5] == oc_f32_to_f16(6.5f) && ((uint16_t *)data)[0] == 0x3c00);
    oc_free(data);
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_I64, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "f32 value 6.5 at index 5 is not an integer");
    OC_CHECK(data == NULL && strstr(err.msg, path));
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(writer_wrong_size_and_abort)
{
    const char *dir = oc_test_tmpdir();
    char path[700];
    snprintf(path, sizeof(path), "%s/short.npy", dir);
    struct oc_err err;
    struct oc_npy_writer *w;
    uint64_t n = 4, live0 = oc_mem_n_live();
    uint32_t x[4] = {1, 2, 3, 4};
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_U32, 1, &n, &w, &err), &err);
    OC_CHECK_OK(oc_npy_writer_append(w, x, 12, &err), &err);
    OC_CHECK_ERR(oc_npy_writer_close(w, NULL, NULL, &err), OC_ERR_ARG, &err,
                 "12 of the shape's 16");
    OC_CHECK(!oc_path_exists(path));
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_U32, 1, &n, &w, &err), &err);
    oc_npy_writer_abort(w);
    OC_CHECK(!oc_path_exists(path));
    OC_CHECK(oc_mem_n_live() == live0);
    /* empty array */
    n = 0;
    uint64_t bytes;
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_U64, 1, &n, &w, &err), &err);
    OC_CHECK_OK(oc_npy_writer_close(w, &bytes, NULL, &err), &err);
    OC_CHECK(bytes == 4096);
    void *data;
    uint64_t rows, cols;
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_U32, &data, &rows, &cols, &err), &err);
    OC_CHECK(rows == 0 && cols == 1 && data != NULL);
    oc_free(data);
    OC_CHECK(oc_mem_n_live() == live0);
}

/* Writes an array with a numpy-style (short) header to exercise generic readers. */
static void write_npy(const char *path, const char *descr, const char *shape, const void *data,
                      size_t bytes)
{
    uint8_t buf[4096];
    char dict[256];
    snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
             shape);
    size_t n = numpy_header(buf, 1, dict);
    memcpy(buf + n, data, bytes);
    write_file(path, buf, n + bytes);
}

OC_TEST(load_as_conversions)
{
    const char *dir = oc_test_tmpdir();
    char path[700];
    struct oc_err err;
    void *data;
    uint64_t rows, cols, live0 = oc_mem_n_live();
    snprintf(path, sizeof(path), "%s/c.npy", dir);

    int64_t i64[4] = {0, -1, 2147483647, 5};
    write_npy(path, "<i8", "(2, 2)", i64, sizeof(i64));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_I32, &data, &rows, &cols, &err), &err);
    OC_CHECK(rows == 2 && cols == 2);
    OC_CHECK(((int32_t *)data)[1] == -1 && ((int32_t *)data)[2] == 2147483647);
    oc_free(data);
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_U64, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "i64 value -1 at index 1 out of range for u64");
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F64, &data, &rows, &cols, &err), &err);
    OC_CHECK(((double *)data)[1] == -1.0);
    oc_free(data);

    i64[2] = 2147483648ll;
    write_npy(path, "<i8", "(4,)", i64, sizeof(i64));
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_I32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "value 2147483648 at index 2 out of range for i32");
    i64[2] = INT64_MIN;
    write_npy(path, "<i8", "(4,)", i64, sizeof(i64));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_I64, &data, &rows, &cols, &err), &err);
    OC_CHECK(((int64_t *)data)[2] == INT64_MIN);
    oc_free(data);

    uint64_t u64[3] = {7, 4294967295ull, 4294967296ull};
    write_npy(path, "<u8", "(3,)", u64, sizeof(u64));
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_U32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "u64 value 4294967296 at index 2 out of range for u32");
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), &err);
    OC_CHECK(((float *)data)[0] == 7.0f);
    oc_free(data);

    double f64[4] = {1.0, -3.0, 1e300, NAN};
    write_npy(path, "<f8", "(4,)", f64, sizeof(f64));
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "value 1e+300 at index 2 out of range for f32");
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_I32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "index 2 out of range for i32");
    f64[2] = 70000.0;
    write_npy(path, "<f8", "(4,)", f64, sizeof(f64));
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_F16, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "out of range for f16");
    f64[2] = 2.5;
    write_npy(path, "<f8", "(4,)", f64, sizeof(f64));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), &err);
    OC_CHECK(((float *)data)[2] == 2.5f && isnan(((float *)data)[3]));
    oc_free(data);
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_I64, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "f64 value 2.5 at index 2 is not an integer");
    f64[2] = 3.0;
    f64[3] = -4.0;
    write_npy(path, "<f8", "(4,)", f64, sizeof(f64));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_I32, &data, &rows, &cols, &err), &err);
    OC_CHECK(((int32_t *)data)[3] == -4 && ((int32_t *)data)[1] == -3);
    oc_free(data);

    uint16_t f16[3] = {0x3c00, 0x7c00, 0x0001};
    write_npy(path, "<f2", "(3,)", f16, sizeof(f16));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), &err);
    OC_CHECK(((float *)data)[0] == 1.0f && isinf(((float *)data)[1]) &&
             ((float *)data)[2] == ldexpf(1.0f, -24));
    oc_free(data);

    uint8_t b1[3] = {1, 0, 1};
    write_npy(path, "|b1", "(3,)", b1, sizeof(b1));
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_I32, &data, &rows, &cols, &err), &err);
    OC_CHECK(((int32_t *)data)[2] == 1);
    oc_free(data);

    /* 3-D and truncated files */
    write_npy(path, "<f4", "(1, 1, 1)", f64, 4);
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "3-D array");
    write_npy(path, "<f4", "(5,)", f64, 8);
    OC_CHECK_ERR(oc_npy_load_as(path, OC_DTYPE_F32, &data, &rows, &cols, &err), OC_ERR_FORMAT, &err,
                 "truncated");
    struct oc_npy_header h;
    OC_CHECK_ERR(oc_npy_read_header(path, &h, &err), OC_ERR_FORMAT, &err, "truncated");
    OC_CHECK(strstr(err.msg, path) != NULL);
    write_file(path, "\x93NUMPY\x01", 7);
    OC_CHECK_ERR(oc_npy_read_header(path, &h, &err), OC_ERR_FORMAT, &err, "truncated .npy header");
    snprintf(path, sizeof(path), "%s/none.npy", dir);
    OC_CHECK(oc_npy_read_header(path, &h, &err) == OC_ERR_NOTFOUND);
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(long_header_v2)
{
    /* a version-2 header longer than one page (numpy writes those for huge dicts) */
    const char *dir = oc_test_tmpdir();
    char path[700];
    snprintf(path, sizeof(path), "%s/long.npy", dir);
    size_t hlen = 6000 - 12, total = 6000 + 3 * 4;
    uint8_t *buf = calloc(1, total);
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (uint8_t)(hlen & 0xff);
    buf[9] = (uint8_t)(hlen >> 8);
    memset(buf + 12, ' ', hlen);
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
    memcpy(buf + 12, dict, strlen(dict));
    buf[6000 - 1] = '\n';
    int32_t v[3] = {-5, 6, 7};
    memcpy(buf + 6000, v, 12);
    write_file(path, buf, total);
    free(buf);
    struct oc_err err;
    void *data;
    uint64_t rows, cols;
    OC_CHECK_OK(oc_npy_load_as(path, OC_DTYPE_I64, &data, &rows, &cols, &err), &err);
    OC_CHECK(rows == 3 && ((int64_t *)data)[0] == -5 && ((int64_t *)data)[2] == 7);
    oc_free(data);
}

OC_TEST(fault_injection)
{
    const char *dir = oc_test_tmpdir();
    char path[700];
    snprintf(path, sizeof(path), "%s/f.npy", dir);
    struct oc_err err;
    uint64_t shape[1] = {3000}, live0 = oc_mem_n_live();
    static uint64_t vals[3000];
    for (int i = 0; i < 3000; i++)
        vals[i] = (uint64_t)i * 7;
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        /* writes: ENOSPC at every write position */
        int n_fired = 0;
        for (uint64_t nth = 1; nth < 50; nth++) {
            struct oc_npy_writer *w = NULL;
            fault_arm_mode(mode, OC_FAULT_WRITE, nth, ENOSPC);
            int rc = oc_npy_writer_open(path, OC_DTYPE_U64, 1, shape, &w, &err);
            if (rc == OC_OK) {
                rc = oc_npy_writer_append(w, vals, sizeof(vals), &err);
                if (rc == OC_OK)
                    rc = oc_npy_writer_close(w, NULL, NULL, &err);
                else
                    oc_npy_writer_abort(w);
            }
            int fired = oc_fault_fired(OC_FAULT_WRITE);
            oc_fault_disarm_all();
            if (!fired) {
                OC_CHECK(rc == OC_OK);
                break;
            }
            n_fired++;
            OC_CHECK(rc == OC_ERR_NOSPC);
            OC_CHECK(!oc_path_exists(path));
            OC_CHECK(oc_mem_n_live() == live0);
        }
        OC_CHECK(n_fired >= 1);
        /* reads: EIO and short reads while loading */
        for (int kind = 0; kind < 2; kind++) {
            for (uint64_t nth = 1; nth < 50; nth++) {
                void *data = NULL;
                uint64_t r, c;
                fault_arm_mode(mode, OC_FAULT_READ, nth, kind ? 0 : EIO);
                int rc = oc_npy_load_as(path, OC_DTYPE_U32, &data, &r, &c, &err);
                int fired = oc_fault_fired(OC_FAULT_READ);
                oc_fault_disarm_all();
                if (!fired) {
                    OC_CHECK(nth > 1); /* the reads before failed the load */
                    OC_CHECK(rc == OC_OK && ((uint32_t *)data)[2999] == 2999 * 7);
                    oc_free(data);
                    break;
                }
                OC_CHECK(rc != OC_OK && data == NULL && strstr(err.msg, path));
                OC_CHECK(oc_mem_n_live() == live0);
            }
        }
        /* allocations */
        for (uint64_t nth = 1; nth < 50; nth++) {
            void *data = NULL;
            uint64_t r, c;
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = oc_npy_load_as(path, OC_DTYPE_F32, &data, &r, &c, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            if (!fired) {
                OC_CHECK(rc == OC_OK && nth > 1);
                oc_free(data);
                break;
            }
            OC_CHECK(rc == OC_ERR_NOMEM && data == NULL);
            OC_CHECK(oc_mem_n_live() == live0);
        }
    }
}

OC_TEST_MAIN()
