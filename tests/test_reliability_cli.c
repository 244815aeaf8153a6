/*
 * test_reliability_cli.c — issue 49, "Reliability, round 2", run as a user
 * would (the offcore binary, OC_BIN, in a child with a timeout):
 *   - a name is not proof of ownership: generate beside a user's old
 *     "mydata.tmp-2024" directory, and diskgnn with --plan-dir at a user's
 *     directory, delete nothing offcore did not mark as its own (a marked
 *     dead temporary is still removed);
 *   - a refused --scratch DIR leaves no directory it created;
 *   - an unreadable optional input (FIFO, directory, link to a device, dangling
 *     link) of import npy/text is an error naming it, never "absent"; text split
 *     files stand on their own; meta.txt may not declare away a present file;
 *   - output is never sized by a declared count: info on a manifest declaring
 *     10^7 classes prints a bounded line; 2^31 classes is refused by info and
 *     train alike;
 *   - features.npy truncated under a running `train --strategy mmap` ends it
 *     with a "truncated" error, never SIGBUS;
 *   - a dataset whose features are all Inf (valid otherwise, CRCs fine) stops
 *     train with an error naming the node, never exit 0 at chance accuracy.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "import_fixture.h"
#include "offcore/io.h"
#include "offcore/progress.h"
#include "proc_util.h"

#define CLI_TIMEOUT_S 120.0

static int has(const char *text, const char *what)
{
    return text && strstr(text, what);
}

/* Runs `offcore args...`; r->code -2 if it hung and was killed. */
static void run(const char *const *args, struct proc_run *r)
{
    proc_run_cli(args, CLI_TIMEOUT_S, r);
    if (r->code != 0)
        fprintf(stderr, "  %s: exit %d, stderr: %.2000s\n", args[0], r->code,
                r->err ? r->err : "(none)");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    OC_CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int generate(const char *dir, const char *nodes, struct proc_run *r)
{
    const char *args[] = {"generate",  "--nodes", nodes, "--feat-dim", "8",
                          "--threads", "1",       dir,   NULL};
    run(args, r);
    return r->code;
}

OC_TEST(generate_keeps_a_user_directory_named_like_a_temporary)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char w[700], user[800], photos[900], jpg[1000], out[800], marked[900], p[1200];
    struct oc_err err;
    snprintf(w, sizeof(w), "%s/w", oc_test_tmpdir());
    snprintf(user, sizeof(user), "%s/mydata.tmp-2024", w);
    snprintf(photos, sizeof(photos), "%s/photos", user);
    snprintf(jpg, sizeof(jpg), "%s/p1.jpg", photos);
    snprintf(out, sizeof(out), "%s/mydata", w);
    OC_CHECK_OK(oc_mkdir_p(photos, &err), &err);
    write_text(jpg, "x\n");
    age(jpg, 2 * 86400);
    age(photos, 2 * 86400);
    age(user, 2 * 86400);
    /* A user's directory and file with names oc_tmp_name would make, of a dead pid here. */
    long gone = dead_pid();
    char unmarked[900], file[900];
    snprintf(unmarked, sizeof(unmarked), "%s/mydata.tmp-%s-%ld-0123456789ab-0", w, oc_tmp_host_id(),
             gone);
    snprintf(file, sizeof(file), "%s/mydata.tmp-%s-%ld-0123456789ab-1", w, oc_tmp_host_id(), gone);
    OC_CHECK_OK(oc_mkdir_p(unmarked, &err), &err);
    snprintf(p, sizeof(p), "%s/notes.txt", unmarked);
    write_text(p, "mine\n");
    write_text(file, "mine too\n");
    /* offcore's own dead temporary (marked with the dead run's host and pid): removed. */
    snprintf(marked, sizeof(marked), "%s/mydata.tmp-%s-%ld-0123456789ab-2", w, oc_tmp_host_id(),
             gone);
    OC_CHECK_OK(oc_mkdir_p(marked, &err), &err);
    oc_tmp_set_identity(oc_tmp_host_id(), gone);
    OC_CHECK_OK(oc_dir_mark(marked, &err), &err);
    oc_tmp_set_identity(NULL, 0);

    struct proc_run r;
    OC_CHECK(generate(out, "1000", &r) == 0);
    OC_CHECK(oc_path_exists(jpg));
    OC_CHECK(!has(r.err, "mydata.tmp-2024 ("));
    OC_CHECK(oc_path_exists(p) && oc_path_exists(file));
    OC_CHECK(!oc_path_exists(marked) && has(r.err, "removed stale temporary"));
    /* The committed dataset carries no marker: it is the user's. */
    snprintf(p, sizeof(p), "%s/%s", out, OC_OWNED_MARKER);
    OC_CHECK(!oc_path_exists(p));
    proc_run_free(&r);
}

OC_TEST(diskgnn_plan_dir_at_a_user_directory_deletes_nothing)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], plan[700], dg[800], win[900], tmpf[900];
    struct oc_err err;
    snprintf(ds, sizeof(ds), "%s/dgds", oc_test_tmpdir());
    snprintf(plan, sizeof(plan), "%s/userplan", oc_test_tmpdir());
    snprintf(dg, sizeof(dg), "%s/diskgnn", plan);
    struct proc_run r;
    OC_CHECK(generate(ds, "2000", &r) == 0);
    proc_run_free(&r);
    /* The user's files, named like diskgnn's windows and temporaries, unlocked and old. */
    OC_CHECK_OK(oc_mkdir_p(dg, &err), &err);
    snprintf(win, sizeof(win), "%s/w0.0-0123456789abcdef.bin", dg);
    snprintf(tmpf, sizeof(tmpf), "%s/w0.0.rec.tmp-%s-%ld-0123456789ab-0", dg, oc_tmp_host_id(),
             dead_pid());
    write_text(win, "a user's file\n");
    write_text(tmpf, "another\n");
    age(win, 3 * 86400);
    age(tmpf, 3 * 86400);
    const char *args[] = {"train",     ds,         "--strategy", "diskgnn", "--plan-dir",
                          plan,        "--epochs", "1",          "--eval",  "none",
                          "--threads", "1",        NULL};
    run(args, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(oc_path_exists(win) && oc_path_exists(tmpf));
    OC_CHECK(has(r.err, "not offcore's"));
    proc_run_free(&r);

    /* A plan directory offcore makes itself is marked and cleaned as before. */
    snprintf(plan, sizeof(plan), "%s/ownplan", oc_test_tmpdir());
    args[5] = plan;
    run(args, &r);
    OC_CHECK(r.code == 0);
    snprintf(win, sizeof(win), "%s/diskgnn/%s", plan, OC_OWNED_MARKER);
    OC_CHECK(oc_path_exists(win));
    proc_run_free(&r);
}

OC_TEST(refused_scratch_leaves_no_directory_it_created)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], made[800], scratch[1200], name[300];
    snprintf(ds, sizeof(ds), "%s/scds", oc_test_tmpdir());
    snprintf(made, sizeof(made), "%s/made", oc_test_tmpdir());
    memset(name, 'a', 299); /* past NAME_MAX: mkdir fails after "made" was created */
    name[299] = '\0';
    snprintf(scratch, sizeof(scratch), "%s/sub/%s", made, name);
    struct proc_run r;
    OC_CHECK(generate(ds, "4000", &r) == 0);
    proc_run_free(&r);
    /* layer outputs of 4000 x 1280 floats: past a quarter of the budget, so on disk */
    const char *args[] = {"train",        ds,    "--eval",    "full",  "--eval-batch", "64",
                          "--batch",      "64",  "--fanout",  "5,5",   "--hidden",     "1280",
                          "--mem-budget", "64M", "--scratch", scratch, "--epochs",     "1",
                          "--threads",    "1",   NULL};
    proc_run_cli(args, CLI_TIMEOUT_S, &r);
    OC_CHECK(r.code > 0 && r.code < 128);
    OC_CHECK(!oc_path_exists(made));
    proc_run_free(&r);
}

/* 5 nodes as .npy: edges, features, labels, three splits. */
static void write_npy_source(const char *dir)
{
    int64_t e[6] = {0, 1, 1, 2, 3, 4};
    uint64_t es[2] = {3, 2};
    fx_write_npy(dir, "edges.npy", OC_DTYPE_I64, 2, es, e, 0);
    float f[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    uint64_t fs[2] = {5, 2};
    fx_write_npy(dir, "features.npy", OC_DTYPE_F32, 2, fs, f, 0);
    int32_t lab[5] = {1, 0, 1, 0, 1};
    uint64_t ls[1] = {5};
    fx_write_npy(dir, "labels.npy", OC_DTYPE_I32, 1, ls, lab, 0);
    uint32_t tr[2] = {0, 1}, va[1] = {3}, te[1] = {4};
    uint64_t s2[1] = {2}, s1[1] = {1};
    fx_write_npy(dir, "train_idx.npy", OC_DTYPE_U32, 1, s2, tr, 0);
    fx_write_npy(dir, "val_idx.npy", OC_DTYPE_U32, 1, s1, va, 0);
    fx_write_npy(dir, "test_idx.npy", OC_DTYPE_U32, 1, s1, te, 0);
}

/* `import KIND src out` fails (exit 1) with want in stderr and leaves no output. */
static void check_import_refused(const char *kind, const char *src, const char *out,
                                 const char *want)
{
    const char *args[] = {"import", kind, src, out, NULL};
    struct proc_run r;
    proc_run_cli(args, 20.0, &r);
    int ok = r.code == 1 && has(r.err, want) && !oc_path_exists(out);
    if (!ok)
        fprintf(stderr, "  import %s (want \"%s\"): exit %d, stderr: %s\n", kind, want, r.code,
                r.err ? r.err : "(none)");
    OC_CHECK(ok);
    proc_run_free(&r);
}

/* Replaces src/name by each kind of unreadable thing in turn; each import must refuse it. */
static void check_unreadable(const char *kind, const char *src, const char *name)
{
    char p[800], keep[900], out[800], want[900];
    snprintf(p, sizeof(p), "%s/%s", src, name);
    snprintf(keep, sizeof(keep), "%s.keep", p);
    snprintf(out, sizeof(out), "%s/../out-%s", src, kind);
    OC_CHECK(rename(p, keep) == 0);
    OC_CHECK(mkfifo(p, 0644) == 0);
    snprintf(want, sizeof(want), "%s: is not a regular file (fifo)", name);
    check_import_refused(kind, src, out, want);
    unlink(p);
    OC_CHECK(mkdir(p, 0755) == 0);
    snprintf(want, sizeof(want), "%s: is not a regular file (directory)", name);
    check_import_refused(kind, src, out, want);
    rmdir(p);
    const char *devs[] = {"/dev/zero", "/dev/urandom"};
    for (int i = 0; i < 2; i++) {
        OC_CHECK(symlink(devs[i], p) == 0);
        snprintf(want, sizeof(want), "%s: is not a regular file (character device)", name);
        check_import_refused(kind, src, out, want);
        unlink(p);
    }
    OC_CHECK(symlink("no-such-file", p) == 0);
    snprintf(want, sizeof(want), "%s: is a dangling symbolic link", name);
    check_import_refused(kind, src, out, want);
    unlink(p);
    OC_CHECK(rename(keep, p) == 0);
}

OC_TEST(import_npy_refuses_unreadable_optional_inputs)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char src[700], out[800];
    snprintf(src, sizeof(src), "%s/npysrc", oc_test_tmpdir());
    write_npy_source(src);
    const char *names[] = {"features.npy", "labels.npy", "train_idx.npy", "val_idx.npy"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        check_unreadable("npy", src, names[i]);
    /* Restored, the import succeeds. */
    snprintf(out, sizeof(out), "%s/npyout", oc_test_tmpdir());
    const char *args[] = {"import", "npy", src, out, NULL};
    struct proc_run r;
    run(args, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
}

OC_TEST(import_text_split_files_stand_on_their_own)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char src[700], out[800], p[900];
    snprintf(src, sizeof(src), "%s/txtsrc", oc_test_tmpdir());
    fx_write_text5(src);
    check_unreadable("text", src, "train_idx.txt");
    check_unreadable("text", src, "test_idx.txt");
    check_unreadable("text", src, "features.txt");
    /* train_idx.txt missing: val and test are still imported. */
    snprintf(p, sizeof(p), "%s/train_idx.txt", src);
    unlink(p);
    snprintf(out, sizeof(out), "%s/txtout", oc_test_tmpdir());
    const char *args[] = {"import", "text", src, out, NULL};
    struct proc_run r;
    run(args, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    struct fx_ds d;
    struct oc_err err;
    OC_CHECK_OK(fx_ds_load(out, &d, &err), &err);
    OC_CHECK(d.n_split[0] == 0 && d.n_split[1] == 2 && d.n_split[2] == 1);
    fx_ds_free(&d);
    /* meta.txt declaring away a file that is there: refused. */
    fx_write(src, "train_idx.txt", "0\n1\n");
    snprintf(out, sizeof(out), "%s/txtout2", oc_test_tmpdir());
    fx_write(src, "meta.txt", "num_nodes 5\nnum_features 0\nnum_classes 2\n");
    check_import_refused("text", src, out, "declares num_features 0");
    fx_write(src, "meta.txt", "num_nodes 5\nnum_features 2\nnum_classes 0\n");
    check_import_refused("text", src, out, "declares num_classes 0");
}

/* Copies dataset src to dst with the manifest's n_classes (10) replaced by n_classes. */
static int with_n_classes(const char *src, const char *dst, const char *n_classes)
{
    char cmd[3000];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst);
    if (system(cmd) != 0)
        return -1;
    char path[900], *text = NULL;
    size_t len = 0;
    struct oc_err err;
    snprintf(path, sizeof(path), "%s/manifest.json", dst);
    if (oc_read_file(path, 0, &text, &len, &err) != OC_OK)
        return -1;
    const char *key = "\"n_classes\":\t10,";
    char *at = strstr(text, key);
    int rc = -1;
    if (at) {
        char *out = malloc(len + 64);
        int n = snprintf(out, len + 64, "%.*s\"n_classes\":\t%s,%s", (int)(at - text), text,
                         n_classes, at + strlen(key));
        rc = oc_write_file_atomic(path, out, (size_t)n, &err) == OC_OK ? 0 : -1;
        free(out);
    }
    oc_free(text);
    return rc;
}

OC_TEST(declared_class_counts_never_size_the_output)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], big[800];
    snprintf(ds, sizeof(ds), "%s/clsds", oc_test_tmpdir());
    snprintf(big, sizeof(big), "%s/clsbig", oc_test_tmpdir());
    struct proc_run r;
    OC_CHECK(generate(ds, "1000", &r) == 0);
    proc_run_free(&r);
    OC_CHECK(with_n_classes(ds, big, "10000000") == 0);
    const char *info[] = {"info", big, NULL};
    run(info, &r);
    OC_CHECK(r.code == 0 && r.out && strlen(r.out) < 4096);
    OC_CHECK(has(r.out, "classes      10000000") && has(r.out, "(10 non-empty)"));
    proc_run_free(&r);
    /* 2^31: beyond the model's 2^30, refused by every command the same way, at once. */
    OC_CHECK(with_n_classes(ds, big, "2147483648") == 0);
    const char *train[] = {"train", big, "--epochs", "1", "--threads", "1", NULL};
    const char *const *cmds[] = {info, train};
    for (int c = 0; c < 2; c++) {
        proc_run_cli(cmds[c], 20.0, &r);
        OC_CHECK(r.code == 1 && has(r.err, "'n_classes' too large (2147483648, limit 1073741824)"));
        OC_CHECK(!r.out || strlen(r.out) < 4096);
        proc_run_free(&r);
    }
}

/* Sleeps ms milliseconds. */
static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

OC_TEST(mmap_reports_a_file_truncated_under_it)
{
    const char *bin = getenv("OC_BIN");
    if (!bin)
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], feat[800], errp[800], outp[800];
    snprintf(ds, sizeof(ds), "%s/mmds", oc_test_tmpdir());
    snprintf(feat, sizeof(feat), "%s/features.npy", ds);
    snprintf(errp, sizeof(errp), "%s/mm.stderr", oc_test_tmpdir());
    snprintf(outp, sizeof(outp), "%s/mm.stdout", oc_test_tmpdir());
    const char *gen[] = {"generate",  "--nodes", "8000", "--feat-dim", "512",
                         "--threads", "1",       ds,     NULL};
    struct proc_run r;
    run(gen, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    struct stat st;
    OC_CHECK(stat(feat, &st) == 0);
    char *argv[] = {(char *)bin, "train", ds,       "--strategy", "mmap",    "--epochs", "1000",
                    "--threads", "2",     "--eval", "none",       "--quiet", NULL};
    pid_t pid = proc_spawn2(argv, outp, errp);
    OC_CHECK(pid > 0);
    /* Let it open the dataset (checksums) and start training, then cut the file short and
       give it back, again and again: a copy in flight finds its pages gone. */
    int fd = open(feat, O_WRONLY);
    OC_CHECK(fd >= 0);
    int code = -1;
    double t0 = oc_now_s();
    for (int started = 0; oc_now_s() - t0 < 60;) {
        int stt;
        pid_t w = waitpid(pid, &stt, WNOHANG);
        if (w == pid) {
            code = WIFEXITED(stt) ? WEXITSTATUS(stt) : 128 + WTERMSIG(stt);
            break;
        }
        if (!started) {
            nap_ms(200);
            char *text = NULL;
            size_t len;
            struct oc_err err;
            started = oc_read_file(outp, 0, &text, &len, &err) == OC_OK && strstr(text, "Epoch");
            oc_free(text);
            continue;
        }
        OC_CHECK(ftruncate(fd, 4096) == 0);
        nap_ms(1);
        OC_CHECK(ftruncate(fd, st.st_size) == 0);
        nap_ms(2);
    }
    if (code == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(fd);
    char *text = NULL;
    size_t len;
    struct oc_err err;
    if (oc_read_file(errp, 0, &text, &len, &err) != OC_OK)
        text = NULL;
    int ok = code == 1 && has(text, "truncated");
    if (!ok)
        fprintf(stderr, "  train --strategy mmap: exit %d%s, stderr: %.2000s\n", code,
                code == 128 + SIGBUS ? " (SIGBUS)" : "", text ? text : "(none)");
    OC_CHECK(ok);
    oc_free(text);
}

OC_TEST(nonfinite_features_stop_training)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], feat[800], man[800];
    snprintf(ds, sizeof(ds), "%s/infds", oc_test_tmpdir());
    snprintf(feat, sizeof(feat), "%s/features.npy", ds);
    snprintf(man, sizeof(man), "%s/manifest.json", ds);
    struct proc_run r;
    OC_CHECK(generate(ds, "2000", &r) == 0);
    proc_run_free(&r);
    /* Every feature Inf, written past the importer's check; the manifest's CRC follows. */
    struct oc_err err;
    char *data = NULL, *text = NULL;
    size_t len = 0, tlen = 0;
    OC_CHECK_OK(oc_read_file(feat, 0, &data, &len, &err), &err);
    OC_CHECK_OK(oc_read_file(man, 0, &text, &tlen, &err), &err);
    if (!data || !text || len <= OC_NPY_HEADER_BYTES) {
        oc_free(data);
        oc_free(text);
        return;
    }
    char old_crc[16], new_crc[16];
    snprintf(old_crc, sizeof(old_crc), "%08x", (unsigned)oc_crc32(0, data, len));
    float inf = INFINITY;
    for (size_t off = OC_NPY_HEADER_BYTES; off + 4 <= len; off += 4)
        memcpy(data + off, &inf, 4);
    snprintf(new_crc, sizeof(new_crc), "%08x", (unsigned)oc_crc32(0, data, len));
    char *at = strstr(text, old_crc);
    OC_CHECK(at != NULL);
    if (at)
        memcpy(at, new_crc, 8);
    OC_CHECK_OK(oc_write_file_atomic(feat, data, len, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(man, text, tlen, &err), &err);
    oc_free(data);
    oc_free(text);
    const char *info[] = {"info", ds, NULL};
    run(info, &r); /* a valid dataset: only training finds the values */
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    const char *train[] = {"train", ds, "--epochs", "2", "--threads", "1", NULL};
    proc_run_cli(train, CLI_TIMEOUT_S, &r);
    OC_CHECK(r.code == 1 && has(r.err, "hold inf") && has(r.err, "non-finite features"));
    OC_CHECK(!has(r.out, "weights_sha256"));
    proc_run_free(&r);
}

OC_TEST_MAIN()
