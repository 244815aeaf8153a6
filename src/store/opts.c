/*
 * opts.c — strategies' own options: each registered strategy's table of
 * `--NAME VALUE` options (struct oc_store_opt), found by name (in one
 * strategy's table, or the first that declares it), checked and applied to
 * a struct oc_store_config's values, checked again at open against the
 * strategy the store opens (store_opts_check), and read by the strategy into
 * its own options struct (store_opts_read).
 *
 * Place in the data flow: store, beside registry.c (whose table it walks
 * through store_strategy_at); train and the CLI set options through it.
 * Thread-safety: the tables are constant; a config belongs to its caller.
 * Ownership: nothing is held.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

#define N_STRATEGIES oc_store_n_strategies()

uint32_t oc_store_strategy_n_opts(uint32_t strategy)
{
    return strategy < N_STRATEGIES ? store_strategy_at(strategy)->n_opts : 0;
}

const struct oc_store_opt *oc_store_strategy_opt(uint32_t strategy, uint32_t k)
{
    if (strategy >= N_STRATEGIES || k >= store_strategy_at(strategy)->n_opts)
        return NULL;
    return &store_strategy_at(strategy)->opts[k];
}

int oc_store_opt_find(const char *name, uint32_t *strategy, const struct oc_store_opt **opt)
{
    for (uint32_t i = 0; i < N_STRATEGIES; i++)
        for (uint32_t k = 0; k < store_strategy_at(i)->n_opts; k++)
            if (name && strcmp(name, store_strategy_at(i)->opts[k].name) == 0) {
                *strategy = i;
                *opt = &store_strategy_at(i)->opts[k];
                return OC_OK;
            }
    return OC_ERR_NOTFOUND;
}

int oc_store_opt_find_in(uint32_t strategy, const char *name, const struct oc_store_opt **opt)
{
    for (uint32_t k = 0; name && strategy < N_STRATEGIES && k < store_strategy_at(strategy)->n_opts;
         k++)
        if (strcmp(name, store_strategy_at(strategy)->opts[k].name) == 0) {
            *opt = &store_strategy_at(strategy)->opts[k];
            return OC_OK;
        }
    return OC_ERR_NOTFOUND;
}

/* Where opt sits in the registry: its strategy's index and its place in that table. */
static int opt_place(const struct oc_store_opt *opt, uint32_t *strategy, uint32_t *k)
{
    for (uint32_t i = 0; i < N_STRATEGIES; i++)
        for (uint32_t j = 0; j < store_strategy_at(i)->n_opts; j++)
            if (opt == &store_strategy_at(i)->opts[j]) {
                *strategy = i;
                *k = j;
                return OC_OK;
            }
    return OC_ERR_NOTFOUND;
}

/* Number of '|'-separated values in a choices string. */
static uint32_t n_choices(const char *choices)
{
    uint32_t n = 1;
    for (const char *c = choices; *c; c++)
        n += *c == '|';
    return n;
}

/* Whether value is one opt accepts: OC_ERR_ARG naming --<name> otherwise. */
static int opt_check(const struct oc_store_opt *opt, double value, struct oc_err *err)
{
    switch (opt->type) {
    case OC_STORE_OPT_U32:
        if (!(value >= opt->min && value <= (double)UINT32_MAX) || value != (double)(uint32_t)value)
            return OC_ERR(err, OC_ERR_ARG, "--%s must be a whole number from %.0f to %u", opt->name,
                          opt->min, UINT32_MAX);
        return OC_OK;
    case OC_STORE_OPT_F64:
        if (opt->max > opt->min && !(value >= opt->min && value <= opt->max))
            return OC_ERR(err, OC_ERR_ARG, "--%s must be a number from %g to %g", opt->name,
                          opt->min, opt->max);
        if (!(value >= opt->min) || !(value < 1e300))
            return OC_ERR(err, OC_ERR_ARG, "--%s must be a finite number >= %g", opt->name,
                          opt->min);
        return OC_OK;
    case OC_STORE_OPT_FLAG:
    case OC_STORE_OPT_CHOICE: {
        uint32_t n = opt->type == OC_STORE_OPT_FLAG ? 2 : n_choices(opt->choices);
        if (!(value >= 0 && value < (double)n) || value != (double)(int)value)
            return OC_ERR(err, OC_ERR_ARG, "--%s: value %g out of range", opt->name, value);
        return OC_OK;
    }
    default:
        return OC_ERR(err, OC_ERR_INTERNAL, "--%s: unknown option type %d", opt->name,
                      (int)opt->type);
    }
}

_Static_assert(sizeof(enum oc_store_hotness) == sizeof(int), "choice fields are int-sized enums");

int oc_store_opt_apply(const struct oc_store_opt *opt, double value, struct oc_store_config *cfg,
                       struct oc_err *err)
{
    int rc = opt_check(opt, value, err);
    if (rc || !cfg)
        return rc;
    uint32_t strategy, k;
    if (opt_place(opt, &strategy, &k) != OC_OK)
        return OC_ERR(err, OC_ERR_ARG, "--%s: not an option of a registered strategy", opt->name);
    if (cfg->opts.strategy && cfg->opts.strategy != strategy + 1)
        return OC_ERR(err, OC_ERR_ARG, "--%s is %s's option; the config holds %s's options",
                      opt->name, store_strategy_at(strategy)->name,
                      store_strategy_at(cfg->opts.strategy - 1)->name);
    OC_ASSERT(k < OC_STORE_MAX_OPTS);
    cfg->opts.strategy = strategy + 1;
    cfg->opts.v[k] = value;
    return OC_OK;
}

int oc_store_opt_set(struct oc_store_config *cfg, const char *name, double value,
                     struct oc_err *err)
{
    uint32_t strategy;
    const struct oc_store_opt *opt;
    if (cfg && cfg->opts.strategy &&
        oc_store_opt_find_in(cfg->opts.strategy - 1, name, &opt) == OC_OK)
        return oc_store_opt_apply(opt, value, cfg, err);
    if (oc_store_opt_find(name, &strategy, &opt) != OC_OK)
        return OC_ERR(err, OC_ERR_ARG, "no strategy has an option --%s", name ? name : "(null)");
    return oc_store_opt_apply(opt, value, cfg, err);
}

/* The index of a registered strategy (oc_store_n_strategies() for one that is not). */
static uint32_t strategy_index(const struct store_strategy *st)
{
    uint32_t i = 0;
    while (i < N_STRATEGIES && store_strategy_at(i) != st)
        i++;
    return i;
}

/* Size in bytes of an option's field in its strategy's options struct. */
static size_t opt_field_bytes(const struct oc_store_opt *opt)
{
    switch (opt->type) {
    case OC_STORE_OPT_U32:
        return sizeof(uint32_t);
    case OC_STORE_OPT_F64:
        return sizeof(double);
    default:
        return sizeof(int);
    }
}

void store_opts_read(const struct store_strategy *st, const struct oc_store_config *cfg, void *out)
{
    memset(out, 0, st->opts_size);
    int mine = cfg && cfg->opts.strategy && cfg->opts.strategy - 1 == strategy_index(st);
    for (uint32_t k = 0; k < st->n_opts; k++) {
        const struct oc_store_opt *opt = &st->opts[k];
        uint8_t *field = (uint8_t *)out + opt->offset;
        double value = mine ? cfg->opts.v[k] : 0.0;
        OC_ASSERT(opt->offset + opt_field_bytes(opt) <= st->opts_size);
        if (opt->type == OC_STORE_OPT_U32) {
            uint32_t v = (uint32_t)value;
            memcpy(field, &v, sizeof(v));
        } else if (opt->type == OC_STORE_OPT_F64) {
            memcpy(field, &value, sizeof(value));
        } else {
            int v = (int)value;
            memcpy(field, &v, sizeof(v));
        }
    }
}

/*
 * cfg's options belong to strategy `index` (or none are set) and each set
 * one is valid (a nonzero value checked as oc_store_opt_apply would: 0 is
 * every option's "not given").
 */
int store_opts_check(uint32_t index, const struct oc_store_config *cfg, struct oc_err *err)
{
    const struct store_strategy *st = store_strategy_at(index);
    if (st->n_opts > OC_STORE_MAX_OPTS)
        return OC_ERR(err, OC_ERR_INTERNAL, "store %s: %u options (at most %d)", st->name,
                      st->n_opts, OC_STORE_MAX_OPTS);
    for (uint32_t k = 0; k < st->n_opts; k++)
        if (st->opts[k].offset + opt_field_bytes(&st->opts[k]) > st->opts_size)
            return OC_ERR(err, OC_ERR_INTERNAL,
                          "store %s: --%s lies past its options struct (%zu bytes)", st->name,
                          st->opts[k].name, st->opts_size);
    if (cfg->opts.strategy == 0)
        return OC_OK;
    if (cfg->opts.strategy > N_STRATEGIES)
        return OC_ERR(err, OC_ERR_ARG, "store %s: options of unknown strategy %u", st->name,
                      cfg->opts.strategy - 1);
    if (cfg->opts.strategy != index + 1) {
        const struct store_strategy *other = store_strategy_at(cfg->opts.strategy - 1);
        return OC_ERR(err, OC_ERR_ARG,
                      "store %s: options given are %s's (--%s needs --strategy %s)", st->name,
                      other->name, other->n_opts ? other->opts[0].name : "?", other->name);
    }
    for (uint32_t k = 0; k < st->n_opts; k++) {
        int rc = cfg->opts.v[k] != 0.0 ? opt_check(&st->opts[k], cfg->opts.v[k], err) : OC_OK;
        if (rc)
            return err ? oc_err_prefix(err, "store %s", st->name) : rc;
    }
    return OC_OK;
}
