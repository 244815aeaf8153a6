/*
 * kg_names.h — private to src/kg: a string → dense id map (kg_names.c).
 *
 * Place in the data flow: kg import.
 * Thread-safety: one thread per map. Ownership: the map owns its key copies.
 */
#ifndef OFFCORE_KG_NAMES_H
#define OFFCORE_KG_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"

struct oc_kg_name_slot {
    const char *key;
    size_t len;
    uint64_t hash;
    uint32_t id;
};

struct oc_kg_names {
    struct oc_kg_name_slot *slots;
    uint64_t cap, n;
    char **blocks;
    uint32_t n_blocks;
    size_t used, block_cap;
};

void oc_kg_names_init(struct oc_kg_names *m);
void oc_kg_names_deinit(struct oc_kg_names *m);
/* 1 and *id when key is known, else 0. */
int oc_kg_names_find(const struct oc_kg_names *m, const char *key, size_t n, uint32_t *id);
/* The id of key, adding it (next dense id) when new. */
int oc_kg_names_get(struct oc_kg_names *m, const char *key, size_t n, uint32_t *id,
                    struct oc_err *err);

#endif
