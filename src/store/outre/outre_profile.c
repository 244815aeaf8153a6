/*
 * outre_profile.c — outre's profiling pass and cache split (OUTRE's
 * automatic cache-space management): the first OUTRE_PROFILE_BATCHES
 * batches of the plan are sampled (not trained: the same batches training
 * will sample), counting per node how often it is an input row (feature
 * accesses) and a non-seed source of the last block (embedding candidate),
 * and how many input rows the batches need with and without pruning every
 * candidate (sampled a second time with all of them pruned); the seconds
 * per sampled row and per row read from the feature file are timed. The
 * alpha search then splits the cache budget between embeddings and feature
 * rows to maximise the estimated seconds saved per batch:
 *
 *   pruned(E)  = sum over the E most frequent candidates v of c_v * x_v / (1 + x_v),
 *                x_v = c_v * (staleness - K) / batches: how often v's embedding is
 *                still fresh when v comes back (refreshed whenever it is not)
 *   saved rows = pruned(E) * (rows - rows with all pruned) / candidates
 *   h(F)       = the share of accesses that hit the F hottest rows (pruning taken
 *                to remove rows evenly, so the share stays)
 *   cost       = (rows - saved rows) * (sample s/row + (1 - h(F)) * read s/row)
 *   saving     = the cost without any cache - cost
 *              = rows * h(F) * read s/row + saved rows * (sample s/row + (1 - h(F)) * read s/row)
 *
 * Over other ids (cfg->accesses: a partitioned dataset's part) the batches
 * are sampled on the plan's graph and the feature counts, rows and timed
 * reads are the access map's ids, the rows the store's gathers will ask for;
 * no candidate is counted (they are plan nodes, and such a store keeps no
 * embeddings), so the search gives embeddings nothing.
 *
 * Place in the data flow: store, at open (before the caches are filled).
 * Thread-safety: runs on the opening thread with its own sampler.
 * Ownership: the counts are the profile's (freed by the store at open's end).
 */
#include <inttypes.h>
#include <string.h>

#include "offcore/progress.h"
#include "store/outre/outre_int.h"

/* The prune hook of the second pass: every candidate pruned. */
static int prune_all(void *ctx, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t n,
                     uint64_t n_seeds, uint8_t *mask, struct oc_err *err)
{
    (void)ctx;
    (void)epoch;
    (void)batch;
    (void)ids;
    (void)err;
    memset(mask + n_seeds, 1, (size_t)(n - n_seeds));
    return OC_OK;
}

static void count_up(uint32_t *c, uint64_t v)
{
    if (c[v] != UINT32_MAX)
        c[v]++;
}

/* Times reading up to OUTRE_TIMED_ROWS of ids from the feature file (O_DIRECT). */
static int time_reads(struct oc_store *s, struct outre_store *o, const uint64_t *ids, uint64_t n,
                      double *s_per_row, struct oc_err *err)
{
    if (n > OUTRE_TIMED_ROWS)
        n = OUTRE_TIMED_ROWS;
    float *out = oc_alloc((n ? n : 1) * s->feat_dim * sizeof(float), "store outre: profiling", err);
    if (!out)
        return err->status;
    struct oc_store_stats keep = s->stats; /* profiling reads are not the run's */
    double t0 = oc_now_s();
    int rc = OC_OK;
    for (uint64_t i = 0; i < n && rc == OC_OK; i++)
        rc = store_disk_queue(s, &o->disk, ids[i], out + i * s->feat_dim, err);
    if (rc == OC_OK)
        rc = store_disk_run(s, &o->disk, err);
    else
        store_disk_discard(&o->disk);
    *s_per_row = n ? (oc_now_s() - t0) / (double)n : 0.0;
    s->stats = keep;
    oc_free(out);
    return rc;
}

/*
 * The ids batch b gathers from the store: its input ids, or over other ids
 * (cfg->accesses: a partitioned dataset's part) the access map's, into *acc.
 */
static int batch_rows(const struct oc_store *s, const struct oc_store_config *cfg,
                      const struct oc_sample_batch *b, uint64_t **acc, uint64_t *cap_acc,
                      const uint64_t **ids, uint64_t *n, struct oc_err *err)
{
    *ids = b->input_ids;
    *n = b->n_input;
    if (!cfg->accesses)
        return OC_OK;
    int rc = cfg->accesses->of(cfg->accesses->ctx, b, acc, cap_acc, n, err);
    if (rc)
        return rc;
    for (uint64_t k = 0; k < *n; k++)
        if ((*acc)[k] >= s->n_nodes)
            return OC_ERR(err, OC_ERR_ARG,
                          "the access map gives id %" PRIu64 " for a store of %" PRIu64 " rows",
                          (*acc)[k], s->n_nodes);
    *ids = *acc;
    return OC_OK;
}

int outre_profile_run(struct oc_store *s, struct outre_store *o, const struct oc_store_config *cfg,
                      struct oc_err *err)
{
    struct outre_profile *p = &o->prof;
    struct oc_sample_iter it;
    uint64_t *acc = NULL, cap_acc = 0;
    int rc;
    p->feat_count = oc_calloc(s->n_nodes, sizeof(uint32_t), "store outre: profile counts", err);
    p->cand_count = oc_calloc(s->n_nodes, sizeof(uint32_t), "store outre: profile counts", err);
    if (!p->feat_count || !p->cand_count)
        return err->status;
    if (!cfg->graph || !cfg->sample_opts || !cfg->train_ids || !cfg->n_train || !cfg->batch_size)
        return OC_OK; /* no plan (tests, tools): nothing to profile, every count 0 */
    const uint32_t L = cfg->sample_opts->n_layers;
    if ((rc = oc_sample_iter_open(&it, store_plan_graph(cfg), cfg->sample_opts, cfg->pool,
                                  cfg->train_ids, cfg->n_train, cfg->batch_size, err)))
        goto out;
    uint64_t e = cfg->first_epoch; /* outre refuses --reuse-samples (its no_reuse_samples) */
    const struct oc_sample_batch *b = &it.batch;
    p->n_batches = it.n_batches < OUTRE_PROFILE_BATCHES ? it.n_batches : OUTRE_PROFILE_BATCHES;
    oc_sample_iter_seek(&it, e, 0);
    double t0 = oc_now_s();
    for (uint64_t bi = 0; bi < p->n_batches; bi++) {
        const uint64_t *ids;
        uint64_t n;
        if ((rc = oc_sample_iter_next(&it, err)) < 0 ||
            (rc = batch_rows(s, cfg, b, &acc, &cap_acc, &ids, &n, err)))
            goto out;
        p->rows += n;
        for (uint64_t k = 0; k < n; k++)
            count_up(p->feat_count, ids[k]);
        /* candidates are plan nodes: a store over other ids keeps no embeddings (outre_open) */
        uint64_t last_src = b->blocks[L - 1].n_src;
        for (uint64_t k = b->n_seeds; L >= 2 && !cfg->accesses && k < last_src; k++)
            count_up(p->cand_count, b->input_ids[k]);
        if (L >= 2 && !cfg->accesses)
            p->candidates += last_src - b->n_seeds;
        if (last_src > p->max_last_src)
            p->max_last_src = last_src;
        if (bi == 0 && (rc = time_reads(s, o, ids, n, &p->read_s_per_row, err)))
            goto out;
    }
    p->sample_s_per_row = p->rows ? (oc_now_s() - t0) / (double)p->rows : 0.0;
    p->rows_pruned_all = p->rows;
    if (L >= 2 && !cfg->accesses) { /* the same batches with every candidate pruned */
        p->rows_pruned_all = 0;
        oc_sample_sampler_on_prune(it.sampler, prune_all, NULL);
        oc_sample_iter_seek(&it, e, 0);
        for (uint64_t bi = 0; bi < p->n_batches; bi++) {
            if ((rc = oc_sample_iter_next(&it, err)) < 0)
                goto out;
            p->rows_pruned_all += b->n_input;
        }
    }
    rc = OC_OK;
out:
    if (rc)
        oc_err_prefix(err, "store outre: profiling");
    oc_free(acc);
    oc_sample_iter_close(&it);
    return rc;
}

int outre_top_ids(const uint32_t *count, uint64_t n, uint64_t k, uint64_t **out, struct oc_err *err)
{
    *out = NULL;
    /* the threshold: the largest t with at least k ids counted >= t (counts > 0 only) */
    uint64_t hist[64] = {0}; /* by bit length, then refined by a scan */
    uint64_t positive = 0;
    for (uint64_t v = 0; v < n; v++)
        if (count[v]) {
            positive++;
            hist[63 - __builtin_clzll(count[v])]++;
        }
    if (k > positive)
        k = positive;
    *out = oc_alloc((k ? k : 1) * sizeof(uint64_t), "store outre: chosen nodes", err);
    if (!*out)
        return err->status;
    if (k == 0)
        return OC_OK;
    /* bit-length bucket holding the k-th largest, then the exact threshold inside it */
    uint64_t above = 0;
    int bit = 63;
    while (above + hist[bit] < k)
        above += hist[bit--];
    uint32_t lo = (uint32_t)1 << bit, hi = bit == 31 ? UINT32_MAX : ((uint32_t)2 << bit) - 1;
    while (lo < hi) { /* largest t in [lo, hi] with #{count >= t} >= k */
        uint32_t mid = lo + (hi - lo + 1) / 2;
        uint64_t c = 0;
        for (uint64_t v = 0; v < n; v++)
            c += count[v] >= mid;
        if (c >= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint64_t strictly = 0;
    for (uint64_t v = 0; v < n; v++)
        strictly += count[v] > lo;
    uint64_t ties = k - strictly, got = 0;
    for (uint64_t v = 0; v < n && got < k; v++) { /* ascending ids; ties to the lower id */
        if (count[v] > lo) {
            (*out)[got++] = v;
        } else if (count[v] == lo && ties > 0) {
            (*out)[got++] = v;
            ties--;
        }
    }
    return OC_OK;
}

/* Sum of the k largest counts, from a histogram of counts (desc). */
static double top_sum(const uint64_t *hist, uint64_t n_hist, uint64_t k)
{
    double sum = 0;
    for (uint64_t c = n_hist; c-- > 1 && k > 0;) {
        uint64_t take = hist[c] < k ? hist[c] : k;
        sum += (double)take * (double)c;
        k -= take;
    }
    return sum;
}

/* The most embedding slots (of at most n_pos) whose side fits in bytes. */
static uint64_t emb_fit(const struct oc_store *s, const struct outre_profile *p, uint64_t dim,
                        uint64_t n_pos, uint64_t bytes)
{
    uint64_t lo = 0, hi = n_pos;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (outre_emb_bytes(s, p, mid, dim) <= bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int outre_alpha_search(const struct oc_store *s, const struct outre_store *o, uint64_t avail,
                       uint64_t dim, struct outre_profile *p, struct oc_err *err)
{
    /* histograms of the counts, capped (a node seen more often counts as CAP) */
    enum { CAP = 4096 };
    uint64_t *fh = oc_calloc(2 * (CAP + 1), sizeof(uint64_t), "store outre: alpha search", err);
    if (!fh)
        return err->status;
    uint64_t *ch = fh + CAP + 1;
    for (uint64_t v = 0; v < s->n_nodes; v++) {
        fh[p->feat_count[v] < CAP ? p->feat_count[v] : CAP]++;
        ch[p->cand_count[v] < CAP ? p->cand_count[v] : CAP]++;
    }
    uint64_t n_pos = s->n_nodes - ch[0]; /* candidates seen: the only ones worth a slot */
    double nb = p->n_batches ? (double)p->n_batches : 1.0;
    double window = o->staleness > OUTRE_SLOTS ? (double)(o->staleness - OUTRE_SLOTS) : 0.0;
    double per_cand =
        p->candidates ? (double)(p->rows - p->rows_pruned_all) / (double)p->candidates : 0.0;
    double rows = p->rows ? (double)p->rows : 1.0; /* per profiled pass */
    p->est_saving_s = -1;
    for (uint32_t step = 0; step <= OUTRE_ALPHA_STEPS; step++) {
        double alpha = o->prunes ? (double)step / OUTRE_ALPHA_STEPS : 0.0;
        uint64_t E = emb_fit(s, p, dim, n_pos, (uint64_t)(alpha * (double)avail));
        uint64_t emb_bytes = outre_emb_bytes(s, p, E, dim), F;
        int use_table;
        store_cache_plan(s, avail - emb_bytes, sizeof(uint64_t), &F, &use_table);
        /* pruned candidates per profiled pass among the E most frequent: a node met x
           times in a staleness window is, at steady state, computed afresh 1 / admit times
           (until a push is admitted), then pruned x times: a share of x / (x + 1 / admit) */
        double pruned = 0;
        uint64_t left = E;
        for (uint64_t c = CAP + 1; c-- > 1 && left > 0;) {
            uint64_t take = ch[c] < left ? ch[c] : left;
            double x = o->admit * (double)c * window / nb;
            pruned += (double)take * (double)c * x / (1.0 + x);
            left -= take;
        }
        /* cost = rows left x (sample + miss share x read); saving = no cache's cost - it */
        double saved_rows = pruned * per_cand < rows ? pruned * per_cand : rows;
        double hit_share = top_sum(fh, CAP + 1, F) / rows;
        double saving = rows * hit_share * p->read_s_per_row +
                        saved_rows * (p->sample_s_per_row + p->read_s_per_row * (1 - hit_share));
        if (saving > p->est_saving_s + 1e-12) { /* ties: the smaller alpha (exact features) */
            p->est_saving_s = saving;
            p->alpha = avail ? (double)emb_bytes / (double)avail : 0.0;
            p->emb_slots = E;
            p->feat_rows = F;
            p->est_pruned = pruned / nb;
        }
        if (!o->prunes)
            break;
    }
    p->est_saving_s /= nb;
    oc_free(fh);
    return OC_OK;
}
