/*
 * gen_corpus.c — writes the seed corpora of the checkpoint, ginex
 * superbatch and diskgnn chunk fuzz targets: small valid files made by the
 * real writers (checkpoint) or the documented layouts (plan/superbatch.h,
 * diskgnn_window.c) around batch records from the sample_record corpus,
 * plus truncated and corrupted variants.
 *
 *   fuzz_gen_corpus <tests/fuzz/corpus>
 *
 * Place in the data flow: tests (fuzz harness); run by hand when a format
 * changes, its output committed. Thread-safety: single-threaded.
 * Ownership: everything is freed before exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz_fixtures.h"
#include "train/train_int.h"

static const char *root;

static void put_file(const char *sub, const char *name, const void *data, size_t len)
{
    char dir[4096], path[4300];
    struct oc_err err;
    snprintf(dir, sizeof(dir), "%s/%s", root, sub);
    if (oc_mkdir_p(dir, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void fix_tail_crc(uint8_t *b, size_t len)
{
    oc_put_le32(b + len - 4, (uint32_t)crc32(0L, b, (uInt)(len - 4)));
}

static void gen_checkpoint(void)
{
    struct oc_nn_backend *be = NULL;
    struct oc_nn_model *m = fuzz_ckpt_model(&be);
    struct oc_err err;
    char dir[] = "/tmp/oc-fuzz-gen-XXXXXX", path[200];
    if (!m || !mkdtemp(dir))
        exit(1);
    struct oc_train_position pos = {2, 1, 0.5, 0.25, 321};
    if (oc_train_checkpoint_save(dir, FUZZ_CKPT_FP, m, &pos, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/checkpoint.bin", dir);
    char *d = NULL;
    size_t len = 0;
    if (oc_read_file(path, 0, &d, &len, &err) != OC_OK)
        exit(1);
    uint8_t *b = (uint8_t *)d;
    put_file("checkpoint", "valid.bin", b, len);
    put_file("checkpoint", "truncated_half.bin", b, len / 2);
    put_file("checkpoint", "magic_only.bin", b, 8);
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    c[len / 2] ^= 0x40; /* CRC left stale */
    put_file("checkpoint", "bad_crc.bin", c, len);
    memcpy(c, b, len);
    c[8] = 2; /* version 2 */
    fix_tail_crc(c, len);
    put_file("checkpoint", "version2.bin", c, len);
    memcpy(c, b, len);
    c[16] ^= 1; /* another run's fingerprint */
    fix_tail_crc(c, len);
    put_file("checkpoint", "other_fingerprint.bin", c, len);
    memcpy(c, b, len);
    oc_put_le32(c + 12, 0xfffffff0u); /* fingerprint length past the end */
    fix_tail_crc(c, len);
    put_file("checkpoint", "fp_len_huge.bin", c, len);
    memcpy(c, b, len - 12);
    memcpy(c + len - 12, b + len - 4, 4);
    fix_tail_crc(c, len - 8); /* model state 8 bytes short */
    put_file("checkpoint", "state_short.bin", c, len - 8);
    free(c);
    oc_free(d);
    oc_rm_rf(dir, &err);
    oc_nn_model_free(m);
    oc_nn_backend_free(be);
}

/* A serialized batch record of the golden 2-layer batch, renumbered (oc_free it). */
static uint8_t *record(const struct oc_sample_batch *g, uint64_t epoch, uint64_t batch, size_t *len)
{
    struct oc_sample_batch b = *g;
    struct oc_err err;
    b.epoch = epoch;
    b.batch_index = batch;
    size_t cap = (size_t)oc_sample_batch_record_bytes(&b);
    uint8_t *r = oc_alloc(cap, "gen", &err);
    if (!r || oc_sample_batch_serialize(&b, r, cap, len, &err) != OC_OK) {
        fprintf(stderr, "serialize: %s\n", err.msg);
        exit(1);
    }
    return r;
}

static void gen_superbatch(const struct oc_sample_batch *g)
{
    struct pl_sb_expect x = fuzz_sb_expect();
    uint8_t *f = calloc(1, 1 << 20);
    size_t off = 0, first_len = 0;
    for (uint64_t it = 0; it < x.most; it++) {
        uint64_t t = x.first + it;
        size_t len;
        uint8_t *r = record(g, t / x.nb, t % x.nb, &len);
        oc_put_le64(f + off, len);
        memcpy(f + off + 8, r, len);
        off += 8 + len;
        if (it == 0)
            first_len = len;
        oc_free(r);
    }
    uint8_t *c = malloc(off + 4096);
    pl_sb_footer(&x, x.most, 0, f + off);
    put_file("ginex_superbatch", "valid.ocsb", f, off + PL_SB_FOOTER);
    put_file("ginex_superbatch", "footer_only.ocsb", f + off, PL_SB_FOOTER);
    put_file("ginex_superbatch", "truncated.ocsb", f, off / 2);
    /* cut short after 2 batches (flag 1) */
    size_t two = 2 * 8 + 2 * first_len;
    memcpy(c, f, two);
    pl_sb_footer(&x, 2, 1, c + two);
    put_file("ginex_superbatch", "cut_short.ocsb", c, two + PL_SB_FOOTER);
    /* 2 batches without the flag: refused */
    pl_sb_footer(&x, 2, 0, c + two);
    put_file("ginex_superbatch", "short_no_flag.ocsb", c, two + PL_SB_FOOTER);
    /* another plan's key */
    memcpy(c, f, off + PL_SB_FOOTER);
    c[off + 8] ^= 1;
    put_file("ginex_superbatch", "other_key.ocsb", c, off + PL_SB_FOOTER);
    /* a record length past the end */
    memcpy(c, f, off + PL_SB_FOOTER);
    oc_put_le64(c, 1ull << 62);
    put_file("ginex_superbatch", "len_huge.ocsb", c, off + PL_SB_FOOTER);
    /* bytes between the batches and the footer */
    memcpy(c, f, off);
    memset(c + off, 0xab, 24);
    pl_sb_footer(&x, x.most, 0, c + off + 24);
    put_file("ginex_superbatch", "gap.ocsb", c, off + 24 + PL_SB_FOOTER);
    /* the first record is of another batch (epoch 0) */
    size_t len;
    uint8_t *r = record(g, 0, 0, &len);
    memcpy(c, f, off + PL_SB_FOOTER);
    if (len == first_len)
        memcpy(c + 8, r, len);
    oc_free(r);
    put_file("ginex_superbatch", "wrong_batch.ocsb", c, off + PL_SB_FOOTER);
    free(c);
    free(f);
}

static void gen_chunk(const struct oc_sample_batch *g)
{
    struct dg_chunk_expect x = fuzz_chunk_expect();
    size_t rec_len;
    uint8_t *r = record(g, x.epoch, x.index, &rec_len);
    uint64_t n = g->n_input, n_packed = n < 4 ? n : 4;
    size_t len = OC_PLAN_CHUNK_HEADER + rec_len + 8 * n + n_packed * x.row_bytes;
    uint8_t *c = calloc(1, len + 64), *h = c;
    memcpy(h, "OCDGCK1", 8);
    oc_put_le64(h + 8, x.epoch);
    oc_put_le64(h + 16, x.index);
    oc_put_le64(h + 24, n);
    oc_put_le64(h + 32, n_packed);
    oc_put_le64(h + 40, rec_len);
    memcpy(c + OC_PLAN_CHUNK_HEADER, r, rec_len);
    uint8_t *addr = c + OC_PLAN_CHUNK_HEADER + rec_len;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t code;
        if (k < n_packed)
            code = OC_PLAN_ADDR(OC_PLAN_PACKED, k);
        else if (k % 2)
            code = OC_PLAN_ADDR(OC_PLAN_CPU, k % x.n_cpu_rows);
        else
            code = OC_PLAN_ADDR(OC_PLAN_DISK_CACHE, k % x.seg_rows);
        oc_put_le64(addr + 8 * k, code);
    }
    for (uint64_t i = 0; i < n_packed * x.row_bytes; i++)
        addr[8 * n + i] = (uint8_t)(i * 7);
    oc_put_le32(h + 48, oc_crc32(0, c + OC_PLAN_CHUNK_HEADER, rec_len + 8 * n));
    oc_put_le32(h + 56, 1);
    oc_put_le32(h + 60, oc_crc32(0, h, 60));
    put_file("diskgnn_chunk", "valid.bin", c, len);
    put_file("diskgnn_chunk", "header_only.bin", c, OC_PLAN_CHUNK_HEADER);
    put_file("diskgnn_chunk", "no_packed_rows.bin", c, len - n_packed * x.row_bytes);
    uint8_t *d = malloc(len + 64);
    /* an address out of its tier's range (CRCs made right again) */
    memcpy(d, c, len);
    oc_put_le64(d + OC_PLAN_CHUNK_HEADER + rec_len + 8 * (n - 1),
                OC_PLAN_ADDR(OC_PLAN_DISK_CACHE, x.seg_rows));
    oc_put_le32(d + 48, oc_crc32(0, d + OC_PLAN_CHUNK_HEADER, rec_len + 8 * n));
    oc_put_le32(d + 60, oc_crc32(0, d, 60));
    put_file("diskgnn_chunk", "addr_out_of_range.bin", d, len);
    /* the tier 3 that does not exist */
    oc_put_le64(d + OC_PLAN_CHUNK_HEADER + rec_len, 3ull << 62);
    oc_put_le32(d + 48, oc_crc32(0, d + OC_PLAN_CHUNK_HEADER, rec_len + 8 * n));
    oc_put_le32(d + 60, oc_crc32(0, d, 60));
    put_file("diskgnn_chunk", "tier3.bin", d, len);
    /* counts that overflow when multiplied */
    memcpy(d, c, len);
    oc_put_le64(d + 24, 1ull << 61);
    oc_put_le64(d + 32, 1ull << 61);
    oc_put_le32(d + 60, oc_crc32(0, d, 60));
    put_file("diskgnn_chunk", "huge_counts.bin", d, len);
    /* another batch's chunk */
    memcpy(d, c, len);
    oc_put_le64(d + 16, x.index + 1);
    oc_put_le32(d + 60, oc_crc32(0, d, 60));
    put_file("diskgnn_chunk", "other_batch.bin", d, len);
    /* record CRC stale */
    memcpy(d, c, len);
    d[OC_PLAN_CHUNK_HEADER + 3] ^= 0x10;
    put_file("diskgnn_chunk", "record_crc_stale.bin", d, len);
    free(d);
    free(c);
    oc_free(r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s tests/fuzz/corpus\n", argv[0]);
        return 2;
    }
    root = argv[1];
    char path[4096];
    snprintf(path, sizeof(path), "%s/sample_record/golden_2layer.bin", root);
    char *d = NULL;
    size_t len = 0;
    struct oc_err err;
    struct oc_sample_batch g;
    oc_sample_batch_init(&g);
    if (oc_read_file(path, 0, &d, &len, &err) != OC_OK ||
        oc_sample_batch_deserialize(d, len, FUZZ_N_NODES, &g, &err) != OC_OK || g.n_layers != 2) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 1;
    }
    gen_checkpoint();
    gen_superbatch(&g);
    gen_chunk(&g);
    oc_sample_batch_deinit(&g);
    oc_free(d);
    return 0;
}
