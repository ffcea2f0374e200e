/* Running and verifying an allreduce on the chip threads. */
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
#include "ftmesh/trace.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Small integers in [-8, 8]: any sum over <= 4096 chips is an integer below
 * 2^24 in magnitude, so every float addition order gives the exact sum. */
float ftm_allreduce_input(int chip, size_t k)
{
    return (float)((int)(((size_t)chip * 31u + k * 7u + (k >> 10)) % 17u) - 8);
}

double ftm_allreduce_expected(const ftm_mesh *m, size_t k)
{
    double s = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            s += ftm_allreduce_input(c, k);
    return s;
}

typedef struct run_ctx {
    const ftm_sched *s;
    float **bufs;
    const float *expect;   /* [count] */
    size_t count;
    int iters;
    double *wall;          /* [iters], written by the lowest healthy chip */
    int timer_chip;
    uint64_t *wrong;       /* [nchips] */
    int selftest;          /* see ftm_allreduce_opts.verify_selftest */
} run_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int chip_fn(ftm_chip *chip, void *arg)
{
    run_ctx *x = arg;
    int id = ftm_chip_id(chip);
    float *b = x->bufs[id];
    for (int it = 0; it < x->iters; it++) {
        for (size_t k = 0; k < x->count; k++)
            b[k] = ftm_allreduce_input(id, k);
        int rc = ftm_chip_barrier(chip);
        double t0 = now_s();
        if (!rc)
            rc = ftm_chip_exec(chip, x->s, b);
        if (!rc)
            rc = ftm_chip_barrier(chip);
        if (rc)
            return rc;
        if (id == x->timer_chip) {
            x->wall[it] = now_s() - t0;
            if (x->selftest && x->count)
                b[0] += 1.0f;
        }
        for (size_t k = 0; k < x->count; k++)
            x->wrong[id] += b[k] != x->expect[k];
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ftm_allreduce_result_free(ftm_allreduce_result *res)
{
    free(res->stuck);
    res->stuck = NULL;
    res->nstuck = 0;
}

/* Link bytes measured by the runtime vs the schedule's own count. */
static void link_figures(const ftm_mesh *m, const ftm_rt *rt, const ftm_sched *s, int iters,
                         ftm_allreduce_result *res)
{
    uint64_t *want = malloc(sizeof(uint64_t) * (size_t)m->nchips * FTM_NDIRS);
    res->links_match_sched = want != NULL;
    if (want)
        ftm_sched_link_bytes(s, m, want);
    for (int c = 0; c < m->nchips; c++) {
        for (int d = 0; d < FTM_NDIRS; d++) {
            uint64_t b = 0;
            if (ftm_mesh_link_live(m, c, d))
                ftm_rt_link_stats(rt, c, d, &b, NULL);
            b /= (uint64_t)iters;
            if (want && want[c * FTM_NDIRS + d] != b)
                res->links_match_sched = 0;
            if (b > res->max_link_bytes)
                res->max_link_bytes = b;
            res->total_link_bytes += b;
        }
    }
    free(want);
}

/* One attempt on schedule pre (NULL: build it); with fail >= 0, chip
 * `fail` dies during the first iteration. */
static int run_once(const ftm_mesh *m, const ftm_allreduce_opts *o, const ftm_sched *pre,
                    int fail, ftm_allreduce_result *res)
{
    memset(res, 0, sizeof *res);
    res->died_chip = -1;
    const ftm_allreduce_algo *algo = ftm_allreduce_find(o->algo);
    if (!algo || o->iters < 1)
        return FTM_EINVAL;
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    ftm_sched own;
    const ftm_sched *sp = pre;
    if (!sp) {
        rc = algo->build(&own, m, o->count, FTM_RED_SUM_F32);
        if (rc)
            return rc;
        sp = &own;
    }
    res->chips = ftm_mesh_healthy_count(m);
    run_ctx x = { sp, NULL, NULL, o->count, o->iters, NULL, -1, NULL, o->verify_selftest };
    x.bufs = calloc((size_t)m->nchips, sizeof *x.bufs);
    x.wall = calloc((size_t)o->iters, sizeof *x.wall);
    x.wrong = calloc((size_t)m->nchips, sizeof *x.wrong);
    float *expect = malloc(sizeof(float) * (o->count ? o->count : 1));
    x.expect = expect;
    rc = x.bufs && x.wall && x.wrong && expect ? 0 : FTM_ENOMEM;
    for (int c = 0; c < m->nchips && !rc; c++) {
        if (!ftm_mesh_alive(m, c))
            continue;
        if (x.timer_chip < 0)
            x.timer_chip = c;
        x.bufs[c] = malloc(sizeof(float) * (o->count ? o->count : 1));
        if (!x.bufs[c])
            rc = FTM_ENOMEM;
    }
    /* input(c, k) depends on k only through j = (7k + k/1024) mod 17, so
     * the expected sums take 17 sums over the chips, not count of them. */
    float by_j[17];
    for (int j = 0; j < 17; j++)
        by_j[j] = (float)ftm_allreduce_expected(m, (size_t)j * 5); /* 7*5j mod 17 = j */
    for (size_t k = 0; k < o->count && !rc; k++)
        expect[k] = by_j[(k * 7u + (k >> 10)) % 17u];
    ftm_rt *rt = NULL;
    ftm_rt_config cfg = { o->pkt_bytes, 0, o->hang_timeout_s };
    if (!rc)
        rc = ftm_rt_create(&rt, m, &cfg);
    if (!rc && o->trace)
        rc = ftm_rt_set_trace(rt, o->trace);
    if (!rc && fail >= 0) {
        uint64_t after = o->fail_after_pkts;
        if (!after) /* default: halfway through its part of the allreduce */
            after = ftm_sched_chip_packets(sp, fail, ftm_rt_pkt_bytes(rt)) / 2 + 1;
        rc = ftm_rt_fail_chip_after(rt, fail, after);
    }
    if (!rc)
        rc = ftm_rt_run(rt, chip_fn, &x);
    if (rc == FTM_ECHIPDEAD)
        res->died_chip = ftm_rt_died(rt);
    if (rc == FTM_EHANG) {
        res->stuck = malloc(sizeof(ftm_stuck) * (size_t)m->nchips);
        if (res->stuck)
            res->nstuck = ftm_rt_stuck(rt, res->stuck, m->nchips);
    }
    if (!rc) {
        for (int c = 0; c < m->nchips; c++)
            res->wrong += x.wrong[c];
        link_figures(m, rt, sp, o->iters, res);
        qsort(x.wall, (size_t)o->iters, sizeof *x.wall, cmp_double);
        res->wall_s = x.wall[o->iters / 2];
        res->wall_min_s = x.wall[0];
        res->wall_max_s = x.wall[o->iters - 1];
    }
    ftm_rt_destroy(rt);
    if (x.bufs)
        for (int c = 0; c < m->nchips; c++)
            free(x.bufs[c]);
    free(x.bufs);
    free(x.wall);
    free(x.wrong);
    free(expect);
    if (sp == &own)
        ftm_sched_free(&own);
    return rc;
}

/* Each survivor's RECOVER event: the rings are rebuilt from here. */
static void note_recovery(ftm_trace *tr, const ftm_mesh *m)
{
    double t = ftm_trace_now(tr);
    for (int c = 0; c < m->nchips; c++) {
        if (!ftm_mesh_alive(m, c))
            continue;
        ftm_event e = { .kind = FTM_EV_RECOVER, .dir = -1, .chip = c, .peer = -1, .sched = -1,
                        .step = -1, .op = -1, .t0 = t, .t1 = t, .name = "recovery: rings rebuilt" };
        ftm_trace_add(tr, &e);
    }
}

int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    memset(res, 0, sizeof *res);
    res->died_chip = -1;
    if (!o->fail_during)
        return run_once(m, o, o->sched, -1, res);
    if (o->fail_chip < 0 || o->fail_chip >= m->nchips || !ftm_mesh_alive(m, o->fail_chip))
        return FTM_EINVAL;
    int rc = run_once(m, o, o->sched, o->fail_chip, res);
    if (rc != FTM_ECHIPDEAD)
        return rc; /* it finished before the failure point, or broke otherwise */
    /* Recovery: the mesh without the dead chip, new rings, a new runtime,
     * and the allreduce again over the chips that are left. */
    int died = res->died_chip;
    ftm_mesh m2;
    rc = ftm_mesh_copy(&m2, m);
    if (rc)
        return rc;
    m2.chip_dead[died] = 1;
    ftm_allreduce_result_free(res);
    if (o->trace)
        note_recovery(o->trace, &m2);
    rc = run_once(&m2, o, NULL, -1, res); /* the mesh changed: new rings */
    res->died_chip = died;
    ftm_mesh_free(&m2);
    return rc;
}
