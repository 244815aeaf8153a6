/*
 * size_gate.c — the one size-sanity gate every writer of a dataset passes
 * before it creates anything big (importers of every kind, the generator):
 *
 *   declared sizes ─► vouched for by the input? (each importer: a count must
 *   │                 match the length of a file that holds one entry per node /
 *   │                 column, else it needs an explicit ceiling)
 *   ▼
 *   oc_ds_size_check: format limits ─► bytes of the output (+ sort scratch)
 *                     ─► <= the ceiling (--max-size)? ─► <= free space at OUT?
 *
 * Sizes that are not known in advance (the edges of a text edge list) count
 * as 0 here; the writers still stop at the first ENOSPC and remove their
 * partial output.
 *
 * Place in the data flow: dataset; called by import_*.c and generate.c
 * before oc_ds_builder_new, so a refused dataset leaves nothing behind.
 * Thread-safety: stateless.
 * Ownership: nothing is kept.
 */
#include <inttypes.h>
#include <stdio.h>

#include "dataset/dataset_int.h"
#include "offcore/io.h"

/* a + b, a * b saturating at UINT64_MAX (an absurd size must stay absurd, not wrap). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

uint64_t oc_ds_size_bytes(const struct oc_ds_size *s, uint64_t *scratch)
{
    const uint64_t hdr = OC_NPY_HEADER_BYTES;
    const uint64_t idx_bytes = oc_dtype_size(oc_ds_index_dtype_for(s->n_nodes));
    uint64_t total = 0;
    total = sat_add(total, sat_add(hdr, sat_mul(sat_add(s->n_nodes, 1), 8))); /* indptr */
    total = sat_add(total, sat_add(hdr, sat_mul(s->n_edges, idx_bytes)));     /* indices */
    if (s->feat_dim)
        total = sat_add(total, sat_add(hdr, sat_mul(sat_mul(s->n_nodes, s->feat_dim),
                                                    oc_dtype_size(s->feat_dtype))));
    if (s->labels)
        total = sat_add(total, sat_add(hdr, sat_mul(s->n_nodes, 4)));
    total = sat_add(total, sat_add(3 * hdr, sat_mul(s->n_split_ids, 8)));
    /* The edge sorter's bucket records (8 or 16 bytes) and its indices copy. */
    uint64_t scr = sat_mul(s->n_edges, idx_bytes == 4 ? 12 : 24);
    if (scratch)
        *scratch = scr;
    return total;
}

int oc_ds_size_check(const struct oc_ds_size *s, const char *out, uint64_t max_bytes,
                     const char *max_opt, struct oc_err *err)
{
    char a[32], b[32];
    if (s->feat_dim > UINT32_MAX)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "%s: a feature width of %" PRIu64 " is not supported", out, s->feat_dim);
    uint64_t scratch;
    uint64_t bytes = oc_ds_size_bytes(s, &scratch);
    if (max_bytes && bytes > max_bytes) /* the room allowed: as no space on the device */
        return OC_ERR(
            err, OC_ERR_NOSPC,
            "%s: the dataset would take %s (%" PRIu64 " nodes, %" PRIu64 "-dim features, %" PRIu64
            " bytes), over %s %s (raise it to write it)",
            out, bytes == UINT64_MAX ? "more than 16 EiB" : oc_format_size(bytes, a, sizeof(a)),
            s->n_nodes, s->feat_dim, bytes, max_opt ? max_opt : "the ceiling",
            oc_format_size(max_bytes, b, sizeof(b)));
    return oc_fs_check_space(out, sat_add(bytes, scratch), "the dataset", err);
}
