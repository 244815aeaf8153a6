/*
 * spill.c — an array of fixed-size elements that the Belady planner (belady.c)
 * writes once and reads back in ranges: a superbatch's access trace, the
 * next use of every access, a plan's changesets. It lives in RAM (through the
 * accountant) or, when the strategy has a plan directory, in a file there,
 * so a superbatch of thousands of batches costs no RAM per access: only the
 * write buffer (PL_SPILL_BUF_BYTES) is held.
 *
 * Place in the data flow: plan, under the Belady planner: store's ginex
 * inspector ──► trace / next-use / changeset spills ──► planner and ginex's
 * executor.
 * Thread-safety: one writer at a time; once flushed, reads of disjoint or
 * equal ranges from other threads are safe (pread), as the executor reads a
 * plan's changes while the inspector fills the other plan.
 * Ownership: the spill owns its memory or its file. The file is unlinked
 * right after it is created, so it never outlives the process (kill -9
 * included) and never mixes with a file of another run.
 */
#include <string.h>

#include "plan/belady.h"

void pl_spill_init(struct pl_spill *sp, uint32_t elem, const char *what)
{
    memset(sp, 0, sizeof(*sp));
    sp->elem = elem;
    sp->what = what;
}

void pl_spill_deinit(struct pl_spill *sp)
{
    oc_free(sp->mem);
    oc_free(sp->buf);
    oc_file_close(sp->f, NULL);
    pl_spill_init(sp, sp->elem, sp->what);
}

uint64_t pl_spill_held_bytes(const struct pl_spill *sp)
{
    return sp->cap * sp->elem + (sp->buf ? PL_SPILL_BUF_BYTES : 0);
}

int pl_spill_to_file(struct pl_spill *sp, const char *dir, const char *name, struct oc_err *err)
{
    char near[4200];
    int rc;
    if ((rc = oc_path_join(near, sizeof(near), dir, name, err)))
        return rc;
    sp->buf = oc_alloc(PL_SPILL_BUF_BYTES, sp->what, err);
    if (!sp->buf)
        return err ? err->status : OC_ERR_NOMEM;
    if ((rc = oc_tmp_scratch(near, OC_FILE_READ | OC_FILE_WRITE, &sp->f, NULL, sp->path,
                             sizeof(sp->path), err))) {
        oc_free(sp->buf);
        sp->buf = NULL;
        return rc;
    }
    oc_free(sp->mem);
    sp->mem = NULL;
    sp->cap = sp->n = sp->n_buf = 0;
    return OC_OK;
}

int pl_spill_in_file(const struct pl_spill *sp)
{
    return sp->f != NULL;
}

void pl_spill_clear(struct pl_spill *sp)
{
    sp->n = sp->n_buf = 0;
}

/* Room in RAM for n elements (memory backend). */
static int mem_reserve(struct pl_spill *sp, uint64_t n, struct oc_err *err)
{
    return oc_grow_by(&sp->mem, &sp->cap, n, sp->elem, OC_GROW_QUARTER(1024), sp->what, err);
}

int pl_spill_flush(struct pl_spill *sp, struct oc_err *err)
{
    if (!sp->f || sp->n_buf == 0)
        return OC_OK;
    uint64_t at = sp->n - sp->n_buf;
    int rc = oc_file_pwrite(sp->f, sp->buf, (size_t)(sp->n_buf * sp->elem), at * sp->elem, err);
    if (rc)
        return oc_err_prefix(err, "%s", sp->what);
    sp->n_buf = 0;
    return OC_OK;
}

int pl_spill_append(struct pl_spill *sp, const void *e, uint64_t n, struct oc_err *err)
{
    const uint8_t *src = e;
    int rc;
    if (n == 0)
        return OC_OK;
    if (!sp->f) {
        if ((rc = mem_reserve(sp, sp->n + n, err)))
            return rc;
        memcpy(sp->mem + sp->n * sp->elem, src, (size_t)(n * sp->elem));
        sp->n += n;
        return OC_OK;
    }
    const uint64_t room = PL_SPILL_BUF_BYTES / sp->elem;
    while (n > 0) {
        if (sp->n_buf == room && (rc = pl_spill_flush(sp, err)))
            return rc;
        uint64_t k = room - sp->n_buf < n ? room - sp->n_buf : n;
        memcpy(sp->buf + sp->n_buf * sp->elem, src, (size_t)(k * sp->elem));
        sp->n_buf += k;
        sp->n += k;
        src += k * sp->elem;
        n -= k;
    }
    return OC_OK;
}

int pl_spill_put(struct pl_spill *sp, uint64_t at, const void *e, uint64_t n, struct oc_err *err)
{
    int rc;
    if (n == 0)
        return OC_OK;
    if (!sp->f) {
        if ((rc = mem_reserve(sp, at + n, err)))
            return rc;
        memcpy(sp->mem + at * sp->elem, e, (size_t)(n * sp->elem));
    } else {
        if ((rc = pl_spill_flush(sp, err)))
            return rc;
        if ((rc = oc_file_pwrite(sp->f, e, (size_t)(n * sp->elem), at * sp->elem, err)))
            return oc_err_prefix(err, "%s", sp->what);
    }
    if (at + n > sp->n)
        sp->n = at + n;
    return OC_OK;
}

int pl_spill_get(struct pl_spill *sp, uint64_t at, uint64_t n, void *out, struct oc_err *err)
{
    int rc;
    if (at > sp->n || n > sp->n - at)
        return OC_ERR(err, OC_ERR_INTERNAL, "%s: elements [%llu, %llu) of %llu", sp->what,
                      (unsigned long long)at, (unsigned long long)(at + n),
                      (unsigned long long)sp->n);
    if (n == 0)
        return OC_OK;
    if (!sp->f) {
        memcpy(out, sp->mem + at * sp->elem, (size_t)(n * sp->elem));
        return OC_OK;
    }
    if ((rc = pl_spill_flush(sp, err)))
        return rc;
    if ((rc = oc_file_pread(sp->f, out, (size_t)(n * sp->elem), at * sp->elem, err)))
        return oc_err_prefix(err, "%s", sp->what);
    return OC_OK;
}
