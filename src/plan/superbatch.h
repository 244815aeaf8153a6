/*
 * superbatch.h — the superbatch planner of plan/ (Ginex's inspector, without
 * the stage it runs on): it samples the next S training batches exactly as
 * train samples them, keeps them in a superbatch file under a plan
 * directory (or reuses a sound one), and turns their accesses into the
 * Belady plan of a cache of C rows (belady.h), superbatch after superbatch.
 *
 *   sampler (or the superbatch file) ──► trace ──► pl_plan_build ──► plan
 *
 * A superbatch is the next S batches of the plan, cut short before a batch
 * that would take its accesses past max_acc (that batch, already sampled,
 * opens the next superbatch), so the planner's memory stays within its share
 * of the budget whatever the batches' real sizes. Its file,
 * <dir>/sb-<first>.ocsb (<first> = epoch x batches per epoch + batch of its
 * first batch; <dir> is named by the caller from a plan key, which is in
 * the footer):
 *
 *   per batch:  u64 length, then the batch's record (oc_sample_batch_serialize,
 *               with its own CRC), n times
 *   footer, the last 64 bytes (n is known only at the end):
 *     +0   8   magic "OCGXSB1\0"
 *     +8   8   key
 *     +16  8   first iteration
 *     +24  8   n iterations
 *     +32  8   batches per epoch
 *     +40  8   n_nodes
 *     +48  4   version (1)
 *     +52  4   flags: bit 0 = cut short by max_acc
 *     +56  4   reserved, 0
 *     +60  4   CRC-32 of footer bytes [0, 60)
 *
 * It is written to <name>.tmp-<host>-<pid>-<nonce>-<seq> (oc_tmp_name:
 * unique across runs, containers and machines; registered, so an
 * interrupted CLI removes it), fsynced and renamed into place, so a file
 * under its final name is complete, and two runs of one plan (same key, so
 * the same bytes) replacing it at once never mix their writes; a reader
 * keeps the file it opened. It is reused when its footer matches this plan,
 * it holds min(S, batches left) batches (fewer only if it was cut short),
 * its accesses fit max_acc and every record checks out (CRC, epoch and
 * batch numbers, lengths). Otherwise the superbatch is sampled again and the
 * file replaced the same way. Failing to write a plan file (disk full, a
 * read-only plan directory) is not an error: the superbatch is used from
 * memory and the next run samples it again.
 *
 * Place in the data flow: plan (superbatch.c), on sample, io and belady.h;
 * store's ginex runs it on its inspector stage (ginex_inspect.c) and
 * follows the plans (ginex_exec.c), its loader reading each batch back from
 * its file through a pl_sb_reader.
 * Thread-safety: a pl_sb is driven by one thread at a time (the inspector's
 * stage), a pl_sb_reader by another (the loader); a plan belongs to whoever
 * took it last (handed through queues); held and the counters are C11
 * atomics, read by any thread.
 * Ownership: a pl_sb owns its sampler, trace, planner, record buffer and its
 * two plans; the config's graph, options, ids and bitmap are borrowed. A
 * pl_sb_reader owns its open file and record buffer, and borrows the plans.
 */
#ifndef OFFCORE_PLAN_SUPERBATCH_H
#define OFFCORE_PLAN_SUPERBATCH_H

#include <stdatomic.h>
#include <stdint.h>

#include "offcore/sample.h"
#include "plan/belady.h"

#define PL_SB_FOOTER 64u /* footer bytes at the end of a superbatch file */

/*
 * A superbatch's Belady plan (warm-up reads, per batch the changes) and
 * where its batches can be read back, with the planner's result for it.
 */
struct pl_sb_plan {
    struct pl_plan b; /* the changesets, built by pl_plan_build */
    /*
     * The superbatch file, complete under its final name ("" when it could
     * not be written), and the offset of each batch's length prefix in it.
     */
    char sb_path[4200];
    uint64_t *rec_off; /* n_iters */
    uint64_t cap_rec_off;
    /* The planner's result for this plan: OC_OK, or why it could not be made. */
    int status;
    struct oc_err err;
};

void pl_sb_plan_init(struct pl_sb_plan *p);
void pl_sb_plan_deinit(struct pl_sb_plan *p);
uint64_t pl_sb_plan_held_bytes(const struct pl_sb_plan *p);
/* Grows p->rec_off to n entries. */
int pl_sb_plan_reserve_offsets(struct pl_sb_plan *p, uint64_t n, struct oc_err *err);
/* Grows *rec (*cap_rec bytes) to hold bytes, by a quarter at least. */
int pl_sb_rec_reserve(uint8_t **rec, uint64_t *cap_rec, uint64_t bytes, struct oc_err *err);

/* ---- superbatch files ----------------------------------------------------- */

/* What a superbatch file must hold to be reused. */
struct pl_sb_expect {
    uint64_t key;      /* plan key (topology, sampling options, batch size, training ids) */
    uint64_t first;    /* its first iteration */
    uint64_t most;     /* batches it must hold (fewer only if cut short) */
    uint64_t nb;       /* batches per epoch */
    uint64_t n_nodes;  /* ids are below this */
    uint64_t max_acc;  /* accesses this run's budget holds */
    uint32_t n_layers; /* of every batch */
};

/* Reads len bytes at off of the file being checked. */
typedef int (*pl_sb_read_fn)(void *ctx, void *buf, size_t len, uint64_t off, struct oc_err *err);

/* The footer of a file of n batches from x->first (flags bit 0: cut short by max_acc). */
void pl_sb_footer(const struct pl_sb_expect *x, uint64_t n, uint32_t flags,
                  uint8_t f[PL_SB_FOOTER]);
/*
 * Checks a superbatch file of size bytes read through rd: footer, then every
 * record (length, sample-batch record, epoch and batch numbers, layers,
 * accesses), adding each batch's input ids to trace (cleared first by the
 * caller). Record bytes go through *rec (grown as needed, *cap_rec bytes),
 * batches through *batch; rec_off (may be NULL; x->most entries) gets the
 * offset of each batch's length prefix. OC_OK: *n_iters batches were added. OC_ERR_FORMAT:
 * not usable, why (why_n bytes) or err says why. Other statuses (out of
 * memory, I/O) are returned as they are. The fuzz target
 * tests/fuzz/fuzz_ginex_superbatch.c calls it on memory.
 */
int pl_sb_parse(const struct pl_sb_expect *x, pl_sb_read_fn rd, void *ctx, uint64_t size,
                uint8_t **rec, uint64_t *cap_rec, struct oc_sample_batch *batch,
                struct pl_trace *trace, uint64_t *rec_off, uint64_t *n_iters, char *why,
                size_t why_n, struct oc_err *err);

/* Iteration t is one of plan p's batches (p may be NULL: no plan). */
static inline int pl_sb_plan_holds(const struct pl_sb_plan *p, uint64_t t)
{
    return p && t >= p->b.first_iter && t - p->b.first_iter < p->b.n_iters;
}

/*
 * Batches read back from their plans' superbatch files one at a time (the
 * executor's loader, after pl_sb_fill wrote and checked them): the file of
 * the plan being read stays open until a batch of another plan, or of the
 * same plan refilled with a later superbatch, is asked for. One thread.
 */
struct pl_sb_reader {
    const char *who;               /* names the caller in errors and logs ("store ginex") */
    struct oc_file *file;          /* the current plan's file, or NULL (none, or unreadable) */
    uint64_t bytes;                /* its size when opened */
    const struct pl_sb_plan *plan; /* the plan file belongs to, and its first iteration */
    uint64_t first;
    uint8_t *rec; /* one batch's record */
    uint64_t cap_rec;
};

void pl_sb_reader_init(struct pl_sb_reader *r, const char *who);
void pl_sb_reader_deinit(struct pl_sb_reader *r);
/*
 * Makes p's superbatch file the one read, opening it when p is not the plan
 * read last; 0 when p has none or it cannot be opened (logged as a warning:
 * its batches must be sampled again), else 1.
 */
int pl_sb_reader_use(struct pl_sb_reader *r, const struct pl_sb_plan *p);
/*
 * Reads batch `it` of plan p (after pl_sb_reader_use(r, p) returned 1) into
 * out, its ids below n_nodes; OC_ERR_FORMAT naming the file and offset when
 * the record runs past the file or is not (epoch, batch).
 */
int pl_sb_reader_read(struct pl_sb_reader *r, const struct pl_sb_plan *p, uint64_t it,
                      uint64_t epoch, uint64_t batch, uint64_t n_nodes, struct oc_sample_batch *out,
                      struct oc_err *err);

/* ---- the planner ----------------------------------------------------------- */

/* What the planner samples and plans, read at open. */
struct pl_sb_config {
    const char *who;              /* names the caller in errors and logs ("store ginex") */
    const struct oc_graph *graph; /* the plan's batches are sampled on it */
    const struct oc_sample_opts *so;
    struct oc_pool *pool; /* its sampler's (NULL: the calling thread alone) */
    const uint64_t *train_ids;
    uint64_t n_train, batch_size;
    uint64_t n_nodes;           /* ids are below this */
    const uint64_t *indptr;     /* in-degrees for the planner's ties (borrowed; may be NULL) */
    uint64_t nb;                /* batches per epoch */
    uint64_t t0, t_end;         /* plan iterations [t0, t_end) */
    uint64_t superbatch;        /* S: most batches per superbatch */
    uint64_t max_acc;           /* most accesses per superbatch (one batch always fits) */
    uint64_t capacity;          /* C */
    const uint8_t *static_bits; /* the degree-ranked cache of C rows (borrowed, may be NULL) */
    const char *dir;            /* where files and spills go ("" = nowhere: RAM) */
    uint64_t key;               /* the plan key in the files' footers */
    int misses;                 /* plans carry their miss bitmaps */
    /* optional hooks: the ids the cache is gathered with for a batch (NULL: its input ids,
       oc_store_accesses's `of`), called with accesses_ctx; whether to stop between batches
       (nonzero: OC_ERR_CANCELLED); after each sampling, the sampler (its topology figures) */
    int (*accesses)(void *ctx, const struct oc_sample_batch *b, uint64_t **ids, uint64_t *cap,
                    uint64_t *n, struct oc_err *err);
    void *accesses_ctx;
    int (*cancelled)(void *ctx);
    void (*sampled)(void *ctx, const struct oc_sampler *smp);
    void *ctx;
};

/* The planner's state; its two plans circulate between it and the executor. */
struct pl_sb {
    struct pl_sb_config c;
    struct oc_sample_opts so; /* c.so points here */
    char dir[4096];           /* "" = do not persist */
    uint64_t next_first;      /* first iteration of the next superbatch */
    int pending;              /* it.batch holds iteration next_first, sampled but cut off */
    struct oc_sample_iter it;
    uint64_t *acc, cap_acc; /* it.batch's accesses, with the accesses hook */
    uint8_t *rec;
    uint64_t cap_rec;
    struct pl_trace trace;
    struct pl_planner planner;
    struct pl_sb_plan plans[2];
    atomic_uint_fast64_t held, n_reused, n_sampled;
    atomic_uint_fast64_t n_batches_sampled; /* batches its sampler sampled */
    atomic_uint_fast64_t sample_us;         /* and the time it took */
    atomic_uint_fast64_t build_us;          /* time in pl_plan_build */
};

/*
 * Bytes the planner holds besides the trace and changes per access and the
 * planner's per-slot figures: itself, its sampler and one batch of up to
 * `rows` inputs of n_layers layers, the record buffer, the file writer, the
 * planner's per-batch entries and per-node next-use array, per-batch arrays
 * of S batches, the spills' write buffers.
 */
uint64_t pl_sb_fixed_bytes(uint64_t superbatch, uint64_t rows, uint32_t n_layers, uint64_t n_nodes);
/*
 * Opens the planner over c (copied; what it points to is borrowed): its
 * sampler, planner and trace; with c->dir the trace, the next uses and the
 * changesets are spilled to unlinked scratch files there. On failure sb
 * holds what was made (pl_sb_close it).
 */
int pl_sb_open(struct pl_sb *sb, const struct pl_sb_config *c, struct oc_err *err);
void pl_sb_close(struct pl_sb *sb);
/* Every superbatch of the plan has been planned. */
int pl_sb_finished(const struct pl_sb *sb);
/*
 * Fills plan p (one of sb->plans) with the next superbatch: its batches from
 * its file if sound, else sampled (and written), then the Belady plan.
 */
int pl_sb_fill(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err);
/* Memory held (any thread). */
uint64_t pl_sb_held_bytes(const struct pl_sb *sb);

#endif
