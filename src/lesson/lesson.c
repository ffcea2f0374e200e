/* A recorded allreduce with small integers, read back as frames (see
 * include/ftmesh/lesson.h). */
#include "ftmesh/lesson.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"

#include <stdlib.h>
#include <string.h>

int64_t ftm_lesson_input(int chip, size_t k) { return 1 + (int64_t)(((size_t)chip + k) % 9); }

int64_t ftm_lesson_expected(const ftm_mesh *m, size_t k)
{
    int64_t s = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            s += ftm_lesson_input(c, k);
    return s;
}

typedef struct ljob {
    const ftm_sched *s;
    int64_t **bufs;
    size_t count;
} ljob;

static int lesson_chip(ftm_chip *chip, void *arg)
{
    ljob *j = arg;
    int id = ftm_chip_id(chip);
    for (size_t k = 0; k < j->count; k++)
        j->bufs[id][k] = ftm_lesson_input(id, k);
    return ftm_chip_exec(chip, j->s, j->bufs[id]);
}

int ftm_lesson_run(const ftm_mesh *m, const char *algo, size_t count, int fail_chip,
                   uint64_t fail_after, ftm_trace *tr, uint64_t *wrong)
{
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    if (!a || !tr || count == 0 || ftm_trace_nchips(tr) != m->nchips)
        return FTM_EINVAL;
    ftm_sched s;
    int rc = a->build(&s, m, count, FTM_RED_SUM_I64);
    if (rc)
        return rc;
    int64_t **bufs = calloc((size_t)m->nchips, sizeof *bufs);
    rc = bufs ? 0 : FTM_ENOMEM;
    for (int c = 0; c < m->nchips && !rc; c++)
        if (!(bufs[c] = calloc(count, sizeof(int64_t))))
            rc = FTM_ENOMEM;
    ftm_rt *rt = NULL;
    if (!rc)
        rc = ftm_rt_create(&rt, m, NULL);
    if (!rc)
        rc = ftm_rt_set_trace(rt, tr);
    if (!rc && fail_chip >= 0) {
        if (!fail_after) /* halfway through its part of the allreduce */
            fail_after = ftm_sched_chip_packets(&s, fail_chip, ftm_rt_pkt_bytes(rt)) / 2 + 1;
        rc = ftm_rt_fail_chip_after(rt, fail_chip, fail_after);
    }
    ljob j = { &s, bufs, count };
    if (!rc)
        rc = ftm_rt_run(rt, lesson_chip, &j);
    if (wrong)
        *wrong = 0;
    for (int c = 0; c < m->nchips && !rc && wrong; c++)
        for (size_t k = 0; k < count && ftm_mesh_alive(m, c); k++)
            *wrong += bufs[c][k] != ftm_lesson_expected(m, k);
    ftm_rt_destroy(rt);
    for (int c = 0; bufs && c < m->nchips; c++)
        free(bufs[c]);
    free(bufs);
    ftm_sched_free(&s);
    return rc;
}

void ftm_lesson_free(ftm_lesson *l)
{
    for (int k = 0; k < l->nframes && l->frame; k++) {
        free(l->frame[k].vals);
        free(l->frame[k].done);
        free(l->frame[k].x);
    }
    free(l->frame);
    if (l->mesh.chip_dead)
        ftm_mesh_free(&l->mesh);
    memset(l, 0, sizeof *l);
}

/* The first execution of run `run` on each chip: its EXEC event index, or
 * -1. Also the schedule id and the number of frames (max steps + 1). */
static int scan_run(const ftm_trace *tr, int run, long *exec_ev, int *sched, int *nframes)
{
    *sched = -1;
    *nframes = 0;
    for (int c = 0; c < ftm_trace_nchips(tr); c++) {
        size_t n;
        const ftm_event *ev = ftm_trace_events(tr, c, &n);
        exec_ev[c] = -1;
        for (size_t i = 0; i < n; i++) {
            if (ev[i].run != run)
                continue;
            if (ev[i].kind == FTM_EV_EXEC && exec_ev[c] < 0) {
                if (!ftm_trace_snapshot(tr, &ev[i]))
                    return FTM_EINVAL; /* buffer larger than the snapshot limit */
                exec_ev[c] = (long)i;
                *sched = ev[i].sched;
            }
            if (ev[i].kind == FTM_EV_STEP && exec_ev[c] >= 0 && ev[i].step + 2 > *nframes)
                *nframes = ev[i].step + 2;
        }
    }
    if (*sched < 0)
        return FTM_EINVAL;
    if (*nframes == 0)
        *nframes = 1;
    return 0;
}

/* The receive matching a send (same run and execution, by tag), or NULL. */
static const ftm_event *find_recv(const ftm_trace *tr, const ftm_event *send)
{
    size_t n;
    const ftm_event *ev = ftm_trace_events(tr, send->peer, &n);
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == FTM_EV_RECV && ev[i].run == send->run && ev[i].exec == send->exec &&
            ev[i].tag == send->tag)
            return &ev[i];
    return NULL;
}

static int add_xfer(ftm_lesson_frame *f, const ftm_trace *tr, const ftm_event *e)
{
    ftm_lesson_xfer *p = realloc(f->x, sizeof *p * (size_t)(f->nx + 1));
    if (!p)
        return FTM_ENOMEM;
    f->x = p;
    const ftm_sched *s = ftm_trace_sched(tr, e->sched, NULL);
    const ftm_chip_prog *pg = &s->prog[e->chip];
    const ftm_op *op = &pg->ops[pg->steps[e->step].first_op + e->op];
    const ftm_route *rt = &s->routes[op->route];
    const ftm_event *r = find_recv(tr, e);
    ftm_lesson_xfer *x = &f->x[f->nx++];
    x->src = e->chip;
    x->dst = e->peer;
    x->red = r ? r->red : FTM_RED_COPY;
    x->first = (r ? r->off : 0) / 8;
    x->n = e->len / 8;
    x->sent = ftm_trace_snapshot(tr, e);
    x->after = r ? ftm_trace_snapshot(tr, r) : NULL;
    x->nhops = rt->nhops;
    x->dirs = s->dirs + rt->first;
    return 0;
}

/* Fills frame k >= 1 of chip c from its events of the run (and carries
 * the previous frame's values where the chip did not finish step k - 1). */
static int fill_chip(ftm_lesson *l, const ftm_trace *tr, int c, long from)
{
    size_t n, cnt = l->count;
    const ftm_event *ev = ftm_trace_events(tr, c, &n);
    const ftm_event *x = &ev[from];
    memcpy(l->frame[0].vals + (size_t)c * cnt, ftm_trace_snapshot(tr, x), cnt * 8);
    l->frame[0].done[c] = 1;
    for (int k = 1; k < l->nframes; k++)
        memcpy(l->frame[k].vals + (size_t)c * cnt, l->frame[0].vals + (size_t)c * cnt, cnt * 8);
    for (size_t i = (size_t)from + 1; i < n && ev[i].run == x->run && ev[i].exec == x->exec; i++) {
        const ftm_event *e = &ev[i];
        if (e->kind == FTM_EV_STEP && e->step + 1 < l->nframes) {
            ftm_lesson_frame *f = &l->frame[e->step + 1];
            if (!f->phase[0])
                f->phase = e->name;
            const void *v = ftm_trace_snapshot(tr, e);
            if (!v)
                continue; /* cut short: a chip died */
            f->done[c] = 1;
            for (int k = e->step + 1; k < l->nframes; k++)
                memcpy(l->frame[k].vals + (size_t)c * cnt, v, cnt * 8);
        } else if (e->kind == FTM_EV_SEND && e->step + 1 < l->nframes) {
            if (add_xfer(&l->frame[e->step + 1], tr, e))
                return FTM_ENOMEM;
        } else if (e->kind == FTM_EV_FAIL) {
            l->died = c;
            l->died_step = e->step;
        }
    }
    return 0;
}

int ftm_lesson_frames(const ftm_trace *tr, int run, const ftm_mesh *m, ftm_lesson *out)
{
    memset(out, 0, sizeof *out);
    out->died = out->died_step = -1;
    if (!tr || run < 0 || run >= ftm_trace_nruns(tr) || m->nchips != ftm_trace_nchips(tr))
        return FTM_EINVAL;
    long *exec_ev = malloc(sizeof *exec_ev * (size_t)m->nchips);
    int sched, rc = exec_ev ? scan_run(tr, run, exec_ev, &sched, &out->nframes) : FTM_ENOMEM;
    const ftm_sched *s = rc ? NULL : ftm_trace_sched(tr, sched, NULL);
    if (!rc && (rc = ftm_mesh_copy(&out->mesh, m)) == 0) {
        out->algo = s->algo;
        out->count = s->bytes / 8;
        out->frame = calloc((size_t)out->nframes, sizeof *out->frame);
        rc = out->frame ? 0 : FTM_ENOMEM;
    }
    for (int k = 0; k < out->nframes && !rc; k++) {
        out->frame[k].phase = "";
        out->frame[k].vals = calloc((size_t)m->nchips * out->count, sizeof(int64_t));
        out->frame[k].done = calloc((size_t)m->nchips, 1);
        if (!out->frame[k].vals || !out->frame[k].done)
            rc = FTM_ENOMEM;
    }
    for (int c = 0; c < m->nchips && !rc; c++)
        if (exec_ev[c] >= 0)
            rc = fill_chip(out, tr, c, exec_ev[c]);
    free(exec_ev);
    if (rc)
        ftm_lesson_free(out);
    return rc;
}
