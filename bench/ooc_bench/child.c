/*
 * child.c — ooc_bench's forked children and their pipe protocol (child.h):
 * each message is a header of two u32 (tag, length) and its bytes.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: the parent is single-threaded; the child writes, the parent
 * reads until end of file, then reaps the child with wait4.
 * Ownership: one static receive buffer of 64 KiB, reused per message.
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 1 = got n bytes, 0 = clean end of file, -1 = error or end mid-record. */
static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, c + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

int child_send(int fd, uint32_t tag, const void *p, uint32_t len)
{
    uint32_t hdr[2] = {tag, len};
    return write_all(fd, hdr, sizeof(hdr)) || write_all(fd, p, len) ? -1 : 0;
}

void child_log_to_stderr(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "  [%s] %s\n", level == OC_LOG_WARN ? "warn" : "error", msg);
}

int child_run(child_fn fn, void *ctx, child_msg_fn on_msg, void *mctx, struct rusage *ru, char *why,
              size_t why_n)
{
    int p[2];
    if (pipe(p) != 0) {
        snprintf(why, why_n, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_n, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        oc_log_set_callback(child_log_to_stderr, NULL, OC_LOG_WARN);
        fn(ctx, p[1]);
        close(p[1]);
        fflush(NULL);
        _exit(0);
    }
    close(p[1]);
    static char buf[1 << 16];
    int bad = 0;
    for (;;) {
        uint32_t hdr[2];
        int r = read_all(p[0], hdr, sizeof(hdr));
        if (r == 0)
            break;
        if (r < 0 || hdr[1] > sizeof(buf) || read_all(p[0], buf, hdr[1]) != 1) {
            bad = 1;
            break;
        }
        on_msg(mctx, hdr[0], buf, hdr[1]);
    }
    close(p[0]);
    int status = 0;
    memset(ru, 0, sizeof(*ru));
    while (wait4(pid, &status, 0, ru) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        snprintf(why, why_n, "child killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bad) {
        snprintf(why, why_n, "child exited with status %d%s", WEXITSTATUS(status),
                 bad ? " (truncated message)" : "");
        return -1;
    }
    return 0;
}

void child_on_reply(void *ctx, uint32_t tag, const void *p, uint32_t len)
{
    struct child_reply *r = ctx;
    if (tag == r->tag && len == r->len) {
        memcpy(r->dst, p, len);
        r->got = 1;
    }
}
