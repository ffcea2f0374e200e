/* Fault scripts: what dies, and when, during a run.
 *
 * An event is written WHAT@WHEN:
 *   WHAT  R,C  (or chip:R,C)   a chip
 *         host:R,C             the 2x2 host whose top-left chip is (R,C)
 *         link:R,C-R2,C2       the link between two neighbours, both ways
 *         link:R,C>R2,C2       only the direction (R,C) -> (R2,C2)
 *   WHEN  for training (FTM_FAULT_TRAIN):
 *         STEP                 at the start of step STEP
 *         STEP:PHASE           during PHASE of that step: forward, backward,
 *                              allreduce (the middle of the gradient
 *                              allreduce) or optimizer
 *         STEP:allreduce:N     in the gradient allreduce, once the victim
 *                              has sent N packets in it
 *         for allreduce runs (FTM_FAULT_ALLREDUCE):
 *         ITER                 at the start of iteration ITER
 *         ITER:N               once the victim has sent N packets in it
 *         ITER:allreduce       in the middle of it
 * The victim of a packet count is the chip, the host's top-left chip (its
 * first live one in row-major order), or the link's first-named end.
 *
 * A repair brings back what a kill took (or what was dead from the start):
 * WHAT as above, WHEN only STEP (ITER): at the start of that step the
 * chips join again (a host's four at once), a link is live again.
 *
 * A script file holds one event per line: "WHAT@WHEN" or "kill WHAT@WHEN"
 * (a kill), "repair WHAT@STEP" (a repair); '#' starts a comment, blank
 * lines are skipped. Steps and iterations count from 0.
 *
 * Nothing here prints: errors are negative FTM_E* codes and, when the
 * caller passes a buffer, one line of detail saying what is wrong.
 */
#ifndef FTMESH_FAULTS_H
#define FTMESH_FAULTS_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/mesh.h"

typedef enum { FTM_FAULT_CHIP = 0, FTM_FAULT_HOST = 1, FTM_FAULT_LINK = 2 } ftm_fault_kind;
#define FTM_FAULT_KINDS_ALL 7u /* bit (1 << kind) for each kind */

/* In time order within a step. */
typedef enum {
    FTM_PHASE_START = 0,
    FTM_PHASE_FORWARD = 1,
    FTM_PHASE_BACKWARD = 2,
    FTM_PHASE_ALLREDUCE = 3,
    FTM_PHASE_OPTIMIZER = 4
} ftm_fault_phase;
#define FTM_FAULT_NPHASES 5

typedef enum { FTM_FAULT_TRAIN = 0, FTM_FAULT_ALLREDUCE = 1 } ftm_fault_mode;

/* pkts value of an allreduce-phase event without a count: the middle of
 * the victim's packets (half of them, plus one). */
#define FTM_FAULT_MID (-1)
/* Largest step/iteration and packet count the parser accepts. */
#define FTM_FAULT_MAX_WHEN 1000000000L
#define FTM_FAULT_MAX_PKTS 1000000000000LL

typedef struct ftm_fault_event {
    int kind;           /* ftm_fault_kind */
    int r, c;           /* chip, host top-left, or the link's first end */
    int r2, c2;         /* the link's second end */
    int oneway;         /* link: 1 = only (r,c) -> (r2,c2) */
    int repair;         /* 0: a kill; 1: a repair (phase FTM_PHASE_START) */
    long when;          /* step or iteration */
    int phase;          /* ftm_fault_phase */
    int64_t pkts;       /* FTM_PHASE_ALLREDUCE: packets, or FTM_FAULT_MID */
    int origin;         /* caller's tag (which option it came from) */
    int line;           /* line in a script file (1-based), else 0 */
    int order;          /* position in the script when added */
} ftm_fault_event;

typedef struct ftm_fault_script {
    int mode;           /* ftm_fault_mode */
    int n, cap;
    ftm_fault_event *ev;
} ftm_fault_script;

/* Where a refused script goes wrong (ftm_fault_script_check). */
typedef struct ftm_fault_verdict {
    int event;          /* index (in the sorted script) of the event, or -1 */
    int a, b;           /* FTM_EPARTITION: a healthy chip in each part
                           (a cannot reach b); else -1 */
} ftm_fault_verdict;

FTM_EXTERN void ftm_fault_script_init(ftm_fault_script *s, int mode);
FTM_EXTERN void ftm_fault_script_free(ftm_fault_script *s);

/* Parses one WHAT@WHEN for `mode`. 0 or FTM_EINVAL (with detail); on
 * error *ev is unspecified. origin/line/order are zeroed. */
FTM_EXTERN int ftm_fault_parse(const char *text, int mode, ftm_fault_event *ev,
                    char *detail, size_t dlen);
/* Parses one WHAT@STEP (ITER) of a repair: ev->repair = 1. 0 or
 * FTM_EINVAL (with detail; a phase or packet count is refused). */
FTM_EXTERN int ftm_fault_parse_repair(const char *text, int mode, ftm_fault_event *ev,
                                      char *detail, size_t dlen);
/* Parses a script line: "WHAT@WHEN", "kill WHAT@WHEN" or "repair
 * WHAT@STEP". 0 or FTM_EINVAL (with detail). */
FTM_EXTERN int ftm_fault_parse_line(const char *text, int mode, ftm_fault_event *ev,
                                    char *detail, size_t dlen);
/* Appends a copy of ev (order = its position). 0 or FTM_ENOMEM. */
FTM_EXTERN int ftm_fault_script_add(ftm_fault_script *s, const ftm_fault_event *ev);
/* 1 when a and b are the same event: what, when, kill or repair (their
 * origin, line and order aside). */
FTM_EXTERN int ftm_fault_same(const ftm_fault_event *a, const ftm_fault_event *b);
/* Appends src's events at or after step `start` (those before it are
 * history: the mesh at start holds them), each unless it is the same
 * event (ftm_fault_same) as one dst held before the call. Events given
 * twice within src both stay, for ftm_fault_script_check to refuse. src
 * may be NULL. 0 or FTM_ENOMEM (then dst is as it was). */
FTM_EXTERN int ftm_fault_script_merge(ftm_fault_script *dst, const ftm_fault_script *src,
                                      long start);
/* Parses a script file's text (len bytes, need not end in NUL) and
 * appends its events with their line numbers and `origin`. 0, FTM_EFORMAT
 * (detail names the line; nothing is appended) or FTM_ENOMEM. */
FTM_EXTERN int ftm_fault_script_parse_text(ftm_fault_script *s, const char *text, size_t len,
                                int origin, char *detail, size_t dlen);
/* Reads and parses a file: also FTM_EIO when it cannot be read. */
FTM_EXTERN int ftm_fault_script_load(ftm_fault_script *s, const char *path, int origin,
                          char *detail, size_t dlen);

/* Draws k kills reproducibly from seed (counter-based, include/ftmesh/
 * rng.h): times uniform over [0, horizon) and the phases, what uniform
 * among the allowed kinds (bits 1 << kind) and the targets live at that
 * time, each kill one that keeps the healthy chips of m connected. With
 * repair_after >= 1 the kills are drawn for a script that will get
 * ftm_fault_script_repair_after(s, m, repair_after, ...): what a kill
 * takes is back that many steps later, and the kills with their repairs
 * pass ftm_fault_script_check (a repair never brings a chip back among
 * dead neighbours); 0: kills are for good. Events already in s are not
 * considered. Appends them with `origin`. FTM_EINVAL (k < 0, horizon < 1,
 * no kind), FTM_ERANGE when some kill cannot be placed (detail says
 * which), FTM_ENOMEM; on error nothing is appended. */
FTM_EXTERN int ftm_fault_script_random(ftm_fault_script *s, const ftm_mesh *m, int k, uint64_t seed,
                            long horizon, unsigned kinds, long repair_after, int origin,
                            char *detail, size_t dlen);

/* Appends, for every kill of s, a repair of what it takes n (>= 1) steps
 * later when that is before horizon (0: no limit). With a mesh m (its
 * static faults; NULL: the kills as written) the events are played on it
 * in time order and each repair brings back exactly what its kill took (a
 * host kill that found a chip dead already: repairs of the chips it
 * killed; a both-ways link kill that found one direction dead: a one-way
 * repair; a link killed at the instant of the host around it: the link,
 * whichever comes first; a chip some repair brings back before then is
 * no longer that kill's); the events then are in time order. 0, FTM_EINVAL (n < 1) or
 * FTM_ENOMEM (nothing appended). */
FTM_EXTERN int ftm_fault_script_repair_after(ftm_fault_script *s, const ftm_mesh *m, long n,
                                             long horizon);

/* Time order: when, then repairs before kills, then phase, then packets (FTM_FAULT_MID counts as the
 * middle, after every explicit count), then order. */
FTM_EXTERN int ftm_fault_cmp(const ftm_fault_event *a, const ftm_fault_event *b);
/* Sorts the events into time order (stable: ties keep script order). */
FTM_EXTERN void ftm_fault_script_sort(ftm_fault_script *s);

/* Applies ev to m: 0, FTM_ERANGE (outside the mesh, host does not fit),
 * FTM_ENOTNEIGHBOR, or FTM_EINVAL when it kills nothing that is still
 * alive (a dead chip, a host with every chip dead, a link already dead or
 * with a dead end). A repair brings back the chip, every chip of the
 * host, or the link (both directions, or the one): FTM_EINVAL unless all
 * of that is dead (a host with a live chip, a link dead one way only
 * repaired both ways). On error m is unchanged. */
FTM_EXTERN int ftm_fault_apply(ftm_mesh *m, const ftm_fault_event *ev);

/* The pre-run check: sorts s, then applies its events in time order to a
 * copy of m (which holds the static faults), events at the same instant
 * together, and refuses the script when an event is invalid (as in
 * ftm_fault_apply), falls at or after `horizon` (steps or iterations; 0:
 * no limit), kills every chip (FTM_EALLDEAD) or cuts the healthy chips
 * apart (FTM_EPARTITION, v->a and v->b in different parts). v->event
 * names the offending event. 0 when the script can run. */
FTM_EXTERN int ftm_fault_script_check(ftm_fault_script *s, const ftm_mesh *m, long horizon,
                           ftm_fault_verdict *v, char *detail, size_t dlen);

/* The event's canonical text (parses back to the same event with
 * ftm_fault_parse_line; a repair starts "repair "): buf of len bytes;
 * returns the length snprintf would write. */
FTM_EXTERN int ftm_fault_format(const ftm_fault_event *ev, int mode, char *buf, size_t len);
/* What dies, for people: "chip (2,1)", "host (2,0)", "link (0,0)-(0,1)",
 * "link (0,0)->(0,1)". */
FTM_EXTERN int ftm_fault_what(const ftm_fault_event *ev, char *buf, size_t len);
/* "start", "forward", "backward", "allreduce", "optimizer" ("?" else). */
FTM_EXTERN const char *ftm_fault_phase_name(int phase);
/* The chips ev kills (a chip, or a host's live chips in m) into out (up to
 * 4); 0 for a link. The victim of a packet count is out[0]. For a repair:
 * the chips it brings back (dead in m). */
FTM_EXTERN int ftm_fault_chips(const ftm_mesh *m, const ftm_fault_event *ev, int *out);

#endif
