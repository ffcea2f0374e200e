/* Batch norm (phased, statistics from the caller), ReLU, residual add,
 * global average pooling, linear, softmax cross-entropy. */
#include <math.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/nn.h"

/* Lanes of the per-channel double sums: independent accumulators the
 * compiler can keep in vector registers; the lanes are added in a fixed
 * order, so a sum depends only on the data and its shape. */
#define BN_LANES 8

/* AVX-512 and AVX2 clones of the batch-norm and elementwise loops, picked at load time
 * (ifunc). Same bits as the default clone: -std=c11 contracts nothing into
 * FMAs and the vectoriser does not reassociate, so wider vectors only run
 * the same operations in the same order. */
#define NN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* Row helpers: inlined into the clones, so they get the clone's target. */
#define NN_INLINE static inline __attribute__((always_inline))

/* s1 += sum p, s2 += sum p^2 over lanes of one channel row. */
NN_INLINE void bn_row_sums(double *restrict s1, double *restrict s2,   /* BN_LANES */
                        const float *restrict p, int HW)
{
    int i = 0;
    for (; i + BN_LANES <= HW; i += BN_LANES)
        for (int j = 0; j < BN_LANES; j++) {
            double v = p[i + j];
            s1[j] += v;
            s2[j] += v * v;
        }
    for (int j = 0; i < HW; i++, j++) {
        double v = p[i];
        s1[j] += v;
        s2[j] += v * v;
    }
}

static double lanes_sum(const double *a)
{
    double s = 0.0;
    for (int j = 0; j < BN_LANES; j++)
        s += a[j];
    return s;
}

NN_CLONES void ftm_nn_bn_partial(double *s, const float *x, int N, int C, int HW)
{
    for (int c = 0; c < C; c++) {
        double s1[BN_LANES] = {0}, s2[BN_LANES] = {0};
        for (int n = 0; n < N; n++)
            bn_row_sums(s1, s2, x + ((size_t)n * C + c) * HW, HW);
        s[c] = lanes_sum(s1);
        s[C + c] = lanes_sum(s2);
    }
}

void ftm_nn_bn_stats(float *mean, float *rstd, const double *s, double count,
                     float eps, int C)
{
    for (int c = 0; c < C; c++) {
        double m = s[c] / count;
        double var = s[C + c] / count - m * m;
        if (var < 0.0)
            var = 0.0;
        mean[c] = (float)m;
        rstd[c] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

/* out = gamma (x - mean) rstd + beta, then max(., 0) if relu. */
NN_CLONES static void bn_apply(float *restrict out, const float *restrict x, const float *mean,
                     const float *rstd, const float *gamma, const float *beta,
                     int N, int C, int HW, int relu)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t o = ((size_t)n * C + c) * HW;
            float m = mean[c], r = rstd[c], g = gamma[c], b = beta[c];
            float *restrict y = out + o;
            const float *restrict v = x + o;
            if (relu)
                for (int i = 0; i < HW; i++) {
                    float t = g * ((v[i] - m) * r) + b;
                    y[i] = t > 0.0f ? t : 0.0f;
                }
            else
                for (int i = 0; i < HW; i++)
                    y[i] = g * ((v[i] - m) * r) + b;
        }
}

/* out = max(gamma (x - mean) rstd + beta + res, 0), rounded step by step
 * as bn_forward then add_relu_forward: the same bits, one pass. */
NN_CLONES void ftm_nn_bn_add_relu_forward(float *restrict out, const float *restrict x,
                                          const float *mean, const float *rstd,
                                          const float *gamma, const float *beta,
                                          const float *restrict res, int N, int C, int HW)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t o = ((size_t)n * C + c) * HW;
            float m = mean[c], r = rstd[c], g = gamma[c], b = beta[c];
            for (int i = 0; i < HW; i++) {
                float y = g * ((x[o + i] - m) * r) + b;
                float t = y + res[o + i];
                out[o + i] = t > 0.0f ? t : 0.0f;
            }
        }
}

void ftm_nn_bn_forward(float *out, const float *x, const float *mean,
                       const float *rstd, const float *gamma, const float *beta,
                       int N, int C, int HW)
{
    bn_apply(out, x, mean, rstd, gamma, beta, N, C, HW, 0);
}

void ftm_nn_bn_relu_forward(float *out, const float *x, const float *mean,
                            const float *rstd, const float *gamma,
                            const float *beta, int N, int C, int HW)
{
    bn_apply(out, x, mean, rstd, gamma, beta, N, C, HW, 1);
}

/* Gradient at the BN output: dout, or dout where the ReLU output out > 0
 * (out NULL = no ReLU). Loaded unconditionally so the loops vectorise. */
static inline float bn_dy(const float *restrict dout, const float *restrict out, size_t i)
{
    float g = dout[i];
    return out && !(out[i] > 0.0f) ? 0.0f : g;
}

/* dout[i] where out[i] > 0, else +0: a bit mask (no branch, no 0*inf). */
static inline float relu_dy(const float *restrict dout, const float *restrict out, size_t i)
{
    float g = dout[i];
    uint32_t b;
    memcpy(&b, &g, sizeof b);
    b &= -(uint32_t)(out[i] > 0.0f);
    memcpy(&g, &b, sizeof g);
    return g;
}

/* s1, s2 (BN_LANES each) += sum dy, sum dy*xhat over one row; the masked
 * and unmasked loops are written out so each is free of branches. */
#define BN_GRAD_ROW(name, DY)                                                        \
    NN_INLINE void name(double *restrict s1, double *restrict s2,                    \
                     const float *restrict dout, const float *restrict out,          \
                     const float *restrict v, float m, float r, int HW)              \
    {                                                                                \
        int i = 0;                                                                   \
        for (; i + BN_LANES <= HW; i += BN_LANES)                                    \
            for (int j = 0; j < BN_LANES; j++) {                                     \
                float g = DY(i + j), xh = (v[i + j] - m) * r;                        \
                s1[j] += g;                                                          \
                s2[j] += (double)g * xh;                                             \
            }                                                                        \
        for (int j = 0; i < HW; i++, j++) {                                          \
            float g = DY(i), xh = (v[i] - m) * r;                                    \
            s1[j] += g;                                                              \
            s2[j] += (double)g * xh;                                                 \
        }                                                                            \
    }
#define DY_PLAIN(i) ((void)out, dout[i])
#define DY_RELU(i) relu_dy(dout, out, (size_t)(i))
BN_GRAD_ROW(bn_grad_row, DY_PLAIN)
BN_GRAD_ROW(bn_relu_grad_row, DY_RELU)

NN_CLONES static void bn_grad_sums(double *s, const float *dout, const float *out, const float *x,
                         const float *mean, const float *rstd, int N, int C, int HW)
{
    for (int c = 0; c < C; c++) {
        double s1[BN_LANES] = {0}, s2[BN_LANES] = {0};
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            if (out) /* both inlined into this function's clones */
                bn_relu_grad_row(s1, s2, dout + o, out + o, x + o, mean[c], rstd[c], HW);
            else
                bn_grad_row(s1, s2, dout + o, NULL, x + o, mean[c], rstd[c], HW);
        }
        s[c] = lanes_sum(s1);
        s[C + c] = lanes_sum(s2);
    }
}

void ftm_nn_bn_backward_partial(double *s, const float *dy, const float *x,
                                const float *mean, const float *rstd,
                                int N, int C, int HW)
{
    bn_grad_sums(s, dy, NULL, x, mean, rstd, N, C, HW);
}

void ftm_nn_bn_relu_backward_partial(double *s, const float *dout, const float *out,
                                     const float *x, const float *mean,
                                     const float *rstd, int N, int C, int HW)
{
    bn_grad_sums(s, dout, out, x, mean, rstd, N, C, HW);
}

/* dx += k (dy - mdy - xhat mdyx) over one row; store: dx = +0 + (...),
 * the same bits as += into a zeroed dx, without the zeroing pass. */
NN_INLINE void bn_dx_row(float *restrict dx, const float *restrict dout,
                         const float *restrict out, const float *restrict v, float m,
                         float r, float k, float mdy, float mdyx, int HW, int store)
{
    if (store)
        for (int i = 0; i < HW; i++) {
            float xh = (v[i] - m) * r;
            dx[i] = 0.0f + k * (bn_dy(dout, out, (size_t)i) - mdy - xh * mdyx);
        }
    else
        for (int i = 0; i < HW; i++) {
            float xh = (v[i] - m) * r;
            dx[i] += k * (bn_dy(dout, out, (size_t)i) - mdy - xh * mdyx);
        }
}

NN_CLONES static void bn_dx(float *dx, const float *dout, const float *out, const float *x,
                            const float *mean, const float *rstd, const float *gamma,
                            const double *gs, double count, int N, int C, int HW, int store)
{
    for (int c = 0; c < C; c++) {
        float m = mean[c], r = rstd[c];
        float mdy = (float)(gs[c] / count), mdyx = (float)(gs[C + c] / count);
        float k = gamma[c] * r;
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            if (out)
                bn_dx_row(dx + o, dout + o, out + o, x + o, m, r, k, mdy, mdyx, HW, store);
            else
                bn_dx_row(dx + o, dout + o, NULL, x + o, m, r, k, mdy, mdyx, HW, store);
        }
    }
}

void ftm_nn_bn_backward(float *dx, const float *dy, const float *x,
                        const float *mean, const float *rstd,
                        const float *gamma, const double *gs, double count,
                        int N, int C, int HW)
{
    bn_dx(dx, dy, NULL, x, mean, rstd, gamma, gs, count, N, C, HW, 0);
}

void ftm_nn_bn_relu_backward(float *dx, const float *dout, const float *out,
                             const float *x, const float *mean, const float *rstd,
                             const float *gamma, const double *gs, double count,
                             int N, int C, int HW)
{
    bn_dx(dx, dout, out, x, mean, rstd, gamma, gs, count, N, C, HW, 0);
}

void ftm_nn_bn_backward_store(float *dx, const float *dy, const float *x,
                              const float *mean, const float *rstd,
                              const float *gamma, const double *gs, double count,
                              int N, int C, int HW)
{
    bn_dx(dx, dy, NULL, x, mean, rstd, gamma, gs, count, N, C, HW, 1);
}

void ftm_nn_bn_relu_backward_store(float *dx, const float *dout, const float *out,
                                   const float *x, const float *mean, const float *rstd,
                                   const float *gamma, const double *gs, double count,
                                   int N, int C, int HW)
{
    bn_dx(dx, dout, out, x, mean, rstd, gamma, gs, count, N, C, HW, 1);
}

/* Branch-free (a select the compiler vectorises): ReLU masks are random. */
void ftm_nn_relu_forward(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

NN_CLONES void ftm_nn_relu_backward(float *restrict dinp, const float *restrict out,
                          const float *restrict dout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = dout[i];          /* loaded unconditionally: a select, not a branch */
        dinp[i] += out[i] > 0.0f ? g : 0.0f;
    }
}

NN_CLONES void ftm_nn_relu_backward_store(float *restrict dinp, const float *restrict out,
                                          const float *restrict dout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = dout[i];
        dinp[i] = 0.0f + (out[i] > 0.0f ? g : 0.0f);
    }
}

void ftm_nn_add_forward(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

NN_CLONES void ftm_nn_add_relu_forward(float *restrict out, const float *restrict a,
                             const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float t = a[i] + b[i];
        out[i] = t > 0.0f ? t : 0.0f;
    }
}

void ftm_nn_add_backward(float *restrict da, float *restrict db,
                         const float *restrict dout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

void ftm_nn_avgpool_forward(float *out, const float *inp, int N, int C, int HW)
{
    for (size_t r = 0; r < (size_t)N * C; r++) {
        float s = 0.0f;
        for (int i = 0; i < HW; i++)
            s += inp[r * HW + i];
        out[r] = s / (float)HW;
    }
}

void ftm_nn_avgpool_backward(float *dinp, const float *dout, int N, int C,
                             int HW)
{
    for (size_t r = 0; r < (size_t)N * C; r++) {
        float g = dout[r] / (float)HW;
        for (int i = 0; i < HW; i++)
            dinp[r * HW + i] += g;
    }
}

void ftm_nn_linear_forward(float *out, const float *inp, const float *w,
                           const float *b, int N, int IN, int OUT,
                           ftm_gemm_stats *st)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++)
            out[(size_t)n * OUT + o] = b ? b[o] : 0.0f;
    ftm_nn_sgemm(st, 0, 1, N, OUT, IN, 1.0f, inp, IN, w, IN, 1.0f, out, OUT);
}

void ftm_nn_linear_backward(float *dinp, float *dw, float *db,
                            const float *dout, const float *inp,
                            const float *w, int N, int IN, int OUT,
                            ftm_gemm_stats *st)
{
    if (dinp)
        ftm_nn_sgemm(st, 0, 0, N, IN, OUT, 1.0f, dout, OUT, w, IN, 1.0f, dinp, IN);
    ftm_nn_sgemm(st, 1, 0, OUT, IN, N, 1.0f, dout, OUT, inp, IN, 1.0f, dw, IN);
    if (db)
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OUT; o++)
                db[o] += dout[(size_t)n * OUT + o];
}

int ftm_nn_softmax_xent_forward(float *losses, float *probs,
                                const float *logits, const int *labels,
                                int N, int V)
{
    for (int n = 0; n < N; n++) /* checked first: nothing is read out of bounds */
        if (labels[n] < -1 || labels[n] >= V)
            return FTM_ERANGE;
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        float mx = z[0];
        for (int v = 1; v < V; v++)
            if (z[v] > mx)
                mx = z[v];
        double sum = 0.0;
        for (int v = 0; v < V; v++) {
            p[v] = expf(z[v] - mx);
            sum += p[v];
        }
        float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++)
            p[v] *= inv;
        int y = labels[n];
        losses[n] = y >= 0 ? (float)(log(sum) - (double)(z[y] - mx)) : 0.0f;
    }
    return 0;
}

void ftm_nn_softmax_xent_backward(float *dlogits, const float *probs,
                                  const int *labels, const float *scale,
                                  int N, int V)
{
    for (int n = 0; n < N; n++) {
        int y = labels[n];
        if (y < 0)
            continue;
        const float *p = probs + (size_t)n * V;
        float *d = dlogits + (size_t)n * V, s = scale[n];
        for (int v = 0; v < V; v++)
            d[v] += s * (p[v] - (v == y ? 1.0f : 0.0f));
    }
}
