/*
 * gnndrive_int.h — private to the `gnndrive` strategy (GNNDrive): the
 * reference-counted feature buffer, the batch records that travel through
 * the pipeline, the extractors' reads, and the store that ties them together.
 *
 * Place in the data flow: store. gnndrive.c (open, stats) and
 * gnndrive_serve.c (the trainer's side) use gnndrive_stage.c (its feeding
 * hook, the extractor and releaser stages) and gnndrive_yield.c (slots
 * given back under a budget and taken back), which use gnndrive_buf.c (mapping table, standby LRU list) and
 * gnndrive_io.c (reads through the io module's batch reader, rows placed as
 * they complete).
 *
 *   sampler ──extract_q──► extract stage (E threads) ──done_q──► trainer ──release_q──► release stage
 *      ▲                                                                                    │
 *      └────────────────────────────────────── free_q ◄─────────────────────────────────────┘
 *
 * The stages and queues belong to the store's pipeline (store_stages: the
 * one given in the store's config in training, or one the store owns). A batch
 * record goes round this loop; every queue holds up to n_records pointers,
 * so a push never waits. The four queues are the only way the stages hand
 * records over (ex_q lends each extractor thread its reader and scratch).
 *
 * Thread-safety and lock order: one mutex, gd->mu, guards the buffer's
 * mapping table, reference counts, reverse map and standby list and the
 * reservation ticket; it is a leaf lock (nothing else is taken while it is
 * held; the queues' own mutexes are never held together with it, nor is
 * the pipeline cancelled with it held: the cancel hook takes it). Slot
 * states are C11 atomics: the reader's completion callback marks a slot
 * VALID (release) after placing its row, readers load them with acquire.
 * Record fields are written by one stage at a time; a queue hand-over
 * orders the writes before the next stage's reads. The first error is the
 * pipeline's (oc_pipeline_status).
 * Ownership: the store owns every record, the buffer and the readers; the
 * pipeline owns the queues and threads (the registry joins the store's own
 * pipeline before gd_free; a given one is freed before oc_store_free); the
 * dataset, graph and pool are borrowed.
 */
#ifndef OFFCORE_STORE_GNNDRIVE_INT_H
#define OFFCORE_STORE_GNNDRIVE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "offcore/pipeline.h"
#include "offcore/rng.h"
#include "offcore/slot_list.h"
#include "store/store_int.h"

#define GD_NONE STORE_NO_SLOT /* no slot (store_slots_copy reads the row's place as a miss) */
/* How a batch record's and an extractor's per-row arrays grow past a larger batch
   (oc_grow_all, through the accountant): by an eighth at least, so that the next larger
   batch likely fits too; OC_ERR_BUDGET leaves them valid and their capacity unchanged. */
#define GD_GROW (&(const struct oc_grow_policy){.div = 8})

/*
 * Slot states (struct gd_buf.state). A slot is on the standby list exactly
 * when its reference count is 0 (EMPTY slots are, from open on):
 *
 *     EMPTY ─┐                                                     hit: ref++
 *            │ miss: the standby front (least recently               ┌────┐
 *            │ released) is taken, its old node unmapped, ref = 1    │    ▼
 *            ▼                                                      VALID, ref ≥ 1
 *         LOADING ───── read completes, row placed, VALID stored ──►    │    ▲
 *            ▲          (release); wait-listed rows see it               │    │ hit: ref++, off the
 *            │                                                releaser: │    │ list (a standby hit)
 *            │                                               ref-- = 0  ▼    │
 *            └───────── miss: the standby front ────────────── STANDBY: VALID, ref = 0,
 *                                                              at the back of the LRU list
 *
 * A row another extractor is still LOADING is not read again: the lookup
 * takes a reference and waits for the VALID store (a wait-listed row).
 */
enum { GD_EMPTY = 0, GD_LOADING = 1, GD_VALID = 2 };

struct gd_buf {
    /* the row slots (cache_int.h, a bound cache over a node table): rows as stored in an
       anonymous mapping; slots in use [0, n_live), the rest given back; table[v]: the slot
       holding node v; slot_id[k]: the node in slot k (kept while a given-back slot drains) */
    struct store_cache c;                  /* [mu] */
    uint64_t n_draining;                   /* [mu] given-back slots still referenced (bytes held) */
    uint32_t *ref;                         /* [mu] batches holding slot k */
    struct oc_slot_list standby;           /* [mu] front = least recently released */
    atomic_uchar *state;                   /* GD_EMPTY / GD_LOADING / GD_VALID */
    OC_DEBUG_ONLY(struct oc_held mu_held;) /* gd->mu's holder (gd_lock): the functions below
                                              assert it, as their comments require */
};

/* A batch in the pipeline: its input ids and, once reserved, one slot per row. */
struct gd_rec {
    uint64_t seq;          /* position in the plan: (epoch - first_epoch) x n_batches + batch */
    uint64_t epoch, batch; /* what the sampler sampled */
    uint64_t n_rows;
    uint64_t cap;    /* rows ids and slots hold: max_rows, grown for a larger batch */
    uint64_t *ids;   /* cap */
    uint32_t *slots; /* cap: slot of row i (referenced until the releaser) */
    /* extraction counters, written by the extractor */
    uint64_t n_hits;         /* rows found VALID (standby hits included) */
    uint64_t n_standby_hits; /* of which the slot had no reference (on the standby list) */
    uint64_t n_waited;       /* rows another extractor was loading */
    uint64_t n_misses;       /* rows read by this batch */
    uint64_t read_bytes, n_reads;
};

/* The store's sizing (gnndrive.c, whose header explains B, R and M): z.pipeline means a
   training plan, so the stages run. */
#define GD_DEPTH 64u /* reads in flight per extractor */
struct gd_sizing {
    int pipeline;
    uint32_t n_extractors, n_records, n_samplers;
    uint64_t bound;    /* B: the bound */
    uint64_t max_rows; /* R: records' and extractors' rows at open (train's measure, else B) */
    uint64_t est_rows; /* M: measured, plus a quarter */
    uint64_t min_slots, n_slots, n_plan;
    size_t cell_bytes;
    size_t eval_bounce; /* direct reads: bounce of the batch reader, eval_bounce / 256 rows a run */
    uint64_t fixed, per_slot;
    uint64_t hyper;              /* --hyperbatch: the groups' bytes (in fixed) */
    struct store_hyper_shape hy; /* and their shape (cap 0: none) */
};

struct gd_store;

/*
 * What one extractor thread works with, lent to it per batch through ex_q
 * (E states for the E threads of the extract stage, so a pop never waits):
 * its batch reader (depth reads in flight, depth bounce cells) and scratch.
 */
struct gd_extractor {
    struct gd_store *g;
    struct gd_rec *cur;      /* the batch being extracted */
    uint64_t cap;            /* rows miss and waits hold: max_rows, grown for a larger batch */
    struct store_miss *miss; /* cap: this batch's misses (id: the file row, pos: the slot) */
    uint32_t *waits;         /* cap: rows of this batch loaded by another extractor */
    uint64_t n_miss, n_waits;
    struct store_hyper_batch *hg; /* --hyperbatch: the batch, taken from its group, else NULL */
    struct oc_io_batch *reader;   /* features.npy reads, rows placed by its completion callback */
    struct oc_rng rng;            /* test delays */
};

struct gd_store {
    struct oc_store *s; /* read-only fields: path, dtype, row_bytes, data_offset, n_nodes */
    struct gd_sizing z; /* as gd_size found it (gnndrive.c) */
    uint64_t mem_bytes; /* the store's budget (0 = none), for errors */
    int reorder;        /* --reorder */
    uint64_t first_epoch, n_epochs, n_batches; /* the plan: z.n_plan batches */
    struct oc_graph graph;
    struct oc_sample_opts so;
    /* stages */
    struct oc_file *file; /* features.npy, O_DIRECT where allowed; shared by the extractors */
    struct gd_buf buf;
    struct gd_rec *recs;
    struct oc_pipeline *p;
    struct oc_stage *extract_st;
    /* its CPU time is the I/O path's (io_cpu_us) */ /* where the stages run (store_stages) */
    struct oc_queue *free_q, *extract_q, *done_q, *release_q, *ex_q;
    struct oc_rng sampler_rng, releaser_rng; /* test delays */
    struct gd_extractor *ex;
    struct store_hyper *hyper; /* --hyperbatch: the fed batches' misses, staged (store/hyper.c) */
    struct store_feed *feed;   /* over other ids (cfg->accesses): what feeds gd_prepare, every
                                  plan batch in order (store/feed.c); NULL: the batch pipeline */
    /* shared between the threads (see the lock order above) */
    pthread_mutex_t mu;
    pthread_cond_t ticket_cv; /* reserve_seq moved */
    pthread_cond_t slot_cv;   /* a slot went to the standby list */
    pthread_cond_t loaded_cv; /* a LOADING slot became VALID */
    uint64_t reserve_seq;     /* [mu] the batch allowed to reserve slots now */
    uint64_t max_input_seen;  /* [mu] the largest batch prepared: slots are never given below it */
    struct oc_giveback gb;    /* the give-back (core giveback.c; gnndrive_yield.c its policy) */
    unsigned n_slot_waiters;  /* [mu] */
    atomic_uint n_load_waiters;
    atomic_int stop; /* set (under mu) when the pipeline is cancelled: every wait ends */
    atomic_uint delay_us;
    atomic_uint_least64_t n_extracted;
    atomic_uint_least64_t n_prepared; /* plan batches fed so far (seqs 0 .. n_prepared - 1) */
    /* the trainer's side (its thread only) */
    struct store_disk disk; /* direct reads: evaluation, batches not in the pipeline; its
                               slots: a chunk's buffer slot of each row, or GD_NONE */
    struct gd_rec **parked; /* extracted, not consumed yet (n_records) */
    uint32_t n_parked;
    uint8_t *consumed;     /* bit per plan batch: gathered or discarded */
    uint8_t *taken;        /* bit per plan batch: returned by next_batch or consumed */
    uint32_t *epoch_taken; /* per plan epoch: batches taken */
    uint64_t cursor;       /* plan-order next_batch: lowest batch not taken in nb_epoch */
    uint64_t nb_epoch;
    uint64_t n_served, n_discarded, n_direct;
    uint64_t n_popped;   /* records taken from done_q */
    uint64_t held_bytes; /* what open allocated here, estimates for the sampler included */
};

/* gd->mu: locked, unlocked and waited on through these, which record its holder for asserts. */
static inline void gd_lock(struct gd_store *g)
{
    pthread_mutex_lock(&g->mu);
    OC_HELD_TAKE(&g->buf.mu_held);
}
static inline void gd_unlock(struct gd_store *g)
{
    OC_HELD_DROP(&g->buf.mu_held);
    pthread_mutex_unlock(&g->mu);
}
static inline void gd_wait(struct gd_store *g, pthread_cond_t *cv)
{
    OC_HELD_DROP(&g->buf.mu_held);
    pthread_cond_wait(cv, &g->mu);
    OC_HELD_TAKE(&g->buf.mu_held);
}

/* ---- buffer (gnndrive_buf.c) --------------------------------------------- */

int gd_buf_init(struct gd_buf *b, uint64_t n_nodes, uint64_t n_slots, size_t row_bytes,
                struct oc_err *err);
void gd_buf_deinit(struct gd_buf *b);
/*
 * With gd->mu held: looks up rows [*pos, lim) of r, taking a reference on
 * each row's slot (hits and wait-listed rows into r's counters and x->waits,
 * misses into x->miss with a fresh LOADING slot). Stops early at a miss when
 * the standby list is empty; *pos is the first row not reserved.
 */
void gd_buf_reserve(struct gd_store *g, struct gd_extractor *x, struct gd_rec *r, uint64_t *pos,
                    uint64_t lim);
/* With gd->mu held: drops r's references; slots reaching 0 go to the standby back. */
void gd_buf_release(struct gd_buf *b, const struct gd_rec *r);
/*
 * With gd->mu held: gives the top slots back (a budgeted store's reclaimer,
 * gnndrive.c): from c.n_live down, until the unreferenced ones among them
 * make at least want bytes, never below floor slots. Their nodes are
 * unmapped (a later lookup misses); unreferenced slots leave the standby
 * list and their whole pages go back to the kernel at once, referenced ones
 * drain (their batch still reads them; gd_buf_release and gd_buf_unpin
 * retire them). Releases the bytes it gives to the accountant; returns them.
 */
uint64_t gd_buf_give_back(struct gd_buf *b, uint64_t want, uint64_t floor);
/*
 * With gd->mu held, no slot draining, rows <= c.n - c.n_live and their
 * bytes reserved by the caller: slots [c.n_live, c.n_live + rows) are in use
 * again, EMPTY at the standby front (taken first).
 */
void gd_buf_take_back(struct gd_buf *b, uint64_t rows);
/* Bytes of slots given back and not draining (with gd->mu held). */
uint64_t gd_buf_given_back_bytes(const struct gd_buf *b);
/*
 * With gd->mu held: references the slot of each of ids[0..n) whose row is
 * VALID in the buffer (slots[i] = that slot, else GD_NONE), so nobody reuses
 * it while a reader copies it; returns how many. gd_buf_unpin drops those
 * references (slots at 0 go to the standby back) and returns how many did.
 */
uint64_t gd_buf_pin_valid(struct gd_buf *b, const uint64_t *ids, uint64_t n, uint32_t *slots);
uint64_t gd_buf_unpin(struct gd_buf *b, const uint32_t *slots, uint64_t n);

/* ---- giving slots back under a budget (gnndrive_yield.c) ------------------ */

/* Registers the store with the accountant (a budgeted store with a training plan); free
   unregisters g->gb (oc_giveback_unregister). */
int gd_yield_register(struct gd_store *g, struct oc_err *err);
/*
 * On the sample stage, before a batch of `need` input rows is fed: takes
 * given-back slots again while the budget has room, and at least the ones
 * the batch needs (waiting for those still draining); OC_ERR_BUDGET if the
 * budget cannot give those.
 */
int gd_take_back(struct gd_store *g, uint64_t need, struct oc_err *err);

/* ---- extractor reads (gnndrive_io.c) ------------------------------------- */

int gd_io_init(struct gd_store *g, struct gd_extractor *x, struct oc_err *err);
void gd_io_deinit(struct gd_extractor *x);
/*
 * Reads the rows of misses [lo, hi) of x's batch in page-aligned groups and
 * returns once all are in place; each row is copied into its slot and
 * marked VALID (waking wait-listed extractors) as the read holding it
 * completes.
 */
int gd_io_read(struct gd_extractor *x, uint64_t lo, uint64_t hi, struct oc_err *err);
/* Bytes one extractor's reader and scratch hold at most. */
uint64_t gd_io_extractor_bytes(size_t cell_bytes, unsigned depth, uint64_t max_rows);

/* ---- the trainer's side (gnndrive_serve.c) -------------------------------- */

/* oc_store_gather: rows VALID in the buffer copied, the rest read directly. */
int gd_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out, struct oc_err *err);
/* oc_store_gather_batch: the extracted record of a plan batch, else gd_gather. */
int gd_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                    uint64_t n, float *out, struct oc_err *err);
/* oc_store_next_batch: plan order, or with reorder the batches as extraction completes. */
int gd_next_batch(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err);

/* ---- stages (gnndrive_stage.c) ------------------------------------------- */

/*
 * oc_store_sampled: feeds plan batch (epoch, batch) to the extractors
 * when it is the next one of the plan (else a no-op: its gather reads
 * directly). Waits for a free record.
 */
int gd_prepare(struct oc_store *s, uint64_t epoch, uint64_t batch, const struct oc_sample_batch *b,
               struct oc_err *err);
/* --hyperbatch-disk: the hyperbatch feeder's function, every row of its batch staged. */
int gd_stage_rows(struct oc_store *s, uint64_t epoch, uint64_t batch,
                  const struct oc_sample_batch *b, struct oc_err *err);
/*
 * Adds the queues, the extract and release stages and the cancel hook to
 * the store's pipeline (store_stages: the training pipeline, or one the
 * store owns) and starts it; the store is fully built. If open fails after
 * this, the registry joins the pipeline before gd_free.
 */
int gd_stages_start(struct gd_store *g, struct oc_err *err);
/* Sleeps up to delay_us (test hook). */
void gd_delay(struct gd_store *g, struct oc_rng *rng);

/* The options `offcore train` offers for gnndrive (its table in gnndrive.c; store_opts_read). */
struct gd_opts {
    uint32_t n_extractors; /* extractor threads (0 = GD_DEFAULT_EXTRACTORS) */
    uint32_t n_samplers;   /* sampler threads (0 = 4 with an on-disk topology, else one per
                              two online cores, 1 to 4) */
    int reorder;           /* oc_store_next_batch returns batches in completion order
                              (GNNDrive); 0 = plan order */
    double hyperbatch;     /* share of mem_bytes that stages the misses of the fed batches
                              (store/hyper.c); 0 = none */
    int hyperbatch_disk;   /* its groups staged on disk (--hyperbatch-disk) */
};

/* ---- test knobs (gnndrive.c), for tests ------------------------------------ */

struct oc_store_gnndrive_info {
    struct gd_sizing z;   /* as open sized the store: threads, records, rows, slots */
    uint64_t n_extracted; /* batches extracted by the pipeline */
    uint64_t n_served;    /* plan gathers served from the buffer */
    uint64_t n_discarded; /* extracted batches released unused */
    uint64_t n_direct;    /* plan gathers read directly (not in the pipeline) */
};
/* Fills info and returns 1 for a gnndrive store; 0 otherwise. */
int oc_store_gnndrive_info(const struct oc_store *s, struct oc_store_gnndrive_info *info);
/* Random sleeps of up to max_us in the sampler, extractors and releaser (0 = none). */
void oc_store_gnndrive_set_delay(struct oc_store *s, uint32_t max_us);
/* The smallest cfg->mem_bytes a gnndrive store opens with for cfg (without --hyperbatch). */
int oc_store_gnndrive_min_budget(const struct oc_store_config *cfg, uint64_t *bytes,
                                 struct oc_err *err);

#endif
