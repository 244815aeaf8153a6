/*
 * api_int.h — private pieces of the versioned C API (offcore.h): the error
 * hand-over, the struct_size check and the dataset handle the loader reads.
 *
 * Place in the data flow: api (top, beside cli: wraps dataset, store and the
 * train module's loader for liboffcore.so).
 * Thread-safety: stateless helpers.
 * Ownership: a struct offcore_dataset owns its oc_dataset.
 */
#ifndef OFFCORE_API_INT_H
#define OFFCORE_API_INT_H

#include <stddef.h>

#include "offcore.h"
#include "offcore/dataset.h"

struct offcore_dataset {
    struct oc_dataset *ds;
};

/* Copies e (status rc) into out (may be NULL); returns rc. */
int api_err(struct offcore_error *out, const struct oc_err *e, int rc);
/* OC_OK, or OC_ERR_ARG naming `what` when size is not the struct's size. */
int api_check_size(uint32_t size, size_t want, const char *what, struct oc_err *e);
/* A NULL pointer argument: OC_ERR_ARG naming it. */
int api_null(const char *fn, const char *arg, struct oc_err *e);

#endif
