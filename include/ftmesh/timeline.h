/* Timeline: a recorded run (trace.h) on a clock, ready to draw or export.
 *
 * Wall clock: the recorded times, shifted so that the first event starts
 * at 0. Modeled clock: each event takes the time the cost model's replay
 * of the same schedule gives the same op (ftm_cost_sched_timed): a step its
 * modeled start and end, a send and a forward the transfer's start and
 * arrival, a receive the transfer's start and the receive's completion.
 * Executions are laid end to end in their order (every chip executes the
 * same schedules in the same order), each taking its schedule's modeled
 * time, so one execution spans exactly the modeled time the cost model
 * reports; one that a failure cut short (a chip died in it, or the chips
 * ran fewer steps than their programs hold) ends where its last recorded
 * step or op ends, and the next starts there. The modeled clock has no
 * compute and no waiting: compute and wait events are left out of it
 * (recover too); a failure sits at the modeled end of the step it died in
 * (after what it did in that step).
 */
#ifndef FTMESH_TIMELINE_H
#define FTMESH_TIMELINE_H

#include "ftmesh/export.h"

#include <stddef.h>
#include "ftmesh/costmodel.h"
#include "ftmesh/trace.h"

typedef enum { FTM_CLOCK_WALL = 0, FTM_CLOCK_MODELED = 1 } ftm_clock;

typedef struct ftm_slice {
    const ftm_event *ev;   /* the recorded event (owned by the recorder) */
    double t0, t1;         /* seconds on the chosen clock, t0 <= t1 */
} ftm_slice;

typedef struct ftm_timeline {
    ftm_slice *slice;
    size_t n;
    double span_s;         /* last end - first start (0 if empty) */
} ftm_timeline;

/* Builds the timeline of everything tr recorded on clock (FTM_CLOCK_*);
 * p: the cost parameters for the modeled clock (NULL: defaults). Returns 0,
 * FTM_EINVAL, FTM_ENOMEM or a cost model error. */
FTM_EXTERN int ftm_timeline_build(const ftm_trace *tr, int clock, const ftm_cost_params *p,
                       ftm_timeline *out);
FTM_EXTERN void ftm_timeline_free(ftm_timeline *tl);

#endif
