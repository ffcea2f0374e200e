/* The paper's scenario table (Kumar & Jouppi 2020): modeled allreduce
 * time of every algorithm on TPU-v3-sized tori, healthy, with one dead
 * host, chip or link, and with two and four dead hosts, for the fp32
 * gradients of ResNet-50 and BERT-large.
 * Model only (no data moves), so the whole table takes seconds. The CLI
 * prints the rows.
 */
#ifndef FTMESH_SWEEP_H
#define FTMESH_SWEEP_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/costmodel.h"
#include "ftmesh/mesh.h"

/* The pod scenarios as data, in one place (scenarios.c): ftmesh sweep,
 * sweep --throughput, sweep --list and the tests read them from here. */
enum { FTM_SWEEP_NMESHES = 2, FTM_SWEEP_NMODELS = 2 };

typedef struct ftm_sweep_scenario {
    const char *name;         /* "healthy", "dead-host", ... (sweep's "scenario") */
    const char *tput_name;    /* its name in sweep --throughput, or NULL: not there */
    int in_sweep;             /* 1: a scenario of ftmesh sweep (0: the tests' only) */
    const char *fault[FTM_SWEEP_NMESHES]; /* the faults on each torus as the
                               * command-line options that reproduce them
                               * ("" when healthy) */
} ftm_sweep_scenario;

typedef struct ftm_sweep_pod {
    int rc[FTM_SWEEP_NMESHES][2];               /* the tori: 16x32, 32x32 */
    const char *model[FTM_SWEEP_NMODELS];       /* "resnet50", "bert-large" */
    size_t params[FTM_SWEEP_NMODELS];           /* fp32 gradient elements */
    const ftm_sweep_scenario *scen;             /* sweep's in its order, then
                                                 * the tests' own */
    int nscen;
} ftm_sweep_pod;

/* The tori, models and scenarios (static data). */
FTM_EXTERN const ftm_sweep_pod *ftm_sweep_pod_data(void);
/* Builds torus number mesh (0: 16x32, 1: 32x32) with scenario s's faults
 * into m (free with ftm_mesh_free). Returns 0, FTM_EINVAL or a mesh
 * error (then m holds nothing). */
FTM_EXTERN int ftm_sweep_scenario_mesh(ftm_mesh *m, int mesh, const ftm_sweep_scenario *s);

typedef struct ftm_sweep_row {
    int rows, cols;           /* torus */
    const char *scenario;     /* "healthy", "dead-host", "dead-chip", "dead-link",
                               * "two-hosts", "four-hosts" */
    const char *fault;        /* the fault as CLI text ("" when healthy) */
    const char *model;        /* "resnet50", "bert-large" */
    size_t bytes;             /* gradient bytes (fp32) */
    const char *algo;         /* registry name */
    const char *schedule;     /* the schedule that ran (= algo when the
                               * algorithm's own; static) */
    const char *fallback;     /* why another schedule ran, or NULL (static) */
    int chips;                /* healthy chips P */
    double time_s;            /* modeled allreduce time */
    double algbw_GBps;        /* bytes / time */
    double busbw_GBps;        /* algbw * 2(P-1)/P */
    uint64_t max_link_bytes;
    double overhead_pct;      /* vs the same algorithm on the healthy torus */
    double overhead_best_pct; /* vs the best algorithm on the healthy torus */
    int best;                 /* 1: fastest algorithm of its (mesh, scenario, model);
                               * of a tie, the first in --algos order */
    double bound_s;           /* no allreduce of bytes on this mesh models faster
                               * (ftm_cost_bound) */
    double over_bound;        /* time_s / bound_s */
} ftm_sweep_row;

/* Which part of the table to run: one torus (rows x cols 16x32 or 32x32;
 * 0 x 0: both) and one model ("resnet50" or "bert-large"; NULL: both). */
typedef struct ftm_sweep_only {
    int rows, cols;
    const char *model;
} ftm_sweep_only;

/* Runs the table (only: NULL for all of it, else that part) with cost
 * parameters p (NULL: TPU-v3 defaults) and returns a malloc'd array of
 * rows in *out (free with free()). Meshes 16x32 and 32x32 torus;
 * scenarios in the order above; models in the order above; algorithms in
 * registry order. Rows run on two threads (builders and the cost model
 * are reentrant); the call itself is reentrant. Returns 0, FTM_EINVAL (a
 * torus or model not in the table) or another error (then nothing is
 * allocated). */
FTM_EXTERN int ftm_sweep_run(const ftm_cost_params *p, const ftm_sweep_only *only,
                             ftm_sweep_row **out, int *nrows);

#endif
