/*
 * info.c — the summary behind `offcore info`: degree statistics (in-degrees
 * from indptr), isolated nodes, self-loops, byte sizes, class counts.
 * Everything is streamed: exact median/p99 come from a histogram of degrees
 * below 65536 plus a sorted list of the (few, at most n_edges / 65536)
 * larger ones; a bitmap of n_nodes bits marks nodes with out-edges.
 *
 * Place in the data flow: dataset; used by the CLI (`offcore info`).
 * Thread-safety: reentrant; reads an immutable opened dataset.
 * Ownership: info->class_count is oc_alloc'd; oc_ds_info_deinit frees it.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"

#define HIST_N 65536u

struct degstats {
    uint64_t *hist; /* hist[d] = nodes of in-degree d, d < HIST_N */
    uint64_t *big;  /* degrees >= HIST_N */
    size_t n_big;
    uint64_t cap_big;
};

/* The r-th smallest degree (0-based). */
static uint64_t deg_rank(const struct degstats *st, uint64_t r)
{
    uint64_t cum = 0;
    for (uint32_t d = 0; d < HIST_N; d++) {
        if (r < cum + st->hist[d])
            return d;
        cum += st->hist[d];
    }
    return st->big[r - cum];
}

static int add_big(struct degstats *st, uint64_t d, struct oc_err *err)
{
    int rc =
        oc_grow(&st->big, &st->cap_big, st->n_big + 1, sizeof(uint64_t), 64, "dataset info", err);
    if (rc)
        return rc;
    st->big[st->n_big++] = d;
    return OC_OK;
}

/* Self-loops and out-edge marks: indices with indptr read alongside. */
static int scan_indices(const struct oc_dataset *ds, uint8_t *has_out, struct oc_ds_info *info,
                        struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    const size_t es = oc_dtype_size(m->index_dtype);
    struct oc_ds_stream s, ip;
    const uint8_t *p;
    size_t n;
    uint64_t pos = 0, node = 0, end = 0, first;
    int rc = oc_ds_stream_open(&s, oc_dataset_path(ds, OC_DS_INDICES), OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    if ((rc = oc_ds_stream_open(&ip, oc_dataset_path(ds, OC_DS_INDPTR), OC_NPY_HEADER_BYTES,
                                1u << 20, err))) {
        oc_ds_stream_close(&s);
        return rc;
    }
    if ((rc = oc_ds_stream_next_elem(&ip, 8, &first, err)))
        goto out;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / es; k++, pos++) {
            uint64_t v = oc_ds_get_uint(p, es, k);
            if (pos == 0 && (rc = oc_ds_stream_next_elem(&ip, 8, &end, err)))
                goto out;
            while (pos >= end) {
                node++;
                if ((rc = oc_ds_stream_next_elem(&ip, 8, &end, err)))
                    goto out;
            }
            if (v >= m->n_nodes) { /* validated on open; the file changed since */
                rc = OC_ERR(err, OC_ERR_FORMAT, "%s: neighbor id out of range (file changed?)",
                            s.path);
                goto out;
            }
            if (v == node)
                info->n_self_loops++;
            oc_bit_set(has_out, v);
        }
    }
out:
    oc_ds_stream_close(&ip);
    oc_ds_stream_close(&s);
    return rc;
}

static int scan_degrees(const struct oc_dataset *ds, const uint8_t *has_out, struct degstats *st,
                        struct oc_ds_info *info, struct oc_err *err)
{
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint64_t i = 0, prev = 0;
    int rc = oc_ds_stream_open(&s, oc_dataset_path(ds, OC_DS_INDPTR), OC_NPY_HEADER_BYTES, 0, err);
    if (rc)
        return rc;
    info->deg_min = UINT64_MAX;
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / 8; k++, i++) {
            uint64_t v = oc_ds_get_uint(p, 8, k);
            if (i > 0) {
                uint64_t node = i - 1, d = v - prev;
                if (d < info->deg_min)
                    info->deg_min = d;
                if (d > info->deg_max)
                    info->deg_max = d;
                if (d < HIST_N)
                    st->hist[d]++;
                else if ((rc = add_big(st, d, err)))
                    goto out;
                if (d == 0 && !(has_out[node >> 3] & (1u << (node & 7))))
                    info->n_isolated++;
            }
            prev = v;
        }
    }
out:
    oc_ds_stream_close(&s);
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/*
 * Counts labels per class: densely when there are few classes, else by
 * sorting the labels (memory bounded by n_nodes, never by the declared
 * n_classes) and keeping the non-empty classes only.
 */
static int scan_labels(const struct oc_dataset *ds, uint64_t n_nodes, struct oc_ds_info *info,
                       struct oc_err *err)
{
    struct oc_ds_stream s;
    const uint8_t *p;
    size_t n;
    uint32_t *ids = NULL;
    uint64_t n_ids = 0;
    int dense = info->class_id == NULL;
    if (!dense && n_nodes &&
        !(ids = oc_alloc((size_t)n_nodes * sizeof(uint32_t), "dataset info: labels", err)))
        return err ? err->status : OC_ERR_NOMEM;
    int rc = oc_ds_stream_open(&s, oc_dataset_path(ds, OC_DS_LABELS), OC_NPY_HEADER_BYTES, 0, err);
    if (rc) {
        oc_free(ids);
        return rc;
    }
    while (!(rc = oc_ds_stream_next(&s, &p, &n, err)) && n > 0) {
        for (size_t k = 0; k < n / 4; k++) {
            int32_t v;
            memcpy(&v, p + 4 * k, 4);
            if (v < 0)
                info->n_unlabeled++;
            else if ((uint32_t)v >= info->n_classes)
                continue;
            else if (dense)
                info->class_count[v]++;
            else if (n_ids < n_nodes)
                ids[n_ids++] = (uint32_t)v;
        }
    }
    oc_ds_stream_close(&s);
    if (rc == OC_OK && !dense && n_ids) {
        qsort(ids, (size_t)n_ids, sizeof(uint32_t), cmp_u32);
        uint32_t m = 0;
        for (uint64_t i = 0; i < n_ids; i++) {
            if (i == 0 || ids[i] != ids[i - 1]) {
                info->class_id[m] = ids[i];
                info->class_count[m++] = 0;
            }
            info->class_count[m - 1]++;
        }
        info->n_class_count = m;
    }
    oc_free(ids);
    return rc;
}

int oc_dataset_info(const struct oc_dataset *ds, struct oc_ds_info *info, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    struct degstats st = {0};
    uint8_t *has_out = NULL;
    int rc;
    memset(info, 0, sizeof(*info));
    info->n_nodes = m->n_nodes;
    info->n_edges = m->n_edges;
    info->n_classes = m->n_classes;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        if (!m->files[f].present)
            continue;
        info->bytes_total += m->files[f].bytes;
        if (f == OC_DS_FEATURES)
            info->bytes_features += m->files[f].bytes;
        if (f == OC_DS_INDPTR || f == OC_DS_INDICES)
            info->bytes_topology += m->files[f].bytes;
    }
    /* Few classes: one count each. Many: at most one per node (sparse), never sized by the
       declared count alone. */
    uint64_t slots = m->n_classes ? m->n_classes : 1;
    if (m->n_classes > OC_DS_INFO_DENSE_CLASSES) {
        slots = m->n_nodes < m->n_classes ? (m->n_nodes ? m->n_nodes : 1) : m->n_classes;
        if (!(info->class_id = oc_calloc((size_t)slots, sizeof(uint32_t), "dataset info", err)))
            return err ? err->status : OC_ERR_NOMEM;
    } else {
        info->n_class_count = m->n_classes;
    }
    if (!(info->class_count = oc_calloc((size_t)slots, sizeof(uint64_t), "dataset info", err))) {
        oc_ds_info_deinit(info);
        return err ? err->status : OC_ERR_NOMEM;
    }
    if (m->files[OC_DS_LABELS].present) {
        if ((rc = scan_labels(ds, m->n_nodes, info, err)))
            goto fail;
    } else {
        info->n_unlabeled = m->n_nodes;
    }
    if (m->n_nodes == 0)
        return OC_OK;
    size_t bm = (size_t)((m->n_nodes + 7) / 8);
    if (!(has_out = oc_calloc(bm, 1, "dataset info", err)) ||
        !(st.hist = oc_calloc(HIST_N, sizeof(uint64_t), "dataset info", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    if ((rc = scan_indices(ds, has_out, info, err)) ||
        (rc = scan_degrees(ds, has_out, &st, info, err)))
        goto fail;
    if (st.n_big)
        qsort(st.big, st.n_big, sizeof(uint64_t), oc_cmp_u64);
    const uint64_t n = m->n_nodes;
    info->deg_mean = (double)m->n_edges / (double)n;
    info->deg_median = deg_rank(&st, (n - 1) / 2);
    /* nearest rank ceil(0.99 n) - 1, in integers: (99 n + 99) / 100 - 1 */
    uint64_t r99 = n <= UINT64_MAX / 99 ? (99 * n + 99) / 100 - 1 : n - n / 100 - 1;
    info->deg_p99 = deg_rank(&st, r99);
    oc_free(st.hist);
    oc_free(st.big);
    oc_free(has_out);
    return OC_OK;
fail:
    oc_free(st.hist);
    oc_free(st.big);
    oc_free(has_out);
    oc_ds_info_deinit(info);
    return rc;
}

void oc_ds_info_deinit(struct oc_ds_info *info)
{
    if (!info)
        return;
    oc_free(info->class_count);
    info->class_count = NULL;
    oc_free(info->class_id);
    info->class_id = NULL;
}
