/*
 * test_io.c — tests of the io module's files, batch reader and writer:
 * round trips with and without O_DIRECT, alignment and truncation errors,
 * fault injection (EIO, short read, ENOSPC, failed allocations) with leak
 * checks, the batch reader against a naive copy on random overlapping ranges
 * through io_uring and through pread, its merge counts (and span.c's
 * prediction of them, equal to the reads it issues), and its per-request
 * completion callbacks (coverage, bytes in place, a read error mid-batch).
 * (Line reader and filesystem helpers: test_io_lines.c.)
 *
 * Place in the data flow: tests; links the library.
 * Thread-safety: single-threaded.
 * Ownership: files live in oc_test_tmpdir(), removed at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "harness.h"
#include "io/io_int.h"
#include "offcore/io.h"
#include "uring_util.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(((i + seed) * 2654435761u) >> 11);
}

/* Writes n pattern bytes to dir/name with plain stdio; returns the data (malloc'd by the test). */
static uint8_t *make_file(const char *dir, const char *name, size_t n, char *path, size_t pn)
{
    struct oc_err err;
    uint8_t *data = malloc(n ? n : 1);
    if (!data || oc_path_join(path, pn, dir, name, &err) != OC_OK)
        abort();
    fill_pattern(data, n, n);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, n, fp) != n || fclose(fp) != 0)
        abort();
    return data;
}

OC_TEST(file_roundtrip_buffered)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t in[10000], out[10000];
    uint64_t size = 0;
    uint64_t live = oc_mem_n_live();

    OC_CHECK_OK(oc_path_join(path, sizeof(path), oc_test_tmpdir(), "a.bin", &err), &err);
    fill_pattern(in, sizeof(in), 7);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_CREATE, &f, &err), &err);
    if (!f)
        return;
    OC_CHECK(!oc_file_is_direct(f));
    OC_CHECK(strcmp(oc_file_path(f), path) == 0);
    OC_CHECK(oc_file_fd(f) >= 0);
    OC_CHECK_OK(oc_file_pwrite(f, in, 3333, 0, &err), &err);
    OC_CHECK_OK(oc_file_pwrite(f, in + 3333, sizeof(in) - 3333, 3333, &err), &err);
    OC_CHECK_OK(oc_file_size(f, &size, &err), &err);
    OC_CHECK(size == sizeof(in));
    memset(out, 0, sizeof(out));
    OC_CHECK_OK(oc_file_pread(f, out + 17, 5000, 17, &err), &err);
    OC_CHECK(memcmp(out + 17, in + 17, 5000) == 0);
    size_t got = 0;
    OC_CHECK_OK(oc_file_pread_upto(f, out, 8000, 5000, &got, &err), &err);
    OC_CHECK(got == 5000);
    OC_CHECK(memcmp(out, in + 5000, 5000) == 0);
    OC_CHECK_OK(oc_file_truncate(f, 100, &err), &err);
    OC_CHECK_OK(oc_file_size(f, &size, &err), &err);
    OC_CHECK(size == 100);
    OC_CHECK_OK(oc_file_sync(f, &err), &err);
    OC_CHECK_OK(oc_file_close(f, &err), &err);
    OC_CHECK(oc_mem_n_live() == live);

    /* CREATE on an existing file, and opening a missing one. */
    OC_CHECK_ERR(oc_file_open(path, OC_FILE_WRITE | OC_FILE_CREATE, &f, &err), OC_ERR_EXISTS, &err,
                 path);
    OC_CHECK(f == NULL);
    strcat(path, ".missing");
    OC_CHECK_ERR(oc_file_open(path, OC_FILE_READ, &f, &err), OC_ERR_NOTFOUND, &err, path);
    OC_CHECK_ERR(oc_file_open(path, 0, &f, &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK(oc_mem_n_live() == live);
}

/* O_DIRECT round trip in dir; both outcomes (accepted or refused) are checked honestly. */
static void direct_roundtrip(const char *dir)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t *buf = NULL, *out = NULL;
    size_t got = 0;

    OC_CHECK_OK(oc_path_join(path, sizeof(path), dir, "d.bin", &err), &err);
    OC_CHECK_OK(
        oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_TRUNC | OC_FILE_DIRECT, &f, &err),
        &err);
    if (!f)
        return;
    buf = oc_io_buf_alloc(3 * OC_IO_ALIGN, "test", &err);
    out = oc_io_buf_alloc(4 * OC_IO_ALIGN, "test", &err);
    OC_CHECK(buf && out && ((uintptr_t)buf % OC_IO_ALIGN) == 0);
    if (!buf || !out)
        goto out;
    fill_pattern(buf, 3 * OC_IO_ALIGN, 3);
    OC_CHECK_OK(oc_file_pwrite(f, buf, 3 * OC_IO_ALIGN, 0, &err), &err);
    OC_CHECK_OK(oc_file_pread(f, out, 2 * OC_IO_ALIGN, OC_IO_ALIGN, &err), &err);
    OC_CHECK(memcmp(out, buf + OC_IO_ALIGN, 2 * OC_IO_ALIGN) == 0);
    /* File of 10000 bytes: an aligned read reaching past the end is short, not an error. */
    OC_CHECK_OK(oc_file_truncate(f, 10000, &err), &err);
    OC_CHECK_OK(oc_file_pread_upto(f, out, 4 * OC_IO_ALIGN, 0, &got, &err), &err);
    OC_CHECK(got == 10000);
    OC_CHECK(memcmp(out, buf, 10000) == 0);
    OC_CHECK_ERR(oc_file_pread(f, out, 3 * OC_IO_ALIGN, 0, &err), OC_ERR_FORMAT, &err,
                 "truncated: wanted 12288 bytes at offset 0, file ends at 10000");
    if (oc_file_is_direct(f)) {
        OC_CHECK_ERR(oc_file_pread(f, out + 1, OC_IO_ALIGN, 0, &err), OC_ERR_ARG, &err, path);
        OC_CHECK_ERR(oc_file_pread(f, out, 100, 0, &err), OC_ERR_ARG, &err, "not aligned");
        OC_CHECK_ERR(oc_file_pread(f, out, OC_IO_ALIGN, 512, &err), OC_ERR_ARG, &err, "offset 512");
        OC_CHECK_ERR(oc_file_pwrite(f, buf, 10, 0, &err), OC_ERR_ARG, &err, "O_DIRECT write");
    } else {
        fprintf(stderr, "  note: %s refuses O_DIRECT; checking buffered fallback\n", dir);
        OC_CHECK_OK(oc_file_pread(f, out + 1, 100, 7, &err), &err);
        OC_CHECK(memcmp(out + 1, buf + 7, 100) == 0);
    }
out:
    oc_free(buf);
    oc_free(out);
    OC_CHECK_OK(oc_file_close(f, &err), &err);
}

OC_TEST(file_roundtrip_direct)
{
    uint64_t live = oc_mem_n_live();
    direct_roundtrip(oc_test_tmpdir());
    /* tmpfs: refuses O_DIRECT on older kernels, accepts it on newer ones. */
    if (access("/dev/shm", W_OK) == 0) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/dev/shm/oc-test-io-%ld", (long)getpid());
        struct oc_err err;
        OC_CHECK_OK(oc_mkdir_p(dir, &err), &err);
        direct_roundtrip(dir);
        OC_CHECK_OK(oc_rm_rf(dir, &err), &err);
    }
    OC_CHECK(oc_mem_n_live() == live);
}

OC_TEST(file_truncated_read_message)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t out[200];
    uint8_t *data = make_file(oc_test_tmpdir(), "short.bin", 100, path, sizeof(path));

    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ, &f, &err), &err);
    if (f) {
        OC_CHECK_ERR(oc_file_pread(f, out, 50, 80, &err), OC_ERR_FORMAT, &err,
                     "truncated: wanted 50 bytes at offset 80, file ends at 100");
        OC_CHECK(strstr(err.msg, path) == err.msg);
        OC_CHECK_ERR(oc_file_pread(f, out, 10, 500, &err), OC_ERR_FORMAT, &err,
                     "wanted 10 bytes at offset 500, file ends at 100");
        OC_CHECK_OK(oc_file_pread(f, out, 100, 0, &err), &err);
        OC_CHECK(memcmp(out, data, 100) == 0);
        oc_file_close(f, NULL);
    }
    free(data);
}

/* Scans f from `from` in reads of up to `want` bytes, jumping `skip` bytes after each; checks
   every read's bytes against data. Returns the scan's result (its error in err). */
static int scan_all(const char *path, const uint8_t *data, uint64_t n, uint64_t from, uint64_t want,
                    uint64_t skip, uint8_t *buf, uint64_t buf_bytes, struct oc_crc_follow *crc,
                    struct oc_io_scan *sc, struct oc_err *err)
{
    int rc = oc_io_scan_open(sc, path, buf, buf_bytes, crc, err);
    for (uint64_t off = from; off < n && rc == OC_OK;) {
        uint64_t len = oc_io_scan_units(sc, off, 1);
        len = len < want ? len : want;
        len = len < n - off ? len : n - off;
        const uint8_t *p;
        if ((rc = oc_io_scan_read(sc, off, len, &p, err)) == OC_OK)
            OC_CHECK(memcmp(p, data + off, len) == 0);
        off += len + skip;
    }
    if (rc == OC_OK)
        rc = oc_io_scan_finish(sc, err);
    return rc;
}

/* The read-ahead scan: every byte as the file has it, read ahead (one synchronous read for an
   unbroken scan, one per jump), the checksum followed, a cut file and a failed read named. */
OC_TEST(scan_reads_ahead_follows_the_checksum_and_names_errors)
{
    struct oc_err err;
    char path[600];
    const uint64_t n = 3 * 1000 * 1000 + 123, half = 256 * 1024;
    uint8_t *data = make_file(oc_test_tmpdir(), "scan.bin", n, path, sizeof(path));
    uint8_t *buf = oc_io_buf_alloc(2 * half, "test scan", &err);
    OC_CHECK(data && buf);
    struct oc_io_scan sc;
    struct oc_crc_follow crc = {0, 0};
    OC_CHECK_OK(scan_all(path, data, n, 0, UINT64_MAX, 0, buf, 2 * half, &crc, &sc, &err), &err);
    OC_CHECK(sc.sync_reads == 1 && sc.read_bytes >= n); /* the rest came read ahead */
    OC_CHECK(crc.at == n && crc.crc == oc_crc32(0, data, n));
    oc_io_scan_close(&sc);
    /* odd read sizes and jumps: each jump past the read-ahead is a synchronous read */
    OC_CHECK_OK(scan_all(path, data, n, 77, 100003, 0, buf, 2 * half, NULL, &sc, &err), &err);
    OC_CHECK(sc.sync_reads == 1);
    oc_io_scan_close(&sc);
    OC_CHECK_OK(scan_all(path, data, n, 0, 1000, 600000, buf, 2 * half, NULL, &sc, &err), &err);
    OC_CHECK(sc.sync_reads == 5); /* reads at 0, 601000, ... 2404000 */
    oc_io_scan_close(&sc);
    /* a failed read of the read-ahead names the file and its offset */
    oc_fault_arm(OC_FAULT_READ, 2, EIO);
    OC_CHECK_ERR(scan_all(path, data, n, 0, UINT64_MAX, 0, buf, 2 * half, NULL, &sc, &err),
                 OC_ERR_IO, &err, "at offset");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    oc_io_scan_close(&sc);
    oc_fault_arm(OC_FAULT_READ, 0, 0);
    /* a read larger than half the buffer is refused, naming the file */
    const uint8_t *p;
    OC_CHECK_OK(oc_io_scan_open(&sc, path, buf, 2 * half, NULL, &err), &err);
    OC_CHECK_ERR(oc_io_scan_read(&sc, 100, half, &p, &err), OC_ERR_ARG, &err, "more than half");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    oc_io_scan_close(&sc);
    /* a buffer without two halves of two pages is refused */
    OC_CHECK_ERR(oc_io_scan_open(&sc, path, buf, 3 * OC_IO_ALIGN, NULL, &err), OC_ERR_ARG, &err,
                 "a scan needs a buffer");
    oc_io_scan_close(&sc);
    /* a file cut short: the read past its end is "truncated", naming it */
    OC_CHECK(truncate(path, (off_t)(n - 5000)) == 0);
    OC_CHECK_ERR(scan_all(path, data, n, 0, UINT64_MAX, 0, buf, 2 * half, NULL, &sc, &err),
                 OC_ERR_FORMAT, &err, "truncated");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    oc_io_scan_close(&sc);
    oc_free(buf);
    free(data);
}

OC_TEST(file_fault_injection)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t out[4096];
    uint8_t *data = make_file(oc_test_tmpdir(), "f.bin", 4096, path, sizeof(path));

    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE, &f, &err), &err);
    if (!f) {
        free(data);
        return;
    }
    oc_fault_arm(OC_FAULT_READ, 1, EIO);
    OC_CHECK_ERR(oc_file_pread(f, out, 100, 8, &err), OC_ERR_IO, &err,
                 "read of 100 bytes at offset 8 failed: Input/output error");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    OC_CHECK(err.sys_errno == EIO);
    OC_CHECK(oc_fault_fired(OC_FAULT_READ));

    /* Short read (errno 0) = premature end of file. */
    oc_fault_arm(OC_FAULT_READ, 1, 0);
    OC_CHECK_ERR(oc_file_pread(f, out, 100, 8, &err), OC_ERR_FORMAT, &err,
                 "truncated: wanted 100 bytes at offset 8, file ends at 8");
    oc_fault_arm(OC_FAULT_READ, 2, EIO); /* the 2nd read fails: the first succeeds */
    OC_CHECK_OK(oc_file_pread(f, out, 100, 0, &err), &err);
    OC_CHECK_ERR(oc_file_pread(f, out, 100, 0, &err), OC_ERR_IO, &err, path);
    OC_CHECK(memcmp(out, data, 100) == 0);

    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    OC_CHECK_ERR(oc_file_pwrite(f, data, 10, 4096, &err), OC_ERR_NOSPC, &err,
                 "write of 10 bytes at offset 4096 failed: No space left on device");
    oc_fault_arm(OC_FAULT_WRITE, 1, EDQUOT);
    OC_CHECK_ERR(oc_file_pwrite(f, data, 10, 0, &err), OC_ERR_NOSPC, &err, path);
    oc_fault_arm(OC_FAULT_WRITE, 1, EIO);
    OC_CHECK_ERR(oc_file_pwrite(f, data, 10, 0, &err), OC_ERR_IO, &err, "Input/output error");
    oc_fault_disarm_all();
    oc_file_close(f, NULL);
    free(data);
}

/* ---- batch reader ------------------------------------------------------- */

struct range {
    uint64_t off;
    size_t len;
};

/* Random ranges: many inside a few hot pages, some long, some ending exactly at EOF. */
static void random_ranges(struct range *r, size_t n, uint64_t size)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t k = rnd() % 10;
        size_t len;
        uint64_t off;
        if (k < 5) { /* small, clustered in 8 hot pages */
            len = 1 + (size_t)(rnd() % 300);
            off = (rnd() % 8) * 4096 * 7 + rnd() % 4096;
        } else if (k < 8) {
            len = 1 + (size_t)(rnd() % 9000);
            off = rnd() % size;
        } else if (k < 9) { /* longer than the merged-read cap of a small bounce */
            len = 1 + (size_t)(rnd() % 200000);
            off = rnd() % size;
        } else { /* tail of the file */
            len = 1 + (size_t)(rnd() % 5000);
            off = size - len;
        }
        if (off + len > size)
            len = (size_t)(size - off);
        if (len == 0) {
            len = 1;
            off = size - 1;
        }
        r[i] = (struct range){off, len};
    }
}

static void batch_vs_naive(int direct, int no_uring, size_t bounce, unsigned depth)
{
    enum { N = 1500 };
    struct oc_err err;
    struct oc_file *f = NULL;
    struct oc_io_batch *b = NULL;
    char path[600];
    const uint64_t size = 3 * 1048576 + 1234;
    uint8_t *data = make_file(oc_test_tmpdir(), "batch.bin", size, path, sizeof(path));
    struct range *r = malloc(N * sizeof(*r));
    uint8_t **dst = calloc(N, sizeof(*dst));
    uint64_t live = oc_mem_n_live();

    /* no_uring 1: the environment says so; 2: io_uring setup fails (fault), pread takes over */
    if (no_uring == 1)
        setenv("OC_NO_URING", "1", 1);
    if (no_uring == 2)
        oc_fault_arm_persistent(OC_FAULT_URING_SETUP, 1, ENOSYS);
    OC_CHECK_OK(oc_io_batch_new(depth, bounce, &b, &err), &err);
    unsetenv("OC_NO_URING");
    if (no_uring == 2 && test_uring_expected())
        OC_CHECK(oc_fault_fired(OC_FAULT_URING_SETUP)); /* the fallback was the fault's doing */
    oc_fault_disarm_all();
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | (direct ? OC_FILE_DIRECT : 0), &f, &err), &err);
    if (!b || !f || !r || !dst)
        goto out;
    OC_CHECK(oc_io_batch_uses_uring(b) == (!no_uring && test_uring_expected()));
    fprintf(stderr, "  direct=%d uring=%d bounce=%zu depth=%u\n", oc_file_is_direct(f),
            oc_io_batch_uses_uring(b), bounce, depth);
    for (int round = 0; round < 3; round++) {
        uint64_t req_bytes = 0;
        const struct oc_io_stats st0 = *oc_io_batch_stats(b);
        random_ranges(r, N, size);
        for (size_t i = 0; i < N; i++) {
            if (round == 0)
                dst[i] = malloc(200001 + 3);
            /* Odd destination offsets: any alignment must work. */
            OC_CHECK_OK(oc_io_batch_add(b, f, r[i].off, r[i].len, dst[i] + (i % 3), &err), &err);
            req_bytes += r[i].len;
        }
        /* The second and third runs are steady state: no allocation may happen. */
        if (round > 0)
            oc_fault_arm(OC_FAULT_ALLOC, 1, ENOMEM);
        OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
        if (round > 0) {
            OC_CHECK(!oc_fault_fired(OC_FAULT_ALLOC));
            oc_fault_disarm_all();
        }
        size_t bad = 0;
        for (size_t i = 0; i < N; i++)
            bad += memcmp(dst[i] + (i % 3), data + r[i].off, r[i].len) != 0;
        OC_CHECK(bad == 0);
        const struct oc_io_stats *st = oc_io_batch_stats(b);
        OC_CHECK(st->n_requests - st0.n_requests == N);
        OC_CHECK(st->requested_bytes - st0.requested_bytes == req_bytes);
        OC_CHECK(st->n_reads - st0.n_reads < N);
        OC_CHECK(st->read_bytes - st0.read_bytes >= size / 4);
        OC_CHECK(st->read_bytes - st0.read_bytes <= N * (uint64_t)210000);
        /* An empty batch runs and reads nothing. */
        OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
        OC_CHECK(oc_io_batch_stats(b)->n_reads == st->n_reads);
    }
out:
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    OC_CHECK(oc_mem_n_live() == live);
    for (size_t i = 0; dst && i < N; i++)
        free(dst[i]);
    free(dst);
    free(r);
    free(data);
}

OC_TEST(batch_random_uring_direct)
{
    TEST_REQUIRE_URING();
    batch_vs_naive(1, 0, 4 << 20, 32);
    batch_vs_naive(1, 0, 64 << 10, 4); /* many rounds, split requests */
    /* the bounce ring wraps with reads of every size in flight, more reads allowed than fit */
    batch_vs_naive(1, 0, 20 << 10, 64);
}

OC_TEST(batch_random_uring_buffered)
{
    TEST_REQUIRE_URING();
    batch_vs_naive(0, 0, 1 << 20, 16);
}

/* "Always keep a pread fallback": a ring that cannot be set up means pread, same bytes. */
OC_TEST(batch_uring_setup_fault_falls_back_to_pread)
{
    TEST_REQUIRE_URING(); /* a setup to refuse */
    batch_vs_naive(1, 2, 1 << 20, 16);
    batch_vs_naive(0, 2, 64 << 10, 4);
}

/* Open, fsync and rename faults (one-shot and persistent) end in clean errors naming the file. */
OC_TEST(open_fsync_rename_faults)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600], tmp[700];
    uint8_t out[100];
    uint64_t live = oc_mem_n_live();
    uint8_t *data = make_file(oc_test_tmpdir(), "o.bin", 4096, path, sizeof(path));

    oc_fault_arm(OC_FAULT_OPEN, 1, EACCES);
    OC_CHECK_ERR(oc_file_open(path, OC_FILE_READ, &f, &err), OC_ERR_IO, &err,
                 "cannot open: Permission denied");
    OC_CHECK(f == NULL && strstr(err.msg, path) == err.msg && err.sys_errno == EACCES);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ, &f, &err), &err); /* one-shot: once */
    oc_file_close(f, NULL);
    f = NULL;
    oc_fault_arm_persistent(OC_FAULT_OPEN, 2, EMFILE);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE, &f, &err), &err);
    for (int i = 0; i < 3; i++) {
        struct oc_file *g = NULL;
        OC_CHECK_ERR(oc_file_open(path, OC_FILE_READ, &g, &err), OC_ERR_IO, &err,
                     "Too many open files");
    }
    oc_fault_disarm_all();

    /* persistent reads keep failing; one-shot ones fail once */
    oc_fault_arm_persistent(OC_FAULT_READ, 1, EIO);
    for (int i = 0; i < 3; i++)
        OC_CHECK_ERR(oc_file_pread(f, out, 100, 0, &err), OC_ERR_IO, &err, path);
    oc_fault_arm(OC_FAULT_READ, 1, EIO);
    OC_CHECK(oc_file_pread(f, out, 100, 0, &err) == OC_ERR_IO);
    OC_CHECK_OK(oc_file_pread(f, out, 100, 0, &err), &err);
    OC_CHECK(memcmp(out, data, 100) == 0);

    oc_fault_arm(OC_FAULT_FSYNC, 1, EIO);
    OC_CHECK_ERR(oc_file_sync(f, &err), OC_ERR_IO, &err, "fsync failed: Input/output error");
    OC_CHECK_OK(oc_file_sync(f, &err), &err);
    oc_fault_disarm_all();
    oc_file_close(f, NULL);

    /* An atomic write that fails at fsync, rename or open leaves the old file and no tmp. */
    const struct {
        enum oc_fault_kind kind;
        int e;
        const char *msg;
    } cases[] = {{OC_FAULT_FSYNC, EIO, "fsync failed"},
                 {OC_FAULT_RENAME, EXDEV, "cannot rename"},
                 {OC_FAULT_OPEN, EACCES, "cannot open"},
                 {OC_FAULT_WRITE, ENOSPC, "No space left"}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int persistent = 0; persistent < 2; persistent++) {
            if (persistent)
                oc_fault_arm_persistent(cases[c].kind, 1, cases[c].e);
            else
                oc_fault_arm(cases[c].kind, 1, cases[c].e);
            int rc = oc_write_file_atomic(path, "new", 3, &err);
            oc_fault_disarm_all();
            OC_CHECK(rc != OC_OK && strstr(err.msg, cases[c].msg) && strstr(err.msg, path));
            snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
            OC_CHECK(!oc_path_exists(tmp));
            char *back = NULL;
            size_t len = 0;
            OC_CHECK_OK(oc_read_file(path, 0, &back, &len, &err), &err);
            OC_CHECK(back && len == 4096 && memcmp(back, data, 4096) == 0);
            oc_free(back);
        }
    }
    /* The directory fsync after the rename fails: an error, and the new file is whole. */
    oc_fault_arm(OC_FAULT_FSYNC, 2, EIO);
    OC_CHECK_ERR(oc_write_file_atomic(path, "new", 3, &err), OC_ERR_IO, &err,
                 "directory fsync failed");
    oc_fault_disarm_all();
    char *back = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(path, 0, &back, &len, &err), &err);
    OC_CHECK(back && len == 3 && memcmp(back, "new", 3) == 0);
    oc_free(back);
    OC_CHECK(oc_mem_n_live() == live);
    free(data);
}

OC_TEST(batch_random_pread)
{
    batch_vs_naive(1, 1, 4 << 20, 32);
    batch_vs_naive(0, 1, 12 << 10, 8);
}

static struct oc_io_batch *new_batch(int no_uring, size_t bounce)
{
    struct oc_err err;
    struct oc_io_batch *b = NULL;
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    OC_CHECK_OK(oc_io_batch_new(8, bounce, &b, &err), &err);
    unsetenv("OC_NO_URING");
    OC_CHECK(b && oc_io_batch_uses_uring(b) == (!no_uring && test_uring_expected()));
    return b;
}

static void batch_merge_counts(int no_uring)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t *data = make_file(oc_test_tmpdir(), "m.bin", 2 << 20, path, sizeof(path));
    uint8_t out[8][600];
    struct oc_io_batch *b = new_batch(no_uring, 1 << 20);
    const struct oc_io_stats *st;

    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    if (!b || !f)
        goto out;
    st = oc_io_batch_stats(b);
    /* 8 requests inside page 5 (added out of order) => 1 read of 4096 bytes. */
    for (int i = 7; i >= 0; i--)
        OC_CHECK_OK(oc_io_batch_add(b, f, 5 * 4096 + (uint64_t)i * 500, 500, out[i], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_requests == 8 && st->n_reads == 1);
    OC_CHECK(st->read_bytes == 4096);
    OC_CHECK(st->requested_bytes == 4000);
    for (int i = 0; i < 8; i++)
        OC_CHECK(memcmp(out[i], data + 5 * 4096 + i * 500, 500) == 0);

    /* Touching pages merge (1 read of 8192); a distant page is its own read. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 4096 - 10, 20, out[0], &err), &err); /* pages 0-1 */
    OC_CHECK_OK(oc_io_batch_add(b, f, 8192 + 5, 10, out[1], &err), &err);  /* page 2 */
    OC_CHECK_OK(oc_io_batch_add(b, f, 40960, 10, out[2], &err), &err);     /* page 10 */
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads == 1 + 2);
    OC_CHECK(st->read_bytes == 4096 + 3 * 4096 + 4096);
    OC_CHECK(memcmp(out[0], data + 4086, 20) == 0);
    OC_CHECK(memcmp(out[1], data + 8197, 10) == 0);
    OC_CHECK(memcmp(out[2], data + 40960, 10) == 0);

    /* A read never exceeds max_read: 1 MiB of contiguous requests => 1 read. */
    size_t cap = oc_io_batch_max_read(b);
    OC_CHECK(cap == 1 << 20);
    uint8_t *big = malloc((1 << 20) + 1);
    uint64_t n0 = st->n_reads;
    for (uint64_t off = 0; off < (1 << 20); off += 65536)
        OC_CHECK_OK(oc_io_batch_add(b, f, off, 65536, big + off, &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads - n0 == 1);
    OC_CHECK(memcmp(big, data, 1 << 20) == 0);
    /* One request whose pages span more than max_read is split: 2 reads. */
    memset(big, 0, (1 << 20) + 1);
    OC_CHECK_OK(oc_io_batch_add(b, f, 1, 1 << 20, big, &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads - n0 == 3);
    OC_CHECK(st->n_requests == 8 + 3 + 16 + 1);
    OC_CHECK(memcmp(big, data + 1, 1 << 20) == 0);
    free(big);
    /* Zero-length requests count but read nothing. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 12345, 0, NULL, &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads - n0 == 3);
out:
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    free(data);
}

OC_TEST(batch_merge_counts_uring)
{
    TEST_REQUIRE_URING();
    batch_merge_counts(0);
}

OC_TEST(batch_merge_counts_pread)
{
    batch_merge_counts(1);
}

/*
 * The block reader's crossover: with a gap of 2 pages, spans 1 or 2 pages
 * apart are read as one (the hole along), 3 apart are not; max_read still
 * caps a read; merging off ignores the gap. Every request gets its bytes.
 */
static void batch_gap_counts(int no_uring)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t *data = make_file(oc_test_tmpdir(), "g.bin", 2 << 20, path, sizeof(path));
    uint8_t out[6][100];
    struct oc_io_batch *b = new_batch(no_uring, 64 << 10);
    const struct oc_io_stats *st;
    /* pages 0, 2 (hole of 1), 5 (hole of 2), 9 (hole of 3), 10, and 30 */
    static const uint64_t page[6] = {0, 2, 5, 9, 10, 30};

    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    if (!b || !f)
        goto out;
    st = oc_io_batch_stats(b);
    oc_io_batch_set_gap(b, 2 * 4096 + 100); /* rounded down to 2 pages */
    for (int i = 5; i >= 0; i--)
        OC_CHECK_OK(oc_io_batch_add(b, f, page[i] * 4096 + 7, 100, out[i], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_requests == 6);
    OC_CHECK(st->n_reads == 3); /* [0, 6), [9, 11), [30, 31) */
    OC_CHECK(st->read_bytes == (6 + 2 + 1) * 4096);
    OC_CHECK(st->requested_bytes == 600);
    for (int i = 0; i < 6; i++)
        OC_CHECK(memcmp(out[i], data + page[i] * 4096 + 7, 100) == 0);

    /* The gap never makes a read past max_read (64 KiB here): 16 pages apart, 2 reads. */
    oc_io_batch_set_gap(b, 1 << 20);
    uint64_t n0 = st->n_reads;
    OC_CHECK_OK(oc_io_batch_add(b, f, 0, 100, out[0], &err), &err);
    OC_CHECK_OK(oc_io_batch_add(b, f, 16 * 4096, 100, out[1], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads - n0 == 2);
    OC_CHECK(memcmp(out[1], data + 16 * 4096, 100) == 0);

    /* Merging off: every request its own read, gap or not. */
    oc_io_batch_set_merge(b, 0);
    n0 = st->n_reads;
    for (int i = 0; i < 6; i++)
        OC_CHECK_OK(oc_io_batch_add(b, f, page[i] * 4096, 100, out[i], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(st->n_reads - n0 == 6);
out:
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    free(data);
}

OC_TEST(batch_gap_counts_uring)
{
    TEST_REQUIRE_URING();
    batch_gap_counts(0);
}

OC_TEST(batch_gap_counts_pread)
{
    batch_gap_counts(1);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return (a > c) - (a < c);
}

/*
 * The merge rule written once (span.c): oc_io_span_count predicts exactly the
 * reads and bytes the reader issues for the same rows (random, repeated, in
 * any order), whatever the row size (a page's part, several pages, past
 * max_read: split), the gap, merging on or off and max_read (its bounce).
 */
static void span_count_is_the_readers(int no_uring)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    const uint64_t size = 8u << 20, data_off = 128; /* a page multiple: no span past the end */
    uint8_t *data = make_file(oc_test_tmpdir(), "span.bin", size, path, sizeof(path));
    static const uint64_t row_bytes[] = {100, 4096, 5000, 300000, 1536u << 10};
    static const uint64_t gaps[] = {0, 8192, 100000, 1u << 20};
    static const size_t bounces[] = {64u << 10, 2u << 20};
    uint64_t offs[64];
    uint8_t *dst = malloc(16u << 20);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    for (int bi = 0; f && dst && bi < 2; bi++) {
        struct oc_io_batch *b = new_batch(no_uring, bounces[bi]);
        if (!b)
            break;
        const struct oc_io_stats *st = oc_io_batch_stats(b);
        for (int ri = 0; ri < 5; ri++)
            for (int gi = 0; gi < 4; gi++)
                for (int merge = 0; merge < 2; merge++) {
                    uint64_t len = row_bytes[ri], n_rows = (size - data_off) / len;
                    uint64_t n = (16u << 20) / len < 64 ? (16u << 20) / len : 64;
                    for (uint64_t i = 0; i < n; i++) /* some rows twice, neighbours often */
                        offs[i] = data_off + (rnd() % (n_rows < 3 * n ? n_rows : 3 * n)) * len;
                    oc_io_batch_set_merge(b, merge);
                    oc_io_batch_set_gap(b, gaps[gi]);
                    uint64_t r0 = st->n_reads, b0 = st->read_bytes;
                    for (uint64_t i = 0; i < n; i++)
                        OC_CHECK_OK(oc_io_batch_add(b, f, offs[i], len, dst + i * len, &err), &err);
                    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
                    qsort(offs, n, sizeof(uint64_t), cmp_u64);
                    struct oc_io_span_rule rule = {merge, gaps[gi], oc_io_batch_max_read(b)};
                    uint64_t reads = 0, bytes = 0;
                    oc_io_span_count(&rule, offs, n, len, &reads, &bytes);
                    OC_CHECK(reads == st->n_reads - r0);
                    OC_CHECK(bytes == st->read_bytes - b0);
                }
        oc_io_batch_free(b);
    }
    /* nothing to read: no read */
    struct oc_io_span_rule rule = {1, 0, OC_IO_MAX_READ};
    uint64_t reads = 0, bytes = 0;
    oc_io_span_count(&rule, offs, 0, 100, &reads, &bytes);
    oc_io_span_count(&rule, offs, 3, 0, &reads, &bytes);
    OC_CHECK(reads == 0 && bytes == 0);
    oc_file_close(f, NULL);
    free(dst);
    free(data);
}

OC_TEST(span_count_is_the_readers_uring)
{
    TEST_REQUIRE_URING();
    span_count_is_the_readers(0);
}

OC_TEST(span_count_is_the_readers_pread)
{
    span_count_is_the_readers(1);
}

/* The crossover: bandwidth / IOPS in whole pages, 0 for nonsense, capped at 64 MiB. */
OC_TEST(disk_gap_for)
{
    OC_CHECK(oc_io_gap_for(1.6e9, 100e3) == 12288); /* 16,000 bytes: 3 pages */
    OC_CHECK(oc_io_gap_for(1.6e9, 1e6) == 0);       /* a request costs under a page */
    OC_CHECK(oc_io_gap_for(0, 100e3) == 0);
    OC_CHECK(oc_io_gap_for(1.6e9, 0) == 0);
    OC_CHECK(oc_io_gap_for(1e12, 1) == (64u << 20));
}

/*
 * The probe: a file below OC_IO_PROBE_MIN_BYTES is not measured (crossover
 * 0); one above it is, with positive figures, once per device; the
 * environment's OC_IO_GAP_BYTES replaces the crossover; a read error during
 * the probe names the file.
 */
OC_TEST(disk_probe)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    struct oc_io_disk d;
    char path[600];
    free(make_file(oc_test_tmpdir(), "small.bin", 1 << 20, path, sizeof(path)));
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    OC_CHECK_OK(oc_io_disk_probe(f, &d, &err), &err);
    OC_CHECK(!d.measured && d.gap_bytes == 0);
    setenv("OC_IO_GAP_BYTES", "20000", 1);
    OC_CHECK_OK(oc_io_disk_of(f, &d, &err), &err);
    OC_CHECK(d.gap_bytes == 16384);
    unsetenv("OC_IO_GAP_BYTES");
    oc_file_close(f, NULL);

    OC_CHECK(strlen(oc_test_tmpdir()) + 9 < sizeof(path));
    strcpy(path, oc_test_tmpdir());
    strcat(path, "/big.bin");
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    OC_CHECK(fd >= 0 && ftruncate(fd, (off_t)OC_IO_PROBE_MIN_BYTES + (1 << 20)) == 0);
    close(fd);
    f = NULL;
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    if (!f || !oc_file_is_direct(f)) {
        oc_file_close(f, NULL);
        OC_SKIP("no O_DIRECT on the test directory's filesystem");
    }
    OC_CHECK_OK(oc_io_disk_probe(f, &d, &err), &err);
    OC_CHECK(d.measured && d.seq_bps > 0 && d.rand_iops > 0 && d.rand_iops_deep > 0);
    OC_CHECK(d.gap_bytes == oc_io_gap_for(d.seq_bps, d.rand_iops));
    struct oc_io_disk again;
    OC_CHECK_OK(oc_io_disk_of(f, &again, &err), &err);
    OC_CHECK(again.measured);
    /* a read that fails while probing is an error naming the file */
    oc_fault_arm(OC_FAULT_READ, 1, EIO);
    int rc = oc_io_disk_probe(f, &d, &err);
    oc_fault_disarm_all();
    OC_CHECK(rc == OC_ERR_IO && strstr(err.msg, "big.bin") && strstr(err.msg, "disk probe"));
    OC_CHECK(!d.measured);
    oc_file_close(f, NULL);
}

static void batch_errors(int no_uring)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t *data = make_file(oc_test_tmpdir(), "e.bin", 10000, path, sizeof(path));
    uint8_t out[3][100];
    uint64_t live = oc_mem_n_live();
    struct oc_io_batch *b = new_batch(no_uring, 1 << 16);

    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    if (!b || !f)
        goto out;
    /* The last bytes of an unaligned file come back through a short read. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 9950, 50, out[0], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(memcmp(out[0], data + 9950, 50) == 0);
    OC_CHECK(oc_io_batch_stats(b)->read_bytes == 10000 - 8192);

    /* A request past end of file is an error naming the file and offset. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 100, 10, out[0], &err), &err);
    OC_CHECK_OK(oc_io_batch_add(b, f, 9990, 20, out[1], &err), &err);
    OC_CHECK_ERR(oc_io_batch_run(b, &err), OC_ERR_FORMAT, &err,
                 "truncated: wanted 20 bytes at offset 9990, file ends at 10000");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    /* The batch is empty after a failed run and usable again. */
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);

    /* EIO on the 2nd completed read (pages 0 and 2: two reads). */
    uint64_t reads0 = oc_io_batch_stats(b)->n_reads;
    OC_CHECK_OK(oc_io_batch_add(b, f, 0, 10, out[0], &err), &err);
    OC_CHECK_OK(oc_io_batch_add(b, f, 9000, 10, out[2], &err), &err);
    oc_fault_arm(OC_FAULT_READ, 2, EIO);
    OC_CHECK_ERR(oc_io_batch_run(b, &err), OC_ERR_IO, &err, "failed: Input/output error");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    OC_CHECK(oc_fault_fired(OC_FAULT_READ));
    OC_CHECK(oc_io_batch_stats(b)->n_reads - reads0 == 2);

    /* Short read (premature end of file) on the 1st read. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 4000, 200, out[0], &err), &err);
    oc_fault_arm(OC_FAULT_READ, 1, 0);
    OC_CHECK_ERR(oc_io_batch_run(b, &err), OC_ERR_FORMAT, &err, "truncated");
    oc_fault_disarm_all();

    /* Then everything works again. */
    OC_CHECK_OK(oc_io_batch_add(b, f, 4000, 100, out[0], &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(memcmp(out[0], data + 4000, 100) == 0);

    OC_CHECK_ERR(oc_io_batch_add(b, NULL, 0, 1, out[0], &err), OC_ERR_ARG, &err, NULL);
    OC_CHECK_ERR(oc_io_batch_add(b, f, UINT64_MAX - 2, 10, out[0], &err), OC_ERR_ARG, &err, path);
out:
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    OC_CHECK(oc_mem_n_live() == live);
    free(data);
}

OC_TEST(batch_errors_uring)
{
    TEST_REQUIRE_URING();
    batch_errors(0);
}

OC_TEST(batch_errors_pread)
{
    batch_errors(1);
}

/* ---- per-request completion callbacks ----------------------------------- */

struct cb_log {
    const uint8_t *data; /* the file's bytes */
    const struct range *r;
    uint8_t **dst;
    unsigned *calls; /* per request */
    size_t n_calls, n_wrong;
    uint64_t last_off;  /* start of the last unsplit request called back */
    size_t n_unordered; /* unsplit requests called back before one at a lower offset */
    uint64_t max_read;  /* the reader's merged-read cap (requests past it are split) */
};

/* Checks, at call time, that the request's bytes are already in place. */
static void cb_done(void *ctx, uint64_t tag, void *dst, size_t len)
{
    struct cb_log *lg = ctx;
    lg->calls[tag]++;
    lg->n_calls++;
    uint64_t off = lg->r[tag].off;
    if (oc_io_align_down(off) + lg->max_read >= off + len) { /* one piece */
        lg->n_unordered += off < lg->last_off;
        lg->last_off = off;
    }
    if (dst != lg->dst[tag] || len != lg->r[tag].len ||
        memcmp(dst, lg->data + lg->r[tag].off, len) != 0)
        lg->n_wrong++;
}

/*
 * Random ranges (some split over several reads), every other one with a
 * callback: each is called back exactly once, with its bytes in place, during
 * run (through pread in offset order, through io_uring as reads complete);
 * then a read error mid-batch: only requests whose bytes arrived are
 * called back, never twice, and the batch works again.
 */
static void batch_callbacks(int no_uring, int register_file)
{
    enum { N = 800 };
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    const uint64_t size = 2 * 1048576 + 777;
    uint8_t *data = make_file(oc_test_tmpdir(), "cb.bin", size, path, sizeof(path));
    struct range *r = malloc(N * sizeof(*r));
    uint8_t **dst = calloc(N, sizeof(*dst));
    unsigned *calls = calloc(N, sizeof(*calls));
    uint64_t live = oc_mem_n_live();
    struct oc_io_batch *b = NULL;
    if (no_uring)
        setenv("OC_NO_URING", "1", 1);
    OC_CHECK_OK(oc_io_batch_new(16, 64 << 10, &b, &err), &err);
    unsetenv("OC_NO_URING");
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    if (!b || !f || !r || !dst || !calls)
        goto out;
    int reg = register_file ? oc_io_batch_register_file(b, f) : 0;
    OC_CHECK(!no_uring || !reg);
    if (register_file)
        OC_CHECK(oc_io_batch_register_file(b, f) == reg); /* idempotent */
    fprintf(stderr, "  uring=%d registered file=%d\n", oc_io_batch_uses_uring(b), reg);
    struct cb_log lg = {data, r, dst, calls, 0, 0, 0, 0, oc_io_batch_max_read(b)};
    random_ranges(r, N, size);
    for (size_t i = 0; i < N; i++) {
        dst[i] = malloc(r[i].len);
        if (i % 2)
            OC_CHECK_OK(oc_io_batch_add(b, f, r[i].off, r[i].len, dst[i], &err), &err);
        else
            OC_CHECK_OK(oc_io_batch_add_cb(b, f, r[i].off, r[i].len, dst[i], cb_done, &lg, i, &err),
                        &err);
    }
    OC_CHECK(lg.n_calls == 0);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    size_t wrong_calls = 0, bad = 0;
    for (size_t i = 0; i < N; i++) {
        wrong_calls += calls[i] != (i % 2 ? 0u : 1u);
        bad += memcmp(dst[i], data + r[i].off, r[i].len) != 0;
    }
    OC_CHECK(wrong_calls == 0 && bad == 0 && lg.n_wrong == 0);
    OC_CHECK(lg.n_calls == N / 2);
    /* pread reads spans in offset order: unsplit requests are called back in offset order */
    if (!oc_io_batch_uses_uring(b))
        OC_CHECK(lg.n_unordered == 0);
    fprintf(stderr, "  %zu unsplit requests called back out of offset order\n", lg.n_unordered);

    /* A zero-length request is called back at once. */
    uint8_t one;
    struct range zero = {5, 0};
    uint8_t *zdst = &one;
    unsigned zcalls = 0;
    struct cb_log lz = {data, &zero, &zdst, &zcalls, 0, 0, 0, 0, oc_io_batch_max_read(b)};
    OC_CHECK_OK(oc_io_batch_add_cb(b, f, 5, 0, &one, cb_done, &lz, 0, &err), &err);
    OC_CHECK(zcalls == 1 && lz.n_wrong == 0);

    /* EIO on the 5th completed read: the run fails, callbacks only for bytes that arrived. */
    memset(calls, 0, N * sizeof(*calls));
    lg.n_calls = lg.n_wrong = 0;
    for (size_t i = 0; i < N; i++) {
        memset(dst[i], 0, r[i].len);
        OC_CHECK_OK(oc_io_batch_add_cb(b, f, r[i].off, r[i].len, dst[i], cb_done, &lg, i, &err),
                    &err);
    }
    oc_fault_arm(OC_FAULT_READ, 5, EIO);
    OC_CHECK_ERR(oc_io_batch_run(b, &err), OC_ERR_IO, &err, "offset");
    oc_fault_disarm_all();
    size_t twice = 0;
    for (size_t i = 0; i < N; i++)
        twice += calls[i] > 1;
    OC_CHECK(twice == 0 && lg.n_wrong == 0);
    OC_CHECK(lg.n_calls < N);
    fprintf(stderr, "  read error mid-batch: %zu of %d requests called back\n", lg.n_calls, N);
    /* usable again */
    lg.n_calls = 0;
    memset(calls, 0, N * sizeof(*calls));
    OC_CHECK_OK(oc_io_batch_add_cb(b, f, r[1].off, r[1].len, dst[1], cb_done, &lg, 1, &err), &err);
    OC_CHECK_OK(oc_io_batch_run(b, &err), &err);
    OC_CHECK(lg.n_calls == 1 && calls[1] == 1 && lg.n_wrong == 0);
out:
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    OC_CHECK(oc_mem_n_live() == live);
    for (size_t i = 0; dst && i < N; i++)
        free(dst[i]);
    free(dst);
    free(calls);
    free(r);
    free(data);
}

OC_TEST(batch_callbacks_uring)
{
    TEST_REQUIRE_URING();
    batch_callbacks(0, 0);
}

OC_TEST(batch_callbacks_uring_registered_file)
{
    TEST_REQUIRE_URING();
    batch_callbacks(0, 1);
}

OC_TEST(batch_callbacks_pread)
{
    batch_callbacks(1, 1);
}

/* Every allocation of new/add/run fails in turn: a clean NOMEM and no leak each time. */
OC_TEST(batch_alloc_faults)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    char path[600];
    uint8_t *data = make_file(oc_test_tmpdir(), "a.bin", 100000, path, sizeof(path));
    uint8_t *out = malloc(300 * 100);
    uint64_t live = oc_mem_n_live();
    int done = 0;

    for (uint64_t nth = 1; nth < 50 && !done; nth++) {
        struct oc_io_batch *b = NULL;
        int rc;
        oc_fault_arm(OC_FAULT_ALLOC, nth, ENOMEM);
        rc = oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err);
        if (rc == OC_OK)
            rc = oc_io_batch_new(4, 1 << 16, &b, &err);
        for (int i = 0; rc == OC_OK && i < 300; i++)
            rc = oc_io_batch_add(b, f, (uint64_t)i * 331, 100, out + i * 100, &err);
        if (rc == OC_OK)
            rc = oc_io_batch_run(b, &err);
        if (rc == OC_OK) {
            OC_CHECK(!oc_fault_fired(OC_FAULT_ALLOC) && nth > 1);
            done = 1;
            for (int i = 0; i < 300; i++)
                OC_CHECK(memcmp(out + i * 100, data + i * 331, 100) == 0);
        } else {
            OC_CHECK(rc == OC_ERR_NOMEM);
            OC_CHECK(oc_fault_fired(OC_FAULT_ALLOC));
        }
        oc_fault_disarm_all();
        oc_io_batch_free(b);
        oc_file_close(f, NULL);
        f = NULL;
        OC_CHECK(oc_mem_n_live() == live);
    }
    OC_CHECK(done);
    free(out);
    free(data);
}

/* ---- writer -------------------------------------------------------------- */

OC_TEST(writer_roundtrip)
{
    struct oc_err err;
    struct oc_writer *w = NULL;
    char path[600];
    const size_t total = 200000 + 77;
    uint8_t *data = malloc(total);
    char *back = NULL;
    size_t len = 0, pos = 0;
    uint64_t live = oc_mem_n_live();

    fill_pattern(data, total, 99);
    OC_CHECK_OK(oc_path_join(path, sizeof(path), oc_test_tmpdir(), "w.bin", &err), &err);
    OC_CHECK_OK(oc_writer_open(path, 10000, &w, &err), &err); /* rounded up to 12288 */
    if (!w)
        goto out;
    while (pos < total) {
        size_t n = 1 + (size_t)(rnd() % 30000);
        if (n > total - pos)
            n = total - pos;
        OC_CHECK_OK(oc_writer_write(w, data + pos, n, &err), &err);
        pos += n;
        OC_CHECK(oc_writer_offset(w) == pos);
    }
    OC_CHECK_OK(oc_writer_close(w, &err), &err);
    OC_CHECK_OK(oc_read_file(path, 0, &back, &len, &err), &err);
    OC_CHECK(len == total);
    OC_CHECK(back && memcmp(back, data, total) == 0);
    oc_free(back);

    /* An empty writer makes an empty file; abort on NULL is a no-op. */
    OC_CHECK_OK(oc_writer_open(path, 4096, &w, &err), &err);
    OC_CHECK_OK(oc_writer_close(w, &err), &err);
    OC_CHECK(oc_read_file(path, 0, &back, &len, &err) == OC_OK && len == 0);
    oc_free(back);
    oc_writer_abort(NULL);
    OC_CHECK(oc_writer_close(NULL, &err) == OC_OK);
out:
    OC_CHECK(oc_mem_n_live() == live);
    free(data);
}

OC_TEST(writer_faults)
{
    struct oc_err err;
    struct oc_writer *w = NULL;
    char path[600];
    uint8_t data[5000];
    uint64_t live = oc_mem_n_live();

    fill_pattern(data, sizeof(data), 1);
    OC_CHECK_OK(oc_path_join(path, sizeof(path), oc_test_tmpdir(), "w.bin", &err), &err);
    /* ENOSPC while a full buffer is written. */
    OC_CHECK_OK(oc_writer_open(path, 4096, &w, &err), &err);
    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    OC_CHECK_ERR(oc_writer_write(w, data, sizeof(data), &err), OC_ERR_NOSPC, &err,
                 "No space left on device");
    OC_CHECK(strstr(err.msg, path) == err.msg);
    OC_CHECK_ERR(oc_writer_write(w, data, 1, &err), OC_ERR_NOSPC, &err, path);
    oc_writer_abort(w);
    OC_CHECK(oc_mem_n_live() == live);

    /* ENOSPC while the tail is written at close: close reports it and frees. */
    OC_CHECK_OK(oc_writer_open(path, 1 << 16, &w, &err), &err);
    OC_CHECK_OK(oc_writer_write(w, data, 100, &err), &err);
    oc_fault_arm(OC_FAULT_WRITE, 1, ENOSPC);
    OC_CHECK_ERR(oc_writer_close(w, &err), OC_ERR_NOSPC, &err, "at offset 0 failed");
    OC_CHECK(oc_mem_n_live() == live);

    /* Failed allocations at open, until one open needs no more than came before. */
    int opened = 0;
    for (uint64_t nth = 1; nth < 10 && !opened; nth++) {
        w = NULL;
        oc_fault_arm(OC_FAULT_ALLOC, nth, ENOMEM);
        int rc = oc_writer_open(path, 4096, &w, &err);
        int fired = oc_fault_fired(OC_FAULT_ALLOC);
        oc_fault_disarm_all();
        if (rc == OC_OK) {
            OC_CHECK(!fired && nth > 1);
            OC_CHECK_OK(oc_writer_close(w, &err), &err);
            opened = 1;
            continue;
        }
        OC_CHECK(rc == OC_ERR_NOMEM && w == NULL);
        OC_CHECK(oc_mem_n_live() == live);
    }
    OC_CHECK(opened);
    OC_CHECK(oc_mem_n_live() == live);
}

/*
 * The row ring hands back every read it was given: reaped with the timed
 * wait or (OC_URING_NO_EXT_ARG, as on kernels before 5.11) by peeking, the
 * bytes are the file's; and freed with reads still in flight (submitted, or
 * only queued), it reaps them itself before it returns: the buffer is free.
 */
static void ring_reads(int no_ext_arg, int reap)
{
    struct oc_err err;
    char path[600];
    enum { N = 64, PAGE = 4096 };
    uint8_t *data = make_file(oc_test_tmpdir(), "ring.bin", (size_t)N * PAGE, path, sizeof(path));
    struct oc_file *f = NULL;
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    uint8_t *buf = oc_io_buf_alloc((size_t)N * PAGE, "test ring", &err);
    OC_CHECK(buf != NULL);
    if (buf)
        memset(buf, 0, (size_t)N * PAGE);
    if (no_ext_arg)
        setenv("OC_URING_NO_EXT_ARG", "1", 1);
    struct oc_io_ring_config rc = {f, N, buf, (size_t)N * PAGE, 0, -1, 0};
    struct oc_io_ring *r = NULL;
    OC_CHECK_OK(oc_io_ring_new(&rc, &r, &err), &err);
    unsetenv("OC_URING_NO_EXT_ARG");
    OC_CHECK(r && oc_io_ring_mode(r) == OC_IO_RING_PLAIN); /* not pread: it reads synchronously */
    OC_CHECK(r && (!no_ext_arg || oc_io_ring_waits_by_peeking(r)));
    for (unsigned i = 0; i < N; i++) /* page i into slot N - 1 - i */
        OC_CHECK_OK(
            oc_io_ring_read(r, (uint64_t)i * PAGE, PAGE, buf + (size_t)(N - 1 - i) * PAGE, i, &err),
            &err);
    OC_CHECK(oc_io_ring_in_flight(r) == N);
    if (reap >= 1)
        OC_CHECK_OK(oc_io_ring_submit(r, &err), &err);
    unsigned got = 0, bad = 0;
    for (int tries = 0; reap == 2 && got < N && tries < 10000; tries++) {
        struct oc_io_done d[N];
        unsigned n = 0;
        OC_CHECK_OK(oc_io_ring_reap(r, d, N, &n, 2000, &err), &err);
        for (unsigned k = 0; k < n; k++)
            bad += d[k].res != PAGE || d[k].tag >= N ||
                   memcmp(buf + (size_t)(N - 1 - d[k].tag) * PAGE, data + d[k].tag * PAGE, PAGE);
        got += n;
    }
    OC_CHECK(reap < 2 || (got == N && bad == 0 && oc_io_ring_in_flight(r) == 0));
    fprintf(stderr, "  %s%s: %llu in flight at free\n", oc_io_ring_mode_name(oc_io_ring_mode(r)),
            no_ext_arg ? " (completions polled)" : "", (unsigned long long)oc_io_ring_in_flight(r));
    OC_CHECK(oc_io_ring_free(r) == 1);
    for (unsigned i = 0; i < N; i++) /* every read landed before free returned */
        bad += memcmp(buf + (size_t)(N - 1 - i) * PAGE, data + (size_t)i * PAGE, PAGE) != 0;
    OC_CHECK(bad == 0);
    oc_free(buf);
    oc_file_close(f, NULL);
    free(data);
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST(ring_reads_reaped_by_timed_wait)
{
    TEST_REQUIRE_URING();
    ring_reads(0, 2);
}

OC_TEST(ring_reads_reaped_by_peeking)
{
    TEST_REQUIRE_URING();
    ring_reads(1, 2);
}

OC_TEST(ring_freed_with_reads_in_flight_reaps_them)
{
    TEST_REQUIRE_URING();
    ring_reads(0, 1); /* submitted, none reaped */
    ring_reads(0, 0); /* queued, not even submitted */
}

/*
 * A batch whose ring fails in the middle of a run (the 3rd submission):
 * the reads the kernel already took are reaped before the ring goes (so
 * the bounce buffer is theirs no longer and is freed with the batch: no
 * allocation left), the run fails naming io_uring, and the next run reads
 * the same ranges right through pread.
 */
OC_TEST(batch_ring_failing_mid_run_reaps_its_reads)
{
    TEST_REQUIRE_URING();
    struct oc_err err;
    char path[600];
    enum { N = 64, PAGE = 4096 };
    uint8_t *data =
        make_file(oc_test_tmpdir(), "mid.bin", (size_t)N * 2 * PAGE, path, sizeof(path));
    struct oc_file *f = NULL;
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err), &err);
    struct oc_io_batch *b = new_batch(0, (size_t)N * PAGE);
    oc_io_batch_set_merge(b, 0);
    uint8_t *out = calloc(N, PAGE);
    int uring = oc_io_batch_uses_uring(b);
    for (int run = 0; run < 2 && out; run++) {
        memset(out, 0, (size_t)N * PAGE);
        for (unsigned i = 0; i < N; i++) /* every other page: no two reads merge */
            OC_CHECK_OK(
                oc_io_batch_add(b, f, (uint64_t)(2 * i) * PAGE, PAGE, out + (size_t)i * PAGE, &err),
                &err);
        if (run == 0)
            oc_fault_arm(OC_FAULT_BATCH_SUBMIT, 3, EIO);
        int rc = oc_io_batch_run(b, &err);
        oc_fault_disarm_all();
        OC_CHECK(run > 0 || uring);
        if (run == 0) {
            OC_CHECK(rc == OC_ERR_IO && strstr(err.msg, "io_uring") != NULL);
            OC_CHECK(!oc_io_batch_uses_uring(b));
            continue;
        }
        OC_CHECK_OK(rc, &err);
        unsigned bad = 0;
        for (unsigned i = 0; i < N; i++)
            bad += memcmp(out + (size_t)i * PAGE, data + (size_t)(2 * i) * PAGE, PAGE) != 0;
        OC_CHECK(bad == 0);
    }
    fprintf(stderr, "  uring=%d\n", uring);
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    free(out);
    free(data);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- write-behind ------------------------------------------------------- */

/* Writes n pieces of (i * 37) % 300 + 1 bytes (value i) at distinct offsets through 3 buffers;
   with a fault armed at write `fail_at`, the failure names the file and the earlier pieces'
   bytes are on disk. */
static void write_behind_pieces(unsigned n, unsigned fail_at)
{
    struct oc_err err;
    struct oc_file *f = NULL;
    struct oc_write_behind *w = NULL;
    char path[1024];
    snprintf(path, sizeof(path), "%s/wb-%u.bin", oc_test_tmpdir(), fail_at);
    unlink(path);
    OC_CHECK_OK(oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_CREATE, &f, &err), &err);
    OC_CHECK_OK(oc_write_behind_new(f, 3, 300, &w, &err), &err);
    if (!w) {
        oc_file_close(f, NULL);
        return;
    }
    if (fail_at)
        oc_fault_arm(OC_FAULT_WRITE, fail_at, ENOSPC);
    int rc = OC_OK;
    for (unsigned i = 0; i < n && rc == OC_OK; i++) { /* pieces placed from the end back */
        uint8_t *buf = oc_write_behind_buf(w, &err);
        if (!buf) {
            rc = err.status;
            break;
        }
        memset(buf, (int)i, (i * 37) % 300 + 1);
        rc = oc_write_behind_put(w, buf, (i * 37) % 300 + 1, (uint64_t)(n - 1 - i) * 300, &err);
    }
    if (rc == OC_OK)
        rc = oc_write_behind_flush(w, &err);
    if (fail_at) {
        OC_CHECK(rc == OC_ERR_NOSPC && strstr(err.msg, path) && strstr(err.msg, "No space"));
        OC_CHECK(oc_write_behind_flush(w, &err) == OC_ERR_NOSPC); /* and it stays */
    } else {
        OC_CHECK_OK(rc, &err);
    }
    oc_fault_disarm_all();
    oc_write_behind_free(w);
    unsigned whole = fail_at ? fail_at - 1 : n; /* written in queue order */
    for (unsigned i = 0; i < whole; i++) {
        uint8_t got[300], want[300];
        size_t len = (i * 37) % 300 + 1;
        memset(want, (int)i, len);
        OC_CHECK_OK(oc_file_pread(f, got, len, (uint64_t)(n - 1 - i) * 300, &err), &err);
        OC_CHECK(memcmp(got, want, len) == 0);
    }
    oc_file_close(f, NULL);
    unlink(path);
}

OC_TEST(write_behind_writes_every_piece)
{
    write_behind_pieces(200, 0);
}

OC_TEST(write_behind_reports_the_first_failed_write)
{
    write_behind_pieces(200, 1);
    write_behind_pieces(200, 57);
}

/* Copies 30 pieces of 50 bytes that follow each other, one after a jump and one larger than a
   buffer (300 bytes); with a write fault armed at write `fail_at` (0: none), the result. The
   contiguous pieces coalesce: 5 buffers of 6, then 1 and the large one written at once. */
static int write_behind_copies(unsigned fail_at, const char *path, struct oc_err *err)
{
    struct oc_file *f = NULL;
    struct oc_write_behind *w = NULL;
    uint8_t piece[1000];
    unlink(path);
    int rc = oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_CREATE, &f, err);
    if (rc == OC_OK)
        rc = oc_write_behind_new(f, 3, 300, &w, err);
    if (fail_at)
        oc_fault_arm(OC_FAULT_WRITE, fail_at, ENOSPC);
    for (unsigned i = 0; i < 32 && rc == OC_OK; i++) {
        size_t len = i < 31 ? 50 : sizeof(piece);
        uint64_t off = i < 30 ? 50u * i : i == 30 ? 5000 : 7000;
        memset(piece, (int)i + 1, len);
        rc = oc_write_behind_copy(w, piece, len, off, err);
    }
    if (rc == OC_OK)
        rc = oc_write_behind_flush(w, err);
    oc_fault_disarm_all();
    oc_write_behind_free(w);
    for (unsigned i = 0; i < 32 && rc == OC_OK; i++) {
        uint8_t got[1000];
        size_t len = i < 31 ? 50 : sizeof(got);
        OC_CHECK_OK(oc_file_pread(f, got, len, i < 30 ? 50u * i : i == 30 ? 5000 : 7000, err), err);
        for (size_t k = 0; k < len; k++)
            OC_CHECK(got[k] == i + 1);
    }
    oc_file_close(f, NULL);
    return rc;
}

OC_TEST(write_behind_copy_coalesces_what_follows)
{
    struct oc_err err;
    char path[1024];
    snprintf(path, sizeof(path), "%s/wb-copy.bin", oc_test_tmpdir());
    OC_CHECK_OK(write_behind_copies(0, path, &err), &err);
    OC_CHECK_OK(write_behind_copies(8, path, &err), &err); /* seven writes: the 8th never comes */
    OC_CHECK_ERR(write_behind_copies(7, path, &err), OC_ERR_NOSPC, &err, "No space");
    OC_CHECK(strstr(err.msg, path) != NULL);
    unlink(path);
}

/* oc_crc32 is the CRC-32 of zlib and gzip (the manifest's): its check value, zlib's result,
   any cut into pieces; and a follower folds overlapping pieces once and stops at a gap. */
OC_TEST(crc32_is_zlibs_crc)
{
    OC_CHECK(oc_crc32(0, "123456789", 9) == 0xCBF43926u);
    OC_CHECK(oc_crc32(0, "", 0) == 0 && oc_crc32(0x1234u, "", 0) == 0x1234u);
    static uint8_t buf[100000];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    uint32_t whole = oc_crc32(0, buf, sizeof(buf));
    OC_CHECK(whole == (uint32_t)crc32(0L, buf, (uInt)sizeof(buf)));
    OC_CHECK(oc_crc32(oc_crc32(0, buf, 12345), buf + 12345, sizeof(buf) - 12345) == whole);
    struct oc_crc_follow c = {0, 0}; /* pieces that overlap, then one past a gap */
    oc_crc_follow_feed(&c, 0, buf, 5000);
    oc_crc_follow_feed(&c, 4096, buf + 4096, 8192);
    OC_CHECK(c.at == 12288 && c.crc == oc_crc32(0, buf, 12288));
    oc_crc_follow_feed(&c, 12289, buf + 12289, 100);
    OC_CHECK(c.at == 12288); /* the gap stops it */
    oc_crc_follow_feed(&c, 12288, buf + 12288, sizeof(buf) - 12288);
    OC_CHECK(c.at == sizeof(buf) && c.crc == whole);
}

OC_TEST_MAIN()
