/*
 * harness.h — the in-repo test harness: one executable per test file, tests
 * registered with OC_TEST, checks that record failures and keep going, and a
 * closing line "N passed, N failed, N skipped".
 *
 * Usage:
 *   OC_TEST(npy_roundtrip) { ... OC_CHECK(x == 1); OC_CHECK_OK(fn(&err), &err); }
 *   OC_TEST_MAIN()
 * A test may call OC_SKIP("reason") to count itself as skipped. The exit code
 * is 1 if anything failed, 77 if everything was skipped, else 0.
 * Helpers: oc_test_tmpdir() gives a fresh directory removed at exit (unless
 * OC_KEEP_TMP=1); oc_test_shared() the ../shared directory or NULL.
 * Like `offcore`, a test binary first restarts itself with OPENBLAS_CORETYPE
 * set where OpenBLAS fell back below the CPU (oc_nn_blas_core_reexec), so its
 * GEMMs run the kernels of the CLI runs it compares against.
 */
#ifndef OFFCORE_TEST_HARNESS_H
#define OFFCORE_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offcore/core.h"
#include "offcore/io.h"
#include "offcore/nn.h"

typedef void (*oc_test_fn)(void);

struct oc_test_case {
    const char *name;
    oc_test_fn fn;
};

#define OC_TEST_MAX 512
static struct oc_test_case oc_tests[OC_TEST_MAX];
static int oc_n_tests;
static int oc_cur_failed;
static int oc_cur_skipped;
static char oc_tmp_root[512];

#define OC_TEST(name)                                                           \
    static void test_##name(void);                                              \
    __attribute__((constructor)) static void reg_##name(void)                   \
    {                                                                           \
        if (oc_n_tests < OC_TEST_MAX)                                           \
            oc_tests[oc_n_tests++] = (struct oc_test_case){#name, test_##name}; \
    }                                                                           \
    static void test_##name(void)

#define OC_CHECK(cond)                                                        \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            oc_cur_failed = 1;                                                \
        }                                                                     \
    } while (0)

/* Checks an expression returning a status is OC_OK; prints the error record if not. */
#define OC_CHECK_OK(expr, errp)                                                        \
    do {                                                                               \
        int rc_ = (expr);                                                              \
        const struct oc_err *e_ = (errp);                                              \
        if (rc_ != OC_OK) {                                                            \
            fprintf(stderr, "  FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, \
                    oc_status_str(rc_), e_ ? e_->msg : "");                            \
            oc_cur_failed = 1;                                                         \
        }                                                                              \
    } while (0)

/* Checks a status equals `want` and (if substr != NULL) the message contains substr. */
#define OC_CHECK_ERR(expr, want, errp, substr)                                                  \
    do {                                                                                        \
        int rc_ = (expr);                                                                       \
        const char *s_ = (substr);                                                              \
        if (rc_ != (want)) {                                                                    \
            fprintf(stderr, "  FAIL %s:%d: %s -> %s (%d), wanted %s: %s\n", __FILE__, __LINE__, \
                    #expr, oc_status_str(rc_), rc_, oc_status_str(want), (errp)->msg);          \
            oc_cur_failed = 1;                                                                  \
        } else if (s_ && !strstr((errp)->msg, s_)) {                                            \
            fprintf(stderr, "  FAIL %s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,  \
                    (errp)->msg, s_);                                                           \
            oc_cur_failed = 1;                                                                  \
        }                                                                                       \
    } while (0)

#define OC_SKIP(reason)                          \
    do {                                         \
        fprintf(stderr, "  skip: %s\n", reason); \
        oc_cur_skipped = 1;                      \
        return;                                  \
    } while (0)

static inline const char *oc_test_tmpdir(void)
{
    static int n;
    static char dir[600];
    if (!oc_tmp_root[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(oc_tmp_root, sizeof(oc_tmp_root), "%s/oc-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(oc_tmp_root)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    snprintf(dir, sizeof(dir), "%s/%d", oc_tmp_root, n++);
    struct oc_err err;
    if (oc_mkdir_p(dir, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return dir;
}

/* The shared/ directory beside the repository, or NULL if absent. */
static inline const char *oc_test_shared(void)
{
    static char path[600];
    const char *env = getenv("OC_SHARED");
    snprintf(path, sizeof(path), "%s", env ? env : "../shared");
    char probe[700];
    snprintf(probe, sizeof(probe), "%s/datasets", path);
    return access(probe, R_OK) == 0 ? path : NULL;
}

static inline int oc_test_main(int argc, char **argv)
{
    oc_nn_blas_core_reexec(argv); /* the kernels the CLI runs, which tests compare against */
    int passed = 0, failed = 0, skipped = 0;
    const char *only = argc > 1 ? argv[1] : NULL;
    for (int i = 0; i < oc_n_tests; i++) {
        if (only && strcmp(only, oc_tests[i].name) != 0)
            continue;
        oc_cur_failed = 0;
        oc_cur_skipped = 0;
        fprintf(stderr, "[ RUN  ] %s\n", oc_tests[i].name);
        oc_tests[i].fn();
        oc_fault_disarm_all();
        oc_mem_set_budget(0);
        if (oc_cur_failed) {
            failed++;
            fprintf(stderr, "[ FAIL ] %s\n", oc_tests[i].name);
        } else if (oc_cur_skipped) {
            skipped++;
            fprintf(stderr, "[ SKIP ] %s\n", oc_tests[i].name);
        } else {
            passed++;
            fprintf(stderr, "[  OK  ] %s\n", oc_tests[i].name);
        }
    }
    if (oc_tmp_root[0] && !getenv("OC_KEEP_TMP")) {
        struct oc_err err;
        oc_rm_rf(oc_tmp_root, &err);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed)
        return 1;
    if (skipped && !passed)
        return 77;
    return 0;
}

#define OC_TEST_MAIN()                   \
    int main(int argc, char **argv)      \
    {                                    \
        return oc_test_main(argc, argv); \
    }

#endif
