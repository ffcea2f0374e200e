/* Transformer layers: embeddings, layer norm, GELU, dropout, multi-head
 * self-attention (two GEMMs per head and example). Layer norm and the
 * attention backward follow the derivations in karpathy/llm.c
 * train_gpt2.c (facts, not code). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "ftmesh/nn.h"
#include "ftmesh/rng.h"

void ftm_nn_embed_forward(float *out, const int *tok, const float *wte,
                          const float *wpe, int N, int T, int C)
{
    for (int n = 0; n < N; n++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)n * T + t) * C;
            const float *e = wte + (size_t)tok[n * T + t] * C, *p = wpe + (size_t)t * C;
            for (int c = 0; c < C; c++)
                o[c] = e[c] + p[c];
        }
}

void ftm_nn_embed_backward(float *dwte, float *dwpe, const float *dout,
                           const int *tok, int N, int T, int C)
{
    for (int n = 0; n < N; n++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)n * T + t) * C;
            float *e = dwte + (size_t)tok[n * T + t] * C, *p = dwpe + (size_t)t * C;
            for (int c = 0; c < C; c++) {
                e[c] += d[c];
                p[c] += d[c];
            }
        }
}

void ftm_nn_layernorm_forward(float *out, float *mean, float *rstd,
                              const float *inp, const float *gamma,
                              const float *beta, int R, int C, float eps)
{
    for (int r = 0; r < R; r++) {
        const float *x = inp + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float m = 0.0f, v = 0.0f;
        for (int c = 0; c < C; c++)
            m += x[c];
        m /= (float)C;
        for (int c = 0; c < C; c++)
            v += (x[c] - m) * (x[c] - m);
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        for (int c = 0; c < C; c++)
            o[c] = (x[c] - m) * s * gamma[c] + beta[c];
        mean[r] = m;
        rstd[r] = s;
    }
}

void ftm_nn_layernorm_backward(float *dinp, float *dgamma, float *dbeta,
                               const float *dout, const float *inp,
                               const float *gamma, const float *mean,
                               const float *rstd, int R, int C)
{
    for (int r = 0; r < R; r++) {
        const float *x = inp + (size_t)r * C, *dy = dout + (size_t)r * C;
        float *dx = dinp + (size_t)r * C, m = mean[r], s = rstd[r];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = gamma[c] * dy[c];
            dnorm_mean += dn;
            dnorm_norm_mean += dn * xh;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = gamma[c] * dy[c];
            dbeta[c] += dy[c];
            dgamma[c] += xh * dy[c];
            dx[c] += (dn - dnorm_mean - xh * dnorm_norm_mean) * s;
        }
    }
}

#define GELU_K 0.7978845608028654f   /* sqrt(2/pi) */
#define GELU_C 0.044715f

/* c ? a : b as bit operations, so that loops using it stay branch-free
 * (GCC does not if-convert these selects) and vectorise. */
static inline float select_f(int c, float a, float b)
{
    uint32_t ua, ub, m = -(uint32_t)(c != 0);
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, sizeof a);
    return a;
}

/* exp(x) for x <= 0 in plain arithmetic the compiler vectorises: Cody-Waite
 * reduction x = n ln2 + r, |r| <= ln2/2, a degree-6 Taylor polynomial
 * (error < 2e-7 relative), times 2^n built in the exponent bits. */
static inline float exp_neg(float x)
{
    x = select_f(x > -87.0f, x, -87.0f);
    float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;   /* round(x/ln2) */
    float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 +
              r * (1.0f / 120 + r * (1.0f / 720))))));
    int32_t e = ((int32_t)n + 127) * (1 << 23);
    float two_n;
    memcpy(&two_n, &e, sizeof two_n);
    return p * two_n;
}

/* 1 + erf(x / sqrt 2) = 2 Phi(x), and e = exp(-x^2/2): Abramowitz & Stegun
 * 7.1.26 (|error| of erf <= 1.5e-7, the formula ATen's vectorised erf uses),
 * written as 2 - q or q so that the negative tail is not a difference. */
static inline float gelu_cdf2(float x, float *e)
{
    const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f,
                a3 = 1.421413741f, a4 = -1.453152027f, a5 = 1.061405429f;
    float z = fabsf(x) * 0.70710678118654752f, t = 1.0f / (1.0f + p * z);
    *e = exp_neg(-0.5f * x * x);
    float q = t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5)))) * *e, c = 2.0f - q;
    return select_f(x >= 0.0f, c, q);
}

void ftm_nn_gelu_forward(float *out, const float *inp, size_t n, int tanh_approx)
{
    if (tanh_approx) {
        for (size_t i = 0; i < n; i++) {
            float x = inp[i];
            out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C * x * x * x)));
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float x = inp[i], e;
        out[i] = 0.5f * x * gelu_cdf2(x, &e);
    }
}

void ftm_nn_gelu_backward(float *dinp, const float *inp, const float *dout,
                          size_t n, int tanh_approx)
{
    if (tanh_approx) {
        for (size_t i = 0; i < n; i++) {
            float x = inp[i];
            float t = tanhf(GELU_K * (x + GELU_C * x * x * x));
            dinp[i] += (0.5f * (1.0f + t) +
                        0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x)) *
                       dout[i];
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float x = inp[i], e, c = gelu_cdf2(x, &e);
        dinp[i] += (0.5f * c + x * 0.39894228040143268f * e) * dout[i];
    }
}

/* Dropout of example n: the RNG key prefix (seed, step, example, layer) is
 * mixed once, then one mix per element (the same bits as ftm_rng_uniform
 * on the whole key). keep = 1/(1-p) or 0. */
typedef struct drop_ex {
    uint64_t prefix;
    float p, keep;
} drop_ex;

static inline drop_ex drop_example(const ftm_nn_dropout *dp, int n)
{
    drop_ex x = {ftm_rng_prefix(dp->seed, dp->step, (uint64_t)(dp->first_example + n),
                                dp->layer),
                 dp->p, 1.0f / (1.0f - dp->p)};
    return x;
}

static inline float keep_scale(const drop_ex *x, size_t e)
{
    return ftm_rng_to_uniform(ftm_rng_u64_at(x->prefix, e)) >= x->p ? x->keep : 0.0f;
}

static int dropout_on(const ftm_nn_dropout *dp)
{
    return dp && dp->p > 0.0f;
}

void ftm_nn_dropout_forward(float *out, const float *inp, int N, size_t E,
                            const ftm_nn_dropout *dp)
{
    if (!dropout_on(dp)) {
        if (out != inp)
            memcpy(out, inp, sizeof(float) * (size_t)N * E);
        return;
    }
    for (int n = 0; n < N; n++) {
        drop_ex x = drop_example(dp, n);
        for (size_t e = 0; e < E; e++) {
            size_t i = (size_t)n * E + e;
            out[i] = inp[i] * keep_scale(&x, e);
        }
    }
}

void ftm_nn_dropout_backward(float *dinp, const float *dout, int N, size_t E,
                             const ftm_nn_dropout *dp)
{
    size_t NE = (size_t)N * E;
    if (!dropout_on(dp)) {
        for (size_t i = 0; i < NE; i++)
            dinp[i] += dout[i];
        return;
    }
    for (int n = 0; n < N; n++) {
        drop_ex x = drop_example(dp, n);
        for (size_t e = 0; e < E; e++) {
            size_t i = (size_t)n * E + e;
            dinp[i] += dout[i] * keep_scale(&x, e);
        }
    }
}

/* Pd = dropout(P) for head h of example n into dst (or P itself). */
static const float *dropped(float *dst, const float *P, int n, int h, int T,
                            const ftm_nn_dropout *dp)
{
    if (!dropout_on(dp))
        return P;
    drop_ex x = drop_example(dp, n);
    for (int i = 0; i < T * T; i++)
        dst[i] = P[i] * keep_scale(&x, (size_t)h * T * T + (size_t)i);
    return dst;
}

void ftm_nn_attention_forward(float *out, float *probs, float *scratch,
                              const float *qkv, const unsigned char *valid,
                              int N, int T, int C, int NH,
                              const ftm_nn_dropout *dp, ftm_gemm_stats *st)
{
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            const float *Q = qkv + (size_t)n * T * C3 + h * hd;
            const float *K = Q + C, *V = Q + 2 * C;
            float *P = probs + ((size_t)n * NH + h) * T * T;
            const unsigned char *ok = valid + (size_t)n * T;
            ftm_nn_sgemm(st, 0, 1, T, T, hd, scale, Q, C3, K, C3, 0.0f, P, T);
            for (int i = 0; i < T; i++) {
                float *row = P + (size_t)i * T, mx = -INFINITY, sum = 0.0f;
                for (int j = 0; j < T; j++)
                    if (ok[j] && row[j] > mx)
                        mx = row[j];
                for (int j = 0; j < T; j++) {
                    row[j] = ok[j] ? expf(row[j] - mx) : 0.0f;
                    sum += row[j];
                }
                float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
                for (int j = 0; j < T; j++)
                    row[j] *= inv;
            }
            const float *Pd = dropped(scratch, P, n, h, T, dp);
            ftm_nn_sgemm(st, 0, 0, T, hd, T, 1.0f, Pd, T, V, C3, 0.0f,
                         out + (size_t)n * T * C + h * hd, C);
        }
}

void ftm_nn_attention_backward(float *dqkv, float *scratch, const float *dout,
                               const float *probs, const float *qkv,
                               int N, int T, int C, int NH,
                               const ftm_nn_dropout *dp, ftm_gemm_stats *st)
{
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    float *dP = scratch, *Pdbuf = scratch + (size_t)T * T;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            size_t qo = (size_t)n * T * C3 + h * hd;
            const float *Q = qkv + qo, *K = Q + C, *V = Q + 2 * C;
            float *dQ = dqkv + qo, *dK = dQ + C, *dV = dQ + 2 * C;
            const float *dY = dout + (size_t)n * T * C + h * hd;
            const float *P = probs + ((size_t)n * NH + h) * T * T;
            const float *Pd = dropped(Pdbuf, P, n, h, T, dp);
            ftm_nn_sgemm(st, 0, 1, T, T, hd, 1.0f, dY, C, V, C3, 0.0f, dP, T);
            ftm_nn_sgemm(st, 1, 0, T, hd, T, 1.0f, Pd, T, dY, C, 1.0f, dV, C3);
            if (Pd != P) { /* d(Pd)/d(P) is the same keep/(1-p) factor */
                drop_ex x = drop_example(dp, n);
                for (int i = 0; i < T * T; i++)
                    dP[i] *= keep_scale(&x, (size_t)h * T * T + (size_t)i);
            }
            for (int i = 0; i < T; i++) {
                const float *p = P + (size_t)i * T;
                float *d = dP + (size_t)i * T, dot = 0.0f;
                for (int j = 0; j < T; j++)
                    dot += p[j] * d[j];
                for (int j = 0; j < T; j++)
                    d[j] = p[j] * (d[j] - dot);
            }
            ftm_nn_sgemm(st, 0, 0, T, hd, T, scale, dP, T, K, C3, 1.0f, dQ, C3);
            ftm_nn_sgemm(st, 1, 0, T, hd, T, scale, dP, T, Q, C3, 1.0f, dK, C3);
        }
}
