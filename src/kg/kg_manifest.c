/*
 * kg_manifest.c — kg.json, the manifest of a KG dataset (docs/FORMAT.md
 * section 9): written with cJSON, parsed strictly (format and version first,
 * every key required except provenance, unknown and duplicate keys refused,
 * integers plain and below 2^53, crc32 as 8 hex digits).
 *
 * Place in the data flow: kg; the writer formats it, oc_kg_open parses it.
 * Thread-safety: reentrant.
 * Ownership: oc_kg_manifest_format's text is oc_alloc'd (caller frees).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "offcore/kg.h"

static const char *const graph_names[OC_KG_GRAPH_COUNT] = {"train", "ind"};
static const char *const array_names[OC_KG_ARRAY_COUNT] = {"indptr", "rel", "tail", "valid",
                                                           "test"};
static const char *const split_keys[OC_KG_SPLIT_COUNT] = {"n_valid", "n_test"};

const char *oc_kg_graph_name(enum oc_kg_graph g)
{
    return (unsigned)g < OC_KG_GRAPH_COUNT ? graph_names[g] : "?";
}

void oc_kg_file_name(enum oc_kg_graph g, enum oc_kg_array a, char *buf, size_t n)
{
    snprintf(buf, n, "%s_%s.npy", oc_kg_graph_name(g),
             (unsigned)a < OC_KG_ARRAY_COUNT ? array_names[a] : "?");
}

/* ---- formatting --------------------------------------------------------- */

int oc_kg_manifest_format(const struct oc_kg_manifest *m, char **text, struct oc_err *err)
{
    *text = NULL;
    cJSON *root = cJSON_CreateObject(), *files = NULL;
    if (!root)
        return OC_ERR(err, OC_ERR_NOMEM, "kg.json: out of memory");
    cJSON_AddStringToObject(root, "format", OC_KG_FORMAT_NAME);
    cJSON_AddNumberToObject(root, "version", OC_KG_FORMAT_VERSION);
    char utf8_name[sizeof(m->name)], utf8_prov[sizeof(m->provenance)]; /* JSON: valid UTF-8 */
    cJSON_AddStringToObject(root, "name", oc_utf8_copy(utf8_name, sizeof(utf8_name), m->name));
    cJSON_AddNumberToObject(root, "n_relations", m->n_relations);
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++) {
        const struct oc_kg_graph_info *gi = &m->graph[g];
        cJSON *o = cJSON_AddObjectToObject(root, graph_names[g]);
        if (!o)
            break;
        cJSON_AddNumberToObject(o, "n_entities", (double)gi->n_entities);
        cJSON_AddNumberToObject(o, "n_triples", (double)gi->n_triples);
        cJSON_AddNumberToObject(o, "n_facts", (double)gi->n_facts);
        for (int s = 0; s < OC_KG_SPLIT_COUNT; s++)
            cJSON_AddNumberToObject(o, split_keys[s], (double)gi->n_queries[s]);
    }
    files = cJSON_AddObjectToObject(root, "files");
    for (int g = 0; files && g < OC_KG_GRAPH_COUNT; g++) {
        for (int a = 0; a < OC_KG_ARRAY_COUNT; a++) {
            char name[64], crc[16];
            oc_kg_file_name((enum oc_kg_graph)g, (enum oc_kg_array)a, name, sizeof(name));
            snprintf(crc, sizeof(crc), "%08x", m->files[g][a].crc32);
            cJSON *f = cJSON_AddObjectToObject(files, name);
            if (!f)
                break;
            cJSON_AddNumberToObject(f, "bytes", (double)m->files[g][a].bytes);
            cJSON_AddStringToObject(f, "crc32", crc);
        }
    }
    if (m->provenance[0])
        cJSON_AddStringToObject(root, "provenance",
                                oc_utf8_copy(utf8_prov, sizeof(utf8_prov), m->provenance));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return OC_ERR(err, OC_ERR_NOMEM, "kg.json: out of memory");
    size_t n = strlen(s);
    *text = oc_alloc(n + 2, "kg manifest", err);
    if (*text) {
        memcpy(*text, s, n);
        (*text)[n] = '\n';
        (*text)[n + 1] = '\0';
    }
    cJSON_free(s);
    return *text ? OC_OK : err->status;
}

/* ---- parsing ------------------------------------------------------------ */

#define OC_TRY_KG(expr)   \
    do {                  \
        int rc_ = (expr); \
        if (rc_ != OC_OK) \
            return rc_;   \
    } while (0)

struct kparse {
    const char *what;
    struct oc_err *err;
};

static int check_keys(struct kparse *kp, const cJSON *obj, const char *const *allowed, size_t n,
                      const char *where)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && strcmp(a->string, b->string) == 0)
                return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: duplicate key '%s%s'", kp->what, where,
                              a->string);
        size_t k = 0;
        while (k < n && strcmp(a->string, allowed[k]) != 0)
            k++;
        if (k == n)
            return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: unknown key '%s%s'", kp->what, where,
                          a->string);
    }
    return OC_OK;
}

static int get_uint(struct kparse *kp, const cJSON *obj, const char *key, const char *where,
                    uint64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it)
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: missing required key '%s%s'", kp->what, where,
                      key);
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || !isfinite(d) || d != floor(d) || d < 0 || d >= 9007199254740992.0)
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: key '%s%s' must be a whole number in [0, 2^53)",
                      kp->what, where, key);
    *out = (uint64_t)d;
    return OC_OK;
}

static int get_str(struct kparse *kp, const cJSON *obj, const char *key, int required, char *out,
                   size_t cap)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) {
        if (required)
            return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: missing required key '%s'", kp->what, key);
        out[0] = '\0';
        return OC_OK;
    }
    if (!cJSON_IsString(it) || !it->valuestring || strlen(it->valuestring) >= cap)
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: key '%s' must be a string under %zu bytes",
                      kp->what, key, cap);
    for (const unsigned char *p = (const unsigned char *)it->valuestring; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: key '%s' holds a control character",
                          kp->what, key);
    snprintf(out, cap, "%s", it->valuestring);
    return OC_OK;
}

static int parse_graph(struct kparse *kp, const cJSON *root, int g, struct oc_kg_graph_info *gi)
{
    static const char *const keys[] = {"n_entities", "n_triples", "n_facts", "n_valid", "n_test"};
    char where[32];
    snprintf(where, sizeof(where), "%s.", graph_names[g]);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, graph_names[g]);
    if (!cJSON_IsObject(o))
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: missing required object '%s'", kp->what,
                      graph_names[g]);
    int rc = check_keys(kp, o, keys, 5, where);
    if (!rc)
        rc = get_uint(kp, o, "n_entities", where, &gi->n_entities);
    if (!rc)
        rc = get_uint(kp, o, "n_triples", where, &gi->n_triples);
    if (!rc)
        rc = get_uint(kp, o, "n_facts", where, &gi->n_facts);
    for (int s = 0; !rc && s < OC_KG_SPLIT_COUNT; s++)
        rc = get_uint(kp, o, split_keys[s], where, &gi->n_queries[s]);
    if (rc)
        return rc;
    if (gi->n_entities < 1 || gi->n_entities > UINT32_MAX)
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: %sn_entities %llu outside [1, 2^32)", kp->what,
                      where, (unsigned long long)gi->n_entities);
    if (gi->n_facts != 2 * gi->n_triples + gi->n_entities)
        return OC_ERR(kp->err, OC_ERR_FORMAT,
                      "%s: %sn_facts %llu is not 2 x n_triples + n_entities (%llu)", kp->what,
                      where, (unsigned long long)gi->n_facts,
                      (unsigned long long)(2 * gi->n_triples + gi->n_entities));
    return OC_OK;
}

static int parse_files(struct kparse *kp, const cJSON *root, struct oc_kg_manifest *m)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsObject(files))
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: missing required object 'files'", kp->what);
    int n_seen = 0;
    for (const cJSON *f = files->child; f; f = f->next)
        n_seen++;
    if (n_seen != OC_KG_GRAPH_COUNT * OC_KG_ARRAY_COUNT)
        return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: 'files' lists %d files, expected %d", kp->what,
                      n_seen, OC_KG_GRAPH_COUNT * OC_KG_ARRAY_COUNT);
    static const char *const fkeys[] = {"bytes", "crc32"};
    for (int g = 0; g < OC_KG_GRAPH_COUNT; g++) {
        for (int a = 0; a < OC_KG_ARRAY_COUNT; a++) {
            char name[64], where[96];
            oc_kg_file_name((enum oc_kg_graph)g, (enum oc_kg_array)a, name, sizeof(name));
            snprintf(where, sizeof(where), "files.%s.", name);
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(files, name);
            if (!cJSON_IsObject(f))
                return OC_ERR(kp->err, OC_ERR_FORMAT, "%s: missing required key 'files.%s'",
                              kp->what, name);
            OC_TRY_KG(check_keys(kp, f, fkeys, 2, where));
            OC_TRY_KG(get_uint(kp, f, "bytes", where, &m->files[g][a].bytes));
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "crc32");
            const char *s = cJSON_IsString(c) ? c->valuestring : NULL;
            int hex8 = s && strlen(s) == 8; /* digits only: strtoul takes spaces and signs */
            for (int k = 0; hex8 && k < 8; k++)
                hex8 = isxdigit((unsigned char)s[k]) != 0;
            unsigned long v = hex8 ? strtoul(s, NULL, 16) : 0;
            if (!hex8)
                return OC_ERR(kp->err, OC_ERR_FORMAT,
                              "%s: key '%scrc32' must be 8 hexadecimal digits", kp->what, where);
            m->files[g][a].crc32 = (uint32_t)v;
        }
    }
    return OC_OK;
}

int oc_kg_manifest_parse(const char *text, size_t len, const char *what, struct oc_kg_manifest *m,
                         struct oc_err *err)
{
    static const char *const top[] = {"format", "version", "name",  "n_relations",
                                      "train",  "ind",     "files", "provenance"};
    struct kparse kp = {what, err};
    memset(m, 0, sizeof(*m));
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return OC_ERR(err, OC_ERR_FORMAT, "%s: not a JSON object", what);
    }
    int rc;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    uint64_t version = 0, n_rel = 0;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, OC_KG_FORMAT_NAME) != 0) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: format is not \"%s\"", what, OC_KG_FORMAT_NAME);
        goto out;
    }
    if ((rc = get_uint(&kp, root, "version", "", &version)))
        goto out;
    if (version != OC_KG_FORMAT_VERSION) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: unknown format version %llu (this build reads %d)",
                    what, (unsigned long long)version, OC_KG_FORMAT_VERSION);
        goto out;
    }
    m->version = (uint32_t)version;
    if ((rc = check_keys(&kp, root, top, sizeof(top) / sizeof(top[0]), "")) ||
        (rc = get_str(&kp, root, "name", 1, m->name, sizeof(m->name))) ||
        (rc = get_str(&kp, root, "provenance", 0, m->provenance, sizeof(m->provenance))) ||
        (rc = get_uint(&kp, root, "n_relations", "", &n_rel)))
        goto out;
    if (n_rel < 1 || n_rel > (UINT32_MAX - 1) / 2) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: n_relations %llu outside [1, 2^31)", what,
                    (unsigned long long)n_rel);
        goto out;
    }
    m->n_relations = (uint32_t)n_rel;
    for (int g = 0; g < OC_KG_GRAPH_COUNT && !rc; g++)
        rc = parse_graph(&kp, root, g, &m->graph[g]);
    if (!rc)
        rc = parse_files(&kp, root, m);
out:
    cJSON_Delete(root);
    return rc;
}
