/*
 * test_special_files.c — a FIFO, directory or character device where a file
 * is expected is refused at once with a message naming the file and what it
 * is ("... is not a regular file (fifo)"), never waited on: by oc_file_open
 * (read and write), oc_read_file and the line reader, and by `offcore info`
 * and `offcore train` on a dataset whose manifest.json or features.npy is one
 * (each run is killed after 20 s: a hang fails the test).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "proc_util.h"

#define CLI_TIMEOUT_S 20.0

/* mkfifo path; skips the calling test if the filesystem has no FIFOs. */
static int make_fifo(const char *path)
{
    unlink(path);
    if (mkfifo(path, 0644) != 0) {
        fprintf(stderr, "  mkfifo %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

OC_TEST(library_opens_refuse_special_files)
{
    const char *tmp = oc_test_tmpdir();
    char fifo[700], dir[700];
    snprintf(fifo, sizeof(fifo), "%s/features.npy", tmp);
    snprintf(dir, sizeof(dir), "%s/manifest.json", tmp);
    if (make_fifo(fifo) != 0)
        OC_SKIP("no FIFOs here");
    OC_CHECK(mkdir(dir, 0755) == 0);
    struct {
        const char *path, *what;
    } cases[] = {{fifo, "(fifo)"}, {dir, "(directory)"}, {"/dev/zero", "(character device)"}};
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *p = cases[i].path;
        char want[800];
        snprintf(want, sizeof(want), "%s: is not a regular file %s", p, cases[i].what);
        struct oc_file *f = (struct oc_file *)1;
        OC_CHECK_ERR(oc_file_open(p, OC_FILE_READ, &f, &err), OC_ERR_IO, &err, want);
        OC_CHECK(f == NULL);
        OC_CHECK_ERR(oc_file_open(p, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), OC_ERR_IO, &err,
                     want);
        char *data = NULL;
        size_t len = 0;
        OC_CHECK_ERR(oc_read_file(p, 0, &data, &len, &err), OC_ERR_IO, &err, want);
        OC_CHECK(data == NULL);
        struct oc_line_reader *r = NULL;
        OC_CHECK_ERR(oc_line_reader_open(p, &r, &err), OC_ERR_IO, &err, want);
        OC_CHECK(r == NULL);
        if (i == 1)
            continue; /* writing to a directory fails in open() already (EISDIR) */
        /* Writing: a FIFO without a reader must not block either; /dev/zero is not a file. */
        OC_CHECK(oc_file_open(p, OC_FILE_WRITE | OC_FILE_TRUNC, &f, &err) == OC_ERR_IO);
        OC_CHECK(f == NULL && strstr(err.msg, p) && strstr(err.msg, "not a regular file"));
        struct oc_writer *w = NULL;
        OC_CHECK(oc_writer_open(p, 4096, &w, &err) != OC_OK && w == NULL);
        OC_CHECK(strstr(err.msg, p) != NULL);
    }
    OC_CHECK(oc_mem_n_live() == live);
}

/* Runs the binary with args (NULL-terminated) under the timeout; fills *err_text (oc_free). */
static int run_cli_timeout(const char *const *args, char **err_text)
{
    struct proc_run r;
    proc_run_cli(args, CLI_TIMEOUT_S, &r);
    *err_text = r.err;
    oc_free(r.out);
    return r.code;
}

/* Generates a tiny dataset at dir through the CLI; returns 0 on success. */
static int generate(const char *dir)
{
    const char *args[] = {"generate", "--nodes",   "400", "--feat-dim", "8",
                          "--quiet",  "--threads", "1",   dir,          NULL};
    char *text = NULL;
    int rc = run_cli_timeout(args, &text);
    if (rc != 0)
        fprintf(stderr, "  generate %s: exit %d: %s\n", dir, rc, text ? text : "");
    oc_free(text);
    return rc;
}

/* `info DIR` and `train DIR --epochs 1` fail quickly with a message naming file and kind. */
static void check_cli_refuses(const char *ds, const char *file, const char *kind)
{
    char path[800], want[900];
    snprintf(path, sizeof(path), "%s/%s", ds, file);
    snprintf(want, sizeof(want), "is not a regular file (%s)", kind);
    const char *info[] = {"info", ds, NULL};
    const char *train[] = {"train", ds, "--epochs", "1", "--threads", "1", NULL};
    const char *const *cmds[] = {info, train};
    for (int c = 0; c < 2; c++) {
        char *text = NULL;
        int rc = run_cli_timeout(cmds[c], &text);
        int ok = rc > 0 && rc < 128 && text && strstr(text, file) && strstr(text, want);
        if (!ok)
            fprintf(stderr, "  %s with %s a %s: exit %d%s, stderr: %s\n", cmds[c][0], file, kind,
                    rc, rc == -2 ? " (hung: killed)" : "", text ? text : "(none)");
        OC_CHECK(ok);
        oc_free(text);
    }
}

OC_TEST(cli_refuses_fifo_directory_and_device_in_a_dataset)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], path[800];
    snprintf(ds, sizeof(ds), "%s/ds", oc_test_tmpdir());
    if (generate(ds) != 0) {
        OC_CHECK(!"generate failed");
        return;
    }
    struct oc_err err;
    char *manifest = NULL;
    size_t mlen = 0;
    snprintf(path, sizeof(path), "%s/manifest.json", ds);
    OC_CHECK_OK(oc_read_file(path, 0, &manifest, &mlen, &err), &err);
    if (!manifest)
        return;

    /* manifest.json a FIFO (nobody writes it: a blocking open would wait forever). */
    if (make_fifo(path) != 0) {
        oc_free(manifest);
        OC_SKIP("no FIFOs here");
    }
    check_cli_refuses(ds, "manifest.json", "fifo");
    /* ... a directory. */
    unlink(path);
    OC_CHECK(mkdir(path, 0755) == 0);
    check_cli_refuses(ds, "manifest.json", "directory");
    rmdir(path);
    OC_CHECK_OK(oc_write_file_atomic(path, manifest, mlen, &err), &err);

    /* features.npy a FIFO, a directory, and a link to /dev/zero. */
    char feat[800], keep[800];
    snprintf(feat, sizeof(feat), "%s/features.npy", ds);
    snprintf(keep, sizeof(keep), "%s/features.npy.keep", ds);
    OC_CHECK(rename(feat, keep) == 0);
    OC_CHECK(make_fifo(feat) == 0);
    check_cli_refuses(ds, "features.npy", "fifo");
    unlink(feat);
    OC_CHECK(mkdir(feat, 0755) == 0);
    check_cli_refuses(ds, "features.npy", "directory");
    rmdir(feat);
    OC_CHECK(symlink("/dev/zero", feat) == 0);
    check_cli_refuses(ds, "features.npy", "character device");
    unlink(feat);
    OC_CHECK(rename(keep, feat) == 0);

    /* Restored, the dataset opens again. */
    const char *info[] = {"info", ds, NULL};
    char *text = NULL;
    OC_CHECK(run_cli_timeout(info, &text) == 0);
    oc_free(text);
    oc_free(manifest);
}

OC_TEST_MAIN()
