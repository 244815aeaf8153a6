/*
 * import_int.h — private pieces shared by the importers (import_*.c): option
 * checks and manifest setup, strict number scanning for text inputs, sinks
 * that stream edges into the external sorter and features / 1-D arrays into
 * the dataset builder a block at a time, a streaming .npy reader with dtype
 * conversion, and label / split writers for text and .npy sources.
 *
 * Place in the data flow: dataset module, between the source files of an
 * import and oc_ds_builder / oc_edge_sorter. Nothing outside src/dataset
 * (and tests) includes it.
 *
 * Memory: every sink holds a bounded block (edges: 64 Ki pairs; features:
 * a block of rows sized from opts.mem_bytes, at least one row; arrays: 64 Ki
 * elements); nothing holds a whole N x F matrix or the whole edge list.
 *
 * Errors: every helper takes a non-NULL err (the public entry points
 * substitute a local record when the caller passed NULL).
 * Thread-safety: none of these objects is shared; one import per thread.
 * Ownership: sinks and readers live in caller storage (_begin/_open fill
 * them, _end/_finish/_close release them; _abort releases on error paths and
 * is a no-op on a zeroed or released struct). Paths are borrowed.
 */
#ifndef OFFCORE_IMPORT_INT_H
#define OFFCORE_IMPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dataset/dataset_int.h"
#include "offcore/dataset.h"
#include "offcore/import.h"
#include "offcore/io.h"

#define OC_IMP_PATH_MAX 4096

/* dtype of train_idx/val_idx/test_idx (node ids, as oc_dataset_load_split returns them). */
#define OC_IMP_SPLIT_DTYPE OC_DTYPE_U64

/* "<path>:<line>: ..." for the current line of a line reader (OC_ERR_FORMAT). */
#define OC_IMP_ERR_AT(err, r, fmt, ...)                                   \
    OC_ERR((err), OC_ERR_FORMAT, "%s:%llu: " fmt, oc_line_reader_path(r), \
           (unsigned long long)oc_line_reader_lineno(r), ##__VA_ARGS__)

/* ---- options, names, manifest ---------------------------------------------- */

/* Rejects option values the importers cannot honour (OC_ERR_ARG). */
int oc_imp_check_opts(const struct oc_import_opts *o, struct oc_err *err);

/* Last component of a path, ignoring trailing slashes ("dataset" if none). */
void oc_imp_basename(const char *path, char *buf, size_t n);

/*
 * Fills the builder's manifest: name (o->name, else fallback), feat_dtype,
 * directed, provenance "offcore import <kind> <src> [options]".
 */
void oc_imp_manifest_init(struct oc_manifest *m, enum oc_import_kind kind, const char *src,
                          const struct oc_import_opts *o, const char *fallback_name);

/* ---- the size gate --------------------------------------------------------- */

/*
 * Every importer, once it knows what the dataset will hold and before
 * oc_ds_builder_new: oc_ds_size_check with the ceiling o->max_bytes
 * ("--max-size") and the free space at out.
 */
int oc_imp_gate(const struct oc_ds_size *s, const char *out, const struct oc_import_opts *o,
                struct oc_err *err);
/*
 * A declared size the input cannot vouch for (no file holds that many
 * entries): OC_ERR_FORMAT with the printf message plus a hint, unless the user
 * gave a ceiling (o->max_bytes), which oc_imp_gate then enforces.
 */
__attribute__((format(printf, 3, 4))) int
oc_imp_unvouched(const struct oc_import_opts *o, struct oc_err *err, const char *fmt, ...);
/* Lines of a text/gzip file (skip_blank: data lines only, as oc_imp_next_data_line). */
int oc_imp_count_lines(const char *path, int skip_blank, uint64_t *n, struct oc_err *err);

/* Joins dir and rel into buf (OC_ERR_ARG when too long). */
int oc_imp_path(char *buf, const char *dir, const char *rel, struct oc_err *err);

/* Whether path names a regular file / a directory. */
int oc_imp_is_file(const char *path);
int oc_imp_is_dir(const char *path);

/*
 * The names of the entries of dir that start with prefix and end with suffix
 * (either may be "" ) and are regular files (want_dirs = 0) or directories
 * (want_dirs = 1), in natural order ("split_2" < "split_10"). A missing dir is
 * an empty list. Free with oc_imp_names_free.
 */
int oc_imp_list_dir(const char *dir, const char *prefix, const char *suffix, int want_dirs,
                    char ***names, size_t *n, struct oc_err *err);
void oc_imp_names_free(char **names, size_t n);

/* ---- scanning text fields ------------------------------------------------ */

/*
 * Each scanner skips blanks (space, tab), reads one field and then either the
 * separator `sep` (',' for csv; ' ' means blanks separate) or the end of the
 * line. Returns 1 with a value, 0 at the end of the line (no field), -1 for a
 * malformed field. Integers are decimal with an optional sign (i64) / none
 * (u64) and must fit; floats follow strtof ("nan", "inf", exponents).
 */
int oc_imp_scan_u64(const char **p, char sep, uint64_t *v);
int oc_imp_scan_i64(const char **p, char sep, int64_t *v);
int oc_imp_scan_f32(const char **p, char sep, float *v);
/* Whether a line carries no data: empty, blanks only, or (allow_comment) '#'. */
int oc_imp_line_is_blank(const char *line, int allow_comment);
/*
 * The next line of r that carries data (blank lines, and with allow_comment
 * '#' lines, skipped); OC_OK with *line = NULL at end of file.
 */
int oc_imp_next_data_line(struct oc_line_reader *r, int allow_comment, char **line,
                          struct oc_err *err);

/* Number of fields of a line separated by sep (',' or ' '). */
size_t oc_imp_count_fields(const char *line, char sep);

/* ---- edges: buffered into the external sorter ------------------------------ */

struct oc_imp_edges {
    struct oc_edge_sorter *sorter;
    uint64_t *src, *dst;
    size_t n_buf, cap;
    uint64_t n_nodes;
};

/* A sorter for n_nodes with the options' symmetrize/duplicate/self-loop policy. */
int oc_imp_edges_begin(struct oc_imp_edges *e, struct oc_ds_builder *b,
                       const struct oc_import_opts *o, uint64_t n_nodes, struct oc_err *err);
/* Adds src -> dst (ids already checked < n_nodes by the caller). */
int oc_imp_edges_add(struct oc_imp_edges *e, uint64_t src, uint64_t dst, struct oc_err *err);
/* Sorts, writes indptr/indices into the builder and releases everything. */
int oc_imp_edges_finish(struct oc_imp_edges *e, struct oc_ds_builder *b,
                        struct oc_progress *progress, struct oc_err *err);
void oc_imp_edges_abort(struct oc_imp_edges *e);

/*
 * Reads "u<sep>v" lines of a text or gzip file. With e != NULL every edge is
 * range-checked against e->n_nodes (errors name path:line) and added; with
 * e == NULL the file is only scanned. *max_id_plus1 (may be NULL) gets one
 * more than the largest id seen, *n_edges (may be NULL) the number of edges.
 * allow_comment: lines starting with '#' are skipped; blank lines always are.
 */
int oc_imp_text_edges(const char *path, char sep, int allow_comment, struct oc_imp_edges *e,
                      uint64_t *max_id_plus1, uint64_t *n_edges, struct oc_progress *progress,
                      struct oc_err *err);

/* ---- streaming .npy input ------------------------------------------------- */

struct oc_imp_npy {
    struct oc_file *f;
    struct oc_npy_header h;
    uint64_t n_rows, n_cols; /* 1-D: n_cols = 1 */
    uint8_t *scratch;
    size_t scratch_bytes;
};

/* Opens a .npy input (1-D or 2-D), checks the file holds all its data. */
int oc_imp_npy_open(struct oc_imp_npy *r, const char *path, struct oc_err *err);
/* Opens a vector: 1-D, or 2-D with one column; `what` names it in errors. */
int oc_imp_npy_open_vector(struct oc_imp_npy *r, const char *path, const char *what,
                           struct oc_err *err);
void oc_imp_npy_close(struct oc_imp_npy *r);
const char *oc_imp_npy_path(const struct oc_imp_npy *r);
/*
 * Reads n elements starting at flat element index first (file order)
 * converted to want: OC_DTYPE_I64 (integer inputs only; u64 above INT64_MAX
 * is OC_ERR_FORMAT) or OC_DTYPE_F32 (any input).
 */
int oc_imp_npy_read(struct oc_imp_npy *r, uint64_t first, size_t n, enum oc_dtype want, void *out,
                    struct oc_err *err);

/*
 * Streams an edge array from .npy: shape (2, E) (src row, dst row) or, when
 * allow_e2 is set, (E, 2) pairs (a (2, 2) array is read as (2, E)); Fortran
 * order is understood. e / max_id_plus1 / n_edges as for oc_imp_text_edges.
 */
int oc_imp_npy_edges(const char *path, int allow_e2, struct oc_imp_edges *e, uint64_t *max_id_plus1,
                     uint64_t *n_edges, struct oc_progress *progress, struct oc_err *err);

/* Rows (shape[0]) and columns (the product of the other dims, 1 for 1-D) from a .npy header. */
int oc_imp_npy_dims(const char *path, uint64_t *n_rows, uint64_t *n_cols, struct oc_err *err);
/* Edges of a (2, E) or (E, 2) edge array, from its header. */
int oc_imp_npy_edge_count(const char *path, uint64_t *n_edges, struct oc_err *err);

/* ---- features: rows streamed into features.npy ----------------------------- */

struct oc_imp_feat {
    struct oc_ds_builder *b;
    const char *path;    /* the source file, named in errors */
    int allow_nonfinite; /* o->allow_nonfinite */
    struct oc_npy_writer *w;
    enum oc_dtype dtype; /* F32 or F16 on disk */
    int row_normalize;
    uint32_t dim;
    uint64_t n_rows, rows_done;
    float *block; /* rows_cap rows of dim floats */
    size_t rows_cap, rows_in_block;
};

/*
 * Opens features.npy (n_rows x dim, o->feat_dtype) in the builder; path (the
 * source file, borrowed) is named when a committed value is not finite.
 */
int oc_imp_feat_begin(struct oc_imp_feat *f, struct oc_ds_builder *b,
                      const struct oc_import_opts *o, const char *path, uint64_t n_rows,
                      uint32_t dim, struct oc_err *err);
/*
 * Room for the next rows: the first free row and *n_free (>= 1 while rows are
 * left) rows. They are zero as long as every row written is committed (the
 * block is cleared after each flush).
 */
float *oc_imp_feat_rows(struct oc_imp_feat *f, size_t *n_free);
/*
 * Commits n rows written at oc_imp_feat_rows (normalizes, converts, flushes
 * when full). Unless allow_nonfinite: a NaN/Inf value (the input's, or one
 * made by row normalization or by f16 conversion overflowing) is
 * OC_ERR_FORMAT naming the path, row and column.
 */
int oc_imp_feat_commit(struct oc_imp_feat *f, size_t n, struct oc_err *err);
/* Flushes and closes; every row must have been committed. */
int oc_imp_feat_end(struct oc_imp_feat *f, struct oc_err *err);
void oc_imp_feat_abort(struct oc_imp_feat *f);

/* Streams an N x F (or N) .npy of any numeric dtype into the features (n_rows checked). */
int oc_imp_feat_from_npy(struct oc_ds_builder *b, const struct oc_import_opts *o, const char *path,
                         uint64_t n_nodes, uint32_t *feat_dim, struct oc_progress *progress,
                         struct oc_err *err);

/* ---- 1-D arrays (labels, splits) written a block at a time ----------------- */

struct oc_imp_array {
    struct oc_ds_builder *b;
    enum oc_ds_file which;
    enum oc_dtype dtype;
    struct oc_npy_writer *w;
    uint8_t *buf;
    size_t cap, n_buf;
    uint64_t n_total, n_done;
};

int oc_imp_array_begin(struct oc_imp_array *a, struct oc_ds_builder *b, enum oc_ds_file which,
                       enum oc_dtype dtype, uint64_t n, struct oc_err *err);
/* Appends one value converted to the array's dtype (I32 or U32/U64 here). */
int oc_imp_array_push(struct oc_imp_array *a, int64_t v, struct oc_err *err);
int oc_imp_array_end(struct oc_imp_array *a, struct oc_err *err);
void oc_imp_array_abort(struct oc_imp_array *a);

/* ---- labels -------------------------------------------------------------- */

/*
 * labels.npy from a text/gzip file with one integer per line (line i = node
 * i; -1 = unlabeled; "nan" = -1 when allow_nan). Exactly n_nodes lines.
 * n_classes_hint > 0 bounds the labels; *n_classes = hint, else max + 1.
 * A source without labels writes no labels.npy (n_classes 0).
 */
int oc_imp_labels_text(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                       uint32_t n_classes_hint, int allow_nan, uint32_t *n_classes,
                       struct oc_err *err);
/* labels.npy from a 1-D (or N x 1) integer .npy of n_nodes entries. */
int oc_imp_labels_npy(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                      uint32_t n_classes_hint, uint32_t *n_classes, struct oc_err *err);
/*
 * Called after labels.npy was written: when *n_classes came out 0 (every
 * node unlabeled) the file is removed again, since a dataset lists labels
 * exactly when n_classes > 0.
 */
int oc_imp_labels_settle(struct oc_ds_builder *b, uint32_t n_classes, struct oc_err *err);

/* ---- splits -------------------------------------------------------------- */

/*
 * One split from a text/gzip file of one node id per line. *n gets its size.
 * Ids must be in range and appear once (errors name path:line and the id).
 */
int oc_imp_split_ids_text(struct oc_ds_builder *b, enum oc_ds_file which, const char *path,
                          uint64_t n_nodes, uint64_t *n, struct oc_err *err);
/*
 * One split from a 1-D integer .npy of node ids, each once. A boolean array
 * (a mask) or a float array is refused: its values are not node ids.
 */
int oc_imp_split_ids_npy(struct oc_ds_builder *b, enum oc_ds_file which, const char *path,
                         uint64_t n_nodes, uint64_t *n, struct oc_err *err);
/* Three splits from a role-form file: n_nodes lines of 0 train / 1 val / 2 test / -1. */
int oc_imp_split_roles_text(struct oc_ds_builder *b, const char *path, uint64_t n_nodes,
                            uint64_t n[3], struct oc_err *err);
/* Empty train/val/test arrays: all three, or the one `which`. */
int oc_imp_split_empty(struct oc_ds_builder *b, struct oc_err *err);
int oc_imp_split_empty_one(struct oc_ds_builder *b, enum oc_ds_file which, struct oc_err *err);

#endif
