/* Optimizers on the flat parameter array: SGD with momentum and weight
 * decay (PyTorch's form: v = mu v + g + wd p; p -= lr v), AdamW
 * (Loshchilov & Hutter 2019, decoupled decay, bias-corrected moments) and
 * LAMB (You et al. 2020, the MLPerf BERT optimizer: the AdamW update scaled
 * per tensor by the trust ratio ||p|| / ||update||; tensors without weight
 * decay (biases, norms) are also excluded from the trust ratio, as in the
 * reference implementation). State is allocated once at creation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"
#include "ftmesh/optim.h"

struct ftm_optim {
    ftm_optim_config c;
    size_t n;
    float *m, *v;              /* momentum / first moment, second moment */
};

int ftm_optim_create(ftm_optim **out, const ftm_optim_config *c, size_t n)
{
    *out = NULL;
    if (!c || n == 0 || !(c->lr > 0.0f) || c->kind < FTM_OPTIM_SGD || c->kind > FTM_OPTIM_LAMB)
        return FTM_EINVAL;
    ftm_optim *o = calloc(1, sizeof *o);
    if (!o)
        return FTM_ENOMEM;
    o->c = *c;
    o->n = n;
    o->m = calloc(n, sizeof(float));
    o->v = c->kind == FTM_OPTIM_SGD ? NULL : calloc(n, sizeof(float));
    if (!o->m || (c->kind != FTM_OPTIM_SGD && !o->v)) {
        ftm_optim_destroy(o);
        return FTM_ENOMEM;
    }
    *out = o;
    return 0;
}

int ftm_optim_copy_state(ftm_optim *dst, const ftm_optim *src)
{
    if (dst->n != src->n || dst->c.kind != src->c.kind)
        return FTM_EINVAL;
    memcpy(dst->m, src->m, sizeof(float) * src->n);
    if (src->v)
        memcpy(dst->v, src->v, sizeof(float) * src->n);
    return 0;
}

void ftm_optim_destroy(ftm_optim *o)
{
    if (!o)
        return;
    free(o->m);
    free(o->v);
    free(o);
}

int ftm_optim_step(ftm_optim *o, float *p, const float *g,
                   const ftm_tensor_info *t, int nt, uint64_t step)
{
    const ftm_optim_config *c = &o->c;
    float lr = c->lr;
    if (c->warmup > 0 && step < (uint64_t)c->warmup)
        lr *= (float)(step + 1) / (float)c->warmup;
    float bc1 = 1.0f - powf(c->beta1, (float)(step + 1));
    float bc2 = 1.0f - powf(c->beta2, (float)(step + 1));
    for (int k = 0; k < nt; k++) {
        size_t off = t[k].offset, n = t[k].count;
        if (off + n > o->n)
            return FTM_ERANGE;
        float *pp = p + off, *m = o->m + off, *v = o->v ? o->v + off : NULL;
        const float *gg = g + off;
        float wd = t[k].decay ? c->weight_decay : 0.0f;
        if (c->kind == FTM_OPTIM_SGD) {
            for (size_t i = 0; i < n; i++) {
                m[i] = c->momentum * m[i] + gg[i] + wd * pp[i];
                pp[i] -= lr * m[i];
            }
            continue;
        }
        double pn = 0.0, un = 0.0;
        for (size_t i = 0; i < n; i++) {
            m[i] = c->beta1 * m[i] + (1.0f - c->beta1) * gg[i];
            v[i] = c->beta2 * v[i] + (1.0f - c->beta2) * gg[i] * gg[i];
            if (c->kind == FTM_OPTIM_LAMB) {
                float u = (m[i] / bc1) / (sqrtf(v[i] / bc2) + c->eps) + wd * pp[i];
                pn += (double)pp[i] * pp[i];
                un += (double)u * u;
            }
        }
        float ratio = 1.0f;
        if (c->kind == FTM_OPTIM_LAMB && t[k].decay && pn > 0.0 && un > 0.0)
            ratio = (float)(sqrt(pn) / sqrt(un));
        for (size_t i = 0; i < n; i++) {
            float u = (m[i] / bc1) / (sqrtf(v[i] / bc2) + c->eps) + wd * pp[i];
            pp[i] -= lr * ratio * u;
        }
    }
    return 0;
}
