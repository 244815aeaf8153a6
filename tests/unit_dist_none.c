/*
 * unit_dist_none.c — dist_none.c, the dist module of a build without MPI,
 * linked on its own into a build that has MPI (CMake registers it as
 * test_dist_none there; test_train_dist covers it in builds without MPI):
 * rank 0 of 1, and oc_dist_init refuses --distributed naming how to get it.
 *
 * Place in the data flow: tests (src/train/dist_none.c).
 * Thread-safety: single-threaded test code.
 * Ownership: none.
 */
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

OC_TEST_MAIN()
