/*
 * kg_write.c — writes a KG dataset directory atomically and builds a graph's
 * augmented CSR (inverse and identity facts, as RED-GNN's load_graph does):
 *
 *   oc_kg_writer_new ──► "OUT.tmp-<host>-<pid>-<nonce>-<seq>/" (registered)
 *   oc_kg_writer_array ──► <tmp>/<graph>_<array>.npy (npy writer: size, CRC)
 *   oc_kg_writer_commit ──► oc_kg_validate(<tmp>) ──► kg.json (atomic, last)
 *                           ──► rename(<tmp>, OUT), fsync parent
 *   free without commit ──► rm -rf <tmp>
 *
 * Place in the data flow: kg; the importer and the generator write through it.
 * Thread-safety: a writer belongs to one thread.
 * Ownership: the writer owns its paths; arrays are borrowed for the call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg/kg_int.h"
#include "offcore/io.h"

struct oc_kg_writer {
    char out[4096];
    char tmp[4096];
    int committed;
    unsigned written; /* bit g * ARRAY_COUNT + a */
    struct oc_kg_manifest m;
};

enum oc_dtype oc_kg_array_dtype(enum oc_kg_array a)
{
    return a == OC_KG_INDPTR ? OC_DTYPE_U64 : OC_DTYPE_U32;
}

unsigned oc_kg_array_cols(enum oc_kg_array a)
{
    return a == OC_KG_QVALID || a == OC_KG_QTEST ? 3 : 1;
}

uint64_t oc_kg_array_rows(const struct oc_kg_manifest *m, enum oc_kg_graph g, enum oc_kg_array a)
{
    const struct oc_kg_graph_info *gi = &m->graph[g];
    switch (a) {
    case OC_KG_INDPTR:
        return gi->n_entities + 1;
    case OC_KG_REL:
    case OC_KG_TAIL:
        return gi->n_facts;
    case OC_KG_QVALID:
        return gi->n_queries[OC_KG_VALID];
    case OC_KG_QTEST:
    case OC_KG_ARRAY_COUNT:
        break;
    }
    return gi->n_queries[OC_KG_TEST];
}

int oc_kg_writer_new(const char *out_dir, struct oc_kg_writer **out, struct oc_err *err)
{
    char given_out[4096];
    *out = NULL;
    int rc = oc_out_dir_path(given_out, sizeof(given_out), out_dir, err);
    if (rc)
        return rc;
    out_dir = given_out; /* "out/" builds "out", never a temporary inside it */
    if (oc_path_exists(out_dir))
        return OC_ERR(err, OC_ERR_EXISTS, "%s: already exists (will not overwrite a dataset)",
                      out_dir);
    struct oc_kg_writer *w = oc_calloc(1, sizeof(*w), "kg writer", err);
    if (!w)
        return err->status;
    rc = strlen(out_dir) < sizeof(w->out)
             ? OC_OK
             : OC_ERR(err, OC_ERR_ARG, "kg writer: output path longer than %zu bytes",
                      sizeof(w->out) - 1);
    if (!rc) {
        snprintf(w->out, sizeof(w->out), "%s", out_dir);
        rc = oc_tmp_name(w->tmp, sizeof(w->tmp), out_dir, err);
    }
    if (rc) {
        oc_free(w);
        return rc;
    }
    const char *slash = strrchr(out_dir, '/');
    char parent[4096];
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - out_dir) : 1,
             slash ? out_dir : ".");
    oc_tmp_clean_stale(slash == out_dir ? "/" : parent, slash ? slash + 1 : out_dir, NULL, NULL);
    if ((rc = oc_tmp_create(w->tmp, OC_TMP_DIR, err)) || (rc = oc_dir_mark(w->tmp, err))) {
        oc_kg_writer_free(w);
        return rc;
    }
    w->m.version = OC_KG_FORMAT_VERSION;
    oc_utf8_copy(w->m.name, sizeof(w->m.name), slash ? slash + 1 : out_dir);
    *out = w;
    return OC_OK;
}

void oc_kg_writer_free(struct oc_kg_writer *w)
{
    if (!w)
        return;
    if (!w->committed && oc_path_exists(w->tmp)) {
        struct oc_err e;
        if (oc_rm_rf(w->tmp, &e) != OC_OK)
            oc_log(OC_LOG_WARN, "kg writer: cannot remove %s: %s", w->tmp, e.msg);
    }
    oc_tmp_unregister(w->tmp);
    oc_free(w);
}

struct oc_kg_manifest *oc_kg_writer_manifest(struct oc_kg_writer *w)
{
    return &w->m;
}

int oc_kg_writer_begin(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                       uint64_t n_rows, struct oc_npy_writer **nw, struct oc_err *err)
{
    char name[64], path[4200];
    oc_kg_file_name(g, a, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", w->tmp, name);
    unsigned cols = oc_kg_array_cols(a);
    uint64_t shape[2] = {n_rows, cols};
    return oc_npy_writer_open(path, oc_kg_array_dtype(a), cols == 1 ? 1 : 2, shape, nw, err);
}

int oc_kg_writer_end(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                     struct oc_npy_writer *nw, struct oc_err *err)
{
    OC_KG_TRY(oc_npy_writer_close(nw, &w->m.files[g][a].bytes, &w->m.files[g][a].crc32, err));
    w->written |= 1u << (g * OC_KG_ARRAY_COUNT + a);
    return OC_OK;
}

int oc_kg_writer_array(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                       uint64_t n_rows, const void *data, struct oc_err *err)
{
    struct oc_npy_writer *nw = NULL;
    OC_KG_TRY(oc_kg_writer_begin(w, g, a, n_rows, &nw, err));
    size_t bytes =
        (size_t)(n_rows * oc_kg_array_cols(a) * (oc_kg_array_dtype(a) == OC_DTYPE_U64 ? 8 : 4));
    int rc = bytes ? oc_npy_writer_append(nw, data, bytes, err) : OC_OK;
    if (rc) {
        oc_npy_writer_abort(nw);
        return rc;
    }
    return oc_kg_writer_end(w, g, a, nw, err);
}

int oc_kg_writer_commit(struct oc_kg_writer *w, struct oc_err *err)
{
    if (w->written != (1u << (OC_KG_GRAPH_COUNT * OC_KG_ARRAY_COUNT)) - 1)
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: kg writer: not every array was written", w->out);
    OC_KG_TRY(oc_kg_validate(w->tmp, &w->m, 0, err));
    char *text = NULL, path[4200];
    OC_KG_TRY(oc_kg_manifest_format(&w->m, &text, err));
    snprintf(path, sizeof(path), "%s/kg.json", w->tmp);
    int rc = oc_write_file_atomic(path, text, strlen(text), err);
    oc_free(text);
    if (rc)
        return rc;
    if (oc_path_exists(w->out))
        return OC_ERR(err, OC_ERR_EXISTS, "%s: appeared while the dataset was being built", w->out);
    /* renamed and unregistered at once; a failed directory fsync's rename taken back */
    oc_dir_unmark(w->tmp); /* the dataset is the user's */
    if ((rc = oc_tmp_commit(w->tmp, w->out, err)))
        return rc;
    w->committed = 1;
    return OC_OK;
}

/* ---- augmented CSR ------------------------------------------------------ */

static int fact_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

int oc_kg_build_csr(const uint32_t *triples, uint64_t n, uint64_t n_entities, uint32_t n_relations,
                    uint64_t **indptr_out, uint32_t **rel_out, uint32_t **tail_out,
                    struct oc_err *err)
{
    *indptr_out = NULL;
    *rel_out = *tail_out = NULL;
    uint64_t n_facts = 2 * n + n_entities;
    uint64_t *indptr = oc_calloc(n_entities + 1, sizeof(uint64_t), "kg csr", err);
    uint32_t *pairs = oc_alloc((size_t)(n_facts * 2 * sizeof(uint32_t)) + 8, "kg csr", err);
    uint32_t *rel = oc_alloc((size_t)(n_facts * sizeof(uint32_t)) + 4, "kg csr", err);
    uint32_t *tail = oc_alloc((size_t)(n_facts * sizeof(uint32_t)) + 4, "kg csr", err);
    if (!indptr || !pairs || !rel || !tail) {
        oc_free(indptr);
        oc_free(pairs);
        oc_free(rel);
        oc_free(tail);
        return err->status;
    }
    for (uint64_t i = 0; i < n; i++) {
        indptr[triples[3 * i] + 1]++;
        indptr[triples[3 * i + 2] + 1]++;
    }
    for (uint64_t e = 0; e < n_entities; e++)
        indptr[e + 1] += 1 + indptr[e];
    /* (rel, tail) pairs per head, placed through a cursor per head */
    uint64_t *cur = oc_alloc((size_t)(n_entities * sizeof(uint64_t)) + 8, "kg csr", err);
    if (!cur) {
        oc_free(indptr);
        oc_free(pairs);
        oc_free(rel);
        oc_free(tail);
        return err->status;
    }
    memcpy(cur, indptr, (size_t)(n_entities * sizeof(uint64_t)));
    for (uint64_t i = 0; i < n; i++) {
        uint32_t h = triples[3 * i], r = triples[3 * i + 1], t = triples[3 * i + 2];
        uint64_t p = cur[h]++;
        pairs[2 * p] = r;
        pairs[2 * p + 1] = t;
        p = cur[t]++;
        pairs[2 * p] = r + n_relations;
        pairs[2 * p + 1] = h;
    }
    for (uint64_t e = 0; e < n_entities; e++) {
        uint64_t p = cur[e]++;
        pairs[2 * p] = 2 * n_relations;
        pairs[2 * p + 1] = (uint32_t)e;
    }
    oc_free(cur);
    for (uint64_t e = 0; e < n_entities; e++)
        qsort(pairs + 2 * indptr[e], (size_t)(indptr[e + 1] - indptr[e]), 2 * sizeof(uint32_t),
              fact_cmp);
    for (uint64_t f = 0; f < n_facts; f++) {
        rel[f] = pairs[2 * f];
        tail[f] = pairs[2 * f + 1];
    }
    oc_free(pairs);
    *indptr_out = indptr;
    *rel_out = rel;
    *tail_out = tail;
    return OC_OK;
}
