/* The allreduce lower bound (ftm_cost_bound): exact values on meshes small
 * enough to count by hand, and no registered algorithm modeling below it on
 * any mesh of a property sweep (sizes 1x1 .. 8x8, open and torus, dead
 * chips, hosts, links both ways and one way), at several sizes and
 * latencies (so that each of its terms binds somewhere). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "ftmesh/rng.h"
#include "test_util.h"

/* 1e6 floats: M / B = 40 us at the defaults (100 GB/s, 1 us a hop). */
static const size_t M = 4000000;
static const double MB = 40e-6, HOP = 1e-6;

static ftm_cost_bound_parts bound_of(const ftm_mesh *m)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_bound_parts b;
    ck_assert_int_eq(ftm_cost_bound(m, M, FTM_RED_SUM_F32, &p, &b), 0);
    return b;
}

#define EQ(a, b) ck_assert_double_eq_tol((a), (b), 1e-12 * (b))

/* Healthy 4x4 torus: 16 chips, 64 directed links, diameter 2 + 2. */
START_TEST(test_healthy_torus)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 1), 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_chips, 16);
    ck_assert_int_eq(b.live_links, 64);
    ck_assert_int_eq(b.diameter, 4);
    ck_assert_int_eq(b.min_degree, 4);
    ck_assert_int_eq(b.bridges, 0);
    EQ(b.links_s, 2.0 * 15 / 64 * MB + HOP);
    EQ(b.cut_s, MB / 4 + HOP);
    EQ(b.latency_s, 4 * HOP);
    EQ(b.time_s, 19.75e-6);
    ck_assert_str_eq(b.binding, "links");
    ftm_mesh_free(&m);
}
END_TEST

/* One dead chip: 15 chips, 64 - 8 links; its 4 neighbours keep 3 each. */
START_TEST(test_dead_chip)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 1, 1), 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_chips, 15);
    ck_assert_int_eq(b.live_links, 56);
    ck_assert_int_eq(b.min_degree, 3);
    EQ(b.time_s, 2.0 * 14 / 56 * MB + HOP); /* 21 us */
    EQ(b.time_s, 21e-6);
    EQ(b.cut_s, MB / 3 + HOP);
    ck_assert_str_eq(b.binding, "links");
    ftm_mesh_free(&m);
}
END_TEST

/* A link dead one way counts once: 63 directed links. */
START_TEST(test_oneway_link)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1), 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_chips, 16);
    ck_assert_int_eq(b.live_links, 63);
    ck_assert_int_eq(b.min_degree, 3);
    EQ(b.time_s, 2.0 * 15 / 63 * MB + HOP);
    ck_assert_str_eq(b.binding, "links");
    ftm_mesh_free(&m);
}
END_TEST

/* 3x5 open mesh with (0,2) and (2,2) dead: two 3x2 blocks joined through
 * (1,2) by two bridges. Every element crosses each bridge both ways:
 * M / B + hop (41 us) beats the link bytes, 2 * 12 / 32 M / B + hop. */
START_TEST(test_bridge_binds)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 5, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 0, 2), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 2), 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_chips, 13);
    ck_assert_int_eq(b.live_links, 32);
    ck_assert_int_eq(b.bridges, 2);
    ck_assert_int_eq(b.min_degree, 2);
    EQ(b.links_s, 31e-6);
    EQ(b.cut_s, 41e-6);
    EQ(b.time_s, 41e-6);
    ck_assert_str_eq(b.binding, "cut");
    ftm_mesh_free(&m);
}
END_TEST

/* Kills one direction of each link of the 2x2 block at (r,c) so that its
 * four live links run one way round: (r,c) -> (r,c+1) -> (r+1,c+1) ->
 * (r+1,c) -> (r,c). */
static void one_way_square(ftm_mesh *m, int r, int c)
{
    ck_assert_int_eq(ftm_mesh_fail_link(m, r, c + 1, r, c, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(m, r + 1, c + 1, r, c + 1, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(m, r + 1, c, r + 1, c + 1, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(m, r, c, r + 1, c, 1), 0);
}

/* A 2x2 mesh whose links each live one way only, round a cycle: 4 chips,
 * 4 links, 2 * 3 / 4 M / B + hop (61 us), diameter 3. */
START_TEST(test_one_way_cycle)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    one_way_square(&m, 0, 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_links, 4);
    ck_assert_int_eq(b.diameter, 3);
    ck_assert_int_eq(b.min_degree, 1);
    EQ(b.time_s, 1.5 * MB + HOP);
    ck_assert_str_eq(b.binding, "links");
    ftm_mesh_free(&m);
}
END_TEST

/* 2x3 open mesh: the one-way square of test_one_way_cycle on the left,
 * joined to the column (0,2)-(1,2) only by the bridge (0,1)-(0,2). The
 * partition {4 single chips of the square, the column} needs 2 * 4
 * crossings of each element over 4 + 2 links: 4/3 M / B + hop, more
 * than the bridge alone (M / B) and the link bytes (2 * 5 / 8 M / B). */
START_TEST(test_partition_binds)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 3, 0), 0);
    one_way_square(&m, 0, 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 1, 1, 1, 2, 0), 0);
    ftm_cost_bound_parts b = bound_of(&m);
    ck_assert_int_eq(b.live_chips, 6);
    ck_assert_int_eq(b.live_links, 8);
    ck_assert_int_eq(b.bridges, 2);
    EQ(b.links_s, 1.25 * MB + HOP);
    EQ(b.cut_s, 4.0 / 3 * MB + HOP);
    EQ(b.time_s, 4.0 / 3 * MB + HOP);
    ck_assert_str_eq(b.binding, "cut");
    ftm_mesh_free(&m);
}
END_TEST

/* With a long hop latency the diameter binds; one chip and 0 bytes need
 * nothing; dead and cut meshes are refused as everywhere else. */
START_TEST(test_latency_and_errors)
{
    ftm_mesh m;
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    p.hop_s = 1e-3;
    ftm_cost_bound_parts b;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 9, 0), 0);
    ck_assert_int_eq(ftm_cost_bound(&m, 4, FTM_RED_SUM_F32, &p, &b), 0);
    ck_assert_int_eq(b.diameter, 8);
    EQ(b.time_s, 8e-3);
    ck_assert_str_eq(b.binding, "latency");
    ck_assert_int_eq(ftm_cost_bound(&m, 0, FTM_RED_SUM_F32, &p, &b), 0);
    ck_assert(b.time_s == 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 0, 4), 0);
    ck_assert_int_eq(ftm_cost_bound(&m, 4, FTM_RED_SUM_F32, &p, &b), FTM_EPARTITION);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 1, 0), 0);
    ck_assert_int_eq(ftm_cost_bound(&m, 4, FTM_RED_SUM_F32, &p, &b), 0);
    ck_assert(b.time_s == 0);
    ck_assert_str_eq(b.binding, "none");
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 0, 0), 0);
    ck_assert_int_eq(ftm_cost_bound(&m, 4, FTM_RED_SUM_F32, &p, &b), FTM_EALLDEAD);
    p.link_Bps = 0;
    ck_assert_int_eq(ftm_cost_bound(&m, 4, FTM_RED_SUM_F32, &p, &b), FTM_EINVAL);
    ftm_mesh_free(&m);
}
END_TEST

/* The 64x64 torus with 400 random dead chips (seed 1, as --random-faults
 * 400 draws them) leaves chips with one live link: each must send and
 * receive M through it, M / B + hop, far above the link bytes. The bound
 * takes well under the 20 s a schedule may take there. */
START_TEST(test_big_random)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 64, 64, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&m, 400, 1), 0);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_bound_parts b;
    clock_t t0 = clock();
    ck_assert_int_eq(ftm_cost_bound(&m, 100000000, FTM_RED_SUM_F32, &p, &b), 0); /* M/B: 1 ms */
    double took = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ck_assert_int_eq(b.live_chips, 64 * 64 - 400);
    ck_assert_int_eq(b.min_degree, 1);
    ck_assert_int_gt(b.bridges, 0);
    EQ(b.time_s, 1e-3 + HOP);
    ck_assert_str_eq(b.binding, "cut");
    ck_assert_double_lt(b.links_s, b.time_s * 0.6);
    ck_assert_int_ge(b.diameter, 64);
    ck_assert_msg(took < 5.0, "the bound took %.2f s", took);
    ftm_mesh_free(&m);
}
END_TEST

/* Sweep mesh i: sizes 1x1 .. 8x8, open and torus, faults of kind 0 none,
 * 1 random chips, 2 a host, 3 links (both ways and one way), 4 a mix, 5 a
 * one-way square; drawn from i. Returns ftm_mesh_check_connected's code. */
static int sweep_mesh(int i, ftm_mesh *m)
{
    int rows = 1 + i % 8, cols = 1 + (i / 8) % 8, torus = (i / 64) % 2, kind = (i / 128) % 6;
    ck_assert_int_eq(ftm_mesh_init(m, rows, cols, torus), 0);
    uint64_t seed = 5000 + (uint64_t)i;
    int n = rows * cols;
    if ((kind == 1 || kind == 4) && n > 1)
        ftm_mesh_fail_random(m, 1 + (int)(ftm_rng_u64(seed, 1, 0, 0, 0) % (uint64_t)(n / 4 + 1)), seed);
    if ((kind == 2 || kind == 4) && rows >= 2 && cols >= 2)
        ftm_mesh_fail_host(m, (int)(ftm_rng_u64(seed, 2, 0, 0, 0) % (uint64_t)(rows - 1)),
                           (int)(ftm_rng_u64(seed, 3, 0, 0, 0) % (uint64_t)(cols - 1)));
    if (kind == 3 || kind == 4)
        for (int j = 0; j < 3; j++) {
            int a = (int)(ftm_rng_u64(seed, 4, (uint64_t)j, 0, 0) % (uint64_t)n);
            int b = ftm_mesh_neighbor(m, a, (int)(ftm_rng_u64(seed, 5, (uint64_t)j, 0, 0) % 4));
            if (b >= 0)
                ftm_mesh_fail_link(m, a / cols, a % cols, b / cols, b % cols, j == 1);
        }
    if (kind == 5 && rows >= 2 && cols >= 2)
        one_way_square(m, (int)(ftm_rng_u64(seed, 6, 0, 0, 0) % (uint64_t)(rows - 1)),
                       (int)(ftm_rng_u64(seed, 7, 0, 0, 0) % (uint64_t)(cols - 1)));
    return ftm_mesh_check_connected(m, NULL, NULL);
}

/* Every registered algorithm that builds on mesh i models at or above
 * the bound, at each size and latency. */
static void check_sweep_mesh(int i)
{
    /* 4M floats: summing transfers go in pieces (src/collective/pieces.c) */
    static const size_t counts[] = { 1, 3, 1000, 262144, 4194304 };
    static const double hops[] = { 1e-6, 0, 1e-4 };
    ftm_mesh m;
    int conn = sweep_mesh(i, &m);
    for (int h = 0; h < 3 && !conn; h++) {
        ftm_cost_params p;
        ftm_cost_defaults(&p);
        p.hop_s = hops[h];
        for (int k = 0; k < 5; k++) {
            ftm_cost_bound_parts b;
            ck_assert_int_eq(ftm_cost_bound(&m, counts[k] * 4, FTM_RED_SUM_F32, &p, &b), 0);
            for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
                ftm_sched s;
                if (a->build(&s, NULL, &m, counts[k], FTM_RED_SUM_F32))
                    continue; /* refused (e.g. no ring on this mesh) */
                ftm_cost_result r;
                ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
                ck_assert_msg(r.time_s >= b.time_s * (1 - 1e-9),
                              "mesh %d (%dx%d%s) %s count %zu hop %g: %.9g s below the bound %.9g s (%s)",
                              i, m.rows, m.cols, m.torus ? " torus" : "", a->name, counts[k], p.hop_s,
                              r.time_s, b.time_s, b.binding);
                ftm_sched_free(&s);
            }
        }
    }
    if (conn)
        ck_assert(conn == FTM_EPARTITION || conn == FTM_EALLDEAD);
    ftm_mesh_free(&m);
}

/* 768 meshes; make check and the sanitizer builds take every 24th, 32
 * spread over sizes and kinds (FTMESH_TEST_SCALE=full: all). */
START_TEST(test_no_algorithm_below)
{
    int step = full_scale() ? 1 : 24;
    for (int j = _i; j < 768; j += 8 * step)
        check_sweep_mesh(j * 37 % 768); /* 37: spread over sizes and kinds */
}
END_TEST

Suite *bound_suite(void);
Suite *bound_suite(void)
{
    Suite *su = suite_create("bound");
    TCase *tc = tcase_create("exact");
    tcase_add_test(tc, test_healthy_torus);
    tcase_add_test(tc, test_dead_chip);
    tcase_add_test(tc, test_oneway_link);
    tcase_add_test(tc, test_bridge_binds);
    tcase_add_test(tc, test_one_way_cycle);
    tcase_add_test(tc, test_partition_binds);
    tcase_add_test(tc, test_latency_and_errors);
    tcase_add_test(tc, test_big_random);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(su, tc);
    TCase *tp = tcase_create("property");
    tcase_add_loop_test(tp, test_no_algorithm_below, 0, 8);
    tcase_set_timeout(tp, 300);
    suite_add_tcase(su, tp);
    return su;
}

int main(void)
{
    return test_run(bound_suite());
}
