/*
 * test_safety_cli.c — what the CLI may touch and when it refuses, run as a
 * user would (the offcore binary, OC_BIN, in a child with a timeout):
 *   - demo deletes nothing it did not create: a directory with other files, a
 *     regular file and a damaged dataset given as --dir are refused and left
 *     byte for byte as they were; an empty --dir is filled, and the runs' report
 *     written beside it (a --report directory with files no demo wrote is refused);
 *   - a run whose start-up budget check passes does not fail later for want
 *     of memory: each run of a budget sweep either refuses before its first
 *     epoch or trains every epoch (issue commands: static/gnndrive at 64M/80M);
 *   - diverging training (--lr 1e30) stops with an error naming the epoch and
 *     batch (the loss went NaN) and prints no weights hash; --lr inf and --epochs 0 are refused;
 *   - control characters in a dataset's name never reach the terminal raw.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "offcore/generate.h"
#include "offcore/io.h"
#include "proc_util.h"

#define RUN_TIMEOUT_S  120
#define DEMO_TIMEOUT_S 900 /* the whole demo: two 10-epoch trainings (slow under sanitizers) */

/* Runs `offcore args...`; a run that hangs is killed and reported as -2. */
static void run_cli(const char *const args[], struct proc_run *r)
{
    proc_run_cli(args, RUN_TIMEOUT_S, r);
}

static int has(const char *text, const char *what)
{
    return text && strstr(text, what);
}

/* Generates a small dataset into dir (n nodes, 128-dim features). */
static void make_dataset(const char *dir, uint64_t n_nodes)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = n_nodes;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, dir, NULL, &err), &err);
}

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    struct oc_err err;
    if (oc_read_file(path, 0, &data, len, &err) != OC_OK)
        return NULL;
    return data;
}

OC_TEST(demo_refuses_a_directory_it_did_not_create_and_deletes_nothing)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char u[1100], thesis[1200], ch1[1300];
    snprintf(u, sizeof(u), "%s/u", tmp);
    snprintf(thesis, sizeof(thesis), "%s/thesis", u);
    snprintf(ch1, sizeof(ch1), "%s/ch1.tex", thesis);
    struct oc_err err;
    OC_CHECK_OK(oc_mkdir_p(thesis, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(ch1, "x\n", 2, &err), &err);
    const char *args[] = {"demo", "--dir", u, "--quiet", NULL};
    struct proc_run r;
    run_cli(args, &r);
    OC_CHECK(r.code == 1);
    OC_CHECK(has(r.err, u) && has(r.err, "not a valid offcore dataset"));
    size_t len = 0;
    char *kept = slurp(ch1, &len);
    OC_CHECK(kept && len == 2 && memcmp(kept, "x\n", 2) == 0);
    oc_free(kept);
    proc_run_free(&r);

    /* a regular file given as --dir stays as it is */
    char file[1100];
    snprintf(file, sizeof(file), "%s/plain-file", tmp);
    OC_CHECK_OK(oc_write_file_atomic(file, "keep me", 7, &err), &err);
    const char *args2[] = {"demo", "--dir", file, "--quiet", NULL};
    run_cli(args2, &r);
    OC_CHECK(r.code == 1 && has(r.err, "not a directory"));
    kept = slurp(file, &len);
    OC_CHECK(kept && len == 7 && memcmp(kept, "keep me", 7) == 0);
    oc_free(kept);
    proc_run_free(&r);
}

OC_TEST(demo_keeps_a_damaged_dataset_and_fills_an_empty_dir)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char ds[1100], labels[1200];
    snprintf(ds, sizeof(ds), "%s/ds", tmp);
    snprintf(labels, sizeof(labels), "%s/labels.npy", ds);
    make_dataset(ds, 2000);
    /* one byte of the labels flipped: a CRC mismatch */
    size_t len = 0;
    char *data = slurp(labels, &len);
    OC_CHECK(data && len > 4200);
    if (!data)
        return;
    data[4200] ^= 1;
    struct oc_err err;
    OC_CHECK_OK(oc_write_file_atomic(labels, data, len, &err), &err);
    const char *args[] = {"demo", "--dir", ds, "--quiet", NULL};
    struct proc_run r;
    run_cli(args, &r);
    OC_CHECK(r.code == 1 && has(r.err, ds));
    size_t len2 = 0;
    char *after = slurp(labels, &len2);
    OC_CHECK(after && len2 == len && memcmp(after, data, len) == 0);
    oc_free(after);
    oc_free(data);
    proc_run_free(&r);

    /* an empty directory is where the demo dataset may go */
    char empty[1100];
    snprintf(empty, sizeof(empty), "%s/empty", tmp);
    OC_CHECK(mkdir(empty, 0755) == 0);
    const char *args2[] = {"demo", "--dir", empty, "--quiet", NULL};
    proc_run_cli(args2, DEMO_TIMEOUT_S, &r);
    OC_CHECK(r.code == 0 && has(r.out, "weights_sha256"));
    /* the out-of-core part: a budget found by dry runs, the comparison, the same weights */
    OC_CHECK(has(r.out, "the smallest --mem-budget static accepts here is"));
    OC_CHECK(has(r.out, "out of core / in RAM epoch time:"));
    OC_CHECK(has(r.out, "the weights are identical"));
    /* the dry runs stay quiet: only the out-of-core run logs its measured batch */
    const char *probe = r.err ? strstr(r.err, "probed 4 batches") : NULL;
    OC_CHECK(probe && !strstr(probe + 1, "probed 4 batches"));
    char manifest[1200];
    snprintf(manifest, sizeof(manifest), "%s/manifest.json", empty);
    OC_CHECK(oc_path_exists(manifest));
    /* both runs' logs drawn into a report beside the dataset, its path printed last */
    char report[1200];
    snprintf(report, sizeof(report), "%s-report/report.html", empty);
    OC_CHECK(has(r.out, report));
    size_t n_html = 0;
    char *html = slurp(report, &n_html);
    OC_CHECK(has(html, "data-run=\"memory\"") && has(html, "data-run=\"static\""));
    OC_CHECK(has(html, "data-chart=\"loss\" data-points=\"20\"")); /* 2 runs x 10 epochs */
    oc_free(html);
    proc_run_free(&r);

    /* a report directory holding anything a demo did not write is refused, untouched */
    char other_dir[1200], other[1300];
    snprintf(other_dir, sizeof(other_dir), "%s/reports", tmp);
    snprintf(other, sizeof(other), "%s/notes.txt", other_dir);
    OC_CHECK_OK(oc_mkdir_p(other_dir, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(other, "mine", 4, &err), &err);
    const char *args3[] = {"demo", "--dir", empty, "--report", other_dir, "--quiet", NULL};
    run_cli(args3, &r);
    OC_CHECK(r.code == 1 && has(r.err, other_dir) && has(r.err, "notes.txt"));
    char *kept = slurp(other, &len);
    OC_CHECK(kept && len == 4 && memcmp(kept, "mine", 4) == 0);
    oc_free(kept);
    proc_run_free(&r);
}

/*
 * A run either refuses at start (before any epoch line) or trains every
 * epoch: the budget check at start accounts for everything the run later
 * holds at once.
 */
OC_TEST(a_run_that_passes_the_budget_check_finishes)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char ds[1100];
    snprintf(ds, sizeof(ds), "%s/g100k", tmp);
    make_dataset(ds, 100000);
    /* the commands first, then a sweep across the threshold */
    static const struct {
        const char *strategy, *budget, *epochs;
    } runs[] = {
        {"static", "64M", "3"},   {"static", "80M", "3"},   {"gnndrive", "64M", "3"},
        {"gnndrive", "80M", "3"}, {"static", "32M", "2"},   {"static", "36M", "2"},
        {"static", "48M", "2"},   {"gnndrive", "40M", "2"}, {"gnndrive", "48M", "2"},
        {"gnndrive", "56M", "2"}, {"direct", "32M", "2"},   {"direct", "36M", "2"},
        {"direct", "48M", "2"},
    };
    int n_trained = 0, n_refused = 0;
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        const char *args[] = {"train",        ds,
                              "--strategy",   runs[i].strategy,
                              "--epochs",     runs[i].epochs,
                              "--batch",      "500",
                              "--fanout",     "5,5",
                              "--eval-batch", "1000",
                              "--quiet",      "--mem-budget",
                              runs[i].budget, NULL};
        struct proc_run r;
        run_cli(args, &r);
        char last[32];
        snprintf(last, sizeof(last), "Epoch %05d", atoi(runs[i].epochs) - 1);
        int refused = r.code == 1 && !has(r.out, "Epoch 00000") &&
                      (has(r.err, "too small") || has(r.err, "the store's budget is"));
        int trained = r.code == 0 && has(r.out, last) && has(r.out, "weights_sha256");
        if (!(refused || trained))
            fprintf(stderr, "  %s --mem-budget %s: exit %d\n  stdout: %s\n  stderr: %s\n",
                    runs[i].strategy, runs[i].budget, r.code, r.out ? r.out : "",
                    r.err ? r.err : "");
        OC_CHECK(refused || trained);
        n_trained += trained;
        n_refused += refused;
        proc_run_free(&r);
    }
    OC_CHECK(n_trained > 0 && n_refused > 0); /* the sweep crosses the threshold */
}

OC_TEST(diverging_training_stops_naming_epoch_and_batch)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char ds[1100];
    snprintf(ds, sizeof(ds), "%s/ds", tmp);
    make_dataset(ds, 5000);
    const char *args[] = {"train", ds, "--lr", "1e30", "--epochs", "3", "--quiet", NULL};
    struct proc_run r;
    run_cli(args, &r);
    OC_CHECK(r.code == 1 && has(r.err, "epoch ") && has(r.err, " batch ") &&
             has(r.err, "diverged"));
    OC_CHECK(!has(r.out, "weights_sha256"));
    proc_run_free(&r);
    static const struct {
        const char *flag, *value, *message;
    } bad[] = {
        {"--lr", "inf", "--lr must be a positive finite number"},
        {"--lr", "nan", "--lr"},
        {"--weight-decay", "inf", "--weight-decay must be a finite number"},
        {"--epochs", "0", "--epochs must be at least 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *a[] = {"train", ds, bad[i].flag, bad[i].value, "--quiet", NULL};
        run_cli(a, &r);
        if (!(r.code == 2 && has(r.err, bad[i].message)))
            fprintf(stderr, "  %s %s: exit %d, stderr: %s\n", bad[i].flag, bad[i].value, r.code,
                    r.err ? r.err : "");
        OC_CHECK(r.code == 2 && has(r.err, bad[i].message));
        proc_run_free(&r);
    }
}

/* Replaces "name": "<old>" in manifest.json by the given JSON string body. */
static int set_manifest_name(const char *ds, const char *json_name)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/manifest.json", ds);
    size_t len = 0;
    char *m = NULL;
    struct oc_err rerr;
    /* not slurp(): inlined here, gcc 12 -O3 takes m for a pointer to slurp's local */
    if (oc_read_file(path, 0, &m, &len, &rerr) != OC_OK)
        return -1;
    char *k = strstr(m, "\"name\"");
    char *q1 = k ? strchr(k + 6, '"') : NULL;
    char *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    int rc = -1;
    if (q2) {
        size_t cap = len + strlen(json_name) + 1;
        char *out = malloc(cap);
        int n = snprintf(out, cap, "%.*s%s%s", (int)(q1 + 1 - m), m, json_name, q2);
        struct oc_err err;
        rc = n > 0 && oc_write_file_atomic(path, out, (size_t)n, &err) == OC_OK ? 0 : -1;
        free(out);
    }
    oc_free(m);
    return rc;
}

OC_TEST(control_characters_in_a_name_never_reach_the_terminal)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char ds[1100];
    snprintf(ds, sizeof(ds), "%s/ds", tmp);
    make_dataset(ds, 2000);
    OC_CHECK(set_manifest_name(ds, "evil\\u001b[2J\\u0007\\u009b31m") == 0);
    const char *args[] = {"info", ds, NULL};
    struct proc_run r;
    run_cli(args, &r);
    /* refused (the manifest's name may hold no control character), the message escaped */
    OC_CHECK(r.code == 1 && has(r.err, "control character"));
    for (const char *t = r.out; t && *t; t++)
        OC_CHECK(*t != '\033' && *t != '\007');
    for (const char *t = r.err; t && *t; t++)
        OC_CHECK(*t != '\033' && *t != '\007');
    OC_CHECK(!has(r.out, "\xc2\x9b") && !has(r.err, "\xc2\x9b"));
    proc_run_free(&r);
    /* a path with control characters in an error message: escaped, never raw */
    char evil[1200];
    snprintf(evil, sizeof(evil), "%s/no\033[2Jsuch\007ds", tmp);
    const char *args2[] = {"info", evil, NULL};
    run_cli(args2, &r);
    OC_CHECK(r.code == 1 && has(r.err, "no\\x1B[2Jsuch\\x07ds"));
    for (const char *t = r.err; t && *t; t++)
        OC_CHECK(*t != '\033' && *t != '\007');
    proc_run_free(&r);
}

OC_TEST_MAIN()
