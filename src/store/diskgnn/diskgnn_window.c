/*
 * diskgnn_window.c — the window builder of the `diskgnn` strategy and the
 * window's files: plan's window planner (src/plan/window.h) samples every
 * batch of a run of one sample epoch exactly as train samples it into the
 * trace (in row space), and each batch's record is spilled here to an
 * unlinked scratch file (plan's pl_spill); diskgnn_pack.c (laid out whole) or diskgnn_stream.c (batch
 * by batch) then writes the window file. Here: the builder (the planner's
 * hooks: rows, cancellation, topology figures), the records' spill,
 * progress, and the files' names, creation, locking, removal and cleaning.
 *
 * Over other ids (oc_store_config.accesses: a partitioned dataset's part) the
 * window planner samples the plan's batches on the plan's graph and maps
 * each through the access map, so the trace, the chunks' addresses and
 * their records hold the ids the store is gathered with (a record then
 * holds those ids alone: plan/window.h's pl_window_batch), not the batch.
 *
 * A window's file (and the spill) is a scratch file under <dir> = PLAN/diskgnn
 * (PLAN: --plan-dir, default DIR/plan; a partitioned dataset's part:
 * PART/plan), made under a temporary name ("w<epoch>.<first>.bin.tmp-<host>-
 * <pid>-<nonce>-<seq>", <first>: the window's first batch in its epoch) and
 * unlinked as soon as its writer and its O_DIRECT reader are open
 * (oc_tmp_scratch): windows are never reused by another run, so they need no
 * name, no run sees another's, and nothing of them outlives the run (killed
 * in the instant between creation and unlink, it leaves a temporary the
 * next run removes). dg_dir_clean removes, only in a <dir> that offcore
 * made (or found empty) and marked (oc_dir_make_owned), temporaries of runs
 * that are over and the named windows of earlier versions: those keyed by
 * content when no run holds them locked, those named by pid when the pid is
 * gone.
 * Chunk header (64 bytes, little-endian):
 *
 *   +0  8  magic "OCDGCK1\0"      +40 8  record bytes
 *   +8  8  sample epoch           +48 4  CRC-32 of record + address table
 *   +16 8  batch                  +52 4  reserved, 0
 *   +24 8  n_input                +56 4  version (1)
 *   +32 8  n_packed               +60 4  CRC-32 of header bytes [0, 60)
 *
 * Place in the data flow: store (diskgnn); plan/window.c (sample ──► trace) ──►
 * layout ──► file.
 * Thread-safety: a builder belongs to one thread at a time (open, then the
 * planner stage), which checks between batches, chunks and partitions
 * whether its pipeline was cancelled (b->cancel) so that a cancellation
 * does not wait for a whole window; the cache is written only while the
 * first window packs, before any reader exists.
 * Ownership: the builder owns its sampler, buffers and spill file; a window
 * owns its arrays and file (dg_window_drop).
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/diskgnn/diskgnn_int.h"

static uint64_t now_us(void)
{
    return (uint64_t)(oc_now_s() * 1e6);
}

/* OC_ERR_CANCELLED once the builder's pipeline is cancelled: the planner stops part-way. */
int dg_check_cancel(const struct dg_builder *b, struct oc_err *err)
{
    if (b->cancel && oc_pipeline_cancelled(b->cancel))
        return OC_ERR(err, OC_ERR_CANCELLED, "store diskgnn: planning cancelled");
    return OC_OK;
}

/*
 * Progress of building a window: the first, at open, is a phase of its own
 * (nothing else runs then); later ones, built by the planner stage while an
 * epoch trains, are a note on the epoch's bar (`what`: a string literal), so
 * the background adds no line of its own.
 */
void dg_report_begin(struct dg_builder *b, const char *label, const char *what, uint64_t total,
                     const char *unit)
{
    b->reported = 0;
    if (b->background)
        oc_progress_note(b->progress, what, 0, total);
    else
        oc_progress_phase(b->progress, label, total, unit);
}

void dg_report(struct dg_builder *b, const char *what, uint64_t done, uint64_t total)
{
    if (b->background) {
        oc_progress_note(b->progress, what, done, total);
    } else if (done > b->reported) {
        oc_progress_add(b->progress, done - b->reported);
        b->reported = done;
    }
}

void dg_report_end(struct dg_builder *b)
{
    if (b->background)
        oc_progress_note(b->progress, NULL, 0, 0);
    else
        oc_progress_finish(b->progress);
}

int dg_spill_begin(struct dg_builder *b, uint32_t elem, const char *name, struct oc_err *err)
{
    pl_spill_deinit(&b->spill);
    pl_spill_init(&b->spill, elem, "store diskgnn: spill");
    return pl_spill_to_file(&b->spill, b->dir, name, err);
}

/* ---- builder ---------------------------------------------------------------- */

/* The window planner's hooks (plan/window.h): node ids to rows of features.npy (diskgnn plans
   in row space), the pipeline's cancel, the sampler's topology reads. */
static void rows_of(void *ctx, const uint64_t *ids, uint64_t n, uint64_t *rows)
{
    const struct dg_builder *b = ctx;
    store_rows_of(b->s->ds, b->s->row_map, ids, n, rows);
}

static int is_cancelled(void *ctx)
{
    const struct dg_builder *b = ctx;
    return b->cancel && oc_pipeline_cancelled(b->cancel);
}

static void topo_sampled(void *ctx, const struct oc_sampler *smp)
{
    struct dg_builder *b = ctx;
    store_topo_add(b->s, smp, &b->topo_seen); /* the run's topology figures */
}

int dg_builder_init(struct dg_builder *b, const struct oc_store *s,
                    const struct oc_store_config *cfg, struct oc_pool *pool, struct oc_err *err)
{
    int rc;
    memset(b, 0, sizeof(*b));
    b->s = s;
    b->progress = cfg->progress;
    if ((rc = oc_path_join(b->dir, sizeof(b->dir), cfg->plan_dir, "diskgnn", err)))
        return rc;
    int owned;
    if ((rc = oc_dir_make_owned(b->dir, &owned, err)))
        return oc_err_prefix(err, "store diskgnn: cannot write its plan files (--plan-dir DIR "
                                  "puts them elsewhere)");
    if (owned)
        dg_dir_clean(b->dir);
    else
        oc_log(OC_LOG_WARN,
               "store diskgnn: %s holds files and no %s: not offcore's, nothing in it is "
               "cleaned up (--plan-dir DIR puts the plan files elsewhere)",
               b->dir, OC_OWNED_MARKER);
    /* over other ids (a partitioned dataset's part) the plan's batches are sampled on the
       plan's graph and the trace holds each one's accesses: the ids it will be gathered with */
    const struct oc_store_accesses *acc = cfg->accesses;
    struct pl_window_config wc = {.who = "store diskgnn",
                                  .graph = store_plan_graph(cfg),
                                  .so = cfg->sample_opts,
                                  .pool = pool,
                                  .train_ids = cfg->train_ids,
                                  .n_train = cfg->n_train,
                                  .batch_size = cfg->batch_size,
                                  .rows_of = rows_of,
                                  .cancelled = is_cancelled,
                                  .sampled = topo_sampled,
                                  .ctx = b,
                                  .accesses = acc ? acc->of : NULL,
                                  .accesses_ctx = acc ? acc->ctx : NULL};
    if ((rc = pl_window_open(&b->tr, &wc, err)))
        return rc;
    b->streamed = !(dg_opts_of(cfg).disk_budget > 0); /* no disk cache: laid out batch by batch */
    if (b->streamed) {
        b->ahead = dg_stream_ahead(cfg->mem_bytes, b->tr.nb_epoch);
        b->chunk_off =
            oc_calloc(b->tr.nb_epoch + 1, sizeof(uint64_t), "store diskgnn: window", err);
        b->pack_off = oc_calloc(b->tr.nb_epoch + 1, sizeof(uint64_t), "store diskgnn: window", err);
        b->cursor_buf =
            oc_alloc((b->tr.nb_epoch ? b->tr.nb_epoch : 1) * b->ahead * sizeof(uint64_t),
                     "store diskgnn: packing read-ahead", err);
        if (!b->chunk_off || !b->pack_off || !b->cursor_buf)
            return err->status;
    }
    /* two partitions (one copied, one read ahead: oc_io_scan) in a 64th of the budget, between
       1 and 16 MiB (reads of a MiB run at the disk's speed when several are in flight), each
       at least a row */
    uint64_t part = cfg->mem_bytes ? cfg->mem_bytes / 64 : (16u << 20);
    if (part < (1u << 20))
        part = 1u << 20;
    if (part > (16u << 20))
        part = 16u << 20;
    if (part < oc_io_scan_bytes_for(s->row_bytes))
        part = oc_io_scan_bytes_for(s->row_bytes);
    b->part_bytes = oc_io_align_up(part);
    b->part = oc_io_buf_alloc(b->part_bytes, "store diskgnn: packing partition", err);
    if (!b->part)
        return err->status;
    return OC_OK;
}

int dg_builder_detach_pool(struct dg_builder *b, struct oc_pipeline *stages, struct oc_err *err)
{
    struct oc_pool *pool;
    int rc = store_sampler_pool(stages, b->tr.c.graph, &pool, err);
    if (rc == OC_OK)
        rc = pl_window_repool(&b->tr, pool, err); /* window 0's reads kept (topo_sampled) */
    memset(&b->topo_seen, 0, sizeof(b->topo_seen));
    return rc;
}

void dg_builder_deinit(struct dg_builder *b)
{
    pl_spill_deinit(&b->spill); /* sampled but never packed (a failed open): its records */
    pl_window_close(&b->tr);
    oc_free(b->rec);
    oc_free(b->chunk_off);
    oc_free(b->pack_off);
    oc_free(b->addr);
    oc_free(b->pack);
    oc_free(b->cursor_buf);
    oc_rank_set_free(&b->cpu_set);
    oc_free(b->part);
    memset(b, 0, sizeof(*b));
}

uint64_t dg_builder_access_bytes(const struct dg_builder *b)
{
    /* the peak of laying out: the trace (8, a quarter more while it grows), addresses 8 and
       packed/segment rows 8; packing needs less (the addresses are freed, each chunk's rows
       are read in place through a cursor). Segment caches add their rows' sorted pairs (16)
       and MinHash signatures. Streamed, nothing: batch by batch (diskgnn_stream.c). */
    return b->streamed ? 0 : b->disk_budget_bytes > 0 ? 48 : 32;
}

uint64_t dg_builder_need_bytes(const struct dg_builder *b, uint64_t accesses)
{
    /* per access (dg_builder_access_bytes); the planner's per-node scratch (streamed: the
       probe's counts, then the CPU cache's rank set, 0.19 bytes a node); per batch
       offsets and packing cursors (streamed: its offsets and read-ahead); buffers */
    return accesses * dg_builder_access_bytes(b) + b->s->n_nodes * 8 +
           b->tr.nb_epoch * dg_builder_batch_bytes(b) + b->part_bytes + DG_WRITE_BYTES + b->cap_rec;
}

uint64_t dg_builder_batch_bytes(const struct dg_builder *b)
{
    return DG_BYTES_PER_BATCH + (b->streamed ? 16 + (uint64_t)b->ahead * sizeof(uint64_t) : 0);
}

int dg_window_build(struct dg_builder *b, struct store_cache *cache, int fill_cache, uint64_t epoch,
                    uint64_t first, uint64_t count, struct dg_window *w, struct oc_err *err)
{
    if (b->streamed)
        return dg_window_stream(b, cache, fill_cache, epoch, first, count, w, err);
    int rc = dg_window_sample(b, epoch, first, count, err);
    return rc ? rc : dg_window_pack(b, cache, fill_cache, w, err);
}

/* ---- sampling ---------------------------------------------------------------- */

static const char sampling[] = "diskgnn: sampling the next window";

/* What the window planner calls back after each batch: its record spilled, progress. */
struct spill_job {
    struct dg_builder *b;
    uint64_t count;
};

static int spill_record(void *ctx, uint64_t i, struct oc_err *err)
{
    const struct spill_job *j = ctx;
    struct dg_builder *b = j->b;
    const struct oc_sample_batch *sb = pl_window_batch(&b->tr); /* the map's ids, over one */
    size_t len;
    /* room for the chunk's header and address table too (pack_meta reads it back here) */
    uint64_t meta = oc_plan_chunk_meta_bytes(oc_sample_batch_record_bytes(sb), sb->n_input);
    int rc;
    if ((rc = oc_grow_by(&b->rec, &b->cap_rec, meta, 1, DG_GROW, "store diskgnn: records", err)) ||
        (rc = oc_sample_batch_serialize(sb, b->rec, b->cap_rec, &len, err)) ||
        (rc = pl_spill_append(&b->spill, b->rec, len, err)))
        return rc;
    b->tr.rec_bytes[i] = len;
    dg_report(b, sampling, i + 1, j->count);
    return OC_OK;
}

int dg_window_sample(struct dg_builder *b, uint64_t epoch, uint64_t first, uint64_t count,
                     struct oc_err *err)
{
    uint64_t t0 = now_us();
    char name[64];
    struct spill_job j = {b, count};
    snprintf(name, sizeof(name), "w%" PRIu64 ".%" PRIu64 ".rec", epoch, first);
    int rc = dg_spill_begin(b, 1, name, err);
    if (rc == OC_OK) {
        dg_report_begin(b, "diskgnn: sample the first window", sampling, count, "batches");
        rc = pl_window_sample(&b->tr, epoch, first, count, spill_record, &j, err);
    }
    if (rc) {
        b->tr.n_batches = 0;
        pl_spill_deinit(&b->spill);
        return oc_err_prefix(
            err, "store diskgnn: sampling epoch %" PRIu64 " batches %" PRIu64 "..%" PRIu64, epoch,
            first, first + count - 1);
    }
    dg_report_end(b);
    b->sample_us = now_us() - t0;
    return OC_OK;
}

int dg_window_create(struct dg_builder *b, struct dg_window *w, uint64_t file_bytes,
                     struct oc_file **out, struct oc_err *err)
{
    char near[4200];
    int rc;
    snprintf(near, sizeof(near), "%s/w%" PRIu64 ".%" PRIu64 ".bin", b->dir, w->epoch, w->first);
    if ((rc = oc_tmp_scratch(near, OC_FILE_READ | OC_FILE_WRITE, out, &w->f, w->path,
                             sizeof(w->path), err)))
        return rc;
    return oc_file_truncate(*out, file_bytes, err);
}

int dg_window_finish(struct oc_file **out, struct oc_err *err)
{
    /* Synced before the reader's first read: a write error (a full disk) surfaces here,
       naming the window, and the O_DIRECT reads find the bytes on the disk. */
    int rc = oc_file_sync(*out, err);
    int rc_close = oc_file_close(*out, rc ? NULL : err);
    *out = NULL;
    return rc ? rc : rc_close;
}

void dg_window_fail(struct dg_builder *b, struct dg_window *w, struct oc_file *out)
{
    oc_file_close(out, NULL);
    pl_spill_deinit(&b->spill);
    dg_window_drop(w);
}

void dg_window_drop(struct dg_window *w)
{
    oc_file_close(w->f, NULL); /* the last descriptor: the file goes */
    oc_free(w->chunk_off);
    oc_free(w->seg_byte_off);
    uint64_t epoch = w->epoch, first = w->first;
    memset(w, 0, sizeof(*w));
    w->epoch = epoch;
    w->first = first;
}

/* A window an earlier version named by its content key: "w<epoch>.<first>-<16 hex>.bin"
   or "w<epoch>-<16 hex>.bin"; such a run held a shared flock on it while it read it. */
static int is_keyed_window_name(const char *name)
{
    unsigned long long ep, first;
    int n = 0;
    if ((sscanf(name, "w%llu.%llu-%n", &ep, &first, &n) != 2 || n == 0) &&
        (sscanf(name, "w%llu-%n", &ep, &n) != 1 || n == 0))
        return 0;
    const char *k = name + n;
    for (int i = 0; i < 16; i++)
        if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')))
            return 0;
    return strcmp(k + 16, ".bin") == 0;
}

/* The pid of a file the oldest versions named by pid alone, "w<epoch>-<pid>.{bin,bin.tmp,rec}"
   (they took no lock); 0 for any other name. */
static long pid_window_name(const char *name)
{
    unsigned long long ep;
    long pid;
    char rest[16];
    if (sscanf(name, "w%llu-%ld.%15s", &ep, &pid, rest) != 3 || pid <= 0 ||
        (strcmp(rest, "bin") && strcmp(rest, "bin.tmp") && strcmp(rest, "rec")))
        return 0;
    return pid;
}

void dg_dir_clean(const char *dir)
{
    oc_tmp_clean_stale(dir, NULL, NULL, NULL);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        long pid = pid_window_name(e->d_name);
        if (pid) {
            if (pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH &&
                unlink(path) == 0)
                oc_log(OC_LOG_INFO, "store diskgnn: removed %s (pid %ld is gone)", path, pid);
            continue;
        }
        if (!is_keyed_window_name(e->d_name))
            continue;
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
            continue;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlink(path) == 0)
            oc_log(OC_LOG_INFO, "store diskgnn: removed %s (an earlier version's window)", path);
        close(fd);
    }
    closedir(d);
}
