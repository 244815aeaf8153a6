/*
 * json.h — ooc_bench's `--json FILE`: the results table as one JSON object
 * that `offcore report` draws as the strategy comparison (each run's epoch
 * time against `memory` and the bound):
 *
 *   {"bench": "ooc_bench", "title", "metric", "unit": "s",
 *    "references": [{"name": "memory", "value"}, {"name": "bound", "value"}],
 *    "bound": {...the bound's inputs}, "disk": {...the probe},
 *    "rows": [{"label", "value" (epoch s, or null), "failed" (null, or why),
 *              "strategy", "budget_bytes", ... every column of the table}]}
 *
 * Place in the data flow: bench/ooc_bench only (after the runs, in the parent).
 * Thread-safety: single-threaded parent.
 * Ownership: json_new's object is freed by json_write.
 */
#ifndef OOC_BENCH_JSON_H
#define OOC_BENCH_JSON_H

#include <stdint.h>

struct cJSON;
struct oc_train_epoch_stats;

struct json_head {
    const char *title;
    uint32_t epochs;
    double memory_epoch_s; /* 0 when memory's run failed: no reference */
    double bound_s, io_bound_s, seq_bytes_per_s, rand4k_iops, rand8k_iops;
    uint64_t must_read_bytes, unique_bytes;
};

/* One row of the table; last is NULL (and failed set) for a run without an epoch. */
struct json_run {
    const char *label, *strategy, *failed, *weights, *weights_sha256;
    uint64_t budget_bytes, peak_rss_bytes;
    double epoch_s, epoch0_s, x_memory, x_bound, own_io_s, x_own;
    const struct oc_train_epoch_stats *last;
    double others_cpu_share; /* other processes' share of the CPUs during the run; < 0: unknown */
};

/* The document without rows; NULL when out of memory. */
struct cJSON *json_new(const struct json_head *h);
void json_add_run(struct cJSON *root, const struct json_run *r);
/* Writes root (pretty-printed) to path and frees it; 0, or -1 after a message on stderr. */
int json_write(struct cJSON *root, const char *path);

#endif
