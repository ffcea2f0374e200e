/* ftmesh allreduce: what the command parsed, shared by its reports. */
#ifndef FTMESH_CLI_ALLREDUCE_H
#define FTMESH_CLI_ALLREDUCE_H

#include "cli.h"
#include "faults_cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/sched.h"

typedef struct ar_args {
    cli_mesh_opts o;
    const char *algo, *svg, *fail_during, *trace;
    int trace_clock;
    size_t bytes;
    long iters, fail_after, trace_iters;
    int fail_after_given;       /* --fail-after, 0 included (at its start) */
    int model_only, iters_given, packets_only, trace_clock_given;
    ftm_cost_params cp;
    cli_faults f;              /* --kill, --faults, --random-kills */
    ftm_fault_script script;
    int have_script;
} ar_args;

/* What ran, as --json and the trace name it: "algo" (auto's pick or the
 * one asked for), "asked", "schedule" and, where another algorithm's
 * schedule ran, "fallback" (why). */
void cli_ar_json_what(struct cli_json *j, const ar_args *a, const char *algo,
                      const ftm_sched *sched);
/* The run's report on stdout: one JSON object, or the text header, the
 * table row, the bound line and the verdict. */
void cli_ar_report_json(const ar_args *a, const ftm_mesh *m0, const ftm_mesh *m, const char *algo,
                        const ftm_sched *sched, const ftm_allreduce_result *r,
                        const ftm_cost_result *cost);
void cli_ar_report_text(const ar_args *a, const ftm_mesh *m0, const ftm_mesh *m, const char *algo,
                        const ftm_sched *sched, const ftm_allreduce_result *r,
                        const ftm_cost_result *cost);

#endif
