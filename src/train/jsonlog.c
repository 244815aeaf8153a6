/*
 * jsonlog.c — the `--log FILE` JSON-lines log: one object per epoch and a
 * final object with "final": true, the metric, test_<metric>_at_best_val,
 * weights_sha256 and blas_core (the OpenBLAS kernels, on which the weights'
 * bits depend). Every epoch line carries the run's memory plan
 * (train_log_set_plan) and the final line the strategy, so `offcore report`
 * can chart and label a run from its log alone.
 * Each line is fsynced before the checkpoint that records the log's length,
 * so a resumed run truncates the log to exactly the epochs it keeps.
 *
 * Place in the data flow: train.
 * Thread-safety: called by the training thread only.
 * Ownership: the log owns its file; JSON objects are built with cJSON.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "offcore/io.h"
#include "train/train_int.h"

struct oc_train_log {
    struct oc_file *f;
    uint64_t offset;
    uint32_t strategy; /* index in the store registry: whose stats table to write */
    uint64_t budget_bytes, held_bytes, working_set_bytes, store_bytes; /* the memory plan */
};

void train_log_set_plan(struct oc_train_log *l, uint64_t budget, const struct oc_train_result *r)
{
    l->budget_bytes = budget;
    l->held_bytes = r->held_bytes;
    l->working_set_bytes = r->working_set_bytes;
    l->store_bytes = r->store_bytes;
}

int oc_train_log_open(const char *path, uint64_t keep_bytes, uint32_t strategy,
                      struct oc_train_log **out, struct oc_err *err)
{
    *out = NULL;
    struct oc_train_log *l = oc_calloc(1, sizeof(*l), "training log", err);
    if (!l)
        return err->status;
    unsigned flags = OC_FILE_WRITE | (keep_bytes ? 0u : OC_FILE_TRUNC);
    int rc = oc_file_open(path, flags, &l->f, err);
    if (rc == OC_OK && keep_bytes) {
        uint64_t size = 0;
        if ((rc = oc_file_size(l->f, &size, err)) == OC_OK && size < keep_bytes)
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: log is shorter (%llu bytes) than the checkpoint recorded (%llu)", path,
                        (unsigned long long)size, (unsigned long long)keep_bytes);
        if (rc == OC_OK)
            rc = oc_file_truncate(l->f, keep_bytes, err);
    }
    if (rc) {
        if (l->f)
            oc_file_close(l->f, NULL);
        oc_free(l);
        return rc;
    }
    l->offset = keep_bytes;
    l->strategy = strategy;
    *out = l;
    return OC_OK;
}

void oc_train_log_close(struct oc_train_log *l)
{
    if (!l)
        return;
    oc_file_close(l->f, NULL);
    oc_free(l);
}

/* Writes n bytes (a line, its newline included) at the end and fsyncs. */
static int log_append(struct oc_train_log *l, const char *text, size_t n, struct oc_err *err)
{
    int rc = oc_file_pwrite(l->f, text, n, l->offset, err);
    if (rc)
        return rc;
    l->offset += n;
    return oc_file_sync(l->f, err);
}

static int log_write(struct oc_train_log *l, cJSON *obj, struct oc_err *err)
{
    char *text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!text)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: cannot format a log line", oc_file_path(l->f));
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON's buffer ends with NUL: reuse it for the newline */
    int rc = log_append(l, text, n + 1, err);
    cJSON_free(text);
    return rc;
}

int oc_train_log_line(struct oc_train_log *l, const char *json, uint64_t *bytes, struct oc_err *err)
{
    size_t n = strlen(json);
    char *text = oc_alloc(n + 1, "training log line", err);
    if (!text)
        return err->status;
    memcpy(text, json, n);
    text[n] = '\n';
    int rc = log_append(l, text, n + 1, err);
    oc_free(text);
    if (!rc && bytes)
        *bytes = l->offset;
    return rc;
}

/* Adds `<prefix><metric key><suffix>`: value, or null when not evaluated. */
static void add_metric(cJSON *o, const char *prefix, enum oc_train_metric metric,
                       const char *suffix, int evaluated, double value)
{
    char key[64];
    snprintf(key, sizeof(key), "%s%s%s", prefix, oc_train_metric_key(metric), suffix);
    if (evaluated)
        cJSON_AddNumberToObject(o, key, value);
    else
        cJSON_AddNullToObject(o, key);
}

int train_log_epoch(struct oc_train_log *l, const struct oc_train_epoch_stats *st,
                    enum oc_train_metric metric, uint64_t *bytes, struct oc_err *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *stages = cJSON_CreateObject();
    if (!o || !stages) {
        cJSON_Delete(o);
        cJSON_Delete(stages);
        return OC_ERR(err, OC_ERR_NOMEM, "training log: out of memory");
    }
    cJSON_AddNumberToObject(o, "epoch", st->epoch);
    cJSON_AddNumberToObject(o, "loss", st->loss);
    cJSON_AddNumberToObject(o, "train_acc", st->train_acc);
    cJSON_AddBoolToObject(o, "evaluated", st->evaluated);
    if (st->evaluated) {
        cJSON_AddNumberToObject(o, "val_acc", st->val_acc);
        cJSON_AddNumberToObject(o, "test_acc", st->test_acc);
    } else { /* --eval none or an epoch --eval-every skips */
        cJSON_AddNullToObject(o, "val_acc");
        cJSON_AddNullToObject(o, "test_acc");
    }
    if (metric != OC_TRAIN_METRIC_ACC) {
        add_metric(o, "val_", metric, "", st->evaluated, st->val_metric);
        add_metric(o, "test_", metric, "", st->evaluated, st->test_metric);
    }
    cJSON_AddNumberToObject(o, "time_s", st->time_s);
    cJSON_AddNumberToObject(o, "n_batches", (double)st->n_batches);
    cJSON_AddNumberToObject(o, "n_sampled", (double)st->n_sampled);
    cJSON_AddNumberToObject(o, "pipeline_depth", st->depth);
    cJSON_AddNumberToObject(o, "pipeline_lanes", st->lanes);
    cJSON_AddNumberToObject(o, "pipeline_samplers", st->samplers);
    cJSON_AddNumberToObject(o, "sampled_edges", (double)st->sampled_edges);
    cJSON *rr = cJSON_AddObjectToObject(o, "redundancy");
    if (rr) { /* OUTRE's RR = input rows / seeds; and how often a distinct row was asked for */
        cJSON_AddNumberToObject(
            rr, "ratio", st->seed_rows ? (double)st->input_rows / (double)st->seed_rows : 0.0);
        cJSON_AddNumberToObject(rr, "batch_min", st->batch_rr_min);
        cJSON_AddNumberToObject(rr, "batch_max", st->batch_rr_max);
        cJSON_AddNumberToObject(rr, "input_rows", (double)st->input_rows);
        cJSON_AddNumberToObject(rr, "seed_rows", (double)st->seed_rows);
        cJSON_AddNumberToObject(rr, "distinct_rows", (double)st->distinct_rows);
        cJSON_AddNumberToObject(
            rr, "requested_per_distinct",
            st->distinct_rows ? (double)st->input_rows / (double)st->distinct_rows : 0.0);
    }
    cJSON_AddNumberToObject(stages, "sample_s", st->sample_s);
    cJSON_AddNumberToObject(stages, "gather_s", st->gather_s);
    cJSON_AddNumberToObject(stages, "wait_s", st->wait_s);
    cJSON_AddNumberToObject(stages, "forward_s", st->forward_s);
    cJSON_AddNumberToObject(stages, "backward_s", st->backward_s);
    cJSON_AddNumberToObject(stages, "optimizer_s", st->optimizer_s);
    cJSON_AddNumberToObject(stages, "eval_s", st->eval_s);
    cJSON_AddNumberToObject(stages, "gemm_s", st->gemm_s);
    cJSON_AddNumberToObject(o, "gemm_flops", (double)st->gemm_flops);
    if (st->micro_shards > 1 || st->ranks > 1) {
        cJSON *dp = cJSON_AddObjectToObject(o, "data_parallel");
        if (dp) {
            cJSON_AddNumberToObject(dp, "ranks", st->ranks);
            cJSON_AddNumberToObject(dp, "micro_shards", st->micro_shards);
            cJSON_AddNumberToObject(dp, "grad_sent_bytes", (double)st->grad_sent_bytes);
            cJSON_AddNumberToObject(dp, "grad_recv_bytes", (double)st->grad_recv_bytes);
            cJSON_AddNumberToObject(dp, "exchange_s", st->exchange_s);
            cJSON_AddNumberToObject(dp, "eval_units", (double)st->eval_units);
            cJSON_AddNumberToObject(dp, "eval_units_rank0", (double)st->eval_units_own);
            if (st->partitioned) {
                cJSON_AddNumberToObject(dp, "local_rows", (double)st->local_rows);
                cJSON_AddNumberToObject(dp, "remote_rows", (double)st->remote_rows);
                cJSON_AddNumberToObject(dp, "remote_bytes", (double)st->remote_bytes);
                cJSON_AddNumberToObject(dp, "remote_cache_rows", (double)st->remote_cache_rows);
                cJSON_AddNumberToObject(dp, "remote_cache_hits", (double)st->remote_cache_hits);
                cJSON_AddNumberToObject(dp, "remote_cache_hit_ratio",
                                        st->remote_rows ? (double)st->remote_cache_hits /
                                                              (double)st->remote_rows
                                                        : 0.0);
                cJSON_AddNumberToObject(dp, "remote_fill_bytes", (double)st->remote_fill_bytes);
                cJSON_AddNumberToObject(dp, "remote_overlapped", (double)st->remote_overlapped);
                cJSON_AddNumberToObject(dp, "remote_hidden", (double)st->remote_hidden);
                cJSON_AddNumberToObject(dp, "remote_overlap_s", st->remote_overlap_s);
                cJSON_AddNumberToObject(dp, "remote_wait_s", st->remote_wait_s);
            }
        }
    }
    cJSON_AddItemToObject(o, "stages", stages);
    cJSON *io = cJSON_AddObjectToObject(o, "features");
    if (io) {
        const struct oc_store_stats *ss = &st->store;
        cJSON_AddNumberToObject(io, "requested_bytes", (double)ss->requested_bytes);
        cJSON_AddNumberToObject(io, "requested_disk_bytes", (double)ss->requested_disk_bytes);
        cJSON_AddNumberToObject(io, "read_bytes", (double)ss->read_bytes);
        cJSON_AddNumberToObject(io, "n_reads", (double)ss->n_reads);
        cJSON_AddNumberToObject(io, "amplification", oc_store_stats_amplification(ss));
        cJSON *hits = cJSON_AddObjectToObject(io, "hit_ratio");
        for (int t = 0; hits && t < OC_STORE_TIER_COUNT; t++)
            cJSON_AddNumberToObject(hits, oc_store_tier_name((enum oc_store_tier)t),
                                    oc_store_stats_hit_ratio(ss, (enum oc_store_tier)t));
        cJSON_AddNumberToObject(io, "held_bytes", (double)ss->held_bytes);
        cJSON_AddNumberToObject(io, "given_back_bytes", (double)ss->given_back_bytes);
        /* the figures only this run's strategy has (its stats table) */
        for (uint32_t k = 0; k < oc_store_strategy_n_stats(l->strategy); k++) {
            const struct oc_store_stat *f = oc_store_strategy_stat(l->strategy, k);
            cJSON *parent = io;
            if (f->group && !(parent = cJSON_GetObjectItemCaseSensitive(io, f->group)))
                parent = cJSON_AddObjectToObject(io, f->group);
            if (parent)
                cJSON_AddNumberToObject(parent, f->key, oc_store_stat_value(f, ss));
        }
    }
    cJSON *topo = cJSON_AddObjectToObject(o, "topology");
    if (topo) {
        const struct oc_topo_disk_stats *ts = &st->topo;
        cJSON_AddNumberToObject(topo, "lookups", (double)ts->n_lookups);
        cJSON_AddNumberToObject(topo, "cache_hit_ratio",
                                ts->n_lookups ? (double)ts->n_hits / (double)ts->n_lookups : 1.0);
        cJSON_AddNumberToObject(topo, "requested_bytes", (double)ts->requested_bytes);
        cJSON_AddNumberToObject(topo, "read_bytes", (double)ts->read_bytes);
        cJSON_AddNumberToObject(topo, "n_reads", (double)ts->n_reads);
    }
    cJSON *mem = cJSON_AddObjectToObject(o, "memory");
    if (mem) {
        cJSON_AddNumberToObject(mem, "budget_bytes", (double)l->budget_bytes);
        cJSON_AddNumberToObject(mem, "held_bytes", (double)l->held_bytes);
        cJSON_AddNumberToObject(mem, "working_set_bytes", (double)l->working_set_bytes);
        cJSON_AddNumberToObject(mem, "store_bytes", (double)l->store_bytes);
    }
    cJSON_AddNumberToObject(o, "peak_mem_bytes", (double)st->peak_mem_bytes);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)st->peak_rss_bytes);
    int rc = log_write(l, o, err);
    *bytes = l->offset;
    return rc;
}

int train_log_final(struct oc_train_log *l, const struct oc_train_result *r,
                    const struct oc_train_opts *o, struct oc_err *err)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return OC_ERR(err, OC_ERR_NOMEM, "training log: out of memory");
    cJSON_AddTrueToObject(j, "final");
    cJSON_AddStringToObject(j, "model", oc_nn_model_kind_name(o->model));
    cJSON_AddStringToObject(j, "strategy", train_strategy_name(o));
    cJSON_AddNumberToObject(j, "epochs", o->epochs);
    cJSON_AddStringToObject(j, "blas_core", oc_nn_blas_core()); /* the weights depend on it */
    cJSON_AddStringToObject(j, "metric", oc_train_metric_name(o->metric));
    if (r->evaluated) /* else --eval none */
        cJSON_AddNumberToObject(j, "best_epoch", r->best_epoch);
    else
        cJSON_AddNullToObject(j, "best_epoch");
    add_metric(j, "best_val_", o->metric, "", r->evaluated, r->best_val_acc);
    add_metric(j, "test_", o->metric, "_at_best_val", r->evaluated, r->test_acc_at_best_val);
    cJSON_AddNumberToObject(j, "final_loss", r->final_loss);
    cJSON_AddStringToObject(j, "weights_sha256", r->weights_sha256);
    if (r->predicted_epoch_s > 0) { /* --strategy auto: its pick's prediction against the run */
        cJSON *a = cJSON_AddObjectToObject(j, "auto");
        if (a) {
            cJSON_AddStringToObject(a, "pick", r->strategy);
            cJSON_AddBoolToObject(a, "reuse_samples", r->reuse_samples);
            cJSON_AddNumberToObject(a, "predicted_epoch_s", r->predicted_epoch_s);
            cJSON_AddNumberToObject(a, "measured_epoch_s", r->measured_epoch_s);
        }
    }
    return log_write(l, j, err);
}
