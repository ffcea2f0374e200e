/* --trace FILE and --trace-clock for the commands that run chips. */
#ifndef FTMESH_CLI_TRACE_JSON_H
#define FTMESH_CLI_TRACE_JSON_H

#include <stdio.h>
#include "cli.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/mesh.h"
#include "ftmesh/timeline.h"
#include "ftmesh/trace.h"

/* The --trace and --trace-clock entries of a command's option table;
 * what is the part of the run recorded. */
#define CLI_OPT_TRACE_OF(id_trace, id_clock, what)                                  \
    { "trace", "FILE", id_trace,                                                    \
      "record what every chip does " what " and write it as\n"                      \
      "Chrome trace-event JSON (open it in ui.perfetto.dev\nor chrome://tracing)" }, \
    { "trace-clock", "wall|modeled", id_clock,                                      \
      "the trace's clock: this machine's (default), or the\n"                       \
      "cost model's replay of the same schedule" }
#define CLI_OPT_TRACE(id_trace, id_clock) CLI_OPT_TRACE_OF(id_trace, id_clock, "in the run")

/* Opens --trace PATH (cli_out_open) before any work and creates the
 * recorder *rec for nchips chips; 0, or CLI_EXIT_USAGE / CLI_EXIT_FAIL
 * after printing one line. */
int cli_trace_open(const char *cmd, cli_out *o, const char *path, ftm_trace **rec, int nchips);
/* Adds the command's keys to the trace's "otherData" object. */
typedef void (*cli_trace_meta_fn)(cli_json *j, void *ctx);

/* Writes the recording (cli_trace_write_meta) and puts the file in place
 * (cli_out_commit); 0, or CLI_EXIT_FAIL after printing what failed. */
int cli_trace_close(const char *cmd, cli_out *o, const ftm_trace *rec, const ftm_mesh *m,
                    int clock, const ftm_cost_params *cp, cli_trace_meta_fn meta_fn, void *ctx);

/* Writes everything tr recorded on the mesh m as Chrome trace-event JSON
 * on clock (FTM_CLOCK_*) with cost parameters cp (modeled clock). Returns
 * 0, FTM_ENOMEM, FTM_EIO or a timeline error; f stays open. */
int cli_trace_write(FILE *f, const ftm_trace *tr, const ftm_mesh *m, int clock,
                    const ftm_cost_params *cp);
/* The same, with meta_fn (or NULL) adding keys to "otherData". */
int cli_trace_write_meta(FILE *f, const ftm_trace *tr, const ftm_mesh *m, int clock,
                         const ftm_cost_params *cp, cli_trace_meta_fn meta_fn, void *ctx);

/* About how many bytes of trace one execution of s records (the budget
 * of --trace: it keeps the first executions that fit). */
double cli_trace_exec_bytes(const ftm_sched *s);

/* Parses a --trace-clock value; CLI_EXIT_USAGE (after printing) if bad. */
int cli_trace_clock(const char *cmd, const char *v, int *clock);

#endif
