/*
 * diskgnn_stream.c — streamed windows of the `diskgnn` strategy: a window
 * without disk caches (one batch per segment, which is every window unless
 * --disk-budget is given) needs no layout of the whole window, because each
 * batch's layout depends only on the batch and the CPU cache
 * (oc_plan_batch_layout). So the window is built in two passes whose
 * memory does not grow with the window's length:
 *
 *   1. per batch, as it is sampled: addresses against the cache, header +
 *      record + address table written at the chunk's offset (known from the
 *      chunks before it), its packed rows (ascending) appended to the
 *      builder's spill (8 bytes a row, an unlinked scratch file);
 *   2. the packers' one ascending scan of the feature file (dg_pack_scan),
 *      each batch's cursor reading its packed rows back b->ahead at a time;
 *      the CPU cache of the first window fills from the same scan.
 *
 * A window can so span the whole epoch within any budget that holds one
 * batch, and the feature file is read once per window instead of once per
 * budget-sized window. The file is byte for byte the one dg_window_pack
 * writes for the same batches and cache (tests/test_store_diskgnn.c).
 *
 * Place in the data flow: store (diskgnn); sample ──► per-batch layout ──►
 * chunk metadata + spill ──► scan ──► file.
 * Thread-safety: as diskgnn_window.c: the builder belongs to one thread at a
 * time, which checks b->cancel between batches and partitions.
 * Ownership: the builder owns the spill (dropped when the window is packed
 * or fails) and its per-batch arrays; the window owns its file.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/diskgnn/diskgnn_int.h"

uint32_t dg_stream_ahead(uint64_t mem_bytes, uint64_t nb_epoch)
{
    if (mem_bytes == 0 || nb_epoch == 0)
        return 4096;
    uint64_t a = mem_bytes / 64 / nb_epoch / sizeof(uint64_t);
    return a < 256 ? 256 : a > 4096 ? 4096 : (uint32_t)a;
}

/* Grows the builder's arrays for one batch of n input rows. */
static int grow_batch(struct dg_builder *b, uint64_t n, struct oc_err *err)
{
    void *const arr[] = {&b->addr, &b->pack};
    const size_t sz[] = {sizeof(uint64_t), sizeof(uint64_t)};
    int rc = pl_window_reserve(&b->tr, n, err);
    return rc ? rc
              : oc_grow_all(arr, sz, 2, &b->cap_batch, n, DG_GROW, "store diskgnn: batch", err);
}

/* Pass 1, one batch: sample, lay out (against b->cpu_set), write the metadata, spill the
   packed rows. */
static int stream_batch(struct dg_builder *b, uint64_t i, struct oc_file *out, struct oc_err *err)
{
    const struct oc_store *s = b->s;
    uint64_t np;
    size_t len;
    int rc;
    if ((rc = pl_window_next(&b->tr, err)))
        return rc;
    const struct oc_sample_batch *sb = pl_window_batch(&b->tr); /* over a map: its ids */
    uint64_t n = sb->n_input;
    uint64_t meta = oc_plan_chunk_meta_bytes(oc_sample_batch_record_bytes(sb), n);
    if ((rc = grow_batch(b, n, err)) ||
        (rc = oc_grow_by(&b->rec, &b->cap_rec, meta, 1, DG_GROW, "store diskgnn: records", err)))
        return rc;
    if (n)
        store_rows_of(s->ds, s->row_map, sb->input_ids, n, b->tr.rows); /* row space */
    assert(b->cpu_set.n == s->n_nodes);
    oc_plan_batch_layout(b->tr.rows, n, &b->cpu_set, b->addr, b->pack, &np);
    for (uint64_t j = 1; j < np; j++)
        assert(b->pack[j - 1] < b->pack[j]); /* the scan's cursors need them ascending */
    if ((rc = oc_sample_batch_serialize(sb, b->rec + OC_PLAN_CHUNK_HEADER,
                                        b->cap_rec - OC_PLAN_CHUNK_HEADER, &len, err)))
        return rc;
    dg_chunk_seal(b->rec, b->tr.epoch, b->tr.first + i, n, np, len, b->addr);
    if ((rc =
             oc_file_pwrite(out, b->rec, oc_plan_chunk_meta_bytes(len, n), b->chunk_off[i], err)) ||
        (rc = pl_spill_append(&b->spill, b->pack, np, err)))
        return rc;
    uint64_t bytes = oc_plan_chunk_bytes(len, n, np, s->row_bytes);
    b->tr.off[i + 1] = b->tr.off[i] + n;
    b->tr.rec_bytes[i] = len;
    b->pack_off[i + 1] = b->pack_off[i] + np;
    b->chunk_off[i + 1] =
        b->chunk_off[i] + (bytes + OC_PLAN_PAGE - 1) / OC_PLAN_PAGE * OC_PLAN_PAGE;
    return OC_OK;
}

/* Pass 1: every batch of the window (b->tr.epoch from b->tr.first); the spill file ends up holding
   their packed rows. */
static int stream_batches(struct dg_builder *b, uint64_t count, struct oc_file *out,
                          struct oc_err *err)
{
    char name[64];
    snprintf(name, sizeof(name), "w%" PRIu64 ".%" PRIu64 ".pk", b->tr.epoch, b->tr.first);
    int rc = dg_spill_begin(b, sizeof(uint64_t), name, err);
    oc_sample_iter_seek(&b->tr.it, b->tr.epoch, b->tr.first);
    b->tr.off[0] = b->pack_off[0] = b->chunk_off[0] = 0;
    static const char sampling[] = "diskgnn: sampling the next window";
    dg_report_begin(b, "diskgnn: sample the first window", sampling, count, "batches");
    for (uint64_t i = 0; i < count && rc == OC_OK; i++) {
        rc = stream_batch(b, i, out, err);
        dg_report(b, sampling, i + 1, count);
    }
    dg_report_end(b);
    return rc;
}

/* Pass 2: dg_pack_scan with each batch's packed rows read ahead from the spill. */
static int stream_rows(struct dg_builder *b, struct store_cache *cache, int fill_cache,
                       uint64_t count, struct oc_file *out, struct oc_err *err)
{
    struct dg_cursor *c = oc_calloc(count ? count : 1, sizeof(*c), "store diskgnn: cursors", err);
    if (!c)
        return err->status;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t meta =
            oc_plan_chunk_meta_bytes(b->tr.rec_bytes[i], b->tr.off[i + 1] - b->tr.off[i]);
        c[i] = (struct dg_cursor){
            b->pack_off[i], b->pack_off[i + 1],    b->cursor_buf + i * b->ahead, 0, 0,
            b->ahead,       b->chunk_off[i] + meta};
    }
    int rc = dg_pack_scan(b, c, count, NULL, 0, cache, fill_cache ? cache->n : 0, out, err);
    oc_free(c);
    return rc;
}

/* w's arrays from the builder's offsets: one segment per batch, no disk cache. */
static int stream_arrays(const struct dg_builder *b, uint64_t count, struct dg_window *w,
                         struct oc_err *err)
{
    uint64_t end = b->chunk_off[count];
    w->n_batches = count;
    w->s = 1;
    w->n_segments = count;
    w->file_bytes = end;
    w->chunk_off = oc_alloc((count + 1) * sizeof(uint64_t), "store diskgnn: window", err);
    w->seg_byte_off = oc_alloc((count + 1) * sizeof(uint64_t), "store diskgnn: window", err);
    if (!w->chunk_off || !w->seg_byte_off)
        return err->status;
    memcpy(w->chunk_off, b->chunk_off, (count + 1) * sizeof(uint64_t));
    for (uint64_t j = 0; j <= count; j++)
        w->seg_byte_off[j] = end;
    return OC_OK;
}

int dg_window_stream(struct dg_builder *b, struct store_cache *cache, int fill_cache,
                     uint64_t epoch, uint64_t first, uint64_t count, struct dg_window *w,
                     struct oc_err *err)
{
    double t0 = oc_now_s();
    struct oc_file *out = NULL;
    int rc;

    assert(b->streamed && b->disk_budget_bytes == 0);
    pl_spill_deinit(&b->spill);
    memset(w, 0, sizeof(*w));
    w->epoch = b->tr.epoch = epoch;
    w->first = b->tr.first = first;
    b->tr.n_batches = 0;
    b->pack_read_bytes = 0;
    if (first > b->tr.nb_epoch || count > b->tr.nb_epoch - first) {
        rc = OC_ERR(err, OC_ERR_INTERNAL,
                    "store diskgnn: window of batches %" PRIu64 "+%" PRIu64 " of %" PRIu64, first,
                    count, b->tr.nb_epoch);
        goto fail;
    }
    if (!b->cpu_set.bits && /* the cache's ids are chosen once, at open */
        (rc = oc_rank_set_build(&b->cpu_set, cache->ids, cache->n, b->s->n_nodes,
                                "store diskgnn: CPU cache index", err)))
        goto fail;
    if ((rc = dg_window_create(b, w, 0, &out, err)) || (rc = stream_batches(b, count, out, err)))
        goto fail;
    b->tr.n_batches = count;
    b->sample_us = (uint64_t)((oc_now_s() - t0) * 1e6);
    if ((rc = oc_file_truncate(out, b->chunk_off[count], err)) ||
        (rc = stream_rows(b, cache, fill_cache, count, out, err)) ||
        (rc = stream_arrays(b, count, w, err)) || (rc = dg_window_finish(&out, err)))
        goto fail;
    pl_spill_deinit(&b->spill);
    b->pack_us = (uint64_t)((oc_now_s() - t0) * 1e6) - b->sample_us;
    return OC_OK;
fail:
    dg_window_fail(b, w, out);
    return oc_err_prefix(err,
                         "store diskgnn: sampling and packing the window of epoch %" PRIu64
                         " from batch %" PRIu64,
                         epoch, first);
}
