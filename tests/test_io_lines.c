/*
 * test_io_lines.c — tests of the io line reader (plain text and gzip: CRLF,
 * a last line without newline, concatenated members, chunk boundaries,
 * corrupt and truncated data, the line-length limit, fault injection) and of
 * the filesystem helpers (atomic write, read_file guard, mkdir -p, rm -rf
 * that does not follow symlinks, path helpers).
 *
 * Place in the data flow: tests; links the library and zlib (gzopen writes
 * the gzip inputs).
 * Thread-safety: single-threaded.
 * Ownership: files live in oc_test_tmpdir(), removed at exit.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fault_util.h"
#include "harness.h"
#include "io/io_int.h"
#include "offcore/io.h"

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(p, 1, n, fp) != n || fclose(fp) != 0)
        abort();
}

static void write_gz(const char *path, const char *mode, const void *p, size_t n)
{
    gzFile g = gzopen(path, mode);
    if (!g || gzwrite(g, p, (unsigned)n) != (int)n || gzclose(g) != Z_OK)
        abort();
}

static char *slurp(const char *path, size_t *n)
{
    char *p = NULL;
    struct oc_err err;
    if (oc_read_file(path, 0, &p, n, &err) != OC_OK)
        abort();
    return p;
}

/* Reads every line of path; checks they equal want[0..n_want). Returns the status of the end. */
static int expect_lines(const char *path, const char *const *want, size_t n_want,
                        struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    char *line;
    size_t len, i = 0;
    int rc = oc_line_reader_open(path, &r, err);
    if (rc)
        return rc;
    while ((rc = oc_line_reader_next(r, &line, &len, err)) == OC_OK && line) {
        OC_CHECK(i < n_want);
        if (i < n_want) {
            OC_CHECK(len == strlen(want[i]) && strcmp(line, want[i]) == 0);
            if (strcmp(line, want[i]) != 0)
                fprintf(stderr, "  line %zu: got \"%s\", want \"%s\"\n", i + 1, line, want[i]);
        }
        i++;
        OC_CHECK(oc_line_reader_lineno(r) == i);
    }
    if (rc == OC_OK) {
        OC_CHECK(i == n_want);
        /* Further calls keep returning end of file. */
        OC_CHECK(oc_line_reader_next(r, &line, &len, err) == OC_OK && line == NULL);
    }
    OC_CHECK(strcmp(oc_line_reader_path(r), path) == 0);
    oc_line_reader_free(r);
    return rc;
}

/* Reads every line of path without checking them; returns the final status. */
static int drain(const char *path, uint64_t *lineno, struct oc_err *err)
{
    struct oc_line_reader *r = NULL;
    char *line;
    size_t len;
    int rc = oc_line_reader_open(path, &r, err);
    while (rc == OC_OK && (rc = oc_line_reader_next(r, &line, &len, err)) == OC_OK && line)
        ;
    if (lineno)
        *lineno = r ? oc_line_reader_lineno(r) : 0;
    oc_line_reader_free(r);
    return rc;
}

static const char small_text[] = "a\r\nbb\n\nccc\r\n\r\n  spaces \t\nlast";
static const char *const small_lines[] = {"a", "bb", "", "ccc", "", "  spaces \t", "last"};

OC_TEST(lines_plain_and_gzip)
{
    struct oc_err err;
    char p[600], g[600], e[600], c[600];
    const char *dir = oc_test_tmpdir();
    uint64_t live = oc_mem_n_live();

    oc_path_join(p, sizeof(p), dir, "small.txt", &err);
    oc_path_join(g, sizeof(g), dir, "small.txt.gz", &err);
    oc_path_join(e, sizeof(e), dir, "empty.txt", &err);
    oc_path_join(c, sizeof(c), dir, "cat.gz", &err);
    write_bytes(p, small_text, strlen(small_text));
    write_gz(g, "wb", small_text, strlen(small_text));
    write_bytes(e, "", 0);
    OC_CHECK_OK(expect_lines(p, small_lines, 7, &err), &err);
    OC_CHECK_OK(expect_lines(g, small_lines, 7, &err), &err);
    OC_CHECK_OK(expect_lines(e, NULL, 0, &err), &err);
    /* A trailing newline does not make an extra empty line. */
    write_bytes(p, "x\ny\n", 4);
    {
        const char *const xy[] = {"x", "y"};
        OC_CHECK_OK(expect_lines(p, xy, 2, &err), &err);
    }
    /* Concatenated gzip members read as one stream, like gzip -d. */
    write_gz(c, "wb", "one\ntw", 6);
    write_gz(g, "wb", "o\nthree\n", 8);
    size_t n1, n2;
    char *m1 = slurp(c, &n1), *m2 = slurp(g, &n2);
    char *both = malloc(n1 + n2);
    memcpy(both, m1, n1);
    memcpy(both + n1, m2, n2);
    write_bytes(c, both, n1 + n2);
    {
        const char *const want[] = {"one", "two", "three"};
        OC_CHECK_OK(expect_lines(c, want, 3, &err), &err);
    }
    oc_free(m1);
    oc_free(m2);
    free(both);
    OC_CHECK_ERR(expect_lines("/nonexistent/x.txt", NULL, 0, &err), OC_ERR_NOTFOUND, &err,
                 "/nonexistent/x.txt");
    OC_CHECK(oc_mem_n_live() == live);
}

/* Text with lines of many lengths (some > 1 MiB chunks), CRLF and LF mixed. */
static char *big_text(size_t *n, size_t *n_lines)
{
    size_t cap = 6u << 20, pos = 0, lines = 0, n_long = 0;
    char *t = malloc(cap);
    uint64_t s = 12345;
    while (pos < cap - (1u << 20) - 64) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = (s >> 33) % 700;
        if ((s >> 20) % 1500 == 0 || lines == 3000) {
            len = 100000 + (s >> 40) % (1400000);
            n_long++;
        }
        for (size_t i = 0; i < len; i++)
            t[pos + i] = (char)('a' + (i * 7 + lines) % 26);
        pos += len;
        if ((s >> 10) & 1)
            t[pos++] = '\r';
        t[pos++] = '\n';
        lines++;
    }
    *n = pos;
    *n_lines = lines;
    fprintf(stderr, "  text: %zu bytes, %zu lines, %zu over 100 KB\n", pos, lines, n_long);
    return t;
}

static void check_big(const char *path, const char *text, size_t n_lines)
{
    struct oc_err err;
    struct oc_line_reader *r = NULL;
    char *line;
    size_t len, i = 0, bad = 0;
    const char *t = text;
    int rc;

    OC_CHECK_OK(oc_line_reader_open(path, &r, &err), &err);
    if (!r)
        return;
    while ((rc = oc_line_reader_next(r, &line, &len, &err)) == OC_OK && line) {
        const char *nl = strchr(t, '\n');
        size_t want = (size_t)(nl - t);
        if (want > 0 && t[want - 1] == '\r')
            want--;
        bad += len != want || memcmp(line, t, want) != 0 || line[len] != '\0';
        t = nl + 1;
        i++;
    }
    OC_CHECK_OK(rc, &err);
    OC_CHECK(bad == 0);
    OC_CHECK(i == n_lines);
    OC_CHECK(oc_line_reader_lineno(r) == n_lines);
    oc_line_reader_free(r);
}

OC_TEST(lines_chunk_boundaries)
{
    struct oc_err err;
    char p[600], g[600];
    size_t n, n_lines;
    char *text = big_text(&n, &n_lines);
    const char *dir = oc_test_tmpdir();

    oc_path_join(p, sizeof(p), dir, "big.txt", &err);
    oc_path_join(g, sizeof(g), dir, "big.txt.gz", &err);
    write_bytes(p, text, n);
    write_gz(g, "wb1", text, n);
    text[n] = '\0';
    check_big(p, text, n_lines);
    check_big(g, text, n_lines);
    free(text);
}

OC_TEST(lines_corrupt_gzip)
{
    struct oc_err err;
    char g[600], t[600];
    const char *dir = oc_test_tmpdir();
    size_t n = 200000, gn;
    char *text = malloc(n);
    uint64_t live = oc_mem_n_live();
    uint64_t s = 1;

    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1;
        text[i] = i % 40 == 39 ? '\n' : (char)('0' + (s >> 59));
    }
    oc_path_join(g, sizeof(g), dir, "bad.gz", &err);
    oc_path_join(t, sizeof(t), dir, "trunc.gz", &err);
    write_gz(g, "wb", text, n);
    char *z = slurp(g, &gn);
    /* Truncated: the first half of the compressed stream. */
    write_bytes(t, z, gn / 2);
    OC_CHECK_ERR(drain(t, NULL, &err), OC_ERR_FORMAT, &err, "truncated gzip data at line");
    OC_CHECK(strstr(err.msg, t) == err.msg);
    /* Corrupt: garbage in the middle of the deflate data. */
    for (size_t i = gn / 2; i < gn / 2 + 64; i++)
        z[i] = (char)(z[i] ^ 0x5a);
    write_bytes(g, z, gn);
    uint64_t returned = 0;
    OC_CHECK_ERR(drain(g, &returned, &err), OC_ERR_FORMAT, &err, "gzip data at line");
    OC_CHECK(strstr(err.msg, g) == err.msg);
    fprintf(stderr, "  corrupt: %s\n", err.msg);
    /* The named line is where decoding stopped: after the lines already returned. */
    const char *at = strstr(err.msg, "at line ");
    OC_CHECK(at && strtoull(at + 8, NULL, 10) > returned);
    OC_CHECK(returned < n / 40);
    /* Only the magic bytes. */
    write_bytes(g, "\x1f\x8b", 2);
    OC_CHECK_ERR(drain(g, NULL, &err), OC_ERR_FORMAT, &err, g);
    /* Trailing garbage after a member. */
    write_gz(g, "wb", "a\n", 2);
    {
        size_t m;
        char *one = slurp(g, &m);
        char *two = malloc(m + 8);
        memcpy(two, one, m);
        memcpy(two + m, "garbage!", 8);
        write_bytes(g, two, m + 8);
        const char *const want[] = {"a"};
        OC_CHECK_ERR(expect_lines(g, want, 1, &err), OC_ERR_FORMAT, &err, "corrupt gzip data");
        oc_free(one);
        free(two);
    }
    oc_free(z);
    free(text);
    OC_CHECK(oc_mem_n_live() == live);
}

OC_TEST(lines_too_long)
{
    struct oc_err err;
    char p[600];
    struct oc_line_reader *r = NULL;
    char *line;
    size_t len;
    char text[400];

    oc_path_join(p, sizeof(p), oc_test_tmpdir(), "long.txt", &err);
    memset(text, 'x', sizeof(text));
    text[99] = '\n';  /* line 1: 99 bytes */
    text[200] = '\r'; /* line 2: 100 bytes + CRLF: fits */
    text[201] = '\n';
    text[399] = '\n'; /* line 3: 197 bytes: too long */
    write_bytes(p, text, sizeof(text));
    OC_CHECK_OK(oc_line_reader_open(p, &r, &err), &err);
    if (!r)
        return;
    oc_line_reader_set_max_line(r, 100);
    OC_CHECK_OK(oc_line_reader_next(r, &line, &len, &err), &err);
    OC_CHECK(line && len == 99);
    OC_CHECK_OK(oc_line_reader_next(r, &line, &len, &err), &err);
    OC_CHECK(line && len == 100);
    OC_CHECK_ERR(oc_line_reader_next(r, &line, &len, &err), OC_ERR_FORMAT, &err,
                 "line 3 is longer than 100 bytes");
    OC_CHECK(strstr(err.msg, p) == err.msg);
    oc_line_reader_free(r);
}

/* A NUL byte is never text: inside a line, on a line of its own, or a zero-filled tail
   (what a crash can leave), plain or gzip, is refused naming the file, line and column. */
OC_TEST(lines_nul_byte_refused)
{
    struct oc_err err;
    char p[600], g[600];
    uint64_t lineno = 0;
    oc_path_join(p, sizeof(p), oc_test_tmpdir(), "nul.txt", &err);
    oc_path_join(g, sizeof(g), oc_test_tmpdir(), "nul.txt.gz", &err);

    static const char inside[] = "0 1\n1 2\0 9 9\n2 3\n";
    write_bytes(p, inside, sizeof(inside) - 1);
    OC_CHECK_ERR(drain(p, &lineno, &err), OC_ERR_FORMAT, &err, "line 2 has a NUL byte at column 4");
    OC_CHECK(strstr(err.msg, p) == err.msg);
    write_gz(g, "wb", inside, sizeof(inside) - 1);
    OC_CHECK_ERR(drain(g, &lineno, &err), OC_ERR_FORMAT, &err, "line 2 has a NUL byte at column 4");

    char tail[4100];
    memcpy(tail, "0 1\n", 4);
    memset(tail + 4, 0, sizeof(tail) - 4);
    write_bytes(p, tail, sizeof(tail));
    OC_CHECK_ERR(drain(p, &lineno, &err), OC_ERR_FORMAT, &err, "line 2 has a NUL byte at column 1");
    OC_CHECK(lineno == 1);
}
/* Each read or allocation fails in turn: the error is clean and nothing leaks. */
OC_TEST(lines_faults)
{
    struct oc_err err;
    char g[600];
    size_t n, n_lines;
    char *text = big_text(&n, &n_lines);
    uint64_t live = oc_mem_n_live();

    oc_path_join(g, sizeof(g), oc_test_tmpdir(), "f.gz", &err);
    write_gz(g, "wb1", text, n / 3);
    for (int km = 0; km < 3 * FAULT_MODE_COUNT; km++) {
        int kind = km / FAULT_MODE_COUNT, mode = km % FAULT_MODE_COUNT;
        static const enum oc_fault_kind kinds[3] = {OC_FAULT_READ, OC_FAULT_ALLOC, OC_FAULT_OPEN};
        static const int errs[3] = {EIO, ENOMEM, EACCES};
        static const int want[3] = {OC_ERR_IO, OC_ERR_NOMEM, OC_ERR_IO};
        int done = 0;
        for (uint64_t nth = 1; nth < 40 && !done; nth++) {
            struct oc_line_reader *r = NULL;
            char *line = NULL;
            size_t len;
            fault_arm_mode(mode, kinds[kind], nth, errs[kind]);
            int rc = oc_line_reader_open(g, &r, &err);
            while (rc == OC_OK && (rc = oc_line_reader_next(r, &line, &len, &err)) == OC_OK && line)
                ;
            if (!oc_fault_fired(kinds[kind])) {
                OC_CHECK_OK(rc, &err);
                OC_CHECK(nth > 1); /* the earlier runs failed */
                done = 1;
            } else {
                OC_CHECK(rc == want[kind]);
                if (kind != 1)
                    OC_CHECK(strstr(err.msg, g) == err.msg &&
                             strstr(err.msg, kind ? "Permission denied" : "Input/output"));
            }
            oc_fault_disarm_all();
            oc_line_reader_free(r);
            OC_CHECK(oc_mem_n_live() == live);
        }
        OC_CHECK(done);
    }
    free(text);
}

/* ---- filesystem helpers ---------------------------------------------------- */

static int count_entries(const char *dir, const char *needle)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
            (!needle || strstr(de->d_name, needle)))
            n++;
    if (d)
        closedir(d);
    return n;
}

OC_TEST(fs_atomic_write_and_read)
{
    struct oc_err err;
    char p[600];
    const char *dir = oc_test_tmpdir();
    char *data = NULL;
    size_t len = 0;
    uint64_t live = oc_mem_n_live();

    oc_path_join(p, sizeof(p), dir, "manifest.json", &err);
    OC_CHECK_OK(oc_write_file_atomic(p, "{\"v\": 1}", 8, &err), &err);
    OC_CHECK_OK(oc_write_file_atomic(p, "{\"v\": 22}", 9, &err), &err);
    OC_CHECK_OK(oc_read_file(p, 100, &data, &len, &err), &err);
    OC_CHECK(len == 9 && data && strcmp(data, "{\"v\": 22}") == 0);
    oc_free(data);
    OC_CHECK(count_entries(dir, NULL) == 1);

    /* A failed write keeps the old content and leaves no temporary file. */
    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    OC_CHECK_ERR(oc_write_file_atomic(p, "xxxx", 4, &err), OC_ERR_NOSPC, &err, ".tmp-");
    oc_fault_disarm_all();
    OC_CHECK(count_entries(dir, ".tmp") == 0);
    OC_CHECK_OK(oc_read_file(p, 100, &data, &len, &err), &err);
    OC_CHECK(len == 9 && data && memcmp(data, "{\"v\": 22}", 9) == 0);
    oc_free(data);

    /* The size guard, and a missing file. */
    OC_CHECK_ERR(oc_read_file(p, 8, &data, &len, &err), OC_ERR_FORMAT, &err, "9 bytes");
    OC_CHECK(data == NULL && strstr(err.msg, p) == err.msg);
    OC_CHECK_OK(oc_read_file(p, 9, &data, &len, &err), &err);
    oc_free(data);
    OC_CHECK_ERR(oc_read_file("/nonexistent/m.json", 0, &data, &len, &err), OC_ERR_NOTFOUND, &err,
                 "/nonexistent/m.json");
    /* /proc files report size 0: read until end of file. */
    OC_CHECK_OK(oc_read_file("/proc/self/status", 1 << 20, &data, &len, &err), &err);
    OC_CHECK(len > 0 && data && strstr(data, "Name:"));
    oc_free(data);
    OC_CHECK_ERR(oc_read_file("/proc/self/status", 10, &data, &len, &err), OC_ERR_FORMAT, &err,
                 "/proc/self/status");
    OC_CHECK_ERR(oc_rename_durable("/nonexistent/a", p, &err), OC_ERR_NOTFOUND, &err,
                 "/nonexistent/a");
    OC_CHECK_ERR(oc_dir_sync("/nonexistent", &err), OC_ERR_NOTFOUND, &err, "/nonexistent");
    OC_CHECK_OK(oc_dir_sync(dir, &err), &err);
    OC_CHECK(oc_mem_n_live() == live);
}

OC_TEST(fs_mkdir_rm_paths)
{
    struct oc_err err;
    char root[600], p[600], outside[600], q[600];
    const char *dir = oc_test_tmpdir();

    oc_path_join(root, sizeof(root), dir, "tree", &err);
    oc_path_join(outside, sizeof(outside), dir, "outside", &err);
    OC_CHECK_OK(oc_path_join(p, sizeof(p), root, "a/b/c/", &err), &err);
    OC_CHECK_OK(oc_mkdir_p(p, &err), &err);
    OC_CHECK_OK(oc_mkdir_p(p, &err), &err);
    OC_CHECK_OK(oc_mkdir_p(outside, &err), &err);
    OC_CHECK(oc_path_exists(p));

    /* Files at several levels, symlinks pointing out of the tree. */
    oc_path_join(q, sizeof(q), root, "a/b/c/f1", &err);
    write_bytes(q, "1", 1);
    oc_path_join(q, sizeof(q), root, "a/f2", &err);
    write_bytes(q, "2", 1);
    OC_CHECK_ERR(oc_mkdir_p(q, &err), OC_ERR_EXISTS, &err, "not a directory");
    oc_path_join(q, sizeof(q), outside, "keep", &err);
    write_bytes(q, "k", 1);
    oc_path_join(p, sizeof(p), root, "a/b/link_dir", &err);
    OC_CHECK(symlink(outside, p) == 0);
    oc_path_join(p, sizeof(p), root, "link_file", &err);
    OC_CHECK(symlink(q, p) == 0);
    for (int i = 0; i < 300; i++) { /* enough entries to need several readdir batches */
        char name[32];
        snprintf(name, sizeof(name), "a/b/many_%03d", i);
        oc_path_join(p, sizeof(p), root, name, &err);
        write_bytes(p, "m", 1);
    }
    OC_CHECK_OK(oc_rm_rf(root, &err), &err);
    OC_CHECK(!oc_path_exists(root));
    OC_CHECK(oc_path_exists(q)); /* the symlinks' targets survive */
    OC_CHECK(oc_path_exists(outside));
    OC_CHECK_OK(oc_rm_rf(root, &err), &err); /* missing: nothing to do */
    /* A symlink given directly is removed, not followed. */
    oc_path_join(p, sizeof(p), dir, "ln", &err);
    OC_CHECK(symlink(outside, p) == 0);
    OC_CHECK_OK(oc_rm_rf(p, &err), &err);
    OC_CHECK(oc_path_exists(q));
    OC_CHECK(!oc_path_exists(p));
    /* ... also with trailing slashes, which would make the kernel resolve it to its target */
    OC_CHECK(symlink(outside, p) == 0);
    char slashed[4200];
    snprintf(slashed, sizeof(slashed), "%s//", p);
    OC_CHECK_OK(oc_rm_rf(slashed, &err), &err);
    OC_CHECK(oc_path_exists(q));
    OC_CHECK(!oc_path_exists(p));

    /* path_join. */
    char small[8];
    OC_CHECK_OK(oc_path_join(small, sizeof(small), "ab/", "cd", &err), &err);
    OC_CHECK(strcmp(small, "ab/cd") == 0);
    OC_CHECK_OK(oc_path_join(small, sizeof(small), "", "cd", &err), &err);
    OC_CHECK(strcmp(small, "cd") == 0);
    OC_CHECK_ERR(oc_path_join(small, sizeof(small), "abcd", "efgh", &err), OC_ERR_ARG, &err,
                 "abcd/efgh");
    OC_CHECK(small[0] == '\0');
    OC_CHECK_ERR(oc_mkdir_p("", &err), OC_ERR_ARG, &err, NULL);
}

OC_TEST_MAIN()
