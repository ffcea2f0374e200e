/* Direct 3x3 stride-1 convolution (conv_direct.c, kernels in
 * conv_direct_simd.c); used by conv.c when conv_direct_ok(). Not installed. */
#ifndef FTMESH_CONV_DIRECT_H
#define FTMESH_CONV_DIRECT_H

#include <stddef.h>
#include "ftmesh/nn.h"

/* The dims are a 3x3 pad-1 convolution of stride 1 ("same") or 2 (even
 * input), OC a multiple of 4, and the CPU has AVX2 and FMA. */
int conv_direct_ok(const ftm_conv_dims *d);
/* conv_direct_backward also computes dinp: C a multiple of 4. */
int conv_direct_dinp_ok(const ftm_conv_dims *d);
/* Scratch floats for chunks of nb images. */
size_t conv_direct_scratch(const ftm_conv_dims *d, int nb);
/* stats (2 OC, or NULL): ftm_nn_bn_partial of out, the same bits, summed
 * while unpacking; only when conv_direct_stats_ok. */
void conv_direct_forward(float *out, double *stats, float *scratch, const float *inp,
                         const float *w, int N, const ftm_conv_dims *d, int nbmax);
int conv_direct_stats_ok(const ftm_conv_dims *d);
/* dw += gradient; dinp (NULL unless conv_direct_dinp_ok) += gradient. */
void conv_direct_backward(float *dinp, float *dw, float *scratch, const float *dout,
                          const float *inp, const float *w, int N,
                          const ftm_conv_dims *d, int nbmax);

/* Kernels (AVX2 + FMA, or AVX-512). po [OC][Lo] = sum over c and the nt
 * taps t of w[oc][c][t] pin[c*ldc + off[t] + o]; Lo a multiple of 48, OC
 * of 4. */
void conv_direct_kernel(float *po, size_t Lo, const float *pin, size_t ldc,
                        const ptrdiff_t *off, int nt, const float *w, int C, int OC);
/* dw [OC][C][9] += sum over o < Lo of dyo[oc*ldy + o] pin[c*ldc + off[t] + o]. */
void conv_direct_dw(float *dw, const float *dyo, size_t ldy, const float *pin, size_t ldc,
                    const ptrdiff_t *off, size_t Lo, int C, int OC);

#endif
