/* "2d-mirror": 2d-concurrent twice, on two halves of the buffer, the second
 * planned on the mesh turned by 180 degrees, in the same steps.
 *
 * Around a hole, 2d-concurrent puts two ring edges on one link of a chip
 * next to it (the row band's turn and the column ring; README, "The 10%
 * target"), so that link carries the whole buffer. The planner turns the
 * band round the hole on one side; planned on the turned mesh it turns on
 * the other side, so the doubled link of the second copy is another link.
 * Each copy carries half the buffer, so a link doubled in one copy only
 * carries 3/4 of the buffer (1/2 + 1/4) instead of all of it.
 *
 * Each part is the row-first scheme (allreduce_2d.c) on a transformed mesh
 * (rows and columns reversed, then maybe transposed), mapped back; every
 * part puts each transfer at the same step index on sender and receiver,
 * so merging them step by step cannot create a wait cycle (as in
 * allreduce_2d_conc.c). On a healthy torus the turned mesh has the same
 * plan and the schedule costs what 2d-concurrent costs.
 */
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "twod_share.h"

#include <stdlib.h>
#include <string.h>

enum { NPART = 4 };

/* A transform of the mesh: reverse rows, reverse columns, then transpose. */
typedef struct sym { int fr, fc, tr; } sym;

static int sym_dir(sym s, int d)
{
    if (s.fr && (d == FTM_DIR_N || d == FTM_DIR_S))
        d = ftm_dir_opposite(d);
    if (s.fc && (d == FTM_DIR_E || d == FTM_DIR_W))
        d = ftm_dir_opposite(d);
    return s.tr ? 3 - d : d; /* N <-> W, E <-> S */
}

static int sym_chip(const ftm_mesh *m, const ftm_mesh *t, sym s, int x)
{
    int r = ftm_mesh_row(m, x), c = ftm_mesh_col(m, x);
    if (s.fr)
        r = m->rows - 1 - r;
    if (s.fc)
        c = m->cols - 1 - c;
    return s.tr ? ftm_mesh_chip(t, c, r) : ftm_mesh_chip(t, r, c);
}

static int make_mesh(const ftm_mesh *m, sym s, ftm_mesh *t)
{
    int rc = s.tr ? ftm_mesh_init(t, m->cols, m->rows, m->torus)
                  : ftm_mesh_init(t, m->rows, m->cols, m->torus);
    if (rc)
        return rc;
    for (int a = 0; a < m->nchips; a++) {
        int b = sym_chip(m, t, s, a);
        t->chip_dead[b] = m->chip_dead[a];
        for (int d = 0; d < FTM_NDIRS; d++)
            t->link_dead[b * FTM_NDIRS + sym_dir(s, d)] = m->link_dead[a * FTM_NDIRS + d];
    }
    return 0;
}

typedef struct part {
    ftm_mesh t;          /* the transformed mesh */
    ftm_sched s;         /* built on t */
    int *back;           /* [nchips] chip of t -> chip of m */
    int *fwd;            /* [nchips] chip of m -> chip of t */
    unsigned char dback[FTM_NDIRS];
    int *route;          /* [s.nroutes] route id in the merged schedule */
    int *rchip, *rop;    /* [s.next_tag] receiving chip (of t) and op index */
} part;

static void part_free(part *p)
{
    ftm_sched_free(&p->s);
    ftm_mesh_free(&p->t);
    free(p->back);
    free(p->fwd);
    free(p->route);
    free(p->rchip);
    free(p->rop);
}

/* Builds elements [first, first + cnt) on m transformed by sy. */
static int part_build(part *p, const ftm_mesh *m, sym sy, size_t first, size_t cnt, size_t total,
                      ftm_red red)
{
    memset(p, 0, sizeof *p);
    int rc = make_mesh(m, sy, &p->t);
    if (rc)
        return rc;
    p->back = malloc(sizeof(int) * (size_t)m->nchips);
    p->fwd = malloc(sizeof(int) * (size_t)m->nchips);
    if (!p->back || !p->fwd)
        return FTM_ENOMEM;
    for (int a = 0; a < m->nchips; a++) {
        p->fwd[a] = sym_chip(m, &p->t, sy, a);
        p->back[p->fwd[a]] = a;
    }
    for (int d = 0; d < FTM_NDIRS; d++)
        p->dback[sym_dir(sy, d)] = (unsigned char)d;
    return ftm_twod_build_range(&p->s, &p->t, first, cnt, total, red, "2d");
}

/* Copies part p's routes into out (mapped back to m) and indexes its
 * receives by tag. */
static int part_map(part *p, ftm_sched *out)
{
    const ftm_sched *s = &p->s;
    size_t nt = s->next_tag ? s->next_tag : 1;
    p->route = malloc(sizeof(int) * (size_t)(s->nroutes ? s->nroutes : 1));
    p->rchip = malloc(sizeof(int) * nt);
    p->rop = malloc(sizeof(int) * nt);
    unsigned char *dirs = malloc((size_t)(s->ndirs ? s->ndirs : 1));
    int rc = p->route && p->rchip && p->rop && dirs ? 0 : FTM_ENOMEM;
    for (int i = 0; i < s->nroutes && !rc; i++) {
        const ftm_route *r = &s->routes[i];
        for (int h = 0; h < r->nhops; h++)
            dirs[h] = p->dback[s->dirs[r->first + h]];
        p->route[i] = ftm_sched_route(out, p->back[r->src], p->back[r->dst], dirs, r->nhops);
        if (p->route[i] < 0)
            rc = p->route[i];
    }
    free(dirs);
    for (int c = 0; c < s->nchips && !rc; c++)
        for (int k = 0; k < s->prog[c].nops; k++)
            if (s->prog[c].ops[k].kind == FTM_OP_RECV) {
                p->rchip[s->prog[c].ops[k].tag] = c;
                p->rop[s->prog[c].ops[k].tag] = k;
            }
    return rc;
}

/* Appends the sends of step j of chip c of m (its chip fwd[c] in part p). */
static int part_step(ftm_sched *out, const part *p, int c, int j)
{
    const ftm_chip_prog *pg = &p->s.prog[p->fwd[c]];
    if (j >= pg->nsteps)
        return 0;
    const ftm_step *st = &pg->steps[j];
    for (int k = st->first_op; k < st->first_op + st->nops; k++) {
        const ftm_op *op = &pg->ops[k];
        if (op->kind != FTM_OP_SEND)
            continue;
        const ftm_op *rv = &p->s.prog[p->rchip[op->tag]].ops[p->rop[op->tag]];
        int rc = ftm_sched_xfer(out, p->route[op->route], op->off, rv->off, op->len, (ftm_red)rv->red);
        if (rc)
            return rc;
    }
    return 0;
}

/* Merges the parts step by step: step j of a chip is its step j of every
 * part. */
static int merge(ftm_sched *out, const ftm_mesh *m, part *P, size_t bytes)
{
    int rc = ftm_sched_init(out, "2d-mirror", m->nchips, bytes), maxs = 0;
    for (int q = 0; q < NPART && !rc; q++) {
        rc = part_map(&P[q], out);
        for (int c = 0; c < m->nchips; c++)
            if (P[q].s.prog[c].nsteps > maxs)
                maxs = P[q].s.prog[c].nsteps;
    }
    for (int j = 0; j < maxs && !rc; j++) {
        for (int c = 0; c < m->nchips && !rc; c++) {
            const ftm_step *st = NULL;
            for (int q = 0; q < NPART && !st; q++)
                if (j < P[q].s.prog[P[q].fwd[c]].nsteps)
                    st = &P[q].s.prog[P[q].fwd[c]].steps[j];
            if (st)
                rc = ftm_sched_step(out, c, st->phase, st->index);
        }
        for (int q = 0; q < NPART && !rc; q++)
            for (int c = 0; c < m->nchips && !rc; c++)
                rc = part_step(out, &P[q], c, j);
    }
    if (rc)
        ftm_sched_free(out);
    else
        ftm_sched_trim(out);
    return rc;
}

int ftm_allreduce_2d_mirror_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    /* Quarters: rows-first and columns-first on m, then both on m turned. */
    static const sym syms[NPART] = { { 0, 0, 0 }, { 0, 0, 1 }, { 1, 1, 0 }, { 1, 1, 1 } };
    part P[NPART];
    size_t cut[NPART + 1];
    for (int q = 0; q <= NPART; q++)
        cut[q] = count * (size_t)q / NPART;
    int rc = 0;
    memset(P, 0, sizeof P);
    for (int q = 0; q < NPART && !rc; q++)
        rc = part_build(&P[q], m, syms[q], cut[q], cut[q + 1] - cut[q], count, red);
    if (!rc)
        rc = merge(s, m, P, count * ftm_red_elem_size(red));
    for (int q = 0; q < NPART; q++)
        part_free(&P[q]);
    return rc;
}
