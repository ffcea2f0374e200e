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

/* Part b of the merge: its routes' ids in the merged schedule, its chips'
 * and tags' offsets. Part a keeps its ids (its routes are added first, in
 * order, and its tags come first). */
typedef struct part {
    const ftm_mesh *t;  /* the mesh b was built on (m transposed) */
    int *route;         /* [b->nroutes] route id in the merged schedule */
    uint32_t tag0;      /* b's tag x is tag0 + x in the merged schedule */
} part;

static int map_chip(const ftm_mesh *t, int x, int cols)
{
    int r = x / t->cols, c = x % t->cols; /* (r, c) in t is (c, r) in m */
    return c * cols + r;
}

/* Adds s's routes to out (mapped from t when t), ids into route (or not). */
static int add_routes(ftm_sched *out, const ftm_sched *s, const ftm_mesh *t, int cols,
                      int *route)
{
    unsigned char *dirs = malloc((size_t)(s->ndirs ? s->ndirs : 1));
    if (!dirs)
        return FTM_ENOMEM;
    int rc = 0;
    for (int i = 0; i < s->nroutes && !rc; i++) {
        const ftm_route *r = &s->routes[i];
        for (int h = 0; h < r->nhops; h++) {
            int d = s->dirs[r->first + h];
            dirs[h] = (unsigned char)(t ? 3 - d : d);
        }
        int src = t ? map_chip(t, r->src, cols) : r->src, dst = t ? map_chip(t, r->dst, cols) : r->dst;
        int id = ftm_sched_route(out, src, dst, dirs, r->nhops);
        if (id < 0)
            rc = id;
        else if (route)
            route[i] = id;
    }
    free(dirs);
    return rc;
}

/* b's op k of a step, renumbered into the merged schedule. */
static ftm_op renumber(const ftm_op *o, const part *pb)
{
    ftm_op op = *o;
    op.peer = (unsigned)map_chip(pb->t, (int)op.peer, pb->t->rows); /* = m's cols */
    op.route = (unsigned)pb->route[op.route];
    op.tag += pb->tag0;
    return op;
}

/* Packed parts (sched.h), read step by step; b's ops go to lane 1, so
 * both parts keep their own slots and the merged program takes at most
 * a's bytes + b's + a few (b's first op in each slot and its first step
 * header may take longer) -- the bound a dry run counts. */
static int merge_packed(ftm_sched *out, ftm_sched *a, ftm_sched *b, const part *pb, int c,
                        int tb, int ns)
{
    ftm_chip_prog *pa = &a->prog[c], *pp = &b->prog[tb];
    int rc = ftm_sched_reserve_code(out, c, pa->ncode + pp->ncode + 48);
    if (out->dry || rc)
        return rc ? rc : ftm_sched_dry_fill(out, c, ns, pa->nops + pp->nops,
                                            pa->dry_used > pp->dry_used ? pa->dry_used : pp->dry_used);
    ftm_sched_cur ca = { 0 }, cb = { 0 };
    ftm_sched_view va = { 0 }, vb = { 0 };
    for (int j = 0; j < ns && !rc; j++) {
        int ha = j < pa->nsteps ? ftm_sched_read_step(a, c, &ca, &va) : 0;
        int hb = j < pp->nsteps ? ftm_sched_read_step(b, tb, &cb, &vb) : 0;
        if (ha < 0 || hb < 0 || (!ha && !hb))
            rc = ha < 0 ? ha : hb < 0 ? hb : FTM_EINVAL;
        else
            rc = ftm_sched_step(out, c, ha ? va.phase : vb.phase, ha ? va.index : vb.index);
        for (int k = 0; ha && k < va.nops && !rc; k++)
            rc = ftm_sched_put_op(out, c, &va.ops[k], 0);
        for (int k = 0; hb && k < vb.nops && !rc; k++) {
            ftm_op op = renumber(&vb.ops[k], pb);
            rc = ftm_sched_put_op(out, c, &op, 1);
        }
    }
    ftm_sched_view_free(&va);
    ftm_sched_view_free(&vb);
    return rc;
}

/* Chip c of the merged schedule: step j = a's step j of c, then b's step j
 * of the same chip (tb in t). Moves the ops (b's renumbered), then frees
 * both parts' programs of that chip: the merge never holds a third copy.
 * Every transfer of a and b is at the same step index on both its ends, so
 * the merged steps pair up as the parts' did. */
static int merge_chip(ftm_sched *out, ftm_sched *a, ftm_sched *b, const part *pb, int c, int tb)
{
    ftm_chip_prog *pa = &a->prog[c], *pp = &b->prog[tb];
    int ns = pa->nsteps > pp->nsteps ? pa->nsteps : pp->nsteps, rc = 0;
    if (out->packed)
        rc = merge_packed(out, a, b, pb, c, tb, ns);
    else if (out->dry) /* a dry run (sched.h): the counts the loop below makes */
        rc = ftm_sched_dry_fill(out, c, ns, pa->nops + pp->nops,
                                pa->dry_used > pp->dry_used ? pa->dry_used : pp->dry_used);
    else
        rc = ftm_sched_reserve(out, c, ns, pa->nops + pp->nops);
    ftm_chip_prog *o = &out->prog[c];
    for (int j = 0; j < ns && !rc && !out->dry && !out->packed; j++) {
        const ftm_step *sa = j < pa->nsteps ? &pa->steps[j] : NULL;
        const ftm_step *sb = j < pp->nsteps ? &pp->steps[j] : NULL;
        rc = ftm_sched_step(out, c, sa ? sa->phase : sb->phase, sa ? sa->index : sb->index);
        if (rc)
            break;
        ftm_step *st = &o->steps[o->nsteps - 1];
        for (int k = 0; sa && k < sa->nops; k++)
            o->ops[o->nops++] = pa->ops[sa->first_op + k];
        for (int k = 0; sb && k < sb->nops; k++)
            o->ops[o->nops++] = renumber(&pp->ops[sb->first_op + k], pb);
        st->nops = o->nops - st->first_op;
        if (st->nops > out->max_step_ops)
            out->max_step_ops = st->nops;
    }
    ftm_sched_clear_chip(a, c);
    ftm_sched_clear_chip(b, tb);
    return rc;
}

/* Merges a (built on m) and b (built on t = m transposed) step by step,
 * consuming their programs (their routes stay). */
static int merge(ftm_sched *out, const ftm_mesh *m, ftm_sched *a, ftm_sched *b,
                 const ftm_mesh *t)
{
    if ((uint64_t)a->next_tag + b->next_tag >= UINT32_MAX)
        return FTM_ENOMEM;
    int rc = ftm_sched_init(out, "2d-concurrent", m->nchips, a->bytes);
    if (rc)
        return rc;
    part pb = { t, malloc(sizeof(int) * (size_t)(b->nroutes ? b->nroutes : 1)), a->next_tag };
    rc = pb.route ? add_routes(out, a, NULL, m->cols, NULL) : FTM_ENOMEM;
    if (!rc)
        rc = add_routes(out, b, t, m->cols, pb.route);
    for (int c = 0; c < m->nchips && !rc; c++)
        rc = merge_chip(out, a, b, &pb, c, ftm_mesh_chip(t, ftm_mesh_col(m, c), ftm_mesh_row(m, c)));
    out->next_tag = a->next_tag + b->next_tag;
    if (out->dry) /* a merged step holds at most a step of each part */
        out->max_step_ops = a->max_step_ops + b->max_step_ops;
    free(pb.route);
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

/* The row-first scheme alone: 2d's own schedule (the fallback's rebuild). */
int ar2d_build_own_2d(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    return ar2d_build_range(s, m, 0, count, count, red, "2d");
}

/* Both entry points fall back to the 1-D ring on crowded meshes when it
 * models faster (allreduce_2d_fallback.c). */
int ftm_allreduce_2d_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    return ar2d_build_checked(s, m, count, red, ar2d_build_own_2d);
}

int ftm_allreduce_2d_concurrent_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    return ar2d_build_checked(s, m, count, red, ar2d_build_concurrent);
}
