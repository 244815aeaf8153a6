/*
 * topo_disk_bench.c — neighbor sampling over on-disk topology (`--topology
 * disk`) against in-memory topology on a generated dataset: batches/s, cache
 * hit ratio, bytes read per batch and read amplification for several
 * neighbor-cache sizes and thread counts, and a check that every
 * configuration yields the batches of in-memory topology (a CRC of their
 * records).
 *
 * Place in the data flow: bench/ (outside the library); drives dataset
 * (generate, open) and sample over core's pool. Run by
 * bench/topo_disk_bench.sh.
 * Thread-safety: one driving thread; the sampler's pool does the parallel work.
 * Ownership: every library object is freed before exit; the dataset directory
 * is kept (reused by later runs with the same arguments).
 *
 * Usage: topo_disk_bench DIR [n_nodes=2000000] [cache=0,0.05,0.25,1] [threads=1,2]
 *                            [batches=30] [fanouts=15,10,5] [batch=1024]
 * cache: the fraction of indices.npy's bytes the budget allows beyond indptr
 * and the table. DIR is generated (degree 15, no features) if it is absent.
 * Reads use O_DIRECT, so the page cache does not hide the disk; the first
 * configuration pays no warm-up advantage because nothing is cached by the OS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "offcore/generate.h"
#include "offcore/io.h"
#include "offcore/progress.h"
#include "offcore/sample.h"

static int parse_i32(const char *s, int32_t *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s)
            return -1;
        out[n++] = (int32_t)x;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int parse_f64(const char *s, double *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        double x = strtod(s, &end);
        if (end == s)
            return -1;
        out[n++] = x;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

struct run {
    double sec;
    uint32_t crc;
    uint64_t edges;
    struct oc_topo_disk_stats st;
};

/* Samples n_batches batches of one epoch order with a fresh sampler over g. */
static int run_batches(const struct oc_graph *g, const struct oc_sample_opts *o, unsigned n_threads,
                       const struct oc_sample_epoch *ep, uint64_t n_batches, uint8_t *rec,
                       size_t rec_cap, struct run *out, struct oc_err *err)
{
    struct oc_pool *pool = NULL;
    struct oc_sampler *s = NULL;
    struct oc_sample_batch b;
    oc_sample_batch_init(&b);
    int rc = oc_pool_new(n_threads, &pool, err);
    if (rc == OC_OK)
        rc = oc_sample_sampler_new(g, o, pool, &s, err);
    memset(out, 0, sizeof(*out));
    out->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    struct oc_timer t = {0};
    for (uint64_t bi = 0; rc == OC_OK && bi < n_batches; bi++) {
        const uint64_t *seeds;
        uint64_t ns;
        size_t len = 0;
        oc_sample_epoch_batch(ep, bi, &seeds, &ns, err);
        oc_timer_start(&t);
        rc = oc_sample_neighbors(s, 0, bi, seeds, ns, &b, err);
        oc_timer_stop(&t);
        if (rc == OC_OK)
            rc = oc_sample_batch_serialize(&b, rec, rec_cap, &len, err);
        if (rc == OC_OK) {
            out->crc = (uint32_t)crc32(out->crc, rec, (uInt)len);
            out->edges += oc_sample_batch_n_edges(&b);
        }
    }
    out->sec = oc_timer_s(&t);
    if (s)
        oc_sample_sampler_topo_stats(s, &out->st);
    oc_sample_batch_deinit(&b);
    oc_sample_sampler_free(s);
    oc_pool_free(pool);
    return rc;
}

/*
 * The disk's random 4 KiB read rate through the reader the sampler uses:
 * n_pages random pages of the indices file, in rounds of 512 (one chunk) at
 * the reader's default depth. Returns reads per second, or 0 on failure.
 */
static double probe_iops(const char *path, uint64_t data_off, uint64_t bytes, uint64_t n_pages)
{
    struct oc_err err;
    struct oc_file *f;
    struct oc_io_batch *b;
    if (oc_file_open(path, OC_FILE_READ | OC_FILE_DIRECT, &f, &err) != OC_OK)
        return 0;
    if (oc_io_batch_new(64, 1u << 20, &b, &err) != OC_OK) {
        oc_file_close(f, NULL);
        return 0;
    }
    uint64_t pages = bytes / OC_IO_ALIGN;
    uint8_t *dst = malloc(512 * OC_IO_ALIGN);
    uint64_t x = 88172645463325252ull;
    double t0 = oc_now_s();
    int rc = OC_OK;
    for (uint64_t i = 0; i < n_pages && rc == OC_OK; i += 512) {
        for (uint64_t j = 0; j < 512 && rc == OC_OK; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            rc = oc_io_batch_add(b, f, data_off + (x % pages) * OC_IO_ALIGN, 64,
                                 dst + j * OC_IO_ALIGN, &err);
        }
        if (rc == OC_OK)
            rc = oc_io_batch_run(b, &err);
    }
    double sec = oc_now_s() - t0;
    uint64_t n_reads = oc_io_batch_stats(b)->n_reads;
    oc_io_batch_free(b);
    oc_file_close(f, NULL);
    free(dst);
    return rc == OC_OK ? (double)n_reads / sec : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s DIR [n_nodes] [cache fractions] [threads] [batches] [fanouts] "
                "[batch]\n",
                argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint64_t n_nodes = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
    double frac[16];
    int n_frac = parse_f64(argc > 3 ? argv[3] : "0,0.05,0.25,1", frac, 16);
    int32_t threads[8];
    int n_threads = parse_i32(argc > 4 ? argv[4] : "1,2", threads, 8);
    uint64_t n_batches = argc > 5 ? strtoull(argv[5], NULL, 10) : 30;
    int32_t fan[OC_SAMPLE_MAX_LAYERS];
    int n_layers = parse_i32(argc > 6 ? argv[6] : "15,10,5", fan, OC_SAMPLE_MAX_LAYERS);
    uint64_t batch = argc > 7 ? strtoull(argv[7], NULL, 10) : 1024;
    if (n_frac < 1 || n_threads < 1 || n_layers < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    struct oc_err err;
    if (!oc_path_exists(dir)) {
        struct oc_generate_opts go;
        oc_generate_opts_default(&go);
        go.n_nodes = n_nodes;
        go.feat_dim = 0;
        double t0 = oc_now_s();
        if (oc_generate(&go, dir, NULL, &err) != OC_OK) {
            fprintf(stderr, "generate: %s\n", err.msg);
            return 1;
        }
        printf("generated %s in %.1f s\n", dir, oc_now_s() - t0);
    }
    struct oc_dataset *ds;
    if (oc_dataset_open(dir, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    uint64_t n = m->n_nodes, es = oc_dtype_size(m->index_dtype);
    uint64_t fixed = (n + 1) * 8 + n * 8;
    printf("dataset %s: %llu nodes, %llu edges, indices %.1f MB (%s)\n", dir, (unsigned long long)n,
           (unsigned long long)m->n_edges, (double)(m->n_edges * es) / 1e6,
           oc_dtype_name(m->index_dtype));

    double iops = probe_iops(oc_dataset_path(ds, OC_DS_INDICES),
                             oc_dataset_data_offset(ds, OC_DS_INDICES), m->n_edges * es, 20480);
    printf("disk: %.0f random 4 KiB reads/s (O_DIRECT, io_uring depth 64, rounds of 512)\n", iops);

    /* in memory: the reference */
    uint64_t *indptr = NULL;
    void *indices = NULL;
    if (oc_dataset_load_indptr(ds, &indptr, &err) != OC_OK ||
        oc_dataset_load_indices(ds, m->index_dtype, &indices, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct oc_graph gm = {.n_nodes = n, .indptr = indptr};
    if (es == 4)
        gm.indices32 = indices;
    else
        gm.indices64 = indices;
    uint64_t *ids = malloc(n * sizeof(uint64_t));
    for (uint64_t i = 0; i < n; i++)
        ids[i] = i;
    struct oc_sample_epoch ep;
    if (oc_sample_epoch_init(&ep, ids, n, batch, 1, &err) != OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    oc_sample_epoch_shuffle(&ep, 7, 0);
    if (n_batches > oc_sample_epoch_n_batches(&ep))
        n_batches = oc_sample_epoch_n_batches(&ep);
    struct oc_sample_opts o = {.n_layers = (uint32_t)n_layers, .seed = 2024};
    memcpy(o.fanouts, fan, sizeof(int32_t) * (size_t)n_layers);
    size_t rec_cap = 256u << 20;
    uint8_t *rec = malloc(rec_cap);

    printf("fanouts %s, batch %llu, %llu batches per run\n", argc > 6 ? argv[6] : "15,10,5",
           (unsigned long long)batch, (unsigned long long)n_batches);
    printf("%-10s %7s %9s %7s %9s %9s %9s %8s %6s %10s %8s %6s %5s\n", "topology", "threads",
           "cache MB", "open s", "batch/s", "bound", "Medges/s", "lists/b", "hit %", "MB read/b",
           "reads/b", "ampl", "same");
    printf("(bound b/s: reads/b at the probed rate; ampl: bytes read / bytes of lists asked)\n");
    int mismatch = 0;
    uint32_t ref_crc = 0;
    for (int ti = 0; ti < n_threads; ti++) {
        struct run r;
        if (run_batches(&gm, &o, (unsigned)threads[ti], &ep, n_batches, rec, rec_cap, &r, &err) !=
            OC_OK) {
            fprintf(stderr, "memory: %s\n", err.msg);
            return 1;
        }
        if (ti == 0)
            ref_crc = r.crc;
        printf("%-10s %7d %9s %7s %9.1f %9s %9.2f %8s %6s %10s %8s %6s %5s\n", "memory",
               threads[ti], "-", "-", (double)n_batches / r.sec, "-", (double)r.edges / r.sec / 1e6,
               "-", "-", "-", "-", "-", r.crc == ref_crc ? "yes" : "NO");
        mismatch |= r.crc != ref_crc;
    }
    oc_free(indices);
    indices = NULL;

    for (int fi = 0; fi < n_frac; fi++) {
        struct oc_topo_disk_opts to = {
            .budget_bytes = frac[fi] >= 1
                                ? UINT64_MAX
                                : fixed + (uint64_t)(frac[fi] * (double)(m->n_edges * es))};
        struct oc_topo_disk *td;
        double t0 = oc_now_s();
        if (oc_sample_topo_disk_new(ds, &to, &td, &err) != OC_OK) {
            fprintf(stderr, "topology: %s\n", err.msg);
            return 1;
        }
        double open_s = oc_now_s() - t0;
        struct oc_topo_disk_info info;
        oc_sample_topo_disk_info(td, &info);
        struct oc_graph gd;
        oc_sample_topo_disk_graph(td, &gd);
        char name[32];
        snprintf(name, sizeof(name), "disk %.2f", frac[fi]);
        for (int ti = 0; ti < n_threads; ti++) {
            struct run r;
            if (run_batches(&gd, &o, (unsigned)threads[ti], &ep, n_batches, rec, rec_cap, &r,
                            &err) != OC_OK) {
                fprintf(stderr, "%s: %s\n", name, err.msg);
                return 1;
            }
            double nb = (double)n_batches;
            double reads_b = (double)r.st.n_reads / nb;
            printf("%-10s %7d %9.1f %7.2f %9.1f %9.1f %9.2f %8.0f %6.1f %10.2f %8.0f %6.1f %5s\n",
                   name, threads[ti], (double)info.cache_bytes / 1e6, open_s, nb / r.sec,
                   reads_b > 0 ? iops / reads_b : 0.0, (double)r.edges / r.sec / 1e6,
                   (double)r.st.n_lookups / nb,
                   r.st.n_lookups ? 100.0 * (double)r.st.n_hits / (double)r.st.n_lookups : 0.0,
                   (double)r.st.read_bytes / nb / 1e6, reads_b,
                   r.st.requested_bytes ? (double)r.st.read_bytes / (double)r.st.requested_bytes
                                        : 0.0,
                   r.crc == ref_crc ? "yes" : "NO");
            mismatch |= r.crc != ref_crc;
        }
        if (fi == 0)
            printf("(O_DIRECT %s; cached nodes/edges at cache %.2f: %llu / %llu)\n",
                   info.direct ? "on" : "off (filesystem refused it)", frac[fi],
                   (unsigned long long)info.n_cached_nodes,
                   (unsigned long long)info.n_cached_edges);
        oc_sample_topo_disk_free(td);
    }
    printf("batches identical to in-memory topology: %s\n", mismatch ? "NO" : "yes");
    oc_sample_epoch_deinit(&ep);
    oc_free(indptr);
    oc_dataset_free(ds);
    free(rec);
    free(ids);
    return mismatch;
}
