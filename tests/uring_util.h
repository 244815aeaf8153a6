/*
 * uring_util.h — whether io_uring must be in use in this test run, decided
 * apart from offcore's own setup path (so a setup that silently falls back to
 * pread cannot make a test of the io_uring path pass): built with liburing
 * (OC_HAVE_URING, as the library), OC_NO_URING not set, and the kernel sets up
 * a ring when asked directly (raw io_uring_setup; a container's seccomp may
 * refuse it).
 *
 * Place in the data flow: tests only (test_io.c, test_store_helios.c).
 * Thread-safety: call from the test's main thread.
 */
#ifndef OC_TEST_URING_UTIL_H
#define OC_TEST_URING_UTIL_H

#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int test_uring_expected(void)
{
#ifdef OC_HAVE_URING
    const char *off = getenv("OC_NO_URING"); /* the whole run told to use pread */
    if (off && off[0] && strcmp(off, "0") != 0)
        return 0;
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    long fd = syscall(__NR_io_uring_setup, 4, &p);
    if (fd < 0)
        return 0;
    close((int)fd);
    return 1;
#else
    return 0;
#endif
}

/* Skips the current test where io_uring cannot be used; afterwards, it must be. */
#define TEST_REQUIRE_URING()                                                                \
    do {                                                                                    \
        if (!test_uring_expected())                                                         \
            OC_SKIP("io_uring is not available here (built without liburing or refused by " \
                    "the kernel)");                                                         \
    } while (0)

#endif
