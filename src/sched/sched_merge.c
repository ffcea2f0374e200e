/* Two schedules of the same chips merged step by step (ftm_sched_merge),
 * in whichever form they were built: unpacked, packed or dry. The
 * builders call it without knowing the form (2d-concurrent merges its
 * row-first and column-first halves). */
#include "ftmesh/sched.h"
#include "ftmesh/error.h"
#include "sched_int.h"
#include "sched_code.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Part b of the merge: its routes' ids in the merged schedule, its chips'
 * and directions' names there, its tags' offset. Part a keeps its ids
 * (its routes are added first, in order, and its tags come first). */
typedef struct part {
    const char *(*phase_of)(const char *pa, const char *pb); /* ftm_sched_merge's */
    const int *out_chip;         /* [b->nchips] b's chip x is out's out_chip[x] */
    const unsigned char *dir_of; /* [FTM_NDIRS] b's direction d is out's dir_of[d] */
    int *route;                  /* [b->nroutes] route id in the merged schedule */
    uint32_t tag0;               /* b's tag x is tag0 + x in the merged schedule */
} part;

/* Merged step's phase: phase_of's name, else a's, else b's. */
static const char *merged_phase(const part *pb, const char *pa, const char *pbp)
{
    return pb->phase_of ? pb->phase_of(pa, pbp) : pa ? pa : pbp;
}

/* Adds s's routes to out (mapped as pb says when pb), ids into route (or
 * not). */
static int add_routes(ftm_sched *out, const ftm_sched *s, const part *pb, int *route)
{
    unsigned char *dirs = malloc((size_t)(s->ndirs ? s->ndirs : 1));
    if (!dirs)
        return FTM_ENOMEM;
    int rc = 0;
    for (int i = 0; i < s->nroutes && !rc; i++) {
        const ftm_route *r = &s->routes[i];
        for (int h = 0; h < r->nhops; h++) {
            int d = s->dirs[r->first + h];
            dirs[h] = pb ? pb->dir_of[d] : (unsigned char)d;
        }
        int src = pb ? pb->out_chip[r->src] : r->src, dst = pb ? pb->out_chip[r->dst] : r->dst;
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
    op.peer = (unsigned)pb->out_chip[op.peer];
    op.route = (unsigned)pb->route[op.route];
    op.tag += pb->tag0;
    return op;
}

/* Packed parts (sched_pack.c), read step by step; b's ops go to lane 1, so
 * both parts keep their own slots and the merged program takes at most
 * a's bytes + b's + a few (b's first op in each slot and its first step
 * header may take longer) -- the bound a dry run counts. */
static int merge_packed(ftm_sched *out, ftm_sched *a, ftm_sched *b, const part *pb, int c,
                        int tb, int ns)
{
    ftm_chip_prog *pa = &a->prog[c], *pp = &b->prog[tb];
    int rc = sched_reserve_code(out, c, SCHED_CODE(pa)->ncode + SCHED_CODE(pp)->ncode + 48);
    if (out->dry || rc)
        return rc ? rc : sched_dry_fill(out, c, ns, pa->nops + pp->nops,
                                            pa->dry_used > pp->dry_used ? pa->dry_used : pp->dry_used);
    ftm_sched_cur ca = { 0 }, cb = { 0 };
    ftm_sched_view va = { 0 }, vb = { 0 };
    for (int j = 0; j < ns && !rc; j++) {
        int ha = j < pa->nsteps ? ftm_sched_read_step(a, c, &ca, &va) : 0;
        int hb = j < pp->nsteps ? ftm_sched_read_step(b, tb, &cb, &vb) : 0;
        if (ha < 0 || hb < 0 || (!ha && !hb))
            rc = ha < 0 ? ha : hb < 0 ? hb : FTM_EINVAL;
        else
            rc = ftm_sched_step(out, c, merged_phase(pb, ha ? va.phase : NULL, hb ? vb.phase : NULL),
                                ha ? va.index : vb.index);
        for (int k = 0; ha && k < va.nops && !rc; k++)
            rc = sched_put_op(out, c, &va.ops[k], 0);
        for (int k = 0; hb && k < vb.nops && !rc; k++) {
            ftm_op op = renumber(&vb.ops[k], pb);
            rc = sched_put_op(out, c, &op, 1);
        }
    }
    ftm_sched_view_free(&va);
    ftm_sched_view_free(&vb);
    return rc;
}

/* Chip c of the merged schedule: step j = a's step j of c, then b's step j
 * of the same chip (tb in b). Moves the ops (b's renumbered), then frees
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
        rc = sched_dry_fill(out, c, ns, pa->nops + pp->nops,
                                pa->dry_used > pp->dry_used ? pa->dry_used : pp->dry_used);
    else
        rc = ftm_sched_reserve(out, c, ns, pa->nops + pp->nops);
    ftm_chip_prog *o = &out->prog[c];
    for (int j = 0; j < ns && !rc && !out->dry && !out->packed; j++) {
        const ftm_step *sa = j < pa->nsteps ? &pa->steps[j] : NULL;
        const ftm_step *sb = j < pp->nsteps ? &pp->steps[j] : NULL;
        rc = ftm_sched_step(out, c, merged_phase(pb, sa ? sa->phase : NULL, sb ? sb->phase : NULL),
                            sa ? sa->index : sb->index);
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
    sched_clear_chip(a, c);
    sched_clear_chip(b, tb);
    return rc;
}

int ftm_sched_phase_match(const char *step_phase, const char *query)
{
    if (!step_phase || !query)
        return 0;
    const char *plus = strchr(step_phase, '+');
    if (query[0] == '+')
        return plus && !strcmp(plus, query);
    size_t n = plus ? (size_t)(plus - step_phase) : strlen(step_phase);
    return strlen(query) == n && !strncmp(step_phase, query, n);
}

int ftm_sched_merge(ftm_sched *out, const char *algo, ftm_sched *a, ftm_sched *b,
                    const int *b_chip, const unsigned char *dir_of,
                    const char *(*phase_of)(const char *pa, const char *pb))
{
    if (a->nchips != b->nchips || a->bytes != b->bytes)
        return FTM_EINVAL;
    if ((uint64_t)a->next_tag + b->next_tag >= UINT32_MAX)
        return FTM_ENOMEM;
    ftm_sched_ctx ctx = sched_ctx_of(a);
    int n = a->nchips, rc = ftm_sched_init(out, &ctx, algo, n, a->bytes);
    if (rc)
        return rc;
    int *out_chip = malloc(sizeof(int) * (size_t)n);
    part pb = { phase_of, out_chip, dir_of,
                malloc(sizeof(int) * (size_t)(b->nroutes ? b->nroutes : 1)), a->next_tag };
    rc = pb.route && out_chip ? 0 : FTM_ENOMEM;
    for (int c = 0; c < n && !rc; c++)
        out_chip[b_chip[c]] = c;
    if (!rc)
        rc = add_routes(out, a, NULL, NULL);
    if (!rc)
        rc = add_routes(out, b, &pb, pb.route);
    for (int c = 0; c < n && !rc; c++)
        rc = merge_chip(out, a, b, &pb, c, b_chip[c]);
    out->next_tag = a->next_tag + b->next_tag;
    if (out->dry) /* a merged step holds at most a step of each part */
        out->max_step_ops = a->max_step_ops + b->max_step_ops;
    free(pb.route);
    free(out_chip);
    if (rc)
        ftm_sched_free(out);
    else
        ftm_sched_trim(out);
    return rc;
}
