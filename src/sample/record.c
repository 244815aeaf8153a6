/*
 * record.c — a batch as a compact little-endian binary record and back, with
 * a CRC-32 trailer and strict validation (layout in include/offcore/sample.h).
 *
 * Place in the data flow: sample; the strategies that sample ahead (plan:
 * ginex, diskgnn) write records, the pipeline reads them back. Reading is the
 * trust boundary: a record from disk may be truncated, corrupt or hostile, so
 * every count is checked against the record's length before anything is
 * allocated, and every id against its range before the batch is used.
 * Thread-safety: pure functions over caller-owned buffers and batches.
 * Ownership: the caller owns buf; the batch read into owns its arrays.
 */
#include <string.h>

#include "offcore/io.h"
#include "sample/sample_int.h"

#define REC_MAGIC      0x4253434Fu /* "OCSB" read as a little-endian u32 */
#define REC_HEAD       40u         /* fixed header bytes before the per-block counts */
#define REC_BLOCK_HEAD 24u         /* n_src, n_dst, n_edges */
#define REC_CRC        4u
#define REC_FLAG_IDS32 1u

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#    define REC_HOST_LE 1
#else
#    define REC_HOST_LE 0
#endif

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32s(uint8_t *p, const uint32_t *a, uint64_t n)
{
    if (REC_HOST_LE) {
        memcpy(p, a, (size_t)n * 4);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        oc_put_le32(p + 4 * i, a[i]);
}

static int ids_fit_u32(const struct oc_sample_batch *b)
{
    for (uint64_t i = 0; i < b->n_input; i++)
        if (b->input_ids[i] > UINT32_MAX)
            return 0;
    return 1;
}

uint64_t oc_sample_batch_record_bytes(const struct oc_sample_batch *b)
{
    uint64_t n = REC_HEAD + (uint64_t)REC_BLOCK_HEAD * b->n_layers;
    n += b->n_input * (ids_fit_u32(b) ? 4u : 8u);
    for (uint32_t l = 0; l < b->n_layers; l++)
        n += 4 * (b->blocks[l].n_dst + b->blocks[l].n_edges);
    return n + REC_CRC;
}

int oc_sample_batch_serialize(const struct oc_sample_batch *b, void *buf, size_t cap, size_t *len,
                              struct oc_err *err)
{
    *len = 0;
    if (b->n_layers < 1 || b->n_layers > OC_SAMPLE_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "batch record: batch has %u layers (empty batch?)",
                      b->n_layers);
    for (uint32_t l = 0; l < b->n_layers; l++) {
        const struct oc_sample_block *blk = &b->blocks[l];
        for (uint64_t i = 0; i < blk->n_dst; i++)
            if (blk->indptr[i + 1] - blk->indptr[i] > UINT32_MAX)
                return OC_ERR(err, OC_ERR_UNSUPPORTED,
                              "batch record: node %llu of block %u has %llu in-edges (> 2^32-1)",
                              (unsigned long long)i, l,
                              (unsigned long long)(blk->indptr[i + 1] - blk->indptr[i]));
    }
    uint64_t need = oc_sample_batch_record_bytes(b);
    if (need > SIZE_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "batch record: %llu bytes is too large",
                      (unsigned long long)need);
    if (cap < need) {
        *len = (size_t)need;
        return OC_ERR(err, OC_ERR_ARG, "batch record: buffer of %zu bytes, %llu bytes needed", cap,
                      (unsigned long long)need);
    }
    int ids32 = ids_fit_u32(b);
    uint8_t *p = buf;
    oc_put_le32(p, REC_MAGIC);
    put_u16(p + 4, OC_SAMPLE_RECORD_VERSION);
    put_u16(p + 6, (uint16_t)b->n_layers);
    oc_put_le32(p + 8, ids32 ? REC_FLAG_IDS32 : 0);
    oc_put_le32(p + 12, 0);
    oc_put_le64(p + 16, b->epoch);
    oc_put_le64(p + 24, b->batch_index);
    oc_put_le64(p + 32, b->n_input);
    uint8_t *q = p + REC_HEAD;
    for (uint32_t l = 0; l < b->n_layers; l++, q += REC_BLOCK_HEAD) {
        oc_put_le64(q, b->blocks[l].n_src);
        oc_put_le64(q + 8, b->blocks[l].n_dst);
        oc_put_le64(q + 16, b->blocks[l].n_edges);
    }
    for (uint64_t i = 0; i < b->n_input; i++) {
        if (ids32) {
            oc_put_le32(q, (uint32_t)b->input_ids[i]);
            q += 4;
        } else {
            oc_put_le64(q, b->input_ids[i]);
            q += 8;
        }
    }
    for (uint32_t l = 0; l < b->n_layers; l++) {
        const struct oc_sample_block *blk = &b->blocks[l];
        for (uint64_t i = 0; i < blk->n_dst; i++, q += 4)
            oc_put_le32(q, (uint32_t)(blk->indptr[i + 1] - blk->indptr[i]));
        put_u32s(q, blk->indices, blk->n_edges);
        q += 4 * blk->n_edges;
    }
    oc_put_le32(q, oc_crc32(0, p, (uint64_t)(q - p)));
    *len = (size_t)need;
    return OC_OK;
}

/* a += b·m with overflow detection; returns 0 on overflow. */
static int add_mul(uint64_t *a, uint64_t b, uint64_t m)
{
    if (m && b > (UINT64_MAX - *a) / m)
        return 0;
    *a += b * m;
    return 1;
}

static int read_record(const uint8_t *p, size_t len, uint64_t n_nodes, struct oc_sample_batch *out,
                       struct oc_err *err)
{
    const uint64_t min = REC_HEAD + REC_BLOCK_HEAD + REC_CRC;
    if (len < min)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "batch record: truncated: %zu bytes, a record has at least %llu", len,
                      (unsigned long long)min);
    if (oc_get_le32(p) != REC_MAGIC)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: bad magic 0x%08x (not a batch record)",
                      oc_get_le32(p));
    uint16_t version = oc_get_le16(p + 4);
    if (version != OC_SAMPLE_RECORD_VERSION)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: version %u is not supported (want %d)",
                      version, OC_SAMPLE_RECORD_VERSION);
    uint32_t n_layers = oc_get_le16(p + 6);
    if (n_layers < 1 || n_layers > OC_SAMPLE_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: %u layers, expected 1 to %d", n_layers,
                      OC_SAMPLE_MAX_LAYERS);
    uint32_t flags = oc_get_le32(p + 8);
    if (flags & ~REC_FLAG_IDS32)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: unknown flags 0x%x", flags);
    if (oc_get_le32(p + 12) != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: reserved field is 0x%x, not 0",
                      oc_get_le32(p + 12));
    uint64_t heads = REC_HEAD + (uint64_t)REC_BLOCK_HEAD * n_layers;
    if (len < heads + REC_CRC)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "batch record: truncated: %zu bytes, %u block headers need %llu", len,
                      n_layers, (unsigned long long)(heads + REC_CRC));
    uint64_t n_input = oc_get_le64(p + 32);
    uint64_t need = heads + REC_CRC;
    int ok = add_mul(&need, n_input, flags & REC_FLAG_IDS32 ? 4 : 8);
    for (uint32_t l = 0; l < n_layers && ok; l++) {
        const uint8_t *h = p + REC_HEAD + (uint64_t)REC_BLOCK_HEAD * l;
        ok = add_mul(&need, oc_get_le64(h + 8), 4) && add_mul(&need, oc_get_le64(h + 16), 4);
    }
    if (!ok || need > len)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "batch record: truncated: %zu bytes, its counts need %s%llu", len,
                      ok ? "" : "more than ", (unsigned long long)(ok ? need : UINT64_MAX));
    if (need < len)
        return OC_ERR(err, OC_ERR_FORMAT, "batch record: %llu trailing bytes after the record",
                      (unsigned long long)(len - need));
    uint32_t crc = oc_crc32(0, p, len - REC_CRC);
    if (crc != oc_get_le32(p + len - REC_CRC))
        return OC_ERR(err, OC_ERR_FORMAT,
                      "batch record: CRC mismatch (stored 0x%08x, computed 0x%08x)",
                      oc_get_le32(p + len - REC_CRC), crc);

    /* counts: each block's sources are the previous block's destinations */
    for (uint32_t l = 0; l < n_layers; l++) {
        const uint8_t *h = p + REC_HEAD + (uint64_t)REC_BLOCK_HEAD * l;
        uint64_t n_src = oc_get_le64(h), n_dst = oc_get_le64(h + 8);
        uint64_t want_src = l == 0 ? n_input : oc_get_le64(h - REC_BLOCK_HEAD + 8);
        if (n_src != want_src)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "batch record: block %u has %llu sources, but %s has %llu", l,
                          (unsigned long long)n_src,
                          l == 0 ? "the input" : "the previous block's destinations",
                          (unsigned long long)want_src);
        if (n_dst > n_src)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "batch record: block %u has more destinations (%llu) than sources (%llu)",
                          l, (unsigned long long)n_dst, (unsigned long long)n_src);
        if (n_src > (uint64_t)UINT32_MAX + 1)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "batch record: block %u has %llu sources, local ids are u32", l,
                          (unsigned long long)n_src);
    }

    int rc = smp_batch_reserve_input(out, n_input ? n_input : 1, err);
    if (rc != OC_OK)
        return rc;
    const uint8_t *q = p + heads;
    for (uint64_t i = 0; i < n_input; i++) {
        uint64_t id;
        if (flags & REC_FLAG_IDS32) {
            id = oc_get_le32(q);
            q += 4;
        } else {
            id = oc_get_le64(q);
            q += 8;
        }
        if (id >= n_nodes)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "batch record: input id %llu (position %llu) is >= n_nodes %llu",
                          (unsigned long long)id, (unsigned long long)i,
                          (unsigned long long)n_nodes);
        out->input_ids[i] = id;
    }
    for (uint32_t l = 0; l < n_layers; l++) {
        const uint8_t *h = p + REC_HEAD + (uint64_t)REC_BLOCK_HEAD * l;
        uint64_t n_src = oc_get_le64(h), n_dst = oc_get_le64(h + 8), n_edges = oc_get_le64(h + 16);
        struct oc_sample_block *blk = &out->blocks[l];
        rc = smp_block_reserve(blk, n_dst, n_edges, err);
        if (rc != OC_OK)
            return rc;
        uint64_t sum = 0;
        blk->indptr[0] = 0;
        for (uint64_t i = 0; i < n_dst; i++, q += 4) {
            sum += oc_get_le32(q); /* n_dst < 2^33: cannot wrap */
            blk->indptr[i + 1] = sum;
        }
        if (sum != n_edges)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "batch record: block %u degrees sum to %llu, but it has %llu edges", l,
                          (unsigned long long)sum, (unsigned long long)n_edges);
        for (uint64_t e = 0; e < n_edges; e++, q += 4) {
            uint32_t u = oc_get_le32(q);
            if (u >= n_src)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "batch record: block %u edge %llu has local source %u >= %llu", l,
                              (unsigned long long)e, u, (unsigned long long)n_src);
            blk->indices[e] = u;
        }
        blk->n_src = n_src;
        blk->n_dst = n_dst;
        blk->n_edges = n_edges;
    }
    out->n_layers = n_layers;
    out->epoch = oc_get_le64(p + 16);
    out->batch_index = oc_get_le64(p + 24);
    out->n_input = n_input;
    out->n_seeds = out->blocks[n_layers - 1].n_dst;
    return OC_OK;
}

int oc_sample_batch_deserialize(const void *buf, size_t len, uint64_t n_nodes,
                                struct oc_sample_batch *out, struct oc_err *err)
{
    smp_batch_reset(out);
    if (!buf && len)
        return OC_ERR(err, OC_ERR_ARG, "batch record: buffer is NULL");
    int rc = read_record(buf, len, n_nodes, out, err);
    if (rc != OC_OK)
        smp_batch_reset(out);
    return rc;
}
