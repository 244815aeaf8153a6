/*
 * proc_util.h — test helpers that run the offcore binary as a child process
 * (stdout to a file, stderr discarded) and wait for it, or for at most a
 * timeout (a hung child is killed); proc_run_cli runs `$OC_BIN args...` as a
 * user would and keeps its exit code, stdout and stderr; proc_n_threads
 * counts this process's threads (no thread left behind after a free); age and
 * dead_pid make the stale files and dead owners cleanup tests need.
 */
#ifndef OFFCORE_TEST_PROC_UTIL_H
#define OFFCORE_TEST_PROC_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "offcore/io.h"

extern char **environ;

/* Starts argv (argv[0] a path) with stdout to out_path and stderr to err_path. */
static inline pid_t proc_spawn2(char *const argv[], const char *out_path, const char *err_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* Starts argv with stdout to out_path, stderr discarded; returns the pid or -1. */
static inline pid_t proc_spawn(char *const argv[], const char *out_path)
{
    return proc_spawn2(argv, out_path, "/dev/null");
}

/* Waits for pid: its exit code, or 128 + signal if it was killed, -1 on error. */
static inline int proc_wait(pid_t pid)
{
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Waits at most timeout_s seconds for pid: its exit code as proc_wait, or -2
 * after killing it (SIGKILL) because it was still running (a hang).
 */
static inline int proc_wait_timeout(pid_t pid, double timeout_s)
{
    int st = 0;
    if (pid < 0)
        return -1;
    for (double waited = 0; waited < timeout_s; waited += 0.01) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0)
            return -1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -2;
}

/* One run of the offcore binary: exit code (-2: killed after the timeout), stdout, stderr. */
struct proc_run {
    int code;
    char *out, *err; /* NULL if unreadable; proc_run_free */
};

/*
 * Runs $OC_BIN with args (NULL-terminated, at most 38), stdout and stderr to
 * files in the test's temporary directory, for at most timeout_s seconds.
 */
static inline void proc_run_cli(const char *const *args, double timeout_s, struct proc_run *r)
{
    const char *tmp = oc_test_tmpdir();
    char out[700], errp[700];
    snprintf(out, sizeof(out), "%s/cli.stdout", tmp);
    snprintf(errp, sizeof(errp), "%s/cli.stderr", tmp);
    char *argv[40];
    int n = 0;
    argv[n++] = getenv("OC_BIN");
    for (; args[n - 1] && n < 39; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    r->code = proc_wait_timeout(proc_spawn2(argv, out, errp), timeout_s);
    size_t len;
    struct oc_err err;
    if (oc_read_file(out, 0, &r->out, &len, &err) != OC_OK)
        r->out = NULL;
    if (oc_read_file(errp, 0, &r->err, &len, &err) != OC_OK)
        r->err = NULL;
}

static inline void proc_run_free(struct proc_run *r)
{
    oc_free(r->out);
    oc_free(r->err);
    r->out = r->err = NULL;
}

/* Threads of this process now (/proc/self/task), but the kernel's io_uring workers; -1 if unreadable. */
static inline int proc_n_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], comm[64] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof(comm), f))
                comm[0] = '\0';
            fclose(f);
        }
        n += strncmp(comm, "iou-", 4) != 0;
    }
    closedir(d);
    return n;
}

/*
 * Whether this process has `want` threads (proc_n_threads), waiting up to 3 s:
 * pthread_join returns once the joined thread released its memory, a moment
 * before the kernel takes it off /proc/self/task, which a loaded machine shows.
 */
static inline int proc_n_threads_is(int want)
{
    for (int i = 0; i < 300; i++) {
        if (proc_n_threads() == want)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Sets path's access and modification times to `age_s` seconds ago. */
static inline void age(const char *path, long age_s)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    OC_CHECK(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0);
}

/* A pid that no process has any more (a reaped child's). */
static inline long dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    return (long)c;
}

#endif
