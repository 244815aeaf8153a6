/*
 * progress_fmt.c — the text of a progress line: counts and rates with SI
 * (items) or binary (bytes) prefixes, durations from "0.4s" to "3d04h", and
 * the whole line with or without a bar (include/offcore/progress.h).
 *
 * Place in the data flow: core; progress.c draws what these format.
 * Thread-safety: pure functions.
 * Ownership: the caller's buffers.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "offcore/progress.h"

static int is_bytes(const char *unit)
{
    return unit && strcmp(unit, OC_PROGRESS_BYTES) == 0;
}

/* x with a prefix: SI for items (k, M, G, T, P), binary for bytes (KiB ... PiB). */
static void scaled(double x, int bytes, char *buf, size_t cap)
{
    static const char *const si[] = {"", "k", "M", "G", "T", "P"};
    static const char *const bin[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    const double step = bytes ? 1024.0 : 1000.0;
    int k = 0;
    while (x >= step * 0.9995 && k < 5) {
        x /= step;
        k++;
    }
    const char *sep = bytes ? " " : "";
    const char *pre = bytes ? bin[k] : si[k];
    if (k == 0)
        snprintf(buf, cap, "%.0f%s%s", x, sep, pre);
    else if (x < 9.995)
        snprintf(buf, cap, "%.2f%s%s", x, sep, pre);
    else if (x < 99.95)
        snprintf(buf, cap, "%.1f%s%s", x, sep, pre);
    else
        snprintf(buf, cap, "%.0f%s%s", x, sep, pre);
}

char *oc_progress_format_count(uint64_t n, const char *unit, char *buf, size_t cap)
{
    if (!is_bytes(unit) && n < 100000)
        snprintf(buf, cap, "%llu", (unsigned long long)n); /* exact while it reads easily */
    else
        scaled((double)n, is_bytes(unit), buf, cap);
    return buf;
}

char *oc_progress_format_rate(double per_s, const char *unit, char *buf, size_t cap)
{
    const char *name = unit && unit[0] && !is_bytes(unit) ? unit : "";
    char num[32];
    if (!isfinite(per_s) || per_s < 0)
        snprintf(num, sizeof(num), "-%s", is_bytes(unit) ? " B" : "");
    else if (per_s > 0 && per_s < 9.995) /* slow phases: 0.15 batches/s, not "0" */
        snprintf(num, sizeof(num), "%.2f%s", per_s, is_bytes(unit) ? " B" : "");
    else
        scaled(per_s, is_bytes(unit), num, sizeof(num));
    snprintf(buf, cap, "%s%s%s/s", num, name[0] ? " " : "", name);
    return buf;
}

char *oc_progress_format_duration(double s, char *buf, size_t cap)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, cap, "?");
        return buf;
    }
    if (s < 9.95) {
        snprintf(buf, cap, "%.1fs", s);
        return buf;
    }
    if (s >= 100.0 * 86400.0) {
        snprintf(buf, cap, ">99d");
        return buf;
    }
    uint64_t t = (uint64_t)llround(s);
    if (t < 60)
        snprintf(buf, cap, "%llus", (unsigned long long)t);
    else if (t < 3600)
        snprintf(buf, cap, "%llum%02llus", (unsigned long long)(t / 60),
                 (unsigned long long)(t % 60));
    else if (t < 86400)
        snprintf(buf, cap, "%lluh%02llum", (unsigned long long)(t / 3600),
                 (unsigned long long)(t % 3600 / 60));
    else
        snprintf(buf, cap, "%llud%02lluh", (unsigned long long)(t / 86400),
                 (unsigned long long)(t % 86400 / 3600));
    return buf;
}

/* Appends to buf (at *at, capacity cap), never past the end. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t cap, size_t *at,
                                                      const char *fmt, ...)
{
    if (*at + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at = *at + (size_t)n < cap ? *at + (size_t)n : cap - 1;
}

static void put_bar(const struct oc_progress_view *v, int width, char *buf, size_t cap, size_t *at)
{
    uint64_t done = v->done > v->total ? v->total : v->done;
    int fill = v->total ? (int)((double)width * (double)done / (double)v->total) : 0;
    put(buf, cap, at, " [");
    for (int i = 0; i < width; i++)
        put(buf, cap, at, "%c", i < fill ? '#' : '.');
    put(buf, cap, at, "]");
}

char *oc_progress_format_line(const struct oc_progress_view *v, int bar_width, char *buf,
                              size_t cap)
{
    const char *unit = v->unit && v->unit[0] && !is_bytes(v->unit) ? v->unit : "";
    char a[32], b[32], rate[48], t[16];
    size_t at = 0;
    if (!cap)
        return buf;
    buf[0] = '\0';
    put(buf, cap, &at, "%s", v->label ? v->label : "");
    if (bar_width > 0 && v->total)
        put_bar(v, bar_width, buf, cap, &at);
    else if (bar_width <= 0)
        put(buf, cap, &at, ":");
    if (!v->total && !v->done) { /* nothing counted yet, or a step that counts nothing */
        put(buf, cap, &at, " %s %s", v->final ? "done in" : "running",
            oc_progress_format_duration(v->elapsed_s, t, sizeof(t)));
        goto note;
    }
    oc_progress_format_count(v->done, v->unit, a, sizeof(a));
    if (v->total)
        put(buf, cap, &at, " %s/%s", a, oc_progress_format_count(v->total, v->unit, b, sizeof(b)));
    else
        put(buf, cap, &at, " %s", a);
    if (unit[0])
        put(buf, cap, &at, " %s", unit);
    if (v->total) {
        uint64_t done = v->done > v->total ? v->total : v->done;
        put(buf, cap, &at, " %.1f%%", 100.0 * (double)done / (double)v->total);
    }
    double per_s = v->done && v->elapsed_s > 0 ? (double)v->done / v->elapsed_s : NAN;
    put(buf, cap, &at, " %s", oc_progress_format_rate(per_s, v->unit, rate, sizeof(rate)));
    if (v->final) /* a phase cut short (an error) says so */
        put(buf, cap, &at, " %s %s", v->total && v->done < v->total ? "stopped after" : "done in",
            oc_progress_format_duration(v->elapsed_s, t, sizeof(t)));
    else if (!v->total)
        put(buf, cap, &at, " %s", oc_progress_format_duration(v->elapsed_s, t, sizeof(t)));
    else {
        double left = v->done >= v->total ? 0.0
                      : v->done && v->elapsed_s > 0
                          ? (double)(v->total - v->done) * v->elapsed_s / (double)v->done
                          : NAN;
        put(buf, cap, &at, " ETA %s", oc_progress_format_duration(left, t, sizeof(t)));
    }
note:
    if (v->note && v->note_total)
        put(buf, cap, &at, " | %s %.0f%%", v->note,
            100.0 * (double)(v->note_done > v->note_total ? v->note_total : v->note_done) /
                (double)v->note_total);
    else if (v->note)
        put(buf, cap, &at, " | %s", v->note);
    return buf;
}
