/*
 * redgnn.c — the RED-GNN model (nn.h): parameters, the forward pass over a
 * batch's relation blocks, the loss over all candidate entities and the
 * backward pass, all through the backend's ops.
 *
 *   forward, layer l:   H ─► ps = H W_s^T ─┐
 *                       R ─► pr = R W_r^T ─┼─► edge_attn ─► alpha ─► edge_msg(H, R) ─► agg
 *             R[q_rel] ─► pq = . W_qr^T + b┘
 *                       agg ─► W_h ─► act ─► dropout ─► x ─┐
 *                       H placed at layer l's rows ─► h0 ──┴─► GRU ─► H'
 *   scores = H^L w_final^T
 *
 *   backward runs the same steps in reverse; the GRU's parameters are shared
 *   by the layers, so their gradients are summed (zeroed first).
 *
 * Place in the data flow: nn; kg-train drives it once per batch of queries.
 * Thread-safety: one thread at a time; kernels fan out on the backend's pool.
 * Ownership: the model owns its parameter set (a struct oc_nn_model with no
 * layers, so Adam, checkpoints and the hash are shared with the node models),
 * its per-layer workspace (grown on the first batches, reused; or grown once,
 * exactly, to the largest batches by oc_nn_redgnn_reserve over synthetic
 * blocks it frees before returning) and borrows the batch from forward until
 * backward.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn_int.h"

#define RG_TAG_INIT   0x5247494Eu /* "RGIN" */
#define RG_TAG_DROP   0x52474450u /* "RGDP" */
#define RG_MAX_LAYERS OC_NN_REDGNN_MAX_LAYERS

/* Parameters of one layer, in checkpoint order. */
enum rg_lp {
    RG_REL,    /* rela_embed, n_rel x d */
    RG_WS,     /* Ws_attn, A x d */
    RG_WR,     /* Wr_attn, A x d */
    RG_WQR,    /* Wqr_attn, A x d */
    RG_BQR,    /* Wqr_attn bias, 1 x A */
    RG_WALPHA, /* w_alpha, 1 x A */
    RG_BALPHA, /* w_alpha bias, 1 x 1 */
    RG_WH,     /* W_h, d x d */
    RG_LP_COUNT,
};
static const char *const lp_names[RG_LP_COUNT] = {
    "rela_embed", "Ws_attn", "Wr_attn", "Wqr_attn", "Wqr_bias", "w_alpha", "w_alpha_bias", "W_h"};

enum rg_gp { RG_FINAL, RG_WIH, RG_WHH, RG_BIH, RG_BHH, RG_GP_COUNT };
static const char *const gp_names[RG_GP_COUNT] = {"W_final", "gate.weight_ih", "gate.weight_hh",
                                                  "gate.bias_ih", "gate.bias_hh"};

/* What one layer's forward keeps for backward. */
struct rg_ws {
    struct oc_nn_tensor ps, pr, rq, pq, hid, alpha, agg, pre, act, xd, mask, h0, gi, gh, gates, out;
};

struct oc_nn_redgnn {
    struct oc_nn_model *base;
    struct oc_nn_redgnn_config cfg;
    struct oc_nn_param *lp[RG_MAX_LAYERS][RG_LP_COUNT];
    struct oc_nn_param *gp[RG_GP_COUNT];
    struct rg_ws ws[RG_MAX_LAYERS];
    struct oc_nn_tensor zeros, scores, dscores, ones;
    /* backward buffers */
    struct oc_nn_tensor dout, dgi, dgh, dh0, dx, dagg, dh, dalpha, dattn, dps, dpr, dpq, drq;
    struct oc_nn_hbuf host_scores;
    struct oc_nn_redgnn_batch batch;
    int training, have_forward, have_loss;
    int exact; /* tensors grow to exactly what they need (oc_nn_redgnn_reserve) */
};

static const char *const act_names[OC_NN_REDGNN_ACT_COUNT] = {"idd", "relu", "tanh"};

const char *oc_nn_redgnn_act_name(enum oc_nn_redgnn_act act)
{
    return (unsigned)act < OC_NN_REDGNN_ACT_COUNT ? act_names[act] : "?";
}

int oc_nn_redgnn_act_parse(const char *name, enum oc_nn_redgnn_act *act, struct oc_err *err)
{
    for (int k = 0; k < OC_NN_REDGNN_ACT_COUNT; k++) {
        if (strcmp(name, act_names[k]) == 0) {
            *act = (enum oc_nn_redgnn_act)k;
            return OC_OK;
        }
    }
    return OC_ERR(err, OC_ERR_ARG, "unknown activation '%s' (expected idd, relu or tanh)", name);
}

struct oc_nn_model *oc_nn_redgnn_model(struct oc_nn_redgnn *m)
{
    return m->base;
}

/* torch defaults: Embedding N(0,1); Linear weight and bias, GRU U(-1/sqrt(fan_in), +). */
static int param_new(struct oc_nn_redgnn *m, const char *name, uint64_t n_rows, uint64_t n_cols,
                     int normal, double fan_in, struct oc_nn_param **out, struct oc_err *err)
{
    struct oc_nn_model *b = m->base;
    uint32_t idx = b->n_params;
    struct oc_nn_param *p = &b->params[b->n_params++];
    snprintf(p->name, sizeof(p->name), "%s", name);
    struct oc_nn_tensor *ts[4] = {&p->value, &p->grad, &p->adam_m, &p->adam_v};
    for (int i = 0; i < 4; i++) {
        oc_nn_tensor_init(ts[i], b->be, OC_NN_F32);
        OC_NN_TRY(oc_nn_tensor_resize(ts[i], n_rows, n_cols, "nn parameters", err));
        OC_NN_TRY(oc_nn_tensor_zero(ts[i], err));
    }
    uint64_t n = n_rows * n_cols;
    float *host = oc_alloc((size_t)n * sizeof(float) + 1, "nn parameter init", err);
    if (!host)
        return err->status;
    struct oc_rng rng;
    oc_rng_init(&rng, oc_rng_mix64(m->cfg.seed, RG_TAG_INIT), idx, 0, 0);
    double bound = 1.0 / sqrt(fan_in);
    for (uint64_t i = 0; i < n; i++)
        host[i] =
            normal ? oc_rng_normal(&rng) : (float)(bound * (2.0 * oc_rng_uniform_f64(&rng) - 1.0));
    int rc = oc_nn_tensor_set(&p->value, host, err);
    oc_free(host);
    *out = p;
    return rc;
}

static void ws_init(struct oc_nn_redgnn *m, struct oc_nn_backend *be)
{
    for (int l = 0; l < RG_MAX_LAYERS; l++) {
        struct rg_ws *w = &m->ws[l];
        struct oc_nn_tensor *ts[] = {&w->ps,    &w->pr,  &w->rq,  &w->pq,    &w->hid,
                                     &w->alpha, &w->agg, &w->pre, &w->act,   &w->xd,
                                     &w->h0,    &w->gi,  &w->gh,  &w->gates, &w->out};
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
            oc_nn_tensor_init(ts[i], be, OC_NN_F32);
        oc_nn_tensor_init(&w->mask, be, OC_NN_U8);
    }
    struct oc_nn_tensor *g[] = {&m->zeros, &m->scores, &m->dscores, &m->ones, &m->dout, &m->dgi,
                                &m->dgh,   &m->dh0,    &m->dx,      &m->dagg, &m->dh,   &m->dalpha,
                                &m->dattn, &m->dps,    &m->dpr,     &m->dpq,  &m->drq};
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
        oc_nn_tensor_init(g[i], be, OC_NN_F32);
}

static void ws_deinit(struct oc_nn_redgnn *m)
{
    for (int l = 0; l < RG_MAX_LAYERS; l++) {
        struct rg_ws *w = &m->ws[l];
        struct oc_nn_tensor *ts[] = {&w->ps,  &w->pr,  &w->rq,    &w->pq, &w->hid,  &w->alpha,
                                     &w->agg, &w->pre, &w->act,   &w->xd, &w->mask, &w->h0,
                                     &w->gi,  &w->gh,  &w->gates, &w->out};
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
            oc_nn_tensor_deinit(ts[i]);
    }
    struct oc_nn_tensor *g[] = {&m->zeros, &m->scores, &m->dscores, &m->ones, &m->dout, &m->dgi,
                                &m->dgh,   &m->dh0,    &m->dx,      &m->dagg, &m->dh,   &m->dalpha,
                                &m->dattn, &m->dps,    &m->dpr,     &m->dpq,  &m->drq};
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
        oc_nn_tensor_deinit(g[i]);
}

void oc_nn_redgnn_free(struct oc_nn_redgnn *m)
{
    if (!m)
        return;
    ws_deinit(m);
    oc_nn_hbuf_free(&m->host_scores);
    oc_nn_model_free(m->base);
    oc_free(m);
}

static int config_check(const struct oc_nn_redgnn_config *c, struct oc_err *err)
{
    uint64_t lim = (uint64_t)1 << 20;
    if (c->n_layers < 1 || c->n_layers > RG_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "redgnn config: n_layers %u outside [1, %d]", c->n_layers,
                      RG_MAX_LAYERS);
    if (c->hidden < 1 || c->hidden > lim || c->attn_dim < 1 || c->attn_dim > lim)
        return OC_ERR(err, OC_ERR_ARG,
                      "redgnn config: hidden %llu / attn_dim %llu outside [1, 2^20]",
                      (unsigned long long)c->hidden, (unsigned long long)c->attn_dim);
    if (c->n_rel < 1 || c->n_rel > ((uint64_t)1 << 31))
        return OC_ERR(err, OC_ERR_ARG, "redgnn config: n_rel %llu outside [1, 2^31]",
                      (unsigned long long)c->n_rel);
    if ((unsigned)c->act >= OC_NN_REDGNN_ACT_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "redgnn config: unknown activation %d", (int)c->act);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return OC_ERR(err, OC_ERR_ARG, "redgnn config: dropout %g outside [0, 1)",
                      (double)c->dropout);
    return OC_OK;
}

int oc_nn_redgnn_new(struct oc_nn_backend *be, const struct oc_nn_redgnn_config *cfg,
                     struct oc_nn_redgnn **out, struct oc_err *err)
{
    *out = NULL;
    OC_NN_TRY(config_check(cfg, err));
    struct oc_nn_redgnn *m = oc_calloc(1, sizeof(*m), "redgnn model", err);
    if (!m)
        return err->status;
    m->cfg = *cfg;
    ws_init(m, be);
    uint32_t n_params = cfg->n_layers * RG_LP_COUNT + RG_GP_COUNT;
    int rc = OC_OK;
    if (!(m->base = oc_calloc(1, sizeof(*m->base), "redgnn model", err)) ||
        !(m->base->params = oc_calloc(n_params, sizeof(struct oc_nn_param), "redgnn model", err)))
        rc = err->status;
    if (!rc) {
        struct oc_nn_model_config *bc = &m->base->cfg; /* what checkpoints record */
        bc->kind = OC_NN_MODEL_REDGNN;
        bc->n_layers = cfg->n_layers;
        bc->in_dim = cfg->attn_dim;
        bc->hidden = cfg->hidden;
        bc->n_classes = cfg->n_rel;
        bc->heads = (uint32_t)cfg->act;
        bc->seed = cfg->seed;
        m->base->be = be;
    }
    uint64_t d = cfg->hidden, a = cfg->attn_dim;
    const uint64_t shape[RG_LP_COUNT][2] = {{cfg->n_rel, d}, {a, d}, {a, d}, {a, d},
                                            {1, a},          {1, a}, {1, 1}, {d, d}};
    const double fan[RG_LP_COUNT] = {1,         (double)d, (double)d, (double)d,
                                     (double)d, (double)a, (double)a, (double)d};
    for (uint32_t l = 0; !rc && l < cfg->n_layers; l++) {
        for (int k = 0; !rc && k < RG_LP_COUNT; k++) {
            char name[32];
            snprintf(name, sizeof(name), "layer%u.%s", l, lp_names[k]);
            rc = param_new(m, name, shape[k][0], shape[k][1], k == RG_REL, fan[k], &m->lp[l][k],
                           err);
        }
    }
    const uint64_t gshape[RG_GP_COUNT][2] = {
        {1, d}, {3 * d, d}, {3 * d, d}, {1, 3 * d}, {1, 3 * d}};
    for (int k = 0; !rc && k < RG_GP_COUNT; k++)
        rc = param_new(m, gp_names[k], gshape[k][0], gshape[k][1], 0, (double)d, &m->gp[k], err);
    if (rc) {
        oc_nn_redgnn_free(m);
        return rc;
    }
    *out = m;
    return OC_OK;
}

static int rs(const struct oc_nn_redgnn *m, struct oc_nn_tensor *t, uint64_t r, uint64_t c,
              struct oc_err *err)
{
    return m->exact ? oc_nn_tensor_resize_exact(t, r, c, "redgnn workspace", err)
                    : oc_nn_tensor_resize(t, r, c, "redgnn workspace", err);
}

static int batch_check(const struct oc_nn_redgnn *m, const struct oc_nn_redgnn_batch *b,
                       struct oc_err *err)
{
    if (!b || !b->blocks || !b->prev_to_node || !b->q_rel || b->n_query == 0)
        return OC_ERR(err, OC_ERR_ARG, "redgnn forward: empty or incomplete batch");
    for (uint64_t q = 0; q < b->n_query; q++)
        if (b->q_rel[q] >= m->cfg.n_rel)
            return OC_ERR(err, OC_ERR_ARG, "redgnn forward: query %llu relation %u >= n_rel %llu",
                          (unsigned long long)q, b->q_rel[q], (unsigned long long)m->cfg.n_rel);
    for (uint32_t l = 0; l < m->cfg.n_layers; l++) {
        const struct oc_nn_rel_block *g = &b->blocks[l];
        uint64_t want_src = l ? b->blocks[l - 1].n_dst : b->n_query;
        if (g->n_src != want_src || g->n_rel != m->cfg.n_rel || g->n_query != b->n_query)
            return OC_ERR(err, OC_ERR_ARG,
                          "redgnn forward: block %u does not chain (n_src %llu, expected %llu; "
                          "n_rel %llu; n_query %llu)",
                          l, (unsigned long long)g->n_src, (unsigned long long)want_src,
                          (unsigned long long)g->n_rel, (unsigned long long)g->n_query);
        for (uint64_t i = 0; i < g->n_src; i++)
            if (b->prev_to_node[l][i] >= g->n_dst)
                return OC_ERR(err, OC_ERR_ARG,
                              "redgnn forward: block %u prev_to_node[%llu] out "
                              "of range",
                              l, (unsigned long long)i);
    }
    return OC_OK;
}

static enum oc_nn_act act_op(enum oc_nn_redgnn_act a)
{
    return a == OC_NN_REDGNN_TANH ? OC_NN_ACT_TANH : OC_NN_ACT_RELU;
}

static int layer_forward(struct oc_nn_redgnn *m, uint32_t l, const struct oc_nn_tensor *h,
                         uint64_t drop_seed, struct oc_err *err)
{
    const struct oc_nn_redgnn_batch *b = &m->batch;
    const struct oc_nn_rel_block *g = &b->blocks[l];
    struct rg_ws *w = &m->ws[l];
    struct oc_nn_param **p = m->lp[l];
    uint64_t d = m->cfg.hidden, a = m->cfg.attn_dim, n = g->n_dst;
    OC_NN_TRY(rs(m, &w->ps, g->n_src, a, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, h, &p[RG_WS]->value, 0.0f, &w->ps, err));
    OC_NN_TRY(rs(m, &w->pr, g->n_rel, a, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, &p[RG_REL]->value, &p[RG_WR]->value, 0.0f, &w->pr, err));
    OC_NN_TRY(rs(m, &w->rq, b->n_query, d, err));
    OC_NN_TRY(oc_nn_rows_gather(&p[RG_REL]->value, b->q_rel, &w->rq, err));
    OC_NN_TRY(rs(m, &w->pq, b->n_query, a, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, &w->rq, &p[RG_WQR]->value, 0.0f, &w->pq, err));
    OC_NN_TRY(oc_nn_bias_add(&w->pq, &p[RG_BQR]->value, err));
    OC_NN_TRY(rs(m, &w->hid, g->n_edges, a, err));
    OC_NN_TRY(rs(m, &w->alpha, g->n_edges, 1, err));
    OC_NN_TRY(oc_nn_edge_attn_fwd(g, &w->ps, &w->pr, &w->pq, &p[RG_WALPHA]->value,
                                  &p[RG_BALPHA]->value, &w->hid, &w->alpha, err));
    OC_NN_TRY(rs(m, &w->agg, n, d, err));
    OC_NN_TRY(oc_nn_edge_msg_fwd(g, h, &p[RG_REL]->value, &w->alpha, &w->agg, err));
    OC_NN_TRY(rs(m, &w->pre, n, d, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, &w->agg, &p[RG_WH]->value, 0.0f, &w->pre, err));
    struct oc_nn_tensor *x = &w->pre;
    if (m->cfg.act != OC_NN_REDGNN_IDD) {
        OC_NN_TRY(rs(m, &w->act, n, d, err));
        OC_NN_TRY(oc_nn_act_fwd(act_op(m->cfg.act), &w->pre, &w->act, err));
        x = &w->act;
    }
    if (m->training && m->cfg.dropout > 0.0f) {
        struct oc_nn_drop_key key = {drop_seed, l, 0};
        OC_NN_TRY(rs(m, &w->xd, n, d, err));
        OC_NN_TRY(rs(m, &w->mask, n, d, err));
        OC_NN_TRY(oc_nn_dropout_fwd(x, m->cfg.dropout, &key, &w->xd, &w->mask, err));
        x = &w->xd;
    }
    OC_NN_TRY(rs(m, &w->h0, n, d, err));
    OC_NN_TRY(oc_nn_tensor_zero(&w->h0, err));
    OC_NN_TRY(oc_nn_rows_scatter_add(h, b->prev_to_node[l], &w->h0, err));
    OC_NN_TRY(rs(m, &w->gi, n, 3 * d, err));
    OC_NN_TRY(rs(m, &w->gh, n, 3 * d, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, x, &m->gp[RG_WIH]->value, 0.0f, &w->gi, err));
    OC_NN_TRY(oc_nn_bias_add(&w->gi, &m->gp[RG_BIH]->value, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, &w->h0, &m->gp[RG_WHH]->value, 0.0f, &w->gh, err));
    OC_NN_TRY(oc_nn_bias_add(&w->gh, &m->gp[RG_BHH]->value, err));
    OC_NN_TRY(rs(m, &w->gates, n, 3 * d, err));
    OC_NN_TRY(rs(m, &w->out, n, d, err));
    return oc_nn_gru_fwd(&w->gi, &w->gh, &w->h0, &w->out, &w->gates, err);
}

int oc_nn_redgnn_forward(struct oc_nn_redgnn *m, const struct oc_nn_redgnn_batch *b,
                         const struct oc_nn_step *step, const float **scores, struct oc_err *err)
{
    *scores = NULL;
    m->have_forward = m->have_loss = 0;
    OC_NN_TRY(batch_check(m, b, err));
    m->batch = *b;
    m->training = step && step->training;
    uint64_t drop_seed =
        step ? oc_rng_mix64(oc_rng_mix64(oc_rng_mix64(m->cfg.seed, RG_TAG_DROP), step->epoch),
                            step->batch)
             : 0;
    OC_NN_TRY(rs(m, &m->zeros, b->n_query, m->cfg.hidden, err));
    OC_NN_TRY(oc_nn_tensor_zero(&m->zeros, err));
    const struct oc_nn_tensor *h = &m->zeros;
    for (uint32_t l = 0; l < m->cfg.n_layers; l++) {
        OC_NN_TRY(layer_forward(m, l, h, drop_seed, err));
        h = &m->ws[l].out;
    }
    OC_NN_TRY(rs(m, &m->scores, h->n_rows, 1, err));
    OC_NN_TRY(oc_nn_gemm(0, 1, 1.0f, h, &m->gp[RG_FINAL]->value, 0.0f, &m->scores, err));
    OC_NN_TRY(oc_nn_hbuf_reserve(&m->host_scores, (size_t)h->n_rows * 4 + 4, "redgnn scores", err));
    OC_NN_TRY(oc_nn_tensor_get(&m->scores, m->host_scores.p, err));
    m->have_forward = 1;
    *scores = m->host_scores.p;
    return OC_OK;
}

int oc_nn_redgnn_loss(struct oc_nn_redgnn *m, const uint64_t *qptr, const int64_t *answer_row,
                      uint64_t n_entities, double *loss, struct oc_err *err)
{
    if (!m->have_forward)
        return OC_ERR(err, OC_ERR_ARG, "redgnn loss: no forward pass to take it from");
    if (n_entities > ((uint64_t)1 << 40))
        return OC_ERR(err, OC_ERR_ARG, "redgnn loss: %llu entities",
                      (unsigned long long)n_entities);
    OC_NN_TRY(rs(m, &m->dscores, m->scores.n_rows, 1, err));
    OC_NN_TRY(oc_nn_kg_xent(&m->scores, qptr, answer_row, m->batch.n_query, n_entities, &m->dscores,
                            loss, err));
    m->have_loss = 1;
    return OC_OK;
}

/* dst += ones^T src (column sums accumulated: biases shared by rows). */
static int colsum_add(struct oc_nn_redgnn *m, const struct oc_nn_tensor *src,
                      struct oc_nn_tensor *dst, struct oc_err *err)
{
    if (m->ones.n_rows < src->n_rows) {
        OC_NN_TRY(rs(m, &m->ones, src->n_rows, 1, err));
        float *one = oc_alloc((size_t)src->n_rows * 4 + 4, "redgnn ones", err);
        if (!one)
            return err->status;
        for (uint64_t i = 0; i < src->n_rows; i++)
            one[i] = 1.0f;
        int rc = oc_nn_tensor_set(&m->ones, one, err);
        oc_free(one);
        OC_NN_TRY(rc);
    }
    struct oc_nn_tensor ones;
    OC_NN_TRY(oc_nn_tensor_view_rows(&m->ones, 0, src->n_rows, &ones, err));
    return oc_nn_gemm(1, 0, 1.0f, &ones, src, 1.0f, dst, err);
}

/* m->dout holds d(loss)/d(layer l's output); leaves d/d(its input) in m->dh (l > 0). */
static int layer_backward(struct oc_nn_redgnn *m, uint32_t l, const struct oc_nn_tensor *h,
                          struct oc_err *err)
{
    const struct oc_nn_redgnn_batch *b = &m->batch;
    const struct oc_nn_rel_block *g = &b->blocks[l];
    struct rg_ws *w = &m->ws[l];
    struct oc_nn_param **p = m->lp[l];
    uint64_t d = m->cfg.hidden, a = m->cfg.attn_dim, n = g->n_dst;
    /* GRU */
    OC_NN_TRY(rs(m, &m->dgi, n, 3 * d, err));
    OC_NN_TRY(rs(m, &m->dgh, n, 3 * d, err));
    OC_NN_TRY(rs(m, &m->dh0, n, d, err));
    OC_NN_TRY(oc_nn_gru_bwd(&w->gates, &w->gh, &w->h0, &m->dout, &m->dgi, &m->dgh, &m->dh0, err));
    const struct oc_nn_tensor *x = m->training && m->cfg.dropout > 0.0f ? &w->xd
                                   : m->cfg.act != OC_NN_REDGNN_IDD     ? &w->act
                                                                        : &w->pre;
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dgi, x, 1.0f, &m->gp[RG_WIH]->grad, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dgh, &w->h0, 1.0f, &m->gp[RG_WHH]->grad, err));
    OC_NN_TRY(colsum_add(m, &m->dgi, &m->gp[RG_BIH]->grad, err));
    OC_NN_TRY(colsum_add(m, &m->dgh, &m->gp[RG_BHH]->grad, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dgh, &m->gp[RG_WHH]->value, 1.0f, &m->dh0, err));
    OC_NN_TRY(rs(m, &m->dx, n, d, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dgi, &m->gp[RG_WIH]->value, 0.0f, &m->dx, err));
    /* dropout, activation, W_h */
    if (m->training && m->cfg.dropout > 0.0f)
        OC_NN_TRY(oc_nn_dropout_bwd(&m->dx, &w->mask, m->cfg.dropout, &m->dx, err));
    if (m->cfg.act != OC_NN_REDGNN_IDD)
        OC_NN_TRY(oc_nn_act_bwd(act_op(m->cfg.act), &w->act, &m->dx, &m->dx, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dx, &w->agg, 0.0f, &p[RG_WH]->grad, err));
    OC_NN_TRY(rs(m, &m->dagg, n, d, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dx, &p[RG_WH]->value, 0.0f, &m->dagg, err));
    /* input gradient through h0 (placement), then messages and attention */
    OC_NN_TRY(rs(m, &m->dh, g->n_src, d, err));
    OC_NN_TRY(oc_nn_rows_gather(&m->dh0, b->prev_to_node[l], &m->dh, err));
    OC_NN_TRY(rs(m, &m->dalpha, g->n_edges, 1, err));
    OC_NN_TRY(oc_nn_tensor_zero(&p[RG_REL]->grad, err));
    OC_NN_TRY(oc_nn_edge_msg_bwd(g, h, &p[RG_REL]->value, &w->alpha, &m->dagg, &m->dh,
                                 &p[RG_REL]->grad, &m->dalpha, err));
    OC_NN_TRY(rs(m, &m->dattn, g->n_edges, a, err));
    OC_NN_TRY(oc_nn_edge_attn_bwd(g, &w->hid, &w->alpha, &m->dalpha, &p[RG_WALPHA]->value,
                                  &m->dattn, &p[RG_WALPHA]->grad, &p[RG_BALPHA]->grad, err));
    OC_NN_TRY(rs(m, &m->dps, g->n_src, a, err));
    OC_NN_TRY(rs(m, &m->dpr, g->n_rel, a, err));
    OC_NN_TRY(rs(m, &m->dpq, b->n_query, a, err));
    OC_NN_TRY(oc_nn_tensor_zero(&m->dps, err));
    OC_NN_TRY(oc_nn_tensor_zero(&m->dpr, err));
    OC_NN_TRY(oc_nn_tensor_zero(&m->dpq, err));
    OC_NN_TRY(oc_nn_rows_scatter_add(&m->dattn, g->src, &m->dps, err));
    OC_NN_TRY(oc_nn_rows_scatter_add(&m->dattn, g->rel, &m->dpr, err));
    OC_NN_TRY(oc_nn_rows_scatter_add(&m->dattn, g->query, &m->dpq, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dps, h, 0.0f, &p[RG_WS]->grad, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dps, &p[RG_WS]->value, 1.0f, &m->dh, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dpr, &p[RG_REL]->value, 0.0f, &p[RG_WR]->grad, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dpr, &p[RG_WR]->value, 1.0f, &p[RG_REL]->grad, err));
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dpq, &w->rq, 0.0f, &p[RG_WQR]->grad, err));
    OC_NN_TRY(oc_nn_tensor_zero(&p[RG_BQR]->grad, err));
    OC_NN_TRY(colsum_add(m, &m->dpq, &p[RG_BQR]->grad, err));
    OC_NN_TRY(rs(m, &m->drq, b->n_query, d, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dpq, &p[RG_WQR]->value, 0.0f, &m->drq, err));
    return oc_nn_rows_scatter_add(&m->drq, b->q_rel, &p[RG_REL]->grad, err);
}

int oc_nn_redgnn_backward(struct oc_nn_redgnn *m, struct oc_err *err)
{
    if (!m->have_loss)
        return OC_ERR(err, OC_ERR_ARG, "redgnn backward: no loss to differentiate");
    uint32_t L = m->cfg.n_layers;
    for (int k = RG_WIH; k < RG_GP_COUNT; k++) /* shared by the layers: summed */
        OC_NN_TRY(oc_nn_tensor_zero(&m->gp[k]->grad, err));
    const struct oc_nn_tensor *top = &m->ws[L - 1].out;
    OC_NN_TRY(oc_nn_gemm(1, 0, 1.0f, &m->dscores, top, 0.0f, &m->gp[RG_FINAL]->grad, err));
    OC_NN_TRY(rs(m, &m->dout, top->n_rows, m->cfg.hidden, err));
    OC_NN_TRY(oc_nn_gemm(0, 0, 1.0f, &m->dscores, &m->gp[RG_FINAL]->value, 0.0f, &m->dout, err));
    for (uint32_t l = L; l-- > 0;) {
        const struct oc_nn_tensor *h = l ? &m->ws[l - 1].out : &m->zeros;
        OC_NN_TRY(layer_backward(m, l, h, err));
        if (l) {
            struct oc_nn_tensor t = m->dout; /* swap: the input gradient feeds layer l-1 */
            m->dout = m->dh;
            m->dh = t;
        }
    }
    m->have_loss = 0;
    return OC_OK;
}

/* ---- the workspace grown once (oc_nn_redgnn_reserve) ---------------------- */

/* Synthetic blocks of a shape: every index in range, edges spread evenly over the nodes. */
struct rg_synth {
    struct oc_nn_rel_block blocks[RG_MAX_LAYERS];
    const uint32_t *p2n[RG_MAX_LAYERS];
    uint64_t *indptr[RG_MAX_LAYERS];
    uint32_t *src[RG_MAX_LAYERS], *p2n_buf[RG_MAX_LAYERS];
    uint32_t *rel, *query, *q_rel; /* shared by the layers */
    uint64_t *qptr;
    int64_t *ans;
};

static void synth_free(struct rg_synth *s)
{
    for (int l = 0; l < RG_MAX_LAYERS; l++) {
        oc_free(s->indptr[l]);
        oc_free(s->src[l]);
        oc_free(s->p2n_buf[l]);
    }
    oc_free(s->rel);
    oc_free(s->query);
    oc_free(s->q_rel);
    oc_free(s->qptr);
    oc_free(s->ans);
    memset(s, 0, sizeof(*s));
}

static int synth_build(const struct oc_nn_redgnn *m, const struct oc_nn_redgnn_shape *sh,
                       struct rg_synth *s, struct oc_err *err)
{
    const char *who = "redgnn workspace: synthetic batch";
    uint32_t L = m->cfg.n_layers;
    uint64_t Q = sh->n_query, e_max = 0;
    memset(s, 0, sizeof(*s));
    for (uint32_t l = 0; l < L; l++) {
        if (sh->n_nodes[l] == 0 || sh->n_nodes[l] > UINT32_MAX || sh->n_edges[l] > UINT32_MAX)
            return OC_ERR(err, OC_ERR_ARG,
                          "redgnn reserve: layer %u has %llu nodes and %llu edges (1 to 2^32 "
                          "nodes)",
                          l, (unsigned long long)sh->n_nodes[l],
                          (unsigned long long)sh->n_edges[l]);
        e_max = sh->n_edges[l] > e_max ? sh->n_edges[l] : e_max;
    }
    uint64_t top = sh->n_nodes[L - 1];
    if (!(s->rel = oc_alloc((size_t)e_max * 4 + 4, who, err)) ||
        !(s->query = oc_alloc((size_t)e_max * 4 + 4, who, err)) ||
        !(s->q_rel = oc_alloc((size_t)Q * 4, who, err)) ||
        !(s->qptr = oc_alloc((size_t)(Q + 1) * 8, who, err)) ||
        !(s->ans = oc_alloc((size_t)Q * 8, who, err)))
        return err->status;
    for (uint64_t e = 0; e < e_max; e++) {
        s->rel[e] = (uint32_t)(e % m->cfg.n_rel);
        s->query[e] = (uint32_t)(e % Q);
    }
    for (uint64_t q = 0; q < Q; q++) {
        s->q_rel[q] = (uint32_t)(q % m->cfg.n_rel);
        s->qptr[q] = q * top / Q;
    }
    s->qptr[Q] = top;
    for (uint64_t q = 0; q < Q; q++)
        s->ans[q] = s->qptr[q] < s->qptr[q + 1] ? (int64_t)s->qptr[q] : -1;
    for (uint32_t l = 0; l < L; l++) {
        uint64_t n_src = l ? sh->n_nodes[l - 1] : Q, n = sh->n_nodes[l], E = sh->n_edges[l];
        if (!(s->indptr[l] = oc_alloc((size_t)(n + 1) * 8, who, err)) ||
            !(s->src[l] = oc_alloc((size_t)E * 4 + 4, who, err)) ||
            !(s->p2n_buf[l] = oc_alloc((size_t)n_src * 4, who, err)))
            return err->status;
        for (uint64_t i = 0; i <= n; i++)
            s->indptr[l][i] = i * E / n;
        for (uint64_t e = 0; e < E; e++)
            s->src[l][e] = (uint32_t)(e % n_src);
        for (uint64_t i = 0; i < n_src; i++)
            s->p2n_buf[l][i] = (uint32_t)(i % n);
        s->blocks[l] = (struct oc_nn_rel_block){n_src,        n,         E,      m->cfg.n_rel, Q,
                                                s->indptr[l], s->src[l], s->rel, s->query};
        s->p2n[l] = s->p2n_buf[l];
    }
    return OC_OK;
}

/* A forward pass (and with training, loss and backward) over a synthetic batch of shape sh. */
static int synth_pass(struct oc_nn_redgnn *m, const struct oc_nn_redgnn_shape *sh, int training,
                      struct oc_err *err)
{
    struct rg_synth s;
    int rc = synth_build(m, sh, &s, err);
    if (!rc) {
        struct oc_nn_redgnn_batch b = {sh->n_query, s.q_rel, s.blocks, s.p2n};
        struct oc_nn_step step = {training, 0, 0};
        const float *scores = NULL;
        double loss = 0.0;
        uint64_t top = sh->n_nodes[m->cfg.n_layers - 1];
        rc = oc_nn_redgnn_forward(m, &b, &step, &scores, err);
        if (!rc && training)
            rc = oc_nn_redgnn_loss(m, s.qptr, s.ans, top, &loss, err);
        if (!rc && training)
            rc = oc_nn_redgnn_backward(m, err);
    }
    synth_free(&s);
    return rc;
}

int oc_nn_redgnn_reserve(struct oc_nn_redgnn *m, const struct oc_nn_redgnn_shape *eval,
                         const struct oc_nn_redgnn_shape *train, struct oc_err *err)
{
    uint32_t L = m->cfg.n_layers;
    struct oc_nn_redgnn_shape big = *train;
    if (!train->n_query)
        big = *eval;
    else if (eval->n_query) {
        big.n_query = eval->n_query > train->n_query ? eval->n_query : train->n_query;
        for (uint32_t l = 0; l < L; l++) {
            big.n_nodes[l] = eval->n_nodes[l] > big.n_nodes[l] ? eval->n_nodes[l] : big.n_nodes[l];
            big.n_edges[l] = eval->n_edges[l] > big.n_edges[l] ? eval->n_edges[l] : big.n_edges[l];
        }
    }
    m->exact = 1;
    int rc = OC_OK;
    if (big.n_query)
        rc = synth_pass(m, &big, 0, err);
    if (!rc && train->n_query) {
        rc = synth_pass(m, train, 1, err);
        /* backward swaps dout and dh once per layer: either may later play either part */
        uint64_t rows = train->n_nodes[L - 1];
        for (uint32_t l = 0; l < L; l++) {
            uint64_t n_src = l ? train->n_nodes[l - 1] : train->n_query;
            rows = n_src > rows ? n_src : rows;
        }
        if (!rc)
            rc = rs(m, &m->dout, rows, m->cfg.hidden, err);
        if (!rc)
            rc = rs(m, &m->dh, rows, m->cfg.hidden, err);
    }
    m->exact = 0;
    for (uint32_t i = 0; !rc && i < m->base->n_params; i++)
        rc = oc_nn_tensor_zero(&m->base->params[i].grad, err);
    m->have_forward = m->have_loss = 0;
    memset(&m->batch, 0, sizeof(m->batch));
    return rc;
}
