/*
 * api.c — the versioned C API (offcore.h) outside the loader: version,
 * status names, errors, datasets, import, generate and the strategy list.
 * Each function checks its arguments and struct sizes, calls the module
 * underneath and copies its error record into the caller's.
 *
 * Place in the data flow: api (top, beside cli) over dataset and store.
 * Thread-safety: as the functions it wraps; no state of its own.
 * Ownership: a struct offcore_dataset owns its oc_dataset; out arrays are the
 * caller's.
 */
#include <string.h>

#include "api/api_int.h"
#include "offcore/generate.h"
#include "offcore/import.h"
#include "offcore/store.h"

const char *offcore_version(void)
{
    return OFFCORE_VERSION;
}

uint32_t offcore_api_version(void)
{
    return OFFCORE_API_VERSION;
}

const char *offcore_status_name(int status)
{
    static const char *const names[] = {
        "OFFCORE_OK",
        "OFFCORE_ERR_NOMEM",
        "OFFCORE_ERR_BUDGET",
        "OFFCORE_ERR_IO",
        "OFFCORE_ERR_NOSPC",
        "OFFCORE_ERR_FORMAT",
        "OFFCORE_ERR_ARG",
        "OFFCORE_ERR_NOTFOUND",
        "OFFCORE_ERR_EXISTS",
        "OFFCORE_ERR_UNSUPPORTED",
        "OFFCORE_ERR_CANCELLED",
        "OFFCORE_ERR_INTERNAL",
        "OFFCORE_ERR_NUMERIC",
    };
    if (status == OFFCORE_DONE)
        return "OFFCORE_DONE";
    if (status > 0 || status <= -(int)(sizeof(names) / sizeof(names[0]))) /* no -INT_MIN */
        return "unknown status";
    return names[-status];
}

int api_err(struct offcore_error *out, const struct oc_err *e, int rc)
{
    if (!out || rc == OC_OK)
        return rc;
    out->status = rc;
    out->sys_errno = e->status == rc ? e->sys_errno : 0;
    snprintf(out->message, sizeof(out->message), "%s",
             e->status == rc && e->msg[0] ? e->msg : offcore_status_name(rc));
    return rc;
}

int api_check_size(uint32_t size, size_t want, const char *what, struct oc_err *e)
{
    if (size == want)
        return OC_OK;
    return OC_ERR(e, OC_ERR_ARG,
                  "%s: struct_size is %u but this library (API version %d) expects %zu: set it "
                  "with the matching *_init function or to sizeof() of the struct from its "
                  "offcore.h",
                  what, size, OFFCORE_API_VERSION, want);
}

int api_null(const char *fn, const char *arg, struct oc_err *e)
{
    return OC_ERR(e, OC_ERR_ARG, "%s: %s is NULL", fn, arg);
}

/* ---- datasets ------------------------------------------------------------ */

int offcore_dataset_open(const char *dir, struct offcore_dataset **out, struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!out)
        return api_err(err, &e, api_null("offcore_dataset_open", "out", &e));
    *out = NULL;
    if (!dir)
        return api_err(err, &e, api_null("offcore_dataset_open", "dir", &e));
    struct offcore_dataset *d = oc_calloc(1, sizeof(*d), "dataset handle", &e);
    if (!d)
        return api_err(err, &e, e.status);
    int rc = oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &d->ds, &e);
    if (rc) {
        oc_free(d);
        return api_err(err, &e, rc);
    }
    *out = d;
    return OC_OK;
}

void offcore_dataset_close(struct offcore_dataset *ds)
{
    if (!ds)
        return;
    oc_dataset_free(ds->ds);
    oc_free(ds);
}

void offcore_dataset_info_init(struct offcore_dataset_info *info)
{
    memset(info, 0, sizeof(*info));
    info->struct_size = sizeof(*info);
}

int offcore_dataset_info(const struct offcore_dataset *ds, struct offcore_dataset_info *info,
                         struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!ds || !info)
        return api_err(err, &e, api_null("offcore_dataset_info", ds ? "info" : "ds", &e));
    int rc = api_check_size(info->struct_size, sizeof(*info), "struct offcore_dataset_info", &e);
    if (rc)
        return api_err(err, &e, rc);
    const struct oc_manifest *m = oc_dataset_manifest(ds->ds);
    offcore_dataset_info_init(info);
    info->feat_dim = m->feat_dim;
    info->n_classes = m->n_classes;
    info->feat_bytes = (uint32_t)oc_dtype_size(m->feat_dtype);
    info->n_nodes = m->n_nodes;
    info->n_edges = m->n_edges;
    info->n_train = m->n_train;
    info->n_val = m->n_val;
    info->n_test = m->n_test;
    snprintf(info->name, sizeof(info->name), "%s", m->name);
    return OC_OK;
}

const char *offcore_dataset_dir(const struct offcore_dataset *ds)
{
    return ds ? oc_dataset_dir(ds->ds) : NULL;
}

/* Copies an array loaded by `load` (n_have entries of `size` bytes) into out[0 .. n). */
static int api_copy_out(void *out, uint64_t n, const void *src, uint64_t n_have, size_t size,
                        const char *what, struct oc_err *e)
{
    if (n < n_have)
        return OC_ERR(e, OC_ERR_ARG, "%s: the output holds %llu entries but %llu are needed", what,
                      (unsigned long long)n, (unsigned long long)n_have);
    if (n_have)
        memcpy(out, src, (size_t)n_have * size);
    return OC_OK;
}

int offcore_dataset_labels(const struct offcore_dataset *ds, int32_t *out, uint64_t n,
                           struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!ds || !out)
        return api_err(err, &e, api_null("offcore_dataset_labels", ds ? "out" : "ds", &e));
    int32_t *labels;
    int rc = oc_dataset_load_labels(ds->ds, &labels, &e);
    if (rc)
        return api_err(err, &e, rc);
    rc = api_copy_out(out, n, labels, oc_dataset_manifest(ds->ds)->n_nodes, sizeof(int32_t),
                      "offcore_dataset_labels", &e);
    oc_free(labels);
    return api_err(err, &e, rc);
}

int offcore_dataset_split(const struct offcore_dataset *ds, int32_t split, uint64_t *out,
                          uint64_t n, struct offcore_error *err)
{
    static const enum oc_ds_file files[] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    struct oc_err e = {0};
    if (!ds || !out)
        return api_err(err, &e, api_null("offcore_dataset_split", ds ? "out" : "ds", &e));
    if (split < 0 || split > OFFCORE_SPLIT_TEST)
        return api_err(err, &e,
                       OC_ERR(&e, OC_ERR_ARG,
                              "offcore_dataset_split: split %d is not train (0), val (1) or "
                              "test (2)",
                              split));
    uint64_t *ids, n_ids;
    int rc = oc_dataset_load_split(ds->ds, files[split], &ids, &n_ids, &e);
    if (rc)
        return api_err(err, &e, rc);
    rc = api_copy_out(out, n, ids, n_ids, sizeof(uint64_t), "offcore_dataset_split", &e);
    oc_free(ids);
    return api_err(err, &e, rc);
}

/* ---- import and generate ------------------------------------------------- */

void offcore_import_opts_init(struct offcore_import_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->format = "text";
}

int offcore_import(const char *src, const char *out, const struct offcore_import_opts *o,
                   struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!src || !out || !o)
        return api_err(err, &e, api_null("offcore_import", !src ? "src" : !out ? "out" : "o", &e));
    int rc = api_check_size(o->struct_size, sizeof(*o), "struct offcore_import_opts", &e);
    if (rc)
        return api_err(err, &e, rc);
    enum oc_import_kind kind;
    if (oc_import_kind_from_name(o->format ? o->format : "(null)", &kind) != OC_OK)
        return api_err(err, &e,
                       OC_ERR(&e, OC_ERR_ARG,
                              "offcore_import: format '%s' is not text, ogb, graphbolt or npy",
                              o->format ? o->format : "(null)"));
    struct oc_import_opts io;
    oc_import_opts_default(&io);
    io.directed = o->directed != 0;
    io.row_normalize = o->row_normalize != 0;
    io.feat_dtype = o->feat_f16 ? OC_DTYPE_F16 : OC_DTYPE_F32;
    io.name = o->name;
    if (o->mem_bytes)
        io.mem_bytes = o->mem_bytes;
    return api_err(err, &e, oc_import(kind, src, out, &io, NULL, &e));
}

void offcore_generate_opts_init(struct offcore_generate_opts *o)
{
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->feat_dim = g.feat_dim;
    o->n_classes = g.n_classes;
    o->n_threads = g.n_threads;
    o->n_nodes = g.n_nodes;
    o->seed = g.seed;
    o->avg_degree = g.avg_degree;
    o->homophily = g.homophily;
    o->power_law = g.power_law;
    o->feat_signal = g.feat_signal;
    o->train_frac = g.train_frac;
    o->val_frac = g.val_frac;
    o->test_frac = g.test_frac;
}

int offcore_generate(const char *out, const struct offcore_generate_opts *o,
                     struct offcore_error *err)
{
    struct oc_err e = {0};
    if (!out || !o)
        return api_err(err, &e, api_null("offcore_generate", out ? "o" : "out", &e));
    int rc = api_check_size(o->struct_size, sizeof(*o), "struct offcore_generate_opts", &e);
    if (rc)
        return api_err(err, &e, rc);
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.feat_dim = o->feat_dim;
    g.n_classes = o->n_classes;
    g.n_threads = o->n_threads;
    g.n_nodes = o->n_nodes;
    g.seed = o->seed;
    g.avg_degree = o->avg_degree;
    g.homophily = o->homophily;
    g.power_law = o->power_law;
    g.feat_signal = o->feat_signal;
    g.train_frac = o->train_frac;
    g.val_frac = o->val_frac;
    g.test_frac = o->test_frac;
    g.feat_dtype = o->feat_f16 ? OC_DTYPE_F16 : OC_DTYPE_F32;
    return api_err(err, &e, oc_generate(&g, out, NULL, &e));
}

/* ---- strategies -------------------------------------------------------- */

uint32_t offcore_n_strategies(void)
{
    return oc_store_n_strategies();
}

const char *offcore_strategy_name(uint32_t i)
{
    return i < oc_store_n_strategies() ? oc_store_strategy_name(i) : NULL;
}
