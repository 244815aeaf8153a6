/*
 * test_partition_batch.c — OUTRE's partition-based batches (`--batching
 * partition`): the METIS partition file is written, reused when whole and
 * rebuilt (never trusted) when damaged, truncated or for other inputs;
 * Fennel's parts are balanced, the same every time, cut along communities and
 * keyed apart from METIS's; an
 * epoch's partition batches cover every training node exactly once, are
 * the same for the same (seed, epoch) and gather few parts per batch; the
 * Redundancy Ratio the trainer reports counts every batch and is lower with
 * partition batches on a graph with communities; every strategy trains to
 * the same weights as `memory` with partition batches, and the checkpoint
 * fingerprint tells the two batchings, and the two partitioners, apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/io.h"
#include "offcore/plan.h"
#include "offcore/sample.h"
#include "offcore/train.h"
#include "plan/plan_int.h"

#define PB_BATCH 100
#define PB_GROUP 2

static const char *pb_graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 4000;
    g.avg_degree = 6;
    g.feat_dim = 16;
    g.n_classes = 16; /* communities of 250 nodes that METIS can find */
    g.homophily = 0.9;
    g.train_frac = 0.25;
    g.seed = 3;
    return gen_once(&g);
}

/* The dataset, its in-memory graph and training ids. */
struct pb_fix {
    struct oc_dataset *ds;
    uint64_t *indptr;
    void *indices;
    struct oc_graph g;
    uint64_t *train;
    uint64_t n_train;
    char plan[1100];
};

static int pb_open(struct pb_fix *f)
{
    memset(f, 0, sizeof(*f));
    const char *dir = pb_graph();
    if (!dir)
        return -1;
    struct oc_err err;
    int rc;
    if ((rc = oc_dataset_open(dir, 0, &f->ds, &err)) ||
        (rc = oc_dataset_load_indptr(f->ds, &f->indptr, &err)) ||
        (rc = oc_dataset_load_indices(f->ds, OC_DTYPE_U32, &f->indices, &err)) ||
        (rc = oc_dataset_load_split(f->ds, OC_DS_TRAIN_IDX, &f->train, &f->n_train, &err))) {
        fprintf(stderr, "  open: %s\n", err.msg);
        return -1;
    }
    f->g.n_nodes = oc_dataset_manifest(f->ds)->n_nodes;
    f->g.indptr = f->indptr;
    f->g.indices32 = f->indices;
    snprintf(f->plan, sizeof(f->plan), "%s/plan", dir);
    return 0;
}

static void pb_close(struct pb_fix *f)
{
    oc_free(f->indptr);
    oc_free(f->indices);
    oc_free(f->train);
    oc_dataset_free(f->ds);
}

static uint32_t pb_n_parts(const struct pb_fix *f)
{
    return oc_plan_partition_n_parts(f->g.n_nodes, f->n_train, PB_BATCH, PB_GROUP);
}

OC_TEST(partition_batches_cover_every_training_node_once_per_epoch)
{
    struct pb_fix f;
    OC_CHECK(pb_open(&f) == 0);
    if (!f.ds)
        return;
    struct oc_err err;
    struct oc_plan_partition part;
    OC_CHECK(pb_n_parts(&f) == PB_GROUP * ((f.n_train + PB_BATCH - 1) / PB_BATCH));
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, pb_n_parts(&f),
                                      OC_PLAN_PART_METIS, f.plan, &part, &err),
                &err);
    if (!part.part_of) {
        pb_close(&f);
        return;
    }
    struct oc_sample_parts parts = {f.g.n_nodes, part.part_of, part.n_parts, PB_GROUP, part.key};
    struct oc_sample_opts so = {0};
    so.seed = 11;
    so.parts = &parts;
    struct oc_sample_epoch ep, again, rnd;
    OC_CHECK_OK(oc_sample_epoch_init_plan(&ep, f.train, f.n_train, PB_BATCH, 0, &so, &err), &err);
    OC_CHECK_OK(oc_sample_epoch_init_plan(&again, f.train, f.n_train, PB_BATCH, 0, &so, &err),
                &err);
    OC_CHECK_OK(oc_sample_epoch_init(&rnd, f.train, f.n_train, PB_BATCH, 0, &err), &err);
    uint64_t nb = oc_sample_epoch_n_batches(&ep);
    OC_CHECK(nb == (f.n_train + PB_BATCH - 1) / PB_BATCH); /* as many as random batches */
    uint8_t *seen = calloc(f.g.n_nodes, 1);
    uint32_t *mark = calloc(part.n_parts, sizeof(uint32_t));
    uint64_t *prev = malloc(f.n_train * sizeof(uint64_t));
    for (uint64_t e = 0; e < 3; e++) {
        oc_sample_epoch_shuffle(&ep, so.seed, e);
        oc_sample_epoch_shuffle(&again, so.seed, e);
        oc_sample_epoch_shuffle(&rnd, so.seed, e);
        /* the same (seed, epoch): the same order; another epoch: another */
        OC_CHECK(memcmp(ep.order, again.order, f.n_train * sizeof(uint64_t)) == 0);
        if (e > 0)
            OC_CHECK(memcmp(ep.order, prev, f.n_train * sizeof(uint64_t)) != 0);
        memcpy(prev, ep.order, f.n_train * sizeof(uint64_t));
        memset(seen, 0, f.g.n_nodes);
        uint64_t covered = 0, parts_sum = 0, rnd_parts_sum = 0;
        for (uint64_t b = 0; b < nb; b++) {
            const uint64_t *s;
            uint64_t n;
            OC_CHECK_OK(oc_sample_epoch_batch(&ep, b, &s, &n, &err), &err);
            OC_CHECK(n == PB_BATCH || b + 1 == nb);
            for (uint64_t i = 0; i < n; i++) {
                OC_CHECK(seen[s[i]] == 0); /* never twice */
                seen[s[i]] = 1;
                covered++;
                if (mark[part.part_of[s[i]]] != (uint32_t)(b + 1) + (uint32_t)e * 1000u) {
                    mark[part.part_of[s[i]]] = (uint32_t)(b + 1) + (uint32_t)e * 1000u;
                    parts_sum++;
                }
            }
            OC_CHECK_OK(oc_sample_epoch_batch(&rnd, b, &s, &n, &err), &err);
            for (uint64_t i = 0; i < n; i++)
                if (mark[part.part_of[s[i]]] != (uint32_t)(b + 1) + (uint32_t)e * 1000u + 500u) {
                    mark[part.part_of[s[i]]] = (uint32_t)(b + 1) + (uint32_t)e * 1000u + 500u;
                    rnd_parts_sum++;
                }
        }
        OC_CHECK(covered == f.n_train); /* every training node, exactly once */
        for (uint64_t i = 0; i < f.n_train; i++)
            OC_CHECK(seen[f.train[i]] == 1);
        /* a batch holds the nodes of about one group of parts (it may straddle two); a
           random batch of 100 draws from nearly every one of the 20 parts */
        OC_CHECK(parts_sum <= nb * 2 * PB_GROUP);
        OC_CHECK(rnd_parts_sum > parts_sum * 3);
    }
    free(seen);
    free(mark);
    free(prev);
    oc_sample_epoch_deinit(&ep);
    oc_sample_epoch_deinit(&again);
    oc_sample_epoch_deinit(&rnd);
    /* a seed without a part is refused */
    struct oc_sample_parts small = parts;
    small.n_nodes = 1;
    OC_CHECK_ERR(oc_sample_epoch_init_plan(&ep, f.train, f.n_train, PB_BATCH, 0,
                                           &(struct oc_sample_opts){.parts = &small}, &err),
                 OC_ERR_ARG, &err, "has no part");
    oc_plan_partition_deinit(&part);
    pb_close(&f);
}

/* Overwrites len bytes at off of path with junk, or truncates it to off (len 0). */
static void pb_damage(const char *path, long off, size_t len)
{
    FILE *fp = fopen(path, "r+b");
    OC_CHECK(fp != NULL);
    if (!fp)
        return;
    if (len == 0) {
        OC_CHECK(ftruncate(fileno(fp), off) == 0);
    } else {
        fseek(fp, off, SEEK_SET);
        for (size_t i = 0; i < len; i++)
            fputc(0x5a, fp);
    }
    fclose(fp);
}

OC_TEST(partition_file_is_reused_and_a_damaged_one_rebuilt)
{
    struct pb_fix f;
    OC_CHECK(pb_open(&f) == 0);
    if (!f.ds)
        return;
    struct oc_err err;
    struct oc_plan_partition a, b;
    uint32_t np = pb_n_parts(&f) + 1; /* a partition of its own (the other test's is np - 1) */
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS,
                                      f.plan, &a, &err),
                &err);
    OC_CHECK(a.built == 1 && a.path[0] != '\0' && oc_path_exists(a.path));
    uint64_t n = f.g.n_nodes;
    for (uint64_t v = 0; a.part_of && v < n; v++)
        OC_CHECK(a.part_of[v] < np);
    /* whole: read back, not computed */
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS,
                                      f.plan, &b, &err),
                &err);
    OC_CHECK(b.built == 0 && b.part_of && memcmp(a.part_of, b.part_of, n * 4) == 0);
    oc_plan_partition_deinit(&b);
    /* damaged in the middle (a part id), in the header, at the CRC, or truncated: rebuilt */
    const long file_bytes = 32 + 4 * (long)n + 4;
    const struct {
        long off;
        size_t len;
    } damage[] = {{32 + 4 * 17, 2}, {12, 1}, {file_bytes - 2, 1}, {file_bytes - 4000, 0}, {5, 0}};
    for (size_t k = 0; k < sizeof(damage) / sizeof(damage[0]); k++) {
        pb_damage(a.path, damage[k].off, damage[k].len);
        OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS,
                                          f.plan, &b, &err),
                    &err);
        OC_CHECK(b.built == 1); /* computed again, never read from the damaged file */
        OC_CHECK(b.part_of && memcmp(a.part_of, b.part_of, n * 4) == 0); /* METIS is seeded */
        oc_plan_partition_deinit(&b);
        OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS,
                                          f.plan, &b, &err),
                    &err);
        OC_CHECK(b.built == 0); /* and the file was replaced by a whole one */
        oc_plan_partition_deinit(&b);
    }
    /* other inputs (fewer training nodes): another key, another file */
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train - 1, np, OC_PLAN_PART_METIS,
                                      f.plan, &b, &err),
                &err);
    OC_CHECK(b.built == 1 && b.key != a.key && strcmp(b.path, a.path) != 0);
    oc_plan_partition_deinit(&b);
    OC_CHECK_ERR(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, 0, OC_PLAN_PART_METIS,
                                       f.plan, &b, &err),
                 OC_ERR_ARG, &err, "0 parts");
    /* no plan directory: the same partition, computed, and no file anywhere (a NULL once
       became a directory named "(null)" in the working directory: run in an empty one) */
    char cwd[4096], empty[] = "/tmp/oc-test-nullplan-XXXXXX";
    OC_CHECK(getcwd(cwd, sizeof(cwd)) != NULL && mkdtemp(empty) != NULL && chdir(empty) == 0);
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS, NULL,
                                      &b, &err),
                &err);
    OC_CHECK(chdir(cwd) == 0);
    OC_CHECK(b.built == 1 && b.path[0] == '\0');
    OC_CHECK(rmdir(empty) == 0); /* still empty */
    OC_CHECK(b.part_of && memcmp(a.part_of, b.part_of, n * 4) == 0);
    oc_plan_partition_deinit(&b);
    oc_plan_partition_deinit(&a);
    pb_close(&f);
}

/* Edges of the in-memory graph whose ends are in different parts. */
static uint64_t pb_cut(const struct pb_fix *f, const uint32_t *part_of)
{
    uint64_t cut = 0;
    const uint32_t *idx = f->g.indices32;
    for (uint64_t v = 0; v < f->g.n_nodes; v++)
        for (uint64_t e = f->g.indptr[v]; e < f->g.indptr[v + 1]; e++)
            cut += part_of[idx[e]] != part_of[v];
    return cut;
}

OC_TEST(fennel_partition_is_balanced_deterministic_and_cuts_along_communities)
{
    struct pb_fix f;
    OC_CHECK(pb_open(&f) == 0);
    if (!f.ds)
        return;
    struct oc_err err;
    struct oc_plan_partition a, b, m;
    uint32_t np = pb_n_parts(&f);
    uint64_t n = f.g.n_nodes;
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_FENNEL,
                                      f.plan, &a, &err),
                &err);
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_METIS,
                                      f.plan, &m, &err),
                &err);
    OC_CHECK(a.part_of && m.part_of && a.key != m.key && strcmp(a.path, m.path) != 0);
    if (!a.part_of || !m.part_of)
        return;
    /* balanced: at most 1.1 x the even share of nodes and of training nodes per part */
    uint64_t *size = calloc(np, sizeof(uint64_t)), *tsize = calloc(np, sizeof(uint64_t));
    for (uint64_t v = 0; v < n; v++) {
        OC_CHECK(a.part_of[v] < np);
        size[a.part_of[v] < np ? a.part_of[v] : 0]++;
    }
    for (uint64_t i = 0; i < f.n_train; i++)
        tsize[a.part_of[f.train[i]]]++;
    for (uint32_t p = 0; p < np; p++) {
        OC_CHECK(size[p] * np <= (uint64_t)(1.1 * (double)n) + np);
        OC_CHECK(tsize[p] * np <= (uint64_t)(1.1 * (double)f.n_train) + np);
    }
    free(size);
    free(tsize);
    /* along the 16 planted communities: far fewer edges cut than parts by node id modulo */
    uint32_t *rnd = malloc(n * sizeof(uint32_t));
    for (uint64_t v = 0; v < n; v++)
        rnd[v] = (uint32_t)(v % np);
    uint64_t cut_f = pb_cut(&f, a.part_of), cut_m = pb_cut(&f, m.part_of), cut_r = pb_cut(&f, rnd);
    fprintf(stderr, "  %u parts: edges cut by Fennel %llu, METIS %llu, node id modulo %llu\n", np,
            (unsigned long long)cut_f, (unsigned long long)cut_m, (unsigned long long)cut_r);
    OC_CHECK(cut_f * 2 < cut_r);
    free(rnd);
    /* reused from its file; computed again after it is removed: the same parts */
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_FENNEL,
                                      f.plan, &b, &err),
                &err);
    OC_CHECK(b.built == 0 && b.part_of && memcmp(a.part_of, b.part_of, n * 4) == 0);
    oc_plan_partition_deinit(&b);
    OC_CHECK(unlink(a.path) == 0);
    OC_CHECK_OK(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_FENNEL,
                                      f.plan, &b, &err),
                &err);
    OC_CHECK(b.built == 1 && b.part_of && memcmp(a.part_of, b.part_of, n * 4) == 0);
    oc_plan_partition_deinit(&b);
    OC_CHECK_ERR(oc_plan_partition_get(f.ds, &f.g, f.train, f.n_train, np, OC_PLAN_PART_COUNT,
                                       f.plan, &b, &err),
                 OC_ERR_ARG, &err, "unknown partitioner");
    oc_plan_partition_deinit(&a);
    oc_plan_partition_deinit(&m);
    pb_close(&f);
}

static void pb_opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->n_layers = 2;
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = PB_BATCH;
    o->epochs = 2;
    o->n_threads = 2;
    o->seed = 4;
    o->eval = OC_TRAIN_EVAL_NONE;
}

struct pb_epochs {
    uint64_t input_rows[4], seed_rows[4], distinct_rows[4];
    double rr_min[4], rr_max[4];
    uint32_t n;
};

static void pb_on_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct pb_epochs *p = ctx;
    if (p->n < 4) {
        p->input_rows[p->n] = st->input_rows;
        p->seed_rows[p->n] = st->seed_rows;
        p->distinct_rows[p->n] = st->distinct_rows;
        p->rr_min[p->n] = st->batch_rr_min;
        p->rr_max[p->n] = st->batch_rr_max;
        p->n++;
    }
}

/* Fennel on a path whose training nodes come last (ids that follow locality): the first
   parts fill with nodes before any training node arrives, and a training node then finds no
   part under both limits. It goes to the part with room and the fewest training nodes. */
OC_TEST(fennel_places_training_nodes_that_come_last)
{
    const uint64_t n = 1000;
    int32_t *xadj = malloc((n + 1) * sizeof(int32_t)), *adj = malloc(2 * n * sizeof(int32_t));
    uint8_t *is_train = calloc(n, 1);
    uint32_t *part = malloc(n * sizeof(uint32_t)), *again = malloc(n * sizeof(uint32_t));
    int32_t e = 0;
    for (uint64_t v = 0; v < n; v++) {
        xadj[v] = e;
        if (v > 0)
            adj[e++] = (int32_t)v - 1;
        if (v + 1 < n)
            adj[e++] = (int32_t)v + 1;
        is_train[v] = v >= 900;
    }
    xadj[n] = e;
    struct oc_err err;
    for (uint32_t k = 2; k <= 4; k++) {
        OC_CHECK_OK(plan_fennel(xadj, adj, n, is_train, 100, k, part, &err), &err);
        OC_CHECK_OK(plan_fennel(xadj, adj, n, is_train, 100, k, again, &err), &err);
        OC_CHECK(memcmp(part, again, n * sizeof(uint32_t)) == 0);
        uint64_t bad = 0, tsize[4] = {0};
        for (uint64_t v = 0; v < n; v++) {
            bad += part[v] >= k;
            if (part[v] < k && is_train[v])
                tsize[part[v]]++;
        }
        OC_CHECK(bad == 0);
        uint64_t placed = 0;
        for (uint32_t p = 0; p < k; p++)
            placed += tsize[p];
        OC_CHECK(placed == 100);
    }
    free(xadj);
    free(adj);
    free(is_train);
    free(part);
    free(again);
}

OC_TEST(redundancy_ratio_lower_with_partition_batches_and_strategies_agree)
{
    const char *dir = pb_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct pb_fix f;
    OC_CHECK(pb_open(&f) == 0);
    uint64_t n_train = f.n_train, n_nodes = f.g.n_nodes;
    pb_close(&f);
    struct oc_train_opts o;
    struct oc_train_result rnd, part, other;
    struct pb_epochs er = {0}, ep = {0};
    struct oc_err err;
    pb_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, pb_on_epoch, &er, NULL, &rnd, &err), &err);
    pb_opts(&o);
    o.batching = OC_TRAIN_BATCHING_PARTITION;
    o.partition_group = PB_GROUP;
    OC_CHECK_OK(oc_train_run(dir, &o, pb_on_epoch, &ep, NULL, &part, &err), &err);
    OC_CHECK(er.n == 2 && ep.n == 2);
    for (uint32_t e = 0; e < 2; e++) {
        OC_CHECK(er.seed_rows[e] == n_train && ep.seed_rows[e] == n_train);
        OC_CHECK(er.distinct_rows[e] <= er.input_rows[e] && er.distinct_rows[e] <= n_nodes);
        OC_CHECK(ep.distinct_rows[e] <= ep.input_rows[e] && ep.distinct_rows[e] >= n_train);
        double rr = (double)er.input_rows[e] / (double)n_train; /* between the batches' own */
        OC_CHECK(er.rr_min[e] > 1.0 && er.rr_min[e] <= rr + 1e-9 && rr <= er.rr_max[e] + 1e-9);
        /* partition batches share more of their neighbourhoods: fewer rows per seed */
        OC_CHECK(ep.input_rows[e] * 10 < er.input_rows[e] * 9);
        fprintf(stderr, "  epoch %u: RR random %.2f, partition %.2f\n", e,
                (double)er.input_rows[e] / (double)n_train,
                (double)ep.input_rows[e] / (double)n_train);
    }
    OC_CHECK(strcmp(rnd.weights_sha256, part.weights_sha256) != 0);
    /* Fennel's parts: also fewer rows per seed than random batches, other batches than METIS's */
    struct pb_epochs efen = {0};
    struct oc_train_result fen;
    pb_opts(&o);
    o.batching = OC_TRAIN_BATCHING_PARTITION;
    o.partition_group = PB_GROUP;
    o.partitioner = OC_PLAN_PART_FENNEL;
    OC_CHECK_OK(oc_train_run(dir, &o, pb_on_epoch, &efen, NULL, &fen, &err), &err);
    OC_CHECK(efen.n == 2);
    for (uint32_t e = 0; e < 2; e++) {
        OC_CHECK(efen.seed_rows[e] == n_train);
        OC_CHECK(efen.input_rows[e] * 10 < er.input_rows[e] * 9);
        fprintf(stderr, "  epoch %u: RR Fennel partition %.2f\n", e,
                (double)efen.input_rows[e] / (double)n_train);
    }
    OC_CHECK(strcmp(fen.weights_sha256, part.weights_sha256) != 0);
    /* every strategy that follows the plan trains on the same partition batches */
    static const char *const names[] = {"static", "ginex", "diskgnn", "direct"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        pb_opts(&o);
        o.batching = OC_TRAIN_BATCHING_PARTITION;
        o.partition_group = PB_GROUP;
        o.strategy = names[k];
        o.mem_budget = 40u << 20;
        oc_mem_set_budget(o.mem_budget);
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), &err);
        oc_mem_set_budget(0);
        if (strcmp(other.weights_sha256, part.weights_sha256) != 0)
            fprintf(stderr, "  %s: weights differ from memory's with partition batches\n",
                    names[k]);
        OC_CHECK(strcmp(other.weights_sha256, part.weights_sha256) == 0);
    }
    /* the checkpoint fingerprint holds the batching: a resume with the other is refused */
    char ck[1100];
    snprintf(ck, sizeof(ck), "%s/ckpt-pb", oc_test_tmpdir());
    pb_opts(&o);
    o.epochs = 1;
    o.checkpoint_dir = ck;
    o.batching = OC_TRAIN_BATCHING_PARTITION;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    o.partition_group = 3;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), OC_ERR_ARG, &err,
                 "partition_batch=");
    o.partition_group = 0;
    o.batching = OC_TRAIN_BATCHING_RANDOM;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), OC_ERR_ARG, &err,
                 "batching=");
    o.batching = OC_TRAIN_BATCHING_PARTITION;
    o.partitioner = OC_PLAN_PART_FENNEL; /* the partitioner too */
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &other, &err), OC_ERR_ARG, &err,
                 "partitioner=fennel");
    /* bad combinations are refused before anything runs */
    pb_opts(&o);
    o.partition_group = 3;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "needs --batching partition");
    pb_opts(&o);
    o.partitioner = OC_PLAN_PART_FENNEL;
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err,
                 "--partitioner needs --batching partition");
}

OC_TEST_MAIN()
