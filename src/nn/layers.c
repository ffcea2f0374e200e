/* Batch norm (phased, statistics from the caller), ReLU, residual add,
 * global average pooling, linear, softmax cross-entropy. */
#include <math.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/nn.h"

void ftm_nn_bn_partial(double *s, const float *x, int N, int C, int HW)
{
    for (int c = 0; c < C; c++) {
        double s1 = 0.0, s2 = 0.0;
        for (int n = 0; n < N; n++) {
            const float *p = x + ((size_t)n * C + c) * HW;
            for (int i = 0; i < HW; i++) {
                double v = p[i];
                s1 += v;
                s2 += v * v;
            }
        }
        s[c] = s1;
        s[C + c] = s2;
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

void ftm_nn_bn_forward(float *out, const float *x, const float *mean,
                       const float *rstd, const float *gamma, const float *beta,
                       int N, int C, int HW)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t o = ((size_t)n * C + c) * HW;
            float m = mean[c], r = rstd[c], g = gamma[c], b = beta[c];
            for (int i = 0; i < HW; i++)
                out[o + i] = g * ((x[o + i] - m) * r) + b;
        }
}

void ftm_nn_bn_backward_partial(double *s, const float *dy, const float *x,
                                const float *mean, const float *rstd,
                                int N, int C, int HW)
{
    for (int c = 0; c < C; c++) {
        double s1 = 0.0, s2 = 0.0;
        float m = mean[c], r = rstd[c];
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            for (int i = 0; i < HW; i++) {
                float xh = (x[o + i] - m) * r;
                s1 += dy[o + i];
                s2 += (double)dy[o + i] * xh;
            }
        }
        s[c] = s1;
        s[C + c] = s2;
    }
}

void ftm_nn_bn_backward(float *dx, const float *dy, const float *x,
                        const float *mean, const float *rstd,
                        const float *gamma, const double *gs, double count,
                        int N, int C, int HW)
{
    for (int c = 0; c < C; c++) {
        float m = mean[c], r = rstd[c];
        float mdy = (float)(gs[c] / count), mdyx = (float)(gs[C + c] / count);
        float k = gamma[c] * r;
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            for (int i = 0; i < HW; i++) {
                float xh = (x[o + i] - m) * r;
                dx[o + i] += k * (dy[o + i] - mdy - xh * mdyx);
            }
        }
    }
}

void ftm_nn_relu_forward(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void ftm_nn_relu_backward(float *dinp, const float *out, const float *dout,
                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] > 0.0f)
            dinp[i] += dout[i];
}

void ftm_nn_add_forward(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void ftm_nn_add_backward(float *da, float *db, const float *dout, size_t n)
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
