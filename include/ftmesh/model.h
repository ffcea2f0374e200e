/* model: the small ResNet and BERT built from nn layers (the models and
 * their registry live in models/), and one-chip training. Their data is
 * in data.h, the optimizers in optim.h (both included).
 *
 * Contract for data-parallel trainers: every chip owns one ftm_model replica
 * (created with the same config, hence the same initial parameters). A
 * replica shares no mutable state with any other; a dataset is read-only
 * after loading and may be shared by all replicas.
 *
 * Threads: one replica (and one optimizer) is used by one thread at a time,
 * its owner; different replicas and optimizers may be used concurrently from
 * different threads. Loaded datasets, the synthetic generators and the
 * model registry are read-only and safe from any thread.
 *
 * Parameters live in ONE flat float array, gradients in another, with typed
 * pointers carved out of them inside the model; the tensor table names every
 * slice (name, offset, count), so the gradient allreduce is one call on one
 * buffer and callers can name "tensor X, index i".
 *
 * Bitwise reproducibility: examples are processed in micro-batches of
 * consecutive global indices aligned to multiples of `micro`; every float
 * operation of a micro-batch depends only on that micro-batch. Per
 * micro-batch results that must be summed across micro-batches or chips
 * are added exactly in int64 words: parameter gradients in exact mode in
 * fixed point (FTM_FIX_SHIFT), batch-norm statistics and the loss always
 * as binned sums (xsum.h). So the result is the same bits for any split of
 * the batch over chips.
 */
#ifndef FTMESH_MODEL_H
#define FTMESH_MODEL_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/data.h"
#include "ftmesh/nn.h"
#include "ftmesh/optim.h"
#include "ftmesh/xsum.h"

/* Fixed point for exact gradients: q = llrint(g * 2^40). Per micro-batch
 * gradients of (loss/B) are far below 1, so 2^40 gives ~1e-12 resolution
 * and |sum| < 2^23 of headroom; a value beyond 2^22 is FTM_ERANGE, and so
 * is a sum that would overflow int64 (here and in the allreduce).
 * Batch-norm statistics and losses are exact binned sums instead (xsum.h),
 * which keep relative precision at any scale. Gradients stay one word per
 * parameter: a binned sum is FTM_XSUM_WORDS words, 9x the allreduce bytes,
 * and the absolute 2^-40 costs little in practice because batch norm makes
 * gradients grow as activations shrink. Measured (ResNet, exact against
 * float mode, per tensor, conv weights scaled by s): 5e-6 at s = 3e-4,
 * 8e-7 at s = 1e4, 2.6e-3 at s = 1e8, where gradients are ~1e-8 of
 * normal; past that, binned gradients would be the fix. */
#define FTM_FIX_SHIFT 40

/* Model kinds: rows of the registry in models/registry.c, which also holds
 * each model's name, summary and defaults. */
enum { FTM_MODEL_RESNET = 1, FTM_MODEL_BERT = 2 };

/* A registered model (static registry data, valid for the whole program). */
typedef struct ftm_model_info {
    int kind;           /* FTM_MODEL_* */
    const char *name;   /* "resnet", "bert": the command line's --model */
    const char *summary;
} ftm_model_info;

/* The i-th registered model (0, 1, ...), NULL past the last. */
FTM_EXTERN const ftm_model_info *ftm_model_at(int i);
/* The model called `name`, or NULL. */
FTM_EXTERN const ftm_model_info *ftm_model_find(const char *name);
/* The model of a kind, or NULL. */
FTM_EXTERN const ftm_model_info *ftm_model_find_kind(int kind);

/* ---- models ------------------------------------------------------------- */

typedef struct ftm_model ftm_model;

typedef struct ftm_tensor_info {
    const char *name;   /* e.g. "s1.b0.conv1.w", "l0.wqkv" */
    size_t offset;      /* into the flat params / grads arrays */
    size_t count;
    int decay;          /* 1 for weight matrices (weight decay applies) */
} ftm_tensor_info;

typedef struct ftm_model_config {
    int kind;           /* a registered kind: FTM_MODEL_RESNET, FTM_MODEL_BERT */
    int depth;          /* resnet: 8, 14 or 20; bert: encoder layers (2) */
    int heads;          /* bert: 2..4 */
    uint64_t seed;      /* parameters, data, dropout and masking */
    int max_batch;      /* most examples one forward_backward call gets */
    int micro;          /* most examples of one micro-batch (0: max_batch):
                           bert holds the activations of one micro-batch at
                           a time, resnet those of the whole call (its batch
                           norm runs over all of them) */
    const ftm_dataset *data; /* NULL: synthetic data. Borrowed, not copied:
                                the dataset must outlive every replica
                                created from this config (and a trainer's
                                run) and is only read */
    /* sizes (0 = default): resnet width 16 (stages w, 2w, 4w), image 32,
     * classes 10; bert hidden 64, seq 32, vocab 1000, FFN 4*hidden */
    int width, image, classes;
    int hidden, seq, vocab;
    float dropout;      /* bert hidden and attention dropout; <0 = none, 0 = 0.1 */
    float mask_prob;    /* bert masking; 0 = 0.15 */
} ftm_model_config;

/* Fills cfg with the defaults of a model kind from the registry (resnet
 * depth 8, bert 2 layers; 2 heads, seed 1, max_batch 64). An unknown kind
 * gets depth 0, which ftm_model_create rejects. */
FTM_EXTERN void ftm_model_config_default(ftm_model_config *cfg, int kind);
/* The bytes a replica of cfg holds once created (parameters, gradients,
 * activations and scratch for cfg->max_batch examples), counted by
 * creating one; 0 or the codes of ftm_model_create (FTM_ENOMEM where the
 * machine cannot even reserve them). */
FTM_EXTERN int ftm_model_mem_bytes(const ftm_model_config *cfg, size_t *bytes);
/* Creates a replica with parameters initialised from cfg->seed: equal
 * configs give bitwise equal parameters. FTM_EINVAL on a bad config or an
 * unregistered kind. Free it with ftm_model_destroy. */
FTM_EXTERN int ftm_model_create(ftm_model **m, const ftm_model_config *cfg);
FTM_EXTERN void ftm_model_destroy(ftm_model *m);
FTM_EXTERN size_t ftm_model_nparams(const ftm_model *m);
FTM_EXTERN float *ftm_model_params(ftm_model *m);
FTM_EXTERN float *ftm_model_grads(ftm_model *m);
FTM_EXTERN int ftm_model_ntensors(const ftm_model *m);
/* Tensor i (0 <= i < ntensors) or NULL. */
FTM_EXTERN const ftm_tensor_info *ftm_model_tensor(const ftm_model *m, int i);
/* Index of the tensor named `name`, or -1. */
FTM_EXTERN int ftm_model_find_tensor(const ftm_model *m, const char *name);
/* This replica's sgemm counters (calls, flops, seconds, shapes). */
FTM_EXTERN ftm_gemm_stats *ftm_model_gemm_stats(ftm_model *m);

/* Cross-chip sum hook: sums buf (n int64 values) over all chips in place.
 * Every chip calls it the same number of times with the same n, in the same
 * order. NULL = single chip, nothing to do. Returns 0 or FTM_E*. */
typedef int (*ftm_sum_hook)(void *ctx, int64_t *buf, size_t n);

typedef struct ftm_fb_args {
    uint64_t step;       /* keys the data, dropout and masking */
    long first, count;   /* this chip's global example indices */
    long global_batch;   /* B: grads are d(sum loss / B) */
    int micro;           /* micro-batch size (first must be a multiple, and
                            count too unless the range ends the batch) */
    int exact;           /* 0: grads += float; 1: per micro-batch gradients
                            go to grads_i64 in fixed point (FTM_FIX_SHIFT)
                            and the float grads are scratch */
    int64_t *grads_i64;  /* nparams, exact mode only; caller zeroes it */
    ftm_sum_hook hook;   /* batch-norm statistics over chips (resnet): the
                            buffers are FTM_XSUM_WORDS words per sum */
    void *hook_ctx;
    int64_t *loss_x;     /* NULL, or FTM_XSUM_WORDS words: += this call's
                            loss as an exact sum of per-micro-batch losses,
                            which chips add word by word (caller zeroes) */
} ftm_fb_args;

/* Forward + backward of this chip's examples; *loss = sum of their loss/B,
 * summed exactly per micro-batch (the value of the loss_x contribution).
 * The caller zeroes grads (and grads_i64) first. ResNet with a NULL hook
 * needs the whole batch on this chip. count may be 0 (the chip still makes
 * its hook calls). FTM_EINVAL for arguments that do not fit the replica:
 * count above max_batch, unaligned micro-batches, and (bert, which holds
 * one micro-batch) a micro above the config's micro. */
FTM_EXTERN int ftm_model_forward_backward(ftm_model *m, const ftm_fb_args *a,
                               double *loss);
/* Converts fixed-point gradients back: dst[i] = src[i] * 2^-FTM_FIX_SHIFT. */
FTM_EXTERN void ftm_model_fix_to_float(float *dst, const int64_t *src, size_t n);

/* ---- one-chip training -------------------------------------------------- */

/* Called after every step (may be NULL). */
typedef void (*ftm_step_cb)(void *ctx, long step, double loss,
                            double seconds);

/* One step on one chip: zero grads, forward/backward of the whole batch
 * (global indices [0, batch)), one optimizer update. */
FTM_EXTERN int ftm_model_train_step(ftm_model *m, ftm_optim *o, uint64_t step,
                         long batch, int micro, double *loss);
/* steps steps from step 0; losses (may be NULL) receives one value per
 * step. batch <= the model's max_batch. */
FTM_EXTERN int ftm_model_train(ftm_model *m, ftm_optim *o, long steps, long batch,
                    int micro, double *losses, ftm_step_cb cb, void *ctx);

#endif
