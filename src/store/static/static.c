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
 * Thread-safety: the store's thread owns the batch reader; the copy pass runs
 * on the pool, each task its own range of output rows; the cache is
 * read-only after open.
 * Ownership: cache rows, lookup structure, scratch and batch reader are the
 * store's.
 *
 * Cache layout (rows kept as stored, f16 or f32, so an f16 file caches twice
 * the rows; widening is the same oc_f16_to_f32 as everywhere):
 *
 *   rows:  [ slot 0 | slot 1 | ... | slot C-1 ]   slot k = k-th smallest cached id
 *   lookup, one of:
 *     direct table  u32 table[N]: slot of v, or NO_SLOT      4 bytes per node
 *     sorted ids    u64 ids[C] ascending, slot = position     8 bytes per cached row
 *
 * The layout is whichever caches more rows in the budget (the table on a tie:
 * O(1) lookups): the table wins while the graph is small next to the budget,
 * the sorted array when 4 bytes per node would eat the room for rows.
 *
 * Memory (held_bytes): C x row_bytes + the lookup + the per-gather slot
 * scratch (4 bytes per row of the largest batch) + the batch reader (2 MiB
 * bounce and its request arrays). With cfg->mem_bytes = 0 every row is
 * cached. Otherwise the fixed part — bounce buffer and STORE_ROW_SCRATCH_BYTES
 * per batch row (store_budget_rows: measured by train, or the fanout bound) — comes off the budget first,
 * and a budget smaller than it is OC_ERR_BUDGET naming how much is needed;
 * the rest holds the lookup and as many rows as fit (possibly none).
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "store/store_int.h"

#define NO_SLOT   STORE_NO_SLOT
#define LOAD_ROWS 4096u /* rows queued per batch run while filling the cache */

/* The cache (table layout: table set, ids NULL; sorted layout: ids set) and its reader. */
struct static_store {
    struct store_disk disk;
    struct store_cache cache;
};

/* Reads the cached rows (ascending ids) into their slots, LOAD_ROWS at a time, pages merged. */
static int load_rows(struct oc_store *s, struct static_store *c, const uint64_t *ids,
                     struct oc_err *err)
{
    int rc = OC_OK;
    uint64_t n = c->cache.n;
    for (uint64_t k0 = 0; k0 < n && rc == OC_OK; k0 += LOAD_ROWS) {
        uint64_t k1 = n - k0 < LOAD_ROWS ? n : k0 + LOAD_ROWS;
        for (uint64_t k = k0; k < k1 && rc == OC_OK; k++)
            rc = oc_io_batch_add(c->disk.batch, c->disk.f, store_row_off(s, ids[k]), s->row_bytes,
                                 c->cache.rows + k * s->row_bytes, err);
        if (rc)
            store_disk_discard(&c->disk);
        else
            rc = oc_io_batch_run(c->disk.batch, err);
    }
    if (rc)
        oc_err_prefix(err, "store static: loading the cache");
    return rc;
}

/* Cached rows and layout for the budget; OC_ERR_BUDGET if the fixed part does not fit. */
static int plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                         uint64_t *n_cached, int *use_table, struct oc_err *err)
{
    uint64_t n = s->n_nodes, row = s->row_bytes;
    uint64_t rows = store_budget_rows(s, cfg);
    uint64_t fixed =
        sizeof(struct static_store) + STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
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
    uint64_t avail = cfg->mem_bytes - fixed, table = n * sizeof(uint32_t);
    uint64_t c_sorted = avail / (row + sizeof(uint64_t));
    uint64_t c_table = avail >= table ? (avail - table) / row : 0;
    if (c_sorted > n)
        c_sorted = n;
    if (c_table > n)
        c_table = n;
    *use_table = avail >= table && c_table >= c_sorted && n < NO_SLOT;
    *n_cached = *use_table ? c_table : c_sorted;
    if (*n_cached >= NO_SLOT)
        *n_cached = NO_SLOT - 1;
    return OC_OK;
}

static int static_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct static_store *c;
    uint64_t n_cached = 0, *ids = NULL;
    int use_table = 0, rc;

    if ((rc = plan_capacity(s, cfg, &n_cached, &use_table, err)))
        return rc;
    c = oc_calloc(1, sizeof(*c), "store static", err);
    if (!c)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = c;
    if ((rc = store_disk_open(s, 1, &c->disk, err)))
        return rc;
    if ((rc = store_hot_select(s, cfg, n_cached, &ids, err)))
        return rc;
    c->cache.n = n_cached;
    if (use_table) {
        c->cache.table = oc_alloc(s->n_nodes * sizeof(uint32_t), "store static: slot table", err);
        if (!c->cache.table) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto out;
        }
        for (uint64_t v = 0; v < s->n_nodes; v++)
            c->cache.table[v] = NO_SLOT;
        for (uint64_t k = 0; k < n_cached; k++)
            c->cache.table[ids[k]] = (uint32_t)k;
    }
    if (n_cached) {
        c->cache.rows =
            oc_alloc_aligned(n_cached * s->row_bytes, 64, "store static: cached rows", err);
        if (!c->cache.rows) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto out;
        }
        rc = load_rows(s, c, ids, err);
    }
out:
    if (use_table || rc) {
        oc_free(ids);
        ids = NULL;
    }
    c->cache.ids = ids; /* the sorted layout keeps them as its lookup */
    return rc;
}

static int static_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                         struct oc_err *err)
{
    struct static_store *c = s->impl;
    return store_cache_gather(s, &c->cache, &c->disk, ids, n, out, err);
}

static void static_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct static_store *c = s->impl;
    out->held_bytes =
        sizeof(*c) + store_cache_held_bytes(s, &c->cache) + store_disk_held_bytes(&c->disk);
}

static void static_free(struct oc_store *s)
{
    struct static_store *c = s->impl;
    if (!c)
        return;
    store_disk_close(&c->disk);
    store_cache_free(&c->cache);
    oc_free(c);
    s->impl = NULL;
}

int oc_store_static_is_cached(const struct oc_store *s, uint64_t id)
{
    if (s->strat != &oc_store_static || id >= s->n_nodes)
        return 0;
    return store_cache_lookup(&((const struct static_store *)s->impl)->cache, id) != NO_SLOT;
}

uint64_t oc_store_static_n_cached(const struct oc_store *s)
{
    if (s->strat != &oc_store_static)
        return 0;
    return ((const struct static_store *)s->impl)->cache.n;
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt static_opts[] = {
    {"hotness", OC_STORE_OPT_CHOICE, NULL, "degree|presample",
     "cache rows by in-degree or by access counts of a pre-sampled epoch",
     offsetof(struct oc_store_config, hotness), 0, 0},
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
