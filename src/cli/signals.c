/*
 * signals.c — what Ctrl-C, SIGTERM and SIGHUP do to a running offcore: this
 * run's temporaries (the registry of io.h: a dataset being generated or
 * imported, plan files being written, a checkpoint being replaced) are
 * removed, a line says so on stderr, and the process exits with 128 + the
 * signal's number, as if the signal had killed it. A signal the parent left
 * ignored (nohup's SIGHUP, a background job's SIGINT) stays ignored.
 *
 *   main ──► cli_signals_init: a pipe, the watcher thread, then a handler for
 *            INT, TERM, HUP
 *   any thread, on a signal: the handler write()s the signal number to the
 *            pipe (async-signal-safe, nothing else)
 *   watcher: read(pipe) ──► oc_tmp_remove_registered(keep_locked) ──► _exit(128 + sig)
 *
 * Why a handler and a pipe rather than blocking the signals and sigwait():
 * threads that libraries start before main (OpenBLAS's) do not inherit a
 * mask set in main, and a blocked-everywhere-else signal delivered to one of
 * them would take the default action and skip the removal. The handler
 * runs in whichever thread the kernel picks and only wakes the watcher, so
 * the removal is ordinary code (locks, opendir, unlinkat) in a normal
 * thread. The registry stays locked from the removal to _exit, so no thread
 * renames or registers a temporary meanwhile. kill -9 cannot be caught: its
 * temporaries are removed by the next run that writes to the same place
 * (oc_tmp_clean_stale).
 *
 * Place in the data flow: cli (only the CLI exits the process).
 * Thread-safety: cli_signals_init runs once, in main.
 * Ownership: the watcher thread is detached and lives until exit; the pipe
 * is never closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "offcore/io.h"

static int wake[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t w = write(wake[1], &c, 1); /* a full pipe: a signal is already on its way */
    (void)w;
    errno = saved;
}

static void *watcher(void *arg)
{
    (void)arg;
    unsigned char c = 0;
    while (read(wake[0], &c, 1) != 1)
        ;
    int sig = c;
    unsigned n = oc_tmp_remove_registered(1);
    fprintf(stderr, "\noffcore: %s: stopped; removed %u temporary path(s)\n", strsignal(sig), n);
    _exit(128 + sig);
}

int cli_signals_init(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    pthread_t t;
    if (pipe2(wake, O_CLOEXEC) != 0)
        return -1;
    if (pthread_create(&t, NULL, watcher, NULL) != 0) {
        close(wake[0]);
        close(wake[1]);
        return -1; /* the default actions, then */
    }
    pthread_detach(t);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    return 0;
}
