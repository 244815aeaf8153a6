/*
 * diskgnn_int.h — private to the `diskgnn` strategy (DiskGNN, Liu et al.,
 * SIGMOD 2025): windows of offline-sampled batches packed into one file each
 * (sampled by plan's window planner, src/plan/window.h, through the builder
 * of diskgnn_window.c; packed laid out whole in diskgnn_pack.c or
 * batch by batch without disk caches in diskgnn_stream.c, both reading
 * features.npy through io.h's oc_io_scan), the four stages that read them back, on the
 * pipeline of pipeline.h (diskgnn_pipe.c), and the strategy glue (diskgnn.c).
 *
 *   open:        sample window 0 ─► CPU cache choice ─► layout (plan.h) ─► pack (fills the cache)
 *   background:  planner stage: sample + lay out + pack window e+1 while epoch e trains
 *   per batch:   feature loader ─► graph loader ─► trainer's fetch stage
 *                (the chunk's      (record ─►     (load_batch; gather_batch is the
 *                 header, record    blocks)        feature assembler: packed and
 *                 and addresses)                   disk-cache rows read in bounded
 *                                                  runs, CPU-cache rows copied ─► f32
 *                                                  rows in the pipeline's row buffer)
 *
 * Place in the data flow: store; uses plan (the window planner: offline
 * sampling and the windows' schedule; placement and layout) and io.
 * Thread-safety: see each file; the stages talk only through bounded queues
 * of depth 2; a slot belongs to whichever stage popped it last.
 * Ownership: the strategy owns windows and slots; the store's pipeline (the
 * training run's, or one the store owns: store_stages) owns the queues and
 * threads; the dataset, graph and pool are borrowed from the store.
 */
#ifndef OFFCORE_STORE_DISKGNN_INT_H
#define OFFCORE_STORE_DISKGNN_INT_H

#include <stdatomic.h>

#include "offcore/pipeline.h"
#include "offcore/plan.h"
#include "plan/window.h"
#include "store/store_int.h"

#define DG_CHUNK_MAGIC   "OCDGCK1"
#define DG_CHUNK_VERSION 1u
#define DG_N_SLOTS       2u           /* chunk buffers: batch b+1 loads while b is assembled */
#define DG_QUEUE_DEPTH   2u           /* every queue between two stages */
#define DG_ROW_DEPTH     128u         /* the assembler's reads in flight */
#define DG_ROW_BOUNCE    (8u << 20)   /* the assembler's batch-reader staging, at most */
#define DG_ROW_RUN       16384u       /* rows the assembler queues per run of its reader, at most */
#define DG_WRITE_RUN     (256u << 10) /* packer: bytes of one coalesced write */
#define DG_WRITE_BUFS    4u           /* packer: runs being filled or written (write-behind) */
#define DG_WRITE_BYTES   (DG_WRITE_BUFS * DG_WRITE_RUN)
#define DG_PROBE_BATCHES 64u  /* streamed: batches sampled at open to size and cache */
#define DG_DISK_SHARE    0.45 /* streamed, fresh: a window's share of the free space */

/* One packed window: a file of chunks and segment caches (plan.h layout). */
struct dg_window {
    uint64_t epoch; /* the sample epoch its batches were drawn for */
    uint64_t first; /* its first batch in that epoch: chunk i is batch first + i */
    uint64_t n_batches, s, n_segments;
    uint64_t *chunk_off;    /* n_batches + 1 */
    uint64_t *seg_byte_off; /* n_segments + 1 */
    uint64_t file_bytes;
    char path[4500];   /* its temporary name, for messages: the file has no name */
    struct oc_file *f; /* O_DIRECT reader (its last descriptor: closing it frees the file) */
    /* fresh samples: the loader's hold while it reads the window, and one per loaded slot
       until released; the last to let go drops it (dg_pipe's window_put) */
    atomic_uint refs;
    int give_back; /* then its struct goes back to the planner */
};

/* Builds windows; owned by one thread at a time (open, then the planner stage). */
struct dg_builder {
    const struct oc_store *s;
    /* the window planner (plan/window.h): the sampler and the trace of the window sampled
       last (in row space), tr.it.batch the batch sampled last */
    struct pl_window tr;
    /* tr.it.sampler's topology reads added to the store's (store_topo_add) */
    struct oc_topo_disk_stats topo_seen;
    uint8_t *rec;
    uint64_t cap_rec;
    uint8_t *part;               /* packer: feature partition (aligned) */
    uint64_t part_bytes;         /* its size: two halves (oc_io_scan) */
    struct oc_write_behind *wb;  /* packer: coalesced writes of rows, while a window packs */
    char dir[4096];              /* PLAN/diskgnn */
    struct pl_spill spill;       /* the records sampled, not packed yet (streamed: the packed
                                    rows): an unlinked scratch file under dir (dg_spill_begin) */
    double disk_budget_bytes;    /* per window; 0 = unlimited */
    uint64_t sample_us, pack_us; /* of the last window built */
    uint64_t pack_read_bytes;    /* features.npy bytes the last window's packing read */
    struct oc_crc_follow crc;    /* packer: features.npy's checksum while crc_due (the store's */
    int crc_due;                 /* feat_crc, taken over at open): the first scan finishes it */
    uint64_t crc_read_bytes;     /* what the check read beside the scan (the scan skipped it) */
    /* streamed windows (no --disk-budget: diskgnn_stream.c): each batch laid out as it is
       sampled, its metadata written at once, its packed rows spilled (spill) for the scan */
    int streamed;
    uint64_t *chunk_off, *pack_off;   /* per batch of the window: nb_epoch + 1 each */
    uint64_t *addr, *pack, cap_batch; /* one batch's addresses and packed rows */
    uint64_t *cursor_buf;             /* the scan's read-ahead of each batch's packed rows */
    struct oc_rank_set cpu_set;       /* the CPU cache's ids (slot = rank), built once */
    uint32_t ahead;                   /* its entries per batch (dg_stream_ahead) */
    struct oc_pipeline *cancel;       /* once cancelled, sampling and packing stop (NULL: never) */
    struct oc_progress *progress;     /* the run's (borrowed; NULL: none) */
    int background;                   /* windows after the first: a note, not a phase */
    uint64_t reported;                /* units of the current phase added so far */
};

int dg_builder_init(struct dg_builder *b, const struct oc_store *s,
                    const struct oc_store_config *cfg, struct oc_pool *pool, struct oc_err *err);
void dg_builder_deinit(struct dg_builder *b);
/* Re-creates the builder's sampler for the planner stage, off training's pool: over an
   on-disk topology on the pool store_sampler_pool gives (STORE_DISK_SAMPLERS threads the
   pipeline owns), else on the planner's own thread; window 0 (at open) samples on training's
   pool. The old sampler's topology reads are added to the store's first. */
int dg_builder_detach_pool(struct dg_builder *b, struct oc_pipeline *stages, struct oc_err *err);

/*
 * Samples batches [first, first + count) of sample epoch `epoch`, one window
 * (trace + records spilled to disk). This and dg_window_pack return
 * OC_ERR_CANCELLED, leaving no file, once b->cancel is cancelled.
 */
int dg_window_sample(struct dg_builder *b, uint64_t epoch, uint64_t first, uint64_t count,
                     struct oc_err *err);
/*
 * Lays out the sampled window against the cache's rows and packs it into
 * w (a new file under the builder's dir); fill_cache also loads the cache's
 * rows during the same sequential scan of the feature file.
 */
int dg_window_pack(struct dg_builder *b, struct store_cache *cache, int fill_cache,
                   struct dg_window *w, struct oc_err *err);
/* Closes w's file (which goes with it), frees its arrays. */
void dg_window_drop(struct dg_window *w);
/*
 * Samples batches [first, first + count) of sample epoch `epoch` and packs
 * them into w: dg_window_sample then dg_window_pack, or with b->streamed
 * dg_window_stream (the same file, built without the window's trace).
 */
int dg_window_build(struct dg_builder *b, struct store_cache *cache, int fill_cache, uint64_t epoch,
                    uint64_t first, uint64_t count, struct dg_window *w, struct oc_err *err);
/*
 * The streamed builder (diskgnn_stream.c), for windows without disk caches
 * (one batch per segment: no --disk-budget): each batch is laid out as it
 * is sampled (oc_plan_batch_layout against the cache), its header, record
 * and address table written to the window file at once, its packed rows
 * (ascending) appended to a spill file; then one ascending scan of the
 * feature file writes every chunk's rows, reading each batch's spilled rows
 * through b->ahead entries of read-ahead. Its memory is one batch's
 * arrays and the read-ahead, whatever the window's length; the file is
 * byte for byte dg_window_pack's.
 */
int dg_window_stream(struct dg_builder *b, struct store_cache *cache, int fill_cache,
                     uint64_t epoch, uint64_t first, uint64_t count, struct dg_window *w,
                     struct oc_err *err);
/* Packed rows read ahead per batch by a streamed window's scan: a 64th of the budget over the
   epoch's batches, within [256, 4096] (4096 without a budget). */
uint32_t dg_stream_ahead(uint64_t mem_bytes, uint64_t nb_epoch);

/* The pieces dg_window_pack and dg_window_stream share (diskgnn_window.c, diskgnn_pack.c). */
int dg_check_cancel(const struct dg_builder *b, struct oc_err *err);
void dg_report_begin(struct dg_builder *b, const char *label, const char *what, uint64_t total,
                     const char *unit);
void dg_report(struct dg_builder *b, const char *what, uint64_t done, uint64_t total);
void dg_report_end(struct dg_builder *b);
/* Starts b's spill of elem-byte elements in an unlinked scratch file under b->dir named
   after name, dropping the last one (pl_spill_deinit drops it). */
int dg_spill_begin(struct dg_builder *b, uint32_t elem, const char *name, struct oc_err *err);
/* Header of a chunk at h, whose record (rec_bytes) follows it: writes the address table after
   the record and the CRCs. */
void dg_chunk_seal(uint8_t *h, uint64_t epoch, uint64_t batch, uint64_t n_input, uint64_t n_packed,
                   uint64_t rec_bytes, const uint64_t *addr);
/*
 * A batch's packed rows as the packers' scan walks them (ascending): rows[at, n) known and
 * not written yet, entries [next, end) of the builder's spill still to read, `ahead` at a
 * time (laid out: none, rows are the layout's); dest: where rows[at] goes in the window file.
 */
struct dg_cursor {
    uint64_t next, end;
    uint64_t *rows;
    uint32_t at, n, ahead;
    uint64_t dest;
};
/*
 * The packers' one ascending scan of features.npy (dg_scan_open; partitions from the lowest
 * row still needed up to what a half holds, trimmed to the last row needed in it): each
 * partition's rows written where the count cursors and the disk-cache pairs seg (n_seg, sorted
 * by row; each partition's are re-sorted by place) want them, and copied into the cache's
 * first n_cache slots (its ids ascending), through the write-behind to out.
 */
int dg_pack_scan(struct dg_builder *b, struct dg_cursor *c, uint64_t count, struct store_miss *seg,
                 uint64_t n_seg, struct store_cache *cache, uint64_t n_cache, struct oc_file *out,
                 struct oc_err *err);

/* The packers' ascending scan of features.npy (io.h's oc_io_scan) through b->part, feeding
   features.npy's checksum while b->crc_due (diskgnn_pack.c). */
int dg_scan_open(struct dg_builder *b, struct oc_io_scan *sc, struct oc_err *err);
/* Ends a scan that returned rc so far, returning what the scan ends with: the first
   scan of a store checks features.npy's checksum (reading what it skipped) when rc is OC_OK,
   and a mismatch is OC_ERR_FORMAT naming the file. Counts its reads, closes it. */
int dg_scan_end(struct dg_builder *b, struct oc_io_scan *sc, int rc, struct oc_err *err);
/* How the builder's arrays grow (oc_grow_by): by a quarter at least, the budget's slack. */
#define DG_GROW OC_GROW_QUARTER(0)
/* Creates w's file (epoch, first set) of file_bytes, unlinked at once (oc_tmp_scratch): its
   writer in *out, its O_DIRECT reader in w->f, its temporary name in w->path for messages. */
int dg_window_create(struct dg_builder *b, struct dg_window *w, uint64_t file_bytes,
                     struct oc_file **out, struct oc_err *err);
/* Syncs and closes *out (NULL after), so the window's reader finds every byte on disk. */
int dg_window_finish(struct oc_file **out, struct oc_err *err);
/* After a failure: closes out, drops the spill and w (keeping epoch, first). */
void dg_window_fail(struct dg_builder *b, struct dg_window *w, struct oc_file *out);
/* Bytes the builder will need for a window of `accesses` accesses (budget planning). */
uint64_t dg_builder_need_bytes(const struct dg_builder *b, uint64_t accesses);
/*
 * Bytes per access of a window in dg_builder_need_bytes (more once a disk
 * budget makes segment caches: their pairs and MinHash ordering), and per batch.
 */
uint64_t dg_builder_access_bytes(const struct dg_builder *b);
#define DG_BYTES_PER_BATCH 96u
/* Per batch of the epoch: DG_BYTES_PER_BATCH, and a streamed builder's offsets and read-ahead. */
uint64_t dg_builder_batch_bytes(const struct dg_builder *b);
/* Removes from dir the temporaries of runs that are over (oc_tmp_clean_stale) and the named
   windows of earlier versions: keyed ones no run holds locked (flock), pid-named ones whose
   pid is gone. */
void dg_dir_clean(const char *dir);

/* Which batch of the plan one in flight is, its rows per tier and what reading it took. */
struct dg_batch_info {
    uint64_t epoch, index;                   /* sample epoch, batch index */
    uint64_t n_input, n_packed, n_dc, n_cpu; /* rows: all, packed, disk cache, CPU cache */
    uint64_t n_file; /* rows the CPU cache had given back, read from features.npy */
    uint64_t feat_read_bytes, graph_read_bytes, n_reads; /* this batch's reads */
};

/*
 * One batch in flight through the pipeline: its chunk's header, record and
 * address table (read by the loader), its blocks (the graph loader's), then
 * the trainer's until its rows are read and assembled into the batch
 * pipeline's row buffer (dg_pipe_assemble) and it is released. Its packed
 * and disk-cache rows stay in the window file until then, so a slot holds
 * no row.
 */
struct dg_slot {
    struct dg_batch_info info;
    uint8_t *buf; /* the chunk's header, record and address table */
    uint64_t cap_buf;
    struct dg_window *w;    /* the window it came from (held: refs) */
    uint64_t chunk_at, seg; /* the chunk's offset in w's file; its segment */
    uint64_t rec_bytes;
    struct oc_sample_batch batch;
    int handed;                 /* load_batch gave batch's arrays to the trainer */
    const uint64_t *handed_ids; /* then the batch's input ids are there */
};
struct dg_pipe;

/*
 * The pipe's work, in the order of dg_pipe_stats' busy times (and
 * stage_busy_us): three stages and the assembly, which runs in the batch
 * pipeline's fetch stage (gather_batch) and is timed there.
 */
enum dg_stage {
    DG_STAGE_LOAD,     /* feature loader: chunk and disk-cache reads */
    DG_STAGE_GRAPH,    /* graph loader: record ─► blocks */
    DG_STAGE_ASSEMBLE, /* feature assembler (in gather_batch): tiers ─► f32 rows */
    DG_STAGE_PLAN,     /* planner: sample + pack the next window (fresh samples only) */
    DG_STAGE_COUNT
};

struct dg_pipe_config {
    const struct oc_store *s;
    struct oc_pipeline *pipeline; /* where the stages run: the store's (store_stages) */
    struct dg_builder *builder;   /* moves to the planner stage (fresh samples) */
    struct store_cache *cache;
    struct store_yield *yield; /* the cache's rows: read under it; given-back rows... */
    struct store_disk *disk;   /* ...read through this reader of features.npy, */
    pthread_mutex_t *disk_mu;  /* held around the reader, and taken before yield's lock */
    /* the windows packed at open, which the pipe takes (zeroing them): window 0; with reuse
       every window of epoch 0 */
    struct dg_window *ws;
    uint64_t n_ws;
    uint64_t first_epoch, n_epochs;
    uint64_t win_batches; /* batches per window (the last one of an epoch may have fewer) */
    uint64_t head;        /* fresh samples: window 0 is batches [0, head) of the first epoch, the
                      rest of that epoch follows in windows of win_batches (0: no head) */
    int reuse;            /* every run epoch replays ws (epoch 0's batches), its chunks in the
                             order oc_sample_batch_order(seed, training epoch) */
    uint64_t seed;
    uint32_t n_slots;             /* chunk buffers, 1 .. DG_N_SLOTS */
    uint64_t row_run, row_bounce; /* the assembler's reader: dg_row_reader */
    uint64_t slot_bytes; /* initial sizing of each chunk buffer (chunk + disk-cache rows) */
};

/*
 * The assembler's reader for batches of `in` input rows of rb bytes: rows
 * per run (DG_ROW_RUN, or in when fewer, at least 256) and its staging (a
 * run's bytes, within [256 KiB, DG_ROW_BOUNCE]); *bytes is what it holds.
 */
static inline void dg_row_reader(uint64_t in, uint64_t rb, uint64_t *run, uint64_t *bounce,
                                 uint64_t *bytes)
{
    *run = in < 256 ? 256 : in < DG_ROW_RUN ? in : DG_ROW_RUN;
    uint64_t b = oc_io_align_up(*run * rb);
    *bounce = b < (256u << 10) ? (256u << 10) : b > DG_ROW_BOUNCE ? DG_ROW_BOUNCE : b;
    *bytes = *bounce + *run * (uint64_t)oc_io_batch_request_bytes();
}

/* What a chunk must be: its batch, and the bounds of the tiers its addresses point into. */
struct dg_chunk_expect {
    uint64_t epoch, index; /* sample epoch and batch of the chunk */
    uint64_t row_bytes;
    uint64_t n_cpu_rows; /* rows in the CPU cache */
    uint64_t seg_rows;   /* rows in the disk cache of the chunk's segment */
};

/* What a checked chunk holds. */
struct dg_chunk_info {
    uint64_t n_input, n_packed, rec_bytes;
    uint64_t n_dc, n_cpu; /* addresses into the disk cache and the CPU cache */
};

/*
 * Checks the header in buf (at least OC_PLAN_CHUNK_HEADER bytes) of a chunk
 * of len bytes: magic, version and CRC, that it is the expected batch, and
 * that record, address table and packed rows fit len; *meta is then the
 * bytes of header, record and address table. Errors as dg_chunk_check.
 */
int dg_chunk_check_header(const uint8_t *buf, uint64_t len, const struct dg_chunk_expect *x,
                          const char *path, uint64_t off, uint64_t *meta, struct oc_err *err);
/*
 * Checks the chunk of len bytes whose header, record and address table are
 * in buf (read from path at offset off, both for messages; its packed rows
 * need not be): dg_chunk_check_header, the CRC of record and
 * address table, and that every address is in range. OC_ERR_FORMAT naming
 * path, batch and offset otherwise. The record itself (a sample batch
 * record) is checked by oc_sample_batch_deserialize. Pure: the fuzz target
 * tests/fuzz/fuzz_diskgnn_chunk.c calls it directly.
 */
int dg_chunk_check(const uint8_t *buf, uint64_t len, const struct dg_chunk_expect *x,
                   const char *path, uint64_t off, struct dg_chunk_info *out, struct oc_err *err);

/* ---- the store, and its sizes (diskgnn.c, diskgnn_size.c) -------------------- */

struct diskgnn_store {
    struct store_cache cache; /* sorted layout (no table): ids, rows; n_live: yield's lock */
    struct store_yield yield; /* the rows' mapping, giving back and taking back */
    int yield_ready, disk_mu_ready;
    struct dg_builder builder;
    struct dg_pipe *pipe;
    struct store_disk disk;  /* evaluation, out-of-plan reads, given-back rows, taking back */
    pthread_mutex_t disk_mu; /* held around disk (the trainer and the assembler share it) */
    uint64_t pos, n_pos;     /* the next batch of the plan the trainer takes, and how many */
    uint64_t first_epoch, n_batches; /* n_batches: per epoch */
    uint64_t win_batches;            /* per window */
    uint32_t n_slots;                /* chunk buffers (DG_N_SLOTS, or 1 under a tight budget) */
    int reuse;
    uint64_t seed; /* reuse: the batch order of training epoch order_epoch */
    uint64_t *order, order_epoch;
    struct dg_slot *cur;         /* taken from the pipe, not yet gathered */
    uint64_t sample_us, pack_us; /* the first window (at open) */
    uint64_t builder_bytes;      /* the builder's buffers after the first window (the planner
                                    stage may grow them; not read across threads) */
    uint64_t *gather_rows;       /* with a feature layout: a gather's ids as rows, in runs */
};

/* The options `offcore train` offers for diskgnn (its table in diskgnn.c; store_opts_read). */
struct dg_opts {
    double disk_budget;      /* bound on its packed files on disk, as a multiple of
                                features.npy's size; 0 = unlimited */
    uint32_t window_batches; /* fresh samples: batches per window (at most an epoch);
                                0 = derived from mem_bytes */
};

/* cfg's diskgnn options (its table's values; 0 for those not set). */
static inline struct dg_opts dg_opts_of(const struct oc_store_config *cfg)
{
    struct dg_opts o;
    store_opts_read(&oc_store_diskgnn, cfg, &o);
    return o;
}

/* The first window's figures the sizes follow: its accesses, largest batch and chunk. */
struct dg_sizes {
    uint64_t accesses, max_input, max_meta;
};

void dg_window_sizes(const struct dg_builder *b, struct dg_sizes *z);
/* Rows per batch to size buffers for: n, plus a quarter unless `exact` (the window is every
   batch there is). */
uint64_t dg_size_rows(uint64_t n, int exact);
/* A chunk buffer's bytes: the largest batch's header, record and address table. */
uint64_t dg_slot_bytes(const struct dg_sizes *z, int exact);
/* Rows the store's reader of features.npy queues per run. */
uint64_t dg_reader_rows(const struct oc_store *s, const struct oc_store_config *cfg);
/* The fixed part of the budget for n_slots chunk buffers and the builder b's window. */
uint64_t dg_fixed_bytes(const struct oc_store *s, const struct oc_store_config *cfg,
                        uint32_t n_slots, const struct dg_builder *b, const struct dg_sizes *z,
                        int exact);
/* Batches per window from the budget (and the chunk buffers, *n_slots). */
uint64_t dg_window_batches(const struct oc_store *s, const struct oc_store_config *cfg,
                           const struct dg_builder *b, uint32_t *n_slots);
/* Streamed fresh windows: win, or fewer batches where two would not fit the plan
   directory's free space (logged). */
uint64_t dg_disk_window(const struct oc_store *s, const struct oc_store_config *cfg,
                        const struct dg_builder *b, const struct dg_sizes *z, uint64_t probe,
                        uint64_t hits, uint64_t win);

/* The pipe (diskgnn_pipe.c: its stages; diskgnn_assemble.c: the feature assembler). */
struct dg_pipe {
    struct dg_pipe_config c;
    const struct oc_store *s;
    struct oc_pipeline *p; /* where the stages run: the store's (store_stages) */
    struct dg_slot slots[DG_N_SLOTS];
    struct dg_window *win; /* fresh samples: 2 (read, packed); reuse: epoch 0's windows */
    uint64_t n_structs;
    struct oc_queue *free_q, *loaded_q, *ready_q, *win_q, *win_free;
    struct oc_stage *stages[DG_STAGE_COUNT];
    struct oc_io_batch *io; /* the feature assembler's (the fetch stage's) */
    uint32_t *inv;          /* the assembler's: packed row -> row of the batch */
    uint64_t cap_inv;
    /* the loader's position: the window it reads, its turn in the plan, the next chunk */
    struct dg_window *load_w;
    uint64_t load_k, load_i;
    uint64_t *load_order;    /* reuse: the training epoch's order of epoch 0's batches */
    uint64_t plan_k;         /* the planner's next window */
    struct pl_windows sched; /* the plan's windows (plan/window.h) */
    atomic_uint_fast64_t sample_us, pack_us, file_bytes, pack_read_bytes, pack_write_bytes;
    _Atomic uint64_t file_peak_bytes; /* the most file_bytes has been */
    atomic_uint_fast64_t held;        /* slot buffers and their blocks */
    atomic_uint_fast64_t assemble_us; /* the feature assembler's (in the fetch stage) */
};

/*
 * Adds the stages and their queues to c->pipeline and starts them. *out is
 * set even on failure (the stages may have started): dg_pipe_stop it once
 * they are joined.
 */
int dg_pipe_start(const struct dg_pipe_config *c, struct dg_pipe **out, struct oc_err *err);
/* Drops the windows, frees everything; the pipeline's stages were joined before. */
void dg_pipe_stop(struct dg_pipe *p);
/*
 * The next loaded batch (in plan order): its chunk and blocks, the
 * trainer's until dg_pipe_release. The pipeline's first error (of any
 * stage on it) comes out here, or OC_ERR_CANCELLED if it was cancelled
 * without one.
 */
int dg_pipe_next(struct dg_pipe *p, struct dg_slot **slot, struct oc_err *err);
/*
 * The feature assembler: slot's rows into out (info.n_input x feat_dim
 * f32), ids its input ids (for rows the CPU cache gave back, read from
 * features.npy); counts those reads in slot->info and the time in the
 * assembler's busy seconds. On the trainer's side (the fetch stage).
 */
int dg_pipe_assemble(struct dg_pipe *p, struct dg_slot *slot, const uint64_t *ids, float *out,
                     struct oc_err *err);
/* Gives the slot's chunk buffer back to the loader. */
void dg_pipe_release(struct dg_pipe *p, struct dg_slot *slot);
/* Into out: the background windows' sampling and packing times (added), their reads, writes
   and files, each stage's busy time since start; returns the bytes the pipe holds. Any
   thread, while the pipeline is alive (the stages' busy times are the pipeline's). */
uint64_t dg_pipe_stats(const struct dg_pipe *p, struct oc_store_stats *out);

#endif
