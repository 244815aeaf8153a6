/*
 * test_store_diskgnn_stream.c — the `diskgnn` strategy's streamed windows
 * (diskgnn_stream.c) against windows laid out whole (dg_window_pack at
 * s = 1): for the same batches and CPU cache both builders write the same
 * file byte for byte, the same chunk and segment offsets, and fill the
 * cache with the same rows (the feature file's own bytes); windows of part
 * of an epoch, of a whole one, with f32 and odd-sized f16 rows; the
 * streamed builder's spill file is gone afterwards; the read-ahead it is
 * given follows the budget; and the packers' scan of features.npy (oc_io_scan)
 * serves an ascending scan from its read-ahead, reads a jump itself, and
 * names the file when it is cut short.
 *
 * Place in the data flow: tests of store (plan → store: the window builder).
 * Thread-safety: single-threaded (builders used directly, no pipeline).
 * Ownership: every store, builder, window and fixture is freed by the test
 * that made it.
 */
#include "diskgnn_util.h"
#include <sys/mount.h>

#include "store/diskgnn/diskgnn_int.h"

/* The whole of a file, malloc'd (*n bytes); NULL if it cannot be read. */
static uint8_t *slurp(const char *path, uint64_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    *n = 0;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        buf = malloc(len > 0 ? (size_t)len : 1);
        if (buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)len, f) == (size_t)len)
            *n = (uint64_t)len;
    }
    fclose(f);
    return buf;
}

/* A stand-in CPU cache: every step-th row from lo, ascending, rows zeroed. */
static void cache_init(struct store_cache *c, uint64_t n_nodes, uint64_t lo, uint64_t step,
                       uint64_t row_bytes)
{
    memset(c, 0, sizeof(*c));
    c->ids = calloc(n_nodes / step + 1, sizeof(uint64_t));
    for (uint64_t v = lo; v < n_nodes; v += step)
        c->ids[c->n++] = v;
    c->n_live = c->n;
    c->rows = calloc(c->n + 1, row_bytes);
}

static void cache_free(struct store_cache *c)
{
    free(c->ids);
    free(c->rows);
}

/* Builds the window [first, first + count) of epoch with both builders and compares them. */
static void compare_window(const struct fixture *fx, const struct oc_store *s, uint64_t epoch,
                           uint64_t first, uint64_t count, int fill)
{
    struct oc_err err;
    char plan[2][800];
    struct dg_builder b[2];
    struct store_cache cache[2];
    struct dg_window w[2];
    uint8_t *bytes[2] = {NULL, NULL};
    uint64_t len[2] = {0, 0};
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        snprintf(plan[k], sizeof(plan[k]), "%s/plan-stream-%d", oc_test_tmpdir(), k);
        struct oc_store_config c = dg_config(fx, NULL, plan[k], 0, 2, 0);
        fixture_opt(&c, "disk-budget", k ? 1000.0 : 0.0); /* 1: laid out whole (it fits) */
        cache_init(&cache[k], fx->n_nodes, 3, 7, s->row_bytes);
        memset(&w[k], 0, sizeof(w[k]));
        OC_CHECK_OK(dg_builder_init(&b[k], s, &c, NULL, &err), &err);
        OC_CHECK(b[k].streamed == !k);
        if (ok) {
            int rc = dg_window_build(&b[k], &cache[k], fill, epoch, first, count, &w[k], &err);
            OC_CHECK_OK(rc, &err);
            ok = rc == OC_OK;
        }
        if (ok) { /* the window has no name: read through its reader's descriptor */
            char fd_path[64];
            snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", oc_file_fd(w[k].f));
            bytes[k] = slurp(fd_path, &len[k]);
        }
    }
    if (ok) {
        OC_CHECK(w[0].n_batches == count && w[1].n_batches == count && w[0].s == w[1].s);
        OC_CHECK(w[0].n_segments == w[1].n_segments && w[0].file_bytes == w[1].file_bytes);
        OC_CHECK(memcmp(w[0].chunk_off, w[1].chunk_off, (count + 1) * sizeof(uint64_t)) == 0);
        OC_CHECK(memcmp(w[0].seg_byte_off, w[1].seg_byte_off,
                        (w[0].n_segments + 1) * sizeof(uint64_t)) == 0);
        OC_CHECK(bytes[0] && bytes[1] && len[0] == len[1] && len[0] == w[0].file_bytes &&
                 len[0] > 0 && memcmp(bytes[0], bytes[1], len[0]) == 0);
        OC_CHECK(memcmp(cache[0].rows, cache[1].rows, cache[0].n * s->row_bytes) == 0);
        if (fill) { /* the file's own rows: the cache's last row against features.npy */
            uint64_t flen, v = cache[0].ids[cache[0].n - 1];
            uint8_t *feat = slurp(s->path, &flen);
            OC_CHECK(feat && store_file_off(s, v) + s->row_bytes <= flen &&
                     memcmp(cache[0].rows + (cache[0].n - 1) * s->row_bytes,
                            feat + store_file_off(s, v), s->row_bytes) == 0);
            free(feat);
        }
        OC_CHECK(!pl_spill_in_file(&b[0].spill)); /* the spill of packed rows is dropped */
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr,
                    "  epoch %" PRIu64 " batches %" PRIu64 "+%" PRIu64 ": %" PRIu64
                    " bytes, read %" PRIu64 " streamed, %" PRIu64 " laid out\n",
                    epoch, first, count, len[0], b[0].pack_read_bytes, b[1].pack_read_bytes);
    }
    for (int k = 0; k < 2; k++) {
        free(bytes[k]);
        dg_window_drop(&w[k]);
        dg_builder_deinit(&b[k]);
        cache_free(&cache[k]);
    }
    OC_CHECK(plan_files(plan[0], NULL) == 0 && plan_files(plan[1], NULL) == 0);
}

/* A fixture of n nodes and its features opened by `direct` (*s NULL if either failed). */
static int open_direct(struct fixture *fx, uint64_t n, uint32_t dim, enum oc_dtype dtype,
                       struct oc_store **s)
{
    struct oc_err err;
    uint32_t idx = 0;
    *s = NULL;
    if (!fixture_init(fx, n, dim, dtype))
        return 0;
    struct oc_store_config c = fixture_config(fx, NULL);
    OC_CHECK_OK(oc_store_strategy_find("direct", &idx, &err), &err);
    OC_CHECK_OK(oc_store_open(idx, &c, s, &err), &err);
    return *s != NULL;
}

static void compare_windows(uint64_t n, uint32_t dim, enum oc_dtype dtype)
{
    struct fixture fx;
    struct oc_store *s;
    if (open_direct(&fx, n, dim, dtype, &s)) {
        uint64_t nb = (fx.n_train + fx.batch_size - 1) / fx.batch_size;
        OC_CHECK(nb >= 4);
        compare_window(&fx, s, 0, 0, nb, 1);     /* a whole epoch, filling the cache */
        compare_window(&fx, s, 1, 1, nb - 2, 0); /* part of one, another epoch's */
        compare_window(&fx, s, 2, nb - 1, 1, 0); /* its last batch alone */
    }
    oc_store_free(s);
    fixture_free(&fx);
}

OC_TEST(streamed_window_is_the_laid_out_window_f32)
{
    compare_windows(4000, 32, OC_DTYPE_F32);
}

OC_TEST(streamed_window_is_the_laid_out_window_odd_f16)
{
    compare_windows(3000, 37, OC_DTYPE_F16);
}

/*
 * A plan directory on a filesystem of 6 MiB (a tmpfs, where the test may
 * mount one), less than the two whole-epoch windows fresh samples would keep
 * (about 4 MiB each at this budget): the windows are shortened to fit its free space, every
 * epoch trains to `memory`'s weights, the directory never fills, nothing is
 * left in it.
 */
OC_TEST(windows_fit_the_plan_directorys_free_space)
{
    const char *dir = train_graph(256, OC_DTYPE_F32);
    if (!dir)
        return;
    char plan[800];
    snprintf(plan, sizeof(plan), "%s/plan-small-fs", oc_test_tmpdir());
    mkdir(plan, 0755);
    if (mount("offcore-test", plan, "tmpfs", 0, "size=6m") != 0) {
        OC_SKIP("cannot mount a tmpfs here (needs root)");
        return;
    }
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    struct epoch_log log;
    train_opts(&o);
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    char msg[800];
    uint64_t min = train_min_budget(dir, o, msg, sizeof(msg)); /* few rows cached */
    OC_CHECK(min > 0);
    o.strategy = "diskgnn";
    o.mem_budget = min + MIB;
    o.plan_dir = plan;
    memset(&log, 0, sizeof(log));
    log.plan = plan;
    OC_CHECK_OK(train_under(dir, &o, log_epoch, &log, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(log.n == 3);
    for (uint32_t e = 0; e < log.n; e++) {
        if (getenv("OC_TEST_VERBOSE"))
            fprintf(stderr, "  epoch %u: %d files, %" PRIu64 " bytes\n", e, log.dir_files[e],
                    log.dir_bytes[e]);
        OC_CHECK(log.dir_bytes[e] <= (6u << 20));
        OC_CHECK(e + 1 == log.n || log.dir_files[e] > 0);
    }
    OC_CHECK(plan_files(plan, NULL) == 0);
    /* One epoch in two windows: the planner packs the second while the first trains. */
    o.strategy = "memory";
    o.mem_budget = 0;
    o.plan_dir = NULL;
    o.epochs = 1;
    OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
    o.strategy = "diskgnn";
    o.mem_budget = min + MIB;
    o.plan_dir = plan;
    OC_CHECK_OK(train_under(dir, &o, NULL, NULL, &res, &err), &err);
    OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    OC_CHECK(plan_files(plan, NULL) == 0);
    umount(plan);
    rmdir(plan);
}

/* The read-ahead per batch: a 64th of the budget over the epoch, within [256, 4096]. */
OC_TEST(read_ahead_follows_the_budget)
{
    OC_CHECK(dg_stream_ahead(0, 10) == 4096);
    OC_CHECK(dg_stream_ahead(UINT64_C(1) << 40, 10) == 4096);
    OC_CHECK(dg_stream_ahead(64 * 1000 * 8 * 1000, 1000) == 1000);
    OC_CHECK(dg_stream_ahead(1u << 20, 100000) == 256);
}

/* Scans the store's feature file from row `from`, skipping `skip` rows after every partition;
   checks every partition's bytes against the file and returns the synchronous reads. With
   crc_read, the scan checks features.npy's checksum as a store's first scan does: *crc_read is
   what the check read beside it, and a mismatch sets *bad (checked to name the file). */
static uint64_t scan_checking(const struct oc_store *s, uint64_t part_bytes, uint64_t from,
                              uint64_t skip, uint64_t *crc_read, int *bad)
{
    struct dg_builder b;
    struct oc_io_scan sc;
    struct oc_err err;
    uint64_t flen, rb = s->row_bytes, n = 0;
    uint8_t *feat = slurp(s->path, &flen);
    memset(&b, 0, sizeof(b));
    b.s = s;
    b.part_bytes = part_bytes;
    b.part = oc_io_buf_alloc(part_bytes, "test", &err);
    OC_CHECK(feat && b.part);
    if (crc_read) {
        OC_CHECK_OK(oc_dataset_features_crc_begin(s->ds, &b.crc, &err), &err);
        b.crc_due = 1;
    }
    OC_CHECK_OK(dg_scan_open(&b, &sc, &err), &err);
    for (uint64_t r0 = from; r0 < s->n_nodes && !*bad;) {
        uint64_t per = oc_io_scan_units(&sc, store_file_off(s, r0), rb);
        uint64_t r1 = r0 + per < s->n_nodes ? r0 + per : s->n_nodes;
        const uint8_t *rows;
        int rc = oc_io_scan_read(&sc, store_file_off(s, r0), (r1 - r0) * rb, &rows, &err);
        if (rc) {
            OC_CHECK(rc == OC_ERR_FORMAT && strstr(err.msg, s->path) &&
                     strstr(err.msg, "truncated"));
            *bad = 1;
            break;
        }
        OC_CHECK(memcmp(rows, feat + store_file_off(s, r0), (r1 - r0) * rb) == 0);
        n++;
        r0 = r1 + skip;
    }
    n = sc.sync_reads;
    int rc = dg_scan_end(&b, &sc, *bad ? OC_ERR_FORMAT : OC_OK, &err);
    OC_CHECK(b.pack_read_bytes > 0); /* counted as the scan ends */
    if (crc_read && !*bad) {
        *crc_read = b.crc_read_bytes;
        OC_CHECK(!b.crc_due); /* checked once */
        if (rc) {
            OC_CHECK(rc == OC_ERR_FORMAT && strstr(err.msg, s->path) &&
                     strstr(err.msg, "checksum mismatch"));
            *bad = 1;
        }
    } else if (!*bad) {
        OC_CHECK_OK(rc, &err);
    }
    oc_free(b.part);
    free(feat);
    return n;
}

static uint64_t scan_file(const struct oc_store *s, uint64_t part_bytes, uint64_t from,
                          uint64_t skip, int *bad)
{
    return scan_checking(s, part_bytes, from, skip, NULL, bad);
}

OC_TEST(scan_reads_ahead_and_names_a_cut_file)
{
    struct fixture fx;
    struct oc_store *s;
    if (open_direct(&fx, 5000, 60, OC_DTYPE_F32, &s)) { /* 240-byte rows: pages split rows */
        int bad = 0;
        uint64_t part = 2 * 32768; /* halves of 8 pages: 102 rows a partition at most */
        OC_CHECK(scan_file(s, part, 0, 0, &bad) == 1 && !bad); /* only the first is read */
        OC_CHECK(scan_file(s, part, 7, 0, &bad) == 1 && !bad);
        uint64_t n = scan_file(s, part, 0, 3000, &bad); /* every partition after a jump */
        OC_CHECK(n == 2 && !bad);
        /* cut inside the last rows: the scan reads up to them and names the file */
        uint64_t flen;
        uint8_t *feat = slurp(s->path, &flen);
        OC_CHECK(feat && truncate(s->path, (off_t)(flen - 1000)) == 0);
        scan_file(s, part, 0, 0, &bad);
        OC_CHECK(bad);
        free(feat);
    }
    oc_store_free(s);
    fixture_free(&fx);
}

/* The first scan checks features.npy's checksum as it reads: nothing read twice when it reads
   every row, what it skipped when it jumped, and a changed byte fails it naming the file. */
OC_TEST(first_scan_checks_the_features_checksum)
{
    struct fixture fx;
    struct oc_store *s;
    if (open_direct(&fx, 5000, 60, OC_DTYPE_F32, &s)) {
        int bad = 0;
        uint64_t part = 2 * 32768, extra = UINT64_MAX, flen;
        scan_checking(s, part, 0, 0, &extra, &bad);
        OC_CHECK(!bad && extra == 0); /* the scan read the whole file: the check read nothing */
        scan_checking(s, part, 0, 3000, &extra, &bad);
        OC_CHECK(!bad && extra > 0 && extra < 5000 * 240); /* from the first gap on */
        uint8_t *feat = slurp(s->path, &flen);
        OC_CHECK(feat);
        feat[flen - 7] ^= 0x10; /* one bit in the last row: same size, another checksum */
        FILE *f = fopen(s->path, "r+b");
        OC_CHECK(f && fseek(f, (long)(flen - 7), SEEK_SET) == 0 && fputc(feat[flen - 7], f) != EOF);
        OC_CHECK(f && fclose(f) == 0);
        scan_checking(s, part, 0, 0, &extra, &bad);
        OC_CHECK(bad);
        bad = 0;
        scan_checking(s, part, 0, 3000, &extra, &bad); /* found by the read of the rest */
        OC_CHECK(bad);
        free(feat);
    }
    oc_store_free(s);
    fixture_free(&fx);
}

/* The log lines naming diskgnn's head window (a log callback). */
static int head_lines;
static void count_head(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    (void)level;
    head_lines += strstr(msg, "window 0 is the first 64 of 83 batches") != NULL;
    if (getenv("OC_TEST_VERBOSE"))
        fprintf(stderr, "  log: %s\n", msg);
}

/*
 * More batches per epoch than the probe samples (83 against 64): window 0 is
 * the probe's head, the rest of epoch 0 is packed while it trains, and every
 * epoch after it is whole; the weights are `memory`'s, fresh and reused.
 */
OC_TEST(first_window_is_the_probes_head)
{
    const char *dir = train_graph(16, OC_DTYPE_F32);
    if (!dir)
        return;
    struct oc_train_opts o;
    struct oc_train_result ref, res;
    struct oc_err err;
    char msg[800];
    train_opts(&o);
    o.batch_size = 12; /* 83 batches of the training nodes */
    for (int reuse = 0; reuse < 2; reuse++) {
        o.reuse_samples = reuse;
        o.strategy = "memory";
        o.mem_budget = 0;
        OC_CHECK_OK(oc_train_run(dir, &o, NULL, NULL, NULL, &ref, &err), &err);
        o.strategy = "diskgnn";
        o.mem_budget = train_min_budget(dir, o, msg, sizeof(msg)) + 64 * 1024;
        head_lines = 0;
        oc_log_set_callback(count_head, NULL, OC_LOG_INFO);
        OC_CHECK_OK(train_under(dir, &o, NULL, NULL, &res, &err), &err);
        oc_log_set_callback(NULL, NULL, OC_LOG_WARN);
        OC_CHECK(head_lines == !reuse); /* reused samples pack all of epoch 0 at open */
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
    }
}

OC_TEST_MAIN()
