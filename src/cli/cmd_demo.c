/*
 * cmd_demo.c — `offcore demo`: generate the built-in default dataset into a
 * cache directory (once; later runs reuse it after validating it) and run
 * the main job on it: print its summary, train GraphSAGE on it with the
 * defaults of `offcore train` for 10 epochs with every feature in RAM, then
 * train the same model out of core: `static` (degree-ranked row cache, misses
 * read with O_DIRECT) under the smallest --mem-budget it accepts (found with
 * dry runs) plus a tenth of the features, and compare epoch times, bytes
 * read, peak RSS and weights_sha256; both runs log (`--log`) into a report
 * directory, drawn at the end by `offcore report` (report.html, its path
 * printed). It deletes nothing: it writes the dataset only into a path that
 * does not exist yet or is an empty directory, and refuses a file, a
 * non-empty directory or a damaged dataset; the report directory may hold
 * only the files a demo writes there (it rewrites them).
 *
 * Place in the data flow: cli → dataset (generate, open, info) → train, then
 * cli's report (report.h).
 * Thread-safety: main thread.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "offcore/generate.h"
#include "offcore/io.h"
#include "offcore/store.h"
#include "offcore/train.h"

#define DEMO_EPOCHS   10
#define DEMO_STRATEGY "static"
#define DEMO_STEP     (256u << 10) /* precision of the smallest budget */

/* One demo run: the epoch lines as `train` prints them, and what the summary needs. */
struct demo_run {
    struct cli_epoch_line line;
    double train_s;      /* the last epoch's training time */
    uint64_t read_bytes; /* the last epoch's feature bytes read from disk */
    uint64_t peak_rss;   /* VmHWM after the run (reset before it where the kernel allows) */
    struct oc_train_result res;
};

static void demo_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct demo_run *d = ctx;
    cli_print_epoch(&d->line, st);
    d->train_s = st->time_s - st->eval_s;
    d->read_bytes = st->store.read_bytes;
}

/* Resets the process's peak RSS (Linux: clear_refs 5); 0 if it was reset. */
static int demo_reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* VmHWM of this process in bytes (0 if unknown). */
static uint64_t demo_peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* The files a demo writes into its report directory (and the only ones it may find there). */
static const char *const demo_report_files[] = {"memory.jsonl", DEMO_STRATEGY ".jsonl",
                                                "report.html"};
#define DEMO_N_REPORT_FILES (sizeof(demo_report_files) / sizeof(demo_report_files[0]))

/*
 * Trains the demo's model on path with strategy under budget (0: none), dry
 * or not, logging to report_dir/<strategy>.jsonl when report_dir is set.
 */
static int demo_train(const char *path, const char *strategy, uint64_t budget, int dry, int quiet,
                      const char *report_dir, struct demo_run *d, struct oc_err *err)
{
    struct oc_train_opts o;
    oc_train_opts_default(OC_NN_MODEL_SAGE, &o);
    o.epochs = DEMO_EPOCHS;
    o.strategy = strategy;
    char log[4200];
    if (report_dir) {
        if (snprintf(log, sizeof(log), "%s/%s.jsonl", report_dir, strategy) >= (int)sizeof(log))
            return OC_ERR(err, OC_ERR_ARG, "%s: report path too long", report_dir);
        o.log_path = log;
    }
    o.mem_budget = budget;
    o.dry_run = dry;
    memset(d, 0, sizeof(*d));
    d->line.show_io = strcmp(strategy, "memory") != 0;
    int rc = oc_store_strategy_find(strategy, &d->line.strategy, err);
    if (rc)
        return rc;
    struct oc_progress *bar = NULL;
    if (!dry && (rc = oc_progress_new(quiet ? NULL : stderr, &bar, err)))
        return rc;
    int reset = dry ? -1 : demo_reset_peak_rss();
    oc_mem_reset_peak(); /* the log's accountant peak: this run's, not the one before */
    oc_mem_set_budget(budget);
    rc = oc_train_run(path, &o, dry ? NULL : demo_epoch, d, bar, &d->res, err);
    oc_mem_set_budget(0);
    oc_progress_free(bar);
    d->peak_rss = reset == 0 ? demo_peak_rss() : 0;
    return rc;
}

/*
 * The smallest budget the demo's out-of-core run accepts, to DEMO_STEP: dry
 * runs (dataset, measured batch, store, pipeline; no epoch), doubling from
 * 16 MiB and then bisecting.
 */
static int demo_smallest_budget(const char *path, uint64_t *out, struct oc_err *err)
{
    struct demo_run d;
    uint64_t lo = 0, hi = 16u << 20;
    int rc;
    cli_log_warnings_only(); /* each dry run would log its probe */
    while ((rc = demo_train(path, DEMO_STRATEGY, hi, 1, 1, NULL, &d, err)) == OC_ERR_BUDGET ||
           rc == OC_ERR_NOMEM) {
        if (hi >= (64ull << 30))
            return rc;
        lo = hi;
        hi *= 2;
    }
    if (rc)
        return rc;
    while (hi - lo > DEMO_STEP) {
        uint64_t mid = lo + (hi - lo) / 2;
        rc = demo_train(path, DEMO_STRATEGY, mid, 1, 1, NULL, &d, err);
        if (rc == OC_OK)
            hi = mid;
        else if (rc == OC_ERR_BUDGET || rc == OC_ERR_NOMEM)
            lo = mid;
        else
            return rc;
    }
    *out = hi;
    cli_log_init(0);
    return OC_OK;
}

/* The in-RAM run, then the out-of-core one, then the comparison (logged into report_dir). */
static int demo_compare(const char *path, uint64_t feat_bytes, int quiet, const char *report_dir,
                        struct oc_err *err)
{
    struct demo_run mem, ooc;
    printf("\ntraining in RAM: offcore train %s --model sage --epochs %d\n", path, DEMO_EPOCHS);
    fflush(stdout);
    int rc = demo_train(path, "memory", 0, 0, quiet, report_dir, &mem, err);
    if (rc)
        return rc;
    printf("Test Acc at best Val Acc (epoch %u, val %.4f): %.4f\nweights_sha256 %s\n",
           mem.res.best_epoch, mem.res.best_val_acc, mem.res.test_acc_at_best_val,
           mem.res.weights_sha256);
    uint64_t smallest;
    if ((rc = demo_smallest_budget(path, &smallest, err)))
        return rc;
    uint64_t budget = smallest + feat_bytes / 10;
    char a[32], b[32], c[32];
    printf("\nout of core: the smallest --mem-budget %s accepts here is %s; with a tenth of the "
           "features (%s) on top:\noffcore train %s --model sage --epochs %d --strategy %s "
           "--mem-budget %" PRIu64 "\n",
           DEMO_STRATEGY, oc_format_size(smallest, a, sizeof(a)),
           oc_format_size(feat_bytes / 10, b, sizeof(b)), path, DEMO_EPOCHS, DEMO_STRATEGY, budget);
    fflush(stdout);
    if ((rc = demo_train(path, DEMO_STRATEGY, budget, 0, quiet, report_dir, &ooc, err)))
        return rc;
    printf("\n%-28s %12s %12s %12s  %s\n", "run", "epoch time", "read/epoch", "peak RSS",
           "weights_sha256");
    printf("%-28s %11.2fs %12s %12s  %s\n", "memory (features in RAM)", mem.train_s, "-",
           mem.peak_rss ? oc_format_size(mem.peak_rss, a, sizeof(a)) : "n/a",
           mem.res.weights_sha256);
    char label[64];
    snprintf(label, sizeof(label), "%s, budget %s", DEMO_STRATEGY,
             oc_format_size(budget, c, sizeof(c)));
    printf("%-28s %11.2fs %12s %12s  %s\n", label, ooc.train_s,
           oc_format_size(ooc.read_bytes, a, sizeof(a)),
           ooc.peak_rss ? oc_format_size(ooc.peak_rss, b, sizeof(b)) : "n/a",
           ooc.res.weights_sha256);
    int same = strcmp(mem.res.weights_sha256, ooc.res.weights_sha256) == 0;
    printf("out of core / in RAM epoch time: %.2fx; the weights are %s\n",
           mem.train_s > 0 ? ooc.train_s / mem.train_s : 0.0,
           same ? "identical (the bit-for-bit rule)" : "DIFFERENT: please report this");
    return same ? OC_OK : OC_ERR(err, OC_ERR_INTERNAL, "demo: the out-of-core weights differ");
}

/* Whether path is a directory with no entries (1), has entries (0), or cannot be read (-1). */
static int demo_dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int empty = 1;
    struct dirent *de;
    while (empty && (de = readdir(d)))
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/*
 * Decides what demo may do with path, deleting nothing: a valid dataset is
 * opened into *ds (reused); a missing path or an empty directory is left for
 * generation (*ds stays NULL); anything else (a file, a directory with other
 * contents, a damaged dataset) is refused with exit code 1 and a message
 * naming it, so demo never removes what it did not create.
 */
static int demo_check_dir(const char *path, int user_dir, struct oc_dataset **ds,
                          struct oc_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "offcore demo: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "offcore demo: %s exists and is not a directory; demo writes only into a new "
                "or empty directory (choose another --dir)\n",
                path);
        return 1;
    }
    int empty = demo_dir_is_empty(path);
    if (empty == 1)
        return 0;
    if (empty < 0) {
        fprintf(stderr, "offcore demo: %s: cannot read the directory: %s\n", path, strerror(errno));
        return 1;
    }
    if (oc_dataset_open(path, OC_DS_OPEN_DEFAULT, ds, err) == OC_OK)
        return 0;
    fprintf(stderr,
            "offcore demo: %s is not a valid offcore dataset (%s); demo deletes nothing it did "
            "not create, so it stops here: %s\n",
            path, err->msg,
            user_dir ? "give a new or empty --dir, or check that directory"
                     : "remove that directory to have it generated again");
    return 1;
}

/*
 * Whether the demo may write its report into dir: it does not exist, or holds
 * only files a demo writes there (0); anything else is refused (1, printed),
 * so demo never overwrites a file it did not write.
 */
static int demo_check_report_dir(const char *dir)
{
    struct stat st;
    int found = stat(dir, &st) == 0;
    if (!found && errno == ENOENT)
        return 0;
    DIR *d = found && S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
    if (!d) {
        fprintf(stderr,
                "offcore demo: %s: %s; the report goes into a new directory or one "
                "holding an earlier demo's report (choose another --report)\n",
                dir,
                !found || S_ISDIR(st.st_mode) ? strerror(errno) : "exists and is not a directory");
        return 1;
    }
    struct dirent *de;
    const char *other = NULL;
    while (!other && (de = readdir(d))) {
        int ours = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        for (size_t i = 0; i < DEMO_N_REPORT_FILES; i++) { /* or a temporary of one (killed) */
            size_t k = strlen(demo_report_files[i]);
            ours |= strncmp(de->d_name, demo_report_files[i], k) == 0 &&
                    (de->d_name[k] == '\0' || strncmp(de->d_name + k, ".tmp-", 5) == 0);
        }
        if (!ours)
            other = de->d_name;
    }
    if (other) {
        char safe[1024];
        fprintf(stderr,
                "offcore demo: %s holds %s, which no demo wrote; the report goes into a new "
                "directory or one holding an earlier demo's report (choose another --report)\n",
                dir, cli_safe_text(other, safe, sizeof(safe)));
    }
    closedir(d);
    return other ? 1 : 0;
}

/* Draws report_dir's logs into report_dir/report.html and prints its path. */
static int demo_report(const char *report_dir, struct oc_err *err)
{
    char in[2][4200], out[4200];
    const char *inputs[2] = {in[0], in[1]};
    for (int i = 0; i < 2; i++)
        snprintf(in[i], sizeof(in[i]), "%s/%s", report_dir, demo_report_files[i]);
    snprintf(out, sizeof(out), "%s/%s", report_dir, demo_report_files[2]);
    int rc = cli_report(out, inputs, 2, err);
    if (rc == OC_OK)
        printf("\nreport (offcore report %s %s -o %s):\n%s\n", in[0], in[1], out, out);
    return rc;
}

int cmd_demo(int argc, char **argv)
{
    const char *dir = NULL, *report_arg = NULL;
    int quiet = 0;
    const struct cli_opt opts[] = {
        {"dir", CLI_STR, &dir, "DIR",
         "where the demo dataset is cached (default $XDG_CACHE_HOME/offcore/demo-v1, else "
         "~/.cache/offcore/demo-v1)",
         NULL},
        {"report", CLI_STR, &report_arg, "DIR",
         "where the runs' logs (memory.jsonl, static.jsonl) and report.html go (default: the "
         "dataset directory's path + \"-report\"); a new directory or an earlier demo's",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no progress output (a bar on a terminal, lines elsewhere)", NULL},
    };
    const struct cli_cmd cmd = {
        "demo",
        "[options]",
        "Generate the default dataset (100,000 nodes, average degree 15, 128-dim f32 features,\n"
        "10 classes, seed 0) once into a cache directory, validate and summarize it, train\n"
        "GraphSAGE on it for 10 epochs in RAM (`offcore train DIR --epochs 10`), then train it\n"
        "again out of core (`--strategy static` under the smallest --mem-budget it accepts plus\n"
        "a tenth of the features) and compare epoch time, bytes read, peak RSS and weights;\n"
        "both runs' logs are drawn into report.html (`offcore report`), whose path it prints.",
        NULL,
        opts,
        sizeof(opts) / sizeof(opts[0]),
        0,
        0,
        NULL};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    cli_log_init(0);
    struct oc_err err;
    oc_err_clear(&err);
    char path[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir)
        n = snprintf(path, sizeof(path), "%s", dir);
    else if (xdg && *xdg)
        n = snprintf(path, sizeof(path), "%s/offcore/demo-v1", xdg);
    else
        n = snprintf(path, sizeof(path), "%s/.cache/offcore/demo-v1", home ? home : ".");
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fprintf(stderr, "offcore demo: cache path is too long\n");
        return 2;
    }
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    char report_dir[sizeof(path) + 16];
    snprintf(report_dir, sizeof(report_dir), "%s%s", report_arg ? report_arg : path,
             report_arg ? "" : "-report");
    if (demo_check_report_dir(report_dir))
        return 1;
    struct oc_dataset *ds = NULL;
    if ((rc = demo_check_dir(path, dir != NULL, &ds, &err)))
        return rc;
    if (!ds) {
        struct oc_generate_opts o;
        oc_generate_opts_default(&o);
        char parent[sizeof(path)];
        memcpy(parent, path, sizeof(path));
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            if (oc_mkdir_p(parent, &err) != OC_OK)
                return cli_fail(&err);
        }
        if (rmdir(path) != 0 && errno != ENOENT) { /* an empty --dir: generate writes it anew */
            fprintf(stderr, "offcore demo: %s: cannot replace the empty directory: %s\n", path,
                    strerror(errno));
            return 1;
        }
        printf("generating the demo dataset into %s\n", path);
        struct oc_progress *bar = NULL;
        if (oc_progress_new(quiet ? NULL : stderr, &bar, &err) != OC_OK)
            return cli_fail(&err);
        double t0 = oc_now_s();
        rc = oc_generate(&o, path, bar, &err);
        oc_progress_free(bar);
        if (rc != OC_OK)
            return cli_fail(&err);
        printf("generated in %.1f s\n", oc_now_s() - t0);
        if (oc_dataset_open(path, OC_DS_OPEN_DEFAULT, &ds, &err) != OC_OK)
            return cli_fail(&err);
    }
    rc = cli_print_dataset(ds, &err);
    uint64_t feat_bytes = 0;
    if (rc == OC_OK) {
        const struct oc_manifest *m = oc_dataset_manifest(ds);
        feat_bytes = m->n_nodes * m->feat_dim * oc_dtype_size(m->feat_dtype);
    }
    oc_dataset_free(ds);
    if (rc != OC_OK || (rc = oc_mkdir_p(report_dir, &err)) != OC_OK ||
        (rc = demo_compare(path, feat_bytes, quiet, report_dir, &err)) != OC_OK ||
        (rc = demo_report(report_dir, &err)) != OC_OK)
        return cli_fail(&err);
    return 0;
}
