/*
 * kg_slice.c — atom-level subgraph slicing (thesis section V-B/C): a query
 * entity q's subgraph is its atoms, the entities of its (L-1)-hop
 * neighbourhood (an L-layer subgraph holds exactly their facts), each of
 * weight w_a = its degree; atoms of weight < h are packed into slices of at
 * most h facts, and q's subgraph becomes a set of disjoint slices.
 *
 *   BFS (L-1 hops, facts through the fact graph's reader: Atom Cache first;
 *        the last layer's facts are read only for the light atoms that
 *        matching leaves to new slices)
 *   SiGMa:  matching  1. slices holding q's k-hop neighbours, by historical
 *                        utilization (most used first)
 *                     2. slices holding any other remaining atom, by payload,
 *                        those below alpha x h dropped
 *                     (a slice matches only if all its atoms remain in G'_q)
 *           generation  per k-hop neighbour u still in G'_q: post-order DFS
 *                     from u over G'_q (neighbours pushed lightest first, so
 *                     the heaviest is visited first), each atom First-Fit
 *                     into this root's slices; those reaching alpha x h are
 *                     kept, the atoms of the others go back to G'_q; at the
 *                     end First-Fit-Decreasing packs what remains
 *   SEQ (ginex): the atoms in BFS order, Next-Fit, no matching (no reuse)
 *
 * Determinism: orders are BFS order, ties broken by slice id or BFS rank.
 * Place in the data flow: kg (kg_tiger.c ──► here ──► kg_slice_store.c).
 * Thread-safety: one thread at a time (TIGER's planner stage, handed over by kg_tiger_stage.c).
 * Ownership: the slicer owns its arrays and reader; it borrows the fact graph.
 */
#include <stdlib.h>
#include <string.h>

#include "kg/kg_tiger_int.h"

/* Grows *p to hold n elements of elem bytes (capacity doubling via *cap). */
static int grow(void *pp, uint64_t *cap, uint64_t n, size_t elem, struct oc_err *err)
{
    return oc_grow(pp, cap, n, elem, 64, "kg slicer", err);
}

/* Grows several arrays sharing one capacity. */
static int grow_q(struct kg_slicer *s, uint64_t n, struct oc_err *err)
{
    void *const arr[] = {&s->q_atoms, &s->rem,     &s->visited,  &s->packed,    &s->light,
                         &s->stack,   &s->bin_of,  &s->bin_load, &s->tmp,       &s->p_rel,
                         &s->p_tail,  &s->p_deg,   &s->q_deg,    &s->fetch_ids, &s->bin_start,
                         &s->ff_tree, &s->q_depth, &s->q_foff};
    /* bin_start: bins + 1 <= atoms + 1; ff_tree: 2 x leaves < 4 x atoms */
    const size_t sz[] = {4, 1, 1, 1, 4,  4, 4, 4, 4, sizeof(void *), sizeof(void *),
                         4, 4, 4, 8, 16, 4, 8};
    return oc_grow_all(arr, sz, sizeof(sz) / sizeof(sz[0]), &s->cap_q, n, OC_GROW_DOUBLE(64),
                       "kg slicer", err);
}

int kg_slicer_init(struct kg_slicer *s, struct oc_kg_facts *f, const struct kg_slice_opts *o,
                   struct oc_err *err)
{
    kg_slicer_idle(s, f, o);
    s->open = 1;
    uint64_t n = s->n_entities;
    int rc = oc_kg_facts_reader_new(f, &s->reader, err);
    if (!rc && ((o->mode == KG_SLICE_SIGMA &&
                 (!(s->first_slice = oc_alloc((size_t)n * 4, "kg slicer", err)) ||
                  !(s->rem_bits = oc_calloc((size_t)(n + 63) / 64, 8, "kg slicer", err)))) ||
                !(s->atom_off = oc_calloc(1, 8, "kg slicer", err))))
        rc = err->status;
    if (rc) {
        kg_slicer_deinit(s);
        return rc;
    }
    for (uint64_t e = 0; s->first_slice && e < n; e++)
        s->first_slice[e] = KG_NONE;
    return OC_OK;
}

void kg_slicer_idle(struct kg_slicer *s, struct oc_kg_facts *f, const struct kg_slice_opts *o)
{
    memset(s, 0, sizeof(*s));
    s->o = *o;
    s->facts = f;
    s->n_entities = oc_kg_facts_n_entities(f);
    kg_slice_map_init(&s->map);
    oc_id_map_init(&s->local_of);
}

void kg_slicer_trim(struct kg_slicer *s)
{
    void **arr[] = {
        (void **)&s->q_atoms, (void **)&s->q_foff,  (void **)&s->q_rel,     (void **)&s->q_tail,
        (void **)&s->rem,     (void **)&s->visited, (void **)&s->packed,    (void **)&s->light,
        (void **)&s->stack,   (void **)&s->bin_of,  (void **)&s->bin_load,  (void **)&s->tmp,
        (void **)&s->p_rel,   (void **)&s->p_tail,  (void **)&s->p_deg,     (void **)&s->cand,
        (void **)&s->keys,    (void **)&s->q_deg,   (void **)&s->fetch_ids, (void **)&s->bin_start,
        (void **)&s->ff_tree, (void **)&s->q_depth};
    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++) {
        oc_free(*arr[i]);
        *arr[i] = NULL;
    }
    oc_id_map_deinit(&s->local_of);
    s->cap_q = s->cap_qf = s->cap_cand = s->cap_keys = 0;
    s->n_q = s->n_qf = 0;
}

void kg_slicer_deinit(struct kg_slicer *s)
{
    oc_kg_facts_reader_free(s->reader);
    kg_slicer_trim(s); /* one query's scratch; the rest is the slices' and the mapping's */
    void *arr[] = {s->atom_off,   s->payload,     s->util,    s->atoms,
                   s->next_first, s->first_slice, s->rem_bits};
    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++)
        oc_free(arr[i]);
    kg_slice_map_deinit(&s->map);
    memset(s, 0, sizeof(*s));
}

int kg_slicer_has(const struct kg_slicer *s, uint32_t q)
{
    return kg_slice_map_has(&s->map, q);
}

/* Queues local atom i's facts for the next read_queued (no-op if held or queued). */
static inline void queue_atom(struct kg_slicer *s, uint64_t i, uint64_t *k, uint64_t *need)
{
    if (s->q_foff[i] != UINT64_MAX)
        return;
    s->q_foff[i] = *need;
    *need += s->q_deg[i];
    s->fetch_ids[(*k)++] = s->q_atoms[i];
}

/* Reads the k queued atoms' facts (need facts held in all) through the fact graph's reader. */
static int read_queued(struct kg_slicer *s, uint64_t k, uint64_t need, struct oc_err *err)
{
    if (k == 0)
        return OC_OK;
    uint64_t start = s->n_qf, c = s->cap_qf;
    OC_KG_TRY(grow(&s->q_rel, &c, need, 4, err));
    c = s->cap_qf;
    OC_KG_TRY(grow(&s->q_tail, &c, need, 4, err));
    s->cap_qf = c;
    s->n_qf = need;
    return oc_kg_facts_fetch(s->reader, s->fetch_ids, k, s->q_rel + start, s->q_tail + start, err);
}

/*
 * Reads the facts of the light atoms still in G'_q: what new slices hold and
 * slice generation's DFS walks. Atoms matched to existing slices and heavy
 * atoms (in no slice) are never read for the last BFS layer.
 */
static int fetch_remaining(struct kg_slicer *s, struct oc_err *err)
{
    uint64_t k = 0, need = s->n_qf;
    for (uint64_t r = 0; r < s->n_light; r++)
        if (s->rem[s->light[r]])
            queue_atom(s, s->light[r], &k, &need);
    return read_queued(s, k, need, err);
}

/*
 * BFS of q over L-1 hops: q_atoms (BFS order), depth, local, degrees; the
 * facts of the atoms it expands (depth < L-1) are read, the last layer's are
 * left to fetch_remaining.
 */
static int bfs(struct kg_slicer *s, uint32_t q, struct oc_err *err)
{
    if (q >= s->n_entities)
        return OC_ERR(err, OC_ERR_ARG, "kg slicer: entity %u out of range (%llu entities)", q,
                      (unsigned long long)s->n_entities);
    oc_id_map_clear(&s->local_of);
    OC_KG_TRY(grow_q(s, 1, err));
    OC_KG_TRY(oc_id_map_reserve(&s->local_of, 1, "kg slicer", err));
    int fresh;
    oc_id_map_get_or_put(&s->local_of, q, 0, &fresh);
    s->q_atoms[0] = q;
    s->q_depth[0] = 0;
    s->n_q = 1;
    s->n_qf = 0;
    uint64_t lo = 0;
    uint32_t hops = s->o.layers - 1;
    for (uint32_t d = 0;; d++) {
        uint64_t hi = s->n_q, k = 0, need = s->n_qf;
        for (uint64_t i = lo; i < hi; i++) {
            s->q_deg[i] = (uint32_t)kg_facts_degree(s->facts, s->q_atoms[i]);
            s->q_foff[i] = UINT64_MAX;
        }
        if (d == hops)
            break;
        for (uint64_t i = lo; i < hi; i++)
            queue_atom(s, i, &k, &need);
        OC_KG_TRY(read_queued(s, k, need, err));
        for (uint64_t i = lo; i < hi; i++)
            for (uint64_t j = s->q_foff[i]; j < s->q_foff[i] + s->q_deg[i]; j++) {
                uint32_t t = s->q_tail[j];
                OC_KG_TRY(oc_id_map_reserve(&s->local_of, s->n_q + 1, "kg slicer", err));
                oc_id_map_get_or_put(&s->local_of, t, (uint32_t)s->n_q, &fresh);
                if (!fresh)
                    continue;
                OC_KG_TRY(grow_q(s, s->n_q + 1, err));
                s->q_depth[s->n_q] = d + 1;
                s->q_atoms[s->n_q++] = t;
            }
        lo = hi;
        if (lo == s->n_q)
            break;
    }
    s->n_light = 0;
    for (uint64_t i = 0; i < s->n_q; i++) {
        s->rem[i] = s->q_deg[i] < s->o.h;
        s->visited[i] = s->packed[i] = 0;
        if (s->rem[i])
            s->light[s->n_light++] = (uint32_t)i;
    }
    return OC_OK;
}

int kg_slicer_atoms_of(struct kg_slicer *s, uint32_t q, const uint32_t **atoms, uint64_t *n,
                       struct oc_err *err)
{
    if (!s->open)
        return OC_ERR(err, OC_ERR_INTERNAL, "kg slicer: not opened (the slice store was reused)");
    OC_KG_TRY(bfs(s, q, err));
    for (uint64_t i = 0; i < s->n_light; i++)
        s->tmp[i] = s->q_atoms[s->light[i]];
    *atoms = s->tmp;
    *n = s->n_light;
    return OC_OK;
}

/* Whether entity e is an atom of G'_q still unassigned; its local index in *i. */
static inline int remaining(const struct kg_slicer *s, uint32_t e, uint32_t *i)
{
    return oc_id_map_get(&s->local_of, e, i) && s->rem[*i];
}

/* Whether every atom of slice id remains in G'_q (rem_bits, while matching). */
static int all_remain(const struct kg_slicer *s, uint32_t id)
{
    for (uint64_t p = s->atom_off[id]; p < s->atom_off[id + 1]; p++) {
        uint32_t e = s->atoms[p];
        if (!(s->rem_bits[e >> 6] >> (e & 63) & 1))
            return 0;
    }
    return 1;
}

/* Sets (on) or clears the rem_bits of the light atoms, which all remain as matching starts. */
static void rem_bits_set(struct kg_slicer *s, int on)
{
    for (uint64_t j = 0; j < s->n_light; j++) {
        uint32_t e = s->q_atoms[s->light[j]];
        if (on)
            s->rem_bits[e >> 6] |= (uint64_t)1 << (e & 63);
        else
            s->rem_bits[e >> 6] &= ~((uint64_t)1 << (e & 63));
    }
}

/* Matches slice id if every atom of it remains in G'_q. */
static int try_match(struct kg_slicer *s, uint32_t id, struct oc_err *err)
{
    if (!all_remain(s, id))
        return OC_OK;
    for (uint64_t p = s->atom_off[id]; p < s->atom_off[id + 1]; p++) {
        uint32_t i = 0, e = s->atoms[p];
        oc_id_map_get(&s->local_of, e, &i); /* (found: all_remain) */
        s->rem[i] = 0;
        s->rem_bits[e >> 6] &= ~((uint64_t)1 << (e & 63));
    }
    s->util[id]++;
    return kg_slice_map_push(&s->map, id, err);
}

/*
 * The candidate slices: those whose first atom is a light atom of G'_q and
 * whose atoms all remain (a slice that can match has its first atom there);
 * each once, as a slice has one first atom and the light atoms are distinct.
 */
static int gather_candidates(struct kg_slicer *s, uint64_t *n_cand, struct oc_err *err)
{
    uint64_t k = 0;
    for (uint64_t j = 0; j < s->n_light; j++)
        for (uint32_t id = s->first_slice[s->q_atoms[s->light[j]]]; id != KG_NONE;
             id = s->next_first[id]) {
            if (!all_remain(s, id))
                continue;
            OC_KG_TRY(grow(&s->cand, &s->cap_cand, k + 1, 4, err));
            s->cand[k++] = id;
        }
    *n_cand = k;
    return OC_OK;
}

/* Whether slice id holds a k-hop neighbour of the query (its atoms all in G'_q). */
static int holds_hop(const struct kg_slicer *s, uint32_t id)
{
    for (uint64_t p = s->atom_off[id]; p < s->atom_off[id + 1]; p++) {
        uint32_t i = 0;
        oc_id_map_get(&s->local_of, s->atoms[p], &i);
        if (s->q_depth[i] <= s->o.hops)
            return 1;
    }
    return 0;
}

static inline uint32_t weight(const struct kg_slicer *s, uint32_t i)
{
    return s->q_deg[i];
}

/*
 * Sorts v[0..n) (u32 values) ascending by key(v) << 32 | low(v), through the
 * u64 scratch: each comparator sees only its keys (no shared context), and
 * ties are broken by the low word, so the order is total and deterministic.
 */
enum sort_by { BY_UTIL_DESC, BY_PAYLOAD_DESC, BY_WEIGHT_DESC, BY_WEIGHT_ASC };

static int sort_u32(struct kg_slicer *s, uint32_t *v, uint64_t n, enum sort_by by,
                    struct oc_err *err)
{
    if (n < 2)
        return OC_OK; /* sorted (and the scratch may not exist yet) */
    OC_KG_TRY(grow(&s->keys, &s->cap_keys, 2 * n, 8, err)); /* keys, then the sort's scratch */
    for (uint64_t i = 0; i < n; i++) {
        uint32_t x = v[i], hi;
        switch (by) {
        case BY_UTIL_DESC:
            hi = ~s->util[x]; /* most used first, then lower id */
            break;
        case BY_PAYLOAD_DESC:
            hi = ~s->payload[x];
            break;
        case BY_WEIGHT_DESC:
            hi = ~weight(s, x); /* heaviest first, then BFS rank */
            break;
        default:
            hi = weight(s, x); /* lightest first: the heaviest ends on top of a stack */
            x = ~x;
            break;
        }
        s->keys[i] = (uint64_t)hi << 32 | x;
    }
    oc_sort_u64(s->keys, s->keys + n, n);
    for (uint64_t i = 0; i < n; i++)
        v[i] = by == BY_WEIGHT_ASC ? ~(uint32_t)s->keys[i] : (uint32_t)s->keys[i];
    return OC_OK;
}

/*
 * SiGMa's slice matching: the k-hop neighbours' slices by utilization, then
 * the others of at least alpha x h facts by payload. Only a slice whose atoms
 * all remain can match, and atoms only leave G'_q, so the candidates are
 * gathered once, with their atoms all remaining, and checked again as they
 * are matched.
 */
static int match_slices(struct kg_slicer *s, struct oc_err *err)
{
    uint64_t n_cand = 0;
    OC_KG_TRY(gather_candidates(s, &n_cand, err));
    uint64_t a = 0, b = n_cand; /* [0, a): holding a k-hop neighbour; [b, n_cand): not */
    while (a < b) {
        if (holds_hop(s, s->cand[a])) {
            a++;
        } else {
            uint32_t x = s->cand[--b];
            s->cand[b] = s->cand[a];
            s->cand[a] = x;
        }
    }
    OC_KG_TRY(sort_u32(s, s->cand, a, BY_UTIL_DESC, err));
    for (uint64_t c = 0; c < a; c++)
        OC_KG_TRY(try_match(s, s->cand[c], err));
    uint64_t k = 0;
    double min_load = s->o.alpha * s->o.h;
    for (uint64_t c = b; c < n_cand; c++) /* (what matched above may have taken atoms) */
        if ((double)s->payload[s->cand[c]] >= min_load && (a == 0 || all_remain(s, s->cand[c])))
            s->cand[k++] = s->cand[c];
    OC_KG_TRY(sort_u32(s, s->cand, k, BY_PAYLOAD_DESC, err));
    for (uint64_t c = 0; c < k; c++)
        OC_KG_TRY(try_match(s, s->cand[c], err));
    return OC_OK;
}

static int match(struct kg_slicer *s, struct oc_err *err)
{
    rem_bits_set(s, 1);
    int rc = match_slices(s, err);
    rem_bits_set(s, 0); /* every one, matched or not */
    return rc;
}

static int emit_one(struct kg_slicer *s, const uint32_t *list, uint64_t n, uint32_t load,
                    struct kg_slice_store *st, struct oc_err *err);

/*
 * Appends new slices of the local atoms list[0..n) (load facts) to the
 * slicer, q's mapping and the store: one slice, or pieces of at most
 * kg_slice_atoms_max(h) atoms when it would hold more (so every record fits
 * the slot its capacity gives; not with the inverse facts FORMAT.md asks).
 */
static int emit(struct kg_slicer *s, const uint32_t *list, uint64_t n, uint32_t load,
                struct kg_slice_store *st, struct oc_err *err)
{
    uint32_t most = kg_slice_atoms_max(s->o.h);
    if (n <= most)
        return emit_one(s, list, n, load, st, err);
    for (uint64_t at = 0; at < n; at += most) {
        uint64_t k = n - at < most ? n - at : most;
        uint32_t piece = 0;
        for (uint64_t j = at; j < at + k; j++)
            piece += weight(s, list[j]);
        OC_KG_TRY(emit_one(s, list + at, k, piece, st, err));
    }
    return OC_OK;
}

/* Appends one slice of the local atoms list[0..n) to the slicer, q's mapping and the store. */
static int emit_one(struct kg_slicer *s, const uint32_t *list, uint64_t n, uint32_t load,
                    struct kg_slice_store *st, struct oc_err *err)
{
    if (s->n_slices + 1 >= KG_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "kg slicer: more than 2^32 slices");
    uint64_t id = s->n_slices, cs = s->cap_slices;
    OC_KG_TRY(grow(&s->atom_off, &cs, id + 2, 8, err));
    cs = s->cap_slices;
    OC_KG_TRY(grow(&s->payload, &cs, id + 2, 4, err));
    cs = s->cap_slices;
    OC_KG_TRY(grow(&s->util, &cs, id + 2, 4, err));
    if (s->first_slice) {
        cs = s->cap_slices;
        OC_KG_TRY(grow(&s->next_first, &cs, id + 2, 4, err));
    }
    s->cap_slices = cs;
    uint64_t cp = s->cap_pos;
    OC_KG_TRY(grow(&s->atoms, &cp, s->n_pos + n, 4, err));
    s->cap_pos = cp;
    if (s->n_pos + n >= KG_NONE)
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "kg slicer: more than 2^32 atom entries");
    for (uint64_t j = 0; j < n; j++) {
        uint32_t i = list[j], e = s->q_atoms[i];
        uint64_t p = s->n_pos++;
        s->atoms[p] = e;
        s->rem[i] = 0;
        s->p_rel[j] = s->q_rel + s->q_foff[i];
        s->p_tail[j] = s->q_tail + s->q_foff[i];
        s->p_deg[j] = weight(s, i);
    }
    s->atom_off[id + 1] = s->n_pos;
    if (s->first_slice && n) { /* SiGMa: found through its first atom when matching */
        s->next_first[id] = s->first_slice[s->atoms[s->atom_off[id]]];
        s->first_slice[s->atoms[s->atom_off[id]]] = (uint32_t)id;
    }
    s->payload[id] = load;
    s->util[id] = 1;
    s->n_slices++;
    if (st)
        OC_KG_TRY(kg_slice_store_append(st, s->atoms + s->atom_off[id], (uint32_t)n, s->p_rel,
                                        s->p_tail, s->p_deg, load, err));
    return kg_slice_map_push(&s->map, (uint32_t)id, err);
}

/*
 * Emits the bins [0, n_bins) whose load passes min_load (all if min_load <= 0),
 * each with its members in members' order (grouped by a counting sort).
 */
static int emit_bins(struct kg_slicer *s, const uint32_t *members, uint64_t n_members,
                     uint32_t n_bins, double min_load, struct kg_slice_store *st,
                     struct oc_err *err)
{
    uint32_t *list = s->stack, *start = s->bin_start; /* free once the DFS is over */
    memset(start, 0, (size_t)(n_bins + 1) * 4);
    for (uint64_t j = 0; j < n_members; j++)
        start[s->bin_of[members[j]] + 1]++;
    for (uint32_t b = 0; b < n_bins; b++)
        start[b + 1] += start[b];
    for (uint64_t j = 0; j < n_members; j++)
        list[start[s->bin_of[members[j]]]++] = members[j];
    for (uint32_t b = 0, at = 0; b < n_bins; b++) { /* start[b] is now bin b's end */
        uint32_t end = start[b];
        if ((double)s->bin_load[b] >= min_load && s->bin_load[b] != 0)
            OC_KG_TRY(emit(s, list + at, end - at, s->bin_load[b], st, err));
        at = end;
    }
    return OC_OK;
}

/* Sets bin b's free capacity in the First-Fit tree. */
static void ff_set(struct kg_slicer *s, uint32_t b, uint32_t free_cap)
{
    uint32_t *t = s->ff_tree, i = s->ff_leaves + b;
    t[i] = free_cap;
    for (i >>= 1; i > 0; i >>= 1)
        t[i] = t[2 * i] > t[2 * i + 1] ? t[2 * i] : t[2 * i + 1];
}

/* Closes bins [0, n_bins): the next First-Fit starts with none. */
static void ff_clear(struct kg_slicer *s, uint32_t n_bins)
{
    for (uint32_t b = 0; b < n_bins; b++)
        ff_set(s, b, 0);
}

/*
 * First-Fit of local atom i into bins [0, *n_bins): the lowest bin with room
 * (the tree's leftmost leaf of free capacity >= w; a bin not opened has 0),
 * else a new one.
 */
static void first_fit(struct kg_slicer *s, uint32_t i, uint32_t *n_bins)
{
    uint32_t w = weight(s, i), b = *n_bins, *t = s->ff_tree;
    if (t[1] >= w) {
        uint32_t j = 1;
        while (j < s->ff_leaves)
            j = t[2 * j] >= w ? 2 * j : 2 * j + 1;
        b = j - s->ff_leaves;
    }
    if (b >= *n_bins) {
        b = (*n_bins)++;
        s->bin_load[b] = 0;
    }
    s->bin_load[b] += w;
    ff_set(s, b, s->o.h - s->bin_load[b]);
    s->bin_of[i] = b;
}

/* Algorithm 1: post-order DFS from each k-hop root, First-Fit, alpha filter; FFD for the rest. */
static int generate(struct kg_slicer *s, struct kg_slice_store *st, struct oc_err *err)
{
    double min_load = s->o.alpha * s->o.h;
    uint32_t *members = s->tmp;
    OC_KG_TRY(fetch_remaining(s, err));
    for (s->ff_leaves = 1; s->ff_leaves < s->n_light; s->ff_leaves *= 2)
        ;
    memset(s->ff_tree, 0, (size_t)s->ff_leaves * 8);
    for (uint64_t r = 0; r < s->n_light; r++) {
        uint32_t u = s->light[r];
        if (!s->rem[u] || s->visited[u] || s->q_depth[u] > s->o.hops)
            continue;
        uint64_t top = 0, n_members = 0;
        uint32_t n_bins = 0;
        s->stack[top++] = u;
        while (top > 0) {
            uint32_t a = s->stack[top - 1];
            if (!s->visited[a]) {
                s->visited[a] = 1;
                uint64_t first = top;
                for (uint64_t j = s->q_foff[a]; j < s->q_foff[a] + s->q_deg[a]; j++) {
                    uint32_t i;
                    if (!remaining(s, s->q_tail[j], &i) || s->visited[i] || s->packed[i])
                        continue;
                    s->packed[i] = 2; /* pushed by a (a stack entry each, once) */
                    s->stack[top++] = i;
                }
                OC_KG_TRY(sort_u32(s, s->stack + first, top - first, BY_WEIGHT_ASC, err));
            } else {
                top--;
                if (s->packed[a] == 1)
                    continue;
                s->packed[a] = 1;
                first_fit(s, a, &n_bins);
                members[n_members++] = a;
            }
        }
        OC_KG_TRY(emit_bins(s, members, n_members, n_bins, min_load, st, err));
        ff_clear(s, n_bins);
        /* atoms of slices below alpha go back to G'_q, to be packed again */
        for (uint64_t j = 0; j < n_members; j++)
            if (s->rem[members[j]])
                s->visited[members[j]] = s->packed[members[j]] = 0;
    }
    uint64_t n_rest = 0;
    for (uint64_t r = 0; r < s->n_light; r++)
        if (s->rem[s->light[r]])
            members[n_rest++] = s->light[r];
    OC_KG_TRY(sort_u32(s, members, n_rest, BY_WEIGHT_DESC, err));
    uint32_t n_bins = 0;
    for (uint64_t j = 0; j < n_rest; j++)
        first_fit(s, members[j], &n_bins);
    return emit_bins(s, members, n_rest, n_bins, 0.0, st, err);
}

/* ginex's baseline: the atoms in BFS order, Next-Fit, every slice new. */
static int sequential(struct kg_slicer *s, struct kg_slice_store *st, struct oc_err *err)
{
    uint64_t n = 0;
    uint32_t load = 0;
    uint32_t *list = s->tmp;
    OC_KG_TRY(fetch_remaining(s, err));
    for (uint64_t r = 0; r < s->n_light; r++) {
        uint32_t i = s->light[r], w = weight(s, i);
        if (load + w > s->o.h) {
            OC_KG_TRY(emit(s, list, n, load, st, err));
            n = 0;
            load = 0;
        }
        list[n++] = i;
        load += w;
    }
    return n ? emit(s, list, n, load, st, err) : OC_OK;
}

int kg_slicer_slice(struct kg_slicer *s, uint32_t q, struct kg_slice_store *st, struct oc_err *err)
{
    if (!s->open)
        return OC_ERR(err, OC_ERR_INTERNAL, "kg slicer: not opened (the slice store was reused)");
    if (kg_slicer_has(s, q))
        return OC_OK;
    OC_KG_TRY(bfs(s, q, err));
    uint64_t map0 = s->map.n_ids;
    if (s->o.mode == KG_SLICE_SIGMA) {
        OC_KG_TRY(match(s, err));
        OC_KG_TRY(generate(s, st, err));
    } else {
        OC_KG_TRY(sequential(s, st, err));
    }
    OC_KG_TRY(kg_slice_map_close(&s->map, q, map0, err));
    s->n_sliced_queries++;
    return OC_OK;
}

/* q's slices and the payload table: the loaded store's, or the slicer's. */
static void slices_of(const struct kg_slice_store *st, const struct kg_slicer *s, uint32_t q,
                      const uint32_t **ids, uint32_t *n, const uint32_t **payload)
{
    kg_slice_store_slices_of(st, s, q, ids, n);
    *payload = st && st->loaded ? st->payload : s->payload;
}

int kg_slice_metrics(const struct kg_slice_store *st, const struct kg_slicer *s, const uint32_t *qs,
                     uint64_t n, struct kg_slice_metrics *m, struct oc_err *err)
{
    memset(m, 0, sizeof(*m));
    uint64_t n_slices = st && st->loaded ? st->n_slices : s->n_slices;
    m->n_slices = n_slices;
    uint8_t *seen = oc_calloc(n_slices ? n_slices : 1, 1, "kg slice metrics", err);
    if (!seen)
        return err->status;
    uint32_t h = s->o.h;
    for (uint64_t j = 0; j < n; j++) {
        const uint32_t *ids, *payload;
        uint32_t k;
        slices_of(st, s, qs[j], &ids, &k, &payload);
        uint64_t g = 0;
        for (uint32_t i = 0; i < k; i++) {
            g += payload[ids[i]];
            m->n_distinct += !seen[ids[i]];
            seen[ids[i]] = 1;
        }
        m->n_slice_refs += k;
        m->min_slices += (g + h - 1) / h;
        m->n_queries++;
    }
    oc_free(seen);
    m->delta_r = m->min_slices ? (double)m->n_slice_refs / (double)m->min_slices : 0.0;
    m->delta_u = m->n_slice_refs ? (double)m->n_distinct / (double)m->n_slice_refs : 0.0;
    return OC_OK;
}

int kg_slice_bound_r(struct kg_slicer *s, const uint32_t *qs, uint64_t n,
                     const struct kg_slice_metrics *m, double *bound, struct oc_err *err)
{
    uint8_t *in_a = oc_calloc(s->n_entities, 1, "kg slice bound", err);
    if (!in_a)
        return err->status;
    uint64_t w_a = 0;
    int rc = OC_OK;
    for (uint64_t j = 0; j < n && !rc; j++) {
        const uint32_t *atoms;
        uint64_t k;
        if ((rc = kg_slicer_atoms_of(s, qs[j], &atoms, &k, err)))
            break;
        for (uint64_t i = 0; i < k; i++)
            if (!in_a[atoms[i]]) {
                in_a[atoms[i]] = 1;
                w_a += kg_facts_degree(s->facts, atoms[i]);
            }
    }
    oc_free(in_a);
    uint64_t h = s->o.h;
    double denom = m->delta_u * (double)m->min_slices;
    *bound = denom > 0 ? (double)((w_a + h - 1) / h) / denom : 0.0;
    return rc;
}
