/*
 * fuzz_twice.h — the one driver of the fuzz targets whose inputs carry a
 * checksum (batch records, checkpoints, ginex superbatches, diskgnn chunks):
 * each input is tried as given and, with its checksum or footer repaired,
 * again, so mutations also reach the checks behind the checksum. Both tries
 * run on an exact-size copy, so ASan sees any read past the input, and a
 * target that leaks an accounted allocation aborts.
 *
 * Place in the data flow: tests (fuzz harness).
 * Thread-safety: single-threaded.
 */
#ifndef OFFCORE_FUZZ_TWICE_H
#define OFFCORE_FUZZ_TWICE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/core.h"

/* Checks one input (aborts on a contract violation). */
typedef void (*fuzz_try_fn)(void *ctx, const uint8_t *buf, size_t size);
/* Rewrites buf's checksum or footer to match its bytes; 0 if the input is too short to. */
typedef int (*fuzz_repair_fn)(uint8_t *buf, size_t size);

static inline int fuzz_twice(const uint8_t *data, size_t size, fuzz_try_fn try_one,
                             fuzz_repair_fn repair, void *ctx)
{
    uint64_t live0 = oc_mem_n_live();
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    try_one(ctx, buf, size);
    if (repair(buf, size))
        try_one(ctx, buf, size);
    free(buf);
    if (oc_mem_n_live() != live0)
        abort();
    return 0;
}

#endif
