/* Sequential reference executor of a schedule (ftm_sched_exec_data).
 *
 * A worklist of chips, no clock: a chip starts its current step (every send
 * copies its source range to a staging buffer, as a packet would), and the
 * step ends once every receive's send has been staged; then the receives
 * are combined by the shared kernel (ftm_sched_reduce) and the next step
 * starts. A chip waiting for a send is resumed by the chip that stages it.
 * Since the writes of a step are disjoint from each other and from its
 * reads (checked first), every order of this kind gives the same bytes,
 * and so does the runtime: the executor is an oracle for it.
 */
#include "ftmesh/sched.h"
#include "ftmesh/mesh.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct sx_chip {
    int cur;        /* current step */
    int running;    /* step cur has started */
    int pending;    /* receives of step cur whose send is not staged yet */
} sx_chip;

typedef struct sx_run {
    const ftm_sched *s;
    void **bufs;
    sx_chip *st;              /* [nchips] */
    int *rcv_chip, *rcv_step; /* [ntags] the receive of each tag, -1: none */
    unsigned char *nsend;     /* [ntags] sends with the tag (capped at 2) */
    unsigned char **stage;    /* [ntags] staged payload of each send */
    int *queue;               /* [nchips] chips whose step can end (FIFO) */
    int qhead, qlen;
} sx_run;

static int sx_overlap(const ftm_op *a, const ftm_op *b)
{
    return a->off < b->off + b->len && b->off < a->off + a->len;
}

/* Within a step: writes pairwise disjoint and disjoint from reads; sum
 * receives aligned to their element size; every range inside the buffer. */
static int sx_check_races(const ftm_sched *s)
{
    for (int c = 0; c < s->nchips; c++) {
        const ftm_chip_prog *pg = &s->prog[c];
        for (int j = 0; j < pg->nsteps; j++) {
            const ftm_op *ops = pg->ops + pg->steps[j].first_op;
            int n = pg->steps[j].nops;
            for (int a = 0; a < n; a++) {
                if (ops[a].off > s->bytes || ops[a].len > s->bytes - ops[a].off)
                    return FTM_EINVAL;
                if (ops[a].kind != FTM_OP_RECV)
                    continue;
                size_t el = ftm_sched_red_elem_size((ftm_red)ops[a].red);
                if (ops[a].off % el || ops[a].len % el)
                    return FTM_EINVAL;
                for (int b = 0; b < n; b++)
                    if (b != a && (ops[b].kind == FTM_OP_SEND || b < a) &&
                        sx_overlap(&ops[a], &ops[b]))
                        return FTM_EINVAL;
            }
        }
    }
    return 0;
}

/* 0 when route r of s starts at src, walks live links of m and ends at
 * dst; FTM_ENOROUTE where it crosses a dead chip or link (as the runtime
 * says), else FTM_EINVAL. */
static int sx_route_ok(const ftm_sched *s, const ftm_mesh *m, int r, int src, int dst)
{
    const ftm_route *rt = &s->routes[r];
    if (rt->src != src || rt->dst != dst)
        return FTM_EINVAL;
    int at = src, dead = !ftm_mesh_alive(m, src);
    for (int h = 0; h < rt->nhops && at >= 0; h++) {
        int d = s->dirs[rt->first + h];
        dead |= !ftm_mesh_link_live(m, at, d);
        at = ftm_mesh_neighbor(m, at, d);
    }
    return at != dst ? FTM_EINVAL : dead ? FTM_ENOROUTE : 0;
}

/* Pairs every send with one receive by tag and checks the routes. */
static int sx_index(sx_run *x, const ftm_mesh *m)
{
    const ftm_sched *s = x->s;
    for (uint32_t t = 0; t < s->next_tag; t++)
        x->rcv_chip[t] = -1;
    for (int c = 0; c < s->nchips; c++) {
        const ftm_chip_prog *pg = &s->prog[c];
        if (pg->nsteps > 0 && !x->bufs[c])
            return FTM_EINVAL;
        for (int j = 0; j < pg->nsteps; j++)
            for (int k = 0; k < pg->steps[j].nops; k++) {
                const ftm_op *op = &pg->ops[pg->steps[j].first_op + k];
                if (op->tag >= s->next_tag || op->route >= (unsigned)s->nroutes)
                    return FTM_EINVAL;
                if (op->kind == FTM_OP_SEND) {
                    int rc = sx_route_ok(s, m, op->route, c, op->peer);
                    if (rc)
                        return rc;
                    if (x->nsend[op->tag] < 2)
                        x->nsend[op->tag]++;
                } else {
                    if (x->rcv_chip[op->tag] >= 0)
                        return FTM_EINVAL;
                    x->rcv_chip[op->tag] = c;
                    x->rcv_step[op->tag] = j;
                }
            }
    }
    for (uint32_t t = 0; t < s->next_tag; t++)
        if (x->nsend[t] != 1 || x->rcv_chip[t] < 0)
            return FTM_EINVAL;
    return 0;
}

static void sx_push(sx_run *x, int c)
{
    x->queue[(x->qhead + x->qlen++) % x->s->nchips] = c;
}

/* Starts step cur of chip c: counts its receives still to come, then stages
 * its sends (a receiver waiting only for this send is queued). */
static int sx_start(sx_run *x, int c)
{
    const ftm_chip_prog *pg = &x->s->prog[c];
    const ftm_step *stp = &pg->steps[x->st[c].cur];
    const ftm_op *ops = pg->ops + stp->first_op;
    x->st[c].running = 1;
    x->st[c].pending = 0;
    for (int k = 0; k < stp->nops; k++)
        if (ops[k].kind == FTM_OP_RECV && !x->stage[ops[k].tag])
            x->st[c].pending++;
    for (int k = 0; k < stp->nops; k++) {
        if (ops[k].kind != FTM_OP_SEND)
            continue;
        unsigned char *cp = malloc(ops[k].len ? ops[k].len : 1);
        if (!cp)
            return FTM_ENOMEM;
        memcpy(cp, (unsigned char *)x->bufs[c] + ops[k].off, ops[k].len);
        x->stage[ops[k].tag] = cp;
        int rc = x->rcv_chip[ops[k].tag];
        sx_chip *r = &x->st[rc];
        if (r->running && r->cur == x->rcv_step[ops[k].tag] && --r->pending == 0 && rc != c)
            sx_push(x, rc);
    }
    return 0;
}

/* Ends chip c's step: combines its receives into its buffer. */
static int sx_end(sx_run *x, int c)
{
    const ftm_chip_prog *pg = &x->s->prog[c];
    const ftm_step *stp = &pg->steps[x->st[c].cur];
    for (int k = 0; k < stp->nops; k++) {
        const ftm_op *op = &pg->ops[stp->first_op + k];
        if (op->kind != FTM_OP_RECV)
            continue;
        int rc = ftm_sched_reduce((unsigned char *)x->bufs[c] + op->off, x->stage[op->tag],
                                  op->len, (ftm_red)op->red);
        free(x->stage[op->tag]);
        x->stage[op->tag] = NULL;
        if (rc)
            return rc;
    }
    x->st[c].running = 0;
    x->st[c].cur++;
    return 0;
}

/* Runs chip c as far as it can go without another chip. */
static int sx_advance(sx_run *x, int c)
{
    int n = x->s->prog[c].nsteps;
    while (x->st[c].cur < n) {
        if (!x->st[c].running) {
            int rc = sx_start(x, c);
            if (rc)
                return rc;
        }
        if (x->st[c].pending > 0)
            return 0;
        int rc = sx_end(x, c);
        if (rc)
            return rc;
    }
    return 0;
}

static void sx_free(sx_run *x)
{
    if (x->stage)
        for (uint32_t t = 0; t < x->s->next_tag; t++)
            free(x->stage[t]);
    free(x->stage);
    free(x->st);
    free(x->rcv_chip);
    free(x->rcv_step);
    free(x->nsend);
    free(x->queue);
}

int ftm_sched_exec_data(const ftm_sched *s, const ftm_mesh *m, void **bufs)
{
    if (!s || !m || !bufs || s->nchips != m->nchips || s->dry)
        return FTM_EINVAL;
    if (s->packed) { /* the oracle reads the plain form */
        ftm_sched u;
        int rc = ftm_sched_unpack(s, &u);
        if (!rc) {
            rc = ftm_sched_exec_data(&u, m, bufs);
            ftm_sched_free(&u);
        }
        return rc;
    }
    int rc = sx_check_races(s);
    if (rc)
        return rc;
    sx_run x = { .s = s, .bufs = bufs };
    size_t nt = s->next_tag ? s->next_tag : 1, nc = s->nchips ? (size_t)s->nchips : 1;
    x.st = calloc(nc, sizeof *x.st);
    x.rcv_chip = malloc(nt * sizeof *x.rcv_chip);
    x.rcv_step = malloc(nt * sizeof *x.rcv_step);
    x.nsend = calloc(nt, 1);
    x.stage = calloc(nt, sizeof *x.stage);
    x.queue = malloc(nc * sizeof *x.queue);
    if (!x.st || !x.rcv_chip || !x.rcv_step || !x.nsend || !x.stage || !x.queue)
        rc = FTM_ENOMEM;
    if (!rc)
        rc = sx_index(&x, m);
    for (int c = 0; c < s->nchips && !rc; c++)
        rc = sx_advance(&x, c);
    while (!rc && x.qlen > 0) {
        int c = x.queue[x.qhead];
        x.qhead = (x.qhead + 1) % s->nchips;
        x.qlen--;
        rc = sx_advance(&x, c);
    }
    for (int c = 0; c < s->nchips && !rc; c++)
        if (x.st[c].cur < s->prog[c].nsteps)
            rc = FTM_EHANG;
    sx_free(&x);
    return rc;
}
