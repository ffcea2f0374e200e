/* Running and verifying allreduces on the chip threads: the harness above
 * the runtime. A batch of allreduces (one or more schedules) runs in one
 * ftm_rt_run: chip threads start once per batch, not once per schedule. */
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
#include "ftmesh/error.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

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

/* One allreduce of a batch. */
typedef struct ar_job {
    const ftm_allreduce_opts *o;
    const ftm_sched *s;    /* o->sched or own */
    ftm_sched own;
    int owned;
    float *expect;         /* [count] the exact sums */
    double *wall;          /* [iters], written by the timer chip */
    uint64_t *wrong;       /* [nchips] */
    uint64_t *links;       /* [nchips * 4] link byte counters after the job */
} ar_job;

typedef struct ar_batch {
    const ftm_mesh *m;
    ftm_rt *rt;
    ar_job *jobs;
    int njobs;
    float **bufs;          /* [nchips] one buffer per healthy chip, the largest count */
    int timer_chip;        /* the lowest healthy chip */
} ar_batch;

/* The timer chip copies the cumulative link counters. Called between two
 * barriers: every chip has finished the job (so every packet of it has
 * arrived) and none sends before the timer chip reaches the next one. */
static void snapshot_links(const ar_batch *b, uint64_t *links)
{
    for (int c = 0; c < b->m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            links[c * FTM_NDIRS + d] = 0;
            if (ftm_mesh_link_live(b->m, c, d))
                ftm_rt_link_stats(b->rt, c, d, &links[c * FTM_NDIRS + d], NULL);
        }
}

static int run_job(ftm_chip *chip, const ar_batch *b, ar_job *j)
{
    int id = ftm_chip_id(chip);
    float *buf = b->bufs[id];
    size_t count = j->o->count;
    for (int it = 0; it < j->o->iters; it++) {
        for (size_t k = 0; k < count; k++)
            buf[k] = ftm_allreduce_input(id, k);
        int rc = ftm_chip_barrier(chip);
        double t0 = core_now_s();
        if (!rc)
            rc = ftm_chip_exec(chip, j->s, buf);
        if (!rc)
            rc = ftm_chip_barrier(chip);
        if (rc)
            return rc;
        if (id == b->timer_chip) {
            j->wall[it] = core_now_s() - t0;
            if (j->o->verify_selftest && count)
                buf[0] += 1.0f;
        }
        for (size_t k = 0; k < count; k++)
            j->wrong[id] += buf[k] != j->expect[k];
    }
    if (id == b->timer_chip)
        snapshot_links(b, j->links);
    return 0;
}

static int chip_fn(ftm_chip *chip, void *arg)
{
    ar_batch *b = arg;
    for (int i = 0; i < b->njobs; i++) {
        int rc = run_job(chip, b, &b->jobs[i]);
        if (rc)
            return rc;
    }
    return 0;
}

void ftm_allreduce_result_free(ftm_allreduce_result *res)
{
    free(res->stuck);
    res->stuck = NULL;
    res->nstuck = 0;
}

/* Link bytes measured for job j (counters after it minus before it) vs the
 * schedule's own count. */
static int link_figures(const ftm_mesh *m, const ar_job *j, const uint64_t *before,
                        ftm_allreduce_result *res)
{
    uint64_t *want = malloc(sizeof(uint64_t) * (size_t)m->nchips * FTM_NDIRS);
    if (!want)
        return FTM_ENOMEM;
    ftm_sched_link_bytes(j->s, m, want);
    res->links_match_sched = 1;
    for (int l = 0; l < m->nchips * FTM_NDIRS; l++) {
        uint64_t b = (j->links[l] - (before ? before[l] : 0)) / (uint64_t)j->o->iters;
        if (want[l] != b)
            res->links_match_sched = 0;
        if (b > res->max_link_bytes)
            res->max_link_bytes = b;
        res->total_link_bytes += b;
    }
    free(want);
    return 0;
}

static void job_free(ar_job *j)
{
    if (j->owned)
        ftm_sched_free(&j->own);
    free(j->expect);
    free(j->wall);
    free(j->wrong);
    free(j->links);
}

/* Builds (or borrows) job j's schedule and its expected sums. */
static int job_init(ar_job *j, const ftm_mesh *m, const ftm_allreduce_opts *o)
{
    memset(j, 0, sizeof *j);
    j->o = o;
    const ftm_allreduce_algo *algo = ftm_allreduce_find(o->algo);
    if (!algo || o->iters < 1)
        return FTM_EINVAL;
    j->s = o->sched;
    if (!j->s) {
        int rc = algo->build(&j->own, m, o->count, FTM_RED_SUM_F32);
        if (rc)
            return rc;
        j->owned = 1;
        j->s = &j->own;
    }
    j->expect = malloc(sizeof(float) * (o->count ? o->count : 1));
    j->wall = calloc((size_t)o->iters, sizeof *j->wall);
    j->wrong = calloc((size_t)m->nchips, sizeof *j->wrong);
    j->links = calloc((size_t)m->nchips * FTM_NDIRS, sizeof *j->links);
    if (!j->expect || !j->wall || !j->wrong || !j->links)
        return FTM_ENOMEM;
    /* input(c, k) depends on k only through (7k + k/1024) mod 17, so the
     * expected sums take 17 sums over the chips, not count of them. */
    float by_j[17];
    for (int q = 0; q < 17; q++)
        by_j[q] = (float)ftm_allreduce_expected(m, (size_t)q * 5); /* 7*5q mod 17 = q */
    for (size_t k = 0; k < o->count; k++)
        j->expect[k] = by_j[(k * 7u + (k >> 10)) % 17u];
    return 0;
}

/* Per-chip buffers of the largest count of the batch. */
static int alloc_bufs(ar_batch *b)
{
    size_t maxc = 1;
    for (int i = 0; i < b->njobs; i++)
        if (b->jobs[i].o->count > maxc)
            maxc = b->jobs[i].o->count;
    b->bufs = calloc((size_t)b->m->nchips, sizeof *b->bufs);
    if (!b->bufs)
        return FTM_ENOMEM;
    b->timer_chip = -1;
    for (int c = 0; c < b->m->nchips; c++) {
        if (!ftm_mesh_alive(b->m, c))
            continue;
        if (b->timer_chip < 0)
            b->timer_chip = c;
        if (!(b->bufs[c] = malloc(sizeof(float) * maxc)))
            return FTM_ENOMEM;
    }
    return 0;
}

/* After a successful run: job i's figures into res[i]. */
static int collect(const ar_batch *b, ftm_allreduce_result *res)
{
    int rc = 0;
    for (int i = 0; i < b->njobs && !rc; i++) {
        const ar_job *j = &b->jobs[i];
        ftm_allreduce_result *r = &res[i];
        for (int c = 0; c < b->m->nchips; c++)
            r->wrong += j->wrong[c];
        rc = link_figures(b->m, j, i ? b->jobs[i - 1].links : NULL, r);
        int n = j->o->iters;
        qsort(j->wall, (size_t)n, sizeof *j->wall, core_cmp_double);
        r->wall_s = j->wall[n / 2];
        r->wall_min_s = j->wall[0];
        r->wall_max_s = j->wall[n - 1];
    }
    return rc;
}

/* Runs the batch's jobs on rt (chip fail >= 0 dies during the first job). */
static int run_batch(ar_batch *b, int fail, ftm_allreduce_result *res)
{
    int rc = alloc_bufs(b);
    if (!rc && fail >= 0) {
        uint64_t after = b->jobs[0].o->fail_after_pkts;
        if (!after) /* default: halfway through its part of the allreduce */
            after = ftm_sched_chip_packets(b->jobs[0].s, fail, ftm_rt_pkt_bytes(b->rt)) / 2 + 1;
        rc = ftm_rt_fail_chip_after(b->rt, fail, after);
    }
    if (!rc) {
        ftm_rt_reset_stats(b->rt);
        rc = ftm_rt_run(b->rt, chip_fn, b);
    }
    if (rc == FTM_ECHIPDEAD)
        res[0].died_chip = ftm_rt_died(b->rt);
    if (rc == FTM_EHANG) {
        res[0].stuck = malloc(sizeof(ftm_stuck) * (size_t)b->m->nchips);
        if (res[0].stuck)
            res[0].nstuck = ftm_rt_stuck(b->rt, res[0].stuck, b->m->nchips);
    }
    if (!rc)
        rc = collect(b, res);
    if (b->bufs)
        for (int c = 0; c < b->m->nchips; c++)
            free(b->bufs[c]);
    free(b->bufs);
    return rc;
}

/* n allreduces o[0..n) on m in one run of rt (NULL: a runtime made here
 * from o[0]'s packet size and timeout); chip fail >= 0 dies during the
 * first. */
static int run_set(const ftm_mesh *m, ftm_rt *rt, const ftm_allreduce_opts *o, int n, int fail,
                   ftm_allreduce_result *res)
{
    for (int i = 0; i < n; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].died_chip = -1;
    }
    for (int i = 0; i < n; i++)
        if (!ftm_allreduce_find(o[i].algo) || o[i].iters < 1)
            return FTM_EINVAL;
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    if (n < 1 || (rt && ftm_rt_mesh(rt)->nchips != m->nchips))
        return FTM_EINVAL;
    ar_batch b = { .m = m, .rt = rt, .njobs = n };
    b.jobs = calloc((size_t)n, sizeof *b.jobs);
    if (!b.jobs)
        return FTM_ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        rc = job_init(&b.jobs[i], m, &o[i]);
        res[i].chips = ftm_mesh_healthy_count(m);
    }
    ftm_rt_config cfg = { o[0].pkt_bytes, 0, o[0].hang_timeout_s };
    if (!rc && !rt)
        rc = ftm_rt_create(&b.rt, m, &cfg);
    if (!rc)
        rc = run_batch(&b, fail, res);
    if (b.rt != rt)
        ftm_rt_destroy(b.rt);
    for (int i = 0; i < n; i++)
        job_free(&b.jobs[i]);
    free(b.jobs);
    return rc;
}

int ftm_allreduce_run_batch(const ftm_mesh *m, ftm_rt *rt, const ftm_allreduce_opts *o, int n,
                            ftm_allreduce_result *res)
{
    for (int i = 0; i < n; i++)
        if (o[i].fail_during)
            return FTM_EINVAL;
    return run_set(m, rt, o, n, -1, res);
}

int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    if (!o->fail_during)
        return run_set(m, NULL, o, 1, -1, res);
    memset(res, 0, sizeof *res);
    res->died_chip = -1;
    if (o->fail_chip < 0 || o->fail_chip >= m->nchips || !ftm_mesh_alive(m, o->fail_chip))
        return FTM_EINVAL;
    int rc = run_set(m, NULL, o, 1, o->fail_chip, res);
    if (rc != FTM_ECHIPDEAD)
        return rc; /* it finished before the failure point, or broke otherwise */
    /* Recovery: the mesh without the dead chip, new rings, a new runtime,
     * and the allreduce again over the chips that are left. */
    int died = res->died_chip;
    ftm_mesh m2;
    rc = ftm_mesh_copy(&m2, m);
    if (rc)
        return rc;
    ftm_mesh_fail_chip_id(&m2, died);
    ftm_allreduce_result_free(res);
    ftm_allreduce_opts o2 = *o;
    o2.sched = NULL; /* the mesh changed: new rings */
    rc = run_set(&m2, NULL, &o2, 1, -1, res);
    res->died_chip = died;
    ftm_mesh_free(&m2);
    return rc;
}

size_t ftm_allreduce_mem_estimate(const ftm_mesh *m, const ftm_allreduce_opts *o,
                                  const ftm_sched *sched)
{
    const ftm_sched *s = o->sched ? o->sched : sched;
    size_t n = (size_t)m->nchips, count = o->count ? o->count : 1;
    size_t bufs = ((size_t)ftm_mesh_healthy_count(m) + 1) * count * sizeof(float);
    size_t recs = n * (sizeof(float *) + sizeof(size_t) + 2 * FTM_NDIRS * sizeof(uint64_t)) +
                  (size_t)(o->iters > 0 ? o->iters : 1) * sizeof(double);
    ftm_rt_config cfg = { o->pkt_bytes, 0, o->hang_timeout_s };
    return bufs + recs + (s ? ftm_sched_mem_bytes(s) : 0) + ftm_rt_mem_estimate(m, &cfg, s);
}
