/*
 * generate.c — `offcore generate`: options, validation and the order of the
 * generation phases (see include/offcore/generate.h):
 *
 *   communities (gen_comm.c, optional) ─► classes (hash of seed, node) ─►
 *   graph (gen_graph.c: draws ─► edge sorter ─► indptr/indices) ─►
 *   features (gen_features.c) ─► labels, splits ─► manifest, commit
 *
 * Place in the data flow: dataset (generate → edge sorter → builder).
 * Thread-safety: one generation per call; it owns a pool for its duration.
 * Ownership: options are borrowed; everything allocated is freed before
 * returning, and on failure the builder removes the partial output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/dataset_int.h"
#include "dataset/gen_int.h"

void oc_generate_opts_default(struct oc_generate_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->n_nodes = 100000;
    o->avg_degree = 15.0;
    o->feat_dim = 128;
    o->n_classes = 10;
    o->feat_dtype = OC_DTYPE_F32;
    o->seed = 0;
    o->homophily = 0.5;
    o->power_law = 2.2;
    o->communities = 0;
    o->mixing = NAN;
    o->feat_signal = 1.6;
    o->train_frac = 0.10;
    o->val_frac = 0.05;
    o->test_frac = 0.10;
    o->n_threads = 0;
    o->mem_bytes = 0;
}

static int validate(const struct oc_generate_opts *o, struct oc_err *err)
{
    if (o->n_nodes < 2 || o->n_nodes >= ((uint64_t)1 << 32) - 1)
        return OC_ERR(err, OC_ERR_ARG, "generate: --nodes must be in [2, 2^32 - 1), got %llu",
                      (unsigned long long)o->n_nodes);
    if (!(o->avg_degree > 0) || o->avg_degree >= (double)o->n_nodes)
        return OC_ERR(err, OC_ERR_ARG, "generate: --avg-degree must be in (0, nodes), got %g",
                      o->avg_degree);
    if (o->n_classes < 1 || o->n_classes > GEN_MAX_CLASSES)
        return OC_ERR(err, OC_ERR_ARG, "generate: --classes must be in [1, %u], got %u",
                      GEN_MAX_CLASSES, o->n_classes);
    if (o->feat_dtype != OC_DTYPE_F32 && o->feat_dtype != OC_DTYPE_F16)
        return OC_ERR(err, OC_ERR_ARG, "generate: feature dtype must be f32 or f16, got %s",
                      oc_dtype_name(o->feat_dtype));
    if (!(o->homophily >= 0 && o->homophily <= 1))
        return OC_ERR(err, OC_ERR_ARG, "generate: --homophily must be in [0, 1], got %g",
                      o->homophily);
    if (!(o->power_law > 1.0 && o->power_law <= 100.0))
        return OC_ERR(err, OC_ERR_ARG, "generate: --power-law must be in (1, 100], got %g",
                      o->power_law);
    if (o->communities == 0 && !isnan(o->mixing))
        return OC_ERR(err, OC_ERR_ARG,
                      "generate: --mixing %g needs --communities (the mean community size)",
                      o->mixing);
    if (o->communities != 0 && (o->communities < 2 || o->communities > o->n_nodes))
        return OC_ERR(err, OC_ERR_ARG,
                      "generate: --communities must be 0 (none) or in [2, nodes = %llu], got %llu",
                      (unsigned long long)o->n_nodes, (unsigned long long)o->communities);
    if (!isnan(o->mixing) && !(o->mixing >= 0 && o->mixing <= 1))
        return OC_ERR(err, OC_ERR_ARG, "generate: --mixing must be in [0, 1], got %g", o->mixing);
    if (!(o->feat_signal >= 0 && o->feat_signal < 1e6))
        return OC_ERR(err, OC_ERR_ARG, "generate: --feat-signal must be >= 0, got %g",
                      o->feat_signal);
    if (!(o->train_frac >= 0 && o->val_frac >= 0 && o->test_frac >= 0 &&
          o->train_frac + o->val_frac + o->test_frac <= 1.0 + 1e-9))
        return OC_ERR(err, OC_ERR_ARG,
                      "generate: split fractions must be >= 0 and sum to <= 1, got %g/%g/%g",
                      o->train_frac, o->val_frac, o->test_frac);
    return OC_OK;
}

/* Shortest of %.15g / %.17g that reads back as v (so 2.2 prints as "2.2"). */
static const char *fmt_g(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, n, "%.17g", v);
    return buf;
}

static void fill_manifest(const struct oc_generate_opts *o, struct oc_manifest *m)
{
    char d[32], h[32], p[32], s[32], tr[32], va[32], te[32];
    snprintf(m->name, sizeof(m->name), "generated");
    m->n_nodes = o->n_nodes;
    m->feat_dim = o->feat_dim;
    m->n_classes = o->n_classes;
    m->feat_dtype = o->feat_dtype;
    m->directed = 0;
    /* Every option that shapes the output; not threads or sort memory, which do not. */
    snprintf(m->provenance, sizeof(m->provenance),
             "offcore generate --nodes %llu --avg-degree %s --feat-dim %u --classes %u "
             "--dtype %s --seed %llu --homophily %s --power-law %s --feat-signal %s "
             "--train-frac %s --val-frac %s --test-frac %s",
             (unsigned long long)o->n_nodes, fmt_g(d, sizeof(d), o->avg_degree), o->feat_dim,
             o->n_classes, oc_dtype_name(o->feat_dtype), (unsigned long long)o->seed,
             fmt_g(h, sizeof(h), o->homophily), fmt_g(p, sizeof(p), o->power_law),
             fmt_g(s, sizeof(s), o->feat_signal), fmt_g(tr, sizeof(tr), o->train_frac),
             fmt_g(va, sizeof(va), o->val_frac), fmt_g(te, sizeof(te), o->test_frac));
    if (o->communities) { /* appended: without communities the provenance is what it was */
        size_t len = strlen(m->provenance);
        double mu = isnan(o->mixing) ? OC_GENERATE_MIXING_DEFAULT : o->mixing;
        snprintf(m->provenance + len, sizeof(m->provenance) - len,
                 " --communities %llu --mixing %s", (unsigned long long)o->communities,
                 fmt_g(d, sizeof(d), mu));
    }
}

int oc_generate(const struct oc_generate_opts *o, const char *out, struct oc_progress *progress,
                struct oc_err *err)
{
    struct oc_gen g;
    struct oc_ds_builder *b = NULL;
    memset(&g, 0, sizeof(g));
    int rc = validate(o, err);
    if (rc != OC_OK)
        return rc;
    /*
     * The size gate, before anything is created: the options alone decide the
     * size, so the ceiling (--max-size, default 64 GiB) stands in for what an
     * input would vouch for; then the free space at out.
     */
    uint64_t n_draws = (uint64_t)llround((double)o->n_nodes * o->avg_degree / 2.0);
    struct oc_ds_size s = {
        .n_nodes = o->n_nodes,
        .n_edges = 2 * n_draws,
        .feat_dim = o->feat_dim,
        .feat_dtype = o->feat_dtype,
        .labels = 1,
        .n_split_ids =
            (uint64_t)((o->train_frac + o->val_frac + o->test_frac) * (double)o->n_nodes) + 3,
    };
    rc = oc_ds_size_check(&s, out, o->max_bytes ? o->max_bytes : OC_GENERATE_MAX_BYTES,
                          "--max-size", err);
    if (rc != OC_OK)
        return rc;
    g.o = *o;
    if (g.o.mem_bytes == 0)
        g.o.mem_bytes = (uint64_t)1 << 30;
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned cores = n_cpu > 0 ? (unsigned)n_cpu : 1;
    unsigned threads = o->n_threads ? o->n_threads : cores;
    /*
     * Threads beyond a few per core add no speed, only per-thread buffers
     * (each holds its slots of edge and feature rows); the output does not
     * depend on the count, so it is capped.
     */
    unsigned max_threads = 4 * cores < 64 ? 64 : 4 * cores;
    if (threads > max_threads) {
        oc_log(OC_LOG_WARN, "generate: --threads %u capped at %u (4 per core, at least 64)",
               threads, max_threads);
        threads = max_threads;
    }
    g.progress = progress;
    if ((rc = oc_pool_new(threads, &g.pool, err)) != OC_OK)
        goto out;
    if ((rc = oc_ds_builder_new(out, &b, err)) != OC_OK)
        goto out;
    fill_manifest(&g.o, oc_ds_builder_manifest(b));
    if ((rc = oc_gen_comm_init(&g, err)) != OC_OK || (rc = oc_gen_classes(&g, err)) != OC_OK ||
        (rc = oc_gen_graph(&g, b, err)) != OC_OK || (rc = oc_gen_features(&g, b, err)) != OC_OK ||
        (rc = oc_gen_labels_splits(&g, b, err)) != OC_OK)
        goto out;
    rc = oc_ds_builder_commit(b, err);
out:
    oc_ds_builder_free(b);
    oc_pool_free(g.pool);
    oc_free(g.cls);
    oc_free(g.class_thr);
    oc_gen_comm_deinit(&g.comm);
    oc_progress_finish(progress);
    return rc;
}
