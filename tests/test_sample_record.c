/*
 * test_sample_record.c — the binary record of a batch: round trips (u32 and
 * u64 ids, 1 to 3 layers, empty blocks), the exact size, and rejection of
 * every truncation, every single-bit flip, trailing bytes, and records whose
 * CRC is valid but whose contents are not (ids and local ids out of range,
 * counts that do not chain, degrees that do not sum).
 *
 * Place in the data flow: tests of sample.
 * Thread-safety: single-threaded.
 * Ownership: everything allocated here is freed here.
 */
#include <zlib.h>

#include "sample_util.h"

static void sample_one(const struct tgraph *t, uint32_t n_layers, const int32_t *f,
                       const uint64_t *seeds, uint64_t n, struct oc_sample_batch *b)
{
    struct oc_err err;
    struct oc_sample_opts o = {.n_layers = n_layers, .seed = 42};
    memcpy(o.fanouts, f, n_layers * sizeof(int32_t));
    struct oc_sampler *s = NULL;
    OC_CHECK_OK(oc_sample_sampler_new(&t->g, &o, NULL, &s, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(s, 6, 321, seeds, n, b, &err), &err);
    oc_sample_sampler_free(s);
}

/* Serializes b into a malloc'd buffer; *len = its size. */
static uint8_t *to_record(const struct oc_sample_batch *b, size_t *len)
{
    struct oc_err err;
    size_t need = 0;
    OC_CHECK_ERR(oc_sample_batch_serialize(b, NULL, 0, &need, &err), OC_ERR_ARG, &err,
                 "bytes needed");
    OC_CHECK(need == oc_sample_batch_record_bytes(b));
    uint8_t *buf = malloc(need + 16);
    OC_CHECK_OK(oc_sample_batch_serialize(b, buf, need + 16, len, &err), &err);
    OC_CHECK(*len == need);
    return buf;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crc(uint8_t *buf, size_t len)
{
    put32(buf + len - 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(len - 4)));
}

OC_TEST(round_trip)
{
    struct tgraph t32, t64;
    tgraph_random(&t32, 3000, 80, 21, 0);
    tgraph_random(&t64, 3000, 80, 21, 1);
    uint64_t *perm = tperm(t32.g.n_nodes, 4);
    const int32_t f[3] = {4, 3, 2};
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    struct oc_err err;
    for (uint32_t L = 1; L <= 3; L++) {
        sample_one(&t32, L, f + 3 - L, perm, 50 * L, &a);
        size_t len;
        uint8_t *buf = to_record(&a, &len);
        OC_CHECK_OK(oc_sample_batch_deserialize(buf, len, t32.g.n_nodes, &b, &err), &err);
        OC_CHECK(oc_sample_batch_equal(&a, &b));
        OC_CHECK(b.epoch == 6 && b.batch_index == 321 && b.n_seeds == 50 * L);
        OC_CHECK(check_batch(&t32, &b, perm, 50 * L, L, f + 3 - L) == 0);
        /* the record is compact: 4 bytes per id (all < 2^32), degree and edge */
        uint64_t want = 40 + 24 * L + 4 * a.n_input + 4;
        for (uint32_t l = 0; l < L; l++)
            want += 4 * (a.blocks[l].n_dst + a.blocks[l].n_edges);
        OC_CHECK(len == want);
        free(buf);
    }
    /* ids >= 2^32 take the u64 path */
    sample_one(&t64, 2, f, perm, 20, &a);
    a.input_ids[a.n_input - 1] = (1ull << 40) + 5;
    size_t len;
    uint8_t *buf = to_record(&a, &len);
    OC_CHECK(len == oc_sample_batch_record_bytes(&a));
    OC_CHECK_OK(oc_sample_batch_deserialize(buf, len, 1ull << 41, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&a, &b));
    /* ... and is rejected against the real node count */
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, t64.g.n_nodes, &b, &err), OC_ERR_FORMAT,
                 &err, "input id 1099511627781");
    OC_CHECK(b.n_layers == 0);
    free(buf);
    /* an empty batch cannot be written */
    oc_sample_batch_deinit(&b);
    OC_CHECK_ERR(oc_sample_batch_serialize(&b, NULL, 0, &len, &err), OC_ERR_ARG, &err, "0 layers");
    free(perm);
    oc_sample_batch_deinit(&a);
    tgraph_free(&t32);
    tgraph_free(&t64);
}

OC_TEST(every_truncation_and_bit_flip_is_rejected)
{
    struct tgraph t;
    tgraph_random(&t, 500, 30, 22, 0);
    const int32_t f[2] = {3, 2};
    const uint64_t seeds[4] = {17, 3, 400, 250};
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    sample_one(&t, 2, f, seeds, 4, &a);
    size_t len;
    uint8_t *buf = to_record(&a, &len);
    OC_CHECK(len > 100 && len < 2000);
    struct oc_err err;
    int ok = 1;
    for (size_t cut = 0; cut < len; cut++) {
        int rc = oc_sample_batch_deserialize(buf, cut, t.g.n_nodes, &b, &err);
        if (rc != OC_ERR_FORMAT || !strstr(err.msg, "truncated") || b.n_layers != 0) {
            fprintf(stderr, "  truncation to %zu: %s\n", cut, err.msg);
            ok = 0;
        }
    }
    OC_CHECK(ok);
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    OC_CHECK_ERR(oc_sample_batch_deserialize(longer, len + 1, t.g.n_nodes, &b, &err), OC_ERR_FORMAT,
                 &err, "1 trailing bytes");
    free(longer);
    for (size_t bit = 0; bit < len * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = oc_sample_batch_deserialize(buf, len, t.g.n_nodes, &b, &err);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (rc != OC_ERR_FORMAT || b.n_layers != 0) {
            fprintf(stderr, "  bit flip %zu accepted\n", bit);
            ok = 0;
        }
    }
    OC_CHECK(ok);
    OC_CHECK_OK(oc_sample_batch_deserialize(buf, len, t.g.n_nodes, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&a, &b));
    free(buf);
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    tgraph_free(&t);
}

OC_TEST(valid_crc_bad_contents)
{
    struct tgraph t;
    tgraph_random(&t, 500, 30, 23, 0);
    const int32_t f[2] = {3, 2};
    const uint64_t seeds[3] = {17, 3, 400};
    struct oc_sample_batch a, b;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    sample_one(&t, 2, f, seeds, 3, &a);
    size_t len;
    uint8_t *good = to_record(&a, &len);
    uint8_t *buf = malloc(len);
    struct oc_err err;
    const uint64_t ids_at = 40 + 2 * 24;
    const uint64_t blk0_deg_at = ids_at + 4 * a.n_input;
    const uint64_t blk0_idx_at = blk0_deg_at + 4 * a.blocks[0].n_dst;
    OC_CHECK(a.blocks[0].n_edges > 0 && a.blocks[0].indptr[1] > 0);

    memcpy(buf, good, len);
    put32(buf, 0x12345678);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "bad magic");
    memcpy(buf, good, len);
    buf[4] = 2;
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "version 2");
    memcpy(buf, good, len);
    put32(buf + 12, 1);
    fix_crc(buf, len);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "reserved");
    memcpy(buf, good, len);
    buf[20] ^= 1; /* epoch: only the CRC can tell */
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "CRC mismatch");
    /* id out of range */
    memcpy(buf, good, len);
    put32(buf + ids_at + 4, 500);
    fix_crc(buf, len);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "input id 500 (position 1) is >= n_nodes 500");
    /* local source id out of range */
    memcpy(buf, good, len);
    put32(buf + blk0_idx_at, (uint32_t)a.blocks[0].n_src);
    fix_crc(buf, len);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "edge 0 has local source");
    /* degrees that move an edge from node 0 to node 1: sums still match, valid */
    memcpy(buf, good, len);
    put32(buf + blk0_deg_at, (uint32_t)a.blocks[0].indptr[1] - 1);
    put32(buf + blk0_deg_at + 4, (uint32_t)(a.blocks[0].indptr[2] - a.blocks[0].indptr[1]) + 1);
    fix_crc(buf, len);
    OC_CHECK_OK(oc_sample_batch_deserialize(buf, len, 500, &b, &err), &err);
    /* degrees that do not sum to n_edges */
    memcpy(buf, good, len);
    put32(buf + blk0_deg_at, (uint32_t)a.blocks[0].indptr[1] + 1);
    fix_crc(buf, len);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "degrees sum to");
    /* counts that do not chain: block 1's sources != block 0's destinations */
    memcpy(buf, good, len);
    put64(buf + 40 + 24, a.blocks[1].n_src + 1);
    fix_crc(buf, len);
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "block 1 has");
    /* a count so large its size overflows: reported as truncation, nothing allocated */
    memcpy(buf, good, len);
    put64(buf + 40 + 16, UINT64_MAX / 2);
    fix_crc(buf, len);
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(oc_sample_batch_deserialize(buf, len, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "truncated");
    OC_CHECK(oc_mem_n_live() == live);
    /* more destinations than sources */
    struct oc_sample_batch c;
    oc_sample_batch_init(&c);
    const int32_t one[1] = {0};
    sample_one(&t, 1, one, seeds, 3, &c);
    size_t clen;
    uint8_t *cbuf = to_record(&c, &clen); /* 3 sources, 3 destinations, 0 edges */
    put64(cbuf + 32, 2);
    put64(cbuf + 40, 2);
    /* drop one id (4 bytes) so the size still matches: degrees shift into place */
    memmove(cbuf + 40 + 24 + 8, cbuf + 40 + 24 + 12, clen - (40 + 24 + 12));
    clen -= 4;
    fix_crc(cbuf, clen);
    OC_CHECK_ERR(oc_sample_batch_deserialize(cbuf, clen, 500, &b, &err), OC_ERR_FORMAT, &err,
                 "more destinations (3) than sources (2)");
    free(cbuf);
    oc_sample_batch_deinit(&c);
    free(buf);
    free(good);
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    tgraph_free(&t);
}

OC_TEST_MAIN()
