/*
 * test_outre.c — the `outre` strategy and the pieces under it: the
 * sampler's pruning hook (a hook that prunes nothing gives the very batch
 * sampled without it, bit for bit; a pruned node takes no neighbours in the
 * block below the last and every other draw is unchanged; seeds are never
 * pruned); the model's forward pass with historical rows (the computed rows
 * give the same logits; replaced rows are constants for the backward pass);
 * training with `--staleness 0` equals `memory` bit for bit (random and
 * partition batches); with a tiny staleness no embedding older than it is
 * ever used, one of K = the batches in flight is never fresh enough, and a
 * run is deterministic; admission (--admit) takes the smallest gradient
 * norms, the share asked for, a push not admitted empties its slot, and none
 * admitted trains `memory`'s weights; --embed-nodes fixes the embedding side;
 * the model's gradient norms at the last layer's input; the profile-based
 * choice of cached nodes (top-k with ties to the lower id); a store over
 * other ids (a partitioned dataset's part) served as a feature cache, its
 * embeddings refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_util.h"
#include "harness.h"
#include "import_fixture.h"
#include "nn/nn_int.h"
#include "nn_testutil.h"
#include "offcore/dataset.h"
#include "offcore/import.h"
#include "offcore/sample.h"
#include "offcore/train.h"
#include "store/outre/outre_int.h"
#include "store_fixture.h"

static const char *ot_graph(void)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    g.avg_degree = 8;
    g.feat_dim = 16;
    g.n_classes = 6;
    g.train_frac = 0.3;
    g.seed = 8;
    return gen_once(&g);
}

/* ---- the sampler's pruning hook ------------------------------------------ */

struct ot_graph {
    struct oc_dataset *ds;
    uint64_t *indptr;
    void *indices;
    struct oc_graph g;
};

static int ot_open(struct ot_graph *t)
{
    memset(t, 0, sizeof(*t));
    const char *dir = ot_graph();
    struct oc_err err;
    if (!dir || oc_dataset_open(dir, 0, &t->ds, &err) ||
        oc_dataset_load_indptr(t->ds, &t->indptr, &err) ||
        oc_dataset_load_indices(t->ds, OC_DTYPE_U32, &t->indices, &err))
        return -1;
    t->g.n_nodes = oc_dataset_manifest(t->ds)->n_nodes;
    t->g.indptr = t->indptr;
    t->g.indices32 = t->indices;
    return 0;
}

static void ot_close(struct ot_graph *t)
{
    oc_free(t->indptr);
    oc_free(t->indices);
    oc_dataset_free(t->ds);
}

static int mark_none(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t n,
                     uint64_t n_seeds, uint8_t *mask, struct oc_err *err)
{
    (void)epoch, (void)batch, (void)ids, (void)n_seeds, (void)mask, (void)err;
    uint64_t *calls = ctx;
    calls[0]++;
    calls[1] = n;
    return OC_OK;
}

/* Marks every node with an odd id, seeds included (which the sampler must ignore). */
static int mark_odd(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t n,
                    uint64_t n_seeds, uint8_t *mask, struct oc_err *err)
{
    (void)ctx, (void)epoch, (void)batch, (void)n_seeds, (void)err;
    for (uint64_t i = 0; i < n; i++)
        mask[i] = ids[i] & 1;
    return OC_OK;
}

/* The global in-neighbours block l of b drew for global node v (n = count; NULL if v is no dst). */
static const uint32_t *nbrs_of(const struct oc_sample_batch *b, uint32_t l, uint64_t v, uint64_t *n)
{
    const struct oc_sample_block *k = &b->blocks[l];
    for (uint64_t i = 0; i < k->n_dst; i++)
        if (b->input_ids[i] == v) {
            *n = k->indptr[i + 1] - k->indptr[i];
            return k->indices + k->indptr[i];
        }
    *n = 0;
    return NULL;
}

OC_TEST(pruning_hook_prunes_only_the_marked_sub_trees)
{
    struct ot_graph t;
    OC_CHECK(ot_open(&t) == 0);
    if (!t.ds)
        return;
    struct oc_sample_opts so = {3, {3, 4, 5}, 21, NULL};
    struct oc_sampler *sm = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_sample_sampler_new(&t.g, &so, NULL, &sm, &err), &err);
    uint64_t seeds[40];
    for (int i = 0; i < 40; i++)
        seeds[i] = (uint64_t)(i * 71 + 5) % t.g.n_nodes;
    struct oc_sample_batch a, b, c;
    oc_sample_batch_init(&a);
    oc_sample_batch_init(&b);
    oc_sample_batch_init(&c);
    OC_CHECK_OK(oc_sample_neighbors(sm, 2, 7, seeds, 40, &a, &err), &err);
    uint64_t calls[2] = {0, 0};
    oc_sample_sampler_on_prune(sm, mark_none, calls);
    OC_CHECK_OK(oc_sample_neighbors(sm, 2, 7, seeds, 40, &b, &err), &err);
    OC_CHECK(calls[0] == 1 && calls[1] == a.blocks[2].n_src); /* once, the last block's sources */
    OC_CHECK(oc_sample_batch_equal(&a, &b));                  /* nothing pruned: bit for bit */
    oc_sample_sampler_on_prune(sm, mark_odd, NULL);
    OC_CHECK_OK(oc_sample_neighbors(sm, 2, 7, seeds, 40, &c, &err), &err);
    OC_CHECK(c.n_input < a.n_input);
    OC_CHECK(c.blocks[2].n_src == a.blocks[2].n_src); /* the last block is sampled as before */
    uint64_t pruned = 0;
    for (uint32_t l = 0; l < 3; l++)
        for (uint64_t i = 0; i < c.blocks[l].n_dst; i++) {
            uint64_t v = c.input_ids[i], na, nc;
            const uint32_t *ea = nbrs_of(&a, l, v, &na), *ec = nbrs_of(&c, l, v, &nc);
            OC_CHECK(ea != NULL);
            int cut = l == 1 && i >= c.n_seeds && i < c.blocks[2].n_src && (v & 1);
            if (cut) { /* a marked non-seed source of the last block: no sub-tree */
                OC_CHECK(nc == 0);
                pruned++;
                continue;
            }
            OC_CHECK(nc == na); /* every other node draws the same neighbours */
            for (uint64_t k = 0; ea && k < nc && k < na; k++)
                OC_CHECK(c.input_ids[ec[k]] == a.input_ids[ea[k]]);
        }
    OC_CHECK(pruned > 0);
    oc_sample_batch_deinit(&a);
    oc_sample_batch_deinit(&b);
    oc_sample_batch_deinit(&c);
    oc_sample_sampler_free(sm);
    ot_close(&t);
}

/* ---- the model's forward pass with historical rows ------------------------ */

static void ot_logits(struct oc_nn_model *m, float *out, uint64_t n)
{
    struct oc_err err;
    OC_CHECK_OK(oc_nn_tensor_get(&m->layers[m->cfg.n_layers - 1].ws[OC_NN_LWS_OUT], out, &err),
                &err);
    (void)n;
}

OC_TEST(historical_rows_replace_the_last_layer_input_and_stop_gradients)
{
    struct nt_env env;
    OC_CHECK(nt_env_new(&env, 0) == 0);
    struct oc_nn_model_config cfg;
    oc_nn_model_config_default(OC_NN_MODEL_SAGE, &cfg);
    cfg.n_layers = 2;
    cfg.in_dim = 5;
    cfg.hidden = 3;
    cfg.n_classes = 4;
    cfg.dropout = 0;
    cfg.seed = 2;
    struct oc_nn_model *m = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_nn_model_new(env.be, &cfg, &m, &err), &err);
    if (!m)
        return;
    struct oc_nn_block blocks[2] = {nt_block0(), nt_block1()};
    struct oc_nn_tensor x;
    nt_rand(&x, env.be, blocks[0].n_src, 5, -1, 1, 17);
    struct oc_nn_step step = {1, 0, 0};
    int32_t labels[2] = {1, 3};
    struct oc_nn_loss loss;
    float plain[8], again[8], rows[4 * 3];
    uint32_t pos[4] = {2, 3, 0, 1};
    OC_CHECK_OK(oc_nn_model_forward(m, blocks, &x, &step, NULL, &err), &err);
    ot_logits(m, plain, 8);
    OC_CHECK_OK(oc_nn_model_last_input_rows(m, pos, 2, rows, &err), &err);
    /* the rows it computed itself: the same logits, bit for bit */
    struct oc_nn_hist h = {2, pos, rows};
    OC_CHECK_OK(oc_nn_model_forward_hist(m, blocks, &x, &step, &h, NULL, &err), &err);
    ot_logits(m, again, 8);
    OC_CHECK(memcmp(plain, again, sizeof(plain)) == 0);
    /* other rows: other logits */
    float moved[2 * 3];
    for (int k = 0; k < 6; k++)
        moved[k] = rows[k] + 0.5f;
    h.rows = moved;
    OC_CHECK_OK(oc_nn_model_forward_hist(m, blocks, &x, &step, &h, NULL, &err), &err);
    ot_logits(m, again, 8);
    OC_CHECK(memcmp(plain, again, sizeof(plain)) != 0);
    /* every source of the last block replaced: layer 0 gets no gradient at all */
    float all[4 * 3];
    for (int k = 0; k < 12; k++)
        all[k] = 0.1f * (float)k;
    h = (struct oc_nn_hist){4, pos, all};
    OC_CHECK_OK(oc_nn_model_forward_hist(m, blocks, &x, &step, &h, NULL, &err), &err);
    OC_CHECK_OK(oc_nn_model_loss(m, labels, &loss, &err), &err);
    OC_CHECK_OK(oc_nn_model_backward(m, &err), &err);
    double l0 = 0, l1 = 0;
    for (uint32_t i = 0; i < oc_nn_model_n_params(m); i++) {
        struct oc_nn_param *p = oc_nn_model_param_at(m, i);
        const float *g = nt_f(&p->grad);
        for (uint64_t k = 0; k < p->grad.n_rows * p->grad.n_cols; k++)
            *(strncmp(p->name, "layer0", 6) == 0 ? &l0 : &l1) += fabs(g[k]);
    }
    OC_CHECK(l0 == 0.0 && l1 > 0.0);
    uint32_t bad = 9;
    OC_CHECK_ERR(oc_nn_model_last_input_rows(m, &bad, 1, rows, &err), OC_ERR_ARG, &err, "row 9");
    /* the gradient norms at the last layer's input: 0 at the cached rows, the norm of the
       backward pass's rows elsewhere; none before a backward pass */
    h = (struct oc_nn_hist){1, pos, rows};
    OC_CHECK_OK(oc_nn_model_forward_hist(m, blocks, &x, &step, &h, NULL, &err), &err);
    uint32_t every[4] = {0, 1, 2, 3};
    float norms[4];
    OC_CHECK_ERR(oc_nn_model_last_input_grad_norms(m, every, 4, norms, &err), OC_ERR_ARG, &err,
                 "no last-layer input gradient");
    OC_CHECK_OK(oc_nn_model_loss(m, labels, &loss, &err), &err);
    OC_CHECK_OK(oc_nn_model_backward(m, &err), &err);
    OC_CHECK_OK(oc_nn_model_last_input_grad_norms(m, every, 4, norms, &err), &err);
    const struct oc_nn_tensor *dx = &m->layers[1].ws[OC_NN_LWS_DX];
    const float *d = nt_f(dx);
    for (uint32_t i = 0; i < 4; i++) {
        double want = 0;
        for (uint64_t c = 0; c < dx->n_cols; c++)
            want += (double)d[i * dx->n_cols + c] * d[i * dx->n_cols + c];
        OC_CHECK(fabs(norms[i] - sqrt(want)) <= 1e-6 * (1 + sqrt(want)));
    }
    OC_CHECK(norms[pos[0]] == 0.0f && norms[pos[0] == 0 ? 1 : 0] > 0.0f);
    OC_CHECK_ERR(oc_nn_model_last_input_grad_norms(m, &bad, 1, norms, &err), OC_ERR_ARG, &err,
                 "row 9");
    oc_nn_tensor_deinit(&x);
    oc_nn_model_free(m);
    nt_env_free(&env);
}

/* ---- training --------------------------------------------------------------- */

static void ot_opts(struct oc_train_opts *o, const char *strategy)
{
    oc_train_opts_default(OC_NN_MODEL_SAGE, o);
    o->fanouts[0] = 5;
    o->fanouts[1] = 5;
    o->batch_size = 64;
    o->epochs = 3;
    o->n_threads = 2;
    o->seed = 6;
    o->eval = OC_TRAIN_EVAL_SAMPLED;
    o->eval_batch_size = 256;
    o->strategy = strategy;
    o->mem_budget = strategy && strcmp(strategy, "outre") == 0 ? 40u << 20 : 0;
}

struct ot_seen {
    uint64_t pruned, candidates, pushed, admitted, max_age, epochs;
};

static void ot_on_epoch(void *ctx, const struct oc_train_epoch_stats *st)
{
    struct ot_seen *s = ctx;
    s->pruned += st->store.emb_pruned;
    s->candidates += st->store.emb_candidates;
    s->pushed += st->store.emb_pushed;
    s->admitted += st->store.emb_admitted;
    if (st->store.emb_max_age > s->max_age)
        s->max_age = st->store.emb_max_age;
    s->epochs++;
}

static int ot_train(const char *dir, struct oc_train_opts *o, struct ot_seen *seen,
                    struct oc_train_result *res)
{
    struct oc_err err;
    memset(seen, 0, sizeof(*seen));
    oc_mem_set_budget(o->mem_budget);
    int rc = oc_train_run(dir, o, ot_on_epoch, seen, NULL, res, &err);
    oc_mem_set_budget(0);
    if (rc)
        fprintf(stderr, "  train: %s\n", err.msg);
    return rc;
}

OC_TEST(staleness_zero_trains_memory_weights)
{
    const char *dir = ot_graph();
    if (!dir)
        return;
    for (int partition = 0; partition < 2; partition++) {
        struct oc_train_opts o;
        struct oc_train_result ref, res;
        struct ot_seen seen;
        struct oc_err err;
        ot_opts(&o, "memory");
        o.batching = partition ? OC_TRAIN_BATCHING_PARTITION : OC_TRAIN_BATCHING_RANDOM;
        OC_CHECK(ot_train(dir, &o, &seen, &ref) == OC_OK);
        ot_opts(&o, "outre");
        o.batching = partition ? OC_TRAIN_BATCHING_PARTITION : OC_TRAIN_BATCHING_RANDOM;
        OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 0, &err), &err);
        OC_CHECK(ot_train(dir, &o, &seen, &res) == OC_OK);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        OC_CHECK(seen.pruned == 0 && seen.pushed == 0);
    }
}

/* A batch whose seeds find no in-neighbour outside the batch (isolated nodes, batch 1) still
   has its record: outre trains through it, and with --staleness 0 to memory's weights. */
OC_TEST(a_batch_of_isolated_seeds_trains)
{
    char src[4096], dir[4096];
    FX_PATH(src, "%s/isolated-src", oc_test_tmpdir());
    FX_PATH(dir, "%s/isolated", oc_test_tmpdir());
    fx_write(src, "meta.txt", "num_nodes 12\nnum_features 4\nnum_classes 2\n");
    /* a ring over 0-8 and 10-11; node 9 has no edge */
    fx_write(src, "edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 8\n8 0\n10 11\n");
    fx_write(src, "features.txt",
             "0 0 1\n1 1 1\n2 2 1\n3 3 1\n4 0 2\n5 1 2\n6 2 2\n7 3 2\n"
             "8 0 3\n9 1 3\n10 2 3\n11 3 3\n");
    fx_write(src, "labels.txt", "0\n1\n0\n1\n0\n1\n0\n1\n0\n1\n0\n1\n");
    fx_write(src, "train_idx.txt", "9\n0\n3\n10\n");
    fx_write(src, "val_idx.txt", "1\n");
    fx_write(src, "test_idx.txt", "2\n");
    struct oc_import_opts io;
    struct oc_err err;
    oc_import_opts_default(&io);
    OC_CHECK_OK(oc_import_text(src, dir, &io, NULL, &err), &err);
    struct oc_train_result ref, res;
    struct ot_seen seen;
    struct oc_train_opts o;
    for (int stale = 0; stale < 2; stale++) {
        ot_opts(&o, "memory");
        o.batch_size = 1;
        o.fanouts[0] = o.fanouts[1] = 2;
        o.epochs = 2;
        OC_CHECK(ot_train(dir, &o, &seen, &ref) == OC_OK);
        ot_opts(&o, "outre");
        o.batch_size = 1;
        o.fanouts[0] = o.fanouts[1] = 2;
        o.epochs = 2;
        o.mem_budget = 0;
        OC_CHECK_OK(oc_train_opts_set(&o, "staleness", stale ? 100 : 0, &err), &err);
        if (stale)
            OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 1.0, &err), &err);
        OC_CHECK(ot_train(dir, &o, &seen, &res) == OC_OK);
        OC_CHECK(seen.epochs == 2);
        if (!stale)
            OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    }
}

OC_TEST(admission_takes_the_smallest_gradient_norms)
{
    float norm[8] = {0.5f, 0.1f, 0.3f, 0.3f, NAN, 0.2f, 0.3f, 0.9f};
    float scratch[8];
    uint8_t ad[8];
    /* 0.5 x 8 = 4: 0.1, 0.2 and the first two of the three 0.3s (ties by position) */
    OC_CHECK(outre_admit_select(norm, 8, 0.5, scratch, ad) == 4);
    const uint8_t want[8] = {0, 1, 1, 1, 0, 1, 0, 0};
    OC_CHECK(memcmp(ad, want, 8) == 0);
    OC_CHECK(isinf(norm[4])); /* the NaN counts as the largest */
    OC_CHECK(outre_admit_select(norm, 8, 0.0, scratch, ad) == 0);
    for (int i = 0; i < 8; i++)
        OC_CHECK(ad[i] == 0);
    OC_CHECK(outre_admit_select(norm, 8, 1.0, scratch, ad) == 8);
    for (int i = 0; i < 8; i++)
        OC_CHECK(ad[i] == 1);
    OC_CHECK(outre_admit_select(norm, 8, 0.99, scratch, ad) == 7 && ad[4] == 0); /* floor */
    OC_CHECK(outre_admit_select(norm, 0, 0.5, scratch, ad) == 0);
    /* every row with admit 1, a NaN too */
    float with_nan[3] = {0.5f, NAN, 0.1f};
    OC_CHECK(outre_admit_select(with_nan, 3, 1.0, scratch, ad) == 3);
    OC_CHECK(ad[0] == 1 && ad[1] == 1 && ad[2] == 1);
    /* floor(admit x n) where the double product falls just below the whole number */
    float many[100];
    float scratch100[100];
    uint8_t ad100[100];
    for (int i = 0; i < 100; i++)
        many[i] = (float)((i * 37) % 100);
    OC_CHECK(outre_admit_select(many, 100, 0.29, scratch100, ad100) == 29);
    uint64_t marked = 0;
    for (int i = 0; i < 100; i++) {
        marked += ad100[i];
        OC_CHECK(ad100[i] == (many[i] < 29.0f)); /* the 29 smallest: 0 .. 28 */
    }
    OC_CHECK(marked == 29);
}

/* One batch through the store's lifecycle hooks: the last hop pruned (the trainer's view
   filled), the trainer's push and norms, done. */
static void ot_step(struct oc_store *st, uint64_t g, const uint64_t *ids, uint64_t n,
                    uint64_t n_seeds, uint8_t *mask, const float *push, const float *grad)
{
    struct oc_err err;
    struct oc_store_hist h;
    memset(mask, 0, (size_t)n);
    struct oc_store_hop hop = {0, g, ids, n, n_seeds, mask, &h};
    OC_CHECK_OK(outre_hop(st, &hop, &err), &err);
    for (uint64_t k = 0; k < h.n_push; k++) {
        h.push_rows[k] = push ? push[k] : 0.0f;
        h.push_grad[k] = grad ? grad[k] : 1.0f;
    }
    outre_done(st, 0, g);
}

OC_TEST(a_push_not_admitted_empties_its_slot)
{
    struct oc_store st;
    struct outre_store o;
    struct oc_err err;
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    st.n_nodes = 10;
    st.impl = &o;
    o.staleness = 100;
    o.admit = 0.5; /* one of two pushes */
    o.n_batches = 1000;
    o.prunes = 1;
    const uint64_t cached[2] = {1, 2};
    OC_CHECK_OK(outre_emb_init(&st, &o, cached, 2, 1, &err), &err);
    uint8_t mask[3];
    const uint64_t seed_only[1] = {0};
    /* g 0: nodes 1 and 2 computed afresh; 1 has the smaller gradient: only it is taken in */
    const uint64_t a[3] = {0, 1, 2};
    const float push0[2] = {10.0f, 20.0f}, grad0[2] = {0.1f, 0.9f};
    ot_step(&st, 0, a, 3, 1, mask, push0, grad0);
    for (uint64_t g = 1; g < OUTRE_SLOTS; g++)
        ot_step(&st, g, seed_only, 1, 1, mask, NULL, NULL);
    /* g 4 sees g 0's pushes: node 1 (a seed here) is pushed anyway, node 2 was never taken
       in; now node 2 has the smaller gradient: it is taken in, node 1's slot is emptied */
    const uint64_t b[2] = {1, 2};
    const float push4[2] = {11.0f, 21.0f}, grad4[2] = {0.9f, 0.1f};
    ot_step(&st, OUTRE_SLOTS, b, 2, 1, mask, push4, grad4);
    OC_CHECK(mask[0] == 0 && mask[1] == 0); /* 2 had no embedding: not pruned */
    for (uint64_t g = OUTRE_SLOTS + 1; g < 2 * OUTRE_SLOTS; g++)
        ot_step(&st, g, seed_only, 1, 1, mask, NULL, NULL);
    /* g 8: node 2 pruned with g 4's embedding, node 1 computed afresh (its slot emptied) */
    struct oc_store_hist h;
    struct oc_store_hop hop = {0, 2 * OUTRE_SLOTS, a, 3, 1, mask, &h};
    OC_CHECK_OK(outre_hop(&st, &hop, &err), &err);
    OC_CHECK(mask[0] == 0 && mask[1] == 0 && mask[2] == 1);
    OC_CHECK(h.n_pruned == 1 && h.pruned_pos[0] == 2 && h.pruned_rows[0] == 21.0f);
    OC_CHECK(h.n_push == 1 && h.push_pos[0] == 1);
    outre_emb_free(&o);
}

OC_TEST(admission_share_is_kept_and_none_admitted_trains_memory_weights)
{
    const char *dir = ot_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result mem, a, b;
    struct ot_seen seen, all;
    struct oc_err err;
    ot_opts(&o, "memory");
    OC_CHECK(ot_train(dir, &o, &seen, &mem) == OC_OK);
    /* nothing admitted: nothing pruned, memory's weights; without a budget every candidate
       has a slot (under one, the split would give embeddings nothing and push none) */
    ot_opts(&o, "outre");
    o.mem_budget = 0;
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 0, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pushed > 0 && seen.admitted == 0 && seen.pruned == 0);
    OC_CHECK(strcmp(a.weights_sha256, mem.weights_sha256) == 0);
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 0, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pushed == 0 && seen.pruned == 0);
    OC_CHECK(strcmp(a.weights_sha256, mem.weights_sha256) == 0);
    /* all admitted, then half of each batch's pushes (rounded down): fewer pruned */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 1, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.admitted == seen.pushed && seen.pruned > 0);
    all = seen;
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 0.5, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &b) == OC_OK);
    uint64_t n_batches = 3 * (900 / 64 + 1); /* 3 epochs of the 900 training nodes */
    OC_CHECK(2 * seen.admitted <= seen.pushed && 2 * seen.admitted + 2 * n_batches >= seen.pushed);
    OC_CHECK(seen.pruned > 0 && seen.pruned < all.pruned);
    OC_CHECK(strcmp(a.weights_sha256, b.weights_sha256) != 0);
    /* out of range: refused */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 1.5, &err), &err);
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err,
                 "--admit must be a number from 0 to 1");
}

OC_TEST(embed_nodes_fixes_the_embedding_side)
{
    const char *dir = ot_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result a;
    struct ot_seen seen;
    struct oc_err err;
    /* nothing admitted: the search gives embeddings no slot (no pushes); a fixed share does */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 0, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pushed == 0);
    OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 0.5, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pushed > 0 && seen.pruned == 0);
    /* every push admitted: pruning with a fifth of the nodes, more with all of them */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 1, &err), &err);
    OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 0.2, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    uint64_t fifth = seen.pruned;
    OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 1, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(fifth > 0 && seen.pruned > fifth);
    /* refused: with the embedding cache off, and larger than the budget */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 0, &err), &err);
    OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 0.2, &err), &err);
    memset(&err, 0, sizeof(err));
    oc_mem_set_budget(o.mem_budget);
    OC_CHECK(oc_train_run(dir, &o, NULL, NULL, NULL, &a, &err) == OC_ERR_ARG);
    OC_CHECK(strstr(err.msg, "--staleness 0 turns off") != NULL);
    ot_opts(&o, "outre");
    o.hidden = 2048; /* 8 KiB embeddings: 24 MiB for every node; the store gets less */
    o.mem_budget = 57u << 20;
    OC_CHECK_OK(oc_train_opts_set(&o, "embed-nodes", 1, &err), &err);
    oc_mem_set_budget(o.mem_budget);
    memset(&err, 0, sizeof(err));
    int rc = oc_train_run(dir, &o, NULL, NULL, NULL, &a, &err);
    oc_mem_set_budget(0);
    fprintf(stderr, "  --embed-nodes 1, 8 KiB embeddings, 57 MiB: %d %s\n", rc, err.msg);
    OC_CHECK(rc == OC_ERR_BUDGET && strstr(err.msg, "--embed-nodes 1 asks for") != NULL);
}

OC_TEST(embeddings_older_than_the_staleness_are_never_used)
{
    const char *dir = ot_graph();
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result mem, a, b;
    struct ot_seen seen;
    struct oc_err err;
    ot_opts(&o, "memory");
    OC_CHECK(ot_train(dir, &o, &seen, &mem) == OC_OK);
    /* S = K: an embedding is at least K iterations old when the sampler can see it */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "staleness", OUTRE_SLOTS, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.epochs == 3 && seen.pruned == 0);
    OC_CHECK(strcmp(a.weights_sha256, mem.weights_sha256) == 0); /* so nothing changed */
    /* a tiny staleness: some are used, none older than it */
    for (uint32_t S = OUTRE_SLOTS + 1; S <= OUTRE_SLOTS + 3; S++) {
        ot_opts(&o, "outre");
        OC_CHECK_OK(oc_train_opts_set(&o, "staleness", S, &err), &err);
        OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
        fprintf(stderr, "  staleness %u: %llu of %llu candidates pruned, oldest used %llu\n", S,
                (unsigned long long)seen.pruned, (unsigned long long)seen.candidates,
                (unsigned long long)seen.max_age);
        OC_CHECK(seen.pruned > 0);
        OC_CHECK(seen.max_age < S && seen.max_age >= OUTRE_SLOTS);
        OC_CHECK(strcmp(a.weights_sha256, mem.weights_sha256) != 0); /* it changes training */
        OC_CHECK(ot_train(dir, &o, &seen, &b) == OC_OK);
        OC_CHECK(strcmp(a.weights_sha256, b.weights_sha256) == 0); /* the same, every run */
    }
    /* the default staleness (100), every push admitted: many pruned, still within it; the
       default admission (a twentieth of the pushes): fewer, some */
    ot_opts(&o, "outre");
    OC_CHECK_OK(oc_train_opts_set(&o, "admit", 1, &err), &err);
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pruned > seen.candidates / 10 && seen.max_age < 100);
    uint64_t pruned_all = seen.pruned;
    ot_opts(&o, "outre");
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    fprintf(stderr, "  defaults: %llu of %llu candidates pruned (%llu with --admit 1)\n",
            (unsigned long long)seen.pruned, (unsigned long long)seen.candidates,
            (unsigned long long)pruned_all);
    OC_CHECK(seen.pruned > 0 && seen.pruned < pruned_all && seen.max_age < 100);
    ot_opts(&o, "outre");
    o.n_layers = o.n_fanouts = 1;
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_OK);
    OC_CHECK(seen.pruned == 0 && seen.candidates == 0);
    /* options: --staleness belongs to outre, and is refused with another strategy */
    ot_opts(&o, "static");
    OC_CHECK_OK(oc_train_opts_set(&o, "staleness", 5, &err), &err);
    OC_CHECK_ERR(oc_train_opts_check(&o, &err), OC_ERR_ARG, &err, "--staleness needs");
    ot_opts(&o, "outre");
    o.reuse_samples = 1;
    OC_CHECK(ot_train(dir, &o, &seen, &a) == OC_ERR_ARG);
}

/* ---- the profile's choice of nodes -------------------------------------------- */

OC_TEST(top_ids_take_the_highest_counts_ties_to_the_lower_id)
{
    const uint32_t count[10] = {3, 0, 7, 3, 1, 9, 3, 0, 2, 7};
    struct oc_err err;
    uint64_t *ids = NULL;
    OC_CHECK_OK(outre_top_ids(count, 10, 4, &ids, &err), &err);
    const uint64_t want[4] = {0, 2, 5, 9}; /* 9, 7, 7 and the first of the 3s; ascending */
    OC_CHECK(ids && memcmp(ids, want, sizeof(want)) == 0);
    oc_free(ids);
    OC_CHECK_OK(outre_top_ids(count, 10, 100, &ids, &err), &err); /* only counted ids */
    const uint64_t every[8] = {0, 2, 3, 4, 5, 6, 8, 9};
    OC_CHECK(ids && memcmp(ids, every, sizeof(every)) == 0);
    oc_free(ids);
    OC_CHECK_OK(outre_top_ids(count, 10, 0, &ids, &err), &err);
    oc_free(ids);
}

/* ---- the feature cache under a budget ------------------------------------- */

/* Gathers every node (last first) and compares with the file; returns the rows that differ. */
static uint64_t ot_gather_all_wrong(const struct fixture *fx, struct oc_store *s)
{
    struct oc_err err;
    uint64_t n = fx->n_nodes, wrong = 0;
    uint64_t *ids = calloc(n, sizeof(uint64_t));
    float *out = calloc(n * fx->dim, sizeof(float));
    if (!ids || !out) {
        free(ids);
        free(out);
        return n;
    }
    for (uint64_t v = 0; v < n; v++)
        ids[v] = n - 1 - v;
    OC_CHECK_OK(oc_store_gather(s, ids, n, out, &err), &err);
    wrong = fixture_bad_rows(fx, ids, n, out);
    free(ids);
    free(out);
    return wrong;
}

/*
 * outre's feature cache is a giving-back cache (store/cache_yield.c, as
 * static's): a request past the budget takes rows from it, the rows stay
 * right (read from the file), and they come back once memory frees.
 */
OC_TEST(feature_cache_gives_rows_back_and_takes_them_back)
{
    struct fixture fx;
    struct oc_err err;
    if (!fixture_init(&fx, 2000, 256, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t before = oc_mem_used();
    struct oc_store_config c = fixture_config(&fx, NULL);
    c.n_epochs = 1;
    c.mem_bytes = fixture_fixed_bytes(&fx) + 2 * fx.n_nodes * sizeof(uint32_t) + (2u << 20);
    struct oc_store *s = fixture_open("outre", &c);
    if (s) {
        OC_CHECK(ot_gather_all_wrong(&fx, s) == 0); /* scratch for every row from now on */
        struct oc_store_stats st0, st;
        oc_store_stats(s, &st0);
        OC_CHECK(st0.tier_rows[OC_STORE_TIER_CPU] > 0 && st0.given_back_bytes == 0);
        uint64_t used = oc_mem_used();
        oc_mem_set_budget(used + 1000);
        void *big = oc_alloc(1000 + 100 * fx.row_bytes, "a larger batch", &err);
        OC_CHECK(big != NULL && oc_mem_used() <= used + 1000);
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes >= 100 * fx.row_bytes);
        OC_CHECK(ot_gather_all_wrong(&fx, s) == 0);
        oc_free(big);
        oc_mem_set_budget(0);
        OC_CHECK(ot_gather_all_wrong(&fx, s) == 0); /* takes every row back first */
        oc_store_stats(s, &st);
        OC_CHECK(st.given_back_bytes == 0);
    }
    oc_store_free(s);
    OC_CHECK(oc_mem_used() == before);
    fixture_free(&fx);
}

/*
 * outre over other ids than the plan's (oc_store_config.accesses: a
 * partitioned dataset's part, here the even nodes' rows by local row v / 2,
 * each plan batch gathered with its even ids): its profile samples the plan
 * on the plan's graph and counts the access map's ids, and under a budget its
 * feature cache holds some of the local rows; two epochs gathered in plan
 * order give the file's rows, some from the cache and some from disk.
 * Historical embeddings over such a store are refused, naming --staleness.
 */
OC_TEST(serves_a_store_over_other_ids_as_a_feature_cache)
{
    struct fixture fx;
    struct even_part ev;
    struct oc_err err;
    if (!fixture_init(&fx, 4000, 16, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    if (!even_part_open(&ev, &fx, 0)) {
        even_part_close(&ev);
        fixture_free(&fx);
        return;
    }
    uint64_t before = oc_mem_used();
    struct oc_store_config c = even_part_config(&fx, &ev);
    c.n_epochs = 2;
    /* the fixed part, the profile's counts and half the local rows */
    c.mem_bytes = fixture_fixed_bytes(&fx) + 2 * ev.n_local * sizeof(uint32_t) +
                  ev.n_local * fx.dim * sizeof(float) / 2;
    struct oc_store *s = fixture_open("outre", &c);
    if (s) {
        uint64_t rows = 0;
        OC_CHECK(even_part_run(&fx, &ev, s, 2, &rows) == 0);
        struct oc_store_stats st;
        oc_store_stats(s, &st);
        fprintf(stderr, "  %llu rows gathered: %llu from the cache, %llu from disk\n",
                (unsigned long long)rows, (unsigned long long)st.tier_rows[OC_STORE_TIER_CPU],
                (unsigned long long)st.tier_rows[OC_STORE_TIER_DISK]);
        OC_CHECK(rows > 0 && st.tier_rows[OC_STORE_TIER_CPU] > 0);
        OC_CHECK(st.tier_rows[OC_STORE_TIER_DISK] > 0 && st.read_bytes > 0);
        OC_CHECK(st.emb_pruned == 0 && st.emb_pushed == 0);
    }
    oc_store_free(s);
    /* its historical embeddings key on the plan's nodes: refused over other ids */
    fixture_opt(&c, "staleness", 100);
    c.embed_dim = 8;
    uint32_t idx = 0;
    s = NULL;
    OC_CHECK_OK(oc_store_strategy_find("outre", &idx, &err), &err);
    OC_CHECK_ERR(oc_store_open(idx, &c, &s, &err), OC_ERR_UNSUPPORTED, &err,
                 "store outre: --staleness 100 keeps historical embeddings of the plan's nodes");
    OC_CHECK(s == NULL);
    OC_CHECK(oc_mem_used() == before);
    even_part_close(&ev);
    fixture_free(&fx);
}

OC_TEST_MAIN()
