/*
 * fuzz_sample_record.c — libFuzzer target for oc_sample_batch_deserialize:
 * any byte string must load or fail cleanly with OC_ERR_FORMAT, without
 * crashing, reading out of bounds or leaking. Each input is tried twice: as
 * given, and with its last 4 bytes replaced by the correct CRC-32, so that
 * mutations reach the structural checks behind the checksum. A record that
 * loads must hold the batch invariants and survive serialize -> deserialize.
 *
 * Place in the data flow: tests (sample/record.c). Replayed over
 * tests/fuzz/corpus/sample_record by replay_main.c in every test run.
 * Thread-safety: single-threaded. Ownership: no state between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_twice.h"
#include "offcore/sample.h"

#define FUZZ_N_NODES 1000000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_loaded(const struct oc_sample_batch *b)
{
    if (b->n_layers < 1 || b->n_layers > OC_SAMPLE_MAX_LAYERS)
        abort();
    if (b->blocks[0].n_src != b->n_input || b->blocks[b->n_layers - 1].n_dst != b->n_seeds)
        abort();
    for (uint32_t l = 0; l < b->n_layers; l++) {
        const struct oc_sample_block *blk = &b->blocks[l];
        if (blk->n_dst > blk->n_src || (l > 0 && blk->n_src != b->blocks[l - 1].n_dst))
            abort();
        if (blk->indptr[0] != 0 || blk->indptr[blk->n_dst] != blk->n_edges)
            abort();
        for (uint64_t e = 0; e < blk->n_edges; e++)
            if (blk->indices[e] >= blk->n_src)
                abort();
    }
    for (uint64_t i = 0; i < b->n_input; i++)
        if (b->input_ids[i] >= FUZZ_N_NODES)
            abort();
}

static void try_one(void *ctx, const uint8_t *buf, size_t size)
{
    (void)ctx;
    struct oc_sample_batch b, back;
    struct oc_err err;
    oc_sample_batch_init(&b);
    oc_sample_batch_init(&back);
    int rc = oc_sample_batch_deserialize(buf, size, FUZZ_N_NODES, &b, &err);
    if (rc == OC_OK) {
        check_loaded(&b);
        size_t len = (size_t)oc_sample_batch_record_bytes(&b), got;
        uint8_t *rec = malloc(len);
        if (!rec)
            abort();
        if (oc_sample_batch_serialize(&b, rec, len, &got, &err) != OC_OK || got != len)
            abort();
        if (oc_sample_batch_deserialize(rec, len, FUZZ_N_NODES, &back, &err) != OC_OK)
            abort();
        if (!oc_sample_batch_equal(&b, &back))
            abort();
        free(rec);
    } else if (rc != OC_ERR_FORMAT || b.n_layers != 0) {
        abort();
    }
    oc_sample_batch_deinit(&b);
    oc_sample_batch_deinit(&back);
}

/* The record's trailing CRC-32, over the bytes before it. */
static int repair(uint8_t *buf, size_t size)
{
    if (size < 4 || size - 4 > UINT32_MAX)
        return 0;
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(size - 4));
    for (int i = 0; i < 4; i++)
        buf[size - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_twice(data, size, try_one, repair, NULL);
}
