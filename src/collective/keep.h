/* Choosing between two built schedules by modeled time: the 2-D
 * family's picker (allreduce_2d_pick.c) and the trees' tree counts
 * (trees.c). Internal. */
#ifndef FTMESH_COLL_KEEP_H
#define FTMESH_COLL_KEEP_H

#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

/* Keeps in *s the faster (TPU-v3 defaults; ties: *s) of two builds, *s
 * and *c, whose builders returned rs and rc. Where a watched build
 * (sched.h) stopped (FTM_ESTOPPED) the other is kept; FTM_ESTOPPED when
 * both stopped; an error of either is returned with both freed. In a dry
 * run, which knows no times, the larger schedule (an upper bound). */
int coll_keep_built(ftm_sched *s, int rs, ftm_sched *c, int rc, const ftm_mesh *m);

#endif
