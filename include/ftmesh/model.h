/* model: the small ResNet and BERT built from nn layers, their optimizers,
 * their data, and one-chip training.
 *
 * Contract for data-parallel trainers: every chip owns one ftm_model replica
 * (created with the same config, hence the same initial parameters). A
 * replica shares no mutable state with any other; a dataset is read-only
 * after loading and may be shared by all replicas.
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
 * (parameter gradients in exact mode, batch-norm statistics always) are
 * converted to int64 fixed point and added exactly, so the result is the
 * same bits for any split of the batch over chips.
 */
#ifndef FTMESH_MODEL_H
#define FTMESH_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/nn.h"

/* Fixed point for exact gradients: q = llrint(g * 2^40). Per micro-batch
 * gradients of (loss/B) are far below 1, so 2^40 gives ~1e-12 resolution
 * and |sum| < 2^23 of headroom; a value beyond 2^22 is FTM_ERANGE, and so
 * is a sum that would overflow int64 (here and in the allreduce). */
#define FTM_FIX_SHIFT 40
/* Batch-norm forward statistics (sum x, sum x^2 of activations of order 1
 * over up to ~1e8 elements): 2^24, resolution 6e-8, sums up to 2^39. The
 * backward sums (sum dy, sum dy*xhat) are gradient-sized and use
 * FTM_FIX_SHIFT. Overflowing values give FTM_ERANGE. */
#define FTM_FIX_SHIFT_STATS 24

enum { FTM_MODEL_RESNET = 1, FTM_MODEL_BERT = 2 };

/* Special tokens of the BERT vocabulary (real words start at FTM_TOK_FIRST). */
enum { FTM_TOK_PAD = 0, FTM_TOK_MASK = 1, FTM_TOK_CLS = 2, FTM_TOK_SEP = 3,
       FTM_TOK_UNK = 4, FTM_TOK_FIRST = 5 };

/* ---- data --------------------------------------------------------------- */

typedef struct ftm_dataset ftm_dataset;

/* The loaders print nothing: on an error they return the code and, when
 * why is not NULL, write a one-line reason naming the file into why[0..len)
 * ("no data_batch_1.bin in it", "CIFAR batch F: record 3 is 3066 bytes,
 * want 3073", "empty", ...). On an error *d is NULL. */

/* CIFAR-10 has 10 classes: a label byte outside 0..9 is FTM_EFORMAT. */
#define FTM_DATA_CIFAR_CLASSES 10
/* Loads DIR/data_batch_1.bin (required) and data_batch_2..5.bin (those
 * present), CIFAR-10 binary: 1 label byte + 3072 pixel bytes, R, G, B
 * planes of 32x32. FTM_EIO when DIR or a batch cannot be read (or batch 1
 * is missing), FTM_EFORMAT on an empty batch, a short record or a label
 * outside 0..FTM_DATA_CIFAR_CLASSES-1, FTM_ENOMEM. */
int ftm_data_load_cifar(ftm_dataset **d, const char *dir, char *why, size_t len);
/* Largest corpus read, in MiB: an endless input (/dev/zero) is refused
 * with FTM_ERANGE once it passes this size. */
#define FTM_DATA_CORPUS_MAX_MIB 64
/* Loads a plain-text corpus from file ("-" = standard input; pipes work:
 * the input is read once): words are maximal runs of letters/digits,
 * lower-cased; the vocab is the most frequent (vocab - FTM_TOK_FIRST) words
 * (ties alphabetical), other words map to FTM_TOK_UNK; vocab 0 keeps every
 * word, ids by rank (a model maps ids beyond its vocab to FTM_TOK_UNK, so
 * the result is the same). FTM_EIO (cannot open or read), FTM_EFORMAT
 * (empty, or no word in it), FTM_ERANGE (too large), FTM_EINVAL (vocab 1..
 * FTM_TOK_FIRST), FTM_ENOMEM. */
int ftm_data_load_corpus(ftm_dataset **d, const char *file, int vocab, char *why, size_t len);
void ftm_data_free(ftm_dataset *d);
/* Examples held (images, or corpus tokens). */
long ftm_data_size(const ftm_dataset *d);
/* Token id of a word in a corpus dataset (FTM_TOK_UNK if not in vocab). */
int ftm_data_word_id(const ftm_dataset *d, const char *word);
/* Image example `id` (3,S,S, normalised) and its label; d NULL = synthetic
 * (class = pattern orientation and colour), a pure function of (seed, id).
 * CIFAR needs S == 32 and uses id mod size, with a random horizontal flip
 * keyed by (seed, id). */
int ftm_data_image(const ftm_dataset *d, uint64_t seed, uint64_t id, int S,
                   float *img, int *label);
/* Token sequence `id` (T tokens, FTM_TOK_CLS first, FTM_TOK_PAD after the
 * end, valid[t] = 1 for real tokens); d NULL = synthetic topic sequences
 * (each sequence draws from one topic's words in a strided order). */
int ftm_data_tokens(const ftm_dataset *d, uint64_t seed, uint64_t id, int T,
                    int V, int *tok, unsigned char *valid);

/* ---- models ------------------------------------------------------------- */

typedef struct ftm_model ftm_model;

typedef struct ftm_tensor_info {
    const char *name;   /* e.g. "s1.b0.conv1.w", "l0.wqkv" */
    size_t offset;      /* into the flat params / grads arrays */
    size_t count;
    int decay;          /* 1 for weight matrices (weight decay applies) */
} ftm_tensor_info;

typedef struct ftm_model_config {
    int kind;           /* FTM_MODEL_RESNET or FTM_MODEL_BERT */
    int depth;          /* resnet: 8, 14 or 20; bert: encoder layers (2) */
    int heads;          /* bert: 2..4 */
    uint64_t seed;      /* parameters, data, dropout and masking */
    int max_batch;      /* most examples one forward_backward call gets */
    const ftm_dataset *data; /* NULL: synthetic data */
    /* sizes (0 = default): resnet width 16 (stages w, 2w, 4w), image 32,
     * classes 10; bert hidden 64, seq 32, vocab 1000, FFN 4*hidden */
    int width, image, classes;
    int hidden, seq, vocab;
    float dropout;      /* bert hidden and attention dropout; <0 = none, 0 = 0.1 */
    float mask_prob;    /* bert masking; 0 = 0.15 */
} ftm_model_config;

/* Fills cfg with the defaults of a model kind (depth 8 / 2 layers, 2 heads,
 * seed 1, max_batch 64). */
void ftm_model_config_default(ftm_model_config *cfg, int kind);
/* Creates a replica with parameters initialised from cfg->seed: equal
 * configs give bitwise equal parameters. FTM_EINVAL on a bad config. */
int ftm_model_create(ftm_model **m, const ftm_model_config *cfg);
void ftm_model_destroy(ftm_model *m);
size_t ftm_model_nparams(const ftm_model *m);
float *ftm_model_params(ftm_model *m);
float *ftm_model_grads(ftm_model *m);
int ftm_model_ntensors(const ftm_model *m);
/* Tensor i (0 <= i < ntensors) or NULL. */
const ftm_tensor_info *ftm_model_tensor(const ftm_model *m, int i);
/* Index of the tensor named `name`, or -1. */
int ftm_model_find_tensor(const ftm_model *m, const char *name);
/* This replica's sgemm counters (calls, flops, seconds, shapes). */
ftm_gemm_stats *ftm_model_gemm_stats(ftm_model *m);

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
    ftm_sum_hook hook;   /* batch-norm statistics over chips (resnet) */
    void *hook_ctx;
} ftm_fb_args;

/* Forward + backward of this chip's examples; *loss = sum of their loss/B.
 * The caller zeroes grads (and grads_i64) first. ResNet with a NULL hook
 * needs the whole batch on this chip. count may be 0 (the chip still makes
 * its hook calls). */
int ftm_model_forward_backward(ftm_model *m, const ftm_fb_args *a,
                               double *loss);
/* Converts fixed-point gradients back: dst[i] = src[i] * 2^-FTM_FIX_SHIFT. */
void ftm_fix_to_float(float *dst, const int64_t *src, size_t n);

/* ---- optimizers ------------------------------------------------------------ */

enum { FTM_OPTIM_SGD = 1, FTM_OPTIM_ADAMW = 2, FTM_OPTIM_LAMB = 3 };

typedef struct ftm_optim_config {
    int kind;
    float lr;            /* peak learning rate */
    int warmup;          /* linear warm-up steps (0 = none) */
    float momentum;      /* SGD (Nesterov off) */
    float weight_decay;  /* applies to tensors with decay = 1 */
    float beta1, beta2, eps; /* AdamW / LAMB */
} ftm_optim_config;

typedef struct ftm_optim ftm_optim;

/* The tuned defaults for a model kind: resnet SGD lr 0.1 momentum 0.9 wd
 * 5e-4, 10 warm-up steps; bert LAMB lr 1e-2 wd 0.01 betas 0.9/0.999, 20
 * warm-up steps (AdamW reached loss ratio 0.51 in 400 steps at lr 3e-3,
 * LAMB 0.46 at lr 1e-2; diverges at AdamW lr 1e-2). */
void ftm_optim_config_default(ftm_optim_config *c, int model_kind);
/* State (momentum / moments) allocated once for n parameters. */
int ftm_optim_create(ftm_optim **o, const ftm_optim_config *c, size_t n);
void ftm_optim_destroy(ftm_optim *o);
/* Copies src's state (moments) into dst, which must have the same kind
 * and size: FTM_EINVAL otherwise, and dst is unchanged. A recovering
 * trainer gives every replica the state of one survivor. */
int ftm_optim_copy_state(ftm_optim *dst, const ftm_optim *src);
/* One update of params from grads; `step` counts from 0 (bias correction,
 * warm-up). The tensor table supplies decay flags and LAMB trust ratios. */
int ftm_optim_step(ftm_optim *o, float *params, const float *grads,
                   const ftm_tensor_info *t, int ntensors, uint64_t step);

/* ---- one-chip training -------------------------------------------------- */

/* Called after every step (may be NULL). */
typedef void (*ftm_step_cb)(void *ctx, long step, double loss,
                            double seconds);

/* One step on one chip: zero grads, forward/backward of the whole batch
 * (global indices [0, batch)), one optimizer update. */
int ftm_model_train_step(ftm_model *m, ftm_optim *o, uint64_t step,
                         long batch, int micro, double *loss);
/* steps steps from step 0; losses (may be NULL) receives one value per
 * step. batch <= the model's max_batch. */
int ftm_model_train(ftm_model *m, ftm_optim *o, long steps, long batch,
                    int micro, double *losses, ftm_step_cb cb, void *ctx);

#endif
