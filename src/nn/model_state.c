/*
 * model_state.c — model checkpoints (parameters + Adam state as a
 * self-describing little-endian byte record, layout in nn.h, closed by a
 * SHA-256 of everything before it) and the SHA-256 of the parameter values
 * that runs compare for bit-identical training.
 *
 * Place in the data flow: nn; train writes checkpoints and prints the hash.
 * Thread-safety: a model is used by one thread at a time.
 * Ownership: buffers are the caller's; load validates everything before it
 * changes the model, so a rejected record leaves the model as it was.
 */
#include <string.h>

#include "nn_int.h"

#define STATE_MAGIC   "OCNNST01"
#define STATE_VERSION 1u
#define STATE_HEADER  64u
#define STATE_DIGEST  32u

/* Host floats <-> little-endian bytes, in place (a no-op on little-endian hosts). */
static void f32_le_inplace(void *data, uint64_t n)
{
    const uint32_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    if (first == 1)
        return;
    uint8_t *p = data;
    for (uint64_t i = 0; i < n; i++, p += 4) {
        uint8_t t0 = p[0], t1 = p[1];
        p[0] = p[3];
        p[1] = p[2];
        p[2] = t1;
        p[3] = t0;
    }
}

static uint64_t param_elems(const struct oc_nn_param *p)
{
    return p->value.n_rows * p->value.n_cols;
}

uint64_t oc_nn_model_state_bytes(const struct oc_nn_model *m)
{
    uint64_t n = STATE_HEADER + STATE_DIGEST;
    for (uint32_t i = 0; i < m->n_params; i++)
        n += 16 + 3 * 4 * param_elems(&m->params[i]);
    return n;
}

static void header_write(const struct oc_nn_model *m, uint8_t *h)
{
    memset(h, 0, STATE_HEADER);
    memcpy(h, STATE_MAGIC, 8);
    oc_put_le32(h + 8, STATE_VERSION);
    oc_put_le32(h + 12, (uint32_t)m->cfg.kind);
    oc_put_le32(h + 16, m->cfg.n_layers);
    oc_put_le32(h + 20, m->n_params);
    oc_put_le64(h + 24, m->cfg.in_dim);
    oc_put_le64(h + 32, m->cfg.hidden);
    oc_put_le64(h + 40, m->cfg.n_classes);
    oc_put_le32(h + 48, m->cfg.heads);
    oc_put_le32(h + 52, m->cfg.out_heads);
    oc_put_le64(h + 56, m->adam_t);
}

int oc_nn_model_state_save(const struct oc_nn_model *m, void *buf, uint64_t bytes,
                           struct oc_err *err)
{
    uint64_t need = oc_nn_model_state_bytes(m);
    if (!buf || bytes < need)
        return OC_ERR(err, OC_ERR_ARG, "model state: buffer of %llu bytes, need %llu",
                      (unsigned long long)bytes, (unsigned long long)need);
    uint8_t *p = buf;
    header_write(m, p);
    p += STATE_HEADER;
    for (uint32_t i = 0; i < m->n_params; i++) {
        const struct oc_nn_param *pr = &m->params[i];
        uint64_t n = param_elems(pr);
        oc_put_le64(p, pr->value.n_rows);
        oc_put_le64(p + 8, pr->value.n_cols);
        p += 16;
        const struct oc_nn_tensor *ts[3] = {&pr->value, &pr->adam_m, &pr->adam_v};
        for (int k = 0; k < 3; k++) {
            OC_NN_TRY(oc_nn_tensor_get(ts[k], p, err));
            f32_le_inplace(p, n);
            p += 4 * n;
        }
    }
    oc_nn_sha256(buf, (size_t)(need - STATE_DIGEST), p);
    return OC_OK;
}

int oc_nn_model_state_load(struct oc_nn_model *m, const void *buf, uint64_t bytes,
                           struct oc_err *err)
{
    uint64_t need = oc_nn_model_state_bytes(m);
    const uint8_t *b = buf;
    if (!buf || bytes < STATE_HEADER + STATE_DIGEST || memcmp(b, STATE_MAGIC, 8) != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "model state: not a model checkpoint (bad magic)");
    if (oc_get_le32(b + 8) != STATE_VERSION)
        return OC_ERR(err, OC_ERR_FORMAT, "model state: version %u, this build reads %u",
                      oc_get_le32(b + 8), STATE_VERSION);
    uint8_t want[STATE_HEADER];
    header_write(m, want);
    if (memcmp(b + 12, want + 12, 44) != 0)
        return OC_ERR(err, OC_ERR_FORMAT,
                      "model state: checkpoint of a %s model with %u layers, %llu -> %llu -> %llu "
                      "(heads %u/%u), does not match this %s model",
                      oc_nn_model_kind_name((enum oc_nn_model_kind)oc_get_le32(b + 12)),
                      oc_get_le32(b + 16), (unsigned long long)oc_get_le64(b + 24),
                      (unsigned long long)oc_get_le64(b + 32),
                      (unsigned long long)oc_get_le64(b + 40), oc_get_le32(b + 48),
                      oc_get_le32(b + 52), oc_nn_model_kind_name(m->cfg.kind));
    if (bytes != need)
        return OC_ERR(err, OC_ERR_FORMAT, "model state: %llu bytes, expected %llu",
                      (unsigned long long)bytes, (unsigned long long)need);
    uint8_t digest[32];
    oc_nn_sha256(b, (size_t)(need - STATE_DIGEST), digest);
    if (memcmp(digest, b + need - STATE_DIGEST, STATE_DIGEST) != 0)
        return OC_ERR(err, OC_ERR_FORMAT, "model state: checksum mismatch (corrupt checkpoint)");
    const uint8_t *p = b + STATE_HEADER;
    for (uint32_t i = 0; i < m->n_params; i++) {
        const struct oc_nn_param *pr = &m->params[i];
        if (oc_get_le64(p) != pr->value.n_rows || oc_get_le64(p + 8) != pr->value.n_cols)
            return OC_ERR(
                err, OC_ERR_FORMAT, "model state: %s is %llux%llu, expected %llux%llu", pr->name,
                (unsigned long long)oc_get_le64(p), (unsigned long long)oc_get_le64(p + 8),
                (unsigned long long)pr->value.n_rows, (unsigned long long)pr->value.n_cols);
        p += 16 + 12 * param_elems(pr);
    }
    uint64_t max_n = 0;
    for (uint32_t i = 0; i < m->n_params; i++)
        max_n = param_elems(&m->params[i]) > max_n ? param_elems(&m->params[i]) : max_n;
    float *tmp = oc_alloc((size_t)max_n * 4 + 4, "nn model state", err);
    if (!tmp)
        return err->status;
    p = b + STATE_HEADER;
    int rc = OC_OK;
    for (uint32_t i = 0; i < m->n_params && rc == OC_OK; i++) {
        struct oc_nn_param *pr = &m->params[i];
        uint64_t n = param_elems(pr);
        p += 16;
        struct oc_nn_tensor *ts[3] = {&pr->value, &pr->adam_m, &pr->adam_v};
        for (int k = 0; k < 3 && rc == OC_OK; k++) {
            memcpy(tmp, p, (size_t)n * 4);
            f32_le_inplace(tmp, n);
            rc = oc_nn_tensor_set(ts[k], tmp, err);
            p += 4 * n;
        }
    }
    oc_free(tmp);
    if (rc == OC_OK)
        m->adam_t = oc_get_le64(b + 56);
    return rc;
}

int oc_nn_model_params_sha256(const struct oc_nn_model *m, uint8_t digest[32], struct oc_err *err)
{
    uint64_t max_n = 0;
    for (uint32_t i = 0; i < m->n_params; i++)
        max_n = param_elems(&m->params[i]) > max_n ? param_elems(&m->params[i]) : max_n;
    float *tmp = oc_alloc((size_t)max_n * 4 + 4, "nn parameter hash", err);
    if (!tmp)
        return err->status;
    struct oc_nn_sha256 s;
    oc_nn_sha256_init(&s);
    int rc = OC_OK;
    for (uint32_t i = 0; i < m->n_params && rc == OC_OK; i++) {
        uint64_t n = param_elems(&m->params[i]);
        rc = oc_nn_tensor_get(&m->params[i].value, tmp, err);
        f32_le_inplace(tmp, n);
        oc_nn_sha256_update(&s, tmp, (size_t)n * 4);
    }
    oc_free(tmp);
    if (rc == OC_OK)
        oc_nn_sha256_final(&s, digest);
    return rc;
}
