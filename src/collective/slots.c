/* "slots": spanning trees packed into the link-step slots of a
 * time-expanded mesh, one op per directed link per step.
 *
 * Why: the cost model charges every op a hop's latency and a chip's step
 * lasts until its last receive ends, so an allreduce near the bandwidth
 * optimum must keep every live link busy in (nearly) every step, with
 * steps of one size, for few steps. The 2-D rings do that on a healthy
 * torus (2 x diameter steps) but not beside a hole; pipelined trees
 * (trees.c) keep the links busy only after a fill of about the trees'
 * depth. Here each share of the buffer (an instance) gets its own reduce
 * tree and broadcast tree, chosen in the time-expanded graph (chip,
 * step) around the slots earlier instances took: a latest-first
 * Dijkstra backwards from (root, R) for the reduce, an earliest-first one
 * forwards for the broadcast (TACOS, Won et al. 2024, synthesises
 * collectives greedily on time-expanded links the same way; TE-CCL,
 * SIGCOMM 2024, solves the same slots exactly with an LP).
 *
 * Rules of a step (ftm_sched_exec_data's): a directed link carries at
 * most one op a step; a chip sums its children's parts in, each in an
 * earlier step than its own send, no two children in one step (the
 * writes would race); a chip copies a broadcast part on after the step
 * it got it.
 */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "sched/sched_lib.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

static const char *const PH_SLOTS = "slots";

typedef struct sl_op {
    int step, src, dir, inst, up;
} sl_op;

typedef struct sl_cand {
    int s, v, d; /* v sends over its link d in step s */
} sl_cand;

typedef struct sl_set {
    int n, live, smax, nw;
    int *nbr;        /* [n*4] neighbour over a link live both ways, or -1 */
    unsigned char *occ;
    int *t;          /* [n] this instance's step per chip (INT_MIN: none) */
    int *rs;         /* [n*4] steps the chip's children summed in (-1) */
    sl_cand *heap;
    int nheap, capheap;
    sl_op *ops;
    int nops, capops;
    int *root;
} sl_set;

static int sl_cap = 1;
static int bit(const sl_set *S, int l, int s) { return S->occ[(size_t)l * S->smax + s] >= sl_cap; }
static void setbit(sl_set *S, int l, int s, int on)
{
    S->occ[(size_t)l * S->smax + s] += on ? 1 : -1;
}

static int sum_free(const sl_set *S, int p, int s)
{
    for (int i = 0; i < 4; i++)
        if (S->rs[p * 4 + i] == s)
            return 0;
    return 1;
}

/* The latest step below `below` in which v can sum into its neighbour over
 * link d (-1: none). */
static int latest(const sl_set *S, int v, int d, int below)
{
    int l = v * 4 + d, p = S->nbr[l];
    for (int s = below - 1; s >= 0; s--)
        if (!bit(S, l, s) && sum_free(S, p, s))
            return s;
    return -1;
}

/* The earliest step from `from` in which v can copy over its link d
 * (smax: none). */
static int earliest(const sl_set *S, int v, int d, int from)
{
    int l = v * 4 + d;
    for (int s = from; s < S->smax; s++)
        if (!bit(S, l, s))
            return s;
    return S->smax;
}

/* A binary heap of candidates, by step: the latest first (sign 1) or the
 * earliest (sign -1). */
static int before(const sl_cand *a, const sl_cand *b, int sign) { return sign * (a->s - b->s) > 0; }
static int push(sl_set *S, sl_cand c, int sign)
{
    if (S->nheap == S->capheap) {
        int cap = S->capheap ? 2 * S->capheap : 1024;
        sl_cand *h = realloc(S->heap, (size_t)cap * sizeof *h);
        if (!h)
            return FTM_ENOMEM;
        S->heap = h;
        S->capheap = cap;
    }
    int i = S->nheap++;
    while (i > 0 && before(&c, &S->heap[(i - 1) / 2], sign)) {
        S->heap[i] = S->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    S->heap[i] = c;
    return 0;
}
static sl_cand pop(sl_set *S, int sign)
{
    sl_cand top = S->heap[0], x = S->heap[--S->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= S->nheap)
            break;
        if (c + 1 < S->nheap && before(&S->heap[c + 1], &S->heap[c], sign))
            c++;
        if (!before(&S->heap[c], &x, sign))
            break;
        S->heap[i] = S->heap[c];
        i = c;
    }
    if (S->nheap)
        S->heap[i] = x;
    return top;
}

static int add_op(sl_set *S, int step, int src, int dir, int inst, int up)
{
    if (S->nops == S->capops) {
        int cap = S->capops ? 2 * S->capops : 4096;
        sl_op *o = realloc(S->ops, (size_t)cap * sizeof *o);
        if (!o)
            return FTM_ENOMEM;
        S->ops = o;
        S->capops = cap;
    }
    S->ops[S->nops++] = (sl_op){ step, src, dir, inst, up };
    setbit(S, src * 4 + dir, step, 1);
    return 0;
}

/* Offers chip p's neighbours a slot into p (up) or out of p (down). */
static int offer(sl_set *S, int p, int up)
{
    int rc = 0;
    for (int d = 0; d < 4 && !rc; d++) {
        int v = S->nbr[p * 4 + d];
        if (v < 0 || S->t[v] != INT_MIN)
            continue;
        int back = (d + 2) % 4;
        sl_cand c = up ? (sl_cand){ latest(S, v, back, S->t[p]), v, back }
                       : (sl_cand){ earliest(S, p, d, S->t[p] + 1), v, d };
        if (up ? c.s >= 0 : c.s < S->smax)
            rc = push(S, c, up ? 1 : -1);
    }
    return rc;
}

/* One instance's reduce into root by step r - 1 (up 1), or its broadcast
 * from root, which holds the sum after step r - 1 (up 0). Returns the
 * chips reached (all live ones on success) or FTM_ENOMEM. */
static int grow(sl_set *S, int inst, int root, int r, int up)
{
    int sign = up ? 1 : -1, got = 1, rc;
    for (int i = 0; i < S->n; i++)
        S->t[i] = INT_MIN;
    for (int i = 0; up && i < 4 * S->n; i++)
        S->rs[i] = -1;
    S->t[root] = up ? r : r - 1;
    S->nheap = 0;
    rc = offer(S, root, up);
    while (!rc && S->nheap) {
        sl_cand c = pop(S, sign);
        if (S->t[c.v] != INT_MIN)
            continue;
        int p = up ? S->nbr[c.v * 4 + c.d] : S->nbr[c.v * 4 + (c.d + 2) % 4];
        int src = up ? c.v : p, l = src * 4 + c.d;
        if (bit(S, l, c.s) || (up && !sum_free(S, p, c.s))) {
            c.s = up ? latest(S, c.v, c.d, c.s) : earliest(S, p, c.d, c.s + 1);
            if (up ? c.s >= 0 : c.s < S->smax)
                rc = push(S, c, sign);
            continue;
        }
        S->t[c.v] = c.s;
        if (up) {
            int i = 0;
            while (S->rs[p * 4 + i] >= 0)
                i++;
            S->rs[p * 4 + i] = c.s;
        }
        rc = add_op(S, c.s, src, c.d, inst, up);
        got++;
        if (!rc)
            rc = offer(S, c.v, up);
    }
    return rc ? rc : got;
}

/* Undoes the ops from index from on. */
static void undo(sl_set *S, int from)
{
    while (S->nops > from) {
        const sl_op *o = &S->ops[--S->nops];
        setbit(S, o->src * 4 + o->dir, o->step, 0);
    }
}

/* Instance inst rooted at root: reduce by the least r from r0 that
 * reaches every chip, then broadcast. 1 placed, 0 not within smax, or an
 * error. *r_out: the r used. */
static int place(sl_set *S, int inst, int root, int r0, int *r_out)
{
    for (int r = r0; r < S->smax; r++) {
        int mark = S->nops, got = grow(S, inst, root, r, 1);
        if (got < 0)
            return got;
        if (got < S->live) {
            undo(S, mark);
            continue;
        }
        int mid = S->nops;
        got = grow(S, inst, root, r, 0);
        if (got < 0)
            return got;
        if (got == S->live) {
            *r_out = r;
            return 1;
        }
        undo(S, mid);
        undo(S, mark);
        return 0;
    }
    return 0;
}

static void sl_free(sl_set *S)
{
    free(S->nbr);
    free(S->occ);
    free(S->t);
    free(S->rs);
    free(S->heap);
    free(S->ops);
    free(S->root);
}

static int sl_alloc(sl_set *S, const ftm_mesh *m, int k, int smax)
{
    size_t n = (size_t)m->nchips;
    *S = (sl_set){ .n = m->nchips, .live = ftm_mesh_healthy_count(m), .smax = smax,
                   .nw = (smax + 63) / 64 };
    S->nbr = malloc(4 * n * sizeof(int));
    S->occ = calloc(4 * n * (size_t)S->smax, 1);
    if (getenv("SL_CAP")) sl_cap = atoi(getenv("SL_CAP"));
    S->t = malloc(n * sizeof(int));
    S->rs = malloc(4 * n * sizeof(int));
    S->root = malloc((size_t)k * sizeof(int));
    if (!S->nbr || !S->occ || !S->t || !S->rs || !S->root)
        return FTM_ENOMEM;
    for (size_t l = 0; l < 4 * n; l++) {
        int c = (int)(l / 4), d = (int)(l % 4), v = -1;
        S->nbr[l] = ftm_mesh_alive(m, c) && ftm_mesh_link_both(m, c, d, &v) ? v : -1;
    }
    return 0;
}

/* Roots spread over the mesh: a grid of about k points, each moved to the
 * live chip at or after it (row-major); repeats allowed. */
static void pick_roots(sl_set *S, const ftm_mesh *m, int k)
{
    int a = 1;
    while ((a + 1) * (a + 1) <= k)
        a++;
    int nb = (k + a - 1) / a;
    for (int t = 0; t < k; t++) {
        int gr = t % a, gc = (t / a) % nb;
        int x = ((2 * gr + 1) * m->rows / (2 * a)) * m->cols + (2 * gc + 1) * m->cols / (2 * nb);
        while (!ftm_mesh_alive(m, x))
            x = (x + 1) % S->n;
        S->root[t] = x;
    }
}

static int cmp_op(const void *a, const void *b)
{
    const sl_op *x = a, *y = b;
    return x->step != y->step ? (x->step > y->step) - (x->step < y->step)
                              : (x->src * 4 + x->dir) - (y->src * 4 + y->dir);
}

static int emit(ftm_sched *s, sl_set *S, const ftm_mesh *m, size_t count, ftm_red red, int k)
{
    int *route = malloc(4 * (size_t)S->n * sizeof(int)), rc = route ? 0 : FTM_ENOMEM;
    for (int l = 0; route && l < 4 * S->n; l++)
        route[l] = -1;
    qsort(S->ops, (size_t)S->nops, sizeof(sl_op), cmp_op);
    size_t el = ftm_red_elem_size(red);
    int nsteps = S->nops ? S->ops[S->nops - 1].step + 1 : 0;
    for (int st = 0, i = 0; !rc && st < nsteps; st++) {
        for (int u = 0; u < S->n && !rc; u++)
            if (ftm_mesh_alive(m, u))
                rc = ftm_sched_step(s, u, PH_SLOTS, st);
        for (; !rc && i < S->nops && S->ops[i].step == st; i++) {
            const sl_op *o = &S->ops[i];
            size_t f, len;
            ftm_sched_block(count, k, o->inst, &f, &len);
            int rt = sched_hop_route(s, route, o->src, o->dir, S->nbr[o->src * 4 + o->dir]);
            rc = rt < 0 ? rt
                        : ftm_sched_xfer(s, rt, f * el, f * el, len * el,
                                         o->up ? red : FTM_RED_COPY);
        }
    }
    free(route);
    return rc;
}

int ftm_allreduce_slots_build_k(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                size_t count, ftm_red red, int k, int r0)
{
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    sl_set S;
    rc = sl_alloc(&S, m, k, 8 * (k + m->rows + m->cols) + 64);
    if (!rc)
        pick_roots(&S, m, k);
    for (int i = 0, r = r0; !rc && i < k; i++) {
        int spread = getenv("SL_SPREAD") ? atoi(getenv("SL_SPREAD")) : -1;
        int start = spread < 0 ? (r - 8 > r0 ? r - 8 : r0) : r0 + (int)((long)i * spread / k);
        int got = place(&S, i, S.root[i], start, &r);
        rc = got < 0 ? got : got ? 0 : FTM_ENOTSUP;
    }
    if (!rc && getenv("SL_DEBUG")) {
        int ns = 0, up[4096] = {0}, dn[4096] = {0};
        for (int i = 0; i < S.nops; i++) {
            (S.ops[i].up ? up : dn)[S.ops[i].step]++;
            ns = S.ops[i].step + 1 > ns ? S.ops[i].step + 1 : ns;
        }
        for (int st = 0; st < ns; st++)
            fprintf(stderr, "%d:%d/%d ", st, up[st], dn[st]);
        fprintf(stderr, "\n");
    }
    if (!rc)
        rc = ftm_sched_init(s, ctx, PH_SLOTS, m->nchips, count * ftm_red_elem_size(red));
    if (!rc) {
        rc = emit(s, &S, m, count, red, k);
        if (rc)
            ftm_sched_free(s);
        else
            ftm_sched_trim(s);
    }
    sl_free(&S);
    return rc;
}
