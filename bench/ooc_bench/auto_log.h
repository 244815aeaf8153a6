/*
 * auto_log.h — ooc_bench's reading of `--strategy auto`'s training log: the
 * one record with "auto": true holds every candidate's predicted epoch
 * (src/train/auto.c), which the bench sets beside the epochs it measured for
 * the same strategies in the same run.
 *
 * Place in the data flow: bench/ooc_bench only (after the auto run, in the parent).
 * Thread-safety: single-threaded parent.
 * Ownership: the caller's array; the file is read whole and freed here.
 */
#ifndef OOC_BENCH_AUTO_LOG_H
#define OOC_BENCH_AUTO_LOG_H

#include <stddef.h>
#include <stdint.h>

struct auto_pred {
    char strategy[32];
    int reuse;       /* diskgnn --reuse-samples */
    int approximate; /* trains other weights than memory */
    int excluded;    /* not predicted (does not fit the budget, ...) */
    double epoch_s;  /* predicted epoch seconds (when not excluded) */
};

/*
 * Reads path's auto record into out (at most cap entries, *n of them);
 * 0, or -1 with why naming the file and the problem.
 */
int auto_log_read(const char *path, struct auto_pred *out, uint32_t cap, uint32_t *n, char *why,
                  size_t why_n);

#endif
