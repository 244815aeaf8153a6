/*
 * io.h — files with O_DIRECT and a pread/pwrite fallback, aligned buffers, an
 * io_uring batch reader with same-page merging, per-request completion
 * callbacks and I/O accounting (the one asynchronous reader), buffered
 * sequential writers, a line reader (plain or gzip) and atomic file creation.
 *
 * Place in the data flow: io sits on core; dataset, plan and store use it.
 * Thread-safety: an oc_file may be read from many threads at once (pread).
 * A batch reader owns one ring and belongs to one thread. Writers and line
 * readers belong to one thread.
 * Ownership: a buffer added to a batch belongs to the batch until
 * oc_io_batch_run returns. Paths are copied.
 * Every failure message names the file (and the offset where one applies).
 */
#ifndef OFFCORE_IO_H
#define OFFCORE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"

#define OC_IO_ALIGN 4096u /* alignment of O_DIRECT offsets, lengths and buffers */

/* Rounds up/down to a multiple of OC_IO_ALIGN. */
static inline uint64_t oc_io_align_up(uint64_t x)
{
    return (x + OC_IO_ALIGN - 1) & ~(uint64_t)(OC_IO_ALIGN - 1);
}
static inline uint64_t oc_io_align_down(uint64_t x)
{
    return x & ~(uint64_t)(OC_IO_ALIGN - 1);
}

/* A buffer aligned to OC_IO_ALIGN, accounted to `consumer`. Free with oc_free. */
void *oc_io_buf_alloc(size_t bytes, const char *consumer, struct oc_err *err);

/*
 * CRC-32 of data[0 .. n) continuing from crc (0 to start): zlib's crc32 for
 * any length.
 */
uint32_t oc_crc32(uint32_t crc, const void *data, uint64_t n);

/*
 * The CRC-32 of a file from its byte 0, followed as a reader reads it for its
 * own use: pieces in ascending order that continue or overlap what was
 * folded (`at`: the bytes [0, at) are in `crc`). A piece past a gap is
 * ignored, and so is every later one: whoever finishes the check reads the
 * file from `at` (oc_dataset_features_crc_finish).
 */
struct oc_crc_follow {
    uint64_t at;
    uint32_t crc;
};
void oc_crc_follow_feed(struct oc_crc_follow *c, uint64_t off, const void *data, uint64_t n);

/* ---- files -------------------------------------------------------------- */

enum oc_file_flags {
    OC_FILE_READ = 1u << 0,
    OC_FILE_WRITE = 1u << 1,
    OC_FILE_CREATE = 1u << 2, /* create; fail with OC_ERR_EXISTS if it exists */
    OC_FILE_TRUNC = 1u << 3,  /* create or truncate */
    OC_FILE_DIRECT = 1u << 4, /* O_DIRECT if the filesystem allows it */
};

struct oc_file;

/*
 * Opens path (flags: OC_FILE_*; new files get mode 0644). With OC_FILE_DIRECT,
 * O_DIRECT is switched on if the filesystem accepts it, else the file stays
 * buffered (see oc_file_is_direct). Missing file: OC_ERR_NOTFOUND; existing
 * file with OC_FILE_CREATE: OC_ERR_EXISTS. *out is NULL on failure.
 */
int oc_file_open(const char *path, unsigned flags, struct oc_file **out, struct oc_err *err);
/* Closes and frees f (NULL: no-op); returns the close error if any (NFS and the like). */
int oc_file_close(struct oc_file *f, struct oc_err *err);
const char *oc_file_path(const struct oc_file *f);
int oc_file_fd(const struct oc_file *f);
/* Whether O_DIRECT is in effect (requested and accepted). */
int oc_file_is_direct(const struct oc_file *f);
int oc_file_size(const struct oc_file *f, uint64_t *bytes, struct oc_err *err);

/*
 * Reads exactly len bytes at off. Reaching end of file first is OC_ERR_FORMAT
 * ("truncated: wanted N bytes at offset X, file ends at Y"). With O_DIRECT,
 * buf, len and off must be aligned (checked: OC_ERR_ARG), except that a read
 * ending at end of file may return fewer bytes: see oc_file_pread_upto.
 */
int oc_file_pread(struct oc_file *f, void *buf, size_t len, uint64_t off, struct oc_err *err);
/*
 * Reads up to len bytes at off; *n_read = bytes read (< len only at end of
 * file). Same alignment rules as oc_file_pread. Read errors: OC_ERR_IO
 * ("<path>: read of N bytes at offset X failed: <strerror>").
 */
int oc_file_pread_upto(struct oc_file *f, void *buf, size_t len, uint64_t off, size_t *n_read,
                       struct oc_err *err);
/* Writes exactly len bytes at off (ENOSPC/EDQUOT → OC_ERR_NOSPC, else OC_ERR_IO). */
int oc_file_pwrite(struct oc_file *f, const void *buf, size_t len, uint64_t off,
                   struct oc_err *err);
int oc_file_truncate(struct oc_file *f, uint64_t bytes, struct oc_err *err);
int oc_file_sync(struct oc_file *f, struct oc_err *err);

/* ---- batch reader (io_uring, one ring per thread) ------------------------ */

struct oc_io_stats {
    uint64_t requested_bytes; /* bytes callers asked for */
    uint64_t read_bytes;      /* bytes the device delivered (after page rounding/merging) */
    uint64_t n_requests;
    uint64_t n_reads; /* reads issued after merging */
};

struct oc_io_batch;

/*
 * A reader that gathers byte ranges from O_DIRECT (or buffered) files. `depth`
 * is the ring size, i.e. reads in flight (0 = 64, at most 4096);
 * `bounce_bytes` bounds its aligned staging memory (rounded up to 4 KiB); one
 * merged read is at most min(1 MiB, bounce_bytes). Falls back to pread when
 * io_uring is unavailable or the environment sets OC_NO_URING (non-empty, not "0").
 * Stats accumulate over the life of the batch.
 */
int oc_io_batch_new(unsigned depth, size_t bounce_bytes, struct oc_io_batch **out,
                    struct oc_err *err);
void oc_io_batch_free(struct oc_io_batch *b);
int oc_io_batch_uses_uring(const struct oc_io_batch *b);
/*
 * Queues a copy of [off, off+len) of f into dst (any alignment). Nothing is
 * read until oc_io_batch_run. Requests whose page-aligned spans share a page
 * are merged into one read.
 */
int oc_io_batch_add(struct oc_io_batch *b, struct oc_file *f, uint64_t off, size_t len, void *dst,
                    struct oc_err *err);
/*
 * Called once per request added with oc_io_batch_add_cb, as soon as all of
 * [dst, dst + len) holds the requested bytes, on the thread running
 * oc_io_batch_run (inside it), in completion order (not add order). tag is
 * the caller's. A request of length 0 is called back at once, inside add.
 */
typedef void (*oc_io_done_fn)(void *ctx, uint64_t tag, void *dst, size_t len);
/*
 * oc_io_batch_add, and fn(ctx, tag, dst, len) once the request's bytes are in
 * place. A request that fails (read error, end of file) is never called
 * back, nor is any request still unfinished when the run meets its first
 * error: after a failed run, the requests called back are exactly those
 * whose bytes arrived.
 */
int oc_io_batch_add_cb(struct oc_io_batch *b, struct oc_file *f, uint64_t off, size_t len,
                       void *dst, oc_io_done_fn fn, void *ctx, uint64_t tag, struct oc_err *err);
/*
 * Puts f in the ring's file table (at most 8 files per batch), saving a file
 * lookup per read. Returns 1 if registered, 0 if not (pread fallback, table
 * full, or the kernel refused: logged at debug level); reads work either
 * way. f must outlive the batch or its last run.
 */
int oc_io_batch_register_file(struct oc_io_batch *b, struct oc_file *f);
/*
 * Reads every queued request, copies into the destinations, empties the batch
 * (also on failure). A request needing bytes past end of file is OC_ERR_FORMAT
 * ("<path>: truncated: wanted N bytes at offset X, file ends at Y"). Allocates
 * only when the batch is larger than any before it. Returns only after every
 * read it issued has completed.
 */
int oc_io_batch_run(struct oc_io_batch *b, struct oc_err *err);
const struct oc_io_stats *oc_io_batch_stats(const struct oc_io_batch *b);
/*
 * Same-page merging is on by default. With merge = 0 every request is read on
 * its own (its page-aligned span, split only past the merged-read cap), even
 * when requests share a page: the "one read per row" baseline.
 */
void oc_io_batch_set_merge(struct oc_io_batch *b, int merge);
/*
 * The block reader's crossover: requests of one file whose page-aligned spans
 * are at most gap_bytes apart (rounded down to pages) are read as one, the
 * hole between them along, when that read fits max_read (0, the default:
 * only spans that share or touch a page merge). oc_io_disk_of gives the
 * crossover the disk's measured bandwidth and IOPS call for. Ignored while
 * merging is off.
 */
void oc_io_batch_set_gap(struct oc_io_batch *b, uint64_t gap_bytes);
/*
 * Makes room for n queued requests (none split, each with a callback), so
 * runs of up to n allocate nothing. Bytes per request: oc_io_batch_request_bytes.
 */
int oc_io_batch_reserve(struct oc_io_batch *b, size_t n, struct oc_err *err);
size_t oc_io_batch_request_bytes(void);
/* Memory the batch holds: bounce buffer plus its request and span arrays. */
size_t oc_io_batch_held_bytes(const struct oc_io_batch *b);

/* ---- the merge rule (span.c) ------------------------------------------------ */

/* The cap of one merged read of the batch reader (smaller when its bounce buffer is). */
#define OC_IO_MAX_READ ((uint64_t)1 << 20)

/*
 * How the batch reader turns byte ranges of one file, sorted by offset, into
 * reads, written once for the reader and for whoever predicts its reads
 * (store's inspection for --strategy auto). A range is first cut into pieces
 * whose page-aligned span fits max_read (oc_io_piece_end); each piece covers
 * its pages, and joins the span being built when merge is set, it starts at
 * most gap bytes (rounded down to pages) past the span's end, and the joined
 * span stays within max_read; otherwise it opens the next span. A span is
 * one read of its pages.
 */
struct oc_io_span_rule {
    int merge;         /* 0: every piece its own read (oc_io_batch_set_merge) */
    uint64_t gap;      /* crossover bytes (oc_io_batch_set_gap) */
    uint64_t max_read; /* bytes of one read at most (OC_IO_MAX_READ, or the bounce buffer) */
};
struct oc_io_span {
    uint64_t off, len; /* page-aligned */
};
/* Where the piece of [pos, end) starting at pos ends: its page-aligned span fits max_read. */
uint64_t oc_io_piece_end(uint64_t pos, uint64_t end, uint64_t max_read);
/* s = the pages of [off, off + len). */
void oc_io_span_open(struct oc_io_span *s, uint64_t off, uint64_t len);
/*
 * Whether the piece [off, off + len) (at or after s's start) joins s under
 * rule; if so s grows to cover its pages, else s is unchanged.
 */
int oc_io_span_join(const struct oc_io_span_rule *rule, struct oc_io_span *s, uint64_t off,
                    uint64_t len);
/*
 * Adds to *reads and *bytes the reads (spans) and their bytes (pages end to
 * end; a span past end of file reads less) that the batch reader issues for
 * the n ranges [offs[i], offs[i] + len) of one file, offs ascending, under
 * rule: the very spans of oc_io_batch_run, without reading.
 */
void oc_io_span_count(const struct oc_io_span_rule *rule, const uint64_t *offs, uint64_t n,
                      uint64_t len, uint64_t *reads, uint64_t *bytes);

/* ---- the disk under a file (probe.c) ---------------------------------------- */

/* Files smaller than this are not probed (too few pages for a random-read figure). */
#define OC_IO_PROBE_MIN_BYTES ((uint64_t)64 << 20)

struct oc_io_disk {
    double seq_bps;        /* sequential: 1 MiB reads, 8 in flight, bytes/s */
    double rand_iops;      /* random 4 KiB reads, 64 in flight, reads/s */
    double rand_iops_deep; /* the same, 256 in flight (the stores' batch readers' depth) */
    uint64_t gap_bytes; /* the crossover for oc_io_batch_set_gap (0: merge touching pages only) */
    int measured;       /* 0: not probed (no O_DIRECT, or a file under OC_IO_PROBE_MIN_BYTES) */
};

/* seq_bps / rand_iops rounded down to pages (at most 64 MiB); 0 if either is not positive. */
uint64_t oc_io_gap_for(double seq_bps, double rand_iops);
/*
 * Measures the disk under f (O_DIRECT and at least OC_IO_PROBE_MIN_BYTES;
 * else *out is zero, measured = 0): sequential reads of up to 64 MiB from
 * its second page and random 4 KiB reads anywhere, at 64 and at 256 in
 * flight, each part at most about a quarter of a second. Read errors name
 * the file.
 */
int oc_io_disk_probe(struct oc_file *f, struct oc_io_disk *out, struct oc_err *err);
/*
 * oc_io_disk_probe once per device (st_dev) and process: later calls on
 * files of the same device return the first measurement (logged at info
 * level). OC_IO_GAP_BYTES in the environment (bytes, at most 64 MiB)
 * replaces gap_bytes. Thread-safe.
 */
int oc_io_disk_of(struct oc_file *f, struct oc_io_disk *out, struct oc_err *err);
/* oc_io_batch_set_gap(b, the crossover oc_io_disk_of gives for f's disk). */
int oc_io_batch_fit_disk(struct oc_io_batch *b, struct oc_file *f, struct oc_err *err);

/* ---- row ring (io_uring SQPOLL, fixed buffers and file; pread fallback) ----- */

struct oc_io_ring;

/* How an oc_io_ring reads, best first (each refusal falls back to the next, logged). */
enum oc_io_ring_mode {
    OC_IO_RING_SQPOLL, /* kernel thread polls the submission queue: no syscall per read */
    OC_IO_RING_PLAIN,  /* io_uring, one io_uring_enter per submission burst */
    OC_IO_RING_PREAD,  /* no io_uring: each read is a pread on the submitting thread */
    OC_IO_RING_MODE_COUNT
};
const char *oc_io_ring_mode_name(enum oc_io_ring_mode m);

struct oc_io_ring_config {
    struct oc_file *f; /* the one file read (put in the ring's file table) */
    unsigned depth;    /* reads in flight at most (the caller throttles; 1..4096) */
    void *buf;         /* where every read lands: registered as one fixed buffer */
    size_t buf_bytes;
    int sqpoll;          /* try SQPOLL first */
    int sq_cpu;          /* CPU the SQPOLL thread is pinned to, or -1 */
    unsigned sq_idle_ms; /* the SQPOLL thread sleeps after this long without work */
};

/* One finished read: the caller's tag, and bytes read (>= 0) or -errno. */
struct oc_io_done {
    uint64_t tag;
    int64_t res;
};

/*
 * A ring for many small reads with a split between one submitting thread
 * (oc_io_ring_read, _nop, _submit) and one completing thread
 * (oc_io_ring_reap): SQ and CQ each have a single owner, so they need no
 * lock. Tries SQPOLL, then a plain ring, then pread (OC_NO_URING, or both
 * refused: each fallback is logged at info level with the reason); the fixed
 * buffer and file table are optional (refusal logged, plain reads used).
 * Each setup attempt passes through oc_fault_hit(OC_FAULT_URING_SETUP).
 * In pread mode the reads happen inside oc_io_ring_read and their results
 * wait in a software queue of `depth` entries for oc_io_ring_reap; the
 * caller keeps at most `depth` reads unreaped in every mode.
 */
int oc_io_ring_new(const struct oc_io_ring_config *cfg, struct oc_io_ring **out,
                   struct oc_err *err);
/*
 * Tears the ring down after reaping what is still in flight (queued reads are
 * submitted first), so the kernel no longer writes into cfg->buf. Returns 1
 * then, 0 if reads were still in flight after 30 s (logged: the caller must
 * leave the buffer allocated). NULL: no-op, 1. Call with both sides idle.
 */
int oc_io_ring_free(struct oc_io_ring *r);
/* Reads and no-ops queued and not yet reaped. */
uint64_t oc_io_ring_in_flight(const struct oc_io_ring *r);
enum oc_io_ring_mode oc_io_ring_mode(const struct oc_io_ring *r);
int oc_io_ring_fixed_buffer(const struct oc_io_ring *r); /* reads use READ_FIXED */
int oc_io_ring_fixed_file(const struct oc_io_ring *r);   /* reads use IOSQE_FIXED_FILE */
/*
 * Queues a read of len bytes at off into dst (inside cfg->buf; O_DIRECT
 * alignment is the caller's), finished with tag. Submission side only.
 */
int oc_io_ring_read(struct oc_io_ring *r, uint64_t off, size_t len, void *dst, uint64_t tag,
                    struct oc_err *err);
/* Queues a no-op finished with tag (a marker the completing side will reap after submit). */
int oc_io_ring_nop(struct oc_io_ring *r, uint64_t tag, struct oc_err *err);
/*
 * Hands what was queued to the kernel (under SQPOLL only a wake-up when its
 * thread sleeps). Passes through oc_fault_hit(OC_FAULT_URING_SUBMIT). A
 * refusal is OC_ERR_IO naming the file; the ring stays usable.
 */
int oc_io_ring_submit(struct oc_io_ring *r, struct oc_err *err);
/*
 * Completion side: up to max finished reads into out (*n of them), waiting up
 * to timeout_us for the first. *n = 0 after a timeout. Errors from the wait
 * itself are OC_ERR_IO.
 */
int oc_io_ring_reap(struct oc_io_ring *r, struct oc_io_done *out, unsigned max, unsigned *n,
                    unsigned timeout_us, struct oc_err *err);
/*
 * CPU nanoseconds the ring's SQPOLL kernel thread has used so far (0 without
 * one, or where /proc does not show it). The thread is found on the first
 * call (the kernel names it once it runs); calls come from one thread at a time.
 */
uint64_t oc_io_ring_sq_cpu_ns(struct oc_io_ring *r);

/* ---- buffered sequential writer ----------------------------------------- */

struct oc_writer;

/*
 * Appends to a new or truncated file through an aligned buffer of buf_bytes
 * (rounded up to 4 KiB), written with O_DIRECT where the filesystem allows.
 * After a failed write, the writer only repeats the failure: abort it.
 */
int oc_writer_open(const char *path, size_t buf_bytes, struct oc_writer **out, struct oc_err *err);
int oc_writer_write(struct oc_writer *w, const void *data, size_t len, struct oc_err *err);
uint64_t oc_writer_offset(const struct oc_writer *w);
/* Flushes, fsyncs and closes; frees w whatever the result. */
int oc_writer_close(struct oc_writer *w, struct oc_err *err);
/* Closes without flushing (error paths); frees w. w may be NULL. */
void oc_writer_abort(struct oc_writer *w);

/* ---- write-behind: positional writes on a thread of their own ----------- */

struct oc_write_behind;

/*
 * n_bufs buffers of buf_bytes and a thread that writes them to f (borrowed,
 * open until flush or free returns) as they are queued (write_behind.c).
 */
int oc_write_behind_new(struct oc_file *f, unsigned n_bufs, size_t buf_bytes,
                        struct oc_write_behind **out, struct oc_err *err);
/* A free buffer to fill, waiting for one; NULL after a failed write (that error in err). */
void *oc_write_behind_buf(struct oc_write_behind *w, struct oc_err *err);
/* Queues buf's first len bytes for writing at off (ranges never overlap); the first failed
   write so far, if any, is returned (the buffer is taken back either way). */
int oc_write_behind_put(struct oc_write_behind *w, void *buf, size_t len, uint64_t off,
                        struct oc_err *err);
/*
 * Copies len bytes for the file at off: onto the buffer being filled when
 * they follow its bytes in the file and fit, else into a fresh buffer (the
 * one before is queued); len over a buffer is written at once. Do not mix
 * with oc_write_behind_buf between flushes.
 */
int oc_write_behind_copy(struct oc_write_behind *w, const void *src, size_t len, uint64_t off,
                         struct oc_err *err);
/* Queues the buffer being filled, waits until everything queued is written; the first
   failure is the error. */
int oc_write_behind_flush(struct oc_write_behind *w, struct oc_err *err);
/* Writes what is queued (nothing after a failure), stops the thread, frees w (NULL: no-op). */
void oc_write_behind_free(struct oc_write_behind *w);

/* ---- a forward scan of a file, read ahead (scan.c) ----------------------- */

/*
 * The caller's aligned buffer cut in two halves: while the caller uses the
 * bytes one read returned, the bytes after them are read into the other
 * half by an io ring, in pieces read together (one synchronous read runs at
 * about half the disk's sequential rate). A read the read-ahead does not
 * hold (the caller jumped past bytes it does not need) is read at once.
 * With a checksum follower, the bytes of every half handed over are fed to
 * it in file order. The fields are the scan's; read_bytes and sync_reads
 * may be read between calls.
 */
struct oc_io_scan {
    struct oc_file *f;
    const char *path; /* borrowed: errors name it */
    struct oc_io_ring *ring;
    uint8_t *half[2];
    uint64_t half_bytes, piece, file_bytes;
    uint64_t lo[2], hi[2], valid[2]; /* half h holds [lo, valid) of the [lo, hi) it was read */
    int cur;                         /* the half the last read returned (-1: none yet) */
    unsigned in_flight;
    struct oc_crc_follow *crc; /* borrowed, or NULL */
    uint64_t read_bytes;       /* bytes read so far */
    uint64_t sync_reads;       /* reads the read-ahead did not hold */
};
/*
 * The least buffer for a scan whose reads are up to unit bytes: two halves,
 * each holding such a read at any alignment (unit plus a page either side).
 * oc_io_scan_open refuses less than oc_io_scan_bytes_for(0).
 */
static inline uint64_t oc_io_scan_bytes_for(uint64_t unit)
{
    return oc_io_align_up(2 * (unit + 2 * OC_IO_ALIGN));
}
/*
 * Opens path (O_DIRECT where the filesystem allows) for a scan through buf
 * (buf_bytes, io-aligned: oc_io_buf_alloc; it must outlive the scan), crc
 * (may be NULL) fed as described above.
 */
int oc_io_scan_open(struct oc_io_scan *sc, const char *path, uint8_t *buf, uint64_t buf_bytes,
                    struct oc_crc_follow *crc, struct oc_err *err);
/*
 * Units of `unit` bytes from off that one oc_io_scan_read may take, at least
 * 1: what the read-ahead holds after off when it holds at least one unit
 * there, at most what a half holds.
 */
uint64_t oc_io_scan_units(const struct oc_io_scan *sc, uint64_t off, uint64_t unit);
/*
 * The bytes [off, off + len) at *p, valid until the next call, and the bytes
 * after them read ahead. len is at most what oc_io_scan_units allows (more
 * than half the buffer is OC_ERR_ARG). A file that ends before off + len is
 * OC_ERR_FORMAT ("truncated", naming it); a failed read OC_ERR_IO naming the
 * file and offset.
 */
int oc_io_scan_read(struct oc_io_scan *sc, uint64_t off, uint64_t len, const uint8_t **p,
                    struct oc_err *err);
/* Waits for the read-ahead and feeds it to the checksum follower (the bytes after the last
   read); the buffer is then free. */
int oc_io_scan_finish(struct oc_io_scan *sc, struct oc_err *err);
/* Closes the scan (waiting for reads still in flight); a zeroed scan is a no-op. */
void oc_io_scan_close(struct oc_io_scan *sc);

/* ---- line reader (plain text or gzip, detected by magic) ----------------- */

struct oc_line_reader;

int oc_line_reader_open(const char *path, struct oc_line_reader **out, struct oc_err *err);
void oc_line_reader_free(struct oc_line_reader *r);
/*
 * Next line without its '\n' (and '\r'), NUL-terminated, valid until the next
 * call. Returns OC_OK with *line = NULL at end of file. A line longer than
 * 64 MiB is OC_ERR_FORMAT. Corrupt gzip data is OC_ERR_FORMAT naming the file.
 */
int oc_line_reader_next(struct oc_line_reader *r, char **line, size_t *len, struct oc_err *err);
uint64_t oc_line_reader_lineno(const struct oc_line_reader *r);
/* Bytes of the file read so far (compressed ones for gzip), and its size at open (progress). */
uint64_t oc_line_reader_offset(const struct oc_line_reader *r);
uint64_t oc_line_reader_size(const struct oc_line_reader *r);
const char *oc_line_reader_path(const struct oc_line_reader *r);

/* ---- atomic creation and paths ------------------------------------------ */

/* fsyncs a directory (after a rename into it). */
int oc_dir_sync(const char *dir, struct oc_err *err);
/* rename(tmp, final) then fsync the parent directory. */
int oc_rename_durable(const char *tmp, const char *final, struct oc_err *err);
/* Writes a whole file atomically: a temporary (oc_tmp_name), fsync, rename, fsync dir. */
int oc_write_file_atomic(const char *path, const void *data, size_t len, struct oc_err *err);
/*
 * Reads a whole (small) file into an oc_alloc'd NUL-terminated buffer (*len
 * excludes the NUL). A file larger than max_bytes (0 = no limit) is
 * OC_ERR_FORMAT. Reads until end of file (sizes of /proc files lie).
 */
int oc_read_file(const char *path, size_t max_bytes, char **data, size_t *len, struct oc_err *err);
/*
 * An optional input: *present = 0 only when nothing by that name exists
 * (lstat ENOENT); 1 for a regular file (through symlinks). Anything else is an
 * error naming path: "is not a regular file (fifo|directory|character
 * device|...)", "is a dangling symbolic link", or the stat error.
 */
int oc_file_optional(const char *path, int *present, struct oc_err *err);
/* mkdir -p. */
int oc_mkdir_p(const char *path, struct oc_err *err);
/*
 * oc_mkdir_p that also reports into made (made_n bytes) the first directory
 * it created ("" if none); a failing call removes what it created itself.
 */
int oc_mkdir_p_made(const char *path, char *made, size_t made_n, struct oc_err *err);
/*
 * Undoes oc_mkdir_p_made: rmdir path and its parents up to made (inclusive),
 * stopping at the first that is not empty. made "" or NULL: nothing.
 */
void oc_rmdir_made(const char *path, const char *made);
/* rm -rf (discards temporary output). Symlinks are removed, never followed, also when path
   ends in "/". Missing: OC_OK. "/" is refused. */
int oc_rm_rf(const char *path, struct oc_err *err);
int oc_path_exists(const char *path);
/*
 * A new output directory's path as given (OUT of import and generate) into
 * buf, trailing slashes dropped ("out/" is "out"); OC_ERR_ARG if it names no
 * new directory (empty, "/", or ending in "." or "..") or does not fit.
 */
int oc_out_dir_path(char *buf, size_t n, const char *given, struct oc_err *err);
/* snprintf into buf; OC_ERR_ARG if it does not fit. */
int oc_path_join(char *buf, size_t n, const char *dir, const char *name, struct oc_err *err);

/* ---- temporaries: unique names, this run's registry, stale cleanup -------- */

/*
 * A temporary name for final that no other run makes, on this machine or any
 * other sharing the filesystem, whatever its pid namespace:
 * "<final>.tmp-<host>-<pid>-<nonce>-<seq>" (host: 12 hex digits hashed from
 * the boot id and the pid namespace; nonce: 12 hex digits drawn once per
 * process with getrandom; seq: a per-process counter, so every call differs).
 * OC_ERR_ARG if it does not fit in n bytes.
 */
int oc_tmp_name(char *buf, size_t n, const char *final, struct oc_err *err);
/* This process's host id (12 hex digits). */
const char *oc_tmp_host_id(void);
/*
 * Tests only: makes this process name and judge temporaries as if it ran on
 * host_id (12 hex digits) with pid (NULL / 0: the real ones).
 */
void oc_tmp_set_identity(const char *host_id, long pid);

/*
 * The registry of this run's temporaries (files or directories): a
 * temporary is made and registered at once by oc_tmp_create, and
 * unregistered once it is renamed into place (oc_tmp_commit) or removed.
 * oc_tmp_register alone is for a path that appears by another temporary's
 * oc_tmp_commit. Registering never fails (past 64 live paths a path is only
 * left to the next run's stale cleanup).
 */
void oc_tmp_register(const char *path);
void oc_tmp_unregister(const char *path);
/* What oc_tmp_create makes. */
enum oc_tmp_kind { OC_TMP_FILE, OC_TMP_DIR };
/*
 * Makes path (an empty file, or a directory with its missing parents) and
 * registers it, both under the registry's lock, so an interrupt's removal
 * (which holds the lock) runs wholly before (the creator then waits for the
 * process to exit) or after it (and removes it). An error naming path if it
 * cannot be made: a file that exists is OC_ERR_EXISTS, a directory that
 * exists OC_ERR_IO, no space or no permission the status of its errno.
 */
int oc_tmp_create(const char *path, enum oc_tmp_kind kind, struct oc_err *err);
/*
 * A scratch file with no name: a temporary beside `near` (oc_tmp_name) made
 * and registered (oc_tmp_create), opened with flags (OC_FILE_READ and/or
 * OC_FILE_WRITE) in *out and, when direct is not NULL, read-only with
 * OC_FILE_DIRECT in *direct, then unlinked and unregistered: nothing of it
 * outlives the process (killed between creation and unlink, it leaves a
 * temporary that stale cleanup removes), and no other run sees it. label
 * (label_n bytes) gets "<temporary> (unlinked scratch)" for messages. On an
 * error nothing is open and nothing is left.
 */
int oc_tmp_scratch(const char *near, unsigned flags, struct oc_file **out, struct oc_file **direct,
                   char *label, size_t label_n, struct oc_err *err);
/*
 * Renames the registered temporary tmp to final (oc_rename_durable) and
 * unregisters it, under the registry's lock: an interrupt's removal runs
 * wholly before (tmp removed) or after (nothing to remove), never between (its
 * open directory handle would then empty final). If the rename happened but
 * the directory fsync failed, final is renamed back to tmp (still registered).
 */
int oc_tmp_commit(const char *tmp, const char *final, struct oc_err *err);
unsigned oc_tmp_n_registered(void);
/*
 * Removes every registered path (rm -rf) and returns how many are gone. With
 * keep_locked the registry stays locked for good, so no thread creates,
 * registers, commits or unregisters a temporary any more: for the CLI's
 * interrupt path, just before _exit.
 */
unsigned oc_tmp_remove_registered(int keep_locked);

/*
 * Whether dir_fd/name is a temporary left by a run that is over: one of this
 * host whose pid is gone (or is now ours, under another nonce), or one of
 * another host untouched for 24 hours, or a legacy pid-only name
 * ("X.tmp-<pid>", "X.tmp.<pid>") whose pid is gone here and that is
 * untouched for an hour. Never this run's own, never a name oc_tmp_name
 * would not make. why (may be NULL) gets a short reason.
 */
int oc_tmp_is_stale(int dir_fd, const char *name, char *why, size_t why_n);
/*
 * Removes (rm -rf) the stale temporaries in dir whose name is
 * "<prefix>.tmp..." (prefix NULL: any name) and that are provably offcore's
 * (a name is not proof): a directory only if it holds a valid ownership
 * marker (oc_dir_mark) naming the host and pid of its name; a regular file
 * only if it begins with one of offcore's own magics or dir itself is marked;
 * nothing else (symlinks, FIFOs, unmarked directories, legacy pid-only
 * directories) ever. Each removal is logged at info level, each stale name
 * kept for want of a marker too. A missing dir is OC_OK. *n_removed (may be
 * NULL) counts the removals.
 */
int oc_tmp_clean_stale(const char *dir, const char *prefix, unsigned *n_removed,
                       struct oc_err *err);

/*
 * Ownership markers. offcore writes OC_OWNED_MARKER ("offcore-owned 1",
 * host id, pid) into every temporary and plan directory it makes; only a
 * marked directory may be removed by stale cleanup, and only in a marked
 * directory may unmarked files named like offcore's be removed.
 */
#define OC_OWNED_MARKER ".offcore-owned"
/* Writes dir/OC_OWNED_MARKER (this run's host id and pid). */
int oc_dir_mark(const char *dir, struct oc_err *err);
/* Removes dir's marker (before a temporary becomes a final output); never fails. */
void oc_dir_unmark(const char *dir);
/* 1 if dir_fd/name (name NULL: dir_fd itself) is a directory holding a valid marker. */
int oc_dir_is_marked_at(int dir_fd, const char *name);
/*
 * mkdir -p dir, then marks it if this call created it or found it empty:
 * *owned = 1 if dir is (now) marked, 0 if it holds other things and no marker
 * (a user's directory: nothing in it may be cleaned up). A directory this
 * process cannot write to is an error naming it ("cannot write there").
 */
int oc_dir_make_owned(const char *dir, int *owned, struct oc_err *err);

/* ---- free space (space.c) ------------------------------------------------ */

/*
 * Bytes an unprivileged writer may still use (statvfs f_bavail) on the
 * filesystem that holds path; path need not exist yet (its nearest existing
 * parent is asked).
 */
int oc_fs_free_bytes(const char *path, uint64_t *bytes, struct oc_err *err);
/*
 * OC_OK when `need` bytes fit in the free space of path's filesystem, else
 * OC_ERR_NOSPC: "<path>: <what> needs N bytes (X) but its filesystem has only
 * M bytes (Y) free".
 */
int oc_fs_check_space(const char *path, uint64_t need, const char *what, struct oc_err *err);

#endif
