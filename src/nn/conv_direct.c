/* Direct 3x3 stride-1 "same" convolution (AVX2 + FMA), no im2col.
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
#define CD_TILE (8 * CD_VEC)

typedef struct cd_geom {
    int nb, H, W, Wp;
    size_t Lo, L;    /* o-space row length; packed channel length */
} cd_geom;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static void cd_geom_init(cd_geom *g, int nb, int H, int W)
{
    g->nb = nb; g->H = H; g->W = W; g->Wp = W + 1;
    g->Lo = round_up((size_t)nb * (H + 1) * g->Wp, CD_TILE);
    g->L = round_up(g->Lo + 2 * (size_t)g->Wp + 2 + 8, 8);
}

int conv_direct_ok(const ftm_conv_dims *d)
{
    static int cpu = -1;
    if (cpu < 0) /* benign race: every thread stores the same value */
        cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return cpu && d->K == 3 && d->stride == 1 && d->pad == 1 && d->OH == d->H &&
           d->OW == d->W && d->OC % CD_OCB == 0;
}

size_t conv_direct_scratch(const ftm_conv_dims *d, int nb)
{
    cd_geom g;
    cd_geom_init(&g, nb, d->H, d->W);
    size_t cmax = (size_t)(d->C > d->OC ? d->C : d->OC);
    /* packed input, packed dout, o-space output, flipped weights */
    return (size_t)d->C * g.L + (size_t)d->OC * g.L + cmax * g.Lo +
           (size_t)d->OC * d->C * 9 + 16;
}

/* Packs nb images [C][H][W] (image stride isz) into p [C][L]. */
static void cd_pack(float *restrict p, const float *restrict img, int C, size_t isz,
                    const cd_geom *g)
{
    memset(p, 0, sizeof(float) * (size_t)C * g->L);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < g->H; h++) {
                size_t r = 1 + (size_t)i * (g->H + 1) + (size_t)h;
                memcpy(p + (size_t)c * g->L + 1 + r * g->Wp,
                       img + (size_t)i * isz + ((size_t)c * g->H + h) * g->W,
                       sizeof(float) * (size_t)g->W);
            }
}

/* out [C][H][W] per image (stride osz) = (add ? out + : ) o-space po. */
static void cd_unpack(float *restrict out, const float *restrict po, int C, size_t osz,
                      const cd_geom *g, int add)
{
    for (int c = 0; c < C; c++)
        for (int i = 0; i < g->nb; i++)
            for (int h = 0; h < g->H; h++) {
                const float *s = po + (size_t)c * g->Lo +
                                 ((size_t)i * (g->H + 1) + (size_t)h) * g->Wp;
                float *dst = out + (size_t)i * osz + ((size_t)c * g->H + h) * g->W;
                if (add)
                    for (int w = 0; w < g->W; w++)
                        dst[w] += s[w];
                else
                    memcpy(dst, s, sizeof(float) * (size_t)g->W);
            }
}

void conv_direct_forward(float *out, float *scratch, const float *inp, const float *w,
                         int N, const ftm_conv_dims *d, int nbmax)
{
    size_t isz = (size_t)d->C * d->H * d->W, osz = (size_t)d->OC * d->H * d->W;
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        cd_geom g;
        cd_geom_init(&g, N - n0 < nbmax ? N - n0 : nbmax, d->H, d->W);
        float *pin = scratch, *po = pin + (size_t)d->C * g.L;
        cd_pack(pin, inp + (size_t)n0 * isz, d->C, isz, &g);
        conv_direct_kernel(po, g.Lo, pin, g.L, w, d->C, d->OC, g.Wp);
        cd_unpack(out + (size_t)n0 * osz, po, d->OC, osz, &g, 0);
    }
}

/* wt[c][oc][t] = w[oc][c][8 - t]: the weights of the adjoint convolution. */
static void cd_flip(float *restrict wt, const float *restrict w, int C, int OC)
{
    for (int oc = 0; oc < OC; oc++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < 9; t++)
                wt[((size_t)c * OC + oc) * 9 + t] = w[((size_t)oc * C + c) * 9 + 8 - t];
}

void conv_direct_backward(float *dinp, float *dw, float *scratch, const float *dout,
                          const float *inp, const float *w, int N,
                          const ftm_conv_dims *d, int nbmax)
{
    size_t isz = (size_t)d->C * d->H * d->W, osz = (size_t)d->OC * d->H * d->W;
    for (int n0 = 0; n0 < N; n0 += nbmax) {
        cd_geom g, gmax;
        cd_geom_init(&g, N - n0 < nbmax ? N - n0 : nbmax, d->H, d->W);
        cd_geom_init(&gmax, nbmax, d->H, d->W);
        float *pin = scratch, *pdy = pin + (size_t)d->C * gmax.L;
        float *po = pdy + (size_t)d->OC * gmax.L, *wt = po + (size_t)(d->C > d->OC ? d->C : d->OC) * gmax.Lo;
        cd_pack(pin, inp + (size_t)n0 * isz, d->C, isz, &g);
        cd_pack(pdy, dout + (size_t)n0 * osz, d->OC, osz, &g);
        conv_direct_dw(dw, pdy + g.Wp + 1, pin, g.L, g.Lo, d->C, d->OC, g.Wp);
        if (!dinp)
            continue;
        if (n0 == 0)
            cd_flip(wt, w, d->C, d->OC);
        conv_direct_kernel(po, g.Lo, pdy, g.L, wt, d->OC, d->C, g.Wp);
        cd_unpack(dinp + (size_t)n0 * isz, po, d->C, isz, &g, 1);
    }
}
