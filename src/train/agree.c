/* What the processes of a run agree on after it (include/ftmesh/mpi.h):
 * the final parameters and the replicas' comparison, a divergence, the
 * state the survivors of a failure resume from, the steps reported and
 * the lead's figures. Each is a collective of the runtime (ftm_rt_bcast,
 * ftm_rt_max_f64, ftm_rt_sum_*), which is a no-op in one process, so every
 * process makes the same calls in the same order. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "train_int.h"
#include "trainer.h"

/* The lead's final parameters into res->params (every process), and
 * every replica compared with them where it lives. */
int train_compare_replicas(trainer *t)
{
    ftm_train_result *res = t->res;
    int n = t->m->nchips, rc = 0;
    size_t np = res->nparams;
    uint64_t *differs = calloc((size_t)n, sizeof *differs);
    if (!(res->params = malloc(sizeof(float) * np)) || !differs)
        rc = FTM_ENOMEM;
    if (!rc && t->cs[t->lead].m)
        memcpy(res->params, ftm_model_params(t->cs[t->lead].m), sizeof(float) * np);
    if (!rc)
        rc = ftm_rt_bcast(t->rt, res->params, sizeof(float) * np, t->lead);
    for (int id = 0; id < n && !rc; id++) {
        const chip_st *c = &t->cs[id];
        if (ftm_mesh_alive(t->m, id) && c->m)
            differs[id] = memcmp(ftm_model_params(c->m), res->params, sizeof(float) * np) != 0;
    }
    if (!rc)
        rc = ftm_rt_sum_u64(t->rt, differs, (size_t)n);
    if (!rc) {
        res->replicas_equal = 1;
        res->replica_mismatch_chip = -1;
    }
    for (int id = 0; id < n && !rc && res->replicas_equal; id++)
        if (ftm_mesh_alive(t->m, id) && differs[id]) {
            res->replicas_equal = 0;
            res->replica_mismatch_chip = id;
        }
    free(differs);
    return rc;
}

/* This attempt's CPU figures and sgemm counters, this process's chips'
 * summed, then over the processes, added to res: every attempt's, so
 * that a run that recovered from a failure or stopped for a repair counts
 * the steps of every attempt. No allocation: every process reaches the
 * collective. */
int train_sum_counters(trainer *t)
{
    ftm_train_result *res = t->res;
    ftm_gemm_stats g;
    memset(&g, 0, sizeof g);
    double v[7] = { 0 }; /* math, hook, grad, optim CPU; flops, seconds, calls */
    for (int id = 0; id < t->m->nchips; id++) {
        const chip_st *c = &t->cs[id];
        if (!c->m)
            continue; /* not this process's, or dead from the start */
        ftm_nn_gemm_stats_add(&g, ftm_model_gemm_stats(c->m));
        v[0] += c->math_cpu;
        v[1] += c->hook_cpu;
        v[2] += c->grad_cpu;
        v[3] += c->optim_cpu;
    }
    v[4] = g.flops;
    v[5] = g.seconds;
    v[6] = (double)g.calls; /* exact below 2^53 calls */
    int rc = ftm_rt_sum_f64(t->rt, v, 7);
    if (rc)
        return rc;
    /* the shapes stay this process's (the report prints the totals) */
    g.flops = v[4];
    g.seconds = v[5];
    g.calls = (uint64_t)v[6];
    ftm_nn_gemm_stats_add(&res->gemm, &g);
    res->math_cpu_s += v[0];
    res->hook_cpu_s += v[1];
    res->grad_cpu_s += v[2];
    res->optim_cpu_s += v[3];
    return 0;
}

/* After FTM_EDIVERGED from a chip's forward/backward (no loss reported):
 * the earliest such step (over every process), its loss not a number. */
int train_note_divergence(trainer *t, const ftm_mesh *m)
{
    ftm_train_result *res = t->res;
    double *dv = calloc((size_t)m->nchips, sizeof *dv);
    if (!dv)
        return FTM_ENOMEM;
    for (int id = 0; id < m->nchips; id++)
        dv[id] = ftm_mesh_alive(m, id) ? (double)t->cs[id].diverged : 0;
    int rc = ftm_rt_max_f64(t->rt, dv, (size_t)m->nchips);
    for (int id = 0; id < m->nchips && !rc && res->diverged_step < 0; id++) {
        long s = (long)dv[id] - 1;
        for (int k = id + 1; s >= 0 && k < m->nchips; k++)
            if (dv[k] > 0 && (long)dv[k] - 1 < s)
                s = (long)dv[k] - 1;
        if (s >= 0) {
            res->diverged_step = s;
            res->diverged_range = 1; /* FTM_ERANGE of the fixed-point sums */
            res->step[s].step = s;
            res->step[s].loss = NAN;
        }
    }
    free(dv);
    return rc;
}

int train_snap_alloc(snapshot *snap, const ftm_train_opts *o, size_t np)
{
    if (snap->params)
        return 0;
    ftm_optim_config oc = o->optim;
    if (!oc.kind)
        ftm_optim_config_default(&oc, o->model.kind);
    if (!(snap->params = malloc(sizeof(float) * np)))
        return FTM_ENOMEM;
    return ftm_optim_create(&snap->optim, &oc, np);
}

/* After a failure the survivors (alive in next) agree on R, the first step
 * not reported: every survivor has finished R - 1 and none R + 1. One that
 * finished R takes the state it kept from before that update; its process
 * gives it to the others. */
int train_take_snapshot(trainer *t, const ftm_mesh *next, snapshot *snap)
{
    long R = t->reported;
    int n = next->nchips, best = -1;
    double *done = calloc((size_t)n, sizeof *done);
    if (!done)
        return FTM_ENOMEM;
    for (int id = 0; id < n; id++)
        done[id] = t->cs[id].m ? (double)t->cs[id].done : 0;
    int rc = ftm_rt_max_f64(t->rt, done, (size_t)n);
    for (int id = 0; id < n && best < 0 && !rc; id++)
        if (ftm_mesh_alive(next, id) && ftm_mesh_alive(t->m, id) &&
            ((long)done[id] == R || (long)done[id] == R + 1))
            best = id;
    int back = best >= 0 && (long)done[best] == R + 1;
    free(done);
    if (rc)
        return rc;
    if (best < 0)
        return FTM_EALLDEAD;
    if ((rc = train_snap_alloc(snap, t->o, t->res->nparams)))
        return rc;
    const chip_st *c = &t->cs[best];
    size_t bytes = sizeof(float) * t->res->nparams;
    float *mom[2];
    ftm_optim_moments(snap->optim, &mom[0], &mom[1]);
    if (c->m) { /* this process runs it */
        memcpy(snap->params, back ? c->prev_params : ftm_model_params(c->m), bytes);
        if ((rc = ftm_optim_copy_state(snap->optim, back ? c->prev_o : c->o)))
            return rc;
    }
    snap->done = R;
    rc = ftm_rt_bcast(t->rt, snap->params, bytes, best);
    for (int k = 0; k < 2 && !rc; k++)
        if (mom[k])
            rc = ftm_rt_bcast(t->rt, mom[k], bytes, best);
    return rc;
}

/* What the lead's process alone knows after a run (its float --check
 * figures, checkpoints, their error): fields of ftm_train_result that
 * every process takes from it. */
#define LEAD_FIELD(f) { offsetof(ftm_train_result, f), sizeof(((ftm_train_result *)0)->f) }
static const struct { size_t off, size; } lead_fields[] = {
    LEAD_FIELD(max_grad_rel_diff), LEAD_FIELD(max_step_loss_rel_diff),
    LEAD_FIELD(check_cpu_s),       LEAD_FIELD(modeled_bn_s),
    LEAD_FIELD(grad_diff_step),    LEAD_FIELD(diverged_step),
    LEAD_FIELD(checkpoints),       LEAD_FIELD(bn_calls),
    LEAD_FIELD(grad_diff_name),    LEAD_FIELD(detail),
};
#define NLEAD (sizeof lead_fields / sizeof lead_fields[0])

static int sync_lead(trainer *t)
{
    unsigned char buf[512], *res = (unsigned char *)t->res;
    size_t n = 0;
    for (size_t k = 0; k < NLEAD; n += lead_fields[k++].size) {
        if (n + lead_fields[k].size > sizeof buf) /* a field grew: grow buf */
            return FTM_EINVAL;
        memcpy(buf + n, res + lead_fields[k].off, lead_fields[k].size);
    }
    int rc = ftm_rt_bcast(t->rt, buf, n, t->lead);
    n = 0;
    for (size_t k = 0; k < NLEAD && !rc; n += lead_fields[k++].size)
        memcpy(res + lead_fields[k].off, buf + n, lead_fields[k].size);
    return rc;
}

/* After a run: the processes agree on the steps reported (the records of
 * the process whose reporter got furthest, the lowest such chip), the stop
 * request, the lead's figures and the CPU of the steps. A process whose
 * reporter saw fewer steps (or that runs no chip) reports the rest now. */
int train_sync_run(trainer *t)
{
    ftm_train_result *res = t->res;
    int n = t->m->nchips;
    double *v = calloc((size_t)n + 4, sizeof *v);
    if (!v)
        return FTM_ENOMEM;
    if (t->reporter >= 0)
        v[t->reporter] = (double)t->reported + 1;
    v[n] = atomic_load(&t->halt);
    int here = t->rj && t->rj->told; /* the reporter's process told the repairs */
    v[n + 1] = here;
    v[n + 2] = t->cpu_set ? t->cpu_local : 0;
    v[n + 3] = t->cpu_set;
    int rc = ftm_rt_max_f64(t->rt, v, (size_t)n + 2);
    if (!rc)
        rc = ftm_rt_sum_f64(t->rt, v + n + 2, 2);
    if (!rc && t->rj && v[n + 1] > 0 && !here)
        train_rejoin_tell(t); /* before the steps it tells below */
    int src = -1;
    for (int id = 0; id < n; id++)
        if (v[id] > 0 && (src < 0 || v[id] > v[src]))
            src = id;
    long seen = t->reported, R = src >= 0 ? (long)v[src] - 1 : t->start;
    if (!rc && R > t->start)
        rc = ftm_rt_bcast(t->rt, res->step + t->start,
                          sizeof *res->step * (size_t)(R - t->start), src);
    if (!rc && v[n])
        atomic_store(&t->halt, (int)v[n]);
    if (!rc && v[n + 3] > 0)
        res->cpu_s += v[n + 2]; /* every attempt's */
    free(v);
    for (long s = seen; s < R && !rc; s++)
        if (t->cb && t->cb->step)
            t->cb->step(t->cb->ctx, &res->step[s]);
    if (!rc) {
        t->reported = R > t->reported ? R : t->reported;
        rc = sync_lead(t);
    }
    return rc;
}

