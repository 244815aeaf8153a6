/*
 * report_html.c — the page of `offcore report`: which charts it has and
 * which log keys feed them, the runs' summary table, the bench comparisons,
 * and the page around them (inline CSS; no script, no URL).
 *
 *   Loss per epoch            loss
 *   Accuracy per epoch        train_acc, val_acc, test_acc (kg-train: valid_mrr, test_mrr)
 *   Time per epoch            stacked stages.* seconds (kg-train: slicing_s .. eval_s),
 *                             a tick at time_s
 *   Bytes read / amplification / hit ratio per epoch   features.* (kg-train: bytes_read,
 *                             slice_hit_ratio)
 *   Memory per epoch          memory.budget_bytes, reserved (held + working set),
 *                             peak_mem_bytes, peak_rss_bytes
 *   Bench comparison          rows' value against the references (memory, the bound)
 *
 * Several runs share each chart: a colour per run, a dash per series.
 *
 * Place in the data flow: cli (report): struct report → report_svg.c → FILE.
 * Thread-safety: single-threaded.
 * Ownership: borrows the report; the point arrays are its own and freed here.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"

/* A plotted quantity: the number at path (plus path2's when set). */
struct series_def {
    const char *name;
    const char *path, *path2;
    int zero_is_none; /* 0 means "not set" (no budget): no point */
};

struct chart_def {
    const char *id, *title;
    enum report_unit unit;
    int from_zero;
    const struct series_def *series;
    size_t n_series;
};

static const struct series_def loss_s[] = {{"loss", "loss", NULL, 0}};
static const struct series_def acc_s[] = {
    {"train accuracy", "train_acc", NULL, 0}, {"validation accuracy", "val_acc", NULL, 0},
    {"test accuracy", "test_acc", NULL, 0},   {"validation MRR", "valid_mrr", NULL, 0},
    {"test MRR", "test_mrr", NULL, 0},
};
static const struct series_def read_s[] = {{"feature bytes read", "features.read_bytes", NULL, 0},
                                           {"bytes read", "bytes_read", NULL, 0}};
static const struct series_def amp_s[] = {
    {"read amplification", "features.amplification", NULL, 0}};
static const struct series_def hit_s[] = {
    {"CPU-cache hit ratio", "features.hit_ratio.cpu", NULL, 0},
    {"Slice Cache hit ratio", "slice_hit_ratio", NULL, 0}};
static const struct series_def mem_s[] = {
    {"budget", "memory.budget_bytes", NULL, 1},
    {"reserved (held + working set)", "memory.held_bytes", "memory.working_set_bytes", 1},
    {"accountant peak", "peak_mem_bytes", NULL, 0},
    {"peak RSS", "peak_rss_bytes", NULL, 0},
    {"accountant peak", "mem_peak_bytes", NULL, 0}, /* kg-train's name */
};
#define N(a) (sizeof(a) / sizeof(a[0]))
static const struct chart_def line_charts[] = {
    {"loss", "Loss per epoch", REPORT_PLAIN, 0, loss_s, N(loss_s)},
    {"accuracy", "Accuracy per epoch", REPORT_RATIO, 0, acc_s, N(acc_s)},
    {"read", "I/O: bytes read from disk per epoch (training gathers)", REPORT_BYTES, 1, read_s,
     N(read_s)},
    {"amplification", "I/O: read amplification per epoch (bytes read / requested from disk)",
     REPORT_PLAIN, 1, amp_s, N(amp_s)},
    {"hit-ratio", "I/O: cache hit ratio per epoch", REPORT_RATIO, 1, hit_s, N(hit_s)},
    {"memory", "Memory per epoch: budget, reserved, accountant peak, peak RSS", REPORT_BYTES, 1,
     mem_s, N(mem_s)},
};

/* The time split: pipeline stages (busy seconds, beside training) and the trainer's own. */
static const struct series_def stage_s[] = {
    {"sample", "stages.sample_s", NULL, 0},
    {"wait", "stages.wait_s", NULL, 0},
    {"gather", "stages.gather_s", NULL, 0},
    {"forward", "stages.forward_s", NULL, 0},
    {"backward", "stages.backward_s", NULL, 0},
    {"optimizer", "stages.optimizer_s", NULL, 0},
    {"evaluation", "stages.eval_s", NULL, 0},
    {"slicing", "slicing_s", NULL, 0},
    {"plan wait", "plan_wait_s", NULL, 0},
    {"extraction", "extract_s", NULL, 0},
    {"model", "model_s", NULL, 0},
    {"evaluation", "eval_s", NULL, 0},
};

static int series_value(const cJSON *epoch, const struct series_def *d, double *v)
{
    double b = 0;
    if (!report_number(epoch, d->path, v) || (d->path2 && !report_number(epoch, d->path2, &b)))
        return 0;
    *v += b;
    return !(d->zero_is_none && *v == 0);
}

static int epoch_x(const cJSON *epoch, double *x)
{
    return report_number(epoch, "epoch", x);
}

/* One line chart: a line per run and series with points; nothing when no run has any. */
static int line_chart(FILE *f, const struct report *rep, const struct chart_def *c)
{
    size_t cap = rep->n_runs * c->n_series, n = 0;
    struct report_line *lines = calloc(cap ? cap : 1, sizeof(*lines));
    if (!lines)
        return -1;
    int rc = 0;
    for (size_t r = 0; r < rep->n_runs && !rc; r++) {
        const struct report_run *run = &rep->runs[r];
        for (size_t s = 0; s < c->n_series && !rc; s++) {
            double *x = malloc(run->n_epochs * sizeof(*x)), *y = malloc(run->n_epochs * sizeof(*y));
            struct report_line *l = &lines[n];
            *l = (struct report_line){run->label, c->series[s].name, (unsigned)r, (unsigned)s, x, y,
                                      0};
            for (size_t e = 0; x && y && e < run->n_epochs; e++)
                if (epoch_x(run->epochs[e], &x[l->n]) &&
                    series_value(run->epochs[e], &c->series[s], &y[l->n]))
                    l->n++;
            if (!x || !y) {
                rc = -1;
                free(x), free(y);
            } else if (l->n) {
                n++;
            } else {
                free(x), free(y);
            }
        }
    }
    if (!rc && n) {
        struct report_axes a = {c->id, c->title, "epoch", c->unit, c->from_zero};
        report_svg_lines(f, &a, lines, n);
    }
    for (size_t i = 0; i < n; i++)
        free((void *)lines[i].x), free((void *)lines[i].y);
    free(lines);
    return rc;
}

/* One run's epoch as a stacked bar of the stages it logs. */
static size_t epoch_stack(const cJSON *epoch, const char **names, unsigned *colors, double *vals)
{
    size_t n = 0;
    for (size_t s = 0; s < N(stage_s); s++)
        if (report_number(epoch, stage_s[s].path, &vals[n])) {
            names[n] = stage_s[s].name;
            colors[n++] = 10 + (unsigned)s % 10; /* the lighter palette */
        }
    return n;
}

static int stage_chart(FILE *f, const struct report *rep)
{
    size_t n_bars = 0, n = 0;
    for (size_t r = 0; r < rep->n_runs; r++)
        n_bars += rep->runs[r].n_epochs;
    size_t per = N(stage_s);
    struct report_stack *bars = calloc(n_bars, sizeof(*bars));
    const char **names = malloc(n_bars * per * sizeof(*names));
    unsigned *colors = malloc(n_bars * per * sizeof(*colors));
    double *vals = malloc(n_bars * per * sizeof(*vals));
    int rc = bars && names && colors && vals ? 0 : -1;
    for (size_t r = 0; !rc && r < rep->n_runs; r++)
        for (size_t e = 0; e < rep->runs[r].n_epochs; e++) {
            const cJSON *ep = rep->runs[r].epochs[e];
            struct report_stack *b = &bars[n];
            size_t at = n * per;
            b->n = epoch_stack(ep, names + at, colors + at, vals + at);
            if (!b->n || !epoch_x(ep, &b->x))
                continue;
            b->run = rep->runs[r].label;
            b->run_idx = (unsigned)r;
            b->color = (unsigned)r;
            b->names = names + at;
            b->seg_colors = colors + at;
            b->values = vals + at;
            if (!report_number(ep, "time_s", &b->mark))
                b->mark = -1;
            n++;
        }
    if (!rc && n) {
        struct report_axes a = {"time",
                                "Time per epoch: sample and gather are the pipeline's busy "
                                "seconds beside training (they overlap it); the tick is the "
                                "epoch's time",
                                "epoch", REPORT_SECONDS, 1};
        report_svg_stacks(f, &a, bars, n, (unsigned)rep->n_runs);
    }
    free(bars), free(names), free(colors), free(vals);
    return rc;
}

static enum report_unit unit_of(const cJSON *root)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "unit");
    const char *s = cJSON_IsString(u) ? u->valuestring : "";
    return strcmp(s, "s") == 0 ? REPORT_SECONDS : strcmp(s, "B") == 0 ? REPORT_BYTES : REPORT_PLAIN;
}

static const char *str_of(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A bench result's rows against its references (report_load checked their shape). */
static int bench_chart(FILE *f, const struct report_bench *b, size_t idx)
{
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(b->root, "rows");
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(b->root, "references");
    size_t n_rows = (size_t)cJSON_GetArraySize(rows), n_refs = (size_t)cJSON_GetArraySize(refs);
    struct report_hbar *bars = calloc(n_rows, sizeof(*bars));
    struct report_ref *rf = calloc(n_refs ? n_refs : 1, sizeof(*rf));
    if (!bars || !rf) {
        free(bars), free(rf);
        return -1;
    }
    size_t i = 0;
    for (const cJSON *r = rows->child; r; r = r->next, i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "value");
        bars[i].label = str_of(r, "label", "?");
        bars[i].failed = cJSON_IsNumber(v) ? NULL : str_of(r, "failed", "no value");
        bars[i].value = cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
    i = 0;
    for (const cJSON *r = refs ? refs->child : NULL; r; r = r->next, i++) {
        rf[i].name = str_of(r, "name", "?");
        report_number(r, "value", &rf[i].value);
    }
    char id[32], title[3072];
    snprintf(id, sizeof(id), "bench-%zu", idx);
    snprintf(title, sizeof(title), "%s (%s): %s", str_of(b->root, "bench", "bench"), b->label,
             str_of(b->root, "title", ""));
    struct report_axes a = {id, title, str_of(b->root, "metric", "value"), unit_of(b->root), 1};
    report_svg_hbars(f, &a, bars, n_rows, rf, n_refs);
    free(bars), free(rf);
    return 0;
}

static void cell_str(FILE *f, const cJSON *o, const char *key)
{
    fprintf(f, "<td>");
    report_esc(f, o ? str_of(o, key, "") : "");
    fprintf(f, "</td>");
}

static void cell_num(FILE *f, const cJSON *o, const char *key, const char *alt)
{
    double v;
    fprintf(f, "<td class=\"num\">");
    if (o && (report_number(o, key, &v) || (alt && report_number(o, alt, &v))))
        fprintf(f, "%.4f", v);
    fprintf(f, "</td>");
}

static void run_table(FILE *f, const struct report *rep)
{
    fprintf(f, "<table>\n<tr><th>run</th><th>file</th><th>strategy</th><th>model</th>"
               "<th>epochs</th><th>final loss</th><th>best validation</th>"
               "<th>test at best validation</th><th>weights_sha256</th></tr>\n");
    for (size_t r = 0; r < rep->n_runs; r++) {
        const struct report_run *run = &rep->runs[r];
        const cJSON *fin = run->final;
        fprintf(f, "<tr><td><span class=\"swatch\" style=\"background:%s\"></span>",
                report_color((unsigned)r));
        report_esc(f, run->label);
        fprintf(f, "</td><td>");
        report_esc(f, run->path);
        fprintf(f, "</td>");
        cell_str(f, fin, "strategy");
        cell_str(f, fin, "model");
        fprintf(f, "<td class=\"num\">%zu%s</td>", run->n_epochs, fin ? "" : " (unfinished)");
        cell_num(f, run->epochs[run->n_epochs - 1], "loss", NULL);
        cell_num(f, fin, "best_val_acc", "valid_mrr");
        cell_num(f, fin, "test_acc_at_best_val", "test_mrr");
        const char *sha = fin ? str_of(fin, "weights_sha256", "") : "";
        fprintf(f, "<td><code title=\"");
        report_esc(f, sha);
        char head[17];
        snprintf(head, sizeof(head), "%s", sha);
        fprintf(f, "\">");
        report_esc(f, head);
        fprintf(f, "</code></td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;padding:0 "
    "16px;max-width:1000px;color:#222;"
    "background:#fff}h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid "
    "#ddd}figure{margin:16px 0}figcaption{font-weight:600;margin-bottom:4px}svg.chart{width:100%;"
    "height:auto;max-width:720px;display:block}.grid line{stroke:#e4e4e4}text{font-size:11px;"
    "fill:#444}.xlabel{font-size:12px}.ln{fill:none;stroke-width:2}.mark{stroke-width:2.5}"
    ".ref{stroke:#222;stroke-width:1.5;fill:#222}text.ref{stroke:none}.failed{fill:#c00}"
    "ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:4px 18px;"
    "font-size:12px}ul.legend svg{vertical-align:middle;margin-right:4px}.swatch{display:"
    "inline-block;width:11px;height:11px;margin-right:5px;vertical-align:middle;border:1px solid "
    "#888}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px "
    "6px;text-align:left}td.num{text-align:right}code{font-size:11px}";

int report_write_html(const struct report *rep, FILE *f)
{
    int rc = 0;
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>offcore report</title>\n<style>%s</style>\n</head>\n<body>\n"
            "<h1>offcore report</h1>\n",
            css);
    if (rep->n_runs) {
        fprintf(f, "<h2>Training runs</h2>\n");
        run_table(f, rep);
        for (size_t c = 0; c < 2 && !rc; c++)
            rc = line_chart(f, rep, &line_charts[c]);
        if (!rc)
            rc = stage_chart(f, rep);
        for (size_t c = 2; c < N(line_charts) && !rc; c++)
            rc = line_chart(f, rep, &line_charts[c]);
    }
    if (rep->n_benches)
        fprintf(f, "<h2>Strategy comparison</h2>\n");
    for (size_t b = 0; b < rep->n_benches && !rc; b++)
        rc = bench_chart(f, &rep->benches[b], b);
    fprintf(f, "</body>\n</html>\n");
    return rc || ferror(f) ? -1 : 0;
}
