/*
 * fault.c — fault injection for tests: make the Nth allocation, read, write,
 * open, fsync, rename or io_uring setup fail with a chosen errno, once
 * (one-shot) or from the Nth on (persistent), so every error path can be
 * exercised in a loop.
 *
 * Place in the data flow: core; oc_alloc and the io module call
 * oc_fault_hit() at each operation. Disarmed, it costs one atomic load.
 * Thread-safety: counters are atomics; a one-shot fault fires exactly once,
 * a persistent one at every operation from the nth on.
 */
#include <stdatomic.h>

#include "offcore/core.h"

struct oc_fault_slot {
    _Atomic uint64_t nth;   /* 0 = disarmed */
    _Atomic uint64_t count; /* operations seen since arming */
    _Atomic int fired;
    _Atomic int persistent;
    _Atomic int sys_errno;
};

static struct oc_fault_slot slots[OC_FAULT_KIND_COUNT];

static void arm(enum oc_fault_kind kind, uint64_t nth, int sys_errno, int persistent)
{
    struct oc_fault_slot *s = &slots[kind];
    atomic_store(&s->nth, 0);
    atomic_store(&s->count, 0);
    atomic_store(&s->fired, 0);
    atomic_store(&s->sys_errno, sys_errno);
    atomic_store(&s->persistent, persistent);
    atomic_store(&s->nth, nth);
}

void oc_fault_arm(enum oc_fault_kind kind, uint64_t nth, int sys_errno)
{
    arm(kind, nth, sys_errno, 0);
}

void oc_fault_arm_persistent(enum oc_fault_kind kind, uint64_t nth, int sys_errno)
{
    arm(kind, nth, sys_errno, 1);
}

void oc_fault_disarm_all(void)
{
    for (int k = 0; k < OC_FAULT_KIND_COUNT; k++)
        atomic_store(&slots[k].nth, 0);
}

int oc_fault_hit(enum oc_fault_kind kind, int *sys_errno)
{
    struct oc_fault_slot *s = &slots[kind];
    uint64_t nth = atomic_load_explicit(&s->nth, memory_order_relaxed);
    if (nth == 0)
        return 0;
    uint64_t c = atomic_fetch_add(&s->count, 1) + 1;
    if (c < nth || (c > nth && !atomic_load(&s->persistent)))
        return 0;
    atomic_store(&s->fired, 1);
    if (sys_errno)
        *sys_errno = atomic_load(&s->sys_errno);
    return 1;
}

int oc_fault_fired(enum oc_fault_kind kind)
{
    return atomic_load(&slots[kind].fired);
}

const char *oc_fault_kind_name(enum oc_fault_kind kind)
{
    static const char *const names[OC_FAULT_KIND_COUNT] = {
        "alloc",  "read",        "write",        "open",         "fsync",
        "rename", "uring_setup", "uring_submit", "batch_submit",
    };
    return (unsigned)kind < OC_FAULT_KIND_COUNT ? names[kind] : "?";
}
