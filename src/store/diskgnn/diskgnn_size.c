/*
 * diskgnn_size.c — how much of the budget the `diskgnn` store holds, and how
 * long its windows are: the fixed part (chunk buffers and their blocks, the
 * assembler's and the evaluation reader's buffers, the builder's plan of a
 * window and its sampler), the batches per window the budget and the plan
 * directory's free space allow, and the chunk buffers (two, or one under a
 * tight budget). The figures are diskgnn.c's open's; see its header for
 * what the budget holds.
 *
 * Place in the data flow: store (diskgnn); diskgnn.c's open ─► here.
 * Thread-safety: pure functions of their arguments (disk_window reads the
 * plan directory's free space and logs).
 * Ownership: none.
 */
#include <inttypes.h>
#include <string.h>

#include "store/diskgnn/diskgnn_int.h"

void dg_window_sizes(const struct dg_builder *b, struct dg_sizes *z)
{
    memset(z, 0, sizeof(*z));
    z->accesses = b->tr.off[b->tr.n_batches];
    for (uint64_t i = 0; i < b->tr.n_batches; i++) {
        uint64_t n = b->tr.off[i + 1] - b->tr.off[i];
        uint64_t meta = oc_plan_chunk_meta_bytes(b->tr.rec_bytes[i], n);
        if (n > z->max_input)
            z->max_input = n;
        if (meta > z->max_meta)
            z->max_meta = meta;
    }
}

/*
 * Rows per batch to size buffers for: the first window's largest batch, plus
 * a quarter while later windows' batches may differ (a larger one grows the
 * buffers), exact when that window is every batch there is (reuse, one
 * window per epoch: `exact`).
 */
uint64_t dg_size_rows(uint64_t n, int exact)
{
    return exact ? n : n + n / 4;
}

/*
 * Rows the store's reader of features.npy (evaluation, out-of-plan reads,
 * given-back rows) queues per run: a batch's, at most DG_READER_RUN. A
 * larger gather sorts its misses (16 bytes per row of a batch:
 * store_cache_gather), so each run reads a range of the file and runs of a
 * few thousand requests keep the ring full at a tenth of a batch's records.
 */
#define DG_READER_RUN 4096u
uint64_t dg_reader_rows(const struct oc_store *s, const struct oc_store_config *cfg)
{
    uint64_t rows = store_budget_rows(s, cfg);
    return rows < DG_READER_RUN ? rows : DG_READER_RUN;
}

/* A chunk buffer: the largest batch's header, record and address table, page-aligned. */
uint64_t dg_slot_bytes(const struct dg_sizes *z, int exact)
{
    return oc_io_align_up(dg_size_rows(z->max_meta, exact)) + 2 * OC_IO_ALIGN;
}

/*
 * The buffers of the fixed part, for batches of `in` input rows in chunk
 * buffers of chunk bytes: the slots and their blocks, the assembler's
 * reader (bounce, DG_ROW_RUN requests, the packed rows' map) and the
 * store's reader of features.npy (evaluation, given-back rows).
 */
static uint64_t buffer_bytes(const struct oc_store *s, const struct oc_store_config *cfg,
                             uint32_t n_slots, uint64_t in, uint64_t chunk)
{
    uint64_t blocks = in * (8 + 8 * (uint64_t)cfg->sample_opts->n_layers) * 2; /* deserialized */
    uint64_t run, bounce, reader;
    dg_row_reader(in, s->row_bytes, &run, &bounce, &reader);
    return n_slots * (chunk + blocks) + reader + in * sizeof(uint32_t) + STORE_DISK_BOUNCE_BYTES +
           dg_reader_rows(s, cfg) * (STORE_ROW_SCRATCH_BYTES + 8) +
           store_budget_rows(s, cfg) * sizeof(struct store_miss) + sizeof(struct diskgnn_store);
}

uint64_t dg_fixed_bytes(const struct oc_store *s, const struct oc_store_config *cfg,
                        uint32_t n_slots, const struct dg_builder *b, const struct dg_sizes *z,
                        int exact)
{
    uint64_t in = dg_size_rows(z->max_input, exact);
    uint64_t f = buffer_bytes(s, cfg, n_slots, in, dg_slot_bytes(z, exact));
    /* the builder: held now, laying out and packing this window beside the cache it fills,
       and (fresh samples) grown by the next windows' traces; its sampler (id map, sampled ids
       and the batch: ~96 bytes per input row, as ginex's inspector) */
    const int mapped = b->tr.c.accesses != NULL; /* over other ids: the trace holds fewer
                                                     rows than the batches sampled */
    uint64_t sampled = mapped ? dg_size_rows(b->tr.max_sampled, exact) : in;
    f += dg_builder_need_bytes(b, exact ? z->accesses : z->accesses + z->accesses / 4) +
         sampled * 96 + (mapped ? in * sizeof(uint64_t) : 0); /* and a batch's mapped ids */
    if (b->streamed) /* one batch's rows, addresses and packed rows while it is laid out */
        f += in * 3 * sizeof(uint64_t);
    f += store_sampler_pool_bytes(b->tr.c.graph); /* the planner's sampler's pool, on disk */
    return f;
}

/*
 * Batches per window. Without a budget: the whole epoch; --window
 * when given (at most the epoch). Else as many as let the
 * planner's share of the next window (dg_builder_access_bytes per access of R
 * rows per batch, R = train's measured rows, which carry a quarter more than
 * the largest batch measured, else the bound; the check after sampling adds
 * a quarter to the window's accesses) stay within half of the budget and
 * within what the buffers leave of it (a tight budget shortens the window
 * rather than refusing to open), at least one batch: the window, not the
 * epoch, is what the budget must hold, so an epoch of any length fits (with
 * reuse every window of epoch 0 is packed at open, one after the other, and
 * kept: their plans are never held together).
 * Also the chunk buffers: two while the buffers (estimated at R rows: chunk
 * buffers, staging) take at most half of the budget,
 * else one.
 */
uint64_t dg_window_batches(const struct oc_store *s, const struct oc_store_config *cfg,
                           const struct dg_builder *b, uint32_t *n_slots)
{
    uint64_t nb = b->tr.nb_epoch;
    uint64_t rows = store_budget_rows(s, cfg), in = dg_size_rows(rows, 0);
    uint64_t chunk = oc_io_align_up(OC_PLAN_CHUNK_HEADER + in * (8 + 64)) +
                     2 * OC_IO_ALIGN; /* slot_bytes, with a block record's bytes per row */
    /* a second chunk buffer (loading overlaps assembling) while the buffers take at most half
       of the budget; else one */
    *n_slots = DG_N_SLOTS;
    if (cfg->mem_bytes && buffer_bytes(s, cfg, DG_N_SLOTS, in, chunk) > cfg->mem_bytes / 2)
        *n_slots = 1;
    uint64_t buffers = buffer_bytes(s, cfg, *n_slots, in, chunk) + in * 96; /* + its sampler */
    if (nb == 0)
        return nb;
    uint32_t want = dg_opts_of(cfg).window_batches;
    if (want)
        return want < nb ? want : nb;
    if (cfg->mem_bytes == 0 || b->streamed) /* streamed: memory does not grow with it */
        return nb;
    uint64_t per = rows * dg_builder_access_bytes(b) + dg_builder_batch_bytes(b);
    uint64_t base = dg_builder_need_bytes(b, 0), half = cfg->mem_bytes / 2;
    uint64_t left = cfg->mem_bytes > buffers ? cfg->mem_bytes - buffers : 0;
    uint64_t w = half > base ? (half - base) / per : 0;
    uint64_t fit = left > base ? (left - base) / per : 0; /* no row cached beside it */
    w = w < fit ? w : fit;
    return w < 1 ? 1 : w > nb ? nb : w;
}

/*
 * Streamed windows with fresh samples: two exist at once (one trains while
 * the next is packed), so without --disk-budget each is kept within
 * DG_DISK_SHARE of the plan directory's free space, estimated at the probe's
 * mean batch with the rows the cache serves (hits of the probe's accesses)
 * counted at four fifths (the cache was chosen from the probe, later batches
 * hit it less); a shorter window when needed (at least one batch), logged.
 */
uint64_t dg_disk_window(const struct oc_store *s, const struct oc_store_config *cfg,
                        const struct dg_builder *b, const struct dg_sizes *z, uint64_t probe,
                        uint64_t hits, uint64_t win)
{
    struct oc_err e;
    uint64_t free_bytes;
    if (probe == 0 || oc_fs_free_bytes(b->dir, &free_bytes, &e) != OC_OK)
        return win;
    uint64_t meta = 0;
    for (uint64_t i = 0; i < probe; i++)
        meta += b->tr.rec_bytes[i];
    double packed = (double)z->accesses - 0.8 * (double)hits;
    double per =
        ((double)meta + (double)z->accesses * 8 + packed * (double)s->row_bytes) / (double)probe +
        OC_PLAN_CHUNK_HEADER + OC_PLAN_PAGE;
    double share = (double)free_bytes * DG_DISK_SHARE;
    if ((double)win * per <= share || dg_opts_of(cfg).window_batches)
        return win;
    uint64_t w = (uint64_t)(share / per);
    w = w < 1 ? 1 : w;
    char fs[32], ws[32];
    oc_log(OC_LOG_INFO,
           "store diskgnn: %s free under %s: windows of %" PRIu64 " batches (about %s each; two "
           "exist at once), not the whole epoch of %" PRIu64 " (--disk-budget or --plan-dir "
           "elsewhere)",
           oc_format_size(free_bytes, fs, sizeof(fs)), b->dir, w,
           oc_format_size((uint64_t)((double)w * per), ws, sizeof(ws)), b->tr.nb_epoch);
    return w;
}
