/*
 * tmpname.c — names of temporary files and directories that no two runs
 * share, a registry of this run's live temporaries (removed when the CLI is
 * interrupted), and removal of the temporaries that dead runs left behind.
 *
 *   final path P ──► oc_tmp_name ──► P.tmp-<host>-<pid>-<nonce>-<seq>
 *                                     │       │      │      │      └ per-process counter
 *                                     │       │      │      └ 48 random bits per process
 *                                     │       │      │        (getrandom), so a reused pid
 *                                     │       │      │        never makes the same name
 *                                     │       │      └ pid (decimal) in its pid namespace
 *                                     │       └ 48-bit hash of the kernel's boot id and the
 *                                     │         pid namespace: two containers on one
 *                                     │         machine (or two machines on NFS) differ
 *                                     └ ".tmp-": what stale cleanup looks for
 *
 * Who may remove a temporary (oc_tmp_clean_stale), from its name alone:
 *
 *   same host id, same pid, same nonce     this run: never
 *   same host id, same pid, other nonce    an earlier process whose pid we now hold: dead
 *   same host id, other pid                dead iff kill(pid, 0) fails with ESRCH
 *   other host id                          unknowable (another container, machine or boot):
 *                                          only when nothing in it changed for 24 hours
 *   legacy "P.tmp-<pid>", "P.tmp.<pid>"     (before host ids) pid gone here and 1 hour idle
 *   any other name                         never (not a temporary)
 *
 * A name is not proof of ownership ("mydata.tmp-2024" may be a user's). Stale
 * cleanup (oc_tmp_clean_stale) removes a stale name only when it is provably
 * offcore's:
 *
 *   directory      holds ".offcore-owned" (magic line "offcore-owned 1", then
 *                  "host <id>" and "pid <pid>" equal to its name's): written by
 *                  oc_dir_mark right after offcore creates it
 *   regular file   begins with one of offcore's magics (OWN_MAGICS), or the
 *                  directory being cleaned is itself marked (plan directories)
 *   anything else  never (symlink, FIFO, device, legacy pid-only directory)
 *
 * The registry holds the paths this run has created and not yet renamed or
 * removed. Creating one (oc_tmp_create), renaming it into place
 * (oc_tmp_commit) and removing them all (oc_tmp_remove_registered) each
 * hold its lock, so none of them runs halfway through another: an interrupt
 * leaves no temporary made just after its removal. oc_tmp_remove_registered
 * removes them (rm -rf) on the CLI's
 * signal path (src/cli/signals.c: SIGINT, SIGTERM and SIGHUP are blocked in
 * every thread and one thread sigwait()s, so the removal runs in a normal
 * thread, not in a signal handler, and may lock and call anything).
 *
 * A scratch file (oc_tmp_scratch) is a temporary made, opened and unlinked
 * at once: it has no name while it is used, and no cleanup ever sees it.
 *
 * Place in the data flow: io; the dataset builder, ginex's inspector, the
 * diskgnn packer, plan's spills, oc_write_file_atomic and the CLI use it.
 * Thread-safety: every function may be called from any thread; the registry
 * is one mutex-protected table. The identity (host id, nonce) is made once.
 * Ownership: paths are copied into the registry (at most TMP_SLOTS; beyond,
 * a path is not registered and only the next run's stale cleanup finds it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/io_int.h"

#define TMP_SLOTS          64
#define TMP_TAG            ".tmp-"
#define TMP_FOREIGN_IDLE_S (24 * 3600) /* another host's temporary: untouched this long */
#define TMP_LEGACY_IDLE_S  3600        /* a pid-only name: untouched this long */
#define TMP_MAX_DEPTH      16
#define OWN_MAGIC_LINE     "offcore-owned 1\n"
#define OWN_MARKER_MAX     256

/* The magics offcore's own files begin with (a temporary that begins with one is offcore's):
   diskgnn chunks, ginex superbatches, partitions, checkpoints, model state, TIGER index,
   sampled-batch and slice records ("OCSB", "OCSL": little-endian u32 magics). */
static const char *const OWN_MAGICS[] = {"OCDGCK1",  "OCGXSB1",  "OCPART01", "OCCKPT01",
                                         "OCNNST01", "OCTIGER1", "OCSB",     "OCSL"};

static pthread_once_t id_once = PTHREAD_ONCE_INIT;
static char id_host[16]; /* 12 hex digits */
static uint64_t id_nonce;
static atomic_uint_fast64_t id_seq;
static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER; /* the test override */
static char id_host_override[16];
static long id_pid_override;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static char reg_path[TMP_SLOTS][PATH_MAX];
static unsigned reg_used; /* slots [0, reg_used) hold paths */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static void id_init(void)
{
    uint64_t h = 0xcbf29ce484222325ull;
    char buf[128];
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            h = fnv(h, buf, (size_t)n);
        }
        close(fd);
    }
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0) {
        uint64_t ino = (uint64_t)st.st_ino, dev = (uint64_t)st.st_dev;
        h = fnv(h, &ino, sizeof(ino));
        h = fnv(h, &dev, sizeof(dev));
    }
    /* Without /proc the host name is all that tells machines apart. */
    if (gethostname(buf, sizeof(buf)) == 0) {
        buf[sizeof(buf) - 1] = '\0';
        h = fnv(h, buf, strlen(buf));
    }
    snprintf(id_host, sizeof(id_host), "%012" PRIx64, (uint64_t)(h & 0xffffffffffffull));
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = fnv(h, &ts, sizeof(ts)) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&r;
    }
    id_nonce = r & 0xffffffffffffull;
}

/* This run's host id and pid (or the test override). */
static void identity(char host[16], long *pid)
{
    pthread_once(&id_once, id_init);
    pthread_mutex_lock(&id_lock);
    memcpy(host, id_host_override[0] ? id_host_override : id_host, 16);
    *pid = id_pid_override > 0 ? id_pid_override : (long)getpid();
    pthread_mutex_unlock(&id_lock);
}

const char *oc_tmp_host_id(void)
{
    pthread_once(&id_once, id_init);
    return id_host;
}

void oc_tmp_set_identity(const char *host_id, long pid)
{
    pthread_once(&id_once, id_init);
    pthread_mutex_lock(&id_lock);
    snprintf(id_host_override, sizeof(id_host_override), "%s", host_id ? host_id : "");
    id_pid_override = pid;
    pthread_mutex_unlock(&id_lock);
}

int oc_tmp_name(char *buf, size_t n, const char *final, struct oc_err *err)
{
    char host[16];
    long pid;
    identity(host, &pid);
    uint64_t seq = atomic_fetch_add(&id_seq, 1);
    int w = snprintf(buf, n, "%s" TMP_TAG "%s-%ld-%012" PRIx64 "-%" PRIu64, final, host, pid,
                     id_nonce, seq);
    if (w < 0 || (size_t)w >= n) {
        if (n)
            buf[0] = '\0';
        return OC_ERR(err, OC_ERR_ARG, "%s: path too long for a temporary name", final);
    }
    return OC_OK;
}

/* ---- registry ----------------------------------------------------------------- */

/* Adds path to the registry (reg_lock held); 0 when the table is full (or the path too long). */
static int register_locked(const char *path)
{
    if (reg_used >= TMP_SLOTS || strlen(path) >= PATH_MAX)
        return 0;
    snprintf(reg_path[reg_used++], PATH_MAX, "%s", path);
    return 1;
}

/* Logs that path could not be registered (after reg_lock is released: logging may block). */
static void log_unregistered(const char *path)
{
    oc_log(OC_LOG_DEBUG, "%s: not registered for removal on interrupt (%d already)", path,
           TMP_SLOTS);
}

void oc_tmp_register(const char *path)
{
    pthread_mutex_lock(&reg_lock);
    int ok = register_locked(path);
    pthread_mutex_unlock(&reg_lock);
    if (!ok)
        log_unregistered(path);
}

/* Drops path from the registry; reg_lock held. */
static void unregister_locked(const char *path)
{
    for (unsigned i = 0; i < reg_used; i++) {
        if (strcmp(reg_path[i], path) != 0)
            continue;
        reg_used--;
        if (i != reg_used)
            memcpy(reg_path[i], reg_path[reg_used], PATH_MAX);
        reg_path[reg_used][0] = '\0';
        break;
    }
}

int oc_tmp_create(const char *path, enum oc_tmp_kind kind, struct oc_err *err)
{
    int rc = OC_OK;
    pthread_mutex_lock(&reg_lock);
    if (kind == OC_TMP_DIR) {
        struct stat st;
        if (stat(path, &st) == 0) /* a fresh name: one that exists is somebody else's */
            rc = OC_ERR(err, OC_ERR_IO, "%s: cannot create the temporary: it exists", path);
        else
            rc = oc_mkdir_p(path, err);
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), e = errno;
        if (fd < 0)
            rc = OC_ERR_ERRNO(err, oc_status_from_errno(e), e,
                              "%s: cannot create the temporary: %s", path, strerror(e));
        else
            close(fd);
    }
    int ok = rc == OC_OK && register_locked(path);
    pthread_mutex_unlock(&reg_lock);
    if (rc == OC_OK && !ok)
        log_unregistered(path);
    return rc;
}

int oc_tmp_scratch(const char *near, unsigned flags, struct oc_file **out, struct oc_file **direct,
                   char *label, size_t label_n, struct oc_err *err)
{
    char tmp[4400];
    int rc;
    *out = NULL;
    if (direct)
        *direct = NULL;
    if ((rc = oc_tmp_name(tmp, sizeof(tmp), near, err)) ||
        (rc = oc_tmp_create(tmp, OC_TMP_FILE, err)))
        return rc;
    if ((rc = oc_file_open(tmp, flags & (OC_FILE_READ | OC_FILE_WRITE), out, err)) == OC_OK &&
        direct)
        rc = oc_file_open(tmp, OC_FILE_READ | OC_FILE_DIRECT, direct, err);
    int e = unlink(tmp) == 0 ? 0 : errno; /* the open descriptors keep it */
    if (e == 0)
        oc_tmp_unregister(tmp); /* else left to the interrupt's removal or the next cleanup */
    else if (rc == OC_OK)
        rc = OC_ERR_ERRNO(err, oc_status_from_errno(e), e, "%s: cannot unlink the scratch file: %s",
                          tmp, strerror(e));
    if (rc) {
        oc_file_close(direct ? *direct : NULL, NULL);
        if (direct)
            *direct = NULL;
        oc_file_close(*out, NULL);
        *out = NULL;
        return rc;
    }
    snprintf(label, label_n, "%s (unlinked scratch)", tmp);
    return OC_OK;
}

void oc_tmp_unregister(const char *path)
{
    pthread_mutex_lock(&reg_lock);
    unregister_locked(path);
    pthread_mutex_unlock(&reg_lock);
}

int oc_tmp_commit(const char *tmp, const char *final, struct oc_err *err)
{
    /* Under the registry's lock: an interrupt's removal (which holds it) runs wholly before
       the rename, removing tmp, or after it, when tmp is no longer registered; never while
       its open directory handle has become final's. */
    pthread_mutex_lock(&reg_lock);
    int rc = oc_rename_durable(tmp, final, err);
    if (rc == OC_OK) {
        unregister_locked(tmp);
    } else if (!oc_path_exists(tmp) && oc_path_exists(final) && rename(final, tmp) != 0) {
        /* renamed, but the directory fsync failed: a failed commit leaves nothing at final */
        oc_log(OC_LOG_WARN, "%s: cannot take back the uncommitted output", final);
    }
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

unsigned oc_tmp_n_registered(void)
{
    pthread_mutex_lock(&reg_lock);
    unsigned n = reg_used;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

unsigned oc_tmp_remove_registered(int keep_locked)
{
    unsigned n = 0;
    pthread_mutex_lock(&reg_lock);
    for (unsigned i = 0; i < reg_used; i++) {
        struct oc_err e;
        /* Another thread may still be creating entries in a directory: a few passes. */
        for (int pass = 0; pass < 3; pass++)
            if (oc_rm_rf(reg_path[i], &e) == OC_OK)
                break;
        n += !oc_path_exists(reg_path[i]);
    }
    if (!keep_locked) {
        reg_used = 0;
        pthread_mutex_unlock(&reg_lock);
    }
    return n;
}

/* ---- stale temporaries -------------------------------------------------------- */

/* The newest modification time in the tree at dir_fd/name (stat's mtime, recursively). */
static time_t newest_mtime(int dir_fd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    time_t t = st.st_mtime;
    if (!S_ISDIR(st.st_mode) || depth >= TMP_MAX_DEPTH)
        return t;
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return t;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return t;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        time_t c = newest_mtime(fd, de->d_name, depth + 1);
        if (c > t)
            t = c;
    }
    closedir(d);
    return t;
}

static int all_digits(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return n > 0;
}

/*
 * Parses the temporary suffix of name: "<host12>-<pid>-<nonce12>-<seq>" after
 * the last ".tmp-" (kind 1), or a legacy "<pid>" after ".tmp-" or ".tmp."
 * (kind 2); 0 = not a temporary.
 */
/* The last ".tmp-" or ".tmp." in name, NULL if none. */
static const char *last_tag(const char *name)
{
    const char *t = NULL;
    for (const char *p = strstr(name, ".tmp"); p; p = strstr(p + 1, ".tmp"))
        if (p[4] == '-' || p[4] == '.')
            t = p;
    return t;
}

static int parse_tmp(const char *name, char host[16], long *pid, uint64_t *nonce)
{
    const char *t = last_tag(name);
    if (!t || t == name)
        return 0;
    const char *s = t + 5;
    size_t n = strlen(s);
    if (all_digits(s, n) && n < 10) {
        *pid = strtol(s, NULL, 10);
        return *pid > 0 ? 2 : 0;
    }
    if (t[4] != '-' || n < 12 + 1 + 1 + 1 + 12 + 1 + 1 || !all_hex(s, 12) || s[12] != '-')
        return 0;
    const char *p = s + 13, *dash = strchr(p, '-');
    if (!dash || !all_digits(p, (size_t)(dash - p)) || dash - p > 9)
        return 0;
    const char *q = dash + 1;
    if (strlen(q) < 14 || !all_hex(q, 12) || q[12] != '-' || !all_digits(q + 13, strlen(q + 13)))
        return 0;
    memcpy(host, s, 12);
    host[12] = '\0';
    *pid = strtol(p, NULL, 10);
    *nonce = strtoull(q, NULL, 16) & 0xffffffffffffull;
    /* strtoull stops at the '-' after 12 digits */
    return *pid > 0 ? 1 : 0;
}

static int pid_gone(long pid)
{
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int oc_tmp_is_stale(int dir_fd, const char *name, char *why, size_t why_n)
{
    char host[16], my_host[16];
    long pid = 0, my_pid;
    uint64_t nonce = 0;
    char none[8];
    if (!why || !why_n) {
        why = none;
        why_n = sizeof(none);
    }
    int kind = parse_tmp(name, host, &pid, &nonce);
    if (kind == 0)
        return 0;
    identity(my_host, &my_pid);
    time_t now = time(NULL);
    if (kind == 2) {
        time_t idle = now - newest_mtime(dir_fd, name, 0);
        if (pid_gone(pid) && idle >= TMP_LEGACY_IDLE_S) {
            snprintf(why, why_n, "pid %ld, gone, %ld s idle", pid, (long)idle);
            return 1;
        }
        return 0;
    }
    if (strcmp(host, my_host) == 0) {
        if (pid == my_pid) {
            if (nonce == id_nonce)
                return 0; /* this run's own */
            snprintf(why, why_n, "an earlier process with pid %ld on this host", pid);
            return 1;
        }
        if (pid_gone(pid)) {
            snprintf(why, why_n, "pid %ld on this host, gone", pid);
            return 1;
        }
        return 0;
    }
    time_t idle = now - newest_mtime(dir_fd, name, 0);
    if (idle >= TMP_FOREIGN_IDLE_S) {
        snprintf(why, why_n, "host %s, untouched for %ld h", host, (long)(idle / 3600));
        return 1;
    }
    return 0;
}

/* ---- ownership markers -------------------------------------------------------- */

int oc_dir_mark(const char *dir, struct oc_err *err)
{
    char path[PATH_MAX], text[OWN_MARKER_MAX], host[16];
    long pid;
    int rc;
    if ((rc = oc_path_join(path, sizeof(path), dir, OC_OWNED_MARKER, err)))
        return rc;
    identity(host, &pid);
    int n = snprintf(text, sizeof(text), OWN_MAGIC_LINE "host %s\npid %ld\n", host, pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: cannot write offcore's ownership marker: %s",
                            path, strerror(e));
    }
    ssize_t w = write(fd, text, (size_t)n);
    int e = errno;
    close(fd);
    if (w != n)
        return OC_ERR_ERRNO(err, OC_ERR_IO, w < 0 ? e : EIO,
                            "%s: cannot write offcore's ownership marker: %s", path,
                            strerror(w < 0 ? e : EIO));
    return OC_OK;
}

void oc_dir_unmark(const char *dir)
{
    char path[PATH_MAX];
    if (oc_path_join(path, sizeof(path), dir, OC_OWNED_MARKER, NULL) == OC_OK)
        unlink(path);
}

/* Reads the marker inside dir_fd/name into text (NUL-terminated); 0 if there is none valid. */
static int read_marker(int dir_fd, const char *name, char text[OWN_MARKER_MAX])
{
    int dfd = dir_fd;
    if (name) {
        dfd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            return 0;
    }
    int ok = 0;
    int fd = openat(dfd, OC_OWNED_MARKER, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < OWN_MARKER_MAX) {
        ssize_t n = read(fd, text, OWN_MARKER_MAX - 1);
        if (n > 0) {
            text[n] = '\0';
            ok = strncmp(text, OWN_MAGIC_LINE, strlen(OWN_MAGIC_LINE)) == 0;
        }
    }
    if (fd >= 0)
        close(fd);
    if (name)
        close(dfd);
    return ok;
}

int oc_dir_is_marked_at(int dir_fd, const char *name)
{
    char text[OWN_MARKER_MAX];
    return read_marker(dir_fd, name, text);
}

/* 1 if dir has no entry but "." and "..". */
static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    int empty = 1;
    while (empty && (de = readdir(d)) != NULL)
        empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
    closedir(d);
    return empty;
}

int oc_dir_make_owned(const char *dir, int *owned, struct oc_err *err)
{
    int rc;
    *owned = 0;
    if ((rc = oc_mkdir_p(dir, err)))
        return rc;
    if (access(dir, W_OK) != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, oc_status_from_errno(e), e, "%s: cannot write there: %s", dir,
                            strerror(e));
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        *owned = oc_dir_is_marked_at(fd, NULL);
        close(fd);
    }
    if (*owned || !dir_is_empty(dir))
        return OC_OK;
    if ((rc = oc_dir_mark(dir, err)))
        return rc;
    *owned = 1;
    return OC_OK;
}

/* Whether the stale temporary dir_fd/name is provably offcore's (see the table on top). */
static int tmp_is_owned(int dir_fd, int dir_marked, const char *name)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        char text[OWN_MARKER_MAX], want[64], host[16];
        long pid;
        uint64_t nonce;
        if (parse_tmp(name, host, &pid, &nonce) != 1 || !read_marker(dir_fd, name, text))
            return 0;
        snprintf(want, sizeof(want), "host %s\npid %ld\n", host, pid);
        return strstr(text, want) != NULL;
    }
    if (!S_ISREG(st.st_mode))
        return 0;
    if (dir_marked)
        return 1;
    char head[8] = {0};
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, sizeof(head));
    close(fd);
    for (size_t i = 0; n > 0 && i < sizeof(OWN_MAGICS) / sizeof(OWN_MAGICS[0]); i++) {
        size_t ml = strlen(OWN_MAGICS[i]);
        if ((size_t)n >= ml && memcmp(head, OWN_MAGICS[i], ml) == 0)
            return 1;
    }
    return 0;
}

int oc_tmp_clean_stale(const char *dir, const char *prefix, unsigned *n_removed, struct oc_err *err)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    unsigned n = 0;
    int rc = OC_OK;
    if (n_removed)
        *n_removed = 0;
    DIR *d = opendir(dir);
    if (!d)
        return OC_OK; /* nothing there yet */
    int dir_marked = oc_dir_is_marked_at(dirfd(d), NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        char why[128], path[PATH_MAX];
        if (prefix && (strncmp(name, prefix, pl) != 0 || last_tag(name) != name + pl))
            continue;
        if (!oc_tmp_is_stale(dirfd(d), name, why, sizeof(why)))
            continue;
        if (oc_path_join(path, sizeof(path), dir, name, NULL) != OC_OK)
            continue;
        if (!tmp_is_owned(dirfd(d), dir_marked, name)) {
            oc_log(OC_LOG_INFO,
                   "kept %s: named like a stale temporary, but nothing marks it as "
                   "offcore's",
                   path);
            continue;
        }
        struct oc_err e;
        if (oc_rm_rf(path, &e) != OC_OK) {
            oc_log(OC_LOG_WARN, "cannot remove stale temporary %s (%s): %s", path, why, e.msg);
            if (rc == OC_OK && err)
                *err = e;
            rc = rc ? rc : e.status;
            continue;
        }
        oc_log(OC_LOG_INFO, "removed stale temporary %s (left by %s)", path, why);
        n++;
    }
    closedir(d);
    if (n_removed)
        *n_removed = n;
    return rc;
}
