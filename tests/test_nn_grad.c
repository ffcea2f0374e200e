/* nn layers: finite-difference gradient checks of every layer, and the
 * optimised kernels (im2col conv, GEMM attention) against naive double
 * loops. Tolerances are explained at the top of test_nn.c. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/nn.h"
#include "ftmesh/rng.h"
#include "test_nn_util.h"
#include "test_util.h"

void add_fd_tests(TCase *tc);
void add_naive_tests(TCase *tc);

#define ATOL 2e-3
#define RTOL 2e-2

/* A generic layer under test: fwd fills y from the inputs in ctx; the loss
 * is sum(y * r) accumulated in double. */
typedef struct lt {
    void (*fwd)(struct lt *);
    float *in[4];          /* inputs / weights */
    size_t nin[4];
    float *y, *r;
    size_t ny;
    int dims[8];
    int *tok;
    unsigned char *ok;
    float *scr, *scr2;
    ftm_nn_dropout dp;
} lt;

static double lt_loss(void *p)
{
    lt *t = p;
    t->fwd(t);
    double s = 0.0;
    for (size_t i = 0; i < t->ny; i++)
        s += (double)t->y[i] * t->r[i];
    return s;
}

static float *rnd(size_t n, unsigned seed, float lo, float hi)
{
    float *x = calloc(n ? n : 1, sizeof(float));
    fill_rand(x, n, seed, lo, hi);
    return x;
}

static void lt_out(lt *t, size_t ny)
{
    t->ny = ny;
    t->y = calloc(ny, sizeof(float));
    t->r = rnd(ny, 99, -1.0f, 1.0f);
}

static void lt_free(lt *t)
{
    for (int i = 0; i < 4; i++)
        free(t->in[i]);
    free(t->y); free(t->r); free(t->tok); free(t->ok); free(t->scr); free(t->scr2);
}

#define FD(t, k, g, eps) \
    ck_assert_double_le(fd_check(lt_loss, &(t), (t).in[k], (g), (t).nin[k], (eps), ATOL, RTOL, 300), 1.0)

/* ---- linear ---- */
static void f_linear(lt *t)
{
    ftm_nn_linear_forward(t->y, t->in[0], t->in[1], t->in[2], t->dims[0], t->dims[1], t->dims[2], NULL);
}

START_TEST(fd_linear)
{
    lt t = {.fwd = f_linear, .dims = {4, 6, 5}};
    t.in[0] = rnd(t.nin[0] = 24, 1, -1, 1);
    t.in[1] = rnd(t.nin[1] = 30, 2, -1, 1);
    t.in[2] = rnd(t.nin[2] = 5, 3, -1, 1);
    lt_out(&t, 20);
    float *dx = calloc(24, 4), *dw = calloc(30, 4), *db = calloc(5, 4);
    ftm_nn_linear_backward(dx, dw, db, t.r, t.in[0], t.in[1], 4, 6, 5, NULL);
    FD(t, 0, dx, 1e-2f); FD(t, 1, dw, 1e-2f); FD(t, 2, db, 1e-2f);
    free(dx); free(dw); free(db); lt_free(&t);
}
END_TEST

/* ---- conv: configs N C H W OC K stride pad ---- */
static const int conv_cfg[][8] = {
    {2, 3, 6, 6, 4, 3, 1, 1}, {2, 3, 7, 5, 4, 3, 2, 1}, {2, 4, 6, 6, 5, 1, 2, 0},
    {2, 4, 5, 5, 3, 1, 1, 0}, {1, 2, 9, 8, 3, 5, 2, 2}, {2, 2, 5, 5, 2, 3, 1, 0},
    /* the direct 3x3 path (conv_direct.c): stride 1 in chunks of 3 images
     * (3 + 1), AVX2 tiles (4 channels); stride 2 on 4 phase planes, AVX-512
     * tiles where the CPU has them (8 channels) */
    {4, 4, 20, 18, 4, 3, 1, 1}, {3, 8, 8, 6, 8, 3, 2, 1},
};
#define NCONV 8

static void f_conv(lt *t)
{
    ftm_conv_dims d;
    ftm_nn_conv_dims(&d, t->dims[1], t->dims[2], t->dims[3], t->dims[4], t->dims[5], t->dims[6], t->dims[7]);
    ftm_nn_conv2d_forward(t->y, t->scr, t->in[0], t->in[1], t->dims[0], &d, NULL);
}

static void conv_setup(lt *t, ftm_conv_dims *d, int i)
{
    memcpy(t->dims, conv_cfg[i], sizeof conv_cfg[i]);
    const int *c = conv_cfg[i];
    ck_assert_int_eq(ftm_nn_conv_dims(d, c[1], c[2], c[3], c[4], c[5], c[6], c[7]), 0);
    t->fwd = f_conv;
    t->in[0] = rnd(t->nin[0] = (size_t)c[0] * c[1] * c[2] * c[3], 10 + i, -1, 1);
    t->in[1] = rnd(t->nin[1] = (size_t)c[4] * c[1] * c[5] * c[5], 20 + i, -0.5f, 0.5f);
    t->scr = calloc(ftm_nn_conv_col_size(d) + 1, 4);
    lt_out(t, (size_t)c[0] * c[4] * d->OH * d->OW);
}

START_TEST(fd_conv)
{
    lt t = {0};
    ftm_conv_dims d;
    conv_setup(&t, &d, _i);
    float *dx = calloc(t.nin[0], 4), *dw = calloc(t.nin[1], 4);
    ftm_nn_conv2d_backward(dx, dw, t.scr, t.r, t.in[0], t.in[1], t.dims[0], &d, NULL);
    FD(t, 0, dx, 1e-2f); FD(t, 1, dw, 1e-2f);
    free(dx); free(dw); lt_free(&t);
}
END_TEST

/* ---- batch norm over one batch, statistics from the batch ---- */
static void f_bn(lt *t)
{
    int N = t->dims[0], C = t->dims[1], HW = t->dims[2];
    double s[16];
    float m[8], r[8];
    ftm_nn_bn_partial(s, t->in[0], N, C, HW);
    ftm_nn_bn_stats(m, r, s, (double)N * HW, 1e-5f, C);
    ftm_nn_bn_forward(t->y, t->in[0], m, r, t->in[1], t->in[2], N, C, HW);
}

START_TEST(fd_bn)
{
    int N = 3, C = 4, HW = 5;
    lt t = {.fwd = f_bn, .dims = {N, C, HW}};
    t.in[0] = rnd(t.nin[0] = (size_t)N * C * HW, 5, -2, 2);
    t.in[1] = rnd(t.nin[1] = C, 6, 0.5f, 1.5f);
    t.in[2] = rnd(t.nin[2] = C, 7, -1, 1);
    lt_out(&t, t.nin[0]);
    double s[16], gs[16];
    float m[8], r[8], *dx = calloc(t.nin[0], 4), dg[8], db[8];
    ftm_nn_bn_partial(s, t.in[0], N, C, HW);
    ftm_nn_bn_stats(m, r, s, (double)N * HW, 1e-5f, C);
    ftm_nn_bn_backward_partial(gs, t.r, t.in[0], m, r, N, C, HW);
    ftm_nn_bn_backward(dx, t.r, t.in[0], m, r, t.in[1], gs, (double)N * HW, N, C, HW);
    for (int c = 0; c < C; c++) {
        db[c] = (float)gs[c];
        dg[c] = (float)gs[C + c];
    }
    FD(t, 0, dx, 1e-2f); FD(t, 1, dg, 1e-2f); FD(t, 2, db, 1e-2f);
    free(dx); lt_free(&t);
}
END_TEST

/* ---- relu(a + b), then global average pool ---- */
static void f_relu_add_pool(lt *t)
{
    int N = t->dims[0], C = t->dims[1], HW = t->dims[2];
    ftm_nn_add_forward(t->scr, t->in[0], t->in[1], t->nin[0]);
    ftm_nn_relu_forward(t->scr, t->scr, t->nin[0]);
    ftm_nn_avgpool_forward(t->y, t->scr, N, C, HW);
}

START_TEST(fd_relu_add_pool)
{
    int N = 2, C = 3, HW = 6;
    size_t n = (size_t)N * C * HW;
    lt t = {.fwd = f_relu_add_pool, .dims = {N, C, HW}};
    t.in[0] = rnd(t.nin[0] = n, 8, -1, 1);
    t.in[1] = rnd(t.nin[1] = n, 9, -1, 1);
    for (size_t i = 0; i < n; i++) /* keep a+b away from the kink at 0 */
        if (fabsf(t.in[0][i] + t.in[1][i]) < 0.1f)
            t.in[0][i] += 0.3f;
    t.scr = calloc(n, 4);
    lt_out(&t, (size_t)N * C);
    f_relu_add_pool(&t);
    float *dpool = calloc(n, 4), *drelu = calloc(n, 4), *da = calloc(n, 4), *db = calloc(n, 4);
    ftm_nn_avgpool_backward(dpool, t.r, N, C, HW);
    ftm_nn_relu_backward(drelu, t.scr, dpool, n);
    ftm_nn_add_backward(da, db, drelu, n);
    FD(t, 0, da, 1e-2f); FD(t, 1, db, 1e-2f);
    free(dpool); free(drelu); free(da); free(db); lt_free(&t);
}
END_TEST

/* ---- softmax cross-entropy with an ignored row ---- */
static void f_xent(lt *t)
{
    int N = t->dims[0], V = t->dims[1];
    float loss[8];
    ftm_nn_softmax_xent_forward(loss, t->scr, t->in[0], t->tok, N, V);
    t->y[0] = 0.0f;
    for (int n = 0; n < N; n++)
        t->y[0] += loss[n] * t->in[1][n];
}

START_TEST(fd_xent)
{
    int N = 4, V = 7;
    lt t = {.fwd = f_xent, .dims = {N, V}};
    t.in[0] = rnd(t.nin[0] = (size_t)N * V, 11, -3, 3);
    t.in[1] = rnd(t.nin[1] = N, 12, 0.1f, 1);
    t.tok = malloc(sizeof(int) * N);
    int lab[4] = {3, -1, 0, 6};
    memcpy(t.tok, lab, sizeof lab);
    t.scr = calloc((size_t)N * V, 4);
    lt_out(&t, 1);
    t.r[0] = 1.0f;
    f_xent(&t);
    float *dz = calloc((size_t)N * V, 4);
    ftm_nn_softmax_xent_backward(dz, t.scr, t.tok, t.in[1], N, V);
    for (int v = 0; v < V; v++)
        ck_assert_float_eq(dz[V + v], 0.0f); /* ignored row */
    FD(t, 0, dz, 1e-2f);
    free(dz); lt_free(&t);
}
END_TEST

/* ---- embeddings ---- */
static void f_embed(lt *t)
{
    ftm_nn_embed_forward(t->y, t->tok, t->in[0], t->in[1], t->dims[0], t->dims[1], t->dims[2]);
}

START_TEST(fd_embed)
{
    int N = 2, T = 4, C = 3, V = 5;
    lt t = {.fwd = f_embed, .dims = {N, T, C}};
    t.in[0] = rnd(t.nin[0] = (size_t)V * C, 13, -1, 1);
    t.in[1] = rnd(t.nin[1] = (size_t)T * C, 14, -1, 1);
    int tok[8] = {1, 4, 1, 0, 2, 2, 3, 1};
    t.tok = malloc(sizeof tok);
    memcpy(t.tok, tok, sizeof tok);
    lt_out(&t, (size_t)N * T * C);
    float *dwte = calloc(t.nin[0], 4), *dwpe = calloc(t.nin[1], 4);
    ftm_nn_embed_backward(dwte, dwpe, t.r, t.tok, N, T, C);
    FD(t, 0, dwte, 1e-2f); FD(t, 1, dwpe, 1e-2f);
    free(dwte); free(dwpe); lt_free(&t);
}
END_TEST

/* ---- layer norm ---- */
static void f_ln(lt *t)
{
    ftm_nn_layernorm_forward(t->y, t->scr, t->scr2, t->in[0], t->in[1], t->in[2], t->dims[0], t->dims[1], 1e-5f);
}

START_TEST(fd_layernorm)
{
    int R = 5, C = 8;
    lt t = {.fwd = f_ln, .dims = {R, C}};
    t.in[0] = rnd(t.nin[0] = (size_t)R * C, 15, -2, 2);
    t.in[1] = rnd(t.nin[1] = C, 16, 0.5f, 1.5f);
    t.in[2] = rnd(t.nin[2] = C, 17, -1, 1);
    t.scr = calloc(R, 4);
    t.scr2 = calloc(R, 4);
    lt_out(&t, t.nin[0]);
    f_ln(&t);
    float *dx = calloc(t.nin[0], 4), dg[8] = {0}, db[8] = {0};
    ftm_nn_layernorm_backward(dx, dg, db, t.r, t.in[0], t.in[1], t.scr, t.scr2, R, C);
    FD(t, 0, dx, 1e-2f); FD(t, 1, dg, 1e-2f); FD(t, 2, db, 1e-2f);
    free(dx); lt_free(&t);
}
END_TEST

/* ---- GELU (loop: 0 erf, 1 tanh) ---- */
static void f_gelu(lt *t) { ftm_nn_gelu_forward(t->y, t->in[0], t->nin[0], t->dims[0]); }

START_TEST(fd_gelu)
{
    lt t = {.fwd = f_gelu, .dims = {_i}};
    t.in[0] = rnd(t.nin[0] = 50, 18, -4, 4);
    lt_out(&t, 50);
    float *dx = calloc(50, 4);
    ftm_nn_gelu_backward(dx, t.in[0], t.r, 50, _i);
    FD(t, 0, dx, 1e-3f);
    free(dx); lt_free(&t);
}
END_TEST

/* ---- dropout: masks are a pure function of the key ---- */
static void f_dropout(lt *t) { ftm_nn_dropout_forward(t->y, t->in[0], t->dims[0], (size_t)t->dims[1], &t->dp); }

START_TEST(fd_dropout)
{
    lt t = {.fwd = f_dropout, .dims = {3, 40}};
    t.dp = (ftm_nn_dropout){.p = 0.3f, .seed = 7, .step = 2, .first_example = 5, .layer = 1};
    t.in[0] = rnd(t.nin[0] = 120, 19, -1, 1);
    lt_out(&t, 120);
    f_dropout(&t);
    int zeros = 0;
    for (int i = 0; i < 120; i++) {
        float v = t.y[i];
        zeros += v == 0.0f;
        ck_assert(v == 0.0f || fabsf(v - t.in[0][i] / 0.7f) <= 1e-6f);
    }
    ck_assert_int_ge(zeros, 20); /* ~36 expected of 120 */
    ck_assert_int_le(zeros, 55);
    /* example 1 of a call starting at 5 has the mask of example 0 of a call starting at 6 */
    float y2[40];
    ftm_nn_dropout t2 = t.dp;
    t2.first_example = 6;
    ftm_nn_dropout_forward(y2, t.in[0] + 40, 1, 40, &t2);
    ck_assert_mem_eq(y2, t.y + 40, sizeof y2);
    float *dx = calloc(120, 4);
    ftm_nn_dropout_backward(dx, t.r, 3, 40, &t.dp);
    FD(t, 0, dx, 1e-2f);
    free(dx); lt_free(&t);
}
END_TEST

/* ---- attention core with padding mask and dropout ---- */
static void f_attn(lt *t)
{
    ftm_nn_attention_forward(t->y, t->scr, t->scr2, t->in[0], t->ok, t->dims[0], t->dims[1],
                             t->dims[2], t->dims[3], &t->dp, NULL);
}

static void attn_setup(lt *t, int N, int T, int C, int NH, float p)
{
    memset(t, 0, sizeof *t);
    t->fwd = f_attn;
    t->dims[0] = N; t->dims[1] = T; t->dims[2] = C; t->dims[3] = NH;
    t->dp = (ftm_nn_dropout){.p = p, .seed = 3, .step = 1, .first_example = 10, .layer = 4};
    t->in[0] = rnd(t->nin[0] = (size_t)N * T * 3 * C, 21, -1, 1);
    t->ok = malloc((size_t)N * T);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < T; j++)
            t->ok[n * T + j] = j < T - n; /* example n has n padded keys */
    t->scr = calloc((size_t)N * NH * T * T, 4);
    t->scr2 = calloc(2 * (size_t)T * T, 4);
    lt_out(t, (size_t)N * T * C);
}

START_TEST(fd_attention)
{
    lt t;
    attn_setup(&t, 3, 5, 8, 2, 0.2f);
    f_attn(&t);
    float *dqkv = calloc(t.nin[0], 4);
    ftm_nn_attention_backward(dqkv, t.scr2, t.r, t.scr, t.in[0], 3, 5, 8, 2, &t.dp, NULL);
    FD(t, 0, dqkv, 1e-2f);
    free(dqkv); lt_free(&t);
}
END_TEST

/* ---- naive references ---- */

static void conv_naive(double *y, const float *x, const float *w, const int *c)
{
    int N = c[0], C = c[1], H = c[2], W = c[3], OC = c[4], K = c[5], S = c[6], P = c[7];
    int OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double s = 0.0;
                    for (int ci = 0; ci < C; ci++)
                        for (int kh = 0; kh < K; kh++)
                            for (int kw = 0; kw < K; kw++) {
                                int ih = oh * S - P + kh, iw = ow * S - P + kw;
                                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                    s += (double)x[((n * C + ci) * H + ih) * W + iw] *
                                         w[((o * C + ci) * K + kh) * K + kw];
                            }
                    y[((n * OC + o) * OH + oh) * OW + ow] = s;
                }
}

/* The naive conv's adjoint in double loops: each term x * w of an output
 * sends r times the other factor back to x and to w. */
static void conv_naive_grad(double *dx, double *dw, const float *x, const float *w,
                            const float *r, const int *c)
{
    int N = c[0], C = c[1], H = c[2], W = c[3], OC = c[4], K = c[5], S = c[6], P = c[7];
    int OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
    memset(dx, 0, sizeof(double) * (size_t)N * C * H * W);
    memset(dw, 0, sizeof(double) * (size_t)OC * C * K * K);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double g = r[((n * OC + o) * OH + oh) * OW + ow];
                    for (int ci = 0; ci < C; ci++)
                        for (int kh = 0; kh < K; kh++)
                            for (int kw = 0; kw < K; kw++) {
                                int ih = oh * S - P + kh, iw = ow * S - P + kw;
                                if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                                    size_t xi = (size_t)((n * C + ci) * H + ih) * W + iw;
                                    size_t wi = (size_t)((o * C + ci) * K + kh) * K + kw;
                                    dx[xi] += g * w[wi];
                                    dw[wi] += g * x[xi];
                                }
                            }
                }
}

/* The naive conv is linear in x and in w, so its exact gradients follow by
 * probing with unit vectors: dL/dx_i = sum(conv(e_i, w) * r). make check
 * takes them from the naive adjoint above (the probes cost a naive conv
 * per input: seconds for the largest configs); check-full checks both. */
START_TEST(naive_conv)
{
    lt t = {0};
    ftm_conv_dims d;
    conv_setup(&t, &d, _i);
    double *yd = calloc(t.ny, sizeof(double));
    f_conv(&t);
    conv_naive(yd, t.in[0], t.in[1], conv_cfg[_i]);
    float *yf = calloc(t.ny, 4);
    for (size_t i = 0; i < t.ny; i++)
        yf[i] = (float)yd[i];
    ck_assert_double_le(rel_err(t.y, yf, t.ny), 1e-5);
    float *dx = calloc(t.nin[0], 4), *dw = calloc(t.nin[1], 4);
    ftm_nn_conv2d_backward(dx, dw, t.scr, t.r, t.in[0], t.in[1], t.dims[0], &d, NULL);
    double *ga[2] = { calloc(t.nin[0], sizeof(double)), calloc(t.nin[1], sizeof(double)) };
    conv_naive_grad(ga[0], ga[1], t.in[0], t.in[1], t.r, conv_cfg[_i]);
    for (int k = 0; k < 2; k++) {
        float *g = calloc(t.nin[k], 4);
        for (size_t i = 0; i < t.nin[k]; i++)
            g[i] = (float)ga[k][i];
        ck_assert_double_le(rel_err(k ? dw : dx, g, t.nin[k]), 1e-5);
        free(g); free(ga[k]);
    }
    for (int k = 0; k < 2 && full_scale(); k++) {
        float *g = calloc(t.nin[k], 4), *saved = malloc(t.nin[k] * 4);
        memcpy(saved, t.in[k], t.nin[k] * 4);
        for (size_t i = 0; i < t.nin[k]; i++) {
            memset(t.in[k], 0, t.nin[k] * 4);
            t.in[k][i] = 1.0f;
            conv_naive(yd, t.in[0], t.in[1], conv_cfg[_i]);
            double s = 0.0;
            for (size_t j = 0; j < t.ny; j++)
                s += yd[j] * t.r[j];
            g[i] = (float)s;
        }
        memcpy(t.in[k], saved, t.nin[k] * 4);
        ck_assert_double_le(rel_err(k ? dw : dx, g, t.nin[k]), 1e-5);
        free(g); free(saved);
    }
    free(yd); free(yf); free(dx); free(dw); lt_free(&t);
}
END_TEST

/* Attention in double loops, same mask and dropout rule. */
static void attn_naive(double *y, const double *qkv, const unsigned char *ok,
                       int N, int T, int C, int NH, const ftm_nn_dropout *dp)
{
    int hd = C / NH;
    double p[64];
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)n * T + i) * 3 * C + h * hd;
                double mx = -1e300, sum = 0.0;
                for (int j = 0; j < T; j++) {
                    const double *k = qkv + ((size_t)n * T + j) * 3 * C + C + h * hd;
                    double s = 0.0;
                    for (int e = 0; e < hd; e++)
                        s += q[e] * k[e];
                    p[j] = s / sqrt((double)hd);
                    if (ok[n * T + j] && p[j] > mx)
                        mx = p[j];
                }
                for (int j = 0; j < T; j++) {
                    p[j] = ok[n * T + j] ? exp(p[j] - mx) : 0.0;
                    sum += p[j];
                }
                for (int j = 0; j < T; j++) {
                    p[j] /= sum;
                    float u = ftm_rng_uniform(dp->seed, dp->step, (uint64_t)(dp->first_example + n),
                                              dp->layer, ((size_t)h * T + i) * T + j);
                    p[j] = u >= dp->p ? p[j] / (1.0 - dp->p) : 0.0;
                }
                for (int e = 0; e < hd; e++) {
                    double s = 0.0;
                    for (int j = 0; j < T; j++)
                        s += p[j] * qkv[((size_t)n * T + j) * 3 * C + 2 * C + h * hd + e];
                    y[((size_t)n * T + i) * C + h * hd + e] = s;
                }
            }
}

START_TEST(naive_attention)
{
    int N = 3, T = 6, C = 8, NH = 2;
    lt t;
    attn_setup(&t, N, T, C, NH, 0.25f);
    f_attn(&t);
    size_t nq = t.nin[0];
    double *q = malloc(nq * sizeof(double)), *yd = malloc(t.ny * sizeof(double));
    for (size_t i = 0; i < nq; i++)
        q[i] = t.in[0][i];
    attn_naive(yd, q, t.ok, N, T, C, NH, &t.dp);
    float *yf = malloc(t.ny * 4);
    for (size_t i = 0; i < t.ny; i++)
        yf[i] = (float)yd[i];
    ck_assert_double_le(rel_err(t.y, yf, t.ny), 1e-5);
    /* backward vs central differences of the double forward (eps 1e-5,
     * truncation ~1e-10): float backward within 1e-4 of the gradient scale */
    float *dqkv = calloc(nq, 4), *g = malloc(nq * 4);
    ftm_nn_attention_backward(dqkv, t.scr2, t.r, t.scr, t.in[0], N, T, C, NH, &t.dp, NULL);
    for (size_t i = 0; i < nq; i++) {
        double x0 = q[i], lp = 0.0, lm = 0.0;
        q[i] = x0 + 1e-5;
        attn_naive(yd, q, t.ok, N, T, C, NH, &t.dp);
        for (size_t j = 0; j < t.ny; j++)
            lp += yd[j] * t.r[j];
        q[i] = x0 - 1e-5;
        attn_naive(yd, q, t.ok, N, T, C, NH, &t.dp);
        for (size_t j = 0; j < t.ny; j++)
            lm += yd[j] * t.r[j];
        q[i] = x0;
        g[i] = (float)((lp - lm) / 2e-5);
    }
    ck_assert_double_le(rel_err(dqkv, g, nq), 1e-4);
    free(q); free(yd); free(yf); free(dqkv); free(g); lt_free(&t);
}
END_TEST

void add_fd_tests(TCase *tc)
{
    tcase_add_test(tc, fd_linear);
    tcase_add_loop_test(tc, fd_conv, 0, NCONV);
    tcase_add_test(tc, fd_bn);
    tcase_add_test(tc, fd_relu_add_pool);
    tcase_add_test(tc, fd_xent);
    tcase_add_test(tc, fd_embed);
    tcase_add_test(tc, fd_layernorm);
    tcase_add_loop_test(tc, fd_gelu, 0, 2);
    tcase_add_test(tc, fd_dropout);
    tcase_add_test(tc, fd_attention);
}

void add_naive_tests(TCase *tc)
{
    tcase_add_loop_test(tc, naive_conv, 0, NCONV);
    tcase_add_test(tc, naive_attention);
}
