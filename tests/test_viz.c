/* Viz: the ASCII ring picture. Expected pictures are drawn by hand from the
 * legend in viz.h, on hand-made rings (not the router's choice). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/viz.h"
#include "ftmesh/error.h"
#include "test_util.h"

/* Legend lines, as viz.h's marks (packed into lines of at most 80). */
#define L_EDGE "--> <-- v ^ one-hop edge, arrow: the way data goes"
#define L_SHARED "-=> <=- v! one-hop edge and a detour on one link"
#define L_WRAP "marks outside the border: torus wrap links, drawn at both ends"

enum { N = FTM_DIR_N, E = FTM_DIR_E, S = FTM_DIR_S, W = FTM_DIR_W };

static char *draw(const ftm_mesh *m, int n, const int *chips, const int *off,
                  const unsigned char *dirs)
{
    ftm_ring r = { n, (int *)chips, (int *)off, (unsigned char *)dirs };
    char *pic = NULL;
    ck_assert_int_eq(ftm_router_ring_validate(m, &r), 0);
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
    ck_assert_str_eq(pic, "    0   1\n"
                          " 0  o-->o\n"
                          "    ^   v\n"
                          " 1  o<--o\n"
                          "o chip   " L_EDGE "\n"
                          "ring direction: (0,0) -> (0,1) -> (1,1) -> (1,0) -> back to (0,0)\n");
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

/* The edge under a detour stays visible: 0 -> 1 -> 2, back 2 -> 0 through
 * 1, so both links carry a one-hop edge east and the detour west. */
START_TEST(test_line_detour)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    const int c[] = { 0, 1, 2 }, off[] = { 0, 1, 2, 4 };
    const unsigned char d[] = { E, E, W, W };
    char *pic = draw(&m, 3, c, off, d);
    ck_assert_str_eq(pic, "    0   1   2\n"
                          " 0  o-=>*-=>o\n"
                          "o chip   * chip forwarding a detour\n"
                          L_EDGE "\n"
                          L_SHARED "\n"
                          "detour (0,2) -> (0,0): 2 hops via W,W\n"
                          "ring direction: (0,0) -> (0,1) -> (0,2) -> back to (0,0)\n");
    free(pic);
    ftm_mesh_free(&m);
    /* The same on a column: the vertical edge keeps its arrow, the detour
     * is drawn beside it. */
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 1, 0), 0);
    const unsigned char dv[] = { S, S, N, N };
    pic = draw(&m, 3, c, off, dv);
    ck_assert_str_eq(pic, "    0\n"
                          " 0  o\n"
                          "    v!\n"
                          " 1  *\n"
                          "    v!\n"
                          " 2  o\n"
                          "o chip   * chip forwarding a detour\n"
                          L_EDGE "\n"
                          L_SHARED "\n"
                          "detour (2,0) -> (0,0): 2 hops via N,N\n"
                          "ring direction: (0,0) -> (1,0) -> (2,0) -> back to (0,0)\n");
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
    ck_assert_str_eq(pic, "        0   1   2\n"
                          " 0   -->o-->o-->o-->\n"
                          "o chip   " L_EDGE "\n"
                          L_WRAP "\n"
                          "ring direction: (0,0) -> (0,1) -> (0,2) -> back to (0,0)\n");
    free(pic);
    ftm_mesh_free(&m);
    /* 3x1 torus: the wrap link above the first row and below the last. */
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 1, 1), 0);
    const unsigned char dv[] = { S, S, S };
    pic = draw(&m, 3, c, off, dv);
    ck_assert_str_eq(pic, "    0\n"
                          "    v\n"
                          " 0  o\n"
                          "    v\n"
                          " 1  o\n"
                          "    v\n"
                          " 2  o\n"
                          "    v\n"
                          "o chip   " L_EDGE "\n"
                          L_WRAP "\n"
                          "ring direction: (0,0) -> (1,0) -> (2,0) -> back to (0,0)\n");
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
    ck_assert_str_eq(pic, "    0   1\n"
                          " 0  o<~-o\n"
                          "    v   ^\n"
                          " 1  o-->o\n"
                          "o chip   " L_EDGE "\n"
                          "~ link dead one way (listed below)\n"
                          "one-way link: (0,0) -> (0,1) dead, the other way works\n"
                          "ring direction: (0,0) -> (1,0) -> (1,1) -> (0,1) -> back to (0,0)\n");
    free(pic);
    ftm_mesh_fail_link(&m, 0, 1, 1, 1, 0);
    ftm_mesh_fail_chip(&m, 1, 0);
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, NULL, &pic), 0);
    ck_assert_str_eq(pic, "    0   1\n"
                          " 0  o ~ o\n"
                          "        x\n"
                          " 1  X   o\n"
                          "o chip   X dead chip   x link dead both ways\n"
                          "~ link dead one way (listed below)\n"
                          "one-way link: (0,0) -> (0,1) dead, the other way works\n");
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

/* Splits pic into lines (in place); returns how many. */
static int split_lines(char *pic, char **lines, int max)
{
    int nl = 0;
    for (char *p = pic; *p && nl < max;) {
        lines[nl++] = p;
        char *e = strchr(p, '\n');
        ck_assert_ptr_nonnull(e);
        *e = '\0';
        p = e + 1;
    }
    return nl;
}

/* Character at column x of line y (' ' past its end). */
static char cell(char **lines, int y, int x)
{
    return (int)strlen(lines[y]) > x ? lines[y][x] : ' ';
}

/* Checks every edge of ring r in the picture of an open mesh: a one-hop
 * edge shows its arrow (also where a detour shares its link), every hop of
 * a detour shows a detour mark on its link. Line 0 holds the column
 * numbers, chip (r,c) is at line 1 + 2r, column 4 + 4c. */
static void check_edges(const ftm_mesh *m, const ftm_ring *r, char **lines)
{
    for (int i = 0; i < r->n; i++) {
        int h = r->path_off[i + 1] - r->path_off[i], x = r->chips[i];
        for (int k = 0; k < h; k++) {
            int d = r->dirs[r->path_off[i] + k], nb = ftm_mesh_neighbor(m, x, d);
            int lo = d == N || d == W ? nb : x; /* the upper or left chip */
            int y = 1 + 2 * ftm_mesh_row(m, lo), cx = 4 + 4 * ftm_mesh_col(m, lo);
            if (d == E || d == W) {
                const char *t = lines[y] + cx + 1;
                if (h == 1)
                    ck_assert(d == E ? t[2] == '>' : t[0] == '<');
                else
                    ck_assert(t[1] == '=');
            } else {
                char mid = cell(lines, y + 1, cx), right = cell(lines, y + 1, cx + 1);
                if (h == 1)
                    ck_assert_int_eq(mid, d == S ? 'v' : '^');
                else
                    ck_assert(mid == '!' || right == '!');
            }
            x = nb;
        }
    }
}

/* Structure on the router's own ring: 8x8 with (3,4) dead (the quick
 * start's picture, where chip (3,5) used to look like a dead end). */
START_TEST(test_hole_structure)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ftm_mesh_fail_chip(&m, 3, 4);
    ftm_ring ring;
    ck_assert_int_eq(ftm_router_ring(&m, &ring), 0);
    ftm_ring_quality q;
    ftm_router_ring_measure(&m, &ring, &q);
    char *pic = NULL;
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, &ring, &pic), 0);
    char *lines[64];
    int nl = split_lines(pic, lines, 64);
    ck_assert_str_eq(lines[0], "    0   1   2   3   4   5   6   7");
    for (int r = 0; r < 8; r++) {
        char label[16];
        snprintf(label, sizeof label, "%2d  ", r);
        ck_assert(strncmp(lines[1 + 2 * r], label, 4) == 0);
        for (int c = 0; c < 8; c++) {
            char ch = lines[1 + 2 * r][4 + 4 * c];
            ck_assert(r == 3 && c == 4 ? ch == 'X' : ch == 'o' || ch == '*');
        }
    }
    check_edges(&m, &ring, lines);
    /* Chip (3,5) has two ring edges: the detour from (1,5) arrives on the
     * link it shares with the one-hop edge (3,5) -> (2,5). */
    ck_assert(q.detours >= 1);
    /* legend (3 lines: chips, edges, shared link), detours, direction */
    ck_assert_int_eq(nl, 1 + 15 + 3 + q.detours + 1);
    ck_assert(strncmp(lines[19], "detour (", 8) == 0);
    ck_assert(strncmp(lines[nl - 1], "ring direction: (", 17) == 0);
    for (int y = 0; y < nl; y++)
        ck_assert_int_le((int)strlen(lines[y]), 80);
    free(pic);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
}
END_TEST

/* Up to 16 chips wide every line fits in 80 columns, torus margins and
 * all; wider meshes get a one-line note that names --svg. */
START_TEST(test_width)
{
    for (int cols = 15; cols <= 17; cols++) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, 16, cols, 1), 0);
        ftm_mesh_fail_chip(&m, 5, 5);
        ftm_mesh_fail_link(&m, 9, cols - 1, 9, 0, 1);
        ftm_ring ring;
        ck_assert_int_eq(ftm_router_ring(&m, &ring), 0);
        char *pic = NULL, *lines[128];
        ck_assert_int_eq(ftm_viz_ring_ascii(&m, &ring, &pic), 0);
        int nl = split_lines(pic, lines, 128), widest = 0;
        for (int y = 0; y < nl; y++) {
            ck_assert_int_le((int)strlen(lines[y]), 80);
            if (y <= 2 * 16 + 1) /* column numbers, rows and wrap margins */
                widest = (int)strlen(lines[y]) > widest ? (int)strlen(lines[y]) : widest;
        }
        if (cols <= 16) {
            /* 4 + 4 * (cols - 1) + 1 + the wrap link's 3 cells */
            ck_assert_int_eq(widest, 4 + 4 + 4 * cols);
            ck_assert_int_eq(lines[1 + 1 + 2 * 9][6], '~'); /* wrap cells of row 9 */
        } else {
            ck_assert_str_eq(lines[0], "(17 columns do not fit in 80: draw this mesh as a "
                                       "picture with --svg FILE)");
        }
        free(pic);
        ftm_router_ring_free(&ring);
        ftm_mesh_free(&m);
    }
}
END_TEST

/* A detour of many hops is listed within 80 columns, its hops cut short. */
START_TEST(test_long_detour)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 16, 0), 0);
    int c[16], off[17];
    unsigned char d[15 + 19];
    for (int i = 0; i < 16; i++) {
        c[i] = i;
        off[i] = i;
    }
    off[16] = 15 + 19;
    for (int i = 0; i < 15; i++)
        d[i] = E;
    for (int i = 0; i < 19; i++) /* back west, then to and fro at the end */
        d[15 + i] = i < 15 ? W : (i % 2 ? E : W);
    ftm_ring r = { 16, c, off, d };
    char *pic = NULL, *lines[16];
    ck_assert_int_eq(ftm_viz_ring_ascii(&m, &r, &pic), 0);
    int nl = split_lines(pic, lines, 16), found = 0;
    for (int y = 0; y < nl; y++) {
        ck_assert_int_le((int)strlen(lines[y]), 80);
        if (strncmp(lines[y], "detour (0,15) -> (0,0): 19 hops via W,W,", 40) == 0) {
            found = 1;
            ck_assert_str_eq(lines[y] + strlen(lines[y]) - 4, ",...");
        }
    }
    ck_assert(found);
    free(pic);
    ftm_mesh_free(&m);
}
END_TEST

/* A schedule picture: the routes of one phase, each once, restricted to a
 * byte range; root marked. Hand-made schedule on a 1x3 mesh. */
START_TEST(test_sched)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "hand", 3, 16), 0);
    const unsigned char e = E, ww[] = { W, W };
    int r01 = ftm_sched_route(&s, 0, 1, &e, 1), r12 = ftm_sched_route(&s, 1, 2, &e, 1);
    int r20 = ftm_sched_route(&s, 2, 0, ww, 2);
    for (int c = 0; c < 3; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "up", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r01, 0, 0, 8, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r12, 8, 8, 8, FTM_RED_SUM_F32), 0);
    for (int c = 0; c < 3; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "down", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r20, 0, 0, 16, FTM_RED_COPY), 0);
    char *pic = NULL;
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, "up", 0, 16, 0, 2, &pic), 0);
    ck_assert_str_eq(pic, "    0   1   2\n"
                          " 0  o-->o-->R\n"
                          "o chip   R root   " L_EDGE "\n");
    free(pic);
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, "up", 0, 8, 0, -1, &pic), 0);
    ck_assert_str_eq(pic, "    0   1   2\n"
                          " 0  o-->o   o\n"
                          "o chip   " L_EDGE "\n");
    free(pic);
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, "down", 0, 16, 0, -1, &pic), 0);
    ck_assert_str_eq(pic, "    0   1   2\n"
                          " 0  o===*===o\n"
                          "o chip   * chip forwarding a detour   === ! link a detour crosses\n"
                          "detour (0,2) -> (0,0): 2 hops via W,W\n");
    free(pic);
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, NULL, 0, 16, 0, -1, &pic), 0);
    ck_assert(strstr(pic, " 0  o-=>*-=>o\n") == pic + strlen("    0   1   2\n"));
    free(pic);
    /* sums: every phase, but only what the receiver adds (not the copy) */
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, NULL, 0, 16, 1, 2, &pic), 0);
    ck_assert_str_eq(pic, "    0   1   2\n"
                          " 0  o-->o-->R\n"
                          "o chip   R root   " L_EDGE "\n");
    free(pic);
    /* a route used 256 times is still drawn (a byte counter once wrapped) */
    for (int c = 0; c < 3; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "many", 0), 0);
    for (int k = 0; k < 256; k++)
        ck_assert_int_eq(ftm_sched_xfer(&s, r01, 0, 0, 4, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, "many", 0, 16, 0, -1, &pic), 0);
    ck_assert(strstr(pic, " 0  o-->o   o\n") != NULL);
    free(pic);
    ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, "up", 0, 16, 0, 3, &pic), FTM_EINVAL);
    ck_assert_ptr_null(pic);
    ftm_sched_free(&s);
    /* a packed or dry schedule has no op arrays: refused, not read */
    for (int dry = 0; dry < 2; dry++) {
        ftm_sched_ctx ctx = { .dry = dry, .packed = 1 };
        ck_assert_int_eq(ftm_allreduce_ring_build(&s, &ctx, &m, 4, FTM_RED_SUM_F32), 0);
        ck_assert_int_eq(ftm_viz_sched_ascii(&m, &s, NULL, 0, 16, 1, -1, &pic), FTM_EINVAL);
        ck_assert_ptr_null(pic);
        ftm_sched_free(&s);
    }
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
    tcase_add_test(tc, test_width);
    tcase_add_test(tc, test_long_detour);
    tcase_add_test(tc, test_sched);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return test_run(s);
}
