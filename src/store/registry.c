/*
 * registry.c — the one table of feature-store strategies, and the oc_store_*
 * entry points that validate arguments and dispatch through it; tier names
 * and the stats helpers. Strategies' options (their tables, values and
 * checks) are in opts.c.
 *
 * Place in the data flow: store. train, the CLI (`--strategy NAME`) and the
 * benchmark harness enumerate the table below, so a new strategy appears
 * everywhere by adding one line to it.
 * Thread-safety: the table is constant. A store is driven by one thread at a
 * time (see store.h).
 * Ownership: oc_store_open allocates the struct oc_store; oc_store_free
 * releases it and what the strategy holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

/* Registration order is the order `offcore` lists and benchmarks them in. */
static const struct store_strategy *const strategies[] = {
    &oc_store_memory, &oc_store_mmap,    &oc_store_direct, &oc_store_static, &oc_store_gnndrive,
    &oc_store_ginex,  &oc_store_diskgnn, &oc_store_helios, &oc_store_outre,
};

#define N_STRATEGIES ((uint32_t)(sizeof(strategies) / sizeof(strategies[0])))

uint32_t oc_store_n_strategies(void)
{
    return N_STRATEGIES;
}

const char *oc_store_strategy_name(uint32_t i)
{
    return i < N_STRATEGIES ? strategies[i]->name : NULL;
}

const char *oc_store_strategy_summary(uint32_t i)
{
    return i < N_STRATEGIES ? strategies[i]->summary : NULL;
}

int oc_store_strategy_find(const char *name, uint32_t *index, struct oc_err *err)
{
    char known[256];
    size_t len = 0;

    for (uint32_t i = 0; i < N_STRATEGIES; i++)
        if (name && strcmp(name, strategies[i]->name) == 0) {
            *index = i;
            return OC_OK;
        }
    known[0] = '\0';
    for (uint32_t i = 0; i < N_STRATEGIES && len < sizeof(known); i++) {
        int w =
            snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "", strategies[i]->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return OC_ERR(err, OC_ERR_ARG, "unknown strategy '%s' (known: %s)", name ? name : "(null)",
                  known);
}

int oc_store_strategy_writes_plan(uint32_t strategy)
{
    return strategy < N_STRATEGIES && strategies[strategy]->writes_plan;
}

static uint32_t row_buffers(const struct store_strategy *st, uint32_t depth)
{
    uint32_t most = st ? st->row_buffers : 0;
    return most && most < depth + 1 ? most : depth + 1;
}

int oc_store_strategy_checks_features(const char *name)
{
    uint32_t i;
    return name && oc_store_strategy_find(name, &i, NULL) == OC_OK &&
           strategies[i]->reads_whole_features;
}

uint32_t oc_store_strategy_row_buffers(uint32_t strategy, uint32_t depth)
{
    return row_buffers(strategy < N_STRATEGIES ? strategies[strategy] : NULL, depth);
}

uint32_t oc_store_row_buffers(const struct oc_store *s, uint32_t depth)
{
    return row_buffers(s->strat, depth);
}

uint32_t oc_store_strategy_n_stats(uint32_t strategy)
{
    return strategy < N_STRATEGIES ? strategies[strategy]->n_stats : 0;
}

const struct oc_store_stat *oc_store_strategy_stat(uint32_t strategy, uint32_t k)
{
    if (strategy >= N_STRATEGIES || k >= strategies[strategy]->n_stats)
        return NULL;
    return &strategies[strategy]->stat_table[k];
}

double oc_store_stat_value(const struct oc_store_stat *f, const struct oc_store_stats *s)
{
    if (f->value)
        return f->value(s);
    uint64_t v;
    OC_ASSERT(f->field + sizeof(v) <= sizeof(*s));
    memcpy(&v, (const uint8_t *)s + f->field, sizeof(v));
    return f->unit == OC_STORE_STAT_SECONDS ? (double)v / 1e6 : (double)v;
}

const struct store_strategy *store_strategy_at(uint32_t i)
{
    return i < N_STRATEGIES ? strategies[i] : NULL;
}

const char *oc_store_tier_name(enum oc_store_tier t)
{
    static const char *const names[OC_STORE_TIER_COUNT] = {
        [OC_STORE_TIER_GPU] = "gpu",
        [OC_STORE_TIER_CPU] = "cpu",
        [OC_STORE_TIER_DISK_CACHE] = "disk-cache",
        [OC_STORE_TIER_PACKED] = "packed",
        [OC_STORE_TIER_DISK] = "disk",
    };
    return (unsigned)t < OC_STORE_TIER_COUNT ? names[t] : "?";
}

double oc_store_stats_amplification(const struct oc_store_stats *s)
{
    if (s->requested_disk_bytes == 0)
        return 1.0;
    return (double)s->read_bytes / (double)s->requested_disk_bytes;
}

double store_io_cpu_s_per_gib(const struct oc_store_stats *s)
{
    if (s->read_bytes == 0)
        return 0.0;
    return (double)s->io_cpu_us * 1e-6 / ((double)s->read_bytes / (double)(1u << 30));
}

double oc_store_stats_hit_ratio(const struct oc_store_stats *s, enum oc_store_tier t)
{
    if (s->requested_rows == 0 || (unsigned)t >= OC_STORE_TIER_COUNT)
        return 0.0;
    return (double)s->tier_rows[t] / (double)s->requested_rows;
}

void oc_store_stats_sub(const struct oc_store_stats *a, const struct oc_store_stats *b,
                        struct oc_store_stats *out)
{
    struct oc_store_stats r;
    r.requested_rows = a->requested_rows - b->requested_rows;
    r.requested_bytes = a->requested_bytes - b->requested_bytes;
    r.requested_disk_bytes = a->requested_disk_bytes - b->requested_disk_bytes;
    r.read_bytes = a->read_bytes - b->read_bytes;
    r.n_reads = a->n_reads - b->n_reads;
    for (int t = 0; t < OC_STORE_TIER_COUNT; t++)
        r.tier_rows[t] = a->tier_rows[t] - b->tier_rows[t];
    r.standby_hits = a->standby_hits - b->standby_hits;
    r.trace_accesses = a->trace_accesses - b->trace_accesses;
    r.belady_misses = a->belady_misses - b->belady_misses;
    r.lru_misses = a->lru_misses - b->lru_misses;
    r.static_misses = a->static_misses - b->static_misses;
    struct oc_topo_disk_stats topo_mark = b->topo;
    memset(&r.topo, 0, sizeof(r.topo));
    oc_sample_topo_stats_add_since(&r.topo, &a->topo, &topo_mark);
    r.graph_read_bytes = a->graph_read_bytes - b->graph_read_bytes;
    r.plan_read_bytes = a->plan_read_bytes - b->plan_read_bytes;
    r.plan_write_bytes = a->plan_write_bytes - b->plan_write_bytes;
    r.sampled_batches = a->sampled_batches - b->sampled_batches;
    r.io_cpu_us = a->io_cpu_us - b->io_cpu_us;
    r.emb_candidates = a->emb_candidates - b->emb_candidates;
    r.emb_pruned = a->emb_pruned - b->emb_pruned;
    r.emb_pushed = a->emb_pushed - b->emb_pushed;
    r.emb_admitted = a->emb_admitted - b->emb_admitted;
    r.emb_max_age = a->emb_max_age;
    for (int k = 0; k < OC_STORE_MAX_STAGES; k++)
        r.stage_busy_us[k] = a->stage_busy_us[k] - b->stage_busy_us[k];
    r.held_bytes = a->held_bytes; /* levels and totals since open: the later snapshot's */
    r.given_back_bytes = a->given_back_bytes;
    r.plan_sample_us = a->plan_sample_us;
    r.plan_pack_us = a->plan_pack_us;
    r.plan_build_us = a->plan_build_us;
    r.plan_file_bytes = a->plan_file_bytes;
    r.plan_file_peak_bytes = a->plan_file_peak_bytes;
    *out = r;
}

/* ---- open / gather / free ------------------------------------------------- */

uint64_t store_row_map_bytes(const struct oc_dataset *ds)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    return m->layout[0] ? m->n_nodes * oc_dtype_size(m->index_dtype) : 0;
}

void store_rows_of(const struct oc_dataset *ds, const void *map, const uint64_t *ids, uint64_t n,
                   uint64_t *rows)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    if (!map)
        memmove(rows, ids, n * sizeof(uint64_t));
    else if (m->index_dtype == OC_DTYPE_U32)
        for (uint64_t i = 0; i < n; i++)
            rows[i] = ((const uint32_t *)map)[ids[i]];
    else
        for (uint64_t i = 0; i < n; i++)
            rows[i] = ((const uint64_t *)map)[ids[i]];
}

/*
 * The dataset's feature layout, if it has one: its map loaded (checked as a
 * permutation) and its bytes taken from the store's budget, which must keep
 * room for the strategy.
 */
static int load_row_map(struct oc_store *s, struct oc_store_config *c, struct oc_err *err)
{
    uint64_t bytes = store_row_map_bytes(c->ds);
    if (bytes == 0)
        return OC_OK;
    if (c->mem_bytes && bytes >= c->mem_bytes) {
        char need[32], have[32];
        return OC_ERR(err, OC_ERR_BUDGET,
                      "store %s: the feature layout's map (%s) needs %s; the store's budget is %s",
                      s->strat->name, oc_dataset_path(c->ds, OC_DS_FEATURE_ROWS),
                      oc_format_size(bytes, need, sizeof(need)),
                      oc_format_size(c->mem_bytes, have, sizeof(have)));
    }
    enum oc_dtype dt = oc_dataset_manifest(c->ds)->index_dtype;
    int rc = oc_dataset_load_feature_rows(c->ds, dt, &s->row_map, "store: feature layout", err);
    if (rc)
        return rc;
    if (dt == OC_DTYPE_U32)
        s->row_of32 = s->row_map;
    else
        s->row_of64 = s->row_map;
    if (c->mem_bytes)
        c->mem_bytes -= bytes;
    return OC_OK;
}

/* A store, its lifecycle counters and its samplers' topology tally, in one allocation. */
struct store_box {
    struct oc_store s;
    struct store_life life;
    struct store_topo_tally topo;
};

/* The strategy's free, then what the registry made (its stages joined before). */
static void store_release(struct oc_store *s)
{
    s->strat->free(s);
    if (s->own_stages)
        oc_pipeline_free(s->stages);
    pthread_mutex_destroy(&s->stats_lock);
    oc_free(s->row_map);
    oc_free(s);
}

int oc_store_open(uint32_t index, const struct oc_store_config *cfg, struct oc_store **out,
                  struct oc_err *err)
{
    struct oc_store *s;
    int rc;

    *out = NULL;
    if (index >= N_STRATEGIES)
        return OC_ERR(err, OC_ERR_ARG, "store: strategy index %u out of range (%u registered)",
                      index, N_STRATEGIES);
    if (!cfg || !cfg->ds)
        return OC_ERR(err, OC_ERR_ARG, "store %s: no dataset given", strategies[index]->name);
    const struct oc_manifest *m = oc_dataset_manifest(cfg->ds);
    const char *path = oc_dataset_path(cfg->ds, OC_DS_FEATURES);
    if (m->feat_dim == 0 || !m->files[OC_DS_FEATURES].present)
        return OC_ERR(err, OC_ERR_ARG, "store %s: dataset %s has no node features",
                      strategies[index]->name, oc_dataset_dir(cfg->ds));
    if (m->feat_dtype != OC_DTYPE_F32 && m->feat_dtype != OC_DTYPE_F16)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "store %s: %s: feature dtype %s (want f32 or f16)",
                      strategies[index]->name, path, oc_dtype_name(m->feat_dtype));
    if ((rc = store_opts_check(index, cfg, err)))
        return rc;
    if (cfg->reuse_samples && strategies[index]->no_reuse_samples)
        return OC_ERR(err, OC_ERR_ARG, "store %s: --reuse-samples is not supported (%s)",
                      strategies[index]->name, strategies[index]->no_reuse_samples);
    if (cfg->accesses && !strategies[index]->serves_accesses) {
        char names[128] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < N_STRATEGIES && len < sizeof(names); i++)
            if (strategies[i]->serves_accesses)
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
                                        strategies[i]->name);
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store %s: it samples or sees the training batches in the plan's node ids, "
                      "so it cannot serve rows by other ids (a partitioned dataset's part: use "
                      "%s)",
                      strategies[index]->name, names);
    }
    if (cfg->accesses && !cfg->accesses->graph)
        return OC_ERR(err, OC_ERR_ARG, "store %s: accesses without the plan's graph",
                      strategies[index]->name);
    if (cfg->graph && cfg->graph->n_nodes != m->n_nodes)
        return OC_ERR(
            err, OC_ERR_ARG, "store %s: graph has %" PRIu64 " nodes, dataset %s has %" PRIu64,
            strategies[index]->name, cfg->graph->n_nodes, oc_dataset_dir(cfg->ds), m->n_nodes);
    struct store_box *box = oc_calloc(1, sizeof(*box), "feature store", err);
    if (!box)
        return err ? err->status : OC_ERR_NOMEM;
    s = &box->s; /* first member: oc_free(s) frees the box */
    s->life = &box->life;
    atomic_init(&box->life.begun, 0);
    atomic_init(&box->life.done, 0);
    s->topo = &box->topo;
    atomic_init(&box->topo.n_lookups, 0);
    atomic_init(&box->topo.n_hits, 0);
    atomic_init(&box->topo.requested_bytes, 0);
    atomic_init(&box->topo.read_bytes, 0);
    atomic_init(&box->topo.n_reads, 0);
    s->strat = strategies[index];
    s->ds = cfg->ds;
    s->pool = cfg->pool;
    s->path = path;
    store_shape(s, cfg);
    s->data_offset = oc_dataset_data_offset(cfg->ds, OC_DS_FEATURES);
    s->nb_epoch = UINT64_MAX;
    s->caps.samplers = 1;
    /* the cache loader's runs within the reader's budgeted arrays (a budget sized to them) */
    uint64_t budget_rows = store_budget_rows(s, cfg);
    s->load_run_rows =
        cfg->mem_bytes && budget_rows < STORE_LOAD_ROWS ? budget_rows : STORE_LOAD_ROWS;
    s->stages = cfg->pipeline;
    s->n_lanes = 1;
    pthread_mutex_init(&s->stats_lock, NULL);
    struct oc_store_config c = *cfg; /* less the layout's map, charged to the store */
    rc = load_row_map(s, &c, err);
    if (rc == OC_OK && oc_dataset_features_crc_deferred(cfg->ds) &&
        (rc = oc_dataset_features_crc_begin(cfg->ds, &s->feat_crc, err)) == OC_OK) {
        if (s->strat->reads_whole_features)
            s->feat_crc_due = 1; /* folded into the strategy's own read */
        else                     /* read now, before the strategy holds its budget */
            rc = oc_dataset_features_crc_finish(cfg->ds, &s->feat_crc, NULL, 0, NULL, err);
    }
    if (rc == OC_OK)
        rc = s->strat->open(s, &c, err);
    if (rc == OC_OK && s->feat_crc_due) { /* what the strategy's read left (nothing, mostly) */
        s->feat_crc_due = 0;
        rc = oc_dataset_features_crc_finish(cfg->ds, &s->feat_crc, NULL, 0, NULL, err);
    }
    if (rc) {
        oc_pipeline_join(s->stages); /* its stages may have started: none runs after this */
        store_release(s);
        return rc;
    }
    if (s->n_lanes == 0 || s->n_lanes > STORE_MAX_LANES)
        s->n_lanes = 1;
    if (s->caps.samplers == 0)
        s->caps.samplers = 1;
    /* a capability needs the hook that serves it */
    OC_ASSERT(!(s->caps.hops || s->caps.prunes) || s->strat->hop);
    OC_ASSERT(!(s->caps.batches || s->caps.reorders) || s->strat->load);
    *out = s;
    return OC_OK;
}

int store_stages(struct oc_store *s, struct oc_pipeline **out, struct oc_err *err)
{
    *out = NULL;
    if (!s->stages) {
        char name[64];
        snprintf(name, sizeof(name), "store %s", s->strat->name);
        int rc = oc_pipeline_new(name, &s->stages, err);
        if (rc)
            return rc;
        s->own_stages = 1;
    }
    *out = s->stages;
    return OC_OK;
}

int store_stages_error(const struct oc_store *s, struct oc_err *err)
{
    int rc = oc_pipeline_status(s->stages, err);
    return rc ? rc : OC_ERR(err, OC_ERR_INTERNAL, "store %s: a stage queue closed", s->strat->name);
}

void oc_store_free(struct oc_store *s)
{
    if (!s)
        return;
    if (s->own_stages)
        oc_pipeline_join(s->stages); /* a given pipeline was freed before (store.h) */
    store_release(s);
}

const char *oc_store_name(const struct oc_store *s)
{
    return s->strat->name;
}

uint32_t oc_store_feat_dim(const struct oc_store *s)
{
    return (uint32_t)s->feat_dim;
}

/* Checks a gather's arguments: OC_ERR_ARG naming the problem. */
static int gather_check(const struct oc_store *s, const uint64_t *ids, uint64_t n, const float *out,
                        struct oc_err *err)
{
    if (!ids || !out)
        return OC_ERR(err, OC_ERR_ARG, "store %s: gather of %" PRIu64 " rows with NULL %s",
                      s->strat->name, n, ids ? "output" : "ids");
    for (uint64_t i = 0; i < n; i++)
        if (ids[i] >= s->n_nodes)
            return OC_ERR(err, OC_ERR_ARG,
                          "store %s: id %" PRIu64 " at position %" PRIu64
                          " is out of range (%" PRIu64 " nodes)",
                          s->strat->name, ids[i], i, s->n_nodes);
    return OC_OK;
}

int oc_store_gather(struct oc_store *s, const uint64_t *ids, uint64_t n, float *out,
                    struct oc_err *err)
{
    if (n == 0)
        return OC_OK;
    return oc_store_gather_batch(s, STORE_OFF_PLAN, 0, ids, n, out, err);
}

int oc_store_gather_batch(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                          uint64_t n, float *out, struct oc_err *err)
{
    int rc = n ? gather_check(s, ids, n, out, err) : OC_OK;
    if (rc == OC_OK)
        rc = s->strat->gather(s, epoch, batch, ids, n, out, err);
    if (rc)
        return rc;
    s->stats.requested_rows += n;
    s->stats.requested_bytes += n * (uint64_t)s->row_bytes;
    return OC_OK;
}

uint32_t oc_store_gather_lanes(const struct oc_store *s)
{
    return s->n_lanes;
}

/* The counters a gather adds (oc_store_stats_sub's cumulative ones). */
static void stats_add(struct oc_store_stats *to, const struct oc_store_stats *d)
{
    to->requested_rows += d->requested_rows;
    to->requested_bytes += d->requested_bytes;
    to->requested_disk_bytes += d->requested_disk_bytes;
    to->read_bytes += d->read_bytes;
    to->n_reads += d->n_reads;
    for (int t = 0; t < OC_STORE_TIER_COUNT; t++)
        to->tier_rows[t] += d->tier_rows[t];
    to->standby_hits += d->standby_hits;
    to->trace_accesses += d->trace_accesses;
    to->belady_misses += d->belady_misses;
    to->lru_misses += d->lru_misses;
    to->static_misses += d->static_misses;
}

int oc_store_gather_batch_lane(struct oc_store *s, uint32_t lane, uint64_t epoch, uint64_t batch,
                               const uint64_t *ids, uint64_t n, float *out, struct oc_err *err)
{
    if (s->n_lanes <= 1 && lane == 0)
        return oc_store_gather_batch(s, epoch, batch, ids, n, out, err);
    if (lane >= s->n_lanes)
        return OC_ERR(err, OC_ERR_ARG, "store %s: gather on lane %u of %u", s->strat->name, lane,
                      s->n_lanes);
    /* the lane's view: the strategy's state is shared, the counters are the lane's own
       (copied under the lock: another lane may be adding its counters meanwhile) */
    struct oc_store view;
    pthread_mutex_lock(&s->stats_lock);
    view = *s;
    pthread_mutex_unlock(&s->stats_lock);
    memset(&view.stats, 0, sizeof(view.stats));
    view.lane = lane;
    int rc = oc_store_gather_batch(&view, epoch, batch, ids, n, out, err);
    pthread_mutex_lock(&s->stats_lock);
    stats_add(&s->stats, &view.stats); /* what was read counts even on failure */
    pthread_mutex_unlock(&s->stats_lock);
    return rc;
}

int store_next_in_order(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err)
{
    if (s->nb_epoch != epoch) {
        s->nb_epoch = epoch;
        s->nb_next = 0;
    }
    if (s->nb_next >= s->n_plan_batches)
        return OC_ERR(err, OC_ERR_NOTFOUND,
                      "store %s: every batch of epoch %" PRIu64 " was returned (%" PRIu64 ")",
                      s->strat->name, epoch, s->n_plan_batches);
    *batch = s->nb_next++;
    return OC_OK;
}

int oc_store_next_batch(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_err *err)
{
    if (s->strat->load) /* gnndrive's order (its own even in plan order); the others' plan */
        return s->strat->load(s, epoch, batch, NULL, err);
    return store_next_in_order(s, epoch, batch, err);
}

const struct oc_store_caps *oc_store_caps(const struct oc_store *s)
{
    return &s->caps;
}

int oc_store_load_batch(struct oc_store *s, uint64_t epoch, uint64_t batch,
                        struct oc_sample_batch *out, struct oc_err *err)
{
    if (!s->caps.batches)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "store %s: does not sample batches", s->strat->name);
    int rc = s->strat->load(s, epoch, &batch, out, err);
    if (rc == OC_OK)
        atomic_fetch_add_explicit(&s->life->begun, 1, memory_order_release);
    return rc;
}

int oc_store_sampled(struct oc_store *s, uint64_t epoch, uint64_t batch,
                     const struct oc_sample_batch *b, struct oc_err *err)
{
    int rc = s->strat->sampled ? s->strat->sampled(s, epoch, batch, b, err) : OC_OK;
    if (rc == OC_OK)
        atomic_fetch_add_explicit(&s->life->begun, 1, memory_order_release);
    return rc;
}

int oc_store_hop(struct oc_store *s, const struct oc_store_hop *h, struct oc_err *err)
{
    if (h->mask) {
        OC_ASSERT(h->hist);
        memset(h->hist, 0, sizeof(*h->hist));
        if (!s->caps.prunes)
            return OC_OK;
    } else if (!s->caps.hops || h->n == 0) {
        return OC_OK;
    }
    return s->strat->hop(s, h, err);
}

void oc_store_done(struct oc_store *s, uint64_t epoch, uint64_t batch)
{
    /* the lifecycle's order: a batch is given back only after it was sampled or loaded */
    uint64_t done = atomic_fetch_add_explicit(&s->life->done, 1, memory_order_relaxed);
    (void)done;
    OC_ASSERT(done < atomic_load_explicit(&s->life->begun, memory_order_acquire));
    if (s->strat->done)
        s->strat->done(s, epoch, batch);
}

void oc_store_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    /* the lock is not part of the store's value: lanes add their counters under it */
    pthread_mutex_t *lock = (pthread_mutex_t *)&s->stats_lock;
    pthread_mutex_lock(lock);
    *out = s->stats;
    pthread_mutex_unlock(lock);
    out->held_bytes = 0;
    out->plan_file_bytes = 0;
    out->plan_file_peak_bytes = 0;
    s->strat->stats(s, out);
    store_topo_read(s, &out->topo);
    if (s->row_map)
        out->held_bytes += store_row_map_bytes(s->ds);
}
