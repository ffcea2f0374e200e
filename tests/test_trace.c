/* Trace: the events a real run records match its schedule op for op, and
 * the modeled timeline matches the cost model's replay of that schedule. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"
#include "ftmesh/timeline.h"
#include "ftmesh/trace.h"
#include "test_util.h"

typedef struct job {
    const ftm_sched *s;
    int64_t **bufs;
    int iters;
} job;

static int64_t input(int chip, size_t k) { return 1 + (int64_t)((chip + 2 * k) % 5); }

static int run_fn(ftm_chip *c, void *arg)
{
    job *j = arg;
    int id = ftm_chip_id(c);
    for (int it = 0; it < j->iters; it++) {
        for (size_t k = 0; k < j->s->bytes / 8; k++)
            j->bufs[id][k] = input(id, k);
        int rc = ftm_chip_exec(c, j->s, j->bufs[id]);
        if (rc)
            return rc;
    }
    return 0;
}

/* 4x4 mesh minus (1,1), algo, int64 buffers of count elements; runs iters
 * times with a recorder attached. */
typedef struct fixture {
    ftm_mesh m;
    ftm_sched s;
    ftm_trace *tr;
    int64_t *bufs[64];
    size_t count;
} fixture;

static void setup_run(fixture *f, const char *algo, int torus, size_t count, int iters,
                      size_t snap_limit)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(ftm_mesh_init(&f->m, 4, 4, torus), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&f->m, 1, 1), 0);
    f->count = count;
    ck_assert_int_eq(ftm_allreduce_find(algo)->build(&f->s, NULL, &f->m, count, FTM_RED_SUM_I64), 0);
    ck_assert_int_eq(ftm_trace_create(&f->tr, f->m.nchips, snap_limit), 0);
    for (int c = 0; c < f->m.nchips; c++)
        f->bufs[c] = calloc(count, sizeof(int64_t));
    ftm_rt *rt;
    ftm_rt_config cfg = { 64, 0, 10.0, 0 }; /* small packets: multi-packet transfers */
    ck_assert_int_eq(ftm_rt_create(&rt, &f->m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_set_trace(rt, f->tr), 0);
    job j = { &f->s, f->bufs, iters };
    ck_assert_int_eq(ftm_rt_run(rt, run_fn, &j), 0);
    ftm_rt_destroy(rt);
    ck_assert_int_eq(ftm_trace_error(f->tr), 0);
}

static void teardown_run(fixture *f)
{
    for (int c = 0; c < f->m.nchips; c++)
        free(f->bufs[c]);
    ftm_trace_destroy(f->tr);
    ftm_sched_free(&f->s);
    ftm_mesh_free(&f->m);
}

/* Every op of every chip's program has exactly one send/receive event with
 * the op's tag, peer, range and step, and nothing else is a send/receive. */
static void check_ops_one_for_one(const fixture *f, int iters)
{
    for (int c = 0; c < f->m.nchips; c++) {
        const ftm_chip_prog *pg = &f->s.prog[c];
        size_t n;
        const ftm_event *ev = ftm_trace_events(f->tr, c, &n);
        int nexec = 0, nstep = 0, nops = 0;
        for (size_t i = 0; i < n; i++) {
            const ftm_event *e = &ev[i];
            ck_assert_int_eq(e->chip, c);
            ck_assert(e->t1 >= e->t0);
            if (e->kind == FTM_EV_EXEC)
                nexec++;
            if (e->kind == FTM_EV_STEP) {
                ck_assert_int_eq(e->step, nstep % pg->nsteps);
                nstep++;
            }
            if (e->kind != FTM_EV_SEND && e->kind != FTM_EV_RECV)
                continue;
            nops++;
            ck_assert_int_ge(e->step, 0);
            ck_assert_int_lt(e->step, pg->nsteps);
            const ftm_step *st = &pg->steps[e->step];
            ck_assert_int_lt(e->op, st->nops);
            const ftm_op *op = &pg->ops[st->first_op + e->op];
            ck_assert_int_eq(e->kind == FTM_EV_SEND, op->kind == FTM_OP_SEND);
            ck_assert_uint_eq(e->tag, op->tag);
            ck_assert_int_eq(e->peer, op->peer);
            ck_assert_uint_eq(e->off, op->off);
            ck_assert_uint_eq(e->len, op->len);
        }
        ck_assert_int_eq(nexec, pg->nsteps ? iters : 0);
        ck_assert_int_eq(nstep, pg->nsteps * iters);
        ck_assert_int_eq(nops, pg->nops * iters);
    }
}

START_TEST(test_events_match_schedule)
{
    static const char *algos[] = { "ring", "bidir", "tree", "2d", "2d-concurrent" };
    fixture f;
    setup_run(&f, algos[_i], _i >= 3, 45, 1, 1024);
    check_ops_one_for_one(&f, 1);
    /* transit: each transfer's bytes are forwarded by the hops between */
    uint64_t fwd = 0, want = 0;
    for (int c = 0; c < f.m.nchips; c++) {
        size_t n;
        const ftm_event *ev = ftm_trace_events(f.tr, c, &n);
        for (size_t i = 0; i < n; i++)
            if (ev[i].kind == FTM_EV_FORWARD)
                fwd += ev[i].len;
        const ftm_chip_prog *pg = &f.s.prog[c];
        for (int k = 0; k < pg->nops; k++)
            if (pg->ops[k].kind == FTM_OP_SEND)
                want += pg->ops[k].len * (uint64_t)(f.s.routes[pg->ops[k].route].nhops - 1);
    }
    ck_assert_uint_eq(fwd, want);
    teardown_run(&f);
}
END_TEST

/* Snapshots: an execution starts from the inputs, its last step ends with
 * the exact sum, and each receive's range after a sum equals the range
 * before (the previous step's end) plus the values its send sent. */
START_TEST(test_snapshots)
{
    fixture f;
    setup_run(&f, "ring", 0, 15, 1, 1024);
    for (int c = 0; c < f.m.nchips; c++) {
        if (!ftm_mesh_alive(&f.m, c))
            continue;
        size_t n;
        const ftm_event *ev = ftm_trace_events(f.tr, c, &n);
        const int64_t *prev = NULL, *last = NULL;
        for (size_t i = 0; i < n; i++) {
            const int64_t *v = ftm_trace_snapshot(f.tr, &ev[i]);
            if (ev[i].kind == FTM_EV_EXEC) {
                ck_assert_ptr_nonnull(v);
                for (size_t k = 0; k < f.count; k++)
                    ck_assert_int_eq(v[k], input(c, k));
                last = v;
            } else if (ev[i].kind == FTM_EV_RECV && ev[i].red == FTM_RED_SUM_I64) {
                /* the matching send, on the peer, by tag */
                size_t pn;
                const ftm_event *pe = ftm_trace_events(f.tr, ev[i].peer, &pn);
                const int64_t *sent = NULL;
                for (size_t j = 0; j < pn; j++)
                    if (pe[j].kind == FTM_EV_SEND && pe[j].tag == ev[i].tag)
                        sent = ftm_trace_snapshot(f.tr, &pe[j]);
                ck_assert_ptr_nonnull(sent);
                for (size_t k = 0; k < ev[i].len / 8; k++)
                    ck_assert_int_eq(v[k], prev[ev[i].off / 8 + k] + sent[k]);
            } else if (ev[i].kind == FTM_EV_STEP) {
                /* recorded at the step's start, snapshot from its end */
                prev = last;
                last = v;
            }
        }
        ck_assert_ptr_nonnull(last);
        for (size_t k = 0; k < f.count; k++) {
            int64_t want = 0;
            for (int o = 0; o < f.m.nchips; o++)
                want += ftm_mesh_alive(&f.m, o) ? input(o, k) : 0;
            ck_assert_int_eq(last[k], want);
            ck_assert_int_eq(f.bufs[c][k], want);
        }
    }
    teardown_run(&f);
}
END_TEST

/* The modeled timeline spans the modeled time per execution exactly, and
 * its sends and receives are the schedule's transfers one for one, at the
 * replay's times. */
START_TEST(test_modeled_timeline)
{
    static const char *algos[] = { "ring", "bidir", "tree", "2d", "2d-concurrent" };
    const int iters = 1 + _i % 2;
    fixture f;
    setup_run(&f, algos[_i], _i >= 3, 4096, iters, 0);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_timing tm;
    ftm_cost_result res;
    ck_assert_int_eq(ftm_cost_sched_timed(&f.s, &f.m, &p, &res, NULL, &tm), 0);
    ck_assert(tm.time_s == res.time_s);
    ftm_timeline tl;
    ck_assert_int_eq(ftm_timeline_build(f.tr, FTM_CLOCK_MODELED, &p, &tl), 0);
    ck_assert_msg(tl.span_s == iters * res.time_s, "span %.17g vs %d x %.17g", tl.span_s,
                  iters, res.time_s);
    uint32_t nt = f.s.next_tag;
    int *nsend = calloc(nt, sizeof(int)), *nrecv = calloc(nt, sizeof(int));
    for (size_t i = 0; i < tl.n; i++) {
        const ftm_slice *sl = &tl.slice[i];
        const ftm_event *e = sl->ev;
        double o = (double)e->exec * res.time_s; /* executions end to end */
        ck_assert(e->kind != FTM_EV_WAIT && e->kind != FTM_EV_COMPUTE);
        if (e->kind == FTM_EV_SEND) {
            nsend[e->tag]++;
            ck_assert(sl->t0 == o + tm.xfer_start[e->tag]);
            ck_assert(sl->t1 == o + tm.xfer_end[e->tag]);
        } else if (e->kind == FTM_EV_RECV) {
            nrecv[e->tag]++;
            ck_assert(sl->t1 == o + tm.recv_end[e->tag]);
        } else if (e->kind == FTM_EV_STEP) {
            ck_assert(sl->t0 == o + tm.step_start[tm.step_first[e->chip] + e->step]);
            ck_assert(sl->t1 == o + tm.step_end[tm.step_first[e->chip] + e->step]);
        }
    }
    for (uint32_t t = 0; t < nt; t++) {
        ck_assert_int_eq(nsend[t], iters);
        ck_assert_int_eq(nrecv[t], iters);
    }
    free(nsend);
    free(nrecv);
    ftm_timeline_free(&tl);
    /* the wall timeline: every event, first at 0 */
    ck_assert_int_eq(ftm_timeline_build(f.tr, FTM_CLOCK_WALL, NULL, &tl), 0);
    size_t total = 0;
    double lo = 1e300;
    for (int c = 0; c < f.m.nchips; c++) {
        size_t n;
        ftm_trace_events(f.tr, c, &n);
        total += n;
    }
    ck_assert_uint_eq(tl.n, total);
    for (size_t i = 0; i < tl.n; i++)
        lo = tl.slice[i].t0 < lo ? tl.slice[i].t0 : lo;
    ck_assert(lo == 0.0);
    ftm_timeline_free(&tl);
    ftm_cost_timing_free(&tm);
    teardown_run(&f);
}
END_TEST

/* A chip dies mid-allreduce: its FAIL event is recorded, in a step. */
static int fail_fn(ftm_chip *c, void *arg)
{
    return run_fn(c, arg);
}

START_TEST(test_fail_event)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 900, FTM_RED_SUM_I64), 0);
    ftm_trace *tr;
    ck_assert_int_eq(ftm_trace_create(&tr, m.nchips, 0), 0);
    int64_t *bufs[9];
    for (int c = 0; c < 9; c++)
        bufs[c] = calloc(900, sizeof(int64_t));
    ftm_rt *rt;
    ftm_rt_config cfg = { 64, 0, 10.0, 0 };
    ck_assert_int_eq(ftm_rt_create(&rt, &m, &cfg), 0);
    ck_assert_int_eq(ftm_rt_set_trace(rt, tr), 0);
    ck_assert_int_eq(ftm_rt_kill_chip_after(rt, 4, 20), 0);
    job j = { &s, bufs, 1 };
    ck_assert_int_eq(ftm_rt_run(rt, fail_fn, &j), FTM_ECHIPDEAD);
    ftm_rt_destroy(rt);
    size_t n;
    const ftm_event *ev = ftm_trace_events(tr, 4, &n);
    int fails = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == FTM_EV_FAIL) {
            fails++;
            ck_assert_int_ge(ev[i].step, 0);
        }
    ck_assert_int_eq(fails, 1);
    /* on the modeled clock the cut allreduce ends where its last recorded
     * step or op ends, before the whole schedule's time */
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result res;
    ck_assert_int_eq(ftm_cost_sched(&s, &m, &p, &res, NULL), 0);
    ftm_timeline tl;
    ck_assert_int_eq(ftm_timeline_build(tr, FTM_CLOCK_MODELED, &p, &tl), 0);
    double exec_end = -1, last = 0;
    for (size_t i = 0; i < tl.n; i++) {
        if (tl.slice[i].ev->kind == FTM_EV_EXEC)
            exec_end = exec_end < 0 || tl.slice[i].t1 > exec_end ? tl.slice[i].t1 : exec_end;
        else
            last = tl.slice[i].t1 > last ? tl.slice[i].t1 : last;
    }
    ck_assert_msg(exec_end > 0 && exec_end == last && exec_end < res.time_s,
                  "the cut allreduce spans %g s; its last op ends at %g s, the whole at %g s",
                  exec_end, last, res.time_s);
    ftm_timeline_free(&tl);
    for (int c = 0; c < 9; c++)
        free(bufs[c]);
    ftm_trace_destroy(tr);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_events_match_schedule, 0, 5);
    tcase_add_test(tc, test_snapshots);
    tcase_add_loop_test(tc, test_modeled_timeline, 0, 5);
    tcase_add_test(tc, test_fail_event);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run(trace_suite());
}
