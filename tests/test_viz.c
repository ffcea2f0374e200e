/* Viz: the ASCII ring picture. Expected pictures are drawn by hand from the
 * legend in viz.h, on hand-made rings (not the router's choice). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/viz.h"
#include "ftmesh/error.h"

#define LEGEND_TEXT "o chip  X dead  * forwards a detour  -| ring edge  =! detour" \
                    "  x dead link  ><v^ one-way link (arrow: working direction)"
#define LEGEND LEGEND_TEXT "\n"

enum { N = FTM_DIR_N, E = FTM_DIR_E, S = FTM_DIR_S, W = FTM_DIR_W };

static char *draw(const ftm_mesh *m, int n, const int *chips, const int *off,
                  const unsigned char *dirs)
{
    ftm_ring r = { n, (int *)chips, (int *)off, (unsigned char *)dirs };
    char *pic = NULL;
    ck_assert_int_eq(ftm_ring_validate(m, &r), 0);
    ck_assert_int_eq(ftm_viz_ring_ascii(m, &r, &pic), 0);
    ck_assert_ptr_nonnull(pic);
    return pic;
}

START_TEST(test_square)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    const int c[] = { 0, 1, 3, 2 }, off[] = { 0, 1, 2, 3, 4 };
    const unsigned char d[] = { E, S, W, N };
    char *pic = draw(&m, 4, c, off, d);
    ck_assert_str_eq(pic, "o-o\n"
                          "| |\n"
                          "o-o\n" LEGEND);
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_line_detour)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    /* 0 -> 1 -> 2, back 2 -> 0 through 1: both links carry the detour. */
    const int c[] = { 0, 1, 2 }, off[] = { 0, 1, 2, 4 };
    const unsigned char d[] = { E, E, W, W };
    char *pic = draw(&m, 3, c, off, d);
    ck_assert_str_eq(pic, "o=*=o\n" LEGEND "detour (0,2) -> (0,0): 2 hops via W,W\n");
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_faults_and_wrap)
{
    ftm_mesh m;
    /* 1x3 torus ring 0 -> 1 -> 2 -> 0 over the wrap link (both margins). */
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 1), 0);
    const int c[] = { 0, 1, 2 }, off[] = { 0, 1, 2, 3 };
    const unsigned char d[] = { E, E, E };
    char *pic = draw(&m, 3, c, off, d);
    ck_assert_str_eq(pic, "-o-o-o-\n" LEGEND);
    free(pic);
    ftm_mesh_free(&m);
    /* 2x2 with 0 -> 1 dead one way (only 1 -> 0 works) and the ring the
     * other way round; plus a faults-only picture with a dead chip and a
     * link dead both ways. */
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1);
    const int c2[] = { 0, 2, 3, 1 }, off2[] = { 0, 1, 2, 3, 4 };
    const unsigned char d2[] = { S, E, N, W };
    pic = draw(&m, 4, c2, off2, d2);
    ck_assert_str_eq(pic, "o<o\n"
                          "| |\n"
                          "o-o\n" LEGEND);
    free(pic);
    ftm_mesh_fail_link(&m, 0, 1, 1, 1, 0);
    ftm_mesh_fail_chip(&m, 1, 0);
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, NULL, &pic), 0);
    ck_assert_str_eq(pic, "o<o\n"
                          "  x\n"
                          "X o\n" LEGEND);
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

/* Structure on the router's own ring: 8x8 with (3,4) dead. */
START_TEST(test_hole_structure)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ftm_mesh_fail_chip(&m, 3, 4);
    ftm_ring ring;
    ck_assert_int_eq(ftm_router_ring(&m, &ring), 0);
    ftm_ring_quality q;
    ftm_ring_measure(&m, &ring, &q);
    char *pic = NULL;
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, &ring, &pic), 0);
    /* Split into lines. */
    char *lines[64];
    int nl = 0;
    for (char *p = pic; *p && nl < 64;) {
        lines[nl++] = p;
        char *e = strchr(p, '\n');
        ck_assert_ptr_nonnull(e);
        *e = '\0';
        p = e + 1;
    }
    ck_assert_int_eq(nl, 15 + 1 + q.detours);
    int dead = 0, chips = 0, stars = 0, detour_marks = 0;
    for (int y = 0; y < 15; y++) {
        ck_assert_int_le((int)strlen(lines[y]), 15);
        for (int x = 0; lines[y][x]; x++) {
            char ch = lines[y][x];
            if (y % 2 == 0 && x % 2 == 0) {
                chips++;
                dead += ch == 'X';
                stars += ch == '*';
                ck_assert(ch == 'o' || ch == 'X' || ch == '*');
            } else {
                ck_assert(strchr(" -|=!", ch) != NULL);
                detour_marks += ch == '=' || ch == '!';
            }
        }
    }
    ck_assert_int_eq(chips, 64);
    ck_assert_int_eq(dead, 1);
    ck_assert_int_eq(lines[6][8], 'X');
    /* Every ring edge is drawn: at most one mark per hop, and at least one
     * per one-hop edge (on a ring of n > 2 they use distinct links). */
    int marks = 0;
    for (int y = 0; y < 15; y++)
        for (int x = 0; lines[y][x]; x++)
            marks += (x + y) % 2 == 1 && lines[y][x] != ' ';
    ck_assert_int_le(marks, q.hops);
    ck_assert_int_ge(marks, ring.n - q.detours);
    ck_assert_int_ge(detour_marks, 1);
    ck_assert_int_ge(stars, 1);
    ck_assert_str_eq(lines[15], LEGEND_TEXT);
    ck_assert(strncmp(lines[16], "detour (", 8) == 0);
    free(pic);
    ftm_ring_free(&ring);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_errors)
{
    ftm_mesh m;
    char *pic = (char *)1;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    const int c[] = { 0, 9 }, off[] = { 0, 1, 2 };
    const unsigned char d[] = { E, W };
    ftm_ring r = { 2, (int *)c, (int *)off, (unsigned char *)d };
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, &r, &pic), FTM_EINVAL);
    ck_assert_ptr_null(pic);
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, NULL, NULL), FTM_EINVAL);
    ftm_mesh_free(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("viz");
    TCase *tc = tcase_create("ascii");
    tcase_add_test(tc, test_square);
    tcase_add_test(tc, test_line_detour);
    tcase_add_test(tc, test_faults_and_wrap);
    tcase_add_test(tc, test_hole_structure);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
