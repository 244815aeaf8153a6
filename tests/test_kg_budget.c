/*
 * test_kg_budget.c — kg-train under --mem-budget: what a run needs is
 * measured before the first step. In process: the model's workspace grown
 * once to the largest batches (oc_nn_redgnn_reserve) takes no byte more on
 * any real batch and leaves the weights as they were. Through the real
 * binary (children with a timeout): on a generated KG, `--dry-run` prints the
 * smallest --mem-budget that fits and writes nothing, a smaller budget is
 * refused before the first epoch naming that budget, and that budget trains
 * to the weights of an unbudgeted run; on the GraIL split WN18RR_v1 of
 * ../shared at its preset (skipped without ../shared), --mem-budget 64M (the
 * issue's failure mid-epoch) is refused up front and the budget it names
 * trains an epoch.
 *
 * Place in the data flow: tests (kg + nn in process; cli → kg in children).
 * Thread-safety: single-threaded test code; children are other processes.
 * Ownership: outputs live under the test's temporary directory.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "offcore/kg.h"
#include "offcore/nn.h"
#include "offcore/thread.h"
#include "proc_util.h"

/* ---- in process: the reserved workspace ------------------------------------ */

struct rfx {
    struct oc_kg *kg;
    struct oc_kg_facts *facts;
    struct oc_pool *pool;
    struct oc_kg_extractor *x;
    uint32_t *heads, *rels;
    uint64_t n_q;
};

static const char *gen_kg(const char *name, uint64_t entities, uint64_t triples)
{
    static char dir[4][900];
    static int k;
    char *d = dir[k++ % 4];
    snprintf(d, sizeof(dir[0]), "%s/%s", oc_test_tmpdir(), name);
    struct oc_kg_gen_opts g;
    oc_kg_gen_opts_default(&g);
    g.n_entities = entities;
    g.n_triples = triples;
    g.n_relations = 8;
    g.n_queries = 40;
    g.seed = 3;
    struct oc_err err;
    OC_CHECK_OK(oc_kg_generate(d, &g, NULL, &err), &err);
    return d;
}

/* One batch of queries [b0, b0 + n) through the model: forward, loss, backward. */
static int step(struct rfx *f, struct oc_nn_redgnn *m, uint32_t L, uint64_t b0, uint32_t n,
                int training, struct oc_err *err)
{
    struct oc_kg_layer layers[OC_KG_MAX_LAYERS];
    struct oc_nn_rel_block blocks[OC_KG_MAX_LAYERS];
    const uint32_t *p2n[OC_KG_MAX_LAYERS];
    int rc = oc_kg_extract(f->x, f->heads + b0, n, layers, err);
    if (rc)
        return rc;
    uint64_t n_rel = 2 * (uint64_t)oc_kg_manifest(f->kg)->n_relations + 1;
    for (uint32_t l = 0; l < L; l++) {
        const struct oc_kg_layer *k = &layers[l];
        blocks[l] = (struct oc_nn_rel_block){k->n_prev, k->n_nodes, k->n_edges, n_rel,   n,
                                             k->indptr, k->src,     k->rel,     k->query};
        p2n[l] = k->prev_to_node;
    }
    struct oc_nn_redgnn_batch b = {n, f->rels + b0, blocks, p2n};
    struct oc_nn_step st = {training, 0, b0};
    const float *scores;
    if ((rc = oc_nn_redgnn_forward(m, &b, &st, &scores, err)) || !training)
        return rc;
    const struct oc_kg_layer *top = &layers[L - 1];
    uint64_t qptr[65] = {0};
    int64_t ans[64];
    for (uint64_t i = 0; i < top->n_nodes; i++)
        qptr[top->node_query[i] + 1]++;
    for (uint32_t q = 0; q < n; q++) {
        qptr[q + 1] += qptr[q];
        ans[q] = qptr[q + 1] > qptr[q] ? (int64_t)qptr[q] : -1;
    }
    double loss;
    if ((rc = oc_nn_redgnn_loss(m, qptr, ans, oc_kg_manifest(f->kg)->graph[0].n_entities, &loss,
                                err)))
        return rc;
    return oc_nn_redgnn_backward(m, err);
}

OC_TEST(reserved_workspace_takes_no_more_on_any_batch)
{
    const char *dir = gen_kg("reserve-kg", 3000, 20000);
    struct oc_err err;
    struct rfx f;
    memset(&f, 0, sizeof(f));
    OC_CHECK_OK(oc_kg_open(dir, &f.kg, &err), &err);
    OC_CHECK_OK(oc_kg_facts_open(f.kg, OC_KG_TRAIN, OC_KG_FACTS_MEMORY, &f.facts, &err), &err);
    OC_CHECK_OK(oc_pool_new(2, &f.pool, &err), &err);
    const uint32_t L = 3, B = 16;
    OC_CHECK_OK(oc_kg_extractor_new(f.facts, L, f.pool, &f.x, &err), &err);
    uint32_t *q = NULL;
    OC_CHECK_OK(oc_kg_load_queries(f.kg, OC_KG_TRAIN, OC_KG_VALID, &q, &f.n_q, &err), &err);
    f.heads = malloc(f.n_q * 4);
    f.rels = malloc(f.n_q * 4);
    for (uint64_t i = 0; i < f.n_q; i++) {
        f.heads[i] = q[3 * i];
        f.rels[i] = q[3 * i + 1];
    }
    oc_free(q);
    struct oc_nn_backend *be = NULL;
    OC_CHECK_OK(oc_nn_backend_new(OC_NN_BACKEND_CPU, f.pool, &be, &err), &err);
    uint64_t n_rel = 2 * (uint64_t)oc_kg_manifest(f.kg)->n_relations + 1;
    struct oc_nn_redgnn_config cfg = {L, 8, 3, n_rel, OC_NN_REDGNN_RELU, 0.2f, 5};
    struct oc_nn_redgnn *m = NULL, *fresh = NULL;
    OC_CHECK_OK(oc_nn_redgnn_new(be, &cfg, &m, &err), &err);
    OC_CHECK_OK(oc_nn_redgnn_new(be, &cfg, &fresh, &err), &err);
    /* the shapes: training batches of B, evaluation batches of 2B (forward only) */
    struct oc_nn_redgnn_shape train, eval;
    memset(&train, 0, sizeof(train));
    memset(&eval, 0, sizeof(eval));
    struct oc_kg_layer layers[OC_KG_MAX_LAYERS];
    for (int pass = 0; pass < 2; pass++) {
        uint32_t bs = pass ? 2 * B : B;
        struct oc_nn_redgnn_shape *s = pass ? &eval : &train;
        for (uint64_t b0 = 0; b0 < f.n_q; b0 += bs) {
            uint32_t n = (uint32_t)(f.n_q - b0 < bs ? f.n_q - b0 : bs);
            OC_CHECK_OK(oc_kg_extract(f.x, f.heads + b0, n, layers, &err), &err);
            s->n_query = n > s->n_query ? n : s->n_query;
            for (uint32_t l = 0; l < L; l++) {
                if (layers[l].n_nodes > s->n_nodes[l])
                    s->n_nodes[l] = layers[l].n_nodes;
                if (layers[l].n_edges > s->n_edges[l])
                    s->n_edges[l] = layers[l].n_edges;
            }
        }
    }
    uint64_t before = oc_mem_used();
    OC_CHECK_OK(oc_nn_redgnn_reserve(m, &eval, &train, &err), &err);
    OC_CHECK(oc_mem_used() > before);
    /* every real batch, training and evaluation, in a different order: not a byte more */
    uint64_t held = oc_mem_used();
    oc_mem_reset_peak();
    for (int pass = 1; pass >= 0; pass--) {
        uint32_t bs = pass ? 2 * B : B;
        for (uint64_t b0 = 0; b0 < f.n_q; b0 += bs) {
            uint32_t n = (uint32_t)(f.n_q - b0 < bs ? f.n_q - b0 : bs);
            OC_CHECK_OK(step(&f, m, L, b0, n, !pass, &err), &err);
        }
    }
    OC_CHECK(oc_mem_used() == held);
    OC_CHECK(oc_mem_peak() == held);
    /* a shape without nodes is refused */
    struct oc_nn_redgnn_shape bad = train;
    bad.n_nodes[1] = 0;
    OC_CHECK(oc_nn_redgnn_reserve(m, &eval, &bad, &err) == OC_ERR_ARG);
    OC_CHECK(strstr(err.msg, "layer 1"));
    /* the weights are as without reserving: the same scores on the same batch */
    OC_CHECK_OK(oc_nn_redgnn_reserve(fresh, &eval, &train, &err), &err);
    struct oc_nn_redgnn *plain = NULL;
    OC_CHECK_OK(oc_nn_redgnn_new(be, &cfg, &plain, &err), &err);
    uint8_t d1[32], d2[32];
    OC_CHECK_OK(oc_nn_model_params_sha256(oc_nn_redgnn_model(fresh), d1, &err), &err);
    OC_CHECK_OK(oc_nn_model_params_sha256(oc_nn_redgnn_model(plain), d2, &err), &err);
    OC_CHECK(memcmp(d1, d2, 32) == 0);
    oc_nn_redgnn_free(plain);
    oc_nn_redgnn_free(fresh);
    oc_nn_redgnn_free(m);
    oc_nn_backend_free(be);
    free(f.heads);
    free(f.rels);
    oc_kg_extractor_free(f.x);
    oc_pool_free(f.pool);
    oc_kg_facts_free(f.facts);
    oc_kg_free(f.kg);
}

/* ---- through the real binary ----------------------------------------------- */

/* The N of "smallest ... is [--mem-budget ]NM" in text, or 0. */
static unsigned long long smallest_of(const char *text)
{
    const char *p = text ? strstr(text, "the smallest") : NULL;
    if (!p)
        return 0;
    const char *is = strstr(p, " is ");
    if (!is)
        return 0;
    is += 4;
    if (strncmp(is, "--mem-budget ", 13) == 0)
        is += 13;
    char *end = NULL;
    unsigned long long n = strtoull(is, &end, 10);
    return end && *end == 'M' ? n : 0;
}

static void sha_of(const char *out, char sha[65])
{
    const char *p = out ? strstr(out, "weights_sha256 ") : NULL;
    sha[0] = 0;
    if (p)
        snprintf(sha, 65, "%.64s", p + 15);
}

static int n_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n++;
    closedir(d);
    return n;
}

static void show(const struct proc_run *r)
{
    fprintf(stderr, "  exit %d\n  stdout: %s\n  stderr: %s\n", r->code, r->out ? r->out : "",
            r->err ? r->err : "");
}

OC_TEST(generated_kg_refused_below_the_smallest_budget_which_trains)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[900], log[900], ck[900];
    snprintf(ds, sizeof(ds), "%s/gen-kg", oc_test_tmpdir());
    snprintf(log, sizeof(log), "%s/dry.jsonl", oc_test_tmpdir());
    snprintf(ck, sizeof(ck), "%s/dry-ck", oc_test_tmpdir());
    struct proc_run r;
    const char *gen[] = {"generate-kg", ds,   "--entities", "4000", "--triples", "40000",
                         "--relations", "10", "--queries",  "60",   "--quiet",   NULL};
    proc_run_cli(gen, 120, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    int files = n_entries(ds);
    /* --dry-run: the smallest budget, nothing written (no log, no checkpoint, no plan/) */
    const char *dry[] = {
        "kg-train", ds,          "--layers", "3",         "--hidden", "16", "--batch",
        "20",       "--threads", "2",        "--dry-run", "--log",    log,  "--checkpoint",
        ck,         "--extract", "tiger",    NULL};
    proc_run_cli(dry, 300, &r);
    OC_CHECK(r.code == 0);
    unsigned long long need = smallest_of(r.out);
    OC_CHECK(need > 0);
    OC_CHECK(r.out && strstr(r.out, "dry run:") && !strstr(r.out, "Epoch"));
    if (r.code != 0 || !need)
        show(&r);
    proc_run_free(&r);
    OC_CHECK(!oc_path_exists(log) && !oc_path_exists(ck));
    OC_CHECK(n_entries(ds) == files);
    /* basic extraction from here on */
    char small[32], at[32], above[32];
    snprintf(small, sizeof(small), "%lluM", need > 2 ? need / 2 : 1);
    snprintf(at, sizeof(at), "%lluM", need);
    snprintf(above, sizeof(above), "%lluM", need + 64);
    const char *dry_basic[] = {"kg-train", ds,   "--layers",  "3", "--hidden",  "16",
                               "--batch",  "20", "--threads", "2", "--dry-run", "--mem-budget",
                               above,      NULL};
    proc_run_cli(dry_basic, 300, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(r.out && strstr(r.out, "fits"));
    unsigned long long need_basic = smallest_of(r.out);
    OC_CHECK(need_basic > 0 && need_basic <= need);
    proc_run_free(&r);
    snprintf(at, sizeof(at), "%lluM", need_basic);
    snprintf(small, sizeof(small), "%lluM", need_basic - 1);
    /* one MiB less: refused before the first epoch (no epoch line, no log), naming the budget */
    const char *refused[] = {"kg-train", ds,   "--layers",     "3",   "--hidden", "16",
                             "--batch",  "20", "--threads",    "2",   "--epochs", "2",
                             "--log",    log,  "--mem-budget", small, NULL};
    proc_run_cli(refused, 300, &r);
    OC_CHECK(r.code == 1);
    OC_CHECK(smallest_of(r.err) == need_basic);
    OC_CHECK(r.err && strstr(r.err, "too small") && strstr(r.err, "workspace"));
    OC_CHECK(!r.out || !strstr(r.out, "Epoch"));
    OC_CHECK(!oc_path_exists(log));
    if (r.code != 1)
        show(&r);
    proc_run_free(&r);
    /* exactly that budget: trains, and to the weights of a run without a budget */
    char sha[2][65];
    const char *fits[] = {"kg-train",  ds,  "--layers", "3", "--hidden",     "16", "--batch", "20",
                          "--threads", "2", "--epochs", "2", "--mem-budget", at,   NULL};
    proc_run_cli(fits, 600, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(r.out && strstr(r.out, "Epoch 00001"));
    if (r.code != 0)
        show(&r);
    sha_of(r.out, sha[0]);
    proc_run_free(&r);
    const char *free_run[] = {"kg-train",  ds,  "--layers", "3", "--hidden", "16", "--batch", "20",
                              "--threads", "2", "--epochs", "2", NULL};
    proc_run_cli(free_run, 600, &r);
    OC_CHECK(r.code == 0);
    sha_of(r.out, sha[1]);
    proc_run_free(&r);
    OC_CHECK(sha[0][0] && strcmp(sha[0], sha[1]) == 0);
}

OC_TEST(grail_split_at_its_preset_refused_up_front_then_trains)
{
    const char *shared = oc_test_shared();
    if (!shared)
        OC_SKIP("../shared not found: the GraIL split WN18RR_v1 is not here");
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char src[900], ds[900];
    snprintf(src, sizeof(src), "%s/datasets/kg-inductive/WN18RR_v1", shared);
    snprintf(ds, sizeof(ds), "%s/WN18RR_v1", oc_test_tmpdir());
    struct proc_run r;
    const char *imp[] = {"import", "kg", src, ds, "--quiet", NULL};
    proc_run_cli(imp, 120, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    /* the budget: it failed in the first batches; now refused before them */
    const char *low[] = {"kg-train",     ds,    "--epochs", "1", "--threads", "2",
                         "--mem-budget", "64M", NULL};
    proc_run_cli(low, 300, &r);
    OC_CHECK(r.code == 1);
    unsigned long long need = smallest_of(r.err);
    OC_CHECK(need > 64);
    OC_CHECK(r.err && strstr(r.err, "--mem-budget 64.00 MiB is too small"));
    OC_CHECK(!r.out || !strstr(r.out, "Epoch"));
    if (r.code != 1 || !need)
        show(&r);
    proc_run_free(&r);
    /* --dry-run names the same budget */
    const char *dry[] = {"kg-train", ds, "--threads", "2", "--dry-run", NULL};
    proc_run_cli(dry, 300, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(smallest_of(r.out) == need);
    proc_run_free(&r);
    /* that budget trains an epoch (with evaluation) without a memory failure */
    char at[32];
    snprintf(at, sizeof(at), "%lluM", need);
    const char *fits[] = {"kg-train",     ds, "--epochs", "1", "--threads", "2",
                          "--mem-budget", at, NULL};
    proc_run_cli(fits, 1200, &r);
    OC_CHECK(r.code == 0);
    OC_CHECK(r.out && strstr(r.out, "Epoch 00000") && strstr(r.out, "weights_sha256"));
    if (r.code != 0)
        show(&r);
    proc_run_free(&r);
}

OC_TEST_MAIN()
