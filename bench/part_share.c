/*
 * part_share.c — how much community structure a graph has, as the number
 * the generator's `--communities` / `--mixing` defaults are calibrated on
 * (docs/BENCHMARKS.md, "Generator calibration"): the share of undirected
 * edges whose two ends fall in the same METIS part when the graph is cut
 * into parts of about PART nodes (k-way, minimum edge cut, seed 1). As a
 * baseline it also prints the share inside blocks of PART consecutive node
 * ids (the locality the stored order has without any layout step).
 *
 * Place in the data flow: bench/ (outside the library); reads a dataset
 * directory (indptr/indices) and calls METIS directly. Run by
 * bench/community_calib.sh.
 * Thread-safety: single-threaded.
 * Ownership: everything allocated is freed before the next dataset.
 *
 * Usage: part_share [--part-size PART] DIR...   (PART default 1000)
 * Output: one line per dataset: name, nodes, undirected edges, parts, the
 * METIS intra-part share and the id-block share.
 */
#include <metis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/dataset.h"

_Static_assert(sizeof(idx_t) == 4, "METIS built with 32-bit idx_t expected (Debian's libmetis)");

static int cmp_idx(const void *a, const void *b)
{
    idx_t x = *(const idx_t *)a, y = *(const idx_t *)b;
    return (x > y) - (x < y);
}

/* Symmetric, loop-free, duplicate-free CSR of the dataset's in-neighbour lists. */
static int adjacency(const uint64_t *ip, const uint64_t *ix, uint64_t n, idx_t **xadj_out,
                     idx_t **adj_out)
{
    uint64_t m = ip[n];
    idx_t *xadj = calloc(n + 1, sizeof(idx_t));
    idx_t *fill = calloc(n + 1, sizeof(idx_t));
    idx_t *adj = malloc((m ? 2 * m : 1) * sizeof(idx_t));
    if (!xadj || !fill || !adj) {
        free(xadj);
        free(fill);
        free(adj);
        return -1;
    }
    for (uint64_t v = 0; v < n; v++)
        for (uint64_t e = ip[v]; e < ip[v + 1]; e++)
            if (ix[e] != v) {
                xadj[v + 1]++;
                xadj[ix[e] + 1]++;
            }
    for (uint64_t v = 0; v < n; v++)
        xadj[v + 1] += xadj[v];
    for (uint64_t v = 0; v < n; v++)
        for (uint64_t e = ip[v]; e < ip[v + 1]; e++)
            if (ix[e] != v) {
                uint64_t u = ix[e];
                adj[xadj[v] + fill[v]++] = (idx_t)u;
                adj[xadj[u] + fill[u]++] = (idx_t)v;
            }
    idx_t w = 0;
    for (uint64_t v = 0; v < n; v++) {
        idx_t lo = xadj[v], d = xadj[v + 1] - lo;
        qsort(adj + lo, (size_t)d, sizeof(idx_t), cmp_idx);
        xadj[v] = w;
        for (idx_t i = 0; i < d; i++)
            if (i == 0 || adj[lo + i] != adj[lo + i - 1])
                adj[w++] = adj[lo + i];
    }
    xadj[n] = w;
    free(fill);
    *xadj_out = xadj;
    *adj_out = adj;
    return 0;
}

static int measure(const char *dir, uint64_t part_size)
{
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_dataset *ds = NULL;
    void *ip = NULL, *ix = NULL;
    idx_t *xadj = NULL, *adj = NULL, *part = NULL;
    uint64_t rows, cols;
    int rc = 1;
    if (oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &ds, &err) != OC_OK ||
        oc_npy_load_as(oc_dataset_path(ds, OC_DS_INDPTR), OC_DTYPE_U64, &ip, &rows, &cols, &err) !=
            OC_OK ||
        oc_npy_load_as(oc_dataset_path(ds, OC_DS_INDICES), OC_DTYPE_U64, &ix, &rows, &cols, &err) !=
            OC_OK) {
        fprintf(stderr, "part_share: %s: %s\n", dir, err.msg);
        goto out;
    }
    uint64_t n = oc_dataset_manifest(ds)->n_nodes;
    if (n >= INT32_MAX / 2 || adjacency(ip, ix, n, &xadj, &adj) != 0 ||
        !(part = malloc(n * sizeof(idx_t)))) {
        fprintf(stderr, "part_share: %s: too large or out of memory\n", dir);
        goto out;
    }
    idx_t nv = (idx_t)n, ncon = 1, objval = 0;
    idx_t np = (idx_t)((n + part_size / 2) / part_size);
    if (np < 2)
        np = 2;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 1;
    options[METIS_OPTION_NUMBERING] = 0;
    if (METIS_PartGraphKway(&nv, &ncon, xadj, adj, NULL, NULL, NULL, &np, NULL, NULL, options,
                            &objval, part) != METIS_OK) {
        fprintf(stderr, "part_share: %s: METIS failed\n", dir);
        goto out;
    }
    uint64_t in_part = 0, in_block = 0, total = 0;
    for (uint64_t v = 0; v < n; v++)
        for (idx_t e = xadj[v]; e < xadj[v + 1]; e++) {
            uint64_t u = (uint64_t)adj[e];
            total++;
            in_part += part[u] == part[v];
            in_block += u / part_size == v / part_size;
        }
    const char *name = strrchr(dir, '/');
    printf("%-24s %10llu %12llu %7d %9.3f %9.3f\n", name && name[1] ? name + 1 : dir,
           (unsigned long long)n, (unsigned long long)(total / 2), (int)np,
           total ? (double)in_part / (double)total : 0.0,
           total ? (double)in_block / (double)total : 0.0);
    rc = 0;
out:
    free(xadj);
    free(adj);
    free(part);
    oc_free(ip);
    oc_free(ix);
    oc_dataset_free(ds);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t part_size = 1000;
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--part-size") == 0) {
        part_size = strtoull(argv[a + 1], NULL, 10);
        a += 2;
    }
    if (a >= argc || part_size < 2) {
        fprintf(stderr, "usage: part_share [--part-size PART (>= 2, default 1000)] DIR...\n");
        return 2;
    }
    printf("%-24s %10s %12s %7s %9s %9s\n", "dataset", "nodes", "edges", "parts", "in-part",
           "id-block");
    int rc = 0;
    for (; a < argc; a++)
        rc |= measure(argv[a], part_size);
    return rc;
}
