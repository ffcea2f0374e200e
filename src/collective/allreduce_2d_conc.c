/* "2d" (the row-first 2-D allreduce) and "2d-concurrent" (its concurrent
 * variant): the registry's entry points.
 *
 * The row-first scheme (allreduce_2d.c) runs its phases one after another:
 * while the rows reduce-scatter, the column links idle, and the other way
 * round, so each chip drives 2 of its 4 links (ceiling on a healthy TPU-v3
 * pod: 2 x 100 GB/s x 1024 = 204.8 TB/s of busbw).
 *
 * CONCURRENT: half A of the buffer goes row-first, half B column-first, in
 * the same steps, each half bidirectional as before:
 *
 *     steps:     phase 1 (big)     phases 2-3 (small)   phase 4 (big)
 *     half A     rows  E + W       columns N + S        rows  E + W
 *     half B     cols  N + S       rows    E + W        cols  N + S
 *
 * so all four links of every chip carry data in every phase (ceiling
 * 409.6 TB/s). Half B is the row-first scheme planned on the TRANSPOSED
 * mesh (rows <-> columns, directions N <-> W and E <-> S), so its bands are
 * columns and it goes around holes the same way, then mapped back. Both
 * halves' schedules put every transfer at the same step index on sender
 * and receiver (allreduce_2d.c pads phase 1), so merging them step by step
 * (step j of a chip = its step j of A plus its step j of B) cannot create
 * a wait cycle.
 *
 * With a hole, the two halves' rings compete for the links around it (a
 * band's turn-around uses a link of the other dimension, which the other
 * half's ring through it needs in the same steps), and the coupled steps
 * make the concurrent schedule as slow as the row-first one or slower:
 * around a hole there are no idle links left to detour over (the chips
 * next to it have 3 live links but sit on 4 rings). --algo auto picks
 * whichever models faster.
 */
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"

#include <stdlib.h>
#include <string.h>

/* Mesh t = m transposed: chip (r, c) of m is (c, r) of t; direction d of
 * m is 3 - d in t (N <-> W, E <-> S). */
static int transpose(const ftm_mesh *m, ftm_mesh *t)
{
    int rc = ftm_mesh_init(t, m->cols, m->rows, m->torus);
    if (rc)
        return rc;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            int a = ftm_mesh_chip(m, r, c), b = ftm_mesh_chip(t, c, r);
            t->chip_dead[b] = m->chip_dead[a];
            for (int d = 0; d < FTM_NDIRS; d++)
                t->link_dead[b * FTM_NDIRS + 3 - d] = m->link_dead[a * FTM_NDIRS + d];
        }
    return 0;
}

typedef struct part {
    const ftm_sched *s;
    const ftm_mesh *t;  /* the mesh s was built on if transposed, else NULL */
    int *route;         /* [s->nroutes] route id in the merged schedule */
    int *rtag;          /* [s->next_tag] receive op index (in its chip's ops) */
    int *rchip;         /* [s->next_tag] receiving chip */
} part;

static int map_chip(const part *p, int x, int cols)
{
    if (!p->t)
        return x;
    int r = x / p->t->cols, c = x % p->t->cols; /* (r, c) in t is (c, r) in m */
    return c * cols + r;
}

static int part_init(part *p, ftm_sched *out, const ftm_mesh *m)
{
    const ftm_sched *s = p->s;
    p->route = malloc(sizeof(int) * (size_t)(s->nroutes ? s->nroutes : 1));
    p->rtag = malloc(sizeof(int) * (size_t)(s->next_tag ? s->next_tag : 1));
    p->rchip = malloc(sizeof(int) * (size_t)(s->next_tag ? s->next_tag : 1));
    unsigned char *dirs = malloc((size_t)(s->ndirs ? s->ndirs : 1));
    if (!p->route || !p->rtag || !p->rchip || !dirs) {
        free(dirs);
        return FTM_ENOMEM;
    }
    int rc = 0;
    for (int i = 0; i < s->nroutes && !rc; i++) {
        const ftm_route *r = &s->routes[i];
        for (int h = 0; h < r->nhops; h++) {
            int d = s->dirs[r->first + h];
            dirs[h] = (unsigned char)(p->t ? 3 - d : d);
        }
        int id = ftm_sched_route(out, map_chip(p, r->src, m->cols), map_chip(p, r->dst, m->cols),
                                 dirs, r->nhops);
        if (id < 0)
            rc = id;
        p->route[i] = id;
    }
    free(dirs);
    for (int c = 0; c < s->nchips; c++)
        for (int k = 0; k < s->prog[c].nops; k++)
            if (s->prog[c].ops[k].kind == FTM_OP_RECV) {
                p->rtag[s->prog[c].ops[k].tag] = k;
                p->rchip[s->prog[c].ops[k].tag] = c;
            }
    return rc;
}

static void part_free(part *p)
{
    free(p->route);
    free(p->rtag);
    free(p->rchip);
}

/* Appends the sends of step j of chip c (of part p) to out, as transfers. */
static int part_step(ftm_sched *out, const part *p, int c, int j)
{
    const ftm_chip_prog *pg = &p->s->prog[c];
    if (j >= pg->nsteps)
        return 0;
    const ftm_step *st = &pg->steps[j];
    for (int k = 0; k < st->nops; k++) {
        const ftm_op *op = &pg->ops[st->first_op + k];
        if (op->kind != FTM_OP_SEND)
            continue;
        const ftm_op *rv = &p->s->prog[p->rchip[op->tag]].ops[p->rtag[op->tag]];
        int rc = ftm_sched_xfer(out, p->route[op->route], op->off, rv->off, op->len, (ftm_red)rv->red);
        if (rc)
            return rc;
    }
    return 0;
}

/* Merges a (built on m) and b (built on t = m transposed) step by step. */
static int merge(ftm_sched *out, const ftm_mesh *m, const ftm_sched *a, const ftm_sched *b,
                 const ftm_mesh *t)
{
    int rc = ftm_sched_init(out, "2d-concurrent", m->nchips, a->bytes);
    if (rc)
        return rc;
    part pa = { a, NULL, NULL, NULL, NULL }, pb = { b, t, NULL, NULL, NULL };
    rc = part_init(&pa, out, m);
    if (!rc)
        rc = part_init(&pb, out, m);
    int maxs = 0;
    for (int c = 0; c < m->nchips; c++) {
        if (a->prog[c].nsteps > maxs)
            maxs = a->prog[c].nsteps;
        if (b->prog[c].nsteps > maxs)
            maxs = b->prog[c].nsteps;
    }
    for (int j = 0; j < maxs && !rc; j++) {
        for (int c = 0; c < m->nchips && !rc; c++) {
            const ftm_step *st = j < a->prog[c].nsteps ? &a->prog[c].steps[j] : NULL;
            int tb = ftm_mesh_chip(t, ftm_mesh_col(m, c), ftm_mesh_row(m, c));
            if (st || j < b->prog[tb].nsteps)
                rc = ftm_sched_step(out, c, st ? st->phase : b->prog[tb].steps[j].phase,
                                    st ? st->index : b->prog[tb].steps[j].index);
        }
        for (int c = 0; c < m->nchips && !rc; c++)
            rc = part_step(out, &pa, c, j);
        for (int c = 0; c < t->nchips && !rc; c++)
            rc = part_step(out, &pb, c, j);
    }
    part_free(&pa);
    part_free(&pb);
    if (rc)
        ftm_sched_free(out);
    else
        ftm_sched_trim(out);
    return rc;
}

int ar2d_build_concurrent(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    ftm_mesh t;
    int rc = transpose(m, &t);
    if (rc)
        return rc;
    size_t ha = (count + 1) / 2;
    ftm_sched a, b;
    rc = ar2d_build_range(&a, m, 0, ha, count, red, "2d");
    if (!rc) {
        rc = ar2d_build_range(&b, &t, ha, count - ha, count, red, "2d");
        if (!rc) {
            rc = merge(s, m, &a, &b, &t);
            ftm_sched_free(&b);
        }
        ftm_sched_free(&a);
    }
    ftm_mesh_free(&t);
    return rc;
}

int ftm_allreduce_2d_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    return ar2d_build_range(s, m, 0, count, count, red, "2d");
}

int ftm_allreduce_2d_concurrent_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    return ar2d_build_concurrent(s, m, count, red);
}
