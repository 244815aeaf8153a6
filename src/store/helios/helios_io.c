/*
 * helios_io.c — the `helios` I/O path: per-hop submission on the batch
 * pipeline's sample stage and the completion stage that reaps the reads.
 *
 *   sampler ─hop─► hl_prepare_hop: cache lookup, misses sorted, rows that share
 *                  a page put in one span, spans read into the record's stage
 *                  (one READ_FIXED each, no syscall under SQPOLL) ─► ring
 *   sampler ─end─► hl_prepare_batch: checks, a NOP seal marker ─► ring
 *   complete stage: reaps any record's completions (results per span), the
 *                  record at its head done once sealed and every span reaped;
 *                  checks each span delivered its rows' bytes ─► done_q
 *
 * A record goes to the completion stage with its first hop, so the stage
 * reaps while later hops are still sampled: the reads of the seeds and first
 * hop overlap the sampling of the next hop, and the record of the batch
 * ahead overlaps the trainer's compute. The submitter keeps at most `depth` reads
 * (and seals) unreaped, waiting on h->cv for the completion stage otherwise.
 * A hop whose rows do not fit the record's stage leaves them unstaged
 * (overflow: the gather reads them), so no batch waits for room.
 *
 * Errors: a refused submission fails the sample stage (naming the file); a
 * failed or short read fails the completion stage naming the file and
 * offset; either cancels the pipeline, whose cancel hook sets stop and wakes
 * the submitter's wait. Reads still in flight land in the arena: tearing the
 * ring down (after the pipeline's threads are joined) reaps them before the
 * arena is freed, and leaves it allocated if the kernel never lets go.
 *
 * Place in the data flow: store, below helios.c.
 * Thread-safety: see helios_int.h.
 * Ownership: records circulate free_q ─► submitter ─► comp_q ─► completion
 * stage ─► done_q ─► fetch stage ─► free_q.
 */

#include <inttypes.h>
#include <sched.h>
#include <time.h>

#include "offcore/progress.h"
#include "store/helios/helios_int.h"

#define HL_REAP_MAX        256u
#define HL_REAP_TIMEOUT_US 2000u
#define HL_SUBMIT_BURST    32u /* spans queued between submissions */

/* ---- submission (the sample stage) ---------------------------------------- */

/*
 * Waits until one more entry may be in flight, handing what is queued to the
 * kernel first (entries only queued never complete); OC_ERR_CANCELLED (err
 * not set) once stopped.
 */
static int wait_room(struct hl_store *h, struct oc_err *err)
{
    if (atomic_load(&h->in_flight) < h->depth)
        return OC_OK;
    int rc = oc_io_ring_submit(h->ring, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->waiting, 1);
    while (atomic_load(&h->in_flight) >= h->depth && !atomic_load(&h->stop)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000; /* a bounded wait: the completer's wake may race the flag */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    atomic_store(&h->waiting, 0);
    pthread_mutex_unlock(&h->mu);
    return atomic_load(&h->stop) ? OC_ERR_CANCELLED : OC_OK;
}

static int issue_span(struct hl_store *h, struct hl_rec *r, struct oc_err *err)
{
    const struct hl_span *sp = &r->spans[r->n_spans];
    int rc = wait_room(h, err);
    if (rc)
        return rc == OC_ERR_CANCELLED ? store_stages_error(h->s, err) : rc;
    atomic_fetch_add(&h->in_flight, 1);
    rc = oc_io_ring_read(h->ring, sp->off, sp->len, r->stage + sp->at,
                         (uint64_t)r->index << 32 | r->n_spans, err);
    if (rc) {
        atomic_fetch_sub(&h->in_flight, 1);
        return rc;
    }
    r->n_spans++;
    atomic_store_explicit(&r->n_sub, r->n_spans, memory_order_release);
    /* hand reads over in bursts, so the disk starts while the hop is still staged */
    return r->n_spans % HL_SUBMIT_BURST == 0 ? oc_io_ring_submit(h->ring, err) : OC_OK;
}

/*
 * Stages the sorted misses [0, nm) into spans and issues each span once it
 * can grow no more. A row sharing a page with the open span joins it (up to
 * HL_MAX_SPAN); a row with no room left in the stage stays unstaged.
 */
static int stage_misses(struct hl_store *h, struct hl_rec *r, uint64_t nm, struct oc_err *err)
{
    const struct oc_store *s = h->s;
    int open = 0, rc;
    for (uint64_t k = 0; k < nm; k++) {
        uint64_t off = store_file_off(s, h->miss[k].id), end = off + s->row_bytes;
        uint64_t lo = oc_io_align_down(off), hi = oc_io_align_up(end);
        struct hl_span *sp = &r->spans[r->n_spans];
        if (open && lo < sp->off + sp->len && hi - sp->off <= HL_MAX_SPAN) {
            uint64_t grow = hi > sp->off + sp->len ? hi - (sp->off + sp->len) : 0;
            if (r->stage_used + grow <= h->stage_bytes) {
                r->stage_used += grow;
                sp->len += (uint32_t)grow;
                sp->need = (uint32_t)(end - sp->off > sp->need ? end - sp->off : sp->need);
                r->at[h->miss[k].pos] = sp->at + (off - sp->off);
                r->n_staged++;
                continue;
            }
        }
        if (open && (rc = issue_span(h, r, err)))
            return rc;
        open = 0;
        sp = &r->spans[r->n_spans];
        if (r->n_spans == r->cap_spans || r->stage_used + (hi - lo) > h->stage_bytes) {
            r->n_overflow++; /* read at gather */
            continue;
        }
        *sp = (struct hl_span){lo, r->stage_used, (uint32_t)(hi - lo), (uint32_t)(end - lo)};
        r->stage_used += hi - lo;
        r->at[h->miss[k].pos] = sp->at + (off - lo);
        r->n_staged++;
        open = 1;
    }
    return open ? issue_span(h, r, err) : OC_OK;
}

static int in_plan(const struct hl_store *h, uint64_t epoch, uint64_t batch)
{
    return h->pipeline && epoch >= h->first_epoch && epoch < h->n_epochs && batch < h->n_batches;
}

/* The record batch (epoch, batch) fills: the open one, or a new one in plan order; NULL if not. */
static int record_for(struct hl_store *h, uint64_t epoch, uint64_t batch, struct hl_rec **out,
                      struct oc_err *err)
{
    *out = NULL;
    if (!in_plan(h, epoch, batch))
        return OC_OK; /* not in the plan: its gather reads directly */
    uint64_t seq = (epoch - h->first_epoch) * h->n_batches + batch;
    if (h->open_rec) {
        *out = h->open_rec->seq == seq ? h->open_rec : NULL;
        return OC_OK;
    }
    if (seq != atomic_load_explicit(&h->n_prepared, memory_order_relaxed))
        return OC_OK; /* out of plan order: read directly */
    void *item;
    if (atomic_load(&h->stop) || oc_queue_pop(h->free_q, &item) != OC_OK)
        return store_stages_error(h->s, err);
    struct hl_rec *r = item;
    r->seq = seq;
    r->epoch = epoch;
    r->batch = batch;
    r->n_rows = r->stage_used = 0;
    r->n_spans = 0;
    r->n_cached = r->n_staged = r->n_overflow = 0;
    r->read_bytes = 0;
    atomic_store(&r->n_sub, 0);
    atomic_store(&r->n_done, 0);
    atomic_store(&r->sealed, 0);
    r->queued = 0;
    h->open_rec = r;
    *out = r;
    return OC_OK;
}

int hl_prepare_hop(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                   uint64_t n, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    struct hl_rec *r;
    int rc = record_for(h, epoch, batch, &r, err);
    if (rc || !r)
        return rc;
    uint64_t c0 = oc_thread_cpu_ns(), t0 = oc_now_ns();
    if (r->n_rows + n > h->max_rows)
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store helios: batch %" PRIu64 " of epoch %" PRIu64
                      " has more than the %" PRIu64 " input rows its records are sized for",
                      batch, epoch, h->max_rows);
    uint64_t base = r->n_rows, nm = 0;
    memcpy(r->ids + base, ids, n * sizeof(uint64_t));
    store_yield_read_lock(&h->yield); /* slots given back later are read at serve (helios.c) */
    for (uint64_t i = 0; i < n; i++) {
        uint32_t slot = store_cache_lookup(&h->cache, ids[i]);
        r->slot[base + i] = slot;
        r->at[base + i] = HL_NO_AT;
        if (slot == STORE_NO_SLOT)
            h->miss[nm++] =
                (struct store_miss){store_row_of(h->s, ids[i]), base + i}; /* file row */
    }
    store_yield_read_unlock(&h->yield);
    r->n_rows += n;
    r->n_cached += n - nm;
    store_miss_sort(h->miss, nm);
    if (!r->queued) { /* the completion stage reaps from the first hop on */
        if (oc_queue_push(h->comp_q, r) != OC_OK)
            return store_stages_error(h->s, err);
        r->queued = 1;
    }
    rc = stage_misses(h, r, nm, err);
    if (rc == OC_OK)
        rc = oc_io_ring_submit(h->ring, err);
    atomic_fetch_add(&h->submit_cpu_ns, oc_thread_cpu_ns() - c0);
    atomic_fetch_add(&h->submit_ns, oc_now_ns() - t0);
    if (rc)
        oc_err_prefix(err, "store helios: batch %" PRIu64 " of epoch %" PRIu64, batch, epoch);
    return rc;
}

int hl_prepare_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                     const struct oc_sample_batch *b, struct oc_err *err)
{
    struct hl_store *h = s->impl;
    struct hl_rec *r;
    int rc;
    if (!h->open_rec && (rc = hl_prepare_hop(s, epoch, batch, b->input_ids, b->n_input, err)))
        return rc; /* shown whole, without hops */
    if ((rc = record_for(h, epoch, batch, &r, err)) || !r)
        return rc;
    if (r->n_rows != b->n_input || memcmp(r->ids, b->input_ids, r->n_rows * sizeof(uint64_t)))
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "store helios: batch %" PRIu64 " of epoch %" PRIu64 " has %" PRIu64
                      " input rows, its hops showed %" PRIu64 " others",
                      batch, epoch, b->n_input, r->n_rows);
    uint64_t c0 = oc_thread_cpu_ns();
    if ((rc = wait_room(h, err)))
        return rc == OC_ERR_CANCELLED ? store_stages_error(h->s, err) : rc;
    atomic_fetch_add(&h->in_flight, 1);
    rc = oc_io_ring_nop(h->ring, (uint64_t)r->index << 32 | HL_SEAL, err);
    if (rc) {
        atomic_fetch_sub(&h->in_flight, 1);
        return rc;
    }
    h->open_rec = NULL;
    atomic_store_explicit(&h->n_prepared, r->seq + 1, memory_order_release);
    rc = oc_io_ring_submit(h->ring, err);
    atomic_fetch_add(&h->submit_cpu_ns, oc_thread_cpu_ns() - c0);
    return rc;
}

/* ---- completion stage ------------------------------------------------------- */

/* Pins the completion thread to the first I/O core (--io-cores), once. */
static void pin_self(struct hl_store *h)
{
    if (h->pinned || h->io_cores == 0)
        return;
    h->pinned = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = h->cpus[h->n_cpus - h->io_cores];
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
        oc_log(OC_LOG_INFO, "store helios: could not pin the completion stage to CPU %d", cpu);
}

/* One completion: its span's result, or the seal of its record. */
static void complete(struct hl_store *h, const struct oc_io_done *d)
{
    OC_ASSERT((d->tag >> 32) < h->n_records);
    struct hl_rec *r = &h->recs[d->tag >> 32];
    uint32_t span = (uint32_t)d->tag;
    OC_ASSERT(atomic_load(&h->in_flight) > 0); /* counted before the read was queued */
    atomic_fetch_sub(&h->in_flight, 1);
    if (span == HL_SEAL) {
        OC_ASSERT(!atomic_load(&r->sealed)); /* one seal per record, its last entry */
        atomic_store(&r->sealed, 1);
        return;
    }
    int64_t res = d->res;
    int fe = 0;
    if (oc_fault_hit(OC_FAULT_READ, &fe))
        res = fe ? -fe : 0; /* errno 0: a short read */
    r->res[span] = res;
    if (res > 0)
        r->read_bytes += (uint64_t)res;
    atomic_fetch_add(&r->n_done, 1);
}

/* Whether every span of a finished record delivered its rows; the first failure named. */
static int check_spans(struct hl_store *h, const struct hl_rec *r, struct oc_err *err)
{
    char eb[128];
    for (uint32_t k = 0; k < r->n_spans; k++) {
        const struct hl_span *sp = &r->spans[k];
        if (r->res[k] < 0)
            return OC_ERR_ERRNO(err, OC_ERR_IO, (int)-r->res[k],
                                "%s: read of %u bytes at offset %" PRIu64 " failed: %s", h->s->path,
                                sp->len, sp->off, store_strerror((int)-r->res[k], eb, sizeof(eb)));
        if (r->res[k] < (int64_t)sp->need)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: truncated: wanted %u bytes at offset %" PRIu64 ", got %" PRId64,
                          h->s->path, sp->need, sp->off, r->res[k]);
    }
    return OC_OK;
}

static int complete_stage(void *ctx, struct oc_stage *st, void *item, struct oc_err *err)
{
    struct hl_store *h = ctx;
    struct hl_rec *r = item;
    struct oc_io_done done[HL_REAP_MAX];
    pin_self(h);
    while (!atomic_load(&r->sealed) ||
           atomic_load(&r->n_done) != atomic_load_explicit(&r->n_sub, memory_order_acquire)) {
        if (atomic_load(&h->stop))
            return OC_ERR_CANCELLED;
        unsigned n = 0;
        int rc = oc_io_ring_reap(h->ring, done, HL_REAP_MAX, &n, HL_REAP_TIMEOUT_US, err);
        if (rc)
            return rc;
        for (unsigned i = 0; i < n; i++)
            complete(h, &done[i]);
        if (n && atomic_load(&h->waiting)) {
            pthread_mutex_lock(&h->mu);
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
        }
    }
    /* sealed after its last span: every span submitted was reaped, none twice */
    OC_ASSERT(atomic_load(&r->n_done) == r->n_spans && atomic_load(&r->n_sub) == r->n_spans);
    int rc = check_spans(h, r, err);
    if (rc) {
        oc_err_prefix(err, "store helios: batch %" PRIu64 " of epoch %" PRIu64, r->batch, r->epoch);
        return rc;
    }
    return oc_stage_push(st, h->done_q, r);
}

/* Runs once when the pipeline is cancelled: stops the submitter's wait. */
static void hl_on_cancel(void *ctx)
{
    struct hl_store *h = ctx;
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->stop, 1);
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

int hl_stages_start(struct hl_store *h, struct oc_err *err)
{
    int rc;
    if ((rc = store_stages(h->s, &h->p, err)))
        return rc;
    struct oc_queue **qs[] = {&h->free_q, &h->comp_q, &h->done_q};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
        if ((rc = oc_pipeline_queue(h->p, h->n_records, qs[i], err)))
            return rc;
    for (uint32_t i = 0; i < h->n_records; i++)
        oc_queue_push(h->free_q, &h->recs[i]); /* capacity n_records: never waits */
    if ((rc = oc_pipeline_on_cancel(h->p, hl_on_cancel, h, err)) ||
        (rc = oc_pipeline_stage(h->p, "helios complete", 1, h->comp_q, complete_stage, h,
                                &h->comp_st, err)))
        return rc;
    return oc_pipeline_start(h->p, err);
}
