/*
 * test_manifest.c — manifest.json: format -> parse round trip, and every
 * strictness rule (format name/version, missing/unknown/duplicate keys,
 * integer checks (plain JSON integers only: no leading zeros, fraction or
 * exponent), NUL and control characters in strings and the name, crc32
 * strings, files table vs counts, index dtype rule).
 *
 * Place in the data flow: tests of dataset/manifest.c.
 * Thread-safety: single-threaded. Ownership: no files.
 */
#include <errno.h>
#include <stdint.h>

#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"

static void sample(struct oc_manifest *m)
{
    memset(m, 0, sizeof(*m));
    m->version = 1;
    snprintf(m->name, sizeof(m->name), "tiny \"quoted\" ünïcode");
    m->n_nodes = 5;
    m->n_edges = 9;
    m->feat_dim = 3;
    m->n_classes = 2;
    m->feat_dtype = OC_DTYPE_F16;
    m->index_dtype = OC_DTYPE_U32;
    m->directed = 1;
    m->n_train = 2;
    m->n_val = 1;
    m->n_test = 1;
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) {
        m->files[f].present = 1;
        m->files[f].bytes = 4096 + 8 * (uint64_t)f;
        m->files[f].crc32 = 0xdeadbe00u + (uint32_t)f;
    }
    memset(&m->files[OC_DS_FEATURE_ROWS], 0, sizeof(m->files[0])); /* version 1: no layout */
    m->files[OC_DS_INDPTR].bytes = 8000000000000ull;               /* above 2^32: must stay exact */
    snprintf(m->provenance, sizeof(m->provenance), "offcore import text cora\nline2");
}

OC_TEST(roundtrip)
{
    struct oc_manifest m, back;
    struct oc_err err;
    char *text = NULL;
    uint64_t live0 = oc_mem_n_live();
    sample(&m);
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK(text && strstr(text, "\"crc32\":\t\"deadbe00\""));
    OC_CHECK(strstr(text, "8000000000000") != NULL); /* integer, not 8e+12 */
    OC_CHECK(strstr(text, "\"format\":\t\"offcore-dataset\"") != NULL);
    OC_CHECK_OK(oc_manifest_parse(text, strlen(text), "m.json", &back, &err), &err);
    OC_CHECK(memcmp(&m, &back, sizeof(m)) == 0);
    oc_free(text);
    /* optional provenance, no features, no labels */
    m.feat_dim = 0;
    m.n_classes = 0;
    m.files[OC_DS_FEATURES].present = 0;
    m.files[OC_DS_LABELS].present = 0;
    m.provenance[0] = '\0';
    m.index_dtype = OC_DTYPE_U32;
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK(strstr(text, "features.npy") == NULL);
    OC_CHECK_OK(oc_manifest_parse(text, strlen(text), "m.json", &back, &err), &err);
    OC_CHECK(!back.files[OC_DS_FEATURES].present && back.files[OC_DS_TEST_IDX].present);
    oc_free(text);
    /* unrepresentable counts are refused when writing */
    m.n_edges = 1ull << 53;
    OC_CHECK_ERR(oc_manifest_format(&m, &text, &err), OC_ERR_ARG, &err, "n_edges");
    OC_CHECK(text == NULL);
    OC_CHECK(oc_mem_n_live() == live0);
}

/* A valid manifest text with one substitution applied. */
static const char *base_json =
    "{\"format\": \"offcore-dataset\", \"version\": 1, \"name\": \"t\", \"n_nodes\": 5,"
    " \"n_edges\": 9, \"feat_dim\": 3, \"n_classes\": 2, \"feat_dtype\": \"f32\","
    " \"index_dtype\": \"u32\", \"directed\": false, \"n_train\": 2, \"n_val\": 1, \"n_test\": 1,"
    " \"files\": {"
    "\"indptr.npy\": {\"bytes\": 4144, \"crc32\": \"0000abcd\"},"
    " \"indices.npy\": {\"bytes\": 4132, \"crc32\": \"ffffffff\"},"
    " \"features.npy\": {\"bytes\": 4156, \"crc32\": \"ABCDEF01\"},"
    " \"labels.npy\": {\"bytes\": 4116, \"crc32\": \"00000000\"},"
    " \"train_idx.npy\": {\"bytes\": 4112, \"crc32\": \"12345678\"},"
    " \"val_idx.npy\": {\"bytes\": 4104, \"crc32\": \"12345678\"},"
    " \"test_idx.npy\": {\"bytes\": 4104, \"crc32\": \"12345678\"}},"
    " \"provenance\": \"test\"}";

static int parse_sub(const char *from, const char *to, struct oc_manifest *m, struct oc_err *err)
{
    char buf[4096];
    const char *at = from ? strstr(base_json, from) : NULL;
    if (from && !at) {
        fprintf(stderr, "  test bug: '%s' not in base\n", from);
        return OC_ERR_INTERNAL;
    }
    if (!from) {
        snprintf(buf, sizeof(buf), "%s", base_json);
    } else {
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - base_json), base_json, to,
                 at + strlen(from));
    }
    return oc_manifest_parse(buf, strlen(buf), "/d/manifest.json", m, err);
}

#define BAD(from, to, substr)                                                     \
    do {                                                                          \
        OC_CHECK_ERR(parse_sub(from, to, &m, &err), OC_ERR_FORMAT, &err, substr); \
        OC_CHECK(strstr(err.msg, "/d/manifest.json") != NULL);                    \
    } while (0)

OC_TEST(strict_parse)
{
    struct oc_manifest m;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    OC_CHECK_OK(parse_sub(NULL, NULL, &m, &err), &err);
    OC_CHECK(m.n_nodes == 5 && m.feat_dim == 3 && m.files[OC_DS_FEATURES].crc32 == 0xabcdef01u);
    OC_CHECK(m.files[OC_DS_INDICES].crc32 == 0xffffffffu && m.directed == 0);
    OC_CHECK(strcmp(m.provenance, "test") == 0);

    BAD("\"version\": 1", "\"version\": 3", "unknown format version 3 (this build reads 1 and 2)");
    /* version 3 is reported even when the rest would not parse as version 1 */
    BAD("\"version\": 1, \"name\": \"t\", \"n_nodes\": 5",
        "\"version\": 3, \"name\": \"t\", \"nodes\": 5", "unknown format version 3");
    /* version 2 is a layout's: its name and map are required, and only there */
    BAD("\"version\": 1", "\"version\": 2", "missing required key 'layout'");
    BAD("\"n_nodes\": 5", "\"layout\": \"bfs\", \"n_nodes\": 5", "'layout' is a version 2 key");
    BAD("\"version\": 1, \"name\"", "\"version\": 2, \"layout\": \"bfs\", \"name\"",
        "files table lacks feature_rows.npy (a layout is named)");
    BAD("\"n_nodes\": 5", "\"version\": 2, \"n_nodes\": 5", "duplicate key 'version'");
    BAD("\"version\": 1,", "", "missing required key 'version'");
    BAD("\"version\": 1", "\"version\": \"1\"", "'version' must be an integer");
    BAD("offcore-dataset", "offcore-datasat", "unknown format name 'offcore-datasat'");
    BAD("\"n_edges\": 9,", "", "missing required key 'n_edges'");
    BAD("\"bytes\": 4132, ", "", "missing required key 'files.indices.npy.bytes'");
    BAD("\"n_edges\": 9", "\"n_edges\": 9.5", "'n_edges' must be an integer");
    BAD("\"n_edges\": 9", "\"n_edges\": -9", "'n_edges' must not be negative");
    BAD("\"n_edges\": 9", "\"n_edges\": 9007199254740992", "'n_edges' too large");
    BAD("\"n_edges\": 9", "\"n_edges\": 1e400", "must be an integer");
    BAD("\"n_edges\": 9", "\"n_edges\": \"9\"", "must be an integer");
    BAD("\"feat_dim\": 3", "\"feat_dim\": 4294967296", "'feat_dim' too large");
    BAD("\"directed\": false", "\"directed\": 0", "'directed' must be true or false");
    BAD("\"feat_dtype\": \"f32\"", "\"feat_dtype\": \"f99\"", "unknown dtype 'f99'");
    BAD("\"feat_dtype\": \"f32\"", "\"feat_dtype\": \"u8\"", "feat_dtype must be f32 or f16");
    BAD("\"index_dtype\": \"u32\"", "\"index_dtype\": \"u64\"", "index_dtype must be u32");
    BAD("\"crc32\": \"0000abcd\"", "\"crc32\": \"abcd\"", "files.indptr.npy.crc32 must be");
    BAD("\"crc32\": \"0000abcd\"", "\"crc32\": 43981", "8 hex digits");
    BAD("\"crc32\": \"0000abcd\"", "\"crc32\": \"0000abcg\"", "8 hex digits");
    BAD("\"bytes\": 4144", "\"bytes\": 100", "less than the 4096-byte npy header");
    BAD("\"provenance\": \"test\"", "\"provenance\": \"test\", \"extra\": 1",
        "unknown key 'extra'");
    BAD("\"test_idx.npy\"", "\"tests_idx.npy\"", "unknown key 'files.tests_idx.npy'");
    BAD("\"name\": \"t\",", "\"name\": \"t\", \"name\": \"u\",", "duplicate key 'name'");
    BAD(" \"labels.npy\": {\"bytes\": 4116, \"crc32\": \"00000000\"},", "",
        "files table lacks labels.npy");
    BAD("\"feat_dim\": 3", "\"feat_dim\": 0", "lists features.npy but feat_dim is 0");
    BAD("\"n_train\": 2", "\"n_train\": 6", "n_train (6) exceeds n_nodes (5)");
    BAD("\"provenance\": \"test\"", "\"provenance\": 7", "'provenance' must be a string");
    BAD("\"name\": \"t\"", "\"name\": null", "'name' must be a string");
    BAD("{\"format\"", "[{\"format\"", "invalid JSON");
    BAD("\"provenance\": \"test\"}", "\"provenance\": \"test\"", "invalid JSON");
    BAD("\"provenance\": \"test\"}", "\"provenance\": \"test\"} trailing", "invalid JSON");
    OC_CHECK_ERR(oc_manifest_parse("[1, 2]", 6, "/d/manifest.json", &m, &err), OC_ERR_FORMAT, &err,
                 "not a JSON object");
    OC_CHECK_ERR(oc_manifest_parse("{\"a\":\0}", 7, "/d/manifest.json", &m, &err), OC_ERR_FORMAT,
                 &err, "NUL byte");
    OC_CHECK_ERR(oc_manifest_parse("", 0, "/d/manifest.json", &m, &err), OC_ERR_FORMAT, &err,
                 "invalid JSON");
    /* the output is cleared on failure */
    OC_CHECK(m.n_nodes == 0 && m.files[OC_DS_INDPTR].present == 0);
    /* a name longer than the struct holds */
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    char to[340];
    snprintf(to, sizeof(to), "\"name\": \"%s\"", longname);
    BAD("\"name\": \"t\"", to, "'name' too long");
    OC_CHECK(oc_mem_n_live() == live0);
}

/* Item 8 of issue 19: cJSON's leniency (leading zeros, exponents, "\u0000") does not pass. */
OC_TEST(plain_integers_and_clean_names)
{
    struct oc_manifest m;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    BAD("\"n_nodes\": 5", "\"n_nodes\": 05", "'n_nodes' must be an integer written without");
    BAD("\"n_nodes\": 5", "\"n_nodes\": 00", "(got '00')");
    BAD("\"n_nodes\": 5", "\"n_nodes\": 5e0", "'n_nodes' must be an integer");
    BAD("\"n_nodes\": 5", "\"n_nodes\": 5E+0", "(got '5E+0')");
    BAD("\"n_nodes\": 5", "\"n_nodes\": 5.0", "'n_nodes' must be an integer");
    BAD("\"n_nodes\": 5", "\"n_nodes\": -0.0", "'n_nodes' must be an integer");
    BAD("\"version\": 1", "\"version\": 1.0", "'version' must be an integer");
    BAD("\"version\": 1", "\"version\": 1e0", "'version' must be an integer");
    BAD("\"bytes\": 4144", "\"bytes\": 04144", "'files.indptr.npy.bytes' must be an integer");
    BAD("\"bytes\": 4156", "\"bytes\": 4.156e3", "'files.features.npy.bytes' must be an integer");
    /* 010000 and 1e4 are 10000 to cJSON: refused even where 10000 would be fine */
    BAD("\"n_nodes\": 5", "\"n_nodes\": 010000", "(got '010000')");
    BAD("\"n_nodes\": 5", "\"n_nodes\": 1e4", "(got '1e4')");
    /* plain zero and negative zero are integers */
    OC_CHECK_OK(parse_sub("\"n_val\": 1, \"n_test\": 1", "\"n_val\": 0, \"n_test\": -0", &m, &err),
                &err);
    OC_CHECK(m.n_val == 0 && m.n_test == 0);

    /* A NUL anywhere would cut the string short; control characters never reach a terminal. */
    BAD("\"name\": \"t\"", "\"name\": \"t\\u0000evil\"", "'name' holds a NUL character");
    BAD("\"name\": \"t\"", "\"name\": \"\\u0000\"", "'name' holds a NUL");
    BAD("\"provenance\": \"test\"", "\"provenance\": \"te\\u0000st\"", "'provenance' holds a NUL");
    BAD("\"crc32\": \"0000abcd\"", "\"crc32\": \"0000abcd\\u0000x\"",
        "'files.indptr.npy.crc32' holds a NUL");
    BAD("\"name\": \"t\"", "\"name\": \"t\", \"a\\u0000\": 1",
        "a key in '(top level)' holds a NUL");
    BAD("\"name\": \"t\"", "\"name\": \"t\\u001b[31mred\"",
        "'name' holds a control character (U+001B)");
    BAD("\"name\": \"t\"", "\"name\": \"\\u0007bell\"", "(U+0007) at byte 0");
    BAD("\"name\": \"t\"", "\"name\": \"a\\nb\"", "'name' holds a control character (U+000A)");
    BAD("\"name\": \"t\"", "\"name\": \"del\\u007f\"", "(U+007F)");
    BAD("\"name\": \"t\"", "\"name\": \"c1\\u009b31m\"", "(U+009B)");
    BAD("\"name\": \"t\"", "\"name\": \"raw\x1b[0m\"", "'name' holds a raw control character");
    BAD("\"provenance\": \"test\"", "\"provenance\": \"raw\ttab\"",
        "'provenance' holds a raw control character");
    /* escaped newlines stay fine in the provenance; non-ASCII names stay fine */
    OC_CHECK_OK(parse_sub("\"provenance\": \"test\"", "\"provenance\": \"a\\nb\\u00e9\"", &m, &err),
                &err);
    OC_CHECK(strcmp(m.provenance, "a\nb\xc3\xa9") == 0);
    OC_CHECK_OK(parse_sub("\"name\": \"t\"", "\"name\": \"\\u00e9t\xc3\xa9 \\u00a0\"", &m, &err),
                &err);
    OC_CHECK(strcmp(m.name, "\xc3\xa9t\xc3\xa9 \xc2\xa0") == 0);

    /* The writer refuses what the parser would refuse. */
    char *text = NULL;
    sample(&m);
    snprintf(m.name, sizeof(m.name), "bad\x1b]0;title\x07");
    OC_CHECK_ERR(oc_manifest_format(&m, &text, &err), OC_ERR_ARG, &err, "control character");
    OC_CHECK(text == NULL);
    OC_CHECK(oc_manifest_name_ctl("ok \xc3\xa9") == NULL);
    OC_CHECK(oc_manifest_name_ctl("x\xc2\x85y") != NULL);
    OC_CHECK(oc_mem_n_live() == live0);
}

OC_TEST(large_graph_index_dtype)
{
    struct oc_manifest m;
    struct oc_err err;
    char *text;
    sample(&m);
    m.n_nodes = (1ull << 32) + 1;
    m.index_dtype = OC_DTYPE_U32;
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK_ERR(oc_manifest_parse(text, strlen(text), "m", &m, &err), OC_ERR_FORMAT, &err,
                 "index_dtype must be u64 for n_nodes 4294967297");
    oc_free(text);
    sample(&m);
    m.n_nodes = (1ull << 32) + 1;
    m.index_dtype = OC_DTYPE_U64;
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK_OK(oc_manifest_parse(text, strlen(text), "m", &m, &err), &err);
    OC_CHECK(m.n_nodes == (1ull << 32) + 1);
    oc_free(text);
    /* exactly 2^32 nodes: ids up to 2^32 - 1 fit u32, and every writer agrees */
    sample(&m);
    m.n_nodes = 1ull << 32;
    m.index_dtype = OC_DTYPE_U32;
    OC_CHECK_OK(oc_manifest_format(&m, &text, &err), &err);
    OC_CHECK_OK(oc_manifest_parse(text, strlen(text), "m", &m, &err), &err);
    oc_free(text);
    OC_CHECK(oc_ds_index_dtype_for((1ull << 32) - 1) == OC_DTYPE_U32);
    OC_CHECK(oc_ds_index_dtype_for(1ull << 32) == OC_DTYPE_U32);
    OC_CHECK(oc_ds_index_dtype_for((1ull << 32) + 1) == OC_DTYPE_U64);
}

OC_TEST(alloc_faults)
{
    struct oc_manifest m;
    struct oc_err err;
    uint64_t live0 = oc_mem_n_live();
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        for (uint64_t nth = 1; nth < 20; nth++) {
            fault_arm_mode(mode, OC_FAULT_ALLOC, nth, ENOMEM);
            int rc = parse_sub(NULL, NULL, &m, &err);
            char *text = NULL;
            if (rc == OC_OK)
                rc = oc_manifest_format(&m, &text, &err);
            int fired = oc_fault_fired(OC_FAULT_ALLOC);
            oc_fault_disarm_all();
            oc_free(text);
            if (!fired) {
                OC_CHECK(rc == OC_OK && nth > 1);
                break;
            }
            OC_CHECK(rc == OC_ERR_NOMEM);
            OC_CHECK(oc_mem_n_live() == live0);
        }
    }
}

OC_TEST_MAIN()
