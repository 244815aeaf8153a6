/*
 * probe.h — ooc_bench's disk probe of features.npy: sequential O_DIRECT
 * reads of 1 MiB one at a time and PROBE_SEQ_DEPTH in flight, then random
 * 4 KiB and 8 KiB reads at PROBE_RAND_DEPTH in flight, merging off. The
 * bench runs it in a child (probe_child in ooc_bench.c) and prints it.
 *
 * Place in the data flow: bench/ooc_bench only (step 2, before training).
 * Thread-safety: one caller; the batch readers are its own.
 * Ownership: nothing outlives probe_run.
 */
#ifndef OOC_BENCH_PROBE_H
#define OOC_BENCH_PROBE_H

#include <stdint.h>

#include "offcore/core.h"

#define SEQ_DEPTH  16  /* sequential 1 MiB reads in flight */
#define RAND_DEPTH 128 /* random reads in flight */

struct msg_probe {
    int rc;
    char msg[1024];
    int direct, uring;
    double seq_qd1_bps, seq_uring_bps;
    /* random reads of 4 KiB (one page) and 8 KiB (two pages: a row straddling a page) */
    double rand_iops, rand_s, rand8_iops, rand8_s;
    uint64_t seq_bytes, rand_reads, rand_read_bytes, rand8_reads;
};

/* Probes the file at path into r (its rc and msg are the caller's). */
int probe_run(const char *path, struct msg_probe *r, struct oc_err *err);

#endif
