/* Fault scripts inside core: what faults.c and faults_random.c share. */
#ifndef FTMESH_CORE_FAULTS_INT_H
#define FTMESH_CORE_FAULTS_INT_H
#include "ftmesh/faults.h"

#include <string.h>

/* ftm_fault_cmp for qsort. */
int core_fault_qcmp(const void *a, const void *b);

/* 1 when a and b fall at the same instant (ftm_fault_cmp ties but for the
 * script order): the pre-run check applies such events together. */
int core_fault_same_time(const ftm_fault_event *a, const ftm_fault_event *b);

/* 1 when kills a and b can strike in either order: in one allreduce, each
 * after a packet count (FTM_FAULT_MID too), which each victim reaches on
 * its own thread (a count of 0 strikes at the start, with its instant). */
int core_fault_concurrent(const ftm_fault_event *a, const ftm_fault_event *b);
/* The chip that strikes a kill after a packet count: the link's sender,
 * else the first chip it kills (as the runtime arms it); -1 for any other
 * event or one outside m. A chip counts its packets towards one kill per
 * allreduce. */
int core_fault_striker(const ftm_mesh *m, const ftm_fault_event *e);

/* core_fault_same_time or core_fault_concurrent: the events checked as
 * one group (in time order they are next to each other). */
int core_fault_together(const ftm_fault_event *a, const ftm_fault_event *b);

/* The kills ev[0..n) strike in any order (core_fault_concurrent): 0 when
 * every subset of them leaves the healthy chips of `before` (the mesh
 * just before them) connected; FTM_EPARTITION with *who the kill whose
 * chips the others can cut off, *a and *b two chips then apart (any of
 * them may be NULL); FTM_ENOMEM. */
int core_fault_window_ok(const ftm_mesh *before, const ftm_fault_event *ev, int n, int *who,
                         int *a, int *b);

/* dst's dead chips and links := src's (the same shape). */
static inline void core_mesh_set(ftm_mesh *dst, const ftm_mesh *src)
{
    memcpy(dst->chip_dead, src->chip_dead, (size_t)src->nchips);
    memcpy(dst->link_dead, src->link_dead, (size_t)src->nchips * FTM_NDIRS);
}

#endif
