/*
 * dataset_int.h — private helpers of the dataset format module: the npy
 * writer's shape accessor, and a chunked file stream that checksums every
 * byte it reads (validation and `info` scan arrays with it in bounded memory).
 *
 * Place in the data flow: dataset (npy.c, dataset_open.c, info.c, builder.c).
 * Thread-safety: a stream belongs to one thread.
 * Ownership: a stream owns its file and buffer until oc_ds_stream_close.
 */
#ifndef OFFCORE_DATASET_INT_H
#define OFFCORE_DATASET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/dataset.h"
#include "offcore/io.h"

/* The buffer of an npy writer (oc_npy_writer_open; a small array gets less). */
#define OC_NPY_WRITER_BUF ((size_t)4 << 20)
/* Chunk size of streaming reads (a multiple of OC_IO_ALIGN and every dtype size). */
#define OC_DS_CHUNK_BYTES ((size_t)8 << 20)

/* Headers longer than this are rejected as corrupt (numpy itself writes < 4 KiB). */
#define OC_NPY_MAX_HEADER_BYTES ((size_t)1 << 20)

/* Shape the writer was opened with (the builder records split lengths from it). */
unsigned oc_npy_writer_shape(const struct oc_npy_writer *w, uint64_t shape[OC_NPY_MAX_DIMS]);

/*
 * A sequential reader over one file, from offset 0 to its end, in chunks of
 * `cap` bytes (O_DIRECT when the filesystem allows it). Every byte read —
 * header included — is folded into `crc`. Bytes before `data_offset` are
 * checksummed but not returned by oc_ds_stream_next; data chunks start at
 * element boundaries as long as data_offset and cap are multiples of the
 * element size.
 */
struct oc_ds_stream {
    struct oc_file *f;
    const char *path;
    uint8_t *buf;
    size_t cap;
    uint64_t off;         /* file offset of the next read */
    uint64_t size;        /* file size at open */
    uint64_t data_offset; /* first byte returned to the caller */
    uint32_t crc;
    /* element cursor for oc_ds_stream_next_u64 */
    const uint8_t *cur;
    size_t cur_len, cur_pos;
};

int oc_ds_stream_open(struct oc_ds_stream *s, const char *path, uint64_t data_offset, size_t cap,
                      struct oc_err *err);
/* Next chunk of data bytes; *n = 0 at end of file. */
int oc_ds_stream_next(struct oc_ds_stream *s, const uint8_t **p, size_t *n, struct oc_err *err);
/* Next little-endian element of `esize` (4 or 8) bytes, widened to u64; OC_ERR_FORMAT at end. */
int oc_ds_stream_next_elem(struct oc_ds_stream *s, size_t esize, uint64_t *v, struct oc_err *err);
void oc_ds_stream_close(struct oc_ds_stream *s);

/* Reads element i of a little-endian array of esize-byte unsigned integers. */
static inline uint64_t oc_ds_get_uint(const uint8_t *p, size_t esize, size_t i)
{
    if (esize == 8) {
        uint64_t v;
        __builtin_memcpy(&v, p + i * 8, 8);
        return v;
    }
    uint32_t v;
    __builtin_memcpy(&v, p + i * 4, 4);
    return v;
}

/* ---- the topology's content checks (topology_scan.c) ----------------------- */

/*
 * Streams indptr.npy (n_nodes + 1 entries) and checks it starts at 0, never
 * decreases and ends at n_edges; copy (may be NULL) receives the entries;
 * *crc the whole file's CRC-32 (header included) for the caller to compare.
 * OC_ERR_FORMAT names the file and the entry.
 */
int oc_ds_scan_indptr(const char *path, uint64_t n_nodes, uint64_t n_edges, uint64_t *copy,
                      uint32_t *crc, struct oc_err *err);
/*
 * Streams indices.npy (n_edges ids of es bytes) and checks every id is below
 * n_nodes and each node's ids ascend; node ranges from indptr when loaded,
 * else streamed from indptr_path (already checked). copy and crc as above.
 */
int oc_ds_scan_indices(const char *path, const char *indptr_path, const uint64_t *indptr,
                       uint64_t n_nodes, uint64_t n_edges, size_t es, void *copy, uint32_t *crc,
                       struct oc_err *err);

/* ---- the size gate (size_gate.c) ----------------------------------------- */

/* What a dataset about to be written will hold; unknown counts are 0. */
struct oc_ds_size {
    uint64_t n_nodes;
    uint64_t n_edges;  /* stored edges (an upper bound), 0 when not known in advance */
    uint64_t feat_dim; /* 0 = no features */
    enum oc_dtype feat_dtype;
    int labels;
    uint64_t n_split_ids; /* train + val + test */
};

/* Bytes of the dataset's files; *scratch (may be NULL) gets the edge sort's temporary bytes. */
uint64_t oc_ds_size_bytes(const struct oc_ds_size *s, uint64_t *scratch);
/*
 * The gate: OC_ERR_ARG when the format cannot hold s or its bytes exceed
 * max_bytes (0 = no ceiling; max_opt names the option in the message),
 * OC_ERR_NOSPC when they (with the sort's scratch) exceed the free space of
 * out's filesystem. Messages name out and the sizes.
 */
int oc_ds_size_check(const struct oc_ds_size *s, const char *out, uint64_t max_bytes,
                     const char *max_opt, struct oc_err *err);

#endif
