/* A recorded run on the wall or the modeled clock (see timeline.h). */
#include "ftmesh/timeline.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* One execution of a schedule, shared by every chip that ran it. */
typedef struct tl_inst {
    int run, exec, sched;
    double offset;         /* modeled start of the execution */
    double len;            /* its modeled length: the schedule's time, or
                            * where it stopped when a failure cut it */
    long steps, want;      /* steps the chips recorded, steps they run */
    int failed;            /* a chip died in it */
    double end;            /* a cut one: its last modeled end */
} tl_inst;

static int inst_cmp(const void *a, const void *b)
{
    const tl_inst *x = a, *y = b;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    return (x->exec > y->exec) - (x->exec < y->exec);
}

static const tl_inst *inst_find(const tl_inst *v, size_t n, int run, int exec)
{
    tl_inst key = { .run = run, .exec = exec };
    return bsearch(&key, v, n, sizeof *v, inst_cmp);
}

static int push_slice(ftm_timeline *tl, size_t *cap, const ftm_event *e, double t0, double t1)
{
    if (tl->n == *cap) {
        size_t c = *cap ? 2 * *cap : 1024;
        ftm_slice *p = realloc(tl->slice, c * sizeof *p);
        if (!p)
            return FTM_ENOMEM;
        tl->slice = p;
        *cap = c;
    }
    tl->slice[tl->n].ev = e;
    tl->slice[tl->n].t0 = t0;
    tl->slice[tl->n].t1 = t1 > t0 ? t1 : t0;
    tl->n++;
    return 0;
}

static void finish_span(ftm_timeline *tl, double shift)
{
    double lo = 0, hi = 0;
    for (size_t i = 0; i < tl->n; i++) {
        tl->slice[i].t0 -= shift;
        tl->slice[i].t1 -= shift;
        if (i == 0 || tl->slice[i].t0 < lo)
            lo = tl->slice[i].t0;
        if (i == 0 || tl->slice[i].t1 > hi)
            hi = tl->slice[i].t1;
    }
    tl->span_s = tl->n ? hi - lo : 0;
}

static int build_wall(const ftm_trace *tr, ftm_timeline *tl)
{
    size_t cap = 0;
    double first = 0;
    int any = 0;
    for (int c = 0; c < ftm_trace_nchips(tr); c++) {
        size_t n;
        const ftm_event *ev = ftm_trace_events(tr, c, &n);
        for (size_t i = 0; i < n; i++) {
            if (push_slice(tl, &cap, &ev[i], ev[i].t0, ev[i].t1))
                return FTM_ENOMEM;
            if (!any || ev[i].t0 < first)
                first = ev[i].t0;
            any = 1;
        }
    }
    finish_span(tl, first);
    return 0;
}

static int modeled_times(const ftm_event *e, const tl_inst *in, const ftm_cost_timing *tm,
                         double *t0, double *t1);

/* Executions a failure cut short (a chip died in one, or the chips ran
 * fewer steps than their programs hold) end where their last recorded op
 * or step ends on the modeled clock, not at the whole schedule's time. */
static void cut_insts(const ftm_trace *tr, const ftm_cost_timing *tm, tl_inst *v, size_t n)
{
    for (int pass = 0; pass < 2; pass++) /* count, then measure the cut ones */
        for (int c = 0; c < ftm_trace_nchips(tr); c++) {
            size_t ne;
            const ftm_event *ev = ftm_trace_events(tr, c, &ne);
            for (size_t i = 0; i < ne; i++) {
                tl_inst *in = (tl_inst *)inst_find(v, n, ev[i].run, ev[i].exec);
                if (!in || ev[i].sched != in->sched)
                    continue;
                if (pass == 0) {
                    const ftm_mesh *m;
                    if (ev[i].kind == FTM_EV_EXEC)
                        in->want += ftm_trace_sched(tr, in->sched, &m)->prog[c].nsteps;
                    in->steps += ev[i].kind == FTM_EV_STEP;
                    in->failed |= ev[i].kind == FTM_EV_FAIL;
                    continue;
                }
                double t0, t1; /* offset 0 still: times from its start */
                if ((in->failed || in->steps < in->want) && ev[i].kind != FTM_EV_EXEC &&
                    modeled_times(&ev[i], in, tm, &t0, &t1) && t1 > in->end)
                    in->end = t1;
            }
        }
    for (size_t i = 0; i < n; i++)
        if ((v[i].failed || v[i].steps < v[i].want) && v[i].end < v[i].len)
            v[i].len = v[i].end;
}

/* The executions, in order, with their modeled offsets. */
static int collect_insts(const ftm_trace *tr, const ftm_cost_timing *tm, tl_inst **out,
                         size_t *nout)
{
    size_t n = 0, cap = 0;
    tl_inst *v = NULL;
    for (int c = 0; c < ftm_trace_nchips(tr); c++) {
        size_t ne;
        const ftm_event *ev = ftm_trace_events(tr, c, &ne);
        for (size_t i = 0; i < ne; i++) {
            if (ev[i].kind != FTM_EV_EXEC || ev[i].sched < 0)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                tl_inst *p = realloc(v, cap * sizeof *p);
                if (!p) {
                    free(v);
                    return FTM_ENOMEM;
                }
                v = p;
            }
            v[n++] = (tl_inst){ .run = ev[i].run, .exec = ev[i].exec, .sched = ev[i].sched };
        }
    }
    if (n)
        qsort(v, n, sizeof *v, inst_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && inst_cmp(&v[k - 1], &v[i]) == 0)
            continue; /* the same execution seen by another chip */
        v[k] = v[i];
        v[k].len = tm[v[k].sched].time_s;
        k++;
    }
    *out = v;
    *nout = k;
    cut_insts(tr, tm, v, k);
    double t = 0;
    for (size_t i = 0; i < k; i++) {
        v[i].offset = t;
        t += v[i].len;
    }
    return 0;
}

/* Modeled times of one event, or 0 if it has none on this clock. */
static int modeled_times(const ftm_event *e, const tl_inst *in, const ftm_cost_timing *tm,
                         double *t0, double *t1)
{
    const ftm_cost_timing *m = &tm[in->sched];
    double o = in->offset;
    int si = e->step >= 0 ? m->step_first[e->chip] + e->step : -1;
    switch (e->kind) {
    case FTM_EV_EXEC:
        *t0 = o;
        *t1 = o + in->len;
        return 1;
    case FTM_EV_STEP:
        *t0 = o + m->step_start[si];
        *t1 = o + m->step_end[si];
        return 1;
    case FTM_EV_SEND:
    case FTM_EV_FORWARD:
        *t0 = o + m->xfer_start[e->tag];
        *t1 = o + m->xfer_end[e->tag];
        return 1;
    case FTM_EV_RECV:
        *t0 = o + m->xfer_start[e->tag];
        *t1 = o + m->recv_end[e->tag];
        return 1;
    case FTM_EV_FAIL: /* after what it did in that step, as on the wall clock */
        *t0 = *t1 = o + (si >= 0 ? m->step_end[si] : 0);
        return 1;
    default:
        return 0;
    }
}

static int build_modeled(const ftm_trace *tr, const ftm_cost_params *p, ftm_timeline *tl)
{
    int ns = ftm_trace_nscheds(tr), rc = 0;
    ftm_cost_timing *tm = calloc((size_t)(ns ? ns : 1), sizeof *tm);
    if (!tm)
        return FTM_ENOMEM;
    for (int i = 0; i < ns && !rc; i++) {
        const ftm_mesh *m;
        const ftm_sched *s = ftm_trace_sched(tr, i, &m);
        ftm_cost_result res;
        rc = ftm_cost_sched_timed(s, m, p, &res, NULL, &tm[i]);
    }
    tl_inst *inst = NULL;
    size_t ninst = 0, cap = 0;
    if (!rc)
        rc = collect_insts(tr, tm, &inst, &ninst);
    for (int c = 0; c < ftm_trace_nchips(tr) && !rc; c++) {
        size_t n;
        const ftm_event *ev = ftm_trace_events(tr, c, &n);
        for (size_t i = 0; i < n && !rc; i++) {
            if (ev[i].sched < 0)
                continue;
            const tl_inst *in = inst_find(inst, ninst, ev[i].run, ev[i].exec);
            double t0, t1;
            if (in && in->sched == ev[i].sched && modeled_times(&ev[i], in, tm, &t0, &t1))
                rc = push_slice(tl, &cap, &ev[i], t0, t1);
        }
    }
    finish_span(tl, 0);
    for (int i = 0; i < ns; i++)
        ftm_cost_timing_free(&tm[i]);
    free(tm);
    free(inst);
    return rc;
}

int ftm_timeline_build(const ftm_trace *tr, int clock, const ftm_cost_params *p,
                       ftm_timeline *out)
{
    memset(out, 0, sizeof *out);
    if (!tr || (clock != FTM_CLOCK_WALL && clock != FTM_CLOCK_MODELED))
        return FTM_EINVAL;
    ftm_cost_params def;
    if (!p) {
        ftm_cost_defaults(&def);
        p = &def;
    }
    int rc = clock == FTM_CLOCK_WALL ? build_wall(tr, out) : build_modeled(tr, p, out);
    if (rc)
        ftm_timeline_free(out);
    return rc;
}

void ftm_timeline_free(ftm_timeline *tl)
{
    free(tl->slice);
    memset(tl, 0, sizeof *tl);
}
