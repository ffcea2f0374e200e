/* Cost model: modeled time of a schedule on the emulated hardware.
 *
 * Deterministic: a pure function of the schedule, the mesh and the
 * parameters, never of the thread schedule or the machine.
 */
#ifndef FTMESH_COSTMODEL_H
#define FTMESH_COSTMODEL_H

#include <stdint.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

typedef struct ftm_cost_params {
    double link_Bps;   /* bytes/s per link per direction (TPU-v3 ICI: 100e9) */
    double hop_s;      /* latency per hop, seconds */
    double hbm_Bps;    /* chip memory bandwidth for reductions (TPU-v3: 900e9) */
} ftm_cost_params;

typedef struct ftm_cost_result {
    double time_s;            /* modeled time of the whole schedule */
    uint64_t max_link_bytes;  /* bytes on the most-loaded directed link */
    uint64_t total_link_bytes;/* bytes summed over all directed links */
} ftm_cost_result;

void ftm_cost_defaults(ftm_cost_params *p);

/* Replays schedule s on mesh m. link_bytes, if not NULL, receives the bytes
 * charged per directed link (nchips * 4 entries, chip * 4 + dir). Returns 0,
 * FTM_EINVAL (a receive with no matching send), FTM_EHANG (the schedule
 * deadlocks) or FTM_ENOMEM. */
int ftm_cost_sched(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                   ftm_cost_result *res, uint64_t *link_bytes);

#endif
