/* Choosing between two built schedules by modeled time: the 2-D
 * family's picker (allreduce_2d_pick.c) and the trees' tree counts
 * (trees.c); and the cost parameters every build's choices are made for.
 * Internal. */
#ifndef FTMESH_COLL_KEEP_H
#define FTMESH_COLL_KEEP_H

#include "ftmesh/costmodel.h"
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

/* The parameters a build chooses for: *cost (a build context's,
 * ftm_sched_ctx.cost, or a schedule's), or the TPU-v3 defaults (NULL). */
ftm_cost_params coll_cost(const ftm_cost_params *cost);

/* Keeps in *s the faster (under s->cost, coll_cost; ties: *s) of two builds, *s
 * and *c, whose builders returned rs and rc. Where a watched build
 * (sched.h) stopped (FTM_ESTOPPED) the other is kept; FTM_ESTOPPED when
 * both stopped; an error of either is returned with both freed. In a dry
 * run, which knows no times, the larger schedule (an upper bound). */
int coll_keep_built(ftm_sched *s, int rs, ftm_sched *c, int rc, const ftm_mesh *m);

#endif
