/*
 * kg_tiger_plan.c — a superbatch's plan, made on the planner stage while the
 * superbatch before it trains (an epoch's first: on the training thread):
 *
 *   heads (S batches', training order)
 *     ──► slicing: heads without slices ──► kg_slicer_slice ──► slice store
 *         (records written, their places pending until the plan is used)
 *     ──► per batch the distinct slices of its heads (mapping) = the trace
 *     ──► Belady changesets for the Slice Cache (oc_plan_belady), copied
 *         into the plan (struct sb_plan)
 *
 * Place in the data flow: kg (kg_tiger.c ──► here ──► kg_slice.c,
 * kg_slice_store.c, plan's Belady planner).
 * Thread-safety: between tiger_planner_start and tiger_planner_wait the
 * planner stage owns the slicer, the Belady planner, the store's append side,
 * the plan not training and trace_mark; the slicer reads the fact graph
 * through its own reader, which ignores the atom maps batches set.
 * Ownership: the plans and the job are the executor's.
 */
#include <string.h>

#include "kg/kg_tiger_exec_int.h"

/* Copies a superbatch's heads into j. */
int tiger_job_set(struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n,
                  struct oc_err *err)
{
    OC_KG_TRY(oc_grow_by(&j->boff, &j->cap_boff, n + 1, 8, OC_GROW_EXACT, "kg superbatch", err));
    OC_KG_TRY(
        oc_grow_by(&j->heads, &j->cap_heads, boff[n], 4, OC_GROW_EXACT, "kg superbatch", err));
    j->n_batches = n;
    memcpy(j->boff, boff, (size_t)(n + 1) * 8);
    memcpy(j->heads, heads, (size_t)boff[n] * 4);
    return OC_OK;
}

/* Whether j holds these heads. */
int tiger_job_is(const struct sb_job *j, const uint32_t *heads, const uint64_t *boff, uint32_t n)
{
    return j->n_batches == n && memcmp(j->boff, boff, (size_t)(n + 1) * 8) == 0 &&
           memcmp(j->heads, heads, (size_t)boff[n] * 4) == 0;
}

/* The Belady planner's plan, copied into p (its arrays last only until its next plan). */
static int plan_copy(struct sb_plan *p, const struct oc_plan_belady_plan *bp, struct oc_err *err)
{
    void *const warm[] = {&p->warm_id, &p->warm_slot}, *const chg[] = {&p->chg_pos, &p->chg_slot};
    const size_t warm_sz[] = {8, 4}, chg_sz[] = {4, 4};
    OC_KG_TRY(oc_grow_all(warm, warm_sz, 2, &p->cap_warm, bp->n_warm, OC_GROW_EXACT,
                          "kg superbatch", err));
    OC_KG_TRY(
        oc_grow_all(chg, chg_sz, 2, &p->cap_chg, bp->n_chg, OC_GROW_EXACT, "kg superbatch", err));
    p->n_warm = bp->n_warm;
    memcpy(p->chg_off, bp->chg_off, (size_t)(p->n_batches + 1) * 8);
    if (bp->n_warm) { /* (none: the arrays may be NULL) */
        memcpy(p->warm_id, bp->warm_id, (size_t)bp->n_warm * 8);
        memcpy(p->warm_slot, bp->warm_slot, (size_t)bp->n_warm * 4);
    }
    if (bp->n_chg) {
        memcpy(p->chg_pos, bp->chg_pos, (size_t)bp->n_chg * 4);
        memcpy(p->chg_slot, bp->chg_slot, (size_t)bp->n_chg * 4);
    }
    return OC_OK;
}

/*
 * Plans superbatch j into p: slices its heads that have none yet (epoch 0 of
 * a run without a reusable store; the records are written, their places
 * pending), lists each batch's distinct slices and runs the Belady planner.
 * Runs on the planner stage, or on the training thread while the planner is idle.
 */
int tiger_plan_superbatch(struct kg_tiger *t, const struct sb_job *j, struct sb_plan *p,
                          struct oc_err *err)
{
    double t0 = oc_now_s();
    p->n_batches = j->n_batches;
    if (!t->store.loaded) {
        for (uint64_t i = 0; i < j->boff[j->n_batches]; i++) {
            if (tiger_quitting(t))
                return OC_ERR(err, OC_ERR_CANCELLED, "kg slicer: closed");
            OC_KG_TRY(kg_slicer_slice(&t->slicer, j->heads[i], &t->store, err));
        }
        kg_slicer_trim(&t->slicer); /* its scratch held a whole query's facts */
    }
    p->n_slices = t->store.loaded ? t->store.n_slices : t->slicer.n_slices;
    uint64_t had = t->cap_trace; /* the new marks start cleared */
    OC_KG_TRY(oc_grow_by(&t->trace_mark, &t->cap_trace, p->n_slices + 1, 4, OC_GROW_EXACT,
                         "kg superbatch", err));
    memset(t->trace_mark + had, 0, (size_t)(t->cap_trace - had) * 4);
    double t1 = oc_now_s();
    p->slicing_s = t1 - t0;
    /* the trace: each batch's distinct slices */
    uint64_t n_ids = 0;
    void *const per_batch[] = {&p->iter_off, &p->chg_off}; /* n_batches + 1 each */
    const size_t per_batch_sz[] = {8, 8};
    OC_KG_TRY(oc_grow_all(per_batch, per_batch_sz, 2, &p->cap_iters, j->n_batches + 1,
                          OC_GROW_EXACT, "kg superbatch", err));
    p->iter_off[0] = 0;
    for (uint32_t b = 0; b < j->n_batches; b++) {
        uint32_t g = tiger_next_gen(&t->trace_gen, t->trace_mark, t->cap_trace, NULL, 0);
        for (uint64_t i = j->boff[b]; i < j->boff[b + 1]; i++) {
            const uint32_t *ids;
            uint32_t k;
            kg_slice_store_slices_of(&t->store, &t->slicer, j->heads[i], &ids, &k);
            OC_KG_TRY(oc_grow(&p->ids, &p->cap_ids, n_ids + k, 8, 4096, "kg superbatch", err));
            for (uint32_t x = 0; x < k; x++)
                if (t->trace_mark[ids[x]] != g) {
                    t->trace_mark[ids[x]] = g;
                    p->ids[n_ids++] = ids[x];
                }
        }
        p->iter_off[b + 1] = n_ids;
    }
    struct oc_plan_belady_plan bp;
    OC_KG_TRY(oc_plan_belady_plan(t->belady, p->ids, p->iter_off, j->n_batches, &bp, err));
    OC_KG_TRY(plan_copy(p, &bp, err));
    p->plan_s = oc_now_s() - t1;
    return OC_OK;
}

/* The planner's job: t->job into the superbatch not training. */
int tiger_plan_ahead(struct kg_tiger *t, struct oc_err *err)
{
    return tiger_plan_superbatch(t, &t->job, t->p == &t->sb[0] ? &t->sb[1] : &t->sb[0], err);
}

/* Waits until the planner is idle; the error of the plan it ran, if any (that plan dropped). */
int tiger_planner_wait(struct kg_tiger *t, struct oc_err *err)
{
    int rc = tiger_job_wait(&t->planner, err);
    if (rc)
        t->job_valid = 0;
    return rc;
}

/* Starts planning superbatch (heads, boff, n) on the planner stage. */
int tiger_planner_start(struct kg_tiger *t, const uint32_t *heads, const uint64_t *boff, uint32_t n,
                        struct oc_err *err)
{
    OC_KG_TRY(tiger_job_set(&t->job, heads, boff, n, err));
    OC_KG_TRY(tiger_job_start(&t->planner, err));
    t->job_valid = 1;
    return OC_OK;
}
