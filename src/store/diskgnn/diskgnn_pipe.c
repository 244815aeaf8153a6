/*
 * diskgnn_pipe.c — the four stages of the `diskgnn` strategy, on the
 * store's pipeline (the training run's, or one the store owns), plus the
 * planner stage that packs the next window while this one trains:
 *
 *   win_free ──► planner ──win_q──► feature loader ──loaded_q──► graph loader ──ready_q──►
 *   (a free      (sample + pack      (pops free_q: the chunk's   (record ─► blocks)
 *    window)      window k+1)         header, record and
 *                                     address table, O_DIRECT)
 *        ──ready_q──► trainer's fetch stage (dg_pipe_next, load_batch, then the
 *                     feature assembler of diskgnn_assemble.c in gather_batch:
 *                     packed rows (one
 *                     sequential extent) and disk-cache rows read by io_uring
 *                     in runs of up to DG_ROW_RUN rows, CPU-cache rows copied, all
 *                     straight into the batch pipeline's row buffer; dg_pipe_release)
 *
 * Each stage is one thread running one function per item of its input
 * queue (the loader's items are free chunk buffers, the planner's free
 * window structs). Every queue holds at most DG_QUEUE_DEPTH items.
 * n_slots (at most DG_N_SLOTS) chunk buffers circulate (free_q ─► loader ─►
 * graph loader ─► ready_q ─► fetch stage ─► free_q). The batch pipeline's
 * fetch stage runs ahead of the trainer, so batch b+1's rows are read and
 * assembled while batch b trains and, with two chunk buffers, batch b+2's
 * metadata is read meanwhile. The rows are read once, into where training
 * reads them: neither a chunk of rows nor an assembled batch of the
 * strategy's own (DiskGNN's CPU-side staging) sits beside the pipeline's row
 * buffers, so what the pipe holds grows with a batch's metadata (about 72
 * bytes per input row), not with its rows. Memory is fixed whatever the
 * queue depths.
 * Windows: a window is a run of win_batches consecutive batches of one epoch
 * (the whole epoch when the budget holds its plan; the store sizes it; which
 * batches window k holds is plan's schedule, pl_windows_span), so
 * window k + 1 may belong to the same epoch as window k. With fresh samples
 * at most two exist at once: the one being read and the one being packed or
 * waiting. With reuse every window of epoch 0 was packed at open and stays:
 * each run epoch reads epoch 0's batches in its own order, from whichever
 * window holds each. A fresh window
 * (and its file) is dropped once the loader has read its last chunk and
 * every slot loaded from it is released (its refs), by whichever lets go
 * last, and its struct goes back to the planner (win_free) while a later
 * window is left to plan.
 *
 * Errors and cancellation: a stage's error fails the pipeline (first wins;
 * pipeline.h), which closes every queue, so every wait of every stage and
 * of the trainer returns; the trainer sees the error at its next
 * dg_pipe_next. The planner also stops packing part-way once the pipeline
 * is cancelled (the builder's cancel, diskgnn_window.c). No stage waits on
 * anything but the pipeline's queues, so no cancel hook is needed.
 *
 * Thread-safety: each stage owns the slot it popped; the loader owns its
 * position in the plan, the fetch stage the assembler's batch reader; the planner owns the builder
 * and its epoch. Counters are C11 atomics. The items (slots, the assembled
 * batch, the second window) enter the queues only once the stages run, so a
 * failed start leaves no item for a stage thread to take.
 * Ownership: the pipe owns slots, buffers, windows and the reader; the
 * store's pipeline (store_stages: the training run's, or one the store
 * owns) owns the queues and threads, and its stages are joined before
 * dg_pipe_stop (by the pipeline's owner, or by the registry before the
 * strategy's free and when an open fails).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store/diskgnn/diskgnn_int.h"

static uint64_t batch_bytes(const struct oc_sample_batch *b)
{
    uint64_t h = b->cap_input * sizeof(uint64_t);
    for (uint32_t l = 0; l < OC_SAMPLE_MAX_LAYERS; l++)
        h += b->blocks[l].cap_indptr * sizeof(uint64_t) + b->blocks[l].cap_indices * 4;
    return h;
}

/* ---- planner ------------------------------------------------------------------ */

/* Samples and packs the plan's next window into the free window struct item. */
static int plan_window(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct dg_pipe *p = ctx;
    struct dg_window *w = item;
    uint64_t epoch, first, count;
    int rc;
    if (p->plan_k >= p->sched.n_win) /* nothing left to plan (not handed one) */
        return OC_OK;
    pl_windows_span(&p->sched, p->plan_k, &epoch, &first, &count);
    if ((rc = dg_window_build(p->c.builder, p->c.cache, 0, epoch, first, count, w, err)))
        return rc;
    p->plan_k++;
    atomic_fetch_add(&p->sample_us, p->c.builder->sample_us);
    atomic_fetch_add(&p->pack_us, p->c.builder->pack_us);
    oc_atomic_raise(&p->file_peak_bytes,
                    atomic_fetch_add(&p->file_bytes, w->file_bytes) + w->file_bytes);
    atomic_fetch_add(&p->pack_read_bytes, p->c.builder->pack_read_bytes);
    atomic_fetch_add(&p->pack_write_bytes, w->file_bytes);
    return oc_stage_push(st, p->win_q, w);
}

/* ---- feature loader ----------------------------------------------------------- */

/* Grows sl's buffer to need bytes, keeping its first `keep` bytes. */
static int grow_buf(struct dg_pipe *p, struct dg_slot *sl, uint64_t need, uint64_t keep,
                    struct oc_err *err)
{
    if (need <= sl->cap_buf)
        return OC_OK;
    uint64_t cap = oc_io_align_up(sl->cap_buf ? need + need / 4 : need); /* first: exact */
    uint8_t *b = oc_io_buf_alloc(cap, "store diskgnn: batch buffer", err);
    if (!b)
        return err->status;
    if (keep)
        memcpy(b, sl->buf, keep);
    oc_free(sl->buf);
    atomic_fetch_add(&p->held, cap - sl->cap_buf);
    sl->buf = b;
    sl->cap_buf = cap;
    return OC_OK;
}

int dg_chunk_check_header(const uint8_t *h, uint64_t len, const struct dg_chunk_expect *x,
                          const char *path, uint64_t off, uint64_t *meta, struct oc_err *err)
{
    uint64_t i = x->index;
    if (len < OC_PLAN_CHUNK_HEADER || memcmp(h, DG_CHUNK_MAGIC, 8) != 0 ||
        oc_get_le32(h + 60) != oc_crc32(0, h, 60) || oc_get_le32(h + 56) != DG_CHUNK_VERSION)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: chunk of batch %" PRIu64 " at offset %" PRIu64
                      ": bad header (magic, version or CRC)",
                      path, i, off);
    uint64_t n = oc_get_le64(h + 24), n_packed = oc_get_le64(h + 32), rec = oc_get_le64(h + 40);
    /* each bound before the sum that uses it: no term may wrap around */
    if (oc_get_le64(h + 8) != x->epoch || oc_get_le64(h + 16) != i || n_packed > n || rec > len ||
        n > len / 8 || (x->row_bytes && n_packed > len / x->row_bytes) ||
        OC_PLAN_CHUNK_HEADER + rec + 8 * n + n_packed * x->row_bytes > len)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: chunk of batch %" PRIu64 " at offset %" PRIu64
                      ": header does not match the plan (epoch %" PRIu64 ", batch %" PRIu64
                      ", %" PRIu64 " rows, %" PRIu64 " packed, %" PRIu64 " record bytes)",
                      path, i, off, oc_get_le64(h + 8), oc_get_le64(h + 16), n, n_packed, rec);
    *meta = oc_plan_chunk_meta_bytes(rec, n);
    return OC_OK;
}

int dg_chunk_check(const uint8_t *h, uint64_t len, const struct dg_chunk_expect *x,
                   const char *path, uint64_t off, struct dg_chunk_info *out, struct oc_err *err)
{
    uint64_t i = x->index, meta_bytes;
    int rc = dg_chunk_check_header(h, len, x, path, off, &meta_bytes, err);
    if (rc)
        return rc;
    uint64_t n = oc_get_le64(h + 24), n_packed = oc_get_le64(h + 32), rec = oc_get_le64(h + 40);
    const uint8_t *meta = h + OC_PLAN_CHUNK_HEADER, *addr = meta + rec;
    if (oc_get_le32(h + 48) != oc_crc32(0, meta, rec + 8 * n))
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: chunk of batch %" PRIu64 " at offset %" PRIu64
                      ": record or address table fails its CRC",
                      path, i, off);
    uint64_t n_dc = 0, n_cpu = 0;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t code = oc_get_le64(addr + 8 * k), idx = OC_PLAN_ADDR_INDEX(code);
        enum oc_plan_where where = OC_PLAN_ADDR_WHERE(code);
        int ok = (where == OC_PLAN_CPU && idx < x->n_cpu_rows) ||
                 (where == OC_PLAN_PACKED && idx < n_packed) ||
                 (where == OC_PLAN_DISK_CACHE && idx < x->seg_rows);
        if (!ok)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: chunk of batch %" PRIu64 " at offset %" PRIu64 ": address %" PRIu64
                          " (tier %d, index %" PRIu64 ") is out of range",
                          path, i, off, k, (int)where, idx);
        n_dc += where == OC_PLAN_DISK_CACHE;
        n_cpu += where == OC_PLAN_CPU;
    }
    *out = (struct dg_chunk_info){n, n_packed, rec, n_dc, n_cpu};
    return OC_OK;
}

/*
 * Reads the header, record and address table of chunk i of w into sl (its
 * first page, then the rest) and checks them; the rows stay on disk.
 */
static int load_chunk(struct dg_pipe *p, struct dg_window *w, uint64_t i, struct dg_slot *sl,
                      struct oc_err *err)
{
    const struct oc_store *s = p->s;
    uint64_t rb = s->row_bytes, off = w->chunk_off[i], len = w->chunk_off[i + 1] - off, meta;
    uint64_t first = len < OC_IO_ALIGN ? len : OC_IO_ALIGN;
    int rc;

    if ((rc = grow_buf(p, sl, first, 0, err)) ||
        (rc = oc_file_pread(w->f, sl->buf, first, off, err)))
        return rc;
    uint64_t seg = i / w->s;
    struct dg_chunk_expect x = {w->epoch, w->first + i, rb, p->c.cache->n,
                                (w->seg_byte_off[seg + 1] - w->seg_byte_off[seg]) / rb};
    if ((rc = dg_chunk_check_header(sl->buf, len, &x, w->path, off, &meta, err)))
        return rc;
    /* the chunk is zero-padded to a page, so the pages holding meta are within len */
    uint64_t have = oc_io_align_up(meta);
    if (have > len)
        have = len;
    if (have > first &&
        ((rc = grow_buf(p, sl, have, first, err)) ||
         (rc = oc_file_pread(w->f, sl->buf + first, have - first, off + first, err))))
        return rc;
    struct dg_chunk_info ci;
    if ((rc = dg_chunk_check(sl->buf, len, &x, w->path, off, &ci, err)))
        return rc;
    sl->rec_bytes = ci.rec_bytes;
    sl->w = w;
    sl->chunk_at = off;
    sl->seg = seg;
    sl->info = (struct dg_batch_info){.epoch = w->epoch,
                                      .index = w->first + i,
                                      .n_input = ci.n_input,
                                      .n_packed = ci.n_packed,
                                      .n_dc = ci.n_dc,
                                      .n_cpu = ci.n_cpu,
                                      .graph_read_bytes = have,
                                      .n_reads = 1 + (have > first)};
    return OC_OK;
}

/*
 * Lets go of one hold on w (fresh samples: windows are read once); the last
 * drops it and, when a later window is left to plan, hands its struct back
 * to the planner. The loader's thread or the fetch stage's.
 */
static void window_put(struct dg_pipe *p, struct dg_window *w)
{
    if (p->c.reuse)
        return;
    unsigned held = atomic_fetch_sub(&w->refs, 1);
    assert(held > 0); /* one put per hold: the loader's and each loaded slot's */
    if (held != 1)
        return;
    int give_back = w->give_back;
    atomic_fetch_sub(&p->file_bytes, w->file_bytes);
    dg_window_drop(w);
    /* the struct of window k holds window k + 2; closed once cancelled */
    if (give_back)
        (void)oc_queue_push(p->win_free, w);
}

/*
 * Reuse: loads batch order[load_i] of epoch 0 (DiskGNN shuffles its pool of
 * batches every epoch) from the window that holds it; load_k counts run
 * epochs. Windows stay for the run (no holds are counted).
 */
static int load_replayed(struct dg_pipe *p, struct oc_stage *st, struct dg_slot *sl,
                         struct oc_err *err)
{
    uint64_t nb = p->c.builder->tr.nb_epoch, W = p->c.win_batches;
    if (p->load_i == 0)
        oc_sample_batch_order(p->c.seed, p->c.first_epoch + p->load_k, p->load_order, nb);
    uint64_t i = p->load_order[p->load_i];
    assert(i / W < p->n_structs && i % W < p->win[i / W].n_batches);
    int rc = load_chunk(p, &p->win[i / W], i % W, sl, err);
    if (rc == OC_OK)
        rc = oc_stage_push(st, p->loaded_q, sl);
    if (rc == OC_OK && ++p->load_i == nb) {
        p->load_i = 0;
        p->load_k++;
    }
    return rc;
}

/*
 * Loads the plan's next chunk into the free slot item and hands it on; past
 * the plan the slot rests here. After a window's last chunk the window is
 * dropped and its struct goes back to the planner if a window is left.
 */
static int load_next(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct dg_pipe *p = ctx;
    struct dg_slot *sl = item;
    int rc;
    if (p->load_k >= p->sched.n_win)
        return OC_OK;
    if (p->c.reuse)
        return load_replayed(p, st, sl, err);
    if (!p->load_w) { /* the next window, from the planner */
        void *got;
        if ((rc = oc_stage_pop(st, p->win_q, &got)))
            return rc;
        p->load_w = got;
        atomic_init(&p->load_w->refs, 1); /* the loader's, until it has read the last chunk */
        p->load_w->give_back = 0;
    }
    struct dg_window *w = p->load_w;
    if ((rc = load_chunk(p, w, p->load_i, sl, err)))
        return rc;
    atomic_fetch_add(&w->refs, 1); /* the slot's, until released */
    if ((rc = oc_stage_push(st, p->loaded_q, sl)))
        return rc;
    if (++p->load_i < w->n_batches)
        return OC_OK;
    p->load_i = 0;
    p->load_k++;
    p->load_w = NULL; /* its last chunk is read: the file goes once its slots are released */
    w->give_back = p->load_k + 1 < p->sched.n_win;
    window_put(p, w);
    return OC_OK;
}

/* ---- graph loader ------------------------------------------------------------- */

/* Deserializes the record of the chunk in slot item into its blocks. */
static int load_graph(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct dg_pipe *p = ctx;
    struct dg_slot *sl = item;
    uint64_t before = batch_bytes(&sl->batch);
    int bad = oc_sample_batch_deserialize(sl->buf + OC_PLAN_CHUNK_HEADER, sl->rec_bytes,
                                          p->s->n_nodes, &sl->batch, err);
    atomic_fetch_add(&p->held, batch_bytes(&sl->batch) - before);
    if (bad || (sl->batch.epoch != sl->info.epoch || sl->batch.batch_index != sl->info.index ||
                sl->batch.n_input != sl->info.n_input)) {
        if (!bad)
            OC_ERR(err, OC_ERR_FORMAT,
                   "record of batch %" PRIu64 " does not match its chunk header", sl->info.index);
        return oc_err_prefix(err, "store diskgnn: window of epoch %" PRIu64 ", batch %" PRIu64,
                             sl->info.epoch, sl->info.index);
    }
    sl->handed = 0;
    sl->handed_ids = NULL;
    return oc_stage_push(st, p->ready_q, sl);
}

/* ---- trainer side ------------------------------------------------------------- */

int dg_pipe_next(struct dg_pipe *p, struct dg_slot **slot, struct oc_err *err)
{
    void *item;
    if (oc_queue_pop(p->ready_q, &item) != OC_OK) /* closed: the pipeline was cancelled */
        return oc_pipeline_status(p->p, err);
    *slot = item;
    return OC_OK;
}

void dg_pipe_release(struct dg_pipe *p, struct dg_slot *slot)
{
    struct dg_window *w = slot->w;
    slot->w = NULL;
    if (w)
        window_put(p, w);
    /* it has room: it holds at most the n_slots chunk buffers; closed once cancelled */
    (void)oc_queue_push(p->free_q, slot);
}

uint64_t dg_pipe_stats(const struct dg_pipe *p, struct oc_store_stats *out)
{
    out->plan_sample_us += atomic_load(&p->sample_us);
    out->plan_pack_us += atomic_load(&p->pack_us);
    out->plan_read_bytes = atomic_load(&p->pack_read_bytes);
    out->plan_write_bytes = atomic_load(&p->pack_write_bytes);
    out->plan_file_bytes = atomic_load(&p->file_bytes);
    out->plan_file_peak_bytes = atomic_load(&p->file_peak_bytes);
    for (int i = 0; i < DG_STAGE_COUNT; i++)
        out->stage_busy_us[i] = p->stages[i] ? (uint64_t)(oc_stage_busy_s(p->stages[i]) * 1e6) : 0;
    out->stage_busy_us[DG_STAGE_ASSEMBLE] = atomic_load(&p->assemble_us);
    /* the assembler's batch reader holds its bounce buffer and request arrays */
    return sizeof(*p) + p->n_structs * sizeof(*p->win) + atomic_load(&p->held) + p->c.row_bounce +
           p->c.row_run * (uint64_t)oc_io_batch_request_bytes();
}

/* ---- start / stop ------------------------------------------------------------- */

/* As errors name them ("diskgnn feature loader stage: <file>: ..."). */
static const char *const stage_names[DG_STAGE_COUNT] = {
    "diskgnn feature loader", "diskgnn graph loader", NULL /* in the fetch stage */,
    "diskgnn planner"};

/* The queues and stages on p->p (the planner only when a later window is to be packed). */
static int add_stages(struct dg_pipe *p, int planner, struct oc_err *err)
{
    struct oc_pipeline *pl = p->p;
    int rc;
    if ((rc = oc_pipeline_queue(pl, p->c.n_slots, &p->free_q, err)) ||
        (rc = oc_pipeline_queue(pl, DG_QUEUE_DEPTH, &p->loaded_q, err)) ||
        (rc = oc_pipeline_queue(pl, p->c.n_slots, &p->ready_q, err)) ||
        (rc = oc_pipeline_queue(pl, 1, &p->win_q, err)) ||
        (rc = oc_pipeline_queue(pl, 1, &p->win_free, err)))
        return rc;
    struct oc_queue *in[DG_STAGE_COUNT] = {p->free_q, p->loaded_q, NULL, p->win_free};
    oc_stage_fn fn[DG_STAGE_COUNT] = {load_next, load_graph, NULL, plan_window};
    for (int i = 0; i < (planner ? DG_STAGE_COUNT : DG_STAGE_PLAN); i++)
        if (fn[i] &&
            (rc = oc_pipeline_stage(pl, stage_names[i], 1, in[i], fn[i], p, &p->stages[i], err)))
            return rc;
    return OC_OK;
}

int dg_pipe_start(const struct dg_pipe_config *c, struct dg_pipe **out, struct oc_err *err)
{
    struct dg_pipe *p = oc_calloc(1, sizeof(*p), "store diskgnn: pipeline", err);
    int rc;
    *out = p; /* also on failure: its stages may have started (dg_pipe_stop after the join) */
    if (!p)
        return err->status;
    p->c = *c;
    if (p->c.n_slots < 1 || p->c.n_slots > DG_N_SLOTS)
        p->c.n_slots = DG_N_SLOTS;
    p->s = c->s;
    p->n_structs = c->reuse ? c->n_ws : 2;
    if (!(p->win = oc_calloc(p->n_structs, sizeof(*p->win), "store diskgnn: windows", err)))
        return err->status;
    uint64_t file_bytes = 0;
    for (uint64_t k = 0; k < c->n_ws && k < p->n_structs; k++) {
        p->win[k] = c->ws[k];
        memset(&c->ws[k], 0, sizeof(c->ws[k]));
        file_bytes += p->win[k].file_bytes;
    }
    p->load_w = &p->win[0];
    atomic_init(&p->win[0].refs, 1); /* the loader's (load_next takes later windows so) */
    p->win[0].give_back = 0;
    uint64_t nb = c->builder->tr.nb_epoch;
    pl_windows_init(&p->sched, nb, c->win_batches, c->head, c->first_epoch, c->n_epochs, c->reuse);
    p->c.win_batches = p->sched.win;
    assert(!c->reuse || c->n_ws == p->sched.wpe);
    assert(!c->head || (!c->reuse && c->head < nb && c->n_epochs > c->first_epoch));
    p->load_k = 0;
    p->plan_k = 1;
    atomic_init(&p->file_bytes, file_bytes);
    atomic_init(&p->file_peak_bytes, file_bytes);
    atomic_init(&p->sample_us, 0);
    atomic_init(&p->pack_us, 0);
    atomic_init(&p->pack_read_bytes, 0);
    atomic_init(&p->pack_write_bytes, 0);
    atomic_init(&p->held, 0);
    atomic_init(&p->assemble_us, 0);
    for (unsigned i = 0; i < p->c.n_slots; i++)
        oc_sample_batch_init(&p->slots[i].batch);
    int planner = !c->reuse && p->sched.n_win > 1;
    if (c->reuse && !(p->load_order = oc_alloc((nb ? nb : 1) * sizeof(uint64_t),
                                               "store diskgnn: batch order", err)))
        return err->status;
    p->p = c->pipeline;
    if ((rc = oc_io_batch_new(DG_ROW_DEPTH, p->c.row_bounce, &p->io, err)) ||
        (rc = oc_io_batch_reserve(p->io, p->c.row_run, err)))
        return rc;
    for (unsigned i = 0; i < p->c.n_slots; i++)
        if ((rc = grow_buf(p, &p->slots[i], c->slot_bytes, 0, err)))
            return rc;
    if (planner)
        c->builder->cancel = p->p; /* the builder is the planner's from here on */
    if ((rc = add_stages(p, planner, err)) || (rc = oc_pipeline_start(p->p, err)))
        return rc;
    /* From here on nothing fails: the stages may be running. A push refused because another
       stage of a shared pipeline failed meanwhile leaves that error for dg_pipe_next. */
    for (unsigned i = 0; i < p->c.n_slots; i++)
        (void)oc_queue_push(p->free_q, &p->slots[i]);
    if (planner)
        (void)oc_queue_push(p->win_free, &p->win[1]);
    return OC_OK;
}

void dg_pipe_stop(struct dg_pipe *p)
{
    if (!p)
        return;
    /* fresh samples: win[0..1] (one the planner packed may still be on win_q); reuse: all */
    for (uint64_t i = 0; p->win && i < p->n_structs; i++)
        dg_window_drop(&p->win[i]);
    oc_free(p->win);
    oc_io_batch_free(p->io);
    for (unsigned i = 0; i < p->c.n_slots; i++) {
        oc_free(p->slots[i].buf);
        oc_sample_batch_deinit(&p->slots[i].batch);
    }
    oc_free(p->load_order);
    oc_free(p->inv);
    oc_free(p);
}
