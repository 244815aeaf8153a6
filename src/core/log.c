/*
 * log.c — the process-wide logging callback. The library never prints; it
 * formats a message and hands it to the sink the application installed.
 *
 * Place in the data flow: core; any module may log.
 * Thread-safety: oc_log may be called from any thread; the sink must be
 * thread-safe itself. Install the sink before starting threads.
 * Ownership: the message buffer is valid only during the callback.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "offcore/core.h"

static oc_log_fn log_fn;
static void *log_ctx;
static _Atomic int log_min = OC_LOG_INFO;

void oc_log_set_callback(oc_log_fn fn, void *ctx, enum oc_log_level min_level)
{
    log_fn = fn;
    log_ctx = ctx;
    atomic_store(&log_min, (int)min_level);
}

void oc_log(enum oc_log_level level, const char *fmt, ...)
{
    if (!log_fn || (int)level < atomic_load(&log_min))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_fn(log_ctx, level, msg);
}
