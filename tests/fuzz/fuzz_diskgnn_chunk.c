/*
 * fuzz_diskgnn_chunk.c — libFuzzer target for dg_chunk_check and the batch
 * record inside a diskgnn chunk: any byte string must pass (then every
 * address must land inside the chunk or its tier, as the assembler assumes,
 * and the record must load or fail cleanly) or be refused with
 * OC_ERR_FORMAT naming the file, without crashing, reading out of bounds or
 * leaking. Each input is tried twice: as given, and with both CRCs (record +
 * address table, header) recomputed, so mutations reach the later checks.
 *
 * Place in the data flow: tests (store/diskgnn/diskgnn_pipe.c). Replayed over
 * tests/fuzz/corpus/diskgnn_chunk (written by gen_corpus.c) in every run.
 * Thread-safety: single-threaded. Ownership: no state between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fixtures.h"
#include "fuzz_twice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_one(void *ctx, const uint8_t *buf, size_t size)
{
    (void)ctx;
    struct dg_chunk_expect x = fuzz_chunk_expect();
    struct dg_chunk_info ci;
    struct oc_err err;
    oc_err_clear(&err);
    int rc = dg_chunk_check(buf, size, &x, FUZZ_CHUNK_PATH, 4096, &ci, &err);
    if (rc != OC_OK) {
        if (rc != OC_ERR_FORMAT || err.status != rc || !strstr(err.msg, FUZZ_CHUNK_PATH))
            abort();
        return;
    }
    /* what the assembler and the graph loader rely on */
    uint64_t meta = OC_PLAN_CHUNK_HEADER + ci.rec_bytes + 8 * ci.n_input;
    if (ci.n_packed > ci.n_input || meta > size || ci.n_packed * x.row_bytes > size - meta ||
        ci.n_dc + ci.n_cpu > ci.n_input)
        abort();
    const uint8_t *addr = buf + OC_PLAN_CHUNK_HEADER + ci.rec_bytes;
    for (uint64_t k = 0; k < ci.n_input; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k), idx = OC_PLAN_ADDR_INDEX(code);
        switch (OC_PLAN_ADDR_WHERE(code)) {
        case OC_PLAN_CPU:
            if (idx >= x.n_cpu_rows)
                abort();
            break;
        case OC_PLAN_PACKED:
            if (idx >= ci.n_packed)
                abort();
            break;
        case OC_PLAN_DISK_CACHE:
            if (idx >= x.seg_rows)
                abort();
            break;
        default:
            abort();
        }
    }
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    rc = oc_sample_batch_deserialize(buf + OC_PLAN_CHUNK_HEADER, (size_t)ci.rec_bytes, FUZZ_N_NODES,
                                     &b, &err);
    if (rc != OC_OK && rc != OC_ERR_FORMAT)
        abort();
    oc_sample_batch_deinit(&b);
}

/* The header's CRCs: of the record and address table (when they fit), and of the header. */
static int repair(uint8_t *buf, size_t size)
{
    if (size < OC_PLAN_CHUNK_HEADER)
        return 0;
    uint64_t n = oc_get_le64(buf + 24), rec = oc_get_le64(buf + 40);
    uint64_t room = size - OC_PLAN_CHUNK_HEADER;
    if (rec <= room && n <= (room - rec) / 8)
        oc_put_le32(buf + 48, oc_crc32(0, buf + OC_PLAN_CHUNK_HEADER, rec + 8 * n));
    oc_put_le32(buf + 60, oc_crc32(0, buf, 60));
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_twice(data, size, try_one, repair, NULL);
}
