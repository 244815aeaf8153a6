/*
 * kg_atoms.c — atom maps and the Atom Cache of TIGER (thesis section V-A):
 * an atom is one entity's facts (its 1-hop query subgraph). A map is
 * direct-addressed, entity ─► pointer to rel[0..k) followed by tail[0..k),
 * so a lookup is O(1) and extraction copies the very facts the fact graph
 * holds, in its order: the subgraphs, hence the weights, do not change.
 *
 *   Atom Cache: entities by degree (descending, ties by id) ──► as many as
 *               fit in its bytes (its index included) ──► their facts read
 *               once through the fact graph's reader into one pool (an
 *               accounted anonymous mapping), in that order. Index: core's
 *               rank set of the cached entities (a bit per entity, counts per
 *               64; filled in degree order, then sealed), so e's rank among
 *               them is O(1), and at[rank] its place in the pool (or gone)
 *   giving back (core's oc_giveback, under a budget; give_back its policy): the last
 *               atoms of the pool (lowest degree) are marked gone, their
 *               whole pages go back; with none left, the index goes. The
 *               cache is not filled again (the largest queries that asked
 *               come back every epoch); what left is read from the fact
 *               graph, the same facts
 *
 * A cache whose bytes do not even hold the index is empty (index.bits NULL).
 *
 * Place in the data flow: kg (kg_tiger.c, kg_train.c ──► here ──► kg_facts.c).
 * Thread-safety: the cache is built by one thread; read by the extraction
 * workers and TIGER's planner under the read side of its lock
 * (kg_atom_cache_read_lock, nothing allocated inside); the give-back, on
 * whichever thread asks for memory, takes the write side, waiting at most
 * OC_RECLAIM_WAIT_S, and gives nothing if that thread holds the read side. A map
 * has no lock: one thread changes it while nobody reads it.
 * Ownership: a map borrows the facts it points to; the cache owns its pool
 * and index.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kg/kg_tiger_int.h"

#define GONE UINT64_MAX /* at[]: an atom given back */

int kg_atoms_init(struct kg_atoms *a, uint64_t n_entities, struct oc_err *err)
{
    (void)err;
    memset(a, 0, sizeof(*a));
    a->n_entities = n_entities;
    oc_id_map_init(&a->index);
    return OC_OK;
}

void kg_atoms_deinit(struct kg_atoms *a)
{
    oc_id_map_deinit(&a->index);
    oc_free((void *)a->facts);
    memset(a, 0, sizeof(*a));
}

int kg_atoms_put(struct kg_atoms *a, uint32_t e, const uint32_t *facts, struct oc_err *err)
{
    if (e >= a->n_entities)
        return OC_ERR(err, OC_ERR_FORMAT, "kg atom map: entity %u out of range (%llu entities)", e,
                      (unsigned long long)a->n_entities);
    OC_KG_TRY(oc_grow(&a->facts, &a->cap, a->n + 1, sizeof(*a->facts), 1024, "kg atom map", err));
    OC_KG_TRY(oc_id_map_reserve(&a->index, a->n + 1, "kg atom map", err));
    int inserted;
    uint32_t i = oc_id_map_get_or_put(&a->index, e, (uint32_t)a->n, &inserted);
    a->facts[i] = facts; /* if present: the same facts from another slice */
    a->n += (uint64_t)inserted;
    return OC_OK;
}

void kg_atoms_clear(struct kg_atoms *a)
{
    oc_id_map_clear(&a->index);
    a->n = 0;
}

/* Degree-descending order, ties by id, for qsort_r-free sorting: keys packed in u64. */
static int u64_desc(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

void kg_atom_cache_read_lock(const struct kg_atom_cache *c)
{
    oc_reclaim_lock_read((struct oc_reclaim_lock *)&c->lock);
}

void kg_atom_cache_read_unlock(const struct kg_atom_cache *c)
{
    oc_reclaim_lock_unlock((struct oc_reclaim_lock *)&c->lock);
}

/* e's rank among the cached entities (e cached). */
static uint64_t rank_of(const struct kg_atom_cache *c, uint32_t e)
{
    uint64_t rank = 0;
    int in = oc_rank_set_find(&c->index, e, &rank);
    OC_ASSERT(in);
    (void)in;
    return rank;
}

const uint32_t *kg_atom_cache_get(const struct kg_atom_cache *c, uint32_t e)
{
    uint64_t rank;
    if (!c->index.bits || e >= c->n_entities || !oc_rank_set_find(&c->index, e, &rank))
        return NULL;
    uint64_t at = c->at[rank];
    return at == GONE ? NULL : c->pool + at;
}

/* The index for the k entities heads[0..k) (at[] filled as the pool is). */
static int index_build(struct kg_atom_cache *c, const uint32_t *heads, uint64_t k,
                       struct oc_err *err)
{
    OC_KG_TRY(oc_rank_set_init(&c->index, c->n_entities, "kg atom cache: index", err));
    if (!(c->at = oc_alloc((size_t)k * 8 + 8, "kg atom cache: index", err)) ||
        !(c->order = oc_alloc((size_t)k * 4 + 4, "kg atom cache: index", err)))
        return err->status;
    for (uint64_t i = 0; i < k; i++)
        OC_KG_TRY(oc_rank_set_add(&c->index, heads[i], err));
    return oc_rank_set_seal(&c->index, err);
}

static void index_free(struct kg_atom_cache *c)
{
    oc_rank_set_free(&c->index);
    oc_free(c->at);
    oc_free(c->order);
    c->at = NULL;
    c->order = NULL;
}

/* The pool: nf facts (8 bytes each) in an accounted anonymous mapping. */
static int pool_map(struct kg_atom_cache *c, uint64_t nf, struct oc_err *err)
{
    if (nf == 0)
        return OC_OK;
    uint8_t *p;
    OC_KG_TRY(oc_mem_map(nf * 8, "kg atom cache", &p, &c->pool_len, err));
    c->pool = (uint32_t *)(void *)p;
    c->n_facts = nf; /* what deinit gives back to the accountant */
    return OC_OK;
}

int kg_atom_cache_build(struct kg_atom_cache *c, struct oc_kg_facts *f, uint64_t bytes,
                        struct oc_err *err)
{
    memset(c, 0, sizeof(*c));
    c->facts = f;
    uint64_t n = oc_kg_facts_n_entities(f), idx = oc_rank_set_bytes(n);
    c->n_entities = n;
    if (bytes <= idx) {
        oc_log(OC_LOG_INFO,
               "kg atom cache: %llu bytes do not hold its index (%llu bytes for %llu entities): "
               "no Atom Cache",
               (unsigned long long)bytes, (unsigned long long)idx, (unsigned long long)n);
        return OC_OK; /* empty: c->index.bits is NULL */
    }
    OC_KG_TRY(oc_reclaim_lock_init(&c->lock, "kg atom cache", err));
    /* (degree << 32 | ~id): descending = highest degree first, then lowest id */
    uint64_t *order = oc_alloc((size_t)n * 8 + 8, "kg atom cache: order", err);
    if (!order) {
        kg_atom_cache_deinit(c);
        return err->status;
    }
    for (uint64_t e = 0; e < n; e++)
        order[e] = kg_facts_degree(f, (uint32_t)e) << 32 | (uint32_t) ~(uint32_t)e;
    qsort(order, (size_t)n, 8, u64_desc);
    /* per atom: its facts (8 bytes each) and 12 bytes of index (at[] and order[]) */
    uint64_t room = bytes - idx, k = 0, used = 0;
    while (k < n && used + 12 + 8 * (order[k] >> 32) <= room)
        used += 12 + 8 * (order[k++] >> 32);
    uint64_t nf = (used - 12 * k) / 8;
    int rc = OC_OK;
    uint32_t *heads = oc_alloc((size_t)k * 4 + 4, "kg atom cache: heads", err);
    if (!heads)
        rc = err->status;
    for (uint64_t i = 0; !rc && i < k; i++)
        heads[i] = ~(uint32_t)order[i];
    oc_free(order);
    if (!rc)
        rc = index_build(c, heads, k, err);
    if (!rc)
        rc = pool_map(c, nf, err);
    /* read in batches of heads (in degree order), each atom rel then tail */
    struct oc_kg_facts_reader *r = NULL;
    uint32_t *rel = NULL, *tail = NULL;
    const uint64_t step = 1024;
    uint64_t stage = 0;
    for (uint64_t i0 = 0; !rc && i0 < k; i0 += step) {
        uint64_t sum = 0;
        for (uint64_t i = i0; i < k && i < i0 + step; i++)
            sum += kg_facts_degree(f, heads[i]);
        stage = sum > stage ? sum : stage;
    }
    if (!rc)
        rc = oc_kg_facts_reader_new(f, &r, err);
    if (!rc && !(rel = oc_alloc((size_t)stage * 4 + 4, "kg atom cache: staging", err)))
        rc = err->status;
    if (!rc && !(tail = oc_alloc((size_t)stage * 4 + 4, "kg atom cache: staging", err)))
        rc = err->status;
    uint64_t at = 0;
    for (uint64_t i0 = 0; !rc && i0 < k; i0 += step) {
        uint64_t m = k - i0 < step ? k - i0 : step, nfm = 0;
        if ((rc = oc_kg_facts_fetch(r, heads + i0, m, rel, tail, err)))
            break;
        for (uint64_t i = 0; i < m; i++) {
            uint32_t e = heads[i0 + i];
            uint64_t d = kg_facts_degree(f, e);
            uint32_t *dst = c->pool + 2 * at;
            memcpy(dst, rel + nfm, (size_t)d * 4);
            memcpy(dst + d, tail + nfm, (size_t)d * 4);
            c->at[rank_of(c, e)] = 2 * at;
            c->order[i0 + i] = e;
            nfm += d;
            at += d;
        }
    }
    oc_kg_facts_reader_free(r);
    oc_free(rel);
    oc_free(tail);
    oc_free(heads);
    if (rc) {
        kg_atom_cache_deinit(c);
        return rc;
    }
    c->n_atoms = k;
    c->index_bytes = idx + 12 * k + 12; /* as index_build allocated it */
    c->built_bytes = c->index_bytes + nf * 8;
    atomic_store(&c->bytes, c->built_bytes);
    return OC_OK;
}

/*
 * The give-back's policy (the write side held): marks the pool's last atoms
 * gone, then drops the index, until at least goal bytes went back, or
 * nothing is left. The index goes back through oc_free (*released).
 */
static uint64_t give_back(void *owner, uint64_t goal, uint64_t *released)
{
    struct kg_atom_cache *c = owner;
    OC_ASSERT(oc_reclaim_lock_held(&c->lock));
    uint64_t facts = 0, index = 0;
    while (c->n_atoms > 0 && facts * 8 < goal) {
        uint32_t e = c->order[--c->n_atoms];
        c->at[rank_of(c, e)] = GONE;
        facts += kg_facts_degree(c->facts, e);
    }
    c->n_facts -= facts;
    if (c->pool) /* the whole pages past the atoms left */
        oc_mem_pages_back((uint8_t *)c->pool, c->pool_len, c->n_facts * 8, c->pool_len);
    if (c->n_atoms == 0 && c->index.bits && facts * 8 < goal) { /* no atom left: the index goes */
        index = c->index_bytes;
        index_free(c);
    }
    atomic_fetch_sub(&c->bytes, facts * 8 + index);
    *released = index;
    return facts * 8 + index;
}

int kg_atom_cache_register(struct kg_atom_cache *c, struct oc_err *err)
{
    if (!c->index.bits || c->gb.registered)
        return OC_OK;
    oc_giveback_init(&c->gb, "kg atom cache", c->built_bytes, &c->lock, give_back, c);
    return oc_giveback_register(&c->gb, err);
}

uint64_t kg_atom_cache_bytes(const struct kg_atom_cache *c)
{
    return atomic_load(&c->bytes);
}

void kg_atom_cache_note(struct kg_atom_cache *c)
{
    if (!c->lock.ready)
        return;
    oc_reclaim_lock_read(&c->lock);
    uint64_t gives = oc_giveback_gives(&c->gb), given = oc_giveback_given_bytes(&c->gb);
    uint64_t left = c->n_atoms;
    int index = c->index.bits != NULL;
    oc_reclaim_lock_unlock(&c->lock);
    if (gives == c->gives_logged)
        return;
    c->gives_logged = gives;
    char a[32], b[32];
    oc_log(OC_LOG_INFO,
           "kg atom cache: gave %s back to requests past --mem-budget (%s left, %" PRIu64
           " atoms%s); what left is read from the fact graph",
           oc_format_size(given, a, sizeof(a)),
           oc_format_size(kg_atom_cache_bytes(c), b, sizeof(b)), left, index ? "" : ", no index");
}

void kg_atom_cache_deinit(struct kg_atom_cache *c)
{
    oc_giveback_unregister(&c->gb); /* waits for a reclaim in progress */
    if (c->pool) {
        munmap(c->pool, c->pool_len);
        oc_mem_release(c->n_facts * 8);
    }
    index_free(c);
    oc_reclaim_lock_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}
