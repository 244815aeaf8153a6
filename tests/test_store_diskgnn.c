/*
 * test_store_diskgnn.c — the `diskgnn` strategy (offline-sampled windows
 * packed into per-batch chunks and segment caches, 4-stage pipeline):
 * training with fresh samples and with --reuse-samples ends with `memory`'s
 * weights (in-memory and disk topology, any row size, f32 and f16); a packed
 * window reads little more than it needs; --disk-budget bounds the files on
 * disk and forces segment caches; budgets too small fail naming the option or
 * the store; a window file with a flipped byte or cut short ends in an error
 * naming it; allocation, write and read faults end in clean errors with no
 * leak and no file left behind; evaluation gathers and batches asked out of
 * plan order read the right rows.
 *
 * Place in the data flow: tests of store (generate → dataset → sample → plan
 * → store → train).
 * Thread-safety: test code is single-threaded; the store runs its pipeline
 * and planner threads (the whole file runs under TSan).
 * Ownership: every store, pool, sampler, batch and fixture is freed by the
 * test that made it.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
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
static void set_disk_budget(struct oc_train_opts *o, double x)
{
    struct oc_err err;
    OC_CHECK_OK(oc_train_opts_set(o, "disk-budget", x, &err), &err);
}

static int plan_files(const char *plan, uint64_t *bytes)
{
    char dir[1200], path[1600];
    int n = 0;
    if (bytes)
        *bytes = 0;
    snprintf(dir, sizeof(dir), "%s/diskgnn", plan);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue; /* removed meanwhile by the planner or the loader */
        n++;
        if (bytes)
            *bytes += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return n;
}

/* The packed window file of sample epoch `epoch` ("w<epoch>-<content key>.bin"; "" if none). */
static void window_path(const char *plan, uint64_t epoch, char *buf, size_t n)
{
    char dir[1200], want[64];
    snprintf(dir, sizeof(dir), "%s/diskgnn", plan);
    int wl = snprintf(want, sizeof(want), "w%" PRIu64 ".0-", epoch); /* its first window */
    buf[0] = '\0';
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, want, (size_t)wl) == 0 && l == (size_t)wl + 16 + 4 &&
            strcmp(e->d_name + l - 4, ".bin") == 0)
            oc_path_join(buf, n, dir, e->d_name, NULL);
    }
    if (d)
        closedir(d);
}

static uint64_t le64(const uint8_t *p)
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
static uint64_t window_chunks(const char *path, uint64_t row_bytes, struct chunk_pos *c,
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
static void flip_byte(const char *path, uint64_t off)
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
static struct oc_store_config dg_config(const struct fixture *fx, struct oc_pool *pool,
                                        const char *plan, uint32_t e0, uint32_t e1, int reuse)
{
    struct oc_store_config c = fixture_config(fx, pool);
    c.first_epoch = e0;
    c.n_epochs = e1;
    c.plan_dir = plan;
    c.reuse_samples = reuse;
    return c;
}

static int dg_open(const struct oc_store_config *c, struct oc_store **s, struct oc_err *err)
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
static uint64_t dg_min_mem(struct oc_store_config c)
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

static int ref_init(struct ref_sampler *r, const struct fixture *fx)
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

static void ref_free(struct ref_sampler *r)
{
    oc_sample_batch_deinit(&r->b);
    oc_sample_epoch_deinit(&r->ep);
    oc_sample_sampler_free(r->sm);
}

/* Batch i of sample epoch se, as train samples it (r->b). */
static const struct oc_sample_batch *ref_batch(struct ref_sampler *r, const struct fixture *fx,
                                               uint64_t se, uint64_t i)
{
    struct oc_err err;
    const uint64_t *seeds;
    uint64_t n;
    oc_sample_epoch_shuffle(&r->ep, fx->so.seed, se);
    OC_CHECK_OK(oc_sample_epoch_batch(&r->ep, i, &seeds, &n, &err), &err);
    OC_CHECK_OK(oc_sample_neighbors(r->sm, se, i, seeds, n, &r->b, &err), &err);
    return &r->b;
}

/* Rows of out (n x dim) that differ from the file's rows of ids. */
static uint64_t bad_rows(const struct fixture *fx, const uint64_t *ids, uint64_t n,
                         const float *out)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < n; k++)
        bad += memcmp(out + k * fx->dim, fx->ref + ids[k] * fx->dim, fx->dim * sizeof(float)) != 0;
    return bad;
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
static int drive_plan(const struct fixture *fx, struct oc_store *s, const struct oc_store_config *c,
                      struct ref_sampler *ref, struct drive *d, struct oc_err *err)
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
                d->bad += bad_rows(fx, b.input_ids, b.n_input, out);
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
static const char *train_graph(uint32_t dim, enum oc_dtype dtype)
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

static uint64_t graph_row_bytes(uint32_t dim, enum oc_dtype dtype)
{
    return (uint64_t)dim * oc_dtype_size(dtype);
}

static void train_opts(struct oc_train_opts *o)
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
    char corrupted[1400]; /* the file it damaged */
};

static void log_epoch(void *ctx, const struct oc_train_epoch_stats *st)
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
        window_path(l->plan, 0, l->corrupted, sizeof(l->corrupted));
        uint64_t n = window_chunks(l->corrupted, l->row_bytes, c, 64);
        OC_CHECK(n > l->corrupt_chunk);
        if (n > l->corrupt_chunk)
            flip_byte(l->corrupted, c[l->corrupt_chunk].off + 20); /* the batch field */
    }
}

/* oc_train_run with the accountant holding the process to o->mem_budget, as the CLI does. */
static int train_under(const char *dir, const struct oc_train_opts *o, oc_train_epoch_fn fn,
                       void *ctx, struct oc_train_result *res, struct oc_err *err)
{
    oc_mem_set_budget(o->mem_budget ? oc_mem_used() + o->mem_budget : 0);
    int rc = oc_train_run(dir, o, fn, ctx, NULL, res, err);
    oc_mem_set_budget(0);
    return rc;
}

static int train(const char *dir, const struct oc_train_opts *o, struct epoch_log *log,
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
 * epoch; it does not depend on the disk budget); budgets below it fail with
 * OC_ERR_BUDGET, and the largest of them (msg) is diskgnn's own buffers not
 * fitting. Remembered per graph and reuse_samples. 0 if none up to 32 MiB.
 */
static uint64_t train_min_budget(const char *dir, struct oc_train_opts o, char *msg, size_t n)
{
    static struct {
        const char *dir;
        int reuse;
        double window;
        uint64_t bytes;
        char msg[800];
    } memo[16];
    static int n_memo;
    double window = oc_train_opts_get(&o, "window", 0.0);
    for (int i = 0; i < n_memo; i++)
        if (memo[i].dir == dir && memo[i].reuse == o.reuse_samples && memo[i].window == window) {
            snprintf(msg, n, "%s", memo[i].msg);
            return memo[i].bytes;
        }
    struct oc_train_result res;
    struct oc_err err;
    uint64_t unit = 16u << 10, lo = 1, hi = 32 * MIB / unit; /* lo fails, hi trains */
    o.strategy = "diskgnn";
    o.epochs = 1;
    set_disk_budget(&o, 0);
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
        memo[n_memo].bytes = hi * unit;
        snprintf(memo[n_memo].msg, sizeof(memo[n_memo].msg), "%s", msg);
        n_memo++;
    }
    return hi * unit;
}

/* Bytes of the batch records in one epoch's chunks (the spill file of its window). */
static uint64_t epoch_record_bytes(const struct oc_store_stats *st, uint64_t n_batches)
{
    return st->graph_read_bytes - n_batches * OC_PLAN_CHUNK_HEADER - 8 * st->requested_rows;
}

static void log_verbose(const char *what, const struct epoch_log *l)
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

/* ---- 1, 2: training equals memory ----------------------------------------------------------- */

OC_TEST(fresh_samples_train_like_memory)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    for (int topo = 0; topo < 2; topo++) {
        for (int b = 0; b < 2; b++) {
            struct epoch_log log;
            memset(&log, 0, sizeof(log));
            train_opts(&o);
            o.strategy = "diskgnn";
            o.topology_disk = topo;
            o.topo_cache_bytes = topo ? 256u << 10 : 0; /* a part of the lists */
            o.mem_budget = b ? 64 * MIB : 0;
            uint64_t live = oc_mem_n_live();
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(res.epochs_run == 3 && log.n == 3);
            OC_CHECK(oc_mem_n_live() == live);
            OC_CHECK(plan_files(log.plan, NULL) == 0); /* the windows went with the store */
            for (uint32_t e = 0; e < log.n; e++) {
                const struct oc_store_stats *st = &log.st[e];
                OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0); /* every row as planned */
                OC_CHECK(st->graph_read_bytes > 0);
                OC_CHECK(st->requested_rows == st->tier_rows[OC_STORE_TIER_CPU] +
                                                   st->tier_rows[OC_STORE_TIER_PACKED] +
                                                   st->tier_rows[OC_STORE_TIER_DISK_CACHE]);
            }
            log_verbose(topo ? "fresh, disk topology" : "fresh", &log);
        }
    }
}

OC_TEST(reuse_samples_train_like_memory_reusing)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result fresh, ref, res;
    struct oc_err err;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &fresh, &err), &err);
    o.reuse_samples = 1;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    OC_CHECK(strcmp(ref.weights_sha256, fresh.weights_sha256) != 0); /* training changes */
    for (int topo = 0; topo < 2; topo++) {
        for (int b = 0; b < 2; b++) {
            struct epoch_log log;
            memset(&log, 0, sizeof(log));
            train_opts(&o);
            o.reuse_samples = 1;
            o.strategy = "diskgnn";
            o.topology_disk = topo;
            o.mem_budget = b ? 64 * MIB : 0;
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(log.n == 3);
            /* one window, packed once, read every epoch */
            for (uint32_t e = 0; e < log.n; e++) {
                OC_CHECK(log.st[e].plan_file_bytes == log.st[0].plan_file_bytes);
                OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_DISK] == 0);
                OC_CHECK(log.st[e].plan_pack_us == log.st[0].plan_pack_us); /* a total */
                OC_CHECK(e == 0 || log.st[e].requested_rows == log.st[0].requested_rows);
            }
            OC_CHECK(plan_files(log.plan, NULL) == 0);
        }
    }
    /* Strategies that sample each epoch ahead of training refuse it. */
    const char *refuse[] = {"ginex", "gnndrive"};
    for (int i = 0; i < 2; i++) {
        train_opts(&o);
        o.reuse_samples = 1;
        o.strategy = refuse[i];
        o.mem_budget = 64 * MIB;
        OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_UNSUPPORTED, &err,
                     "--reuse-samples");
        OC_CHECK(strstr(err.msg, refuse[i]) != NULL);
    }
}

/* ---- 3, 5: amplification, row sizes, memory budget ----------------------------------------- */

OC_TEST(packed_windows_read_what_they_need)
{
    const char *dir = train_graph(256, OC_DTYPE_F32); /* 1 KiB rows */
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
    OC_CHECK(min > 0);
    if (!min)
        return;
    /* Below the smallest budget it is diskgnn's own buffers that do not fit. */
    OC_CHECK(strstr(msg, "store diskgnn") != NULL && strstr(msg, "needs at least") != NULL);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  smallest budget %" PRIu64 " bytes; below: %s\n", min, msg);
    /* 256 KiB over it caches about 250 of the 4000 rows: most accesses are packed */
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    o.strategy = "diskgnn";
    o.mem_budget = min + (256u << 10);
    OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3);
    for (uint32_t e = 0; e < log.n; e++) {
        const struct oc_store_stats *st = &log.st[e];
        OC_CHECK(st->tier_rows[OC_STORE_TIER_PACKED] > st->tier_rows[OC_STORE_TIER_CPU]);
        OC_CHECK(st->tier_rows[OC_STORE_TIER_CPU] > 0);
        OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK_CACHE] == 0); /* s = 1: nothing shared */
        OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0);
        OC_CHECK(st->requested_disk_bytes ==
                 st->tier_rows[OC_STORE_TIER_PACKED] * graph_row_bytes(256, OC_DTYPE_F32));
        OC_CHECK(st->read_bytes >= st->requested_disk_bytes);
        OC_CHECK(oc_store_stats_amplification(st) <= 1.05);
        OC_CHECK(st->n_reads >= 8); /* a read per chunk at least */
        OC_CHECK(st->held_bytes <= o.mem_budget);
    }
    log_verbose("1 KiB rows", &log);
}

OC_TEST(smallest_budget_trains_every_epoch)
{
    /* The budget found with one epoch also holds every later window (fresh samples: the
       planner's, and batches larger than the first window's) */
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    for (int reuse = 0; reuse < 2; reuse++) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min;
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        for (uint32_t e = 0; e < log.n; e++)
            OC_CHECK(log.st[e].held_bytes <= o.mem_budget);
        log_verbose(reuse ? "smallest budget, reuse" : "smallest budget, fresh", &log);
    }
}

/*
 * Fresh samples in windows shorter than an epoch: with --window 3 (of 8
 * batches per epoch) training equals `memory` and at most two windows exist
 * at once; with the window derived from
 * the budget, the smallest budget diskgnn accepts is below what a whole
 * epoch's plan needs, and training there equals `memory` too.
 */
OC_TEST(windows_shorter_than_an_epoch_train_like_memory)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    struct epoch_log log;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    o.strategy = "diskgnn";
    OC_CHECK_OK(oc_train_opts_set(&o, "window", 3, &err), &err);
    memset(&log, 0, sizeof(log));
    OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3);
    for (uint32_t e = 0; e < log.n; e++) {
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr, "  epoch %u: %d plan files, %" PRIu64 " rows from disk\n", e,
                    log.dir_files[e], log.st[e].tier_rows[OC_STORE_TIER_DISK]);
        /* the window read, the next one packed (or its temporary) and that one's spilled
           records: two windows at most */
        OC_CHECK(log.dir_files[e] <= 3 && log.st[e].tier_rows[OC_STORE_TIER_DISK] == 0);
    }
    OC_CHECK(plan_files(log.plan, NULL) == 0);

    /* Store level: the smallest budget with windows derived from it is below what a whole
       epoch's plan needs, and a store opened there hands over train's batches and rows. */
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 4000, 16, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan-windows", oc_test_tmpdir());
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    c.window_batches = 1000000; /* clamped to the epoch */
    uint64_t min_whole = dg_min_mem(c);
    c.window_batches = 0;
    uint64_t min_derived = dg_min_mem(c);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr,
                "  smallest store budget: whole-epoch windows %" PRIu64 ", derived %" PRIu64
                " (%" PRIu64 " batches per epoch)\n",
                min_whole, min_derived, ((fx.n_train + fx.batch_size - 1) / fx.batch_size));
    OC_CHECK(((fx.n_train + fx.batch_size - 1) / fx.batch_size) >= 8 && min_derived > 0 &&
             min_derived < min_whole);
    struct ref_sampler rs;
    struct oc_store *st = NULL;
    struct drive d;
    c.mem_bytes = min_derived;
    if (ref_init(&rs, &fx) && dg_open(&c, &st, &err) == OC_OK) {
        OC_CHECK_OK(drive_plan(&fx, st, &c, &rs, &d, &err), &err);
        OC_CHECK(d.bad == 0 && d.n_batches == 2 * rs.nb);
    }
    oc_store_free(st);
    ref_free(&rs);
    fixture_free(&fx);
}

/* Trains (37 x dtype rows) with a small cache, then with a disk budget forcing segments. */
static void odd_rows(enum oc_dtype dtype, int fresh_too)
{
    const char *dir = train_graph(37, dtype);
    if (!dir)
        return;
    uint64_t rb = graph_row_bytes(37, dtype), feat_bytes = 4000 * rb;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    uint64_t w = 0, rec = 0; /* the reused window at s = 1, and its records */
    for (int reuse = 1; reuse >= !fresh_too; reuse--) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min + (32u << 10); /* a few hundred rows cached */
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        for (uint32_t e = 0; e < log.n; e++) {
            OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_PACKED] > 0);
            OC_CHECK(log.st[e].tier_rows[OC_STORE_TIER_DISK_CACHE] == 0);
        }
        if (reuse) { /* fresh windows are packed between epochs: the counter may be 0 then */
            w = log.st[0].plan_file_bytes;
            rec = epoch_record_bytes(&log.st[0], 8);
            OC_CHECK(w > 0);
        }
        log_verbose(dtype == OC_DTYPE_F16 ? "37 x f16" : "37 x f32", &log);
        /* A window 0.8 of the s = 1 size (records apart): segments, disk-cache rows. */
        double window = (double)rec + 0.8 * (double)w;
        memset(&log, 0, sizeof(log));
        set_disk_budget(&o, (reuse ? 1.0 : 2.0) * window / (double)feat_bytes);
        uint64_t limit = (uint64_t)(oc_train_opts_get(&o, "disk-budget", 0.0) * (double)feat_bytes);
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        uint64_t dc = 0;
        for (uint32_t e = 0; e < log.n; e++) {
            dc += log.st[e].tier_rows[OC_STORE_TIER_DISK_CACHE];
            OC_CHECK(log.st[e].plan_file_bytes <= limit && log.dir_bytes[e] <= limit);
        }
        OC_CHECK(dc > 0);
        log_verbose(dtype == OC_DTYPE_F16 ? "37 x f16, disk budget" : "37 x f32, disk budget",
                    &log);
    }
}

OC_TEST(odd_row_sizes_train_like_memory)
{
    odd_rows(OC_DTYPE_F32, 1); /* 148-byte rows, fresh samples and reused */
    odd_rows(OC_DTYPE_F16, 0); /* 74-byte rows, reused (the f16 path; fewer runs) */
}

OC_TEST(memory_budget_too_small_names_the_store)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, reuse);
        uint64_t live = oc_mem_n_live();
        c.mem_bytes = 64u << 10;
        OC_CHECK_ERR(dg_open(&c, &s, &err), OC_ERR_BUDGET, &err, "store diskgnn");
        OC_CHECK(strstr(err.msg, "needs at least") != NULL);
        OC_CHECK(s == NULL && oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0); /* the sampled records are gone */
        uint64_t min = dg_min_mem(c);
        OC_CHECK(min > 0);
        c.mem_bytes = min - 4096;
        OC_CHECK_ERR(dg_open(&c, &s, &err), OC_ERR_BUDGET, &err, "store diskgnn");
        /* The smallest budget caches (about) no row and still reads every row right. */
        struct ref_sampler ref;
        c.mem_bytes = min;
        OC_CHECK_OK(dg_open(&c, &s, &err), &err);
        if (s && ref_init(&ref, &fx)) {
            struct drive d;
            OC_CHECK_OK(drive_plan(&fx, s, &c, &ref, &d, &err), &err);
            OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
            struct oc_store_stats st;
            oc_store_stats(s, &st);
            OC_CHECK(st.held_bytes <= c.mem_bytes);
            /* (about) no row: the 4 KiB the search resolves to hold a few dozen of the
               hottest rows, which serve a share of the accesses well below a fifth */
            OC_CHECK(st.tier_rows[OC_STORE_TIER_CPU] < st.requested_rows / 5);
            ref_free(&ref);
        }
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0);
    }
    fixture_free(&fx);
}

/* ---- 4: disk budget ------------------------------------------------------------------------ */

OC_TEST(disk_budget_bounds_the_files_and_forces_segments)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    uint64_t feat_bytes = 4000 * graph_row_bytes(256, OC_DTYPE_F32);
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    uint64_t w = 0, rec = 0; /* the reused window at s = 1, and its records */
    for (int reuse = 1; reuse >= 0; reuse--) {
        train_opts(&o);
        o.reuse_samples = reuse;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        uint64_t min = train_min_budget(dir, o, msg, sizeof(msg));
        OC_CHECK(min > 0);
        if (!min)
            return;
        /* About a thousand rows cached; the window at s = 1 without a disk budget: */
        struct epoch_log log;
        memset(&log, 0, sizeof(log));
        o.strategy = "diskgnn";
        o.mem_budget = min + MIB;
        OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        if (reuse) { /* fresh windows are packed between epochs: the counter may be 0 then */
            w = log.st[0].plan_file_bytes;
            rec = epoch_record_bytes(&log.st[0], 8);
        }
        log_verbose(reuse ? "no disk budget, reuse" : "no disk budget, fresh", &log);
        OC_CHECK(w > 0);
        /* 1x features for one window (reuse) or 2x for two; then one 0.7 of the s = 1 size */
        double budgets[2] = {reuse ? 1.0 : 2.0, (reuse ? 1.0 : 2.0) *
                                                    ((double)rec + 0.7 * (double)w) /
                                                    (double)feat_bytes};
        for (int k = 0; k < 2; k++) {
            memset(&log, 0, sizeof(log));
            set_disk_budget(&o, budgets[k]);
            uint64_t limit =
                (uint64_t)(oc_train_opts_get(&o, "disk-budget", 0.0) * (double)feat_bytes);
            int forced = k == 1 || (reuse && w + rec > limit);
            OC_CHECK_OK(train(dir, &o, &log, &res, &err), &err);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            OC_CHECK(log.n == 3);
            for (uint32_t e = 0; e < log.n; e++) {
                const struct oc_store_stats *st = &log.st[e];
                OC_CHECK(st->plan_file_bytes <= limit && log.dir_bytes[e] <= limit);
                OC_CHECK(!reuse || (st->plan_file_bytes > 0 && log.dir_files[e] == 1));
                OC_CHECK(forced ? st->tier_rows[OC_STORE_TIER_DISK_CACHE] > 0
                                : st->tier_rows[OC_STORE_TIER_DISK_CACHE] == 0 || !reuse);
                OC_CHECK(st->tier_rows[OC_STORE_TIER_DISK] == 0);
            }
            OC_CHECK(plan_files(log.plan, NULL) == 0);
            if (getenv("OC_TEST_VERBOSE"))
                fprintf(stderr, "  disk budget %.3f (%" PRIu64 " bytes, s = 1 needs %" PRIu64 ")\n",
                        oc_train_opts_get(&o, "disk-budget", 0.0), limit, w + rec);
            log_verbose(reuse ? "disk budget, reuse" : "disk budget, fresh", &log);
        }
        /* Too small for any segment length: fails at start naming the option. */
        memset(&log, 0, sizeof(log));
        set_disk_budget(&o, 0.001);
        OC_CHECK_ERR(train(dir, &o, &log, &res, &err), OC_ERR_BUDGET, &err, "--disk-budget");
        OC_CHECK(res.epochs_run == 0);
        OC_CHECK(plan_files(log.plan, NULL) == 0);
        set_disk_budget(&o, -1.0);
        OC_CHECK(train(dir, &o, NULL, &res, &err) != OC_OK);
    }
}

/* ---- 6: damaged window files ------------------------------------------------------------------ */

enum damage { DAMAGE_HEADER, DAMAGE_ADDR, DAMAGE_TRUNCATE };

/*
 * Opens a reuse-samples store (one window file, kept for both epochs), damages
 * chunk k of it before the loader gets there (it reads at most three chunks
 * ahead of the trainer), and trains through: the error must name the file.
 */
static void damaged_window(const struct fixture *fx, const char *plan, enum damage how)
{
    struct oc_err err;
    struct oc_store *s = NULL;
    struct oc_store_config c = dg_config(fx, NULL, plan, 0, 2, 1);
    char path[1400];
    struct chunk_pos ch[64];
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (!s)
        return;
    window_path(plan, 0, path, sizeof(path));
    uint64_t n = window_chunks(path, fx->row_bytes, ch, 64), k = 6;
    OC_CHECK(n == (fx->n_train + fx->batch_size - 1) / fx->batch_size && n > k);
    if (n <= k) {
        oc_store_free(s);
        return;
    }
    const char *want = NULL;
    switch (how) {
    case DAMAGE_HEADER:
        flip_byte(path, ch[k].off + 8); /* the epoch field */
        want = "bad header";
        break;
    case DAMAGE_ADDR: /* the last address-table entry */
        flip_byte(path,
                  ch[k].off + OC_PLAN_CHUNK_HEADER + ch[k].rec_bytes + 8 * (ch[k].n_input - 1) + 1);
        want = "CRC";
        break;
    case DAMAGE_TRUNCATE:
        OC_CHECK(truncate(path, (off_t)(ch[k].off + 100)) == 0);
        want = "truncated";
        break;
    }
    struct drive d;
    OC_CHECK_ERR(drive_plan(fx, s, &c, NULL, &d, &err), OC_ERR_FORMAT, &err, path);
    OC_CHECK(strstr(err.msg, want) != NULL);
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  at epoch %" PRIu64 " batch %" PRIu64 ": %s\n", d.fail_epoch,
                d.fail_batch, err.msg);
    /* every batch before the damaged one came through; the error at the latest there (the
       reused window's chunks are read in epoch 0's order: chunk k comes at its place; cut
       short, the file loses every chunk from k on, and the first of them read fails) */
    uint64_t order[64], at = 0;
    oc_sample_batch_order(fx->so.seed, 0, order, n);
    while (at < n && (how == DAMAGE_TRUNCATE ? order[at] < k : order[at] != k))
        at++;
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  the first damaged chunk is read at position %" PRIu64 "\n", at);
    OC_CHECK(d.fail_epoch == 0 && d.fail_batch <= at && d.fail_batch + 3 >= at);
    /* the error stays: the next call reports it again */
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    OC_CHECK(oc_store_load_batch(s, 0, d.fail_batch, &b, &err) != OC_OK);
    oc_sample_batch_deinit(&b);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(plan_files(plan, NULL) == 0);
}

OC_TEST(damaged_window_file_is_named)
{
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 3000, 24, OC_DTYPE_F16)) { /* 9 batches */
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    damaged_window(&fx, plan, DAMAGE_HEADER);
    damaged_window(&fx, plan, DAMAGE_ADDR);
    damaged_window(&fx, plan, DAMAGE_TRUNCATE);
    fixture_free(&fx);
}

OC_TEST(window_damaged_between_epochs_fails_training)
{
    const char *dir = train_graph(64, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result res;
    struct oc_err err;
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    train_opts(&o);
    o.strategy = "diskgnn";
    o.reuse_samples = 1;
    o.mem_budget = 0;
    log.corrupt = 1;
    log.corrupt_epoch = 0;
    log.corrupt_chunk = 6; /* of 8: the loader is at most three chunks into epoch 1 */
    log.row_bytes = graph_row_bytes(64, OC_DTYPE_F32);
    uint64_t live = oc_mem_n_live();
    OC_CHECK_ERR(train(dir, &o, &log, &res, &err), OC_ERR_FORMAT, &err, "bad header");
    OC_CHECK(log.corrupted[0] && strstr(err.msg, log.corrupted) != NULL);
    OC_CHECK(res.epochs_run == 1);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK(plan_files(log.plan, NULL) == 0);
}

OC_TEST(stale_files_of_dead_processes_are_removed)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    char plan[800], dg[900], dead[1200], live_pid[1200];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    snprintf(dg, sizeof(dg), "%s/diskgnn", plan);
    OC_CHECK_OK(oc_mkdir_p(dg, &err), &err);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    snprintf(dead, sizeof(dead), "%s/w0-%ld.bin", dg, (long)child);
    snprintf(live_pid, sizeof(live_pid), "%s/w0-1.bin", dg); /* pid 1 is alive */
    OC_CHECK_OK(oc_write_file_atomic(dead, "junk", 4, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(live_pid, "junk", 4, &err), &err);
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 1, 0);
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    OC_CHECK(!oc_path_exists(dead) && oc_path_exists(live_pid));
    OC_CHECK(plan_files(plan, NULL) == 2); /* its own window and pid 1's */
    oc_store_free(s);
    OC_CHECK(plan_files(plan, NULL) == 1);
    fixture_free(&fx);
}

/* Files in PLAN/diskgnn whose name starts with prefix. */
static int plan_files_named(const char *plan, const char *prefix)
{
    char dir[1200];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s/diskgnn", plan);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/*
 * Runs in two containers (same pid 77, other host ids) and a third with
 * another seed, on one dataset and plan directory: none removes another's
 * files, a copy renamed over a window of the same content changes nothing
 * for the run reading the first, and each reads exactly train's batches and
 * the file's rows. Leftovers of a run killed with -9 (an unlocked window, a
 * temporary of a dead pid of this host) go; a fresh temporary of another
 * host stays.
 */
OC_TEST(concurrent_runs_keep_each_others_files)
{
    struct fixture fx;
    struct oc_err err;
    struct ref_sampler ref;
    char plan[800], dg[900], killed[1200], dead_tmp[1300], foreign[1300];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan-concurrent", oc_test_tmpdir());
    snprintf(dg, sizeof(dg), "%s/diskgnn", plan);
    OC_CHECK_OK(oc_mkdir_p(dg, &err), &err);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    snprintf(killed, sizeof(killed), "%s/w0-0123456789abcdef.bin", dg);
    snprintf(dead_tmp, sizeof(dead_tmp),
             "%s/w1-0123456789abcdef.bin.tmp-aaaaaaaaaaaa-%ld-0123456789ab-3", dg, (long)child);
    snprintf(foreign, sizeof(foreign), "%s/w1.rec.tmp-cccccccccccc-%ld-0123456789ab-0", dg,
             (long)child);
    OC_CHECK_OK(oc_write_file_atomic(killed, "junk", 4, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(dead_tmp, "junk", 4, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(foreign, "junk", 4, &err), &err);

    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    struct oc_sample_opts so3 = fx.so;
    so3.seed += 1;
    struct oc_store_config c3 = c;
    c3.sample_opts = &so3;
    struct oc_store *a = NULL, *b = NULL, *s3 = NULL;
    oc_tmp_set_identity("aaaaaaaaaaaa", 77);
    OC_CHECK_OK(dg_open(&c, &a, &err), &err);
    OC_CHECK(!oc_path_exists(killed) && !oc_path_exists(dead_tmp) && oc_path_exists(foreign));
    oc_tmp_set_identity("bbbbbbbbbbbb", 77);
    OC_CHECK_OK(dg_open(&c, &b, &err), &err); /* its window 0 has a's name: renamed over it */
    oc_tmp_set_identity("dddddddddddd", 77);
    OC_CHECK_OK(dg_open(&c3, &s3, &err), &err);
    oc_tmp_set_identity(NULL, 0);
    OC_CHECK(plan_files_named(plan, "w0.0-") == 2); /* a's and b's name, s3's */
    OC_CHECK(oc_path_exists(foreign));
    if (!a || !b || !s3 || !ref_init(&ref, &fx)) {
        oc_store_free(a);
        oc_store_free(b);
        oc_store_free(s3);
        fixture_free(&fx);
        return;
    }
    struct drive d;
    OC_CHECK_OK(drive_plan(&fx, a, &c, &ref, &d, &err), &err);
    OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
    oc_store_free(a);
    /* a dropped its windows, but the name it packed window 0 under is b's file now */
    OC_CHECK(plan_files_named(plan, "w0.0-") == 2);
    OC_CHECK_OK(drive_plan(&fx, b, &c, &ref, &d, &err), &err);
    OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
    OC_CHECK_OK(drive_plan(&fx, s3, &c3, NULL, &d, &err), &err);
    OC_CHECK(d.n_batches == 2 * ref.nb);
    oc_store_free(b);
    oc_store_free(s3);
    OC_CHECK(plan_files(plan, NULL) == 1 && oc_path_exists(foreign));
    ref_free(&ref);
    fixture_free(&fx);
}

/* Plan files go to --plan-dir: a read-only dataset directory trains, and stays untouched. */
OC_TEST(plan_dir_lets_a_read_only_dataset_train)
{
    char data[1024], plan[1100], own_plan[1100];
    struct oc_generate_opts g;
    struct oc_err err;
    snprintf(data, sizeof(data), "%s/readonly", oc_test_tmpdir());
    snprintf(plan, sizeof(plan), "%s/elsewhere", oc_test_tmpdir());
    snprintf(own_plan, sizeof(own_plan), "%s/plan", data);
    oc_generate_opts_default(&g);
    g.n_nodes = 4000;
    g.avg_degree = 6;
    g.feat_dim = 16;
    g.n_classes = 4;
    g.train_frac = 0.25;
    g.seed = 3;
    g.n_threads = 1;
    OC_CHECK_OK(oc_generate(&g, data, NULL, &err), &err);
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(data, &o, NULL, NULL, NULL, &ref, &err), &err);

    OC_CHECK(chmod(data, 0555) == 0);
    struct epoch_log log;
    memset(&log, 0, sizeof(log));
    log.plan = plan;
    o.strategy = "diskgnn";
    o.plan_dir = plan;
    OC_CHECK_OK(train_under(data, &o, log_epoch, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3 && log.dir_files[0] > 0); /* the windows were under --plan-dir */
    OC_CHECK(!oc_path_exists(own_plan));
    OC_CHECK(plan_files(plan, NULL) == 0);

    /* ginex's superbatches too. */
    o.strategy = "ginex";
    OC_CHECK_OK(train_under(data, &o, NULL, NULL, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(!oc_path_exists(own_plan));
    int n_ginex = 0;
    DIR *d = opendir(plan);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n_ginex += strncmp(e->d_name, "ginex-", 6) == 0;
    if (d)
        closedir(d);
    OC_CHECK(n_ginex == 1);
    o.strategy = "diskgnn";

    /* Without --plan-dir the error says what to do. */
    o.plan_dir = NULL;
    if (geteuid() != 0) {
        OC_CHECK_ERR(train_under(data, &o, NULL, NULL, &res, &err), OC_ERR_IO, &err, "--plan-dir");
        OC_CHECK(strstr(err.msg, "Permission denied") != NULL);
        OC_CHECK(!oc_path_exists(own_plan));
        OC_CHECK(chmod(data, 0755) == 0);
    } else {
        fprintf(stderr, "  running as root: chmod 0555 does not stop root's writes; the "
                        "permission part is skipped, the message is checked with DIR/plan a "
                        "file instead\n");
        OC_CHECK(chmod(data, 0755) == 0);
        OC_CHECK_OK(oc_write_file_atomic(own_plan, "not a directory", 15, &err), &err);
        int rc = train_under(data, &o, NULL, NULL, &res, &err);
        OC_CHECK(rc != OC_OK && strstr(err.msg, "--plan-dir") != NULL);
        unlink(own_plan);
    }
}

/* ---- 7: faults ------------------------------------------------------------------------------- */

/*
 * Fails the nth operation of `kind` (once, or from then on in persistent
 * mode, where n is sampled) for n = 1, 2, ... until a run (open, both
 * epochs of fresh samples, free) no longer reaches it; every run that did
 * must end with `want` (and a message containing one of names, if given),
 * no leak and no file under the plan directory. Returns the n that passed.
 */
static uint64_t fault_loop_mode(int mode, const struct fixture *fx, const char *plan,
                                uint64_t mem_bytes, enum oc_fault_kind kind, int sys_errno,
                                int reuse, int want, const char *const *names, uint64_t max)
{
    struct oc_err err;
    struct oc_store_config c = dg_config(fx, NULL, plan, 0, 2, reuse);
    c.mem_bytes = mem_bytes;
    uint64_t base = oc_mem_n_live(), nth = 1;
    int reported = 0;
    for (; nth < max; nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0)) {
        struct oc_store *s = NULL;
        struct drive d;
        oc_err_clear(&err);
        fault_arm_mode(mode, kind, nth, sys_errno);
        int rc = dg_open(&c, &s, &err);
        if (rc == OC_OK)
            rc = drive_plan(fx, s, &c, NULL, &d, &err);
        oc_store_free(s); /* joins the threads: the fault has fired or not */
        int fired = oc_fault_fired(kind);
        oc_fault_disarm_all();
        int ok = fired ? rc == want : rc == OC_OK;
        if (ok && fired && names) {
            int named = 0;
            for (const char *const *p = names; *p; p++)
                named |= strstr(err.msg, *p) != NULL;
            ok = named;
        }
        OC_CHECK(ok);
        if (!ok && reported++ < 3)
            fprintf(stderr, "  %s fault %d at op %" PRIu64 " (%s): %s (%s)\n",
                    fault_mode_name(mode), (int)kind, nth, fired ? "fired" : "not fired",
                    oc_status_str(rc), err.msg);
        OC_CHECK(oc_mem_n_live() == base);
        int left = plan_files(plan, NULL);
        OC_CHECK(left == 0);
        if (left && reported++ < 3)
            fprintf(stderr, "  fault %d at op %" PRIu64 ": %d files left\n", (int)kind, nth, left);
        if (!fired)
            break;
    }
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  %s fault %d (errno %d, reuse %d): a clean run at op %" PRIu64 "\n",
                fault_mode_name(mode), (int)kind, sys_errno, reuse, nth);
    return nth;
}

/* fault_loop_mode one-shot (every n; returns its n) and persistent (sampled n). */
static uint64_t fault_loop(const struct fixture *fx, const char *plan, uint64_t mem_bytes,
                           enum oc_fault_kind kind, int sys_errno, int reuse, int want,
                           const char *const *names, uint64_t max)
{
    fault_loop_mode(FAULT_PERSISTENT, fx, plan, mem_bytes, kind, sys_errno, reuse, want, names,
                    max);
    return fault_loop_mode(FAULT_ONESHOT, fx, plan, mem_bytes, kind, sys_errno, reuse, want, names,
                           max);
}

OC_TEST(allocation_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F16)) { /* 5 batches */
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        uint64_t n =
            fault_loop(&fx, plan, 0, OC_FAULT_ALLOC, ENOMEM, reuse, OC_ERR_NOMEM, NULL, 5000);
        OC_CHECK(n > 20 && n < 5000);
    }
    fixture_free(&fx);
}

OC_TEST(write_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    const char *const names[] = {"/diskgnn/w", NULL};
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    for (int reuse = 0; reuse < 2; reuse++) {
        uint64_t n =
            fault_loop(&fx, plan, 0, OC_FAULT_WRITE, ENOSPC, reuse, OC_ERR_NOSPC, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
        n = fault_loop(&fx, plan, 0, OC_FAULT_WRITE, EIO, reuse, OC_ERR_IO, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
    }
    fixture_free(&fx);
}

OC_TEST(read_faults_end_clean)
{
    struct fixture fx;
    char plan[800];
    const char *const names[] = {"features.npy", "/diskgnn/w", NULL};
    if (!fixture_init(&fx, 1500, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    /* a small cache: the windows hold packed rows, read back while training */
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    uint64_t mem = dg_min_mem(c) + 100 * (fx.row_bytes + 8);
    for (int reuse = 0; reuse < 2; reuse++) {
        uint64_t n = fault_loop(&fx, plan, mem, OC_FAULT_READ, EIO, reuse, OC_ERR_IO, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
        /* a short read (premature end of file) is a truncated file */
        n = fault_loop(&fx, plan, mem, OC_FAULT_READ, 0, reuse, OC_ERR_FORMAT, names, 2000);
        OC_CHECK(n > 5 && n < 2000);
    }
    fixture_free(&fx);
}

/* ---- 8, 9: evaluation gathers, batches out of plan order -------------------------------------- */

static void eval_gathers(enum oc_dtype dtype, uint32_t dim, int with_plan)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_pool *pool = NULL;
    char plan[800];
    if (!fixture_init(&fx, 2000, dim, dtype)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    OC_CHECK_OK(oc_pool_new(3, &pool, &err), &err);
    struct oc_store_config c = dg_config(&fx, pool, plan, 0, 2, 0);
    if (with_plan) { /* a cache of about 300 rows: evaluation hits and misses */
        uint64_t min = dg_min_mem(c);
        c.mem_bytes = min + 300 * (fx.row_bytes + 8);
    } else {
        c.sample_opts = NULL;
    }
    struct oc_store *s = NULL, *m = fixture_open("memory", &c);
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (s && m) {
        float *a = malloc(3000 * fx.dim * sizeof(float)),
              *b = malloc(3000 * fx.dim * sizeof(float));
        uint64_t ids[3000];
        struct oc_rng rng;
        oc_rng_init(&rng, 5, 0, 0, 0);
        for (int round = 0; round < 6; round++) {
            uint64_t n = 1 + oc_rng_below(&rng, 3000);
            for (uint64_t k = 0; k < n; k++) /* repeats: ids from a range smaller than n */
                ids[k] = round % 2 ? oc_rng_below(&rng, fx.n_nodes)
                                   : fx.n_nodes - 1 - oc_rng_below(&rng, 1 + n / 3);
            memset(a, 0xA5, n * fx.dim * sizeof(float));
            OC_CHECK_OK(oc_store_gather(s, ids, n, a, &err), &err);
            OC_CHECK_OK(oc_store_gather(m, ids, n, b, &err), &err);
            OC_CHECK(memcmp(a, b, n * fx.dim * sizeof(float)) == 0);
            OC_CHECK(bad_rows(&fx, ids, n, a) == 0);
        }
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] > 0);
        OC_CHECK(with_plan ? st.tier_rows[OC_STORE_TIER_CPU] > 0
                           : st.tier_rows[OC_STORE_TIER_CPU] == 0);
        /* An id past the end is an argument error, in a gather or a batch. */
        ids[0] = 3;
        ids[1] = fx.n_nodes;
        OC_CHECK_ERR(oc_store_gather(s, ids, 2, a, &err), OC_ERR_ARG, &err, "out of range");
        OC_CHECK_ERR(oc_store_gather_batch(s, 0, 0, ids, 2, a, &err), OC_ERR_ARG, &err,
                     "out of range");
        if (!with_plan) {
            struct oc_sample_batch bt;
            oc_sample_batch_init(&bt);
            OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &bt, &err), OC_ERR_ARG, &err, NULL);
            oc_sample_batch_deinit(&bt);
        } else { /* the plan was not disturbed: it still runs from batch 0 */
            struct ref_sampler ref;
            struct drive d;
            if (ref_init(&ref, &fx)) {
                OC_CHECK_OK(drive_plan(&fx, s, &c, &ref, &d, &err), &err);
                OC_CHECK(d.bad == 0 && d.n_batches == 2 * ref.nb);
                ref_free(&ref);
            }
        }
        free(a);
        free(b);
    }
    oc_store_free(s);
    oc_store_free(m);
    oc_pool_free(pool);
    fixture_free(&fx);
}

OC_TEST(evaluation_gathers_match_memory)
{
    eval_gathers(OC_DTYPE_F32, 12, 1);
    eval_gathers(OC_DTYPE_F16, 37, 1);
    eval_gathers(OC_DTYPE_F16, 300, 1); /* rows across pages */
    eval_gathers(OC_DTYPE_F32, 12, 0);  /* no plan: every row from the file */
}

OC_TEST(batches_out_of_plan_order)
{
    struct fixture fx;
    struct oc_err err;
    struct ref_sampler ref;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 2, 0);
    c.mem_bytes = dg_min_mem(c) + 200 * (fx.row_bytes + 8);
    struct oc_store *s = NULL;
    OC_CHECK_OK(dg_open(&c, &s, &err), &err);
    if (!s || !ref_init(&ref, &fx)) {
        oc_store_free(s);
        fixture_free(&fx);
        return;
    }
    uint64_t nb = ref.nb;
    OC_CHECK(oc_store_has_batches(s));
    float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
    uint64_t *ids = malloc(fx.n_nodes * sizeof(uint64_t));
    struct oc_sample_batch b;
    struct oc_store_stats st0, st1;
    oc_sample_batch_init(&b);

    /* Not the plan's next batch: another batch, another epoch, past the plan. */
    OC_CHECK_ERR(oc_store_load_batch(s, 0, 1, &b, &err), OC_ERR_ARG, &err, "plan's next batch");
    OC_CHECK_ERR(oc_store_load_batch(s, 1, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK_ERR(oc_store_load_batch(s, 2, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    /* Batch 0 as planned, handed over once only. */
    OC_CHECK_OK(oc_store_load_batch(s, 0, 0, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, 0, 0)));
    OC_CHECK_ERR(oc_store_load_batch(s, 0, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    /* Batch 3 gathered before its turn: read as asked, the plan untouched. */
    const struct oc_sample_batch *r3 = ref_batch(&ref, &fx, 0, 3);
    uint64_t n3 = r3->n_input;
    memcpy(ids, r3->input_ids, n3 * sizeof(uint64_t));
    oc_store_stats(s, &st0);
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 3, ids, n3, out, &err), &err);
    OC_CHECK(bad_rows(&fx, ids, n3, out) == 0);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_PACKED] == st0.tier_rows[OC_STORE_TIER_PACKED]);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_DISK] > st0.tier_rows[OC_STORE_TIER_DISK]);
    /* Batch 0 from the plan. */
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 0, b.input_ids, b.n_input, out, &err), &err);
    OC_CHECK(bad_rows(&fx, b.input_ids, b.n_input, out) == 0);
    oc_store_stats(s, &st0);
    OC_CHECK(st0.tier_rows[OC_STORE_TIER_DISK] == st1.tier_rows[OC_STORE_TIER_DISK]);
    OC_CHECK(st0.tier_rows[OC_STORE_TIER_PACKED] > st1.tier_rows[OC_STORE_TIER_PACKED]);
    /* Batch 1 gathered without load_batch, with the planned ids: from the plan. */
    const struct oc_sample_batch *r1 = ref_batch(&ref, &fx, 0, 1);
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 1, r1->input_ids, r1->n_input, out, &err), &err);
    OC_CHECK(bad_rows(&fx, r1->input_ids, r1->n_input, out) == 0);
    oc_store_stats(s, &st1);
    OC_CHECK(st1.tier_rows[OC_STORE_TIER_DISK] == st0.tier_rows[OC_STORE_TIER_DISK]);
    /* Batch 2 loaded, but gathered with batch 3's ids: the rows asked for, from the file. */
    OC_CHECK_OK(oc_store_load_batch(s, 0, 2, &b, &err), &err);
    OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, 0, 2)));
    OC_CHECK_OK(oc_store_gather_batch(s, 0, 2, ids, n3, out, &err), &err);
    OC_CHECK(bad_rows(&fx, ids, n3, out) == 0);
    /* The plan goes on at batch 3, through the second epoch. */
    for (uint64_t e = 0; e < 2; e++)
        for (uint64_t i = e ? 0 : 3; i < nb; i++) {
            OC_CHECK_OK(oc_store_load_batch(s, e, i, &b, &err), &err);
            OC_CHECK(oc_sample_batch_equal(&b, ref_batch(&ref, &fx, e, i)));
            OC_CHECK_OK(oc_store_gather_batch(s, e, i, b.input_ids, b.n_input, out, &err), &err);
            OC_CHECK(bad_rows(&fx, b.input_ids, b.n_input, out) == 0);
        }
    /* Past the plan: no batch to load, gathers still served. */
    OC_CHECK_ERR(oc_store_load_batch(s, 2, 0, &b, &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK_OK(oc_store_gather_batch(s, 2, 0, ids, n3, out, &err), &err);
    OC_CHECK(bad_rows(&fx, ids, n3, out) == 0);
    oc_sample_batch_deinit(&b);
    free(out);
    free(ids);
    ref_free(&ref);
    oc_store_free(s);
    OC_CHECK(plan_files(plan, NULL) == 0);
    fixture_free(&fx);
}

OC_TEST(freed_mid_plan)
{
    struct fixture fx;
    struct oc_err err;
    char plan[800];
    if (!fixture_init(&fx, 2000, 12, OC_DTYPE_F16)) {
        fixture_free(&fx);
        return;
    }
    snprintf(plan, sizeof(plan), "%s/plan", oc_test_tmpdir());
    uint64_t live = oc_mem_n_live();
    /* freed right after open, after a batch, and with the planner packing ahead */
    for (int k = 0; k < 6; k++) {
        struct oc_store_config c = dg_config(&fx, NULL, plan, 0, 4, k % 3 == 2);
        struct oc_store *s = NULL;
        OC_CHECK_OK(dg_open(&c, &s, &err), &err);
        if (s && k % 2) {
            struct oc_sample_batch b;
            float *out = malloc(fx.n_nodes * fx.dim * sizeof(float));
            oc_sample_batch_init(&b);
            uint64_t order[64], nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size;
            oc_sample_batch_order(fx.so.seed, 0, order, nb < 64 ? nb : 64);
            uint64_t b0 = c.reuse_samples ? order[0] : 0; /* the plan's first batch */
            OC_CHECK_OK(oc_store_load_batch(s, 0, b0, &b, &err), &err);
            OC_CHECK_OK(oc_store_gather_batch(s, 0, b0, b.input_ids, b.n_input, out, &err), &err);
            oc_sample_batch_deinit(&b);
            free(out);
        }
        oc_store_free(s);
        OC_CHECK(oc_mem_n_live() == live);
        OC_CHECK(plan_files(plan, NULL) == 0);
    }
    fixture_free(&fx);
}

OC_TEST_MAIN()
