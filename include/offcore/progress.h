/*
 * progress.h — timers, and the progress report of long phases (generate,
 * import, layout, edge sort, diskgnn packing, training epochs).
 *
 * A report belongs to one run of a command and goes through phases, one at a
 * time: oc_progress_phase names it, gives its total and unit; the work calls
 * oc_progress_add; the phase ends with oc_progress_finish (its final line) or
 * oc_progress_clear (no final line: the caller prints its own summary, as
 * training's epoch line). What the stream shows depends on what it is:
 *
 *   terminal (OC_PROGRESS_BAR), one line redrawn in place ("\r", "\033[K"),
 *   at most every OC_PROGRESS_REDRAW_MS, cut to the terminal's width:
 *     generate: edges [#######.......] 1.20M/3.00M edges 40.0% 2.31M edges/s ETA 1s
 *   anything else (OC_PROGRESS_LINES), a plain line every OC_PROGRESS_PERIOD_S
 *   (or $OC_PROGRESS_PERIOD seconds) and one at the end of the phase:
 *     generate: edges: 1.20M/3.00M edges 40.0% 2.31M edges/s ETA 1s
 *     generate: edges: 3.00M/3.00M edges 100.0% 2.31M edges/s done in 1.3s
 *   no stream (--quiet): nothing, but the counts are kept.
 *
 * A phase of unknown total (0) shows its count, rate and elapsed time, no
 * percentage or ETA. Background work (diskgnn's planner packing the next
 * window while an epoch trains) does not start a phase of its own: it sets a
 * note shown at the end of the current phase's line (oc_progress_note).
 *
 * Place in the data flow: core; the CLI makes the report, the library
 * advances it (every long operation takes an optional struct oc_progress *).
 * Thread-safety: oc_progress_add, _set_total and _note may be called from
 * any thread (atomic counters; whichever thread crosses the interval draws,
 * under a try-lock so workers never wait on the terminal); _phase, _finish,
 * _clear and _free from the thread that drives the phases.
 * Ownership: the stream is borrowed and must outlive the report; labels and
 * units are copied; a note's text is borrowed for the report's life.
 */
#ifndef OFFCORE_PROGRESS_H
#define OFFCORE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "offcore/core.h"

/* Monotonic clock in nanoseconds / seconds. */
uint64_t oc_now_ns(void);
double oc_now_s(void);
/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID). */
uint64_t oc_thread_cpu_ns(void);

/* An accumulating stopwatch. */
struct oc_timer {
    uint64_t start_ns;
    uint64_t total_ns;
};
void oc_timer_start(struct oc_timer *t);
void oc_timer_stop(struct oc_timer *t);
double oc_timer_s(const struct oc_timer *t);

#define OC_PROGRESS_REDRAW_MS  100u                 /* terminal: at most 10 redraws a second */
#define OC_PROGRESS_PERIOD_S   10.0                 /* otherwise: one line per 10 s of a phase */
#define OC_PROGRESS_PERIOD_ENV "OC_PROGRESS_PERIOD" /* seconds, overrides OC_PROGRESS_PERIOD_S */
#define OC_PROGRESS_BYTES      "B"                  /* the unit of sizes: KiB, MiB, GiB, TiB */

enum oc_progress_mode {
    OC_PROGRESS_AUTO,  /* BAR on a terminal, LINES otherwise, OFF without a stream */
    OC_PROGRESS_OFF,   /* nothing is written */
    OC_PROGRESS_BAR,   /* one line redrawn in place */
    OC_PROGRESS_LINES, /* plain periodic lines */
    OC_PROGRESS_MODE_COUNT
};

struct oc_progress;

/* A report on `stream` (NULL: nothing is ever written) in mode AUTO. */
int oc_progress_new(FILE *stream, struct oc_progress **out, struct oc_err *err);
/* The same in the given mode (tests, or a caller that knows better than isatty). */
int oc_progress_new_mode(FILE *stream, enum oc_progress_mode mode, struct oc_progress **out,
                         struct oc_err *err);
/* Finishes the current phase (its final line) and frees; p may be NULL. */
void oc_progress_free(struct oc_progress *p);

/*
 * Starts a phase: finishes the current one (its final line), then counts from
 * 0 towards `total` (0 = unknown) `unit`s ("edges", "batches",
 * OC_PROGRESS_BYTES; NULL or "" = bare numbers). A terminal shows it at once.
 * Every function here accepts p == NULL and does nothing.
 */
void oc_progress_phase(struct oc_progress *p, const char *label, uint64_t total, const char *unit);
void oc_progress_add(struct oc_progress *p, uint64_t units);
void oc_progress_set_total(struct oc_progress *p, uint64_t total);
/*
 * A note on background work, drawn after the phase's figures:
 * " | <what> <pct>%" (total 0: " | <what>"); what = NULL
 * removes it. `what` must outlive the report (a string literal). Any thread.
 */
void oc_progress_note(struct oc_progress *p, const char *what, uint64_t done, uint64_t total);
/* Ends the phase with its final line (a terminal keeps it, with a newline). */
void oc_progress_finish(struct oc_progress *p);
/* Ends the phase without a final line (a terminal's bar is erased). */
void oc_progress_clear(struct oc_progress *p);
/*
 * A line on the terminal between a bar's redraws (the CLI's log sink):
 * oc_progress_hold erases the terminal's bar, if one is drawn, and holds the
 * report so that no thread draws it while the caller writes its line;
 * oc_progress_release draws the bar again below that line (if its phase is
 * still active) and lets go. Any thread, as a pair, with no other progress
 * call between them; no-ops without a report in mode BAR.
 */
void oc_progress_hold(void);
void oc_progress_release(void);
/* Units counted in the current phase. */
uint64_t oc_progress_done(const struct oc_progress *p);
/* The mode in use (AUTO resolved); OFF for NULL. */
enum oc_progress_mode oc_progress_mode(const struct oc_progress *p);
/* Whether anything is written (mode BAR or LINES). */
int oc_progress_visible(const struct oc_progress *p);

/*
 * The formatting, pure (unit tests): each writes a NUL-terminated string of
 * at most cap - 1 bytes and returns buf.
 *   count: n in the unit, without the unit's name: "950", "12345", "1.23M",
 *          "45.6k"; bytes "512 B", "1.5 KiB", "12.3 GiB".
 *   rate:  per_s units a second with the unit: "950 edges/s", "12.3k edges/s",
 *          "1.23M/s", "12.3 MiB/s"; "- edges/s" when not finite or negative.
 *   duration: "0.4s" (below 10 s), "42s", "1m05s", "2h03m", "3d04h", ">99d";
 *          "?" when not finite or negative.
 */
char *oc_progress_format_count(uint64_t n, const char *unit, char *buf, size_t cap);
char *oc_progress_format_rate(double per_s, const char *unit, char *buf, size_t cap);
char *oc_progress_format_duration(double s, char *buf, size_t cap);

/* A snapshot of a phase, as oc_progress_format_line draws it. */
struct oc_progress_view {
    const char *label, *unit;
    uint64_t done, total;
    double elapsed_s;
    int final; /* the phase's last line: "done in T" in place of the ETA ("stopped after T"
                  short of its total) */
    const char *note;
    uint64_t note_done, note_total;
};
/*
 * One line (no "\r" or "\n"): with bar_width > 0 a bar of that many cells
 * ("label [####....] ..."), else "label: ...".
 */
char *oc_progress_format_line(const struct oc_progress_view *v, int bar_width, char *buf,
                              size_t cap);

#endif
