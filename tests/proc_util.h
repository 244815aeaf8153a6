/*
 * proc_util.h — test helpers that run the offcore binary as a child process
 * (stdout to a file, stderr discarded) and wait for it, or for at most a
 * timeout (a hung child is killed).
 */
#ifndef OFFCORE_TEST_PROC_UTIL_H
#define OFFCORE_TEST_PROC_UTIL_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

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

#endif
