/*
 * test_nn_kg.c — RED-GNN's ops and model on the CPU backend: row gather and
 * scatter-add, edge attention, edge messages, the GRU step and the loss over
 * all entities against naive double references; every backward against
 * central finite differences; the whole model's gradients (each activation,
 * with dropout) against finite differences of its loss; and bit-identical
 * scores and gradients at 1 and 2 threads on a larger random batch.
 */
#include "nn_testutil.h"

/* 2 queries, 3 relations; 5 source rows, 6 targets, 9 edges sorted by target. */
static const uint64_t kb_indptr[7] = {0, 2, 3, 5, 5, 7, 9};
static const uint32_t kb_src[9] = {0, 1, 1, 2, 3, 4, 0, 3, 4};
static const uint32_t kb_rel[9] = {0, 2, 1, 1, 0, 2, 2, 0, 1};
static const uint32_t kb_query[9] = {0, 0, 0, 1, 1, 1, 0, 1, 1};

static struct oc_nn_rel_block kblock(void)
{
    struct oc_nn_rel_block g = {5, 6, 9, 3, 2, kb_indptr, kb_src, kb_rel, kb_query};
    return g;
}

static double sigd(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* ---- edge attention ---- */

struct attn_fx {
    struct nt_env env;
    struct oc_nn_rel_block g;
    struct oc_nn_tensor ps, pr, pq, w, b, hid, alpha, dalpha, dpre, dw, db, dps, dpr, dpq;
    float wout[9];
};

static double attn_loss(void *cp)
{
    struct attn_fx *f = cp;
    struct oc_err err;
    if (oc_nn_edge_attn_fwd(&f->g, &f->ps, &f->pr, &f->pq, &f->w, &f->b, &f->hid, &f->alpha,
                            &err) != OC_OK)
        return NAN;
    return nt_dot(&f->alpha, f->wout);
}

OC_TEST(edge_attn_reference_and_gradients)
{
    struct attn_fx f;
    if (nt_env_new(&f.env, 2))
        return;
    struct oc_nn_backend *be = f.env.be;
    struct oc_err err;
    f.g = kblock();
    const uint64_t a = 3;
    nt_rand(&f.ps, be, 5, a, -1, 1, 1);
    nt_rand(&f.pr, be, 3, a, -1, 1, 2);
    nt_rand(&f.pq, be, 2, a, -1, 1, 3);
    nt_rand(&f.w, be, 1, a, -1, 1, 4);
    nt_rand(&f.b, be, 1, 1, -1, 1, 5);
    nt_zeros(&f.hid, be, 9, a, OC_NN_F32);
    nt_zeros(&f.alpha, be, 9, 1, OC_NN_F32);
    OC_CHECK_OK(oc_nn_edge_attn_fwd(&f.g, &f.ps, &f.pr, &f.pq, &f.w, &f.b, &f.hid, &f.alpha, &err),
                &err);
    double ref[9];
    for (int e = 0; e < 9; e++) {
        double acc = nt_f(&f.b)[0];
        for (uint64_t k = 0; k < a; k++) {
            double v = (double)nt_f(&f.ps)[kb_src[e] * a + k] + nt_f(&f.pr)[kb_rel[e] * a + k] +
                       nt_f(&f.pq)[kb_query[e] * a + k];
            acc += (v > 0 ? v : 0) * nt_f(&f.w)[k];
        }
        ref[e] = sigd(acc);
    }
    OC_CHECK(nt_maxdiff(nt_f(&f.alpha), ref, 9) < 1e-6);
    for (int e = 0; e < 9; e++)
        f.wout[e] = 0.3f + 0.1f * (float)e;
    nt_zeros(&f.dalpha, be, 9, 1, OC_NN_F32);
    memcpy(f.dalpha.data, f.wout, sizeof(f.wout));
    nt_zeros(&f.dpre, be, 9, a, OC_NN_F32);
    nt_zeros(&f.dw, be, 1, a, OC_NN_F32);
    nt_zeros(&f.db, be, 1, 1, OC_NN_F32);
    nt_zeros(&f.dps, be, 5, a, OC_NN_F32);
    nt_zeros(&f.dpr, be, 3, a, OC_NN_F32);
    nt_zeros(&f.dpq, be, 2, a, OC_NN_F32);
    OC_CHECK_OK(
        oc_nn_edge_attn_bwd(&f.g, &f.hid, &f.alpha, &f.dalpha, &f.w, &f.dpre, &f.dw, &f.db, &err),
        &err);
    OC_CHECK_OK(oc_nn_rows_scatter_add(&f.dpre, kb_src, &f.dps, &err), &err);
    OC_CHECK_OK(oc_nn_rows_scatter_add(&f.dpre, kb_rel, &f.dpr, &err), &err);
    OC_CHECK_OK(oc_nn_rows_scatter_add(&f.dpre, kb_query, &f.dpq, &err), &err);
    OC_CHECK(nt_gradcheck("ps", attn_loss, &f, &f.ps, nt_f(&f.dps), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("pr", attn_loss, &f, &f.pr, nt_f(&f.dpr), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("pq", attn_loss, &f, &f.pq, nt_f(&f.dpq), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("w", attn_loss, &f, &f.w, nt_f(&f.dw), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("b", attn_loss, &f, &f.b, nt_f(&f.db), 1e-3f, 1e-4, 1e-2) == 0);
    struct oc_nn_tensor *ts[] = {&f.ps,     &f.pr,   &f.pq, &f.w,  &f.b,   &f.hid, &f.alpha,
                                 &f.dalpha, &f.dpre, &f.dw, &f.db, &f.dps, &f.dpr, &f.dpq};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        oc_nn_tensor_deinit(ts[i]);
    /* a bad block is named */
    uint32_t bad_src[9] = {0, 1, 1, 2, 3, 9, 0, 3, 4};
    struct oc_nn_rel_block bad = kblock();
    bad.src = bad_src;
    nt_zeros(&f.ps, be, 5, a, OC_NN_F32);
    OC_CHECK_ERR(oc_nn_edge_msg_fwd(&bad, &f.ps, &f.ps, &f.ps, &f.ps, &err), OC_ERR_ARG, &err,
                 "src[5] = 9 out of range");
    oc_nn_tensor_deinit(&f.ps);
    nt_env_free(&f.env);
}

/* ---- edge messages ---- */

struct msg_fx {
    struct oc_nn_rel_block g;
    struct oc_nn_tensor h, r, alpha, y, dy, dh, dr, dalpha;
};

static double msg_loss(void *cp)
{
    struct msg_fx *f = cp;
    struct oc_err err;
    if (oc_nn_edge_msg_fwd(&f->g, &f->h, &f->r, &f->alpha, &f->y, &err) != OC_OK)
        return NAN;
    return nt_dot(&f->y, nt_f(&f->dy));
}

OC_TEST(edge_msg_reference_and_gradients)
{
    struct nt_env env;
    if (nt_env_new(&env, 2))
        return;
    struct oc_nn_backend *be = env.be;
    struct oc_err err;
    struct msg_fx f;
    f.g = kblock();
    const uint64_t d = 11;
    nt_rand(&f.h, be, 5, d, -1, 1, 11);
    nt_rand(&f.r, be, 3, d, -1, 1, 12);
    nt_rand(&f.alpha, be, 9, 1, 0, 1, 13);
    nt_zeros(&f.y, be, 6, d, OC_NN_F32);
    nt_rand(&f.dy, be, 6, d, -1, 1, 14);
    OC_CHECK_OK(oc_nn_edge_msg_fwd(&f.g, &f.h, &f.r, &f.alpha, &f.y, &err), &err);
    double ref[6 * 11];
    for (int i = 0; i < 6; i++)
        for (uint64_t k = 0; k < d; k++) {
            double s = 0;
            for (uint64_t e = kb_indptr[i]; e < kb_indptr[i + 1]; e++)
                s += (double)nt_f(&f.alpha)[e] *
                     ((double)nt_f(&f.h)[kb_src[e] * d + k] + nt_f(&f.r)[kb_rel[e] * d + k]);
            ref[i * d + k] = s;
        }
    OC_CHECK(nt_maxdiff(nt_f(&f.y), ref, 6 * d) < 1e-5);
    nt_rand(&f.dh, be, 5, d, 0.5f, 0.5f, 15); /* accumulated into: starts at 0.5 */
    nt_zeros(&f.dr, be, 3, d, OC_NN_F32);
    nt_zeros(&f.dalpha, be, 9, 1, OC_NN_F32);
    OC_CHECK_OK(
        oc_nn_edge_msg_bwd(&f.g, &f.h, &f.r, &f.alpha, &f.dy, &f.dh, &f.dr, &f.dalpha, &err), &err);
    for (uint64_t i = 0; i < 5 * d; i++)
        nt_f(&f.dh)[i] -= 0.5f;
    OC_CHECK(nt_gradcheck("h", msg_loss, &f, &f.h, nt_f(&f.dh), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("r", msg_loss, &f, &f.r, nt_f(&f.dr), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("alpha", msg_loss, &f, &f.alpha, nt_f(&f.dalpha), 1e-3f, 1e-4, 1e-2) ==
             0);
    struct oc_nn_tensor *ts[] = {&f.h, &f.r, &f.alpha, &f.y, &f.dy, &f.dh, &f.dr, &f.dalpha};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        oc_nn_tensor_deinit(ts[i]);
    nt_env_free(&env);
}

/* ---- GRU step ---- */

struct gru_fx {
    struct oc_nn_tensor gi, gh, h, hn, gates, dhn, dgi, dgh, dh;
};

static double gru_loss(void *cp)
{
    struct gru_fx *f = cp;
    struct oc_err err;
    if (oc_nn_gru_fwd(&f->gi, &f->gh, &f->h, &f->hn, &f->gates, &err) != OC_OK)
        return NAN;
    return nt_dot(&f->hn, nt_f(&f->dhn));
}

OC_TEST(gru_reference_and_gradients)
{
    struct nt_env env;
    if (nt_env_new(&env, 2))
        return;
    struct oc_nn_backend *be = env.be;
    struct oc_err err;
    struct gru_fx f;
    const uint64_t n = 70, hd = 5; /* more rows than one task */
    nt_rand(&f.gi, be, n, 3 * hd, -2, 2, 21);
    nt_rand(&f.gh, be, n, 3 * hd, -2, 2, 22);
    nt_rand(&f.h, be, n, hd, -1, 1, 23);
    nt_zeros(&f.hn, be, n, hd, OC_NN_F32);
    nt_zeros(&f.gates, be, n, 3 * hd, OC_NN_F32);
    nt_rand(&f.dhn, be, n, hd, -1, 1, 24);
    OC_CHECK_OK(oc_nn_gru_fwd(&f.gi, &f.gh, &f.h, &f.hn, &f.gates, &err), &err);
    double *ref = malloc(n * hd * sizeof(double));
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < hd; k++) {
            const float *gi = nt_f(&f.gi) + i * 3 * hd, *gh = nt_f(&f.gh) + i * 3 * hd;
            double r = sigd((double)gi[k] + gh[k]), z = sigd((double)gi[hd + k] + gh[hd + k]);
            double nn = tanh((double)gi[2 * hd + k] + r * gh[2 * hd + k]);
            ref[i * hd + k] = (1 - z) * nn + z * nt_f(&f.h)[i * hd + k];
        }
    OC_CHECK(nt_maxdiff(nt_f(&f.hn), ref, n * hd) < 1e-5);
    free(ref);
    nt_zeros(&f.dgi, be, n, 3 * hd, OC_NN_F32);
    nt_zeros(&f.dgh, be, n, 3 * hd, OC_NN_F32);
    nt_zeros(&f.dh, be, n, hd, OC_NN_F32);
    OC_CHECK_OK(oc_nn_gru_bwd(&f.gates, &f.gh, &f.h, &f.dhn, &f.dgi, &f.dgh, &f.dh, &err), &err);
    OC_CHECK(nt_gradcheck("gi", gru_loss, &f, &f.gi, nt_f(&f.dgi), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("gh", gru_loss, &f, &f.gh, nt_f(&f.dgh), 1e-3f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("h", gru_loss, &f, &f.h, nt_f(&f.dh), 1e-3f, 1e-4, 1e-2) == 0);
    struct oc_nn_tensor *ts[] = {&f.gi,  &f.gh,  &f.h,   &f.hn, &f.gates,
                                 &f.dhn, &f.dgi, &f.dgh, &f.dh};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        oc_nn_tensor_deinit(ts[i]);
    nt_env_free(&env);
}

/*
 * The forward at widths below 8, not a multiple of 8 and a multiple of 8
 * (rows by 8 as they lie, width 4 by pairs of rows, the rest gathered across
 * rows), over enough rows that the pool runs and an odd number of them (a
 * width-4 row left without a pair): gates and state match the double
 * reference; the bits are the same at 1 and 2 threads, and a row computed
 * alone (gathered) has the bits it has among the others.
 */
static void gru_row_alone(struct oc_nn_backend *be, const struct oc_nn_tensor *gi,
                          const struct oc_nn_tensor *gh, const struct oc_nn_tensor *h,
                          const struct oc_nn_tensor *hn, const struct oc_nn_tensor *gates,
                          uint64_t i)
{
    uint64_t hd = h->n_cols;
    struct oc_nn_tensor a, b, x, y, g;
    struct oc_err err;
    nt_zeros(&a, be, 1, 3 * hd, OC_NN_F32);
    nt_zeros(&b, be, 1, 3 * hd, OC_NN_F32);
    nt_zeros(&x, be, 1, hd, OC_NN_F32);
    nt_zeros(&y, be, 1, hd, OC_NN_F32);
    nt_zeros(&g, be, 1, 3 * hd, OC_NN_F32);
    memcpy(nt_f(&a), nt_f(gi) + i * 3 * hd, 3 * hd * sizeof(float));
    memcpy(nt_f(&b), nt_f(gh) + i * 3 * hd, 3 * hd * sizeof(float));
    memcpy(nt_f(&x), nt_f(h) + i * hd, hd * sizeof(float));
    OC_CHECK_OK(oc_nn_gru_fwd(&a, &b, &x, &y, &g, &err), &err);
    OC_CHECK(memcmp(nt_f(&y), nt_f(hn) + i * hd, hd * sizeof(float)) == 0);
    OC_CHECK(memcmp(nt_f(&g), nt_f(gates) + i * 3 * hd, 3 * hd * sizeof(float)) == 0);
    struct oc_nn_tensor *ts[] = {&a, &b, &x, &y, &g};
    for (size_t q = 0; q < sizeof(ts) / sizeof(ts[0]); q++)
        oc_nn_tensor_deinit(ts[q]);
}

OC_TEST(gru_any_width_same_bits_at_1_and_2_threads)
{
    static const uint64_t widths[] = {1, 4, 5, 12, 16};
    const uint64_t n = 3001;
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
        uint64_t hd = widths[w];
        float *out[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [threads - 1][hn, gates] */
        for (unsigned t = 0; t < 2; t++) {
            struct nt_env env;
            if (nt_env_new(&env, t + 1))
                return;
            struct oc_err err;
            struct oc_nn_tensor gi, gh, h, hn, gates;
            nt_rand(&gi, env.be, n, 3 * hd, -3, 3, 31);
            nt_rand(&gh, env.be, n, 3 * hd, -3, 3, 32);
            nt_rand(&h, env.be, n, hd, -1, 1, 33);
            nt_zeros(&hn, env.be, n, hd, OC_NN_F32);
            nt_zeros(&gates, env.be, n, 3 * hd, OC_NN_F32);
            OC_CHECK_OK(oc_nn_gru_fwd(&gi, &gh, &h, &hn, &gates, &err), &err);
            double worst = 0;
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t k = 0; k < hd; k++) {
                    const float *a = nt_f(&gi) + i * 3 * hd, *b = nt_f(&gh) + i * 3 * hd;
                    const float *g = nt_f(&gates) + i * 3 * hd;
                    double r = sigd((double)a[k] + b[k]), z = sigd((double)a[hd + k] + b[hd + k]);
                    double nv = tanh((double)a[2 * hd + k] + r * b[2 * hd + k]);
                    double o = (1 - z) * nv + z * nt_f(&h)[i * hd + k];
                    double d[4] = {g[k] - r, g[hd + k] - z, g[2 * hd + k] - nv,
                                   nt_f(&hn)[i * hd + k] - o};
                    for (int q = 0; q < 4; q++)
                        worst = fabs(d[q]) > worst ? fabs(d[q]) : worst;
                }
            OC_CHECK(worst < 1e-5);
            for (uint64_t i = 0; i < n; i += 1000) /* 0, 1000, 2000, 3000 (the last, unpaired) */
                gru_row_alone(env.be, &gi, &gh, &h, &hn, &gates, i);
            gru_row_alone(env.be, &gi, &gh, &h, &hn, &gates, 1);
            out[t][0] = malloc(n * hd * sizeof(float));
            out[t][1] = malloc(n * 3 * hd * sizeof(float));
            memcpy(out[t][0], nt_f(&hn), n * hd * sizeof(float));
            memcpy(out[t][1], nt_f(&gates), n * 3 * hd * sizeof(float));
            struct oc_nn_tensor *ts[] = {&gi, &gh, &h, &hn, &gates};
            for (size_t q = 0; q < sizeof(ts) / sizeof(ts[0]); q++)
                oc_nn_tensor_deinit(ts[q]);
            nt_env_free(&env);
        }
        OC_CHECK(memcmp(out[0][0], out[1][0], n * hd * sizeof(float)) == 0);
        OC_CHECK(memcmp(out[0][1], out[1][1], n * 3 * hd * sizeof(float)) == 0);
        for (int t = 0; t < 2; t++)
            for (int q = 0; q < 2; q++)
                free(out[t][q]);
    }
}

/* ---- loss over all entities ---- */

struct xent_fx {
    struct oc_nn_tensor s, ds, tmp;
    uint64_t qptr[4];
    int64_t pos[3];
    uint64_t n_ent;
};

static double xent_loss(void *cp)
{
    struct xent_fx *f = cp;
    struct oc_err err;
    double l = NAN;
    if (oc_nn_kg_xent(&f->s, f->qptr, f->pos, 3, f->n_ent, &f->tmp, &l, &err) != OC_OK)
        return NAN;
    return l;
}

OC_TEST(kg_xent_reference_and_gradients)
{
    struct nt_env env;
    if (nt_env_new(&env, 2))
        return;
    struct oc_nn_backend *be = env.be;
    struct oc_err err;
    struct xent_fx f = {.qptr = {0, 3, 3, 7}, .pos = {1, -1, 6}, .n_ent = 9};
    nt_rand(&f.s, be, 7, 1, -3, 3, 31);
    nt_zeros(&f.ds, be, 7, 1, OC_NN_F32);
    nt_zeros(&f.tmp, be, 7, 1, OC_NN_F32);
    double loss = 0;
    OC_CHECK_OK(oc_nn_kg_xent(&f.s, f.qptr, f.pos, 3, f.n_ent, &f.ds, &loss, &err), &err);
    /* reference: logits over all 9 entities, unreached ones 0 */
    double ref = 0;
    for (int q = 0; q < 3; q++) {
        double all[9] = {0}, pos_s = 0;
        for (uint64_t i = f.qptr[q]; i < f.qptr[q + 1]; i++)
            all[i - f.qptr[q]] = nt_f(&f.s)[i];
        if (f.pos[q] >= 0)
            pos_s = nt_f(&f.s)[f.pos[q]];
        double mx = all[0], z = 0;
        for (int e = 1; e < 9; e++)
            mx = all[e] > mx ? all[e] : mx;
        for (int e = 0; e < 9; e++)
            z += exp(all[e] - mx);
        ref += -pos_s + mx + log(z);
    }
    OC_CHECK(fabs(loss - ref) < 1e-6 * fabs(ref) + 1e-9);
    OC_CHECK(nt_gradcheck("scores", xent_loss, &f, &f.s, nt_f(&f.ds), 1e-3f, 1e-4, 1e-2) == 0);
    int64_t bad_pos[3] = {1, -1, 2};
    OC_CHECK_ERR(oc_nn_kg_xent(&f.s, f.qptr, bad_pos, 3, f.n_ent, &f.ds, &loss, &err), OC_ERR_ARG,
                 &err, "answer row of query 2");
    oc_nn_tensor_deinit(&f.s);
    oc_nn_tensor_deinit(&f.ds);
    oc_nn_tensor_deinit(&f.tmp);
    nt_env_free(&env);
}

OC_TEST(rows_gather_scatter_reference)
{
    struct nt_env env;
    if (nt_env_new(&env, 2))
        return;
    struct oc_err err;
    struct oc_nn_tensor x, y, z;
    nt_rand(&x, env.be, 4, 19, -1, 1, 41);
    nt_zeros(&y, env.be, 6, 19, OC_NN_F32);
    nt_zeros(&z, env.be, 4, 19, OC_NN_F32);
    const uint32_t idx[6] = {3, 0, 3, 2, 1, 3};
    OC_CHECK_OK(oc_nn_rows_gather(&x, idx, &y, &err), &err);
    int ok = 1;
    for (int i = 0; i < 6; i++)
        ok &= memcmp(nt_f(&y) + i * 19, nt_f(&x) + idx[i] * 19, 19 * 4) == 0;
    OC_CHECK(ok);
    OC_CHECK_OK(oc_nn_rows_scatter_add(&y, idx, &z, &err), &err);
    ok = 1;
    for (int k = 0; k < 19; k++) {
        ok &= nt_f(&z)[3 * 19 + k] == nt_f(&x)[3 * 19 + k] * 3.0f;
        ok &= nt_f(&z)[0 * 19 + k] == nt_f(&x)[0 * 19 + k];
    }
    OC_CHECK(ok);
    const uint32_t bad[6] = {3, 0, 4, 2, 1, 3};
    OC_CHECK_ERR(oc_nn_rows_gather(&x, bad, &y, &err), OC_ERR_ARG, &err, "idx[2] = 4");
    oc_nn_tensor_deinit(&x);
    oc_nn_tensor_deinit(&y);
    oc_nn_tensor_deinit(&z);
    nt_env_free(&env);
}

/* ---- the whole model ---- */

/* layer 0: 2 queries -> 6 nodes (kblock with n_src 2); layer 1: 6 -> 6 */
static const uint32_t m0_src[9] = {0, 1, 1, 0, 1, 0, 0, 1, 1};
static const uint32_t m_p2n0[2] = {0, 3};
static const uint32_t m1_src[9] = {0, 3, 1, 2, 5, 4, 0, 3, 5};
static const uint32_t m_p2n1[6] = {0, 1, 2, 3, 4, 5};
static const uint32_t m_qrel[2] = {1, 2};
static const uint64_t m_qptr[3] = {0, 3, 6};
static const int64_t m_ans[2] = {2, -1};

struct model_fx {
    struct oc_nn_redgnn *m;
    struct oc_nn_rel_block blocks[2];
    const uint32_t *p2n[2];
    struct oc_nn_redgnn_batch b;
};

static double model_loss(void *cp)
{
    struct model_fx *f = cp;
    struct oc_err err;
    const float *s = NULL;
    struct oc_nn_step step = {1, 0, 0};
    double l = NAN;
    if (oc_nn_redgnn_forward(f->m, &f->b, &step, &s, &err) != OC_OK ||
        oc_nn_redgnn_loss(f->m, m_qptr, m_ans, 8, &l, &err) != OC_OK)
        return NAN;
    return l;
}

static void model_fx_init(struct model_fx *f)
{
    f->blocks[0] = kblock();
    f->blocks[0].n_src = 2;
    f->blocks[0].src = m0_src;
    f->blocks[1] = kblock();
    f->blocks[1].n_src = 6;
    f->blocks[1].src = m1_src;
    f->p2n[0] = m_p2n0;
    f->p2n[1] = m_p2n1;
    f->b = (struct oc_nn_redgnn_batch){2, m_qrel, f->blocks, f->p2n};
}

OC_TEST(redgnn_model_gradients)
{
    struct nt_env env;
    if (nt_env_new(&env, 2))
        return;
    struct oc_err err;
    for (int act = 0; act < OC_NN_REDGNN_ACT_COUNT; act++) {
        struct model_fx f;
        model_fx_init(&f);
        struct oc_nn_redgnn_config cfg = {2, 4, 3, 3, (enum oc_nn_redgnn_act)act, 0.3f, 7};
        OC_CHECK_OK(oc_nn_redgnn_new(env.be, &cfg, &f.m, &err), &err);
        if (!f.m)
            break;
        double l = model_loss(&f);
        OC_CHECK(isfinite(l));
        OC_CHECK_OK(oc_nn_redgnn_backward(f.m, &err), &err);
        struct oc_nn_model *base = oc_nn_redgnn_model(f.m);
        for (uint32_t i = 0; i < oc_nn_model_n_params(base); i++) {
            struct oc_nn_param *p = oc_nn_model_param_at(base, i);
            uint64_t n = p->grad.n_rows * p->grad.n_cols;
            float *g = malloc(n * 4 + 4);
            memcpy(g, p->grad.data, n * 4);
            char what[64];
            snprintf(what, sizeof(what), "%s/%s", oc_nn_redgnn_act_name(cfg.act), p->name);
            OC_CHECK(nt_gradcheck(what, model_loss, &f, &p->value, g, 1e-2f, 2e-3, 3e-2) == 0);
            free(g);
        }
        oc_nn_redgnn_free(f.m);
    }
    nt_env_free(&env);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(redgnn_same_bits_at_1_and_2_threads)
{
    uint8_t dig[2][32];
    float first_scores[6];
    int same_scores = 1;
    for (unsigned t = 1; t <= 2; t++) {
        struct nt_env env;
        if (nt_env_new(&env, t))
            return;
        struct oc_err err;
        struct model_fx f;
        model_fx_init(&f);
        struct oc_nn_redgnn_config cfg = {2, 40, 5, 3, OC_NN_REDGNN_RELU, 0.2f, 3};
        OC_CHECK_OK(oc_nn_redgnn_new(env.be, &cfg, &f.m, &err), &err);
        if (!f.m)
            return;
        struct oc_nn_adam opt;
        oc_nn_adam_default(&opt, 0.01f, 1e-4f);
        const float *s = NULL;
        for (int step_i = 0; step_i < 3; step_i++) {
            model_loss(&f);
            OC_CHECK_OK(oc_nn_redgnn_backward(f.m, &err), &err);
            OC_CHECK_OK(oc_nn_model_adam_step(oc_nn_redgnn_model(f.m), &opt, &err), &err);
        }
        struct oc_nn_step ev = {0, 0, 0};
        OC_CHECK_OK(oc_nn_redgnn_forward(f.m, &f.b, &ev, &s, &err), &err);
        if (t == 1)
            memcpy(first_scores, s, sizeof(first_scores));
        else
            same_scores = memcmp(first_scores, s, sizeof(first_scores)) == 0;
        OC_CHECK_OK(oc_nn_model_params_sha256(oc_nn_redgnn_model(f.m), dig[t - 1], &err), &err);
        oc_nn_redgnn_free(f.m);
        nt_env_free(&env);
    }
    OC_CHECK(same_scores);
    OC_CHECK(memcmp(dig[0], dig[1], 32) == 0);
}

OC_TEST_MAIN()
