/*
 * scan.c — a forward scan of a file, read ahead (struct oc_io_scan, io.h):
 * the caller's buffer cut in two halves; while the caller copies out of one
 * half, the bytes that follow it are read into the other by an io ring, in
 * pieces read together. A read the read-ahead does not hold is read
 * synchronously.
 *
 *   half A: bytes of read k (the caller's)   half B: bytes after k (in flight)
 *   read k+1 from B                          A: bytes after k+1 (in flight)
 *
 * Its users: diskgnn's packers (one ascending scan of features.npy per
 * window), the layout's scans of the source rows, and the read of what a
 * features.npy checksum still lacks.
 *
 * Place in the data flow: io. Reads of the ring pass through
 * oc_fault_hit(OC_FAULT_READ) as they complete, as every pread does.
 * Thread-safety: a scan belongs to one thread (it submits and reaps the
 * ring itself).
 * Ownership: the scan owns its file and ring; the buffer and the checksum
 * follower are the caller's and must outlive oc_io_scan_close.
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "io/io_int.h"

#define SCAN_PIECE     (1u << 20) /* bytes per read of the read-ahead, at least */
#define SCAN_MAX_DEPTH 32u        /* reads of a half in flight, at most */

int oc_io_scan_open(struct oc_io_scan *sc, const char *path, uint8_t *buf, uint64_t buf_bytes,
                    struct oc_crc_follow *crc, struct oc_err *err)
{
    memset(sc, 0, sizeof(*sc));
    sc->path = path;
    sc->crc = crc;
    sc->half_bytes = buf_bytes / 2 / OC_IO_ALIGN * OC_IO_ALIGN;
    if (buf_bytes < oc_io_scan_bytes_for(0))
        return OC_ERR(err, OC_ERR_ARG, "%s: a scan needs a buffer of at least %" PRIu64 " bytes",
                      path, oc_io_scan_bytes_for(0));
    sc->half[0] = buf;
    sc->half[1] = buf + sc->half_bytes;
    sc->cur = -1;
    uint64_t piece = sc->half_bytes / SCAN_MAX_DEPTH;
    sc->piece = piece < SCAN_PIECE ? SCAN_PIECE : oc_io_align_up(piece);
    int rc = oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &sc->f, err);
    if (rc || (rc = oc_file_size(sc->f, &sc->file_bytes, err)))
        return rc;
    struct oc_io_ring_config cfg = {
        .f = sc->f,
        .depth = (unsigned)((sc->half_bytes + sc->piece - 1) / sc->piece),
        .buf = buf,
        .buf_bytes = 2 * sc->half_bytes,
        .sqpoll = 0,
        .sq_cpu = -1,
    };
    return oc_io_ring_new(&cfg, &sc->ring, err);
}

/* The half the next read looks in: the one read ahead. */
static int other(const struct oc_io_scan *sc)
{
    return sc->cur < 0 ? 0 : 1 - sc->cur;
}

uint64_t oc_io_scan_units(const struct oc_io_scan *sc, uint64_t off, uint64_t unit)
{
    uint64_t per = (sc->half_bytes - 2 * OC_IO_ALIGN) / unit;
    int o = other(sc);
    if (sc->hi[o] > sc->lo[o] && sc->lo[o] <= oc_io_align_down(off) && off + unit <= sc->hi[o]) {
        uint64_t fit = (sc->hi[o] - off) / unit; /* units wholly inside it */
        per = fit < per ? fit : per;
    }
    return per ? per : 1;
}

/* Reaps the ring until nothing is in flight; the first failed read is the error. */
static int drain(struct oc_io_scan *sc, struct oc_err *err)
{
    int rc = OC_OK;
    while (sc->in_flight > 0) {
        struct oc_io_done done[SCAN_MAX_DEPTH];
        unsigned n = 0;
        int e = oc_io_ring_reap(sc->ring, done, SCAN_MAX_DEPTH, &n, 100000, err);
        if (e)
            return e; /* the wait itself failed: the ring is unusable */
        for (unsigned i = 0; i < n; i++) {
            uint64_t h = done[i].tag >> 62, at = done[i].tag & ((1ull << 62) - 1);
            assert(h < 2 && sc->in_flight > 0);
            sc->in_flight--;
            int fe = 0; /* a read of the ring, like every read, can be failed by a test */
            if (oc_fault_hit(OC_FAULT_READ, &fe))
                done[i].res = fe ? -fe : 0;
            if (done[i].res < 0) {
                if (rc == OC_OK)
                    rc = OC_ERR(err, OC_ERR_IO,
                                "%s: read of %" PRIu64 " bytes at offset %" PRIu64 " failed: %s",
                                sc->path, sc->piece, at, strerror((int)-done[i].res));
                continue;
            }
            uint64_t end = at + (uint64_t)done[i].res;
            sc->read_bytes += (uint64_t)done[i].res;
            uint64_t want = sc->hi[h] - at < sc->piece ? sc->hi[h] - at : sc->piece;
            if ((uint64_t)done[i].res < want && end < sc->valid[h])
                sc->valid[h] = end; /* the file ends inside this piece */
        }
    }
    return rc;
}

/* Feeds half h's bytes to the checksum follower (which ignores what follows a gap). */
static void fold_crc(struct oc_io_scan *sc, int h)
{
    uint64_t end = sc->valid[h] < sc->file_bytes ? sc->valid[h] : sc->file_bytes;
    if (sc->crc && end > sc->lo[h])
        oc_crc_follow_feed(sc->crc, sc->lo[h], sc->half[h], end - sc->lo[h]);
}

/* Starts reading the bytes from `from` into half h, a half's worth or to the file's end. */
static int read_ahead(struct oc_io_scan *sc, int h, uint64_t from, struct oc_err *err)
{
    uint64_t end = oc_io_align_up(sc->file_bytes);
    sc->lo[h] = sc->hi[h] = sc->valid[h] = from;
    if (from >= end)
        return OC_OK;
    uint64_t hi = end - from < sc->half_bytes ? end : from + sc->half_bytes;
    sc->hi[h] = sc->valid[h] = hi;
    for (uint64_t at = from; at < hi; at += sc->piece) {
        uint64_t len = hi - at < sc->piece ? hi - at : sc->piece;
        int rc = oc_io_ring_read(sc->ring, at, len, sc->half[h] + (at - from),
                                 ((uint64_t)h << 62) | at, err);
        if (rc)
            return rc;
        sc->in_flight++;
    }
    return oc_io_ring_submit(sc->ring, err);
}

int oc_io_scan_read(struct oc_io_scan *sc, uint64_t off, uint64_t len, const uint8_t **p,
                    struct oc_err *err)
{
    uint64_t lo = oc_io_align_down(off), hi = oc_io_align_up(off + len);
    int o = other(sc);
    if (hi - lo > sc->half_bytes)
        return OC_ERR(err, OC_ERR_ARG,
                      "%s: a scan's read of %" PRIu64 " bytes at offset %" PRIu64
                      " is more than half its buffer (%" PRIu64 ")",
                      sc->path, len, off, sc->half_bytes);
    int rc = drain(sc, err);
    if (rc)
        return rc;
    if (!(sc->hi[o] > sc->lo[o] && sc->lo[o] <= lo && hi <= sc->hi[o])) {
        size_t got; /* not read ahead: read it now */
        sc->sync_reads++;
        if ((rc = oc_file_pread_upto(sc->f, sc->half[o], hi - lo, lo, &got, err)))
            return rc;
        sc->read_bytes += got;
        sc->lo[o] = lo;
        sc->hi[o] = hi;
        sc->valid[o] = lo + got;
    }
    if (sc->valid[o] < off + len)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: truncated: wanted %" PRIu64 " bytes at offset %" PRIu64
                      ", file ends at %" PRIu64,
                      sc->path, off + len - lo, lo, sc->valid[o]);
    sc->cur = o;
    fold_crc(sc, o);
    *p = sc->half[o] + (off - sc->lo[o]);
    return read_ahead(sc, 1 - o, oc_io_align_down(off + len), err); /* the next read's start */
}

int oc_io_scan_finish(struct oc_io_scan *sc, struct oc_err *err)
{
    int rc = drain(sc, err);
    if (rc == OC_OK && sc->cur >= 0)
        fold_crc(sc, 1 - sc->cur); /* the read-ahead past the last read */
    return rc;
}

void oc_io_scan_close(struct oc_io_scan *sc)
{
    if (sc->ring && !oc_io_ring_free(sc->ring))
        oc_log(OC_LOG_WARN, "%s: scan reads still in flight after 30 s", sc->path);
    oc_file_close(sc->f, NULL);
    memset(sc, 0, sizeof(*sc));
}
