/*
 * ginex_inspect.c — the inspector of the `ginex` strategy: the superbatch
 * planner of plan/ (src/plan/superbatch.h: superbatch k+1's batches
 * sampled exactly as train samples them, persisted under the plan directory
 * and turned into the Belady plan) run as a pipeline stage (one thread, on
 * the store's pipeline: the training pipeline in a run) while the executor
 * runs superbatch k, and the plan directory it writes in.
 *
 * Place in the data flow: store; graph ──► planner (plan/superbatch.c) ──►
 * plan ──► executor (ginex_exec.c), through two bounded queues (to_fill:
 * empty plans to fill, in superbatch order; done: filled plans), with
 * exactly two plans in circulation.
 * Thread-safety: the stage's thread drives the planner (its sampler: in RAM
 * pool-less, so it never competes for the training pool; over an on-disk
 * topology on the STORE_DISK_SAMPLERS threads of the pipeline's pool that
 * store_sampler_pool gives, which only this stage drives, so several
 * neighbor-list reads are in flight; the batches are the same); a plan
 * belongs to whichever side popped it last. The planner's counters are C11
 * atomics; cancellation is the pipeline's. Lock order: none held across
 * calls (each queue locks only inside its own calls).
 * Ownership: the inspector owns the planner; the queues and the thread are
 * the pipeline's (the registry joins it before the store's free); the
 * graph, the dataset and the static bitmap are borrowed from the store.
 *
 * PLAN/ginex-<key>/ (PLAN: --plan-dir, default DIR/plan; key: FNV-1a of the
 * dataset's topology checksums, the sampling options, the batch size and the
 * training ids) holds the superbatch files (superbatch.h draws them).
 * Temporaries of runs that are over are removed at start
 * (oc_tmp_clean_stale); others are never read.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "store/ginex/ginex_int.h"

struct gx_inspector {
    struct pl_sb sb; /* the planner and its two plans */
    int sb_open;
    const struct oc_store *s;
    /* its sampler's topology reads added to the store's (store_topo_add) */
    struct oc_topo_disk_stats topo_seen;
    struct oc_pipeline *p; /* the store's stages (store_stages) */
    struct oc_queue *to_fill, *done;
};

/* The planner's hooks: the pipeline's cancel, the sampler's topology reads. */
static int insp_cancelled(void *ctx)
{
    return oc_pipeline_cancelled(((struct gx_inspector *)ctx)->p);
}

static void insp_sampled(void *ctx, const struct oc_sampler *smp)
{
    struct gx_inspector *in = ctx;
    store_topo_add(in->s, smp, &in->topo_seen); /* the run's topology */
}

uint64_t gx_inspector_held_bytes(const struct gx_inspector *in)
{
    return in ? pl_sb_held_bytes(&in->sb) : 0;
}

void gx_inspector_times(const struct gx_inspector *in, uint64_t *sample_us, uint64_t *build_us)
{
    struct gx_inspector *m = (struct gx_inspector *)in;
    *sample_us = m ? atomic_load(&m->sb.sample_us) : 0;
    *build_us = m ? atomic_load(&m->sb.build_us) : 0;
}

const char *gx_inspector_dir(const struct gx_inspector *in)
{
    return in ? in->sb.dir : "";
}

void gx_inspector_counts(const struct gx_inspector *in, uint64_t *reused, uint64_t *sampled)
{
    struct gx_inspector *m = (struct gx_inspector *)in;
    *reused = m ? atomic_load(&m->sb.n_reused) : 0;
    *sampled = m ? atomic_load(&m->sb.n_sampled) : 0;
}

/* The inspector stage: fills each plan it is given and hands it on, its error with it. */
static int inspector_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct gx_inspector *in = ctx;
    struct pl_sb_plan *p = item;
    (void)err; /* a superbatch's error travels with its plan, to the executor, in order */
    if (pl_sb_finished(&in->sb))
        return OC_OK; /* the plan is done: the plan stays idle */
    oc_err_clear(&p->err);
    p->status = pl_sb_fill(&in->sb, p, &p->err);
    return oc_stage_push(st, in->done, p);
}

/* ---- life cycle ------------------------------------------------------------------ */

int gx_plan_dir(const struct oc_store *s, const struct oc_store_config *cfg, char *dir, size_t n,
                uint64_t *key)
{
    dir[0] = '\0';
    *key = 0;
    if (!cfg->plan_dir)
        return 0;
    *key = store_plan_key(s, cfg, "offcore ginex plan v1");
    int w = snprintf(dir, n, "%s/ginex-%016" PRIx64, cfg->plan_dir, *key);
    struct oc_err e;
    int owned; /* marked as offcore's: only then are its unmarked stale files removed */
    oc_err_clear(&e);
    if (w < 0 || (size_t)w >= n - 64) {
        dir[0] = '\0';
        oc_log(OC_LOG_WARN, "store ginex: plan directory %s: path too long; not persisting",
               cfg->plan_dir);
    } else if (oc_dir_make_owned(dir, &owned, &e) != OC_OK) {
        oc_log(OC_LOG_WARN,
               "store ginex: %s; superbatches stay in memory (--plan-dir DIR puts them "
               "elsewhere)",
               e.msg);
        dir[0] = '\0';
    } else {
        oc_tmp_clean_stale(dir, NULL, NULL, NULL);
    }
    return dir[0] != '\0';
}

int gx_inspector_new(struct oc_store *s, const struct gx_inspect_config *ic,
                     struct gx_inspector **out, struct oc_err *err)
{
    const struct oc_store_config *cfg = ic->cfg;
    int rc;

    *out = NULL;
    struct gx_inspector *in = oc_calloc(1, sizeof(*in), "store ginex: inspector", err);
    if (!in)
        return err ? err->status : OC_ERR_NOMEM;
    in->s = s;
    *out = in;
    const struct oc_graph *graph = store_plan_graph(cfg);
    struct pl_sb_config c = {.who = "store ginex",
                             .graph = graph,
                             .so = cfg->sample_opts,
                             .train_ids = cfg->train_ids,
                             .n_train = cfg->n_train,
                             .batch_size = cfg->batch_size,
                             .n_nodes = s->n_nodes,
                             .indptr = cfg->graph->indptr,
                             .nb = ic->n_batches,
                             .t0 = ic->t0,
                             .t_end = ic->t_end,
                             .superbatch = ic->superbatch,
                             .max_acc = ic->max_acc,
                             .capacity = ic->capacity,
                             .static_bits = ic->static_bits,
                             .dir = ic->dir,
                             .key = ic->key,
                             .misses = ic->misses,
                             .accesses = cfg->accesses ? cfg->accesses->of : NULL,
                             .accesses_ctx = cfg->accesses ? cfg->accesses->ctx : NULL,
                             .cancelled = insp_cancelled,
                             .sampled = insp_sampled,
                             .ctx = in};
    /* over an on-disk topology: sampling waits on its reads */
    if ((rc = store_stages(s, &in->p, err)) ||
        (rc = store_sampler_pool(in->p, graph, &c.pool, err)))
        return rc;
    in->sb_open = 1;
    if ((rc = pl_sb_open(&in->sb, &c, err)) ||
        (rc = oc_pipeline_queue(in->p, 2, &in->to_fill, err)) ||
        (rc = oc_pipeline_queue(in->p, 2, &in->done, err)))
        return rc;
    oc_queue_push(in->to_fill, &in->sb.plans[0]);
    oc_queue_push(in->to_fill, &in->sb.plans[1]);
    if ((rc = oc_pipeline_stage(in->p, "ginex inspector", 1, in->to_fill, inspector_stage, in, NULL,
                                err)) ||
        (rc = oc_pipeline_start(in->p, err)))
        return rc;
    return OC_OK;
}

void gx_inspector_free(struct gx_inspector *in)
{
    if (!in)
        return;
    /* its stage was joined (store.h: the registry joins the store's stages first) */
    if (in->sb_open)
        pl_sb_close(&in->sb);
    oc_free(in);
}

int gx_inspector_next(struct gx_inspector *in, struct pl_sb_plan **plan, struct oc_err *err)
{
    void *item = NULL;
    *plan = NULL;
    if (oc_queue_pop(in->done, &item) != OC_OK) { /* the pipeline stopped: say why */
        int rc = oc_pipeline_status(in->p, err);
        return rc ? rc : OC_ERR(err, OC_ERR_CANCELLED, "store ginex: the inspector has stopped");
    }
    struct pl_sb_plan *p = item;
    if (p->status) {
        if (err)
            *err = p->err;
        return p->status;
    }
    *plan = p;
    return OC_OK;
}

void gx_inspector_release(struct gx_inspector *in, struct pl_sb_plan *plan)
{
    oc_queue_push(in->to_fill, plan);
}
