/*
 * main.c — `offcore <subcommand>`: dispatch, the stderr log sink and the
 * uniform way errors become messages and exit codes.
 *
 * Place in the data flow: cli, the top layer; it calls the library and is the
 * only code that prints or exits.
 * Thread-safety: the log sink may be called from library threads; it writes
 * whole lines with one fprintf call. Interrupts are taken by signals.c's
 * thread, started first.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/core.h"
#include "offcore/nn.h"
#include "offcore/progress.h"

#define OC_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"demo", cmd_demo, "generate the built-in default dataset and run the main job on it"},
    {"generate", cmd_generate, "generate a synthetic graph dataset of any size"},
    {"generate-kg", cmd_generate_kg, "generate a synthetic inductive knowledge graph of any size"},
    {"import", cmd_import, "import text|ogb|graphbolt|npy|kg data into an offcore dataset"},
    {"info", cmd_info, "validate a dataset and print counts, sizes, degrees, classes"},
    {"layout", cmd_layout, "copy a dataset with its feature rows in a locality order"},
    {"partition", cmd_partition, "cut a dataset into parts for distributed training (METIS)"},
    {"train", cmd_train, "train a GNN (GraphSAGE, GCN, GAT) on a dataset"},
    {"kg-train", cmd_kg_train, "train RED-GNN on a KG dataset; filtered MRR, Hits@1, Hits@10"},
    {"report", cmd_report, "training logs and bench results as one self-contained HTML page"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: offcore <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`offcore <command> --help` describes each command's options.\n");
}

static void log_to_stderr(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    static const char *names[] = {"debug", "info", "warning", "error"};
    char safe[4 * 1024];
    cli_safe_text(msg, safe, sizeof(safe));
    oc_progress_hold(); /* a bar on the terminal would run into the message */
    fprintf(stderr, "offcore: %s: %s\n", names[level], safe);
    oc_progress_release();
}

void cli_log_init(int verbose)
{
    oc_log_set_callback(log_to_stderr, NULL, verbose ? OC_LOG_DEBUG : OC_LOG_INFO);
}

void cli_log_warnings_only(void)
{
    oc_log_set_callback(log_to_stderr, NULL, OC_LOG_WARN);
}

int cli_fail(const struct oc_err *err)
{
    char safe[4 * sizeof(err->msg)];
    fprintf(stderr, "offcore: error: %s\n",
            err->msg[0] ? cli_safe_text(err->msg, safe, sizeof(safe)) : oc_status_str(err->status));
    return err->status == OC_ERR_ARG ? 2 : 1; /* a bad value the library found: as the CLI's */
}

int main(int argc, char **argv)
{
    oc_nn_blas_core_reexec(argv); /* first: before our threads, while nothing is open */
    cli_signals_init();
    cli_log_init(0);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("offcore %s\n", OC_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "offcore: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
