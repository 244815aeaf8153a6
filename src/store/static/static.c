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
 * the read side of `lock`; the copy pass runs on the pool, each task its own
 * range of output rows. The write side is taken to give rows back (any
 * thread, from the accountant) and to take them back (a gathering thread,
 * through its lane's reader).
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
 * Giving memory back (a budgeted store registers with the accountant, core.h):
 * when a request would pass --mem-budget — a batch larger than the one train
 * reserved for, say — the cache drops its coldest rows, the last slots
 * (at least YIELD_MIN_BYTES of them or a 16th of the cache, whichever is
 * less; whole pages freed), and the lookup treats slots past n_live as
 * misses. A gather that finds memory free again (beyond TAKEBACK_MARGIN_BYTES
 * or an 8th of the cache, whichever is less) reads those rows back first,
 * hottest first, and logs both. What is learned never changes: a row comes from the cache or
 * the file, the same bytes. A reclaim asked on the thread that is gathering
 * gives nothing (it holds the read side); one asked elsewhere waits for the
 * gather in progress at most YIELD_WAIT_S.
 *
 * Memory (held_bytes): n_live x row_bytes + the lookup + per lane the slot
 * scratch (4 bytes per row of the largest batch) and a batch reader (2 MiB
 * bounce and its request arrays). With cfg->mem_bytes = 0 every row is
 * cached. Otherwise the fixed part — per lane a bounce buffer and STORE_ROW_SCRATCH_BYTES
 * per batch row (store_budget_rows: measured by train, or the fanout bound);
 * a second lane only while the lanes take at most a quarter of the budget — comes off the budget first,
 * and a budget smaller than it is OC_ERR_BUDGET naming how much is needed;
 * the rest holds the lookup and as many rows as fit (possibly none).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"

#define NO_SLOT               STORE_NO_SLOT
#define YIELD_MIN_BYTES       (1u << 20) /* given back at once, at least (or a 16th of the cache) */
#define TAKEBACK_MARGIN_BYTES (4u << 20) /* left free when taking back (or an 8th of the cache) */
#define YIELD_WAIT_S          2          /* a reclaim waits this long for a gather in progress */

/* The cache (table layout: table set, ids NULL; sorted layout: ids and slot_of set) and its reader. */
struct static_store {
    struct store_disk disk[STORE_MAX_LANES]; /* a reader per lane (s->n_lanes) */
    struct store_cache cache;                /* n_live [lock] */
    uint64_t row_bytes;
    pthread_rwlock_t lock; /* gathers: read; giving rows back and taking them back: write */
    int lock_ready, reclaiming;
    size_t map_bytes;                  /* cache.rows: an anonymous mapping of n slots, 0 = none */
    _Atomic uint64_t missing;          /* n - n_live, for a look without the lock */
    uint64_t yielded_rows, taken_rows; /* since open [lock] */
    uint64_t n_yields, n_yields_logged;
};

/* What is given back at once at least, and left free when taking back (see the file comment). */
static uint64_t yield_min(const struct static_store *c)
{
    uint64_t part = c->cache.n * c->row_bytes / 16;
    return part < YIELD_MIN_BYTES ? part : YIELD_MIN_BYTES;
}

static uint64_t takeback_margin(const struct static_store *c)
{
    uint64_t part = c->cache.n * c->row_bytes / 8;
    return part < TAKEBACK_MARGIN_BYTES ? part : TAKEBACK_MARGIN_BYTES;
}

/* The store whose lock this thread holds (a gather or a take-back): its reclaims give nothing. */
static _Thread_local const struct static_store *holding;

/* The rows of slots [lo, hi), read through the store's reader (store_cache_load). */
static int load_slots(struct oc_store *s, struct static_store *c, uint64_t lo, uint64_t hi,
                      struct oc_err *err)
{
    int rc = store_cache_load(s, &c->cache, &c->disk[s->lane], lo, hi, err);
    if (rc)
        oc_err_prefix(err, "store static: loading the cache");
    return rc;
}

/*
 * Lanes, cached rows and layout for the budget; OC_ERR_BUDGET if the fixed
 * part of one lane does not fit. A second lane's reader is kept only while
 * the readers take at most a quarter of the budget: the rest is for rows.
 */
static int plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                         uint32_t *n_lanes, uint64_t *n_cached, int *use_table, struct oc_err *err)
{
    uint64_t n = s->n_nodes;
    uint64_t rows = store_budget_rows(s, cfg);
    uint64_t lane = STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
    *n_lanes = store_lanes_for(cfg, lane, cfg->mem_bytes / 4);
    uint64_t fixed = sizeof(struct static_store) + *n_lanes * lane;
    char need_s[32], have_s[32];

    if (cfg->mem_bytes == 0) {
        *n_cached = n;
        *use_table = n < NO_SLOT;
        return OC_OK;
    }
    if (cfg->mem_bytes < fixed)
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store static: needs at least %s (a %u-byte bounce buffer and request "
                      "arrays for %" PRIu64 " rows of one batch) before caching any row; the "
                      "store's budget is %s",
                      oc_format_size(fixed, need_s, sizeof(need_s)), STORE_DISK_BOUNCE_BYTES, rows,
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

static size_t page_up(uint64_t bytes)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    return (size_t)((bytes + page - 1) / page * page);
}

/* The rows' mapping (n slots), its bytes accounted. */
static int map_rows(struct static_store *c, uint64_t n, struct oc_err *err)
{
    uint64_t bytes = n * c->row_bytes;
    size_t len = page_up(bytes);
    int rc = oc_mem_reserve(bytes, "store static: cached rows", err);
    if (rc)
        return rc;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        oc_mem_release(bytes);
        return OC_ERR_ERRNO(err, OC_ERR_NOMEM, errno,
                            "store static: mapping %" PRIu64 " bytes of cached rows", bytes);
    }
    c->cache.rows = p;
    c->map_bytes = len;
    c->cache.n_live = n;
    return OC_OK;
}

/* ---- giving rows back and taking them back --------------------------------- */

/* The accountant's reclaimer: drops the coldest live rows, at least want bytes of them. */
static uint64_t static_yield(void *ctx, uint64_t want)
{
    struct static_store *c = ctx;
    if (holding == c)
        return 0; /* this thread gathers from the cache: the write side would wait on itself */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += YIELD_WAIT_S;
    if (pthread_rwlock_timedwrlock(&c->lock, &until) != 0)
        return 0;
    uint64_t row = c->row_bytes, live = c->cache.n_live;
    uint64_t give = want > yield_min(c) ? want : yield_min(c);
    uint64_t rows = (give + row - 1) / row;
    if (rows > live)
        rows = live;
    uint64_t keep = live - rows;
    size_t from = page_up(keep * row), to = page_up(live * row);
    if (to > from)
        madvise(c->cache.rows + from, to - from, MADV_DONTNEED);
    c->cache.n_live = keep;
    atomic_store(&c->missing, c->cache.n - keep);
    c->yielded_rows += rows;
    c->n_yields += rows > 0;
    pthread_rwlock_unlock(&c->lock);
    oc_mem_release(rows * row);
    return rows * row;
}

/* On the gathering thread: reads given-back rows again while the budget has room for them. */
static int take_back(struct oc_store *s, struct static_store *c, struct oc_err *err)
{
    uint64_t missing = atomic_load(&c->missing), row = s->row_bytes;
    if (!missing)
        return OC_OK;
    uint64_t budget = oc_mem_budget(), used = oc_mem_used(), margin = takeback_margin(c);
    uint64_t room = !budget ? UINT64_MAX : budget > used + margin ? budget - used - margin : 0;
    uint64_t rows = room / row < missing ? room / row : missing;
    if (rows == 0 || (rows < missing && rows * row < yield_min(c)))
        return OC_OK; /* nothing, or too little to be worth a pass over the lookup */
    struct oc_err local;
    pthread_rwlock_wrlock(&c->lock);
    holding = c;
    uint64_t live = c->cache.n_live;
    if (rows > c->cache.n - live)
        rows = c->cache.n - live;
    int rc = OC_OK;
    if (rows &&
        oc_mem_reserve(rows * row, "store static: cached rows taken back", &local) == OC_OK) {
        rc = load_slots(s, c, live, live + rows, err);
        if (rc == OC_OK) {
            c->cache.n_live = live + rows;
            atomic_store(&c->missing, c->cache.n - c->cache.n_live);
            c->taken_rows += rows;
        } else {
            oc_mem_release(rows * row);
        }
    } else {
        rows = 0; /* the room went to someone else meanwhile: later */
    }
    holding = NULL;
    pthread_rwlock_unlock(&c->lock);
    if (rc == OC_OK && rows) {
        char a[32];
        oc_log(OC_LOG_INFO,
               "store static: took back %" PRIu64 " cached rows (%s) given up earlier; %" PRIu64
               " still given up",
               rows, oc_format_size(rows * row, a, sizeof(a)), atomic_load(&c->missing));
    }
    return rc;
}

static void static_free(struct oc_store *s);

static int static_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct static_store *c;
    uint64_t n_cached = 0, *hot = NULL;
    int use_table = 0, rc;

    if ((rc = plan_capacity(s, cfg, &s->n_lanes, &n_cached, &use_table, err)))
        return rc;
    c = oc_calloc(1, sizeof(*c), "store static", err);
    if (!c)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = c;
    c->row_bytes = s->row_bytes;
    if (pthread_rwlock_init(&c->lock, NULL) != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "store static: cannot make its lock");
    c->lock_ready = 1;
    if ((rc = store_disks_open(s, 1, c->disk, s->n_lanes, err)))
        return rc;
    if ((rc = store_hot_select(s, cfg, n_cached, 1, &hot, err)))
        return rc;
    c->cache.n = n_cached;
    rc = use_table ? build_table(s, &c->cache, hot, err) : build_sorted(&c->cache, hot, err);
    if (use_table || rc)
        oc_free(hot); /* else the sorted layout's ids */
    if (rc == OC_OK && n_cached && (rc = map_rows(c, n_cached, err)) == OC_OK)
        rc = load_slots(s, c, 0, n_cached, err);
    if (rc == OC_OK && cfg->mem_bytes && n_cached) {
        if ((rc = oc_mem_reclaimer_add(static_yield, c, err)) == OC_OK)
            c->reclaiming = 1;
    }
    return rc;
}

static int static_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                         struct oc_err *err)
{
    struct static_store *c = s->impl;
    /* Memory first, outside the lock, where the cache can still give rows back for it. */
    struct store_disk *d = &c->disk[s->lane];
    int rc = store_disk_reserve(d, n, err);
    if (rc == OC_OK)
        rc = take_back(s, c, err);
    if (rc)
        return rc;
    pthread_rwlock_rdlock(&c->lock);
    holding = c;
    rc = store_cache_gather(s, &c->cache, d, ids, n, out, err);
    uint64_t yields = c->n_yields, rows = c->yielded_rows - c->taken_rows;
    holding = NULL;
    pthread_rwlock_unlock(&c->lock);
    if (yields != c->n_yields_logged) { /* only this thread writes n_yields_logged */
        char a[32];
        c->n_yields_logged = yields;
        oc_log(OC_LOG_INFO,
               "store static: gave up %" PRIu64 " cached rows (%s) to requests the budget could "
               "not otherwise give; they are read from disk until memory frees up",
               rows, oc_format_size(rows * s->row_bytes, a, sizeof(a)));
    }
    return rc;
}

static void static_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    struct static_store *c = s->impl;
    pthread_rwlock_rdlock(&c->lock);
    out->held_bytes = sizeof(*c) + store_cache_held_bytes(s, &c->cache) +
                      store_disks_held_bytes(c->disk, s->n_lanes);
    pthread_rwlock_unlock(&c->lock);
}

static void static_free(struct oc_store *s)
{
    struct static_store *c = s->impl;
    if (!c)
        return;
    if (c->reclaiming)
        oc_mem_reclaimer_remove(static_yield, c); /* waits for a reclaim in progress */
    store_disks_close(c->disk, s->n_lanes);
    if (c->map_bytes) {
        munmap(c->cache.rows, c->map_bytes);
        oc_mem_release(c->cache.n_live * c->row_bytes);
        c->cache.rows = NULL;
    }
    store_cache_free(&c->cache);
    if (c->lock_ready)
        pthread_rwlock_destroy(&c->lock);
    oc_free(c);
    s->impl = NULL;
}

int oc_store_static_is_cached(const struct oc_store *s, uint64_t id)
{
    if (s->strat != &oc_store_static || id >= s->n_nodes)
        return 0;
    struct static_store *c = s->impl;
    pthread_rwlock_rdlock(&c->lock);
    int hit = store_cache_lookup(&c->cache, id) != NO_SLOT;
    pthread_rwlock_unlock(&c->lock);
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
    return atomic_load(&((struct static_store *)s->impl)->missing);
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt static_opts[] = {
    {"hotness", OC_STORE_OPT_CHOICE, NULL, "degree|presample",
     "cache rows by in-degree or by access counts of a pre-sampled epoch",
     offsetof(struct oc_store_config, hotness), 0, 0, 0},
};

const struct store_strategy oc_store_static = {
    .name = "static",
    .summary = "hottest rows (in-degree or pre-sampled) pinned in a RAM cache, misses batched "
               "through io_uring (PaGraph / Helios CPU cache)",
    .open = static_open,
    .gather = static_gather,
    .stats = static_stats,
    .free = static_free,
    .opts = static_opts,
    .n_opts = sizeof(static_opts) / sizeof(static_opts[0]),
};
