/*
 * cmd_train.c — `offcore train DIR`: mini-batch GNN training with DGL-style
 * options and per-model defaults from DGL's examples, an epoch line per
 * epoch, progress of each epoch's batches (docs/CLI.md, Progress), and the test accuracy (or
 * --metric) at the best validation epoch with the weights' SHA-256 at the end.
 *
 * Place in the data flow: cli → train.
 * Thread-safety: main thread; training runs its own pool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/plan.h"
#include "offcore/train.h"
#include "train/dist.h"

/* Parses "15,10,5" (or "-1,-1") into fanouts. Returns 0 or prints and returns -1. */
static int parse_fanouts(const char *s, struct oc_train_opts *o)
{
    o->n_fanouts = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < -1 || v == 0 || v > 1000000 || (*end && *end != ',')) {
            fprintf(stderr,
                    "offcore train: bad --fanout '%s': expected comma-separated positive counts "
                    "or -1 (all neighbors), e.g. 15,10,5\n",
                    s);
            return -1;
        }
        if (o->n_fanouts == OC_SAMPLE_MAX_LAYERS) {
            fprintf(stderr, "offcore train: --fanout '%s': at most %d layers\n", s,
                    OC_SAMPLE_MAX_LAYERS);
            return -1;
        }
        o->fanouts[o->n_fanouts++] = (int32_t)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            fprintf(stderr, "offcore train: bad --fanout '%s': trailing comma\n", s);
            return -1;
        }
    }
    return 0;
}

/* The epoch line; out-of-core strategies add their I/O summary and their own figures. */
void cli_print_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    const struct cli_epoch_line *el = ctx;
    uint32_t strategy = el->is_auto ? st->strategy : el->strategy;
    /* Time is the training time, as in DGL's and PyG's examples; evaluation is shown apart */
    printf("Epoch %05u | Loss %.4f | Train Acc %.4f", st->epoch, st->loss, st->train_acc);
    const char *label = oc_train_metric_label((enum oc_train_metric)el->metric);
    if (st->evaluated)
        printf(" | Val %s %.4f | Time %.2fs | Eval %.2fs", label, st->val_metric,
               st->time_s - st->eval_s, st->eval_s);
    else /* --eval none, or an epoch --eval-every skips */
        printf(" | Val %s -      | Time %.2fs | Eval -", label, st->time_s);
    if (st->seed_rows) /* OUTRE's Redundancy Ratio: input rows per seed */
        printf(" | RR %.2f", (double)st->input_rows / (double)st->seed_rows);
    if (st->partitioned) { /* every rank's rows from its own part, and fetched from others */
        char rb[32];
        printf(" | Rows local %" PRIu64 " remote %" PRIu64, st->local_rows, st->remote_rows);
        if (st->remote_cache_rows) /* --remote-cache: of them, read from the rank's cache */
            printf(" cached %" PRIu64 " (hit %.3f)", st->remote_cache_hits,
                   st->remote_rows ? (double)st->remote_cache_hits / (double)st->remote_rows : 0.0);
        printf(" (%s)", oc_format_size(st->remote_bytes, rb, sizeof(rb)));
    }
    if (el->show_io) {
        const struct oc_store_stats *ss = &st->store;
        char rd[32], rss[32];
        printf(" | Wait %.2fs | Read %s | Amp %.2f | CPU hit %.3f | Peak RSS %s", st->wait_s,
               oc_format_size(ss->read_bytes, rd, sizeof(rd)), oc_store_stats_amplification(ss),
               oc_store_stats_hit_ratio(ss, OC_STORE_TIER_CPU),
               oc_format_size(st->peak_rss_bytes, rss, sizeof(rss)));
        for (uint32_t k = 0; k < oc_store_strategy_n_stats(strategy); k++) {
            const struct oc_store_stat *f = oc_store_strategy_stat(strategy, k);
            if (!f->label)
                continue;
            double v = oc_store_stat_value(f, ss);
            char size[32];
            if (f->unit == OC_STORE_STAT_SECONDS)
                printf(" | %s %.2fs", f->label, v);
            else if (f->unit == OC_STORE_STAT_BYTES)
                printf(" | %s %s", f->label, oc_format_size((uint64_t)v, size, sizeof(size)));
            else
                printf(" | %s %.3f", f->label, v);
        }
    }
    printf("\n");
    fflush(stdout);
}

#define CLI_TRAIN_MAX_OPTS 96

/* --mem-budget: a size, or auto (oc_mem_available less its margin, printed). */
static int parse_budget(const char *s, uint64_t *budget)
{
    struct oc_err err;
    if (strcmp(s, "auto") != 0) {
        if (oc_parse_size(s, budget, &err) != OC_OK) {
            fprintf(stderr, "offcore train: --mem-budget '%s': %s\n", s,
                    strstr(err.msg, "less than one byte")
                        ? "less than one byte (0 means none)"
                        : "expected a size such as 512M or 4G, or auto");
            return -1;
        }
        return 0;
    }
    uint64_t avail = 0, meminfo = 0;
    if (oc_mem_available(&avail, &meminfo, &err) != OC_OK) {
        fprintf(stderr, "offcore train: --mem-budget auto: %s\n", err.msg);
        return -1;
    }
    uint64_t margin = avail / OC_MEM_AUTO_MARGIN_DIV;
    if (margin < OC_MEM_AUTO_MARGIN_MIN)
        margin = OC_MEM_AUTO_MARGIN_MIN;
    char a[32], m[32], b[32];
    if (avail <= margin) {
        fprintf(stderr,
                "offcore train: --mem-budget auto: only %s available, no more than the "
                "margin kept back (%s)\n",
                oc_format_size(avail, a, sizeof(a)), oc_format_size(margin, m, sizeof(m)));
        return -1;
    }
    *budget = avail - margin;
    fprintf(stderr, "offcore train: --mem-budget auto: %s (%s available%s, less a margin of %s)\n",
            oc_format_size(*budget, b, sizeof(b)), oc_format_size(avail, a, sizeof(a)),
            avail < meminfo ? " under the cgroup limit" : " by MemAvailable",
            oc_format_size(margin, m, sizeof(m)));
    return 0;
}

/* Whether cli_parse saw the option `name` of opts[0 .. n). */
static int given_opt(const struct cli_opt *opts, size_t n, const int *given, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(opts[i].name, name) == 0)
            return given[i];
    return 0;
}

/* Storage for one strategy option's parsed value. */
struct strategy_opt_value {
    const struct oc_store_opt *opt;
    uint32_t u32;
    double f64;
    int flag;
    const char *choice;
};

/*
 * Appends every strategy's own options to opts (at most max), their help
 * prefixed with the strategy's name; returns how many. A name several
 * strategies declare (of one type: --hyperbatch) is one option, its help
 * prefixed with all their names (train applies it to the chosen one's table).
 */
static size_t add_strategy_opts(struct cli_opt *opts, struct strategy_opt_value *values,
                                char (*helps)[320], size_t max)
{
    static const enum cli_opt_type types[OC_STORE_OPT_TYPE_COUNT] = {
        [OC_STORE_OPT_U32] = CLI_U32,
        [OC_STORE_OPT_F64] = CLI_F64,
        [OC_STORE_OPT_FLAG] = CLI_FLAG,
        [OC_STORE_OPT_CHOICE] = CLI_CHOICE,
    };
    size_t n = 0;
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++)
        for (uint32_t k = 0; k < oc_store_strategy_n_opts(i) && n < max; k++) {
            const struct oc_store_opt *so = oc_store_strategy_opt(i, k);
            size_t j = 0;
            while (j < n && strcmp(opts[j].name, so->name) != 0)
                j++;
            if (j < n) { /* declared by an earlier strategy too: "static, ginex: ..." */
                char *colon = strchr(helps[j], ':');
                size_t head = colon ? (size_t)(colon - helps[j]) : 0;
                char rest[320];
                snprintf(rest, sizeof(rest), "%s", helps[j] + head);
                snprintf(helps[j] + head, sizeof(helps[j]) - head, ", %s%s",
                         oc_store_strategy_name(i), rest);
                continue;
            }
            struct strategy_opt_value *v = &values[n];
            memset(v, 0, sizeof(*v));
            v->opt = so;
            void *targets[OC_STORE_OPT_TYPE_COUNT] = {&v->u32, &v->f64, &v->flag, &v->choice};
            snprintf(helps[n], sizeof(helps[n]), "%s: %s", oc_store_strategy_name(i), so->help);
            opts[n] = (struct cli_opt){so->name,    types[so->type], targets[so->type],
                                       so->metavar, helps[n],        so->choices};
            n++;
        }
    return n;
}

/* The parsed value as a number: as given, 1 for a flag, the index of a choice. */
static double strategy_opt_number(const struct strategy_opt_value *v)
{
    switch (v->opt->type) {
    case OC_STORE_OPT_U32:
        return v->u32;
    case OC_STORE_OPT_F64:
        return v->f64;
    case OC_STORE_OPT_FLAG:
        return v->flag;
    default: {
        double index = 0;
        const char *c = v->opt->choices;
        size_t len = strlen(v->choice);
        while (!(strncmp(c, v->choice, len) == 0 && (c[len] == '|' || c[len] == '\0'))) {
            c = strchr(c, '|');
            if (!c)
                return -1; /* cli_parse accepted only listed choices */
            c++;
            index++;
        }
        return index;
    }
    }
}

/* The value of --model in argv (default sage; the last one given, as for every option), so
   per-model defaults apply before parsing. */
static const char *find_model(int argc, char **argv)
{
    const char *model = "sage";
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strncmp(argv[i], "--model=", 8) == 0)
            model = argv[i] + 8;
    }
    return model;
}

/*
 * An error after the ranks joined the group: "rank R: <error>" on stderr,
 * then every rank is ended (MPI_Abort), so none waits on the failed one.
 * Outside a group it is cli_fail.
 */
static int train_fail(const struct oc_err *err)
{
    if (!oc_dist_on())
        return cli_fail(err);
    struct oc_err e = *err;
    oc_err_prefix(&e, "rank %u of %u", oc_dist_rank(), oc_dist_size());
    int code = cli_fail(&e);
    fflush(stdout);
    oc_dist_abort(code);
}

int cmd_train(int argc, char **argv)
{
    struct oc_err err;
    oc_err_clear(&err);
    enum oc_nn_model_kind kind;
    const char *model = find_model(argc, argv);
    if (oc_nn_model_kind_parse(model, &kind, &err) != OC_OK) {
        fprintf(stderr, "offcore train: unknown --model '%s' (expected sage, gcn or gat)\n", model);
        return 2;
    }
    struct oc_train_opts o;
    oc_train_opts_default(kind, &o);
    const char *fanout = NULL, *eval = "full", *strategy = "memory", *metric = "acc";
    const char *topology = "memory";
    uint64_t topo_cache = 0;
    const char *topo_rank = NULL;
    int reuse_samples = 0;
    const char *batching = "random";
    uint32_t partition_batch = 0;
    const char *partitioner = "metis";
    uint32_t layers = o.n_layers, heads = o.heads, epochs = o.epochs, threads = 0;
    uint64_t hidden = o.hidden, batch = o.batch_size, eval_batch = o.eval_batch_size;
    uint64_t seed = 0, budget = 0;
    const char *budget_arg = NULL;
    int allow_approximate = 0;
    uint32_t eval_every = 1;
    double lr = o.lr, wd = o.weight_decay, dropout = o.dropout, input_dropout = -1.0;
    int quiet = 0, verbose = 0, dry_run = 0;
    char strategy_help[512];
    size_t hl = (size_t)snprintf(strategy_help, sizeof(strategy_help), "where features come from:");
    for (uint32_t i = 0; i < oc_store_n_strategies() && hl < sizeof(strategy_help); i++)
        hl += (size_t)snprintf(strategy_help + hl, sizeof(strategy_help) - hl, "%s %s%s",
                               i ? "," : "", oc_store_strategy_name(i), i ? "" : " (default)");
    if (hl < sizeof(strategy_help))
        snprintf(strategy_help + hl, sizeof(strategy_help) - hl,
                 ", auto (the predicted fastest: docs/AUTO.md) (see docs/CLI.md; each strategy's "
                 "own options are listed last)");
    const struct cli_opt opts[] = {
        {"model", CLI_CHOICE, &model, NULL, "model (default sage)", "sage|gcn|gat"},
        {"layers", CLI_U32, &layers, "L", "number of GNN layers (2)", NULL},
        {"hidden", CLI_U64, &hidden, "H", "hidden width (sage/gcn 16, gat 8 per head)", NULL},
        {"heads", CLI_U32, &heads, "K", "GAT attention heads in hidden layers (8; gat only)", NULL},
        {"fanout", CLI_STR, &fanout, "F1,F2,..",
         "neighbors sampled per layer, input layer first; -1 = all (sage 10,25; gcn/gat -1,-1)",
         NULL},
        {"batch", CLI_U64, &batch, "B", "training seeds per batch (sage 1000, gcn/gat 1024)", NULL},
        {"eval-batch", CLI_U64, &eval_batch, "B", "nodes per evaluation batch (4096)", NULL},
        {"epochs", CLI_U32, &epochs, "E", "epochs (sage 20, gcn/gat 200)", NULL},
        {"lr", CLI_F64, &lr, "X", "Adam learning rate (sage 0.003, gcn 0.01, gat 0.005)", NULL},
        {"weight-decay", CLI_F64, &wd, "X", "L2 weight decay (sage 0, gcn/gat 5e-4)", NULL},
        {"dropout", CLI_F64, &dropout, "X",
         "dropout on hidden features (sage/gcn 0.5, gat 0.6 on every layer's input)", NULL},
        {"input-dropout", CLI_F64, &input_dropout, "X",
         "dropout on the input features (sage/gcn 0, gat = --dropout)", NULL},
        {"threads", CLI_U32, &threads, "T", "worker threads (default: all cores)", NULL},
        {"seed", CLI_U64, &seed, "S", "random seed (0): same seed, same weights", NULL},
        {"eval", CLI_CHOICE, &eval, NULL,
         "full: exact layer-wise inference (under --mem-budget its layer outputs go to a "
         "scratch file); sampled: mini-batches of the val/test nodes with the training "
         "fanouts; none: no evaluation",
         "full|sampled|none"},
        {"metric", CLI_CHOICE, &metric, NULL,
         "what evaluation reports and the best epoch maximizes on the validation split: "
         "accuracy (default), ROC-AUC of class 1 (two classes only) or macro F1",
         "acc|rocauc|f1-macro"},
        {"eval-every", CLI_U32, &eval_every, "N",
         "evaluate after every Nth epoch and after the last (1)", NULL},
        {"scratch", CLI_STR, &o.scratch_dir, "DIR",
         "--eval full under --mem-budget: where layer outputs are written while evaluating "
         "(default: the plan directory, DIR/plan)",
         NULL},
        {"log", CLI_STR, &o.log_path, "FILE", "write one JSON object per epoch and a final one",
         NULL},
        {"checkpoint", CLI_STR, &o.checkpoint_dir, "DIR", "save the run atomically every epoch",
         NULL},
        {"resume", CLI_FLAG, &o.resume, NULL, "continue from the checkpoint in --checkpoint DIR",
         NULL},
        {"strategy", CLI_STR, &strategy, "NAME", strategy_help, NULL},
        {"topology", CLI_CHOICE, &topology, NULL,
         "disk: neighbor lists read with O_DIRECT through a neighbor cache (Ginex)", "memory|disk"},
        {"topo-rank", CLI_CHOICE, &topo_rank, NULL,
         "disk topology: which lists the neighbor cache holds: degree (highest in-degree) or "
         "ginex (highest out-degree / in-degree, Ginex's metric; one scan of indices at "
         "start); default ginex with --strategy ginex, else degree",
         "degree|ginex"},
        {"topo-cache", CLI_SIZE, &topo_cache, NULL,
         "disk topology: memory for indptr + table + neighbor cache (default: half of "
         "--mem-budget, or all lists without one; a size that holds indptr and every list "
         "caches them all with no table)",
         NULL},
        {"plan-dir", CLI_STR, &o.plan_dir, "DIR",
         "ginex, diskgnn, --batching partition: write plan files under DIR instead of the "
         "dataset's plan/ (for a read-only dataset directory; --eval full's scratch goes "
         "there too unless --scratch)",
         NULL},
        {"reuse-samples", CLI_FLAG, &reuse_samples, NULL,
         "train every epoch on epoch 0's batches, as DiskGNN does (changes training; not with "
         "ginex, gnndrive, helios or outre)",
         NULL},
        {"batching", CLI_CHOICE, &batching, NULL,
         "random: seeds shuffled per epoch; partition: OUTRE's partition batches (a partition "
         "kept under the plan directory; groups of --partition-batch parts, shuffled "
         "from (seed, epoch); changes training)",
         "random|partition"},
        {"partition-batch", CLI_U32, &partition_batch, "P",
         "--batching partition: parts per group; the graph gets P x (batches per epoch) parts "
         "(4)",
         NULL},
        {"partitioner", CLI_CHOICE, &partitioner, NULL,
         "--batching partition: metis (k-way, minimum edge cut) or fennel (restreamed Fennel, "
         "as OUTRE cites it: no METIS workspace outside the budget); changes training",
         "metis|fennel"},
        {"mem-budget", CLI_STR, &budget_arg, "SIZE|auto",
         "hard limit on memory held; caches size themselves from it (default none); auto: "
         "the memory available now (MemAvailable, under any cgroup limit) less a tenth, at "
         "least 256M, printed",
         NULL},
        {"allow-approximate", CLI_FLAG, &allow_approximate, NULL,
         "--strategy auto may pick strategies that change training (outre, diskgnn "
         "--reuse-samples)",
         NULL},
        {"dry-run", CLI_FLAG, &dry_run, NULL,
         "open everything and stop before the first epoch: checks the options, the dataset "
         "and --mem-budget (measuring a batch) and prints how the budget is split",
         NULL},
        {"micro-shards", CLI_U32, &o.micro_shards, "M",
         "cut every batch into M sub-batches of its seeds, each its own forward and backward, "
         "gradients summed in a fixed tree order (1: the batch whole); --distributed ranks "
         "take whole micro-shards, M >= ranks, and train the weights of one process with the "
         "same M",
         NULL},
        {"distributed", CLI_FLAG, &o.distributed, NULL,
         "data-parallel training over the ranks of `mpirun -np N offcore train DIR "
         "--distributed --micro-shards M` (same options on every rank; each rank evaluates "
         "a share, reduced exactly; rank 0 prints, logs and checkpoints; needs a build with "
         "MPI). DIR may be `offcore partition`'s output: each rank serves its part's rows "
         "(any --strategy but diskgnn and auto; outre with --staleness 0)",
         NULL},
        {"remote-cache", CLI_SIZE, &o.remote_cache_bytes, NULL,
         "a partitioned dataset: memory of this rank's --mem-budget (taken from the store's "
         "share) that keeps other parts' rows of highest in-degree, fetched once before "
         "training, so batches ask their owners for the rest only (default 0: none)",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    /* the common options, then each strategy's own (store.h, struct oc_store_opt) */
    struct cli_opt all[CLI_TRAIN_MAX_OPTS];
    int given[CLI_TRAIN_MAX_OPTS] = {0}; /* which options cli_parse saw */
    struct strategy_opt_value values[CLI_TRAIN_MAX_OPTS];
    char helps[CLI_TRAIN_MAX_OPTS][320];
    size_t n_all = sizeof(opts) / sizeof(opts[0]);
    memcpy(all, opts, sizeof(opts));
    size_t n_strategy_opts =
        add_strategy_opts(all + n_all, values, helps, CLI_TRAIN_MAX_OPTS - n_all);
    n_all += n_strategy_opts;
    const struct cli_cmd cmd = {
        "train",
        "DIR [options]",
        "Train a GNN on the dataset in DIR, features from the --strategy (RAM by default,\n"
        "or on disk under --mem-budget), and report the test accuracy at the best\n"
        "validation epoch (or --metric's). Batches are sampled once and their features\n"
        "fetched ahead.",
        "Each epoch prints `Epoch 00003 | Loss 0.1234 | Train Acc 0.9000 | Val Acc 0.8000 | Time "
        "1.23s | Eval 0.40s | RR 5.12`\n(Val: the --metric, e.g. `Val ROC-AUC`; Time: training "
        "only; Eval: evaluation after it; RR: "
        "input rows per seed; out-of-core\nstrategies add `| Wait 0.12s | Read ...`: the seconds "
        "training waited for batches, then I/O\nfigures). The same seed gives the same loss "
        "sequence and weights at any --threads.",
        all,
        n_all,
        1,
        1,
        given};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    cli_log_init(verbose);
    if (fanout && parse_fanouts(fanout, &o) != 0)
        return 2;
    if (!fanout && layers != o.n_fanouts) {
        /* Layers changed without fanouts: repeat the model's default per layer. */
        int32_t f = o.fanouts[o.n_fanouts - 1];
        for (uint32_t l = 0; l < layers && l < OC_SAMPLE_MAX_LAYERS; l++)
            o.fanouts[l] = f;
        o.n_fanouts = layers;
    }
    o.n_layers = layers;
    o.hidden = hidden;
    o.heads = heads;
    o.batch_size = batch;
    o.eval_batch_size = eval_batch;
    o.epochs = epochs;
    o.lr = (float)lr;
    o.weight_decay = (float)wd;
    o.dropout = (float)dropout;
    /* -1 is the model's default, not a value to give */
    int input_dropout_given =
        given_opt(opts, sizeof(opts) / sizeof(opts[0]), given, "input-dropout");
    if (input_dropout_given && !(input_dropout >= 0.0 && input_dropout < 1.0)) {
        fprintf(stderr, "offcore train: --input-dropout must be in [0, 1)\n");
        return 2;
    }
    o.input_dropout = (float)input_dropout;
    o.n_threads = threads;
    o.seed = seed;
    if (eval_every == 0) {
        fprintf(stderr, "offcore train: --eval-every must be at least 1\n");
        return 2;
    }
    o.eval_every = eval_every;
    o.eval = strcmp(eval, "full") == 0      ? OC_TRAIN_EVAL_FULL
             : strcmp(eval, "sampled") == 0 ? OC_TRAIN_EVAL_SAMPLED
                                            : OC_TRAIN_EVAL_NONE;
    if (oc_train_metric_parse(metric, &o.metric, &err) != OC_OK) {
        fprintf(stderr, "offcore train: %s\n", err.msg);
        return 2;
    }
    uint32_t strategy_index = 0;
    int is_auto = strcmp(strategy, "auto") == 0;
    if (!is_auto && oc_store_strategy_find(strategy, &strategy_index, &err) != OC_OK) {
        fprintf(stderr, "offcore train: --strategy: %s; or auto\n", err.msg);
        return 2;
    }
    o.strategy = strategy;
    if (budget_arg && parse_budget(budget_arg, &budget) != 0)
        return 2;
    o.mem_budget = budget;
    o.allow_approximate = allow_approximate;
    o.topology_disk = strcmp(topology, "disk") == 0;
    int topo_cache_given = given_opt(opts, sizeof(opts) / sizeof(opts[0]), given, "topo-cache");
    if (!o.topology_disk && (topo_cache_given || topo_rank)) {
        fprintf(stderr, "offcore train: --%s needs --topology disk\n",
                topo_cache_given ? "topo-cache" : "topo-rank");
        return 2;
    }
    o.topo_cache_bytes = topo_cache;
    o.topo_rank = topo_rank
                      ? (strcmp(topo_rank, "ginex") == 0 ? OC_TOPO_RANK_GINEX : OC_TOPO_RANK_DEGREE)
                  : strcmp(strategy, "ginex") == 0 ? OC_TOPO_RANK_GINEX
                                                   : OC_TOPO_RANK_DEGREE;
    o.reuse_samples = reuse_samples;
    o.batching =
        strcmp(batching, "partition") == 0 ? OC_TRAIN_BATCHING_PARTITION : OC_TRAIN_BATCHING_RANDOM;
    if (given_opt(opts, sizeof(opts) / sizeof(opts[0]), given, "partition-batch") &&
        partition_batch == 0) {
        fprintf(stderr, "offcore train: --partition-batch must be at least 1\n");
        return 2;
    }
    o.partition_group = partition_batch;
    o.partitioner = strcmp(partitioner, "fennel") == 0 ? OC_PLAN_PART_FENNEL : OC_PLAN_PART_METIS;
    if (given_opt(opts, sizeof(opts) / sizeof(opts[0]), given, "partitioner") &&
        o.batching != OC_TRAIN_BATCHING_PARTITION) {
        fprintf(stderr, "offcore train: --partitioner needs --batching partition\n");
        return 2;
    }
    o.dry_run = dry_run;
    for (size_t k = 0; k < n_strategy_opts; k++)
        if (given[n_all - n_strategy_opts + k] &&
            oc_train_opts_set(&o, values[k].opt->name, strategy_opt_number(&values[k]), &err)) {
            fprintf(stderr, "offcore train: %s\n", err.msg);
            return 2;
        }
    struct cli_epoch_line line = {strcmp(strategy, "memory") != 0, strategy_index, (int)o.metric,
                                  is_auto};
    if (given_opt(opts, sizeof(opts) / sizeof(opts[0]), given, "micro-shards") &&
        o.micro_shards == 0) {
        fprintf(stderr, "offcore train: --micro-shards must be at least 1\n");
        return 2;
    }
    if (o.distributed) { /* every rank parsed the same options; now they join the group */
        if (oc_dist_init(&err) != OC_OK) {
            fprintf(stderr, "offcore train: %s\n", err.msg);
            return 2;
        }
        if (oc_dist_rank() != 0) { /* rank 0 speaks for all; the others only warn or fail */
            quiet = 1;
            cli_log_warnings_only();
        }
    }
    if (oc_train_opts_check(&o, &err) != OC_OK) {
        if (oc_dist_on())
            return train_fail(&err);
        fprintf(stderr, "offcore train: %s\n", err.msg);
        return 2;
    }
    oc_mem_set_budget(budget);
    struct oc_progress *bar = NULL;
    if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
        return cli_fail(&err);
    struct oc_train_result res;
    rc = oc_train_run(pos[0], &o, cli_print_epoch, &line, bar, &res, &err);
    oc_progress_free(bar);
    if (rc != OC_OK)
        return train_fail(&err);
    int lead = oc_dist_rank() == 0;
    oc_dist_finalize();
    if (!lead)
        return 0;
    if (dry_run) {
        char a[32], b[32], c[32], d[32];
        if (budget)
            printf("dry run: --mem-budget %s fits: %s held at start (topology, labels, model, a "
                   "step's workspace), %s reserved for batches in flight (depth %u) and "
                   "evaluation, %s for the feature store\n",
                   oc_format_size(budget, a, sizeof(a)),
                   oc_format_size(res.held_bytes, b, sizeof(b)),
                   oc_format_size(res.working_set_bytes, c, sizeof(c)), res.depth,
                   oc_format_size(res.store_bytes, d, sizeof(d)));
        if (budget && res.remote_cache_bytes)
            printf("dry run: and %s of other parts' rows (--remote-cache), taken from the "
                   "feature store's share\n",
                   oc_format_size(res.remote_cache_bytes, a, sizeof(a)));
        else
            printf("dry run: the options and the dataset check out (no --mem-budget to check)\n");
        return 0;
    }
    const char *label = oc_train_metric_label(o.metric);
    if (res.evaluated)
        printf("Test %s at best Val %s (epoch %u, val %.4f): %.4f\n", label, label, res.best_epoch,
               res.best_val_acc, res.test_acc_at_best_val);
    else
        printf("Test Acc: not evaluated (--eval none)\n");
    printf("weights_sha256 %s\n", res.weights_sha256);
    if (is_auto)
        printf("auto: picked %s%s, predicted epoch %.2fs, measured %.2fs (mean training time)\n",
               res.strategy, res.reuse_samples ? " --reuse-samples" : "", res.predicted_epoch_s,
               res.measured_epoch_s);
    return 0;
}
