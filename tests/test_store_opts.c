/*
 * test_store_opts.c — the strategies' own options (store.h, struct
 * oc_store_opt): every table's offsets lie in the strategy's own options
 * struct (opts_size) without overlapping, a value set through
 * oc_store_opt_apply reaches exactly its field through store_opts_read, and
 * so do the defaults; values out of range, another strategy's options in a
 * config, and a config holding one strategy's options opened as another are
 * refused with errors naming the option and the strategies.
 *
 * Place in the data flow: tests of store (registry; generate → dataset →
 * store for the open checks).
 * Thread-safety: single-threaded.
 * Ownership: the fixture is freed by the test that made it.
 */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "store_fixture.h"

/* Bytes of an option's field as the strategies declare them. */
static size_t field_bytes(const struct oc_store_opt *opt)
{
    return opt->type == OC_STORE_OPT_U32   ? sizeof(uint32_t)
           : opt->type == OC_STORE_OPT_F64 ? sizeof(double)
                                           : sizeof(int);
}

/* The value of opt's field in an options struct, as a double. */
static double field_value(const void *opts, const struct oc_store_opt *opt)
{
    const unsigned char *p = (const unsigned char *)opts + opt->offset;
    if (opt->type == OC_STORE_OPT_U32) {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    if (opt->type == OC_STORE_OPT_F64) {
        double v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    int v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* A valid value other than 0 for opt (its last choice, a flag set, a number in range). */
static double some_value(const struct oc_store_opt *opt)
{
    switch (opt->type) {
    case OC_STORE_OPT_U32:
        return opt->min + 3;
    case OC_STORE_OPT_F64:
        return opt->max > opt->min ? (opt->min + opt->max) / 2 + 0.125 : opt->min + 1.5;
    case OC_STORE_OPT_FLAG:
        return 1;
    default: {
        double n = 1;
        for (const char *c = opt->choices; *c; c++)
            n += *c == '|';
        return n - 1;
    }
    }
}

OC_TEST(tables_fit_their_struct)
{
    uint32_t n_with = 0;
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const struct store_strategy *st = store_strategy_at(i);
        OC_CHECK(st && st->n_opts == oc_store_strategy_n_opts(i));
        OC_CHECK(st->n_opts <= OC_STORE_MAX_OPTS);
        OC_CHECK((st->n_opts == 0) == (st->opts_size == 0));
        n_with += st->n_opts > 0;
        for (uint32_t k = 0; k < st->n_opts; k++) {
            const struct oc_store_opt *a = &st->opts[k];
            OC_CHECK(a->offset + field_bytes(a) <= st->opts_size);
            for (uint32_t j = 0; j < k; j++) { /* no two fields overlap */
                const struct oc_store_opt *b = &st->opts[j];
                OC_CHECK(a->offset + field_bytes(a) <= b->offset ||
                         b->offset + field_bytes(b) <= a->offset);
            }
            /* a name is found in its strategy's table; one several strategies declare
               (--hyperbatch) has the same type in each (the CLI parses it once) */
            uint32_t owner;
            const struct oc_store_opt *found, *first;
            OC_CHECK(oc_store_opt_find_in(i, a->name, &found) == OC_OK && found == a);
            OC_CHECK(oc_store_opt_find(a->name, &owner, &first) == OC_OK && owner <= i &&
                     first->type == a->type);
        }
        OC_CHECK(st->opts_size <= 256);
    }
    OC_CHECK(n_with >= 6); /* static, gnndrive, ginex, diskgnn, helios, outre */
}

/* Sets opt to value in a fresh config and reads the strategy's struct back. */
static void round_trip(uint32_t i, uint32_t k, double value)
{
    const struct store_strategy *st = store_strategy_at(i);
    const struct oc_store_opt *opt = &st->opts[k];
    struct oc_store_config c;
    struct oc_err err;
    double buf[32]; /* aligned for any options struct */
    memset(&c, 0, sizeof(c));
    OC_CHECK_OK(oc_store_opt_apply(opt, value, &c, &err), &err);
    OC_CHECK(c.opts.strategy == i + 1);
    memset(buf, 0xa5, sizeof(buf));
    store_opts_read(st, &c, buf);
    for (uint32_t j = 0; j < st->n_opts; j++) {
        double got = field_value(buf, &st->opts[j]);
        double want = j == k ? value : 0;
        if (got != want)
            fprintf(stderr, "  %s --%s = %g: field of --%s is %g, want %g\n", st->name, opt->name,
                    value, st->opts[j].name, got, want);
        OC_CHECK(got == want);
    }
}

OC_TEST(values_and_defaults_reach_their_fields)
{
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++) {
        const struct store_strategy *st = store_strategy_at(i);
        for (uint32_t k = 0; k < st->n_opts; k++) {
            round_trip(i, k, some_value(&st->opts[k]));
            if (st->opts[k].dflt != 0)
                round_trip(i, k, st->opts[k].dflt);
        }
        /* a config holding none of its options reads as all zero */
        struct oc_store_config c;
        double buf[32];
        memset(&c, 0, sizeof(c));
        memset(buf, 0xa5, sizeof(buf));
        store_opts_read(st, &c, buf);
        for (uint32_t k = 0; k < st->n_opts; k++)
            OC_CHECK(field_value(buf, &st->opts[k]) == 0);
    }
}

OC_TEST(bad_values_are_refused_by_name)
{
    struct oc_store_config c;
    struct oc_err err;
    memset(&c, 0, sizeof(c));
    OC_CHECK_ERR(oc_store_opt_set(&c, "superbatch", 0, &err), OC_ERR_ARG, &err,
                 "--superbatch must be a whole number from 1");
    OC_CHECK_ERR(oc_store_opt_set(&c, "extractors", 2.5, &err), OC_ERR_ARG, &err,
                 "--extractors must be a whole number");
    OC_CHECK_ERR(oc_store_opt_set(&c, "admit", 1.5, &err), OC_ERR_ARG, &err,
                 "--admit must be a number from 0 to 1");
    OC_CHECK_ERR(oc_store_opt_set(&c, "disk-budget", NAN, &err), OC_ERR_ARG, &err,
                 "--disk-budget must be a finite number");
    OC_CHECK_ERR(oc_store_opt_set(&c, "hotness", 2, &err), OC_ERR_ARG, &err,
                 "--hotness: value 2 out of range");
    OC_CHECK_ERR(oc_store_opt_set(&c, "no-such-option", 1, &err), OC_ERR_ARG, &err,
                 "no strategy has an option --no-such-option");
    OC_CHECK(c.opts.strategy == 0); /* nothing refused was set */
    /* one strategy's options per config */
    OC_CHECK_OK(oc_store_opt_set(&c, "superbatch", 8, &err), &err);
    OC_CHECK_ERR(oc_store_opt_set(&c, "reorder", 1, &err), OC_ERR_ARG, &err,
                 "--reorder is gnndrive's option; the config holds ginex's options");
    OC_CHECK_OK(oc_store_opt_set(&c, "superbatch", 16, &err), &err); /* the same: replaced */
}

OC_TEST(open_refuses_options_not_its_own)
{
    struct fixture fx;
    struct oc_err err;
    struct oc_store *s = NULL;
    uint32_t direct, ginex;
    if (!fixture_init(&fx, 300, 8, OC_DTYPE_F32)) {
        fixture_free(&fx);
        return;
    }
    uint64_t live = oc_mem_n_live();
    OC_CHECK_OK(oc_store_strategy_find("direct", &direct, &err), &err);
    OC_CHECK_OK(oc_store_strategy_find("ginex", &ginex, &err), &err);
    struct oc_store_config c = fixture_config(&fx, NULL);
    fixture_opt(&c, "superbatch", 4);
    OC_CHECK_ERR(oc_store_open(direct, &c, &s, &err), OC_ERR_ARG, &err,
                 "store direct: options given are ginex's (--superbatch needs --strategy ginex)");
    OC_CHECK(s == NULL);
    /* a value written past the checks is refused at open, by name */
    c.opts.v[0] = 0.5;
    OC_CHECK_ERR(oc_store_open(ginex, &c, &s, &err), OC_ERR_ARG, &err,
                 "store ginex: --superbatch must be a whole number from 1");
    c.opts.strategy = 1000;
    OC_CHECK_ERR(oc_store_open(ginex, &c, &s, &err), OC_ERR_ARG, &err, "unknown strategy");
    /* without options every strategy opens as before */
    memset(&c.opts, 0, sizeof(c.opts));
    OC_CHECK_OK(oc_store_open(direct, &c, &s, &err), &err);
    oc_store_free(s);
    OC_CHECK(oc_mem_n_live() == live);
    fixture_free(&fx);
}

/* Every figure of a strategy's stats table that is a field of the stats reads that field (seconds
   from microseconds), and nothing else: each one alone set in otherwise zeroed stats. */
OC_TEST(stat_figures_read_their_fields)
{
    uint32_t n_fields = 0;
    for (uint32_t i = 0; i < oc_store_n_strategies(); i++)
        for (uint32_t k = 0; k < oc_store_strategy_n_stats(i); k++) {
            const struct oc_store_stat *f = oc_store_strategy_stat(i, k);
            struct oc_store_stats st;
            memset(&st, 0, sizeof(st));
            if (f->value)
                continue;
            n_fields++;
            OC_CHECK(f->field % sizeof(uint64_t) == 0 && f->field + 8 <= sizeof(st));
            OC_CHECK(oc_store_stat_value(f, &st) == 0.0);
            uint64_t v = 2500000;
            memcpy((uint8_t *)&st + f->field, &v, sizeof(v));
            double want = f->unit == OC_STORE_STAT_SECONDS ? 2.5 : 2500000.0;
            if (oc_store_stat_value(f, &st) != want)
                fprintf(stderr, "  %s: figure %s reads %g, not %g\n", oc_store_strategy_name(i),
                        f->key, oc_store_stat_value(f, &st), want);
            OC_CHECK(oc_store_stat_value(f, &st) == want);
        }
    OC_CHECK(n_fields >= 10); /* diskgnn's, ginex's, helios's and outre's */
}

OC_TEST_MAIN()
