/*
 * kg_int.h — private to src/kg: helpers shared by the writer, the opener,
 * the importer and the generator.
 *
 * Place in the data flow: kg internals.
 * Thread-safety: as kg.h.
 * Ownership: documented per function.
 */
#ifndef OFFCORE_KG_INT_H
#    define OFFCORE_KG_INT_H

#    include "offcore/dataset.h"
#    include "offcore/kg.h"

#    define OC_KG_TRY(expr)   \
        do {                  \
            int rc_ = (expr); \
            if (rc_ != OC_OK) \
                return rc_;   \
        } while (0)

/* dtype and columns of an array (u64 indptr; u32 otherwise; queries have 3 columns). */
enum oc_dtype oc_kg_array_dtype(enum oc_kg_array a);
unsigned oc_kg_array_cols(enum oc_kg_array a);
/* Rows an array must have given the manifest. */
uint64_t oc_kg_array_rows(const struct oc_kg_manifest *m, enum oc_kg_graph g, enum oc_kg_array a);

/* A streamed array of the writer: begin, oc_npy_writer_append, end (abort on failure). */
int oc_kg_writer_begin(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                       uint64_t n_rows, struct oc_npy_writer **nw, struct oc_err *err);
int oc_kg_writer_end(struct oc_kg_writer *w, enum oc_kg_graph g, enum oc_kg_array a,
                     struct oc_npy_writer *nw, struct oc_err *err);

/*
 * Checks the content of every array of dir against m (indptr monotone from 0
 * to F, relations < 2R+1, tails < N, query ids in range) and, with
 * check_crc, the CRCs. Errors name the file and position.
 */
int oc_kg_validate(const char *dir, const struct oc_kg_manifest *m, int check_crc,
                   struct oc_err *err);

#endif

/* ---- fact graph access (kg_facts.c) -------------------------------------- */

/*
 * Per-thread reader of a fact graph: for an on-disk graph an io batch (one
 * ring per thread) whose stats are added to the graph's counters.
 */
struct oc_kg_facts_reader;
int oc_kg_facts_reader_new(struct oc_kg_facts *f, struct oc_kg_facts_reader **out,
                           struct oc_err *err);
void oc_kg_facts_reader_free(struct oc_kg_facts_reader *r);
/* Facts of head h: [indptr[h], indptr[h+1]). */
uint64_t oc_kg_facts_begin(const struct oc_kg_facts *f, uint32_t h);
/*
 * Copies the facts of heads[0..n) one after another into rel/tail (sized
 * for the sum of their degrees): from RAM, or read from disk in one batch.
 */
int oc_kg_facts_fetch(struct oc_kg_facts_reader *r, const uint32_t *heads, uint64_t n,
                      uint32_t *rel, uint32_t *tail, struct oc_err *err);
