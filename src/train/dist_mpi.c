/*
 * dist_mpi.c — dist.h over MPI (OpenMPI): MPI_Init / MPI_Finalize, the rank
 * and size of MPI_COMM_WORLD, MPI_Allgatherv for the gradients (each rank's
 * block lands at a fixed place, so the sum the trainer then takes in its own
 * fixed order does not depend on timing, unlike MPI_Allreduce's unspecified
 * order; evaluation's score keys go the same way), MPI_Allreduce for
 * evaluation's integer counts (exact in any order), MPI_Alltoall(v) for
 * partitioned training's row requests and replies (the replies started with
 * MPI_Ialltoallv, tested (MPI_Test) and waited for after the step they
 * overlap), and MPI_Abort.
 *
 * Place in the data flow: train (see dist.h); compiled only when CMake
 * found MPI (OC_MPI), instead of dist_none.c.
 * Thread-safety: MPI_THREAD_SINGLE use: the main thread makes every call.
 * Ownership: the group is process-global; buffers are the caller's.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

#define DIST_MAX_RANKS 4096

static int dist_on;
static uint32_t dist_rank, dist_size = 1;

int oc_dist_built(void)
{
    return 1;
}

/* An MPI error code as text for an oc_err. */
static int dist_fail(struct oc_err *err, const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, msg, &len);
    return OC_ERR(err, OC_ERR_IO, "--distributed: %s failed: %s", what, msg);
}

int oc_dist_init(struct oc_err *err)
{
    if (dist_on)
        return OC_OK;
    int rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS)
        return dist_fail(err, "MPI_Init", rc);
    /* errors come back as codes, reported as the others; the CLI then aborts the group */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > DIST_MAX_RANKS) {
        MPI_Finalize();
        return OC_ERR(err, OC_ERR_ARG, "--distributed: %d ranks, at most %d", size, DIST_MAX_RANKS);
    }
    dist_rank = (uint32_t)rank;
    dist_size = (uint32_t)size;
    dist_on = 1;
    return OC_OK;
}

int oc_dist_on(void)
{
    return dist_on;
}

uint32_t oc_dist_rank(void)
{
    return dist_rank;
}

uint32_t oc_dist_size(void)
{
    return dist_size;
}

/* MPI_Allgatherv of counts[r] elements of type t (size bytes each) from every rank r. */
static int dist_allgather(const void *send, void *recv, const uint64_t *counts, MPI_Datatype t,
                          size_t size, const char *what, struct oc_err *err)
{
    if (!dist_on) {
        if (counts[0])
            memmove(recv, send, counts[0] * size);
        return OC_OK;
    }
    static int c[DIST_MAX_RANKS], displ[DIST_MAX_RANKS];
    uint64_t at = 0;
    for (uint32_t r = 0; r < dist_size; r++) {
        if (counts[r] > INT_MAX || at > INT_MAX)
            return OC_ERR(err, OC_ERR_UNSUPPORTED,
                          "--distributed: %llu values of %s to exchange is more than MPI "
                          "counts hold (fewer --micro-shards or a smaller model or split)",
                          (unsigned long long)(at + counts[r]), what);
        c[r] = (int)counts[r];
        displ[r] = (int)at;
        at += counts[r];
    }
    int rc = MPI_Allgatherv(send, c[dist_rank], t, recv, c, displ, t, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char op[160];
        snprintf(op, sizeof(op), "MPI_Allgatherv of %s", what);
        return dist_fail(err, op, rc);
    }
    return OC_OK;
}

int oc_dist_allgather_f32(const float *send, float *recv, const uint64_t *counts,
                          struct oc_err *err)
{
    return dist_allgather(send, recv, counts, MPI_FLOAT, sizeof(float), "the gradients", err);
}

int oc_dist_allgather_u64(const uint64_t *send, uint64_t *recv, const uint64_t *counts,
                          struct oc_err *err)
{
    return dist_allgather(send, recv, counts, MPI_UINT64_T, sizeof(uint64_t),
                          "the evaluation scores", err);
}

int oc_dist_sum_u64(uint64_t *v, uint64_t n, struct oc_err *err)
{
    if (!dist_on || n == 0)
        return OC_OK;
    if (n > INT_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "--distributed: %llu evaluation counts to sum is more than MPI counts hold",
                      (unsigned long long)n);
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return dist_fail(err, "MPI_Allreduce of the evaluation counts", rc);
    return OC_OK;
}

/* An all-to-all's byte counts and displacements, as MPI takes them (int). */
struct dist_counts {
    int sc[DIST_MAX_RANKS], sd[DIST_MAX_RANKS], rc[DIST_MAX_RANKS], rd[DIST_MAX_RANKS];
};

static int dist_counts_set(struct dist_counts *c, const uint64_t *send_counts,
                           const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                           struct oc_err *err)
{
    uint64_t s_at = 0, r_at = 0;
    for (uint32_t r = 0; r < dist_size; r++) {
        uint64_t s = send_counts[r] * elem_bytes, q = recv_counts[r] * elem_bytes;
        if (s > INT_MAX || q > INT_MAX || s_at > INT_MAX || r_at > INT_MAX)
            return OC_ERR(err, OC_ERR_UNSUPPORTED,
                          "--distributed: %s: more bytes to exchange in one batch than MPI "
                          "counts hold (a smaller --batch)",
                          what);
        c->sc[r] = (int)s;
        c->sd[r] = (int)s_at;
        c->rc[r] = (int)q;
        c->rd[r] = (int)r_at;
        s_at += s;
        r_at += q;
    }
    return OC_OK;
}

static int alltoallv_fail(struct oc_err *err, const char *call, const char *what, int code)
{
    char op[160];
    snprintf(op, sizeof(op), "%s of %s", call, what);
    return dist_fail(err, op, code);
}

int oc_dist_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                      const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                      struct oc_err *err)
{
    if (!dist_on) {
        if (send_counts[0])
            memmove(recv, send, send_counts[0] * elem_bytes);
        return OC_OK;
    }
    static struct dist_counts c;
    int rc = dist_counts_set(&c, send_counts, recv_counts, elem_bytes, what, err);
    if (rc)
        return rc;
    rc = MPI_Alltoallv(send, c.sc, c.sd, MPI_BYTE, recv, c.rc, c.rd, MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? OC_OK : alltoallv_fail(err, "MPI_Alltoallv", what, rc);
}

/* The one exchange in flight (oc_dist_alltoallv_start): its counts live until it completes. */
static struct {
    struct dist_counts c;
    MPI_Request req;
    int on;
    const char *what;
} dist_flight;

int oc_dist_alltoallv_start(const void *send, const uint64_t *send_counts, void *recv,
                            const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                            struct oc_err *err)
{
    if (!dist_on)
        return oc_dist_alltoallv(send, send_counts, recv, recv_counts, elem_bytes, what, err);
    OC_ASSERT(!dist_flight.on);
    struct dist_counts *c = &dist_flight.c;
    int rc = dist_counts_set(c, send_counts, recv_counts, elem_bytes, what, err);
    if (rc)
        return rc;
    rc = MPI_Ialltoallv(send, c->sc, c->sd, MPI_BYTE, recv, c->rc, c->rd, MPI_BYTE, MPI_COMM_WORLD,
                        &dist_flight.req);
    if (rc != MPI_SUCCESS)
        return alltoallv_fail(err, "MPI_Ialltoallv", what, rc);
    dist_flight.on = 1;
    dist_flight.what = what;
    return OC_OK;
}

int oc_dist_alltoallv_wait(struct oc_err *err)
{
    if (!dist_flight.on)
        return OC_OK;
    dist_flight.on = 0;
    /* after a successful MPI_Test the request is MPI_REQUEST_NULL: MPI_Wait returns at once */
    int rc = MPI_Wait(&dist_flight.req, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? OC_OK : alltoallv_fail(err, "MPI_Wait", dist_flight.what, rc);
}

int oc_dist_alltoallv_in_flight(void)
{
    return dist_flight.on;
}

int oc_dist_alltoallv_test(int *done, struct oc_err *err)
{
    *done = 1;
    if (!dist_flight.on)
        return OC_OK;
    int flag = 0;
    int rc = MPI_Test(&dist_flight.req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return alltoallv_fail(err, "MPI_Test", dist_flight.what, rc);
    *done = flag;
    return OC_OK;
}

int oc_dist_alltoall_u64(const uint64_t *send, uint64_t *recv, struct oc_err *err)
{
    if (!dist_on) {
        recv[0] = send[0];
        return OC_OK;
    }
    int rc = MPI_Alltoall(send, 1, MPI_UINT64_T, recv, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return dist_fail(err, "MPI_Alltoall of the row request counts", rc);
    return OC_OK;
}

_Noreturn void oc_dist_abort(int code)
{
    if (!dist_on)
        exit(code);
    MPI_Abort(MPI_COMM_WORLD, code);
    _Exit(code); /* MPI_Abort does not return; should it, do not run exit handlers */
}

void oc_dist_finalize(void)
{
    if (!dist_on)
        return;
    MPI_Finalize();
    dist_on = 0;
}
