/*
 * memory.c — the `memory` strategy: every feature row in RAM as f32 (f16
 * widened once at open), gather = a copy of rows. The reference every other
 * strategy must reproduce bit for bit.
 *
 * Place in the data flow: store; reads features.npy once at open (buffered
 * pread, in chunks), never afterwards.
 * Thread-safety: gather copies rows on the store's pool, each task its own
 * range of output rows; the feature array is read-only after open.
 * Ownership: the feature array (n_nodes x feat_dim f32, accounted as "store
 * memory: features") is the store's.
 *
 * Memory (held_bytes): n_nodes x feat_dim x 4. With cfg->mem_bytes set and
 * smaller than that, open fails with OC_ERR_BUDGET saying how much is needed.
 */
#include <inttypes.h>
#include <string.h>

#include "store/store_int.h"

#define LOAD_CHUNK_BYTES (4u << 20) /* staging for f16 rows at open */

struct mem_store {
    float *feat;
    uint64_t bytes;
};

/* Reads all rows [0, n_nodes) into m->feat, widening f16 through a staging chunk. */
static int mem_load(struct oc_store *s, struct mem_store *m, struct oc_err *err)
{
    struct oc_file *f = NULL;
    uint8_t *stage = NULL;
    int rc;

    if ((rc = oc_file_open(s->path, OC_FILE_READ, &f, err)))
        return rc;
    if (s->dtype == OC_DTYPE_F32) {
        /* Straight into place, in bounded reads (a read of > 2 GiB is short on Linux). */
        uint64_t total = s->n_nodes * (uint64_t)s->row_bytes;
        for (uint64_t done = 0; done < total && rc == OC_OK;) {
            size_t len =
                (size_t)(total - done < LOAD_CHUNK_BYTES ? total - done : LOAD_CHUNK_BYTES);
            rc = oc_file_pread(f, (uint8_t *)m->feat + done, len, s->data_offset + done, err);
            if (rc == OC_OK && s->feat_crc_due) /* the checksum the open deferred, as it reads */
                oc_crc_follow_feed(&s->feat_crc, s->data_offset + done, (uint8_t *)m->feat + done,
                                   len);
            done += len;
        }
    } else {
        uint64_t rows_per = LOAD_CHUNK_BYTES / s->row_bytes ? LOAD_CHUNK_BYTES / s->row_bytes : 1;
        stage = oc_alloc(rows_per * s->row_bytes, "store memory: f16 staging", err);
        if (!stage)
            rc = err ? err->status : OC_ERR_NOMEM;
        for (uint64_t r = 0; r < s->n_nodes && rc == OC_OK; r += rows_per) {
            uint64_t k = s->n_nodes - r < rows_per ? s->n_nodes - r : rows_per;
            rc = oc_file_pread(f, stage, k * s->row_bytes, store_file_off(s, r), err);
            if (rc == OC_OK && s->feat_crc_due)
                oc_crc_follow_feed(&s->feat_crc, store_file_off(s, r), stage, k * s->row_bytes);
            for (uint64_t i = 0; i < k && rc == OC_OK; i++)
                store_row_to_f32(OC_DTYPE_F16, stage + i * s->row_bytes, s->feat_dim,
                                 m->feat + (r + i) * s->feat_dim);
        }
    }
    oc_free(stage);
    oc_file_close(f, NULL);
    if (rc)
        oc_err_prefix(err, "store memory: loading features");
    return rc;
}

static int mem_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct mem_store *m;
    char need[32], have[32];

    uint64_t bytes = s->n_nodes * s->feat_dim * sizeof(float);
    if (cfg->mem_bytes && bytes > cfg->mem_bytes)
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store memory: needs %s (%" PRIu64 " bytes: %" PRIu64 " rows x %" PRIu64
                      " f32) to hold %s in RAM; the store's budget is %s",
                      oc_format_size(bytes, need, sizeof(need)), bytes, s->n_nodes, s->feat_dim,
                      s->path, oc_format_size(cfg->mem_bytes, have, sizeof(have)));
    m = oc_calloc(1, sizeof(*m), "store memory", err);
    if (!m)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = m;
    m->feat = oc_alloc_aligned((size_t)bytes, 64, "store memory: features", err);
    if (!m->feat)
        return err ? err->status : OC_ERR_NOMEM;
    m->bytes = bytes;
    return mem_load(s, m, err);
}

struct mem_job {
    const struct oc_store *s;
    const float *feat;
    const uint64_t *ids;
    float *out;
};

static void mem_copy(void *ctx, uint64_t lo, uint64_t hi)
{
    const struct mem_job *j = ctx;
    uint64_t dim = j->s->feat_dim;
    for (uint64_t i = lo; i < hi; i++)
        memcpy(j->out + i * dim, j->feat + store_row_of(j->s, j->ids[i]) * dim,
               dim * sizeof(float));
}

static int mem_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                      uint64_t n, float *out, struct oc_err *err)
{
    (void)epoch, (void)batch;
    const struct mem_store *m = s->impl;
    struct mem_job j = {s, m->feat, ids, out};
    int rc = store_for_rows(s->pool, n, mem_copy, &j, err);
    if (rc)
        return rc;
    s->stats.tier_rows[OC_STORE_TIER_CPU] += n;
    return OC_OK;
}

static void mem_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    const struct mem_store *m = s->impl;
    out->held_bytes = m->bytes;
}

static void mem_free(struct oc_store *s)
{
    struct mem_store *m = s->impl;
    if (!m)
        return;
    oc_free(m->feat);
    oc_free(m);
    s->impl = NULL;
}

const struct store_strategy oc_store_memory = {
    .name = "memory",
    .reads_whole_features = 1,
    .summary = "every feature row in RAM as f32 (the reference the others must match bit for bit)",
    .open = mem_open,
    .gather = mem_gather,
    .stats = mem_stats,
    .free = mem_free,
    .serves_accesses = 1,
};
