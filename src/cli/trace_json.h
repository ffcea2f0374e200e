/* --trace FILE and --trace-clock for the commands that run chips. */
#ifndef FTMESH_CLI_TRACE_JSON_H
#define FTMESH_CLI_TRACE_JSON_H

#include <stdio.h>
#include "ftmesh/costmodel.h"
#include "ftmesh/mesh.h"
#include "ftmesh/timeline.h"
#include "ftmesh/trace.h"

/* Help lines for --trace and --trace-clock. */
#define CLI_TRACE_HELP \
    "  --trace FILE   record what every chip does and write it as Chrome trace-event\n" \
    "                 JSON (open it in ui.perfetto.dev or chrome://tracing)\n" \
    "  --trace-clock wall|modeled  the trace's clock: this machine's (default) or\n" \
    "                 the cost model's replay of the same schedule\n"

/* Writes everything tr recorded on the mesh m as Chrome trace-event JSON
 * on clock (FTM_CLOCK_*) with cost parameters cp (modeled clock). Returns
 * 0, FTM_ENOMEM, FTM_EIO or a timeline error; f stays open. */
int cli_trace_write(FILE *f, const ftm_trace *tr, const ftm_mesh *m, int clock,
                    const ftm_cost_params *cp);

/* Parses a --trace-clock value; CLI_EXIT_USAGE (after printing) if bad. */
int cli_trace_clock(const char *cmd, const char *v, int *clock);

#endif
