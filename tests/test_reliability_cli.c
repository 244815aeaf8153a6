/*
 * test_reliability_cli.c — issue 49, "Reliability, round 2", run as a user
 * would (the offcore binary, OC_BIN, in a child with a timeout):
 *   - a name is not proof of ownership: generate beside a user's old
 *     "mydata.tmp-2024" directory, and diskgnn with --plan-dir at a user's
 *     directory, delete nothing offcore did not mark as its own (a marked
 *     dead temporary is still removed);
 *   - a refused --scratch DIR leaves no directory it created.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "offcore/io.h"
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

/* Sets path's access and modification times to age_s seconds ago. */
static void age(const char *path, long age_s)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    OC_CHECK(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0);
}

/* A pid that no process has any more (a reaped child's). */
static long dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    return (long)c;
}

static int generate(const char *dir, const char *nodes, struct proc_run *r)
{
    const char *args[] = {"generate", "--nodes", nodes, "--feat-dim", "8", "--threads", "1",
                          dir,        NULL};
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
    snprintf(unmarked, sizeof(unmarked), "%s/mydata.tmp-%s-%ld-0123456789ab-0", w,
             oc_tmp_host_id(), gone);
    snprintf(file, sizeof(file), "%s/mydata.tmp-%s-%ld-0123456789ab-1", w, oc_tmp_host_id(),
             gone);
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
    const char *args[] = {"train",   ds,        "--strategy", "diskgnn", "--plan-dir",
                          plan,      "--epochs", "1",         "--eval",  "none",
                          "--threads", "1",     NULL};
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
    const char *args[] = {"train",     ds,      "--eval",       "full",    "--eval-batch",
                          "64",        "--batch", "64",         "--fanout", "5,5",
                          "--hidden",  "1280",  "--mem-budget", "64M",     "--scratch",
                          scratch,     "--epochs", "1",         "--threads", "1",
                          NULL};
    proc_run_cli(args, CLI_TIMEOUT_S, &r);
    OC_CHECK(r.code > 0 && r.code < 128);
    OC_CHECK(!oc_path_exists(made));
    proc_run_free(&r);
}

OC_TEST_MAIN()
