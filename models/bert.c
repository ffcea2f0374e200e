/* A small BERT encoder (Devlin et al. 2019) for masked-LM pre-training:
 * token + position embeddings, layer norm, dropout; L post-LN layers of
 * multi-head self-attention (padding mask, attention dropout) and a GELU
 * FFN of 4C; the MLM head (dense + GELU + layer norm, then logits tied to
 * the token embeddings plus a bias) evaluated only at the masked positions.
 *
 * BERT has no cross-example statistics, so each micro-batch runs its whole
 * forward and backward before the next; in exact mode its gradient is then
 * moved to fixed point. Per-example loss = mean cross-entropy over that
 * example's masked tokens (at least one is always masked); the step loss is
 * the mean over the global batch.
 *
 * Masking (15%, of which 80% [MASK], 10% random word, 10% unchanged) and
 * dropout are keyed by (seed, step, global example index, layer, element).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/rng.h"
#include "models.h"
#include "nn/model_impl.h"


typedef struct layer {
    int wqkv, bqkv, wo, bo, g1, b1, w1, bf1, w2, bf2, g2, b2; /* tensors */
    float *qkv, *probs, *att, *ao, *aod, *r1, *h, *m1, *s1;
    float *f1, *g, *f2, *f2d, *r2, *xo, *m2, *s2;
} layer;

typedef struct bert {
    int V, T, C, L, NH, F;
    int rows;                                 /* examples the buffers hold */
    float p;                                  /* dropout */
    int wte, wpe, ge, be, wh, bh, gh, bhn, bv; /* tensors */
    layer *ly;
    int *tok, *inp, *labels, *idx, *mlab;     /* rows */
    unsigned char *valid;
    float *emb, *x0, *me, *se, *x0d;
    float *xm, *hd, *hg, *hn, *mh, *sh, *logits, *probs, *losses, *scale;
    float *bX, *bR, *bH, *dqkv, *bF1, *bF2, *dlogits, *dK1, *dK2, *dK3;
    float *scr;                               /* 2,T,T */
} bert;

#define ALLOC(ptr, n) ((ptr) = mdl_buf(m, (size_t)(n), sizeof(*(ptr))))

static void bert_free(void *p)
{
    bert *b = p;
    if (!b)
        return;
    for (int l = 0; b->ly && l < b->L; l++) {
        layer *y = &b->ly[l];
        float **f[] = {&y->qkv, &y->probs, &y->att, &y->ao, &y->aod, &y->r1, &y->h, &y->m1,
                       &y->s1, &y->f1, &y->g, &y->f2, &y->f2d, &y->r2, &y->xo, &y->m2, &y->s2};
        for (size_t i = 0; i < sizeof f / sizeof *f; i++)
            free(*f[i]);
    }
    free(b->ly);
    void *q[] = {b->tok, b->inp, b->labels, b->idx, b->mlab, b->valid, b->emb, b->x0, b->me,
                 b->se, b->x0d, b->xm, b->hd, b->hg, b->hn, b->mh, b->sh, b->logits, b->probs,
                 b->losses, b->scale, b->bX, b->bR, b->bH, b->dqkv, b->bF1, b->bF2,
                 b->dlogits, b->dK1, b->dK2, b->dK3, b->scr};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++)
        free(q[i]);
    free(b);
}

/* Tokens, masking and labels for n examples starting at global index g0. */
static int make_batch(ftm_model *m, bert *b, const ftm_fb_args *a, long g0, int n)
{
    const ftm_model_config *c = &m->cfg;
    int T = b->T, V = b->V;
    for (int j = 0; j < n; j++) {
        uint64_t g = (uint64_t)(g0 + j), st = a->step;
        int *tok = b->tok + j * T, *inp = b->inp + j * T, *lab = b->labels + j * T;
        int rc = ftm_data_tokens(c->data, c->seed, st * (uint64_t)a->global_batch + g, T, V,
                                 tok, b->valid + j * T);
        if (rc)
            return rc;
        int len = 0, nm = 0;
        while (len < T && b->valid[j * T + len])
            len++;
        for (int t = 0; t < len; t++)
            if (tok[t] < 0 || tok[t] >= V)
                return FTM_ERANGE; /* a token (future label) outside the vocabulary */
        if (len < 2)
            return FTM_EFORMAT;
        int forced = 1 + (int)(ftm_rng_u64(c->seed, st, g, FTM_RNG_FORCE, 0) % (uint64_t)(len - 1));
        for (int t = 0; t < T; t++) {
            inp[t] = tok[t];
            lab[t] = -1;
            if (t == 0 || t >= len)
                continue;
            if (ftm_rng_uniform(c->seed, st, g, FTM_RNG_MASK, (uint64_t)t) >= c->mask_prob)
                continue;
            lab[t] = tok[t];
            nm++;
        }
        if (nm == 0) {
            lab[forced] = tok[forced];
            nm = 1;
        }
        for (int t = 1; t < len; t++) {
            if (lab[t] < 0)
                continue;
            float r = ftm_rng_uniform(c->seed, st, g, FTM_RNG_REPL, (uint64_t)t);
            if (r < 0.8f)
                inp[t] = FTM_TOK_MASK;
            else if (r < 0.9f)
                inp[t] = FTM_TOK_FIRST + (int)(ftm_rng_u64(c->seed, st, g, FTM_RNG_RAND, (uint64_t)t) %
                                               (uint64_t)(V - FTM_TOK_FIRST));
            b->scale[j * T + t] = 1.0f / ((float)nm * (float)a->global_batch);
        }
    }
    return 0;
}

static void drop(ftm_nn_dropout *d, const bert *b, const ftm_model *m,
                 const ftm_fb_args *a, long g0, uint32_t key)
{
    d->p = b->p;
    d->seed = m->cfg.seed;
    d->step = a->step;
    d->first_example = g0;
    d->layer = key;
}

#define P(t) mdl_p(m, (t))
#define G(t) mdl_g(m, (t))
#define ZERO(p, k) memset((p), 0, sizeof(float) * (size_t)(k))

/* Forward and backward of one micro-batch; its sum of loss/B goes to
 * mdl_loss_add. */
/* Encoder layer l forward on X (n sequences, M = n * T rows). */
static void layer_forward(ftm_model *m, bert *b, const ftm_fb_args *a, long g0, int n, int l,
                          const float *X)
{
    int T = b->T, C = b->C, F = b->F, NH = b->NH, M = n * T;
    ftm_gemm_stats *st = &m->gemm;
    ftm_nn_dropout dp;
    layer *y = &b->ly[l];
    ftm_nn_linear_forward(y->qkv, X, P(y->wqkv), P(y->bqkv), M, C, 3 * C, st);
    drop(&dp, b, m, a, g0, FTM_RNG_ATT_DROP + l);
    ftm_nn_attention_forward(y->att, y->probs, b->scr, y->qkv, b->valid, n, T, C, NH, &dp, st);
    ftm_nn_linear_forward(y->ao, y->att, P(y->wo), P(y->bo), M, C, C, st);
    drop(&dp, b, m, a, g0, FTM_RNG_AO_DROP + l);
    ftm_nn_dropout_forward(y->aod, y->ao, n, (size_t)T * C, &dp);
    ftm_nn_add_forward(y->r1, X, y->aod, (size_t)M * C);
    ftm_nn_layernorm_forward(y->h, y->m1, y->s1, y->r1, P(y->g1), P(y->b1), M, C, MODELS_LN_EPS);
    ftm_nn_linear_forward(y->f1, y->h, P(y->w1), P(y->bf1), M, C, F, st);
    ftm_nn_gelu_forward(y->g, y->f1, (size_t)M * F, 0);
    ftm_nn_linear_forward(y->f2, y->g, P(y->w2), P(y->bf2), M, F, C, st);
    drop(&dp, b, m, a, g0, FTM_RNG_FFN_DROP + l);
    ftm_nn_dropout_forward(y->f2d, y->f2, n, (size_t)T * C, &dp);
    ftm_nn_add_forward(y->r2, y->h, y->f2d, (size_t)M * C);
    ftm_nn_layernorm_forward(y->xo, y->m2, y->s2, y->r2, P(y->g2), P(y->b2), M, C, MODELS_LN_EPS);
}

/* The MLM head on the masked rows of X only (*Kout of them) and the loss. */
static int head_forward(ftm_model *m, bert *b, int M, const float *X, int *Kout)
{
    int C = b->C, V = b->V, K = 0, rc;
    ftm_gemm_stats *st = &m->gemm;
    for (int r = 0; r < M; r++)
        if (b->labels[r] >= 0) {
            b->idx[K] = r;
            b->mlab[K] = b->labels[r];
            b->scale[K] = b->scale[r]; /* K <= r: compaction in place is safe */
            memcpy(b->xm + (size_t)K * C, X + (size_t)r * C, sizeof(float) * C);
            K++;
        }
    ftm_nn_linear_forward(b->hd, b->xm, P(b->wh), P(b->bh), K, C, C, st);
    ftm_nn_gelu_forward(b->hg, b->hd, (size_t)K * C, 0);
    ftm_nn_layernorm_forward(b->hn, b->mh, b->sh, b->hg, P(b->gh), P(b->bhn), K, C, MODELS_LN_EPS);
    ftm_nn_linear_forward(b->logits, b->hn, P(b->wte), P(b->bv), K, C, V, st);
    if ((rc = ftm_nn_softmax_xent_forward(b->losses, b->probs, b->logits, b->mlab, K, V)))
        return rc;
    double part = 0.0;
    for (int k = 0; k < K; k++)
        part += (double)b->losses[k] * b->scale[k];
    mdl_loss_add(m, part);
    *Kout = K;
    return 0;
}

/* The head backward; leaves the gradient at the last layer's output in b->bX. */
static void head_backward(ftm_model *m, bert *b, int K, int M)
{
    int C = b->C, V = b->V;
    ftm_gemm_stats *st = &m->gemm;
    ZERO(b->dlogits, (size_t)K * V);
    ftm_nn_softmax_xent_backward(b->dlogits, b->probs, b->mlab, b->scale, K, V);
    ZERO(b->dK1, K * C); ZERO(b->dK2, K * C); ZERO(b->dK3, K * C);
    ftm_nn_linear_backward(b->dK1, G(b->wte), G(b->bv), b->dlogits, b->hn, P(b->wte), K, C, V, st);
    ftm_nn_layernorm_backward(b->dK2, G(b->gh), G(b->bhn), b->dK1, b->hg, P(b->gh), b->mh, b->sh, K, C);
    ZERO(b->dK1, K * C);
    ftm_nn_gelu_backward(b->dK1, b->hd, b->dK2, (size_t)K * C, 0);
    ftm_nn_linear_backward(b->dK3, G(b->wh), G(b->bh), b->dK1, b->xm, P(b->wh), K, C, C, st);
    ZERO(b->bX, M * C);
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++)
            b->bX[(size_t)b->idx[k] * C + c] += b->dK3[(size_t)k * C + c];
}

/* Encoder layer l backward: b->bX holds the gradient at its output, then at
 * its input. */
static void layer_backward(ftm_model *m, bert *b, const ftm_fb_args *a, long g0, int n, int l)
{
    int T = b->T, C = b->C, F = b->F, NH = b->NH, M = n * T;
    ftm_gemm_stats *st = &m->gemm;
    ftm_nn_dropout dp;
    layer *y = &b->ly[l];
    const float *Xin = l ? b->ly[l - 1].xo : b->x0d;
    size_t MC = (size_t)M * C;
    ZERO(b->bR, MC);
    ftm_nn_layernorm_backward(b->bR, G(y->g2), G(y->b2), b->bX, y->r2, P(y->g2), y->m2, y->s2, M, C);
    memcpy(b->bH, b->bR, MC * sizeof(float));
    ZERO(b->bX, MC);
    drop(&dp, b, m, a, g0, FTM_RNG_FFN_DROP + l);
    ftm_nn_dropout_backward(b->bX, b->bR, n, (size_t)T * C, &dp);
    ZERO(b->bF1, (size_t)M * F);
    ftm_nn_linear_backward(b->bF1, G(y->w2), G(y->bf2), b->bX, y->g, P(y->w2), M, F, C, st);
    ZERO(b->bF2, (size_t)M * F);
    ftm_nn_gelu_backward(b->bF2, y->f1, b->bF1, (size_t)M * F, 0);
    ftm_nn_linear_backward(b->bH, G(y->w1), G(y->bf1), b->bF2, y->h, P(y->w1), M, C, F, st);
    ZERO(b->bR, MC);
    ftm_nn_layernorm_backward(b->bR, G(y->g1), G(y->b1), b->bH, y->r1, P(y->g1), y->m1, y->s1, M, C);
    memcpy(b->bX, b->bR, MC * sizeof(float));
    ZERO(b->bH, MC);
    drop(&dp, b, m, a, g0, FTM_RNG_AO_DROP + l);
    ftm_nn_dropout_backward(b->bH, b->bR, n, (size_t)T * C, &dp);
    ZERO(b->bR, MC);
    ftm_nn_linear_backward(b->bR, G(y->wo), G(y->bo), b->bH, y->att, P(y->wo), M, C, C, st);
    ZERO(b->dqkv, 3 * MC);
    drop(&dp, b, m, a, g0, FTM_RNG_ATT_DROP + l);
    ftm_nn_attention_backward(b->dqkv, b->scr, b->bR, y->probs, y->qkv, n, T, C, NH, &dp, st);
    ftm_nn_linear_backward(b->bX, G(y->wqkv), G(y->bqkv), b->dqkv, Xin, P(y->wqkv), M, C, 3 * C, st);
}

static int bert_mb(ftm_model *m, bert *b, const ftm_fb_args *a, long g0, int n)
{
    int T = b->T, C = b->C, M = n * T, K = 0, rc;
    ftm_nn_dropout dp;
    if ((rc = make_batch(m, b, a, g0, n)))
        return rc;
    ftm_nn_embed_forward(b->emb, b->inp, P(b->wte), P(b->wpe), n, T, C);
    ftm_nn_layernorm_forward(b->x0, b->me, b->se, b->emb, P(b->ge), P(b->be), M, C, MODELS_LN_EPS);
    drop(&dp, b, m, a, g0, FTM_RNG_EMB_DROP);
    ftm_nn_dropout_forward(b->x0d, b->x0, n, (size_t)T * C, &dp);
    const float *X = b->x0d;
    for (int l = 0; l < b->L; l++) {
        layer_forward(m, b, a, g0, n, l, X);
        X = b->ly[l].xo;
    }
    if ((rc = head_forward(m, b, M, X, &K)))
        return rc;
    head_backward(m, b, K, M);
    for (int l = b->L - 1; l >= 0; l--)
        layer_backward(m, b, a, g0, n, l);
    ZERO(b->bR, (size_t)M * C);
    drop(&dp, b, m, a, g0, FTM_RNG_EMB_DROP);
    ftm_nn_dropout_backward(b->bR, b->bX, n, (size_t)T * C, &dp);
    ZERO(b->bH, (size_t)M * C);
    ftm_nn_layernorm_backward(b->bH, G(b->ge), G(b->be), b->bR, b->emb, P(b->ge), b->me, b->se, M, C);
    ftm_nn_embed_backward(G(b->wte), G(b->wpe), b->bH, b->inp, n, T, C);
    return 0;
}

static int bert_fb(ftm_model *m, const ftm_fb_args *a, const mdl_mb *mbs, int nmb)
{
    bert *b = m->impl;
    for (int i = 0; i < nmb; i++)
        if (mbs[i].n > b->rows)
            return FTM_EINVAL; /* a micro-batch larger than the config's micro */
    for (int i = 0; i < nmb; i++) {
        int rc = bert_mb(m, b, a, a->first + mbs[i].off, (int)mbs[i].n);
        for (int t = 0; !rc && t < m->ntensors; t++)
            rc = mdl_flush(m, a, t);
        if (rc)
            return rc;
    }
    return 0;
}

int models_bert_init(ftm_model *m)
{
    ftm_model_config *c = &m->cfg;
    if (c->hidden == 0) c->hidden = 64;
    if (c->seq == 0) c->seq = 32;
    if (c->vocab == 0) c->vocab = 1000;
    if (c->mask_prob == 0.0f) c->mask_prob = 0.15f;
    if (c->depth <= 0 || c->heads <= 0 || c->hidden % c->heads || c->seq < 2 ||
        c->vocab <= FTM_TOK_FIRST || !(c->mask_prob > 0.0f && c->mask_prob <= 1.0f) ||
        c->dropout >= 1.0f)
        return FTM_EINVAL;
    bert *b = calloc(1, sizeof *b);
    if (!b)
        return FTM_ENOMEM;
    m->impl = b;
    m->free_impl = bert_free;
    m->fb = bert_fb;
    int V = c->vocab, T = c->seq, C = c->hidden, F = 4 * C, NH = c->heads;
    b->V = V; b->T = T; b->C = C; b->L = c->depth; b->NH = NH; b->F = F;
    b->p = c->dropout < 0.0f ? 0.0f : c->dropout == 0.0f ? 0.1f : c->dropout;
    const float sd = MODELS_BERT_INIT_SD;
    b->wte = mdl_add(m, "wte", (size_t)V * C, MDL_INIT_NORMAL, sd, 1);
    b->wpe = mdl_add(m, "wpe", (size_t)T * C, MDL_INIT_NORMAL, sd, 1);
    b->ge = mdl_add(m, "emb.ln.g", C, MDL_INIT_ONE, 0, 0);
    b->be = mdl_add(m, "emb.ln.b", C, MDL_INIT_ZERO, 0, 0);
    if (!(b->ly = calloc((size_t)b->L, sizeof(layer))))
        return FTM_ENOMEM;
    /* activations of one micro-batch at a time (bert_fb) */
    b->rows = c->micro > 0 && c->micro < c->max_batch ? c->micro : c->max_batch;
    size_t R = (size_t)b->rows * T, MC = R * C;
    int ok = 1;
    for (int l = 0; l < b->L; l++) {
        layer *y = &b->ly[l];
        char nm[MDL_NAME];
#define ADD(field, suffix, count, init, s, dec) \
        (snprintf(nm, sizeof nm, "l%d.%s", l, suffix), y->field = mdl_add(m, nm, count, init, s, dec))
        ADD(wqkv, "wqkv", (size_t)3 * C * C, MDL_INIT_NORMAL, sd, 1);
        ADD(bqkv, "bqkv", (size_t)3 * C, MDL_INIT_ZERO, 0, 0);
        ADD(wo, "wo", (size_t)C * C, MDL_INIT_NORMAL, sd, 1);
        ADD(bo, "bo", C, MDL_INIT_ZERO, 0, 0);
        ADD(g1, "ln1.g", C, MDL_INIT_ONE, 0, 0);
        ADD(b1, "ln1.b", C, MDL_INIT_ZERO, 0, 0);
        ADD(w1, "ffn.w1", (size_t)F * C, MDL_INIT_NORMAL, sd, 1);
        ADD(bf1, "ffn.b1", F, MDL_INIT_ZERO, 0, 0);
        ADD(w2, "ffn.w2", (size_t)C * F, MDL_INIT_NORMAL, sd, 1);
        ADD(bf2, "ffn.b2", C, MDL_INIT_ZERO, 0, 0);
        ADD(g2, "ln2.g", C, MDL_INIT_ONE, 0, 0);
        ADD(b2, "ln2.b", C, MDL_INIT_ZERO, 0, 0);
#undef ADD
        ok = ok && ALLOC(y->qkv, 3 * MC) && ALLOC(y->probs, (size_t)b->rows * NH * T * T) &&
             ALLOC(y->att, MC) && ALLOC(y->ao, MC) && ALLOC(y->aod, MC) && ALLOC(y->r1, MC) &&
             ALLOC(y->h, MC) && ALLOC(y->m1, R) && ALLOC(y->s1, R) && ALLOC(y->f1, R * F) &&
             ALLOC(y->g, R * F) && ALLOC(y->f2, MC) && ALLOC(y->f2d, MC) && ALLOC(y->r2, MC) &&
             ALLOC(y->xo, MC) && ALLOC(y->m2, R) && ALLOC(y->s2, R);
    }
    b->wh = mdl_add(m, "head.w", (size_t)C * C, MDL_INIT_NORMAL, sd, 1);
    b->bh = mdl_add(m, "head.b", C, MDL_INIT_ZERO, 0, 0);
    b->gh = mdl_add(m, "head.ln.g", C, MDL_INIT_ONE, 0, 0);
    b->bhn = mdl_add(m, "head.ln.b", C, MDL_INIT_ZERO, 0, 0);
    b->bv = mdl_add(m, "head.bias", V, MDL_INIT_ZERO, 0, 0);
    ok = ok && b->bv >= 0 && ALLOC(b->tok, R) && ALLOC(b->inp, R) && ALLOC(b->labels, R) &&
         ALLOC(b->idx, R) && ALLOC(b->mlab, R) && ALLOC(b->valid, R) && ALLOC(b->emb, MC) &&
         ALLOC(b->x0, MC) && ALLOC(b->me, R) && ALLOC(b->se, R) && ALLOC(b->x0d, MC) &&
         ALLOC(b->xm, MC) && ALLOC(b->hd, MC) && ALLOC(b->hg, MC) && ALLOC(b->hn, MC) &&
         ALLOC(b->mh, R) && ALLOC(b->sh, R) && ALLOC(b->logits, R * V) &&
         ALLOC(b->probs, R * V) && ALLOC(b->losses, R) && ALLOC(b->scale, R) &&
         ALLOC(b->bX, MC) && ALLOC(b->bR, MC) && ALLOC(b->bH, MC) && ALLOC(b->dqkv, 3 * MC) &&
         ALLOC(b->bF1, R * F) && ALLOC(b->bF2, R * F) && ALLOC(b->dlogits, R * V) &&
         ALLOC(b->dK1, MC) && ALLOC(b->dK2, MC) && ALLOC(b->dK3, MC) &&
         ALLOC(b->scr, 2 * (size_t)T * T);
    if (!ok)
        return FTM_ENOMEM;
    return mdl_alloc(m);
}
