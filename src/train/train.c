/* Data-parallel training on the chip threads (see include/ftmesh/train.h).
 *
 * Per step, on every healthy chip:
 *
 *   zero grads -> forward/backward of [first, first+count)  --BN hook-->  tree
 *              -> gradient allreduce (f32, or i64 fixed point in exact mode)
 *              -> (exact: fixed point -> float) -> optimizer step
 *              -> barrier that sums the chips' losses (exact sums, xsum.h:
 *                 integer words, so any order or split over processes
 *                 gives the same bits) and math times
 *   reporter (the lowest healthy chip of this process): reports the step;
 *   the lowest healthy chip of all (the lead) also writes checkpoints and
 *   runs the float --check.
 *
 * A run spread over processes (include/ftmesh/mpi.h) holds replicas of
 * its local chips only. The barrier's sums cross the processes, so every
 * process's reporter reports every step; what lives with one chip (the
 * lead's --check figures and checkpoints, a survivor's state after a
 * failure, the final parameters) is broadcast by the process that runs
 * it, between runs, and per-chip figures are summed. One process runs
 * every chip, and all of that does nothing.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "train_int.h"
#include "trainer.h"
#include "core/util.h"
#include "trace/trace_int.h"

double train_thread_cpu(void) { return core_clock_s(CLOCK_THREAD_CPUTIME_ID); }
double train_process_cpu(void) { return core_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

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
    int rc = 0, k = c->hook_calls_step;
    /* forward strikes at the first call, backward at the first call of the
     * backward pass (half of last step's calls: one per BN layer each way) */
    if (k == 0)
        rc = ftm_rt_script_fire(c->t->faults, c->chip, c->t->m, c->step, FTM_PHASE_FORWARD);
    if (!rc && c->hook_calls_prev && k == c->hook_calls_prev / 2)
        rc = ftm_rt_script_fire(c->t->faults, c->chip, c->t->m, c->step, FTM_PHASE_BACKWARD);
    if (!rc)
        rc = hook_sched(&c->t->hc, n, &s, &modeled);
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

/* What the end-of-step barrier combines: the loss's exact sum and the math
 * CPU in nanoseconds (summed), the largest chip's math CPU and the stop
 * request (maximised). A word of the loss cannot overflow (one term per
 * micro-batch of the batch). */
enum { BAR_MATH = FTM_XSUM_WORDS, BAR_NSUM, BAR_MATH_MAX = BAR_NSUM, BAR_HALT, BAR_WORDS };
enum { BAR_NMAX = BAR_WORDS - BAR_NSUM };
typedef char bar_fits_[BAR_WORDS <= FTM_BARRIER_WORDS ? 1 : -1];

/* This process's reporter, after the end-of-step barrier (v: its sums). */
static int report_step(trainer *t, chip_st *c, long s, const int64_t *v)
{
    ftm_train_step *st = &t->res->step[s];
    double now = core_now_s(), msum = 1e-9 * (double)v[BAR_MATH];
    double mmax = 1e-9 * (double)v[BAR_MATH_MAX];
    double loss = ftm_xsum_value(v);
    st->step = s;
    st->chips = t->res->chips;
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
    t->reported = s + 1;
    if (v[BAR_HALT])
        atomic_store(&t->halt, (int)v[BAR_HALT]);
    if (diverged)
        return FTM_EDIVERGED;
    const ftm_train_opts *o = t->o;
    /* the lead's process writes the file, from the lead's replica */
    int due = o->checkpoint && ((o->checkpoint_every > 0 && (s + 1) % o->checkpoint_every == 0) ||
                                s + 1 == o->steps || atomic_load(&t->halt));
    if (due && c->id == t->lead) {
        int rc = train_ckpt_save(o, c->m, c->o, s + 1, t->res->step, t->m, t->faults,
                                 t->rt, t->res->detail, sizeof t->res->detail);
        if (rc)
            return rc;
        t->res->checkpoints++;
    }
    return 0;
}

/* Injected failure: half of the chip's packets of the gradient allreduce. */
static uint64_t fail_point(const trainer *t, ftm_chip *chip)
{
    size_t pkt = ftm_rt_pkt_bytes(ftm_chip_rt(chip));
    return ftm_sched_chip_packets(&t->grad, ftm_chip_id(chip), pkt) / 2 + 1;
}

/* Where step s is past --trace-steps, c records nothing more: every chip
 * calls this at the same points of its program (the start of the attempt,
 * before its rejoin, and of each step), so the trace ends at one. */
static void trace_from(const trainer *t, chip_st *c, long s)
{
    const ftm_train_opts *o = t->o;
    if (o->trace && o->trace_steps && !c->untraced && s >= t->res->start_step + o->trace_steps) {
        trace_stop_chip(o->trace, c->id);
        c->untraced = 1;
    }
}

/* Forward and backward of step s; the forward and backward events of a
 * model without batch-norm calls strike when it returns. */
static int step_fb(trainer *t, chip_st *c, long s, double *loss, double *math)
{
    const ftm_train_opts *o = t->o;
    size_t np = ftm_model_nparams(c->m);
    memset(ftm_model_grads(c->m), 0, sizeof(float) * np);
    if (o->exact)
        memset(c->gi, 0, sizeof(int64_t) * np);
    c->hook_cpu_step = c->hook_modeled_step = 0;
    c->hook_calls_step = 0;
    c->step = s;
    trace_from(t, c, s);
    /* a chip without examples still makes its hook calls; first = 0
     * keeps the model's alignment rule satisfied */
    ftm_fb_args a = {.step = (uint64_t)s, .first = c->count ? c->first : 0,
                     .count = c->count, .global_batch = o->batch, .micro = t->micro,
                     .exact = o->exact, .grads_i64 = c->gi, .hook = bn_hook,
                     .hook_ctx = c, .loss_x = c->lossx};
    memset(c->lossx, 0, sizeof c->lossx);
    double c0 = train_thread_cpu(), n0 = train_note_t0(o);
    int rc = ftm_model_forward_backward(c->m, &a, loss);
    if (!c->untraced)
        train_note(o, c->id, FTM_EV_COMPUTE, "forward+backward", n0);
    *math = train_thread_cpu() - c0 - c->hook_cpu_step;
    c->math_cpu += *math;
    c->hook_cpu += c->hook_cpu_step;
    if (rc == FTM_ERANGE) {
        /* values the fixed-point sums cannot hold: the loss diverged */
        c->diverged = s + 1;
        rc = FTM_EDIVERGED;
    }
    c->hook_calls_prev = c->hook_calls_step;
    if (!rc)
        rc = ftm_rt_script_fire(t->faults, c->chip, t->m, s, FTM_PHASE_FORWARD);
    if (!rc)
        rc = ftm_rt_script_fire(t->faults, c->chip, t->m, s, FTM_PHASE_BACKWARD);
    return rc;
}

/* The gradient allreduce, with the step's allreduce events. */
static int step_reduce(trainer *t, chip_st *c, long s)
{
    size_t np = ftm_model_nparams(c->m);
    float *g = ftm_model_grads(c->m);
    double c0 = train_thread_cpu();
    int rc = ftm_rt_script_arm(t->faults, c->chip, t->m, s, fail_point(t, c->chip));
    if (!rc)
        rc = ftm_chip_exec(c->chip, &t->grad, t->o->exact ? (void *)c->gi : (void *)g);
    if (rc == FTM_ERANGE && t->o->exact) {
        /* the chips' sum of a gradient left the fixed-point range (each
         * chip's part was within it): the loss diverged, as in step_fb */
        c->diverged = s + 1;
        rc = FTM_EDIVERGED;
    }
    if (!rc && t->o->exact)
        ftm_model_fix_to_float(g, c->gi, np);
    if (!rc)
        rc = ftm_rt_script_after(t->faults, c->chip, t->m, s);
    c->grad_cpu += train_thread_cpu() - c0;
    return rc;
}

/* The --check gradient (lowest chip), the optimizer events, the state a
 * rollback would take, and the update. */
static int step_update(trainer *t, chip_st *c, long s)
{
    size_t np = ftm_model_nparams(c->m);
    float *g = ftm_model_grads(c->m), *p = ftm_model_params(c->m);
    double c1 = train_thread_cpu();
    int rc = 0;
    if (t->tf && c->id == t->lead) {
        if ((rc = tf_check(t, p, g, s)))
            return rc;
        double c2 = train_thread_cpu();
        t->res->check_cpu_s += c2 - c1;
        c1 = c2;
    }
    if ((rc = ftm_rt_script_fire(t->faults, c->chip, t->m, s, FTM_PHASE_OPTIMIZER)))
        return rc;
    memcpy(c->prev_params, p, sizeof(float) * np);
    if ((rc = ftm_optim_copy_state(c->prev_o, c->o)))
        return rc;
    double n0 = train_note_t0(t->o);
    if ((rc = ftm_optim_step(c->o, p, g, ftm_model_tensor(c->m, 0), ftm_model_ntensors(c->m),
                             (uint64_t)s)))
        return rc;
    if (!c->untraced)
        train_note(t->o, c->id, FTM_EV_COMPUTE, "optimizer", n0);
    c->optim_cpu += train_thread_cpu() - c1;
    c->done = s + 1;
    return 0;
}

int train_chip_fn(ftm_chip *chip, void *arg)
{
    trainer *t = arg;
    int id = ftm_chip_id(chip);
    chip_st *c = &t->cs[id];
    const ftm_train_opts *o = t->o;
    c->chip = chip;
    trace_from(t, c, t->start); /* before the rejoin's transfers */
    int rc = ftm_chip_barrier(chip);
    if (id == t->reporter) {
        t->t_prev = core_now_s();
        t->cpu0 = train_process_cpu();
    }
    if (!rc)
        rc = train_rejoin_exec(t, c);
    for (long s = t->start; s < t->until && !rc; s++) {
        double loss = 0, math = 0;
        if ((rc = ftm_rt_script_fire(t->faults, chip, t->m, s, FTM_PHASE_START)) ||
            (rc = step_fb(t, c, s, &loss, &math)) || (rc = step_reduce(t, c, s)) ||
            (rc = step_update(t, c, s)))
            break;
        (void)loss; /* the exact sum in c->lossx is what is reported */
        int64_t v[BAR_WORDS];
        memcpy(v, c->lossx, sizeof c->lossx);
        v[BAR_MATH] = v[BAR_MATH_MAX] = llround(math * 1e9);
        v[BAR_HALT] = o->stop ? atomic_load(o->stop) : 0; /* the largest over ranks */
        if ((rc = ftm_chip_barrier_reduce(chip, v, BAR_NSUM, BAR_NMAX)))
            break;
        if (id == t->reporter)
            rc = report_step(t, c, s, v);
        if (v[BAR_HALT])
            break;
    }
    if (id == t->reporter) { /* after a failure too: the CPU of every attempt counts */
        t->cpu_local = train_process_cpu() - t->cpu0;
        t->cpu_set = 1;
    }
    return rc;
}

static int record_hook(void *ctx, int64_t *buf, size_t n)
{
    const ftm_sched *s;
    double modeled = 0;
    hook_cache *h = ctx;
    (void)buf;
    int rc = hook_sched(h, n, &s, &modeled);
    h->step_modeled += modeled;
    return rc;
}

void train_hook_fallbacks(const trainer *t, ftm_train_result *res)
{
    res->bn_widths = t->hc.n;
    res->bn_fallback_widths = 0;
    res->bn_schedule = res->bn_fallback = NULL;
    for (int i = 0; i < t->hc.n; i++)
        if (t->hc.e[i].s.fallback) {
            if (!res->bn_fallback_widths++) {
                res->bn_schedule = t->hc.e[i].s.algo;
                res->bn_fallback = t->hc.e[i].s.fallback;
            }
        }
}

/* Builds the batch-norm hook schedules before the run, in the order the
 * chips will use them, by a forward/backward of no examples whose hook
 * only records the sizes: processes name schedules by declaring them in
 * the same order (ftm_rt_declare_sched), which chips building them on
 * first use would not give. */
int train_hook_prebuild(trainer *t, const ftm_train_opts *o, size_t np)
{
    ftm_model_config mc = o->model;
    mc.max_batch = 1;
    ftm_model *tmp;
    int64_t *gi = o->exact ? calloc(np, sizeof *gi) : NULL;
    int rc = o->exact && !gi ? FTM_ENOMEM : ftm_model_create(&tmp, &mc);
    if (rc) {
        free(gi);
        return rc;
    }
    int64_t lossx[FTM_XSUM_WORDS] = {0};
    double loss;
    ftm_fb_args a = {.step = 0, .first = 0, .count = 0, .global_batch = o->batch,
                     .micro = t->micro, .exact = o->exact, .grads_i64 = gi,
                     .hook = record_hook, .hook_ctx = &t->hc, .loss_x = lossx};
    rc = ftm_model_forward_backward(tmp, &a, &loss);
    ftm_model_destroy(tmp);
    free(gi);
    for (int i = 0; i < t->hc.n && !rc; i++)
        rc = ftm_rt_declare_sched(t->rt, &t->hc.e[i].s);
    return rc;
}
