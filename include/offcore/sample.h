/*
 * sample.h — node-wise neighbor sampling into DGL-style mini-batches
 * ("message flow graphs"), the per-epoch seed order, and a compact binary
 * record of a batch.
 *
 * Place in the data flow: dataset ──► sample ──► plan/store/pipeline ──► nn.
 * train asks for batch b of epoch e: oc_sample_epoch_shuffle() fixes the seed
 * order from (seed, epoch), oc_sample_epoch_batch() gives batch b's seeds, and
 * oc_sample_neighbors() turns them into blocks. The out-of-core strategies
 * (ginex, diskgnn) sample ahead and write batches with
 * oc_sample_batch_serialize(); the pipeline reads them back with
 * oc_sample_batch_deserialize(). Exact layer-wise inference uses
 * oc_sample_full_layer() on chunks of destination nodes.
 *
 * A batch of L layers, seeds S, fanouts f[0..L) (f[0] = input side):
 *
 *   input_ids ──► block 0 ──► block 1 ──► ... ──► block L-1 ──► S (outputs)
 *                (f[0])      (f[1])              (f[L-1])
 *
 *   block l: destination nodes are a prefix of its source nodes, and its
 *   source nodes are block l-1's destination nodes; every layer's node set is
 *   a prefix of input_ids:   input_ids = [ S | new in block L-1 | ... | new in block 0 ]
 *                                        └ dst of L-1 ┘
 *                                        └──── src of L-1 = dst of L-2 ───┘
 *   CSR over destinations: the in-neighbors of local dst i are the local src
 *   ids indices[indptr[i] .. indptr[i+1]), ascending by global id.
 *
 * Fanout convention (as DGL's MultiLayerNeighborSampler and `--fanout 15,10,5`):
 * fanouts[0] applies to block 0, the first GNN layer (input side); sampling
 * runs outward from the seeds, so fanouts[L-1] is drawn first.
 *
 * Determinism: the neighbors drawn for node v in block l of batch b of epoch
 * e depend only on (seed, e, b, l, v) through the counter-based RNG stream
 * oc_rng_init(seed, e, b, v·OC_SAMPLE_MAX_LAYERS + l) (Floyd's algorithm, then
 * sorted), and local ids follow first appearance, so the same (seed, epoch,
 * batch, seeds) yields bit-identical batches at any thread count.
 *
 * Thread-safety: a struct oc_sampler is used by one thread at a time (it owns
 * a workspace). Several samplers may share a pool (oc_pool_run serializes its
 * callers), but a sampler must not be called from a task of its own pool. For
 * throughput past a few threads, run one sampler per batch in flight (batches
 * are independent) rather than one sampler with a big pool: the relabeling
 * pass of each layer is sequential. The graph view is read-only and may be
 * shared by many samplers. Batches and epochs are caller storage owned by one
 * thread at a time.
 * Ownership: the graph's arrays and the pool are borrowed and must outlive the
 * sampler. A batch owns its arrays (grown on demand, reused across calls,
 * released by oc_sample_batch_deinit).
 */
#ifndef OFFCORE_SAMPLE_H
#define OFFCORE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"
#include "offcore/dataset.h"
#include "offcore/thread.h"

#define OC_SAMPLE_MAX_LAYERS 8
#define OC_SAMPLE_ALL        (-1) /* fanout: take every in-neighbor */

struct oc_topo_disk; /* on-disk topology, below */

/*
 * A read-only topology view: CSC, the in-neighbors of v are
 * indices[indptr[v] .. indptr[v+1]), ascending. In memory, exactly one of
 * indices32 and indices64 is set (u32 when n_nodes < 2^32, as on disk),
 * holding indptr[n_nodes] entries, and disk is NULL. On disk
 * (oc_sample_topo_disk_graph), disk is set, indptr is the topology's and
 * both indices pointers are NULL. Malformed contents (indptr decreasing, a
 * neighbor >= n_nodes) are reported as OC_ERR_FORMAT when the sampler
 * reaches them.
 */
struct oc_graph {
    uint64_t n_nodes;
    const uint64_t *indptr; /* n_nodes + 1 */
    const uint32_t *indices32;
    const uint64_t *indices64;
    const struct oc_topo_disk *disk; /* NULL = in memory */
};

/*
 * Checks the whole view: indptr[0] == 0, nondecreasing, every neighbor <
 * n_nodes. O(N + E); on disk this reads all of indices.npy.
 */
int oc_sample_graph_check(const struct oc_graph *g, struct oc_err *err);

/* ---- batches ------------------------------------------------------------ */

struct oc_sample_block {
    uint64_t n_src;                   /* source nodes: input_ids[0 .. n_src) */
    uint64_t n_dst;                   /* destination nodes: input_ids[0 .. n_dst), n_dst <= n_src */
    uint64_t n_edges;                 /* = indptr[n_dst] */
    uint64_t *indptr;                 /* n_dst + 1 */
    uint32_t *indices;                /* n_edges local source ids, each < n_src */
    uint64_t cap_indptr, cap_indices; /* allocated elements (private) */
};

struct oc_sample_batch {
    uint32_t n_layers;
    uint64_t epoch, batch_index; /* what was sampled (0, 0 for oc_sample_full_layer) */
    uint64_t n_seeds;            /* = blocks[n_layers - 1].n_dst; seeds = input_ids[0 .. n_seeds) */
    uint64_t n_input;            /* = blocks[0].n_src */
    uint64_t *input_ids;         /* global ids of the input nodes, n_input */
    uint64_t cap_input;          /* allocated elements (private) */
    struct oc_sample_block blocks[OC_SAMPLE_MAX_LAYERS]; /* [0] = input side */
};

/* An empty batch (no allocation). */
void oc_sample_batch_init(struct oc_sample_batch *b);
/* Releases the arrays; the batch is empty again. */
void oc_sample_batch_deinit(struct oc_sample_batch *b);
/* Whether two batches hold the same layers, ids and edges (capacities ignored). */
int oc_sample_batch_equal(const struct oc_sample_batch *a, const struct oc_sample_batch *b);
/* Sum of the blocks' edges. */
uint64_t oc_sample_batch_n_edges(const struct oc_sample_batch *b);

/* ---- the sampler -------------------------------------------------------- */

/*
 * Partition-based batches (OUTRE, `--batching partition`): every node's part
 * (from the plan module's graph partition) and how many parts make a group.
 * An epoch in this order (oc_sample_epoch_init_plan) lists its seeds group by
 * group: the parts permuted from (seed, epoch), taken `group` at a time, the
 * training nodes of a group's parts shuffled together from (seed, epoch,
 * group), groups concatenated; the batches are then cut from that list as
 * usual, so their count and sizes are those of random batches. key names the
 * partition's content (plan files of the strategies that sample ahead fold
 * it into theirs). Borrowed by every holder of the options.
 */
struct oc_sample_parts {
    uint64_t n_nodes;        /* entries of part_of */
    const uint32_t *part_of; /* node -> part, each < n_parts */
    uint32_t n_parts;
    uint32_t group; /* parts per group (>= 1) */
    uint64_t key;   /* content key of the partition */
};

struct oc_sample_opts {
    uint32_t n_layers;                     /* 1 .. OC_SAMPLE_MAX_LAYERS */
    int32_t fanouts[OC_SAMPLE_MAX_LAYERS]; /* [0] = block 0 (input side); >= 0 or OC_SAMPLE_ALL */
    uint64_t seed;                         /* the run's seed */
    const struct oc_sample_parts *parts;   /* batch order by partitions; NULL = random
                                              (the sampler itself ignores it) */
};

struct oc_sampler;

/*
 * Creates a sampler over g (borrowed) using pool (borrowed; NULL = run on the
 * calling thread). Allocates the per-worker scratch; per-batch buffers grow on
 * the first batches and are then reused. Fails with OC_ERR_ARG on a bad
 * option or graph view, naming it.
 */
int oc_sample_sampler_new(const struct oc_graph *g, const struct oc_sample_opts *opts,
                          struct oc_pool *pool, struct oc_sampler **out, struct oc_err *err);
void oc_sample_sampler_free(struct oc_sampler *s);

/*
 * Samples the blocks of batch `batch_index` of `epoch` for the given seed
 * nodes (distinct, < n_nodes; their order is the order of the outputs) into
 * out, whose arrays are reused. Per destination node v of block l: every
 * in-neighbor if fanouts[l] == OC_SAMPLE_ALL or deg(v) <= fanouts[l], else
 * fanouts[l] distinct in-neighbors drawn uniformly without replacement. On
 * failure out is left empty-but-reusable (n_layers = 0).
 */
int oc_sample_neighbors(struct oc_sampler *s, uint64_t epoch, uint64_t batch_index,
                        const uint64_t *seeds, uint64_t n_seeds, struct oc_sample_batch *out,
                        struct oc_err *err);

/*
 * Called by oc_sample_neighbors as each hop's new frontier is known, on the
 * sampling thread: first the seeds (input_ids[0, n_seeds)), then after each
 * block, sampled from the seeds outward, the nodes it added
 * (input_ids[lo, hi)); the hops partition input_ids in order. `ids` points
 * into the batch being built and is valid only during the call; epoch and
 * batch_index are the batch's. A non-OK return (err filled) stops the sampling
 * with that error. The hook reads only: sampling results do not depend on it.
 */
typedef int (*oc_sample_hop_fn)(void *ctx, uint64_t epoch, uint64_t batch_index,
                                const uint64_t *ids, uint64_t lo, uint64_t hi, struct oc_err *err);
/* Sets (fn non-NULL) or clears the per-hop hook of s (oc_sample_full_layer never calls it). */
void oc_sample_sampler_on_hop(struct oc_sampler *s, oc_sample_hop_fn fn, void *ctx);

/*
 * OUTRE's pruning by historical embeddings. For a batch of L >= 2 layers,
 * after the last block (L-1, sampled first) the sampler calls fn with that
 * block's source nodes ids[0 .. n) = input_ids[0 .. n_src(L-1)), of which
 * the first n_seeds are the seeds, and a zeroed mask of n bytes. A node the
 * hook marks (mask[i] = 1, i >= n_seeds: seeds are never pruned) takes no
 * neighbours in block L-2: its embedding at the input of the last layer
 * comes from elsewhere (a cache), so the sub-tree below it is not sampled.
 * It keeps its own sampling in the blocks below (others may need its lower
 * embeddings). Every other draw is unchanged (streams keyed by node), so a
 * hook that marks nothing gives the very batch sampled without it. ids is
 * valid during the call only; a non-OK return stops the sampling.
 */
typedef int (*oc_sample_prune_fn)(void *ctx, uint64_t epoch, uint64_t batch_index,
                                  const uint64_t *ids, uint64_t n, uint64_t n_seeds, uint8_t *mask,
                                  struct oc_err *err);
/* Sets (fn non-NULL) or clears the pruning hook of s (oc_sample_full_layer never calls it). */
void oc_sample_sampler_on_prune(struct oc_sampler *s, oc_sample_prune_fn fn, void *ctx);

/*
 * One full-neighbor block for exact layer-wise inference: destination nodes
 * dst (distinct, in this order) with all their in-neighbors. out gets
 * n_layers = 1; its input_ids are what the layer must read.
 */
int oc_sample_full_layer(struct oc_sampler *s, const uint64_t *dst, uint64_t n_dst,
                         struct oc_sample_batch *out, struct oc_err *err);

/* ---- on-disk topology (`--topology disk`) ------------------------------- */

/*
 * Topology whose neighbor lists stay on disk, with Ginex's neighbor cache:
 * indptr is in RAM; indices.npy is opened with O_DIRECT and read during
 * sampling; the lists of the highest in-degree nodes are kept in a cache.
 *
 *   RAM:  indptr   (N+1) × 8 B        degrees, list offsets in the file
 *         table    N × 8 B            node → element offset in cache, or "not cached";
 *                                     none when the budget holds indptr and every list
 *                                     (the cache is then indices itself, indptr its offsets)
 *         cache    Σ deg(cached) × s  cached lists packed in node-id order (s = 4 | 8)
 *   disk: indices.npy                 uncached lists, read with O_DIRECT
 *
 * The budget covers indptr + table + cache (indptr + cache when all is cached). Nodes are ranked by in-degree
 * (descending, ties by ascending id; nodes without in-neighbors are never
 * ranked) and the cache holds the longest prefix of that ranking whose lists
 * fit in what the budget leaves after indptr and table: exactly the top nodes.
 * The cache is filled at open by one pass of merged reads.
 *
 * During sampling each sampler worker owns an io_uring batch reader (pread
 * where io_uring is unavailable). The sampler queues the reads of a whole
 * chunk of destination nodes (a list that is taken whole is one request,
 * split into 1 MiB reads when longer; a list that is sampled reads only the
 * pages holding the drawn positions, which the positions do not depend on
 * since they come from the RNG alone), runs them at once with page merging,
 * and reads each node's lists straight into the sampler's edge buffer. So
 * the sampled batches are bit-identical to in-memory topology at any thread
 * count and cache size. Per-worker memory outside the budget: the reader's
 * aligned staging (io_bounce_bytes) and its request table (about 100 B per
 * read queued, reused).
 *
 * Errors while sampling: indices.npy shorter than indptr says, or unreadable,
 * are OC_ERR_FORMAT / OC_ERR_IO from oc_sample_neighbors, naming the file and
 * offset (the lowest failing chunk's error, as for in-memory errors).
 *
 * Thread-safety: an open topology is immutable and may be shared by many
 * samplers on many threads; its file is read with pread/io_uring only.
 * Ownership: the topology owns indptr, table, cache and the file; views from
 * oc_sample_topo_disk_graph and samplers over them borrow it and must not
 * outlive it.
 */
/* How the neighbor cache ranks nodes. */
enum oc_topo_rank {
    OC_TOPO_RANK_DEGREE = 0, /* by in-degree, highest first (the lists sampled most) */
    OC_TOPO_RANK_GINEX = 1,  /* Ginex's: out-degree / in-degree, highest first (accesses
                                per cached byte); needs one sequential scan of indices */
};

struct oc_topo_disk_opts {
    uint64_t budget_bytes; /* indptr + table + cache; UINT64_MAX = cache every list */
    enum oc_topo_rank rank;
    unsigned io_depth;        /* reads in flight per sampler worker (0 = 64) */
    uint64_t io_bounce_bytes; /* aligned staging per sampler worker (0 = 1 MiB) */
};

/*
 * Opens the topology of an opened dataset (borrowed; only its paths and
 * manifest are read here). A budget below indptr + table that does not hold
 * indptr and every list is OC_ERR_BUDGET
 * naming the bytes needed; an allocation refused by --mem-budget is
 * OC_ERR_BUDGET too. Read errors while filling the cache: OC_ERR_IO /
 * OC_ERR_FORMAT naming the file and offset. *out is NULL on failure.
 */
int oc_sample_topo_disk_new(const struct oc_dataset *ds, const struct oc_topo_disk_opts *opts,
                            struct oc_topo_disk **out, struct oc_err *err);
/*
 * The same from parts: indices_path holds indptr[n_nodes] ids of
 * index_dtype (OC_DTYPE_U32 or OC_DTYPE_U64, little-endian) starting at byte
 * data_offset; indptr (n_nodes + 1 entries, borrowed) is copied. Checks
 * indptr (starts at 0, nondecreasing) and that the file is long enough:
 * OC_ERR_FORMAT otherwise. For tests and tools that have no dataset directory.
 */
int oc_sample_topo_disk_new_file(const char *indices_path, uint64_t data_offset,
                                 enum oc_dtype index_dtype, uint64_t n_nodes,
                                 const uint64_t *indptr, const struct oc_topo_disk_opts *opts,
                                 struct oc_topo_disk **out, struct oc_err *err);
void oc_sample_topo_disk_free(struct oc_topo_disk *t);

/* Fills g with a view of t for oc_sample_sampler_new (t must outlive it). */
void oc_sample_topo_disk_graph(const struct oc_topo_disk *t, struct oc_graph *g);
/* Whether v's list is in the cache (0 for v >= n_nodes and for empty lists). */
int oc_sample_topo_disk_is_cached(const struct oc_topo_disk *t, uint64_t v);

struct oc_topo_disk_info {
    uint64_t n_nodes, n_edges;
    uint32_t index_bytes;       /* 4 or 8 */
    uint64_t budget_bytes;      /* as given */
    uint64_t indptr_bytes;      /* (N+1) × 8 */
    uint64_t table_bytes;       /* N × 8, or 0 when every list is cached */
    uint64_t cache_bytes;       /* cached entries × index_bytes (<= budget - the two above) */
    uint64_t n_cached_nodes;    /* nodes whose list is cached */
    enum oc_topo_rank rank;     /* how they were chosen */
    uint64_t n_cached_edges;    /* entries in the cache */
    uint64_t min_cached_degree; /* in-degree of the last node ranked in (0 if none) */
    uint64_t build_read_bytes;  /* bytes read from disk to fill the cache */
    uint64_t build_reads;       /* reads issued to fill it */
    int direct;                 /* whether O_DIRECT is in effect on indices.npy */
};
void oc_sample_topo_disk_info(const struct oc_topo_disk *t, struct oc_topo_disk_info *info);

/* Neighbor-list traffic of a sampler over an on-disk topology (all zero in memory). */
struct oc_topo_disk_stats {
    uint64_t n_lookups;       /* lists needed (nodes with >= 1 in-neighbor) */
    uint64_t n_hits;          /* of which served from the cache */
    uint64_t requested_bytes; /* bytes of lists asked from disk */
    uint64_t read_bytes;      /* bytes the disk delivered (page rounding, merging) */
    uint64_t n_reads;         /* reads issued after merging */
};
/*
 * Sums the per-worker counters of s since it was created. Call between
 * sampling calls (from the thread that drives s).
 */
void oc_sample_sampler_topo_stats(const struct oc_sampler *s, struct oc_topo_disk_stats *out);
/*
 * Counters that only grow (a sampler's, a pipeline's, a store's), read now
 * and then: adds what they counted since *mark to *to (to += now - mark,
 * counter by counter), then moves *mark to *now. With *to zeroed, *to is
 * the difference. The one walk over struct oc_topo_disk_stats's counters
 * for sums and differences (the store's samplers' tally, oc_store_stats_sub,
 * the batch pipeline's drawers and the trainer's epoch figures).
 */
void oc_sample_topo_stats_add_since(struct oc_topo_disk_stats *to,
                                    const struct oc_topo_disk_stats *now,
                                    struct oc_topo_disk_stats *mark);

/* ---- seed order --------------------------------------------------------- */

/*
 * Permutes ids in place by Fisher–Yates with the RNG stream of (seed, epoch):
 * the result depends only on (seed, epoch, the input order).
 */
void oc_sample_shuffle(uint64_t seed, uint64_t epoch, uint64_t *ids, uint64_t n);
/*
 * The order in which training epoch `epoch` visits n reused batches
 * (--reuse-samples: epoch 0's batches, reshuffled every epoch as DiskGNN
 * shuffles its pool): a permutation of [0, n) from (seed, epoch) only, on a
 * stream of its own.
 */
void oc_sample_batch_order(uint64_t seed, uint64_t epoch, uint64_t *order, uint64_t n);

/*
 * The mini-batches of one epoch: a copy of the training ids, reordered per
 * epoch from the original order (so epoch e's order never depends on earlier
 * epochs), cut into batches of batch_size; the last batch is short unless
 * drop_last, which drops it.
 */
struct oc_sample_epoch {
    uint64_t n_ids, batch_size;
    int drop_last;
    uint64_t *orig;  /* the ids as given */
    uint64_t *order; /* this epoch's order */
    /* partition order (oc_sample_epoch_init_plan with parts), else NULL / 0 */
    uint64_t *part_ptr;  /* n_parts + 1: the ids of part p are part_ids[part_ptr[p] ..) */
    uint64_t *part_ids;  /* the ids grouped by part, in their given order */
    uint32_t *part_perm; /* n_parts: scratch for the epoch's permutation of parts */
    uint32_t n_parts, group;
};

int oc_sample_epoch_init(struct oc_sample_epoch *ep, const uint64_t *ids, uint64_t n_ids,
                         uint64_t batch_size, int drop_last, struct oc_err *err);
/*
 * oc_sample_epoch_init for a training plan: with so->parts set, the epoch's
 * shuffle is the partition order of struct oc_sample_parts (an id >=
 * parts->n_nodes or a part >= n_parts is OC_ERR_ARG); without, the random
 * shuffle. Every holder of a plan (the pipeline, the strategies that sample
 * ahead or pre-sample) makes its epochs with it, so all see the same batches.
 */
int oc_sample_epoch_init_plan(struct oc_sample_epoch *ep, const uint64_t *ids, uint64_t n_ids,
                              uint64_t batch_size, int drop_last, const struct oc_sample_opts *so,
                              struct oc_err *err);
void oc_sample_epoch_deinit(struct oc_sample_epoch *ep);
/* Sets the order to epoch `epoch`'s shuffle of the original ids (partition order if set). */
void oc_sample_epoch_shuffle(struct oc_sample_epoch *ep, uint64_t seed, uint64_t epoch);
/* Restores the original order (evaluation). */
void oc_sample_epoch_unshuffle(struct oc_sample_epoch *ep);
uint64_t oc_sample_epoch_n_batches(const struct oc_sample_epoch *ep);
/* Batch b's seeds: a slice of the current order. OC_ERR_ARG if b >= n_batches. */
int oc_sample_epoch_batch(const struct oc_sample_epoch *ep, uint64_t b, const uint64_t **seeds,
                          uint64_t *n_seeds, struct oc_err *err);

/* ---- a plan's batches, in order ---------------------------------------- */

/*
 * The batches of a training plan, sampled one after the other (plan_iter.c):
 * a sampler over g and the plan's epoch (oc_sample_epoch_init_plan, so the
 * partition order where so->parts is set), shuffled per epoch with so->seed.
 * Batch b of epoch e is exactly the pipeline's: oc_sample_neighbors(e, b) on
 * the epoch's slice b. For probes and pre-sampling at open and for the
 * strategies that sample ahead.
 *
 *   struct oc_sample_iter it;
 *   if (oc_sample_iter_open(&it, g, so, pool, ids, n, batch_size, err)) ...
 *   oc_sample_iter_seek(&it, epoch, 0);
 *   while ((rc = oc_sample_iter_next(&it, err)) == 1) ... it.batch ...
 *   oc_sample_iter_close(&it);
 */
struct oc_sample_iter {
    struct oc_sampler *sampler;   /* callers may set its hooks (outre's pruning) */
    struct oc_sample_epoch ep;    /* the plan's epoch, shuffled for `epoch` */
    struct oc_sample_batch batch; /* what the last oc_sample_iter_next sampled */
    uint64_t seed;                /* so->seed */
    uint64_t epoch;               /* the epoch ep is shuffled for; UINT64_MAX = none yet */
    uint64_t next;                /* the batch oc_sample_iter_next samples */
    uint64_t n_batches;           /* batches per epoch */
};

/*
 * Makes the sampler (pool borrowed; NULL = the calling thread) and the plan's
 * epoch over ids[0 .. n_ids) (copied). Errors are the sampler's and
 * oc_sample_epoch_init_plan's (a bad option, a seed without a part); on
 * failure it holds nothing (oc_sample_iter_close is then a no-op).
 */
int oc_sample_iter_open(struct oc_sample_iter *it, const struct oc_graph *g,
                        const struct oc_sample_opts *so, struct oc_pool *pool, const uint64_t *ids,
                        uint64_t n_ids, uint64_t batch_size, struct oc_err *err);
/* Frees what it holds; NULL, a failed open and a zeroed struct are no-ops. */
void oc_sample_iter_close(struct oc_sample_iter *it);
/* Positions it at batch `batch` of `epoch`, shuffling the order unless it already is epoch's. */
void oc_sample_iter_seek(struct oc_sample_iter *it, uint64_t epoch, uint64_t batch);
/*
 * Samples the next batch of the current epoch into it->batch: 1 when it did,
 * 0 past the epoch's last batch, a negative status on error (OC_ERR_ARG when
 * not open or before any seek; the sampler's errors).
 */
int oc_sample_iter_next(struct oc_sample_iter *it, struct oc_err *err);
/*
 * Batch `batch` of `epoch` into out (seeking there first, so next samples the
 * batch after): random access, for a strategy that samples batches again
 * (ginex's loader) or only one (a probe). OC_ERR_ARG for a batch past the
 * epoch's last.
 */
int oc_sample_iter_sample(struct oc_sample_iter *it, uint64_t epoch, uint64_t batch,
                          struct oc_sample_batch *out, struct oc_err *err);

/* ---- binary record ------------------------------------------------------ */

/*
 * A batch as a compact little-endian record (all integers LE, no padding):
 *
 *   off  size
 *   0    4    magic "OCSB"
 *   4    2    version (1)
 *   6    2    n_layers
 *   8    4    flags: bit 0 = input ids stored as u32 (all < 2^32)
 *   12   4    reserved, 0
 *   16   8    epoch
 *   24   8    batch_index
 *   32   8    n_input
 *   40   24×L per block l: n_src, n_dst, n_edges (u64 each)
 *   ...       input ids: n_input × (u32 | u64)
 *   ...       per block l: degrees n_dst × u32, then indices n_edges × u32
 *   end-4 4   CRC-32 (zlib) of every byte before it
 */
#define OC_SAMPLE_RECORD_VERSION 1

/* Bytes of b's record. */
uint64_t oc_sample_batch_record_bytes(const struct oc_sample_batch *b);

/*
 * Writes b's record into buf[0 .. cap); *len = its size. If cap is too small
 * returns OC_ERR_ARG with *len = the size needed and writes nothing.
 */
int oc_sample_batch_serialize(const struct oc_sample_batch *b, void *buf, size_t cap, size_t *len,
                              struct oc_err *err);

/*
 * Reads a record of exactly len bytes into out (arrays reused). Every
 * inconsistency is OC_ERR_FORMAT with a message naming it: wrong magic or
 * version, truncated or trailing bytes, CRC mismatch, counts that do not
 * chain (block l's n_src != block l-1's n_dst), degrees not summing to
 * n_edges, a local id >= n_src, an input id >= n_nodes. Input ids are not
 * checked for duplicates (the CRC guards against corruption; a writer that
 * repeats an id is a bug upstream). On failure out is left empty-but-reusable.
 */
int oc_sample_batch_deserialize(const void *buf, size_t len, uint64_t n_nodes,
                                struct oc_sample_batch *out, struct oc_err *err);

#endif
