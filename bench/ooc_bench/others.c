/*
 * others.c — other processes' share of the CPUs during a bench run
 * (others.h): /proc/stat's busy time over the run less the child's own.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: plain functions. Ownership: nothing is held.
 */
#include "others.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Busy seconds of all CPUs so far (user + nice + system + steal), or -1. */
static double busy_seconds(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal = 0;
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
                       &iowait, &irq, &softirq, &steal)
              : 0;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (n < 7 || hz <= 0)
        return -1;
    return (double)(user + nice + sys + steal) / (double)hz;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void others_mark(struct others_mark *m)
{
    m->busy_s = busy_seconds();
    m->wall_s = now_s();
    m->ok = m->busy_s >= 0;
}

double others_share(const struct others_mark *m, const struct rusage *child, double *others_s)
{
    double busy = busy_seconds(), wall = now_s() - m->wall_s;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *others_s = 0;
    if (!m->ok || busy < 0 || wall < OTHERS_MIN_WALL_S || cpus <= 0)
        return -1;
    double own = (double)child->ru_utime.tv_sec + (double)child->ru_utime.tv_usec * 1e-6 +
                 (double)child->ru_stime.tv_sec + (double)child->ru_stime.tv_usec * 1e-6;
    double others = busy - m->busy_s - own;
    if (others < 0)
        others = 0; /* the counters' tick granularity */
    *others_s = others;
    double share = others / (wall * (double)cpus);
    return share > 1 ? 1 : share;
}
