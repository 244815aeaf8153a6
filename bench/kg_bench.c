/*
 * kg_bench.c — query-dependent subgraph extraction (RED-GNN's progressive
 * propagation) over a KG's fact graph in RAM against the same fact graph on
 * disk (O_DIRECT through io batches): queries/s, triples (facts) extracted/s,
 * bytes requested and read from disk, and a check that both extract the same
 * subgraphs (equal fact counts and a CRC of every layer's arrays).
 *
 * Place in the data flow: bench/ (outside the library); drives kg (open,
 * facts, extractor) over core's pool. Run by bench/kg_bench.sh.
 * Thread-safety: one driving thread; extraction fans out on the pool.
 * Ownership: every library object is freed before exit.
 *
 * Usage: kg_bench [--json FILE] DIR [queries=2000] [layers=2] [batch=16] [threads=1,2]
 * Queries are the training graph's valid.txt heads (generate-kg draws them
 * like the facts), in batches of `batch`. --json FILE also writes the table
 * as {"bench": "kg_bench", "metric", "unit": "s", "references": [memory at
 * each thread count], "rows": [{"label", "value" (seconds), "failed", ...}]}
 * for `offcore report`.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "offcore/kg.h"
#include "offcore/nn.h"
#include "offcore/progress.h"

struct result {
    double seconds;
    uint64_t facts;
    uint32_t crc;
    struct oc_kg_facts_stats io;
};

static int run(struct oc_kg *kg, enum oc_kg_facts_where where, unsigned threads,
               const uint32_t *heads, uint64_t n_q, uint32_t layers, uint32_t batch,
               struct result *res, struct oc_err *err)
{
    struct oc_pool *pool = NULL;
    struct oc_kg_facts *facts = NULL;
    struct oc_kg_extractor *x = NULL;
    struct oc_kg_layer ly[OC_KG_MAX_LAYERS];
    int rc = oc_pool_new(threads, &pool, err);
    if (!rc)
        rc = oc_kg_facts_open(kg, OC_KG_TRAIN, where, &facts, err);
    if (!rc)
        rc = oc_kg_extractor_new(facts, layers, pool, &x, err);
    memset(res, 0, sizeof(*res));
    double t0 = oc_now_s();
    for (uint64_t b = 0; !rc && b < n_q; b += batch) {
        uint32_t n = (uint32_t)(n_q - b < batch ? n_q - b : batch);
        rc = oc_kg_extract(x, heads + b, n, ly, err);
        for (uint32_t l = 0; !rc && l < layers; l++) {
            res->crc =
                (uint32_t)crc32(res->crc, (const Bytef *)ly[l].src, (uInt)(ly[l].n_edges * 4));
            res->crc =
                (uint32_t)crc32(res->crc, (const Bytef *)ly[l].rel, (uInt)(ly[l].n_edges * 4));
            res->crc = (uint32_t)crc32(res->crc, (const Bytef *)ly[l].node_entity,
                                       (uInt)(ly[l].n_nodes * 4));
        }
    }
    res->seconds = oc_now_s() - t0;
    if (x)
        res->facts = oc_kg_extractor_n_edges(x);
    if (facts)
        oc_kg_facts_stats(facts, &res->io);
    oc_kg_extractor_free(x);
    oc_kg_facts_free(facts);
    oc_pool_free(pool);
    return rc;
}

/* A row of --json: the run's seconds and the table's columns; memory's rows are references. */
static void json_row(cJSON *root, int disk, unsigned threads, uint64_t n_q, const struct result *r,
                     int same)
{
    char label[64];
    snprintf(label, sizeof(label), "%s, %u thread%s", disk ? "disk" : "memory", threads,
             threads == 1 ? "" : "s");
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddNumberToObject(o, "value", r->seconds);
    cJSON_AddNullToObject(o, "failed");
    cJSON_AddStringToObject(o, "facts", disk ? "disk" : "memory");
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "queries_per_s", (double)n_q / r->seconds);
    cJSON_AddNumberToObject(o, "facts_per_s", (double)r->facts / r->seconds);
    cJSON_AddNumberToObject(o, "read_bytes", (double)r->io.bytes_read);
    cJSON_AddNumberToObject(o, "requested_bytes", (double)r->io.bytes_requested);
    cJSON_AddBoolToObject(o, "same", same);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "rows"), o);
    if (!disk) {
        cJSON *ref = cJSON_CreateObject();
        if (!ref)
            return;
        cJSON_AddStringToObject(ref, "name", label);
        cJSON_AddNumberToObject(ref, "value", r->seconds);
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "references"), ref);
    }
}

static cJSON *json_new(const struct oc_kg_manifest *m, uint64_t n_q, uint32_t layers,
                       uint32_t batch)
{
    char title[512];
    snprintf(title, sizeof(title), "KG %s: %llu facts; %llu queries, %u layers, batch %u", m->name,
             (unsigned long long)m->graph[0].n_facts, (unsigned long long)n_q, layers, batch);
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "bench", "kg_bench");
    cJSON_AddStringToObject(root, "title", title);
    cJSON_AddStringToObject(root, "metric", "seconds to extract the queries' subgraphs");
    cJSON_AddStringToObject(root, "unit", "s");
    cJSON_AddArrayToObject(root, "references");
    cJSON_AddArrayToObject(root, "rows");
    return root;
}

static int json_write(cJSON *root, const char *path)
{
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    int e = text ? errno : ENOMEM;
    if (f && fclose(f) != 0)
        ok = 0, e = errno;
    cJSON_free(text);
    if (!ok)
        fprintf(stderr, "kg_bench: --json %s: %s\n", path, strerror(e));
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    oc_nn_blas_core_reexec(argv);
    const char *json_path = NULL;
    if (argc > 2 && !strcmp(argv[1], "--json")) {
        json_path = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strncmp(argv[1], "--", 2)) {
        fprintf(stderr, "usage: kg_bench [--json FILE] DIR [queries=2000] [layers=2] [batch=16] "
                        "[threads=1,2]\n");
        return argc < 2 || strcmp(argv[1], "--help") ? 2 : 0;
    }
    uint64_t n_q = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000;
    uint32_t layers = argc > 3 ? (uint32_t)atoi(argv[3]) : 2;
    uint32_t batch = argc > 4 ? (uint32_t)atoi(argv[4]) : 16;
    const char *tlist = argc > 5 ? argv[5] : "1,2";
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_kg *kg = NULL;
    if (oc_kg_open(argv[1], &kg, &err) != OC_OK) {
        fprintf(stderr, "kg_bench: %s\n", err.msg);
        return 1;
    }
    const struct oc_kg_manifest *m = oc_kg_manifest(kg);
    uint32_t *q = NULL;
    uint64_t n_avail = 0;
    if (oc_kg_load_queries(kg, OC_KG_TRAIN, OC_KG_VALID, &q, &n_avail, &err) != OC_OK) {
        fprintf(stderr, "kg_bench: %s\n", err.msg);
        oc_kg_free(kg);
        return 1;
    }
    if (n_q > n_avail)
        n_q = n_avail;
    uint32_t *heads = malloc(n_q * 4 + 4);
    for (uint64_t i = 0; i < n_q; i++)
        heads[i] = q[3 * i];
    printf("KG %s: %llu entities, %llu triples (%llu facts with inverses and identities); "
           "%llu queries, %u layers, batch %u\n",
           m->name, (unsigned long long)m->graph[0].n_entities,
           (unsigned long long)m->graph[0].n_triples, (unsigned long long)m->graph[0].n_facts,
           (unsigned long long)n_q, layers, batch);
    printf("%-7s %7s %10s %14s %12s %12s %8s %9s\n", "facts", "threads", "queries/s", "facts/s",
           "read MB", "requested MB", "amplif.", "same");
    cJSON *json = json_path ? json_new(m, n_q, layers, batch) : NULL;
    uint32_t ref_crc = 0;
    uint64_t ref_facts = 0;
    int bad = 0;
    for (const char *t = tlist; *t;) {
        unsigned threads = (unsigned)strtoul(t, (char **)&t, 10);
        if (*t == ',')
            t++;
        for (int w = 0; w < 2; w++) {
            struct result r;
            enum oc_kg_facts_where where = w ? OC_KG_FACTS_DISK : OC_KG_FACTS_MEMORY;
            if (run(kg, where, threads ? threads : 1, heads, n_q, layers, batch, &r, &err)) {
                fprintf(stderr, "kg_bench: %s\n", err.msg);
                bad = 1;
                break;
            }
            if (!ref_facts) {
                ref_facts = r.facts;
                ref_crc = r.crc;
            }
            int same = r.facts == ref_facts && r.crc == ref_crc;
            bad |= !same;
            if (json)
                json_row(json, w, threads ? threads : 1, n_q, &r, same);
            printf("%-7s %7u %10.1f %14.0f %12.1f %12.1f %8.2f %9s\n", w ? "disk" : "memory",
                   threads, (double)n_q / r.seconds, (double)r.facts / r.seconds,
                   (double)r.io.bytes_read / 1e6, (double)r.io.bytes_requested / 1e6,
                   r.io.bytes_requested ? (double)r.io.bytes_read / (double)r.io.bytes_requested
                                        : 0.0,
                   same ? "yes" : "NO");
        }
    }
    if (json_path && json_write(json, json_path) != 0)
        bad = 1;
    free(heads);
    oc_free(q);
    oc_kg_free(kg);
    return bad;
}
