/*
 * progress.h — timers and a progress bar shown only on a terminal.
 *
 * Place in the data flow: core; long operations (import, generate, epochs)
 * take an optional struct oc_progress * and advance it.
 * Thread-safety: oc_progress_add may be called from any thread; the bar is
 * redrawn at most every 100 ms by whichever thread crosses the interval.
 * Ownership: the stream is borrowed and must outlive the bar.
 */
#ifndef OFFCORE_PROGRESS_H
#define OFFCORE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "offcore/core.h"

/* Monotonic clock in nanoseconds / seconds. */
uint64_t oc_now_ns(void);
double oc_now_s(void);

/* An accumulating stopwatch. */
struct oc_timer {
    uint64_t start_ns;
    uint64_t total_ns;
};
void oc_timer_start(struct oc_timer *t);
void oc_timer_stop(struct oc_timer *t);
double oc_timer_s(const struct oc_timer *t);

struct oc_progress;

/*
 * A bar on `stream` for `total` units labelled `label`. If the stream is not a
 * terminal (or stream is NULL) nothing is ever drawn, but counts are kept.
 */
int oc_progress_new(FILE *stream, const char *label, uint64_t total, struct oc_progress **out,
                    struct oc_err *err);
void oc_progress_free(struct oc_progress *p);
/* p may be NULL. */
void oc_progress_add(struct oc_progress *p, uint64_t units);
void oc_progress_set_total(struct oc_progress *p, uint64_t total);
void oc_progress_set_label(struct oc_progress *p, const char *label);
uint64_t oc_progress_done(const struct oc_progress *p);
/* Clears the bar line (if drawn). */
void oc_progress_finish(struct oc_progress *p);
int oc_progress_visible(const struct oc_progress *p);

#endif
