/*
 * train.c — the training loop: per epoch, the batch pipeline (pipeline.h)
 * samples each batch once from (seed, epoch, batch) and gathers its features
 * ahead; the trainer takes them in order and runs forward → loss → backward
 * → Adam; then it evaluates, keeps the test accuracy at the best validation
 * epoch, reports, logs and checkpoints.
 *
 *   epoch e:  pipeline: shuffle(seed, e) ─► sample b ─► store prepare ─► gather b (ahead)
 *             trainer:  next batch ─► fwd ─► loss ─► bwd ─► adam ─► done (slot reused)
 *             └─► eval ─► best-val bookkeeping ─► on_epoch ─► log line ─► checkpoint
 *
 * Place in the data flow: train (top of the library; the CLI calls it).
 * Thread-safety: one run per call; it creates and owns its pool, which the
 * pipeline's sampler and gathers and the nn kernels share (oc_pool_run
 * serializes them). Evaluation runs between epochs, when the pipeline is idle.
 * Ownership: everything created here is freed before returning.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "offcore/batch_pipe.h"
#include "offcore/io.h"
#include "train/auto_int.h"
#include "train/dist.h"
#include "train/train_int.h"

void oc_train_opts_default(enum oc_nn_model_kind kind, struct oc_train_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->model = kind;
    o->n_layers = 2;
    o->n_fanouts = 2;
    o->eval = OC_TRAIN_EVAL_FULL;
    o->eval_batch_size = 4096;
    o->batch_size = 1024;
    o->heads = 1;
    o->input_dropout = -1.0f;
    switch (kind) {
    case OC_NN_MODEL_SAGE:
        o->hidden = 16;
        o->fanouts[0] = 10;
        o->fanouts[1] = 25;
        o->batch_size = 1000;
        o->lr = 0.003f;
        o->weight_decay = 0.0f;
        o->dropout = 0.5f;
        o->epochs = 20;
        break;
    case OC_NN_MODEL_GCN:
        o->hidden = 16;
        o->fanouts[0] = o->fanouts[1] = OC_SAMPLE_ALL;
        o->lr = 0.01f;
        o->weight_decay = 5e-4f;
        o->dropout = 0.5f;
        o->epochs = 200;
        break;
    default: /* GAT */
        o->hidden = 8;
        o->heads = 8;
        o->fanouts[0] = o->fanouts[1] = OC_SAMPLE_ALL;
        o->lr = 0.005f;
        o->weight_decay = 5e-4f;
        o->dropout = 0.6f;
        o->epochs = 200;
        break;
    }
}

int oc_train_opts_set(struct oc_train_opts *o, const char *name, double value, struct oc_err *err)
{
    uint32_t strategy;
    const struct oc_store_opt *opt;
    if (oc_store_opt_find(name, &strategy, &opt) != OC_OK)
        return OC_ERR(err, OC_ERR_ARG, "no strategy has an option --%s", name ? name : "(null)");
    uint32_t k = 0;
    while (k < o->n_store_opts && strcmp(o->store_opts[k].name, opt->name) != 0)
        k++;
    if (k == OC_TRAIN_MAX_STORE_OPTS)
        return OC_ERR(err, OC_ERR_ARG, "more than %d strategy options", OC_TRAIN_MAX_STORE_OPTS);
    o->store_opts[k].name = opt->name;
    o->store_opts[k].value = value;
    if (k == o->n_store_opts)
        o->n_store_opts++;
    return OC_OK;
}

double oc_train_opts_get(const struct oc_train_opts *o, const char *name, double dflt)
{
    for (uint32_t k = 0; k < o->n_store_opts; k++)
        if (strcmp(o->store_opts[k].name, name) == 0)
            return o->store_opts[k].value;
    return dflt;
}

/* OC_ERR_ARG: "--NAME needs --strategy A, B or C", every strategy declaring NAME. */
static int owners_error(const char *opt_name, struct oc_err *err)
{
    const char *names[16];
    uint32_t n = 0;
    const struct oc_store_opt *opt;
    for (uint32_t i = 0; i < oc_store_n_strategies() && n < 16; i++)
        if (oc_store_opt_find_in(i, opt_name, &opt) == OC_OK)
            names[n++] = oc_store_strategy_name(i);
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (uint32_t k = 0; k < n && len < sizeof(list); k++) {
        int w = snprintf(list + len, sizeof(list) - len, "%s%s",
                         k == 0       ? ""
                         : k + 1 == n ? " or "
                                      : ", ",
                         names[k]);
        len += w > 0 ? (size_t)w : 0;
    }
    return OC_ERR(err, OC_ERR_ARG, "--%s needs --strategy %s", opt_name, list);
}

/*
 * Each strategy option given belongs to the chosen strategy and has a valid
 * value; with cfg, the values are stored into it.
 */
static int train_store_opts_apply(const struct oc_train_opts *o, struct oc_store_config *cfg,
                                  struct oc_err *err)
{
    const char *name = train_strategy_name(o);
    uint32_t chosen;
    if (cfg && oc_store_strategy_find(name, &chosen, err) == OC_OK) /* defaults first */
        for (uint32_t k = 0; k < oc_store_strategy_n_opts(chosen); k++) {
            const struct oc_store_opt *opt = oc_store_strategy_opt(chosen, k);
            int rc = opt->dflt != 0.0 ? oc_store_opt_apply(opt, opt->dflt, cfg, err) : OC_OK;
            if (rc)
                return rc;
        }
    for (uint32_t k = 0; k < o->n_store_opts; k++) {
        uint32_t owner, mine;
        const struct oc_store_opt *opt;
        if (oc_store_opt_find(o->store_opts[k].name, &owner, &opt) != OC_OK)
            return OC_ERR(err, OC_ERR_ARG, "no strategy has an option --%s", o->store_opts[k].name);
        /* the chosen strategy's own declaration of the name (several may declare it) */
        if (oc_store_strategy_find(name, &mine, NULL) == OC_OK &&
            oc_store_opt_find_in(mine, o->store_opts[k].name, &opt) == OC_OK)
            owner = mine;
        if (strcmp(oc_store_strategy_name(owner), name) != 0)
            return owners_error(opt->name, err);
        int rc = oc_store_opt_apply(opt, o->store_opts[k].value, cfg, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

/* Micro-shards per batch: --micro-shards, 1 when not given. */
static uint32_t train_n_shards(const struct oc_train_opts *o)
{
    return o->micro_shards > 1 ? o->micro_shards : 1;
}

/* Whether batches are cut into micro-shards (their gradients summed outside the model). */
static int train_sharded(const struct oc_train_opts *o)
{
    return o->micro_shards > 1 || o->distributed;
}

/*
 * The option of o's strategy marked outside_checkpoint (outre's --staleness:
 * its historical embeddings) that o sets nonzero, its value in *v; NULL when
 * none is (or the strategy is not known yet: auto, a bad name).
 */
static const struct oc_store_opt *train_state_outside_checkpoint(const struct oc_train_opts *o,
                                                                 double *v)
{
    uint32_t chosen;
    struct oc_err ignored;
    if (oc_store_strategy_find(train_strategy_name(o), &chosen, &ignored) != OC_OK)
        return NULL;
    for (uint32_t k = 0; k < oc_store_strategy_n_opts(chosen); k++) {
        const struct oc_store_opt *opt = oc_store_strategy_opt(chosen, k);
        *v = oc_train_opts_get(o, opt->name, opt->dflt);
        if (opt->outside_checkpoint && *v != 0)
            return opt;
    }
    return NULL;
}

/*
 * --micro-shards and --distributed: each rank takes whole micro-shards, and
 * every rank must train the same batches in the same order from the same
 * gathered rows.
 */
static int train_shards_check(const struct oc_train_opts *o, struct oc_err *err)
{
    if (o->micro_shards > TRAIN_MAX_MICRO_SHARDS)
        return OC_ERR(err, OC_ERR_ARG, "--micro-shards %u: at most %d", o->micro_shards,
                      TRAIN_MAX_MICRO_SHARDS);
    if (o->distributed) {
        if (!oc_dist_on())
            return OC_ERR(err, OC_ERR_ARG,
                          "--distributed: not in an MPI process group (oc_dist_init first; "
                          "launch as mpirun -np N offcore train DIR --distributed)");
        if (oc_dist_size() > train_n_shards(o))
            return OC_ERR(err, OC_ERR_ARG,
                          "--distributed: %u ranks but %u micro-shard(s) per batch: every rank "
                          "computes whole micro-shards, so give --micro-shards M with M >= %u "
                          "(the weights then equal one process's with --micro-shards M)",
                          oc_dist_size(), train_n_shards(o), oc_dist_size());
        if (train_auto_wanted(o))
            return OC_ERR(err, OC_ERR_ARG,
                          "--distributed needs a named --strategy, not auto (ranks timing "
                          "their own steps could pick differently)");
    }
    if (!train_sharded(o))
        return OC_OK;
    const char *flag = o->distributed ? "--distributed" : "--micro-shards";
    double v;
    const struct oc_store_opt *kept = train_state_outside_checkpoint(o, &v);
    if (kept)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "%s: %s's %s (--%s %g) are kept per whole batch (a batch's pushes are "
                      "admitted by the whole batch's gradients, which micro-shards split); give "
                      "--%s 0 (a feature cache: memory's weights) or another --strategy",
                      flag, train_strategy_name(o), kept->outside_checkpoint, kept->name, v,
                      kept->name);
    if (oc_train_opts_get(o, "reorder", 0) != 0)
        return OC_ERR(err, OC_ERR_ARG,
                      "%s: --reorder trains batches in the order their reads complete, which "
                      "differs between ranks and runs; leave it out",
                      flag);
    return OC_OK;
}

int oc_train_opts_check(const struct oc_train_opts *o, struct oc_err *err)
{
    if ((unsigned)o->model >= OC_NN_MODEL_KIND_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "unknown model (expected sage, gcn or gat)");
    if (o->n_layers < 1 || o->n_layers > OC_SAMPLE_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "--layers %u: must be between 1 and %d", o->n_layers,
                      OC_SAMPLE_MAX_LAYERS);
    if (o->n_fanouts != o->n_layers)
        return OC_ERR(err, OC_ERR_ARG,
                      "--fanout lists %u values but --layers is %u: give one fanout per layer",
                      o->n_fanouts, o->n_layers);
    for (uint32_t l = 0; l < o->n_fanouts; l++)
        if (o->fanouts[l] < 1 && o->fanouts[l] != OC_SAMPLE_ALL)
            return OC_ERR(err, OC_ERR_ARG, "--fanout: %d is not a positive count or -1 (all)",
                          o->fanouts[l]);
    if (o->batch_size == 0)
        return OC_ERR(err, OC_ERR_ARG, "--batch must be at least 1");
    if (o->eval_batch_size == 0)
        return OC_ERR(err, OC_ERR_ARG, "--eval-batch must be at least 1");
    if (o->hidden == 0)
        return OC_ERR(err, OC_ERR_ARG, "--hidden must be at least 1");
    if (o->heads == 0)
        return OC_ERR(err, OC_ERR_ARG, "--heads must be at least 1");
    if (o->heads != 1 && o->model != OC_NN_MODEL_GAT)
        return OC_ERR(err, OC_ERR_ARG, "--heads %u: attention heads are gat's (--model gat)",
                      o->heads);
    if (o->epochs == 0)
        return OC_ERR(err, OC_ERR_ARG, "--epochs must be at least 1");
    if (!(o->lr > 0.0f) || !isfinite(o->lr))
        return OC_ERR(err, OC_ERR_ARG, "--lr must be a positive finite number");
    if (!(o->weight_decay >= 0.0f) || !isfinite(o->weight_decay))
        return OC_ERR(err, OC_ERR_ARG, "--weight-decay must be a finite number >= 0");
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return OC_ERR(err, OC_ERR_ARG, "--dropout must be in [0, 1)");
    if (!(o->input_dropout < 1.0f))
        return OC_ERR(err, OC_ERR_ARG, "--input-dropout must be in [0, 1)");
    if ((unsigned)o->eval >= OC_TRAIN_EVAL_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "--eval must be full, sampled or none");
    if (o->eval == OC_TRAIN_EVAL_NONE && o->eval_every > 1)
        return OC_ERR(err, OC_ERR_ARG, "--eval-every has nothing to do with --eval none");
    if ((unsigned)o->metric >= OC_TRAIN_METRIC_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "--metric must be acc, rocauc or f1-macro");
    if (o->eval == OC_TRAIN_EVAL_NONE && o->metric != OC_TRAIN_METRIC_ACC)
        return OC_ERR(err, OC_ERR_ARG, "--metric %s has nothing to do with --eval none",
                      oc_train_metric_name(o->metric));
    if (o->scratch_dir && (o->eval != OC_TRAIN_EVAL_FULL || !o->mem_budget))
        return OC_ERR(err, OC_ERR_ARG,
                      "--scratch needs --eval full and --mem-budget (only layer-wise inference "
                      "under a budget writes scratch files)");
    if (o->scratch_dir && (!*o->scratch_dir || strlen(o->scratch_dir) >= 4000))
        return OC_ERR(err, OC_ERR_ARG, "--scratch '%s': empty or too long", o->scratch_dir);
    if ((unsigned)o->batching >= OC_TRAIN_BATCHING_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "--batching must be random or partition");
    if (o->partition_group && o->batching != OC_TRAIN_BATCHING_PARTITION)
        return OC_ERR(err, OC_ERR_ARG, "--partition-batch needs --batching partition");
    if (o->partitioner < 0 || o->partitioner >= OC_PLAN_PART_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "unknown partitioner %d", o->partitioner);
    if (o->partitioner != OC_PLAN_PART_METIS && o->batching != OC_TRAIN_BATCHING_PARTITION)
        return OC_ERR(err, OC_ERR_ARG, "--partitioner needs --batching partition");
    if (o->batching == OC_TRAIN_BATCHING_PARTITION && o->topology_disk)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "--batching partition needs the topology in memory (not --topology disk): "
                      "METIS partitions the graph in RAM");
    if (o->resume && !o->checkpoint_dir)
        return OC_ERR(err, OC_ERR_ARG, "--resume needs --checkpoint DIR");
    int rc = train_shards_check(o, err);
    if (rc)
        return rc;
    rc = train_auto_check(o, err);
    if (rc || train_auto_wanted(o)) /* auto: any strategy may be picked, --plan-dir applies */
        return rc;
    uint32_t index;
    if ((rc = oc_store_strategy_find(train_strategy_name(o), &index, err)))
        return rc;
    if (o->plan_dir && !oc_store_strategy_writes_plan(index) &&
        o->batching != OC_TRAIN_BATCHING_PARTITION) {
        char names[128] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < oc_store_n_strategies() && len < sizeof(names); i++)
            if (oc_store_strategy_writes_plan(i))
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? " or " : "",
                                        oc_store_strategy_name(i));
        return OC_ERR(err, OC_ERR_ARG,
                      "--plan-dir needs --strategy %s or --batching partition (they write plan "
                      "files)",
                      names);
    }
    return train_store_opts_apply(o, NULL, err);
}

static uint64_t train_peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
}

/* Everything one run holds; freed by run_deinit whatever state it is in. */
struct run {
    struct train_data data;
    struct oc_pool *pool;
    struct oc_nn_backend *be;
    struct oc_nn_model *model;
    struct oc_pipeline *stages; /* the store's stages and the batch pipeline's */
    struct oc_store *store;
    struct oc_batch_pipe *pipe;
    struct train_ws ws; /* what a batch in flight takes (probed under a budget) */
    uint32_t depth;
    uint64_t held, work; /* under a budget: held before the store, reserved beside it */
    struct train_degrees degrees;
    struct train_eval *eval;
    struct oc_train_log *log;
    struct train_labels labels;
    uint32_t strategy;              /* index in the store registry */
    struct train_batching batching; /* --batching partition's partition */
    struct train_redundancy redundancy;
    struct oc_progress *progress; /* the caller's (borrowed) */
    struct train_auto autosel;    /* --strategy auto: the predictions and the pick */
    struct train_dp dp;           /* --micro-shards / --distributed */
    struct train_part part;       /* a partitioned dataset: this rank's part (dist_rows.c) */
    float *eval_rows;             /* evaluation's rows without a pipeline to lend them */
    uint64_t cap_eval_rows;
    /* the pipeline's counters when the epoch began, and the store's samplers' topology reads
       counted so far: the first epoch's include what they read since the store opened
       (ginex's first superbatch, diskgnn's window 0) */
    struct oc_batch_pipe_stats pipe_mark;
    struct oc_topo_disk_stats store_topo_mark;
};

static void run_deinit(struct run *r)
{
    oc_train_log_close(r->log);
    train_eval_free(r->eval);
    oc_free(r->degrees.deg);
    oc_pipeline_free(r->stages); /* joins every stage before the pipe and the store go */
    oc_batch_pipe_free(r->pipe);
    oc_store_free(r->store);
    oc_nn_model_free(r->model);
    oc_nn_backend_free(r->be);
    oc_pool_free(r->pool);
    oc_free(r->labels.labels);
    train_dp_deinit(&r->dp);
    train_part_close(&r->part);
    oc_free(r->eval_rows);
    train_redundancy_deinit(&r->redundancy);
    train_batching_close(&r->batching);
    train_data_deinit(&r->data);
}

static int run_probe(struct run *r, const struct oc_train_opts *o, uint32_t first_epoch,
                     struct oc_err *err);
static int run_time_steps(struct run *r, const struct oc_train_opts *o, uint32_t first_epoch,
                          double *step_s, struct oc_err *err);

/*
 * --strategy auto: measures the compute rate, inspects the plan at the
 * store's share of the budget (cfg->mem_bytes) and opens the predicted
 * fastest strategy (train/auto.c); when one cannot open within the budget
 * (OC_ERR_BUDGET: its fixed part is more than the share), the next
 * prediction is opened instead, and the log says so. cfg gets the pick's
 * option defaults and --reuse-samples.
 */
static int run_open_auto(struct run *r, const struct oc_train_opts *o, struct oc_store_config *cfg,
                         struct oc_err *err)
{
    double step_s = 0;
    uint64_t n_train = r->data.n_split[TRAIN_SPLIT_TRAIN];
    uint64_t n_batches = (n_train + o->batch_size - 1) / o->batch_size;
    int rc;
    cfg->lanes = r->depth; /* as the store will have it: the cache's readers */
    if ((rc = run_time_steps(r, o, cfg->first_epoch, &step_s, err)) ||
        (rc = train_auto_choose(cfg, n_batches, step_s, r->work, o->allow_approximate, &r->autosel,
                                err)))
        return rc;
    enum auto_cand order[AUTO_CAND_COUNT];
    uint32_t n = auto_order(r->autosel.pred, order);
    rc = OC_ERR(err, OC_ERR_BUDGET, "--strategy auto: no strategy is a candidate");
    for (uint32_t k = 0; k < n; k++) {
        const struct auto_prediction *p = &r->autosel.pred[order[k]];
        struct oc_store_config c = *cfg;
        struct oc_train_opts picked = *o;
        picked.strategy = p->strategy;
        c.reuse_samples = p->reuse_samples;
        uint32_t index;
        if ((rc = oc_store_strategy_find(p->strategy, &index, err)) ||
            (rc = train_store_opts_apply(&picked, &c, err)) || /* the pick's defaults */
            (rc = oc_pipeline_new("training pipeline", &r->stages, err)))
            return rc;
        c.pipeline = r->stages;
        c.lanes = r->depth;
        c.progress = r->progress;
        if ((rc = oc_store_open(index, &c, &r->store, err)) == OC_OK) {
            r->strategy = index;
            train_auto_opened(&r->autosel, order[k]);
            return OC_OK;
        }
        oc_pipeline_free(r->stages);
        r->stages = NULL;
        if (rc != OC_ERR_BUDGET) {
            oc_err_prefix(err, "--strategy auto: strategy %s", p->strategy);
            return rc;
        }
        train_auto_skip(&r->autosel, order[k], err->msg);
    }
    return rc;
}

/* Where plan files go: --plan-dir, or DIR/plan. */
static int run_plan_dir(const struct oc_train_opts *o, const char *dir, char *buf, size_t n,
                        struct oc_err *err)
{
    if (!o->plan_dir) /* --plan-dir: elsewhere than the dataset (which may be read-only) */
        return oc_path_join(buf, n, dir, "plan", err);
    if (!*o->plan_dir || strlen(o->plan_dir) >= n)
        return OC_ERR(err, OC_ERR_ARG, "--plan-dir '%s': empty or too long", o->plan_dir);
    snprintf(buf, n, "%s", o->plan_dir);
    return OC_OK;
}

static int run_open_store(struct run *r, const struct oc_train_opts *o, const char *dir,
                          uint32_t first_epoch, struct oc_err *err)
{
    struct oc_sample_opts so = {0};
    so.n_layers = o->n_layers;
    memcpy(so.fanouts, o->fanouts, sizeof(so.fanouts));
    so.seed = o->seed;
    so.parts = train_batching_parts(&r->batching);
    char plan_dir[4096];
    int rc;
    if ((rc = run_plan_dir(o, dir, plan_dir, sizeof(plan_dir), err)))
        return rc;
    const char *name = train_auto_wanted(o) ? "memory" : train_strategy_name(o);
    rc = oc_store_strategy_find(name, &r->strategy,
                                err); /* auto: sized as memory's until the pick */
    if (rc)
        return rc;
    uint32_t index = r->strategy;
    struct oc_store_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ds = r->data.ds;
    cfg.graph = &r->data.graph;
    cfg.pool = r->pool;
    cfg.sample_opts = &so;
    cfg.first_epoch = first_epoch;
    cfg.n_epochs = o->epochs;
    cfg.plan_dir = plan_dir;
    cfg.reuse_samples = o->reuse_samples;
    const int part = r->part.on;
    char part_plan[4096];
    if (part) { /* the rank's rows by local row, ranked by in-degree; asked per batch for
                   what the access map says (train_part_fill_start) */
        cfg.ds = r->part.rows_ds;
        cfg.graph = &r->part.graph;
        cfg.accesses = &r->part.accesses;
        /* plan files (diskgnn's windows; ginex keeps its superbatches in RAM over a map)
           under the rank's own part, PART/plan, on its own disk */
        cfg.plan_dir = NULL;
        if (oc_store_strategy_writes_plan(index)) {
            if ((rc = oc_path_join(part_plan, sizeof(part_plan), r->part.part.dir, "plan", err)))
                return rc;
            cfg.plan_dir = part_plan;
        }
    }
    uint64_t last_in = 0, last_out = 0; /* the last layer's input: outre's embeddings */
    if (o->n_layers >= 2 &&
        (rc = oc_nn_model_layer_dims(r->model, o->n_layers - 1, &last_in, &last_out, err)))
        return rc;
    cfg.embed_dim = last_in;
    if ((rc = train_store_opts_apply(o, &cfg, err)))
        return rc;
    cfg.train_ids = r->data.split[TRAIN_SPLIT_TRAIN];
    cfg.n_train = r->data.n_split[TRAIN_SPLIT_TRAIN];
    cfg.batch_size = o->batch_size;
    /*
     * Pipeline depth: two batches ahead, or one when two would take more than
     * half of what the budget leaves for the store (one batch in flight
     * besides the trainer's costs no more than the trainer's own copy of the
     * input rows did before the pipeline).
     */
    r->depth = 2;
    train_ws_from_bound(&r->data, o, &r->ws);
    if (o->mem_budget) {
        if ((rc = run_probe(r, o, first_epoch, err)))
            return rc;
        uint64_t state = oc_nn_model_state_bytes(r->model);
        uint64_t held = oc_mem_used();
        /* a partitioned run has no pipeline: it holds its own batches of rows */
        uint64_t work =
            train_ws_bytes(&r->ws, &r->data, o, state,
                           part ? TRAIN_PART_ROW_BUFFERS : oc_store_strategy_row_buffers(index, 2));
        uint64_t work1 =
            train_ws_bytes(&r->ws, &r->data, o, state, oc_store_strategy_row_buffers(index, 1));
        if (!part && work1 < work &&
            (held + work >= o->mem_budget || o->mem_budget - held - work < work)) {
            r->depth = 1; /* only where one batch ahead holds less (not helios's two buffers) */
            work = work1;
        }
        if (held + work >= o->mem_budget) {
            char a[32], b[32], c[32];
            return OC_ERR(err, OC_ERR_BUDGET,
                          "--mem-budget %s is too small: topology, labels, model and a step's "
                          "activations hold %s and the batches in flight (%" PRIu64
                          " input rows each, measured), or evaluation, need about %s before "
                          "any feature store (smaller --batch, --eval-batch or --fanout need "
                          "less)",
                          oc_format_size(o->mem_budget, a, sizeof(a)),
                          oc_format_size(held, b, sizeof(b)), r->ws.batch_rows,
                          oc_format_size(work, c, sizeof(c)));
        }
        cfg.mem_bytes = o->mem_budget - held - work;
        r->held = held;
        r->work = work;
        if (r->ws.measured)
            cfg.batch_rows = train_ws_gather_rows(&r->ws, &r->data, o);
        char a[32], b[32], c[32];
        oc_log(OC_LOG_DEBUG, "memory budget: %s held at start, %s working set, %s for the store",
               oc_format_size(held, a, sizeof(a)), oc_format_size(work, b, sizeof(b)),
               oc_format_size(cfg.mem_bytes, c, sizeof(c)));
    }
    /* --remote-cache: other parts' rows, out of the store's share */
    if (part && (rc = train_part_cache_open(&r->part, o->mem_budget ? &cfg.mem_bytes : NULL, err)))
        return rc;
    if (train_auto_wanted(o))
        return run_open_auto(r, o, &cfg, err);
    if (!part && (rc = oc_pipeline_new("training pipeline", &r->stages, err)))
        return rc;
    cfg.pipeline = r->stages;
    /* the batch pipeline gathers at most depth batches at once; a partitioned run one */
    cfg.lanes = part ? 1 : r->depth;
    cfg.progress = r->progress;
    if ((rc = oc_store_open(index, &cfg, &r->store, err)))
        oc_err_prefix(err, "strategy %s", name);
    return rc;
}

static int run_setup(struct run *r, const char *dir, const struct oc_train_opts *o,
                     struct oc_err *err)
{
    int rc;
    struct oc_topo_disk_opts topo = {0};
    if (o->topology_disk) {
        topo.budget_bytes = o->topo_cache_bytes;
        topo.rank = (enum oc_topo_rank)o->topo_rank;
        /* default: up to half the budget (every list where indptr and the lists fit in it):
           a cached list saves a random read for 4-8 B an id, a cached row one for its
           whole width, and samplers over on-disk lists wait on random reads */
        if (!topo.budget_bytes)
            topo.budget_bytes = o->mem_budget ? o->mem_budget / 2 : UINT64_MAX;
    }
    /* a partitioned dataset: the rank's part (its rows are the store's, over rows.npy) */
    if ((rc = train_data_load_dim(r->part.on ? r->part.part.dir : dir,
                                  o->topology_disk ? &topo : NULL, train_strategy_name(o),
                                  r->part.on ? r->part.part.feat_dim : 0,
                                  o->model == OC_NN_MODEL_GCN, &r->data, err)) ||
        (r->part.on && (rc = train_part_graph(&r->part, &r->data, err))))
        return rc;
    char plan_dir[4096];
    if ((rc = run_plan_dir(o, dir, plan_dir, sizeof(plan_dir), err)) ||
        (rc = train_batching_open(&r->data, o, plan_dir, &r->batching, err)) ||
        (rc = train_redundancy_init(&r->redundancy, r->data.n_nodes, err)))
        return rc;
    unsigned n_threads = o->n_threads;
    if (n_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (unsigned)n : 1;
    }
    if ((rc = oc_pool_new(n_threads, &r->pool, err)))
        return rc;
    if ((rc = oc_nn_backend_new(OC_NN_BACKEND_CPU, r->pool, &r->be, err)))
        return rc;
    struct oc_nn_model_config cfg;
    oc_nn_model_config_default(o->model, &cfg);
    cfg.n_layers = o->n_layers;
    cfg.in_dim = r->data.feat_dim;
    cfg.hidden = o->hidden;
    cfg.n_classes = r->data.n_classes;
    cfg.heads = o->heads;
    cfg.dropout = o->dropout;
    if (o->input_dropout >= 0.0f)
        cfg.in_dropout = o->input_dropout;
    else if (o->model == OC_NN_MODEL_GAT) /* GAT's feat_drop also drops the input (DGL) */
        cfg.in_dropout = o->dropout;
    cfg.seed = o->seed;
    if ((rc = oc_nn_model_new(r->be, &cfg, &r->model, err)))
        return rc;
    return train_dp_init(&r->dp, o, oc_nn_model_n_weights(r->model), err);
}

/* The batch pipeline over the opened store (sampling options as the store's plan). */
static int run_open_pipe(struct run *r, const struct oc_train_opts *o, struct oc_err *err)
{
    struct oc_sample_opts so = {0};
    so.n_layers = o->n_layers;
    memcpy(so.fanouts, o->fanouts, sizeof(so.fanouts));
    so.seed = o->seed;
    so.parts = train_batching_parts(&r->batching);
    struct oc_batch_pipe_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.store = r->store;
    pc.graph = &r->data.graph;
    pc.sample = &so; /* copied */
    pc.pool = r->pool;
    pc.train_ids = r->data.split[TRAIN_SPLIT_TRAIN];
    pc.n_train = r->data.n_split[TRAIN_SPLIT_TRAIN];
    pc.batch_size = o->batch_size;
    pc.depth = r->depth;
    pc.reserve_rows = r->ws.measured ? r->ws.batch_rows : 0;
    pc.reuse_samples = o->reuse_samples;
    pc.pipeline = r->stages;
    return oc_batch_pipe_new(&pc, &r->pipe, err);
}

/*
 * The first non-finite value among n floats (its index), or n if all are finite. A bit
 * test the compiler vectorises: the input rows of a batch are scanned as they are used,
 * never the whole feature file at open.
 */
static uint64_t first_nonfinite(const float *x, uint64_t n)
{
    uint32_t any = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        any |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
    }
    if (!any)
        return n;
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return n;
}

/*
 * Forward, loss and backward of `batch` (index `index` of sample epoch
 * `epoch`) in training epoch e over its gathered input rows x; st (may be
 * NULL) gets the forward and backward times.
 */
static int step_grads(struct run *r, uint64_t e, uint64_t index,
                      const struct oc_sample_batch *batch, float *x,
                      const struct oc_store_hist *hist, struct oc_nn_loss *loss,
                      struct oc_train_epoch_stats *st, struct oc_err *err)
{
    int rc;
    double t2 = oc_now_s();
    struct oc_nn_tensor xt;
    /* Non-finite input features train to chance accuracy without a word (import refuses
       them; a dataset written another way can hold them): stop as for a NaN loss. */
    uint64_t n_x = batch->n_input * (uint64_t)r->data.feat_dim, bad = first_nonfinite(x, n_x);
    if (bad < n_x)
        return OC_ERR(err, OC_ERR_NUMERIC,
                      "the input features of node %" PRIu64 " hold %f (column %" PRIu64
                      "): non-finite features cannot be trained on (import refuses them unless "
                      "--allow-nonfinite; this dataset holds them)",
                      batch->input_ids[bad / r->data.feat_dim], (double)x[bad],
                      bad % r->data.feat_dim);
    if ((rc = oc_nn_tensor_wrap(r->be, OC_NN_F32, x, batch->n_input, r->data.feat_dim, &xt, err)))
        return rc;
    /* GCN normalizes by whole-graph degrees: loaded for it (run_setup), else in-block counts */
    OC_ASSERT(r->data.out_deg || oc_nn_model_config(r->model)->kind != OC_NN_MODEL_GCN);
    if ((rc = train_src_degrees(batch, r->data.out_deg, &r->degrees, err)))
        return rc;
    struct oc_nn_block blocks[OC_SAMPLE_MAX_LAYERS];
    train_blocks_from_batch(batch, r->degrees.deg, blocks);
    const struct oc_nn_tensor *logits;
    struct oc_nn_step step = {1, e, index};
    /* outre: cached embeddings in place of the pruned rows, fresh ones handed back */
    struct oc_nn_hist nh = {hist ? hist->n_pruned : 0, hist ? hist->pruned_pos : NULL,
                            hist ? hist->pruned_rows : NULL};
    if ((rc = oc_nn_model_forward_hist(r->model, blocks, &xt, &step, &nh, &logits, err)))
        return rc;
    if (hist && hist->n_push &&
        (rc = oc_nn_model_last_input_rows(r->model, hist->push_pos, hist->n_push, hist->push_rows,
                                          err)))
        return rc;
    if ((rc = train_labels_of(&r->labels, r->data.labels, batch->input_ids, batch->n_seeds, err)))
        return rc;
    if ((rc = oc_nn_model_loss(r->model, r->labels.labels, loss, err)))
        return rc;
    /* A NaN or Inf loss would poison every weight through Adam: stop here. */
    if (!isfinite(loss->loss))
        return OC_ERR(err, OC_ERR_NUMERIC,
                      "the loss is %f: training diverged (try a smaller --lr; imported "
                      "features are checked to be finite unless --allow-nonfinite was given)",
                      (double)loss->loss);
    double t3 = oc_now_s();
    if ((rc = oc_nn_model_backward(r->model, err)))
        return rc;
    if (hist && hist->n_push &&
        (rc = oc_nn_model_last_input_grad_norms(r->model, hist->push_pos, hist->n_push,
                                                hist->push_grad, err)))
        return rc;
    if (st) {
        st->forward_s += t3 - t2;
        st->backward_s += oc_now_s() - t3;
    }
    return OC_OK;
}

/*
 * The training plan's sampler and epoch e shuffled, for sampling batches
 * outside the batch pipeline exactly as it would (run_probe,
 * run_time_steps); probe_plan_close frees what probe_plan_open made, also
 * after a failed open.
 */
struct probe_plan {
    struct oc_sampler *sampler;
    struct oc_sample_epoch ep;
    uint64_t e;
};

static int probe_plan_open(struct run *r, const struct oc_train_opts *o, uint64_t e,
                           struct probe_plan *pp, struct oc_err *err)
{
    struct oc_sample_opts so = {0}; /* copied by the sampler; the epoch keeps only parts */
    so.n_layers = o->n_layers;
    memcpy(so.fanouts, o->fanouts, sizeof(so.fanouts));
    so.seed = o->seed;
    so.parts = train_batching_parts(&r->batching);
    memset(pp, 0, sizeof(*pp));
    pp->e = e;
    int rc;
    if ((rc = oc_sample_sampler_new(&r->data.graph, &so, r->pool, &pp->sampler, err)) ||
        (rc = oc_sample_epoch_init_plan(&pp->ep, r->data.split[TRAIN_SPLIT_TRAIN],
                                        r->data.n_split[TRAIN_SPLIT_TRAIN], o->batch_size, 0, &so,
                                        err)))
        return rc;
    oc_sample_epoch_shuffle(&pp->ep, o->seed, e);
    return OC_OK;
}

/* Batch b of the plan's epoch, sampled into out. */
static int probe_plan_batch(struct probe_plan *pp, uint64_t b, struct oc_sample_batch *out,
                            struct oc_err *err)
{
    const uint64_t *seeds;
    uint64_t n_seeds;
    int rc = oc_sample_epoch_batch(&pp->ep, b, &seeds, &n_seeds, err);
    return rc ? rc : oc_sample_neighbors(pp->sampler, pp->e, b, seeds, n_seeds, out, err);
}

static void probe_plan_close(struct probe_plan *pp)
{
    if (pp->ep.orig)
        oc_sample_epoch_deinit(&pp->ep);
    oc_sample_sampler_free(pp->sampler);
}

/*
 * Under a budget, measures what a batch in flight takes before anything is
 * sized from it: samples the first full batches of the first epoch exactly
 * as the pipeline will (the same keys: nothing changes for training), and
 * runs forward and backward on the largest with zero input rows, which grows
 * the model's workspace, degrees and labels to what that batch needs (they
 * stay: the steps reuse them). Its gradients are overwritten by the first
 * real backward and no optimizer step is taken, so the weights are as
 * without the probe.
 */
static int run_probe(struct run *r, const struct oc_train_opts *o, uint32_t first_epoch,
                     struct oc_err *err)
{
    uint64_t n_train = r->data.n_split[TRAIN_SPLIT_TRAIN];
    uint64_t n_full = n_train / o->batch_size,
             n_probe = n_full < WS_PROBE_BATCHES ? n_full : WS_PROBE_BATCHES;
    if (n_probe == 0)
        n_probe = 1; /* one short batch: the whole split */
    uint64_t e = o->reuse_samples ? 0 : first_epoch;
    struct probe_plan pp;
    struct oc_sample_batch cur, big;
    oc_sample_batch_init(&cur);
    oc_sample_batch_init(&big);
    float *x = NULL;
    uint64_t big_index = 0;
    double t0 = oc_now_s();
    int rc;
    if ((rc = probe_plan_open(r, o, e, &pp, err)))
        goto out;
    for (uint64_t b = 0; b < n_probe; b++) {
        if ((rc = probe_plan_batch(&pp, b, &cur, err)))
            goto out;
        if (b == 0 || cur.n_input > big.n_input) {
            struct oc_sample_batch t = big;
            big = cur;
            cur = t;
            big_index = b;
        }
    }
    uint64_t used0 = oc_mem_used();
    x = oc_calloc(big.n_input * r->data.feat_dim, sizeof(float), "start-up probe rows", err);
    if (!x) {
        rc = err->status;
        goto out;
    }
    struct oc_nn_loss loss;
    if ((rc = step_grads(r, e, big_index, &big, x, NULL, &loss, NULL, err)))
        goto out;
    oc_free(x); /* what stays held after it is the step's */
    x = NULL;
    uint64_t grown = oc_mem_used() - used0;
    train_ws_from_probe(&r->data, o, big.n_input, big.n_seeds, grown, &r->ws);
    /* micro-shards: room for the largest shard (at most the batch) cut out of it, held */
    if (r->dp.on && r->dp.m > 1 &&
        (rc = train_shard_reserve(&r->dp.shard, &big, r->data.feat_dim, 1.0 + WS_MARGIN_PCT / 100.0,
                                  err)))
        goto out;
    char g[32];
    oc_log(OC_LOG_INFO,
           "memory budget: probed %" PRIu64 " batches in %.2fs: the largest has %" PRIu64
           " input rows, its step holds %s; %" PRIu64 " rows reserved per batch in flight",
           n_probe, oc_now_s() - t0, big.n_input, oc_format_size(grown, g, sizeof(g)),
           r->ws.batch_rows);
out:
    if (rc)
        oc_err_prefix(err, "measuring a batch before sizing the budget");
    oc_free(x);
    oc_sample_batch_deinit(&cur);
    oc_sample_batch_deinit(&big);
    probe_plan_close(&pp);
    return rc;
}

/*
 * --strategy auto's compute rate: forward and backward on the first
 * AUTO_STEP_BATCHES batches of the first epoch over zero input rows (the
 * kernels take as long whatever the values), the first untimed (it grows
 * the workspace). As run_probe, no optimizer step: the weights stay as
 * they are. *step_s = mean seconds of the timed steps.
 */
static int run_time_steps(struct run *r, const struct oc_train_opts *o, uint32_t first_epoch,
                          double *step_s, struct oc_err *err)
{
    uint64_t n_train = r->data.n_split[TRAIN_SPLIT_TRAIN];
    uint64_t nb = (n_train + o->batch_size - 1) / o->batch_size;
    uint64_t n_steps = nb < AUTO_STEP_BATCHES ? nb : AUTO_STEP_BATCHES;
    struct probe_plan pp;
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    float *x = NULL;
    uint64_t cap = 0, timed = 0;
    double sum = 0;
    int rc;
    *step_s = 0;
    if ((rc = probe_plan_open(r, o, first_epoch, &pp, err)))
        goto out;
    for (uint64_t i = 0; i < n_steps; i++) {
        if ((rc = probe_plan_batch(&pp, i, &b, err)))
            goto out;
        if (b.n_input > cap) {
            oc_free(x);
            cap = b.n_input;
            if (!(x = oc_calloc(cap * r->data.feat_dim, sizeof(float), "auto: step rows", err))) {
                rc = err->status;
                goto out;
            }
        } else {
            memset(x, 0, b.n_input * r->data.feat_dim * sizeof(float));
        }
        struct oc_nn_loss loss;
        double t0 = oc_now_s();
        if ((rc = step_grads(r, first_epoch, i, &b, x, NULL, &loss, NULL, err)))
            goto out;
        if (i > 0 || n_steps == 1) {
            sum += oc_now_s() - t0;
            timed++;
        }
    }
    *step_s = timed ? sum / (double)timed : 0;
out:
    if (rc)
        oc_err_prefix(err, "--strategy auto: timing training steps");
    oc_free(x);
    oc_sample_batch_deinit(&b);
    probe_plan_close(&pp);
    return rc;
}

/*
 * One training step on batch pb (batch pb->index of sample epoch pb->epoch:
 * e, or 0 with --reuse-samples) in training epoch e; adds to the epoch's sums
 * and timers.
 */
static int train_step(struct run *r, uint64_t e, const struct oc_pipe_batch *pb,
                      struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                      uint64_t *correct, const struct oc_nn_adam *adam, struct oc_err *err)
{
    const struct oc_sample_batch *batch = &pb->batch;
    int rc;
    st->sampled_edges += oc_sample_batch_n_edges(batch);
    train_redundancy_add(&r->redundancy, batch, st);
    struct oc_nn_loss loss;
    /* the store's historical embeddings came with the batch; oc_batch_pipe_done ends them */
    if ((rc = step_grads(r, e, pb->index, batch, pb->x, &pb->hist, &loss, st, err)))
        return rc;
    double t4 = oc_now_s();
    if ((rc = oc_nn_model_adam_step(r->model, adam, err)))
        return rc;
    st->optimizer_s += oc_now_s() - t4;
    *loss_sum += loss.loss * (double)loss.n_counted;
    *counted += loss.n_counted;
    *correct += loss.n_correct;
    return OC_OK;
}

/*
 * train_step with micro-shards: this rank's shards of batch pb, each its own
 * forward and backward (dropout stream index x m + s) with its gradients
 * scaled by its share of the batch's labelled seeds, so that their sum is
 * the gradient of the batch's mean loss; the ranks' packets exchanged and
 * summed in the fixed tree order; then the one Adam step every rank takes.
 */
static int train_step_sharded(struct run *r, uint64_t e, const struct oc_pipe_batch *pb,
                              struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                              uint64_t *correct, const struct oc_nn_adam *adam, struct oc_err *err)
{
    struct train_dp *dp = &r->dp;
    const struct oc_sample_batch *batch = &pb->batch;
    int rc;
    st->sampled_edges += oc_sample_batch_n_edges(batch);
    train_redundancy_add(&r->redundancy, batch, st);
    if (pb->hist.n_pruned || pb->hist.n_push)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "micro-shards: the strategy's historical embeddings are per whole batch");
    uint64_t c_total = 0; /* the batch's labelled seeds: its mean loss divides by them */
    for (uint64_t k = 0; k < batch->n_seeds; k++)
        c_total += r->data.labels[batch->input_ids[k]] >= 0;
    for (uint32_t s = dp->first; s < dp->last; s++) {
        float *pkt = train_dp_packet(dp, s);
        uint64_t lo, hi;
        train_shard_range(batch->n_seeds, dp->m, s, &lo, &hi);
        struct oc_nn_loss loss = {0, 0, 0};
        if (hi == lo) {
            memset(pkt, 0, dp->n_weights * sizeof(float));
        } else {
            const struct oc_sample_batch *sb = batch;
            float *x = pb->x;
            if (dp->m > 1) {
                if ((rc = train_shard_cut(&dp->shard, batch, pb->x,
                                          r->part.on ? r->part.step_slot : NULL, r->data.feat_dim,
                                          lo, hi, err)))
                    return rc;
                sb = &dp->shard.b;
                x = dp->shard.x;
            }
            if ((rc = step_grads(r, e, pb->index * dp->m + s, sb, x, NULL, &loss, st, err)) ||
                (rc = oc_nn_model_grads_get(r->model, pkt, err)))
                return oc_err_prefix(err, "micro-shard %u", s);
            double scale = c_total ? (double)loss.n_counted / (double)c_total : 0.0;
            if (scale != 1.0)
                for (uint64_t k = 0; k < dp->n_weights; k++)
                    pkt[k] = (float)((double)pkt[k] * scale);
        }
        double stats[TRAIN_DP_STATS] = {loss.loss * (double)loss.n_counted, (double)loss.n_counted,
                                        (double)loss.n_correct};
        memcpy(pkt + dp->n_weights, stats, sizeof(stats));
    }
    double t0 = oc_now_s(), stats[TRAIN_DP_STATS];
    if ((rc = train_dp_exchange(dp, stats, &st->grad_sent_bytes, &st->grad_recv_bytes, err)))
        return rc;
    st->exchange_s += oc_now_s() - t0;
    double t4 = oc_now_s();
    if ((rc = oc_nn_model_grads_set(r->model, dp->recv, err)) ||
        (rc = oc_nn_model_adam_step(r->model, adam, err)))
        return rc;
    st->optimizer_s += oc_now_s() - t4;
    *loss_sum += stats[0];
    *counted += (uint64_t)stats[1];
    *correct += (uint64_t)stats[2];
    return OC_OK;
}

/* Samples batch i of a partitioned run's epoch into pb and starts filling its rows. */
static int part_batch_start(struct run *r, struct probe_plan *pp, uint32_t e, uint64_t i,
                            struct oc_pipe_batch *pb, struct oc_train_epoch_stats *st,
                            struct oc_err *err)
{
    double t0 = oc_now_s();
    int rc = probe_plan_batch(pp, i, &pb->batch, err);
    if (rc)
        return rc;
    double t1 = oc_now_s();
    st->sample_s += t1 - t0;
    uint64_t lo, hi, ignored;
    train_shard_range(pb->batch.n_seeds, r->dp.m, r->dp.first, &lo, &ignored);
    train_shard_range(pb->batch.n_seeds, r->dp.m, r->dp.last - 1, &ignored, &hi);
    pb->epoch = e;
    pb->index = pb->pos = i;
    rc = train_part_fill_start(&r->part, r->store, e, i, &pb->batch, lo, hi, r->data.feat_dim, st,
                               err);
    st->gather_s += oc_now_s() - t1;
    return rc;
}

/*
 * Waits for the rows of the batch part_batch_start started: pb->x and its
 * slots. after_step: a step ran while they were in flight; then whether
 * they had arrived by its end (remote_hidden) and the wait that was left
 * (remote_wait_s) are counted.
 */
static int part_batch_finish(struct run *r, struct oc_pipe_batch *pb, const uint32_t **slot,
                             int after_step, struct oc_train_epoch_stats *st, struct oc_err *err)
{
    int done = 0, rc;
    if (after_step && (rc = oc_dist_alltoallv_test(&done, err)))
        return rc;
    st->remote_hidden += (uint64_t)done;
    double t0 = oc_now_s();
    rc = train_part_fill_finish(&r->part, &pb->x, slot, err);
    double waited = oc_now_s() - t0;
    st->gather_s += waited;
    if (after_step)
        st->remote_wait_s += waited;
    return rc;
}

/*
 * Batch pb's step (train_step_sharded), the next batch's rows possibly in
 * flight meanwhile: whether they are is dist.h's state when the step
 * begins (an MPI request outstanding), counted with the step's seconds
 * (remote_overlapped, remote_overlap_s). *overlapped: whether they were.
 */
static int part_step(struct run *r, uint32_t e, const struct oc_pipe_batch *pb,
                     struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                     uint64_t *correct, const struct oc_nn_adam *adam, int *overlapped,
                     struct oc_err *err)
{
    *overlapped = oc_dist_alltoallv_in_flight();
    double t0 = oc_now_s();
    int rc = train_step_sharded(r, e, pb, st, loss_sum, counted, correct, adam, err);
    if (*overlapped) {
        st->remote_overlapped++;
        st->remote_overlap_s += oc_now_s() - t0;
    }
    return rc;
}

/*
 * A partitioned run's training batches of epoch e (dist_rows.c): each sampled
 * here on the trainer's thread exactly as the batch pipeline samples it
 * (probe_plan), the input rows of this rank's micro-shards filled (its own
 * rows, and the others' in one exchange), then the sharded step. The fill
 * runs one batch ahead: batch i + 1 is sampled, its rows gathered and their
 * exchange started before batch i's step, and waited for after it, so the
 * rows travel while the step computes (the step and its gradient exchange
 * are unchanged: same sums, same order). The sampling and the fill are
 * timed as sample_s and gather_s; the overlap as it ran is counted
 * (part_step, part_batch_finish: remote_overlapped, remote_hidden,
 * remote_overlap_s, remote_wait_s).
 */
static int part_train_epoch(struct run *r, const struct oc_train_opts *o, uint32_t e,
                            struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                            uint64_t *correct, const struct oc_nn_adam *adam,
                            struct oc_progress *progress, struct oc_err *err)
{
    struct probe_plan pp;
    struct oc_pipe_batch pb[2]; /* the batch training, and the next, whose rows are coming */
    memset(pb, 0, sizeof(pb));
    oc_sample_batch_init(&pb[0].batch);
    oc_sample_batch_init(&pb[1].batch);
    struct train_part_cache *cache = &r->part.cache;
    st->remote_cache_rows = cache->n;
    st->remote_fill_bytes = cache->fill_bytes; /* the fill before the run's first epoch */
    cache->fill_bytes = 0;
    const uint32_t *slot = NULL, *next_slot = NULL;
    int rc = probe_plan_open(r, o, e, &pp, err);
    uint64_t n = rc ? 0 : oc_sample_epoch_n_batches(&pp.ep);
    if (n && (rc = part_batch_start(r, &pp, e, 0, &pb[0], st, err)) == OC_OK)
        rc = part_batch_finish(r, &pb[0], &slot, 0, st, err);
    for (uint64_t i = 0; rc == OC_OK && i < n; i++) {
        struct oc_pipe_batch *cur = &pb[i % 2], *next = &pb[(i + 1) % 2];
        int overlapped = 0;
        if (i + 1 < n && (rc = part_batch_start(r, &pp, e, i + 1, next, st, err)))
            break;
        r->part.step_slot = slot;
        if ((rc = part_step(r, e, cur, st, loss_sum, counted, correct, adam, &overlapped, err)))
            break;
        if (i + 1 < n && (rc = part_batch_finish(r, next, &next_slot, overlapped, st, err)))
            break;
        slot = next_slot;
        oc_progress_add(progress, 1);
    }
    r->part.step_slot = NULL;
    if (rc)
        oc_err_prefix(err, "epoch %u", e);
    oc_sample_batch_deinit(&pb[0].batch);
    oc_sample_batch_deinit(&pb[1].batch);
    probe_plan_close(&pp);
    return rc;
}

/* The batches of a partitioned run's epochs (the sample plan's count). */
static int part_n_batches(struct run *r, const struct oc_train_opts *o, uint32_t e, uint64_t *n,
                          struct oc_err *err)
{
    struct probe_plan pp;
    int rc = probe_plan_open(r, o, e, &pp, err);
    *n = rc ? 0 : oc_sample_epoch_n_batches(&pp.ep);
    probe_plan_close(&pp);
    return rc;
}

/*
 * A partitioned run's epoch counts, summed over the ranks (a collective): the
 * rows exchanged, and what the ranks' stores were asked and read (their
 * held bytes too: the features held over all ranks).
 */
static int part_epoch_sums(struct oc_train_epoch_stats *st, struct oc_err *err)
{
    struct oc_store_stats *f = &st->store;
    uint64_t *const fields[] = {&st->local_rows,
                                &st->remote_rows,
                                &st->remote_bytes,
                                &st->served_rows,
                                &st->remote_cache_hits,
                                &st->remote_cache_rows,
                                &st->remote_fill_bytes,
                                &st->remote_overlapped,
                                &st->remote_hidden,
                                &f->requested_rows,
                                &f->requested_bytes,
                                &f->requested_disk_bytes,
                                &f->read_bytes,
                                &f->n_reads,
                                &f->held_bytes,
                                &f->given_back_bytes,
                                &f->graph_read_bytes, /* diskgnn's chunks' metadata */
                                &f->tier_rows[OC_STORE_TIER_GPU],
                                &f->tier_rows[OC_STORE_TIER_CPU],
                                &f->tier_rows[OC_STORE_TIER_DISK_CACHE],
                                &f->tier_rows[OC_STORE_TIER_PACKED],
                                &f->tier_rows[OC_STORE_TIER_DISK],
                                &f->trace_accesses,
                                &f->belady_misses,
                                &f->lru_misses,
                                &f->static_misses};
    enum { N = sizeof(fields) / sizeof(fields[0]) };
    _Static_assert(OC_STORE_TIER_COUNT == 5, "part_epoch_sums: every tier summed");
    uint64_t v[N];
    for (int k = 0; k < N; k++)
        v[k] = *fields[k];
    int rc = oc_dist_sum_u64(v, N, err);
    for (int k = 0; rc == OC_OK && k < N; k++)
        *fields[k] = v[k];
    st->partitioned = 1;
    return rc;
}

/*
 * A partitioned run's training epoch e (part_train_epoch) and its figures:
 * what the store served this epoch, then every count summed over the
 * ranks (a collective).
 */
static int part_epoch(struct run *r, const struct oc_train_opts *o, uint32_t e,
                      struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                      uint64_t *correct, const struct oc_nn_adam *adam,
                      struct oc_progress *progress, struct oc_err *err)
{
    struct oc_store_stats before, after;
    oc_store_stats(r->store, &before);
    int rc = part_train_epoch(r, o, e, st, loss_sum, counted, correct, adam, progress, err);
    if (rc)
        return rc;
    oc_store_stats(r->store, &after);
    oc_store_stats_sub(&after, &before, &st->store);
    rc = part_epoch_sums(st, err);
    oc_progress_clear(progress); /* the epoch's line (on_epoch) is its summary */
    return rc;
}

/*
 * Training epoch e through the batch pipeline and its figures: the store's,
 * the pipeline's stage times and the topology reads since r's marks (which
 * move). The run's first epoch (first) is started here; each epoch then
 * starts the next one's sampling (its features wait for the next open)
 * while the caller evaluates.
 */
static int pipe_epoch(struct run *r, const struct oc_train_opts *o, uint32_t e, int first,
                      struct oc_train_epoch_stats *st, double *loss_sum, uint64_t *counted,
                      uint64_t *correct, const struct oc_nn_adam *adam,
                      struct oc_progress *progress, struct oc_err *err)
{
    struct oc_store_stats before, after;
    struct oc_batch_pipe_stats pipe0, pipe1;
    int rc;
    oc_store_stats(r->store, &before);
    if (first) {
        oc_batch_pipe_stats(r->pipe, &r->pipe_mark);
        /* the training epoch: with --reuse-samples the pipeline trains on epoch 0's
           batches in the order oc_sample_batch_order(seed, e) */
        if ((rc = oc_batch_pipe_epoch(r->pipe, e, err)))
            return rc;
    }
    pipe0 = r->pipe_mark;
    if ((rc = oc_batch_pipe_open(r->pipe, err)))
        return rc;
    for (uint64_t i = 0; i < st->n_batches; i++) {
        struct oc_pipe_batch *pb; /* plan order, or completion order with --reorder */
        if ((rc = oc_batch_pipe_next(r->pipe, &pb, err)))
            return rc;
        rc = r->dp.on ? train_step_sharded(r, e, pb, st, loss_sum, counted, correct, adam, err)
                      : train_step(r, e, pb, st, loss_sum, counted, correct, adam, err);
        if (rc) {
            oc_err_prefix(err, "epoch %u batch %" PRIu64, e, pb->index);
            oc_batch_pipe_done(r->pipe, pb);
            return rc;
        }
        oc_batch_pipe_done(r->pipe, pb);
        oc_progress_add(progress, 1);
    }
    oc_progress_clear(progress); /* the epoch's line (on_epoch) is its summary */
    oc_store_stats(r->store, &after);
    oc_store_stats_sub(&after, &before, &st->store);
    oc_batch_pipe_stats(r->pipe, &pipe1);
    r->pipe_mark = pipe1;
    /* sample the next epoch ahead (its features wait for the open) while evaluating */
    if (e + 1 < o->epochs && (rc = oc_batch_pipe_epoch(r->pipe, e + 1, err)))
        return rc;
    st->depth = r->depth;
    st->lanes = pipe1.lanes;
    st->samplers = pipe1.samplers;
    st->n_sampled = pipe1.n_sampled - pipe0.n_sampled + st->store.sampled_batches;
    st->sample_s = pipe1.sample_busy_s - pipe0.sample_busy_s;
    st->gather_s = pipe1.fetch_busy_s - pipe0.fetch_busy_s;
    st->wait_s = pipe1.wait_s - pipe0.wait_s;
    /* the topology reads: the pipeline's sampler's this epoch, the store's samplers' since
       the last epoch (pipe0 is a copy of the mark: moving it is harmless) */
    oc_sample_topo_stats_add_since(&st->topo, &pipe1.topo, &pipe0.topo);
    oc_sample_topo_stats_add_since(&st->topo, &after.topo, &r->store_topo_mark);
    return OC_OK;
}

/*
 * A resumed run ends with the weights of an uninterrupted one only if the
 * checkpoint holds all that training carries across epochs: a strategy option
 * marked outside_checkpoint (outre's --staleness: its historical embeddings)
 * that is nonzero keeps state the checkpoint lacks, so such a run is not
 * resumed past its first epoch.
 */
static int resume_keeps_weights(const struct oc_train_opts *o, const struct oc_train_position *pos,
                                struct oc_err *err)
{
    double v;
    const struct oc_store_opt *opt = train_state_outside_checkpoint(o, &v);
    if (pos->next_epoch == 0 || !opt)
        return OC_OK;
    return OC_ERR(err, OC_ERR_UNSUPPORTED,
                  "--resume: %s's %s (--%s %g) are not in the checkpoint, so the resumed "
                  "run would not end with the weights of an uninterrupted one; train "
                  "again without --resume (or with --%s 0)",
                  o->strategy, opt->outside_checkpoint, opt->name, v, opt->name);
}

int oc_train_run(const char *dir, const struct oc_train_opts *o, oc_train_epoch_fn on_epoch,
                 void *ctx, struct oc_progress *progress, struct oc_train_result *res,
                 struct oc_err *err)
{
    memset(res, 0, sizeof(*res));
    int rc = oc_train_opts_check(o, err);
    if (rc)
        return rc;
    struct run r;
    memset(&r, 0, sizeof(r));
    r.progress = progress;
    if (o->remote_cache_bytes && !oc_plan_part_set_is(dir)) {
        rc = OC_ERR(err, OC_ERR_ARG,
                    "--remote-cache: %s is not a partitioned dataset (offcore partition); only "
                    "ranks that fetch rows from other ranks cache them",
                    dir);
        goto out;
    }
    if (oc_plan_part_set_is(dir) && (rc = train_part_open(&r.part, dir, o, err)))
        goto out;
    if ((rc = run_setup(&r, dir, o, err)) || (rc = train_metric_check(&r.data, o, dir, err)))
        goto out;
    char fingerprint[1024];
    train_opts_fingerprint(o, oc_dataset_manifest(r.data.ds), fingerprint, sizeof(fingerprint));
    struct oc_train_position pos = {0, 0, -1.0, 0.0, 0};
    if (o->resume) {
        if ((rc = oc_train_checkpoint_load(o->checkpoint_dir, fingerprint, r.model, &pos, err)))
            goto out;
        if ((rc = resume_keeps_weights(o, &pos, err)))
            goto out;
        oc_log(OC_LOG_INFO, "resuming from %s after epoch %u", o->checkpoint_dir, pos.next_epoch);
    }
    char scratch[4096];
    if (o->scratch_dir)
        snprintf(scratch, sizeof(scratch), "%s", o->scratch_dir);
    else if ((rc = run_plan_dir(o, dir, scratch, sizeof(scratch), err)))
        goto out;
    /* a partitioned run: the store serves the rank's own rows (dist_rows.c), no pipeline */
    if ((rc = run_open_store(&r, o, dir, pos.next_epoch, err)))
        goto out;
    struct oc_train_opts picked; /* --strategy auto: the run goes on as the pick's */
    if (r.autosel.on) {
        picked = *o;
        picked.strategy = r.autosel.pred[r.autosel.pick].strategy;
        picked.reuse_samples = r.autosel.pred[r.autosel.pick].reuse_samples;
        o = &picked;
        res->predicted_epoch_s = r.autosel.pred[r.autosel.pick].epoch_s;
        res->reuse_samples = o->reuse_samples;
    }
    snprintf(res->strategy, sizeof(res->strategy), "%s", oc_store_strategy_name(r.strategy));
    /* every rank evaluates its share (eval.c) and gets the whole result; ranks other than 0
       neither log nor checkpoint: rank 0 does for all */
    const int lead = oc_dist_rank() == 0 || !o->distributed;
    if ((!r.part.on && (rc = run_open_pipe(&r, o, err))) ||
        (o->eval != OC_TRAIN_EVAL_NONE &&
         (rc = train_eval_new(&r.data, r.store, r.model, r.be, r.pool, o, scratch, &r.eval, err))))
        goto out;
    if (r.eval && r.part.on) /* rows from their owners, every rank in each fetch */
        train_eval_set_part(r.eval, &r.part);
    res->held_bytes = r.held;
    res->working_set_bytes = r.work;
    /* --remote-cache's rows come out of the store's share (train_part_cache_open) */
    res->remote_cache_bytes = o->mem_budget ? r.part.cache.rows_bytes : 0;
    res->store_bytes =
        o->mem_budget ? o->mem_budget - r.held - r.work - res->remote_cache_bytes : 0;
    res->depth = r.depth;
    if (o->dry_run)
        goto out; /* everything opened: the options and the budget hold */
    /* --remote-cache: filled from the owners, in rounds no larger than a batch's rows */
    if (r.part.on &&
        (rc = train_part_cache_fill(
             &r.part, r.store,
             r.ws.batch_rows / r.part.part.n_parts ? r.ws.batch_rows / r.part.part.n_parts : 1,
             err)))
        goto out;
    if (o->log_path && lead &&
        (rc = oc_train_log_open(o->log_path, o->resume ? pos.log_bytes : 0, r.strategy, &r.log,
                                err)))
        goto out;
    if (r.log)
        train_log_set_plan(r.log, o->mem_budget, res);
    if (r.log && r.autosel.on && (rc = train_auto_log(r.log, &r.autosel, &pos.log_bytes, err)))
        goto out;
    struct oc_nn_adam adam;
    oc_nn_adam_default(&adam, o->lr, o->weight_decay);
    uint64_t n_batches = 0;
    if (r.part.on && (rc = part_n_batches(&r, o, pos.next_epoch, &n_batches, err)))
        goto out;
    if (!r.part.on)
        n_batches = oc_batch_pipe_n_batches(r.pipe);
    const uint32_t first_epoch = pos.next_epoch;
    for (uint32_t e = first_epoch; e < o->epochs; e++) {
        struct oc_train_epoch_stats st;
        memset(&st, 0, sizeof(st));
        st.epoch = e;
        st.strategy = r.strategy;
        st.n_batches = n_batches;
        st.ranks = r.dp.on ? r.dp.n_ranks : 1;
        st.micro_shards = r.dp.on ? r.dp.m : 1;
        train_redundancy_epoch(&r.redundancy);
        double t0 = oc_now_s();
        char label[32];
        snprintf(label, sizeof(label), "train: epoch %u", e);
        oc_progress_phase(progress, label, n_batches, "batches");
        double loss_sum = 0;
        uint64_t counted = 0, correct = 0;
        uint64_t flops0, flops1;
        double gemm0, gemm1;
        oc_nn_backend_gemm_stats(r.be, &flops0, &gemm0);
        rc = r.part.on
                 ? part_epoch(&r, o, e, &st, &loss_sum, &counted, &correct, &adam, progress, err)
                 : pipe_epoch(&r, o, e, e == first_epoch, &st, &loss_sum, &counted, &correct, &adam,
                              progress, err);
        if (rc)
            goto out;
        oc_nn_backend_gemm_stats(r.be, &flops1, &gemm1);
        st.gemm_flops = flops1 - flops0;
        st.gemm_s = gemm1 - gemm0;
        uint32_t every = o->eval_every > 1 ? o->eval_every : 1;
        st.evaluated =
            o->eval != OC_TRAIN_EVAL_NONE && ((e + 1) % every == 0 || e + 1 == o->epochs);
        double acc[TRAIN_SPLIT_COUNT] = {0}, metric[TRAIN_SPLIT_COUNT] = {0};
        if (st.evaluated) {
            double te = oc_now_s();
            /* evaluation gathers into a row buffer of the pipeline, idle until the next open */
            float *rows = r.eval_rows; /* a partitioned run's own buffer (no pipeline) */
            uint64_t cap_rows = r.cap_eval_rows;
            if (r.pipe && (rc = oc_batch_pipe_lend_rows(r.pipe, &rows, &cap_rows, err)))
                goto out;
            rc = train_eval_run(r.eval, e, &rows, &cap_rows, acc, metric, err);
            if (r.pipe) {
                oc_batch_pipe_return_rows(r.pipe, rows, cap_rows);
            } else {
                r.eval_rows = rows;
                r.cap_eval_rows = cap_rows;
            }
            if (rc) {
                oc_err_prefix(err, "epoch %u evaluation", e);
                goto out;
            }
            st.eval_s = oc_now_s() - te;
            train_eval_units(r.eval, &st.eval_units_own, &st.eval_units);
        }
        st.loss = counted ? loss_sum / (double)counted : 0.0;
        st.train_acc = counted ? (double)correct / (double)counted : 0.0;
        st.val_acc = acc[TRAIN_SPLIT_VAL];
        st.test_acc = acc[TRAIN_SPLIT_TEST];
        st.val_metric = metric[TRAIN_SPLIT_VAL];
        st.test_metric = metric[TRAIN_SPLIT_TEST];
        st.time_s = oc_now_s() - t0;
        st.peak_mem_bytes = oc_mem_peak();
        st.peak_rss_bytes = train_peak_rss_bytes();
        /* Ties go to the later epoch, as DGL's EarlyStopping keeps the last best model; the
           position holds --metric's values (its fingerprint names a metric other than acc) */
        if (st.evaluated && st.val_metric >= pos.best_val_acc) {
            pos.best_val_acc = st.val_metric;
            pos.best_epoch = e;
            pos.test_acc_at_best_val = st.test_metric;
        }
        pos.next_epoch = e + 1;
        res->epochs_run++;
        r.autosel.measured_sum_s += st.time_s - st.eval_s;
        r.autosel.measured_epochs++;
        if (r.autosel.on)
            res->measured_epoch_s = r.autosel.measured_sum_s / r.autosel.measured_epochs;
        res->final_loss = st.loss;
        if (on_epoch && lead)
            on_epoch(ctx, &st);
        if (r.log && (rc = train_log_epoch(r.log, &st, o->metric, &pos.log_bytes, err)))
            goto out;
        if (o->checkpoint_dir && lead &&
            (rc = oc_train_checkpoint_save(o->checkpoint_dir, fingerprint, r.model, &pos, err)))
            goto out;
    }
    res->evaluated = pos.best_val_acc >= 0;
    res->best_epoch = pos.best_epoch;
    res->best_val_acc = pos.best_val_acc < 0 ? 0.0 : pos.best_val_acc;
    res->test_acc_at_best_val = pos.test_acc_at_best_val;
    uint8_t digest[32];
    if ((rc = oc_nn_model_params_sha256(r.model, digest, err)))
        goto out;
    oc_nn_sha256_hex(digest, res->weights_sha256);
    if (r.log)
        rc = train_log_final(r.log, res, o, err);
out:
    run_deinit(&r);
    return rc;
}
