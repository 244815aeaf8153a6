/*
 * fuzz_manifest.c — libFuzzer target for oc_manifest_parse: any text must
 * parse or fail cleanly, without crashing, reading out of bounds or leaking;
 * a manifest that parses must survive format -> parse unchanged.
 *
 * Place in the data flow: tests (dataset/manifest.c). Replayed over
 * tests/fuzz/corpus/manifest by replay_main.c in every test run.
 * Thread-safety: single-threaded. Ownership: no state between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oc_manifest m, back;
    struct oc_err err;
    char *text = NULL;
    uint64_t live0 = oc_mem_n_live();
    /* an exact-size, unterminated copy, so ASan sees any read past the input */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int rc = oc_manifest_parse(buf, size, "fuzz/manifest.json", &m, &err);
    if (rc == OC_OK) {
        if (oc_manifest_format(&m, &text, &err) != OC_OK)
            abort();
        if (oc_manifest_parse(text, strlen(text), "fuzz/manifest.json", &back, &err) != OC_OK)
            abort();
        if (memcmp(&m, &back, sizeof(m)) != 0)
            abort();
        oc_free(text);
    } else if (rc != OC_ERR_FORMAT || !strstr(err.msg, "fuzz/manifest.json")) {
        abort();
    }
    free(buf);
    if (oc_mem_n_live() != live0)
        abort();
    return 0;
}
