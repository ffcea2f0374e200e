/* Convolution. 3x3 pad-1 convolutions of stride 1 or 2 (every ResNet
 * conv but the 1x1 projections) take the direct path of conv_direct.c
 * (AVX2/AVX-512, no im2col) when the CPU has AVX2 + FMA; the rest, and
 * every conv on other CPUs, run as im2col + GEMM (Caffe/darknet), images
 * in chunks of nb:
 * with col[CKK, nb*P] the im2col of nb images side by side,
 *   y[OC, nb*P]  = W[OC, CKK] . col               (scattered to NCHW)
 *   dW          += dy[OC, nb*P] . col^T            (dy gathered from NCHW)
 *   dcol         = W^T . dy, then col2im adds it into dinp.
 * Chunks make the GEMMs of the small late-stage images wide enough to run
 * at speed (P = 64 alone is a poor GEMM). nb depends only on the dims, so
 * a micro-batch always runs the same GEMMs whichever chip computes it.
 * When nb = 1 the GEMMs read and write the NCHW image directly; a 1x1
 * stride-1 unpadded convolution uses the image itself as col. */
#include <stddef.h>
#include <string.h>
#include "ftmesh/nn.h"
#include "ftmesh/error.h"
#include "conv_direct.h"

/* Columns (nb*P) a chunk aims for: wide enough for the GEMM kernels. */
#define CONV_CHUNK_COLS 1024
/* Kernel widths whose valid column ranges are computed once per call. */
#define CONV_MAX_K 16

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

/* Images per chunk (a function of the dims alone). */
static int chunk_images(const ftm_conv_dims *d)
{
    int P = d->OH * d->OW;
    return P >= CONV_CHUNK_COLS ? 1 : (CONV_CHUNK_COLS + P - 1) / P;
}

size_t ftm_nn_conv_col_size(const ftm_conv_dims *d)
{
    if (is_pointwise(d))
        return 0;
    size_t nb = (size_t)chunk_images(d), P = (size_t)d->OH * d->OW;
    /* col, then (nb > 1) the chunk's output/gradient in [OC, nb*P] */
    size_t n = (size_t)d->C * d->K * d->K * nb * P + (nb > 1 ? (size_t)d->OC * nb * P : 0);
    size_t nd = conv_direct_ok(d) ? conv_direct_scratch(d, (int)nb) : 0;
    return n > nd ? n : nd;
}

/* Output columns [lo, hi) of kernel column kw read inside the image. */
static void valid_cols(const ftm_conv_dims *d, int kw, int *lo, int *hi)
{
    int s = d->stride, last = d->W - 1 + d->pad - kw;   /* ow*s <= last */
    *hi = last < 0 ? 0 : last / s + 1;
    if (*hi > d->OW)
        *hi = d->OW;
    *lo = kw < d->pad ? (d->pad - kw + s - 1) / s : 0;
    if (*lo > *hi)
        *lo = *hi;
}

/* im2col of one row (c, kh, kw) for a stride-1 "same" convolution (output
 * as wide as the input): the valid output rows [oh0, oh1) read one
 * contiguous stretch of the channel shifted by (kh - pad) rows and
 * (kw - pad) columns, so one copy does them; the columns that fell outside
 * the image (lo and hi) are zeroed after it. */
static void im2col_row_same(float *restrict r,        /* OH*OW */
                            const float *restrict ch, /* H, W */
                            const ftm_conv_dims *d, int kh, int kw, int lo, int hi)
{
    int W = d->W, oh0 = d->pad > kh ? d->pad - kh : 0;
    int oh1 = d->H + d->pad - kh < d->OH ? d->H + d->pad - kh : d->OH;
    if (oh1 < oh0)
        oh1 = oh0;
    memset(r, 0, sizeof(float) * (size_t)oh0 * W);
    if (oh1 > oh0) {
        size_t a = (size_t)oh0 * W + lo, b = (size_t)(oh1 - 1) * W + hi;
        const float *src = ch + (ptrdiff_t)(kh - d->pad) * W + (kw - d->pad);
        memcpy(r + a, src + a, sizeof(float) * (b - a));
    }
    for (int oh = oh0; oh < oh1; oh++) {
        for (int ow = 0; ow < lo; ow++)
            r[(size_t)oh * W + ow] = 0.0f;
        for (int ow = hi; ow < W; ow++)
            r[(size_t)oh * W + ow] = 0.0f;
    }
    memset(r + (size_t)oh1 * W, 0, sizeof(float) * (size_t)(d->OH - oh1) * W);
}

/* col rows (c, kh, kw), each P = OH*OW wide, row stride ld. */
static void im2col(float *restrict col,        /* C*K*K, ld */
                   const float *restrict img,  /* C, H, W */
                   const ftm_conv_dims *d, size_t ld)
{
    int K = d->K, s = d->stride, OW = d->OW, lo_[CONV_MAX_K], hi_[CONV_MAX_K];
    for (int kw = 0; kw < K && kw < CONV_MAX_K; kw++)
        valid_cols(d, kw, &lo_[kw], &hi_[kw]);
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                float *row = col + (size_t)((c * K + kh) * K + kw) * ld;
                const float *ch = img + (size_t)c * d->H * d->W;
                int lo, hi;
                if (kw < CONV_MAX_K)
                    lo = lo_[kw], hi = hi_[kw];
                else
                    valid_cols(d, kw, &lo, &hi);
                if (s == 1 && OW == d->W && d->OH == d->H) {
                    im2col_row_same(row, ch, d, kh, kw, lo, hi);
                    continue;
                }
                for (int oh = 0; oh < d->OH; oh++) {
                    int ih = oh * s - d->pad + kh;
                    float *r = row + (size_t)oh * OW;
                    if (ih < 0 || ih >= d->H) {
                        memset(r, 0, sizeof(float) * (size_t)OW);
                        continue;
                    }
                    const float *src = ch + (size_t)ih * d->W - d->pad + kw;
                    for (int ow = 0; ow < lo; ow++)
                        r[ow] = 0.0f;
                    if (s == 1)
                        memcpy(r + lo, src + lo, sizeof(float) * (size_t)(hi - lo));
                    else if (s == 2) /* a constant stride the compiler vectorises */
                        for (int ow = lo; ow < hi; ow++)
                            r[ow] = src[2 * ow];
                    else
                        for (int ow = lo; ow < hi; ow++)
                            r[ow] = src[ow * s];
                    for (int ow = hi; ow < OW; ow++)
                        r[ow] = 0.0f;
                }
            }
}

/* img += col2im(col): the adjoint of im2col. */
static void col2im_add(float *restrict img,        /* C, H, W */
                       const float *restrict col,  /* C*K*K, ld */
                       const ftm_conv_dims *d, size_t ld)
{
    int K = d->K, s = d->stride, OW = d->OW, lo_[CONV_MAX_K], hi_[CONV_MAX_K];
    for (int kw = 0; kw < K && kw < CONV_MAX_K; kw++)
        valid_cols(d, kw, &lo_[kw], &hi_[kw]);
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                const float *row = col + (size_t)((c * K + kh) * K + kw) * ld;
                float *ch = img + (size_t)c * d->H * d->W;
                int lo, hi;
                if (kw < CONV_MAX_K)
                    lo = lo_[kw], hi = hi_[kw];
                else
                    valid_cols(d, kw, &lo, &hi);
                for (int oh = 0; oh < d->OH; oh++) {
                    int ih = oh * s - d->pad + kh;
                    if (ih < 0 || ih >= d->H)
                        continue;
                    float *dst = ch + (size_t)ih * d->W - d->pad + kw;
                    const float *r = row + (size_t)oh * OW;
                    if (s == 1)
                        for (int ow = lo; ow < hi; ow++)
                            dst[ow] += r[ow];
                    else if (s == 2)
                        for (int ow = lo; ow < hi; ow++)
                            dst[2 * ow] += r[ow];
                    else
                        for (int ow = lo; ow < hi; ow++)
                            dst[ow * s] += r[ow];
                }
            }
}

/* Moves nb images' [OC, P] blocks between NCHW (img) and [OC, nb*P] (mat). */
static void chunk_copy(float *restrict dst, const float *restrict src, int to_mat,
                       int nb, int OC, int P)
{
    size_t ld = (size_t)nb * P;
    for (int j = 0; j < nb; j++)
        for (int oc = 0; oc < OC; oc++) {
            size_t im = ((size_t)j * OC + oc) * P, ma = (size_t)oc * ld + (size_t)j * P;
            memcpy(dst + (to_mat ? ma : im), src + (to_mat ? im : ma), sizeof(float) * (size_t)P);
        }
}

static void pointwise_forward(float *out, const float *inp, const float *w, int N,
                              const ftm_conv_dims *d, ftm_gemm_stats *st)
{
    int P = d->OH * d->OW;
    for (int n = 0; n < N; n++)
        ftm_nn_sgemm(st, 0, 0, d->OC, P, d->C, 1.0f, w, d->C, inp + (size_t)n * d->C * P, P,
                     0.0f, out + (size_t)n * d->OC * P, P);
}

void ftm_nn_conv2d_forward(float *out, float *col, const float *inp,
                           const float *w, int N, const ftm_conv_dims *d,
                           ftm_gemm_stats *st)
{
    if (is_pointwise(d)) {
        pointwise_forward(out, inp, w, N, d, st);
        return;
    }
    if (conv_direct_ok(d)) {
        conv_direct_forward(out, NULL, col, inp, w, N, d, chunk_images(d));
        return;
    }
    int P = d->OH * d->OW, CKK = d->C * d->K * d->K, nbmax = chunk_images(d);
    size_t in_sz = (size_t)d->C * d->H * d->W, out_sz = (size_t)d->OC * P;
    float *y = col + (size_t)CKK * nbmax * P;   /* OC, nb*P (nbmax > 1) */
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        int nb = N - n0 < nbmax ? N - n0 : nbmax;
        size_t ld = (size_t)nb * P;
        for (int j = 0; j < nb; j++)
            im2col(col + (size_t)j * P, inp + (size_t)(n0 + j) * in_sz, d, ld);
        if (nbmax == 1) {
            ftm_nn_sgemm(st, 0, 0, d->OC, P, CKK, 1.0f, w, CKK, col, P, 0.0f,
                         out + (size_t)n0 * out_sz, P);
            continue;
        }
        ftm_nn_sgemm(st, 0, 0, d->OC, (int)ld, CKK, 1.0f, w, CKK, col, (int)ld, 0.0f, y, (int)ld);
        chunk_copy(out + (size_t)n0 * out_sz, y, 0, nb, d->OC, P);
    }
}

void ftm_nn_conv2d_forward_stats(float *out, double *s, float *col, const float *inp,
                                 const float *w, int N, const ftm_conv_dims *d,
                                 ftm_gemm_stats *st)
{
    if (conv_direct_stats_ok(d)) {
        conv_direct_forward(out, s, col, inp, w, N, d, chunk_images(d));
        return;
    }
    ftm_nn_conv2d_forward(out, col, inp, w, N, d, st);
    ftm_nn_bn_partial(s, out, N, d->OC, d->OH * d->OW);
}

static void pointwise_backward(float *dinp, float *dw, const float *dout, const float *inp,
                               const float *w, int N, const ftm_conv_dims *d,
                               ftm_gemm_stats *st)
{
    int P = d->OH * d->OW, C = d->C, OC = d->OC;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C * P, *dy = dout + (size_t)n * OC * P;
        ftm_nn_sgemm(st, 0, 1, OC, C, P, 1.0f, dy, P, x, P, 1.0f, dw, C);
        if (dinp)
            ftm_nn_sgemm(st, 1, 0, C, P, OC, 1.0f, w, C, dy, P, 1.0f,
                         dinp + (size_t)n * C * P, P);
    }
}

/* im2col + GEMM backward; dw NULL: dinp only (no im2col). */
static void gemm_backward(float *dinp, float *dw, float *col, const float *dout,
                          const float *inp, const float *w, int N, const ftm_conv_dims *d,
                          ftm_gemm_stats *st)
{
    int P = d->OH * d->OW, CKK = d->C * d->K * d->K, nbmax = chunk_images(d);
    size_t in_sz = (size_t)d->C * d->H * d->W, out_sz = (size_t)d->OC * P;
    float *dyc = col + (size_t)CKK * nbmax * P;   /* OC, nb*P (nbmax > 1) */
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        int nb = N - n0 < nbmax ? N - n0 : nbmax;
        int ld = nb * P;
        const float *dy = dout + (size_t)n0 * out_sz;
        if (nbmax > 1) {
            chunk_copy(dyc, dy, 1, nb, d->OC, P);
            dy = dyc;
        }
        if (dw) {
            for (int j = 0; j < nb; j++)
                im2col(col + (size_t)j * P, inp + (size_t)(n0 + j) * in_sz, d, (size_t)ld);
            ftm_nn_sgemm(st, 0, 1, d->OC, CKK, ld, 1.0f, dy, ld, col, ld, 1.0f, dw, CKK);
        }
        if (!dinp)
            continue;
        ftm_nn_sgemm(st, 1, 0, CKK, ld, d->OC, 1.0f, w, CKK, dy, ld, 0.0f, col, ld);
        for (int j = 0; j < nb; j++)
            col2im_add(dinp + (size_t)(n0 + j) * in_sz, col + (size_t)j * P, d, (size_t)ld);
    }
}

void ftm_nn_conv2d_backward(float *dinp, float *dw, float *col,
                            const float *dout, const float *inp,
                            const float *w, int N, const ftm_conv_dims *d,
                            ftm_gemm_stats *st)
{
    if (is_pointwise(d)) {
        pointwise_backward(dinp, dw, dout, inp, w, N, d, st);
        return;
    }
    if (!conv_direct_ok(d)) {
        gemm_backward(dinp, dw, col, dout, inp, w, N, d, st);
        return;
    }
    int dx = dinp && conv_direct_dinp_ok(d);
    conv_direct_backward(dx ? dinp : NULL, dw, col, dout, inp, w, N, d, chunk_images(d));
    if (dinp && !dx) /* stride 2: the input gradient by GEMM + col2im */
        gemm_backward(dinp, NULL, col, dout, inp, w, N, d, st);
}
