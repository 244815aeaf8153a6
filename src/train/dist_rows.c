/*
 * dist_rows.c — partitioned features for `train --distributed` on the
 * output of `offcore partition`: this rank's part opened and checked (its
 * files, then every rank's run id against the others'), its own feature
 * rows held in memory (the `memory` strategy's way, through the
 * accountant, so under --mem-budget), and, per batch, the input rows of this
 * rank's micro-shards: its own copied, the others' fetched from their owners
 * in one exchange.
 *
 *   batch b ──► positions my shards read (seeds [lo, hi) down the blocks),
 *                 │ each a row of x (slot[position]), nothing else held
 *                 │ owner[v] == me: rows[row] ──────────────────────► x
 *                 │ else: request (owner, row) grouped by owner
 *                 ▼
 *   MPI_Alltoall (counts) ─► MPI_Alltoallv (row ids) ─► owners copy rows
 *                         ─► MPI_Alltoallv (rows) ─────────────────► x
 *
 * Every rank takes part in the exchange of every batch (a collective), also
 * when it asks for nothing, so the ranks stay in step; the batches are the
 * same on every rank (same seed, same order), so the rows a shard reads are
 * the replicated run's and so are the weights.
 *
 * Place in the data flow: train; the trainer fills each batch's rows here
 * instead of taking them from the batch pipeline (the pipeline's store
 * needs the whole feature matrix).
 * Thread-safety: the trainer's thread only (MPI is used single-threaded).
 * Ownership: a train_part owns its part, rows and exchange buffers (grown,
 * reused: nothing is allocated per batch once they fit).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/io.h"
#include "train/dist.h"
#include "train/train_int.h"

/* The run id as a number, for comparing ranks' parts. */
static uint64_t run_id_u64(const char *hex)
{
    return strtoull(hex, NULL, 16);
}

/* Every rank's part is of the same partition run (each rank may read its own partition.json). */
static int check_run_ids(struct train_part *tp, struct oc_err *err)
{
    uint32_t n = tp->part.n_parts;
    uint64_t mine = run_id_u64(tp->part.run_id);
    uint64_t *all = oc_calloc(n, sizeof(uint64_t), "partition: run ids", err);
    uint64_t *counts = oc_calloc(n, sizeof(uint64_t), "partition: run ids", err);
    int rc = all && counts ? OC_OK : err->status;
    for (uint32_t r = 0; rc == OC_OK && r < n; r++)
        counts[r] = 1;
    if (rc == OC_OK)
        rc = oc_dist_allgather_u64(&mine, all, counts, err);
    for (uint32_t r = 0; rc == OC_OK && r < n; r++)
        if (all[r] != mine)
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s/part.json: run id %s, but rank %u's part has %016" PRIx64
                        ": the parts come from different partition runs",
                        tp->part.dir, tp->part.run_id, r, all[r]);
    oc_free(all);
    oc_free(counts);
    return rc;
}

int train_part_open(struct train_part *tp, const char *dir, const struct oc_train_opts *o,
                    struct oc_err *err)
{
    memset(tp, 0, sizeof(*tp));
    if (!o->distributed || !oc_dist_on())
        return OC_ERR(err, OC_ERR_ARG,
                      "%s is a partitioned dataset (offcore partition): train it with mpirun -np "
                      "N offcore train %s --distributed, one rank per part",
                      dir, dir);
    if (o->strategy && strcmp(o->strategy, "memory") != 0)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "--strategy %s: a partitioned dataset keeps each rank's own rows in memory "
                      "(--strategy memory) in this version",
                      o->strategy);
    if (o->eval != OC_TRAIN_EVAL_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "a partitioned dataset trains with --eval none in this version (evaluation "
                      "reads rows of every part)");
    if (o->reuse_samples || o->topology_disk)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "%s on a partitioned dataset: not in this version",
                      o->reuse_samples ? "--reuse-samples" : "--topology-disk");
    int rc = oc_plan_part_open(dir, oc_dist_rank(), oc_dist_size(), &tp->part, err);
    if (rc == OC_OK)
        rc = check_run_ids(tp, err);
    if (rc) {
        train_part_close(tp);
        return rc;
    }
    tp->on = 1;
    return OC_OK;
}

int train_part_load_rows(struct train_part *tp, const struct train_data *d, struct oc_err *err)
{
    const struct oc_plan_part *p = &tp->part;
    if (d->n_nodes != p->n_nodes)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %" PRIu64 " nodes, its part.json says %" PRIu64,
                      p->dir, d->n_nodes, p->n_nodes);
    const uint64_t n = p->n_local * p->feat_dim;
    const size_t esize = oc_dtype_size(p->feat_dtype);
    tp->rows = oc_alloc((n ? n : 1) * sizeof(float), "partition: this rank's feature rows", err);
    if (!tp->rows)
        return err->status;
    struct oc_file *f = NULL;
    uint8_t *buf = NULL;
    int rc = oc_file_open(p->rows, OC_FILE_READ, &f, err);
    const uint64_t chunk = (uint64_t)1 << 20; /* elements per read */
    if (rc == OC_OK && p->feat_dtype != OC_DTYPE_F32 &&
        !(buf = oc_alloc(chunk * esize, "partition: row staging", err)))
        rc = err->status;
    for (uint64_t at = 0; rc == OC_OK && at < n;) {
        uint64_t k = n - at < chunk ? n - at : chunk;
        void *dst = buf ? (void *)buf : (void *)(tp->rows + at);
        rc = oc_file_pread(f, dst, (size_t)(k * esize), OC_NPY_HEADER_BYTES + at * esize, err);
        for (uint64_t i = 0; rc == OC_OK && buf && i < k; i++) {
            uint16_t h;
            memcpy(&h, buf + i * 2, 2);
            tp->rows[at + i] = oc_f16_to_f32(h);
        }
        at += k;
    }
    oc_free(buf);
    if (f) {
        struct oc_err ignored;
        oc_file_close(f, &ignored);
    }
    if (rc == OC_OK)
        oc_log(OC_LOG_INFO,
               "partition: rank %u holds part %u of %u (run %s): %" PRIu64 " of %" PRIu64
               " nodes' rows in memory",
               oc_dist_rank(), p->part, p->n_parts, p->run_id, p->n_local, p->n_nodes);
    return rc;
}

/*
 * tp->pos[0 .. *n): the batch positions the shards of seeds [lo, hi) read, in
 * the order shard_cut finds them; tp->slot[p] = the index of position p among
 * them (its row of tp->x), UINT32_MAX for a position they do not read.
 */
static int reach(struct train_part *tp, const struct oc_sample_batch *b, uint64_t lo, uint64_t hi,
                 uint64_t *n_out, struct oc_err *err)
{
    int rc;
    if ((rc = train_grow(&tp->slot, &tp->cap_slot, b->n_input, sizeof(uint32_t),
                         "partition: batch rows", err)) ||
        (rc = train_grow(&tp->pos, &tp->cap_pos, b->n_input, sizeof(uint32_t),
                         "partition: batch rows", err)))
        return rc;
    memset(tp->slot, 0xff, b->n_input * sizeof(uint32_t));
    uint64_t n = 0;
    for (uint64_t k = lo; k < hi; k++) {
        tp->slot[k] = (uint32_t)n;
        tp->pos[n++] = (uint32_t)k;
    }
    for (uint32_t l = b->n_layers; l-- > 0;) {
        const struct oc_sample_block *bl = &b->blocks[l];
        uint64_t n_dst = n;
        for (uint64_t d = 0; d < n_dst; d++)
            for (uint64_t k = bl->indptr[tp->pos[d]]; k < bl->indptr[tp->pos[d] + 1]; k++) {
                uint32_t src = bl->indices[k];
                if (tp->slot[src] == UINT32_MAX) {
                    tp->slot[src] = (uint32_t)n;
                    tp->pos[n++] = src;
                }
            }
    }
    *n_out = n;
    return OC_OK;
}

/* The rows other ranks asked of this one (tp->serve), copied into tp->reply in their order. */
static int serve(struct train_part *tp, uint64_t n_serve, uint64_t dim, struct oc_err *err)
{
    int rc = train_grow(&tp->reply, &tp->cap_reply, n_serve * dim, sizeof(float),
                        "partition: replies", err);
    for (uint64_t i = 0; rc == OC_OK && i < n_serve; i++) {
        uint32_t row = tp->serve[i];
        if (row >= tp->part.n_local)
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: another rank asked for row %u of this part, which has %" PRIu64
                          " rows: the ranks' owner maps disagree",
                          tp->part.dir, row, tp->part.n_local);
        memcpy(tp->reply + i * dim, tp->rows + (uint64_t)row * dim, dim * sizeof(float));
    }
    return rc;
}

int train_part_fill(struct train_part *tp, const struct oc_sample_batch *b, uint64_t lo,
                    uint64_t hi, uint64_t dim, float **x, struct oc_train_epoch_stats *st,
                    struct oc_err *err)
{
    const uint32_t n_ranks = tp->part.n_parts, me = tp->part.part;
    uint64_t n_pos = 0;
    int rc;
    if ((rc = reach(tp, b, lo, hi, &n_pos, err)) ||
        (rc = train_grow(&tp->x, &tp->cap_x, n_pos * dim, sizeof(float), "partition: batch rows",
                         err)) ||
        (rc = train_grow(&tp->send_n, &tp->cap_ranks, 2 * (uint64_t)n_ranks, sizeof(uint64_t),
                         "partition: exchange counts", err)) ||
        (rc = train_grow(&tp->offs, &tp->cap_offs, n_ranks, sizeof(uint64_t), "partition: requests",
                         err)))
        return rc;
    uint64_t *send_n = tp->send_n, *recv_n = tp->send_n + n_ranks, *off = tp->offs;
    memset(send_n, 0, n_ranks * sizeof(uint64_t));
    const uint32_t *owner = tp->part.owner;
    for (uint64_t i = 0; i < n_pos; i++) {
        uint64_t v = b->input_ids[tp->pos[i]];
        uint32_t k = owner[2 * v];
        if (k == me)
            memcpy(tp->x + i * dim, tp->rows + (uint64_t)owner[2 * v + 1] * dim,
                   dim * sizeof(float));
        else
            send_n[k]++;
    }
    uint64_t n_req = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        n_req += send_n[r];
    if ((rc = train_grow(&tp->req, &tp->cap_req, 2 * n_req, sizeof(uint32_t), "partition: requests",
                         err)))
        return rc;
    uint32_t *req_slot = tp->req + n_req; /* row of x of each request, in request order */
    /* requests grouped by owner, in position order within an owner */
    for (uint64_t r = 0, s = 0; r < n_ranks; s += send_n[r], r++)
        off[r] = s;
    for (uint64_t i = 0; i < n_pos; i++) {
        uint64_t v = b->input_ids[tp->pos[i]];
        uint32_t k = owner[2 * v];
        if (k == me)
            continue;
        tp->req[off[k]] = owner[2 * v + 1];
        req_slot[off[k]++] = (uint32_t)i;
    }
    if ((rc = oc_dist_alltoall_u64(send_n, recv_n, err)))
        return rc;
    uint64_t n_serve = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        n_serve += recv_n[r];
    if ((rc = train_grow(&tp->serve, &tp->cap_serve, n_serve, sizeof(uint32_t),
                         "partition: requests", err)) ||
        (rc = oc_dist_alltoallv(tp->req, send_n, tp->serve, recv_n, sizeof(uint32_t),
                                "the row requests", err)) ||
        (rc = serve(tp, n_serve, dim, err)) ||
        (rc = train_grow(&tp->got, &tp->cap_got, n_req * dim, sizeof(float),
                         "partition: fetched rows", err)) ||
        (rc = oc_dist_alltoallv(tp->reply, recv_n, tp->got, send_n, dim * sizeof(float),
                                "the feature rows", err)))
        return rc;
    for (uint64_t i = 0; i < n_req; i++)
        memcpy(tp->x + (uint64_t)req_slot[i] * dim, tp->got + i * dim, dim * sizeof(float));
    st->local_rows += n_pos - n_req;
    st->remote_rows += n_req;
    st->remote_bytes += n_req * dim * sizeof(float);
    st->served_rows += n_serve;
    *x = tp->x;
    return OC_OK;
}

void train_part_close(struct train_part *tp)
{
    oc_plan_part_close(&tp->part);
    oc_free(tp->rows);
    oc_free(tp->slot);
    oc_free(tp->pos);
    oc_free(tp->x);
    oc_free(tp->send_n);
    oc_free(tp->offs);
    oc_free(tp->req);
    oc_free(tp->serve);
    oc_free(tp->reply);
    oc_free(tp->got);
    memset(tp, 0, sizeof(*tp));
}
