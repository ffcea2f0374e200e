/* Internals of the train module (not installed). */
#ifndef FTMESH_TRAIN_INT_H
#define FTMESH_TRAIN_INT_H

#include "ftmesh/train.h"
#include "ftmesh/sched.h"

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

/* ---- fault script during training (faults_train.c) ---------------------- */

typedef struct train_faults {
    ftm_fault_script script;   /* sorted: o->faults plus the short form */
    int *victim;               /* [n] the chip that fires it in this attempt
                                  (-1: what it names is already dead) */
    int *fired;                /* [n] attempt (1-based) it fired in; 0 not
                                  yet; -1 skipped */
    unsigned char *logged;     /* [n] 1: reported in an event record */
    int *armed;                /* [nchips] event armed on that chip, or -1 */
    int attempt;
    /* dead links nobody noticed: each new runtime gets them again */
    int nsecret, *secret_chip, *secret_dir;
} train_faults;

int train_faults_init(train_faults *f, const ftm_train_opts *o, const ftm_mesh *m);
void train_faults_free(train_faults *f);
/* Before an attempt on mesh m: who fires what. */
void train_faults_attempt(train_faults *f, const ftm_mesh *m);
/* On chip's thread at (step, phase): fires its due events (not the counted
 * allreduce ones). FTM_ECHIPDEAD when a chip or host died: stop. */
int train_faults_fire(train_faults *f, ftm_chip *chip, const ftm_mesh *m, long step, int phase);
/* Before the gradient allreduce: events with 0 packets fire, the first
 * other one is armed (FTM_FAULT_MID: mid_pkts). After it: an armed event
 * that did not strike (the victim sent fewer packets) and any other of the
 * step's allreduce events strike now. */
int train_faults_arm(train_faults *f, ftm_chip *chip, const ftm_mesh *m, long step,
                     uint64_t mid_pkts);
int train_faults_after(train_faults *f, ftm_chip *chip, const ftm_mesh *m, long step);
/* The new runtime of an attempt gets the dead links nobody noticed. */
void train_faults_rt(const train_faults *f, ftm_rt *rt);
/* After an attempt on m stopped by a failure (rc FTM_ECHIPDEAD or
 * FTM_ELINKDEAD) on runtime rt: m2 (uninitialised) becomes m without what
 * died and was noticed, and ev[] (up to max) the records of the events
 * fired in this attempt (returns how many; the caller fills the times). */
int train_faults_recover(train_faults *f, const ftm_rt *rt, const ftm_mesh *m, ftm_mesh *m2,
                         ftm_train_event *ev, int max);
/* Records of events that fired in the last attempt without being noticed
 * (after a run that ended normally). */
int train_faults_unnoticed(train_faults *f, ftm_train_event *ev, int max);

/* ---- checkpoints (ckpt_train.c) ------------------------------------------- */
struct ftm_ckpt_meta;
struct ftm_ckpt_state;
/* The run's configuration as a checkpoint's meta. */
void train_ckpt_meta(const ftm_train_opts *o, size_t nparams, struct ftm_ckpt_meta *mt);
/* Writes o->checkpoint: m's params, opt's moments, done steps and the
 * losses of steps[0..done). */
int train_ckpt_save(const ftm_train_opts *o, ftm_model *m, ftm_optim *opt, long done,
                    const ftm_train_step *steps, char *detail, size_t dlen);
/* Loads o->resume, refusing a file made for another configuration. */
int train_ckpt_load(const ftm_train_opts *o, size_t nparams, struct ftm_ckpt_state *st,
                    char *detail, size_t dlen);

double train_now(void);
double train_thread_cpu(void);
double train_process_cpu(void);

#endif
