/*
 * probe.c — ooc_bench's disk probe (probe.h): the bandwidth and IOPS the
 * bench's bound and own-I/O columns are computed from.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: one caller. Ownership: its file, buffer and readers are freed.
 */
#include <stddef.h>
#include <stdint.h>

#include "offcore/io.h"
#include "offcore/progress.h"
#include "probe.h"

#define SEQ_BYTES    (1ull << 30) /* sequential bytes per pass, at most */
#define SEQ_READ     (1u << 20)
#define RAND_PER_RUN 1024
#define RAND_MAX_N   100000
#define RAND_MAX_S   3.0

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random reads of `len` bytes at page-aligned offsets, RAND_DEPTH in flight: count, seconds. */
static int probe_random(struct oc_file *f, struct oc_io_batch *b, uint8_t *buf, uint64_t size,
                        size_t len, uint64_t *n_reads, double *seconds, struct oc_err *err)
{
    oc_io_batch_set_merge(b, 0);
    uint64_t n_pages = (size - len) / OC_IO_ALIGN, state = 0x5eed + len;
    double t = oc_now_s(), el = 0;
    *n_reads = 0;
    while (*n_reads < RAND_MAX_N && el < RAND_MAX_S) {
        for (unsigned k = 0; k < RAND_PER_RUN; k++) {
            uint64_t page = splitmix64(&state) % n_pages;
            int rc = oc_io_batch_add(b, f, page * OC_IO_ALIGN, len, buf + (size_t)k * len, err);
            if (rc)
                return rc;
        }
        int rc = oc_io_batch_run(b, err);
        if (rc)
            return rc;
        *n_reads += RAND_PER_RUN;
        el = oc_now_s() - t;
    }
    *seconds = el;
    return OC_OK;
}

int probe_run(const char *path, struct msg_probe *r, struct oc_err *err)
{
    struct oc_file *f = NULL;
    struct oc_io_batch *b = NULL;
    uint8_t *buf = NULL;
    uint64_t size;
    int rc;
    size_t buf_bytes = (size_t)SEQ_DEPTH * SEQ_READ;
    if (buf_bytes < (size_t)RAND_PER_RUN * 2 * OC_IO_ALIGN)
        buf_bytes = (size_t)RAND_PER_RUN * 2 * OC_IO_ALIGN;
    if ((rc = oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, err)) ||
        (rc = oc_file_size(f, &size, err)))
        goto out;
    r->direct = oc_file_is_direct(f);
    if (!(buf = oc_io_buf_alloc(buf_bytes, "probe buffer", err))) {
        rc = err->status;
        goto out;
    }
    /* Sequential, one 1 MiB pread at a time, from the first page of data. */
    uint64_t lo = OC_IO_ALIGN, span = size > lo ? size - lo : 0;
    if (span > SEQ_BYTES)
        span = SEQ_BYTES;
    span -= span % SEQ_READ;
    if (span == 0) {
        rc = OC_ERR(err, OC_ERR_ARG, "%s: too small to probe", path);
        goto out;
    }
    double t = oc_now_s();
    for (uint64_t off = lo; off < lo + span; off += SEQ_READ)
        if ((rc = oc_file_pread(f, buf, SEQ_READ, off, err)))
            goto out;
    r->seq_qd1_bps = (double)span / (oc_now_s() - t);
    r->seq_bytes = span;
    /* Sequential, SEQ_DEPTH reads of 1 MiB in flight (the next GiB when the file has one). */
    uint64_t lo2 = size >= lo + 2 * span ? lo + span : lo;
    if ((rc = oc_io_batch_new(SEQ_DEPTH, (size_t)SEQ_DEPTH * SEQ_READ, &b, err)))
        goto out;
    r->uring = oc_io_batch_uses_uring(b);
    t = oc_now_s();
    for (uint64_t off = lo2; off < lo2 + span;) {
        for (unsigned k = 0; k < SEQ_DEPTH && off < lo2 + span; k++, off += SEQ_READ)
            if ((rc = oc_io_batch_add(b, f, off, SEQ_READ, buf + (size_t)k * SEQ_READ, err)))
                goto out;
        if ((rc = oc_io_batch_run(b, err)))
            goto out;
    }
    r->seq_uring_bps = (double)span / (oc_now_s() - t);
    oc_io_batch_free(b);
    b = NULL;
    /* Random 4 KiB and 8 KiB reads anywhere in the file, RAND_DEPTH in flight, no merging. */
    if ((rc = oc_io_batch_new(RAND_DEPTH, (size_t)RAND_PER_RUN * 2 * OC_IO_ALIGN, &b, err)) ||
        (rc = probe_random(f, b, buf, size, OC_IO_ALIGN, &r->rand_reads, &r->rand_s, err)))
        goto out;
    r->rand_iops = (double)r->rand_reads / r->rand_s;
    r->rand_read_bytes = oc_io_batch_stats(b)->read_bytes;
    if ((rc = probe_random(f, b, buf, size, 2 * OC_IO_ALIGN, &r->rand8_reads, &r->rand8_s, err)))
        goto out;
    r->rand8_iops = (double)r->rand8_reads / r->rand8_s;
out:
    oc_io_batch_free(b);
    oc_free(buf);
    oc_file_close(f, NULL);
    return rc;
}
