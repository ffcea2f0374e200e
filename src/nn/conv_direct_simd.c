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
        const ptrdiff_t *off, int nt)
{
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00,
           a12 = a00, a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
    size_t C9 = (size_t)C * nt;
    for (int c = 0; c < C; c++) {
        const float *x = in + (size_t)c * ldi, *wc = w + (size_t)c * nt;
        for (int t = 0; t < nt; t++) {
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

#define CD_512 __attribute__((target("avx512f")))
#define CD_FMA3Z(a0, a1, a2, p)                                                   \
    do {                                                                         \
        __m512 b_ = _mm512_set1_ps(*(p));                                        \
        a0 = _mm512_fmadd_ps(b_, v0, a0);                                        \
        a1 = _mm512_fmadd_ps(b_, v1, a1);                                        \
        a2 = _mm512_fmadd_ps(b_, v2, a2);                                        \
    } while (0)

/* AVX-512: 8 output channels x 48 positions. Every output element is the
 * same FMA chain as in cd_tile (a lane does not know the vector's width),
 * so both tiles give the same bits. */
static inline CD_512 __attribute__((always_inline)) void
cd_tile512(float *out, size_t ldo, const float *in, size_t ldi, const float *w, int C,
           const ptrdiff_t *off, int nt)
{
    __m512 z = _mm512_setzero_ps(), a[8][3];
    __m512 a00 = z, a01 = z, a02 = z, a10 = z, a11 = z, a12 = z, a20 = z, a21 = z, a22 = z,
           a30 = z, a31 = z, a32 = z, a40 = z, a41 = z, a42 = z, a50 = z, a51 = z, a52 = z,
           a60 = z, a61 = z, a62 = z, a70 = z, a71 = z, a72 = z;
    size_t C9 = (size_t)C * nt;
    for (int c = 0; c < C; c++) {
        const float *x = in + (size_t)c * ldi, *wc = w + (size_t)c * nt;
        for (int t = 0; t < nt; t++) {
            const float *xp = x + off[t], *wt = wc + t;
            __m512 v0 = _mm512_loadu_ps(xp), v1 = _mm512_loadu_ps(xp + 16);
            __m512 v2 = _mm512_loadu_ps(xp + 32);
            CD_FMA3Z(a00, a01, a02, wt);
            CD_FMA3Z(a10, a11, a12, wt + C9);
            CD_FMA3Z(a20, a21, a22, wt + 2 * C9);
            CD_FMA3Z(a30, a31, a32, wt + 3 * C9);
            CD_FMA3Z(a40, a41, a42, wt + 4 * C9);
            CD_FMA3Z(a50, a51, a52, wt + 5 * C9);
            CD_FMA3Z(a60, a61, a62, wt + 6 * C9);
            CD_FMA3Z(a70, a71, a72, wt + 7 * C9);
        }
    }
    a[0][0] = a00; a[0][1] = a01; a[0][2] = a02; a[1][0] = a10; a[1][1] = a11; a[1][2] = a12;
    a[2][0] = a20; a[2][1] = a21; a[2][2] = a22; a[3][0] = a30; a[3][1] = a31; a[3][2] = a32;
    a[4][0] = a40; a[4][1] = a41; a[4][2] = a42; a[5][0] = a50; a[5][1] = a51; a[5][2] = a52;
    a[6][0] = a60; a[6][1] = a61; a[6][2] = a62; a[7][0] = a70; a[7][1] = a71; a[7][2] = a72;
    for (int r = 0; r < 8; r++)
        for (int j = 0; j < 3; j++)
            _mm512_storeu_ps(out + r * ldo + 16 * j, a[r][j]);
}

static CD_512 void cd_kernel512(float *po, size_t Lo, const float *pin, size_t ldc,
                                const ptrdiff_t *off, int nt, const float *w, int C, int OC)
{
    for (size_t o = 0; o < Lo; o += 48)
        for (int oc = 0; oc < OC; oc += 8)
            cd_tile512(po + (size_t)oc * Lo + o, Lo, pin + o, ldc,
                       w + (size_t)oc * C * nt, C, off, nt);
}

CD_SIMD void conv_direct_kernel(float *po, size_t Lo, const float *pin, size_t ldc,
                                const ptrdiff_t *off, int nt, const float *w, int C, int OC)
{
    if (OC % 8 == 0 && Lo % 48 == 0 && __builtin_cpu_supports("avx512f")) {
        cd_kernel512(po, Lo, pin, ldc, off, nt, w, C, OC);
        return;
    }
    /* o outer: the tile's input rows stay in L1 across the channel blocks */
    for (size_t o = 0; o < Lo; o += 24)
        for (int oc = 0; oc < OC; oc += 4)
            cd_tile(po + (size_t)oc * Lo + o, Lo, pin + o, ldc, w + (size_t)oc * C * nt, C,
                    off, nt);
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

/* The 16 lanes added in one fixed order. */
static inline CD_512 float cd_hsum512(__m512 v)
{
    float l[16], s[8];
    _mm512_storeu_ps(l, v);
    for (int j = 0; j < 8; j++)
        s[j] = l[j] + l[j + 8];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

#define CD_DWZ(a0, a1, a2, p)                                                     \
    do {                                                                         \
        __m512 d_ = _mm512_loadu_ps(p);                                          \
        __asm__("" : "+v"(d_)); /* one load, not one per FMA operand */          \
        a0 = _mm512_fmadd_ps(d_, v0, a0);                                        \
        a1 = _mm512_fmadd_ps(d_, v1, a1);                                        \
        a2 = _mm512_fmadd_ps(d_, v2, a2);                                        \
    } while (0)

/* AVX-512 dw tile: 8 output channels x 3 taps, 16 lanes. */
static inline CD_512 __attribute__((always_inline)) void
cd_dw_tile512(float *dw, size_t ldw, const float *dyo, size_t L, const float *x0,
              const float *x1, const float *x2, size_t Lo)
{
    __m512 z = _mm512_setzero_ps(), a[8][3];
    __m512 a00 = z, a01 = z, a02 = z, a10 = z, a11 = z, a12 = z, a20 = z, a21 = z, a22 = z,
           a30 = z, a31 = z, a32 = z, a40 = z, a41 = z, a42 = z, a50 = z, a51 = z, a52 = z,
           a60 = z, a61 = z, a62 = z, a70 = z, a71 = z, a72 = z;
    for (size_t o = 0; o < Lo; o += 16) {
        __m512 v0 = _mm512_loadu_ps(x0 + o), v1 = _mm512_loadu_ps(x1 + o);
        __m512 v2 = _mm512_loadu_ps(x2 + o);
        const float *d = dyo + o;
        CD_DWZ(a00, a01, a02, d);
        CD_DWZ(a10, a11, a12, d + L);
        CD_DWZ(a20, a21, a22, d + 2 * L);
        CD_DWZ(a30, a31, a32, d + 3 * L);
        CD_DWZ(a40, a41, a42, d + 4 * L);
        CD_DWZ(a50, a51, a52, d + 5 * L);
        CD_DWZ(a60, a61, a62, d + 6 * L);
        CD_DWZ(a70, a71, a72, d + 7 * L);
    }
    a[0][0] = a00; a[0][1] = a01; a[0][2] = a02; a[1][0] = a10; a[1][1] = a11; a[1][2] = a12;
    a[2][0] = a20; a[2][1] = a21; a[2][2] = a22; a[3][0] = a30; a[3][1] = a31; a[3][2] = a32;
    a[4][0] = a40; a[4][1] = a41; a[4][2] = a42; a[5][0] = a50; a[5][1] = a51; a[5][2] = a52;
    a[6][0] = a60; a[6][1] = a61; a[6][2] = a62; a[7][0] = a70; a[7][1] = a71; a[7][2] = a72;
    for (int r = 0; r < 8; r++)
        for (int j = 0; j < 3; j++)
            dw[r * ldw + j] += cd_hsum512(a[r][j]);
}

static CD_512 void cd_dw512(float *dw, const float *dyo, size_t ldy, const float *pin,
                            size_t ldc, const ptrdiff_t *off, size_t Lo, int C, int OC)
{
    size_t ldw = (size_t)C * 9;
    for (int oc = 0; oc < OC; oc += 8)
        for (int c = 0; c < C; c++)
            for (int kh = 0; kh < 3; kh++) {
                const float *x = pin + (size_t)c * ldc;
                cd_dw_tile512(dw + (size_t)oc * ldw + (size_t)c * 9 + kh * 3, ldw,
                              dyo + (size_t)oc * ldy, ldy, x + off[kh * 3],
                              x + off[kh * 3 + 1], x + off[kh * 3 + 2], Lo);
            }
}

/* dw's lanes are position classes: the AVX-512 tile (16 lanes) and the AVX2
 * tile (8) sum in different orders, so which one runs is fixed per CPU. */
CD_SIMD void conv_direct_dw(float *dw, const float *dyo, size_t ldy, const float *pin,
                            size_t ldc, const ptrdiff_t *off, size_t Lo, int C, int OC)
{
    if (OC % 8 == 0 && Lo % 16 == 0 && __builtin_cpu_supports("avx512f")) {
        cd_dw512(dw, dyo, ldy, pin, ldc, off, Lo, C, OC);
        return;
    }
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
