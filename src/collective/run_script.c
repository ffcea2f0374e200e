/* Allreduces under a fault script (--kill, --repair, --faults, random
 * draws) or with a chip dying mid-run: the runs between failures and
 * repairs, their records, and the recovery (run.c runs each set). */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/runtime.h"
#include "ftmesh/trace.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "run_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The figures of one failure's records, once the next run is built. */
static void finish_records(ftm_allreduce_result *res, const ftm_allreduce_opts *o, run_fault *rf,
                           const ftm_mesh *next, double t0)
{
    double after = o->modeled_s ? o->modeled_s(o->modeled_ctx, NULL, next) : 0;
    for (int i = rf->first; i < res->nevents; i++) {
        ftm_fault_record *e = &res->events[i];
        e->resumed = 0;
        e->chips_after = ftm_mesh_healthy_count(next);
        e->lost_wall_s = i == rf->first ? core_now_s() - t0 : 0;
        /* the run starts over: the iterations before the one it failed
         * in (agreed over the processes), and that one unless a kill
         * struck at its start; a link that died unnoticed in an earlier
         * run fails this one in an allreduce */
        long it = atomic_load(&rf->fail_it), at = it < INT_MAX ? it : e->when;
        long redone = at + (e->earlier || e->phase != FTM_PHASE_START || e->when != at);
        e->lost_modeled_s = i == rf->first ? rf->modeled0 * (double)redone : 0;
        e->modeled_before_s = rf->modeled0;
        e->modeled_after_s = after;
    }
    rf->modeled0 = 0;
}

/* 1 when link event e names a link that died unnoticed (f's list of them,
 * which cur does not know of): a repair of it applies all the same. */
static int unnoticed_link(const ftm_rt_script *f, const ftm_mesh *cur, const ftm_fault_event *e)
{
    if (e->kind != FTM_FAULT_LINK)
        return 0;
    int a = ftm_mesh_chip(cur, e->r, e->c), b = ftm_mesh_chip(cur, e->r2, e->c2);
    int d = ftm_mesh_dir_to(cur, a, b);
    for (int k = 0; d >= 0 && k < f->nsecret; k++) {
        int x = f->secret_chip[k], y = f->secret_dir[k];
        if ((x == a && y == d) || (!e->oneway && x == b && y == ftm_dir_opposite(d)))
            return 1;
    }
    return 0;
}

/* The repairs due at iteration `at` (not yet applied) into cur, with
 * their records; f->until becomes the next repair's iteration (0: none).
 * Returns how many changed cur, or an error. */
static int apply_repairs(ftm_rt_script *f, ftm_mesh *cur, int at, ftm_allreduce_result *res,
                         const ftm_allreduce_opts *o, double lost_wall)
{
    double before = o->modeled_s ? o->modeled_s(o->modeled_ctx, NULL, cur) : 0;
    int first = res->nevents;
    ftm_mesh old;
    int rc = ftm_mesh_copy(&old, cur), copied = !rc, grew = 0;
    for (int i = 0; i < f->script.n && !rc; i++) {
        const ftm_fault_event *e = &f->script.ev[i];
        if (!e->repair || f->fired[i] || e->when > at)
            continue;
        f->fired[i] = ftm_fault_apply(cur, e) && !unnoticed_link(f, cur, e) ? -1 : 1;
        f->logged[i] = 1;
        if (f->fired[i] < 0 && !ftm_rt_script_kill_skipped(f, cur, e)) {
            char what[64]; /* the pre-run check found it dead then: they disagree */
            ftm_fault_what(e, what, sizeof what);
            snprintf(res->detail, sizeof res->detail, "repair of %s at iteration %ld: nothing "
                     "to repair", what, e->when);
            rc = FTM_EINTERNAL;
            break;
        }
        if (f->fired[i] > 0)
            ftm_rt_script_repaired(f, &old, e);
        grew += f->fired[i] > 0;
        ftm_fault_record *r = &res->events[res->nevents++];
        memset(r, 0, sizeof *r);
        r->when = e->when;
        r->repair = 1;
        r->noticed = f->fired[i] > 0; /* else its kill never struck (a race of two victims) */
        ftm_fault_what(e, r->what, sizeof r->what);
        r->event = *e;
        snprintf(r->detected_by, sizeof r->detected_by, "%s", r->noticed
                 ? "repaired: joins at the start of the iteration"
                 : "skipped: its kill did not strike (what it names had died already)");
        r->resumed = 0;
        r->modeled_before_s = before;
    }
    if (copied)
        ftm_mesh_free(&old);
    double after = res->nevents > first && o->modeled_s ? o->modeled_s(o->modeled_ctx, NULL, cur) : 0;
    for (int i = first; i < res->nevents; i++) {
        res->events[i].chips_after = ftm_mesh_healthy_count(cur);
        res->events[i].modeled_after_s = after;
        /* the run it stopped: its iterations run again */
        res->events[i].lost_modeled_s = i == first ? before * at : 0;
        res->events[i].lost_wall_s = i == first ? lost_wall : 0;
    }
    f->until = 0;
    for (int i = 0; i < f->script.n; i++)
        if (f->script.ev[i].repair && !f->fired[i] && (!f->until || f->script.ev[i].when < f->until))
            f->until = f->script.ev[i].when;
    return rc ? rc : grew;
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

/* After a failure on cur, with next the mesh left: the chips that died
 * (alive in cur, dead in next; a host's in row-major order) appended to
 * res->died, and each survivor's RECOVER event in the trace. */
static int note_deaths(ftm_allreduce_result *res, const ftm_mesh *cur, const ftm_mesh *next,
                       ftm_trace *tr)
{
    for (int c = 0; c < cur->nchips; c++) {
        if (!ftm_mesh_alive(cur, c) || ftm_mesh_alive(next, c))
            continue;
        int *d = realloc(res->died, sizeof *d * (size_t)(res->ndied + 1));
        if (!d)
            return FTM_ENOMEM;
        res->died = d;
        res->died[res->ndied++] = c;
    }
    if (tr)
        note_recovery(tr, next);
    return 0;
}

/* Appends the run just made on m (rf: what it ran), started by the
 * failure or repair of iteration when (-1: the first run). */
static int note_run(ftm_allreduce_result *res, long when, int after, const ftm_mesh *m,
                    const run_fault *rf)
{
    ftm_allreduce_ran *r = realloc(res->runs, sizeof *r * (size_t)(res->nruns + 1));
    if (!r)
        return FTM_ENOMEM;
    res->runs = r;
    /* the records that started it, since the run before started */
    for (int i = res->nruns ? r[res->nruns - 1].after : 0; i < after; i++) {
        ftm_fault_record *e = &res->events[i];
        if (!e->noticed)
            continue;
        e->schedule_before = res->nruns ? r[res->nruns - 1].schedule : NULL;
        e->algo_after = rf->algo;
        e->schedule_after = rf->schedule;
        e->fallback_after = rf->fallback;
    }
    r[res->nruns++] = (ftm_allreduce_ran){ when, after, ftm_mesh_healthy_count(m), rf->algo,
                                           rf->schedule, rf->fallback };
    return 0;
}

/* Runs until one run ends without a failure; each failure's recovery
 * gives the next run its mesh, with new rings; a repair stops the run at
 * its iteration, the mesh grows, and all the iterations run again. */
static int run_script(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    ftm_rt_script f;
    run_fault rf = { .f = &f };
    ftm_mesh cur;
    memset(res, 0, sizeof *res);
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
    ftm_allreduce_opts oc = *o;
    char detail[sizeof res->detail];
    int died = -1, at = 0;
    long since = -1; /* what started this run: the failure's or repair's iteration */
    double t_run = core_now_s(); /* when the run before started */
    for (int k = 0;; k++) {
        double t0 = core_now_s();
        int grew = apply_repairs(&f, &cur, at, res, o, at ? t0 - t_run : 0);
        if ((rc = grew < 0 ? grew : 0))
            break;
        t_run = t0;
        /* grown (also before the first iteration): the caller's schedule
         * is for the mesh without what joined: new rings */
        oc.sched = at || grew ? NULL : oc.sched;
        memcpy(detail, res->detail, sizeof detail);
        int after = res->nevents;
        rf.algo = NULL;
        rc = run_set(&cur, NULL, &oc, 1, res, &rf);
        memcpy(res->detail, detail, sizeof detail);
        int e = rf.algo ? note_run(res, since, after, &cur, &rf) : 0;
        if (e) {
            rc = e;
            break;
        }
        died = died < 0 ? res->died_chip : died;
        at = rc == AR_REPAIR_STOP ? (int)f.until : 0;
        since = rc == AR_REPAIR_STOP ? at : since;
        if (rc == AR_REPAIR_STOP && k <= 2 * f.script.n + 2)
            continue;
        if ((rc != FTM_ECHIPDEAD && rc != FTM_ELINKDEAD) || !rf.have_next || k > 2 * f.script.n + 2)
            break;
        finish_records(res, o, &rf, &rf.next, t0);
        since = rf.first < res->nevents ? res->events[rf.first].when : since;
        if ((rc = note_deaths(res, &cur, &rf.next, o->trace)))
            break;
        ftm_mesh_free(&cur);
        cur = rf.next;
        rf.have_next = 0;
        oc.sched = NULL; /* the mesh changed: new rings */
        free(res->stuck);
        res->stuck = NULL;
        res->nstuck = 0;
    }
    if (rf.have_next)
        ftm_mesh_free(&rf.next);
    if (!rc) { /* dead links nothing needed again: the allreduce as it was */
        int first = res->nevents;
        res->nevents += ftm_rt_script_unnoticed(&f, -1, res->events + first, f.script.n + 1 - first);
        double now = res->nevents > first && o->modeled_s ? o->modeled_s(o->modeled_ctx, NULL, &cur) : 0;
        for (int i = first; i < res->nevents; i++)
            res->events[i].modeled_before_s = res->events[i].modeled_after_s = now;
    }
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

/* fail_during is the script of one event, fail_chip@0:N (N the
 * fail_after_pkts, or the middle of its packets): the same run, records
 * and trace as that script. */
static int run_fail_during(const ftm_mesh *m, const ftm_allreduce_opts *o,
                           ftm_allreduce_result *res)
{
    memset(res, 0, sizeof *res);
    res->died_chip = -1;
    if (o->fail_chip < 0 || o->fail_chip >= m->nchips || !ftm_mesh_alive(m, o->fail_chip))
        return FTM_EINVAL;
    ftm_fault_event e = { .kind = FTM_FAULT_CHIP, .r = ftm_mesh_row(m, o->fail_chip),
                          .c = ftm_mesh_col(m, o->fail_chip), .phase = FTM_PHASE_ALLREDUCE,
                          .pkts = o->fail_after_pkts ? (int64_t)o->fail_after_pkts
                                                     : FTM_FAULT_MID };
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_ALLREDUCE);
    int rc = ftm_fault_script_add(&s, &e);
    ftm_allreduce_opts os = *o;
    os.fail_during = 0;
    os.faults = &s;
    rc = rc ? rc : run_script(m, &os, res);
    ftm_fault_script_free(&s);
    return rc;
}

int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res)
{
    if (o->sched && (o->sched->packed || o->sched->dry)) { /* chips need ops in place */
        memset(res, 0, sizeof *res);
        res->died_chip = -1;
        return FTM_EINVAL;
    }
    if (o->faults)
        return run_script(m, o, res);
    if (!o->fail_during)
        return run_set(m, NULL, o, 1, res, NULL);
    return run_fail_during(m, o, res);
}

