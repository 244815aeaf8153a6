/*
 * belady_api.c — the Belady changeset planner (pl_trace, pl_planner,
 * pl_plan_build in belady.c, which ginex drives) behind oc_plan_belady, so
 * another cache of ids (kg's slice cache) follows the very same plans
 * instead of a copy of the algorithm: the caller's superbatch of id lists
 * becomes a trace, the planner carries the cache contents from call to call.
 * The trace and changes stay in RAM (no plan directory); the changes are
 * copied out of their spill into the arrays the plan hands out.
 *
 * Place in the data flow: plan; kg's TIGER Slice Cache and store's
 * inspection (--strategy auto) call it.
 * Thread-safety: one thread at a time per planner.
 * Ownership: the planner owns its trace, plan, change arrays and miss
 * counts; the plan handed out points into them until the next call; ids are
 * borrowed.
 */
#include <string.h>

#include "plan/belady.h"

struct oc_plan_belady {
    struct pl_planner planner;
    struct pl_trace trace;
    struct pl_plan plan;
    uint64_t *n_miss;
    uint64_t cap_miss;
    struct pl_change *chg; /* the plan's changes, read out of its spill */
    uint32_t *chg_pos, *chg_slot;
    uint64_t cap_chg;
};

int oc_plan_belady_new(uint64_t capacity, struct oc_plan_belady **out, struct oc_err *err)
{
    *out = NULL;
    if (capacity >= PL_NONE)
        return OC_ERR(err, OC_ERR_ARG, "belady planner: capacity %llu too large",
                      (unsigned long long)capacity);
    struct oc_plan_belady *b = oc_calloc(1, sizeof(*b), "belady planner", err);
    if (!b)
        return err->status;
    pl_trace_init(&b->trace, UINT64_MAX);
    pl_plan_init(&b->plan);
    int rc = pl_planner_init(&b->planner, capacity, 0, NULL, 0, NULL, err);
    if (rc) {
        oc_plan_belady_free(b);
        return rc;
    }
    *out = b;
    return OC_OK;
}

void oc_plan_belady_free(struct oc_plan_belady *b)
{
    if (!b)
        return;
    pl_planner_deinit(&b->planner);
    pl_trace_deinit(&b->trace);
    pl_plan_deinit(&b->plan);
    oc_free(b->n_miss);
    oc_free(b->chg);
    oc_free(b->chg_pos);
    oc_free(b->chg_slot);
    oc_free(b);
}

/* Room for n changes and n_iters miss counts. */
static int reserve(struct oc_plan_belady *b, uint64_t n, uint64_t n_iters, struct oc_err *err)
{
    void *const chg[] = {&b->chg, &b->chg_pos, &b->chg_slot};
    const size_t chg_sz[] = {sizeof(*b->chg), 4, 4};
    int rc = oc_grow_by(&b->n_miss, &b->cap_miss, n_iters, 8, OC_GROW_EXACT, "belady planner", err);
    return rc ? rc
              : oc_grow_all(chg, chg_sz, 3, &b->cap_chg, n, OC_GROW_EXACT, "belady planner", err);
}

int oc_plan_belady_plan(struct oc_plan_belady *b, const uint64_t *ids, const uint64_t *iter_off,
                        uint64_t n_iters, struct oc_plan_belady_plan *out, struct oc_err *err)
{
    memset(out, 0, sizeof(*out));
    pl_trace_clear(&b->trace);
    uint64_t n_ids = 0; /* ids the planner must index: one past the largest */
    for (uint64_t a = iter_off[0]; a < iter_off[n_iters]; a++)
        if (ids[a] + 1 > n_ids)
            n_ids = ids[a] + 1;
    int rc = pl_planner_reserve_nodes(&b->planner, n_ids, err);
    for (uint64_t i = 0; rc == OC_OK && i < n_iters; i++)
        rc = pl_trace_add_iter(&b->trace, ids + iter_off[i], iter_off[i + 1] - iter_off[i], err);
    if (rc)
        return rc;
    b->plan.first_iter = 0;
    b->plan.n_iters = n_iters;
    if ((rc = pl_plan_build(&b->planner, &b->trace, &b->plan, err)))
        return rc;
    uint64_t n_chg = b->plan.chg_off[n_iters];
    if ((rc = reserve(b, n_chg, n_iters, err)) ||
        (n_chg && (rc = pl_spill_get(&b->plan.chg, 0, n_chg, b->chg, err))))
        return rc;
    for (uint64_t c = 0; c < n_chg; c++) {
        b->chg_pos[c] = b->chg[c].pos;
        b->chg_slot[c] = b->chg[c].slot;
    }
    for (uint64_t i = 0; i < n_iters; i++)
        b->n_miss[i] = b->plan.cnt[i].n_belady;
    *out = (struct oc_plan_belady_plan){n_iters,         b->plan.n_warm,    n_chg,
                                        b->plan.warm_id, b->plan.warm_slot, b->plan.chg_off,
                                        b->chg_pos,      b->chg_slot,       b->n_miss};
    return OC_OK;
}

uint64_t oc_plan_belady_held_bytes(const struct oc_plan_belady *b)
{
    return pl_planner_held_bytes(&b->planner) + pl_trace_held_bytes(&b->trace) +
           pl_plan_held_bytes(&b->plan) + b->cap_miss * 8 + b->cap_chg * (8 + 4 + 4);
}
