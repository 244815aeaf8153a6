/*
 * part_open.c — opens one part of a partitioned dataset (docs/FORMAT.md
 * section 10) for the rank that trains on it, refusing before any training
 * whatever does not belong together:
 *
 *   OUT/partition.json ── parsed strictly; n_parts == ranks of the run
 *        │ parts[k]: size and CRC-32 of part-k/part.json
 *        ▼
 *   OUT/part-k/part.json ── present; run id == partition.json's (a part of
 *        │                   another run is named as such); size, CRC; counts
 *        ▼
 *   manifest.json, rows.npy, owner.npy ── sizes, .npy headers, CRC-32s;
 *        owner.npy: every (owner, row) in range and given once
 *
 * The JSON is parsed with cJSON, as strictly as a dataset's manifest:
 * format and version first, every key required, no unknown or duplicate
 * key, integers plain (no fraction, exponent or leading zero) and < 2^53.
 *
 * Place in the data flow: plan; train opens its rank's part.
 * Thread-safety: reentrant.
 * Ownership: an oc_plan_part owns its arrays (oc_plan_part_close).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "offcore/io.h"
#include "offcore/plan.h"
#include "plan/part_set_int.h"

#define PART_MAX_EXACT ((uint64_t)1 << 53)

/* The numbers of a JSON text: plain integers only (outside strings). */
static int plain_numbers(const char *t, size_t len, const char *what, struct oc_err *err)
{
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            else if ((unsigned char)c < 0x20)
                return OC_ERR(err, OC_ERR_FORMAT, "%s: a control character in a string", what);
            continue;
        }
        if (c == '"') {
            in_str = 1;
            continue;
        }
        if (c != '-' && (c < '0' || c > '9'))
            continue;
        size_t j = i;
        while (j < len && strchr("-+.eE0123456789", t[j]))
            j++;
        int ok = c != '-' && (t[i] != '0' || j == i + 1);
        for (size_t k = i; k < j && ok; k++)
            ok = t[k] >= '0' && t[k] <= '9';
        if (!ok)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: number '%.*s' at byte %zu is not a plain non-negative integer", what,
                          (int)(j - i), t + i, i);
        i = j - 1;
    }
    return OC_OK;
}

/* Duplicate and (allowed != NULL) unknown keys of obj. */
static int keys_ok(const cJSON *obj, const char *const *allowed, size_t n_allowed,
                   const char *where, const char *what, struct oc_err *err)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        if (!a->string)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: object member without a key", what);
        for (const cJSON *b = a->next; b; b = b->next)
            if (b->string && strcmp(a->string, b->string) == 0)
                return OC_ERR(err, OC_ERR_FORMAT, "%s: duplicate key '%s%s'", what, where,
                              a->string);
        size_t i = 0;
        while (allowed && i < n_allowed && strcmp(a->string, allowed[i]) != 0)
            i++;
        if (allowed && i == n_allowed)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: unknown key '%s%.64s'", what, where, a->string);
    }
    return OC_OK;
}

static int get_u64(const cJSON *obj, const char *key, const char *where, uint64_t *v,
                   const char *what, struct oc_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: missing required key '%s%s'", what, where, key);
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || d < 0 || d >= (double)PART_MAX_EXACT || d != (double)(uint64_t)d)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: '%s%s' must be an integer in [0, 2^53)", what, where,
                      key);
    *v = (uint64_t)d;
    return OC_OK;
}

static int get_str(const cJSON *obj, const char *key, char *out, size_t cap, const char *what,
                   struct oc_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: missing required key '%s'", what, key);
    if (!cJSON_IsString(it) || !it->valuestring || strlen(it->valuestring) >= cap)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: '%s' must be a string of at most %zu bytes", what,
                      key, cap - 1);
    snprintf(out, cap, "%s", it->valuestring);
    return OC_OK;
}

/* An 8-hex-digit CRC-32 string. */
static int get_crc(const cJSON *obj, const char *where, uint32_t *crc, const char *what,
                   struct oc_err *err)
{
    char s[16];
    int rc = get_str(obj, "crc32", s, sizeof(s), what, err);
    if (rc)
        return rc;
    uint32_t x = 0;
    int ok = strlen(s) == 8;
    for (int i = 0; i < 8 && ok; i++) {
        char c = s[i];
        ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        x = x << 4 | (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (!ok)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: '%scrc32' must be 8 hex digits", what, where);
    *crc = x;
    return OC_OK;
}

/* A {"bytes", "crc32"} entry (with extra, e.g. "n_local", allowed too). */
static int get_entry(const cJSON *e, const char *where, const char *extra, uint64_t *bytes,
                     uint32_t *crc, const char *what, struct oc_err *err)
{
    const char *const keys[] = {"bytes", "crc32", extra};
    if (!cJSON_IsObject(e))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: '%s' must be an object", what, where);
    int rc = keys_ok(e, keys, extra ? 3 : 2, where, what, err);
    if (rc == OC_OK)
        rc = get_u64(e, "bytes", where, bytes, what, err);
    if (rc == OC_OK)
        rc = get_crc(e, where, crc, what, err);
    return rc;
}

/* What partition.json and part.json share. */
struct part_head {
    uint64_t n_parts, n_nodes, feat_dim;
    enum oc_dtype feat_dtype;
    char run_id[OC_PLAN_RUN_ID_LEN + 1];
};

/* Reads path (at most PART_JSON_MAX bytes) and parses it as format `format`. */
static int json_load(const char *path, const char *format, cJSON **root, uint64_t *bytes,
                     uint32_t *crc, struct part_head *h, struct oc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *root = NULL;
    int rc = oc_read_file(path, PART_JSON_MAX, &text, &len, err);
    if (rc)
        return rc;
    *bytes = len;
    *crc = oc_crc32(0, text, len);
    if ((rc = plain_numbers(text, len, path, err))) {
        oc_free(text);
        return rc;
    }
    *root = cJSON_ParseWithLength(text, len);
    oc_free(text);
    if (!*root || !cJSON_IsObject(*root))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: not a JSON object", path);
    char fmt[64], hex[32], dt[16];
    uint64_t version = 0;
    if ((rc = get_str(*root, "format", fmt, sizeof(fmt), path, err)))
        return rc;
    if (strcmp(fmt, format) != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: format '%s', expected '%s'", path, fmt, format);
    if ((rc = get_u64(*root, "version", "", &version, path, err)))
        return rc;
    if (version != PART_SET_VERSION)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: unknown format version %" PRIu64 " (this build "
                      "reads %d)",
                      path, version, PART_SET_VERSION);
    if ((rc = get_str(*root, "run_id", hex, sizeof(hex), path, err)) ||
        (rc = get_u64(*root, "n_parts", "", &h->n_parts, path, err)) ||
        (rc = get_u64(*root, "n_nodes", "", &h->n_nodes, path, err)) ||
        (rc = get_u64(*root, "feat_dim", "", &h->feat_dim, path, err)) ||
        (rc = get_str(*root, "feat_dtype", dt, sizeof(dt), path, err)))
        return rc;
    int ok = strlen(hex) == OC_PLAN_RUN_ID_LEN;
    for (size_t i = 0; ok && i < OC_PLAN_RUN_ID_LEN; i++)
        ok = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
    if (!ok)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: 'run_id' must be %d lowercase hex digits", path,
                      OC_PLAN_RUN_ID_LEN);
    memcpy(h->run_id, hex, sizeof(h->run_id));
    if (oc_dtype_from_name(dt, &h->feat_dtype) != OC_OK ||
        (h->feat_dtype != OC_DTYPE_F32 && h->feat_dtype != OC_DTYPE_F16))
        return OC_ERR(err, OC_ERR_FORMAT, "%s: 'feat_dtype' must be \"f32\" or \"f16\"", path);
    if (h->n_parts < 2 || h->n_parts > OC_PLAN_PARTS_MAX || h->n_nodes > UINT32_MAX ||
        h->n_parts > h->n_nodes || h->feat_dim == 0 || h->feat_dim > UINT32_MAX)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: counts out of range (n_parts %" PRIu64 " in [2, %d] and <= n_nodes "
                      "%" PRIu64 " < 2^32, feat_dim %" PRIu64 " in [1, 2^32))",
                      path, h->n_parts, OC_PLAN_PARTS_MAX, h->n_nodes, h->feat_dim);
    return OC_OK;
}

/* partition.json: its head and every part's node count, part.json size and CRC. */
static int set_parse(const char *out, struct oc_plan_part *p, uint64_t *pj_bytes, uint32_t *pj_crc,
                     struct part_head *h, struct oc_err *err)
{
    static const char *const keys[] = {"format",  "version",  "run_id",     "n_parts",
                                       "n_nodes", "feat_dim", "feat_dtype", "partitioner",
                                       "source",  "parts"};
    char path[4400], s[128];
    uint64_t bytes;
    uint32_t crc;
    cJSON *root = NULL;
    snprintf(path, sizeof(path), "%s/" PART_SET_JSON, out);
    int present = 0;
    int rc = oc_file_optional(path, &present, err);
    if (rc == OC_OK && !present)
        return OC_ERR(err, OC_ERR_NOTFOUND,
                      "%s: missing: %s is not a partitioned dataset (offcore partition)", path,
                      out);
    if (rc == OC_OK)
        rc = json_load(path, PART_SET_FORMAT, &root, &bytes, &crc, h, err);
    if (rc == OC_OK)
        rc = keys_ok(root, keys, sizeof(keys) / sizeof(keys[0]), "", path, err);
    if (rc == OC_OK && (rc = get_str(root, "partitioner", s, sizeof(s), path, err)) == OC_OK &&
        strcmp(s, "metis") != 0)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: unknown partitioner '%s'", path, s);
    if (rc == OC_OK)
        rc = get_str(root, "source", s, sizeof(s), path, err);
    const cJSON *parts = rc == OC_OK ? cJSON_GetObjectItemCaseSensitive(root, "parts") : NULL;
    if (rc == OC_OK && (!cJSON_IsArray(parts) || cJSON_GetArraySize(parts) != (int)h->n_parts))
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: 'parts' must be an array of n_parts (%" PRIu64 ") entries", path,
                    h->n_parts);
    if (rc == OC_OK &&
        !(p->n_local_of = oc_calloc(h->n_parts, sizeof(uint64_t), "partition: part sizes", err)))
        rc = err->status;
    uint64_t k = 0, total = 0;
    for (const cJSON *e = parts ? parts->child : NULL; rc == OC_OK && e; e = e->next, k++) {
        char where[32];
        snprintf(where, sizeof(where), "parts[%" PRIu64 "].", k);
        rc = get_entry(e, where, "n_local", &pj_bytes[k], &pj_crc[k], path, err);
        if (rc == OC_OK)
            rc = get_u64(e, "n_local", where, &p->n_local_of[k], path, err);
        if (rc == OC_OK && p->n_local_of[k] == 0)
            rc = OC_ERR(err, OC_ERR_FORMAT, "%s: part %" PRIu64 " has no nodes", path, k);
        total += p->n_local_of[k];
    }
    if (rc == OC_OK && total != h->n_nodes)
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: the parts hold %" PRIu64 " nodes, n_nodes is %" PRIu64,
                    path, total, h->n_nodes);
    cJSON_Delete(root);
    return rc;
}

/* part-k/part.json: of this run, of the size and CRC partition.json records, the same counts. */
static int part_parse(struct oc_plan_part *p, const struct part_head *set, uint64_t want_bytes,
                      uint32_t want_crc, uint64_t *bytes, uint32_t *crc, struct oc_err *err)
{
    static const char *const keys[] = {"format",   "version",    "run_id", "n_parts", "n_nodes",
                                       "feat_dim", "feat_dtype", "part",   "n_local", "files"};
    char path[4400];
    snprintf(path, sizeof(path), "%s/" PART_JSON, p->dir);
    int present = 0;
    int rc = oc_file_optional(path, &present, err);
    if (rc == OC_OK && !present)
        return OC_ERR(err, OC_ERR_NOTFOUND,
                      "%s: missing: part %u of the %u of this partition "
                      "is not there",
                      path, p->part, p->n_parts);
    cJSON *root = NULL;
    struct part_head h;
    uint64_t got_bytes;
    uint32_t got_crc;
    uint64_t part = 0, n_local = 0;
    if (rc == OC_OK)
        rc = json_load(path, PART_FORMAT, &root, &got_bytes, &got_crc, &h, err);
    if (rc == OC_OK && strcmp(h.run_id, set->run_id) != 0)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: run id %s, but the partition.json beside it has %s: this part comes from "
                    "another partition run",
                    path, h.run_id, set->run_id);
    if (rc == OC_OK && (got_bytes != want_bytes || got_crc != want_crc))
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: %" PRIu64 " bytes, crc32 %08" PRIx32
                    ", but partition.json records %" PRIu64 " bytes, crc32 %08" PRIx32,
                    path, got_bytes, got_crc, want_bytes, want_crc);
    if (rc == OC_OK)
        rc = keys_ok(root, keys, sizeof(keys) / sizeof(keys[0]), "", path, err);
    if (rc == OC_OK && ((rc = get_u64(root, "part", "", &part, path, err)) ||
                        (rc = get_u64(root, "n_local", "", &n_local, path, err))))
        goto out;
    if (rc == OC_OK && (part != p->part || h.n_parts != set->n_parts || h.n_nodes != set->n_nodes ||
                        h.feat_dim != set->feat_dim || h.feat_dtype != set->feat_dtype ||
                        n_local != p->n_local_of[p->part]))
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: part %" PRIu64 " of %" PRIu64 ", %" PRIu64 " nodes (%" PRIu64
                    " its own), feat_dim %" PRIu64 ": partition.json says part %u of %" PRIu64
                    ", %" PRIu64 " nodes (%" PRIu64 "), feat_dim %" PRIu64,
                    path, part, h.n_parts, h.n_nodes, n_local, h.feat_dim, p->part, set->n_parts,
                    set->n_nodes, p->n_local_of[p->part], set->feat_dim);
    const cJSON *files = rc == OC_OK ? cJSON_GetObjectItemCaseSensitive(root, "files") : NULL;
    if (rc == OC_OK && !cJSON_IsObject(files))
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: missing required object 'files'", path);
    if (rc == OC_OK)
        rc = keys_ok(files, part_file_names, PART_N_FILES, "files.", path, err);
    for (int i = 0; i < PART_N_FILES && rc == OC_OK; i++) {
        char where[64];
        snprintf(where, sizeof(where), "files.%s.", part_file_names[i]);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(files, part_file_names[i]);
        if (!e)
            rc = OC_ERR(err, OC_ERR_FORMAT, "%s: missing required key 'files.%s'", path,
                        part_file_names[i]);
        else
            rc = get_entry(e, where, NULL, &bytes[i], &crc[i], path, err);
    }
out:
    cJSON_Delete(root);
    return rc;
}

/*
 * Checks one file of the part: present, regular, bytes long, CRC-32 crc; with
 * keep != NULL its bytes from offset 4096 on go into keep (keep_bytes long).
 */
static int file_check(const char *path, uint64_t bytes, uint32_t crc, void *keep,
                      uint64_t keep_bytes, struct oc_err *err)
{
    int present = 0;
    int rc = oc_file_optional(path, &present, err);
    if (rc == OC_OK && !present)
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: missing (part.json lists it)", path);
    struct oc_file *f = NULL;
    uint64_t size = 0;
    uint8_t *buf = NULL;
    if (rc == OC_OK)
        rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc == OC_OK)
        rc = oc_file_size(f, &size, err);
    if (rc == OC_OK && size != bytes)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: truncated: file is %" PRIu64 " bytes, part.json "
                    "says %" PRIu64,
                    path, size, bytes);
    if (rc == OC_OK && !(buf = oc_alloc(PART_IO_BYTES, "partition: check buffer", err)))
        rc = err->status;
    uint32_t got = 0;
    for (uint64_t off = 0; rc == OC_OK && off < size;) {
        size_t len = (size_t)(size - off < PART_IO_BYTES ? size - off : PART_IO_BYTES);
        if ((rc = oc_file_pread(f, buf, len, off, err)))
            break;
        got = oc_crc32(got, buf, len);
        uint64_t lo = off > OC_NPY_HEADER_BYTES ? off : OC_NPY_HEADER_BYTES;
        uint64_t hi = off + len < OC_NPY_HEADER_BYTES + keep_bytes
                          ? off + len
                          : OC_NPY_HEADER_BYTES + keep_bytes;
        if (keep && lo < hi)
            memcpy((uint8_t *)keep + (lo - OC_NPY_HEADER_BYTES), buf + (lo - off), hi - lo);
        off += len;
    }
    if (rc == OC_OK && got != crc)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: checksum mismatch: crc32 %08" PRIx32 ", part.json "
                    "says %08" PRIx32,
                    path, got, crc);
    oc_free(buf);
    if (f) {
        struct oc_err ignored;
        oc_file_close(f, &ignored);
    }
    return rc;
}

/* A dataset array's header: dtype and shape as expected, data at 4096, nothing after. */
static int npy_check(const char *path, enum oc_dtype dtype, uint64_t rows, uint64_t cols,
                     struct oc_err *err)
{
    struct oc_npy_header h;
    int rc = oc_npy_read_header(path, &h, err);
    if (rc)
        return rc;
    if (h.dtype != dtype || h.fortran_order || h.ndim != 2 || h.shape[0] != rows ||
        h.shape[1] != cols || h.data_offset != OC_NPY_HEADER_BYTES || h.is_bool)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s: expected a C-order %s array of shape (%" PRIu64 ", %" PRIu64
                      ") with a 4096-byte header",
                      path, oc_dtype_name(dtype), rows, cols);
    return OC_OK;
}

/* owner.npy's content: owners < n_parts, rows < their part's size, each (owner, row) once. */
static int owner_check(const struct oc_plan_part *p, const char *path, struct oc_err *err)
{
    uint64_t *base = oc_calloc(p->n_parts + 1, sizeof(uint64_t), "partition: map check", err);
    uint64_t *seen =
        base ? oc_calloc((p->n_nodes + 63) / 64 + 1, sizeof(uint64_t), "partition: map check", err)
             : NULL;
    int rc = seen ? OC_OK : err->status;
    for (uint32_t k = 0; rc == OC_OK && k < p->n_parts; k++)
        base[k + 1] = base[k] + p->n_local_of[k];
    for (uint64_t v = 0; rc == OC_OK && v < p->n_nodes; v++) {
        uint32_t k = p->owner[2 * v], row = p->owner[2 * v + 1];
        if (k >= p->n_parts || row >= p->n_local_of[k]) {
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: node %" PRIu64 " maps to part %u row %u, out of range (%u parts)",
                        path, v, k, row, p->n_parts);
            break;
        }
        uint64_t at = base[k] + row;
        if (seen[at / 64] >> (at % 64) & 1)
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: node %" PRIu64 " maps to part %u row %u, an earlier node's too", path,
                        v, k, row);
        seen[at / 64] |= (uint64_t)1 << (at % 64);
    }
    oc_free(base);
    oc_free(seen);
    return rc;
}

int oc_plan_part_open(const char *out, uint32_t part, uint32_t n_parts, struct oc_plan_part *p,
                      struct oc_err *err)
{
    memset(p, 0, sizeof(*p));
    uint64_t pj_bytes[OC_PLAN_PARTS_MAX], bytes[PART_N_FILES];
    uint32_t pj_crc[OC_PLAN_PARTS_MAX], crc[PART_N_FILES];
    struct part_head h;
    char path[4500];
    int rc = set_parse(out, p, pj_bytes, pj_crc, &h, err);
    if (rc == OC_OK && h.n_parts != n_parts)
        rc = OC_ERR(err, OC_ERR_ARG,
                    "%s/" PART_SET_JSON ": a partition into %" PRIu64 " parts, but this run has "
                    "%u rank(s): run it with mpirun -np %" PRIu64,
                    out, h.n_parts, n_parts, h.n_parts);
    if (rc)
        goto fail;
    assert(part < n_parts);
    p->part = part;
    p->n_parts = n_parts;
    p->n_nodes = h.n_nodes;
    p->n_local = p->n_local_of[part];
    p->feat_dim = (uint32_t)h.feat_dim;
    p->feat_dtype = h.feat_dtype;
    memcpy(p->run_id, h.run_id, sizeof(p->run_id));
    snprintf(p->dir, sizeof(p->dir), "%s/part-%u", out, part);
    snprintf(p->rows, sizeof(p->rows), "%s/" PART_ROWS, p->dir);
    if ((rc = part_parse(p, &h, pj_bytes[part], pj_crc[part], bytes, crc, err)))
        goto fail;
    p->owner = oc_alloc(2 * p->n_nodes * sizeof(uint32_t) + 1, "partition: node map", err);
    if (!p->owner) {
        rc = err->status;
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/" PART_MANIFEST, p->dir);
    if ((rc = file_check(path, bytes[0], crc[0], NULL, 0, err)))
        goto fail;
    if ((rc = file_check(p->rows, bytes[1], crc[1], NULL, 0, err)) ||
        (rc = npy_check(p->rows, p->feat_dtype, p->n_local, p->feat_dim, err)))
        goto fail;
    snprintf(path, sizeof(path), "%s/" PART_OWNER, p->dir);
    if ((rc = file_check(path, bytes[2], crc[2], p->owner, 2 * p->n_nodes * sizeof(uint32_t),
                         err)) ||
        (rc = npy_check(path, OC_DTYPE_U32, p->n_nodes, 2, err)) ||
        (rc = owner_check(p, path, err)))
        goto fail;
    return OC_OK;
fail:
    oc_plan_part_close(p);
    return rc;
}

int oc_plan_part_set_n_parts(const char *out, uint32_t *n_parts, struct oc_err *err)
{
    uint64_t pj_bytes[OC_PLAN_PARTS_MAX];
    uint32_t pj_crc[OC_PLAN_PARTS_MAX];
    struct part_head h;
    struct oc_plan_part p;
    memset(&p, 0, sizeof(p));
    int rc = set_parse(out, &p, pj_bytes, pj_crc, &h, err);
    *n_parts = rc ? 0 : (uint32_t)h.n_parts;
    oc_plan_part_close(&p);
    return rc;
}

void oc_plan_part_close(struct oc_plan_part *p)
{
    oc_free(p->n_local_of);
    oc_free(p->owner);
    memset(p, 0, sizeof(*p));
}
