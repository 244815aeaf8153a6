/*
 * hot.c — which rows the `static` and `helios` caches hold: the n hottest nodes by
 * in-degree (PaGraph) or by how often epoch 0 of the training plan reads them
 * (pre-sampling, as Helios/GNNLab do; equal counts ranked by in-degree), ties
 * broken by the lower node id.
 *
 * Place in the data flow: store, at open: graph (indptr) or sample (the
 * sampler over epoch 0's batches) ──► hotness ──► the cache's id set.
 * Thread-safety: runs on the opening thread; the sampler may use the store's
 * pool inside.
 * Ownership: the returned id array is the caller's (oc_free). Temporaries:
 * 4 bytes per node of counts (pre-sampling) or 8 bytes per node of indptr
 * (degree with no graph given), and 8 bytes per selected row, all released
 * before open allocates the cache rows.
 *
 * Pre-sampling replays epoch 0 exactly as train runs it: the training ids
 * shuffled with (sample_opts->seed, epoch 0), cut into batches of
 * batch_size (the last one short), oc_sample_neighbors(epoch 0, batch b);
 * every occurrence of a node among a batch's input ids counts once. A store
 * over other ids (oc_store_config.accesses: a partitioned dataset's part)
 * samples on the plan's graph and counts the ids the access map gives for
 * each batch (the rows its gathers will ask for: helios's hottest rows).
 *
 * Selection: one pass over the nodes in id order keeps the n best in a
 * min-heap (root = the least hot kept); a later node replaces the root only
 * if strictly hotter, since on a tie the root has the lower id. O(N log n),
 * no allocation beyond the heap, then a heapsort puts the ids in ascending
 * order (ginex) or hottest first (static: its slots in that order, so the
 * coldest rows are the last slots, the ones it gives back first).
 */
#include <inttypes.h>
#include <string.h>

#include "store/store_int.h"

struct hotness {
    const uint64_t *indptr; /* in-degree = indptr[v+1] - indptr[v]: the rank, or the tie-break */
    const uint32_t *counts; /* pre-sampling (NULL: by degree) */
};

static inline uint64_t degree_of(const struct hotness *h, uint64_t v)
{
    return h->indptr ? h->indptr[v + 1] - h->indptr[v] : 0;
}

/*
 * Whether a is less hot than b: a lower count (pre-sampling) or in-degree;
 * counts tied, a lower in-degree (one epoch's counts tie on most nodes, and
 * the in-degree says which of them later epochs read more); then the higher id.
 */
static inline int colder(const struct hotness *h, uint64_t a, uint64_t b)
{
    if (h->counts && h->counts[a] != h->counts[b])
        return h->counts[a] < h->counts[b];
    uint64_t da = degree_of(h, a), db = degree_of(h, b);
    return da < db || (da == db && a > b);
}

static void heap_sift(const struct hotness *h, uint64_t *heap, uint64_t root, uint64_t n)
{
    for (;;) {
        uint64_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && colder(h, heap[c + 1], heap[c]))
            c++;
        if (!colder(h, heap[c], heap[root]))
            return;
        uint64_t t = heap[root];
        heap[root] = heap[c];
        heap[c] = t;
        root = c;
    }
}

static void ids_sift(uint64_t *a, uint64_t root, uint64_t n)
{
    for (;;) {
        uint64_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c + 1] > a[c])
            c++;
        if (a[c] <= a[root])
            return;
        uint64_t t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

/* In-place heapsort, ascending (qsort may allocate outside the accountant). */
static void ids_sort(uint64_t *a, uint64_t n)
{
    for (uint64_t i = n / 2; i-- > 0;)
        ids_sift(a, i, n);
    for (uint64_t i = n; i-- > 1;) {
        uint64_t t = a[0];
        a[0] = a[i];
        a[i] = t;
        ids_sift(a, 0, i);
    }
}

static int presample(const struct oc_store *s, const struct oc_store_config *cfg, uint32_t *counts,
                     struct oc_err *err)
{
    struct oc_sample_iter it;
    uint64_t *acc = NULL, cap_acc = 0;
    int rc = oc_sample_iter_open(&it, store_plan_graph(cfg), cfg->sample_opts, cfg->pool,
                                 cfg->train_ids, cfg->n_train, cfg->batch_size, err);
    if (rc == OC_OK)
        oc_sample_iter_seek(&it, 0, 0);
    while (rc == OC_OK && (rc = oc_sample_iter_next(&it, err)) == 1) {
        /* the ids the store is gathered with for the batch: its own, or the access map's */
        const uint64_t *ids = it.batch.input_ids;
        uint64_t n = it.batch.n_input;
        rc = cfg->accesses
                 ? cfg->accesses->of(cfg->accesses->ctx, &it.batch, &acc, &cap_acc, &n, err)
                 : OC_OK;
        if (cfg->accesses)
            ids = acc;
        for (uint64_t k = 0; rc == OC_OK && k < n; k++) {
            uint64_t v = ids[k];
            if (v < s->n_nodes && counts[v] != UINT32_MAX)
                counts[v]++;
        }
    }
    if (rc)
        oc_err_prefix(err, "store %s: pre-sampling epoch 0", s->strat->name);
    oc_free(acc);
    oc_sample_iter_close(&it);
    return rc;
}

/* In-place heapsort of the min-heap (root = least hot) into hottest first. */
static void hot_sort(const struct hotness *h, uint64_t *heap, uint64_t n)
{
    for (uint64_t i = n; i-- > 1;) {
        uint64_t t = heap[0];
        heap[0] = heap[i];
        heap[i] = t;
        heap_sift(h, heap, 0, i);
    }
}

int store_hot_select(const struct oc_store *s, const struct oc_store_config *cfg,
                     enum oc_store_hotness hotness, uint64_t n, int hottest_first,
                     uint64_t **ids_out, struct oc_err *err)
{
    struct hotness h = {NULL, NULL};
    uint64_t *loaded_indptr = NULL, *heap = NULL;
    uint32_t *counts = NULL;
    int rc = OC_OK;

    *ids_out = NULL;
    if (hotness == OC_STORE_HOTNESS_PRESAMPLE) {
        const char *missing = !cfg->graph         ? "graph"
                              : !cfg->sample_opts ? "sample_opts"
                              : !cfg->train_ids   ? "train_ids"
                              : !cfg->n_train     ? "n_train"
                              : !cfg->batch_size  ? "batch_size"
                                                  : NULL;
        if (missing)
            return OC_ERR(err, OC_ERR_ARG,
                          "store %s: pre-sampled hotness needs the training plan; "
                          "config has no %s",
                          s->strat->name, missing);
    } else if (hotness != OC_STORE_HOTNESS_DEGREE) {
        return OC_ERR(err, OC_ERR_ARG, "store %s: unknown hotness %d", s->strat->name,
                      (int)hotness);
    }
    if (n == 0)
        return OC_OK;
    int rank = n < s->n_nodes || hottest_first; /* every row in id order needs no ranking */
    if (rank) {
        if (hotness == OC_STORE_HOTNESS_PRESAMPLE) {
            counts = oc_calloc(s->n_nodes, sizeof(uint32_t), "store static: hotness counts", err);
            if (!counts)
                return err ? err->status : OC_ERR_NOMEM;
            if ((rc = presample(s, cfg, counts, err)))
                goto out;
            h.counts = counts;
            h.indptr = cfg->graph->indptr;
        } else if (cfg->graph) {
            h.indptr = cfg->graph->indptr;
        } else {
            if ((rc = oc_dataset_load_indptr(s->ds, &loaded_indptr, err)))
                goto out;
            h.indptr = loaded_indptr;
        }
    }
    heap = oc_alloc(n * sizeof(uint64_t), "store static: cached ids", err);
    if (!heap) {
        rc = err ? err->status : OC_ERR_NOMEM;
        goto out;
    }
    for (uint64_t v = 0; v < n; v++)
        heap[v] = v;
    if (rank) {
        for (uint64_t i = n / 2; i-- > 0;)
            heap_sift(&h, heap, i, n);
        for (uint64_t v = n; v < s->n_nodes; v++)
            if (colder(&h, heap[0], v)) { /* strictly hotter: ties keep the lower id */
                heap[0] = v;
                heap_sift(&h, heap, 0, n);
            }
    }
    if (hottest_first)
        hot_sort(&h, heap, n);
    else if (n < s->n_nodes)
        ids_sort(heap, n);
    *ids_out = heap;
    heap = NULL;
out:
    oc_free(heap);
    oc_free(counts);
    oc_free(loaded_indptr);
    return rc;
}
