/*
 * store_int.h — private to src/store: the shared store layer's interface, in
 * one include for the strategies and the layer's own files. It is split by
 * topic, each header usable alone (and including the ones it builds on):
 *
 *   strategy_int.h  the strategy vtable, struct oc_store, the registry's
 *                   helpers (options struct, stage pipeline and its error,
 *                   plan order)                          registry.c, opts.c
 *   rows_int.h      a node's row and offset, row conversion, pool loops
 *                   over rows, batch sizing, the O_DIRECT row reader
 *                   (struct store_disk) with lanes       rows.c
 *   cache_int.h     a RAM cache of rows (struct store_cache) and its
 *                   give-back (struct store_yield)       cache.c, cache_yield.c
 *   hyper_int.h     hyperbatches: the coming batches' misses read in groups
 *                                                        hyper.c
 *   sampling_int.h  samplers a strategy drives itself, the feeder, hotness,
 *                   plan files' keys        sampling.c, feed.c, hot.c, plan_key.c
 *
 *   strategy_int.h ◄── rows_int.h ◄── cache_int.h ◄── hyper_int.h
 *          ▲
 *          └────────── sampling_int.h
 *
 * Place in the data flow: registry.c dispatches oc_store_* calls to the
 * strategies (strategy_int.h); a strategy folder's headers are its own
 * (tools/check_deps.sh: no other strategy includes them). A strategy's
 * options struct (the fields its option table's offsets point into, filled
 * by store_opts_read) and its test knobs are in its private header
 * (static/static_int.h, gnndrive/gnndrive_int.h, ginex/ginex_int.h,
 * diskgnn/diskgnn_int.h, helios/helios_int.h, outre/outre_int.h), which
 * tests include.
 * Thread-safety and ownership: per topic, in each header.
 */
#ifndef OFFCORE_STORE_INT_H
#define OFFCORE_STORE_INT_H

#include "store/cache_int.h"
#include "store/hyper_int.h"
#include "store/rows_int.h"
#include "store/sampling_int.h"
#include "store/strategy_int.h"

#endif
