/*
 * buf_file.c — aligned I/O buffers and struct oc_file: open with O_DIRECT when
 * the filesystem allows it, exact and up-to-EOF positional reads, exact
 * positional writes, size/truncate/sync/close.
 *
 * Place in the data flow: the bottom of io; the batch reader, the writer, the
 * line reader, fsutil and the dataset module read and write through here.
 * Every open, pread, pwrite and fsync passes through oc_fault_hit() so tests
 * can fail the Nth open, read (EIO, or a short read = premature end of file),
 * write (ENOSPC, EIO) or fsync. Only regular files open: a FIFO, directory or
 * device named where a file is expected is refused at once, never waited on.
 * Thread-safety: an oc_file is immutable after open; pread/pwrite on it may
 * run from many threads at once. Open/close belong to one owner.
 * Ownership: oc_file_close frees the record; paths are copied at open.
 *
 * O_DIRECT: the file is opened normally, then O_DIRECT is switched on with
 * fcntl(F_SETFL). A filesystem that cannot do direct I/O refuses with EINVAL
 * and the file stays buffered (is_direct = 0). Doing it this way (rather than
 * open(O_DIRECT) and a second open on EINVAL) keeps O_CREAT|O_EXCL meaningful:
 * the refused open would already have created the file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_int.h"

void *oc_io_buf_alloc(size_t bytes, const char *consumer, struct oc_err *err)
{
    size_t n = (size_t)oc_io_align_up(bytes ? bytes : 1);
    return oc_alloc_aligned(n, OC_IO_ALIGN, consumer, err);
}

/* What a non-regular file is, for "is not a regular file (...)". */
static const char *mode_kind(mode_t mode)
{
    const char *what;
    if (S_ISFIFO(mode))
        what = "fifo";
    else if (S_ISDIR(mode))
        what = "directory";
    else if (S_ISCHR(mode))
        what = "character device";
    else if (S_ISBLK(mode))
        what = "block device";
    else if (S_ISSOCK(mode))
        what = "socket";
    else
        what = "special file";
    return what;
}

int oc_io_check_regular(int fd, const char *path, struct oc_err *err)
{
    struct stat st;
    char eb[128];

    if (fstat(fd, &st) != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: fstat failed: %s", path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    if (S_ISREG(st.st_mode))
        return OC_OK;
    return OC_ERR(err, OC_ERR_IO, "%s: is not a regular file (%s)", path, mode_kind(st.st_mode));
}

int oc_file_optional(const char *path, int *present, struct oc_err *err)
{
    struct stat st;
    char eb[128];
    *present = 0;
    if (lstat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return OC_OK; /* nothing by that name: absent */
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: cannot examine: %s", path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: is a dangling symbolic link", path);
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: cannot examine: %s", path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    if (!S_ISREG(st.st_mode))
        return OC_ERR(err, OC_ERR_IO, "%s: is not a regular file (%s)", path,
                      mode_kind(st.st_mode));
    *present = 1;
    return OC_OK;
}

int oc_file_open(const char *path, unsigned flags, struct oc_file **out, struct oc_err *err)
{
    struct oc_file *f = NULL;
    int fd = -1, oflags = O_CLOEXEC, rc;
    char eb[128];

    *out = NULL;
    if (!path || !*path)
        return OC_ERR(err, OC_ERR_ARG, "oc_file_open: empty path");
    if ((flags & OC_FILE_READ) && (flags & OC_FILE_WRITE))
        oflags |= O_RDWR;
    else if (flags & OC_FILE_WRITE)
        oflags |= O_WRONLY;
    else if (flags & OC_FILE_READ)
        oflags |= O_RDONLY;
    else
        return OC_ERR(err, OC_ERR_ARG, "%s: open: neither OC_FILE_READ nor OC_FILE_WRITE", path);
    if ((flags & (OC_FILE_CREATE | OC_FILE_TRUNC)) && !(flags & OC_FILE_WRITE))
        return OC_ERR(err, OC_ERR_ARG, "%s: open: create/truncate without OC_FILE_WRITE", path);
    if (flags & OC_FILE_CREATE)
        oflags |= O_CREAT | O_EXCL;
    else if (flags & OC_FILE_TRUNC)
        oflags |= O_CREAT | O_TRUNC;

    f = oc_calloc(1, sizeof(*f), "io file", err);
    if (!f)
        return err ? err->status : OC_ERR_NOMEM;
    f->fd = -1;
    f->path = oc_strdup(path, "io file", err);
    if (!f->path) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    /*
     * O_NONBLOCK: opening a FIFO (for reading or writing) or a terminal would
     * otherwise block until a peer shows up; with it the open returns at once
     * (or fails with ENXIO) and fstat below refuses whatever is not a regular
     * file. On a regular file O_NONBLOCK has no effect; it is cleared anyway.
     */
    do {
        int fe = 0;
        if (oc_fault_hit(OC_FAULT_OPEN, &fe)) {
            fd = -1;
            errno = fe ? fe : EIO;
        } else {
            fd = open(path, oflags | O_NONBLOCK, 0644);
        }
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        if (e == ENXIO) /* a FIFO without a reader, opened for writing */
            rc = OC_ERR(err, OC_ERR_IO, "%s: is not a regular file (fifo)", path);
        else
            rc = OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot open: %s", path,
                              oc_io_strerror(e, eb, sizeof(eb)));
        goto fail;
    }
    f->fd = fd;
    rc = oc_io_check_regular(fd, path, err);
    if (rc)
        goto fail;
    {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            int e = errno;
            rc = OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: fcntl(O_NONBLOCK) failed: %s", path,
                              oc_io_strerror(e, eb, sizeof(eb)));
            goto fail;
        }
    }
    f->flags = flags;
    if (flags & OC_FILE_DIRECT) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0) {
            int e = errno;
            rc = OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: fcntl(F_GETFL) failed: %s", path,
                              oc_io_strerror(e, eb, sizeof(eb)));
            goto fail;
        }
        if (fcntl(fd, F_SETFL, fl | O_DIRECT) == 0) {
            f->is_direct = 1;
        } else {
            int e = errno;
            if (e != EINVAL) {
                rc = OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: cannot enable O_DIRECT: %s", path,
                                  oc_io_strerror(e, eb, sizeof(eb)));
                goto fail;
            }
            oc_log(OC_LOG_DEBUG, "%s: filesystem refuses O_DIRECT; using buffered I/O", path);
        }
    }
    *out = f;
    return OC_OK;
fail:
    if (fd >= 0)
        close(fd);
    if (f) {
        oc_free(f->path);
        oc_free(f);
    }
    return rc;
}

int oc_file_close(struct oc_file *f, struct oc_err *err)
{
    int rc = OC_OK;
    char eb[128];

    if (!f)
        return OC_OK;
    if (f->fd >= 0 && close(f->fd) != 0) {
        int e = errno;
        /* EINTR on close: the descriptor is gone on Linux; nothing to retry. */
        if (e != EINTR)
            rc = OC_ERR_ERRNO(err, oc_io_status_rw(e), e, "%s: close failed: %s", f->path,
                              oc_io_strerror(e, eb, sizeof(eb)));
    }
    oc_free(f->path);
    oc_free(f);
    return rc;
}

const char *oc_file_path(const struct oc_file *f)
{
    return f->path;
}

int oc_file_fd(const struct oc_file *f)
{
    return f->fd;
}

int oc_file_is_direct(const struct oc_file *f)
{
    return f->is_direct;
}

int oc_file_size(const struct oc_file *f, uint64_t *bytes, struct oc_err *err)
{
    struct stat st;
    char eb[128];

    if (fstat(f->fd, &st) != 0) {
        int e = errno;
        *bytes = 0;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: fstat failed: %s", f->path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    *bytes = (uint64_t)st.st_size;
    return OC_OK;
}

static int check_aligned(const struct oc_file *f, const char *what, const void *buf, size_t len,
                         uint64_t off, struct oc_err *err)
{
    if (!f->is_direct)
        return OC_OK;
    if (!oc_io_is_aligned((uint64_t)(uintptr_t)buf) || !oc_io_is_aligned(len) ||
        !oc_io_is_aligned(off))
        return OC_ERR(err, OC_ERR_ARG,
                      "%s: O_DIRECT %s of %zu bytes at offset %" PRIu64 " into %p is not "
                      "aligned to %u bytes",
                      f->path, what, len, off, buf, OC_IO_ALIGN);
    return OC_OK;
}

int oc_io_err_truncated(struct oc_file *f, size_t len, uint64_t off, uint64_t got,
                        struct oc_err *err)
{
    struct stat st;
    uint64_t end = off + got;

    /*
     * Report where the file really ends; an injected short read leaves the
     * file longer than the read, and then where the data stopped is the truth.
     */
    if (fstat(f->fd, &st) == 0 && (uint64_t)st.st_size < off + len)
        end = (uint64_t)st.st_size;
    return OC_ERR(err, OC_ERR_FORMAT,
                  "%s: truncated: wanted %zu bytes at offset %" PRIu64 ", file ends at %" PRIu64,
                  f->path, len, off, end);
}

int oc_file_pread_upto(struct oc_file *f, void *buf, size_t len, uint64_t off, size_t *n_read,
                       struct oc_err *err)
{
    size_t done = 0;
    char eb[128];
    int rc;

    *n_read = 0;
    rc = check_aligned(f, "read", buf, len, off, err);
    if (rc)
        return rc;
    while (done < len) {
        int fe = 0;
        ssize_t r;
        if (oc_fault_hit(OC_FAULT_READ, &fe)) {
            r = fe ? -1 : 0;
            errno = fe;
        } else {
            r = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
        }
        if (r < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            return OC_ERR_ERRNO(err, oc_io_status_rw(e), e,
                                "%s: read of %zu bytes at offset %" PRIu64 " failed: %s", f->path,
                                len, off, oc_io_strerror(e, eb, sizeof(eb)));
        }
        if (r == 0)
            break;
        done += (size_t)r;
        /* O_DIRECT returns a partial block only at end of file. */
        if (f->is_direct && !oc_io_is_aligned(done))
            break;
    }
    *n_read = done;
    return OC_OK;
}

int oc_file_pread(struct oc_file *f, void *buf, size_t len, uint64_t off, struct oc_err *err)
{
    size_t got;
    int rc = oc_file_pread_upto(f, buf, len, off, &got, err);
    if (rc)
        return rc;
    if (got < len)
        return oc_io_err_truncated(f, len, off, got, err);
    return OC_OK;
}

int oc_file_pwrite(struct oc_file *f, const void *buf, size_t len, uint64_t off, struct oc_err *err)
{
    size_t done = 0;
    char eb[128];
    int rc = check_aligned(f, "write", buf, len, off, err);

    if (rc)
        return rc;
    while (done < len) {
        int fe = 0;
        ssize_t r;
        if (oc_fault_hit(OC_FAULT_WRITE, &fe)) {
            r = -1;
            errno = fe ? fe : EIO;
        } else {
            r = pwrite(f->fd, (const char *)buf + done, len - done, (off_t)(off + done));
        }
        if (r < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            return OC_ERR_ERRNO(err, oc_io_status_rw(e), e,
                                "%s: write of %zu bytes at offset %" PRIu64 " failed: %s", f->path,
                                len, off, oc_io_strerror(e, eb, sizeof(eb)));
        }
        if (r == 0)
            return OC_ERR(err, OC_ERR_IO,
                          "%s: write of %zu bytes at offset %" PRIu64 " made no progress", f->path,
                          len, off);
        done += (size_t)r;
    }
    return OC_OK;
}

int oc_file_truncate(struct oc_file *f, uint64_t bytes, struct oc_err *err)
{
    char eb[128];
    int r;

    do {
        r = ftruncate(f->fd, (off_t)bytes);
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_io_status_rw(e), e,
                            "%s: truncate to %" PRIu64 " bytes failed: %s", f->path, bytes,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    return OC_OK;
}

int oc_file_sync(struct oc_file *f, struct oc_err *err)
{
    char eb[128];
    int fe = 0, r;

    if (oc_fault_hit(OC_FAULT_FSYNC, &fe)) {
        r = -1;
        errno = fe ? fe : EIO;
    } else {
        r = fsync(f->fd);
    }
    if (r != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_io_status_rw(e), e, "%s: fsync failed: %s", f->path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    return OC_OK;
}
