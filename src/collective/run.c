/* Running and verifying an allreduce on the chip threads. */
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
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

/* A script's recovery between runs. */
typedef struct run_fault {
    ftm_rt_script *f;
    ftm_mesh next;             /* after a failure: the mesh left */
    int have_next;
    int first;                 /* that failure's records: events[first..] */
    double modeled0;           /* modeled allreduce of the failed run */
} run_fault;

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
    ftm_rt_script *f;      /* fault script, or NULL */
    const ftm_mesh *m;
} run_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The script's events of iteration it on this chip: at its start, and
 * armed for the allreduce (the middle: half of its packets, plus one). */
static int script_before(run_ctx *x, ftm_chip *chip, int it)
{
    if (!x->f)
        return 0;
    int rc = ftm_rt_script_fire(x->f, chip, x->m, it, FTM_PHASE_START);
    size_t pkt = ftm_rt_pkt_bytes(ftm_chip_rt(chip));
    uint64_t mid = ftm_sched_chip_packets(x->s, ftm_chip_id(chip), pkt) / 2 + 1;
    return rc ? rc : ftm_rt_script_arm(x->f, chip, x->m, it, mid);
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
            rc = script_before(x, chip, it);
        if (!rc)
            rc = ftm_chip_exec(chip, x->s, b);
        if (!rc && x->f)
            rc = ftm_rt_script_after(x->f, chip, x->m, it);
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
    free(res->events);
    res->events = NULL;
    res->nevents = 0;
    if (res->have_mesh_after)
        ftm_mesh_free(&res->mesh_after);
    res->have_mesh_after = 0;
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
                    int fail, ftm_allreduce_result *res, run_fault *rf)
{
    ftm_fault_record *events = res->events;
    int nevents = res->nevents;
    char detail[sizeof res->detail];
    memcpy(detail, res->detail, sizeof detail);
    memset(res, 0, sizeof *res);
    res->events = events;
    res->nevents = nevents;
    memcpy(res->detail, detail, sizeof detail);
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
    run_ctx x = { sp, NULL, NULL, o->count, o->iters, NULL, -1, NULL, o->verify_selftest,
                  rf ? rf->f : NULL, m };
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
    if (!rc && fail >= 0) {
        uint64_t after = o->fail_after_pkts;
        if (!after) /* default: halfway through its part of the allreduce */
            after = ftm_sched_chip_packets(sp, fail, ftm_rt_pkt_bytes(rt)) / 2 + 1;
        rc = ftm_rt_fail_chip_after(rt, fail, after);
    }
    if (!rc && rf) {
        ftm_rt_script_rt(rf->f, rt);
        ftm_rt_script_attempt(rf->f, m);
    }
    if (!rc)
        rc = ftm_rt_run(rt, chip_fn, &x);
    if (rc == FTM_ECHIPDEAD)
        res->died_chip = ftm_rt_died(rt);
    if ((rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD) && rf) {
        int cap = rf->f->script.n + 1 - res->nevents;
        int n = ftm_rt_script_recover(rf->f, rt, m, &rf->next, res->events + res->nevents, cap);
        if (n < 0) {
            rc = n;
        } else {
            rf->have_next = 1;
            rf->first = res->nevents;
            res->nevents += n;
            if (rf->modeled0 == 0 && o->modeled_s)
                rf->modeled0 = o->modeled_s(o->modeled_ctx, sp, m);
        }
    }
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

/* The figures of one failure's records, once the next run is built. */
static void finish_records(ftm_allreduce_result *res, const ftm_allreduce_opts *o, run_fault *rf,
                           const ftm_mesh *next, double t0)
{
    double after = o->modeled_s ? o->modeled_s(o->modeled_ctx, NULL, next) : 0;
    for (int i = rf->first; i < res->nevents; i++) {
        ftm_fault_record *e = &res->events[i];
        e->resumed = 0;
        e->chips_after = ftm_mesh_healthy_count(next);
        e->lost_wall_s = i == rf->first ? now_s() - t0 : 0;
        e->lost_modeled_s = i == rf->first ? rf->modeled0 * (e->when + 1) : 0;
        e->modeled_before_s = rf->modeled0;
        e->modeled_after_s = after;
    }
    rf->modeled0 = 0;
}

/* Runs until one run ends without a failure; each failure's recovery
 * gives the next run its mesh. */
static int run_script(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    ftm_rt_script f;
    run_fault rf = { &f, { 0 }, 0, 0, 0 };
    ftm_mesh cur;
    int rc = ftm_rt_script_init(&f, o->faults, m);
    if (!rc && !(res->events = calloc((size_t)f.script.n + 1, sizeof *res->events)))
        rc = FTM_ENOMEM;
    if (!rc)
        rc = ftm_fault_script_check(&f.script, m, o->iters, NULL, res->detail, sizeof res->detail);
    if (!rc)
        rc = ftm_mesh_copy(&cur, m);
    if (rc) {
        ftm_rt_script_free(&f);
        return rc;
    }
    const ftm_sched *pre = o->sched;
    int died = -1;
    for (int k = 0;; k++) {
        double t0 = now_s();
        rc = run_once(&cur, o, pre, -1, res, &rf);
        died = died < 0 ? res->died_chip : died;
        if ((rc != FTM_ECHIPDEAD && rc != FTM_ELINKDEAD) || !rf.have_next || k > f.script.n)
            break;
        finish_records(res, o, &rf, &rf.next, t0);
        ftm_mesh_free(&cur);
        cur = rf.next;
        rf.have_next = 0;
        pre = NULL; /* the mesh changed: new rings */
        free(res->stuck);
        res->stuck = NULL;
        res->nstuck = 0;
    }
    if (rf.have_next)
        ftm_mesh_free(&rf.next);
    if (!rc)
        res->nevents += ftm_rt_script_unnoticed(&f, res->events + res->nevents,
                                                f.script.n + 1 - res->nevents);
    res->died_chip = died;
    if (!rc && res->nevents) { /* the mesh the figures are from */
        res->mesh_after = cur;
        res->have_mesh_after = 1;
    } else {
        ftm_mesh_free(&cur);
    }
    ftm_rt_script_free(&f);
    return rc;
}

int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    memset(res, 0, sizeof *res);
    res->died_chip = -1;
    if (!o->fail_during)
        return o->faults ? run_script(m, o, res) : run_once(m, o, o->sched, -1, res, NULL);
    if (o->fail_chip < 0 || o->fail_chip >= m->nchips || !ftm_mesh_alive(m, o->fail_chip))
        return FTM_EINVAL;
    int rc = run_once(m, o, o->sched, o->fail_chip, res, NULL);
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
    rc = run_once(&m2, o, NULL, -1, res, NULL); /* the mesh changed: new rings */
    res->died_chip = died;
    ftm_mesh_free(&m2);
    return rc;
}
