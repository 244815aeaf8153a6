/*
 * fuzz_npy.c — libFuzzer target for oc_npy_parse_header: any byte string
 * must parse or fail cleanly, without crashing, reading out of bounds or
 * leaking; a header that parses must survive format -> parse unchanged.
 *
 * Place in the data flow: tests (dataset/npy.c). Replayed over
 * tests/fuzz/corpus/npy by replay_main.c in every test run.
 * Thread-safety: single-threaded. Ownership: no state between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t out[OC_NPY_HEADER_BYTES];
    struct oc_npy_header h, back;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    /* an exact-size copy, so ASan sees any read past the input */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int rc = oc_npy_parse_header(buf, size, "fuzz.npy", &h, &err);
    if (rc == OC_OK) {
        uint64_t n;
        (void)oc_npy_n_elems(&h, &n, &err);
        if (h.data_offset > size || h.ndim > OC_NPY_MAX_DIMS)
            abort();
        if (oc_npy_format_header(h.dtype, h.ndim, h.shape, out, &err) != OC_OK)
            abort();
        if (oc_npy_parse_header(out, sizeof(out), "fuzz.npy", &back, &err) != OC_OK)
            abort();
        if (back.dtype != h.dtype || back.ndim != h.ndim ||
            memcmp(back.shape, h.shape, sizeof(h.shape)) != 0)
            abort();
    } else if (rc != OC_ERR_FORMAT || !strstr(err.msg, "fuzz.npy")) {
        abort();
    }
    free(buf);
    if (oc_mem_n_live() != live0)
        abort();
    return 0;
}
