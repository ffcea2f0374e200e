/* The fault-script options shared by train and allreduce (faults_cli.c). */
#ifndef FTMESH_FAULTS_CLI_H
#define FTMESH_FAULTS_CLI_H

#include <stdio.h>
#include "cli.h"
#include "ftmesh/faults.h"
#include "ftmesh/runtime.h"

/* Option ids (between the shared ones and the commands' own). */
enum { CLI_O_KILL = 480, CLI_O_FAULTS, CLI_O_RANDOM_KILLS, CLI_O_REPAIR, CLI_O_REPAIR_AFTER };

/* --kill, --faults, --random-kills: the table entries; WHEN the repairs'
 * placeholder ("STEP", "ITER": a start, never a phase). */
#define CLI_OPTS_FAULTS(WHEN, when_help)                                                  \
    { "kill", "WHAT@WHEN", CLI_O_KILL,                                                   \
      "WHAT dies at WHEN during the run; repeatable. WHAT: R,C (a chip),\n"             \
      "host:R,C (its 2x2 host), link:R,C-R2,C2 (both ways) or link:R,C>R2,C2\n"          \
      "(one way). " when_help },                                                         \
    { "faults", "FILE", CLI_O_FAULTS,                                                    \
      "read events from FILE, one per line ('#' comments):\n"                            \
      "WHAT@WHEN or kill WHAT@WHEN (a kill), repair WHAT@" WHEN },                       \
    { "random-kills", "K", CLI_O_RANDOM_KILLS,                                           \
      "K more events drawn from --fault-seed (default: --seed): chips, hosts or\n"         \
      "links at random times that keep the healthy chips connected" }

/* --repair, --repair-after; unit: "step" or "iteration", WHEN its
 * placeholder ("STEP", "ITER"). */
#define CLI_OPTS_REPAIRS(unit, WHEN)                                                      \
    { "repair", "WHAT@" WHEN, CLI_O_REPAIR,                                              \
      "WHAT comes back at the start of " unit " " WHEN "; repeatable;\n"                 \
      "WHAT as for --kill. A link is live again; chips join\n"                           \
      "(train: a live chip sends them the state over the mesh)" },                       \
    { "repair-after", "N", CLI_O_REPAIR_AFTER,                                           \
      "whatever dies comes back N " unit "s later (with\n"                               \
      "--random-kills: failures and repairs)" }

typedef struct cli_faults {
    const char **kill;         /* --kill values, argv pointers */
    int nkill;
    const char **repair;       /* --repair values */
    int nrepair;
    long repair_after;         /* --repair-after (0: none) */
    const char *file;          /* --faults */
    int random, random_given;  /* --random-kills */
    /* train --resume: the checkpoint's file, its step and its events still
     * to come (NULL: none). The script then starts from that step: events
     * given before it are history and ignored, the pending ones are added
     * (one given again counts once), and a pending event or a
     * --repair-after repair at or after the horizon is kept (for the next
     * checkpoint) instead of refused. */
    const char *resume;
    long start;
    const ftm_fault_script *pending;
    int history_kept;          /* --resume: the checkpoint's mesh is taken (it holds
                                * what the events before start did) */
    int checkpoint;            /* train --checkpoint given: it keeps pending events */
} cli_faults;

/* 0, or CLI_EXIT_FAIL when out of memory. */
int cli_faults_init(cli_faults *f, int argc);
void cli_faults_free(cli_faults *f);
/* 1 when id is one of the options above. */
int cli_faults_opt(int id);
/* A run without a fault script (nothing dies): warns that --repair-after,
 * if given, has no effect; returns 0. */
int cli_faults_none(const char *cmd, const cli_faults *f);
/* Applies CLI_O_KILL, CLI_O_FAULTS, CLI_O_RANDOM_KILLS, CLI_O_REPAIR or
 * CLI_O_REPAIR_AFTER; 0 or
 * CLI_EXIT_USAGE (after printing). */
int cli_faults_set(const char *cmd, cli_faults *f, int id, const char *val);
/* 1 when any fault option was given. */
int cli_faults_any(const cli_faults *f);
/* The run's script for m (mode FTM_FAULT_TRAIN or _ALLREDUCE, horizon the
 * steps or iterations): every --kill and --repair, the file (read once),
 * the random draws (the first of a sequence from seed that fits beside
 * the rest; none on --resume, whose checkpoint holds them), and
 * short_form (the --fail-during event, or NULL) named short_name in
 * messages. Checked before the run: a malformed event, one
 * outside the mesh or the run, or one that would cut the healthy chips
 * apart is refused with one line naming the option (and a chip in each
 * part): CLI_EXIT_USAGE. On 0, s is the caller's to free. */
int cli_faults_build(const char *cmd, const cli_faults *f, const ftm_mesh *m, int mode,
                     long horizon, uint64_t seed, const ftm_fault_event *short_form,
                     const char *short_name, ftm_fault_script *s);
/* One line for the log: when, what died, who noticed and how, the time
 * lost, the chips left, the step redone (allreduce: the run starts over),
 * the new rings' modeled time (train: of the gradient allreduce); for a
 * repair, what came back, who sent the state and its bytes and modeled
 * time, the chips now, the new rings' modeled time. */
void cli_faults_print(FILE *out, const ftm_fault_record *e, int mode);
/* The summary's "events" list: kind ("kill" or "repair"), step (the
 * iteration for allreduce), phase, what, detected_by, state_from,
 * state_bytes, lost_wall_s, lost_modeled_s, chips_after, noticed,
 * resumed_step, modeled_before_s, modeled_after_s. */
void cli_faults_json(cli_json *j, const ftm_fault_record *ev, int n);

#endif
