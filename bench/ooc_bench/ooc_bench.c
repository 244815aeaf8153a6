/*
 * ooc_bench.c — the out-of-core benchmark: every registered feature-store
 * strategy trains the same model on the same dataset, whose features are
 * about 10x the memory budget, and is compared with `memory` (everything in
 * RAM) and with the lower bound of DESIGN.md's performance model.
 *
 *   1. dataset: generated once into DIR/<parameters>/ and reused while its
 *      manifest (counts, provenance) matches the arguments;
 *   2. disk probe on features.npy with O_DIRECT: sequential bandwidth
 *      (1 MiB reads, one at a time with pread and 16 in flight with io_uring)
 *      and random 4 KiB and 8 KiB reads per second (io_uring, 128 in flight,
 *      merging off: a 3 KiB row read alone takes one page or two);
 *   3. bound inputs: epoch 0's sampling replayed exactly as train does it
 *      (shuffle(seed, 0), batches, oc_sample_neighbors(seed, 0, b)), marking
 *      every input row: the unique feature bytes one epoch touches;
 *   4. training: `memory` without a budget (the reference), then every other
 *      strategy of the store registry in registry order (`static` once per
 *      hotness) under --budget, each in its own forked process so that peak
 *      RSS is per strategy; results come back through a pipe;
 *   5. the table: strategy, epoch time, x memory, x bound, epoch 0's time
 *      (cold: shows what a warm page cache hides under mmap), requested bytes,
 *      bytes of rows that came from disk, bytes read, amplification, CPU-tier
 *      hit ratio, peak RSS (the child's, page-cache pages it maps included),
 *      and whether the final weights equal memory's (the bit-for-bit rule);
 *      with --json FILE also as JSON (json.c), for `offcore report`.
 *
 * Sizes: the budget covers topology, labels, model and one batch's working
 * memory too (train sizes the store from what is left), so with the default
 * batch and fanouts the features must be large next to the topology for the
 * store to get anything: hence 768-dim features by default.
 *
 * bound = max(memory's epoch time, must_read / sequential bandwidth),
 * must_read = max(0, unique feature bytes of one epoch - budget).
 * own io = what the strategy's own reads cost this disk: max(read bytes /
 * sequential bandwidth, reads x seconds per read at their mean size, on the
 * line through the measured 4 KiB and 8 KiB points), plus the bytes its
 * background planning read and wrote in the epoch (diskgnn's packing) at
 * the sequential bandwidth; x own = epoch /
 * max(memory's epoch, own io): 1 when I/O hides behind compute or compute
 * behind I/O.
 * Times and counters are those of the LAST epoch (warm: caches filled, first
 * touches done); every epoch's time is printed as it finishes. The epoch time
 * is the training part (sample, gather, forward, backward, optimizer):
 * evaluation (sampled mini-batches over val and test) is excluded, as its
 * gathers are excluded from the store counters.
 *
 * Last, `auto` (offcore train --strategy auto) under the same budget: its
 * pick, predicted against measured epoch, and whether it is within 10% of
 * the fastest bit-identical strategy measured under a budget in this run,
 * then every prediction in its log (auto_log.c) beside the epoch its
 * strategy measured here, and the mean |error|.
 *
 * A strategy added to store/registry.c gets its row here without editing
 * this file; strategies that take --hotness are listed in hotness_users[].
 *
 * Place in the data flow: bench/ (outside the library); drives generate,
 * dataset, io, sample and train. Run by bench/ooc_bench.sh. Beside it:
 * args.c (the command line), child.c (the forked children and their pipe),
 * cgroup.c (the memory groups budgeted runs train in), json.c (--json) and
 * auto_log.c (auto's predictions read back from its log).
 * Thread-safety: the parent is single-threaded (so fork is safe); every
 * library object that holds memory lives in a child process.
 * Ownership: the dataset under DIR is kept for later runs; nothing else is
 * written.
 *
 * Usage: ooc_bench [--dir DIR] [--nodes N] [--feat-dim F] [--avg-degree D]
 *                  [--train-frac X] [--budget SIZE] [--epochs E] [--fanout 5,5]
 *                  [--batch B] [--threads T] [--strategies a,b] [--json FILE]
 *                  (--help)
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE
#endif
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include "offcore/dataset.h"
#include "offcore/generate.h"
#include "offcore/io.h"
#include "offcore/nn.h"
#include "offcore/plan.h"
#include "offcore/progress.h"
#include "offcore/sample.h"
#include "offcore/store.h"
#include "offcore/train.h"

#include "args.h"
#include "auto_log.h"
#include "cgroup.h"
#include "child.h"
#include "json.h"
#include "others.h"
#include "probe.h"

#define MAX_RUNS  64
#define N_CLASSES 10
#define SEED      0
#define MIN_STEP  (1ull << 20) /* precision of the smallest accepted budget */
#define MIB       (1024.0 * 1024.0)

/* Strategies that read --hotness: one run per hotness. */
static const char *const hotness_users[] = {"static"};
/*
 * Strategies that also run with --reuse-samples (a second row, measured
 * against `memory --reuse-samples`, which the bench then runs too: the same
 * batches, so the same weights).
 */
static const char *const reuse_users[] = {"diskgnn"};

/* ---- messages from the children (child.h) --------------------------------- */

enum msg_tag { MSG_EPOCH = 1, MSG_DONE, MSG_PROBE, MSG_REPLAY, MSG_GEN };

struct msg_done {
    int rc;
    char msg[1024];
    double run_s; /* the whole oc_train_run call */
    struct oc_train_result res;
};

struct msg_replay {
    int rc;
    char msg[1024];
    uint64_t n_batches, total_rows, unique_rows;
    double seconds;
};

struct msg_gen {
    int rc;
    char msg[1024];
    double seconds;
};

static void err_copy(char *dst, size_t n, const struct oc_err *err)
{
    snprintf(dst, n, "%s: %s", oc_status_str(err->status), err->msg);
}

/* Drops features.npy's pages from the page cache, so no run starts warm (mmap). */
static void drop_page_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static const char *fmt_size(uint64_t bytes, char *buf, size_t n)
{
    return oc_format_size(bytes, buf, n);
}

/* ---- 1. dataset ---------------------------------------------------------- */

static void fmt_g(char *buf, size_t n, double v) /* as the generator prints */
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, n, "%.17g", v);
}

static void gen_opts(const struct args *a, struct oc_generate_opts *g)
{
    oc_generate_opts_default(g);
    g->n_nodes = a->nodes;
    g->avg_degree = a->avg_degree;
    g->feat_dim = a->feat_dim;
    g->n_classes = N_CLASSES;
    g->feat_dtype = OC_DTYPE_F32;
    g->seed = SEED;
    g->train_frac = a->train_frac;
    g->val_frac = a->val_frac;
    g->test_frac = a->val_frac;
    g->n_threads = a->threads;
    g->communities = a->communities;
    g->mixing = a->mixing;
}

/*
 * Whether the manifest at ds_dir was generated with these options: counts,
 * dtype, and each shaping option in the provenance. 1 = matches, 0 = not
 * (why says which), -1 = no dataset there.
 */
static int dataset_matches(const char *ds_dir, const struct oc_generate_opts *g, char *why,
                           size_t why_n)
{
    struct oc_dataset *ds = NULL;
    struct oc_err err;
    oc_err_clear(&err);
    if (!oc_path_exists(ds_dir))
        return -1;
    if (oc_dataset_open(ds_dir, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err)) {
        snprintf(why, why_n, "does not open: %s", err.msg);
        return 0;
    }
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    char d[32], tr[32], va[32], te[32], want[8][64];
    fmt_g(d, sizeof(d), g->avg_degree);
    fmt_g(tr, sizeof(tr), g->train_frac);
    fmt_g(va, sizeof(va), g->val_frac);
    fmt_g(te, sizeof(te), g->test_frac);
    snprintf(want[0], sizeof(want[0]), "--nodes %" PRIu64 " ", g->n_nodes);
    snprintf(want[1], sizeof(want[1]), "--avg-degree %s ", d);
    snprintf(want[2], sizeof(want[2]), "--feat-dim %u ", g->feat_dim);
    snprintf(want[3], sizeof(want[3]), "--dtype %s ", oc_dtype_name(g->feat_dtype));
    snprintf(want[4], sizeof(want[4]), "--seed %" PRIu64 " ", g->seed);
    snprintf(want[5], sizeof(want[5]), "--train-frac %s ", tr);
    snprintf(want[6], sizeof(want[6]), "--val-frac %s ", va);
    snprintf(want[7], sizeof(want[7]), "--test-frac %s", te);
    int ok = m->n_nodes == g->n_nodes && m->feat_dim == g->feat_dim &&
             m->feat_dtype == g->feat_dtype && m->n_classes == g->n_classes && m->n_train > 0;
    for (int i = 0; ok && i < 8; i++)
        ok = strstr(m->provenance, want[i]) != NULL;
    char comm[64];
    snprintf(comm, sizeof(comm), "--communities %" PRIu64 " ", g->communities);
    if (ok && (g->communities ? strstr(m->provenance, comm) == NULL
                              : strstr(m->provenance, "--communities") != NULL))
        ok = 0;
    if (!ok)
        snprintf(why, why_n, "was made with other parameters (provenance: \"%.900s\")",
                 m->provenance);
    oc_dataset_free(ds);
    return ok;
}

struct gen_ctx {
    const struct oc_generate_opts *g;
    const char *out;
};

static void gen_child(void *ctx, int fd)
{
    struct gen_ctx *c = ctx;
    struct msg_gen r;
    struct oc_err err;
    memset(&r, 0, sizeof(r));
    oc_err_clear(&err);
    double t = oc_now_s();
    r.rc = oc_generate(c->g, c->out, NULL, &err);
    r.seconds = oc_now_s() - t;
    if (r.rc)
        err_copy(r.msg, sizeof(r.msg), &err);
    child_send(fd, MSG_GEN, &r, sizeof(r));
}

struct layout_ctx {
    const char *src, *out, *order;
};

/* `offcore layout SRC OUT --order ORDER` in a child (2 GiB bands); replies a msg_gen. */
static void layout_child(void *ctx, int fd)
{
    struct layout_ctx *c = ctx;
    struct msg_gen r;
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    memset(&r, 0, sizeof(r));
    oc_err_clear(&err);
    double t = oc_now_s();
    struct oc_plan_order_opts o = {0, 1000, NULL, 0, NULL};
    oc_plan_order_from_name(c->order, &o.order);
    r.rc = oc_dataset_open(c->src, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err);
    if (r.rc == OC_OK)
        r.rc = oc_plan_layout_dataset(ds, &o, c->out, (uint64_t)2 << 30, NULL, &err);
    oc_dataset_free(ds);
    r.seconds = oc_now_s() - t;
    if (r.rc)
        err_copy(r.msg, sizeof(r.msg), &err);
    child_send(fd, MSG_GEN, &r, sizeof(r));
}

/*
 * With --layout: the laid-out copy of ds_dir (made once, beside it), which
 * ds_dir then names. 0, or 1 after printing why not.
 */
static int use_layout(const struct args *a, char *ds_dir, size_t n)
{
    char out[4096], why[1024], s1[32];
    struct rusage ru;
    struct oc_dataset *ds = NULL;
    struct oc_err err;
    if (!a->layout)
        return 0;
    if (snprintf(out, sizeof(out), "%s-%s", ds_dir, a->layout) >= (int)sizeof(out) ||
        strlen(out) >= n) {
        fprintf(stderr, "ooc_bench: %s-%s: path too long\n", ds_dir, a->layout);
        return 1;
    }
    oc_err_clear(&err);
    int ok = oc_path_exists(out) &&
             oc_dataset_open(out, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err) == 0 &&
             strcmp(oc_dataset_manifest(ds)->layout, a->layout) == 0;
    oc_dataset_free(ds);
    if (!ok && oc_path_exists(out)) {
        fprintf(stderr, "ooc_bench: %s is not the %s layout of %s; remove it\n", out, a->layout,
                ds_dir);
        return 1;
    }
    if (!ok) {
        printf("    laying out %s (order %s) ...\n", out, a->layout);
        struct msg_gen gr;
        struct layout_ctx lc = {ds_dir, out, a->layout};
        struct child_reply rp = {MSG_GEN, &gr, sizeof(gr), 0};
        if (child_run(layout_child, &lc, child_on_reply, &rp, &ru, why, sizeof(why)) || !rp.got ||
            gr.rc) {
            fprintf(stderr, "ooc_bench: layout: %s\n", rp.got && gr.rc ? gr.msg : why);
            return 1;
        }
        printf("    laid out in %.1f s (peak RSS %s)\n", gr.seconds,
               fmt_size((uint64_t)ru.ru_maxrss * 1024, s1, sizeof(s1)));
    } else {
        printf("    layout %s (cached)\n", out);
    }
    memcpy(ds_dir, out, strlen(out) + 1);
    return 0;
}

/* ---- 2. disk probe ------------------------------------------------------- */

static void probe_child(void *ctx, int fd)
{
    struct msg_probe r;
    struct oc_err err;
    memset(&r, 0, sizeof(r));
    oc_err_clear(&err);
    r.rc = probe_run(ctx, &r, &err);
    if (r.rc)
        err_copy(r.msg, sizeof(r.msg), &err);
    child_send(fd, MSG_PROBE, &r, sizeof(r));
}

/* ---- 3. unique rows of one epoch ----------------------------------------- */

struct replay_ctx {
    const struct args *a;
    const char *ds_dir;
};

static int replay_run(const struct replay_ctx *c, struct msg_replay *r, struct oc_err *err)
{
    struct oc_dataset *ds = NULL;
    uint64_t *indptr = NULL, *train = NULL, n_train = 0;
    void *indices = NULL;
    uint8_t *seen = NULL;
    struct oc_pool *pool = NULL;
    struct oc_sampler *s = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch batch;
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&batch);
    double t = oc_now_s();
    int rc = oc_dataset_open(c->ds_dir, OC_DS_OPEN_SKIP_CHECKSUM, &ds, err);
    if (rc)
        goto out;
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    if ((rc = oc_dataset_load_indptr(ds, &indptr, err)) ||
        (rc = oc_dataset_load_indices(ds, m->index_dtype, &indices, err)) ||
        (rc = oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, &train, &n_train, err)))
        goto out;
    struct oc_graph g = {m->n_nodes, indptr, NULL, NULL, NULL};
    if (m->index_dtype == OC_DTYPE_U32)
        g.indices32 = indices;
    else
        g.indices64 = indices;
    unsigned n_threads = c->a->threads;
    if (n_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (unsigned)n : 1;
    }
    /* As train: sampler opts from the run's layers, fanouts and seed; drop_last off. */
    struct oc_sample_opts so;
    memset(&so, 0, sizeof(so));
    so.n_layers = c->a->n_fanouts;
    memcpy(so.fanouts, c->a->fanouts, sizeof(so.fanouts));
    so.seed = SEED;
    if ((rc = oc_pool_new(n_threads, &pool, err)) ||
        (rc = oc_sample_sampler_new(&g, &so, pool, &s, err)) ||
        (rc = oc_sample_epoch_init(&ep, train, n_train, c->a->batch, 0, err)))
        goto out;
    if (!(seen = oc_calloc((m->n_nodes + 7) / 8, 1, "replay bitmap", err))) {
        rc = err->status;
        goto out;
    }
    oc_sample_epoch_shuffle(&ep, SEED, 0);
    r->n_batches = oc_sample_epoch_n_batches(&ep);
    for (uint64_t b = 0; b < r->n_batches; b++) {
        const uint64_t *seeds;
        uint64_t n_seeds;
        if ((rc = oc_sample_epoch_batch(&ep, b, &seeds, &n_seeds, err)) ||
            (rc = oc_sample_neighbors(s, 0, b, seeds, n_seeds, &batch, err)))
            goto out;
        r->total_rows += batch.n_input;
        for (uint64_t i = 0; i < batch.n_input; i++) {
            uint64_t v = batch.input_ids[i];
            uint8_t bit = (uint8_t)(1u << (v & 7));
            if (!(seen[v >> 3] & bit)) {
                seen[v >> 3] |= bit;
                r->unique_rows++;
            }
        }
    }
    r->seconds = oc_now_s() - t;
out:
    oc_sample_batch_deinit(&batch);
    if (ep.orig)
        oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(s);
    oc_pool_free(pool);
    oc_free(seen);
    oc_free(train);
    oc_free(indices);
    oc_free(indptr);
    oc_dataset_free(ds);
    return rc;
}

static void replay_child(void *ctx, int fd)
{
    struct msg_replay r;
    struct oc_err err;
    memset(&r, 0, sizeof(r));
    oc_err_clear(&err);
    r.rc = replay_run(ctx, &r, &err);
    if (r.rc)
        err_copy(r.msg, sizeof(r.msg), &err);
    child_send(fd, MSG_REPLAY, &r, sizeof(r));
}

/* ---- 4. training runs ---------------------------------------------------- */

struct run {
    char label[64];
    const char *strategy;
    enum oc_store_hotness hotness;
    int reuse;           /* --reuse-samples */
    double hyperbatch;   /* the strategy's --hyperbatch (0: none) */
    uint64_t budget;     /* 0 = none (memory) */
    int dry;             /* a dry run: does the budget fit? */
    uint64_t min_budget; /* --preset paper: the smallest budget accepted (dry runs) */
    char cgroup[256];    /* the cgroup v1 memory group the training child joins ("" = none) */
    char log_path[256];  /* auto: its JSON lines log, where its predictions are ("" = none) */
    uint64_t cg_limit, cg_peak, cg_failcnt; /* its limit, max usage and failed charges */
    /* results */
    uint32_t n_epochs;
    struct oc_train_epoch_stats ep[MAX_EPOCHS];
    struct msg_done done;
    int got_done, failed;
    char why[1024];
    uint64_t peak_rss; /* the child's, from wait4 */
    double others;     /* other processes' share of the CPUs during the run (-1: unknown) */
};

struct train_ctx {
    const struct args *a;
    const char *ds_dir;
    const struct run *run;
};

static void on_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    child_send(*(int *)ctx, MSG_EPOCH, st, sizeof(*st));
}

static void train_child(void *ctx, int fd)
{
    const struct train_ctx *c = ctx;
    struct oc_train_opts o;
    struct msg_done d;
    struct oc_err err;
    memset(&d, 0, sizeof(d));
    oc_err_clear(&err);
    if (c->run->cgroup[0] && !c->run->dry && cg_join(c->run->cgroup) != 0) {
        d.rc = OC_ERR_IO;
        snprintf(d.msg, sizeof(d.msg), "cannot join %s: %s", c->run->cgroup, strerror(errno));
        child_send(fd, MSG_DONE, &d, sizeof(d));
        return;
    }
    oc_mem_set_budget(c->run->budget); /* the accountant's hard limit (0 = none) */
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.n_layers = c->a->n_fanouts;
    o.n_fanouts = c->a->n_fanouts;
    memcpy(o.fanouts, c->a->fanouts, sizeof(o.fanouts));
    o.hidden = c->a->hidden;
    o.dry_run = c->run->dry;
    o.batch_size = c->a->batch;
    o.eval_batch_size = c->a->batch; /* so evaluation needs no more memory than training */
    o.epochs = c->a->epochs;
    o.n_threads = c->a->threads;
    o.seed = SEED;
    o.eval = c->a->no_eval ? OC_TRAIN_EVAL_NONE : OC_TRAIN_EVAL_SAMPLED;
    o.topology_disk = c->a->topology_disk;
    o.strategy = c->run->strategy;
    if (strcmp(c->run->strategy, "static") == 0) /* static's options --hotness, --hyperbatch */
        d.rc = oc_train_opts_set(&o, "hotness", c->run->hotness, &err);
    if (d.rc == OC_OK && c->run->hyperbatch > 0)
        d.rc = oc_train_opts_set(&o, "hyperbatch", c->run->hyperbatch, &err);
    if (d.rc == OC_OK && c->run->hyperbatch > 0 && c->a->hyperbatch_disk)
        d.rc = oc_train_opts_set(&o, "hyperbatch-disk", 1, &err);
    if (strcmp(c->run->strategy, "ginex") == 0 && c->a->superbatch) /* ginex's --superbatch */
        d.rc = oc_train_opts_set(&o, "superbatch", c->a->superbatch, &err);
    /* outre's embeddings change training: here it runs as its feature cache (--staleness 0),
       bit-identical to memory; bench/outre_vs_ginex.sh measures the embeddings */
    if (d.rc == OC_OK && strcmp(c->run->strategy, "outre") == 0)
        d.rc = oc_train_opts_set(&o, "staleness", 0, &err);
    o.reuse_samples = c->run->reuse;
    o.mem_budget = c->run->budget;
    if (c->run->log_path[0] && !c->run->dry)
        o.log_path = c->run->log_path;
    double t = oc_now_s();
    if (d.rc == OC_OK)
        d.rc = oc_train_run(c->ds_dir, &o, on_epoch, &fd, NULL, &d.res, &err);
    d.run_s = oc_now_s() - t;
    if (d.rc)
        err_copy(d.msg, sizeof(d.msg), &err);
    child_send(fd, MSG_DONE, &d, sizeof(d));
}

static double train_s(const struct oc_train_epoch_stats *st)
{
    return st->time_s - st->eval_s;
}

static void on_train_msg(void *ctx, uint32_t tag, const void *p, uint32_t len)
{
    struct run *r = ctx;
    char a[32], h[32];
    if (tag == MSG_EPOCH && len == sizeof(struct oc_train_epoch_stats) &&
        r->n_epochs < MAX_EPOCHS) {
        struct oc_train_epoch_stats *st = &r->ep[r->n_epochs++];
        memcpy(st, p, sizeof(*st));
        printf("  %-18s epoch %u: %7.2f s (wait %.2f, fwd %.2f, bwd %.2f; pipeline busy: sample "
               "%.2f, gather %.2f; eval %.2f s excluded)  read %s  cpu hit %.3f  store holds %s  "
               "loss %.4f\n",
               r->label, st->epoch, train_s(st), st->wait_s, st->forward_s, st->backward_s,
               st->sample_s, st->gather_s, st->eval_s, fmt_size(st->store.read_bytes, a, sizeof(a)),
               oc_store_stats_hit_ratio(&st->store, OC_STORE_TIER_CPU),
               fmt_size(st->store.held_bytes, h, sizeof(h)), st->loss);
        if (st->store.io_cpu_us && st->store.read_bytes) /* helios, gnndrive: the I/O path */
            printf("  %-18s   io path cpu %.2f s = %.3f s/GiB read; store stages busy %.2f, "
                   "%.2f s\n",
                   r->label, (double)st->store.io_cpu_us * 1e-6,
                   (double)st->store.io_cpu_us * 1e-6 /
                       ((double)st->store.read_bytes / (double)(1u << 30)),
                   (double)st->store.stage_busy_us[0] * 1e-6,
                   (double)st->store.stage_busy_us[1] * 1e-6);
        fflush(stdout);
    } else if (tag == MSG_DONE && len == sizeof(r->done)) {
        memcpy(&r->done, p, sizeof(r->done));
        r->got_done = 1;
    }
}

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

static int is_hotness_user(const char *name)
{
    return in_list(name, hotness_users, sizeof(hotness_users) / sizeof(hotness_users[0]));
}

static int is_reuse_user(const char *name)
{
    return in_list(name, reuse_users, sizeof(reuse_users) / sizeof(reuse_users[0]));
}

/* Whether name is in the comma list (NULL list = everything). */
static int selected(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* ---- 5. report ----------------------------------------------------------- */

/*
 * Offline sampling and packing (diskgnn): the first window is built while the
 * store opens, before epoch 0 (exposed: run time - epoch times, which also
 * holds loading the topology); later windows in the background. plan_* are
 * totals since open, so the last epoch's hold every window.
 */
/*
 * ginex's cache against the other policies of the same capacity on the very
 * same accesses (its planner simulates LRU and the degree-ranked static cache
 * alongside Belady): miss ratios of the last epoch, and Belady's relative
 * reduction from static's.
 */
static void print_cache_policies(const struct run *runs, uint32_t n_runs)
{
    for (uint32_t i = 0; i < n_runs; i++) {
        const struct run *r = &runs[i];
        if (!r->n_epochs || strcmp(r->strategy, "ginex") != 0)
            continue;
        const struct oc_store_stats *st = &r->ep[r->n_epochs - 1].store;
        if (!st->trace_accesses)
            continue;
        double n = (double)st->trace_accesses, b = (double)st->belady_misses / n;
        double l = (double)st->lru_misses / n, sm = (double)st->static_misses / n;
        printf("\n%s cache on the same trace (last epoch, %" PRIu64 " accesses): miss ratio "
               "Belady %.3f, LRU %.3f, static (degree-ranked, same rows) %.3f; Belady is %.1f%% "
               "below static\n",
               r->label, st->trace_accesses, b, l, sm, sm > 0 ? 100.0 * (1.0 - b / sm) : 0.0);
    }
}

static void print_plan_times(const struct run *runs, uint32_t n_runs)
{
    int any = 0;
    for (uint32_t i = 0; i < n_runs; i++) {
        const struct run *r = &runs[i];
        double all = 0, train = 0, epochs = 0;
        uint64_t pf = 0;
        if (r->n_epochs) {
            const struct oc_store_stats *last = &r->ep[r->n_epochs - 1].store;
            all = (double)(last->plan_sample_us + last->plan_pack_us) / 1e6;
        }
        for (uint32_t e = 0; e < r->n_epochs; e++) {
            train += train_s(&r->ep[e]);
            epochs += r->ep[e].time_s;
            if (r->ep[e].store.plan_file_peak_bytes > pf)
                pf = r->ep[e].store.plan_file_peak_bytes;
        }
        if (r->failed || !r->n_epochs || (all == 0 && pf == 0))
            continue;
        if (!any)
            printf("\npreprocessing (offline sampling + packing):\n");
        any = 1;
        double open = r->done.run_s - epochs;
        char f[32];
        printf("  %-18s before epoch 0 (open + setup): %.2f s = %.1f%% of %.2f s training "
               "(%u epochs); sampling + packing in all, background included: %.2f s; window "
               "files up to %s\n",
               r->label, open, train > 0 ? 100.0 * open / train : 0.0, train, r->n_epochs, all,
               fmt_size(pf, f, sizeof(f)));
    }
}

/*
 * The strategy's own disk time: what its reads of the epoch take at the
 * measured limits, the larger of bytes / sequential bandwidth and reads x
 * seconds per read at their mean size (interpolated between the measured
 * 4 KiB and 8 KiB random-read times, extrapolated on the same line past
 * them, never below the 4 KiB time), plus what its background planning read and wrote
 * meanwhile (diskgnn packing the next window: sequential partitions of features.npy and
 * the window file) at the sequential bandwidth. x own = epoch / max(memory's epoch, that):
 * 1 means I/O is hidden behind compute or compute behind I/O.
 */
static double own_disk_s(const struct oc_store_stats *st, double seq_bps, double iops4,
                         double iops8)
{
    double by_bytes = seq_bps > 0 ? (double)st->read_bytes / seq_bps : 0;
    double by_reads = 0;
    if (st->n_reads && iops4 > 0 && iops8 > 0) {
        /* seconds per read, on the line through the measured 4 KiB and 8 KiB points */
        double t4 = 1.0 / iops4, t8 = 1.0 / iops8;
        double avg = (double)st->read_bytes / (double)st->n_reads;
        double per = t4 + (avg - 4096.0) * (t8 - t4) / 4096.0;
        by_reads = (double)st->n_reads * (per > t4 ? per : t4);
    }
    double plan = seq_bps > 0 ? (double)(st->plan_read_bytes + st->plan_write_bytes) / seq_bps : 0;
    return (by_bytes > by_reads ? by_bytes : by_reads) + plan;
}

/*
 * The `memory` run r is measured against: with --reuse-samples `memory
 * --reuse-samples` (runs[1] then), which trains the same batches, so the
 * same weights; else runs[0].
 */
static const struct run *ref_of(const struct run *runs, uint32_t n_runs, const struct run *r)
{
    if (r->reuse && n_runs > 1 && runs[1].reuse && strcmp(runs[1].strategy, "memory") == 0)
        return &runs[1];
    return &runs[0];
}

static int ref_ok(const struct run *m)
{
    return !m->failed && m->n_epochs > 0;
}

/* 1 when r ran and its weights differ from its reference's (the bit-for-bit rule broken). */
static int differs(const struct run *runs, uint32_t n_runs, const struct run *r)
{
    const struct run *m = ref_of(runs, n_runs, r);
    return r != m && !r->failed && r->got_done && ref_ok(m) &&
           strcmp(r->done.res.weights_sha256, m->done.res.weights_sha256) != 0;
}

/* The run that measured what auto predicted for p: its strategy's first row (static's is
   --hotness degree, outre's --staleness 0), with its --reuse-samples, no --hyperbatch. */
static const struct run *measured_for(const struct run *runs, uint32_t n_runs,
                                      const struct auto_pred *p)
{
    for (uint32_t i = 0; i < n_runs; i++) {
        const struct run *r = &runs[i];
        if (strcmp(r->strategy, p->strategy) == 0 && r->reuse == p->reuse && r->hyperbatch <= 0)
            return r->failed || !r->n_epochs ? NULL : r;
    }
    return NULL;
}

/*
 * Every prediction in auto's log next to the epoch its strategy measured in
 * this run, and the mean of |predicted - measured| / measured over them
 * (also under "auto_predictions" in --json).
 */
static void print_predictions(const struct run *runs, uint32_t n_runs, const struct run *au,
                              struct cJSON *json)
{
    struct auto_pred pred[32];
    uint32_t n = 0;
    char why[512];
    int rc = auto_log_read(au->log_path, pred, 32, &n, why, sizeof(why));
    (void)unlink(au->log_path);
    if (rc) {
        printf("    auto's predictions: unreadable: %s\n", why);
        return;
    }
    cJSON *arr = json ? cJSON_AddArrayToObject(json, "auto_predictions") : NULL;
    printf("    auto's predictions against the epochs measured in this run (last epoch):\n"
           "    %-18s %11s %11s %9s\n",
           "strategy", "predicted s", "measured s", "error");
    double sum = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct auto_pred *p = &pred[i];
        const struct run *r = measured_for(runs, n_runs, p);
        char name[48];
        snprintf(name, sizeof(name), "%.31s%s", p->strategy, p->reuse ? "/reuse" : "");
        if (p->excluded || !r) {
            printf("    %-18s %11s %11s %9s\n", name, p->excluded ? "excluded" : "",
                   r ? "" : "not run", "");
            continue;
        }
        double m = train_s(&r->ep[r->n_epochs - 1]), e = (p->epoch_s - m) / m;
        sum += fabs(e);
        k++;
        printf("    %-18s %11.2f %11.2f %+8.0f%%\n", name, p->epoch_s, m, 100 * e);
        cJSON *o = arr ? cJSON_CreateObject() : NULL;
        if (o) {
            cJSON_AddStringToObject(o, "strategy", name);
            cJSON_AddStringToObject(o, "measured_by", r->label);
            cJSON_AddNumberToObject(o, "predicted_s", p->epoch_s);
            cJSON_AddNumberToObject(o, "measured_s", m);
            cJSON_AddNumberToObject(o, "error", e);
            cJSON_AddItemToArray(arr, o);
        }
    }
    if (k)
        printf("    mean |error| over %u strategies: %.0f%%\n", k, 100 * sum / k);
    if (json && k)
        cJSON_AddNumberToObject(json, "auto_mean_abs_error", sum / k);
}

/*
 * --strategy auto's row: its pick, predicted against measured epoch, and
 * whether the pick is within 10% of the fastest bit-identical strategy
 * measured under a budget in this run (reuse rows train other batches,
 * memory runs without a budget: neither is a candidate). The pick is judged
 * by its strategy's own row, where it has one: auto's run trains the same
 * strategy again, and the two differ by run-to-run noise (printed beside
 * it); then every prediction.
 */
static void print_auto(const struct run *runs, uint32_t n_runs, struct cJSON *json)
{
    const struct run *au = NULL, *best = NULL;
    for (uint32_t i = 0; i < n_runs; i++) {
        const struct run *r = &runs[i];
        if (strcmp(r->strategy, "auto") == 0) {
            au = r;
            continue;
        }
        if (r->failed || !r->n_epochs || !r->budget || r->reuse)
            continue;
        if (!best || train_s(&r->ep[r->n_epochs - 1]) < train_s(&best->ep[best->n_epochs - 1]))
            best = r;
    }
    if (!au)
        return;
    if (au->failed || !au->n_epochs || !au->got_done) {
        printf("\n    auto: FAILED: %s\n", au->why);
        (void)unlink(au->log_path);
        return;
    }
    double s = train_s(&au->ep[au->n_epochs - 1]);
    printf("\n    auto picked %s%s: predicted epoch %.2f s, measured %.2f s in its own run (last "
           "epoch; mean %.2f s)\n",
           au->done.res.strategy, au->done.res.reuse_samples ? " --reuse-samples" : "",
           au->done.res.predicted_epoch_s, s, au->done.res.measured_epoch_s);
    if (!best) {
        printf("    no other budgeted strategy ran\n");
    } else {
        /* the pick judged by its strategy's own row (the choice), and auto's run beside it
           (the choice plus run-to-run noise: the same strategy and options trained twice) */
        struct auto_pred pick = {.reuse = au->done.res.reuse_samples};
        snprintf(pick.strategy, sizeof(pick.strategy), "%s", au->done.res.strategy);
        const struct run *row = measured_for(runs, n_runs, &pick);
        double b = train_s(&best->ep[best->n_epochs - 1]);
        if (row) {
            double p = train_s(&row->ep[row->n_epochs - 1]);
            printf("    fastest measured %s %.2f s; the pick's row %s %.2f s: %.2fx, %s 10%%; "
                   "auto's own run %.2fx\n",
                   best->label, b, row->label, p, p / b, p <= 1.10 * b ? "within" : "NOT within",
                   s / b);
        } else {
            printf("    fastest measured %s %.2f s; the pick has no row of its own: auto's run "
                   "%.2fx, %s 10%%\n",
                   best->label, b, s / b, s <= 1.10 * b ? "within" : "NOT within");
        }
    }
    print_predictions(runs, n_runs, au, json);
}

/* Names the runs other processes slowed (others.h), after the table. */
static void print_loaded(const struct run *runs, uint32_t n_runs)
{
    int any = 0;
    for (uint32_t i = 0; i < n_runs; i++)
        any |= runs[i].others > OTHERS_SHARE_WARN;
    if (!any)
        return;
    printf("\nWARNING: other processes took more than %.0f%% of the CPUs during these runs; their "
           "epochs, and every ratio to them, are slower than on a quiet machine:\n",
           100 * OTHERS_SHARE_WARN);
    for (uint32_t i = 0; i < n_runs; i++)
        if (runs[i].others > OTHERS_SHARE_WARN)
            printf("  %-18s %.1f%%\n", runs[i].label, 100 * runs[i].others);
}

static void print_table(struct run *runs, uint32_t n_runs, double bound_s, double seq_bps,
                        double iops4, double iops8, struct cJSON *json)
{
    printf("\n%-18s %8s %8s %7s %7s %7s %7s %8s %10s %10s %10s %7s %7s %8s %10s  %s\n", "strategy",
           "epoch s", "x memory", "x bound", "own io", "x own", "wait s", "epoch0 s", "requested",
           "from disk", "read", "amplif", "cpu hit", "samples", "peak RSS", "weights");
    for (uint32_t i = 0; i < n_runs; i++) {
        const struct run *r = &runs[i];
        struct json_run jr = {r->label,  r->strategy, r->why, NULL, r->done.res.weights_sha256,
                              r->budget, r->peak_rss, 0,      0,    0,
                              0,         0,           0,      NULL, r->others};
        if (r->failed || r->n_epochs == 0) {
            printf("%-18s FAILED: %s\n", r->label, r->why);
            if (json)
                json_add_run(json, &jr);
            continue;
        }
        const struct oc_train_epoch_stats *st = &r->ep[r->n_epochs - 1];
        const struct run *mem = ref_of(runs, n_runs, r);
        int mem_ok = ref_ok(mem);
        double mem_s = mem_ok ? train_s(&mem->ep[mem->n_epochs - 1]) : 0;
        double s = train_s(st);
        char q[32], dq[32], rd[32], rss[32], xm[16];
        if (mem_ok)
            snprintf(xm, sizeof(xm), "%.2f", s / mem_s);
        else
            snprintf(xm, sizeof(xm), "-");
        const char *w = !mem_ok                    ? "?"
                        : differs(runs, n_runs, r) ? "DIFFERS"
                        : r->reuse                 ? "= memory/reuse"
                                                   : "= memory";
        double own = own_disk_s(&st->store, seq_bps, iops4, iops8);
        double own_bound = own > mem_s ? own : mem_s;
        printf(
            "%-18s %8.2f %8s %7.2f %7.2f %7.2f %7.2f %8.2f %10s %10s %10s %7.2f %7.3f %8.2f %10s  "
            "%s\n",
            r->label, s, xm, bound_s > 0 ? s / bound_s : 0.0, own,
            own_bound > 0 ? s / own_bound : 0.0, st->wait_s, train_s(&r->ep[0]),
            fmt_size(st->store.requested_bytes, q, sizeof(q)),
            fmt_size(st->store.requested_disk_bytes, dq, sizeof(dq)),
            fmt_size(st->store.read_bytes, rd, sizeof(rd)),
            oc_store_stats_amplification(&st->store),
            oc_store_stats_hit_ratio(&st->store, OC_STORE_TIER_CPU),
            st->n_batches ? (double)st->n_sampled / (double)st->n_batches : 0.0,
            fmt_size(r->peak_rss, rss, sizeof(rss)), r == mem ? "reference" : w);
        jr.weights = r == mem ? "reference" : w;
        jr.epoch_s = s;
        jr.epoch0_s = train_s(&r->ep[0]);
        jr.x_memory = mem_ok ? s / mem_s : 0;
        jr.x_bound = bound_s > 0 ? s / bound_s : 0.0;
        jr.own_io_s = own;
        jr.x_own = own_bound > 0 ? s / own_bound : 0.0;
        jr.last = st;
        if (json)
            json_add_run(json, &jr);
    }
    print_plan_times(runs, n_runs);
    print_cache_policies(runs, n_runs);
    printf("\nweights_sha256:\n");
    for (uint32_t i = 0; i < n_runs; i++)
        if (runs[i].got_done && runs[i].done.rc == 0)
            printf("  %-18s %s%s\n", runs[i].label, runs[i].done.res.weights_sha256,
                   differs(runs, n_runs, &runs[i])
                       ? "  <-- DIFFERS FROM its memory run (bit-for-bit rule broken)"
                       : "");
}

/* A dry run of r at `budget`: 1 if it is accepted, 0 if refused for memory, -1 otherwise. */
static int dry_fits(const struct args *a, const char *ds_dir, const struct run *r, uint64_t budget,
                    char *why, size_t why_n)
{
    struct run *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(why, why_n, "out of memory");
        return -1;
    }
    *t = *r;
    t->budget = budget;
    t->dry = 1;
    struct train_ctx tc = {a, ds_dir, t};
    struct rusage ru;
    int fits = -1;
    if (child_run(train_child, &tc, on_train_msg, t, &ru, why, why_n) == 0 && t->got_done) {
        if (t->done.rc == OC_OK)
            fits = 1;
        else if (t->done.rc == OC_ERR_BUDGET || t->done.rc == OC_ERR_NOMEM)
            fits = 0;
        else
            snprintf(why, why_n, "%s", t->done.msg);
    } else if (!t->got_done && !why[0]) {
        snprintf(why, why_n, "no result from the child");
    }
    free(t);
    return fits;
}

/*
 * --preset paper: auto trains at the largest budget any other strategy trains at, not at its
 * own smallest (where only the strategy needing least fits), so that every strategy it may
 * pick fits and its pick is compared with the fastest measured on equal terms.
 */
static void paper_auto_budget(struct run *runs, uint32_t n_runs)
{
    struct run *au = NULL;
    uint64_t most = 0;
    for (uint32_t i = 0; i < n_runs; i++) {
        if (strcmp(runs[i].strategy, "auto") == 0)
            au = &runs[i];
        else if (runs[i].min_budget && runs[i].budget > most)
            most = runs[i].budget;
    }
    if (!au || !au->min_budget || most <= au->budget)
        return;
    char s1[32];
    au->budget = most;
    printf("  %-18s trains at %s instead: the largest budget of the others, so every strategy "
           "it may pick fits\n",
           au->label, fmt_size(au->budget, s1, sizeof(s1)));
}

/*
 * The smallest budget r accepts, to MIN_STEP: doubling from 256 MiB until a
 * dry run is accepted, then bisection. 0 (and why) when none up to 64 GiB.
 */
static uint64_t smallest_budget(const struct args *a, const char *ds_dir, const struct run *r,
                                char *why, size_t why_n)
{
    uint64_t lo = 0, hi = 256ull << 20;
    int f;
    why[0] = '\0';
    while ((f = dry_fits(a, ds_dir, r, hi, why, why_n)) == 0 && hi < (64ull << 30)) {
        lo = hi;
        hi *= 2;
    }
    if (f != 1) {
        if (f == 0)
            snprintf(why, why_n, "refused at every budget up to 64 GiB");
        return 0;
    }
    while (hi - lo > MIN_STEP) {
        uint64_t mid = lo + (hi - lo) / 2;
        f = dry_fits(a, ds_dir, r, mid, why, why_n);
        if (f < 0)
            return 0;
        if (f)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int main(int argc, char **argv)
{
    struct args a;
    struct oc_err err;
    struct rusage ru;
    char why[1024], s1[32], s2[32], s3[32];
    int bad = 0;
    oc_nn_blas_core_reexec(argv);
    if (parse_args(argc, argv, &a))
        return 2;
    oc_log_set_callback(child_log_to_stderr, NULL, OC_LOG_WARN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* 1. dataset */
    struct oc_generate_opts g;
    gen_opts(&a, &g);
    char tr[32], ds_dir[4096];
    fmt_g(tr, sizeof(tr), a.train_frac);
    char deg[32];
    fmt_g(deg, sizeof(deg), a.avg_degree);
    char va[40] = "";
    if (a.val_frac != VAL_FRAC) {
        snprintf(va, sizeof(va), "-val");
        fmt_g(va + 4, sizeof(va) - 4, a.val_frac);
    }
    char cm[80] = "";
    if (a.communities) {
        char mu[32] = "";
        if (!isnan(a.mixing))
            fmt_g(mu, sizeof(mu), a.mixing);
        snprintf(cm, sizeof(cm), "-comm%" PRIu64 "%s%s", a.communities, mu[0] ? "-mu" : "", mu);
    }
    snprintf(ds_dir, sizeof(ds_dir), "%s/n%" PRIu64 "-deg%s-f%u-train%s%s%s", a.dir, a.nodes, deg,
             a.feat_dim, tr, va, cm);
    uint64_t feat_bytes = a.nodes * (uint64_t)a.feat_dim * sizeof(float);
    uint64_t budget = a.budget ? a.budget : feat_bytes / 10;
    printf("ooc_bench: %" PRIu64 " nodes, degree %s, %u-dim f32 features (%s), train %s, val and "
           "test %g each; budget %s%s (features / that = %.1f)\n",
           a.nodes, deg, a.feat_dim, fmt_size(feat_bytes, s1, sizeof(s1)), tr, a.val_frac,
           a.paper ? "each strategy's smallest + " : "", fmt_size(budget, s2, sizeof(s2)),
           (double)feat_bytes / (double)budget);
    if (a.communities || a.layout)
        printf("graph: %s%s; feature rows in %s%s\n",
               a.communities ? "planted communities, mean size " : "no planted communities",
               a.communities ? cm + 5 : "", a.layout ? "layout " : "node id order",
               a.layout ? a.layout : "");
    printf("model sage, %u layers, hidden %" PRIu64 ", fanout", a.n_fanouts, a.hidden);
    for (uint32_t l = 0; l < a.n_fanouts; l++)
        printf("%s%d", l ? "," : " ", a.fanouts[l]);
    printf(", batch %" PRIu64 ", epochs %u, threads %u (0 = all), eval %s, topology %s, seed %d\n",
           a.batch, a.epochs, a.threads, a.no_eval ? "none" : "sampled",
           a.topology_disk ? "disk" : "memory", SEED);
    int m = dataset_matches(ds_dir, &g, why, sizeof(why));
    if (m == 0) {
        fprintf(stderr, "ooc_bench: %s %s; remove it or pick another --dir\n", ds_dir, why);
        return 1;
    }
    if (m < 0) {
        oc_err_clear(&err);
        if (oc_mkdir_p(a.dir, &err)) {
            fprintf(stderr, "ooc_bench: %s\n", err.msg);
            return 1;
        }
        printf("\n[1] generating %s ...\n", ds_dir);
        struct msg_gen gr;
        struct gen_ctx gc = {&g, ds_dir};
        struct child_reply rp = {MSG_GEN, &gr, sizeof(gr), 0};
        if (child_run(gen_child, &gc, child_on_reply, &rp, &ru, why, sizeof(why)) || !rp.got ||
            gr.rc) {
            fprintf(stderr, "ooc_bench: generate: %s\n", rp.got && gr.rc ? gr.msg : why);
            return 1;
        }
        printf("    generated in %.1f s (peak RSS %s)\n", gr.seconds,
               fmt_size((uint64_t)ru.ru_maxrss * 1024, s1, sizeof(s1)));
    } else {
        printf("\n[1] dataset %s (cached; manifest matches)\n", ds_dir);
    }
    if (use_layout(&a, ds_dir, sizeof(ds_dir)))
        return 1;
    char feat_path[4200];
    snprintf(feat_path, sizeof(feat_path), "%s/%s", ds_dir, oc_ds_file_name(OC_DS_FEATURES));

    /* 2. disk probe */
    printf("\n[2] disk probe on %s\n", feat_path);
    drop_page_cache(feat_path);
    struct msg_probe pr;
    struct child_reply rp = {MSG_PROBE, &pr, sizeof(pr), 0};
    if (child_run(probe_child, feat_path, child_on_reply, &rp, &ru, why, sizeof(why)) || !rp.got ||
        pr.rc) {
        fprintf(stderr, "ooc_bench: disk probe: %s\n", rp.got && pr.rc ? pr.msg : why);
        return 1;
    }
    if (!pr.direct)
        printf("    WARNING: O_DIRECT refused by this filesystem: figures include the page "
               "cache\n");
    double seq_bps = pr.seq_qd1_bps > pr.seq_uring_bps ? pr.seq_qd1_bps : pr.seq_uring_bps;
    printf("    sequential O_DIRECT, 1 MiB reads over %s: %.0f MiB/s one at a time (pread), "
           "%.0f MiB/s %d in flight (%s)\n",
           fmt_size(pr.seq_bytes, s1, sizeof(s1)), pr.seq_qd1_bps / MIB, pr.seq_uring_bps / MIB,
           SEQ_DEPTH, pr.uring ? "io_uring" : "pread fallback");
    printf("    random 4 KiB O_DIRECT reads, %d in flight, merging off: %.0f IOPS (%.1f MiB/s; "
           "%" PRIu64 " reads in %.2f s)\n",
           RAND_DEPTH, pr.rand_iops, pr.rand_iops * 4096.0 / MIB, pr.rand_reads, pr.rand_s);
    printf("    random 8 KiB O_DIRECT reads, %d in flight, merging off: %.0f IOPS (%.1f MiB/s; "
           "%" PRIu64 " reads in %.2f s)\n",
           RAND_DEPTH, pr.rand8_iops, pr.rand8_iops * 8192.0 / MIB, pr.rand8_reads, pr.rand8_s);

    /* 3. unique rows of epoch 0 */
    printf("\n[3] replaying epoch 0's sampling for the bound\n");
    struct msg_replay rr;
    struct replay_ctx rc_ctx = {&a, ds_dir};
    struct child_reply rrp = {MSG_REPLAY, &rr, sizeof(rr), 0};
    if (child_run(replay_child, &rc_ctx, child_on_reply, &rrp, &ru, why, sizeof(why)) || !rrp.got ||
        rr.rc) {
        fprintf(stderr, "ooc_bench: replay: %s\n", rrp.got && rr.rc ? rr.msg : why);
        return 1;
    }
    uint64_t row_bytes = (uint64_t)a.feat_dim * sizeof(float);
    uint64_t unique_bytes = rr.unique_rows * row_bytes;
    uint64_t must_read = unique_bytes > budget ? unique_bytes - budget : 0;
    double io_bound_s = (double)must_read / seq_bps;
    printf("    %" PRIu64 " batches, %" PRIu64 " input rows (%s), %" PRIu64
           " unique rows = %s (%.1f%% of the features), in %.1f s\n",
           rr.n_batches, rr.total_rows, fmt_size(rr.total_rows * row_bytes, s1, sizeof(s1)),
           rr.unique_rows, fmt_size(unique_bytes, s2, sizeof(s2)),
           100.0 * (double)rr.unique_rows / (double)a.nodes, rr.seconds);
    printf("    must read = max(0, unique - budget) = %s -> %.2f s at %.0f MiB/s\n",
           fmt_size(must_read, s3, sizeof(s3)), io_bound_s, seq_bps / MIB);

    /* 4. training runs: memory first, then the registry in order */
    struct run *runs = calloc(MAX_RUNS, sizeof(*runs));
    if (!runs)
        return 1;
    uint32_t n_runs = 0, mem_index;
    oc_err_clear(&err);
    if (oc_store_strategy_find("memory", &mem_index, &err)) {
        fprintf(stderr, "ooc_bench: %s\n", err.msg);
        return 1;
    }
    snprintf(runs[0].label, sizeof(runs[0].label), "memory");
    runs[0].strategy = "memory";
    n_runs = 1;
    for (uint32_t k = 0; k < sizeof(reuse_users) / sizeof(reuse_users[0]); k++)
        if (selected(a.strategies, reuse_users[k])) { /* the reference of the reuse runs */
            snprintf(runs[1].label, sizeof(runs[1].label), "memory/reuse");
            runs[1].strategy = "memory";
            runs[1].reuse = 1;
            n_runs = 2;
            break;
        }
    for (uint32_t i = 0; i < oc_store_n_strategies() && n_runs < MAX_RUNS; i++) {
        const char *name = oc_store_strategy_name(i);
        if (i == mem_index || !selected(a.strategies, name))
            continue;
        int hot = is_hotness_user(name), reuse = is_reuse_user(name);
        const struct oc_store_opt *hyper_opt;
        int hyper = a.hyperbatch > 0 && oc_store_opt_find_in(i, "hyperbatch", &hyper_opt) == OC_OK;
        int variants = (hot || reuse ? 2 : 1) + hyper;
        if (a.hyperbatch_only && !hyper)
            continue;
        for (int v = a.hyperbatch_only ? variants - 1 : 0; v < variants && n_runs < MAX_RUNS; v++) {
            struct run *r = &runs[n_runs++];
            r->strategy = name;
            r->budget = budget;
            r->hotness = hot && v == 1 ? OC_STORE_HOTNESS_PRESAMPLE : OC_STORE_HOTNESS_DEGREE;
            r->reuse = reuse && v == 1;
            r->hyperbatch = hyper && v == variants - 1 ? a.hyperbatch : 0; /* the last */
            if (r->hyperbatch > 0)
                snprintf(r->label, sizeof(r->label), "%s/hyper%s%.2g", name,
                         a.hyperbatch_disk ? "disk" : "", r->hyperbatch);
            else if (hot)
                snprintf(r->label, sizeof(r->label), "%s/%s", name, v ? "presample" : "degree");
            else if (reuse && v)
                snprintf(r->label, sizeof(r->label), "%s/reuse", name);
            else if (strcmp(name, "outre") == 0)
                snprintf(r->label, sizeof(r->label), "%s/S0", name);
            else
                snprintf(r->label, sizeof(r->label), "%s", name);
        }
    }
    if (selected(a.strategies, "auto") && n_runs < MAX_RUNS) { /* --strategy auto, last */
        struct run *r = &runs[n_runs++];
        r->strategy = "auto";
        r->budget = budget;
        snprintf(r->label, sizeof(r->label), "auto");
        const char *tmp = getenv("TMPDIR");
        snprintf(r->log_path, sizeof(r->log_path), "%s/ooc_bench-auto-%ld.jsonl",
                 tmp && *tmp ? tmp : "/tmp", (long)getpid());
    }
    if (a.paper) {
        uint64_t extra = a.budget ? a.budget : feat_bytes / 10;
        printf("\n[4a] smallest --mem-budget each strategy accepts (dry runs, to 1 MiB); each "
               "then trains at that plus %s\n",
               fmt_size(extra, s1, sizeof(s1)));
        for (uint32_t i = 1; i < n_runs; i++) {
            struct run *r = &runs[i];
            if (strcmp(r->strategy, "memory") == 0)
                continue; /* memory/reuse: no budget, as memory */
            r->min_budget = smallest_budget(&a, ds_dir, r, why, sizeof(why));
            if (!r->min_budget) {
                printf("  %-18s no budget found: %s\n", r->label, why);
                r->budget = 64ull << 30; /* it fails as it failed, and says so */
                continue;
            }
            r->budget = r->min_budget + extra;
            printf("  %-18s smallest budget %s -> trains at %s\n", r->label,
                   fmt_size(r->min_budget, s1, sizeof(s1)), fmt_size(r->budget, s2, sizeof(s2)));
        }
        paper_auto_budget(runs, n_runs);
    }
    printf("\n[4] training: %u runs, each in its own process (page cache of features.npy "
           "dropped before each)\n",
           n_runs);
    int cg_ok = !a.no_cgroup && access(CG_ROOT, W_OK) == 0;
    if (cg_ok)
        cg_clean_stale();
    if (!a.no_cgroup && !cg_ok)
        printf("  NOTE: %s is not writable: budgeted runs are NOT inside a cgroup memory limit\n",
               CG_ROOT);
    for (uint32_t i = 0; i < n_runs; i++) {
        struct run *r = &runs[i];
        struct train_ctx tc = {&a, ds_dir, r};
        drop_page_cache(feat_path);
        why[0] = '\0';
        if (cg_ok && r->budget) { /* on failure r->cgroup is "" and why says so */
            r->cg_limit = r->budget + ((uint64_t)CGROUP_OVERHEAD_MIB << 20);
            cg_make(r->cgroup, sizeof(r->cgroup), i, r->cg_limit, why, sizeof(why));
        }
        printf("  %s (budget %s", r->label,
               r->budget ? fmt_size(r->budget, s1, sizeof(s1)) : "none");
        if (r->cgroup[0])
            printf(", inside a cgroup memory limit of %s", fmt_size(r->cg_limit, s2, sizeof(s2)));
        else if (why[0])
            printf(", NO cgroup: %s", why);
        printf(")\n");
        struct others_mark om;
        others_mark(&om);
        int crc = child_run(train_child, &tc, on_train_msg, r, &ru, r->why, sizeof(r->why));
        double others_s;
        r->others = others_share(&om, &ru, &others_s);
        if (crc) {
            r->failed = 1;
        } else if (!r->got_done) {
            r->failed = 1;
            snprintf(r->why, sizeof(r->why), "no result from the child");
        } else if (r->done.rc) {
            r->failed = 1;
            snprintf(r->why, sizeof(r->why), "%s", r->done.msg);
        }
        if (r->cgroup[0])
            cg_done(r->cgroup, &r->cg_peak, &r->cg_failcnt);
        if (r->failed && r->cgroup[0] && r->cg_failcnt)
            snprintf(r->why + strlen(r->why), sizeof(r->why) - strlen(r->why),
                     " (the cgroup limit of %s was hit %" PRIu64 " times)",
                     fmt_size(r->cg_limit, s1, sizeof(s1)), r->cg_failcnt);
        r->peak_rss = (uint64_t)ru.ru_maxrss * 1024;
        if (r->n_epochs && r->ep[r->n_epochs - 1].peak_rss_bytes > r->peak_rss)
            r->peak_rss = r->ep[r->n_epochs - 1].peak_rss_bytes;
        if (r->failed)
            printf("  %-18s FAILED: %s\n", r->label, r->why);
        else
            printf("  %-18s done: run %.1f s in all (open, epochs, eval), final loss %.4f, "
                   "test acc %.4f\n",
                   r->label, r->done.run_s, r->done.res.final_loss,
                   r->done.res.test_acc_at_best_val);
        if (r->others >= 0)
            printf("  %-18s other processes took %.1f%% of the CPUs meanwhile (%.1f CPU s)%s\n",
                   r->label, 100 * r->others, others_s,
                   r->others > OTHERS_SHARE_WARN ? ": LOADED MACHINE" : "");
        bad |= r->failed;
    }

    /* 5. report */
    const struct run *mem = &runs[0];
    double mem_s = !mem->failed && mem->n_epochs ? train_s(&mem->ep[mem->n_epochs - 1]) : 0;
    if (!mem->failed && mem->n_epochs && mem->ep[0].store.requested_rows != rr.total_rows)
        printf("\nWARNING: the replay requested %" PRIu64 " rows in epoch 0, memory's run %" PRIu64
               ": the bound's replay does not match training\n",
               rr.total_rows, mem->ep[0].store.requested_rows);
    double bound_s = mem_s > io_bound_s ? mem_s : io_bound_s;
    printf("\n[5] results (last epoch of %u; epoch s = training time, evaluation excluded)\n",
           a.epochs);
    printf("    disk: sequential %.0f MiB/s, random 4 KiB %.0f IOPS, random 8 KiB %.0f IOPS\n",
           seq_bps / MIB, pr.rand_iops, pr.rand8_iops);
    printf("    bound = max(memory epoch %.2f s, must-read %s / %.0f MiB/s = %.2f s) = %.2f s\n",
           mem_s, fmt_size(must_read, s1, sizeof(s1)), seq_bps / MIB, io_bound_s, bound_s);
    printf("    own io = the strategy's reads at these limits: max(read / sequential, reads x "
           "seconds per read at its mean read size, on the line through the 4 KiB and 8 KiB "
           "IOPS), plus its background packing's reads and writes (diskgnn) / sequential; "
           "x own = epoch / max(memory epoch, own io)\n");
    struct cJSON *json = NULL;
    if (a.json) {
        char title[256];
        snprintf(title, sizeof(title),
                 "%" PRIu64 " nodes, %u-dim features, budget %s%s, last epoch of %u", a.nodes,
                 a.feat_dim, a.paper ? "each strategy's smallest + " : "",
                 fmt_size(budget, s1, sizeof(s1)), a.epochs);
        struct json_head jh = {title,   a.epochs,     mem_s,         bound_s,   io_bound_s,
                               seq_bps, pr.rand_iops, pr.rand8_iops, must_read, unique_bytes};
        if (!(json = json_new(&jh)))
            bad = 1;
    }
    print_table(runs, n_runs, bound_s, seq_bps, pr.rand_iops, pr.rand8_iops, json);
    print_loaded(runs, n_runs);
    for (uint32_t i = 1; i < n_runs; i++)
        if (runs[i].cgroup[0])
            printf("    %-18s cgroup limit %s (budget + %d MiB): peak usage %s, failed charges "
                   "%" PRIu64 "%s\n",
                   runs[i].label, fmt_size(runs[i].cg_limit, s1, sizeof(s1)), CGROUP_OVERHEAD_MIB,
                   fmt_size(runs[i].cg_peak, s2, sizeof(s2)), runs[i].cg_failcnt,
                   runs[i].failed ? ", FAILED" : "");
    if (a.paper && !mem->failed) {
        printf("\n    smallest budget accepted vs memory's peak RSS (%s, unbudgeted):\n",
               fmt_size(mem->peak_rss, s1, sizeof(s1)));
        for (uint32_t i = 1; i < n_runs; i++)
            if (runs[i].min_budget)
                printf("    %-18s %10s  %.2fx   trained at %s: peak RSS %s (%s over the budget)\n",
                       runs[i].label, fmt_size(runs[i].min_budget, s1, sizeof(s1)),
                       (double)runs[i].min_budget / (double)mem->peak_rss,
                       fmt_size(runs[i].budget, s2, sizeof(s2)),
                       fmt_size(runs[i].peak_rss, s3, sizeof(s3)),
                       runs[i].peak_rss > runs[i].budget
                           ? fmt_size(runs[i].peak_rss - runs[i].budget, why, sizeof(why))
                           : "nothing");
    }
    print_auto(runs, n_runs, json);
    if (json && json_write(json, a.json) != 0)
        bad = 1;
    for (uint32_t i = 1; i < n_runs; i++)
        bad |= differs(runs, n_runs, &runs[i]);
    free(runs);
    return bad ? 1 : 0;
}
