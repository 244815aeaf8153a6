/*
 * direct.c — the `direct` strategy ("DGL-OnDisk" baseline): no cache; every
 * requested row is its own O_DIRECT read of the page-aligned span covering
 * it, issued through the io_uring batch reader with same-page merging
 * switched off (two rows sharing a page are two reads; a repeated id is read
 * again).
 *
 * Place in the data flow: store; reads features.npy on every gather.
 * Thread-safety: a gather owns its lane's batch reader (one ring per lane:
 * cfg->lanes of them, as many as the budget holds, so the batch pipeline
 * can read two batches at once); the f16 widening afterwards runs on the
 * pool, each task its own rows.
 * Ownership: the file and batch reader are the store's; reads land directly
 * in the caller's output rows (f16 rows in their upper half, then widened).
 *
 * Memory (held_bytes): the batch reader: a 2 MiB aligned bounce buffer plus
 * its request and span arrays (about 90 bytes per row of the largest batch
 * seen, grown geometrically), per lane. With cfg->mem_bytes set, open refuses a budget
 * smaller than the bounce buffer plus STORE_ROW_SCRATCH_BYTES per expected
 * input row of a batch (store_budget_rows: measured by train, or the fanout bound) with OC_ERR_BUDGET.
 */
#include <inttypes.h>
#include <string.h>

#include "store/store_int.h"

struct direct_store {
    struct store_disk disk[STORE_MAX_LANES]; /* one reader per lane (s->n_lanes) */
};

static int direct_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct direct_store *d;
    char need_s[32], have_s[32];

    uint64_t rows = store_budget_rows(s, cfg);
    uint64_t need = STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
    if (cfg->mem_bytes && cfg->mem_bytes < need)
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store direct: needs %s (a %u-byte bounce buffer and request arrays for "
                      "%" PRIu64 " rows of one batch); the store's budget is %s",
                      oc_format_size(need, need_s, sizeof(need_s)), STORE_DISK_BOUNCE_BYTES, rows,
                      oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
    d = oc_calloc(1, sizeof(*d), "store direct", err);
    if (!d)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = d;
    s->n_lanes = store_lanes_for(cfg, need, cfg->mem_bytes);
    return store_disks_open(s, 0, d->disk, s->n_lanes, err);
}

static int direct_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                         uint64_t n, float *out, struct oc_err *err)
{
    (void)epoch, (void)batch;
    struct direct_store *ds = s->impl;
    struct store_disk *d = &ds->disk[s->lane];
    int rc;

    for (uint64_t i = 0; i < n; i++)
        if ((rc = store_disk_queue(s, d, ids[i], out + i * s->feat_dim, err))) {
            store_disk_discard(d);
            return rc;
        }
    if ((rc = store_disk_run(s, d, err)))
        return rc;
    if ((rc = store_disk_widen_all(s, out, n, err)))
        return rc;
    s->stats.requested_disk_bytes += n * (uint64_t)s->row_bytes;
    s->stats.tier_rows[OC_STORE_TIER_DISK] += n;
    return OC_OK;
}

static void direct_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct direct_store *d = s->impl;
    out->held_bytes = sizeof(*d) + store_disks_held_bytes(d->disk, s->n_lanes);
}

static void direct_free(struct oc_store *s)
{
    struct direct_store *d = s->impl;
    if (!d)
        return;
    store_disks_close(d->disk, s->n_lanes);
    oc_free(d);
    s->impl = NULL;
}

const struct store_strategy oc_store_direct = {
    .name = "direct",
    .summary = "one O_DIRECT read per requested row, no cache (DGL-OnDisk baseline)",
    .open = direct_open,
    .gather = direct_gather,
    .stats = direct_stats,
    .free = direct_free,
    .serves_accesses = 1,
};
