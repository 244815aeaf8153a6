/*
 * auto.c — `--strategy auto`: predicts each feature strategy's epoch from
 * the disk probe, an inspection of the plan's first batches and the
 * measured compute rate, picks the fastest (bit-identical ones only, unless
 * --allow-approximate), and logs every prediction and the reason.
 *
 * The model (docs/AUTO.md), per epoch of B batches of R input rows:
 *
 *   cpu   = B x (compute + sample)   the sampler and the trainer share the pool
 *   io    = disk seconds of the strategy's reads (below)
 *   epoch = max(cpu, io)             the batch pipeline overlaps disk and CPU
 *
 *   read(m rows, merged)  = m x (req_per_row / IOPS + bytes_per_row / seq_bw)
 *   read(m rows, per row) = m x pages_per_row x (1 / IOPS + 4096 / seq_bw)
 *
 *   memory    0 (excluded when every row as f32 exceeds the store's share)
 *   static    read(B R static_miss, merged)      hot set of the share less
 *                                                its readers
 *   helios    as static (its pre-sampled hot set misses no more)
 *   ginex     read(B R belady_miss, merged)      Belady over the batches at
 *                                                ginex's own cache size
 *   diskgnn   (features + 2 B R half_miss row) / seq_bw (half_miss: static's
 *             misses with half its rows): one scan per epoch (its windows are streamed,
 *             a whole epoch each) packs the misses into chunks, written and read back
 *             sequentially
 *   gnndrive  read(B R lru_miss, per row)
 *   direct    read(B R, per row)
 *   mmap      B R lru_miss pages_per_row x 64 / (lanes x IOPS): faults one
 *             page at a time per thread (the probe's IOPS is at 64 in flight)
 *   diskgnn --reuse-samples (approximate): packed chunks read once per
 *             epoch, B R half_miss row / seq_bw; cpu = B x compute
 *   outre (approximate): as static; its pruning is not predicted
 *
 * Place in the data flow: train, inside run_open_store (train.c).
 * Thread-safety: one run per call.
 * Ownership: nothing kept on the heap; the JSON line is built and freed here.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/auto_int.h"
#include "train/train_int.h"

#define AUTO_MMAP_LANES 2.0 /* threads faulting at once (the pipeline's gather lanes) */
#define AUTO_PAGE       4096.0

static const struct {
    const char *name;
    int reuse, approximate;
} cands[AUTO_CAND_COUNT] = {
    [AUTO_MEMORY] = {"memory", 0, 0},         [AUTO_STATIC] = {"static", 0, 0},
    [AUTO_HELIOS] = {"helios", 0, 0},         [AUTO_GINEX] = {"ginex", 0, 0},
    [AUTO_DISKGNN] = {"diskgnn", 0, 0},       [AUTO_GNNDRIVE] = {"gnndrive", 0, 0},
    [AUTO_DIRECT] = {"direct", 0, 0},         [AUTO_MMAP] = {"mmap", 0, 0},
    [AUTO_DISKGNN_REUSE] = {"diskgnn", 1, 1}, [AUTO_OUTRE] = {"outre", 0, 1},
};

/* Disk seconds of m rows read with merged requests. */
static double read_merged(const struct auto_inputs *in, double m)
{
    return m * (in->miss_req_per_row / in->rand_iops + in->miss_bytes_per_row / in->seq_bps);
}

/* Disk seconds of m rows read one request per row. */
static double read_per_row(const struct auto_inputs *in, double m, double pages)
{
    return m * pages * (1.0 / in->rand_iops + AUTO_PAGE / in->seq_bps);
}

enum auto_cand auto_predict(const struct auto_inputs *in, struct auto_prediction *out)
{
    double B = (double)in->n_batches, R = in->rows, rows = B * R;
    double row = (double)in->row_bytes;
    double pages = 1.0 + (row - 1.0) / AUTO_PAGE; /* pages a row touches, on average */
    double cpu = B * (in->compute_s + in->sample_s);
    double packed =
        rows * in->half_miss * row; /* diskgnn's misses: its cache is half the share's */
    for (int c = 0; c < AUTO_CAND_COUNT; c++) {
        struct auto_prediction *p = &out[c];
        memset(p, 0, sizeof(*p));
        p->strategy = cands[c].name;
        p->reuse_samples = cands[c].reuse;
        p->approximate = cands[c].approximate;
        p->cpu_s = cpu;
        switch ((enum auto_cand)c) {
        case AUTO_MEMORY:
            if (in->store_bytes && in->f32_bytes > in->store_bytes) {
                p->excluded = 1;
                snprintf(p->why, sizeof(p->why),
                         "every row as f32 (%" PRIu64 " bytes) exceeds the store's share of the "
                         "budget (%" PRIu64 " bytes)",
                         in->f32_bytes, in->store_bytes);
            }
            break;
        case AUTO_STATIC:
        case AUTO_HELIOS:
        case AUTO_OUTRE:
            p->miss_ratio = in->static_miss;
            p->io_s = read_merged(in, rows * in->static_miss);
            p->read_bytes = rows * in->static_miss * in->miss_bytes_per_row;
            break;
        case AUTO_GINEX:
            p->miss_ratio = in->belady_miss;
            p->io_s = read_merged(in, rows * in->belady_miss);
            p->read_bytes = rows * in->belady_miss * in->miss_bytes_per_row;
            break;
        case AUTO_DISKGNN: {
            /* one window per epoch: without --disk-budget its windows are streamed
               (diskgnn_stream.c), whatever the budget */
            p->miss_ratio = in->half_miss;
            p->read_bytes = (double)in->feature_bytes + 2.0 * packed;
            p->io_s = p->read_bytes / in->seq_bps;
            break;
        }
        case AUTO_DISKGNN_REUSE:
            p->miss_ratio = in->half_miss;
            p->read_bytes = packed;
            p->io_s = packed / in->seq_bps;
            p->cpu_s = B * in->compute_s; /* batches come sampled, from the chunks */
            break;
        case AUTO_GNNDRIVE:
            p->miss_ratio = in->lru_miss;
            p->io_s = read_per_row(in, rows * in->lru_miss, pages);
            p->read_bytes = rows * in->lru_miss * pages * AUTO_PAGE;
            break;
        case AUTO_DIRECT:
            p->miss_ratio = 1.0;
            p->io_s = read_per_row(in, rows, pages);
            p->read_bytes = rows * pages * AUTO_PAGE;
            break;
        case AUTO_MMAP:
            p->miss_ratio = in->lru_miss;
            p->read_bytes = rows * in->lru_miss * pages * AUTO_PAGE;
            p->io_s = rows * in->lru_miss * pages * 64.0 / (AUTO_MMAP_LANES * in->rand_iops);
            break;
        case AUTO_CAND_COUNT:
            break;
        }
        if (p->approximate && !in->allow_approximate) {
            p->excluded = 1;
            snprintf(p->why, sizeof(p->why),
                     "changes training (not bit-identical to memory); --allow-approximate "
                     "admits it");
        }
        p->epoch_s = p->cpu_s > p->io_s ? p->cpu_s : p->io_s;
    }
    enum auto_cand best = AUTO_DIRECT;
    for (int c = 0; c < AUTO_CAND_COUNT; c++)
        if (!out[c].excluded && out[c].epoch_s < out[best].epoch_s)
            best = (enum auto_cand)c;
    /* ties go to the earlier candidate (the simpler strategy) */
    for (int c = 0; c < (int)best; c++)
        if (!out[c].excluded && out[c].epoch_s <= out[best].epoch_s) {
            best = (enum auto_cand)c;
            break;
        }
    return best;
}

uint32_t auto_order(const struct auto_prediction *pred, enum auto_cand *order)
{
    uint32_t n = 0;
    for (int c = 0; c < AUTO_CAND_COUNT; c++) {
        if (pred[c].excluded)
            continue;
        uint32_t k = n++; /* insertion: stable, so ties keep the earlier candidate first */
        while (k > 0 && pred[order[k - 1]].epoch_s > pred[c].epoch_s) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = (enum auto_cand)c;
    }
    return n;
}

int train_auto_wanted(const struct oc_train_opts *o)
{
    return o->strategy && strcmp(o->strategy, "auto") == 0;
}

int train_auto_check(const struct oc_train_opts *o, struct oc_err *err)
{
    if (!train_auto_wanted(o)) {
        if (o->allow_approximate)
            return OC_ERR(err, OC_ERR_ARG, "--allow-approximate needs --strategy auto");
        return OC_OK;
    }
    if (o->n_store_opts)
        return OC_ERR(err, OC_ERR_ARG,
                      "--%s: --strategy auto chooses every strategy option itself; name the "
                      "strategy to set its options",
                      o->store_opts[0].name);
    if (o->reuse_samples)
        return OC_ERR(err, OC_ERR_ARG,
                      "--reuse-samples: --strategy auto picks diskgnn with it itself under "
                      "--allow-approximate");
    if (o->allow_approximate && o->checkpoint_dir)
        return OC_ERR(err, OC_ERR_ARG,
                      "--allow-approximate with --checkpoint-dir: a resumed run could pick "
                      "another approximate strategy; name the strategy to checkpoint it");
    return OC_OK;
}

/* The model's inputs from an inspection, the compute rate and the plan. */
static void auto_inputs_from(const struct oc_store_inspection *ins, uint64_t n_batches,
                             double compute_s, uint64_t store_bytes, int allow_approximate,
                             uint64_t feat_dim, struct auto_inputs *in)
{
    double nb = ins->n_batches ? (double)ins->n_batches : 1.0;
    double all = ins->input_rows ? (double)ins->input_rows : 1.0;
    memset(in, 0, sizeof(*in));
    in->n_batches = n_batches;
    in->rows = (double)ins->input_rows / nb;
    in->compute_s = compute_s;
    in->sample_s = ins->sample_s / nb;
    in->row_bytes = ins->row_bytes;
    in->feature_bytes = ins->feature_bytes;
    in->f32_bytes = ins->n_nodes * feat_dim * sizeof(float);
    in->store_bytes = store_bytes;
    in->cache_rows = ins->cache_rows;
    in->ginex_cache_rows = ins->ginex_cache_rows;
    in->static_miss = (double)ins->static_misses / all;
    in->lru_miss = (double)ins->lru_misses / all;
    in->belady_miss = (double)ins->belady_misses / all;
    in->half_miss = (double)ins->half_misses / all;
    double miss = ins->static_misses ? (double)ins->static_misses : 1.0;
    in->miss_req_per_row =
        ins->static_misses ? (double)ins->miss_requests / miss : (double)ins->all_requests / all;
    in->miss_bytes_per_row = ins->static_misses ? (double)ins->miss_read_bytes / miss
                                                : (double)ins->all_read_bytes / all;
    in->seq_bps = ins->disk.seq_bps;
    in->rand_iops = ins->disk.rand_iops;
    in->allow_approximate = allow_approximate;
}

/*
 * The rows a cache built like static's holds at the store's share: the
 * share less its readers (one per lane, a second only while they take at
 * most a quarter of the share), at stored row bytes + OC_STORE_CACHE_ROW_EXTRA
 * each; every row without a budget.
 */
static uint64_t auto_cache_rows(const struct oc_store_config *cfg)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    if (!cfg->mem_bytes)
        return m->n_nodes;
    uint64_t reader = oc_store_reader_bytes(cfg);
    uint32_t lanes = cfg->lanes < 1 ? 1 : cfg->lanes > 4 ? 4 : cfg->lanes;
    while (lanes > 1 && reader > cfg->mem_bytes / 4 / lanes)
        lanes--;
    uint64_t fixed = lanes * reader;
    uint64_t row = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype) + OC_STORE_CACHE_ROW_EXTRA;
    return cfg->mem_bytes > fixed ? (cfg->mem_bytes - fixed) / row : 0;
}

int train_auto_choose(const struct oc_store_config *cfg, uint64_t n_batches, double compute_s,
                      int allow_approximate, struct train_auto *a, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    uint64_t cache_rows = auto_cache_rows(cfg);
    struct oc_store_inspection ins;
    double t0 = oc_now_s();
    int rc = oc_store_inspect(cfg, AUTO_INSPECT_BATCHES, cache_rows, &ins, err);
    if (rc) {
        oc_err_prefix(err, "--strategy auto");
        return rc;
    }
    memset(a, 0, sizeof(*a));
    a->on = 1;
    auto_inputs_from(&ins, n_batches, compute_s, cfg->mem_bytes, allow_approximate, m->feat_dim,
                     &a->in);
    const char *disk = "measured";
    if (!ins.disk.measured) { /* too small a file, or no O_DIRECT: the page cache answers */
        a->in.seq_bps = AUTO_ASSUMED_SEQ_BPS;
        a->in.rand_iops = AUTO_ASSUMED_IOPS;
        disk = "not measured (file under 64 MiB or no O_DIRECT): assumed";
    }
    a->pick = a->best = auto_predict(&a->in, a->pred);
    oc_log(OC_LOG_INFO,
           "auto: inspected %" PRIu64 " batches in %.2fs: %.0f input rows each, row %" PRIu64
           " bytes; a cache of %" PRIu64 " rows misses static %.3f lru %.3f, ginex's of %" PRIu64
           " rows belady %.3f; disk %s "
           "%.0f MB/s, %.0f IOPS; compute %.4fs and sampling %.4fs per batch, %" PRIu64 " batches",
           ins.n_batches, oc_now_s() - t0, a->in.rows, ins.row_bytes, ins.cache_rows,
           a->in.static_miss, a->in.lru_miss, ins.ginex_cache_rows, a->in.belady_miss, disk,
           a->in.seq_bps / 1e6, a->in.rand_iops, compute_s, a->in.sample_s, n_batches);
    for (int c = 0; c < AUTO_CAND_COUNT; c++) {
        const struct auto_prediction *p = &a->pred[c];
        if (p->excluded)
            oc_log(OC_LOG_INFO, "auto: %s%s excluded: %s", p->strategy,
                   p->reuse_samples ? " --reuse-samples" : "", p->why);
        else
            oc_log(OC_LOG_INFO,
                   "auto: %s%s predicted epoch %.2fs (cpu %.2fs, disk %.2fs, miss %.3f, "
                   "read %.1f MB)",
                   p->strategy, p->reuse_samples ? " --reuse-samples" : "", p->epoch_s, p->cpu_s,
                   p->io_s, p->miss_ratio, p->read_bytes / 1e6);
    }
    return OC_OK;
}

void train_auto_skip(struct train_auto *a, enum auto_cand c, const char *why)
{
    struct auto_prediction *p = &a->pred[c];
    p->excluded = 1;
    snprintf(p->why, sizeof(p->why), "does not open within the budget: %s", why);
    oc_log(OC_LOG_INFO, "auto: %s%s %s; trying the next", p->strategy,
           p->reuse_samples ? " --reuse-samples" : "", p->why);
}

void train_auto_opened(struct train_auto *a, enum auto_cand c)
{
    const struct auto_prediction *b = &a->pred[c];
    a->pick = c;
    snprintf(
        a->reason, sizeof(a->reason), "%s%s: the fastest predicted epoch (%.2fs, %s-bound) %s%s",
        b->strategy, b->reuse_samples ? " --reuse-samples" : "", b->epoch_s,
        b->io_s > b->cpu_s ? "disk" : "cpu",
        a->in.allow_approximate ? "among all strategies" : "among the bit-identical strategies",
        c != a->best ? " that open within the budget" : "");
    oc_log(OC_LOG_INFO, "auto: picked %s", a->reason);
}

int train_auto_log(struct oc_train_log *l, const struct train_auto *a, uint64_t *bytes,
                   struct oc_err *err)
{
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *in = cJSON_CreateObject();
    if (!j || !arr || !in) {
        cJSON_Delete(j);
        cJSON_Delete(arr);
        cJSON_Delete(in);
        return OC_ERR(err, OC_ERR_NOMEM, "training log: out of memory");
    }
    cJSON_AddTrueToObject(j, "auto");
    cJSON_AddStringToObject(j, "pick", a->pred[a->pick].strategy);
    cJSON_AddBoolToObject(j, "reuse_samples", a->pred[a->pick].reuse_samples);
    cJSON_AddNumberToObject(j, "predicted_epoch_s", a->pred[a->pick].epoch_s);
    cJSON_AddStringToObject(j, "reason", a->reason);
    cJSON_AddNumberToObject(in, "batches", (double)a->in.n_batches);
    cJSON_AddNumberToObject(in, "rows_per_batch", a->in.rows);
    cJSON_AddNumberToObject(in, "compute_s_per_batch", a->in.compute_s);
    cJSON_AddNumberToObject(in, "sample_s_per_batch", a->in.sample_s);
    cJSON_AddNumberToObject(in, "row_bytes", (double)a->in.row_bytes);
    cJSON_AddNumberToObject(in, "store_bytes", (double)a->in.store_bytes);
    cJSON_AddNumberToObject(in, "cache_rows", (double)a->in.cache_rows);
    cJSON_AddNumberToObject(in, "ginex_cache_rows", (double)a->in.ginex_cache_rows);
    cJSON_AddNumberToObject(in, "static_miss", a->in.static_miss);
    cJSON_AddNumberToObject(in, "lru_miss", a->in.lru_miss);
    cJSON_AddNumberToObject(in, "belady_miss", a->in.belady_miss);
    cJSON_AddNumberToObject(in, "half_miss", a->in.half_miss);
    cJSON_AddNumberToObject(in, "seq_bps", a->in.seq_bps);
    cJSON_AddNumberToObject(in, "rand_iops", a->in.rand_iops);
    cJSON_AddItemToObject(j, "inputs", in);
    for (int c = 0; c < AUTO_CAND_COUNT; c++) {
        const struct auto_prediction *p = &a->pred[c];
        cJSON *e = cJSON_CreateObject();
        if (!e)
            continue;
        cJSON_AddStringToObject(e, "strategy", p->strategy);
        cJSON_AddBoolToObject(e, "reuse_samples", p->reuse_samples);
        cJSON_AddBoolToObject(e, "approximate", p->approximate);
        if (p->excluded) {
            cJSON_AddStringToObject(e, "excluded", p->why);
        } else {
            cJSON_AddNumberToObject(e, "epoch_s", p->epoch_s);
            cJSON_AddNumberToObject(e, "cpu_s", p->cpu_s);
            cJSON_AddNumberToObject(e, "io_s", p->io_s);
            cJSON_AddNumberToObject(e, "miss_ratio", p->miss_ratio);
            cJSON_AddNumberToObject(e, "read_bytes", p->read_bytes);
        }
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_AddItemToObject(j, "predictions", arr);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s)
        return OC_ERR(err, OC_ERR_NOMEM, "training log: out of memory");
    int rc = oc_train_log_line(l, s, bytes, err);
    cJSON_free(s);
    return rc;
}
