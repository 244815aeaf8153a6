/*
 * test_nn_graph_ops.c — the graph side of nn on the CPU backend: block
 * preparation (self-loop rule, GCN degrees, transpose order, validation
 * errors) against hand-checked answers on the golden block; sparse
 * aggregation (sum, mean, GCN) and the GAT ops (projections, edge softmax,
 * attention aggregation) against naive double references and finite
 * differences; and bit-identical results at 1, 2 and 3 threads on a larger
 * random block.
 */
#include "nn_testutil.h"

/* Effective edges (dst, src) of a block, as nn.h defines them. */
static uint64_t ref_edges(const struct oc_nn_block *b, int self_loops, uint64_t *dst, uint64_t *src)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < b->n_dst; i++) {
        if (self_loops) {
            dst[n] = i;
            src[n++] = i;
        }
        for (uint64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++) {
            if (self_loops && b->indices[e] == i)
                continue;
            dst[n] = i;
            src[n++] = b->indices[e];
        }
    }
    return n;
}

OC_TEST(graph_prepare_golden_block)
{
    struct oc_nn_graph g;
    struct oc_err err;
    oc_nn_graph_init(&g);
    struct oc_nn_block b = nt_block0();
    OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 1, 1, &err), &err);
    /* self-loop first, explicit self-edges (0->0, 3->3) dropped */
    static const uint64_t ip[5] = {0, 3, 8, 9, 12};
    static const uint32_t ix[12] = {0, 2, 5, 1, 3, 4, 6, 0, 2, 3, 1, 5};
    OC_CHECK(g.n_edges == 12 && memcmp(g.indptr, ip, sizeof(ip)) == 0);
    OC_CHECK(memcmp(g.indices, ix, sizeof(ix)) == 0);
    /* in-degrees 3 5 1 3; out-degrees 2 2 2 2 1 2 1 */
    static const double in_deg[4] = {3, 5, 1, 3}, out_deg[7] = {2, 2, 2, 2, 1, 2, 1};
    int norm_ok = 1;
    for (int i = 0; i < 4; i++)
        norm_ok &= fabs(g.norm_dst[i] - 1.0 / sqrt(in_deg[i])) < 1e-7;
    for (int j = 0; j < 7; j++)
        norm_ok &= fabs(g.norm_src[j] - 1.0 / sqrt(out_deg[j])) < 1e-7;
    OC_CHECK(norm_ok);
    /* transpose: entries of each src ordered by dst */
    OC_CHECK_OK(oc_nn_graph_need_transpose(&g, &err), &err);
    static const uint64_t tp[8] = {0, 2, 4, 6, 8, 9, 11, 12};
    static const uint32_t td[12] = {0, 1, 1, 3, 0, 2, 1, 3, 1, 0, 3, 1};
    static const uint64_t te[12] = {0, 7, 3, 10, 1, 8, 4, 9, 5, 2, 11, 6};
    OC_CHECK(memcmp(g.t_indptr, tp, sizeof(tp)) == 0);
    OC_CHECK(memcmp(g.t_dst, td, sizeof(td)) == 0);
    OC_CHECK(memcmp(g.t_eid, te, sizeof(te)) == 0);
    /* without self-loops the block's arrays are used as they are */
    OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 0, 1, &err), &err);
    OC_CHECK(g.indptr == b.indptr && g.n_edges == 10 && !g.has_t);
    OC_CHECK(fabs(g.norm_dst[2] - 1.0) < 1e-7); /* degree 0 clamped to 1 */
    /* whole-graph out-degrees replace the block counts */
    static const uint64_t deg[7] = {3, 0, 8, 1, 1, 1, 15};
    b.src_out_deg = deg;
    OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 1, 1, &err), &err);
    OC_CHECK(fabs(g.norm_src[2] - 1.0 / 3.0) < 1e-7 && fabs(g.norm_src[6] - 0.25) < 1e-7);
    OC_CHECK(fabs(g.norm_src[1] - 1.0 / sqrt(1.0)) < 1e-7);
    /* validation */
    uint64_t bad_ip[5] = {0, 3, 2, 7, 10};
    struct oc_nn_block bad = {7, 4, bad_ip, nt_b0_indices, NULL};
    OC_CHECK_ERR(oc_nn_graph_prepare(&g, &bad, 1, 0, &err), OC_ERR_ARG, &err,
                 "indptr decreases at dst 1");
    uint32_t bad_ix[10] = {0, 2, 5, 3, 4, 9, 0, 1, 3, 5};
    bad = (struct oc_nn_block){7, 4, nt_b0_indptr, bad_ix, NULL};
    OC_CHECK_ERR(oc_nn_graph_prepare(&g, &bad, 0, 0, &err), OC_ERR_ARG, &err,
                 "edge 5: src 9 >= n_src 7");
    bad = (struct oc_nn_block){3, 4, nt_b0_indptr, nt_b0_indices, NULL};
    OC_CHECK_ERR(oc_nn_graph_prepare(&g, &bad, 0, 0, &err), OC_ERR_ARG, &err, "4 dst nodes");
    oc_nn_graph_deinit(&g);
}

struct agg_gc {
    const struct oc_nn_graph *g;
    enum oc_nn_agg agg;
    struct oc_nn_tensor *x, *y;
    const float *w;
};

static double agg_loss(void *p)
{
    struct agg_gc *c = p;
    struct oc_err err;
    if (oc_nn_agg_fwd(c->g, c->agg, c->x, c->y, &err) != OC_OK)
        return NAN;
    return nt_dot(c->y, c->w);
}

OC_TEST(aggregation_reference_and_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct oc_nn_block b = nt_block0();
    const uint64_t C = 5;
    for (int sl = 0; sl < 2; sl++)
        for (int a = 0; a < OC_NN_AGG_COUNT; a++) {
            struct oc_nn_graph g;
            oc_nn_graph_init(&g);
            OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, sl, 1, &err), &err);
            struct oc_nn_tensor x, y, w, dx;
            nt_rand(&x, env.be, 7, C, -1, 1, 100);
            nt_zeros(&y, env.be, 4, C, OC_NN_F32);
            nt_rand(&w, env.be, 4, C, -1, 1, 101);
            nt_zeros(&dx, env.be, 7, C, OC_NN_F32);
            struct agg_gc c = {&g, (enum oc_nn_agg)a, &x, &y, w.data};
            agg_loss(&c);
            uint64_t ed[16], es[16];
            uint64_t ne = ref_edges(&b, sl, ed, es);
            double indeg[4] = {0}, outdeg[7] = {0}, ref[20] = {0};
            for (uint64_t e = 0; e < ne; e++) {
                indeg[ed[e]]++;
                outdeg[es[e]]++;
            }
            for (uint64_t e = 0; e < ne; e++)
                for (uint64_t f = 0; f < C; f++) {
                    double v = nt_f(&x)[es[e] * C + f];
                    if (a == OC_NN_AGG_MEAN)
                        v /= indeg[ed[e]];
                    else if (a == OC_NN_AGG_GCN)
                        v /= sqrt(fmax(indeg[ed[e]], 1) * fmax(outdeg[es[e]], 1));
                    ref[ed[e] * C + f] += v;
                }
            OC_CHECK(nt_maxdiff(y.data, ref, 4 * C) < 1e-6);
            OC_CHECK_OK(oc_nn_agg_bwd(&g, (enum oc_nn_agg)a, &w, &dx, &err), &err);
            OC_CHECK(nt_gradcheck("agg", agg_loss, &c, &x, dx.data, 1e-2f, 1e-4, 1e-2) == 0);
            oc_nn_tensor_deinit(&x);
            oc_nn_tensor_deinit(&y);
            oc_nn_tensor_deinit(&w);
            oc_nn_tensor_deinit(&dx);
            oc_nn_graph_deinit(&g);
        }
    nt_env_free(&env);
}

static double agg_cat_loss(void *p)
{
    struct agg_gc *c = p;
    struct oc_err err;
    if (oc_nn_agg_cat_fwd(c->g, c->agg, c->x, c->y, &err) != OC_OK)
        return NAN;
    return nt_dot(c->y, c->w);
}

/* SAGE's fused concatenation: [agg(x) | x[:n_dst]] and its gradient. */
OC_TEST(aggregation_concat_reference_and_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    struct oc_nn_block b = nt_block0();
    const uint64_t C = 5;
    for (int a = 0; a < OC_NN_AGG_COUNT; a++) {
        struct oc_nn_graph g;
        oc_nn_graph_init(&g);
        OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 0, 1, &err), &err);
        struct oc_nn_tensor x, y, ya, w, wa, dx, dxa;
        nt_rand(&x, env.be, 7, C, -1, 1, 110);
        nt_zeros(&y, env.be, 4, 2 * C, OC_NN_F32);
        nt_zeros(&ya, env.be, 4, C, OC_NN_F32);
        nt_rand(&w, env.be, 4, 2 * C, -1, 1, 111);
        nt_zeros(&wa, env.be, 4, C, OC_NN_F32);
        nt_zeros(&dx, env.be, 7, C, OC_NN_F32);
        nt_zeros(&dxa, env.be, 7, C, OC_NN_F32);
        struct agg_gc c = {&g, (enum oc_nn_agg)a, &x, &y, w.data};
        agg_cat_loss(&c);
        OC_CHECK_OK(oc_nn_agg_fwd(&g, (enum oc_nn_agg)a, &x, &ya, &err), &err);
        int same = 1;
        for (uint64_t i = 0; i < 4; i++)
            for (uint64_t f = 0; f < C; f++) {
                same &= nt_f(&y)[i * 2 * C + f] == nt_f(&ya)[i * C + f];
                same &= nt_f(&y)[i * 2 * C + C + f] == nt_f(&x)[i * C + f];
                nt_f(&wa)[i * C + f] = nt_f(&w)[i * 2 * C + f];
            }
        OC_CHECK(same);
        OC_CHECK_OK(oc_nn_agg_cat_bwd(&g, (enum oc_nn_agg)a, &w, &dx, &err), &err);
        OC_CHECK(nt_gradcheck("agg_cat", agg_cat_loss, &c, &x, dx.data, 1e-2f, 1e-4, 1e-2) == 0);
        /* the left half's gradient is agg_bwd's, the right half adds on the dst rows */
        OC_CHECK_OK(oc_nn_agg_bwd(&g, (enum oc_nn_agg)a, &wa, &dxa, &err), &err);
        same = 1;
        for (uint64_t j = 0; j < 7; j++)
            for (uint64_t f = 0; f < C; f++) {
                float want = nt_f(&dxa)[j * C + f];
                if (j < 4)
                    want += nt_f(&w)[j * 2 * C + C + f];
                same &= nt_f(&dx)[j * C + f] == want;
            }
        OC_CHECK(same);
        OC_CHECK_ERR(oc_nn_agg_cat_fwd(&g, (enum oc_nn_agg)a, &x, &ya, &err), OC_ERR_ARG, &err,
                     "agg_cat_fwd: y (block dst rows) is 4x5, expected 4x10");
        struct oc_nn_tensor *ts[] = {&x, &y, &ya, &w, &wa, &dx, &dxa};
        for (unsigned i = 0; i < 7; i++)
            oc_nn_tensor_deinit(ts[i]);
        oc_nn_graph_deinit(&g);
    }
    nt_env_free(&env);
}

struct proj_gc {
    struct oc_nn_tensor *z, *attn, *out;
    const float *w;
};

static double proj_loss(void *p)
{
    struct proj_gc *c = p;
    struct oc_err err;
    if (oc_nn_gat_proj_fwd(c->z, c->attn, c->out, &err) != OC_OK)
        return NAN;
    return nt_dot(c->out, c->w);
}

OC_TEST(gat_projection_reference_and_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 2) == 0);
    struct oc_err err;
    const uint64_t n = 300, H = 3, F = 4; /* several reduction chunks */
    struct oc_nn_tensor z, attn, out, w, dz, dattn;
    nt_rand(&z, env.be, n, H * F, -1, 1, 110);
    nt_rand(&attn, env.be, 1, H * F, -1, 1, 111);
    nt_zeros(&out, env.be, n, H, OC_NN_F32);
    nt_rand(&w, env.be, n, H, -1, 1, 112);
    nt_zeros(&dz, env.be, n, H * F, OC_NN_F32);
    nt_zeros(&dattn, env.be, 1, H * F, OC_NN_F32);
    struct proj_gc c = {&z, &attn, &out, w.data};
    proj_loss(&c);
    double *ref = calloc(n * H, sizeof(double));
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t h = 0; h < H; h++)
            for (uint64_t f = 0; f < F; f++)
                ref[j * H + h] += (double)nt_f(&z)[j * H * F + h * F + f] * nt_f(&attn)[h * F + f];
    OC_CHECK(nt_maxdiff(out.data, ref, n * H) < 1e-5);
    OC_CHECK_OK(oc_nn_gat_proj_bwd(&z, &attn, &w, &dz, &dattn, &err), &err);
    OC_CHECK(nt_gradcheck("proj attn", proj_loss, &c, &attn, dattn.data, 1e-2f, 1e-3, 1e-2) == 0);
    /* z check on a small slice keeps the test fast: rows 0..9 */
    struct oc_nn_tensor zs, outs, dzs;
    OC_CHECK_OK(oc_nn_tensor_view_rows(&z, 0, 10, &zs, &err), &err);
    OC_CHECK_OK(oc_nn_tensor_view_rows(&out, 0, 10, &outs, &err), &err);
    OC_CHECK_OK(oc_nn_tensor_view_rows(&dz, 0, 10, &dzs, &err), &err);
    struct proj_gc cs = {&zs, &attn, &outs, w.data};
    OC_CHECK(nt_gradcheck("proj z", proj_loss, &cs, &zs, dzs.data, 1e-2f, 1e-3, 1e-2) == 0);
    free(ref);
    struct oc_nn_tensor *ts[] = {&z, &attn, &out, &w, &dz, &dattn};
    for (unsigned i = 0; i < 6; i++)
        oc_nn_tensor_deinit(ts[i]);
    nt_env_free(&env);
}

struct sm_gc {
    const struct oc_nn_graph *g;
    struct oc_nn_tensor *el, *er, *a;
    float slope;
    const float *w;
};

static double sm_loss(void *p)
{
    struct sm_gc *c = p;
    struct oc_err err;
    if (oc_nn_gat_softmax_fwd(c->g, c->el, c->er, c->slope, c->a, &err) != OC_OK)
        return NAN;
    return nt_dot(c->a, c->w);
}

struct ga_gc {
    const struct oc_nn_graph *g;
    struct oc_nn_tensor *a, *z, *y;
    const float *w;
};

static double ga_loss(void *p)
{
    struct ga_gc *c = p;
    struct oc_err err;
    if (oc_nn_gat_agg_fwd(c->g, c->a, c->z, c->y, &err) != OC_OK)
        return NAN;
    return nt_dot(c->y, c->w);
}

OC_TEST(gat_softmax_and_aggregation_reference_and_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 3) == 0);
    struct oc_err err;
    struct oc_nn_block b = nt_block0();
    struct oc_nn_graph g;
    oc_nn_graph_init(&g);
    OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 1, 0, &err), &err);
    const uint64_t H = 2, F = 3, E = g.n_edges;
    const float slope = 0.2f;
    struct oc_nn_tensor el, er, a, w, da, del, der;
    nt_rand(&el, env.be, 7, H, -2, 2, 120);
    nt_rand(&er, env.be, 4, H, -2, 2, 121);
    nt_zeros(&a, env.be, E, H, OC_NN_F32);
    nt_rand(&w, env.be, E, H, -1, 1, 122);
    nt_zeros(&da, env.be, E, H, OC_NN_F32);
    nt_zeros(&del, env.be, 7, H, OC_NN_F32);
    nt_zeros(&der, env.be, 4, H, OC_NN_F32);
    struct sm_gc c = {&g, &el, &er, &a, slope, w.data};
    sm_loss(&c);
    double ref[32];
    for (uint64_t i = 0; i < 4; i++)
        for (uint64_t h = 0; h < H; h++) {
            double s = 0.0;
            for (uint64_t e = g.indptr[i]; e < g.indptr[i + 1]; e++) {
                double v = (double)nt_f(&el)[g.indices[e] * H + h] + nt_f(&er)[i * H + h];
                ref[e * H + h] = exp(v > 0 ? v : slope * v);
                s += ref[e * H + h];
            }
            for (uint64_t e = g.indptr[i]; e < g.indptr[i + 1]; e++)
                ref[e * H + h] /= s;
        }
    OC_CHECK(nt_maxdiff(a.data, ref, E * H) < 1e-6);
    memcpy(da.data, w.data, E * H * sizeof(float));
    OC_CHECK_OK(oc_nn_gat_softmax_bwd(&g, &el, &er, slope, &a, &da, &del, &der, &err), &err);
    OC_CHECK(nt_gradcheck("softmax el", sm_loss, &c, &el, del.data, 1e-2f, 1e-4, 2e-2) == 0);
    OC_CHECK(nt_gradcheck("softmax er", sm_loss, &c, &er, der.data, 1e-2f, 1e-4, 2e-2) == 0);

    /* attention-weighted aggregation */
    struct oc_nn_tensor z, y, wy, dz, da2;
    sm_loss(&c);
    nt_rand(&z, env.be, 7, H * F, -1, 1, 123);
    nt_zeros(&y, env.be, 4, H * F, OC_NN_F32);
    nt_rand(&wy, env.be, 4, H * F, -1, 1, 124);
    nt_zeros(&dz, env.be, 7, H * F, OC_NN_F32);
    nt_zeros(&da2, env.be, E, H, OC_NN_F32);
    struct ga_gc c2 = {&g, &a, &z, &y, wy.data};
    ga_loss(&c2);
    double yref[24] = {0};
    for (uint64_t i = 0; i < 4; i++)
        for (uint64_t e = g.indptr[i]; e < g.indptr[i + 1]; e++)
            for (uint64_t h = 0; h < H; h++)
                for (uint64_t f = 0; f < F; f++)
                    yref[i * H * F + h * F + f] +=
                        (double)nt_f(&a)[e * H + h] * nt_f(&z)[g.indices[e] * H * F + h * F + f];
    OC_CHECK(nt_maxdiff(y.data, yref, 4 * H * F) < 1e-6);
    OC_CHECK_OK(oc_nn_gat_agg_bwd(&g, &a, &z, &wy, &dz, &da2, &err), &err);
    OC_CHECK(nt_gradcheck("gat_agg z", ga_loss, &c2, &z, dz.data, 1e-2f, 1e-4, 1e-2) == 0);
    OC_CHECK(nt_gradcheck("gat_agg a", ga_loss, &c2, &a, da2.data, 1e-2f, 1e-4, 1e-2) == 0);
    struct oc_nn_tensor *ts[] = {&el, &er, &a, &w, &da, &del, &der, &z, &y, &wy, &dz, &da2};
    for (unsigned i = 0; i < 12; i++)
        oc_nn_tensor_deinit(ts[i]);
    oc_nn_graph_deinit(&g);
    nt_env_free(&env);
}

/* A random block: n_dst destinations with 0..19 in-edges from n_src sources. */
static void random_block(uint64_t n_src, uint64_t n_dst, uint64_t **ip, uint32_t **ix,
                         struct oc_nn_block *b)
{
    struct oc_rng r;
    oc_rng_init(&r, 5, 6, 7, 8);
    *ip = malloc((n_dst + 1) * sizeof(uint64_t));
    *ix = malloc(n_dst * 20 * sizeof(uint32_t));
    (*ip)[0] = 0;
    for (uint64_t i = 0; i < n_dst; i++) {
        uint64_t d = oc_rng_below(&r, 20);
        for (uint64_t k = 0; k < d; k++)
            (*ix)[(*ip)[i] + k] = (uint32_t)oc_rng_below(&r, n_src);
        (*ip)[i + 1] = (*ip)[i] + d;
    }
    *b = (struct oc_nn_block){n_src, n_dst, *ip, *ix, NULL};
}

/* Runs every graph op; returns a malloc'd concatenation of all outputs. */
static float *run_graph_ops(unsigned n_threads, const struct oc_nn_block *b, size_t *n_out)
{
    struct nt_env env;
    if (nt_env_new(&env, n_threads) != 0)
        return NULL;
    struct oc_err err;
    struct oc_nn_graph g;
    oc_nn_graph_init(&g);
    const uint64_t C = 24, H = 4;
    float *all = NULL;
    if (oc_nn_graph_prepare(&g, b, 1, 1, &err) != OC_OK)
        goto out;
    uint64_t E = g.n_edges, ns = b->n_src, nd = b->n_dst;
    struct oc_nn_tensor x, y, dy, dx, el, er, a, da, del, der, z, yz, dz, attn, dattn, yc, dyc, dxc;
    nt_rand(&x, env.be, ns, C, -1, 1, 200);
    nt_zeros(&y, env.be, nd, C, OC_NN_F32);
    nt_rand(&dy, env.be, nd, C, -1, 1, 201);
    nt_zeros(&dx, env.be, ns, C, OC_NN_F32);
    nt_rand(&el, env.be, ns, H, -1, 1, 202);
    nt_rand(&er, env.be, nd, H, -1, 1, 203);
    nt_zeros(&a, env.be, E, H, OC_NN_F32);
    nt_rand(&da, env.be, E, H, -1, 1, 204);
    nt_zeros(&del, env.be, ns, H, OC_NN_F32);
    nt_zeros(&der, env.be, nd, H, OC_NN_F32);
    nt_rand(&z, env.be, ns, C, -1, 1, 205);
    nt_zeros(&yz, env.be, nd, C, OC_NN_F32);
    nt_zeros(&dz, env.be, ns, C, OC_NN_F32);
    nt_rand(&attn, env.be, 1, C, -1, 1, 206);
    nt_zeros(&dattn, env.be, 1, C, OC_NN_F32);
    nt_zeros(&yc, env.be, nd, 2 * C, OC_NN_F32);
    nt_rand(&dyc, env.be, nd, 2 * C, -1, 1, 207);
    nt_zeros(&dxc, env.be, ns, C, OC_NN_F32);
    struct oc_nn_tensor *outs[] = {&y, &dx, &a, &da, &del, &der, &yz, &dz, &dattn, &yc, &dxc};
    int rc = OC_OK;
    for (int k = 0; k < OC_NN_AGG_COUNT && rc == OC_OK; k++) {
        rc = oc_nn_agg_fwd(&g, (enum oc_nn_agg)k, &x, &y, &err);
        if (rc == OC_OK)
            rc = oc_nn_agg_bwd(&g, (enum oc_nn_agg)k, &dy, &dx, &err);
    }
    if (rc == OC_OK)
        rc = oc_nn_agg_cat_fwd(&g, OC_NN_AGG_MEAN, &x, &yc, &err);
    if (rc == OC_OK)
        rc = oc_nn_agg_cat_bwd(&g, OC_NN_AGG_MEAN, &dyc, &dxc, &err);
    if (rc == OC_OK)
        rc = oc_nn_gat_softmax_fwd(&g, &el, &er, 0.2f, &a, &err);
    if (rc == OC_OK)
        rc = oc_nn_gat_agg_fwd(&g, &a, &z, &yz, &err);
    if (rc == OC_OK)
        rc = oc_nn_gat_agg_bwd(&g, &a, &z, &dy, &dz, &da, &err);
    if (rc == OC_OK)
        rc = oc_nn_gat_softmax_bwd(&g, &el, &er, 0.2f, &a, &da, &del, &der, &err);
    if (rc == OC_OK)
        rc = oc_nn_gat_proj_bwd(&z, &attn, &el, &dz, &dattn, &err);
    if (rc == OC_OK) {
        size_t n = 0;
        for (unsigned i = 0; i < 11; i++)
            n += outs[i]->n_rows * outs[i]->n_cols;
        all = malloc(n * sizeof(float));
        n = 0;
        for (unsigned i = 0; i < 11; i++) {
            memcpy(all + n, outs[i]->data, oc_nn_tensor_bytes(outs[i]));
            n += outs[i]->n_rows * outs[i]->n_cols;
        }
        *n_out = n;
    } else {
        fprintf(stderr, "  graph ops: %s\n", err.msg);
    }
    struct oc_nn_tensor *ins[] = {&x, &dy, &el, &er, &z, &attn, &dyc};
    for (unsigned i = 0; i < 11; i++)
        oc_nn_tensor_deinit(outs[i]);
    for (unsigned i = 0; i < 7; i++)
        oc_nn_tensor_deinit(ins[i]);
out:
    oc_nn_graph_deinit(&g);
    nt_env_free(&env);
    return all;
}

OC_TEST(graph_ops_bit_identical_across_threads)
{
    uint64_t *ip;
    uint32_t *ix;
    struct oc_nn_block b;
    random_block(2000, 1000, &ip, &ix, &b);
    size_t n1 = 0, n2 = 0, n3 = 0;
    float *r1 = run_graph_ops(1, &b, &n1);
    float *r2 = run_graph_ops(2, &b, &n2);
    float *r3 = run_graph_ops(3, &b, &n3);
    OC_CHECK(r1 && r2 && r3 && n1 == n2 && n1 == n3 && n1 > 0);
    if (r1 && r2 && r3) {
        OC_CHECK(memcmp(r1, r2, n1 * sizeof(float)) == 0);
        OC_CHECK(memcmp(r1, r3, n1 * sizeof(float)) == 0);
    }
    free(r1);
    free(r2);
    free(r3);
    free(ip);
    free(ix);
}

OC_TEST(graph_op_shape_errors)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 1) == 0);
    struct oc_err err;
    struct oc_nn_block b = nt_block0();
    struct oc_nn_graph g;
    oc_nn_graph_init(&g);
    OC_CHECK_OK(oc_nn_graph_prepare(&g, &b, 0, 0, &err), &err);
    struct oc_nn_tensor x, y;
    nt_zeros(&x, env.be, 6, 3, OC_NN_F32);
    nt_zeros(&y, env.be, 4, 3, OC_NN_F32);
    OC_CHECK_ERR(oc_nn_agg_fwd(&g, OC_NN_AGG_MEAN, &x, &y, &err), OC_ERR_ARG, &err,
                 "agg_fwd: x (block src rows) is 6x3, expected 7x*");
    OC_CHECK_ERR(oc_nn_agg_fwd(&g, OC_NN_AGG_GCN, &y, &y, &err), OC_ERR_ARG, &err, "without norms");
    oc_nn_tensor_deinit(&x);
    oc_nn_tensor_deinit(&y);
    oc_nn_graph_deinit(&g);
    nt_env_free(&env);
}

OC_TEST_MAIN()
