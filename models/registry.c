/* The models by kind and name, as src/collective/registry.c lists the
 * allreduce algorithms: src/nn provides the replica machinery (mdl_create)
 * and names no model; this table says which models exist, how to build
 * them, and their tuned defaults. */
#include <string.h>
#include "ftmesh/error.h"
#include "models.h"
#include "nn/model_impl.h"

/* Optimizer defaults tuned per model (include/ftmesh/model.h says how).
 * AdamW/LAMB betas and eps are the papers' values. */
#define ADAM_BETAS .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-6f

static const models_entry table[] = {
    { { FTM_MODEL_RESNET, "resnet", "CIFAR-style ResNet (He et al. 2016), synchronised batch norm" },
      models_resnet_init, 8, 2,
      { .kind = FTM_OPTIM_SGD, .lr = 0.1f, .warmup = 10, .momentum = 0.9f,
        .weight_decay = 5e-4f, ADAM_BETAS } },
    { { FTM_MODEL_BERT, "bert", "small BERT encoder (Devlin et al. 2019), masked-LM pre-training" },
      models_bert_init, 2, 2,
      { .kind = FTM_OPTIM_LAMB, .lr = 1e-2f, .warmup = 20, .weight_decay = 0.01f, ADAM_BETAS } },
};
#define NMODELS ((int)(sizeof table / sizeof table[0]))

const models_entry *models_find_kind(int kind)
{
    for (int i = 0; i < NMODELS; i++)
        if (table[i].info.kind == kind)
            return &table[i];
    return NULL;
}

const ftm_model_info *ftm_model_at(int i)
{
    return i >= 0 && i < NMODELS ? &table[i].info : NULL;
}

const ftm_model_info *ftm_model_find(const char *name)
{
    for (int i = 0; name && i < NMODELS; i++)
        if (!strcmp(table[i].info.name, name))
            return &table[i].info;
    return NULL;
}

const ftm_model_info *ftm_model_find_kind(int kind)
{
    const models_entry *e = models_find_kind(kind);
    return e ? &e->info : NULL;
}

void ftm_model_config_default(ftm_model_config *cfg, int kind)
{
    const models_entry *e = models_find_kind(kind);
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->depth = e ? e->depth : 0;
    cfg->heads = e ? e->heads : 0;
    cfg->seed = 1;
    cfg->max_batch = 64;
}

void ftm_optim_config_default(ftm_optim_config *c, int model_kind)
{
    const models_entry *e = models_find_kind(model_kind);
    memset(c, 0, sizeof *c);
    if (e)
        *c = e->optim;
}

int ftm_model_create(ftm_model **m, const ftm_model_config *cfg)
{
    const models_entry *e = cfg ? models_find_kind(cfg->kind) : NULL;
    if (!e) {
        *m = NULL;
        return FTM_EINVAL;
    }
    return mdl_create(m, cfg, e->init);
}

int ftm_model_mem_bytes(const ftm_model_config *cfg, size_t *bytes)
{
    ftm_model *m = NULL;
    int rc = ftm_model_create(&m, cfg);
    *bytes = rc ? 0 : m->bytes;
    ftm_model_destroy(m);
    return rc;
}
