/*
 * builder.c — writes a new dataset directory atomically:
 *
 *   oc_ds_builder_new ──► stale "<out>.tmp-*" siblings of dead runs removed,
 *                        "<out>.tmp-<host>-<pid>-<nonce>-<seq>/" (oc_tmp_name)
 *                        created and registered (<out> must not exist)
 *   begin/end_array  ──► <tmp>/<name>.npy via the npy writer; size + CRC-32
 *                        recorded in the manifest's files table
 *   commit           ──► manifest checked, <tmp>/manifest.json written
 *                        atomically (last), rename(<tmp>, <out>), fsync parent
 *   free             ──► if not committed: rm -rf <tmp>
 *
 * A crash leaves at most a "<out>.tmp-..." directory, never a partial <out>;
 * an interrupted CLI removes it (registry, io.h) and kill -9's is removed by
 * the next builder of <out> (oc_tmp_clean_stale). oc_ds_builder_commit
 * checks only the manifest's consistency with the files written;
 * oc_ds_builder_commit_checked (importers) also runs oc_dataset_open's
 * validation on the temporary directory before the rename.
 *
 * Place in the data flow: dataset; importers, the generator and the edge
 * sorter write through it.
 * Thread-safety: a builder belongs to one thread.
 * Ownership: the builder owns its paths and manifest; writers it hands out
 * must be finished with _end_array (or aborted) before _free.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

struct oc_ds_builder {
    char *out;
    char *tmp;
    int committed;
    struct oc_manifest m;
};

static char *fmt_dup(struct oc_err *err, const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 32;
    char *p = oc_alloc(n, "dataset builder", err);
    if (p)
        snprintf(p, n, "%s%s", a, b);
    return p;
}

/* Removes "<out>.tmp-*" directories that dead runs left beside out (logged, never fatal). */
static void remove_stale(const char *out)
{
    char parent[4096];
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    size_t pl = slash ? (size_t)(slash - out) : 0;
    if (!*base || pl >= sizeof(parent))
        return;
    if (slash) {
        memcpy(parent, out, pl ? pl : 1);
        parent[pl ? pl : 1] = '\0';
    } else {
        snprintf(parent, sizeof(parent), ".");
    }
    oc_tmp_clean_stale(parent, base, NULL, NULL);
}

int oc_ds_builder_new(const char *out_dir, struct oc_ds_builder **out, struct oc_err *err)
{
    struct oc_ds_builder *b = NULL;
    char tmp[4096];
    int rc;
    char given_out[4096];
    *out = NULL;
    if ((rc = oc_out_dir_path(given_out, sizeof(given_out), out_dir, err)))
        return rc;
    out_dir = given_out; /* "out/" builds "out", never a temporary inside it */
    if (oc_path_exists(out_dir))
        return OC_ERR(err, OC_ERR_EXISTS, "%s: already exists (will not overwrite a dataset)",
                      out_dir);
    if (!(b = oc_calloc(1, sizeof(*b), "dataset builder", err)))
        return err ? err->status : OC_ERR_NOMEM;
    if ((rc = oc_tmp_name(tmp, sizeof(tmp), out_dir, err)))
        goto fail;
    if (!(b->out = fmt_dup(err, out_dir, "")) || !(b->tmp = fmt_dup(err, tmp, ""))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto fail;
    }
    remove_stale(b->out);
    if ((rc = oc_tmp_create(b->tmp, OC_TMP_DIR, err)) || (rc = oc_dir_mark(b->tmp, err)))
        goto fail;
    b->m.version = OC_FORMAT_VERSION;
    b->m.feat_dtype = OC_DTYPE_F32;
    b->m.index_dtype = OC_DTYPE_U32;
    const char *base = strrchr(b->out, '/');
    base = base ? base + 1 : b->out;
    snprintf(b->m.name, sizeof(b->m.name), "%s", *base ? base : "dataset");
    *out = b;
    return OC_OK;
fail:
    oc_ds_builder_free(b);
    return rc;
}

void oc_ds_builder_free(struct oc_ds_builder *b)
{
    if (!b)
        return;
    if (!b->committed && b->tmp && oc_path_exists(b->tmp)) {
        struct oc_err e;
        if (oc_rm_rf(b->tmp, &e) != OC_OK)
            oc_log(OC_LOG_WARN, "dataset builder: cannot remove %s: %s", b->tmp, e.msg);
    }
    if (b->tmp)
        oc_tmp_unregister(b->tmp);
    oc_free(b->out);
    oc_free(b->tmp);
    oc_free(b);
}

const char *oc_ds_builder_tmp_dir(const struct oc_ds_builder *b)
{
    return b->tmp;
}

struct oc_manifest *oc_ds_builder_manifest(struct oc_ds_builder *b)
{
    return &b->m;
}

int oc_ds_builder_begin_array(struct oc_ds_builder *b, enum oc_ds_file f, enum oc_dtype dtype,
                              unsigned ndim, const uint64_t *shape, struct oc_npy_writer **w,
                              struct oc_err *err)
{
    char path[4096];
    *w = NULL;
    if ((unsigned)f >= OC_DS_FILE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "dataset builder: invalid array %d", (int)f);
    if (b->committed)
        return OC_ERR(err, OC_ERR_ARG, "%s: builder already committed", b->out);
    int rc = oc_path_join(path, sizeof(path), b->tmp, oc_ds_file_name(f), err);
    if (rc)
        return rc;
    b->m.files[f].present = 0;
    return oc_npy_writer_open(path, dtype, ndim, shape, w, err);
}

int oc_ds_builder_end_array(struct oc_ds_builder *b, enum oc_ds_file f, struct oc_npy_writer *w,
                            struct oc_err *err)
{
    uint64_t shape[OC_NPY_MAX_DIMS], bytes;
    uint32_t crc;
    if ((unsigned)f >= OC_DS_FILE_COUNT) {
        oc_npy_writer_abort(w);
        return OC_ERR(err, OC_ERR_ARG, "dataset builder: invalid array %d", (int)f);
    }
    unsigned ndim = oc_npy_writer_shape(w, shape);
    int rc = oc_npy_writer_close(w, &bytes, &crc, err);
    if (rc)
        return rc;
    b->m.files[f].present = 1;
    b->m.files[f].bytes = bytes;
    b->m.files[f].crc32 = crc;
    /* Split lengths follow from the arrays written. */
    uint64_t len = ndim >= 1 ? shape[0] : 0;
    if (f == OC_DS_TRAIN_IDX)
        b->m.n_train = len;
    else if (f == OC_DS_VAL_IDX)
        b->m.n_val = len;
    else if (f == OC_DS_TEST_IDX)
        b->m.n_test = len;
    return OC_OK;
}

int oc_ds_builder_write_array(struct oc_ds_builder *b, enum oc_ds_file f, enum oc_dtype dtype,
                              uint64_t n, const void *data, struct oc_err *err)
{
    struct oc_npy_writer *w;
    size_t es = oc_dtype_size(dtype);
    if (es && n > SIZE_MAX / es)
        return OC_ERR(err, OC_ERR_ARG, "dataset builder: %s: %" PRIu64 " elements too many",
                      oc_ds_file_name(f), n);
    int rc = oc_ds_builder_begin_array(b, f, dtype, 1, &n, &w, err);
    if (rc)
        return rc;
    if (n && (rc = oc_npy_writer_append(w, data, (size_t)n * es, err))) {
        oc_npy_writer_abort(w);
        return rc;
    }
    return oc_ds_builder_end_array(b, f, w, err);
}

static int commit(struct oc_ds_builder *b, int checked, struct oc_err *err)
{
    char *text = NULL, path[4096];
    struct oc_manifest check;
    int rc;
    if (b->committed)
        return OC_ERR(err, OC_ERR_ARG, "%s: builder already committed", b->out);
    /*
     * A name from a directory or a source's metadata may hold control
     * characters; the manifest's may not: each becomes '_'.
     */
    for (char *c; (c = (char *)oc_manifest_name_ctl(b->m.name)) != NULL;) {
        if ((unsigned char)c[0] == 0xc2)
            memmove(c, c + 1, strlen(c)); /* C1: two bytes become one '_' */
        *c = '_';
    }
    if ((rc = oc_manifest_format(&b->m, &text, err)))
        return rc;
    /* The manifest must read back: catches missing arrays and bad counts now. */
    if ((rc = oc_manifest_parse(text, strlen(text), b->out, &check, err))) {
        if (err) {
            oc_err_prefix(err, "cannot commit");
            err->status = OC_ERR_ARG;
        }
        rc = OC_ERR_ARG;
        goto out;
    }
    if ((rc = oc_path_join(path, sizeof(path), b->tmp, "manifest.json", err)))
        goto out;
    if ((rc = oc_write_file_atomic(path, text, strlen(text), err)))
        goto out;
    if (checked) {
        /* The same validation as every later open, run before the dataset exists at out. */
        struct oc_dataset *ds = NULL;
        rc = oc_dataset_open(b->tmp, OC_DS_OPEN_SKIP_CHECKSUM, &ds, err);
        oc_dataset_free(ds);
        if (rc) {
            if (err)
                oc_err_prefix(err, "%s: the dataset would not open", b->out);
            goto out;
        }
    }
    if (oc_path_exists(b->out)) {
        rc = OC_ERR(err, OC_ERR_EXISTS, "%s: appeared while the dataset was being built", b->out);
        goto out;
    }
    /* renamed and unregistered at once (an interrupt removes the temporary or nothing); a
       rename whose directory fsync failed is taken back: a failure leaves nothing at out */
    oc_dir_unmark(b->tmp); /* the dataset is the user's; a crash from here on leaks the temporary */
    if ((rc = oc_tmp_commit(b->tmp, b->out, err)))
        goto out;
    b->committed = 1;
out:
    oc_free(text);
    return rc;
}

int oc_ds_builder_commit(struct oc_ds_builder *b, struct oc_err *err)
{
    return commit(b, 0, err);
}

int oc_ds_builder_commit_checked(struct oc_ds_builder *b, struct oc_err *err)
{
    return commit(b, 1, err);
}
