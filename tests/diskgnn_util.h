/*
 * diskgnn_util.h — helpers for the diskgnn tests (test_store_diskgnn.c,
 * test_store_diskgnn_files.c): the plan directory and its window files
 * (paths, chunk positions, a flipped byte), diskgnn stores opened directly
 * and driven through a plan with a reference sampler, and training runs
 * with their per-epoch log and smallest accepted budget.
 *
 * Place in the data flow: tests only (generate → dataset → sample → plan →
 * store → train).
 * Thread-safety: single-threaded test code.
 * Ownership: what a helper allocates its caller frees (ref_free, fixtures).
 */
#ifndef OFFCORE_TEST_DISKGNN_UTIL_H
#define OFFCORE_TEST_DISKGNN_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/generate.h"
#include "offcore/plan.h"
#include "offcore/rng.h"
#include "offcore/train.h"
#include "store_fixture.h"

#define MIB (UINT64_C(1) << 20)

/* ---- helpers: the plan directory and window files --------------------------------------- */

/* Regular files in PLAN/diskgnn: how many, and (bytes) their total size. */
/* --disk-budget X for diskgnn (a strategy option: store.h, struct oc_store_opt). */
static inline void set_disk_budget(struct oc_train_opts *o, double x)
{
    struct oc_err err;
    OC_CHECK_OK(oc_train_opts_set(o, "disk-budget", x, &err), &err);
}

/*
 * Calls fn for each window file this process holds open under PLAN/diskgnn (windows have no
 * name: /proc/self/fd finds them, "<dir>/w<epoch>.<first>.bin.tmp-... (deleted)"), once per
 * file (its writer and reader share an inode), with the fd's path and the file's name.
 */
static inline int each_window(const char *plan,
                              void (*fn)(void *, const char *fd_path, const char *name,
                                         const struct stat *),
                              void *ctx)
{
    char dir[1200], real[PATH_MAX], want[PATH_MAX + 8], fd_path[300], target[2048];
    uint64_t seen[64][2];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s/diskgnn", plan);
    if (!realpath(dir, real)) /* as /proc/self/fd gives paths: absolute, no symlink */
        return 0;
    snprintf(want, sizeof(want), "%s/w", real);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(fd_path, target, sizeof(target) - 1);
        if (l <= 0)
            continue;
        target[l] = '\0';
        char *del = strstr(target, " (deleted)");
        if (strncmp(target, want, strlen(want)) != 0 || !strstr(target, ".bin.tmp-") || !del ||
            stat(fd_path, &st) != 0)
            continue; /* not a window, or closed meanwhile by the planner or the loader */
        *del = '\0';
        int dup = 0;
        for (int i = 0; i < n && i < 64; i++)
            dup |= seen[i][0] == (uint64_t)st.st_dev && seen[i][1] == (uint64_t)st.st_ino;
        if (dup)
            continue;
        if (n < 64) {
            seen[n][0] = (uint64_t)st.st_dev;
            seen[n][1] = (uint64_t)st.st_ino;
        }
        n++;
        if (fn)
            fn(ctx, fd_path, target, &st);
    }
    if (d)
        closedir(d);
    return n;
}

static inline void add_window_bytes(void *ctx, const char *fd_path, const char *name,
                                    const struct stat *st)
{
    (void)fd_path;
    (void)name;
    *(uint64_t *)ctx += (uint64_t)st->st_size;
}

/* Named files in PLAN/diskgnn besides offcore's ownership marker (a dot file), and their
   bytes (added to *bytes when not NULL). */
static inline int plan_named_files_bytes(const char *plan, uint64_t *bytes)
{
    char dir[1200], path[1600];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s/diskgnn", plan);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        n++;
        if (bytes && stat(path, &st) == 0)
            *bytes += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return n;
}

static inline int plan_named_files(const char *plan)
{
    return plan_named_files_bytes(plan, NULL);
}

/* The window files this process holds open (each_window). */
static inline int plan_windows(const char *plan)
{
    return each_window(plan, NULL, NULL);
}

/* Every plan file of PLAN/diskgnn: the windows this process holds and any named file (a run
   leaves none but its temporaries' instants), and their bytes. */
static inline int plan_files(const char *plan, uint64_t *bytes)
{
    uint64_t b = 0;
    int n = each_window(plan, add_window_bytes, &b) + plan_named_files_bytes(plan, &b);
    if (bytes)
        *bytes = b;
    return n;
}

struct window_find {
    char prefix[64];
    char *fd_path, *name;
    size_t n;
};

static inline void window_found(void *ctx, const char *fd_path, const char *name,
                                const struct stat *st)
{
    struct window_find *f = ctx;
    const char *base = strrchr(name, '/');
    (void)st;
    if (base && strncmp(base + 1, f->prefix, strlen(f->prefix)) == 0) {
        snprintf(f->fd_path, f->n, "%s", fd_path);
        snprintf(f->name, f->n, "%s", base + 1);
    }
}

/* The first window of sample epoch `epoch` this process holds: a path to open it by
   (/proc/self/fd/N) and its temporary's file name, unique, which messages name (both "" if
   none). */
static inline void window_path(const char *plan, uint64_t epoch, char *fd_path, char *name,
                               size_t n)
{
    struct window_find f = {.fd_path = fd_path, .name = name, .n = n};
    snprintf(f.prefix, sizeof(f.prefix), "w%" PRIu64 ".0.bin.tmp-", epoch);
    fd_path[0] = name[0] = '\0';
    each_window(plan, window_found, &f);
}

static inline uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

struct chunk_pos {
    uint64_t off, rec_bytes, n_input, n_packed;
};

/* The chunks of a window file, walked by their headers (plan.h layout); how many (<= max). */
static inline uint64_t window_chunks(const char *path, uint64_t row_bytes, struct chunk_pos *c,
                                     uint64_t max)
{
    FILE *f = fopen(path, "rb");
    uint8_t h[OC_PLAN_CHUNK_HEADER];
    uint64_t n = 0, at = 0;
    while (f && n < max && fseek(f, (long)at, SEEK_SET) == 0 &&
           fread(h, 1, sizeof(h), f) == sizeof(h) && memcmp(h, "OCDGCK1", 8) == 0) {
        c[n] = (struct chunk_pos){at, le64(h + 40), le64(h + 24), le64(h + 32)};
        uint64_t len =
            OC_PLAN_CHUNK_HEADER + c[n].rec_bytes + 8 * c[n].n_input + c[n].n_packed * row_bytes;
        at += (len + OC_PLAN_PAGE - 1) / OC_PLAN_PAGE * OC_PLAN_PAGE;
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

/* Flips one byte of a file in place. */
static inline void flip_byte(const char *path, uint64_t off)
{
    FILE *f = fopen(path, "r+b");
    OC_CHECK(f != NULL);
    if (!f)
        return;
    OC_CHECK(fseek(f, (long)off, SEEK_SET) == 0);
    int ch = fgetc(f);
    OC_CHECK(ch != EOF);
    OC_CHECK(fseek(f, (long)off, SEEK_SET) == 0);
    fputc(ch ^ 0x5A, f);
    fclose(f);
}

/* ---- helpers: stores opened directly ---------------------------------------------------- */

/* A diskgnn config over the fixture: epochs [e0, e1), plan files under plan. */
static inline struct oc_store_config dg_config(const struct fixture *fx, struct oc_pool *pool,
                                               const char *plan, uint32_t e0, uint32_t e1,
                                               int reuse)
{
    struct oc_store_config c = fixture_config(fx, pool);
    c.first_epoch = e0;
    c.n_epochs = e1;
    c.plan_dir = plan;
    c.reuse_samples = reuse;
    return c;
}

static inline int dg_open(const struct oc_store_config *c, struct oc_store **s, struct oc_err *err)
{
    uint32_t idx = 0;
    int rc = oc_store_strategy_find("diskgnn", &idx, err);
    *s = NULL;
    return rc ? rc : oc_store_open(idx, c, s, err);
}

/*
 * The smallest mem_bytes (to 4 KiB) at which c opens: the store's fixed part,
 * with (about) no row cached. Every smaller budget tried must fail with
 * OC_ERR_BUDGET naming the store. 0 if even 256 MiB fails.
 */
static inline uint64_t dg_min_mem(struct oc_store_config c)
{
    struct oc_err err;
    struct oc_store *s = NULL;
    uint64_t lo = 0, hi = 256 * MIB; /* lo fails, hi opens */
    c.mem_bytes = hi;
    if (dg_open(&c, &s, &err) != OC_OK) {
        fprintf(stderr, "  diskgnn does not open at 256 MiB: %s\n", err.msg);
        return 0;
    }
    oc_store_free(s);
    while (hi - lo > 4096) {
        c.mem_bytes = lo + (hi - lo) / 2;
        int rc = dg_open(&c, &s, &err);
        oc_store_free(s);
        if (rc == OC_OK) {
            hi = c.mem_bytes;
            continue;
        }
        OC_CHECK(rc == OC_ERR_BUDGET && strstr(err.msg, "store diskgnn") != NULL);
        lo = c.mem_bytes;
    }
    return hi;
}

/* Train's own sampling of the plan: the batches a store with batches must hand over. */
struct ref_sampler {
    struct oc_sampler *sm;
    struct oc_sample_epoch ep;
    struct oc_sample_batch b;
    uint64_t nb;
};

static inline int ref_init(struct ref_sampler *r, const struct fixture *fx)
{
    struct oc_err err;
    memset(r, 0, sizeof(*r));
    oc_sample_batch_init(&r->b);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &r->sm, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init(&r->ep, fx->train, fx->n_train, fx->batch_size, 0, &err),
                &err);
    r->nb = oc_sample_epoch_n_batches(&r->ep);
    return r->sm != NULL;
}

static inline void ref_free(struct ref_sampler *r)
{
    oc_sample_batch_deinit(&r->b);
    oc_sample_epoch_deinit(&r->ep);
    oc_sample_sampler_free(r->sm);
}

/* Batch i of sample epoch se, as train samples it (r->b). */
static inline const struct oc_sample_batch *
ref_batch(struct ref_sampler *r, const struct fixture *fx, uint64_t se, uint64_t i)
{
    struct oc_err err;
    const uint64_t *seeds;
    uint64_t n;
    oc_sample_epoch_shuffle(&r->ep, fx->so.seed, se);
    OC_CHECK_OK(oc_sample_epoch_batch(&r->ep, i, &seeds, &n, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(r->sm, se, i, seeds, n, &r->b, &err), &err);
    return &r->b;
}

struct drive {
    uint64_t n_batches; /* batches gathered */
    uint64_t bad;       /* rows that differ from the file, batches that differ from train's */
    uint64_t fail_epoch, fail_batch; /* where the first error came out */
};

/*
 * Trains through c's plan as train does: load_batch then gather_batch, in
 * plan order. With ref, every batch is compared with train's sampling and
 * every row with the file. Returns the first error's status (0 if none).
 */
static inline int drive_plan(const struct fixture *fx, struct oc_store *s,
                             const struct oc_store_config *c, struct ref_sampler *ref,
                             struct drive *d, struct oc_err *err)
{
    struct oc_sample_batch b;
    float *out = malloc(fx->n_nodes * fx->dim * sizeof(float));
    uint64_t nb = (fx->n_train + fx->batch_size - 1) / fx->batch_size;
    int rc = OC_OK;
    memset(d, 0, sizeof(*d));
    oc_sample_batch_init(&b);
    uint64_t *order = malloc(nb * sizeof(uint64_t));
    for (uint64_t e = c->first_epoch; e < c->n_epochs && rc == OC_OK; e++) {
        uint64_t se = c->reuse_samples ? 0 : e;
        /* reused samples: epoch 0's batches in each training epoch's own order */
        oc_sample_batch_order(c->sample_opts->seed, e, order, nb);
        for (uint64_t k = 0; k < nb && rc == OC_OK; k++) {
            uint64_t i = c->reuse_samples ? order[k] : k;
            d->fail_epoch = e;
            d->fail_batch = k;
            if ((rc = oc_store_load_batch(s, se, i, &b, err)))
                break;
            if (ref)
                d->bad += !oc_sample_batch_equal(&b, ref_batch(ref, fx, se, i));
            if ((rc = oc_store_gather_batch(s, se, i, b.input_ids, b.n_input, out, err)))
                break;
            if (ref)
                d->bad += fixture_bad_rows(fx, b.input_ids, b.n_input, out);
            d->n_batches++;
        }
    }
    free(order);
    oc_sample_batch_deinit(&b);
    free(out);
    return rc;
}

/* ---- helpers: training -------------------------------------------------------------------- */

/* A generated graph of 4000 nodes (1000 training) with dim x dtype features, made once. */
static inline const char *train_graph(uint32_t dim, enum oc_dtype dtype)
{
    static char dirs[4][1024];
    static uint32_t dims[4];
    static enum oc_dtype dtypes[4];
    static int n;
    for (int i = 0; i < n; i++)
        if (dims[i] == dim && dtypes[i] == dtype)
            return dirs[i];
    if (n == 4)
        return NULL;
    struct oc_generate_opts g;
    struct oc_err err;
    snprintf(dirs[n], sizeof(dirs[n]), "%s/train", oc_test_tmpdir());
    oc_generate_opts_default(&g);
    g.n_nodes = 4000;
    g.avg_degree = 6;
    g.feat_dim = dim;
    g.feat_dtype = dtype;
    g.n_classes = 4;
    g.train_frac = 0.25;
    g.seed = 3;
    g.n_threads = 1;
    if (oc_generate(&g, dirs[n], NULL, &err) != OC_OK) {
        fprintf(stderr, "  generate: %s\n", err.msg);
        OC_CHECK(0);
        return NULL;
    }
    dims[n] = dim;
    dtypes[n] = dtype;
    return dirs[n++];
}

static inline uint64_t graph_row_bytes(uint32_t dim, enum oc_dtype dtype)
{
    return (uint64_t)dim * oc_dtype_size(dtype);
}

static inline void train_opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = 128; /* 8 batches */
    o->epochs = 3;
    o->hidden = 8;
    o->n_threads = 2;
    o->seed = 4;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->eval_batch_size = 256;
}

#define MAX_EPOCHS 4

/* What on_epoch saw, epoch by epoch. */
struct epoch_log {
    const char *plan; /* DIR/plan */
    uint32_t n;
    struct oc_store_stats st[MAX_EPOCHS];
    uint64_t dir_bytes[MAX_EPOCHS];
    int dir_files[MAX_EPOCHS];
    /* corrupt: after epoch corrupt_epoch, flip a byte of chunk corrupt_chunk of window w0 */
    int corrupt;
    uint32_t corrupt_epoch;
    uint64_t corrupt_chunk, row_bytes;
    char corrupted[1400]; /* the file it damaged, as messages name it */
};

static inline void log_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct epoch_log *l = ctx;
    if (l->n < MAX_EPOCHS) {
        l->st[l->n] = st->store;
        if (l->plan)
            l->dir_files[l->n] = plan_files(l->plan, &l->dir_bytes[l->n]);
        l->n++;
    }
    if (l->corrupt && st->epoch == l->corrupt_epoch) {
        struct chunk_pos c[64];
        char fd_path[sizeof(l->corrupted)];
        window_path(l->plan, 0, fd_path, l->corrupted, sizeof(l->corrupted));
        uint64_t n = window_chunks(fd_path, l->row_bytes, c, 64);
        OC_CHECK(n > l->corrupt_chunk);
        if (n > l->corrupt_chunk)
            flip_byte(fd_path, c[l->corrupt_chunk].off + 20); /* the batch field */
    }
}

/* oc_train_run with the accountant holding the process to o->mem_budget, as the CLI does. */
static inline int train_under(const char *dir, const struct oc_train_opts *o, oc_train_epoch_fn fn,
                              void *ctx, struct oc_train_result *res, struct oc_err *err)
{
    oc_mem_set_budget(o->mem_budget ? oc_mem_used() + o->mem_budget : 0);
    int rc = oc_train_run(dir, o, fn, ctx, NULL, res, err);
    oc_mem_set_budget(0);
    return rc;
}

static inline int train(const char *dir, const struct oc_train_opts *o, struct epoch_log *log,
                        struct oc_train_result *res, struct oc_err *err)
{
    static char plan[1100];
    if (log) {
        snprintf(plan, sizeof(plan), "%s/plan", dir);
        log->plan = plan;
    }
    return train_under(dir, o, log ? log_epoch : NULL, log, res, err);
}

/*
 * The smallest --mem-budget (to 16 KiB) at which diskgnn trains under o (one
 * epoch; a disk budget raises it: segment caches cost the planner more per
 * access); budgets below it fail with
 * OC_ERR_BUDGET, and the largest of them (msg) is diskgnn's own buffers not
 * fitting. Remembered per graph and reuse_samples. 0 if none up to 32 MiB.
 */
static inline uint64_t train_min_budget(const char *dir, struct oc_train_opts o, char *msg,
                                        size_t n)
{
    static struct {
        const char *dir;
        int reuse;
        double window, disk;
        uint64_t bytes;
        char msg[800];
    } memo[16];
    static int n_memo;
    double window = oc_train_opts_get(&o, "window", 0.0);
    double disk = oc_train_opts_get(&o, "disk-budget", 0.0);
    for (int i = 0; i < n_memo; i++)
        if (memo[i].dir == dir && memo[i].reuse == o.reuse_samples && memo[i].window == window &&
            memo[i].disk == disk) {
            snprintf(msg, n, "%s", memo[i].msg);
            return memo[i].bytes;
        }
    struct oc_train_result res;
    struct oc_err err;
    uint64_t unit = 16u << 10, lo = 1, hi = 32 * MIB / unit; /* lo fails, hi trains */
    o.strategy = "diskgnn";
    o.epochs = 1;
    msg[0] = '\0';
    o.mem_budget = hi * unit;
    if (train_under(dir, &o, NULL, NULL, &res, &err) != OC_OK) {
        fprintf(stderr, "  diskgnn does not train at 32 MiB: %s\n", err.msg);
        return 0;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        o.mem_budget = mid * unit;
        int rc = train_under(dir, &o, NULL, NULL, &res, &err);
        if (rc == OC_OK) {
            hi = mid;
            continue;
        }
        OC_CHECK(rc == OC_ERR_BUDGET);
        if (rc != OC_ERR_BUDGET)
            fprintf(stderr, "  at %" PRIu64 " bytes: %s\n", o.mem_budget, err.msg);
        lo = mid;
        snprintf(msg, n, "%s", err.msg);
    }
    if (n_memo < 16) {
        memo[n_memo].dir = dir;
        memo[n_memo].reuse = o.reuse_samples;
        memo[n_memo].window = window;
        memo[n_memo].disk = disk;
        memo[n_memo].bytes = hi * unit;
        snprintf(memo[n_memo].msg, sizeof(memo[n_memo].msg), "%s", msg);
        n_memo++;
    }
    return hi * unit;
}

/* Bytes of the batch records in one epoch's chunks (the spill file of its window). */
static inline uint64_t epoch_record_bytes(const struct oc_store_stats *st, uint64_t n_batches)
{
    return st->graph_read_bytes - n_batches * OC_PLAN_CHUNK_HEADER - 8 * st->requested_rows;
}

static inline void log_verbose(const char *what, const struct epoch_log *l)
{
    if (!getenv("OC_TEST_VERBOSE"))
        return;
    for (uint32_t e = 0; e < l->n; e++) {
        const struct oc_store_stats *st = &l->st[e];
        fprintf(stderr,
                "  %s epoch %u: cpu %" PRIu64 " dc %" PRIu64 " packed %" PRIu64 " disk %" PRIu64
                " amp %.4f read %" PRIu64 " graph %" PRIu64 " plan files %" PRIu64
                " (dir %d files, %" PRIu64 " bytes)\n",
                what, e, st->tier_rows[OC_STORE_TIER_CPU], st->tier_rows[OC_STORE_TIER_DISK_CACHE],
                st->tier_rows[OC_STORE_TIER_PACKED], st->tier_rows[OC_STORE_TIER_DISK],
                oc_store_stats_amplification(st), st->read_bytes, st->graph_read_bytes,
                st->plan_file_bytes, l->dir_files[e], l->dir_bytes[e]);
    }
}

#endif
