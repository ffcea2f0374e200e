/* Build modes and choosing: --algo auto (the fastest of the registry,
 * each candidate's build stopped by a watch once it cannot win), the 2-D
 * fallback to the ring, dry runs, budgets and packed schedules, each
 * against the plain build. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/costmodel.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "test_util.h"

/* The TPU-v3 defaults (costmodel.h). */
static ftm_cost_params params(void)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    return p;
}
/* auto: the fastest of all algorithms (registry, plus 2d). */
START_TEST(test_auto_picks_fastest)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 6, 8, _i), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 3), 0);
    ftm_cost_params p = params();
    size_t counts[2] = { 64, 4000000 };
    for (int k = 0; k < 2; k++) {
        const char *name = NULL;
        ftm_cost_result best;
        ck_assert_int_eq(ftm_allreduce_auto(NULL, &m, counts[k], FTM_RED_SUM_F32, &p, &name, &best), 0);
        ck_assert_ptr_nonnull(name);
        int found = 0;
        const ftm_allreduce_algo *a = ftm_allreduce_algos();
        for (int i = 0;; i++) {
            const char *nm = a[i].name ? a[i].name : "2d";
            ftm_allreduce_build_fn fn = a[i].name ? a[i].build : ftm_allreduce_2d_build;
            ftm_sched s;
            ck_assert_int_eq(fn(&s, NULL, &m, counts[k], FTM_RED_SUM_F32), 0);
            ftm_cost_result r;
            ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &r, NULL), 0);
            ck_assert_double_le(best.time_s, r.time_s);
            if (strcmp(nm, name) == 0) {
                found = 1;
                ck_assert(r.time_s == best.time_s);
            }
            ftm_sched_free(&s);
            if (!a[i].name)
                break;
        }
        ck_assert(found);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* The dry run (sched.h) counts what the real build allocates: the built
 * schedule's bytes exactly, and a peak that covers the schedule with its
 * replay. Meshes: small (the 2-D fallback is checked: the dry run keeps
 * the 2-D schedule, which then bounds the ring's), a 17x17 torus with a
 * fault (no fallback check: exact for every algorithm but 2d-lines, which
 * keeps the faster of its schedule and 2d-concurrent's, and trees, which
 * keeps the fastest of three tree counts: their dry runs, knowing no
 * times, keep the larger), a crowded mesh. */
START_TEST(test_dry_run_counts)
{
    static const int dims[3][3] = { { 6, 8, 0 }, { 17, 17, 1 }, { 12, 12, 1 } };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, dims[_i][0], dims[_i][1], dims[_i][2]), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 3), 0);
    if (_i == 2)
        ck_assert_int_eq(ftm_mesh_fail_random(&m, 15, 5), 0);
    size_t counts[2] = { 5, 100000 };
    for (int k = 0; k < 2; k++)
        for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
            size_t peak, sb;
            ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, a->name, &m, counts[k], FTM_RED_SUM_F32,
                                                    &peak, &sb), 0);
            ftm_sched s;
            ck_assert_int_eq(a->build(&s, NULL, &m, counts[k], FTM_RED_SUM_F32), 0);
            size_t real = ftm_sched_mem_bytes(&s), model = ftm_cost_mem_bytes(&s, &m);
            int picks = strncmp(a->name, "2d", 2) == 0 || strcmp(a->name, "trees") == 0;
            if ((_i == 1 && strncmp(a->name, "2d", 2) == 0 && strcmp(a->name, "2d-lines") != 0) ||
                !picks)
                ck_assert_uint_eq(sb, real);
            else
                ck_assert_uint_ge(sb, real);
            ck_assert_uint_ge(peak, real + model);
            ftm_sched_free(&s);
        }
    size_t pa, sa, pr, sr;
    ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, "auto", &m, 1000, FTM_RED_SUM_F32, &pa, &sa), 0);
    ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, "bidir", &m, 1000, FTM_RED_SUM_F32, &pr, &sr), 0);
    ck_assert_uint_ge(pa, pr);
    ck_assert_uint_ge(sa, sr);
    ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, "nope", &m, 1000, FTM_RED_SUM_F32, &pa, &sa),
                     FTM_EINVAL);
    ftm_mesh_free(&m);
}
END_TEST

/* The 2-D fallback decides the ring from a bound on the 2-D time
 * (ftm_cost_lower_bound) without replaying the 2-D schedule: the choice,
 * the modeled time (to the bit) and the link bytes are those the full
 * comparison gave (recorded at commit 684ae16, before the bound), on
 * meshes where the ring wins and where the 2-D schedule does (mesh 0's
 * and 3's 2d-lines, mesh 2's 2d and 2d-lines). The bound is at most the
 * replay's time, and the time itself once the replay is this thread's
 * last. */
static const int FB_MESH[5][4] = { { 8, 8, 1, 6 }, { 6, 8, 0, 6 }, { 16, 16, 1, 2 },
                                   { 12, 12, 1, 3 }, { 16, 16, 1, 40 } };
static const struct {
    int mesh;
    size_t count;
    const char *algo;
    double time_s;
    uint64_t total;
} FB_WANT[] = {
    { 0, 1000, "ring", 0x1.de50c9974655ap-13, 503184ull },
    { 0, 1000, "2d", 0x1.de50c9974655ap-13, 503184ull },
    { 0, 1000, "2d-concurrent", 0x1.de50c9974655ap-13, 503184ull },
    { 0, 1000, "2d-lines", 0x1.50c984607ce37p-15, 456000ull },
    { 0, 262144, "ring", 0x1.04afbd1c8094dp-12, 131903632ull },
    { 0, 262144, "2d", 0x1.04afbd1c8094dp-12, 131903632ull },
    { 0, 262144, "2d-concurrent", 0x1.04afbd1c8094dp-12, 131903632ull },
    { 0, 262144, "2d-lines", 0x1.4a80699136925p-14, 119537664ull },
    { 1, 1000, "ring", 0x1.020814e4d00c6p-12, 390480ull },
    { 1, 1000, "2d", 0x1.020814e4d00c6p-12, 390480ull },
    { 1, 1000, "2d-concurrent", 0x1.020814e4d00c6p-12, 390480ull },
    { 1, 1000, "2d-lines", 0x1.020814e4d00c6p-12, 390480ull },
    { 1, 262144, "ring", 0x1.176a9366609c5p-12, 102360992ull },
    { 1, 262144, "2d", 0x1.176a9366609c5p-12, 102360992ull },
    { 1, 262144, "2d-concurrent", 0x1.176a9366609c5p-12, 102360992ull },
    { 1, 262144, "2d-lines", 0x1.176a9366609c5p-12, 102360992ull },
    { 2, 1000, "ring", 0x1.094f8481954d8p-10, 2039936ull },
    { 2, 1000, "2d", 0x1.389145733bc78p-13, 2055728ull },
    { 2, 1000, "2d-concurrent", 0x1.094f8481954d8p-10, 2039936ull },
    { 2, 1000, "2d-lines", 0x1.a3c82be80747cp-14, 2024000ull },
    { 2, 262144, "ring", 0x1.0ec40136e2c66p-10, 534757248ull },
    { 2, 262144, "2d", 0x1.4ff5b5f602e81p-13, 538898160ull },
    { 2, 262144, "2d-concurrent", 0x1.0ec40136e2c66p-10, 534757248ull },
    { 2, 262144, "2d-lines", 0x1.fe533dd0d72f8p-14, 530579456ull },
    { 3, 1000, "ring", 0x1.25a4944660f4bp-11, 1127936ull },
    { 3, 1000, "2d", 0x1.25a4944660f4bp-11, 1127936ull },
    { 3, 1000, "2d-concurrent", 0x1.25a4944660f4bp-11, 1127936ull },
    { 3, 1000, "2d-lines", 0x1.1dab977672281p-15, 1120000ull },
    { 3, 262144, "ring", 0x1.3084b4b288285p-11, 295683552ull },
    { 3, 262144, "2d", 0x1.3084b4b288285p-11, 295683552ull },
    { 3, 262144, "2d-concurrent", 0x1.3084b4b288285p-11, 295683552ull },
    { 3, 262144, "2d-lines", 0x1.93db3b2762b23p-15, 293601280ull },
    { 4, 1000, "ring", 0x1.c2edf0c7ca77ep-11, 1799632ull },
    { 4, 1000, "2d", 0x1.c2edf0c7ca77ep-11, 1799632ull },
    { 4, 1000, "2d-concurrent", 0x1.c2edf0c7ca77ep-11, 1799632ull },
    { 4, 1000, "2d-lines", 0x1.c2edf0c7ca77ep-11, 1799632ull },
    { 4, 262144, "ring", 0x1.cdd4f8aaf814ap-11, 471762112ull },
    { 4, 262144, "2d", 0x1.cdd4f8aaf814ap-11, 471762112ull },
    { 4, 262144, "2d-concurrent", 0x1.cdd4f8aaf814ap-11, 471762112ull },
    { 4, 262144, "2d-lines", 0x1.cdd4f8aaf814ap-11, 471762112ull },
};

START_TEST(test_fallback_same)
{
    ftm_cost_params cp = params();
    const ftm_sched_ctx ctx = { .packed = _i };
    for (size_t i = 0; i < sizeof FB_WANT / sizeof FB_WANT[0]; i++) {
        /* make check: each recorded row built one way, packed or not */
        if (small_scale() && FB_WANT[i].mesh % 2 != _i)
            continue;
        const int *d = FB_MESH[FB_WANT[i].mesh];
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, d[0], d[1], d[2]), 0);
        ck_assert_int_eq(ftm_mesh_fail_random(&m, d[3], 3 + FB_WANT[i].mesh), 0);
        ftm_sched s;
        ftm_cost_result r;
        double lb, exact;
        ck_assert_int_eq(ftm_allreduce_find(FB_WANT[i].algo)->build(&s, &ctx, &m, FB_WANT[i].count,
                                                                     FTM_RED_SUM_F32), 0);
        ck_assert_int_eq(ftm_cost_lower_bound(&s, &m, &cp, &lb), 0);
        ck_assert_int_eq(ftm_cost_sched(&s, &m, &cp, &r, NULL), 0);
        ck_assert_msg(r.time_s == FB_WANT[i].time_s, "%s mesh %d count %zu: %a, want %a",
                      FB_WANT[i].algo, FB_WANT[i].mesh, FB_WANT[i].count, r.time_s,
                      FB_WANT[i].time_s);
        ck_assert_uint_eq(r.total_link_bytes, FB_WANT[i].total);
        ck_assert(lb > 0 && lb <= r.time_s);
        ck_assert_int_eq(ftm_cost_lower_bound(&s, &m, &cp, &exact), 0);
        ck_assert(exact == r.time_s);
        /* the schedule names what ran: the ring's where the time is the
         * ring's (the group's first row), with the reason why */
        int ring = i % 4 && r.time_s == FB_WANT[i - i % 4].time_s;
        ck_assert_str_eq(s.algo, ring ? "ring" : FB_WANT[i].algo);
        ck_assert_int_eq(s.fallback != NULL, ring);
        ftm_sched_free(&s);
        ftm_mesh_free(&m);
    }
}
END_TEST

/* A build watch (sched.h) sums what ftm_cost_lower_bound sums, as the
 * build goes: unstopped, the largest chip's sum, lowered by the bound's
 * margin, is the bound to the bit; a limit below it stops the build with
 * FTM_ESTOPPED (nothing left allocated: the sanitizer build checks), a
 * limit equal to it does not; dry runs ignore the watch. The 2-D
 * fallback's use of it is checked by test_fallback_same (its 2d,
 * 2d-concurrent and 2d-lines builds on meshes 1-4 stop where the ring
 * wins). */
static int w_build(const char *algo, const ftm_mesh *m, size_t count, double limit,
                   ftm_sched *s, const ftm_cost_params *cp, ftm_sched_ctx ctx)
{
    ftm_sched_watch w = { ftm_cost_watch_floor, cp, limit };
    ctx.watch = &w;
    int rc = ftm_allreduce_find(algo)->build(s, &ctx, m, count, FTM_RED_SUM_F32);
    ck_assert(rc || s->watch == (ctx.dry ? NULL : &w));
    return rc;
}

START_TEST(test_watch_bound)
{
    static const char *const ALGOS[] = { "ring", "bidir", "tree" };
    ftm_cost_params cp = params();
    const ftm_sched_ctx ctx = { .packed = _i };
    for (int i = 0; i < 5; i++)
        for (int a = 0; a < 3; a++) {
            const int *d = FB_MESH[i];
            ftm_mesh m;
            ck_assert_int_eq(ftm_mesh_init(&m, d[0], d[1], d[2]), 0);
            ck_assert_int_eq(ftm_mesh_fail_random(&m, d[3], 3 + i), 0);
            ftm_sched s;
            ck_assert_int_eq(w_build(ALGOS[a], &m, 5000, HUGE_VAL, &s, &cp, ctx), 0);
            ck_assert_ptr_nonnull(s.wsum);
            double most = 0, lb;
            for (int c = 0; c < m.nchips; c++)
                most = fmax(most, s.wsum[2 * c] + s.wsum[2 * c + 1]);
            ftm_sched_unwatch(&s);
            ck_assert_ptr_null(s.wsum);
            ck_assert_int_eq(ftm_cost_lower_bound(&s, &m, &cp, &lb), 0);
            ck_assert_msg(lb > 0 && most * (1 - 1e-9) == lb, "%s mesh %d: %a vs %a", ALGOS[a], i,
                          most * (1 - 1e-9), lb);
            ftm_sched_free(&s);
            ck_assert_int_eq(w_build(ALGOS[a], &m, 5000, lb * (1 - 1e-6), &s, &cp, ctx),
                             FTM_ESTOPPED);
            ck_assert_int_eq(w_build(ALGOS[a], &m, 5000, lb, &s, &cp, ctx), 0);
            ftm_sched_free(&s);
            ftm_sched_meter meter = { 0 };
            ftm_sched_ctx dry = ctx;
            dry.dry = 1;
            dry.meter = &meter;
            ck_assert_int_eq(w_build(ALGOS[a], &m, 5000, 0, &s, &cp, dry), 0);
            ck_assert_ptr_null(s.wsum);
            ftm_sched_free(&s);
            ck_assert_uint_gt(meter.peak, 0);
            ck_assert_uint_eq(meter.live, 0);
            ftm_mesh_free(&m);
        }
}
END_TEST

/* auto stops each candidate's build once it cannot beat the best so far
 * (a watch, sched.h; the 2-D fallbacks under it, allreduce_2d_fallback.c):
 * the pick is still the first fastest of the registry, at its time to the
 * bit, on the fallback's meshes (crowded ones too) and sizes where the
 * tree, the ring and 2-D schedules win, and on a torus of more than 256
 * chips with two faults (no fallback: the 2-D builders' own choices under
 * auto's watch); with the defaults and with other parameters, every
 * candidate built for the parameters auto races by. */
START_TEST(test_auto_bounded)
{
    ftm_cost_params cp = { 50e9, 3e-6, 400e9 };
    if (_i)
        ftm_cost_defaults(&cp);
    static const size_t COUNTS[3] = { 100, 262144, 4000000 };
    static const int BIG[4] = { 18, 18, 1, 2 }; /* > 256 chips, few faults: no fallback */
    /* make check: not the big torus, and each mesh once, under one of the
     * two parameter sets, at one count (the three counts and both sets
     * each met); the sanitizer builds: each (mesh, count) under one of
     * the sets (a checkerboard) */
    for (int i = 0; i < (quick_scale() ? 5 : 6); i++)
        for (int k = 0; k < 3; k++) {
            if (quick_scale() ? i % 2 != _i || k != i % 3 : small_scale() && (i + k + _i) % 2)
                continue;
            const int *d = i < 5 ? FB_MESH[i] : BIG;
            ftm_mesh m;
            ck_assert_int_eq(ftm_mesh_init(&m, d[0], d[1], d[2]), 0);
            ck_assert_int_eq(ftm_mesh_fail_random(&m, d[3], 3 + i), 0);
            const char *want = NULL, *got = NULL;
            double tw = 0;
            /* every algorithm built for auto's parameters (ftm_sched_ctx.cost) */
            ftm_sched_ctx bc = { .cost = &cp };
            for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
                ftm_sched s;
                ftm_cost_result r;
                int rc = a->build(&s, &bc, &m, COUNTS[k], FTM_RED_SUM_F32);
                if (rc == FTM_ENOTSUP)
                    continue;
                ck_assert_int_eq(rc, 0);
                ck_assert_int_eq(ftm_cost_sched(&s, &m, &cp, &r, NULL), 0);
                ftm_sched_free(&s);
                if (!want || r.time_s < tw) {
                    want = a->name;
                    tw = r.time_s;
                }
            }
            ftm_cost_result best;
            ck_assert_int_eq(ftm_allreduce_auto(NULL, &m, COUNTS[k], FTM_RED_SUM_F32, &cp, &got, &best), 0);
            ck_assert_msg(strcmp(got, want) == 0 && best.time_s == tw,
                          "mesh %d count %zu: auto %s %a, want %s %a", i, COUNTS[k], got,
                          best.time_s, want, tw);
            ftm_mesh_free(&m);
        }
}
END_TEST

/* Packed schedules (sched.h) hold the same programs: every algorithm,
 * built both ways on faulty meshes, has the same steps and ops op for op
 * (read back through ftm_sched_read_step and ftm_sched_unpack), the same
 * modeled time to the bit and the same bytes on every link; auto picks
 * the same algorithm at the same time; and a packed schedule is smaller. */
static const int PK_MESH[4][4] = { { 8, 8, 1, 0 }, { 6, 8, 0, 6 }, { 12, 12, 1, 15 },
                                   { 16, 16, 1, 1 } };

static void pk_mesh(ftm_mesh *m, int i)
{
    ck_assert_int_eq(ftm_mesh_init(m, PK_MESH[i][0], PK_MESH[i][1], PK_MESH[i][2]), 0);
    if (i == 0) {
        ck_assert_int_eq(ftm_mesh_fail_host(m, 2, 2), 0);
        ck_assert_int_eq(ftm_mesh_fail_link(m, 6, 6, 6, 7, 1), 0);
    } else {
        ck_assert_int_eq(ftm_mesh_fail_random(m, PK_MESH[i][3], 7 + i), 0);
    }
}

static void pk_same_ops(const ftm_sched *u, const ftm_sched *p)
{
    ck_assert_int_eq(u->nroutes, p->nroutes);
    ck_assert_uint_eq(u->next_tag, p->next_tag);
    ck_assert_int_eq(u->max_step_ops, p->max_step_ops);
    ftm_sched_view v = { 0 };
    for (int c = 0; c < u->nchips; c++) {
        ck_assert_int_eq(u->prog[c].nsteps, p->prog[c].nsteps);
        ck_assert_int_eq(u->prog[c].nops, p->prog[c].nops);
        ftm_sched_cur cur = { 0 };
        for (int j = 0; j < u->prog[c].nsteps; j++) {
            test_assert(ftm_sched_read_step(p, c, &cur, &v) == 1, "chip %d step %d unread", c, j);
            const ftm_step *st = &u->prog[c].steps[j];
            test_assert(v.nops == st->nops && v.phase == st->phase && v.index == st->index,
                        "chip %d step %d: %d ops %s %d, want %d ops %s %d", c, j, v.nops,
                        v.phase, v.index, st->nops, st->phase, st->index);
            for (int k = 0; k < v.nops; k++) {
                const ftm_op *a = &u->prog[c].ops[st->first_op + k], *b = &v.ops[k];
                test_assert(a->off == b->off && a->len == b->len && a->peer == b->peer &&
                                a->route == b->route && a->tag == b->tag && a->kind == b->kind &&
                                a->red == b->red,
                            "chip %d step %d op %d differs", c, j, k);
            }
        }
        ck_assert_int_eq(ftm_sched_read_step(p, c, &cur, &v), 0);
    }
    ftm_sched_view_free(&v);
}

static void pk_same_model(const ftm_sched *u, const ftm_sched *p, const ftm_mesh *m)
{
    ftm_cost_params cp = params();
    ftm_cost_result ru, rp;
    size_t nl = (size_t)m->nchips * FTM_NDIRS;
    uint64_t *lu = malloc(sizeof(uint64_t) * nl), *lp = malloc(sizeof(uint64_t) * nl);
    ck_assert_int_eq(ftm_cost_sched(u, m, &cp, &ru, lu), 0);
    ck_assert_int_eq(ftm_cost_sched(p, m, &cp, &rp, lp), 0);
    ck_assert(memcmp(&ru.time_s, &rp.time_s, sizeof(double)) == 0);
    ck_assert_uint_eq(ru.max_link_bytes, rp.max_link_bytes);
    ck_assert_uint_eq(ru.total_link_bytes, rp.total_link_bytes);
    ck_assert(memcmp(lu, lp, sizeof(uint64_t) * nl) == 0);
    ftm_sched_link_bytes(p, m, lp);
    ck_assert(memcmp(lu, lp, sizeof(uint64_t) * nl) == 0);
    for (int c = 0; c < m->nchips; c++)
        test_assert(ftm_sched_chip_packets(u, c, 1000) == ftm_sched_chip_packets(p, c, 1000),
                    "chip %d: packets differ", c);
    free(lu);
    free(lp);
}

START_TEST(test_packed_same)
{
    if (quick_scale() && _i == 3) /* make check: not the biggest mesh */
        return;
    ftm_mesh m;
    pk_mesh(&m, _i);
    size_t counts[3] = { 5, 1000, 100003 };
    const ftm_sched_ctx packed = { .packed = 1 };
    /* make check: the crowded mesh at the largest count only */
    for (int k = small_scale() && _i == 2 ? 2 : 0; k < 3; k++)
        for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
            ftm_sched u, p, back;
            ck_assert_int_eq(a->build(&u, NULL, &m, counts[k], FTM_RED_SUM_F32), 0);
            ck_assert_int_eq(a->build(&p, &packed, &m, counts[k], FTM_RED_SUM_F32), 0);
            ck_assert(!u.packed && p.packed && p.prog[0].steps == NULL && p.prog[0].ops == NULL);
            pk_same_ops(&u, &p);
            pk_same_model(&u, &p, &m);
            ck_assert_int_eq(ftm_sched_unpack(&p, &back), 0);
            ck_assert(!back.packed);
            pk_same_ops(&back, &p);
            if (u.next_tag > 1000)
                ck_assert_uint_lt(2 * ftm_sched_mem_bytes(&p), ftm_sched_mem_bytes(&u));
            ftm_sched_free(&back);
            ftm_sched_free(&p);
            ftm_sched_free(&u);
        }
    ftm_cost_params cp = params();
    const char *nu = NULL, *np = NULL;
    ftm_cost_result ru, rp;
    ck_assert_int_eq(ftm_allreduce_auto(NULL, &m, 100003, FTM_RED_SUM_F32, &cp, &nu, &ru), 0);
    ck_assert_int_eq(ftm_allreduce_auto(&packed, &m, 100003, FTM_RED_SUM_F32, &cp, &np, &rp), 0);
    ck_assert_str_eq(nu, np);
    ck_assert(memcmp(&ru.time_s, &rp.time_s, sizeof(double)) == 0);
    ftm_mesh_free(&m);
}
END_TEST

/* The sequential executor runs a packed schedule (through its unpacked
 * copy) to the same bytes; the dry run counts a packed build exactly. */
START_TEST(test_packed_exec_and_dry)
{
    ftm_mesh m;
    pk_mesh(&m, 1);
    size_t count = 1001;
    float **b = malloc(sizeof(float *) * (size_t)m.nchips);
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
        for (int pk = 0; pk < 2; pk++) {
            for (int c = 0; c < m.nchips; c++) {
                b[c] = malloc(sizeof(float) * count);
                for (size_t i = 0; i < count; i++)
                    b[c][i] = (float)((c * 7 + (int)i) % 13);
            }
            const ftm_sched_ctx ctx = { .packed = pk };
            ftm_sched s;
            ck_assert_int_eq(a->build(&s, &ctx, &m, count, FTM_RED_SUM_F32), 0);
            size_t peak, sb;
            ck_assert_int_eq(ftm_allreduce_plan_mem(&ctx, a->name, &m, count, FTM_RED_SUM_F32,
                                                    &peak, &sb), 0);
            /* the 2-D fallback and the trees' tree counts keep the larger */
            if (strncmp(a->name, "2d", 2) != 0 && strcmp(a->name, "trees") != 0)
                ck_assert_uint_eq(sb, ftm_sched_mem_bytes(&s));
            else
                ck_assert_uint_ge(sb, ftm_sched_mem_bytes(&s));
            ck_assert_uint_ge(peak, ftm_sched_mem_bytes(&s) + ftm_cost_mem_bytes(&s, &m));
            ck_assert_int_eq(ftm_sched_exec_data(&s, &m, (void **)b), 0);
            if (pk) { /* chips read ops in place: a packed schedule is refused */
                ftm_allreduce_opts ao = { .algo = a->name, .count = count, .iters = 1,
                                          .sched = &s };
                ftm_allreduce_result res;
                ck_assert_int_eq(ftm_allreduce_run(&m, &ao, &res), FTM_EINVAL);
                ftm_allreduce_result_free(&res);
            }
            for (size_t i = 0; i < count; i++) {
                float want = 0;
                for (int c = 0; c < m.nchips; c++)
                    want += ftm_mesh_alive(&m, c) ? (float)((c * 7 + (int)i) % 13) : 0;
                for (int c = 0; c < m.nchips; c++)
                    test_assert(!ftm_mesh_alive(&m, c) || b[c][i] == want,
                                "%s packed %d: chip %d elem %zu: %g, want %g", a->name, pk, c, i,
                                b[c][i], want);
            }
            for (int c = 0; c < m.nchips; c++)
                free(b[c]);
            ftm_sched_free(&s);
        }
    }
    free(b);
    ftm_mesh_free(&m);
}
END_TEST

/* One build and its replay, as the CLI makes them, under a budget of
 * limit bytes: the build's (or the replay's) return, *peak the budget's
 * peak; with live0, *live0 whether the live bytes were back to 0 after
 * freeing (a charge of the whole limit fits only then; it moves the peak
 * to the limit). */
static int budget_build(ftm_allreduce_build_fn fn, int packed, const ftm_mesh *m, size_t count,
                        size_t limit, size_t *peak, int *live0)
{
    ftm_cost_params p = params();
    ftm_cost_result r;
    ftm_sched s;
    ftm_sched_meter meter = { .limit = limit };
    const ftm_sched_ctx ctx = { .packed = packed, .meter = &meter };
    int rc = fn(&s, &ctx, m, count, FTM_RED_SUM_F32);
    if (!rc) {
        rc = ftm_cost_sched(&s, m, &p, &r, NULL);
        ftm_sched_free(&s);
    }
    if (live0)
        *live0 = meter.live == 0;
    *peak = meter.peak;
    return rc;
}

/* Budgets (sched.h): a budget of the dry run's peak lets the build and its
 * replay through, a budget of half the schedule stops them with
 * FTM_ENOMEM, and either way every byte counted is given back when the
 * schedules are freed. The peak under a budget is the dry run's exactly
 * where the dry run makes the real build's calls: ring and bidir, and on
 * a 17x17 torus with a fault (no 2-D fallback) 2d, and 2d-concurrent
 * unpacked. Elsewhere it is at most the dry run's (and less, in these
 * cases but unpacked ones on the crowded mesh): a packed 2d-concurrent
 * merge reserves room that a dry run counts as used and a real one trims,
 * and on a crowded 12x12 torus the 2-D fallback replays only the schedule
 * it needs and skips replays its memos answer, where a dry run, knowing
 * no times, counts the larger schedule with its replay. _i: mesh * 2 +
 * packed. */
START_TEST(test_budget_build)
{
    static const char *const algos[] = { "ring", "bidir", "2d", "2d-concurrent" };
    int crowded = _i / 2, packed = _i % 2;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, crowded ? 12 : 17, crowded ? 12 : 17, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 3), 0);
    if (crowded)
        ck_assert_int_eq(ftm_mesh_fail_random(&m, 15, 5), 0);
    size_t count = 100000;
    const ftm_sched_ctx ctx = { .packed = packed };
    for (int k = 0; k < 4; k++) {
        const ftm_allreduce_algo *a = ftm_allreduce_find(algos[k]);
        size_t dry, sb, peak;
        int live0;
        ck_assert_int_eq(ftm_allreduce_plan_mem(&ctx, a->name, &m, count, FTM_RED_SUM_F32, &dry,
                                                &sb), 0);
        ck_assert_int_eq(budget_build(a->build, packed, &m, count, dry, &peak, NULL), 0);
        if (k < 2 || (!crowded && !(packed && k == 3)))
            ck_assert_uint_eq(peak, dry);
        else
            ck_assert_uint_le(peak, dry);
        ck_assert_int_eq(budget_build(a->build, packed, &m, count, dry, &peak, &live0), 0);
        ck_assert(live0);
        /* half of what the build keeps (on the crowded mesh the 2-D
         * fallbacks keep the ring and stop the 2-D build early, so that
         * is less than the dry run's schedule) */
        ftm_sched s;
        ck_assert_int_eq(a->build(&s, &ctx, &m, count, FTM_RED_SUM_F32), 0);
        size_t held = ftm_sched_mem_bytes(&s);
        ck_assert_uint_le(held, sb);
        ftm_sched_free(&s);
        ck_assert_int_eq(budget_build(a->build, packed, &m, count, held / 2, &peak, &live0),
                         FTM_ENOMEM);
        ck_assert(live0);
        /* the refused growth, past the limit by at most one array's
         * growth: it stopped before the schedule was all there */
        ck_assert_uint_gt(peak, held / 2);
        ck_assert_uint_lt(peak, held);
    }
    ftm_mesh_free(&m);
}
END_TEST

/* Each context counts on its own meter: a dry run made while a budgeted
 * schedule is held counts only its own schedules (the same peak as
 * alone), the budget's peak is the same with the dry run made meanwhile,
 * and a schedule counts its free on the meter it was built under; a
 * charge past the limit is refused (moving the peak to it), one on a
 * schedule without a meter always let through. */
START_TEST(test_budget_nesting)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 2, 3), 0);
    size_t dry, sb, dry_in, sb_in;
    ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, "ring", &m, 1000, FTM_RED_SUM_F32, &dry, &sb), 0);
    ftm_sched s;
    ftm_sched_meter alone = { .limit = dry }, in = { .limit = dry };
    ftm_sched_ctx ctx = { .meter = &alone };
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, &ctx, &m, 1000, FTM_RED_SUM_F32), 0);
    ftm_sched_free(&s);
    ck_assert_uint_ge(alone.peak, sb);
    ck_assert_uint_eq(alone.live, 0);
    ctx.meter = &in;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, &ctx, &m, 1000, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(ftm_allreduce_plan_mem(NULL, "ring", &m, 1000, FTM_RED_SUM_F32, &dry_in,
                                            &sb_in), 0);
    ck_assert_uint_eq(dry_in, dry);
    ck_assert_uint_eq(sb_in, sb);
    ck_assert_uint_eq(in.peak, alone.peak);
    ck_assert_uint_eq(in.live, ftm_sched_mem_bytes(&s));
    in.limit = in.live + 10;
    in.peak = in.live;
    ck_assert_int_eq(ftm_sched_charge(&s, 10), 0);
    ck_assert_int_eq(ftm_sched_charge(&s, 11), FTM_ENOMEM);
    ck_assert_uint_eq(in.peak, in.live + 11);
    ftm_sched_free(&s);
    ck_assert_uint_eq(in.live, 0);
    ck_assert_int_eq(ftm_sched_init(&s, NULL, "t", 2, 16), 0);
    ck_assert_int_eq(ftm_sched_charge(&s, (size_t)1 << 50), 0);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Total ops of s over its chips. */
static long total_ops(const ftm_sched *s)
{
    long n = 0;
    for (int c = 0; c < s->nchips; c++)
        n += s->prog[c].nops;
    return n;
}

/* A build context's cost parameters are what the builder's choices are
 * made for: _i 0, trees on an 8x8 torus with a dead host at 100 MB with
 * a 20 us hop cut the shares into fewer chunks (fewer, longer steps) than
 * for the defaults' 1 us, and that schedule models no slower under those
 * parameters; _i 1, the ring on a 2x4 torus at 32 MB with HBM at 90 GB/s
 * sums in more pieces (pieces.c: 2 for the defaults' 900 GB/s) and is
 * faster for it there. */
START_TEST(test_ctx_cost_chooses)
{
    ftm_mesh m;
    int trees = _i == 0;
    ck_assert_int_eq(ftm_mesh_init(&m, trees ? 8 : 2, trees ? 8 : 4, 1), 0);
    if (trees)
        ck_assert_int_eq(ftm_mesh_fail_host(&m, 2, 4), 0);
    size_t count = trees ? 25600000 : 8388608;
    ftm_cost_params p = params();
    if (trees)
        p.hop_s = 20e-6;
    else
        p.hbm_Bps = 90e9;
    const ftm_allreduce_algo *a = ftm_allreduce_find(trees ? "trees" : "ring");
    ftm_sched d, c;
    ftm_sched_ctx ctx = { .cost = &p };
    ck_assert_int_eq(a->build(&d, NULL, &m, count, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(a->build(&c, &ctx, &m, count, FTM_RED_SUM_F32), 0);
    if (trees)
        ck_assert_int_lt(total_ops(&c), total_ops(&d));
    else
        ck_assert_int_gt(total_ops(&c), total_ops(&d));
    ftm_cost_result rd, rc;
    ck_assert_int_eq(ftm_cost_sched(&d, &m, &p, &rd, NULL), 0);
    ck_assert_int_eq(ftm_cost_sched(&c, &m, &p, &rc, NULL), 0);
    if (trees)
        ck_assert_double_le(rc.time_s, rd.time_s);
    else
        ck_assert_double_lt(rc.time_s, rd.time_s);
    /* with the defaults given explicitly: the plain build */
    ftm_cost_params q = params();
    ftm_sched e;
    ctx.cost = &q;
    ck_assert_int_eq(a->build(&e, &ctx, &m, count, FTM_RED_SUM_F32), 0);
    ck_assert_int_eq(total_ops(&e), total_ops(&d));
    ftm_sched_free(&d);
    ftm_sched_free(&c);
    ftm_sched_free(&e);
    ftm_mesh_free(&m);
}
END_TEST


Suite *build_modes_suite(void);
Suite *build_modes_suite(void)
{
    Suite *su = suite_create("build_modes");
    TCase *tc = tcase_create("modes");
    tcase_add_loop_test(tc, test_auto_picks_fastest, 0, 2);
    tcase_add_loop_test(tc, test_packed_same, 0, 4);
    tcase_add_loop_test(tc, test_fallback_same, 0, 2);
    tcase_add_loop_test(tc, test_watch_bound, 0, 2);
    tcase_add_loop_test(tc, test_auto_bounded, 0, 2);
    tcase_add_test(tc, test_packed_exec_and_dry);
    tcase_add_loop_test(tc, test_dry_run_counts, 0, 3);
    tcase_add_loop_test(tc, test_budget_build, 0, 4);
    tcase_add_test(tc, test_budget_nesting);
    tcase_add_loop_test(tc, test_ctx_cost_chooses, 0, 2);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return test_run(build_modes_suite());
}
