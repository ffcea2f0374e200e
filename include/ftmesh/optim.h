/* optim: optimizers on a model's flat parameter array (SGD with momentum,
 * AdamW, LAMB), src/nn/optim.c. The per-model tuned defaults come from the
 * model registry (models/registry.c).
 *
 * Threads: an optimizer is used by one thread at a time; different
 * optimizers may run concurrently.
 */
#ifndef FTMESH_OPTIM_H
#define FTMESH_OPTIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct ftm_tensor_info ftm_tensor_info;

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

/* The tuned defaults for a model kind, from the model registry (all zero,
 * kind 0, for an unknown kind): resnet SGD lr 0.1 momentum 0.9 wd 5e-4, 10
 * warm-up steps; bert LAMB lr 1e-2 wd 0.01 betas 0.9/0.999, 20
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
 * warm-up). The tensor table (model.h) supplies decay flags and LAMB trust
 * ratios. */
int ftm_optim_step(ftm_optim *o, float *params, const float *grads,
                   const ftm_tensor_info *t, int ntensors, uint64_t step);

#endif
