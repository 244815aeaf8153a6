/*
 * ginex.c — the `ginex` strategy (Ginex, VLDB 2022): a superbatch
 * inspector-executor with a Belady-optimal feature cache. The inspector
 * (ginex_inspect.c, a pipeline stage running plan's superbatch planner,
 * plan/superbatch.c) samples the next S training batches ahead, writes them
 * under the plan directory and precomputes the cache's changesets
 * (plan/belady.c); the executor (ginex_exec.c) gathers each
 * training batch from the cache or the disk and applies that batch's
 * changeset by copying the inserted rows from the gathered output into the
 * evicted slots: no extra read. Under a budget the cache's rows (an
 * anonymous mapping) are given back to requests past it and taken back
 * (gx_give, ginex_exec.c). Here: open (budget split, the inspector, plan 0
 * and its warm-up), the loader, stats, free, and the test knobs.
 *
 * Place in the data flow: store. The batch pipeline's fetch stage calls
 * oc_store_load_batch(epoch, batch) (the batch read back from the superbatch
 * file the inspector wrote, so it is sampled once; the loader) and then
 * oc_store_gather_batch(epoch, batch), itself or on one of the gather lanes
 * (oc_store_gather_batch_lane) ──► executor, following plan k while the
 * inspector makes plan k+1; oc_store_gather (evaluation) reads through the
 * cache without changing it.
 * Thread-safety: the loader runs on one thread (the fetch stage, up to the
 * lanes' batches ahead of the executor; with --hyperbatch the sample stage,
 * up to the two groups' batches ahead), with a plan cursor of its own
 * (t_load) and the prepare side of the hyperbatch; plans it or the executor take from the inspector are handed
 * over under g->mu (cur, nxt); the executor's turns: ginex_exec.c.
 * Ownership: cache rows, slot ids, map, lanes, the static bitmap and the
 * inspector are the store's.
 *
 *   superbatch boundary: the loader takes plan k+1 from the inspector (waiting
 *   if the inspector is behind) when it loads k+1's first batch; the executor
 *   moves to it when it gathers that batch, once every earlier batch has
 *   copied: plan k goes back to the inspector (to be filled with the
 *   superbatch after k+1) and k+1's warm-up rows (only while the cache has
 *   empty slots) are read into their slots. At open the executor waits for
 *   plan 0 and reads its warm-up rows (not counted in the stats, as `static`
 *   does not count filling its cache).
 *
 * Hyperbatches (--hyperbatch F, store/hyper.c): the loader stages each loaded
 * batch's misses as its plan has them (pl_plan_misses: the Belady cache as
 * the changesets before the batch leave it) in a group, the last batch of a
 * superbatch closing its group (the loader may wait for the executor to
 * leave a plan before it takes the one after the next, and the executor
 * waits for the groups of what it gathers); the executor's lookup copies a
 * miss the group holds into its output row as the read would have put it,
 * and reads the rest. The groups' share of the budget comes off the cache.
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
 *              comparison's bitmap (1 bit per node); each further gather
 *              lane (cfg->lanes) a reader and a changeset of its own, while
 *              all lanes take at most a quarter of the budget
 *   inspector  pl_sb_fixed_bytes (sampler, one batch, record
 *              buffer, writer, the planner's batch of entries and its
 *              per-node next-use array, the spills' write buffers).
 *              With a plan directory the superbatch's trace, next uses and
 *              changesets are spilled to files there: no RAM per access; S
 *              is --superbatch, else an epoch (at most GX_LONG_SUPERBATCH
 *              batches), and accesses are bounded by a quarter of the disk's
 *              free space. Without one they are in RAM at
 *              GX_BYTES_PER_ACCESS per access: batches are estimated at the
 *              first batch's input rows (sampled at open) plus a quarter, at
 *              most R; with --superbatch S: S estimated batches; with 0:
 *              at most 16 of them and at most a quarter of what the two lines
 *              above leave, and at least one batch of R. The inspector cuts a
 *              superbatch short where its accesses would pass that (a
 *              superbatch's first batch always goes in)
 *   cache      the rest, at row bytes + GX_BYTES_PER_SLOT per row
 * A budget below the first two lines (plus, in RAM, one batch of accesses, S
 * batches when S is given) is OC_ERR_BUDGET naming how much is needed.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "store/ginex/ginex_int.h"

#define GX_LOAD_ROWS 4096u /* warm-up rows queued per batch run, at most */

/* ---- the loader ---------------------------------------------------------------- */

/*
 * Batch t sampled again, exactly as the inspector sampled it, when its
 * superbatch file could not be written or opened (a disk that is full or
 * read-only): counted in sampled_batches.
 */
static int load_by_sampling(const struct oc_store *s, struct ginex_store *g, uint64_t epoch,
                            uint64_t batch, struct oc_sample_batch *out, struct oc_err *err)
{
    int rc;
    if (!g->fb.sampler) {
        oc_log(OC_LOG_WARN, "store ginex: without its superbatch files, batches are sampled "
                            "a second time");
        if ((rc = oc_sample_iter_open(&g->fb, g->graph, &g->so, NULL, g->train_ids, g->n_train,
                                      g->batch_size, err)))
            return rc;
    }
    rc = oc_sample_iter_sample(&g->fb, epoch, batch, out, err);
    store_topo_add(s, g->fb.sampler, &g->fb_topo_seen); /* the run's topology figures */
    if (rc)
        return rc;
    g->n_fb_sampled++;
    return OC_OK;
}

/*
 * Under g->mu: the plan holding iteration t for the loader, cur or nxt; for
 * the first iteration after them the next plan, taken from the inspector
 * here (g->mu released meanwhile) once the executor has moved on to nxt.
 */
static int loader_plan(struct ginex_store *g, uint64_t t, struct pl_sb_plan **out,
                       struct oc_err *err)
{
    int rc;
    OC_ASSERT_HELD(&g->mu_held);
    for (;;) {
        if ((rc = gx_stop(g, err)))
            return rc;
        if (pl_sb_plan_holds(g->cur, t) || pl_sb_plan_holds(g->nxt, t)) {
            *out = pl_sb_plan_holds(g->cur, t) ? g->cur : g->nxt;
            return OC_OK;
        }
        if (!g->nxt && !g->popping)
            break;
        gx_wait(g); /* the executor is still on cur */
    }
    if (!g->cur || t != g->cur->b.first_iter + g->cur->b.n_iters)
        return OC_ERR(err, OC_ERR_ARG,
                      "store ginex: iteration %" PRIu64 " loaded outside the plans in hand", t);
    struct pl_sb_plan *nx = NULL;
    g->popping = 1;
    gx_unlock(g);
    rc = gx_inspector_next(g->insp, &nx, err);
    gx_lock(g);
    g->popping = 0;
    if (rc && !g->failed) {
        g->failed = rc;
        g->fail = *err;
    }
    if (rc == OC_OK)
        *out = g->nxt = nx;
    pthread_cond_broadcast(&g->cv);
    return rc;
}

/*
 * --hyperbatch: the loaded batch (iteration it of plan p) joins a group with
 * the misses its plan says it has (the Belady cache as the changesets before
 * it leave it); the last batch of a superbatch closes its group, as the loader
 * takes the superbatch after the next only once the executor is past it.
 */
static int prepare(struct oc_store *s, struct ginex_store *g, struct pl_sb_plan *p, uint64_t it,
                   uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
                   struct oc_err *err)
{
    uint64_t n = b->n_input, bytes = (n + 7) / 8;
    int rc;
    if (p->b.cnt[it].n_acc != n)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store ginex: batch %" PRIu64 " has %" PRIu64
                      " input rows, its plan %" PRIu64,
                      p->b.first_iter + it, n, p->b.cnt[it].n_acc);
    uint64_t cap = atomic_load_explicit(&g->cap_miss, memory_order_relaxed);
    rc = oc_grow_by(&g->miss, &cap, bytes, 1, OC_GROW_EXACT, "store ginex: miss bitmap", err);
    atomic_store_explicit(&g->cap_miss, cap, memory_order_relaxed); /* for stats */
    if (rc)
        return rc;
    if (bytes && (rc = pl_plan_misses(&p->b, it, g->miss, err)))
        return oc_err_prefix(err, "store ginex: batch %" PRIu64, p->b.first_iter + it);
    if ((rc = store_hyper_prepare_bits(s, g->hyper, epoch, batch, b, g->miss, err)))
        return rc;
    return it + 1 == p->b.n_iters ? store_hyper_flush(g->hyper, err) : OC_OK;
}

/*
 * The next training batch, as the inspector sampled it (Ginex's executor
 * reads back the superbatch the inspector saved): so the batch pipeline
 * samples nothing and every batch is sampled once. Called in plan order,
 * before that batch's gather (up to a lane's worth of batches ahead of the
 * gathers), from one thread.
 */
static int ginex_load_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                            struct oc_sample_batch *out, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    struct pl_sb_plan *p = NULL;
    uint64_t t = epoch * g->nb + batch;
    int rc;

    gx_lock(g);
    if ((rc = gx_stop(g, err)) == OC_OK && (batch >= g->nb || t != g->t_load || t >= g->t_end))
        rc = OC_ERR(err, OC_ERR_ARG,
                    "store ginex: epoch %" PRIu64 " batch %" PRIu64
                    " loaded out of plan order (the next is iteration %" PRIu64 ")",
                    epoch, batch, g->t_load);
    if (rc == OC_OK && (rc = loader_plan(g, t, &p, err)) == OC_OK)
        g->t_load++;
    gx_unlock(g);
    if (rc)
        return rc;
    if (pl_sb_reader_use(&g->rd, p))
        rc = pl_sb_reader_read(&g->rd, p, t - p->b.first_iter, epoch, batch, s->n_nodes, out, err);
    else /* its superbatch file could not be written or opened */
        rc = load_by_sampling(s, g, epoch, batch, out, err);
    if (rc == OC_OK && g->hyper && !store_hyper_fed(g->hyper))
        rc = prepare(s, g, p, t - p->b.first_iter, epoch, batch, out, err);
    return rc;
}

/*
 * --hyperbatch-disk: the feeder's batch (sampled again, as the inspector did)
 * joins a group, as prepare has it, up to two groups ahead of the loader; its
 * plan is the loader's (cur, nxt, or taken from the inspector here: the
 * feeder, ahead of the loader, may take it first).
 */
static int ginex_feed(struct oc_store *s, uint64_t epoch, uint64_t batch,
                      const struct oc_sample_batch *b, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    struct pl_sb_plan *p = NULL;
    uint64_t t = epoch * g->nb + batch;
    gx_lock(g);
    int rc = loader_plan(g, t, &p, err);
    gx_unlock(g);
    return rc ? rc : prepare(s, g, p, t - p->b.first_iter, epoch, batch, b, err);
}

/* ---- open / stats / free ----------------------------------------------------------- */

/* The bitmap of the C rows `static` (degree hotness) would cache. */
static int static_bitmap(const struct oc_store *s, const struct oc_store_config *cfg,
                         struct ginex_store *g, uint64_t C, struct oc_err *err)
{
    uint64_t *ids = NULL;
    g->static_bytes = (s->n_nodes + 7) / 8;
    g->static_bits = oc_calloc(1, (size_t)g->static_bytes, "store ginex: static comparison", err);
    if (!g->static_bits)
        return err ? err->status : OC_ERR_NOMEM;
    int rc = store_hot_select(s, cfg, OC_STORE_HOTNESS_DEGREE, C, 0, &ids, err);
    for (uint64_t k = 0; rc == OC_OK && k < C; k++)
        oc_bit_set(g->static_bits, ids[k]);
    oc_free(ids);
    return rc;
}

static int ginex_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct ginex_store *g;
    uint64_t nb, t0, t_end, S, max_acc, C;
    uint32_t lanes = 1;
    int rc;
    s->caps.batches = 1; /* read back from the inspector's superbatch files */
    struct gx_opts o;
    store_opts_read(&oc_store_ginex, cfg, &o);
    if (o.hyperbatch_disk && o.hyperbatch <= 0)
        return store_hyper_disk_alone(s, err);

    uint64_t probe = 0, key = 0;
    char dir[4096];
    if ((rc = gx_plan_shape(cfg, &nb, &t0, &t_end, err)))
        return rc;
    dir[0] = '\0';
    /* a store over other ids (cfg->accesses) keeps its superbatches in RAM: its files hold
       the plan's batches, which the pipeline of a store over the plan's ids reads back */
    if (t_end > t0 && !cfg->accesses)
        gx_plan_dir(s, cfg, dir, sizeof(dir), &key);
    struct gx_hyper_shape hs;
    if ((t_end > t0 && (rc = gx_probe_rows(cfg, nb, t0, &probe, err))) ||
        (rc = gx_plan_capacity(s, cfg, sizeof(struct ginex_store), t_end - t0, probe, dir, &S,
                               &max_acc, &C, &lanes, &hs, err)))
        return rc;
    if (hs.sh.cap && cfg->accesses)
        return OC_ERR(err, OC_ERR_ARG,
                      "store ginex: --hyperbatch stages the plan's batches, not rows by other ids");
    g = oc_calloc(1, sizeof(*g), "store ginex", err);
    if (!g)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = g;
    atomic_init(&g->cap_miss, 0);
    pl_sb_reader_init(&g->rd, "store ginex");
    if (pthread_mutex_init(&g->mu, NULL) == 0 && pthread_cond_init(&g->cv, NULL) == 0)
        g->sync_made = 1;
    else
        return OC_ERR(err, OC_ERR_NOMEM, "store ginex: cannot make its lock");
    g->S = S;
    g->max_acc = max_acc;
    g->load_rows = store_expected_rows(s, cfg);
    if (g->load_rows > GX_LOAD_ROWS || g->load_rows == 0)
        g->load_rows = GX_LOAD_ROWS;
    g->nb = nb;
    g->t0 = g->t_next = g->t_copy = g->t_load = t0;
    g->t_end = t_end;
    g->graph = store_plan_graph(cfg);
    if (cfg->sample_opts)
        g->so = *cfg->sample_opts;
    g->train_ids = cfg->train_ids;
    g->n_train = cfg->n_train;
    g->batch_size = cfg->batch_size;
    s->n_lanes = lanes;
    for (uint32_t i = 0; i < lanes; i++)
        if ((rc = store_disk_open(s, 1, &g->lane[i].disk, err)))
            return rc;
    if (t_end == t0)
        return OC_OK; /* nothing to plan: evaluation reads go to the disk */
    if ((rc = static_bitmap(s, cfg, g, C, err)))
        return rc;
    if ((rc = store_cache_init_bound(&g->cache, C, 0, s->row_bytes, "store ginex", err)))
        return rc;
    char c_s[32], m_s[32];
    oc_log(OC_LOG_INFO,
           "store ginex: cache of %" PRIu64 " rows (%s), superbatches of up to %" PRIu64
           " batches and %" PRIu64 " accesses (trace %s), %u gather lane%s, budget %s",
           C, oc_format_size(C * s->row_bytes, c_s, sizeof(c_s)), S, max_acc,
           dir[0] ? "in files under the plan directory" : "in RAM", lanes, lanes == 1 ? "" : "s",
           oc_format_size(cfg->mem_bytes, m_s, sizeof(m_s)));
    struct gx_inspect_config ic = {cfg, nb, t0, t_end, S, max_acc, C, g->static_bits, dir, key, 0};
    ic.misses = hs.sh.cap != 0;
    if ((rc = gx_inspector_new(s, &ic, &g->insp, err)))
        return rc;
    if ((rc = store_stages(s, &g->stages, err)) ||
        (rc = oc_pipeline_on_cancel(g->stages, gx_on_cancel, g, err)))
        return rc;
    if ((rc = gx_inspector_next(g->insp, &g->cur, err)))
        return rc;
    if ((rc = gx_warm_up(s, g, &g->lane[0].disk, g->cur, 0, err)))
        return rc;
    if (hs.sh.cap) {
        /* on disk (hs.sh.fed) many batches ahead, staged by the groups' feeder; else loaded
           that far ahead */
        if ((rc = store_hyper_open(s, &hs.sh, cfg, ginex_feed, &g->hyper, err)))
            return rc;
        s->caps.lookahead = store_hyper_lookahead(g->hyper);
    }
    oc_giveback_init(&g->gb, "store ginex", C * s->row_bytes, NULL, gx_give, g);
    return cfg->mem_bytes && C ? oc_giveback_register(&g->gb, err) : OC_OK;
}

static void ginex_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct ginex_store *g = s->impl;
    const struct store_cache *c = &g->cache;
    uint64_t given = (c->n - c->n_live) * s->row_bytes;
    out->given_back_bytes = given;
    out->held_bytes = sizeof(*g) + c->n * (s->row_bytes + sizeof(uint64_t)) - given +
                      c->hash.cap * sizeof(uint32_t) + g->static_bytes +
                      gx_inspector_held_bytes(g->insp) + g->rd.cap_rec;
    for (uint32_t i = 0; i < s->n_lanes; i++)
        out->held_bytes +=
            g->lane[i].cap_chg * sizeof(struct pl_change) + store_disk_held_bytes(&g->lane[i].disk);
    /* the inspector's samplings are the batches the pipeline loads; only a second one counts */
    out->sampled_batches = g->n_fb_sampled;
    gx_inspector_times(g->insp, &out->plan_sample_us, &out->plan_build_us);
    out->held_bytes += atomic_load_explicit(&g->cap_miss, memory_order_relaxed);
    store_hyper_stats(g->hyper, out);
}

static void ginex_free(struct oc_store *s)
{
    struct ginex_store *g = s->impl;
    if (!g)
        return;
    oc_giveback_unregister(&g->gb); /* waits for a give-back in progress */
    gx_inspector_free(g->insp);     /* its stage was joined: plans and bitmap are unused */
    store_hyper_free(g->hyper);     /* so were the groups' (read, feeder) */
    oc_free(g->miss);
    pl_sb_reader_deinit(&g->rd);
    oc_sample_iter_close(&g->fb);
    for (uint32_t i = 0; i < STORE_MAX_LANES; i++) {
        store_disk_close(&g->lane[i].disk);
        oc_free(g->lane[i].chg);
    }
    store_cache_free(&g->cache);
    oc_free(g->static_bits);
    if (g->sync_made) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
    }
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
    return g ? g->cache.n : 0;
}

uint64_t oc_store_ginex_n_cached(const struct oc_store *s)
{
    const struct ginex_store *g = as_ginex(s);
    return g ? g->cache.n_bound : 0;
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

/* What sizing ginex needs of cfg without opening it: a store's shape, the plan's span, probe. */
struct gx_sizing {
    struct oc_store s;
    uint64_t nb, t0, t_end, probe;
};

static int sizing_of(const struct oc_store_config *cfg, struct gx_sizing *z, struct oc_err *err)
{
    int rc;
    memset(z, 0, sizeof(*z));
    store_shape(&z->s, cfg);
    if ((rc = gx_plan_shape(cfg, &z->nb, &z->t0, &z->t_end, err)) ||
        (z->t_end > z->t0 && (rc = gx_probe_rows(cfg, z->nb, z->t0, &z->probe, err))))
        return rc;
    return OC_OK;
}

/* The cache rows ginex plans under cfg (gx_plan_capacity, as its open). */
static int sized_rows(struct gx_sizing *z, const struct oc_store_config *cfg, uint64_t *rows,
                      struct oc_err *err)
{
    uint64_t S, acc;
    uint32_t lanes;
    return gx_plan_capacity(&z->s, cfg, sizeof(struct ginex_store), z->t_end - z->t0, z->probe,
                            cfg->plan_dir ? cfg->plan_dir : "", &S, &acc, rows, &lanes, NULL, err);
}

int oc_store_ginex_budget_for(const struct oc_store_config *cfg, uint64_t rows, uint64_t *bytes,
                              struct oc_err *err)
{
    struct gx_sizing z;
    struct oc_store_config c = *cfg;
    int rc = sizing_of(cfg, &z, err);
    if (rc)
        return rc;
    /* C grows with the budget: the smallest budget reaching `rows` by bisection. */
    uint64_t lo = 1, hi = 1ull << 50, C;
    while (lo < hi) {
        c.mem_bytes = lo + (hi - lo) / 2;
        if (sized_rows(&z, &c, &C, NULL) == OC_OK && C >= rows)
            hi = c.mem_bytes;
        else
            lo = c.mem_bytes + 1;
    }
    *bytes = lo;
    return OC_OK;
}

int oc_store_ginex_cache_rows(const struct oc_store_config *cfg, uint64_t *rows, struct oc_err *err)
{
    struct gx_sizing z;
    *rows = 0;
    int rc = sizing_of(cfg, &z, err);
    return rc ? rc : sized_rows(&z, cfg, rows, err);
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
     offsetof(struct gx_opts, superbatch), 1, 0, 0, 0, NULL},
    {"hyperbatch", OC_STORE_OPT_F64, "F", NULL,
     "share of the budget that stages the planned misses of the coming batches, read in one "
     "block pass per group (AGNES's hyperbatches); 0 = each batch reads its own",
     offsetof(struct gx_opts, hyperbatch), 0, 0, 0, 0.9, NULL},
    {"hyperbatch-disk", OC_STORE_OPT_FLAG, NULL, NULL, STORE_HYPER_DISK_HELP,
     offsetof(struct gx_opts, hyperbatch_disk), 0, 0, 0, 0, NULL},
};

/* Its cache's miss ratio next to LRU's and the static cache's on the same trace. */
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

/* The fetch stage's batch: in plan order, read back by the loader. */
static int ginex_load(struct oc_store *s, uint64_t epoch, uint64_t *batch,
                      struct oc_sample_batch *out, struct oc_err *err)
{
    if (!out)
        return store_next_in_order(s, epoch, batch, err);
    return ginex_load_batch(s, epoch, *batch, out, err);
}

/*
 * A plan batch in its turn (the executor; with hyperbatches its misses from
 * its group, taken in load order); evaluation through the cache, unchanged.
 */
static int ginex_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                        uint64_t n, float *out, struct oc_err *err)
{
    struct ginex_store *g = s->impl;
    int rc;
    if (epoch == STORE_OFF_PLAN)
        return gx_exec_gather(s, ids, n, out, err);
    if (!g->hyper)
        return gx_exec_gather_batch(s, epoch, batch, ids, n, out, err);
    if ((rc = store_hyper_take(g->hyper, epoch, batch, &g->hyper_taken, err)) ||
        (rc = gx_exec_gather_batch(s, epoch, batch, ids, n, out, err)))
        return rc;
    return store_hyper_done(g->hyper, g->hyper_taken, err);
}

/* The inspector's seconds sampling and building plans, so far. */
static const struct oc_store_stat ginex_stat_table[] = {
    {"plan", "sample_s", "Inspect", OC_STORE_STAT_SECONDS, OC_STORE_STAT_FIELD(plan_sample_us)},
    {"plan", "build_s", "Plan", OC_STORE_STAT_SECONDS, OC_STORE_STAT_FIELD(plan_build_us)},
    STORE_HYPER_STAT,
    {"miss_ratio", "belady", "Miss", OC_STORE_STAT_RATIO, ginex_miss_belady, 0},
    {"miss_ratio", "lru", "LRU miss", OC_STORE_STAT_RATIO, ginex_miss_lru, 0},
    {"miss_ratio", "static", "Static miss", OC_STORE_STAT_RATIO, ginex_miss_static, 0},
};

const struct store_strategy oc_store_ginex = {
    .name = "ginex",
    .no_reuse_samples = "it samples every epoch ahead of training",
    .summary = "superbatch inspector-executor: batches sampled ahead, Belady-optimal feature "
               "cache driven by precomputed changesets, misses batched through io_uring (Ginex)",
    .open = ginex_open,
    .load = ginex_load,
    .gather = ginex_gather,
    .stats = ginex_stats,
    .free = ginex_free,
    .opts = ginex_opts,
    .n_opts = sizeof(ginex_opts) / sizeof(ginex_opts[0]),
    .opts_size = sizeof(struct gx_opts),
    .stat_table = ginex_stat_table,
    .n_stats = sizeof(ginex_stat_table) / sizeof(ginex_stat_table[0]),
    .writes_plan = 1,
    .serves_accesses = 1,
};
