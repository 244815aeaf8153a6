/*
 * io_int.h — private to src/io: the oc_file record (the batch reader needs the
 * descriptor and O_DIRECT state), errno helpers, and test-only knobs.
 *
 * Place in the data flow: shared by the io module's files; tests may include
 * it to reach the knobs below. Nothing outside src/io and tests uses it.
 * Thread-safety: see each function; the helpers are pure.
 * Ownership: an oc_file owns its descriptor and its copy of the path.
 */
#ifndef OFFCORE_IO_INT_H
#define OFFCORE_IO_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "offcore/io.h"

#ifdef OC_HAVE_URING
struct io_uring;
/*
 * Reaps (and drops) n completions the kernel owes on ring, waiting for them
 * `seconds` at most; returns how many never came. Closing a ring does not
 * wait for its O_DIRECT reads: a buffer they land in is free only once
 * this returns 0. One thread at a time, both sides of the ring idle (ring.c).
 */
uint64_t oc_io_uring_reap_owed(struct io_uring *ring, uint64_t n, unsigned seconds);
#endif

struct oc_file {
    int fd;
    int is_direct; /* O_DIRECT in effect: buf/len/off must be OC_IO_ALIGN-aligned */
    unsigned flags;
    char *path;
};

/* Status for a failed read/write: out of space is its own status, the rest is I/O. */
static inline int oc_io_status_rw(int e)
{
    return (e == ENOSPC || e == EDQUOT) ? OC_ERR_NOSPC : OC_ERR_IO;
}

/* Status for a failed open/stat/mkdir/rename. */
static inline int oc_io_status_open(int e)
{
    switch (e) {
    case ENOENT:
        return OC_ERR_NOTFOUND;
    case EEXIST:
        return OC_ERR_EXISTS;
    case ENOSPC:
    case EDQUOT:
        return OC_ERR_NOSPC;
    case ENOMEM:
        return OC_ERR_NOMEM;
    default:
        return OC_ERR_IO;
    }
}

/* Thread-safe strerror (GNU strerror_r: returns a static string or fills buf). */
static inline const char *oc_io_strerror(int e, char *buf, size_t n)
{
    return strerror_r(e, buf, n);
}

/* Whether p is aligned to OC_IO_ALIGN. */
static inline int oc_io_is_aligned(uint64_t x)
{
    return (x & (OC_IO_ALIGN - 1)) == 0;
}

/*
 * OC_OK if fd is a regular file, else OC_ERR_IO "<path>: is not a regular file
 * (fifo|directory|character device|...)".
 */
int oc_io_check_regular(int fd, const char *path, struct oc_err *err);

/* The error for a read that hit end of file early (shared by pread and the batch reader). */
int oc_io_err_truncated(struct oc_file *f, size_t len, uint64_t off, uint64_t got,
                        struct oc_err *err);

/* Test knob: lowers the 64 MiB line limit of one reader (bytes, > 0). */
void oc_line_reader_set_max_line(struct oc_line_reader *r, size_t bytes);
/* Test knob: the merged-read cap of a batch reader (a multiple of OC_IO_ALIGN). */
size_t oc_io_batch_max_read(const struct oc_io_batch *b);
/* Test knob: whether a ring reaps by peeking and sleeping (no EXT_ARG, or OC_URING_NO_EXT_ARG). */
int oc_io_ring_waits_by_peeking(const struct oc_io_ring *r);

#endif
