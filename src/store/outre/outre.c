/*
 * outre.c — the `outre` strategy (OUTRE: out-of-core de-redundancy GNN
 * training, VLDB 2024; thesis section IV): a RAM cache of feature rows
 * served like `static`'s (store/cache.c: hits copied, misses read with
 * O_DIRECT through the io_uring batch reader), beside a historical
 * embedding cache (outre_emb.c) that prunes sampling: a last-block source
 * whose embedding at the input of the last layer was computed fewer than
 * `--staleness` iterations ago is not expanded, and the trainer uses the
 * cached embedding. Which nodes get an embedding slot and which rows a
 * feature slot, and how the budget is split between them, come from a
 * profiling pass over the plan's first batches (outre_profile.c).
 *
 * Pruning changes what is computed, so outre does not train to `memory`'s
 * weights, except with --staleness 0, where it is a feature cache only and
 * bit-identical. Its batches come from the batch pipeline (with
 * `--batching partition`, OUTRE's partition batches); it writes no plan
 * files of its own.
 *
 * Over other ids (oc_store_config.accesses: a partitioned dataset's part,
 * train/dist_rows.c) it is the feature cache alone: the profile counts the
 * rows the access map gives for each profiled batch (outre_profile.c), so
 * the cache holds the part's rows the ranks ask for most, and gathers are
 * served by local row. Historical embeddings are refused there (they key on
 * the plan's nodes and need the whole batch's gradients, which a part's
 * store never sees): --staleness 0.
 *
 * Place in the data flow: store; see outre_int.h for the per-batch timeline.
 * Thread-safety: gathers (fetch stage or evaluation, never at once) own the
 * feature cache's reader; embeddings as outre_int.h says.
 * Ownership: the store's.
 *
 * Memory under a budget: the reader (bounce buffer, STORE_ROW_SCRATCH_BYTES
 * per batch row) comes off first, then the profiling counts (8 bytes per
 * node, freed before the caches are filled) must fit, then the rest is split:
 * the embedding side (a 4-byte table per node, 8 + 4 x dim bytes per slot,
 * and the records of the batches in flight: up to the profile's most
 * last-block sources + a quarter, 16 + 4 x dim bytes each) and feature rows
 * (row bytes + lookup, as store/cache.c lays them out). The feature rows
 * give memory back to requests past the budget and are taken back
 * (store/cache_yield.c, as static's); the embeddings do not.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "store/outre/outre_int.h"

/* The feature rows to cache: the profile's hottest, then by in-degree; ascending. */
static int feature_ids(struct oc_store *s, struct outre_store *o, const struct oc_store_config *cfg,
                       uint64_t n, uint64_t **out, struct oc_err *err)
{
    const uint32_t *count = o->prof.feat_count;
    uint64_t positive = 0;
    for (uint64_t v = 0; v < s->n_nodes; v++)
        positive += count[v] != 0;
    if (positive >= n)
        return outre_top_ids(count, s->n_nodes, n, out, err);
    /* every row the profile saw, then the rest by in-degree (store/hot.c), in id order */
    uint64_t *deg = NULL, want = n + positive < s->n_nodes ? n + positive : s->n_nodes;
    uint8_t *take = oc_calloc(s->n_nodes, 1, "store outre: cached rows", err);
    int rc =
        take ? store_hot_select(s, cfg, OC_STORE_HOTNESS_DEGREE, want, 1, &deg, err) : err->status;
    if (rc == OC_OK &&
        !(*out = oc_alloc((n ? n : 1) * sizeof(uint64_t), "store outre: cached rows", err)))
        rc = err->status;
    if (rc == OC_OK) {
        uint64_t m = positive;
        for (uint64_t v = 0; v < s->n_nodes; v++)
            take[v] = count[v] != 0;
        for (uint64_t k = 0; k < want && m < n; k++)
            if (!take[deg[k]]) {
                take[deg[k]] = 1;
                m++;
            }
        m = 0;
        for (uint64_t v = 0; v < s->n_nodes && m < n; v++)
            if (take[v])
                (*out)[m++] = v;
    }
    oc_free(take);
    oc_free(deg);
    return rc;
}

static int outre_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct outre_store_opts op;
    store_opts_read(&oc_store_outre, cfg, &op);
    if (!(op.admit >= 0.0 && op.admit <= 1.0) || !(op.embed_nodes >= 0.0 && op.embed_nodes <= 1.0))
        return OC_ERR(err, OC_ERR_ARG,
                      "store outre: --admit %g and --embed-nodes %g must be from 0 to 1", op.admit,
                      op.embed_nodes);
    if (op.embed_nodes > 0 &&
        (cfg->embed_dim == 0 || !cfg->sample_opts || cfg->sample_opts->n_layers < 2))
        return OC_ERR(err, OC_ERR_ARG,
                      "store outre: --embed-nodes sizes historical embeddings, which need 2 or "
                      "more layers and a trainer that uses them");
    if (op.embed_nodes > 0 && op.staleness == 0)
        return OC_ERR(err, OC_ERR_ARG,
                      "store outre: --embed-nodes sizes an embedding cache that --staleness 0 "
                      "turns off");
    if (cfg->accesses && op.staleness > 0 && cfg->embed_dim > 0 && cfg->sample_opts &&
        cfg->sample_opts->n_layers >= 2)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store outre: --staleness %u keeps historical embeddings of the plan's "
                      "nodes for whole batches, which a store over other ids (a partitioned "
                      "dataset's part) neither holds nor sees; give --staleness 0 (a feature "
                      "cache over the part's rows)",
                      op.staleness);
    struct outre_store *o = oc_calloc(1, sizeof(*o), "store outre", err);
    if (!o)
        return err->status;
    s->impl = o;
    o->staleness = op.staleness;
    o->admit = op.admit;
    o->n_batches = s->n_plan_batches;
    uint32_t L = cfg->sample_opts ? cfg->sample_opts->n_layers : 0;
    o->prunes = o->staleness > 0 && cfg->embed_dim > 0 && L >= 2 && o->n_batches > 0 &&
                cfg->graph && cfg->train_ids;
    /* pruning keeps exactly K batches in flight (outre_int.h: why that is deterministic) */
    s->caps.prunes = o->prunes;
    s->caps.lookahead = o->prunes ? OUTRE_SLOTS : 0;
    int rc = store_yield_init(&o->yield, &o->cache, s->row_bytes, "store outre", err);
    if (rc)
        return rc;
    o->yield_ready = 1;
    if ((rc = store_disk_open(s, 1, &o->disk, err)))
        return rc;
    uint64_t rows = store_budget_rows(s, cfg);
    uint64_t fixed = sizeof(*o) + STORE_DISK_BOUNCE_BYTES + rows * STORE_ROW_SCRATCH_BYTES;
    uint64_t counts = 2 * s->n_nodes * sizeof(uint32_t);
    char a[32], b[32], c[32];
    if (cfg->mem_bytes && cfg->mem_bytes < fixed + counts)
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store outre: needs at least %s (a %u-byte bounce buffer, request arrays "
                      "for %" PRIu64 " rows of one batch and %s of profiling counts) before "
                      "caching anything; the store's budget is %s",
                      oc_format_size(fixed + counts, a, sizeof(a)), STORE_DISK_BOUNCE_BYTES, rows,
                      oc_format_size(counts, b, sizeof(b)),
                      oc_format_size(cfg->mem_bytes, c, sizeof(c)));
    if ((rc = outre_profile_run(s, o, cfg, err)))
        return rc;
    struct outre_profile *p = &o->prof;
    uint64_t dim = o->prunes ? cfg->embed_dim : 0;
    uint64_t n_seen = 0; /* candidates the profile saw: the only nodes worth a slot */
    for (uint64_t v = 0; v < s->n_nodes; v++)
        n_seen += p->cand_count[v] != 0;
    if (o->prunes && op.embed_nodes > 0) { /* the embedding side fixed: the rest is rows */
        uint64_t want = (uint64_t)(op.embed_nodes * (double)s->n_nodes + 0.5);
        p->emb_slots = want < n_seen ? want : n_seen;
        uint64_t emb_bytes = outre_emb_bytes(s, p, p->emb_slots, dim);
        if (cfg->mem_bytes && emb_bytes > cfg->mem_bytes - fixed)
            return OC_ERR(err, OC_ERR_BUDGET,
                          "store outre: --embed-nodes %g asks for %" PRIu64
                          " embeddings (%s), more than the %s the store's budget leaves after "
                          "its fixed part",
                          op.embed_nodes, p->emb_slots, oc_format_size(emb_bytes, a, sizeof(a)),
                          oc_format_size(cfg->mem_bytes - fixed, b, sizeof(b)));
        p->alpha = cfg->mem_bytes ? (double)emb_bytes / (double)(cfg->mem_bytes - fixed) : -1;
        p->fixed_split = 1;
    } else if (cfg->mem_bytes) {
        /* the counts are freed before the caches are filled: their room is the caches' */
        if ((rc = outre_alpha_search(s, o, cfg->mem_bytes - fixed, dim, p, err)))
            return rc;
    } else { /* no budget: every row, and a slot for every candidate seen */
        p->feat_rows = s->n_nodes;
        p->emb_slots = o->prunes ? n_seen : 0;
        p->alpha = o->prunes ? -1 : 0; /* logged as "no budget" */
    }
    p->emb_slots = p->emb_slots < n_seen ? p->emb_slots : n_seen;
    uint64_t *emb_ids = NULL, *feat = NULL;
    if ((rc = outre_top_ids(p->cand_count, s->n_nodes, p->emb_slots, &emb_ids, err)))
        return rc;
    /* the feature share, as the cache planner lays it out (table or sorted ids) */
    uint64_t n_rows = s->n_nodes;
    int use_table = s->n_nodes < STORE_NO_SLOT;
    if (cfg->mem_bytes) {
        uint64_t emb_bytes = outre_emb_bytes(s, p, p->emb_slots, dim);
        uint64_t left = cfg->mem_bytes - fixed > emb_bytes ? cfg->mem_bytes - fixed - emb_bytes : 0;
        store_cache_plan(s, left, sizeof(uint64_t), &n_rows, &use_table);
    }
    rc = feature_ids(s, o, cfg, n_rows, &feat, err);
    oc_free(p->feat_count);
    p->feat_count = NULL;
    if (rc == OC_OK)
        rc = outre_emb_init(s, o, emb_ids, p->emb_slots, dim, err);
    oc_free(emb_ids);
    oc_free(p->cand_count);
    p->cand_count = NULL;
    if (rc) {
        oc_free(feat);
        return rc;
    }
    p->feat_rows = n_rows;
    int wanted = o->prunes;
    if (p->emb_slots == 0)
        o->prunes = 0; /* the split gave embeddings nothing: a feature cache, exact */
    o->cache.n = 0;
    if (n_rows && (rc = store_cache_fill(s, &o->cache, &o->disk, n_rows, use_table, feat, &o->yield,
                                         "outre", err)))
        return rc;
    if (cfg->mem_bytes && (rc = store_yield_register(&o->yield, err)))
        return rc;
    if (!n_rows)
        oc_free(feat);
    uint64_t emb_bytes = outre_emb_bytes(s, p, p->emb_slots, dim);
    char eb[32], fb[32];
    if (cfg->accesses)
        oc_log(OC_LOG_INFO,
               "store outre: profiled %" PRIu64 " batches over the access map: %" PRIu64
               " of this store's rows asked for; %.2f us sampling and %.2f us reading per row",
               p->n_batches, p->rows, p->sample_s_per_row * 1e6, p->read_s_per_row * 1e6);
    else
        oc_log(OC_LOG_INFO,
               "store outre: profiled %" PRIu64 " batches: %" PRIu64 " input rows, %" PRIu64
               " with every one of %" PRIu64 " last-block candidates pruned; %.2f us sampling "
               "and %.2f us reading per row",
               p->n_batches, p->rows, p->rows_pruned_all, p->candidates, p->sample_s_per_row * 1e6,
               p->read_s_per_row * 1e6);
    if (p->fixed_split)
        oc_log(OC_LOG_INFO,
               "store outre: cache split fixed by --embed-nodes %g: %" PRIu64
               " embeddings (%s), %" PRIu64 " feature rows (%s), staleness %u",
               op.embed_nodes, p->emb_slots, oc_format_size(emb_bytes, eb, sizeof(eb)), n_rows,
               oc_format_size(n_rows * s->row_bytes, fb, sizeof(fb)), o->staleness);
    else if (p->alpha < 0)
        oc_log(OC_LOG_INFO,
               "store outre: cache split: no budget: every feature row and %" PRIu64
               " embeddings (%s), staleness %u",
               p->emb_slots, oc_format_size(emb_bytes, eb, sizeof(eb)), o->staleness);
    else
        oc_log(OC_LOG_INFO,
               "store outre: cache split alpha %.2f: %" PRIu64 " embeddings (%s), %" PRIu64
               " feature rows (%s); estimated %.3f ms saved and %.0f nodes pruned per batch%s",
               p->alpha, p->emb_slots, oc_format_size(emb_bytes, eb, sizeof(eb)), n_rows,
               oc_format_size(n_rows * s->row_bytes, fb, sizeof(fb)), p->est_saving_s * 1e3,
               p->est_pruned,
               o->prunes ? ""
               : wanted  ? " (no embedding cache: the estimate gives embeddings no saving at "
                           "this --admit and --staleness)"
                         : " (no embedding cache: --staleness 0, 1 layer or no trainer)");
    return OC_OK;
}

/* Plan batches and evaluation alike through the feature cache. */
static int outre_gather(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                        uint64_t n, float *out, struct oc_err *err)
{
    struct outre_store *o = s->impl;
    (void)epoch, (void)batch;
    return store_yield_gather(s, &o->yield, &o->disk, ids, n, out, err);
}

static void outre_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    struct outre_store *o = s->impl;
    store_yield_read_lock(&o->yield);
    out->held_bytes = sizeof(*o) + store_cache_held_bytes(s, &o->cache) +
                      store_disk_held_bytes(&o->disk) + outre_emb_held_bytes(s, o);
    store_yield_read_unlock(&o->yield);
    out->given_back_bytes = store_yield_missing(&o->yield) * s->row_bytes;
    out->emb_candidates = o->n_cand;
    out->emb_pruned = o->n_pruned;
    out->emb_pushed = o->n_pushed;
    out->emb_admitted = o->n_admitted;
    out->emb_max_age = o->max_age;
}

static void outre_free(struct oc_store *s)
{
    struct outre_store *o = s->impl;
    if (!o)
        return;
    if (o->yield_ready)
        store_yield_deinit(&o->yield); /* unregistered first: waits for a reclaim in progress */
    store_disk_close(&o->disk);
    store_cache_free(&o->cache);
    outre_emb_free(o);
    oc_free(o->prof.feat_count);
    oc_free(o->prof.cand_count);
    oc_free(o);
    s->impl = NULL;
}

static double emb_hit(const struct oc_store_stats *s)
{
    return s->emb_candidates ? (double)s->emb_pruned / (double)s->emb_candidates : 0.0;
}

static const struct oc_store_stat outre_stat_table[] = {
    {"embeddings", "pruned_ratio", "Pruned", OC_STORE_STAT_RATIO, emb_hit, 0},
    {"embeddings", "pruned", NULL, OC_STORE_STAT_RATIO, OC_STORE_STAT_FIELD(emb_pruned)},
    {"embeddings", "pushed", NULL, OC_STORE_STAT_RATIO, OC_STORE_STAT_FIELD(emb_pushed)},
    {"embeddings", "admitted", NULL, OC_STORE_STAT_RATIO, OC_STORE_STAT_FIELD(emb_admitted)},
    {"embeddings", "max_age", NULL, OC_STORE_STAT_RATIO, OC_STORE_STAT_FIELD(emb_max_age)},
};

static const struct oc_store_opt outre_opts[] = {
    {"staleness", OC_STORE_OPT_U32, "S", NULL,
     "use a cached embedding while it is younger than S iterations (batches); 0 = no "
     "embedding cache (bit-identical to memory) (100)",
     offsetof(struct outre_store_opts, staleness), 0, 1, OUTRE_DEFAULT_STALENESS, 0,
     "historical embeddings"},
    {"admit", OC_STORE_OPT_F64, "F", NULL,
     "take into the embedding cache only this share of a batch's freshly computed embeddings, "
     "those with the smallest gradient norm (FreshGNN's criterion); 1 = all (0.05)",
     offsetof(struct outre_store_opts, admit), 0, 1, OUTRE_DEFAULT_ADMIT, 1, NULL},
    {"embed-nodes", OC_STORE_OPT_F64, "F", NULL,
     "give this share of the nodes (the most frequent last-block sources) an embedding slot "
     "instead of the split the alpha search chooses; the feature cache gets the rest (0 = the "
     "search chooses)",
     offsetof(struct outre_store_opts, embed_nodes), 0, 1, 0, 1, NULL},
};

const struct store_strategy oc_store_outre = {
    .name = "outre",
    .no_reuse_samples = "it would show its embedding cache the same iterations again",
    .summary = "OUTRE: historical embeddings (fresh ones prune sampling) beside a feature "
               "cache, the budget split by a profiling pass; changes training unless "
               "--staleness 0",
    .open = outre_open,
    .hop = outre_hop,
    .gather = outre_gather,
    .done = outre_done,
    .stats = outre_stats,
    .free = outre_free,
    .opts = outre_opts,
    .n_opts = sizeof(outre_opts) / sizeof(outre_opts[0]),
    .opts_size = sizeof(struct outre_store_opts),
    .stat_table = outre_stat_table,
    .n_stats = sizeof(outre_stat_table) / sizeof(outre_stat_table[0]),
    .serves_accesses = 1, /* a feature cache over the access map's rows (no embeddings) */
};
