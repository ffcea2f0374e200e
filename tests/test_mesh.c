/* Mesh topology, faults, reachability and parsers. */
#include <check.h>
#include <stdlib.h>
#include "ftmesh/mesh.h"
#include "ftmesh/error.h"
#include "test_util.h"

START_TEST(test_neighbors_open_and_torus)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 5, 0), 0);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_N), -1);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_W), -1);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_E), 1);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_S), 5);
    ck_assert_int_eq(ftm_mesh_dir_to(&m, 6, 1), FTM_DIR_N);
    ck_assert_int_eq(ftm_mesh_dir_to(&m, 6, 8), -1);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 5, 1), 0);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_N), 15);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_W), 4);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 19, FTM_DIR_E), 15);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 19, FTM_DIR_S), 4);
    ftm_mesh_free(&m);
    /* A side of 2 has no wrap link even on a torus. */
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 3, 1), 0);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_N), -1);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_DIR_W), 2);
    ftm_mesh_free(&m);
}
END_TEST

/* The colour bound: |black - white| healthy chips, 0 on an odd torus. */
START_TEST(test_detour_bound)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 0);
    ftm_mesh_fail_chip(&m, 3, 4);              /* (3+4) odd: one of 32 gone */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 1);
    ftm_mesh_fail_chip(&m, 0, 1);              /* same colour: 30 against 32 */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 2);
    ftm_mesh_fail_chip(&m, 0, 0);              /* other colour */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 1);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 7, 7, 0), 0); /* 25 against 24 */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 1);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 7, 7, 1), 0); /* odd wrap: no colouring */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 1), 0);
    ftm_mesh_fail_host(&m, 7, 7);              /* 2x2: two of each colour */
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 0);
    ftm_mesh_fail_chip(&m, 2, 2);
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 1);
    ftm_mesh_free(&m);
    /* one healthy chip: its ring has no edge, so no detour either */
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 1, 0), 0);
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 1); /* 2 against 1 */
    ftm_mesh_fail_chip(&m, 0, 0);
    ftm_mesh_fail_chip(&m, 0, 1);
    ck_assert_int_eq(ftm_mesh_detour_lower_bound(&m), 0);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_sizes)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 0, 0), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_init(&m, 65, 2, 0), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_init(&m, 0, 8, 0), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 64, 64, 1), 0);
    ck_assert_int_eq(m.nchips, 4096);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_faults)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 8, 0), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 3, 4), 0);
    ck_assert_int_eq(ftm_mesh_healthy_count(&m), 63);
    ck_assert_int_eq(ftm_mesh_link_live(&m, ftm_mesh_chip(&m, 3, 3), FTM_DIR_E), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 7, 7), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 0, 0), 0);
    ck_assert_int_eq(ftm_mesh_healthy_count(&m), 59);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 5, 5, 5, 7, 0), FTM_ENOTNEIGHBOR);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 5, 5, 5, 6, 1), 0);
    ck_assert_int_eq(ftm_mesh_link_live(&m, ftm_mesh_chip(&m, 5, 5), FTM_DIR_E), 0);
    ck_assert_int_eq(ftm_mesh_link_live(&m, ftm_mesh_chip(&m, 5, 6), FTM_DIR_W), 1);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 6, 6, 6, 5, 0), 0);
    ck_assert_int_eq(ftm_mesh_link_live(&m, ftm_mesh_chip(&m, 6, 5), FTM_DIR_E), 0);
    ck_assert_int_eq(ftm_mesh_link_live(&m, ftm_mesh_chip(&m, 6, 6), FTM_DIR_W), 0);
    ck_assert_int_eq(ftm_mesh_check_connected(&m, NULL, NULL), 0);
    ftm_mesh_free(&m);
    /* A host wraps only where a side wraps: a torus side of 2 has no wrap
     * link, so the host at (1,5) of a 2x6 torus does not fit, (0,5) does. */
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 6, 1), 0);
    ck_assert_int_eq(ftm_mesh_host_fits(&m, 1, 5), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 1, 5), FTM_ERANGE);
    ck_assert_int_eq(ftm_mesh_healthy_count(&m), 12);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 0, 5), 0);
    ck_assert(!ftm_mesh_alive(&m, ftm_mesh_chip(&m, 1, 0)));
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 1), 0);
    ck_assert_int_eq(ftm_mesh_host_fits(&m, 1, 1), 0);
    ck_assert_int_eq(ftm_mesh_host_fits(&m, 0, 0), 1);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 1), 0);
    ck_assert_int_eq(ftm_mesh_host_fits(&m, 2, 2), 1);
    ck_assert_int_eq(ftm_mesh_host_fits(&m, 3, 0), 0);
    /* the host at (2,2) of a 3x3 torus wraps: its chips are exactly those
     * ftm_mesh_fail_host kills, (2,2) (2,0) (0,2) (0,0) */
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 2, 2), 0);
    for (int c = 0; c < m.nchips; c++)
        ck_assert_int_eq(ftm_mesh_host_has(&m, 2, 2, ftm_mesh_row(&m, c), ftm_mesh_col(&m, c)),
                         !ftm_mesh_alive(&m, c));
    ck_assert_int_eq(ftm_mesh_host_has(&m, 2, 2, 1, 1), 0);
    ftm_mesh_free(&m);
    /* dead links between live chips: both ways once, one way once; a
     * link to a dead chip is the hole's, not counted */
    int oneway = -1;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ck_assert_int_eq(ftm_mesh_dead_links(&m, &oneway), 0);
    ck_assert_int_eq(oneway, 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 0, 0, 0, 1, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 2, 2, 2, 3, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 3, 0, 3, 1, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 3, 1), 0);
    ck_assert_int_eq(ftm_mesh_dead_links(&m, &oneway), 2);
    ck_assert_int_eq(oneway, 1);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_random_faults_reproducible)
{
    ftm_mesh a, b;
    ck_assert_int_eq(ftm_mesh_init(&a, 8, 8, 1), 0);
    ck_assert_int_eq(ftm_mesh_init(&b, 8, 8, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&a, 5, 42), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&b, 5, 42), 0);
    ck_assert_int_eq(ftm_mesh_healthy_count(&a), 59);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(a.chip_dead[i], b.chip_dead[i]);
    ck_assert_int_eq(ftm_mesh_fail_random(&a, 59, 1), FTM_ERANGE);
    ftm_mesh_free(&a);
    ftm_mesh_free(&b);
}
END_TEST

START_TEST(test_partition)
{
    ftm_mesh m;
    int a = -1, b = -1;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    /* Kill the middle column: left and right columns are cut apart. */
    for (int r = 0; r < 3; r++)
        ftm_mesh_fail_chip(&m, r, 1);
    ck_assert_int_eq(ftm_mesh_check_connected(&m, &a, &b), FTM_EPARTITION);
    ck_assert_int_ne(ftm_mesh_col(&m, a), ftm_mesh_col(&m, b));
    ftm_mesh_free(&m);
    /* One-way links can cut reachability in one direction only. */
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 0, 1, 0, 0, 1), 0);
    ck_assert_int_eq(ftm_mesh_check_connected(&m, &a, &b), FTM_EPARTITION);
    ck_assert_int_eq(a, 1);
    ck_assert_int_eq(b, 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_mesh_fail_chip(&m, 0, 0);
    ftm_mesh_fail_chip(&m, 0, 1);
    ck_assert_int_eq(ftm_mesh_check_connected(&m, &a, &b), FTM_EALLDEAD);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_parsers)
{
    int r, c, r2, c2, ow;
    ck_assert_int_eq(ftm_mesh_parse_size("16x32", &r, &c), 0);
    ck_assert_int_eq(r, 16);
    ck_assert_int_eq(c, 32);
    ck_assert_int_eq(ftm_mesh_parse_size("16x", &r, &c), FTM_EINVAL);
    ck_assert_int_eq(ftm_mesh_parse_size("x3", &r, &c), FTM_EINVAL);
    ck_assert_int_eq(ftm_mesh_parse_size("4x4x", &r, &c), FTM_EINVAL);
    ck_assert_int_eq(ftm_mesh_parse_coord("3,4", &r, &c), 0);
    ck_assert_int_eq(c, 4);
    ck_assert_int_eq(ftm_mesh_parse_coord("3;4", &r, &c), FTM_EINVAL);
    ck_assert_int_eq(ftm_mesh_parse_coord("-1,4", &r, &c), FTM_EINVAL);
    ck_assert_int_eq(ftm_mesh_parse_link("1,2-1,3", &r, &c, &r2, &c2, &ow), 0);
    ck_assert_int_eq(ow, 0);
    ck_assert_int_eq(c2, 3);
    ck_assert_int_eq(ftm_mesh_parse_link("1,2>2,2", &r, &c, &r2, &c2, &ow), 0);
    ck_assert_int_eq(ow, 1);
    ck_assert_int_eq(ftm_mesh_parse_link("1,2=2,2", &r, &c, &r2, &c2, &ow), FTM_EINVAL);
}
END_TEST

START_TEST(test_strerror)
{
    ck_assert_str_eq(ftm_strerror(0), "success");
    ck_assert_str_eq(ftm_err_name(FTM_EHANG), "FTM_EHANG");
    ck_assert_str_eq(ftm_strerror(FTM_EPARTITION), "healthy chips are cut into parts");
    ck_assert_str_eq(ftm_strerror(12345), "unknown error");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mesh");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_neighbors_open_and_torus);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_faults);
    tcase_add_test(tc, test_random_faults_reproducible);
    tcase_add_test(tc, test_partition);
    tcase_add_test(tc, test_parsers);
    tcase_add_test(tc, test_strerror);
    tcase_add_test(tc, test_detour_bound);
    suite_add_tcase(s, tc);
    return test_run(s);
}
