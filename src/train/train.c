/* Data-parallel training on the chip threads (see include/ftmesh/train.h).
 *
 * Per step, on every healthy chip:
 *
 *   zero grads -> forward/backward of [first, first+count)  --BN hook-->  tree
 *              -> gradient allreduce (f32, or i64 fixed point in exact mode)
 *              -> (exact: fixed point -> float) -> optimizer step
 *              -> loss (an exact sum, xsum.h) and math time into
 *                 slot[step & 1][chip] -> barrier
 *   lowest chip: adds the slot's exact loss sums (any order gives the same
 *                bits, so the logged loss does not depend on the mesh, the
 *                faults or the algorithm), reports the step.
 *
 * The per-step slots alternate between two rows: a chip can only write row
 * (s+2)&1 after passing the barrier of step s+1, which the lowest chip
 * reaches after it has read row s&1. So no chip overwrites a value the
 * reporter has not read yet, without a second barrier.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "train_int.h"

double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts))
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double train_thread_cpu(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }
double train_process_cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

void ftm_train_opts_default(ftm_train_opts *o, int model_kind)
{
    memset(o, 0, sizeof *o);
    ftm_model_config_default(&o->model, model_kind);
    ftm_optim_config_default(&o->optim, model_kind);
    o->algo = "ring";
    o->bn_algo = "tree";
    o->steps = 10;
    o->batch = 32;
    o->micro = 4;
}

static long gcd_l(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int ftm_train_split(long batch, int micro, int exact, int parts, long *first,
                    long *count, int *micro_used)
{
    if (batch < 1 || micro < 1 || parts < 1)
        return FTM_EINVAL;
    long units = exact ? (batch + micro - 1) / micro : batch;
    long g = micro;
    for (int i = 0; i < parts; i++) {
        size_t f, n;
        ftm_sched_block((size_t)units, parts, i, &f, &n);
        long lo = exact ? (long)f * micro : (long)f;
        long hi = exact ? (long)(f + n) * micro : (long)(f + n);
        if (hi > batch)
            hi = batch;
        if (lo > batch)
            lo = batch;
        first[i] = lo;
        count[i] = hi - lo;
        if (count[i] > 0)
            g = gcd_l(g, lo);
    }
    *micro_used = exact ? micro : (int)g;
    return 0;
}

/* ---- the batch-norm hook: cached int64 allreduce schedules ---------------- */

#define HOOK_MAX 16
typedef struct hook_cache {
    pthread_mutex_t mu;
    const ftm_mesh *m;
    const char *name, *used;
    int n, err;
    struct { size_t count; ftm_sched s; double modeled; } e[HOOK_MAX];
} hook_cache;

typedef struct trainer trainer;

typedef struct chip_st {
    trainer *t;
    ftm_chip *chip;
    int id;
    ftm_model *m;
    ftm_optim *o;
    int64_t *gi;               /* exact mode: nparams */
    int64_t lossx[FTM_XSUM_WORDS]; /* the step's loss, an exact sum */
    long first, count;
    double hook_cpu, hook_cpu_step, hook_modeled_step;
    int hook_calls_step;
    double math_cpu, grad_cpu, optim_cpu;
    long done;                 /* steps completed (optimizer applied) */
    long diverged;             /* 1 + the step whose forward/backward could
                                  not stay in range (0: none) */
} chip_st;

struct trainer {
    const ftm_train_opts *o;
    const ftm_train_callbacks *cb;
    ftm_train_result *res;
    const ftm_mesh *m;
    long start;                /* first step of this attempt */
    int lead, micro;
    chip_st *cs;               /* [nchips], dead chips unused */
    ftm_sched grad;
    double grad_modeled;
    hook_cache hc;
    int64_t *slot_loss[2];     /* [nchips * FTM_XSUM_WORDS]: exact loss sums */
    double *slot_math[2];      /* [nchips] */
    double t_prev, cpu0;
    ftm_model *tf;             /* float --check: one-chip model at the mesh's
                                  parameters, run by the lowest chip */
    double tf_loss;
};

static int hook_sched(hook_cache *h, size_t count, const ftm_sched **s, double *modeled)
{
    /* Chips may wait on this lock while one builds a schedule: safe, since
     * building sends nothing, so no chip needs another's forwarding now. */
    pthread_mutex_lock(&h->mu);
    int rc = 0, i;
    for (i = 0; i < h->n && h->e[i].count != count; i++)
        ;
    if (i == h->n) { /* first call with this size: build (any chip may) */
        if (h->n == HOOK_MAX) /* more distinct BN widths than any model here has */
            rc = FTM_ENOTSUP;
        else if (!(rc = train_build(&h->e[i].s, h->m, h->name, count, FTM_RED_SUM_I64,
                                    &h->e[i].modeled, &h->used))) {
            h->e[i].count = count;
            h->n++;
        }
    }
    if (!rc) {
        *s = &h->e[i].s;
        *modeled = h->e[i].modeled;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static int bn_hook(void *ctx, int64_t *buf, size_t n)
{
    chip_st *c = ctx;
    double c0 = train_thread_cpu(), modeled = 0;
    const ftm_sched *s;
    int rc = hook_sched(&c->t->hc, n, &s, &modeled);
    if (!rc)
        rc = ftm_chip_exec(c->chip, s, buf);
    c->hook_cpu_step += train_thread_cpu() - c0;
    c->hook_modeled_step += modeled;
    c->hook_calls_step++;
    return rc;
}

/* Float --check, on the lowest chip: the one-chip gradient at the
 * parameters p the step started from, compared tensor by tensor with the
 * summed gradient g the mesh is about to apply. */
static int tf_check(trainer *t, const float *p, const float *g, long s)
{
    ftm_model *r = t->tf;
    size_t np = ftm_model_nparams(r);
    float *rg = ftm_model_grads(r);
    memcpy(ftm_model_params(r), p, sizeof(float) * np);
    memset(rg, 0, sizeof(float) * np);
    ftm_fb_args a = {.step = (uint64_t)s, .first = 0, .count = t->o->batch,
                     .global_batch = t->o->batch, .micro = t->micro};
    int rc = ftm_model_forward_backward(r, &a, &t->tf_loss);
    for (int k = 0; k < ftm_model_ntensors(r) && !rc; k++) {
        const ftm_tensor_info *ti = ftm_model_tensor(r, k);
        double scale = 0, err = 0;
        for (size_t i = ti->offset; i < ti->offset + ti->count; i++) {
            scale = fmax(scale, fabs(rg[i]));
            double e = fabs((double)g[i] - rg[i]);
            err = e > err || isnan(e) ? e : err;
        }
        double rel = err == 0 ? 0 : scale > 0 ? err / scale : INFINITY;
        if (!(rel <= t->res->max_grad_rel_diff)) {
            t->res->max_grad_rel_diff = rel;
            t->res->grad_diff_step = s;
            strncpy(t->res->grad_diff_name, ti->name, sizeof t->res->grad_diff_name - 1);
        }
    }
    return rc;
}

/* The lowest healthy chip, after the end-of-step barrier. */
static int report_step(trainer *t, chip_st *c, long s)
{
    int row = (int)(s & 1);
    ftm_train_step *st = &t->res->step[s];
    double now = train_now(), msum = 0, mmax = 0;
    int64_t lx[FTM_XSUM_WORDS] = {0};
    for (int k = 0; k < t->m->nchips; k++) {
        if (!ftm_mesh_alive(t->m, k))
            continue;
        /* exact: the same bits for any mesh, split or order; a word cannot
         * overflow (one term per micro-batch of the batch) */
        (void)ftm_xsum_merge(lx, t->slot_loss[row] + (size_t)k * FTM_XSUM_WORDS);
        msum += t->slot_math[row][k];
        if (t->slot_math[row][k] > mmax)
            mmax = t->slot_math[row][k];
    }
    double loss = ftm_xsum_value(lx);
    st->step = s;
    st->loss = loss;
    st->wall_s = now - t->t_prev;
    st->modeled_allreduce_s = t->grad_modeled + c->hook_modeled_step;
    st->math_cpu_s = msum;
    st->math_max_cpu_s = mmax;
    t->res->modeled_bn_s = c->hook_modeled_step;
    t->res->bn_calls = c->hook_calls_step;
    /* A non-finite loss: report the step, then stop (FTM_EDIVERGED). */
    int diverged = !isfinite(loss);
    if (diverged && t->res->diverged_step < 0)
        t->res->diverged_step = s;
    if (t->tf && !diverged) {
        double d = fabs(loss - t->tf_loss) / fmax(fabs(t->tf_loss), 1e-300);
        if (!(d <= t->res->max_step_loss_rel_diff))
            t->res->max_step_loss_rel_diff = d;
    }
    if (t->cb && t->cb->step)
        t->cb->step(t->cb->ctx, st);
    t->t_prev = now;
    return diverged ? FTM_EDIVERGED : 0;
}

/* Injected failure: half of the chip's packets of the gradient allreduce. */
static uint64_t fail_point(const trainer *t, ftm_chip *chip)
{
    size_t pkt = ftm_rt_pkt_bytes(ftm_chip_rt(chip));
    return ftm_sched_chip_packets(&t->grad, ftm_chip_id(chip), pkt) / 2 + 1;
}

static int chip_fn(ftm_chip *chip, void *arg)
{
    trainer *t = arg;
    int id = ftm_chip_id(chip);
    chip_st *c = &t->cs[id];
    const ftm_train_opts *o = t->o;
    size_t np = ftm_model_nparams(c->m);
    float *g = ftm_model_grads(c->m), *p = ftm_model_params(c->m);
    c->chip = chip;
    int rc = ftm_chip_barrier(chip);
    if (id == t->lead) {
        t->t_prev = train_now();
        t->cpu0 = train_process_cpu();
    }
    for (long s = t->start; s < o->steps && !rc; s++) {
        memset(g, 0, sizeof(float) * np);
        if (o->exact)
            memset(c->gi, 0, sizeof(int64_t) * np);
        c->hook_cpu_step = c->hook_modeled_step = 0;
        c->hook_calls_step = 0;
        /* a chip without examples still makes its hook calls; first = 0
         * keeps the model's alignment rule satisfied */
        ftm_fb_args a = {.step = (uint64_t)s, .first = c->count ? c->first : 0,
                         .count = c->count, .global_batch = o->batch, .micro = t->micro,
                         .exact = o->exact, .grads_i64 = c->gi, .hook = bn_hook,
                         .hook_ctx = c, .loss_x = c->lossx};
        memset(c->lossx, 0, sizeof c->lossx);
        double loss = 0, c0 = train_thread_cpu();
        rc = ftm_model_forward_backward(c->m, &a, &loss);
        double math = train_thread_cpu() - c0 - c->hook_cpu_step;
        c->math_cpu += math;
        c->hook_cpu += c->hook_cpu_step;
        if (rc == FTM_ERANGE) {
            /* values the fixed-point sums cannot hold: the loss diverged */
            c->diverged = s + 1;
            rc = FTM_EDIVERGED;
        }
        if (rc)
            break;
        c0 = train_thread_cpu();
        if (o->fail_during && id == o->fail_chip && s == o->fail_step &&
            (rc = ftm_chip_fail_after(chip, fail_point(t, chip))))
            break;
        if (o->exact) {
            if ((rc = ftm_chip_exec(chip, &t->grad, c->gi)))
                break;
            ftm_fix_to_float(g, c->gi, np);
        } else if ((rc = ftm_chip_exec(chip, &t->grad, g))) {
            break;
        }
        double c1 = train_thread_cpu();
        c->grad_cpu += c1 - c0;
        if (t->tf && id == t->lead) {
            if ((rc = tf_check(t, p, g, s)))
                break;
            double c2 = train_thread_cpu();
            t->res->check_cpu_s += c2 - c1;
            c1 = c2;
        }
        if ((rc = ftm_optim_step(c->o, p, g, ftm_model_tensor(c->m, 0),
                                 ftm_model_ntensors(c->m), (uint64_t)s)))
            break;
        c->optim_cpu += train_thread_cpu() - c1;
        c->done = s + 1;
        memcpy(t->slot_loss[s & 1] + (size_t)id * FTM_XSUM_WORDS, c->lossx, sizeof c->lossx);
        t->slot_math[s & 1][id] = math;
        if ((rc = ftm_chip_barrier(chip)))
            break;
        if (id == t->lead)
            rc = report_step(t, c, s);
    }
    if (!rc && id == t->lead)
        t->res->cpu_s = train_process_cpu() - t->cpu0;
    return rc;
}

/* ---- setup, run, compare replicas ------------------------------------------ */

static int setup(trainer *t, const ftm_mesh *m, const ftm_train_opts *o)
{
    ftm_train_result *res = t->res;
    int P = res->chips, rc;
    long *first = calloc((size_t)P, sizeof(long)), *count = calloc((size_t)P, sizeof(long));
    t->cs = calloc((size_t)m->nchips, sizeof(chip_st));
    for (int r = 0; r < 2; r++) {
        t->slot_loss[r] = calloc((size_t)m->nchips * FTM_XSUM_WORDS, sizeof(int64_t));
        t->slot_math[r] = calloc((size_t)m->nchips, sizeof(double));
    }
    if (!res->step) /* a recovery keeps the steps done before the failure */
        res->step = calloc((size_t)o->steps, sizeof(ftm_train_step));
    if (!first || !count || !t->cs || !t->slot_loss[0] || !t->slot_loss[1] ||
        !t->slot_math[0] || !t->slot_math[1] || !res->step)
        rc = FTM_ENOMEM;
    else
        rc = ftm_train_split(o->batch, o->micro, o->exact, P, first, count, &t->micro);
    long maxc = 1;
    for (int i = 0; i < P && !rc; i++)
        maxc = count[i] > maxc ? count[i] : maxc;
    ftm_model_config mc = o->model;
    mc.max_batch = (int)maxc;
    ftm_optim_config oc = o->optim;
    if (!oc.kind)
        ftm_optim_config_default(&oc, mc.kind);
    for (int id = 0, i = 0; id < m->nchips && !rc; id++) {
        if (!ftm_mesh_alive(m, id))
            continue;
        chip_st *c = &t->cs[id];
        c->t = t;
        c->id = id;
        c->first = first[i];
        c->count = count[i++];
        if ((rc = ftm_model_create(&c->m, &mc)))
            break;
        if ((rc = ftm_optim_create(&c->o, &oc, ftm_model_nparams(c->m))))
            break;
        if (o->exact && !(c->gi = malloc(sizeof(int64_t) * ftm_model_nparams(c->m))))
            rc = FTM_ENOMEM;
    }
    free(first);
    free(count);
    if (!rc && o->check && !o->exact) {
        mc.max_batch = (int)o->batch;
        rc = ftm_model_create(&t->tf, &mc);
    }
    if (rc)
        return rc;
    res->nparams = ftm_model_nparams(t->cs[t->lead].m);
    res->micro = t->micro;
    return train_build(&t->grad, m, o->algo ? o->algo : "ring", res->nparams,
                       o->exact ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32, &t->grad_modeled,
                       &res->algo);
}

static void compare_replicas(trainer *t)
{
    ftm_train_result *res = t->res;
    const float *ref = ftm_model_params(t->cs[t->lead].m);
    res->replicas_equal = 1;
    res->replica_mismatch_chip = -1;
    for (int id = 0; id < t->m->nchips; id++) {
        if (!ftm_mesh_alive(t->m, id))
            continue;
        ftm_gemm_stats_add(&res->gemm, ftm_model_gemm_stats(t->cs[id].m));
        res->math_cpu_s += t->cs[id].math_cpu;
        res->hook_cpu_s += t->cs[id].hook_cpu;
        res->grad_cpu_s += t->cs[id].grad_cpu;
        res->optim_cpu_s += t->cs[id].optim_cpu;
        if (res->replicas_equal &&
            memcmp(ftm_model_params(t->cs[id].m), ref, sizeof(float) * res->nparams)) {
            res->replicas_equal = 0;
            res->replica_mismatch_chip = id;
        }
    }
}

static void teardown(trainer *t)
{
    if (t->cs)
        for (int id = 0; id < t->m->nchips; id++) {
            ftm_model_destroy(t->cs[id].m);
            ftm_optim_destroy(t->cs[id].o);
            free(t->cs[id].gi);
        }
    free(t->cs);
    ftm_model_destroy(t->tf);
    for (int r = 0; r < 2; r++) {
        free(t->slot_loss[r]);
        free(t->slot_math[r]);
    }
    for (int i = 0; i < t->hc.n; i++)
        ftm_sched_free(&t->hc.e[i].s);
    pthread_mutex_destroy(&t->hc.mu);
}

/* The state a recovery resumes from: one survivor's params and moments. */
typedef struct snapshot {
    long done;
    float *params;
    ftm_optim *optim;
} snapshot;

/* After FTM_EDIVERGED from a chip's forward/backward (no loss reported):
 * the earliest such step, its loss not a number. */
static void note_divergence(trainer *t, const ftm_mesh *m)
{
    ftm_train_result *res = t->res;
    for (int id = 0; id < m->nchips && res->diverged_step < 0; id++) {
        long s = ftm_mesh_alive(m, id) ? t->cs[id].diverged - 1 : -1;
        for (int k = id + 1; s >= 0 && k < m->nchips; k++)
            if (ftm_mesh_alive(m, k) && t->cs[k].diverged && t->cs[k].diverged - 1 < s)
                s = t->cs[k].diverged - 1;
        if (s >= 0) {
            res->diverged_step = s;
            res->step[s].step = s;
            res->step[s].loss = NAN;
        }
    }
}

/* One attempt on mesh m from step t->start (with snap: every replica first
 * takes that state). On FTM_ECHIPDEAD, snap receives the most advanced
 * survivor's state. */
static int attempt(trainer *t, const ftm_mesh *m, const ftm_train_opts *o, snapshot *snap,
                   int *died)
{
    ftm_train_result *res = t->res;
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    res->chips = ftm_mesh_healthy_count(m);
    t->m = m;
    for (t->lead = 0; !ftm_mesh_alive(m, t->lead); t->lead++)
        ;
    pthread_mutex_init(&t->hc.mu, NULL);
    t->hc.m = m;
    t->hc.name = o->bn_algo ? o->bn_algo : "tree";
    rc = setup(t, m, o);
    int have_grad = !rc;
    for (int id = 0; id < m->nchips && !rc && snap->params; id++) {
        if (!ftm_mesh_alive(m, id))
            continue;
        memcpy(ftm_model_params(t->cs[id].m), snap->params, sizeof(float) * res->nparams);
        rc = ftm_optim_copy_state(t->cs[id].o, snap->optim);
    }
    ftm_rt *rt = NULL;
    if (!rc) {
        ftm_rt_config cfg = { o->pkt_bytes, 0, o->hang_timeout_s };
        rc = ftm_rt_create(&rt, m, &cfg);
    }
    if (!rc) {
        rc = ftm_rt_run(rt, chip_fn, t);
        if (rc == FTM_EHANG && (res->stuck = malloc(sizeof(ftm_stuck) * (size_t)m->nchips)))
            res->nstuck = ftm_rt_stuck(rt, res->stuck, m->nchips);
        if (rc == FTM_ECHIPDEAD)
            *died = ftm_rt_died(rt);
        if (rc == FTM_EDIVERGED)
            note_divergence(t, m);
    }
    ftm_rt_destroy(rt);
    res->bn_algo = t->hc.used ? t->hc.used : t->hc.name;
    if (rc == FTM_ECHIPDEAD) {
        /* Keep the state of the survivor that got furthest: a chip that
         * finished the step's allreduce holds a complete, correct sum. */
        int best = -1;
        for (int id = 0; id < m->nchips; id++)
            if (ftm_mesh_alive(m, id) && id != *died && (best < 0 || t->cs[id].done > t->cs[best].done))
                best = id;
        snap->done = best >= 0 ? t->cs[best].done : 0;
        free(snap->params);
        ftm_optim_destroy(snap->optim);
        snap->optim = NULL;
        ftm_optim_config oc = o->optim;
        if (!oc.kind)
            ftm_optim_config_default(&oc, o->model.kind);
        snap->params = best >= 0 ? malloc(sizeof(float) * res->nparams) : NULL;
        int e = best < 0 ? FTM_EALLDEAD
              : snap->params ? ftm_optim_create(&snap->optim, &oc, res->nparams) : FTM_ENOMEM;
        if (!e) {
            memcpy(snap->params, ftm_model_params(t->cs[best].m), sizeof(float) * res->nparams);
            e = ftm_optim_copy_state(snap->optim, t->cs[best].o);
        }
        if (e)
            rc = e;
    }
    if (!rc) {
        for (long s = 0; s < o->steps; s++)
            res->wall_s += res->step[s].wall_s;
        res->modeled_grad_s = t->grad_modeled;
        compare_replicas(t);
        if ((res->params = malloc(sizeof(float) * res->nparams)))
            memcpy(res->params, ftm_model_params(t->cs[t->lead].m), sizeof(float) * res->nparams);
        else
            rc = FTM_ENOMEM;
        if (!rc && o->check)
            rc = train_check(o, t->micro, ftm_model_params(t->cs[t->lead].m), t->cb, res);
    }
    if (have_grad)
        ftm_sched_free(&t->grad);
    teardown(t);
    return rc;
}

int ftm_train_run(const ftm_mesh *m, const ftm_train_opts *o,
                  const ftm_train_callbacks *cb, ftm_train_result *res)
{
    memset(res, 0, sizeof *res);
    res->diff_tensor = -1;
    res->grad_diff_step = -1;
    res->replica_mismatch_chip = -1;
    res->died_chip = -1;
    res->resumed_step = -1;
    res->diverged_step = -1;
    if (!o || o->steps < 1 || o->batch < 1 || o->micro < 1 || o->batch > (1L << 30) ||
        !ftm_model_find_kind(o->model.kind) ||
        (o->fail_during && (o->fail_chip < 0 || o->fail_chip >= m->nchips ||
                            !ftm_mesh_alive(m, o->fail_chip) || o->fail_step < 0)))
        return FTM_EINVAL;
    res->steps = o->steps;
    res->batch = o->batch;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    res->ncpus = ncpu > 0 ? (int)ncpu : 1;
    trainer t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.cb = cb;
    t.res = res;
    snapshot snap = { 0, NULL, NULL };
    int died = -1;
    int rc = attempt(&t, m, o, &snap, &died);
    if (rc == FTM_ECHIPDEAD) {
        /* Recovery: the mesh without the dead chip, from the survivor's
         * state; the steps from there on are redone (res->step is
         * overwritten from resumed_step). */
        ftm_mesh m2;
        rc = ftm_mesh_copy(&m2, m);
        if (!rc) {
            ftm_mesh_fail_chip_id(&m2, died);
            res->died_chip = died;
            res->resumed_step = snap.done;
            free(res->stuck);
            res->stuck = NULL;
            res->nstuck = 0;
            ftm_train_opts o2 = *o;
            o2.fail_during = 0;
            memset(&t, 0, sizeof t);
            t.o = &o2;
            t.cb = cb;
            t.res = res;
            t.start = snap.done;
            rc = attempt(&t, &m2, &o2, &snap, &died);
            ftm_mesh_free(&m2);
        }
    }
    free(snap.params);
    ftm_optim_destroy(snap.optim);
    return rc;
}

void ftm_train_result_free(ftm_train_result *res)
{
    free(res->step);
    free(res->ref_loss);
    free(res->stuck);
    free(res->params);
    res->params = NULL;
    res->step = NULL;
    res->ref_loss = NULL;
    res->stuck = NULL;
    res->nstuck = 0;
}
