/*
 * fuzz_fixtures.h — what the checkpoint, ginex superbatch and diskgnn chunk
 * fuzz targets expect of their inputs, shared with gen_corpus.c, which
 * writes their seed corpora: the checkpoint's model and fingerprint, the
 * superbatch's plan, the chunk's batch and tier sizes.
 *
 * Place in the data flow: tests (fuzz harness).
 * Thread-safety: single-threaded. Ownership: the model is the caller's.
 */
#ifndef OFFCORE_FUZZ_FIXTURES_H
#define OFFCORE_FUZZ_FIXTURES_H

#include "offcore/nn.h"
#include "plan/superbatch.h"
#include "store/diskgnn/diskgnn_int.h"

#define FUZZ_N_NODES       1000000u
#define FUZZ_CKPT_PATH     "fuzz/checkpoint.bin"
#define FUZZ_CKPT_FP       "model=sage layers=2 fuzz"
#define FUZZ_CHUNK_PATH    "fuzz/w0.bin"
#define FUZZ_CHUNK_BATCH   1u
#define FUZZ_CHUNK_ROW     16u
#define FUZZ_CHUNK_CPU     8u
#define FUZZ_CHUNK_SEGROWS 8u

/* A 2-layer SAGE model, 4 -> 4 -> 3, on the CPU backend (NULL on failure). */
static inline struct oc_nn_model *fuzz_ckpt_model(struct oc_nn_backend **be)
{
    struct oc_err err;
    struct oc_nn_model *m = NULL;
    struct oc_nn_model_config cfg;
    *be = NULL;
    if (oc_nn_backend_new(OC_NN_BACKEND_CPU, NULL, be, &err) != OC_OK)
        return NULL;
    oc_nn_model_config_default(OC_NN_MODEL_SAGE, &cfg);
    cfg.n_layers = 2;
    cfg.in_dim = 4;
    cfg.hidden = 4;
    cfg.n_classes = 3;
    cfg.seed = 1;
    if (oc_nn_model_new(*be, &cfg, &m, &err) != OC_OK) {
        oc_nn_backend_free(*be);
        *be = NULL;
        return NULL;
    }
    return m;
}

/* The plan a superbatch seed is written for: batches 4..6 of 4 per epoch, 2 layers. */
static inline struct pl_sb_expect fuzz_sb_expect(void)
{
    return (struct pl_sb_expect){.key = 0x0ffc0de5eedull,
                                 .first = 4,
                                 .most = 3,
                                 .nb = 4,
                                 .n_nodes = FUZZ_N_NODES,
                                 .max_acc = 1u << 20,
                                 .n_layers = 2};
}

/* The chunk a diskgnn seed is: epoch 0, batch 1, 16-byte rows, 8 CPU and 8 disk-cache rows. */
static inline struct dg_chunk_expect fuzz_chunk_expect(void)
{
    return (struct dg_chunk_expect){.epoch = 0,
                                    .index = FUZZ_CHUNK_BATCH,
                                    .row_bytes = FUZZ_CHUNK_ROW,
                                    .n_cpu_rows = FUZZ_CHUNK_CPU,
                                    .seg_rows = FUZZ_CHUNK_SEGROWS};
}

#endif
