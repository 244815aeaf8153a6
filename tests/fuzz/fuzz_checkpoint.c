/*
 * fuzz_checkpoint.c — libFuzzer target for train_checkpoint_parse: any byte
 * string must load into the model or fail cleanly (OC_ERR_FORMAT, or
 * OC_ERR_ARG for another run's fingerprint) with a message naming the file,
 * without crashing, reading out of bounds or leaking. Each input is tried
 * twice: as given, and with its last 4 bytes replaced by the correct CRC-32,
 * so that mutations reach the checks behind the checksum.
 *
 * Place in the data flow: tests (train/checkpoint.c). Replayed over
 * tests/fuzz/corpus/checkpoint (written by gen_corpus.c) in every test run.
 * Thread-safety: single-threaded. Ownership: the model lives for the process.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_fixtures.h"
#include "fuzz_twice.h"
#include "train/train_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_one(void *ctx, const uint8_t *buf, size_t size)
{
    struct oc_nn_model *m = ctx;
    struct oc_train_position pos;
    struct oc_err err;
    memset(&pos, 0, sizeof(pos));
    oc_err_clear(&err);
    int rc = train_checkpoint_parse(buf, size, FUZZ_CKPT_PATH, FUZZ_CKPT_FP, m, &pos, &err);
    if (rc != OC_OK && rc != OC_ERR_FORMAT && rc != OC_ERR_ARG)
        abort();
    if (rc != OC_OK && (err.status != rc || !strstr(err.msg, FUZZ_CKPT_PATH)))
        abort();
}

/* The checkpoint's trailing CRC-32, over the bytes before it. */
static int repair(uint8_t *buf, size_t size)
{
    if (size <= 4)
        return 0;
    oc_put_le32(buf + size - 4, (uint32_t)crc32(0L, buf, (uInt)(size - 4)));
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct oc_nn_backend *be;
    static struct oc_nn_model *m;
    if (!m && !(m = fuzz_ckpt_model(&be)))
        abort();
    return fuzz_twice(data, size, try_one, repair, m);
}
