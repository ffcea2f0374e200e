/* nn: neural-network layers, forward and backward, float32, row-major.
 *
 * Style follows karpathy/llm.c train_gpt2.c: every layer function takes its
 * arguments in the order outputs, saved buffers, inputs, weights, dims; every
 * pointer carries a shape comment; backward functions ACCUMULATE (+=) into
 * their gradient outputs, so the caller zeroes them once. Images are NCHW,
 * conv weights [OC][C][K][K], linear weights [OUT][IN] with y = x W^T + b
 * (PyTorch conventions).
 *
 * Every matrix product goes through ftm_nn_sgemm(), one wrapper around
 * cblas_sgemm that can count calls, flops and time in a caller-owned
 * ftm_gemm_stats (NULL = do not count). Nothing here writes global state
 * after ftm_nn_init(); all functions are safe to call from many threads on
 * disjoint buffers.
 */
#ifndef FTMESH_NN_H
#define FTMESH_NN_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>

/* ---- the sgemm wrapper ------------------------------------------------- */

#define FTM_GEMM_MAX_SHAPES 64

typedef struct ftm_gemm_shape {
    int ta, tb, M, N, K;   /* transposes and dimensions of C[M,N] = A[M,K] B[K,N] */
    uint64_t calls;
} ftm_gemm_shape;

typedef struct ftm_gemm_stats {
    uint64_t calls;        /* sgemm calls */
    double flops;          /* 2*M*N*K summed */
    double seconds;        /* wall time inside cblas_sgemm */
    int nshapes;           /* distinct shapes seen (first FTM_GEMM_MAX_SHAPES) */
    ftm_gemm_shape shapes[FTM_GEMM_MAX_SHAPES];
} ftm_gemm_stats;

/* Once per process (idempotent, thread-safe): one OpenBLAS thread per call. */
FTM_EXTERN void ftm_nn_init(void);
/* Row-major C[M,N] = alpha op(A) op(B) + beta C through cblas_sgemm; ta/tb
 * nonzero = transposed. st (may be NULL) counts the call. */
FTM_EXTERN void ftm_nn_sgemm(ftm_gemm_stats *st, int ta, int tb, int M, int N, int K,
                  float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);
/* Adds the counts of src into dst (shapes merged). */
FTM_EXTERN void ftm_nn_gemm_stats_add(ftm_gemm_stats *dst, const ftm_gemm_stats *src);

/* ---- dropout randomness -------------------------------------------------- */

/* Key of a dropout mask: element e of example (first_example + n) in layer
 * `layer` is kept iff ftm_rng_uniform(seed, step, example, layer, e) >= p.
 * p == 0 disables dropout. */
typedef struct ftm_nn_dropout {
    float p;
    uint64_t seed, step;
    long first_example;    /* global index of example 0 of this call */
    uint32_t layer;
} ftm_nn_dropout;

/* ---- convolution --------------------------------------------------------- */

typedef struct ftm_conv_dims {
    int C, H, W;           /* input channels and size */
    int OC, K, stride, pad;
    int OH, OW;            /* output size, set by ftm_nn_conv_dims() */
} ftm_conv_dims;

/* Fills d (output size from the usual formula); FTM_EINVAL on bad values. */
FTM_EXTERN int ftm_nn_conv_dims(ftm_conv_dims *d, int C, int H, int W, int OC, int K,
                     int stride, int pad);
/* Floats of im2col scratch one call needs (0 for 1x1 stride 1 pad 0). */
FTM_EXTERN size_t ftm_nn_conv_col_size(const ftm_conv_dims *d);
/* out = conv(inp, w), no bias; im2col per image + one GEMM (Caffe style). */
FTM_EXTERN void ftm_nn_conv2d_forward(float *out,      /* N,OC,OH,OW */
                           float *col,      /* conv_col_size scratch */
                           const float *inp,/* N,C,H,W */
                           const float *w,  /* OC,C,K,K */
                           int N, const ftm_conv_dims *d, ftm_gemm_stats *st);
/* dw += dout . col^T; dinp += col2im(w^T . dout) (dinp may be NULL). */
/* ftm_nn_conv2d_forward, and s (2 OC) = ftm_nn_bn_partial(out) with the
 * same bits, summed while the output is written where the path allows. */
FTM_EXTERN void ftm_nn_conv2d_forward_stats(float *out, double *s, float *col,
                                            const float *inp, const float *w, int N,
                                            const ftm_conv_dims *d, ftm_gemm_stats *st);
FTM_EXTERN void ftm_nn_conv2d_backward(float *dinp,        /* N,C,H,W or NULL */
                            float *dw,          /* OC,C,K,K */
                            float *col,         /* conv_col_size scratch */
                            const float *dout,  /* N,OC,OH,OW */
                            const float *inp,   /* N,C,H,W */
                            const float *w,     /* OC,C,K,K */
                            int N, const ftm_conv_dims *d, ftm_gemm_stats *st);

/* ---- batch norm (statistics supplied by the caller) -----------------------
 * Split in phases so the batch statistics can be summed over micro-batches
 * and chips between them: partial sums -> (caller sums them) -> stats ->
 * forward; backward partial sums -> (caller sums) -> backward. */

/* s[0..C) = sum x, s[C..2C) = sum x^2 per channel, in double, in a fixed
 * order (8 lanes over hw, then the lanes): a function of x and the shape. */
FTM_EXTERN void ftm_nn_bn_partial(double *s,        /* 2C */
                       const float *x,   /* N,C,HW */
                       int N, int C, int HW);
/* mean = s1/count, rstd = 1/sqrt(s2/count - mean^2 + eps) (biased var). */
FTM_EXTERN void ftm_nn_bn_stats(float *mean, float *rstd, /* C, C */
                     const double *s,         /* 2C global sums */
                     double count, float eps, int C);
/* out = gamma (x - mean) rstd + beta. */
FTM_EXTERN void ftm_nn_bn_forward(float *out, const float *x,             /* N,C,HW */
                       const float *mean, const float *rstd,   /* C */
                       const float *gamma, const float *beta,  /* C */
                       int N, int C, int HW);
/* out = max(gamma (x - mean) rstd + beta, 0): BN then ReLU in one pass. */
FTM_EXTERN void ftm_nn_bn_relu_forward(float *out, const float *x,          /* N,C,HW */
                            const float *mean, const float *rstd, /* C */
                            const float *gamma, const float *beta,/* C */
                            int N, int C, int HW);
/* out = max(gamma (x - mean) rstd + beta + res, 0): BN, residual add and
 * ReLU in one pass, the bits of ftm_nn_bn_forward then
 * ftm_nn_add_relu_forward (out must not alias x or res). */
FTM_EXTERN void ftm_nn_bn_add_relu_forward(float *out, const float *x,       /* N,C,HW */
                                           const float *mean, const float *rstd,
                                           const float *gamma, const float *beta,
                                           const float *res,                 /* N,C,HW */
                                           int N, int C, int HW);
/* s[0..C) = sum dy, s[C..2C) = sum dy*xhat per channel, fixed order. */
FTM_EXTERN void ftm_nn_bn_backward_partial(double *s,                        /* 2C */
                                const float *dy, const float *x,  /* N,C,HW */
                                const float *mean, const float *rstd,
                                int N, int C, int HW);
/* dx += gamma rstd (dy - gs[c]/count - xhat gs[C+c]/count), gs = global
 * sums from ftm_nn_bn_backward_partial. dgamma/dbeta are gs[C+c]/gs[c]
 * (the caller adds them where it wants them). */
FTM_EXTERN void ftm_nn_bn_backward(float *dx,                        /* N,C,HW */
                        const float *dy, const float *x,  /* N,C,HW */
                        const float *mean, const float *rstd,
                        const float *gamma,               /* C */
                        const double *gs,                 /* 2C */
                        double count, int N, int C, int HW);

/* The same two phases for BN followed by ReLU, given the ReLU's output
 * `out` and the gradient at it `dout`: dy = dout where out > 0, else 0,
 * without a separate ReLU pass. */
FTM_EXTERN void ftm_nn_bn_relu_backward_partial(double *s,            /* 2C */
                                     const float *dout,    /* N,C,HW */
                                     const float *out,     /* N,C,HW */
                                     const float *x,       /* N,C,HW */
                                     const float *mean, const float *rstd,
                                     int N, int C, int HW);
FTM_EXTERN void ftm_nn_bn_relu_backward(float *dx,                     /* N,C,HW */
                             const float *dout, const float *out, const float *x,
                             const float *mean, const float *rstd,
                             const float *gamma, const double *gs,
                             double count, int N, int C, int HW);
/* The same as ftm_nn_bn_backward / ftm_nn_bn_relu_backward into a zeroed
 * dx (the same bits), but dx = ... : no zeroing pass needed. */
FTM_EXTERN void ftm_nn_bn_backward_store(float *dx, const float *dy, const float *x,
                                         const float *mean, const float *rstd,
                                         const float *gamma, const double *gs,
                                         double count, int N, int C, int HW);
FTM_EXTERN void ftm_nn_bn_relu_backward_store(float *dx, const float *dout, const float *out,
                                              const float *x, const float *mean,
                                              const float *rstd, const float *gamma,
                                              const double *gs, double count, int N, int C,
                                              int HW);

/* ---- elementwise, pooling, linear, loss ---------------------------------- */

/* out = max(inp, 0) (out may equal inp). */
FTM_EXTERN void ftm_nn_relu_forward(float *out, const float *inp, size_t n);
/* dinp += dout where out > 0. */
FTM_EXTERN void ftm_nn_relu_backward(float *dinp, const float *out, const float *dout,
                          size_t n);
/* dinp = dout where out > 0, else +0 (the bits of += into a zeroed dinp). */
FTM_EXTERN void ftm_nn_relu_backward_store(float *dinp, const float *out, const float *dout,
                                           size_t n);
/* out = a + b (residual add; out may alias a or b). */
FTM_EXTERN void ftm_nn_add_forward(float *out, const float *a, const float *b, size_t n);
/* out = max(a + b, 0): residual add and ReLU in one pass (out must not
 * alias a or b). */
FTM_EXTERN void ftm_nn_add_relu_forward(float *out, const float *a, const float *b, size_t n);
/* da += dout; db += dout. */
FTM_EXTERN void ftm_nn_add_backward(float *da, float *db, const float *dout, size_t n);
/* out[n,c] = mean over HW of inp[n,c,:]. */
FTM_EXTERN void ftm_nn_avgpool_forward(float *out,        /* N,C */
                            const float *inp,  /* N,C,HW */
                            int N, int C, int HW);
FTM_EXTERN void ftm_nn_avgpool_backward(float *dinp,       /* N,C,HW */
                             const float *dout, /* N,C */
                             int N, int C, int HW);
/* out = inp W^T + b (b may be NULL). */
FTM_EXTERN void ftm_nn_linear_forward(float *out,        /* N,OUT */
                           const float *inp,  /* N,IN */
                           const float *w,    /* OUT,IN */
                           const float *b,    /* OUT or NULL */
                           int N, int IN, int OUT, ftm_gemm_stats *st);
/* dinp += dout W (dinp may be NULL); dw += dout^T inp; db += sum_n dout. */
FTM_EXTERN void ftm_nn_linear_backward(float *dinp, float *dw, float *db,
                            const float *dout, const float *inp,
                            const float *w, int N, int IN, int OUT,
                            ftm_gemm_stats *st);
/* probs = softmax(logits); losses[n] = -log probs[n,label] (0 when the
 * label is -1: ignored row, as for unmasked MLM positions). A label outside
 * -1..V-1 is FTM_ERANGE, checked before anything is read or written;
 * 0 otherwise. */
FTM_EXTERN int ftm_nn_softmax_xent_forward(float *losses,       /* N */
                                float *probs,        /* N,V */
                                const float *logits, /* N,V */
                                const int *labels,   /* N */
                                int N, int V);
/* dlogits += scale[n] (probs - onehot(label)) for rows with label >= 0.
 * Labels as accepted by the forward (which the caller ran first). */
FTM_EXTERN void ftm_nn_softmax_xent_backward(float *dlogits,      /* N,V */
                                  const float *probs,  /* N,V */
                                  const int *labels,   /* N */
                                  const float *scale,  /* N */
                                  int N, int V);

/* ---- transformer layers ---------------------------------------------------- */

/* out[n,t] = wte[tok[n,t]] + wpe[t]. */
FTM_EXTERN void ftm_nn_embed_forward(float *out,        /* N,T,C */
                          const int *tok,    /* N,T */
                          const float *wte,  /* V,C */
                          const float *wpe,  /* T,C */
                          int N, int T, int C);
FTM_EXTERN void ftm_nn_embed_backward(float *dwte, float *dwpe, const float *dout,
                           const int *tok, int N, int T, int C);
/* Normalise each row of C over C (biased variance), then gamma, beta. */
FTM_EXTERN void ftm_nn_layernorm_forward(float *out,        /* R,C */
                              float *mean,       /* R */
                              float *rstd,       /* R */
                              const float *inp,  /* R,C */
                              const float *gamma, const float *beta, /* C */
                              int R, int C, float eps);
FTM_EXTERN void ftm_nn_layernorm_backward(float *dinp, float *dgamma, float *dbeta,
                               const float *dout, const float *inp,
                               const float *gamma, const float *mean,
                               const float *rstd, int R, int C);
/* GELU: exact x*Phi(x) (tanh_approx=0) or the tanh approximation. */
FTM_EXTERN void ftm_nn_gelu_forward(float *out, const float *inp, size_t n,
                         int tanh_approx);
FTM_EXTERN void ftm_nn_gelu_backward(float *dinp, const float *inp, const float *dout,
                          size_t n, int tanh_approx);
/* out = inp * keep / (1 - p); E floats per example; inference if dp NULL
 * or dp->p == 0 (out = inp). out may equal inp. */
FTM_EXTERN void ftm_nn_dropout_forward(float *out, const float *inp, int N, size_t E,
                            const ftm_nn_dropout *dp);
/* dinp += dout * keep / (1 - p) (same mask, recomputed from the key). */
FTM_EXTERN void ftm_nn_dropout_backward(float *dinp, const float *dout, int N, size_t E,
                             const ftm_nn_dropout *dp);
/* Multi-head self-attention core on packed qkv (Q, K, V = consecutive
 * blocks of C columns, head h = columns [h*hd, (h+1)*hd) of each block):
 * out = concat_h dropout(softmax(Q_h K_h^T / sqrt(hd) + mask)) V_h, with
 * key j of example n masked when valid[n,j] == 0. Two GEMMs per head.
 * probs keeps the softmax before dropout; dropout element index is
 * (h*T + i)*T + j within the example. */
FTM_EXTERN void ftm_nn_attention_forward(float *out,            /* N,T,C */
                              float *probs,          /* N,NH,T,T */
                              float *scratch,        /* T,T */
                              const float *qkv,      /* N,T,3C */
                              const unsigned char *valid, /* N,T */
                              int N, int T, int C, int NH,
                              const ftm_nn_dropout *dp, ftm_gemm_stats *st);
/* dqkv += d(out)/d(qkv) . dout. */
FTM_EXTERN void ftm_nn_attention_backward(float *dqkv,           /* N,T,3C */
                               float *scratch,        /* 2,T,T */
                               const float *dout,     /* N,T,C */
                               const float *probs,    /* N,NH,T,T */
                               const float *qkv,      /* N,T,3C */
                               int N, int T, int C, int NH,
                               const ftm_nn_dropout *dp, ftm_gemm_stats *st);

#endif
