/*
 * part_set_int.h — names shared by the writer (part_set.c) and the reader
 * (part_open.c) of a partitioned dataset (docs/FORMAT.md section 10).
 *
 * Place in the data flow: plan; `offcore partition` writes, training opens.
 * Thread-safety: constants only.
 * Ownership: none.
 */
#ifndef OFFCORE_PLAN_PART_SET_INT_H
#define OFFCORE_PLAN_PART_SET_INT_H

#define PART_SET_JSON    "partition.json"
#define PART_SET_FORMAT  "offcore-partition"
#define PART_JSON        "part.json"
#define PART_FORMAT      "offcore-part"
#define PART_SET_VERSION 1
#define PART_ROWS        "rows.npy"
#define PART_OWNER       "owner.npy"
#define PART_MANIFEST    "manifest.json"
#define PART_JSON_MAX    ((size_t)1 << 20)   /* bytes of a partition.json or part.json at most */
#define PART_IO_BYTES    ((uint64_t)1 << 20) /* bytes per read or write (small: under a budget) */
#define PART_N_FILES     3 /* part.json's files: manifest.json, rows.npy, owner.npy */

static const char *const part_file_names[PART_N_FILES] = {PART_MANIFEST, PART_ROWS, PART_OWNER};

#endif
