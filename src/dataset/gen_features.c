/*
 * gen_features.c — the generator's node data: class-correlated noisy
 * features, labels and train/val/test splits, written in node order.
 *
 *   centre   μ_c = feat_signal · g_c / sqrt(F), g_c ~ N(0, I) from stream
 *            (seed, GEN_STREAM_CENTRES, c): ‖μ_c‖ ≈ feat_signal whatever F is
 *   row      x_i = μ_class(i) + ε_i, ε_i ~ N(0, I) from stream (seed, GEN_STREAM_NOISE, i)
 *   split    hash(seed, i) in [0,1): < train → train, < train+val → val,
 *            < train+val+test → test, else none; ids ascending
 *
 * Rows are filled in parallel windows (each pool task a fixed block of rows)
 * and appended by the calling thread, so the file is the same at any thread
 * count.
 *
 * Place in the data flow: dataset (generate → builder).
 * Thread-safety: pool tasks read the centres and classes and write their own
 * block of the window buffer.
 * Ownership: buffers are oc_alloc'd here and freed before returning.
 */
#include <math.h>
#include <string.h>

#include "dataset/gen_int.h"

#define GEN_WINDOW_BYTES ((size_t)8 << 20) /* bytes of rows per pool task (about) */
#define GEN_IDS_BUF      65536u

/* Two independent standard normals from two u32 (Box–Muller, both outputs used). */
static inline void normal_pair(struct oc_rng *r, float *z0, float *z1)
{
    float u1 = (float)((oc_rng_u32(r) >> 8) + 1) * (1.0f / 16777216.0f); /* (0, 1] */
    float u2 = (float)(oc_rng_u32(r) >> 8) * (6.2831853071795865f / 16777216.0f);
    float rad = sqrtf(-2.0f * logf(u1));
    *z0 = rad * cosf(u2);
    *z1 = rad * sinf(u2);
}

struct feat_ctx {
    const struct oc_gen *g;
    const float *centre; /* n_classes × F */
    uint64_t base;       /* first row of the window */
    uint64_t rows_per_task;
    uint8_t *buf; /* window: n_tasks × rows_per_task rows */
    size_t row_bytes;
};

static int feat_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct feat_ctx *fc = ctx;
    const struct oc_gen *g = fc->g;
    const uint32_t f = g->o.feat_dim;
    uint64_t lo = fc->base + task * fc->rows_per_task;
    uint64_t hi = lo + fc->rows_per_task < g->o.n_nodes ? lo + fc->rows_per_task : g->o.n_nodes;
    uint8_t *out = fc->buf + (size_t)(task * fc->rows_per_task) * fc->row_bytes;
    const int half = g->o.feat_dtype == OC_DTYPE_F16;
    for (uint64_t i = lo; i < hi; i++, out += fc->row_bytes) {
        const float *mu = fc->centre + (size_t)g->cls[i] * f;
        struct oc_rng r;
        oc_rng_init(&r, g->o.seed, GEN_STREAM_NOISE, i, 0);
        float *x32 = (float *)(void *)out;
        uint16_t *x16 = (uint16_t *)(void *)out;
        for (uint32_t j = 0; j < f; j += 2) {
            float z0, z1;
            normal_pair(&r, &z0, &z1);
            float v0 = mu[j] + z0;
            if (half)
                x16[j] = oc_f32_to_f16(v0);
            else
                x32[j] = v0;
            if (j + 1 < f) {
                float v1 = mu[j + 1] + z1;
                if (half)
                    x16[j + 1] = oc_f32_to_f16(v1);
                else
                    x32[j + 1] = v1;
            }
        }
    }
    return OC_OK;
}

int oc_gen_features(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err)
{
    const uint64_t n = g->o.n_nodes;
    const uint32_t f = g->o.feat_dim, nc = g->o.n_classes;
    struct feat_ctx fc;
    struct oc_npy_writer *w = NULL;
    float *centre = NULL;
    int rc;
    memset(&fc, 0, sizeof(fc));
    if (f == 0)
        return OC_OK;
    centre = oc_alloc((size_t)nc * f * sizeof(float), "generate: class centres", err);
    if (!centre)
        return err->status;
    const float scale = (float)(g->o.feat_signal / sqrt((double)f));
    for (uint32_t c = 0; c < nc; c++) {
        struct oc_rng r;
        oc_rng_init(&r, g->o.seed, GEN_STREAM_CENTRES, c, 0);
        for (uint32_t j = 0; j < f; j += 2) {
            float z0, z1;
            normal_pair(&r, &z0, &z1);
            centre[(size_t)c * f + j] = scale * z0;
            if (j + 1 < f)
                centre[(size_t)c * f + j + 1] = scale * z1;
        }
    }
    fc.g = g;
    fc.centre = centre;
    fc.row_bytes = (size_t)f * oc_dtype_size(g->o.feat_dtype);
    fc.rows_per_task = GEN_WINDOW_BYTES / fc.row_bytes;
    if (fc.rows_per_task == 0)
        fc.rows_per_task = 1;
    if (fc.rows_per_task > n)
        fc.rows_per_task = n ? n : 1;
    /* Slots for the rows there are: no window beyond the matrix. */
    unsigned n_slots = 2 * oc_pool_n_threads(g->pool);
    if (n_slots > (n + fc.rows_per_task - 1) / fc.rows_per_task)
        n_slots = (unsigned)((n + fc.rows_per_task - 1) / fc.rows_per_task);
    fc.buf = oc_alloc((size_t)(n_slots * fc.rows_per_task) * fc.row_bytes,
                      "generate: feature window", err);
    if (!fc.buf) {
        rc = err->status;
        goto out;
    }
    uint64_t shape[2] = {n, f};
    rc = oc_ds_builder_begin_array(b, OC_DS_FEATURES, g->o.feat_dtype, 2, shape, &w, err);
    if (rc != OC_OK)
        goto out;
    oc_progress_phase(g->progress, "generate: features", n, "rows");
    const uint64_t window = n_slots * fc.rows_per_task;
    for (fc.base = 0; fc.base < n; fc.base += window) {
        uint64_t rows = n - fc.base < window ? n - fc.base : window;
        uint64_t n_tasks = (rows + fc.rows_per_task - 1) / fc.rows_per_task;
        rc = oc_pool_run(g->pool, n_tasks, feat_task, &fc);
        if (rc == OC_OK)
            rc = oc_npy_writer_append(w, fc.buf, (size_t)rows * fc.row_bytes, err);
        if (rc != OC_OK)
            goto out;
        oc_progress_add(g->progress, rows);
    }
    rc = oc_ds_builder_end_array(b, OC_DS_FEATURES, w, err);
    w = NULL;
out:
    oc_npy_writer_abort(w);
    oc_free(fc.buf);
    oc_free(centre);
    return rc;
}

/* Which split node i falls in: 0 train, 1 val, 2 test, 3 none. */
static int split_of(const struct oc_gen *g, uint64_t i)
{
    double u = gen_unit(oc_rng_mix64(g->o.seed ^ GEN_SALT_SPLIT, i));
    double t = g->o.train_frac;
    if (u < t)
        return 0;
    t += g->o.val_frac;
    if (u < t)
        return 1;
    t += g->o.test_frac;
    return u < t ? 2 : 3;
}

static int write_labels(struct oc_gen *g, struct oc_ds_builder *b, void *buf, size_t cap,
                        struct oc_err *err)
{
    struct oc_npy_writer *w = NULL;
    int32_t *lab = buf;
    uint64_t shape = g->o.n_nodes;
    int rc = oc_ds_builder_begin_array(b, OC_DS_LABELS, OC_DTYPE_I32, 1, &shape, &w, err);
    if (rc != OC_OK)
        return rc;
    for (uint64_t lo = 0; lo < g->o.n_nodes; lo += cap) {
        size_t m = g->o.n_nodes - lo < cap ? (size_t)(g->o.n_nodes - lo) : cap;
        for (size_t k = 0; k < m; k++)
            lab[k] = g->cls[lo + k];
        rc = oc_npy_writer_append(w, lab, m * sizeof(int32_t), err);
        if (rc != OC_OK) {
            oc_npy_writer_abort(w);
            return rc;
        }
    }
    return oc_ds_builder_end_array(b, OC_DS_LABELS, w, err);
}

static int write_split(struct oc_gen *g, struct oc_ds_builder *b, int which, uint64_t count,
                       uint64_t *ids, size_t cap, struct oc_err *err)
{
    static const enum oc_ds_file files[3] = {OC_DS_TRAIN_IDX, OC_DS_VAL_IDX, OC_DS_TEST_IDX};
    struct oc_npy_writer *w = NULL;
    int rc = oc_ds_builder_begin_array(b, files[which], OC_DTYPE_U64, 1, &count, &w, err);
    if (rc != OC_OK)
        return rc;
    size_t k = 0;
    for (uint64_t i = 0; i < g->o.n_nodes; i++) {
        if (split_of(g, i) != which)
            continue;
        ids[k++] = i;
        if (k == cap) {
            rc = oc_npy_writer_append(w, ids, k * sizeof(uint64_t), err);
            if (rc != OC_OK)
                goto fail;
            k = 0;
        }
    }
    if (k > 0 && (rc = oc_npy_writer_append(w, ids, k * sizeof(uint64_t), err)) != OC_OK)
        goto fail;
    return oc_ds_builder_end_array(b, files[which], w, err);
fail:
    oc_npy_writer_abort(w);
    return rc;
}

int oc_gen_labels_splits(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err)
{
    uint64_t *buf = oc_alloc(GEN_IDS_BUF * sizeof(uint64_t), "generate: id buffer", err);
    if (!buf)
        return err->status;
    int rc = write_labels(g, b, buf, GEN_IDS_BUF * 2, err);
    uint64_t count[4] = {0, 0, 0, 0};
    if (rc == OC_OK) {
        for (uint64_t i = 0; i < g->o.n_nodes; i++)
            count[split_of(g, i)]++;
        struct oc_manifest *m = oc_ds_builder_manifest(b);
        m->n_train = count[0];
        m->n_val = count[1];
        m->n_test = count[2];
    }
    for (int s = 0; s < 3 && rc == OC_OK; s++)
        rc = write_split(g, b, s, count[s], buf, GEN_IDS_BUF, err);
    oc_free(buf);
    return rc;
}
