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
 *   disk(req, bytes, q) = req / IOPS(q) + (bytes - 4096 req) / seq_bw: the
 *                         probe's reads are of one page, the rest streams
 *   IOPS(q)             = the probe's rate with q in flight: measured at 64
 *                         and 256, linear between; fewer than 64 wait on the
 *                         latency it saw (Little's law: IOPS x q / 64)
 *   merged(m, depth)    = disk of the B R m missed rows as the batch reader
 *                         merges them (requests and bytes per missed row from
 *                         the inspection, interpolated in m between static's,
 *                         the LRU's and every row's), q = lanes x min(depth,
 *                         a batch's requests, reads the bounce ring holds)
 *
 *   memory    0 (excluded when every row as f32 exceeds the store's share)
 *   static    merged(static_miss, 256)   hot set of the share less its readers
 *   helios    as static (its pre-sampled hot set misses no more)
 *   ginex     merged(belady_miss, 256)   Belady over the batches at ginex's
 *             own cache size; cpu adds its planning (timed in the inspection);
 *             excluded when its split leaves no cache rows
 *   diskgnn   (features + 2 B R half_miss row) / seq_bw (half_miss: static's
 *             misses with half its rows): one scan per epoch (its windows are streamed,
 *             a whole epoch each) packs the misses into chunks, written and read back
 *             sequentially
 *   gnndrive  merged(lru_miss, 64), 2 lanes: its buffer is an LRU; 2
 *             extractors of 64 reads each, merged by the same block reader
 *   direct    disk(B R dev, B R span, lanes x min(R, 256)): one read per row
 *             of its page-aligned span, merging off, a reader of 256 per lane;
 *             dev: device requests per row once the block layer merged the
 *             sorted reads that follow each other on disk
 *   mmap      disk(B R page_req, B R page_miss 4096, lanes x 64 x page_req):
 *             an LRU page cache of the share (mmap holds nothing else) warm
 *             as the others; the gather asks the kernel for a window of 64
 *             rows' missing pages ahead of its copy, per lane; a share as large
 *             as the file misses nothing: memory's epoch
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

#define AUTO_PAGE 4096.0

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

/*
 * Random reads per second with q in flight. The probe measured the disk at
 * AUTO_PROBE_DEPTH and at AUTO_READER_DEPTH; with fewer in flight than the
 * first, each read still waits the latency it saw (Little's law: q / (depth
 * / IOPS)); between the two, linear in q; past the second (or past the first
 * when the second was not measured), the disk is saturated.
 */
static double iops_at(const struct auto_inputs *in, double q)
{
    double lo = in->rand_iops, hi = in->rand_iops_deep > lo ? in->rand_iops_deep : lo;
    q = q < 1.0 ? 1.0 : q;
    if (q <= AUTO_PROBE_DEPTH)
        return lo * q / AUTO_PROBE_DEPTH;
    if (q >= AUTO_READER_DEPTH)
        return hi;
    return lo + (hi - lo) * (q - AUTO_PROBE_DEPTH) / (AUTO_READER_DEPTH - AUTO_PROBE_DEPTH);
}

/*
 * Disk seconds of req reads of bytes in all, q of them in flight: the
 * probe's IOPS are of one-page reads, so its rate holds a page's transfer;
 * the pages beyond each read's first are added at the sequential rate.
 */
static double disk_s(const struct auto_inputs *in, double req, double bytes, double q)
{
    double more = bytes - req * AUTO_PAGE;
    return req / iops_at(in, q) + (more > 0 ? more : 0) / in->seq_bps;
}

/*
 * Read requests and bytes per missed row when a share m of a batch's rows
 * misses: the denser the misses, the more of them the batch reader merges
 * into one read. Interpolated (linearly in m) between the miss sets the
 * inspection read (static's, the LRU's, every row); the sparsest one's
 * below it.
 */
static void req_curve(const struct auto_inputs *in, double m, double *req, double *bytes)
{
    struct {
        double m, req, bytes;
    } pt[3] = {{in->static_miss, in->miss_req_per_row, in->miss_bytes_per_row},
               {in->lru_miss, in->lru_req_per_row, in->lru_bytes_per_row},
               {1.0, in->all_req_per_row, in->all_bytes_per_row}};
    int n = 0;
    for (int k = 0; k < 3; k++) /* points without misses say nothing; sorted by m */
        if (pt[k].m > 0 && pt[k].req > 0) {
            int j = n++;
            for (; j > 0 && pt[j - 1].m > pt[k].m; j--)
                pt[j] = pt[j - 1];
            pt[j] = pt[k];
        }
    if (n == 0) { /* hand-made inputs with static's figures only */
        *req = in->miss_req_per_row;
        *bytes = in->miss_bytes_per_row;
        return;
    }
    int j = 0;
    while (j + 1 < n && pt[j + 1].m < m)
        j++;
    if (m <= pt[0].m || j + 1 == n) {
        *req = m <= pt[0].m ? pt[0].req : pt[n - 1].req;
        *bytes = m <= pt[0].m ? pt[0].bytes : pt[n - 1].bytes;
        return;
    }
    double f = (m - pt[j].m) / (pt[j + 1].m - pt[j].m);
    *req = pt[j].req + f * (pt[j + 1].req - pt[j].req);
    *bytes = pt[j].bytes + f * (pt[j + 1].bytes - pt[j].bytes);
}

/*
 * Disk seconds of a cache's misses, a share m of the epoch's rows, read
 * merged by one reader per lane (lanes of them) of depth reads in flight
 * into a bounce ring of bounce bytes: a batch's reads are in flight
 * together, at most depth of them and at most as many as the ring holds.
 */
static void predict_merged(const struct auto_inputs *in, double m, double depth, double bounce,
                           double lanes, struct auto_prediction *p)
{
    double rows = (double)in->n_batches * in->rows * m, req, bytes;
    req_curve(in, m, &req, &bytes);
    double per_batch = in->rows * m * req;
    double fit = req > 0 && bytes > 0 ? bounce / (bytes / req) : depth;
    double q = per_batch < depth ? per_batch : depth;
    q = lanes * (fit < q ? fit : q);
    p->miss_ratio = m;
    p->read_bytes = rows * bytes;
    p->io_s = disk_s(in, rows * req, rows * bytes, q);
}

/* gnndrive's bounce per extractor: a cell of a row's span and a page (8 KiB at least) a read. */
static double gnndrive_bounce(const struct auto_inputs *in)
{
    double span = ceil((double)in->row_bytes / AUTO_PAGE) * AUTO_PAGE + AUTO_PAGE;
    return AUTO_GNNDRIVE_DEPTH * (span > AUTO_GNNDRIVE_CELL ? span : AUTO_GNNDRIVE_CELL);
}

/* The lanes reading batches at once (the pipeline's depth), at least one. */
static double lanes_of(const struct auto_inputs *in)
{
    return in->lanes ? (double)in->lanes : 1.0;
}

/* Why ginex is not a candidate under a budget that cannot hold its executor. */
static void ginex_excluded(const struct auto_inputs *in, struct auto_prediction *p)
{
    p->excluded = 1;
    snprintf(p->why, sizeof(p->why),
             "does not open within the store's share of the budget (%" PRIu64
             " bytes): its executor, inspector and plan leave no cache rows",
             in->store_bytes);
}

enum auto_cand auto_predict(const struct auto_inputs *in, struct auto_prediction *out)
{
    double B = (double)in->n_batches, R = in->rows, rows = B * R;
    double row = (double)in->row_bytes;
    double cpu = B * (in->compute_s + in->sample_s);
    double lanes = lanes_of(in);
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
            predict_merged(in, in->static_miss, AUTO_READER_DEPTH, AUTO_READER_BOUNCE, lanes, p);
            break;
        case AUTO_GINEX:
            if (in->store_bytes && in->ginex_cache_rows == 0)
                ginex_excluded(in, p);
            predict_merged(in, in->belady_miss, AUTO_READER_DEPTH, AUTO_READER_BOUNCE, lanes, p);
            p->cpu_s = B * (in->compute_s + in->sample_s + in->plan_s); /* its planner too */
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
        case AUTO_GNNDRIVE: /* its extractors, each a batch's reads */
            predict_merged(in, in->lru_miss, AUTO_GNNDRIVE_DEPTH, gnndrive_bounce(in),
                           AUTO_GNNDRIVE_LANES, p);
            break;
        case AUTO_DIRECT: {
            double q = lanes * (R < AUTO_READER_DEPTH ? R : AUTO_READER_DEPTH);
            p->miss_ratio = 1.0;
            p->read_bytes = rows * in->row_bytes_per_row;
            p->io_s = disk_s(in, rows * in->row_req_per_row, p->read_bytes, q);
            break;
        }
        case AUTO_MMAP: { /* the page cache's misses, asked for a window of rows ahead */
            double q = lanes * AUTO_MMAP_WINDOW * in->page_req;
            p->miss_ratio = in->page_req;
            p->read_bytes = rows * in->page_miss * AUTO_PAGE;
            p->io_s = disk_s(in, rows * in->page_req, p->read_bytes, q);
            break;
        }
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
    double lru = ins->lru_misses ? (double)ins->lru_misses : 1.0;
    in->lru_req_per_row = ins->lru_misses ? (double)ins->lru_requests / lru : 0;
    in->lru_bytes_per_row = ins->lru_misses ? (double)ins->lru_read_bytes / lru : 0;
    in->all_req_per_row = (double)ins->all_requests / all;
    in->all_bytes_per_row = (double)ins->all_read_bytes / all;
    in->row_req_per_row = (double)ins->row_device_requests / all;
    in->row_bytes_per_row = (double)ins->row_read_bytes / all;
    in->page_miss = (double)ins->page_misses / all;
    in->page_req = (double)ins->page_miss_rows / all;
    in->page_cache_pages = ins->page_cache_pages;
    in->plan_s = ins->plan_s / nb;
    in->seq_bps = ins->disk.seq_bps;
    in->rand_iops = ins->disk.rand_iops;
    in->rand_iops_deep = ins->disk.rand_iops_deep;
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

/*
 * The page cache mmap reads through: outside --mem-budget, it is what the
 * machine or the process's cgroup leaves (oc_mem_available: MemAvailable,
 * lowered to the cgroup's room) once the batches in flight (work_bytes, not
 * yet allocated) are; where that cannot be read, the store's share (all of
 * the file without a budget).
 */
static uint64_t auto_page_cache_bytes(const struct oc_store_config *cfg, uint64_t work_bytes)
{
    uint64_t avail = 0;
    struct oc_err ignored;
    if (oc_mem_available(&avail, NULL, &ignored) == OC_OK)
        return avail > work_bytes ? avail - work_bytes : 0;
    return cfg->mem_bytes ? cfg->mem_bytes : UINT64_MAX;
}

int train_auto_choose(const struct oc_store_config *cfg, uint64_t n_batches, double compute_s,
                      uint64_t work_bytes, int allow_approximate, struct train_auto *a,
                      struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    uint64_t cache_rows = auto_cache_rows(cfg);
    struct oc_store_inspection ins;
    double t0 = oc_now_s();
    int rc = oc_store_inspect(cfg, AUTO_INSPECT_BATCHES, cache_rows,
                              auto_page_cache_bytes(cfg, work_bytes), &ins, err);
    if (rc) {
        oc_err_prefix(err, "--strategy auto");
        return rc;
    }
    memset(a, 0, sizeof(*a));
    a->on = 1;
    auto_inputs_from(&ins, n_batches, compute_s, cfg->mem_bytes, allow_approximate, m->feat_dim,
                     &a->in);
    a->in.lanes = cfg->lanes < 1 ? 1 : cfg->lanes;
    const char *disk = "measured";
    if (!ins.disk.measured) { /* too small a file, or no O_DIRECT: the page cache answers */
        a->in.seq_bps = AUTO_ASSUMED_SEQ_BPS;
        a->in.rand_iops = a->in.rand_iops_deep = AUTO_ASSUMED_IOPS;
        disk = "not measured (file under 64 MiB or no O_DIRECT): assumed";
    }
    a->pick = a->best = auto_predict(&a->in, a->pred);
    oc_log(OC_LOG_INFO,
           "auto: inspected %" PRIu64 " batches in %.2fs: %.0f input rows each, row %" PRIu64
           " bytes; a cache of %" PRIu64 " rows misses static %.3f lru %.3f, ginex's of %" PRIu64
           " rows belady %.3f; a page cache of %" PRIu64 " pages misses %.3f pages per row; "
           "disk %s %.0f MB/s, %.0f IOPS (%.0f at 256 in flight); compute %.4fs, sampling %.4fs "
           "and Belady's planning "
           "%.4fs per batch, %" PRIu64 " batches, %" PRIu32 " lanes",
           ins.n_batches, oc_now_s() - t0, a->in.rows, ins.row_bytes, ins.cache_rows,
           a->in.static_miss, a->in.lru_miss, ins.ginex_cache_rows, a->in.belady_miss,
           ins.page_cache_pages, a->in.page_miss, disk, a->in.seq_bps / 1e6, a->in.rand_iops,
           a->in.rand_iops_deep, compute_s, a->in.sample_s, a->in.plan_s, n_batches, a->in.lanes);
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
    cJSON_AddNumberToObject(in, "page_cache_pages", (double)a->in.page_cache_pages);
    cJSON_AddNumberToObject(in, "page_miss_per_row", a->in.page_miss);
    cJSON_AddNumberToObject(in, "plan_s_per_batch", a->in.plan_s);
    cJSON_AddNumberToObject(in, "lanes", (double)a->in.lanes);
    cJSON_AddNumberToObject(in, "seq_bps", a->in.seq_bps);
    cJSON_AddNumberToObject(in, "rand_iops", a->in.rand_iops);
    cJSON_AddNumberToObject(in, "rand_iops_deep", a->in.rand_iops_deep);
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
