/*
 * dataset.h — the on-disk dataset directory (docs/FORMAT.md): .npy arrays with
 * 4096-byte headers, a JSON manifest with sizes and checksums, validation on
 * open, a builder that writes a new dataset atomically, and an external edge
 * sorter that turns a stream of edges into CSC in bounded memory.
 *
 * Place in the data flow: dataset sits on io and core; import, generate,
 * sample, plan and store use it.
 * Thread-safety: an opened struct oc_dataset is immutable and may be shared;
 * builders and sorters belong to one thread (the sorter may use a pool).
 * Ownership: every object here is freed with its _free; arrays returned by
 * oc_dataset_load_* are oc_alloc'd and owned by the caller.
 */
#ifndef OFFCORE_DATASET_H
#define OFFCORE_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "offcore/core.h"
#include "offcore/progress.h"

#define OC_FORMAT_NAME      "offcore-dataset"
#define OC_FORMAT_VERSION   1 /* a dataset without a feature layout */
#define OC_FORMAT_VERSION_2 2 /* with one: "layout" and feature_rows.npy (docs/FORMAT.md) */
#define OC_NPY_HEADER_BYTES 4096u
/* The largest feat_dim and n_classes a manifest may declare (the model's limit, 2^30). */
#define OC_MANIFEST_MAX_DIM (1u << 30)

enum oc_dtype {
    OC_DTYPE_U8,
    OC_DTYPE_I32,
    OC_DTYPE_U32,
    OC_DTYPE_I64,
    OC_DTYPE_U64,
    OC_DTYPE_F16,
    OC_DTYPE_F32,
    OC_DTYPE_F64,
    OC_DTYPE_COUNT,
};

size_t oc_dtype_size(enum oc_dtype t);
/* indices.npy's dtype for a graph of n_nodes: u32 while every id fits (n_nodes <= 2^32), else
   u64 (docs/FORMAT.md); the edge sorter, the manifest check and the size gate agree on it. */
enum oc_dtype oc_ds_index_dtype_for(uint64_t n_nodes);
/* numpy descr ("<f4") and our short name ("f32"). */
const char *oc_dtype_descr(enum oc_dtype t);
const char *oc_dtype_name(enum oc_dtype t);
int oc_dtype_from_name(const char *name, enum oc_dtype *t);

/* f32 <-> IEEE half, round to nearest even. */
uint16_t oc_f32_to_f16(float f);
float oc_f16_to_f32(uint16_t h);

/* ---- .npy --------------------------------------------------------------- */

#define OC_NPY_MAX_DIMS 4

struct oc_npy_header {
    enum oc_dtype dtype;
    int fortran_order;
    unsigned ndim;
    uint64_t shape[OC_NPY_MAX_DIMS];
    uint64_t data_offset; /* bytes from the start of the file to the data */
    int is_bool;          /* descr "b1" (numpy bool), read as OC_DTYPE_U8 */
};

/*
 * Parses a .npy header from the first `len` bytes of a file (versions 1.0,
 * 2.0, 3.0; any header length). Rejects big-endian and unknown dtypes and
 * malformed dicts with OC_ERR_FORMAT; `what` names the file in messages.
 * fortran_order is reported, not refused: a reader that assumes C order
 * calls oc_npy_require_c_order.
 */
int oc_npy_parse_header(const void *buf, size_t len, const char *what, struct oc_npy_header *h,
                        struct oc_err *err);
/* OC_ERR_FORMAT naming `what` if the array is Fortran-ordered with a layout unlike C order's. */
int oc_npy_require_c_order(const struct oc_npy_header *h, const char *what, struct oc_err *err);
/* Formats a version-1.0 header padded with spaces to exactly OC_NPY_HEADER_BYTES. */
int oc_npy_format_header(enum oc_dtype dtype, unsigned ndim, const uint64_t *shape,
                         uint8_t out[OC_NPY_HEADER_BYTES], struct oc_err *err);
/* Number of elements (product of the shape); OC_ERR_FORMAT on overflow. */
int oc_npy_n_elems(const struct oc_npy_header *h, uint64_t *n, struct oc_err *err);

/* Reads a .npy file's header (any padding) and checks the file holds all its data. */
int oc_npy_read_header(const char *path, struct oc_npy_header *h, struct oc_err *err);

/*
 * A streaming .npy writer: writes the padded header, then data appended in
 * order; close checks that exactly the shape's bytes were written, fsyncs,
 * and returns the file's size and CRC-32 (zlib crc32 of every byte, header
 * included). Appending past the shape is OC_ERR_ARG. _close frees the writer
 * whatever the result; on failure (and on _abort) the partial file is removed.
 */
struct oc_npy_writer;
int oc_npy_writer_open(const char *path, enum oc_dtype dtype, unsigned ndim, const uint64_t *shape,
                       struct oc_npy_writer **out, struct oc_err *err);
int oc_npy_writer_append(struct oc_npy_writer *w, const void *data, size_t bytes,
                         struct oc_err *err);
int oc_npy_writer_close(struct oc_npy_writer *w, uint64_t *file_bytes, uint32_t *crc32,
                        struct oc_err *err);
void oc_npy_writer_abort(struct oc_npy_writer *w);

/*
 * Reads a whole 1-D or 2-D .npy (any supported dtype) converted to `want`
 * (integers widen or narrow with a range check, floats convert). For loading
 * importer inputs; n_rows and n_cols receive the shape (n_cols = 1 for 1-D).
 * Conversions that lose information are OC_ERR_FORMAT naming the index and
 * value: an integer outside `want`'s range, a non-integral or NaN float into
 * an integer type, a finite float that would become infinite. Fortran-order
 * 2-D arrays are rejected. The array (at least 1 byte) is oc_alloc'd.
 */
int oc_npy_load_as(const char *path, enum oc_dtype want, void **data, uint64_t *n_rows,
                   uint64_t *n_cols, struct oc_err *err);

/* ---- manifest ----------------------------------------------------------- */

enum oc_ds_file {
    OC_DS_INDPTR,
    OC_DS_INDICES,
    OC_DS_FEATURES,
    OC_DS_LABELS,
    OC_DS_TRAIN_IDX,
    OC_DS_VAL_IDX,
    OC_DS_TEST_IDX,
    OC_DS_FEATURE_ROWS, /* version 2: the row of features.npy holding each node's features */
    OC_DS_FILE_COUNT,
};

/* "indptr.npy", ... */
const char *oc_ds_file_name(enum oc_ds_file f);

struct oc_ds_file_info {
    int present;
    uint64_t bytes;
    uint32_t crc32;
};

struct oc_manifest {
    int version;
    char name[128];
    uint64_t n_nodes;
    uint64_t n_edges;  /* entries of indices (directed, after symmetrization) */
    uint32_t feat_dim; /* 0 when there are no features */
    uint32_t n_classes;
    enum oc_dtype feat_dtype;
    enum oc_dtype index_dtype; /* U32 or U64 */
    int directed;
    uint64_t n_train, n_val, n_test;
    struct oc_ds_file_info files[OC_DS_FILE_COUNT];
    char provenance[1024]; /* free text: tool, source, options */
    char layout[16];       /* the order features.npy's rows are in ("" = node id order) */
};

/*
 * Parses manifest JSON text (need not be NUL-terminated); `what` names the
 * file in messages. Strict (docs/FORMAT.md): unknown format name/version,
 * missing/unknown/duplicate keys, non-integer or negative counts, counts
 * >= 2^53, a files table inconsistent with the counts are OC_ERR_FORMAT.
 * Numbers must be plain JSON integers ("10000", not "010000", "1e4" or
 * "1.0"); no string may hold a NUL (\u0000) or a raw control character, and
 * the name no control character at all (escaped or not, C0, DEL or C1).
 */
int oc_manifest_parse(const char *text, size_t len, const char *what, struct oc_manifest *m,
                      struct oc_err *err);
/*
 * Serializes to JSON (oc_alloc'd, NUL-terminated). The version written is 2
 * when m->layout names a layout, else 1 (m->version is not read).
 * A name holding a control character is OC_ERR_ARG (the parser would refuse it).
 */
int oc_manifest_format(const struct oc_manifest *m, char **text, struct oc_err *err);
/*
 * The first control character of a dataset name (UTF-8): a C0 byte, DEL, or
 * the lead byte of a C1 character (U+0080..U+009F), or NULL if there is none.
 */
const char *oc_manifest_name_ctl(const char *name);

/* ---- opened dataset ----------------------------------------------------- */

enum oc_ds_open_flags {
    OC_DS_OPEN_DEFAULT = 0,            /* sizes, headers, checksums, indptr, ids: everything */
    OC_DS_OPEN_SKIP_CHECKSUM = 1u,     /* no CRC-32 compared, features not read; content checked */
    OC_DS_OPEN_DEFER_FEATURE_CRC = 2u, /* every check but features.npy's CRC, left to the reader
                                         of the features: oc_dataset_features_crc_* below */
    OC_DS_OPEN_DEFER_TOPOLOGY = 4u,    /* indptr's and indices' content and CRCs checked as
                                         oc_dataset_load_topology reads them (one read) */
};

struct oc_dataset;

/*
 * Opens DIR and validates it, rejecting with OC_ERR_FORMAT and a message
 * naming the file and the problem: missing or truncated files, wrong dtype or
 * shape, size or checksum mismatch, non-monotone indptr, neighbor ids or split
 * ids out of range, labels out of range, an unknown format version.
 */
int oc_dataset_open(const char *dir, unsigned flags, struct oc_dataset **out, struct oc_err *err);
void oc_dataset_free(struct oc_dataset *ds);
/*
 * A dataset of features only over one .npy matrix at path (n x dim, f32 or
 * f16, written like features.npy: a 4096-byte header, nothing after the
 * rows): n_nodes = n, features present, no topology, labels or splits, so a
 * feature store can serve its rows by row number (a part's rows.npy, `offcore
 * partition`, whose CRC its part.json holds and whose reader has checked it:
 * the view compares no CRC). dir names it in messages. OC_ERR_FORMAT naming path for a header, shape or size that does
 * not hold.
 */
int oc_dataset_open_features(const char *dir, const char *path, struct oc_dataset **out,
                             struct oc_err *err);
const struct oc_manifest *oc_dataset_manifest(const struct oc_dataset *ds);
const char *oc_dataset_dir(const struct oc_dataset *ds);
/* Full path of one array file (valid for the dataset's lifetime). */
const char *oc_dataset_path(const struct oc_dataset *ds, enum oc_ds_file f);
/* Byte offset of the array data inside its file (4096 for files we write). */
uint64_t oc_dataset_data_offset(const struct oc_dataset *ds, enum oc_ds_file f);

/*
 * features.npy's checksum when the open deferred it (OC_DS_OPEN_DEFER_FEATURE_CRC)
 * to whoever reads the whole file anyway (the `memory` store's load,
 * diskgnn's first scan), so that a run reads it once, not twice: _begin
 * folds the file's header into c; the reader folds what it reads
 * (oc_crc_follow_feed); _finish reads what the reader did not (all of it
 * from the first part the reader skipped; *read_bytes says how much, may be
 * NULL) through buf (cap bytes aligned to OC_IO_ALIGN, or NULL: 8 MiB of its
 * own) and compares with the manifest: OC_ERR_FORMAT naming the file on a
 * mismatch. Nothing trained from the features may be kept before _finish
 * returned OC_OK.
 */
struct oc_crc_follow; /* offcore/io.h */
int oc_dataset_features_crc_deferred(const struct oc_dataset *ds);
int oc_dataset_features_crc_begin(const struct oc_dataset *ds, struct oc_crc_follow *c,
                                  struct oc_err *err);
int oc_dataset_features_crc_finish(const struct oc_dataset *ds, struct oc_crc_follow *c,
                                   uint8_t *buf, size_t cap, uint64_t *read_bytes,
                                   struct oc_err *err);

/*
 * Whole-array loaders (oc_alloc'd, owned by the caller). Absent labels are
 * OC_ERR_NOTFOUND. indices are loaded as `want` = the manifest's index_dtype,
 * or U64 to widen them.
 */
int oc_dataset_load_indptr(const struct oc_dataset *ds, uint64_t **indptr, struct oc_err *err);
int oc_dataset_load_indices(const struct oc_dataset *ds, enum oc_dtype want, void **indices,
                            struct oc_err *err);
/*
 * indptr (u64) and indices (the manifest's index_dtype) together. When the
 * open deferred their checks (OC_DS_OPEN_DEFER_TOPOLOGY), they are checked as
 * they are read, with the open's messages and CRCs: the files are read once.
 * Nothing is returned unless both pass.
 */
int oc_dataset_load_topology(const struct oc_dataset *ds, uint64_t **indptr, void **indices,
                             struct oc_err *err);
int oc_dataset_load_labels(const struct oc_dataset *ds, int32_t **labels, struct oc_err *err);
int oc_dataset_load_split(const struct oc_dataset *ds, enum oc_ds_file which, uint64_t **ids,
                          uint64_t *n, struct oc_err *err);
/*
 * The feature layout's map (node v's features are row rows[v] of
 * features.npy) as u32 (`want`, n_nodes <= 2^32) or u64, checked again as it
 * is loaded: every row < n_nodes and none given twice (a file changed since
 * open is OC_ERR_FORMAT naming it). OC_ERR_NOTFOUND when the dataset has no
 * layout. `what` names the consumer charged for the array.
 */
int oc_dataset_load_feature_rows(const struct oc_dataset *ds, enum oc_dtype want, void **rows,
                                 const char *what, struct oc_err *err);

/*
 * Writes a new dataset `out` (which must not exist; atomically, as the
 * builder does) equal to ds but for its features.npy, whose rows are in the
 * layout row_of (node v's features at row row_of[v], a permutation of
 * 0 .. n_nodes-1), recorded in feature_rows.npy with the name `layout`
 * (version 2, docs/FORMAT.md). Topology, labels and splits are copied
 * unchanged. mem_bytes bounds the band of output rows filled per sequential
 * scan of the source (at least 1 MiB). progress (may be NULL) counts rows.
 */
int oc_dataset_relayout(const struct oc_dataset *ds, const uint64_t *row_of, const char *layout,
                        const char *out, uint64_t mem_bytes, struct oc_progress *progress,
                        struct oc_err *err);
/* Bytes oc_dataset_relayout of ds holds besides its band: the map to output rows, its reads'
   buffer, a writer's buffer and the builder's own (a caller sizing the band subtracts them). */
uint64_t oc_dataset_relayout_fixed_bytes(const struct oc_dataset *ds);

/*
 * Summary for `offcore info`, computed by streaming indptr, indices and labels.
 * Degrees are in-degrees (indptr differences). Over the degrees sorted
 * ascending d[0..N-1]: deg_median = d[(N-1)/2] (lower median), deg_p99 =
 * d[ceil(0.99 N) - 1] (nearest rank); deg_mean = n_edges / n_nodes. A node is
 * isolated when it has neither in- nor out-edges. bytes_* are array file
 * sizes (topology = indptr + indices). All zero for an empty graph.
 */
struct oc_ds_info {
    uint64_t n_nodes, n_edges;
    uint64_t deg_min, deg_max, deg_median, deg_p99;
    double deg_mean;
    uint64_t n_isolated, n_self_loops;
    uint64_t bytes_total, bytes_features, bytes_topology;
    uint64_t n_unlabeled;
    /*
     * Class balance. Dense (class_id NULL): class_count[k] for every k <
     * n_classes. Sparse (more than OC_DS_INFO_DENSE_CLASSES classes, so that
     * nothing is sized by a declared count): only the n_class_count non-empty
     * classes, class_id[i] (ascending) with class_count[i] nodes. oc_alloc'd.
     */
    uint64_t *class_count;
    uint32_t *class_id;
    uint32_t n_class_count;
    uint32_t n_classes;
};
#define OC_DS_INFO_DENSE_CLASSES (1u << 16)
int oc_dataset_info(const struct oc_dataset *ds, struct oc_ds_info *info, struct oc_err *err);
void oc_ds_info_deinit(struct oc_ds_info *info);

/* ---- builder: writes a new dataset directory atomically ----------------- */

/*
 * Everything is written into "<out>.tmp-<pid>/" and renamed to <out> by
 * oc_ds_builder_commit after the manifest (written last) is fsynced. On any
 * failure or oc_ds_builder_free without commit the temporary directory is
 * removed, so no half-written dataset is ever found at <out>. <out> must not
 * exist (OC_ERR_EXISTS).
 */
struct oc_ds_builder;

int oc_ds_builder_new(const char *out_dir, struct oc_ds_builder **out, struct oc_err *err);
void oc_ds_builder_free(struct oc_ds_builder *b);
/* Temporary directory (for scratch files such as sort runs). */
const char *oc_ds_builder_tmp_dir(const struct oc_ds_builder *b);
/* The manifest being built; fill name, counts, dtypes, directed, provenance. */
struct oc_manifest *oc_ds_builder_manifest(struct oc_ds_builder *b);
/* Opens a writer for one array (shape in elements); finished with _end_array. */
int oc_ds_builder_begin_array(struct oc_ds_builder *b, enum oc_ds_file f, enum oc_dtype dtype,
                              unsigned ndim, const uint64_t *shape, struct oc_npy_writer **w,
                              struct oc_err *err);
int oc_ds_builder_end_array(struct oc_ds_builder *b, enum oc_ds_file f, struct oc_npy_writer *w,
                            struct oc_err *err);
/* Convenience: a whole 1-D array from memory. */
int oc_ds_builder_write_array(struct oc_ds_builder *b, enum oc_ds_file f, enum oc_dtype dtype,
                              uint64_t n, const void *data, struct oc_err *err);
/* Writes the manifest, fsyncs, renames into place. The builder must still be freed. */
int oc_ds_builder_commit(struct oc_ds_builder *b, struct oc_err *err);
/*
 * As oc_ds_builder_commit, but the temporary directory is first opened with
 * oc_dataset_open (OC_DS_OPEN_SKIP_CHECKSUM: every check but the CRCs just
 * computed) and the dataset is committed only if open accepts it: what a
 * producer commits this way, open never refuses. Importers commit with it.
 */
int oc_ds_builder_commit_checked(struct oc_ds_builder *b, struct oc_err *err);

/* ---- external edge sorter: edges -> CSC (indptr + indices) -------------- */

struct oc_edge_sort_opts {
    uint64_t n_nodes;
    int symmetrize;      /* add (v,u) for every (u,v) */
    int keep_duplicates; /* keep multi-edges (default: one copy of each (src,dst)) */
    int remove_self_loops;
    uint64_t mem_bytes; /* RAM the sorter may hold (0 = 256 MiB) */
};

struct oc_edge_sorter;

/* Scratch runs go into tmp_dir (removed by _free). */
int oc_edge_sorter_new(const struct oc_edge_sort_opts *o, const char *tmp_dir,
                       struct oc_edge_sorter **out, struct oc_err *err);
void oc_edge_sorter_free(struct oc_edge_sorter *s);
/* Adds edges src[i] -> dst[i]; ids ≥ n_nodes are OC_ERR_ARG naming the edge. */
int oc_edge_sorter_add(struct oc_edge_sorter *s, const uint64_t *src, const uint64_t *dst, size_t n,
                       struct oc_err *err);
/*
 * Sorts by (dst, src) and writes indptr.npy and indices.npy (CSC: in-neighbors
 * of each node, ascending) into the builder; sets n_edges and index_dtype in
 * its manifest.
 */
int oc_edge_sorter_finish(struct oc_edge_sorter *s, struct oc_ds_builder *b,
                          struct oc_progress *progress, struct oc_err *err);

#endif
