/*
 * others.h — how much of the machine's CPU other processes took while one
 * of ooc_bench's training children ran: the busy CPU seconds /proc/stat
 * counts over the run (user, nice, system and steal: time the hypervisor
 * gave to other guests), less the child's own (its rusage from wait4), as
 * a share of the CPU time the machine had (wall seconds x online CPUs).
 * A bench's ratios compare runs measured one after another, so a run that
 * shared the CPUs with a build is flagged instead of silently skewing them.
 * Interrupt time is left out: a disk-bound run's own completions land there.
 *
 * Place in the data flow: bench/ooc_bench only (the parent, around child_run).
 * Thread-safety: plain functions over the caller's struct.
 * Ownership: nothing is held.
 */
#ifndef OOC_BENCH_OTHERS_H
#define OOC_BENCH_OTHERS_H

#include <sys/resource.h>

/* Share of the CPUs others may take before a run is flagged as measured on a loaded machine. */
#define OTHERS_SHARE_WARN 0.05
/* Runs shorter than this are not judged: /proc/stat counts in ticks of 10 ms. */
#define OTHERS_MIN_WALL_S 2.0

struct others_mark {
    double busy_s, wall_s; /* /proc/stat's busy seconds, the monotonic clock */
    int ok;                /* 0: /proc/stat unreadable (the share is then unknown) */
};

/* Marks the start of a run. */
void others_mark(struct others_mark *m);
/*
 * Others' share of the CPUs since m, given the child's rusage: between 0 and
 * 1, or -1 when unknown or the run was shorter than OTHERS_MIN_WALL_S (also
 * sets *others_s to their CPU seconds, or 0).
 */
double others_share(const struct others_mark *m, const struct rusage *child, double *others_s);

#endif
