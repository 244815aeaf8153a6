/*
 * ginex_size.c — how the `ginex` strategy divides its budget: the training
 * plan's shape, the first batch's input rows sampled at open, the
 * superbatch length S, the accesses a superbatch may hold (in RAM, or in
 * spill files bounded by the disk's free space) and the cache's rows C.
 * ginex.c's header comment draws the memory layout these figures fill.
 *
 * Place in the data flow: store (ginex), called by ginex_open and by the
 * budget search of oc_store_ginex_budget_for, before anything is held.
 * Thread-safety: pure functions of their arguments (probe_rows samples with
 * a sampler of its own).
 * Ownership: nothing is kept; the sampler and batch made here are freed here.
 */
#include <inttypes.h>
#include <string.h>

#include "store/ginex/ginex_int.h"

#define GX_DEFAULT_SUPERBATCH 16u   /* spills in RAM: at most this many batches by default */
#define GX_LONG_SUPERBATCH    1024u /* spills in files: an epoch, at most this many */

/* The training plan's shape; have = 0 when there is nothing to plan. */
int gx_plan_shape(const struct oc_store_config *cfg, uint64_t *nb, uint64_t *t0, uint64_t *t_end,
                  struct oc_err *err)
{
    *nb = *t0 = *t_end = 0;
    if (cfg->n_epochs <= cfg->first_epoch)
        return OC_OK;
    const char *missing = store_plan_missing(cfg);
    if (missing)
        return OC_ERR(err, OC_ERR_ARG,
                      "store ginex: inspecting superbatches needs the training plan; config has "
                      "no %s",
                      missing);
    *nb = (cfg->n_train + cfg->batch_size - 1) / cfg->batch_size;
    *t0 = (uint64_t)cfg->first_epoch * *nb;
    *t_end = (uint64_t)cfg->n_epochs * *nb;
    return OC_OK;
}

/*
 * Input rows of the plan's first batch (its accesses, for a store over other
 * ids: oc_store_config.accesses), sampled once at open: real batches
 * hold far fewer rows than the batch_size x prod(1 + fanout) bound (repeated
 * neighbors), and superbatches are sized from this (with a quarter more);
 * one that turns out larger is cut earlier by the inspector, never exceeds.
 */
int gx_probe_rows(const struct oc_store_config *cfg, uint64_t nb, uint64_t t0, uint64_t *rows,
                  struct oc_err *err)
{
    struct oc_sample_iter it;
    uint64_t *ids = NULL, cap = 0;
    int rc = oc_sample_iter_open(&it, store_plan_graph(cfg), cfg->sample_opts, NULL, cfg->train_ids,
                                 cfg->n_train, cfg->batch_size, err);
    if (rc == OC_OK)
        rc = oc_sample_iter_sample(&it, t0 / nb, t0 % nb, &it.batch, err);
    if (rc == OC_OK)
        *rows = it.batch.n_input;
    if (rc == OC_OK && cfg->accesses) /* the ids the store is gathered with for it */
        rc = cfg->accesses->of(cfg->accesses->ctx, &it.batch, &ids, &cap, rows, err);
    if (rc)
        oc_err_prefix(err, "store ginex: sampling the first batch");
    oc_free(ids);
    oc_sample_iter_close(&it);
    return rc;
}

/*
 * Accesses a superbatch may have when its spills are files under dir: what a
 * quarter of the free space holds for two superbatches in flight (trace,
 * next uses, changes; the batch records are written besides, and a plan file
 * that cannot be written is not an error).
 */
static uint64_t disk_accesses(const char *dir)
{
    uint64_t free_b = 0;
    struct oc_err e;
    if (oc_fs_free_bytes(dir, &free_b, &e) != OC_OK)
        return 0;
    return free_b / 4 / (2 * GX_DISK_PER_ACCESS);
}

/*
 * Superbatch length S, accesses per superbatch, cache rows C, given the
 * first batch's input rows (probe; 0 = unknown) and whether the superbatch's
 * spills go to files under spill_dir ("" = RAM); OC_ERR_BUDGET if the budget
 * cannot hold the executor, the inspector and (spills in RAM) one batch of
 * accesses before any cached row.
 */
int gx_plan_capacity(const struct oc_store *s, const struct oc_store_config *cfg,
                     uint64_t exec_struct_bytes, uint64_t n_iters, uint64_t probe,
                     const char *spill_dir, uint64_t *S_out, uint64_t *acc_out, uint64_t *C_out,
                     uint32_t *lanes_out, struct gx_hyper_shape *hs, struct oc_err *err)
{
    uint64_t rows = store_budget_rows(s, cfg); /* train's measure, else the bound */
    struct gx_opts o;
    store_opts_read(&oc_store_ginex, cfg, &o);
    uint64_t est = probe && probe + probe / 4 + 1 < rows ? probe + probe / 4 + 1 : rows;
    uint32_t L = cfg->sample_opts ? cfg->sample_opts->n_layers : 1;
    uint64_t exec = exec_struct_bytes + STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
    /* a further gather lane: a reader and one batch's changeset */
    uint64_t lane = STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES +
                    rows * sizeof(struct pl_change) * 5 / 4;
    uint64_t S = 0, ifix = 0, want = 0;
    int on_disk = spill_dir[0] != '\0';
    char need_s[32], have_s[32];

    *S_out = *acc_out = *C_out = 0;
    *lanes_out = 1;
    /* --hyperbatch F: its groups come off the budget first (only for planned training
       through a batch pipeline; one lane, which gathers in the order batches were loaded) */
    struct gx_hyper_shape hyper;
    memset(&hyper, 0, sizeof(hyper));
    if (o.hyperbatch > 0 && cfg->mem_bytes && cfg->pipeline && n_iters) {
        hyper.sh.disk = hyper.sh.fed = o.hyperbatch_disk; /* on disk a feeder stages them */
        hyper.bytes = store_hyper_size(s, o.hyperbatch, cfg->mem_bytes, rows, &hyper.sh) +
                      (hyper.sh.fed ? store_feed_bytes(cfg, rows, rows) : 0);
    }
    if (hs)
        *hs = hyper;
    if (n_iters) {
        exec += (s->n_nodes + 7) / 8;                    /* the static comparison's bitmap */
        exec += rows * sizeof(struct pl_change) * 5 / 4; /* one batch's changeset */
        /* the record of one batch read back from its superbatch file */
        exec += rows * (16 + 8 * (uint64_t)L) * 5 / 4 + 4096;
        uint64_t nb = (cfg->n_train + cfg->batch_size - 1) / cfg->batch_size;
        S = o.superbatch ? o.superbatch
            : on_disk    ? (nb < GX_LONG_SUPERBATCH ? nb : GX_LONG_SUPERBATCH)
                         : GX_DEFAULT_SUPERBATCH;
        if (S > n_iters)
            S = n_iters;
        /* and its sampler's pool over an on-disk topology (gx_inspector_new) */
        ifix = pl_sb_fixed_bytes(S, rows, L, s->n_nodes) +
               store_sampler_pool_bytes(store_plan_graph(cfg));
        want = est && S > UINT64_MAX / GX_BYTES_PER_ACCESS / est ? UINT64_MAX / GX_BYTES_PER_ACCESS
                                                                 : S * est;
        if (want < rows)
            want = rows; /* one batch always fits */
    }
    *S_out = S;
    if (on_disk && n_iters) {
        uint64_t d = disk_accesses(spill_dir);
        *acc_out = d < want ? d : want;
        if (*acc_out < rows)
            *acc_out = rows; /* one batch always goes in: its writes fail clearly if they must */
    }
    if (cfg->mem_bytes == 0) {
        if (!on_disk)
            *acc_out = want;
        *C_out = n_iters ? s->n_nodes : 0;
        *lanes_out = n_iters ? store_lanes_for(cfg, lane, 0) : 1;
    } else {
        /* Spills in RAM: an explicit S gets room for S batches of the estimated size; a
           derived one at most that, a quarter of what is left, at least one batch of the
           bound (superbatches end where it is full). In files: no RAM per access. */
        uint64_t one = n_iters && !on_disk ? rows * GX_BYTES_PER_ACCESS : 0;
        uint64_t all = on_disk ? 0 : want * GX_BYTES_PER_ACCESS;
        uint64_t need = exec + ifix + hyper.bytes + (o.superbatch ? all : one);
        if (cfg->mem_bytes < need)
            return OC_ERR(err, OC_ERR_BUDGET,
                          "store ginex: needs at least %s (a %u-byte bounce buffer and request "
                          "arrays for %" PRIu64 " rows of one batch%s%s%s) before caching any "
                          "row; the store's budget is %s",
                          oc_format_size(need, need_s, sizeof(need_s)), STORE_DISK_BOUNCE_BYTES,
                          rows, n_iters ? ", and the inspector with the accesses of " : "",
                          !n_iters                ? ""
                          : on_disk               ? "one batch (in files)"
                          : o.superbatch && S > 1 ? "a whole superbatch"
                                                  : "one batch",
                          hyper.sh.cap ? ", and two hyperbatch groups of that many rows, their "
                                         "reader and the sampled batches they hold"
                                       : "",
                          oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
        uint64_t left = cfg->mem_bytes - exec - ifix - hyper.bytes;
        /* more lanes while all of them take at most a quarter of the budget */
        *lanes_out = n_iters && !hyper.sh.cap ? store_lanes_for(cfg, lane, cfg->mem_bytes / 4) : 1;
        uint64_t least = o.superbatch ? all : one; /* left >= least: need covers it */
        while (*lanes_out > 1 &&
               ((*lanes_out - 1) * lane > left / 2 || (*lanes_out - 1) * lane > left - least))
            --*lanes_out;
        left -= (*lanes_out - 1) * lane;
        uint64_t share = left / 4;
        if (share < one)
            share = one;
        if (share > all || o.superbatch)
            share = all;
        if (!on_disk)
            *acc_out = share / GX_BYTES_PER_ACCESS;
        uint64_t c = n_iters ? (left - share) / (s->row_bytes + GX_BYTES_PER_SLOT) : 0;
        *C_out = c < s->n_nodes ? c : s->n_nodes;
    }
    if (*C_out >= PL_NONE)
        *C_out = PL_NONE - 1;
    return OC_OK;
}
