/*
 * ring.c — the row ring: many small reads of one file into one registered
 * buffer, split between one submitting thread and one completing thread
 * (the CPU analogue of Helios's GPU-initiated asynchronous I/O: the
 * submitter never waits for a read, the completer never issues one).
 *
 *   submitter: read(off, len, dst, tag) ... read, nop(tag) ──► submit ──► SQ
 *                                                                          │ kernel
 *   completer: reap ◄──────────────────────────────────────────────────── CQ
 *
 * Setup tries, best first, falling back on any refusal (logged at info
 * level with the reason):
 *   1. IORING_SETUP_SQPOLL (+ SQ_AFF when sq_cpu >= 0): a kernel thread polls
 *      the SQ, so a submission is a tail store, not a syscall;
 *   2. a plain ring (one io_uring_enter per burst);
 *   3. pread: reads run inside oc_io_ring_read on the submitting thread and
 *      their results queue in a software CQ (mutex + condition variable) that
 *      reap drains, so callers see the same protocol.
 * With a ring, cfg->buf is registered as fixed buffer 0 (IORING_OP_READ_FIXED)
 * and the file as fixed file 0 (IOSQE_FIXED_FILE); either refusal is logged
 * and the plain form used.
 *
 * Place in the data flow: io; the `helios` feature strategy submits its
 * rows' reads here from the batch pipeline's sample stage and reaps them in
 * its completion stage.
 * Thread-safety: oc_io_ring_read/_nop/_submit belong to one thread at a time
 * (the SQ's single producer), oc_io_ring_reap to one other thread (the CQ's
 * single consumer); liburing's SQ and CQ are independent rings. The software
 * CQ of pread mode is guarded by its mutex.
 * Ownership: the buffer and file are borrowed and must outlive the ring; a
 * read's destination belongs to the ring until its completion is reaped, and
 * oc_io_ring_free returns only after the kernel let go of every read: it
 * reaps what is still in flight itself (closing a ring does not wait for
 * O_DIRECT reads), for RING_DRAIN_S at most, and says whether it could.
 * Completions are waited for with a timeout where the kernel takes one with
 * the wait (IORING_FEAT_EXT_ARG, 5.11); else the completing side peeks and
 * naps, since liburing's older timed wait submits a timeout from the waiting
 * thread, which would share the SQ with the submitter.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef OC_HAVE_URING
#    include <liburing.h>
#    include <sys/uio.h>
#endif

#include "io/io_int.h"

#define RING_DRAIN_S     30u  /* oc_io_ring_free waits this long for reads in flight */
#define RING_PEEK_NAP_US 100u /* reap without EXT_ARG: sleep between peeks */

struct oc_io_ring {
    struct oc_file *f;
    enum oc_io_ring_mode mode;
    unsigned depth;
    int fixed_buf, fixed_file;
    /* pread mode: the software CQ, a circular array of depth entries */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct oc_io_done *soft;
    unsigned soft_head, soft_n;
    int sq_tid;        /* the SQPOLL kernel thread's id in /proc/self/task, or 0 (not found yet) */
    int sq_before[64]; /* SQPOLL threads of the process before this ring's */
    unsigned n_sq_before;
    /* reads and no-ops queued (submitting side) and reaped (completing side): in flight */
    _Atomic uint64_t n_queued, n_reaped;
    int wait_by_peek; /* no IORING_FEAT_EXT_ARG (or OC_URING_NO_EXT_ARG): reap peeks and sleeps */
#ifdef OC_HAVE_URING
    struct io_uring ring;
#endif
};

const char *oc_io_ring_mode_name(enum oc_io_ring_mode m)
{
    static const char *const names[OC_IO_RING_MODE_COUNT] = {"io_uring SQPOLL", "io_uring",
                                                             "pread"};
    return (unsigned)m < OC_IO_RING_MODE_COUNT ? names[m] : "?";
}

#ifdef OC_HAVE_URING

/* One setup attempt (fault point OC_FAULT_URING_SETUP); 0 or -errno. */
static int try_setup(struct oc_io_ring *r, const struct oc_io_ring_config *cfg, int sqpoll)
{
    struct io_uring_params p;
    int fe = 0;
    if (oc_fault_hit(OC_FAULT_URING_SETUP, &fe))
        return -(fe ? fe : ENOSYS);
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = 2 * r->depth;
    if (sqpoll) {
        p.flags |= IORING_SETUP_SQPOLL;
        p.sq_thread_idle = cfg->sq_idle_ms ? cfg->sq_idle_ms : 10;
        if (cfg->sq_cpu >= 0) {
            p.flags |= IORING_SETUP_SQ_AFF;
            p.sq_thread_cpu = (unsigned)cfg->sq_cpu;
        }
    }
    return io_uring_queue_init_params(r->depth, &r->ring, &p);
}

#    define RING_MAX_SQ_TIDS 64 /* sq_before's size */

/* Tasks of this process named iou-sqp-* (SQPOLL threads), up to RING_MAX_SQ_TIDS; their count. */
static unsigned sq_threads(int *tids)
{
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < RING_MAX_SQ_TIDS) {
        char path[64], comm[32] = "";
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
        FILE *fp = fopen(path, "r");
        if (!fp)
            continue;
        if (fgets(comm, sizeof(comm), fp) && strncmp(comm, "iou-sqp-", 8) == 0)
            tids[n++] = tid;
        fclose(fp);
    }
    closedir(d);
    return n;
}

/* The SQPOLL thread that is in `after` but not in `before` (0 if none or several). */
static int new_sq_thread(const int *before, unsigned n_before, const int *after, unsigned n_after)
{
    int found = 0;
    for (unsigned i = 0; i < n_after; i++) {
        unsigned k = 0;
        while (k < n_before && before[k] != after[i])
            k++;
        if (k == n_before) {
            if (found)
                return 0;
            found = after[i];
        }
    }
    return found;
}

static void setup_ring(struct oc_io_ring *r, const struct oc_io_ring_config *cfg)
{
    char eb[128];
    int e = -ENOSYS;
    const char *env = getenv("OC_NO_URING");
    if (env && env[0] && strcmp(env, "0") != 0) {
        oc_log(OC_LOG_INFO, "io ring %s: OC_NO_URING set; reads by pread", cfg->f->path);
        return;
    }
    if (cfg->sqpoll) {
        r->n_sq_before = sq_threads(r->sq_before);
        e = try_setup(r, cfg, 1);
        if (e == 0) {
            r->mode = OC_IO_RING_SQPOLL;
        } else {
            oc_log(OC_LOG_INFO, "io ring %s: SQPOLL refused (%s); trying a plain ring",
                   cfg->f->path, oc_io_strerror(-e, eb, sizeof(eb)));
        }
    }
    if (e != 0) {
        e = try_setup(r, cfg, 0);
        if (e != 0) {
            oc_log(OC_LOG_INFO, "io ring %s: io_uring refused (%s); reads by pread", cfg->f->path,
                   oc_io_strerror(-e, eb, sizeof(eb)));
            return;
        }
        r->mode = OC_IO_RING_PLAIN;
    }
    struct iovec iov = {cfg->buf, cfg->buf_bytes};
    e = cfg->buf && cfg->buf_bytes ? io_uring_register_buffers(&r->ring, &iov, 1) : -EINVAL;
    r->fixed_buf = e == 0;
    if (e)
        oc_log(OC_LOG_INFO, "io ring %s: buffer of %zu bytes not registered (%s); plain reads",
               cfg->f->path, cfg->buf_bytes, oc_io_strerror(-e, eb, sizeof(eb)));
    /* Without EXT_ARG, liburing's timed wait queues a timeout SQE and submits from the
       waiting thread: the completing side would write the submitting side's SQ. */
    const char *peek = getenv("OC_URING_NO_EXT_ARG");
    r->wait_by_peek =
        !(r->ring.features & IORING_FEAT_EXT_ARG) || (peek && peek[0] && strcmp(peek, "0") != 0);
    if (r->wait_by_peek)
        oc_log(OC_LOG_INFO, "io ring %s: no timed completion wait (EXT_ARG); completions polled",
               cfg->f->path);
    int fd = cfg->f->fd;
    e = io_uring_register_files(&r->ring, &fd, 1);
    r->fixed_file = e == 0;
    if (e)
        oc_log(OC_LOG_INFO, "io ring %s: file not registered (%s); plain descriptor", cfg->f->path,
               oc_io_strerror(-e, eb, sizeof(eb)));
}

#endif /* OC_HAVE_URING */

int oc_io_ring_new(const struct oc_io_ring_config *cfg, struct oc_io_ring **out, struct oc_err *err)
{
    *out = NULL;
    if (!cfg->f || cfg->depth == 0 || cfg->depth > 4096)
        return OC_ERR(err, OC_ERR_ARG, "io ring: needs a file and a depth of 1 to 4096 (got %u)",
                      cfg->depth);
    struct oc_io_ring *r = oc_calloc(1, sizeof(*r), "io ring", err);
    if (!r)
        return err ? err->status : OC_ERR_NOMEM;
    r->f = cfg->f;
    r->depth = cfg->depth;
    r->mode = OC_IO_RING_PREAD;
#ifdef OC_HAVE_URING
    setup_ring(r, cfg);
#endif
    if (r->mode == OC_IO_RING_PREAD) {
        r->soft = oc_alloc(r->depth * sizeof(*r->soft), "io ring: completions", err);
        if (!r->soft) {
            oc_free(r);
            return err ? err->status : OC_ERR_NOMEM;
        }
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    oc_log(OC_LOG_INFO, "io ring %s: %s, %u reads in flight%s%s", cfg->f->path,
           oc_io_ring_mode_name(r->mode), r->depth, r->fixed_buf ? ", fixed buffer" : "",
           r->fixed_file ? ", fixed file" : "");
    *out = r;
    return OC_OK;
}

uint64_t oc_io_ring_in_flight(const struct oc_io_ring *r)
{
    return atomic_load(&r->n_queued) - atomic_load(&r->n_reaped);
}

#ifdef OC_HAVE_URING
uint64_t oc_io_uring_reap_owed(struct io_uring *ring, uint64_t n, unsigned seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    t = t0;
    while (n && (uint64_t)(t.tv_sec - t0.tv_sec) < seconds) {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = {0, 100 * 1000 * 1000};
        if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) == 0) {
            io_uring_cqe_seen(ring, cqe);
            n--;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    }
    return n;
}

/* Reaps what is in flight, after handing the kernel what was queued; 1 once nothing is. */
static int drain(struct oc_io_ring *r)
{
    uint64_t n = oc_io_ring_in_flight(r);
    if (n == 0)
        return 1;
    io_uring_submit(&r->ring);
    uint64_t left = oc_io_uring_reap_owed(&r->ring, n, RING_DRAIN_S);
    atomic_fetch_add(&r->n_reaped, n - left);
    return left == 0;
}
#endif

int oc_io_ring_free(struct oc_io_ring *r)
{
    if (!r)
        return 1;
    int drained = 1;
#ifdef OC_HAVE_URING
    if (r->mode != OC_IO_RING_PREAD) {
        drained = drain(r);
        if (!drained)
            oc_log(OC_LOG_ERROR,
                   "io ring %s: %" PRIu64 " reads still in flight after %u s; their buffer must "
                   "stay allocated",
                   r->f->path, oc_io_ring_in_flight(r), RING_DRAIN_S);
        io_uring_queue_exit(&r->ring);
    }
#endif
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    oc_free(r->soft);
    oc_free(r);
    return drained;
}

enum oc_io_ring_mode oc_io_ring_mode(const struct oc_io_ring *r)
{
    return r->mode;
}

int oc_io_ring_fixed_buffer(const struct oc_io_ring *r)
{
    return r->fixed_buf;
}

int oc_io_ring_fixed_file(const struct oc_io_ring *r)
{
    return r->fixed_file;
}

int oc_io_ring_waits_by_peeking(const struct oc_io_ring *r)
{
    return r->wait_by_peek;
}

/* pread mode: a finished read into the software CQ (the caller keeps <= depth unreaped). */
static int soft_push(struct oc_io_ring *r, uint64_t tag, int64_t res, struct oc_err *err)
{
    pthread_mutex_lock(&r->mu);
    if (r->soft_n == r->depth) {
        pthread_mutex_unlock(&r->mu);
        return OC_ERR(err, OC_ERR_INTERNAL, "io ring %s: more than %u reads unreaped", r->f->path,
                      r->depth);
    }
    r->soft[(r->soft_head + r->soft_n) % r->depth] = (struct oc_io_done){tag, res};
    r->soft_n++;
    atomic_fetch_add(&r->n_queued, 1);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return OC_OK;
}

#ifdef OC_HAVE_URING
static struct io_uring_sqe *get_sqe(struct oc_io_ring *r, struct oc_err *err)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) { /* SQ full: hand it over and retry once */
        if (oc_io_ring_submit(r, err))
            return NULL;
        sqe = io_uring_get_sqe(&r->ring);
        if (!sqe)
            OC_ERR(err, OC_ERR_INTERNAL, "io ring %s: submission queue full", r->f->path);
    }
    return sqe;
}
#endif

int oc_io_ring_read(struct oc_io_ring *r, uint64_t off, size_t len, void *dst, uint64_t tag,
                    struct oc_err *err)
{
    if (r->mode == OC_IO_RING_PREAD) {
        size_t got = 0;
        struct oc_err e;
        int rc = oc_file_pread_upto(r->f, dst, len, off, &got, &e);
        /* the error travels as -errno, as a ring's would: the completer names it */
        return soft_push(r, tag, rc ? -(int64_t)(e.sys_errno ? e.sys_errno : EIO) : (int64_t)got,
                         err);
    }
#ifdef OC_HAVE_URING
    struct io_uring_sqe *sqe = get_sqe(r, err);
    if (!sqe)
        return err ? err->status : OC_ERR_INTERNAL;
    int fd = r->fixed_file ? 0 : r->f->fd;
    if (r->fixed_buf)
        io_uring_prep_read_fixed(sqe, fd, dst, (unsigned)len, off, 0);
    else
        io_uring_prep_read(sqe, fd, dst, (unsigned)len, off);
    if (r->fixed_file)
        sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, tag);
    atomic_fetch_add(&r->n_queued, 1);
    return OC_OK;
#else
    (void)off, (void)len, (void)dst, (void)tag;
    return OC_ERR(err, OC_ERR_INTERNAL, "io ring: no io_uring support built in");
#endif
}

int oc_io_ring_nop(struct oc_io_ring *r, uint64_t tag, struct oc_err *err)
{
    if (r->mode == OC_IO_RING_PREAD)
        return soft_push(r, tag, 0, err);
#ifdef OC_HAVE_URING
    struct io_uring_sqe *sqe = get_sqe(r, err);
    if (!sqe)
        return err ? err->status : OC_ERR_INTERNAL;
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, tag);
    atomic_fetch_add(&r->n_queued, 1);
    return OC_OK;
#else
    (void)tag;
    return OC_ERR(err, OC_ERR_INTERNAL, "io ring: no io_uring support built in");
#endif
}

int oc_io_ring_submit(struct oc_io_ring *r, struct oc_err *err)
{
    int fe = 0;
    char eb[128];
    if (r->mode == OC_IO_RING_PREAD)
        return OC_OK; /* nothing to submit: an io_uring fault cannot happen here */
    if (oc_fault_hit(OC_FAULT_URING_SUBMIT, &fe))
        return OC_ERR_ERRNO(err, OC_ERR_IO, fe ? fe : EIO, "%s: io_uring submission failed: %s",
                            r->f->path, oc_io_strerror(fe ? fe : EIO, eb, sizeof(eb)));
#ifdef OC_HAVE_URING
    for (unsigned tries = 0;; tries++) {
        int e = io_uring_submit(&r->ring);
        if (e >= 0)
            return OC_OK;
        if ((e == -EAGAIN || e == -EBUSY || e == -EINTR) && tries < 10000) {
            usleep(50);
            continue;
        }
        return OC_ERR_ERRNO(err, OC_ERR_IO, -e, "%s: io_uring submission failed: %s", r->f->path,
                            oc_io_strerror(-e, eb, sizeof(eb)));
    }
#else
    return OC_OK;
#endif
}

int oc_io_ring_reap(struct oc_io_ring *r, struct oc_io_done *out, unsigned max, unsigned *n,
                    unsigned timeout_us, struct oc_err *err)
{
    *n = 0;
    if (r->mode == OC_IO_RING_PREAD) {
        pthread_mutex_lock(&r->mu);
        if (r->soft_n == 0 && timeout_us) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)timeout_us * 1000u;
            ts.tv_sec += (time_t)(ns / 1000000000u);
            ts.tv_nsec = (long)(ns % 1000000000u);
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
        while (r->soft_n && *n < max) {
            out[(*n)++] = r->soft[r->soft_head];
            r->soft_head = (r->soft_head + 1) % r->depth;
            r->soft_n--;
        }
        atomic_fetch_add(&r->n_reaped, *n);
        pthread_mutex_unlock(&r->mu);
        return OC_OK;
    }
#ifdef OC_HAVE_URING
    struct io_uring_cqe *cqe;
    char eb[128];
    if (io_uring_peek_cqe(&r->ring, &cqe) != 0 && r->wait_by_peek) {
        struct timespec nap = {
            0, (long)(timeout_us < RING_PEEK_NAP_US ? timeout_us : RING_PEEK_NAP_US) * 1000};
        nanosleep(&nap, NULL);
    } else if (io_uring_peek_cqe(&r->ring, &cqe) != 0) {
        struct __kernel_timespec ts = {(long long)(timeout_us / 1000000u),
                                       (long long)(timeout_us % 1000000u) * 1000};
        int e = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
        if (e == -ETIME || e == -EINTR || e == -EAGAIN)
            return OC_OK;
        if (e < 0)
            return OC_ERR_ERRNO(err, OC_ERR_IO, -e, "%s: waiting for io_uring completions: %s",
                                r->f->path, oc_io_strerror(-e, eb, sizeof(eb)));
    }
    while (*n < max && io_uring_peek_cqe(&r->ring, &cqe) == 0) {
        out[(*n)++] = (struct oc_io_done){io_uring_cqe_get_data64(cqe), cqe->res};
        io_uring_cqe_seen(&r->ring, cqe);
    }
    atomic_fetch_add(&r->n_reaped, *n);
    return OC_OK;
#else
    (void)out, (void)max, (void)timeout_us, (void)err;
    return OC_OK;
#endif
}

uint64_t oc_io_ring_sq_cpu_ns(struct oc_io_ring *r)
{
    char path[64];
    unsigned long long ns = 0;
    if (r->mode != OC_IO_RING_SQPOLL)
        return 0;
#ifdef OC_HAVE_URING
    if (!r->sq_tid) { /* the kernel names its thread once it runs: look for it now */
        int after[RING_MAX_SQ_TIDS];
        r->sq_tid = new_sq_thread(r->sq_before, r->n_sq_before, after, sq_threads(after));
        if (!r->sq_tid) {
            oc_log(OC_LOG_DEBUG, "io ring %s: SQPOLL thread not found; its CPU not counted",
                   r->f->path);
            return 0;
        }
    }
#endif
    /* schedstat's first field: nanoseconds on a CPU (exact, unlike stat's sampled ticks) */
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", r->sq_tid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    if (fscanf(fp, "%llu", &ns) != 1)
        ns = 0;
    fclose(fp);
    return (uint64_t)ns;
}
