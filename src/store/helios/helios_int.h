/*
 * helios_int.h — private to src/store/helios: the `helios` store, its batch
 * records and the functions its two files share (helios.c: sizing, open,
 * the trainer's side; helios_io.c: per-hop submission and the completion
 * stage), and the test knobs helios.c offers tests (which include this
 * header).
 *
 * Place in the data flow: store; the batch pipeline's sample stage feeds
 * hops and batches in (the hop and sampled hooks: hl_prepare_hop /
 * hl_prepare_batch), the completion stage reaps their reads, the fetch stage
 * serves them (the gather hook: hl_gather_batch).
 * Thread-safety: a record belongs to the submitter (the sample stage) from
 * free_q until it is sealed; its atomics (n_sub, n_done, sealed) are shared
 * with the completion stage, which owns `res` and the read counters and
 * hands the whole record on through done_q to the fetch stage, which hands
 * it back through free_q. h->mu guards only the submitter's wait for room in
 * the ring (leaf lock; no queue call is made with it held).
 * Ownership: the store owns records, arena, ring, cache and readers; the
 * pipeline (the batch pipeline's, or the store's own) owns queues and threads.
 */
#ifndef OFFCORE_STORE_HELIOS_INT_H
#define OFFCORE_STORE_HELIOS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "store/store_int.h"

#define HL_NO_AT    UINT64_MAX  /* a row not staged: cached, or read at gather (overflow) */
#define HL_SEAL     0xffffffffu /* tag span of a batch's seal marker */
#define HL_MAX_SPAN (64u << 10) /* rows sharing pages are read together up to this */
/* one served, one read ahead: Helios's inter-mini-batch pipeline (one batch prepared while one
   trains); a record is given back when its gather has copied it, so the next read-ahead starts
   then. A third record kept the disk no busier and took its stage off the cache (measured:
   docs/CLI.md, helios) */
#define HL_N_RECORDS 2u
#define HL_MAX_CPUS  1024u /* CPU_SETSIZE */

/* One read: [off, off + len) of the file into stage + at; need = bytes its rows use. */
struct hl_span {
    uint64_t off, at;
    uint32_t len, need;
};

struct hl_rec {
    uint32_t index;
    uint64_t seq, epoch, batch;
    uint64_t n_rows; /* rows shown so far (final once sealed) */
    uint64_t *ids;   /* max_rows */
    uint32_t *slot;  /* cache slot, or STORE_NO_SLOT */
    uint64_t *at;    /* offset of the staged row in stage, or HL_NO_AT */
    uint8_t *stage;  /* this record's part of the arena */
    uint64_t stage_used;
    struct hl_span *spans; /* cap_spans = stage bytes / 4 KiB */
    int64_t *res;          /* completion stage: result of each span */
    uint32_t n_spans, cap_spans;
    uint64_t n_cached, n_staged, n_overflow;
    uint64_t read_bytes;          /* completion stage */
    atomic_uint_least32_t n_sub;  /* spans submitted (release: spans written) */
    atomic_uint_least32_t n_done; /* spans reaped */
    atomic_int sealed;            /* the seal marker was reaped */
    int queued;                   /* handed to the completion stage */
};

struct hl_store {
    struct oc_store *s;
    struct store_cache cache; /* n_live: yield's lock */
    struct store_yield yield; /* its rows, given back under a budget and taken back */
    int yield_ready;
    struct store_disk disk; /* the fetch/trainer thread's: evaluation, overflow, out of plan */
    struct oc_file *file;   /* O_DIRECT, the ring's */
    struct oc_io_ring *ring;
    uint8_t *arena; /* n_records x stage_bytes, registered with the ring */
    uint64_t stage_bytes, max_rows, est_rows;
    unsigned depth;
    struct hl_rec *recs;
    uint32_t n_records;
    int pipeline;
    uint32_t first_epoch, n_epochs;
    uint64_t n_batches;
    int io_cores, sq_cpu, n_cpus;
    int cpus[HL_MAX_CPUS]; /* the CPUs the opening thread may run on (oc_cpus_allowed); the
                              last io_cores are the I/O path's */
    /* with I/O cores: the compute pool pinned off them with the opening thread (its worker
       0), NULL if not; the last pinned store freed on that thread gives them the first pin's
       CPUs back (helios.c, unpin_compute) */
    struct oc_pool *pinned_pool;
    pthread_t opener;
    uint64_t held_bytes;
    /* --hyperbatch: the misses of the sampled batches in groups (store/hyper.c), read by
       its stage; then no records, ring or per-hop reads (pipeline 0) */
    struct store_hyper *hyper;
    /* over other ids (cfg->accesses): what shows hl_prepare_batch every plan batch in order
       (store/feed.c); NULL: the batch pipeline's sample stage */
    struct store_feed *feed;
    /* submitter (the sample stage) */
    struct store_miss *miss; /* one hop's misses (id: the file row, pos: its row in the batch) */
    struct hl_rec *open_rec; /* being filled hop by hop */
    atomic_uint_least64_t n_prepared;
    atomic_uint_least64_t submit_cpu_ns, submit_ns;
    /* shared with the completion stage */
    atomic_uint_least32_t in_flight;
    atomic_int waiting, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int sync_ready;
    /* stages */
    struct oc_pipeline *p;
    struct oc_queue *free_q, *comp_q, *done_q;
    struct oc_stage *comp_st;
    int pinned; /* the completion thread set its affinity */
    /* fetch stage */
    struct hl_rec *held; /* popped ahead of its turn */
    uint64_t n_served, n_direct;
};

/* The options `offcore train` offers for helios (its table in helios.c; store_opts_read). */
struct hl_opts {
    uint32_t io_cores;   /* cores for the I/O path (SQPOLL thread and completion stage pinned to
                          the last ones); 0 = auto */
    double hyperbatch;   /* share of mem_bytes that stages the misses of the coming batches
                          (store/hyper.c) instead of the per-hop reads; 0 = none */
    int hyperbatch_disk; /* its groups staged on disk (--hyperbatch-disk) */
};

/* ---- test knobs (helios.c; tests include this header) -------------------- */

/*
 * For a `helios` store (no-op otherwise): lowers the reads it keeps in flight
 * to depth (1 .. its ring's), so tests reach the submitter's wait for room.
 * Call before the batch pipeline starts feeding it.
 */
void oc_store_helios_set_depth(struct oc_store *s, unsigned depth);
/* For a `helios` store with a ring: its mode (tests check which setup took); else PREAD. */
enum oc_io_ring_mode oc_store_helios_ring_mode(const struct oc_store *s);
/*
 * helios stores opened after this with on = 1 size each record's stage for
 * every input row of a batch, not only those its cache misses (tests compare).
 */
void oc_store_helios_stage_every_row(int on);
/* Rows a `helios` store caches, and rows each batch record stages (0, 0 otherwise). */
void oc_store_helios_sizes(const struct oc_store *s, uint64_t *cached_rows, uint64_t *stage_rows);
/* Tests: helios's RAM cache (NULL for another store). */
const struct store_cache *oc_store_helios_cache(const struct oc_store *s);

/* helios_io.c */
int hl_prepare_hop(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                   uint64_t n, struct oc_err *err);
int hl_prepare_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                     const struct oc_sample_batch *b, struct oc_err *err);
int hl_stages_start(struct hl_store *h, struct oc_err *err);
/* helios_cores.c: the I/O/compute split of the allowed cores (io_cores 0 = auto), the compute
   pool pinned off the I/O cores, and unpinned by the last pinned store to go. */
void hl_split_cores(struct hl_store *h, uint32_t io_cores);
void hl_pin_compute(struct hl_store *h, struct oc_pool *pool);
void hl_unpin_compute(struct hl_store *h);

#endif
