/*
 * order.c — feature layouts: an order of the nodes in which rows read
 * together sit on the same pages (`offcore layout --order`). The result is
 * row_of[v], the row of the rewritten features.npy that holds node v's
 * features (docs/FORMAT.md, feature_rows.npy).
 *
 *   degree     in-degree descending, ties by id: the rows every cache keeps
 *              and every batch reads (hubs) packed at the file's start
 *   bfs        breadth-first from the hubs: each start node (in degree
 *              order) not yet placed begins a search; neighbours follow
 *              their first discoverer, so a node's sampled neighbourhood is
 *              a few runs of rows
 *   partition  METIS parts of about part_nodes nodes (plan/partition.c,
 *              kept under the plan directory), part by part, in id order
 *              inside a part
 *   lpa        communities by label propagation (Raghavan et al. 2007):
 *              LPA_ROUNDS passes in id order, each node taking the label
 *              most of its neighbours carry (ties: its own, else the
 *              smallest) among labels held by fewer than 4 x part_nodes
 *              nodes, so no label swallows the graph; then label by label.
 *              Linear passes: it scales where METIS's workspace does not
 *
 * Place in the data flow: plan; the CLI's `layout` hands row_of to
 * dataset's oc_dataset_relayout. Reads the topology in memory only.
 * Thread-safety: pure over its arguments.
 * Ownership: row_of is the caller's; scratch (8 bytes per node besides
 * row_of, the partition's map) is freed before return.
 */
#include <inttypes.h>
#include <string.h>

#include "plan/plan_int.h"

#define LOCALITY_PAGES 16u /* oc_plan_order_locality: ends within 64 KiB, one merged read */

static const char *const order_names[OC_PLAN_ORDER_COUNT] = {"degree", "bfs", "partition", "lpa"};

const char *oc_plan_order_name(int order)
{
    return order >= 0 && order < OC_PLAN_ORDER_COUNT ? order_names[order] : "?";
}

int oc_plan_order_from_name(const char *name, int *order)
{
    for (int k = 0; k < OC_PLAN_ORDER_COUNT; k++)
        if (strcmp(name, order_names[k]) == 0) {
            *order = k;
            return OC_OK;
        }
    return OC_ERR_ARG;
}

static uint64_t neighbor(const struct oc_graph *g, uint64_t e)
{
    return g->indices32 ? g->indices32[e] : g->indices64[e];
}

/* Nodes sorted by a 32-bit key ascending, ties by id: keys[v] << 32 | v, sorted, into nodes. */
static int sort_by_key(uint64_t *keys, uint64_t n, const char *what, struct oc_err *err)
{
    uint64_t *tmp = oc_alloc((n ? n : 1) * sizeof(uint64_t), what, err);
    if (!tmp)
        return err ? err->status : OC_ERR_NOMEM;
    oc_sort_u64(keys, tmp, n);
    oc_free(tmp);
    return OC_OK;
}

/* keys[k] = (UINT32_MAX - in-degree) << 32 | v, sorted: hubs first. */
static int degree_keys(const struct oc_graph *g, uint64_t *keys, struct oc_err *err)
{
    for (uint64_t v = 0; v < g->n_nodes; v++) {
        uint64_t d = g->indptr[v + 1] - g->indptr[v];
        keys[v] = (uint64_t)(UINT32_MAX - (d < UINT32_MAX ? d : UINT32_MAX)) << 32 | v;
    }
    return sort_by_key(keys, g->n_nodes, "plan layout: order", err);
}

/* Breadth-first from each start (keys, in degree order) not yet placed; row_of as the marks. */
static void bfs_rows(const struct oc_graph *g, const uint64_t *keys, uint64_t *queue,
                     uint64_t *row_of)
{
    const uint64_t n = g->n_nodes;
    uint64_t next = 0, head = 0;
    for (uint64_t v = 0; v < n; v++)
        row_of[v] = UINT64_MAX;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t s = keys[k] & UINT32_MAX;
        if (row_of[s] != UINT64_MAX)
            continue;
        row_of[s] = next;
        queue[next++] = s;
        while (head < next) {
            uint64_t v = queue[head++];
            for (uint64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
                uint64_t u = neighbor(g, e);
                if (row_of[u] == UINT64_MAX) {
                    row_of[u] = next;
                    queue[next++] = u;
                }
            }
        }
    }
    assert(next == n);
}

#define LPA_ROUNDS 8u

/* The label most of v's neighbours carry among those with room (see the header). */
static uint32_t lpa_pick(const struct oc_graph *g, uint64_t v, const uint32_t *label,
                         const uint32_t *size, uint64_t cap, uint32_t *scratch, uint32_t *tmp)
{
    uint64_t n = 0;
    for (uint64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
        uint32_t l = label[neighbor(g, e)];
        if (l == label[v] || size[l] < cap)
            scratch[n++] = l;
    }
    if (n == 0)
        return label[v];
    oc_sort_u32(scratch, tmp, n);
    uint32_t best = label[v];
    uint64_t best_count = 0, own = 0;
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j < n && scratch[j] == scratch[i])
            j++;
        if (scratch[i] == label[v])
            own = j - i;
        if (j - i > best_count) { /* ascending: the first of equal counts is the smallest */
            best_count = j - i;
            best = scratch[i];
        }
        i = j;
    }
    return own == best_count ? label[v] : best;
}

static int lpa_rows(const struct oc_graph *g, const struct oc_plan_order_opts *o, uint64_t *keys,
                    uint64_t *row_of, struct oc_err *err)
{
    const uint64_t n = g->n_nodes, cap = 4 * (o->part_nodes ? o->part_nodes : 1);
    uint64_t max_deg = 0;
    for (uint64_t v = 0; v < n; v++)
        if (g->indptr[v + 1] - g->indptr[v] > max_deg)
            max_deg = g->indptr[v + 1] - g->indptr[v];
    uint32_t *label = oc_alloc((n ? n : 1) * sizeof(uint32_t), "plan layout: lpa", err);
    uint32_t *size = oc_alloc((n ? n : 1) * sizeof(uint32_t), "plan layout: lpa", err);
    uint32_t *scratch = oc_alloc((2 * max_deg + 1) * sizeof(uint32_t), "plan layout: lpa", err);
    int rc = label && size && scratch ? OC_OK : (err ? err->status : OC_ERR_NOMEM);
    for (uint64_t v = 0; v < n && rc == OC_OK; v++) {
        label[v] = (uint32_t)v;
        size[v] = 1;
    }
    for (unsigned round = 0; round < LPA_ROUNDS && rc == OC_OK; round++) {
        uint64_t moved = 0;
        for (uint64_t v = 0; v < n; v++) {
            uint32_t l = lpa_pick(g, v, label, size, cap, scratch, scratch + max_deg);
            if (l == label[v])
                continue;
            assert(size[label[v]] > 0);
            size[label[v]]--;
            size[l]++;
            label[v] = l;
            moved++;
        }
        oc_log(OC_LOG_DEBUG, "layout lpa: round %u moved %" PRIu64 " nodes", round, moved);
        if (moved <= n / 1000)
            break;
    }
    if (rc == OC_OK) {
        for (uint64_t v = 0; v < n; v++)
            keys[v] = (uint64_t)label[v] << 32 | v;
        rc = sort_by_key(keys, n, "plan layout: order", err);
    }
    for (uint64_t r = 0; r < n && rc == OC_OK; r++)
        row_of[keys[r] & UINT32_MAX] = r;
    oc_free(label);
    oc_free(size);
    oc_free(scratch);
    return rc;
}

static int partition_rows(const struct oc_dataset *ds, const struct oc_graph *g,
                          const struct oc_plan_order_opts *o, uint64_t *keys, uint64_t *row_of,
                          struct oc_err *err)
{
    const uint64_t n = g->n_nodes;
    uint64_t parts = o->part_nodes ? (n + o->part_nodes - 1) / o->part_nodes : 1;
    if (parts < 1)
        parts = 1;
    if (parts > UINT32_MAX)
        parts = UINT32_MAX;
    struct oc_plan_partition p;
    oc_log(OC_LOG_INFO, "layout partition: %" PRIu64 " METIS parts of about %" PRIu64 " nodes",
           parts, (n + parts - 1) / parts);
    int rc = oc_plan_partition_get(ds, g, o->train_ids, o->n_train, (uint32_t)parts,
                                   OC_PLAN_PART_METIS, o->plan_dir, &p, err);
    if (rc)
        return rc;
    for (uint64_t v = 0; v < n; v++)
        keys[v] = (uint64_t)p.part_of[v] << 32 | v;
    oc_plan_partition_deinit(&p);
    if ((rc = sort_by_key(keys, n, "plan layout: order", err)))
        return rc;
    for (uint64_t r = 0; r < n; r++)
        row_of[keys[r] & UINT32_MAX] = r;
    return OC_OK;
}

int oc_plan_feature_order(const struct oc_dataset *ds, const struct oc_graph *g,
                          const struct oc_plan_order_opts *o, uint64_t *row_of, struct oc_err *err)
{
    const uint64_t n = g->n_nodes;
    if (g->disk || !g->indptr || (!g->indices32 && !g->indices64))
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "plan layout: needs the topology in memory");
    if (n >= UINT32_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "plan layout: %" PRIu64 " nodes: layouts are computed for fewer than 2^32",
                      n);
    if (o->order < 0 || o->order >= OC_PLAN_ORDER_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "plan layout: unknown order %d", o->order);
    uint64_t *keys = oc_alloc((n ? n : 1) * sizeof(uint64_t), "plan layout: order", err);
    if (!keys)
        return err ? err->status : OC_ERR_NOMEM;
    int rc = OC_OK;
    if (o->order == OC_PLAN_ORDER_PARTITION) {
        rc = partition_rows(ds, g, o, keys, row_of, err);
    } else if (o->order == OC_PLAN_ORDER_LPA) {
        rc = lpa_rows(g, o, keys, row_of, err);
    } else if ((rc = degree_keys(g, keys, err)) == OC_OK) {
        if (o->order == OC_PLAN_ORDER_DEGREE) {
            for (uint64_t r = 0; r < n; r++)
                row_of[keys[r] & UINT32_MAX] = r;
        } else {
            uint64_t *queue = oc_alloc((n ? n : 1) * sizeof(uint64_t), "plan layout: bfs", err);
            if (!queue)
                rc = err ? err->status : OC_ERR_NOMEM;
            else
                bfs_rows(g, keys, queue, row_of);
            oc_free(queue);
        }
    }
    oc_free(keys);
    return rc;
}

double oc_plan_order_locality(const struct oc_graph *g, const uint64_t *row_of, uint64_t row_bytes)
{
    const uint64_t page = 4096;
    uint64_t same = 0, total = 0;
    for (uint64_t v = 0; v < g->n_nodes; v++) {
        uint64_t pv = (row_of ? row_of[v] : v) * row_bytes / page;
        for (uint64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
            uint64_t u = neighbor(g, e);
            uint64_t pu = (row_of ? row_of[u] : u) * row_bytes / page;
            uint64_t d = pu > pv ? pu - pv : pv - pu;
            same += d < LOCALITY_PAGES;
            total++;
        }
    }
    return total ? (double)same / (double)total : 0.0;
}

/* ---- a dataset laid out: topology loaded, order computed, rows copied ------------ */

struct order_topo {
    uint64_t *indptr, *train;
    void *indices;
    struct oc_graph g;
};

static void topo_free(struct order_topo *t)
{
    oc_free(t->indptr);
    oc_free(t->indices);
    oc_free(t->train);
    memset(t, 0, sizeof(*t));
}

static int topo_load(const struct oc_dataset *ds, struct order_topo *t, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    uint64_t n_train;
    memset(t, 0, sizeof(*t));
    int rc = oc_dataset_load_indptr(ds, &t->indptr, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_indices(ds, m->index_dtype, &t->indices, err);
    if (rc == OC_OK)
        rc = oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, &t->train, &n_train, err);
    t->g.n_nodes = m->n_nodes;
    t->g.indptr = t->indptr;
    if (m->index_dtype == OC_DTYPE_U32)
        t->g.indices32 = t->indices;
    else
        t->g.indices64 = t->indices;
    return rc;
}

/* The order as rows, logged with how close it brings neighbours' rows; topology freed after. */
static int order_of(const struct oc_dataset *ds, struct oc_plan_order_opts o, uint64_t *row_of,
                    struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    struct order_topo t;
    int rc = topo_load(ds, &t, err);
    if (rc == OC_OK) {
        o.train_ids = t.train;
        o.n_train = m->n_train;
        double t0 = oc_now_s();
        rc = oc_plan_feature_order(ds, &t.g, &o, row_of, err);
        uint64_t rb = (uint64_t)m->feat_dim * oc_dtype_size(m->feat_dtype);
        if (rc == OC_OK)
            oc_log(OC_LOG_INFO,
                   "layout %s: computed in %.1f s; edges whose ends' rows lie within 64 KiB: "
                   "%.1f%% (node id order: %.1f%%)",
                   oc_plan_order_name(o.order), oc_now_s() - t0,
                   100.0 * oc_plan_order_locality(&t.g, row_of, rb),
                   100.0 * oc_plan_order_locality(&t.g, NULL, rb));
    }
    topo_free(&t); /* before the copy: its band takes what they held */
    return rc;
}

int oc_plan_layout_dataset(const struct oc_dataset *ds, const struct oc_plan_order_opts *o,
                           const char *out, uint64_t band_bytes, struct oc_progress *progress,
                           struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    if (m->feat_dim == 0)
        return OC_ERR(err, OC_ERR_ARG, "%s: has no features: there is nothing to lay out",
                      oc_dataset_dir(ds));
    uint64_t *row_of =
        oc_alloc((m->n_nodes ? m->n_nodes : 1) * sizeof(uint64_t), "plan layout: rows", err);
    if (!row_of)
        return err ? err->status : OC_ERR_NOMEM;
    char label[64];
    snprintf(label, sizeof(label), "layout: order (%s)", oc_plan_order_name(o->order));
    oc_progress_phase(progress, label, 0, NULL); /* one step: its line gives its time */
    int rc = order_of(ds, *o, row_of, err);
    if (rc == OC_OK && band_bytes == OC_PLAN_LAYOUT_BAND_LEFT) {
        uint64_t budget = oc_mem_budget(),
                 used = oc_mem_used() + oc_dataset_relayout_fixed_bytes(ds);
        band_bytes = budget == 0 ? ((uint64_t)1 << 30) : budget > used ? budget - used : 0;
    }
    if (rc == OC_OK)
        rc = oc_dataset_relayout(ds, row_of, oc_plan_order_name(o->order), out, band_bytes,
                                 progress, err);
    oc_free(row_of);
    return rc;
}
