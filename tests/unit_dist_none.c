/*
 * unit_dist_none.c — dist_none.c, the dist module of a build without MPI,
 * linked on its own into a build that has MPI (CMake registers it as
 * test_dist_none there; test_train_dist covers it in builds without MPI):
 * rank 0 of 1, oc_dist_init refuses --distributed naming how to get it, and
 * the collectives of one rank: the all-gathers copy, the sum keeps, the
 * all-to-all of rows copies, started or not (never in flight).
 *
 * Place in the data flow: tests (src/train/dist_none.c).
 * Thread-safety: single-threaded test code.
 * Ownership: none.
 */
#include <string.h>

#include "harness.h"
#include "train/dist.h"

OC_TEST(no_mpi_refuses_distributed)
{
    struct oc_err err;
    OC_CHECK(!oc_dist_built());
    OC_CHECK_ERR(oc_dist_init(&err), OC_ERR_UNSUPPORTED, &err, "--distributed");
    OC_CHECK(strstr(err.msg, "built without MPI") && strstr(err.msg, "-DOC_MPI=ON"));
    OC_CHECK(!oc_dist_on() && oc_dist_rank() == 0 && oc_dist_size() == 1);
}

OC_TEST(one_rank_gathers_its_own_and_sums_to_itself)
{
    struct oc_err err;
    uint64_t send[3] = {5, 1, 9}, recv[3] = {0}, counts[1] = {3};
    OC_CHECK_OK(oc_dist_allgather_u64(send, recv, counts, &err), &err);
    OC_CHECK(recv[0] == 5 && recv[1] == 1 && recv[2] == 9);
    float fs[2] = {1.5f, -2.0f}, fr[2] = {0};
    uint64_t fc[1] = {2};
    OC_CHECK_OK(oc_dist_allgather_f32(fs, fr, fc, &err), &err);
    OC_CHECK(fr[0] == 1.5f && fr[1] == -2.0f);
    OC_CHECK_OK(oc_dist_sum_u64(send, 3, &err), &err);
    OC_CHECK(send[0] == 5 && send[1] == 1 && send[2] == 9);
}

OC_TEST(one_rank_exchanges_rows_with_itself_started_or_not)
{
    struct oc_err err;
    uint64_t counts[1] = {3};
    float send[3] = {1.5f, -2.0f, 3.25f}, recv[3] = {0}, later[3] = {0};
    OC_CHECK_OK(oc_dist_alltoallv(send, counts, recv, counts, sizeof(float), "rows", &err), &err);
    OC_CHECK(memcmp(recv, send, sizeof(send)) == 0);
    OC_CHECK_OK(oc_dist_alltoallv_start(send, counts, later, counts, sizeof(float), "rows", &err),
                &err);
    int done = 0;
    OC_CHECK(!oc_dist_alltoallv_in_flight()); /* one rank copies at once: nothing travels */
    OC_CHECK_OK(oc_dist_alltoallv_test(&done, &err), &err);
    OC_CHECK(done);
    OC_CHECK_OK(oc_dist_alltoallv_wait(&err), &err);
    OC_CHECK(memcmp(later, send, sizeof(send)) == 0);
    OC_CHECK_OK(oc_dist_alltoallv_wait(&err), &err); /* nothing in flight: nothing to do */
}

OC_TEST_MAIN()
