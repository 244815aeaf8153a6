/*
 * space.c — free space on the filesystem that will hold an output, asked
 * before a large write (statvfs), so a dataset that cannot fit is refused
 * up front instead of filling the disk and failing with ENOSPC half-way.
 *
 * Place in the data flow: io; the dataset importers and the generator call
 * it through their size gate before creating anything big.
 * Thread-safety: stateless.
 * Ownership: paths are borrowed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "offcore/io.h"

/* The directory that will hold path: path itself when it is one, else its parent. */
static void holder_dir(const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "%s", path);
    for (;;) {
        struct statvfs sv;
        if (statvfs(buf, &sv) == 0)
            return;
        char *slash = strrchr(buf, '/');
        while (slash && slash > buf && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(buf, '/');
        }
        if (!slash) {
            snprintf(buf, n, ".");
            return;
        }
        if (slash == buf) {
            snprintf(buf, n, "/");
            return;
        }
        *slash = '\0';
    }
}

int oc_fs_free_bytes(const char *path, uint64_t *bytes, struct oc_err *err)
{
    char dir[4096];
    struct statvfs sv;
    *bytes = 0;
    holder_dir(path, dir, sizeof(dir));
    if (statvfs(dir, &sv) != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_status_from_errno(e), e, "%s: cannot read free space: %s", dir,
                            strerror(e));
    }
    uint64_t unit = sv.f_frsize ? (uint64_t)sv.f_frsize : (uint64_t)sv.f_bsize;
    uint64_t blocks = (uint64_t)sv.f_bavail;
    *bytes = unit && blocks > UINT64_MAX / unit ? UINT64_MAX : blocks * unit;
    return OC_OK;
}

int oc_fs_check_space(const char *path, uint64_t need, const char *what, struct oc_err *err)
{
    uint64_t avail;
    int rc = oc_fs_free_bytes(path, &avail, err);
    if (rc)
        return rc;
    if (need <= avail)
        return OC_OK;
    char a[32], b[32];
    return OC_ERR(err, OC_ERR_NOSPC,
                  "%s: %s needs %" PRIu64 " bytes (%s) but its filesystem has only %" PRIu64
                  " bytes (%s) free",
                  path, what ? what : "the output", need, oc_format_size(need, a, sizeof(a)), avail,
                  oc_format_size(avail, b, sizeof(b)));
}
