/*
 * cli.h — private to the command-line tool: the option parser shared by the
 * subcommands and the subcommand entry points.
 *
 * Place in the data flow: cli, the top; the only layer that prints and exits.
 * Thread-safety: single-threaded (main thread).
 */
#ifndef OFFCORE_CLI_H
#define OFFCORE_CLI_H

#include <stddef.h>
#include <stdint.h>

enum cli_opt_type {
    CLI_FLAG,   /* int set to 1 */
    CLI_STR,    /* const char * */
    CLI_U64,    /* uint64_t, decimal */
    CLI_U32,    /* uint32_t, decimal */
    CLI_F64,    /* double */
    CLI_SIZE,   /* uint64_t bytes, "512M", "4G" */
    CLI_CHOICE, /* const char * restricted to `choices` ("a|b|c") */
};

struct cli_opt {
    const char *name; /* without leading dashes */
    enum cli_opt_type type;
    void *target;
    const char *metavar;
    const char *help;
    const char *choices; /* CLI_CHOICE only */
};

struct cli_cmd {
    const char *name;    /* "generate" */
    const char *usage;   /* "[options] OUT" */
    const char *summary; /* one line */
    const char *details; /* extra paragraph for --help, may be NULL */
    const struct cli_opt *opts;
    size_t n_opts;
    unsigned min_pos, max_pos; /* positional argument counts */
    int *given;                /* optional: given[k] = 1 when opts[k] appears */
};

/*
 * Parses argv (after the subcommand name). Returns 0 on success with the
 * positionals in pos[0..*n_pos), 1 if --help was printed, -1 on error (a
 * message has been printed to stderr).
 */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, const char **pos, unsigned *n_pos);
void cli_print_help(const struct cli_cmd *cmd);

/* Prints "offcore: error: <msg>" for a library error record; returns the exit code: 2 for a
   bad value (OC_ERR_ARG), else 1. */
struct oc_err;
int cli_fail(const struct oc_err *err);

/*
 * Makes SIGINT, SIGTERM and SIGHUP remove this run's temporaries and exit
 * with 128 + the signal (signals.c: a handler wakes a watcher thread). Call
 * first in main. Returns 0, or -1 if the signals keep their default actions.
 */
int cli_signals_init(void);

/*
 * Copies s into buf (n bytes) with control characters (C0, DEL, UTF-8 C1)
 * written as \xNN, truncating to fit; returns buf. For text read from files.
 */
const char *cli_safe_text(const char *s, char *buf, size_t n);

/* Installs the stderr log sink; verbose enables debug messages. */
void cli_log_init(int verbose);
/* The same sink, warnings and errors only (for runs whose progress is not news). */
void cli_log_warnings_only(void);

int cmd_generate(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_layout(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_kg_import(int argc, char **argv);
int cmd_generate_kg(int argc, char **argv);
int cmd_kg_train(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* ---- feature layouts (laid_out.c) ---- */

#define CLI_LAYOUT_PART_NODES 1000u      /* --part-nodes default: METIS parts' size */
#define CLI_PART_NODES_UNSET  UINT64_MAX /* --part-nodes not given */
/* The --layout and --part-nodes entries of a command that writes a dataset. */
#define CLI_LAYOUT_OPTS(layout, part_nodes)                                                      \
    {"layout",                                                                                   \
     CLI_CHOICE,                                                                                 \
     &(layout),                                                                                  \
     "ORDER",                                                                                    \
     "write the feature rows in this locality order, as `offcore layout` would (the dataset is " \
     "written beside OUT first, then laid out into OUT: twice its size on disk for a while)",    \
     "degree|bfs|partition|lpa"},                                                                \
    {                                                                                            \
        "part-nodes", CLI_U64, &(part_nodes), "N",                                               \
            "with --layout partition: nodes per part; lpa: a quarter of the largest community "  \
            "(default 1000)",                                                                    \
            NULL                                                                                 \
    }
struct oc_plan_order_opts;
/*
 * --layout ORDER (NULL: not given) and --part-nodes N (CLI_PART_NODES_UNSET:
 * not given) into o; -1 with a message naming cmd for a bad order, a
 * --part-nodes of 0, or --part-nodes without --layout.
 */
int cli_layout_opts(const char *cmd, const char *order, uint64_t part_nodes,
                    struct oc_plan_order_opts *o);
/* Lays the dataset in dir out into the new directory out (plan_dir NULL: dir/plan). */
int cli_layout_run(const char *dir, const char *out, const struct oc_plan_order_opts *o,
                   const char *plan_dir, int quiet, struct oc_err *err);
/* Writes a dataset into dir (a new directory), as import or generate do. */
typedef int (*cli_write_fn)(void *ctx, const char *dir, struct oc_err *err);
/*
 * write() into a temporary sibling of out, then lays it out into out (order o)
 * and removes the temporary; out existing is refused before anything is written.
 */
int cli_write_laid_out(const char *out, const struct oc_plan_order_opts *o, int quiet,
                       cli_write_fn write, void *ctx, struct oc_err *err);

/* The epoch line of `train`; ctx is a struct cli_epoch_line. */
struct oc_train_epoch_stats;
struct cli_epoch_line {
    int show_io;       /* out-of-core: add the I/O summary and the strategy's own figures */
    uint32_t strategy; /* index in the store registry: whose stats table to print */
    int metric;        /* enum oc_train_metric shown for validation (0: accuracy) */
    int is_auto;       /* --strategy auto: the stats table is the pick's (st->strategy) */
};
void cli_print_epoch(void *ctx, const struct oc_train_epoch_stats *st);

/* Prints the summary of an opened dataset (shared by info and demo). */
struct oc_dataset;
int cli_print_dataset(const struct oc_dataset *ds, struct oc_err *err);

#endif
