/* The model registry's internals (models/registry.c): one table row per
 * model, read by ftm_model_create and the config defaults. Adding a model
 * is a file in models/ with an init function, one row in the table, and
 * its source in models/local.mk; nothing in src/nn changes. Not installed. */
#ifndef FTMESH_MODELS_H
#define FTMESH_MODELS_H

#include "ftmesh/model.h"

typedef struct models_entry {
    ftm_model_info info;       /* kind, name, summary (public) */
    /* Fills m (sizes defaulted in m->cfg, tensors declared with mdl_add,
     * buffers, m->fb and m->free_impl) and ends with mdl_alloc. On error
     * the caller destroys m. */
    int (*init)(ftm_model *m);
    int depth, heads;          /* ftm_model_config_default */
    ftm_optim_config optim;    /* ftm_optim_config_default (tuned) */
} models_entry;

/* Batch-norm epsilon in var + eps: PyTorch's BatchNorm2d default, which the
 * reference cases in tests/data use. It bounds rstd at 1/sqrt(eps) ~ 316
 * for a constant channel; activations whose variance is near or below eps
 * (tiny conv weights) are normalised less than fully, as in PyTorch. */
#define MODELS_BN_EPS 1e-5f
/* Layer-norm epsilon: PyTorch's LayerNorm default, as in the reference
 * cases (BERT's released code uses 1e-12; the two differ only for rows
 * that are nearly constant). */
#define MODELS_LN_EPS 1e-5f
/* BERT weight initialisation: normal, standard deviation 0.02, BERT's
 * initializer_range (Devlin et al. 2019, released configs), inherited from
 * GPT; biases zero, layer-norm gains one. */
#define MODELS_BERT_INIT_SD 0.02f

/* The row of a kind, or NULL. */
const models_entry *models_find_kind(int kind);

int models_resnet_init(ftm_model *m);
int models_bert_init(ftm_model *m);

#endif
