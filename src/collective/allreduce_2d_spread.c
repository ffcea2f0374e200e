/* "2d-spread": the concurrent 2-D allreduce with its hot links relieved by
 * multipath routing.
 *
 * Around a hole, 2d-concurrent puts two ring edges on one directed link
 * (README, "The 10% target": chip (10,9) next to a dead host sits on four
 * rings but has three live links), so that link carries the whole buffer,
 * twice the healthy load, and the allreduce takes twice as long. A chip
 * with three links can at best spread its four ring edges' bytes evenly:
 * 4/3 of the healthy load per link. This pass does that spreading on the
 * built schedule, without changing who sends what to whom in which step:
 *
 *   1. the bytes each route carries (over the whole schedule) give the
 *      load of every directed link;
 *   2. while the most loaded link is above the typical load (the median of
 *      the loaded links), the biggest route over it not yet split is split
 *      over itself and up to two detours, found by a shortest path that
 *      charges each link its load (the detours avoid each other and the
 *      original path), with weights that level the three paths' most
 *      loaded links (water filling);
 *   3. the schedule is copied step by step, each transfer of a split route
 *      cut into element-aligned pieces, one per path, in the same step.
 *
 * The pieces are disjoint ranges, so sums stay exact; the copy keeps every
 * transfer at the same step index on sender and receiver (as the
 * concurrent schedule has it), so no wait cycle appears. On a healthy torus
 * no link is above the median and the schedule is 2d-concurrent's.
 */
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "twod_share.h"

#include <stdlib.h>
#include <string.h>

enum { NPATH = 3, MAX_ROUNDS = 4096 };

typedef struct split {
    int n;                 /* paths (1: not split) */
    int route[NPATH];      /* route ids in the output schedule */
    double w[NPATH];       /* weights, summing to 1 */
} split;

typedef struct spread {
    const ftm_mesh *m;
    const ftm_sched *in;
    double *ld;            /* [nchips * 4] bytes per directed link */
    double *rbytes;        /* [in->nroutes] bytes per route */
    unsigned char *done;   /* [in->nroutes] route already split */
    split *sp;             /* [in->nroutes] */
    unsigned char *pdirs;  /* [NPATH * nchips] detour hops */
    int plen[NPATH];
    int *units;            /* [nchips * 4] load in path-search units */
    double ref;            /* typical link load (median of loaded links) */
} spread;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Adds w bytes to every link of the route walked from src over dirs. */
static void add_path(spread *S, int src, const unsigned char *dirs, int h, double w)
{
    for (int i = 0, at = src; i < h; i++) {
        S->ld[at * FTM_NDIRS + dirs[i]] += w;
        at = ftm_mesh_neighbor(S->m, at, dirs[i]);
    }
}

static double path_max(const spread *S, int src, const unsigned char *dirs, int h)
{
    double mx = 0;
    for (int i = 0, at = src; i < h; i++) {
        if (S->ld[at * FTM_NDIRS + dirs[i]] > mx)
            mx = S->ld[at * FTM_NDIRS + dirs[i]];
        at = ftm_mesh_neighbor(S->m, at, dirs[i]);
    }
    return mx;
}

/* Link loads from the input schedule's sends; ref = their median. */
static int measure(spread *S)
{
    const ftm_sched *s = S->in;
    int nl = S->m->nchips * FTM_NDIRS, n = 0;
    for (int c = 0; c < s->nchips; c++)
        for (int k = 0; k < s->prog[c].nops; k++)
            if (s->prog[c].ops[k].kind == FTM_OP_SEND)
                S->rbytes[s->prog[c].ops[k].route] += (double)s->prog[c].ops[k].len;
    for (int r = 0; r < s->nroutes; r++)
        add_path(S, s->routes[r].src, s->dirs + s->routes[r].first, s->routes[r].nhops,
                 S->rbytes[r]);
    double *v = malloc(sizeof(double) * (size_t)nl);
    if (!v)
        return FTM_ENOMEM;
    for (int l = 0; l < nl; l++)
        if (S->ld[l] > 0)
            v[n++] = S->ld[l];
    if (n) {
        qsort(v, (size_t)n, sizeof *v, cmp_dbl);
        S->ref = v[n / 2];
    }
    free(v);
    return 0;
}

/* Detour q (1 .. NPATH-1) for route r: a path charging each link its load
 * in units of ref/16, and the paths found so far heavily. Returns hops or
 * an error (FTM_ENOROUTE when the only way is taken). */
static int detour(spread *S, int r, int q)
{
    const ftm_route *rt = &S->in->routes[r];
    int nl = S->m->nchips * FTM_NDIRS;
    for (int l = 0; l < nl; l++)
        S->units[l] = (int)(S->ld[l] * 16.0 / S->ref);
    for (int p = 0; p < q; p++)
        for (int i = 0, at = rt->src; i < S->plen[p]; i++) {
            unsigned char d = S->pdirs[p * S->m->nchips + i];
            S->units[at * FTM_NDIRS + d] += 1 << 20;
            at = ftm_mesh_neighbor(S->m, at, d);
        }
    unsigned char *out = S->pdirs + q * S->m->nchips;
    int h = ftm_plan2d_path(S->m, rt->src, rt->dst, S->units, 1, out, S->m->nchips);
    if (h < 0)
        return h;
    for (int i = 0, at = rt->src; i < h; i++) { /* refuse to reuse a path's link */
        if (S->units[at * FTM_NDIRS + out[i]] >= 1 << 20)
            return FTM_ENOROUTE;
        at = ftm_mesh_neighbor(S->m, at, out[i]);
    }
    return h;
}

/* Splits route r over itself and its detours (water filling), adding the
 * detours to out. */
static int split_route(spread *S, ftm_sched *out, int r)
{
    const ftm_route *rt = &S->in->routes[r];
    double B = S->rbytes[r], base[NPATH];
    split *sp = &S->sp[r];
    S->done[r] = 1;
    add_path(S, rt->src, S->in->dirs + rt->first, rt->nhops, -B);
    memcpy(S->pdirs, S->in->dirs + rt->first, (size_t)rt->nhops);
    S->plen[0] = rt->nhops;
    int np = 1;
    for (; np < NPATH; np++) {
        int h = detour(S, r, np);
        if (h == FTM_ENOROUTE)
            break;
        if (h < 0)
            return h;
        S->plen[np] = h;
    }
    for (int p = 0; p < np; p++)
        base[p] = path_max(S, rt->src, S->pdirs + p * S->m->nchips, S->plen[p]);
    /* Level lambda: the paths with the lowest bases share B so that
     * their bases plus their shares are equal (water filling). */
    int ord[NPATH];
    for (int p = 0; p < np; p++) {
        int i = p;
        while (i > 0 && base[ord[i - 1]] > base[p]) {
            ord[i] = ord[i - 1];
            i--;
        }
        ord[i] = p;
    }
    double lam = base[ord[0]] + B, sum = B;
    for (int u = 1; u <= np; u++) {
        sum += base[ord[u - 1]];
        if (sum / u < base[ord[u - 1]])
            break;
        lam = sum / u;
    }
    sp->n = 0;
    for (int p = 0; p < np; p++) {
        double w = lam > base[p] && B > 0 ? (lam - base[p]) / B : 0;
        if (w < 0.01 && p > 0)
            continue;
        int id = p == 0 ? -1 : ftm_sched_route(out, rt->src, rt->dst, S->pdirs + p * S->m->nchips,
                                               S->plen[p]);
        if (p > 0 && id < 0)
            return id;
        sp->route[sp->n] = id; /* -1: the original route, mapped later */
        sp->w[sp->n++] = w;
        add_path(S, rt->src, S->pdirs + p * S->m->nchips, S->plen[p], w * B);
    }
    double tot = 0;
    for (int p = 0; p < sp->n; p++)
        tot += sp->w[p];
    for (int p = 0; p < sp->n; p++)
        sp->w[p] = tot > 0 ? sp->w[p] / tot : (p == 0);
    return 0;
}

/* The biggest route over link l not split yet, or -1. */
static int worst_route(const spread *S, int l)
{
    const ftm_sched *s = S->in;
    int best = -1;
    for (int r = 0; r < s->nroutes; r++) {
        if (S->done[r] || S->rbytes[r] <= 0 || (best >= 0 && S->rbytes[r] <= S->rbytes[best]))
            continue;
        const ftm_route *rt = &s->routes[r];
        for (int i = 0, at = rt->src; i < rt->nhops; i++) {
            int d = s->dirs[rt->first + i];
            if (at * FTM_NDIRS + d == l) {
                best = r;
                break;
            }
            at = ftm_mesh_neighbor(S->m, at, d);
        }
    }
    return best;
}

/* Step 2: split routes over the most loaded link while it is above ref
 * (by more than 1%) and some route over it can still be split. */
static int balance(spread *S, ftm_sched *out)
{
    int nl = S->m->nchips * FTM_NDIRS;
    for (int round = 0; round < MAX_ROUNDS && S->ref > 0; round++) {
        int l = 0;
        for (int k = 1; k < nl; k++)
            if (S->ld[k] > S->ld[l])
                l = k;
        if (S->ld[l] <= 1.01 * S->ref)
            return 0;
        int r = worst_route(S, l);
        if (r < 0)
            return 0;
        int rc = split_route(S, out, r);
        if (rc)
            return rc;
    }
    return 0;
}

/* Appends send op (of chip c's step) and its receive rv as transfers on
 * the route's paths, cut into element-aligned pieces by weight. */
static int copy_send(const spread *S, ftm_sched *out, const int *rmap, const ftm_op *op,
                     const ftm_op *rv, size_t elem, int pass)
{
    const split *sp = &S->sp[op->route];
    if (sp->n <= 1)
        return pass ? 0 : ftm_sched_xfer(out, rmap[op->route], op->off, rv->off, op->len,
                                         (ftm_red)rv->red);
    size_t ne = op->len / elem, done = 0;
    double acc = 0;
    for (int p = 0; p < sp->n; p++) {
        acc += sp->w[p];
        size_t upto = p == sp->n - 1 ? ne : (size_t)(acc * (double)ne + 0.5);
        if (upto > ne)
            upto = ne;
        size_t len = (upto - done) * elem;
        int id = sp->route[p] < 0 ? rmap[op->route] : sp->route[p];
        if ((p > 0) != pass) {
            done = upto;
            continue;
        }
        int rc = ftm_sched_xfer(out, id, op->off + done * elem, rv->off + done * elem, len,
                                (ftm_red)rv->red);
        if (rc)
            return rc;
        done = upto;
    }
    return 0;
}

/* Receive op of every tag: chip and op index. */
static int index_recvs(const ftm_sched *s, int *rchip, int *rop, int *rstep)
{
    for (int c = 0; c < s->nchips; c++)
        for (int j = 0; j < s->prog[c].nsteps; j++) {
            const ftm_step *st = &s->prog[c].steps[j];
            for (int k = st->first_op; k < st->first_op + st->nops; k++)
                if (s->prog[c].ops[k].kind == FTM_OP_RECV) {
                    if (s->prog[c].ops[k].tag >= s->next_tag)
                        return FTM_EINVAL;
                    rchip[s->prog[c].ops[k].tag] = c;
                    rop[s->prog[c].ops[k].tag] = k;
                    rstep[s->prog[c].ops[k].tag] = j;
                }
        }
    return 0;
}

/* Step 3: the input schedule step by step into out (routes already there
 * as rmap[]), sends of split routes cut into pieces. */
static int copy_sched(const spread *S, ftm_sched *out, const int *rmap, size_t elem)
{
    const ftm_sched *s = S->in;
    size_t nt = s->next_tag ? s->next_tag : 1;
    int *rchip = malloc(sizeof(int) * nt), *rop = malloc(sizeof(int) * nt),
        *rstep = malloc(sizeof(int) * nt), maxs = 0, rc = 0;
    if (!rchip || !rop || !rstep)
        rc = FTM_ENOMEM;
    if (!rc)
        rc = index_recvs(s, rchip, rop, rstep);
    for (int c = 0; c < s->nchips; c++)
        if (s->prog[c].nsteps > maxs)
            maxs = s->prog[c].nsteps;
    for (int j = 0; j < maxs && !rc; j++) {
        for (int c = 0; c < s->nchips && !rc; c++)
            if (j < s->prog[c].nsteps)
                rc = ftm_sched_step(out, c, s->prog[c].steps[j].phase, s->prog[c].steps[j].index);
        for (int c = 0; c < s->nchips && !rc; c++) {
            if (j >= s->prog[c].nsteps)
                continue;
            const ftm_step *st = &s->prog[c].steps[j];
            /* Detour pieces after every direct send: they must not hold
             * up the ring transfers that share their first link. */
            for (int q = 0; q < 2 * st->nops && !rc; q++) {
                const ftm_op *op = &s->prog[c].ops[st->first_op + q % st->nops];
                if (op->kind != FTM_OP_SEND)
                    continue;
                if (rstep[op->tag] != j) /* needs the same-step property */
                    rc = FTM_EINVAL;
                else
                    rc = copy_send(S, out, rmap, op, &s->prog[rchip[op->tag]].ops[rop[op->tag]],
                                   elem, q >= st->nops);
            }
        }
    }
    free(rchip);
    free(rop);
    free(rstep);
    return rc;
}

static void spread_free(spread *S)
{
    free(S->ld);
    free(S->rbytes);
    free(S->done);
    free(S->sp);
    free(S->pdirs);
    free(S->units);
}

/* Relieves the hot links of schedule in (built on m) into out. */
static int spread_sched(ftm_sched *out, const ftm_sched *in, const ftm_mesh *m, size_t elem)
{
    spread S;
    memset(&S, 0, sizeof S);
    S.m = m;
    S.in = in;
    size_t nl = (size_t)m->nchips * FTM_NDIRS, nr = (size_t)(in->nroutes ? in->nroutes : 1);
    S.ld = calloc(nl, sizeof(double));
    S.units = malloc(sizeof(int) * nl);
    S.rbytes = calloc(nr, sizeof(double));
    S.done = calloc(nr, 1);
    S.sp = calloc(nr, sizeof(split));
    S.pdirs = malloc((size_t)NPATH * (size_t)m->nchips);
    int *rmap = malloc(sizeof(int) * nr);
    int rc = ftm_sched_init(out, "2d-spread", m->nchips, in->bytes);
    if (!rc && (!S.ld || !S.units || !S.rbytes || !S.done || !S.sp || !S.pdirs || !rmap))
        rc = FTM_ENOMEM;
    for (int r = 0; r < in->nroutes && !rc; r++) {
        const ftm_route *rt = &in->routes[r];
        rmap[r] = ftm_sched_route(out, rt->src, rt->dst, in->dirs + rt->first, rt->nhops);
        if (rmap[r] < 0)
            rc = rmap[r];
    }
    if (!rc)
        rc = measure(&S);
    if (!rc)
        rc = balance(&S, out);
    if (!rc)
        rc = copy_sched(&S, out, rmap, elem);
    free(rmap);
    spread_free(&S);
    if (rc && out->prog)
        ftm_sched_free(out);
    else if (!rc)
        ftm_sched_trim(out);
    return rc;
}

int ftm_allreduce_2d_spread_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    ftm_sched base;
    int rc = ftm_twod_build_concurrent(&base, m, count, red);
    if (rc)
        return rc;
    rc = spread_sched(s, &base, m, ftm_red_elem_size(red));
    ftm_sched_free(&base);
    return rc;
}
