/*
 * eval_table.c — one layer's output of exact layer-wise inference (n_nodes x
 * dim floats), written chunk by chunk in node order and then gathered by id
 * for the next layer, held either in RAM or in a scratch file:
 *
 *   RAM (no --mem-budget, or the tables take at most a quarter of it):
 *                           chunks are computed into a view of the table;
 *                           the next layer copies rows out of it.
 *   disk (otherwise):       a chunk is computed into a small tensor and
 *                           appended through an O_DIRECT writer to a
 *                           temporary file under the scratch directory;
 *                           once the layer is complete the file is reopened
 *                           with O_DIRECT and unlinked (nothing is left
 *                           behind, even after a crash past that point; one
 *                           before it is cleaned as a stale temporary), and
 *                           the next layer reads its rows through the io
 *                           module's batch reader (io_uring, pread fallback)
 *                           straight into the gather buffer.
 *
 * The bytes are the same either way, so accuracies are too.
 *
 * Place in the data flow: train (eval.c); uses io and nn.
 * Thread-safety: one table belongs to one evaluation.
 * Ownership: owns its tensors, writer and file; the batch reader and the
 * gather buffer are the evaluator's.
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "offcore/io.h"
#include "train/train_int.h"

void eval_table_init(struct eval_table *t, struct oc_nn_backend *be, int on_disk)
{
    memset(t, 0, sizeof(*t));
    t->on_disk = on_disk;
    oc_nn_tensor_init(&t->ram, be, OC_NN_F32);
    oc_nn_tensor_init(&t->chunk, be, OC_NN_F32);
}

static void table_drop_file(struct eval_table *t)
{
    oc_writer_abort(t->w);
    t->w = NULL;
    if (t->path[0]) { /* written but not reopened: remove the partial file */
        unlink(t->path);
        oc_tmp_unregister(t->path);
        t->path[0] = '\0';
    }
    oc_file_close(t->f, NULL);
    t->f = NULL;
}

void eval_table_deinit(struct eval_table *t)
{
    table_drop_file(t);
    oc_nn_tensor_deinit(&t->ram);
    oc_nn_tensor_deinit(&t->chunk);
}

int eval_table_begin(struct eval_table *t, const char *scratch_dir, uint64_t n_rows, uint64_t dim,
                     struct oc_err *err)
{
    table_drop_file(t);
    t->n_rows = n_rows;
    t->dim = dim;
    t->next_row = 0;
    if (!t->on_disk)
        return oc_nn_tensor_resize(&t->ram, n_rows, dim, "layer-wise inference", err);
    char final[4096];
    int rc;
    if ((rc = oc_path_join(final, sizeof(final), scratch_dir, "eval-layer.f32", err)) ||
        (rc = oc_tmp_name(t->path, sizeof(t->path), final, err))) {
        t->path[0] = '\0';
        return rc;
    }
    if ((rc = oc_tmp_create(t->path, OC_TMP_FILE, err)) ||
        (rc = oc_writer_open(t->path, EVAL_TABLE_WRITE_BYTES, &t->w, err)))
        oc_err_prefix(err, "layer-wise inference scratch");
    return rc;
}

int eval_table_rows(struct eval_table *t, uint64_t lo, uint64_t n, struct oc_nn_tensor *out,
                    struct oc_err *err)
{
    if (!t->on_disk)
        return oc_nn_tensor_view_rows(&t->ram, lo, n, out, err);
    int rc = oc_nn_tensor_resize(&t->chunk, n, t->dim, "layer-wise inference chunk", err);
    if (rc == OC_OK)
        *out = t->chunk;
    return rc;
}

int eval_table_put(struct eval_table *t, uint64_t lo, uint64_t n, struct oc_err *err)
{
    if (lo != t->next_row)
        return OC_ERR(err, OC_ERR_ARG, "layer-wise inference: rows %" PRIu64 " put after %" PRIu64,
                      lo, t->next_row);
    t->next_row = lo + n;
    if (!t->on_disk)
        return OC_OK;
    int rc = oc_writer_write(t->w, t->chunk.data, n * t->dim * sizeof(float), err);
    if (rc)
        oc_err_prefix(err, "layer-wise inference scratch");
    return rc;
}

int eval_table_finish(struct eval_table *t, struct oc_err *err)
{
    if (t->next_row != t->n_rows)
        return OC_ERR(err, OC_ERR_ARG, "layer-wise inference: %" PRIu64 " of %" PRIu64 " rows",
                      t->next_row, t->n_rows);
    if (!t->on_disk)
        return OC_OK;
    struct oc_writer *w = t->w;
    t->w = NULL;
    int rc = oc_writer_close(w, err);
    if (rc == OC_OK)
        rc = oc_file_open(t->path, OC_FILE_READ | OC_FILE_DIRECT, &t->f, err);
    if (rc) {
        oc_err_prefix(err, "layer-wise inference scratch");
        return rc;
    }
    /* the open file keeps the rows; the name goes now, so nothing outlives the run */
    unlink(t->path);
    oc_tmp_unregister(t->path);
    t->path[0] = '\0';
    return OC_OK;
}

int eval_table_gather(struct eval_table *t, struct oc_io_batch *io, struct train_gather *g,
                      const uint64_t *ids, uint64_t n, struct oc_pool *pool,
                      struct oc_nn_backend *be, struct oc_nn_tensor *x, struct oc_err *err)
{
    if (!t->on_disk)
        return train_gather_rows(g, t->ram.data, t->dim, ids, n, pool, be, x, err);
    int rc = train_gather_reserve(g, n, t->dim, err);
    if (rc)
        return rc;
    size_t row_bytes = t->dim * sizeof(float);
    for (uint64_t i = 0; i < n && rc == OC_OK; i++)
        rc = oc_io_batch_add(io, t->f, ids[i] * row_bytes, row_bytes, g->buf + i * t->dim, err);
    /* run even after a failed add: the batch empties itself for the next layer */
    struct oc_err later;
    memset(&later, 0, sizeof(later));
    int run = oc_io_batch_run(io, rc ? &later : err);
    if (rc == OC_OK)
        rc = run;
    if (rc == OC_OK)
        rc = oc_nn_tensor_wrap(be, OC_NN_F32, g->buf, n, t->dim, x, err);
    return rc;
}
