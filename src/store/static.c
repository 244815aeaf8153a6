/*
 * static.c — the `static` strategy (PaGraph / Helios CPU cache): the hottest
 * rows, chosen once at open by in-degree or by pre-sampled access counts
 * (static_hot.c), pinned in a RAM cache; misses are read from features.npy
 * with O_DIRECT through the io_uring batch reader, merging requests that
 * share or touch a page, straight into the output rows.
 *
 * Place in the data flow: store; at open graph/sample ──► hotness ──► cache
 * rows loaded from features.npy; per gather: lookup ──► misses read ──► hits
 * copied and f16 widened on the pool.
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
 * per expected batch row (store_expected_rows) — comes off the budget first,
 * and a budget smaller than it is OC_ERR_BUDGET naming how much is needed;
 * the rest holds the lookup and as many rows as fit (possibly none).
 */
#include <inttypes.h>
#include <string.h>

#include "store/store_int.h"

#define NO_SLOT   UINT32_MAX
#define LOAD_ROWS 4096u /* rows queued per batch run while filling the cache */

struct static_store {
    struct store_disk disk;
    uint64_t n_cached;
    uint8_t *rows;   /* n_cached x row_bytes, as stored */
    uint32_t *table; /* direct layout: n_nodes entries; NULL otherwise */
    uint64_t *ids;   /* sorted layout: n_cached ascending ids; NULL otherwise */
    uint32_t *slots; /* per gather: slot of each requested row, or NO_SLOT */
    uint64_t cap_slots;
};

static inline uint32_t lookup(const struct static_store *c, uint64_t id)
{
    if (c->table)
        return c->table[id];
    uint64_t lo = 0, hi = c->n_cached;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (c->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n_cached && c->ids[lo] == id ? (uint32_t)lo : NO_SLOT;
}

/* Reads the cached rows (ascending ids) into their slots, LOAD_ROWS at a time, pages merged. */
static int load_rows(struct oc_store *s, struct static_store *c, const uint64_t *ids,
                     struct oc_err *err)
{
    int rc = OC_OK;
    for (uint64_t k0 = 0; k0 < c->n_cached && rc == OC_OK; k0 += LOAD_ROWS) {
        uint64_t k1 = c->n_cached - k0 < LOAD_ROWS ? c->n_cached : k0 + LOAD_ROWS;
        for (uint64_t k = k0; k < k1 && rc == OC_OK; k++)
            rc = oc_io_batch_add(c->disk.batch, c->disk.f, store_row_off(s, ids[k]), s->row_bytes,
                                 c->rows + k * s->row_bytes, err);
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
    uint64_t rows = store_expected_rows(s, cfg);
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
    c->n_cached = n_cached;
    if (use_table) {
        c->table = oc_alloc(s->n_nodes * sizeof(uint32_t), "store static: slot table", err);
        if (!c->table) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto out;
        }
        for (uint64_t v = 0; v < s->n_nodes; v++)
            c->table[v] = NO_SLOT;
        for (uint64_t k = 0; k < n_cached; k++)
            c->table[ids[k]] = (uint32_t)k;
    }
    if (n_cached) {
        c->rows = oc_alloc_aligned(n_cached * s->row_bytes, 64, "store static: cached rows", err);
        if (!c->rows) {
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
    c->ids = ids; /* the sorted layout keeps them as its lookup */
    return rc;
}

struct static_job {
    const struct oc_store *s;
    const struct static_store *c;
    float *out;
};

/* Hits: convert the cached row; misses (already in place): widen f16. */
static void static_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct static_job *j = ctx;
    const struct oc_store *s = j->s;
    uint64_t dim = s->feat_dim;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t slot = j->c->slots[i];
        float *dst = j->out + i * dim;
        if (slot != NO_SLOT)
            store_row_to_f32(s->dtype, j->c->rows + (uint64_t)slot * s->row_bytes, dim, dst);
        else if (s->dtype == OC_DTYPE_F16)
            store_row_widen_inplace(dst, dim);
    }
}

static int static_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                         struct oc_err *err)
{
    struct static_store *c = s->impl;
    uint64_t misses = 0;
    int rc;

    if (n > c->cap_slots) {
        uint64_t cap = n > 2 * c->cap_slots ? n : 2 * c->cap_slots;
        uint32_t *p = oc_realloc(c->slots, cap * sizeof(uint32_t), "store static: slots", err);
        if (!p)
            return err ? err->status : OC_ERR_NOMEM;
        c->slots = p;
        c->cap_slots = cap;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t slot = lookup(c, ids[i]);
        c->slots[i] = slot;
        if (slot != NO_SLOT)
            continue;
        misses++;
        if ((rc = store_disk_queue(s, &c->disk, ids[i], out + i * s->feat_dim, err))) {
            store_disk_discard(&c->disk);
            return rc;
        }
    }
    if (misses && (rc = store_disk_run(s, &c->disk, err)))
        return rc;
    struct static_job j = {s, c, out};
    if ((rc = store_for_rows(s->pool, n, static_copy, &j, err)))
        return rc;
    s->stats.requested_disk_bytes += misses * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += n - misses;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += misses;
    return OC_OK;
}

static void static_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct static_store *c = s->impl;
    out->held_bytes = sizeof(*c) + c->n_cached * s->row_bytes +
                      (c->table ? s->n_nodes * sizeof(uint32_t) : 0) +
                      (c->ids ? c->n_cached * sizeof(uint64_t) : 0) +
                      c->cap_slots * sizeof(uint32_t) + store_disk_held_bytes(&c->disk);
}

static void static_free(struct oc_store *s)
{
    struct static_store *c = s->impl;
    if (!c)
        return;
    store_disk_close(&c->disk);
    oc_free(c->rows);
    oc_free(c->table);
    oc_free(c->ids);
    oc_free(c->slots);
    oc_free(c);
    s->impl = NULL;
}

int oc_store_static_is_cached(const struct oc_store *s, uint64_t id)
{
    if (s->strat != &oc_store_static || id >= s->n_nodes)
        return 0;
    return lookup(s->impl, id) != NO_SLOT;
}

uint64_t oc_store_static_n_cached(const struct oc_store *s)
{
    if (s->strat != &oc_store_static)
        return 0;
    return ((const struct static_store *)s->impl)->n_cached;
}

const struct store_strategy oc_store_static = {
    .name = "static",
    .summary = "hottest rows (in-degree or pre-sampled) pinned in a RAM cache, misses batched "
               "through io_uring (PaGraph / Helios CPU cache)",
    .open = static_open,
    .gather = static_gather,
    .stats = static_stats,
    .free = static_free,
};
