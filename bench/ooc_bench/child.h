/*
 * child.h — ooc_bench's forked children: a function run in a child process
 * that reports to the parent through a pipe as tagged, length-prefixed
 * messages, and a handler that keeps one fixed-size reply.
 *
 * Place in the data flow: bench/ooc_bench only; every measurement that holds
 * library memory runs in a child, so each one's peak RSS is its own.
 * Thread-safety: call child_run from a single-threaded parent (it forks).
 * Ownership: a message passed to a handler is valid only during the call.
 */
#ifndef OOC_BENCH_CHILD_H
#define OOC_BENCH_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "offcore/core.h"

typedef void (*child_fn)(void *ctx, int fd);
typedef void (*child_msg_fn)(void *ctx, uint32_t tag, const void *p, uint32_t len);

/* Sends one message (tag, len bytes of p) down fd; 0, or -1 on a write error. */
int child_send(int fd, uint32_t tag, const void *p, uint32_t len);
/*
 * Runs fn in a forked child that writes messages to fd; on_msg gets each.
 * *ru receives the child's resource usage (ru_maxrss: its own peak RSS).
 * Returns 0 if the child exited with status 0, else -1 with why in why.
 */
int child_run(child_fn fn, void *ctx, child_msg_fn on_msg, void *mctx, struct rusage *ru, char *why,
              size_t why_n);
/* The library's warnings and errors to stderr, indented (the children's log). */
void child_log_to_stderr(void *ctx, enum oc_log_level level, const char *msg);

/* One fixed-size reply: child_on_reply copies a message of this tag and length to dst. */
struct child_reply {
    uint32_t tag;
    void *dst;
    size_t len;
    int got;
};
void child_on_reply(void *ctx, uint32_t tag, const void *p, uint32_t len);

#endif
