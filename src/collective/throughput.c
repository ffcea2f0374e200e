/* Training throughput at pod scale: compute per chip plus the modeled
 * gradient allreduce, healthy and with faults (throughput.h).
 *
 * Defaults and where they come from:
 *  - ResNet-50: 4.1e9 multiply-adds per 224x224 image forward (He et al.
 *    2016 give 3.8e9 for their variant; v1.5, which MLPerf uses, ~4.1e9),
 *    2 FLOPs each, and backward ~2x forward: 3 x 2 x 4.1e9 = 24.6 GFLOP per
 *    training example;
 *  - BERT-large: 6 FLOPs per parameter per token for forward + backward
 *    (Kaplan et al. 2020, "6N"; attention adds ~5% at length 512 and is
 *    left out), 340M parameters, 512 tokens per sequence (MLPerf BERT's
 *    maximum length): 6 x 340e6 x 512 = 1.044 TFLOP per example;
 *  - chip: TPU-v3 peaks at 123 TFLOP/s (bf16, 2 cores; Jouppi et al.,
 *    CACM 2020); sustained 50 TFLOP/s (~40% of peak) is assumed;
 *  - global batch: ResNet-50 32 images per chip (16384 on 512 chips, 32768
 *    on 1024: the batch Google's TPU-v3 pod runs used with LARS), BERT-large
 *    8 sequences per chip (4096 and 8192). These are the defaults, not
 *    figures read from the MLPerf v0.7 result tables; all are options.
 */
#include "ftmesh/throughput.h"
#include "ftmesh/sweep.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

/* The tori, models and faults are sweep's (scenarios.c): the scenarios
 * with a throughput name, in their order. */
_Static_assert((int)FTM_TPUT_NMESHES == (int)FTM_SWEEP_NMESHES &&
                   (int)FTM_TPUT_NMODELS == (int)FTM_SWEEP_NMODELS,
               "throughput runs sweep's tori and models");
static int tput_scenarios(const ftm_sweep_scenario *sc[FTM_TPUT_NSCEN])
{
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    int n = 0;
    for (int i = 0; i < pod->nscen && n < FTM_TPUT_NSCEN; i++)
        if (pod->scen[i].tput_name)
            sc[n++] = &pod->scen[i];
    return n == FTM_TPUT_NSCEN ? 0 : FTM_EINVAL;
}

void ftm_tput_defaults(ftm_tput_params *p)
{
    memset(p, 0, sizeof *p);
    ftm_cost_defaults(&p->cost);
    p->chip_flops = 50e12;
    p->overlap = 0;
    p->flops_per_example[0] = 3.0 * 2.0 * 4.1e9;
    p->flops_per_example[1] = 6.0 * 340e6 * 512;
    p->global_batch[0][0] = 16384;
    p->global_batch[0][1] = 32768;
    p->global_batch[1][0] = 4096;
    p->global_batch[1][1] = 8192;
    p->algos[0] = "2d";
    p->algos[1] = "2d-concurrent";
    p->algos[2] = "2d-lines";
    p->algos[3] = "trees";
    p->nalgos = 4;
}

void ftm_tput_step(const ftm_tput_params *p, int md, ftm_tput_row *row)
{
    /* whole examples: some chips take one more where the batch does not
     * divide, and the step waits for them */
    row->busiest = row->chips > 0 ? (row->global_batch + row->chips - 1) / row->chips : 0;
    row->compute_s = (double)row->busiest * p->flops_per_example[md] / p->chip_flops;
    /* the backward pass is about 2/3 of a step's FLOPs (twice the forward
     * pass's: a gradient for the input and one for the weights), and an
     * allreduce can hide under nothing longer */
    double hidden = p->overlap * row->allreduce_s, backward = row->compute_s * 2.0 / 3.0;
    row->step_s = row->compute_s + row->allreduce_s - (hidden < backward ? hidden : backward);
    row->examples_per_s = (double)row->global_batch / row->step_s;
}

typedef struct job {
    const ftm_tput_params *p;
    ftm_allreduce_build_fn fn[FTM_TPUT_MAXALGOS];
    const ftm_sweep_scenario *scen[FTM_TPUT_NSCEN];
    ftm_tput_row *rows;
    int total;
} job;

/* Row i: the fastest candidate's modeled allreduce and the step. */
static int run_row(void *ctx, int i)
{
    const job *J = ctx;
    int sc = i % FTM_TPUT_NSCEN, md = (i / FTM_TPUT_NSCEN) % FTM_TPUT_NMODELS,
        mi = i / FTM_TPUT_NSCEN / FTM_TPUT_NMODELS;
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    size_t count = pod->params[md];
    ftm_mesh m;
    int rc = ftm_sweep_scenario_mesh(&m, mi, J->scen[sc]);
    if (rc)
        return rc;
    ftm_tput_row *w = &J->rows[i];
    w->rows = pod->rc[mi][0];
    w->cols = pod->rc[mi][1];
    w->model = pod->model[md];
    w->scenario = J->scen[sc]->tput_name;
    w->fault = J->scen[sc]->fault[mi];
    w->chips = ftm_mesh_healthy_count(&m);
    w->global_batch = J->p->global_batch[md][mi];
    if (J->p->per_chip) { /* the dead chips' examples are dropped; rounded up,
                             so the busiest survivor keeps the healthy busiest's */
        long all = (long)w->rows * w->cols;
        w->global_batch = (w->global_batch * w->chips + all - 1) / all;
    }
    for (int a = 0; a < J->p->nalgos && !rc; a++) {
        ftm_sched s;
        ftm_cost_result r;
        ftm_sched_ctx bc = { .cost = &J->p->cost };
        rc = J->fn[a](&s, &bc, &m, count, FTM_RED_SUM_F32);
        if (rc)
            break;
        rc = ftm_cost_sched(&s, &m, &J->p->cost, &r, NULL);
        if (!rc && (!w->algo || r.time_s < w->allreduce_s)) {
            w->algo = J->p->algos[a];
            w->schedule = s.algo ? s.algo : w->algo; /* static names */
            w->fallback = s.fallback;
            w->allreduce_s = r.time_s;
        }
        ftm_sched_free(&s);
    }
    ftm_mesh_free(&m);
    if (!rc)
        ftm_tput_step(J->p, md, w);
    return rc;
}

static int check_params(const ftm_tput_params *p, job *J)
{
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    if (!(p->chip_flops > 0) || !(p->overlap >= 0 && p->overlap <= 1) || p->nalgos < 1 ||
        p->nalgos > FTM_TPUT_MAXALGOS)
        return FTM_EINVAL;
    for (int md = 0; md < FTM_TPUT_NMODELS; md++) {
        if (!(p->flops_per_example[md] > 0))
            return FTM_EINVAL;
        for (int mi = 0; mi < FTM_TPUT_NMESHES; mi++) /* an example per chip at least */
            if (p->global_batch[md][mi] < (long)pod->rc[mi][0] * pod->rc[mi][1])
                return FTM_EINVAL;
    }
    for (int a = 0; a < p->nalgos; a++) {
        const ftm_allreduce_algo *al = p->algos[a] ? ftm_allreduce_find(p->algos[a]) : NULL;
        if (!al)
            return FTM_EINVAL;
        J->fn[a] = al->build;
    }
    return 0;
}

int ftm_tput_run(const ftm_tput_params *p, ftm_tput_row **out, int *nrows)
{
    job J;
    memset(&J, 0, sizeof J);
    int rc = check_params(p, &J);
    if (!rc)
        rc = tput_scenarios(J.scen);
    if (rc)
        return rc;
    J.p = p;
    J.total = FTM_TPUT_NMESHES * FTM_TPUT_NMODELS * FTM_TPUT_NSCEN;
    J.rows = calloc((size_t)J.total, sizeof *J.rows);
    if (!J.rows)
        return FTM_ENOMEM;
    rc = coll_rows_run(J.total, run_row, &J);
    /* Impact against the healthy row of the same mesh and model (the
     * first of each group of scenarios). */
    for (int i = 0; i < J.total && !rc; i++) {
        const ftm_tput_row *h = &J.rows[i - i % FTM_TPUT_NSCEN];
        J.rows[i].impact_pct = 100.0 * (1.0 - J.rows[i].examples_per_s / h->examples_per_s);
    }
    if (rc) {
        free(J.rows);
        return rc;
    }
    *out = J.rows;
    *nrows = J.total;
    return 0;
}
