/*
 * diskgnn_scan.c — the packers' one ascending scan of features.npy, read
 * ahead: the builder's partition buffer is cut in two halves; while the rows
 * of one half are copied into chunks, the bytes that follow it are read into
 * the other by an io ring, in pieces read together (a single synchronous
 * read runs at about half the disk's sequential rate, see the disk probe's
 * "one at a time" against "in flight"). A partition the read-ahead does not
 * hold (the scan jumped past rows no batch needs) is read synchronously.
 *
 *   half A: partition k (copied)        half B: bytes after k (in flight)
 *   next call: partition k+1 from B     A: bytes after k+1 (in flight)
 *
 * Place in the data flow: store (diskgnn); features.npy ──► dg_scan ──►
 * the packers (diskgnn_pack.c, diskgnn_stream.c).
 * Reads of the ring pass through oc_fault_hit(OC_FAULT_READ) as they
 * complete, as every pread does in io.
 * Thread-safety: a scan belongs to the builder's thread (it submits and
 * reaps the ring itself).
 * Ownership: the scan owns its file and ring; the halves are the builder's
 * b->part, which must outlive dg_scan_close.
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "store/diskgnn/diskgnn_int.h"

#define SCAN_PIECE     (1u << 20) /* bytes per read of the read-ahead, at least */
#define SCAN_MAX_DEPTH 32u        /* reads of a half in flight, at most */

static uint64_t off_of(const struct dg_scan *sc, uint64_t row)
{
    return store_file_off(sc->s, row);
}

int dg_scan_open(struct dg_builder *b, struct dg_scan *sc, struct oc_err *err)
{
    memset(sc, 0, sizeof(*sc));
    sc->s = b->s;
    sc->b = b;
    sc->half_bytes = b->part_bytes / 2 / OC_IO_ALIGN * OC_IO_ALIGN;
    sc->half[0] = b->part;
    sc->half[1] = b->part + sc->half_bytes;
    sc->cur = -1;
    uint64_t piece = sc->half_bytes / SCAN_MAX_DEPTH;
    piece = piece < SCAN_PIECE ? SCAN_PIECE : oc_io_align_up(piece);
    sc->piece = piece;
    int rc = oc_file_open(b->s->path, OC_FILE_READ | OC_FILE_DIRECT, &sc->feat, err);
    if (rc || (rc = oc_file_size(sc->feat, &sc->file_bytes, err)))
        return rc;
    struct oc_io_ring_config cfg = {
        .f = sc->feat,
        .depth = (unsigned)((sc->half_bytes + piece - 1) / piece),
        .buf = b->part,
        .buf_bytes = 2 * sc->half_bytes,
        .sqpoll = 0,
        .sq_cpu = -1,
    };
    return oc_io_ring_new(&cfg, &sc->ring, err);
}

/* Rows one partition from r0 may take: what the read-ahead holds after r0 when it holds r0's
   start, else what a half holds. */
uint64_t dg_scan_rows(const struct dg_scan *sc, uint64_t r0)
{
    uint64_t rb = sc->s->row_bytes, per = (sc->half_bytes - 2 * OC_IO_ALIGN) / rb;
    int o = sc->cur < 0 ? 0 : 1 - sc->cur;
    uint64_t lo = oc_io_align_down(off_of(sc, r0));
    if (sc->hi[o] > sc->lo[o] && sc->lo[o] <= lo && off_of(sc, r0 + 1) <= sc->hi[o]) {
        uint64_t fit = (sc->hi[o] - off_of(sc, r0)) / rb; /* rows wholly inside it */
        per = fit < per ? fit : per;
    }
    return per ? per : 1;
}

/* Reaps the ring until nothing is in flight; the first failed read is the error. */
static int drain(struct dg_scan *sc, struct oc_err *err)
{
    int rc = OC_OK;
    while (sc->in_flight > 0) {
        struct oc_io_done done[SCAN_MAX_DEPTH];
        unsigned n = 0;
        int e = oc_io_ring_reap(sc->ring, done, SCAN_MAX_DEPTH, &n, 100000, err);
        if (e)
            return e; /* the wait itself failed: the ring is unusable */
        for (unsigned i = 0; i < n; i++) {
            uint64_t h = done[i].tag >> 62, piece_off = done[i].tag & ((1ull << 62) - 1);
            assert(h < 2 && sc->in_flight > 0);
            sc->in_flight--;
            int fe = 0; /* a read of the ring, like every read, can be failed by a test */
            if (oc_fault_hit(OC_FAULT_READ, &fe))
                done[i].res = fe ? -fe : 0;
            if (done[i].res < 0 && rc == OC_OK)
                rc = OC_ERR(err, OC_ERR_IO,
                            "%s: read of %" PRIu64 " bytes at offset %" PRIu64 " failed: %s",
                            sc->s->path, sc->piece, piece_off, strerror((int)-done[i].res));
            else if (done[i].res >= 0) {
                uint64_t end = piece_off + (uint64_t)done[i].res;
                sc->b->pack_read_bytes += (uint64_t)done[i].res;
                uint64_t want =
                    sc->hi[h] - piece_off < sc->piece ? sc->hi[h] - piece_off : sc->piece;
                if ((uint64_t)done[i].res < want && end < sc->valid[h])
                    sc->valid[h] = end; /* the file ends inside this piece */
            }
        }
    }
    return rc;
}

/* Folds half h's bytes into the checksum the first scan checks (nothing after a gap). */
static void fold_crc(struct dg_scan *sc, int h)
{
    uint64_t end = sc->valid[h] < sc->file_bytes ? sc->valid[h] : sc->file_bytes;
    if (sc->b->crc_due && end > sc->lo[h])
        oc_crc_follow_feed(&sc->b->crc, sc->lo[h], sc->half[h], end - sc->lo[h]);
}

/* Starts reading the bytes from `from` into half h, a half's worth or to the file's end. */
static int read_ahead(struct dg_scan *sc, int h, uint64_t from, struct oc_err *err)
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

int dg_scan_read(struct dg_scan *sc, uint64_t r0, uint64_t r1, const uint8_t **rows,
                 struct oc_err *err)
{
    uint64_t lo = oc_io_align_down(off_of(sc, r0)), hi = oc_io_align_up(off_of(sc, r1));
    int o = sc->cur < 0 ? 0 : 1 - sc->cur;
    int rc = drain(sc, err);
    if (rc)
        return rc;
    assert(hi - lo <= sc->half_bytes);
    if (!(sc->hi[o] > sc->lo[o] && sc->lo[o] <= lo && hi <= sc->hi[o])) {
        size_t got; /* not read ahead: read it now */
        sc->sync_reads++;
        if ((rc = oc_file_pread_upto(sc->feat, sc->half[o], hi - lo, lo, &got, err)))
            return rc;
        sc->b->pack_read_bytes += got;
        sc->lo[o] = lo;
        sc->hi[o] = hi;
        sc->valid[o] = lo + got;
    }
    if (sc->valid[o] < off_of(sc, r1))
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: truncated: wanted %" PRIu64 " bytes at offset %" PRIu64
                      ", file ends at %" PRIu64,
                      sc->s->path, off_of(sc, r1) - lo, lo, sc->valid[o]);
    sc->cur = o;
    fold_crc(sc, o);
    *rows = sc->half[o] + (off_of(sc, r0) - sc->lo[o]);
    return read_ahead(sc, 1 - o, oc_io_align_down(off_of(sc, r1)),
                      err); /* the next partition's start */
}

static void scan_close(struct dg_scan *sc)
{
    if (sc->ring && !oc_io_ring_free(sc->ring))
        oc_log(OC_LOG_WARN, "%s: packing reads still in flight after 30 s", sc->s->path);
    oc_file_close(sc->feat, NULL);
    memset(sc, 0, sizeof(*sc));
}

int dg_scan_end(struct dg_scan *sc, int rc, struct oc_err *err)
{
    struct dg_builder *b = sc->b;
    if (rc == OC_OK && b && b->crc_due) {
        b->crc_due = 0; /* checked once, by the first scan that ends well */
        if ((rc = drain(sc, err)) == OC_OK && sc->cur >= 0)
            fold_crc(sc, 1 - sc->cur); /* the read-ahead past the last partition */
        if (rc == OC_OK)
            rc = oc_dataset_features_crc_finish(b->s->ds, &b->crc, b->part, 2 * sc->half_bytes,
                                                &b->crc_read_bytes, err); /* halves: drained */
    }
    scan_close(sc);
    return rc;
}
