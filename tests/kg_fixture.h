/*
 * kg_fixture.h — test helpers for the KG module: a tiny GraIL split written
 * by hand (the training graph a -r1-> b, b -r2-> c, c -r1-> a, an inductive
 * graph given by the caller), and the imported dataset of a GraIL split of
 * ../shared (imported once per test executable).
 */
#ifndef OFFCORE_TEST_KG_FIXTURE_H
#define OFFCORE_TEST_KG_FIXTURE_H

#include <stdio.h>

#include "harness.h"
#include "import_fixture.h"
#include "offcore/kg.h"

/* Writes root/toy_v1 and root/toy_v1_ind; returns the training graph's directory. */
static inline const char *kgfx_toy_split(const char *root, const char *ind_train)
{
    static char src[700];
    snprintf(src, sizeof(src), "%s/toy_v1", root);
    fx_write(root, "toy_v1/train.txt", "a\tr1\tb\nb\tr2\tc\nc\tr1\ta\n");
    fx_write(root, "toy_v1/valid.txt", "a\tr2\tc\n");
    fx_write(root, "toy_v1/test.txt", "b\tr1\ta\n");
    fx_write(root, "toy_v1_ind/train.txt", ind_train);
    fx_write(root, "toy_v1_ind/valid.txt", "y\tr1\tx\n");
    fx_write(root, "toy_v1_ind/test.txt", "x\tr1\tz\n");
    return src;
}

/* The imported GraIL split `name` of ../shared (NULL when ../shared is absent). */
static inline const char *kgfx_grail(const char *name)
{
    const char *shared = oc_test_shared();
    if (!shared)
        return NULL;
    static char out[8][700];
    static int n_out;
    char src[900];
    snprintf(src, sizeof(src), "%s/datasets/kg-inductive/%s", shared, name);
    const char *dir = out[n_out++ % 8];
    snprintf((char *)dir, sizeof(out[0]), "%s/%s", oc_test_tmpdir(), name);
    struct oc_err err;
    int rc = oc_kg_import_grail(src, dir, NULL, &err);
    OC_CHECK_OK(rc, &err); /* ../shared is here: a failed import fails, never skips */
    return rc == OC_OK ? dir : NULL;
}

#endif
