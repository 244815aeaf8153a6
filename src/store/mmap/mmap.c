/*
 * mmap.c — the `mmap` strategy ("PyG+" baseline): features.npy mapped
 * read-only (MAP_SHARED), the kernel's page cache decides what stays in RAM;
 * gather copies (and widens f16) rows out of the map.
 *
 * Two hints to the kernel, neither of which changes what is read into the
 * batch: the map is MADV_RANDOM (no fault read-around: under a memory limit
 * the default 128 KiB read-around per fault filled the page cache with rows
 * no batch asked for and evicted the asked-for ones before their copy,
 * reading the file hundreds of times over an epoch), and a gather tells the
 * kernel the pages it is about to touch (POSIX_FADV_WILLNEED, one call per
 * run of adjacent missing pages) MM_WINDOW rows ahead of its copy, so that
 * many reads are in flight at once instead of one page fault at a time, while
 * the pages asked for but not yet copied stay few (at most 2 x MM_WINDOW rows'
 * pages per lane) and are not evicted, under a tight limit, before their
 * copy. MM_WINDOW was measured on the default bench (3 KiB rows, 2 lanes,
 * 2026-11-27): 2048 rows 1.26-1.40x its own disk time, 1024 1.23-1.28,
 * 256 1.06-1.17, 64 1.08-1.11, at about the same bytes read (1.5-1.7 GiB),
 * so not for fewer re-reads; why asking less far ahead is faster was not
 * established (64 rows: up to 128 rows' pages asked for per lane). A hint the
 * kernel refuses is ignored: the copy's faults read the page.
 *
 * Place in the data flow: store; touches features.npy through page faults.
 * Thread-safety: gather copies rows on the store's pool, each task its own
 * range of output rows; the map is read-only, so it has cfg->lanes lanes
 * (store.h, oc_store_gather_lanes): the next batches' pages are asked for
 * while an earlier batch's copy waits on its own.
 * Ownership: the map and its descriptor are the store's.
 *
 * Memory (held_bytes): 0. The mapped pages belong to the page cache, which is
 * outside --mem-budget on purpose: that is what this baseline measures (they
 * do show up in RSS as file-backed pages).
 *
 * Accounting, honestly: a map gives no byte count of what the disk
 * delivered. read_bytes is the growth of the process's storage reads
 * (`read_bytes` of /proc/self/io, which counts page-cache fills, refills of
 * evicted pages included) from the start of the first gather to the end of
 * the latest, each byte counted by the one gather that saw it first (lanes
 * overlap). It is process-wide, so other reads of the process in that time
 * count too: read it as an estimate. Where that file is unreadable (no task
 * I/O accounting), it is the pages the prefetch found missing x 4096. The
 * prefetch's mincore look gives the rest: a row whose pages were all resident
 * counts as a CPU-tier row (the page cache served it), n_reads is the number
 * of runs of missing pages it asked the kernel for, and requested_disk_bytes
 * counts the rows that were not resident.
 * Truncation: touching a page past end of file raises SIGBUS, so every
 * gather first compares the largest row requested with the file's current
 * size (one fstat) and fails with OC_ERR_FORMAT naming the file and offset.
 * A file truncated by another process during the copy is caught by a guard:
 * each copy task arms a per-thread sigsetjmp point covering the map, and a
 * process-wide SIGBUS handler (installed once, SA_NODEFER) siglongjmps back
 * to it when the faulting address lies in the map of the thread's armed
 * copy; the gather then fails with the same "truncated" OC_ERR_FORMAT (a
 * read error under the map, EIO, arrives the same way and is reported as
 * such when the file still has its size). A SIGBUS anywhere else goes to the
 * handler that was installed before (or the default action). The copy
 * between arm and disarm is pure (memcpy or f16 widening: no lock, no
 * allocation), so leaving it by siglongjmp is safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_int.h"

#define MM_WINDOW 64 /* rows asked for ahead of the copy, per window */

struct mmap_store {
    int fd;
    int io_fd; /* /proc/self/io, or -1 */
    /* The process's read_bytes up to which gathers have counted (0: none yet):
     * lanes gathering at once each count only past it, so no byte twice. */
    _Atomic uint64_t io_counted;
    const uint8_t *map;
    size_t map_bytes;
};

/* read_bytes of /proc/self/io; 0 with *ok = 0 if unavailable. Allocation-free. */
static uint64_t proc_read_bytes(int io_fd, int *ok)
{
    char buf[512];
    *ok = 0;
    if (io_fd < 0)
        return 0;
    ssize_t n = pread(io_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nread_bytes: ");
    if (!p)
        return 0;
    *ok = 1;
    return strtoull(p + strlen("\nread_bytes: "), NULL, 10);
}

/* ---- SIGBUS guard --------------------------------------------------------------- */

/* An armed copy: its jump point and the mapped range it reads. One per thread at a time. */
struct mm_guard {
    sigjmp_buf jb;
    const uint8_t *lo, *hi;
};

static _Thread_local struct mm_guard *volatile mm_armed;
static struct sigaction mm_old_bus;
static pthread_once_t mm_bus_once = PTHREAD_ONCE_INIT;
static int mm_bus_ok;

static void mm_on_sigbus(int sig, siginfo_t *si, void *uc)
{
    struct mm_guard *g = mm_armed;
    const uint8_t *a = si ? (const uint8_t *)si->si_addr : NULL;
    if (g && a >= g->lo && a < g->hi) {
        mm_armed = NULL;
        siglongjmp(g->jb, 1);
    }
    /* Not ours: what was there before. */
    if (mm_old_bus.sa_flags & SA_SIGINFO) {
        if (mm_old_bus.sa_sigaction) {
            mm_old_bus.sa_sigaction(sig, si, uc);
            return;
        }
    } else if (mm_old_bus.sa_handler != SIG_DFL && mm_old_bus.sa_handler != SIG_IGN &&
               mm_old_bus.sa_handler) {
        mm_old_bus.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL); /* the faulting access repeats and takes the default action */
}

static void mm_bus_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = mm_on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    mm_bus_ok = sigaction(SIGBUS, &sa, &mm_old_bus) == 0;
}

static int mm_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct mmap_store *m;
    struct stat st;
    char eb[128];
    int e;

    m = oc_calloc(1, sizeof(*m), "store mmap", err);
    if (!m)
        return err ? err->status : OC_ERR_NOMEM;
    m->fd = -1;
    m->io_fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    s->impl = m;
    /* O_NONBLOCK: a FIFO in place of the features must fail below, not block here. */
    do {
        int fe = 0;
        if (oc_fault_hit(OC_FAULT_OPEN, &fe)) {
            m->fd = -1;
            errno = fe ? fe : EIO;
        } else {
            m->fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        }
    } while (m->fd < 0 && errno == EINTR);
    if (m->fd < 0) {
        e = errno;
        return OC_ERR_ERRNO(err, e == ENOENT ? OC_ERR_NOTFOUND : OC_ERR_IO, e,
                            "store mmap: %s: cannot open: %s", s->path,
                            store_strerror(e, eb, sizeof(eb)));
    }
    if (fstat(m->fd, &st) != 0) {
        e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "store mmap: %s: fstat: %s", s->path,
                            store_strerror(e, eb, sizeof(eb)));
    }
    if (!S_ISREG(st.st_mode))
        return OC_ERR(err, OC_ERR_IO, "store mmap: %s: is not a regular file", s->path);
    uint64_t need = store_file_off(s, s->n_nodes);
    if ((uint64_t)st.st_size < need)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "store mmap: %s: truncated: rows end at offset %" PRIu64
                      ", file ends at %" PRIu64,
                      s->path, need, (uint64_t)st.st_size);
    void *p = mmap(NULL, (size_t)need, PROT_READ, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED) {
        e = errno;
        return OC_ERR_ERRNO(err, e == ENOMEM ? OC_ERR_NOMEM : OC_ERR_IO, e,
                            "store mmap: %s: mmap of %" PRIu64 " bytes failed: %s", s->path, need,
                            store_strerror(e, eb, sizeof(eb)));
    }
    m->map = p;
    m->map_bytes = (size_t)need;
    pthread_once(&mm_bus_once, mm_bus_install);
    if (!mm_bus_ok)
        oc_log(OC_LOG_WARN, "store mmap: no SIGBUS guard: a file truncated during a copy "
                            "ends the process");
    s->n_lanes = store_lanes_for(cfg, 0, 0);     /* nothing held per lane */
    (void)madvise(p, (size_t)need, MADV_RANDOM); /* a hint: see the header comment */
    return OC_OK;
}

struct mm_job {
    const struct oc_store *s;
    const uint8_t *map;
    size_t map_bytes;
    const uint64_t *ids;
    float *out;
    _Atomic int faulted;         /* a copy task took SIGBUS on the map */
    _Atomic uint64_t fault_node; /* the node whose row it was copying */
};

static void mm_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    struct mm_job *j = ctx;
    const struct oc_store *s = j->s;
    struct mm_guard g;
    volatile uint64_t i = lo;
    g.lo = j->map;
    g.hi = j->map + j->map_bytes;
    if (sigsetjmp(g.jb, 0)) { /* from mm_on_sigbus: the row at i faulted */
        atomic_store(&j->fault_node, j->ids[i]);
        atomic_store(&j->faulted, 1);
        return;
    }
    mm_armed = &g;
    for (; i < hi; i++)
        store_row_to_f32(s->dtype, j->map + store_row_off(s, j->ids[i]), s->feat_dim,
                         j->out + i * s->feat_dim);
    mm_armed = NULL;
}

/* Counts the process's storage reads up to `now` that no gather has counted
 * yet, and returns them. Lock-free: io_counted only moves forward. */
static uint64_t mm_count_reads(struct mmap_store *m, uint64_t now)
{
    uint64_t prev = oc_atomic_raise(&m->io_counted, now);
    return now > prev ? now - prev : 0;
}

/* What one gather's prefetch saw: rows whose pages were all resident, and the
 * page reads it asked for (runs of adjacent missing pages, one request each). */
struct mm_seen {
    uint64_t resident_rows, n_reads, read_pages;
};

/* Asks the kernel to read the pages [lo, hi) of the file (one request). */
static void mm_ask(const struct mmap_store *m, uint64_t lo, uint64_t hi, struct mm_seen *seen)
{
    (void)posix_fadvise(m->fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_WILLNEED);
    seen->n_reads++;
}

/* Asks the kernel to start reading every page of the rows ids[0..n) that is
 * not in the page cache (mincore per row, POSIX_FADV_WILLNEED per run of
 * adjacent missing pages); returns at once, the reads complete in the
 * background. What mincore saw is an estimate: a page can be evicted between
 * this look and the copy. Allocation-free. */
static void mm_prefetch(const struct oc_store *s, const struct mmap_store *m, const uint64_t *ids,
                        uint64_t n, struct mm_seen *seen)
{
    const uint64_t pg = OC_IO_ALIGN;
    uint64_t lo = 0, hi = 0; /* the pending run of missing pages, [lo, hi) */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = store_row_off(s, ids[i]);
        uint64_t p0 = off / pg * pg, p1 = (off + s->row_bytes + pg - 1) / pg * pg;
        unsigned char vec[64];
        uint64_t np = (p1 - p0) / pg;
        int missing = 1;
        if (np <= sizeof(vec) && mincore((void *)(m->map + p0), (size_t)(p1 - p0), vec) == 0) {
            missing = 0;
            for (uint64_t k = 0; k < np; k++)
                missing |= !(vec[k] & 1);
        }
        if (!missing) {
            seen->resident_rows++;
            continue;
        }
        seen->read_pages += np;
        if (hi > lo && p0 <= hi && p1 >= lo) { /* touches the pending run: extend it */
            lo = p0 < lo ? p0 : lo;
            hi = p1 > hi ? p1 : hi;
            continue;
        }
        if (hi > lo)
            mm_ask(m, lo, hi, seen);
        lo = p0;
        hi = p1;
    }
    if (hi > lo)
        mm_ask(m, lo, hi, seen);
}

static int mm_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                     uint64_t n, float *out, struct oc_err *err)
{
    (void)epoch, (void)batch;
    struct mmap_store *m = s->impl;
    struct stat st;
    char eb[128];
    uint64_t max_row = 0;

    for (uint64_t i = 0; i < n; i++)
        if (store_row_of(s, ids[i]) > max_row)
            max_row = store_row_of(s, ids[i]);
    if (fstat(m->fd, &st) != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "store mmap: %s: fstat: %s", s->path,
                            store_strerror(e, eb, sizeof(eb)));
    }
    uint64_t end = store_file_off(s, max_row + 1);
    if ((uint64_t)st.st_size < end)
        return OC_ERR(
            err, OC_ERR_FORMAT,
            "store mmap: gather: %s: truncated: row %" PRIu64 " needs %zu bytes at offset "
            "%" PRIu64 ", file ends at %" PRIu64,
            s->path, max_row, s->row_bytes, store_file_off(s, max_row), (uint64_t)st.st_size);
    int ok0, ok1;
    uint64_t r0 = proc_read_bytes(m->io_fd, &ok0), zero = 0;
    if (ok0) /* the first gather starts the count */
        atomic_compare_exchange_strong(&m->io_counted, &zero, r0);
    struct mm_seen seen = {0, 0, 0};
    struct mm_job j = {s, m->map, m->map_bytes, ids, out, 0, 0};
    /* Window w+1's pages are asked for before window w is copied. */
    mm_prefetch(s, m, ids, n < MM_WINDOW ? n : MM_WINDOW, &seen);
    for (uint64_t lo = 0; lo < n; lo += MM_WINDOW) {
        uint64_t hi = n - lo > MM_WINDOW ? lo + MM_WINDOW : n;
        if (hi < n)
            mm_prefetch(s, m, ids + hi, n - hi > MM_WINDOW ? MM_WINDOW : n - hi, &seen);
        j.ids = ids + lo;
        j.out = out + lo * s->feat_dim;
        int rc = store_for_rows(s->pool, hi - lo, mm_copy, &j, err);
        if (rc)
            return rc;
        if (atomic_load(&j.faulted)) {
            uint64_t node = atomic_load(&j.fault_node), size = 0;
            if (fstat(m->fd, &st) == 0)
                size = (uint64_t)st.st_size;
            if (size >= end)
                return OC_ERR(err, OC_ERR_IO,
                              "store mmap: gather: %s: the row of node %" PRIu64 " at offset "
                              "%" PRIu64 " could not be read (SIGBUS on the map: the file was "
                              "truncated meanwhile, or a read error)",
                              s->path, node, store_row_off(s, node));
            return OC_ERR(err, OC_ERR_FORMAT,
                          "store mmap: gather: %s: truncated: wanted %zu bytes at offset "
                          "%" PRIu64 " (row %" PRIu64 "), file ends at %" PRIu64
                          " (changed during the run)",
                          s->path, s->row_bytes, store_row_off(s, node), node, size);
        }
    }
    uint64_t r1 = proc_read_bytes(m->io_fd, &ok1);
    s->stats.read_bytes += ok0 && ok1 ? mm_count_reads(m, r1) : seen.read_pages * OC_IO_ALIGN;
    s->stats.n_reads += seen.n_reads;
    s->stats.requested_disk_bytes += (n - seen.resident_rows) * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += seen.resident_rows;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += n - seen.resident_rows;
    return OC_OK;
}

static void mm_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    (void)s;
    out->held_bytes = 0; /* the page cache's, not ours: see the header comment */
}

static void mm_free(struct oc_store *s)
{
    struct mmap_store *m = s->impl;
    if (!m)
        return;
    if (m->map)
        munmap((void *)m->map, m->map_bytes);
    if (m->fd >= 0)
        close(m->fd);
    if (m->io_fd >= 0)
        close(m->io_fd);
    oc_free(m);
    s->impl = NULL;
}

const struct store_strategy oc_store_mmap = {
    .name = "mmap",
    .summary = "features memory-mapped, the page cache decides (PyG+ baseline)",
    .open = mm_open,
    .gather = mm_gather,
    .stats = mm_stats,
    .free = mm_free,
    .serves_accesses = 1,
};
