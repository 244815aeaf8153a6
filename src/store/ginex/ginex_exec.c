/*
 * ginex_exec.c — the executor of the `ginex` strategy: the Belady cache's
 * slots and map, the warm-up reads, and the gathers. A training batch t of
 * plan k is looked up in the map (hits: their slots; misses: queued reads
 * into the output rows), its changeset is applied to the map (slot s drops
 * its row and takes a miss), the misses are read (io_uring, same-page
 * merging), and then the rows move: hits out of their slots, the inserted
 * misses from the output into theirs (no extra read), f16 misses widened.
 *
 *   lane A, batch t:   [map t] ── reads t ──────────── [copy t]
 *   lane B, batch t+1:          [map t+1] ── reads t+1 ─────────── [copy t+1]
 *
 * Gather lanes (s->n_lanes, each with its reader, slots and changeset): the
 * map's turn (t_next) and the copy turn (t_copy) pass in plan order, so
 * batch t+1 looks up the map as batch t's changes left it and copies after
 * batch t has, while the reads of both are in flight at once. A slot batch
 * t+1 evicts is overwritten only in its copy turn, after batch t copied its
 * hits out; a row batch t inserts is in its slot before batch t+1 copies it.
 * A gather outside the plan (evaluation, a batch out of order) waits until
 * every planned batch before it has copied and runs alone (excl).
 *
 * Giving memory back (a budgeted store; gx_give is the policy of its
 * give-back, core's oc_giveback): a give-back stops new turns (yielding), waits until no gather
 * is between its map's turn and its copy turn (at most GX_YIELD_WAIT_S),
 * then evicts the last live slots from the map and returns their pages.
 * Changes and warm-up rows for slots past `live` are skipped, so those
 * stay empty; a planned gather reserves memory for them when the budget has
 * room again (outside the turns) and makes them live in its map's turn, to
 * be filled by later changes. Hits and misses change, never the rows: the
 * Belady plan's own miss counts stay as planned.
 *
 * Place in the data flow: store (ginex). ginex.c opens the store and loads
 * the batches; the pipeline's fetch stage or its gather lanes call
 * gx_exec_gather_batch, evaluation calls gx_exec_gather.
 * Thread-safety: the turns are kept under g->mu; whoever holds the map's
 * turn alone touches the map, slot ids and plan cursor; whoever holds the
 * copy turn alone touches cached rows; a lane's reader, slots and changeset
 * are its own. Errors wake every wait (gx_fail), and so does a cancel of the
 * store's pipeline (gx_on_cancel), whose error a waiting call returns.
 * Ownership: everything here belongs to the ginex_store (ginex.c frees it).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "store/ginex/ginex_int.h"

#define GX_YIELD_WAIT_S 2 /* a give-back waits this long for the executor */

/* ---- the cache ------------------------------------------------------------------ */

static inline uint8_t *slot_row(const struct ginex_store *g, uint64_t k)
{
    return g->cache.rows + k * g->cache.row_bytes;
}

/*
 * Reads plan p's warm-up rows into their slots through lane d's reader,
 * GX_LOAD_ROWS per run (pages merged; as many as one gather's, so the batch
 * reader's arrays stay within the budget). count = 0 at open: those reads
 * are not in the stats, as `static` does not count filling its cache.
 */
int gx_warm_up(struct oc_store *s, struct ginex_store *g, struct store_disk *d,
               const struct pl_sb_plan *p, int count, struct oc_err *err)
{
    int rc = OC_OK;
    for (uint64_t w0 = 0; w0 < p->b.n_warm && rc == OC_OK; w0 += g->load_rows) {
        uint64_t w1 = p->b.n_warm - w0 < g->load_rows ? p->b.n_warm : w0 + g->load_rows;
        uint64_t live = g->cache.n_live;
        for (uint64_t w = w0; w < w1 && rc == OC_OK; w++) {
            uint32_t k = p->b.warm_slot[w];
            if (k >= live)
                continue; /* given back: stays empty */
            store_cache_unbind(&g->cache, k);
            if (store_cache_find(&g->cache, p->b.warm_id[w]) != STORE_NO_SLOT)
                continue; /* already cached elsewhere: the plan does not fit this cache */
            rc = oc_io_batch_add(d->batch, d->f, store_row_off(s, p->b.warm_id[w]), s->row_bytes,
                                 slot_row(g, k), err);
        }
        if (rc) {
            store_disk_discard(d);
            break;
        }
        rc = count ? store_disk_run(s, d, err) : oc_io_batch_run(d->batch, err);
        for (uint64_t w = w0; w < w1 && rc == OC_OK; w++)
            if (p->b.warm_slot[w] < live &&
                store_cache_find(&g->cache, p->b.warm_id[w]) == STORE_NO_SLOT)
                store_cache_bind(&g->cache, p->b.warm_slot[w], p->b.warm_id[w]);
    }
    if (rc)
        oc_err_prefix(err, "store ginex: filling the cache");
    return rc;
}

/* ---- giving memory back --------------------------------------------------------- */

uint64_t gx_give(void *owner, uint64_t goal, uint64_t *released)
{
    struct ginex_store *g = owner;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += GX_YIELD_WAIT_S;
    gx_lock(g);
    g->yielding++;
    while ((g->in_meta || g->excl || g->t_copy != g->t_next) && !g->failed && !g->cancelled)
        if (gx_timedwait(g, &until) == ETIMEDOUT)
            break;
    uint64_t got = 0, rb = g->cache.row_bytes, live = g->cache.n_live;
    if (!g->in_meta && !g->excl && g->t_copy == g->t_next && live) {
        uint64_t rows = (goal + rb - 1) / rb;
        got = store_cache_give_top(&g->cache, rows < live ? live - rows : 0) * rb;
    }
    g->yielding--;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
    *released = 0; /* the give-back releases got */
    return got;
}

/*
 * Rows of given-back slots to take back now: while the budget has room for
 * them (a margin left), reserved here, outside the turns (0: none).
 */
static uint64_t take_back_reserve(const struct ginex_store *g)
{
    uint64_t gone = g->cache.n - g->cache.n_live, rb = g->cache.row_bytes;
    if (!gone || !g->gb.registered)
        return 0;
    uint64_t rows = oc_giveback_take_rows(&g->gb, gone, 0, rb);
    struct oc_err local;
    return rows && oc_giveback_reserve(&g->gb, rows * rb, "store ginex: cached rows taken back",
                                       &local) == OC_OK
               ? rows
               : 0;
}

/* In the map's turn: `rows` reserved slots live again (empty: later changes fill them). */
static void take_back(struct ginex_store *g, uint64_t rows)
{
    uint64_t live = g->cache.n_live, gone = g->cache.n - live, rb = g->cache.row_bytes;
    if (rows > gone) { /* taken back meanwhile by another lane's reservation */
        oc_mem_release((rows - gone) * rb);
        rows = gone;
    }
    if (!rows)
        return;
    g->cache.n_live = live + rows;
    store_cache_log_took("store ginex", rows, gone - rows, rb);
}

/* Logs the give-backs since the last log (any gathering thread; under g->mu). */
static void log_yields(struct ginex_store *g)
{
    OC_ASSERT_HELD(&g->mu_held);
    if (!oc_giveback_unlogged(&g->gb))
        return;
    store_cache_log_gave("store ginex", g->cache.n - g->cache.n_live, g->cache.row_bytes,
                         "the plan skips them");
}

/* ---- the executor: turns ------------------------------------------------------- */

/* Records the first failure (training calls repeat it from then on) and wakes every wait. */
static void gx_fail(struct ginex_store *g, int rc, const struct oc_err *err)
{
    gx_lock(g);
    if (!g->failed) {
        g->failed = rc;
        if (err)
            g->fail = *err;
        else
            OC_ERR(&g->fail, rc, "store ginex: failed");
    }
    g->in_meta = 0;
    g->popping = 0;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
}

/* The pipeline's cancel hook: wakes every wait, which then returns OC_ERR_CANCELLED. */
void gx_on_cancel(void *ctx)
{
    struct ginex_store *g = ctx;
    gx_lock(g);
    g->cancelled = 1;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
}

/* Under g->mu: why a wait must end early (the recorded failure, a cancel), else OC_OK. */
int gx_stop(const struct ginex_store *g, struct oc_err *err)
{
    OC_ASSERT_HELD(&g->mu_held);
    if (g->failed) {
        if (err)
            *err = g->fail;
        return g->failed;
    }
    if (g->cancelled) {
        int rc = oc_pipeline_status(g->stages, err);
        return rc ? rc : OC_ERR(err, OC_ERR_CANCELLED, "store ginex: cancelled");
    }
    return OC_OK;
}

/* Waits (under g->mu) until every planned iteration before t has copied its rows. */
static int wait_copied(struct ginex_store *g, uint64_t t, struct oc_err *err)
{
    int rc;
    OC_ASSERT(g->t_copy <= t); /* copy turns pass in plan order, never beyond a waiter's */
    while ((rc = gx_stop(g, err)) == OC_OK && g->t_copy != t)
        gx_wait(g);
    return rc;
}

/* Hands the copy turn on after iteration t (or the unplanned gather) is done. */
static void pass_copy(struct ginex_store *g)
{
    gx_lock(g);
    g->t_copy++;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
}

/* ---- the executor: one gather -------------------------------------------------- */

/*
 * Slots of ids into lane->disk.slots, misses queued into their output rows
 * (or, with a taken hyperbatch group h holding the row, copied from it as a
 * read would have put it); *misses counted.
 */
static int look_up(struct oc_store *s, struct ginex_store *g, struct gx_lane *lane,
                   const uint64_t *ids, uint64_t n, float *out, const struct store_hyper_batch *h,
                   uint64_t *misses, struct oc_err *err)
{
    int rc;
    *misses = 0;
    if ((rc = store_disk_reserve(&lane->disk, n, err)))
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = store_cache_find(&g->cache, ids[i]);
        lane->disk.slots[i] = k;
        if (k != PL_NONE)
            continue;
        ++*misses;
        const void *staged = h ? store_hyper_row(h, store_row_of(s, ids[i])) : NULL;
        if (staged) {
            memcpy(store_stored_dst(s, out + i * s->feat_dim), staged, s->row_bytes);
            continue;
        }
        if ((rc = store_disk_queue(s, &lane->disk, ids[i], out + i * s->feat_dim, err))) {
            store_disk_discard(&lane->disk);
            return rc;
        }
    }
    return OC_OK;
}

/*
 * Changeset `it` of plan p applied to the map: each inserted row (a miss at
 * position pos) takes its slot, whose row leaves. Only the map changes here;
 * copy_out moves the rows once the batches before have copied theirs. A change
 * that does not fit (its row a hit, or cached already) is skipped.
 */
static int plan_changes(struct ginex_store *g, struct gx_lane *lane, struct pl_sb_plan *p,
                        uint64_t it, const uint64_t *ids, uint64_t n, struct oc_err *err)
{
    lane->n_chg = 0;
    int rc = oc_grow_by(&lane->chg, &lane->cap_chg, p->b.max_chg, sizeof(*lane->chg), OC_GROW_EXACT,
                        "store ginex: changeset buffer", err);
    if (rc)
        return rc;
    rc = pl_plan_changes(&p->b, it, lane->chg, &lane->n_chg, err);
    if (rc)
        return oc_err_prefix(err, "store ginex: changeset of batch %" PRIu64, p->b.first_iter + it);
    uint64_t live = g->cache.n_live, cap = g->cache.n;
    for (uint64_t c = 0; c < lane->n_chg; c++) {
        uint32_t pos = lane->chg[c].pos, k = lane->chg[c].slot;
        if (k < cap && k >= live) { /* given back: stays empty */
            lane->chg[c].slot = PL_NONE;
            continue;
        }
        if (pos >= n || k >= cap || lane->disk.slots[pos] != PL_NONE ||
            store_cache_find(&g->cache, ids[pos]) != STORE_NO_SLOT) {
            g->n_diverged++;
            lane->chg[c].slot = PL_NONE;
            continue;
        }
        store_cache_unbind(&g->cache, k);
        store_cache_bind(&g->cache, k, ids[pos]);
    }
    return OC_OK;
}

/*
 * The rows of a gather whose misses were read, in the copy turn: hits out of
 * their slots, then the lane's changes into theirs (the inserted rows as read:
 * f16 the upper half), then f16 misses widened in place. Hits leave the cache
 * before a change may overwrite their slot; without changes one pass does both.
 */
static int copy_out(struct oc_store *s, struct ginex_store *g, struct gx_lane *lane, uint64_t n,
                    float *out, uint64_t misses, struct oc_err *err)
{
    int rc;
    int changes = lane->n_chg > 0;
    _Static_assert(PL_NONE == STORE_NO_SLOT, "a lane's miss is the slot copy's miss");
    if ((rc = store_slots_copy_part(s, g->cache.rows, lane->disk.slots, n, out,
                                    changes ? STORE_SLOTS_HITS : STORE_SLOTS_ALL, err)))
        return rc;
    if (!changes)
        return OC_OK;
    for (uint64_t c = 0; c < lane->n_chg; c++) {
        uint32_t k = lane->chg[c].slot;
        if (k == PL_NONE)
            continue;
        const uint8_t *src = (const uint8_t *)(out + (uint64_t)lane->chg[c].pos * s->feat_dim);
        if (s->dtype == OC_DTYPE_F16)
            src += s->row_bytes;
        memcpy(slot_row(g, k), src, s->row_bytes);
    }
    if (s->dtype == OC_DTYPE_F16 && misses &&
        (rc = store_slots_copy_part(s, g->cache.rows, lane->disk.slots, n, out, STORE_SLOTS_MISSES,
                                    err)))
        return rc;
    return OC_OK;
}

/*
 * A gather outside the plan (evaluation, a batch out of plan order): through
 * the cache without changing it, alone, once every planned gather before it
 * has copied its rows.
 */
static int exec_unplanned(struct oc_store *s, struct ginex_store *g, const uint64_t *ids,
                          uint64_t n, float *out, struct oc_err *err)
{
    struct gx_lane *lane = &g->lane[s->lane];
    uint64_t misses = 0;
    int rc = OC_OK;

    gx_lock(g);
    while (!g->cancelled &&
           (g->in_meta || g->excl || g->yielding || (g->t_copy != g->t_next && !g->failed)))
        gx_wait(g);
    if (g->cancelled && !g->failed)
        rc = gx_stop(g, err);
    g->excl = rc == OC_OK;
    gx_unlock(g);
    if (rc)
        return rc;
    lane->n_chg = 0;
    if ((rc = look_up(s, g, lane, ids, n, out, NULL, &misses, err)) == OC_OK &&
        (!misses || (rc = store_disk_run(s, &lane->disk, err)) == OC_OK) &&
        (rc = copy_out(s, g, lane, n, out, misses, err)) == OC_OK)
        store_count_gather(s, n, misses);
    gx_lock(g);
    g->excl = 0;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
    return rc;
}

int gx_exec_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                   struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    const struct oc_giveback *was = oc_giveback_quiet(&g->gb); /* the executor is not quiet */
    int rc = exec_unplanned(s, g, ids, n, out, err);
    oc_giveback_quiet(was);
    return rc;
}

/*
 * Iteration t starts plan cur's successor: once every earlier iteration has
 * copied (the warm-up writes slots), cur goes back to the inspector, the next
 * plan (taken by the loader already, or popped here) becomes cur and its
 * warm-up rows are read. The caller holds the map's turn.
 */
static int exec_next_plan(struct oc_store *s, struct ginex_store *g, struct gx_lane *lane,
                          uint64_t t, struct oc_err *err)
{
    gx_lock(g);
    int rc = wait_copied(g, t, err);
    while (rc == OC_OK && !g->nxt && g->popping) {
        gx_wait(g);
        rc = gx_stop(g, err);
    }
    struct pl_sb_plan *old = g->cur, *nx = g->nxt;
    int pop = rc == OC_OK && !nx;
    if (rc == OC_OK) {
        g->cur = nx; /* NULL while popping: the loader waits for it */
        g->nxt = NULL;
        g->popping = pop;
    }
    gx_unlock(g);
    if (rc)
        return rc;
    gx_inspector_release(g->insp, old);
    if (pop) {
        /* Every earlier iteration has copied: the cache is quiet while the inspector
           finishes the plan, so a give-back (the inspector's own growth may need one)
           may run meanwhile; the map's turn is taken back after it. */
        gx_lock(g);
        g->in_meta = 0;
        pthread_cond_broadcast(&g->cv);
        gx_unlock(g);
        rc = gx_inspector_next(g->insp, &nx, err);
    }
    gx_lock(g);
    while (pop && (g->excl || g->yielding) && !g->cancelled)
        gx_wait(g);
    if (pop && rc == OC_OK)
        rc = gx_stop(g, err);
    g->in_meta = 1;
    g->cur = rc ? NULL : nx;
    g->popping = 0;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);
    return rc ? rc : gx_warm_up(s, g, &lane->disk, nx, 1, err);
}

/*
 * After the reads of a planned batch failed: the rows its changes put in the
 * map are read once more (into their output rows), so the cache holds what
 * the map says and later batches, which may have looked them up already, stay
 * right; the batch itself fails.
 */
static int reread_inserts(struct oc_store *s, struct gx_lane *lane, const uint64_t *ids, float *out,
                          struct oc_err *err)
{
    int rc = OC_OK, any = 0;
    for (uint64_t c = 0; c < lane->n_chg && rc == OC_OK; c++) {
        uint32_t pos = lane->chg[c].pos;
        if (lane->chg[c].slot != PL_NONE && (any = 1))
            rc = store_disk_queue(s, &lane->disk, ids[pos], out + pos * s->feat_dim, err);
    }
    if (rc) {
        store_disk_discard(&lane->disk);
        return rc;
    }
    return any ? store_disk_run(s, &lane->disk, err) : OC_OK;
}

/*
 * Planned iteration t on this lane, which holds the map's turn: the map and
 * the changeset (in plan order, then the turn passes to t + 1), the reads
 * (while other lanes look up or copy), the copies (in plan order). A failed
 * read fails the batch only (*sticky 0) when its changes' rows could be read
 * again; any other error leaves the cache unusable for the plan (*sticky 1).
 */
static int exec_planned(struct oc_store *s, struct ginex_store *g, uint64_t t, const uint64_t *ids,
                        uint64_t n, float *out, uint64_t back, int *sticky, struct oc_err *err)
{
    struct gx_lane *lane = &g->lane[s->lane];
    uint64_t misses = 0;
    int rc, read_rc = OC_OK;

    *sticky = 1;
    if (back)
        take_back(g, back);
    if (t == g->cur->b.first_iter + g->cur->b.n_iters && (rc = exec_next_plan(s, g, lane, t, err)))
        return rc;
    struct pl_sb_plan *p = g->cur;
    uint64_t it = t - p->b.first_iter;
    if ((rc = look_up(s, g, lane, ids, n, out, g->hyper_taken, &misses, err)))
        return rc;
    if ((rc = plan_changes(g, lane, p, it, ids, n, err))) {
        store_disk_discard(&lane->disk);
        return rc;
    }
    s->stats.trace_accesses += p->b.cnt[it].n_acc;
    s->stats.belady_misses += p->b.cnt[it].n_belady;
    s->stats.lru_misses += p->b.cnt[it].n_lru;
    s->stats.static_misses += p->b.cnt[it].n_static;
    gx_lock(g);
    g->t_next++;
    g->in_meta = 0;
    pthread_cond_broadcast(&g->cv);
    gx_unlock(g);

    if (misses && (read_rc = store_disk_run(s, &lane->disk, err))) {
        struct oc_err again;
        if ((rc = reread_inserts(s, lane, ids, out, &again)))
            return read_rc;
    }
    struct oc_err copy_err;
    gx_lock(g);
    rc = wait_copied(g, t, err);
    gx_unlock(g);
    if (rc || (rc = copy_out(s, g, lane, n, out, misses, read_rc ? &copy_err : err)))
        return read_rc && !rc ? read_rc : rc;
    pass_copy(g);
    *sticky = 0;
    if (read_rc)
        return read_rc;
    store_count_gather(s, n, misses);
    return OC_OK;
}

int gx_exec_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                         uint64_t n, float *out, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    uint64_t t = epoch * g->nb + batch;
    uint32_t lanes = s->n_lanes ? s->n_lanes : 1;
    int rc;

    const struct oc_giveback *was = oc_giveback_quiet(&g->gb); /* the executor is not quiet */
    uint64_t back = take_back_reserve(g);
    gx_lock(g);
    log_yields(g);
    /* the next planned iteration, or one a lane ahead of it (whose turn comes; cur is
       NULL only while the holder of the map's turn takes the next plan) */
    int planned =
        g->insp && batch < g->nb && t >= g->t_next && t < g->t_end && t - g->t_next < lanes;
    while ((rc = gx_stop(g, err)) == OC_OK && planned &&
           (t != g->t_next || g->in_meta || g->excl || g->yielding))
        gx_wait(g);
    planned = planned && rc == OC_OK && g->cur && t == g->t_next;
    if (planned)
        g->in_meta = 1;
    uint64_t unplanned = planned || rc ? 1 : g->n_unplanned++;
    gx_unlock(g);
    if (!planned || rc) {
        oc_mem_release(back * g->cache.row_bytes); /* only a map's turn takes slots back */
        back = 0;
    }
    if (rc) {
        oc_giveback_quiet(was);
        return rc;
    }
    if (!planned) {
        if (unplanned == 0)
            oc_log(OC_LOG_WARN,
                   "store ginex: epoch %" PRIu64 " batch %" PRIu64
                   " is not the next planned batch; served without the plan",
                   epoch, batch);
        rc = exec_unplanned(s, g, ids, n, out, err);
        oc_giveback_quiet(was);
        return rc;
    }
    int sticky = 0;
    if ((rc = exec_planned(s, g, t, ids, n, out, back, &sticky, err)) && sticky)
        gx_fail(g, rc, err);
    oc_giveback_quiet(was);
    return rc;
}
