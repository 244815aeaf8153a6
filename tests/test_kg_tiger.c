/*
 * test_kg_tiger.c — TIGER's slice-and-cache extraction (kg-train --extract):
 *   - the Slice Cache's changesets (ginex's planner through oc_plan_belady)
 *     against a brute-force Belady simulator on random traces: same misses
 *     per iteration, same next-use keys cached, every change taking a miss;
 *   - SiGMa and the sequential (ginex) slicer on a generated KG: each query
 *     entity's slices are disjoint and hold exactly its atoms of degree < h,
 *     every slice respects h, delta_R >= Theorem 2's bound; SiGMa reuses;
 *   - basic, atom, ginex-slices and tiger train to the same weights on
 *     WN18RR_v1 (../shared) with caches too small to hold everything (so
 *     slices and atoms are read from disk), and on a generated KG under a
 *     --mem-budget smaller than its fact graph;
 *   - a damaged, truncated or foreign slice store is detected and rebuilt;
 *     a run killed (SIGKILL) while slicing leaves nothing a rerun trusts,
 *     and the rerun trains to the same weights.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "kg/kg_tiger_int.h"
#include "kg_fixture.h"
#include "offcore/io.h"
#include "offcore/plan.h"
#include "proc_util.h"

/* ---- Belady changesets vs a brute-force simulator ------------------------- */

static uint64_t next_use(const uint64_t *ids, const uint64_t *off, uint64_t S, uint64_t i,
                         uint64_t id)
{
    for (uint64_t j = i + 1; j < S; j++)
        for (uint64_t a = off[j]; a < off[j + 1]; a++)
            if (ids[a] == id)
                return j;
    return UINT64_MAX;
}

static int has(const uint64_t *set, uint64_t n, uint64_t id)
{
    for (uint64_t k = 0; k < n; k++)
        if (set[k] == id)
            return 1;
    return 0;
}

struct cand {
    uint64_t key, id;
    int cached;
    uint64_t pos;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->cached != y->cached)
        return x->cached ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

OC_TEST(kg_belady_changesets_match_brute_force)
{
    struct oc_err err;
    uint64_t rng = 12345;
    for (int trial = 0; trial < 40; trial++) {
        uint64_t C = 1 + (uint64_t)trial % 7, n_ids = 4 + (uint64_t)trial % 13;
        struct oc_plan_belady *b = NULL;
        OC_CHECK_OK(oc_plan_belady_new(C, &b, &err), &err);
        uint64_t slot[8]; /* executor: slot -> id, UINT64_MAX empty */
        for (int s = 0; s < 8; s++)
            slot[s] = UINT64_MAX;
        for (int sb = 0; sb < 3; sb++) {
            uint64_t S = 2 + (uint64_t)(trial + sb) % 6, ids[64], off[8], n = 0;
            off[0] = 0;
            for (uint64_t i = 0; i < S; i++) {
                uint64_t k = (rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 61;
                for (uint64_t j = 0; j < k + 1 && n < 64; j++) {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    uint64_t id = (rng >> 33) % n_ids;
                    if (!has(ids + off[i], n - off[i], id))
                        ids[n++] = id;
                }
                off[i + 1] = n;
            }
            struct oc_plan_belady_plan p;
            OC_CHECK_OK(oc_plan_belady_plan(b, ids, off, S, &p, &err), &err);
            /* brute force from the executor's contents */
            uint64_t bf[8], n_bf = 0;
            for (uint64_t s = 0; s < C; s++)
                if (slot[s] != UINT64_MAX)
                    bf[n_bf++] = slot[s];
            for (uint64_t a = 0; a < n && n_bf < C; a++)
                if (!has(bf, n_bf, ids[a]))
                    bf[n_bf++] = ids[a];
            /* executor: warm-up */
            for (uint64_t w = 0; w < p.n_warm; w++) {
                OC_CHECK(p.warm_slot[w] < C && slot[p.warm_slot[w]] == UINT64_MAX);
                slot[p.warm_slot[w]] = p.warm_id[w];
            }
            for (uint64_t i = 0; i < S; i++) {
                uint64_t miss_x = 0, miss_b = 0;
                for (uint64_t a = off[i]; a < off[i + 1]; a++) {
                    int in = 0;
                    for (uint64_t s = 0; s < C; s++)
                        in |= slot[s] == ids[a];
                    miss_x += !in;
                    miss_b += !has(bf, n_bf, ids[a]);
                }
                OC_CHECK(miss_x == miss_b && p.n_miss[i] == miss_b);
                /* executor: the changes take misses of this iteration */
                for (uint64_t c = p.chg_off[i]; c < p.chg_off[i + 1]; c++) {
                    uint64_t id = ids[off[i] + p.chg_pos[c]];
                    int in = 0;
                    for (uint64_t s = 0; s < C; s++)
                        in |= slot[s] == id;
                    OC_CHECK(!in && p.chg_slot[c] < C);
                    slot[p.chg_slot[c]] = id;
                }
                /* brute force: the C soonest next uses among cache and this iteration */
                struct cand cd[80];
                uint64_t nc = 0;
                for (uint64_t k = 0; k < n_bf; k++)
                    cd[nc++] = (struct cand){next_use(ids, off, S, i, bf[k]), bf[k], 1, 0};
                for (uint64_t a = off[i]; a < off[i + 1]; a++)
                    if (!has(bf, n_bf, ids[a]))
                        cd[nc++] = (struct cand){next_use(ids, off, S, i, ids[a]), ids[a], 0, a};
                qsort(cd, (size_t)nc, sizeof(cd[0]), cand_cmp);
                n_bf = nc < C ? nc : C;
                uint64_t kb[8], kx[8], n_kx = 0;
                for (uint64_t k = 0; k < n_bf; k++) {
                    bf[k] = cd[k].id;
                    kb[k] = cd[k].key;
                }
                for (uint64_t s = 0; s < C; s++)
                    if (slot[s] != UINT64_MAX)
                        kx[n_kx++] = next_use(ids, off, S, i, slot[s]);
                qsort(kb, (size_t)n_bf, 8, oc_cmp_u64);
                qsort(kx, (size_t)n_kx, 8, oc_cmp_u64);
                OC_CHECK(n_kx == n_bf && memcmp(kb, kx, (size_t)n_bf * 8) == 0);
            }
        }
        oc_plan_belady_free(b);
    }
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- slicing ------------------------------------------------------------- */

static const char *gen_kg(const char *name, uint64_t n_ent, uint64_t n_tri, double power,
                          uint64_t n_q)
{
    static char dirs[4][700];
    static int n_dirs;
    char *dir = dirs[n_dirs++ % 4];
    snprintf(dir, sizeof(dirs[0]), "%s/%s", oc_test_tmpdir(), name);
    struct oc_kg_gen_opts g;
    oc_kg_gen_opts_default(&g);
    g.n_entities = n_ent;
    g.n_triples = n_tri;
    g.n_relations = 20;
    g.power_law = power;
    g.n_queries = n_q;
    g.seed = 3;
    struct oc_err err;
    if (oc_kg_generate(dir, &g, NULL, &err) != OC_OK) {
        fprintf(stderr, "generate %s: %s\n", name, err.msg);
        return NULL;
    }
    return dir;
}

/* gen_kg's KG, opened (NULL, the check failed, if either fails). */
static struct oc_kg *open_gen_kg(const char *name, uint64_t n_ent, uint64_t n_tri, double power,
                                 uint64_t n_q)
{
    const char *dir = gen_kg(name, n_ent, n_tri, power, n_q);
    OC_CHECK(dir != NULL);
    struct oc_kg *kg = NULL;
    struct oc_err err;
    if (dir)
        OC_CHECK_OK(oc_kg_open(dir, &kg, &err), &err);
    return kg;
}

static void check_slicing(struct oc_kg *kg, enum kg_slice_mode mode, uint32_t h, uint32_t layers)
{
    struct oc_err err;
    struct oc_kg_facts *f = NULL;
    OC_CHECK_OK(oc_kg_facts_open(kg, OC_KG_TRAIN, OC_KG_FACTS_DISK, &f, &err), &err);
    struct kg_slice_opts o = {mode, h, 0.5, 1, layers};
    struct kg_slicer s;
    OC_CHECK_OK(kg_slicer_init(&s, f, &o, &err), &err);
    uint32_t *q = NULL;
    uint64_t nq = 0;
    OC_CHECK_OK(oc_kg_load_queries(kg, OC_KG_TRAIN, OC_KG_VALID, &q, &nq, &err), &err);
    uint32_t qs[256];
    uint64_t n = 0;
    for (uint64_t i = 0; i < nq && n < 256; i++) {
        int dup = 0;
        for (uint64_t j = 0; j < n; j++)
            dup |= qs[j] == q[3 * i];
        if (!dup)
            qs[n++] = q[3 * i];
    }
    oc_free(q);
    struct oc_kg_facts_stats io0, io1;
    oc_kg_facts_stats(f, &io0);
    for (uint64_t i = 0; i < n; i++)
        OC_CHECK_OK(kg_slicer_slice(&s, qs[i], NULL, &err), &err);
    oc_kg_facts_stats(f, &io1);
    /* every slice respects h and its payload is its atoms' degrees */
    int bad_h = 0, bad_payload = 0;
    for (uint64_t id = 0; id < s.n_slices; id++) {
        uint64_t sum = 0;
        for (uint64_t p = s.atom_off[id]; p < s.atom_off[id + 1]; p++)
            sum += kg_facts_degree(f, s.atoms[p]);
        bad_h |= s.payload[id] > h || s.payload[id] == 0;
        bad_payload |= sum != s.payload[id];
    }
    OC_CHECK(!bad_h && !bad_payload && s.n_slices > 0);
    /* each query's slices: disjoint, and exactly its atoms of degree < h */
    uint32_t *count = oc_calloc(s.n_entities, 4, "test", &err);
    int bad_cover = 0;
    for (uint64_t i = 0; i < n && count; i++) {
        const uint32_t *atoms;
        uint64_t k;
        OC_CHECK_OK(kg_slicer_atoms_of(&s, qs[i], &atoms, &k, &err), &err);
        for (uint64_t a = 0; a < k; a++) {
            bad_cover |= kg_facts_degree(f, atoms[a]) >= h;
            count[atoms[a]] += 1000; /* expected once */
        }
        const uint32_t *ids;
        uint32_t n_ids;
        OC_CHECK(kg_slice_map_find(&s.map, qs[i], &ids, &n_ids));
        for (uint32_t j = 0; j < n_ids; j++)
            for (uint64_t p = s.atom_off[ids[j]]; p < s.atom_off[ids[j] + 1]; p++)
                count[s.atoms[p]] += 1;
        for (uint64_t a = 0; a < k; a++) {
            bad_cover |= count[atoms[a]] != 1001;
            count[atoms[a]] = 0;
        }
        for (uint64_t e = 0; e < s.n_entities; e++)
            bad_cover |= count[e] != 0; /* no atom outside the subgraph */
    }
    OC_CHECK(!bad_cover);
    oc_free(count);
    if (layers == 2) {
        /* facts read: each query entity's (to find its neighbours) and its light atoms' at
           depth 1, SEQ all of them, SiGMa those no existing slice holds; no heavy atom's */
        uint64_t facts = 0, heavy = 0;
        for (uint64_t i = 0; i < n; i++) {
            const uint32_t *atoms;
            uint64_t k;
            OC_CHECK_OK(kg_slicer_atoms_of(&s, qs[i], &atoms, &k, &err), &err);
            facts += kg_facts_degree(f, qs[i]);
            for (uint64_t a = 0; a < k; a++)
                facts += atoms[a] != qs[i] ? kg_facts_degree(f, atoms[a]) : 0;
            heavy += s.n_q - k - (kg_facts_degree(f, qs[i]) >= h);
        }
        uint64_t got = io1.bytes_requested - io0.bytes_requested;
        OC_CHECK(heavy > 0); /* the graph has heavy atoms to leave unread */
        if (mode == KG_SLICE_SEQ)
            OC_CHECK(got == 8 * facts);
        else
            OC_CHECK(got < 8 * facts); /* matched atoms are not read again */
    }
    struct kg_slice_metrics m;
    double bound = 0;
    OC_CHECK_OK(kg_slice_metrics(NULL, &s, qs, n, &m, &err), &err);
    OC_CHECK_OK(kg_slice_bound_r(&s, qs, n, &m, &bound, &err), &err);
    OC_CHECK(m.delta_r >= 1.0 && m.delta_r >= bound - 1e-12 && bound > 0);
    OC_CHECK(m.n_queries == n && m.n_slice_refs >= m.n_distinct && m.n_distinct == s.n_slices);
    if (mode == KG_SLICE_SEQ)
        OC_CHECK(m.delta_u == 1.0); /* no reuse */
    else
        OC_CHECK(m.delta_u < 1.0); /* SiGMa reuses slices across query entities */
    printf("  %s h=%u: %llu queries, %llu slices, delta_R %.3f delta_U %.3f bound %.3f\n",
           mode == KG_SLICE_SIGMA ? "sigma" : "seq", h, (unsigned long long)n,
           (unsigned long long)s.n_slices, m.delta_r, m.delta_u, bound);
    kg_slicer_deinit(&s);
    oc_kg_facts_free(f);
}

OC_TEST(kg_slices_cover_each_subgraph_once_within_h)
{
    struct oc_kg *kg = open_gen_kg("slicing", 3000, 30000, 2.5, 200);
    if (!kg)
        return;
    check_slicing(kg, KG_SLICE_SIGMA, 64, 3);
    check_slicing(kg, KG_SLICE_SIGMA, 200, 2);
    check_slicing(kg, KG_SLICE_SEQ, 64, 3);
    check_slicing(kg, KG_SLICE_SEQ, 200, 2);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

/*
 * The slicer holds memory for what it slices, not for every entity: on a KG
 * of many entities and few facts, what slicing its queries adds (scratch,
 * slices, mapping, the reader) stays under 2 bytes an entity beside SiGMa's
 * one 4-byte entry per entity (it held 28-36 bytes an entity before).
 */
OC_TEST(kg_slicer_memory_follows_what_it_slices_not_the_entities)
{
    const uint64_t n_ent = 400000;
    struct oc_kg *kg = open_gen_kg("wide", n_ent, 40000, 2.5, 100);
    struct oc_err err;
    if (!kg)
        return;
    uint32_t *q = NULL;
    uint64_t nq = 0;
    OC_CHECK_OK(oc_kg_load_queries(kg, OC_KG_TRAIN, OC_KG_VALID, &q, &nq, &err), &err);
    for (int mode = KG_SLICE_SIGMA; mode <= KG_SLICE_SEQ && q; mode++) {
        struct oc_kg_facts *f = NULL;
        OC_CHECK_OK(oc_kg_facts_open(kg, OC_KG_TRAIN, OC_KG_FACTS_DISK, &f, &err), &err);
        uint64_t before = oc_mem_used();
        struct kg_slice_opts o = {(enum kg_slice_mode)mode, 64, 0.5, 1, 3};
        struct kg_slicer s;
        OC_CHECK_OK(kg_slicer_init(&s, f, &o, &err), &err);
        for (uint64_t i = 0; i < nq; i++)
            OC_CHECK_OK(kg_slicer_slice(&s, q[3 * i], NULL, &err), &err);
        uint64_t held = oc_mem_used() - before;
        uint64_t per_entity = mode == KG_SLICE_SIGMA ? 4 : 0;
        printf("  %s: %llu slices, %llu bytes held (%.2f an entity)\n",
               mode == KG_SLICE_SIGMA ? "sigma" : "seq", (unsigned long long)s.n_slices,
               (unsigned long long)held, (double)held / (double)n_ent);
        OC_CHECK(s.n_slices > 0 && s.map.n_heads > 0);
        OC_CHECK(held <= per_entity * n_ent + 2 * n_ent);
        kg_slicer_deinit(&s);
        OC_CHECK(oc_mem_used() == before);
        oc_kg_facts_free(f);
    }
    oc_free(q);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

/*
 * A fact graph whose facts lack their inverses, which oc_kg_open does not
 * check: entity 0 has facts to 1..10, which hold only their identity fact
 * (one fact each). A slice of h = 8 facts could then hold 8 atoms, a record
 * larger than kg_slice_record_max's slot: the slicer cuts it into pieces of
 * kg_slice_atoms_max(8) = 4 atoms, which still cover the subgraph once and
 * each fit the store's record bound (the append refuses a larger one).
 */
OC_TEST(kg_slices_fit_their_slot_without_inverse_facts)
{
    char dir[700], plan[700];
    snprintf(dir, sizeof(dir), "%s/no-inverse", oc_test_tmpdir());
    snprintf(plan, sizeof(plan), "%s/no-inverse-plan", oc_test_tmpdir());
    const uint32_t n_ent = 11, idd = 2; /* R = 1: relation 0, its inverse 1, identity 2 */
    uint64_t indptr[12];
    uint32_t rel[21], tail[21], q[3] = {0, 0, 1};
    uint32_t f = 0;
    for (uint32_t e = 0; e < n_ent; e++) {
        indptr[e] = f;
        for (uint32_t t = 1; e == 0 && t < n_ent; t++, f++) {
            rel[f] = 0;
            tail[f] = t;
        }
        rel[f] = idd;
        tail[f++] = e;
    }
    indptr[n_ent] = f;
    struct oc_err err;
    struct oc_kg_writer *w = NULL;
    OC_CHECK_OK(oc_kg_writer_new(dir, &w, &err), &err);
    if (!w)
        return;
    struct oc_kg_manifest *m = oc_kg_writer_manifest(w);
    snprintf(m->name, sizeof(m->name), "no-inverse");
    m->n_relations = 1;
    int rc = OC_OK;
    for (int g = 0; g < OC_KG_GRAPH_COUNT && !rc; g++) {
        struct oc_kg_graph_info *gi = &m->graph[g];
        gi->n_entities = n_ent;
        gi->n_triples = (f - n_ent) / 2; /* as the manifest's F = 2 n_triples + N has it */
        gi->n_facts = f;
        gi->n_queries[OC_KG_VALID] = gi->n_queries[OC_KG_TEST] = 1;
        enum oc_kg_graph gg = (enum oc_kg_graph)g;
        if ((rc = oc_kg_writer_array(w, gg, OC_KG_INDPTR, n_ent + 1, indptr, &err)) ||
            (rc = oc_kg_writer_array(w, gg, OC_KG_REL, f, rel, &err)) ||
            (rc = oc_kg_writer_array(w, gg, OC_KG_TAIL, f, tail, &err)) ||
            (rc = oc_kg_writer_array(w, gg, OC_KG_QVALID, 1, q, &err)))
            break;
        rc = oc_kg_writer_array(w, gg, OC_KG_QTEST, 1, q, &err);
    }
    OC_CHECK_OK(rc, &err);
    OC_CHECK_OK(oc_kg_writer_commit(w, &err), &err);
    oc_kg_writer_free(w);
    struct oc_kg *kg = NULL;
    OC_CHECK_OK(oc_kg_open(dir, &kg, &err), &err);
    if (!kg)
        return;
    const uint32_t h = 8, most = kg_slice_atoms_max(h);
    OC_CHECK(most == 4 && kg_slice_record_max(h) == 4096);
    for (int mode = KG_SLICE_SIGMA; mode <= KG_SLICE_SEQ; mode++) {
        struct oc_kg_facts *facts = NULL;
        OC_CHECK_OK(oc_kg_facts_open(kg, OC_KG_TRAIN, OC_KG_FACTS_DISK, &facts, &err), &err);
        struct kg_slice_opts o = {(enum kg_slice_mode)mode, h, 0.5, 1, 2};
        struct kg_slicer sl;
        struct kg_slice_store st;
        OC_CHECK_OK(kg_slicer_init(&sl, facts, &o, &err), &err);
        OC_CHECK_OK(kg_slice_store_open(&st, plan, mode == KG_SLICE_SIGMA ? "tiger" : "seq",
                                        (uint64_t)mode + 1, h, n_ent, NULL, 0, facts, &err),
                    &err);
        OC_CHECK_OK(kg_slicer_slice(&sl, 0, &st, &err), &err);
        OC_CHECK_OK(kg_slice_store_publish(&st, &err), &err);
        /* the light atoms 1..10 (entity 0 is heavy: 11 facts), once each, in slices of at
           most 4 atoms and 8 facts whose records fit a slot */
        uint32_t seen[11] = {0};
        int bad = 0;
        for (uint64_t id = 0; id < sl.n_slices; id++) {
            uint64_t k = sl.atom_off[id + 1] - sl.atom_off[id];
            bad |= k > most || sl.payload[id] > h || st.bytes[id] > kg_slice_record_max(h);
            for (uint64_t p = sl.atom_off[id]; p < sl.atom_off[id + 1]; p++)
                seen[sl.atoms[p]]++;
        }
        for (uint32_t e = 0; e < n_ent; e++)
            bad |= seen[e] != (e == 0 ? 0u : 1u);
        OC_CHECK(!bad && sl.n_slices == 3);
        kg_slice_store_close(&st);
        kg_slicer_deinit(&sl);
        oc_kg_facts_free(facts);
    }
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- same weights in every mode -------------------------------------------- */

struct epochs {
    struct oc_kg_epoch_stats st[4];
    uint32_t n;
};

static void on_epoch(void *ctx, const struct oc_kg_epoch_stats *st)
{
    struct epochs *e = ctx;
    if (e->n < 4)
        e->st[e->n++] = *st;
}

static void wn_opts(struct oc_kg_train_opts *o, enum oc_kg_extract_mode m)
{
    oc_kg_train_opts_default(o);
    o->n_layers = 3;
    o->hidden = 8;
    o->attn_dim = 3;
    o->batch = 50;
    o->eval_batch = 128;
    o->epochs = 2;
    o->threads = 2;
    o->seed = 5;
    o->facts = m == OC_KG_EXTRACT_BASIC ? OC_KG_FACTS_MEMORY : OC_KG_FACTS_DISK;
    o->extract = m;
    o->slice_size = 64;
    o->superbatch = 4;
    o->atom_cache_bytes = 60 << 10; /* the map (22 KiB) and some atoms */
    o->slice_cache_bytes = 100 << 10;
}

OC_TEST(kg_extract_modes_same_weights_grail)
{
    const char *dir = kgfx_grail("WN18RR_v1");
    if (!dir)
        OC_SKIP("../shared not found");
    char sha[OC_KG_EXTRACT_COUNT][65];
    double mrr[OC_KG_EXTRACT_COUNT], score[OC_KG_EXTRACT_COUNT];
    for (int m = 0; m < OC_KG_EXTRACT_COUNT; m++) {
        struct oc_kg_train_opts o;
        wn_opts(&o, (enum oc_kg_extract_mode)m);
        struct epochs ep = {.n = 0};
        struct oc_kg_train_result res;
        struct oc_err err;
        OC_CHECK_OK(oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err), &err);
        memcpy(sha[m], res.weights_sha256, 65);
        mrr[m] = res.test_at_best.mrr;
        OC_CHECK(ep.n == 2);
        const struct oc_kg_epoch_stats *e1 = &ep.st[1];
        if (m == OC_KG_EXTRACT_ATOM) /* a partial Atom Cache: hits and disk reads */
            OC_CHECK(e1->atoms_cached > 0 && e1->atoms_disk > 0 && e1->bytes_read > 0);
        if (m >= OC_KG_EXTRACT_GINEX) {
            /* a Slice Cache too small for all: slices read again in epoch 1, some hits */
            OC_CHECK(e1->slices_read > 0 && e1->slices_hit > 0 &&
                     e1->slices_read + e1->slices_hit == e1->slices_accessed);
            OC_CHECK(e1->n_slices > 0 && e1->delta_r >= 1.0 && e1->delta_u > 0);
            OC_CHECK(ep.st[0].n_edges == e1->n_edges);
            /* each epoch's first superbatch is planned as it starts, the others ahead
               (epoch 0: sliced too) while the one before trains */
            for (int e = 0; e < 2; e++)
                OC_CHECK(ep.st[e].superbatches > 1 &&
                         ep.st[e].superbatches_ahead == ep.st[e].superbatches - 1);
            /* epoch 1 makes no slices and its cache is full: every superbatch's batch 0 but
               the first is read while the one before ends */
            OC_CHECK(e1->first_batches_ahead == e1->superbatches - 1);
        }
        score[m] = e1->delta_r * e1->delta_u;
    }
    /* SiGMa reuses slices: a lower SlicingScore than cutting each subgraph on its own */
    OC_CHECK(score[OC_KG_EXTRACT_TIGER] < score[OC_KG_EXTRACT_GINEX]);
    for (int m = 1; m < OC_KG_EXTRACT_COUNT; m++)
        OC_CHECK(strcmp(sha[0], sha[m]) == 0 && mrr[0] == mrr[m]);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- the slice store is never trusted when damaged --------------------------- */

static char warned[512];

static void capture(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    if (level == OC_LOG_WARN)
        snprintf(warned, sizeof(warned), "%s", msg);
}

/* The single store directory (tiger-<key> or ginex-slices-<key>) under plan_dir, into buf. */
static int store_dir(const char *plan_dir, char *buf, size_t n)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "ls -d %s/*-* 2>/dev/null", plan_dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    int ok = fgets(buf, (int)n, p) != NULL;
    pclose(p);
    if (ok)
        buf[strcspn(buf, "\n")] = 0;
    return ok;
}

static int read_all(const char *path, char **text, size_t *len)
{
    struct oc_err err;
    return oc_read_file(path, 0, text, len, &err) == OC_OK;
}

OC_TEST(kg_slice_store_damage_detected_and_rebuilt)
{
    const char *dir = kgfx_grail("WN18RR_v1");
    if (!dir)
        OC_SKIP("../shared not found");
    char plan[800];
    snprintf(plan, sizeof(plan), "%s/plan-damage", oc_test_tmpdir());
    struct oc_kg_train_opts o;
    wn_opts(&o, OC_KG_EXTRACT_TIGER);
    o.epochs = 1;
    o.plan_dir = plan;
    struct oc_kg_train_result ref, res;
    struct oc_err err;
    OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &ref, &err), &err);
    char sd[1000], rec[1100], idx[1100];
    OC_CHECK(store_dir(plan, sd, sizeof(sd)));
    snprintf(rec, sizeof(rec), "%s/slices.bin", sd);
    snprintf(idx, sizeof(idx), "%s/index.bin", sd);
    char *good = NULL, *good_idx = NULL;
    size_t good_len = 0, good_idx_len = 0;
    OC_CHECK(read_all(rec, &good, &good_len) && good_len > 8192);
    OC_CHECK(read_all(idx, &good_idx, &good_idx_len));
    oc_log_set_callback(capture, NULL, OC_LOG_WARN);
    enum { FLIP_RECORD, TRUNCATE, FLIP_INDEX, DROP_INDEX, MAPPED_TWICE, N_DAMAGE };
    for (int d = 0; d < N_DAMAGE && good && good_idx; d++) {
        warned[0] = 0;
        if (d == MAPPED_TWICE) {
            /* the second query entity's mapping names the first entity again, under valid
               CRCs: only the mapping's own check can refuse it */
            uint8_t *b = (uint8_t *)good_idx;
            uint64_t n_sl = 0, n_mapped = 0;
            memcpy(&n_sl, b + 32, 8);
            memcpy(&n_mapped, b + 40, 8);
            OC_CHECK(n_mapped >= 2);
            char *bad = malloc(good_idx_len);
            memcpy(bad, good_idx, good_idx_len);
            uint8_t *m = (uint8_t *)bad + 64 + n_sl * 24;
            memcpy(m + 8, m, 4);
            uint32_t crc = oc_crc32(0, bad + 64, good_idx_len - 64);
            memcpy(bad + 56, &crc, 4);
            crc = oc_crc32(0, bad, 60);
            memcpy(bad + 60, &crc, 4);
            FILE *w = fopen(idx, "wb");
            OC_CHECK(w && fwrite(bad, 1, good_idx_len, w) == good_idx_len);
            if (w)
                fclose(w);
            free(bad);
        }
        FILE *f = fopen(d == FLIP_INDEX ? idx : rec, "r+b");
        OC_CHECK(f != NULL);
        if (!f)
            break;
        if (d == FLIP_RECORD || d == FLIP_INDEX) {
            long at = d == FLIP_RECORD ? 4096 + 40 : 100; /* inside a record's facts / the table */
            fseek(f, at, SEEK_SET);
            int c = fgetc(f);
            fseek(f, at, SEEK_SET);
            fputc(c ^ 0x5a, f);
        }
        fclose(f);
        if (d == TRUNCATE)
            OC_CHECK(truncate(rec, (off_t)good_len - 4096) == 0);
        if (d == DROP_INDEX)
            OC_CHECK(unlink(idx) == 0);
        OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &res, &err), &err);
        OC_CHECK(strcmp(res.weights_sha256, ref.weights_sha256) == 0);
        if (d != DROP_INDEX)
            OC_CHECK(strstr(warned, "not usable") != NULL);
        if (d == FLIP_RECORD) /* the damaged file named */
            OC_CHECK(strstr(warned, "not usable (") && strstr(warned, "slices.bin: slice"));
        if (d == MAPPED_TWICE)
            OC_CHECK(strstr(warned, "index.bin: mapping entry 1 malformed") != NULL);
        /* rebuilt: the same bytes as the first run wrote */
        char *now = NULL, *now_idx = NULL;
        size_t now_len = 0, now_idx_len = 0;
        OC_CHECK(read_all(rec, &now, &now_len) && now_len == good_len &&
                 memcmp(now, good, good_len) == 0);
        OC_CHECK(read_all(idx, &now_idx, &now_idx_len) && now_idx_len == good_idx_len &&
                 memcmp(now_idx, good_idx, good_idx_len) == 0);
        oc_free(now);
        oc_free(now_idx);
    }
    oc_log_set_callback(NULL, NULL, OC_LOG_WARN);
    oc_free(good);
    oc_free(good_idx);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- a record damaged after the store was checked ----------------------------- */

struct damage_ctx {
    const char *plan;
    long record; /* the record (its 4 KiB page) whose first fact gets a flipped bit */
    int flipped;
};

/* After epoch 0 (the store committed): flips a bit of one record's first fact's relation. */
static void damage_record(void *ctx, const struct oc_kg_epoch_stats *st)
{
    struct damage_ctx *d = ctx;
    char sd[1000], rec[1100];
    if (st->epoch != 0 || !store_dir(d->plan, sd, sizeof(sd)))
        return;
    snprintf(rec, sizeof(rec), "%s/slices.bin", sd);
    FILE *f = fopen(rec, "r+b");
    unsigned char hdr[16];
    if (!f)
        return;
    if (fseek(f, d->record * 4096, SEEK_SET) == 0 && fread(hdr, 1, 16, f) == 16) {
        uint32_t n_atoms = (uint32_t)hdr[4] | (uint32_t)hdr[5] << 8 | (uint32_t)hdr[6] << 16 |
                           (uint32_t)hdr[7] << 24;
        long at = d->record * 4096 + 16 + 8L * n_atoms; /* past the header and atom table */
        fseek(f, at, SEEK_SET);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ 1, f);
        d->flipped = 1;
    }
    fclose(f);
}

/*
 * Each record damaged in turn once epoch 0 has committed the store: epoch 1
 * must refuse it (CRC mismatch naming slices.bin and the slice) wherever it
 * is read (a batch's own reads, the reader thread's read-ahead; removing the
 * reader's check fails this test), or never read it (cache hits) and train
 * the undamaged weights.
 */
OC_TEST(kg_slice_damaged_while_training_is_refused)
{
    const char *dir = gen_kg("damage-live", 3000, 30000, 2.5, 12);
    OC_CHECK(dir != NULL);
    char plan[800];
    snprintf(plan, sizeof(plan), "%s/plan-damage-live", oc_test_tmpdir());
    for (int m = 0; m < 2 && dir; m++) {
        struct oc_kg_train_opts o;
        oc_kg_train_opts_default(&o);
        o.n_layers = 2;
        o.hidden = 4;
        o.attn_dim = 2;
        o.batch = 1;
        o.eval_batch = 64;
        o.epochs = 2;
        o.threads = 2;
        o.facts = OC_KG_FACTS_DISK;
        o.extract = m ? OC_KG_EXTRACT_TIGER : OC_KG_EXTRACT_GINEX;
        o.slice_size = 64;
        o.superbatch = 4; /* batches 1-3 of each are read ahead by the reader thread */
        o.plan_dir = plan;
        o.slice_cache_bytes = 4 * kg_slice_record_max(64); /* a few slots */
        struct oc_kg_train_result ref, res;
        struct oc_err err, e2;
        oc_rm_rf(plan, &e2);
        OC_CHECK_OK(oc_kg_train_run(dir, &o, NULL, NULL, &ref, &err), &err);
        int refused = 0, clean = 0;
        for (long r = 0; r < 40; r++) {
            struct damage_ctx d = {plan, r, 0};
            oc_rm_rf(plan, &e2);
            oc_err_clear(&err);
            int rc = oc_kg_train_run(dir, &o, damage_record, &d, &res, &err);
            if (!d.flipped)
                break; /* past the last record */
            char want[64];
            snprintf(want, sizeof(want), "slice %ld at offset %ld: CRC mismatch", r, r * 4096);
            int ok_refused =
                rc == OC_ERR_FORMAT && strstr(err.msg, "slices.bin") && strstr(err.msg, want);
            int ok_clean = rc == OC_OK && strcmp(res.weights_sha256, ref.weights_sha256) == 0;
            OC_CHECK(ok_refused || ok_clean);
            if (!ok_refused && !ok_clean)
                printf("  record %ld: rc %d, %s\n", r, rc, rc ? err.msg : res.weights_sha256);
            refused += ok_refused;
            clean += ok_clean;
        }
        OC_CHECK(refused > 0);
        printf("  %s: %d damaged records refused, %d never read after the damage\n",
               oc_kg_extract_name(o.extract), refused, clean);
    }
    OC_CHECK(oc_mem_n_live() == 0);
}

/* ---- the Atom Cache gives atoms back under the budget ---------------------- */

/* Fetches heads[0..n) through a reader of f and checks them against the facts in RAM. */
static void check_fetch(struct oc_kg_facts *disk, struct oc_kg_facts *mem, const uint32_t *heads,
                        uint64_t n, uint64_t n_facts)
{
    struct oc_err err;
    struct oc_kg_facts_reader *a = NULL, *b = NULL;
    uint32_t *r1 = malloc(n_facts * 4 + 4), *t1 = malloc(n_facts * 4 + 4);
    uint32_t *r2 = malloc(n_facts * 4 + 4), *t2 = malloc(n_facts * 4 + 4);
    OC_CHECK_OK(oc_kg_facts_reader_new(disk, &a, &err), &err);
    OC_CHECK_OK(oc_kg_facts_reader_new(mem, &b, &err), &err);
    OC_CHECK_OK(oc_kg_facts_fetch(a, heads, n, r1, t1, &err), &err);
    OC_CHECK_OK(oc_kg_facts_fetch(b, heads, n, r2, t2, &err), &err);
    OC_CHECK(memcmp(r1, r2, n_facts * 4) == 0 && memcmp(t1, t2, n_facts * 4) == 0);
    oc_kg_facts_reader_free(a);
    oc_kg_facts_reader_free(b);
    free(r1);
    free(t1);
    free(r2);
    free(t2);
}

/* The give-back tests' generated KG and its training facts on disk and in RAM (0: not all). */
static int open_yield_facts(struct oc_kg **kg, struct oc_kg_facts **disk, struct oc_kg_facts **mem)
{
    const char *dir = gen_kg("yield", 20000, 400000, 6.0, 40);
    struct oc_err err;
    *kg = NULL;
    *disk = *mem = NULL;
    OC_CHECK(dir != NULL);
    if (!dir)
        return 0;
    OC_CHECK_OK(oc_kg_open(dir, kg, &err), &err);
    if (!*kg)
        return 0;
    OC_CHECK_OK(oc_kg_facts_open(*kg, OC_KG_TRAIN, OC_KG_FACTS_DISK, disk, &err), &err);
    OC_CHECK_OK(oc_kg_facts_open(*kg, OC_KG_TRAIN, OC_KG_FACTS_MEMORY, mem, &err), &err);
    return *disk && *mem;
}

static void close_yield_facts(struct oc_kg *kg, struct oc_kg_facts *disk, struct oc_kg_facts *mem)
{
    oc_kg_facts_free(disk);
    oc_kg_facts_free(mem);
    oc_kg_free(kg);
    OC_CHECK(oc_mem_n_live() == 0);
}

/* The cached heads among heads[0..n) (the map looked at with nobody else using it). */
static uint64_t n_in_cache(const struct kg_atom_cache *c, const uint32_t *heads, uint64_t n)
{
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        k += kg_atom_cache_get(c, heads[i]) != NULL;
    return k;
}

OC_TEST(kg_atom_cache_gives_atoms_back_past_the_budget)
{
    struct oc_err err;
    struct oc_kg *kg;
    struct oc_kg_facts *disk, *mem;
    if (!open_yield_facts(&kg, &disk, &mem))
        goto out;
    struct kg_atom_cache c;
    uint64_t used0 = oc_mem_used();
    OC_CHECK_OK(kg_atom_cache_build(&c, disk, (uint64_t)4 << 20, &err), &err);
    uint64_t built = kg_atom_cache_bytes(&c), n_ent = oc_kg_facts_n_entities(disk);
    OC_CHECK(c.n_atoms > 400 && built <= (uint64_t)4 << 20 && built > (uint64_t)3 << 20);
    OC_CHECK(oc_mem_used() - used0 >= built);
    /* heads: every 8th cached atom (heaviest first) and 200 entities of the tail */
    uint32_t heads[800];
    uint64_t n = 0, n_facts = 0;
    for (uint64_t i = 0; i < c.n_atoms && n < 600; i += 8)
        heads[n++] = c.order[i];
    for (uint64_t e = n_ent - 200; e < n_ent; e++)
        heads[n++] = (uint32_t)e;
    for (uint64_t i = 0; i < n; i++)
        n_facts += kg_facts_degree(disk, heads[i]);
    kg_facts_set_atoms(disk, NULL, &c, 0);
    { /* the index: exactly the atoms built are found, and fetching every entity gives its facts */
        uint32_t *all = malloc(n_ent * 4);
        uint64_t found = 0, all_facts = 0;
        for (uint64_t e = 0; e < n_ent; e++) {
            all[e] = (uint32_t)(n_ent - 1 - e);
            all_facts += kg_facts_degree(disk, all[e]);
            found += kg_atom_cache_get(&c, (uint32_t)e) != NULL;
        }
        OC_CHECK(found == c.n_atoms && kg_atom_cache_get(&c, (uint32_t)n_ent) == NULL);
        for (uint64_t i = 0; i < c.n_atoms; i++)
            OC_CHECK(kg_atom_cache_get(&c, c.order[i]) != NULL);
        check_fetch(disk, mem, all, n_ent, all_facts);
        free(all);
    }
    uint64_t b, cached0, cached, from_graph;
    kg_facts_atom_counts(disk, &b, &cached0, &from_graph);
    uint64_t expect = n_in_cache(&c, heads, n);
    check_fetch(disk, mem, heads, n, n_facts);
    kg_facts_atom_counts(disk, &b, &cached, &from_graph);
    OC_CHECK(cached - cached0 == expect && expect > 50);
    /* the fetch's own memory first, then a budget at what is held: a request 2 MiB past it
       takes at least that from the cache, its lightest atoms first */
    check_fetch(disk, mem, heads, n, n_facts);
    oc_mem_set_budget(oc_mem_used() + ((uint64_t)1 << 20));
    OC_CHECK_OK(kg_atom_cache_register(&c, &err), &err);
    uint64_t atoms0 = c.n_atoms;
    uint32_t lightest = c.order[atoms0 - 1], heaviest = c.order[0];
    void *big = oc_alloc((size_t)3 << 20, "test: past the budget", &err);
    OC_CHECK(big != NULL);
    OC_CHECK(kg_atom_cache_bytes(&c) + ((uint64_t)2 << 20) <= built);
    OC_CHECK(c.n_atoms < atoms0 && c.n_atoms > 0 && c.index.bits != NULL);
    OC_CHECK(!kg_atom_cache_get(&c, lightest) && kg_atom_cache_get(&c, heaviest));
    OC_CHECK(oc_mem_used() <= oc_mem_budget());
    oc_mem_set_budget(oc_mem_used() + ((uint64_t)2 << 20)); /* the fetch's own, not the cache's */
    expect = n_in_cache(&c, heads, n);
    kg_facts_atom_counts(disk, &b, &cached0, &from_graph);
    check_fetch(disk, mem, heads, n, n_facts); /* the same facts, fewer from the cache */
    kg_facts_atom_counts(disk, &b, &cached, &from_graph);
    OC_CHECK(cached - cached0 == expect);
    /* more than the atoms hold: every atom, then the index */
    oc_mem_set_budget(oc_mem_used() + 4096);
    void *more = oc_alloc((size_t)(4096 + kg_atom_cache_bytes(&c)), "test: past the budget", &err);
    OC_CHECK(more != NULL);
    OC_CHECK(c.n_atoms == 0 && c.index.bits == NULL && kg_atom_cache_bytes(&c) == 0);
    oc_mem_set_budget(oc_mem_used() + ((uint64_t)2 << 20));
    kg_facts_atom_counts(disk, &b, &cached0, &from_graph);
    check_fetch(disk, mem, heads, n, n_facts);
    kg_facts_atom_counts(disk, &b, &cached, &from_graph);
    OC_CHECK(cached == cached0);
    /* nothing left to give: a request past the budget fails */
    oc_mem_set_budget(oc_mem_used() + 4096);
    void *none = oc_alloc((size_t)1 << 20, "test: past the budget", &err);
    OC_CHECK(none == NULL && err.status == OC_ERR_BUDGET);
    oc_free(none);
    oc_free(big);
    oc_free(more);
    oc_mem_set_budget(0);
    kg_facts_set_atoms(disk, NULL, NULL, 0);
    kg_atom_cache_deinit(&c);
    OC_CHECK(oc_mem_used() == used0);
out:
    close_yield_facts(kg, disk, mem);
}

/*
 * Two threads fetch while the cache gives back, step by step, until it holds
 * nothing: every fetch gives the facts in RAM (an atom read while its pages
 * go back would give zeros), under TSan no race between the lookups and the
 * giving back, and no step waits for readers that keep coming.
 */
struct fetcher {
    struct oc_kg_facts *disk, *mem;
    const uint32_t *heads;
    uint64_t n, n_facts;
    _Atomic int *stop;
    _Atomic uint64_t rounds;
    _Atomic int failed;
    int bad;
};

static void *fetch_loop(void *p)
{
    struct fetcher *t = p;
    struct oc_err err;
    struct oc_kg_facts_reader *a = NULL, *b = NULL;
    uint32_t *r1 = malloc(t->n_facts * 4 + 4), *t1 = malloc(t->n_facts * 4 + 4);
    uint32_t *r2 = malloc(t->n_facts * 4 + 4), *t2 = malloc(t->n_facts * 4 + 4);
    int failed = oc_kg_facts_reader_new(t->disk, &a, &err) != OC_OK ||
                 oc_kg_facts_reader_new(t->mem, &b, &err) != OC_OK ||
                 oc_kg_facts_fetch(b, t->heads, t->n, r2, t2, &err) != OC_OK;
    while (!failed && !atomic_load(t->stop)) {
        memset(r1, 0xff, t->n_facts * 4);
        memset(t1, 0xff, t->n_facts * 4);
        if (oc_kg_facts_fetch(a, t->heads, t->n, r1, t1, &err) != OC_OK) {
            failed = 1;
            fprintf(stderr, "  fetch: %s\n", err.msg);
            break;
        }
        t->bad += memcmp(r1, r2, t->n_facts * 4) != 0 || memcmp(t1, t2, t->n_facts * 4) != 0;
        atomic_fetch_add(&t->rounds, 1);
    }
    atomic_store(&t->failed, failed);
    oc_kg_facts_reader_free(a);
    oc_kg_facts_reader_free(b);
    free(r1);
    free(t1);
    free(r2);
    free(t2);
    return NULL;
}

OC_TEST(kg_atom_cache_fetches_stay_right_while_it_gives_back)
{
    struct oc_err err;
    struct oc_kg *kg;
    struct oc_kg_facts *disk, *mem;
    if (!open_yield_facts(&kg, &disk, &mem))
        goto out;
    struct kg_atom_cache c;
    OC_CHECK_OK(kg_atom_cache_build(&c, disk, (uint64_t)4 << 20, &err), &err);
    kg_facts_set_atoms(disk, NULL, &c, 0);
    /* every 4th cached atom, lightest first (the first given back), and 100 uncached entities */
    uint64_t n_ent = oc_kg_facts_n_entities(disk), n = 0, n_facts = 0;
    uint32_t *heads = malloc((c.n_atoms / 4 + 101) * 4);
    for (uint64_t i = c.n_atoms; i >= 4; i -= 4)
        heads[n++] = c.order[i - 1];
    for (uint64_t e = n_ent - 100; e < n_ent; e++)
        heads[n++] = (uint32_t)e;
    for (uint64_t i = 0; i < n; i++)
        n_facts += kg_facts_degree(disk, heads[i]);
    _Atomic int stop = 0;
    struct fetcher f[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        f[k] = (struct fetcher){disk, mem, heads, n, n_facts, &stop, 0, 0, 0};
        OC_CHECK(pthread_create(&th[k], NULL, fetch_loop, &f[k]) == 0);
    }
    for (int k = 0; k < 2; k++) /* each has its scratch before the budget tightens */
        while (atomic_load(&f[k].rounds) == 0 && !atomic_load(&f[k].failed))
            sched_yield();
    OC_CHECK_OK(kg_atom_cache_register(&c, &err), &err);
    unsigned steps = 0;
    double slowest = 0;
    while (c.index.bits && steps < 200 && !atomic_load(&f[0].failed) &&
           !atomic_load(&f[1].failed)) {
        uint64_t seen[2] = {atomic_load(&f[0].rounds), atomic_load(&f[1].rounds)};
        oc_mem_set_budget(oc_mem_used() + ((uint64_t)1 << 20));
        double t0 = oc_now_s();
        void *p = oc_alloc(((size_t)1 << 20) + 64, "test: past the budget", &err);
        slowest = oc_now_s() - t0 > slowest ? oc_now_s() - t0 : slowest;
        OC_CHECK(p != NULL);
        oc_free(p);
        oc_mem_set_budget(0);
        steps++;
        for (int k = 0; k < 2; k++) /* both fetched again since this step began */
            while (atomic_load(&f[k].rounds) < seen[k] + 2 && !atomic_load(&f[k].failed))
                sched_yield();
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        OC_CHECK(!atomic_load(&f[k].failed) && f[k].bad == 0);
    }
    printf("  %u steps gave the cache back (slowest %.3f s) while the fetchers made %llu and "
           "%llu rounds\n",
           steps, slowest, (unsigned long long)f[0].rounds, (unsigned long long)f[1].rounds);
    OC_CHECK(c.index.bits == NULL && c.n_atoms == 0 && kg_atom_cache_bytes(&c) == 0 && steps > 4);
    OC_CHECK(slowest < 1.0); /* a give-back waits for the readers inside, not for new ones */
    free(heads);
    kg_facts_set_atoms(disk, NULL, NULL, 0);
    kg_atom_cache_deinit(&c);
out:
    close_yield_facts(kg, disk, mem);
}

/* ---- the Slice Cache gives slots back and takes them back ------------------ */

#define GB_BATCH 4
#define GB_SB    6 /* batches a superbatch; two an epoch */

/* The atoms of the slices of heads[0..n) (the slicer's, every head sliced), into *atoms. */
static uint64_t slice_atoms(struct kg_tiger *t, const uint32_t *heads, uint64_t n,
                            struct oc_kg_facts *f, uint32_t *atoms, uint64_t *n_facts)
{
    const struct kg_slicer *sl = kg_tiger_slicer(t);
    uint64_t k = 0;
    *n_facts = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint32_t *ids;
        uint32_t m;
        kg_slice_store_slices_of(kg_tiger_store(t), sl, heads[i], &ids, &m);
        for (uint32_t x = 0; x < m; x++)
            for (uint64_t p = sl->atom_off[ids[x]]; p < sl->atom_off[ids[x] + 1]; p++) {
                atoms[k++] = sl->atoms[p];
                *n_facts += kg_facts_degree(f, sl->atoms[p]);
            }
    }
    return k;
}

/*
 * One epoch of two superbatches over heads[0..2 GB_SB GB_BATCH): each loaded
 * batch's slice atoms fetched from the disk graph (served from the batch map)
 * equal the graph in RAM (check: after epoch 0, which slices). squeeze: while
 * the first batch is loaded, a request past the budget takes every slot it
 * does not pin, then the budget is lifted (the next superbatch takes them
 * back). The first error of the executor's calls, in err (the epoch stops).
 * squeeze_nomem: the squeezing request itself failed as a system allocation.
 */
static int squeeze_nomem;

static int gb_epoch(struct kg_tiger *t, const uint32_t *heads, struct oc_kg_facts *disk,
                    struct oc_kg_facts *mem, int check, int squeeze, uint64_t *live_squeezed,
                    struct oc_err *err)
{
    uint64_t boff[GB_SB + 1];
    for (int b = 0; b <= GB_SB; b++)
        boff[b] = (uint64_t)b * GB_BATCH;
    uint32_t atoms[4096];
    for (int sb = 0; sb < 2; sb++) {
        const uint32_t *h = heads + sb * GB_SB * GB_BATCH;
        int rc = kg_tiger_superbatch(t, h, boff, GB_SB, sb ? NULL : h + GB_SB * GB_BATCH,
                                     sb ? NULL : boff, sb ? 0 : GB_SB, err);
        for (uint32_t i = 0; !rc && i < GB_SB; i++) {
            if ((rc = kg_tiger_batch_load(t, i, err)))
                break;
            if (squeeze && sb == 0 && i == 0) {
                struct oc_err e2;
                oc_mem_set_budget(oc_mem_used() + 4096);
                struct kg_tiger_stats st;
                kg_tiger_stats(t, &st);
                void *p = oc_alloc((size_t)st.cache_bytes, "test: past the budget", &e2);
                if (!p && e2.status == OC_ERR_NOMEM)
                    squeeze_nomem = 1; /* (a fault test's fault hit this request itself) */
                oc_free(p);
                oc_mem_set_budget(0);
                kg_tiger_stats(t, &st);
                *live_squeezed = st.cache_bytes;
            }
            if (check) {
                uint64_t nf, n = slice_atoms(t, h + i * GB_BATCH, GB_BATCH, disk, atoms, &nf);
                uint64_t b0, b1, c, g;
                kg_facts_atom_counts(disk, &b0, &c, &g);
                check_fetch(disk, mem, atoms, n, nf);
                kg_facts_atom_counts(disk, &b1, &c, &g);
                OC_CHECK(n > 0 && b1 - b0 == n); /* every atom from the batch's slices */
            }
            rc = kg_tiger_batch_done(t, i, err);
        }
        if (rc)
            return rc;
    }
    return kg_tiger_epoch_end(t, err);
}

/* The give-back tests' KG, its training facts on disk and in RAM, the heads and a plan dir. */
struct gb_fixture {
    struct oc_kg *kg;
    struct oc_kg_facts *disk, *mem;
    uint32_t heads[2 * GB_SB * GB_BATCH];
    char plan[800];
};

/*
 * Opens the KG (open_yield_facts; 0 if not), takes 48 light heads of its tail
 * (every 4th of the last 192 entities) and empties the plan dir.
 */
static int gb_open(struct gb_fixture *g)
{
    if (!open_yield_facts(&g->kg, &g->disk, &g->mem))
        return 0;
    uint64_t n_ent = oc_kg_facts_n_entities(g->disk);
    for (int i = 0; i < 2 * GB_SB * GB_BATCH; i++)
        g->heads[i] = (uint32_t)(n_ent - 192 + 4 * (uint64_t)i);
    char cmd[900];
    snprintf(g->plan, sizeof(g->plan), "%s/plan-slice-gives", oc_test_tmpdir());
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g->plan);
    OC_CHECK(system(cmd) == 0);
    return 1;
}

/* An executor over heads with a 4 MiB Slice Cache that gives back (made under a budget). */
static struct kg_tiger *gb_new(struct oc_kg_facts *disk, const uint32_t *heads, const char *plan,
                               struct oc_err *err)
{
    struct kg_tiger_config c = {
        disk, NULL, {KG_SLICE_SIGMA, 64, 0.5, 1, 2}, plan, 7, 4 << 20, heads, 2 * GB_SB * GB_BATCH};
    struct kg_tiger *t = NULL;
    oc_mem_set_budget(oc_mem_used() + ((uint64_t)256 << 20)); /* a budget: it gives back */
    int rc = kg_tiger_new(&c, &t, err);
    oc_mem_set_budget(0);
    return rc ? NULL : t;
}

OC_TEST(kg_slice_cache_gives_slots_back_and_takes_them_back)
{
    struct oc_err err;
    struct gb_fixture g;
    if (!gb_open(&g))
        goto out;
    uint64_t used0 = oc_mem_used();
    struct kg_tiger *t = gb_new(g.disk, g.heads, g.plan, &err);
    OC_CHECK(t != NULL);
    if (!t)
        goto out;
    struct kg_tiger_stats s0, s1, s2, s3;
    OC_CHECK_OK(gb_epoch(t, g.heads, g.disk, g.mem, 0, 0, NULL, &err), &err); /* slices */
    kg_tiger_stats(t, &s0);
    uint64_t full = s0.cache_bytes, n_slices = kg_tiger_slicer(t)->n_slices;
    OC_CHECK(full == (uint64_t)4 << 20 && n_slices > 2 * GB_SB && n_slices * 4096 < full);
    /* all cached: nothing read */
    OC_CHECK_OK(gb_epoch(t, g.heads, g.disk, g.mem, 1, 0, NULL, &err), &err);
    kg_tiger_stats(t, &s1);
    OC_CHECK(s1.slices_read == s0.slices_read && s1.slices_hit > s0.slices_hit);
    /* squeezed while batch 0 is loaded: only its slots stay; batch 1, read ahead as hits,
       is read again as it loads; the next superbatch takes the slots back with the slices
       the plan keeps there */
    uint64_t squeezed = 0;
    OC_CHECK_OK(gb_epoch(t, g.heads, g.disk, g.mem, 1, 1, &squeezed, &err), &err);
    kg_tiger_stats(t, &s2);
    printf("  squeezed to %llu of %llu bytes; epoch 2 read %llu slices, %llu taken back\n",
           (unsigned long long)squeezed, (unsigned long long)full,
           (unsigned long long)(s2.slices_read - s1.slices_read),
           (unsigned long long)(s2.warm_reads - s1.warm_reads));
    OC_CHECK(squeezed > 0 && squeezed < full / 8);
    OC_CHECK(s2.slices_read > s1.slices_read && s2.warm_reads > s1.warm_reads);
    OC_CHECK(s2.cache_bytes == full);
    /* all back, holding what the plan says: nothing read again, hits predicted exactly */
    OC_CHECK_OK(gb_epoch(t, g.heads, g.disk, g.mem, 1, 0, NULL, &err), &err);
    kg_tiger_stats(t, &s3);
    OC_CHECK(s3.slices_read == s2.slices_read && s3.warm_reads == s2.warm_reads);
    kg_tiger_free(t);
    OC_CHECK(oc_mem_used() == used0);
out:
    close_yield_facts(g.kg, g.disk, g.mem);
}

/*
 * A failed allocation or read anywhere in the squeezed epoch and the one that
 * takes the slots back (reads ahead, reads again, fills) is an error with a
 * message, and freeing the executor then gives every byte back.
 */
OC_TEST(kg_slice_cache_give_back_under_faults)
{
    struct oc_err err;
    struct gb_fixture g;
    if (!gb_open(&g))
        goto out;
    const enum oc_fault_kind kinds[] = {OC_FAULT_ALLOC, OC_FAULT_READ, OC_FAULT_BATCH_SUBMIT};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        uint64_t fired = 0, nth = 1;
        for (;; nth = nth < 16 ? nth + 1 : nth * 3 / 2) {
            uint64_t used0 = oc_mem_used(), live0 = oc_mem_n_live();
            struct kg_tiger *t = gb_new(g.disk, g.heads, g.plan, &err);
            OC_CHECK(t != NULL);
            if (!t)
                break;
            uint64_t squeezed = 0;
            int rc =
                gb_epoch(t, g.heads, g.disk, g.mem, 0, 0, NULL, &err); /* slices (reused store) */
            rc = rc ? rc : gb_epoch(t, g.heads, g.disk, g.mem, 0, 0, NULL, &err);
            OC_CHECK_OK(rc, &err);
            squeeze_nomem = 0;
            oc_fault_arm(kinds[k], nth, kinds[k] == OC_FAULT_ALLOC ? ENOMEM : EIO);
            rc = gb_epoch(t, g.heads, g.disk, g.mem, 0, 1, &squeezed, &err);
            rc = rc ? rc : gb_epoch(t, g.heads, g.disk, g.mem, 0, 0, NULL, &err);
            int hit = oc_fault_fired(kinds[k]), own = hit && squeeze_nomem && rc == OC_OK;
            oc_fault_disarm_all();
            oc_mem_set_budget(0);
            if (hit && !own)
                OC_CHECK(rc != OC_OK && err.msg[0] != '\0');
            else
                OC_CHECK_OK(rc, &err);
            kg_tiger_free(t);
            OC_CHECK(oc_mem_used() == used0 && oc_mem_n_live() == live0);
            if (!hit)
                break;
            fired++;
        }
        printf("  %s: %llu faults, each an error, every byte given back\n",
               oc_fault_kind_name(kinds[k]), (unsigned long long)fired);
        OC_CHECK(fired > 0);
    }
out:
    close_yield_facts(g.kg, g.disk, g.mem);
}

/* ---- a generated KG under a budget smaller than its fact graph ------------- */

static int store_reused, slice_gave;

/* Notes a slice store reused and a Slice Cache that gave back, from the INFO log. */
static void note_reuse(void *ctx, enum oc_log_level level, const char *msg)
{
    (void)ctx;
    if (level == OC_LOG_INFO && strstr(msg, "kg slice store") && strstr(msg, ": reused ("))
        store_reused = 1;
    if (level == OC_LOG_INFO && strstr(msg, "kg slice cache: gave "))
        slice_gave = 1;
}

#define ATOM_CACHE_BIG_MIB 10 /* more than 18 MiB leave once the run is measured */

static void budget_opts(struct oc_kg_train_opts *o, enum oc_kg_extract_mode m)
{
    oc_kg_train_opts_default(o);
    o->n_layers = 2;
    o->hidden = 4;
    o->attn_dim = 2;
    o->batch = 1;
    o->eval_batch = 1;
    o->epochs = 2;
    o->threads = 2;
    o->seed = 5;
    o->facts = OC_KG_FACTS_DISK;
    o->extract = m;
    o->slice_size = 256;
    o->superbatch = 8;
    o->atom_cache_bytes = 1 << 20; /* its index (about 10 KiB) and the heaviest atoms */
    o->slice_cache_bytes = 1 << 20;
}

OC_TEST(kg_extract_modes_same_weights_under_budget_and_after_kill)
{
    const char *bin = getenv("OC_BIN");
    const char *dir = gen_kg("budget", 50000, 1250000, 6.0, 40);
    OC_CHECK(dir != NULL);
    if (!dir)
        return;
    struct oc_kg *kg = NULL;
    struct oc_err err;
    OC_CHECK_OK(oc_kg_open(dir, &kg, &err), &err);
    uint64_t fact_bytes = kg ? oc_kg_manifest(kg)->graph[OC_KG_TRAIN].n_facts * 8 : 0;
    oc_kg_free(kg);
    const uint64_t budget = (uint64_t)18 << 20;
    OC_CHECK(budget < fact_bytes);
    char sha[OC_KG_EXTRACT_COUNT][65];
    uint64_t tiger_peak = 0;
    for (int m = 0; m < OC_KG_EXTRACT_COUNT; m++) {
        struct oc_kg_train_opts o;
        budget_opts(&o, (enum oc_kg_extract_mode)m);
        struct epochs ep = {.n = 0};
        struct oc_kg_train_result res;
        oc_mem_set_budget(budget);
        oc_mem_reset_peak();
        OC_CHECK_OK(oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err), &err);
        OC_CHECK(oc_mem_peak() <= budget);
        oc_mem_set_budget(0);
        memcpy(sha[m], res.weights_sha256, 65);
        if (m >= OC_KG_EXTRACT_GINEX)
            OC_CHECK(ep.n == 2 && ep.st[1].slices_read > 0 && ep.st[0].n_slices > 0 &&
                     ep.st[0].slicing_s > 0);
        if (m == OC_KG_EXTRACT_TIGER)
            tiger_peak = oc_mem_peak();
    }
    for (int m = 1; m < OC_KG_EXTRACT_COUNT; m++)
        OC_CHECK(strcmp(sha[0], sha[m]) == 0);
    /* the same run again reuses its slice store (nothing sliced) and holds no more than the run
       that sliced: the store's mapping replaces the slicer's arrays instead of joining them */
    {
        struct oc_kg_train_opts o;
        budget_opts(&o, OC_KG_EXTRACT_TIGER);
        struct epochs ep = {.n = 0};
        struct oc_kg_train_result res;
        oc_mem_set_budget(budget);
        oc_mem_reset_peak();
        store_reused = 0;
        oc_log_set_callback(note_reuse, NULL, OC_LOG_INFO);
        OC_CHECK_OK(oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err), &err);
        oc_log_set_callback(NULL, NULL, OC_LOG_WARN);
        uint64_t peak = oc_mem_peak();
        oc_mem_set_budget(0);
        fprintf(stderr, "  tiger peak: %llu bytes slicing, %llu reusing its store\n",
                (unsigned long long)tiger_peak, (unsigned long long)peak);
        OC_CHECK(store_reused && ep.n == 2 && ep.st[0].n_slices > 0);
        OC_CHECK(peak <= tiger_peak);
        OC_CHECK(strcmp(res.weights_sha256, sha[0]) == 0);
    }
    /* a budget too small for the run: refused before the first step, naming the smallest
       budget that fits (measured), which the caches cannot lower */
    {
        struct oc_kg_train_opts o;
        budget_opts(&o, OC_KG_EXTRACT_TIGER);
        struct oc_kg_train_result res;
        oc_mem_set_budget((uint64_t)7 << 20);
        int rc = oc_kg_train_run(dir, &o, NULL, NULL, &res, &err);
        oc_mem_set_budget(0);
        fprintf(stderr, "  tiger in 7 MiB: %s\n", err.msg);
        OC_CHECK(rc == OC_ERR_BUDGET && strstr(err.msg, "the smallest that fits is --mem-budget") &&
                 res.need_bytes > ((uint64_t)7 << 20) && res.epochs_run == 0);
    }
    /* a Slice Cache that leaves the slicer and extraction too little gives slots back: the
       same weights (it failed with "kg slicer needs ..." before it could) */
    {
        struct oc_kg_train_opts o;
        budget_opts(&o, OC_KG_EXTRACT_TIGER);
        o.slice_cache_bytes = (uint64_t)10 << 20;
        char fresh[800];
        snprintf(fresh, sizeof(fresh), "%s/plan-slice-gives-run", oc_test_tmpdir());
        o.plan_dir = fresh;
        struct epochs ep = {.n = 0};
        struct oc_kg_train_result res;
        oc_mem_set_budget(budget);
        oc_mem_reset_peak();
        slice_gave = 0;
        oc_log_set_callback(note_reuse, NULL, OC_LOG_INFO);
        OC_CHECK_OK(oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err), &err);
        oc_log_set_callback(NULL, NULL, OC_LOG_WARN);
        OC_CHECK(oc_mem_peak() <= budget);
        oc_mem_set_budget(0);
        fprintf(stderr,
                "  tiger: Slice Cache of 10 MiB in 18 MiB: %llu bytes after epoch 0, %llu "
                "after epoch 1\n",
                (unsigned long long)ep.st[0].slice_cache_bytes,
                (unsigned long long)ep.st[1].slice_cache_bytes);
        OC_CHECK(ep.n == 2 && slice_gave && ep.st[0].slice_cache_bytes < ((uint64_t)10 << 20));
        OC_CHECK(ep.st[0].n_slices > 0 && ep.st[1].slices_hit > 0);
        OC_CHECK(strcmp(res.weights_sha256, sha[0]) == 0);
    }
    /* an Atom Cache of a set size is filled before training: it counts in what the run needs
       (refused in 18 MiB, naming the budget that holds it), and that budget trains to the same
       weights, never past it */
    for (int m = OC_KG_EXTRACT_ATOM; m <= OC_KG_EXTRACT_TIGER; m += OC_KG_EXTRACT_TIGER - 1) {
        struct oc_kg_train_opts o;
        budget_opts(&o, (enum oc_kg_extract_mode)m);
        o.atom_cache_bytes = (uint64_t)ATOM_CACHE_BIG_MIB << 20;
        char fresh[800]; /* tiger slices (its planner reads the cache) instead of reusing */
        snprintf(fresh, sizeof(fresh), "%s/plan-atom-big-%d", oc_test_tmpdir(), m);
        o.plan_dir = fresh;
        struct epochs ep = {.n = 0};
        struct oc_kg_train_result res;
        oc_mem_set_budget(budget);
        int rc = oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err);
        oc_mem_set_budget(0);
        OC_CHECK(rc == OC_ERR_BUDGET && ep.n == 0 && res.need_bytes > budget &&
                 strstr(err.msg, "--atom-cache"));
        uint64_t fits = (res.need_bytes + (1u << 20) - 1) >> 20 << 20;
        ep.n = 0;
        oc_mem_set_budget(fits);
        oc_mem_reset_peak();
        OC_CHECK_OK(oc_kg_train_run(dir, &o, on_epoch, &ep, &res, &err), &err);
        OC_CHECK(oc_mem_peak() <= fits);
        oc_mem_set_budget(0);
        fprintf(stderr, "  %s: Atom Cache of %d MiB: refused in 18 MiB, trains in %llu MiB\n",
                oc_kg_extract_name((enum oc_kg_extract_mode)m), ATOM_CACHE_BIG_MIB,
                (unsigned long long)(fits >> 20));
        OC_CHECK(ep.n == 2);
        if (m == OC_KG_EXTRACT_TIGER)
            OC_CHECK(ep.st[0].slicing_s > 0 && ep.st[0].n_slices > 0);
        OC_CHECK(strcmp(res.weights_sha256, sha[0]) == 0);
    }
    /* kill -9 while epoch 0 slices (its records exist only under a temporary name) */
    if (!bin || !*bin) {
        printf("  OC_BIN not set: kill -9 part skipped\n");
        return;
    }
    char plan[800], out[900];
    snprintf(plan, sizeof(plan), "%s/plan-kill", oc_test_tmpdir());
    snprintf(out, sizeof(out), "%s/kill.out", oc_test_tmpdir());
    char *argv[] = {
        (char *)bin, "kg-train",     (char *)dir, "--preset",      "none",  "--layers",
        "2",         "--hidden",     "4",         "--attn-dim",    "2",     "--batch",
        "1",         "--eval-batch", "1",         "--epochs",      "2",     "--threads",
        "2",         "--seed",       "5",         "--extract",     "tiger", "--slice-size",
        "256",       "--superbatch", "8",         "--plan-dir",    plan,    "--mem-budget",
        "18M",       "--atom-cache", "1M",        "--slice-cache", "1M",    "--quiet",
        NULL};
    pid_t pid = proc_spawn(argv, out);
    OC_CHECK(pid > 0);
    int seen_tmp = 0;
    for (int i = 0; i < 2000 && !seen_tmp; i++) {
        char sd[1000], cmd[1200];
        if (store_dir(plan, sd, sizeof(sd))) {
            snprintf(cmd, sizeof(cmd), "ls %s | grep -q 'slices.bin.tmp-'", sd);
            seen_tmp = system(cmd) == 0;
        }
        if (!seen_tmp)
            usleep(2000);
    }
    OC_CHECK(seen_tmp);
    kill(pid, SIGKILL);
    OC_CHECK(proc_wait(pid) == 128 + SIGKILL);
    struct proc_run r;
    const char *args[] = {"kg-train",     dir,  "--preset",      "none",  "--layers",     "2",
                          "--hidden",     "4",  "--attn-dim",    "2",     "--batch",      "1",
                          "--eval-batch", "1",  "--epochs",      "2",     "--threads",    "2",
                          "--seed",       "5",  "--extract",     "tiger", "--slice-size", "256",
                          "--superbatch", "8",  "--plan-dir",    plan,    "--mem-budget", "18M",
                          "--atom-cache", "1M", "--slice-cache", "1M",    "--quiet",      NULL};
    proc_run_cli(args, 300, &r);
    OC_CHECK(r.code == 0 && r.out && strstr(r.out, sha[0]) != NULL);
    if (r.code != 0 && r.err)
        fprintf(stderr, "%s", r.err);
    proc_run_free(&r);
    char sd[1000], cmd[1200];
    OC_CHECK(store_dir(plan, sd, sizeof(sd)));
    snprintf(cmd, sizeof(cmd), "ls %s | grep -q 'tmp-'", sd);
    OC_CHECK(system(cmd) != 0); /* the killed run's temporary is gone */
    OC_CHECK(oc_mem_n_live() == 0);
}

OC_TEST_MAIN()
