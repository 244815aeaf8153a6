/*
 * test_train_rss.c — the memory budget holds for the whole process: training
 * through the CLI with --mem-budget and a strategy that keeps features on
 * disk (direct, static) peaks at a resident set no larger than the budget
 * plus a fixed overhead of RSS_OVERHEAD_MIB (the binary, libc, OpenBLAS's
 * own buffers, thread stacks: memory outside the library's accountant).
 * mmap is excluded by design: its pages belong to the page cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "offcore/generate.h"
#include "proc_util.h"

#define RSS_OVERHEAD_MIB 32

#if !defined(OC_SANITIZED) /* sanitizer shadow memory inflates the resident set */
/* The largest "peak_rss_bytes" in a JSON-lines log, 0 if none. */
static uint64_t log_peak_rss(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    struct oc_err err;
    if (oc_read_file(path, 0, &text, &len, &err) != OC_OK)
        return 0;
    uint64_t peak = 0;
    for (const char *p = text; (p = strstr(p, "\"peak_rss_bytes\":")) != NULL; p++) {
        uint64_t v = strtoull(p + 17, NULL, 10);
        peak = v > peak ? v : peak;
    }
    oc_free(text);
    return peak;
}
#endif

OC_TEST(peak_rss_within_budget_plus_fixed_overhead)
{
#if defined(OC_SANITIZED)
    OC_SKIP("sanitizer shadow memory inflates the resident set");
#else
    const char *bin = getenv("OC_BIN");
    if (!bin)
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char data[1024], log[1100], out[1100];
    snprintf(data, sizeof(data), "%s/data", tmp);
    snprintf(log, sizeof(log), "%s/log.jsonl", tmp);
    snprintf(out, sizeof(out), "%s/out.txt", tmp);
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 100000;
    g.avg_degree = 6;
    g.feat_dim = 256; /* 100 MB of features, several times each budget below */
    g.n_classes = 5;
    g.train_frac = 0.05;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, data, NULL, &err), &err);
    const char *strategies[] = {"direct", "static"};
    const char *budgets[] = {"32M", "64M"};
    const uint64_t budget_bytes[] = {32ull << 20, 64ull << 20};
    for (int s = 0; s < 2; s++) {
        for (int b = 0; b < 2; b++) {
            char *argv[] = {(char *)bin,
                            "train",
                            data,
                            "--strategy",
                            (char *)strategies[s],
                            "--mem-budget",
                            (char *)budgets[b],
                            "--fanout",
                            "5,5",
                            "--batch",
                            "256",
                            "--eval",
                            "sampled",
                            "--eval-batch",
                            "256",
                            "--epochs",
                            "2",
                            "--quiet",
                            "--log",
                            log,
                            NULL};
            oc_rm_rf(log, &err);
            OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
            uint64_t rss = log_peak_rss(log);
            uint64_t limit = budget_bytes[b] + ((uint64_t)RSS_OVERHEAD_MIB << 20);
            fprintf(stderr, "  %s --mem-budget %s: peak RSS %.1f MiB (limit %.1f MiB)\n",
                    strategies[s], budgets[b], (double)rss / 1048576.0, (double)limit / 1048576.0);
            OC_CHECK(rss > 0 && rss <= limit);
        }
    }
#endif
}

OC_TEST_MAIN()
