/*
 * dist.h — the one door to MPI: process-group start and stop, this rank and
 * the world size, the all-gather that data-parallel training exchanges its
 * micro-shards' gradients through (and evaluation its ROC-AUC scores), the
 * sum of evaluation's counts, and the abort that takes every rank down
 * when one fails. dist_mpi.c implements it over OpenMPI (built with
 * -DOC_MPI=AUTO|ON when MPI is found); dist_none.c, the build without MPI,
 * answers rank 0 of 1 and refuses oc_dist_init with a clear error. Nothing
 * else in the tree includes mpi.h (tools/check_deps.sh).
 *
 * Place in the data flow: train (the trainer exchanges gradients, the
 * evaluator its shares' counts and scores); the CLI
 * starts and stops the group around `offcore train --distributed`.
 * Thread-safety: one thread (the CLI's main thread, then the trainer) makes
 * every call; MPI is initialised without thread support.
 * Ownership: buffers are the caller's; the group is process-global state.
 */
#ifndef OFFCORE_TRAIN_DIST_H
#define OFFCORE_TRAIN_DIST_H

#include <stdint.h>

#include "offcore/core.h"

/* Whether this build has MPI (1) or not (0). */
int oc_dist_built(void);
/*
 * Joins the process group mpirun started (MPI_Init). OC_ERR_UNSUPPORTED in a
 * build without MPI, naming --distributed and how to build with it.
 */
int oc_dist_init(struct oc_err *err);
/* Whether oc_dist_init succeeded (and oc_dist_finalize has not run). */
int oc_dist_on(void);
/* This process's rank and the number of ranks: 0 and 1 unless oc_dist_on. */
uint32_t oc_dist_rank(void);
uint32_t oc_dist_size(void);
/*
 * Every rank contributes counts[rank] floats from send; recv gets all of
 * them, rank 0's first (sum of counts floats). A collective: every rank
 * calls it with the same counts. Without the group it copies send to recv.
 */
int oc_dist_allgather_f32(const float *send, float *recv, const uint64_t *counts,
                          struct oc_err *err);
/* As oc_dist_allgather_f32, for 64-bit integers (evaluation's ROC-AUC score keys). */
int oc_dist_allgather_u64(const uint64_t *send, uint64_t *recv, const uint64_t *counts,
                          struct oc_err *err);
/*
 * Replaces v[0..n) on every rank by its sum over the ranks (evaluation's
 * counts: integer sums, exact in any order). A collective: every rank calls
 * it with the same n. Without the group v is left as it is.
 */
int oc_dist_sum_u64(uint64_t *v, uint64_t n, struct oc_err *err);
/*
 * Each rank sends send_counts[r] values of elem_bytes bytes to rank r, laid
 * out in rank order in send, and receives recv_counts[r] from rank r in rank
 * order into recv (MPI_Alltoallv): partitioned training's requests for rows
 * and their replies. A collective: every rank calls it, with counts that
 * agree pairwise (oc_dist_alltoall_u64 exchanges them first). Without the
 * group it copies rank 0's block.
 */
int oc_dist_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                      const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                      struct oc_err *err);
/*
 * oc_dist_alltoallv without waiting for it (MPI_Ialltoallv): send and recv
 * belong to the exchange until oc_dist_alltoallv_wait returns, and at most
 * one is in flight. Other collectives may run meanwhile (partitioned
 * training's gradient exchange), every rank starting them in the same
 * order. Without the group it copies at once.
 */
int oc_dist_alltoallv_start(const void *send, const uint64_t *send_counts, void *recv,
                            const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                            struct oc_err *err);
/* Waits for the exchange oc_dist_alltoallv_start began (nothing to do without one). */
int oc_dist_alltoallv_wait(struct oc_err *err);
/*
 * Whether an exchange oc_dist_alltoallv_start began is in flight: its MPI
 * request issued and not yet waited for. 0 without the group, whose start
 * copies at once.
 */
int oc_dist_alltoallv_in_flight(void);
/*
 * *done = whether the exchange in flight has completed (MPI_Test, which
 * also advances it); oc_dist_alltoallv_wait must still be called, and then
 * returns at once. *done = 1 when none is in flight.
 */
int oc_dist_alltoallv_test(int *done, struct oc_err *err);
/* recv[r] = what rank r put in its send[this rank] (MPI_Alltoall of one u64 each). */
int oc_dist_alltoall_u64(const uint64_t *send, uint64_t *recv, struct oc_err *err);
/* Ends every rank of the group with exit status code (MPI_Abort); exits without one. */
_Noreturn void oc_dist_abort(int code);
/* Leaves the group (MPI_Finalize); a no-op unless oc_dist_on. */
void oc_dist_finalize(void);

#endif
