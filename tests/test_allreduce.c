/* Allreduce on chip threads: property sweeps over meshes 2x2..8x8, open and
 * torus, healthy and with seeded random faults (chips, hosts, links, one-way
 * links), for every registered algorithm. ftm_allreduce_run checks every
 * element of every chip against the exact sum; here we also demand that the
 * bytes the runtime counted on each link equal the schedule's. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/router.h"
#include "ftmesh/runtime.h"
#include "ftmesh/rng.h"
#include "ftmesh/error.h"
#include "ftmesh/faults.h"
#include "test_util.h"

/* Fault set `kind` on m: 0 none, 1 a few chips, 2 a host and links,
 * 3 one-way links and a chip. Deterministic in (rows, cols, torus, kind). */
static void add_faults(ftm_mesh *m, int kind, uint64_t key)
{
    int R = m->rows, C = m->cols;
    uint64_t k = 0;
#define RND(n) ((int)(ftm_rng_u64(key, 77, k++, 0, 0) % (uint64_t)(n)))
    if (kind == 1) {
        int n = 1 + RND(3);
        for (int i = 0; i < n && ftm_mesh_healthy_count(m) > 1; i++) {
            int r = RND(R), c = RND(C);
            ftm_mesh_fail_chip(m, r, c);
        }
    } else if (kind == 2) {
        if (R >= 3 && C >= 3) {
            int r = RND(R - 1), c = RND(C - 1);
            ftm_mesh_fail_host(m, r, c);
        }
        for (int i = 0; i < 2; i++) {
            int r = RND(R), c = RND(C);
            if (c + 1 < C)
                ftm_mesh_fail_link(m, r, c, r, c + 1, 0);
        }
    } else if (kind == 3) {
        for (int i = 0; i < 3; i++) {
            int r = RND(R), c = RND(C);
            if (r + 1 < R)
                ftm_mesh_fail_link(m, r, c, r + 1, c, 1);
        }
        int r = RND(R), c = RND(C);
        ftm_mesh_fail_chip(m, r, c);
    }
#undef RND
}

/* Checks one allreduce's result: exact on every element of every chip,
 * and the bytes the runtime counted on each link equal the schedule's. */
static void check_result(const ftm_mesh *m, const char *algo, int rc, ftm_allreduce_result *r)
{
    for (int i = 0; rc == FTM_EHANG && i < r->nstuck; i++) /* who, in the log */
        fprintf(stderr, "stuck: chip %d %s step %d wait %d peer %d dir %d missing %zu\n",
                r->stuck[i].chip, r->stuck[i].phase, r->stuck[i].step, r->stuck[i].wait,
                r->stuck[i].peer, r->stuck[i].dir, r->stuck[i].missing);
    ck_assert_msg(rc == 0, "%dx%d%s algo %s: %s", m->rows, m->cols, m->torus ? " torus" : "", algo,
                  ftm_strerror(rc));
    ck_assert_int_eq(r->chips, ftm_mesh_healthy_count(m));
    ck_assert_msg(r->wrong == 0, "%dx%d algo %s: %llu wrong elements", m->rows, m->cols, algo,
                  (unsigned long long)r->wrong);
    ck_assert_int_eq(r->links_match_sched, 1);
    if (r->chips > 1)
        ck_assert_uint_gt(r->max_link_bytes, 0);
    ftm_allreduce_result_free(r);
}

/* Every registered algorithm at each of the ncounts counts on m, all in
 * one run of one runtime (a runtime and its chip threads per allreduce
 * were most of this program's time). A cut mesh must be refused. */
static void check_mesh(const ftm_mesh *m, const size_t *counts, int ncounts, int again)
{
    /* Meshes alternate between the single-copy default and packets only,
     * so both data paths meet every kind of mesh across the sweeps. */
    static int packets_only;
    packets_only ^= 1;
    enum { MAXJOBS = 64 };
    ftm_allreduce_opts o[MAXJOBS];
    ftm_allreduce_result r[MAXJOBS];
    int n = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        for (int k = 0; k < ncounts; k++) {
            ck_assert_int_lt(n, MAXJOBS);
            o[n++] = (ftm_allreduce_opts){ .algo = a->name, .count = counts[k], .iters = 2,
                                           .hang_timeout_s = 20.0, .pkt_bytes = 256,
                                           .packets_only = packets_only };
        }
    int conn = ftm_mesh_check_connected(m, NULL, NULL);
    ftm_rt *rt = NULL;
    ftm_rt_config cfg = { .pkt_bytes = 256, .hang_timeout_s = 20.0, .packets_only = packets_only };
    if (!conn)
        ck_assert_int_eq(ftm_rt_create(&rt, m, &cfg), 0);
    int rc = ftm_allreduce_run_batch(m, rt, o, n, r);
    if (conn) {
        ck_assert_int_eq(rc, conn);
    } else {
        for (int i = 0; i < n; i++)
            check_result(m, o[i].algo, rc, &r[i]);
        if (again) { /* the runtime stays usable: a second batch, reversed */
            for (int i = 0; i < n / 2; i++) {
                ftm_allreduce_opts t = o[i];
                o[i] = o[n - 1 - i];
                o[n - 1 - i] = t;
            }
            rc = ftm_allreduce_run_batch(m, rt, o, n, r);
            for (int i = 0; i < n; i++)
                check_result(m, o[i].algo, rc, &r[i]);
        }
    }
    ftm_rt_destroy(rt);
}

/* _i encodes rows, cols, torus: one loop iteration per mesh shape. */
START_TEST(test_sweep)
{
    /* make check and the sanitizer builds (10x slower) take every fifth
     * shape, check-full all. */
    if (small_scale() && _i % 5)
        return;
    int rows = 2 + _i % 7, cols = 2 + (_i / 7) % 7, torus = _i / 49;
    for (int kind = 0; kind < 4; kind++) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, rows, cols, torus), 0);
        add_faults(&m, kind, (uint64_t)_i * 16 + (uint64_t)kind);
        /* counts: unbalanced blocks, and fewer elements than chips */
        const size_t counts[2] = { 1000 + (size_t)kind, 3 };
        check_mesh(&m, counts, 2, 0);
        ftm_mesh_free(&m);
    }
}
END_TEST

/* The cases with no Hamiltonian ring (detours needed) and lines. */
START_TEST(test_detour_cases)
{
    static const int cases[][4] = {
        /* rows, cols, torus, dead chip (r*cols+c) or -1 */
        { 8, 8, 0, 3 * 8 + 4 }, { 7, 7, 0, -1 }, { 1, 6, 0, -1 }, { 1, 2, 0, -1 },
        { 5, 3, 0, -1 }, { 3, 3, 1, 4 }, { 2, 2, 0, 0 },
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, cases[t][0], cases[t][1], cases[t][2]), 0);
        if (cases[t][3] >= 0)
            ftm_mesh_fail_chip_id(&m, cases[t][3]);
        const size_t counts[1] = { 4099 };
        check_mesh(&m, counts, 1, 1);
        ftm_mesh_free(&m);
    }
}
END_TEST

/* A chip dies in the middle of the first allreduce: the run stops at once
 * (FTM_ECHIPDEAD inside), the rings are rebuilt without it, and the redone
 * allreduce is exact over the chips left, for every algorithm. */
START_TEST(test_chip_dies_during_run)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 5, _i % 2), 0);
    int victim = ftm_mesh_chip(&m, 1 + _i % 2, 2);
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
        ftm_allreduce_opts o = { .algo = a->name, .count = 3001, .iters = 2, .hang_timeout_s = 20.0,
                                 .pkt_bytes = 256, .fail_during = 1, .fail_chip = victim };
        ftm_allreduce_result r;
        int rc = ftm_allreduce_run(&m, &o, &r);
        ck_assert_msg(rc == 0, "%s: %s", a->name, ftm_strerror(rc));
        ck_assert_int_eq(r.died_chip, victim);
        ck_assert_int_eq(r.ndied, 1);
        ck_assert_int_eq(r.died[0], victim);
        ck_assert_int_eq(r.nevents, 1); /* the record a script's kill gets */
        ck_assert_int_eq(r.events[0].noticed, 1);
        ck_assert_int_eq(r.chips, 19);
        ck_assert_uint_eq(r.wrong, 0);
        ck_assert_int_eq(r.links_match_sched, 1);
        ftm_allreduce_result_free(&r);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* The verifier catches a wrong sum: one bumped element per iteration must
 * be counted, for every algorithm. */
static void add_ev(ftm_fault_script *s, const char *t)
{
    ftm_fault_event e;
    ck_assert_int_eq(ftm_fault_parse(t, FTM_FAULT_ALLREDUCE, &e, NULL, 0), 0);
    ck_assert_int_eq(ftm_fault_script_add(s, &e), 0);
}

/* A script: a link dies mid-allreduce (no chip lost, its ends notice),
 * then a chip at the start of an iteration; the sums stay exact. */
START_TEST(test_fault_script)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_ALLREDUCE);
    add_ev(&s, "link:0,0-0,1@0:3");
    add_ev(&s, "2,2@1");
    ftm_allreduce_opts o = { .algo = _i ? "bidir" : "ring", .count = 5000, .iters = 3,
                             .hang_timeout_s = 30, .pkt_bytes = 512, .faults = &s };
    ftm_allreduce_result r;
    int rc = ftm_allreduce_run(&m, &o, &r);
    ck_assert_msg(rc == 0, "%s (%s)", ftm_strerror(rc), r.detail);
    ck_assert_int_eq(r.wrong, 0);
    ck_assert_int_eq(r.chips, 15);
    ck_assert_int_eq(r.nevents, 2);
    ck_assert(r.events[0].noticed);
    ck_assert_int_eq(r.events[0].chips_after, 16);
    ck_assert_msg(strstr(r.events[0].detected_by, "failed") != NULL, "%s", r.events[0].detected_by);
    ck_assert_int_eq(r.events[1].chips_after, 15);
    ck_assert_int_eq(r.died_chip, ftm_mesh_chip(&m, 2, 2));
    ftm_allreduce_result_free(&r);
    ftm_fault_script_free(&s);
    /* A chip cut off by a death: (0,1) dead, (1,0) dies: (0,0) is cut off. Refused. */
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 0, 1), 0);
    ftm_fault_script_init(&s, FTM_FAULT_ALLREDUCE);
    add_ev(&s, "1,0@0:allreduce");
    rc = ftm_allreduce_run(&m, &o, &r);
    ck_assert_int_eq(rc, FTM_EPARTITION);
    ck_assert_msg(strstr(r.detail, "(0,0)") != NULL, "%s", r.detail);
    ftm_allreduce_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A repair of a link that died with nobody noticing applies: it is
 * recorded after the kill, also once a chip's death restarted the run
 * (the link then stays dead in the runtime until its repair). */
START_TEST(test_repair_unnoticed_link)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_ALLREDUCE);
    add_ev(&s, "link:1,2-0,2@1");
    if (_i)
        add_ev(&s, "3,3@2");
    ftm_fault_event e;
    ck_assert_int_eq(ftm_fault_parse_repair(_i ? "link:1,2-0,2@3" : "link:1,2-0,2@2",
                                            FTM_FAULT_ALLREDUCE, &e, NULL, 0), 0);
    ck_assert_int_eq(ftm_fault_script_add(&s, &e), 0);
    ftm_allreduce_opts o = { .algo = "ring", .count = 1024, .iters = 3 + _i, .hang_timeout_s = 30,
                             .pkt_bytes = 512, .faults = &s };
    ftm_allreduce_result r;
    int rc = ftm_allreduce_run(&m, &o, &r);
    ck_assert_msg(rc == 0, "%s (%s)", ftm_strerror(rc), r.detail);
    ck_assert_int_eq(r.wrong, 0);
    ck_assert(r.links_match_sched);
    ck_assert_int_eq(r.nevents, 2 + _i);
    int repairs = 0, unnoticed = 0;
    for (int k = 0; k < r.nevents; k++) {
        repairs += r.events[k].repair && strcmp(r.events[k].what, "link (1,2)-(0,2)") == 0;
        unnoticed += !r.events[k].noticed;
    }
    ck_assert_int_eq(repairs, 1);
    ck_assert_int_eq(unnoticed, 1);
    ck_assert_int_eq(r.chips, 16 - _i);
    ftm_allreduce_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* With repick (--algo auto) each rebuild runs auto's pick for its mesh,
 * and the runs say what ran: a dead host changes the pick. */
START_TEST(test_repick_after_fault)
{
    ftm_mesh m, left;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ck_assert_int_eq(ftm_mesh_copy(&left, &m), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&left, 1, 1), 0);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_sched_ctx bc = { .cost = &p };
    ftm_cost_result c0, c1;
    const char *first, *then;
    size_t count = _i ? 262144 : 16384;
    ck_assert_int_eq(ftm_allreduce_auto(&bc, &m, count, FTM_RED_SUM_F32, &p, &first, &c0), 0);
    ck_assert_int_eq(ftm_allreduce_auto(&bc, &left, count, FTM_RED_SUM_F32, &p, &then, &c1), 0);
    ck_assert_str_ne(first, then); /* else this case tests nothing */
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_ALLREDUCE);
    add_ev(&s, "host:1,1@0");
    ftm_allreduce_opts o = { .algo = first, .count = count, .iters = 1, .hang_timeout_s = 30,
                             .faults = &s, .cost = &p, .repick = 1 };
    ftm_allreduce_result r;
    int rc = ftm_allreduce_run(&m, &o, &r);
    ck_assert_msg(rc == 0, "%s (%s)", ftm_strerror(rc), r.detail);
    ck_assert_int_eq(r.wrong, 0);
    ck_assert(r.links_match_sched);
    ck_assert_int_eq(r.nruns, 2);
    ck_assert_str_eq(r.runs[0].algo, first);
    ck_assert_int_eq(r.runs[0].chips, 16);
    ck_assert_int_eq(r.runs[0].when, -1);
    ck_assert_str_eq(r.runs[1].algo, then);
    ck_assert_int_eq(r.runs[1].chips, 12);
    ck_assert_int_eq(r.runs[1].when, 0);
    ck_assert_int_eq(r.runs[1].after, 1);
    ftm_allreduce_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&left);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_verifier_catches_wrong_sum)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
        ftm_allreduce_opts o = { .algo = a->name, .count = 100, .iters = 3, .verify_selftest = 1 };
        ftm_allreduce_result r;
        ck_assert_int_eq(ftm_allreduce_run(&m, &o, &r), 0);
        ck_assert_uint_eq(r.wrong, 3);
        ftm_allreduce_result_free(&r);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* One healthy chip left: nothing to move, the buffer is its own sum. */
START_TEST(test_single_chip)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_mesh_fail_chip(&m, 0, 1);
    const size_t counts[1] = { 17 };
    check_mesh(&m, counts, 1, 0);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_unknown_algo)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    ftm_allreduce_opts o = { .algo = "nope", .count = 10, .iters = 1 };
    ftm_allreduce_result r;
    ck_assert_int_eq(ftm_allreduce_run(&m, &o, &r), FTM_EINVAL);
    ftm_mesh_free(&m);
}
END_TEST

/* The run's memory estimate: it holds the schedule as allocated (at least
 * its ops and steps) and grows by exactly the buffers and expected sums,
 * (healthy chips + 1) floats, per element more. */
START_TEST(test_mem_estimate)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 1), 0);
    ftm_mesh_fail_chip(&m, 1, 2);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_find("bidir")->build(&s, NULL, &m, 1000, FTM_RED_SUM_F32), 0);
    size_t held = 0;
    for (int c = 0; c < s.nchips; c++)
        held += (size_t)s.prog[c].nops * sizeof(ftm_op) + (size_t)s.prog[c].nsteps * sizeof(ftm_step);
    ck_assert_uint_ge(ftm_sched_mem_bytes(&s), held);
    ftm_allreduce_opts o = { .algo = "bidir", .count = 1000, .iters = 1, .sched = &s };
    size_t e1 = ftm_allreduce_mem_estimate(&m, &o, NULL);
    ck_assert_uint_ge(e1, ftm_sched_mem_bytes(&s) + 15 * 1000 * sizeof(float));
    o.count = 3000;
    ck_assert_uint_eq(ftm_allreduce_mem_estimate(&m, &o, NULL) - e1, 16 * 2000 * sizeof(float));
    o.sched = NULL; /* then the schedule passed beside counts */
    ck_assert_uint_eq(ftm_allreduce_mem_estimate(&m, &o, &s), e1 + 16 * 2000 * sizeof(float));
    /* a schedule built for another count (or mesh) is refused, not run past
     * the chips' buffers */
    ftm_allreduce_result r;
    o.sched = &s;
    o.count = 16;
    ck_assert_int_eq(ftm_allreduce_run(&m, &o, &r), FTM_EINVAL);
    ftm_mesh m2;
    ck_assert_int_eq(ftm_mesh_init(&m2, 2, 2, 0), 0);
    o.count = 1000;
    ck_assert_int_eq(ftm_allreduce_run(&m2, &o, &r), FTM_EINVAL);
    ftm_mesh_free(&m2);
    ftm_sched_free(&s);
    /* a count whose bytes wrap a size_t: refused by every builder and the
     * run, and estimated as more than any machine has */
    size_t huge = SIZE_MAX / 4 + 2;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        ck_assert_int_eq(a->build(&s, NULL, &m, huge, FTM_RED_SUM_F32), FTM_EINVAL);
    ftm_allreduce_opts big = { .algo = "tree", .count = huge, .iters = 1 };
    ck_assert_uint_eq(ftm_allreduce_mem_estimate(&m, &big, NULL), SIZE_MAX);
    ck_assert_int_eq(ftm_allreduce_run(&m, &big, &r), FTM_EINVAL);
    ftm_mesh_free(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("allreduce");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_sweep, 0, 98);
    tcase_add_test(tc, test_detour_cases);
    tcase_add_loop_test(tc, test_chip_dies_during_run, 0, 2);
    tcase_add_test(tc, test_verifier_catches_wrong_sum);
    tcase_add_loop_test(tc, test_fault_script, 0, 2);
    tcase_add_loop_test(tc, test_repair_unnoticed_link, 0, 2);
    tcase_add_loop_test(tc, test_repick_after_fault, 0, 2);
    tcase_add_test(tc, test_single_chip);
    tcase_add_test(tc, test_unknown_algo);
    tcase_add_test(tc, test_mem_estimate);
    suite_add_tcase(s, tc);
    return test_run(s);
}
