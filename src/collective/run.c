/* Running and verifying allreduces on the chip threads: the harness above
 * the runtime. A batch of allreduces (one or more schedules) runs in one
 * ftm_rt_run: chip threads start once per batch, not once per schedule. */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/runtime.h"
#include "ftmesh/trace.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "run_int.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input of element k on chip c: small integers in [-8, 8], so any sum
 * over <= 4096 chips is an integer below 2^24 in magnitude and every float
 * addition order gives the exact sum. */
static float input_of(int chip, size_t k)
{
    return (float)((int)(((size_t)chip * 31u + k * 7u + (k >> 10)) % 17u) - 8);
}

/* buf[k] = input_of(chip, k) for every k < count, without a
 * division per element: the residue mod 17 grows by 7 per element and by
 * one more every 1024 (the k >> 10 term). This fill ran before every
 * iteration and took half of a small allreduce command's CPU. */
static void fill_input(float *buf, int chip, size_t count)
{
    unsigned r = (unsigned)(((size_t)chip * 31u) % 17u);
    for (size_t k = 0; k < count; k++) {
        buf[k] = (float)((int)r - 8);
        r += (k & 1023u) == 1023u ? 8u : 7u;
        r = r >= 17u ? r - 17u : r;
    }
}

/* The exact sum of element k over the healthy chips of m: what every chip
 * must end with. */
static double expected_of(const ftm_mesh *m, size_t k)
{
    double s = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            s += input_of(c, k);
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
    const char *algo;      /* the algorithm built (o->algo or auto's pick) */
} ar_job;


typedef struct ar_batch {
    run_fault *rf;             /* fault script (one job), or NULL */
    const ftm_mesh *m;
    ftm_rt *rt;
    ar_job *jobs;
    int njobs;
    float **bufs;          /* [nchips] one buffer per healthy local chip, the largest count */
    int timer_chip;        /* the lowest healthy chip */
    int snap_chip;         /* the lowest healthy chip of this process (ftm_rt_is_local) */
} ar_batch;

/* The snapshot chip copies the cumulative link counters (of the links
 * its process sends on; the processes' copies are summed after the run).
 * Called between two barriers: every chip has finished the job (so every
 * packet of it has arrived) and none sends before it reaches the next. */
static void snapshot_links(const ar_batch *b, uint64_t *links)
{
    for (int c = 0; c < b->m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            links[c * FTM_NDIRS + d] = 0;
            if (ftm_mesh_link_live(b->m, c, d))
                ftm_rt_link_stats(b->rt, c, d, &links[c * FTM_NDIRS + d], NULL);
        }
}

/* The script's events of iteration it on this chip: at its start, and
 * armed for the allreduce (the middle: half of its packets, plus one). */
static int script_before(const ar_batch *b, const ar_job *j, ftm_chip *chip, int it)
{
    if (!b->rf)
        return 0;
    int rc = ftm_rt_script_fire(b->rf->f, chip, b->m, it, FTM_PHASE_START);
    size_t pkt = ftm_rt_pkt_bytes(ftm_chip_rt(chip));
    uint64_t mid = ftm_sched_chip_packets(j->s, ftm_chip_id(chip), pkt) / 2 + 1;
    return rc ? rc : ftm_rt_script_arm(b->rf->f, chip, b->m, it, mid);
}


static int run_job(ftm_chip *chip, const ar_batch *b, ar_job *j)
{
    int id = ftm_chip_id(chip);
    float *buf = b->bufs[id];
    size_t count = j->o->count;
    for (int it = 0; it < j->o->iters; it++) {
        if (b->rf && b->rf->f->until > 0 && it >= b->rf->f->until)
            return AR_REPAIR_STOP; /* every chip, at the same boundary */
        fill_input(buf, id, count);
        int rc = ftm_chip_barrier(chip);
        double t0 = core_now_s();
        if (!rc)
            rc = script_before(b, j, chip, it);
        if (!rc)
            rc = ftm_chip_exec(chip, j->s, buf);
        if (!rc && b->rf)
            rc = ftm_rt_script_after(b->rf->f, chip, b->m, it);
        if (!rc)
            rc = ftm_chip_barrier(chip);
        if (rc && b->rf) {
            int least = atomic_load(&b->rf->fail_it);
            while (it < least && !atomic_compare_exchange_weak(&b->rf->fail_it, &least, it))
                ;
        }
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
    if (id == b->snap_chip)
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
    free(res->events);
    res->events = NULL;
    res->nevents = 0;
    free(res->died);
    res->died = NULL;
    res->ndied = 0;
    if (res->have_mesh_after)
        ftm_mesh_free(&res->mesh_after);
    res->have_mesh_after = 0;
    free(res->stuck);
    res->stuck = NULL;
    res->nstuck = 0;
    free(res->runs);
    res->runs = NULL;
    res->nruns = 0;
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

/* The algorithm a schedule built for m is of: o->algo, or with repick
 * auto's pick for m (a fault changes the mesh, and with it the fastest). */
static int job_algo(const ftm_allreduce_opts *o, const ftm_sched_ctx *bc, const ftm_mesh *m,
                    const char **name)
{
    *name = o->algo;
    if (!o->repick)
        return 0;
    ftm_cost_params p;
    ftm_cost_result r;
    if (!o->cost)
        ftm_cost_defaults(&p);
    return ftm_allreduce_auto(bc, m, o->count, FTM_RED_SUM_F32, o->cost ? o->cost : &p, name, &r);
}

/* Builds (or borrows) job j's schedule and its expected sums. */
static int job_init(ar_job *j, const ftm_mesh *m, const ftm_allreduce_opts *o)
{
    memset(j, 0, sizeof *j);
    j->o = o;
    j->algo = o->algo;
    if (!ftm_allreduce_find(o->algo) || o->iters < 1 || o->count > FTM_SCHED_MAX_BYTES / sizeof(float))
        return FTM_EINVAL;
    j->s = o->sched;
    if (j->s && (j->s->nchips != m->nchips || j->s->bytes != o->count * sizeof(float) ||
                 j->s->dry || j->s->packed))
        return FTM_EINVAL; /* built for another mesh or count: the chips would
                            * write past their buffers */
    if (!j->s) {
        ftm_sched_ctx bc = { .cost = o->cost };
        int rc = job_algo(o, &bc, m, &j->algo);
        if (!rc)
            rc = ftm_allreduce_find(j->algo)->build(&j->own, &bc, m, o->count, FTM_RED_SUM_F32);
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
        by_j[q] = (float)expected_of(m, (size_t)q * 5); /* 7*5q mod 17 = q */
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
    b->timer_chip = b->snap_chip = -1;
    for (int c = 0; c < b->m->nchips; c++) {
        if (!ftm_mesh_alive(b->m, c))
            continue;
        if (b->timer_chip < 0)
            b->timer_chip = c;
        if (!ftm_rt_is_local(b->rt, c))
            continue; /* runs in another process */
        if (b->snap_chip < 0)
            b->snap_chip = c;
        if (!(b->bufs[c] = malloc(sizeof(float) * maxc)))
            return FTM_ENOMEM;
    }
    return 0;
}

/* Per-chip figures of a run spread over processes live where each chip
 * ran: every process gets their sums (times: the maximum). */
static int combine(ar_batch *b)
{
    size_t n = (size_t)b->m->nchips;
    int rc = 0;
    for (int i = 0; i < b->njobs && !rc; i++) {
        ar_job *j = &b->jobs[i];
        rc = ftm_rt_sum_u64(b->rt, j->wrong, n);
        if (!rc)
            rc = ftm_rt_sum_u64(b->rt, j->links, n * FTM_NDIRS);
        if (!rc)
            rc = ftm_rt_max_f64(b->rt, j->wall, (size_t)j->o->iters);
    }
    return rc;
}

/* After a successful run: job i's figures into res[i]. */
static int collect(ar_batch *b, ftm_allreduce_result *res)
{
    int rc = combine(b);
    for (int i = 0; i < b->njobs && !rc; i++) {
        const ar_job *j = &b->jobs[i];
        ftm_allreduce_result *r = &res[i];
        for (int c = 0; c < b->m->nchips; c++)
            r->wrong += j->wrong[c];
        rc = link_figures(b->m, j, i ? b->jobs[i - 1].links : NULL, r);
        int n = j->o->iters;
        qsort(j->wall, (size_t)n, sizeof *j->wall, core_cmp_double);
        r->wall_s = n % 2 ? j->wall[n / 2] : (j->wall[n / 2 - 1] + j->wall[n / 2]) / 2; /* median */
        r->wall_min_s = j->wall[0];
        r->wall_max_s = j->wall[n - 1];
    }
    return rc;
}

/* After a script's failure: the mesh left and the records (one job). */
static int note_failure(ar_batch *b, ftm_allreduce_result *res)
{
    run_fault *rf = b->rf;
    int cap = rf->f->script.n + 1 - res->nevents;
    int n = ftm_rt_script_recover(rf->f, b->rt, b->m, &rf->next, res->events + res->nevents, cap);
    if (n < 0)
        return n;
    rf->have_next = 1;
    rf->first = res->nevents;
    res->nevents += n;
    const ftm_allreduce_opts *o = b->jobs[0].o;
    if (rf->modeled0 == 0 && o->modeled_s)
        rf->modeled0 = o->modeled_s(o->modeled_ctx, b->jobs[0].s, b->m);
    return 0;
}

/* A run stopped for a repair: the links that died in it unnoticed join
 * the script's list of them (a notice would have failed the run, so
 * nothing else is learnt), so that a repair of one finds it dead and the
 * next runtime has it dead until then. */
static int learn_unnoticed(ar_batch *b)
{
    ftm_mesh same;
    int n = ftm_rt_script_recover(b->rf->f, b->rt, b->m, &same, NULL, 0);
    if (n < 0)
        return n;
    ftm_mesh_free(&same);
    return 0;
}

/* Runs the batch's jobs on rt. */
static int run_batch(ar_batch *b, ftm_allreduce_result *res)
{
    int rc = alloc_bufs(b);
    if (!rc && b->rf) {
        ftm_rt_script_rt(b->rf->f, b->rt);
        ftm_rt_script_attempt(b->rf->f, b->m);
        atomic_store(&b->rf->fail_it, INT_MAX);
    }
    for (int i = 0; i < b->njobs && !rc; i++)
        rc = ftm_rt_declare_sched(b->rt, b->jobs[i].s);
    if (!rc) {
        ftm_rt_reset_stats(b->rt);
        rc = ftm_rt_run(b->rt, chip_fn, b);
        int e = b->rf ? ftm_rt_script_sync(b->rf->f, b->rt) : 0;
        if (!e && b->rf) { /* the least over the processes (a no-op in one) */
            double least = -(double)atomic_load(&b->rf->fail_it);
            e = ftm_rt_max_f64(b->rt, &least, 1);
            atomic_store(&b->rf->fail_it, (int)-least);
        }
        rc = rc ? rc : e;
    }
    if (rc == FTM_ECHIPDEAD)
        res[0].died_chip = ftm_rt_died(b->rt);
    if ((rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD) && b->rf) {
        int e = note_failure(b, res);
        rc = e ? e : rc;
    }
    if (rc == AR_REPAIR_STOP && b->rf) {
        int e = learn_unnoticed(b);
        rc = e ? e : rc;
    }
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
 * from o[0]'s packet size and timeout). */
int run_set(const ftm_mesh *m, ftm_rt *rt, const ftm_allreduce_opts *o, int n,
            ftm_allreduce_result *res, run_fault *rf)
{
    for (int i = 0; i < n; i++) {
        /* a script's records are kept across its runs (rf: res is set) */
        ftm_fault_record *events = rf ? res[i].events : NULL;
        int nevents = rf ? res[i].nevents : 0, *died = rf ? res[i].died : NULL;
        int ndied = rf ? res[i].ndied : 0, nruns = rf ? res[i].nruns : 0;
        ftm_allreduce_ran *runs = rf ? res[i].runs : NULL;
        memset(&res[i], 0, sizeof res[i]);
        res[i].events = events;
        res[i].nevents = nevents;
        res[i].died = died;
        res[i].ndied = ndied;
        res[i].runs = runs;
        res[i].nruns = nruns;
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
    ar_batch b = { .rf = rf, .m = m, .rt = rt, .njobs = n };
    b.jobs = calloc((size_t)n, sizeof *b.jobs);
    if (!b.jobs)
        return FTM_ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        rc = job_init(&b.jobs[i], m, &o[i]);
        res[i].chips = ftm_mesh_healthy_count(m);
    }
    if (!rc && rf) {
        rf->algo = b.jobs[0].algo;
        rf->schedule = b.jobs[0].s->algo ? b.jobs[0].s->algo : b.jobs[0].algo;
        rf->fallback = b.jobs[0].s->fallback;
    }
    ftm_rt_config cfg = { o[0].pkt_bytes, 0, o[0].hang_timeout_s, o[0].packets_only };
    if (!rc && !rt)
        rc = ftm_rt_create(&b.rt, m, &cfg);
    if (!rc && !rt && o[0].trace)
        rc = ftm_rt_set_trace(b.rt, o[0].trace);
    if (!rc)
        rc = run_batch(&b, res);
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
        if (o[i].fail_during || o[i].faults)
            return FTM_EINVAL;
    return run_set(m, rt, o, n, res, NULL);
}

size_t ftm_allreduce_mem_estimate(const ftm_mesh *m, const ftm_allreduce_opts *o,
                                  const ftm_sched *sched)
{
    const ftm_sched *s = o->sched ? o->sched : sched;
    size_t n = (size_t)m->nchips, count = o->count ? o->count : 1;
    if (count > FTM_SCHED_MAX_BYTES / sizeof(float)) /* ftm_allreduce_run refuses it */
        return SIZE_MAX;
    size_t bufs = ((size_t)ftm_mesh_healthy_count(m) + 1) * count * sizeof(float);
    size_t recs = n * (sizeof(float *) + sizeof(size_t) + 2 * FTM_NDIRS * sizeof(uint64_t)) +
                  (size_t)(o->iters > 0 ? o->iters : 1) * sizeof(double);
    ftm_rt_config cfg = { o->pkt_bytes, 0, o->hang_timeout_s, o->packets_only };
    return bufs + recs + (s ? ftm_sched_mem_bytes(s) : 0) + ftm_rt_mem_estimate(m, &cfg, s);
}
