/* 2-D allreduce: plans (bands and rings) are valid, the schedule is an
 * exact allreduce for every fault pattern of the sweep (sequential
 * executor; a few on real chip threads), closed form on a healthy torus,
 * and the paper's common faults stay cheap. */
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

/* Small integers: every float sum over <= 4096 chips is exact. */
static float input(int chip, size_t k) { return (float)((int)((chip * 13 + (int)(k % 1000) * 7) % 9) - 4); }

/* Mesh number i of the sweep: sizes 2x2 .. 8x8, open and torus, faults of
 * kind 0 none, 1 random chips, 2 a host, 3 links (both ways and one way),
 * 4 a mix; all drawn from the seed i. Returns 0 if the faults leave the
 * healthy chips connected. */
static int sweep_mesh(int i, ftm_mesh *m)
{
    int rows = 2 + i % 7, cols = 2 + (i / 7) % 7, torus = (i / 49) % 2, kind = (i / 98) % 5;
    ck_assert_int_eq(ftm_mesh_init(m, rows, cols, torus), 0);
    uint64_t seed = 1000 + (uint64_t)i;
    int n = rows * cols;
    if (kind == 1 || kind == 4)
        ftm_mesh_fail_random(m, 1 + (int)(ftm_rng_u64(seed, 1, 0, 0, 0) % (uint64_t)(n / 4 + 1)), seed);
    if ((kind == 2 || kind == 4) && rows >= 2 && cols >= 2) {
        int r = (int)(ftm_rng_u64(seed, 2, 0, 0, 0) % (uint64_t)(rows - 1));
        int c = (int)(ftm_rng_u64(seed, 3, 0, 0, 0) % (uint64_t)(cols - 1));
        ftm_mesh_fail_host(m, r, c);
    }
    if (kind == 3 || kind == 4)
        for (int j = 0; j < 3; j++) {
            int a = (int)(ftm_rng_u64(seed, 4, (uint64_t)j, 0, 0) % (uint64_t)n);
            int d = (int)(ftm_rng_u64(seed, 5, (uint64_t)j, 0, 0) % 4);
            int b = ftm_mesh_neighbor(m, a, d);
            if (b >= 0)
                ftm_mesh_fail_link(m, a / cols, a % cols, b / cols, b % cols, j == 1);
        }
    int x, y;
    if (ftm_mesh_healthy_count(m) == 0)
        return -1;
    return ftm_mesh_check_connected(m, &x, &y);
}

/* Every band ring edge follows live links from its chip to the next, and
 * the bands cover every healthy chip exactly once. */
static void check_plan(const ftm_mesh *m, const ftm_plan2d *p)
{
    int *seen = calloc((size_t)m->nchips, sizeof(int));
    for (int b = 0; b < p->nbands; b++) {
        const ftm_plan2d_band *bd = &p->bands[b];
        ck_assert_int_eq(bd->fwd.n, bd->n);
        ck_assert_int_eq(bd->rev.n, bd->n);
        for (int i = 0; i < bd->n; i++)
            seen[bd->owners[i]]++;
        for (int r = 0; r < 2; r++) {
            const ftm_ring *g = r ? &bd->rev : &bd->fwd;
            for (int i = 0; i < g->n; i++) {
                int at = g->chips[i];
                ck_assert_int_eq(ftm_mesh_row(m, at) >= bd->row0 && ftm_mesh_row(m, at) < bd->row0 + bd->nrows, 1);
                for (int k = g->path_off[i]; k < g->path_off[i + 1]; k++) {
                    ck_assert(ftm_mesh_link_live(m, at, g->dirs[k]));
                    at = ftm_mesh_neighbor(m, at, g->dirs[k]);
                }
                ck_assert_int_eq(at, g->n > 1 ? g->chips[(i + 1) % g->n] : g->chips[i]);
            }
        }
    }
    for (int c = 0; c < m->nchips; c++)
        ck_assert_int_eq(seen[c], ftm_mesh_alive(m, c) ? 1 : 0);
    free(seen);
}

static void check_exact(const ftm_mesh *m, const ftm_sched *s, float **b, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        float want = 0;
        for (int c = 0; c < m->nchips; c++)
            if (ftm_mesh_alive(m, c))
                want += input(c, k);
        for (int c = 0; c < m->nchips; c++)
            if (ftm_mesh_alive(m, c) && s->prog[c].nsteps >= 0)
                ck_assert_msg(b[c][k] == want, "chip %d elem %zu: %g want %g", c, k, b[c][k], want);
    }
}

/* Sweep mesh i through "2d" (conc 0) or "2d-concurrent" (conc 1). */
static void sweep_one(int i, int conc)
{
    ftm_mesh m;
    int conn = sweep_mesh(i, &m);
    ftm_sched s;
    size_t count = 1 + (size_t)(i * 37) % 300; /* includes count < chips */
    int rc = conc ? ftm_allreduce_2d_concurrent_build(&s, NULL, &m, count, FTM_RED_SUM_F32)
                  : ftm_allreduce_2d_build(&s, NULL, &m, count, FTM_RED_SUM_F32);
    if (conn) {
        ck_assert(rc == FTM_EPARTITION || rc == FTM_EALLDEAD);
        ftm_mesh_free(&m);
        return;
    }
    ck_assert_int_eq(rc, 0);
    ftm_plan2d p;
    ck_assert_int_eq(ftm_plan2d_build(&m, &p), 0);
    check_plan(&m, &p);
    ftm_plan2d_free(&p);
    float **b = calloc((size_t)m.nchips, sizeof(float *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * sizeof(float));
        for (size_t k = 0; k < count; k++)
            b[c][k] = input(c, k);
    }
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, (void **)b), 0);
    check_exact(&m, &s, b, count);
    for (int c = 0; c < m.nchips; c++)
        free(b[c]);
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}

/* Seven sweep meshes per loop index (one fork each, not one per mesh),
 * both algorithms. Under sanitizers one of the seven (all sizes and fault
 * kinds still appear: 7 is prime to the size cycle of 49). */
START_TEST(test_sweep_exact)
{
    for (int j = 0; j < 7; j++)
        if (!small_scale() || j == 3)
            for (int conc = 0; conc < 2; conc++)
                sweep_one(_i * 7 + j, conc);
}
END_TEST

/* Sweep mesh i through 2d-lines' own schedule with k chunks (no
 * fallback); two meshes in three with reducing transfers of more than 1-4
 * elements sent as two halves (at pod scale: above 1.8 MB). Returns 1 if
 * it was built (and checked), 0 if refused. */
static int sweep_lines(int i, int k)
{
    ftm_mesh m;
    int conn = sweep_mesh(i, &m);
    ftm_sched s;
    size_t count = 1 + (size_t)(i * 37) % 300;
    size_t split = i % 3 ? 1 + (size_t)i % 4 : 0;
    int rc = ftm_allreduce_2d_lines_build_split(&s, NULL, &m, count, FTM_RED_SUM_F32, k, split);
    if (conn || rc == FTM_ENOTSUP) {
        ck_assert(rc == FTM_ENOTSUP || rc == FTM_EPARTITION || rc == FTM_EALLDEAD);
        ftm_mesh_free(&m);
        return 0;
    }
    ck_assert_int_eq(rc, 0);
    float **b = calloc((size_t)m.nchips, sizeof(float *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * sizeof(float));
        for (size_t x = 0; x < count; x++)
            b[c][x] = input(c, x);
    }
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, (void **)b), 0);
    check_exact(&m, &s, b, count);
    for (int c = 0; c < m.nchips; c++)
        free(b[c]);
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
    return 1;
}

/* 2d-lines on the sweep's meshes, 1 to 4 chunks; it may refuse a faulty
 * mesh (a row cut twice), never a healthy one (fault kind 0). */
START_TEST(test_lines_sweep_exact)
{
    for (int j = 0; j < 7; j++)
        if (!small_scale() || j == 3) {
            int i = _i * 7 + j, built = sweep_lines(i, 1 + (_i + j) % 4);
            if ((i / 98) % 5 == 0)
                ck_assert_msg(built, "sweep mesh %d (healthy) refused", i);
        }
}
END_TEST

/* The faults 2d-lines is for, on tori (dead host, chip, link, two hosts,
 * one of them wrapping round; rows cut twice, multi_faults) and open
 * meshes, every k of 1..5, float and int64: built (not refused), exact on
 * every chip, and the cost model charges each link what the schedule
 * sends. */
/* Rows or columns cut more than once (segments folded into a helper
 * row): f 5 two hosts in the same rows, 6 four hosts (two pairs in the
 * same rows, two pairs in the same columns), 7 two dead chips in one row, 8 a
 * dead chip and a dead link in one row, 9 (open mesh) a dead chip, 10
 * (open mesh) a host and a dead chip in one column. */
static void multi_faults(ftm_mesh *m, int R, int C, int f)
{
    if (f == 5) {
        ftm_mesh_fail_host(m, 2, 0);
        ftm_mesh_fail_host(m, 2, C / 2);
    } else if (f == 6) { /* the helper rows R/2 - 1 and R - 1 take folds from both sides */
        ftm_mesh_fail_host(m, 0, 0);
        ftm_mesh_fail_host(m, 0, C / 2);
        ftm_mesh_fail_host(m, R / 2, C / 2);
        ftm_mesh_fail_host(m, R / 2, 1);
    } else if (f == 7) {
        ftm_mesh_fail_chip(m, 1, 1);
        ftm_mesh_fail_chip(m, 1, C - 3);
    } else if (f == 8) {
        ftm_mesh_fail_chip(m, R - 2, 2);
        ftm_mesh_fail_link(m, R - 2, C - 2, R - 2, C - 1, 0);
    } else if (f == 9)
        ftm_mesh_fail_chip(m, R / 2, C / 2);
    else if (f == 10) {
        ftm_mesh_fail_host(m, 2, 3);
        ftm_mesh_fail_chip(m, R - 1, 4);
    }
}

static void lines_case(int R, int C, int f, int k, ftm_red red)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, f < 9), 0);
    if (f == 0)
        ftm_mesh_fail_host(&m, 2, 3);
    else if (f == 1)
        ftm_mesh_fail_chip(&m, R - 1, 0);
    else if (f == 2)
        ftm_mesh_fail_link(&m, 1, C - 1, 1, 0, 0);
    else if (f == 3) {
        ftm_mesh_fail_host(&m, 0, 2);
        ftm_mesh_fail_host(&m, R / 2, C - 1); /* wraps round to column 0 */
    } else if (f == 4)
        ftm_mesh_fail_link(&m, 3, 2, 4, 2, 1); /* one way */
    else
        multi_faults(&m, R, C, f);
    size_t count = 1000 + (size_t)(k * 7 + f), es = ftm_red_elem_size(red);
    ftm_sched s;
    /* k 2 (int64) and 3: reducing transfers of more than 5 elements in two halves */
    int rc = k == 2 || k == 3 ? ftm_allreduce_2d_lines_build_split(&s, NULL, &m, count, red, k, 5)
                              : ftm_allreduce_2d_lines_build_k(&s, NULL, &m, count, red, k);
    ck_assert_msg(rc == 0, "%dx%d fault %d k %d: %s", R, C, f, k, ftm_strerror(rc));
    char **b = calloc((size_t)m.nchips, sizeof(char *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * es);
        for (size_t x = 0; x < count; x++)
            if (red == FTM_RED_SUM_F32)
                ((float *)b[c])[x] = input(c, x);
            else
                ((int64_t *)b[c])[x] = ((int64_t)1 << 40) * c + (int64_t)x;
    }
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, (void **)b), 0);
    if (red == FTM_RED_SUM_F32)
        check_exact(&m, &s, (float **)b, count);
    int64_t cs = 0, nh = 0;
    for (int c = 0; c < m.nchips; c++)
        if (ftm_mesh_alive(&m, c)) {
            cs += c;
            nh++;
        }
    for (int c = 0; c < m.nchips; c++) {
        for (size_t x = 0; red == FTM_RED_SUM_I64 && ftm_mesh_alive(&m, c) && x < count; x++)
            ck_assert(((int64_t *)b[c])[x] == ((int64_t)1 << 40) * cs + nh * (int64_t)x);
        free(b[c]);
    }
    free(b);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 8);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result r;
    ftm_sched_link_bytes(&s, &m, lb);
    ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, lb + m.nchips * 4), 0);
    for (int l = 0; l < m.nchips * 4; l++)
        ck_assert_uint_eq(lb[l], lb[m.nchips * 4 + l]);
    free(lb);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}

START_TEST(test_lines_torus_faults)
{
    /* 6x10 and 6x16: the transposed half's rows are shorter, so it runs
     * its row phase as 2 and 3 passes (match_passes); 9x7 and 7x11: two
     * pass counts are candidates (1 or 2 for both), the faster is kept */
    static const int dims[][2] = { { 8, 8 }, { 6, 10 }, { 9, 7 }, { 6, 16 }, { 7, 11 } };
    /* make check: every fourth fault position, from a different one per
     * mesh */
    int fstep = quick_scale() ? 4 : 1;
    for (int f = quick_scale() ? _i % 4 : 0; f < 11; f += fstep)
        for (int k = 1; k <= 5; k++)
            lines_case(dims[_i][0], dims[_i][1], f, k, k == 2 ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32);
}
END_TEST

START_TEST(test_int64_exact)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 6, 5, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 4), 0); /* wraps around */
    ftm_sched s;
    size_t count = 211;
    ck_assert_int_eq(ftm_allreduce_2d_build(&s, NULL, &m, count, FTM_RED_SUM_I64), 0);
    int64_t **b = calloc((size_t)m.nchips, sizeof(int64_t *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * sizeof(int64_t));
        for (size_t k = 0; k < count; k++)
            b[c][k] = ((int64_t)1 << 40) * c + (int64_t)k;
    }
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, (void **)b), 0);
    int64_t cs = 0, nh = 0;
    for (int c = 0; c < m.nchips; c++)
        if (ftm_mesh_alive(&m, c)) {
            cs += c;
            nh++;
        }
    for (int c = 0; c < m.nchips; c++) {
        if (ftm_mesh_alive(&m, c))
            for (size_t k = 0; k < count; k++)
                ck_assert(b[c][k] == ((int64_t)1 << 40) * cs + nh * (int64_t)k);
        free(b[c]);
    }
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

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
    static const int rows[] = { 16, 32, 32 };
    static const size_t count[] = { 25600000, 25600000, 340000000 };
    if (_i > 0 && small_scale())
        return; /* the 16x32 case still runs */
    int R = rows[_i], C = 32;
    ftm_mesh h, m;
    ck_assert_int_eq(ftm_mesh_init(&h, R, C, 1), 0);
    ck_assert_int_eq(ftm_mesh_copy(&m, &h), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, R / 2, C / 2), 0);
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
 * meets today -- NOT the 10% goal, see doc/results.md -- and no link
 * carries more than 10% over the healthy busiest link (15% with two
 * hosts; 2d-concurrent doubles it). _i < 12: mesh (16x32, 32x32) x fault x model. */
START_TEST(test_lines_pod_bounds)
{
    /* [mesh][model] largest overhead measured over the three faults,
     * rounded up by about 3 points (ftmesh sweep, README). */
    static const double bound[2][2] = { { 0.66, 0.35 }, { 0.63, 0.32 } };
    static const size_t count[2] = { 25600000, 340000000 };
    /* _i >= 12: two dead hosts half a torus apart (sweep --throughput's
     * scenario), 32x32 ResNet-50 and BERT-large, 16x32 BERT-large. */
    static const double two_hosts[3] = { 0.72, 0.40, 0.49 };
    int two = _i >= 12, mi = two ? _i < 14 : _i / 6, f = (_i / 2) % 3;
    int md = two ? _i != 12 : _i % 2, R = mi ? 32 : 16;
    double b = two ? two_hosts[_i - 12] : bound[mi][md];
    if (_i != 4 && (sanitizer_scale() || (small_scale() && _i != 14)))
        return;
    ftm_mesh h, m;
    ck_assert_int_eq(ftm_mesh_init(&h, R, 32, 1), 0);
    ck_assert_int_eq(ftm_mesh_copy(&m, &h), 0);
    if (two) {
        ftm_mesh_fail_host(&m, R / 4, 8);
        ftm_mesh_fail_host(&m, 3 * R / 4, 24);
    } else if (f == 0)
        ftm_mesh_fail_host(&m, R / 2, 16);
    else if (f == 1)
        ftm_mesh_fail_chip(&m, R / 2, 16);
    else
        ftm_mesh_fail_link(&m, R / 2, 16, R / 2, 17, 0);
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
    ftm_mesh_fail_random(&m, cfg[_i][3], 7);
    int x, y;
    if (ftm_mesh_check_connected(&m, &x, &y)) {
        ftm_mesh_free(&m);
        return;
    }
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

typedef struct thr_ctx { const ftm_sched *s; float **b; } thr_ctx;

static int chip_fn(ftm_chip *chip, void *arg)
{
    thr_ctx *x = arg;
    return ftm_chip_exec(chip, x->s, x->b[ftm_chip_id(chip)]);
}

/* A few sweep meshes through real chip threads (0-4 "2d", 5-9
 * "2d-concurrent"). */
START_TEST(test_threads_exact)
{
    static const int cases[] = { 48 + 98, 40 + 196, 47 + 294, 30 + 392, 55 + 98 };
    int conc = _i >= 5;
    ftm_mesh m;
    if (sweep_mesh(cases[_i % 5], &m)) {
        ftm_mesh_free(&m);
        return;
    }
    size_t count = 4099;
    ftm_sched s;
    ck_assert_int_eq(conc ? ftm_allreduce_2d_concurrent_build(&s, NULL, &m, count, FTM_RED_SUM_F32)
                          : ftm_allreduce_2d_build(&s, NULL, &m, count, FTM_RED_SUM_F32), 0);
    float **b = calloc((size_t)m.nchips, sizeof(float *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * sizeof(float));
        for (size_t k = 0; k < count; k++)
            b[c][k] = input(c, k);
    }
    ftm_rt *rt;
    ftm_rt_config cfg = { 0, 0, 10.0, 0 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    thr_ctx x = { &s, b };
    ck_assert_int_eq(ftm_rt_run(rt, chip_fn, &x), 0);
    check_exact(&m, &s, b, count);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, lb);
    for (int c = 0; c < m.nchips; c++)
        for (int d = 0; d < 4; d++) {
            uint64_t bytes, pkts;
            ftm_rt_link_stats(rt, c, d, &bytes, &pkts);
            ck_assert_uint_eq(bytes, lb[c * 4 + d]);
        }
    free(lb);
    ftm_rt_destroy(rt);
    for (int c = 0; c < m.nchips; c++)
        free(b[c]);
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* 2d-lines (3 chunks) on real chip threads: exact, and the bytes the
 * runtime counts on every link are the schedule's (hence the model's).
 * 3 and 4: rows cut twice (segments folded into a helper row). */
START_TEST(test_lines_threads)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, _i % 3 ? 6 : 8, _i % 3 ? 10 : 8, _i != 4), 0);
    if (_i == 0)
        ftm_mesh_fail_host(&m, 3, 5);
    else if (_i == 1)
        ftm_mesh_fail_chip(&m, 2, 9);
    else if (_i == 2)
        ftm_mesh_fail_link(&m, 4, 4, 5, 4, 1);
    else if (_i == 3) {
        ftm_mesh_fail_host(&m, 2, 1);
        ftm_mesh_fail_host(&m, 2, 5);
    } else { /* open 6x10: a dead chip and a dead link in row 2 */
        ftm_mesh_fail_chip(&m, 2, 3);
        ftm_mesh_fail_link(&m, 2, 6, 2, 7, 0);
    }
    size_t count = 4099;
    ftm_sched s;
    /* odd cases: reducing transfers of more than 100 elements in two halves */
    ck_assert_int_eq(ftm_allreduce_2d_lines_build_split(&s, NULL, &m, count, FTM_RED_SUM_F32, 3,
                                                        _i % 2 ? 100 : 0), 0);
    float **b = calloc((size_t)m.nchips, sizeof(float *));
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * sizeof(float));
        for (size_t k = 0; k < count; k++)
            b[c][k] = input(c, k);
    }
    ftm_rt *rt;
    ftm_rt_config cfg = { 0, 0, 10.0, 0 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    thr_ctx x = { &s, b };
    ck_assert_int_eq(ftm_rt_run(rt, chip_fn, &x), 0);
    check_exact(&m, &s, b, count);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, lb);
    for (int c = 0; c < m.nchips; c++)
        for (int d = 0; d < 4; d++) {
            uint64_t bytes, pkts;
            ftm_rt_link_stats(rt, c, d, &bytes, &pkts);
            ck_assert_uint_eq(bytes, lb[c * 4 + d]);
        }
    free(lb);
    ftm_rt_destroy(rt);
    for (int c = 0; c < m.nchips; c++)
        free(b[c]);
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

Suite *twod_suite(void);
Suite *twod_suite(void)
{
    Suite *su = suite_create("allreduce_2d");
    TCase *tc = tcase_create("sweep");
    tcase_add_loop_test(tc, test_sweep_exact, 0, 70);
    tcase_add_loop_test(tc, test_lines_sweep_exact, 0, 70);
    tcase_add_loop_test(tc, test_lines_torus_faults, 0, 5);
    tcase_add_test(tc, test_int64_exact);
    tcase_add_loop_test(tc, test_closed_form_healthy_torus, 0, 16);
    tcase_add_loop_test(tc, test_closed_form_concurrent, 0, 6);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(su, tc);
    TCase *tm = tcase_create("model");
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
    TCase *tt = tcase_create("threads");
    tcase_add_loop_test(tt, test_threads_exact, 0, 10);
    tcase_add_loop_test(tt, test_lines_threads, 0, 5);
    tcase_set_timeout(tt, 60);
    suite_add_tcase(su, tt);
    return su;
}

int main(void)
{
    return test_run(twod_suite());
}
