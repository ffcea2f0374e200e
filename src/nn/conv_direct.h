/* Direct 3x3 stride-1 convolution (conv_direct.c, kernels in
 * conv_direct_simd.c); used by conv.c when conv_direct_ok(). Not installed. */
#ifndef FTMESH_CONV_DIRECT_H
#define FTMESH_CONV_DIRECT_H

#include <stddef.h>
#include "ftmesh/nn.h"

/* The dims are a 3x3 stride-1 pad-1 convolution, OC a multiple of 4, and
 * the CPU has AVX2 and FMA. */
int conv_direct_ok(const ftm_conv_dims *d);
/* Scratch floats for chunks of nb images. */
size_t conv_direct_scratch(const ftm_conv_dims *d, int nb);
void conv_direct_forward(float *out, float *scratch, const float *inp, const float *w,
                         int N, const ftm_conv_dims *d, int nbmax);
/* dw += gradient; dinp (NULL, or only when C is a multiple of 4) += gradient. */
void conv_direct_backward(float *dinp, float *dw, float *scratch, const float *dout,
                          const float *inp, const float *w, int N,
                          const ftm_conv_dims *d, int nbmax);

/* Kernels (AVX2 + FMA). po [OC][Lo] = conv of pin [C][L] with w [OC][C][9];
 * Lo a multiple of 24, OC of 4. */
void conv_direct_kernel(float *po, size_t Lo, const float *pin, size_t L,
                        const float *w, int C, int OC, int Wp);
/* dw [OC][C][9] += sum over o < Lo of dyo[oc](o) pin[c](o + tap offset);
 * dyo rows have stride L. */
void conv_direct_dw(float *dw, const float *dyo, const float *pin, size_t L, size_t Lo,
                    int C, int OC, int Wp);

#endif
