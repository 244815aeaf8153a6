/*
 * import.h — importers that turn other dataset layouts into an offcore dataset
 * directory, streaming through bounded memory:
 *   text      — the plain-text layout of shared/datasets (meta.txt, edges.txt,
 *               sparse COO features.txt, labels.txt, index or role-form splits)
 *   ogb       — OGB raw node-property directories (raw/ csv.gz files, split/<name>/)
 *   graphbolt — DGL GraphBolt metadata.yaml directories
 *   npy       — an edge list (text or (2,E)/(E,2) .npy) plus .npy features/labels/splits
 *
 * Place in the data flow: dataset module (import → builder → directory).
 * Thread-safety: one import per call; no shared state.
 * Ownership: options are borrowed.
 */
#ifndef OFFCORE_IMPORT_H
#define OFFCORE_IMPORT_H

#include <stdint.h>

#include "offcore/core.h"
#include "offcore/dataset.h"
#include "offcore/progress.h"

enum oc_import_kind {
    OC_IMPORT_TEXT,
    OC_IMPORT_OGB,
    OC_IMPORT_GRAPHBOLT,
    OC_IMPORT_NPY,
    OC_IMPORT_KIND_COUNT,
};

int oc_import_kind_from_name(const char *name, enum oc_import_kind *kind);
const char *oc_import_kind_name(enum oc_import_kind kind);

struct oc_import_opts {
    int directed;             /* keep edge direction (default: symmetrize) */
    int keep_duplicates;      /* keep multi-edges (default: drop duplicates, as dgl.to_simple) */
    int remove_self_loops;    /* drop self-loops (default: keep one copy, as dgl.to_bidirected) */
    enum oc_dtype feat_dtype; /* F32 (default) or F16 */
    int row_normalize;        /* divide each feature row by its sum (Planetoid preprocessing) */
    int split_index;          /* text: 0 (default) = train/val/test_idx.txt when present, else
                                 role-form file 0; k > 0 = the k-th role-form split file
                                 (natural order: split_2 before split_10) */
    const char *split_name;   /* OGB split folder name (NULL = the only one / first sorted) */
    const char *name;         /* dataset name (NULL = from the source) */
    uint64_t mem_bytes;       /* RAM for sorting/buffering (0 = 256 MiB) */
    int allow_nonfinite;      /* import NaN/Inf feature values (default: refuse them, naming
                                 the file, row and column) */
    uint64_t max_bytes;       /* --max-size: ceiling on the dataset's bytes (0 = none). Sizes
                                 the input cannot vouch for (meta.txt num_features beyond the
                                 columns features.txt uses, a declared node count beyond
                                 every per-node file and edge id) are refused unless set. */
};

void oc_import_opts_default(struct oc_import_opts *o);

/*
 * Imports src into a new dataset directory out (which must not exist). On
 * failure nothing is left at out (the builder's temporary directory is
 * removed). Before anything big is written, declared sizes are checked
 * against the input's own lengths and the output's bytes against o->max_bytes
 * and the free space at out; before the dataset is committed it is checked
 * exactly as oc_dataset_open checks it, so an import never yields a dataset
 * that open refuses. Split ids must be integers without duplicates; feature
 * values must be finite (and fit f16 when converting) unless allow_nonfinite. Edges follow o->directed: by default every input edge u->v also
 * yields v->u (OGB and GraphBolt edges are stored one way; DGL users
 * symmetrize them the same way), duplicates are dropped and self-loops kept.
 */
int oc_import(enum oc_import_kind kind, const char *src, const char *out,
              const struct oc_import_opts *o, struct oc_progress *progress, struct oc_err *err);

int oc_import_text(const char *src, const char *out, const struct oc_import_opts *o,
                   struct oc_progress *progress, struct oc_err *err);
int oc_import_ogb(const char *src, const char *out, const struct oc_import_opts *o,
                  struct oc_progress *progress, struct oc_err *err);
int oc_import_graphbolt(const char *src, const char *out, const struct oc_import_opts *o,
                        struct oc_progress *progress, struct oc_err *err);
int oc_import_npy(const char *src, const char *out, const struct oc_import_opts *o,
                  struct oc_progress *progress, struct oc_err *err);

#endif
