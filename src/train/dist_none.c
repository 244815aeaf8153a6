/*
 * dist_none.c — dist.h in a build without MPI (-DOC_MPI=OFF, or AUTO where
 * no MPI was found): one process of rank 0, and --distributed refused with
 * the way to get it.
 *
 * Place in the data flow: train (see dist.h).
 * Thread-safety: stateless.
 * Ownership: none.
 */
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

int oc_dist_built(void)
{
    return 0;
}

int oc_dist_init(struct oc_err *err)
{
    return OC_ERR(err, OC_ERR_UNSUPPORTED,
                  "--distributed: this offcore was built without MPI (install libopenmpi-dev "
                  "and openmpi-bin, e.g. make deps, and rebuild with cmake -DOC_MPI=ON)");
}

int oc_dist_on(void)
{
    return 0;
}

uint32_t oc_dist_rank(void)
{
    return 0;
}

uint32_t oc_dist_size(void)
{
    return 1;
}

int oc_dist_allgather_f32(const float *send, float *recv, const uint64_t *counts,
                          struct oc_err *err)
{
    (void)err;
    if (counts[0])
        memmove(recv, send, counts[0] * sizeof(float));
    return OC_OK;
}

int oc_dist_allgather_u64(const uint64_t *send, uint64_t *recv, const uint64_t *counts,
                          struct oc_err *err)
{
    (void)err;
    if (counts[0])
        memmove(recv, send, counts[0] * sizeof(uint64_t));
    return OC_OK;
}

int oc_dist_sum_u64(uint64_t *v, uint64_t n, struct oc_err *err)
{
    (void)v;
    (void)n;
    (void)err;
    return OC_OK;
}

int oc_dist_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                      const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                      struct oc_err *err)
{
    (void)recv_counts;
    (void)what;
    (void)err;
    if (send_counts[0])
        memmove(recv, send, send_counts[0] * elem_bytes);
    return OC_OK;
}

int oc_dist_alltoallv_start(const void *send, const uint64_t *send_counts, void *recv,
                            const uint64_t *recv_counts, size_t elem_bytes, const char *what,
                            struct oc_err *err)
{
    return oc_dist_alltoallv(send, send_counts, recv, recv_counts, elem_bytes, what, err);
}

int oc_dist_alltoallv_wait(struct oc_err *err)
{
    (void)err;
    return OC_OK;
}

int oc_dist_alltoallv_in_flight(void)
{
    return 0;
}

int oc_dist_alltoallv_test(int *done, struct oc_err *err)
{
    (void)err;
    *done = 1;
    return OC_OK;
}

int oc_dist_alltoall_u64(const uint64_t *send, uint64_t *recv, struct oc_err *err)
{
    (void)err;
    recv[0] = send[0];
    return OC_OK;
}

_Noreturn void oc_dist_abort(int code)
{
    exit(code);
}

void oc_dist_finalize(void)
{
}
