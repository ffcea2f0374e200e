/* Model replicas: the flat parameter/gradient arrays, the tensor table,
 * argument checks and micro-batch splitting, fixed-point accumulation, and
 * the one-chip training loop. Model-specific code, and the registry that
 * names the models (ftm_model_create), are in models/. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ftmesh/error.h"
#include "ftmesh/rng.h"
#include "model_impl.h"
#include "core/util.h"

int mdl_add(ftm_model *m, const char *name, size_t count, int init,
            float scale, int decay)
{
    if (m->ntensors >= MDL_MAX_TENSORS)
        return -1;
    int t = m->ntensors++;
    strncpy(m->names[t], name, MDL_NAME - 1);
    m->tensors[t].name = m->names[t];
    m->tensors[t].offset = m->nparams;
    m->tensors[t].count = count;
    m->tensors[t].decay = decay;
    m->init[t] = (unsigned char)init;
    m->init_scale[t] = scale;
    m->nparams += count;
    return t;
}

/* Draws tensor t's initial values (keyed by seed, tensor, element). */
static void init_tensor(ftm_model *m, int t)
{
    float *p = mdl_p(m, t);
    for (size_t i = 0; i < m->tensors[t].count; i++) {
        if (m->init[t] != MDL_INIT_NORMAL) {
            p[i] = m->init[t] == MDL_INIT_ONE ? 1.0f : 0.0f;
            continue;
        }
        /* Box-Muller from two keyed uniforms */
        double u1 = (ftm_rng_u64(m->cfg.seed, FTM_RNG_PARAMS, (uint64_t)t, i, 0) >> 11) * 0x1p-53;
        double u2 = (ftm_rng_u64(m->cfg.seed, FTM_RNG_PARAMS, (uint64_t)t, i, 1) >> 11) * 0x1p-53;
        double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * 3.14159265358979323846 * u2);
        p[i] = (float)(z * m->init_scale[t]);
    }
}

/* The initial parameters last drawn, with all that decides them: the seed
 * and each tensor's size, kind and scale. A run makes one replica per chip,
 * all equal, and the draws (a log and a cos per parameter) were most of a
 * small run's setup; a replica with the same key copies them. */
static struct {
    pthread_mutex_t mu;
    uint64_t seed;
    int ntensors;
    size_t count[MDL_MAX_TENSORS];
    unsigned char init[MDL_MAX_TENSORS];
    float scale[MDL_MAX_TENSORS];
    size_t nparams;
    float *params;
} init_memo = { .mu = PTHREAD_MUTEX_INITIALIZER, .ntensors = -1 };

/* 1 when the memo holds m's initial parameters (under init_memo.mu). */
static int memo_matches(const ftm_model *m)
{
    if (init_memo.ntensors != m->ntensors || init_memo.seed != m->cfg.seed ||
        init_memo.nparams != m->nparams ||
        memcmp(init_memo.init, m->init, (size_t)m->ntensors) != 0 ||
        memcmp(init_memo.scale, m->init_scale, sizeof(float) * (size_t)m->ntensors) != 0)
        return 0;
    for (int t = 0; t < m->ntensors; t++)
        if (init_memo.count[t] != m->tensors[t].count)
            return 0;
    return 1;
}

/* Keeps m's freshly drawn parameters in the memo (under init_memo.mu);
 * without the memory the memo is left empty. */
static void memo_keep(const ftm_model *m)
{
    float *p = realloc(init_memo.params, sizeof(float) * (m->nparams ? m->nparams : 1));
    if (!p) {
        free(init_memo.params);
        init_memo.params = NULL;
        init_memo.ntensors = -1;
        return;
    }
    memcpy(p, m->params, sizeof(float) * m->nparams);
    init_memo.params = p;
    init_memo.seed = m->cfg.seed;
    init_memo.ntensors = m->ntensors;
    init_memo.nparams = m->nparams;
    memcpy(init_memo.init, m->init, (size_t)m->ntensors);
    memcpy(init_memo.scale, m->init_scale, sizeof(float) * (size_t)m->ntensors);
    for (int t = 0; t < m->ntensors; t++)
        init_memo.count[t] = m->tensors[t].count;
}

void *mdl_buf(ftm_model *m, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p)
        m->bytes += n * size;
    return p;
}

int mdl_alloc(ftm_model *m)
{
    m->params = malloc(sizeof(float) * m->nparams);
    m->grads = calloc(m->nparams, sizeof(float));
    if (!m->params || !m->grads)
        return FTM_ENOMEM;
    m->bytes += 2 * sizeof(float) * m->nparams;
    pthread_mutex_lock(&init_memo.mu);
    int hit = memo_matches(m);
    if (hit)
        memcpy(m->params, init_memo.params, sizeof(float) * m->nparams);
    pthread_mutex_unlock(&init_memo.mu);
    if (hit)
        return 0;
    for (int t = 0; t < m->ntensors; t++)
        init_tensor(m, t);
    pthread_mutex_lock(&init_memo.mu);
    memo_keep(m);
    pthread_mutex_unlock(&init_memo.mu);
    return 0;
}

int mdl_flush(ftm_model *m, const ftm_fb_args *a, int t)
{
    if (!a->exact)
        return 0;
    const ftm_tensor_info *ti = &m->tensors[t];
    float *g = m->grads + ti->offset;
    int64_t *q = a->grads_i64 + ti->offset;
    const double lim = 0x1p22;
    /* times a power of two: exact, as ldexp (no overflow below lim) */
    const double scale = ldexp(1.0, FTM_FIX_SHIFT);
    for (size_t i = 0; i < ti->count; i++) {
        if (!(fabs(g[i]) < lim))
            return FTM_ERANGE;
        if (__builtin_add_overflow(q[i], (int64_t)llrint((double)g[i] * scale), &q[i]))
            return FTM_ERANGE;
        g[i] = 0.0f;
    }
    return 0;
}

void ftm_model_fix_to_float(float *dst, const int64_t *src, size_t n)
{
    /* times a power of two: exact, as ldexp (a nonzero int64 scaled by
     * 2^-FTM_FIX_SHIFT is far from the subnormals) */
    const double scale = ldexp(1.0, -FTM_FIX_SHIFT);
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)((double)src[i] * scale);
}

int mdl_create(ftm_model **out, const ftm_model_config *cfg, int (*init)(ftm_model *m))
{
    *out = NULL;
    if (!cfg || cfg->max_batch <= 0 || !init)
        return FTM_EINVAL;
    ftm_nn_init();
    ftm_model *m = calloc(1, sizeof *m);
    if (!m)
        return FTM_ENOMEM;
    m->cfg = *cfg;
    m->mbs = mdl_buf(m, (size_t)cfg->max_batch, sizeof(mdl_mb));
    int rc = !m->mbs ? FTM_ENOMEM : init(m);
    if (rc) {
        ftm_model_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

void ftm_model_destroy(ftm_model *m)
{
    if (!m)
        return;
    if (m->free_impl)
        m->free_impl(m->impl);
    free(m->params);
    free(m->grads);
    free(m->mbs);
    free(m);
}

size_t ftm_model_nparams(const ftm_model *m) { return m->nparams; }
float *ftm_model_params(ftm_model *m) { return m->params; }
float *ftm_model_grads(ftm_model *m) { return m->grads; }
int ftm_model_ntensors(const ftm_model *m) { return m->ntensors; }
ftm_gemm_stats *ftm_model_gemm_stats(ftm_model *m) { return &m->gemm; }

const ftm_tensor_info *ftm_model_tensor(const ftm_model *m, int i)
{
    return (i >= 0 && i < m->ntensors) ? &m->tensors[i] : NULL;
}

int ftm_model_find_tensor(const ftm_model *m, const char *name)
{
    for (int i = 0; i < m->ntensors; i++)
        if (!strcmp(m->names[i], name))
            return i;
    return -1;
}

int ftm_model_forward_backward(ftm_model *m, const ftm_fb_args *a, double *loss)
{
    *loss = 0.0;
    if (a->micro <= 0 || a->first < 0 || a->count < 0 || a->global_batch <= 0 ||
        a->first + a->count > a->global_batch || a->count > m->cfg.max_batch ||
        a->first % a->micro != 0 ||
        (a->count % a->micro != 0 && a->first + a->count != a->global_batch) ||
        (a->exact && !a->grads_i64))
        return FTM_EINVAL;
    int nmb = 0;
    for (long off = 0; off < a->count; off += a->micro) {
        m->mbs[nmb].off = off;
        m->mbs[nmb].n = a->count - off < a->micro ? a->count - off : a->micro;
        nmb++;
    }
    memset(m->loss_x, 0, sizeof m->loss_x);
    int rc = m->fb(m, a, m->mbs, nmb);
    *loss = ftm_xsum_value(m->loss_x);
    if (!rc && a->loss_x)
        rc = ftm_xsum_merge(a->loss_x, m->loss_x);
    return rc;
}

int ftm_model_train_step(ftm_model *m, ftm_optim *o, uint64_t step,
                         long batch, int micro, double *loss)
{
    memset(m->grads, 0, sizeof(float) * m->nparams);
    ftm_fb_args a = {.step = step, .first = 0, .count = batch,
                     .global_batch = batch, .micro = micro};
    int rc = ftm_model_forward_backward(m, &a, loss);
    if (rc)
        return rc;
    if (!isfinite(*loss))
        return FTM_ERANGE;
    return ftm_optim_step(o, m->params, m->grads, m->tensors, m->ntensors, step);
}

int ftm_model_train(ftm_model *m, ftm_optim *o, long steps, long batch,
                    int micro, double *losses, ftm_step_cb cb, void *ctx)
{
    for (long s = 0; s < steps; s++) {
        double t0 = core_now_s(), loss;
        int rc = ftm_model_train_step(m, o, (uint64_t)s, batch, micro, &loss);
        if (rc)
            return rc;
        if (losses)
            losses[s] = loss;
        if (cb)
            cb(ctx, s, loss, core_now_s() - t0);
    }
    return 0;
}
