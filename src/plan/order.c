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

static const char *const order_names[OC_PLAN_ORDER_COUNT] = {"degree", "bfs", "partition"};

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
            same += d <= 1;
            total++;
        }
    }
    return total ? (double)same / (double)total : 0.0;
}
