/*
 * test_kg_cli.c — the knowledge-graph commands as a user runs them: the real
 * binary imports a GraIL split from ../shared with `offcore import kg`, trains
 * one epoch of RED-GNN on it with `offcore kg-train` (epoch line, filtered
 * MRR, weights hash, JSON log), and refuses a missing source directory and a
 * directory that is not a KG dataset with exit 1 and a message naming it;
 * `--extract tiger` on a toy split prints its slicing line and the same
 * weights as basic, and inconsistent --extract options are refused (exit 2).
 *
 * Place in the data flow: tests (cli → kg, in a child process).
 * Thread-safety: single-threaded test code; the child is another process.
 * Ownership: outputs live under the test's temporary directory.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "kg_fixture.h"
#include "proc_util.h"

OC_TEST(import_and_train_one_epoch_through_the_cli)
{
    const char *shared = oc_test_shared();
    if (!shared)
        OC_SKIP("../shared not found");
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char src[900], out[900], log[900];
    snprintf(src, sizeof(src), "%s/datasets/kg-inductive/fb237_v1", shared);
    snprintf(out, sizeof(out), "%s/fb237_v1", oc_test_tmpdir());
    snprintf(log, sizeof(log), "%s/kg.jsonl", oc_test_tmpdir());
    struct proc_run r;
    const char *imp[] = {"import", "kg", src, out, "--quiet", NULL};
    proc_run_cli(imp, 120, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    const char *train[] = {"kg-train", out, "--epochs", "1", "--threads", "2", "--log", log, NULL};
    proc_run_cli(train, 600, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(r.out && strstr(r.out, "Epoch 00000") && strstr(r.out, "MRR"));
    OC_CHECK(r.out && strstr(r.out, "weights_sha256"));
    if (r.code != 0)
        fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out ? r.out : "", r.err ? r.err : "");
    proc_run_free(&r);
    char *text = NULL;
    size_t len = 0;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(log, 0, &text, &len, &err), &err);
    OC_CHECK(text && strstr(text, "\"epoch\""));
    oc_free(text);
}

OC_TEST(bad_sources_are_refused_naming_them)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char missing[900], out[900], notkg[900];
    snprintf(missing, sizeof(missing), "%s/no-such-split", oc_test_tmpdir());
    snprintf(out, sizeof(out), "%s/never", oc_test_tmpdir());
    snprintf(notkg, sizeof(notkg), "%s/empty-dir", oc_test_tmpdir());
    struct oc_err err;
    OC_CHECK_OK(oc_mkdir_p(notkg, &err), &err);
    struct proc_run r;
    const char *imp[] = {"import", "kg", missing, out, "--quiet", NULL};
    proc_run_cli(imp, 60, &r);
    OC_CHECK(r.code == 1);
    OC_CHECK(r.err && strstr(r.err, "no-such-split"));
    OC_CHECK(!oc_path_exists(out)); /* nothing left behind */
    proc_run_free(&r);
    const char *train[] = {"kg-train", notkg, "--epochs", "1", NULL};
    proc_run_cli(train, 60, &r);
    OC_CHECK(r.code == 1);
    OC_CHECK(r.err && strstr(r.err, "empty-dir"));
    proc_run_free(&r);
}

/* The line "weights_sha256 <hex>" of a run's stdout, into sha (empty if absent). */
static void sha_of(const char *out, char sha[65])
{
    const char *p = out ? strstr(out, "weights_sha256 ") : NULL;
    sha[0] = 0;
    if (p)
        snprintf(sha, 65, "%.64s", p + 15);
}

OC_TEST(extract_modes_through_the_cli)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *root = oc_test_tmpdir();
    const char *src = kgfx_toy_split(root, "x\tr2\ty\ny\tr1\tz\n");
    char ds[900];
    snprintf(ds, sizeof(ds), "%s/toy-kg", root);
    struct oc_err err;
    OC_CHECK_OK(oc_kg_import_grail(src, ds, NULL, &err), &err);
    char sha[2][65];
    const char *modes[2] = {"basic", "tiger"};
    for (int m = 0; m < 2; m++) {
        const char *args[] = {"kg-train", ds,  "--epochs",  "2",      "--threads", "2",
                              "--layers", "2", "--extract", modes[m], NULL};
        struct proc_run r;
        proc_run_cli(args, 60, &r);
        OC_CHECK(r.code == 0);
        if (m == 1)
            OC_CHECK(r.out && strstr(r.out, "tiger | slicing") && strstr(r.out, "delta_R"));
        sha_of(r.out, sha[m]);
        proc_run_free(&r);
    }
    OC_CHECK(sha[0][0] && strcmp(sha[0], sha[1]) == 0);
    /* refused: exit 2 and a message naming the option */
    static const struct {
        const char *a[6], *msg;
    } bad[] = {
        {{"--extract", "atom", "--facts", "memory"}, "needs --facts disk"},
        {{"--alpha", "0.5"}, "--alpha and --hops need --extract tiger"},
        {{"--extract", "atom", "--slice-size", "8"}, "--slice-size"},
        {{"--extract", "tiger", "--hops", "2"}, "--hops 2: at most"},
        {{"--extract", "tiger", "--alpha", "1.5"}, "--alpha in [0, 1]"},
        {{"--extract", "tiger", "--slice-size", "0"}, "--slice-size must be"},
        {{"--atom-cache", "1M"}, "--atom-cache needs"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[12] = {"kg-train", ds, "--epochs", "1", "--layers", "2"};
        int n = 6;
        for (int k = 0; k < 6 && bad[i].a[k]; k++)
            args[n++] = bad[i].a[k];
        args[n] = NULL;
        struct proc_run r;
        proc_run_cli(args, 60, &r);
        OC_CHECK(r.code == 2 && r.err && strstr(r.err, bad[i].msg));
        if (r.code != 2 || !r.err || !strstr(r.err, bad[i].msg))
            fprintf(stderr, "  case %zu: code %d, stderr: %s\n", i, r.code, r.err ? r.err : "");
        proc_run_free(&r);
    }
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST_MAIN()
