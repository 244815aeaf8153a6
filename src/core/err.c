/*
 * err.c — status names and the caller-owned error record.
 *
 * Place in the data flow: core; every module reports failures through here.
 * Thread-safety: functions touch only the record passed in.
 * Ownership: the record is caller storage; messages are copied into it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "offcore/core.h"

const char *oc_status_str(int status)
{
    switch (status) {
    case OC_OK:
        return "ok";
    case OC_ERR_NOMEM:
        return "out of memory";
    case OC_ERR_BUDGET:
        return "over memory budget";
    case OC_ERR_IO:
        return "i/o error";
    case OC_ERR_NOSPC:
        return "no space left";
    case OC_ERR_FORMAT:
        return "bad format";
    case OC_ERR_ARG:
        return "invalid argument";
    case OC_ERR_NOTFOUND:
        return "not found";
    case OC_ERR_EXISTS:
        return "already exists";
    case OC_ERR_UNSUPPORTED:
        return "unsupported";
    case OC_ERR_CANCELLED:
        return "cancelled";
    case OC_ERR_INTERNAL:
        return "internal error";
    case OC_ERR_NUMERIC:
        return "not a finite number";
    default:
        return "unknown status";
    }
}

void oc_err_clear(struct oc_err *err)
{
    if (!err)
        return;
    err->status = OC_OK;
    err->sys_errno = 0;
    err->src_file = NULL;
    err->src_line = 0;
    err->msg[0] = '\0';
}

int oc_err_set_at(struct oc_err *err, int status, int sys_errno, const char *src_file, int src_line,
                  const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    err->sys_errno = sys_errno;
    err->src_file = src_file;
    err->src_line = src_line;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    /* Append the errno text unless the caller already wrote it into the message. */
    const char *text = sys_errno ? strerror(sys_errno) : NULL;
    if (text && n >= 0 && (size_t)n < sizeof(err->msg) && !strstr(err->msg, text))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", text);
    return status;
}

int oc_err_prefix(struct oc_err *err, const char *fmt, ...)
{
    if (!err)
        return OC_ERR_INTERNAL;
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t plen = strnlen(prefix, sizeof(prefix) - 1);
    size_t cap = sizeof(err->msg);
    if (plen + 2 >= cap)
        return err->status;
    size_t mlen = strnlen(err->msg, cap - 1);
    if (mlen > cap - 1 - plen - 2)
        mlen = cap - 1 - plen - 2;
    memmove(err->msg + plen + 2, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen] = ':';
    err->msg[plen + 1] = ' ';
    err->msg[plen + 2 + mlen] = '\0';
    return err->status;
}

int oc_status_from_errno(int e)
{
    switch (e) {
    case ENOMEM:
        return OC_ERR_NOMEM;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return OC_ERR_NOSPC;
    case ENOENT:
        return OC_ERR_NOTFOUND;
    case EEXIST:
        return OC_ERR_EXISTS;
    case EINVAL:
        return OC_ERR_ARG;
    default:
        return OC_ERR_IO;
    }
}
