/*
 * layout.c — DiskGNN placement of a window: checks the trace, picks the
 * segment size s, places every access (CPU cache / segment disk cache /
 * the batch's packed chunk), and lays the window file out (see plan.h for
 * the diagram).
 *
 *   plan_ctx_init ── checks, scratch with CPU rows marked
 *        │
 *   choose s ─────── plan_scan(s) for s = 1, 2, ... until the file fits
 *        │
 *   layout_fill ──── plan_scan(s) sizes the arrays, then per segment:
 *                    count accesses per row → classify → packed rows sorted
 *                    → disk-cache rows ordered (minhash.c) → addresses
 *
 * Sizing for one s is O(accesses of the window): per segment, a row's
 * scratch entry counts the segment's batches reading it, and only the
 * entries touched are reset (plan_int.h).
 *
 * Place in the data flow: plan; store's diskgnn strategy builds one layout
 * per window, packs the file by it and reads by its addresses.
 * Thread-safety: pure over the arguments; a layout belongs to one thread.
 * Ownership: a layout owns its arrays (oc_alloc, consumer "plan") until
 * oc_plan_layout_deinit; traces and options are borrowed.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

/* ---- checked trace context ------------------------------------------------------ */

void plan_ctx_deinit(struct plan_ctx *c)
{
    if (!c)
        return;
    oc_free(c->mark);
    memset(c, 0, sizeof(*c));
}

static int check_opts(const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                      struct oc_err *err)
{
    if (!t || !o)
        return OC_ERR(err, OC_ERR_ARG, "plan: NULL trace or options");
    if (t->n_nodes > PLAN_MAX_NODES)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "plan: %llu nodes is more than the %llu supported",
                      (unsigned long long)t->n_nodes, (unsigned long long)PLAN_MAX_NODES);
    if (t->n_batches && !t->off)
        return OC_ERR(err, OC_ERR_ARG, "plan: trace of %llu batches has no offsets",
                      (unsigned long long)t->n_batches);
    if (o->row_bytes == 0)
        return OC_ERR(err, OC_ERR_ARG, "plan: row_bytes is 0");
    if (t->n_batches && !o->rec_bytes)
        return OC_ERR(err, OC_ERR_ARG, "plan: no record sizes (rec_bytes) for %llu batches",
                      (unsigned long long)t->n_batches);
    if (o->n_cpu && !o->cpu_ids)
        return OC_ERR(err, OC_ERR_ARG, "plan: %llu CPU rows but no cpu_ids",
                      (unsigned long long)o->n_cpu);
    for (uint64_t k = 0; k < o->n_cpu; k++) {
        if (o->cpu_ids[k] >= t->n_nodes)
            return OC_ERR(err, OC_ERR_ARG, "plan: cpu_ids[%llu] = %llu >= n_nodes %llu",
                          (unsigned long long)k, (unsigned long long)o->cpu_ids[k],
                          (unsigned long long)t->n_nodes);
        if (k && o->cpu_ids[k] <= o->cpu_ids[k - 1])
            return OC_ERR(err, OC_ERR_ARG,
                          "plan: cpu_ids not ascending and distinct at %llu (%llu after %llu)",
                          (unsigned long long)k, (unsigned long long)o->cpu_ids[k],
                          (unsigned long long)o->cpu_ids[k - 1]);
    }
    if (t->n_batches && t->off[0] != 0)
        return OC_ERR(err, OC_ERR_ARG, "plan: trace offsets start at %llu, not 0",
                      (unsigned long long)t->off[0]);
    for (uint64_t b = 0; b < t->n_batches; b++)
        if (t->off[b + 1] < t->off[b])
            return OC_ERR(err, OC_ERR_ARG,
                          "plan: trace offsets decrease at batch %llu (%llu < %llu)",
                          (unsigned long long)b, (unsigned long long)t->off[b + 1],
                          (unsigned long long)t->off[b]);
    if (t->n_batches && t->off[t->n_batches] && !t->rows)
        return OC_ERR(err, OC_ERR_ARG, "plan: trace of %llu accesses has no rows",
                      (unsigned long long)t->off[t->n_batches]);
    return OC_OK;
}

int plan_ctx_init(struct plan_ctx *c, const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                  struct oc_err *err)
{
    memset(c, 0, sizeof(*c));
    int rc = check_opts(t, o, err);
    if (rc)
        return rc;
    c->t = t;
    c->o = o;
    c->m = o->min_share ? o->min_share : 1;
    c->mark = oc_calloc(t->n_nodes ? t->n_nodes : 1, sizeof(uint32_t), PLAN_CONSUMER, err);
    if (!c->mark)
        return err->status;
    for (uint64_t b = 0; b < t->n_batches; b++) {
        uint64_t i;
        for (i = t->off[b]; i < t->off[b + 1]; i++) {
            uint64_t v = t->rows[i];
            if (v >= t->n_nodes) {
                rc = OC_ERR(err, OC_ERR_ARG, "plan: batch %llu reads id %llu >= n_nodes %llu",
                            (unsigned long long)b, (unsigned long long)v,
                            (unsigned long long)t->n_nodes);
                break;
            }
            if (c->mark[v]) {
                rc = OC_ERR(err, OC_ERR_ARG, "plan: batch %llu reads id %llu twice",
                            (unsigned long long)b, (unsigned long long)v);
                break;
            }
            c->mark[v] = 1;
        }
        if (rc) {
            plan_ctx_deinit(c);
            return rc;
        }
        for (i = t->off[b]; i < t->off[b + 1]; i++)
            c->mark[t->rows[i]] = 0;
    }
    for (uint64_t k = 0; k < o->n_cpu; k++)
        c->mark[o->cpu_ids[k]] = PLAN_MARK_CPU;
    return OC_OK;
}

/* ---- sizes ---------------------------------------------------------------------- */

uint64_t oc_plan_chunk_bytes(uint64_t rec_bytes, uint64_t n_input, uint64_t n_packed,
                             uint64_t row_bytes)
{
    return oc_plan_chunk_meta_bytes(rec_bytes, n_input) + n_packed * row_bytes;
}

/* *acc += round_up(chunk or cache bytes, page); 0 or 1 on overflow. */
static int add_piece(uint64_t *acc, uint64_t base, uint64_t n, uint64_t each)
{
    uint64_t x;
    if (__builtin_mul_overflow(n, each, &x) || __builtin_add_overflow(x, base, &x) ||
        __builtin_add_overflow(x, (uint64_t)(OC_PLAN_PAGE - 1), &x))
        return 1;
    x -= x % OC_PLAN_PAGE;
    return __builtin_add_overflow(*acc, x, acc);
}

static uint64_t seg_end(const struct plan_ctx *c, uint64_t b0, uint64_t s)
{
    uint64_t n = c->t->n_batches;
    return s >= n - b0 ? n : b0 + s;
}

/* Counts, per non-CPU row, the batches of [b0, b1) that read it. */
static void seg_count(struct plan_ctx *c, uint64_t b0, uint64_t b1)
{
    const struct oc_plan_trace *t = c->t;
    for (uint64_t i = t->off[b0]; i < t->off[b1]; i++) {
        uint32_t *mk = &c->mark[t->rows[i]];
        if (*mk != PLAN_MARK_CPU && (*mk & PLAN_MARK_CNT) != PLAN_MARK_CNT)
            (*mk)++;
    }
}

static void seg_reset(struct plan_ctx *c, uint64_t b0, uint64_t b1)
{
    const struct oc_plan_trace *t = c->t;
    for (uint64_t i = t->off[b0]; i < t->off[b1]; i++) {
        uint32_t *mk = &c->mark[t->rows[i]];
        if (*mk != PLAN_MARK_CPU)
            *mk = 0;
    }
}

int plan_scan(struct plan_ctx *c, uint64_t s, uint64_t *n_packed, uint64_t *n_shared,
              uint64_t *bytes, struct oc_err *err)
{
    const struct oc_plan_trace *t = c->t;
    const struct oc_plan_opts *o = c->o;
    uint64_t total = 0, j = 0;

    for (uint64_t b0 = 0; b0 < t->n_batches; b0 = seg_end(c, b0, s), j++) {
        uint64_t b1 = seg_end(c, b0, s), shared = 0;
        int ovf = 0;
        seg_count(c, b0, b1);
        for (uint64_t b = b0; b < b1; b++) {
            uint64_t packed = 0;
            for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
                uint32_t *mk = &c->mark[t->rows[i]];
                if (*mk == PLAN_MARK_CPU)
                    continue;
                if ((*mk & PLAN_MARK_CNT) > c->m) {
                    shared += !(*mk & PLAN_MARK_SEEN);
                    *mk |= PLAN_MARK_SEEN;
                } else {
                    packed++;
                }
            }
            uint64_t n_in = t->off[b + 1] - t->off[b], head;
            ovf |= __builtin_add_overflow((uint64_t)OC_PLAN_CHUNK_HEADER, o->rec_bytes[b], &head) ||
                   __builtin_mul_overflow(n_in, (uint64_t)8, &n_in) ||
                   __builtin_add_overflow(head, n_in, &head) ||
                   add_piece(&total, head, packed, o->row_bytes);
            if (n_packed)
                n_packed[b] = packed;
        }
        ovf |= shared && add_piece(&total, 0, shared, o->row_bytes);
        if (n_shared)
            n_shared[j] = shared;
        seg_reset(c, b0, b1);
        if (ovf)
            return OC_ERR(err, OC_ERR_ARG,
                          "plan: the window file's size overflows 64 bits (segment of batches "
                          "%llu..%llu)",
                          (unsigned long long)b0, (unsigned long long)b1 - 1);
    }
    *bytes = total;
    return OC_OK;
}

int oc_plan_file_bytes(const struct oc_plan_trace *t, const struct oc_plan_opts *o, uint64_t s,
                       uint64_t *bytes, struct oc_err *err)
{
    struct oc_err tmp;
    struct plan_ctx c;
    if (!err)
        err = &tmp;
    if (!bytes)
        return OC_ERR(err, OC_ERR_ARG, "plan: file bytes: NULL output");
    *bytes = 0;
    if (s == 0)
        return OC_ERR(err, OC_ERR_ARG, "plan: segment size 0");
    int rc = plan_ctx_init(&c, t, o, err);
    if (rc)
        return rc;
    rc = plan_scan(&c, s, NULL, NULL, bytes, err);
    plan_ctx_deinit(&c);
    return rc;
}

/* ---- the layout ----------------------------------------------------------------- */

void oc_plan_layout_deinit(struct oc_plan_layout *l)
{
    if (!l)
        return;
    oc_free(l->addr);
    oc_free(l->pack_off);
    oc_free(l->pack_rows);
    oc_free(l->chunk_off);
    oc_free(l->seg_off);
    oc_free(l->seg_rows);
    oc_free(l->seg_byte_off);
    memset(l, 0, sizeof(*l));
}

static void *alloc_u64(uint64_t n, struct oc_err *err)
{
    if (n > SIZE_MAX / sizeof(uint64_t)) {
        OC_ERR(err, OC_ERR_NOMEM, "plan: %llu entries is too many", (unsigned long long)n);
        return NULL;
    }
    return oc_calloc((size_t)(n ? n : 1), sizeof(uint64_t), PLAN_CONSUMER, err);
}

/*
 * A batch's packed rows (pack, n_pack of them, in any order) sorted, and
 * each of its packed accesses (addr[k] OC_PLAN_PACKED for rows[k]) given
 * its row's index among them.
 */
static void index_packed(const uint64_t *rows, uint64_t n, uint64_t *addr, uint64_t *pack,
                         uint64_t n_pack)
{
    qsort(pack, n_pack, sizeof(uint64_t), oc_cmp_u64);
    for (uint64_t k = 0; k < n; k++)
        if (OC_PLAN_ADDR_WHERE(addr[k]) == OC_PLAN_PACKED)
            addr[k] = OC_PLAN_ADDR(OC_PLAN_PACKED, oc_lower_bound_u64(pack, 0, n_pack, rows[k]));
}

/* Places segment j (batches [b0, b1)); the sizes in l are already set. */
static void fill_segment(struct plan_ctx *c, struct oc_plan_layout *l, uint64_t j, uint64_t b0,
                         uint64_t b1, uint64_t *tmp)
{
    const struct oc_plan_trace *t = c->t;
    const struct oc_plan_opts *o = c->o;
    uint64_t *rows = l->seg_rows + l->seg_off[j], n_sh = 0;

    seg_count(c, b0, b1);
    for (uint64_t b = b0; b < b1; b++) {
        uint64_t *pk = l->pack_rows + l->pack_off[b], n_pk = 0;
        for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
            uint64_t v = t->rows[i];
            uint32_t *mk = &c->mark[v];
            if (*mk == PLAN_MARK_CPU) {
                l->addr[i] =
                    OC_PLAN_ADDR(OC_PLAN_CPU, oc_lower_bound_u64(o->cpu_ids, 0, o->n_cpu, v));
                l->n_cpu_accesses++;
            } else if ((*mk & PLAN_MARK_CNT) > c->m) {
                l->addr[i] = OC_PLAN_ADDR(OC_PLAN_DISK_CACHE, 0);
                l->n_dc_accesses++;
                if (!(*mk & PLAN_MARK_SEEN))
                    rows[n_sh++] = v;
                *mk |= PLAN_MARK_SEEN;
            } else {
                l->addr[i] = OC_PLAN_ADDR(OC_PLAN_PACKED, 0);
                l->n_packed_accesses++;
                pk[n_pk++] = v;
            }
        }
        index_packed(t->rows + t->off[b], t->off[b + 1] - t->off[b], l->addr + t->off[b], pk, n_pk);
    }
    seg_reset(c, b0, b1);
    if (n_sh == 0)
        return;
    /* The disk cache's order, then each shared access's index in it via the scratch. */
    for (uint64_t p = 0; p < n_sh; p++)
        c->mark[rows[p]] = (uint32_t)p;
    plan_order_rows(c, l->addr, b0, b1, rows, n_sh, tmp, o->identity_order);
    for (uint64_t p = 0; p < n_sh; p++)
        c->mark[rows[p]] = (uint32_t)p;
    for (uint64_t i = t->off[b0]; i < t->off[b1]; i++)
        if (OC_PLAN_ADDR_WHERE(l->addr[i]) == OC_PLAN_DISK_CACHE)
            l->addr[i] = OC_PLAN_ADDR(OC_PLAN_DISK_CACHE, c->mark[t->rows[i]]);
    for (uint64_t p = 0; p < n_sh; p++)
        c->mark[rows[p]] = 0;
}

/* Bits that hold every value below n (0 for n <= 1). */
static unsigned bits_below(uint64_t n)
{
    unsigned b = 0;
    while (b < 64 && n > 1 && ((n - 1) >> b) != 0)
        b++;
    return b;
}

void plan_batch_layout(const uint64_t *rows, uint64_t n, const struct oc_rank_set *cpu,
                       uint64_t *addr, uint64_t *pack, uint64_t *n_pack, int keyed)
{
    uint64_t np = 0, slot;
    unsigned kb = bits_below(n);
    if (!keyed || kb + bits_below(cpu->n) > 64) { /* sorted, then each looked up */
        for (uint64_t k = 0; k < n; k++) {
            assert(rows[k] < cpu->n);
            if (oc_rank_set_find(cpu, rows[k], &slot)) {
                addr[k] = OC_PLAN_ADDR(OC_PLAN_CPU, slot);
            } else {
                addr[k] = OC_PLAN_ADDR(OC_PLAN_PACKED, 0);
                pack[np++] = rows[k];
            }
        }
        index_packed(rows, n, addr, pack, np);
        *n_pack = np;
        return;
    }
    /* keyed: (row, k) in one key, radix-sorted with addr as scratch, so a packed row's index
       is its place in the order and needs no search */
    for (uint64_t k = 0; k < n; k++) {
        assert(rows[k] < cpu->n);
        if (!oc_rank_set_find(cpu, rows[k], &slot))
            pack[np++] = rows[k] << kb | k;
    }
    oc_sort_u64(pack, addr, np);
    uint64_t mask = (UINT64_C(1) << kb) - 1; /* kb < 64: n <= 2^63 */
    for (uint64_t i = 0; i < np; i++) {
        addr[pack[i] & mask] = OC_PLAN_ADDR(OC_PLAN_PACKED, i);
        pack[i] >>= kb;
    }
    for (uint64_t k = 0; k < n; k++) /* the others, over the scratch */
        if (oc_rank_set_find(cpu, rows[k], &slot))
            addr[k] = OC_PLAN_ADDR(OC_PLAN_CPU, slot);
    *n_pack = np;
}

void oc_plan_batch_layout(const uint64_t *rows, uint64_t n, const struct oc_rank_set *cpu,
                          uint64_t *addr, uint64_t *pack, uint64_t *n_pack)
{
    plan_batch_layout(rows, n, cpu, addr, pack, n_pack, 1);
}

static int layout_fill(struct plan_ctx *c, uint64_t s, struct oc_plan_layout *l, struct oc_err *err)
{
    const struct oc_plan_trace *t = c->t;
    const struct oc_plan_opts *o = c->o;
    uint64_t n = t->n_batches, k = n ? (n - 1) / s + 1 : 0, n_acc = n ? t->off[n] : 0;
    uint64_t max_sh = 0, *tmp = NULL;
    int rc;

    l->n_batches = n;
    l->s = s;
    l->n_segments = k;
    l->row_bytes = o->row_bytes;
    if (!(l->addr = alloc_u64(n_acc, err)) || !(l->pack_off = alloc_u64(n + 1, err)) ||
        !(l->chunk_off = alloc_u64(n + 1, err)) || !(l->seg_off = alloc_u64(k + 1, err)) ||
        !(l->seg_byte_off = alloc_u64(k + 1, err)))
        return err->status;
    rc = plan_scan(c, s, l->pack_off + 1, l->seg_off + 1, &l->file_bytes, err);
    if (rc)
        return rc;
    /* Sizes → byte offsets (no overflow: plan_scan checked the total) and row offsets. */
    for (uint64_t b = 0; b < n; b++) {
        uint64_t head = oc_plan_chunk_meta_bytes(o->rec_bytes[b], t->off[b + 1] - t->off[b]);
        l->chunk_off[b + 1] = l->chunk_off[b];
        add_piece(&l->chunk_off[b + 1], head, l->pack_off[b + 1], o->row_bytes);
        l->pack_off[b + 1] += l->pack_off[b];
    }
    l->seg_byte_off[0] = l->chunk_off[n];
    for (uint64_t j = 0; j < k; j++) {
        uint64_t n_sh = l->seg_off[j + 1];
        max_sh = n_sh > max_sh ? n_sh : max_sh;
        l->seg_byte_off[j + 1] = l->seg_byte_off[j];
        add_piece(&l->seg_byte_off[j + 1], 0, n_sh, o->row_bytes);
        l->seg_off[j + 1] += l->seg_off[j];
    }
    if (l->seg_byte_off[k] != l->file_bytes)
        return OC_ERR(err, OC_ERR_INTERNAL, "plan: layout ends at %llu, scan said %llu",
                      (unsigned long long)l->seg_byte_off[k], (unsigned long long)l->file_bytes);
    if (!(l->pack_rows = alloc_u64(l->pack_off[n], err)) ||
        !(l->seg_rows = alloc_u64(l->seg_off[k], err)))
        return err->status;
    if (!o->identity_order && max_sh > 1 && !(tmp = alloc_u64(max_sh * (PLAN_MINHASH_K + 1), err)))
        return err->status;
    for (uint64_t b0 = 0, j = 0; b0 < n; b0 = seg_end(c, b0, s), j++)
        fill_segment(c, l, j, b0, seg_end(c, b0, s), tmp);
    oc_free(tmp);
    return OC_OK;
}

int oc_plan_layout_build(const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                         struct oc_plan_layout *out, struct oc_err *err)
{
    struct oc_err tmp;
    struct plan_ctx c;
    uint64_t s;
    if (!err)
        err = &tmp;
    if (!out)
        return OC_ERR(err, OC_ERR_ARG, "plan: layout: NULL output");
    memset(out, 0, sizeof(*out));
    int rc = plan_ctx_init(&c, t, o, err);
    if (rc)
        return rc;
    if (o->segment) {
        s = o->segment;
    } else if (o->disk_budget_bytes == 0 || t->n_batches == 0) {
        s = 1;
    } else {
        /* File size is not monotone in s (segment boundaries move), so scan them all. */
        uint64_t best = UINT64_MAX, best_s = 1, bytes = 0;
        for (s = 1; s <= t->n_batches; s++) {
            if ((rc = plan_scan(&c, s, NULL, NULL, &bytes, err)) != OC_OK)
                break;
            if (bytes <= o->disk_budget_bytes)
                break;
            if (bytes < best) {
                best = bytes;
                best_s = s;
            }
        }
        if (rc == OC_OK && s > t->n_batches) {
            char want[32], have[32];
            rc = OC_ERR(err, OC_ERR_BUDGET,
                        "plan: the window file of %llu batches needs at least %s (%llu bytes, "
                        "segments of %llu batches) but --disk-budget is %s (%llu bytes)",
                        (unsigned long long)t->n_batches, oc_format_size(best, want, sizeof(want)),
                        (unsigned long long)best, (unsigned long long)best_s,
                        oc_format_size(o->disk_budget_bytes, have, sizeof(have)),
                        (unsigned long long)o->disk_budget_bytes);
        }
    }
    if (rc == OC_OK)
        rc = layout_fill(&c, s, out, err);
    if (rc == OC_OK && o->segment && o->disk_budget_bytes &&
        out->file_bytes > o->disk_budget_bytes) {
        char want[32], have[32];
        rc = OC_ERR(err, OC_ERR_BUDGET,
                    "plan: the window file with segments of %llu batches needs %s (%llu bytes) but "
                    "--disk-budget is %s (%llu bytes)",
                    (unsigned long long)s, oc_format_size(out->file_bytes, want, sizeof(want)),
                    (unsigned long long)out->file_bytes,
                    oc_format_size(o->disk_budget_bytes, have, sizeof(have)),
                    (unsigned long long)o->disk_budget_bytes);
    }
    plan_ctx_deinit(&c);
    if (rc)
        oc_plan_layout_deinit(out);
    return rc;
}

/* ---- page counts ---------------------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int oc_plan_layout_dc_pages(const struct oc_plan_layout *l, const struct oc_plan_trace *t,
                            uint64_t b, uint64_t *pages, struct oc_err *err)
{
    struct oc_err tmp;
    if (!err)
        err = &tmp;
    if (!l || !t || !pages)
        return OC_ERR(err, OC_ERR_ARG, "plan: dc pages: NULL argument");
    *pages = 0;
    if (t->n_batches != l->n_batches || b >= l->n_batches || !t->off)
        return OC_ERR(err, OC_ERR_ARG,
                      "plan: dc pages: batch %llu of a trace of %llu batches, layout of %llu",
                      (unsigned long long)b, (unsigned long long)t->n_batches,
                      (unsigned long long)l->n_batches);
    uint64_t j = b / l->s, n_rows = l->seg_off[j + 1] - l->seg_off[j], n_dc = 0;
    for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++)
        n_dc += OC_PLAN_ADDR_WHERE(l->addr[i]) == OC_PLAN_DISK_CACHE;
    if (n_dc == 0)
        return OC_OK;
    uint64_t *r = alloc_u64(2 * n_dc, err), k = 0;
    if (!r)
        return err->status;
    for (uint64_t i = t->off[b]; i < t->off[b + 1]; i++) {
        if (OC_PLAN_ADDR_WHERE(l->addr[i]) != OC_PLAN_DISK_CACHE)
            continue;
        uint64_t idx = OC_PLAN_ADDR_INDEX(l->addr[i]);
        if (idx >= n_rows) {
            oc_free(r);
            return OC_ERR(err, OC_ERR_ARG,
                          "plan: dc pages: batch %llu's disk-cache index %llu is past segment "
                          "%llu's %llu rows",
                          (unsigned long long)b, (unsigned long long)idx, (unsigned long long)j,
                          (unsigned long long)n_rows);
        }
        uint64_t start = l->seg_byte_off[j] + idx * l->row_bytes;
        r[2 * k] = start / OC_PLAN_PAGE;
        r[2 * k + 1] = (start + l->row_bytes - 1) / OC_PLAN_PAGE;
        k++;
    }
    qsort(r, n_dc, 2 * sizeof(uint64_t), cmp_range);
    uint64_t total = 0, lo = r[0], hi = r[1];
    for (uint64_t q = 1; q < n_dc; q++) {
        if (r[2 * q] > hi) {
            total += hi - lo + 1;
            lo = r[2 * q];
            hi = r[2 * q + 1];
        } else if (r[2 * q + 1] > hi) {
            hi = r[2 * q + 1];
        }
    }
    *pages = total + (hi - lo + 1);
    oc_free(r);
    return OC_OK;
}
