/*
 * superbatch.c — the superbatch planner (superbatch.h): a superbatch's
 * batches sampled (and written to its file) or read back from a sound file,
 * their accesses traced, and the Belady plan built from the trace
 * (belady.c); the file format is drawn in superbatch.h.
 *
 * Place in the data flow: plan; sampler ──► superbatch file + trace ──►
 * pl_plan_build ──► plan, driven by store's ginex inspector stage; the
 * file ──► pl_sb_reader ──► batch, for ginex's loader.
 * Thread-safety: one thread drives a pl_sb (the counters are atomics), one
 * a pl_sb_reader.
 * Ownership: the pl_sb owns what it allocates (pl_sb_close frees it), a
 * pl_sb_reader its file and record (pl_sb_reader_deinit); the config's
 * pointers are borrowed.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plan/superbatch.h"

#define SB_MAGIC       "OCGXSB1"
#define SB_VERSION     1u
#define SB_FLAG_CUT    1u
#define SB_WRITE_BYTES (256u << 10) /* writer buffer */
#define SB_MAX_RECORD  (1ull << 40) /* a length past this is corruption, not a batch */

/* ---- sizes ----------------------------------------------------------------- */

uint64_t pl_sb_fixed_bytes(uint64_t S, uint64_t rows, uint32_t n_layers, uint64_t n_nodes)
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
    return sizeof(struct pl_sb) + sampler + record + batch + per_iter + spills + SB_WRITE_BYTES +
           OC_IO_ALIGN + pl_planner_fixed_bytes(0, n_nodes, 0);
}

static void update_held(struct pl_sb *sb)
{
    const struct oc_sample_batch *b = &sb->it.batch;
    uint64_t h = sizeof(*sb) + sb->cap_rec + pl_trace_held_bytes(&sb->trace) +
                 pl_planner_held_bytes(&sb->planner) + pl_sb_plan_held_bytes(&sb->plans[0]) +
                 pl_sb_plan_held_bytes(&sb->plans[1]) + b->cap_input * sizeof(uint64_t) +
                 sb->cap_acc * sizeof(uint64_t);
    for (uint32_t l = 0; l < OC_SAMPLE_MAX_LAYERS; l++)
        h += b->blocks[l].cap_indptr * sizeof(uint64_t) + b->blocks[l].cap_indices * 4;
    atomic_store(&sb->held, h);
}

/* ---- superbatch files ------------------------------------------------------ */

void pl_sb_footer(const struct pl_sb_expect *x, uint64_t n, uint32_t flags, uint8_t f[PL_SB_FOOTER])
{
    memset(f, 0, PL_SB_FOOTER);
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

/* What the superbatch starting at first must be, for this planner. */
static struct pl_sb_expect sb_expect(const struct pl_sb *sb, uint64_t first)
{
    uint64_t most = sb->c.t_end - first < sb->c.superbatch ? sb->c.t_end - first : sb->c.superbatch;
    return (struct pl_sb_expect){
        sb->c.key, first, most, sb->c.nb, sb->c.n_nodes, sb->c.max_acc, sb->c.so->n_layers};
}

static void sb_footer(const struct pl_sb *sb, uint64_t first, uint64_t n, uint32_t flags,
                      uint8_t f[PL_SB_FOOTER])
{
    struct pl_sb_expect x = sb_expect(sb, first);
    pl_sb_footer(&x, n, flags, f);
}

static int sb_path(const struct pl_sb *sb, uint64_t first, char *buf, size_t n, struct oc_err *err)
{
    int w = snprintf(buf, n, "%s/sb-%" PRIu64 ".ocsb", sb->dir, first);
    if (w < 0 || (size_t)w >= n)
        return OC_ERR(err, OC_ERR_ARG, "%s: plan path under %s is too long", sb->c.who, sb->dir);
    return OC_OK;
}

/* ---- a superbatch's plan ------------------------------------------------------ */

void pl_sb_plan_init(struct pl_sb_plan *p)
{
    memset(p, 0, sizeof(*p));
    pl_plan_init(&p->b);
}

void pl_sb_plan_deinit(struct pl_sb_plan *p)
{
    oc_free(p->rec_off);
    pl_plan_deinit(&p->b);
    pl_sb_plan_init(p);
}

uint64_t pl_sb_plan_held_bytes(const struct pl_sb_plan *p)
{
    return pl_plan_held_bytes(&p->b) + p->cap_rec_off * sizeof(uint64_t);
}

int pl_sb_plan_reserve_offsets(struct pl_sb_plan *p, uint64_t n, struct oc_err *err)
{
    return oc_grow_by(&p->rec_off, &p->cap_rec_off, n, sizeof(uint64_t), OC_GROW_EXACT,
                      "superbatch plan: batch offsets", err);
}

int pl_sb_rec_reserve(uint8_t **rec, uint64_t *cap_rec, uint64_t bytes, struct oc_err *err)
{
    return oc_grow_by(rec, cap_rec, bytes, 1, OC_GROW_QUARTER(0),
                      "superbatch plan: batch record buffer", err);
}

int pl_sb_parse(const struct pl_sb_expect *x, pl_sb_read_fn rd, void *ctx, uint64_t size,
                uint8_t **rec, uint64_t *cap_rec, struct oc_sample_batch *batch,
                struct pl_trace *trace, uint64_t *rec_off, uint64_t *n_iters, char *why,
                size_t why_n, struct oc_err *err)
{
    uint8_t foot[PL_SB_FOOTER], want[PL_SB_FOOTER], lenb[8];
    uint64_t off = 0, n = 0;
    int rc;

    *n_iters = 0;
    why[0] = '\0';
    if (size < PL_SB_FOOTER) {
        snprintf(why, why_n, "%" PRIu64 " bytes, shorter than its footer", size);
        return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
    }
    if ((rc = rd(ctx, foot, PL_SB_FOOTER, size - PL_SB_FOOTER, err)))
        return rc;
    n = oc_get_le64(foot + 24);
    uint32_t flags = foot[52];
    pl_sb_footer(x, n, flags, want);
    if (memcmp(foot, want, PL_SB_FOOTER) != 0 || n == 0 || n > x->most ||
        (n < x->most && !(flags & SB_FLAG_CUT))) {
        snprintf(why, why_n, "footer does not match this plan");
        return OC_ERR(err, OC_ERR_FORMAT, "%s", why);
    }
    size -= PL_SB_FOOTER;
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
        if ((rc = pl_sb_rec_reserve(rec, cap_rec, len, err)))
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
static int sb_reuse(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err)
{
    char path[4200], why[sizeof(((struct oc_err *)0)->msg)];
    struct oc_file *f = NULL;
    struct oc_err e;
    uint64_t size = 0, first = sb->next_first, n = 0;
    int rc;

    if (!sb->dir[0] || sb_path(sb, first, path, sizeof(path), &e))
        return 0;
    if (oc_file_open(path, OC_FILE_READ, &f, &e))
        return 0;
    why[0] = '\0';
    struct pl_sb_expect x = sb_expect(sb, first);
    if ((rc = pl_sb_plan_reserve_offsets(p, x.most, &e)) == OC_OK &&
        (rc = oc_file_size(f, &size, &e)) == OC_OK)
        rc = pl_sb_parse(&x, sb_read_file, f, size, &sb->rec, &sb->cap_rec, &sb->it.batch,
                         &sb->trace, p->rec_off, &n, why, sizeof(why), &e);
    oc_file_close(f, NULL);
    if (rc == OC_OK) {
        p->b.first_iter = first;
        p->b.n_iters = n;
        snprintf(p->sb_path, sizeof(p->sb_path), "%s", path);
        sb->pending = 0; /* a batch cut off before is in the file */
        return 1;
    }
    pl_trace_clear(&sb->trace);
    sb->pending = 0; /* sb->it.batch was overwritten */
    if (rc == OC_ERR_NOMEM || rc == OC_ERR_BUDGET) {
        if (err)
            *err = e;
        return rc;
    }
    oc_log(OC_LOG_WARN, "%s: not trusting %s (%s); sampling it again", sb->c.who, path,
           why[0] ? why : e.msg);
    return 0;
}

/* A writer that failed: the plan file is dropped (not an error: the plan stays in memory). */
static void sb_drop(const struct pl_sb *sb, struct oc_writer **w, const char *tmp,
                    const struct oc_err *e)
{
    oc_writer_abort(*w);
    *w = NULL;
    unlink(tmp);
    oc_tmp_unregister(tmp);
    oc_log(OC_LOG_WARN, "%s: cannot write plan file %s (%s); continuing without it", sb->c.who, tmp,
           e->msg);
}

/*
 * Samples the superbatch starting at next_first into the trace and p, writing
 * its file when there is a plan directory: up to S batches, stopping before
 * one that would take the accesses past max_acc (kept as pending).
 */
static int sb_sample(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err)
{
    char path[4200], tmp[4300];
    struct oc_writer *w = NULL;
    struct oc_err e;
    uint8_t foot[PL_SB_FOOTER], lenb[8];
    uint64_t first = sb->next_first, it = 0;
    uint64_t most = sb->c.t_end - first < sb->c.superbatch ? sb->c.t_end - first : sb->c.superbatch;
    uint64_t woff = 0; /* bytes written to the file so far */
    uint32_t flags = 0;
    int rc;

    p->sb_path[0] = '\0';
    if ((rc = pl_sb_plan_reserve_offsets(p, most, err)))
        return rc;

    if (sb->dir[0] && sb_path(sb, first, path, sizeof(path), &e) == OC_OK &&
        oc_tmp_name(tmp, sizeof(tmp), path, &e) == OC_OK) {
        int made = oc_tmp_create(tmp, OC_TMP_FILE, &e) == OC_OK;
        if (!made || oc_writer_open(tmp, SB_WRITE_BYTES, &w, &e) != OC_OK) {
            oc_log(OC_LOG_WARN, "%s: cannot create plan file %s (%s)", sb->c.who, tmp, e.msg);
            if (made) {
                unlink(tmp);
                oc_tmp_unregister(tmp);
            }
        }
    }
    for (; it < most; it++) {
        uint64_t t = first + it, e_ix = t / sb->c.nb, b_ix = t % sb->c.nb;
        if (sb->c.cancelled && sb->c.cancelled(sb->c.ctx)) {
            rc = OC_ERR(err, OC_ERR_CANCELLED, "%s: inspector stopped", sb->c.who);
            goto out;
        }
        if (!sb->pending) {
            double t_s = oc_now_s();
            rc = oc_sample_iter_sample(&sb->it, e_ix, b_ix, &sb->it.batch, err);
            if (sb->c.sampled) /* the run's topology figures */
                sb->c.sampled(sb->c.ctx, sb->it.sampler);
            atomic_fetch_add(&sb->sample_us, (uint64_t)((oc_now_s() - t_s) * 1e6));
            if (rc) {
                oc_err_prefix(err, "%s: inspecting epoch %" PRIu64 " batch %" PRIu64, sb->c.who,
                              e_ix, b_ix);
                goto out;
            }
            atomic_fetch_add(&sb->n_batches_sampled, 1);
        }
        sb->pending = 0;
        /* the ids the store is gathered with for the batch: its input ids, or the map's */
        const uint64_t *acc = sb->it.batch.input_ids;
        uint64_t n_acc = sb->it.batch.n_input;
        if (sb->c.accesses) {
            if ((rc = sb->c.accesses(sb->c.accesses_ctx, &sb->it.batch, &sb->acc, &sb->cap_acc,
                                     &n_acc, err))) {
                oc_err_prefix(err, "%s: epoch %" PRIu64 " batch %" PRIu64, sb->c.who, e_ix, b_ix);
                goto out;
            }
            acc = sb->acc;
        }
        if (it > 0 && sb->trace.n_acc + n_acc > sb->c.max_acc) {
            sb->pending = 1; /* opens the next superbatch */
            flags |= SB_FLAG_CUT;
            break;
        }
        if ((rc = pl_trace_add_iter(&sb->trace, acc, n_acc, err))) {
            oc_err_prefix(err, "%s: epoch %" PRIu64 " batch %" PRIu64, sb->c.who, e_ix, b_ix);
            goto out;
        }
        if (!w)
            continue;
        uint64_t len = oc_sample_batch_record_bytes(&sb->it.batch);
        size_t got = 0;
        if ((rc = pl_sb_rec_reserve(&sb->rec, &sb->cap_rec, len, err)))
            goto out;
        oc_put_le64(lenb, len);
        if (oc_sample_batch_serialize(&sb->it.batch, sb->rec, (size_t)sb->cap_rec, &got, &e) ||
            oc_writer_write(w, lenb, 8, &e) || oc_writer_write(w, sb->rec, got, &e)) {
            sb_drop(sb, &w, tmp, &e);
            continue;
        }
        p->rec_off[it] = woff;
        woff += 8 + got;
    }
    p->b.first_iter = first;
    p->b.n_iters = it;
    rc = OC_OK;
    if (w) {
        sb_footer(sb, first, it, flags, foot);
        int wrc = oc_writer_write(w, foot, PL_SB_FOOTER, &e);
        if (wrc == OC_OK)
            wrc = oc_writer_close(w, &e);
        else
            oc_writer_abort(w);
        w = NULL;
        if (wrc == OC_OK)
            wrc = oc_rename_durable(tmp, path, &e);
        if (wrc) {
            unlink(tmp);
            oc_log(OC_LOG_WARN, "%s: cannot write plan file %s (%s)", sb->c.who, path, e.msg);
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
static int fill_trace(struct pl_sb *sb, struct pl_sb_plan *p, int may_reuse, int *reused,
                      struct oc_err *err)
{
    pl_trace_clear(&sb->trace);
    int rc = may_reuse ? sb_reuse(sb, p, err) : 0;
    *reused = rc == 1;
    if (rc < 0)
        return rc;
    if (rc == 0 && (rc = sb_sample(sb, p, err)))
        return rc;
    atomic_fetch_add(*reused ? &sb->n_reused : &sb->n_sampled, 1);
    return OC_OK;
}

/* pl_plan_build, timed. */
static int build_plan(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err)
{
    double t0 = oc_now_s();
    int rc = pl_plan_build(&sb->planner, &sb->trace, &p->b, err);
    atomic_fetch_add(&sb->build_us, (uint64_t)((oc_now_s() - t0) * 1e6));
    return rc;
}

/* Fills plan p with the next superbatch: its trace from the file or the sampler, then the plan. */
static int inspect(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err)
{
    uint64_t first = sb->next_first;
    int reused = 0;
    int rc = fill_trace(sb, p, 1, &reused, err);
    if (rc)
        return rc;
    rc = build_plan(sb, p, err);
    if (rc == OC_ERR_FORMAT && reused) {
        /* the file passed its checksums but not the planner's (an id repeated in a batch):
           not trusted; the planner's cache is untouched by a failed build */
        oc_log(OC_LOG_WARN, "%s: not trusting %s (%s); sampling it again", sb->c.who, p->sb_path,
               err ? err->msg : "");
        sb->next_first = first;
        if ((rc = fill_trace(sb, p, 0, &reused, err)))
            return rc;
        rc = build_plan(sb, p, err);
    }
    sb->next_first = p->b.first_iter + p->b.n_iters;
    if (rc)
        oc_err_prefix(err, "%s: planning batches %" PRIu64 "..%" PRIu64, sb->c.who, p->b.first_iter,
                      p->b.first_iter + p->b.n_iters - 1);
    return rc;
}

int pl_sb_finished(const struct pl_sb *sb)
{
    return sb->next_first >= sb->c.t_end;
}

int pl_sb_fill(struct pl_sb *sb, struct pl_sb_plan *p, struct oc_err *err)
{
    int rc = inspect(sb, p, err);
    update_held(sb);
    return rc;
}

uint64_t pl_sb_held_bytes(const struct pl_sb *sb)
{
    return atomic_load(&((struct pl_sb *)sb)->held);
}

/* ---- life cycle ------------------------------------------------------------------ */

int pl_sb_open(struct pl_sb *sb, const struct pl_sb_config *c, struct oc_err *err)
{
    int rc;
    memset(sb, 0, sizeof(*sb));
    sb->c = *c;
    sb->so = *c->so; /* the sampler keeps a pointer to its options */
    sb->c.so = &sb->so;
    sb->next_first = c->t0;
    snprintf(sb->dir, sizeof(sb->dir), "%s", c->dir ? c->dir : "");
    sb->c.dir = sb->dir;
    pl_trace_init(&sb->trace, c->n_nodes);
    pl_sb_plan_init(&sb->plans[0]);
    pl_sb_plan_init(&sb->plans[1]);
    sb->plans[0].b.with_miss = sb->plans[1].b.with_miss = c->misses;
    atomic_init(&sb->held, 0);
    atomic_init(&sb->n_reused, 0);
    atomic_init(&sb->n_sampled, 0);
    atomic_init(&sb->n_batches_sampled, 0);
    atomic_init(&sb->sample_us, 0);
    atomic_init(&sb->build_us, 0);
    if ((rc = pl_planner_init(&sb->planner, c->capacity, c->n_nodes, c->indptr, 1, c->static_bits,
                              err)) ||
        (rc = oc_sample_iter_open(&sb->it, c->graph, c->so, c->pool, c->train_ids, c->n_train,
                                  c->batch_size, err)))
        return rc;
    const char *d = sb->dir;
    struct pl_sb_plan *p = sb->plans;
    if (d[0] && ((rc = pl_spill_to_file(&sb->trace.ids, d, "trace", err)) ||
                 (rc = pl_planner_spill_to(&sb->planner, d, err)) ||
                 (rc = pl_spill_to_file(&p[0].b.chg, d, "changes", err)) ||
                 (rc = pl_spill_to_file(&p[1].b.chg, d, "changes", err)) ||
                 (c->misses && ((rc = pl_spill_to_file(&p[0].b.miss, d, "misses", err)) ||
                                (rc = pl_spill_to_file(&p[1].b.miss, d, "misses", err))))))
        return oc_err_prefix(err, "%s: superbatch scratch under %s", c->who, d);
    update_held(sb);
    return OC_OK;
}

void pl_sb_close(struct pl_sb *sb)
{
    pl_sb_plan_deinit(&sb->plans[0]);
    pl_sb_plan_deinit(&sb->plans[1]);
    pl_planner_deinit(&sb->planner);
    pl_trace_deinit(&sb->trace);
    oc_sample_iter_close(&sb->it);
    oc_free(sb->rec);
    oc_free(sb->acc);
    memset(sb, 0, sizeof(*sb));
}

/* ---- reading batches back ---------------------------------------------------- */

void pl_sb_reader_init(struct pl_sb_reader *r, const char *who)
{
    memset(r, 0, sizeof(*r));
    r->who = who;
}

void pl_sb_reader_deinit(struct pl_sb_reader *r)
{
    oc_file_close(r->file, NULL);
    oc_free(r->rec);
    pl_sb_reader_init(r, r->who);
}

int pl_sb_reader_use(struct pl_sb_reader *r, const struct pl_sb_plan *p)
{
    if (r->plan == p && r->first == p->b.first_iter)
        return r->file != NULL;
    oc_file_close(r->file, NULL); /* a new superbatch: open its file */
    r->file = NULL;
    r->plan = p;
    r->first = p->b.first_iter;
    struct oc_err e;
    if (p->sb_path[0] && (oc_file_open(p->sb_path, OC_FILE_READ, &r->file, &e) != OC_OK ||
                          oc_file_size(r->file, &r->bytes, &e) != OC_OK)) {
        oc_log(OC_LOG_WARN, "%s: cannot read back %s (%s)", r->who, p->sb_path, e.msg);
        oc_file_close(r->file, NULL);
        r->file = NULL;
    }
    return r->file != NULL;
}

int pl_sb_reader_read(struct pl_sb_reader *r, const struct pl_sb_plan *p, uint64_t it,
                      uint64_t epoch, uint64_t batch, uint64_t n_nodes, struct oc_sample_batch *out,
                      struct oc_err *err)
{
    uint8_t lenb[8];
    int rc;
    OC_ASSERT(r->file && r->plan == p && it < p->b.n_iters);
    if ((rc = oc_file_pread(r->file, lenb, 8, p->rec_off[it], err)))
        return rc;
    uint64_t len = oc_get_le64(lenb), size = r->bytes;
    if (p->rec_off[it] > size || len > size - p->rec_off[it] || size - p->rec_off[it] - len < 8)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: %s: the batch at offset %" PRIu64 " (%" PRIu64
                      " bytes) runs past the file's %" PRIu64 " bytes (replaced since it was "
                      "checked?)",
                      r->who, p->sb_path, p->rec_off[it], len, size);
    if ((rc = pl_sb_rec_reserve(&r->rec, &r->cap_rec, len, err)))
        return rc;
    if ((rc = oc_file_pread(r->file, r->rec, (size_t)len, p->rec_off[it] + 8, err)) ||
        (rc = oc_sample_batch_deserialize(r->rec, (size_t)len, n_nodes, out, err))) {
        oc_err_prefix(err, "%s: %s", r->who, p->sb_path);
        return rc;
    }
    if (out->epoch != epoch || out->batch_index != batch)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: %s: batch at offset %" PRIu64 " is epoch %" PRIu64 " batch %" PRIu64
                      ", not epoch %" PRIu64 " batch %" PRIu64,
                      r->who, p->sb_path, p->rec_off[it], out->epoch, out->batch_index, epoch,
                      batch);
    return OC_OK;
}
