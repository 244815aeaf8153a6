/*
 * sample_bench.c — neighbor-sampling throughput on a synthetic power-law
 * graph built in memory: batches/s, sampled edges/s and input nodes per batch
 * for GraphSAGE fanouts at several thread counts, plus the size and speed of
 * the batch record. Also checks that every thread count yields the same
 * batches (a checksum of the records).
 *
 * Place in the data flow: bench/ (outside the library); drives sample over
 * core's pool. Built and run by bench/sample_bench.sh.
 * Thread-safety: one driving thread; the sampler's pool does the parallel work.
 * Ownership: the graph is malloc'd here (it stands in for a dataset's arrays);
 * library objects are freed before exit.
 *
 * Usage: sample_bench [n_nodes=1000000] [batches=40] [fanouts=15,10,5] [batch=1024] [threads=1,2]
 *        sample_bench --dataset DIR [batches=0: the training split's] [fanouts] [batch] [threads]
 * The second form samples the training split of an offcore dataset (its
 * topology loaded into RAM), as `offcore train` would, and ends with a line
 * bench/peers/run.sh reads: "dataset_sample threads T batches B edges E
 * seconds S" for the last thread count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "offcore/dataset.h"
#include "offcore/progress.h"
#include "offcore/rng.h"
#include "offcore/sample.h"

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/*
 * In-degrees ~ Pareto(alpha 2, min 7) capped at 20000 (mean ≈ 14); sources
 * drawn with popularity ∝ rank^-0.6 and scattered by a bijection, so hubs are
 * both high in-degree nodes and frequent neighbors, as in social graphs.
 */
static int build_graph(uint64_t n, struct oc_graph *g, uint64_t **indptr_out,
                       uint32_t **indices_out)
{
    uint64_t *indptr = malloc((n + 1) * sizeof(uint64_t));
    if (!indptr)
        return -1;
    indptr[0] = 0;
    for (uint64_t v = 0; v < n; v++) {
        struct oc_rng r;
        oc_rng_init(&r, 1, v, 0, 0);
        double u = 1.0 - oc_rng_uniform_f64(&r);
        double d = 7.0 / sqrt(u);
        indptr[v + 1] = indptr[v] + (uint64_t)(d < 20000 ? d : 20000);
    }
    uint64_t m = indptr[n];
    uint32_t *idx = malloc(m * sizeof(uint32_t));
    if (!idx) {
        free(indptr);
        return -1;
    }
    const uint64_t mult = 999983; /* prime, coprime to n unless n is its multiple */
    uint64_t raw_lo = 0, w = 0;   /* lists are deduplicated and compacted down to w */
    for (uint64_t v = 0; v < n; v++) {
        uint64_t raw_hi = indptr[v + 1];
        struct oc_rng r;
        oc_rng_init(&r, 1, v, 1, 0);
        for (uint64_t e = raw_lo; e < raw_hi; e++) {
            double u = oc_rng_uniform_f64(&r);
            uint64_t rank = (uint64_t)((double)n * u * u * sqrt(u));
            idx[e] = (uint32_t)((rank * mult + 12345) % n);
        }
        qsort(idx + raw_lo, raw_hi - raw_lo, sizeof(uint32_t), cmp_u32);
        for (uint64_t e = raw_lo; e < raw_hi; e++)
            if (e == raw_lo || idx[e] != idx[e - 1])
                idx[w++] = idx[e];
        indptr[v + 1] = w;
        raw_lo = raw_hi;
    }
    *indptr_out = indptr;
    *indices_out = idx;
    *g = (struct oc_graph){.n_nodes = n, .indptr = indptr, .indices32 = idx};
    return 0;
}

/* CPU seconds used by the process (all threads). */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int parse_list(const char *s, int32_t *out, int max)
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

/* What to sample: a graph, the seeds (shuffled into batches) and the sampling. */
struct run {
    struct oc_graph g;
    const uint64_t *seeds;
    uint64_t n_seeds, batch, n_batches;
    int32_t fan[OC_SAMPLE_MAX_LAYERS];
    int n_layers;
    int dataset; /* the last batch is kept short, as in training (else dropped) */
    uint64_t edges;
    double seconds; /* of the last thread count */
};

/* Samples r's batches at each thread count; returns 1 if records differ across them. */
static int time_sampling(struct run *r, const int32_t *threads, int n_threads)
{
    struct oc_err err;
    struct oc_sample_epoch ep;
    if (oc_sample_epoch_init(&ep, r->seeds, r->n_seeds, r->batch, r->dataset ? 0 : 1, &err) !=
        OC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    oc_sample_epoch_shuffle(&ep, 7, 0);
    if (r->n_batches == 0 || r->n_batches > oc_sample_epoch_n_batches(&ep))
        r->n_batches = oc_sample_epoch_n_batches(&ep);
    uint64_t n = r->g.n_nodes, n_batches = r->n_batches;
    printf("fanouts");
    for (int l = 0; l < r->n_layers; l++)
        printf("%c%d", l ? ',' : ' ', r->fan[l]);
    printf(" (input layer first), batch %llu, %llu batches per run\n", (unsigned long long)r->batch,
           (unsigned long long)n_batches);

    size_t rec_cap = 64u << 20;
    uint8_t *rec = malloc(rec_cap);
    uint32_t ref_crc = 0;
    int mismatch = 0;
    printf("%8s %10s %10s %14s %16s %12s %12s %12s\n", "threads", "batches/s", "cpu ms/b",
           "Medges/s", "input nodes/b", "record MB/b", "write GB/s", "read GB/s");
    for (int ti = 0; ti < n_threads; ti++) {
        struct oc_pool *pool;
        struct oc_sampler *s;
        struct oc_sample_opts o = {.n_layers = (uint32_t)r->n_layers, .seed = 2024};
        memcpy(o.fanouts, r->fan, sizeof(int32_t) * (size_t)r->n_layers);
        if (oc_pool_new((unsigned)threads[ti], &pool, &err) != OC_OK ||
            oc_sample_sampler_new(&r->g, &o, pool, &s, &err) != OC_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        struct oc_sample_batch b, back;
        oc_sample_batch_init(&b);
        oc_sample_batch_init(&back);
        /* warm-up: grows the workspace and the batch to their steady size */
        const uint64_t *seeds;
        uint64_t ns;
        for (uint64_t bi = 0; bi < 2 && bi < n_batches; bi++) {
            oc_sample_epoch_batch(&ep, bi, &seeds, &ns, &err);
            oc_sample_neighbors(s, 0, bi, seeds, ns, &b, &err);
        }
        uint64_t edges = 0, inputs = 0, rec_bytes = 0;
        uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
        struct oc_timer ts = {0}, tw = {0}, tr = {0};
        double cpu = 0;
        for (uint64_t bi = 0; bi < n_batches; bi++) {
            oc_sample_epoch_batch(&ep, bi, &seeds, &ns, &err);
            double c0 = cpu_s();
            oc_timer_start(&ts);
            int rc = oc_sample_neighbors(s, 0, bi, seeds, ns, &b, &err);
            oc_timer_stop(&ts);
            cpu += cpu_s() - c0;
            size_t len = 0;
            oc_timer_start(&tw);
            if (rc == OC_OK)
                rc = oc_sample_batch_serialize(&b, rec, rec_cap, &len, &err);
            oc_timer_stop(&tw);
            oc_timer_start(&tr);
            if (rc == OC_OK)
                rc = oc_sample_batch_deserialize(rec, len, n, &back, &err);
            oc_timer_stop(&tr);
            if (rc != OC_OK) {
                fprintf(stderr, "batch %llu: %s\n", (unsigned long long)bi, err.msg);
                return 1;
            }
            if (!oc_sample_batch_equal(&b, &back)) {
                fprintf(stderr, "batch %llu: record round trip differs\n", (unsigned long long)bi);
                return 1;
            }
            edges += oc_sample_batch_n_edges(&b);
            inputs += b.n_input;
            rec_bytes += len;
            crc = (uint32_t)crc32(crc, rec, (uInt)len);
        }
        if (ti == 0)
            ref_crc = crc;
        else if (crc != ref_crc)
            mismatch = 1;
        double sec = oc_timer_s(&ts);
        r->edges = edges;
        r->seconds = sec;
        printf("%8d %10.1f %10.1f %14.2f %16.0f %12.2f %12.2f %12.2f\n", threads[ti],
               (double)n_batches / sec, 1e3 * cpu / (double)n_batches, (double)edges / sec / 1e6,
               (double)inputs / (double)n_batches, (double)rec_bytes / (double)n_batches / 1e6,
               (double)rec_bytes / oc_timer_s(&tw) / 1e9,
               (double)rec_bytes / oc_timer_s(&tr) / 1e9);
        oc_sample_batch_deinit(&b);
        oc_sample_batch_deinit(&back);
        oc_sample_sampler_free(s);
        oc_pool_free(pool);
    }
    printf("records identical across thread counts: %s\n", mismatch ? "NO" : "yes");
    oc_sample_epoch_deinit(&ep);
    free(rec);
    return mismatch;
}

/* The dataset's topology (in RAM) and training split; 0, or 1 with a message. */
static int load_dataset(const char *dir, struct run *r, uint64_t **indptr, uint32_t **indices,
                        uint64_t **train)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    void *idx = NULL;
    if (oc_dataset_open(dir, OC_DS_OPEN_SKIP_CHECKSUM, &ds, &err) != OC_OK ||
        oc_dataset_load_indptr(ds, indptr, &err) != OC_OK ||
        oc_dataset_load_indices(ds, OC_DTYPE_U32, &idx, &err) != OC_OK ||
        oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, train, &r->n_seeds, &err) != OC_OK) {
        fprintf(stderr, "sample_bench: %s\n", err.msg);
        oc_dataset_free(ds);
        return 1;
    }
    *indices = idx;
    r->g = (struct oc_graph){
        .n_nodes = oc_dataset_manifest(ds)->n_nodes, .indptr = *indptr, .indices32 = *indices};
    r->seeds = *train;
    oc_dataset_free(ds);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    if (argc > 2 && strcmp(argv[1], "--dataset") == 0) {
        dir = argv[2]; /* in n_nodes' place: the other arguments keep theirs */
        argv++;
        argc--;
    }
    struct run r;
    memset(&r, 0, sizeof(r));
    uint64_t n = dir ? 0 : argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    r.n_batches = argc > 2 ? strtoull(argv[2], NULL, 10) : dir ? 0 : 40;
    r.n_layers = parse_list(argc > 3 ? argv[3] : "15,10,5", r.fan, OC_SAMPLE_MAX_LAYERS);
    r.batch = argc > 4 ? strtoull(argv[4], NULL, 10) : 1024;
    int32_t threads[8];
    int n_threads = parse_list(argc > 5 ? argv[5] : "1,2", threads, 8);
    if (r.n_layers < 1 || n_threads < 1 || r.batch == 0 || (!dir && n < r.batch)) {
        fprintf(stderr,
                "usage: %s [n_nodes] [batches] [fanouts] [batch] [threads]\n"
                "       %s --dataset DIR [batches] [fanouts] [batch] [threads]\n",
                "sample_bench", "sample_bench");
        return 2;
    }

    double t0 = oc_now_s();
    uint64_t *indptr = NULL, *ids = NULL;
    uint32_t *indices = NULL;
    if (dir) {
        if (load_dataset(dir, &r, &indptr, &indices, &ids))
            return 1;
        n = r.g.n_nodes;
        r.dataset = 1;
    } else {
        if (build_graph(n, &r.g, &indptr, &indices) != 0) {
            fprintf(stderr, "out of memory building the graph\n");
            return 1;
        }
        ids = malloc(n * sizeof(uint64_t));
        for (uint64_t i = 0; i < n; i++)
            ids[i] = i;
        r.seeds = ids;
        r.n_seeds = n;
    }
    uint64_t max_deg = 0;
    for (uint64_t v = 0; v < n; v++)
        if (indptr[v + 1] - indptr[v] > max_deg)
            max_deg = indptr[v + 1] - indptr[v];
    struct oc_err err;
    if (oc_sample_graph_check(&r.g, &err) != OC_OK) {
        fprintf(stderr, "bad graph: %s\n", err.msg);
        return 1;
    }
    printf("graph%s%s: %llu nodes, %llu edges (mean in-degree %.1f, max %llu), %s in %.1f s; "
           "%llu seeds\n",
           dir ? " " : "", dir ? dir : "", (unsigned long long)n, (unsigned long long)indptr[n],
           (double)indptr[n] / (double)n, (unsigned long long)max_deg, dir ? "loaded" : "built",
           oc_now_s() - t0, (unsigned long long)r.n_seeds);
    int rc = time_sampling(&r, threads, n_threads);
    if (dir && rc == 0)
        printf("dataset_sample threads %d batches %llu edges %llu seconds %.6f\n",
               threads[n_threads - 1], (unsigned long long)r.n_batches, (unsigned long long)r.edges,
               r.seconds);
    if (dir) {
        oc_free(indptr);
        oc_free(indices);
        oc_free(ids);
    } else {
        free(indptr);
        free(indices);
        free(ids);
    }
    return rc;
}
