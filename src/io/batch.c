/*
 * batch.c — the batch reader: gathers many small byte ranges of (O_DIRECT)
 * files into caller memory with few, large, aligned reads, through one
 * io_uring ring, or through pread where io_uring is unavailable.
 *
 * Place in the data flow: io; the store's feature gathers and the dataset's
 * row reads queue ranges here, then run the batch once per mini-batch.
 *
 *   add(f, off, len, dst) ... add  -->  run:
 *     1. sort requests by (file, offset)          (in place, no allocation)
 *     2. page-align each [off, off+len); merge spans of one file that share
 *        or touch a page, or lie at most `gap` bytes apart (the block
 *        reader's crossover: reading the hole costs less than one more
 *        request; probe.c), up to max_read bytes   -> one read per span
 *        (the rule, written once for the reader and its predictions: span.c)
 *     3. io_uring: keep `depth` reads in flight the whole run; the aligned
 *        bounce buffer is a ring that spans take bytes from in issue order
 *        and give back once they and every earlier span are finished;
 *        pread: fill the bounce buffer, read it span by span, then the next
 *        round
 *     4. as each read completes, copy every request it covers from the
 *        bounce buffer to its destination
 *
 *   requests (sorted)  |--a--|  |-b-|     |----c----|        |d|
 *   pages              [  p0  ][  p1  ][  p2  ][  p3  ]...  [ p9 ]
 *   spans (reads)      [============= one read ==========]  [ p9 ]
 *   gap >= 5 pages     [================== one read ===================]
 *
 * With merging switched off (oc_io_batch_set_merge), step 2 gives every
 * request its own span. A request larger than max_read is split at add time
 * into pieces, each of which fits one read. A span that runs past end of file
 * gets what exists; a request that needs bytes past end of file fails
 * (OC_ERR_FORMAT, naming the file and offset). Each completed read passes
 * through oc_fault_hit(). After the first error no request is copied out any
 * more (so no callback runs), but every read issued is still waited for.
 *
 * Where the kernel allows it the bounce buffer is registered with the ring
 * (read_fixed) and files given to oc_io_batch_register_file go into the
 * ring's file table (IOSQE_FIXED_FILE); either refusal is logged at debug
 * level and the plain read is used.
 *
 * Thread-safety: a batch belongs to one thread (it owns its ring); callbacks
 * run on that thread, inside oc_io_batch_run. Files added to it may be
 * shared with other threads.
 * Ownership: destination buffers and files are borrowed until run returns;
 * the bounce buffer belongs to the ring while a read into it is in flight,
 * and run never returns before every read it issued has completed. The
 * request and span arrays grow geometrically and are reused, so a batch in
 * steady state allocates nothing per run.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef OC_HAVE_URING
#    include <liburing.h>
#    include <sys/uio.h>
#endif

#include "io/io_int.h"

#define BATCH_DEFAULT_DEPTH 64u
#define BATCH_MAX_DEPTH     4096u
#define BATCH_MAX_FILES     8u /* registered files per ring */
#define BATCH_NO_CB         SIZE_MAX
#define BATCH_DRAIN_S       30u  /* a failed ring's reads are waited for this long */
#define GROW_FIRST          256u /* requests, spans and callbacks allocated at first */

struct batch_req {
    struct oc_file *f;
    uint64_t off;
    size_t len;
    void *dst;
    size_t cb; /* index in cbs of the request this piece belongs to, or BATCH_NO_CB */
};

/* A request added with a completion callback; run calls fn once n_left reaches 0. */
struct batch_cb {
    oc_io_done_fn fn;
    void *ctx;
    uint64_t tag;
    void *dst;
    size_t len;
    size_t n_left; /* pieces not in place yet */
};

struct batch_span {
    struct oc_file *f;
    uint64_t off;      /* aligned */
    size_t len;        /* aligned, <= max_read */
    size_t got;        /* bytes delivered so far */
    size_t bounce_off; /* where in the bounce buffer */
    size_t first_req;  /* requests [first_req, end_req) lie inside this span */
    size_t end_req;
    size_t alloc; /* io_uring: bounce bytes it holds, wrap-around gap included */
    int done;     /* io_uring: finished (copied out or failed): its bounce bytes are free */
};

struct oc_io_batch {
    unsigned depth;
    size_t bounce_bytes;
    size_t max_read;
    uint8_t *bounce;
    struct batch_req *reqs;
    size_t n_reqs;
    uint64_t cap_reqs;
    struct batch_span *spans;
    size_t n_spans;
    uint64_t cap_spans;
    struct batch_cb *cbs;
    size_t n_cbs;
    uint64_t cap_cbs;
    struct oc_io_stats stats;
    int merge;    /* merge requests that share or touch a page (default 1) */
    uint64_t gap; /* and spans at most this many bytes apart (aligned; default 0) */
    int use_uring;
#ifdef OC_HAVE_URING
    int fixed_buf;                              /* bounce registered with the ring: read_fixed */
    int files_registered;                       /* the ring has a file table of BATCH_MAX_FILES */
    struct oc_file *reg_files[BATCH_MAX_FILES]; /* reg_files[i] is fixed file i */
    struct io_uring ring;
#endif
};

int oc_io_batch_new(unsigned depth, size_t bounce_bytes, struct oc_io_batch **out,
                    struct oc_err *err)
{
    struct oc_io_batch *b;

    *out = NULL;
    b = oc_calloc(1, sizeof(*b), "io batch", err);
    if (!b)
        return err ? err->status : OC_ERR_NOMEM;
    if (depth == 0)
        depth = BATCH_DEFAULT_DEPTH;
    if (depth > BATCH_MAX_DEPTH)
        depth = BATCH_MAX_DEPTH;
    b->depth = depth;
    b->merge = 1;
    if (bounce_bytes < OC_IO_ALIGN)
        bounce_bytes = OC_IO_ALIGN;
    b->bounce_bytes = (size_t)oc_io_align_up(bounce_bytes);
    b->max_read = b->bounce_bytes < OC_IO_MAX_READ ? b->bounce_bytes : OC_IO_MAX_READ;
    b->bounce = oc_io_buf_alloc(b->bounce_bytes, "io batch bounce", err);
    if (!b->bounce) {
        int rc = err ? err->status : OC_ERR_NOMEM;
        oc_free(b);
        return rc;
    }
#ifdef OC_HAVE_URING
    {
        const char *env = getenv("OC_NO_URING");
        if (env && env[0] && strcmp(env, "0") != 0) {
            oc_log(OC_LOG_DEBUG, "io batch: OC_NO_URING set; using pread");
        } else {
            int fe = 0, r;
            if (oc_fault_hit(OC_FAULT_URING_SETUP, &fe))
                r = -(fe ? fe : ENOSYS);
            else
                r = io_uring_queue_init(depth, &b->ring, 0);
            if (r < 0) {
                char eb[128];
                oc_log(OC_LOG_INFO, "io batch: io_uring unavailable (%s); using pread",
                       oc_io_strerror(-r, eb, sizeof(eb)));
            } else {
                b->use_uring = 1;
                /* Fixed buffers save a page walk per read; optional (memlock limits). */
                if (b->bounce_bytes <= (1u << 30)) {
                    struct iovec iov = {b->bounce, b->bounce_bytes};
                    int e = io_uring_register_buffers(&b->ring, &iov, 1);
                    b->fixed_buf = e == 0;
                    if (e) {
                        char eb[128];
                        oc_log(OC_LOG_DEBUG, "io batch: bounce buffer not registered (%s)",
                               oc_io_strerror(-e, eb, sizeof(eb)));
                    }
                }
            }
        }
    }
#endif
    *out = b;
    return OC_OK;
}

void oc_io_batch_free(struct oc_io_batch *b)
{
    if (!b)
        return;
#ifdef OC_HAVE_URING
    if (b->use_uring)
        io_uring_queue_exit(&b->ring);
#endif
    oc_free(b->reqs);
    oc_free(b->spans);
    oc_free(b->cbs);
    oc_free(b->bounce);
    oc_free(b);
}

int oc_io_batch_register_file(struct oc_io_batch *b, struct oc_file *f)
{
#ifdef OC_HAVE_URING
    if (!b->use_uring || !f)
        return 0;
    unsigned i = 0;
    for (; i < BATCH_MAX_FILES && b->reg_files[i]; i++)
        if (b->reg_files[i] == f)
            return 1;
    if (i == BATCH_MAX_FILES)
        return 0;
    int e, fd = f->fd;
    if (!b->files_registered) {
        int fds[BATCH_MAX_FILES];
        for (unsigned k = 0; k < BATCH_MAX_FILES; k++)
            fds[k] = -1; /* sparse: filled by updates */
        e = io_uring_register_files(&b->ring, fds, BATCH_MAX_FILES);
        b->files_registered = e == 0;
        if (e)
            goto refused;
    }
    e = io_uring_register_files_update(&b->ring, i, &fd, 1);
    if (e == 1) {
        b->reg_files[i] = f;
        return 1;
    }
    e = e < 0 ? e : -EIO;
refused:;
    char eb[128];
    oc_log(OC_LOG_DEBUG, "io batch: %s not registered with the ring (%s); plain reads", f->path,
           oc_io_strerror(-e, eb, sizeof(eb)));
    return 0;
#else
    (void)b;
    (void)f;
    return 0;
#endif
}

int oc_io_batch_uses_uring(const struct oc_io_batch *b)
{
    return b->use_uring;
}

const struct oc_io_stats *oc_io_batch_stats(const struct oc_io_batch *b)
{
    return &b->stats;
}

size_t oc_io_batch_max_read(const struct oc_io_batch *b)
{
    return b->max_read;
}

void oc_io_batch_set_merge(struct oc_io_batch *b, int merge)
{
    b->merge = merge != 0;
}

void oc_io_batch_set_gap(struct oc_io_batch *b, uint64_t gap_bytes)
{
    b->gap = oc_io_align_down(gap_bytes);
}

size_t oc_io_batch_held_bytes(const struct oc_io_batch *b)
{
    return sizeof(*b) + b->bounce_bytes + b->cap_reqs * sizeof(struct batch_req) +
           b->cap_spans * sizeof(struct batch_span) + b->cap_cbs * sizeof(struct batch_cb);
}

size_t oc_io_batch_request_bytes(void)
{
    return sizeof(struct batch_req) + sizeof(struct batch_span) + sizeof(struct batch_cb);
}

int oc_io_batch_reserve(struct oc_io_batch *b, size_t n, struct oc_err *err)
{
    int rc;
    if ((rc = oc_grow(&b->reqs, &b->cap_reqs, n, sizeof(struct batch_req), GROW_FIRST,
                      "io batch requests", err)) ||
        (rc = oc_grow(&b->spans, &b->cap_spans, n, sizeof(struct batch_span), GROW_FIRST,
                      "io batch spans", err)))
        return rc;
    return oc_grow(&b->cbs, &b->cap_cbs, n, sizeof(struct batch_cb), GROW_FIRST,
                   "io batch callbacks", err);
}

static int push_req(struct oc_io_batch *b, struct oc_file *f, uint64_t off, size_t len, void *dst,
                    size_t cb, struct oc_err *err)
{
    int rc = oc_grow(&b->reqs, &b->cap_reqs, b->n_reqs + 1, sizeof(*b->reqs), GROW_FIRST,
                     "io batch requests", err);
    if (rc)
        return rc;
    b->reqs[b->n_reqs++] = (struct batch_req){f, off, len, dst, cb};
    return OC_OK;
}

static int push_cb(struct oc_io_batch *b, const struct batch_cb *c, struct oc_err *err)
{
    int rc = oc_grow(&b->cbs, &b->cap_cbs, b->n_cbs + 1, sizeof(*b->cbs), GROW_FIRST,
                     "io batch callbacks", err);
    if (rc)
        return rc;
    b->cbs[b->n_cbs++] = *c;
    return OC_OK;
}

int oc_io_batch_add_cb(struct oc_io_batch *b, struct oc_file *f, uint64_t off, size_t len,
                       void *dst, oc_io_done_fn fn, void *ctx, uint64_t tag, struct oc_err *err)
{
    size_t n_before = b->n_reqs, cb = BATCH_NO_CB;
    uint64_t end = off + len, pos = off;

    if (!f)
        return OC_ERR(err, OC_ERR_ARG, "oc_io_batch_add: NULL file");
    if (len == 0) {
        b->stats.n_requests++;
        if (fn)
            fn(ctx, tag, dst, 0); /* nothing to wait for */
        return OC_OK;
    }
    if (!dst || end < off)
        return OC_ERR(err, OC_ERR_ARG,
                      "%s: batch request of %zu bytes at offset %" PRIu64 " is invalid", f->path,
                      len, off);
    if (fn) {
        struct batch_cb c = {fn, ctx, tag, dst, len, 0};
        int rc = push_cb(b, &c, err);
        if (rc)
            return rc;
        cb = b->n_cbs - 1;
    }
    /* Pieces whose page-aligned span fits one read (span.c). */
    while (pos < end) {
        uint64_t piece_end = oc_io_piece_end(pos, end, b->max_read);
        int rc = push_req(b, f, pos, (size_t)(piece_end - pos), (char *)dst + (pos - off), cb, err);
        if (rc) {
            b->n_reqs = n_before;
            if (fn)
                b->n_cbs--;
            return rc;
        }
        if (fn)
            b->cbs[cb].n_left++;
        pos = piece_end;
    }
    b->stats.n_requests++;
    b->stats.requested_bytes += len;
    return OC_OK;
}

int oc_io_batch_add(struct oc_io_batch *b, struct oc_file *f, uint64_t off, size_t len, void *dst,
                    struct oc_err *err)
{
    return oc_io_batch_add_cb(b, f, off, len, dst, NULL, NULL, 0, err);
}

/* ---- run: sort, merge ----------------------------------------------------- */

static int req_less(const struct batch_req *a, const struct batch_req *c)
{
    if (a->f != c->f)
        return (uintptr_t)a->f < (uintptr_t)c->f;
    return a->off < c->off;
}

static void sift_down(struct batch_req *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && req_less(&a[child], &a[child + 1]))
            child++;
        if (!req_less(&a[root], &a[child]))
            return;
        struct batch_req t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

/* Heapsort: in place and allocation-free (qsort may malloc). Sorted input is the common case. */
static void sort_reqs(struct batch_req *a, size_t n)
{
    size_t i;

    for (i = 1; i < n && !req_less(&a[i], &a[i - 1]); i++)
        ;
    if (i >= n)
        return;
    for (i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (i = n; i-- > 1;) {
        struct batch_req t = a[0];
        a[0] = a[i];
        a[i] = t;
        sift_down(a, 0, i);
    }
}

/* One span per read, by the merge rule of span.c (requests sorted by file, then offset). */
static int build_spans(struct oc_io_batch *b, struct oc_err *err)
{
    const struct oc_io_span_rule rule = {b->merge, b->gap, b->max_read};
    struct batch_span *s = NULL;
    struct oc_io_span cur = {0, 0};

    int rc = oc_grow(&b->spans, &b->cap_spans, b->n_reqs, sizeof(*b->spans), GROW_FIRST,
                     "io batch spans", err);
    if (rc)
        return rc;
    b->n_spans = 0;
    for (size_t i = 0; i < b->n_reqs; i++) {
        const struct batch_req *r = &b->reqs[i];
        if (s && s->f == r->f && oc_io_span_join(&rule, &cur, r->off, r->len)) {
            s->len = (size_t)cur.len;
            s->end_req = i + 1;
            continue;
        }
        oc_io_span_open(&cur, r->off, r->len);
        s = &b->spans[b->n_spans++];
        *s = (struct batch_span){r->f, cur.off, (size_t)cur.len, 0, 0, i, i + 1, 0, 0};
    }
    return OC_OK;
}

/* Copies every request of a finished span out of the bounce buffer. */
static int span_copy_out(struct oc_io_batch *b, const struct batch_span *s, struct oc_err *err)
{
    uint64_t have_end = s->off + s->got;

    for (size_t i = s->first_req; i < s->end_req; i++) {
        const struct batch_req *r = &b->reqs[i];
        if (r->off + r->len > have_end)
            return oc_io_err_truncated(r->f, r->len, r->off,
                                       have_end > r->off ? have_end - r->off : 0, err);
        memcpy(r->dst, b->bounce + s->bounce_off + (r->off - s->off), r->len);
        if (r->cb != BATCH_NO_CB) {
            struct batch_cb *c = &b->cbs[r->cb];
            if (--c->n_left == 0)
                c->fn(c->ctx, c->tag, c->dst, c->len);
        }
    }
    return OC_OK;
}

static int round_pread(struct oc_io_batch *b, size_t first, size_t end, struct oc_err *err)
{
    for (size_t i = first; i < end; i++) {
        struct batch_span *s = &b->spans[i];
        int rc = oc_file_pread_upto(s->f, b->bounce + s->bounce_off, s->len, s->off, &s->got, err);
        if (rc)
            return rc;
        b->stats.read_bytes += s->got;
        rc = span_copy_out(b, s, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

#ifdef OC_HAVE_URING

/* f's index in the ring's file table, or -1. */
static int fixed_file(const struct oc_io_batch *b, const struct oc_file *f)
{
    for (unsigned i = 0; i < BATCH_MAX_FILES && b->reg_files[i]; i++)
        if (b->reg_files[i] == f)
            return (int)i;
    return -1;
}

/* Queues the rest of span idx (from s->got on). The SQ has room: in flight <= depth = SQ size. */
/*
 * Reaps n reads the kernel took (completions dropped: the run failed), for
 * BATCH_DRAIN_S at most; past that the bounce buffer stays theirs (never
 * freed) and the batch reads through a new one, or none (runs then fail).
 */
static void uring_drain(struct oc_io_batch *b, unsigned n)
{
    uint64_t left = oc_io_uring_reap_owed(&b->ring, n, BATCH_DRAIN_S);
    if (!left)
        return;
    oc_log(OC_LOG_ERROR,
           "io batch: %" PRIu64 " reads still in flight after %u s; their buffer is left to them",
           left, BATCH_DRAIN_S);
    struct oc_err e;
    b->bounce = oc_io_buf_alloc(b->bounce_bytes, "io batch bounce", &e); /* the old one leaks */
}

static int uring_prep(struct oc_io_batch *b, size_t idx, struct oc_err *err)
{
    struct batch_span *s = &b->spans[idx];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
    void *buf = b->bounce + s->bounce_off + s->got;
    unsigned n = (unsigned)(s->len - s->got);
    uint64_t off = s->off + s->got;

    if (!sqe) {
        io_uring_submit(&b->ring);
        sqe = io_uring_get_sqe(&b->ring);
        if (!sqe)
            return OC_ERR(err, OC_ERR_INTERNAL, "%s: io_uring submission queue full", s->f->path);
    }
    int fixed = fixed_file(b, s->f);
    int fd = fixed >= 0 ? fixed : s->f->fd; /* an index into the ring's file table, or the fd */
    if (b->fixed_buf)
        io_uring_prep_read_fixed(sqe, fd, buf, n, off, 0);
    else
        io_uring_prep_read(sqe, fd, buf, n, off);
    if (fixed >= 0)
        sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, (uint64_t)idx);
    return OC_OK;
}

/*
 * Handles one completion. Returns 1 if the span needs another read (short read
 * before end of file, EINTR/EAGAIN), 0 if it is finished (copied out, or
 * failed with *rc set). Only the first error is kept.
 */
static int uring_complete(struct oc_io_batch *b, size_t idx, int res, int *rc, struct oc_err *err)
{
    struct batch_span *s = &b->spans[idx];
    int fe = 0;
    char eb[128];

    if (oc_fault_hit(OC_FAULT_READ, &fe))
        res = fe ? -fe : 0; /* errno 0: a short read, i.e. premature end of file */
    if (res < 0) {
        if ((res == -EINTR || res == -EAGAIN) && *rc == OC_OK)
            return 1;
        if (*rc == OC_OK)
            *rc = OC_ERR_ERRNO(err, oc_io_status_rw(-res), -res,
                               "%s: read of %zu bytes at offset %" PRIu64 " failed: %s", s->f->path,
                               s->len - s->got, s->off + s->got,
                               oc_io_strerror(-res, eb, sizeof(eb)));
        return 0;
    }
    s->got += (size_t)res;
    b->stats.read_bytes += (uint64_t)res;
    if (res > 0 && s->got < s->len && !(s->f->is_direct && !oc_io_is_aligned(s->got)) &&
        *rc == OC_OK)
        return 1;
    if (*rc == OC_OK)
        *rc = span_copy_out(b, s, err);
    return 0;
}

/*
 * Places span idx in the bounce buffer, used as a ring: spans take bytes in
 * issue order from head (wrapping to 0 when the rest of the buffer is too
 * short; the gap is charged to the span) and give them back in issue order.
 * Returns 0 if it does not fit now.
 */
static int ring_place(struct oc_io_batch *b, size_t idx, size_t *head, size_t *used)
{
    struct batch_span *s = &b->spans[idx];
    size_t cap = b->bounce_bytes, gap = 0;
    if (*used == 0)
        *head = 0;
    int wrap = *head + s->len > cap;
    if (wrap)
        gap = cap - *head;
    if (*used + gap + s->len > cap)
        return 0;
    s->bounce_off = wrap ? 0 : *head;
    s->alloc = gap + s->len;
    *head = s->bounce_off + s->len;
    *used += s->alloc;
    return 1;
}

/*
 * Reads every span through the ring, keeping up to `depth` reads in flight
 * the whole time: a span's bounce bytes are reused as soon as it and every
 * span issued before it are finished, so the disk never waits for a round to
 * drain.
 */
static int run_uring(struct oc_io_batch *b, struct oc_err *err)
{
    size_t next = 0, retired = 0, in_flight = 0, head = 0, used = 0;
    unsigned retries = 0;
    int rc = OC_OK;
    char eb[128];

    while (in_flight > 0 || (rc == OC_OK && next < b->n_spans)) {
        while (rc == OC_OK && next < b->n_spans && in_flight < b->depth &&
               ring_place(b, next, &head, &used)) {
            b->spans[next].done = 0;
            rc = uring_prep(b, next, err);
            if (rc)
                break;
            next++;
            in_flight++;
        }
        if (in_flight == 0)
            break;
        int fe = 0;
        int r = oc_fault_hit(OC_FAULT_BATCH_SUBMIT, &fe) ? -(fe ? fe : EIO)
                                                         : io_uring_submit_and_wait(&b->ring, 1);
        if (r < 0 && r != -EINTR) {
            if ((r == -EAGAIN || r == -EBUSY) && ++retries < 10000) {
                usleep(50);
            } else {
                /*
                 * The ring is unusable: fall back to pread for later runs.
                 * Closing a ring does not wait for its O_DIRECT reads, so the
                 * ones the kernel took are reaped first; should any never
                 * finish, the bounce buffer they land in is left to them and
                 * pread gets a new one.
                 */
                if (rc == OC_OK)
                    rc = OC_ERR_ERRNO(err, OC_ERR_IO, -r, "io batch: io_uring_submit failed: %s",
                                      oc_io_strerror(-r, eb, sizeof(eb)));
                uring_drain(b, (unsigned)(in_flight - io_uring_sq_ready(&b->ring)));
                io_uring_queue_exit(&b->ring);
                b->use_uring = 0;
                b->fixed_buf = 0;
                b->files_registered = 0;
                memset(b->reg_files, 0, sizeof(b->reg_files));
                oc_log(OC_LOG_WARN, "io batch: io_uring failed; falling back to pread");
                return rc;
            }
        } else {
            retries = 0;
        }
        struct io_uring_cqe *cqe;
        while (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
            size_t idx = (size_t)io_uring_cqe_get_data64(cqe);
            int res = cqe->res;
            io_uring_cqe_seen(&b->ring, cqe);
            in_flight--;
            if (uring_complete(b, idx, res, &rc, err)) {
                int prc = uring_prep(b, idx, err);
                if (prc == OC_OK) {
                    in_flight++;
                    continue;
                }
                if (rc == OC_OK)
                    rc = prc;
            }
            b->spans[idx].done = 1;
        }
        while (retired < next && b->spans[retired].done)
            used -= b->spans[retired++].alloc;
    }
    return rc;
}

#endif /* OC_HAVE_URING */

int oc_io_batch_run(struct oc_io_batch *b, struct oc_err *err)
{
    int rc = OC_OK;
    size_t first = 0;

    if (b->n_reqs == 0)
        return OC_OK;
    if (!b->bounce) {
        rc = OC_ERR(err, OC_ERR_NOMEM,
                    "io batch: no bounce buffer (an earlier failure's reads never finished)");
        goto out;
    }
    sort_reqs(b->reqs, b->n_reqs);
    rc = build_spans(b, err);
    if (rc)
        goto out;
    b->stats.n_reads += b->n_spans;
#ifdef OC_HAVE_URING
    if (b->use_uring) {
        rc = run_uring(b, err);
        goto out;
    }
#endif
    while (first < b->n_spans) {
        size_t end = first, used = 0;
        while (end < b->n_spans && used + b->spans[end].len <= b->bounce_bytes) {
            b->spans[end].bounce_off = used;
            used += b->spans[end].len;
            end++;
        }
        rc = round_pread(b, first, end, err);
        if (rc)
            goto out;
        first = end;
    }
out:
    b->n_reqs = 0;
    b->n_spans = 0;
    b->n_cbs = 0;
    return rc;
}
