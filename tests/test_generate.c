/*
 * test_generate.c — the synthetic generator: a valid dataset (opened and
 * validated), a symmetric simple graph, labels and splits as specified,
 * determinism (same seed → same files at 1 and 2 threads, another seed →
 * other files), the default output pinned by CRC, planted communities (their
 * edge share, scattered ids, dominant classes, determinism), f16 = rounded f32, a learnable-but-not-trivial task (nearest
 * centroid on own features vs. neighbourhood means), bad options, and fault
 * loops (allocation, read, write) that must leave no output and no leak.
 *
 * Place in the data flow: tests of dataset (generate → sorter → builder).
 * Thread-safety: single-threaded (the generator runs its own pool).
 * Ownership: arrays loaded here are freed here.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/gen_int.h"
#include "fault_util.h"
#include "harness.h"
#include "offcore/dataset.h"
#include "offcore/generate.h"
#include "offcore/io.h"

static void tiny_opts(struct oc_generate_opts *o, uint64_t n)
{
    oc_generate_opts_default(o);
    o->n_nodes = n;
    o->avg_degree = 8;
    o->feat_dim = 6;
    o->n_classes = 4;
    o->seed = 42;
    o->n_threads = 2;
}

static const char *fresh_out(void)
{
    static char out[700];
    snprintf(out, sizeof(out), "%s/gen", oc_test_tmpdir());
    return out;
}

/* Loads a whole array of the dataset as `want`. */
static void *load(const struct oc_dataset *ds, enum oc_ds_file f, enum oc_dtype want,
                  uint64_t *rows, uint64_t *cols)
{
    struct oc_err err;
    void *p = NULL;
    OC_CHECK_OK(oc_npy_load_as(oc_dataset_path(ds, f), want, &p, rows, cols, &err), &err);
    return p;
}

/* Whether node v's sorted neighbor row contains x. */
static int contains(const uint64_t *ip, const uint64_t *ix, uint64_t v, uint64_t x)
{
    uint64_t b = ip[v], e = ip[v + 1];
    while (b < e) {
        uint64_t m = (b + e) / 2;
        if (ix[m] < x)
            b = m + 1;
        else
            e = m;
    }
    return b < ip[v + 1] && ix[b] == x;
}

OC_TEST(generate_tiny_valid_symmetric)
{
    struct oc_err err;
    oc_err_clear(&err);
    uint64_t live = oc_mem_n_live();
    struct oc_generate_opts o;
    tiny_opts(&o, 3000);
    const char *out = fresh_out();
    OC_CHECK_OK(oc_generate(&o, out, NULL, &err), &err);
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(out, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    if (!ds)
        return;
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    OC_CHECK(strcmp(m->name, "generated") == 0);
    OC_CHECK(m->n_nodes == 3000 && m->feat_dim == 6 && m->n_classes == 4);
    OC_CHECK(m->feat_dtype == OC_DTYPE_F32 && m->index_dtype == OC_DTYPE_U32);
    OC_CHECK(!m->directed);
    OC_CHECK(strstr(m->provenance, "--seed 42") && strstr(m->provenance, "--homophily"));
    /* Average degree near D: duplicates cost a little. */
    double deg = (double)m->n_edges / (double)m->n_nodes;
    OC_CHECK(deg > 0.85 * o.avg_degree && deg <= o.avg_degree);
    /* Splits near their fractions, disjoint by construction (validated by open). */
    OC_CHECK(fabs((double)m->n_train / 3000 - o.train_frac) < 0.03);
    OC_CHECK(fabs((double)m->n_val / 3000 - o.val_frac) < 0.03);
    OC_CHECK(fabs((double)m->n_test / 3000 - o.test_frac) < 0.03);

    uint64_t rows, cols;
    uint64_t *ip = load(ds, OC_DS_INDPTR, OC_DTYPE_U64, &rows, &cols);
    uint64_t *ix = load(ds, OC_DS_INDICES, OC_DTYPE_U64, &rows, &cols);
    int32_t *lab = load(ds, OC_DS_LABELS, OC_DTYPE_I32, &rows, &cols);
    if (ip && ix && lab) {
        uint64_t bad_order = 0, self = 0, asym = 0, same = 0;
        uint64_t cls_count[4] = {0, 0, 0, 0};
        for (uint64_t v = 0; v < 3000; v++) {
            cls_count[lab[v]]++;
            for (uint64_t k = ip[v]; k < ip[v + 1]; k++) {
                if (k > ip[v] && ix[k] <= ix[k - 1])
                    bad_order++;
                if (ix[k] == v)
                    self++;
                if (!contains(ip, ix, ix[k], v))
                    asym++;
                same += lab[ix[k]] == lab[v];
            }
        }
        OC_CHECK(bad_order == 0 && self == 0 && asym == 0);
        /* Homophily 0.5 with 4 classes: about 0.5 + 0.5 · 0.27 of edges inside a class. */
        double frac = (double)same / (double)m->n_edges;
        OC_CHECK(frac > 0.55 && frac < 0.75);
        /* Mildly imbalanced classes: all present, the first the largest. */
        OC_CHECK(cls_count[3] > 300 && cls_count[0] > cls_count[3]);
        /* Power law: the top degree is far above the mean. */
        uint64_t dmax = 0;
        for (uint64_t v = 0; v < 3000; v++)
            dmax = ip[v + 1] - ip[v] > dmax ? ip[v + 1] - ip[v] : dmax;
        OC_CHECK((double)dmax > 5 * deg);
    }
    oc_free(ip);
    oc_free(ix);
    oc_free(lab);
    oc_dataset_free(ds);
    OC_CHECK(oc_mem_n_live() == live);
}

static void crcs(const char *dir, uint32_t crc[OC_DS_FILE_COUNT], char *prov, size_t n)
{
    struct oc_err err;
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    memset(crc, 0, OC_DS_FILE_COUNT * sizeof(uint32_t));
    if (!ds)
        return;
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    for (int f = 0; f < OC_DS_FILE_COUNT; f++) { /* every file but a layout's map */
        OC_CHECK(m->files[f].present == (f != OC_DS_FEATURE_ROWS));
        crc[f] = m->files[f].crc32;
    }
    snprintf(prov, n, "%s", m->provenance);
    oc_dataset_free(ds);
}

OC_TEST(generate_deterministic_across_threads)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 20000); /* > one edge chunk, several feature blocks per thread */
    o.feat_dim = 33;
    uint32_t c1[OC_DS_FILE_COUNT], c2[OC_DS_FILE_COUNT], c3[OC_DS_FILE_COUNT];
    char p1[1024], p2[1024], p3[1024];
    char d1[700], d2[700], d3[700];
    snprintf(d1, sizeof(d1), "%s", fresh_out());
    snprintf(d2, sizeof(d2), "%s", fresh_out());
    snprintf(d3, sizeof(d3), "%s", fresh_out());
    o.n_threads = 1;
    OC_CHECK_OK(oc_generate(&o, d1, NULL, &err), &err);
    o.n_threads = 2;
    o.mem_bytes = 64 << 10; /* and a spilling sort: same output */
    OC_CHECK_OK(oc_generate(&o, d2, NULL, &err), &err);
    o.seed = 43;
    OC_CHECK_OK(oc_generate(&o, d3, NULL, &err), &err);
    crcs(d1, c1, p1, sizeof(p1));
    crcs(d2, c2, p2, sizeof(p2));
    crcs(d3, c3, p3, sizeof(p3));
    OC_CHECK(memcmp(c1, c2, sizeof(c1)) == 0);
    OC_CHECK(strcmp(p1, p2) == 0);
    for (int f = 0; f < OC_DS_FILE_COUNT; f++)
        OC_CHECK(c1[f] != c3[f] || f == OC_DS_FEATURE_ROWS);
}

/*
 * Without --communities the output is what it was before the option existed:
 * the CRCs of generate_deterministic_across_threads' dataset, recorded at
 * commit eccfcba (x86-64, glibc libm: the weights and features go through
 * log/exp/cos, so another libm may legitimately differ).
 */
OC_TEST(generate_default_output_pinned)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 20000);
    o.feat_dim = 33;
    static const struct {
        enum oc_ds_file f;
        uint32_t crc;
    } pinned[] = {{OC_DS_INDPTR, 0x37f9cd4fu},    {OC_DS_INDICES, 0x17e4696du},
                  {OC_DS_FEATURES, 0x41283e75u},  {OC_DS_LABELS, 0x41777393u},
                  {OC_DS_TRAIN_IDX, 0x3f4f01adu}, {OC_DS_VAL_IDX, 0xdf913322u},
                  {OC_DS_TEST_IDX, 0xedacdb49u}};
    const char *out = fresh_out();
    OC_CHECK_OK(oc_generate(&o, out, NULL, &err), &err);
    uint32_t c[OC_DS_FILE_COUNT];
    char prov[1024];
    crcs(out, c, prov, sizeof(prov));
    for (size_t k = 0; k < sizeof(pinned) / sizeof(pinned[0]); k++) {
        if (c[pinned[k].f] != pinned[k].crc)
            fprintf(stderr, "  file %d: crc %08x, pinned %08x\n", (int)pinned[k].f, c[pinned[k].f],
                    pinned[k].crc);
        OC_CHECK(c[pinned[k].f] == pinned[k].crc);
    }
    OC_CHECK(strcmp(prov, "offcore generate --nodes 20000 --avg-degree 8 --feat-dim 33 --classes 4 "
                          "--dtype f32 --seed 42 --homophily 0.5 --power-law 2.2 --feat-signal 1.6 "
                          "--train-frac 0.1 --val-frac 0.05 --test-frac 0.1") == 0);
}

OC_TEST(generate_communities_deterministic)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 20000);
    o.feat_dim = 9;
    o.communities = 50;
    uint32_t c1[OC_DS_FILE_COUNT], c2[OC_DS_FILE_COUNT], c0[OC_DS_FILE_COUNT];
    char p1[1024], p2[1024], p0[1024];
    char d1[700], d2[700], d0[700];
    snprintf(d1, sizeof(d1), "%s", fresh_out());
    snprintf(d2, sizeof(d2), "%s", fresh_out());
    snprintf(d0, sizeof(d0), "%s", fresh_out());
    o.n_threads = 1;
    OC_CHECK_OK(oc_generate(&o, d1, NULL, &err), &err);
    o.n_threads = 2;
    o.mem_bytes = 64 << 10;
    OC_CHECK_OK(oc_generate(&o, d2, NULL, &err), &err);
    o.communities = 0;
    OC_CHECK_OK(oc_generate(&o, d0, NULL, &err), &err);
    crcs(d1, c1, p1, sizeof(p1));
    crcs(d2, c2, p2, sizeof(p2));
    crcs(d0, c0, p0, sizeof(p0));
    OC_CHECK(memcmp(c1, c2, sizeof(c1)) == 0);
    OC_CHECK(strcmp(p1, p2) == 0);
    /* The default mixing is written out, so the provenance alone regenerates it. */
    OC_CHECK(strstr(p1, " --communities 50 --mixing 0.3") != NULL);
    OC_CHECK(strstr(p0, "--communities") == NULL);
    OC_CHECK(c1[OC_DS_INDICES] != c0[OC_DS_INDICES] && c1[OC_DS_LABELS] != c0[OC_DS_LABELS]);
    /* Splits do not depend on the graph. */
    OC_CHECK(c1[OC_DS_TRAIN_IDX] == c0[OC_DS_TRAIN_IDX]);
}

/*
 * The planted community of every node and the realized offsets, re-derived
 * from the options as the generator does (gen_comm.c, no pool).
 */
static uint32_t *planted(const struct oc_generate_opts *o, uint64_t *n_comm, uint64_t **off)
{
    struct oc_err err;
    struct oc_gen g;
    memset(&g, 0, sizeof(g));
    g.o = *o;
    *off = NULL;
    *n_comm = 0;
    OC_CHECK_OK(oc_gen_comm_init(&g, &err), &err);
    if (!g.comm.n_comm)
        return NULL;
    uint32_t *comm = malloc(o->n_nodes * sizeof(uint32_t));
    *off = malloc((g.comm.n_comm + 1) * sizeof(uint64_t));
    if (comm && *off) {
        memcpy(comm, g.comm.of, o->n_nodes * sizeof(uint32_t));
        memcpy(*off, g.comm.off, (g.comm.n_comm + 1) * sizeof(uint64_t));
        *n_comm = g.comm.n_comm;
    }
    oc_gen_comm_deinit(&g.comm);
    return comm;
}

OC_TEST(generate_communities_planted)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 30001);
    o.avg_degree = 12;
    o.feat_dim = 0;
    o.communities = 150;
    o.mixing = 0.2;
    const char *out = fresh_out();
    OC_CHECK_OK(oc_generate(&o, out, NULL, &err), &err);
    uint64_t nk = 0, *off = NULL;
    uint32_t *comm = planted(&o, &nk, &off);
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(out, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    if (!ds || !comm || !off || nk == 0) {
        oc_dataset_free(ds);
        free(comm);
        free(off);
        return;
    }
    const uint64_t n = o.n_nodes;
    /*
     * Sizes: targets heavy-tailed in [S/4, 4S]; realized ones scatter around
     * them (hubs add to the large ones); mean S by construction.
     */
    uint64_t smin = UINT64_MAX, smax = 0;
    for (uint64_t k = 0; k < nk; k++) {
        uint64_t s = off[k + 1] - off[k];
        smin = s < smin ? s : smin;
        smax = s > smax ? s : smax;
    }
    double mean = (double)n / (double)nk;
    fprintf(stderr, "  %llu communities, sizes %llu..%llu, mean %.1f\n", (unsigned long long)nk,
            (unsigned long long)smin, (unsigned long long)smax, mean);
    OC_CHECK(off[nk] == n && smin >= 10 && smax <= 2 * (600 + 37));
    OC_CHECK(mean > 0.75 * 150 && mean < 1.25 * 150);
    OC_CHECK(smax > 5 * smin);

    uint64_t rows, cols;
    uint64_t *ip = load(ds, OC_DS_INDPTR, OC_DTYPE_U64, &rows, &cols);
    uint64_t *ix = load(ds, OC_DS_INDICES, OC_DTYPE_U64, &rows, &cols);
    int32_t *lab = load(ds, OC_DS_LABELS, OC_DTYPE_I32, &rows, &cols);
    if (ip && ix && lab) {
        /* The share of edges inside a community: 1 - μ, less what hubs send outside. */
        uint64_t inside = 0, same = 0, m = ip[n];
        for (uint64_t v = 0; v < n; v++)
            for (uint64_t e = ip[v]; e < ip[v + 1]; e++) {
                inside += comm[ix[e]] == comm[v];
                same += lab[ix[e]] == lab[v];
            }
        double share = (double)inside / (double)m, agree = (double)same / (double)m;
        double deg = (double)m / (double)n;
        fprintf(stderr,
                "  intra-community share %.3f (1 - mu = %.2f), same-class %.3f, degree %.2f\n",
                share, 1 - o.mixing, agree, deg);
        OC_CHECK(share > 1 - o.mixing - 0.08 && share < 1 - o.mixing + 0.02);
        /* Class homophily about as without communities (0.55 - 0.75, see the tiny test). */
        OC_CHECK(agree > 0.5 && agree < 0.8);
        OC_CHECK(deg > 0.85 * o.avg_degree && deg <= o.avg_degree);
        /* Ids are scattered: neighbours in id order rarely share a community... */
        uint64_t adjacent = 0;
        for (uint64_t i = 0; i + 1 < n; i++)
            adjacent += comm[i] == comm[i + 1];
        OC_CHECK((double)adjacent / (double)(n - 1) < 3.0 / (double)nk + 0.01);
        /* ...and every community spans most of the id range. */
        uint64_t *lo = malloc(nk * sizeof(uint64_t)), *hi = calloc(nk, sizeof(uint64_t));
        uint32_t *dom = calloc(nk * o.n_classes, sizeof(uint32_t));
        if (lo && hi && dom) {
            for (uint64_t k = 0; k < nk; k++)
                lo[k] = UINT64_MAX;
            for (uint64_t i = 0; i < n; i++) {
                lo[comm[i]] = i < lo[comm[i]] ? i : lo[comm[i]];
                hi[comm[i]] = i > hi[comm[i]] ? i : hi[comm[i]];
                dom[comm[i] * o.n_classes + (uint32_t)lab[i]]++;
            }
            uint64_t narrow = 0, in_dom = 0;
            for (uint64_t k = 0; k < nk; k++) {
                narrow += hi[k] - lo[k] < n / 2;
                uint32_t best = 0;
                for (uint32_t c = 0; c < o.n_classes; c++)
                    best = dom[k * o.n_classes + c] > best ? dom[k * o.n_classes + c] : best;
                in_dom += best;
            }
            OC_CHECK(narrow == 0);
            /* A dominant class per community: sqrt(0.5) of members plus chance. */
            double dshare = (double)in_dom / (double)n;
            fprintf(stderr, "  members in their community's dominant class: %.3f\n", dshare);
            OC_CHECK(dshare > 0.7 && dshare < 0.9);
        }
        free(lo);
        free(hi);
        free(dom);
    }
    oc_free(ip);
    oc_free(ix);
    oc_free(lab);
    oc_dataset_free(ds);
    free(comm);
    free(off);
}

OC_TEST(generate_f16_is_rounded_f32)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 500);
    o.feat_dim = 7;
    char d1[700], d2[700];
    snprintf(d1, sizeof(d1), "%s", fresh_out());
    snprintf(d2, sizeof(d2), "%s", fresh_out());
    OC_CHECK_OK(oc_generate(&o, d1, NULL, &err), &err);
    o.feat_dtype = OC_DTYPE_F16;
    OC_CHECK_OK(oc_generate(&o, d2, NULL, &err), &err);
    struct oc_dataset *a = NULL, *b = NULL;
    OC_CHECK_OK(oc_dataset_open(d1, OC_DS_OPEN_DEFAULT, &a, &err), &err);
    OC_CHECK_OK(oc_dataset_open(d2, OC_DS_OPEN_DEFAULT, &b, &err), &err);
    if (!a || !b) {
        oc_dataset_free(a);
        oc_dataset_free(b);
        return;
    }
    OC_CHECK(oc_dataset_manifest(b)->feat_dtype == OC_DTYPE_F16);
    struct oc_npy_header h;
    OC_CHECK_OK(oc_npy_read_header(oc_dataset_path(b, OC_DS_FEATURES), &h, &err), &err);
    OC_CHECK(h.dtype == OC_DTYPE_F16 && h.shape[0] == 500 && h.shape[1] == 7);
    uint64_t r1, k1, r2, k2;
    float *x = load(a, OC_DS_FEATURES, OC_DTYPE_F32, &r1, &k1);
    float *y = load(b, OC_DS_FEATURES, OC_DTYPE_F32, &r2, &k2);
    if (x && y && r1 == r2 && k1 == k2) {
        uint64_t bad = 0;
        for (uint64_t i = 0; i < r1 * k1; i++)
            bad += oc_f16_to_f32(oc_f32_to_f16(x[i])) != y[i];
        OC_CHECK(bad == 0);
    }
    oc_free(x);
    oc_free(y);
    oc_dataset_free(a);
    oc_dataset_free(b);
}

/* Nearest-centroid accuracy on non-train nodes, centroids from train nodes. */
static double centroid_acc(const float *x, uint64_t n, uint32_t f, const int32_t *lab, uint32_t nc,
                           const uint8_t *is_train)
{
    double *cen = calloc((size_t)nc * f, sizeof(double));
    uint64_t *cnt = calloc(nc, sizeof(uint64_t));
    for (uint64_t i = 0; i < n; i++) {
        if (!is_train[i])
            continue;
        cnt[lab[i]]++;
        for (uint32_t j = 0; j < f; j++)
            cen[(size_t)lab[i] * f + j] += x[i * f + j];
    }
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t j = 0; j < f; j++)
            cen[(size_t)c * f + j] /= cnt[c] ? (double)cnt[c] : 1.0;
    uint64_t ok = 0, tot = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (is_train[i])
            continue;
        uint32_t best = 0;
        double bd = INFINITY;
        for (uint32_t c = 0; c < nc; c++) {
            double d = 0;
            for (uint32_t j = 0; j < f; j++) {
                double t = x[i * f + j] - cen[(size_t)c * f + j];
                d += t * t;
            }
            if (d < bd) {
                bd = d;
                best = c;
            }
        }
        ok += (int32_t)best == lab[i];
        tot++;
    }
    free(cen);
    free(cnt);
    return (double)ok / (double)tot;
}

/* Nearest-centroid accuracy on own features vs neighbourhood means, with communities or not. */
static void check_learnable(uint64_t communities)
{
    struct oc_err err;
    struct oc_generate_opts o;
    oc_generate_opts_default(&o);
    o.n_nodes = 20000;
    o.feat_dim = 32;
    o.seed = 7;
    o.n_threads = 2;
    o.communities = communities;
    const char *out = fresh_out();
    OC_CHECK_OK(oc_generate(&o, out, NULL, &err), &err);
    struct oc_dataset *ds = NULL;
    OC_CHECK_OK(oc_dataset_open(out, OC_DS_OPEN_DEFAULT, &ds, &err), &err);
    if (!ds)
        return;
    const uint64_t n = o.n_nodes;
    const uint32_t f = o.feat_dim;
    uint64_t rows, cols, n_train;
    uint64_t *ip = load(ds, OC_DS_INDPTR, OC_DTYPE_U64, &rows, &cols);
    uint64_t *ix = load(ds, OC_DS_INDICES, OC_DTYPE_U64, &rows, &cols);
    int32_t *lab = load(ds, OC_DS_LABELS, OC_DTYPE_I32, &rows, &cols);
    float *x = load(ds, OC_DS_FEATURES, OC_DTYPE_F32, &rows, &cols);
    uint64_t *train = NULL;
    OC_CHECK_OK(oc_dataset_load_split(ds, OC_DS_TRAIN_IDX, &train, &n_train, &err), &err);
    double deg = (double)oc_dataset_manifest(ds)->n_edges / (double)n;
    if (ip && ix && lab && x && train) {
        uint8_t *is_train = calloc(n, 1);
        for (uint64_t k = 0; k < n_train; k++)
            is_train[train[k]] = 1;
        float *y = malloc(n * f * sizeof(float));
        for (uint64_t v = 0; v < n; v++) {
            for (uint32_t j = 0; j < f; j++) {
                double s = x[v * f + j];
                for (uint64_t k = ip[v]; k < ip[v + 1]; k++)
                    s += x[ix[k] * f + j];
                y[v * f + j] = (float)(s / (double)(ip[v + 1] - ip[v] + 1));
            }
        }
        double own = centroid_acc(x, n, f, lab, o.n_classes, is_train);
        double nbr = centroid_acc(y, n, f, lab, o.n_classes, is_train);
        fprintf(stderr,
                "  20k nodes, communities %llu: avg degree %.2f, own-feature accuracy %.3f, "
                "neighbourhood-mean accuracy %.3f\n",
                (unsigned long long)communities, deg, own, nbr);
        OC_CHECK(own > 0.35 && own < 0.65);
        OC_CHECK(nbr > own + 0.12 && nbr < 0.95);
        OC_CHECK(deg > 0.9 * o.avg_degree && deg <= o.avg_degree);
        free(is_train);
        free(y);
    }
    oc_free(ip);
    oc_free(ix);
    oc_free(lab);
    oc_free(x);
    oc_free(train);
    oc_dataset_free(ds);
}

OC_TEST(generate_learnable_not_trivial)
{
    check_learnable(0);
    check_learnable(200); /* communities keep the task as learnable (dominant classes) */
}

OC_TEST(generate_rejects_bad_options)
{
    struct oc_err err;
    struct oc_generate_opts o;
    tiny_opts(&o, 100);
    o.n_classes = 0;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "--classes");
    tiny_opts(&o, 100);
    o.power_law = 1.0;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "--power-law");
    tiny_opts(&o, 100);
    o.train_frac = 0.9;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "split");
    tiny_opts(&o, 100);
    o.feat_dtype = OC_DTYPE_I32;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "f32 or f16");
    tiny_opts(&o, 100);
    o.avg_degree = 0;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "--avg-degree");
    tiny_opts(&o, 100);
    o.mixing = 0.3; /* without --communities */
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err,
                 "--mixing 0.3 needs --communities");
    tiny_opts(&o, 100);
    o.communities = 10;
    o.mixing = -0.1;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err,
                 "--mixing must be in [0, 1], got -0.1");
    o.mixing = 1.5;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err,
                 "--mixing must be in [0, 1], got 1.5");
    o.mixing = NAN;
    o.communities = 101;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err,
                 "--communities must be 0 (none) or in [2, nodes = 100], got 101");
    o.communities = 1;
    OC_CHECK_ERR(oc_generate(&o, fresh_out(), NULL, &err), OC_ERR_ARG, &err, "--communities");
    /* The extremes are fine: one community of everything, μ = 0 and 1. */
    o.communities = 100;
    o.mixing = 0;
    OC_CHECK_OK(oc_generate(&o, fresh_out(), NULL, &err), &err);
    o.communities = 2;
    o.mixing = 1;
    OC_CHECK_OK(oc_generate(&o, fresh_out(), NULL, &err), &err);
    tiny_opts(&o, 100);
    const char *out = fresh_out();
    OC_CHECK_OK(oc_mkdir_p(out, &err), &err);
    OC_CHECK_ERR(oc_generate(&o, out, NULL, &err), OC_ERR_EXISTS, &err, "exists");
}

/* Entries in dir (-1 if unreadable). */
static int n_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* One generate with a fault armed; returns whether it fired. */
static int generate_with_fault(int mode, enum oc_fault_kind kind, uint64_t nth, int errv,
                               uint64_t mem, uint64_t communities)
{
    struct oc_err err;
    oc_err_clear(&err);
    struct oc_generate_opts o;
    tiny_opts(&o, 300);
    o.mem_bytes = mem;
    o.communities = communities;
    const char *parent = oc_test_tmpdir();
    char out[700];
    snprintf(out, sizeof(out), "%s/gen", parent);
    uint64_t live = oc_mem_n_live();
    fault_arm_mode(mode, kind, nth, errv);
    int rc = oc_generate(&o, out, NULL, &err);
    int fired = oc_fault_fired(kind);
    oc_fault_disarm_all();
    if (fired) {
        if (rc == OC_OK) {
            fprintf(stderr, "  %s fault %d #%llu (errno %d) fired but generate succeeded\n",
                    fault_mode_name(mode), (int)kind, (unsigned long long)nth, errv);
            OC_CHECK(rc != OC_OK);
        }
        /* Nothing at all is left: no output, no temporary directory. */
        if (n_entries(parent) != 0) {
            fprintf(stderr, "  %s fault %d #%llu left files in %s\n", fault_mode_name(mode),
                    (int)kind, (unsigned long long)nth, parent);
            OC_CHECK(n_entries(parent) == 0);
        }
    } else {
        OC_CHECK_OK(rc, &err);
    }
    if (oc_mem_n_live() != live) {
        fprintf(stderr, "  leak after %s fault %d #%llu: %s\n", fault_mode_name(mode), (int)kind,
                (unsigned long long)nth, err.msg);
        OC_CHECK(oc_mem_n_live() == live);
    }
    return fired;
}

OC_TEST(generate_fault_loops)
{
    const struct {
        enum oc_fault_kind kind;
        int errv;
    } faults[] = {{OC_FAULT_ALLOC, ENOMEM}, {OC_FAULT_READ, EIO},     {OC_FAULT_READ, 0},
                  {OC_FAULT_WRITE, ENOSPC}, {OC_FAULT_WRITE, EIO},    {OC_FAULT_OPEN, EACCES},
                  {OC_FAULT_FSYNC, EIO},    {OC_FAULT_RENAME, ENOSPC}};
    /* Default memory (sorted in memory) and 32 KiB (bucket files, recursive splits). */
    const uint64_t mems[2] = {0, 32 << 10};
    for (int mi = 0; mi < 2; mi++) {
        for (size_t f = 0; f < sizeof(faults) / sizeof(faults[0]); f++) {
            for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
                /* one-shot: every nth; persistent: sampled */
                uint64_t nth = 1, n_runs = 0;
                while (nth < 100000 && generate_with_fault(mode, faults[f].kind, nth,
                                                           faults[f].errv, mems[mi], 0)) {
                    nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0);
                    n_runs++;
                }
                OC_CHECK(n_runs > 0);
                fprintf(stderr, "  mem %llu %s fault %s errno %d: %llu failing runs\n",
                        (unsigned long long)mems[mi], fault_mode_name(mode),
                        oc_fault_kind_name(faults[f].kind), faults[f].errv,
                        (unsigned long long)n_runs);
            }
        }
    }
}

/* The communities' own allocations (sizes, order, membership, tables) fail cleanly too. */
OC_TEST(generate_communities_alloc_faults)
{
    for (int mode = 0; mode < FAULT_MODE_COUNT; mode++) {
        uint64_t nth = 1, n_runs = 0;
        while (nth < 100000 && generate_with_fault(mode, OC_FAULT_ALLOC, nth, ENOMEM, 0, 20)) {
            nth = fault_next_nth(nth, mode == FAULT_PERSISTENT ? 8 : 0);
            n_runs++;
        }
        OC_CHECK(n_runs > 0);
    }
}

OC_TEST_MAIN()
