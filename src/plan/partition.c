/*
 * partition.c — the graph partition behind OUTRE's partition-based batches
 * (`--batching partition`): METIS (libmetis 5.1, k-way, minimum edge cut) or
 * Fennel (partition_fennel.c, `--partitioner fennel`) over the symmetrized
 * topology without self-loops, balancing both the nodes and the training
 * nodes of every part, computed once and kept in a plan file named by a key
 * of its inputs, the partitioner among them (docs/FORMAT.md section 7):
 *
 *   PLAN/part-<key>/parts.ocpt (little-endian)
 *   off  size
 *   0    8          magic "OCPART01"
 *   8    4          version (1)
 *   12   4          n_parts
 *   16   8          n_nodes
 *   24   8          key (the directory's, in the file too)
 *   32   4 x N      part of node 0 .. N-1, each < n_parts
 *   end  4          CRC-32 (zlib) of every byte before it
 *
 * A file that does not pass every check (size, magic, version, counts, key,
 * CRC, parts in range) is never trusted: the partition is computed again and
 * the file replaced (atomically: temporary name, fsync, rename).
 *
 * Place in the data flow: plan (offline, before training); train loads it
 * and hands the node -> part map to sample's epoch order.
 * Thread-safety: one call at a time per plan directory from one process
 * (two runs computing the same partition each write a complete file under a
 * temporary name; the last rename wins, both are equal).
 * Ownership: a partition owns part_of (oc_alloc, consumer "partition").
 * METIS allocates its own workspace outside the memory accountant (about
 * 10 x the adjacency while it runs); the adjacency handed to it is counted.
 */
#include <inttypes.h>
#include <metis.h>
#include <stdio.h>
#include <string.h>

#include "offcore/io.h"
#include "offcore/plan.h"
#include "offcore/progress.h"
#include "plan/plan_int.h"

#define PART_MAGIC   "OCPART01"
#define PART_VERSION 1u
#define PART_HEADER  32u
#define PART_FILE    "parts.ocpt"

_Static_assert(sizeof(idx_t) == 4, "METIS built with 32-bit idx_t expected (Debian's libmetis)");

static uint64_t part_fnv(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h;
}

const char *oc_plan_partitioner_name(int partitioner)
{
    return partitioner == OC_PLAN_PART_METIS    ? "metis"
           : partitioner == OC_PLAN_PART_FENNEL ? "fennel"
                                                : "?";
}

uint64_t oc_plan_partition_key(const struct oc_dataset *ds, const uint64_t *train_ids,
                               uint64_t n_train, uint32_t n_parts, int partitioner)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    uint64_t h = 0xcbf29ce484222325ull;
    /* METIS's tag is the one its files had before Fennel existed: they stay valid */
    const char *tag = partitioner == OC_PLAN_PART_FENNEL ? "offcore partition v1 fennel"
                                                         : "offcore partition v1 metis-5.1 kway";
    for (size_t i = 0; tag[i]; i++)
        h = (h ^ (uint8_t)tag[i]) * 0x100000001b3ull;
    h = part_fnv(h, m->n_nodes);
    h = part_fnv(h, m->n_edges);
    h = part_fnv(h, m->files[OC_DS_INDPTR].bytes);
    h = part_fnv(h, m->files[OC_DS_INDPTR].crc32);
    h = part_fnv(h, m->files[OC_DS_INDICES].bytes);
    h = part_fnv(h, m->files[OC_DS_INDICES].crc32);
    h = part_fnv(h, n_parts);
    h = part_fnv(h, n_train);
    for (uint64_t i = 0; i < n_train; i++)
        h = part_fnv(h, train_ids[i]);
    return h;
}

uint32_t oc_plan_partition_n_parts(uint64_t n_nodes, uint64_t n_train, uint64_t batch_size,
                                   uint32_t group)
{
    uint64_t n_batches = (n_train + batch_size - 1) / (batch_size ? batch_size : 1);
    uint64_t n = n_batches * group;
    if (n > n_train)
        n = n_train; /* every part should hold a training node */
    if (n > n_nodes)
        n = n_nodes;
    if (n > UINT32_MAX / 2)
        n = UINT32_MAX / 2;
    return n ? (uint32_t)n : 1;
}

/* The adjacency both partitioners take: symmetric, no self-loops, no duplicates, as CSR. */
static int part_adjacency(const struct oc_graph *g, idx_t **xadj_out, idx_t **adj_out,
                          struct oc_err *err)
{
    *xadj_out = NULL;
    *adj_out = NULL;
    uint64_t n = g->n_nodes, m = g->indptr[n];
    if (n >= (uint64_t)INT32_MAX || 2 * m >= (uint64_t)INT32_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "partition: %" PRIu64 " nodes and %" PRIu64
                      " edges exceed the partitioners' 32-bit indices",
                      n, m);
    idx_t *xadj = oc_calloc((size_t)n + 1, sizeof(idx_t), "partition adjacency", err);
    idx_t *adj = oc_alloc((size_t)(m ? 2 * m : 1) * sizeof(idx_t), "partition adjacency", err);
    idx_t *fill = oc_calloc((size_t)n + 1, sizeof(idx_t), "partition adjacency", err);
    int rc = OC_OK;
    if (!xadj || !adj || !fill) {
        rc = err->status;
        goto out;
    }
    /* each in-edge u -> v (u != v) goes into both lists */
    for (uint64_t v = 0; v < n; v++)
        for (uint64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
            uint64_t u = g->indices32 ? g->indices32[e] : g->indices64[e];
            if (u >= n) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "partition: in-neighbor %" PRIu64 " of node %" PRIu64
                            " is >= n_nodes %" PRIu64,
                            u, v, n);
                goto out;
            }
            if (u != v) {
                xadj[v + 1]++;
                xadj[u + 1]++;
            }
        }
    for (uint64_t v = 0; v < n; v++)
        xadj[v + 1] += xadj[v];
    for (uint64_t v = 0; v < n; v++)
        for (uint64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
            uint64_t u = g->indices32 ? g->indices32[e] : g->indices64[e];
            if (u != v) {
                adj[xadj[v] + fill[v]++] = (idx_t)u;
                adj[xadj[u] + fill[u]++] = (idx_t)v;
            }
        }
    /* sort each list (insertion into a bitmap-free dedup: lists are short on average, but a
       hub's may not be: shell sort keeps it O(d^1.3)) and drop duplicates in place */
    idx_t w = 0;
    for (uint64_t v = 0; v < n; v++) {
        idx_t lo = xadj[v], hi = xadj[v + 1], d = hi - lo;
        idx_t *a = adj + lo;
        for (idx_t gap = d / 2; gap > 0; gap = gap == 2 ? 1 : gap * 5 / 11)
            for (idx_t i = gap; i < d; i++) {
                idx_t x = a[i], j = i;
                for (; j >= gap && a[j - gap] > x; j -= gap)
                    a[j] = a[j - gap];
                a[j] = x;
            }
        xadj[v] = w;
        for (idx_t i = 0; i < d; i++)
            if (i == 0 || a[i] != a[i - 1])
                adj[w++] = a[i];
    }
    xadj[n] = w;
out:
    oc_free(fill);
    if (rc != OC_OK) {
        oc_free(xadj);
        oc_free(adj);
        return rc;
    }
    *xadj_out = xadj;
    *adj_out = adj;
    return OC_OK;
}

/* Fennel over the adjacency, training nodes marked. */
static int part_fennel(const idx_t *xadj, const idx_t *adj, uint64_t n, const uint64_t *train_ids,
                       uint64_t n_train, uint32_t n_parts, uint32_t *part_of, struct oc_err *err)
{
    uint8_t *is_train = oc_calloc(n ? n : 1, 1, "partition fennel", err);
    if (!is_train)
        return err->status;
    for (uint64_t i = 0; i < n_train; i++)
        is_train[train_ids[i]] = 1;
    int rc = plan_fennel(xadj, adj, n, is_train, n_train, n_parts, part_of, err);
    oc_free(is_train);
    if (rc == OC_OK) {
        uint64_t cut = 0;
        for (uint64_t v = 0; v < n; v++)
            for (idx_t e = xadj[v]; e < xadj[v + 1]; e++)
                cut += part_of[adj[e]] != part_of[v];
        oc_log(OC_LOG_INFO,
               "partition: %" PRIu64 " nodes into %u parts (Fennel), %" PRIu64 " edges cut of %d",
               n, n_parts, cut / 2, (int)(xadj[n] / 2));
    }
    return rc;
}

/*
 * METIS k-way with two balance constraints per node (1, and 1 for a training
 * node), or Fennel.
 */
static int part_compute(const struct oc_graph *g, const uint64_t *train_ids, uint64_t n_train,
                        uint32_t n_parts, int partitioner, uint32_t *part_of, struct oc_err *err)
{
    uint64_t n = g->n_nodes;
    if (n_parts <= 1) {
        memset(part_of, 0, (size_t)n * sizeof(uint32_t));
        return OC_OK;
    }
    idx_t *xadj = NULL, *adj = NULL;
    int rc = part_adjacency(g, &xadj, &adj, err);
    if (rc != OC_OK)
        return rc;
    if (partitioner == OC_PLAN_PART_FENNEL) {
        rc = part_fennel(xadj, adj, n, train_ids, n_train, n_parts, part_of, err);
        oc_free(xadj);
        oc_free(adj);
        return rc;
    }
    idx_t *vwgt = oc_alloc((size_t)n * 2 * sizeof(idx_t), "partition weights", err);
    idx_t *part = oc_alloc((size_t)n * sizeof(idx_t), "partition result", err);
    if (!vwgt || !part) {
        rc = err->status;
        goto out;
    }
    for (uint64_t v = 0; v < n; v++) {
        vwgt[2 * v] = 1;
        vwgt[2 * v + 1] = 0;
    }
    for (uint64_t i = 0; i < n_train; i++)
        vwgt[2 * train_ids[i] + 1] = 1;
    idx_t nvtxs = (idx_t)n, ncon = 2, nparts = (idx_t)n_parts, objval = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 1; /* fixed: the same inputs give the same parts */
    options[METIS_OPTION_NUMBERING] = 0;
    int mr = METIS_PartGraphKway(&nvtxs, &ncon, xadj, adj, vwgt, NULL, NULL, &nparts, NULL, NULL,
                                 options, &objval, part);
    if (mr != METIS_OK) {
        rc = OC_ERR(err, mr == METIS_ERROR_MEMORY ? OC_ERR_NOMEM : OC_ERR_INTERNAL,
                    "partition: METIS_PartGraphKway into %u parts failed (%s)", n_parts,
                    mr == METIS_ERROR_MEMORY  ? "out of memory"
                    : mr == METIS_ERROR_INPUT ? "input error"
                                              : "error");
        goto out;
    }
    for (uint64_t v = 0; v < n; v++)
        part_of[v] = (uint32_t)part[v];
    oc_log(OC_LOG_INFO, "partition: %" PRIu64 " nodes into %u parts, %" PRId64 " edges cut of %d",
           n, n_parts, (int64_t)objval, (int)(xadj[n] / 2));
out:
    oc_free(xadj);
    oc_free(adj);
    oc_free(vwgt);
    oc_free(part);
    return rc;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/*
 * Reads path into p->part_of when it is a whole, valid file for (n_nodes,
 * n_parts, key). OC_ERR_NOTFOUND when missing; OC_ERR_FORMAT naming the
 * problem when damaged.
 */
static int part_read(const char *path, uint64_t n_nodes, uint32_t n_parts, uint64_t key,
                     uint32_t *part_of, struct oc_err *err)
{
    if (!oc_path_exists(path))
        return OC_ERR(err, OC_ERR_NOTFOUND, "partition file %s does not exist", path);
    uint64_t want = PART_HEADER + 4 * n_nodes + 4;
    char *data = NULL;
    size_t len = 0;
    int rc = oc_read_file(path, (size_t)want, &data, &len, err);
    if (rc != OC_OK)
        return rc;
    const uint8_t *b = (const uint8_t *)data;
    if (len != want)
        rc = OC_ERR(err, OC_ERR_FORMAT, "partition file %s: %zu bytes, expected %" PRIu64, path,
                    len, want);
    else if (memcmp(b, PART_MAGIC, 8) != 0)
        rc = OC_ERR(err, OC_ERR_FORMAT, "partition file %s: bad magic", path);
    else if (rd32(b + 8) != PART_VERSION)
        rc = OC_ERR(err, OC_ERR_FORMAT, "partition file %s: version %u, expected %u", path,
                    rd32(b + 8), PART_VERSION);
    else if (rd32(b + 12) != n_parts || rd64(b + 16) != n_nodes || rd64(b + 24) != key)
        rc =
            OC_ERR(err, OC_ERR_FORMAT,
                   "partition file %s: header (%u parts, %" PRIu64 " nodes) does not match its key",
                   path, rd32(b + 12), rd64(b + 16));
    else if (oc_crc32(0, b, len - 4) != rd32(b + len - 4))
        rc = OC_ERR(err, OC_ERR_FORMAT, "partition file %s: CRC mismatch", path);
    for (uint64_t v = 0; rc == OC_OK && v < n_nodes; v++) {
        part_of[v] = rd32(b + PART_HEADER + 4 * v);
        if (part_of[v] >= n_parts)
            rc = OC_ERR(err, OC_ERR_FORMAT, "partition file %s: node %" PRIu64 " in part %u of %u",
                        path, v, part_of[v], n_parts);
    }
    oc_free(data);
    return rc;
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

static int part_write(const char *dir, const char *path, uint64_t n_nodes, uint32_t n_parts,
                      uint64_t key, const uint32_t *part_of, struct oc_err *err)
{
    size_t len = (size_t)(PART_HEADER + 4 * n_nodes + 4);
    uint8_t *b = oc_alloc(len, "partition file", err);
    if (!b)
        return err->status;
    memcpy(b, PART_MAGIC, 8);
    wr32(b + 8, PART_VERSION);
    wr32(b + 12, n_parts);
    wr64(b + 16, n_nodes);
    wr64(b + 24, key);
    for (uint64_t v = 0; v < n_nodes; v++)
        wr32(b + PART_HEADER + 4 * v, part_of[v]);
    wr32(b + len - 4, oc_crc32(0, b, len - 4));
    int rc = oc_mkdir_p(dir, err);
    if (rc == OC_OK)
        (void)oc_tmp_clean_stale(dir, PART_FILE, NULL, NULL);
    if (rc == OC_OK)
        rc = oc_write_file_atomic(path, b, len, err);
    oc_free(b);
    return rc;
}

int oc_plan_partition_get(const struct oc_dataset *ds, const struct oc_graph *g,
                          const uint64_t *train_ids, uint64_t n_train, uint32_t n_parts,
                          int partitioner, const char *plan_dir, struct oc_plan_partition *out,
                          struct oc_err *err)
{
    memset(out, 0, sizeof(*out));
    if (partitioner < 0 || partitioner >= OC_PLAN_PART_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "partition: unknown partitioner %d", partitioner);
    if (!g->indices32 && !g->indices64)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "partition: needs the topology in memory (not --topology disk)");
    if (n_parts == 0 || n_parts > g->n_nodes)
        return OC_ERR(err, OC_ERR_ARG, "partition: %u parts for %" PRIu64 " nodes", n_parts,
                      g->n_nodes);
    for (uint64_t i = 0; i < n_train; i++)
        if (train_ids[i] >= g->n_nodes)
            return OC_ERR(err, OC_ERR_ARG, "partition: training node %" PRIu64 " >= %" PRIu64,
                          train_ids[i], g->n_nodes);
    uint64_t key = oc_plan_partition_key(ds, train_ids, n_train, n_parts, partitioner);
    char dir[4096] = "", path[4200] = "";
    if (plan_dir) { /* NULL: computed, not kept */
        int w = snprintf(dir, sizeof(dir), "%s/part-%016" PRIx64, plan_dir, key);
        if (w < 0 || (size_t)w >= sizeof(dir))
            return OC_ERR(err, OC_ERR_ARG, "partition: plan directory %s is too long", plan_dir);
        snprintf(path, sizeof(path), "%s/%s", dir, PART_FILE);
    }
    out->part_of =
        oc_alloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t), "partition", err);
    if (!out->part_of)
        return err->status;
    out->n_nodes = g->n_nodes;
    out->n_parts = n_parts;
    out->key = key;
    snprintf(out->path, sizeof(out->path), "%s", path);
    struct oc_err rerr;
    int rc =
        plan_dir ? part_read(path, g->n_nodes, n_parts, key, out->part_of, &rerr) : OC_ERR_NOTFOUND;
    if (rc == OC_OK)
        return OC_OK;
    if (rc != OC_ERR_NOTFOUND)
        oc_log(OC_LOG_WARN, "%s: computing the partition again", rerr.msg);
    double t0 = oc_now_s();
    if ((rc = part_compute(g, train_ids, n_train, n_parts, partitioner, out->part_of, err)))
        goto fail;
    out->built = 1;
    out->build_s = oc_now_s() - t0;
    struct oc_err werr;
    if (!plan_dir)
        return OC_OK;
    if (part_write(dir, path, g->n_nodes, n_parts, key, out->part_of, &werr) != OC_OK) {
        oc_log(OC_LOG_WARN, "%s: the partition is kept in memory only (computed again next run)",
               werr.msg);
        out->path[0] = '\0';
    }
    return OC_OK;
fail:
    oc_plan_partition_deinit(out);
    return rc;
}

void oc_plan_partition_deinit(struct oc_plan_partition *p)
{
    if (!p)
        return;
    oc_free(p->part_of);
    memset(p, 0, sizeof(*p));
}
