/*
 * manifest.c — manifest.json of a dataset directory (docs/FORMAT.md), parsed
 * and written with cJSON. Parsing is strict: the format name and version are
 * checked first ("unknown format version 3 (this build reads 1 and 2)"), then every
 * required key (missing ones named), types, integer ranges (counts are JSON
 * integers below 2^53, since cJSON holds numbers as doubles), unknown or
 * duplicate keys, and the consistency of the files table with the counts.
 * cJSON is lenient where JSON is not (it takes "010000", and "\u0000" cuts a
 * string short), so a scan of the raw text (strict_scan) also checks that
 * every number is a plain integer and no string hides a NUL or raw control
 * character, naming the key path; the name may hold no control character.
 *
 * Place in the data flow: dataset; dataset_open.c reads it, builder.c writes
 * it last when committing a dataset.
 * Thread-safety: reentrant (cJSON keeps no state between calls here).
 * Ownership: oc_manifest_format returns an oc_alloc'd string.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "offcore/dataset.h"

static const char *const ds_file_names[OC_DS_FILE_COUNT] = {
    [OC_DS_INDPTR] = "indptr.npy",       [OC_DS_INDICES] = "indices.npy",
    [OC_DS_FEATURES] = "features.npy",   [OC_DS_LABELS] = "labels.npy",
    [OC_DS_TRAIN_IDX] = "train_idx.npy", [OC_DS_VAL_IDX] = "val_idx.npy",
    [OC_DS_TEST_IDX] = "test_idx.npy",   [OC_DS_FEATURE_ROWS] = "feature_rows.npy",
};

const char *oc_ds_file_name(enum oc_ds_file f)
{
    if ((unsigned)f >= OC_DS_FILE_COUNT)
        return "?";
    return ds_file_names[f];
}

#define MAX_EXACT_INT 9007199254740992.0 /* 2^53 */

static const char *const top_keys[] = {
    "format",    "version",    "name",        "n_nodes",  "n_edges", "feat_dim",
    "n_classes", "feat_dtype", "index_dtype", "directed", "n_train", "n_val",
    "n_test",    "files",      "provenance",  "layout",
};

#define LAYOUT_MAX 15 /* bytes of a layout name: [a-z0-9-], at least one */

/* ---- parsing ------------------------------------------------------------- */

struct mparse {
    const cJSON *root;
    const char *what;
    struct oc_err *err;
};

static const cJSON *need(struct mparse *mp, const cJSON *obj, const char *key, const char *where,
                         int *rc)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it)
        *rc =
            OC_ERR(mp->err, OC_ERR_FORMAT, "%s: missing required key '%s%s'", mp->what, where, key);
    return it;
}

static int get_uint(struct mparse *mp, const cJSON *obj, const char *key, const char *where,
                    uint64_t max, uint64_t *out)
{
    int rc = OC_OK;
    const cJSON *it = need(mp, obj, key, where, &rc);
    if (!it)
        return rc;
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || !isfinite(d) || d != floor(d))
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: '%s%s' must be an integer", mp->what, where,
                      key);
    if (d < 0)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: '%s%s' must not be negative (%.0f)", mp->what,
                      where, key, d);
    if (d >= MAX_EXACT_INT || d > (double)max)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: '%s%s' too large (%.0f, limit %" PRIu64 ")",
                      mp->what, where, key, d,
                      max < (uint64_t)MAX_EXACT_INT ? max : (uint64_t)MAX_EXACT_INT - 1);
    *out = (uint64_t)d;
    return OC_OK;
}

const char *oc_manifest_name_ctl(const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return (const char *)p;
    }
    return NULL;
}

/* ---- strict scan of the raw text --------------------------------------- */

#define SCAN_DEPTH 8

/* The key path of the value at depth d ("files.indptr.npy.bytes") into buf. */
static const char *scan_path(const char *const *key, const size_t *key_len, int d, char *buf,
                             size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 1; i <= d && i < SCAN_DEPTH; i++) {
        if (!key[i])
            continue;
        int w = snprintf(buf + pos, n - pos, "%s%.*s", pos ? "." : "", (int)key_len[i], key[i]);
        if (w < 0 || (size_t)w >= n - pos)
            break;
        pos += (size_t)w;
    }
    return pos ? buf : "(top level)";
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Walks the (already parsed, NUL-terminated) JSON text token by token: every
 * number must match -?(0|[1-9][0-9]*), every string be free of "\u0000" and
 * raw bytes below 0x20. Errors name the key path of the offending value.
 */
static int strict_scan(struct mparse *mp, const char *t, size_t len)
{
    const char *key[SCAN_DEPTH] = {NULL};
    size_t key_len[SCAN_DEPTH] = {0};
    char path[256];
    int depth = 0;

    for (size_t i = 0; i < len;) {
        char c = t[i];
        if (c == '{' || c == '[') {
            depth++;
            if (depth < SCAN_DEPTH)
                key[depth] = NULL;
            i++;
        } else if (c == '}' || c == ']') {
            depth--;
            i++;
        } else if (c == '"') {
            size_t start = ++i;
            int nul = 0, raw = 0;
            while (i < len && t[i] != '"') {
                if ((unsigned char)t[i] < 0x20)
                    raw = 1;
                if (t[i] == '\\' && i + 1 < len) {
                    if (t[i + 1] == 'u' && i + 5 < len) {
                        int v = 0;
                        for (int k = 2; k < 6; k++) {
                            int h = hexval(t[i + k]);
                            v = v * 16 + (h < 0 ? 16 : h);
                        }
                        nul |= v == 0;
                        i += 6;
                        continue;
                    }
                    i += 2;
                    continue;
                }
                i++;
            }
            size_t end = i < len ? i : len;
            i++;
            size_t j = i;
            while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r'))
                j++;
            int is_key = j < len && t[j] == ':';
            if (nul || raw) {
                const char *p =
                    scan_path(key, key_len, is_key ? depth - 1 : depth, path, sizeof(path));
                return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: %s'%s' holds %s", mp->what,
                              is_key ? "a key in " : "", p,
                              nul ? "a NUL character (\\u0000)"
                                  : "a raw control character (must be escaped)");
            }
            if (is_key && depth > 0 && depth < SCAN_DEPTH) {
                key[depth] = t + start;
                key_len[depth] = end - start;
            }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = i;
            while (i < len && strchr("0123456789+-.eE", t[i]) && t[i] != '\0')
                i++;
            size_t p0 = start + (t[start] == '-');
            int ok = p0 < i && (t[p0] == '0' ? p0 + 1 == i : 1);
            for (size_t k = p0; ok && k < i; k++)
                ok = t[k] >= '0' && t[k] <= '9';
            if (!ok) {
                const char *p = scan_path(key, key_len, depth, path, sizeof(path));
                return OC_ERR(mp->err, OC_ERR_FORMAT,
                              "%s: '%s' must be an integer written without leading zeros, "
                              "fraction or exponent (got '%.*s')",
                              mp->what, p, (int)(i - start < 40 ? i - start : 40), t + start);
            }
        } else {
            i++;
        }
    }
    return OC_OK;
}

static int get_string(struct mparse *mp, const cJSON *obj, const char *key, char *out, size_t cap)
{
    int rc = OC_OK;
    const cJSON *it = need(mp, obj, key, "", &rc);
    if (!it)
        return rc;
    if (!cJSON_IsString(it) || !it->valuestring)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: '%s' must be a string", mp->what, key);
    size_t n = strlen(it->valuestring);
    if (n >= cap)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: '%s' too long (%zu bytes, at most %zu)",
                      mp->what, key, n, cap - 1);
    memcpy(out, it->valuestring, n + 1);
    return OC_OK;
}

static int get_dtype(struct mparse *mp, const char *key, enum oc_dtype *t)
{
    char s[64];
    int rc = get_string(mp, mp->root, key, s, sizeof(s));
    if (rc)
        return rc;
    /* Only our short names: the manifest is written by us. */
    for (int i = 0; i < OC_DTYPE_COUNT; i++) {
        if (strcmp(s, oc_dtype_name((enum oc_dtype)i)) == 0) {
            *t = (enum oc_dtype)i;
            return OC_OK;
        }
    }
    return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: unknown dtype '%s' in '%s'", mp->what, s, key);
}

/* Rejects duplicate keys (cJSON keeps both) and, if `allowed` is given, unknown ones. */
static int check_keys(struct mparse *mp, const cJSON *obj, const char *const *allowed,
                      size_t n_allowed, const char *where)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        if (!a->string)
            return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: object member without a key", mp->what);
        for (const cJSON *b = a->next; b; b = b->next) {
            if (b->string && strcmp(a->string, b->string) == 0)
                return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: duplicate key '%s%s'", mp->what, where,
                              a->string);
        }
        if (!allowed)
            continue;
        size_t i = 0;
        while (i < n_allowed && strcmp(a->string, allowed[i]) != 0)
            i++;
        if (i == n_allowed)
            return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: unknown key '%s%.64s'", mp->what, where,
                          a->string);
    }
    return OC_OK;
}

static int parse_crc(struct mparse *mp, const cJSON *it, const char *fname, uint32_t *crc)
{
    const char *s = cJSON_IsString(it) ? it->valuestring : NULL;
    uint32_t x = 0;
    if (!s || strlen(s) != 8)
        goto bad;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            goto bad;
        x = x << 4 | d;
    }
    *crc = x;
    return OC_OK;
bad:
    return OC_ERR(mp->err, OC_ERR_FORMAT,
                  "%s: files.%s.crc32 must be a string of 8 hex digits (\"1a2b3c4d\")", mp->what,
                  fname);
}

static int parse_files(struct mparse *mp, const cJSON *files, struct oc_manifest *m)
{
    int rc;
    if (!cJSON_IsObject(files))
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: 'files' must be an object", mp->what);
    if ((rc =
             check_keys(mp, files, (const char *const *)ds_file_names, OC_DS_FILE_COUNT, "files.")))
        return rc;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(files, ds_file_names[f]);
        if (!e)
            continue;
        char where[64];
        snprintf(where, sizeof(where), "files.%s.", ds_file_names[f]);
        static const char *const entry_keys[] = {"bytes", "crc32"};
        if (!cJSON_IsObject(e))
            return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: 'files.%s' must be an object", mp->what,
                          ds_file_names[f]);
        if ((rc = check_keys(mp, e, entry_keys, 2, where)))
            return rc;
        struct oc_ds_file_info *fi = &m->files[f];
        if ((rc = get_uint(mp, e, "bytes", where, UINT64_MAX, &fi->bytes)))
            return rc;
        const cJSON *c = need(mp, e, "crc32", where, &rc);
        if (!c)
            return rc;
        if ((rc = parse_crc(mp, c, ds_file_names[f], &fi->crc32)))
            return rc;
        if (fi->bytes < OC_NPY_HEADER_BYTES)
            return OC_ERR(mp->err, OC_ERR_FORMAT,
                          "%s: files.%s.bytes is %" PRIu64 ", less than the %u-byte npy header",
                          mp->what, ds_file_names[f], fi->bytes, OC_NPY_HEADER_BYTES);
        fi->present = 1;
    }
    return OC_OK;
}

/* Which files must (and may) be present given the counts. */
static int check_consistency(struct mparse *mp, const struct oc_manifest *m)
{
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        int want = 1;
        if (f == OC_DS_FEATURES)
            want = m->feat_dim > 0;
        else if (f == OC_DS_LABELS)
            want = m->n_classes > 0;
        else if (f == OC_DS_FEATURE_ROWS)
            want = m->layout[0] != '\0';
        if (want && !m->files[f].present)
            return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: files table lacks %s%s", mp->what,
                          ds_file_names[f],
                          f == OC_DS_FEATURES       ? " (feat_dim > 0)"
                          : f == OC_DS_LABELS       ? " (n_classes > 0)"
                          : f == OC_DS_FEATURE_ROWS ? " (a layout is named)"
                                                    : "");
        if (!want && m->files[f].present)
            return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: files table lists %s but %s", mp->what,
                          ds_file_names[f],
                          f == OC_DS_FEATURES ? "feat_dim is 0"
                          : f == OC_DS_LABELS ? "n_classes is 0"
                                              : "no layout is named (version 1)");
    }
    if (m->layout[0] && m->feat_dim == 0)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: layout '%s' named but feat_dim is 0", mp->what,
                      m->layout);
    if (m->feat_dtype != OC_DTYPE_F32 && m->feat_dtype != OC_DTYPE_F16)
        return OC_ERR(mp->err, OC_ERR_FORMAT, "%s: feat_dtype must be f32 or f16, not %s", mp->what,
                      oc_dtype_name(m->feat_dtype));
    enum oc_dtype want_idx = oc_ds_index_dtype_for(m->n_nodes);
    if (m->index_dtype != want_idx)
        return OC_ERR(mp->err, OC_ERR_FORMAT,
                      "%s: index_dtype must be %s for n_nodes %" PRIu64 ", not %s", mp->what,
                      oc_dtype_name(want_idx), m->n_nodes, oc_dtype_name(m->index_dtype));
    const uint64_t split_n[3] = {m->n_train, m->n_val, m->n_test};
    const char *split_key[3] = {"n_train", "n_val", "n_test"};
    for (int i = 0; i < 3; i++) {
        if (split_n[i] > m->n_nodes)
            return OC_ERR(mp->err, OC_ERR_FORMAT,
                          "%s: %s (%" PRIu64 ") exceeds n_nodes (%" PRIu64 ")", mp->what,
                          split_key[i], split_n[i], m->n_nodes);
    }
    return OC_OK;
}

/* A layout name: [a-z0-9-], 1 to LAYOUT_MAX bytes. */
static int layout_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > LAYOUT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '-'))
            return 0;
    return 1;
}

/* "layout": required in version 2, refused in version 1. */
static int parse_layout(struct mparse *mp, const cJSON *root, struct oc_manifest *m)
{
    int has = cJSON_GetObjectItemCaseSensitive(root, "layout") != NULL;
    if (m->version == OC_FORMAT_VERSION) {
        if (has)
            return OC_ERR(mp->err, OC_ERR_FORMAT,
                          "%s: 'layout' is a version 2 key (this manifest says version 1)",
                          mp->what);
        return OC_OK;
    }
    char name[64];
    int rc = get_string(mp, root, "layout", name, sizeof(name));
    if (rc)
        return rc;
    if (!layout_name_ok(name))
        return OC_ERR(mp->err, OC_ERR_FORMAT,
                      "%s: 'layout' must be 1 to %d characters of a-z, 0-9 and '-', not '%s'",
                      mp->what, LAYOUT_MAX, name);
    memcpy(m->layout, name, strlen(name) + 1);
    return OC_OK;
}

int oc_manifest_parse(const char *text, size_t len, const char *what, struct oc_manifest *m,
                      struct oc_err *err)
{
    struct mparse mp = {NULL, what ? what : "manifest.json", err};
    cJSON *root = NULL;
    char *copy = NULL;
    int rc;
    uint64_t v;
    memset(m, 0, sizeof(*m));
    if (memchr(text, '\0', len))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: contains a NUL byte", mp.what);
    /* cJSON wants a terminated string; give it one rather than trust its bounds. */
    if (!(copy = oc_alloc(len + 1, "manifest", err)))
        return err ? err->status : OC_ERR_NOMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    const char *end = NULL;
    root = cJSON_ParseWithOpts(copy, &end, 1);
    if (!root) {
        size_t off = end && end >= copy && end <= copy + len ? (size_t)(end - copy) : 0;
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: invalid JSON near byte %zu", mp.what, off);
        goto out;
    }
    mp.root = root;
    if (!cJSON_IsObject(root)) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: not a JSON object", mp.what);
        goto out;
    }
    if ((rc = check_keys(&mp, root, NULL, 0, "")))
        goto out;

    /* Format name and version first: a newer manifest may differ in anything else. */
    char fmt[64];
    if ((rc = get_string(&mp, root, "format", fmt, sizeof(fmt))))
        goto out;
    if (strcmp(fmt, OC_FORMAT_NAME) != 0) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: unknown format name '%s' (this build reads %s)",
                    mp.what, fmt, OC_FORMAT_NAME);
        goto out;
    }
    const cJSON *ver = need(&mp, root, "version", "", &rc);
    if (!ver)
        goto out;
    if (!cJSON_IsNumber(ver) || !isfinite(ver->valuedouble) ||
        ver->valuedouble != floor(ver->valuedouble) || ver->valuedouble < -1e9 ||
        ver->valuedouble > 1e9) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: 'version' must be an integer", mp.what);
        goto out;
    }
    m->version = (int)ver->valuedouble;
    if (m->version != OC_FORMAT_VERSION && m->version != OC_FORMAT_VERSION_2) {
        rc =
            OC_ERR(err, OC_ERR_FORMAT, "%s: unknown format version %d (this build reads %d and %d)",
                   mp.what, m->version, OC_FORMAT_VERSION, OC_FORMAT_VERSION_2);
        goto out;
    }
    if ((rc = strict_scan(&mp, copy, len)))
        goto out;
    if ((rc = check_keys(&mp, root, top_keys, sizeof(top_keys) / sizeof(top_keys[0]), "")))
        goto out;

    if ((rc = get_string(&mp, root, "name", m->name, sizeof(m->name))))
        goto out;
    const char *ctl = oc_manifest_name_ctl(m->name);
    if (ctl) {
        unsigned code = (unsigned char)ctl[0] == 0xc2 ? (unsigned char)ctl[1] : (unsigned char)*ctl;
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: 'name' holds a control character (U+%04X) at byte %zu; names are "
                    "printed on terminals",
                    mp.what, code, (size_t)(ctl - m->name));
        goto out;
    }
    if ((rc = get_uint(&mp, root, "n_nodes", "", UINT64_MAX, &m->n_nodes)))
        goto out;
    if ((rc = get_uint(&mp, root, "n_edges", "", UINT64_MAX, &m->n_edges)))
        goto out;
    /* feat_dim and n_classes: the model's limits (2^30), so that every command (info, train,
       the Python package) refuses what training would, before sizing anything by them */
    if ((rc = get_uint(&mp, root, "feat_dim", "", OC_MANIFEST_MAX_DIM, &v)))
        goto out;
    m->feat_dim = (uint32_t)v;
    if ((rc = get_uint(&mp, root, "n_classes", "", OC_MANIFEST_MAX_DIM, &v)))
        goto out;
    m->n_classes = (uint32_t)v;
    if ((rc = get_dtype(&mp, "feat_dtype", &m->feat_dtype)))
        goto out;
    if ((rc = get_dtype(&mp, "index_dtype", &m->index_dtype)))
        goto out;
    const cJSON *dir = need(&mp, root, "directed", "", &rc);
    if (!dir)
        goto out;
    if (!cJSON_IsBool(dir)) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: 'directed' must be true or false", mp.what);
        goto out;
    }
    m->directed = cJSON_IsTrue(dir) ? 1 : 0;
    if ((rc = get_uint(&mp, root, "n_train", "", UINT64_MAX, &m->n_train)))
        goto out;
    if ((rc = get_uint(&mp, root, "n_val", "", UINT64_MAX, &m->n_val)))
        goto out;
    if ((rc = get_uint(&mp, root, "n_test", "", UINT64_MAX, &m->n_test)))
        goto out;
    const cJSON *files = need(&mp, root, "files", "", &rc);
    if (!files)
        goto out;
    if ((rc = parse_files(&mp, files, m)))
        goto out;
    if (cJSON_GetObjectItemCaseSensitive(root, "provenance") &&
        (rc = get_string(&mp, root, "provenance", m->provenance, sizeof(m->provenance))))
        goto out;
    if ((rc = parse_layout(&mp, root, m)))
        goto out;
    rc = check_consistency(&mp, m);
out:
    cJSON_Delete(root);
    oc_free(copy);
    if (rc)
        memset(m, 0, sizeof(*m));
    return rc;
}

/* ---- formatting ---------------------------------------------------------- */

/* Integers are written as raw JSON numbers: cJSON would print 1e+15 style. */
static int add_uint(cJSON *obj, const char *key, uint64_t v, struct oc_err *err)
{
    char buf[32];
    if (v >= (uint64_t)MAX_EXACT_INT)
        return OC_ERR(err, OC_ERR_ARG, "manifest: %s = %" PRIu64 " exceeds 2^53", key, v);
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    return cJSON_AddRawToObject(obj, key, buf)
               ? OC_OK
               : OC_ERR(err, OC_ERR_NOMEM, "manifest: out of memory");
}

int oc_manifest_format(const struct oc_manifest *m, char **text, struct oc_err *err)
{
    cJSON *root = NULL;
    char *s = NULL;
    int rc = OC_ERR_NOMEM;
    *text = NULL;
    if (memchr(m->name, '\0', sizeof(m->name)) == NULL ||
        memchr(m->provenance, '\0', sizeof(m->provenance)) == NULL)
        return OC_ERR(err, OC_ERR_ARG, "manifest: name or provenance not terminated");
    if (oc_manifest_name_ctl(m->name))
        return OC_ERR(err, OC_ERR_ARG, "manifest: name holds a control character");
    if ((unsigned)m->feat_dtype >= OC_DTYPE_COUNT || (unsigned)m->index_dtype >= OC_DTYPE_COUNT)
        return OC_ERR(err, OC_ERR_ARG, "manifest: invalid dtype");
    if (!(root = cJSON_CreateObject()))
        goto nomem;
    if (!cJSON_AddStringToObject(root, "format", OC_FORMAT_NAME))
        goto nomem;
    if (memchr(m->layout, '\0', sizeof(m->layout)) == NULL ||
        (m->layout[0] && !layout_name_ok(m->layout)))
        return OC_ERR(err, OC_ERR_ARG, "manifest: invalid layout name");
    if ((rc = add_uint(root, "version",
                       (uint64_t)(m->layout[0] ? OC_FORMAT_VERSION_2 : OC_FORMAT_VERSION), err)))
        goto out;
    char name[sizeof(m->name)], prov[sizeof(m->provenance)]; /* JSON: valid UTF-8 */
    if (!cJSON_AddStringToObject(root, "name", oc_utf8_copy(name, sizeof(name), m->name)))
        goto nomem;
    if ((rc = add_uint(root, "n_nodes", m->n_nodes, err)) ||
        (rc = add_uint(root, "n_edges", m->n_edges, err)) ||
        (rc = add_uint(root, "feat_dim", m->feat_dim, err)) ||
        (rc = add_uint(root, "n_classes", m->n_classes, err)))
        goto out;
    rc = OC_ERR_NOMEM;
    if (!cJSON_AddStringToObject(root, "feat_dtype", oc_dtype_name(m->feat_dtype)) ||
        !cJSON_AddStringToObject(root, "index_dtype", oc_dtype_name(m->index_dtype)) ||
        !cJSON_AddBoolToObject(root, "directed", m->directed ? 1 : 0))
        goto nomem;
    if ((rc = add_uint(root, "n_train", m->n_train, err)) ||
        (rc = add_uint(root, "n_val", m->n_val, err)) ||
        (rc = add_uint(root, "n_test", m->n_test, err)))
        goto out;
    rc = OC_ERR_NOMEM;
    cJSON *files = cJSON_AddObjectToObject(root, "files");
    if (!files)
        goto nomem;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        if (!m->files[f].present)
            continue;
        cJSON *e = cJSON_AddObjectToObject(files, ds_file_names[f]);
        if (!e)
            goto nomem;
        if ((rc = add_uint(e, "bytes", m->files[f].bytes, err)))
            goto out;
        rc = OC_ERR_NOMEM;
        char crc[16];
        snprintf(crc, sizeof(crc), "%08" PRIx32, m->files[f].crc32);
        if (!cJSON_AddStringToObject(e, "crc32", crc))
            goto nomem;
    }
    if (!cJSON_AddStringToObject(root, "provenance",
                                 oc_utf8_copy(prov, sizeof(prov), m->provenance)))
        goto nomem;
    if (m->layout[0] && !cJSON_AddStringToObject(root, "layout", m->layout))
        goto nomem;
    if (!(s = cJSON_Print(root)))
        goto nomem;
    size_t n = strlen(s);
    if (!(*text = oc_alloc(n + 2, "manifest", err))) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto out;
    }
    memcpy(*text, s, n);
    (*text)[n] = '\n';
    (*text)[n + 1] = '\0';
    rc = OC_OK;
    goto out;
nomem:
    rc = OC_ERR(err, OC_ERR_NOMEM, "manifest: out of memory (JSON)");
out:
    cJSON_free(s);
    cJSON_Delete(root);
    return rc;
}
