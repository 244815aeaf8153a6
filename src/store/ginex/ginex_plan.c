/*
 * ginex_plan.c — Ginex's changeset precomputation: the input ids of a
 * superbatch (the trace) and the cache as the previous plan left it become
 * the plan the executor follows: which rows to read before the first batch
 * (while the cache has empty slots), and per batch which gathered rows enter
 * which slots. Belady's rule at batch granularity, exact, in time linear in
 * the accesses; alongside, what LRU and the degree-ranked static cache of
 * the same capacity would have missed on the same accesses.
 *
 * Place in the data flow: store, on the inspector thread: sample ──► trace
 * ──► gx_plan_build ──► plan ──► executor (ginex.c).
 * Thread-safety: a trace, planner and plan are driven by one thread at a time.
 * Ownership: each object owns its arrays (oc_alloc'd, grown geometrically up
 * to the hint the inspector sizes the budget with, then reused).
 *
 * Why batch granularity: the executor gathers a whole batch from the cache
 * state before it (hits copied out, misses read into the output), then moves
 * rows from the output into the cache. So after batch i the cache may hold
 * any C rows of (cache ∪ batch i), and keeping those used soonest is optimal
 * by the usual exchange argument (Belady): a plan keeping a row used later
 * than one it dropped can swap them without adding a miss. A row seen only
 * in later superbatches counts as "never", the best the inspector can know.
 *
 *   states of a row (local) during one superbatch:
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

#include "store/ginex/ginex_int.h"

#define N_INF_BUCKETS 64u /* "no next use": one bucket per log2(in-degree + 1) */

enum { ST_OUT = 0, ST_CACHED = 1, ST_PENDING = 2 };

/*
 * Capacity for `need` elements: a quarter more than `cap` (at least 64), or
 * need itself if larger. Growth by 1.25 keeps the slack the budget must cover
 * small (GX_BYTES_PER_ACCESS and GX_BYTES_PER_SLOT count it) at a few more reallocations.
 */
static uint64_t next_cap(uint64_t cap, uint64_t need)
{
    uint64_t c = cap + cap / 4;
    if (c < 64)
        c = 64;
    return c < need ? need : c;
}

/* Grows *p (elem-sized entries) to at least need entries; *cap is updated by the caller. */
static int grow(void **p, uint64_t new_cap, size_t elem, const char *what, struct oc_err *err)
{
    void *q = oc_realloc(*p, (size_t)(new_cap * elem), what, err);
    if (!q)
        return err ? err->status : OC_ERR_NOMEM;
    *p = q;
    return OC_OK;
}

/* ---- trace ---------------------------------------------------------------- */

void gx_trace_init(struct gx_trace *t)
{
    memset(t, 0, sizeof(*t));
    gx_hash_init(&t->map);
}

void gx_trace_deinit(struct gx_trace *t)
{
    oc_free(t->iter_off);
    oc_free(t->loc);
    oc_free(t->loc_id);
    oc_free(t->last_iter);
    gx_hash_deinit(&t->map);
    gx_trace_init(t);
}

void gx_trace_clear(struct gx_trace *t)
{
    t->n_iters = t->n_acc = t->n_loc = 0;
    gx_hash_clear(&t->map);
    if (t->iter_off)
        t->iter_off[0] = 0;
}

uint64_t gx_trace_held_bytes(const struct gx_trace *t)
{
    return t->cap_iters * sizeof(uint64_t) + t->cap_acc * sizeof(uint32_t) +
           t->cap_loc * (sizeof(uint64_t) + sizeof(uint32_t)) + t->map.cap * sizeof(uint32_t);
}

/* Room for n_loc locals (map included). */
static int trace_reserve_loc(struct gx_trace *t, uint64_t n_loc, struct oc_err *err)
{
    static const char what[] = "store ginex: superbatch trace";
    if (n_loc >= GX_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store ginex: a superbatch of %llu distinct rows is too large (< 2^32)",
                      (unsigned long long)n_loc);
    if (n_loc > t->cap_loc) {
        uint64_t c = next_cap(t->cap_loc, n_loc);
        int rc = grow((void **)&t->loc_id, c, sizeof(uint64_t), what, err);
        if (rc == OC_OK)
            rc = grow((void **)&t->last_iter, c, sizeof(uint32_t), what, err);
        if (rc)
            return rc;
        t->cap_loc = c;
    }
    if (t->map.cap == 0)
        return gx_hash_alloc(&t->map, n_loc, what, err);
    return gx_hash_grow(&t->map, t->loc_id, n_loc, what, err);
}

int gx_trace_add_iter(struct gx_trace *t, const uint64_t *ids, uint64_t n, struct oc_err *err)
{
    static const char what[] = "store ginex: superbatch trace";
    int rc;
    if (t->n_iters + 2 > t->cap_iters) {
        uint64_t c = next_cap(t->cap_iters, t->n_iters + 2);
        if ((rc = grow((void **)&t->iter_off, c, sizeof(uint64_t), what, err)))
            return rc;
        if (t->cap_iters == 0)
            t->iter_off[0] = 0;
        t->cap_iters = c;
    }
    if (t->n_iters + 1 >= GX_INF - N_INF_BUCKETS)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "store ginex: superbatch of too many batches");
    if (t->n_acc + n > t->cap_acc) {
        uint64_t c = next_cap(t->cap_acc, t->n_acc + n);
        if ((rc = grow((void **)&t->loc, c, sizeof(uint32_t), what, err)))
            return rc;
        t->cap_acc = c;
    }
    if ((rc = trace_reserve_loc(t, t->n_loc + n, err)))
        return rc;
    uint32_t it = (uint32_t)t->n_iters;
    for (uint64_t j = 0; j < n; j++) {
        uint32_t l = gx_hash_get(&t->map, t->loc_id, ids[j]);
        if (l == GX_NONE) {
            l = (uint32_t)t->n_loc++;
            t->loc_id[l] = ids[j];
            gx_hash_put(&t->map, t->loc_id, l);
        } else if (t->last_iter[l] == it) {
            return OC_ERR(err, OC_ERR_FORMAT,
                          "store ginex: id %llu repeats in batch %u of the superbatch",
                          (unsigned long long)ids[j], it);
        }
        t->last_iter[l] = it;
        t->loc[t->n_acc++] = l;
    }
    t->iter_off[++t->n_iters] = t->n_acc;
    return OC_OK;
}

int gx_trace_local(struct gx_trace *t, uint64_t id, uint32_t *local, struct oc_err *err)
{
    uint32_t l = gx_hash_get(&t->map, t->loc_id, id);
    if (l == GX_NONE) {
        int rc = trace_reserve_loc(t, t->n_loc + 1, err);
        if (rc)
            return rc;
        l = (uint32_t)t->n_loc++;
        t->loc_id[l] = id;
        t->last_iter[l] = GX_INF;
        gx_hash_put(&t->map, t->loc_id, l);
    }
    *local = l;
    return OC_OK;
}

/* ---- plan ----------------------------------------------------------------- */

void gx_plan_init(struct gx_plan *p)
{
    memset(p, 0, sizeof(*p));
}

void gx_plan_deinit(struct gx_plan *p)
{
    oc_free(p->warm_id);
    oc_free(p->warm_slot);
    oc_free(p->chg_off);
    oc_free(p->chg_pos);
    oc_free(p->chg_slot);
    oc_free(p->cnt);
    oc_free(p->rec_off);
    gx_plan_init(p);
}

int gx_plan_reserve_offsets(struct gx_plan *p, uint64_t n, struct oc_err *err)
{
    if (n <= p->cap_rec_off)
        return OC_OK;
    uint64_t *o = oc_realloc(p->rec_off, n * sizeof(uint64_t), "store ginex: plan", err);
    if (!o)
        return err ? err->status : OC_ERR_NOMEM;
    p->rec_off = o;
    p->cap_rec_off = n;
    return OC_OK;
}

uint64_t gx_plan_held_bytes(const struct gx_plan *p)
{
    return p->cap_iters * (sizeof(uint64_t) + sizeof(struct gx_counts)) +
           p->cap_rec_off * sizeof(uint64_t) + p->cap_warm * (sizeof(uint64_t) + sizeof(uint32_t)) +
           p->cap_chg * 2 * sizeof(uint32_t);
}

static int plan_reserve_iters(struct gx_plan *p, uint64_t n_iters, struct oc_err *err)
{
    static const char what[] = "store ginex: plan";
    if (n_iters + 1 <= p->cap_iters)
        return OC_OK;
    uint64_t c = n_iters + 1;
    int rc = grow((void **)&p->chg_off, c, sizeof(uint64_t), what, err);
    if (rc == OC_OK)
        rc = grow((void **)&p->cnt, c, sizeof(struct gx_counts), what, err);
    if (rc == OC_OK)
        p->cap_iters = c;
    return rc;
}

static int plan_add_change(struct gx_plan *p, uint32_t pos, uint32_t slot, struct oc_err *err)
{
    static const char what[] = "store ginex: changeset";
    if (p->n_chg == p->cap_chg) {
        uint64_t c = next_cap(p->cap_chg, p->n_chg + 1);
        int rc = grow((void **)&p->chg_pos, c, sizeof(uint32_t), what, err);
        if (rc == OC_OK)
            rc = grow((void **)&p->chg_slot, c, sizeof(uint32_t), what, err);
        if (rc)
            return rc;
        p->cap_chg = c;
    }
    p->chg_pos[p->n_chg] = pos;
    p->chg_slot[p->n_chg] = slot;
    p->n_chg++;
    return OC_OK;
}

static int plan_add_warm(struct gx_plan *p, uint64_t id, uint32_t slot, struct oc_err *err)
{
    static const char what[] = "store ginex: warm-up list";
    if (p->n_warm == p->cap_warm) {
        uint64_t c = next_cap(p->cap_warm, p->n_warm + 1);
        int rc = grow((void **)&p->warm_id, c, sizeof(uint64_t), what, err);
        if (rc == OC_OK)
            rc = grow((void **)&p->warm_slot, c, sizeof(uint32_t), what, err);
        if (rc)
            return rc;
        p->cap_warm = c;
    }
    p->warm_id[p->n_warm] = id;
    p->warm_slot[p->n_warm] = slot;
    p->n_warm++;
    return OC_OK;
}

/* ---- planner ------------------------------------------------------------------ */

uint64_t gx_planner_fixed_bytes(uint64_t cap, int with_lru)
{
    return cap * (sizeof(uint64_t) + sizeof(uint32_t)) + (with_lru ? gx_lru_bytes(cap) : 0);
}

int gx_planner_init(struct gx_planner *p, uint64_t cap, const uint64_t *indptr, int with_lru,
                    const uint8_t *static_bits, struct oc_err *err)
{
    memset(p, 0, sizeof(*p));
    gx_lru_init(&p->lru, 0, NULL);
    p->indptr = indptr;
    p->static_bits = static_bits;
    if (cap >= GX_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store ginex: a cache of %llu rows is too large (< 2^32)",
                      (unsigned long long)cap);
    if (cap) {
        p->slot_id = oc_alloc((size_t)cap * sizeof(uint64_t), "store ginex: planned cache", err);
        p->free_slots = oc_alloc((size_t)cap * sizeof(uint32_t), "store ginex: planned cache", err);
        if (!p->slot_id || !p->free_slots)
            return err ? err->status : OC_ERR_NOMEM;
        for (uint64_t s = 0; s < cap; s++)
            p->slot_id[s] = GX_EMPTY;
    }
    p->cap = cap;
    if (with_lru)
        return gx_lru_init(&p->lru, cap, err);
    return OC_OK;
}

void gx_planner_deinit(struct gx_planner *p)
{
    oc_free(p->slot_id);
    oc_free(p->free_slots);
    oc_free(p->nxt);
    oc_free(p->key);
    oc_free(p->link);
    oc_free(p->slot_of);
    oc_free(p->state);
    oc_free(p->head);
    oc_free(p->pend_pos);
    oc_free(p->pend_loc);
    gx_lru_deinit(&p->lru);
    memset(p, 0, sizeof(*p));
}

uint64_t gx_planner_held_bytes(const struct gx_planner *p)
{
    return gx_planner_fixed_bytes(p->cap, p->lru.cap != 0) + p->cap_acc * sizeof(uint32_t) +
           p->cap_loc * (3 * sizeof(uint32_t) + 1) + p->cap_head * sizeof(uint32_t) +
           p->cap_pend * 2 * sizeof(uint32_t);
}

/* Scratch for a superbatch of n_acc accesses, n_loc locals, n_iters batches, max_rows per batch. */
static int planner_reserve(struct gx_planner *p, uint64_t n_acc, uint64_t n_loc, uint64_t n_iters,
                           uint64_t max_rows, struct oc_err *err)
{
    static const char what[] = "store ginex: planner scratch";
    int rc = OC_OK;
    if (n_acc > p->cap_acc) {
        uint64_t c = next_cap(p->cap_acc, n_acc);
        if ((rc = grow((void **)&p->nxt, c, sizeof(uint32_t), what, err)))
            return rc;
        p->cap_acc = c;
    }
    if (n_loc > p->cap_loc) {
        uint64_t c = next_cap(p->cap_loc, n_loc);
        if ((rc = grow((void **)&p->key, c, sizeof(uint32_t), what, err)) ||
            (rc = grow((void **)&p->link, c, sizeof(uint32_t), what, err)) ||
            (rc = grow((void **)&p->slot_of, c, sizeof(uint32_t), what, err)) ||
            (rc = grow((void **)&p->state, c, 1, what, err)))
            return rc;
        p->cap_loc = c;
    }
    if (n_iters + N_INF_BUCKETS > p->cap_head) {
        uint64_t c = next_cap(p->cap_head, n_iters + N_INF_BUCKETS);
        if ((rc = grow((void **)&p->head, c, sizeof(uint32_t), what, err)))
            return rc;
        p->cap_head = c;
    }
    if (max_rows > p->cap_pend) {
        uint64_t c = next_cap(p->cap_pend, max_rows);
        if ((rc = grow((void **)&p->pend_pos, c, sizeof(uint32_t), what, err)) ||
            (rc = grow((void **)&p->pend_loc, c, sizeof(uint32_t), what, err)))
            return rc;
        p->cap_pend = c;
    }
    return OC_OK;
}

/* The working state of one gx_plan_build call. */
struct build {
    struct gx_planner *p;
    const struct gx_trace *t;
    uint64_t n_iters;
    uint64_t top; /* no bucket above it is nonempty */
};

/* Bucket of local l by its next use: the iteration, or an "never" bucket by in-degree. */
static inline uint64_t bucket_of(const struct build *b, uint32_t l)
{
    uint32_t k = b->p->key[l];
    if (k != GX_INF)
        return k;
    unsigned cls = 0;
    if (b->p->indptr) {
        uint64_t id = b->t->loc_id[l];
        uint64_t deg1 = b->p->indptr[id + 1] - b->p->indptr[id] + 1;
        cls = 63u - (unsigned)__builtin_clzll(deg1);
    }
    return b->n_iters + (N_INF_BUCKETS - 1) - cls; /* higher degree: kept longer */
}

static inline void bucket_push(struct build *b, uint32_t l)
{
    uint64_t k = bucket_of(b, l);
    b->p->link[l] = b->p->head[k];
    b->p->head[k] = l;
    if (k > b->top)
        b->top = k;
}

int gx_plan_build(struct gx_planner *p, struct gx_trace *t, struct gx_plan *out, struct oc_err *err)
{
    const uint64_t S = t->n_iters, C = p->cap;
    const uint64_t *off = t->iter_off;
    uint64_t max_rows = 0;
    int rc;

    out->n_warm = out->n_chg = 0;
    if (out->n_iters != S)
        return OC_ERR(err, OC_ERR_INTERNAL, "store ginex: plan of %llu batches for a trace of %llu",
                      (unsigned long long)out->n_iters, (unsigned long long)S);
    if ((rc = plan_reserve_iters(out, S, err)))
        return rc;
    out->chg_off[0] = 0;
    /* The carried rows become locals too (no accesses: next use "never"). */
    for (uint64_t s = 0; s < C; s++) {
        uint32_t l;
        if (p->slot_id[s] != GX_EMPTY && (rc = gx_trace_local(t, p->slot_id[s], &l, err)))
            return rc;
    }
    for (uint64_t i = 0; i < S; i++)
        if (off[i + 1] - off[i] > max_rows)
            max_rows = off[i + 1] - off[i];
    if ((rc = planner_reserve(p, t->n_acc, t->n_loc, S, max_rows, err)))
        return rc;

    struct build b = {p, t, S, 0};
    uint32_t *key = p->key, *link = p->link, *slot_of = p->slot_of, *nxt = p->nxt;
    uint8_t *state = p->state;
    for (uint64_t l = 0; l < t->n_loc; l++) {
        key[l] = GX_INF;
        slot_of[l] = GX_NONE;
        state[l] = ST_OUT;
    }
    /* Backward pass: nxt[a] = next iteration using a's row; key[l] ends as l's first use. */
    for (uint64_t i = S; i-- > 0;)
        for (uint64_t a = off[i + 1]; a-- > off[i];) {
            uint32_t l = t->loc[a];
            nxt[a] = key[l];
            key[l] = (uint32_t)i;
        }
    for (uint64_t k = 0; k < S + N_INF_BUCKETS; k++)
        p->head[k] = GX_NONE;
    /* Cached rows into their buckets; empty slots onto the free stack (slot 0 on top). */
    uint64_t n_free = 0;
    for (uint64_t s = C; s-- > 0;) {
        if (p->slot_id[s] == GX_EMPTY) {
            p->free_slots[n_free++] = (uint32_t)s;
            continue;
        }
        uint32_t l = gx_hash_get(&t->map, t->loc_id, p->slot_id[s]);
        slot_of[l] = (uint32_t)s;
        state[l] = ST_CACHED;
        bucket_push(&b, l);
    }
    uint64_t n_occ = C - n_free;
    /* Warm-up: empty slots take the rows used soonest, in trace order. */
    for (uint64_t a = 0; a < t->n_acc && n_occ < C; a++) {
        uint32_t l = t->loc[a];
        if (state[l] != ST_OUT)
            continue;
        uint32_t s = p->free_slots[--n_free];
        slot_of[l] = s;
        p->slot_id[s] = t->loc_id[l];
        state[l] = ST_CACHED;
        bucket_push(&b, l);
        n_occ++;
        if ((rc = plan_add_warm(out, t->loc_id[l], s, err)))
            return rc;
    }

    for (uint64_t i = 0; i < S; i++) {
        struct gx_counts *cnt = &out->cnt[i];
        uint64_t a0 = off[i], a1 = off[i + 1], n_pend = 0;
        memset(cnt, 0, sizeof(*cnt));
        cnt->n_acc = a1 - a0;
        /* Bucket i holds exactly this batch's hits; every access moves its row's key on. */
        uint32_t hits = p->head[i];
        p->head[i] = GX_NONE;
        for (uint64_t a = a0; a < a1; a++) {
            uint32_t l = t->loc[a];
            uint64_t id = t->loc_id[l];
            cnt->n_belady += state[l] != ST_CACHED;
            if (p->lru.cap || C == 0)
                cnt->n_lru += !gx_lru_access(&p->lru, id);
            if (p->static_bits)
                cnt->n_static += !((p->static_bits[id >> 3] >> (id & 7)) & 1);
            key[l] = nxt[a];
        }
        for (uint32_t l = hits, nl; l != GX_NONE; l = nl) {
            nl = link[l];
            bucket_push(&b, l);
        }
        /* Misses, in batch order: enter if there is room or a cached row is used later. */
        for (uint64_t a = a0; a < a1; a++) {
            uint32_t l = t->loc[a];
            if (state[l] != ST_OUT)
                continue;
            if (n_occ < C) {
                n_occ++;
            } else {
                uint64_t k = bucket_of(&b, l);
                while (b.top > i && p->head[b.top] == GX_NONE)
                    b.top--;
                if (b.top <= k)
                    continue; /* bypass: nothing cached is used later (ties keep the cached row) */
                uint32_t v = p->head[b.top];
                p->head[b.top] = link[v];
                if (state[v] == ST_CACHED) {
                    uint32_t s = slot_of[v];
                    slot_of[v] = GX_NONE;
                    p->slot_id[s] = GX_EMPTY;
                    p->free_slots[n_free++] = s;
                }
                state[v] = ST_OUT; /* a pending victim simply never takes its slot */
            }
            state[l] = ST_PENDING;
            bucket_push(&b, l);
            p->pend_pos[n_pend] = (uint32_t)(a - a0);
            p->pend_loc[n_pend++] = l;
        }
        /* The rows still pending take the freed (or empty) slots: one change each. */
        for (uint64_t k = 0; k < n_pend; k++) {
            uint32_t l = p->pend_loc[k];
            if (state[l] != ST_PENDING)
                continue;
            uint32_t s = p->free_slots[--n_free];
            slot_of[l] = s;
            p->slot_id[s] = t->loc_id[l];
            state[l] = ST_CACHED;
            if ((rc = plan_add_change(out, p->pend_pos[k], s, err)))
                return rc;
        }
        out->chg_off[i + 1] = out->n_chg;
    }
    p->n_used = n_occ;
    return OC_OK;
}
