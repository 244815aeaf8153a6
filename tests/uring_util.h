/*
 * uring_util.h — whether io_uring must be in use in this test run, decided
 * apart from offcore's own setup path (so a setup that silently falls back to
 * pread cannot make a test of the io_uring path pass): built with liburing
 * (OC_HAVE_URING, as the library), OC_NO_URING not set, and the kernel sets up
 * a ring like the library's (a CQ twice the SQ) when asked directly (raw
 * io_uring_setup; a container's seccomp or an old kernel may refuse it). And
 * whether an SQPOLL ring pinned to a CPU is granted (privileges, cpuset).
 *
 * Place in the data flow: tests only (test_io.c, test_store_helios.c and the
 * fault loops).
 * Thread-safety: call from the test's main thread.
 */
#ifndef OC_TEST_URING_UTIL_H
#define OC_TEST_URING_UTIL_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offcore/core.h"

#ifdef OC_HAVE_URING
#    include <linux/io_uring.h>
#    include <sys/syscall.h>

/* A raw ring setup with these flags (and sq_cpu with SQ_AFF): whether the kernel grants it. */
static inline int test_uring_setup_ok(unsigned flags, int sq_cpu)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE | flags;
    p.cq_entries = 512;
    if (sq_cpu >= 0) {
        p.flags |= IORING_SETUP_SQ_AFF;
        p.sq_thread_cpu = (unsigned)sq_cpu;
    }
    p.sq_thread_idle = 10;
    long fd = syscall(__NR_io_uring_setup, 256, &p);
    if (fd < 0)
        return 0;
    close((int)fd);
    return 1;
}
#endif

static inline int test_uring_expected(void)
{
#ifdef OC_HAVE_URING
    const char *off = getenv("OC_NO_URING"); /* the whole run told to use pread */
    if (off && off[0] && strcmp(off, "0") != 0)
        return 0;
    return test_uring_setup_ok(0, -1);
#else
    return 0;
#endif
}

/* Whether an SQPOLL ring with its thread pinned to cpu is granted (after test_uring_expected). */
static inline int test_sqpoll_granted(int cpu)
{
#ifdef OC_HAVE_URING
    return test_uring_expected() && test_uring_setup_ok(IORING_SETUP_SQPOLL, cpu);
#else
    (void)cpu;
    return 0;
#endif
}

/*
 * Whether a fault loop's case of this kind may never fire: io_uring's setup,
 * where the run sets up no ring (has_ring 0) or io_uring is not used here.
 */
static inline int test_fault_may_miss(enum oc_fault_kind kind, int has_ring)
{
    return kind == OC_FAULT_URING_SETUP && (!has_ring || !test_uring_expected());
}

/* Skips the current test where io_uring cannot be used; afterwards, it must be. */
#define TEST_REQUIRE_URING()                                                                \
    do {                                                                                    \
        if (!test_uring_expected())                                                         \
            OC_SKIP("io_uring is not available here (built without liburing or refused by " \
                    "the kernel)");                                                         \
    } while (0)

#endif
