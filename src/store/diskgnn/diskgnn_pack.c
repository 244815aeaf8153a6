/*
 * diskgnn_pack.c — packing a sampled window laid out whole (with
 * --disk-budget: segment caches; diskgnn_stream.c packs the others batch
 * by batch): plan.h places each access (CPU cache, the segment's disk
 * cache, the batch's packed chunk) and the window file is written in two
 * passes:
 *
 *   1. metadata: per chunk, header + record + address table (one write each,
 *      records read back sequentially from the spill file);
 *   2. rows: the feature file is read in sequential partitions of half of
 *      part_bytes, the next read ahead while one is copied (oc_io_scan;
 *      partitions without a needed row are skipped, never read out of
 *      order); per partition each chunk's rows are a run of its packed rows,
 *      the disk-cache pairs are sorted by destination, and both are written
 *      as coalesced runs through the write-behind (dg_writes_begin). The CPU
 *      cache of the first window is filled from the same scan.
 *
 * The chunk format and file names are in diskgnn_window.c.
 * Place in the data flow: store (diskgnn); trace ──► plan layout ──► file.
 * Thread-safety: as diskgnn_window.c: the builder belongs to one thread at a
 * time, which checks b->cancel between chunks and partitions.
 * Ownership: the layout is freed here; the window owns its file.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store/diskgnn/diskgnn_int.h"

/* ---- packing ----------------------------------------------------------------- */

/*
 * A disk-cache row to copy is a struct store_miss (so it sorts in place by
 * id): id the row, pos its byte offset in the window file.
 */

static int pair_by_dest(const void *a, const void *b)
{
    const struct store_miss *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

void dg_chunk_seal(uint8_t *h, uint64_t epoch, uint64_t batch, uint64_t n_input, uint64_t n_packed,
                   uint64_t rec_bytes, const uint64_t *addr)
{
    uint8_t *rec = h + OC_PLAN_CHUNK_HEADER, *table = rec + rec_bytes;
    for (uint64_t k = 0; k < n_input; k++)
        oc_put_le64(table + 8 * k, addr[k]);
    memset(h, 0, OC_PLAN_CHUNK_HEADER);
    memcpy(h, DG_CHUNK_MAGIC, 8);
    oc_put_le64(h + 8, epoch);
    oc_put_le64(h + 16, batch);
    oc_put_le64(h + 24, n_input);
    oc_put_le64(h + 32, n_packed);
    oc_put_le64(h + 40, rec_bytes);
    oc_put_le32(h + 48, oc_crc32(0, rec, rec_bytes + 8 * n_input));
    oc_put_le32(h + 56, DG_CHUNK_VERSION);
    oc_put_le32(h + 60, oc_crc32(0, h, 60));
}

/* Pass 1: header + record + address table of every chunk. */
static int pack_meta(struct dg_builder *b, const struct oc_plan_layout *l, uint64_t epoch,
                     struct oc_file *out, struct oc_err *err)
{
    uint64_t roff = 0;
    int rc = OC_OK;

    for (uint64_t i = 0; i < b->tr.n_batches && rc == OC_OK; i++) {
        uint64_t n = b->tr.off[i + 1] - b->tr.off[i], rb = b->tr.rec_bytes[i];
        uint8_t *h = b->rec, *rec = h + OC_PLAN_CHUNK_HEADER;
        if ((rc = dg_check_cancel(b, err)) || (rc = pl_spill_get(&b->spill, roff, rb, rec, err)))
            break;
        roff += rb;
        dg_chunk_seal(h, epoch, b->tr.first + i, n, l->pack_off[i + 1] - l->pack_off[i], rb,
                      l->addr + b->tr.off[i]);
        rc = oc_file_pwrite(out, h, OC_PLAN_CHUNK_HEADER + rb + 8 * n, l->chunk_off[i], err);
    }
    pl_spill_deinit(&b->spill);
    return rc;
}

/*
 * The (row, destination) pairs of the window's disk-cache rows, sorted by row
 * in place (qsort's merge buffer would double them outside the budget).
 * Packed rows and cache rows need none: each chunk's packed rows and the
 * cache's ids are ascending already (read_sources walks them side by side).
 */
static int make_seg_pairs(const struct dg_builder *b, const struct oc_plan_layout *l,
                          struct store_miss **out, uint64_t *n_out, struct oc_err *err)
{
    uint64_t rb = b->s->row_bytes, n = l->seg_off[l->n_segments], k = 0;
    struct store_miss *p = oc_alloc((n ? n : 1) * sizeof(*p), "store diskgnn: packing pairs", err);
    if (!p)
        return err->status;
    for (uint64_t g = 0; g < l->n_segments; g++)
        for (uint64_t j = l->seg_off[g]; j < l->seg_off[g + 1]; j++)
            p[k++] =
                (struct store_miss){l->seg_rows[j], l->seg_byte_off[g] + (j - l->seg_off[g]) * rb};
    store_miss_sort(p, n);
    *out = p;
    *n_out = n;
    return OC_OK;
}

/* Writes the disk-cache pairs of one partition, in the order of their places (coalesced). */
static int write_runs(struct dg_builder *b, struct store_miss *p, uint64_t n, const uint8_t *part,
                      uint64_t first_row, struct oc_err *err)
{
    uint64_t rb = b->s->row_bytes;
    int rc = OC_OK;
    qsort(p, n, sizeof(*p), pair_by_dest);
    for (uint64_t i = 0; i < n && rc == OC_OK; i++)
        rc = oc_write_behind_copy(b->wb, part + (p[i].id - first_row) * rb, rb, p[i].pos, err);
    return rc;
}

int dg_writes_begin(struct dg_builder *b, struct oc_file *out, struct oc_err *err)
{
    assert(b->wb == NULL);
    return oc_write_behind_new(out, DG_WRITE_BUFS, DG_WRITE_RUN, &b->wb, err);
}

int dg_writes_end(struct dg_builder *b, int rc, struct oc_err *err)
{
    if (b->wb && rc == OC_OK)
        rc = oc_write_behind_flush(b->wb, err);
    oc_write_behind_free(b->wb);
    b->wb = NULL;
    return rc;
}

int dg_write_rows(struct dg_builder *b, const uint64_t *rows, uint64_t j0, uint64_t j1,
                  uint64_t dest, const uint8_t *part, uint64_t first_row, struct oc_err *err)
{
    uint64_t rb = b->s->row_bytes;
    int rc = OC_OK;
    for (uint64_t j = j0; j < j1 && rc == OC_OK; j++)
        rc = oc_write_behind_copy(b->wb, part + (rows[j] - first_row) * rb, rb,
                                  dest + (j - j0) * rb, err);
    return rc;
}

/* Where pack_rows stands in each of its ascending sources. */
struct pack_cursor {
    uint64_t *chunk; /* per chunk: the next of its packed rows (index into pack_rows) */
    uint64_t seg, n_seg, cache, n_cache;
    struct store_miss *seg_pairs;
};

/* The lowest row any source still needs (UINT64_MAX: none). */
static uint64_t next_needed(const struct oc_plan_layout *l, const struct pack_cursor *c,
                            const struct store_cache *cache)
{
    uint64_t r = UINT64_MAX;
    for (uint64_t i = 0; i < l->n_batches; i++)
        if (c->chunk[i] < l->pack_off[i + 1] && l->pack_rows[c->chunk[i]] < r)
            r = l->pack_rows[c->chunk[i]];
    if (c->seg < c->n_seg && c->seg_pairs[c->seg].id < r)
        r = c->seg_pairs[c->seg].id;
    if (c->cache < c->n_cache && cache->ids[c->cache] < r)
        r = cache->ids[c->cache];
    return r;
}

/* One past the highest row below limit that any source needs (r0 + 1 at least). */
static uint64_t needed_end(const struct oc_plan_layout *l, const struct pack_cursor *c,
                           const struct store_cache *cache, uint64_t r0, uint64_t limit)
{
    uint64_t r1 = r0 + 1;
    for (uint64_t i = 0; i < l->n_batches; i++) {
        uint64_t j = oc_lower_bound_u64(l->pack_rows, c->chunk[i], l->pack_off[i + 1], limit);
        if (j > c->chunk[i] && l->pack_rows[j - 1] + 1 > r1)
            r1 = l->pack_rows[j - 1] + 1;
    }
    uint64_t j = c->seg;
    while (j < c->n_seg && c->seg_pairs[j].id < limit)
        j++;
    if (j > c->seg && c->seg_pairs[j - 1].id + 1 > r1)
        r1 = c->seg_pairs[j - 1].id + 1;
    j = oc_lower_bound_u64(cache->ids, c->cache, c->n_cache, limit);
    if (j > c->cache && cache->ids[j - 1] + 1 > r1)
        r1 = cache->ids[j - 1] + 1;
    return r1;
}

/*
 * Copies what the partition of rows [r0, r1) at part gives each source: a
 * chunk's rows in the partition are a run of its packed rows, written to
 * consecutive places; disk-cache rows by place; cache rows into their slots
 * (the writes coalesced). Advances the cursors.
 */
static int copy_partition(struct dg_builder *b, const struct oc_plan_layout *l,
                          struct pack_cursor *c, struct store_cache *cache, uint64_t r0,
                          uint64_t r1, const uint8_t *part, struct oc_err *err)
{
    uint64_t rb = b->s->row_bytes;
    int rc = OC_OK;
    for (uint64_t i = 0; i < l->n_batches && rc == OC_OK; i++) {
        uint64_t j0 = c->chunk[i],
                 j1 = oc_lower_bound_u64(l->pack_rows, j0, l->pack_off[i + 1], r1);
        uint64_t n_in = b->tr.off[i + 1] - b->tr.off[i];
        uint64_t base = l->chunk_off[i] + OC_PLAN_CHUNK_HEADER + b->tr.rec_bytes[i] + 8 * n_in;
        if (j1 > j0)
            rc = dg_write_rows(b, l->pack_rows, j0, j1, base + (j0 - l->pack_off[i]) * rb, part, r0,
                               err);
        c->chunk[i] = j1;
    }
    uint64_t j = c->seg;
    while (j < c->n_seg && c->seg_pairs[j].id < r1)
        j++;
    if (rc == OC_OK && j > c->seg)
        rc = write_runs(b, c->seg_pairs + c->seg, j - c->seg, part, r0, err);
    c->seg = j;
    for (; c->cache < c->n_cache && cache->ids[c->cache] < r1; c->cache++)
        memcpy(cache->rows + c->cache * rb, part + (cache->ids[c->cache] - r0) * rb, rb);
    return rc;
}

int dg_scan_open(struct dg_builder *b, struct oc_io_scan *sc, struct oc_err *err)
{
    return oc_io_scan_open(sc, b->s->path, b->part, b->part_bytes, b->crc_due ? &b->crc : NULL,
                           err);
}

int dg_scan_end(struct dg_builder *b, struct oc_io_scan *sc, int rc, struct oc_err *err)
{
    if (rc == OC_OK && b->crc_due) {
        b->crc_due = 0; /* checked once, by the first scan that ends well */
        if ((rc = oc_io_scan_finish(sc, err)) == OC_OK) /* the buffer is free from now on */
            rc = oc_dataset_features_crc_finish(b->s->ds, &b->crc, b->part, b->part_bytes,
                                                &b->crc_read_bytes, err);
    }
    b->pack_read_bytes += sc->read_bytes;
    oc_io_scan_close(sc);
    return rc;
}

/*
 * Pass 2: the feature file in sequential partitions (each from the lowest
 * row still needed, up to what a half of part_bytes holds, trimmed to the last row needed in it)
 * into the window file (and the cache). Besides the layout it needs only a
 * cursor per chunk and the disk-cache rows' pairs.
 */
static int pack_rows(struct dg_builder *b, const struct oc_plan_layout *l,
                     struct store_cache *cache, int fill_cache, struct oc_file *out,
                     struct oc_err *err)
{
    const struct oc_store *s = b->s;
    struct pack_cursor c;
    struct oc_io_scan sc = {0};
    int rc;

    memset(&c, 0, sizeof(c));
    c.n_cache = fill_cache ? cache->n : 0;
    if (!(c.chunk = oc_alloc((l->n_batches ? l->n_batches : 1) * sizeof(uint64_t),
                             "store diskgnn: packing cursors", err)))
        return err->status;
    for (uint64_t i = 0; i < l->n_batches; i++) {
        c.chunk[i] = l->pack_off[i];
        for (uint64_t j = l->pack_off[i] + 1; j < l->pack_off[i + 1]; j++)
            assert(l->pack_rows[j - 1] < l->pack_rows[j]); /* plan.h: ascending in a chunk */
    }
    for (uint64_t j = 1; j < c.n_cache; j++)
        assert(cache->ids[j - 1] < cache->ids[j]); /* the cache's lookup needs them so too */
    if ((rc = make_seg_pairs(b, l, &c.seg_pairs, &c.n_seg, err)) ||
        (rc = dg_scan_open(b, &sc, err)) || (rc = dg_writes_begin(b, out, err)))
        goto out;
    /* progress: how far the one ascending scan of the feature rows has come */
    static const char packing[] = "diskgnn: packing the next window";
    dg_report_begin(b, "diskgnn: pack the first window", packing, s->n_nodes, "rows");
    for (uint64_t r0; (r0 = next_needed(l, &c, cache)) != UINT64_MAX;) {
        uint64_t per = oc_io_scan_units(&sc, store_file_off(s, r0),
                                        s->row_bytes); /* rows per partition: what fits in a half */
        uint64_t r1 = needed_end(l, &c, cache, r0, r0 + per); /* rows [r0, r1) are needed */
        assert(r0 < r1 && r1 <= r0 + per && r1 <= s->n_nodes);
        const uint8_t *part;
        if ((rc = dg_check_cancel(b, err)) ||
            (rc = oc_io_scan_read(&sc, store_file_off(s, r0), (r1 - r0) * s->row_bytes, &part,
                                  err)) ||
            (rc = copy_partition(b, l, &c, cache, r0, r1, part, err)))
            goto out;
        dg_report(b, packing, r1, s->n_nodes);
    }
    dg_report(b, packing, s->n_nodes, s->n_nodes); /* rows past the last needed one: skipped */
    dg_report_end(b);
out:
    rc = dg_scan_end(b, &sc, rc, err); /* a checksum that fails fails the window */
    rc = dg_writes_end(b, rc, err);
    oc_free(c.seg_pairs);
    oc_free(c.chunk);
    return rc;
}

static int window_arrays(struct dg_window *w, const struct oc_plan_layout *l, struct oc_err *err)
{
    w->n_batches = l->n_batches;
    w->s = l->s;
    w->n_segments = l->n_segments;
    w->file_bytes = l->file_bytes;
    w->chunk_off = oc_alloc((l->n_batches + 1) * sizeof(uint64_t), "store diskgnn: window", err);
    w->seg_byte_off =
        oc_alloc((l->n_segments + 1) * sizeof(uint64_t), "store diskgnn: window", err);
    if (!w->chunk_off || !w->seg_byte_off)
        return err->status;
    memcpy(w->chunk_off, l->chunk_off, (l->n_batches + 1) * sizeof(uint64_t));
    memcpy(w->seg_byte_off, l->seg_byte_off, (l->n_segments + 1) * sizeof(uint64_t));
    return OC_OK;
}

int dg_window_pack(struct dg_builder *b, struct store_cache *cache, int fill_cache,
                   struct dg_window *w, struct oc_err *err)
{
    uint64_t t0 = (uint64_t)(oc_now_s() * 1e6);
    const struct oc_store *s = b->s;
    struct oc_plan_layout l;
    b->pack_read_bytes = 0;
    struct oc_file *out = NULL;
    char tmp[4300] = "";
    int rc;

    memset(&l, 0, sizeof(l));
    memset(w, 0, sizeof(*w));
    w->epoch = b->tr.epoch;
    w->first = b->tr.first;
    struct oc_plan_trace t = {s->n_nodes, b->tr.n_batches, b->tr.off, b->tr.rows};
    struct oc_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.row_bytes = s->row_bytes;
    o.rec_bytes = b->tr.rec_bytes;
    o.cpu_ids = cache->ids;
    o.n_cpu = cache->n;
    o.min_share = 1;
    if (b->disk_budget_bytes > 0) {
        uint64_t spill_bytes = 0;
        for (uint64_t i = 0; i < b->tr.n_batches; i++)
            spill_bytes += b->tr.rec_bytes[i];
        if (b->disk_budget_bytes <= (double)spill_bytes) {
            char rs[32], bs[32];
            rc = OC_ERR(err, OC_ERR_BUDGET,
                        "store diskgnn: window of epoch %" PRIu64 " from batch %" PRIu64
                        ": its batches' records alone take %s, its share of --disk-budget is "
                        "%s (a larger --disk-budget or a shorter --window)",
                        w->epoch, w->first, oc_format_size(spill_bytes, rs, sizeof(rs)),
                        oc_format_size((uint64_t)b->disk_budget_bytes, bs, sizeof(bs)));
            goto fail;
        }
        o.disk_budget_bytes = (uint64_t)(b->disk_budget_bytes - (double)spill_bytes);
    }
    if ((rc = oc_plan_layout_build(&t, &o, &l, err)) || (rc = window_arrays(w, &l, err)) ||
        (rc = dg_window_create(b, cache, w, tmp, sizeof(tmp), l.file_bytes, &out, err)) ||
        (rc = pack_meta(b, &l, w->epoch, out, err)))
        goto fail;
    oc_free(l.addr); /* written: the pairs take its place (dg_builder_need_bytes) */
    l.addr = NULL;
    if ((rc = pack_rows(b, &l, cache, fill_cache, out, err)) ||
        (rc = dg_window_finish(w, tmp, &out, err)))
        goto fail;
    oc_plan_layout_deinit(&l);
    b->pack_us = (uint64_t)(oc_now_s() * 1e6) - t0;
    return OC_OK;
fail:
    dg_window_fail(b, w, tmp, out);
    oc_plan_layout_deinit(&l);
    return oc_err_prefix(
        err, "store diskgnn: packing the window of epoch %" PRIu64 " from batch %" PRIu64, w->epoch,
        w->first);
}
