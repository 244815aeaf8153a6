/*
 * progress.c — monotonic timers and a one-line progress bar drawn only when
 * its stream is a terminal (so logs and CI output stay clean).
 *
 * Place in the data flow: core; long operations advance a bar the CLI made.
 * Thread-safety: oc_progress_add is thread-safe (atomic counter; the redraw
 * is guarded by a try-lock so workers never block on the terminal).
 * Ownership: the stream is borrowed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "offcore/progress.h"

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
    int visible;
    char label[64];
    _Atomic uint64_t done;
    _Atomic uint64_t total;
    uint64_t start_ns;
    _Atomic uint64_t last_draw_ns;
    pthread_mutex_t draw_mu;
    int drawn;
};

int oc_progress_new(FILE *stream, const char *label, uint64_t total, struct oc_progress **out,
                    struct oc_err *err)
{
    *out = NULL;
    struct oc_progress *p = oc_calloc(1, sizeof(*p), "progress bar", err);
    if (!p)
        return err->status;
    p->stream = stream;
    p->visible = stream && isatty(fileno(stream));
    snprintf(p->label, sizeof(p->label), "%s", label ? label : "");
    atomic_store(&p->total, total);
    p->start_ns = oc_now_ns();
    pthread_mutex_init(&p->draw_mu, NULL);
    *out = p;
    return OC_OK;
}

void oc_progress_free(struct oc_progress *p)
{
    if (!p)
        return;
    oc_progress_finish(p);
    pthread_mutex_destroy(&p->draw_mu);
    oc_free(p);
}

static void progress_draw(struct oc_progress *p)
{
    uint64_t done = atomic_load(&p->done), total = atomic_load(&p->total);
    double el = (double)(oc_now_ns() - p->start_ns) * 1e-9;
    char bar[31];
    int width = 30, fill = 0;
    if (total)
        fill = (int)((double)width * (double)(done > total ? total : done) / (double)total);
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    if (total)
        fprintf(p->stream, "\r%-20s [%s] %5.1f%% %.1fs ", p->label, bar,
                100.0 * (double)done / (double)total, el);
    else
        fprintf(p->stream, "\r%-20s %llu %.1fs ", p->label, (unsigned long long)done, el);
    fflush(p->stream);
    p->drawn = 1;
}

void oc_progress_add(struct oc_progress *p, uint64_t units)
{
    if (!p)
        return;
    atomic_fetch_add(&p->done, units);
    if (!p->visible)
        return;
    uint64_t now = oc_now_ns();
    uint64_t last = atomic_load(&p->last_draw_ns);
    if (now - last < 100000000ull)
        return;
    if (pthread_mutex_trylock(&p->draw_mu) != 0)
        return;
    atomic_store(&p->last_draw_ns, now);
    progress_draw(p);
    pthread_mutex_unlock(&p->draw_mu);
}

void oc_progress_set_total(struct oc_progress *p, uint64_t total)
{
    if (p)
        atomic_store(&p->total, total);
}

void oc_progress_set_label(struct oc_progress *p, const char *label)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->draw_mu);
    snprintf(p->label, sizeof(p->label), "%s", label);
    atomic_store(&p->done, 0);
    p->start_ns = oc_now_ns();
    pthread_mutex_unlock(&p->draw_mu);
}

uint64_t oc_progress_done(const struct oc_progress *p)
{
    return p ? atomic_load(&p->done) : 0;
}

void oc_progress_finish(struct oc_progress *p)
{
    if (!p || !p->visible)
        return;
    pthread_mutex_lock(&p->draw_mu);
    if (p->drawn) {
        fprintf(p->stream, "\r%*s\r", 80, "");
        fflush(p->stream);
        p->drawn = 0;
    }
    pthread_mutex_unlock(&p->draw_mu);
}

int oc_progress_visible(const struct oc_progress *p)
{
    return p && p->visible;
}
