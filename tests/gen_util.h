/*
 * gen_util.h — the generated dataset a test file shares among its tests:
 * generated once per test process into <test tmpdir>/gen with the options
 * the file chooses, then reused.
 *
 * Place in the data flow: tests (fixture).
 * Thread-safety: single-threaded tests only.
 */
#ifndef OFFCORE_TEST_GEN_UTIL_H
#define OFFCORE_TEST_GEN_UTIL_H

#include <stdio.h>

#include "harness.h"
#include "offcore/generate.h"

/* The dataset of g, generated on the first call; NULL (the reason printed) if that failed. */
static inline const char *gen_once(const struct oc_generate_opts *g)
{
    static char dir[1024];
    if (dir[0])
        return dir;
    snprintf(dir, sizeof(dir), "%s/gen", oc_test_tmpdir());
    struct oc_err err;
    int rc = oc_generate(g, dir, NULL, &err);
    OC_CHECK_OK(rc, &err); /* a failure fails the test that asked, whichever runs first */
    if (rc != OC_OK) {
        dir[0] = '\0';
        return NULL;
    }
    return dir;
}

#endif
