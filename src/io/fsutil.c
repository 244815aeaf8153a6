/*
 * fsutil.c — durable file creation and small filesystem helpers: atomic
 * whole-file writes (tmp + fsync + rename + directory fsync), durable rename,
 * directory fsync, reading a small file, mkdir -p, rm -rf, path helpers (a new
 * output directory's path: trailing slashes dropped, "." and ".." refused).
 *
 * Place in the data flow: io; the dataset builder commits manifests and
 * arrays with these, the planner commits derived artifacts, tests clean up
 * with oc_rm_rf.
 *
 *   oc_write_file_atomic(P):  T = oc_tmp_name(P) (registered) --write, fsync, close-->
 *                             rename(T, P) --> fsync(dir of P)
 *   A crash leaves either the old P or the new P, never a partial one; a
 *   failure removes the temporary file.
 *
 * Opens, fsyncs and renames pass through oc_fault_hit() (OC_FAULT_OPEN, _FSYNC,
 * _RENAME) so tests can fail each of them.
 *
 * Thread-safety: every function may be called from any thread; oc_rm_rf
 * works with directory descriptors (openat/unlinkat), not the cwd.
 * Ownership: oc_read_file returns an oc_alloc'd buffer the caller frees.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_int.h"

#define RM_MAX_DEPTH 256

int oc_path_join(char *buf, size_t n, const char *dir, const char *name, struct oc_err *err)
{
    size_t dl = strlen(dir);
    const char *sep = (dl == 0 || dir[dl - 1] == '/') ? "" : "/";
    int w = snprintf(buf, n, "%s%s%s", dir, sep, name);

    if (w < 0 || (size_t)w >= n) {
        if (n > 0)
            buf[0] = '\0';
        return OC_ERR(err, OC_ERR_ARG, "path %s%s%s is longer than %zu bytes", dir, sep, name,
                      n ? n - 1 : 0);
    }
    return OC_OK;
}

int oc_out_dir_path(char *buf, size_t n, const char *given, struct oc_err *err)
{
    size_t len = given ? strlen(given) : 0;
    while (len > 1 && given[len - 1] == '/')
        len--;
    const char *base = given;
    for (size_t i = 0; i < len; i++)
        if (given[i] == '/')
            base = given + i + 1;
    size_t bl = len - (size_t)(base - given);
    if (bl == 0 || (bl == 1 && base[0] == '.') || (bl == 2 && base[0] == '.' && base[1] == '.'))
        return OC_ERR(err, OC_ERR_ARG,
                      "output path \"%s\" names no new directory (it must end in the new "
                      "directory's name)",
                      given ? given : "");
    if (len >= n)
        return OC_ERR(err, OC_ERR_ARG, "output path %s is longer than %zu bytes", given,
                      n ? n - 1 : 0);
    memcpy(buf, given, len);
    buf[len] = '\0';
    return OC_OK;
}

int oc_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The directory containing path ("." if none) into buf. */
static int parent_dir(const char *path, char *buf, size_t n, struct oc_err *err)
{
    const char *slash = strrchr(path, '/');
    size_t len;

    if (!slash) {
        snprintf(buf, n, ".");
        return OC_OK;
    }
    len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= n)
        return OC_ERR(err, OC_ERR_ARG, "%s: path too long", path);
    memcpy(buf, path, len);
    buf[len] = '\0';
    return OC_OK;
}

int oc_dir_sync(const char *dir, struct oc_err *err)
{
    char eb[128];
    int fe = 0, fd, r;

    if (oc_fault_hit(OC_FAULT_OPEN, &fe)) {
        fd = -1;
        errno = fe ? fe : EIO;
    } else {
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot open directory: %s", dir,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    if (oc_fault_hit(OC_FAULT_FSYNC, &fe)) {
        r = -1;
        errno = fe ? fe : EIO;
    } else {
        r = fsync(fd);
    }
    if (r != 0) {
        int e = errno;
        /* Some filesystems cannot fsync a directory; their renames are as durable as they get. */
        if (e != EINVAL && e != EROFS && e != ENOTSUP) {
            close(fd);
            return OC_ERR_ERRNO(err, oc_io_status_rw(e), e, "%s: directory fsync failed: %s", dir,
                                oc_io_strerror(e, eb, sizeof(eb)));
        }
    }
    close(fd);
    return OC_OK;
}

int oc_rename_durable(const char *tmp, const char *final, struct oc_err *err)
{
    char dir[PATH_MAX], eb[128];
    int rc, fe = 0, r;

    if (oc_fault_hit(OC_FAULT_RENAME, &fe)) {
        r = -1;
        errno = fe ? fe : EIO;
    } else {
        r = rename(tmp, final);
    }
    if (r != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_io_status_open(e), e, "cannot rename %s to %s: %s", tmp, final,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    rc = parent_dir(final, dir, sizeof(dir), err);
    if (rc)
        return rc;
    return oc_dir_sync(dir, err);
}

int oc_write_file_atomic(const char *path, const void *data, size_t len, struct oc_err *err)
{
    char tmp[PATH_MAX];
    struct oc_file *f = NULL;
    int rc;

    if ((rc = oc_tmp_name(tmp, sizeof(tmp), path, err)))
        return rc;
    if ((rc = oc_tmp_create(tmp, OC_TMP_FILE, err)))
        return rc;
    rc = oc_file_open(tmp, OC_FILE_WRITE | OC_FILE_TRUNC, &f, err);
    if (rc)
        goto fail;
    rc = oc_file_pwrite(f, data, len, 0, err);
    if (rc)
        goto fail;
    rc = oc_file_sync(f, err);
    if (rc)
        goto fail;
    rc = oc_file_close(f, err);
    f = NULL;
    if (rc)
        goto fail;
    rc = oc_rename_durable(tmp, path, err);
    if (rc)
        goto fail;
    oc_tmp_unregister(tmp);
    return OC_OK;
fail:
    oc_file_close(f, NULL);
    unlink(tmp);
    oc_tmp_unregister(tmp);
    return rc;
}

int oc_read_file(const char *path, size_t max_bytes, char **data, size_t *len, struct oc_err *err)
{
    struct oc_file *f = NULL;
    char *buf = NULL;
    uint64_t size;
    size_t cap, used = 0, got;
    int rc;

    *data = NULL;
    *len = 0;
    if (max_bytes == 0 || max_bytes > SIZE_MAX / 4)
        max_bytes = SIZE_MAX / 4;
    rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc)
        return rc;
    rc = oc_file_size(f, &size, err);
    if (rc)
        goto out;
    if (size > max_bytes) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: file is %" PRIu64 " bytes, more than the %zu allowed",
                    path, size, max_bytes);
        goto out;
    }
    /*
     * Sizes of /proc files and growing files lie: read until end of file. The
     * buffer keeps one byte for the NUL and one to see a file past the limit.
     */
    cap = (size_t)size + 2 < 4096 ? 4096 : (size_t)size + 2;
    if (cap > max_bytes + 2)
        cap = max_bytes + 2;
    for (;;) {
        if (!buf || used + 1 >= cap) {
            size_t ncap = !buf ? cap : (cap * 2 < max_bytes + 2 ? cap * 2 : max_bytes + 2);
            char *nb = oc_realloc(buf, ncap, "read file", err);
            if (!nb) {
                rc = err ? err->status : OC_ERR_NOMEM;
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        rc = oc_file_pread_upto(f, buf + used, cap - 1 - used, used, &got, err);
        if (rc)
            goto out;
        used += got;
        if (used > max_bytes) {
            rc = OC_ERR(err, OC_ERR_FORMAT, "%s: file is more than the %zu bytes allowed", path,
                        max_bytes);
            goto out;
        }
        if (used + 1 < cap)
            break; /* a short read: end of file */
    }
    buf[used] = '\0';
    *data = buf;
    *len = used;
    buf = NULL;
out:
    oc_free(buf);
    oc_file_close(f, NULL);
    return rc;
}

void oc_rmdir_made(const char *path, const char *made)
{
    char buf[PATH_MAX];
    size_t top = made ? strlen(made) : 0;
    if (!top || strlen(path) >= sizeof(buf) || strncmp(path, made, top) != 0)
        return;
    snprintf(buf, sizeof(buf), "%s", path);
    for (;;) {
        size_t n = strlen(buf);
        while (n > top && buf[n - 1] == '/')
            buf[--n] = '\0';
        if (n < top || (rmdir(buf) != 0 && errno != ENOENT) || n == top)
            return;
        char *slash = strrchr(buf, '/');
        if (!slash)
            return;
        *slash = '\0';
    }
}

int oc_mkdir_p(const char *path, struct oc_err *err)
{
    char made[PATH_MAX];
    return oc_mkdir_p_made(path, made, sizeof(made), err);
}

int oc_mkdir_p_made(const char *path, char *made, size_t made_n, struct oc_err *err)
{
    char buf[PATH_MAX], deepest[PATH_MAX], eb[128];
    size_t n = strlen(path);
    int rc = OC_OK;

    if (made_n)
        made[0] = '\0';
    if (n == 0)
        return OC_ERR(err, OC_ERR_ARG, "oc_mkdir_p: empty path");
    if (n >= sizeof(buf))
        return OC_ERR(err, OC_ERR_ARG, "%s: path too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        if (buf[i - 1] == '/')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0) {
            int e = errno;
            struct stat st;
            if (e != EEXIST) {
                rc = OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot create directory: %s",
                                  buf, oc_io_strerror(e, eb, sizeof(eb)));
                break;
            }
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
                rc = OC_ERR(err, OC_ERR_EXISTS, "%s: exists and is not a directory", buf);
                break;
            }
        } else {
            if (made_n && !made[0] && i < made_n)
                memcpy(made, buf, i + 1); /* the first directory this call created */
            memcpy(deepest, buf, i + 1);
        }
        buf[i] = c;
    }
    if (rc != OC_OK && made_n && made[0]) {
        oc_rmdir_made(deepest, made); /* a failing call leaves nothing it created */
        made[0] = '\0';
    }
    return rc;
}

/*
 * Removes name (relative to parent_fd) and, if it is a directory, everything in
 * it. Symbolic links are removed, never followed (AT_SYMLINK_NOFOLLOW,
 * O_NOFOLLOW). path/plen hold the path for messages.
 */
static int rm_at(int parent_fd, const char *name, char *path, size_t plen, size_t pcap, int depth,
                 struct oc_err *err)
{
    struct stat st;
    char eb[128];
    int rc = OC_OK;

    if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        int e = errno;
        if (e == ENOENT)
            return OC_OK;
        return OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot stat: %s", path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    if (S_ISDIR(st.st_mode)) {
        if (depth >= RM_MAX_DEPTH)
            return OC_ERR(err, OC_ERR_ARG, "%s: directories nested deeper than %d", path,
                          RM_MAX_DEPTH);
        int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            return OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot open directory: %s", path,
                                oc_io_strerror(e, eb, sizeof(eb)));
        }
        DIR *d = fdopendir(fd);
        if (!d) {
            int e = errno;
            close(fd);
            return OC_ERR_ERRNO(err, oc_io_status_open(e), e, "%s: cannot read directory: %s", path,
                                oc_io_strerror(e, eb, sizeof(eb)));
        }
        /* Removing entries while reading may hide others: rescan until a pass removes nothing. */
        for (int removed = 1; removed && rc == OC_OK;) {
            struct dirent *de;
            removed = 0;
            rewinddir(d);
            while (rc == OC_OK && (de = readdir(d)) != NULL) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                size_t nl = strlen(de->d_name);
                size_t sub = plen;
                if (plen + 1 + nl < pcap) {
                    path[plen] = '/';
                    memcpy(path + plen + 1, de->d_name, nl + 1);
                    sub = plen + 1 + nl;
                }
                rc = rm_at(fd, de->d_name, path, sub, pcap, depth + 1, err);
                path[plen] = '\0';
                removed++;
            }
        }
        closedir(d);
        if (rc)
            return rc;
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
            int e = errno;
            return OC_ERR_ERRNO(err, oc_io_status_rw(e), e, "%s: cannot remove directory: %s", path,
                                oc_io_strerror(e, eb, sizeof(eb)));
        }
        return OC_OK;
    }
    if (unlinkat(parent_fd, name, 0) != 0 && errno != ENOENT) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_io_status_rw(e), e, "%s: cannot remove: %s", path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    return OC_OK;
}

int oc_rm_rf(const char *path, struct oc_err *err)
{
    char buf[PATH_MAX], name[PATH_MAX]; /* name stays as given; buf grows for messages */
    size_t n = strlen(path);

    if (n == 0)
        return OC_ERR(err, OC_ERR_ARG, "oc_rm_rf: empty path");
    if (n >= sizeof(buf))
        return OC_ERR(err, OC_ERR_ARG, "%s: path too long", path);
    /* "link/" names the symlink's target, and removing it would empty that: drop the slashes */
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 1 && path[0] == '/')
        return OC_ERR(err, OC_ERR_ARG, "oc_rm_rf: refusing to remove /");
    memcpy(name, path, n);
    name[n] = '\0';
    memcpy(buf, name, n + 1);
    return rm_at(AT_FDCWD, name, buf, n, sizeof(buf), 0, err);
}
