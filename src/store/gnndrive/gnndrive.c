/*
 * gnndrive.c — the `gnndrive` strategy (GNNDrive): asynchronous extraction
 * of each training batch's feature rows into a reference-counted feature
 * buffer by pipeline stages, ahead of the trainer (the loop of records is
 * drawn in gnndrive_int.h, the stages are gnndrive_stage.c). This file:
 * sizing and open, stats and test knobs; the trainer's side (gathers, the
 * next batch) is gnndrive_serve.c.
 *
 * Sizing (cfg->mem_bytes, all of it through oc_alloc). Three numbers of rows
 * per batch:
 *   bound B = min(N, batch_size x prod(1 + fanout)): a layer adds at most
 *             fanout new rows per destination node, so no batch of any epoch
 *             exceeds it (a fanout of -1 makes it N).
 *   reserved R = the input rows train measured on its first batches plus its
 *             margin (cfg->batch_rows), else B: batch records and extractor
 *             scratch hold R rows at open, and grow through the accountant
 *             (GD_GROW: by an eighth at least) for a larger batch; a budget
 *             that cannot give it is OC_ERR_BUDGET naming the batch and its rows.
 *   measured M = the largest of the first GD_MEASURE_BATCHES batches of the
 *             first epoch, sampled at open, plus a quarter: what batches of
 *             this graph actually need (often a third of B on power-law
 *             graphs, whose many low-degree nodes yield fewer than fanout
 *             neighbors).
 * The buffer gets at least min(N, max(R, M)) row slots: with reservation in
 * plan order (gnndrive_stage.c) one batch's worth of slots is all that
 * deadlock freedom needs, so a tight budget only makes extractors wait for
 * the releaser (GNNDrive gives each extractor a batch's worth, E x M, which
 * more budget buys). A batch with more input rows than there are slots is
 * OC_ERR_BUDGET at its prepare, naming the batch, its rows and the budget.
 * N slots hold every row, so more can never be referenced at once.
 * Each slot costs a row as stored + 21 bytes of metadata. The fixed part:
 * the mapping table (4 bytes per node); 2E + 2 batch records (12 bytes per
 * row of R); per extractor a batch reader with 64 reads in flight into
 * bounce cells of max(8 KiB, a row's span) each and request tables for one
 * run of reads (gnndrive_io.c), and 20 bytes of scratch per row of R
 * (gd_io_extractor_bytes); the sampler threads (the batch pipeline's, which
 * feed this store, --samplers S of them; kept in this reservation: each one's
 * batch and id map grow with the rows it samples, about 80 bytes per row:
 * counted as GD_SAMPLER_ROW_BYTES per row of M, and 2 MiB for an on-disk
 * topology's reader; their epoch order, 16 bytes per training id; with S > 1
 * each batch record's copy of its seeds); the evaluation
 * reader (its bounce and 192 bytes of requests per row of a chunk). What the
 * budget leaves after the fixed part buys slots; fewer than the minimum is OC_ERR_BUDGET at open,
 * naming how much is needed. With mem_bytes 0 every row gets a slot.
 * Without a training plan (no sample_opts, graph, train_ids or epochs in the
 * config) no stage is added and every gather reads directly.
 *
 * Over other ids (cfg->accesses: a partitioned dataset's part, which no
 * batch pipeline feeds) a feeder stage of the store's pipeline (../feed.c)
 * samples the plan's batches and shows each to gd_prepare as the access
 * map's ids, in plan order; it replaces the S samplers in the reservation
 * (store_feed_bytes: the plan's whole batches), and every plan batch's
 * gather waits for its record. --samplers and --reorder are refused there.
 *
 * --hyperbatch F (with a budget and a plan): two groups (store_hyper_size)
 * come off the budget first, and the records become 2 max(E, K) + 2 for K
 * batches a group, so that two groups fill; their reads are in the stats.
 *
 * Under a budget the buffer gives row slots back to requests the budget
 * could not otherwise give, and takes them back (gnndrive_yield.c).
 *
 * Stats: tier CPU = rows served from a slot (valid, reused from standby, or
 * wait-listed while another extractor loaded it), tier DISK = rows the
 * batch's own reads fetched; standby_hits = rows whose slot had no reference
 * left (a standby-list reuse); read_bytes / n_reads are the reads of the
 * batches served (and of extracted batches released unused). Counters move
 * when the trainer consumes a batch, so an epoch's stats are its batches'.
 *
 * Place in the data flow: store; train calls gather_batch per training batch
 * and gather for evaluation.
 * Thread-safety and ownership: gnndrive_int.h (the oc_store_* calls come
 * from the batch pipeline's stages, store.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/gnndrive/gnndrive_int.h"

#define GD_DEFAULT_EXTRACTORS 2u
#define GD_MAX_EXTRACTORS     64u
#define GD_MAX_SAMPLERS       64u
#define GD_AUTO_SAMPLERS_MAX  4u           /* GNNDrive's four samplers */
#define GD_CELL_MIN           (8u << 10)   /* bounce per read */
#define GD_SAMPLER_ROW_BYTES  144u         /* sampler stage's batch + id map per row of M */
#define GD_MEASURE_BATCHES    8u           /* batches sampled at open to measure their rows */
#define GD_SLOT_META_BYTES    21u          /* reverse map 8, ref 4, links 8, state 1 */
#define GD_EVAL_BOUNCE_MIN    (256u << 10) /* direct reads: bounce, rows per chunk = bounce / 256 */
#define GD_EVAL_BOUNCE_MAX    (2u << 20)
#define GD_DELAY_SEED         0x2545F4914F6CDD1Dull /* test delays (oc_store_gnndrive_set_delay) */

/* ---- sizing ------------------------------------------------------------------ */

/*
 * --samplers N, or (0) STORE_DISK_SAMPLERS over an on-disk topology (samplers
 * wait on its reads: on 2 cores 4 samplers trained a 1M-node epoch 1.18x
 * faster than one) and else one per two online cores, 1 to GD_AUTO_SAMPLERS_MAX
 * (in RAM 1, 2 and 4 samplers were equal there); at most one per batch record
 * (a sampler holds one while it samples).
 */
static uint32_t gd_samplers_wanted(uint32_t asked, const struct oc_graph *graph, uint32_t n_records)
{
    uint32_t n = asked ? asked : store_sampler_threads(graph); /* on disk, else 0 */
    if (n == 0) {
        long cpu = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpu >= 2 ? (uint32_t)(cpu / 2) : 1;
        n = n < GD_AUTO_SAMPLERS_MAX ? n : GD_AUTO_SAMPLERS_MAX;
    }
    n = n < GD_MAX_SAMPLERS ? n : GD_MAX_SAMPLERS;
    return n < n_records ? n : n_records;
}

/*
 * Sizes the store for cfg with measured rows M (est_rows); n_slots = what
 * mem_bytes buys (N if unlimited), not checked here.
 */
static void gd_size(const struct oc_store *s, const struct oc_store_config *cfg, uint64_t est_rows,
                    uint64_t plan_rows, struct gd_sizing *z)
{
    memset(z, 0, sizeof(*z));
    z->pipeline = store_has_plan(cfg);
    z->per_slot = s->row_bytes + GD_SLOT_META_BYTES;
    uint64_t eb = store_expected_rows(s, cfg) * s->row_bytes / 16; /* a 16th of a batch */
    eb = eb < GD_EVAL_BOUNCE_MIN   ? GD_EVAL_BOUNCE_MIN
         : eb > GD_EVAL_BOUNCE_MAX ? GD_EVAL_BOUNCE_MAX
                                   : eb;
    z->eval_bounce = (size_t)oc_io_align_up(eb);
    z->fixed = sizeof(struct gd_store) + z->eval_bounce +
               z->eval_bounce / 256 * (STORE_ROW_SCRATCH_BYTES + sizeof(uint32_t));
    if (!z->pipeline)
        return;
    struct gd_opts o;
    store_opts_read(&oc_store_gnndrive, cfg, &o);
    z->n_extractors = o.n_extractors ? o.n_extractors : GD_DEFAULT_EXTRACTORS;
    if (z->n_extractors > GD_MAX_EXTRACTORS)
        z->n_extractors = GD_MAX_EXTRACTORS;
    if (o.hyperbatch > 0 && cfg->mem_bytes) { /* batches per group: records to fill two */
        z->hy.disk = o.hyperbatch_disk;
        z->hy.fed = z->hy.disk && !cfg->accesses; /* on disk a feeder of its own stages them */
        z->hy.takers = z->n_extractors;           /* each takes one batch at a time */
        z->hyper =
            store_hyper_size(s, o.hyperbatch, cfg->mem_bytes, store_budget_rows(s, cfg), &z->hy);
    }
    uint32_t per =
        z->hy.max_batches > z->n_extractors && !z->hy.fed ? z->hy.max_batches : z->n_extractors;
    z->n_records = 2 * per + 2;
    /* over other ids the feeder's one thread samples (store_feed_start), not the pipeline's */
    z->n_samplers = cfg->accesses ? 1 : gd_samplers_wanted(o.n_samplers, cfg->graph, z->n_records);
    z->bound = store_expected_rows(s, cfg);
    z->max_rows = store_batch_rows(s, cfg);
    z->est_rows = est_rows < z->bound ? est_rows : z->bound;
    uint64_t span = oc_io_align_up(s->row_bytes) + OC_IO_ALIGN;
    z->cell_bytes = (size_t)(span > GD_CELL_MIN ? span : GD_CELL_MIN);
    z->n_plan = (uint64_t)(cfg->n_epochs - cfg->first_epoch) * s->n_plan_batches;
    uint64_t e = z->n_extractors, r = z->max_rows;
    z->fixed += s->n_nodes * sizeof(uint32_t);                                    /* mapping */
    z->fixed += z->n_records * (sizeof(struct gd_rec) + sizeof(void *) + r * 12); /* records */
    z->fixed += 5 * (z->n_records * sizeof(void *) + 128);                        /* queues */
    z->fixed +=
        e * (sizeof(struct gd_extractor) + gd_io_extractor_bytes(z->cell_bytes, GD_DEPTH, r));
    /* sampler threads, each its own (+ on-disk topology reader), their epoch order and,
       with more than one, each batch slot's copy of its seeds; over other ids the feeder,
       whose batches are the plan's (plan_rows) */
    if (cfg->accesses || z->hy.fed)
        z->fixed += store_feed_bytes(cfg, plan_rows, r);
    else
        z->fixed +=
            z->n_samplers * (z->est_rows * GD_SAMPLER_ROW_BYTES +
                             (cfg->graph->disk ? STORE_DISK_SAMPLER_BYTES : 0)) +
            2 * cfg->n_train * sizeof(uint64_t) +
            (z->n_samplers > 1 ? z->n_records * (cfg->batch_size * sizeof(uint64_t) + 64) : 0);
    z->fixed +=
        2 * oc_bits_bytes(z->n_plan) + (cfg->n_epochs - cfg->first_epoch) * sizeof(uint32_t);
    z->fixed += z->hyper;
    uint64_t one = z->est_rows > r ? z->est_rows : r; /* one batch: deadlock freedom */
    z->min_slots = one < s->n_nodes ? one : s->n_nodes;
    if (cfg->mem_bytes == 0)
        z->n_slots = s->n_nodes;
    else
        z->n_slots = cfg->mem_bytes > z->fixed ? (cfg->mem_bytes - z->fixed) / z->per_slot : 0;
    if (z->n_slots > s->n_nodes)
        z->n_slots = s->n_nodes;
}

static int gd_check_budget(const struct oc_store_config *cfg, const struct gd_sizing *z,
                           struct oc_err *err)
{
    char need_s[32], fixed_s[32], have_s[32];
    uint64_t need = z->fixed + z->min_slots * z->per_slot;
    if (z->pipeline && z->bound >= GD_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store gnndrive: batches of up to %" PRIu64 " rows are too large", z->bound);
    if (cfg->mem_bytes == 0 || (z->n_slots >= z->min_slots && cfg->mem_bytes >= z->fixed))
        return OC_OK;
    return OC_ERR(err, OC_ERR_BUDGET,
                  "store gnndrive: needs at least %s (%" PRIu64 " bytes): %" PRIu64
                  " row slots of %" PRIu64 " bytes (one batch: the larger of %" PRIu64
                  " rows, the largest of the first batches plus a quarter, and the %" PRIu64
                  " rows training reserves for a batch, at most the node count), plus %s of "
                  "tables, batch records and I/O buffers%s; the store's budget is %s",
                  oc_format_size(need, need_s, sizeof(need_s)), need, z->min_slots, z->per_slot,
                  z->est_rows, z->max_rows, oc_format_size(z->fixed, fixed_s, sizeof(fixed_s)),
                  z->hyper ? " (with two hyperbatch groups of a batch's rows at least, their "
                             "reader and the sampled batches they hold)"
                           : "",
                  oc_format_size(cfg->mem_bytes, have_s, sizeof(have_s)));
}

/* M and the plan's own batch rows (more than M over other ids: the feeder samples those). */
static int gd_measure(const struct oc_store_config *cfg, uint64_t *est, uint64_t *plan_rows,
                      struct oc_err *err)
{
    uint64_t misses;
    *est = *plan_rows = 0;
    return store_has_plan(cfg) ? store_measure_misses(cfg, GD_MEASURE_BATCHES, "gnndrive", NULL,
                                                      est, &misses, plan_rows, err)
                               : OC_OK;
}

/*
 * Over other ids (a partitioned dataset's part: cfg->accesses) the trainer
 * gathers the batches in plan order itself and the store's feeder samples
 * them on one thread: --reorder and --samplers would change nothing there,
 * so they are refused, naming themselves.
 */
static int gd_check_accesses(const struct oc_store_config *cfg, struct oc_err *err)
{
    if (!cfg->accesses)
        return OC_OK;
    struct gd_opts o;
    store_opts_read(&oc_store_gnndrive, cfg, &o);
    if (o.reorder)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store gnndrive: --reorder on a partitioned dataset's part: every rank "
                      "gathers each batch in plan order (the exchange is per batch)");
    if (o.n_samplers)
        return OC_ERR(err, OC_ERR_UNSUPPORTED,
                      "store gnndrive: --samplers on a partitioned dataset's part: its batches "
                      "are sampled by the store's one feeding thread (over the access map), not "
                      "by the batch pipeline's samplers");
    return OC_OK;
}

/* ---- open / free --------------------------------------------------------------- */

static int alloc_pipeline(struct oc_store *s, const struct oc_store_config *cfg, struct gd_store *g,
                          const struct gd_sizing *z, struct oc_err *err)
{
    int rc;
    g->graph = *cfg->graph;
    g->so = *cfg->sample_opts;
    if ((rc = oc_file_open(s->path, OC_FILE_READ | OC_FILE_DIRECT, &g->file, err)) ||
        (rc = gd_buf_init(&g->buf, s->n_nodes, z->n_slots, s->row_bytes, err)))
        return rc;
    g->recs =
        oc_calloc(g->z.n_records, sizeof(struct gd_rec), "store gnndrive: batch records", err);
    if (!g->recs)
        return err->status;
    for (uint32_t i = 0; i < g->z.n_records; i++) {
        g->recs[i].cap = g->z.max_rows;
        g->recs[i].ids =
            oc_alloc(g->z.max_rows * sizeof(uint64_t), "store gnndrive: batch ids", err);
        g->recs[i].slots =
            oc_alloc(g->z.max_rows * sizeof(uint32_t), "store gnndrive: batch slots", err);
        if (!g->recs[i].ids || !g->recs[i].slots)
            return err->status;
    }
    g->parked =
        oc_calloc(g->z.n_records, sizeof(*g->parked), "store gnndrive: parked batches", err);
    g->consumed = oc_calloc(oc_bits_bytes(g->z.n_plan), 1, "store gnndrive: plan bitmap", err);
    g->taken = oc_calloc(oc_bits_bytes(g->z.n_plan), 1, "store gnndrive: plan bitmap", err);
    g->epoch_taken = oc_calloc(g->n_epochs - g->first_epoch, sizeof(uint32_t),
                               "store gnndrive: plan bitmap", err);
    g->ex = oc_calloc(g->z.n_extractors, sizeof(*g->ex), "store gnndrive: extractors", err);
    if (!g->parked || !g->consumed || !g->taken || !g->epoch_taken || !g->ex)
        return err->status;
    for (uint32_t i = 0; i < g->z.n_extractors; i++) {
        oc_rng_init(&g->ex[i].rng, GD_DELAY_SEED, 1, i, 0); /* streams: extractors 1, */
        if ((rc = gd_io_init(g, &g->ex[i], err)))
            return rc;
    }
    oc_rng_init(&g->sampler_rng, GD_DELAY_SEED, 2, 0, 0);  /* the sampler 2 */
    oc_rng_init(&g->releaser_rng, GD_DELAY_SEED, 3, 0, 0); /* and the releaser 3 */
    return OC_OK;
}

static int gd_open(struct oc_store *s, const struct oc_store_config *cfg, struct oc_err *err)
{
    struct gd_sizing z;
    struct oc_err local;
    int rc;

    uint64_t est, plan_rows;
    if (!err)
        err = &local;
    struct gd_opts o;
    store_opts_read(&oc_store_gnndrive, cfg, &o);
    if (o.hyperbatch_disk && o.hyperbatch <= 0)
        return store_hyper_disk_alone(s, err);
    if ((rc = gd_check_accesses(cfg, err)) || (rc = gd_measure(cfg, &est, &plan_rows, err)))
        return rc;
    gd_size(s, cfg, est, plan_rows, &z);
    if ((rc = gd_check_budget(cfg, &z, err)))
        return rc;
    struct gd_store *g = oc_calloc(1, sizeof(*g), "store gnndrive", err);
    if (!g)
        return err ? err->status : OC_ERR_NOMEM;
    s->impl = g;
    g->s = s;
    g->z = z;
    g->reorder = o.reorder != 0;
    s->caps.reorders = g->reorder;
    g->mem_bytes = cfg->mem_bytes;
    g->first_epoch = cfg->first_epoch;
    g->n_epochs = cfg->n_epochs;
    g->n_batches = s->n_plan_batches;
    g->nb_epoch = UINT64_MAX;
    g->held_bytes = z.fixed - z.hyper + z.n_slots * z.per_slot; /* the groups: their stats */
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->ticket_cv, NULL);
    pthread_cond_init(&g->slot_cv, NULL);
    pthread_cond_init(&g->loaded_cv, NULL);
    /* direct reads: the slot scratch and requests of a chunk (gd_gather) held from now on */
    if ((rc = store_disk_open_sized(s, 1, g->z.eval_bounce, &g->disk, err)) ||
        (rc = store_disk_reserve(&g->disk, g->z.eval_bounce / 256, err)))
        return rc;
    if (!g->z.pipeline)
        return OC_OK;
    /* up to n_records fed batches extracted ahead of their gathers, by n_samplers */
    s->caps.lookahead = g->z.n_records;
    s->caps.samplers = g->z.n_samplers;
    if ((rc = alloc_pipeline(s, cfg, g, &z, err)))
        return rc;
    /* on disk (z.hy.fed) the groups' feeder stages every row of the batches ahead */
    if (z.hy.cap && (rc = store_hyper_open(s, &z.hy, cfg, gd_stage_rows, &g->hyper, err)))
        return rc;
    if ((cfg->mem_bytes && (rc = gd_yield_register(g, err))) || (rc = gd_stages_start(g, err)))
        return rc;
    /* a part's store (no batch pipeline shows it the batches): its own feeder, after the
       stages it feeds */
    return cfg->accesses ? store_feed_start(s, cfg, gd_prepare, &g->feed, err) : OC_OK;
}

static void gd_free(struct oc_store *s)
{
    struct gd_store *g = s->impl;
    if (!g)
        return;
    oc_giveback_unregister(&g->gb); /* waits for a give-back in progress */
    /* its stage was joined with the others */
    store_feed_close(g->feed, "gnndrive", "extracted records", g->n_served, g->n_direct);
    for (uint32_t i = 0; g->ex && i < g->z.n_extractors; i++)
        gd_io_deinit(&g->ex[i]);
    oc_free(g->ex);
    for (uint32_t i = 0; g->recs && i < g->z.n_records; i++) {
        oc_free(g->recs[i].ids);
        oc_free(g->recs[i].slots);
    }
    oc_free(g->recs);
    oc_free(g->parked);
    oc_free(g->consumed);
    oc_free(g->taken);
    oc_free(g->epoch_taken);
    gd_buf_deinit(&g->buf);
    store_hyper_free(g->hyper); /* its stages (read, feeder) were joined with the others */
    oc_file_close(g->file, NULL);
    store_disk_close(&g->disk);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->ticket_cv);
    pthread_cond_destroy(&g->slot_cv);
    pthread_cond_destroy(&g->loaded_cv);
    oc_free(g);
    s->impl = NULL;
}

/* ---- stats and knobs --------------------------------------------------------------- */

static void gd_stats(const struct oc_store *s, struct oc_store_stats *out)
{
    struct gd_store *g = s->impl;
    gd_lock(g);
    uint64_t given = gd_buf_given_back_bytes(&g->buf);
    gd_unlock(g);
    out->held_bytes = g->held_bytes - given;
    out->given_back_bytes = given;
    if (g->extract_st)
        out->io_cpu_us = (uint64_t)(oc_stage_cpu_s(g->extract_st) * 1e6);
    store_hyper_stats(g->hyper, out);
}

int oc_store_gnndrive_info(const struct oc_store *s, struct oc_store_gnndrive_info *info)
{
    memset(info, 0, sizeof(*info));
    if (!s || s->strat != &oc_store_gnndrive)
        return 0;
    struct gd_store *g = s->impl;
    info->z = g->z;
    info->n_extracted = atomic_load(&g->n_extracted);
    info->n_served = g->n_served;
    info->n_discarded = g->n_discarded;
    info->n_direct = g->n_direct;
    return 1;
}

void oc_store_gnndrive_set_delay(struct oc_store *s, uint32_t max_us)
{
    if (s && s->strat == &oc_store_gnndrive)
        atomic_store(&((struct gd_store *)s->impl)->delay_us, max_us);
}

int oc_store_gnndrive_min_budget(const struct oc_store_config *cfg, uint64_t *bytes,
                                 struct oc_err *err)
{
    if (!cfg || !cfg->ds)
        return OC_ERR(err, OC_ERR_ARG, "store gnndrive: no dataset given");
    struct oc_store s;
    memset(&s, 0, sizeof(s));
    store_shape(&s, cfg);
    struct oc_store_config c = *cfg;
    c.mem_bytes = 0;
    struct gd_sizing z;
    uint64_t est, plan_rows;
    int rc = gd_measure(cfg, &est, &plan_rows, err);
    if (rc)
        return rc;
    gd_size(&s, &c, est, plan_rows, &z);
    *bytes = z.fixed + z.min_slots * z.per_slot;
    return OC_OK;
}

/* A plan batch from its extracted record; anything else copied or read (gd_gather). */
static int gd_gather_at(struct oc_store *s, uint64_t epoch, uint64_t batch, const uint64_t *ids,
                        uint64_t n, float *out, struct oc_err *err)
{
    if (epoch == STORE_OFF_PLAN)
        return gd_gather(s, ids, n, out, err);
    return gd_gather_batch(s, epoch, batch, ids, n, out, err);
}

/* The next batch to serve (gd_next_batch); the batches are the pipeline's to sample. */
static int gd_load(struct oc_store *s, uint64_t epoch, uint64_t *batch, struct oc_sample_batch *out,
                   struct oc_err *err)
{
    if (out)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "store gnndrive: does not sample batches");
    return gd_next_batch(s, epoch, batch, err);
}

/* The options `offcore train` offers for this strategy (store.h, struct oc_store_opt). */
static const struct oc_store_opt gnndrive_opts[] = {
    {"extractors", OC_STORE_OPT_U32, "N", NULL, "extractor threads (2)",
     offsetof(struct gd_opts, n_extractors), 1, 0, 0, 0, NULL},
    {"samplers", OC_STORE_OPT_U32, "N", NULL,
     "sampler threads, each sampling whole batches (0 = 4 with --topology disk, else one per "
     "two cores, 1 to 4)",
     offsetof(struct gd_opts, n_samplers), 0, 0, 0, 0, NULL},
    {"reorder", OC_STORE_OPT_FLAG, NULL, NULL,
     "train batches in completion order, as GNNDrive (not bitwise reproducible)",
     offsetof(struct gd_opts, reorder), 0, 1, 0, 0, NULL},
    {"hyperbatch", OC_STORE_OPT_F64, "F", NULL,
     "share of --mem-budget for two groups of the fed batches' buffer misses, each read in one "
     "block pass per group (AGNES's hyperbatches); 0 = each batch reads its own",
     offsetof(struct gd_opts, hyperbatch), 0, 0, 0, 0.9, NULL},
    {"hyperbatch-disk", OC_STORE_OPT_FLAG, NULL, NULL, STORE_HYPER_DISK_HELP,
     offsetof(struct gd_opts, hyperbatch_disk), 0, 0, 0, 0, NULL},
};

static double gd_standby_reuse(const struct oc_store_stats *s)
{
    return (double)s->standby_hits / (double)(s->requested_rows ? s->requested_rows : 1);
}

/* Rows reused from released buffer slots (the standby LRU list), per requested row;
   CPU seconds of the extract stage per GiB read. */
static const struct oc_store_stat gnndrive_stat_table[] = {
    {NULL, "standby_reuse_ratio", "Standby reuse", OC_STORE_STAT_RATIO, gd_standby_reuse, 0},
    {NULL, "io_cpu_s_per_gib", "I/O CPU s/GiB", OC_STORE_STAT_RATIO, store_io_cpu_s_per_gib, 0},
    STORE_HYPER_STAT,
};

const struct store_strategy oc_store_gnndrive = {
    .name = "gnndrive",
    .no_reuse_samples = "it samples every epoch ahead of training",
    .summary = "asynchronous extraction: extractor and releaser stages, rows placed as "
               "their io_uring reads complete, over a reference-counted feature buffer "
               "with a standby LRU list (GNNDrive)",
    .open = gd_open,
    .sampled = gd_prepare,
    .load = gd_load,
    .gather = gd_gather_at,
    .stats = gd_stats,
    .free = gd_free,
    .opts = gnndrive_opts,
    .n_opts = sizeof(gnndrive_opts) / sizeof(gnndrive_opts[0]),
    .opts_size = sizeof(struct gd_opts),
    .stat_table = gnndrive_stat_table,
    .n_stats = sizeof(gnndrive_stat_table) / sizeof(gnndrive_stat_table[0]),
    .serves_accesses = 1, /* its own feeder over the access map (store_feed_start) */
};
