/*
 * cmd_kg_train.c — `offcore kg-train DIR`: RED-GNN on a KG dataset
 * (include/offcore/kg.h): the reference's settings for a GraIL split
 * (--preset auto, by the dataset's name) or TIGER's defaults, any of them
 * overridden by the options given; an epoch line per epoch, the test MRR,
 * Hits@1 and Hits@10 at the best validation MRR and weights_sha256 at the end.
 *
 * Place in the data flow: cli → kg (train).
 * Thread-safety: main thread.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/kg.h"

static void print_epoch(void *ctx, const struct oc_kg_epoch_stats *st)
{
    (void)ctx;
    printf("Epoch %05u | Loss %.4f | Valid MRR %.4f | Test MRR %.4f H@1 %.4f H@10 %.4f | Time "
           "%.2fs | Eval %.2fs\n",
           st->epoch, st->loss, st->valid.mrr, st->test.mrr, st->test.hits1, st->test.hits10,
           st->time_s, st->eval_s);
    if (st->extract != OC_KG_EXTRACT_BASIC) {
        printf("  %s | slicing %.2fs | plan %.2fs (waited %.2fs) | extraction %.2fs | model "
               "%.2fs | atoms cached %llu, from disk %llu",
               oc_kg_extract_name(st->extract), st->slicing_s, st->plan_s, st->plan_wait_s,
               st->extract_s, st->model_s, (unsigned long long)st->atoms_cached,
               (unsigned long long)st->atoms_disk);
        if (st->extract != OC_KG_EXTRACT_ATOM)
            printf(" | slices read %llu of %llu, cache hits %.1f%% | delta_R %.3f delta_U %.3f "
                   "score %.3f | %llu slices",
                   (unsigned long long)st->slices_read, (unsigned long long)st->slices_accessed,
                   st->slices_accessed
                       ? 100.0 * (double)st->slices_hit / (double)st->slices_accessed
                       : 0.0,
                   st->delta_r, st->delta_u, st->delta_r * st->delta_u,
                   (unsigned long long)st->n_slices);
        printf(" | read %.1f MiB | peak RSS %.1f MiB\n", (double)st->bytes_read / 1048576.0,
               (double)st->peak_rss_bytes / 1048576.0);
    } else {
        printf("  basic | extraction %.2fs | model %.2fs | read %.1f MiB | peak RSS %.1f MiB\n",
               st->extract_s, st->model_s, (double)st->bytes_read / 1048576.0,
               (double)st->peak_rss_bytes / 1048576.0);
    }
    fflush(stdout);
}

static void print_dry_run(const struct oc_kg_train_result *res, uint64_t budget)
{
    char a[32], h[32], w[32], x[32], f[32];
    unsigned long long mib = (unsigned long long)((res->need_bytes + (1u << 20) - 1) >> 20);
    if (budget)
        printf("dry run: --mem-budget %s fits; the smallest that fits is --mem-budget %lluM",
               oc_format_size(budget, a, sizeof(a)), mib);
    else
        printf("dry run: the options and the dataset check out; the smallest --mem-budget that "
               "fits is %lluM",
               mib);
    printf(" (%s held: graphs, queries, filters, model, Adam state; %s the model's workspace for "
           "the largest batches; %s extraction's working memory; %s --extract's arrays; measured "
           "in %.2fs)\n",
           oc_format_size(res->held_bytes, h, sizeof(h)),
           oc_format_size(res->workspace_bytes, w, sizeof(w)),
           oc_format_size(res->extract_bytes, x, sizeof(x)),
           oc_format_size(res->fixed_bytes, f, sizeof(f)), res->measure_s);
}

int cmd_kg_train(int argc, char **argv)
{
    struct oc_kg_train_opts o;
    oc_kg_train_opts_default(&o);
    const char *preset = "auto", *act = "relu", *facts = "memory", *loss = "batch";
    const char *extract = "basic";
    uint32_t slice_size = o.slice_size, hops = o.hops, superbatch = o.superbatch;
    double alpha = o.alpha;
    uint32_t layers = o.n_layers, batch = o.batch, eval_batch = o.eval_batch, epochs = o.epochs;
    uint32_t threads = 0;
    uint64_t hidden = o.hidden, attn = o.attn_dim, seed = 0, budget = 0;
    double lr = o.lr, wd = o.weight_decay, decay = o.decay, dropout = o.dropout;
    int quiet = 0, verbose = 0;
    const struct cli_opt opts[] = {
        {"preset", CLI_STR, &preset, "NAME",
         "auto (the reference's settings when the dataset is a GraIL split, else the defaults), "
         "none, or a split name such as fb237_v1 (default auto)",
         NULL},
        {"layers", CLI_U32, &layers, "L", "propagation steps (3)", NULL},
        {"hidden", CLI_U64, &hidden, "H", "hidden width (32)", NULL},
        {"attn-dim", CLI_U64, &attn, "A", "attention width (5)", NULL},
        {"act", CLI_CHOICE, &act, NULL, "activation after W_h (relu)", "idd|relu|tanh"},
        {"dropout", CLI_F64, &dropout, "X", "dropout before the GRU gate (0.2)", NULL},
        {"lr", CLI_F64, &lr, "X", "Adam learning rate (0.005)", NULL},
        {"weight-decay", CLI_F64, &wd, "X", "L2 penalty added to the gradient (1e-4)", NULL},
        {"decay", CLI_F64, &decay, "X", "learning-rate decay per epoch (0.995)", NULL},
        {"batch", CLI_U32, &batch, "B", "training queries per batch (16)", NULL},
        {"loss-scale", CLI_CHOICE, &loss, NULL,
         "batch: the batch's loss times its query count, as the reference computes it (the L2 "
         "penalty weighs 1/B as much); sum: the summed cross-entropy (batch)",
         "batch|sum"},
        {"eval-batch", CLI_U32, &eval_batch, "B", "queries per evaluation batch (64)", NULL},
        {"epochs", CLI_U32, &epochs, "E", "epochs (50)", NULL},
        {"facts", CLI_CHOICE, &facts, NULL,
         "disk: read each head's facts with O_DIRECT instead of loading them (memory)",
         "memory|disk"},
        {"extract", CLI_CHOICE, &extract, NULL,
         "where training subgraphs come from: basic (the fact graph), atom (+ Atom Cache), "
         "ginex-slices (slices cut in order), tiger (SiGMa slices + Slice Cache); all but basic "
         "read the facts on disk (basic)",
         "basic|atom|ginex-slices|tiger"},
        {"slice-size", CLI_U32, &slice_size, "H", "facts per slice, ginex-slices and tiger (512)",
         NULL},
        {"alpha", CLI_F64, &alpha, "X",
         "tiger: capacity threshold, a fraction of the slice size (0.5)", NULL},
        {"hops", CLI_U32, &hops, "K",
         "tiger: k, the neighbours matched first and the DFS roots, <= layers - 1 (1)", NULL},
        {"superbatch", CLI_U32, &superbatch, "S",
         "ginex-slices, tiger: batches sliced and planned at once, on a planner thread while "
         "the S before them train (32)",
         NULL},
        {"plan-dir", CLI_STR, &o.plan_dir, "DIR",
         "slice store root instead of the dataset's plan/ (ginex-slices, tiger)", NULL},
        {"atom-cache", CLI_SIZE, &o.atom_cache_bytes, NULL,
         "Atom Cache bytes (atom, ginex-slices, tiger; default: a share of the budget)", NULL},
        {"slice-cache", CLI_SIZE, &o.slice_cache_bytes, NULL,
         "Slice Cache bytes (ginex-slices, tiger; default: a share of the budget)", NULL},
        {"threads", CLI_U32, &threads, "T", "worker threads (default: all cores)", NULL},
        {"seed", CLI_U64, &seed, "S", "random seed (0): same seed, same weights", NULL},
        {"log", CLI_STR, &o.log_path, "FILE", "write one JSON object per epoch and a final one",
         NULL},
        {"checkpoint", CLI_STR, &o.checkpoint_dir, "DIR", "save the run atomically every epoch",
         NULL},
        {"resume", CLI_FLAG, &o.resume, NULL, "continue from the checkpoint in --checkpoint DIR",
         NULL},
        {"mem-budget", CLI_SIZE, &budget, NULL,
         "hard limit on memory held (default none); measured before the first step, a budget "
         "too small is refused naming the smallest that fits",
         NULL},
        {"dry-run", CLI_FLAG, &o.dry_run, NULL,
         "check the options and the dataset, measure what training needs and print whether "
         "--mem-budget fits and the smallest that does; train and write nothing",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL, "no epoch lines", NULL},
        {"verbose", CLI_FLAG, &verbose, NULL, "debug logging", NULL},
    };
    enum { P_PRESET, P_LAYERS, P_HIDDEN, P_ATTN, P_ACT, P_DROPOUT, P_LR, P_WD, P_DECAY, P_BATCH };
    enum {
        P_FACTS = 13,
        P_EXTRACT,
        P_SLICE,
        P_ALPHA,
        P_HOPS,
        P_SUPERBATCH,
        P_PLAN,
        P_ACACHE,
        P_SCACHE
    };
    int given[sizeof(opts) / sizeof(opts[0])] = {0};
    const struct cli_cmd cmd = {
        "kg-train",
        "DIR [options]",
        "Train RED-GNN on the KG dataset in DIR (offcore import kg) with the reference's\n"
        "inductive protocol and report the filtered MRR, Hits@1 and Hits@10 on the inductive\n"
        "graph at the best validation MRR.",
        "Each epoch prints `Epoch 00003 | Loss 812.3 | Valid MRR 0.61 | Test MRR 0.58 H@1 0.52 "
        "H@10 0.71 |\nTime 3.1s | Eval 0.9s`. Options given override the preset. The same seed "
        "gives the same\nweights (weights_sha256) at any --threads.",
        opts,
        sizeof(opts) / sizeof(opts[0]),
        1,
        1,
        given};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    cli_log_init(verbose);
    struct oc_err err;
    oc_err_clear(&err);
    if (strcmp(preset, "none") != 0) {
        char name[128];
        snprintf(name, sizeof(name), "%s", preset);
        if (strcmp(preset, "auto") == 0) {
            /* the name alone: the run opens (and checks) the dataset once, later */
            struct oc_kg_manifest m;
            if (oc_kg_read_manifest(pos[0], &m, &err) != OC_OK)
                return cli_fail(&err);
            snprintf(name, sizeof(name), "%s", m.name);
        }
        if (oc_kg_train_preset(name, &o, &err) != OC_OK && strcmp(preset, "auto") != 0) {
            fprintf(stderr, "offcore kg-train: --preset: %s\n", err.msg);
            return 2;
        }
    }
    if (given[P_LAYERS])
        o.n_layers = layers;
    if (given[P_HIDDEN])
        o.hidden = hidden;
    if (given[P_ATTN])
        o.attn_dim = attn;
    if (given[P_ACT] && oc_nn_redgnn_act_parse(act, &o.act, &err) != OC_OK)
        return 2;
    if (given[P_DROPOUT])
        o.dropout = (float)dropout;
    if (given[P_LR])
        o.lr = lr;
    if (given[P_WD])
        o.weight_decay = wd;
    if (given[P_DECAY])
        o.decay = decay;
    if (given[P_BATCH])
        o.batch = batch;
    if (!(o.dropout >= 0.0f && o.dropout < 1.0f)) {
        fprintf(stderr, "offcore kg-train: --dropout must be in [0, 1)\n");
        return 2;
    }
    o.eval_batch = eval_batch;
    o.epochs = epochs;
    o.threads = threads;
    o.seed = seed;
    o.facts = strcmp(facts, "disk") == 0 ? OC_KG_FACTS_DISK : OC_KG_FACTS_MEMORY;
    if (oc_kg_extract_parse(extract, &o.extract, &err) != OC_OK) {
        fprintf(stderr, "offcore kg-train: %s\n", err.msg);
        return 2;
    }
    /* the slice-and-cache modes read the facts on disk unless told otherwise (then refused) */
    if (o.extract != OC_KG_EXTRACT_BASIC && !given[P_FACTS])
        o.facts = OC_KG_FACTS_DISK;
    if (given[P_ACACHE] && o.extract == OC_KG_EXTRACT_BASIC) {
        fprintf(stderr, "offcore kg-train: --atom-cache needs --extract atom, ginex-slices or "
                        "tiger\n");
        return 2;
    }
    if ((given[P_SLICE] || given[P_SUPERBATCH] || given[P_PLAN] || given[P_SCACHE]) &&
        o.extract != OC_KG_EXTRACT_GINEX && o.extract != OC_KG_EXTRACT_TIGER) {
        fprintf(stderr,
                "offcore kg-train: --slice-size, --superbatch, --plan-dir and --slice-cache need "
                "--extract ginex-slices or tiger\n");
        return 2;
    }
    if ((given[P_ALPHA] || given[P_HOPS]) && o.extract != OC_KG_EXTRACT_TIGER) {
        fprintf(stderr, "offcore kg-train: --alpha and --hops need --extract tiger\n");
        return 2;
    }
    o.slice_size = slice_size;
    o.alpha = alpha;
    o.hops = hops;
    if (!given[P_HOPS] && o.n_layers >= 1 && o.hops > o.n_layers - 1)
        o.hops = o.n_layers - 1; /* the default, where the layers allow it */
    o.superbatch = superbatch;
    o.loss_scale = strcmp(loss, "sum") == 0 ? OC_KG_LOSS_SUM : OC_KG_LOSS_BATCH;
    oc_mem_set_budget(budget);
    if (!quiet)
        printf("RED-GNN: %u layers, hidden %llu, attn %llu, act %s, dropout %g, lr %g, decay %g, "
               "weight decay %g, batch %u, loss scale %s, epochs %u\n",
               o.n_layers, (unsigned long long)o.hidden, (unsigned long long)o.attn_dim,
               oc_nn_redgnn_act_name(o.act), (double)o.dropout, o.lr, o.decay, o.weight_decay,
               o.batch, oc_kg_loss_scale_name(o.loss_scale), o.epochs);
    struct oc_kg_train_result res;
    rc = oc_kg_train_run(pos[0], &o, quiet ? NULL : print_epoch, NULL, &res, &err);
    if (rc != OC_OK)
        return cli_fail(&err);
    if (o.dry_run) {
        print_dry_run(&res, budget);
        return 0;
    }
    printf("Test at best Valid MRR (epoch %u, valid %.4f): MRR %.4f | Hits@1 %.4f | Hits@10 %.4f "
           "| %llu answers | %.1f s\n",
           res.best_epoch, res.best_valid_mrr, res.test_at_best.mrr, res.test_at_best.hits1,
           res.test_at_best.hits10, (unsigned long long)res.test_at_best.n_ranked, res.time_s);
    printf("weights_sha256 %s\n", res.weights_sha256);
    return 0;
}
