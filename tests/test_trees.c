/* The "trees" allreduce: exact on every chip (float: the same bits
 * everywhere; int64) for many fault patterns, tree and chunk counts, by
 * the sequential executor and on real chip threads; the link bytes the
 * model replays are the schedule's; the trees are balanced. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/runtime.h"
#include "ftmesh/error.h"
#include "ftmesh/test_hooks.h"
#include "test_util.h"

static float input(int chip, size_t k) { return (float)((int)((chip * 13 + (int)(k % 1000) * 7) % 9) - 4); }

/* Mesh i: sizes and kinds of faults in turn (torus and open mesh). */
static void make_mesh(int i, ftm_mesh *m)
{
    static const int dims[][2] = { { 4, 4 }, { 5, 6 }, { 6, 6 }, { 8, 8 }, { 3, 7 }, { 7, 5 } };
    const int *d = dims[i % 6];
    ck_assert_int_eq(ftm_mesh_init(m, d[0], d[1], (i / 6) % 2 == 0), 0);
    switch ((i / 12) % 7) {
    case 0: break;
    case 1: ftm_mesh_fail_host(m, 2, 2); break;
    case 2: ftm_mesh_fail_chip(m, d[0] / 2, d[1] / 2); break;
    case 3: ftm_mesh_fail_link(m, 1, 1, 1, 2, 0); break;
    case 4: ftm_mesh_fail_link(m, 1, 1, 2, 1, 1); break; /* one way */
    case 5: ftm_mesh_fail_host(m, 0, 0); ftm_mesh_fail_chip(m, d[0] - 1, d[1] - 1); break;
    default: ftm_mesh_fail_random(m, 3, (uint64_t)i); break;
    }
}

/* Runs s sequentially on float and int64 inputs: every live chip holds
 * the exact sums; the model's link bytes are the schedule's. */
static void check_sched(const ftm_mesh *m, const ftm_sched *s, size_t count, ftm_red red)
{
    size_t es = ftm_sched_red_elem_size(red);
    void **b = calloc((size_t)m->nchips, sizeof(void *));
    int64_t cs = 0, nh = 0;
    for (int c = 0; c < m->nchips; c++) {
        b[c] = malloc(count * es + 1);
        for (size_t x = 0; x < count; x++)
            if (red == FTM_RED_SUM_F32)
                ((float *)b[c])[x] = input(c, x);
            else
                ((int64_t *)b[c])[x] = ((int64_t)1 << 40) * c + (int64_t)x;
        if (ftm_mesh_alive(m, c)) {
            cs += c;
            nh++;
        }
    }
    ck_assert_int_eq(ftm_sched_exec_data(s, m, b), 0);
    for (size_t x = 0; x < count; x++) {
        float want = 0;
        for (int c = 0; c < m->nchips; c++)
            want += ftm_mesh_alive(m, c) ? input(c, x) : 0;
        for (int c = 0; c < m->nchips; c++) {
            if (!ftm_mesh_alive(m, c))
                continue;
            if (red == FTM_RED_SUM_F32)
                test_assert(((float *)b[c])[x] == want, "chip %d elem %zu", c, x);
            else
                test_check(((int64_t *)b[c])[x] == ((int64_t)1 << 40) * cs + nh * (int64_t)x);
        }
    }
    for (int c = 0; c < m->nchips; c++)
        free(b[c]);
    free(b);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m->nchips * 8);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result r;
    ftm_sched_link_bytes(s, m, lb);
    ck_assert_int_eq(ftm_cost_sched(s, m, &p, &r, lb + m->nchips * 4), 0);
    for (int l = 0; l < m->nchips * 4; l++)
        ck_assert_uint_eq(lb[l], lb[m->nchips * 4 + l]);
    free(lb);
}

/* Meshes 6i .. 6i+5, each with 1, 3 and 7 trees and 1, 2 and 5 chunks,
 * and the registry's choice; float and int64; counts below and above the
 * number of trees times chunks. A chip reachable only over a one-way link
 * is refused (FTM_ENOTSUP), nothing else. */
START_TEST(test_trees_exact)
{
    static const int KC[][2] = { { 1, 1 }, { 3, 2 }, { 7, 5 }, { 16, 0 } };
    for (int j = 0; j < 6; j++) {
        ftm_mesh m;
        make_mesh(_i * 6 + j, &m);
        for (int v = 0; v < 4; v++) {
            size_t count = v == 1 ? 5 : 97 + (size_t)(_i * 6 + j);
            ftm_red red = (v + j) % 2 ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
            ftm_sched s;
            int rc = ftm_allreduce_trees_build_kc(&s, NULL, &m, count, red, KC[v][0], KC[v][1]);
            if (rc == FTM_ENOTSUP && (_i * 6 + j) / 12 % 7 == 4)
                continue;
            ck_assert_msg(rc == 0, "mesh %d v %d: %s", _i * 6 + j, v, ftm_strerror(rc));
            ck_assert_str_eq(s.algo, "trees");
            check_sched(&m, &s, count, red);
            ftm_sched_free(&s);
        }
        ftm_mesh_free(&m);
    }
}
END_TEST

/* The counts the build tries for large buffers (trees_pick.c: 47 and 71
 * trees) on a 16x16 torus with a dead host, exact (float and int64) at
 * small counts: shares of 0 to 3 elements cut into 3 chunks. */
START_TEST(test_trees_many_exact)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 8), 0);
    static const int K[] = { 47, 71 };
    for (int v = 0; v < 2; v++) {
        size_t count = 3 * (size_t)K[v] - 11;
        ftm_red red = v ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
        ftm_sched s;
        ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, red, K[v], 3), 0);
        check_sched(&m, &s, count, red);
        ftm_sched_free(&s);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* Chunks big enough (over 5 hop latencies of transfer) that the sums go
 * up in smaller chunks than the copies come down (5 down, 6 up): exact
 * on a torus with a dead chip and a mesh with a dead link, float and
 * int64; the root copies a down chunk only once every up chunk under it
 * is summed in. */
START_TEST(test_trees_split_chunks)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 3, !_i), 0);
    ck_assert_int_eq(_i ? ftm_mesh_fail_link(&m, 0, 1, 1, 1, 0) : ftm_mesh_fail_chip(&m, 0, 1), 0);
    size_t count = 630000 + 7 * (size_t)_i;
    ftm_red red = _i ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, red, 1, 5), 0);
    int ops = 0;
    for (int c = 0; c < m.nchips; c++)
        ops += (int)s.prog[c].nops;
    check_sched(&m, &s, count, red);
    ftm_sched_free(&s);
    /* (live - 1) tree edges x (6 up + 5 down) transfers, each a send and a receive */
    ck_assert_int_eq(ops, (ftm_mesh_healthy_count(&m) - 1) * (6 + 5) * 2);
    ftm_mesh_free(&m);
}
END_TEST

/* Cost parameters far from the TPU-v3 ones, for which the build sizes
 * its chunks: a hop of 1 ns and HBM ten times slower than a link (up
 * chunks capped at twice the down ones), no hop latency at all and fast
 * links (chunks capped at the share's elements: one element must not cut
 * into a million empty chunks), and HBM a million times slower. Each
 * builds, is exact, and stays small; auto picks among them too. */
START_TEST(test_trees_odd_costs)
{
    static const double P[][3] = { { 100e9, 1e-9, 10e9 }, { 1e15, 0, 900e9 }, { 100e9, 0, 1e6 } };
    ftm_mesh m;
    ck_assert_int_eq(_i < 3 ? ftm_mesh_init(&m, 4, 4, 1) : ftm_mesh_init(&m, 8, 1, 1), 0);
    if (_i < 3)
        ck_assert_int_eq(ftm_mesh_fail_host(&m, 2, 2), 0);
    ftm_cost_params p = { P[_i % 3][0], P[_i % 3][1], P[_i % 3][2] };
    ftm_sched_ctx ctx = { .cost = &p };
    static const size_t counts[] = { 1, 7, 5000 };
    for (int v = 0; v < 3; v++) {
        ftm_red red = v % 2 ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
        ftm_sched s;
        int rc = ftm_allreduce_trees_build_own(&s, &ctx, &m, counts[v], red);
        ck_assert_msg(rc == 0, "params %d count %zu: %s", _i, counts[v], ftm_strerror(rc));
        check_sched(&m, &s, counts[v], red);
        if (counts[v] == 1) /* a chunk or two a share: kilobytes */
            ck_assert_uint_lt(ftm_sched_mem_bytes(&s), (size_t)256 << 10);
        ftm_sched_free(&s);
        const char *algo = NULL;
        ftm_cost_result t;
        rc = ftm_allreduce_auto(&ctx, &m, counts[v], red, &p, &algo, &t);
        ck_assert_msg(rc == 0 && algo, "auto, params %d: %s", _i, ftm_strerror(rc));
    }
    ftm_mesh_free(&m);
}
END_TEST

typedef struct job {
    const ftm_sched *s;
    void **bufs;
} job;

static int run_sched(ftm_chip *c, void *arg)
{
    job *j = arg;
    return ftm_chip_exec(c, j->s, j->bufs[ftm_chip_id(c)]);
}

/* On chip threads, int64: every chip holds the exact sums, and every
 * link carried the bytes the schedule says (float on threads: the
 * registry-wide sweeps of test_allreduce). */
START_TEST(test_trees_threads_int64)
{
    ftm_mesh m;
    make_mesh(12 + 13 * _i, &m);
    size_t count = 301;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, FTM_RED_SUM_I64, 5, 3), 0);
    void **b = calloc((size_t)m.nchips, sizeof(void *));
    int64_t cs = 0, nh = 0;
    for (int c = 0; c < m.nchips; c++) {
        b[c] = malloc(count * 8);
        for (size_t x = 0; x < count; x++)
            ((int64_t *)b[c])[x] = ((int64_t)1 << 40) * c + (int64_t)x;
        if (ftm_mesh_alive(&m, c)) {
            cs += c;
            nh++;
        }
    }
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 64, .hang_timeout_s = 20.0 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    job j = { &s, b };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    uint64_t *want = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, want);
    for (int c = 0; c < m.nchips; c++) {
        for (int d = 0; d < 4; d++) {
            uint64_t got = 0, pkts = 0;
            if (ftm_mesh_link_live(&m, c, d))
                ftm_rt_link_stats(rt, c, d, &got, &pkts);
            ck_assert_uint_eq(got, want[c * 4 + d]);
        }
        for (size_t x = 0; ftm_mesh_alive(&m, c) && x < count; x++)
            ck_assert(((int64_t *)b[c])[x] == ((int64_t)1 << 40) * cs + nh * (int64_t)x);
        free(b[c]);
    }
    free(want);
    free(b);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Balanced trees: on a healthy 8x8 torus 8 trees put at most
 * ceil(8 * 63 / 128) = 4 on a link (the most bytes on a link is 4/8 of
 * the buffer, the link-bytes bound's share), and with a dead chip
 * ceil(8 * 62 / 124) = 4 still. */
START_TEST(test_trees_balanced)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 1), 0);
    if (_i)
        ftm_mesh_fail_chip(&m, 3, 4);
    size_t count = 8 * 1000;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, FTM_RED_SUM_F32, 8, 4), 0);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4), mx = 0;
    ftm_sched_link_bytes(&s, &m, lb);
    for (int l = 0; l < m.nchips * 4; l++)
        mx = lb[l] > mx ? lb[l] : mx;
    ck_assert_uint_eq(mx, 4 * 1000 * 4);
    free(lb);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Balanced beside a hole: on a 16x16 torus with a dead 2x2 host (251
 * other chips, 500 live links) K trees put at most ceil(251 K / 500)
 * on a link. Shortest paths alone do not: the chips on the hole's rim
 * have one BFS parent in every tree rooted on its far side (19, 20 and
 * 31 trees put 11, 12 and 17 on a rim link), so some chips there hang a
 * level or two deeper. */
START_TEST(test_trees_balanced_hole)
{
    static const int K[] = { 19, 20, 31 };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 8), 0);
    size_t count = (size_t)K[_i] * 1000;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, FTM_RED_SUM_F32, K[_i], 1),
                     0);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4), mx = 0;
    ftm_sched_link_bytes(&s, &m, lb);
    for (int l = 0; l < m.nchips * 4; l++)
        mx = lb[l] > mx ? lb[l] : mx;
    ck_assert_uint_eq(mx, (uint64_t)((251 * K[_i] + 499) / 500) * 1000 * 4);
    check_sched(&m, &s, count, FTM_RED_SUM_F32);
    free(lb);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Rows or columns (on the 16-wide torus) from chip (r, c) to the dead
 * host at rows 4-5, columns 8-9, whichever is more. */
static int hole_dist(int r, int c)
{
    int dr = abs(r - 4) < abs(r - 5) ? abs(r - 4) : abs(r - 5);
    int dc = abs(c - 8) < abs(c - 9) ? abs(c - 8) : abs(c - 9);
    dr = dr < 16 - dr ? dr : 16 - dr;
    dc = dc < 16 - dc ? dc : 16 - dc;
    return dr > dc ? dr : dc;
}

/* Balance's direction objective: away from a hole each link carries its
 * trees about half each way, at most ceil(L/2) of L = 16 one way (31
 * trees on the 16x16 torus with a dead host; counted from the schedule:
 * a summed receive is an up chunk, a copied one a down chunk, 8 of each
 * per tree). Only the rim's links may keep more (their chips send every
 * tree's up chunks over 3 links). */
START_TEST(test_trees_two_ways)
{
    const int k = 31, nc = 8;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 8), 0);
    size_t count = (size_t)k * nc * 4;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, FTM_RED_SUM_F32, k, nc), 0);
    int up[256 * 4] = { 0 }, dn[256 * 4] = { 0 };
    for (int c = 0; c < m.nchips; c++)
        for (int o = 0; o < s.prog[c].nops; o++) {
            const ftm_op *op = &s.prog[c].ops[o];
            if (op->kind != FTM_OP_RECV)
                continue;
            int l = (int)op->peer * 4 + s.dirs[s.routes[op->route].first];
            *(op->red == FTM_RED_COPY ? &dn[l] : &up[l]) += 1;
        }
    int far = 0;
    for (int l = 0; l < m.nchips * 4; l++) {
        int v = 0, u = l / 4;
        if (!ftm_mesh_link_both(&m, u, l % 4, &v) || hole_dist(u / 16, u % 16) < 4 ||
            hole_dist(v / 16, v % 16) < 4)
            continue;
        far++;
        ck_assert_msg(up[l] <= 8 * nc && dn[l] <= 8 * nc, "link %d: %d trees up, %d down", l,
                      up[l] / nc, dn[l] / nc);
    }
    ck_assert_int_gt(far, 600);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* How near the bound the trees model (a ratchet on the measured ratios,
 * so a change that slows them fails here): a 16x16 torus with a dead
 * host, 100 MB and 1.3 GB, the TPU-v3 defaults. Measured 1.443 and
 * 1.167 times the bound (at 1.3 GB with trees_pick.c's counts for large
 * buffers; 1.183 with 35 trees at most; doc/trees.md says what the rest
 * is). */
START_TEST(test_trees_near_bound)
{
    static const double MB[] = { 100, 1300 }, MOST[] = { 1.46, 1.17 };
    if (_i && small_scale()) /* make check: 100 MB only (the 1.3 GB build: 1 s) */
        return;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 8), 0);
    size_t count = (size_t)(MB[_i] * 1048576.0) / 4;
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_trees_build_own(&s, NULL, &m, count, FTM_RED_SUM_F32), 0);
    ck_assert_str_eq(s.algo, "trees");
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result r;
    ftm_cost_bound_parts b;
    ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
    ck_assert_int_eq(ftm_cost_bound(&m, count * 4, FTM_RED_SUM_F32, &p, &b), 0);
    ck_assert_msg(r.time_s >= b.time_s && r.time_s <= MOST[_i] * b.time_s,
                  "%.0f MB: %.1f us, bound %.1f us (at most %.2f x)", MB[_i], r.time_s * 1e6,
                  b.time_s * 1e6, MOST[_i]);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* The justification passes (trees_just.c) reorder the list schedule's
 * sends: on fault patterns of make_mesh the schedule is exact (float and
 * int64; counts from 1 element, so that most chunks are empty, up) and
 * takes no more steps than the list schedule, and no fewer than the
 * lower bound on any order of the same sends; on the 16x16 torus with a
 * dead host (16 or 23 trees, 4 chunks) it takes fewer than the list. */
START_TEST(test_trees_justified)
{
    static const size_t COUNT[] = { 1, 7, 40, 300 };
    for (int i = 0; i < 84; i += 5) {
        ftm_mesh m;
        make_mesh(i, &m);
        for (int v = 0; v < 4; v++) {
            size_t count = COUNT[v] + (size_t)i;
            ftm_red red = (i + v) % 2 ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
            int st[4], k = 3 + (i + v) % 9, nc = 1 + (i + 2 * v) % 4;
            int rc = ftm_allreduce_trees_steps(&m, count, red, k, nc, st);
            if (rc == FTM_ENOTSUP)
                break;
            ck_assert_int_eq(rc, 0);
            ck_assert_msg(st[2] <= st[1] && st[1] <= st[0], "mesh %d count %zu: bound %d, "
                          "justified %d, list %d steps", i, count, st[2], st[1], st[0]);
            ftm_sched s;
            ck_assert_int_eq(ftm_allreduce_trees_build_kc(&s, NULL, &m, count, red, k, nc), 0);
            check_sched(&m, &s, count, red);
            ftm_sched_free(&s);
        }
        ftm_mesh_free(&m);
    }
    int fewer = 0;
    for (int k = 16; k <= 23; k += 7) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, 16, 16, 1), 0);
        ck_assert_int_eq(ftm_mesh_fail_host(&m, 4, 8), 0);
        int st[4];
        ck_assert_int_eq(ftm_allreduce_trees_steps(&m, 4096, FTM_RED_SUM_F32, k, 4, st), 0);
        ck_assert_msg(st[2] <= st[1] && st[1] <= st[0], "%d trees: bound %d, justified %d, "
                      "list %d steps", k, st[2], st[1], st[0]);
        fewer += st[1] < st[0];
        ftm_mesh_free(&m);
    }
    ck_assert_int_ge(fewer, 1);
}
END_TEST

static Suite *trees_suite(void)
{
    Suite *su = suite_create("trees");
    TCase *tc = tcase_create("exact");
    tcase_add_loop_test(tc, test_trees_exact, 0, 14);
    tcase_add_test(tc, test_trees_many_exact);
    tcase_add_loop_test(tc, test_trees_threads_int64, 0, 6);
    tcase_add_loop_test(tc, test_trees_balanced, 0, 2);
    tcase_add_loop_test(tc, test_trees_balanced_hole, 0, 3);
    tcase_add_test(tc, test_trees_two_ways);
    tcase_add_loop_test(tc, test_trees_near_bound, 0, 2);
    tcase_add_loop_test(tc, test_trees_split_chunks, 0, 2);
    tcase_add_test(tc, test_trees_justified);
    tcase_add_loop_test(tc, test_trees_odd_costs, 0, 6);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return test_run(trees_suite());
}
