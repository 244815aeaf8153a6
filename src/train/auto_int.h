/*
 * auto_int.h — `--strategy auto`: the cost model that predicts each feature
 * strategy's epoch from measured figures, and the pick (train/auto.c;
 * docs/AUTO.md states the formulas).
 *
 *   oc_store_inspect (disk probe, batches, miss curves) ─┐
 *   timed training steps (compute), the store's budget ──┴─► auto_predict ─► pick
 *
 * Place in the data flow: train, while the store is being opened (train.c's
 * run_open_store), before the batch pipeline exists.
 * Thread-safety: pure functions and one-thread-at-a-time state.
 * Ownership: a struct train_auto owns nothing on the heap.
 */
#ifndef OFFCORE_TRAIN_AUTO_INT_H
#define OFFCORE_TRAIN_AUTO_INT_H

#include <stdint.h>

#include "offcore/store.h"
#include "offcore/train.h"

#define AUTO_INSPECT_BATCHES 16u /* batches oc_store_inspect samples */
#define AUTO_STEP_BATCHES    4u  /* steps timed for the compute rate (the first is a warm-up) */
/* The disk assumed when the probe did not measure one (a file under 64 MiB, no O_DIRECT) */
#define AUTO_ASSUMED_SEQ_BPS 2e9
#define AUTO_ASSUMED_IOPS    5e5
/*
 * Reads in flight, by construction of the readers (not tuned): the probe's
 * random reads (io/probe.c PROBE_RAND_DEPTH), one store reader's
 * (store_int.h STORE_DISK_DEPTH: static, helios, ginex, direct, one per
 * gather lane), gnndrive's (gnndrive.c: GD_DEPTH per extractor, each
 * extracting its own batch, GD_DEFAULT_EXTRACTORS of them) and the rows mmap's gather asks the kernel for ahead of
 * its copy, per lane (mmap.c MM_WINDOW).
 */
#define AUTO_PROBE_DEPTH    64.0
#define AUTO_READER_DEPTH   256.0
#define AUTO_GNNDRIVE_DEPTH 64.0
#define AUTO_GNNDRIVE_LANES 2.0
/* Bounce rings the reads land in: a store reader's (STORE_DISK_BOUNCE_BYTES), and
   gnndrive's cell per read (GD_CELL_MIN, or a row's span and a page) */
#define AUTO_READER_BOUNCE (2.0 * 1024 * 1024)
#define AUTO_GNNDRIVE_CELL 8192.0
#define AUTO_MMAP_WINDOW   64.0

/* The candidates, in the order they are predicted (ties go to the earlier). */
enum auto_cand {
    AUTO_MEMORY,
    AUTO_STATIC,
    AUTO_HELIOS,
    AUTO_GINEX,
    AUTO_DISKGNN,
    AUTO_GNNDRIVE,
    AUTO_DIRECT,
    AUTO_MMAP,
    AUTO_DISKGNN_REUSE, /* diskgnn --reuse-samples: approximate */
    AUTO_OUTRE,         /* outre (its default --staleness): approximate */
    AUTO_CAND_COUNT
};

/* What the model is fed; per-batch figures are means over the inspected batches. */
struct auto_inputs {
    uint64_t n_batches;        /* per epoch */
    double rows;               /* input rows per batch */
    double compute_s;          /* forward + backward per batch, seconds */
    double sample_s;           /* sampling per batch, seconds */
    uint64_t row_bytes;        /* stored row (f16 or f32) */
    uint64_t feature_bytes;    /* features.npy's rows */
    uint64_t f32_bytes;        /* every row as f32 (what `memory` holds) */
    uint64_t store_bytes;      /* the feature store's share of --mem-budget; 0 = no budget */
    uint64_t cache_rows;       /* static's cache (LRU's too) at the share (logged only) */
    uint64_t ginex_cache_rows; /* ginex's (logged only) */
    double static_miss;        /* miss ratios of the input rows: static and LRU for a cache */
    double lru_miss;           /* of cache_rows, Belady for ginex's cache_rows */
    double belady_miss;
    double half_miss;          /* static's for half of cache_rows (diskgnn: its plan takes half) */
    double miss_req_per_row;   /* read requests per missed row after merging (static's) */
    double miss_bytes_per_row; /* bytes read per missed row (pages, holes read along) */
    double lru_req_per_row;    /* the same for the LRU's misses (gnndrive's reads) */
    double lru_bytes_per_row;
    double all_req_per_row; /* the same for every input row (a cache missing everything) */
    double all_bytes_per_row;
    double row_req_per_row;    /* every row its own read (direct, merging off), after the
                                  block layer merges the adjacent ones: at most 1 */
    double row_bytes_per_row;  /* its page-aligned span */
    double page_miss;          /* mmap: page cache misses (pages) per input row */
    double page_req;           /* mmap: input rows with a missing page, per input row */
    uint64_t page_cache_pages; /* the page cache's pages mmap reads through (logged only) */
    double plan_s;             /* Belady's planning per batch (ginex's planner), seconds */
    uint32_t lanes;            /* gather lanes: batches read at once */
    double seq_bps, rand_iops; /* the disk under features.npy (IOPS at 64 in flight) */
    double rand_iops_deep;     /* its IOPS at 256 in flight (0: not measured) */
    int allow_approximate;
};

struct auto_prediction {
    const char *strategy; /* registry name */
    int reuse_samples;    /* run it with --reuse-samples */
    int approximate;      /* trains to other weights than `memory` */
    int excluded;         /* not a candidate: why says why */
    char why[160];
    double cpu_s, io_s, epoch_s; /* per epoch */
    double miss_ratio;           /* of input rows read from disk */
    double read_bytes;           /* per epoch, from features.npy or packed files */
};

/*
 * Predicts every candidate into out[AUTO_CAND_COUNT] and returns the index
 * of the fastest one not excluded (memory, and so always some candidate:
 * direct is never excluded). Pure.
 */
enum auto_cand auto_predict(const struct auto_inputs *in, struct auto_prediction *out);

/*
 * The candidates not excluded, fastest first (ties: the earlier candidate),
 * into order; returns how many.
 */
uint32_t auto_order(const struct auto_prediction *pred, enum auto_cand *order);

/* The pick of one run, kept for the log and the result. */
struct train_auto {
    int on;
    struct auto_inputs in;
    struct auto_prediction pred[AUTO_CAND_COUNT];
    enum auto_cand best; /* predicted fastest */
    enum auto_cand pick; /* the one opened (best, unless it did not fit the budget) */
    char reason[256];
    double measured_sum_s; /* training seconds of the epochs run so far */
    uint32_t measured_epochs;
};

/* Whether o asks for --strategy auto. */
int train_auto_wanted(const struct oc_train_opts *o);
/*
 * Checks the options auto is given: no strategy's own option (auto sets
 * them), no --reuse-samples (auto picks it under --allow-approximate), and
 * no --checkpoint-dir with --allow-approximate (a resumed run could pick
 * differently). OC_ERR_ARG naming the option.
 */
int train_auto_check(const struct oc_train_opts *o, struct oc_err *err);
/*
 * Inspects cfg's plan (oc_store_inspect at the share cfg->mem_bytes, and a
 * page cache of the memory available now less work_bytes, the batches in
 * flight still to be allocated), takes the measured compute seconds per
 * batch, predicts and logs each prediction (info level); a->best (and
 * a->pick until train_auto_opened) is the fastest. a->on is set.
 */
int train_auto_choose(const struct oc_store_config *cfg, uint64_t n_batches, double compute_s,
                      uint64_t work_bytes, int allow_approximate, struct train_auto *a,
                      struct oc_err *err);
/* Candidate c could not open within the budget (why: the store's message): logged, excluded. */
void train_auto_skip(struct train_auto *a, enum auto_cand c, const char *why);
/* Candidate c opened: it is the pick (the reason names the ones skipped before it). */
void train_auto_opened(struct train_auto *a, enum auto_cand c);
/* Appends the predictions and the pick as one JSON line to the log. */
int train_auto_log(struct oc_train_log *l, const struct train_auto *a, uint64_t *bytes,
                   struct oc_err *err);

#endif
