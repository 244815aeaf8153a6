/*
 * tensor.c — tensors over backend-owned buffers: shape, grow-only resize,
 * row views, host wrapping and host transfers; plus the grow-only host
 * buffers used for derived graph arrays.
 *
 * Place in the data flow: nn; every op reads and writes these.
 * Thread-safety: a tensor is used by one thread at a time.
 * Ownership: a tensor with cap_bytes > 0 owns its buffer (freed through its
 * backend by _deinit); views and wrapped host memory are borrowed.
 */
#include <string.h>

#include "nn_int.h"

size_t oc_nn_dtype_size(enum oc_nn_dtype dtype)
{
    return dtype == OC_NN_U8 ? 1 : 4;
}

void oc_nn_tensor_init(struct oc_nn_tensor *t, struct oc_nn_backend *be, enum oc_nn_dtype dtype)
{
    memset(t, 0, sizeof(*t));
    t->backend = be;
    t->dtype = dtype;
}

void oc_nn_tensor_deinit(struct oc_nn_tensor *t)
{
    if (t->cap_bytes && t->data)
        t->backend->ops->buf_free(t->backend, t->data);
    t->data = NULL;
    t->cap_bytes = 0;
    t->n_rows = 0;
    t->n_cols = 0;
}

size_t oc_nn_tensor_bytes(const struct oc_nn_tensor *t)
{
    return (size_t)(t->n_rows * t->n_cols) * oc_nn_dtype_size(t->dtype);
}

/* Grows t's buffer to hold n_rows x n_cols: with a quarter more (headroom) or exactly. */
static int tensor_resize(struct oc_nn_tensor *t, uint64_t n_rows, uint64_t n_cols, int headroom,
                         const char *consumer, struct oc_err *err)
{
    size_t esz = oc_nn_dtype_size(t->dtype);
    if (n_cols && n_rows > SIZE_MAX / esz / n_cols)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: tensor of %llu x %llu is too large", consumer,
                      (unsigned long long)n_rows, (unsigned long long)n_cols);
    size_t bytes = (size_t)(n_rows * n_cols) * esz;
    if (t->data && t->cap_bytes == 0)
        return OC_ERR(err, OC_ERR_ARG, "%s: cannot resize a tensor view", consumer);
    if (bytes > t->cap_bytes) {
        size_t want = headroom ? bytes + bytes / 4 : bytes;
        if (want < 64)
            want = 64;
        void *p = t->backend->ops->buf_alloc(t->backend, want, consumer, err);
        if (!p)
            return err->status;
        if (t->data)
            t->backend->ops->buf_free(t->backend, t->data);
        t->data = p;
        t->cap_bytes = want;
    }
    t->n_rows = n_rows;
    t->n_cols = n_cols;
    return OC_OK;
}

int oc_nn_tensor_resize(struct oc_nn_tensor *t, uint64_t n_rows, uint64_t n_cols,
                        const char *consumer, struct oc_err *err)
{
    return tensor_resize(t, n_rows, n_cols, 1, consumer, err);
}

int oc_nn_tensor_resize_exact(struct oc_nn_tensor *t, uint64_t n_rows, uint64_t n_cols,
                              const char *consumer, struct oc_err *err)
{
    return tensor_resize(t, n_rows, n_cols, 0, consumer, err);
}

int oc_nn_tensor_view_rows(const struct oc_nn_tensor *t, uint64_t row0, uint64_t n_rows,
                           struct oc_nn_tensor *view, struct oc_err *err)
{
    if (row0 > t->n_rows || n_rows > t->n_rows - row0)
        return OC_ERR(err, OC_ERR_ARG, "tensor view: rows [%llu, %llu) outside %llu x %llu",
                      (unsigned long long)row0, (unsigned long long)(row0 + n_rows),
                      (unsigned long long)t->n_rows, (unsigned long long)t->n_cols);
    *view = *t;
    view->cap_bytes = 0;
    view->n_rows = n_rows;
    view->data =
        t->data ? (char *)t->data + (size_t)(row0 * t->n_cols) * oc_nn_dtype_size(t->dtype) : NULL;
    return OC_OK;
}

int oc_nn_tensor_wrap(struct oc_nn_backend *be, enum oc_nn_dtype dtype, void *data, uint64_t n_rows,
                      uint64_t n_cols, struct oc_nn_tensor *view, struct oc_err *err)
{
    if (!be->ops->is_host)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "nn backend %s cannot wrap host memory; upload with oc_nn_tensor_set",
                      be->ops->name);
    oc_nn_tensor_init(view, be, dtype);
    view->data = data;
    view->n_rows = n_rows;
    view->n_cols = n_cols;
    return OC_OK;
}

int oc_nn_tensor_set(struct oc_nn_tensor *t, const void *host, struct oc_err *err)
{
    size_t n = oc_nn_tensor_bytes(t);
    return n ? t->backend->ops->buf_set(t->backend, t->data, host, n, err) : OC_OK;
}

int oc_nn_tensor_get(const struct oc_nn_tensor *t, void *host, struct oc_err *err)
{
    size_t n = oc_nn_tensor_bytes(t);
    return n ? t->backend->ops->buf_get(t->backend, host, t->data, n, err) : OC_OK;
}

int oc_nn_tensor_zero(struct oc_nn_tensor *t, struct oc_err *err)
{
    size_t n = oc_nn_tensor_bytes(t);
    return n ? t->backend->ops->buf_zero(t->backend, t->data, n, err) : OC_OK;
}

int oc_nn_hbuf_reserve(struct oc_nn_hbuf *hb, size_t bytes, const char *consumer,
                       struct oc_err *err)
{
    if (bytes <= hb->cap)
        return OC_OK;
    size_t want = bytes + bytes / 4;
    if (want < 64)
        want = 64;
    void *p = oc_alloc_aligned(want, 64, consumer, err);
    if (!p)
        return err->status;
    oc_free(hb->p);
    hb->p = p;
    hb->cap = want;
    return OC_OK;
}

void oc_nn_hbuf_free(struct oc_nn_hbuf *hb)
{
    oc_free(hb->p);
    hb->p = NULL;
    hb->cap = 0;
}
