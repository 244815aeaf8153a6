/*
 * model.c — the model object: configuration checks, parameters with DGL's
 * initializers drawn from the counter RNG, the forward pass over a batch's
 * blocks, the loss, the backward pass, the Adam step and layer-wise
 * inference.
 *
 *   forward:   x ─► layer 0 (block 0) ─► ws0[OUT] ─► layer 1 (block 1) ─► ... ─► logits
 *   backward:  dlogits ─► layer L-1 ─► wsL-1[DX] ─► ... ─► layer 0 (no input gradient)
 *
 * Place in the data flow: nn; train drives it once per batch.
 * Thread-safety: a model is used by one thread at a time; kernels fan out on
 * the backend's pool.
 * Ownership: the model owns parameters, Adam state, gradients, workspace and
 * prepared blocks (all grown on the first batches and reused); it borrows the
 * backend, and the blocks and input of a forward until the next backward.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn_int.h"

#define OC_NN_TAG_INIT   0x494E4954u /* "INIT" */
#define OC_NN_TAG_DROP   0x44524F50u /* "DROP" */
#define OC_NN_MAX_LAYERS 64
#define OC_NN_MAX_HEADS  1024

static const char *const kind_names[OC_NN_MODEL_KIND_COUNT] = {
    [OC_NN_MODEL_SAGE] = "sage", [OC_NN_MODEL_GCN] = "gcn", [OC_NN_MODEL_GAT] = "gat"};

const char *oc_nn_model_kind_name(enum oc_nn_model_kind kind)
{
    if (kind == OC_NN_MODEL_REDGNN)
        return "redgnn";
    return (unsigned)kind < OC_NN_MODEL_KIND_COUNT ? kind_names[kind] : "?";
}

int oc_nn_model_kind_parse(const char *name, enum oc_nn_model_kind *kind, struct oc_err *err)
{
    for (int k = 0; k < OC_NN_MODEL_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *kind = (enum oc_nn_model_kind)k;
            return OC_OK;
        }
    }
    return OC_ERR(err, OC_ERR_ARG, "unknown model '%s' (expected sage, gcn or gat)", name);
}

void oc_nn_model_config_default(enum oc_nn_model_kind kind, struct oc_nn_model_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->kind = kind;
    cfg->n_layers = 2;
    cfg->heads = 1;
    cfg->out_heads = 1;
    cfg->negative_slope = 0.2f;
    switch (kind) {
    case OC_NN_MODEL_SAGE:
        cfg->hidden = 16;
        cfg->in_dropout = 0.0f; /* DGL's SAGE examples drop hidden features only */
        cfg->dropout = 0.5f;
        break;
    case OC_NN_MODEL_GCN:
        cfg->hidden = 16;
        cfg->dropout = 0.5f;
        cfg->self_loops = 1;
        break;
    case OC_NN_MODEL_GAT:
    case OC_NN_MODEL_KIND_COUNT:
        cfg->hidden = 8;
        cfg->heads = 8;
        cfg->in_dropout = 0.6f;
        cfg->dropout = 0.6f;
        cfg->attn_dropout = 0.6f;
        cfg->self_loops = 1;
        break;
    }
}

void oc_nn_adam_default(struct oc_nn_adam *opt, float lr, float weight_decay)
{
    opt->lr = lr;
    opt->beta1 = 0.9f;
    opt->beta2 = 0.999f;
    opt->eps = 1e-8f;
    opt->weight_decay = weight_decay;
}

static int prob_ok(float p, const char *name, struct oc_err *err)
{
    if (!(p >= 0.0f && p < 1.0f))
        return OC_ERR(err, OC_ERR_ARG, "model config: %s %g outside [0, 1)", name, (double)p);
    return OC_OK;
}

static int config_check(const struct oc_nn_model_config *c, struct oc_err *err)
{
    if ((unsigned)c->kind >= OC_NN_MODEL_KIND_COUNT)
        return OC_ERR(err, OC_ERR_ARG,
                      "model config: unknown kind %d (RED-GNN models are made "
                      "with oc_nn_redgnn_new)",
                      (int)c->kind);
    if (c->n_layers < 1 || c->n_layers > OC_NN_MAX_LAYERS)
        return OC_ERR(err, OC_ERR_ARG, "model config: n_layers %u outside [1, %d]", c->n_layers,
                      OC_NN_MAX_LAYERS);
    uint64_t lim = (uint64_t)1 << 30;
    if (c->in_dim < 1 || c->in_dim > lim)
        return OC_ERR(err, OC_ERR_ARG, "model config: in_dim %llu outside [1, 2^30]",
                      (unsigned long long)c->in_dim);
    if (c->n_classes < 1 || c->n_classes > lim)
        return OC_ERR(err, OC_ERR_ARG, "model config: n_classes %llu outside [1, 2^30]",
                      (unsigned long long)c->n_classes);
    if (c->n_layers > 1 && (c->hidden < 1 || c->hidden > lim))
        return OC_ERR(err, OC_ERR_ARG, "model config: hidden %llu outside [1, 2^30]",
                      (unsigned long long)c->hidden);
    if (c->kind == OC_NN_MODEL_GAT) {
        if (c->out_heads < 1 || c->out_heads > OC_NN_MAX_HEADS ||
            (c->n_layers > 1 && (c->heads < 1 || c->heads > OC_NN_MAX_HEADS)))
            return OC_ERR(err, OC_ERR_ARG, "model config: heads %u / out_heads %u outside [1, %d]",
                          c->heads, c->out_heads, OC_NN_MAX_HEADS);
        if (c->n_layers > 1 && c->hidden * c->heads > lim)
            return OC_ERR(err, OC_ERR_ARG, "model config: hidden x heads beyond 2^30");
        if (!(c->negative_slope >= 0.0f && c->negative_slope < 1e6f))
            return OC_ERR(err, OC_ERR_ARG, "model config: negative_slope %g",
                          (double)c->negative_slope);
    }
    OC_NN_TRY(prob_ok(c->in_dropout, "in_dropout", err));
    OC_NN_TRY(prob_ok(c->dropout, "dropout", err));
    OC_NN_TRY(prob_ok(c->attn_dropout, "attn_dropout", err));
    return OC_OK;
}

/* xavier_uniform (normal = 0) or xavier_normal with PyTorch's fans. */
static int param_init(struct oc_nn_model *m, struct oc_nn_param *p, uint32_t layer,
                      enum oc_nn_lp slot, int normal, double gain, double fan_in, double fan_out,
                      struct oc_err *err)
{
    uint64_t n = p->value.n_rows * p->value.n_cols;
    float *host = oc_alloc((size_t)n * sizeof(float) + 1, "nn parameter init", err);
    if (!host)
        return err->status;
    struct oc_rng rng;
    oc_rng_init(&rng, oc_rng_mix64(m->cfg.seed, OC_NN_TAG_INIT), layer, (uint64_t)slot, 0);
    double std = gain * sqrt(2.0 / (fan_in + fan_out));
    double bound = gain * sqrt(6.0 / (fan_in + fan_out));
    for (uint64_t i = 0; i < n; i++) {
        if (slot == OC_NN_LP_BIAS)
            host[i] = 0.0f;
        else if (normal)
            host[i] = (float)(std * (double)oc_rng_normal(&rng));
        else
            host[i] = (float)(bound * (2.0 * oc_rng_uniform_f64(&rng) - 1.0));
    }
    int rc = oc_nn_tensor_set(&p->value, host, err);
    oc_free(host);
    return rc;
}

/*
 * Adds parameter `slot` of layer l. With stack_row0 != UINT64_MAX its value
 * and gradient are rows [stack_row0, stack_row0 + n_rows) of l->wcat and
 * l->gcat (SAGE's stacked weights) instead of buffers of their own.
 */
static int param_add_at(struct oc_nn_model *m, struct oc_nn_layer *l, enum oc_nn_lp slot,
                        const char *name, uint64_t n_rows, uint64_t n_cols, uint64_t stack_row0,
                        struct oc_err *err)
{
    struct oc_nn_param *p = &m->params[m->n_params++];
    snprintf(p->name, sizeof(p->name), "layer%u.%s", l->index, name);
    struct oc_nn_tensor *ts[4] = {&p->value, &p->grad, &p->adam_m, &p->adam_v};
    for (int i = 0; i < 4; i++) {
        oc_nn_tensor_init(ts[i], m->be, OC_NN_F32);
        if (stack_row0 != UINT64_MAX && i < 2)
            OC_NN_TRY(oc_nn_tensor_view_rows(i == 0 ? &l->wcat : &l->gcat, stack_row0, n_rows,
                                             ts[i], err));
        else
            OC_NN_TRY(oc_nn_tensor_resize(ts[i], n_rows, n_cols, "nn parameters", err));
        OC_NN_TRY(oc_nn_tensor_zero(ts[i], err));
    }
    l->p[slot] = p;
    const double relu_gain = sqrt(2.0);
    switch (l->kind) {
    case OC_NN_MODEL_SAGE:
        return param_init(m, p, l->index, slot, 0, relu_gain, (double)n_rows, (double)n_cols, err);
    case OC_NN_MODEL_GCN:
        return param_init(m, p, l->index, slot, 0, 1.0, (double)n_rows, (double)n_cols, err);
    case OC_NN_MODEL_GAT:
    case OC_NN_MODEL_KIND_COUNT:
        break;
    }
    if (slot == OC_NN_LP_ATTN_L || slot == OC_NN_LP_ATTN_R) /* torch shape (1, H, F) */
        return param_init(m, p, l->index, slot, 1, relu_gain, (double)(l->heads * l->head_dim),
                          (double)l->head_dim, err);
    return param_init(m, p, l->index, slot, 1, relu_gain, (double)n_rows, (double)n_cols, err);
}

static int param_add(struct oc_nn_model *m, struct oc_nn_layer *l, enum oc_nn_lp slot,
                     const char *name, uint64_t n_rows, uint64_t n_cols, struct oc_err *err)
{
    return param_add_at(m, l, slot, name, n_rows, n_cols, UINT64_MAX, err);
}

static int layer_setup(struct oc_nn_model *m, uint32_t i, struct oc_err *err)
{
    const struct oc_nn_model_config *c = &m->cfg;
    struct oc_nn_layer *l = &m->layers[i];
    l->kind = c->kind;
    l->index = i;
    l->last = i + 1 == c->n_layers;
    l->p_drop = i == 0 ? c->in_dropout : c->dropout;
    l->slope = c->negative_slope;
    l->heads = 1;
    l->ws = m->ws[i];
    if (c->kind == OC_NN_MODEL_GAT) {
        l->in_dim = i == 0 ? c->in_dim : c->hidden * c->heads;
        l->heads = l->last ? c->out_heads : c->heads;
        l->head_dim = l->last ? c->n_classes : c->hidden;
        l->out_dim = l->last ? c->n_classes : c->hidden * c->heads;
        l->p_attn = c->attn_dropout;
        uint64_t hf = l->heads * l->head_dim;
        OC_NN_TRY(param_add(m, l, OC_NN_LP_W, "fc", l->in_dim, hf, err));
        OC_NN_TRY(param_add(m, l, OC_NN_LP_ATTN_L, "attn_l", 1, hf, err));
        OC_NN_TRY(param_add(m, l, OC_NN_LP_ATTN_R, "attn_r", 1, hf, err));
        return param_add(m, l, OC_NN_LP_BIAS, "bias", 1, hf, err);
    }
    l->in_dim = i == 0 ? c->in_dim : c->hidden;
    l->out_dim = l->last ? c->n_classes : c->hidden;
    if (c->kind == OC_NN_MODEL_SAGE) {
        /* [W_neigh; W_self]: the layer's one GEMM over [h_neigh | h_self] (layer_sage.c) */
        OC_NN_TRY(oc_nn_tensor_resize(&l->wcat, 2 * l->in_dim, l->out_dim, "nn parameters", err));
        OC_NN_TRY(oc_nn_tensor_resize(&l->gcat, 2 * l->in_dim, l->out_dim, "nn parameters", err));
        OC_NN_TRY(
            param_add_at(m, l, OC_NN_LP_W_SELF, "fc_self", l->in_dim, l->out_dim, l->in_dim, err));
        OC_NN_TRY(param_add_at(m, l, OC_NN_LP_W_NEIGH, "fc_neigh", l->in_dim, l->out_dim, 0, err));
    } else {
        OC_NN_TRY(param_add(m, l, OC_NN_LP_W, "weight", l->in_dim, l->out_dim, err));
    }
    return param_add(m, l, OC_NN_LP_BIAS, "bias", 1, l->out_dim, err);
}

int oc_nn_model_new(struct oc_nn_backend *be, const struct oc_nn_model_config *cfg,
                    struct oc_nn_model **out, struct oc_err *err)
{
    *out = NULL;
    if (!be || !cfg)
        return OC_ERR(err, OC_ERR_ARG, "model: missing backend or config");
    OC_NN_TRY(config_check(cfg, err));
    struct oc_nn_model *m = oc_calloc(1, sizeof(*m), "nn model", err);
    if (!m)
        return err->status;
    m->be = be;
    m->cfg = *cfg;
    uint32_t nl = cfg->n_layers;
    oc_nn_graph_init(&m->infer_graph);
    oc_nn_lws_init(m->infer_ws, be);
    oc_nn_tensor_init(&m->dlogits, be, OC_NN_F32);
    m->layers = oc_calloc(nl, sizeof(*m->layers), "nn model", err);
    m->graphs = oc_calloc(nl, sizeof(*m->graphs), "nn model", err);
    m->ws = oc_calloc(nl, sizeof(*m->ws), "nn model", err);
    m->params = oc_calloc((size_t)nl * OC_NN_LP_COUNT, sizeof(*m->params), "nn model", err);
    if (!m->layers || !m->graphs || !m->ws || !m->params)
        goto fail;
    for (uint32_t i = 0; i < nl; i++) {
        oc_nn_graph_init(&m->graphs[i]);
        oc_nn_lws_init(m->ws[i], be);
        oc_nn_tensor_init(&m->layers[i].wcat, be, OC_NN_F32);
        oc_nn_tensor_init(&m->layers[i].gcat, be, OC_NN_F32);
    }
    for (uint32_t i = 0; i < nl; i++)
        if (layer_setup(m, i, err) != OC_OK)
            goto fail;
    *out = m;
    return OC_OK;
fail:;
    int rc = err->status;
    oc_nn_model_free(m);
    return rc;
}

void oc_nn_model_free(struct oc_nn_model *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n_params; i++) {
        oc_nn_tensor_deinit(&m->params[i].value);
        oc_nn_tensor_deinit(&m->params[i].grad);
        oc_nn_tensor_deinit(&m->params[i].adam_m);
        oc_nn_tensor_deinit(&m->params[i].adam_v);
    }
    for (uint32_t i = 0; m->graphs && i < m->cfg.n_layers; i++)
        oc_nn_graph_deinit(&m->graphs[i]);
    for (uint32_t i = 0; m->ws && i < m->cfg.n_layers; i++)
        oc_nn_lws_deinit(m->ws[i]);
    for (uint32_t i = 0; m->layers && i < m->cfg.n_layers; i++) {
        oc_nn_tensor_deinit(&m->layers[i].wcat);
        oc_nn_tensor_deinit(&m->layers[i].gcat);
    }
    oc_nn_graph_deinit(&m->infer_graph);
    oc_nn_lws_deinit(m->infer_ws);
    oc_nn_tensor_deinit(&m->dlogits);
    oc_free(m->params);
    oc_free(m->ws);
    oc_free(m->graphs);
    oc_free(m->layers);
    oc_free(m);
}

const struct oc_nn_model_config *oc_nn_model_config(const struct oc_nn_model *m)
{
    return &m->cfg;
}

static int layer_forward(struct oc_nn_layer *l, const struct oc_nn_graph *g,
                         const struct oc_nn_tensor *x, struct oc_nn_tensor *y,
                         const struct oc_nn_fwd *fwd, struct oc_err *err)
{
    switch (l->kind) {
    case OC_NN_MODEL_SAGE:
        return oc_nn_sage_forward(l, g, x, y, fwd, err);
    case OC_NN_MODEL_GCN:
        return oc_nn_gcn_forward(l, g, x, y, fwd, err);
    case OC_NN_MODEL_GAT:
    case OC_NN_MODEL_KIND_COUNT:
        break;
    }
    return oc_nn_gat_forward(l, g, x, y, fwd, err);
}

static int layer_backward(struct oc_nn_layer *l, struct oc_nn_graph *g,
                          const struct oc_nn_tensor *y, const struct oc_nn_tensor *dy, int want_dx,
                          struct oc_err *err)
{
    switch (l->kind) {
    case OC_NN_MODEL_SAGE:
        return oc_nn_sage_backward(l, g, y, dy, want_dx, err);
    case OC_NN_MODEL_GCN:
        return oc_nn_gcn_backward(l, g, y, dy, want_dx, err);
    case OC_NN_MODEL_GAT:
    case OC_NN_MODEL_KIND_COUNT:
        break;
    }
    return oc_nn_gat_backward(l, g, y, dy, want_dx, err);
}

static int input_check(const struct oc_nn_model *m, const struct oc_nn_tensor *x, uint64_t n_rows,
                       uint64_t n_cols, const char *what, struct oc_err *err)
{
    if (!x)
        return OC_ERR(err, OC_ERR_ARG, "model: missing %s", what);
    if (x->backend != m->be || x->dtype != OC_NN_F32)
        return OC_ERR(err, OC_ERR_ARG, "model: %s is not an f32 tensor on the model's backend",
                      what);
    if (x->n_rows != n_rows || x->n_cols != n_cols)
        return OC_ERR(err, OC_ERR_ARG, "model: %s is %llux%llu, expected %llux%llu", what,
                      (unsigned long long)x->n_rows, (unsigned long long)x->n_cols,
                      (unsigned long long)n_rows, (unsigned long long)n_cols);
    return OC_OK;
}

/* Rows pos[0 .. n) of t (f32, n_cols wide) from host rows, or to zero (host NULL). */
static int rows_set(struct oc_nn_tensor *t, const uint32_t *pos, uint64_t n, const float *host,
                    struct oc_err *err)
{
    size_t row = (size_t)t->n_cols * sizeof(float);
    for (uint64_t k = 0; k < n; k++) {
        if (pos[k] >= t->n_rows)
            return OC_ERR(err, OC_ERR_ARG, "model: embedding row %u of %llu", pos[k],
                          (unsigned long long)t->n_rows);
        void *dst = (char *)t->data + (size_t)pos[k] * row;
        int rc = host ? t->backend->ops->buf_set(t->backend, dst, host + k * t->n_cols, row, err)
                      : t->backend->ops->buf_zero(t->backend, dst, row, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

int oc_nn_model_forward(struct oc_nn_model *m, const struct oc_nn_block *blocks,
                        const struct oc_nn_tensor *x, const struct oc_nn_step *step,
                        const struct oc_nn_tensor **logits, struct oc_err *err)
{
    return oc_nn_model_forward_hist(m, blocks, x, step, NULL, logits, err);
}

int oc_nn_model_last_input_rows(const struct oc_nn_model *m, const uint32_t *pos, uint64_t n,
                                float *out, struct oc_err *err)
{
    uint32_t nl = m->cfg.n_layers;
    if (!m->have_forward || nl < 2)
        return OC_ERR(err, OC_ERR_ARG, "model: no last-layer input (a forward pass of 2+ layers)");
    const struct oc_nn_tensor *t = &m->layers[nl - 2].ws[OC_NN_LWS_OUT];
    size_t row = (size_t)t->n_cols * sizeof(float);
    for (uint64_t k = 0; k < n; k++) {
        if (pos[k] >= t->n_rows)
            return OC_ERR(err, OC_ERR_ARG, "model: last-layer input row %u of %llu", pos[k],
                          (unsigned long long)t->n_rows);
        int rc = t->backend->ops->buf_get(t->backend, out + k * t->n_cols,
                                          (const char *)t->data + (size_t)pos[k] * row, row, err);
        if (rc)
            return rc;
    }
    return OC_OK;
}

int oc_nn_model_last_input_grad_norms(const struct oc_nn_model *m, const uint32_t *pos, uint64_t n,
                                      float *out, struct oc_err *err)
{
    uint32_t nl = m->cfg.n_layers;
    if (!m->have_backward || nl < 2)
        return OC_ERR(err, OC_ERR_ARG,
                      "model: no last-layer input gradient (a backward pass of 2+ layers)");
    const struct oc_nn_tensor *t = &m->layers[nl - 1].ws[OC_NN_LWS_DX];
    float chunk[256];
    for (uint64_t k = 0; k < n; k++) {
        if (pos[k] >= t->n_rows)
            return OC_ERR(err, OC_ERR_ARG, "model: last-layer input row %u of %llu", pos[k],
                          (unsigned long long)t->n_rows);
        const char *src = (const char *)t->data + (size_t)pos[k] * t->n_cols * sizeof(float);
        double s = 0;
        for (uint64_t c0 = 0; c0 < t->n_cols; c0 += 256) {
            uint64_t w = t->n_cols - c0 < 256 ? t->n_cols - c0 : 256;
            int rc = t->backend->ops->buf_get(t->backend, chunk, src + c0 * sizeof(float),
                                              w * sizeof(float), err);
            if (rc)
                return rc;
            for (uint64_t c = 0; c < w; c++)
                s += (double)chunk[c] * chunk[c];
        }
        out[k] = (float)sqrt(s);
    }
    return OC_OK;
}

int oc_nn_model_forward_hist(struct oc_nn_model *m, const struct oc_nn_block *blocks,
                             const struct oc_nn_tensor *x, const struct oc_nn_step *step,
                             const struct oc_nn_hist *hist, const struct oc_nn_tensor **logits,
                             struct oc_err *err)
{
    if (logits)
        *logits = NULL;
    m->have_forward = 0;
    m->have_loss = 0;
    m->have_backward = 0;
    memset(&m->hist, 0, sizeof(m->hist));
    uint32_t nl = m->cfg.n_layers;
    if (!blocks || !step)
        return OC_ERR(err, OC_ERR_ARG, "model forward: missing blocks or step");
    for (uint32_t i = 1; i < nl; i++)
        if (blocks[i].n_src != blocks[i - 1].n_dst)
            return OC_ERR(err, OC_ERR_ARG,
                          "model forward: block %u has %llu src nodes but block %u has %llu dst "
                          "nodes",
                          i, (unsigned long long)blocks[i].n_src, i - 1,
                          (unsigned long long)blocks[i - 1].n_dst);
    OC_NN_TRY(input_check(m, x, blocks[0].n_src, m->cfg.in_dim, "input x", err));
    struct oc_nn_fwd fwd = {.training = step->training};
    fwd.drop_seed = oc_rng_mix64(
        oc_rng_mix64(oc_rng_mix64(m->cfg.seed, OC_NN_TAG_DROP), step->epoch), step->batch);
    const struct oc_nn_tensor *h = x;
    for (uint32_t i = 0; i < nl; i++) {
        struct oc_nn_layer *l = &m->layers[i];
        struct oc_nn_tensor *y = &l->ws[OC_NN_LWS_OUT];
        if (oc_nn_graph_prepare(&m->graphs[i], &blocks[i], m->cfg.self_loops,
                                m->cfg.kind == OC_NN_MODEL_GCN, err) != OC_OK ||
            oc_nn_layer_ws(l, OC_NN_LWS_OUT, blocks[i].n_dst, l->out_dim, err) != OC_OK ||
            layer_forward(l, &m->graphs[i], h, y, &fwd, err) != OC_OK)
            return oc_err_prefix(err, "model forward, layer %u (block %u)", i, i);
        if (hist && hist->n && i + 2 == nl) { /* the last layer's input: cached rows */
            if (rows_set(y, hist->pos, hist->n, hist->rows, err) != OC_OK)
                return oc_err_prefix(err, "model forward, historical embeddings");
            m->hist = *hist;
        }
        h = y;
    }
    m->have_forward = 1;
    if (logits)
        *logits = h;
    return OC_OK;
}

int oc_nn_model_loss(struct oc_nn_model *m, const int32_t *labels, struct oc_nn_loss *out,
                     struct oc_err *err)
{
    if (!m->have_forward)
        return OC_ERR(err, OC_ERR_ARG, "model loss: no forward pass to take the loss of");
    const struct oc_nn_tensor *logits = &m->layers[m->cfg.n_layers - 1].ws[OC_NN_LWS_OUT];
    OC_NN_TRY(oc_nn_tensor_resize(&m->dlogits, logits->n_rows, logits->n_cols, "nn model", err));
    OC_NN_TRY(oc_nn_nll(logits, labels, &m->dlogits, out, err));
    m->have_loss = 1;
    return OC_OK;
}

int oc_nn_model_backward(struct oc_nn_model *m, struct oc_err *err)
{
    if (!m->have_loss)
        return OC_ERR(err, OC_ERR_ARG, "model backward: no loss since the last forward pass");
    const struct oc_nn_tensor *dy = &m->dlogits;
    for (uint32_t i = m->cfg.n_layers; i-- > 0;) {
        struct oc_nn_layer *l = &m->layers[i];
        if (layer_backward(l, &m->graphs[i], &l->ws[OC_NN_LWS_OUT], dy, i > 0, err) != OC_OK)
            return oc_err_prefix(err, "model backward, layer %u", i);
        dy = &l->ws[OC_NN_LWS_DX];
        if (m->hist.n && i + 1 == m->cfg.n_layers && i > 0 && /* cached rows are constants */
            rows_set(&l->ws[OC_NN_LWS_DX], m->hist.pos, m->hist.n, NULL, err) != OC_OK)
            return oc_err_prefix(err, "model backward, historical embeddings");
    }
    m->have_loss = 0;
    m->have_backward = 1;
    return OC_OK;
}

int oc_nn_model_adam_step(struct oc_nn_model *m, const struct oc_nn_adam *opt, struct oc_err *err)
{
    uint64_t t = m->adam_t + 1;
    for (uint32_t i = 0; i < m->n_params; i++) {
        struct oc_nn_param *p = &m->params[i];
        if (oc_nn_adam_update(&p->value, &p->grad, &p->adam_m, &p->adam_v, opt, t, err) != OC_OK)
            return oc_err_prefix(err, "adam step, %s", p->name);
    }
    m->adam_t = t;
    return OC_OK;
}

uint64_t oc_nn_model_adam_t(const struct oc_nn_model *m)
{
    return m->adam_t;
}

int oc_nn_model_layer_dims(const struct oc_nn_model *m, uint32_t layer, uint64_t *in_dim,
                           uint64_t *out_dim, struct oc_err *err)
{
    if (layer >= m->cfg.n_layers)
        return OC_ERR(err, OC_ERR_ARG, "model: layer %u of %u", layer, m->cfg.n_layers);
    *in_dim = m->layers[layer].in_dim;
    *out_dim = m->layers[layer].out_dim;
    return OC_OK;
}

int oc_nn_model_forward_layer(struct oc_nn_model *m, uint32_t layer,
                              const struct oc_nn_block *block, const struct oc_nn_tensor *x,
                              struct oc_nn_tensor *out, struct oc_err *err)
{
    uint64_t in_dim = 0, out_dim = 0;
    OC_NN_TRY(oc_nn_model_layer_dims(m, layer, &in_dim, &out_dim, err));
    if (!block)
        return OC_ERR(err, OC_ERR_ARG, "model forward_layer: missing block");
    OC_NN_TRY(input_check(m, x, block->n_src, in_dim, "layer input x", err));
    OC_NN_TRY(input_check(m, out, block->n_dst, out_dim, "layer output", err));
    struct oc_nn_layer tmp = m->layers[layer]; /* same parameters, inference workspace */
    tmp.ws = m->infer_ws;
    struct oc_nn_fwd fwd = {.training = 0};
    if (oc_nn_graph_prepare(&m->infer_graph, block, m->cfg.self_loops,
                            m->cfg.kind == OC_NN_MODEL_GCN, err) != OC_OK ||
        layer_forward(&tmp, &m->infer_graph, x, out, &fwd, err) != OC_OK)
        return oc_err_prefix(err, "model forward_layer %u", layer);
    return OC_OK;
}

uint32_t oc_nn_model_n_params(const struct oc_nn_model *m)
{
    return m->n_params;
}

uint64_t oc_nn_model_n_weights(const struct oc_nn_model *m)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->n_params; i++)
        n += m->params[i].value.n_rows * m->params[i].value.n_cols;
    return n;
}

struct oc_nn_param *oc_nn_model_param_at(struct oc_nn_model *m, uint32_t i)
{
    return i < m->n_params ? &m->params[i] : NULL;
}

static int param_index_ok(const struct oc_nn_model *m, uint32_t i, struct oc_err *err)
{
    if (i >= m->n_params)
        return OC_ERR(err, OC_ERR_ARG, "model: parameter %u of %u", i, m->n_params);
    return OC_OK;
}

int oc_nn_model_param_info(const struct oc_nn_model *m, uint32_t i, struct oc_nn_param_info *info,
                           struct oc_err *err)
{
    OC_NN_TRY(param_index_ok(m, i, err));
    info->name = m->params[i].name;
    info->n_rows = m->params[i].value.n_rows;
    info->n_cols = m->params[i].value.n_cols;
    return OC_OK;
}

int oc_nn_model_param_get(const struct oc_nn_model *m, uint32_t i, float *host, struct oc_err *err)
{
    OC_NN_TRY(param_index_ok(m, i, err));
    return oc_nn_tensor_get(&m->params[i].value, host, err);
}

int oc_nn_model_param_set(struct oc_nn_model *m, uint32_t i, const float *host, struct oc_err *err)
{
    OC_NN_TRY(param_index_ok(m, i, err));
    return oc_nn_tensor_set(&m->params[i].value, host, err);
}

int oc_nn_model_grads_get(const struct oc_nn_model *m, float *host, struct oc_err *err)
{
    for (uint32_t i = 0; i < m->n_params; i++) {
        const struct oc_nn_tensor *g = &m->params[i].grad;
        OC_NN_TRY(oc_nn_tensor_get(g, host, err));
        host += g->n_rows * g->n_cols;
    }
    return OC_OK;
}

int oc_nn_model_grads_set(struct oc_nn_model *m, const float *host, struct oc_err *err)
{
    for (uint32_t i = 0; i < m->n_params; i++) {
        struct oc_nn_tensor *g = &m->params[i].grad;
        OC_NN_TRY(oc_nn_tensor_set(g, host, err));
        host += g->n_rows * g->n_cols;
    }
    return OC_OK;
}
