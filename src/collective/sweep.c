/* The paper's scenario table: model-only runs of every algorithm on the
 * 512- and 1024-chip TPU-v3 tori, healthy, with one fault, and with two
 * and four dead hosts. */
#include "ftmesh/sweep.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

/* Rows run two at a time (rows.h); each holds one schedule (a 1-D ring on
 * 1024 chips: about 400 MB). The tori, models and faults: scenarios.c. */
enum { NSCEN = 6, MAXALGO = 8 };

typedef struct job {
    const ftm_cost_params *p;
    const char *const *an;
    const ftm_allreduce_build_fn *af;
    int na;
    int mesh0, nmesh;         /* the tori run: mesh0 .. mesh0 + nmesh - 1 */
    int model0, nmodel;       /* the models run */
    const ftm_sweep_scenario *scen[NSCEN];
    ftm_sweep_row *rows;
} job;

/* Row i of the table: mesh, scenario, model, algorithm (in that nesting). */
static int run_row(void *ctx, int i)
{
    const job *J = ctx;
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    int a = i % J->na, md = J->model0 + (i / J->na) % J->nmodel,
        sc = (i / J->na / J->nmodel) % NSCEN, mi = J->mesh0 + i / J->na / J->nmodel / NSCEN;
    size_t count = pod->params[md];
    ftm_mesh m;
    int rc = ftm_sweep_scenario_mesh(&m, mi, J->scen[sc]);
    if (rc)
        return rc;
    ftm_sched s;
    ftm_sched_ctx bc = { .cost = J->p };
    rc = J->af[a](&s, &bc, &m, count, FTM_RED_SUM_F32);
    ftm_cost_result r;
    ftm_cost_bound_parts b;
    const char *ran = NULL, *why = NULL;
    if (!rc) {
        ran = s.algo;
        why = s.fallback;
        rc = ftm_cost_sched(&s, &m, J->p, &r, NULL);
        ftm_sched_free(&s);
    }
    if (!rc)
        rc = ftm_cost_bound(&m, count * 4, FTM_RED_SUM_F32, J->p, &b);
    if (!rc) {
        int P = ftm_mesh_healthy_count(&m);
        ftm_sweep_row *w = &J->rows[i];
        w->rows = pod->rc[mi][0];
        w->cols = pod->rc[mi][1];
        w->scenario = J->scen[sc]->name;
        w->fault = J->scen[sc]->fault[mi];
        w->model = pod->model[md];
        w->bytes = count * 4;
        w->algo = J->an[a];
        w->schedule = ran ? ran : w->algo;
        w->fallback = why;
        w->chips = P;
        w->time_s = r.time_s;
        w->algbw_GBps = (double)w->bytes / r.time_s / 1e9;
        w->busbw_GBps = w->algbw_GBps * 2.0 * (P - 1) / P;
        w->max_link_bytes = r.max_link_bytes;
        w->bound_s = b.time_s;
        w->over_bound = r.time_s / b.time_s;
    }
    ftm_mesh_free(&m);
    return rc;
}

/* Selects the part of the table only names (NULL: all) into J. */
static int select_part(job *J, const ftm_sweep_only *only)
{
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    J->nmesh = FTM_SWEEP_NMESHES;
    J->nmodel = FTM_SWEEP_NMODELS;
    if (only && (only->rows || only->cols)) {
        for (J->mesh0 = 0; J->mesh0 < FTM_SWEEP_NMESHES; J->mesh0++)
            if (pod->rc[J->mesh0][0] == only->rows && pod->rc[J->mesh0][1] == only->cols)
                break;
        if (J->mesh0 == FTM_SWEEP_NMESHES)
            return FTM_EINVAL;
        J->nmesh = 1;
    }
    if (only && only->model) {
        for (J->model0 = 0; J->model0 < FTM_SWEEP_NMODELS; J->model0++)
            if (!strcmp(pod->model[J->model0], only->model))
                break;
        if (J->model0 == FTM_SWEEP_NMODELS)
            return FTM_EINVAL;
        J->nmodel = 1;
    }
    int n = 0;
    for (int i = 0; i < pod->nscen && n < NSCEN; i++)
        if (pod->scen[i].in_sweep)
            J->scen[n++] = &pod->scen[i];
    return n == NSCEN ? 0 : FTM_EINVAL;
}

int ftm_sweep_run(const ftm_cost_params *pp, const ftm_sweep_only *only, ftm_sweep_row **out,
                  int *nrows)
{
    job J;
    memset(&J, 0, sizeof J);
    int rc = select_part(&J, only);
    if (rc)
        return rc;
    ftm_cost_params p;
    if (pp)
        p = *pp;
    else
        ftm_cost_defaults(&p);
    const char *an[MAXALGO];
    ftm_allreduce_build_fn af[MAXALGO];
    int na = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name && na < MAXALGO; a++) {
        an[na] = a->name;
        af[na++] = a->build;
    }
    int total = J.nmesh * NSCEN * J.nmodel * na, n = total;
    ftm_sweep_row *rows = calloc((size_t)total, sizeof *rows);
    if (!rows)
        return FTM_ENOMEM;
    J.p = &p;
    J.an = an;
    J.af = af;
    J.na = na;
    J.rows = rows;
    rc = coll_rows_run(total, run_row, &J);
    /* Overheads against the healthy rows of the same mesh and model, and
     * the fastest algorithm of each group. */
    for (int i = 0; i < n && !rc; i++) {
        ftm_sweep_row *w = &rows[i];
        double same = 0, best = 0, grp = 0;
        int first = -1; /* the group's fastest row: the first of a tie */
        for (int j = 0; j < n; j++) {
            const ftm_sweep_row *v = &rows[j];
            if (v->rows != w->rows || v->cols != w->cols || v->model != w->model)
                continue;
            if (v->scenario == J.scen[0]->name) {
                if (v->algo == w->algo)
                    same = v->time_s;
                if (best == 0 || v->time_s < best)
                    best = v->time_s;
            }
            if (v->scenario == w->scenario && (first < 0 || v->time_s < grp)) {
                grp = v->time_s;
                first = j;
            }
        }
        w->overhead_pct = same > 0 ? 100.0 * (w->time_s / same - 1) : 0;
        w->overhead_best_pct = best > 0 ? 100.0 * (w->time_s / best - 1) : 0;
        w->best = first == i;
    }
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *nrows = n;
    return 0;
}
