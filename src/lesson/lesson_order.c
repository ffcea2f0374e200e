/* A recorded lesson run read back as frames in one global order (see
 * include/ftmesh/lesson.h): the schedule says which transfer belongs to
 * which step of its sender and of its receiver; rounds follow from those
 * waits; the cost model's replay orders the transfers within a round; the
 * recording gives the inputs, the values sent and every chip's result. */
#include "ftmesh/lesson.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* One transfer of the schedule. */
typedef struct oline {
    uint32_t tag;
    int src, dst, s_step, r_step, red, route;
    size_t soff, roff, len; /* bytes */
    const char *phase;
    const int64_t *sent;    /* the recorded snapshot, or NULL */
    double t;               /* modeled completion of its receive */
    int g;                  /* its round */
} oline;

typedef struct order {
    const ftm_sched *s;
    const ftm_mesh *m;
    oline *ln;              /* [nl] */
    int nl;
    int *stepoff;           /* [nchips + 1]: chip c's steps at stepoff[c] .. */
    int *mx;                /* [total steps]: the latest round among a step's lines */
    const int64_t **input;  /* [nchips] the recorded inputs (EXEC), or NULL */
    const int64_t **final;  /* [nchips] the recorded last step's buffer */
} order;

static void order_free(order *o)
{
    free(o->ln);
    free(o->stepoff);
    free(o->mx);
    free(o->input);
    free(o->final);
}

/* The schedule's transfers (both ends known, some bytes), with their
 * steps: o->ln indexed by tag first, then packed. */
static int read_lines(order *o)
{
    const ftm_sched *s = o->s;
    int n = s->nchips;
    oline *by = calloc(s->next_tag ? s->next_tag : 1, sizeof *by);
    unsigned char *have = calloc(s->next_tag ? s->next_tag : 1, 1);
    o->stepoff = calloc((size_t)n + 1, sizeof *o->stepoff);
    int rc = by && have && o->stepoff ? 0 : FTM_ENOMEM;
    ftm_sched_view v = { 0 };
    for (int c = 0; c < n && !rc; c++) {
        ftm_sched_cur cur = { 0 };
        int k = 0, got;
        while ((got = ftm_sched_read_step(s, c, &cur, &v)) == 1) {
            for (int i = 0; i < v.nops; i++) {
                const ftm_op *op = &v.ops[i];
                oline *l = &by[op->tag];
                if (op->kind == FTM_OP_SEND) {
                    l->src = c, l->s_step = k, l->soff = op->off, l->len = op->len;
                    l->route = (int)op->route, l->phase = v.phase ? v.phase : "";
                } else {
                    l->dst = c, l->r_step = k, l->roff = op->off, l->red = op->red;
                }
                have[op->tag] |= op->kind == FTM_OP_SEND ? 1 : 2;
            }
            k++;
        }
        rc = got < 0 ? got : 0;
        o->stepoff[c + 1] = o->stepoff[c] + k;
    }
    ftm_sched_view_free(&v);
    for (uint32_t t = 0; t < s->next_tag && !rc; t++)
        if (have[t] == 3 && by[t].len > 0) {
            by[t].tag = t;
            by[o->nl++] = by[t];
        }
    free(have);
    o->ln = by;
    if (!rc && !(o->mx = calloc((size_t)o->stepoff[n] + 1, sizeof *o->mx)))
        rc = FTM_ENOMEM;
    return rc;
}

/* The recording of run `run`: each chip's inputs (its first EXEC of the
 * run), the values of each send and the buffer after its last step. */
static int read_record(order *o, const ftm_trace *tr, int run, int *sched)
{
    int n = ftm_trace_nchips(tr);
    o->input = calloc((size_t)n, sizeof *o->input);
    o->final = calloc((size_t)n, sizeof *o->final);
    if (!o->input || !o->final)
        return FTM_ENOMEM;
    *sched = -1;
    for (int c = 0; c < n; c++) {
        size_t ne;
        const ftm_event *ev = ftm_trace_events(tr, c, &ne);
        size_t i = 0;
        while (i < ne && !(ev[i].run == run && ev[i].kind == FTM_EV_EXEC))
            i++;
        if (i == ne)
            continue;
        if (!(o->input[c] = ftm_trace_snapshot(tr, &ev[i])))
            return FTM_EINVAL; /* buffer larger than the snapshot limit */
        o->final[c] = o->input[c];
        *sched = ev[i].sched;
        for (size_t j = i + 1; j < ne && ev[j].run == run && ev[j].exec == ev[i].exec; j++)
            if (ev[j].kind == FTM_EV_STEP && ftm_trace_snapshot(tr, &ev[j]))
                o->final[c] = ftm_trace_snapshot(tr, &ev[j]);
    }
    return *sched < 0 ? FTM_EINVAL : 0;
}

/* Attaches each line's recorded values (its SEND event's snapshot). */
static void attach_sent(order *o, const ftm_trace *tr, int run)
{
    for (int i = 0; i < o->nl; i++) {
        oline *l = &o->ln[i];
        size_t ne;
        const ftm_event *ev = ftm_trace_events(tr, l->src, &ne);
        for (size_t j = 0; j < ne && !l->sent; j++)
            if (ev[j].run == run && ev[j].exec == 0 && ev[j].kind == FTM_EV_SEND &&
                ev[j].tag == l->tag && ev[j].snap_len == l->len)
                l->sent = ftm_trace_snapshot(tr, &ev[j]);
    }
}

/* The round a line of chip c's step k may take at the earliest: one after
 * the latest round of c's earlier steps. */
static int earliest(const order *o, int c, int k)
{
    int g = 0;
    for (int j = o->stepoff[c]; j < o->stepoff[c] + k; j++)
        g = o->mx[j] > g ? o->mx[j] : g;
    return g + 1;
}

static int by_time(const void *a, const void *b)
{
    const oline *x = a, *y = b;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* Rounds: the least fixpoint of g(line) = max(earliest(src, s_step),
 * earliest(dst, r_step)), found by passes in the modeled-time order (a
 * pass or two: the replay already runs every step after the ones it waits
 * for). Then the lines sorted by (round, time, tag). */
static int assign_rounds(order *o, int *nrounds)
{
    ftm_cost_params cp;
    ftm_cost_timing tm;
    memset(&tm, 0, sizeof tm);
    ftm_cost_defaults(&cp);
    int trc = ftm_cost_sched_timed(o->s, o->m, &cp, NULL, NULL, &tm);
    for (int i = 0; i < o->nl; i++)
        o->ln[i].t = trc ? 0 : tm.recv_end[o->ln[i].tag];
    ftm_cost_timing_free(&tm);
    qsort(o->ln, (size_t)o->nl, sizeof *o->ln, by_time); /* all rounds 0: by time */
    int changed = 1, passes = 0;
    while (changed) {
        if (passes++ > o->nl + 1)
            return FTM_EINVAL; /* a cycle: the schedule waits on itself */
        changed = 0;
        for (int i = 0; i < o->nl; i++) {
            oline *l = &o->ln[i];
            int a = earliest(o, l->src, l->s_step), b = earliest(o, l->dst, l->r_step);
            int g = a > b ? a : b;
            if (g != l->g)
                l->g = g, changed = 1;
            int *ms = &o->mx[o->stepoff[l->src] + l->s_step], *mr = &o->mx[o->stepoff[l->dst] + l->r_step];
            *ms = g > *ms ? g : *ms;
            *mr = g > *mr ? g : *mr;
        }
    }
    qsort(o->ln, (size_t)o->nl, sizeof *o->ln, by_time);
    *nrounds = o->nl ? o->ln[o->nl - 1].g : 0;
    return 0;
}

static int alloc_frames(ftm_lesson *out, size_t per_chip)
{
    int n = out->mesh.nchips;
    out->frame = calloc((size_t)out->nframes, sizeof *out->frame);
    if (!out->frame)
        return FTM_ENOMEM;
    for (int k = 0; k < out->nframes; k++) {
        ftm_lesson_frame *f = &out->frame[k];
        f->phase = "";
        f->vals = calloc((size_t)n * per_chip, sizeof(int64_t));
        f->done = calloc((size_t)n, 1);
        f->steps_done = calloc((size_t)n, sizeof(int));
        if (!f->vals || !f->done || !f->steps_done)
            return FTM_ENOMEM;
    }
    return 0;
}

/* Chip c's steps finished by the end of each round: a step is finished
 * in the latest round of its own and its earlier steps' lines. */
static void fill_steps_done(ftm_lesson *out, const order *o)
{
    for (int c = 0; c < out->mesh.nchips; c++) {
        int upto = 0;
        out->nsteps[c] = o->stepoff[c + 1] - o->stepoff[c];
        for (int j = o->stepoff[c]; j < o->stepoff[c + 1]; j++) {
            upto = o->mx[j] > upto ? o->mx[j] : upto;
            for (int k = upto; k < out->nframes; k++)
                out->frame[k].steps_done[c]++;
        }
    }
}

/* One line of round f into frame f's transfers, replayed on st (every
 * chip's running buffer); start: the buffers after the round before. */
static void play_line(ftm_lesson *out, const order *o, const oline *l, int64_t *st,
                      const int64_t *start, int64_t **pool)
{
    ftm_lesson_frame *f = &out->frame[l->g];
    ftm_lesson_xfer *x = &f->x[f->nx++];
    size_t cnt = out->count, n = l->len / 8;
    const ftm_route *rt = &o->s->routes[l->route];
    const int64_t *was = start + (size_t)l->src * cnt + l->soff / 8;
    int64_t *y = *pool, *b = y + n, *z = b + n, *d = st + (size_t)l->dst * cnt + l->roff / 8;
    *pool += 3 * n;
    for (size_t j = 0; j < n; j++) {
        y[j] = l->sent ? l->sent[j] : was[j];
        out->mismatch += y[j] != was[j]; /* sent other than what it held */
        b[j] = d[j];
        z[j] = d[j] = l->red ? d[j] + y[j] : y[j];
    }
    *x = (ftm_lesson_xfer){ .src = l->src, .dst = l->dst, .red = l->red, .first = l->roff / 8,
                            .n = n, .sent = y, .before = b, .after = z, .nhops = rt->nhops,
                            .dirs = o->s->dirs + rt->first, .phase = l->phase,
                            .src_step = l->s_step, .t_s = l->t };
    if (!f->phase[0])
        f->phase = l->phase;
    else if (!f->phase2 && strcmp(f->phase, l->phase))
        f->phase2 = l->phase;
}

/* Frames 0 .. nframes - 1 from the sorted lines. */
static int play(ftm_lesson *out, const order *o)
{
    int n = out->mesh.nchips;
    size_t cnt = out->count, all = (size_t)n * cnt, pooln = 0;
    for (int i = 0; i < o->nl; i++)
        pooln += 3 * (o->ln[i].len / 8);
    int64_t *pool = malloc((pooln + 1) * sizeof *pool), *st = malloc(all * sizeof *st);
    int *per = calloc((size_t)out->nframes, sizeof *per);
    out->priv = pool;
    int rc = pool && st && per ? 0 : FTM_ENOMEM;
    for (int i = 0; i < o->nl && !rc; i++)
        per[o->ln[i].g]++;
    for (int k = 1; k < out->nframes && !rc; k++)
        if (!(out->frame[k].x = calloc((size_t)per[k] + 1, sizeof(ftm_lesson_xfer))))
            rc = FTM_ENOMEM;
    for (int c = 0; c < n && !rc; c++)
        if (o->input[c])
            memcpy(out->frame[0].vals + (size_t)c * cnt, o->input[c], cnt * 8);
    if (!rc)
        memcpy(st, out->frame[0].vals, all * 8);
    for (int i = 0, k = 1; k < out->nframes && !rc; k++) {
        const int64_t *start = out->frame[k - 1].vals;
        for (; i < o->nl && o->ln[i].g == k; i++)
            play_line(out, o, &o->ln[i], st, start, &pool);
        memcpy(out->frame[k].vals, st, all * 8);
    }
    for (int k = 0; k < out->nframes && !rc; k++)
        for (int c = 0; c < n; c++)
            out->frame[k].done[c] = o->input[c] != NULL;
    for (int c = 0; c < n && !rc; c++) /* the order's result against the chips' */
        for (size_t j = 0; j < cnt && o->final[c]; j++)
            out->mismatch += st[(size_t)c * cnt + j] != o->final[c][j];
    free(st);
    free(per);
    return rc;
}

int ftm_lesson_frames(const ftm_trace *tr, int run, const ftm_mesh *m, ftm_lesson *out)
{
    memset(out, 0, sizeof *out);
    out->died = out->died_step = -1;
    if (!tr || run < 0 || run >= ftm_trace_nruns(tr) || m->nchips != ftm_trace_nchips(tr))
        return FTM_EINVAL;
    order o;
    memset(&o, 0, sizeof o);
    int sched, nrounds = 0, rc = read_record(&o, tr, run, &sched);
    if (!rc) {
        o.s = ftm_trace_sched(tr, sched, &o.m);
        if (!o.m)
            o.m = m;
        rc = o.s && !o.s->dry ? read_lines(&o) : FTM_EINVAL;
    }
    if (!rc) {
        attach_sent(&o, tr, run);
        rc = assign_rounds(&o, &nrounds);
    }
    if (!rc && (rc = ftm_mesh_copy(&out->mesh, m)) == 0) {
        out->algo = o.s->algo;
        out->count = o.s->bytes / 8;
        out->nframes = nrounds + 1;
        out->nsteps = calloc((size_t)m->nchips, sizeof *out->nsteps);
        rc = out->nsteps ? alloc_frames(out, out->count) : FTM_ENOMEM;
    }
    if (!rc)
        rc = play(out, &o);
    if (!rc)
        fill_steps_done(out, &o);
    order_free(&o);
    if (rc)
        ftm_lesson_free(out);
    return rc;
}
