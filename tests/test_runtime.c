/* Runtime: chip threads, mailboxes, hop-by-hop forwarding, link counters,
 * and the watchdog. Schedules here are built by hand. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <check.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/runtime.h"
#include "ftmesh/error.h"
#include "ftmesh/collective.h"
#include "test_util.h"

typedef struct job {
    const ftm_sched *s;
    unsigned char **bufs;  /* [nchips] */
    int iters;
} job;

static int run_sched(ftm_chip *c, void *arg)
{
    job *j = arg;
    for (int it = 0; it < j->iters; it++) {
        int rc = ftm_chip_exec(c, j->s, j->bufs[ftm_chip_id(c)]);
        if (rc)
            return rc;
    }
    return 0;
}

static unsigned char **alloc_bufs(int n, size_t bytes)
{
    unsigned char **b = calloc((size_t)n, sizeof *b);
    for (int i = 0; i < n; i++)
        b[i] = calloc(bytes ? bytes : 1, 1);
    return b;
}

static void free_bufs(unsigned char **b, int n)
{
    for (int i = 0; i < n; i++)
        free(b[i]);
    free(b);
}

/* Chip 0 of a 1xN line sends bytes to chip N-1 across N-1 hops, every
 * chip in between forwarding. */
START_TEST(test_multi_hop_forwarding)
{
    const int n = 8;
    const size_t bytes = 100000; /* not a multiple of the packet size */
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, n, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", n, bytes), 0);
    unsigned char dirs[16];
    memset(dirs, FTM_DIR_E, sizeof dirs);
    int r = ftm_sched_route(&s, 0, n - 1, dirs, n - 1);
    ck_assert_int_ge(r, 0);
    ck_assert_int_eq(ftm_sched_step(&s, 0, "send", 0), 0);
    ck_assert_int_eq(ftm_sched_step(&s, n - 1, "recv", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 0, bytes, FTM_RED_COPY), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 1000, .depth = 2 };
    /* a depth is rounded up to a power of two (the slot counters wrap) */
    ftm_rt_config d3 = { .pkt_bytes = 1000, .depth = 3 }, d4 = { .pkt_bytes = 1000, .depth = 4 };
    ck_assert_uint_eq(ftm_rt_mem_estimate(&m, &d3, &s), ftm_rt_mem_estimate(&m, &d4, &s));
    ck_assert_uint_gt(ftm_rt_mem_estimate(&m, &d3, &s), ftm_rt_mem_estimate(&m, &cfg, &s));
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(n, bytes);
    for (size_t i = 0; i < bytes; i++)
        b[0][i] = (unsigned char)(i * 7 + 3);
    job j = { &s, b, 2 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ck_assert_int_eq(memcmp(b[0], b[n - 1], bytes), 0);
    for (int c = 1; c < n - 1; c++)
        for (size_t i = 0; i < bytes; i++)
            test_assert(b[c][i] == 0, "chip %d byte %zu: %d", c, i, b[c][i]); /* forwarders keep nothing */
    uint64_t want[64 * 4];
    ftm_sched_link_bytes(&s, &m, want);
    for (int c = 0; c < n; c++) {
        for (int d = 0; d < 4; d++) {
            uint64_t got = 0, pkts = 0;
            if (ftm_mesh_link_live(&m, c, d))
                ftm_rt_link_stats(rt, c, d, &got, &pkts);
            ck_assert_uint_eq(got, 2 * want[c * 4 + d]);
            if (d == FTM_DIR_E && c < n - 1) {
                ck_assert_uint_eq(got, 2 * bytes);
                ck_assert_uint_eq(pkts, 2 * 100);
            }
        }
    }
    free_bufs(b, n);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Every chip of a torus sends to the chip diagonally opposite over a
 * multi-hop route while summing what it receives: transit traffic crosses
 * in every direction through tiny mailboxes. Must finish (no deadlock) and
 * sum exactly. */
START_TEST(test_crossing_traffic_sums)
{
    const int R = 6, C = 6, n = R * C;
    const size_t count = 3000;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, 1), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", n, 2 * count * 4), 0);
    for (int c = 0; c < n; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "cross", 0), 0);
    for (int c = 0; c < n; c++) {
        unsigned char dirs[6] = { FTM_DIR_E, FTM_DIR_E, FTM_DIR_E, FTM_DIR_S, FTM_DIR_S, FTM_DIR_S };
        int dst = ftm_mesh_chip(&m, (ftm_mesh_row(&m, c) + 3) % R, (ftm_mesh_col(&m, c) + 3) % C);
        int r = ftm_sched_route(&s, c, dst, dirs, 6);
        ck_assert_int_ge(r, 0);
        /* Send the first half, sum into the second: a step never sends
         * what it receives into. */
        ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, count * 4, count * 4, FTM_RED_SUM_F32), 0);
    }
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 64, .depth = 1 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(n, 2 * count * 4);
    for (int c = 0; c < n; c++)
        for (size_t i = 0; i < count; i++) {
            ((float *)(void *)b[c])[i] = (float)(c + (int)(i % 5));
            ((float *)(void *)b[c])[count + i] = (float)(1000 * c);
        }
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    for (int c = 0; c < n; c++) {
        int src = ftm_mesh_chip(&m, (ftm_mesh_row(&m, c) + 3) % R, (ftm_mesh_col(&m, c) + 3) % C);
        for (size_t i = 0; i < count; i++)
            test_assert(((float *)(void *)b[c])[count + i] == (float)(1000 * c + src + (int)(i % 5)),
                        "chip %d elem %zu: %g", c, i, ((float *)(void *)b[c])[count + i]);
    }
    free_bufs(b, n);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Chips 0 and 1 each wait to receive before they send: a deadlock the
 * watchdog must detect and explain. */
START_TEST(test_hang_detected)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    /* chip 0: [recv tag0 from 1] then [send tag1 to 1]
     * chip 1: [recv tag1 from 0] then [send tag0 to 0] */
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 3, 64), 0);
    unsigned char e = FTM_DIR_E, w = FTM_DIR_W;
    int r01 = ftm_sched_route(&s, 0, 1, &e, 1), r10 = ftm_sched_route(&s, 1, 0, &w, 1);
    ck_assert_int_eq(ftm_sched_step(&s, 0, "wait-first", 0), 0);
    ck_assert_int_eq(ftm_sched_step(&s, 1, "wait-first", 0), 0);
    ck_assert_int_eq(ftm_sched_step(&s, 1, "then-send", 1), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r10, 0, 0, 64, FTM_RED_COPY), 0);
    ck_assert_int_eq(ftm_sched_step(&s, 0, "then-send", 1), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r01, 0, 0, 64, FTM_RED_COPY), 0);
    /* The builder put chip 1's receive in its open step 1, after its send;
     * move it into step 0 to close the cycle. */
    ftm_chip_prog *p1 = &s.prog[1];
    ck_assert_int_eq(p1->nops, 2);
    ftm_op tmp = p1->ops[0];
    p1->ops[0] = p1->ops[1];
    p1->ops[1] = tmp;
    p1->steps[0].nops = 1;
    p1->steps[1].first_op = 1;
    p1->steps[1].nops = 1;
    ck_assert_int_eq(s.prog[0].ops[0].kind, FTM_OP_RECV);
    ck_assert_int_eq(p1->ops[0].kind, FTM_OP_RECV);

    ftm_rt *rt;
    ftm_rt_config cfg = { .hang_timeout_s = 0.3 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(3, 64);
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_EHANG);
    ftm_stuck st[4];
    int k = ftm_rt_stuck(rt, st, 4);
    ck_assert_int_eq(k, 2);
    ck_assert_int_eq(st[0].chip, 0);
    ck_assert_int_eq(st[0].wait, FTM_WAIT_RECV);
    ck_assert_int_eq(st[0].peer, 1);
    ck_assert_int_eq(st[0].dir, FTM_DIR_E);
    ck_assert_str_eq(st[0].phase, "wait-first");
    ck_assert_int_eq(st[1].chip, 1);
    ck_assert_int_eq(st[1].peer, 0);
    ck_assert_int_eq(st[1].dir, FTM_DIR_W);
    ck_assert_uint_eq(st[1].missing, 64);
    free_bufs(b, 3);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Chip 0 skips a barrier the others wait in: no chip waits in a
 * transfer, so the watchdog names the idle ones and where they wait. */
static int skip_barrier(ftm_chip *c, void *arg)
{
    (void)arg;
    return ftm_chip_id(c) == 0 ? 0 : ftm_chip_barrier(c);
}

START_TEST(test_hang_in_barrier_named)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .hang_timeout_s = 0.3 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_run(rt, skip_barrier, NULL), FTM_EHANG);
    ftm_stuck st[8];
    ck_assert_int_eq(ftm_rt_stuck(rt, st, 8), 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(st[i].chip, i);
        ck_assert_int_eq(st[i].wait, FTM_WAIT_DONE);
        ck_assert_str_eq(st[i].phase, i == 0 ? "done" : "barrier");
    }
    ck_assert_int_eq(ftm_rt_stuck(rt, st, 2), 2); /* at most max */
    ftm_rt_destroy(rt);
    ftm_mesh_free(&m);
}
END_TEST

/* A route over a dead link is refused, not hung on. */
START_TEST(test_dead_link_route_refused)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 2, 8), 0);
    unsigned char e = FTM_DIR_E;
    int r = ftm_sched_route(&s, 0, 1, &e, 1);
    ftm_sched_step(&s, 0, "x", 0);
    ftm_sched_step(&s, 1, "x", 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 0, 8, FTM_RED_COPY), 0);
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    unsigned char **b = alloc_bufs(2, 8);
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_ENOROUTE);
    free_bufs(b, 2);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A route may pass its destination before its last hop (2-D column rings
 * do): the packet must follow the whole route, and every link counts it. */
START_TEST(test_route_passes_destination)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 3, 4096), 0);
    unsigned char dirs[3] = { FTM_DIR_E, FTM_DIR_E, FTM_DIR_W }; /* 0 -> 1 -> 2 -> 1 */
    int r = ftm_sched_route(&s, 0, 1, dirs, 3);
    ftm_sched_step(&s, 0, "x", 0);
    ftm_sched_step(&s, 1, "x", 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 0, 4096, FTM_RED_COPY), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 1024 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(3, 4096);
    memset(b[0], 0x5a, 4096);
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ck_assert_int_eq(memcmp(b[0], b[1], 4096), 0);
    uint64_t bytes;
    ftm_rt_link_stats(rt, 1, FTM_DIR_E, &bytes, NULL);
    ck_assert_uint_eq(bytes, 4096);
    ftm_rt_link_stats(rt, 2, FTM_DIR_W, &bytes, NULL);
    ck_assert_uint_eq(bytes, 4096);
    free_bufs(b, 3);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A chip that dies in the middle of an allreduce stops the run with
 * FTM_ECHIPDEAD naming it (not a hang); that runtime refuses another
 * run, a new one runs. */
START_TEST(test_chip_dies_mid_run)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 4096, FTM_RED_SUM_F32), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 256, .hang_timeout_s = 60 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(16, 4096 * 4);
    job j = { &s, b, 3 };
    ck_assert_int_eq(ftm_rt_kill_chip_after(rt, 99, 1), FTM_EINVAL);
    ck_assert_int_eq(ftm_rt_kill_chip_after(rt, 5, 7), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_ECHIPDEAD);
    ck_assert_int_eq(ftm_rt_died(rt), 5);
    /* Stale packets of the broken run may remain: recover on a new runtime. */
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_EINVAL);
    ftm_rt_destroy(rt);
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ck_assert_int_eq(ftm_rt_died(rt), -1);
    free_bufs(b, 16);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A directed link the schedule uses (bytes > 0), or one it does not. */
static void pick_link(const ftm_sched *s, const ftm_mesh *m, int used, int *chip, int *dir)
{
    uint64_t *bytes = calloc((size_t)m->nchips * FTM_NDIRS, sizeof *bytes);
    ftm_sched_link_bytes(s, m, bytes);
    *chip = -1;
    for (int i = 0; i < m->nchips * FTM_NDIRS && *chip < 0; i++)
        if (ftm_mesh_link_live(m, i / FTM_NDIRS, i % FTM_NDIRS) && (bytes[i] > 0) == used) {
            *chip = i / FTM_NDIRS;
            *dir = i % FTM_NDIRS;
        }
    free(bytes);
    ck_assert_int_ge(*chip, 0);
}

/* A dead link kills no chip; a chip at one of its ends notices. */
START_TEST(test_link_dies_noticed_by_its_ends)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 4096, FTM_RED_SUM_F32), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 256, .hang_timeout_s = 60 };
    unsigned char **b = alloc_bufs(16, 4096 * 4);
    job j = { &s, b, 2 };
    for (int oneway = 0; oneway < 2; oneway++) {
        int a, d;
        pick_link(&s, &m, 1, &a, &d);
        int nb = ftm_mesh_neighbor(&m, a, d);
        ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
        ck_assert_int_eq(ftm_rt_kill_link(rt, a, d, oneway), 0);
        ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_ELINKDEAD);
        ck_assert_int_eq(ftm_rt_died(rt), -1);
        int dead[16];
        ck_assert_int_eq(ftm_rt_killed_chips(rt, dead, 16), 0);
        int lc[8], ld[8];
        int nl = ftm_rt_killed_links(rt, lc, ld, 8);
        ck_assert_int_eq(nl, oneway ? 1 : 2);
        ftm_rt_notice nt[16];
        int nn = ftm_rt_notices(rt, nt, 16);
        ck_assert_int_ge(nn, 1);
        for (int i = 0; i < nn; i++) {
            ck_assert(nt[i].chip == a || nt[i].chip == nb);
            ck_assert(nt[i].peer == (nt[i].chip == a ? nb : a));
            ck_assert(strstr(nt[i].how, "failed") != NULL);
        }
        ftm_rt_destroy(rt);
    }
    /* A dead link that nothing crosses is never noticed. */
    int a, d;
    pick_link(&s, &m, 0, &a, &d);
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_kill_link(rt, a, d, 1), 0); /* the other way may carry data */
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ftm_rt_destroy(rt);
    free_bufs(b, 16);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A both-ways kill of a link whose first-named way is dead already (no
 * mailbox that way) still kills the other way; a one-way kill of that
 * dead way has nothing to kill. */
START_TEST(test_link_kill_both_ways_half_dead)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 3, 0), 0);
    int a = ftm_mesh_chip(&m, 0, 0), b = ftm_mesh_chip(&m, 0, 1), d = ftm_mesh_dir_to(&m, a, b);
    m.link_dead[a * FTM_NDIRS + d] = 1;
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    ck_assert_int_eq(ftm_rt_kill_link(rt, a, d, 1), FTM_EINVAL);
    ck_assert_int_eq(ftm_rt_kill_link(rt, a, d, 0), 0);
    int lc[4], ld[4];
    ck_assert_int_eq(ftm_rt_killed_links(rt, lc, ld, 4), 1);
    ck_assert_int_eq(lc[0], b);
    ck_assert_int_eq(ld[0], ftm_dir_opposite(d));
    ftm_rt_destroy(rt);
    ftm_mesh_free(&m);
}
END_TEST

typedef struct armed_job {
    job j;
    int victim, host, link_chip, link_dir;
} armed_job;

static int run_armed(ftm_chip *c, void *arg)
{
    armed_job *aj = arg;
    if (ftm_chip_id(c) == aj->victim) {
        int host[4] = { 0, 1, 4, 5 }, outside[2] = { 0, 16 };
        if (ftm_chip_kill_chips_after(c, 5, outside, 2) != FTM_EINVAL)
            return FTM_ERANGE; /* a chip out of range must be refused */
        int rc = aj->host ? ftm_chip_kill_chips_after(c, 5, host, 4)
                          : ftm_chip_kill_link_after(c, 5, aj->link_chip, aj->link_dir, 0);
        if (rc)
            return rc;
    }
    return run_sched(c, &aj->j);
}

/* Armed from the chip's own thread: a host dies whole; a link dies
 * mid-allreduce and the run stops with FTM_ELINKDEAD. */
START_TEST(test_host_and_link_die_mid_run)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 4096, FTM_RED_SUM_F32), 0);
    ftm_rt *rt;
    ftm_rt_config cfg = { .pkt_bytes = 256, .hang_timeout_s = 60 };
    unsigned char **b = alloc_bufs(16, 4096 * 4);
    armed_job aj = { { &s, b, 2 }, 0, 1, -1, -1 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_armed, &aj), FTM_ECHIPDEAD);
    int dead[16];
    ck_assert_int_eq(ftm_rt_killed_chips(rt, dead, 16), 4);
    ck_assert_int_eq(dead[0], 0);
    ck_assert_int_eq(dead[3], 5);
    ftm_rt_notice nt[4];
    int lc[4], ld[4];
    ck_assert_int_eq(ftm_rt_notices(rt, nt, 4), 1);
    ck_assert_int_eq(nt[0].chip, -1);
    ftm_rt_destroy(rt);
    pick_link(&s, &m, 1, &aj.link_chip, &aj.link_dir);
    aj.host = 0;
    aj.victim = aj.link_chip;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_armed, &aj), FTM_ELINKDEAD);
    ck_assert_int_eq(ftm_rt_killed_chips(rt, dead, 16), 0);
    ck_assert_int_ge(ftm_rt_notices(rt, nt, 4), 1);
    ftm_rt_destroy(rt);
    /* no link west of the open mesh's corner: arming is refused, the run
     * stops with it and nothing dies */
    aj.victim = aj.link_chip = 0;
    aj.link_dir = FTM_DIR_W;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_armed, &aj), FTM_EINVAL);
    ck_assert_int_eq(ftm_rt_killed_chips(rt, dead, 16), 0);
    ck_assert_int_eq(ftm_rt_killed_links(rt, lc, ld, 4), 0);
    ftm_rt_destroy(rt);
    free_bufs(b, 16);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Integer sums are exact or an error: an int64 overflow in a reduction is
 * FTM_ERANGE, never a silent wrap. */
START_TEST(test_int_sum_overflow_is_error)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 4, FTM_RED_SUM_I64), 0);
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    unsigned char **b = alloc_bufs(2, 32);
    int64_t *x0 = (int64_t *)(void *)b[0], *x1 = (int64_t *)(void *)b[1];
    for (int i = 0; i < 4; i++) {
        x0[i] = 3;
        x1[i] = 4;
    }
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ck_assert(x0[3] == 7 && x1[0] == 7);
    x0[0] = INT64_MAX;
    x1[0] = 1;
    ftm_rt_destroy(rt);
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), FTM_ERANGE);
    free_bufs(b, 2);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* ftm_chip_barrier_reduce: every chip gets the sums and maxima of all
 * healthy chips' values, barrier after barrier (the two result rows
 * alternate), with a dead chip contributing nothing. */
enum { BR_ROUNDS = 7 };
static int barrier_reduce_fn(ftm_chip *c, void *arg)
{
    int64_t (*got)[BR_ROUNDS][4] = arg;
    int id = ftm_chip_id(c);
    int64_t big[FTM_BARRIER_WORDS + 1] = { 0 };
    if (ftm_chip_barrier_reduce(c, big, FTM_BARRIER_WORDS, 1) != FTM_EINVAL)
        return FTM_EINTERNAL;
    for (int r = 0; r < BR_ROUNDS; r++) {
        int64_t v[4] = { id + r, (int64_t)id * r, id * (r + 1), -id };
        int rc = ftm_chip_barrier_reduce(c, v, 2, 2);
        if (rc)
            return rc;
        memcpy(got[id][r], v, sizeof v);
    }
    return 0;
}

START_TEST(test_barrier_reduce)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip_id(&m, 4), 0);
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    int64_t got[9][BR_ROUNDS][4];
    memset(got, 0, sizeof got);
    ck_assert_int_eq(ftm_rt_run(rt, barrier_reduce_fn, got), 0);
    /* healthy ids 0..8 without 4: sum 32, largest 8, smallest 0 */
    for (int id = 0; id < 9; id++)
        for (int r = 0; r < BR_ROUNDS && id != 4; r++) {
            ck_assert(got[id][r][0] == 32 + 8 * r);
            ck_assert(got[id][r][1] == 32 * r);
            ck_assert(got[id][r][2] == 8 * (r + 1));
            ck_assert(got[id][r][3] == 0);
        }
    ftm_rt_destroy(rt);
    ftm_mesh_free(&m);
}
END_TEST

/* 1024 chip threads (32x32) exchange with their east neighbour. */
START_TEST(test_many_threads)
{
    const int R = 32, C = 32, n = R * C;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, 1), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", n, 4096), 0);
    for (int c = 0; c < n; c++)
        ftm_sched_step(&s, c, "east", 0);
    unsigned char e = FTM_DIR_E;
    for (int c = 0; c < n; c++) {
        int r = ftm_sched_route(&s, c, ftm_mesh_neighbor(&m, c, FTM_DIR_E), &e, 1);
        ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 2048, 2048, FTM_RED_COPY), 0);
    }
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    unsigned char **b = alloc_bufs(n, 4096);
    for (int c = 0; c < n; c++)
        memset(b[c], c & 0xff, 2048);
    job j = { &s, b, 3 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    for (int c = 0; c < n; c++) {
        int w = ftm_mesh_neighbor(&m, c, FTM_DIR_W);
        ck_assert_int_eq(b[c][2048], w & 0xff);
        ck_assert_int_eq(b[c][4095], w & 0xff);
    }
    free_bufs(b, n);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Moves a chip's op i (0 or 1 of its first step) to the end of its
 * program, as the only op of a last, third step: a receive matched long
 * after its send, which ftm_sched_xfer alone cannot place. */
static void move_op_to_step2(ftm_sched *s, int c, int i)
{
    ftm_chip_prog *p = &s->prog[c];
    ck_assert_int_eq(p->nsteps, 3);
    ck_assert_int_eq(p->steps[0].nops, 2);
    ck_assert_int_eq(p->steps[2].nops, 0);
    ftm_op moved = p->ops[i];
    memmove(&p->ops[i], &p->ops[i + 1], sizeof moved * (size_t)(p->nops - i - 1));
    p->ops[p->nops - 1] = moved;
    p->steps[0].nops = 1;
    p->steps[1].first_op = 1;
    p->steps[2].first_op = p->nops - 1;
    p->steps[2].nops = 1;
}

/* Two chips each send a range at step 0 that the other receives only at
 * step 2, and at step 1 each receives into the range it sent. The data of
 * step 0 must not be lost or waited for: with single-copy sends a chip
 * that waited for its step-0 range to be read before overwriting it would
 * wait for a neighbour that waits for it (a hang the schedule itself does
 * not have: with packets the data was already in the link). */
START_TEST(test_overwrite_before_read)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 2, 256), 0);
    unsigned char e = FTM_DIR_E, w = FTM_DIR_W;
    int ab = ftm_sched_route(&s, 0, 1, &e, 1), ba = ftm_sched_route(&s, 1, 0, &w, 1);
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, ab, 0, 128, 64, FTM_RED_COPY), 0);  /* A [0,64) -> B [128,192) */
    ck_assert_int_eq(ftm_sched_xfer(&s, ba, 64, 128, 64, FTM_RED_COPY), 0); /* B [64,128) -> A [128,192) */
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "test", 1), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, ab, 192, 64, 64, FTM_RED_COPY), 0); /* A [192,256) -> B [64,128) */
    ck_assert_int_eq(ftm_sched_xfer(&s, ba, 192, 0, 64, FTM_RED_COPY), 0);  /* B [192,256) -> A [0,64) */
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "test", 2), 0);
    move_op_to_step2(&s, 0, 1); /* A's receive of B's [64,128) */
    move_op_to_step2(&s, 1, 0); /* B's receive of A's [0,64) */
    ftm_rt *rt;
    ftm_rt_config cfg = { .hang_timeout_s = 5 }; /* single copy: the default */
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    unsigned char **b = alloc_bufs(2, 256);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 256; i++)
            b[c][i] = (unsigned char)(c * 100 + i / 64 + 1); /* chip c, quarter q: 100c+q+1 */
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq(b[0][i], 104);            /* B's last quarter, step 1 */
        ck_assert_int_eq(b[0][128 + i], 102);      /* B's second quarter as sent at step 0 */
        ck_assert_int_eq(b[1][64 + i], 4);         /* A's last quarter, step 1 */
        ck_assert_int_eq(b[1][128 + i], 1);        /* A's first quarter as sent at step 0 */
    }
    free_bufs(b, 2);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* A chip whose run stops (another chip fails) gets its buffer back when
 * ftm_chip_exec returns, even where a neighbour was offered a range of it
 * (one hop: by descriptor) and reads it only later: chip 0 frees its buffer
 * at once, chip 1 starts late. AddressSanitizer (CI) fails this on a read
 * after the free. */
static int stopped_fn(ftm_chip *c, void *arg)
{
    const ftm_sched *s = arg;
    int id = ftm_chip_id(c);
    if (id == 2) {
        sleep_ms(50);
        return FTM_EINVAL;
    }
    if (id == 1)
        sleep_ms(200);
    float *buf = malloc(s->bytes);
    for (size_t i = 0; i < s->bytes / sizeof *buf; i++)
        buf[i] = 1.0f;
    int rc = ftm_chip_exec(c, s, buf);
    free(buf);
    return rc;
}

START_TEST(test_stopped_exec_returns_buffer)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 3, 1024), 0);
    unsigned char e = FTM_DIR_E;
    int r = ftm_sched_route(&s, 0, 1, &e, 1);
    ck_assert_int_eq(ftm_sched_step(&s, 0, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_step(&s, 1, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 0, 1024, FTM_RED_SUM_F32), 0);
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    ck_assert_int_eq(ftm_rt_run(rt, stopped_fn, &s), FTM_EINVAL);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A local copy and a local sum (routes of no hops) beside a one-hop sum:
 * the chips give the oracle's result. */
START_TEST(test_local_transfers)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 2, 64), 0);
    unsigned char e = FTM_DIR_E;
    int self0 = ftm_sched_route(&s, 0, 0, NULL, 0), self1 = ftm_sched_route(&s, 1, 1, NULL, 0);
    int r01 = ftm_sched_route(&s, 0, 1, &e, 1);
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(ftm_sched_step(&s, c, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, self0, 0, 32, 32, FTM_RED_COPY), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r01, 0, 0, 16, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, self1, 16, 32, 16, FTM_RED_SUM_F32), 0);
    float want[2][16], got[2][16];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 16; i++)
            want[c][i] = got[c][i] = (float)(c * 100 + i);
    void *bufs[2] = { want[0], want[1] };
    ck_assert_int_eq(ftm_sched_xfer(&s, self0, 0, 16, 32, FTM_RED_COPY), FTM_EINVAL); /* overlap */
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, 0, 4), 4); /* the link's 16 bytes only */
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, 1, 4), 0);
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, bufs), 0);
    ck_assert(want[0][8] == 0.0f && want[1][0] == 100.0f && want[1][8] == 108.0f + 104.0f);
    ftm_rt *rt;
    ck_assert_int_eq(ftm_rt_create(&rt, &m, NULL), 0);
    unsigned char *b[2] = { (unsigned char *)got[0], (unsigned char *)got[1] };
    job j = { &s, b, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, run_sched, &j), 0);
    ck_assert_mem_eq(got, want, sizeof want);
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Arguments the runtime and the schedule refuse rather than misread: a
 * packet too large to allocate, a direction that is none, a sum of part of
 * an element; the oracle refuses a route over a dead link as the chips do. */
START_TEST(test_bad_arguments_refused)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    ftm_rt *rt = NULL;
    ftm_rt_config cfg = { .pkt_bytes = FTM_RT_PKT_MAX + 1 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), FTM_EINVAL);
    ck_assert_ptr_null(rt);
    ck_assert_int_eq(ftm_mesh_neighbor(&m, 0, FTM_NDIRS), -1);
    ck_assert_int_eq(ftm_mesh_link_live(&m, 0, 9), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "test", 3, 64), 0);
    unsigned char bad = 9, e = FTM_DIR_E;
    ck_assert_int_eq(ftm_sched_route(&s, 0, 1, &bad, 1), FTM_EINVAL);
    int r = ftm_sched_route(&s, 0, 1, &e, 1);
    ck_assert_int_ge(r, 0);
    ck_assert_int_eq(ftm_sched_step(&s, 0, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_step(&s, 1, "test", 0), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 0, 6, FTM_RED_SUM_F32), FTM_EINVAL);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 2, 0, 8, FTM_RED_SUM_F32), FTM_EINVAL);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 0, 8, 16, FTM_RED_SUM_I64), 0);
    ck_assert_int_eq(ftm_sched_xfer(&s, r, 1, 3, 5, FTM_RED_COPY), 0);
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, 0, 0), 0);
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, 0, SIZE_MAX), 2);
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, 3, 4), 0); /* no chip 3 */
    ck_assert_uint_eq(ftm_sched_chip_packets(&s, -1, 4), 0);
    /* chip 2 has no open step: refused before chip 1's send goes in */
    int r12 = ftm_sched_route(&s, 1, 2, &e, 1);
    ck_assert_int_eq(ftm_sched_xfer(&s, r12, 0, 0, 4, FTM_RED_COPY), FTM_EINVAL);
    ck_assert_int_eq(s.prog[1].nops, 2);
    unsigned char b0[64] = { 0 }, b1[64] = { 0 }, b2[64] = { 0 };
    void *bufs[3] = { b0, b1, b2 };
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, bufs), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 0, 0, 0, 1, 0), 0);
    ck_assert_int_eq(ftm_sched_exec_data(&s, &m, bufs), FTM_ENOROUTE);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A repair has nothing to bring back only where the kill it undoes (the
 * latest of what it names: its own, or a host's around a chip) was
 * skipped; the link in either order. */
START_TEST(test_kill_skipped)
{
    static const char *const lines[] = {
        "host:0,0@1", "1,1@2", "link:2,2-2,3@1", "0,3@1", "0,3@3",
        "repair 1,1@4", "repair link:2,3-2,2@4", "repair 0,3@4", "repair 3,3@4",
    };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        ftm_fault_event e;
        ck_assert_int_eq(ftm_fault_parse_line(lines[i], FTM_FAULT_TRAIN, &e, NULL, 0), 0);
        ck_assert_int_eq(ftm_fault_script_add(&s, &e), 0);
    }
    ftm_rt_script f;
    ck_assert_int_eq(ftm_rt_script_init(&f, &s, &m), 0);
    int k[9]; /* the sorted script's index of each line */
    for (size_t i = 0; i < 9; i++)
        for (int j = 0; j < f.script.n; j++)
            if (f.script.ev[j].order == (int)i)
                k[i] = j;
    const ftm_fault_event *rep_chip = &f.script.ev[k[5]], *rep_link = &f.script.ev[k[6]];
    const ftm_fault_event *rep_03 = &f.script.ev[k[7]], *rep_33 = &f.script.ev[k[8]];
    f.fired[k[0]] = -1; /* the host skipped, the later kill of (1,1) struck */
    f.fired[k[1]] = 1;
    ck_assert(!ftm_rt_script_kill_skipped(&f, &m, rep_chip));
    f.fired[k[1]] = -1;
    ck_assert(ftm_rt_script_kill_skipped(&f, &m, rep_chip));
    f.fired[k[2]] = 1;
    ck_assert(!ftm_rt_script_kill_skipped(&f, &m, rep_link));
    f.fired[k[2]] = -1; /* named the other way round */
    ck_assert(ftm_rt_script_kill_skipped(&f, &m, rep_link));
    f.fired[k[3]] = -1; /* only the latest kill of (0,3) counts */
    f.fired[k[4]] = 1;
    ck_assert(!ftm_rt_script_kill_skipped(&f, &m, rep_03));
    ck_assert(!ftm_rt_script_kill_skipped(&f, &m, rep_33)); /* nothing killed it */
    ftm_rt_script_free(&f);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("runtime");
    tcase_set_timeout(tc, 180); /* 1024 threads under TSan on a loaded 2-core machine: ~50 s */
    tcase_add_test(tc, test_multi_hop_forwarding);
    tcase_add_test(tc, test_crossing_traffic_sums);
    tcase_add_test(tc, test_hang_detected);
    tcase_add_test(tc, test_hang_in_barrier_named);
    tcase_add_test(tc, test_dead_link_route_refused);
    tcase_add_test(tc, test_route_passes_destination);
    tcase_add_test(tc, test_chip_dies_mid_run);
    tcase_add_test(tc, test_link_dies_noticed_by_its_ends);
    tcase_add_test(tc, test_link_kill_both_ways_half_dead);
    tcase_add_test(tc, test_host_and_link_die_mid_run);
    tcase_add_test(tc, test_int_sum_overflow_is_error);
    tcase_add_test(tc, test_barrier_reduce);
    tcase_add_test(tc, test_many_threads);
    tcase_add_test(tc, test_overwrite_before_read);
    tcase_add_test(tc, test_kill_skipped);
    tcase_add_test(tc, test_stopped_exec_returns_buffer);
    tcase_add_test(tc, test_bad_arguments_refused);
    tcase_add_test(tc, test_local_transfers);
    suite_add_tcase(s, tc);
    return test_run(s);
}
