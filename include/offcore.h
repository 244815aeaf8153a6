/*
 * offcore.h — the public, versioned C API of liboffcore.so: open a dataset,
 * import or generate one, open a loader (sampler options, a feature strategy
 * by name, a memory budget) and iterate an epoch's mini-batches (blocks as
 * CSR arrays, the input nodes' global ids, their feature rows), with stats
 * and errors as status codes plus a message. This is the only header a user
 * of the shared library needs; the module headers under include/offcore/
 * are offcore's internal interfaces (used by the CLI and the tests, linked
 * from the static library) and carry no stability promise.
 *
 *   offcore_dataset_open ─► offcore_loader_open ─► offcore_loader_epoch(e)
 *        ─► offcore_loader_next ─► (train on the batch) ─► offcore_loader_release ─┐
 *                 ▲                                                                 │
 *                 └──────── until OFFCORE_DONE, then the next epoch ◄───────────────┘
 *
 * Versioning: OFFCORE_API_VERSION grows when a function or a struct field is
 * added; existing functions and fields keep their meaning. Every option and
 * out struct starts with `struct_size`, which the caller sets to the
 * sizeof() it was compiled with (the *_init functions do): the library
 * refuses a size it does not know (OFFCORE_ERR_ARG) instead of reading past
 * the caller's struct.
 *
 * Errors: every function that can fail returns OFFCORE_OK (0) or a negative
 * status and, when `err` is not NULL, fills it with the status and a message
 * naming the file, option or value at fault. offcore_loader_next returns
 * OFFCORE_DONE (1) after the epoch's last batch.
 *
 * Thread-safety: a dataset may be read from any thread; a loader is driven
 * by one thread at a time (its stages run on threads of their own). The
 * memory budget is process-wide: the last loader opened sets it.
 * Ownership: strings and option structs are borrowed for the call. A batch's
 * arrays belong to the loader and stay valid until offcore_loader_release
 * (or offcore_loader_close); at most offcore_loader_max_held batches may be
 * held when offcore_loader_next is called.
 */
#ifndef OFFCORE_H
#define OFFCORE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OFFCORE_VERSION     "0.1.0" /* the library's version; CMake reads it from here */
#define OFFCORE_API_VERSION 2
#define OFFCORE_MAX_LAYERS  8
#define OFFCORE_FANOUT_ALL  (-1)

/* liboffcore.so exports offcore_* only (src/api/offcore.map); the attribute keeps them
   exported in a build with -fvisibility=hidden too */
#if defined(__GNUC__)
#    define OFFCORE_EXPORT __attribute__((visibility("default")))
#else
#    define OFFCORE_EXPORT
#endif

enum offcore_status {
    OFFCORE_DONE = 1, /* offcore_loader_next: the epoch has no further batch */
    OFFCORE_OK = 0,
    OFFCORE_ERR_NOMEM = -1,       /* allocation failed */
    OFFCORE_ERR_BUDGET = -2,      /* over the memory budget */
    OFFCORE_ERR_IO = -3,          /* read, write, open or fsync failed */
    OFFCORE_ERR_NOSPC = -4,       /* no space left on device */
    OFFCORE_ERR_FORMAT = -5,      /* a file is corrupt, truncated or malformed */
    OFFCORE_ERR_ARG = -6,         /* invalid argument or option */
    OFFCORE_ERR_NOTFOUND = -7,    /* a file does not exist */
    OFFCORE_ERR_EXISTS = -8,      /* an output already exists */
    OFFCORE_ERR_UNSUPPORTED = -9, /* valid but not supported here */
    OFFCORE_ERR_CANCELLED = -10,  /* a background stage failed first */
    OFFCORE_ERR_INTERNAL = -11,
    OFFCORE_ERR_NUMERIC = -12, /* NaN or Inf */
};

struct offcore_error {
    int32_t status;    /* an enum offcore_status value */
    int32_t sys_errno; /* errno of the failed system call, or 0 */
    char message[1024];
};

/* The library's version ("MAJOR.MINOR.PATCH") and API version (OFFCORE_API_VERSION). */
OFFCORE_EXPORT const char *offcore_version(void);
OFFCORE_EXPORT uint32_t offcore_api_version(void);
/* "OFFCORE_ERR_ARG", ... for a status; "unknown status" otherwise. */
OFFCORE_EXPORT const char *offcore_status_name(int status);

/* ---- datasets ------------------------------------------------------------ */

struct offcore_dataset;

struct offcore_dataset_info {
    uint32_t struct_size;
    uint32_t feat_dim, n_classes;
    uint32_t feat_bytes; /* bytes per stored feature value: 4 (f32) or 2 (f16) */
    uint64_t n_nodes, n_edges;
    uint64_t n_train, n_val, n_test;
    char name[256];
};

/* Opens and validates the dataset directory dir (docs/FORMAT.md). */
OFFCORE_EXPORT int offcore_dataset_open(const char *dir, struct offcore_dataset **out,
                                        struct offcore_error *err);
OFFCORE_EXPORT void offcore_dataset_close(struct offcore_dataset *ds);
OFFCORE_EXPORT void offcore_dataset_info_init(struct offcore_dataset_info *info);
OFFCORE_EXPORT int offcore_dataset_info(const struct offcore_dataset *ds,
                                        struct offcore_dataset_info *info,
                                        struct offcore_error *err);
/* The dataset's directory, as opened (owned by ds). */
OFFCORE_EXPORT const char *offcore_dataset_dir(const struct offcore_dataset *ds);
/* Copies the n_nodes labels (-1 = unlabeled) into out, which holds n entries (n >= n_nodes). */
OFFCORE_EXPORT int offcore_dataset_labels(const struct offcore_dataset *ds, int32_t *out,
                                          uint64_t n, struct offcore_error *err);
enum offcore_split { OFFCORE_SPLIT_TRAIN, OFFCORE_SPLIT_VAL, OFFCORE_SPLIT_TEST };
/* Copies a split's node ids into out (n >= the split's size, from offcore_dataset_info). */
OFFCORE_EXPORT int offcore_dataset_split(const struct offcore_dataset *ds, int32_t split,
                                         uint64_t *out, uint64_t n, struct offcore_error *err);

/* ---- import and generate ----------------------------------------------- */

struct offcore_import_opts {
    uint32_t struct_size;
    const char *format;    /* "text" (../shared/datasets layout), "ogb", "graphbolt", "npy" */
    int32_t directed;      /* keep edge direction (0: symmetrize) */
    int32_t row_normalize; /* divide each feature row by its sum */
    int32_t feat_f16;      /* store features as f16 (0: f32) */
    const char *name;      /* dataset name (NULL: from the source) */
    uint64_t mem_bytes;    /* RAM for sorting and buffering (0: 256 MiB) */
};
OFFCORE_EXPORT void offcore_import_opts_init(struct offcore_import_opts *o);
/* Imports src into a new directory out (which must not exist); nothing is left on failure. */
OFFCORE_EXPORT int offcore_import(const char *src, const char *out,
                                  const struct offcore_import_opts *o, struct offcore_error *err);

struct offcore_generate_opts {
    uint32_t struct_size;
    uint32_t feat_dim;  /* 0 = no features */
    uint32_t n_classes; /* 1 .. 65535 */
    uint32_t n_threads; /* 0 = all cores; the output does not depend on it */
    uint64_t n_nodes;
    uint64_t seed;
    double avg_degree;
    double homophily, power_law, feat_signal; /* see `offcore generate --help` */
    double train_frac, val_frac, test_frac;
    int32_t feat_f16; /* store features as f16 (0: f32) */
};
OFFCORE_EXPORT void offcore_generate_opts_init(struct offcore_generate_opts *o);
/* Generates a synthetic dataset (power-law degrees, planted classes) into out. */
OFFCORE_EXPORT int offcore_generate(const char *out, const struct offcore_generate_opts *o,
                                    struct offcore_error *err);

/* ---- feature strategies ------------------------------------------------- */

/* The registered strategies ("memory", "mmap", "direct", "static", ...). */
OFFCORE_EXPORT uint32_t offcore_n_strategies(void);
/* Name of strategy i, or NULL when i is out of range. */
OFFCORE_EXPORT const char *offcore_strategy_name(uint32_t i);

/* ---- the loader ---------------------------------------------------------- */

struct offcore_loader;

struct offcore_loader_opts {
    uint32_t struct_size;
    uint32_t n_layers;                   /* 1 .. OFFCORE_MAX_LAYERS */
    int32_t fanouts[OFFCORE_MAX_LAYERS]; /* [0] = input side (DGL's order); -1 = all */
    uint64_t batch_size;                 /* seed nodes per batch; the last batch may be short */
    uint64_t seed;                       /* sampling and shuffling seed */
    int32_t shuffle;                     /* shuffle the seeds by (seed, epoch); 0 = in order */
    int32_t split;                       /* enum offcore_split: whose nodes are the seeds */
    const char *strategy;                /* feature strategy (NULL = "memory") */
    uint64_t mem_budget_bytes;           /* offcore's allocations in this process (0 = none) */
    uint32_t n_epochs;                   /* epochs 0 .. n_epochs-1 may be iterated, in order */
    uint32_t n_threads;                  /* sampling and gather threads (0 = all cores) */
    uint32_t depth;                      /* batches gathered ahead (1 .. 64) */
    const char *plan_dir;                /* plan files (ginex, diskgnn); NULL = DIR/plan */
    uint64_t store_bytes; /* RAM the strategy's caches may hold, at most what the budget
                             leaves; 0 = all it leaves. With several loaders under one
                             budget, cap it: a strategy sizes its cache from what is left
                             when it opens, and loaders opened before still grow their
                             sampling buffers */
    /* (API 2) data parallel, e.g. PyTorch DDP: each batch is rank's share of the global
       batch (the one a loader with world_size 1 yields: same seed, same order), the
       sub-batch of its seeds [B rank / world_size, B (rank+1) / world_size) with the edges
       the global batch sampled and a copy of their rows; world_size >= 1, rank below it */
    uint32_t rank, world_size;
};
/* Defaults: 2 layers, fanouts 10,25, batch 1000, seed 0, shuffled, train split, memory,
   no budget, 1 epoch, all cores, depth 2, rank 0 of world_size 1. */
OFFCORE_EXPORT void offcore_loader_opts_init(struct offcore_loader_opts *o);

/* One layer of a batch: a bipartite block, CSR over destinations. */
struct offcore_block {
    uint64_t n_src;          /* source nodes: input_ids[0 .. n_src) */
    uint64_t n_dst;          /* destination nodes: input_ids[0 .. n_dst) (a prefix) */
    uint64_t n_edges;        /* = indptr[n_dst] */
    const uint64_t *indptr;  /* n_dst + 1 */
    const uint32_t *indices; /* n_edges local source ids, ascending by global id per row */
};

/*
 * A mini-batch (DGL's message flow graph): blocks[0] is the input side,
 * blocks[n_layers-1] ends at the seeds = input_ids[0 .. n_seeds). x holds
 * the n_input x feat_dim f32 feature rows of input_ids, in that order (NULL
 * for offcore_loader_sample's batches).
 */
struct offcore_batch {
    uint32_t struct_size;
    uint32_t n_layers;
    uint64_t epoch, index; /* batch `index` of `epoch` */
    uint64_t n_seeds, n_input, feat_dim;
    const uint64_t *input_ids;
    const float *x;
    struct offcore_block blocks[OFFCORE_MAX_LAYERS];
    void *handle; /* the loader's (do not touch) */
};
OFFCORE_EXPORT void offcore_batch_init(struct offcore_batch *b);

struct offcore_stats {
    uint32_t struct_size;
    uint64_t n_batches_per_epoch;
    uint64_t n_sampled, n_fetched;              /* batches since open */
    uint64_t requested_rows, requested_bytes;   /* feature rows and bytes gathered */
    uint64_t requested_disk_bytes, read_bytes;  /* of those from disk; bytes read */
    uint64_t n_reads;                           /* read requests */
    uint64_t store_held_bytes;                  /* what the strategy holds now */
    uint64_t mem_used_bytes, mem_peak_bytes;    /* offcore's accountant, process-wide */
    double sample_busy_s, fetch_busy_s, wait_s; /* pipeline stage busy and caller waits */
};
OFFCORE_EXPORT void offcore_stats_init(struct offcore_stats *s);

/*
 * Loads ds's topology, labels and splits, opens the feature store by
 * strategy name under the budget, and starts the batch pipeline.
 */
OFFCORE_EXPORT int offcore_loader_open(const struct offcore_dataset *ds,
                                       const struct offcore_loader_opts *o,
                                       struct offcore_loader **out, struct offcore_error *err);
/* Stops the pipeline and frees everything; every batch becomes invalid. NULL is a no-op. */
OFFCORE_EXPORT void offcore_loader_close(struct offcore_loader *l);
OFFCORE_EXPORT uint64_t offcore_loader_n_batches(const struct offcore_loader *l);
/* Batches that may be held when offcore_loader_next is called (0: release each first). */
OFFCORE_EXPORT uint32_t offcore_loader_max_held(const struct offcore_loader *l);
/* The dataset's n_nodes labels (-1 = unlabeled), valid until the loader is closed. */
OFFCORE_EXPORT const int32_t *offcore_loader_labels(const struct offcore_loader *l,
                                                    uint64_t *n_nodes);
/* Starts epoch e (0, 1, ... in order); the rest of an unfinished epoch is skipped. */
OFFCORE_EXPORT int offcore_loader_epoch(struct offcore_loader *l, uint64_t e,
                                        struct offcore_error *err);
/* Fills *b with the epoch's next batch; OFFCORE_DONE after the last one. */
OFFCORE_EXPORT int offcore_loader_next(struct offcore_loader *l, struct offcore_batch *b,
                                       struct offcore_error *err);
/* Gives a batch back (its arrays are reused) and clears *b. */
OFFCORE_EXPORT void offcore_loader_release(struct offcore_loader *l, struct offcore_batch *b);
/*
 * Batch `index` of epoch e sampled on the calling thread without the store or
 * the pipeline (the reference the loader's batches equal; x is NULL). Its
 * arrays stay valid until the next offcore_loader_sample or close.
 */
OFFCORE_EXPORT int offcore_loader_sample(struct offcore_loader *l, uint64_t e, uint64_t index,
                                         struct offcore_batch *b, struct offcore_error *err);
OFFCORE_EXPORT int offcore_loader_stats(const struct offcore_loader *l, struct offcore_stats *s,
                                        struct offcore_error *err);

#ifdef __cplusplus
}
#endif

#endif
