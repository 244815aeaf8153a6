/*
 * ginex_inspect.c — the inspector of the `ginex` strategy: a pipeline stage
 * (one thread, on the store's pipeline: the training pipeline in a run) that
 * samples superbatch k+1 (S consecutive training batches, exactly as train
 * samples them) while the executor runs superbatch k, persists the sampled
 * batches under the plan directory, and turns their input ids into the plan
 * (plan/belady.c).
 *
 * Place in the data flow: store; graph ──► its own sampler ──► superbatch
 * file + trace ──► planner ──► plan ──► executor (ginex.c), through two
 * bounded queues (to_fill: empty plans to fill, in superbatch order; done:
 * filled plans), with exactly two plans in circulation.
 * Thread-safety: the stage's thread owns the sampler (in RAM pool-less: it
 * never competes for the training pool; over an on-disk topology on the
 * STORE_DISK_SAMPLERS threads of the pipeline's pool that store_sampler_pool
 * gives, which only this stage drives, so several neighbor-list reads are in
 * flight; the batches are the same), epoch, batch, trace, planner and record
 * buffer; a plan belongs to whichever side popped it last. held and the
 * counters are C11 atomics; cancellation is the pipeline's. Lock order: none
 * held across calls (each queue locks only inside its own calls).
 * Ownership: the inspector owns everything above; the queues and the thread
 * are the pipeline's (the registry joins it before the store's free); the
 * graph, the dataset and the static bitmap are borrowed from the store.
 *
 * A superbatch is the next S batches of the plan, cut short before a batch
 * that would take its accesses past max_acc (that batch, already sampled,
 * opens the next superbatch), so the inspector's memory stays within its
 * share of the budget whatever the batches' real sizes. Its file,
 * PLAN/ginex-<key>/sb-<first>.ocsb (PLAN: --plan-dir, default DIR/plan;
 * key: FNV-1a of the dataset's topology checksums, the sampling options,
 * the batch size and the training ids; <first> = epoch x batches per epoch
 * + batch of its first batch):
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
 * file replaced the same way. Temporaries of runs that are over are removed
 * at start (oc_tmp_clean_stale); others are never read. Failing to write a
 * plan file (disk full, a read-only plan directory) is not an error: the
 * superbatch is used from memory and the next run samples it again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/ginex/ginex_int.h"

#define SB_MAGIC       "OCGXSB1"
#define SB_VERSION     1u
#define SB_FOOTER      64u
#define SB_FLAG_CUT    1u
#define SB_WRITE_BYTES (256u << 10) /* writer buffer */
#define SB_MAX_RECORD  (1ull << 40) /* a length past this is corruption, not a batch */

struct gx_inspector {
    const struct oc_store *s;
    const struct oc_graph *graph;
    struct oc_sample_opts so;
    uint64_t batch_size, n_nodes;
    uint64_t nb, t0, t_end, S, max_acc;
    uint64_t next_first; /* inspector side: first iteration of the next superbatch */
    int pending;         /* batch holds iteration next_first, sampled but cut off */
    uint64_t key;
    char dir[4096];           /* "" = do not persist */
    struct oc_sample_iter it; /* the plan's sampler; it.batch: the batch being placed */
    /* its sampler's topology reads added to the store's (store_topo_add) */
    struct oc_topo_disk_stats topo_seen;
    const struct oc_store_accesses *accesses; /* the store's ids per batch (may be NULL) */
    uint64_t *acc, cap_acc;                   /* it.batch's accesses, with accesses */
    uint8_t *rec;
    uint64_t cap_rec;
    struct pl_trace trace;
    struct pl_planner planner;
    struct gx_plan plans[2];
    struct oc_pipeline *p; /* the store's stages (store_stages) */
    struct oc_queue *to_fill, *done;
    atomic_uint_fast64_t held, n_reused, n_sampled;
    atomic_uint_fast64_t n_batches_sampled; /* batches its sampler sampled */
    atomic_uint_fast64_t sample_us;         /* and the time it took */
    atomic_uint_fast64_t build_us;          /* time in pl_plan_build */
};

/* ---- sizes ----------------------------------------------------------------- */

uint64_t gx_inspector_fixed_bytes(uint64_t S, uint64_t rows, uint32_t n_layers, uint64_t n_nodes)
{
    /* sampler: id map, sampled ids and the batch, at most ~96 bytes per input row */
    uint64_t sampler = rows * 96 + (64u << 10);
    uint64_t record = rows * (16 + 8 * (uint64_t)n_layers) * 5 / 4 + 4096;
    /* planner: a batch of candidate entries (and their map) and its ids, next uses, entries
       (at least 1024 rows) */
    uint64_t batch = (rows > 1024 ? rows : 1024) * (25 + 16 + 24) * 5 / 4;
    /* per batch: trace offsets, plan offsets and counts (two plans), buckets */
    uint64_t per_iter = (S + 2) * (8 + 2 * (16 + sizeof(struct pl_counts)) + 4) * 5 / 4 + 64 * 4;
    /* the spills' write buffers (trace, next uses, two changesets) */
    uint64_t spills = 4 * (uint64_t)PL_SPILL_BUF_BYTES;
    return sizeof(struct gx_inspector) + sampler + record + batch + per_iter + spills +
           SB_WRITE_BYTES + OC_IO_ALIGN + pl_planner_fixed_bytes(0, n_nodes, 0);
}

static void update_held(struct gx_inspector *in)
{
    const struct oc_sample_batch *b = &in->it.batch;
    uint64_t h = sizeof(*in) + in->cap_rec + pl_trace_held_bytes(&in->trace) +
                 pl_planner_held_bytes(&in->planner) + gx_plan_held_bytes(&in->plans[0]) +
                 gx_plan_held_bytes(&in->plans[1]) + b->cap_input * sizeof(uint64_t) +
                 in->cap_acc * sizeof(uint64_t);
    for (uint32_t l = 0; l < OC_SAMPLE_MAX_LAYERS; l++)
        h += b->blocks[l].cap_indptr * sizeof(uint64_t) + b->blocks[l].cap_indices * 4;
    atomic_store(&in->held, h);
}

uint64_t gx_inspector_sampled_batches(const struct gx_inspector *in)
{
    return in ? atomic_load(&((struct gx_inspector *)in)->n_batches_sampled) : 0;
}

void gx_inspector_times(const struct gx_inspector *in, uint64_t *sample_us, uint64_t *build_us)
{
    struct gx_inspector *m = (struct gx_inspector *)in;
    *sample_us = m ? atomic_load(&m->sample_us) : 0;
    *build_us = m ? atomic_load(&m->build_us) : 0;
}

uint64_t gx_inspector_held_bytes(const struct gx_inspector *in)
{
    return in ? atomic_load(&((struct gx_inspector *)in)->held) : 0;
}

const char *gx_inspector_dir(const struct gx_inspector *in)
{
    return in ? in->dir : "";
}

void gx_inspector_counts(const struct gx_inspector *in, uint64_t *reused, uint64_t *sampled)
{
    struct gx_inspector *m = (struct gx_inspector *)in;
    *reused = m ? atomic_load(&m->n_reused) : 0;
    *sampled = m ? atomic_load(&m->n_sampled) : 0;
}

/* ---- plan key and files ------------------------------------------------------ */

void gx_sb_footer(const struct gx_sb_expect *x, uint64_t n, uint32_t flags, uint8_t f[SB_FOOTER])
{
    memset(f, 0, SB_FOOTER);
    memcpy(f, SB_MAGIC, 8);
    oc_put_le64(f + 8, x->key);
    oc_put_le64(f + 16, x->first);
    oc_put_le64(f + 24, n);
    oc_put_le64(f + 32, x->nb);
    oc_put_le64(f + 40, x->n_nodes);
    f[48] = (uint8_t)SB_VERSION;
    f[52] = (uint8_t)flags;
    uint32_t crc = oc_crc32(0, f, 60);
    for (int i = 0; i < 4; i++)
        f[60 + i] = (uint8_t)(crc >> (8 * i));
}

/* What the superbatch starting at first must be, for this inspector. */
static struct gx_sb_expect sb_expect(const struct gx_inspector *in, uint64_t first)
{
    uint64_t most = in->t_end - first < in->S ? in->t_end - first : in->S;
    return (struct gx_sb_expect){in->key,     first,       most,           in->nb,
                                 in->n_nodes, in->max_acc, in->so.n_layers};
}

static void sb_footer(const struct gx_inspector *in, uint64_t first, uint64_t n, uint32_t flags,
                      uint8_t f[SB_FOOTER])
{
    struct gx_sb_expect x = sb_expect(in, first);
    gx_sb_footer(&x, n, flags, f);
}

static int sb_path(const struct gx_inspector *in, uint64_t first, char *buf, size_t n,
                   struct oc_err *err)
{
    int w = snprintf(buf, n, "%s/sb-%" PRIu64 ".ocsb", in->dir, first);
    if (w < 0 || (size_t)w >= n)
        return OC_ERR(err, OC_ERR_ARG, "store ginex: plan path under %s is too long", in->dir);
    return OC_OK;
}

/* ---- a superbatch's plan ------------------------------------------------------ */

void gx_plan_init(struct gx_plan *p)
{
    memset(p, 0, sizeof(*p));
    pl_plan_init(&p->b);
}

void gx_plan_deinit(struct gx_plan *p)
{
    oc_free(p->rec_off);
    pl_plan_deinit(&p->b);
    gx_plan_init(p);
}

uint64_t gx_plan_held_bytes(const struct gx_plan *p)
{
    return pl_plan_held_bytes(&p->b) + p->cap_rec_off * sizeof(uint64_t);
}

int gx_plan_reserve_offsets(struct gx_plan *p, uint64_t n, struct oc_err *err)
{
    if (n <= p->cap_rec_off)
        return OC_OK;
    uint64_t *o = oc_realloc(p->rec_off, n * sizeof(uint64_t), "store ginex: plan", err);
    if (!o)
        return err ? err->status : OC_ERR_NOMEM;
    p->rec_off = o;
    p->cap_rec_off = n;
    return OC_OK;
}

int gx_rec_reserve(uint8_t **rec, uint64_t *cap_rec, uint64_t bytes, struct oc_err *err)
{
    if (bytes <= *cap_rec)
        return OC_OK;
    uint64_t c = *cap_rec + *cap_rec / 4;
    if (c < bytes)
        c = bytes;
    uint8_t *p = oc_realloc(*rec, (size_t)c, "store ginex: batch record buffer", err);
    if (!p)
        return err ? err->status : OC_ERR_NOMEM;
    *rec = p;
    *cap_rec = c;
    return OC_OK;
}

int gx_sb_parse(const struct gx_sb_expect *x, gx_sb_read_fn rd, void *ctx, uint64_t size,
                uint8_t **rec, uint64_t *cap_rec, struct oc_sample_batch *batch,
                struct pl_trace *trace, uint64_t *rec_off, uint64_t *n_iters, char *why,
                size_t why_n, struct oc_err *err)
{
    uint8_t foot[SB_FOOTER], want[SB_FOOTER], lenb[8];
    uint64_t off = 0, n = 0;
    int rc;

    *n_iters = 0;
    why[0] = '\0';
    if (size < SB_FOOTER) {
        snprintf(why, why_n, "%" PRIu64 " bytes, shorter than its footer", size);
        return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
    }
    if ((rc = rd(ctx, foot, SB_FOOTER, size - SB_FOOTER, err)))
        return rc;
    n = oc_get_le64(foot + 24);
    uint32_t flags = foot[52];
    gx_sb_footer(x, n, flags, want);
    if (memcmp(foot, want, SB_FOOTER) != 0 || n == 0 || n > x->most ||
        (n < x->most && !(flags & SB_FLAG_CUT))) {
        snprintf(why, why_n, "footer does not match this plan");
        return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
    }
    size -= SB_FOOTER;
    for (uint64_t it = 0; it < n; it++) {
        uint64_t t = x->first + it;
        if (off + 8 > size) {
            snprintf(why, why_n, "ends after %" PRIu64 " batches", it);
            return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
        }
        if ((rc = rd(ctx, lenb, 8, off, err)))
            return rc;
        if (rec_off)
            rec_off[it] = off;
        uint64_t len = oc_get_le64(lenb);
        off += 8;
        if (len > size - off || len > SB_MAX_RECORD) {
            snprintf(why, why_n, "batch %" PRIu64 " length %" PRIu64 " past the end", it, len);
            return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
        }
        if ((rc = gx_rec_reserve(rec, cap_rec, len, err)))
            return rc;
        if ((rc = rd(ctx, *rec, (size_t)len, off, err)) ||
            (rc = oc_sample_batch_deserialize(*rec, (size_t)len, x->n_nodes, batch, err)))
            return rc;
        off += len;
        if (batch->epoch != t / x->nb || batch->batch_index != t % x->nb ||
            batch->n_layers != x->n_layers) {
            snprintf(why, why_n, "batch %" PRIu64 " is not epoch %" PRIu64 " batch %" PRIu64, it,
                     t / x->nb, t % x->nb);
            return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
        }
        if (it > 0 && trace->n_acc + batch->n_input > x->max_acc) {
            snprintf(why, why_n, "more accesses than this run's budget holds");
            return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
        }
        if ((rc = pl_trace_add_iter(trace, batch->input_ids, batch->n_input, err)))
            return rc;
    }
    if (off != size) {
        snprintf(why, why_n, "%" PRIu64 " bytes between the batches and the footer", size - off);
        return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
    }
    *n_iters = n;
    return OC_OK;
}

static int sb_read_file(void *ctx, void *buf, size_t len, uint64_t off, struct oc_err *err)
{
    return oc_file_pread(ctx, buf, len, off, err);
}

/*
 * Fills the trace and p from the file of the superbatch starting at
 * next_first if it is there and sound. Returns 1 if it did; 0 (trace empty)
 * if there is no usable file; a negative status for what must not be hidden
 * (out of memory).
 */
static int sb_reuse(struct gx_inspector *in, struct gx_plan *p, struct oc_err *err)
{
    char path[4200], why[sizeof(((struct oc_err *)0)->msg)];
    struct oc_file *f = NULL;
    struct oc_err e;
    uint64_t size = 0, first = in->next_first, n = 0;
    int rc;

    if (!in->dir[0] || sb_path(in, first, path, sizeof(path), &e))
        return 0;
    if (oc_file_open(path, OC_FILE_READ, &f, &e))
        return 0;
    why[0] = '\0';
    struct gx_sb_expect x = sb_expect(in, first);
    if ((rc = gx_plan_reserve_offsets(p, x.most, &e)) == OC_OK &&
        (rc = oc_file_size(f, &size, &e)) == OC_OK)
        rc = gx_sb_parse(&x, sb_read_file, f, size, &in->rec, &in->cap_rec, &in->it.batch,
                         &in->trace, p->rec_off, &n, why, sizeof(why), &e);
    oc_file_close(f, NULL);
    if (rc == OC_OK) {
        p->b.first_iter = first;
        p->b.n_iters = n;
        snprintf(p->sb_path, sizeof(p->sb_path), "%s", path);
        in->pending = 0; /* a batch cut off before is in the file */
        return 1;
    }
    pl_trace_clear(&in->trace);
    in->pending = 0; /* in->it.batch was overwritten */
    if (rc == OC_ERR_NOMEM || rc == OC_ERR_BUDGET) {
        if (err)
            *err = e;
        return rc;
    }
    oc_log(OC_LOG_WARN, "store ginex: not trusting %s (%s); sampling it again", path,
           why[0] ? why : e.msg);
    return 0;
}

/* A writer that failed: the plan file is dropped (not an error: the plan stays in memory). */
static void sb_drop(struct oc_writer **w, const char *tmp, const struct oc_err *e)
{
    oc_writer_abort(*w);
    *w = NULL;
    unlink(tmp);
    oc_tmp_unregister(tmp);
    oc_log(OC_LOG_WARN, "store ginex: cannot write plan file %s (%s); continuing without it", tmp,
           e->msg);
}

/*
 * Samples the superbatch starting at next_first into the trace and p, writing
 * its file when there is a plan directory: up to S batches, stopping before
 * one that would take the accesses past max_acc (kept as pending).
 */
static int sb_sample(struct gx_inspector *in, struct gx_plan *p, struct oc_err *err)
{
    char path[4200], tmp[4300];
    struct oc_writer *w = NULL;
    struct oc_err e;
    uint8_t foot[SB_FOOTER], lenb[8];
    uint64_t first = in->next_first, it = 0;
    uint64_t most = in->t_end - first < in->S ? in->t_end - first : in->S;
    uint64_t woff = 0; /* bytes written to the file so far */
    uint32_t flags = 0;
    int rc;

    p->sb_path[0] = '\0';
    if ((rc = gx_plan_reserve_offsets(p, most, err)))
        return rc;

    if (in->dir[0] && sb_path(in, first, path, sizeof(path), &e) == OC_OK &&
        oc_tmp_name(tmp, sizeof(tmp), path, &e) == OC_OK) {
        oc_tmp_register(tmp);
        if (oc_writer_open(tmp, SB_WRITE_BYTES, &w, &e) != OC_OK) {
            oc_log(OC_LOG_WARN, "store ginex: cannot create plan file %s (%s)", tmp, e.msg);
            oc_tmp_unregister(tmp);
        }
    }
    for (; it < most; it++) {
        uint64_t t = first + it, e_ix = t / in->nb, b_ix = t % in->nb;
        if (oc_pipeline_cancelled(in->p)) {
            rc = OC_ERR(err, OC_ERR_CANCELLED, "store ginex: inspector stopped");
            goto out;
        }
        if (!in->pending) {
            double t_s = oc_now_s();
            rc = oc_sample_iter_sample(&in->it, e_ix, b_ix, &in->it.batch, err);
            store_topo_add(in->s, in->it.sampler, &in->topo_seen); /* the run's topology */
            atomic_fetch_add(&in->sample_us, (uint64_t)((oc_now_s() - t_s) * 1e6));
            if (rc) {
                oc_err_prefix(err, "store ginex: inspecting epoch %" PRIu64 " batch %" PRIu64, e_ix,
                              b_ix);
                goto out;
            }
            atomic_fetch_add(&in->n_batches_sampled, 1);
        }
        in->pending = 0;
        /* the ids the store is gathered with for the batch: its input ids, or the map's */
        const uint64_t *acc = in->it.batch.input_ids;
        uint64_t n_acc = in->it.batch.n_input;
        if (in->accesses) {
            if ((rc = in->accesses->of(in->accesses->ctx, &in->it.batch, &in->acc, &in->cap_acc,
                                       &n_acc, err))) {
                oc_err_prefix(err, "store ginex: epoch %" PRIu64 " batch %" PRIu64, e_ix, b_ix);
                goto out;
            }
            acc = in->acc;
        }
        if (it > 0 && in->trace.n_acc + n_acc > in->max_acc) {
            in->pending = 1; /* opens the next superbatch */
            flags |= SB_FLAG_CUT;
            break;
        }
        if ((rc = pl_trace_add_iter(&in->trace, acc, n_acc, err))) {
            oc_err_prefix(err, "store ginex: epoch %" PRIu64 " batch %" PRIu64, e_ix, b_ix);
            goto out;
        }
        if (!w)
            continue;
        uint64_t len = oc_sample_batch_record_bytes(&in->it.batch);
        size_t got = 0;
        if ((rc = gx_rec_reserve(&in->rec, &in->cap_rec, len, err)))
            goto out;
        oc_put_le64(lenb, len);
        if (oc_sample_batch_serialize(&in->it.batch, in->rec, (size_t)in->cap_rec, &got, &e) ||
            oc_writer_write(w, lenb, 8, &e) || oc_writer_write(w, in->rec, got, &e)) {
            sb_drop(&w, tmp, &e);
            continue;
        }
        p->rec_off[it] = woff;
        woff += 8 + got;
    }
    p->b.first_iter = first;
    p->b.n_iters = it;
    rc = OC_OK;
    if (w) {
        sb_footer(in, first, it, flags, foot);
        int wrc = oc_writer_write(w, foot, SB_FOOTER, &e);
        if (wrc == OC_OK)
            wrc = oc_writer_close(w, &e);
        else
            oc_writer_abort(w);
        w = NULL;
        if (wrc == OC_OK)
            wrc = oc_rename_durable(tmp, path, &e);
        if (wrc) {
            unlink(tmp);
            oc_log(OC_LOG_WARN, "store ginex: cannot write plan file %s (%s)", path, e.msg);
        } else {
            snprintf(p->sb_path, sizeof(p->sb_path), "%s", path);
        }
        oc_tmp_unregister(tmp);
    }
out:
    if (w) {
        oc_writer_abort(w);
        unlink(tmp);
        oc_tmp_unregister(tmp);
    }
    return rc;
}

/* Fills the trace and p with the superbatch at next_first: from its file if sound, else sampled. */
static int fill_trace(struct gx_inspector *in, struct gx_plan *p, int may_reuse, int *reused,
                      struct oc_err *err)
{
    pl_trace_clear(&in->trace);
    int rc = may_reuse ? sb_reuse(in, p, err) : 0;
    *reused = rc == 1;
    if (rc < 0)
        return rc;
    if (rc == 0 && (rc = sb_sample(in, p, err)))
        return rc;
    atomic_fetch_add(*reused ? &in->n_reused : &in->n_sampled, 1);
    return OC_OK;
}

/* pl_plan_build, timed. */
static int build_plan(struct gx_inspector *in, struct gx_plan *p, struct oc_err *err)
{
    double t0 = oc_now_s();
    int rc = pl_plan_build(&in->planner, &in->trace, &p->b, err);
    atomic_fetch_add(&in->build_us, (uint64_t)((oc_now_s() - t0) * 1e6));
    return rc;
}

/* Fills plan p with the next superbatch: its trace from the file or the sampler, then the plan. */
static int inspect(struct gx_inspector *in, struct gx_plan *p, struct oc_err *err)
{
    uint64_t first = in->next_first;
    int reused = 0;
    int rc = fill_trace(in, p, 1, &reused, err);
    if (rc)
        return rc;
    rc = build_plan(in, p, err);
    if (rc == OC_ERR_FORMAT && reused) {
        /* the file passed its checksums but not the planner's (an id repeated in a batch):
           not trusted; the planner's cache is untouched by a failed build */
        oc_log(OC_LOG_WARN, "store ginex: not trusting %s (%s); sampling it again", p->sb_path,
               err ? err->msg : "");
        in->next_first = first;
        if ((rc = fill_trace(in, p, 0, &reused, err)))
            return rc;
        rc = build_plan(in, p, err);
    }
    in->next_first = p->b.first_iter + p->b.n_iters;
    if (rc)
        oc_err_prefix(err, "store ginex: planning batches %" PRIu64 "..%" PRIu64, p->b.first_iter,
                      p->b.first_iter + p->b.n_iters - 1);
    return rc;
}

/* The inspector stage: fills each plan it is given and hands it on, its error with it. */
static int inspector_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct gx_inspector *in = ctx;
    struct gx_plan *p = item;
    (void)err; /* a superbatch's error travels with its plan, to the executor, in order */
    if (in->next_first >= in->t_end)
        return OC_OK; /* the plan is done: the plan stays idle */
    oc_err_clear(&p->err);
    p->status = inspect(in, p, &p->err);
    update_held(in);
    return oc_stage_push(st, in->done, p);
}

/* ---- life cycle ------------------------------------------------------------------ */

int gx_plan_dir(const struct oc_store *s, const struct oc_store_config *cfg, char *dir, size_t n,
                uint64_t *key)
{
    dir[0] = '\0';
    *key = 0;
    if (!cfg->plan_dir)
        return 0;
    *key = store_plan_key(s, cfg, "offcore ginex plan v1", 0);
    int w = snprintf(dir, n, "%s/ginex-%016" PRIx64, cfg->plan_dir, *key);
    struct oc_err e;
    int owned; /* marked as offcore's: only then are its unmarked stale files removed */
    oc_err_clear(&e);
    if (w < 0 || (size_t)w >= n - 64) {
        dir[0] = '\0';
        oc_log(OC_LOG_WARN, "store ginex: plan directory %s: path too long; not persisting",
               cfg->plan_dir);
    } else if (oc_dir_make_owned(dir, &owned, &e) != OC_OK || access(dir, W_OK) != 0) {
        oc_log(OC_LOG_WARN,
               "store ginex: %s%s; superbatches stay in memory (--plan-dir DIR puts them "
               "elsewhere)",
               e.status ? e.msg : dir, e.status ? "" : ": not writable");
        dir[0] = '\0';
    } else {
        oc_tmp_clean_stale(dir, NULL, NULL, NULL);
    }
    return dir[0] != '\0';
}

int gx_inspector_new(struct oc_store *s, const struct gx_inspect_config *ic,
                     struct gx_inspector **out, struct oc_err *err)
{
    const struct oc_store_config *cfg = ic->cfg;
    int rc;

    *out = NULL;
    struct gx_inspector *in = oc_calloc(1, sizeof(*in), "store ginex: inspector", err);
    if (!in)
        return err ? err->status : OC_ERR_NOMEM;
    in->s = s;
    in->graph = store_plan_graph(cfg);
    in->accesses = cfg->accesses;
    in->so = *cfg->sample_opts;
    in->batch_size = cfg->batch_size;
    in->n_nodes = s->n_nodes;
    in->nb = ic->n_batches;
    in->t0 = ic->t0;
    in->t_end = ic->t_end;
    in->S = ic->superbatch;
    in->max_acc = ic->max_acc;
    in->next_first = ic->t0;
    pl_trace_init(&in->trace, s->n_nodes);
    gx_plan_init(&in->plans[0]);
    gx_plan_init(&in->plans[1]);
    in->plans[0].b.with_miss = in->plans[1].b.with_miss = ic->misses;
    atomic_init(&in->held, 0);
    atomic_init(&in->n_reused, 0);
    atomic_init(&in->n_sampled, 0);
    atomic_init(&in->n_batches_sampled, 0);
    atomic_init(&in->sample_us, 0);
    atomic_init(&in->build_us, 0);
    *out = in;
    if ((rc = pl_planner_init(&in->planner, ic->capacity, s->n_nodes, cfg->graph->indptr, 1,
                              ic->static_bits, err)))
        return rc;
    struct oc_pool *pool; /* over an on-disk topology: sampling waits on its reads */
    if ((rc = store_stages(s, &in->p, err)) ||
        (rc = store_sampler_pool(in->p, in->graph, &pool, err)) ||
        (rc = oc_sample_iter_open(&in->it, in->graph, &in->so, pool, cfg->train_ids, cfg->n_train,
                                  cfg->batch_size, err)))
        return rc;
    in->key = ic->key;
    snprintf(in->dir, sizeof(in->dir), "%s", ic->dir);
    if (in->dir[0] &&
        ((rc = pl_spill_to_file(&in->trace.ids, in->dir, "trace", err)) ||
         (rc = pl_planner_spill_to(&in->planner, in->dir, err)) ||
         (rc = pl_spill_to_file(&in->plans[0].b.chg, in->dir, "changes", err)) ||
         (rc = pl_spill_to_file(&in->plans[1].b.chg, in->dir, "changes", err)) ||
         (ic->misses && ((rc = pl_spill_to_file(&in->plans[0].b.miss, in->dir, "misses", err)) ||
                         (rc = pl_spill_to_file(&in->plans[1].b.miss, in->dir, "misses", err))))))
        return oc_err_prefix(err, "store ginex: superbatch scratch under %s", in->dir);
    if ((rc = oc_pipeline_queue(in->p, 2, &in->to_fill, err)) ||
        (rc = oc_pipeline_queue(in->p, 2, &in->done, err)))
        return rc;
    oc_queue_push(in->to_fill, &in->plans[0]);
    oc_queue_push(in->to_fill, &in->plans[1]);
    update_held(in);
    if ((rc = oc_pipeline_stage(in->p, "ginex inspector", 1, in->to_fill, inspector_stage, in, NULL,
                                err)) ||
        (rc = oc_pipeline_start(in->p, err)))
        return rc;
    return OC_OK;
}

void gx_inspector_free(struct gx_inspector *in)
{
    if (!in)
        return;
    /* its stage was joined (store.h: the registry joins the store's stages first) */
    gx_plan_deinit(&in->plans[0]);
    gx_plan_deinit(&in->plans[1]);
    pl_planner_deinit(&in->planner);
    pl_trace_deinit(&in->trace);
    oc_sample_iter_close(&in->it);
    oc_free(in->rec);
    oc_free(in->acc);
    oc_free(in);
}

int gx_inspector_next(struct gx_inspector *in, struct gx_plan **plan, struct oc_err *err)
{
    void *item = NULL;
    *plan = NULL;
    if (oc_queue_pop(in->done, &item) != OC_OK) { /* the pipeline stopped: say why */
        int rc = oc_pipeline_status(in->p, err);
        return rc ? rc : OC_ERR(err, OC_ERR_CANCELLED, "store ginex: the inspector has stopped");
    }
    struct gx_plan *p = item;
    if (p->status) {
        if (err)
            *err = p->err;
        return p->status;
    }
    *plan = p;
    return OC_OK;
}

void gx_inspector_release(struct gx_inspector *in, struct gx_plan *plan)
{
    oc_queue_push(in->to_fill, plan);
}
