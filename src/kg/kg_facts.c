/*
 * kg_facts.c — a graph's augmented facts for extraction, in RAM or on disk:
 *
 *   memory: indptr, rel, tail loaded (u64 / u32 / u32)
 *   disk:   indptr loaded; rel and tail stay in <graph>_rel.npy and
 *           <graph>_tail.npy, opened O_DIRECT; a head's facts are two byte
 *           ranges read through an io batch (io_uring, pread fallback) per
 *           thread, pages shared by neighbouring heads merged; requested and
 *           read bytes counted as feature reads are
 *   in front of either, optionally (kg_facts_set_atoms): a batch's atom map
 *   (TIGER's loaded slices) and the Atom Cache, consulted first
 *
 * Place in the data flow: kg (dataset files ──► here ──► kg_extract.c).
 * Thread-safety: the fact graph is read-only after open; each thread uses
 * its own reader; counters are atomics. The atom maps are set while no
 * reader that follows them fetches; a reader with its own atoms (the
 * slicer's, on TIGER's planner stage) never looks at them. The Atom Cache,
 * which gives memory back, is looked up and copied from under its lock's
 * read side; the disk reads are queued after it is let go.
 * Ownership: the fact graph owns its arrays and files; a reader borrows its
 * fact graph, which must outlive it.
 */
#include <stdatomic.h>
#include <string.h>

#include "kg/kg_tiger_int.h"
#include "offcore/io.h"

struct oc_kg_facts {
    enum oc_kg_facts_where where;
    uint64_t n_entities, n_facts;
    uint64_t *indptr;
    uint32_t *rel, *tail;           /* memory */
    struct oc_file *f_rel, *f_tail; /* disk */
    _Atomic uint64_t n_reads, bytes_read, bytes_requested;
    const struct kg_atoms *batch;      /* consulted first (NULL: none) */
    const struct kg_atom_cache *cache; /* then (NULL: none) */
    uint32_t strict_below;
    _Atomic uint64_t from_batch, from_cache, from_graph;
};

struct oc_kg_facts_reader {
    struct oc_kg_facts *f;
    struct oc_io_batch *batch;
    struct oc_io_stats last;
    int own_atoms;                     /* the graph's atom maps ignored: only `cache` */
    const struct kg_atom_cache *cache; /* with own_atoms (may be NULL) */
    uint8_t *held;                     /* per head of a fetch: copied under the cache's lock */
    uint64_t cap_held;
};

static int load_u32(const char *path, uint32_t **out, struct oc_err *err)
{
    uint64_t r, c;
    void *d = NULL;
    OC_KG_TRY(oc_npy_load_as(path, OC_DTYPE_U32, &d, &r, &c, err));
    *out = d;
    return OC_OK;
}

int oc_kg_facts_open(const struct oc_kg *kg, enum oc_kg_graph g, enum oc_kg_facts_where where,
                     struct oc_kg_facts **out, struct oc_err *err)
{
    *out = NULL;
    struct oc_kg_facts *f = oc_calloc(1, sizeof(*f), "kg fact graph", err);
    if (!f)
        return err->status;
    const struct oc_kg_manifest *m = oc_kg_manifest(kg);
    f->where = where;
    f->n_entities = m->graph[g].n_entities;
    f->n_facts = m->graph[g].n_facts;
    uint64_t r, c;
    void *d = NULL;
    int rc = oc_npy_load_as(oc_kg_path(kg, g, OC_KG_INDPTR), OC_DTYPE_U64, &d, &r, &c, err);
    f->indptr = d;
    if (!rc && where == OC_KG_FACTS_MEMORY) {
        rc = load_u32(oc_kg_path(kg, g, OC_KG_REL), &f->rel, err);
        if (!rc)
            rc = load_u32(oc_kg_path(kg, g, OC_KG_TAIL), &f->tail, err);
    } else if (!rc) {
        rc = oc_file_open(oc_kg_path(kg, g, OC_KG_REL), OC_FILE_READ | OC_FILE_DIRECT, &f->f_rel,
                          err);
        if (!rc)
            rc = oc_file_open(oc_kg_path(kg, g, OC_KG_TAIL), OC_FILE_READ | OC_FILE_DIRECT,
                              &f->f_tail, err);
    }
    if (rc) {
        oc_kg_facts_free(f);
        return rc;
    }
    *out = f;
    return OC_OK;
}

void oc_kg_facts_free(struct oc_kg_facts *f)
{
    if (!f)
        return;
    struct oc_err e;
    if (f->f_rel)
        oc_file_close(f->f_rel, &e);
    if (f->f_tail)
        oc_file_close(f->f_tail, &e);
    oc_free(f->indptr);
    oc_free(f->rel);
    oc_free(f->tail);
    oc_free(f);
}

uint64_t oc_kg_facts_n_entities(const struct oc_kg_facts *f)
{
    return f->n_entities;
}

void oc_kg_facts_stats(const struct oc_kg_facts *f, struct oc_kg_facts_stats *s)
{
    s->n_reads = atomic_load(&f->n_reads);
    s->bytes_read = atomic_load(&f->bytes_read);
    s->bytes_requested = atomic_load(&f->bytes_requested);
}

uint64_t oc_kg_facts_begin(const struct oc_kg_facts *f, uint32_t h)
{
    return f->indptr[h];
}

uint64_t kg_facts_degree(const struct oc_kg_facts *f, uint32_t h)
{
    return f->indptr[h + 1] - f->indptr[h];
}

void kg_facts_set_atoms(struct oc_kg_facts *f, const struct kg_atoms *batch,
                        const struct kg_atom_cache *cache, uint32_t strict_below)
{
    f->batch = batch;
    f->cache = cache;
    f->strict_below = strict_below;
}

void kg_facts_atom_counts(const struct oc_kg_facts *f, uint64_t *from_batch, uint64_t *from_cache,
                          uint64_t *from_graph)
{
    *from_batch = atomic_load(&f->from_batch);
    *from_cache = atomic_load(&f->from_cache);
    *from_graph = atomic_load(&f->from_graph);
}

void kg_facts_reader_own_atoms(struct oc_kg_facts_reader *r, const struct kg_atom_cache *cache)
{
    r->own_atoms = 1;
    r->cache = cache;
}

int oc_kg_facts_reader_new(struct oc_kg_facts *f, struct oc_kg_facts_reader **out,
                           struct oc_err *err)
{
    *out = NULL;
    struct oc_kg_facts_reader *r = oc_calloc(1, sizeof(*r), "kg fact reader", err);
    if (!r)
        return err->status;
    r->f = f;
    if (f->where == OC_KG_FACTS_DISK) {
        int rc = oc_io_batch_new(64, (size_t)256 << 10, &r->batch, err);
        if (rc) {
            oc_free(r);
            return rc;
        }
    }
    *out = r;
    return OC_OK;
}

void oc_kg_facts_reader_free(struct oc_kg_facts_reader *r)
{
    if (!r)
        return;
    oc_io_batch_free(r->batch);
    oc_free(r->held);
    oc_free(r);
}

/* Queues the reads of a head's k facts from index b (rel and tail) into the reader's batch. */
static int queue_facts(struct oc_kg_facts_reader *r, uint64_t b, uint64_t k, uint32_t *rel,
                       uint32_t *tail, struct oc_err *err)
{
    uint64_t off = OC_NPY_HEADER_BYTES + 4 * b;
    OC_KG_TRY(oc_io_batch_add(r->batch, r->f->f_rel, off, (size_t)k * 4, rel, err));
    return oc_io_batch_add(r->batch, r->f->f_tail, off, (size_t)k * 4, tail, err);
}

int oc_kg_facts_fetch(struct oc_kg_facts_reader *r, const uint32_t *heads, uint64_t n,
                      uint32_t *rel, uint32_t *tail, struct oc_err *err)
{
    struct oc_kg_facts *f = r->f;
    const struct kg_atoms *batch = r->own_atoms ? NULL : f->batch;
    const struct kg_atom_cache *cache = r->own_atoms ? r->cache : f->cache;
    uint32_t strict_below = r->own_atoms ? 0 : f->strict_below;
    uint64_t at = 0, n_batch = 0, n_cache = 0, n_disk = 0;
    for (uint64_t i = 0; strict_below && i < n; i++) {
        uint64_t k = f->indptr[heads[i] + 1] - f->indptr[heads[i]];
        if (k < strict_below && !kg_atoms_get(batch, heads[i]))
            return OC_ERR(err, OC_ERR_FORMAT,
                          "kg slice store: entity %u (%llu facts) is in no slice of its batch",
                          heads[i], (unsigned long long)k);
    }
    /* the copies from memory, under the cache's read side; disk reads queued after it (they
       allocate), for the heads not copied */
    uint8_t *held = NULL;
    if (f->where == OC_KG_FACTS_DISK) {
        OC_KG_TRY(oc_grow_by(&r->held, &r->cap_held, n, 1, OC_GROW_EXACT, "kg fact reader", err));
        held = r->held;
    }
    if (cache)
        kg_atom_cache_read_lock(cache);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = f->indptr[heads[i]], k = f->indptr[heads[i] + 1] - b;
        const uint32_t *atom = batch ? kg_atoms_get(batch, heads[i]) : NULL;
        n_batch += atom != NULL;
        if (!atom && cache && (atom = kg_atom_cache_get(cache, heads[i])) != NULL)
            n_cache++;
        if (held)
            held[i] = atom != NULL;
        if (atom) {
            memcpy(rel + at, atom, (size_t)k * 4);
            memcpy(tail + at, atom + k, (size_t)k * 4);
        } else if (f->where == OC_KG_FACTS_MEMORY) {
            memcpy(rel + at, f->rel + b, (size_t)k * 4);
            memcpy(tail + at, f->tail + b, (size_t)k * 4);
        } else {
            n_disk++; /* queued below, the cache's read side let go */
        }
        at += k;
    }
    if (cache)
        kg_atom_cache_read_unlock(cache);
    for (uint64_t i = 0, a = 0; n_disk && i < n; i++) { /* n_disk > 0: on disk, held set */
        uint64_t b = f->indptr[heads[i]], k = f->indptr[heads[i] + 1] - b;
        if (!held[i])
            OC_KG_TRY(queue_facts(r, b, k, rel + a, tail + a, err));
        a += k;
    }
    if (batch || cache) {
        atomic_fetch_add(&f->from_batch, n_batch);
        atomic_fetch_add(&f->from_cache, n_cache);
        atomic_fetch_add(&f->from_graph, n - n_batch - n_cache);
    }
    if (f->where == OC_KG_FACTS_MEMORY || n_disk == 0)
        return OC_OK;
    int rc = oc_io_batch_run(r->batch, err);
    const struct oc_io_stats *s = oc_io_batch_stats(r->batch);
    atomic_fetch_add(&f->n_reads, s->n_reads - r->last.n_reads);
    atomic_fetch_add(&f->bytes_read, s->read_bytes - r->last.read_bytes);
    atomic_fetch_add(&f->bytes_requested, s->requested_bytes - r->last.requested_bytes);
    r->last = *s;
    return rc;
}
