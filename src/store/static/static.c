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

#define NO_SLOT STORE_NO_SLOT

/* The cache (table layout: table set, ids NULL; sorted layout: ids set) and its reader. */
struct static_store {
    struct store_disk disk;
    struct store_cache cache;
};

/* Cached rows and layout for the budget; OC_ERR_BUDGET if the fixed part does not fit. */
static int plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                         uint64_t *n_cached, int *use_table, struct oc_err *err)
{
    uint64_t n = s->n_nodes;
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
    store_cache_plan(s, cfg->mem_bytes - fixed, n_cached, use_table);
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
    return store_cache_fill(s, &c->cache, &c->disk, n_cached, use_table, ids, "static", err);
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
