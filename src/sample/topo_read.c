/*
 * topo_read.c — one sampler worker's reads of an on-disk topology: cached
 * lists are copied from the neighbor cache, uncached ones are queued on the
 * worker's io_uring batch reader and land in the sampler's edge buffer when
 * the batch runs.
 *
 * Place in the data flow: sample; phase B of the sampler (sampler.c) fetches
 * the lists of one chunk of destination nodes, flushes, then checks them.
 * Thread-safety: a reader belongs to one worker thread (its batch owns a
 * ring); the topology it reads is immutable and shared.
 * Ownership: the reader owns its batch and its widen table; destination
 * slots are the caller's and belong to the batch until the next flush.
 *
 * Where the bytes of an uncached list go (k slots of u64 at dst):
 *
 *   u64 ids:  dst  [ id0 ][ id1 ] ... [ idk-1 ]        read in place
 *   u32 ids:  dst  [ 8k bytes ................................ ]
 *                                   [id0|id1|...|idk-1] read into the upper half,
 *             then widened front to back: slot j (bytes 8j..8j+8) is written after
 *             id j (bytes 4k+4j..) is read, and 8j+8 <= 4k+4j+4 <= next id's start,
 *             so no id is overwritten before it is read.
 *
 * Sampled positions that follow each other are one request; the batch merges
 * requests that share a page, so a list costs the pages its drawn positions
 * touch, never more than the whole list.
 */
#include <string.h>

#include "offcore/io.h"
#include "sample/sample_int.h"

#define RD_MAX_QUEUED 4096u /* requests before an early flush */
#define RD_MAX_WIDEN  1024u /* u32 lists before an early flush */

int smp_topo_reader_init(struct smp_topo_reader *r, const struct oc_topo_disk *t,
                         struct oc_err *err)
{
    memset(r, 0, sizeof(*r));
    r->t = t;
    r->widen = oc_alloc(RD_MAX_WIDEN * sizeof(*r->widen), "topology reader", err);
    if (!r->widen)
        return err->status;
    return oc_io_batch_new(t->io_depth, (size_t)t->io_bounce_bytes, &r->batch, err);
}

void smp_topo_reader_deinit(struct smp_topo_reader *r)
{
    oc_io_batch_free(r->batch);
    oc_free(r->widen);
    memset(r, 0, sizeof(*r));
}

int smp_topo_flush(struct smp_topo_reader *r, struct oc_err *err)
{
    int rc = r->n_queued ? oc_io_batch_run(r->batch, err) : OC_OK;
    if (rc == OC_OK) {
        for (uint64_t w = 0; w < r->n_widen; w++) {
            uint64_t *dst = r->widen[w].dst, n = r->widen[w].n;
            const uint8_t *src = (const uint8_t *)dst + 4 * n;
            for (uint64_t j = 0; j < n; j++) {
                uint32_t x;
                memcpy(&x, src + 4 * j, 4);
                dst[j] = x;
            }
        }
    }
    r->n_queued = 0;
    r->n_widen = 0;
    return rc;
}

/*
 * After a failed add: the batch still holds earlier requests into slots that
 * are valid now but may not be at the next flush, so run them now (their
 * outcome no longer matters) and forget them.
 */
static int reader_abort(struct smp_topo_reader *r, int rc)
{
    struct oc_err ignored;
    if (r->n_queued)
        oc_io_batch_run(r->batch, &ignored);
    r->n_queued = 0;
    r->n_widen = 0;
    return rc;
}

static void copy_cached(const struct oc_topo_disk *t, uint64_t v, const uint64_t *pos, uint64_t k,
                        uint64_t *dst)
{
    uint64_t c = smp_topo_slot(t, v);
    if (t->index_bytes == 4) {
        const uint32_t *src = (const uint32_t *)t->cache + c;
        if (pos)
            for (uint64_t j = 0; j < k; j++)
                dst[j] = src[pos[j]];
        else
            for (uint64_t j = 0; j < k; j++)
                dst[j] = src[j];
    } else {
        const uint64_t *src = (const uint64_t *)t->cache + c;
        if (pos)
            for (uint64_t j = 0; j < k; j++)
                dst[j] = src[pos[j]];
        else
            memcpy(dst, src, (size_t)k * sizeof(uint64_t));
    }
}

int smp_topo_fetch(struct smp_topo_reader *r, uint64_t v, const uint64_t *pos, uint64_t k,
                   uint64_t *dst, struct oc_err *err)
{
    const struct oc_topo_disk *t = r->t;
    if (k == 0)
        return OC_OK;
    r->n_lookups++;
    if (smp_topo_cached(t, v)) {
        r->n_hits++;
        copy_cached(t, v, pos, k, dst);
        return OC_OK;
    }
    int rc;
    if ((r->n_queued >= RD_MAX_QUEUED || r->n_widen == RD_MAX_WIDEN) &&
        (rc = smp_topo_flush(r, err)) != OC_OK)
        return rc;
    const uint64_t es = t->index_bytes;
    const uint64_t base = t->data_offset + t->indptr[v] * es;
    uint8_t *out = (uint8_t *)dst + (es == 4 ? 4 * k : 0);
    if (!pos) {
        if ((rc = oc_io_batch_add(r->batch, t->f, base, (size_t)(k * es), out, err)) != OC_OK)
            return reader_abort(r, rc);
        r->n_queued++;
    } else {
        for (uint64_t j = 0; j < k;) {
            uint64_t run = 1;
            while (j + run < k && pos[j + run] == pos[j] + run)
                run++;
            rc = oc_io_batch_add(r->batch, t->f, base + pos[j] * es, (size_t)(run * es),
                                 out + j * es, err);
            if (rc != OC_OK)
                return reader_abort(r, rc);
            r->n_queued++;
            j += run;
        }
    }
    if (es == 4)
        r->widen[r->n_widen++] = (struct smp_topo_widen){dst, k};
    return OC_OK;
}

void smp_topo_reader_stats(const struct smp_topo_reader *r, struct oc_topo_disk_stats *st)
{
    st->n_lookups += r->n_lookups;
    st->n_hits += r->n_hits;
    if (!r->batch)
        return;
    const struct oc_io_stats *io = oc_io_batch_stats(r->batch);
    st->requested_bytes += io->requested_bytes;
    st->read_bytes += io->read_bytes;
    st->n_reads += io->n_reads;
}
