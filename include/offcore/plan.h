/*
 * plan.h — offline plans over a window of sampled batches: where each input
 * feature row of each batch will be found (DiskGNN's four-level placement),
 * the segmented disk cache ordered by MinHash signatures, and the byte
 * layout of the window's packed file.
 *
 *   trace (input rows of batches 0..n-1) ──► oc_plan_layout_build
 *        └─ rows in the CPU cache ─────────► addr: CPU slot
 *        └─ rows used by > m batches of ────► addr: index in the segment's
 *           their segment (s batches)           disk cache (MinHash order)
 *        └─ every other row ───────────────► addr: index in the batch's
 *                                               packed chunk (ascending id)
 *
 * The window file (one per window; offsets from oc_plan_layout):
 *
 *   chunk 0 | chunk 1 | ... | chunk n-1 | seg cache 0 | ... | seg cache k-1
 *   each piece starts on a 4096-byte boundary and is zero-padded to one.
 *   chunk b:  +0                      OC_PLAN_CHUNK_HEADER bytes of header
 *             +OC_PLAN_CHUNK_HEADER   the batch record (rec_bytes[b])
 *             +...                    address table: n_input(b) x u64 (addr codes)
 *             +...                    packed rows: n_packed(b) x row_bytes, as stored
 *   seg cache j: n_shared(j) x row_bytes, in MinHash order
 *
 * Address codes (u64): bits 62..63 the tier, bits 0..61 an index:
 *   OC_PLAN_CPU        slot in the CPU cache (index into the sorted cpu_ids)
 *   OC_PLAN_DISK_CACHE row index within the cache of the batch's segment (b / s)
 *   OC_PLAN_PACKED     row index within the batch's packed rows
 *   OC_PLAN_GPU        reserved for a GPU cache tier (never produced on the CPU)
 * so the training path turns an address into bytes with no lookup per row.
 *
 * Place in the data flow: plan sits on sample/dataset/io/core; store's
 * `diskgnn` strategy builds a layout per window and packs and reads by it.
 * Thread-safety: functions are pure over their arguments; a layout belongs
 * to one thread at a time.
 * Ownership: a layout owns its arrays (oc_alloc, consumer "plan"), freed by
 * oc_plan_layout_deinit; traces and options are borrowed.
 */
#ifndef OFFCORE_PLAN_H
#define OFFCORE_PLAN_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/dataset.h"
#include "offcore/progress.h"
#include "offcore/sample.h"

#define OC_PLAN_PAGE         4096u
#define OC_PLAN_CHUNK_HEADER 64u

enum oc_plan_where {
    OC_PLAN_CPU = 0,
    OC_PLAN_DISK_CACHE = 1,
    OC_PLAN_PACKED = 2,
    OC_PLAN_GPU = 3,
};

#define OC_PLAN_ADDR(where, index) (((uint64_t)(where) << 62) | (uint64_t)(index))
#define OC_PLAN_ADDR_WHERE(code)   ((enum oc_plan_where)((code) >> 62))
#define OC_PLAN_ADDR_INDEX(code)   ((code) & ((UINT64_C(1) << 62) - 1))

/* The input rows of a window of n_batches consecutive batches. */
struct oc_plan_trace {
    uint64_t n_nodes;
    uint64_t n_batches;
    const uint64_t *off;  /* n_batches + 1 offsets into rows, off[0] = 0, nondecreasing */
    const uint64_t *rows; /* batch b's rows: rows[off[b] .. off[b+1]), distinct, < n_nodes */
};

/*
 * Access counts per row over the window: counts[v] = batches that access v
 * (saturating at UINT32_MAX); counts has n_nodes entries. OC_ERR_ARG for an
 * id >= n_nodes (naming batch and id) or offsets not monotone; counts is
 * then partly filled. Rows are not checked for repeats within a batch here
 * (a repeat counts twice); oc_plan_layout_build checks that.
 */
int oc_plan_count_accesses(const struct oc_plan_trace *t, uint32_t *counts, struct oc_err *err);

/*
 * The n hottest rows by counts (ties to the lower id; rows with count 0 are
 * never chosen, so fewer than n may come back), ascending, oc_alloc'd
 * (*ids NULL when *n_out = 0). O(32 n_nodes) time, no memory but the answer.
 */
int oc_plan_hottest(const uint32_t *counts, uint64_t n_nodes, uint64_t n, uint64_t **ids,
                    uint64_t *n_out, struct oc_err *err);

struct oc_plan_opts {
    uint64_t row_bytes;        /* one feature row as stored (any size >= 1) */
    const uint64_t *rec_bytes; /* n_batches: each batch's record bytes */
    const uint64_t *cpu_ids;   /* rows in the CPU cache, ascending, distinct */
    uint64_t n_cpu;
    uint64_t disk_budget_bytes; /* bound on the window file's bytes, also with a fixed
                                   segment; 0 = unlimited */
    uint32_t min_share;         /* m: a row goes to its segment's disk cache when more
                                   than m batches of the segment access it (0 = 1) */
    uint64_t segment;           /* s; 0 = the smallest s whose file fits the budget */
    int identity_order;         /* disk caches in ascending id instead of MinHash order
                                   (the comparison in the tests and the bench) */
};

struct oc_plan_layout {
    uint64_t n_batches, s, n_segments;
    uint64_t row_bytes;
    uint64_t file_bytes;    /* the whole window file */
    uint64_t *addr;         /* one code per access, in trace order (rows[i] -> addr[i]) */
    uint64_t *pack_off;     /* n_batches + 1 offsets into pack_rows */
    uint64_t *pack_rows;    /* batch b's packed rows in chunk order (ascending id) */
    uint64_t *chunk_off;    /* n_batches + 1: byte offset of chunk b; [n_batches] = end of chunks */
    uint64_t *seg_off;      /* n_segments + 1 offsets into seg_rows */
    uint64_t *seg_rows;     /* segment j's disk-cache rows in file order */
    uint64_t *seg_byte_off; /* n_segments + 1: byte offset of segment j's cache (0 bytes
                               when it has no rows); [n_segments] = file_bytes */
    uint64_t n_cpu_accesses, n_dc_accesses, n_packed_accesses; /* accesses per tier */
};

/* Bytes of a chunk's metadata: header + record + address table (its packed rows follow). */
static inline uint64_t oc_plan_chunk_meta_bytes(uint64_t rec_bytes, uint64_t n_input)
{
    return OC_PLAN_CHUNK_HEADER + rec_bytes + 8 * n_input;
}
/* Bytes of chunk b before padding: header + record + address table + packed rows. */
uint64_t oc_plan_chunk_bytes(uint64_t rec_bytes, uint64_t n_input, uint64_t n_packed,
                             uint64_t row_bytes);

/*
 * The window file's bytes with segments of s batches (s >= 1, s > n_batches
 * is one segment; the last segment may be short): the chunks, each rounded
 * up to OC_PLAN_PAGE, then each segment's cache, rounded up likewise (an
 * empty cache takes 0 bytes). O(accesses) plus one n_nodes x u32 scratch.
 * OC_ERR_ARG for a bad trace, s = 0 or a size past 64 bits.
 */
int oc_plan_file_bytes(const struct oc_plan_trace *t, const struct oc_plan_opts *o, uint64_t s,
                       uint64_t *bytes, struct oc_err *err);

/*
 * Builds the layout of t: s = o->segment, or (0) the smallest s in
 * 1..n_batches whose file fits o->disk_budget_bytes (1 when unlimited;
 * each s tried costs O(accesses)). OC_ERR_BUDGET when no s fits (or the
 * fixed s does not), naming the smallest file size possible and
 * --disk-budget; OC_ERR_ARG for a bad trace (id out of range, a row twice
 * in one batch, offsets not monotone), cpu_ids not ascending or >= n_nodes,
 * row_bytes 0 or rec_bytes NULL; OC_ERR_UNSUPPORTED for n_nodes >= 2^32 - 16
 * (the planner's scratch is u32 per node). n_batches = 0 is an empty layout
 * (file_bytes 0, the offset arrays hold their single 0). out is zeroed on
 * failure.
 */
int oc_plan_layout_build(const struct oc_plan_trace *t, const struct oc_plan_opts *o,
                         struct oc_plan_layout *out, struct oc_err *err);
void oc_plan_layout_deinit(struct oc_plan_layout *l);

/*
 * The layout of one batch when no row is shared through a disk cache (a
 * segment of one batch: what oc_plan_layout_build places with s = 1, so a
 * window can be laid out batch by batch as it is sampled): rows[k] in the
 * CPU cache (cpu: the set of its ascending ids, whose rank is the slot) ->
 * its CPU slot, else OC_PLAN_PACKED at its index among the batch's other
 * rows, which pack receives ascending (*n_pack of them). rows are distinct
 * and below cpu->n; addr and pack hold n entries. Pure.
 */
void oc_plan_batch_layout(const uint64_t *rows, uint64_t n, const struct oc_rank_set *cpu,
                          uint64_t *addr, uint64_t *pack, uint64_t *n_pack);

/*
 * Distinct OC_PLAN_PAGE pages of the window file that batch b's disk-cache
 * rows fall on (rows spanning pages count every page): the page reads a
 * batch's shared rows cost, which MinHash order is meant to lower. t is the
 * trace l was built from. OC_ERR_ARG for b >= n_batches.
 */
int oc_plan_layout_dc_pages(const struct oc_plan_layout *l, const struct oc_plan_trace *t,
                            uint64_t b, uint64_t *pages, struct oc_err *err);

/* ---- graph partition (partition.c): OUTRE's partition-based batches ---- */

/*
 * A node -> part map over the symmetrized topology without self-loops, nodes
 * and training nodes balanced over the parts, computed once and kept in
 * PLAN_DIR/part-<key>/parts.ocpt (docs/FORMAT.md section 7), by one of:
 */
enum oc_plan_partitioner {
    OC_PLAN_PART_METIS,  /* METIS k-way, minimum edge cut (default) */
    OC_PLAN_PART_FENNEL, /* Fennel (Tsourakakis et al., WSDM 2014), as OUTRE cites it: greedy
                            streaming passes in node order, restreamed; no METIS workspace */
    OC_PLAN_PART_COUNT
};
/* "metis" or "fennel" ("?" out of range). */
const char *oc_plan_partitioner_name(int partitioner);
struct oc_plan_partition {
    uint64_t n_nodes;
    uint32_t n_parts;
    uint32_t *part_of; /* n_nodes entries, each < n_parts */
    uint64_t key;      /* oc_plan_partition_key of the inputs */
    int built;         /* computed by this call (else read from the file) */
    double build_s;    /* seconds the partitioner took when built */
    char path[4200];   /* the file ("" when it could not be written) */
};

/*
 * Parts for `--partition-batch group`: group x the number of batches
 * (ceil(n_train / batch_size)), so a group of parts holds about one batch of
 * training nodes; at most n_train (every part should hold one) and n_nodes.
 */
uint32_t oc_plan_partition_n_parts(uint64_t n_nodes, uint64_t n_train, uint64_t batch_size,
                                   uint32_t group);
/*
 * The key naming a partition: the partitioner, topology (sizes, CRCs),
 * n_parts and the training ids.
 */
uint64_t oc_plan_partition_key(const struct oc_dataset *ds, const uint64_t *train_ids,
                               uint64_t n_train, uint32_t n_parts, int partitioner);
/*
 * The partition of g (in memory; OC_ERR_UNSUPPORTED over on-disk topology)
 * into n_parts: read from its file under plan_dir when that file is whole
 * and matches (size, magic, version, counts, key, CRC, parts in range),
 * otherwise computed (enum oc_plan_partitioner) and written there
 * atomically (a damaged file is logged and replaced, never trusted; a
 * directory that cannot be written is logged and the partition kept in
 * memory; plan_dir NULL: computed and kept in memory only, out->path
 * empty). *out is zeroed on failure.
 */
int oc_plan_partition_get(const struct oc_dataset *ds, const struct oc_graph *g,
                          const uint64_t *train_ids, uint64_t n_train, uint32_t n_parts,
                          int partitioner, const char *plan_dir, struct oc_plan_partition *out,
                          struct oc_err *err);
void oc_plan_partition_deinit(struct oc_plan_partition *p);

/* ---- feature layouts (order.c): `offcore layout --order` ---------------- */

enum oc_plan_order {
    OC_PLAN_ORDER_DEGREE,    /* in-degree descending, ties by id */
    OC_PLAN_ORDER_BFS,       /* breadth-first from the hubs (starts in degree order) */
    OC_PLAN_ORDER_PARTITION, /* METIS parts of about part_nodes nodes, part by part */
    OC_PLAN_ORDER_LPA,       /* label propagation's communities (of fewer than 4 x part_nodes) */
    OC_PLAN_ORDER_COUNT
};
/* "degree", "bfs", "partition", "lpa" ("?" out of range); from_name: OC_ERR_ARG if unknown. */
const char *oc_plan_order_name(int order);
int oc_plan_order_from_name(const char *name, int *order);

struct oc_plan_order_opts {
    int order;                 /* enum oc_plan_order */
    uint64_t part_nodes;       /* partition: nodes per part (about); lpa: a quarter of the cap */
    const uint64_t *train_ids; /* partition: balanced over the parts, and its key */
    uint64_t n_train;
    const char *plan_dir; /* partition: where its parts file is kept (NULL: not kept) */
};

/*
 * row_of[v] = the row of the rewritten features.npy for node v (n_nodes
 * entries, the caller's): a permutation of 0 .. n_nodes-1. g must be in
 * memory (OC_ERR_UNSUPPORTED otherwise) with fewer than 2^32 nodes.
 */
int oc_plan_feature_order(const struct oc_dataset *ds, const struct oc_graph *g,
                          const struct oc_plan_order_opts *o, uint64_t *row_of, struct oc_err *err);
/*
 * The share of g's edges whose two ends' rows (row_of, or ids when NULL) of
 * row_bytes lie within 16 pages (64 KiB, one merged read) of each other: how
 * much a layout brings neighbours together (1 = all of them).
 */
double oc_plan_order_locality(const struct oc_graph *g, const uint64_t *row_of, uint64_t row_bytes);
/*
 * `offcore layout`: loads ds's topology and training ids, computes the order
 * o->order (o's train_ids and n_train are ignored: the dataset's are used),
 * logs its locality against node-id order, frees the topology and writes the
 * laid-out copy `out` (oc_dataset_relayout) with bands of band_bytes, or
 * with OC_PLAN_LAYOUT_BAND_LEFT what the memory budget leaves (1 GiB
 * without one).
 */
#define OC_PLAN_LAYOUT_BAND_LEFT UINT64_MAX
int oc_plan_layout_dataset(const struct oc_dataset *ds, const struct oc_plan_order_opts *o,
                           const char *out, uint64_t band_bytes, struct oc_progress *progress,
                           struct oc_err *err);

/* ---- Belady changesets for any cache of ids (belady_api.c) ------------------- */

/*
 * The Belady planner (belady.c, the one ginex's inspector drives through
 * plan/belady.h) for callers that plan whole superbatches at once (kg's
 * Slice Cache, --strategy auto's inspection): for a
 * cache of `capacity` slots holding ids, and the ids each iteration of a
 * superbatch reads (distinct within an iteration), the exact Belady
 * changesets at iteration granularity, as ginex's executor follows them:
 *
 *   warm:     before iteration 0, id warm_id[w] goes into slot warm_slot[w]
 *   changes:  after iteration i, for c in [chg_off[i], chg_off[i+1]): slot
 *             chg_slot[c] drops its id and takes the id at position
 *             chg_pos[c] of iteration i's list (a miss read by that iteration)
 *   n_miss:   misses of iteration i under this plan
 *
 * The cache contents carry from one call to the next (the next superbatch).
 * Next uses beyond the superbatch are unknown: such ids are evicted first.
 * Thread-safety: one thread at a time. Ownership: the planner owns the
 * plan's arrays (valid until its next plan call); ids are borrowed.
 */
struct oc_plan_belady;
struct oc_plan_belady_plan {
    uint64_t n_iters, n_warm, n_chg;
    const uint64_t *warm_id;
    const uint32_t *warm_slot;
    const uint64_t *chg_off; /* n_iters + 1 */
    const uint32_t *chg_pos, *chg_slot;
    const uint64_t *n_miss; /* n_iters */
};
int oc_plan_belady_new(uint64_t capacity, struct oc_plan_belady **out, struct oc_err *err);
void oc_plan_belady_free(struct oc_plan_belady *b);
/* Plans n_iters iterations; iteration i reads ids[iter_off[i] .. iter_off[i+1]). */
int oc_plan_belady_plan(struct oc_plan_belady *b, const uint64_t *ids, const uint64_t *iter_off,
                        uint64_t n_iters, struct oc_plan_belady_plan *out, struct oc_err *err);
/* Memory the planner holds. */
uint64_t oc_plan_belady_held_bytes(const struct oc_plan_belady *b);

/* ---- partitioned datasets (part_set.c, part_open.c): `offcore partition` ---- */

/*
 * A dataset cut into n_parts for as many ranks of `train --distributed`
 * (docs/FORMAT.md section 10): OUT/partition.json (parts, run id, each
 * part's part.json size and CRC-32) and OUT/part-<k>/, a dataset directory
 * without features (the whole topology, labels and splits, replicated)
 * holding part.json, rows.npy (the features of part k's nodes, in its local
 * order) and owner.npy (node -> (owner part, row in the owner's rows.npy)).
 */
#define OC_PLAN_PARTS_MAX  256 /* every part's rows are written at once: one file each */
#define OC_PLAN_RUN_ID_LEN 16  /* hex digits of a partition run's id */

/*
 * `offcore partition`: METIS parts of ds (oc_plan_partition_get, kept under
 * plan_dir) with nodes and training nodes balanced, written into the new
 * directory out atomically (a marked temporary renamed into place): every
 * part's dataset, rows and map, then partition.json. ds must have features
 * in node-id order (no layout) and fewer than 2^32 nodes; 2 <= n_parts <=
 * min(OC_PLAN_PARTS_MAX, n_nodes). *run_id gets the run's id.
 */
int oc_plan_part_set_write(const struct oc_dataset *ds, uint32_t n_parts, const char *plan_dir,
                           const char *out, struct oc_progress *progress,
                           char run_id[OC_PLAN_RUN_ID_LEN + 1], struct oc_err *err);

/* Whether dir holds a partition.json (a partitioned dataset, not a dataset). */
int oc_plan_part_set_is(const char *dir);
/* The part count of the partitioned dataset out (its partition.json, strictly parsed). */
int oc_plan_part_set_n_parts(const char *out, uint32_t *n_parts, struct oc_err *err);

/* One part of a partitioned dataset, validated (oc_plan_part_open). */
struct oc_plan_part {
    uint32_t part, n_parts;
    uint64_t n_nodes, n_local; /* nodes of the graph; of them, this part's */
    uint32_t feat_dim;
    enum oc_dtype feat_dtype;
    char run_id[OC_PLAN_RUN_ID_LEN + 1];
    char dir[4200];       /* OUT/part-<k>: its dataset directory (topology, labels, splits) */
    char rows[4300];      /* OUT/part-<k>/rows.npy: n_local x feat_dim, feat_dtype */
    uint64_t *n_local_of; /* n_parts: every part's node count */
    uint32_t *owner;      /* 2 x n_nodes: node v's owner part and its row there */
};
/*
 * Opens part `part` of the partitioned dataset out for a run of n_parts
 * ranks, checking before any training (OC_ERR_FORMAT / OC_ERR_ARG /
 * OC_ERR_NOTFOUND, naming the file): partition.json strictly parsed; its
 * part count equal to n_parts; OUT/part-<part>/part.json present, of this
 * run (its run id partition.json's) and of the size and CRC partition.json
 * records; manifest.json, rows.npy and owner.npy present with the sizes,
 * headers (dtype, shape) and CRC-32s part.json records; owner.npy a
 * bijection onto every part's rows. Loads the map (8 bytes a node, through
 * the accountant). *p is zeroed on failure.
 */
int oc_plan_part_open(const char *out, uint32_t part, uint32_t n_parts, struct oc_plan_part *p,
                      struct oc_err *err);
void oc_plan_part_close(struct oc_plan_part *p);

#endif
