/* Trace: a recorder of what each chip does during a run.
 *
 * The runtime (and the trainer) append events to a recorder attached with
 * ftm_rt_set_trace: per chip, each schedule executed, each step, each send
 * and receive op, transit traffic forwarded, waiting; in training the
 * compute phases, failures and recoveries. Each chip appends only to its
 * own buffer from its own thread, so recording takes no lock on the hot
 * path; with no recorder attached the runtime pays one NULL check per op.
 *
 * Times are wall seconds since the recorder was created. The modeled clock
 * (the cost model's replay of the same schedules) is attached afterwards by
 * ftm_trace_timeline (timeline.h): the recorder keeps a copy of every
 * schedule it saw executed, and of the mesh it ran on, for that purpose.
 *
 * Snapshots (for the teaching demo): when the chip buffer of a schedule is
 * at most snap_limit bytes, an EXEC event keeps the buffer as it was when
 * the schedule started, a STEP event the buffer at the step's end, a SEND
 * the bytes sent and a RECV the destination range after combining. Larger
 * buffers, and any over 4 GiB - 1, are not snapshotted (snap_len 0);
 * snap_limit 0 turns them off.
 */
#ifndef FTMESH_TRACE_H
#define FTMESH_TRACE_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

typedef enum {
    FTM_EV_EXEC = 0,  /* a schedule executed on this chip, start to end */
    FTM_EV_STEP,      /* one step of it */
    FTM_EV_SEND,      /* a send op: its step's start to its last packet pushed */
    FTM_EV_RECV,      /* a receive op (sum or copy): its step's start to its
                       * last packet applied */
    FTM_EV_FORWARD,   /* transit packets of one transfer put on one link */
    FTM_EV_WAIT,      /* blocked until a packet or a free slot arrives */
    FTM_EV_COMPUTE,   /* trainer: name is "forward+backward", "optimizer", ... */
    FTM_EV_FAIL,      /* the chip died here (t0 == t1) */
    FTM_EV_RECOVER,   /* the survivors rebuilt the rings and resumed */
    FTM_EV_NKINDS
} ftm_ev_kind;

/* Static name of a kind: "exec", "step", "send", ... */
FTM_EXTERN const char *ftm_trace_ev_kind_name(int kind);

typedef struct ftm_event {
    uint8_t kind;      /* ftm_ev_kind */
    uint8_t red;       /* receives: ftm_red */
    int8_t dir;        /* forwards: the link (direction) taken; else -1 */
    int chip;
    int peer;          /* send: destination; recv: source; forward: transfer's source; else -1 */
    int run;           /* which ftm_rt_run of the recorder (0, 1, ...) */
    int exec;          /* which schedule execution of this chip in that run (0, 1, ...) */
    int sched;         /* id of the schedule (ftm_trace_sched), -1 for none */
    int step;          /* step index in the chip's program, -1 for none */
    int op;            /* op index within the step, -1 for none */
    uint32_t tag;      /* transfer tag (send, recv, forward) */
    size_t off, len;   /* byte range of the op in the chip's buffer */
    double t0, t1;     /* wall seconds since ftm_trace_create */
    const char *name;  /* static: phase of a step, algorithm of an exec,
                        * compute phase, ...; never NULL */
    size_t snap;       /* offset of the snapshot in the chip's arena */
    uint32_t snap_len; /* bytes of snapshot, 0 for none */
} ftm_event;

typedef struct ftm_trace ftm_trace;

/* A recorder for meshes of nchips chips. Returns 0, FTM_EINVAL, FTM_ENOMEM. */
FTM_EXTERN int ftm_trace_create(ftm_trace **tr, int nchips, size_t snap_limit);
FTM_EXTERN void ftm_trace_destroy(ftm_trace *tr);

/* Wall seconds since the recorder was created. */
FTM_EXTERN double ftm_trace_now(const ftm_trace *tr);

/* ---- recording (chip's own thread; none of these fail the run: an
 * allocation failure is remembered and reported by ftm_trace_error) ---- */

/* Records only the first n schedule executions on each runtime (n <= 0:
 * all, the default): those of epoch 1 to n, which go on counting over the
 * ftm_rt_run calls of one runtime, so a later run on the same runtime
 * records nothing once n are done. Later executions leave no event, so a
 * run of many iterations keeps a trace of bounded size. Set before
 * recording. */
FTM_EXTERN void ftm_trace_set_max_exec(ftm_trace *tr, int n);

/* A new run starts (called by ftm_rt_run before the chip threads start):
 * recording starts again where the trainer stopped it (--trace-steps). */
FTM_EXTERN void ftm_trace_begin_run(ftm_trace *tr);
/* Chip starts executing s (on mesh m) with buffer buf / ends it. epoch
 * numbers the executions on one runtime from 1 (the same on every chip for
 * the same execution); exec = epoch - 1. */
FTM_EXTERN void ftm_trace_exec_begin(ftm_trace *tr, int chip, const ftm_sched *s, const ftm_mesh *m,
                          const void *buf, uint32_t epoch);
FTM_EXTERN void ftm_trace_exec_end(ftm_trace *tr, int chip);
/* Step k of the current schedule starts / ends (buf: the chip's buffer;
 * NULL: the step was cut short by an error, no snapshot). */
FTM_EXTERN void ftm_trace_step_begin(ftm_trace *tr, int chip, int k);
FTM_EXTERN void ftm_trace_step_end(ftm_trace *tr, int chip, const void *buf);
/* Op i of the current step moved bytes: done of op->len are done. When
 * it completes the event is written, spanning from its step's start (the
 * chip issued it then) to now. */
FTM_EXTERN void ftm_trace_op(ftm_trace *tr, int chip, int i, const ftm_op *op, size_t done,
                             const void *buf);
/* A transit packet of transfer tag (of schedule s, execution epoch, sent
 * by src) left this chip on link dir; consecutive packets of one transfer
 * on one link make one event. */
FTM_EXTERN void ftm_trace_forward(ftm_trace *tr, int chip, const ftm_sched *s, uint32_t epoch, int src,
                       uint32_t tag, int dir, size_t len);
/* The chip waited from t0 (ftm_trace_now) until now. */
FTM_EXTERN void ftm_trace_wait(ftm_trace *tr, int chip, double t0);
/* The chip dies here (failure injection). */
FTM_EXTERN void ftm_trace_fail(ftm_trace *tr, int chip);
/* Any other event (compute, fail, recover); ev->chip says whose. */
FTM_EXTERN void ftm_trace_add(ftm_trace *tr, const ftm_event *ev);

/* ---- reading (after the run) ---- */
FTM_EXTERN int ftm_trace_nchips(const ftm_trace *tr);
/* The chip's events in the order it recorded them. */
FTM_EXTERN const ftm_event *ftm_trace_events(const ftm_trace *tr, int chip, size_t *n);
/* The snapshot of an event (NULL if it has none). */
FTM_EXTERN const void *ftm_trace_snapshot(const ftm_trace *tr, const ftm_event *ev);
/* Schedules executed while recording, and the mesh each ran on. */
FTM_EXTERN int ftm_trace_nscheds(const ftm_trace *tr);
FTM_EXTERN const ftm_sched *ftm_trace_sched(const ftm_trace *tr, int id, const ftm_mesh **m);
/* Runs begun so far. */
FTM_EXTERN int ftm_trace_nruns(const ftm_trace *tr);
/* 0, or the first error recording met (FTM_ENOMEM): then events are missing. */
FTM_EXTERN int ftm_trace_error(const ftm_trace *tr);

#endif
