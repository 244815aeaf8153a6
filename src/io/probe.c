/*
 * probe.c — what the disk under a file can do, measured: sequential
 * bandwidth and random 4 KiB reads per second through the batch reader
 * (O_DIRECT, io_uring or pread), at 64 in flight and at the stores'
 * readers' 256 (a disk serving more requests at once than 64 shows it:
 * --strategy auto's model reads it), and from them the crossover the block
 * reader merges at: a hole between two needed pages is read along when
 * reading its bytes costs less disk time than one more request.
 *
 *   one request of a page     ~ 1 / rand_iops seconds of the disk
 *   g more bytes in a read    ~ g / seq_bps seconds
 *   read the hole along  <=>  g <= seq_bps / rand_iops     (gap_bytes, in pages)
 *
 * A process measures each device once (oc_io_disk_of keeps the answer per
 * st_dev), on the first file large enough to probe (OC_IO_PROBE_MIN_BYTES);
 * until one is, and for files without O_DIRECT (the page cache answers
 * every read at memory speed, so there is nothing to save), the crossover is
 * 0: only requests that share or touch a page merge, as before the probe.
 * OC_IO_GAP_BYTES in the environment sets the crossover instead (tests, or a
 * user who knows the disk).
 *
 * Place in the data flow: io; the store measures its feature file's disk at
 * open and gives the crossover to every batch reader it makes.
 * Thread-safety: oc_io_disk_probe uses its own reader; oc_io_disk_of is
 * thread-safe (one mutex around the per-device table).
 * Ownership: nothing is kept but the table of measured devices.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/io_int.h"
#include "offcore/progress.h"

#define PROBE_SEQ_READ   (1u << 20) /* one sequential read */
#define PROBE_SEQ_DEPTH  8u
#define PROBE_SEQ_BYTES  (64u << 20) /* at most, sequentially */
#define PROBE_RAND_DEPTH 64u
#define PROBE_RAND_RUN   256u /* random reads per batch run */
#define PROBE_RAND_MAX   8192u
/* Again at the depth of the stores' batch readers (store_int.h STORE_DISK_DEPTH) */
#define PROBE_DEEP_DEPTH 256u
#define PROBE_DEEP_RUN   1024u
#define PROBE_DEEP_MAX   32768u
#define PROBE_MAX_S      0.25 /* per part, at most (a run finishes past it) */
#define PROBE_DEVICES    16u

static uint64_t probe_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t oc_io_gap_for(double seq_bps, double rand_iops)
{
    if (!(seq_bps > 0) || !(rand_iops > 0))
        return 0;
    double g = seq_bps / rand_iops;
    if (g > (double)(64u << 20))
        g = (double)(64u << 20);
    return oc_io_align_down((uint64_t)g);
}

/* The environment's crossover (OC_IO_GAP_BYTES), or -1 when it sets none. */
static int64_t env_gap(void)
{
    const char *e = getenv("OC_IO_GAP_BYTES");
    if (!e || !e[0])
        return -1;
    char *end;
    unsigned long long v = strtoull(e, &end, 10);
    if (*end || v > (64ull << 20))
        return -1;
    return (int64_t)oc_io_align_down(v);
}

static int probe_seq(struct oc_file *f, uint64_t size, uint8_t *buf, struct oc_io_disk *d,
                     struct oc_err *err)
{
    struct oc_io_batch *b = NULL;
    int rc = oc_io_batch_new(PROBE_SEQ_DEPTH, (size_t)PROBE_SEQ_DEPTH * PROBE_SEQ_READ, &b, err);
    if (rc)
        return rc;
    uint64_t lo = OC_IO_ALIGN, end = size - size % PROBE_SEQ_READ, off = lo, got = 0;
    if (end > lo + PROBE_SEQ_BYTES)
        end = lo + PROBE_SEQ_BYTES;
    double t0 = oc_now_s(), el = 0;
    while (rc == OC_OK && off + PROBE_SEQ_READ <= end && el < PROBE_MAX_S) {
        for (unsigned k = 0; k < PROBE_SEQ_DEPTH && off + PROBE_SEQ_READ <= end && rc == OC_OK;
             k++, off += PROBE_SEQ_READ, got += PROBE_SEQ_READ)
            rc = oc_io_batch_add(b, f, off, PROBE_SEQ_READ, buf + (size_t)k * PROBE_SEQ_READ, err);
        if (rc == OC_OK)
            rc = oc_io_batch_run(b, err);
        el = oc_now_s() - t0;
    }
    oc_io_batch_free(b);
    d->seq_bps = el > 0 ? (double)got / el : 0;
    return rc;
}

/* Random 4 KiB reads, depth in flight, in runs of run (at most max reads): reads per second. */
static int probe_rand(struct oc_file *f, uint64_t size, uint8_t *buf, unsigned depth, unsigned run,
                      unsigned max, double *iops, struct oc_err *err)
{
    struct oc_io_batch *b = NULL;
    int rc = oc_io_batch_new(depth, (size_t)run * OC_IO_ALIGN, &b, err);
    if (rc)
        return rc;
    oc_io_batch_set_merge(b, 0);
    uint64_t n_pages = size / OC_IO_ALIGN, state = 0x5eed ^ size ^ depth, n = 0;
    double t0 = oc_now_s(), el = 0;
    while (rc == OC_OK && n < max && el < PROBE_MAX_S) {
        for (unsigned k = 0; k < run && rc == OC_OK; k++)
            rc = oc_io_batch_add(b, f, (probe_mix(&state) % n_pages) * OC_IO_ALIGN, OC_IO_ALIGN,
                                 buf + (size_t)k * OC_IO_ALIGN, err);
        if (rc == OC_OK)
            rc = oc_io_batch_run(b, err);
        n += run;
        el = oc_now_s() - t0;
    }
    oc_io_batch_free(b);
    *iops = el > 0 ? (double)n / el : 0;
    return rc;
}

int oc_io_disk_probe(struct oc_file *f, struct oc_io_disk *out, struct oc_err *err)
{
    uint64_t size;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = oc_file_size(f, &size, err)))
        return rc;
    if (!f->is_direct || size < OC_IO_PROBE_MIN_BYTES)
        return OC_OK; /* not measured: the crossover stays 0 */
    size_t bytes = (size_t)PROBE_SEQ_DEPTH * PROBE_SEQ_READ;
    uint8_t *buf = oc_io_buf_alloc(bytes, "disk probe", err);
    if (!buf)
        return err->status;
    _Static_assert((size_t)PROBE_DEEP_RUN * OC_IO_ALIGN <= (size_t)PROBE_SEQ_DEPTH * PROBE_SEQ_READ,
                   "the deep runs' pages fit the sequential part's buffer");
    if ((rc = probe_seq(f, size, buf, out, err)) == OC_OK &&
        (rc = probe_rand(f, size, buf, PROBE_RAND_DEPTH, PROBE_RAND_RUN, PROBE_RAND_MAX,
                         &out->rand_iops, err)) == OC_OK)
        rc = probe_rand(f, size, buf, PROBE_DEEP_DEPTH, PROBE_DEEP_RUN, PROBE_DEEP_MAX,
                        &out->rand_iops_deep, err);
    oc_free(buf);
    if (rc) {
        memset(out, 0, sizeof(*out));
        return oc_err_prefix(err, "disk probe");
    }
    out->measured = 1;
    out->gap_bytes = oc_io_gap_for(out->seq_bps, out->rand_iops);
    return OC_OK;
}

/* ---- per device, once per process ------------------------------------------ */

static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    dev_t dev;
    struct oc_io_disk disk;
} devices[PROBE_DEVICES];
static unsigned n_devices;

int oc_io_disk_of(struct oc_file *f, struct oc_io_disk *out, struct oc_err *err)
{
    struct stat st;
    int rc = OC_OK;

    memset(out, 0, sizeof(*out));
    if (fstat(f->fd, &st) != 0) {
        int e = errno;
        char eb[128];
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "%s: stat failed: %s", f->path,
                            oc_io_strerror(e, eb, sizeof(eb)));
    }
    pthread_mutex_lock(&dev_mu);
    unsigned i = 0;
    while (i < n_devices && devices[i].dev != st.st_dev)
        i++;
    if (i < n_devices) {
        *out = devices[i].disk;
    } else if ((rc = oc_io_disk_probe(f, out, err)) == OC_OK && out->measured) {
        if (n_devices < PROBE_DEVICES) {
            devices[n_devices].dev = st.st_dev;
            devices[n_devices++].disk = *out;
        }
        oc_log(OC_LOG_INFO,
               "disk probe (%s): %.0f MiB/s sequential, %.0f random 4 KiB reads/s (%.0f at %u "
               "in flight): holes up to %" PRIu64 " KiB are read along",
               f->path, out->seq_bps / (1024.0 * 1024.0), out->rand_iops, out->rand_iops_deep,
               PROBE_DEEP_DEPTH, out->gap_bytes >> 10);
    }
    pthread_mutex_unlock(&dev_mu);
    int64_t g = env_gap();
    if (g >= 0)
        out->gap_bytes = (uint64_t)g;
    return rc;
}

int oc_io_batch_fit_disk(struct oc_io_batch *b, struct oc_file *f, struct oc_err *err)
{
    struct oc_io_disk d;
    int rc = oc_io_disk_of(f, &d, err);
    if (rc == OC_OK)
        oc_io_batch_set_gap(b, d.gap_bytes);
    return rc;
}
