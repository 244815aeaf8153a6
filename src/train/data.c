/*
 * data.c — what training holds in RAM besides features: topology as an
 * oc_graph view, labels, splits, whole-graph out-degrees; and the gather of a
 * batch's input rows (from a host matrix or a feature store) into the
 * model's input tensor.
 *
 * Place in the data flow: dataset ──► train (this) ──► sample / nn.
 * Thread-safety: loading is single-threaded; the gather splits rows over the
 * pool in fixed ranges (each task writes only its own rows).
 * Ownership: struct train_data owns every array it holds.
 */
#include <inttypes.h>
#include <string.h>

#include "offcore/io.h"
#include "train/train_int.h"

/*
 * Whole-graph out-degrees (self-edges excluded) by one sequential pass over
 * indices.npy in 1 MiB pieces, for disk topology where indices are not in RAM.
 */
static int out_degrees_from_file(struct train_data *d, const uint64_t *indptr, struct oc_err *err)
{
    const char *path = oc_dataset_path(d->ds, OC_DS_INDICES);
    size_t isz = oc_dtype_size(oc_dataset_manifest(d->ds)->index_dtype);
    uint64_t off0 = oc_dataset_data_offset(d->ds, OC_DS_INDICES);
    struct oc_file *f = NULL;
    int rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc)
        return rc;
    const uint64_t chunk = (1u << 20) / isz;
    uint8_t *buf = oc_alloc(chunk * isz, "out-degree scan", err);
    if (!buf) {
        oc_file_close(f, NULL);
        return err->status;
    }
    uint64_t v = 0, n_edges = indptr[d->n_nodes];
    for (uint64_t e0 = 0; e0 < n_edges && rc == OC_OK; e0 += chunk) {
        uint64_t n = n_edges - e0 < chunk ? n_edges - e0 : chunk;
        rc = oc_file_pread(f, buf, n * isz, off0 + e0 * isz, err);
        for (uint64_t i = 0; i < n && rc == OC_OK; i++) {
            uint64_t e = e0 + i, u;
            while (indptr[v + 1] <= e)
                v++;
            if (isz == 4) {
                uint32_t u32;
                memcpy(&u32, buf + i * 4, 4);
                u = u32;
            } else {
                memcpy(&u, buf + i * 8, 8);
            }
            if (u != v)
                d->out_deg[u]++;
        }
    }
    oc_free(buf);
    oc_file_close(f, NULL);
    return rc;
}

/* What the on-disk topology holds in RAM, at info level (its share of --mem-budget). */
static void log_topo_cache(const struct oc_topo_disk *t)
{
    struct oc_topo_disk_info in;
    oc_sample_topo_disk_info(t, &in);
    char a[32], b[32], c[32];
    oc_format_size(in.indptr_bytes + in.table_bytes + in.cache_bytes, a, sizeof(a));
    oc_format_size(in.cache_bytes, b, sizeof(b));
    oc_format_size(in.n_edges * in.index_bytes, c, sizeof(c));
    if (in.n_cached_edges == in.n_edges)
        oc_log(OC_LOG_INFO,
               "topology: every neighbor list cached (%s: indptr and %s of lists; --topo-cache)", a,
               b);
    else
        oc_log(OC_LOG_INFO,
               "topology: neighbor cache of %" PRIu64 " of %" PRIu64 " lists (%s: indptr, table "
               "and %s of the %s of lists; --topo-cache); the rest read from indices.npy",
               in.n_cached_nodes, in.n_nodes, a, b, c);
}

int train_data_load(const char *dir, const struct oc_topo_disk_opts *topo_opts,
                    const char *strategy, int out_degrees, struct train_data *d, struct oc_err *err)
{
    return train_data_load_dim(dir, topo_opts, strategy, 0, out_degrees, d, err);
}

/* Whole-graph out-degrees of an in-memory topology (self-edges excluded). */
static void out_degrees_from_memory(struct train_data *d)
{
    for (uint64_t v = 0; v < d->n_nodes; v++)
        for (uint64_t e = d->indptr[v]; e < d->indptr[v + 1]; e++) {
            uint64_t u = d->graph.indices32 ? d->graph.indices32[e] : d->graph.indices64[e];
            if (u != v)
                d->out_deg[u]++;
        }
}

int train_data_load_dim(const char *dir, const struct oc_topo_disk_opts *topo_opts,
                        const char *strategy, uint64_t feat_dim, int out_degrees,
                        struct train_data *d, struct oc_err *err)
{
    memset(d, 0, sizeof(*d));
    /* features.npy is checked by the store that reads it whole anyway (oc_store_open): one
       read, not two; for the others here, before any budget holds. A topology held in RAM
       is checked as it is loaded (one read). */
    unsigned flags = oc_store_strategy_checks_features(strategy) ? OC_DS_OPEN_DEFER_FEATURE_CRC : 0;
    if (!topo_opts)
        flags |= OC_DS_OPEN_DEFER_TOPOLOGY;
    int rc = oc_dataset_open(dir, flags, &d->ds, err);
    if (rc)
        return rc;
    const struct oc_manifest *m = oc_dataset_manifest(d->ds);
    d->n_nodes = m->n_nodes;
    d->feat_dim = feat_dim ? feat_dim : m->feat_dim;
    d->n_classes = m->n_classes;
    if (d->feat_dim == 0) {
        rc = OC_ERR(err, OC_ERR_ARG,
                    "%s: dataset has no node features (topology and labels only); training needs "
                    "features",
                    dir);
        goto fail;
    }
    if (m->n_classes < 2) {
        rc = OC_ERR(err, OC_ERR_ARG, "%s: dataset has %u classes; training needs at least 2", dir,
                    m->n_classes);
        goto fail;
    }
    if (topo_opts) {
        if ((rc = oc_sample_topo_disk_new(d->ds, topo_opts, &d->topo, err)))
            goto fail;
        oc_sample_topo_disk_graph(d->topo, &d->graph);
        d->indptr = NULL;
        log_topo_cache(d->topo);
    } else {
        if ((rc = oc_dataset_load_topology(d->ds, &d->indptr, &d->indices, err)))
            goto fail;
        d->graph.n_nodes = d->n_nodes;
        d->graph.indptr = d->indptr;
        if (m->index_dtype == OC_DTYPE_U32)
            d->graph.indices32 = d->indices;
        else
            d->graph.indices64 = d->indices;
    }
    if ((rc = oc_dataset_load_labels(d->ds, &d->labels, err)))
        goto fail;
    static const enum oc_ds_file split_files[TRAIN_SPLIT_COUNT] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX,
                                                                   OC_DS_TEST_IDX};
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        if ((rc = oc_dataset_load_split(d->ds, split_files[s], &d->split[s], &d->n_split[s], err)))
            goto fail;
    if (d->n_split[TRAIN_SPLIT_TRAIN] == 0) {
        rc = OC_ERR(err, OC_ERR_ARG, "%s: the training split is empty", dir);
        goto fail;
    }
    for (uint64_t v = 0; v < d->n_nodes; v++)
        if (d->graph.indptr[v + 1] - d->graph.indptr[v] > d->max_in_deg)
            d->max_in_deg = d->graph.indptr[v + 1] - d->graph.indptr[v];
    if (!out_degrees)
        return OC_OK;
    d->out_deg = oc_calloc(d->n_nodes, sizeof(uint64_t), "out-degrees", err);
    if (!d->out_deg) {
        rc = err->status;
        goto fail;
    }
    if (d->topo && (rc = out_degrees_from_file(d, d->graph.indptr, err)))
        goto fail;
    if (!d->topo)
        out_degrees_from_memory(d);
    return OC_OK;
fail:
    train_data_deinit(d);
    return rc;
}

void train_data_deinit(struct train_data *d)
{
    oc_free(d->indptr);
    oc_free(d->indices);
    oc_free(d->labels);
    for (int s = 0; s < TRAIN_SPLIT_COUNT; s++)
        oc_free(d->split[s]);
    oc_free(d->out_deg);
    oc_sample_topo_disk_free(d->topo);
    oc_dataset_free(d->ds);
    memset(d, 0, sizeof(*d));
}

struct gather_job {
    float *dst;
    const float *src;
    uint64_t dim;
    const uint64_t *ids;
    uint64_t n, chunk;
};

static int gather_task(void *ctx, uint64_t t, unsigned worker)
{
    (void)worker;
    struct gather_job *j = ctx;
    uint64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
    size_t row_bytes = j->dim * sizeof(float);
    for (uint64_t i = lo; i < hi; i++)
        memcpy(j->dst + i * j->dim, j->src + j->ids[i] * j->dim, row_bytes);
    return OC_OK;
}

int train_gather_reserve(struct train_gather *g, uint64_t n, uint64_t dim, struct oc_err *err)
{
    /* exact: the budget was planned for the largest batch; grown with oc_realloc, as the buffer
       may be one the batch pipeline lent (see pipeline.h) */
    return oc_grow_by(&g->buf, &g->cap_floats, n * dim, sizeof(float), OC_GROW_EXACT,
                      "gathered input features", err);
}

int train_gather_rows(struct train_gather *g, const float *src, uint64_t dim, const uint64_t *ids,
                      uint64_t n, struct oc_pool *pool, struct oc_nn_backend *be,
                      struct oc_nn_tensor *x, struct oc_err *err)
{
    int rc = train_gather_reserve(g, n, dim, err);
    if (rc)
        return rc;
    struct gather_job j = {g->buf, src, dim, ids, n, 1024};
    uint64_t n_tasks = (n + j.chunk - 1) / j.chunk;
    rc = oc_pool_run(pool, n_tasks, gather_task, &j);
    if (rc)
        return OC_ERR(err, rc, "feature gather failed");
    return oc_nn_tensor_wrap(be, OC_NN_F32, g->buf, n, dim, x, err);
}

int train_gather_store(struct train_gather *g, struct oc_store *store, const uint64_t *epoch_batch,
                       uint64_t dim, const uint64_t *ids, uint64_t n, struct oc_nn_backend *be,
                       struct oc_nn_tensor *x, struct oc_err *err)
{
    int rc = train_gather_reserve(g, n, dim, err);
    if (rc == OC_OK && epoch_batch)
        rc = oc_store_gather_batch(store, epoch_batch[0], epoch_batch[1], ids, n, g->buf, err);
    else if (rc == OC_OK)
        rc = oc_store_gather(store, ids, n, g->buf, err);
    if (rc == OC_OK)
        rc = oc_nn_tensor_wrap(be, OC_NN_F32, g->buf, n, dim, x, err);
    return rc;
}

void train_gather_deinit(struct train_gather *g)
{
    oc_free(g->buf);
    g->buf = NULL;
    g->cap_floats = 0;
}

void train_blocks_from_batch(const struct oc_sample_batch *b, const uint64_t *src_out_deg,
                             struct oc_nn_block *blocks)
{
    for (uint32_t l = 0; l < b->n_layers; l++) {
        blocks[l].n_src = b->blocks[l].n_src;
        blocks[l].n_dst = b->blocks[l].n_dst;
        blocks[l].indptr = b->blocks[l].indptr;
        blocks[l].indices = b->blocks[l].indices;
        blocks[l].src_out_deg = src_out_deg; /* sources of every block prefix input_ids */
    }
}

int train_src_degrees(const struct oc_sample_batch *b, const uint64_t *out_deg,
                      struct train_degrees *deg, struct oc_err *err)
{
    if (!out_deg) { /* not loaded: the model does not read them (not GCN), none ever taken */
        OC_ASSERT(deg->deg == NULL && deg->cap == 0);
        return OC_OK;
    }
    int rc = oc_grow_by(&deg->deg, &deg->cap, b->n_input, sizeof(uint64_t), OC_GROW_EXACT,
                        "batch degrees", err);
    if (rc)
        return rc;
    for (uint64_t k = 0; k < b->n_input; k++)
        deg->deg[k] = out_deg[b->input_ids[k]];
    return OC_OK;
}

int train_labels_of(struct train_labels *out, const int32_t *labels, const uint64_t *seeds,
                    uint64_t n, struct oc_err *err)
{
    int rc =
        oc_grow_by(&out->labels, &out->cap, n, sizeof(int32_t), OC_GROW_EXACT, "batch labels", err);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < n; i++)
        out->labels[i] = labels[seeds[i]];
    return OC_OK;
}
