/*
 * ginex.c — the `ginex` strategy (Ginex, VLDB 2022): a superbatch
 * inspector-executor with a Belady-optimal feature cache. The inspector
 * (ginex_inspect.c, a pipeline stage) samples the next S training batches
 * ahead, writes them under the plan directory and precomputes the cache's
 * changesets (ginex_plan.c); the executor, here, gathers each training batch
 * from the cache or the disk (io_uring, same-page merging) and then applies
 * that batch's changeset by copying the inserted rows from the gathered
 * output into the evicted slots: no extra read.
 *
 * Place in the data flow: store. The batch pipeline's fetch stage calls
 * oc_store_load_batch(epoch, batch) (the batch read back from the superbatch
 * file the inspector wrote, so it is sampled once) and then
 * oc_store_gather_batch(epoch, batch) ──► executor, following plan k while
 * the inspector makes plan k+1; oc_store_gather (evaluation) reads through
 * the cache without changing it.
 * Thread-safety: the executor (cache, map, batch reader) belongs to the
 * store's thread; row copies run on the pool, each task its own output rows;
 * plans come from the inspector through its queues.
 * Ownership: cache rows, slot ids, map, scratch, the static bitmap and the
 * inspector are the store's.
 *
 *   one training batch t of plan k (iteration i = t - first of k):
 *
 *   ids ──► map ──► hit: slot ─────────────┐   (1) copy hits out of the cache
 *            └───► miss: read into out[j] ─┤   (2) changeset i: slot s drops its row,
 *                                          │       takes out[pos] as stored (f16: the
 *                                          │       half row before widening)
 *                                          └── (3) widen f16 misses in place
 *
 *   superbatch boundary: plan k goes back to the inspector (to be filled
 *   with the superbatch after k+1), plan k+1 is taken (waiting if the
 *   inspector is behind), its warm-up rows (only while the cache has empty
 *   slots) are read into their slots. At open the executor waits for plan 0
 *   and reads its warm-up rows (not counted in the stats, as `static` does
 *   not count filling its cache).
 *
 * Calls out of plan order (a batch other than the next planned one) are
 * served like evaluation reads, without the plan. A gather whose ids differ
 * from the inspected ones stays correct (every hit is a map lookup; a change
 * whose position was not a miss is skipped), only the plan stops fitting.
 *
 * Memory (cfg->mem_bytes; 0 = no limit, every row may be cached). R = the
 * rows of one batch: what train measured on its first batches plus its margin
 * (cfg->batch_rows; store_budget_rows), else the fanout bound. What is sized
 * from R is an estimate: the arrays grow through the accountant, so a batch
 * larger than R still runs while the budget can give it, and is OC_ERR_BUDGET
 * naming the consumer when it cannot.
 *   executor   the batch reader (2 MiB bounce, request arrays for R rows),
 *              one batch record read back and its changeset, the static
 *              comparison's bitmap (1 bit per node)
 *   inspector  gx_inspector_fixed_bytes (sampler, one batch, record
 *              buffer, writer, the planner's batch of entries and its
 *              per-node next-use array, the spills' write buffers).
 *              With a plan directory the superbatch's trace, next uses and
 *              changesets are spilled to files there: no RAM per access; S
 *              is cfg->superbatch, else an epoch (at most GX_LONG_SUPERBATCH
 *              batches), and accesses are bounded by a quarter of the disk's
 *              free space. Without one they are in RAM at
 *              GX_BYTES_PER_ACCESS per access: batches are estimated at the
 *              first batch's input rows (sampled at open) plus a quarter, at
 *              most R; with cfg->superbatch = S: S estimated batches; with 0:
 *              at most 16 of them and at most a quarter of what the two lines
 *              above leave, and at least one batch of R. The inspector cuts a
 *              superbatch short where its accesses would pass that (a
 *              superbatch's first batch always goes in)
 *   cache      the rest, at row bytes + GX_BYTES_PER_SLOT per row
 * A budget below the first two lines (plus, in RAM, one batch of accesses, S
 * batches when S is given) is OC_ERR_BUDGET naming how much is needed.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "store/ginex/ginex_int.h"

#define GX_LOAD_ROWS 4096u /* warm-up rows queued per batch run, at most */

struct ginex_store {
    struct store_disk disk;
    uint64_t cap;      /* C, rows */
    uint8_t *rows;     /* C x row_bytes, as stored */
    uint64_t *slot_id; /* C: id in the slot, or GX_EMPTY */
    uint64_t n_cached;
    struct gx_hash map; /* id -> slot */
    uint32_t *slots;    /* per gather: slot of each row, or GX_NONE (a miss) */
    uint64_t cap_slots;
    struct gx_change *chg; /* one batch's changeset, read from its plan */
    uint64_t cap_chg;
    uint8_t *static_bits; /* the degree-ranked cache of C rows, for its miss count */
    uint64_t static_bytes;
    uint64_t S, max_acc, nb, t0, t_end, t_next;
    uint64_t load_rows; /* warm-up rows per batch run: min(GX_LOAD_ROWS, rows of one batch) */
    struct gx_inspector *insp;
    struct gx_plan *cur; /* the plan being executed */
    int failed;          /* the inspector failed: training gathers repeat its error */
    struct oc_err fail;
    uint64_t n_unplanned, n_diverged;
    /* the loader (ginex_load_batch): the batches the inspector sampled, read back */
    struct oc_file *sb_file;       /* the current plan's superbatch file, or NULL */
    const struct gx_plan *sb_plan; /* the plan sb_file belongs to */
    uint8_t *rec;                  /* one batch's record */
    uint64_t cap_rec;
    /* without a superbatch file (it could not be written): a sampler of its own */
    const struct oc_graph *graph;
    struct oc_sample_opts so;
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    struct oc_sampler *fb_sampler;
    struct oc_sample_epoch fb_ep;
    uint64_t fb_epoch;     /* the epoch fb_ep is shuffled for (UINT64_MAX: none) */
    uint64_t n_fb_sampled; /* batches sampled a second time that way */
};

/* ---- the cache ------------------------------------------------------------------ */

static inline uint8_t *slot_row(const struct oc_store *s, const struct ginex_store *g, uint64_t k)
{
    return g->rows + k * s->row_bytes;
}

/* Empties slot k (its row leaves the map). */
static void slot_evict(struct ginex_store *g, uint32_t k)
{
    if (g->slot_id[k] == GX_EMPTY)
        return;
    gx_hash_del(&g->map, g->slot_id, g->slot_id[k]);
    g->slot_id[k] = GX_EMPTY;
    g->n_cached--;
}

static void slot_fill(struct ginex_store *g, uint32_t k, uint64_t id)
{
    g->slot_id[k] = id;
    gx_hash_put(&g->map, g->slot_id, k);
    g->n_cached++;
}

/*
 * Reads plan p's warm-up rows into their slots, GX_LOAD_ROWS per run (pages
 * merged; as many as one gather's, so the batch reader's arrays stay within
 * the budget). count = 0 at open: those reads are not in the stats, as `static`
 * does not count filling its cache.
 */
static int warm_up(struct oc_store *s, struct ginex_store *g, const struct gx_plan *p, int count,
                   struct oc_err *err)
{
    int rc = OC_OK;
    for (uint64_t w0 = 0; w0 < p->n_warm && rc == OC_OK; w0 += g->load_rows) {
        uint64_t w1 = p->n_warm - w0 < g->load_rows ? p->n_warm : w0 + g->load_rows;
        for (uint64_t w = w0; w < w1 && rc == OC_OK; w++) {
            uint32_t k = p->warm_slot[w];
            slot_evict(g, k);
            if (gx_hash_get(&g->map, g->slot_id, p->warm_id[w]) != GX_NONE)
                continue; /* already cached elsewhere: the plan does not fit this cache */
            rc = oc_io_batch_add(g->disk.batch, g->disk.f, store_row_off(s, p->warm_id[w]),
                                 s->row_bytes, slot_row(s, g, k), err);
        }
        if (rc) {
            store_disk_discard(&g->disk);
            break;
        }
        rc = count ? store_disk_run(s, &g->disk, err) : oc_io_batch_run(g->disk.batch, err);
        for (uint64_t w = w0; w < w1 && rc == OC_OK; w++)
            if (gx_hash_get(&g->map, g->slot_id, p->warm_id[w]) == GX_NONE)
                slot_fill(g, p->warm_slot[w], p->warm_id[w]);
    }
    if (rc)
        oc_err_prefix(err, "store ginex: filling the cache");
    return rc;
}

/* ---- gathers --------------------------------------------------------------------- */

struct copy_job {
    const struct oc_store *s;
    const struct ginex_store *g;
    float *out;
    int hits, widen; /* which rows this pass handles */
};

static void copy_rows(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct copy_job *j = ctx;
    const struct oc_store *s = j->s;
    uint64_t dim = s->feat_dim;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t k = j->g->slots[i];
        float *dst = j->out + i * dim;
        if (k != GX_NONE) {
            if (j->hits)
                store_row_to_f32(s->dtype, slot_row(s, j->g, k), dim, dst);
        } else if (j->widen && s->dtype == OC_DTYPE_F16) {
            store_row_widen_inplace(dst, dim);
        }
    }
}

/* Changeset `it` of plan p: inserted rows, as read (f16: the upper half), into their slots. */
static int apply_changes(struct oc_store *s, struct ginex_store *g, struct gx_plan *p, uint64_t it,
                         const uint64_t *ids, uint64_t n, const float *out, struct oc_err *err)
{
    uint64_t n_chg = 0;
    if (p->max_chg > g->cap_chg) {
        struct gx_change *c =
            oc_realloc(g->chg, p->max_chg * sizeof(*c), "store ginex: changeset buffer", err);
        if (!c)
            return err ? err->status : OC_ERR_NOMEM;
        g->chg = c;
        g->cap_chg = p->max_chg;
    }
    int rc = gx_plan_changes(p, it, g->chg, &n_chg, err);
    if (rc)
        return oc_err_prefix(err, "store ginex: changeset of batch %" PRIu64, p->first_iter + it);
    for (uint64_t c = 0; c < n_chg; c++) {
        uint32_t pos = g->chg[c].pos, k = g->chg[c].slot;
        if (pos >= n || k >= g->cap || g->slots[pos] != GX_NONE ||
            gx_hash_get(&g->map, g->slot_id, ids[pos]) != GX_NONE) {
            g->n_diverged++;
            continue;
        }
        const uint8_t *src = (const uint8_t *)(out + (uint64_t)pos * s->feat_dim);
        if (s->dtype == OC_DTYPE_F16)
            src += s->row_bytes;
        slot_evict(g, k);
        memcpy(slot_row(s, g, k), src, s->row_bytes);
        slot_fill(g, k, ids[pos]);
    }
    return OC_OK;
}

/* Gathers ids through the cache; with a plan, applies its changeset `it` afterwards. */
static int exec_gather(struct oc_store *s, struct ginex_store *g, const uint64_t *ids, uint64_t n,
                       float *out, struct gx_plan *p, uint64_t it, struct oc_err *err)
{
    uint64_t misses = 0;
    int rc;

    if (n > g->cap_slots) {
        uint64_t cap = n > 2 * g->cap_slots ? n : 2 * g->cap_slots;
        uint32_t *q = oc_realloc(g->slots, cap * sizeof(uint32_t), "store ginex: slots", err);
        if (!q)
            return err ? err->status : OC_ERR_NOMEM;
        g->slots = q;
        g->cap_slots = cap;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = gx_hash_get(&g->map, g->slot_id, ids[i]);
        g->slots[i] = k;
        if (k != GX_NONE)
            continue;
        misses++;
        if ((rc = store_disk_queue(s, &g->disk, ids[i], out + i * s->feat_dim, err))) {
            store_disk_discard(&g->disk);
            return rc;
        }
    }
    if (misses && (rc = store_disk_run(s, &g->disk, err)))
        return rc;
    int changes = p && p->chg_off[it + 1] > p->chg_off[it];
    /* Hits leave the cache before a change may overwrite their slot; f16 misses are widened
       after the changes copied their stored bytes. Without changes, one pass does both. */
    struct copy_job j = {s, g, out, 1, !changes};
    if ((rc = store_for_rows(s->pool, n, copy_rows, &j, err)))
        return rc;
    if (changes) {
        if ((rc = apply_changes(s, g, p, it, ids, n, out, err)))
            return rc;
        struct copy_job w = {s, g, out, 0, 1};
        if (s->dtype == OC_DTYPE_F16 && misses &&
            (rc = store_for_rows(s->pool, n, copy_rows, &w, err)))
            return rc;
    }
    s->stats.requested_disk_bytes += misses * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += n - misses;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += misses;
    return OC_OK;
}

static int ginex_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                        struct oc_err *err)
{
    return exec_gather(s, s->impl, ids, n, out, NULL, 0, err);
}

/* Moves to the next superbatch's plan: the finished one goes back to the inspector. */
static int next_plan(struct oc_store *s, struct ginex_store *g, struct oc_err *err)
{
    if (g->cur)
        gx_inspector_release(g->insp, g->cur);
    g->cur = NULL;
    int rc = gx_inspector_next(g->insp, &g->cur, err);
    if (rc) {
        g->failed = rc;
        g->fail = *err;
        return rc;
    }
    return warm_up(s, g, g->cur, 1, err);
}

/* The inspector's error, repeated to every later training call. */
static int repeat_failure(const struct ginex_store *g, struct oc_err *err)
{
    if (err)
        *err = g->fail;
    return g->failed;
}

/* Whether iteration t (batch `batch` of its epoch) is the next one the plan expects. */
static int is_next_planned(const struct ginex_store *g, uint64_t batch, uint64_t t)
{
    return g->cur && batch < g->nb && t == g->t_next && t < g->t_end;
}

static int ginex_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                              const uint64_t *ids, uint64_t n, float *out, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    int rc;

    if (g->failed)
        return repeat_failure(g, err);
    uint64_t t = epoch * g->nb + batch;
    if (!is_next_planned(g, batch, t)) {
        if (g->n_unplanned++ == 0)
            oc_log(OC_LOG_WARN,
                   "store ginex: epoch %" PRIu64 " batch %" PRIu64
                   " is not the next planned batch; served without the plan",
                   epoch, batch);
        return exec_gather(s, g, ids, n, out, NULL, 0, err);
    }
    if (t == g->cur->first_iter + g->cur->n_iters && (rc = next_plan(s, g, err)))
        return rc;
    struct gx_plan *p = g->cur;
    uint64_t it = t - p->first_iter;
    if ((rc = exec_gather(s, g, ids, n, out, p, it, err)))
        return rc;
    g->t_next++;
    s->stats.trace_accesses += p->cnt[it].n_acc;
    s->stats.belady_misses += p->cnt[it].n_belady;
    s->stats.lru_misses += p->cnt[it].n_lru;
    s->stats.static_misses += p->cnt[it].n_static;
    return OC_OK;
}

/*
 * Batch t sampled again, exactly as the inspector sampled it, when its
 * superbatch file could not be written or opened (a disk that is full or
 * read-only): counted in sampled_batches.
 */
static int load_by_sampling(struct ginex_store *g, uint64_t epoch, uint64_t batch,
                            struct oc_sample_batch *out, struct oc_err *err)
{
    int rc;
    if (!g->fb_sampler) {
        oc_log(OC_LOG_WARN, "store ginex: without its superbatch files, batches are sampled "
                            "a second time");
        if ((rc = oc_sample_sampler_new(g->graph, &g->so, NULL, &g->fb_sampler, err)) ||
            (rc = oc_sample_epoch_init_plan(&g->fb_ep, g->train_ids, g->n_train, g->batch_size, 0,
                                            &g->so, err)))
            return rc;
        g->fb_epoch = UINT64_MAX;
    }
    if ((rc = gx_sample_batch(g->fb_sampler, &g->fb_ep, &g->fb_epoch, g->so.seed, epoch, batch, out,
                              err)))
        return rc;
    g->n_fb_sampled++;
    return OC_OK;
}

/* Reads batch `it` of plan p from its superbatch file into out. */
static int load_from_file(struct oc_store *s, struct ginex_store *g, const struct gx_plan *p,
                          uint64_t it, uint64_t epoch, uint64_t batch, struct oc_sample_batch *out,
                          struct oc_err *err)
{
    uint8_t lenb[8];
    int rc;
    if ((rc = oc_file_pread(g->sb_file, lenb, 8, p->rec_off[it], err)))
        return rc;
    uint64_t len = oc_get_le64(lenb);
    if ((rc = gx_rec_reserve(&g->rec, &g->cap_rec, len, err)))
        return rc;
    if ((rc = oc_file_pread(g->sb_file, g->rec, (size_t)len, p->rec_off[it] + 8, err)) ||
        (rc = oc_sample_batch_deserialize(g->rec, (size_t)len, s->n_nodes, out, err))) {
        oc_err_prefix(err, "store ginex: %s", p->sb_path);
        return rc;
    }
    if (out->epoch != epoch || out->batch_index != batch)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "store ginex: %s: batch at offset %" PRIu64 " is epoch %" PRIu64
                      " batch %" PRIu64 ", not epoch %" PRIu64 " batch %" PRIu64,
                      p->sb_path, p->rec_off[it], out->epoch, out->batch_index, epoch, batch);
    return OC_OK;
}

/*
 * The next training batch, as the inspector sampled it (Ginex's executor
 * reads back the superbatch the inspector saved): so the batch pipeline
 * samples nothing and every batch is sampled once. Called in plan order,
 * right before that batch's gather, on the same thread.
 */
static int ginex_load_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                            struct oc_sample_batch *out, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    int rc;
    if (g->failed)
        return repeat_failure(g, err);
    uint64_t t = epoch * g->nb + batch;
    if (!is_next_planned(g, batch, t))
        return OC_ERR(err, OC_ERR_ARG,
                      "store ginex: epoch %" PRIu64 " batch %" PRIu64
                      " loaded out of plan order (the next is iteration %" PRIu64 ")",
                      epoch, batch, g->t_next);
    if (t == g->cur->first_iter + g->cur->n_iters && (rc = next_plan(s, g, err)))
        return rc;
    const struct gx_plan *p = g->cur;
    if (g->sb_plan != p) { /* a new superbatch: open its file */
        oc_file_close(g->sb_file, NULL);
        g->sb_file = NULL;
        g->sb_plan = p;
        struct oc_err e;
        if (p->sb_path[0] && oc_file_open(p->sb_path, OC_FILE_READ, &g->sb_file, &e) != OC_OK)
            oc_log(OC_LOG_WARN, "store ginex: cannot read back %s (%s)", p->sb_path, e.msg);
    }
    if (!g->sb_file)
        return load_by_sampling(g, epoch, batch, out, err);
    return load_from_file(s, g, p, t - p->first_iter, epoch, batch, out, err);
}

/* ---- open / stats / free ----------------------------------------------------------- */

/* The bitmap of the C rows `static` (degree hotness) would cache. */
static int static_bitmap(const struct oc_store *s, const struct oc_store_config *cfg,
                         struct ginex_store *g, struct oc_err *err)
{
    struct oc_store_config c = *cfg;
    uint64_t *ids = NULL;
    c.hotness = OC_STORE_HOTNESS_DEGREE;
    g->static_bytes = (s->n_nodes + 7) / 8;
    g->static_bits = oc_calloc(1, (size_t)g->static_bytes, "store ginex: static comparison", err);
    if (!g->static_bits)
        return err ? err->status : OC_ERR_NOMEM;
    int rc = store_hot_select(s, &c, g->cap, 0, &ids, err);
    for (uint64_t k = 0; rc == OC_OK && k < g->cap; k++)
        g->static_bits[ids[k] >> 3] |= (uint8_t)(1u << (ids[k] & 7));
    oc_free(ids);
    return rc;
}

static int ginex_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct ginex_store *g;
    uint64_t nb, t0, t_end, S, max_acc, C;
    int rc;
    if (cfg->reuse_samples)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store %s: --reuse-samples is not supported (it samples every epoch "
                      "ahead of training)",
                      "ginex");

    uint64_t probe = 0, key = 0;
    char dir[4096];
    if ((rc = gx_plan_shape(cfg, &nb, &t0, &t_end, err)))
        return rc;
    dir[0] = '\0';
    if (t_end > t0)
        gx_plan_dir(s, cfg, dir, sizeof(dir), &key);
    if ((t_end > t0 && (rc = gx_probe_rows(cfg, nb, t0, &probe, err))) ||
        (rc = gx_plan_capacity(s, cfg, sizeof(struct ginex_store), t_end - t0, probe, dir, &S,
                               &max_acc, &C, err)))
        return rc;
    g = oc_calloc(1, sizeof(*g), "store ginex", err);
    if (!g)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = g;
    gx_hash_init(&g->map);
    g->S = S;
    g->max_acc = max_acc;
    g->load_rows = store_expected_rows(s, cfg);
    if (g->load_rows > GX_LOAD_ROWS || g->load_rows == 0)
        g->load_rows = GX_LOAD_ROWS;
    g->nb = nb;
    g->t0 = g->t_next = t0;
    g->t_end = t_end;
    g->cap = C;
    g->graph = cfg->graph;
    if (cfg->sample_opts)
        g->so = *cfg->sample_opts;
    g->train_ids = cfg->train_ids;
    g->n_train = cfg->n_train;
    g->batch_size = cfg->batch_size;
    if ((rc = store_disk_open(s, 1, &g->disk, err)))
        return rc;
    if (t_end == t0)
        return OC_OK; /* nothing to plan: evaluation reads go to the disk */
    if ((rc = static_bitmap(s, cfg, g, err)))
        return rc;
    if (C) {
        g->rows = oc_alloc_aligned(C * s->row_bytes, 64, "store ginex: cached rows", err);
        g->slot_id = oc_alloc(C * sizeof(uint64_t), "store ginex: slot ids", err);
        if (!g->rows || !g->slot_id)
            return err ? err->status : OC_ERR_NOMEM;
        for (uint64_t k = 0; k < C; k++)
            g->slot_id[k] = GX_EMPTY;
        if ((rc = gx_hash_alloc(&g->map, C, "store ginex: cache map", err)))
            return rc;
    }
    char c_s[32], m_s[32];
    oc_log(OC_LOG_INFO,
           "store ginex: cache of %" PRIu64 " rows (%s), superbatches of up to %" PRIu64
           " batches and %" PRIu64 " accesses (trace %s), budget %s",
           C, oc_format_size(C * s->row_bytes, c_s, sizeof(c_s)), S, max_acc,
           dir[0] ? "in files under the plan directory" : "in RAM",
           oc_format_size(cfg->mem_bytes, m_s, sizeof(m_s)));
    struct gx_inspect_config ic = {cfg, nb, t0, t_end, S, max_acc, C, g->static_bits, dir, key};
    if ((rc = gx_inspector_new(s, &ic, &g->insp, err)))
        return rc;
    if ((rc = gx_inspector_next(g->insp, &g->cur, err)))
        return rc;
    return warm_up(s, g, g->cur, 0, err);
}

static void ginex_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct ginex_store *g = s->impl;
    out->held_bytes =
        sizeof(*g) + g->cap * (s->row_bytes + sizeof(uint64_t)) + g->map.cap * sizeof(uint32_t) +
        g->cap_slots * sizeof(uint32_t) + g->cap_chg * sizeof(struct gx_change) + g->static_bytes +
        store_disk_held_bytes(&g->disk) + gx_inspector_held_bytes(g->insp) + g->cap_rec;
    /* the inspector's samplings are the batches the pipeline loads; only a second one counts */
    out->sampled_batches = g->n_fb_sampled;
}

static void ginex_free(struct oc_store *s)
{
    struct ginex_store *g = s->impl;
    if (!g)
        return;
    gx_inspector_free(g->insp); /* its stage was joined: plans and bitmap are unused */
    oc_file_close(g->sb_file, NULL);
    oc_free(g->rec);
    oc_sample_sampler_free(g->fb_sampler);
    if (g->fb_ep.orig)
        oc_sample_epoch_deinit(&g->fb_ep);
    store_disk_close(&g->disk);
    oc_free(g->rows);
    oc_free(g->slot_id);
    gx_hash_deinit(&g->map);
    oc_free(g->slots);
    oc_free(g->chg);
    oc_free(g->static_bits);
    oc_free(g);
    s->impl = NULL;
}

/* ---- test knobs ---------------------------------------------------------------------- */

static const struct ginex_store *as_ginex(const struct oc_store *s)
{
    return s && s->strat == &oc_store_ginex ? s->impl : NULL;
}

uint64_t oc_store_ginex_capacity(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? g->cap : 0;
}

uint64_t oc_store_ginex_n_cached(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? g->n_cached : 0;
}

uint64_t oc_store_ginex_superbatch(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? g->S : 0;
}

const char *oc_store_ginex_plan_dir(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? gx_inspector_dir(g->insp) : "";
}

void oc_store_ginex_plan_counts(const struct oc_store *s, uint64_t *reused, uint64_t *sampled)
{
    const struct ginex_store *g = as_ginex(s);
    gx_inspector_counts(g ? g->insp : NULL, reused, sampled);
}

int oc_store_ginex_budget_for(const struct oc_store_config *cfg, uint64_t rows, uint64_t *bytes,
                              struct oc_err *err)
{
    struct oc_store s;
    struct oc_store_config c = *cfg;
    uint64_t nb, t0, t_end, S, acc, C;
    int rc;

    memset(&s, 0, sizeof(s));
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    s.n_nodes = m->n_nodes;
    s.feat_dim = m->feat_dim;
    s.row_bytes = (size_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
    uint64_t probe = 0;
    if ((rc = gx_plan_shape(cfg, &nb, &t0, &t_end, err)) ||
        (t_end > t0 && (rc = gx_probe_rows(cfg, nb, t0, &probe, err))))
        return rc;
    /* C grows with the budget: the smallest budget reaching `rows` by bisection. */
    uint64_t lo = 1, hi = 1ull << 50;
    while (lo < hi) {
        c.mem_bytes = lo + (hi - lo) / 2;
        if (gx_plan_capacity(&s, &c, sizeof(struct ginex_store), t_end - t0, probe,
                             cfg->plan_dir ? cfg->plan_dir : "", &S, &acc, &C, NULL) == OC_OK &&
            C >= rows)
            hi = c.mem_bytes;
        else
            lo = c.mem_bytes + 1;
    }
    *bytes = lo;
    return OC_OK;
}

uint64_t oc_store_ginex_max_accesses(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? g->max_acc : 0;
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt ginex_opts[] = {
    {"superbatch", OC_STORE_OPT_U32, "S", NULL,
     "batches sampled ahead per superbatch (default: an epoch, at most 1024, with its plan "
     "directory writable; else up to 16 that fit a quarter of the budget)",
     offsetof(struct oc_store_config, superbatch), 1, 0, 0},
};

static double ginex_miss(const struct oc_store_stats *s, uint64_t misses)
{
    return s->trace_accesses ? (double)misses / (double)s->trace_accesses : 0.0;
}
static double ginex_miss_belady(const struct oc_store_stats *s)
{
    return ginex_miss(s, s->belady_misses);
}
static double ginex_miss_lru(const struct oc_store_stats *s)
{
    return ginex_miss(s, s->lru_misses);
}
static double ginex_miss_static(const struct oc_store_stats *s)
{
    return ginex_miss(s, s->static_misses);
}

/* Its cache's miss ratio next to LRU's and the static cache's on the same trace. */
static const struct oc_store_stat ginex_stat_table[] = {
    {"miss_ratio", "belady", "Miss", OC_STORE_STAT_RATIO, ginex_miss_belady},
    {"miss_ratio", "lru", "LRU miss", OC_STORE_STAT_RATIO, ginex_miss_lru},
    {"miss_ratio", "static", "Static miss", OC_STORE_STAT_RATIO, ginex_miss_static},
};

const struct store_strategy oc_store_ginex = {
    .name = "ginex",
    .summary = "superbatch inspector-executor: batches sampled ahead, Belady-optimal feature "
               "cache driven by precomputed changesets, misses batched through io_uring (Ginex)",
    .open = ginex_open,
    .gather = ginex_gather,
    .gather_batch = ginex_gather_batch,
    .load_batch = ginex_load_batch,
    .stats = ginex_stats,
    .free = ginex_free,
    .opts = ginex_opts,
    .n_opts = sizeof(ginex_opts) / sizeof(ginex_opts[0]),
    .stat_table = ginex_stat_table,
    .n_stats = sizeof(ginex_stat_table) / sizeof(ginex_stat_table[0]),
    .writes_plan = 1,
};
