/*
 * test_kg_train.c — extraction, ranking and kg-train: the toy KG's two
 * layers by hand (RED-GNN's progressive propagation), the same layers from
 * the on-disk fact graph with its reads counted; the filtered rank with ties
 * by hand; on a generated KG every layer's entities sorted per query; and on WN18RR_v1 (../shared) a small kg-train configuration giving
 * the same weights_sha256 at 1 and 2 threads and with facts on disk, a
 * run stopped after one epoch and resumed matching the uninterrupted run, and
 * the reference's loss scale acting as the L2 penalty divided by the batch.
 */
#include <string.h>

#include "harness.h"
#include "kg_fixture.h"
#include "offcore/rng.h"
#include "offcore/thread.h"

static char toy_out[700]; /* the toy KG's directory */

static struct oc_kg *toy_kg(void)
{
    const char *root = oc_test_tmpdir();
    const char *src = kgfx_toy_split(root, "x\tr2\ty\ny\tr1\tz\n");
    char *out = toy_out;
    snprintf(out, sizeof(toy_out), "%s/out", root);
    struct oc_err err;
    struct oc_kg *kg = NULL;
    if (oc_kg_import_grail(src, out, NULL, &err) != OC_OK || oc_kg_open(out, &kg, &err) != OC_OK)
        fprintf(stderr, "toy kg: %s\n", err.msg);
    return kg;
}

static void check_toy_layers(enum oc_kg_facts_where where)
{
    struct oc_kg *kg = toy_kg();
    OC_CHECK(kg != NULL);
    if (!kg)
        return;
    struct oc_err err;
    struct oc_pool *pool = NULL;
    struct oc_kg_facts *facts = NULL;
    struct oc_kg_extractor *x = NULL;
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    OC_CHECK_OK(oc_kg_facts_open(kg, OC_KG_TRAIN, where, &facts, &err), &err);
    OC_CHECK_OK(oc_kg_extractor_new(facts, 2, pool, &x, &err), &err);
    struct oc_kg_layer ly[2];
    const uint32_t heads[2] = {0, 2}; /* a, c */
    OC_CHECK_OK(oc_kg_extract(x, heads, 2, ly, &err), &err);
    /* layer 0: a reaches a (identity), b (r1), c (r1 inverse); c reaches a (r1), b (r2 inv), c */
    static const uint64_t ip0[7] = {0, 1, 2, 3, 4, 5, 6};
    static const uint32_t src0[6] = {0, 0, 0, 1, 1, 1}, rel0[6] = {4, 0, 2, 0, 3, 4};
    static const uint32_t q0[6] = {0, 0, 0, 1, 1, 1}, p2n0[2] = {0, 5};
    static const uint32_t ent[6] = {0, 1, 2, 0, 1, 2};
    OC_CHECK(ly[0].n_prev == 2 && ly[0].n_nodes == 6 && ly[0].n_edges == 6);
    OC_CHECK(memcmp(ly[0].indptr, ip0, sizeof(ip0)) == 0);
    OC_CHECK(memcmp(ly[0].src, src0, sizeof(src0)) == 0);
    OC_CHECK(memcmp(ly[0].rel, rel0, sizeof(rel0)) == 0);
    OC_CHECK(memcmp(ly[0].query, q0, sizeof(q0)) == 0);
    OC_CHECK(memcmp(ly[0].prev_to_node, p2n0, sizeof(p2n0)) == 0);
    OC_CHECK(memcmp(ly[0].node_entity, ent, sizeof(ent)) == 0);
    /* layer 1: every fact of a, b, c per query; into a: from a (identity), b (r1 inv), c (r1) */
    OC_CHECK(ly[1].n_prev == 6 && ly[1].n_nodes == 6 && ly[1].n_edges == 18);
    static const uint32_t src_a[3] = {0, 1, 2}, rel_a[3] = {4, 2, 0};
    OC_CHECK(ly[1].indptr[1] == 3 && memcmp(ly[1].src, src_a, sizeof(src_a)) == 0 &&
             memcmp(ly[1].rel, rel_a, sizeof(rel_a)) == 0);
    OC_CHECK(ly[1].src[9] == 3 && ly[1].query[9] == 1 && ly[1].prev_to_node[4] == 4);
    OC_CHECK(oc_kg_extractor_n_edges(x) == 24);
    struct oc_kg_facts_stats st;
    oc_kg_facts_stats(facts, &st);
    if (where == OC_KG_FACTS_DISK)
        OC_CHECK(st.n_reads > 0 && st.bytes_read >= st.bytes_requested &&
                 st.bytes_requested == 24 * 8); /* 2 x (3 + 9) facts, rel + tail */
    else
        OC_CHECK(st.n_reads == 0 && st.bytes_read == 0);
    const uint32_t bad[1] = {7};
    OC_CHECK_ERR(oc_kg_extract(x, bad, 1, ly, &err), OC_ERR_ARG, &err, "head 7 out of range");
    if (where == OC_KG_FACTS_DISK) {
        /* the tail file changed under the open graph: a's identity fact (its last, the third)
           now leads to b, so a is not among the nodes it reaches: an error, not a stale index */
        char path[800];
        snprintf(path, sizeof(path), "%s/train_tail.npy", toy_out);
        FILE *f = fopen(path, "r+b");
        const uint32_t b = 1;
        OC_CHECK(f && fseek(f, OC_NPY_HEADER_BYTES + 2 * 4, SEEK_SET) == 0 &&
                 fwrite(&b, 4, 1, f) == 1);
        if (f)
            fclose(f);
        OC_CHECK_ERR(oc_kg_extract(x, heads, 1, ly, &err), OC_ERR_FORMAT, &err,
                     "entity 0 has no identity fact");
    }
    oc_kg_extractor_free(x);
    oc_kg_facts_free(facts);
    oc_pool_free(pool);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(kg_extract_toy_by_hand)
{
    check_toy_layers(OC_KG_FACTS_MEMORY);
}

OC_TEST(kg_extract_toy_from_disk)
{
    check_toy_layers(OC_KG_FACTS_DISK);
}

/*
 * On a generated KG whose layers hold hundreds of entities per query (the
 * extractor radix-sorts them), every query's nodes of every layer are its
 * entities in strictly ascending order, each edge lands on a node of its own
 * query, and the facts in RAM and on disk give the same layers.
 */
OC_TEST(kg_extract_layers_sorted_on_a_generated_kg)
{
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/gen-sorted", oc_test_tmpdir());
    struct oc_kg_gen_opts g;
    oc_kg_gen_opts_default(&g);
    g.n_entities = 3000;
    g.n_triples = 60000;
    g.n_relations = 8;
    g.n_queries = 10;
    g.seed = 11;
    struct oc_err err;
    struct oc_kg *kg = NULL;
    struct oc_pool *pool = NULL;
    OC_CHECK_OK(oc_kg_generate(dir, &g, NULL, &err), &err);
    OC_CHECK_OK(oc_kg_open(dir, &kg, &err), &err);
    OC_CHECK_OK(oc_pool_new(2, &pool, &err), &err);
    const uint32_t heads[4] = {0, 17, 1234, 2999};
    uint64_t sum_mem = 0, sum_disk = 0, big = 0;
    for (int where = 0; kg && where < 2; where++) {
        struct oc_kg_facts *facts = NULL;
        struct oc_kg_extractor *x = NULL;
        OC_CHECK_OK(oc_kg_facts_open(kg, OC_KG_TRAIN, where ? OC_KG_FACTS_DISK : OC_KG_FACTS_MEMORY,
                                     &facts, &err),
                    &err);
        OC_CHECK_OK(oc_kg_extractor_new(facts, 2, pool, &x, &err), &err);
        struct oc_kg_layer ly[2];
        OC_CHECK_OK(oc_kg_extract(x, heads, 4, ly, &err), &err);
        uint64_t sum = 0;
        for (int l = 0; l < 2; l++) {
            for (uint64_t i = 0; i < ly[l].n_nodes; i++) {
                if (i > 0 && ly[l].node_query[i] == ly[l].node_query[i - 1])
                    OC_CHECK(ly[l].node_entity[i] > ly[l].node_entity[i - 1]);
                for (uint64_t e = ly[l].indptr[i]; e < ly[l].indptr[i + 1]; e++)
                    OC_CHECK(ly[l].query[e] == ly[l].node_query[i]);
                sum = sum * 31 + ly[l].node_entity[i];
            }
            OC_CHECK(ly[l].indptr[ly[l].n_nodes] == ly[l].n_edges);
            big = ly[l].n_nodes > big ? ly[l].n_nodes : big;
        }
        *(where ? &sum_disk : &sum_mem) = sum;
        /* trimmed, it holds less and extracts the same layers again */
        uint64_t before = oc_mem_used();
        oc_kg_extractor_trim(x);
        OC_CHECK(oc_mem_used() < before);
        OC_CHECK_OK(oc_kg_extract(x, heads, 4, ly, &err), &err);
        uint64_t again = 0;
        for (int l = 0; l < 2; l++)
            for (uint64_t i = 0; i < ly[l].n_nodes; i++)
                again = again * 31 + ly[l].node_entity[i];
        OC_CHECK(again == sum);
        oc_kg_extractor_trim(x);
        oc_kg_extractor_trim(x); /* twice: nothing left to free */
        oc_kg_extractor_free(x);
        oc_kg_facts_free(facts);
    }
    OC_CHECK(big > 4 * 64); /* the radix sort ran, not only the insertion sort */
    OC_CHECK(sum_mem == sum_disk);
    oc_pool_free(pool);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(kg_rank_filtered_with_ties)
{
    struct oc_err err;
    const uint32_t t[6] = {7, 0, 0, 7, 0, 1}; /* (7, r0, 0), (7, r0, 1) */
    const uint32_t *sets[1] = {t};
    uint64_t ns[1] = {2};
    struct oc_kg_filter f;
    OC_CHECK_OK(oc_kg_filter_build(sets, ns, 1, 3, &f, &err), &err);
    const float s[8] = {0.5f, 0.9f, 0.5f, 0.1f, 0.9f, 0, 0, 0};
    struct oc_kg_metrics m = {0, 0, 0, 0};
    const uint32_t ans[1] = {0};
    OC_CHECK_OK(oc_kg_rank(s, 8, 7, 0, ans, 1, &f, &m, &err), &err);
    /* 2 higher (1 is a filtered true tail), 1 tie: rank 1 + 1 + 0.5 */
    OC_CHECK(m.n_ranked == 1 && m.sum_rr == 1.0 / 2.5 && m.n_hits1 == 0 && m.n_hits10 == 1);
    /* the inverse query (0, r0 + 3, 7) is filtered too */
    const uint32_t inv[1] = {7};
    const float s2[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    OC_CHECK_OK(oc_kg_rank(s2, 8, 0, 3, inv, 1, &f, &m, &err), &err);
    OC_CHECK(m.n_ranked == 2 && m.n_hits1 == 1);
    oc_kg_filter_deinit(&f);
    struct oc_kg_qset qs;
    const uint32_t q[9] = {1, 0, 2, 1, 0, 3, 2, 1, 1};
    OC_CHECK_OK(oc_kg_qset_build(q, 3, 3, &qs, &err), &err);
    /* (1,0)->{2,3}, (2,1)->{1}, inverses (1,4)->{2}, (2,3)->{1}, (3,3)->{1} */
    OC_CHECK(qs.n == 5 && qs.head[0] == 1 && qs.rel[0] == 0 && qs.ans_ptr[1] == 2);
    OC_CHECK(qs.head[1] == 1 && qs.rel[1] == 4 && qs.ans[2] == 2);
    oc_kg_qset_deinit(&qs);
    OC_CHECK(oc_mem_n_live() == 0);
}

/*
 * kg-train ranks from the reached entities only: on random queries (ties, 0
 * and -0 scores, negative scores, answers and filtered tails reached or not)
 * its counts equal the dense ranking's, so the metrics are the same bits.
 */
OC_TEST(kg_rank_reached_equals_the_dense_ranking)
{
    struct oc_err err;
    enum { N_ENT = 40, N_REL = 3 };
    const float levels[6] = {-1.0f, -0.25f, -0.0f, 0.0f, 0.5f, 2.0f};
    struct oc_rng rng;
    oc_rng_init(&rng, 11, 0, 0, 0);
    for (int round = 0; round < 300; round++) {
        uint32_t t[3 * 24];
        for (int i = 0; i < 24; i++) {
            t[3 * i] = oc_rng_u32(&rng) % 4; /* few heads: some with many true tails */
            t[3 * i + 1] = oc_rng_u32(&rng) % N_REL;
            t[3 * i + 2] = oc_rng_u32(&rng) % N_ENT;
        }
        const uint32_t *sets[1] = {t};
        uint64_t ns[1] = {24};
        struct oc_kg_filter f;
        OC_CHECK_OK(oc_kg_filter_build(sets, ns, 1, N_REL, &f, &err), &err);
        float dense[N_ENT] = {0}, score[N_ENT];
        uint32_t ent[N_ENT];
        uint64_t n = 0, keep = oc_rng_u32(&rng) % 4; /* reached: none .. nearly all */
        for (uint32_t e = 0; e < N_ENT; e++) {
            if (oc_rng_u32(&rng) % 4 >= keep)
                continue;
            ent[n] = e;
            score[n] = levels[oc_rng_u32(&rng) % 6];
            dense[e] = score[n++];
        }
        uint32_t head = t[0], rel = t[1], ans[5];
        for (int i = 0; i < 5; i++)
            ans[i] = i < 2 ? t[3 * i + 2] : oc_rng_u32(&rng) % N_ENT;
        struct oc_kg_metrics a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
        OC_CHECK_OK(oc_kg_rank(dense, N_ENT, head, rel, ans, 5, &f, &a, &err), &err);
        OC_CHECK_OK(oc_kg_rank_reached(ent, score, n, N_ENT, head, rel, ans, 5, &f, &b, &err),
                    &err);
        OC_CHECK(a.sum_rr == b.sum_rr && a.n_ranked == b.n_ranked && a.n_hits1 == b.n_hits1 &&
                 a.n_hits10 == b.n_hits10);
        oc_kg_filter_deinit(&f);
    }
    /* bad input: an answer out of range; reached entities out of order */
    struct oc_kg_filter f;
    const uint32_t t1[3] = {0, 0, 1};
    const uint32_t *sets[1] = {t1};
    uint64_t ns[1] = {1};
    OC_CHECK_OK(oc_kg_filter_build(sets, ns, 1, 1, &f, &err), &err);
    struct oc_kg_metrics m = {0, 0, 0, 0};
    const uint32_t ent[2] = {3, 2}, far[1] = {9};
    const float sc[2] = {1, 2};
    OC_CHECK(oc_kg_rank_reached(ent, sc, 1, 4, 0, 0, far, 1, &f, &m, &err) == OC_ERR_ARG);
    OC_CHECK(strstr(err.msg, "answer 9 out of range") != NULL);
    OC_CHECK(oc_kg_rank_reached(ent, sc, 2, 4, 0, 0, ent, 1, &f, &m, &err) == OC_ERR_INTERNAL);
    OC_CHECK(strstr(err.msg, "out of order") != NULL);
    OC_CHECK(m.n_ranked == 0);
    oc_kg_filter_deinit(&f);
    OC_CHECK(oc_mem_n_live() == 0);
}

static void small_opts(struct oc_kg_train_opts *o)
{
    oc_kg_train_opts_default(o);
    o->n_layers = 2;
    o->hidden = 8;
    o->attn_dim = 3;
    o->batch = 100;
    o->eval_batch = 128;
    o->epochs = 1;
    o->seed = 5;
}

OC_TEST(kg_train_same_weights_threads_and_disk)
{
    const char *dir = kgfx_grail("WN18RR_v1");
    if (!dir)
        OC_SKIP("../shared not found");
    char sha[3][65];
    double mrr[3];
    for (int k = 0; k < 3; k++) {
        struct oc_kg_train_opts o;
        small_opts(&o);
        o.threads = k == 0 ? 1 : 2;
        o.facts = k == 2 ? OC_KG_FACTS_DISK : OC_KG_FACTS_MEMORY;
        struct oc_kg_train_result res;
        struct oc_err err;
        OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &res, &err), &err);
        memcpy(sha[k], res.weights_sha256, 65);
        mrr[k] = res.test_at_best.mrr;
    }
    OC_CHECK(strcmp(sha[0], sha[1]) == 0 && strcmp(sha[0], sha[2]) == 0);
    OC_CHECK(mrr[0] == mrr[1] && mrr[0] == mrr[2] && mrr[0] > 0.0);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(kg_train_resume_matches_straight_run)
{
    const char *dir = kgfx_grail("WN18RR_v1");
    if (!dir)
        OC_SKIP("../shared not found");
    struct oc_err err;
    struct oc_kg_train_opts o;
    small_opts(&o);
    o.epochs = 2;
    o.threads = 2;
    struct oc_kg_train_result straight, part, resumed;
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &straight, &err), &err);
    char ckpt[700], log[800];
    const char *tmp = oc_test_tmpdir();
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
    snprintf(log, sizeof(log), "%s/log.jsonl", tmp);
    o.checkpoint_dir = ckpt;
    o.log_path = log;
    o.epochs = 1;
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &part, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &resumed, &err), &err);
    /* the log keeps epoch 0's line, drops the first run's final line, adds epoch 1 and a final */
    char *text = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(log, 0, &text, &len, &err), &err);
    int lines = 0;
    for (size_t i = 0; text && i < len; i++)
        lines += text[i] == '\n';
    OC_CHECK(lines == 3 && text && strstr(text, "\"epoch\":1") && strstr(text, "\"final\":true"));
    oc_free(text);
    OC_CHECK(strcmp(straight.weights_sha256, resumed.weights_sha256) == 0);
    OC_CHECK(straight.best_epoch == resumed.best_epoch &&
             straight.test_at_best.mrr == resumed.test_at_best.mrr &&
             straight.test_at_best.hits10 == resumed.test_at_best.hits10);
    OC_CHECK(strcmp(part.weights_sha256, straight.weights_sha256) != 0);
    /* different options are refused */
    o.hidden = 16;
    OC_CHECK_ERR(oc_kg_train_run(dir, &o, NULL, NULL, &resumed, &err), OC_ERR_ARG, &err,
                 "different options");
    OC_CHECK(oc_mem_n_live() == 0);
}

/* One layer trains (the default --hops concerns tiger only); a checkpoint of one toy split is
   refused on a split that differs only in the queries that pick the best epoch. */
OC_TEST(kg_train_one_layer_and_resume_checks_every_array)
{
    const char *tmp = oc_test_tmpdir();
    char root[600], out[2][800], ckpt[800];
    struct oc_err err;
    for (int k = 0; k < 2; k++) {
        snprintf(root, sizeof(root), "%.500s/split%d", tmp, k);
        const char *src = kgfx_toy_split(root, "x\tr2\ty\ny\tr1\tz\nz\tr1\tx\n");
        if (k == 1) /* the training graph's test.txt: validation, which picks the best epoch */
            fx_write(root, "toy_v1/test.txt", "c\tr1\ta\n");
        snprintf(out[k], sizeof(out[k]), "%s/kg", root);
        OC_CHECK_OK(oc_kg_import_grail(src, out[k], NULL, &err), &err);
    }
    struct oc_kg_train_opts o;
    small_opts(&o);
    o.n_layers = 1;
    o.batch = 2;
    struct oc_kg_train_result res;
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
    o.checkpoint_dir = ckpt;
    OC_CHECK_OK(oc_kg_train_run(out[0], &o, NULL, NULL, &res, &err), &err);
    o.epochs = 2;
    o.resume = 1;
    OC_CHECK_ERR(oc_kg_train_run(out[1], &o, NULL, NULL, &res, &err), OC_ERR_ARG, &err,
                 "different options or data");
    OC_CHECK_OK(oc_kg_train_run(out[0], &o, NULL, NULL, &res, &err), &err);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* Weights after one small epoch with the loss scale and weight decay given. */
static void train_sha(const char *dir, enum oc_kg_loss_scale ls, double wd, char sha[65])
{
    struct oc_kg_train_opts o;
    small_opts(&o);
    o.batch = 20; /* 1260 training queries: every batch full */
    o.threads = 2;
    o.loss_scale = ls;
    o.weight_decay = wd;
    struct oc_kg_train_result res;
    struct oc_err err;
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &res, &err), &err);
    memcpy(sha, res.weights_sha256, 65);
}

OC_TEST(kg_train_loss_scale_is_l2_over_batch)
{
    const char *dir = kgfx_grail("WN18RR_v1");
    if (!dir)
        OC_SKIP("../shared not found");
    char batch[65], sum[65], sum_scaled[65], batch0[65], sum0[65];
    train_sha(dir, OC_KG_LOSS_BATCH, 1e-3, batch);
    train_sha(dir, OC_KG_LOSS_SUM, 1e-3, sum);
    train_sha(dir, OC_KG_LOSS_SUM, 1e-3 / 20, sum_scaled);
    train_sha(dir, OC_KG_LOSS_BATCH, 0.0, batch0);
    train_sha(dir, OC_KG_LOSS_SUM, 0.0, sum0);
    OC_CHECK(strcmp(batch, sum) != 0);
    OC_CHECK(strcmp(batch, sum_scaled) == 0);
    OC_CHECK(strcmp(batch0, sum0) == 0);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST_MAIN()
