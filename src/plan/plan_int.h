/*
 * plan_int.h — private to plan: the checked trace context shared by the
 * file-size scan and the layout build (a per-node u32 scratch array), the
 * MinHash ordering of a segment's disk-cache rows, and the Fennel partitioner.
 *
 * Place in the data flow: plan (layout.c drives it; minhash.c orders the
 * disk caches; hot.c is independent of it; partition.c calls Fennel in
 * partition_fennel.c).
 * Thread-safety: a context belongs to one thread.
 * Ownership: a context owns its scratch (oc_alloc, consumer "plan"), freed
 * by plan_ctx_deinit; the trace and options it points at are borrowed.
 *
 * The scratch holds one u32 per node, all zero between passes except
 * PLAN_MARK_CPU on the rows of the CPU cache. Within one segment's pass a
 * non-CPU row's entry counts the segment's batches that access it (low 31
 * bits, saturating) plus PLAN_MARK_SEEN once the row has been listed, or,
 * while addresses are assigned, the row's index in the segment's cache.
 * Every pass resets exactly the entries it touched, so a pass costs
 * O(accesses of the segment), never O(n_nodes).
 */
#ifndef OFFCORE_PLAN_INT_H
#define OFFCORE_PLAN_INT_H

#include <assert.h>
#include <stdint.h>

#include "offcore/plan.h"

#define PLAN_CONSUMER  "plan"
#define PLAN_MARK_CPU  UINT32_MAX
#define PLAN_MARK_SEEN UINT32_C(0x80000000)
#define PLAN_MARK_CNT  UINT32_C(0x7fffffff)
/* Largest n_nodes the u32 scratch can index (indices stay below PLAN_MARK_CPU). */
#define PLAN_MAX_NODES (UINT64_C(0xfffffff0))
/* Hash functions of a MinHash signature (the paper's K). */
#define PLAN_MINHASH_K 4

struct plan_ctx {
    const struct oc_plan_trace *t;
    const struct oc_plan_opts *o;
    uint32_t m; /* min_share with 0 read as 1 */
    uint32_t *mark;
};

/*
 * Checks the trace and options (offsets, ids, a row twice in one batch,
 * cpu_ids, row_bytes, rec_bytes) and allocates the scratch with the CPU
 * rows marked. OC_ERR_ARG naming the batch/id at fault; c is empty on
 * failure.
 */
int plan_ctx_init(struct plan_ctx *c, const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                  struct oc_err *err);
void plan_ctx_deinit(struct plan_ctx *c);

/*
 * One pass over the window with segments of s batches: the file's bytes
 * and, where the arrays are non-NULL, each batch's packed rows
 * (n_packed[b]) and each segment's disk-cache rows (n_shared[j]).
 * OC_ERR_ARG if the size overflows 64 bits.
 */
int plan_scan(struct plan_ctx *c, uint64_t s, uint64_t *n_packed, uint64_t *n_shared,
              uint64_t *bytes, struct oc_err *err);

/* Hash k (0..PLAN_MINHASH_K-1) of window batch b: a splitmix64 mix, no state. */
uint64_t plan_minhash(unsigned k, uint64_t b);

/*
 * Orders segment j's disk-cache rows rows[0..n) (distinct, each with
 * c->mark[row] == its position in rows on entry) in MinHash order, or in
 * ascending id with identity. The segment's batches are [b0, b1); their
 * accesses whose address is already tagged OC_PLAN_DISK_CACHE in addr are
 * the ones the signatures are taken over. tmp holds n entries of
 * PLAN_MINHASH_K + 1 u64. On return rows is sorted; marks are unchanged.
 */
void plan_order_rows(const struct plan_ctx *c, const uint64_t *addr, uint64_t b0, uint64_t b1,
                     uint64_t *rows, uint64_t n, uint64_t *tmp, int identity);

/*
 * oc_plan_batch_layout (plan.h), choosing how packed rows get their index:
 * keyed (row and place in one radix-sorted key, when both fit in 64 bits)
 * or sorted then searched; both give the same layout (test_plan).
 */
void plan_batch_layout(const uint64_t *rows, uint64_t n, const struct oc_rank_set *cpu,
                       uint64_t *addr, uint64_t *pack, uint64_t *n_pack, int keyed);

/*
 * Fennel (partition_fennel.c) over a symmetric adjacency without self-loops
 * or duplicates (xadj[n + 1], adj): part_of[v] < n_parts for every node,
 * is_train marking the training nodes (both kinds balanced). Deterministic:
 * passes in node order, ties to the lower part.
 */
int plan_fennel(const int32_t *xadj, const int32_t *adj, uint64_t n, const uint8_t *is_train,
                uint64_t n_train, uint32_t n_parts, uint32_t *part_of, struct oc_err *err);

#endif
