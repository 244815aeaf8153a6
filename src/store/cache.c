/*
 * cache.c — a RAM cache of feature rows with its misses read from the
 * feature file, shared by `static` (its whole gather) and `diskgnn` (its
 * evaluation and out-of-plan gathers): lookup, then the misses queued
 * straight into their output rows and read through the batch reader
 * (same-page requests merged), then the hits converted and f16 misses
 * widened on the pool; all of a gather at once, or, when the reader has a
 * bound (max_rows), the misses sorted by id and read in runs of at most
 * that many rows (its request scratch then stays bounded whatever the
 * batch: 16 bytes of miss list per row instead of a request record).
 *
 *   rows:  [ slot 0 | slot 1 | ... | slot C-1 ]   (static: hottest first; diskgnn: id order)
 *   lookup: u32 table[N] (slot of v, or STORE_NO_SLOT) when table is set,
 *           else binary search over the ascending ids[C] (slot slot_of[k], or k)
 *   a slot >= n_live was given back (static's yield): a miss
 *
 * Place in the data flow: store (below the strategies that own a cache).
 * Thread-safety: the cache is read-only once filled; a gather belongs to the
 * store's thread, its copy pass runs on the pool, each task its own rows.
 * Ownership: the owning strategy fills rows/table/ids and frees them with
 * store_cache_free; the slot scratch is grown here.
 */
#include <string.h>

#include "store/store_int.h"

uint32_t store_cache_lookup(const struct store_cache *c, uint64_t id)
{
    uint32_t slot;
    if (c->table) {
        slot = c->table[id];
    } else if (c->slot_id) {
        slot = pl_hash_get(&c->hash, c->slot_id, id);
    } else {
        uint64_t lo = oc_lower_bound_u64(c->ids, 0, c->n, id);
        if (lo == c->n || c->ids[lo] != id)
            return STORE_NO_SLOT;
        slot = c->slot_of ? c->slot_of[lo] : (uint32_t)lo;
    }
    return slot < c->n_live ? slot : STORE_NO_SLOT;
}

struct cache_job {
    const struct oc_store *s;
    const uint8_t *rows;
    const uint32_t *slots;
    float *out;
    unsigned part; /* STORE_SLOTS_*: which rows this pass handles */
};

/* Hits: convert the cached row; misses (already in place): widen f16. */
static void cache_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct cache_job *j = ctx;
    const struct oc_store *s = j->s;
    uint64_t dim = s->feat_dim;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t slot = j->slots[i];
        float *dst = j->out + i * dim;
        if (slot != STORE_NO_SLOT) {
            if (j->part & STORE_SLOTS_HITS)
                store_row_to_f32(s->dtype, j->rows + (uint64_t)slot * s->row_bytes, dim, dst);
        } else if ((j->part & STORE_SLOTS_MISSES) && s->dtype == OC_DTYPE_F16) {
            store_row_widen_inplace(dst, dim);
        }
    }
}

int store_slots_copy_part(const struct oc_store *s, const uint8_t *rows, const uint32_t *slots,
                          uint64_t n, float *out, unsigned part, struct oc_err *err)
{
    struct cache_job j = {s, rows, slots, out, part};
    return store_for_rows(s->pool, n, cache_copy, &j, err);
}

int store_slots_copy(const struct oc_store *s, const uint8_t *rows, const uint32_t *slots,
                     uint64_t n, float *out, struct oc_err *err)
{
    return store_slots_copy_part(s, rows, slots, n, out, STORE_SLOTS_ALL, err);
}

/* The slots of rows [lo, hi) into d->slots[0 .. hi - lo); returns how many miss. */
static uint64_t look_up(const struct store_cache *c, struct store_disk *d, const uint64_t *ids,
                        uint64_t lo, uint64_t hi)
{
    uint64_t misses = 0;
    for (uint64_t i = lo; i < hi; i++) {
        d->slots[i - lo] = store_cache_lookup(c, ids[i]);
        misses += d->slots[i - lo] == STORE_NO_SLOT;
    }
    return misses;
}

/*
 * A gather larger than d->max_rows: its misses, sorted by their row of the
 * file (so each run reads a range of it and the block reader still merges
 * neighbours),
 * read in runs of max_rows, then the hits copied (and f16 misses widened)
 * max_rows rows at a time.
 */
static int gather_bounded(struct oc_store *s, struct store_cache *c, struct store_disk *d,
                          const uint64_t *ids, uint64_t n, float *out, uint64_t *misses,
                          struct oc_err *err)
{
    uint64_t m = 0, step = d->max_rows, dim = s->feat_dim;
    int rc = OC_OK;
    for (uint64_t i = 0; i < n; i++)
        if (store_cache_lookup(c, ids[i]) == STORE_NO_SLOT)
            d->miss[m++] = (struct store_miss){store_row_of(s, ids[i]), i};
    store_miss_sort(d->miss, m);
    for (uint64_t lo = 0; lo < m && rc == OC_OK; lo += step) {
        uint64_t hi = m - lo < step ? m : lo + step;
        for (uint64_t k = lo; k < hi && rc == OC_OK; k++)
            rc = store_disk_queue_row(s, d, d->miss[k].id, out + d->miss[k].pos * dim, err);
        if (rc)
            store_disk_discard(d);
        else
            rc = store_disk_run(s, d, err);
    }
    *misses += m;
    for (uint64_t lo = 0; lo < n && rc == OC_OK; lo += step) {
        uint64_t hi = n - lo < step ? n : lo + step;
        look_up(c, d, ids, lo, hi);
        rc = store_slots_copy(s, c->rows, d->slots, hi - lo, out + lo * dim, err);
    }
    return rc;
}

int store_cache_gather(struct oc_store *s, struct store_cache *c, struct store_disk *d,
                       const uint64_t *ids, uint64_t n, float *out, struct oc_err *err)
{
    uint64_t misses = 0;
    int rc = store_disk_reserve(d, n, err);
    if (rc == OC_OK && d->max_rows && n > d->max_rows) {
        rc = gather_bounded(s, c, d, ids, n, out, &misses, err);
    } else if (rc == OC_OK) {
        misses = look_up(c, d, ids, 0, n);
        for (uint64_t i = 0; i < n && misses && rc == OC_OK; i++)
            if (d->slots[i] == STORE_NO_SLOT)
                rc = store_disk_queue(s, d, ids[i], out + i * s->feat_dim, err);
        if (rc)
            store_disk_discard(d);
        else if (misses)
            rc = store_disk_run(s, d, err);
        if (rc == OC_OK)
            rc = store_slots_copy(s, c->rows, d->slots, n, out, err);
    }
    if (rc == OC_OK)
        store_count_gather(s, n, misses);
    return rc;
}

void store_cache_plan(const struct oc_store *s, uint64_t avail, uint64_t sorted_lookup_bytes,
                      uint64_t *n_cached, int *use_table)
{
    uint64_t n = s->n_nodes, row = s->row_bytes, table = n * sizeof(uint32_t);
    uint64_t c_sorted = avail / (row + sorted_lookup_bytes);
    uint64_t c_table = avail >= table ? (avail - table) / row : 0;
    if (c_sorted > n)
        c_sorted = n;
    if (c_table > n)
        c_table = n;
    *use_table = avail >= table && c_table >= c_sorted && n < STORE_NO_SLOT;
    *n_cached = *use_table ? c_table : c_sorted;
    if (*n_cached >= STORE_NO_SLOT)
        *n_cached = STORE_NO_SLOT - 1;
}

int store_cache_load(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t lo,
                     uint64_t hi, int counted, struct oc_err *err)
{
    uint64_t n_keys = c->table ? s->n_nodes : c->n, queued = 0;
    int rc = OC_OK;
    for (uint64_t i = 0; i < n_keys && rc == OC_OK; i++) {
        uint64_t id = c->table ? i : c->ids[i];
        uint32_t slot = c->table ? c->table[i] : c->slot_of ? c->slot_of[i] : (uint32_t)i;
        if (slot == STORE_NO_SLOT || slot < lo || slot >= hi)
            continue;
        rc = oc_io_batch_add(d->batch, d->f, store_row_off(s, id), s->row_bytes,
                             c->rows + (uint64_t)slot * s->row_bytes, err);
        if (rc == OC_OK && ++queued >= s->load_run_rows) {
            rc = store_disk_run_counted(s, d, counted, err);
            queued = 0;
        }
    }
    if (rc)
        store_disk_discard(d);
    else if (queued)
        rc = store_disk_run_counted(s, d, counted, err);
    return rc;
}

int store_cache_fill(struct oc_store *s, struct store_cache *c, struct store_disk *d, uint64_t n,
                     int use_table, uint64_t *ids, struct store_yield *y, const char *who,
                     struct oc_err *err)
{
    int rc = OC_OK;
    c->n = c->n_live = n;
    if (use_table) {
        c->table = oc_alloc(s->n_nodes * sizeof(uint32_t), "store cache: slot table", err);
        if (!c->table) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto out;
        }
        for (uint64_t v = 0; v < s->n_nodes; v++)
            c->table[v] = STORE_NO_SLOT;
        for (uint64_t k = 0; k < n; k++)
            c->table[ids[k]] = (uint32_t)k;
        oc_free(ids); /* the table replaces them before the rows are allocated (as planned) */
        ids = NULL;
    }
    if (n) {
        if (y) {
            if ((rc = store_cache_map(c, s->row_bytes, y->who, err)))
                goto out;
        } else if (!(c->rows =
                         oc_alloc_aligned(n * s->row_bytes, 64, "store cache: cached rows", err))) {
            rc = err ? err->status : OC_ERR_NOMEM;
            goto out;
        }
        if (!use_table)
            c->ids = ids; /* the sorted layout keeps them as its lookup (slot k = ids[k]) */
        if ((rc = store_cache_load(s, c, d, 0, n, 0, err)))
            oc_err_prefix(err, "store %s: loading the cache", who);
    }
out:
    if (c->ids != ids)
        oc_free(ids);
    return rc;
}

uint64_t store_cache_held_bytes(const struct oc_store *s, const struct store_cache *c)
{
    return c->n_live * s->row_bytes + (c->table ? s->n_nodes * sizeof(uint32_t) : 0) +
           (c->ids ? c->n * sizeof(uint64_t) : 0) + (c->slot_of ? c->n * sizeof(uint32_t) : 0);
}
