/*
 * static_int.h — private to src/store/static: the options of the `static`
 * strategy and its test knobs (static.c), which tests include to look inside
 * its cache.
 *
 * Place in the data flow: store (static); nothing outside the folder and
 * tests calls these.
 * Thread-safety: read a store no other thread gathers on at the moment.
 * Ownership: nothing is handed out.
 */
#ifndef OFFCORE_STORE_STATIC_INT_H
#define OFFCORE_STORE_STATIC_INT_H

#include "store/store_int.h"

/* The options `offcore train` offers for static (its table in static.c; store_opts_read). */
struct static_store_opts {
    enum oc_store_hotness hotness; /* how rows are ranked for the cache */
    double hyperbatch;             /* share of mem_bytes that stages the misses of the coming
                                      batches (store/hyper.c); 0 = none */
    int hyperbatch_disk;           /* its groups staged on disk (--hyperbatch-disk) */
};

/*
 * For a `static` store: whether row id is in its RAM cache; how many rows
 * are; how many of the rows it chose it gave back to the budget and holds no
 * more. 0 otherwise.
 */
int oc_store_static_is_cached(const struct oc_store *s, uint64_t id);
uint64_t oc_store_static_n_cached(const struct oc_store *s);
uint64_t oc_store_static_n_given_up(const struct oc_store *s);

#endif
