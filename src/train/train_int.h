/* Internals of the train module (not installed). */
#ifndef FTMESH_TRAIN_INT_H
#define FTMESH_TRAIN_INT_H

#include "ftmesh/train.h"
#include "ftmesh/sched.h"
#include "ftmesh/trace.h"

/* Builds the allreduce `name` (a registry name, or "auto": the registered
 * algorithm with the smallest modeled time) for (m, count, red) and models
 * it; FTM_ENOTSUP from the algorithm falls back to "ring". *used receives
 * the static name actually built. FTM_EINVAL for an unknown name. */
int train_build(ftm_sched *s, const ftm_mesh *m, const char *name, size_t count,
                ftm_red red, double *modeled_s, const char **used);

/* Record e's schedule after its recovery or repair: res's, which the
 * attempt that runs next has set (build.c). first: e is the recovery's or
 * rejoin's first record (the others' schedule_before becomes the new one:
 * a change is told once). */
void train_note_schedule(ftm_train_event *e, const ftm_train_result *res, int first);

/* --check: trains one replica on the whole batch (no runtime) and compares
 * with the mesh run's final params (`params`, nparams) and losses. */
int train_check(const ftm_train_opts *o, int micro, const float *params,
                const ftm_train_callbacks *cb, ftm_train_result *res);

/* Records a training phase of chip (FTM_EV_COMPUTE, FTM_EV_RECOVER, ...)
 * from t0 (ftm_trace_now) until now, when o->trace is set. */
void train_note(const ftm_train_opts *o, int chip, int kind, const char *name, double t0);
/* ftm_trace_now of o->trace, or 0 when not recording. */
double train_note_t0(const ftm_train_opts *o);
/* Each healthy chip of m notes the recovery, from t0 (when a death
 * stopped the last attempt) until now: the old runtime down, the new one
 * built, the state copied. */
void train_note_recovery(const ftm_train_opts *o, const ftm_mesh *m, double t0);
/* ---- checkpoints (ckpt_train.c) ------------------------------------------- */
struct ftm_ckpt_meta;
struct ftm_ckpt_state;
/* The run's configuration as a checkpoint's meta. */
void train_ckpt_meta(const ftm_train_opts *o, size_t nparams, struct ftm_ckpt_meta *mt);
/* Writes o->checkpoint: m's params, opt's moments, done steps, the
 * losses of steps[0..done), the mesh (its dead chips and links, those
 * lost unnoticed marked 2: f's and the running attempt's, on rt) and f's
 * events still to come (and its unnoticed link kills). */
int train_ckpt_save(const ftm_train_opts *o, ftm_model *m, ftm_optim *opt, long done,
                    const ftm_train_step *steps, const ftm_mesh *mesh,
                    const ftm_rt_script *f, const ftm_rt *rt, char *detail, size_t dlen);
/* Parameters of o's model (a throwaway model of batch 1 counts them). */
int train_model_nparams(const ftm_train_opts *o, size_t *np);
/* The checkpoint's mesh (dead chips and links) into m when it recorded
 * one of m's shape, and its events still to come appended to pending
 * (when not NULL). Links lost unnoticed go to lost[nchips * 4] (1) and
 * stay live in m; with lost NULL they are dead in m. 0 or
 * FTM_EFORMAT/FTM_ENOMEM (detail). */
int train_ckpt_mesh(const struct ftm_ckpt_state *st, ftm_mesh *m, unsigned char *lost,
                    ftm_fault_script *pending, char *detail, size_t dlen);
/* Loads o->resume, refusing a file made for another configuration. */
int train_ckpt_load(const ftm_train_opts *o, size_t nparams, struct ftm_ckpt_state *st,
                    char *detail, size_t dlen);

double train_thread_cpu(void);
double train_process_cpu(void);

#endif
