/*
 * test_train_ooc.c — out-of-core training: every registered feature
 * strategy, under a memory budget that forces disk reads, trains to the same
 * weights_sha256 as `memory` (outre with --staleness 0: no embeddings); a budget too small for one batch fails at start
 * saying how much is needed; a features file truncated mid-run ends with an
 * error naming the file and offset, the last checkpoint stays valid, and
 * --resume finishes with the uninterrupted weights once the file is restored;
 * gnndrive with several sampler threads trains the same weights too; helios
 * reserves the two row buffers its pipeline holds, not depth + 1. Over a
 * disk topology the logged topology figures include the reads of the
 * samplers inside ginex (its inspector, on a pool of the pipeline's) and
 * diskgnn (its planner): each batch's lookups once, as the pipeline's.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gen_util.h"
#include "harness.h"
#include "offcore/generate.h"
#include "offcore/train.h"

static const char *ooc_graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 50000;
    g.avg_degree = 6;
    g.feat_dim = 100; /* 400-byte rows: not a divisor of 4096 */
    g.n_classes = 5;
    g.train_frac = 0.1;
    g.seed = 5;
    return gen_once(&g);
}

static void ooc_opts(struct oc_train_opts *o)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = 256;
    o->epochs = 2;
    o->hidden = 16;
    o->n_threads = 2;
    o->seed = 9;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->eval_batch_size = 256;
}

/* The bench graph and `memory`'s result at ooc_opts (NULL if the graph could not be made). */
static const char *ooc_reference(struct oc_train_opts *o, struct oc_train_result *ref)
{
    const char *dir = ooc_graph();
    if (!dir)
        return NULL;
    ooc_opts(o);
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, o, NULL, NULL, NULL, ref, &err), &err);
    return dir;
}

/*
 * Sums the disk bytes the training gathers ([0]) and the disk topology ([1])
 * read, the batch samplings ([2]), the batches ([3]) and the topology's
 * neighbor-list lookups ([4]).
 */
static void add_disk_reads(void *p, const struct oc_train_epoch_stats *st)
{
    uint64_t *read = p;
    read[0] += st->store.read_bytes;
    read[1] += st->topo.read_bytes;
    read[2] += st->n_sampled;
    read[3] += st->n_batches;
    read[4] += st->topo.n_lookups;
}

OC_TEST(every_strategy_trains_bit_identical_to_memory)
{
    const char *dir = ooc_graph();
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct oc_train_opts o;
    ooc_opts(&o);
    struct oc_train_result ref;
    struct oc_err err;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    /* Features are 20 MB; a 27 MB budget leaves the caches a part of them. */
    uint64_t lookups = 0; /* a disk topology's lookups when the batch pipeline samples */
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const char *name = oc_store_strategy_name(i);
        if (strcmp(name, "memory") == 0)
            continue;
        for (int variant = 0; variant < 3; variant++) {
            int hot = variant == 1, disk_topo = variant == 2;
            if (hot && strcmp(name, "static") != 0)
                continue;
            ooc_opts(&o);
            o.strategy = name;
            if (hot) /* --hotness presample: static's option (store.h, struct oc_store_opt) */
                OC_CHECK_OK(oc_train_opts_set(&o, "hotness", OC_STORE_HOTNESS_PRESAMPLE, &err),
                            &err);
            if (strcmp(name, "outre") == 0) /* without embeddings: a feature cache, exact */
                OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 0, &err), &err);
            o.topology_disk = disk_topo;
            o.topo_cache_bytes = 1u << 20; /* indptr + table 0.8 MB: a sixth of the lists */
            /* they sample in the strategy; a fresh plan directory: ginex's inspector samples
               rather than reuse the files of the run in RAM */
            int own = strcmp(name, "diskgnn") == 0 || strcmp(name, "ginex") == 0;
            char plan[600];
            snprintf(plan, sizeof(plan), "%s", oc_test_tmpdir());
            if (disk_topo && own)
                o.plan_dir = plan;
            /* ginex's own neighbor cache ranking, as the CLI picks it for --strategy ginex */
            o.topo_rank = strcmp(name, "ginex") == 0 ? OC_TOPO_RANK_GINEX : OC_TOPO_RANK_DEGREE;
            /* diskgnn holds chunk buffers and its window plan besides its cache; helios's
               pipeline one row buffer fewer, so at 28 MB its cache holds every row read */
            o.mem_budget = strcmp(name, "diskgnn") == 0  ? 36u << 20
                           : strcmp(name, "helios") == 0 ? 22u << 20
                                                         : 27u << 20;
            struct oc_train_result res;
            uint64_t read[5] = {0, 0, 0, 0, 0};
            OC_CHECK_OK(oc_train_run(dir, &o, add_disk_reads, read, NULL, &res, &err), &err);
            fprintf(stderr,
                    "  %-8s%s %s, %llu bytes read, %llu samplings of %llu batches, %llu "
                    "topology lookups\n",
                    name,
                    hot         ? " (presample)"
                    : disk_topo ? " (disk topology)"
                                : "",
                    res.weights_sha256, (unsigned long long)read[0], (unsigned long long)read[2],
                    (unsigned long long)read[3], (unsigned long long)read[4]);
            /*
             * Every batch is sampled exactly once: by the batch pipeline, or by the
             * strategy (ginex's inspector, diskgnn's offline sampling) and loaded from it.
             */
            OC_CHECK(read[2] == read[3]);
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
            if (strcmp(name, "mmap") != 0) /* the page cache may hold mmap's pages */
                OC_CHECK(read[0] > 0);
            /* ginex and diskgnn sample in the strategy (inspector, offline planner, on a
               pool of the pipeline's over a disk topology), whose reads the figures
               include: every batch is looked up once, as the pipeline's sampler does
               (diskgnn samples its first batches twice: a probe at open) */
            OC_CHECK(disk_topo ? read[1] > 0 : read[1] == 0);
            if (disk_topo && !own && !lookups)
                lookups = read[4];
            if (disk_topo && strcmp(name, "diskgnn") != 0) /* ginex: its probe is not counted */
                OC_CHECK(lookups > 0 && read[4] == lookups);
            if (disk_topo && strcmp(name, "diskgnn") == 0)
                OC_CHECK(read[4] >= lookups);
        }
    }
}

/* Counts epochs and batches seen with --reorder. */
static void count_epochs(void *p, const struct oc_train_epoch_stats *st)
{
    uint64_t *c = p;
    c[0]++;
    c[1] += st->n_batches;
    c[2] += st->loss > 0 && st->loss < 100;
}

OC_TEST(gnndrive_reorder_trains_every_batch)
{
    const char *dir = ooc_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    ooc_opts(&o);
    o.strategy = "gnndrive";
    struct oc_err err;
    OC_CHECK_OK(oc_train_opts_set(&o, "reorder", 1, &err), &err);
    OC_CHECK_OK(oc_train_opts_set(&o, "extractors", 3, &err), &err);
    o.mem_budget = 24u << 20;
    struct oc_train_result res;
    uint64_t seen[3] = {0, 0, 0};
    OC_CHECK_OK(oc_train_run(dir, &o, count_epochs, seen, NULL, &res, &err), &err);
    OC_CHECK(seen[0] == 2 && seen[2] == 2);
    OC_CHECK(seen[1] == 2 * ((5000 + 255) / 256)); /* 10% of 50k nodes train, batch 256 */
    OC_CHECK(strlen(res.weights_sha256) == 64);
}

/* Sums the batches sampled and the most sampler threads an epoch ran ([0], [1]). */
static void count_samplers(void *p, const struct oc_train_epoch_stats *st)
{
    uint64_t *c = p;
    c[0] += st->n_sampled;
    c[1] = st->samplers > c[1] ? st->samplers : c[1];
}

/*
 * gnndrive --samplers 3 (GNNDrive's pool of samplers): three batches are
 * sampled at once, each by its own sampler, and shown to the store in plan
 * order, so training is bit-identical to `memory`, with the topology in RAM
 * and on disk; with --reorder every batch is still trained once.
 */
OC_TEST(gnndrive_several_samplers_train_bit_identical)
{
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    const char *dir = ooc_reference(&o, &ref);
    if (!dir)
        return;
    uint64_t nb = 2 * ((5000 + 255) / 256); /* 10% of 50k nodes train, batch 256, 2 epochs */
    for (int disk_topo = 0; disk_topo < 2; disk_topo++) {
        ooc_opts(&o);
        o.strategy = "gnndrive";
        o.mem_budget = 28u << 20;
        o.topology_disk = disk_topo;
        o.topo_cache_bytes = 1u << 20;
        OC_CHECK_OK(oc_train_opts_set(&o, "samplers", 3, &err), &err);
        uint64_t c[2] = {0, 0};
        OC_CHECK_OK(oc_train_run(dir, &o, count_samplers, c, NULL, &res, &err), &err);
        fprintf(stderr, "  gnndrive, 3 samplers%s: %s, %llu samplings of %llu batches\n",
                disk_topo ? " (disk topology)" : "", res.weights_sha256, (unsigned long long)c[0],
                (unsigned long long)nb);
        OC_CHECK(c[1] == 3 && c[0] == nb);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    }
    ooc_opts(&o);
    o.strategy = "gnndrive";
    o.mem_budget = 28u << 20;
    OC_CHECK_OK(oc_train_opts_set(&o, "samplers", 4, &err), &err);
    OC_CHECK_OK(oc_train_opts_set(&o, "reorder", 1, &err), &err);
    uint64_t seen[3] = {0, 0, 0};
    OC_CHECK_OK(oc_train_run(dir, &o, count_epochs, seen, NULL, &res, &err), &err);
    OC_CHECK(seen[0] == 2 && seen[1] == nb && seen[2] == 2);
    /* other strategies run one sampler, as before */
    ooc_opts(&o);
    o.strategy = "static";
    o.mem_budget = 28u << 20;
    uint64_t one[2] = {0, 0};
    OC_CHECK_OK(oc_train_run(dir, &o, count_samplers, one, NULL, &res, &err), &err);
    OC_CHECK(one[1] == 1 && one[0] == nb);
}

/*
 * ginex loads each batch back from the superbatch file its inspector wrote;
 * when no file can be written (the plan directory lies under a regular file)
 * it samples each batch a second time, says so in the log, and trains the
 * same weights. Over a disk topology both samplings' reads are in the
 * figures: twice the lookups of a run with its files.
 */
OC_TEST(ginex_without_plan_files_samples_twice_and_trains_the_same)
{
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    const char *dir = ooc_reference(&o, &ref);
    if (!dir)
        return;
    /* variant 0: topology in RAM; 1: on disk, with plan files; 2: on disk, without */
    uint64_t once = 0; /* the topology lookups of variant 1 */
    for (int variant = 0; variant < 3; variant++) {
        ooc_opts(&o);
        o.strategy = "ginex";
        o.mem_budget = 28u << 20;
        o.topology_disk = variant > 0;
        o.topo_cache_bytes = 1u << 20;
        char plan[600];
        snprintf(plan, sizeof(plan), "%s", oc_test_tmpdir());
        /* /dev/null/...: not a directory, every plan write fails */
        o.plan_dir = variant == 1 ? plan : "/dev/null/offcore-plan";
        uint64_t read[5] = {0, 0, 0, 0, 0};
        OC_CHECK_OK(oc_train_run(dir, &o, add_disk_reads, read, NULL, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        OC_CHECK(read[3] > 0 && read[2] == (variant == 1 ? 1 : 2) * read[3]);
        if (variant == 0)
            OC_CHECK(read[4] == 0);
        if (variant == 1)
            once = read[4];
        if (variant == 2)
            OC_CHECK(once > 0 && read[4] == 2 * once);
    }
}

OC_TEST(budget_too_small_for_one_batch_fails_at_start)
{
    const char *dir = ooc_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    ooc_opts(&o);
    o.strategy = "static";
    o.mem_budget = 1u << 20;
    struct oc_train_result res;
    struct oc_err err;
    OC_CHECK_ERR(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), OC_ERR_BUDGET, &err,
                 "too small");
    OC_CHECK(res.epochs_run == 0);
}

/* The most memory held through the accountant in any epoch. */
static void max_peak(void *p, const struct oc_train_epoch_stats *st)
{
    uint64_t *peak = p;
    if (st->peak_mem_bytes > *peak)
        *peak = st->peak_mem_bytes;
}

/*
 * helios's reads land in its own records' stages, so its batch pipeline holds
 * two row buffers at depth 2 (the trainer's and one gathered ahead), not
 * three: train reserves only those, its store gets the third's bytes, and
 * the run stays within the budget.
 */
OC_TEST(helios_reserves_only_the_row_buffers_its_pipeline_holds)
{
    uint32_t helios, stat;
    struct oc_err err;
    OC_CHECK_OK(oc_store_strategy_find("helios", &helios, &err), &err);
    OC_CHECK_OK(oc_store_strategy_find("static", &stat, &err), &err);
    OC_CHECK(oc_store_strategy_row_buffers(helios, 2) == 2);
    OC_CHECK(oc_store_strategy_row_buffers(helios, 1) == 2);
    OC_CHECK(oc_store_strategy_row_buffers(stat, 2) == 3);
    OC_CHECK(oc_store_strategy_row_buffers(stat, 1) == 2);
    OC_CHECK(oc_store_strategy_row_buffers(oc_store_n_strategies(), 2) == 3);
    const char *dir = ooc_graph();
    if (!dir)
        return;
    struct oc_train_result res[2];
    const char *names[2] = {"static", "helios"};
    uint64_t peak[2] = {0, 0};
    struct oc_train_opts o;
    for (int i = 0; i < 2; i++) {
        ooc_opts(&o);
        o.strategy = names[i];
        o.mem_budget = 28u << 20;
        oc_mem_reset_peak(); /* the peak of this run alone */
        OC_CHECK_OK(oc_train_run(dir, &o, max_peak, &peak[i], NULL, &res[i], &err), &err);
        OC_CHECK(res[i].depth == 2);
        OC_CHECK(peak[i] <= o.mem_budget);
    }
    OC_CHECK(res[0].held_bytes == res[1].held_bytes);
    OC_CHECK(res[1].working_set_bytes < res[0].working_set_bytes);
    uint64_t one_buffer = res[0].working_set_bytes - res[1].working_set_bytes;
    OC_CHECK(one_buffer * 3 <= res[0].working_set_bytes); /* three of them in static's */
    OC_CHECK(res[1].store_bytes == res[0].store_bytes + one_buffer);
    OC_CHECK(strcmp(res[0].weights_sha256, res[1].weights_sha256) == 0);
}

struct truncate_ctx {
    const char *features;
    uint32_t at_epoch;
};

/* Called after each epoch, before its checkpoint: cuts the features file. */
static void truncate_after(void *p, const struct oc_train_epoch_stats *st)
{
    struct truncate_ctx *c = p;
    if (st->epoch == c->at_epoch && truncate(c->features, 4096 + 400 * 100) != 0)
        perror("truncate");
}

OC_TEST(features_truncated_mid_run_then_resume_after_restore)
{
    const char *dir = ooc_graph();
    if (!dir)
        return;
    char feat[1100], saved[1100], ckpt[1100];
    snprintf(feat, sizeof(feat), "%s/features.npy", dir);
    snprintf(saved, sizeof(saved), "%s/features.saved", oc_test_tmpdir());
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", oc_test_tmpdir());
    struct oc_err err;
    char *data = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(feat, 0, &data, &len, &err), &err);
    if (!data)
        return;
    OC_CHECK_OK(oc_write_file_atomic(saved, data, len, &err), &err);

    struct oc_train_opts o;
    ooc_opts(&o);
    o.epochs = 3;
    o.strategy = "direct";
    struct oc_train_result full;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &full, &err), &err);

    o.checkpoint_dir = ckpt;
    struct truncate_ctx tc = {feat, 0};
    struct oc_train_result res;
    OC_CHECK_ERR(oc_train_run(dir, &o, truncate_after, &tc, NULL, &res, &err), OC_ERR_FORMAT, &err,
                 "features.npy");
    OC_CHECK(strstr(err.msg, "offset") != NULL);
    fprintf(stderr, "  mid-run error: %s\n", err.msg);
    OC_CHECK(res.epochs_run == 1);

    /* Restore the file; the checkpoint of epoch 0 resumes to the uninterrupted weights. */
    OC_CHECK_OK(oc_write_file_atomic(feat, data, len, &err), &err);
    oc_free(data);
    o.resume = 1;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &res, &err), &err);
    OC_CHECK(res.epochs_run == 2);
    OC_CHECK(strcmp(res.weights_sha256, full.weights_sha256) == 0);
}

OC_TEST_MAIN()
