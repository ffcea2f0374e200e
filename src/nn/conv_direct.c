/* Direct 3x3 convolution, stride 1 or 2, pad 1 (AVX2 + FMA), no im2col.
 *
 * A chunk of nb images is packed per channel into one flat zero-padded
 * buffer: row stride Wp = W + 1 (one zero column, which is the right pad of
 * a row and the left pad of the next), a zero row above the first image and
 * one zero row after each image (the bottom pad of one image and the top
 * pad of the next), and one leading zero float. Output (image i, row h,
 * column w) is computed at o = (i*(H+1) + h)*Wp + w of an "o-space" row;
 * its input tap (kh, kw) is then pin[o + kh*Wp + kw] for every output, a
 * constant offset, so the convolution is a sum of 9*C shifted vector FMAs.
 * o-space also has the junk positions w = W and h = H (6-21% extra work at
 * W = 32..8); they are dropped when the output is unpacked.
 *
 *   forward  out[oc](o) = sum_{c,t} w[oc,c,t] pin[c](o + off_t)
 *   dinp     the same with dout packed and the weights flipped/transposed
 *   dw       dw[oc,c,t] += sum_o dout_o[oc](o) pin[c](o + off_t), where the
 *            packed dout read at o + Wp + 1 is dout in o-space with zeros
 *            at the junk positions.
 * Each output element is one fixed chain of FMAs, and dw is summed in 8
 * lanes then added in a fixed order, so results depend only on the data
 * and the chunk (a function of the dims), never on where a tile falls. */
#include <stddef.h>
#include <string.h>
#include "conv_direct.h"

#define CD_OCB 4     /* output channels per register tile */
#define CD_VEC 3     /* 8-float vectors per register tile */
#define CD_TILE 48   /* o-space granule: 2 AVX2 tiles, 1 AVX-512 tile */

/* One chunk's layout, in output (o-space) coordinates. A stride-2 input is
 * packed as 4 phase planes per channel (even/odd rows x even/odd columns,
 * each OH x OW): input row 2h + kh - 1 is plane row h - 1 (kh = 0, odd),
 * h (kh = 1, even) or h (kh = 2, odd), so stride 2 is a stride-1 pattern
 * of taps over 4C planes. */
typedef struct cd_geom {
    int nb, s, OH, OW, Wp;
    size_t Lo, L;         /* o-space row length; packed plane length */
    ptrdiff_t off[9];     /* tap t = kh*3 + kw: offset in a channel's planes */
} cd_geom;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static void cd_geom_init(cd_geom *g, int nb, const ftm_conv_dims *d)
{
    g->nb = nb; g->s = d->stride; g->OH = d->OH; g->OW = d->OW; g->Wp = d->OW + 1;
    g->Lo = round_up((size_t)nb * (d->OH + 1) * g->Wp, CD_TILE);
    g->L = round_up(g->Lo + 2 * (size_t)g->Wp + 2 + 8, 8);
    static const int plane[3] = {1, 0, 1}, shift[3] = {0, 1, 1}; /* stride 2 */
    for (int t = 0; t < 9; t++) {
        int kh = t / 3, kw = t % 3;
        if (g->s == 1)
            g->off[t] = (ptrdiff_t)kh * g->Wp + kw;
        else
            g->off[t] = (ptrdiff_t)(plane[kh] * 2 + plane[kw]) * (ptrdiff_t)g->L +
                        (ptrdiff_t)shift[kh] * g->Wp + shift[kw];
    }
}

/* Floats per packed input channel. */
static size_t cd_ldc(const cd_geom *g) { return g->s == 1 ? g->L : 4 * g->L; }

int conv_direct_ok(const ftm_conv_dims *d)
{
    int geom = d->K == 3 && d->pad == 1 &&
               ((d->stride == 1 && d->OH == d->H && d->OW == d->W) ||
                (d->stride == 2 && d->H == 2 * d->OH && d->W == 2 * d->OW));
    return geom && d->OC % CD_OCB == 0 && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}

int conv_direct_dinp_ok(const ftm_conv_dims *d)
{
    return conv_direct_ok(d) && d->C % CD_OCB == 0;
}

size_t conv_direct_scratch(const ftm_conv_dims *d, int nb)
{
    cd_geom g;
    cd_geom_init(&g, nb, d);
    size_t cmax = (size_t)(d->C > d->OC ? d->C : d->OC);
    /* packed input, packed dout, o-space output, flipped weights */
    /* (+ forward's BN lanes, 16 OC doubles, ahead of its work area) */
    return (size_t)d->C * cd_ldc(&g) + (size_t)d->OC * g.L + cmax * g.Lo +
           (size_t)d->OC * d->C * 9 + 32 * (size_t)d->OC + 16;
}

/* Zeroes the parts of one packed plane that no data row writes: the
 * leading float, the row above the first image, each image's bottom row,
 * every row's pad column and the tail. */
static void cd_zero_frame(float *restrict p, const cd_geom *g)
{
    size_t Wp = (size_t)g->Wp, rows = 1 + (size_t)g->nb * (g->OH + 1);
    memset(p, 0, sizeof(float) * (1 + Wp));
    for (int i = 0; i < g->nb; i++) {
        size_t r0 = 1 + (size_t)i * (g->OH + 1);
        for (int h = 0; h < g->OH; h++)
            p[1 + (r0 + h) * Wp + g->OW] = 0.0f;
        memset(p + 1 + (r0 + g->OH) * Wp, 0, sizeof(float) * Wp);
    }
    memset(p + 1 + rows * Wp, 0, sizeof(float) * (g->L - 1 - rows * Wp));
}

/* Packs nb images [C][OH*s][OW*s] (image stride isz) into p [C][ldc]. */
static void cd_pack(float *restrict p, const float *restrict img, int C, size_t isz,
                    const cd_geom *g)
{
    int s = g->s, W = g->OW * s, H = g->OH * s, OW = g->OW;
    for (int c = 0; c < C; c++) {
        for (int k = 0; k < s * s; k++)
            cd_zero_frame(p + (size_t)c * cd_ldc(g) + (size_t)k * g->L, g);
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < H; h++) {
                const float *restrict src = img + (size_t)i * isz + ((size_t)c * H + h) * W;
                size_t r = 1 + (size_t)i * (g->OH + 1) + (size_t)(h / s);
                float *restrict dst = p + (size_t)c * cd_ldc(g) + 1 + r * g->Wp;
                if (s == 1) { /* rows of 8..32 floats: a loop beats a memcpy call */
                    for (int w = 0; w < W; w++)
                        dst[w] = src[w];
                    continue;
                }
                dst += (size_t)(h % 2) * 2 * g->L;
                for (int w = 0; w < OW; w++) {
                    dst[w] = src[2 * w];
                    dst[g->L + w] = src[2 * w + 1];
                }
            }
    }
}

/* out [C][OH][OW] per image (stride osz) = (add ? out + : ) o-space po. */
static void cd_unpack(float *restrict out, const float *restrict po, int C, size_t osz,
                      const cd_geom *g, int add)
{
    for (int c = 0; c < C; c++)
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < g->OH; h++) {
                const float *restrict s = po + (size_t)c * g->Lo +
                                          ((size_t)i * (g->OH + 1) + (size_t)h) * g->Wp;
                float *restrict dst = out + (size_t)i * osz + ((size_t)c * g->OH + h) * g->OW;
                if (add)
                    for (int w = 0; w < g->OW; w++)
                        dst[w] += s[w];
                else
                    for (int w = 0; w < g->OW; w++)
                        dst[w] = s[w];
            }
}

/* The 8-lane double sums of ftm_nn_bn_partial (lane = position mod 8: OW
 * is a multiple of 8), added while a chunk is unpacked: the same
 * operations in the same order per channel, so the same bits, and no
 * second pass over the output. lanes: [C][2][8], carried across chunks. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
cd_unpack_stats(float *restrict out, double *restrict lanes, const float *restrict po, int C,
                size_t osz, const cd_geom *g)
{
    for (int c = 0; c < C; c++) {
        double *s1 = lanes + (size_t)c * 16, *s2 = s1 + 8;
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < g->OH; h++) {
                const float *restrict src = po + (size_t)c * g->Lo +
                                            ((size_t)i * (g->OH + 1) + (size_t)h) * g->Wp;
                float *restrict dst = out + (size_t)i * osz + ((size_t)c * g->OH + h) * g->OW;
                for (int w0 = 0; w0 < g->OW; w0 += 8)
                    for (int j = 0; j < 8; j++) {
                        double v = src[w0 + j];
                        dst[w0 + j] = src[w0 + j];
                        s1[j] += v;
                        s2[j] += v * v;
                    }
            }
    }
}

void conv_direct_forward(float *out, double *stats, float *scratch, const float *inp,
                         const float *w, int N, const ftm_conv_dims *d, int nbmax)
{
    size_t isz = (size_t)d->C * d->H * d->W, osz = (size_t)d->OC * d->OH * d->OW;
    double *lanes = (double *)(void *)scratch; /* 16 OC doubles, 8-aligned (malloc) */
    float *work = scratch + 32 * (size_t)d->OC;
    if (stats)
        memset(lanes, 0, sizeof(double) * 16 * (size_t)d->OC);
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        cd_geom g;
        cd_geom_init(&g, N - n0 < nbmax ? N - n0 : nbmax, d);
        float *pin = work, *po = pin + (size_t)d->C * cd_ldc(&g);
        cd_pack(pin, inp + (size_t)n0 * isz, d->C, isz, &g);
        conv_direct_kernel(po, g.Lo, pin, cd_ldc(&g), g.off, 9, w, d->C, d->OC);
        if (stats)
            cd_unpack_stats(out + (size_t)n0 * osz, lanes, po, d->OC, osz, &g);
        else
            cd_unpack(out + (size_t)n0 * osz, po, d->OC, osz, &g, 0);
    }
    for (int c = 0; stats && c < d->OC; c++) { /* the lanes in order, as bn_partial */
        double a = 0.0, b = 0.0;
        for (int j = 0; j < 8; j++) {
            a += lanes[(size_t)c * 16 + j];
            b += lanes[(size_t)c * 16 + 8 + j];
        }
        stats[c] = a;
        stats[d->OC + c] = b;
    }
}

int conv_direct_stats_ok(const ftm_conv_dims *d)
{
    return conv_direct_ok(d) && d->OW % 8 == 0;
}

/* wt[c][oc][t] = w[oc][c][8 - t]: the weights of the adjoint convolution. */
static void cd_flip(float *restrict wt, const float *restrict w, int C, int OC)
{
    for (int oc = 0; oc < OC; oc++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < 9; t++)
                wt[((size_t)c * OC + oc) * 9 + t] = w[((size_t)oc * C + c) * 9 + 8 - t];
}

/* Stride 2: the input gradient's phase plane (p, q) is a stride-1
 * convolution of dout with the taps of that parity only: input row
 * 2h' + p gets kh = 1 from dout row h' (p = 0), or kh = 0 from row h' + 1
 * and kh = 2 from row h' (p = 1); columns alike. Returns the tap count
 * (1, 2 or 4; 9 over the 4 planes) with each tap's offset in packed dout
 * (row h' + dh, column w' + dw is o + (1 + dh) Wp + 1 + dw). */
static int cd_plane_taps(int p, int q, int Wp, int *tap, ptrdiff_t *off)
{
    static const int kp[2][2] = {{1, 1}, {0, 2}}, nk[2] = {1, 2};
    int n = 0;
    for (int a = 0; a < nk[p]; a++)
        for (int b = 0; b < nk[q]; b++) {
            int kh = kp[p][a], kw = kp[q][b];
            tap[n] = kh * 3 + kw;
            off[n++] = (ptrdiff_t)(1 + (kh == 0)) * Wp + 1 + (kw == 0);
        }
    return n;
}

/* dinp[i][c][2h + p][2w + q] += po[c](o) for phase plane (p, q). */
static void cd_unpack_plane(float *restrict dinp, const float *restrict po, int C,
                            size_t isz, const cd_geom *g, int p, int q)
{
    int W = 2 * g->OW;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < g->OH; h++) {
                const float *restrict s = po + (size_t)c * g->Lo +
                                          ((size_t)i * (g->OH + 1) + (size_t)h) * g->Wp;
                float *restrict dst = dinp + (size_t)i * isz +
                                      ((size_t)c * 2 * g->OH + 2 * h + p) * W + q;
                for (int w = 0; w < g->OW; w++)
                    dst[2 * w] += s[w];
            }
}

/* dinp += the stride-2 input gradient, plane by plane (wt: 9 C OC floats). */
static void cd_dinp_s2(float *dinp, float *po, float *wt, const float *pdy, const float *w,
                       const ftm_conv_dims *d, const cd_geom *g, size_t isz)
{
    int tap[4], C = d->C, OC = d->OC;
    ptrdiff_t off[4];
    for (int pq = 0; pq < 4; pq++) {
        int n = cd_plane_taps(pq / 2, pq % 2, g->Wp, tap, off);
        for (int c = 0; c < C; c++)
            for (int oc = 0; oc < OC; oc++)
                for (int k = 0; k < n; k++)
                    wt[((size_t)c * OC + oc) * n + k] = w[((size_t)oc * C + c) * 9 + tap[k]];
        conv_direct_kernel(po, g->Lo, pdy, g->L, off, n, wt, OC, C);
        cd_unpack_plane(dinp, po, C, isz, g, pq / 2, pq % 2);
    }
}

void conv_direct_backward(float *dinp, float *dw, float *scratch, const float *dout,
                          const float *inp, const float *w, int N,
                          const ftm_conv_dims *d, int nbmax)
{
    size_t isz = (size_t)d->C * d->H * d->W, osz = (size_t)d->OC * d->OH * d->OW;
    ftm_conv_dims dd = *d; /* dout as a stride-1 image, packed like an input */
    dd.stride = 1; dd.H = d->OH; dd.W = d->OW;
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        int nb = N - n0 < nbmax ? N - n0 : nbmax;
        cd_geom g, gmax, gy;
        cd_geom_init(&g, nb, d);
        cd_geom_init(&gmax, nbmax, d);
        cd_geom_init(&gy, nb, &dd);
        float *pin = scratch, *pdy = pin + (size_t)d->C * cd_ldc(&gmax);
        float *po = pdy + (size_t)d->OC * gmax.L;
        float *wt = po + (size_t)(d->C > d->OC ? d->C : d->OC) * gmax.Lo;
        cd_pack(pin, inp + (size_t)n0 * isz, d->C, isz, &g);
        cd_pack(pdy, dout + (size_t)n0 * osz, d->OC, osz, &gy);
        /* pdy read at o + Wp + 1 is dout in o-space, zero at the junk */
        conv_direct_dw(dw, pdy + g.Wp + 1, g.L, pin, cd_ldc(&g), g.off, g.Lo, d->C, d->OC);
        if (!dinp)
            continue;
        if (d->stride == 2) {
            cd_dinp_s2(dinp + (size_t)n0 * isz, po, wt, pdy, w, d, &g, isz);
            continue;
        }
        if (n0 == 0)
            cd_flip(wt, w, d->C, d->OC);
        conv_direct_kernel(po, g.Lo, pdy, g.L, gy.off, 9, wt, d->OC, d->C);
        cd_unpack(dinp + (size_t)n0 * isz, po, d->C, isz, &g, 1);
    }
}
