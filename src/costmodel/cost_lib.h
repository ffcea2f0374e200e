/* Cost model calls for the library's other modules, not exported: not
 * part of the product's API (include/ftmesh/costmodel.h). */
#ifndef FTMESH_COST_LIB_H
#define FTMESH_COST_LIB_H

#include "ftmesh/costmodel.h"

/* Tells this thread's cost model that s replays on m with p to *res and
 * link_bytes (nchips * 4): the caller knows, s being a rebuild (builds are
 * deterministic) of a schedule that replayed to them. The next
 * ftm_cost_sched of s (unchanged) answers from them. Returns 0, FTM_EINVAL
 * or FTM_ENOMEM. */
int ftm_cost_memo_put(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                      const ftm_cost_result *res, const uint64_t *link_bytes);

#endif
