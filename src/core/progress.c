/*
 * progress.c — monotonic timers and a thread's CPU clock, and the progress
 * report of long phases: a bar redrawn in place on a terminal, plain
 * periodic lines elsewhere, nothing without a stream
 * (include/offcore/progress.h; the text is progress_fmt.c's).
 *
 *   phase(label, total, unit) ──add()*──► finish(): final line
 *        │                          └──► clear():  no final line (bar erased)
 *        └─ a new phase() finishes the current one first
 *
 * Place in the data flow: core; the CLI makes a report, long operations
 * advance it.
 * Thread-safety: add, set_total and note touch only atomics, then draw if the
 * interval has passed and the draw lock is free (try-lock: a worker never
 * waits on the terminal); phase, finish and clear take the lock. The label,
 * unit, start time and the stream are under the lock.
 * The terminal's report (the first in mode BAR) is registered process-wide so
 * that oc_progress_hold can erase its bar before a log line and
 * oc_progress_release draw it again after; lock order: the registry's lock,
 * then the report's, both held from hold to release.
 * Ownership: the stream is borrowed.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "offcore/progress.h"

#define BAR_CELLS 24 /* the bar's width, less on a terminal narrower than BAR_ROOM + 24 */
#define BAR_ROOM  80 /* columns kept for the label and the figures */

uint64_t oc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double oc_now_s(void)
{
    return (double)oc_now_ns() * 1e-9;
}

uint64_t oc_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void oc_timer_start(struct oc_timer *t)
{
    t->start_ns = oc_now_ns();
}

void oc_timer_stop(struct oc_timer *t)
{
    t->total_ns += oc_now_ns() - t->start_ns;
}

double oc_timer_s(const struct oc_timer *t)
{
    return (double)t->total_ns * 1e-9;
}

struct oc_progress {
    FILE *stream;
    enum oc_progress_mode mode; /* resolved: OFF, BAR or LINES */
    uint64_t interval_ns;       /* between two draws (BAR) or two lines (LINES) */
    pthread_mutex_t mu;         /* the fields below up to `drawn`, and the stream */
    char label[96];
    char unit[24];
    uint64_t start_ns;
    int active; /* a phase begun and not ended */
    int drawn;  /* BAR: the line holds a bar */
    _Atomic uint64_t done, total;
    _Atomic uint64_t next_ns; /* no draw before this time */
    _Atomic(const char *) note;
    _Atomic uint64_t note_done, note_total;
};

static pthread_mutex_t tty_mu = PTHREAD_MUTEX_INITIALIZER;
static struct oc_progress *tty_report; /* under tty_mu */

/* The period of LINES: $OC_PROGRESS_PERIOD seconds when it is a positive number. */
static uint64_t lines_period_ns(void)
{
    const char *env = getenv(OC_PROGRESS_PERIOD_ENV);
    if (env && *env) {
        char *end;
        errno = 0;
        double s = strtod(env, &end);
        if (!errno && *end == '\0' && isfinite(s) && s > 0 && s < 1e6)
            return (uint64_t)(s * 1e9);
        oc_log(OC_LOG_WARN, "%s=%s: not a positive number of seconds; using %.0f",
               OC_PROGRESS_PERIOD_ENV, env, OC_PROGRESS_PERIOD_S);
    }
    return (uint64_t)(OC_PROGRESS_PERIOD_S * 1e9);
}

int oc_progress_new_mode(FILE *stream, enum oc_progress_mode mode, struct oc_progress **out,
                         struct oc_err *err)
{
    *out = NULL;
    if ((unsigned)mode >= OC_PROGRESS_MODE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "progress: unknown mode %d", (int)mode);
    struct oc_progress *p = oc_calloc(1, sizeof(*p), "progress report", err);
    if (!p)
        return err->status;
    p->stream = stream;
    if (!stream)
        mode = OC_PROGRESS_OFF;
    else if (mode == OC_PROGRESS_AUTO)
        mode = isatty(fileno(stream)) ? OC_PROGRESS_BAR : OC_PROGRESS_LINES;
    p->mode = mode;
    p->interval_ns =
        mode == OC_PROGRESS_LINES ? lines_period_ns() : OC_PROGRESS_REDRAW_MS * 1000000ull;
    pthread_mutex_init(&p->mu, NULL);
    if (mode == OC_PROGRESS_BAR) {
        pthread_mutex_lock(&tty_mu);
        if (!tty_report)
            tty_report = p;
        pthread_mutex_unlock(&tty_mu);
    }
    *out = p;
    return OC_OK;
}

/* Draws the current phase's line now; the lock is held (defined below). */
static void draw_locked(struct oc_progress *p, int final, uint64_t now);

void oc_progress_hold(void)
{
    pthread_mutex_lock(&tty_mu);
    struct oc_progress *p = tty_report;
    if (p) {
        pthread_mutex_lock(&p->mu);
        if (p->drawn) {
            fputs("\r\033[K", p->stream);
            fflush(p->stream);
            p->drawn = 0;
        }
    }
}

void oc_progress_release(void)
{
    struct oc_progress *p = tty_report; /* tty_mu is held since oc_progress_hold */
    if (p) {
        OC_ASSERT(!p->drawn);
        if (p->active) { /* the bar again, below the caller's line */
            uint64_t now = oc_now_ns();
            atomic_store(&p->next_ns, now + p->interval_ns);
            draw_locked(p, 0, now);
        }
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&tty_mu);
}

int oc_progress_new(FILE *stream, struct oc_progress **out, struct oc_err *err)
{
    return oc_progress_new_mode(stream, OC_PROGRESS_AUTO, out, err);
}

/* Columns of the terminal behind the stream; 0 if unknown. */
static int term_cols(FILE *stream)
{
    struct winsize ws;
    if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

/* Writes the current phase's line; the lock is held. */
static void draw_locked(struct oc_progress *p, int final, uint64_t now)
{
    struct oc_progress_view v = {
        .label = p->label,
        .unit = p->unit,
        .done = atomic_load(&p->done),
        .total = atomic_load(&p->total),
        .elapsed_s = (double)(now - p->start_ns) * 1e-9,
        .final = final,
        .note = final ? NULL : atomic_load(&p->note),
        .note_done = atomic_load(&p->note_done),
        .note_total = atomic_load(&p->note_total),
    };
    char line[512];
    if (p->mode == OC_PROGRESS_LINES) {
        fprintf(p->stream, "%s\n", oc_progress_format_line(&v, 0, line, sizeof(line)));
    } else {
        int cols = term_cols(p->stream);
        int cells = cols && cols - BAR_ROOM < BAR_CELLS ? cols - BAR_ROOM : BAR_CELLS;
        oc_progress_format_line(&v, cells >= 8 ? cells : 0, line, sizeof(line));
        if (cols > 1 && strlen(line) >= (size_t)cols)
            line[cols - 1] = '\0'; /* a wrapped line could not be redrawn in place */
        fprintf(p->stream, "\r%s\033[K%s", line, final ? "\n" : "");
        p->drawn = !final;
    }
    fflush(p->stream);
}

/* Draws if the interval has passed and nobody else is drawing. */
static void maybe_draw(struct oc_progress *p)
{
    uint64_t now = oc_now_ns();
    if (now < atomic_load(&p->next_ns) || pthread_mutex_trylock(&p->mu) != 0)
        return;
    if (p->active && now >= atomic_load(&p->next_ns)) {
        atomic_store(&p->next_ns, now + p->interval_ns);
        draw_locked(p, 0, now);
    }
    pthread_mutex_unlock(&p->mu);
}

/* Ends the current phase, with its final line or without; the lock is held. */
static void end_locked(struct oc_progress *p, int final)
{
    if (!p->active)
        return;
    p->active = 0;
    if (p->mode == OC_PROGRESS_OFF)
        return;
    if (final) {
        draw_locked(p, 1, oc_now_ns());
    } else if (p->drawn) {
        fputs("\r\033[K", p->stream);
        fflush(p->stream);
        p->drawn = 0;
    }
}

void oc_progress_phase(struct oc_progress *p, const char *label, uint64_t total, const char *unit)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    end_locked(p, 1);
    snprintf(p->label, sizeof(p->label), "%s", label ? label : "");
    snprintf(p->unit, sizeof(p->unit), "%s", unit ? unit : "");
    atomic_store(&p->done, 0);
    atomic_store(&p->total, total);
    p->start_ns = oc_now_ns();
    p->active = 1;
    if (p->mode == OC_PROGRESS_BAR) { /* a terminal shows the phase at once */
        atomic_store(&p->next_ns, p->start_ns + p->interval_ns);
        draw_locked(p, 0, p->start_ns);
    } else {
        atomic_store(&p->next_ns, p->start_ns + p->interval_ns);
    }
    pthread_mutex_unlock(&p->mu);
}

void oc_progress_add(struct oc_progress *p, uint64_t units)
{
    if (!p)
        return;
    atomic_fetch_add(&p->done, units);
    if (p->mode != OC_PROGRESS_OFF)
        maybe_draw(p);
}

void oc_progress_set_total(struct oc_progress *p, uint64_t total)
{
    if (p)
        atomic_store(&p->total, total);
}

void oc_progress_note(struct oc_progress *p, const char *what, uint64_t done, uint64_t total)
{
    if (!p)
        return;
    atomic_store(&p->note_done, done);
    atomic_store(&p->note_total, total);
    atomic_store(&p->note, what);
    if (p->mode != OC_PROGRESS_OFF) /* a waiting phase still shows its note's advance */
        maybe_draw(p);
}

void oc_progress_finish(struct oc_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    end_locked(p, 1);
    pthread_mutex_unlock(&p->mu);
}

void oc_progress_clear(struct oc_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    end_locked(p, 0);
    pthread_mutex_unlock(&p->mu);
}

void oc_progress_free(struct oc_progress *p)
{
    if (!p)
        return;
    oc_progress_finish(p);
    pthread_mutex_lock(&tty_mu);
    if (tty_report == p)
        tty_report = NULL;
    pthread_mutex_unlock(&tty_mu);
    pthread_mutex_destroy(&p->mu);
    oc_free(p);
}

uint64_t oc_progress_done(const struct oc_progress *p)
{
    return p ? atomic_load(&p->done) : 0;
}

enum oc_progress_mode oc_progress_mode(const struct oc_progress *p)
{
    return p ? p->mode : OC_PROGRESS_OFF;
}

int oc_progress_visible(const struct oc_progress *p)
{
    return p && p->mode != OC_PROGRESS_OFF;
}
