/* 2-D allreduce, modeled: closed forms on a healthy torus, the paper's
 * common faults stay cheap, 2d-lines' pod bounds, never far above the
 * ring, and each schedule names what ran. (Exactness: test_2d.c.) */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/rng.h"
#include "ftmesh/runtime.h"
#include "ftmesh/error.h"
#include "ftmesh/test_hooks.h"
#include "test_util.h"
#include "test_2d_util.h"

/* Healthy R x C torus: the four phases back to back, both halves on
 * disjoint links. Row phase blocks Lr = (S/2)/C, column blocks Lc = Lr/R. */
START_TEST(test_closed_form_healthy_torus)
{
    int R = 3 + _i % 4, C = 3 + _i / 4;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, 1), 0);
    size_t count = (size_t)(2 * R * C) * 1000;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_build(&s, NULL, &m, count, FTM_RED_SUM_F32), 0);
    ftm_cost_params p = { 100e9, 1e-6, 900e9 };
    ftm_cost_result r;
    ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
    double Lr = (double)count * 4 / 2 / C, Lc = Lr / R;
    double want = (C - 1) * (2 * p.hop_s + Lr * (2 / p.link_Bps + 1 / p.hbm_Bps)) +
                  (R - 1) * (2 * p.hop_s + Lc * (2 / p.link_Bps + 1 / p.hbm_Bps));
    ck_assert_double_eq_tol(r.time_s, want, 1e-9 * want);
    /* a horizontal link carries 2(C-1) row blocks, a vertical one 2(R-1)
     * column blocks */
    ck_assert_uint_eq(r.max_link_bytes, (uint64_t)(2 * (C - 1) * Lr > 2 * (R - 1) * Lc ? 2 * (C - 1) * Lr : 2 * (R - 1) * Lc));
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Healthy n x n torus, concurrent: both halves' phases side by side on
 * disjoint links, so the row-first closed form with blocks of a quarter of
 * the buffer: L1 = (S/4)/n (phases 1 and 4), L2 = L1/n (phases 2 and 3).
 * Every directed link carries 2(n-1)(L1 + L2). */
START_TEST(test_closed_form_concurrent)
{
    int n = 3 + _i;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, n, n, 1), 0);
    size_t count = (size_t)(4 * n * n) * 1000;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_concurrent_build(&s, NULL, &m, count, FTM_RED_SUM_F32), 0);
    ftm_cost_params p = { 100e9, 1e-6, 900e9 };
    ftm_cost_result r;
    ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
    double L1 = (double)count * 4 / 4 / n, L2 = L1 / n;
    double want = (n - 1) * (2 * p.hop_s + L1 * (2 / p.link_Bps + 1 / p.hbm_Bps)) +
                  (n - 1) * (2 * p.hop_s + L2 * (2 / p.link_Bps + 1 / p.hbm_Bps));
    ck_assert_double_eq_tol(r.time_s, want, 1e-9 * want);
    ck_assert_uint_eq(r.max_link_bytes, (uint64_t)(2 * (n - 1) * (L1 + L2) + 0.5));
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, lb);
    for (int l = 0; l < m.nchips * 4; l++) /* all four links of every chip busy */
        ck_assert_uint_eq(lb[l], r.max_link_bytes);
    free(lb);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Google's "All-reduce bandwidth per Pod 340 TB/s" is 83% of the 4-link
 * ceiling 1024 x 4 x 100 GB/s = 409.6 TB/s; the row-first scheme's
 * ceiling is half that. Modeled pod busbw at BERT-large size. */
START_TEST(test_pod_busbw)
{
    if (sanitizer_scale())
        return;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 32, 32, 1), 0);
    size_t count = 340000000;
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    for (int conc = 0; conc < 2; conc++) {
        ftm_sched s;
        ck_assert_int_eq(conc ? ftm_allreduce_2d_concurrent_build(&s, NULL, &m, count, FTM_RED_SUM_F32)
                              : ftm_allreduce_2d_build(&s, NULL, &m, count, FTM_RED_SUM_F32), 0);
        ftm_cost_result r;
        ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
        double pod = (double)count * 4 / r.time_s * 2 * 1023 / 1024 * 1024; /* B/s */
        double ceil = 1024 * (conc ? 4 : 2) * p.link_Bps;
        ck_assert_double_lt(pod, ceil);
        ck_assert_double_gt(pod, 0.85 * ceil);
        if (conc)
            ck_assert_double_gt(pod, 340e12);
        ftm_sched_free(&s);
    }
    ftm_mesh_free(&m);
}
END_TEST

static double model(const ftm_mesh *m, size_t count)
{
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_build(&s, NULL, m, count, FTM_RED_SUM_F32), 0);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result r;
    ck_assert_int_eq(ftm_cost_sched(&s, m, &p, &r, NULL), 0);
    ftm_sched_free(&s);
    return r.time_s;
}

/* The paper's faults on a 16x16 torus, 100 MB: a genuine 2-D plan (bands
 * of at most 2 rows, every band ring edge load 1) and a bounded cost. The
 * bound (25%) is loose on purpose: the sweep reports the real figures. */
START_TEST(test_common_faults_stay_2d)
{
    ftm_mesh h;
    ck_assert_int_eq(ftm_mesh_init(&h, 16, 16, 1), 0);
    size_t count = 25000000;
    double t0 = model(&h, count);
    for (int f = 0; f < 3; f++) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_copy(&m, &h), 0);
        if (f == 0)
            ftm_mesh_fail_chip(&m, 5, 6);
        else if (f == 1)
            ftm_mesh_fail_host(&m, 6, 8);
        else
            ftm_mesh_fail_link(&m, 9, 3, 9, 4, 0);
        ftm_plan2d p;
        ck_assert_int_eq(ftm_plan2d_build(&m, &p), 0);
        ck_assert_int_ge(p.nbands, 15);
        ck_assert_int_eq(p.max_load, 1);
        for (int b = 0; b < p.nbands; b++)
            ck_assert_int_le(p.bands[b].nrows, 2);
        ftm_plan2d_free(&p);
        double t = model(&m, count);
        ck_assert_double_ge(t, t0);
        ck_assert_double_le(t, 1.25 * t0);
        ftm_mesh_free(&m);
    }
    ftm_mesh_free(&h);
}
END_TEST

/* The target: one dead host costs the 2-D allreduce at most 10%
 * more modeled time than the healthy torus, at ResNet-50 (25.6M fp32) and
 * BERT-large (340M) sizes on 32x32, and at ResNet-50 size on the 512-chip
 * 16x32 slice. (A 16x16 torus is no analogue: there a dead host removes
 * 2 of 16 columns, so the adopted shares alone cost 16/14 - 1 = 14%.)
 * Model only. */
START_TEST(test_dead_host_target)
{
    static const int pods[] = { 0, 1, 1 }; /* 16x32, 32x32 (sweep.h) */
    static const size_t count[] = { 25600000, 25600000, 340000000 };
    if (_i > 0 && small_scale())
        return; /* the 16x32 case still runs */
    ftm_mesh h, m;
    ck_assert_int_eq(ftm_sweep_scenario_mesh(&h, pods[_i], pod_scenario("healthy")), 0);
    ck_assert_int_eq(ftm_sweep_scenario_mesh(&m, pods[_i], pod_scenario("dead-host")), 0);
    int R = h.rows, C = h.cols;
    double t0 = model(&h, count[_i]), t = model(&m, count[_i]);
    ck_assert_msg(t <= 1.10 * t0, "%dx%d dead host: %.4g ms vs healthy %.4g ms (+%.1f%%)", R, C,
                  t * 1e3, t0 * 1e3, 100 * (t / t0 - 1));
    ck_assert_double_ge(t, t0);
    ftm_mesh_free(&m);
    ftm_mesh_free(&h);
}
END_TEST


/* Models s (built on m) with the TPU-v3 defaults and frees it. */
static ftm_cost_result model_built(ftm_sched *s, const ftm_mesh *m)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result r;
    ck_assert_int_eq(ftm_cost_sched(s, m, &p, &r, NULL), 0);
    ftm_sched_free(s);
    return r;
}

static ftm_cost_result model_full(const char *name, const ftm_mesh *m, size_t count)
{
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_find(name)->build(&s, NULL, m, count, FTM_RED_SUM_F32), 0);
    return model_built(&s, m);
}

static double model_algo(const char *name, const ftm_mesh *m, size_t count)
{
    return model_full(name, m, count).time_s;
}

/* 2d-lines' own schedule (chunks picked as the registry entry does),
 * without the comparison with 2d-concurrent's. */
static ftm_cost_result model_lines_own(const ftm_mesh *m, size_t count)
{
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_lines_build_k(&s, NULL, m, count, FTM_RED_SUM_F32, 0), 0);
    return model_built(&s, m);
}

/* The pod scale (what ftmesh sweep shows): with one dead host,
 * chip or link, 2d-lines against the best healthy time (its own, at most
 * 2d-concurrent's) stays within the bounds it
 * meets today -- NOT the goals, see doc/results.md -- and no link
 * carries more than 10% over the healthy busiest link (15% with two
 * hosts; 2d-concurrent doubles it). _i < 12: mesh (16x32, 32x32) x fault x model. */
START_TEST(test_lines_pod_bounds)
{
    /* [mesh][model] largest overhead measured over the three faults,
     * rounded up by about 3 points (ftmesh sweep, README); at BERT-large
     * size against a healthy time whose reduce-scatter hides most of
     * its reductions (src/collective/pieces.c). */
    static const double bound[2][2] = { { 0.69, 0.40 }, { 0.66, 0.37 } };
    static const size_t count[2] = { 25600000, 340000000 };
    /* _i >= 12: two dead hosts half a torus apart (sweep --throughput's
     * scenario), 32x32 ResNet-50 and BERT-large, 16x32 BERT-large. */
    static const double two_hosts[3] = { 0.75, 0.46, 0.55 };
    int two = _i >= 12, mi = two ? _i < 14 : _i / 6, f = (_i / 2) % 3;
    int md = two ? _i != 12 : _i % 2, R = mi ? 32 : 16;
    double b = two ? two_hosts[_i - 12] : bound[mi][md];
    if (_i != 4 && (sanitizer_scale() || (small_scale() && _i != 14)))
        return;
    static const char *const FAULT[3] = { "dead-host", "dead-chip", "dead-link" };
    ftm_mesh h, m;
    ck_assert_int_eq(ftm_sweep_scenario_mesh(&h, mi, pod_scenario("healthy")), 0);
    ck_assert_int_eq(ftm_sweep_scenario_mesh(&m, mi, pod_scenario(two ? "two-hosts" : FAULT[f])), 0);
    ck_assert_int_eq(h.rows, R);
    ftm_cost_result h2 = model_full("2d-concurrent", &h, count[md]);
    ftm_cost_result hl = model_full("2d-lines", &h, count[md]);
    ftm_cost_result t = model_full("2d-lines", &m, count[md]);
    /* healthy, 2d-lines is 2d-concurrent with two-sided column rings: the
     * best healthy time (0.3-4.4% faster on the pods) */
    ck_assert_double_le(hl.time_s, h2.time_s);
    double ovh = t.time_s / hl.time_s - 1;
    ck_assert_msg(ovh >= 0 && ovh <= b, "%dx32 case %d: +%.1f%% (bound %.0f%%)", R, _i, 100 * ovh,
                  100 * b);
    /* 2d-lines is the faster of its own schedule and 2d-concurrent's */
    ftm_cost_result own = model_lines_own(&m, count[md]);
    ftm_cost_result c2 = model_full("2d-concurrent", &m, count[md]);
    ck_assert_double_eq(t.time_s, own.time_s < c2.time_s ? own.time_s : c2.time_s);
    /* its own: two hosts on 16x32 take 4 of 16 rows, the adopted share, +12% */
    double lim = (two ? 1.15 : 1.10) * (double)h2.max_link_bytes;
    ck_assert_uint_le(own.max_link_bytes, (uint64_t)lim);
    ftm_mesh_free(&m);
    ftm_mesh_free(&h);
}
END_TEST

/* Healthy, 2d-lines moves the same bytes per link on the 16x32 torus
 * as on the 32x32 one, so it takes about as long: the transposed half's
 * 16-chip rows run their row phase in two passes, so that its steps are
 * as long as the 32-chip rows' (before: 10.684 / 0.891 ms on 16x32
 * against 7.272 / 0.634 on 32x32, +47% and +41%; now +2.9% / +2.5%). */
START_TEST(test_lines_pod_steps_matched)
{
    static const size_t count[2] = { 25600000, 340000000 };
    if (sanitizer_scale())
        return;
    ftm_mesh a, b;
    ck_assert_int_eq(ftm_mesh_init(&a, 16, 32, 1), 0);
    ck_assert_int_eq(ftm_mesh_init(&b, 32, 32, 1), 0);
    double ta = model_algo("2d-lines", &a, count[_i]), tb = model_algo("2d-lines", &b, count[_i]);
    ck_assert_msg(ta <= 1.05 * tb, "16x32 %.3f ms, 32x32 %.3f ms", ta * 1e3, tb * 1e3);
    ftm_mesh_free(&a);
    ftm_mesh_free(&b);
}
END_TEST

/* A healthy mesh never gets "alternate" bands (nothing to go around),
 * whatever its shape: 1x1 .. 8x8, open and torus. */
START_TEST(test_healthy_no_alternate)
{
    for (int R = 1; R <= 8; R++)
        for (int C = 1; C <= 8; C++) {
            ftm_mesh m;
            ck_assert_int_eq(ftm_mesh_init(&m, R, C, _i), 0);
            ftm_plan2d p;
            ck_assert_int_eq(ftm_plan2d_build(&m, &p), 0);
            check_plan(&m, &p);
            for (int b = 0; b < p.nbands; b++)
                ck_assert_msg(!p.bands[b].alternate, "%dx%d%s band %d alternate", R, C,
                              _i ? " torus" : "", b);
            ftm_plan2d_free(&p);
            ftm_mesh_free(&m);
        }
}
END_TEST

/* Bands use the router's ring where it is better than a snake: 3x3 minus
 * its centre is one band whose rings are the 8-hop cycle round the hole
 * (a snake needs 14 hops, with two 4-hop detours). */
START_TEST(test_band_router_ring)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 1, 1), 0);
    ftm_plan2d p;
    ck_assert_int_eq(ftm_plan2d_build(&m, &p), 0);
    ck_assert_int_eq(p.nbands, 1);
    ck_assert_int_eq(p.bands[0].fwd.path_off[8], 8);
    ck_assert_int_eq(p.bands[0].rev.path_off[8], 8);
    ck_assert_int_eq(p.max_load, 1);
    ck_assert(p.bands[0].alternate);
    ftm_plan2d_free(&p);
    ftm_mesh_free(&m);
}
END_TEST

/* On every sweep mesh (2x2 .. 8x8, open and torus, every fault kind) "2d"
 * and "2d-concurrent" are modeled at most 2x the 1-D ring (1 MB). */
START_TEST(test_within_2x_ring)
{
    for (int j = 0; j < 7; j++) {
        int i = _i * 7 + j;
        if (small_scale() && j != 3)
            continue;
        ftm_mesh m;
        if (sweep_mesh(i, &m)) {
            ftm_mesh_free(&m);
            continue;
        }
        double ring = model_algo("ring", &m, 250000);
        static const char *const names[] = { "2d", "2d-concurrent", "2d-lines" };
        for (int a = 0; a < 3; a++) {
            double t = model_algo(names[a], &m, 250000);
            ck_assert_msg(t <= 2 * ring, "sweep mesh %d %dx%d: %s %.4g ms, ring %.4g ms", i, m.rows,
                          m.cols, names[a], t * 1e3, ring * 1e3);
        }
        ftm_mesh_free(&m);
    }
}
END_TEST

/* Graceful degradation on bigger crowded meshes (100 MB): 2d,
 * 2d-concurrent and 2d-lines never above 2x the ring, and with two faults
 * below it (measured: 2d 2.21 ms, ring 3.00 ms on the 16x16 torus). */
START_TEST(test_crowded_degrades_gracefully)
{
    static const int cfg[][4] = { /* rows, cols, torus, random dead chips */
        { 16, 16, 1, 2 }, { 16, 16, 1, 40 }, { 12, 12, 0, 20 }, { 16, 16, 0, 60 } };
    if (_i > 0 && small_scale())
        return;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, cfg[_i][0], cfg[_i][1], cfg[_i][2]), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&m, cfg[_i][3], 7), 0);
    int x, y; /* the seed leaves the healthy chips connected: checked, not assumed */
    ck_assert_int_eq(ftm_mesh_check_connected(&m, &x, &y), 0);
    double ring = model_algo("ring", &m, 25000000);
    static const char *const names[] = { "2d", "2d-concurrent", "2d-lines" };
    for (int a = 0; a < 3; a++) {
        double t = model_algo(names[a], &m, 25000000);
        ck_assert_msg(t <= 2 * ring, "case %d %s: %.4g ms vs ring %.4g ms", _i, names[a], t * 1e3,
                      ring * 1e3);
        if (_i == 0) /* two faults: still a 2-D schedule, below the ring */
            ck_assert_double_lt(t, 0.8 * ring);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* A schedule names what ran: on a small torus with a hole, 2d runs the
 * ring's schedule (algo "ring", with the reason); its own schedule is
 * still there to build (algo "2d", no reason). Where no line layout fits
 * (a 2x2 mesh with one chip left) 2d-lines runs 2d-concurrent's schedule
 * and its own build says FTM_ENOTSUP; on a 16x16 torus with one dead chip
 * each 2-D algorithm runs its own. */
static void built(const char *algo, int own, const ftm_mesh *m, int want_rc, const char *want_algo,
                  int want_reason)
{
    ftm_sched s;
    int rc = own ? ftm_allreduce_build_own(algo, &s, NULL, m, 25000, FTM_RED_SUM_F32)
                 : ftm_allreduce_find(algo)->build(&s, NULL, m, 25000, FTM_RED_SUM_F32);
    ck_assert_msg(rc == want_rc, "%s%s on %dx%d: %s", algo, own ? " (own)" : "", m->rows, m->cols,
                  ftm_strerror(rc));
    if (rc)
        return;
    ck_assert_str_eq(s.algo, want_algo);
    ck_assert_int_eq(s.fallback != NULL, want_reason);
    ftm_sched_free(&s);
}

START_TEST(test_schedule_names_what_ran)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 6, 6, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 2), 0);
    built("2d", 0, &m, 0, "ring", 1);
    built("2d", 1, &m, 0, "2d", 0);
    built("2d-concurrent", 0, &m, 0, "ring", 1);
    built("2d-concurrent", 1, &m, 0, "2d-concurrent", 0);
    built("2d-lines", 1, &m, 0, "2d-lines", 0);
    built("ring", 1, &m, 0, "ring", 0);
    built("no-such", 1, &m, FTM_EINVAL, NULL, 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    for (int c = 1; c < 4; c++)
        ck_assert_int_eq(ftm_mesh_fail_chip(&m, c / 2, c % 2), 0);
    built("2d-lines", 0, &m, 0, "2d-concurrent", 1);
    built("2d-lines", 1, &m, FTM_ENOTSUP, NULL, 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 5, 5), 0);
    static const char *const names[] = { "2d", "2d-concurrent", "2d-lines" };
    for (int a = 0; a < 3; a++)
        built(names[a], 0, &m, 0, names[a], 0);
    ftm_mesh_free(&m);
}
END_TEST

Suite *twod_model_suite(void);
Suite *twod_model_suite(void)
{
    Suite *su = suite_create("allreduce_2d_model");
    TCase *tm = tcase_create("model");
    tcase_add_loop_test(tm, test_closed_form_healthy_torus, 0, 16);
    tcase_add_loop_test(tm, test_closed_form_concurrent, 0, 6);
    tcase_add_test(tm, test_common_faults_stay_2d);
    tcase_add_loop_test(tm, test_dead_host_target, 0, 3);
    tcase_add_test(tm, test_pod_busbw);
    tcase_add_loop_test(tm, test_lines_pod_bounds, 0, 15);
    tcase_add_loop_test(tm, test_lines_pod_steps_matched, 0, 2);
    tcase_add_loop_test(tm, test_healthy_no_alternate, 0, 2);
    tcase_add_test(tm, test_band_router_ring);
    tcase_add_loop_test(tm, test_within_2x_ring, 0, 70);
    tcase_add_loop_test(tm, test_crowded_degrades_gracefully, 0, 4);
    tcase_add_test(tm, test_schedule_names_what_ran);
    tcase_set_timeout(tm, 120);
    suite_add_tcase(su, tm);
    return su;
}

int main(void)
{
    return test_run(twod_model_suite());
}
