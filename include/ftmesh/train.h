/* train: data-parallel training on the (faulty) mesh, and the proof that
 * the numbers do not change.
 *
 * One step, on every healthy chip (a thread of the runtime), each with its
 * own model replica created from the same seed:
 *   1. forward + backward of the chip's share of the global batch B
 *      (ftm_train_split); synchronised batch norm sums its statistics over
 *      the chips through the model's hook, an FTM_RED_SUM_I64 allreduce
 *      schedule over the mesh (built once per distinct size, cached; the
 *      registry's "tree" by default);
 *   2. gradient allreduce through the links with the chosen algorithm
 *      (float32 sums, or in exact mode int64 fixed-point sums that are
 *      independent of order, hence of the mesh, the holes and the algorithm);
 *   3. the same optimizer update on every chip.
 * The loss is normalised by B inside the model, so the summed gradient is
 * the one-chip gradient. Schedules are built once, before the run.
 *
 * --check runs the same training on one chip without the runtime (the
 * model called directly on the whole batch) and compares losses and final
 * parameters. Exact mode must give bitwise equal parameters. Float mode
 * runs drift apart by rounding that training amplifies step after step, so
 * float mode is judged per step instead: at every step the lowest chip also
 * computes the one-chip gradient at the mesh's current parameters, and the
 * gradient the mesh applied must be within FTM_TRAIN_FLOAT_TOL of it
 * (justified in src/train/check.c); the trajectory figures are reported.
 */
#ifndef FTMESH_TRAIN_H
#define FTMESH_TRAIN_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include "ftmesh/faults.h"
#include "ftmesh/mesh.h"
#include "ftmesh/model.h"
#include "ftmesh/runtime.h"

/* Float-mode --check bound, per step, at the same parameters: every
 * tensor's max |grad_mesh - grad_one_chip| / max |grad_one_chip|, and
 * |loss_mesh - loss_one_chip| / |loss_one_chip|. */
#define FTM_TRAIN_FLOAT_TOL 1e-4
/* Exact mode: parameters must be bitwise equal, and so must every step's
 * loss (an exact sum of per-micro-batch losses, xsum.h): the tolerance is 0. */
#define FTM_TRAIN_EXACT_LOSS_TOL 0.0

typedef struct ftm_train_opts {
    ftm_model_config model;  /* kind, depth, heads, seed, data, sizes; the
                                trainer sets max_batch itself */
    ftm_optim_config optim;  /* kind 0: ftm_optim_config_default(model.kind) */
    const char *algo;        /* gradient allreduce: a registry name or "auto"
                                (fastest modeled); NULL: "ring" */
    const char *bn_algo;     /* batch-norm hook allreduce: a registry name or
                                "auto"; NULL: "tree" (latency-bound sums) */
    long steps, batch;       /* steps >= 1, batch B >= 1 */
    int micro;               /* micro-batch size (default 4, see split) */
    int exact;               /* 1: --reduce exact */
    int check;               /* 1: also train on one chip and compare */
    double tol;              /* float-mode bound; 0: FTM_TRAIN_FLOAT_TOL */
    double hang_timeout_s;   /* 0: runtime default */
    size_t pkt_bytes;        /* 0: runtime default */
    /* Failure during training: chip fail_chip dies in the middle of the
     * gradient allreduce of step fail_step. The trainer recovers: every
     * survivor takes the state of the most advanced survivor, the batch is
     * re-split over the chips left, the rings are rebuilt, and training
     * goes on from the first step not completed. */
    int fail_during;
    int fail_chip;
    long fail_step;
    /* Optional recorder (trace.h): every chip's allreduces, its
     * forward+backward and optimizer phases, the failure and the recovery,
     * in the first trace_steps steps from start_step (0: every step; an
     * attempt that redoes a step past them records nothing). */
    struct ftm_trace *trace;
    long trace_steps;
    /* Fault script (mode FTM_FAULT_TRAIN; NULL: none): every event fires
     * once, when its step and phase come (src/runtime/script.c says
     * where each phase strikes). The short form above is one more event,
     * fail_chip@fail_step:allreduce. Chips and hosts die at once (a health
     * monitor tells every chip); a dying link kills no chip: the chips that
     * next need it notice. Either way every survivor drops the step in
     * progress, takes the state at the start of the first step not yet
     * reported, the mesh loses what died, the rings are rebuilt, the batch
     * is re-split and that step is redone. A repair at or after steps
     * is not run but stays pending: a checkpoint records it. With resume,
     * the checkpoint's mesh (same shape) and its pending events hold, and
     * these events are added to them: those before the resumed step are
     * history and ignored, one equal to a pending event counts once. */
    const ftm_fault_script *faults;
    /* Checkpoints (include/ftmesh/checkpoint.h): written by the lowest
     * chip every checkpoint_every steps (0: only at the end) and at the
     * end, at step boundaries, when checkpoint is not NULL. resume: start
     * from that file's state (it must match this configuration). data_id
     * tells datasets apart in the file (0: synthetic). */
    const char *checkpoint;
    long checkpoint_every;
    const char *resume;
    uint64_t data_id;
    /* When *stop becomes nonzero (a signal handler), the current step is
     * finished, the checkpoint written if asked, and training stops. */
    atomic_int *stop;      /* lock-free: a signal handler may store to it
                              while chip threads read it */
} ftm_train_opts;

/* One failure during training, as the survivors saw it (when = the step,
 * resumed = the step redone, modeled_* = the gradient allreduce). */
typedef ftm_fault_record ftm_train_event;

/* Defaults for a model kind: ftm_model_config_default, optimizer defaults,
 * algo "ring", bn_algo "tree", 10 steps, batch 32, micro 4. */
FTM_EXTERN void ftm_train_opts_default(ftm_train_opts *o, int model_kind);

/* What one step did (summed or maximised over chips). */
typedef struct ftm_train_step {
    long step;
    int chips;                 /* healthy chips that ran it */
    double loss;               /* sum of loss/B over the batch, added exactly
                                  per micro-batch (xsum.h): in exact mode the
                                  same bits on any mesh, faults, algorithm */
    double wall_s;             /* barrier-to-barrier wall time of the step */
    double modeled_allreduce_s;/* modeled time of the gradient schedule plus
                                  the BN hook schedules of the step */
    double math_cpu_s;         /* forward/backward CPU seconds over all chips
                                  (hook allreduces excluded) */
    double math_max_cpu_s;     /* largest single chip's forward/backward CPU */
} ftm_train_step;

typedef struct ftm_train_callbacks {
    /* After every step. Called from a chip thread (the lowest healthy chip)
     * while the other chips may already compute the next step. */
    void (*step)(void *ctx, const ftm_train_step *s);
    /* After every step of the --check reference run (main thread). */
    void (*ref_step)(void *ctx, long step, double loss);
    void *ctx;
    /* After each recovery, once per failure (main thread). */
    void (*event)(void *ctx, const ftm_train_event *e);
} ftm_train_callbacks;

typedef struct ftm_train_result {
    int chips;                 /* healthy chips P (after a recovery: those left) */
    size_t nparams;
    int died_chip;             /* first chip that died during training, or -1 */
    ftm_mesh mesh_after;       /* the mesh the last attempt ran on (every
                                  death noticed and repair applied before
                                  it; have_mesh_after) */
    int have_mesh_after;
    int *died;                 /* [ndied] every chip that died during the run, in
                                  the order they died (a chip that dies again
                                  is listed again; chips of one failure by id) */
    int ndied;
    long resumed_step;         /* first step redone after the first recovery (-1) */
    ftm_train_event *events;   /* [nevents], in the order the run told
                                  them: as they were noticed (a death
                                  nobody noticed when the run found it) */
    int nevents;
    long start_step;           /* first step run (> 0 after --resume) */
    int interrupted;           /* nonzero: *stop ended the run after
                                  steps_done; the value *stop held (over
                                  MPI ranks the largest: a CLI stores the
                                  signal's number) */
    long steps_done;
    int checkpoints;           /* checkpoint files written */
    int resume_failed;         /* 1: the --resume file was refused (detail) */
    char detail[256];          /* what went wrong, for the error's message
                                  (checkpoint files, fault scripts) */
    const char *algo;          /* gradient algorithm used (auto resolved):
                                  a static registry string, never freed */
    const char *bn_algo;       /* batch-norm hook algorithm, likewise */
    const char *schedule;      /* the gradient schedule that ran (the last
                                  attempt's): algo's own, or another one */
    const char *fallback;      /* NULL, or why schedule is not algo's own
                                  (static strings, as ftm_sched's) */
    const char *bn_fallback;   /* NULL, or why bn_schedule ran for the
                                  batch-norm sums instead of bn_algo's own
                                  (the last attempt's: the first such width) */
    const char *bn_schedule;   /* that schedule (NULL with bn_fallback) */
    int bn_widths;             /* distinct batch-norm widths summed */
    int bn_fallback_widths;    /* of those, how many ran bn_schedule */
    int micro;                 /* micro-batch size used (float mode may need
                                  a divisor of the requested one) */
    long steps, batch;
    ftm_train_step *step;      /* [steps] */
    double wall_s;             /* sum of step wall times */
    /* availability (failures and repairs): the chips alive in each step
     * run, summed, out of the mesh's chips times the steps run; the whole
     * run's wall time (failures and rejoining included, --check's one-chip
     * reference not); the wall time lost to failures (the events'
     * lost_wall_s) and to rejoining (the repairs'); repairs applied */
    long chip_steps, chip_steps_all;
    double run_wall_s;
    double lost_failure_s, lost_rejoin_s;
    int repairs;
    double cpu_s;              /* process CPU seconds during the steps */
    double math_cpu_s;         /* forward/backward CPU, all chips, all steps */
    double hook_cpu_s;         /* CPU inside BN hook allreduces */
    double grad_cpu_s;         /* CPU inside the gradient allreduce (and the
                                  fixed-point conversion in exact mode) */
    double optim_cpu_s;        /* CPU in the optimizer steps */
    double check_cpu_s;        /* CPU of the per-step float --check */
    double modeled_grad_s;     /* modeled gradient allreduce, per step */
    double modeled_bn_s;       /* modeled BN hook allreduces, per step */
    int bn_calls;              /* hook calls per step */
    int ncpus;                 /* online CPUs (for the busy share) */
    int replicas_equal;        /* 1: every chip's final params bitwise equal */
    int replica_mismatch_chip; /* first chip that differs from the lowest, or -1 */
    float *params;             /* [nparams] final params of the lowest chip */
    ftm_gemm_stats gemm;       /* sgemm counters summed over chips */
    /* --check */
    int checked;
    double *ref_loss;          /* [steps] */
    double ref_wall_s;
    double max_loss_diff, max_loss_rel_diff;
    double max_abs_diff, max_rel_diff; /* final params vs reference */
    double max_upd_rel_diff;   /* max over tensors of max |param - ref| /
                                  max |ref - initial| (drift vs distance moved) */
    /* float mode, per step at the mesh's parameters (FTM_TRAIN_FLOAT_TOL) */
    double max_grad_rel_diff;  /* worst tensor and step */
    long grad_diff_step;       /* where (-1: none) */
    char grad_diff_name[64];
    double max_step_loss_rel_diff;
    uint64_t max_ulp;
    size_t ndiff;              /* elements that differ at all */
    int bitwise_equal;
    int diff_tensor;           /* first differing element: tensor (-1: none) */
    char diff_name[64];        /* its name ("" if none) */
    size_t diff_index;         /* index inside that tensor */
    float diff_val, diff_ref;
    double tol;                /* bound applied (0 = bitwise, exact mode) */
    int check_pass;            /* 1 when within the bound */
    /* on FTM_EDIVERGED: the first step whose loss was not finite (-1:
     * none); step[0..diverged_step] are filled, the totals are not */
    long diverged_step;
    int diverged_range;        /* 1: there, exact mode's fixed-point sums could
                                  not hold a gradient (|g| >= 2^22): the loss
                                  may still be finite */
    /* on FTM_EHANG */
    ftm_stuck *stuck;          /* malloc'd */
    int nstuck;
    long hang_step;            /* the training step that hung */
} ftm_train_result;

/* Checks o->resume as ftm_train_run would, before anything runs: the file
 * is read, checked and matched against o's configuration, and *step is
 * the step it holds (the first step a resumed run would run; o->steps
 * when there is nothing left to do). When m is not NULL and the file
 * recorded a mesh of m's shape, m's dead chips and links become the
 * checkpoint's, and its events still to come are appended to pending
 * (initialised by the caller; may be NULL). FTM_EIO, FTM_EFORMAT,
 * FTM_ECORRUPT, FTM_ECONFIG or FTM_ERANGE (past o->steps) with detail
 * saying why. */
FTM_EXTERN int ftm_train_resume_step(const ftm_train_opts *o, long *step, ftm_mesh *m,
                                     ftm_fault_script *pending, char *detail, size_t dlen);

/* Trains on the healthy chips of m and fills res (free it with
 * ftm_train_result_free, also after an error). Returns 0 (even when the
 * check fails: see res->check_pass), FTM_EINVAL (bad options or unknown
 * algorithm), FTM_EALLDEAD, FTM_EPARTITION, FTM_EDIVERGED (a loss that is
 * not finite: res->diverged_step says when; training stops there),
 * FTM_ERANGE (fixed-point gradient overflow), FTM_EHANG (res->stuck says who), FTM_ENOMEM, ... */
FTM_EXTERN int ftm_train_run(const ftm_mesh *m, const ftm_train_opts *o,
                  const ftm_train_callbacks *cb, ftm_train_result *res);
FTM_EXTERN void ftm_train_result_free(ftm_train_result *res);

/* The batch split. Examples [0, batch) go to parts 0..parts-1 in order,
 * contiguous. Exact mode deals whole micro-batches (ceil(batch/micro) of
 * them, the last possibly short) with the balanced split of
 * ftm_sched_block; float mode deals examples the same way and *micro_used
 * becomes the largest divisor of micro that divides every part's first
 * index (the model needs aligned micro-batches). first/count: [parts]. */
FTM_EXTERN int ftm_train_split(long batch, int micro, int exact, int parts,
                    long *first, long *count, int *micro_used);

#endif
