/* Convolution as im2col + GEMM (Caffe/darknet): per image
 *   out[OC, OH*OW]  = W[OC, C*K*K] . col[C*K*K, OH*OW]
 *   dW             += dout . col^T                    (beta = 1)
 *   dcol            = W^T . dout, then col2im adds it into dinp.
 * A 1x1 stride-1 unpadded convolution uses the image itself as col. */
#include <string.h>
#include "ftmesh/nn.h"
#include "ftmesh/error.h"

int ftm_nn_conv_dims(ftm_conv_dims *d, int C, int H, int W, int OC, int K,
                     int stride, int pad)
{
    if (C <= 0 || H <= 0 || W <= 0 || OC <= 0 || K <= 0 || stride <= 0 ||
        pad < 0 || H + 2 * pad < K || W + 2 * pad < K)
        return FTM_EINVAL;
    d->C = C; d->H = H; d->W = W; d->OC = OC; d->K = K;
    d->stride = stride; d->pad = pad;
    d->OH = (H + 2 * pad - K) / stride + 1;
    d->OW = (W + 2 * pad - K) / stride + 1;
    return 0;
}

static int is_pointwise(const ftm_conv_dims *d)
{
    return d->K == 1 && d->stride == 1 && d->pad == 0;
}

size_t ftm_nn_conv_col_size(const ftm_conv_dims *d)
{
    if (is_pointwise(d))
        return 0;
    return (size_t)d->C * d->K * d->K * d->OH * d->OW;
}

static void im2col(float *col, const float *img, const ftm_conv_dims *d)
{
    int K = d->K, P = d->OH * d->OW;
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                float *row = col + (size_t)((c * K + kh) * K + kw) * P;
                const float *ch = img + (size_t)c * d->H * d->W;
                for (int oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->stride - d->pad + kh;
                    float *r = row + oh * d->OW;
                    if (ih < 0 || ih >= d->H) {
                        memset(r, 0, sizeof(float) * (size_t)d->OW);
                        continue;
                    }
                    for (int ow = 0; ow < d->OW; ow++) {
                        int iw = ow * d->stride - d->pad + kw;
                        r[ow] = (iw >= 0 && iw < d->W) ? ch[ih * d->W + iw] : 0.0f;
                    }
                }
            }
}

static void col2im_add(float *img, const float *col, const ftm_conv_dims *d)
{
    int K = d->K, P = d->OH * d->OW;
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                const float *row = col + (size_t)((c * K + kh) * K + kw) * P;
                float *ch = img + (size_t)c * d->H * d->W;
                for (int oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->stride - d->pad + kh;
                    if (ih < 0 || ih >= d->H)
                        continue;
                    for (int ow = 0; ow < d->OW; ow++) {
                        int iw = ow * d->stride - d->pad + kw;
                        if (iw >= 0 && iw < d->W)
                            ch[ih * d->W + iw] += row[oh * d->OW + ow];
                    }
                }
            }
}

void ftm_nn_conv2d_forward(float *out, float *col, const float *inp,
                           const float *w, int N, const ftm_conv_dims *d,
                           ftm_gemm_stats *st)
{
    int P = d->OH * d->OW, CKK = d->C * d->K * d->K;
    size_t in_sz = (size_t)d->C * d->H * d->W, out_sz = (size_t)d->OC * P;
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * in_sz;
        const float *c = x;
        if (!is_pointwise(d)) {
            im2col(col, x, d);
            c = col;
        }
        ftm_nn_sgemm(st, 0, 0, d->OC, P, CKK, 1.0f, w, CKK, c, P, 0.0f,
                     out + n * out_sz, P);
    }
}

void ftm_nn_conv2d_backward(float *dinp, float *dw, float *col,
                            const float *dout, const float *inp,
                            const float *w, int N, const ftm_conv_dims *d,
                            ftm_gemm_stats *st)
{
    int P = d->OH * d->OW, CKK = d->C * d->K * d->K;
    size_t in_sz = (size_t)d->C * d->H * d->W, out_sz = (size_t)d->OC * P;
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * in_sz, *dy = dout + n * out_sz;
        if (is_pointwise(d)) {
            ftm_nn_sgemm(st, 0, 1, d->OC, CKK, P, 1.0f, dy, P, x, P, 1.0f, dw, CKK);
            if (dinp)
                ftm_nn_sgemm(st, 1, 0, CKK, P, d->OC, 1.0f, w, CKK, dy, P, 1.0f,
                             dinp + n * in_sz, P);
            continue;
        }
        im2col(col, x, d);
        ftm_nn_sgemm(st, 0, 1, d->OC, CKK, P, 1.0f, dy, P, col, P, 1.0f, dw, CKK);
        if (dinp) {
            ftm_nn_sgemm(st, 1, 0, CKK, P, d->OC, 1.0f, w, CKK, dy, P, 0.0f, col, P);
            col2im_add(dinp + n * in_sz, col, d);
        }
    }
}
