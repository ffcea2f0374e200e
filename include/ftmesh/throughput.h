/* Training throughput at pod scale (the paper's metric): per step, every
 * healthy chip computes its share of the global batch, in whole examples,
 * then the gradient allreduce runs (modeled); a fraction of the allreduce
 * may hide under the backward pass.
 *
 *   busiest     = ceil(global_batch / healthy_chips): the step waits for it
 *   compute_s   = busiest * flops_per_example / chip_flops
 *                 (the global batch stays, so the dead chips' examples move
 *                 to the survivors; with per_chip, each survivor keeps the
 *                 healthy torus's share and the global batch shrinks)
 *   step_s      = compute_s + allreduce_s - min(overlap * allreduce_s, 2/3 compute_s)
 *                 (the backward pass, 2/3 of the FLOPs, is all it can hide under)
 *   examples/s  = global_batch / step_s
 *   impact_pct  = 100 * (1 - examples/s / the healthy torus's examples/s)
 *
 * The defaults and their sources are in ftm_tput_defaults (throughput.c)
 * and the README ("Training throughput at pod scale").
 */
#ifndef FTMESH_THROUGHPUT_H
#define FTMESH_THROUGHPUT_H

#include "ftmesh/export.h"

#include <stddef.h>
#include "ftmesh/costmodel.h"

enum { FTM_TPUT_NMODELS = 2, FTM_TPUT_NMESHES = 2, FTM_TPUT_NSCEN = 5, FTM_TPUT_MAXALGOS = 8 };

typedef struct ftm_tput_params {
    ftm_cost_params cost;       /* the links (allreduce model) */
    double chip_flops;          /* sustained FLOP/s of one chip */
    double overlap;             /* 0..1: share of the allreduce hidden */
    double flops_per_example[FTM_TPUT_NMODELS];    /* resnet50, bert-large */
    long global_batch[FTM_TPUT_NMODELS][FTM_TPUT_NMESHES]; /* [model][16x32, 32x32] */
    const char *algos[FTM_TPUT_MAXALGOS]; /* candidates; the fastest is used */
    int nalgos;
    int per_chip;               /* 1: survivors keep the healthy per-chip batch
                                 * (global_batch x live / all chips); 0: the
                                 * global batch stays */
} ftm_tput_params;

typedef struct ftm_tput_row {
    int rows, cols;             /* torus */
    const char *model;          /* "resnet50", "bert-large" */
    const char *scenario;       /* healthy, dead-host, dead-chip, dead-link, two-dead-hosts */
    const char *fault;          /* as command-line options ("" when healthy) */
    int chips;                  /* healthy chips */
    long global_batch;          /* of this scenario (per_chip: shrunk) */
    long busiest;               /* examples on the busiest chip */
    const char *algo;           /* fastest candidate for this mesh and model */
    const char *schedule;       /* the schedule it ran (= algo unless it handed
                                   over: a 2-D algorithm to the ring's) */
    const char *fallback;       /* why another schedule ran, or NULL (static) */
    double compute_s, allreduce_s, step_s, examples_per_s, impact_pct;
} ftm_tput_row;

/* TPU-v3 and MLPerf defaults; candidates "2d", "2d-concurrent", "2d-lines"
 * and "trees"; the global batch stays (per_chip 0). */
FTM_EXTERN void ftm_tput_defaults(ftm_tput_params *p);

/* Fills busiest, compute_s, step_s and examples_per_s of row from its chips,
 * global_batch and allreduce_s, for model index md (0 resnet50, 1
 * bert-large). impact_pct is left alone. */
FTM_EXTERN void ftm_tput_step(const ftm_tput_params *p, int md, ftm_tput_row *row);

/* The table: meshes 16x32 and 32x32 torus, models as above, scenarios as
 * above (sweep.h's scenarios with a throughput name; two dead hosts: far
 * apart). Returns 0 with a
 * malloc'd array (free()) of FTM_TPUT_NMESHES * FTM_TPUT_NMODELS *
 * FTM_TPUT_NSCEN rows (mesh, model, scenario nesting), FTM_EINVAL (bad
 * parameter or unknown algorithm) or another error. */
FTM_EXTERN int ftm_tput_run(const ftm_tput_params *p, ftm_tput_row **out, int *nrows);

#endif
