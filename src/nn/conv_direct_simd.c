/* AVX2 + FMA kernels of the direct 3x3 convolution (conv_direct.c explains
 * the layout). Compiled for AVX2 by function attribute; conv_direct_ok()
 * checks the CPU before anything here runs. */
#include <immintrin.h>
#include <stddef.h>
#include "conv_direct.h"

#define CD_SIMD __attribute__((target("avx2,fma")))

/* One output channel's FMAs in a tile (named registers: an array of
 * accumulators would live on the stack). */
#define CD_FMA3(a0, a1, a2, b)                                                    \
    do {                                                                         \
        a0 = _mm256_fmadd_ps(b, v0, a0);                                         \
        a1 = _mm256_fmadd_ps(b, v1, a1);                                         \
        a2 = _mm256_fmadd_ps(b, v2, a2);                                         \
    } while (0)

/* 4 output channels x 24 o-space positions: sum over c and the 9 taps. */
static inline CD_SIMD __attribute__((always_inline)) void
cd_tile(float *out, size_t ldo, const float *in, size_t ldi, const float *w, int C,
        const ptrdiff_t *off)
{
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00,
           a12 = a00, a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
    size_t C9 = (size_t)C * 9;
    for (int c = 0; c < C; c++) {
        const float *x = in + (size_t)c * ldi, *wc = w + (size_t)c * 9;
        for (int t = 0; t < 9; t++) {
            const float *xp = x + off[t];
            __m256 v0 = _mm256_loadu_ps(xp), v1 = _mm256_loadu_ps(xp + 8);
            __m256 v2 = _mm256_loadu_ps(xp + 16);
            CD_FMA3(a00, a01, a02, _mm256_broadcast_ss(wc + t));
            CD_FMA3(a10, a11, a12, _mm256_broadcast_ss(wc + C9 + t));
            CD_FMA3(a20, a21, a22, _mm256_broadcast_ss(wc + 2 * C9 + t));
            CD_FMA3(a30, a31, a32, _mm256_broadcast_ss(wc + 3 * C9 + t));
        }
    }
    __m256 a[12] = {a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32};
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 3; j++)
            _mm256_storeu_ps(out + r * ldo + 8 * j, a[3 * r + j]);
}

CD_SIMD void conv_direct_kernel(float *po, size_t Lo, const float *pin, size_t ldc,
                                const ptrdiff_t *off, const float *w, int C, int OC)
{
    /* o outer: the tile's input rows stay in L1 across the channel blocks */
    for (size_t o = 0; o < Lo; o += 24)
        for (int oc = 0; oc < OC; oc += 4)
            cd_tile(po + (size_t)oc * Lo + o, Lo, pin + o, ldc, w + (size_t)oc * C * 9, C, off);
}

/* The 8 lanes added in one fixed order. */
static inline CD_SIMD float cd_hsum(__m256 v)
{
    float l[8];
    _mm256_storeu_ps(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* dw[oc+r][c][kh][kw] (kw = 0..2, r = 0..3) += sum over o. */
static inline CD_SIMD __attribute__((always_inline)) void
cd_dw_tile(float *dw, size_t ldw, const float *dyo, size_t L, const float *x0,
           const float *x1, const float *x2, size_t Lo)
{
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00,
           a12 = a00, a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
    for (size_t o = 0; o < Lo; o += 8) {
        __m256 v0 = _mm256_loadu_ps(x0 + o), v1 = _mm256_loadu_ps(x1 + o);
        __m256 v2 = _mm256_loadu_ps(x2 + o);
        CD_FMA3(a00, a01, a02, _mm256_loadu_ps(dyo + o));
        CD_FMA3(a10, a11, a12, _mm256_loadu_ps(dyo + L + o));
        CD_FMA3(a20, a21, a22, _mm256_loadu_ps(dyo + 2 * L + o));
        CD_FMA3(a30, a31, a32, _mm256_loadu_ps(dyo + 3 * L + o));
    }
    __m256 a[12] = {a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32};
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 3; j++)
            dw[r * ldw + j] += cd_hsum(a[3 * r + j]);
}

CD_SIMD void conv_direct_dw(float *dw, const float *dyo, size_t ldy, const float *pin,
                            size_t ldc, const ptrdiff_t *off, size_t Lo, int C, int OC)
{
    size_t ldw = (size_t)C * 9;
    for (int oc = 0; oc < OC; oc += 4)
        for (int c = 0; c < C; c++)
            for (int kh = 0; kh < 3; kh++) {
                const float *x = pin + (size_t)c * ldc;
                cd_dw_tile(dw + (size_t)oc * ldw + (size_t)c * 9 + kh * 3, ldw,
                           dyo + (size_t)oc * ldy, ldy, x + off[kh * 3], x + off[kh * 3 + 1],
                           x + off[kh * 3 + 2], Lo);
            }
}
