/* Internals shared by the models (models/) and src/nn/model.c: the replica struct, the tensor table, micro-batch
 * splitting and fixed-point accumulation. Not installed. */
#ifndef FTMESH_MODEL_IMPL_H
#define FTMESH_MODEL_IMPL_H

#include "ftmesh/model.h"
#include "ftmesh/xsum.h"

#define MDL_MAX_TENSORS 160
#define MDL_NAME 32

enum { MDL_INIT_ZERO, MDL_INIT_ONE, MDL_INIT_NORMAL };

typedef struct mdl_mb {
    long off, n;       /* chip-local first example and size */
} mdl_mb;

struct ftm_model {
    ftm_model_config cfg;
    float *params, *grads;      /* the two flat allocations */
    size_t nparams;
    int ntensors;
    ftm_tensor_info tensors[MDL_MAX_TENSORS];
    char names[MDL_MAX_TENSORS][MDL_NAME];
    unsigned char init[MDL_MAX_TENSORS];
    float init_scale[MDL_MAX_TENSORS];
    ftm_gemm_stats gemm;
    mdl_mb *mbs;                /* max_batch entries */
    int64_t loss_x[FTM_XSUM_WORDS]; /* this call's loss, an exact sum of
                                   per-micro-batch losses (mdl_loss_add) */
    size_t bytes;               /* what the replica allocated (mdl_buf,
                                   mdl_alloc): ftm_model_mem_bytes */
    void *impl;
    /* forward + backward of the micro-batches; the loss goes to
     * mdl_loss_add, once per micro-batch */
    int (*fb)(ftm_model *m, const ftm_fb_args *a, const mdl_mb *mbs, int nmb);
    void (*free_impl)(void *impl);
};

/* Declares a tensor (before mdl_alloc); returns its index or -1. */
int mdl_add(ftm_model *m, const char *name, size_t count, int init,
            float scale, int decay);
/* n zeroed elements of size bytes for the replica's buffers, counted in
 * m->bytes; NULL when out of memory. The model frees them. */
void *mdl_buf(ftm_model *m, size_t n, size_t size);
/* Allocates and initialises params (keyed by seed, tensor, element). */
int mdl_alloc(ftm_model *m);
static inline float *mdl_p(ftm_model *m, int t) { return m->params + m->tensors[t].offset; }
static inline float *mdl_g(ftm_model *m, int t) { return m->grads + m->tensors[t].offset; }
/* Exact mode: moves tensor t's float grads into a->grads_i64 (fixed point)
 * and zeroes them; float mode: nothing. */
int mdl_flush(ftm_model *m, const ftm_fb_args *a, int t);
/* Adds one micro-batch's loss (its sum of loss/B, in a fixed order inside
 * the micro-batch) to the call's exact loss sum: the step's loss is then
 * the same bits for any split of the batch over chips. */
static inline void mdl_loss_add(ftm_model *m, double v)
{
    /* cannot overflow: one term per micro-batch of this call */
    (void)ftm_xsum_add(m->loss_x, v);
}

/* Allocates a replica for cfg and calls the model's init (a registry
 * entry's, models/registry.c); on error destroys it. FTM_EINVAL, FTM_ENOMEM
 * or init's code. */
int mdl_create(ftm_model **m, const ftm_model_config *cfg, int (*init)(ftm_model *m));

#endif
