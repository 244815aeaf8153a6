/*
 * dist_rows.c — partitioned features for `train --distributed` on the
 * output of `offcore partition`: this rank's part opened and checked (its
 * files, then every rank's run id against the others'), its own feature
 * rows served by a feature store opened over them (the part's rows.npy as a
 * features-only dataset, store ids = local rows; --strategy memory, mmap,
 * direct, static, gnndrive, ginex, diskgnn, helios or outre under this rank's
 * --mem-budget),
 * and, per batch, the
 * input rows of this rank's micro-shards: its own and the ones other ranks
 * ask of it in one gather, those of its --remote-cache copied from it
 * (dist_cache.c), the other ranks' others fetched from their owners in one
 * exchange.
 *
 *   batch b ──► positions my shards read (seeds [lo, hi) down the blocks),
 *                 │ each a row of x (slot[position]), nothing else held
 *                 │ owner[v] == me: own (row, slot of x)
 *                 │ v in my --remote-cache: its row ─► x
 *                 │ else: request (owner, row) grouped by owner
 *                 ▼
 *   MPI_Alltoall (counts) ─► MPI_Alltoallv (row ids) ─► rows asked of me
 *   oc_store_gather_batch(e, b, [rows asked of me..., own rows...], each once)
 *                         ─► own rows ──────────────────────────────► x
 *                         ─► rows asked, in order ─► MPI_Ialltoallv ─► x
 *                                 (started by train_part_fill_start, waited for
 *                                  by train_part_fill_finish: the previous
 *                                  batch's step runs between the two, its x
 *                                  and slots kept aside meanwhile)
 *
 * Every rank takes part in the exchange of every batch (a collective), also
 * when it asks for nothing, so the ranks stay in step; the batches are the
 * same on every rank (same seed, same order), and every strategy gathers
 * the same f32 rows, so the rows a shard reads are the replicated run's and
 * so are the weights.
 *
 * The store is given an access map (struct oc_store_accesses,
 * part_accesses): the rows each batch asks of this part, which every rank
 * can compute alone since every rank samples every batch (and every rank's
 * --remote-cache, whose rows it leaves out); ginex plans its cache over
 * them, diskgnn packs them into its windows' chunks (its planner samples
 * the plan's batches and maps each), gnndrive and helios are fed each batch
 * as them by a feeder of their own (store/feed.c), as are static's
 * hyperbatch groups (--hyperbatch), and static's and helios's pre-sampled
 * hotness and outre's profile count them (each rank caches the part's rows
 * the ranks ask for most). outre's historical embeddings are refused by the
 * trainer (train_shards_check) and its store.
 * Evaluation fetches its rows the same way, off the plan (train_part_fetch).
 *
 * Place in the data flow: train; the trainer fills each batch's rows here
 * instead of taking them from the batch pipeline (the pipeline's store
 * needs the whole feature matrix).
 * Thread-safety: the trainer's thread only (MPI is used single-threaded),
 * except part_accesses, which the store calls from its threads (ginex's
 * inspector, diskgnn's planner, gnndrive's and helios's feeder): it reads the owner map and
 * uses acc_scan under acc_mu.
 * Ownership: a train_part owns its part, the rows' dataset view, the degree
 * array, the remote-row cache and the exchange buffers (grown, reused: nothing is allocated per
 * batch once they fit); the store is the run's, borrowed per call.
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
    const char *strategy = train_strategy_name(o);
    int rc;
    if (oc_train_opts_get(o, "hyperbatch", 0) != 0 && strcmp(strategy, "static") != 0)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "--hyperbatch on a partitioned dataset with --strategy %s: its groups are "
                      "filled from the batches the batch pipeline samples, and a partitioned run "
                      "has none (static's are filled from the access map by its own feeder)",
                      strategy);
    if (o->plan_dir && o->batching != OC_TRAIN_BATCHING_PARTITION)
        return OC_ERR(err, OC_ERR_ARG,
                      "--plan-dir on a partitioned dataset: a rank's plan files (diskgnn's "
                      "windows) go under its own part, PART/plan (ginex keeps its superbatches "
                      "in RAM); leave it out");
    if (o->reuse_samples || o->topology_disk)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "%s on a partitioned dataset: not in this version",
                      o->reuse_samples ? "--reuse-samples" : "--topology-disk");
    rc = oc_plan_part_open(dir, oc_dist_rank(), oc_dist_size(), &tp->part, err);
    tp->cache.bytes = o->remote_cache_bytes;
    if (rc == OC_OK && tp->cache.bytes && tp->cache.bytes < tp->part.feat_dim * sizeof(float))
        rc = OC_ERR(err, OC_ERR_ARG,
                    "--remote-cache %" PRIu64 " bytes holds no row: a row of %s is %" PRIu64
                    " bytes (f32)",
                    tp->cache.bytes, tp->part.rows, (uint64_t)tp->part.feat_dim * sizeof(float));
    if (rc == OC_OK)
        rc = check_run_ids(tp, err);
    if (rc == OC_OK)
        rc = oc_dataset_open_features(tp->part.dir, tp->part.rows, &tp->rows_ds, err);
    if (rc) {
        train_part_close(tp);
        return rc;
    }
    tp->on = 1;
    tp->m = o->micro_shards > 1 ? o->micro_shards : 1;
    oc_log(OC_LOG_INFO,
           "partition: rank %u holds part %u of %u (run %s): %" PRIu64 " of %" PRIu64
           " nodes' rows, served by --strategy %s",
           oc_dist_rank(), tp->part.part, tp->part.n_parts, tp->part.run_id, tp->part.n_local,
           tp->part.n_nodes, strategy);
    return OC_OK;
}

/*
 * sc->pos[0 .. *n): the batch positions the shards of seeds [lo, hi) read, in
 * the order shard_cut finds them; sc->slot[p] = the index of position p among
 * them (its row of tp->x), UINT32_MAX for a position they do not read.
 */
static int reach(struct train_part_scan *sc, const struct oc_sample_batch *b, uint64_t lo,
                 uint64_t hi, uint64_t *n_out, struct oc_err *err)
{
    int rc;
    if ((rc = train_grow(&sc->slot, &sc->cap_slot, b->n_input, sizeof(uint32_t),
                         "partition: batch rows", err)) ||
        (rc = train_grow(&sc->pos, &sc->cap_pos, b->n_input, sizeof(uint32_t),
                         "partition: batch rows", err)))
        return rc;
    memset(sc->slot, 0xff, b->n_input * sizeof(uint32_t));
    uint64_t n = 0;
    for (uint64_t k = lo; k < hi; k++) {
        sc->slot[k] = (uint32_t)n;
        sc->pos[n++] = (uint32_t)k;
    }
    for (uint32_t l = b->n_layers; l-- > 0;) {
        const struct oc_sample_block *bl = &b->blocks[l];
        uint64_t n_dst = n;
        for (uint64_t d = 0; d < n_dst; d++)
            for (uint64_t k = bl->indptr[sc->pos[d]]; k < bl->indptr[sc->pos[d] + 1]; k++) {
                uint32_t src = bl->indices[k];
                if (sc->slot[src] == UINT32_MAX) {
                    sc->slot[src] = (uint32_t)n;
                    sc->pos[n++] = src;
                }
            }
    }
    *n_out = n;
    return OC_OK;
}

/*
 * The local rows of one gather, each once, in first-asked order, into *ids
 * (*cap entries, grown; *n of them): the n_a rows of a, then the n_b of b
 * (train_part_fill_start: the rows other ranks asked of this one, then its own);
 * sc->idx[i] = the index in *ids of the i-th row asked. sc->where is left
 * all UINT32_MAX, as it was found.
 */
static int unique_rows(const struct train_part *tp, struct train_part_scan *sc, const uint32_t *a,
                       uint64_t n_a, const uint32_t *b, uint64_t n_b, uint64_t **ids, uint64_t *cap,
                       uint64_t *n, struct oc_err *err)
{
    int rc;
    *n = 0;
    if ((rc = train_grow(&sc->idx, &sc->cap_idx, n_a + n_b, sizeof(uint32_t),
                         "partition: gathered rows", err)) ||
        (rc = train_grow(ids, cap, n_a + n_b, sizeof(uint64_t), "partition: gathered rows", err)))
        return rc;
    uint64_t k = 0;
    for (uint64_t i = 0; i < n_a + n_b; i++) {
        uint32_t row = i < n_a ? a[i] : b[i - n_a];
        if (row >= tp->part.n_local) {
            rc = OC_ERR(err, OC_ERR_FORMAT,
                        "%s: another rank asked for row %u of this part, which has %" PRIu64
                        " rows: the ranks' owner maps disagree",
                        tp->part.dir, row, tp->part.n_local);
            break;
        }
        if (sc->where[row] == UINT32_MAX) {
            sc->where[row] = (uint32_t)k;
            (*ids)[k++] = row;
        }
        sc->idx[i] = sc->where[row];
    }
    for (uint64_t j = 0; j < k; j++)
        sc->where[(*ids)[j]] = UINT32_MAX;
    *n = k;
    return rc;
}

/* Seeds [lo, hi) of a batch of n_seeds that rank r's micro-shards take. */
static void rank_seeds(const struct train_part *tp, uint64_t n_seeds, uint32_t r, uint64_t *lo,
                       uint64_t *hi)
{
    uint64_t first, last, ignored;
    train_shard_range(tp->m, tp->part.n_parts, r, &first, &last);
    train_shard_range(n_seeds, tp->m, (uint32_t)first, lo, &ignored);
    train_shard_range(n_seeds, tp->m, (uint32_t)(last - 1), &ignored, hi);
}

/*
 * The access map (struct oc_store_accesses): the rows train_part_fill_start will
 * gather for batch b, found as every rank finds its requests (each rank
 * samples every batch): the rows of this part that rank r's shards read, for
 * the other ranks in rank order (the order their requests arrive in), then
 * for this one, each row once.
 */
static int part_accesses(void *ctx, const struct oc_sample_batch *b, uint64_t **ids, uint64_t *cap,
                         uint64_t *n, struct oc_err *err)
{
    struct train_part *tp = ctx;
    struct train_part_scan *sc = &tp->acc_scan;
    struct oc_err local;
    if (!err)
        err = &local;
    const uint32_t n_ranks = tp->part.n_parts, me = tp->part.part, *owner = tp->part.owner;
    int rc = OC_OK;
    uint64_t n_rows = 0;
    pthread_mutex_lock(&tp->acc_mu);
    for (uint32_t k = 0; rc == OC_OK && k < n_ranks; k++) {
        uint32_t r = k + 1 < n_ranks ? (k < me ? k : k + 1) : me; /* the others, then me */
        uint64_t lo, hi, n_pos = 0;
        rank_seeds(tp, b->n_seeds, r, &lo, &hi);
        if ((rc = reach(sc, b, lo, hi, &n_pos, err)) ||
            (rc = train_grow(&sc->rows, &sc->cap_rows, n_rows + n_pos, sizeof(uint32_t),
                             "partition: access map", err)))
            break;
        for (uint64_t i = 0; i < n_pos; i++) {
            uint64_t v = b->input_ids[sc->pos[i]];
            /* what r caches (--remote-cache) it does not ask for */
            if (owner[2 * v] == me && (r == me || !train_part_hot(tp, r, owner[2 * v + 1])))
                sc->rows[n_rows++] = owner[2 * v + 1];
        }
    }
    if (rc == OC_OK)
        rc = unique_rows(tp, sc, sc->rows, n_rows, NULL, 0, ids, cap, n, err);
    pthread_mutex_unlock(&tp->acc_mu);
    return rc;
}

int train_part_graph(struct train_part *tp, const struct train_data *d, struct oc_err *err)
{
    const struct oc_plan_part *p = &tp->part;
    if (d->n_nodes != p->n_nodes)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: %" PRIu64 " nodes, its part.json says %" PRIu64,
                      p->dir, d->n_nodes, p->n_nodes);
    uint64_t *deg = oc_calloc(p->n_local + 1, sizeof(uint64_t), "partition: local in-degrees", err);
    if (!deg)
        return err->status;
    tp->deg_indptr = deg;
    /* deg[row + 1] = the in-degree of the node at local row `row`, then prefix sums */
    const uint64_t *indptr = d->graph.indptr;
    for (uint64_t v = 0; v < p->n_nodes; v++)
        if (p->owner[2 * v] == p->part) {
            OC_ASSERT(p->owner[2 * v + 1] < p->n_local);
            deg[p->owner[2 * v + 1] + 1] = indptr[v + 1] - indptr[v];
        }
    for (uint64_t i = 0; i < p->n_local; i++)
        deg[i + 1] += deg[i];
    tp->graph = (struct oc_graph){p->n_local, deg, NULL, NULL, NULL};
    struct train_part_scan *scans[2] = {&tp->scan, &tp->acc_scan};
    for (int k = 0; k < 2; k++) {
        scans[k]->where = oc_alloc((p->n_local ? p->n_local : 1) * sizeof(uint32_t),
                                   "partition: gathered rows", err);
        if (!scans[k]->where)
            return err->status;
        memset(scans[k]->where, 0xff, p->n_local * sizeof(uint32_t));
    }
    if (pthread_mutex_init(&tp->acc_mu, NULL) != 0)
        return OC_ERR(err, OC_ERR_NOMEM, "partition: cannot make the access map's lock");
    tp->acc_mu_made = 1;
    tp->accesses = (struct oc_store_accesses){&d->graph, part_accesses, tp};
    return train_part_cache_plan(tp, &d->graph, err);
}

/*
 * The first half of train_part_rows, a collective every rank joins with its
 * own nodes (n may be 0): rows in the cache (--remote-cache) copied from
 * it, the others' owners asked for the rest, the rows asked of this rank
 * and its own gathered in one gather of store, each once, its own copied
 * into x, and the replies' exchange started (rows_finish waits for it and
 * puts the fetched rows into x).
 */
static int rows_start(struct train_part *tp, struct oc_store *store, const uint64_t *e_b,
                      const uint64_t *ids, const uint32_t *sel, uint64_t n, uint64_t dim, float *x,
                      struct oc_train_epoch_stats *st, struct oc_err *err)
{
    OC_ASSERT(!tp->flight.on);
    const uint32_t n_ranks = tp->part.n_parts, me = tp->part.part;
    struct train_part_scan *sc = &tp->scan;
    int rc;
    if ((rc = train_grow(&tp->send_n, &tp->cap_ranks, 2 * (uint64_t)n_ranks, sizeof(uint64_t),
                         "partition: exchange counts", err)) ||
        (rc = train_grow(&tp->offs, &tp->cap_offs, n_ranks, sizeof(uint64_t), "partition: requests",
                         err)))
        return rc;
    uint64_t *send_n = tp->send_n, *recv_n = tp->send_n + n_ranks, *off = tp->offs;
    memset(send_n, 0, n_ranks * sizeof(uint64_t));
    const uint32_t *owner = tp->part.owner;
    /* each position's source, found once: its owner, or n_ranks for a row of the cache (copied
       into x here); sc->idx is free until unique_rows below */
    if ((rc =
             train_grow(&sc->idx, &sc->cap_idx, n, sizeof(uint32_t), "partition: batch rows", err)))
        return rc;
    uint32_t *src = sc->idx;
    uint64_t n_own = 0, n_hit = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = ids[sel ? sel[i] : i];
        uint32_t k = owner[2 * v];
        const float *hit = k == me ? NULL : train_part_cached(tp, v);
        if (k == me) {
            n_own++;
        } else if (hit) {
            memcpy(x + i * dim, hit, dim * sizeof(float));
            k = n_ranks;
            n_hit++;
        } else {
            send_n[k]++;
        }
        src[i] = k;
    }
    const uint64_t n_req = n - n_own - n_hit;
    if ((rc = train_grow(&tp->req, &tp->cap_req, 2 * n_req, sizeof(uint32_t), "partition: requests",
                         err)) ||
        (rc = train_grow(&tp->own, &tp->cap_own, 2 * n_own, sizeof(uint32_t), "partition: own rows",
                         err)))
        return rc;
    uint32_t *req_slot = tp->req + n_req; /* row of x of each request, in request order */
    uint32_t *own_row = tp->own + n_own;  /* local row of each own position (tp->own: its slot) */
    /* requests grouped by owner, in position order within an owner */
    for (uint64_t r = 0, s = 0; r < n_ranks; s += send_n[r], r++)
        off[r] = s;
    for (uint64_t i = 0, j = 0; i < n; i++) {
        uint32_t k = src[i];
        if (k == n_ranks) /* from the cache, copied above */
            continue;
        uint32_t row = owner[2 * ids[sel ? sel[i] : i] + 1];
        if (k == me) {
            tp->own[j] = (uint32_t)i;
            own_row[j++] = row;
        } else {
            tp->req[off[k]] = row;
            req_slot[off[k]++] = (uint32_t)i;
        }
    }
    if ((rc = oc_dist_alltoall_u64(send_n, recv_n, err)))
        return rc;
    uint64_t n_serve = 0, n_ids = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        n_serve += recv_n[r];
    /* one gather, each row once: the rows asked of this rank (in the order their requests
       arrived), then its own (the order part_accesses predicts) */
    if ((rc = train_grow(&tp->serve, &tp->cap_serve, n_serve, sizeof(uint32_t),
                         "partition: requests", err)) ||
        (rc = oc_dist_alltoallv(tp->req, send_n, tp->serve, recv_n, sizeof(uint32_t),
                                "the row requests", err)) ||
        (rc = unique_rows(tp, sc, tp->serve, n_serve, own_row, n_own, &tp->ids, &tp->cap_ids,
                          &n_ids, err)) ||
        (rc = train_grow(&tp->rows, &tp->cap_rows, n_ids * dim, sizeof(float),
                         "partition: gathered rows", err)) ||
        (rc = e_b ? oc_store_gather_batch(store, e_b[0], e_b[1], tp->ids, n_ids, tp->rows, err)
                  : oc_store_gather(store, tp->ids, n_ids, tp->rows, err)) ||
        (rc = train_grow(&tp->reply, &tp->cap_reply, n_serve * dim, sizeof(float),
                         "partition: replies", err)))
        return rc;
    for (uint64_t i = 0; i < n_serve; i++)
        memcpy(tp->reply + i * dim, tp->rows + (uint64_t)sc->idx[i] * dim, dim * sizeof(float));
    for (uint64_t j = 0; j < n_own; j++)
        memcpy(x + (uint64_t)tp->own[j] * dim, tp->rows + (uint64_t)sc->idx[n_serve + j] * dim,
               dim * sizeof(float));
    if ((rc = train_grow(&tp->got, &tp->cap_got, n_req * dim, sizeof(float),
                         "partition: fetched rows", err)) ||
        (rc = oc_dist_alltoallv_start(tp->reply, recv_n, tp->got, send_n, dim * sizeof(float),
                                      "the feature rows", err)))
        return rc;
    tp->flight = (struct train_part_flight){1, x, n_req, dim};
    if (st) {
        st->local_rows += n_own;
        st->remote_rows += n_req + n_hit;
        st->remote_cache_hits += n_hit;
        st->remote_bytes += n_req * dim * sizeof(float);
        st->served_rows += n_serve;
    }
    return OC_OK;
}

/* The second half: the replies in, each fetched row into its row of x. */
static int rows_finish(struct train_part *tp, struct oc_err *err)
{
    struct train_part_flight *f = &tp->flight;
    OC_ASSERT(f->on);
    f->on = 0;
    int rc = oc_dist_alltoallv_wait(err);
    if (rc)
        return rc;
    const uint32_t *req_slot = tp->req + f->n_req;
    for (uint64_t i = 0; i < f->n_req; i++)
        memcpy(f->x + (uint64_t)req_slot[i] * f->dim, tp->got + i * f->dim, f->dim * sizeof(float));
    return OC_OK;
}

int train_part_rows(struct train_part *tp, struct oc_store *store, const uint64_t *e_b,
                    const uint64_t *ids, const uint32_t *sel, uint64_t n, uint64_t dim, float *x,
                    struct oc_train_epoch_stats *st, struct oc_err *err)
{
    int rc = rows_start(tp, store, e_b, ids, sel, n, dim, x, st, err);
    return rc ? rc : rows_finish(tp, err);
}

/* Swaps two grown buffers (and their capacities). */
static void swap_buf(void *a, uint64_t *cap_a, void *b, uint64_t *cap_b)
{
    void *t = *(void **)a;
    *(void **)a = *(void **)b;
    *(void **)b = t;
    uint64_t c = *cap_a;
    *cap_a = *cap_b;
    *cap_b = c;
}

int train_part_fill_start(struct train_part *tp, struct oc_store *store, uint64_t e, uint64_t batch,
                          const struct oc_sample_batch *b, uint64_t lo, uint64_t hi, uint64_t dim,
                          struct oc_train_epoch_stats *st, struct oc_err *err)
{
    uint64_t n_pos = 0, e_b[2] = {e, batch};
    int rc;
    /* the batch filled before (its step may run until this one finishes) keeps its x and slots */
    swap_buf(&tp->x, &tp->cap_x, &tp->x_held, &tp->cap_x_held);
    swap_buf(&tp->scan.slot, &tp->scan.cap_slot, &tp->slot_held, &tp->cap_slot_held);
    if ((rc = reach(&tp->scan, b, lo, hi, &n_pos, err)) ||
        (rc = train_grow(&tp->x, &tp->cap_x, n_pos * dim, sizeof(float), "partition: batch rows",
                         err)))
        return rc;
    return rows_start(tp, store, e_b, b->input_ids, tp->scan.pos, n_pos, dim, tp->x, st, err);
}

int train_part_fill_finish(struct train_part *tp, float **x, const uint32_t **slot,
                           struct oc_err *err)
{
    int rc = rows_finish(tp, err);
    *x = rc ? NULL : tp->x;
    *slot = rc ? NULL : tp->scan.slot;
    return rc;
}

int train_part_fetch(struct train_part *tp, struct oc_store *store, const uint64_t *ids, uint64_t n,
                     uint64_t dim, float *out, struct oc_err *err)
{
    for (uint64_t i = 0; i < n; i++)
        if (ids[i] >= tp->part.n_nodes)
            return OC_ERR(err, OC_ERR_ARG,
                          "partition: node %" PRIu64 " at position %" PRIu64
                          " is out of range (%" PRIu64 " nodes)",
                          ids[i], i, tp->part.n_nodes);
    return train_part_rows(tp, store, NULL, ids, NULL, n, dim, out, NULL, err);
}

static void scan_free(struct train_part_scan *sc)
{
    oc_free(sc->slot);
    oc_free(sc->pos);
    oc_free(sc->where);
    oc_free(sc->idx);
    oc_free(sc->rows);
}

void train_part_close(struct train_part *tp)
{
    oc_plan_part_close(&tp->part);
    oc_dataset_free(tp->rows_ds);
    oc_free(tp->deg_indptr);
    scan_free(&tp->scan);
    scan_free(&tp->acc_scan);
    if (tp->acc_mu_made)
        pthread_mutex_destroy(&tp->acc_mu);
    oc_free(tp->x);
    oc_free(tp->x_held);
    oc_free(tp->slot_held);
    oc_free(tp->send_n);
    oc_free(tp->offs);
    oc_free(tp->req);
    oc_free(tp->own);
    oc_free(tp->ids);
    oc_free(tp->rows);
    oc_free(tp->serve);
    /* an exchange still in flight (the run failed between a fill's halves, and the CLI is
       about to abort the group) owns its buffers: MPI may still write them, so they stay */
    if (!tp->flight.on) {
        oc_free(tp->reply);
        oc_free(tp->got);
    }
    train_part_cache_close(&tp->cache);
    memset(tp, 0, sizeof(*tp));
}
