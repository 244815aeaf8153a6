/*
 * fuzz_ginex_superbatch.c — libFuzzer target for pl_sb_parse, the check of a
 * ginex superbatch plan file before it is reused: any byte string must be
 * accepted as a plan (its batches in the trace) or refused with
 * OC_ERR_FORMAT, without crashing, reading out of bounds or leaking. Each
 * input is tried twice: as given, and with its footer replaced by the one
 * this plan expects (keeping its batch count and flags), so that mutations
 * reach the records behind the footer.
 *
 * Place in the data flow: tests (plan/superbatch.c). Replayed over
 * tests/fuzz/corpus/ginex_superbatch (written by gen_corpus.c) in every run.
 * Thread-safety: single-threaded. Ownership: no state between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fixtures.h"
#include "fuzz_twice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem_file {
    const uint8_t *data;
    size_t size;
};

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off, struct oc_err *err)
{
    const struct mem_file *f = ctx;
    if (off > f->size || len > f->size - off)
        return OC_ERR(err, OC_ERR_FORMAT, "fuzz/sb-4.ocsb: truncated");
    memcpy(buf, f->data + off, len);
    return OC_OK;
}

static void try_one(void *ctx, const uint8_t *buf, size_t size)
{
    (void)ctx;
    struct pl_sb_expect x = fuzz_sb_expect();
    struct mem_file f = {buf, size};
    struct pl_trace trace;
    struct oc_sample_batch batch;
    struct oc_err err;
    uint8_t *rec = NULL;
    uint64_t cap_rec = 0, n = 0;
    char why[256];
    pl_trace_init(&trace, UINT64_MAX);
    oc_sample_batch_init(&batch);
    oc_err_clear(&err);
    uint64_t *rec_off = malloc(x.most * sizeof(uint64_t));
    if (!rec_off)
        abort();
    int rc = pl_sb_parse(&x, mem_read, &f, size, &rec, &cap_rec, &batch, &trace, rec_off, &n, why,
                         sizeof(why), &err);
    if (rc == OC_OK) {
        if (n == 0 || n > x.most || trace.n_iters != n)
            abort();
        /* every batch's length prefix lies in the file, in order */
        for (uint64_t i = 0; i < n; i++)
            if (rec_off[i] + 8 > size || (i > 0 && rec_off[i] <= rec_off[i - 1]))
                abort();
        uint64_t id = 0;
        for (uint64_t a = 0; a < trace.n_acc; a++)
            if (pl_trace_ids(&trace, a, 1, &id, &err) != OC_OK || id >= x.n_nodes)
                abort();
    } else if (rc != OC_ERR_FORMAT || err.status != rc || !err.msg[0]) {
        abort();
    }
    free(rec_off);
    oc_free(rec);
    oc_sample_batch_deinit(&batch);
    pl_trace_deinit(&trace);
}

/* The footer this plan expects for the batch count and flags the input claims. */
static int repair(uint8_t *buf, size_t size)
{
    if (size < PL_SB_FOOTER)
        return 0;
    struct pl_sb_expect x = fuzz_sb_expect();
    uint8_t *foot = buf + size - PL_SB_FOOTER;
    pl_sb_footer(&x, oc_get_le64(foot + 24), foot[52], foot);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_twice(data, size, try_one, repair, NULL);
}
