/*
 * api_loader.c — the loader half of the versioned C API (offcore.h): option
 * and struct-size checks, then the train module's loader (loader.h), whose
 * pipeline batches are handed out as views (struct offcore_batch points into
 * the loader's slots and row buffers; nothing is copied).
 *
 * Place in the data flow: api (top, beside cli) over train's loader.
 * Thread-safety: one thread drives a loader (offcore.h).
 * Ownership: a struct offcore_loader owns its oc_loader and the reference
 * batch offcore_loader_sample fills; batches point into them.
 */
#include <string.h>

#include "api/api_int.h"
#include "offcore/loader.h"

struct offcore_loader {
    struct oc_loader *l;
    struct oc_sample_batch ref; /* offcore_loader_sample's batch */
    uint64_t n_nodes;
};

void offcore_loader_opts_init(struct offcore_loader_opts *o)
{
    struct oc_loader_opts d;
    oc_loader_opts_default(&d);
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->n_layers = d.n_layers;
    memcpy(o->fanouts, d.fanouts, sizeof(o->fanouts));
    o->batch_size = d.batch_size;
    o->seed = d.seed;
    o->shuffle = d.shuffle;
    o->split = OFFCORE_SPLIT_TRAIN;
    o->n_epochs = d.n_epochs;
    o->depth = d.depth;
    o->world_size = d.world_size;
}

void offcore_batch_init(struct offcore_batch *b)
{
    memset(b, 0, sizeof(*b));
    b->struct_size = sizeof(*b);
}

void offcore_stats_init(struct offcore_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->struct_size = sizeof(*s);
}

int offcore_loader_open(const struct offcore_dataset *ds, const struct offcore_loader_opts *o,
                        struct offcore_loader **out, struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!out)
        return api_err(err, &e, api_null("offcore_loader_open", "out", &e));
    *out = NULL;
    if (!ds || !o)
        return api_err(err, &e, api_null("offcore_loader_open", ds ? "o" : "ds", &e));
    int rc = api_check_size(o->struct_size, sizeof(*o), "struct offcore_loader_opts", &e);
    if (rc)
        return api_err(err, &e, rc);
    if (o->n_layers > OFFCORE_MAX_LAYERS || (unsigned)o->split > OFFCORE_SPLIT_TEST)
        return api_err(err, &e,
                       OC_ERR(&e, OC_ERR_ARG,
                              "offcore_loader_open: %u layers (at most %d) or split %d (train "
                              "0, val 1, test 2) out of range",
                              o->n_layers, OFFCORE_MAX_LAYERS, o->split));
    struct oc_loader_opts lo;
    oc_loader_opts_default(&lo);
    lo.n_layers = o->n_layers;
    memcpy(lo.fanouts, o->fanouts, sizeof(lo.fanouts));
    lo.batch_size = o->batch_size;
    lo.seed = o->seed;
    lo.shuffle = o->shuffle != 0;
    lo.split = (enum oc_loader_split)o->split;
    lo.strategy = o->strategy;
    lo.mem_budget = o->mem_budget_bytes;
    lo.n_epochs = o->n_epochs;
    lo.n_threads = o->n_threads;
    lo.depth = o->depth;
    lo.plan_dir = o->plan_dir;
    lo.store_bytes = o->store_bytes;
    lo.rank = o->rank;
    lo.world_size = o->world_size;
    struct offcore_loader *h = oc_calloc(1, sizeof(*h), "loader handle", &e);
    if (!h)
        return api_err(err, &e, e.status);
    oc_sample_batch_init(&h->ref);
    h->n_nodes = oc_dataset_manifest(ds->ds)->n_nodes;
    if ((rc = oc_loader_new(oc_dataset_dir(ds->ds), &lo, &h->l, &e))) {
        oc_free(h);
        return api_err(err, &e, rc);
    }
    *out = h;
    return OC_OK;
}

void offcore_loader_close(struct offcore_loader *l)
{
    if (!l)
        return;
    oc_loader_free(l->l);
    oc_sample_batch_deinit(&l->ref);
    oc_free(l);
}

uint64_t offcore_loader_n_batches(const struct offcore_loader *l)
{
    return l ? oc_loader_n_batches(l->l) : 0;
}

uint32_t offcore_loader_max_held(const struct offcore_loader *l)
{
    return l ? oc_loader_max_held(l->l) : 0;
}

const int32_t *offcore_loader_labels(const struct offcore_loader *l, uint64_t *n_nodes)
{
    if (n_nodes)
        *n_nodes = l ? l->n_nodes : 0;
    return l ? oc_loader_labels(l->l) : NULL;
}

int offcore_loader_epoch(struct offcore_loader *l, uint64_t e, struct offcore_error *err)
{
    struct oc_err oe = {0};
    if (!l)
        return api_err(err, &oe, api_null("offcore_loader_epoch", "l", &oe));
    return api_err(err, &oe, oc_loader_epoch(l->l, e, &oe));
}

/* Points b at sb's arrays (and the rows x, may be NULL). */
static void api_batch_fill(struct offcore_batch *b, const struct oc_sample_batch *sb,
                           const float *x, uint64_t feat_dim, void *handle)
{
    offcore_batch_init(b);
    b->n_layers = sb->n_layers;
    b->epoch = sb->epoch;
    b->index = sb->batch_index;
    b->n_seeds = sb->n_seeds;
    b->n_input = sb->n_input;
    b->feat_dim = feat_dim;
    b->input_ids = sb->input_ids;
    b->x = x;
    for (uint32_t i = 0; i < sb->n_layers; i++) {
        const struct oc_sample_block *k = &sb->blocks[i];
        b->blocks[i] =
            (struct offcore_block){k->n_src, k->n_dst, k->n_edges, k->indptr, k->indices};
    }
    b->handle = handle;
}

/* Checks b and its struct_size for fn. */
static int api_batch_arg(const struct offcore_loader *l, const struct offcore_batch *b,
                         const char *fn, struct oc_err *e)
{
    if (!l || !b)
        return api_null(fn, l ? "b" : "l", e);
    return api_check_size(b->struct_size, sizeof(*b), "struct offcore_batch", e);
}

int offcore_loader_next(struct offcore_loader *l, struct offcore_batch *b,
                        struct offcore_error *err)
{
    struct oc_err e = {0};
    int rc = api_batch_arg(l, b, "offcore_loader_next", &e);
    if (rc)
        return api_err(err, &e, rc);
    struct oc_pipe_batch *pb;
    rc = oc_loader_next(l->l, &pb, &e);
    if (rc == OC_ERR_NOTFOUND) {
        offcore_batch_init(b);
        return OFFCORE_DONE;
    }
    if (rc)
        return api_err(err, &e, rc);
    const struct oc_sample_batch *sb; /* the batch, or with world_size > 1 this rank's share */
    const float *x;
    oc_loader_view(l->l, pb, &sb, &x);
    api_batch_fill(b, sb, x, oc_loader_feat_dim(l->l), pb);
    b->epoch = pb->epoch;
    b->index = pb->index;
    return OC_OK;
}

void offcore_loader_release(struct offcore_loader *l, struct offcore_batch *b)
{
    if (!l || !b || !b->handle)
        return;
    oc_loader_done(l->l, b->handle);
    offcore_batch_init(b);
}

int offcore_loader_sample(struct offcore_loader *l, uint64_t e, uint64_t index,
                          struct offcore_batch *b, struct offcore_error *err)
{
    struct oc_err oe = {0};
    int rc = api_batch_arg(l, b, "offcore_loader_sample", &oe);
    if (rc || (rc = oc_loader_sample(l->l, e, index, &l->ref, &oe)))
        return api_err(err, &oe, rc);
    api_batch_fill(b, &l->ref, NULL, oc_loader_feat_dim(l->l), NULL);
    return OC_OK;
}

int offcore_loader_stats(const struct offcore_loader *l, struct offcore_stats *s,
                         struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!l || !s)
        return api_err(err, &e, api_null("offcore_loader_stats", l ? "s" : "l", &e));
    int rc = api_check_size(s->struct_size, sizeof(*s), "struct offcore_stats", &e);
    if (rc)
        return api_err(err, &e, rc);
    struct oc_loader_stats st;
    oc_loader_stats(l->l, &st);
    offcore_stats_init(s);
    s->n_batches_per_epoch = oc_loader_n_batches(l->l);
    s->n_sampled = st.pipe.n_sampled;
    s->n_fetched = st.pipe.n_fetched;
    s->requested_rows = st.store.requested_rows;
    s->requested_bytes = st.store.requested_bytes;
    s->requested_disk_bytes = st.store.requested_disk_bytes;
    s->read_bytes = st.store.read_bytes;
    s->n_reads = st.store.n_reads;
    s->store_held_bytes = st.store.held_bytes;
    s->mem_used_bytes = st.mem_used;
    s->mem_peak_bytes = st.mem_peak;
    s->sample_busy_s = st.pipe.sample_busy_s;
    s->fetch_busy_s = st.pipe.fetch_busy_s;
    s->wait_s = st.pipe.wait_s;
    return OC_OK;
}
