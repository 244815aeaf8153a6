/*
 * report_svg.c — the charts of `offcore report` as inline SVG: lines (one
 * per run and series, a marker per point), stacked bars (an epoch's time
 * split, runs side by side) and horizontal bars against reference lines
 * (bench results). Axes get "nice" ticks (1, 2, 2.5, 5 x 10^k; bytes in
 * KiB/MiB/GiB); every point is an element of class "pt" with its data in
 * data-* attributes and a <title>, so the page needs no script.
 *
 * Place in the data flow: cli (report), below report_html.c.
 * Thread-safety: pure functions writing to the caller's FILE.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"
#include "offcore/core.h"

#define W      720.0
#define H      300.0
#define LEFT   78.0
#define RIGHT  16.0
#define TOP    14.0
#define BOTTOM 40.0
#define PW     (W - LEFT - RIGHT)
#define PH     (H - TOP - BOTTOM)

static const char *const colors[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", /* runs; then the stages' lighter ones */
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#c7c7c7",
};
static const char *const dashes[] = {"", "7 4", "2 3", "9 3 2 3", "1 5"};

const char *report_color(unsigned i)
{
    return colors[i % (sizeof(colors) / sizeof(colors[0]))];
}

const char *report_dash(unsigned i)
{
    return dashes[i % (sizeof(dashes) / sizeof(dashes[0]))];
}

void report_esc(FILE *f, const char *s)
{
    char buf[4096];
    oc_utf8_copy(buf, sizeof(buf), s);
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if (*p >= 0x20 && *p != 0x7F)
                fputc(*p, f);
        }
    }
}

/* The binary unit bytes read in: 1, 1024, 1024^2 ... with its name. */
static double byte_unit(double v, const char **name)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double u = 1;
    unsigned k = 0;
    while (k + 1 < 5 && fabs(v) >= u * 1024)
        u *= 1024, k++;
    *name = names[k];
    return u;
}

void report_fmt(char *buf, size_t n, double v, enum report_unit unit)
{
    const char *name;
    double u;
    switch (unit) {
    case REPORT_BYTES:
        u = byte_unit(v, &name);
        snprintf(buf, n, "%.4g %s", v / u, name);
        break;
    case REPORT_SECONDS:
        snprintf(buf, n, "%.4g s", v);
        break;
    default:
        snprintf(buf, n, "%.4g", v);
    }
}

/* Tick step for [lo, hi]: about 5 ticks at 1, 2, 2.5 or 5 x 10^k (of the byte unit). */
static double nice_step(double lo, double hi, enum report_unit unit)
{
    const char *name;
    double u = unit == REPORT_BYTES ? byte_unit(hi > -lo ? hi : -lo, &name) : 1;
    double raw = (hi - lo) / u / 5;
    if (!(raw > 0))
        return u;
    double p = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < 5; i++)
        if (raw <= m[i] * p * 1.0000001)
            return m[i] * p * u;
    return 10 * p * u;
}

struct scale {
    double x0, x1, y0, y1, step;
};

static double sx(const struct scale *s, double x)
{
    return LEFT + (x - s->x0) / (s->x1 - s->x0) * PW;
}

static double sy(const struct scale *s, double y)
{
    return TOP + PH - (y - s->y0) / (s->y1 - s->y0) * PH;
}

/* Rounds [lo, hi] out to ticks (widened when empty) and sets the step. */
static void y_range(struct scale *s, double lo, double hi, enum report_unit unit, int from_zero)
{
    if (from_zero && lo > 0)
        lo = 0;
    if (!(hi > lo)) {
        double pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
        lo = from_zero && lo >= 0 ? lo : lo - pad;
        hi += pad;
    }
    s->step = nice_step(lo, hi, unit);
    if (unit == REPORT_BYTES && s->step < 1)
        s->step = 1; /* no fractions of a byte */
    s->y0 = floor(lo / s->step + 1e-9) * s->step;
    s->y1 = ceil(hi / s->step - 1e-9) * s->step;
    if (s->y1 <= s->y0)
        s->y1 = s->y0 + s->step;
}

static void open_chart(FILE *f, const struct report_axes *a, size_t n_points, double height)
{
    fprintf(f, "<figure>\n<figcaption>");
    report_esc(f, a->title);
    fprintf(f,
            "</figcaption>\n<svg class=\"chart\" data-chart=\"%s\" data-points=\"%zu\" "
            "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"",
            a->id, n_points, W, height);
    report_esc(f, a->title);
    fprintf(f, "\">\n");
}

/* Horizontal grid lines and y tick labels of the plot area. */
static void y_axis(FILE *f, const struct scale *s, enum report_unit unit)
{
    char t[64];
    fprintf(f, "<g class=\"grid\">\n");
    for (double y = s->y0; y <= s->y1 + s->step * 1e-6; y += s->step) {
        double py = sy(s, y);
        report_fmt(t, sizeof(t), fabs(y) < s->step * 1e-9 ? 0 : y, unit);
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                LEFT, W - RIGHT, py, py, LEFT - 6, py + 4, t);
    }
    fprintf(f, "</g>\n");
}

static void x_label(FILE *f, const char *label)
{
    fprintf(f, "<text class=\"xlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
            LEFT + PW / 2, H - 4);
    report_esc(f, label);
    fprintf(f, "</text>\n");
}

/* One data point's attributes and hover text (run · series, x: value). */
static void point_data(FILE *f, const char *run, const char *series, double x, double y,
                       enum report_unit unit, const char *x_label_text)
{
    char v[64];
    report_fmt(v, sizeof(v), y, unit);
    fprintf(f, " data-run=\"");
    report_esc(f, run);
    fprintf(f, "\" data-series=\"");
    report_esc(f, series);
    fprintf(f, "\" data-x=\"%.10g\" data-y=\"%.10g\"><title>", x, y);
    report_esc(f, run);
    fputs(" \xc2\xb7 ", f);
    report_esc(f, series);
    fprintf(f, ", ");
    report_esc(f, x_label_text);
    fprintf(f, " %.10g: %s</title>", x, v);
}

static void legend_line(FILE *f, const char *color, const char *dash, const char *text)
{
    fprintf(f,
            "<li><svg width=\"28\" height=\"10\" aria-hidden=\"true\"><line x1=\"1\" x2=\"27\" "
            "y1=\"5\" y2=\"5\" stroke=\"%s\" stroke-width=\"2.5\" stroke-dasharray=\"%s\"/>"
            "</svg>",
            color, dash);
    report_esc(f, text);
    fprintf(f, "</li>\n");
}

void report_svg_lines(FILE *f, const struct report_axes *a, const struct report_line *lines,
                      size_t n_lines)
{
    struct scale s = {INFINITY, -INFINITY, 0, 0, 1};
    double lo = INFINITY, hi = -INFINITY;
    size_t n_points = 0;
    for (size_t i = 0; i < n_lines; i++)
        for (size_t k = 0; k < lines[i].n; k++, n_points++) {
            s.x0 = fmin(s.x0, lines[i].x[k]), s.x1 = fmax(s.x1, lines[i].x[k]);
            lo = fmin(lo, lines[i].y[k]), hi = fmax(hi, lines[i].y[k]);
        }
    if (!n_points)
        s.x0 = 0, s.x1 = 1, lo = 0, hi = 1;
    if (s.x1 <= s.x0)
        s.x0 -= 0.5, s.x1 += 0.5;
    y_range(&s, lo, hi, a->unit, a->from_zero);
    open_chart(f, a, n_points, H);
    y_axis(f, &s, a->unit);
    double xstep = ceil((s.x1 - s.x0) / 12);
    fprintf(f, "<g class=\"xaxis\">\n");
    for (double x = ceil(s.x0); x <= s.x1; x += xstep > 1 ? xstep : 1)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", sx(&s, x),
                TOP + PH + 16, x);
    fprintf(f, "</g>\n");
    x_label(f, a->x_label);
    for (size_t i = 0; i < n_lines; i++) {
        const struct report_line *l = &lines[i];
        fprintf(f, "<polyline class=\"ln\" stroke=\"%s\" stroke-dasharray=\"%s\" points=\"",
                report_color(l->color), report_dash(l->dash));
        for (size_t k = 0; k < l->n; k++)
            fprintf(f, "%s%.1f,%.1f", k ? " " : "", sx(&s, l->x[k]), sy(&s, l->y[k]));
        fprintf(f, "\"/>\n");
        for (size_t k = 0; k < l->n; k++) {
            fprintf(f, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"",
                    sx(&s, l->x[k]), sy(&s, l->y[k]), report_color(l->color));
            point_data(f, l->run, l->series, l->x[k], l->y[k], a->unit, a->x_label);
            fprintf(f, "</circle>\n");
        }
    }
    fprintf(f, "</svg>\n<ul class=\"legend\">\n");
    for (size_t i = 0; i < n_lines; i++) {
        char text[2200];
        snprintf(text, sizeof(text), "%s \xc2\xb7 %s", lines[i].run, lines[i].series);
        legend_line(f, report_color(lines[i].color), report_dash(lines[i].dash), text);
    }
    fprintf(f, "</ul>\n</figure>\n");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The distinct x values of the bars, sorted; returns their count (xs holds n_bars). */
static size_t distinct_x(const struct report_stack *bars, size_t n_bars, double *xs)
{
    for (size_t i = 0; i < n_bars; i++)
        xs[i] = bars[i].x;
    qsort(xs, n_bars, sizeof(*xs), cmp_double);
    size_t n = 0;
    for (size_t i = 0; i < n_bars; i++)
        if (n == 0 || xs[i] != xs[n - 1])
            xs[n++] = xs[i];
    return n;
}

static void stack_bar(FILE *f, const struct scale *s, const struct report_stack *b, double left,
                      double bw, const struct report_axes *a)
{
    double acc = 0;
    for (size_t k = 0; k < b->n; k++) {
        double y0 = sy(s, acc), y1 = sy(s, acc + b->values[k]);
        acc += b->values[k];
        fprintf(f,
                "<rect class=\"pt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\" stroke=\"%s\"",
                left, y1, bw, y0 - y1, report_color(b->seg_colors[k]), report_color(b->color));
        point_data(f, b->run, b->names[k], b->x, b->values[k], a->unit, a->x_label);
        fprintf(f, "</rect>\n");
    }
    if (b->mark >= 0) {
        char v[64];
        report_fmt(v, sizeof(v), b->mark, a->unit);
        fprintf(f,
                "<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\"><title>",
                left - 2, left + bw + 2, sy(s, b->mark), sy(s, b->mark), report_color(b->color));
        report_esc(f, b->run);
        fprintf(f, " \xc2\xb7 epoch time %.10g: %s</title></line>\n", b->x, v);
    }
}

void report_svg_stacks(FILE *f, const struct report_axes *a, const struct report_stack *bars,
                       size_t n_bars, unsigned n_runs)
{
    double *xs = malloc((n_bars ? n_bars : 1) * sizeof(*xs));
    size_t n_x = xs ? distinct_x(bars, n_bars, xs) : 0;
    struct scale s = {0, 1, 0, 0, 1};
    double hi = 0;
    size_t n_points = 0;
    for (size_t i = 0; i < n_bars; i++) {
        double t = 0;
        for (size_t k = 0; k < bars[i].n; k++)
            t += bars[i].values[k];
        hi = fmax(hi, fmax(t, bars[i].mark));
        n_points += xs ? bars[i].n : 0;
    }
    y_range(&s, 0, hi, a->unit, 1);
    open_chart(f, a, n_points, H);
    y_axis(f, &s, a->unit);
    double slot = PW / (double)(n_x ? n_x : 1);
    double bw = slot * 0.8 / (n_runs ? n_runs : 1);
    size_t every = n_x > 24 ? (n_x + 23) / 24 : 1;
    fprintf(f, "<g class=\"xaxis\">\n");
    for (size_t j = 0; j < n_x; j += every)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.10g</text>\n",
                LEFT + slot * ((double)j + 0.5), TOP + PH + 16, xs[j]);
    fprintf(f, "</g>\n");
    x_label(f, a->x_label);
    for (size_t i = 0; xs && i < n_bars; i++) {
        size_t j = 0;
        while (j + 1 < n_x && xs[j] != bars[i].x)
            j++;
        double left = LEFT + slot * (double)j + slot * 0.1 + bw * bars[i].run_idx;
        stack_bar(f, &s, &bars[i], left, bw, a);
    }
    fprintf(f, "</svg>\n<ul class=\"legend\">\n");
    /* each stage once, in the order of its first appearance */
    for (size_t i = 0; i < n_bars; i++)
        for (size_t k = 0; k < bars[i].n; k++) {
            int seen = 0;
            for (size_t p = 0; p <= i && !seen; p++)
                for (size_t q = 0; q < bars[p].n && !seen && (p < i || q < k); q++)
                    seen = strcmp(bars[p].names[q], bars[i].names[k]) == 0;
            if (!seen) {
                fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                        report_color(bars[i].seg_colors[k]));
                report_esc(f, bars[i].names[k]);
                fprintf(f, "</li>\n");
            }
        }
    for (size_t i = 0; i < n_bars; i++)
        if (i == 0 || bars[i].run_idx != bars[i - 1].run_idx) {
            char text[2200];
            snprintf(text, sizeof(text), "%s (outline, bar %u of each epoch; tick: epoch time)",
                     bars[i].run, bars[i].run_idx + 1);
            legend_line(f, report_color(bars[i].color), "", text);
        }
    fprintf(f, "</ul>\n</figure>\n");
    free(xs);
}

void report_svg_hbars(FILE *f, const struct report_axes *a, const struct report_hbar *bars,
                      size_t n_bars, const struct report_ref *refs, size_t n_refs)
{
    const double label_w = 170, text_w = 150, row = 26, top = 30;
    double height = top + row * (double)n_bars + 34;
    double hi = 0;
    size_t n_points = 0;
    for (size_t i = 0; i < n_bars; i++)
        if (!bars[i].failed)
            hi = fmax(hi, bars[i].value), n_points++;
    for (size_t i = 0; i < n_refs; i++)
        hi = fmax(hi, refs[i].value);
    struct scale s;
    y_range(&s, 0, hi, a->unit, 1);
    double x0 = label_w, pw = W - label_w - text_w - RIGHT;
    open_chart(f, a, n_points, height);
    char t[64];
    fprintf(f, "<g class=\"grid\">\n");
    for (double v = s.y0; v <= s.y1 + s.step * 1e-6; v += s.step) {
        double px = x0 + v / s.y1 * pw;
        report_fmt(t, sizeof(t), v, a->unit);
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" "
                "y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                px, px, top - 6, top + row * (double)n_bars, px, height - 18, t);
    }
    fprintf(f, "</g>\n<text class=\"xlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
            x0 + pw / 2, height - 2);
    report_esc(f, a->x_label);
    fprintf(f, "</text>\n");
    for (size_t i = 0; i < n_bars; i++) {
        const struct report_hbar *b = &bars[i];
        double y = top + row * (double)i;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8, y + row * 0.62);
        report_esc(f, b->label);
        fprintf(f, "</text>\n");
        if (b->failed) {
            fprintf(f, "<text class=\"failed\" x=\"%.1f\" y=\"%.1f\">FAILED: ", x0 + 4,
                    y + row * 0.62);
            report_esc(f, b->failed);
            fprintf(f, "</text>\n");
            continue;
        }
        double w = fmax(0, b->value / s.y1 * pw); /* a negative value draws no bar */
        fprintf(f,
                "<rect class=\"pt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\"",
                x0, y + 4, w, row - 8, report_color((unsigned)i));
        point_data(f, b->label, a->id, (double)i, b->value, a->unit, "row");
        report_fmt(t, sizeof(t), b->value, a->unit);
        fprintf(f, "</rect>\n<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s", x0 + w + 6,
                y + row * 0.62, t);
        for (size_t r = 0; r < n_refs; r++)
            if (refs[r].value > 0)
                fprintf(f, " \xc2\xb7 %.2fx %s", b->value / refs[r].value, refs[r].name);
        fprintf(f, "</text>\n");
    }
    for (size_t r = 0; r < n_refs; r++) {
        double px = x0 + refs[r].value / s.y1 * pw;
        report_fmt(t, sizeof(t), refs[r].value, a->unit);
        fprintf(f, "<line class=\"ref\" data-ref=\"");
        report_esc(f, refs[r].name);
        fprintf(f,
                "\" data-value=\"%.10g\" x1=\"%.1f\" x2=\"%.1f\" "
                "y1=\"%.1f\" y2=\"%.1f\" stroke-dasharray=\"%s\"/>"
                "<text class=\"ref\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                refs[r].value, px, px, top - 4 - 12.0 * (double)(r % 2), top + row * (double)n_bars,
                report_dash((unsigned)r + 1), px, top - 8 - 12.0 * (double)(r % 2));
        report_esc(f, refs[r].name);
        fprintf(f, " %s</text>\n", t);
    }
    fprintf(f, "</svg>\n</figure>\n");
}
