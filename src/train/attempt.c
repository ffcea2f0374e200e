/* The attempts of a training run: setup of the replicas and schedules on
 * a mesh, the run, the recovery after a failure, the repairs between
 * attempts, --resume (see src/train/train.c for the steps themselves). */
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "train_int.h"
#include "trainer.h"
#include "core/util.h"

/* One chip's replica, optimizer and buffers. */
static int chip_setup(chip_st *c, const ftm_model_config *mc, const ftm_optim_config *oc, int exact)
{
    int rc = ftm_model_create(&c->m, mc);
    if (rc)
        return rc;
    size_t np = ftm_model_nparams(c->m);
    if ((rc = ftm_optim_create(&c->o, oc, np)) || (rc = ftm_optim_create(&c->prev_o, oc, np)))
        return rc;
    if (!(c->prev_params = malloc(sizeof(float) * np)))
        return FTM_ENOMEM;
    if (exact && !(c->gi = malloc(sizeof(int64_t) * np)))
        return FTM_ENOMEM;
    return 0;
}

/* The split, this process's replicas, the schedules (declared to the
 * runtime t->rt in the same order by every process). */
static int setup(trainer *t, const ftm_mesh *m, const ftm_train_opts *o)
{
    ftm_train_result *res = t->res;
    int P = res->chips, rc;
    long *first = calloc((size_t)P, sizeof(long)), *count = calloc((size_t)P, sizeof(long));
    t->cs = calloc((size_t)m->nchips, sizeof(chip_st));
    if (!res->step) /* a recovery keeps the steps done before the failure */
        res->step = calloc((size_t)o->steps, sizeof(ftm_train_step));
    if (!first || !count || !t->cs || !res->step)
        rc = FTM_ENOMEM;
    else
        rc = ftm_train_split(o->batch, o->micro, o->exact, P, first, count, &t->micro);
    long maxc = 1;
    for (int i = 0; i < P && !rc; i++)
        maxc = count[i] > maxc ? count[i] : maxc;
    ftm_model_config mc = o->model;
    mc.max_batch = (int)maxc;
    mc.micro = t->micro; /* bert's activations: one micro-batch at a time */
    ftm_optim_config oc = o->optim;
    if (!oc.kind)
        ftm_optim_config_default(&oc, mc.kind);
    t->reporter = -1;
    for (int id = 0, i = 0; id < m->nchips && !rc; id++) {
        if (!ftm_mesh_alive(m, id))
            continue;
        chip_st *c = &t->cs[id];
        c->t = t;
        c->id = id;
        c->first = first[i];
        c->count = count[i++];
        if (!ftm_rt_is_local(t->rt, id))
            continue; /* its replica lives in another process */
        if (t->reporter < 0)
            t->reporter = id;
        rc = chip_setup(c, &mc, &oc, o->exact);
    }
    free(first);
    free(count);
    if (!rc && o->check && !o->exact && ftm_rt_is_local(t->rt, t->lead)) {
        mc.max_batch = (int)o->batch;
        rc = ftm_model_create(&t->tf, &mc);
    }
    if (rc)
        return rc;
    if (t->reporter >= 0)
        res->nparams = ftm_model_nparams(t->cs[t->reporter].m);
    else if ((rc = train_model_nparams(o, &res->nparams)))
        return rc;
    res->micro = t->micro;
    rc = train_build(&t->grad, m, o->algo ? o->algo : "ring", res->nparams,
                     o->exact ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32, &t->grad_modeled, &res->algo);
    if (rc)
        return rc;
    res->schedule = t->grad.algo;
    res->fallback = t->grad.fallback;
    t->have_grad = 1;
    rc = ftm_rt_declare_sched(t->rt, &t->grad);
    if (!rc)
        rc = train_hook_prebuild(t, o, res->nparams);
    return rc ? rc : train_rejoin_build(t);
}

static void teardown(trainer *t)
{
    if (t->cs)
        for (int id = 0; id < t->m->nchips; id++) {
            ftm_model_destroy(t->cs[id].m);
            ftm_optim_destroy(t->cs[id].o);
            ftm_optim_destroy(t->cs[id].prev_o);
            free(t->cs[id].prev_params);
            free(t->cs[id].gi);
        }
    free(t->cs);
    ftm_model_destroy(t->tf);
    for (int i = 0; i < t->hc.n; i++)
        ftm_sched_free(&t->hc.e[i].s);
    pthread_mutex_destroy(&t->hc.mu);
}

/* What one recovery hands to the next attempt. */
typedef struct recovery {
    ftm_mesh next;             /* the mesh without what died and was noticed */
    int have_next;
    double fail_t0;            /* when the interrupted step started */
    int first_new;             /* its events: res->events[first_new, nevents) */
} recovery;

/* Once the next attempt is ready to run: the time lost, the new rings'
 * modeled quality, the chips left; then the callbacks. */
static void finish_events(trainer *t, recovery *rv)
{
    ftm_train_result *res = t->res;
    double now = core_now_s();
    int first = 1;
    for (int i = rv->first_new; i < res->nevents; i++) {
        ftm_train_event *e = &res->events[i];
        if (e->repair)
            continue; /* told once the state has reached them (rejoin.c) */
        if (e->noticed) {
            e->lost_wall_s = first ? now - rv->fail_t0 : 0;
            e->modeled_after_s = t->grad_modeled;
            e->chips_after = res->chips;
            train_note_schedule(e, res, first);
            first = 0;
        }
        if (t->cb && t->cb->event)
            t->cb->event(t->cb->ctx, e);
    }
    rv->first_new = res->nevents;
}

/* After a run stopped by a failure: what died, the events, the step the
 * survivors resume from and the state they take. */
static int note_failure(trainer *t, ftm_rt *rt, const ftm_mesh *m, recovery *rv, snapshot *snap)
{
    ftm_train_result *res = t->res;
    int cap = t->faults->script.n + 1 - res->nevents;
    int n = ftm_rt_script_recover(t->faults, rt, m, &rv->next, res->events + res->nevents, cap);
    if (n < 0)
        return n;
    rv->have_next = 1;
    for (int i = 0; i < n; i++) {
        ftm_train_event *e = &res->events[res->nevents + i];
        e->resumed = t->reported;
        /* the step redone's collectives on the mesh it ran on */
        e->lost_modeled_s = i == 0 ? t->grad_modeled + t->hc.step_modeled : 0;
        e->modeled_before_s = t->grad_modeled;
        e->schedule_before = res->schedule;
    }
    res->nevents += n;
    rv->fail_t0 = t->t_prev;
    for (int id = 0; id < m->nchips; id++) {
        if (!ftm_mesh_alive(m, id) || ftm_mesh_alive(&rv->next, id))
            continue;
        int *d = realloc(res->died, sizeof(int) * (size_t)(res->ndied + 1));
        if (!d)
            return FTM_ENOMEM;
        res->died = d;
        d[res->ndied++] = id;
        if (res->died_chip < 0)
            res->died_chip = id;
    }
    if (res->resumed_step < 0)
        res->resumed_step = t->reported;
    return train_take_snapshot(t, &rv->next, snap);
}

/* The totals of a finished run, and --check (every process runs the
 * one-chip reference, so that all of them reach the same verdict). */
static int finish_run(trainer *t, const ftm_train_opts *o)
{
    ftm_train_result *res = t->res;
    for (long s = 0; s < o->steps; s++)
        res->wall_s += res->step[s].wall_s;
    res->modeled_grad_s = t->grad_modeled;
    int rc = train_compare_replicas(t);
    int halt = atomic_load(&t->halt);
    if (!rc && o->check && !halt)
        return train_check(o, t->micro, res->params, t->cb, res);
    if (!rc && o->check) /* a stop in the last step: --check stopped before it began */
        res->interrupted = halt;
    return rc;
}

static int start_state(trainer *t, const ftm_mesh *m, const snapshot *snap)
{
    for (int id = 0; id < m->nchips && snap->params; id++) {
        if (!ftm_mesh_alive(m, id) || !t->cs[id].m || train_rejoin_joining(t, id))
            continue; /* a joining chip gets it over the mesh */
        memcpy(ftm_model_params(t->cs[id].m), snap->params, sizeof(float) * t->res->nparams);
        int rc = ftm_optim_copy_state(t->cs[id].o, snap->optim);
        if (rc)
            return rc;
        t->cs[id].done = snap->done;
    }
    return 0;
}

/* Kills due by the step this attempt runs that found what they name dead
 * already: told now, before the step's line, not after the run. */
static void tell_skipped(trainer *t)
{
    ftm_train_result *res = t->res;
    int first = res->nevents, cap = t->faults->script.n + 1 - first;
    res->nevents += ftm_rt_script_unnoticed(t->faults, t->reported, res->events + first, cap);
    for (int i = first; i < res->nevents; i++) {
        res->events[i].modeled_before_s = res->events[i].modeled_after_s = t->grad_modeled;
        if (t->cb && t->cb->event)
            t->cb->event(t->cb->ctx, &res->events[i]);
    }
}

/* The run of an attempt on rt and what the processes must agree on
 * after it (every process gets the same outcome from ftm_rt_run, so they
 * make the same collective calls). */
static int run_once(trainer *t, const ftm_mesh *m, const ftm_train_opts *o, snapshot *snap,
                    recovery *rv)
{
    ftm_train_result *res = t->res;
    ftm_rt_script_rt(t->faults, t->rt);
    ftm_rt_script_attempt(t->faults, m);
    finish_events(t, rv);
    tell_skipped(t);
    int rc = ftm_rt_run(t->rt, train_chip_fn, t);
    int e = ftm_rt_script_sync(t->faults, t->rt);
    if (!e)
        e = train_sync_run(t);
    if (!e)
        e = train_sum_counters(t);
    if (e)
        return e;
    if (rc == FTM_EHANG && (res->stuck = malloc(sizeof(ftm_stuck) * (size_t)m->nchips)))
        res->nstuck = ftm_rt_stuck(t->rt, res->stuck, m->nchips);
    if (rc == FTM_EHANG)
        res->hang_step = t->reported; /* the first step not done */
    if (rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD) {
        e = note_failure(t, t->rt, m, rv, snap);
        rc = e ? e : rc;
    }
    if (rc == FTM_EDIVERGED) /* the steps done have their figures, as in a whole run */
        res->modeled_grad_s = t->grad_modeled;
    if (rc == FTM_EDIVERGED && (e = train_note_divergence(t, m)))
        rc = e;
    if (!rc && !atomic_load(&t->halt) && t->reported >= t->until && t->until < o->steps) {
        /* a clean stop: the links this runtime lost nobody noticed (a
         * noticed one stops the run); the next runtime loses them too */
        ftm_rt_script_lost(t->faults, t->rt);
        return train_take_snapshot(t, m, snap); /* repairs come next */
    }
    return rc ? rc : finish_run(t, o);
}

/* One attempt on mesh m from step t->start (with snap->params: every
 * replica first takes that state). On a failure, rv and snap receive what
 * the next attempt needs. */
static int attempt(trainer *t, const ftm_mesh *m, const ftm_train_opts *o, snapshot *snap,
                   recovery *rv)
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
    ftm_rt_config cfg = { o->pkt_bytes, 0, o->hang_timeout_s, 0 };
    rc = ftm_rt_create(&t->rt, m, &cfg);
    if (!rc && o->trace)
        rc = ftm_rt_set_trace(t->rt, o->trace);
    if (!rc)
        rc = setup(t, m, o);
    if (!rc)
        rc = start_state(t, m, snap);
    int traced = !o->trace_steps || t->start < res->start_step + o->trace_steps;
    if (!rc && t->recover_t0 > 0 && traced) /* the old runtime down, the new one up */
        train_note_recovery(o, m, t->recover_t0);
    if (!rc)
        rc = run_once(t, m, o, snap, rv);
    if (rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD)
        t->fail_t = train_note_t0(o);
    res->bn_algo = t->hc.used ? t->hc.used : t->hc.name;
    train_hook_fallbacks(t, res);
    ftm_rt_destroy(t->rt);
    t->rt = NULL;
    if (t->have_grad)
        ftm_sched_free(&t->grad);
    teardown(t);
    return rc;
}

/* --resume: the checkpoint's state into snap, its losses into res, its
 * mesh into cur (the links it lost unnoticed into lost) and the events it
 * had still to come into ck. */
static int resume_from(const ftm_train_opts *o, snapshot *snap, ftm_train_result *res,
                       ftm_mesh *cur, unsigned char *lost, ftm_fault_script *ck)
{
    size_t np;
    int rc = train_model_nparams(o, &np);
    if (rc)
        return rc;
    ftm_ckpt_state st;
    if ((rc = train_ckpt_load(o, np, &st, res->detail, sizeof res->detail)))
        return rc;
    if (!(rc = train_snap_alloc(snap, o, np)) &&
        !(rc = train_ckpt_mesh(&st, cur, lost, ck, res->detail, sizeof res->detail))) {
        float *mom[2];
        ftm_optim_moments(snap->optim, &mom[0], &mom[1]);
        memcpy(snap->params, st.params, sizeof(float) * np);
        for (int k = 0; k < st.nmoments && mom[k]; k++)
            memcpy(mom[k], st.moment[k], sizeof(float) * np);
        snap->done = res->start_step = st.step;
        for (long i = 0; i < st.step; i++) {
            res->step[i].step = i;
            res->step[i].loss = st.losses ? st.losses[i] : 0;
        }
    }
    ftm_ckpt_state_free(&st);
    return rc;
}

/* After the attempts: the availability figures of the steps run. */
static void availability(const ftm_mesh *m, const ftm_train_opts *o, ftm_train_result *res)
{
    res->chip_steps = res->chip_steps_all = 0;
    for (long s = res->start_step; s < res->steps_done && s < o->steps; s++) {
        res->chip_steps += res->step[s].chips;
        res->chip_steps_all += m->nchips;
    }
    res->lost_failure_s = res->lost_rejoin_s = 0;
    for (int i = 0; i < res->nevents; i++) {
        const ftm_train_event *e = &res->events[i];
        if (e->repair)
            res->lost_rejoin_s += e->lost_wall_s;
        else if (e->noticed)
            res->lost_failure_s += e->lost_wall_s;
        res->repairs += e->repair && e->noticed; /* not those skipped */
    }
}

/* One attempt's trainer, from step `start` up to the next repair. */
static void trainer_init(trainer *t, const ftm_train_opts *o, const ftm_train_callbacks *cb,
                         ftm_train_result *res, ftm_rt_script *f, rejoin *rj, long start)
{
    memset(t, 0, sizeof *t);
    t->o = o;
    t->cb = cb;
    t->res = res;
    t->faults = f;
    t->rj = rj;
    t->start = t->reported = start;
    t->until = f->until = train_rejoin_next(f, start, o->steps);
}

/* The gradient allreduce's modeled time on m before the first attempt,
 * where a repair at its first step needs a time before it (a resumed run
 * has run no step yet); 0 otherwise. */
static double modeled_first(const ftm_mesh *m, const ftm_train_opts *o, const ftm_rt_script *f,
                            long start)
{
    int due = 0;
    for (int i = 0; i < f->script.n; i++)
        due |= train_rejoin_due(f, i, start);
    size_t np;
    ftm_sched s;
    double t = 0;
    const char *used;
    if (due && !train_model_nparams(o, &np) &&
        !train_build(&s, m, o->algo ? o->algo : "ring", np,
                     o->exact ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32, &t, &used))
        ftm_sched_free(&s);
    return t;
}

/* Attempts until the last step: each failure's recovery gives the next
 * attempt its mesh and state; each repair boundary grows the mesh. */
static int run_attempts(const ftm_mesh *m, const ftm_train_opts *o, const ftm_train_callbacks *cb,
                        ftm_train_result *res, ftm_rt_script *f, snapshot *snap)
{
    ftm_mesh cur;
    rejoin rj;
    int rc = ftm_mesh_copy(&cur, m);
    if (rc)
        return rc;
    if ((rc = train_rejoin_init(&rj, f, m))) {
        train_rejoin_free(&rj);
        ftm_mesh_free(&cur);
        return rc;
    }
    recovery rv;
    memset(&rv, 0, sizeof rv);
    trainer t;
    memset(&t, 0, sizeof t);
    double fail_t = 0;
    for (int k = 0;; k++) {
        long start = snap->params ? snap->done : 0;
        rj.modeled_before_s = k == 0 ? modeled_first(&cur, o, f, start) : t.grad_modeled;
        int told = res->nevents;
        if ((rc = train_rejoin_apply(&rj, f, &cur, start, res)))
            break;
        for (int i = told; i < res->nevents && cb && cb->event; i++)
            if (res->events[i].repair && !res->events[i].noticed)
                cb->event(cb->ctx, &res->events[i]); /* skipped: nothing to wait for */
        trainer_init(&t, o, cb, res, f, &rj, start);
        t.recover_t0 = fail_t;
        rc = attempt(&t, &cur, o, snap, &rv);
        fail_t = 0;
        rj.any = 0; /* the state went over once, or comes with the recovery */
        rj.n = rj.carried = rj.told ? 0 : rj.n; /* stopped before telling them: the next does */
        if (rj.have_s) {
            ftm_sched_free(&rj.s);
            rj.have_s = 0;
        }
        if (!rc && !atomic_load(&t.halt) && t.reported >= t.until && t.until < o->steps)
            continue; /* the repairs of step t.until */
        if ((rc != FTM_ECHIPDEAD && rc != FTM_ELINKDEAD) || !rv.have_next || k > 2 * f->script.n + 2)
            break;
        ftm_mesh_free(&cur);
        cur = rv.next;
        rv.have_next = 0;
        fail_t = t.fail_t;
        free(res->stuck);
        res->stuck = NULL;
        res->nstuck = 0;
    }
    train_rejoin_free(&rj);
    if (rv.have_next)
        ftm_mesh_free(&rv.next);
    if (res->have_mesh_after)
        ftm_mesh_free(&res->mesh_after);
    res->mesh_after = cur; /* the result owns it now */
    res->have_mesh_after = 1;
    res->steps_done = t.reported;
    if (!rc && t.reported < o->steps) /* else 0, or the signal --check stopped at */
        res->interrupted = atomic_load(&t.halt);
    if (!rc) { /* dead links nothing needed again */
        int first = res->nevents;
        res->nevents += ftm_rt_script_unnoticed(f, -1, res->events + first, f->script.n + 1 - first);
        for (int i = first; i < res->nevents; i++) /* the allreduce as it was */
            res->events[i].modeled_before_s = res->events[i].modeled_after_s = t.grad_modeled;
        for (int i = first; i < res->nevents && cb && cb->event; i++)
            cb->event(cb->ctx, &res->events[i]);
    }
    availability(m, o, res);
    return rc;
}

/* The script the run plays from step `start`: the events a resumed
 * checkpoint had still to come (ck), o->faults and the short form
 * fail_chip@fail_step:allreduce (events before start are history, one
 * given twice counts once). chk gets what the pre-run check applies: all
 * but the pending ones at or after o->steps (repairs, the checkpoint's,
 * and with o->checkpoint every one), which stay for the checkpoints (the
 * run that resumes from one checks them). ck's kills before start
 * are links lost unnoticed (lost, or NULL): struck, to be told. */
static int train_script(const ftm_train_opts *o, const ftm_mesh *m, const ftm_fault_script *ck,
                        const unsigned char *lost, long start, ftm_rt_script *f,
                        ftm_fault_script *chk)
{
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    memset(f, 0, sizeof *f);
    int rc = ftm_fault_script_merge(&s, ck, 0), nck = s.n;
    if (!rc)
        rc = ftm_fault_script_merge(&s, o->faults, start);
    if (!rc && o->fail_during && o->fail_step >= start) {
        ftm_fault_event e = { .kind = FTM_FAULT_CHIP, .r = ftm_mesh_row(m, o->fail_chip),
                              .c = ftm_mesh_col(m, o->fail_chip), .when = o->fail_step,
                              .phase = FTM_PHASE_ALLREDUCE, .pkts = FTM_FAULT_MID };
        ftm_fault_script one = { FTM_FAULT_TRAIN, 1, 1, &e };
        rc = ftm_fault_script_merge(&s, &one, start);
    }
    for (int i = 0; i < s.n && !rc; i++)
        if (s.ev[i].when >= start &&
            (s.ev[i].when < o->steps || !(s.ev[i].repair || i < nck || o->checkpoint)))
            rc = ftm_fault_script_add(chk, &s.ev[i]);
    if (!rc)
        rc = ftm_rt_script_init(f, &s, m);
    ftm_fault_script_free(&s);
    for (int i = 0; i < f->script.n && !rc; i++)
        if (f->script.ev[i].when < start)
            f->fired[i] = 1; /* in the first attempt, long before its start */
    for (int k = 0; lost && k < m->nchips * FTM_NDIRS && !rc; k++)
        if (lost[k]) {
            f->secret_chip[f->nsecret] = k / FTM_NDIRS;
            f->secret_dir[f->nsecret++] = k % FTM_NDIRS;
        }
    return rc;
}

/* The pre-run check of chk on cur, the links lost unnoticed (lost, or
 * NULL) counted dead: a repair may bring them back, a kill finds them
 * dead. */
static int check_script(ftm_fault_script *chk, const ftm_mesh *cur, const unsigned char *lost,
                        const ftm_train_opts *o, ftm_train_result *res)
{
    ftm_mesh m;
    int rc = ftm_mesh_copy(&m, cur);
    if (rc)
        return rc;
    for (int k = 0; lost && k < m.nchips * FTM_NDIRS; k++)
        m.link_dead[k] |= lost[k];
    rc = ftm_fault_script_check(chk, &m, o->steps, NULL, res->detail, sizeof res->detail);
    ftm_mesh_free(&m);
    return rc;
}

static void result_init(ftm_train_result *res)
{
    memset(res, 0, sizeof *res);
    res->diff_tensor = -1;
    res->grad_diff_step = -1;
    res->replica_mismatch_chip = -1;
    res->died_chip = -1;
    res->resumed_step = -1;
    res->diverged_step = -1;
}

/* --resume, the script, its check, the attempts. */
static int train_all(const ftm_mesh *m, const ftm_train_opts *o, const ftm_train_callbacks *cb,
                     ftm_train_result *res, ftm_mesh *cur, snapshot *snap)
{
    ftm_rt_script f;
    ftm_fault_script ck;
    ftm_fault_script_init(&ck, FTM_FAULT_TRAIN);
    memset(&f, 0, sizeof f);
    unsigned char *lost = o->resume ? calloc((size_t)m->nchips * FTM_NDIRS, 1) : NULL;
    int rc = (res->step = calloc((size_t)o->steps, sizeof(ftm_train_step))) &&
             (lost || !o->resume) ? 0 : FTM_ENOMEM;
    if (!rc && o->resume && (rc = resume_from(o, snap, res, cur, lost, &ck)))
        res->resume_failed = 1;
    ftm_fault_script chk;
    ftm_fault_script_init(&chk, FTM_FAULT_TRAIN);
    if (!rc)
        rc = train_script(o, m, &ck, lost, snap->params ? snap->done : 0, &f, &chk);
    if (!rc && !(res->events = calloc((size_t)f.script.n + 1, sizeof *res->events)))
        rc = FTM_ENOMEM;
    if (!rc)
        rc = check_script(&chk, cur, lost, o, res);
    ftm_fault_script_free(&chk);
    free(lost);
    double t0 = core_now_s();
    if (!rc)
        rc = run_attempts(cur, o, cb, res, &f, snap);
    res->run_wall_s = core_now_s() - t0 - res->ref_wall_s;
    ftm_rt_script_free(&f);
    ftm_fault_script_free(&ck);
    return rc;
}

int ftm_train_run(const ftm_mesh *m, const ftm_train_opts *o,
                  const ftm_train_callbacks *cb, ftm_train_result *res)
{
    result_init(res);
    if (!o || o->steps < 1 || o->batch < 1 || o->micro < 1 || o->batch > (1L << 30) ||
        !ftm_model_find_kind(o->model.kind) ||
        (o->fail_during && (o->fail_chip < 0 || o->fail_chip >= m->nchips ||
                            !ftm_mesh_alive(m, o->fail_chip) || o->fail_step < 0)) ||
        (o->faults && o->faults->mode != FTM_FAULT_TRAIN))
        return FTM_EINVAL;
    res->steps = o->steps;
    res->batch = o->batch;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    res->ncpus = ncpu > 0 ? (int)ncpu : 1;
    snapshot snap = { 0, NULL, NULL };
    ftm_mesh cur;
    int rc = ftm_mesh_copy(&cur, m);
    if (rc)
        return rc;
    rc = train_all(m, o, cb, res, &cur, &snap);
    ftm_mesh_free(&cur);
    free(snap.params);
    ftm_optim_destroy(snap.optim);
    return rc;
}

void ftm_train_result_free(ftm_train_result *res)
{
    if (res->have_mesh_after)
        ftm_mesh_free(&res->mesh_after);
    res->have_mesh_after = 0;
    free(res->events);
    res->events = NULL;
    res->nevents = 0;
    free(res->died);
    res->died = NULL;
    res->ndied = 0;
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
