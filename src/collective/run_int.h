/* Running allreduces on the chip threads (run.c) and under a fault
 * script or a chip dying mid-run (run_script.c): what the two share. */
#ifndef FTMESH_COLLECTIVE_RUN_INT_H
#define FTMESH_COLLECTIVE_RUN_INT_H
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"

#include <stdatomic.h>

/* A script's recovery between runs. */
typedef struct run_fault {
    ftm_rt_script *f;
    ftm_mesh next;             /* after a failure: the mesh left */
    int have_next;
    int first;                 /* that failure's records: events[first..] */
    double modeled0;           /* modeled allreduce of the failed run */
    atomic_int fail_it;        /* the iteration the last run failed in (the
                                * least any chip returned an error in) */
    const char *algo, *schedule; /* what the last run ran */
    const char *fallback;        /* why schedule is not algo's own, or NULL */
} run_fault;

/* What every chip returns at the iteration of a repair: the run stops
 * there (not an error; positive, unlike every FTM_E* code). */
#define AR_REPAIR_STOP 1

/* n allreduces o[0..n) on m in one run of rt (NULL: a runtime made here
 * from o[0]'s packet size and timeout); rf: the script's recovery (one
 * allreduce), or NULL. */
int run_set(const ftm_mesh *m, ftm_rt *rt, const ftm_allreduce_opts *o, int n,
            ftm_allreduce_result *res, run_fault *rf);

#endif
