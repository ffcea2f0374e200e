/* ftmesh allreduce's reports: JSON or text, with the lower bound on any
 * allreduce of these bytes on this mesh. */
#include "allreduce.h"

#include "ftmesh/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The lower bound on any allreduce of a->bytes on m (ftm_cost_bound):
 * 0 with b->time_s 0 when it has none (one chip), else its error code. */
static int bound_of(const ar_args *a, const ftm_mesh *m, ftm_cost_bound_parts *b)
{
    int rc = ftm_cost_bound(m, a->bytes, FTM_RED_SUM_F32, &a->cp, b);
    if (!rc && b->time_s < 0)
        b->time_s = 0;
    return rc;
}

static void bound_json(cli_json *j, const ar_args *a, const ftm_mesh *m,
                       const ftm_cost_result *cost)
{
    ftm_cost_bound_parts b;
    int rc = bound_of(a, m, &b);
    if (rc || b.time_s <= 0) { /* one chip: nothing moves, no multiple */
        if (rc)
            cli_json_null(j, "bound_s");
        else
            cli_json_num(j, "bound_s", "%.9g", 0.0);
        cli_json_null(j, "over_bound");
        cli_json_str(j, "bound_term", rc ? ftm_strerror(rc) : "none");
        return;
    }
    cli_json_num(j, "bound_s", "%.9g", b.time_s);
    cli_json_num(j, "over_bound", "%.6f", cost->time_s / b.time_s);
    cli_json_str(j, "bound_term", b.binding);
}

static void bound_text(const ar_args *a, const ftm_mesh *m, const ftm_cost_result *cost)
{
    ftm_cost_bound_parts b;
    int rc = bound_of(a, m, &b);
    if (rc)
        printf("# lower bound not computed: %s\n", ftm_strerror(rc));
    if (rc || b.time_s <= 0)
        return;
    printf("# lower bound %.1f us (%s: no allreduce of %zu B on this mesh models faster);"
           " model = %.3f x bound\n", b.time_s * 1e6,
           !strcmp(b.binding, "links") ? "link bytes" : b.binding, a->bytes,
           cost->time_s / b.time_s);
}

/* With faults: every run of the chips, what started it and the algorithm
 * and schedule it ran (the last one's are the figures'). */
static void runs_json(cli_json *j, const ftm_allreduce_result *r)
{
    if (r->nruns < 1)
        return;
    cli_json_begin_arr(j, "runs");
    for (int i = 0; i < r->nruns; i++) {
        const ftm_allreduce_ran *u = &r->runs[i];
        cli_json_begin_obj(j, NULL);
        if (u->when < 0)
            cli_json_null(j, "after_step");
        else
            cli_json_int(j, "after_step", u->when);
        cli_json_int(j, "chips", u->chips);
        cli_json_str(j, "algo", u->algo);
        cli_json_str(j, "schedule", u->schedule);
        cli_json_str(j, "fallback", u->fallback);
        cli_json_end(j);
    }
    cli_json_end(j);
}

void cli_ar_json_what(cli_json *j, const ar_args *a, const char *algo, const ftm_sched *sched)
{
    cli_json_str(j, "algo", algo);
    cli_json_str(j, "asked", a->algo); /* "auto" where algo is auto's pick */
    cli_json_str(j, "schedule", sched && sched->algo ? sched->algo : algo);
    if (sched && sched->fallback)
        cli_json_str(j, "fallback", sched->fallback);
}

void cli_ar_report_json(const ar_args *a, const ftm_mesh *m0, const ftm_mesh *m, const char *algo,
                        const ftm_sched *sched, const ftm_allreduce_result *r,
                        const ftm_cost_result *cost)
{
    int P = r->chips;
    double f = P > 1 ? 2.0 * (P - 1) / P : 0;
    /* one chip moves nothing (no modeled time either): no bandwidth, null */
    double algbw = P > 1 && r->wall_s > 0 ? (double)a->bytes / r->wall_s / 1e9 : NAN;
    double m_algbw = cost->time_s > 0 ? (double)a->bytes / cost->time_s / 1e9 : NAN;
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", m->rows, m->cols);
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_obj(&j, NULL);
    cli_ar_json_what(&j, a, algo, sched);
    cli_json_str(&j, "mesh", mesh);
    cli_json_bool(&j, "torus", cli_wraps(m));
    cli_json_int(&j, "chips", P);
    cli_json_u64(&j, "bytes", a->bytes);
    cli_json_u64(&j, "count", a->bytes / 4);
    cli_json_bool(&j, "model_only", a->model_only);
    cli_json_num(&j, "modeled_s", "%.9g", cost->time_s);
    cli_json_num(&j, "modeled_algbw_GBps", "%.6g", m_algbw);
    cli_json_num(&j, "modeled_busbw_GBps", "%.6g", m_algbw * f);
    cli_json_u64(&j, "modeled_max_link_bytes", cost->max_link_bytes);
    /* the cost model's parameters, as sweep gives them: what was modeled */
    cli_json_num(&j, "link_GBps", "%.9g", a->cp.link_Bps / 1e9);
    cli_json_num(&j, "hop_us", "%.9g", a->cp.hop_s * 1e6);
    cli_json_num(&j, "hbm_GBps", "%.9g", a->cp.hbm_Bps / 1e9);
    bound_json(&j, a, m, cost);
    if (!a->model_only) {
        cli_json_int(&j, "iters", a->iters);
        cli_json_num(&j, "wall_s", "%.9g", r->wall_s);
        cli_json_num(&j, "wall_min_s", "%.9g", r->wall_min_s);
        cli_json_num(&j, "wall_max_s", "%.9g", r->wall_max_s);
        cli_json_num(&j, "algbw_GBps", "%.6g", algbw);
        cli_json_num(&j, "busbw_GBps", "%.6g", algbw * f);
        cli_json_u64(&j, "max_link_bytes", r->max_link_bytes);
        cli_json_u64(&j, "total_link_bytes", r->total_link_bytes);
        cli_json_bool(&j, "links_match_schedule", r->links_match_sched);
        cli_json_u64(&j, "wrong", r->wrong);
        cli_json_chips(&j, "died_during_run", m, r->died, r->ndied); /* in the order they died */
        cli_faults_json(&j, r->events, r->nevents);
        runs_json(&j, r);
    }
    cli_faults_record_json(&j, &a->o, m0);
    cli_ranks_json(&j, m);
    cli_json_end(&j);
}

void cli_ar_report_text(const ar_args *a, const ftm_mesh *m0, const ftm_mesh *m, const char *algo,
                        const ftm_sched *sched, const ftm_allreduce_result *r,
                        const ftm_cost_result *cost)
{
    int P = r->chips, mo = a->model_only;
    size_t bytes = a->bytes;
    double f = P > 1 ? 2.0 * (P - 1) / P : 0;
    double algbw = r->wall_s > 0 ? (double)bytes / r->wall_s / 1e9 : 0;
    double m_algbw = cost->time_s > 0 ? (double)bytes / cost->time_s / 1e9 : 0;
    printf("# ftmesh allreduce: %dx%d %s, %d healthy chip%s, algo %s%s\n", m->rows, m->cols,
           cli_mesh_kind(m), P, cli_s(P), algo, mo ? ", model only" : "");
    if (sched && sched->fallback)
        printf("#   schedule run: %s (%s)\n", sched->algo, sched->fallback);
    printf("#   model: links %g GB/s/direction, %g us/hop, HBM %g GB/s\n", a->cp.link_Bps / 1e9,
           a->cp.hop_s * 1e6, a->cp.hbm_Bps / 1e9);
    if (!mo)
        printf("#   %ld iteration%s; wall = this machine, median\n", a->iters, cli_s(a->iters));
    cli_faults_record_text(&a->o, m0);
    cli_ranks_text(m);
    printf("#%13s %12s %7s %12s %11s %11s %12s %11s %11s %14s %8s\n", "size(B)", "count", "type",
           "wall(us)", "algbw(GB/s)", "busbw(GB/s)", "model(us)", "algbw(GB/s)", "busbw(GB/s)",
           "maxlink(B)", "#wrong");
    char wall[3][32] = { "-", "-", "-" }, wrong[32] = "-";
    if (!mo) {
        snprintf(wall[0], sizeof wall[0], "%.1f", r->wall_s * 1e6);
        if (P > 1) { /* one chip moves nothing: no bandwidth */
            snprintf(wall[1], sizeof wall[1], "%.3f", algbw);
            snprintf(wall[2], sizeof wall[2], "%.3f", algbw * f);
        }
        snprintf(wrong, sizeof wrong, "%llu", (unsigned long long)r->wrong);
    }
    char mbw[2][32] = { "-", "-" }; /* no modeled time (one chip): no bandwidth */
    if (cost->time_s > 0) {
        snprintf(mbw[0], sizeof mbw[0], "%.2f", m_algbw);
        snprintf(mbw[1], sizeof mbw[1], "%.2f", m_algbw * f);
    }
    printf("%14zu %12zu %7s %12s %11s %11s %12.1f %11s %11s %14llu %8s\n", bytes, bytes / 4,
           "float", wall[0], wall[1], wall[2], cost->time_s * 1e6, mbw[0], mbw[1],
           (unsigned long long)cost->max_link_bytes, wrong);
    bound_text(a, m, cost);
    if (!mo && !r->wrong)
        printf("# verified: every element of every chip equals the exact sum\n");
    else if (!mo)
        printf("# FAILED: %llu elements (over every chip and iteration) differ from the exact sum\n",
               (unsigned long long)r->wrong);
}
