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
    int best;                 /* 1: fastest algorithm of its (mesh, scenario, model) */
    double bound_s;           /* no allreduce of bytes on this mesh models faster
                               * (ftm_cost_bound) */
    double over_bound;        /* time_s / bound_s */
} ftm_sweep_row;

/* Runs the table with cost parameters p (NULL: TPU-v3 defaults) and
 * returns a malloc'd array of rows in *out (free with free()). Meshes
 * 16x32 and 32x32 torus; scenarios in the order above; models in the
 * order above; algorithms in registry order. Rows run on two threads
 * (builders and the cost model are reentrant); the call itself is
 * reentrant. Returns 0 or an error (then nothing is allocated). */
FTM_EXTERN int ftm_sweep_run(const ftm_cost_params *p, ftm_sweep_row **out, int *nrows);
/* As ftm_sweep_run, on one of its two meshes only: rows x cols 16x32 or
 * 32x32 (0x0: both, as ftm_sweep_run). FTM_EINVAL for another mesh. */
FTM_EXTERN int ftm_sweep_run_mesh(const ftm_cost_params *p, int rows, int cols,
                                  ftm_sweep_row **out, int *nrows);

#endif
