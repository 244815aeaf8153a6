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

#include <stdint.h>

#include "offcore/core.h"

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

#endif
