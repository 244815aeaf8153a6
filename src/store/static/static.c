/*
 * static.c — the `static` strategy (PaGraph / Helios CPU cache): the hottest
 * rows, chosen once at open by in-degree or by pre-sampled access counts
 * (../hot.c), pinned in a RAM cache; misses are read from features.npy
 * with O_DIRECT through the io_uring batch reader, merging requests that
 * share or touch a page, straight into the output rows.
 *
 * Place in the data flow: store; at open graph/sample ──► hotness ──► cache
 * rows loaded from features.npy; per gather: lookup ──► misses read ──► hits
 * copied and f16 widened on the pool.
 * The lookup and the gather itself are store/cache.c's, shared with diskgnn.
 * Thread-safety: a gather owns its lane's batch reader and slot scratch (up
 * to cfg->lanes gathers run at once, one per lane) and reads the cache under
 * the read side of its yield's lock (../cache_yield.c); the copy pass runs on
 * the pool, each task its own range of output rows. The write side is taken
 * to give rows back (any thread, from the accountant) and to take them back
 * (a gathering thread, through its lane's reader).
 * Ownership: cache rows, lookup structure, scratch and batch reader are the
 * store's.
 *
 * Cache layout (rows kept as stored, f16 or f32, so an f16 file caches twice
 * the rows; widening is the same oc_f16_to_f32 as everywhere):
 *
 *   rows:  [ slot 0 | slot 1 | ... | slot C-1 ]   slot k = the k-th hottest cached row
 *          (an anonymous mapping: pages given back with madvise, taken back on touch)
 *   lookup, one of:
 *     direct table  u32 table[N]: slot of v, or NO_SLOT      4 bytes per node
 *     sorted ids    u64 ids[C] ascending + u32 slot_of[C]   12 bytes per cached row
 *
 * The layout is whichever caches more rows in the budget (the table on a tie:
 * O(1) lookups): the table wins while the graph is small next to the budget,
 * the sorted array when 4 bytes per node would eat the room for rows. Rows
 * are loaded in id order (the file read forward, pages merged).
 *
 * Giving memory back (../cache_yield.c): a budgeted store registers its
 * cache with the accountant; when a request would pass --mem-budget — a
 * batch larger than the one train reserved for, say — the cache drops its
 * coldest rows (the last slots) and serves them as misses, and a gather that
 * finds memory free again reads them back first, hottest first. A gather
 * holds the cache's read side, so a reclaim asked on its own thread gives
 * nothing.
 *
 * Memory (held_bytes): n_live x row_bytes + the lookup + per lane the slot
 * scratch (4 bytes per row of the largest batch) and a batch reader (2 MiB
 * bounce and its request arrays). With cfg->mem_bytes = 0 every row is
 * cached. Otherwise the fixed part — per lane a bounce buffer and STORE_ROW_SCRATCH_BYTES
 * per batch row (store_budget_rows: measured by train, or the fanout bound);
 * a second lane only while the lanes take at most a quarter of the budget — comes off the budget first,
 * and a budget smaller than it is OC_ERR_BUDGET naming how much is needed;
 * the rest holds the lookup and as many rows as fit (possibly none).
 *
 * Over other ids (cfg->accesses: a partitioned dataset's part) it serves
 * local rows as they come; --hotness presample counts the access map's ids
 * (../hot.c), and --hyperbatch groups are filled by their own feeder
 * (../hyper.c, ../feed.c: the plan's batches as the map's ids), since no
 * batch pipeline shows it the batches; the feeder's sampler comes off the
 * budget with the groups.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "store/static/static_int.h"

#define NO_SLOT STORE_NO_SLOT

/* The cache (table layout: table set, ids NULL; sorted layout: ids and slot_of set) and its reader. */
struct static_store {
    struct store_disk disk[STORE_MAX_LANES]; /* a reader per lane (s->n_lanes) */
    struct store_cache cache;                /* n_live: yield's lock */
    struct store_yield yield;                /* the rows' mapping, giving back and taking back */
    int yield_ready;
    struct store_hyper *hyper; /* --hyperbatch: the misses of the coming batches, staged */
};

/* Batches sampled at open to size the feeder's sampler (over an access map). */
#define STATIC_MEASURE_BATCHES 8u

/* The rows of slots [lo, hi), read through the store's reader (store_cache_load). */
static int load_slots(struct oc_store *s, struct static_store *c, uint64_t lo, uint64_t hi,
                      struct oc_err *err)
{
    int rc = store_cache_load(s, &c->cache, &c->disk[s->lane], lo, hi, 0, err);
    if (rc)
        oc_err_prefix(err, "store static: loading the cache");
    return rc;
}

/*
 * --hyperbatch F: the groups' shape and their *bytes for the budget
 * (store_hyper_size; hp->cap 0 without the option or a budget, or with
 * nothing to prepare the groups: the loader's and train's batch pipeline
 * prepares every batch it gathers; over an access map (a partitioned
 * dataset's part, no batch pipeline) the store's own feeder does, whose
 * sampler *bytes then counts too, sized on the plan's first batches).
 */
static int hyper_plan(const struct oc_store *s, const struct oc_store_config *cfg,
                      uint64_t batch_rows, struct store_hyper_shape *hp, uint64_t *bytes,
                      struct oc_err *err)
{
    struct static_store_opts o;
    store_opts_read(&oc_store_static, cfg, &o);
    memset(hp, 0, sizeof(*hp));
    *bytes = 0;
    if (o.hyperbatch_disk && o.hyperbatch <= 0)
        return store_hyper_disk_alone(s, err);
    /* groups on disk hold many batches: a feeder samples them ahead (but it cannot key
       reused samples, which the pipeline shows under epoch 0, as its slots then hold them) */
    int plan = store_has_plan(cfg);
    int fed = plan && (cfg->accesses || (o.hyperbatch_disk && !cfg->reuse_samples));
    if (o.hyperbatch <= 0 || !cfg->mem_bytes || !(cfg->pipeline || fed))
        return OC_OK;
    hp->disk = o.hyperbatch_disk;
    hp->fed = fed;
    *bytes = store_hyper_size(s, o.hyperbatch, cfg->mem_bytes, batch_rows, hp);
    if (!fed)
        return OC_OK;
    uint64_t rows, misses, plan_rows;
    int rc = store_measure_misses(cfg, STATIC_MEASURE_BATCHES, "static", NULL, &rows, &misses,
                                  &plan_rows, err);
    if (rc == OC_OK)
        *bytes += store_feed_bytes(cfg, plan_rows, batch_rows > rows ? batch_rows : rows);
    return rc;
}

/*
 * Lanes, cached rows and layout for the budget; OC_ERR_BUDGET if the fixed
 * part of one lane does not fit. A second lane's reader is kept only while
 * the readers take at most a quarter of the budget: the rest is for rows.
 */
static int plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                         uint32_t *n_lanes, uint64_t *n_cached, int *use_table,
                         struct store_hyper_shape *hp, struct oc_err *err)
{
    uint64_t n = s->n_nodes;
    uint64_t rows = store_budget_rows(s, cfg);
    uint64_t lane = STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
    *n_lanes = store_lanes_for(cfg, lane, cfg->mem_bytes / 4);
    uint64_t fixed = sizeof(struct static_store) + *n_lanes * lane;
    char need_s[32], have_s[32];

    uint64_t hyper;
    int rc = hyper_plan(s, cfg, rows, hp, &hyper, err);
    if (rc)
        return rc;
    if (hp->cap) {
        *n_lanes = 1; /* gathers take the groups' batches in the order they were prepared */
        fixed = sizeof(struct static_store) + lane + hyper;
    }

    if (cfg->mem_bytes == 0) {
        *n_cached = n;
        *use_table = n < NO_SLOT;
        return OC_OK;
    }
    if (cfg->mem_bytes < fixed)
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store static: needs at least %s (a %u-byte bounce buffer and request "
                      "arrays for %" PRIu64 " rows of one batch%s) before caching any row; the "
                      "store's budget is %s",
                      oc_format_size(fixed, need_s, sizeof(need_s)), STORE_DISK_BOUNCE_BYTES, rows,
                      !hp->cap        ? ""
                      : cfg->accesses ? ", and two hyperbatch groups of that many rows, their "
                                        "reader and the feeder that fills them"
                                      : ", and two hyperbatch groups of that many rows, their "
                                        "reader and the sampled batches they hold",
                      oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
    store_cache_plan(s, cfg->mem_bytes - fixed, sizeof(uint64_t) + sizeof(uint32_t), n_cached,
                     use_table);
    return OC_OK;
}

static void pair_sift(uint64_t *ids, uint32_t *slot_of, uint64_t root, uint64_t n)
{
    for (;;) {
        uint64_t ch = 2 * root + 1;
        if (ch >= n)
            return;
        if (ch + 1 < n && ids[ch + 1] > ids[ch])
            ch++;
        if (ids[ch] <= ids[root])
            return;
        uint64_t t = ids[root];
        ids[root] = ids[ch];
        ids[ch] = t;
        uint32_t u = slot_of[root];
        slot_of[root] = slot_of[ch];
        slot_of[ch] = u;
        root = ch;
    }
}

/* The sorted layout from hot (slot k = hot[k]): ids ascending, slot_of alongside (heapsort). */
static int build_sorted(struct store_cache *k, uint64_t *hot, struct oc_err *err)
{
    k->slot_of = oc_alloc(k->n * sizeof(uint32_t), "store static: slot of id", err);
    if (!k->slot_of)
        return err ? err->status : OC_ERR_NOMEM;
    for (uint64_t i = 0; i < k->n; i++)
        k->slot_of[i] = (uint32_t)i;
    for (uint64_t i = k->n / 2; i-- > 0;)
        pair_sift(hot, k->slot_of, i, k->n);
    for (uint64_t i = k->n; i-- > 1;) {
        uint64_t t = hot[0];
        hot[0] = hot[i];
        hot[i] = t;
        uint32_t u = k->slot_of[0];
        k->slot_of[0] = k->slot_of[i];
        k->slot_of[i] = u;
        pair_sift(hot, k->slot_of, 0, i);
    }
    k->ids = hot;
    return OC_OK;
}

static int build_table(const struct oc_store *s, struct store_cache *k, const uint64_t *hot,
                       struct oc_err *err)
{
    k->table = oc_alloc(s->n_nodes * sizeof(uint32_t), "store static: slot table", err);
    if (!k->table)
        return err ? err->status : OC_ERR_NOMEM;
    for (uint64_t v = 0; v < s->n_nodes; v++)
        k->table[v] = NO_SLOT;
    for (uint64_t i = 0; i < k->n; i++)
        k->table[hot[i]] = (uint32_t)i;
    return OC_OK;
}

static void static_free(struct oc_store *s);
static int static_prepare(struct oc_store *s, uint64_t epoch, uint64_t batch,
                          const struct oc_sample_batch *b, struct oc_err *err);

static int static_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct static_store *c;
    uint64_t n_cached = 0, *hot = NULL;
    int use_table = 0, rc;
    struct store_hyper_shape hp;

    if ((rc = plan_capacity(s, cfg, &s->n_lanes, &n_cached, &use_table, &hp, err)))
        return rc;
    c = oc_calloc(1, sizeof(*c), "store static", err);
    if (!c)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = c;
    if ((rc = store_yield_init(&c->yield, &c->cache, s->row_bytes, "store static", err)))
        return rc;
    c->yield_ready = 1;
    if ((rc = store_disks_open(s, 1, c->disk, s->n_lanes, err)))
        return rc;
    /* hottest first: the coldest slots go back first; every row without a budget: any order */
    int ranked = n_cached < s->n_nodes || cfg->mem_bytes != 0;
    struct static_store_opts o;
    store_opts_read(&oc_store_static, cfg, &o);
    if ((rc = store_hot_select(s, cfg, o.hotness, n_cached, ranked, &hot, err)))
        return rc;
    c->cache.n = n_cached;
    rc = use_table ? build_table(s, &c->cache, hot, err) : build_sorted(&c->cache, hot, err);
    if (use_table || rc)
        oc_free(hot); /* else the sorted layout's ids */
    if (rc == OC_OK && n_cached &&
        (rc = store_cache_map(&c->cache, s->row_bytes, "store static", err)) == OC_OK)
        rc = load_slots(s, c, 0, n_cached, err);
    if (rc == OC_OK && cfg->mem_bytes)
        rc = store_yield_register(&c->yield, err);
    /* over an access map no batch pipeline shows it the batches, and on disk its groups
       hold more of them than the pipeline's slots: their feeder fills them (hp.fed) */
    if (rc == OC_OK && hp.cap)
        rc = store_hyper_open(s, &hp, cfg, static_prepare, &c->hyper, err);
    if (rc == OC_OK)
        s->caps.lookahead = store_hyper_lookahead(c->hyper);
    return rc;
}

/*
 * The batch pipeline shows each batch as it is sampled (or, over an access
 * map, the store's feeder as the map's ids): its misses join a hyperbatch.
 */
static int static_prepare(struct oc_store *s, uint64_t epoch, uint64_t batch,
                          const struct oc_sample_batch *b, struct oc_err *err)
{
    struct static_store *c = s->impl;
    return c->hyper ? store_hyper_prepare(s, c->hyper, &c->yield, epoch, batch, b, err) : OC_OK;
}

/* The batch pipeline's hook: static_prepare, unless the groups' feeder prepares the batches. */
static int static_sampled(struct oc_store *s, uint64_t epoch, uint64_t batch,
                          const struct oc_sample_batch *b, struct oc_err *err)
{
    struct static_store *c = s->impl;
    return store_hyper_fed(c->hyper) ? OC_OK : static_prepare(s, epoch, batch, b, err);
}

/* A plan batch through its hyperbatch group (with one); anything else through the cache. */
static int static_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                         uint64_t n, float *out, struct oc_err *err)
{
    struct static_store *c = s->impl;
    if (!c->hyper || epoch == STORE_OFF_PLAN)
        return store_yield_gather(s, &c->yield, &c->disk[s->lane], ids, n, out, err);
    return store_hyper_gather(s, c->hyper, &c->yield, &c->disk[0], epoch, batch, ids, n, out, err);
}

static void static_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    struct static_store *c = s->impl;
    store_yield_read_lock(&c->yield);
    out->held_bytes = sizeof(*c) + store_cache_held_bytes(s, &c->cache) +
                      store_disks_held_bytes(c->disk, s->n_lanes);
    store_yield_read_unlock(&c->yield);
    out->given_back_bytes = store_yield_missing(&c->yield) * s->row_bytes;
    store_hyper_stats(c->hyper, out);
}

static void static_free(struct oc_store *s)
{
    struct static_store *c = s->impl;
    if (!c)
        return;
    if (c->yield_ready)
        store_yield_deinit(&c->yield); /* unregistered first: waits for a reclaim in progress */
    store_hyper_free(c->hyper);        /* its stages (read, feeder) were joined (store_stages) */
    store_disks_close(c->disk, s->n_lanes);
    store_cache_free(&c->cache);
    oc_free(c);
    s->impl = NULL;
}

int oc_store_static_is_cached(const struct oc_store *s, uint64_t id)
{
    if (s->strat != &oc_store_static || id >= s->n_nodes)
        return 0;
    struct static_store *c = s->impl;
    store_yield_read_lock(&c->yield);
    int hit = store_cache_lookup(&c->cache, id) != NO_SLOT;
    store_yield_read_unlock(&c->yield);
    return hit;
}

uint64_t oc_store_static_n_cached(const struct oc_store *s)
{
    if (s->strat != &oc_store_static)
        return 0;
    return ((const struct static_store *)s->impl)->cache.n - oc_store_static_n_given_up(s);
}

uint64_t oc_store_static_n_given_up(const struct oc_store *s)
{
    if (s->strat != &oc_store_static)
        return 0;
    return store_yield_missing(&((const struct static_store *)s->impl)->yield);
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt static_opts[] = {
    {"hotness", OC_STORE_OPT_CHOICE, NULL, "degree|presample",
     "cache rows by in-degree or by access counts of a pre-sampled epoch",
     offsetof(struct static_store_opts, hotness), 0, 0, 0, 0, NULL},
    {"hyperbatch", OC_STORE_OPT_F64, "F", NULL,
     "share of the budget that stages the misses of the coming batches, read in one block "
     "pass per group (AGNES's hyperbatches); 0 = each batch reads its own",
     offsetof(struct static_store_opts, hyperbatch), 0, 0, 0, 0.9, NULL},
    {"hyperbatch-disk", OC_STORE_OPT_FLAG, NULL, NULL, STORE_HYPER_DISK_HELP,
     offsetof(struct static_store_opts, hyperbatch_disk), 0, 0, 0, 0, NULL},
};

/* What the log reports beside the common fields. */
static const struct oc_store_stat static_stat_table[] = {STORE_HYPER_STAT};

const struct store_strategy oc_store_static = {
    .name = "static",
    .summary = "hottest rows (in-degree or pre-sampled) pinned in a RAM cache, misses batched "
               "through io_uring (PaGraph / Helios CPU cache)",
    .open = static_open,
    .sampled = static_sampled,
    .gather = static_gather,
    .stats = static_stats,
    .free = static_free,
    .opts = static_opts,
    .n_opts = sizeof(static_opts) / sizeof(static_opts[0]),
    .opts_size = sizeof(struct static_store_opts),
    .serves_accesses = 1,
    .stat_table = static_stat_table,
    .n_stats = sizeof(static_stat_table) / sizeof(static_stat_table[0]),
};
