/*
 * loader_epoch.c — times epochs of the C API's loader (offcore.h) with no
 * model: each batch taken and released at once, as fast as the pipeline
 * delivers them. bench/py_loader_bench.py runs it beside the same loop in
 * Python to measure what the Python package adds.
 *
 *   loader_epoch DIR STRATEGY EPOCHS BATCH FANOUT0,FANOUT1,.. BUDGET_BYTES THREADS
 *
 * Prints one line per epoch: "epoch E batches N cpu C seconds S" (C: the
 * process's CPU time, every thread; S: wall time).
 * Place in the data flow: bench (api loader → nothing).
 * Thread-safety: single-threaded driver; the loader runs its stages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "offcore.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: loader_epoch DIR STRATEGY EPOCHS BATCH FANOUTS BUDGET THREADS\n");
        return 2;
    }
    struct offcore_error err;
    struct offcore_dataset *ds;
    if (offcore_dataset_open(argv[1], &ds, &err)) {
        fprintf(stderr, "loader_epoch: %s\n", err.message);
        return 1;
    }
    struct offcore_loader_opts o;
    offcore_loader_opts_init(&o);
    o.strategy = argv[2];
    o.n_epochs = (uint32_t)strtoul(argv[3], NULL, 10);
    o.batch_size = strtoull(argv[4], NULL, 10);
    o.n_layers = 0;
    for (char *s = argv[5], *end; *s && o.n_layers < OFFCORE_MAX_LAYERS; s = end + (*end == ',')) {
        o.fanouts[o.n_layers++] = (int32_t)strtol(s, &end, 10);
        if (end == s)
            break;
    }
    o.mem_budget_bytes = strtoull(argv[6], NULL, 10);
    o.n_threads = (uint32_t)strtoul(argv[7], NULL, 10);
    struct offcore_loader *l;
    if (offcore_loader_open(ds, &o, &l, &err)) {
        fprintf(stderr, "loader_epoch: %s\n", err.message);
        offcore_dataset_close(ds);
        return 1;
    }
    int rc = 0;
    for (uint32_t e = 0; e < o.n_epochs && rc == 0; e++) {
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        uint64_t n = 0;
        struct offcore_batch b;
        offcore_batch_init(&b);
        if (offcore_loader_epoch(l, e, &err)) {
            rc = 1;
            break;
        }
        int st;
        while ((st = offcore_loader_next(l, &b, &err)) == OFFCORE_OK) {
            offcore_loader_release(l, &b);
            n++;
        }
        if (st != OFFCORE_DONE) {
            rc = 1;
            break;
        }
        printf("epoch %u batches %llu cpu %.6f seconds %.6f\n", e, (unsigned long long)n,
               clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, clock_s(CLOCK_MONOTONIC) - t0);
        fflush(stdout);
    }
    if (rc)
        fprintf(stderr, "loader_epoch: %s\n", err.message);
    offcore_loader_close(l);
    offcore_dataset_close(ds);
    return rc;
}
