/* Fault scripts inside core: what faults.c and faults_random.c share. */
#ifndef FTMESH_CORE_FAULTS_INT_H
#define FTMESH_CORE_FAULTS_INT_H
#include "ftmesh/faults.h"

/* 1 when a and b fall at the same instant (ftm_fault_cmp ties but for the
 * script order): the pre-run check applies such events together. */
int core_fault_same_time(const ftm_fault_event *a, const ftm_fault_event *b);

#endif
