/* Cost model: a deterministic discrete-event replay of a schedule.
 *
 * Events are step starts, kept in a binary heap ordered by (time, chip);
 * each chip has at most one pending event. When a step starts, its sends
 * reserve their links in op order (greedy: a transfer starts when all its
 * links are free, then holds them), so the result depends only on the
 * schedule, the mesh and the parameters. A step ends once every receive's
 * matching send has been issued: then its end time is known and the next
 * step's start is pushed. Every end time is >= the time of the event that
 * resolved it, so events are processed in non-decreasing time.
 *
 * Default hop latency: 1 us. Published TPU-v3 numbers give link bandwidth
 * but not a per-hop latency; a microsecond is the order of a DMA issue plus
 * an ICI router traversal on such interconnects, and it makes the
 * latency-bound small-message regime visible (a 1024-chip 1-D ring pays
 * 2 * 1023 us) without mattering for 100 MB gradients. It is a parameter
 * (--hop-us) so users can vary it.
 */
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

void ftm_cost_defaults(ftm_cost_params *p)
{
    p->link_Bps = 100e9;
    p->hop_s = 1e-6;
    p->hbm_Bps = 900e9;
}

typedef struct ev { double t; int chip; } ev;

typedef struct chip_st {
    int cur;        /* index of the running (or next) step */
    int running;    /* 1 while step cur has started and not ended */
    int pending;    /* receives of step cur whose send is not issued yet */
    double end;     /* running max of completion times in step cur */
} chip_st;

/* Per transfer (tag), in one record: the replay touches tags in a random
 * order, so one cache line per tag instead of one per array (the replay of
 * a 1024-chip ring is bound by these misses). 16 bytes, one per transfer:
 * the receiving chip is the route's end and the receive's own cost follows
 * from the send (same length and reduction), so neither is stored. */
typedef struct tagst {
    double arrival;        /* when the send arrives (once known) */
    int rcv_step;          /* step of the receive */
    unsigned char known;   /* the send has been issued */
    unsigned char nsend;   /* sends with this tag (index_tags) */
    unsigned char nrecv;   /* receives with this tag (index_tags) */
} tagst;

typedef struct replay {
    const ftm_sched *s;
    const ftm_mesh *m;
    ftm_cost_params p;
    chip_st *st;          /* [nchips] */
    tagst *tg;            /* [ntags] */
    double *link_free;    /* [nchips * 4] */
    uint64_t *lbytes;     /* [nchips * 4] */
    ev *heap;
    int nheap;
    ftm_cost_timing *tm;  /* per-op times, or NULL */
} replay;

/* Cache prefetch hint (a no-op where the compiler has none): the replay
 * jumps between chips' programs and per-tag records, and a miss costs more
 * than the work done per op. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

static int ev_less(const ev *a, const ev *b)
{
    return a->t < b->t || (a->t == b->t && a->chip < b->chip);
}

static void heap_push(replay *r, double t, int chip)
{
    int i = r->nheap++;
    r->heap[i].t = t;
    r->heap[i].chip = chip;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!ev_less(&r->heap[i], &r->heap[up]))
            break;
        ev tmp = r->heap[i];
        r->heap[i] = r->heap[up];
        r->heap[up] = tmp;
        i = up;
    }
}

static ev heap_pop(replay *r)
{
    ev top = r->heap[0];
    r->heap[0] = r->heap[--r->nheap];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, rr = l + 1, m = i;
        if (l < r->nheap && ev_less(&r->heap[l], &r->heap[m]))
            m = l;
        if (rr < r->nheap && ev_less(&r->heap[rr], &r->heap[m]))
            m = rr;
        if (m == i)
            break;
        ev tmp = r->heap[i];
        r->heap[i] = r->heap[m];
        r->heap[m] = tmp;
        i = m;
    }
    return top;
}

static double recv_cost(const replay *r, const ftm_op *op)
{
    return op->red == FTM_RED_COPY ? 0.0 : (double)op->len / r->p.hbm_Bps;
}

/* Ends chip c's running step (its pending count reached zero). */
static void end_step(replay *r, int c)
{
    chip_st *cs = &r->st[c];
    if (r->tm)
        r->tm->step_end[r->tm->step_first[c] + cs->cur] = cs->end;
    cs->running = 0;
    cs->cur++;
    const ftm_chip_prog *pg = &r->s->prog[c];
    if (cs->cur < pg->nsteps) {
        /* The next step's record and ops (ops are stored step after step):
         * fetched while other chips' events run. */
        const ftm_step *done = &pg->steps[cs->cur - 1];
        PREFETCH(&pg->steps[cs->cur]);
        PREFETCH(&pg->ops[done->first_op + done->nops]);
        PREFETCH(&pg->ops[done->first_op + done->nops] + 1);
        PREFETCH(&pg->ops[done->first_op + done->nops] + 3);
        heap_push(r, cs->end, c);
    }
}

/* Issues a send at time t: reserves its links, records its arrival and
 * tells the receiver if it is waiting for it. */
static int issue_send(replay *r, const ftm_op *op, int c, double t, double *finish)
{
    const ftm_route *rt = &r->s->routes[op->route];
    if (rt->src != c || rt->dst != op->peer)
        return FTM_EINVAL;
    double start = t, dur;
    if (rt->nhops == 0) {
        dur = (double)op->len / r->p.hbm_Bps;
    } else {
        int at = c;
        for (int h = 0; h < rt->nhops; h++) {
            int d = r->s->dirs[rt->first + h];
            int nb = ftm_mesh_neighbor(r->m, at, d);
            if (nb < 0)
                return FTM_EINVAL;
            double f = r->link_free[at * FTM_NDIRS + d];
            if (f > start)
                start = f;
            at = nb;
        }
        if (at != rt->dst)
            return FTM_EINVAL;
        dur = (double)rt->nhops * r->p.hop_s + (double)op->len / r->p.link_Bps;
        at = c;
        for (int h = 0; h < rt->nhops; h++) {
            int d = r->s->dirs[rt->first + h];
            r->link_free[at * FTM_NDIRS + d] = start + dur;
            r->lbytes[at * FTM_NDIRS + d] += op->len;
            at = ftm_mesh_neighbor(r->m, at, d);
        }
    }
    *finish = start + dur;
    if (r->tm) {
        r->tm->xfer_start[op->tag] = start;
        r->tm->xfer_end[op->tag] = *finish;
    }
    r->tg[op->tag].arrival = *finish;
    r->tg[op->tag].known = 1;
    int rc = rt->dst;
    chip_st *rs = &r->st[rc];
    if (rc != c && rs->running && rs->cur == r->tg[op->tag].rcv_step) {
        double done = *finish + recv_cost(r, op);
        if (done > rs->end)
            rs->end = done;
        if (--rs->pending == 0)
            end_step(r, rc);
    }
    return 0;
}

/* Starts step st[c].cur of chip c at time t. */
static int start_step(replay *r, int c, double t)
{
    chip_st *cs = &r->st[c];
    const ftm_chip_prog *pg = &r->s->prog[c];
    const ftm_step *stp = &pg->steps[cs->cur];
    cs->running = 1;
    cs->pending = 0;
    cs->end = t;
    if (r->tm)
        r->tm->step_start[r->tm->step_first[c] + cs->cur] = t;
    /* Receives first: a send of this very step to this chip (a 0-hop
     * transfer) then finds the step's pending count already set. */
    for (int k = 0; k < stp->nops; k++) {
        const ftm_op *op = &pg->ops[stp->first_op + k];
        if (op->kind != FTM_OP_RECV)
            continue;
        if (r->tg[op->tag].known) {
            double done = r->tg[op->tag].arrival + recv_cost(r, op);
            if (done > cs->end)
                cs->end = done;
        } else {
            cs->pending++;
        }
    }
    for (int k = 0; k < stp->nops; k++) {
        const ftm_op *op = &pg->ops[stp->first_op + k];
        if (op->kind != FTM_OP_SEND)
            continue;
        double fin;
        int rc = issue_send(r, op, c, t, &fin);
        if (rc)
            return rc;
        if (fin > cs->end)
            cs->end = fin;
        if (op->peer == c) { /* our own receive of this step */
            double done = fin + recv_cost(r, op);
            if (done > cs->end)
                cs->end = done;
            cs->pending--;
        }
    }
    if (cs->pending == 0)
        end_step(r, c);
    return 0;
}

static void replay_free(replay *r)
{
    free(r->st);
    free(r->tg);
    free(r->link_free);
    free(r->lbytes);
    free(r->heap);
}

/* Indexes the receives by tag and checks that sends and receives pair up. */
static int index_tags(replay *r)
{
    const ftm_sched *s = r->s;
    int rc = 0;
    for (int c = 0; c < s->nchips && !rc; c++) {
        const ftm_chip_prog *pg = &s->prog[c];
        for (int j = 0; j < pg->nsteps && !rc; j++) {
            const ftm_step *stp = &pg->steps[j];
            for (int k = 0; k < stp->nops; k++) {
                const ftm_op *op = &pg->ops[stp->first_op + k];
                if (stp->first_op + k + 16 < pg->nops && op[16].tag < s->next_tag)
                    PREFETCH(&r->tg[op[16].tag]); /* tags are scattered */
                if (op->tag >= s->next_tag || op->route >= (unsigned)s->nroutes ||
                    (op->kind != FTM_OP_SEND && s->routes[op->route].dst != c)) {
                    rc = FTM_EINVAL;
                    break;
                }
                if (op->kind == FTM_OP_SEND) {
                    if (r->tg[op->tag].nsend < 2)
                        r->tg[op->tag].nsend++;
                } else {
                    if (r->tg[op->tag].nrecv) {
                        rc = FTM_EINVAL;
                        break;
                    }
                    r->tg[op->tag].nrecv = 1;
                    r->tg[op->tag].rcv_step = j;
                }
            }
        }
    }
    for (uint32_t t = 0; t < s->next_tag && !rc; t++)
        if ((r->tg[t].nsend == 0) != (r->tg[t].nrecv == 0) || r->tg[t].nsend > 1)
            rc = FTM_EINVAL;
    return rc;
}

static int replay_run(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                      ftm_cost_result *res, uint64_t *link_bytes, ftm_cost_timing *tm)
{
    if (!s || !m || s->nchips != m->nchips || p->link_Bps <= 0 || p->hbm_Bps <= 0 ||
        p->hop_s < 0)
        return FTM_EINVAL;
    replay r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.m = m;
    r.p = *p;
    r.tm = tm;
    size_t nt = s->next_tag ? s->next_tag : 1, nl = (size_t)m->nchips * FTM_NDIRS;
    r.st = calloc((size_t)s->nchips, sizeof *r.st);
    r.tg = calloc(nt, sizeof *r.tg);
    r.link_free = calloc(nl, sizeof *r.link_free);
    r.lbytes = calloc(nl, sizeof *r.lbytes);
    r.heap = malloc((size_t)s->nchips * sizeof *r.heap);
    int rc = 0;
    if (!r.st || !r.tg || !r.link_free ||
        !r.lbytes || !r.heap)
        rc = FTM_ENOMEM;
    if (!rc)
        rc = index_tags(&r);
    for (int c = 0; c < s->nchips && !rc; c++)
        if (s->prog[c].nsteps > 0)
            heap_push(&r, 0.0, c);
    double t_end = 0;
    while (!rc && r.nheap > 0) {
        ev e = heap_pop(&r);
        if (r.nheap > 0) { /* the next event's per-tag records, one event ahead */
            int nc = r.heap[0].chip;
            const ftm_chip_prog *pg = &s->prog[nc];
            const ftm_step *st = &pg->steps[r.st[nc].cur];
            for (int k = 0; k < st->nops; k++)
                if (pg->ops[st->first_op + k].tag < s->next_tag)
                    PREFETCH(&r.tg[pg->ops[st->first_op + k].tag]);
        }
        if (e.t > t_end)
            t_end = e.t;
        rc = start_step(&r, e.chip, e.t);
    }
    for (int c = 0; c < s->nchips && !rc; c++) {
        if (r.st[c].cur < s->prog[c].nsteps)
            rc = FTM_EHANG;
        else if (r.st[c].end > t_end)
            t_end = r.st[c].end;
    }
    if (!rc && res) {
        res->time_s = t_end;
        res->max_link_bytes = 0;
        res->total_link_bytes = 0;
        for (size_t l = 0; l < nl; l++) {
            res->total_link_bytes += r.lbytes[l];
            if (r.lbytes[l] > res->max_link_bytes)
                res->max_link_bytes = r.lbytes[l];
        }
    }
    if (!rc && link_bytes)
        memcpy(link_bytes, r.lbytes, nl * sizeof *link_bytes);
    if (!rc && tm) {
        /* a receive ends its own cost after the transfer's last byte */
        for (int c = 0; c < s->nchips; c++)
            for (int k = 0; k < s->prog[c].nops; k++) {
                const ftm_op *op = &s->prog[c].ops[k];
                if (op->kind == FTM_OP_RECV)
                    tm->recv_end[op->tag] = tm->xfer_end[op->tag] + recv_cost(&r, op);
            }
        tm->time_s = t_end;
    }
    replay_free(&r);
    return rc;
}

size_t ftm_cost_mem_bytes(const ftm_sched *s, const ftm_mesh *m)
{
    size_t nt = s->next_tag ? s->next_tag : 1, nl = (size_t)m->nchips * FTM_NDIRS;
    return (size_t)s->nchips * (sizeof(chip_st) + sizeof(ev)) + nt * sizeof(tagst) +
           nl * (sizeof(double) + sizeof(uint64_t));
}

int ftm_cost_sched(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                   ftm_cost_result *res, uint64_t *link_bytes)
{
    if (s && m && s->dry) { /* a dry run (sched.h): only the replay's memory */
        ftm_sched_dry_charge(ftm_cost_mem_bytes(s, m));
        if (res)
            memset(res, 0, sizeof *res);
        if (link_bytes)
            memset(link_bytes, 0, sizeof(uint64_t) * (size_t)m->nchips * FTM_NDIRS);
        return 0;
    }
    return replay_run(s, m, p, res, link_bytes, NULL);
}

void ftm_cost_timing_free(ftm_cost_timing *tm)
{
    free(tm->xfer_start);
    free(tm->xfer_end);
    free(tm->recv_end);
    free(tm->step_start);
    free(tm->step_end);
    free(tm->step_first);
    memset(tm, 0, sizeof *tm);
}

int ftm_cost_sched_timed(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                         ftm_cost_result *res, uint64_t *link_bytes, ftm_cost_timing *tm)
{
    memset(tm, 0, sizeof *tm);
    if (!s)
        return FTM_EINVAL;
    size_t nt = s->next_tag ? s->next_tag : 1, nsteps = 0;
    tm->step_first = calloc((size_t)s->nchips, sizeof *tm->step_first);
    for (int c = 0; c < s->nchips && tm->step_first; c++) {
        tm->step_first[c] = (int)nsteps;
        nsteps += (size_t)s->prog[c].nsteps;
    }
    tm->xfer_start = calloc(nt, sizeof(double));
    tm->xfer_end = calloc(nt, sizeof(double));
    tm->recv_end = calloc(nt, sizeof(double));
    tm->step_start = calloc(nsteps ? nsteps : 1, sizeof(double));
    tm->step_end = calloc(nsteps ? nsteps : 1, sizeof(double));
    if (!tm->step_first || !tm->xfer_start || !tm->xfer_end || !tm->recv_end ||
        !tm->step_start || !tm->step_end)
        return FTM_ENOMEM;
    return replay_run(s, m, p, res, link_bytes, tm);
}
