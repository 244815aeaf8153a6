/*
 * fault_util.h — test helpers for fault loops: every loop runs in two modes,
 * one-shot (only the nth operation fails) and persistent (the nth and every
 * later one fail: a disk that stays full, a descriptor table that stays
 * exhausted), and samples its nth values so large loops stay quick.
 *
 * Usage:
 *   for (int mode = 0; mode < FAULT_MODE_COUNT; mode++)
 *       for (uint64_t nth = 1; ...; nth = fault_next_nth(nth, stride))
 *           fault_arm_mode(mode, kind, nth, errno); run; check; oc_fault_disarm_all();
 */
#ifndef OFFCORE_TEST_FAULT_UTIL_H
#define OFFCORE_TEST_FAULT_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "offcore/core.h"
#include "offcore/io.h"

enum fault_mode {
    FAULT_ONESHOT,
    FAULT_PERSISTENT,
    FAULT_MODE_COUNT,
};

static inline const char *fault_mode_name(int mode)
{
    return mode == FAULT_PERSISTENT ? "persistent" : "one-shot";
}

/* Arms kind's fault at the nth operation in the given mode. */
static inline void fault_arm_mode(int mode, enum oc_fault_kind kind, uint64_t nth, int sys_errno)
{
    if (mode == FAULT_PERSISTENT)
        oc_fault_arm_persistent(kind, nth, sys_errno);
    else
        oc_fault_arm(kind, nth, sys_errno);
}

/*
 * The next nth to try: every one up to 2 * stride, then steps growing by a
 * quarter (at least stride), so a loop over thousands of operations runs a
 * few dozen times and still hits the first operations of every phase.
 * stride 0 = every nth.
 */
static inline uint64_t fault_next_nth(uint64_t nth, uint64_t stride)
{
    if (stride == 0 || nth < 2 * stride)
        return nth + 1;
    uint64_t step = nth / 4;
    return nth + (step > stride ? step : stride);
}

/* Whether any file under dir has ".tmp" in its name (a partial output left in place). */
static inline int fault_tmp_left(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (strstr(de->d_name, ".tmp")) {
            fprintf(stderr, "  left behind: %s/%s\n", dir, de->d_name);
            found = 1;
            break;
        }
        char sub[2048];
        snprintf(sub, sizeof(sub), "%.1500s/%.255s", dir, de->d_name);
        if (depth < 4 && de->d_type == DT_DIR)
            found = fault_tmp_left(sub, depth + 1);
    }
    closedir(d);
    return found;
}

/* A checkpoint that exists must be whole: its last 4 bytes are the CRC-32 of the rest. */
static inline int fault_checkpoint_whole(const char *ckpt)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/checkpoint.bin", ckpt);
    if (!oc_path_exists(path))
        return 1;
    char *data = NULL;
    size_t len = 0;
    struct oc_err err;
    if (oc_read_file(path, 0, &data, &len, &err) != OC_OK)
        return 0;
    int ok = len > 12 && memcmp(data, "OCCKPT01", 8) == 0 &&
             oc_crc32(0, data, len - 4) == oc_get_le32((const uint8_t *)data + len - 4);
    oc_free(data);
    return ok;
}

/* The outcome of one run of a training fault loop (fault_judge_run). */
enum fault_verdict {
    FAULT_UNREACHED,      /* the fault did not fire and the run trained the reference weights */
    FAULT_RECOVERED,      /* it fired and a fallback trained the reference weights */
    FAULT_FAILED_CLEANLY, /* it fired and the run failed with a message, leaving nothing partial */
    FAULT_BAD,            /* anything else (printed): a leak, wrong weights, a partial output */
};

/*
 * Judges a training run made with a fault armed: no allocation leaked
 * (live_before = oc_mem_n_live() before the run); a run that succeeded trained
 * ref_sha; a failed one has a message, is not an io_uring setup failure (which
 * must fall back to pread), left no temporary under ckpt or other_dir (may be
 * NULL) and a checkpoint in ckpt that is absent or whole.
 */
static inline enum fault_verdict fault_judge_run(const char *label, enum oc_fault_kind kind,
                                                 uint64_t live_before, int fired, int rc,
                                                 const struct oc_err *err, const char *sha,
                                                 const char *ref_sha, const char *ckpt,
                                                 const char *other_dir)
{
    if (oc_mem_n_live() != live_before) {
        fprintf(stderr, "  %s: %llu allocations leaked (%s)\n", label,
                (unsigned long long)(oc_mem_n_live() - live_before), err->msg);
        return FAULT_BAD;
    }
    if (!fired || rc == OC_OK) {
        /* Not reached, swallowed (an optional plan file) or a fallback: same weights. */
        if (rc != OC_OK || strcmp(sha, ref_sha) != 0) {
            fprintf(stderr,
                    "  %s (%s): %s, weights %s: a run that did not fail must train the "
                    "reference weights\n",
                    label, fired ? "fired" : "not reached", oc_status_str(rc), rc ? err->msg : sha);
            return FAULT_BAD;
        }
        return fired ? FAULT_RECOVERED : FAULT_UNREACHED;
    }
    if (err->status != rc || err->msg[0] == '\0' || kind == OC_FAULT_URING_SETUP) {
        fprintf(stderr, "  %s: not a clean failure (%s, error status %s%s): %s\n", label,
                oc_status_str(rc), oc_status_str(err->status),
                kind == OC_FAULT_URING_SETUP ? "; io_uring must fall back to pread" : "", err->msg);
        return FAULT_BAD;
    }
    if (fault_tmp_left(ckpt, 0) || (other_dir && fault_tmp_left(other_dir, 0))) {
        fprintf(stderr, "  %s left a temporary file (%s)\n", label, err->msg);
        return FAULT_BAD;
    }
    if (!fault_checkpoint_whole(ckpt)) {
        fprintf(stderr, "  %s: checkpoint not whole (%s)\n", label, err->msg);
        return FAULT_BAD;
    }
    return FAULT_FAILED_CLEANLY;
}

#endif
