/* nn layers: PyTorch float64 references (tests/data), finite-difference
 * gradient checks and naive reference kernels.
 *
 * Tolerances:
 *  - references: max |ours - torch| <= 1e-5 * max(1, max |torch|) per tensor
 *    (float32 math vs float64: README expects 1e-6..1e-5 relative; a wrong
 *    index or transpose is of order 1).
 *  - finite differences: central differences (eps 1e-2 or 1e-3) of a
 *    double-accumulated loss sum(y*r) over the float forward, against the
 *    float backward: |num - ana| <= atol + rtol |num| with atol 2e-3 and
 *    rtol 2e-2 unless stated (float forward noise / 2eps is ~1e-4).
 *  - naive kernels (double loops): 1e-5 relative to the tensor's scale. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/nn.h"
#include "ftmesh/rng.h"
#include "test_nn_util.h"
#include "test_util.h"

#define REF_TOL 1e-5
#define FD_ATOL 2e-3
#define FD_RTOL 2e-2

static float *zalloc(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

#define CHECK_REF(ours, rc, name)                                          \
    do {                                                                   \
        ref_tensor *t_ = ref_get(&(rc), name);                             \
        ck_assert_ptr_nonnull(t_);                                         \
        double e_ = rel_err((ours), t_->v, t_->n);                         \
        ck_assert_msg(e_ <= REF_TOL, "%s: rel err %g", name, e_);          \
    } while (0)

static ref_tensor *need(ref_case *rc, const char *name)
{
    ref_tensor *t = ref_get(rc, name);
    ck_assert_msg(t != NULL, "missing tensor %s", name);
    return t;
}

/* ---------------- references ---------------- */

START_TEST(ref_linear)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "linear.txt"), 0);
    ref_tensor *x = need(&rc, "x"), *W = need(&rc, "W"), *b = need(&rc, "b");
    int N = x->dims[0], IN = x->dims[1], OUT = W->dims[0];
    float *y = zalloc((size_t)N * OUT), *dx = zalloc(x->n), *dW = zalloc(W->n), *db = zalloc(b->n);
    ftm_nn_linear_forward(y, x->v, W->v, b->v, N, IN, OUT, NULL);
    CHECK_REF(y, rc, "y");
    ftm_nn_linear_backward(dx, dW, db, need(&rc, "dy")->v, x->v, W->v, N, IN, OUT, NULL);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dW, rc, "dW");
    CHECK_REF(db, rc, "db");
    free(y); free(dx); free(dW); free(db);
    ref_free(&rc);
}
END_TEST

static const char *conv_files[] = {"conv2d_3x3_s1p1.txt", "conv2d_3x3_s2p1.txt",
                                   "conv2d_1x1_s2p0.txt"};

START_TEST(ref_conv)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, conv_files[_i]), 0);
    ref_tensor *x = need(&rc, "x"), *w = need(&rc, "w");
    ftm_conv_dims d;
    ck_assert_int_eq(ftm_nn_conv_dims(&d, x->dims[1], x->dims[2], x->dims[3], w->dims[0],
                                      w->dims[2], (int)ref_param(&rc, "stride", 1),
                                      (int)ref_param(&rc, "pad", 0)), 0);
    int N = x->dims[0];
    ck_assert_int_eq(d.OH, need(&rc, "y")->dims[2]);
    float *y = zalloc((size_t)N * d.OC * d.OH * d.OW), *col = zalloc(ftm_nn_conv_col_size(&d));
    float *dx = zalloc(x->n), *dw = zalloc(w->n);
    ftm_nn_conv2d_forward(y, col, x->v, w->v, N, &d, NULL);
    CHECK_REF(y, rc, "y");
    ftm_nn_conv2d_backward(dx, dw, col, need(&rc, "dy")->v, x->v, w->v, N, &d, NULL);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dw, rc, "dw");
    free(y); free(col); free(dx); free(dw);
    ref_free(&rc);
}
END_TEST

/* Whole-batch BN through the phased API (one "chip", one micro-batch). */
static void bn_fwd(float *y, float *mean, float *rstd, const float *x,
                   const float *g, const float *b, int N, int C, int HW)
{
    double s[2 * 64];
    ftm_nn_bn_partial(s, x, N, C, HW);
    ftm_nn_bn_stats(mean, rstd, s, (double)N * HW, 1e-5f, C);
    ftm_nn_bn_forward(y, x, mean, rstd, g, b, N, C, HW);
}

static void bn_bwd(float *dx, float *dg, float *db, const float *dy,
                   const float *x, const float *mean, const float *rstd,
                   const float *g, int N, int C, int HW)
{
    double s[2 * 64];
    ftm_nn_bn_backward_partial(s, dy, x, mean, rstd, N, C, HW);
    ftm_nn_bn_backward(dx, dy, x, mean, rstd, g, s, (double)N * HW, N, C, HW);
    for (int c = 0; c < C; c++) {
        db[c] += (float)s[c];
        dg[c] += (float)s[C + c];
    }
}

START_TEST(ref_batchnorm)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "batchnorm2d_train.txt"), 0);
    ref_tensor *x = need(&rc, "x"), *g = need(&rc, "gamma"), *b = need(&rc, "beta");
    int N = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3];
    float *y = zalloc(x->n), *dx = zalloc(x->n), mean[64], rstd[64], var[64], dg[64] = {0}, db[64] = {0};
    bn_fwd(y, mean, rstd, x->v, g->v, b->v, N, C, HW);
    CHECK_REF(y, rc, "y");
    CHECK_REF(mean, rc, "mean");
    for (int c = 0; c < C; c++)
        var[c] = 1.0f / (rstd[c] * rstd[c]) - 1e-5f;
    CHECK_REF(var, rc, "var");
    bn_bwd(dx, dg, db, need(&rc, "dy")->v, x->v, mean, rstd, g->v, N, C, HW);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dg, rc, "dgamma");
    CHECK_REF(db, rc, "dbeta");
    free(y); free(dx);
    ref_free(&rc);
}
END_TEST

START_TEST(ref_layernorm)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "layernorm.txt"), 0);
    ref_tensor *x = need(&rc, "x"), *g = need(&rc, "gamma"), *b = need(&rc, "beta");
    int C = x->dims[x->ndim - 1], R = (int)(x->n / C);
    float *y = zalloc(x->n), *dx = zalloc(x->n), *m = zalloc(R), *r = zalloc(R);
    float *dg = zalloc(C), *db = zalloc(C);
    ftm_nn_layernorm_forward(y, m, r, x->v, g->v, b->v, R, C, (float)ref_param(&rc, "eps", 1e-5));
    CHECK_REF(y, rc, "y");
    ftm_nn_layernorm_backward(dx, dg, db, need(&rc, "dy")->v, x->v, g->v, m, r, R, C);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dg, rc, "dgamma");
    CHECK_REF(db, rc, "dbeta");
    free(y); free(dx); free(m); free(r); free(dg); free(db);
    ref_free(&rc);
}
END_TEST

START_TEST(ref_gelu)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, _i ? "gelu_tanh.txt" : "gelu_erf.txt"), 0);
    ref_tensor *x = need(&rc, "x");
    float *y = zalloc(x->n), *dx = zalloc(x->n);
    ftm_nn_gelu_forward(y, x->v, x->n, _i);
    CHECK_REF(y, rc, "y");
    ftm_nn_gelu_backward(dx, x->v, need(&rc, "dy")->v, x->n, _i);
    CHECK_REF(dx, rc, "dx");
    free(y); free(dx);
    ref_free(&rc);
}
END_TEST

START_TEST(ref_softmax_xent)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "softmax_xent.txt"), 0);
    ref_tensor *z = need(&rc, "z"), *lab = need(&rc, "labels");
    int N = z->dims[0], V = z->dims[1];
    int *labels = malloc(sizeof(int) * N);
    float *loss = zalloc(N), *p = zalloc(z->n), *dz = zalloc(z->n), *sc = zalloc(N);
    for (int n = 0; n < N; n++) {
        labels[n] = (int)lab->v[n];
        sc[n] = 1.0f / (float)N;
    }
    ck_assert_int_eq(ftm_nn_softmax_xent_forward(loss, p, z->v, labels, N, V), 0);
    float mean = 0.0f;
    for (int n = 0; n < N; n++)
        mean += loss[n] / (float)N;
    CHECK_REF(&mean, rc, "loss");
    ftm_nn_softmax_xent_backward(dz, p, labels, sc, N, V);
    CHECK_REF(dz, rc, "dz");
    free(labels); free(loss); free(p); free(dz); free(sc);
    ref_free(&rc);
}
END_TEST

/* A label outside -1..V-1 is an error, found before anything is read or
 * written (a label V would read one row past the logits; under ASan the
 * logits end exactly there). -1 is the documented "ignore this row". */
START_TEST(softmax_xent_bad_label)
{
    enum { N = 3, V = 4 };
    static const int bad[][N] = { { 0, 4, 1 }, { -2, 0, 0 }, { 3, 2, 1000 } };
    float *z = malloc(sizeof(float) * N * V), p[N * V], loss[N];
    for (int i = 0; i < N * V; i++)
        z[i] = 0.25f * (float)i;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < N; i++)
            loss[i] = -7.0f;
        for (int i = 0; i < N * V; i++)
            p[i] = -7.0f;
        ck_assert_int_eq(ftm_nn_softmax_xent_forward(loss, p, z, bad[k], N, V), FTM_ERANGE);
        for (int i = 0; i < N; i++)
            ck_assert(loss[i] == -7.0f);
        for (int i = 0; i < N * V; i++)
            ck_assert(p[i] == -7.0f);
    }
    const int ok[N] = { 3, -1, 0 };
    ck_assert_int_eq(ftm_nn_softmax_xent_forward(loss, p, z, ok, N, V), 0);
    ck_assert(loss[1] == 0.0f && loss[0] > 0.0f && loss[2] > loss[0]);
    free(z);
}
END_TEST

START_TEST(ref_attention)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "attention.txt"), 0);
    ref_tensor *x = need(&rc, "x"), *Wqkv = need(&rc, "Wqkv"), *bqkv = need(&rc, "bqkv");
    ref_tensor *Wo = need(&rc, "Wo"), *bo = need(&rc, "bo"), *valid = need(&rc, "valid");
    int N = x->dims[0], T = x->dims[1], C = x->dims[2], NH = (int)ref_param(&rc, "heads", 1);
    unsigned char *ok = malloc((size_t)N * T);
    for (int i = 0; i < N * T; i++)
        ok[i] = valid->v[i] != 0.0f;
    float *qkv = zalloc((size_t)N * T * 3 * C), *a = zalloc(x->n), *y = zalloc(x->n);
    float *probs = zalloc((size_t)N * NH * T * T), *scr = zalloc(2 * (size_t)T * T);
    ftm_nn_linear_forward(qkv, x->v, Wqkv->v, bqkv->v, N * T, C, 3 * C, NULL);
    ftm_nn_attention_forward(a, probs, scr, qkv, ok, N, T, C, NH, NULL, NULL);
    ftm_nn_linear_forward(y, a, Wo->v, bo->v, N * T, C, C, NULL);
    CHECK_REF(y, rc, "y");
    float *dqkv = zalloc((size_t)N * T * 3 * C), *da = zalloc(x->n), *dx = zalloc(x->n);
    float *dWqkv = zalloc(Wqkv->n), *dbqkv = zalloc(bqkv->n), *dWo = zalloc(Wo->n), *dbo = zalloc(bo->n);
    ftm_nn_linear_backward(da, dWo, dbo, need(&rc, "dy")->v, a, Wo->v, N * T, C, C, NULL);
    ftm_nn_attention_backward(dqkv, scr, da, probs, qkv, N, T, C, NH, NULL, NULL);
    ftm_nn_linear_backward(dx, dWqkv, dbqkv, dqkv, x->v, Wqkv->v, N * T, C, 3 * C, NULL);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dWqkv, rc, "dWqkv");
    CHECK_REF(dbqkv, rc, "dbqkv");
    CHECK_REF(dWo, rc, "dWo");
    CHECK_REF(dbo, rc, "dbo");
    free(ok); free(qkv); free(a); free(y); free(probs); free(scr);
    free(dqkv); free(da); free(dx); free(dWqkv); free(dbqkv); free(dWo); free(dbo);
    ref_free(&rc);
}
END_TEST

/* relu(bn2(conv3x3(relu(bn1(conv3x3 s2(x))))) + bnp(conv1x1 s2(x))) */
START_TEST(ref_basic_block)
{
    ref_case rc;
    ck_assert_int_eq(ref_load(&rc, "basic_block_s2.txt"), 0);
    ref_tensor *x = need(&rc, "x"), *w1 = need(&rc, "w1"), *w2 = need(&rc, "w2"), *wp = need(&rc, "wp");
    int N = x->dims[0], C = x->dims[1], OC = w1->dims[0];
    ftm_conv_dims d1, d2, dp;
    ck_assert_int_eq(ftm_nn_conv_dims(&d1, C, x->dims[2], x->dims[3], OC, 3, 2, 1), 0);
    ck_assert_int_eq(ftm_nn_conv_dims(&d2, OC, d1.OH, d1.OW, OC, 3, 1, 1), 0);
    ck_assert_int_eq(ftm_nn_conv_dims(&dp, C, x->dims[2], x->dims[3], OC, 1, 2, 0), 0);
    int HW = d1.OH * d1.OW;
    size_t on = (size_t)N * OC * HW;
    float *col = zalloc(ftm_nn_conv_col_size(&d2) + ftm_nn_conv_col_size(&d1));
    float *c1 = zalloc(on), *a1 = zalloc(on), *c2 = zalloc(on), *cp = zalloc(on), *bp = zalloc(on), *y = zalloc(on);
    float m1[8], r1[8], m2[8], r2[8], mp[8], rp[8];
    ftm_nn_conv2d_forward(c1, col, x->v, w1->v, N, &d1, NULL);
    bn_fwd(a1, m1, r1, c1, need(&rc, "gamma1")->v, need(&rc, "beta1")->v, N, OC, HW);
    ftm_nn_relu_forward(a1, a1, on);
    ftm_nn_conv2d_forward(c2, col, a1, w2->v, N, &d2, NULL);
    bn_fwd(y, m2, r2, c2, need(&rc, "gamma2")->v, need(&rc, "beta2")->v, N, OC, HW);
    ftm_nn_conv2d_forward(cp, col, x->v, wp->v, N, &dp, NULL);
    bn_fwd(bp, mp, rp, cp, need(&rc, "gammap")->v, need(&rc, "betap")->v, N, OC, HW);
    ftm_nn_add_forward(y, y, bp, on);
    ftm_nn_relu_forward(y, y, on);
    CHECK_REF(y, rc, "y");
    /* backward */
    float *dpre = zalloc(on), *dc2 = zalloc(on), *da1 = zalloc(on), *dc1 = zalloc(on), *dcp = zalloc(on);
    float *dx = zalloc(x->n), *dw1 = zalloc(w1->n), *dw2 = zalloc(w2->n), *dwp = zalloc(wp->n);
    float dg1[8] = {0}, db1[8] = {0}, dg2[8] = {0}, db2[8] = {0}, dgp[8] = {0}, dbp[8] = {0};
    ftm_nn_relu_backward(dpre, y, need(&rc, "dy")->v, on);
    bn_bwd(dc2, dg2, db2, dpre, c2, m2, r2, need(&rc, "gamma2")->v, N, OC, HW);
    bn_bwd(dcp, dgp, dbp, dpre, cp, mp, rp, need(&rc, "gammap")->v, N, OC, HW);
    ftm_nn_conv2d_backward(da1, dw2, col, dc2, a1, w2->v, N, &d2, NULL);
    float *dr = zalloc(on);
    ftm_nn_relu_backward(dr, a1, da1, on);
    bn_bwd(dc1, dg1, db1, dr, c1, m1, r1, need(&rc, "gamma1")->v, N, OC, HW);
    ftm_nn_conv2d_backward(dx, dw1, col, dc1, x->v, w1->v, N, &d1, NULL);
    ftm_nn_conv2d_backward(dx, dwp, col, dcp, x->v, wp->v, N, &dp, NULL);
    CHECK_REF(dx, rc, "dx");
    CHECK_REF(dw1, rc, "dw1"); CHECK_REF(dg1, rc, "dgamma1"); CHECK_REF(db1, rc, "dbeta1");
    CHECK_REF(dw2, rc, "dw2"); CHECK_REF(dg2, rc, "dgamma2"); CHECK_REF(db2, rc, "dbeta2");
    CHECK_REF(dwp, rc, "dwp"); CHECK_REF(dgp, rc, "dgammap"); CHECK_REF(dbp, rc, "dbetap");
    free(col); free(c1); free(a1); free(c2); free(cp); free(bp); free(y);
    free(dpre); free(dc2); free(da1); free(dc1); free(dcp); free(dx);
    free(dw1); free(dw2); free(dwp); free(dr);
    ref_free(&rc);
}
END_TEST

/* The _store variants equal the += ones into a zeroed buffer, bit for bit
 * (zeros and negative gradients included: +0 + -0 is +0 either way), and
 * the fused bn_add_relu equals bn_forward then add_relu_forward. */
START_TEST(store_equals_accumulate)
{
    enum { N = 3, C = 5, HW = 37 };
    size_t n = (size_t)N * C * HW;
    float *x = zalloc(n), *out = zalloc(n), *dy = zalloc(n), *a = zalloc(n), *b = zalloc(n);
    float mean[C], rstd[C], g[C];
    double gs[2 * C];
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((i * 7919) % 101) / 13.0f - 3.0f;
        out[i] = i % 3 ? x[i] : 0.0f;
        dy[i] = i % 5 ? (float)((i * 104729) % 97) / 17.0f - 2.5f : -0.0f;
    }
    for (int c = 0; c < C; c++) {
        mean[c] = 0.1f * (float)c; rstd[c] = 1.0f + 0.5f * (float)c; g[c] = 0.7f - 0.2f * (float)c;
        gs[c] = 0.3 * c - 0.5; gs[C + c] = 1.5 - 0.25 * c;
    }
    for (int relu = 0; relu < 2; relu++) {
        memset(a, 0, n * sizeof(float));
        memset(b, 0x7f, n * sizeof(float)); /* garbage: store must overwrite */
        if (relu) {
            ftm_nn_bn_relu_backward(a, dy, out, x, mean, rstd, g, gs, 100.0, N, C, HW);
            ftm_nn_bn_relu_backward_store(b, dy, out, x, mean, rstd, g, gs, 100.0, N, C, HW);
        } else {
            ftm_nn_bn_backward(a, dy, x, mean, rstd, g, gs, 100.0, N, C, HW);
            ftm_nn_bn_backward_store(b, dy, x, mean, rstd, g, gs, 100.0, N, C, HW);
        }
        ck_assert_int_eq(memcmp(a, b, n * sizeof(float)), 0);
    }
    ftm_nn_bn_forward(a, x, mean, rstd, g, rstd, N, C, HW); /* beta: any values */
    ftm_nn_add_relu_forward(out, a, dy, n);
    ftm_nn_bn_add_relu_forward(b, x, mean, rstd, g, rstd, dy, N, C, HW);
    ck_assert_int_eq(memcmp(out, b, n * sizeof(float)), 0);
    for (size_t i = 0; i < n; i++) /* out is the ReLU mask below again */
        out[i] = i % 3 ? x[i] : 0.0f;
    memset(a, 0, n * sizeof(float));
    memset(b, 0x7f, n * sizeof(float));
    ftm_nn_relu_backward(a, out, dy, n);
    ftm_nn_relu_backward_store(b, out, dy, n);
    ck_assert_int_eq(memcmp(a, b, n * sizeof(float)), 0);
    free(x); free(out); free(dy); free(a); free(b);
}
END_TEST

/* ftm_nn_conv2d_forward_stats = forward + ftm_nn_bn_partial, bit for bit:
 * direct 3x3 paths with the sums fused (stride 1 in chunks of 2 images
 * (2 + 1), stride 2) and a shape without them (5 columns). */
static const int stats_cfg[][6] = { /* N C H W OC stride */
    {3, 4, 24, 32, 8, 1}, {2, 3, 16, 16, 8, 2}, {2, 4, 5, 5, 4, 1},
};

START_TEST(conv_stats_equal_partial)
{
    const int *k = stats_cfg[_i];
    ftm_conv_dims d;
    ck_assert_int_eq(ftm_nn_conv_dims(&d, k[1], k[2], k[3], k[4], 3, k[5], 1), 0);
    size_t ni = (size_t)k[0] * k[1] * k[2] * k[3], no = (size_t)k[0] * k[4] * d.OH * d.OW;
    size_t nw = (size_t)k[4] * k[1] * 9;
    float *x = zalloc(ni), *w = zalloc(nw), *y1 = zalloc(no), *y2 = zalloc(no);
    float *col = zalloc(ftm_nn_conv_col_size(&d));
    double s1[16], s2[16];
    for (size_t i = 0; i < ni; i++)
        x[i] = (float)((i * 7919) % 211) / 37.0f - 2.0f;
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)((i * 104729) % 89) / 97.0f - 0.45f;
    ftm_nn_conv2d_forward(y1, col, x, w, k[0], &d, NULL);
    ftm_nn_bn_partial(s1, y1, k[0], k[4], d.OH * d.OW);
    ftm_nn_conv2d_forward_stats(y2, s2, col, x, w, k[0], &d, NULL);
    ck_assert_int_eq(memcmp(y1, y2, no * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(s1, s2, 2 * (size_t)k[4] * sizeof(double)), 0);
    free(x); free(w); free(y1); free(y2); free(col);
}
END_TEST

void add_fd_tests(TCase *tc);
void add_naive_tests(TCase *tc);

static Suite *nn_suite(void)
{
    Suite *s = suite_create("nn");
    TCase *tr = tcase_create("reference");
    tcase_add_test(tr, ref_linear);
    tcase_add_loop_test(tr, ref_conv, 0, 3);
    tcase_add_test(tr, ref_batchnorm);
    tcase_add_test(tr, ref_layernorm);
    tcase_add_loop_test(tr, ref_gelu, 0, 2);
    tcase_add_test(tr, ref_softmax_xent);
    tcase_add_test(tr, softmax_xent_bad_label);
    tcase_add_test(tr, ref_attention);
    tcase_add_test(tr, ref_basic_block);
    tcase_add_test(tr, store_equals_accumulate);
    tcase_add_loop_test(tr, conv_stats_equal_partial, 0, 3);
    suite_add_tcase(s, tr);
    TCase *tf = tcase_create("gradcheck");
    tcase_set_timeout(tf, 60);
    add_fd_tests(tf);
    suite_add_tcase(s, tf);
    TCase *tn = tcase_create("naive");
    tcase_set_timeout(tn, 60);
    add_naive_tests(tn);
    suite_add_tcase(s, tn);
    return s;
}

int main(void)
{
    ftm_nn_init();
    return test_run(nn_suite());
}
