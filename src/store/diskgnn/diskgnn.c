/*
 * diskgnn.c — the `diskgnn` strategy (DiskGNN, Liu et al., SIGMOD 2025):
 * offline sampling of a window (one epoch) of batches, a four-level feature
 * store (GPU cache: the tier is reserved in plan.h's address codes and
 * empty on the CPU; CPU cache of the hottest rows of the first window; a
 * segmented disk cache in MinHash order; per-batch packed chunks that also
 * carry the batch's blocks), batched packing by sequential scans, and the
 * four-stage pipeline of diskgnn_pipe.c.
 *
 * Unlike DiskGNN, every epoch gets fresh samples (the batches train would
 * sample itself, so training is bit-for-bit `memory`'s); window e+1 is
 * sampled and packed in the background while epoch e trains. With
 * cfg->reuse_samples every epoch replays epoch 0's batches, as DiskGNN does:
 * its windows (as many as the budget's plan share needs) are all packed at
 * open and kept for the run.
 *
 * Budget (cfg->mem_bytes): the fixed part — DG_N_SLOTS chunk buffers of a
 * batch's metadata and blocks (one when two, with the rest of the buffers,
 * would take over half the budget; sized from the first window's largest
 * batch, plus a quarter unless that window is the whole pool of batches; rows are read and assembled
 * straight into the batch pipeline's row buffer, which train reserves, so
 * neither a chunk of rows nor an assembled batch of its own), the
 * assembler's reader (dg_row_reader) and the evaluation
 * reader's staging (for train's measured rows of a batch, else the bound), and
 * what the planner needs to lay out and pack the first window beside the
 * cache it fills (with fresh samples, the next windows': the first window's
 * accesses plus a quarter; streamed windows, without --disk-budget: one
 * batch's arrays and a read-ahead per batch, diskgnn_stream.c) — comes off first; a budget below it is
 * OC_ERR_BUDGET naming the bytes needed. The rest caches the rows the first
 * window accesses most (8 bytes of id per row besides the row); under a
 * budget it gives rows back to requests past it and takes them back
 * (../cache_yield.c; given-back rows are read by the assembler). With
 * mem_bytes = 0 every row the first window accesses is cached. Disk: window
 * files stay within --disk-budget x the feature bytes (two windows exist
 * at once with fresh samples, so each gets half).
 *
 * Over other ids (cfg->accesses: a partitioned dataset's part, whose
 * trainer samples and gathers per batch itself, with no batch pipeline) the
 * windows are the same, sampled on the plan's graph, with each batch's
 * accesses in place of its input ids (diskgnn_window.c): the trainer's
 * gathers of the plan's batches, in plan order, are then assembled from
 * their chunks as the pipeline's are, and the store hands out no batch.
 *
 * Reads outside the plan (evaluation, or a batch asked out of plan order)
 * use the CPU cache and read the rest from features.npy (O_DIRECT, merged;
 * store/cache.c, the same gather as `static`),
 * without touching the pipeline.
 *
 * Place in the data flow: store; train ─► load_batch / gather_batch ─► pipe.
 * Thread-safety: driven by the batch pipeline's fetch stage (or the
 * training thread); the pipe's stages run on the store's pipeline
 * (store_stages: cfg->pipeline, the training run's, so an error in one of
 * them stops the batch pipeline too and the other way round; or one the
 * store owns without it; diskgnn_pipe.c).
 * Ownership: the store owns the cache, the pipe (and through it the windows
 * and their files under DIR/plan/diskgnn/) and the evaluation reader; the
 * stages are joined before dg_free (store.h), and a training run's pipeline
 * is freed after its last stats read (they hold the stages' busy times).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "store/diskgnn/diskgnn_int.h"

#define DG_GATHER_RUN 4096u /* ids a gather turns into rows at a time (a feature layout's) */

/* ---- open --------------------------------------------------------------------- */

/*
 * With reuse, windows 1 .. n - 1 of epoch 0 (window 0 is packed), sampled and
 * packed one after the other into ws[1 .. n); the sampling and packing times
 * add to the store's.
 */
static int pack_replayed(struct diskgnn_store *d, struct dg_window *ws, uint64_t n,
                         struct oc_err *err)
{
    struct dg_builder *b = &d->builder;
    int rc = OC_OK;
    for (uint64_t k = 1; k < n && rc == OC_OK; k++) {
        uint64_t first = k * d->win_batches, nb = b->tr.nb_epoch;
        uint64_t count = nb - first < d->win_batches ? nb - first : d->win_batches;
        if ((rc = dg_window_build(b, &d->cache, 0, 0, first, count, &ws[k], err)))
            break;
        d->sample_us += b->sample_us;
        d->pack_us += b->pack_us;
    }
    return rc;
}

/* Samples window 0, sizes and fills the cache, packs it, starts the pipe. */
static int open_plan(struct oc_store *s, struct diskgnn_store *d, const struct oc_store_config *cfg,
                     struct oc_err *err)
{
    struct dg_builder *b = &d->builder;
    uint32_t *counts = NULL;
    struct dg_window *ws = NULL; /* window 0; with reuse every window of epoch 0 */
    uint64_t n_ws = 0;
    char need_s[32], have_s[32];
    int rc;

    if (!cfg->plan_dir)
        return OC_ERR(err, OC_ERR_ARG, "store diskgnn: needs a plan directory (DIR/plan)");
    struct dg_opts o = dg_opts_of(cfg);
    if (!(o.disk_budget >= 0.0))
        return OC_ERR(err, OC_ERR_ARG, "store diskgnn: --disk-budget %g: must be >= 0",
                      o.disk_budget);
    if ((rc = dg_builder_init(b, s, cfg, cfg->pool, err)))
        return rc;
    b->crc = s->feat_crc; /* window 0's scan reads features.npy: it checks the checksum */
    b->crc_due = s->feat_crc_due;
    s->feat_crc_due = 0;
    d->n_batches = b->tr.nb_epoch;
    d->win_batches = dg_window_batches(s, cfg, b, &d->n_slots);
    uint64_t wpe = pl_windows_per_epoch(b->tr.nb_epoch, d->win_batches);
    int exact = d->reuse && wpe == 1; /* window 0 is every batch there is */
    if (o.disk_budget > 0) {          /* per window: the windows that exist at once share it */
        double total = o.disk_budget * (double)s->n_nodes * (double)s->row_bytes;
        b->disk_budget_bytes = d->reuse ? total / (double)wpe : total / 2;
    }
    d->seed = cfg->sample_opts->seed;
    d->order_epoch = UINT64_MAX;
    n_ws = d->reuse ? wpe : 1;
    if (!(ws = oc_calloc(n_ws ? n_ws : 1, sizeof(*ws), "store diskgnn: windows", err)))
        return err->status;
    if (d->reuse && !(d->order = oc_alloc((d->n_batches ? d->n_batches : 1) * sizeof(uint64_t),
                                          "store diskgnn: batch order", err))) {
        rc = err->status;
        goto out;
    }
    /* streamed: a probe of the window's first batches (no trace kept) sizes the buffers and
       chooses the cache; the window itself is sampled again as it is packed */
    uint64_t sample_epoch = d->reuse ? 0 : cfg->first_epoch;
    uint64_t probe =
        b->streamed && d->win_batches > DG_PROBE_BATCHES ? DG_PROBE_BATCHES : d->win_batches;
    exact = exact && probe == d->win_batches;
    counts = oc_calloc(s->n_nodes ? s->n_nodes : 1, sizeof(uint32_t), "store diskgnn: counts", err);
    if (!counts) {
        rc = err->status;
        goto out;
    }
    if (b->streamed) {
        if ((rc = pl_window_probe(&b->tr, sample_epoch, probe, counts, err)))
            oc_err_prefix(err, "store diskgnn: sampling epoch %" PRIu64 " (first batches)",
                          sample_epoch);
    } else if ((rc = dg_window_sample(b, sample_epoch, 0, probe, err)) == OC_OK) {
        struct oc_plan_trace t = {s->n_nodes, b->tr.n_batches, b->tr.off, b->tr.rows};
        rc = oc_plan_count_accesses(&t, counts, err);
    }
    if (rc)
        goto out;
    struct dg_sizes z;
    dg_window_sizes(b, &z);
    uint64_t fixed = dg_fixed_bytes(s, cfg, d->n_slots, b, &z, exact);
    if (cfg->mem_bytes && cfg->mem_bytes < fixed) {
        rc = OC_ERR(err, OC_ERR_BUDGET,
                    "store diskgnn: needs at least %s (%u chunk buffer(s) "
                    "for up to %" PRIu64 " rows, staging, and the plan of a window of %" PRIu64
                    " batches and %" PRIu64 " accesses%s) before caching any row; the store's "
                    "budget is %s",
                    oc_format_size(fixed, need_s, sizeof(need_s)), d->n_slots, z.max_input,
                    b->tr.n_batches, z.accesses, d->reuse ? "" : ", and room for the next one",
                    oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
        goto out;
    }
    uint64_t want = STORE_NO_SLOT - 1; /* slots are u32 (store/cache.c) */
    if (cfg->mem_bytes && (cfg->mem_bytes - fixed) / (s->row_bytes + sizeof(uint64_t)) < want)
        want = (cfg->mem_bytes - fixed) / (s->row_bytes + sizeof(uint64_t));
    if ((rc = oc_plan_hottest(counts, s->n_nodes, want < s->n_nodes ? want : s->n_nodes,
                              &d->cache.ids, &d->cache.n, err)))
        goto out;
    if (b->streamed && !d->reuse) {
        uint64_t hits = 0;
        for (uint64_t k = 0; k < d->cache.n; k++)
            hits += counts[d->cache.ids[k]];
        d->win_batches = dg_disk_window(s, cfg, b, &z, probe, hits, d->win_batches);
        wpe = pl_windows_per_epoch(b->tr.nb_epoch, d->win_batches); /* the planner's, the log's */
    }
    oc_free(counts);
    counts = NULL;
    /* fresh samples, streamed: window 0 is only the probe's batches (the head), so training
       starts after one scan of features.npy (which fills the cache too) instead of after a
       whole window's packing; the planner packs the rest of the epoch meanwhile */
    uint64_t head = b->streamed && !d->reuse && probe < d->win_batches ? probe : 0;
    if ((rc = store_cache_map(&d->cache, s->row_bytes, "store diskgnn", err)) ||
        (rc = b->streamed ? dg_window_stream(b, &d->cache, 1, sample_epoch, 0,
                                             head ? head : d->win_batches, &ws[0], err)
                          : dg_window_pack(b, &d->cache, 1, &ws[0], err)))
        goto out;
    /* the reader's scratch (budgeted in the fixed part) for a planned batch, held from now:
       rows the cache gives back are read through it without asking for more memory */
    if (cfg->mem_bytes &&
        ((rc = store_disk_reserve(&d->disk, dg_size_rows(z.max_input, exact), err)) ||
         (rc = store_yield_register(&d->yield, err))))
        goto out;
    d->sample_us = b->sample_us;
    d->pack_us = b->pack_us;
    if ((rc = pack_replayed(d, ws, n_ws, err)))
        goto out;
    char fb[32];
    oc_log(OC_LOG_INFO,
           "store diskgnn: window files are unlinked scratch under %s (no name, freed with the "
           "run): the first takes %s",
           b->dir, oc_format_size(ws[0].file_bytes, fb, sizeof(fb)));
    b->background = 1; /* later windows are built while epochs train */
    d->builder_bytes = (b->tr.cap_rows + 2 * b->cap_batch) * sizeof(uint64_t) + b->cap_rec +
                       b->part_bytes + DG_WRITE_BYTES;
    int planner = !d->reuse && ((cfg->n_epochs - cfg->first_epoch) * wpe > 1 || head);
    if (head)
        oc_log(OC_LOG_INFO,
               "store diskgnn: window 0 is the first %" PRIu64 " of %" PRIu64
               " batches; the rest of the epoch is packed while they train",
               head, b->tr.nb_epoch);
    if (d->win_batches < b->tr.nb_epoch)
        oc_log(OC_LOG_INFO,
               "store diskgnn: windows of %" PRIu64 " batches (%" PRIu64 " per epoch of %" PRIu64
               "), sized from the budget%s",
               d->win_batches, wpe, b->tr.nb_epoch,
               d->reuse ? "; all of epoch 0's packed now and replayed" : "");
    struct oc_pipeline *stages;
    if ((rc = store_stages(s, &stages, err)) ||
        (planner && (rc = dg_builder_detach_pool(b, stages, err))))
        goto out;
    struct dg_pipe_config pc = {.s = s,
                                .pipeline = stages,
                                .builder = b,
                                .cache = &d->cache,
                                .yield = &d->yield,
                                .disk = &d->disk,
                                .disk_mu = &d->disk_mu,
                                .ws = ws,
                                .n_ws = n_ws,
                                .first_epoch = cfg->first_epoch,
                                .n_epochs = cfg->n_epochs,
                                .win_batches = d->win_batches,
                                .head = head,
                                .reuse = d->reuse,
                                .seed = cfg->sample_opts->seed,
                                .n_slots = d->n_slots,
                                .slot_bytes = dg_slot_bytes(&z, exact)};
    uint64_t reader_bytes;
    dg_row_reader(dg_size_rows(z.max_input, exact), s->row_bytes, &pc.row_run, &pc.row_bounce,
                  &reader_bytes);
    rc = dg_pipe_start(&pc, &d->pipe, err);
    d->n_pos = (cfg->n_epochs - cfg->first_epoch) * b->tr.nb_epoch;
out:
    for (uint64_t k = 0; ws && k < n_ws; k++)
        dg_window_drop(&ws[k]); /* those the pipe took are zeroed */
    oc_free(ws);
    oc_free(counts);
    return rc;
}

static int dg_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct diskgnn_store *d = oc_calloc(1, sizeof(*d), "store diskgnn", err);
    int rc;
    if (!d)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = d;
    /* sampled offline, window by window; over other ids a chunk holds the ids it is gathered
       with, not its batch, so there is none to hand out (the trainer samples its own) */
    s->caps.batches = !cfg->accesses;
    d->reuse = cfg->reuse_samples != 0;
    d->first_epoch = cfg->first_epoch;
    /*
     * diskgnn plans in row space: its trace, cache and window files hold rows
     * of features.npy, so the shared readers must not look rows up again.
     * Node ids become rows where they come in (the sampled trace, gathers,
     * rows the cache gave back), through s->row_map.
     */
    s->row_of32 = NULL;
    s->row_of64 = NULL;
    if (s->row_map && !(d->gather_rows = oc_alloc(DG_GATHER_RUN * sizeof(uint64_t),
                                                  "store diskgnn: gather rows", err)))
        return err->status;
    if ((rc = store_yield_init(&d->yield, &d->cache, s->row_bytes, "store diskgnn", err)))
        return rc;
    d->yield_ready = 1;
    if (pthread_mutex_init(&d->disk_mu, NULL) != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "store diskgnn: cannot make its reader's mutex");
    d->disk_mu_ready = 1;
    if ((rc = store_disk_open(s, 1, &d->disk, err)))
        return rc;
    d->disk.max_rows = dg_reader_rows(s, cfg);
    if (store_has_plan(cfg))
        return open_plan(s, d, cfg, err);
    return OC_OK;
}

/* ---- gathers ------------------------------------------------------------------ */

/* Reads given-back cache rows again while the budget has room (on the trainer's thread). */
static int take_back(struct oc_store *s, struct diskgnn_store *d, struct oc_err *err)
{
    if (!store_yield_missing(&d->yield))
        return OC_OK;
    pthread_mutex_lock(&d->disk_mu);
    int rc = store_yield_take_back(s, &d->yield, &d->disk, err);
    pthread_mutex_unlock(&d->disk_mu);
    return rc;
}

/* Evaluation and out-of-plan reads: the CPU cache, misses from features.npy. */
static int dg_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                     struct oc_err *err)
{
    struct diskgnn_store *d = s->impl;
    int rc = OC_OK;
    pthread_mutex_lock(&d->disk_mu);
    if (!s->row_map) {
        rc = store_yield_gather(s, &d->yield, &d->disk, ids, n, out, err);
    } else {
        for (uint64_t lo = 0; lo < n && rc == OC_OK; lo += DG_GATHER_RUN) {
            uint64_t k = n - lo < DG_GATHER_RUN ? n - lo : DG_GATHER_RUN;
            store_rows_of(s->ds, s->row_map, ids + lo, k, d->gather_rows);
            rc = store_yield_gather(s, &d->yield, &d->disk, d->gather_rows, k,
                                    out + lo * s->feat_dim, err);
        }
    }
    pthread_mutex_unlock(&d->disk_mu);
    return rc;
}

/*
 * Whether (epoch, batch) is the plan's next batch: batch pos of its epoch, or
 * with reuse batch order[pos] of epoch 0, the order of the training epoch.
 */
static int in_plan(struct diskgnn_store *d, uint64_t epoch, uint64_t batch)
{
    if (!d->pipe || d->pos >= d->n_pos)
        return 0;
    uint64_t e = d->first_epoch + d->pos / d->n_batches, k = d->pos % d->n_batches;
    if (!d->reuse)
        return epoch == e && batch == k;
    if (d->order_epoch != e) {
        oc_sample_batch_order(d->seed, e, d->order, d->n_batches);
        d->order_epoch = e;
    }
    return epoch == 0 && batch == d->order[k];
}

static int take(struct diskgnn_store *d, struct oc_err *err)
{
    if (d->cur)
        return OC_OK;
    return dg_pipe_next(d->pipe, &d->cur, err);
}

static int dg_load_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                         struct oc_sample_batch *out, struct oc_err *err)
{
    struct diskgnn_store *d = s->impl;
    int rc;
    if (!in_plan(d, epoch, batch) || (d->cur && d->cur->handed))
        return OC_ERR(err, OC_ERR_ARG,
                      "store diskgnn: batch %" PRIu64 " of epoch %" PRIu64
                      " is not the plan's next batch",
                      batch, epoch);
    if ((rc = take(d, err)))
        return rc;
    struct oc_sample_batch tmp = *out;
    *out = d->cur->batch;
    d->cur->batch = tmp;
    d->cur->handed = 1;
    d->cur->handed_ids = out->input_ids;
    return OC_OK;
}

static int dg_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                           uint64_t n, float *out, struct oc_err *err)
{
    struct diskgnn_store *d = s->impl;
    int rc;
    if (!in_plan(d, epoch, batch))
        return n ? dg_gather(s, ids, n, out, err) : OC_OK;
    if ((rc = take_back(s, d, err)) || (rc = take(d, err)))
        return rc;
    struct dg_slot *sl = d->cur;
    int same = sl->handed ? ids == sl->handed_ids && n == sl->info.n_input
                          : n == sl->batch.n_input &&
                                (n == 0 || memcmp(ids, sl->batch.input_ids, n * 8) == 0);
    if (same) {
        uint64_t read0 = sl->info.feat_read_bytes, reads0 = sl->info.n_reads;
        rc = dg_pipe_assemble(d->pipe, sl, ids, out, err); /* into the pipeline's rows */
        if (rc) { /* what was read for given-back rows counts even so */
            s->stats.read_bytes += sl->info.feat_read_bytes - read0;
            s->stats.n_reads += sl->info.n_reads - reads0;
        } else {
            s->stats.tier_rows[OC_STORE_TIER_CPU] += sl->info.n_cpu;
            s->stats.tier_rows[OC_STORE_TIER_PACKED] += sl->info.n_packed;
            s->stats.tier_rows[OC_STORE_TIER_DISK_CACHE] += sl->info.n_dc;
            s->stats.tier_rows[OC_STORE_TIER_DISK] += sl->info.n_file;
            s->stats.requested_disk_bytes +=
                (sl->info.n_packed + sl->info.n_dc + sl->info.n_file) * (uint64_t)s->row_bytes;
            s->stats.read_bytes += sl->info.feat_read_bytes;
            s->stats.graph_read_bytes += sl->info.graph_read_bytes;
            s->stats.n_reads += sl->info.n_reads;
        }
    }
    d->cur = NULL;
    dg_pipe_release(d->pipe, sl);
    d->pos++;
    if (rc == OC_OK && !same && n)
        rc = dg_gather(s, ids, n, out, err); /* not the plan's rows: read them as asked */
    return rc;
}

/* ---- stats / free ------------------------------------------------------------- */

static void dg_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct diskgnn_store *d = s->impl;
    out->plan_sample_us = d->sample_us;
    out->plan_pack_us = d->pack_us;
    uint64_t pipe_held = d->pipe ? dg_pipe_stats(d->pipe, out) : 0;
    struct diskgnn_store *m = s->impl; /* the locks (the counts are read, not changed) */
    pthread_mutex_lock(&m->disk_mu);
    store_yield_read_lock(&m->yield);
    out->held_bytes = sizeof(*d) + store_cache_held_bytes(s, &d->cache) +
                      store_disk_held_bytes(&d->disk) + pipe_held + d->builder_bytes;
    store_yield_read_unlock(&m->yield);
    pthread_mutex_unlock(&m->disk_mu);
    out->given_back_bytes = store_yield_missing(&d->yield) * s->row_bytes;
}

static void dg_free(struct oc_store *s)
{
    struct diskgnn_store *d = s->impl;
    if (!d)
        return;
    dg_pipe_stop(d->pipe);
    dg_builder_deinit(&d->builder);
    if (d->yield_ready)
        store_yield_deinit(&d->yield); /* unregistered first: waits for a reclaim in progress */
    store_disk_close(&d->disk);
    if (d->disk_mu_ready)
        pthread_mutex_destroy(&d->disk_mu);
    store_cache_free(&d->cache);
    oc_free(d->order);
    oc_free(d->gather_rows);
    oc_free(d);
    s->impl = NULL;
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt diskgnn_opts[] = {
    {"disk-budget", OC_STORE_OPT_F64, "X", NULL,
     "bound on its packed files on disk, as a multiple of the feature file's size (default "
     "unlimited)",
     offsetof(struct dg_opts, disk_budget), 0, 0, 0, 0, NULL},
    {"window", OC_STORE_OPT_U32, "B", NULL,
     "fresh samples: batches sampled and packed per window, at most an epoch (default: the "
     "most whose plan fits half the budget)",
     offsetof(struct dg_opts, window_batches), 1, 0, 0, 0, NULL},
};

static double dg_packed(const struct oc_store_stats *s)
{
    return oc_store_stats_hit_ratio(s, OC_STORE_TIER_PACKED);
}
static double dg_disk_cache(const struct oc_store_stats *s)
{
    return oc_store_stats_hit_ratio(s, OC_STORE_TIER_DISK_CACHE);
}
static double dg_plan_total_s(const struct oc_store_stats *s)
{
    return (double)(s->plan_sample_us + s->plan_pack_us) / 1e6;
}
/*
 * Shares of the packed chunks and segment caches; offline sampling and
 * packing times since open (totals), blocks read with the chunks, window
 * files on disk now; the busy seconds of each of its stages in the epoch.
 */
static const struct oc_store_stat diskgnn_stat_table[] = {
    {NULL, "packed_ratio", "Packed", OC_STORE_STAT_RATIO, dg_packed, 0},
    {NULL, "disk_cache_ratio", "Disk cache", OC_STORE_STAT_RATIO, dg_disk_cache, 0},
    {NULL, "plan_total_s", "Plan total", OC_STORE_STAT_SECONDS, dg_plan_total_s, 0},
    {"plan", "sample_s", NULL, OC_STORE_STAT_SECONDS, OC_STORE_STAT_FIELD(plan_sample_us)},
    {"plan", "pack_s", NULL, OC_STORE_STAT_SECONDS, OC_STORE_STAT_FIELD(plan_pack_us)},
    {"plan", "graph_read_bytes", NULL, OC_STORE_STAT_BYTES, OC_STORE_STAT_FIELD(graph_read_bytes)},
    {"plan", "file_bytes", NULL, OC_STORE_STAT_BYTES, OC_STORE_STAT_FIELD(plan_file_bytes)},
    {"plan", "file_peak_bytes", NULL, OC_STORE_STAT_BYTES,
     OC_STORE_STAT_FIELD(plan_file_peak_bytes)},
    {"plan", "pack_read_bytes", NULL, OC_STORE_STAT_BYTES, OC_STORE_STAT_FIELD(plan_read_bytes)},
    {"plan", "pack_write_bytes", NULL, OC_STORE_STAT_BYTES, OC_STORE_STAT_FIELD(plan_write_bytes)},
    {"stage_busy", "feature_loader_s", NULL, OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[DG_STAGE_LOAD])},
    {"stage_busy", "graph_loader_s", NULL, OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[DG_STAGE_GRAPH])},
    {"stage_busy", "feature_assembler_s", NULL, OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[DG_STAGE_ASSEMBLE])},
    {"stage_busy", "planner_s", NULL, OC_STORE_STAT_SECONDS,
     OC_STORE_STAT_FIELD(stage_busy_us[DG_STAGE_PLAN])},
};

/* The fetch stage's batch: in plan order, from the window's packed chunks. */
static int dg_load(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_sample_batch *out,
                   struct oc_err *err)
{
    if (!out)
        return store_next_in_order(s, epoch, batch, err);
    return dg_load_batch(s, epoch, *batch, out, err);
}

/* A plan batch from its chunk; evaluation through the cache and the feature file. */
static int dg_gather_at(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                        uint64_t n, float *out, struct oc_err *err)
{
    if (epoch == STORE_OFF_PLAN)
        return dg_gather(s, ids, n, out, err);
    return dg_gather_batch(s, epoch, batch, ids, n, out, err);
}

const struct store_strategy oc_store_diskgnn = {
    .name = "diskgnn",
    .reads_whole_features = 1,
    .summary = "offline-sampled windows packed into per-batch chunks and MinHash-ordered "
               "segment caches, CPU cache of the hottest rows, 4-stage pipeline (DiskGNN)",
    .open = dg_open,
    .load = dg_load,
    .gather = dg_gather_at,
    .stats = dg_stats,
    .free = dg_free,
    .opts = diskgnn_opts,
    .n_opts = sizeof(diskgnn_opts) / sizeof(diskgnn_opts[0]),
    .opts_size = sizeof(struct dg_opts),
    .stat_table = diskgnn_stat_table,
    .n_stats = sizeof(diskgnn_stat_table) / sizeof(diskgnn_stat_table[0]),
    .writes_plan = 1,
    .serves_accesses = 1, /* its windows pack the access map's ids (plan/window.h) */
};
