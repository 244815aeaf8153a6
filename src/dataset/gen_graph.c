/*
 * gen_graph.c — the generator's topology: planted classes, Chung–Lu node
 * weights with a power-law tail, and a homophilous edge mixture, streamed
 * into the external edge sorter.
 *
 *   weights  w_i = U_i^(-1/(γ-1)), U_i = hash(seed, i) in (0,1]; capped so no
 *            node expects more than sqrt(N·D) neighbors (iterated: the cap
 *            moves the mean)
 *   draw     u ~ w (alias table over all nodes)
 *            v ~ w restricted to class(u) with probability `homophily`,
 *              else v ~ w over all nodes; a self-loop is redrawn
 *   edges    M = N·D/2 undirected draws, symmetrized by the sorter
 *   communities (--communities, gen_comm.c): u ~ w as above, drawn as a
 *            community by total weight then a member by weight; v ~ w' inside
 *            u's community with probability (1 - μ)·w'_u/w_u, else by the
 *            class rule, where w' caps weights to what the community can
 *            hold (chunk_task_comm). The per-community tables replace the
 *            table over all nodes; while drawing, memory grows by 2 bytes per
 *            node (the caps) and 4 before (the membership, freed once the
 *            tables are built).
 *
 * Draws come in fixed-size chunks; chunk k uses the Philox stream
 * (seed, GEN_STREAM_EDGES, k), so the edge multiset does not depend on the
 * thread count. Chunks are drawn in parallel windows on the pool and fed to
 * the sorter in chunk order by the calling thread.
 *
 * Place in the data flow: dataset (generate → edge sorter → builder).
 * Thread-safety: pool tasks read the shared tables and write only their own
 * chunk slot.
 * Ownership: every table is oc_alloc'd here and freed before returning.
 */
#include <math.h>
#include <string.h>

#include "dataset/gen_int.h"

#define GEN_CHUNK_DRAWS  ((uint64_t)1 << 16) /* draws per chunk (fixed: part of the output) */
#define GEN_NODE_BLOCK   ((uint64_t)1 << 16) /* nodes per task in per-node passes */
#define GEN_SELF_RETRIES 8

/*
 * One column of a Walker/Vose alias table, resolved to node ids so that a
 * draw touches one cache line: column k (uniform) yields `keep` if a u32 draw
 * is below thr, else `alias`.
 */
struct gen_slot {
    uint32_t thr;
    uint32_t keep;
    uint32_t alias;
};

static inline uint32_t slot_draw(const struct gen_slot *t, uint64_t n, struct oc_rng *r)
{
    uint64_t x = oc_rng_u64(r);
    const struct gen_slot *c = &t[(uint64_t)(((unsigned __int128)x * n) >> 64)];
    return oc_rng_u32(r) < c->thr ? c->keep : c->alias;
}

/* ---- classes ------------------------------------------------------------ */

struct class_ctx {
    struct oc_gen *g;
};

static int class_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct oc_gen *g = ((struct class_ctx *)ctx)->g;
    uint64_t lo = task * GEN_NODE_BLOCK;
    uint64_t hi = lo + GEN_NODE_BLOCK < g->o.n_nodes ? lo + GEN_NODE_BLOCK : g->o.n_nodes;
    if (g->comm.n_comm == 0) {
        for (uint64_t i = lo; i < hi; i++)
            g->cls[i] = gen_class_of(g, i);
        return OC_OK;
    }
    /* Communities: the community's dominant class with probability keep_prob (gen_comm.c). */
    for (uint64_t i = lo; i < hi; i++) {
        if (gen_unit(oc_rng_mix64(g->o.seed ^ GEN_SALT_CKEEP, i)) < g->comm.keep_prob) {
            uint64_t k = g->comm.of[i];
            g->cls[i] = gen_class_pick(g, oc_rng_mix64(g->o.seed ^ GEN_SALT_CDOM, k) >> 11);
        } else {
            g->cls[i] = gen_class_of(g, i);
        }
    }
    return OC_OK;
}

int oc_gen_classes(struct oc_gen *g, struct oc_err *err)
{
    const uint32_t c = g->o.n_classes;
    g->class_thr = oc_alloc(c * sizeof(uint64_t), "generate: class table", err);
    if (!g->class_thr)
        return err->status;
    /* Mildly imbalanced: p_c ∝ 1 / (1 + 1.5 c / C), largest/smallest ≈ 2.5. */
    double total = 0, acc = 0;
    for (uint32_t k = 0; k < c; k++)
        total += 1.0 / (1.0 + 1.5 * k / c);
    for (uint32_t k = 0; k < c; k++) {
        acc += 1.0 / (1.0 + 1.5 * k / c);
        g->class_thr[k] = (uint64_t)(acc / total * 9007199254740992.0);
    }
    g->class_thr[c - 1] = (uint64_t)1 << 53;
    g->cls = oc_alloc((size_t)g->o.n_nodes * sizeof(uint16_t), "generate: node classes", err);
    if (!g->cls)
        return err->status;
    struct class_ctx cx = {g};
    uint64_t n_tasks = (g->o.n_nodes + GEN_NODE_BLOCK - 1) / GEN_NODE_BLOCK;
    return oc_pool_run(g->pool, n_tasks, class_task, &cx);
}

/* ---- weights and alias tables ------------------------------------------- */

struct weight_ctx {
    const struct oc_gen *g;
    double *w;
    double inv_alpha;
};

static int weight_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct weight_ctx *wc = ctx;
    uint64_t n = wc->g->o.n_nodes;
    uint64_t lo = task * GEN_NODE_BLOCK;
    uint64_t hi = lo + GEN_NODE_BLOCK < n ? lo + GEN_NODE_BLOCK : n;
    uint64_t salt = wc->g->o.seed ^ GEN_SALT_WEIGHT;
    for (uint64_t i = lo; i < hi; i++) {
        double u = 1.0 - gen_unit(oc_rng_mix64(salt, i)); /* (0, 1] */
        double e = -log(u) * wc->inv_alpha;
        wc->w[i] = exp(e < 400.0 ? e : 400.0); /* ≤ e^400: sums of 2^32 stay finite */
    }
    return OC_OK;
}

/* Power-law weights, capped at mean·sqrt(N/D) (a node expects ≤ sqrt(N·D) neighbors). */
int oc_gen_weights(struct oc_gen *g, double **out, struct oc_err *err)
{
    const uint64_t n = g->o.n_nodes;
    double *w = oc_alloc((size_t)n * sizeof(double), "generate: node weights", err);
    if (!w)
        return err->status;
    struct weight_ctx wc = {g, w, 1.0 / (g->o.power_law - 1.0)};
    int rc = oc_pool_run(g->pool, (n + GEN_NODE_BLOCK - 1) / GEN_NODE_BLOCK, weight_task, &wc);
    if (rc != OC_OK) {
        oc_free(w);
        return rc;
    }
    double ratio = sqrt((double)n / g->o.avg_degree);
    if (ratio < 1.0)
        ratio = 1.0;
    /*
     * The cap is the largest fixed point of c = ratio · mean(min(w, c)); from
     * c = max(w) the iteration decreases monotonically towards it.
     */
    double cap = 0;
    for (uint64_t i = 0; i < n; i++)
        cap = w[i] > cap ? w[i] : cap;
    for (int it = 0; it < 200; it++) {
        double sum = 0;
        for (uint64_t i = 0; i < n; i++)
            sum += w[i] < cap ? w[i] : cap;
        double next = sum / (double)n * ratio;
        if (next >= cap * (1 - 1e-9)) {
            cap = next < cap ? next : cap;
            break;
        }
        cap = next;
    }
    for (uint64_t i = 0; i < n; i++)
        if (w[i] > cap)
            w[i] = cap;
    *out = w;
    return OC_OK;
}

/*
 * Vose's alias method over the n items ids[k] (ids NULL = identity) weighted
 * w[ids[k]], into t (n slots holding node ids). q, small and large are
 * scratch of n.
 */
static void build_alias(const double *w, const uint32_t *ids, uint64_t n, struct gen_slot *t,
                        double *q, uint32_t *small, uint32_t *large)
{
    double sum = 0;
    for (uint64_t k = 0; k < n; k++)
        sum += w[ids ? ids[k] : k];
    uint64_t ns = 0, nl = 0;
    for (uint64_t k = 0; k < n; k++) {
        q[k] = sum > 0 ? w[ids ? ids[k] : k] * (double)n / sum : 1.0;
        if (q[k] < 1.0)
            small[ns++] = (uint32_t)k;
        else
            large[nl++] = (uint32_t)k;
    }
    while (ns > 0 && nl > 0) {
        uint32_t s = small[--ns], l = large[nl - 1];
        double x = q[s] * 4294967296.0;
        t[s].thr = x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x;
        t[s].alias = l;
        q[l] = (q[l] + q[s]) - 1.0;
        if (q[l] < 1.0) {
            nl--;
            small[ns++] = l;
        }
    }
    /* Leftovers are full columns (rounding): always keep. */
    while (nl > 0) {
        uint32_t l = large[--nl];
        t[l].thr = UINT32_MAX;
        t[l].alias = l;
    }
    while (ns > 0) {
        uint32_t s = small[--ns];
        t[s].thr = UINT32_MAX;
        t[s].alias = s;
    }
    for (uint64_t k = 0; k < n; k++) {
        t[k].keep = ids ? ids[k] : (uint32_t)k;
        t[k].alias = ids ? ids[t[k].alias] : t[k].alias;
    }
}

/* ---- edge draws --------------------------------------------------------- */

struct graph_tables {
    uint64_t n;
    /*
     * Alias table over every node; with communities, one table per community
     * instead (community k's over positions off[k] .. off[k+1]), and a draw
     * over all nodes first picks a community by its total weight (comm).
     */
    struct gen_slot *all;
    struct gen_slot *comm; /* over the n_comm communities (communities only) */
    const uint64_t *off;   /* g->comm.off (communities only) */
    uint16_t *keep;        /* per node: w'/w in 1/65536, UINT16_MAX = 1 (communities only) */
    uint64_t n_comm;
    struct gen_slot *in; /* per-class tables, one after the other */
    uint64_t *c_off;     /* class c's table is in[c_off[c] .. c_off[c+1]) */
};

struct graph_ctx {
    const struct oc_gen *g;
    const struct graph_tables *t;
    uint64_t n_draws; /* M */
    uint64_t base;    /* first chunk of the window */
    uint64_t hthr;    /* homophily as a threshold on a u32 draw (≤ 2^32) */
    uint64_t cthr;    /* 1 - mixing, likewise (communities only) */
    unsigned n_slots;
    uint64_t **src, **dst; /* per slot: GEN_CHUNK_DRAWS entries */
    size_t *n;             /* per slot: edges drawn */
};

static int chunk_task(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct graph_ctx *c = ctx;
    const struct graph_tables *t = c->t;
    uint64_t k = c->base + task;
    uint64_t lo = k * GEN_CHUNK_DRAWS;
    c->n[task] = 0;
    if (lo >= c->n_draws)
        return OC_OK;
    uint64_t m = c->n_draws - lo < GEN_CHUNK_DRAWS ? c->n_draws - lo : GEN_CHUNK_DRAWS;
    struct oc_rng r;
    oc_rng_init(&r, c->g->o.seed, GEN_STREAM_EDGES, k, 0);
    uint64_t *src = c->src[task], *dst = c->dst[task];
    const uint16_t *cls = c->g->cls;
    size_t out = 0;
    for (uint64_t e = 0; e < m; e++) {
        uint64_t u = slot_draw(t->all, t->n, &r);
        int inside = oc_rng_u32(&r) < c->hthr;
        uint64_t off = t->c_off[cls[u]], size = t->c_off[cls[u] + 1] - off;
        uint64_t v = u;
        for (int tries = 0; tries < GEN_SELF_RETRIES && v == u; tries++) {
            if (inside && size > 1)
                v = slot_draw(t->in + off, size, &r);
            else
                v = slot_draw(t->all, t->n, &r);
        }
        if (v == u)
            continue;
        src[out] = u;
        dst[out] = v;
        out++;
    }
    c->n[task] = out;
    return OC_OK;
}

/* A node drawn by weight over the whole graph, through its community; *k_out its community. */
static inline uint64_t comm_draw(const struct graph_tables *t, struct oc_rng *r, uint64_t *k_out)
{
    uint64_t k = slot_draw(t->comm, t->n_comm, r);
    *k_out = k;
    return slot_draw(t->all + t->off[k], t->off[k + 1] - t->off[k], r);
}

/* Whether a u32 draw passes a keep probability k/65536 (UINT16_MAX: always). */
static inline int keep_ok(uint32_t x, uint16_t k)
{
    return k == UINT16_MAX || (x >> 16) < k;
}

/*
 * With communities: u ~ w (community by weight, then member by weight);
 * v ~ w' inside u's community with probability (1 - μ)·keep(u), else by the
 * class rule of chunk_task. keep(i) = w'_i / w_i, where w' caps a node's
 * weight so that its expected degree inside its community stays below a
 * share of the community's size (comm_tables): a hub cannot have more
 * neighbours inside a community than it has members, so its excess goes
 * outside instead of into duplicates. v ~ w' is drawn as v ~ w accepted with
 * probability keep(v); after GEN_SELF_RETRIES misses the draw leaves the
 * community.
 */
static int chunk_task_comm(void *ctx, uint64_t task, unsigned worker)
{
    (void)worker;
    struct graph_ctx *c = ctx;
    const struct graph_tables *t = c->t;
    uint64_t k = c->base + task;
    uint64_t lo = k * GEN_CHUNK_DRAWS;
    c->n[task] = 0;
    if (lo >= c->n_draws)
        return OC_OK;
    uint64_t m = c->n_draws - lo < GEN_CHUNK_DRAWS ? c->n_draws - lo : GEN_CHUNK_DRAWS;
    struct oc_rng r;
    oc_rng_init(&r, c->g->o.seed, GEN_STREAM_EDGES, k, 0);
    uint64_t *src = c->src[task], *dst = c->dst[task];
    const uint16_t *cls = c->g->cls;
    const uint16_t *keep = t->keep;
    size_t out = 0;
    for (uint64_t e = 0; e < m; e++) {
        uint64_t cu, cv;
        uint64_t u = comm_draw(t, &r, &cu);
        uint32_t x_comm = oc_rng_u32(&r), x_keep = oc_rng_u32(&r);
        int in_comm = x_comm < c->cthr && keep_ok(x_keep, keep[u]);
        int in_cls = oc_rng_u32(&r) < c->hthr;
        uint64_t moff = t->off[cu], msize = t->off[cu + 1] - moff;
        uint64_t off = t->c_off[cls[u]], size = t->c_off[cls[u] + 1] - off;
        uint64_t v = u;
        for (int tries = 0; tries < 2 * GEN_SELF_RETRIES && v == u; tries++) {
            if (tries == GEN_SELF_RETRIES)
                in_comm = 0;
            if (in_comm && msize > 1) {
                uint64_t x = slot_draw(t->all + moff, msize, &r);
                if (keep_ok(oc_rng_u32(&r), keep[x]))
                    v = x;
            } else if (in_cls && size > 1) {
                v = slot_draw(t->in + off, size, &r);
            } else {
                v = comm_draw(t, &r, &cv);
            }
        }
        if (v == u)
            continue;
        src[out] = u;
        dst[out] = v;
        out++;
    }
    c->n[task] = out;
    return OC_OK;
}

static void tables_free(struct graph_tables *t)
{
    oc_free(t->all);
    oc_free(t->comm);
    oc_free(t->keep);
    oc_free(t->in);
    oc_free(t->c_off);
    memset(t, 0, sizeof(*t));
}

/*
 * The per-community tables (t->all, in community order) and the table over
 * communities by total weight (t->comm). member, q, small, large: scratch of n.
 */
static int comm_tables(struct oc_gen *g, struct graph_tables *t, const double *w, uint32_t *member,
                       double *q, uint32_t *small, uint32_t *large, struct oc_err *err)
{
    const uint64_t n = g->o.n_nodes, nk = g->comm.n_comm;
    const uint64_t *off = g->comm.off;
    double *wk = oc_alloc((size_t)nk * sizeof(double), "generate: community weights", err);
    t->comm = oc_alloc((size_t)nk * sizeof(struct gen_slot), "generate: community table", err);
    t->keep = oc_alloc((size_t)n * sizeof(uint16_t), "generate: community caps", err);
    if (!wk || !t->comm || !t->keep) {
        oc_free(wk);
        return err->status;
    }
    /* Members grouped by community (a counting sort keeps ids ascending; `large` the cursors). */
    for (uint64_t k = 0; k < nk; k++)
        large[k] = (uint32_t)off[k];
    for (uint64_t i = 0; i < n; i++)
        member[large[g->comm.of[i]]++] = (uint32_t)i;
    /*
     * Node i expects about D·w_i/mean(w) neighbours, (1 - μ) of them inside
     * its community of s members; w' = min(w, cap) keeps that below
     * GEN_COMM_FILL·(s - 1).
     */
    double mean_w = 0;
    for (uint64_t i = 0; i < n; i++)
        mean_w += w[i];
    mean_w /= (double)n;
    double inside = (1.0 - g->comm.mixing) * g->o.avg_degree;
    for (uint64_t k = 0; k < nk; k++) {
        double sum = 0;
        uint64_t size = off[k + 1] - off[k];
        double cap =
            GEN_COMM_FILL * (double)(size ? size - 1 : 0) * mean_w / (inside > 0 ? inside : 1.0);
        for (uint64_t p = off[k]; p < off[k + 1]; p++) {
            double wi = w[member[p]], keep = wi > cap ? cap / wi : 1.0;
            t->keep[member[p]] = keep >= 1.0 ? UINT16_MAX : (uint16_t)(keep * 65536.0);
            sum += wi;
        }
        wk[k] = sum;
        build_alias(w, member + off[k], off[k + 1] - off[k], t->all + off[k], q, small, large);
    }
    build_alias(wk, NULL, nk, t->comm, q, small, large);
    oc_free(wk);
    t->off = off;
    t->n_comm = nk;
    return OC_OK;
}

static int tables_build(struct oc_gen *g, struct graph_tables *t, struct oc_err *err)
{
    const uint64_t n = g->o.n_nodes;
    const uint32_t nc = g->o.n_classes;
    const size_t n32 = (size_t)n * sizeof(uint32_t);
    const size_t nslot = (size_t)n * sizeof(struct gen_slot);
    double *w = NULL, *q = NULL;
    uint32_t *member = NULL, *small = NULL, *large = NULL;
    int rc = oc_gen_weights(g, &w, err);
    if (rc != OC_OK)
        return rc;
    t->n = n;
    if (!(t->all = oc_alloc(nslot, "generate: alias table", err)) ||
        !(t->in = oc_alloc(nslot, "generate: class alias tables", err)) ||
        !(t->c_off = oc_calloc(nc + 1, sizeof(uint64_t), "generate: class offsets", err)) ||
        !(member = oc_alloc(n32, "generate: class members", err)) ||
        !(q = oc_alloc((size_t)n * sizeof(double), "generate: alias scratch", err)) ||
        !(small = oc_alloc(n32, "generate: alias scratch", err)) ||
        !(large = oc_alloc(n32, "generate: alias scratch", err))) {
        rc = err->status;
        goto out;
    }
    if (g->comm.n_comm == 0) {
        build_alias(w, NULL, n, t->all, q, small, large);
    } else {
        rc = comm_tables(g, t, w, member, q, small, large, err);
        if (rc != OC_OK)
            goto out;
    }
    /* Members grouped by class (a counting sort keeps ids ascending). */
    for (uint64_t i = 0; i < n; i++)
        t->c_off[g->cls[i] + 1]++;
    for (uint32_t c = 0; c < nc; c++)
        t->c_off[c + 1] += t->c_off[c];
    for (uint64_t i = 0; i < n; i++)
        small[i] = (uint32_t)t->c_off[g->cls[i]]++; /* reuse `small` as the slot of node i */
    for (uint64_t i = 0; i < n; i++)
        member[small[i]] = (uint32_t)i;
    for (uint32_t c = nc; c > 0; c--) /* undo the shift of the counting sort */
        t->c_off[c] = t->c_off[c - 1];
    t->c_off[0] = 0;
    for (uint32_t c = 0; c < nc; c++) {
        uint64_t off = t->c_off[c], size = t->c_off[c + 1] - off;
        build_alias(w, member + off, size, t->in + off, q, small, large);
    }
out:
    oc_free(w);
    oc_free(q);
    oc_free(member);
    oc_free(small);
    oc_free(large);
    return rc;
}

int oc_gen_graph(struct oc_gen *g, struct oc_ds_builder *b, struct oc_err *err)
{
    struct graph_tables t;
    struct graph_ctx c;
    struct oc_edge_sorter *sorter = NULL;
    memset(&t, 0, sizeof(t));
    memset(&c, 0, sizeof(c));
    int rc = tables_build(g, &t, err);
    if (rc != OC_OK)
        goto out;
    oc_free(g->comm.of); /* in the tables now */
    g->comm.of = NULL;
    c.g = g;
    c.t = &t;
    c.n_draws = (uint64_t)llround((double)g->o.n_nodes * g->o.avg_degree / 2.0);
    c.hthr = (uint64_t)(g->o.homophily * 4294967296.0);
    c.cthr = (uint64_t)((1.0 - g->comm.mixing) * 4294967296.0);
    /* Slots for the work there is: no chunk buffers beyond the draws to make. */
    uint64_t n_chunks_all = (c.n_draws + GEN_CHUNK_DRAWS - 1) / GEN_CHUNK_DRAWS;
    c.n_slots = 4 * oc_pool_n_threads(g->pool);
    if (c.n_slots > n_chunks_all)
        c.n_slots = n_chunks_all ? (unsigned)n_chunks_all : 1;
    if (!(c.src = oc_calloc(c.n_slots, sizeof(uint64_t *), "generate: edge slots", err)) ||
        !(c.dst = oc_calloc(c.n_slots, sizeof(uint64_t *), "generate: edge slots", err)) ||
        !(c.n = oc_calloc(c.n_slots, sizeof(size_t), "generate: edge slots", err))) {
        rc = err->status;
        goto out;
    }
    for (unsigned s = 0; s < c.n_slots; s++) {
        c.src[s] = oc_alloc(GEN_CHUNK_DRAWS * sizeof(uint64_t), "generate: edge chunk", err);
        c.dst[s] = c.src[s]
                       ? oc_alloc(GEN_CHUNK_DRAWS * sizeof(uint64_t), "generate: edge chunk", err)
                       : NULL;
        if (!c.dst[s]) {
            rc = err->status;
            goto out;
        }
    }
    struct oc_edge_sort_opts so = {
        .n_nodes = g->o.n_nodes,
        .symmetrize = 1,
        .keep_duplicates = 0,
        .remove_self_loops = 1,
        .mem_bytes = g->o.mem_bytes,
    };
    rc = oc_edge_sorter_new(&so, oc_ds_builder_tmp_dir(b), &sorter, err);
    if (rc != OC_OK)
        goto out;
    oc_progress_phase(g->progress, "generate: edges", c.n_draws, "draws");
    uint64_t n_chunks = (c.n_draws + GEN_CHUNK_DRAWS - 1) / GEN_CHUNK_DRAWS;
    for (c.base = 0; c.base < n_chunks; c.base += c.n_slots) {
        uint64_t n_tasks = n_chunks - c.base < c.n_slots ? n_chunks - c.base : c.n_slots;
        rc = oc_pool_run(g->pool, n_tasks, g->comm.n_comm ? chunk_task_comm : chunk_task, &c);
        if (rc != OC_OK)
            goto out;
        for (uint64_t s = 0; s < n_tasks; s++) {
            rc = oc_edge_sorter_add(sorter, c.src[s], c.dst[s], c.n[s], err);
            if (rc != OC_OK)
                goto out;
        }
        uint64_t done = (c.base + n_tasks) * GEN_CHUNK_DRAWS;
        oc_progress_add(g->progress,
                        (done < c.n_draws ? done : c.n_draws) - c.base * GEN_CHUNK_DRAWS);
    }
    /* The tables are not needed by the sort: give their memory back first. */
    tables_free(&t);
    for (unsigned s = 0; s < c.n_slots; s++) {
        oc_free(c.src[s]);
        oc_free(c.dst[s]);
        c.src[s] = c.dst[s] = NULL;
    }
    oc_progress_phase(g->progress, "generate: sort edges", 2 * c.n_draws, "edges");
    rc = oc_edge_sorter_finish(sorter, b, g->progress, err);
out:
    oc_edge_sorter_free(sorter);
    tables_free(&t);
    for (unsigned s = 0; c.src && s < c.n_slots; s++)
        oc_free(c.src[s]);
    for (unsigned s = 0; c.dst && s < c.n_slots; s++)
        oc_free(c.dst[s]);
    oc_free(c.src);
    oc_free(c.dst);
    oc_free(c.n);
    return rc;
}
