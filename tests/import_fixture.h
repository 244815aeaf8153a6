/*
 * import_fixture.h — helpers for the importer tests: write small source
 * fixtures (text and gzip files, hand-made .npy files with ordinary
 * numpy-sized headers, C or Fortran order), import one with the leak check,
 * and read an imported dataset back whole (topology as CSC, features widened
 * to f32, labels, splits).
 *
 * Place in the data flow: tests only (test_import_*.c).
 * Thread-safety: none; one test at a time.
 * Ownership: struct fx_ds owns its arrays (fx_ds_free).
 */
#ifndef OFFCORE_TEST_IMPORT_FIXTURE_H
#define OFFCORE_TEST_IMPORT_FIXTURE_H

#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/import.h"
#include "offcore/io.h"

/* snprintf into a char array, exiting when the text does not fit. */
#define FX_PATH(buf, ...)                                                    \
    do {                                                                     \
        if (snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf)) { \
            fprintf(stderr, "path too long\n");                              \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static inline void fx_path(char *buf, size_t n, const char *dir, const char *rel)
{
    if (snprintf(buf, n, "%s/%s", dir, rel) >= (int)n) {
        fprintf(stderr, "path too long\n");
        exit(1);
    }
}

/* Creates parent directories of dir/rel. */
static inline void fx_mkparent(const char *dir, const char *rel)
{
    char p[4096];
    fx_path(p, sizeof(p), dir, rel);
    char *slash = strrchr(p, '/');
    if (slash) {
        *slash = '\0';
        struct oc_err err;
        if (oc_mkdir_p(p, &err) != OC_OK) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
    }
}

static inline void fx_write(const char *dir, const char *rel, const char *text)
{
    char p[4096];
    fx_mkparent(dir, rel);
    fx_path(p, sizeof(p), dir, rel);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(p);
        exit(1);
    }
}

/* A five-node text dataset (2 features, 2 classes, every split file) in dir. */
static inline void fx_write_text5(const char *dir)
{
    fx_write(dir, "meta.txt", "num_nodes 5\nnum_features 2\nnum_classes 2\n");
    fx_write(dir, "edges.txt", "0 1\n1 2\n3 4\n");
    fx_write(dir, "features.txt", "0 0 1\n2 1 0.5\n4 0 2\n");
    fx_write(dir, "labels.txt", "0\n1\n0\n1\n0\n");
    fx_write(dir, "train_idx.txt", "0\n1\n");
    fx_write(dir, "val_idx.txt", "2\n3\n");
    fx_write(dir, "test_idx.txt", "4\n");
}

static inline void fx_gz_write(const char *dir, const char *rel, const char *text)
{
    char p[4096];
    fx_mkparent(dir, rel);
    fx_path(p, sizeof(p), dir, rel);
    gzFile g = gzopen(p, "wb");
    if (!g || (*text && gzprintf(g, "%s", text) <= 0) || gzclose(g) != Z_OK) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(1);
    }
}

static inline const char *fx_descr(enum oc_dtype t)
{
    return oc_dtype_descr(t);
}

/* A version-1.0 .npy with numpy's own padding (header to a multiple of 64 bytes). */
static inline void fx_write_npy(const char *dir, const char *rel, enum oc_dtype t, unsigned ndim,
                                const uint64_t *shape, const void *data, int fortran)
{
    char dict[512], shp[128] = "";
    size_t pos = 0;
    uint64_t n = 1;
    for (unsigned i = 0; i < ndim; i++) {
        pos +=
            (size_t)snprintf(shp + pos, sizeof(shp) - pos, "%llu, ", (unsigned long long)shape[i]);
        n *= shape[i];
    }
    if (ndim >= 2)
        shp[pos - 2] = '\0'; /* "(2, 5)" rather than "(2, 5, )" */
    int k = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }",
                     fx_descr(t), fortran ? "True" : "False", shp);
    size_t total = 10 + (size_t)k + 1;
    size_t padded = (total + 63) / 64 * 64;
    memset(dict + k, ' ', padded - total);
    dict[k + (int)(padded - total)] = '\n';
    uint16_t hlen = (uint16_t)(padded - 10);
    char p[4096];
    fx_mkparent(dir, rel);
    fx_path(p, sizeof(p), dir, rel);
    FILE *f = fopen(p, "wb");
    if (!f) {
        perror(p);
        exit(1);
    }
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hlen, 2, 1, f);
    fwrite(dict, 1, hlen, f);
    if (n)
        fwrite(data, oc_dtype_size(t), n, f);
    if (fclose(f) != 0) {
        perror(p);
        exit(1);
    }
}

/* A dataset read back whole. */
struct fx_ds {
    struct oc_manifest m;
    uint64_t *indptr;
    uint64_t *indices;
    float *feat;     /* n_nodes x feat_dim, widened from f16 when needed */
    int32_t *labels; /* NULL when n_classes == 0 */
    uint64_t *split[3];
    uint64_t n_split[3];
};

static inline void fx_ds_free(struct fx_ds *d)
{
    oc_free(d->indptr);
    oc_free(d->indices);
    free(d->feat);
    oc_free(d->labels);
    for (int i = 0; i < 3; i++)
        oc_free(d->split[i]);
    memset(d, 0, sizeof(*d));
}

/* Opens (full validation) and loads everything; returns the open/load status. */
static inline int fx_ds_load(const char *dir, struct fx_ds *d, struct oc_err *err)
{
    struct oc_dataset *ds = NULL;
    memset(d, 0, sizeof(*d));
    int rc = oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &ds, err);
    if (rc)
        return rc;
    d->m = *oc_dataset_manifest(ds);
    void *ind = NULL;
    rc = oc_dataset_load_indptr(ds, &d->indptr, err);
    if (!rc)
        rc = oc_dataset_load_indices(ds, OC_DTYPE_U64, &ind, err);
    d->indices = ind;
    if (!rc && d->m.n_classes)
        rc = oc_dataset_load_labels(ds, &d->labels, err);
    for (int i = 0; !rc && i < 3; i++)
        rc = oc_dataset_load_split(ds, (enum oc_ds_file)(OC_DS_TRAIN_IDX + i), &d->split[i],
                                   &d->n_split[i], err);
    if (!rc && d->m.feat_dim) {
        size_t n = (size_t)(d->m.n_nodes * d->m.feat_dim);
        size_t es = oc_dtype_size(d->m.feat_dtype);
        d->feat = malloc(n * sizeof(float) + 1);
        void *raw = malloc(n * es + 1);
        FILE *f = fopen(oc_dataset_path(ds, OC_DS_FEATURES), "rb");
        if (!d->feat || !raw || !f ||
            fseek(f, (long)oc_dataset_data_offset(ds, OC_DS_FEATURES), SEEK_SET) != 0 ||
            fread(raw, es, n, f) != n) {
            rc = OC_ERR(err, OC_ERR_IO, "cannot read back features");
        } else {
            for (size_t i = 0; i < n; i++) {
                if (es == 2) {
                    uint16_t h;
                    memcpy(&h, (uint8_t *)raw + 2 * i, 2);
                    d->feat[i] = oc_f16_to_f32(h);
                } else {
                    memcpy(&d->feat[i], (uint8_t *)raw + 4 * i, 4);
                }
            }
        }
        if (f)
            fclose(f);
        free(raw);
    }
    oc_dataset_free(ds);
    if (rc)
        fx_ds_free(d);
    return rc;
}

/* Imports src into out (must succeed and leak nothing), then loads it into d. */
static inline void fx_import_ok(enum oc_import_kind kind, const char *src, const char *out,
                                const struct oc_import_opts *o, struct fx_ds *d)
{
    struct oc_err err;
    uint64_t live = oc_mem_n_live();
    memset(d, 0, sizeof(*d));
    OC_CHECK_OK(oc_import(kind, src, out, o, NULL, &err), &err);
    OC_CHECK(oc_mem_n_live() == live);
    OC_CHECK_OK(fx_ds_load(out, d, &err), &err);
}

/* Whether the edge u -> v is present (CSC: u among the in-neighbors of v). */
static inline int fx_has_edge(const struct fx_ds *d, uint64_t u, uint64_t v)
{
    for (uint64_t i = d->indptr[v]; i < d->indptr[v + 1]; i++)
        if (d->indices[i] == u)
            return 1;
    return 0;
}

static inline uint64_t fx_count_edge(const struct fx_ds *d, uint64_t u, uint64_t v)
{
    uint64_t c = 0;
    for (uint64_t i = d->indptr[v]; i < d->indptr[v + 1]; i++)
        c += d->indices[i] == u;
    return c;
}

/* Whether out exists, or any "<out>.tmp-*" is left behind. */
static inline int fx_output_left(const char *out)
{
    char pat[4096];
    if (oc_path_exists(out))
        return 1;
    FX_PATH(pat, "%s.tmp-*", out);
    glob_t g;
    int found = glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

#endif
