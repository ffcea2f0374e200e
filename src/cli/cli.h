/* Command-line helpers shared by the ftmesh subcommands. Only src/cli
 * prints or exits. */
#ifndef FTMESH_CLI_H
#define FTMESH_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/mesh.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1   /* ran, but the result is wrong, or failed */
#define CLI_EXIT_USAGE 2  /* bad input */
#define CLI_EXIT_HANG 3   /* the chips hung (the watchdog fired) */

/* Options every mesh command takes: --mesh, --torus, the faults, --json. */
typedef struct cli_mesh_opts {
    const char *cmd;            /* "rings", ... for messages */
    const char *mesh_spec;      /* "8x8" */
    int torus;
    const char **fail, **fail_host, **fail_link; /* repeatable, argv pointers */
    int nfail, nfail_host, nfail_link;
    int random_faults;
    uint64_t seed;
    int json;
    double hang_timeout_s;
} cli_mesh_opts;

/* Prints "ftmesh CMD: MESSAGE" to stderr and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void cli_mesh_opts_init(cli_mesh_opts *o, const char *cmd, int argc);
void cli_mesh_opts_free(cli_mesh_opts *o);
/* If argv[*i] is a common option, consumes it (and its value) and returns
 * 1; returns 0 if it is not one; on a malformed one prints and returns -1. */
int cli_mesh_opt(cli_mesh_opts *o, int argc, char **argv, int *i);
/* Value of option argv[*i] ("--x V" or "--x=V"), advancing *i; NULL (after
 * printing) when missing. name is the option without its value. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i, const char *name);
/* 1 if argv[i] is option name, alone or as name=value. */
int cli_is(const char *arg, const char *name);
/* Parses sizes like 4096, 64K, 64M, 1G (bytes). 0 on success. */
int cli_parse_size(const char *s, size_t *out);
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *s, double lo, double hi, double *out);

/* Builds the mesh and applies the faults; prints and returns
 * CLI_EXIT_USAGE on any bad input (also when healthy chips are cut apart
 * or all dead), else 0 with m initialised. */
int cli_build_mesh(const cli_mesh_opts *o, ftm_mesh *m);

/* Parses --link-GBps, --hop-us or --hbm-GBps at argv[*i] into p (a
 * struct ftm_cost_params). Returns 0 or CLI_EXIT_USAGE (after printing). */
struct ftm_cost_params;
int cli_cost_opt(const char *cmd, int argc, char **argv, int *i, struct ftm_cost_params *p);

/* ftmesh sweep --throughput (sweep_tput.c). */
int cli_sweep_throughput(int argc, char **argv);

/* Prints the watchdog's report to stderr: each stuck chip, its phase and
 * step, what it waits for, from/to whom and on which link. */
struct ftm_stuck;
void cli_print_stuck(const char *cmd, const ftm_mesh *m, const struct ftm_stuck *st, int n,
                     double timeout_s);

/* The help text for the common options. */
extern const char cli_mesh_help[];

/* JSON string escaping for keys/values we print (ASCII names only). */
void cli_json_str(const char *s);

#endif
