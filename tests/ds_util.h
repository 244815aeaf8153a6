/*
 * ds_util.h — test helpers over a dataset directory's files: a path inside
 * it, and re-sealing its manifest (every listed file's size and CRC-32
 * recomputed), so that a patched file fails on its content, not its checksum.
 *
 * Place in the data flow: tests of dataset/ and of what reads datasets.
 * Thread-safety: single-threaded. Ownership: path_in returns one of four
 * rotating static buffers.
 */
#ifndef OC_TEST_DS_UTIL_H
#define OC_TEST_DS_UTIL_H

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

static inline const char *path_in(const char *dir, const char *name)
{
    static char buf[4][1100];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%.800s/%.200s", dir, name);
    return buf[k];
}

/* Recomputes every listed file's size and CRC and rewrites manifest.json. */
static inline void reseal(const char *dir)
{
    struct oc_err err;
    struct oc_manifest m;
    char *text = NULL, *data = NULL;
    size_t len;
    OC_CHECK_OK(oc_read_file(path_in(dir, "manifest.json"), 0, &text, &len, &err), &err);
    if (!text)
        return;
    OC_CHECK_OK(oc_manifest_parse(text, len, "reseal", &m, &err), &err);
    oc_free(text);
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        if (!m.files[f].present)
            continue;
        OC_CHECK_OK(
            oc_read_file(path_in(dir, oc_ds_file_name((enum oc_ds_file)f)), 0, &data, &len, &err),
            &err);
        m.files[f].bytes = len;
        m.files[f].crc32 = (uint32_t)crc32(0, (const Bytef *)data, (uInt)len);
        oc_free(data);
    }
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(path_in(dir, "manifest.json"), text, strlen(text), &err),
                &err);
    oc_free(text);
}

#endif
