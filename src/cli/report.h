/*
 * report.h — private to the command-line tool: `offcore report`, one
 * self-contained HTML page (inline CSS and SVG; no script, no URL, nothing
 * fetched) drawn from `train --log` / `kg-train --log` JSON-lines logs and
 * the `--json` results of bench/ooc_bench and bench/kg_bench.
 *
 *   LOG.jsonl ... ─ report_load.c ─> struct report ─ report_html.c ─> page
 *   BENCH.json ..─┘   (cJSON trees)                  └ report_svg.c: charts
 *
 * Every data point is an SVG element of class "pt" carrying data-run,
 * data-series, data-x and data-y and a <title> (the hover text), and every
 * chart's <svg class="chart"> says how many it holds (data-points), so tests
 * and readers can check that nothing was dropped.
 *
 * Place in the data flow: cli, the top; reads files and writes one file.
 * Thread-safety: single-threaded (main thread).
 * Ownership: a struct report owns its cJSON trees (report_deinit frees them).
 */
#ifndef OFFCORE_CLI_REPORT_H
#define OFFCORE_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON;
struct oc_err;

/* One training run: a log's epoch objects in file order and its final line. */
struct report_run {
    char label[1024]; /* the file's name without .jsonl; its path when names repeat */
    char path[1024];
    struct cJSON **epochs;
    size_t n_epochs;
    struct cJSON *final; /* {"final": true, ...}; NULL when the run did not finish */
};

/* One bench result file: {"bench", "metric", "unit", "references", "rows"}. */
struct report_bench {
    char label[1024];
    char path[1024];
    struct cJSON *root;
};

struct report {
    struct report_run *runs;
    size_t n_runs;
    struct report_bench *benches;
    size_t n_benches;
};

/*
 * Adds the file at path to rep: a bench result (one JSON object with a
 * "bench" key) or a JSON-lines training log. Errors name the file and, for a
 * log, the line: not JSON, not an object, neither an epoch nor the final
 * line, or no epoch at all; for a bench file the member at fault.
 */
int report_load(struct report *rep, const char *path, struct oc_err *err);
/* Gives runs whose file names repeat their paths as labels. */
void report_label_runs(struct report *rep);
void report_deinit(struct report *rep);

/* The number at a dotted path ("features.hit_ratio.cpu") of o; 0 if it is absent or null. */
int report_number(const struct cJSON *o, const char *path, double *out);

/* Writes the page for rep (at least one run or bench) to f; -1 if f failed. */
int report_write_html(const struct report *rep, FILE *f);

/*
 * Loads inputs[0 .. n) and writes the page to out atomically (temporary,
 * fsync, rename). The whole of `offcore report`; `demo` calls it too.
 */
int cli_report(const char *out, const char *const *inputs, size_t n, struct oc_err *err);

/* ---- SVG (report_svg.c) ------------------------------------------------- */

enum report_unit { REPORT_PLAIN, REPORT_BYTES, REPORT_SECONDS, REPORT_RATIO };

/* A chart's frame: its id (data-chart), title and how its y values read. */
struct report_axes {
    const char *id;
    const char *title;
    const char *x_label;
    enum report_unit unit;
    int from_zero; /* y axis starts at 0 (else at the data's least value) */
};

/* One line: a series of one run, points (x[i], y[i]). */
struct report_line {
    const char *run;
    const char *series;
    unsigned color, dash; /* indices into the palettes */
    const double *x, *y;
    size_t n;
};

/* One stacked bar: a run's epoch split into named segments, mark = its total time. */
struct report_stack {
    const char *run;
    unsigned run_idx, color; /* position in the epoch's group; outline colour */
    double x;
    const char *const *names;
    const unsigned *seg_colors;
    const double *values;
    size_t n;
    double mark; /* drawn as a tick across the bar; < 0: none */
};

/* One horizontal bar of a bench chart; failed rows carry why instead of a value. */
struct report_hbar {
    const char *label;
    double value;
    const char *failed; /* NULL, or the reason the row has no value */
};

struct report_ref {
    const char *name;
    double value;
};

const char *report_color(unsigned i);
const char *report_dash(unsigned i);
/* Writes s HTML-escaped (& < > " '), as UTF-8 with invalid bytes as '?'. */
void report_esc(FILE *f, const char *s);
/* A value as the axis shows it ("1.5 GiB", "2.31 s", "0.873"). */
void report_fmt(char *buf, size_t n, double v, enum report_unit unit);

void report_svg_lines(FILE *f, const struct report_axes *a, const struct report_line *lines,
                      size_t n_lines);
void report_svg_stacks(FILE *f, const struct report_axes *a, const struct report_stack *bars,
                       size_t n_bars, unsigned n_runs);
void report_svg_hbars(FILE *f, const struct report_axes *a, const struct report_hbar *bars,
                      size_t n_bars, const struct report_ref *refs, size_t n_refs);

#endif
