/*
 * kg_import.c — `offcore import kg`: the GraIL layout of an inductive KG
 * split (X_vK/{train,valid,test}.txt and X_vK_ind/{...}, one
 * "head<TAB>relation<TAB>tail" per line) into a KG dataset:
 *
 *   X_vK/train.txt, valid.txt, test.txt ──► ids (entities per graph, relations
 *   shared) ──► X_vK_ind/... (relations must be known) ──► augmented CSR per
 *   graph (oc_kg_build_csr) ──► oc_kg_writer (validated, atomic)
 *
 * Lines are streamed through the line reader; what is held is the id maps
 * and the triples as u32 (12 bytes each), the CSR built from them.
 *
 * Place in the data flow: kg (cli import kg ──► here ──► kg_write).
 * Thread-safety: one call per thread.
 * Ownership: everything allocated here is released before returning.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kg/kg_int.h"
#include "kg/kg_names.h"
#include "offcore/io.h"

struct triples {
    uint32_t *v;
    uint64_t n, cap;
};

static int triples_push(struct triples *t, const uint32_t x[3], struct oc_err *err)
{
    OC_KG_TRY(
        oc_grow(&t->v, &t->cap, t->n + 1, 3 * sizeof(uint32_t), 4096, "kg import triples", err));
    memcpy(t->v + 3 * t->n++, x, 3 * sizeof(uint32_t));
    return OC_OK;
}

struct graph_in {
    struct oc_kg_names ents;
    struct triples split[3]; /* train, valid, test */
};

static const char *const split_files[3] = {"train.txt", "valid.txt", "test.txt"};

/* One file: every line "h\tr\tt" (no empty fields, no fourth field; spaces around a
   field dropped). */
static int read_file(const char *path, struct graph_in *gi, int s, struct oc_kg_names *rels,
                     int rels_fixed, struct oc_progress *bar, struct oc_err *err)
{
    struct oc_line_reader *lr = NULL;
    OC_KG_TRY(oc_line_reader_open(path, &lr, err));
    int rc = OC_OK;
    if (bar) {
        char label[96];
        const char *dir_end = strrchr(path, '/'), *dir = dir_end;
        while (dir && dir > path && dir[-1] != '/')
            dir--; /* "fb237_v1_ind/train.txt": the split's folder tells the graphs apart */
        snprintf(label, sizeof(label), "import kg: %.80s", dir ? dir : path);
        oc_progress_phase(bar, label, 0, "triples");
    }
    for (;;) {
        char *line = NULL;
        size_t len = 0;
        if ((rc = oc_line_reader_next(lr, &line, &len, err)) || !line)
            break;
        uint64_t lineno = oc_line_reader_lineno(lr);
        const char *f[3] = {line, NULL, NULL};
        size_t fl[3] = {0, 0, 0};
        unsigned n_tabs = 0;
        for (size_t i = 0; i < len; i++) {
            if (line[i] != '\t')
                continue;
            if (++n_tabs <= 2)
                f[n_tabs] = line + i + 1;
        }
        for (unsigned k = 0; k < 3 && n_tabs == 2; k++) {
            fl[k] = (size_t)((k < 2 ? f[k + 1] - 1 : line + len) - f[k]);
            /* spaces around a name are not part of it (the reference strips lines) */
            while (fl[k] && f[k][0] == ' ')
                f[k]++, fl[k]--;
            while (fl[k] && f[k][fl[k] - 1] == ' ')
                fl[k]--;
        }
        if (n_tabs != 2 || !fl[0] || !fl[1] || !fl[2]) {
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s:%" PRIu64 ": malformed line: expected head<TAB>relation<TAB>tail "
                        "(%s)",
                        path, lineno,
                        n_tabs < 2   ? "missing column"
                        : n_tabs > 2 ? "extra column"
                                     : "empty field");
            break;
        }
        uint32_t x[3];
        if (rels_fixed) {
            if (!oc_kg_names_find(rels, f[1], fl[1], &x[1])) {
                rc = OC_ERR(err, OC_ERR_FORMAT,
                            "%s:%" PRIu64 ": unknown relation '%.*s' (not in the training graph)",
                            path, lineno, (int)(fl[1] > 200 ? 200 : fl[1]), f[1]);
                break;
            }
        } else if ((rc = oc_kg_names_get(rels, f[1], fl[1], &x[1], err))) {
            break;
        }
        if ((rc = oc_kg_names_get(&gi->ents, f[0], fl[0], &x[0], err)) ||
            (rc = oc_kg_names_get(&gi->ents, f[2], fl[2], &x[2], err)) ||
            (rc = triples_push(&gi->split[s], x, err)))
            break;
        oc_progress_add(bar, 1);
    }
    if (!rc && gi->split[s].n == 0)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: empty file (no triples)", path);
    oc_line_reader_free(lr);
    return rc;
}

static int write_graph(struct oc_kg_writer *w, enum oc_kg_graph g, struct graph_in *gi,
                       uint32_t n_rel, struct oc_err *err)
{
    struct oc_kg_manifest *m = oc_kg_writer_manifest(w);
    struct oc_kg_graph_info *info = &m->graph[g];
    info->n_entities = gi->ents.n;
    info->n_triples = gi->split[0].n;
    info->n_facts = 2 * info->n_triples + info->n_entities;
    info->n_queries[OC_KG_VALID] = gi->split[1].n;
    info->n_queries[OC_KG_TEST] = gi->split[2].n;
    uint64_t *indptr = NULL;
    uint32_t *rel = NULL, *tail = NULL;
    OC_KG_TRY(oc_kg_build_csr(gi->split[0].v, gi->split[0].n, gi->ents.n, n_rel, &indptr, &rel,
                              &tail, err));
    int rc = oc_kg_writer_array(w, g, OC_KG_INDPTR, info->n_entities + 1, indptr, err);
    if (!rc)
        rc = oc_kg_writer_array(w, g, OC_KG_REL, info->n_facts, rel, err);
    if (!rc)
        rc = oc_kg_writer_array(w, g, OC_KG_TAIL, info->n_facts, tail, err);
    if (!rc)
        rc = oc_kg_writer_array(w, g, OC_KG_QVALID, gi->split[1].n, gi->split[1].v, err);
    if (!rc)
        rc = oc_kg_writer_array(w, g, OC_KG_QTEST, gi->split[2].n, gi->split[2].v, err);
    oc_free(indptr);
    oc_free(rel);
    oc_free(tail);
    return rc;
}

int oc_kg_import_grail(const char *src, const char *out, struct oc_progress *bar,
                       struct oc_err *err)
{
    struct oc_kg_names rels;
    struct graph_in gin[OC_KG_GRAPH_COUNT];
    struct oc_kg_writer *w = NULL;
    char dirs[OC_KG_GRAPH_COUNT][4096], path[4200];
    size_t sl = strlen(src);
    while (sl > 1 && src[sl - 1] == '/')
        sl--;
    snprintf(dirs[OC_KG_TRAIN], sizeof(dirs[0]), "%.*s", (int)sl, src);
    snprintf(dirs[OC_KG_IND], sizeof(dirs[0]), "%.*s_ind", (int)sl, src);
    oc_kg_names_init(&rels);
    memset(gin, 0, sizeof(gin));
    int rc = OC_OK;
    for (int g = 0; g < OC_KG_GRAPH_COUNT && !rc; g++) {
        oc_kg_names_init(&gin[g].ents);
        for (int s = 0; s < 3 && !rc; s++) {
            snprintf(path, sizeof(path), "%.4000s/%s", dirs[g], split_files[s]);
            rc = read_file(path, &gin[g], s, &rels, g == OC_KG_IND, bar, err);
        }
    }
    if (!rc)
        rc = oc_kg_writer_new(out, &w, err);
    if (!rc) {
        struct oc_kg_manifest *m = oc_kg_writer_manifest(w);
        m->n_relations = (uint32_t)rels.n;
        const char *base = strrchr(dirs[OC_KG_TRAIN], '/');
        snprintf(m->name, sizeof(m->name), "%.127s", base ? base + 1 : dirs[OC_KG_TRAIN]);
        for (char *c = m->name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '_';
        snprintf(m->provenance, sizeof(m->provenance), "offcore import kg %.900s", src);
    }
    for (int g = 0; g < OC_KG_GRAPH_COUNT && !rc; g++)
        rc = write_graph(w, (enum oc_kg_graph)g, &gin[g], (uint32_t)rels.n, err);
    if (!rc)
        rc = oc_kg_writer_commit(w, err);
    oc_kg_writer_free(w);
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++) {
        oc_kg_names_deinit(&gin[g].ents);
        for (int s = 0; s < 3; s++)
            oc_free(gin[g].split[s].v);
    }
    oc_kg_names_deinit(&rels);
    return rc;
}
