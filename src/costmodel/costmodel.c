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
#include "cost_lib.h"
#include "sched/sched_lib.h"
#include "core/tls_memo.h"
#include "core/heap.h"

#include <stdlib.h>
#include <string.h>

void ftm_cost_defaults(ftm_cost_params *p)
{
    p->link_Bps = 100e9;
    p->hop_s = 1e-6;
    p->hbm_Bps = 900e9;
}


typedef struct chip_st {
    int cur;        /* index of the running (or next) step */
    int running;    /* 1 while step cur has started and not ended */
    int pending;    /* receives of step cur whose send is not issued yet */
    double end;     /* running max of completion times in step cur */
    ftm_sched_cur rd; /* where step cur + running is read from */
} chip_st;

/* Per transfer (tag), one double: the send's arrival once it is issued,
 * else one of the marks below (times are never negative). A receive's
 * step waits on a tag marked WAITING; a send finding the mark resolves
 * it. The receiving chip is the route's end and the receive's own cost
 * follows from the send (same length and reduction), so neither is
 * stored: 8 bytes a transfer (the 64x64 ring has 27 M). Pairing is
 * checked before the replay with two bits a tag. */
#define TAG_UNSEEN (-1.0)
#define TAG_WAITING (-2.0)
#define NBR_DEAD (-2) /* replay.nbr: a neighbour over a dead link */

typedef struct replay {
    const ftm_sched *s;
    const ftm_mesh *m;
    ftm_cost_params p;
    chip_st *st;          /* [nchips] */
    double *tg;           /* [ntags] */
    double *link_free;    /* [nchips * 4] */
    int *nbr;             /* [nchips * 4] ftm_mesh_neighbor, looked up once
                           * (it divides: a quarter of a ring replay's time);
                           * NBR_DEAD over a link that is not live */
    uint64_t *lbytes;     /* [nchips * 4] */
    core_heap ev;      /* step starts: (time, chip) */
    ftm_sched_view view;  /* the step being started */
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

static double recv_cost(const replay *r, const ftm_op *op)
{
    return op->red == FTM_RED_COPY ? 0.0 : (double)op->len / r->p.hbm_Bps;
}

/* Fetches chip c's next step while other chips' events run. */
static void prefetch_step(const replay *r, int c)
{
    const ftm_chip_prog *pg = &r->s->prog[c];
    const chip_st *cs = &r->st[c];
    const unsigned char *code = ftm_sched_code_at(r->s, c, &cs->rd);
    if (code) { /* packed */
        PREFETCH(code);
        PREFETCH(code + 32);
        return;
    }
    /* ops are stored step after step */
    const ftm_step *done = &pg->steps[cs->cur - 1];
    PREFETCH(&pg->steps[cs->cur]);
    PREFETCH(&pg->ops[done->first_op + done->nops]);
    PREFETCH(&pg->ops[done->first_op + done->nops] + 1);
    PREFETCH(&pg->ops[done->first_op + done->nops] + 3);
}

/* Ends chip c's running step (its pending count reached zero). */
static void end_step(replay *r, int c)
{
    chip_st *cs = &r->st[c];
    if (r->tm)
        r->tm->step_end[r->tm->step_first[c] + cs->cur] = cs->end;
    cs->running = 0;
    cs->cur++;
    if (cs->cur < r->s->prog[c].nsteps) {
        prefetch_step(r, c);
        core_heap_push(&r->ev, cs->end, c);
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
            int nb = r->nbr[at * FTM_NDIRS + d];
            if (nb < 0) /* off the mesh, or a dead link (as the oracle and the chips say) */
                return nb == NBR_DEAD ? FTM_ENOROUTE : FTM_EINVAL;
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
            at = r->nbr[at * FTM_NDIRS + d];
        }
    }
    *finish = start + dur;
    if (r->tm) {
        r->tm->xfer_start[op->tag] = start;
        r->tm->xfer_end[op->tag] = *finish;
    }
    int waiting = r->tg[op->tag] == TAG_WAITING;
    r->tg[op->tag] = *finish;
    int rc = rt->dst;
    chip_st *rs = &r->st[rc];
    if (rc != c && waiting) {
        double done = *finish + recv_cost(r, op);
        if (done > rs->end)
            rs->end = done;
        if (--rs->pending == 0)
            end_step(r, rc);
    }
    return 0;
}

/* Step cur of chip c starts at t: the receives it waits for. */
static void start_receives(replay *r, chip_st *cs, const ftm_op *ops, int nops)
{
    for (int k = 0; k < nops; k++) {
        const ftm_op *op = &ops[k];
        if (op->kind != FTM_OP_RECV)
            continue;
        double *a = &r->tg[op->tag];
        if (*a >= 0) {
            double done = *a + recv_cost(r, op);
            if (done > cs->end)
                cs->end = done;
        } else {
            *a = TAG_WAITING;
            cs->pending++;
        }
    }
}

/* Starts step st[c].cur of chip c at time t. */
static int start_step(replay *r, int c, double t)
{
    chip_st *cs = &r->st[c];
    int rc = ftm_sched_read_step(r->s, c, &cs->rd, &r->view);
    if (rc <= 0)
        return rc ? rc : FTM_EINVAL;
    const ftm_op *ops = r->view.ops;
    int nops = r->view.nops;
    cs->running = 1;
    cs->pending = 0;
    cs->end = t;
    if (r->tm)
        r->tm->step_start[r->tm->step_first[c] + cs->cur] = t;
    /* Receives first: a send of this very step to this chip (a 0-hop
     * transfer) then finds the step's pending count already set. */
    start_receives(r, cs, ops, nops);
    for (int k = 0; k < nops; k++) {
        const ftm_op *op = &ops[k];
        if (op->kind != FTM_OP_SEND)
            continue;
        double fin;
        rc = issue_send(r, op, c, t, &fin);
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
    free(r->nbr);
    free(r->lbytes);
    free(r->ev.a);
    ftm_sched_view_free(&r->view);
}

/* One op of chip c in the pairing check: bit 2t of seen is tag t's
 * send, bit 2t + 1 its receive; a second of either is an error. */
static int check_op(const ftm_sched *s, const ftm_op *op, int c, unsigned char *seen)
{
    if (op->tag >= s->next_tag || op->route >= (unsigned)s->nroutes ||
        (op->kind != FTM_OP_SEND && s->routes[op->route].dst != c))
        return FTM_EINVAL;
    size_t bit = 2 * (size_t)op->tag + (op->kind == FTM_OP_SEND ? 0 : 1);
    if (seen[bit / 8] & (1u << (bit % 8)))
        return FTM_EINVAL;
    seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
    return 0;
}

/* Checks that every tag has exactly one send and one receive (before the
 * replay: a schedule that does not pair up is FTM_EINVAL, not a hang). */
static int index_tags(replay *r)
{
    const ftm_sched *s = r->s;
    size_t nb = ((size_t)s->next_tag * 2 + 7) / 8;
    unsigned char *seen = calloc(nb ? nb : 1, 1);
    if (!seen)
        return FTM_ENOMEM;
    int rc = 0;
    for (int c = 0; c < s->nchips && !rc; c++) {
        ftm_sched_cur cur = { 0 };
        while (!rc && (rc = ftm_sched_read_step(s, c, &cur, &r->view)) > 0) {
            rc = 0;
            for (int k = 0; k < r->view.nops && !rc; k++)
                rc = check_op(s, &r->view.ops[k], c, seen);
        }
    }
    /* every tag: both bits or neither (then nothing uses it: none below next_tag) */
    for (uint32_t t = 0; t < s->next_tag && !rc; t++) {
        size_t b = 2 * (size_t)t;
        int snd = !!(seen[b / 8] & (1u << (b % 8))), rcv = !!(seen[(b + 1) / 8] & (1u << ((b + 1) % 8)));
        if (snd != rcv)
            rc = FTM_EINVAL;
    }
    free(seen);
    return rc;
}

/* The next event's per-tag records, one event ahead (unpacked programs:
 * a packed step is only decoded when it starts). */
static void prefetch_next(const replay *r)
{
    const ftm_sched *s = r->s;
    if (r->ev.n == 0 || s->packed)
        return;
    int nc = r->ev.a[0].id;
    const ftm_chip_prog *pg = &s->prog[nc];
    const ftm_step *st = &pg->steps[r->st[nc].cur];
    for (int k = 0; k < st->nops; k++)
        if (pg->ops[st->first_op + k].tag < s->next_tag)
            PREFETCH(&r->tg[pg->ops[st->first_op + k].tag]);
}

static int replay_alloc(replay *r)
{
    const ftm_sched *s = r->s;
    size_t nt = s->next_tag ? s->next_tag : 1, nl = (size_t)r->m->nchips * FTM_NDIRS;
    r->st = calloc((size_t)s->nchips, sizeof *r->st);
    r->tg = malloc(nt * sizeof *r->tg);
    r->link_free = calloc(nl, sizeof *r->link_free);
    r->nbr = malloc(nl * sizeof *r->nbr);
    r->lbytes = calloc(nl, sizeof *r->lbytes);
    r->ev.a = malloc((size_t)s->nchips * sizeof *r->ev.a);
    if (!r->st || !r->tg || !r->link_free || !r->nbr || !r->lbytes || !r->ev.a)
        return FTM_ENOMEM;
    for (size_t l = 0; l < nl; l++) {
        int c = (int)(l / FTM_NDIRS), d = (int)(l % FTM_NDIRS);
        r->nbr[l] = ftm_mesh_neighbor(r->m, c, d);
        if (r->nbr[l] >= 0 && !ftm_mesh_link_live(r->m, c, d))
            r->nbr[l] = NBR_DEAD;
    }
    for (size_t t = 0; t < nt; t++)
        r->tg[t] = TAG_UNSEEN;
    return 0;
}

/* The replay's figures: end time, link bytes. */
static void replay_result(const replay *r, double t_end, ftm_cost_result *res,
                          uint64_t *link_bytes)
{
    size_t nl = (size_t)r->m->nchips * FTM_NDIRS;
    if (res) {
        res->time_s = t_end;
        res->max_link_bytes = 0;
        res->total_link_bytes = 0;
        for (size_t l = 0; l < nl; l++) {
            res->total_link_bytes += r->lbytes[l];
            if (r->lbytes[l] > res->max_link_bytes)
                res->max_link_bytes = r->lbytes[l];
        }
    }
    if (link_bytes)
        memcpy(link_bytes, r->lbytes, nl * sizeof *link_bytes);
}

/* A receive ends its own cost after the transfer's last byte. */
static int receive_ends(replay *r)
{
    const ftm_sched *s = r->s;
    for (int c = 0; c < s->nchips; c++) {
        ftm_sched_cur cur = { 0 };
        int rc;
        while ((rc = ftm_sched_read_step(s, c, &cur, &r->view)) > 0)
            for (int k = 0; k < r->view.nops; k++) {
                const ftm_op *op = &r->view.ops[k];
                if (op->kind == FTM_OP_RECV)
                    r->tm->recv_end[op->tag] = r->tm->xfer_end[op->tag] + recv_cost(r, op);
            }
        if (rc)
            return rc;
    }
    return 0;
}

static int replay_run(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                      ftm_cost_result *res, uint64_t *link_bytes, ftm_cost_timing *tm)
{
    if (!s || !m || s->nchips != m->nchips || p->link_Bps <= 0 || p->hbm_Bps <= 0 ||
        p->hop_s < 0 || s->dry)
        return FTM_EINVAL;
    /* under a budget (sched.h: the meter of the schedule's build context)
     * the replay's arrays must fit beside the schedules, as a dry run
     * counts them */
    int rc = ftm_sched_charge(s, ftm_cost_mem_bytes(s, m));
    if (rc)
        return rc;
    replay r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.m = m;
    r.p = *p;
    r.tm = tm;
    rc = replay_alloc(&r);
    if (!rc)
        rc = index_tags(&r);
    for (int c = 0; c < s->nchips && !rc; c++)
        if (s->prog[c].nsteps > 0)
            core_heap_push(&r.ev, 0.0, c);
    double t_end = 0;
    while (!rc && r.ev.n > 0) {
        core_hnode e = core_heap_pop(&r.ev);
        prefetch_next(&r);
        if (e.key > t_end)
            t_end = e.key;
        rc = start_step(&r, e.id, e.key);
    }
    for (int c = 0; c < s->nchips && !rc; c++) {
        if (r.st[c].cur < s->prog[c].nsteps)
            rc = FTM_EHANG;
        else if (r.st[c].end > t_end)
            t_end = r.st[c].end;
    }
    if (!rc)
        replay_result(&r, t_end, res, link_bytes);
    if (!rc && tm && !(rc = receive_ends(&r)))
        tm->time_s = t_end;
    replay_free(&r);
    return rc;
}

size_t ftm_cost_mem_bytes(const ftm_sched *s, const ftm_mesh *m)
{
    size_t nt = s->next_tag ? s->next_tag : 1, nl = (size_t)m->nchips * FTM_NDIRS;
    size_t view = s->packed ? (size_t)s->max_step_ops * sizeof(ftm_op) : 0;
    return (size_t)s->nchips * (sizeof(chip_st) + sizeof(core_hnode)) + nt * sizeof(double) +
           (2 * nt + 7) / 8 + nl * (sizeof(double) + sizeof(int) + sizeof(uint64_t)) + view;
}

/* This thread's last successful replay: asked again for the same
 * schedule (serial and changes, sched.h), mesh (its faults' checksum) and
 * parameters, the cost model answers from it instead of replaying. The
 * 2-D fallback models the ring it keeps and the CLI then models the same
 * schedule: on a 64x64 torus that is a replay of 27 M transfers saved.
 * Freed when its thread ends (sweeps and throughput jobs model on worker
 * threads; tls_memo.h). */
typedef struct cost_memo {
    int valid;
    uint64_t serial, nchange, mesh;
    ftm_cost_params p;
    ftm_cost_result r;
    size_t nl;
    uint64_t lb[]; /* nl link bytes */
} cost_memo;

static uint64_t mesh_sum(const ftm_mesh *m)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)m->rows << 32 ^ (uint64_t)m->cols << 8 ^
                 (uint64_t)m->torus;
    for (int c = 0; c < m->nchips; c++) {
        h = (h ^ m->chip_dead[c]) * 1099511628211ull;
        for (int d = 0; d < FTM_NDIRS; d++)
            h = (h ^ m->link_dead[c * FTM_NDIRS + d]) * 1099511628211ull;
    }
    return h;
}

/* This thread's memo when it holds s on m with p (sum: mesh_sum(m)), else
 * NULL. */
static const cost_memo *memo_hit(const ftm_sched *s, const ftm_mesh *m,
                                 const ftm_cost_params *p, uint64_t sum)
{
    const cost_memo *memo = core_memo_get(CORE_MEMO_COST_REPLAY);
    int hit = memo && memo->valid && memo->serial == s->serial &&
              memo->nchange == s->nchange && memo->mesh == sum &&
              memo->nl == (size_t)m->nchips * FTM_NDIRS && memcmp(&memo->p, p, sizeof *p) == 0;
    return hit ? memo : NULL;
}

/* This thread's memo with room for m's link bytes (and not valid), or
 * NULL when out of memory. */
static cost_memo *memo_room(const ftm_mesh *m)
{
    size_t nl = (size_t)m->nchips * FTM_NDIRS;
    cost_memo *memo = core_memo_get(CORE_MEMO_COST_REPLAY);
    if (!memo || memo->nl != nl) {
        free(memo);
        memo = malloc(sizeof *memo + sizeof *memo->lb * nl);
        if (memo)
            memo->nl = nl;
        core_memo_set(CORE_MEMO_COST_REPLAY, memo, free);
    }
    if (memo)
        memo->valid = 0;
    return memo;
}

static void memo_key_set(cost_memo *memo, const ftm_sched *s, const ftm_cost_params *p,
                         uint64_t sum)
{
    memo->valid = 1;
    memo->serial = s->serial;
    memo->nchange = s->nchange;
    memo->mesh = sum;
    memo->p = *p;
}

/* Replays s into the memo (kept only on success). */
static int memo_fill(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                     uint64_t sum)
{
    cost_memo *memo = memo_room(m);
    if (!memo)
        return FTM_ENOMEM;
    int rc = replay_run(s, m, p, &memo->r, memo->lb, NULL);
    if (!rc)
        memo_key_set(memo, s, p, sum);
    return rc;
}

int ftm_cost_memo_put(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                      const ftm_cost_result *res, const uint64_t *link_bytes)
{
    if (!s || !m || !p || !res || !link_bytes || s->nchips != m->nchips || s->dry)
        return FTM_EINVAL;
    cost_memo *memo = memo_room(m);
    if (!memo)
        return FTM_ENOMEM;
    memo->r = *res;
    memcpy(memo->lb, link_bytes, sizeof *memo->lb * memo->nl);
    memo_key_set(memo, s, p, mesh_sum(m));
    return 0;
}

int ftm_cost_sched(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                   ftm_cost_result *res, uint64_t *link_bytes)
{
    if (s && m && s->dry) { /* a dry run (sched.h): only the replay's memory */
        (void)ftm_sched_charge(s, ftm_cost_mem_bytes(s, m)); /* never refused */
        if (res)
            memset(res, 0, sizeof *res);
        if (link_bytes)
            memset(link_bytes, 0, sizeof(uint64_t) * (size_t)m->nchips * FTM_NDIRS);
        return 0;
    }
    if (!s || !m || !p || s->nchips != m->nchips)
        return FTM_EINVAL;
    uint64_t sum = mesh_sum(m);
    int rc = memo_hit(s, m, p, sum) ? 0 : memo_fill(s, m, p, sum);
    const cost_memo *memo = core_memo_get(CORE_MEMO_COST_REPLAY);
    if (!rc && res)
        *res = memo->r;
    if (!rc && link_bytes)
        memcpy(link_bytes, memo->lb, sizeof *link_bytes * memo->nl);
    return rc;
}

/* The least time a send takes (ftm_cost_watch_floor). */
static double send_floor(const ftm_cost_params *p, int nhops, size_t len, int self_sum)
{
    double d = nhops == 0 ? (double)len / p->hbm_Bps
                          : (double)nhops * p->hop_s + (double)len / p->link_Bps;
    return self_sum ? d + (double)len / p->hbm_Bps : d;
}

double ftm_cost_watch_floor(const void *ctx, int nhops, size_t len, int self_sum)
{
    return send_floor(ctx, nhops, len, self_sum);
}

/* The least time one step of chip c can last: its longest send. */
static double step_floor(const ftm_sched *s, const ftm_cost_params *p, const ftm_sched_view *v,
                         int c)
{
    double most = 0;
    for (int k = 0; k < v->nops; k++) {
        const ftm_op *op = &v->ops[k];
        if (op->kind != FTM_OP_SEND)
            continue;
        double d = send_floor(p, s->routes[op->route].nhops, op->len,
                                       op->peer == c && op->red != FTM_RED_COPY);
        most = d > most ? d : most;
    }
    return most;
}

int ftm_cost_lower_bound(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                         double *lb)
{
    *lb = 0;
    if (!s || !m || !p || s->nchips != m->nchips || p->link_Bps <= 0 || p->hbm_Bps <= 0 ||
        p->hop_s < 0)
        return FTM_EINVAL;
    if (s->dry)
        return 0;
    const cost_memo *hit = memo_hit(s, m, p, mesh_sum(m));
    if (hit) {
        *lb = hit->r.time_s;
        return 0;
    }
    ftm_sched_view v;
    memset(&v, 0, sizeof v);
    int rc = 0;
    double best = 0;
    for (int c = 0; c < s->nchips && !rc; c++) {
        ftm_sched_cur cur = { 0 };
        double sum = 0;
        while ((rc = ftm_sched_read_step(s, c, &cur, &v)) > 0) {
            for (int k = 0; k < v.nops; k++)
                if (v.ops[k].route >= (unsigned)s->nroutes) {
                    ftm_sched_view_free(&v);
                    return FTM_EINVAL;
                }
            sum += step_floor(s, p, &v, c);
        }
        best = sum > best ? sum : best;
    }
    ftm_sched_view_free(&v);
    if (!rc)
        *lb = best * (1 - 1e-9);
    return rc;
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
