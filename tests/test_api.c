/*
 * test_api.c — the versioned C API of offcore.h: versions and status names,
 * errors as codes plus a message naming the file or option at fault (a bad
 * dataset path, a wrong struct_size, out-of-range options and epochs, an
 * unknown strategy, a rank outside world_size, too many batches held, a
 * budget too small), and the loader's batches over every strategy: equal to
 * the C sampler's for the same (seed, epoch, batch), rows equal to
 * features.npy, shuffled or not, no leak when batches are still held at
 * close.
 *
 * Place in the data flow: tests (generate → dataset → api loader → checks).
 * Thread-safety: single-threaded test; the loader's stages run threads.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "offcore.h"
#include "store_fixture.h"

/* Checks an API call's status is `want` and its message contains substr. */
#define API_CHECK_ERR(expr, want, errp, substr)                                                    \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (want) || (errp)->status != (want) || !strstr((errp)->message, (substr))) {     \
            fprintf(stderr, "  FAIL %s:%d: %s -> %d (wanted %d): %s\n", __FILE__, __LINE__, #expr, \
                    rc_, (want), (errp)->message);                                                 \
            oc_cur_failed = 1;                                                                     \
        }                                                                                          \
    } while (0)
#define API_CHECK_OK(expr, errp)                                                            \
    do {                                                                                    \
        int rc_ = (expr);                                                                   \
        if (rc_ != OFFCORE_OK) {                                                            \
            fprintf(stderr, "  FAIL %s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #expr, rc_, \
                    (errp)->message);                                                       \
            oc_cur_failed = 1;                                                              \
        }                                                                                   \
    } while (0)

static void api_fixture_opts(const struct fixture *fx, struct offcore_loader_opts *o)
{
    offcore_loader_opts_init(o);
    o->n_layers = fx->so.n_layers;
    o->fanouts[0] = fx->so.fanouts[0];
    o->fanouts[1] = fx->so.fanouts[1];
    o->seed = fx->so.seed;
    o->batch_size = 64;
    o->n_epochs = 2;
    o->n_threads = 2;
}

OC_TEST(versions_and_status_names)
{
    OC_CHECK(strcmp(offcore_version(), OFFCORE_VERSION) == 0);
    OC_CHECK(offcore_api_version() == OFFCORE_API_VERSION);
    OC_CHECK(strcmp(offcore_status_name(OFFCORE_ERR_ARG), "OFFCORE_ERR_ARG") == 0);
    OC_CHECK(strcmp(offcore_status_name(OFFCORE_DONE), "OFFCORE_DONE") == 0);
    OC_CHECK(strcmp(offcore_status_name(-99), "unknown status") == 0);
    OC_CHECK(strcmp(offcore_status_name(INT_MIN), "unknown status") == 0);
    OC_CHECK(offcore_n_strategies() >= 7 && strcmp(offcore_strategy_name(0), "memory") == 0);
    OC_CHECK(offcore_strategy_name(offcore_n_strategies()) == NULL);
}

OC_TEST(bad_paths_and_sizes_name_the_problem)
{
    struct offcore_error err;
    struct offcore_dataset *ds = (void *)1;
    char path[700];
    snprintf(path, sizeof(path), "%s/no-such-dataset", oc_test_tmpdir());
    OC_CHECK(offcore_dataset_open(path, &ds, &err) < 0 && ds == NULL);
    OC_CHECK(strstr(err.message, "no-such-dataset") != NULL);
    API_CHECK_ERR(offcore_dataset_open(NULL, &ds, &err), OFFCORE_ERR_ARG, &err, "dir is NULL");

    struct fixture fx;
    if (!fixture_init(&fx, 1500, 16, OC_DTYPE_F32))
        return;
    API_CHECK_OK(offcore_dataset_open(fx.dir, &ds, &err), &err);
    struct offcore_dataset_info info;
    offcore_dataset_info_init(&info);
    API_CHECK_OK(offcore_dataset_info(ds, &info, &err), &err);
    OC_CHECK(info.n_nodes == 1500 && info.feat_dim == 16 && info.n_classes == 4);
    OC_CHECK(info.n_train == fx.n_train && info.feat_bytes == 4);
    info.struct_size = 8;
    API_CHECK_ERR(offcore_dataset_info(ds, &info, &err), OFFCORE_ERR_ARG, &err, "struct_size");
    uint64_t ids[8];
    API_CHECK_ERR(offcore_dataset_split(ds, 0, ids, 8, &err), OFFCORE_ERR_ARG, &err,
                  "the output holds 8");
    API_CHECK_ERR(offcore_dataset_split(ds, 3, ids, 8, &err), OFFCORE_ERR_ARG, &err, "split 3");

    struct offcore_loader_opts o;
    struct offcore_loader *l = (void *)1;
    api_fixture_opts(&fx, &o);
    o.struct_size -= 8;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err,
                  "struct offcore_loader_opts");
    OC_CHECK(l == NULL);
    api_fixture_opts(&fx, &o);
    o.strategy = "nosuch";
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err, "nosuch");
    OC_CHECK(strstr(err.message, "memory") != NULL); /* the known names are listed */
    api_fixture_opts(&fx, &o);
    o.n_layers = 9;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err, "9 layers");
    api_fixture_opts(&fx, &o);
    o.fanouts[1] = 0;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err, "fanout 0");
    api_fixture_opts(&fx, &o);
    o.batch_size = 0;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err, "batch size");
    api_fixture_opts(&fx, &o);
    o.mem_budget_bytes = oc_mem_used() + (200u << 10); /* the topology fits, batches not */
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_BUDGET, &err, "is too small");
    api_fixture_opts(&fx, &o);
    o.shuffle = 0;
    o.strategy = "diskgnn"; /* samples its own shuffled batches */
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_UNSUPPORTED, &err, "shuffle");
    api_fixture_opts(&fx, &o);
    o.rank = 2;
    o.world_size = 2;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err,
                  "rank 2 of world_size 2");
    o.rank = 0;
    o.world_size = 0;
    API_CHECK_ERR(offcore_loader_open(ds, &o, &l, &err), OFFCORE_ERR_ARG, &err,
                  "world_size must be at least 1");

    api_fixture_opts(&fx, &o);
    API_CHECK_OK(offcore_loader_open(ds, &o, &l, &err), &err);
    struct offcore_batch b[4];
    for (int i = 0; i < 4; i++)
        offcore_batch_init(&b[i]);
    API_CHECK_ERR(offcore_loader_next(l, &b[0], &err), OFFCORE_ERR_ARG, &err, "no epoch");
    API_CHECK_ERR(offcore_loader_epoch(l, 1, &err), OFFCORE_ERR_ARG, &err, "in order");
    API_CHECK_OK(offcore_loader_epoch(l, 0, &err), &err);
    uint32_t held = offcore_loader_max_held(l);
    OC_CHECK(held >= 1 && held < 3);
    for (uint32_t i = 0; i <= held; i++)
        API_CHECK_OK(offcore_loader_next(l, &b[i], &err), &err);
    API_CHECK_ERR(offcore_loader_next(l, &b[held + 1], &err), OFFCORE_ERR_ARG, &err, "release one");
    API_CHECK_ERR(offcore_loader_epoch(l, 1, &err), OFFCORE_ERR_ARG, &err, "held");
    API_CHECK_ERR(offcore_loader_sample(l, 0, 1000, &b[3], &err), OFFCORE_ERR_ARG, &err,
                  "out of range");
    b[3].struct_size = 4;
    API_CHECK_ERR(offcore_loader_next(l, &b[3], &err), OFFCORE_ERR_ARG, &err, "struct_size");
    struct offcore_batch copy = b[0];
    offcore_loader_release(l, &b[0]);
    OC_CHECK(b[0].handle == NULL && b[0].x == NULL);
    /* a copy of a released batch released again: ignored (the loader's count stays right) */
    offcore_loader_release(l, &copy);
    API_CHECK_OK(offcore_loader_next(l, &b[0], &err), &err);
    offcore_batch_init(&b[3]);
    API_CHECK_ERR(offcore_loader_next(l, &b[3], &err), OFFCORE_ERR_ARG, &err, "release one");
    offcore_loader_release(l, &b[0]);
    struct offcore_stats st;
    offcore_stats_init(&st);
    API_CHECK_OK(offcore_loader_stats(l, &st, &err), &err);
    OC_CHECK(st.n_fetched >= held + 1 && st.requested_rows > 0);
    /* epoch 1 after a partly taken epoch 0 (the rest is skipped), then past the end */
    for (uint32_t i = 1; i <= held; i++)
        offcore_loader_release(l, &b[i]);
    API_CHECK_OK(offcore_loader_epoch(l, 1, &err), &err);
    API_CHECK_OK(offcore_loader_next(l, &b[0], &err), &err);
    OC_CHECK(b[0].epoch == 1 && b[0].index == 0);
    API_CHECK_ERR(offcore_loader_epoch(l, 2, &err), OFFCORE_ERR_ARG, &err, "2 the loader");
    offcore_loader_close(l); /* with b[0] still held: freed, no leak */
    offcore_dataset_close(ds);
    fixture_free(&fx);
}

/* Every batch of two epochs of `strategy` equals the sampler's; returns the rows that differ. */
static uint64_t api_run_strategy(const struct fixture *fx, struct offcore_dataset *ds,
                                 const char *strategy, int shuffle, uint64_t budget)
{
    struct offcore_error err;
    struct oc_err oerr;
    struct offcore_loader_opts o;
    struct offcore_loader *l = NULL;
    struct oc_sampler *sm = NULL;
    struct oc_sample_epoch ep;
    struct oc_sample_batch want;
    uint64_t bad = 0;
    memset(&ep, 0, sizeof(ep));
    oc_sample_batch_init(&want);
    api_fixture_opts(fx, &o);
    o.strategy = strategy;
    o.shuffle = shuffle;
    o.mem_budget_bytes = budget;
    API_CHECK_OK(offcore_loader_open(ds, &o, &l, &err), &err);
    OC_CHECK_OK(oc_sample_sampler_new(&fx->g, &fx->so, NULL, &sm, &oerr), &oerr);
    OC_CHECK_OK(oc_sample_epoch_init(&ep, fx->train, fx->n_train, 64, 0, &oerr), &oerr);
    if (!l || !sm)
        goto out;
    uint64_t nb = offcore_loader_n_batches(l), n_labels;
    OC_CHECK(nb == (fx->n_train + 63) / 64);
    OC_CHECK(offcore_loader_labels(l, &n_labels) != NULL && n_labels == fx->n_nodes);
    for (uint64_t e = 0; e < 2; e++) {
        API_CHECK_OK(offcore_loader_epoch(l, e, &err), &err);
        if (shuffle)
            oc_sample_epoch_shuffle(&ep, fx->so.seed, e);
        struct offcore_batch b, r;
        offcore_batch_init(&b);
        offcore_batch_init(&r);
        uint64_t n = 0;
        int rc;
        while ((rc = offcore_loader_next(l, &b, &err)) == OFFCORE_OK) {
            const uint64_t *seeds;
            uint64_t n_seeds;
            OC_CHECK(b.epoch == e && b.feat_dim == fx->dim);
            OC_CHECK_OK(oc_sample_epoch_batch(&ep, b.index, &seeds, &n_seeds, &oerr), &oerr);
            OC_CHECK_OK(oc_sample_neighbors(sm, e, b.index, seeds, n_seeds, &want, &oerr), &oerr);
            int same = b.n_layers == want.n_layers && b.n_input == want.n_input &&
                       b.n_seeds == want.n_seeds &&
                       memcmp(b.input_ids, want.input_ids, b.n_input * 8) == 0;
            for (uint32_t k = 0; same && k < b.n_layers; k++) {
                const struct offcore_block *x = &b.blocks[k];
                const struct oc_sample_block *y = &want.blocks[k];
                same = x->n_src == y->n_src && x->n_dst == y->n_dst && x->n_edges == y->n_edges &&
                       memcmp(x->indptr, y->indptr, (x->n_dst + 1) * 8) == 0 &&
                       memcmp(x->indices, y->indices, x->n_edges * 4) == 0;
            }
            OC_CHECK(same);
            /* the API's own reference sampler agrees too */
            API_CHECK_OK(offcore_loader_sample(l, e, b.index, &r, &err), &err);
            OC_CHECK(r.n_input == b.n_input && r.x == NULL &&
                     memcmp(r.input_ids, b.input_ids, b.n_input * 8) == 0);
            for (uint64_t i = 0; i < b.n_input; i++)
                bad += memcmp(b.x + i * fx->dim, fx->ref + b.input_ids[i] * fx->dim,
                              fx->dim * sizeof(float)) != 0;
            offcore_loader_release(l, &b);
            n++;
        }
        OC_CHECK(rc == OFFCORE_DONE && n == nb);
    }
out:
    offcore_loader_close(l);
    oc_sample_batch_deinit(&want);
    if (ep.orig)
        oc_sample_epoch_deinit(&ep);
    oc_sample_sampler_free(sm);
    return bad;
}

OC_TEST(every_strategy_gives_the_samplers_batches_and_the_files_rows)
{
    struct fixture fx;
    struct offcore_error err;
    struct offcore_dataset *ds = NULL;
    if (!fixture_init(&fx, 3000, 48, OC_DTYPE_F32))
        return;
    uint64_t live = oc_mem_n_live();
    API_CHECK_OK(offcore_dataset_open(fx.dir, &ds, &err), &err);
    for (uint32_t i = 0; ds && i < offcore_n_strategies(); i++) {
        const char *name = offcore_strategy_name(i);
        uint64_t bad = api_run_strategy(&fx, ds, name, 1, 0);
        if (bad)
            fprintf(stderr, "strategy %s: %" PRIu64 " rows differ\n", name, bad);
        OC_CHECK(bad == 0);
    }
    OC_CHECK(api_run_strategy(&fx, ds, "memory", 0, 0) == 0);        /* seeds in file order */
    OC_CHECK(api_run_strategy(&fx, ds, "static", 1, 8u << 20) == 0); /* under a budget */
    oc_mem_set_budget(0);
    offcore_dataset_close(ds);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/*
 * Rank r of 3 gets, for every batch, seeds [B r / 3, B (r+1) / 3) of the
 * global batch (the loader's own reference sampler) with their rows; two
 * shares held at once and given back out of order keep their contents.
 */
OC_TEST(each_rank_gets_its_share_of_the_global_batches)
{
    struct fixture fx;
    struct offcore_error err;
    struct offcore_dataset *ds = NULL;
    if (!fixture_init(&fx, 3000, 48, OC_DTYPE_F32))
        return;
    uint64_t live = oc_mem_n_live(), bad = 0;
    API_CHECK_OK(offcore_dataset_open(fx.dir, &ds, &err), &err);
    for (uint32_t rank = 0; ds && rank < 3; rank++) {
        struct offcore_loader_opts o;
        struct offcore_loader *l = NULL;
        api_fixture_opts(&fx, &o);
        o.rank = rank;
        o.world_size = 3;
        API_CHECK_OK(offcore_loader_open(ds, &o, &l, &err), &err);
        if (!l)
            break;
        OC_CHECK(offcore_loader_max_held(l) >= 1);
        API_CHECK_OK(offcore_loader_epoch(l, 0, &err), &err);
        struct offcore_batch b[2], r;
        offcore_batch_init(&b[0]);
        offcore_batch_init(&b[1]);
        offcore_batch_init(&r);
        uint64_t n = 0, seeds = 0;
        int rc;
        while ((rc = offcore_loader_next(l, &b[n % 2], &err)) == OFFCORE_OK) {
            for (uint64_t k = n ? n - 1 : n; k <= n; k++) { /* this share and the one held */
                const struct offcore_batch *s = &b[k % 2];
                API_CHECK_OK(offcore_loader_sample(l, 0, s->index, &r, &err), &err);
                uint64_t lo = r.n_seeds * rank / 3, hi = r.n_seeds * (rank + 1) / 3;
                bad += s->n_seeds != hi - lo || s->blocks[s->n_layers - 1].n_dst != s->n_seeds ||
                       s->blocks[0].n_src != s->n_input ||
                       memcmp(s->input_ids, r.input_ids + lo, s->n_seeds * 8) != 0;
                for (uint64_t i = 0; i < s->n_input; i++)
                    bad += memcmp(s->x + i * fx.dim, fx.ref + s->input_ids[i] * fx.dim,
                                  fx.dim * sizeof(float)) != 0;
            }
            seeds += b[n % 2].n_seeds;
            if (n) /* the older share goes back first, the newer stays held */
                offcore_loader_release(l, &b[(n - 1) % 2]);
            n++;
        }
        OC_CHECK(rc == OFFCORE_DONE && n == offcore_loader_n_batches(l));
        OC_CHECK(seeds > 0 && seeds < fx.n_train);
        offcore_loader_close(l);
    }
    OC_CHECK(bad == 0);
    oc_mem_set_budget(0);
    offcore_dataset_close(ds);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

OC_TEST_MAIN()
