/*
 * kg_open.c — opens and validates a KG dataset directory (docs/FORMAT.md
 * section 9) and loads its query arrays.
 *
 *   kg.json ──► parse (strict) ──► per file: regular file, exact size,
 *   4096-byte header with dtype and shape ──► per graph: indptr, rel and
 *   tail read once, in step, in windows (each window's ids checked and added
 *   to its file's CRC as it is read; each head's facts checked in order) ──►
 *   the query arrays read the same way ──► CRCs compared
 *
 * Place in the data flow: kg; kg-train, the extractor and the bench open
 * datasets through it, and the writer validates before it commits.
 * Thread-safety: an opened KG is immutable and may be read by any thread.
 * Ownership: struct oc_kg owns its paths; loaded arrays are the caller's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kg/kg_int.h"
#include "offcore/io.h"

struct oc_kg {
    char dir[4096];
    char paths[OC_KG_GRAPH_COUNT][OC_KG_ARRAY_COUNT][4200];
    struct oc_kg_manifest m;
};

/* What the content check of one array needs. */
struct kg_check {
    const char *path;
    enum oc_kg_array a;
    uint64_t n_entities, n_facts;
    uint32_t n_rel, n_rel_aug;
    uint64_t prev; /* last indptr value */
};

static int check_elems(struct kg_check *c, const uint8_t *p, uint64_t first, uint64_t n,
                       struct oc_err *err)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t pos = first + i;
        if (c->a == OC_KG_INDPTR) {
            uint64_t v = oc_get_le64(p + 8 * i);
            if ((pos == 0 && v != 0) || v < c->prev || v > c->n_facts)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "%s: value %" PRIu64 " at position %" PRIu64
                              " breaks indptr (starts at 0, non-decreasing, at most %" PRIu64 ")",
                              c->path, v, pos, c->n_facts);
            if (pos == c->n_entities && v != c->n_facts)
                return OC_ERR(err, OC_ERR_FORMAT,
                              "%s: last value %" PRIu64 " is not n_facts %" PRIu64, c->path, v,
                              c->n_facts);
            c->prev = v;
            continue;
        }
        uint32_t v = oc_get_le32(p + 4 * i);
        uint64_t lim = c->n_entities;
        const char *what = "entity id";
        if (c->a == OC_KG_REL) {
            lim = c->n_rel_aug;
            what = "relation id";
        } else if (c->a != OC_KG_TAIL && pos % 3 == 1) {
            lim = c->n_rel;
            what = "relation id";
        }
        if (v >= lim)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: %s %u at row %" PRIu64 " out of range (must be < %" PRIu64 ")",
                          c->path, what, v,
                          c->a == OC_KG_QVALID || c->a == OC_KG_QTEST ? pos / 3 : pos, lim);
    }
    return OC_OK;
}

/*
 * Opens one array and checks its header (4096 bytes, dtype, shape) and its
 * size against its shape and kg.json; *f is open on OC_OK.
 */
static int open_array(const char *path, const struct oc_kg_manifest *m, enum oc_kg_graph g,
                      enum oc_kg_array a, struct oc_file **f, uint64_t *size, struct oc_err *err)
{
    struct oc_npy_header h;
    OC_KG_TRY(oc_npy_read_header(path, &h, err));
    OC_KG_TRY(oc_npy_require_c_order(&h, path, err));
    uint64_t rows = oc_kg_array_rows(m, g, a);
    unsigned cols = oc_kg_array_cols(a);
    enum oc_dtype dt = oc_kg_array_dtype(a);
    if (h.data_offset != OC_NPY_HEADER_BYTES)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: header is %" PRIu64 " bytes, expected %u", path,
                      h.data_offset, OC_NPY_HEADER_BYTES);
    if (h.dtype != dt || h.is_bool)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: dtype is %s, expected %s", path,
                      oc_dtype_descr(h.dtype), oc_dtype_descr(dt));
    if (h.ndim != (cols == 1 ? 1u : 2u) || h.shape[0] != rows || (cols > 1 && h.shape[1] != cols))
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: shape does not match kg.json (expected (%" PRIu64 "%s))", path, rows,
                      cols > 1 ? ", 3" : ",");
    uint64_t want = OC_NPY_HEADER_BYTES + rows * cols * (dt == OC_DTYPE_U64 ? 8 : 4);
    OC_KG_TRY(oc_file_open(path, OC_FILE_READ, f, err));
    int rc = oc_file_size(*f, size, err);
    if (!rc && *size != want)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: file is %" PRIu64 " bytes, its shape needs exactly %" PRIu64, path, *size,
                    want);
    if (!rc && *size != m->files[g][a].bytes)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: truncated: file is %" PRIu64 " bytes, kg.json says %" PRIu64, path, *size,
                    m->files[g][a].bytes);
    if (rc) {
        oc_file_close(*f, NULL);
        *f = NULL;
    }
    return rc;
}

/* ---- arrays read once, forward, in windows ----------------------------------------- */

#define FACT_WINDOW 8192u                     /* elements per window of a sequential array reader */
#define SEQ_BUF     ((size_t)FACT_WINDOW * 8) /* a window of u64 */

/*
 * One array read forward in contiguous windows (positions only increase by
 * one), each window's elements checked and its bytes added to the CRC as it
 * is read, after the header's: reading every element once reads the file once.
 */
struct seq_array {
    struct oc_file *f;
    const char *path;
    enum oc_kg_graph g;
    enum oc_kg_array arr;
    size_t es;
    uint64_t rows, first, n; /* rows: elements (a query array's: 3 per query) */
    uint8_t *buf;            /* SEQ_BUF bytes */
    struct kg_check c;
    uint32_t crc;
};

static int seq_open(struct seq_array *a, const char *path, const struct oc_kg_manifest *m,
                    enum oc_kg_graph g, enum oc_kg_array arr, uint8_t *buf, struct oc_err *err)
{
    memset(a, 0, sizeof(*a));
    a->path = path;
    a->g = g;
    a->arr = arr;
    a->es = oc_kg_array_dtype(arr) == OC_DTYPE_U64 ? 8 : 4;
    a->rows = oc_kg_array_rows(m, g, arr) * oc_kg_array_cols(arr);
    a->buf = buf;
    a->c = (struct kg_check){
        path, arr, m->graph[g].n_entities, m->graph[g].n_facts, m->n_relations, oc_kg_n_rel_aug(m),
        0};
    uint64_t size = 0;
    OC_KG_TRY(open_array(path, m, g, arr, &a->f, &size, err));
    int rc = oc_file_pread(a->f, buf, OC_NPY_HEADER_BYTES, 0, err);
    a->crc = oc_crc32(0, buf, OC_NPY_HEADER_BYTES);
    return rc;
}

static int seq_get(struct seq_array *a, uint64_t i, uint64_t *v, struct oc_err *err)
{
    if (i >= a->first + a->n) { /* i == first + n: the next window */
        uint64_t n = a->rows - i < FACT_WINDOW ? a->rows - i : FACT_WINDOW;
        OC_KG_TRY(
            oc_file_pread(a->f, a->buf, (size_t)(n * a->es), OC_NPY_HEADER_BYTES + i * a->es, err));
        a->crc = oc_crc32(a->crc, a->buf, n * a->es);
        OC_KG_TRY(check_elems(&a->c, a->buf, i, n, err));
        a->first = i;
        a->n = n;
    }
    const uint8_t *p = a->buf + (i - a->first) * a->es;
    *v = a->es == 8 ? oc_get_le64(p) : oc_get_le32(p);
    return OC_OK;
}

/* After every element was read: its CRC against kg.json (when check_crc). */
static int seq_done(const struct seq_array *a, const struct oc_kg_manifest *m, int check_crc,
                    struct oc_err *err)
{
    if (a->rows && a->first + a->n != a->rows)
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: %" PRIu64 " of %" PRIu64 " elements checked",
                      a->path, a->first + a->n, a->rows);
    uint32_t want = m->files[a->g][a->arr].crc32;
    if (check_crc && a->crc != want)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: checksum mismatch: crc32 %08x, kg.json says %08x",
                      a->path, a->crc, want);
    return OC_OK;
}

/* A query array: every element checked (entities < N, relations < R), then its CRC. */
static int check_queries(const char *path, const struct oc_kg_manifest *m, enum oc_kg_graph g,
                         enum oc_kg_array arr, int check_crc, uint8_t *buf, struct oc_err *err)
{
    struct seq_array a;
    int rc = seq_open(&a, path, m, g, arr, buf, err);
    uint64_t v;
    for (uint64_t i = 0; !rc && i < a.rows; i++)
        rc = seq_get(&a, i, &v, err);
    if (!rc)
        rc = seq_done(&a, m, check_crc, err);
    if (a.f)
        oc_file_close(a.f, NULL);
    return rc;
}

/*
 * indptr, rel and tail of graph g, read once in step: every element checked
 * (indptr monotone from 0 to F, ids in range), each head's facts sorted by
 * (relation, tail) and ending with its identity fact (e, 2R, e), as FORMAT.md
 * section 9 says and extraction relies on (an entity reached at one layer is
 * at the next through it), and the three CRCs compared at the end. Each
 * array's elements are checked as its window is read, before any is used.
 */
static int check_facts(const char *dir, const struct oc_kg_manifest *m, enum oc_kg_graph g,
                       int check_crc, uint8_t *buf, struct oc_err *err)
{
    char name[64], paths[3][4200];
    const enum oc_kg_array arr[3] = {OC_KG_INDPTR, OC_KG_REL, OC_KG_TAIL};
    struct seq_array a[3];
    uint64_t n_ent = m->graph[g].n_entities;
    uint32_t idd = oc_kg_n_rel_aug(m) - 1;
    int rc = OC_OK, opened = 0;
    for (; opened < 3 && !rc; opened++) {
        oc_kg_file_name(g, arr[opened], name, sizeof(name));
        snprintf(paths[opened], sizeof(paths[opened]), "%s/%s", dir, name);
        rc = seq_open(&a[opened], paths[opened], m, g, arr[opened], buf + opened * SEQ_BUF, err);
    }
    if (rc && !a[opened - 1].f)
        opened--; /* the one that failed holds no file */
    uint64_t lo = 0, hi = 0;
    if (!rc)
        rc = seq_get(&a[0], 0, &lo, err);
    for (uint64_t e = 0; e < n_ent && !rc; e++, lo = hi) {
        if ((rc = seq_get(&a[0], e + 1, &hi, err)))
            break;
        uint64_t prel = 0, ptail = 0, r = 0, t = 0;
        for (uint64_t i = lo; i < hi && !rc; i++, prel = r, ptail = t) {
            if ((rc = seq_get(&a[1], i, &r, err)) || (rc = seq_get(&a[2], i, &t, err)))
                break;
            if (i > lo && (r < prel || (r == prel && t < ptail)))
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s, %s: fact %" PRIu64 " of head %" PRIu64
                            " is out of order (a head's facts are sorted by relation, then tail)",
                            paths[1], paths[2], i, e);
        }
        if (!rc && (hi == lo || r != idd || t != e))
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s, %s: head %" PRIu64 " lacks its identity fact (%" PRIu64
                        ", %u, %" PRIu64 ") as its last fact (position %" PRIu64 ")",
                        paths[1], paths[2], e, e, idd, e, hi ? hi - 1 : 0);
    }
    /* indptr ran from 0 to F, so every element of the three was read, in order */
    for (int i = 0; i < 3 && !rc; i++)
        rc = seq_done(&a[i], m, check_crc, err);
    for (int i = 0; i < opened; i++)
        oc_file_close(a[i].f, NULL);
    return rc;
}

int oc_kg_validate(const char *dir, const struct oc_kg_manifest *m, int check_crc,
                   struct oc_err *err)
{
    uint8_t *buf = oc_alloc(3 * SEQ_BUF, "kg validation buffer", err); /* 3 arrays in step */
    if (!buf)
        return err->status;
    int rc = OC_OK;
    for (int g = 0; g < OC_KG_GRAPH_COUNT && !rc; g++) {
        rc = check_facts(dir, m, (enum oc_kg_graph)g, check_crc, buf, err);
        const enum oc_kg_array queries[2] = {OC_KG_QVALID, OC_KG_QTEST};
        for (int q = 0; q < 2 && !rc; q++) {
            char name[64], path[4200];
            oc_kg_file_name((enum oc_kg_graph)g, queries[q], name, sizeof(name));
            snprintf(path, sizeof(path), "%s/%s", dir, name);
            rc = check_queries(path, m, (enum oc_kg_graph)g, queries[q], check_crc, buf, err);
        }
    }
    oc_free(buf);
    return rc;
}

int oc_kg_read_manifest(const char *dir, struct oc_kg_manifest *m, struct oc_err *err)
{
    char path[4200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/kg.json", dir);
    int rc = oc_path_exists(path)
                 ? OC_OK
                 : OC_ERR(err, OC_ERR_NOTFOUND, "%s: not a KG dataset directory (no kg.json)", dir);
    if (!rc)
        rc = oc_read_file(path, 1 << 20, &text, &len, err);
    if (!rc)
        rc = oc_kg_manifest_parse(text, len, path, m, err);
    oc_free(text);
    return rc;
}

int oc_kg_open(const char *dir, struct oc_kg **out, struct oc_err *err)
{
    *out = NULL;
    struct oc_kg *kg = oc_calloc(1, sizeof(*kg), "kg dataset", err);
    if (!kg)
        return err->status;
    snprintf(kg->dir, sizeof(kg->dir), "%s", dir);
    int rc = oc_kg_read_manifest(dir, &kg->m, err);
    if (!rc)
        rc = oc_kg_validate(dir, &kg->m, 1, err);
    if (rc) {
        oc_free(kg);
        return rc;
    }
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++) {
        for (int a = 0; a < OC_KG_ARRAY_COUNT; a++) {
            char name[64];
            oc_kg_file_name((enum oc_kg_graph)g, (enum oc_kg_array)a, name, sizeof(name));
            snprintf(kg->paths[g][a], sizeof(kg->paths[g][a]), "%s/%s", dir, name);
        }
    }
    *out = kg;
    return OC_OK;
}

void oc_kg_free(struct oc_kg *kg)
{
    oc_free(kg);
}

const struct oc_kg_manifest *oc_kg_manifest(const struct oc_kg *kg)
{
    return &kg->m;
}

const char *oc_kg_dir(const struct oc_kg *kg)
{
    return kg->dir;
}

const char *oc_kg_path(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_array a)
{
    return kg->paths[g][a];
}

int oc_kg_load_queries(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_split s,
                       uint32_t **triples, uint64_t *n, struct oc_err *err)
{
    uint64_t rows = 0, cols = 0;
    void *data = NULL;
    *triples = NULL;
    *n = 0;
    OC_KG_TRY(oc_npy_load_as(kg->paths[g][s == OC_KG_VALID ? OC_KG_QVALID : OC_KG_QTEST],
                             OC_DTYPE_U32, &data, &rows, &cols, err));
    *triples = data;
    *n = rows;
    return OC_OK;
}
