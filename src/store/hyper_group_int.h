/*
 * hyper_group_int.h — private to hyper.c and hyper_disk.c: the hyperbatch's
 * groups and batch entries, shared by the groups kept in memory (hyper.c)
 * and the groups staged on disk (hyper_disk.c).
 *
 * Place in the data flow: store, inside the hyperbatch (hyper_int.h).
 * Thread-safety: as hyper.c states per field ([mu]: under store_hyper.mu).
 * Ownership: the hyperbatch owns everything here.
 */
#ifndef OFFCORE_STORE_HYPER_GROUP_INT_H
#define OFFCORE_STORE_HYPER_GROUP_INT_H

#include "store/store_int.h"

#define HYPER_GROUPS   2u
#define HYPER_RUN_ROWS 16384u /* rows the read stage queues per run of its reader, at most */

/* A group's state, under mu: what take may find in it. */
enum { HYPER_FREE, HYPER_STAGED, HYPER_TAKEN }; /* STAGED: being filled, or read */

/* A batch of a group; a take's handle from take to done. */
struct store_hyper_batch {
    struct store_hyper_group *g;
    uint64_t epoch, batch;
    int taken;      /* [mu] */
    uint8_t *chunk; /* disk: its rows, read from the group's file by its take (until done) */
};

struct store_hyper_group {
    struct store_hyper_batch *batches; /* [mu] in prepare order; max_batches */
    uint32_t n_batches, n_done;        /* [mu] n_done: batches taken and done */
    int state;                         /* [mu] HYPER_FREE / STAGED / TAKEN */
    uint64_t *rows, n_rows;            /* rows of features.npy staged: in memory, ascending and
                                          unique once read; on disk, batch k's are
                                          rows[boff[k], boff[k + 1]), ascending once packed */
    uint8_t *data;                     /* in memory: n_rows rows as stored, in the order of rows */
    size_t row_bytes;
    /* on disk (hyper_disk.c) */
    uint64_t *boff;      /* max_batches + 1 */
    uint64_t *chunk_off; /* batch k's rows in file at [chunk_off[k], +(boff[k+1]-boff[k]) rows) */
    struct oc_file *file, *direct; /* its scratch file: writer, O_DIRECT reader */
    char label[4200];              /* the scratch file, for messages */
};

struct store_hyper {
    struct oc_store *s;
    struct store_hyper_shape shape; /* as opened: cap rows and max_batches batches per group,
                                       staged on disk (hyper_disk.c) or in memory */
    uint64_t run_rows;              /* rows per run of the reader: min(cap, HYPER_RUN_ROWS) */
    struct store_hyper_group groups[HYPER_GROUPS];
    uint64_t *sort_tmp;        /* the read stage's radix scratch (cap; on disk, a batch's rows) */
    _Atomic uint64_t cap_sort; /* its room (on disk grown by the read stage; stats read it) */
    struct store_disk disk_reader;
    struct oc_pipeline *p;
    struct oc_queue *free_q, *read_q, *ready_q;
    struct store_feed *feed;  /* shape.fed: prepares the batches ahead (its own stage) */
    _Atomic uint64_t n_taken; /* batches taken, for the feeder's closing line */
    /* prepare's side */
    struct store_hyper_group *cur;
    uint64_t count; /* batches prepared since open (epochs end at multiples of n_plan_batches) */
    /* the gathers' side (take and done: any threads) */
    pthread_mutex_t mu;       /* a leaf lock: no queue call is made with it held */
    pthread_cond_t cv;        /* a group was taken from ready_q, or its pop failed */
    int popping;              /* [mu] a taker waits on ready_q */
    const void **src;         /* store_hyper_gather's (one thread) */
    _Atomic uint64_t cap_src; /* read by stats on any thread */
    _Atomic uint64_t read_bytes, n_reads, write_bytes;
    /* on disk: the read stage's scan buffer (shape.part_bytes) and cursors (hyper_disk.c) */
    uint8_t *part;
    struct hyper_cursor *cursors; /* max_batches */
    char dir[4200];               /* where the groups' scratch files are */
};

/* ---- groups on disk (hyper_disk.c) ---------------------------------------- */

/* The packing scan's buffer for a share of `budget` bytes: an eighth, within bounds. */
uint64_t hyper_disk_part_bytes(const struct oc_store *s, uint64_t budget);
/* Bytes the disk staging of shape sh holds besides the ids: scan buffer, write-behind,
   cursors, offsets, and the takers' chunk buffers of a batch bound of rows. */
uint64_t hyper_disk_fixed_bytes(const struct oc_store *s, const struct store_hyper_shape *sh);
/* Opens the scan buffer, cursors and both groups' scratch files under plan_dir/hyper. */
int hyper_disk_open(struct store_hyper *h, const char *plan_dir, struct oc_err *err);
void hyper_disk_close(struct store_hyper *h);
/* The read stage: each batch's rows sorted, then packed into the group's file in one scan. */
int hyper_disk_pack(struct store_hyper *h, struct store_hyper_group *g, struct oc_err *err);
/* A take of batch t of a read group: its chunk read into t->chunk. */
int hyper_disk_take(struct store_hyper *h, struct store_hyper_batch *t, struct oc_err *err);
const void *hyper_disk_row(const struct store_hyper_batch *t, uint64_t row);
void hyper_disk_done(struct store_hyper_batch *t);

#endif
