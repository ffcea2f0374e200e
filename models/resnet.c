/* CIFAR-style ResNet (He et al. 2016, sec. 4.2): stem conv3x3 + BN + ReLU,
 * three stages of n basic blocks with w, 2w, 4w channels (depth = 6n + 2),
 * stride-2 downsampling with 1x1 projection shortcuts, global average pool,
 * linear, softmax cross-entropy.
 *
 * Synchronised batch norm: forward and backward run layer by layer over all
 * of this chip's micro-batches. For each BN, per-micro-batch partial sums
 * (double, fixed order) are added exactly in binned int64 words (xsum.h,
 * relative precision at any activation scale), the hook sums the words over
 * chips, and the statistics follow from the global sums: identical bits on
 * every chip and for any sharding.
 *
 *   x -> [conv-bn-relu] -> block ... block -> pool -> fc -> xent
 *   block: out = relu(bn2(conv2(relu(bn1(conv1(in))))) + shortcut(in))
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "models.h"
#include "nn/model_impl.h"

typedef struct cbn {            /* conv + batch norm (+ ReLU) */
    ftm_conv_dims d;
    int tw, tg, tb, relu;
    float *c;                   /* max_batch, OC, OH, OW: conv output */
    float *a;                   /* max_batch, OC, OH, OW: BN (+ReLU) output */
    float *mean, *rstd;         /* OC */
} cbn;

typedef struct block {
    cbn c1, c2, proj;
    int has_proj;
    float *out;                 /* max_batch, OC, OH, OW */
} block;

typedef struct resnet {
    int S, K, C4, nblocks;
    cbn stem;
    block *blocks;
    int tfw, tfb;
    float *x;                   /* max_batch, 3, S, S */
    int *labels;                /* max_batch */
    float *pooled, *dpooled;    /* max_batch, C4 */
    float *logits, *probs, *dlogits; /* max_batch, K */
    float *losses, *scale;      /* max_batch */
    float *col;                 /* largest im2col scratch */
    float *buf[5];              /* gradient scratch, max_batch * largest activation */
    int64_t *acc;               /* 2 * 4w exact sums (FTM_XSUM_WORDS each) */
    double *part, *gsum;        /* 2 * 4w */
} resnet;

static size_t out_size(const ftm_conv_dims *d) { return (size_t)d->OC * d->OH * d->OW; }
static size_t in_size(const ftm_conv_dims *d) { return (size_t)d->C * d->H * d->W; }

static int cbn_setup(ftm_model *m, cbn *u, const char *name, int C,
                     int H, int W, int OC, int K, int stride, int relu)
{
    char nm[MDL_NAME];
    if (ftm_nn_conv_dims(&u->d, C, H, W, OC, K, stride, K / 2))
        return FTM_EINVAL;
    u->relu = relu;
    snprintf(nm, sizeof nm, "%s.w", name);
    u->tw = mdl_add(m, nm, (size_t)OC * C * K * K, MDL_INIT_NORMAL,
                    sqrtf(2.0f / (float)(C * K * K)), 1);
    snprintf(nm, sizeof nm, "%s.bn.g", name);
    u->tg = mdl_add(m, nm, (size_t)OC, MDL_INIT_ONE, 0.0f, 0);
    snprintf(nm, sizeof nm, "%s.bn.b", name);
    u->tb = mdl_add(m, nm, (size_t)OC, MDL_INIT_ZERO, 0.0f, 0);
    size_t n = (size_t)m->cfg.max_batch * out_size(&u->d);
    u->c = mdl_buf(m, n, sizeof(float));
    u->a = mdl_buf(m, n, sizeof(float));
    u->mean = mdl_buf(m, (size_t)OC, sizeof(float));
    u->rstd = mdl_buf(m, (size_t)OC, sizeof(float));
    if (u->tw < 0 || u->tg < 0 || u->tb < 0 || !u->c || !u->a || !u->mean || !u->rstd)
        return FTM_ENOMEM;
    return 0;
}

static void cbn_free(cbn *u)
{
    free(u->c); free(u->a); free(u->mean); free(u->rstd);
}

static void resnet_free(void *p)
{
    resnet *r = p;
    if (!r)
        return;
    cbn_free(&r->stem);
    for (int i = 0; r->blocks && i < r->nblocks; i++) {
        cbn_free(&r->blocks[i].c1);
        cbn_free(&r->blocks[i].c2);
        cbn_free(&r->blocks[i].proj);
        free(r->blocks[i].out);
    }
    free(r->blocks);
    free(r->x); free(r->labels); free(r->pooled); free(r->dpooled);
    free(r->logits); free(r->probs); free(r->dlogits); free(r->losses);
    free(r->scale); free(r->col); free(r->acc); free(r->part); free(r->gsum);
    for (int i = 0; i < 5; i++)
        free(r->buf[i]);
    free(r);
}

/* The 2C exact sums in acc: over micro-batches (already), then over chips
 * (the hook adds the words), then to double. */
static int sync_sums(const ftm_fb_args *a, resnet *r, int C)
{
    if (a->hook) {
        int rc = a->hook(a->hook_ctx, r->acc, 2 * (size_t)C * FTM_XSUM_WORDS);
        if (rc)
            return rc;
    }
    ftm_xsum_value_n(r->gsum, r->acc, 2 * (size_t)C);
    return 0;
}

static void acc_zero(resnet *r, int C)
{
    memset(r->acc, 0, sizeof(int64_t) * 2 * (size_t)C * FTM_XSUM_WORDS);
}

/* Conv, statistics and (apply) the BN (+ReLU) into u->a; without apply
 * the caller applies mean/rstd itself (the fused residual block end). */
static int cbn_forward(ftm_model *m, resnet *r, cbn *u, const float *in,
                       const ftm_fb_args *a, const mdl_mb *mbs, int nmb, int apply)
{
    int OC = u->d.OC, HW = u->d.OH * u->d.OW, rc;
    size_t osz = out_size(&u->d), isz = in_size(&u->d);
    acc_zero(r, OC);
    for (int i = 0; i < nmb; i++) {
        float *c = u->c + mbs[i].off * osz;
        ftm_nn_conv2d_forward_stats(c, r->part, r->col, in + mbs[i].off * isz,
                                    mdl_p(m, u->tw), (int)mbs[i].n, &u->d, &m->gemm);
        if ((rc = ftm_xsum_add_n(r->acc, r->part, 2 * (size_t)OC)))
            return rc;
    }
    if ((rc = sync_sums(a, r, OC)))
        return rc;
    ftm_nn_bn_stats(u->mean, u->rstd, r->gsum, (double)a->global_batch * HW, MODELS_BN_EPS, OC);
    if (apply)
        (u->relu ? ftm_nn_bn_relu_forward : ftm_nn_bn_forward)(u->a, u->c, u->mean, u->rstd,
            mdl_p(m, u->tg), mdl_p(m, u->tb), (int)a->count, OC, HW);
    return 0;
}

/* dA: gradient w.r.t. u->a; din (may be NULL) += gradient w.r.t. in;
 * dc: scratch of count * out_size. */
static int cbn_backward(ftm_model *m, resnet *r, cbn *u, const float *dA,
                        const float *in, float *din, float *dc,
                        const ftm_fb_args *a, const mdl_mb *mbs, int nmb)
{
    int OC = u->d.OC, HW = u->d.OH * u->d.OW, rc;
    size_t osz = out_size(&u->d), isz = in_size(&u->d);
    const float *mask = u->relu ? u->a : NULL;  /* the ReLU is folded into the BN calls */
    float *dg = mdl_g(m, u->tg), *db = mdl_g(m, u->tb);
    acc_zero(r, OC);
    for (int i = 0; i < nmb; i++) {
        size_t o = mbs[i].off * osz;
        if (mask)
            ftm_nn_bn_relu_backward_partial(r->part, dA + o, mask + o, u->c + o, u->mean,
                                            u->rstd, (int)mbs[i].n, OC, HW);
        else
            ftm_nn_bn_backward_partial(r->part, dA + o, u->c + o, u->mean, u->rstd,
                                       (int)mbs[i].n, OC, HW);
        if ((rc = ftm_xsum_add_n(r->acc, r->part, 2 * (size_t)OC)))
            return rc;
        for (int c = 0; c < OC; c++) {
            db[c] += (float)r->part[c];
            dg[c] += (float)r->part[OC + c];
        }
        if ((rc = mdl_flush(m, a, u->tg)) || (rc = mdl_flush(m, a, u->tb)))
            return rc;
    }
    if ((rc = sync_sums(a, r, OC)))
        return rc;
    /* dc is stored whole: the bits of += into zeros, without zeroing it */
    if (mask)
        ftm_nn_bn_relu_backward_store(dc, dA, mask, u->c, u->mean, u->rstd, mdl_p(m, u->tg),
                                      r->gsum, (double)a->global_batch * HW, (int)a->count,
                                      OC, HW);
    else
        ftm_nn_bn_backward_store(dc, dA, u->c, u->mean, u->rstd, mdl_p(m, u->tg), r->gsum,
                                 (double)a->global_batch * HW, (int)a->count, OC, HW);
    for (int i = 0; i < nmb; i++) {
        ftm_nn_conv2d_backward(din ? din + mbs[i].off * isz : NULL, mdl_g(m, u->tw),
                               r->col, dc + mbs[i].off * osz, in + mbs[i].off * isz,
                               mdl_p(m, u->tw), (int)mbs[i].n, &u->d, &m->gemm);
        if ((rc = mdl_flush(m, a, u->tw)))
            return rc;
    }
    return 0;
}

/* The step's examples (images and labels) into r->x and r->labels. */
static int load_batch(ftm_model *m, resnet *r, const ftm_fb_args *a)
{
    int S = r->S, K = r->K;
    for (long i = 0; i < a->count; i++) {
        uint64_t id = a->step * (uint64_t)a->global_batch + (uint64_t)(a->first + i);
        float *x = r->x + i * 3 * S * S;
        int rc = m->cfg.data ? ftm_data_image(m->cfg.data, m->cfg.seed, id, S, x, &r->labels[i])
                             : ftm_data_synth_image(m->cfg.seed, id, S, K, x, &r->labels[i]);
        if (rc)
            return rc;
        if (r->labels[i] < 0 || r->labels[i] >= K)
            return FTM_ERANGE; /* a label the logits do not have */
    }
    return 0;
}

/* Spatial size (OH * OW) of the last block's output. */
static int last_hw(const resnet *r)
{
    const ftm_conv_dims *last = &r->blocks[r->nblocks - 1].c2.d;
    return last->OH * last->OW;
}

/* Forward through the stem and the blocks, layer by layer over the
 * micro-batches; *top is the last block's output. */
static int body_forward(ftm_model *m, resnet *r, const ftm_fb_args *a, const mdl_mb *mbs,
                        int nmb, const float **top)
{
    int rc;
    if ((rc = cbn_forward(m, r, &r->stem, r->x, a, mbs, nmb, 1)))
        return rc;
    const float *in = r->stem.a;
    for (int k = 0; k < r->nblocks; k++) {
        block *b = &r->blocks[k];
        const float *sc = in;
        if ((rc = cbn_forward(m, r, &b->c1, in, a, mbs, nmb, 1)) ||
            (rc = cbn_forward(m, r, &b->c2, b->c1.a, a, mbs, nmb, 0)))
            return rc;
        if (b->has_proj) {
            if ((rc = cbn_forward(m, r, &b->proj, in, a, mbs, nmb, 1)))
                return rc;
            sc = b->proj.a;
        }
        /* bn2, + shortcut, ReLU in one pass (c2.a is never stored) */
        cbn *u = &b->c2;
        ftm_nn_bn_add_relu_forward(b->out, u->c, u->mean, u->rstd, mdl_p(m, u->tg),
                                   mdl_p(m, u->tb), sc, (int)a->count, u->d.OC,
                                   u->d.OH * u->d.OW);
        in = b->out;
    }
    *top = in;
    return 0;
}

/* Pool, classifier and loss (each micro-batch's share of the mean). */
static int head_forward(ftm_model *m, resnet *r, const ftm_fb_args *a, const mdl_mb *mbs,
                        int nmb, const float *in)
{
    int K = r->K, C4 = r->C4, rc;
    long cnt = a->count;
    ftm_nn_avgpool_forward(r->pooled, in, (int)cnt, C4, last_hw(r));
    for (int i = 0; i < nmb; i++)
        ftm_nn_linear_forward(r->logits + mbs[i].off * K, r->pooled + mbs[i].off * C4,
                              mdl_p(m, r->tfw), mdl_p(m, r->tfb), (int)mbs[i].n, C4, K,
                              &m->gemm);
    if ((rc = ftm_nn_softmax_xent_forward(r->losses, r->probs, r->logits, r->labels, (int)cnt, K)))
        return rc;
    for (int i = 0; i < nmb; i++) {
        double part = 0.0;
        for (long k = mbs[i].off; k < mbs[i].off + mbs[i].n; k++)
            part += r->losses[k] / (double)a->global_batch;
        mdl_loss_add(m, part);
    }
    return 0;
}

/* Backward through loss, classifier and pool; *dtop (r->buf[0]) is the
 * gradient at the last block's output. */
static int head_backward(ftm_model *m, resnet *r, const ftm_fb_args *a, const mdl_mb *mbs,
                         int nmb, float **dtop)
{
    int K = r->K, C4 = r->C4, HW = last_hw(r), rc;
    long cnt = a->count;
    for (long i = 0; i < cnt; i++)
        r->scale[i] = 1.0f / (float)a->global_batch;
    memset(r->dlogits, 0, sizeof(float) * cnt * K);
    memset(r->dpooled, 0, sizeof(float) * cnt * C4);
    ftm_nn_softmax_xent_backward(r->dlogits, r->probs, r->labels, r->scale, (int)cnt, K);
    for (int i = 0; i < nmb; i++) {
        ftm_nn_linear_backward(r->dpooled + mbs[i].off * C4, mdl_g(m, r->tfw),
                               mdl_g(m, r->tfb), r->dlogits + mbs[i].off * K,
                               r->pooled + mbs[i].off * C4, mdl_p(m, r->tfw),
                               (int)mbs[i].n, C4, K, &m->gemm);
        if ((rc = mdl_flush(m, a, r->tfw)) || (rc = mdl_flush(m, a, r->tfb)))
            return rc;
    }
    float *dout = r->buf[0];
    memset(dout, 0, sizeof(float) * cnt * C4 * HW);
    ftm_nn_avgpool_backward(dout, r->dpooled, (int)cnt, C4, HW);
    *dtop = dout;
    return 0;
}

/* Backward through the blocks, last to first, then the stem. */
static int body_backward(ftm_model *m, resnet *r, const ftm_fb_args *a, const mdl_mb *mbs,
                         int nmb, float *dout)
{
    long cnt = a->count;
    int rc;
    for (int k = r->nblocks - 1; k >= 0; k--) {
        block *b = &r->blocks[k];
        const float *bin = k ? r->blocks[k - 1].out : r->stem.a;
        size_t no = (size_t)cnt * out_size(&b->c2.d), ni = (size_t)cnt * in_size(&b->c1.d);
        float *dpre = r->buf[1], *din = r->buf[0], *da1 = r->buf[3];
        ftm_nn_relu_backward_store(dpre, b->out, dout, no);
        if (b->has_proj) {
            memset(din, 0, ni * sizeof(float)); /* dout (same buffer) is consumed */
            if ((rc = cbn_backward(m, r, &b->proj, dpre, bin, din, r->buf[4], a, mbs, nmb)))
                return rc;
        } else { /* the same shape: din = 0 + dpre, the bits of += into zeros */
            for (size_t i = 0; i < no; i++)
                din[i] = 0.0f + dpre[i];
        }
        memset(da1, 0, no * sizeof(float));
        if ((rc = cbn_backward(m, r, &b->c2, dpre, b->c1.a, da1, r->buf[4], a, mbs, nmb)) ||
            (rc = cbn_backward(m, r, &b->c1, da1, bin, din, r->buf[4], a, mbs, nmb)))
            return rc;
        dout = din;
    }
    return cbn_backward(m, r, &r->stem, dout, r->x, NULL, r->buf[4], a, mbs, nmb);
}

static int resnet_fb(ftm_model *m, const ftm_fb_args *a, const mdl_mb *mbs, int nmb)
{
    resnet *r = m->impl;
    if (!a->hook && a->count != a->global_batch)
        return FTM_EINVAL; /* BN statistics need every example */
    const float *top;
    float *dtop;
    int rc;
    if ((rc = load_batch(m, r, a)) || (rc = body_forward(m, r, a, mbs, nmb, &top)) ||
        (rc = head_forward(m, r, a, mbs, nmb, top)) ||
        (rc = head_backward(m, r, a, mbs, nmb, &dtop)))
        return rc;
    return body_backward(m, r, a, mbs, nmb, dtop);
}

/* Floats of the largest conv scratch (ftm_nn_conv_col_size) of any layer. */
static size_t col_floats(const resnet *r)
{
    size_t n = ftm_nn_conv_col_size(&r->stem.d);
    for (int k = 0; k < r->nblocks; k++) {
        const block *b = &r->blocks[k];
        size_t c[3] = {ftm_nn_conv_col_size(&b->c1.d), ftm_nn_conv_col_size(&b->c2.d),
                       b->has_proj ? ftm_nn_conv_col_size(&b->proj.d) : 0};
        for (int i = 0; i < 3; i++)
            n = c[i] > n ? c[i] : n;
    }
    return n;
}

int models_resnet_init(ftm_model *m)
{
    ftm_model_config *c = &m->cfg;
    if (c->width == 0) c->width = 16;
    if (c->image == 0) c->image = 32;
    if (c->classes == 0) c->classes = 10;
    if ((c->depth - 2) % 6 != 0 || c->depth < 8 || c->width <= 0 || c->image < 4 ||
        c->image % 4 != 0 || c->classes < 2 || (c->data && (c->image != 32 || c->classes != 10)))
        return FTM_EINVAL;
    resnet *r = calloc(1, sizeof *r);
    if (!r)
        return FTM_ENOMEM;
    m->impl = r;
    m->free_impl = resnet_free;
    m->fb = resnet_fb;
    int n = (c->depth - 2) / 6, w = c->width, S = c->image, B = c->max_batch, rc;
    r->S = S; r->K = c->classes; r->C4 = 4 * w; r->nblocks = 3 * n;
    r->blocks = calloc((size_t)r->nblocks, sizeof(block));
    if (!r->blocks)
        return FTM_ENOMEM;
    if ((rc = cbn_setup(m, &r->stem, "stem", 3, S, S, w, 3, 1, 1)))
        return rc;
    int C = w, H = S;
    for (int s = 0; s < 3; s++)
        for (int j = 0; j < n; j++) {
            block *b = &r->blocks[s * n + j];
            int OC = w << s, stride = (s > 0 && j == 0) ? 2 : 1, OH = H / stride;
            char nm[MDL_NAME];
            snprintf(nm, sizeof nm, "s%d.b%d.conv1", s + 1, j);
            if ((rc = cbn_setup(m, &b->c1, nm, C, H, H, OC, 3, stride, 1)))
                return rc;
            snprintf(nm, sizeof nm, "s%d.b%d.conv2", s + 1, j);
            if ((rc = cbn_setup(m, &b->c2, nm, OC, OH, OH, OC, 3, 1, 0)))
                return rc;
            b->has_proj = stride != 1 || C != OC;
            snprintf(nm, sizeof nm, "s%d.b%d.proj", s + 1, j);
            if (b->has_proj && (rc = cbn_setup(m, &b->proj, nm, C, H, H, OC, 1, stride, 0)))
                return rc;
            if (!(b->out = mdl_buf(m, (size_t)B * OC * OH * OH, sizeof(float))))
                return FTM_ENOMEM;
            C = OC;
            H = OH;
        }
    r->tfw = mdl_add(m, "fc.w", (size_t)r->K * r->C4, MDL_INIT_NORMAL, sqrtf(1.0f / (float)r->C4), 1);
    r->tfb = mdl_add(m, "fc.b", (size_t)r->K, MDL_INIT_ZERO, 0.0f, 0);
    int wmax = w > 3 ? w : 3;
    size_t act = (size_t)B * wmax * S * S; /* the largest activation (stage 1) */
    r->col = mdl_buf(m, col_floats(r), sizeof(float)); /* the largest conv scratch */
    r->x = mdl_buf(m, (size_t)B * 3 * S * S, sizeof(float));
    r->labels = mdl_buf(m, (size_t)B, sizeof(int));
    r->pooled = mdl_buf(m, (size_t)B * r->C4, sizeof(float));
    r->dpooled = mdl_buf(m, (size_t)B * r->C4, sizeof(float));
    r->logits = mdl_buf(m, (size_t)B * r->K, sizeof(float));
    r->probs = mdl_buf(m, (size_t)B * r->K, sizeof(float));
    r->dlogits = mdl_buf(m, (size_t)B * r->K, sizeof(float));
    r->losses = mdl_buf(m, (size_t)B, sizeof(float));
    r->scale = mdl_buf(m, (size_t)B, sizeof(float));
    r->acc = mdl_buf(m, (size_t)2 * r->C4 * FTM_XSUM_WORDS, sizeof(int64_t));
    r->part = mdl_buf(m, (size_t)2 * r->C4, sizeof(double));
    r->gsum = mdl_buf(m, (size_t)2 * r->C4, sizeof(double));
    int ok = r->x && r->labels && r->pooled && r->dpooled && r->logits && r->probs &&
             r->dlogits && r->losses && r->scale && r->col && r->acc && r->part && r->gsum &&
             r->tfw >= 0 && r->tfb >= 0;
    for (int i = 0; i < 5; i++)
        ok = ok && (r->buf[i] = mdl_buf(m, act, sizeof(float)));
    if (!ok)
        return FTM_ENOMEM;
    return mdl_alloc(m);
}
