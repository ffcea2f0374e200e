/* Internals of the train module (not installed). */
#ifndef FTMESH_TRAIN_INT_H
#define FTMESH_TRAIN_INT_H

#include "ftmesh/train.h"
#include "ftmesh/sched.h"

/* Small-message int64 allreduce for the batch-norm hook: reduce up a BFS
 * spanning tree of one-hop, two-way live links, then broadcast down it.
 * 2(P-1) transfers instead of a ring's 2P(P-1): the hook's buffers are a
 * few hundred bytes, so latency and message count, not bandwidth, decide.
 * FTM_ENOTSUP when the healthy chips are not connected by two-way links
 * (the caller then falls back to a ring). */
int train_tree_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);

/* Builds the allreduce `name` ("tree", a registry name; "auto": the
 * registered algorithm with the smallest modeled time) for (m, count, red)
 * and models it. *used receives the static name actually built. */
int train_build(ftm_sched *s, const ftm_mesh *m, const char *name, size_t count,
                ftm_red red, double *modeled_s, const char **used);

/* --check: trains one replica on the whole batch (no runtime) and compares
 * with the mesh run's final params (`params`, nparams) and losses. */
int train_check(const ftm_train_opts *o, int micro, const float *params,
                const ftm_train_callbacks *cb, ftm_train_result *res);

double train_now(void);
double train_thread_cpu(void);
double train_process_cpu(void);

#endif
