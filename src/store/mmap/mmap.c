/*
 * mmap.c — the `mmap` strategy ("PyG+" baseline): features.npy mapped
 * read-only (MAP_SHARED), the kernel's page cache decides what stays in RAM;
 * gather copies (and widens f16) rows out of the map.
 *
 * Place in the data flow: store; touches features.npy through page faults.
 * Thread-safety: gather copies rows on the store's pool, each task its own
 * range of output rows; the map is read-only.
 * Ownership: the map and its descriptor are the store's.
 *
 * Memory (held_bytes): 0. The mapped pages belong to the page cache, which is
 * outside --mem-budget on purpose: that is what this baseline measures (they
 * do show up in RSS as file-backed pages).
 *
 * Accounting, honestly: a map gives no byte count of what the disk
 * delivered. read_bytes is the growth of the process's storage reads
 * (`read_bytes` of /proc/self/io, which counts page-cache fills including
 * readahead) during the gather; where that file is unreadable (no task I/O
 * accounting), the major page faults x 4096, which undercounts readahead
 * badly (faults served by readahead are minor). Both are process-wide: any
 * other thread's reads during the gather count too, so read it as an
 * estimate. n_reads is the major-fault count. requested_disk_bytes counts
 * every requested row: the map cannot tell a cached row from one read, short
 * of a mincore() per row, which would change what is measured.
 * Truncation: touching a page past end of file raises SIGBUS, so every
 * gather first compares the largest row requested with the file's current
 * size (one fstat) and fails with OC_ERR_FORMAT naming the file and offset.
 * A file truncated by another process during the copy is not caught. Read
 * errors under a map (EIO) also arrive as SIGBUS; a store that must report
 * them as errors uses `direct` or `static`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_int.h"

struct mmap_store {
    int fd;
    int io_fd; /* /proc/self/io, or -1 */
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

static int mm_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct mmap_store *m;
    struct stat st;
    char eb[128];
    int e;

    (void)cfg;
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
    uint64_t need = store_row_off(s, s->n_nodes);
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
    return OC_OK;
}

struct mm_job {
    const struct oc_store *s;
    const uint8_t *map;
    const uint64_t *ids;
    float *out;
};

static void mm_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct mm_job *j = ctx;
    const struct oc_store *s = j->s;
    for (uint64_t i = lo; i < hi; i++)
        store_row_to_f32(s->dtype, j->map + store_row_off(s, j->ids[i]), s->feat_dim,
                         j->out + i * s->feat_dim);
}

static uint64_t major_faults(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_majflt;
}

static int mm_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                     struct oc_err *err)
{
    const struct mmap_store *m = s->impl;
    struct stat st;
    char eb[128];
    uint64_t max_id = 0;

    for (uint64_t i = 0; i < n; i++)
        if (ids[i] > max_id)
            max_id = ids[i];
    if (fstat(m->fd, &st) != 0) {
        int e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "store mmap: %s: fstat: %s", s->path,
                            store_strerror(e, eb, sizeof(eb)));
    }
    uint64_t end = store_row_off(s, max_id + 1);
    if ((uint64_t)st.st_size < end)
        return OC_ERR(
            err, OC_ERR_FORMAT,
            "store mmap: gather: %s: truncated: row %" PRIu64 " needs %zu bytes at offset "
            "%" PRIu64 ", file ends at %" PRIu64,
            s->path, max_id, s->row_bytes, store_row_off(s, max_id), (uint64_t)st.st_size);
    int ok0, ok1;
    uint64_t f0 = major_faults(), r0 = proc_read_bytes(m->io_fd, &ok0);
    struct mm_job j = {s, m->map, ids, out};
    int rc = store_for_rows(s->pool, n, mm_copy, &j, err);
    if (rc)
        return rc;
    uint64_t faults = major_faults() - f0, r1 = proc_read_bytes(m->io_fd, &ok1);
    s->stats.read_bytes += ok0 && ok1 && r1 >= r0 ? r1 - r0 : faults * OC_IO_ALIGN;
    s->stats.n_reads += faults;
    s->stats.requested_disk_bytes += n * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += n;
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
};
