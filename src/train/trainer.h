/* The trainer's state, shared by train.c (the steps on the chip threads,
 * the attempts) and agree.c (what the processes agree on after a run).
 * Internal to the train module. */
#ifndef FTMESH_TRAINER_H
#define FTMESH_TRAINER_H

#include <pthread.h>
#include <stdatomic.h>
#include "ftmesh/model.h"
#include "ftmesh/optim.h"
#include "ftmesh/sched.h"
#include "ftmesh/runtime.h"
#include "ftmesh/train.h"
#include "ftmesh/xsum.h"

#define HOOK_MAX 16
typedef struct hook_cache {
    pthread_mutex_t mu;
    const ftm_mesh *m;
    const char *name, *used;
    int n, err;
    struct { size_t count; ftm_sched s; double modeled; } e[HOOK_MAX];
    double step_modeled;       /* the prebuild's calls, a step's: their
                                  modeled time on m */
} hook_cache;

typedef struct trainer trainer;

/* The repairs applied between two attempts (rejoin.c): the chips that
 * join get the state over the mesh at the start of the next attempt. */
typedef struct rejoin {
    int n;                     /* repair events applied at this boundary */
    int carried;               /* the first `carried` of them: applied before
                                  an attempt that stopped before telling them
                                  (their chips got the state with the recovery) */
    int told;                  /* this attempt told them */
    int *ev;                   /* [script events] their script indices */
    int *donor;                /* [script events] the chip that sends (-1) */
    int *rec;                  /* [script events] their res->events index */
    int (*jc)[4], *nj;         /* [script events] the chips each brings back */
    unsigned char *joining;    /* [nchips] 1: receives the state */
    int any;                   /* some chip receives */
    ftm_sched s;               /* the transfers (built on the next mesh) */
    int have_s;
    size_t bytes;              /* state bytes per chip */
    double modeled_s;          /* modeled time of s */
    double t0;                 /* when the previous attempt ended */
    double modeled_before_s;   /* gradient allreduce before the repairs */
} rejoin;

typedef struct chip_st {
    trainer *t;
    ftm_chip *chip;
    int id;
    ftm_model *m;
    ftm_optim *o;
    int64_t *gi;               /* exact mode: nparams */
    int64_t lossx[FTM_XSUM_WORDS]; /* the step's loss, an exact sum */
    long first, count;
    float *xfer;               /* rejoin: the state to send or received */
    double hook_cpu, hook_cpu_step, hook_modeled_step;
    int hook_calls_step;
    double math_cpu, grad_cpu, optim_cpu;
    long done;                 /* steps completed (optimizer applied) */
    int untraced;              /* past --trace-steps: no events of its own */
    long step;                 /* the step being computed */
    /* The state at the start of step done - 1 (taken before the update):
     * a recovery rolls back to the first step not reported. */
    float *prev_params;
    ftm_optim *prev_o;
    int hook_calls_prev;       /* hook calls of the previous step (0: none yet) */
    long diverged;             /* 1 + the step whose forward/backward could
                                  not stay in range (0: none) */
} chip_st;

struct trainer {
    const ftm_train_opts *o;
    const ftm_train_callbacks *cb;
    ftm_train_result *res;
    const ftm_mesh *m;
    long start;                /* first step of this attempt */
    long until;                /* it stops before this step (a repair) */
    rejoin *rj;                /* the repairs this attempt starts with */
    int lead, micro;
    chip_st *cs;               /* [nchips], dead chips unused */
    ftm_sched grad;
    double grad_modeled;
    hook_cache hc;
    double t_prev, cpu0;
    ftm_rt *rt;
    int have_grad;
    int reporter;              /* lowest healthy chip of this process (-1) */
    double cpu_local;          /* this process's CPU in the steps (reporter) */
    int cpu_set;
    ftm_model *tf;             /* float --check: one-chip model at the mesh's
                                  parameters, run by the lowest chip */
    double tf_loss;
    ftm_rt_script *faults;
    long reported;             /* steps reported so far (the reporter; all
                                  processes agree after a run) */
    double step_t0;            /* when the step being run started */
    double fail_t;             /* trace clock: when a death stopped this attempt */
    double recover_t0;         /* trace clock: when the death this attempt
                                * recovers from stopped the last one (0: none) */
    _Atomic int halt;          /* *o->stop seen by a chip before a step's
                                  barrier (its value, the largest over
                                  processes): every chip stops after it */
};

/* The state an attempt starts from: params and moments at step `done`. */
typedef struct snapshot {
    long done;
    float *params;
    ftm_optim *optim;
} snapshot;

/* ---- train.c and rejoin.c: the chips' program ----------------------------- */

int train_chip_fn(ftm_chip *chip, void *arg);
/* res's bn_schedule, bn_fallback and width counts from the hook cache. */
void train_hook_fallbacks(const trainer *t, ftm_train_result *res);
int train_hook_prebuild(trainer *t, const ftm_train_opts *o, size_t np);

/* Allocates r's arrays for script f on mesh m (zeroed). */
int train_rejoin_init(rejoin *r, const ftm_rt_script *f, const ftm_mesh *m);
void train_rejoin_free(rejoin *r);
/* Between attempts, before the one that starts at step `start` on *cur:
 * applies the script's repairs due at `start` to cur, records their
 * events (res->events) and picks each one's donor. 0 or an error. */
int train_rejoin_apply(rejoin *r, ftm_rt_script *f, ftm_mesh *cur, long start,
                       ftm_train_result *res);
/* 1 when event i of f is a repair not yet applied that is due at `start`
 * (its step is start or earlier). */
int train_rejoin_due(const ftm_rt_script *f, int i, long start);
/* The step the next repair is due (> start), or `steps`. */
long train_rejoin_next(const ftm_rt_script *f, long start, long steps);
/* In setup, on the attempt's mesh: builds and declares the transfers. */
int train_rejoin_build(trainer *t);
/* On each chip's thread before the first step: the state goes from the
 * donors to the joining chips; the reporter then tells the repairs. */
int train_rejoin_exec(trainer *t, chip_st *c);
/* Once every chip has its state: the repairs' records and the callbacks
 * (the reporter chip's thread; after the run, a process that has none of
 * the chips, that its log tells them too). Sets rj->told. */
void train_rejoin_tell(trainer *t);
/* After setup: the donors' state to send, 1 when c receives instead. */
int train_rejoin_joining(const trainer *t, int id);

/* ---- agree.c: after a run, over every process ------------------------------ */

/* The lead's final parameters into res->params (every process), every
 * replica compared with them where it lives. */
int train_compare_replicas(trainer *t);
/* After every attempt: its per-chip CPU figures and sgemm counters,
 * summed over the processes, added to res. */
int train_sum_counters(trainer *t);
/* After FTM_EDIVERGED: the earliest diverged step over every process. */
int train_note_divergence(trainer *t, const ftm_mesh *m);
/* Allocates snap's params and optimizer state once (o's optimizer). */
int train_snap_alloc(snapshot *snap, const ftm_train_opts *o, size_t np);
/* After a failure: the state the survivors of next resume from, in snap
 * on every process. */
int train_take_snapshot(trainer *t, const ftm_mesh *next, snapshot *snap);
/* The steps reported, the stop request, the lead's figures and the CPU
 * of the steps, the same on every process. */
int train_sync_run(trainer *t);

#endif
