/* 2-D allreduce: plans (bands and rings) are valid and the schedule is an
 * exact allreduce for every fault pattern of the sweep (sequential
 * executor; a few on real chip threads). The modeled times:
 * test_2d_model.c. */
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

static void check_exact(const ftm_mesh *m, float **b, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        float want = 0;
        for (int c = 0; c < m->nchips; c++)
            if (ftm_mesh_alive(m, c))
                want += input(c, k);
        for (int c = 0; c < m->nchips; c++)
            if (ftm_mesh_alive(m, c))
                test_assert(b[c][k] == want, "chip %d elem %zu: %g want %g", c, k, b[c][k], want);
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
    check_exact(&m, b, count);
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
 * fallback); two meshes in three with reducing transfers of more than 2-8
 * elements sent in pieces of unit 1-4 (src/collective/pieces.c; at pod
 * scale: two above 1.8 MB). Returns 1 if
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
    check_exact(&m, b, count);
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
    size_t count = 1000 + (size_t)(k * 7 + f), es = ftm_sched_red_elem_size(red);
    ftm_sched s;
    /* k 2 (int64) and 3: reducing transfers of more than 10 elements in pieces */
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
        check_exact(&m, (float **)b, count);
    int64_t cs = 0, nh = 0;
    for (int c = 0; c < m.nchips; c++)
        if (ftm_mesh_alive(&m, c)) {
            cs += c;
            nh++;
        }
    for (int c = 0; c < m.nchips; c++) {
        for (size_t x = 0; red == FTM_RED_SUM_I64 && ftm_mesh_alive(&m, c) && x < count; x++)
            test_check(((int64_t *)b[c])[x] == ((int64_t)1 << 40) * cs + nh * (int64_t)x);
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
                test_check(b[c][k] == ((int64_t)1 << 40) * cs + nh * (int64_t)k);
        free(b[c]);
    }
    free(b);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

typedef struct thr_ctx { const ftm_sched *s; float **b; } thr_ctx;

static int chip_fn(ftm_chip *chip, void *arg)
{
    thr_ctx *x = arg;
    return ftm_chip_exec(chip, x->s, x->b[ftm_chip_id(chip)]);
}

/* Runs s on real chip threads (count floats): exact on every chip, and
 * the bytes the runtime counts on every link are the schedule's (hence
 * the model's). */
static void threads_check(const ftm_sched *s, const ftm_mesh *m, size_t count)
{
    float **b = calloc((size_t)m->nchips, sizeof(float *));
    for (int c = 0; c < m->nchips; c++) {
        b[c] = malloc(count * sizeof(float));
        for (size_t k = 0; k < count; k++)
            b[c][k] = input(c, k);
    }
    ftm_rt *rt;
    ftm_rt_config cfg = { 0, 0, 10.0, 0 };
    ck_assert_int_eq(ftm_rt_create(&rt, m, &cfg), 0);
    thr_ctx x = { s, b };
    ck_assert_int_eq(ftm_rt_run(rt, chip_fn, &x), 0);
    check_exact(m, b, count);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m->nchips * 4);
    ftm_sched_link_bytes(s, m, lb);
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < 4; d++) {
            uint64_t bytes, pkts;
            ftm_rt_link_stats(rt, c, d, &bytes, &pkts);
            ck_assert_uint_eq(bytes, lb[c * 4 + d]);
        }
    free(lb);
    ftm_rt_destroy(rt);
    for (int c = 0; c < m->nchips; c++)
        free(b[c]);
    free(b);
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
    threads_check(&s, &m, count);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* 2d-lines (3 chunks) on real chip threads (threads_check). 3 and 4:
 * rows cut twice (segments folded into a helper row). */
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
    /* odd cases: reducing transfers of more than 200 elements in pieces */
    ck_assert_int_eq(ftm_allreduce_2d_lines_build_split(&s, NULL, &m, count, FTM_RED_SUM_F32, 3,
                                                        _i % 2 ? 100 : 0), 0);
    threads_check(&s, &m, count);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* On a healthy torus (no row is a line) at a latency-bound size, 2d-lines
 * keeps its variant with whole rows as two-sided rings: every chip's
 * program has 2 x ar2d_ring2_steps of the rows plus 2 x of the columns,
 * n/2 each on an n x n torus (16 on 8x8, 12 on 6x6; bidirectional rows
 * take 2(n - 1) + n: 22 and 16), and it is exact on chip threads with
 * the model's link bytes. */
START_TEST(test_lines_two_sided_rows)
{
    static const int side[] = { 8, 6 }, steps[] = { 16, 12 };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, side[_i], side[_i], 1), 0);
    size_t count = 4099;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_lines_build_k(&s, NULL, &m, count, FTM_RED_SUM_F32, 0), 0);
    for (int c = 0; c < m.nchips; c++)
        ck_assert_int_eq(s.prog[c].nsteps, steps[_i]);
    threads_check(&s, &m, count);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* 2d-concurrent's merged steps name both halves' phases ("PA+PB", in the
 * mesh's terms): each half's sends sit only in steps whose part for that
 * half is named, and around a hole on an open mesh the halves do not line
 * up (half A still in its row phase while half B has reached its second
 * phase, which runs along rows), so one name could not say it. */
START_TEST(test_concurrent_phases)
{
    ck_assert(ftm_sched_phase_match("row-reduce-scatter", "row-reduce-scatter"));
    ck_assert(ftm_sched_phase_match("row-reduce-scatter+col-reduce-scatter", "row-reduce-scatter"));
    ck_assert(!ftm_sched_phase_match("row-reduce-scatter+col-reduce-scatter", "col-reduce-scatter"));
    ck_assert(ftm_sched_phase_match("row-reduce-scatter+col-reduce-scatter", "+col-reduce-scatter"));
    ck_assert(!ftm_sched_phase_match("row-reduce-scatter", "+row-reduce-scatter"));
    ck_assert(!ftm_sched_phase_match("row", "row-reduce-scatter"));
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 3, 4), 0);
    size_t count = 1024, half_a = (count + 1) / 2 * sizeof(int64_t);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_build_own("2d-concurrent", &s, NULL, &m, count, FTM_RED_SUM_I64), 0);
    int misaligned = 0;
    for (int c = 0; c < s.nchips; c++)
        for (int j = 0; j < s.prog[c].nsteps; j++) {
            const ftm_step *st = &s.prog[c].steps[j];
            const char *plus = strchr(st->phase, '+');
            ck_assert_msg(plus != NULL, "%s", st->phase);
            misaligned += plus != st->phase && plus[1] && strncmp(st->phase, plus + 1, 3) == 0;
            for (int k = 0; k < st->nops; k++) {
                const ftm_op *o = &s.prog[c].ops[st->first_op + k];
                ck_assert(o->off < half_a ? plus != st->phase : plus[1] != 0);
            }
        }
    ck_assert_int_gt(misaligned, 0);
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
    tcase_add_test(tc, test_concurrent_phases);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(su, tc);
    TCase *tt = tcase_create("threads");
    tcase_add_loop_test(tt, test_threads_exact, 0, 10);
    tcase_add_loop_test(tt, test_lines_threads, 0, 5);
    tcase_add_loop_test(tt, test_lines_two_sided_rows, 0, 2);
    tcase_set_timeout(tt, 60);
    suite_add_tcase(su, tt);
    return su;
}

int main(void)
{
    return test_run(twod_suite());
}
