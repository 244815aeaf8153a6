/*
 * test_kg_import.c — the KG dataset format and the GraIL importer: a tiny
 * hand-made split imports to the hand-checked CSR (inverse and identity facts
 * added, facts of a head sorted by relation then tail); malformed inputs
 * (missing and extra column, empty field, unknown relation in the inductive
 * graph, empty file) are refused naming the file and line; a dataset whose
 * arrays were damaged (truncated .npy, id out of range, flipped byte, a head
 * without its identity fact, facts out of order) is refused by oc_kg_open
 * naming the file; a fault loop over allocations,
 * reads, writes, fsyncs and renames fails cleanly with no leak and no output;
 * and all 12 GraIL pairs of ../shared import with the README's counts.
 *
 * Place in the data flow: tests of src/kg/kg_import.c, kg_write.c, kg_open.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_util.h"
#include "harness.h"
#include "kg_fixture.h"

static const char *write_split(const char *root, const char *ind_train)
{
    return kgfx_toy_split(root, ind_train);
}

static uint64_t *load_u64(const char *path, uint64_t *n)
{
    void *d = NULL;
    uint64_t c;
    struct oc_err err;
    if (oc_npy_load_as(path, OC_DTYPE_U64, &d, n, &c, &err) != OC_OK)
        return NULL;
    return d;
}

/* The toy split with this inductive train.txt imported into root/out and opened (NULL, and a
   failed check, if either fails); out gets the path. */
static struct oc_kg *import_toy(const char *ind_train, char *out, size_t n)
{
    const char *root = oc_test_tmpdir();
    const char *src = write_split(root, ind_train);
    snprintf(out, n, "%s/out", root);
    struct oc_err err;
    OC_CHECK_OK(oc_kg_import_grail(src, out, NULL, &err), &err);
    struct oc_kg *kg = NULL;
    OC_CHECK_OK(oc_kg_open(out, &kg, &err), &err);
    return kg;
}

OC_TEST(kg_import_toy_csr)
{
    char out[700];
    struct oc_err err;
    struct oc_kg *kg = import_toy("x\tr2\ty\ny\tr1\tz\n", out, sizeof(out));
    if (!kg)
        return;
    const char *src = kgfx_toy_split(oc_test_tmpdir(), "x\tr2\ty\ny\tr1\tz\n");
    const struct oc_kg_manifest *m = oc_kg_manifest(kg);
    OC_CHECK(m->n_relations == 2 && strcmp(m->name, "toy_v1") == 0);
    OC_CHECK(m->graph[OC_KG_TRAIN].n_entities == 3 && m->graph[OC_KG_TRAIN].n_facts == 9);
    OC_CHECK(m->graph[OC_KG_IND].n_entities == 3 && m->graph[OC_KG_IND].n_triples == 2);
    /* a=0 b=1 c=2, r1=0 r2=1, inverse r+2, identity 4 */
    uint64_t n = 0;
    uint64_t *indptr = load_u64(oc_kg_path(kg, OC_KG_TRAIN, OC_KG_INDPTR), &n);
    uint64_t *rel = load_u64(oc_kg_path(kg, OC_KG_TRAIN, OC_KG_REL), &n);
    uint64_t *tail = load_u64(oc_kg_path(kg, OC_KG_TRAIN, OC_KG_TAIL), &n);
    static const uint64_t want_ptr[4] = {0, 3, 6, 9};
    static const uint64_t want_rel[9] = {0, 2, 4, 1, 2, 4, 0, 3, 4};
    static const uint64_t want_tail[9] = {1, 2, 0, 2, 0, 1, 0, 1, 2};
    OC_CHECK(indptr && rel && tail && n == 9);
    if (indptr && rel && tail) {
        OC_CHECK(memcmp(indptr, want_ptr, sizeof(want_ptr)) == 0);
        OC_CHECK(memcmp(rel, want_rel, sizeof(want_rel)) == 0);
        OC_CHECK(memcmp(tail, want_tail, sizeof(want_tail)) == 0);
    }
    oc_free(indptr);
    oc_free(rel);
    oc_free(tail);
    uint32_t *q = NULL;
    OC_CHECK_OK(oc_kg_load_queries(kg, OC_KG_IND, OC_KG_TEST, &q, &n, &err), &err);
    OC_CHECK(q && n == 1 && q[0] == 0 && q[1] == 0 && q[2] == 2);
    oc_free(q);
    oc_kg_free(kg);
    OC_CHECK_ERR(oc_kg_import_grail(src, out, NULL, &err), OC_ERR_EXISTS, &err, "already exists");
    OC_CHECK(oc_mem_n_live() == 0);
}

static void expect_refused(const char *ind_train, const char *file, const char *what)
{
    const char *root = oc_test_tmpdir();
    const char *src = write_split(root, ind_train);
    char out[700];
    snprintf(out, sizeof(out), "%s/out", root);
    struct oc_err err;
    OC_CHECK_ERR(oc_kg_import_grail(src, out, NULL, &err), OC_ERR_FORMAT, &err, what);
    OC_CHECK(strstr(err.msg, file) != NULL);
    OC_CHECK(!oc_path_exists(out));
    OC_CHECK(oc_mem_n_live() == 0);
}

/* Spaces around a field (a trailing one, say) are not part of the name: "y " is y. */
OC_TEST(kg_import_strips_spaces_around_fields)
{
    char out[700];
    struct oc_kg *kg = import_toy("x\tr2 \ty \n y\t r1\tz\n", out, sizeof(out));
    if (!kg)
        return;
    OC_CHECK(oc_kg_manifest(kg)->graph[OC_KG_IND].n_entities == 3);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(kg_import_refuses_malformed_lines)
{
    expect_refused("x\tr2\ty\ny\tr1\n", "toy_v1_ind/train.txt:2:", "missing column");
    expect_refused("x\tr2\ty\tw\n", "toy_v1_ind/train.txt:1:", "extra column");
    expect_refused("x\t\ty\n", "toy_v1_ind/train.txt:1:", "empty field");
    expect_refused("x\t  \ty\n", "toy_v1_ind/train.txt:1:", "empty field");
    expect_refused("x\tr2\ty\nx\tr9\ty\n", "toy_v1_ind/train.txt:2:", "unknown relation 'r9'");
    expect_refused("", "toy_v1_ind/train.txt", "empty file");
}

/* Imports the toy split, damages one array with fn, expects open to refuse naming the file. */
static void expect_open_refused(void (*damage)(const char *path), enum oc_kg_array a,
                                const char *what)
{
    const char *root = oc_test_tmpdir();
    const char *src = write_split(root, "x\tr2\ty\ny\tr1\tz\n");
    char out[700], name[64], path[800];
    snprintf(out, sizeof(out), "%s/out", root);
    struct oc_err err;
    OC_CHECK_OK(oc_kg_import_grail(src, out, NULL, &err), &err);
    oc_kg_file_name(OC_KG_IND, a, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", out, name);
    damage(path);
    struct oc_kg *kg = NULL;
    OC_CHECK_ERR(oc_kg_open(out, &kg, &err), OC_ERR_FORMAT, &err, what);
    OC_CHECK(strstr(err.msg, name) != NULL);
    OC_CHECK(kg == NULL);
    /* the manifest alone still reads (kg-train's preset), no array checked */
    struct oc_kg_manifest m;
    OC_CHECK_OK(oc_kg_read_manifest(out, &m, &err), &err);
    OC_CHECK(m.n_relations == 2 && m.graph[OC_KG_IND].n_facts > 0);
    OC_CHECK(oc_mem_n_live() == 0);
}

static void truncate_4(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || truncate(path, st.st_size - 4) != 0)
        perror(path);
}

static void poke_u32(const char *path, uint64_t elem, uint32_t v)
{
    int fd = open(path, O_WRONLY);
    uint8_t b[4];
    oc_put_le32(b, v);
    if (fd < 0 || pwrite(fd, b, 4, (off_t)(4096 + 4 * elem)) != 4)
        perror(path);
    close(fd);
}

static void tail_out_of_range(const char *path)
{
    poke_u32(path, 1, 3);
}

static void query_rel_out_of_range(const char *path)
{
    poke_u32(path, 1, 2);
}

static void flip_header_pad(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, "x", 1, 4000) != 1)
        perror(path);
    close(fd);
}

/* Rewrites the crc32 kg.json records for the file at path (its directory's kg.json). */
static void reseal(const char *path)
{
    char dir[800], man[900];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(man, sizeof(man), "%s/kg.json", dir);
    char *data = NULL, *text = NULL;
    size_t n = 0, tn = 0;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(path, 0, &data, &n, &err), &err);
    OC_CHECK_OK(oc_read_file(man, 0, &text, &tn, &err), &err);
    char key[128], hex[9];
    snprintf(key, sizeof(key), "\"%s\"", slash + 1);
    snprintf(hex, sizeof(hex), "%08x", oc_crc32(0, data, n));
    char *at = text ? strstr(text, key) : NULL;
    at = at ? strstr(at, "\"crc32\"") : NULL;
    at = at ? strchr(at + 7, '"') : NULL;
    OC_CHECK(at != NULL);
    if (at) {
        memcpy(at + 1, hex, 8);
        OC_CHECK_OK(oc_write_file_atomic(man, text, tn, &err), &err);
    }
    oc_free(data);
    oc_free(text);
}

/* Head 0 of the inductive toy graph (x) has facts (r2, y), (identity, x): a wrong tail on
   the second leaves x without its identity fact. */
static void identity_lost(const char *path)
{
    poke_u32(path, 1, 2);
    reseal(path);
}

/* Head 1 (y) has (r1, z), (r1 inverse, x), (identity, y): swapping the relations of the
   first two breaks the order. */
static void facts_unsorted(const char *path)
{
    poke_u32(path, 2, 3);
    poke_u32(path, 3, 0);
    reseal(path);
}

/* Head 0 (x) has (r2, y), (identity, x): y -> z keeps every id in range and the order; only
   the CRC can tell. */
static void tail_changed_validly(const char *path)
{
    poke_u32(path, 0, 2);
}

/* The first test query's tail, another entity in range. */
static void query_changed_validly(const char *path)
{
    poke_u32(path, 2, 0);
}

OC_TEST(kg_open_refuses_damaged_arrays)
{
    struct oc_kg_manifest m;
    struct oc_err err;
    OC_CHECK_ERR(oc_kg_read_manifest(oc_test_tmpdir(), &m, &err), OC_ERR_NOTFOUND, &err,
                 "no kg.json");
    expect_open_refused(identity_lost, OC_KG_TAIL, "head 0 lacks its identity fact (0, 4, 0)");
    expect_open_refused(facts_unsorted, OC_KG_REL, "fact 3 of head 1 is out of order");
    expect_open_refused(truncate_4, OC_KG_TAIL, "truncated");
    expect_open_refused(tail_out_of_range, OC_KG_TAIL, "entity id 3 at row 1 out of range");
    expect_open_refused(query_rel_out_of_range, OC_KG_QTEST, "relation id 2 at row 0");
    expect_open_refused(flip_header_pad, OC_KG_REL, "malformed .npy header");
    expect_open_refused(tail_changed_validly, OC_KG_TAIL, "checksum mismatch");
    expect_open_refused(query_changed_validly, OC_KG_QTEST, "checksum mismatch");
}

/* kg.json of the toy split with `from` (its first occurrence) replaced by `to`: parse fails
   naming the problem. */
static void expect_manifest_refused(const char *text, const char *from, const char *to,
                                    const char *what)
{
    const char *at = strstr(text, from);
    OC_CHECK(at != NULL);
    if (!at)
        return;
    char buf[8192];
    int n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    struct oc_kg_manifest m;
    struct oc_err err;
    OC_CHECK_ERR(oc_kg_manifest_parse(buf, (size_t)n, "kg.json", &m, &err), OC_ERR_FORMAT, &err,
                 what);
}

OC_TEST(kg_manifest_refuses_malformed)
{
    const char *root = oc_test_tmpdir();
    const char *src = write_split(root, "x\tr2\ty\ny\tr1\tz\n");
    char out[700], man[800];
    snprintf(out, sizeof(out), "%s/out", root);
    snprintf(man, sizeof(man), "%s/kg.json", out);
    struct oc_err err;
    OC_CHECK_OK(oc_kg_import_grail(src, out, NULL, &err), &err);
    char *text = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(man, 0, &text, &len, &err), &err);
    if (!text)
        return;
    struct oc_kg_manifest m;
    OC_CHECK_OK(oc_kg_manifest_parse(text, len, "kg.json", &m, &err), &err);
    char crc[16];
    const char *c = strstr(strstr(text, "\"crc32\""), ":");
    c = c ? strchr(c, '"') : NULL;
    OC_CHECK(c != NULL);
    if (c) {
        snprintf(crc, sizeof(crc), "\"%.8s\"", c + 1);
        expect_manifest_refused(text, crc, "\" 1234567\"", "crc32' must be 8 hexadecimal digits");
        expect_manifest_refused(text, crc, "\"+1234567\"", "crc32' must be 8 hexadecimal digits");
        expect_manifest_refused(text, crc, "\"123456789\"", "crc32' must be 8 hexadecimal digits");
        expect_manifest_refused(text, crc, "\"1234567g\"", "crc32' must be 8 hexadecimal digits");
    }
    oc_free(text);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(kg_import_fault_loop)
{
    const char *root = oc_test_tmpdir();
    const char *src = write_split(root, "x\tr2\ty\ny\tr1\tz\n");
    static const struct {
        enum oc_fault_kind kind;
        int e;
    } faults[] = {{OC_FAULT_ALLOC, ENOMEM}, {OC_FAULT_READ, EIO},  {OC_FAULT_WRITE, ENOSPC},
                  {OC_FAULT_OPEN, EACCES},  {OC_FAULT_FSYNC, EIO}, {OC_FAULT_RENAME, EXDEV}};
    int n_run = 0;
    for (size_t k = 0; k < sizeof(faults) / sizeof(faults[0]); k++) {
        for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
            int n_failed = 0;
            for (uint64_t nth = 1; nth < 100000; nth = fault_next_nth(nth, 8)) {
                char out[700];
                snprintf(out, sizeof(out), "%s/f%zu-%d-%llu", root, k, mode,
                         (unsigned long long)nth);
                struct oc_err err;
                oc_err_clear(&err);
                fault_arm_mode(mode, faults[k].kind, nth, faults[k].e);
                int rc = oc_kg_import_grail(src, out, NULL, &err);
                int fired = oc_fault_fired(faults[k].kind);
                oc_fault_disarm_all();
                n_run++;
                OC_CHECK(oc_mem_n_live() == 0);
                if (!fired) {
                    OC_CHECK_OK(rc, &err);
                    struct oc_kg *kg = NULL; /* whole and valid, checksums included */
                    OC_CHECK_OK(oc_kg_open(out, &kg, &err), &err);
                    oc_kg_free(kg);
                    break;
                }
                /* every kind here is an error no retry can mend: the import fails, whole */
                OC_CHECK(rc != OC_OK && err.msg[0] != '\0');
                OC_CHECK(!oc_path_exists(out));
                n_failed++;
            }
            OC_CHECK(n_failed > 0); /* each kind reaches the import and fails it */
        }
    }
    OC_CHECK(n_run > 20);
}

OC_TEST(kg_import_all_grail_pairs)
{
    const char *shared = oc_test_shared();
    if (!shared)
        OC_SKIP("../shared not found");
    static const struct {
        const char *name;
        uint64_t tr_ent, tr_train, ind_ent, ind_train, ind_test;
    } want[] = {
        {"WN18RR_v1", 2746, 5410, 922, 1618, 188},    {"WN18RR_v2", 6954, 15262, 2757, 4011, 441},
        {"WN18RR_v3", 12078, 25901, 5084, 6327, 605}, {"WN18RR_v4", 3861, 7940, 7084, 12334, 1429},
        {"fb237_v1", 1594, 4245, 1093, 1993, 205},    {"fb237_v2", 2608, 9739, 1660, 4145, 478},
        {"fb237_v3", 3668, 17986, 2501, 7406, 865},   {"fb237_v4", 4707, 27203, 3051, 11714, 1424},
        {"nell_v1", 3103, 4687, 225, 833, 100},       {"nell_v2", 2564, 8219, 2086, 4586, 476},
        {"nell_v3", 4647, 16393, 3566, 8048, 809},    {"nell_v4", 2092, 7546, 2795, 7073, 731},
    };
    const char *root = oc_test_tmpdir();
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char src[900], out[900];
        snprintf(src, sizeof(src), "%s/datasets/kg-inductive/%s", shared, want[i].name);
        snprintf(out, sizeof(out), "%s/%s", root, want[i].name);
        struct oc_err err;
        OC_CHECK_OK(oc_kg_import_grail(src, out, NULL, &err), &err);
        struct oc_kg *kg = NULL;
        OC_CHECK_OK(oc_kg_open(out, &kg, &err), &err);
        if (!kg)
            continue;
        const struct oc_kg_manifest *m = oc_kg_manifest(kg);
        OC_CHECK(m->graph[OC_KG_TRAIN].n_entities == want[i].tr_ent);
        OC_CHECK(m->graph[OC_KG_TRAIN].n_triples == want[i].tr_train);
        OC_CHECK(m->graph[OC_KG_IND].n_entities == want[i].ind_ent);
        OC_CHECK(m->graph[OC_KG_IND].n_triples == want[i].ind_train);
        OC_CHECK(m->graph[OC_KG_IND].n_queries[OC_KG_TEST] == want[i].ind_test);
        oc_kg_free(kg);
    }
}

OC_TEST_MAIN()
