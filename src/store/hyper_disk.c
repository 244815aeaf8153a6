/*
 * hyper_disk.c — hyperbatch groups staged on disk (--hyperbatch-disk): the
 * AGNES artifact's spill of a hyperbatch's rows to storage when its buffers
 * cannot hold them, laid out as DiskGNN packs a batch. A group in memory
 * holds every row its batches miss, so a budget holds a few batches' worth
 * and each group's block pass reads a good part of the file for a few
 * batches. On disk a group holds only the ids (16 bytes per row for two
 * groups), so one scan of features.npy serves many more batches, up to
 * STORE_HYPER_MAX_DISK_BATCHES (the strategies' feeders sample them ahead,
 * feed.c: the pipeline's slots, 48 bytes per row, do not hold them).
 *
 *   read stage (one group):  each batch's rows sorted ─► one ascending scan of
 *   features.npy (oc_io_scan; partitions with no row needed are skipped) ─►
 *   per partition, each batch's run of rows copied to its chunk of the
 *   group's scratch file (write-behind, coalesced) ─► ready_q
 *   take (one batch):        its chunk read in one O_DIRECT read ─► rows served
 *                            from it until done frees it
 *
 * File: per group, an unlinked scratch file under DIR/plan/hyper (nothing
 * outlives the process); batch k's chunk starts at chunk_off[k] (page
 * aligned) and holds its staged rows in ascending row order.
 * Place in the data flow: store, inside the hyperbatch (hyper.c).
 * Thread-safety: pack runs on the read stage with the group STAGED (its
 * prepare is over); a take reads its own batch's chunk into its own buffer,
 * from a group TAKEN (read-only); counters are hyper.c's atomics.
 * Ownership: the hyperbatch owns the scan buffer, the cursors and the
 * groups' files; a take owns its chunk until done.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/hyper_group_int.h"

#define HYPER_PART_BYTES (64ull << 20) /* the scan's buffer at most: two halves read ahead */
#define HYPER_WRITE_RUN  (256u << 10)  /* bytes of one coalesced write */
#define HYPER_WRITE_BUFS 4u            /* runs being filled or written (write-behind) */

/* A batch's staged rows as the scan walks them: rows[at, n) not written yet, rows[at]
   going to dest in the group's file. */
struct hyper_cursor {
    const uint64_t *rows;
    uint64_t at, n, dest;
};

static uint64_t chunk_bytes(const struct store_hyper *h, uint64_t n_rows)
{
    return oc_io_align_up(n_rows * h->s->row_bytes);
}

uint64_t hyper_disk_part_bytes(const struct oc_store *s, uint64_t budget)
{
    uint64_t least = oc_io_scan_bytes_for(s->row_bytes), part = oc_io_align_up(budget / 8);
    return part < least ? least : part > HYPER_PART_BYTES ? HYPER_PART_BYTES : part;
}

uint64_t hyper_disk_fixed_bytes(const struct oc_store *s, const struct store_hyper_shape *sh)
{
    uint64_t offsets = HYPER_GROUPS * 2ull * (sh->max_batches + 1) * sizeof(uint64_t);
    return sh->part_bytes + HYPER_WRITE_BUFS * (uint64_t)HYPER_WRITE_RUN + offsets +
           sh->max_batches * sizeof(struct hyper_cursor) +
           sh->takers * oc_io_align_up(sh->batch_rows * s->row_bytes);
}

int hyper_disk_open(struct store_hyper *h, const char *plan_dir, struct oc_err *err)
{
    const char *name = h->s->strat->name;
    int owned, rc;
    if (!plan_dir)
        return OC_ERR(err, OC_ERR_ARG,
                      "store %s: --hyperbatch-disk stages its groups in files under the plan "
                      "directory, and this run has none (--plan-dir DIR)",
                      name);
    int w = snprintf(h->dir, sizeof(h->dir), "%s/hyper", plan_dir);
    if (w < 0 || (size_t)w + 64 >= sizeof(h->dir))
        return OC_ERR(err, OC_ERR_ARG, "store %s: plan directory %s: path too long", name,
                      plan_dir);
    if ((rc = oc_dir_make_owned(h->dir, &owned, err)))
        return oc_err_prefix(err, "store %s: hyperbatches on disk", name);
    uint64_t most = HYPER_GROUPS * h->shape.cap * h->s->row_bytes, room = 0;
    struct oc_err ignored;
    if (oc_fs_free_bytes(h->dir, &room, &ignored) == OC_OK && room < most) {
        char m_s[32], r_s[32];
        oc_log(OC_LOG_WARN,
               "store %s: hyperbatch groups on disk under %s take up to %s (every row of their "
               "batches missed), and its filesystem has %s free: a full disk fails the run "
               "naming the group's file",
               name, h->dir, oc_format_size(most, m_s, sizeof(m_s)),
               oc_format_size(room, r_s, sizeof(r_s)));
    }
    h->part = oc_io_buf_alloc(h->shape.part_bytes, "store hyperbatches: scan", err);
    h->cursors = oc_calloc(h->shape.max_batches, sizeof(*h->cursors), "store hyperbatches", err);
    if (!h->part || !h->cursors)
        return err->status;
    char near[sizeof(h->dir) + 8];
    snprintf(near, sizeof(near), "%s/group", h->dir);
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct store_hyper_group *g = &h->groups[i];
        g->boff =
            oc_alloc((h->shape.max_batches + 1) * sizeof(uint64_t), "store hyperbatches", err);
        g->chunk_off =
            oc_alloc((h->shape.max_batches + 1) * sizeof(uint64_t), "store hyperbatches", err);
        if (!g->boff || !g->chunk_off)
            return err->status;
        if ((rc = oc_tmp_scratch(near, OC_FILE_READ | OC_FILE_WRITE, &g->file, &g->direct, g->label,
                                 sizeof(g->label), err)))
            return oc_err_prefix(err, "store %s: hyperbatches on disk", name);
    }
    return OC_OK;
}

void hyper_disk_close(struct store_hyper *h)
{
    for (uint32_t i = 0; i < HYPER_GROUPS; i++) {
        struct store_hyper_group *g = &h->groups[i];
        oc_file_close(g->direct, NULL);
        oc_file_close(g->file, NULL);
        oc_free(g->boff);
        oc_free(g->chunk_off);
    }
    oc_free(h->part);
    oc_free(h->cursors);
}

/* Sorts each batch's rows (the sort's scratch grown to the largest) and places its chunk:
   the cursors, and the group's file bytes. */
static int place_chunks(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err)
{
    uint64_t off = 0;
    for (uint32_t k = 0; k < g->n_batches; k++) {
        uint64_t lo = g->boff[k], n = g->boff[k + 1] - lo, cap = atomic_load(&h->cap_sort);
        int rc = oc_grow_by(&h->sort_tmp, &cap, n, sizeof(uint64_t), OC_GROW_TWICE,
                            "store hyperbatches: sort", err);
        atomic_store(&h->cap_sort, cap);
        if (rc)
            return rc;
        oc_sort_u64(g->rows + lo, h->sort_tmp, n);
        for (uint64_t j = 1; j < n; j++) /* a row twice in a batch is packed twice: harmless */
            OC_ASSERT(g->rows[lo + j - 1] <= g->rows[lo + j]);
        g->chunk_off[k] = off;
        h->cursors[k] = (struct hyper_cursor){g->rows + lo, 0, n, off};
        off += chunk_bytes(h, n);
    }
    g->chunk_off[g->n_batches] = off;
    return OC_OK;
}

/* One past the last row below limit that a cursor needs (r0 + 1 at least). */
static uint64_t needed_end(const struct store_hyper *h, uint32_t count, uint64_t r0, uint64_t limit)
{
    uint64_t r1 = r0 + 1;
    for (uint32_t k = 0; k < count; k++) {
        const struct hyper_cursor *c = &h->cursors[k];
        uint64_t j = oc_lower_bound_u64(c->rows, c->at, c->n, limit);
        if (j > c->at && c->rows[j - 1] + 1 > r1)
            r1 = c->rows[j - 1] + 1;
    }
    return r1;
}

/* Copies each cursor's rows in [r0, r1) (the partition at part) to its chunk. */
static int write_partition(struct store_hyper *h, struct oc_write_behind *wb, uint32_t count,
                           uint64_t r0, uint64_t r1, const uint8_t *part, struct oc_err *err)
{
    uint64_t rb = h->s->row_bytes;
    int rc = OC_OK;
    for (uint32_t k = 0; k < count && rc == OC_OK; k++) {
        struct hyper_cursor *c = &h->cursors[k];
        uint64_t j1 = oc_lower_bound_u64(c->rows, c->at, c->n, r1);
        for (; c->at < j1 && rc == OC_OK; c->at++, c->dest += rb)
            rc = oc_write_behind_copy(wb, part + (c->rows[c->at] - r0) * rb, rb, c->dest, err);
    }
    return rc;
}

/* The scan: partitions from the lowest row a cursor still needs, trimmed to the last. */
static int scan_rows(struct store_hyper *h, struct oc_io_scan *sc, struct oc_write_behind *wb,
                     uint32_t count, struct oc_err *err)
{
    const struct oc_store *s = h->s;
    uint64_t rb = s->row_bytes;
    for (;;) {
        uint64_t r0 = UINT64_MAX;
        for (uint32_t k = 0; k < count; k++)
            if (h->cursors[k].at < h->cursors[k].n && h->cursors[k].rows[h->cursors[k].at] < r0)
                r0 = h->cursors[k].rows[h->cursors[k].at];
        if (r0 == UINT64_MAX)
            return OC_OK;
        uint64_t per = oc_io_scan_units(sc, store_file_off(s, r0), rb); /* what a half holds */
        uint64_t r1 = needed_end(h, count, r0, r0 + per);
        const uint8_t *part;
        int rc = oc_io_scan_read(sc, store_file_off(s, r0), (r1 - r0) * rb, &part, err);
        if (rc || (rc = write_partition(h, wb, count, r0, r1, part, err)))
            return rc;
    }
}

int hyper_disk_pack(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err)
{
    const struct oc_store *s = h->s;
    struct oc_io_scan sc;
    memset(&sc, 0, sizeof(sc));
    struct oc_write_behind *wb = NULL;
    int rc = place_chunks(h, g, err);
    if (rc == OC_OK)
        rc = oc_io_scan_open(&sc, s->path, h->part, h->shape.part_bytes, NULL, err);
    if (rc == OC_OK)
        rc = oc_write_behind_new(g->file, HYPER_WRITE_BUFS, HYPER_WRITE_RUN, &wb, err);
    if (rc == OC_OK)
        rc = scan_rows(h, &sc, wb, g->n_batches, err);
    if (rc == OC_OK)
        rc = oc_write_behind_flush(wb, err);
    oc_write_behind_free(wb);
    atomic_fetch_add(&h->read_bytes, sc.read_bytes);
    if (sc.piece) /* the scan's requests: pieces of its read-ahead */
        atomic_fetch_add(&h->n_reads, (sc.read_bytes + sc.piece - 1) / sc.piece);
    if (rc == OC_OK)
        atomic_fetch_add(&h->write_bytes, g->n_rows * s->row_bytes);
    oc_io_scan_close(&sc);
    if (rc)
        oc_err_prefix(err, "store %s: packing a hyperbatch of %u batches into %s", s->strat->name,
                      g->n_batches, g->label);
    return rc;
}

int hyper_disk_take(struct store_hyper *h, struct store_hyper_batch *t, struct oc_err *err)
{
    struct store_hyper_group *g = t->g;
    uint64_t k = (uint64_t)(t - g->batches), n = g->boff[k + 1] - g->boff[k];
    uint64_t want = n * h->s->row_bytes, len = chunk_bytes(h, n);
    size_t got = 0;
    t->chunk = NULL;
    if (n == 0)
        return OC_OK;
    if (!(t->chunk = oc_io_buf_alloc(len, "store hyperbatches: a batch's staged rows", err)))
        return err->status;
    int rc = oc_file_pread_upto(g->direct, t->chunk, len, g->chunk_off[k], &got, err);
    if (rc == OC_OK && got < want)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: truncated: epoch %" PRIu64 " batch %" PRIu64 "'s %" PRIu64
                    " staged bytes at offset %" PRIu64 " end after %zu",
                    g->label, t->epoch, t->batch, want, g->chunk_off[k], got);
    if (rc) {
        oc_free(t->chunk);
        t->chunk = NULL;
        return oc_err_prefix(err, "store %s: hyperbatch", h->s->strat->name);
    }
    atomic_fetch_add(&h->read_bytes, len);
    atomic_fetch_add(&h->n_reads, 1);
    return OC_OK;
}

const void *hyper_disk_row(const struct store_hyper_batch *t, uint64_t row)
{
    const struct store_hyper_group *g = t->g;
    uint64_t k = (uint64_t)(t - g->batches), lo = g->boff[k], hi = g->boff[k + 1];
    uint64_t j = oc_lower_bound_u64(g->rows, lo, hi, row);
    return j < hi && g->rows[j] == row ? t->chunk + (j - lo) * g->row_bytes : NULL;
}

void hyper_disk_done(struct store_hyper_batch *t)
{
    oc_free(t->chunk);
    t->chunk = NULL;
}
