/*
 * test_cli.c — the command line as a user meets it: every subcommand answers
 * --help, and unknown commands and options, bad values, missing arguments
 * and inconsistent training flags exit non-zero with a message naming the
 * problem; a missing dataset is an error naming the path; training runs the
 * OpenBLAS kernels that fit the CPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"
#include "nn/cpu_int.h"
#include "offcore/generate.h"
#include "offcore/store.h"
#include "proc_util.h"

/* Runs the binary with args; returns the exit code and fills *err_text (oc_free it). */
static int run_cli(char *const args[], char **err_text)
{
    struct proc_run r;
    proc_run_cli((const char *const *)args, 120, &r);
    *err_text = r.err;
    oc_free(r.out);
    return r.code;
}

struct cli_case {
    const char *args[12];
    int exit_code;
    const char *message;
};

OC_TEST(bad_command_lines_fail_with_a_clear_message)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    static const struct cli_case cases[] = {
        {{"frobnicate", NULL}, 2, "unknown command 'frobnicate'"},
        {{"generate", "--nodes", "ten", "/tmp/x", NULL}, 2, "bad value 'ten' for --nodes"},
        {{"train", "/tmp/x", "--micro-shards", "0", NULL}, 2, "--micro-shards must be at least 1"},
        {{"generate", "--dtype", "f64", "/tmp/x", NULL}, 2, "expected one of f32|f16"},
        {{"generate", "--bogus", "/tmp/x", NULL}, 2, "unknown option '--bogus'"},
        {{"generate", NULL}, 2, "missing argument"},
        {{"generate", "--mem-budget", "12X", "/tmp/x", NULL}, 2, "--mem-budget"},
        {{"import", "csv", "a", "b", NULL}, 2, "unknown kind 'csv'"},
        {{"import", "text", "a", NULL}, 2, "missing argument"},
        {{"info", "/nonexistent/offcore-ds", NULL}, 1, "/nonexistent/offcore-ds"},
        {{"train", "d", "--model", "mlp", NULL}, 2, "unknown --model 'mlp'"},
        {{"train", "d", "--layers", "3", "--fanout", "10,5", NULL}, 2, "one fanout per layer"},
        {{"train", "d", "--batch", "0", NULL}, 2, "--batch must be at least 1"},
        {{"train", "d", "--fanout", "10,,5", NULL}, 2, "bad --fanout"},
        {{"train", "d", "--strategy", "magic", NULL}, 2, "magic"},
        {{"train", "d", "--reorder", NULL}, 2, "--reorder needs --strategy gnndrive"},
        {{"train", "d", "--strategy", "direct", "--hyperbatch", "0.5", NULL},
         2,
         "--hyperbatch needs --strategy static, gnndrive, ginex or helios"},
        {{"train", "d", "--strategy", "gnndrive", "--hyperbatch", "0.95", NULL},
         2,
         "--hyperbatch must be a number from 0 to 0.9"},
        {{"train", "d", "--strategy", "ginex", "--hyperbatch", "0.95", NULL},
         2,
         "--hyperbatch must be a number from 0 to 0.9"},
        {{"train", "d", "--strategy", "static", "--samplers", "2", NULL},
         2,
         "--samplers needs --strategy gnndrive"},
        {{"train", "d", "--strategy", "gnndrive", "--samplers", "x", NULL}, 2, "--samplers"},
        {{"train", "d", "--plan-dir", "/tmp", "--strategy", "static", NULL},
         2,
         "--plan-dir needs --strategy ginex or diskgnn"},
        {{"train", "d", "--resume", NULL}, 2, "--resume needs --checkpoint"},
        {{"train", "d", "--topo-rank", "ginex", NULL}, 2, "--topo-rank needs --topology disk"},
        {{"train", "d", "--topo-cache", "1M", NULL}, 2, "--topo-cache needs --topology disk"},
        {{"train", "d", "--topology", "disk", "--topo-rank", "outdeg", NULL},
         2,
         "expected one of degree|ginex"},
        {{"train", "d", "--eval", "most", NULL}, 2, "expected one of full|sampled|none"},
        {{"train", "d", "--eval-every", "0", NULL}, 2, "--eval-every must be at least 1"},
        {{"train", "d", "--metric", "auc", NULL}, 2, "expected one of acc|rocauc|f1-macro"},
        {{"train", "d", "--eval", "none", "--metric", "rocauc", NULL},
         2,
         "--metric rocauc has nothing to do with --eval none"},
        {{"train", "d", "--eval", "none", "--eval-every", "2", NULL},
         2,
         "--eval-every has nothing to do with --eval none"},
        {{"train", "d", "--scratch", "/tmp", NULL},
         2,
         "--scratch needs --eval full and --mem-budget"},
        {{"train", "d", "--batching", "metis", NULL}, 2, "expected one of random|partition"},
        {{"train", "d", "--batching", "partition", "--partition-batch", "0", NULL},
         2,
         "--partition-batch must be at least 1"},
        {{"train", "d", "--partition-batch", "2", NULL},
         2,
         "--partition-batch needs --batching partition"},
        {{"train", "d", "--batching", "partition", "--topology", "disk", NULL},
         2,
         "--batching partition needs the topology in memory"},
        {{"train", "d", "--partitioner", "fennel", NULL},
         2,
         "--partitioner needs --batching partition"},
        {{"train", "d", "--batching", "partition", "--partitioner", "kl", NULL},
         2,
         "expected one of metis|fennel"},
        {{"train", "d", "--staleness", "5", NULL}, 2, "--staleness needs --strategy outre"},
        {{"train", "d", "--strategy", "outre", "--admit", "1.5", NULL},
         2,
         "--admit must be a number from 0 to 1"},
        {{"train", "d", "--strategy", "outre", "--admit", "-0.1", NULL},
         2,
         "--admit must be a number from 0 to 1"},
        {{"train", "/nonexistent/offcore-ds", "--epochs", "1", NULL}, 1, "/nonexistent/offcore-ds"},
        /* bad values the library finds are exit 2 too */
        {{"generate", "--avg-degree", "-5", "--quiet", "/tmp/offcore-cli-x1", NULL},
         2,
         "--avg-degree must be in"},
        {{"generate", "--nodes", " -1", "/tmp/x", NULL}, 2, "bad value ' -1' for --nodes"},
        {{"generate", "--mixing", "0.2", "--quiet", "/tmp/offcore-cli-x1", NULL},
         2,
         "--mixing 0.2 needs --communities"},
        {{"generate", "--nodes", "100", "--communities", "101", "--quiet", "/tmp/offcore-cli-x1",
          NULL},
         2,
         "--communities must be 0 (none) or in [2, nodes = 100]"},
        {{"generate", "--communities", "10", "--mixing", "1.5", "--quiet", "/tmp/offcore-cli-x1",
          NULL},
         2,
         "--mixing must be in [0, 1]"},
        {{"train", "d", "--mem-budget", "0.5", NULL}, 2, "less than one byte"},
        {{"train", "d", "--model", "gcn", "--model", "mlp", NULL}, 2, "unknown --model 'mlp'"},
        {{"train", "d", "--input-dropout", "-1", NULL}, 2, "--input-dropout must be in [0, 1)"},
        {{"train", "d", "--topo-cache", "0", NULL}, 2, "--topo-cache needs --topology disk"},
        {{"import", "text", "a", "b", "--split", "4294967295", NULL}, 2, "--split: too large"},
        {{"import", "--quiet", "kg", "/nonexistent/kg-src", "/tmp/x", NULL},
         1,
         "/nonexistent/kg-src"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = NULL;
        int rc = run_cli((char *const *)cases[i].args, &text);
        int ok = rc == cases[i].exit_code && text && strstr(text, cases[i].message);
        if (!ok)
            fprintf(stderr, "  case %zu (%s %s): exit %d, stderr: %s\n", i, cases[i].args[0],
                    cases[i].args[1] ? cases[i].args[1] : "", rc, text ? text : "(none)");
        OC_CHECK(ok);
        oc_free(text);
    }
}

/* Every strategy's own option is offered by `train --help` and documented in docs/CLI.md. */
OC_TEST(strategy_options_are_listed_and_documented)
{
    const char *src = getenv("OC_SRC");
    if (!getenv("OC_BIN") || !src)
        OC_SKIP("OC_BIN or OC_SRC not set; run through ctest");
    char readme_path[1024];
    snprintf(readme_path, sizeof(readme_path), "%s/docs/CLI.md", src);
    char *readme = NULL, *help = NULL;
    size_t len;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(readme_path, 0, &readme, &len, &err), &err);
    const char *args[] = {"train", "--help", NULL};
    const char *tmp = oc_test_tmpdir();
    char out[700];
    snprintf(out, sizeof(out), "%s/help.txt", tmp);
    char *argv[] = {getenv("OC_BIN"), (char *)args[0], (char *)args[1], NULL};
    OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
    OC_CHECK_OK(oc_read_file(out, 0, &help, &len, &err), &err);
    uint32_t n = 0;
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        OC_CHECK(help && strstr(help, oc_store_strategy_name(i)));
        for (uint32_t k = 0; k < oc_store_strategy_n_opts(i); k++, n++) {
            char flag[96];
            snprintf(flag, sizeof(flag), "--%s", oc_store_strategy_opt(i, k)->name);
            int ok = help && strstr(help, flag) && readme && strstr(readme, flag);
            if (!ok)
                fprintf(stderr, "  %s (%s) missing from train --help or docs/CLI.md\n", flag,
                        oc_store_strategy_name(i));
            OC_CHECK(ok);
        }
    }
    OC_CHECK(n >= 5);
    oc_free(readme);
    oc_free(help);
}

/* A small generated dataset (3000 nodes), made once for the tests that train through the CLI. */
static char *cli_dataset(void)
{
    static char ds[700];
    if (ds[0])
        return ds;
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    struct oc_err err;
    snprintf(ds, sizeof(ds), "%s/cli-ds", oc_test_tmpdir());
    int rc = oc_generate(&g, ds, NULL, &err);
    OC_CHECK_OK(rc, &err);
    if (rc != OC_OK) {
        ds[0] = '\0';
        return NULL;
    }
    return ds;
}

/* Each strategy's own figures (its stats table) reach the epoch line and the JSON log. */
OC_TEST(strategy_figures_reach_the_epoch_line_and_log)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char out[700], log[700];
    snprintf(out, sizeof(out), "%s/figures.out", tmp);
    snprintf(log, sizeof(log), "%s/figures.jsonl", tmp);
    struct oc_err err;
    char *ds = cli_dataset();
    if (!ds)
        return;
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        char *argv[] = {getenv("OC_BIN"),
                        "train",
                        ds,
                        "--strategy",
                        (char *)oc_store_strategy_name(i),
                        "--epochs",
                        "1",
                        "--mem-budget",
                        "64M",
                        "--quiet",
                        "--log",
                        log,
                        NULL};
        OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
        char *line = NULL, *json = NULL;
        size_t len;
        OC_CHECK_OK(oc_read_file(out, 0, &line, &len, &err), &err);
        OC_CHECK_OK(oc_read_file(log, 0, &json, &len, &err), &err);
        for (uint32_t k = 0; k < oc_store_strategy_n_stats(i); k++) {
            const struct oc_store_stat *f = oc_store_strategy_stat(i, k);
            char label[96], key[96];
            snprintf(label, sizeof(label), "| %s ", f->label ? f->label : "");
            snprintf(key, sizeof(key), "\"%s\":", f->key);
            int ok = (!f->label || (line && strstr(line, label))) && json && strstr(json, key);
            if (!ok)
                fprintf(stderr, "  %s: figure %s missing from the epoch line or log\n",
                        oc_store_strategy_name(i), f->key);
            OC_CHECK(ok);
        }
        oc_free(line);
        oc_free(json);
    }
}

/* Whether key is one of a strategy's own figures (documented with the strategy, not the log). */
static int strategy_figure_key(const char *key)
{
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++)
        for (uint32_t k = 0; k < oc_store_strategy_n_stats(i); k++) {
            const struct oc_store_stat *f = oc_store_strategy_stat(i, k);
            if (strcmp(f->key, key) == 0 || (f->group && strcmp(f->group, key) == 0))
                return 1;
        }
    return 0;
}

/* Every option `generate --help` offers is documented in docs/CLI.md. */
OC_TEST(generate_options_are_documented)
{
    const char *src = getenv("OC_SRC");
    if (!getenv("OC_BIN") || !src)
        OC_SKIP("OC_BIN or OC_SRC not set; run through ctest");
    char doc_path[1024];
    snprintf(doc_path, sizeof(doc_path), "%s/docs/CLI.md", src);
    char *doc = NULL, *help = NULL;
    size_t len;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(doc_path, 0, &doc, &len, &err), &err);
    char out[700];
    snprintf(out, sizeof(out), "%s/generate-help.txt", oc_test_tmpdir());
    char *argv[] = {getenv("OC_BIN"), "generate", "--help", NULL};
    OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
    OC_CHECK_OK(oc_read_file(out, 0, &help, &len, &err), &err);
    uint32_t n = 0;
    for (const char *p = help; p && (p = strstr(p, "\n  --")) != NULL; p++) {
        char flag[64];
        size_t k = 0;
        flag[k++] = '`';
        for (const char *q = p + 3; *q && *q != ' ' && *q != '\n' && k < sizeof(flag) - 1; q++)
            flag[k++] = *q;
        flag[k] = '\0';
        int ok = doc && strstr(doc, flag);
        if (!ok)
            fprintf(stderr, "  generate option %s missing from docs/CLI.md\n", flag + 1);
        OC_CHECK(ok);
        n++;
    }
    OC_CHECK(n >= 20);
    oc_free(doc);
    oc_free(help);
}

/* Every key a training log writes (all but the strategies' own figures) is in docs/CLI.md. */
OC_TEST(log_keys_are_documented)
{
    const char *src = getenv("OC_SRC");
    if (!getenv("OC_BIN") || !src)
        OC_SKIP("OC_BIN or OC_SRC not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char out[700], log[700], readme_path[1024];
    snprintf(out, sizeof(out), "%s/keys.out", tmp);
    snprintf(log, sizeof(log), "%s/keys.jsonl", tmp);
    snprintf(readme_path, sizeof(readme_path), "%s/docs/CLI.md", src);
    struct oc_err err;
    char *ds = cli_dataset();
    if (!ds)
        return;
    char *argv[] = {getenv("OC_BIN"),
                    "train",
                    ds,
                    "--strategy",
                    "static",
                    "--mem-budget",
                    "64M",
                    "--topology",
                    "disk",
                    "--epochs",
                    "1",
                    "--quiet",
                    "--log",
                    log,
                    NULL};
    OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
    char *json = NULL, *readme = NULL;
    size_t len;
    OC_CHECK_OK(oc_read_file(log, 0, &json, &len, &err), &err);
    OC_CHECK_OK(oc_read_file(readme_path, 0, &readme, &len, &err), &err);
    uint32_t n_keys = 0;
    for (const char *p = json; p && (p = strchr(p, '"')) != NULL;) {
        const char *end = strchr(p + 1, '"');
        if (!end)
            break;
        if (end[1] == ':' && (size_t)(end - p) < 64) { /* a key, not a string value */
            char key[80], ticked[96], quoted[96];
            snprintf(key, sizeof(key), "%.*s", (int)(end - p - 1), p + 1);
            snprintf(ticked, sizeof(ticked), "`%s`", key);
            snprintf(quoted, sizeof(quoted), "\"%s\"", key); /* as in `{"final": true, ...}` */
            n_keys++;
            int ok = strategy_figure_key(key) ||
                     (readme && (strstr(readme, ticked) || strstr(readme, quoted)));
            if (!ok)
                fprintf(stderr, "  log key %s missing from docs/CLI.md\n", key);
            OC_CHECK(ok);
        }
        p = end + 1;
    }
    OC_CHECK(n_keys > 50);
    oc_free(json);
    oc_free(readme);
}

/*
 * --topology disk says what its neighbor cache holds. The lists here (20000 nodes of degree 50:
 * indptr and lists 3.70 MiB) fit in half of a 16M budget but not in a fifth: the default caches
 * every list (no node table), a --topo-cache of a fifth part of them.
 */
OC_TEST(disk_topology_caches_every_list_that_fits_half_the_budget)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700];
    snprintf(ds, sizeof(ds), "%s/topo-ds", oc_test_tmpdir());
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 20000;
    g.avg_degree = 50;
    g.feat_dim = 8;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, ds, NULL, &err), &err);
    for (int fifth = 0; fifth < 2; fifth++) {
        const char *args[] = {"train",   ds,   "--topology", "disk", "--mem-budget", "16M",
                              "--batch", "64", "--fanout",   "5,5",  "--dry-run",    "--topo-cache",
                              "3277K",   NULL};
        if (!fifth)
            args[11] = NULL; /* the default: up to half the budget */
        struct proc_run r;
        proc_run_cli(args, 60, &r);
        OC_CHECK(r.code == 0 && r.err);
        const char *e = r.err ? r.err : "";
        OC_CHECK(strstr(e, fifth ? "topology: neighbor cache of "
                                 : "topology: every neighbor list cached") != NULL);
        OC_CHECK((fifth == 0) == (strstr(e, "read from indices.npy") == NULL));
        proc_run_free(&r);
    }
}

OC_TEST(skipped_evaluations_show_on_the_epoch_line_and_in_the_log)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char out[700], log[700];
    snprintf(out, sizeof(out), "%s/eval.out", tmp);
    snprintf(log, sizeof(log), "%s/eval.jsonl", tmp);
    struct oc_err err;
    char *ds = cli_dataset();
    if (!ds)
        return;
    char *none[] = {getenv("OC_BIN"), "train",   ds,      "--epochs", "2", "--eval",
                    "none",           "--quiet", "--log", log,        NULL};
    OC_CHECK(proc_wait(proc_spawn(none, out)) == 0);
    char *text = NULL, *json = NULL;
    size_t len;
    OC_CHECK_OK(oc_read_file(out, 0, &text, &len, &err), &err);
    OC_CHECK_OK(oc_read_file(log, 0, &json, &len, &err), &err);
    OC_CHECK(strstr(text, "Epoch 00001 | Loss ") && strstr(text, "| Val Acc -"));
    OC_CHECK(strstr(text, "Test Acc: not evaluated (--eval none)"));
    OC_CHECK(strstr(text, "weights_sha256 "));
    OC_CHECK(strstr(json, "\"evaluated\":false") && strstr(json, "\"val_acc\":null"));
    OC_CHECK(strstr(json, "\"test_acc_at_best_val\":null"));
    oc_free(text);
    oc_free(json);
    char *every[] = {getenv("OC_BIN"), "train", ds,        "--epochs", "3",
                     "--eval-every",   "2",     "--quiet", NULL};
    OC_CHECK(proc_wait(proc_spawn(every, out)) == 0);
    OC_CHECK_OK(oc_read_file(out, 0, &text, &len, &err), &err);
    OC_CHECK(strstr(text, "Epoch 00000 | Loss ") && strstr(text, "| Val Acc -"));
    OC_CHECK(strstr(text, "Test Acc at best Val Acc (epoch 2,") ||
             strstr(text, "Test Acc at best Val Acc (epoch 1,"));
    char *e1 = strstr(text, "Epoch 00001"), *e2 = strstr(text, "Epoch 00002");
    OC_CHECK(e1 && e2 && !strstr(e1, "Val Acc -"));
    oc_free(text);
}

/* The keys of the log lines in json (one object per line) missing from doc; how many keys. */
static uint32_t undocumented_keys(const char *json, const char *doc, uint32_t *n_keys)
{
    uint32_t missing = 0;
    *n_keys = 0;
    for (const char *p = json; p && (p = strchr(p, '"')) != NULL;) {
        const char *end = strchr(p + 1, '"');
        if (!end)
            break;
        if (end[1] == ':' && (size_t)(end - p) < 64) {
            char key[80], ticked[96], quoted[96];
            snprintf(key, sizeof(key), "%.*s", (int)(end - p - 1), p + 1);
            snprintf(ticked, sizeof(ticked), "`%s`", key);
            snprintf(quoted, sizeof(quoted), "\"%s\"", key);
            (*n_keys)++;
            if (!strategy_figure_key(key) && !strstr(doc, ticked) && !strstr(doc, quoted)) {
                fprintf(stderr, "  log key %s missing from docs/CLI.md\n", ticked);
                missing++;
            }
        }
        p = end + 1;
    }
    return missing;
}

/*
 * --metric rocauc on a two-class dataset: the epoch line shows `Val ROC-AUC`, the final line
 * the test ROC-AUC at the best validation ROC-AUC, the log val_rocauc and test_rocauc per
 * epoch and the metric, best_val_rocauc and test_rocauc_at_best_val at the end, all documented;
 * the same run's weights as with accuracy. A ten-class dataset is refused, naming it.
 */
OC_TEST(metric_rocauc_reaches_the_epoch_line_and_the_log)
{
    const char *src = getenv("OC_SRC");
    if (!getenv("OC_BIN") || !src)
        OC_SKIP("OC_BIN or OC_SRC not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char out[700], log[700], ds[700], doc_path[1024];
    snprintf(out, sizeof(out), "%s/metric.out", tmp);
    snprintf(log, sizeof(log), "%s/metric.jsonl", tmp);
    snprintf(ds, sizeof(ds), "%s/two-classes", tmp);
    snprintf(doc_path, sizeof(doc_path), "%s/docs/CLI.md", src);
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 2000;
    g.n_classes = 2;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, ds, NULL, &err), &err);
    char *argv[] = {getenv("OC_BIN"), "train",   ds,      "--epochs", "3", "--metric",
                    "rocauc",         "--quiet", "--log", log,        NULL};
    OC_CHECK(proc_wait(proc_spawn(argv, out)) == 0);
    char *text = NULL, *json = NULL, *doc = NULL;
    size_t len;
    OC_CHECK_OK(oc_read_file(out, 0, &text, &len, &err), &err);
    OC_CHECK_OK(oc_read_file(log, 0, &json, &len, &err), &err);
    OC_CHECK_OK(oc_read_file(doc_path, 0, &doc, &len, &err), &err);
    OC_CHECK(text && strstr(text, "Epoch 00002 | Loss ") && strstr(text, "| Val ROC-AUC 0."));
    OC_CHECK(text && !strstr(text, "Val Acc"));
    OC_CHECK(text && strstr(text, "Test ROC-AUC at best Val ROC-AUC (epoch "));
    OC_CHECK(json && strstr(json, "\"val_rocauc\":0.") && strstr(json, "\"test_rocauc\":0."));
    OC_CHECK(json && strstr(json, "\"metric\":\"rocauc\"") &&
             strstr(json, "\"best_val_rocauc\":") && strstr(json, "\"test_rocauc_at_best_val\":"));
    OC_CHECK(json && !strstr(json, "best_val_acc"));
    uint32_t n_keys = 0;
    OC_CHECK(json && doc && undocumented_keys(json, doc, &n_keys) == 0 && n_keys > 50);
    const char *sha = text ? strstr(text, "weights_sha256 ") : NULL;
    char *acc_argv[] = {getenv("OC_BIN"), "train", ds, "--epochs", "3", "--quiet", NULL};
    char *acc_text = NULL;
    OC_CHECK(proc_wait(proc_spawn(acc_argv, out)) == 0);
    OC_CHECK_OK(oc_read_file(out, 0, &acc_text, &len, &err), &err);
    OC_CHECK(sha && acc_text && strstr(acc_text, sha)); /* the metric leaves the weights alone */
    OC_CHECK(acc_text && strstr(acc_text, "| Val Acc 0.") && strstr(acc_text, "Test Acc at best"));
    oc_free(text);
    oc_free(json);
    oc_free(doc);
    oc_free(acc_text);
    char *many = cli_dataset();
    if (!many)
        return;
    char *bad[] = {getenv("OC_BIN"), "train", many, "--metric", "rocauc", "--quiet", NULL};
    char *err_text = NULL;
    OC_CHECK(run_cli(bad + 1, &err_text) == 2);
    OC_CHECK(err_text && strstr(err_text, "--metric rocauc: ") && strstr(err_text, many) &&
             strstr(err_text, "has 10 classes"));
    oc_free(err_text);
}

/*
 * `offcore train` started without OPENBLAS_CORETYPE runs OpenBLAS kernels that fit the CPU: where
 * OpenBLAS fell back to a core without AVX2 on a CPU with it, the CLI restarts itself with the
 * right core. The log names the core, and it is the one this test process runs (the harness does
 * the same), so the tests that compare the CLI's weights with in-process ones compare like with
 * like.
 */
OC_TEST(train_runs_blas_kernels_that_fit_the_cpu)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char out[700], log[700], *saved = NULL;
    snprintf(out, sizeof(out), "%s/blas.out", tmp);
    snprintf(log, sizeof(log), "%s/blas.jsonl", tmp);
    struct oc_err err;
    char *ds = cli_dataset();
    if (!ds)
        return;
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set)
        saved = strdup(set);
    const char *set_here = saved;
    unsetenv("OPENBLAS_CORETYPE"); /* the child decides for itself; this process's is loaded */
    char *args[] = {getenv("OC_BIN"), "train", ds, "--epochs", "1", "--quiet", "--log", log, NULL};
    OC_CHECK(proc_wait(proc_spawn(args, out)) == 0);
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    char *json = NULL;
    size_t len;
    OC_CHECK_OK(oc_read_file(log, 0, &json, &len, &err), &err);
    const char *key = json ? strstr(json, "\"blas_core\":\"") : NULL;
    OC_CHECK(key != NULL);
    if (key) {
        char core[64];
        key += strlen("\"blas_core\":\"");
        size_t n = strcspn(key, "\"");
        snprintf(core, sizeof(core), "%.*s", (int)(n < 63 ? n : 63), key);
        if (oc_nn_blas_core_pick(core, oc_nn_cpu_level_detect()))
            fprintf(stderr, "  the CLI ran OpenBLAS's %s kernels on this CPU\n", core);
        OC_CHECK(oc_nn_blas_core_pick(core, oc_nn_cpu_level_detect()) == NULL);
        if (!set_here || strcasecmp(set_here, core) == 0) /* not a core the user chose */
            OC_CHECK(strcmp(core, oc_nn_blas_core()) == 0);
    }
    oc_free(json);
    free(saved);
}

/* A strategy's refusal of a training option is a bad option too: exit 2, naming it. */
OC_TEST(strategy_refusing_an_option_exits_2)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char *ds = cli_dataset();
    if (!ds)
        return;
    char out[700], errp[700];
    snprintf(out, sizeof(out), "%s/refuse.out", oc_test_tmpdir());
    snprintf(errp, sizeof(errp), "%s/refuse.err", oc_test_tmpdir());
    char *argv[] = {getenv("OC_BIN"),  "train", ds,         "--strategy", "ginex",
                    "--mem-budget",    "64M",   "--epochs", "1",          "--quiet",
                    "--reuse-samples", NULL};
    OC_CHECK(proc_wait(proc_spawn2(argv, out, errp)) == 2);
    char *text = NULL;
    size_t len;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(errp, 0, &text, &len, &err), &err);
    OC_CHECK(text && strstr(text, "--reuse-samples is not supported"));
    oc_free(text);
}

OC_TEST(every_command_has_help)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *cmds[] = {"demo", "generate", "import", "info", "train", "report"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char *args[] = {(char *)cmds[i], "--help", NULL};
        char *text = NULL;
        OC_CHECK(run_cli(args, &text) == 0);
        oc_free(text);
    }
    char *args[] = {"--help", NULL};
    char *text = NULL;
    OC_CHECK(run_cli(args, &text) == 0);
    oc_free(text);
}

OC_TEST_MAIN()
