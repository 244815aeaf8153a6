/*
 * topology_scan.c — the content checks of the topology files, run by a
 * streamed scan (struct oc_ds_stream: O_DIRECT, every byte into the CRC):
 * indptr.npy starts at 0, never decreases and ends at n_edges; indices.npy's
 * neighbour ids are < n_nodes and ascending within each node's range. The
 * same scan optionally copies what it read into the caller's array, so a run
 * that keeps the topology in RAM reads and checks each file once
 * (OC_DS_OPEN_DEFER_TOPOLOGY, oc_dataset_load_topology) instead of checking
 * at open and reading again to load.
 *
 *   indptr.npy ──stream──► monotone, 0..n_edges ──► copy? ──► crc
 *   indices.npy ─stream──► id < n_nodes, ascending per node ──► copy? ──► crc
 *                  node ranges from the loaded indptr, or a second stream
 *
 * Place in the data flow: dataset (dataset_open.c calls it at open and in the
 * topology loader).
 * Thread-safety: none needed: one call, one thread.
 * Ownership: the caller owns the copies; streams are closed before return.
 */
#include <inttypes.h>
#include <string.h>

#include "dataset/dataset_int.h"

int oc_ds_scan_indptr(const char *path, uint64_t n_nodes, uint64_t n_edges, uint64_t *copy,
                      uint32_t *crc, struct oc_err *err)
{
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint64_t i = 0, prev = 0;
    int rc = oc_ds_stream_open(&s, path, OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        if (copy && i + n / 8 <= n_nodes + 1) /* the open checked the size; a grown file fails */
            memcpy(copy + i, p, n / 8 * 8);
        for (size_t k = 0; k < n / 8; k++, i++) {
            uint64_t v = oc_ds_get_uint(p, 8, k);
            if (i == 0 && v != 0) {
                rc =
                    OC_ERR(err, OC_ERR_FORMAT, "%s: indptr[0] is %" PRIu64 ", expected 0", path, v);
                goto out;
            }
            if (v < prev) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: not monotone: indptr[%" PRIu64 "] = %" PRIu64 " < indptr[%" PRIu64
                            "] = %" PRIu64,
                            path, i, v, i - 1, prev);
                goto out;
            }
            if (v > n_edges) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s: indptr[%" PRIu64 "] = %" PRIu64 " exceeds n_edges %" PRIu64, path,
                            i, v, n_edges);
                goto out;
            }
            prev = v;
        }
    }
    if (rc)
        goto out;
    if (i != n_nodes + 1)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: changed: %" PRIu64 " entries, expected %" PRIu64, path,
                    i, n_nodes + 1);
    else if (prev != n_edges)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: indptr[%" PRIu64 "] = %" PRIu64 ", expected n_edges %" PRIu64, path,
                    n_nodes, prev, n_edges);
    *crc = s.crc;
out:
    oc_ds_stream_close(&s);
    return rc;
}

/* Where node ranges come from: the loaded indptr, or a stream over indptr.npy. */
struct node_ends {
    const uint64_t *mem;
    struct oc_ds_stream s;
    uint64_t next; /* index of the next entry of mem */
};

static int next_end(struct node_ends *ne, uint64_t *end, struct oc_err *err)
{
    if (ne->mem) {
        *end = ne->mem[ne->next++];
        return OC_OK;
    }
    return oc_ds_stream_next_elem(&ne->s, 8, end, err);
}

/* Neighbour ids of one chunk: in range, ascending per node (the node cursor in *c). */
struct idx_cursor {
    uint64_t pos, node, start, end, prev;
};

static int check_chunk(const char *path, const uint8_t *p, size_t count, size_t es,
                       uint64_t n_nodes, struct node_ends *ne, struct idx_cursor *c,
                       struct oc_err *err)
{
    int rc;
    for (size_t k = 0; k < count; k++, c->pos++) {
        uint64_t v = oc_ds_get_uint(p, es, k);
        if (v >= n_nodes)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: neighbor id %" PRIu64 " at position %" PRIu64
                          " out of range (n_nodes %" PRIu64 ")",
                          path, v, c->pos, n_nodes);
        while (c->pos >= c->end) { /* advance to the node owning this position */
            c->node++;
            c->start = c->end;
            if ((rc = next_end(ne, &c->end, err)))
                return rc;
        }
        if (c->pos > c->start && v < c->prev)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: in-neighbors of node %" PRIu64 " not ascending at position %" PRIu64
                          " (%" PRIu64 " after %" PRIu64 ")",
                          path, c->node, c->pos, v, c->prev);
        c->prev = v;
    }
    return OC_OK;
}

int oc_ds_scan_indices(const char *path, const char *indptr_path, const uint64_t *indptr,
                       uint64_t n_nodes, uint64_t n_edges, size_t es, void *copy, uint32_t *crc,
                       struct oc_err *err)
{
    struct oc_ds_stream s;
    struct node_ends ne = {indptr, {0}, 0};
    struct idx_cursor c = {0, UINT64_MAX, 0, 0, 0}; /* before node 0: the first id advances */
    const uint8_t *p;
    size_t n;
    int rc = oc_ds_stream_open(&s, path, OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    if (!indptr && (rc = oc_ds_stream_open(&ne.s, indptr_path, OC_NPY_HEADER_BYTES, 1u << 20, err)))
        goto out;
    if ((rc = next_end(&ne, &c.end, err))) /* indptr[0], 0 (checked) */
        goto out;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        if (c.pos + n / es > n_edges) {
            rc = OC_ERR(err, OC_ERR_FORMAT, "%s: changed: more than %" PRIu64 " neighbor ids", path,
                        n_edges);
            goto out;
        }
        if (copy)
            memcpy((uint8_t *)copy + c.pos * es, p, n / es * es);
        if ((rc = check_chunk(path, p, n / es, es, n_nodes, &ne, &c, err)))
            goto out;
    }
    if (rc == OC_OK && c.pos != n_edges)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: changed: %" PRIu64 " neighbor ids, expected %" PRIu64,
                    path, c.pos, n_edges);
    if (rc == OC_OK)
        *crc = s.crc;
out:
    if (!indptr)
        oc_ds_stream_close(&ne.s);
    oc_ds_stream_close(&s);
    return rc;
}
