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
 * 1024 chips: about 400 MB). */
enum { NMESH = 2, NSCEN = 6, NMODEL = 2, MAXALGO = 8, MAXHOST = 4 };

static const int mesh_rc[NMESH][2] = { { 16, 32 }, { 32, 32 } };
static const char *const scen[NSCEN] = { "healthy",   "dead-host", "dead-chip",
                                          "dead-link", "two-hosts", "four-hosts" };
/* One fault near the middle of the torus (on a torus every place is
 * alike). Two hosts half a torus apart (no row or column cut twice), and
 * four of which two share rows (cut twice: the segments' case): the
 * positions of doc/results.md's goals table and tests/test_pod.c,
 * so the rows can be compared. fault_txt must say what make_mesh does. */
static const char *const fault_txt[NMESH][NSCEN] = {
    { "", "--fail-host 8,16", "--fail 8,16", "--fail-link 8,16-8,17",
      "--fail-host 4,8 --fail-host 12,24",
      "--fail-host 2,6 --fail-host 2,22 --fail-host 8,12 --fail-host 12,28" },
    { "", "--fail-host 16,16", "--fail 16,16", "--fail-link 16,16-16,17",
      "--fail-host 8,8 --fail-host 24,24",
      "--fail-host 4,6 --fail-host 4,22 --fail-host 18,10 --fail-host 24,26" },
};
/* Hosts (row, column of their top-left chip) of two-hosts and four-hosts. */
static const int hosts[NMESH][2][MAXHOST][2] = {
    { { { 4, 8 }, { 12, 24 } }, { { 2, 6 }, { 2, 22 }, { 8, 12 }, { 12, 28 } } },
    { { { 8, 8 }, { 24, 24 } }, { { 4, 6 }, { 4, 22 }, { 18, 10 }, { 24, 26 } } },
};
static const char *const model_name[NMODEL] = { "resnet50", "bert-large" };
/* fp32 gradients: ResNet-50 25.6M parameters, BERT-large 340M. */
static const size_t model_params[NMODEL] = { 25600000, 340000000 };

static int make_mesh(ftm_mesh *m, int mi, int sc)
{
    int R = mesh_rc[mi][0], C = mesh_rc[mi][1], r = R / 2, c = C / 2;
    int rc = ftm_mesh_init(m, R, C, 1);
    if (rc)
        return rc;
    if (sc == 1)
        rc = ftm_mesh_fail_host(m, r, c);
    else if (sc == 2)
        rc = ftm_mesh_fail_chip(m, r, c);
    else if (sc == 3)
        rc = ftm_mesh_fail_link(m, r, c, r, c + 1, 0);
    for (int h = 0; sc >= 4 && h < (sc == 4 ? 2 : 4) && !rc; h++)
        rc = ftm_mesh_fail_host(m, hosts[mi][sc - 4][h][0], hosts[mi][sc - 4][h][1]);
    if (rc)
        ftm_mesh_free(m);
    return rc;
}

typedef struct job {
    const ftm_cost_params *p;
    const char *const *an;
    const ftm_allreduce_build_fn *af;
    int na;
    int mesh0;                /* index of the first mesh run */
    ftm_sweep_row *rows;
} job;

/* Row i of the table: mesh, scenario, model, algorithm (in that nesting). */
static int run_row(void *ctx, int i)
{
    const job *J = ctx;
    int a = i % J->na, md = (i / J->na) % NMODEL, sc = (i / J->na / NMODEL) % NSCEN,
        mi = J->mesh0 + i / J->na / NMODEL / NSCEN;
    ftm_mesh m;
    int rc = make_mesh(&m, mi, sc);
    if (rc)
        return rc;
    ftm_sched s;
    rc = J->af[a](&s, NULL, &m, model_params[md], FTM_RED_SUM_F32);
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
        rc = ftm_cost_bound(&m, model_params[md] * 4, FTM_RED_SUM_F32, J->p, &b);
    if (!rc) {
        int P = ftm_mesh_healthy_count(&m);
        ftm_sweep_row *w = &J->rows[i];
        w->rows = mesh_rc[mi][0];
        w->cols = mesh_rc[mi][1];
        w->scenario = scen[sc];
        w->fault = fault_txt[mi][sc];
        w->model = model_name[md];
        w->bytes = model_params[md] * 4;
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

int ftm_sweep_run(const ftm_cost_params *p, ftm_sweep_row **out, int *nrows)
{
    return ftm_sweep_run_mesh(p, 0, 0, out, nrows);
}

int ftm_sweep_run_mesh(const ftm_cost_params *pp, int mrows, int mcols, ftm_sweep_row **out,
                       int *nrows)
{
    int mesh0 = 0, nmesh = NMESH;
    if (mrows || mcols) {
        for (mesh0 = 0; mesh0 < NMESH; mesh0++)
            if (mesh_rc[mesh0][0] == mrows && mesh_rc[mesh0][1] == mcols)
                break;
        if (mesh0 == NMESH)
            return FTM_EINVAL;
        nmesh = 1;
    }
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
    int total = nmesh * NSCEN * NMODEL * na, n = total, rc = 0;
    ftm_sweep_row *rows = calloc((size_t)total, sizeof *rows);
    if (!rows)
        return FTM_ENOMEM;
    job J = { &p, an, af, na, mesh0, rows };
    rc = coll_rows_run(total, run_row, &J);
    /* Overheads against the healthy rows of the same mesh and model, and
     * the fastest algorithm of each group. */
    for (int i = 0; i < n && !rc; i++) {
        ftm_sweep_row *w = &rows[i];
        double same = 0, best = 0, grp = 0;
        for (int j = 0; j < n; j++) {
            const ftm_sweep_row *v = &rows[j];
            if (v->rows != w->rows || v->cols != w->cols || v->model != w->model)
                continue;
            if (v->scenario == scen[0]) {
                if (v->algo == w->algo)
                    same = v->time_s;
                if (best == 0 || v->time_s < best)
                    best = v->time_s;
            }
            if (v->scenario == w->scenario && (grp == 0 || v->time_s < grp))
                grp = v->time_s;
        }
        w->overhead_pct = same > 0 ? 100.0 * (w->time_s / same - 1) : 0;
        w->overhead_best_pct = best > 0 ? 100.0 * (w->time_s / best - 1) : 0;
        w->best = w->time_s == grp;
    }
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *nrows = n;
    return 0;
}
