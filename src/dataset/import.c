/*
 * import.c — the importer entry points: kind names, default options, dispatch
 * to import_{text,ogb,graphbolt,npy}.c, and the small shared helpers of
 * import_int.h that are not streaming sinks: option checks, the manifest's
 * name/provenance, paths and sorted directory listings.
 *
 * Place in the data flow: dataset module; the CLI calls oc_import(), which
 * reads a source layout and writes a dataset directory through the builder.
 * Thread-safety: no global state; one import per call.
 * Ownership: options and paths are borrowed; listings are oc_alloc'd and
 * released with oc_imp_names_free.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset/import_int.h"

static const char *const kind_names[OC_IMPORT_KIND_COUNT] = {
    [OC_IMPORT_TEXT] = "text",
    [OC_IMPORT_OGB] = "ogb",
    [OC_IMPORT_GRAPHBOLT] = "graphbolt",
    [OC_IMPORT_NPY] = "npy",
};

int oc_import_kind_from_name(const char *name, enum oc_import_kind *kind)
{
    for (int k = 0; k < OC_IMPORT_KIND_COUNT; k++) {
        if (name && strcmp(name, kind_names[k]) == 0) {
            *kind = (enum oc_import_kind)k;
            return OC_OK;
        }
    }
    return OC_ERR_ARG;
}

const char *oc_import_kind_name(enum oc_import_kind kind)
{
    if ((unsigned)kind >= OC_IMPORT_KIND_COUNT)
        return "unknown";
    return kind_names[kind];
}

void oc_import_opts_default(struct oc_import_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->feat_dtype = OC_DTYPE_F32;
}

int oc_import(enum oc_import_kind kind, const char *src, const char *out,
              const struct oc_import_opts *o, struct oc_progress *progress, struct oc_err *err)
{
    if (o && o->split_index > 0 && kind != OC_IMPORT_TEXT)
        return OC_ERR(err, OC_ERR_ARG,
                      "import %s: --split chooses a text dataset's role-form split file",
                      oc_import_kind_name(kind));
    if (o && o->split_name && kind != OC_IMPORT_OGB)
        return OC_ERR(err, OC_ERR_ARG, "import %s: --ogb-split chooses an OGB split folder",
                      oc_import_kind_name(kind));
    int rc;
    switch (kind) {
    case OC_IMPORT_TEXT:
        rc = oc_import_text(src, out, o, progress, err);
        break;
    case OC_IMPORT_OGB:
        rc = oc_import_ogb(src, out, o, progress, err);
        break;
    case OC_IMPORT_GRAPHBOLT:
        rc = oc_import_graphbolt(src, out, o, progress, err);
        break;
    case OC_IMPORT_NPY:
        rc = oc_import_npy(src, out, o, progress, err);
        break;
    default:
        return OC_ERR(err, OC_ERR_ARG, "unknown import kind %d", (int)kind);
    }
    oc_progress_finish(progress); /* the last phase's final line, before the caller's summary */
    return rc;
}

int oc_imp_check_opts(const struct oc_import_opts *o, struct oc_err *err)
{
    if (!o)
        return OC_ERR(err, OC_ERR_ARG, "import: options are required (oc_import_opts_default)");
    if (o->feat_dtype != OC_DTYPE_F32 && o->feat_dtype != OC_DTYPE_F16)
        return OC_ERR(err, OC_ERR_ARG, "import: feature dtype must be f32 or f16, not %s",
                      oc_dtype_name(o->feat_dtype));
    if (o->split_index < 0)
        return OC_ERR(err, OC_ERR_ARG, "import: split index %d is negative", o->split_index);
    if (o->name && (!o->name[0] || strlen(o->name) >= sizeof(((struct oc_manifest *)0)->name)))
        return OC_ERR(err, OC_ERR_ARG, "import: dataset name must have 1 to %zu characters",
                      sizeof(((struct oc_manifest *)0)->name) - 1);
    if (o->name && oc_manifest_name_ctl(o->name))
        return OC_ERR(err, OC_ERR_ARG, "import: dataset name holds a control character");
    return OC_OK;
}

void oc_imp_basename(const char *path, char *buf, size_t n)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t k = len - start;
    if (k == 0 || (k == 1 && path[start] == '.') || (k == 1 && path[start] == '/')) {
        snprintf(buf, n, "dataset");
        return;
    }
    if (k >= n)
        k = n - 1;
    memcpy(buf, path + start, k);
    buf[k] = '\0';
}

/* Appends printf output to buf at *pos, stopping silently at the end. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t n, size_t *pos,
                                                         const char *fmt, ...)
{
    if (*pos >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *pos, n - *pos, fmt, ap);
    va_end(ap);
    if (k > 0)
        *pos += (size_t)k;
}

void oc_imp_manifest_init(struct oc_manifest *m, enum oc_import_kind kind, const char *src,
                          const struct oc_import_opts *o, const char *fallback_name)
{
    snprintf(m->name, sizeof(m->name), "%s", o->name ? o->name : fallback_name);
    m->feat_dtype = o->feat_dtype;
    m->directed = o->directed ? 1 : 0;
    size_t pos = 0, n = sizeof(m->provenance);
    append(m->provenance, n, &pos, "offcore import %s %s", oc_import_kind_name(kind), src);
    if (o->directed)
        append(m->provenance, n, &pos, " --directed");
    if (o->keep_duplicates)
        append(m->provenance, n, &pos, " --keep-duplicates");
    if (o->remove_self_loops)
        append(m->provenance, n, &pos, " --remove-self-loops");
    if (o->feat_dtype != OC_DTYPE_F32)
        append(m->provenance, n, &pos, " --dtype %s", oc_dtype_name(o->feat_dtype));
    if (o->row_normalize)
        append(m->provenance, n, &pos, " --row-normalize");
    if (o->split_index > 0)
        append(m->provenance, n, &pos, " --split %d", o->split_index);
    if (o->split_name)
        append(m->provenance, n, &pos, " --ogb-split %s", o->split_name);
    if (o->name)
        append(m->provenance, n, &pos, " --name %s", o->name);
    if (o->allow_nonfinite)
        append(m->provenance, n, &pos, " --allow-nonfinite");
}

int oc_imp_path(char *buf, const char *dir, const char *rel, struct oc_err *err)
{
    return oc_path_join(buf, OC_IMP_PATH_MAX, dir, rel, err);
}

int oc_imp_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int oc_imp_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Natural order: runs of digits compare by value, the rest bytewise. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la]))
                la++;
            while (isdigit((unsigned char)b[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c)
                return c;
            a += la;
            b += lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

static int names_cmp(const void *x, const void *y)
{
    const char *a = *(const char *const *)x, *b = *(const char *const *)y;
    int c = natural_cmp(a, b);
    return c ? c : strcmp(a, b);
}

void oc_imp_names_free(char **names, size_t n)
{
    if (!names)
        return;
    for (size_t i = 0; i < n; i++)
        oc_free(names[i]);
    oc_free(names);
}

int oc_imp_list_dir(const char *dir, const char *prefix, const char *suffix, int want_dirs,
                    char ***names, size_t *n, struct oc_err *err)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR)
            return OC_OK;
        int e = errno;
        return OC_ERR_ERRNO(err, oc_status_from_errno(e), e, "%s: cannot list directory: %s", dir,
                            strerror(e));
    }
    char **v = NULL;
    size_t cnt = 0;
    uint64_t cap = 0;
    size_t lp = strlen(prefix), ls = strlen(suffix);
    char path[OC_IMP_PATH_MAX];
    int rc = OC_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        size_t ln = strlen(nm);
        if (nm[0] == '.' || ln < lp + ls || strncmp(nm, prefix, lp) != 0 ||
            strcmp(nm + ln - ls, suffix) != 0)
            continue;
        rc = oc_imp_path(path, dir, nm, err);
        if (rc)
            goto fail;
        if (want_dirs ? !oc_imp_is_dir(path) : !oc_imp_is_file(path))
            continue;
        if ((rc = oc_grow(&v, &cap, cnt + 1, sizeof(*v), 16, "import: directory listing", err)))
            goto fail;
        v[cnt] = oc_strdup(nm, "import: directory listing", err);
        if (!v[cnt]) {
            rc = err->status;
            goto fail;
        }
        cnt++;
    }
    closedir(d);
    if (cnt > 1)
        qsort(v, cnt, sizeof(*v), names_cmp);
    *names = v;
    *n = cnt;
    return OC_OK;
fail:
    closedir(d);
    oc_imp_names_free(v, cnt);
    return rc;
}

int oc_imp_gate(const struct oc_ds_size *s, const char *out, const struct oc_import_opts *o,
                struct oc_err *err)
{
    return oc_ds_size_check(s, out, o->max_bytes, "--max-size", err);
}

int oc_imp_unvouched(const struct oc_import_opts *o, struct oc_err *err, const char *fmt, ...)
{
    if (o->max_bytes)
        return OC_OK; /* the user set a ceiling: oc_imp_gate holds the size to it */
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return OC_ERR(err, OC_ERR_FORMAT, "%s (give --max-size SIZE to accept it up to SIZE)", msg);
}

int oc_imp_count_lines(const char *path, int skip_blank, uint64_t *n, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    uint64_t cnt = 0;
    for (;;) {
        char *line;
        size_t len;
        if (skip_blank)
            rc = oc_imp_next_data_line(r, 0, &line, err);
        else
            rc = oc_line_reader_next(r, &line, &len, err);
        if (rc || !line)
            break;
        cnt++;
    }
    oc_line_reader_free(r);
    if (rc == OC_OK)
        *n = cnt;
    return rc;
}
