/*
 * store_fixture.h — helpers for the store tests: a small generated dataset
 * opened with its topology, training ids and the reference features (f32,
 * through oc_npy_load_as), a store config over it, the store layout
 * constants a test needs to pick budgets, and a stand-in for a partitioned
 * dataset's part (struct even_part: a store over other ids than the plan's).
 *
 * Place in the data flow: tests only (generate → dataset → store).
 * Thread-safety: single-threaded test code.
 * Ownership: a struct fixture owns what it loads; fixture_free releases it
 * (an even_part what it makes: even_part_close).
 */
#ifndef OFFCORE_TEST_STORE_FIXTURE_H
#define OFFCORE_TEST_STORE_FIXTURE_H

#include <string.h>

#include "harness.h"
#include "offcore/batch_pipe.h"
#include "offcore/dataset.h"
#include "offcore/generate.h"
#include "offcore/sample.h"
#include "offcore/store.h"
#include "store/store_int.h"

struct fixture {
    char dir[700];
    struct oc_dataset *ds;
    uint64_t n_nodes, dim;
    enum oc_dtype dtype;
    size_t row_bytes; /* as stored */
    uint64_t *indptr;
    void *indices;
    struct oc_graph g;
    uint64_t *train;
    uint64_t n_train;
    float *ref; /* n_nodes x dim, the file's values widened by oc_npy_load_as */
    struct oc_sample_opts so;
    uint64_t batch_size;
};

/* Generates (n nodes, dim, dtype) into a fresh directory and opens it. Returns 0 on failure. */
static inline int fixture_init(struct fixture *fx, uint64_t n, uint32_t dim, enum oc_dtype dtype)
{
    struct oc_generate_opts o;
    struct oc_err err;
    uint64_t rows, cols;
    void *ref = NULL;

    memset(fx, 0, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "%s/ds", oc_test_tmpdir());
    oc_generate_opts_default(&o);
    o.n_nodes = n;
    o.avg_degree = 8;
    o.feat_dim = dim;
    o.n_classes = 4;
    o.feat_dtype = dtype;
    o.seed = 7;
    o.n_threads = 1;
    o.train_frac = 0.3;
    OC_CHECK_OK(oc_generate(&o, fx->dir, NULL, &err), &err);
    OC_CHECK_OK(oc_dataset_open(fx->dir, OC_DS_OPEN_DEFAULT, &fx->ds, &err), &err);
    if (!fx->ds)
        return 0;
    const struct oc_manifest *m = oc_dataset_manifest(fx->ds);
    fx->n_nodes = m->n_nodes;
    fx->dim = m->feat_dim;
    fx->dtype = m->feat_dtype;
    fx->row_bytes = (size_t)fx->dim * oc_dtype_size(fx->dtype);
    OC_CHECK_OK(oc_dataset_load_indptr(fx->ds, &fx->indptr, &err), &err);
    OC_CHECK_OK(oc_dataset_load_indices(fx->ds, m->index_dtype, &fx->indices, &err), &err);
    OC_CHECK_OK(oc_dataset_load_split(fx->ds, OC_DS_TRAIN_IDX, &fx->train, &fx->n_train, &err),
                &err);
    OC_CHECK_OK(oc_npy_load_as(oc_dataset_path(fx->ds, OC_DS_FEATURES), OC_DTYPE_F32, &ref, &rows,
                               &cols, &err),
                &err);
    fx->ref = ref;
    if (!fx->indptr || !fx->indices || !fx->train || !fx->ref)
        return 0;
    OC_CHECK(rows == n && cols == dim);
    fx->g.n_nodes = fx->n_nodes;
    fx->g.indptr = fx->indptr;
    if (m->index_dtype == OC_DTYPE_U32)
        fx->g.indices32 = fx->indices;
    else
        fx->g.indices64 = fx->indices;
    fx->so.n_layers = 2;
    fx->so.fanouts[0] = 4;
    fx->so.fanouts[1] = 3;
    fx->so.seed = 11;
    fx->batch_size = 100; /* 100 x 5 x 4 rows per batch expected: budgets cover 1500-row gathers */
    return 1;
}

static inline void fixture_free(struct fixture *fx)
{
    oc_free(fx->indptr);
    oc_free(fx->indices);
    oc_free(fx->train);
    oc_free(fx->ref);
    oc_dataset_free(fx->ds);
    memset(fx, 0, sizeof(*fx));
}

/* A config with the whole training plan; mem_bytes 0 (unlimited). */
static inline struct oc_store_config fixture_config(const struct fixture *fx, struct oc_pool *pool)
{
    struct oc_store_config c;
    memset(&c, 0, sizeof(c));
    c.ds = fx->ds;
    c.graph = &fx->g;
    c.pool = pool;
    c.sample_opts = &fx->so;
    c.train_ids = fx->train;
    c.n_train = fx->n_train;
    c.batch_size = fx->batch_size;
    return c;
}

/* Fixed bytes a disk strategy reserves under fixture_config (bounce + per-row scratch). */
static inline uint64_t fixture_fixed_bytes(const struct fixture *fx)
{
    uint64_t rows = fx->batch_size;
    for (uint32_t l = 0; l < fx->so.n_layers; l++)
        rows *= 1 + (uint64_t)fx->so.fanouts[l];
    if (rows > fx->n_nodes)
        rows = fx->n_nodes;
    if (rows < STORE_MIN_READER_ROWS)
        rows = STORE_MIN_READER_ROWS;
    return STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES + 1024; /* + the impl struct */
}

/* Rows of out (n gathered rows of ids) that differ from the file's values. */
static inline uint64_t fixture_bad_rows(const struct fixture *fx, const uint64_t *ids, uint64_t n,
                                        const float *out)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        bad += memcmp(out + i * fx->dim, fx->ref + ids[i] * fx->dim, fx->dim * sizeof(float)) != 0;
    return bad;
}

/* A batch pipeline over store s with the fixture's plan. */
static inline struct oc_batch_pipe_config fixture_pipe_config(const struct fixture *fx,
                                                              struct oc_store *s, uint32_t depth)
{
    struct oc_batch_pipe_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.store = s;
    pc.graph = &fx->g;
    pc.sample = &fx->so;
    pc.train_ids = fx->train;
    pc.n_train = fx->n_train;
    pc.batch_size = fx->batch_size;
    pc.depth = depth;
    return pc;
}

/* Opens strategy `name`; NULL (and a failed check) on error. */
/*
 * Sets a strategy's option (store.h, oc_store_opt_set) in c, checking it is
 * accepted; value 0 sets it back to "not given" (which an option with min 1,
 * such as --superbatch, would refuse as a value).
 */
static inline void fixture_opt(struct oc_store_config *c, const char *name, double value)
{
    struct oc_err err;
    uint32_t strategy;
    const struct oc_store_opt *opt;
    if (value != 0) {
        OC_CHECK_OK(oc_store_opt_set(c, name, value, &err), &err);
        return;
    }
    OC_CHECK(oc_store_opt_find(name, &strategy, &opt) == OC_OK);
    for (uint32_t k = 0; k < oc_store_strategy_n_opts(strategy); k++)
        if (oc_store_strategy_opt(strategy, k) == opt)
            c->opts.v[k] = 0;
}

static inline struct oc_store *fixture_open(const char *name, const struct oc_store_config *c)
{
    struct oc_err err;
    struct oc_store *s = NULL;
    uint32_t idx = 0;
    OC_CHECK_OK(oc_store_strategy_find(name, &idx, &err), &err);
    OC_CHECK_OK(oc_store_open(idx, c, &s, &err), &err);
    return s;
}

/* ---- a store over other ids than the plan's (oc_store_config.accesses) ---------------- */

/*
 * A stand-in for a partitioned dataset's part: the even nodes' rows as a
 * features-only dataset (node v at local row v / 2), their in-degrees by
 * local row (the store's graph), and an access map over the fixture's graph
 * that asks, for a batch, for its even input ids as local rows, in order;
 * with empty_every > 0, batches whose index is empty_every - 1 modulo it
 * ask for nothing (a part no shard of that batch reads).
 */
struct even_part {
    struct oc_dataset *view;
    uint64_t n_local, *deg;
    struct oc_graph local;
    struct oc_store_accesses acc;
    uint64_t empty_every;
};

/* The map's `of` (ctx: the even_part, or NULL: no empty batches). */
static inline int even_accesses(void *ctx, const struct oc_sample_batch *b, uint64_t **ids,
                                uint64_t *cap, uint64_t *n, struct oc_err *err)
{
    const struct even_part *p = ctx;
    if (*cap < b->n_input + 1) {
        uint64_t *q = oc_realloc(*ids, (b->n_input + 1) * sizeof(uint64_t), "test: accesses", err);
        if (!q)
            return err ? err->status : OC_ERR_NOMEM;
        *ids = q;
        *cap = b->n_input + 1;
    }
    *n = 0;
    if (p && p->empty_every && b->batch_index % p->empty_every == p->empty_every - 1)
        return OC_OK;
    for (uint64_t i = 0; i < b->n_input; i++)
        if (b->input_ids[i] % 2 == 0)
            (*ids)[(*n)++] = b->input_ids[i] / 2;
    return OC_OK;
}

/* Writes TMP/even.npy and opens the part over fx (f32 fixtures); 0 on failure. */
static inline int even_part_open(struct even_part *p, const struct fixture *fx,
                                 uint64_t empty_every)
{
    struct oc_err err;
    memset(p, 0, sizeof(*p));
    p->n_local = (fx->n_nodes + 1) / 2;
    p->empty_every = empty_every;
    char path[800];
    snprintf(path, sizeof(path), "%s/even.npy", oc_test_tmpdir());
    uint64_t shape[2] = {p->n_local, fx->dim};
    struct oc_npy_writer *w = NULL;
    OC_CHECK_OK(oc_npy_writer_open(path, OC_DTYPE_F32, 2, shape, &w, &err), &err);
    for (uint64_t r = 0; w && r < p->n_local; r++)
        OC_CHECK_OK(
            oc_npy_writer_append(w, fx->ref + 2 * r * fx->dim, fx->dim * sizeof(float), &err),
            &err);
    OC_CHECK_OK(oc_npy_writer_close(w, NULL, NULL, &err), &err);
    OC_CHECK_OK(oc_dataset_open_features(oc_test_tmpdir(), path, &p->view, &err), &err);
    p->deg = calloc(p->n_local + 1, sizeof(uint64_t));
    for (uint64_t r = 0; p->deg && r < p->n_local; r++)
        p->deg[r + 1] = p->deg[r] + fx->indptr[2 * r + 1] - fx->indptr[2 * r];
    p->local = (struct oc_graph){p->n_local, p->deg, NULL, NULL, NULL};
    p->acc = (struct oc_store_accesses){&fx->g, even_accesses, p};
    return p->view && p->deg;
}

static inline void even_part_close(struct even_part *p)
{
    oc_dataset_free(p->view);
    free(p->deg);
    memset(p, 0, sizeof(*p));
}

/* A config over the part: fx's plan, p's rows and degrees, p's access map. */
static inline struct oc_store_config even_part_config(const struct fixture *fx,
                                                      const struct even_part *p)
{
    struct oc_store_config c = fixture_config(fx, NULL);
    c.ds = p->view;
    c.graph = &p->local;
    c.accesses = &p->acc;
    return c;
}

/* Rows of out (n gathered rows of the part's local rows ids) that differ from the file's. */
static inline uint64_t even_part_bad_rows(const struct fixture *fx, const uint64_t *ids, uint64_t n,
                                          const float *out)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < n; k++)
        bad += memcmp(out + k * fx->dim, fx->ref + 2 * ids[k] * fx->dim, fx->dim * 4) != 0;
    return bad;
}

/*
 * Gathers every batch of epochs [0, n_epochs) of fx's plan from s (opened over
 * p) with p's access map, in plan order, as a partitioned run's trainer does;
 * returns the rows that differ from the file's, *rows the rows gathered.
 */
static inline uint64_t even_part_run(const struct fixture *fx, const struct even_part *p,
                                     struct oc_store *s, uint32_t n_epochs, uint64_t *rows)
{
    struct oc_sample_iter it;
    struct oc_err err;
    uint64_t bad = 0, *ids = NULL, cap = 0, n = 0, cap_out = 0;
    float *out = NULL;
    *rows = 0;
    int rc = oc_sample_iter_open(&it, &fx->g, &fx->so, NULL, fx->train, fx->n_train, fx->batch_size,
                                 &err);
    OC_CHECK_OK(rc, &err);
    for (uint32_t e = 0; rc == OC_OK && e < n_epochs; e++) {
        oc_sample_iter_seek(&it, e, 0);
        for (uint64_t b = 0; rc == OC_OK; b++) {
            int got = oc_sample_iter_next(&it, &err);
            OC_CHECK(got >= 0);
            if (got <= 0)
                break;
            OC_CHECK_OK(rc = even_accesses((void *)p, &it.batch, &ids, &cap, &n, &err), &err);
            if (rc == OC_OK && n + 1 > cap_out) {
                cap_out = n + 1;
                float *q = realloc(out, cap_out * fx->dim * sizeof(float));
                OC_CHECK(q != NULL);
                if (!q)
                    break;
                out = q;
            }
            if (rc == OC_OK)
                OC_CHECK_OK(rc = oc_store_gather_batch(s, e, b, ids, n, out, &err), &err);
            if (rc == OC_OK)
                bad += even_part_bad_rows(fx, ids, n, out);
            *rows += n;
        }
    }
    oc_sample_iter_close(&it);
    free(out);
    oc_free(ids);
    return bad;
}

#endif
