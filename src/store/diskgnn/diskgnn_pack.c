/*
 * diskgnn_pack.c — packing a sampled window laid out whole (with
 * --disk-budget: segment caches; diskgnn_stream.c packs the others batch
 * by batch): plan.h places each access (CPU cache, the segment's disk
 * cache, the batch's packed chunk) and the window file is written in two
 * passes:
 *
 *   1. metadata: per chunk, header + record + address table (one write each,
 *      records read back sequentially from the spill file);
 *   2. rows: dg_pack_scan, the packers' one scan of the feature file, here
 *      and in diskgnn_stream.c: sequential partitions of half of part_bytes,
 *      the next read ahead while one is copied (oc_io_scan; partitions
 *      without a needed row are skipped, never read out of order); per
 *      partition each chunk's rows are a run of its packed rows (a cursor
 *      each), the disk-cache pairs are sorted by destination, and both are
 *      written as coalesced copies through the write-behind. The CPU cache of
 *      the first window is filled from the same scan.
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
        rc = oc_file_pwrite(out, h, oc_plan_chunk_meta_bytes(rb, n), l->chunk_off[i], err);
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

/* The packers' row writes to out go through b->wb from begin to end; end flushes them when
   rc is OC_OK (the first failed write is then the result) and returns rc otherwise. */
static int writes_begin(struct dg_builder *b, struct oc_file *out, struct oc_err *err)
{
    assert(b->wb == NULL);
    return oc_write_behind_new(out, DG_WRITE_BUFS, DG_WRITE_RUN, &b->wb, err);
}

static int writes_end(struct dg_builder *b, int rc, struct oc_err *err)
{
    if (b->wb && rc == OC_OK)
        rc = oc_write_behind_flush(b->wb, err);
    oc_write_behind_free(b->wb);
    b->wb = NULL;
    return rc;
}

/* Writes rows[j0, j1) (of the partition at part, which starts at row first_row) to
   consecutive places from dest. */
static int write_rows(struct dg_builder *b, const uint64_t *rows, uint64_t j0, uint64_t j1,
                      uint64_t dest, const uint8_t *part, uint64_t first_row, struct oc_err *err)
{
    uint64_t rb = b->s->row_bytes;
    int rc = OC_OK;
    for (uint64_t j = j0; j < j1 && rc == OC_OK; j++)
        rc = oc_write_behind_copy(b->wb, part + (rows[j] - first_row) * rb, rb,
                                  dest + (j - j0) * rb, err);
    return rc;
}

/* The cursor's next row, reading ahead from the spill when its rows are used up (UINT64_MAX:
   none left). */
static int cursor_head(struct dg_builder *b, struct dg_cursor *c, uint64_t *row, struct oc_err *err)
{
    if (c->at == c->n && c->next < c->end) {
        uint64_t k = c->end - c->next < c->ahead ? c->end - c->next : c->ahead;
        int rc = pl_spill_get(&b->spill, c->next, k, c->rows, err);
        if (rc)
            return rc;
        c->next += k;
        c->at = 0;
        c->n = (uint32_t)k;
    }
    *row = c->at < c->n ? c->rows[c->at] : UINT64_MAX;
    return OC_OK;
}

/* Writes what the partition [r0, r1) at part gives cursor c: every run of its rows below r1. */
static int write_cursor(struct dg_builder *b, struct dg_cursor *c, uint64_t r0, uint64_t r1,
                        const uint8_t *part, struct oc_err *err)
{
    for (;;) {
        uint64_t row;
        int rc = cursor_head(b, c, &row, err);
        if (rc || row >= r1)
            return rc;
        uint64_t j1 = oc_lower_bound_u64(c->rows, c->at, c->n, r1);
        if ((rc = write_rows(b, c->rows, c->at, j1, c->dest, part, r0, err)))
            return rc;
        c->dest += (j1 - c->at) * b->s->row_bytes;
        c->at = (uint32_t)j1;
    }
}

/*
 * One past the last row below limit that any source needs (r0 + 1 at least): the cursors'
 * known rows, the disk-cache pairs seg[0, n_seg) and the cache's ids [cache_at, n_cache);
 * limit itself when a cursor's read-ahead ends below it with more to read.
 */
static uint64_t needed_end(const struct dg_cursor *c, uint64_t count, const struct store_miss *seg,
                           uint64_t n_seg, const struct store_cache *cache, uint64_t cache_at,
                           uint64_t n_cache, uint64_t r0, uint64_t limit)
{
    uint64_t r1 = r0 + 1;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t j = oc_lower_bound_u64(c[i].rows, c[i].at, c[i].n, limit);
        if (j == c[i].n && c[i].next < c[i].end)
            return limit;
        if (j > c[i].at && c[i].rows[j - 1] + 1 > r1)
            r1 = c[i].rows[j - 1] + 1;
    }
    for (uint64_t j = 0; j < n_seg && seg[j].id < limit; j++)
        r1 = seg[j].id + 1 > r1 ? seg[j].id + 1 : r1;
    uint64_t j = oc_lower_bound_u64(cache->ids, cache_at, n_cache, limit);
    if (j > cache_at && cache->ids[j - 1] + 1 > r1)
        r1 = cache->ids[j - 1] + 1;
    return r1;
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

int dg_pack_scan(struct dg_builder *b, struct dg_cursor *c, uint64_t count, struct store_miss *seg,
                 uint64_t n_seg, struct store_cache *cache, uint64_t n_cache, struct oc_file *out,
                 struct oc_err *err)
{
    const struct oc_store *s = b->s;
    uint64_t rb = s->row_bytes, seg_at = 0, cache_at = 0;
    struct oc_io_scan sc = {0};
    int rc;
    for (uint64_t j = 1; j < n_cache; j++)
        assert(cache->ids[j - 1] < cache->ids[j]); /* the cache's lookup needs them so too */
    if ((rc = dg_scan_open(b, &sc, err)) || (rc = writes_begin(b, out, err)))
        goto out;
    /* progress: how far the one ascending scan of the feature rows has come */
    static const char packing[] = "diskgnn: packing the next window";
    dg_report_begin(b, "diskgnn: pack the first window", packing, s->n_nodes, "rows");
    for (;;) {
        uint64_t r0 = cache_at < n_cache ? cache->ids[cache_at] : UINT64_MAX, row;
        if (seg_at < n_seg && seg[seg_at].id < r0)
            r0 = seg[seg_at].id;
        for (uint64_t i = 0; i < count; i++) {
            if ((rc = cursor_head(b, &c[i], &row, err)))
                goto out;
            r0 = row < r0 ? row : r0;
        }
        if (r0 == UINT64_MAX)
            break;
        uint64_t per = oc_io_scan_units(&sc, store_file_off(s, r0), rb); /* what a half holds */
        uint64_t limit = r0 + per < s->n_nodes ? r0 + per : s->n_nodes;
        uint64_t r1 = needed_end(c, count, seg + seg_at, n_seg - seg_at, cache, cache_at, n_cache,
                                 r0, limit); /* rows [r0, r1) are needed */
        assert(r0 < r1 && r1 <= limit);
        const uint8_t *part;
        if ((rc = dg_check_cancel(b, err)) ||
            (rc = oc_io_scan_read(&sc, store_file_off(s, r0), (r1 - r0) * rb, &part, err)))
            goto out;
        for (uint64_t i = 0; i < count && rc == OC_OK; i++)
            rc = write_cursor(b, &c[i], r0, r1, part, err);
        uint64_t j = seg_at;
        while (j < n_seg && seg[j].id < r1)
            j++;
        if (rc == OC_OK && j > seg_at)
            rc = write_runs(b, seg + seg_at, j - seg_at, part, r0, err);
        seg_at = j;
        if (rc)
            goto out;
        for (; cache_at < n_cache && cache->ids[cache_at] < r1; cache_at++)
            memcpy(cache->rows + cache_at * rb, part + (cache->ids[cache_at] - r0) * rb, rb);
        dg_report(b, packing, r1, s->n_nodes);
    }
    dg_report(b, packing, s->n_nodes, s->n_nodes); /* rows past the last needed one: skipped */
    dg_report_end(b);
out:
    rc = dg_scan_end(b, &sc, rc, err); /* a checksum that fails fails the window */
    return writes_end(b, rc, err);
}

/* Pass 2 of a laid-out window: dg_pack_scan with the layout's chunks and disk-cache pairs. */
static int pack_rows(struct dg_builder *b, const struct oc_plan_layout *l,
                     struct store_cache *cache, int fill_cache, struct oc_file *out,
                     struct oc_err *err)
{
    struct store_miss *seg = NULL;
    uint64_t n_seg = 0;
    struct dg_cursor *c = oc_calloc(l->n_batches ? l->n_batches : 1, sizeof(*c),
                                    "store diskgnn: packing cursors", err);
    if (!c)
        return err->status;
    for (uint64_t i = 0; i < l->n_batches; i++) {
        uint64_t meta =
            oc_plan_chunk_meta_bytes(b->tr.rec_bytes[i], b->tr.off[i + 1] - b->tr.off[i]);
        uint64_t end = l->pack_off[i + 1];
        c[i] = (struct dg_cursor){end,
                                  end,
                                  l->pack_rows + l->pack_off[i],
                                  0,
                                  (uint32_t)(end - l->pack_off[i]),
                                  0,
                                  l->chunk_off[i] + meta};
        for (uint64_t j = l->pack_off[i] + 1; j < end; j++)
            assert(l->pack_rows[j - 1] < l->pack_rows[j]); /* plan.h: ascending in a chunk */
    }
    int rc = make_seg_pairs(b, l, &seg, &n_seg, err);
    if (rc == OC_OK)
        rc = dg_pack_scan(b, c, l->n_batches, seg, n_seg, cache, fill_cache ? cache->n : 0, out,
                          err);
    oc_free(seg);
    oc_free(c);
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
        (rc = dg_window_create(b, w, l.file_bytes, &out, err)) ||
        (rc = pack_meta(b, &l, w->epoch, out, err)))
        goto fail;
    oc_free(l.addr); /* written: the pairs take its place (dg_builder_need_bytes) */
    l.addr = NULL;
    if ((rc = pack_rows(b, &l, cache, fill_cache, out, err)) || (rc = dg_window_finish(&out, err)))
        goto fail;
    oc_plan_layout_deinit(&l);
    b->pack_us = (uint64_t)(oc_now_s() * 1e6) - t0;
    return OC_OK;
fail:
    dg_window_fail(b, w, out);
    oc_plan_layout_deinit(&l);
    return oc_err_prefix(
        err, "store diskgnn: packing the window of epoch %" PRIu64 " from batch %" PRIu64, w->epoch,
        w->first);
}
