/*
 * belady.c — Ginex's changeset precomputation (plan/, belady.h): the input ids of a
 * superbatch (the trace) and the cache as the previous plan left it become
 * the plan the executor follows: which rows to read before the first batch
 * (while the cache has empty slots), and per batch which gathered rows enter
 * which slots. Belady's rule at batch granularity, exact, in time linear in
 * the accesses; alongside, what LRU and the degree-ranked static cache of
 * the same capacity would have missed on the same accesses.
 *
 * Place in the data flow: plan, on the caller's thread (store's ginex
 * inspector; kg's TIGER planner and --strategy auto through belady_api.c):
 * trace ──► pl_plan_build (backward pass: next uses; forward pass: changes)
 * ──► plan ──► executor (store/ginex/ginex_exec.c, kg's Slice Cache). The
 * trace, the next uses and the changes are spills (spill.c): in files under
 * ginex's plan directory a superbatch of any length is planned in RAM
 * bounded by the cache and one batch.
 * Thread-safety: a trace, planner and plan are driven by one thread at a time.
 * Ownership: each object owns its arrays (oc_alloc'd, grown geometrically,
 * then reused) and spills.
 *
 * Why batch granularity: the executor gathers a whole batch from the cache
 * state before it (hits copied out, misses read into the output), then moves
 * rows from the output into the cache. So after batch i the cache may hold
 * any C rows of (cache ∪ batch i), and keeping those used soonest is optimal
 * by the usual exchange argument (Belady): a plan keeping a row used later
 * than one it dropped can swap them without adding a miss. A row seen only
 * in later superbatches counts as "never", the best the inspector can know.
 *
 *   states of a row (an entry while it is in the cache or a candidate):
 *
 *        warm-up / assign slot          evicted (a miss used sooner)
 *   OUT ─────────────────────► CACHED ─────────────────────────────► OUT
 *    │  miss with room, or               ▲
 *    │  one used later cached            │ end of the batch: takes a slot
 *    └────────────────────────► PENDING ─┘
 *                                  │ evicted before the batch ends
 *                                  └──────────────────────────────► OUT
 */
#include <string.h>

#include "plan/belady.h"

#define N_INF_BUCKETS 64u /* "no next use": one bucket per log2(in-degree + 1) */
#define MIN_ROWS \
    1024u /* batch scratch at least: the backward pass and the warm-up read
                                 the trace in chunks of the batch scratch's size */

enum { ST_OUT = 0, ST_CACHED = 1, ST_PENDING = 2 };

/*
 * How the lists grow: a quarter more (at least 64), or what is needed if more.
 * Growth by 1.25 keeps the slack the budget must cover small (ginex's budget,
 * GX_BYTES_PER_ACCESS and GX_BYTES_PER_SLOT, counts it) at a few more
 * reallocations.
 */
#define PL_GROW OC_GROW_QUARTER(64)

/* ---- trace ---------------------------------------------------------------- */

void pl_trace_init(struct pl_trace *t, uint64_t n_nodes)
{
    memset(t, 0, sizeof(*t));
    pl_spill_init(&t->ids, n_nodes <= (uint64_t)UINT32_MAX + 1 ? 4 : 8,
                  "plan belady: superbatch trace");
}

void pl_trace_deinit(struct pl_trace *t)
{
    oc_free(t->iter_off);
    t->iter_off = NULL;
    t->cap_iters = 0;
    pl_spill_deinit(&t->ids);
    pl_trace_clear(t);
}

void pl_trace_clear(struct pl_trace *t)
{
    t->n_iters = t->n_acc = t->max_rows = 0;
    pl_spill_clear(&t->ids);
    if (t->iter_off)
        t->iter_off[0] = 0;
}

uint64_t pl_trace_held_bytes(const struct pl_trace *t)
{
    return t->cap_iters * sizeof(uint64_t) + pl_spill_held_bytes(&t->ids);
}

int pl_trace_add_iter(struct pl_trace *t, const uint64_t *ids, uint64_t n, struct oc_err *err)
{
    int rc;
    int fresh = t->cap_iters == 0;
    if ((rc = oc_grow_by(&t->iter_off, &t->cap_iters, t->n_iters + 2, sizeof(uint64_t), PL_GROW,
                         t->ids.what, err)))
        return rc;
    if (fresh)
        t->iter_off[0] = 0;
    if (t->n_iters + 1 >= PL_INF - N_INF_BUCKETS)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "plan belady: superbatch of too many batches");
    if (t->ids.elem == sizeof(uint64_t)) {
        rc = pl_spill_append(&t->ids, ids, n, err);
    } else {
        uint32_t narrow[1024];
        rc = OC_OK;
        for (uint64_t j0 = 0; j0 < n && rc == OC_OK; j0 += 1024) {
            uint64_t k = n - j0 < 1024 ? n - j0 : 1024;
            for (uint64_t j = 0; j < k; j++) {
                if (ids[j0 + j] > UINT32_MAX)
                    return OC_ERR(err, OC_ERR_FORMAT,
                                  "plan belady: id %llu in batch %llu of the superbatch is out "
                                  "of range",
                                  (unsigned long long)ids[j0 + j], (unsigned long long)t->n_iters);
                narrow[j] = (uint32_t)ids[j0 + j];
            }
            rc = pl_spill_append(&t->ids, narrow, k, err);
        }
    }
    if (rc)
        return rc;
    t->n_acc += n;
    t->iter_off[++t->n_iters] = t->n_acc;
    if (n > t->max_rows)
        t->max_rows = n;
    return OC_OK;
}

int pl_trace_ids(struct pl_trace *t, uint64_t a, uint64_t n, uint64_t *out, struct oc_err *err)
{
    if (t->ids.elem == sizeof(uint64_t))
        return pl_spill_get(&t->ids, a, n, out, err);
    uint32_t narrow[1024];
    for (uint64_t j0 = 0; j0 < n; j0 += 1024) {
        uint64_t k = n - j0 < 1024 ? n - j0 : 1024;
        int rc = pl_spill_get(&t->ids, a + j0, k, narrow, err);
        if (rc)
            return rc;
        for (uint64_t j = 0; j < k; j++)
            out[j0 + j] = narrow[j];
    }
    return OC_OK;
}

/* ---- plan ----------------------------------------------------------------- */

void pl_plan_init(struct pl_plan *p)
{
    memset(p, 0, sizeof(*p));
    pl_spill_init(&p->chg, sizeof(struct pl_change), "plan belady: changesets");
    pl_spill_init(&p->miss, 1, "plan belady: miss bitmaps");
}

void pl_plan_deinit(struct pl_plan *p)
{
    oc_free(p->warm_id);
    oc_free(p->warm_slot);
    oc_free(p->chg_off);
    oc_free(p->cnt);
    oc_free(p->miss_off);
    pl_spill_deinit(&p->chg);
    pl_spill_deinit(&p->miss);
    pl_plan_init(p);
}

uint64_t pl_plan_held_bytes(const struct pl_plan *p)
{
    return p->cap_iters * (sizeof(uint64_t) * (p->miss_off ? 2 : 1) + sizeof(struct pl_counts)) +
           p->cap_warm * (sizeof(uint64_t) + sizeof(uint32_t)) + pl_spill_held_bytes(&p->chg) +
           pl_spill_held_bytes(&p->miss);
}

int pl_plan_misses(struct pl_plan *p, uint64_t it, uint8_t *out, struct oc_err *err)
{
    if (!p->with_miss || !p->miss_off || it >= p->n_iters)
        return OC_ERR(err, OC_ERR_INTERNAL, "plan belady: no miss bitmap of iteration %llu",
                      (unsigned long long)it);
    uint64_t b0 = p->miss_off[it], b1 = p->miss_off[it + 1];
    return pl_spill_get(&p->miss, b0, b1 - b0, out, err);
}

int pl_plan_changes(struct pl_plan *p, uint64_t it, struct pl_change *out, uint64_t *n,
                    struct oc_err *err)
{
    uint64_t c0 = p->chg_off[it], c1 = p->chg_off[it + 1];
    *n = c1 - c0;
    return *n ? pl_spill_get(&p->chg, c0, c1 - c0, out, err) : OC_OK;
}

static int plan_reserve_iters(struct pl_plan *p, uint64_t n_iters, struct oc_err *err)
{
    static const char what[] = "plan belady: plan";
    if (p->with_miss && !p->miss_off && p->cap_iters) { /* misses asked for after a plan */
        uint64_t none = 0;
        int rc = oc_grow_by(&p->miss_off, &none, p->cap_iters, sizeof(uint64_t), OC_GROW_EXACT,
                            what, err);
        if (rc)
            return rc;
    }
    void *const arr[] = {&p->chg_off, &p->cnt, &p->miss_off};
    const size_t sz[] = {sizeof(uint64_t), sizeof(struct pl_counts), sizeof(uint64_t)};
    return oc_grow_all(arr, sz, p->with_miss ? 3 : 2, &p->cap_iters, n_iters + 1, OC_GROW_EXACT,
                       what, err);
}

static int plan_add_warm(struct pl_plan *p, uint64_t id, uint32_t slot, struct oc_err *err)
{
    static const char what[] = "plan belady: warm-up list";
    void *const arr[] = {&p->warm_id, &p->warm_slot};
    const size_t sz[] = {sizeof(uint64_t), sizeof(uint32_t)};
    int rc = oc_grow_all(arr, sz, 2, &p->cap_warm, p->n_warm + 1, PL_GROW, what, err);
    if (rc)
        return rc;
    p->warm_id[p->n_warm] = id;
    p->warm_slot[p->n_warm] = slot;
    p->n_warm++;
    return OC_OK;
}

/* ---- planner ------------------------------------------------------------------ */

uint64_t pl_planner_fixed_bytes(uint64_t cap, uint64_t n_nodes, int with_lru)
{
    return cap * (sizeof(uint64_t) + sizeof(uint32_t)) + n_nodes * sizeof(uint32_t) +
           (with_lru ? pl_lru_bytes(cap) : 0);
}

int pl_planner_init(struct pl_planner *p, uint64_t cap, uint64_t n_nodes, const uint64_t *indptr,
                    int with_lru, const uint8_t *static_bits, struct oc_err *err)
{
    static const char what[] = "plan belady: planned cache";
    memset(p, 0, sizeof(*p));
    pl_lru_init(&p->lru, 0, NULL);
    pl_hash_init(&p->map);
    pl_spill_init(&p->nxt, sizeof(uint32_t), "plan belady: next uses");
    p->indptr = indptr;
    p->static_bits = static_bits;
    p->n_nodes = n_nodes;
    if (cap >= PL_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "plan belady: a cache of %llu rows is too large (< 2^32)",
                      (unsigned long long)cap);
    if (cap) {
        p->slot_id = oc_alloc((size_t)cap * sizeof(uint64_t), what, err);
        p->free_slots = oc_alloc((size_t)cap * sizeof(uint32_t), what, err);
        if (!p->slot_id || !p->free_slots)
            return err ? err->status : OC_ERR_NOMEM;
        for (uint64_t s = 0; s < cap; s++)
            p->slot_id[s] = PL_EMPTY;
    }
    p->cap = cap;
    p->first_use = oc_alloc((size_t)(n_nodes ? n_nodes : 1) * sizeof(uint32_t), what, err);
    if (!p->first_use)
        return err ? err->status : OC_ERR_NOMEM;
    if (with_lru)
        return pl_lru_init(&p->lru, cap, err);
    return OC_OK;
}

int pl_planner_reserve_nodes(struct pl_planner *p, uint64_t n_nodes, struct oc_err *err)
{
    return oc_grow_by(&p->first_use, &p->n_nodes, n_nodes, sizeof(uint32_t), OC_GROW_EXACT,
                      "plan belady: planned cache", err);
}

int pl_planner_spill_to(struct pl_planner *p, const char *dir, struct oc_err *err)
{
    return pl_spill_to_file(&p->nxt, dir, "next-uses", err);
}

void pl_planner_deinit(struct pl_planner *p)
{
    oc_free(p->slot_id);
    oc_free(p->free_slots);
    oc_free(p->first_use);
    oc_free(p->ent_id);
    oc_free(p->key);
    oc_free(p->link);
    oc_free(p->slot_of);
    oc_free(p->free_ent);
    oc_free(p->state);
    oc_free(p->head);
    oc_free(p->b_id);
    oc_free(p->b_nxt);
    oc_free(p->b_ent);
    oc_free(p->pend_pos);
    oc_free(p->pend_ent);
    pl_hash_deinit(&p->map);
    pl_spill_deinit(&p->nxt);
    pl_lru_deinit(&p->lru);
    memset(p, 0, sizeof(*p));
}

uint64_t pl_planner_held_bytes(const struct pl_planner *p)
{
    return pl_planner_fixed_bytes(p->cap, p->n_nodes, p->lru.cap != 0) +
           p->cap_ent * (sizeof(uint64_t) + 4 * sizeof(uint32_t) + 1) +
           p->map.cap * sizeof(uint32_t) + p->cap_head * sizeof(uint32_t) +
           p->cap_rows * (sizeof(uint64_t) + 4 * sizeof(uint32_t)) + pl_spill_held_bytes(&p->nxt);
}

/* Scratch for a superbatch of n_iters batches of at most rows accesses each. */
static int planner_reserve(struct pl_planner *p, uint64_t n_iters, uint64_t rows,
                           struct oc_err *err)
{
    static const char what[] = "plan belady: planner scratch";
    int rc = OC_OK;
    if (rows < MIN_ROWS)
        rows = MIN_ROWS;
    void *const row_arr[] = {&p->b_id, &p->b_nxt, &p->b_ent, &p->pend_pos, &p->pend_ent};
    const size_t row_sz[] = {sizeof(uint64_t), 4, 4, 4, 4};
    if ((rc = oc_grow_all(row_arr, row_sz, 5, &p->cap_rows, rows, PL_GROW, what, err)))
        return rc;
    uint64_t n_ent = p->cap + p->cap_rows; /* every cached row and one batch of candidates */
    if (n_ent >= PL_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "plan belady: a cache of %llu rows and batches of %llu rows are too large "
                      "(< 2^32 together)",
                      (unsigned long long)p->cap, (unsigned long long)rows);
    if (n_ent > p->cap_ent) { /* the map too: the capacity is set once both are grown */
        void *const ent_arr[] = {&p->ent_id,  &p->key,      &p->link,
                                 &p->slot_of, &p->free_ent, &p->state};
        const size_t ent_sz[] = {sizeof(uint64_t), 4, 4, 4, 4, 1};
        uint64_t c = p->cap_ent;
        if ((rc = oc_grow_all(ent_arr, ent_sz, 6, &c, n_ent, OC_GROW_EXACT, what, err)) ||
            (rc = pl_hash_alloc(&p->map, n_ent, what, err)))
            return rc;
        p->cap_ent = c;
    }
    return oc_grow_by(&p->head, &p->cap_head, n_iters + N_INF_BUCKETS, sizeof(uint32_t), PL_GROW,
                      what, err);
}

/*
 * Backward pass: the nxt spill gets, per access, the iteration of its row's
 * next use in the superbatch (PL_INF: none); first_use ends as each node's
 * first use. Checks every id against n_nodes and for repeats within a batch.
 */
static int backward(struct pl_planner *p, struct pl_trace *t, struct oc_err *err)
{
    const uint64_t *off = t->iter_off;
    uint64_t it = t->n_iters, a_end = t->n_acc, chunk = p->cap_rows;
    uint64_t *ids = p->b_id;
    uint32_t *nxt = p->b_nxt;
    int rc;

    memset(p->first_use, 0xff, (size_t)p->n_nodes * sizeof(uint32_t)); /* PL_INF */
    pl_spill_clear(&p->nxt);
    while (a_end > 0) {
        uint64_t a0 = a_end > chunk ? a_end - chunk : 0;
        if ((rc = pl_trace_ids(t, a0, a_end - a0, ids, err)))
            return rc;
        for (uint64_t a = a_end; a-- > a0;) {
            while (off[it] > a) /* it ends as the batch holding access a */
                it--;
            uint64_t id = ids[a - a0];
            if (id >= p->n_nodes)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "plan belady: id %llu in batch %llu of the superbatch is not below "
                              "%llu nodes",
                              (unsigned long long)id, (unsigned long long)it,
                              (unsigned long long)p->n_nodes);
            if (p->first_use[id] == it)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "plan belady: id %llu repeats in batch %llu of the superbatch",
                              (unsigned long long)id, (unsigned long long)it);
            nxt[a - a0] = p->first_use[id];
            p->first_use[id] = (uint32_t)it;
        }
        if ((rc = pl_spill_put(&p->nxt, a0, nxt, a_end - a0, err)))
            return rc;
        a_end = a0;
    }
    return OC_OK;
}

/* The working state of one pl_plan_build call. */
struct build {
    struct pl_planner *p;
    uint64_t n_iters;
    uint64_t top; /* no bucket above it is nonempty */
};

/* Bucket of a row by its next use: the iteration, or a "never" bucket by in-degree. */
static inline uint64_t bucket_of(const struct build *b, uint32_t key, uint64_t id)
{
    if (key != PL_INF)
        return key;
    unsigned cls = 0;
    if (b->p->indptr) {
        uint64_t deg1 = b->p->indptr[id + 1] - b->p->indptr[id] + 1;
        cls = 63u - (unsigned)__builtin_clzll(deg1);
    }
    return b->n_iters + (N_INF_BUCKETS - 1) - cls; /* higher degree: kept longer */
}

static inline void bucket_push(struct build *b, uint32_t e)
{
    struct pl_planner *p = b->p;
    uint64_t k = bucket_of(b, p->key[e], p->ent_id[e]);
    p->link[e] = p->head[k];
    p->head[k] = e;
    if (k > b->top)
        b->top = k;
}

/* A new entry for id (next use key) in state st, in the map and its bucket. */
static uint32_t entry_new(struct build *b, uint64_t id, uint32_t key, uint8_t st, uint32_t slot)
{
    struct pl_planner *p = b->p;
    uint32_t e = p->free_ent[--p->n_free_ent];
    p->ent_id[e] = id;
    p->key[e] = key;
    p->state[e] = st;
    p->slot_of[e] = slot;
    pl_hash_put(&p->map, p->ent_id, e);
    bucket_push(b, e);
    return e;
}

/* Iteration i's miss bitmap (ent[j] == PL_NONE: access j misses) appended to out->miss. */
static int append_misses(struct pl_plan *out, uint64_t i, const uint32_t *ent, uint64_t n,
                         struct oc_err *err)
{
    uint8_t buf[256];
    uint64_t k = 0;
    int rc = OC_OK;
    for (uint64_t j0 = 0; j0 < n && rc == OC_OK; j0 += 8) {
        uint8_t byte = 0;
        for (uint64_t j = j0; j < j0 + 8 && j < n; j++)
            byte |= (uint8_t)((ent[j] == PL_NONE) << (j - j0));
        buf[k++] = byte;
        if (k == sizeof(buf) || j0 + 8 >= n) {
            rc = pl_spill_append(&out->miss, buf, k, err);
            k = 0;
        }
    }
    out->miss_off[i + 1] = out->miss_off[i] + (n + 7) / 8;
    return rc;
}

int pl_plan_build(struct pl_planner *p, struct pl_trace *t, struct pl_plan *out, struct oc_err *err)
{
    const uint64_t S = t->n_iters, C = p->cap;
    const uint64_t *off = t->iter_off;
    int rc;

    out->n_warm = out->max_chg = 0;
    pl_spill_clear(&out->chg);
    pl_spill_clear(&out->miss);
    if (out->n_iters != S)
        return OC_ERR(err, OC_ERR_INTERNAL, "plan belady: plan of %llu batches for a trace of %llu",
                      (unsigned long long)out->n_iters, (unsigned long long)S);
    if ((rc = plan_reserve_iters(out, S, err)) || (rc = planner_reserve(p, S, t->max_rows, err)) ||
        (rc = backward(p, t, err)))
        return rc;
    out->chg_off[0] = 0;
    if (out->with_miss)
        out->miss_off[0] = 0;

    struct build b = {p, S, 0};
    uint32_t *link = p->link;
    uint8_t *state = p->state;
    pl_hash_clear(&p->map);
    p->n_free_ent = p->cap_ent;
    for (uint64_t k = 0; k < p->cap_ent; k++)
        p->free_ent[k] = (uint32_t)(p->cap_ent - 1 - k);
    for (uint64_t k = 0; k < S + N_INF_BUCKETS; k++)
        p->head[k] = PL_NONE;
    /* Cached rows into their buckets; empty slots onto the free stack (slot 0 on top). */
    uint64_t n_free = 0;
    for (uint64_t s = C; s-- > 0;) {
        uint64_t id = p->slot_id[s];
        if (id == PL_EMPTY)
            p->free_slots[n_free++] = (uint32_t)s;
        else
            entry_new(&b, id, id < p->n_nodes ? p->first_use[id] : PL_INF, ST_CACHED, (uint32_t)s);
    }
    uint64_t n_occ = C - n_free;
    /* Warm-up: empty slots take the rows used soonest, in trace order. */
    for (uint64_t a0 = 0; a0 < t->n_acc && n_occ < C; a0 += p->cap_rows) {
        uint64_t n = t->n_acc - a0 < p->cap_rows ? t->n_acc - a0 : p->cap_rows;
        if ((rc = pl_trace_ids(t, a0, n, p->b_id, err)))
            return rc;
        for (uint64_t j = 0; j < n && n_occ < C; j++) {
            uint64_t id = p->b_id[j];
            if (pl_hash_get(&p->map, p->ent_id, id) != PL_NONE)
                continue;
            uint32_t s = p->free_slots[--n_free];
            entry_new(&b, id, p->first_use[id], ST_CACHED, s);
            p->slot_id[s] = id;
            n_occ++;
            if ((rc = plan_add_warm(out, id, s, err)))
                return rc;
        }
    }

    for (uint64_t i = 0; i < S; i++) {
        struct pl_counts *cnt = &out->cnt[i];
        uint64_t n = off[i + 1] - off[i], n_pend = 0;
        uint64_t *ids = p->b_id;
        uint32_t *nxt = p->b_nxt, *ent = p->b_ent;
        memset(cnt, 0, sizeof(*cnt));
        cnt->n_acc = n;
        if ((rc = pl_trace_ids(t, off[i], n, ids, err)) ||
            (rc = pl_spill_get(&p->nxt, off[i], n, nxt, err)))
            return rc;
        /* Bucket i holds exactly this batch's hits; every access moves its row's key on. */
        uint32_t hits = p->head[i];
        p->head[i] = PL_NONE;
        for (uint64_t j = 0; j < n; j++) {
            uint64_t id = ids[j];
            uint32_t e = pl_hash_get(&p->map, p->ent_id, id); /* only cached rows have one */
            ent[j] = e;
            cnt->n_belady += e == PL_NONE;
            if (p->lru.cap || C == 0)
                cnt->n_lru += !pl_lru_access(&p->lru, id);
            if (p->static_bits)
                cnt->n_static += !oc_bit_get(p->static_bits, id);
            if (e != PL_NONE)
                p->key[e] = nxt[j];
        }
        if (out->with_miss && (rc = append_misses(out, i, ent, n, err)))
            return rc;
        for (uint32_t e = hits, ne; e != PL_NONE; e = ne) {
            ne = link[e];
            bucket_push(&b, e);
        }
        /* Misses, in batch order: enter if there is room or a cached row is used later. */
        for (uint64_t j = 0; j < n; j++) {
            if (ent[j] != PL_NONE)
                continue;
            if (n_occ < C) {
                n_occ++;
            } else {
                uint64_t k = bucket_of(&b, nxt[j], ids[j]);
                while (b.top > i && p->head[b.top] == PL_NONE)
                    b.top--;
                if (b.top <= k)
                    continue; /* bypass: nothing cached is used later (ties keep the cached row) */
                uint32_t v = p->head[b.top];
                p->head[b.top] = link[v];
                pl_hash_del(&p->map, p->ent_id, p->ent_id[v]);
                if (state[v] == ST_CACHED) {
                    uint32_t s = p->slot_of[v];
                    p->slot_id[s] = PL_EMPTY;
                    p->free_slots[n_free++] = s;
                    p->free_ent[p->n_free_ent++] = v;
                }
                state[v] = ST_OUT; /* a pending victim never takes its slot; freed below */
            }
            p->pend_pos[n_pend] = (uint32_t)j;
            p->pend_ent[n_pend++] = entry_new(&b, ids[j], nxt[j], ST_PENDING, PL_NONE);
        }
        /* The rows still pending take the freed (or empty) slots: one change each. */
        uint64_t n_chg = 0;
        for (uint64_t k = 0; k < n_pend; k++) {
            uint32_t e = p->pend_ent[k];
            if (state[e] != ST_PENDING) {
                p->free_ent[p->n_free_ent++] = e;
                continue;
            }
            struct pl_change c = {p->pend_pos[k], p->free_slots[--n_free]};
            p->slot_of[e] = c.slot;
            p->slot_id[c.slot] = p->ent_id[e];
            state[e] = ST_CACHED;
            if ((rc = pl_spill_append(&out->chg, &c, 1, err)))
                return rc;
            n_chg++;
        }
        out->chg_off[i + 1] = out->chg_off[i] + n_chg;
        if (n_chg > out->max_chg)
            out->max_chg = n_chg;
    }
    p->n_used = n_occ;
    if (out->with_miss && (rc = pl_spill_flush(&out->miss, err)))
        return rc;
    return pl_spill_flush(&out->chg, err);
}
