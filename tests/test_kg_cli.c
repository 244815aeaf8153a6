/*
 * test_kg_cli.c — the knowledge-graph commands as a user runs them: the real
 * binary imports a GraIL split from ../shared with `offcore import kg`, trains
 * one epoch of RED-GNN on it with `offcore kg-train` (epoch line, filtered
 * MRR, weights hash, JSON log), and refuses a missing source directory and a
 * directory that is not a KG dataset with exit 1 and a message naming it.
 *
 * Place in the data flow: tests (cli → kg, in a child process).
 * Thread-safety: single-threaded test code; the child is another process.
 * Ownership: outputs live under the test's temporary directory.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
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

OC_TEST_MAIN()
