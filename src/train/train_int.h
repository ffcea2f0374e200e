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

/* --check: trains one replica on the whole batch (no runtime) and compares
 * with the mesh run's final params (`params`, nparams) and losses. */
int train_check(const ftm_train_opts *o, int micro, const float *params,
                const ftm_train_callbacks *cb, ftm_train_result *res);

/* Records a training phase of chip (FTM_EV_COMPUTE, FTM_EV_RECOVER, ...)
 * from t0 (ftm_trace_now) until now, when o->trace is set. */
void train_note(const ftm_train_opts *o, int chip, int kind, const char *name, double t0);
/* ftm_trace_now of o->trace, or 0 when not recording. */
double train_note_t0(const ftm_train_opts *o);
/* Each healthy chip of m notes the recovery. */
void train_note_recovery(const ftm_train_opts *o, const ftm_mesh *m);

double train_now(void);
double train_thread_cpu(void);
double train_process_cpu(void);

#endif
