/*
 * checkpoint.c — saves and restores a training run after an epoch: model
 * parameters and Adam state (nn's self-checking record), the position (next
 * epoch, best validation --metric so far, JSON-log length) and a fingerprint of
 * every option that changes training (and of --metric, the position's units), so a resume with different options is
 * refused instead of silently mixing runs. The file is replaced atomically
 * (temporary name, fsync, rename), so a crash at any moment leaves either
 * the previous or the new checkpoint; a temporary a kill -9 left is removed
 * at the next save.
 *
 *   DIR/checkpoint.bin (little-endian):
 *   "OCCKPT01" | u32 version | u32 fp_len | fingerprint text
 *   | u32 next_epoch | u32 best_epoch | f64 best_val_acc | f64 test_acc_at_best_val
 *   | u64 log_bytes | u64 state_bytes | nn state record | u32 CRC-32 of all before
 *
 * Place in the data flow: train.
 * Thread-safety: called by the training thread only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "offcore/io.h"
#include "train/train_int.h"

#define CKPT_MAGIC   "OCCKPT01"
#define CKPT_VERSION 1u
#define CKPT_FILE    "checkpoint.bin"

void train_opts_fingerprint(const struct oc_train_opts *o, const struct oc_manifest *m, char *buf,
                            size_t n)
{
    char fan[128] = "";
    size_t len = 0;
    for (uint32_t l = 0; l < o->n_fanouts && len < sizeof(fan) - 16; l++)
        len += (size_t)snprintf(fan + len, sizeof(fan) - len, "%s%d", l ? "," : "", o->fanouts[l]);
    /* the chosen strategy's options that change training (outre's), in table order; the
       strategies bit-identical to memory have none, so a run may resume under another */
    char sopts[256] = "";
    len = 0;
    uint32_t chosen;
    struct oc_err ignored;
    if (oc_store_strategy_find(train_strategy_name(o), &chosen, &ignored) == OC_OK)
        for (uint32_t k = 0; k < oc_store_strategy_n_opts(chosen); k++) {
            const struct oc_store_opt *opt = oc_store_strategy_opt(chosen, k);
            if (opt->changes_training && len < sizeof(sopts) - 48)
                len += (size_t)snprintf(sopts + len, sizeof(sopts) - len, " %s=%.17g", opt->name,
                                        oc_train_opts_get(o, opt->name, opt->dflt));
        }
    /* micro-shards sum gradients in another order; whole batches keep their fingerprint */
    char shards[32] = "";
    if (o->micro_shards > 1)
        snprintf(shards, sizeof(shards), " micro_shards=%u", o->micro_shards);
    snprintf(buf, n,
             "model=%s layers=%u hidden=%" PRIu64 " heads=%u fanout=%s batch=%" PRIu64
             " lr=%.9g weight_decay=%.9g dropout=%.9g input_dropout=%.9g seed=%" PRIu64
             " eval=%s dataset=%s"
             " nodes=%" PRIu64 " edges=%" PRIu64 " features_crc=%08x indices_crc=%08x"
             " labels_crc=%08x splits_crc=%08x,%08x,%08x%s"
             " reuse_samples=%s batching=%s partition_batch=%u%s%s%s%s",
             oc_nn_model_kind_name(o->model), o->n_layers, o->hidden, o->heads, fan, o->batch_size,
             (double)o->lr, (double)o->weight_decay, (double)o->dropout, (double)o->input_dropout,
             o->seed,
             o->eval == OC_TRAIN_EVAL_FULL      ? "full"
             : o->eval == OC_TRAIN_EVAL_SAMPLED ? "sampled"
                                                : "none",
             m->name, m->n_nodes, m->n_edges, m->files[OC_DS_FEATURES].crc32,
             m->files[OC_DS_INDICES].crc32, m->files[OC_DS_LABELS].crc32,
             m->files[OC_DS_TRAIN_IDX].crc32, m->files[OC_DS_VAL_IDX].crc32,
             m->files[OC_DS_TEST_IDX].crc32, sopts,
             o->reuse_samples ? "1-reshuffled" : "0", /* 1: since batches are reshuffled */
             o->batching == OC_TRAIN_BATCHING_PARTITION ? "partition" : "random",
             o->batching == OC_TRAIN_BATCHING_PARTITION ? train_partition_group(o) : 0,
             /* METIS's runs keep the fingerprint they had before Fennel existed */
             o->batching == OC_TRAIN_BATCHING_PARTITION && o->partitioner == OC_PLAN_PART_FENNEL
                 ? " partitioner=fennel"
                 : "",
             /* the metric does not change the weights, but the position's best validation
                figure is in its units: a resume under another metric would compare unlike
                figures. Accuracy runs keep the fingerprint they had before --metric. */
             o->metric != OC_TRAIN_METRIC_ACC ? " metric=" : "",
             o->metric != OC_TRAIN_METRIC_ACC ? oc_train_metric_name(o->metric) : "", shards);
}

static void put(uint8_t **p, const void *v, size_t n)
{
    memcpy(*p, v, n); /* little-endian hosts only: checked at build time below */
    *p += n;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoints assume little-endian");

int oc_train_checkpoint_save(const char *dir, const char *fingerprint, const struct oc_nn_model *m,
                             const struct oc_train_position *pos, struct oc_err *err)
{
    char path[4096];
    int rc = oc_path_join(path, sizeof(path), dir, CKPT_FILE, err);
    if (rc)
        return rc;
    if ((rc = oc_mkdir_p(dir, err)))
        return rc;
    oc_tmp_clean_stale(dir, CKPT_FILE, NULL, NULL); /* a save a kill -9 cut short */
    uint32_t fp_len = (uint32_t)strlen(fingerprint);
    uint64_t state_bytes = oc_nn_model_state_bytes(m);
    size_t total = 8 + 4 + 4 + fp_len + 4 + 4 + 8 + 8 + 8 + 8 + state_bytes + 4;
    uint8_t *buf = oc_alloc(total, "checkpoint", err);
    if (!buf)
        return err->status;
    uint8_t *p = buf;
    uint32_t version = CKPT_VERSION;
    put(&p, CKPT_MAGIC, 8);
    put(&p, &version, 4);
    put(&p, &fp_len, 4);
    put(&p, fingerprint, fp_len);
    put(&p, &pos->next_epoch, 4);
    put(&p, &pos->best_epoch, 4);
    put(&p, &pos->best_val_acc, 8);
    put(&p, &pos->test_acc_at_best_val, 8);
    put(&p, &pos->log_bytes, 8);
    put(&p, &state_bytes, 8);
    if ((rc = oc_nn_model_state_save(m, p, state_bytes, err)))
        goto out;
    p += state_bytes;
    uint32_t crc = (uint32_t)crc32_z(0L, buf, (z_size_t)(p - buf));
    put(&p, &crc, 4);
    rc = oc_write_file_atomic(path, buf, total, err);
out:
    oc_free(buf);
    return rc;
}

static int take(const uint8_t **p, const uint8_t *end, void *v, size_t n, const char *path,
                struct oc_err *err)
{
    if ((size_t)(end - *p) < n)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: truncated checkpoint", path);
    memcpy(v, *p, n);
    *p += n;
    return OC_OK;
}

int oc_train_checkpoint_load(const char *dir, const char *fingerprint, struct oc_nn_model *m,
                             struct oc_train_position *pos, struct oc_err *err)
{
    char path[4096];
    int rc = oc_path_join(path, sizeof(path), dir, CKPT_FILE, err);
    if (rc)
        return rc;
    if (!oc_path_exists(path))
        return OC_ERR(err, OC_ERR_NOTFOUND, "%s: no checkpoint to resume from", path);
    char *data = NULL;
    size_t len = 0;
    if ((rc = oc_read_file(path, 0, &data, &len, err)))
        return rc;
    rc = train_checkpoint_parse(data, len, path, fingerprint, m, pos, err);
    oc_free(data);
    return rc;
}

int train_checkpoint_parse(const void *buf, size_t len, const char *path, const char *fingerprint,
                           struct oc_nn_model *m, struct oc_train_position *pos, struct oc_err *err)
{
    const char *data = buf;
    const uint8_t *p = (const uint8_t *)data, *end = p + len;
    int rc = OC_OK;
    char magic[8];
    uint32_t version = 0, fp_len = 0, crc_stored = 0;
    uint64_t state_bytes = 0;
    if (len < 12 + 4 || memcmp(data, CKPT_MAGIC, 8) != 0) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: not an offcore checkpoint", path);
        goto out;
    }
    memcpy(&crc_stored, end - 4, 4);
    if ((uint32_t)crc32_z(0L, p, (z_size_t)(len - 4)) != crc_stored) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: checksum mismatch (corrupt checkpoint)", path);
        goto out;
    }
    end -= 4;
    if ((rc = take(&p, end, magic, 8, path, err)) || (rc = take(&p, end, &version, 4, path, err)))
        goto out;
    if (version != CKPT_VERSION) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: unknown checkpoint version %u (this build reads %u)",
                    path, version, CKPT_VERSION);
        goto out;
    }
    if ((rc = take(&p, end, &fp_len, 4, path, err)))
        goto out;
    if ((size_t)(end - p) < fp_len) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: truncated checkpoint", path);
        goto out;
    }
    if (fp_len != strlen(fingerprint) || memcmp(p, fingerprint, fp_len) != 0) {
        /* the first item that differs, then both lists (which the message may cut) */
        size_t cur = strlen(fingerprint), i = 0;
        while (i < fp_len && i < cur && p[i] == (uint8_t)fingerprint[i])
            i++;
        if (i < fp_len && i < cur) /* inside an item: from its start */
            while (i > 0 && p[i - 1] != ' ')
                i--;
        size_t sa = i, sb = i, ea, eb;
        while (sa < fp_len && p[sa] == ' ')
            sa++;
        while (sb < cur && fingerprint[sb] == ' ')
            sb++;
        for (ea = sa; ea < fp_len && p[ea] != ' '; ea++)
            ;
        for (eb = sb; eb < cur && fingerprint[eb] != ' '; eb++)
            ;
        rc = OC_ERR(err, OC_ERR_ARG,
                    "%s: the checkpoint was made with different options or data: saved \"%.*s\", "
                    "now \"%.*s\" (the first difference); saved options: %.*s; current: %s",
                    path, (int)(ea - sa), (const char *)p + sa, (int)(eb - sb), fingerprint + sb,
                    (int)fp_len, (const char *)p, fingerprint);
        goto out;
    }
    p += fp_len;
    if ((rc = take(&p, end, &pos->next_epoch, 4, path, err)) ||
        (rc = take(&p, end, &pos->best_epoch, 4, path, err)) ||
        (rc = take(&p, end, &pos->best_val_acc, 8, path, err)) ||
        (rc = take(&p, end, &pos->test_acc_at_best_val, 8, path, err)) ||
        (rc = take(&p, end, &pos->log_bytes, 8, path, err)) ||
        (rc = take(&p, end, &state_bytes, 8, path, err)))
        goto out;
    if ((uint64_t)(end - p) != state_bytes) {
        rc = OC_ERR(err, OC_ERR_FORMAT, "%s: model state size mismatch", path);
        goto out;
    }
    if ((rc = oc_nn_model_state_load(m, p, state_bytes, err)))
        oc_err_prefix(err, "%s", path);
out:
    return rc;
}
