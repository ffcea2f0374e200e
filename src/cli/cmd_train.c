/* ftmesh train: data-parallel training of the small ResNet or BERT on the
 * emulated mesh, with --check against one chip. Parse, validate, run,
 * report (train_report.c); one cleanup path. */
#include "cli.h"
#include "faults_cli.h"
#include "train_report.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/train.h"
#include "trace_json.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#define CMD "train"

typedef struct targs {
    cli_mesh_opts o;
    ftm_train_opts t;       /* the library's defaults, then the options */
    const char *model, *data, *corpus, *fail_during, *trace, *svg;
    const char *ckpt_arg;   /* --checkpoint as given (t.checkpoint: the file) */
    char *ckpt_file;
    int trace_clock, trace_clock_given;
    int kind, fail_step_given, tol_given, bn_algo_given, depth_given, heads_given;
    long resume_step;       /* --resume: the checkpoint's step (0 without) */
    int ckpt_kind;          /* --resume: what it holds of the mesh (CLI_CKPT_*) */
    cli_faults f;           /* --kill, --faults, --random-kills */
    ftm_fault_script script;
    int have_script;
    ftm_fault_script pending;  /* --resume: the checkpoint's events to come */
} targs;

/* First pass: only --model, whose defaults the other options refine. */
static int model_opt(void *ctx, int id, const char *name, const char *v)
{
    targs *a = ctx;
    (void)name;
    if (id != O_MODEL)
        return 0;
    const ftm_model_info *mi = ftm_model_find(v); /* the model registry */
    if (!mi)
        return cli_usage_error(CMD, "--model %s: expected resnet or bert", v);
    a->model = mi->name;
    a->kind = mi->kind;
    return 0;
}

static int algo_opt(targs *a, int bn, const char *v)
{
    if (!ftm_allreduce_find(v) && strcmp(v, "auto"))
        return cli_unknown_algo(CMD, bn ? "--bn-algo" : "--algo", v, 1);
    *(bn ? &a->t.bn_algo : &a->t.algo) = v;
    a->bn_algo_given |= bn;
    return 0;
}

/* Options that shape the model and its optimizer. */
static int model_shape_opt(targs *a, int id, const char *v)
{
    long n;
    double x;
    switch (id) {
    case O_DEPTH:
        if (cli_parse_int(v, 8, 20, &n) || (n - 2) % 6)
            return cli_usage_error(CMD, "--depth %s: expected 8, 14 or 20", v);
        a->t.model.depth = (int)n;
        a->depth_given = 1;
        return 0;
    case O_HEADS:
        if (cli_parse_int(v, 2, 4, &n) || n == 3)
            return cli_usage_error(CMD, "--heads %s: expected 2 or 4", v);
        a->t.model.heads = (int)n;
        a->heads_given = 1;
        return 0;
    case O_LR:
        if (cli_parse_double(v, 1e-12, 100, &x))
            return cli_usage_error(CMD, "--lr %s: expected a number from 1e-12 to 100", v);
        a->t.optim.lr = (float)x;
        return 0;
    default:
        return -1;
    }
}

static int train_opt(void *ctx, int id, const char *name, const char *v)
{
    targs *a = ctx;
    long n;
    int rc = model_shape_opt(a, id, v);
    if (rc >= 0)
        return rc;
    switch (id) {
    case O_MODEL: return 0; /* first pass */
    case O_STEPS:
        if (cli_parse_int(v, 1, 10000000, &a->t.steps))
            return cli_usage_error(CMD, "--steps %s: expected a whole number 1..10000000", v);
        return 0;
    case O_BATCH:
        if (cli_parse_int(v, 1, 1L << 20, &a->t.batch))
            return cli_usage_error(CMD, "--batch %s: expected a whole number 1..1048576", v);
        return 0;
    case O_MICRO:
        if (cli_parse_int(v, 1, 1L << 20, &n))
            return cli_usage_error(CMD, "--micro %s: expected a whole number 1..1048576", v);
        a->t.micro = (int)n;
        return 0;
    case O_REDUCE:
        if (strcmp(v, "float") && strcmp(v, "exact"))
            return cli_usage_error(CMD, "--reduce %s: expected float or exact", v);
        a->t.exact = !strcmp(v, "exact");
        return 0;
    case O_ALGO: case O_BN_ALGO: return algo_opt(a, id == O_BN_ALGO, v);
    case O_CHECK: a->t.check = 1; return 0;
    case O_TOL:
        if (cli_parse_double(v, 1e-300, 1e300, &a->t.tol))
            return cli_usage_error(CMD, "--tol %s: expected a number from 1e-300 to 1e300", v);
        a->tol_given = 1;
        return 0;
    case O_DATA: a->data = v; return 0;
    case O_CORPUS: a->corpus = v; return 0;
    case O_FAIL_DURING: a->fail_during = v; return 0;
    case O_TRACE: a->trace = v; return 0;
    case O_TRACE_STEPS:
        if (cli_parse_int(v, 1, 10000000, &a->t.trace_steps)) /* --steps' range */
            return cli_usage_error(CMD, "--trace-steps %s: expected a whole number 1..10000000", v);
        return 0;
    case O_TRACE_CLOCK:
        a->trace_clock_given = 1;
        return cli_trace_clock(CMD, v, &a->trace_clock);
    case O_SVG: a->svg = v; return 0;
    case O_FAIL_STEP:
        if (cli_parse_int(v, 0, 10000000, &a->t.fail_step)) /* --steps' range */
            return cli_usage_error(CMD, "--fail-step %s: expected a step number 0..10000000", v);
        a->fail_step_given = 1;
        return 0;
    case CLI_O_KILL: case CLI_O_FAULTS: case CLI_O_RANDOM_KILLS: case CLI_O_REPAIR:
    case CLI_O_REPAIR_AFTER:
        return cli_faults_set(CMD, &a->f, id, v);
    case O_CHECKPOINT: a->t.checkpoint = a->ckpt_arg = v; return 0;
    case O_CHECKPOINT_EVERY:
        if (cli_parse_int(v, 1, 10000000, &a->t.checkpoint_every))
            return cli_usage_error(CMD, "--checkpoint-every %s: expected a whole number of steps 1..10000000", v);
        return 0;
    case O_RESUME: a->t.resume = v; return 0;
    default: return cli_mesh_set(&a->o, id, name, v);
    }
}

/* Options that belong to the other model, and options without effect. */
static int check_model_options(const targs *a)
{
    int bert = a->kind == FTM_MODEL_BERT;
    if (a->depth_given && bert)
        return cli_usage_error(CMD, "--depth: only for --model resnet");
    if (a->heads_given && !bert)
        return cli_usage_error(CMD, "--heads: only for --model bert");
    if (a->data && bert)
        return cli_usage_error(CMD, "--data: CIFAR-10 images are for --model resnet");
    if (a->corpus && !bert)
        return cli_usage_error(CMD, "--corpus: a text corpus is for --model bert");
    if (a->tol_given && !a->t.check)
        cli_warn(CMD, "--tol has no effect without --check");
    else if (a->tol_given && a->t.exact)
        cli_warn(CMD, "--tol has no effect with --reduce exact (parameters must be bitwise equal)");
    if (a->bn_algo_given && bert)
        cli_warn(CMD, "--bn-algo has no effect on --model bert (it has no batch norm)");
    if (a->trace_clock_given && !a->trace)
        cli_warn(CMD, "--trace-clock has no effect without --trace FILE");
    if (a->t.trace_steps && !a->trace)
        cli_warn(CMD, "--trace-steps has no effect without --trace FILE");
    if (a->t.checkpoint && a->t.checkpoint_every >= a->t.steps)
        cli_warn(CMD, "--checkpoint-every %ld has no effect with --steps %ld: the checkpoint "
                 "is written at the end anyway", a->t.checkpoint_every, a->t.steps);
    cli_mesh_warn_seeds(&a->o, 1, a->f.random_given);
    return 0;
}

/* Loads --data or --corpus: every file error names the option, the path
 * and the reason. */
static int load_data(const targs *a, ftm_dataset **ds)
{
    char why[512] = "";
    int err = 0;
    if (a->corpus && !strcmp(a->corpus, "-") && cli_ranks_count() > 1)
        return cli_usage_error(CMD, "--corpus -: under mpirun standard input reaches rank 0 "
                               "only; give a file every rank can read");
    if (a->data)
        err = ftm_data_load_cifar(ds, a->data, why, sizeof why);
    else if (a->corpus)
        err = ftm_data_load_corpus(ds, a->corpus, 0, why, sizeof why);
    if (err == FTM_ENOMEM)
        return cli_error(CMD, "%s %s: %s", a->data ? "--data" : "--corpus",
                         a->data ? a->data : a->corpus, ftm_strerror(err));
    if (err)
        return cli_usage_error(CMD, "%s %s: %s%s", a->data ? "--data" : "--corpus",
                               a->data ? a->data : a->corpus, why[0] ? why : ftm_strerror(err),
                               a->corpus && !strcmp(why, "empty") ? ": give a file with text in "
                               "it, or no --corpus for synthetic sequences" : "");
    return 0;
}

/* Everything a run holds; released by train_free whatever happened. */
typedef struct train_run {
    ftm_mesh m;
    int have_mesh, have_result;
    ftm_dataset *ds;
    ftm_train_result r;
    cli_out trace;          /* --trace, recorded into a->t.trace */
    cli_out svg;            /* --svg, opened before training */
} train_run;

/* The fault script: --kill, --faults, --random-kills and the short form
 * --fail-during R,C --fail-step S (= R,C@S:allreduce), refused before the
 * run if it would cut the healthy chips apart. */
static int build_script(targs *a, train_run *x)
{
    ftm_fault_event sf = { .kind = FTM_FAULT_CHIP, .when = a->t.fail_step,
                           .phase = FTM_PHASE_ALLREDUCE, .pkts = FTM_FAULT_MID };
    /* past the run only with a --checkpoint, which keeps it (check_fail_during) */
    int short_form = a->t.fail_during;
    if (!cli_faults_any(&a->f) && !short_form)
        return cli_faults_none(CMD, &a->f);
    char name[64];
    sf.r = ftm_mesh_row(&x->m, a->t.fail_chip);
    sf.c = ftm_mesh_col(&x->m, a->t.fail_chip);
    snprintf(name, sizeof name, "--fail-during %d,%d", sf.r, sf.c);
    a->f.checkpoint = a->t.checkpoint != NULL;
    int rc = cli_faults_build(CMD, &a->f, &x->m, FTM_FAULT_TRAIN, a->t.steps,
                              cli_fault_seed(&a->o),
                              short_form ? &sf : NULL, name, &a->script);
    if (rc)
        return rc;
    a->have_script = 1;
    a->t.faults = &a->script;
    a->t.fail_during = 0; /* it is in the script now */
    return 0;
}

/* --resume: the file read and matched before anything is printed; its
 * step is where the run starts (a->resume_step). */
/* Faults from the start (--fail, --fail-host, --fail-link, --random-faults)
 * with --resume are history: the checkpoint's mesh must have them (the
 * first run's command line may be given again), else they would be
 * dropped in silence. 0 or CLI_EXIT_USAGE naming the first one missing. */
static int check_history(const targs *a, const ftm_mesh *given, const ftm_mesh *m)
{
    for (int c = 0; c < m->nchips; c++) {
        int r = ftm_mesh_row(m, c), col = ftm_mesh_col(m, c);
        if (!ftm_mesh_alive(given, c) && ftm_mesh_alive(m, c))
            return cli_usage_error(CMD, "--resume %s: chip (%d,%d) is dead in the fault options but "
                                   "alive in the checkpoint; on --resume a chip dies with --kill "
                                   "%d,%d@STEP", a->t.resume, r, col, r, col);
        for (int d = 0; d < FTM_NDIRS; d++)
            if (ftm_mesh_alive(given, c) && given->link_dead[4 * c + d] && !m->link_dead[4 * c + d])
                return cli_usage_error(CMD, "--resume %s: the link from (%d,%d) %s is dead in the "
                                       "fault options but live in the checkpoint; on --resume a "
                                       "link dies with --kill link:...@STEP", a->t.resume, r, col,
                                       ftm_mesh_dir_name(d));
    }
    return 0;
}

/* What to do about a checkpoint made with another --seed: the same seed
 * draws the same --random-kills unless --fault-seed says otherwise. */
static const char *resume_hint(const char *why)
{
    return strstr(why, "another seed") ? "; resume with the checkpoint's --seed (--fault-seed N "
                                         "draws other faults for the same training)"
                                       : "";
}

static int check_resume(targs *a, ftm_mesh *m)
{
    char why[256];
    a->resume_step = 0;
    if (!a->t.resume)
        return 0;
    struct stat sb;
    if (stat(a->t.resume, &sb) == 0 && !S_ISREG(sb.st_mode)) /* read more than once */
        return cli_usage_error(CMD, "--resume %s: not a regular file; give the checkpoint's "
                               "path", a->t.resume);
    ftm_mesh given;
    if (ftm_mesh_copy(&given, m))
        return cli_error(CMD, "--resume %s: %s", a->t.resume, ftm_strerror(FTM_ENOMEM));
    /* the checkpoint's mesh and pending events (same shape): the run
     * goes on from them, and fault options given again add to them */
    int err = ftm_train_resume_step(&a->t, &a->resume_step, m, &a->pending, why, sizeof why);
    int rc = err ? 0 : check_history(a, &given, m);
    ftm_mesh_free(&given);
    if (rc)
        return rc;
    a->f.resume = a->t.resume;
    a->f.start = a->resume_step;
    a->f.pending = &a->pending;
    a->ckpt_kind = err ? CLI_CKPT_NONE : cli_ckpt_mesh_kind(a->t.resume, m);
    a->f.history_kept = a->ckpt_kind == CLI_CKPT_SAME;
    if (err == FTM_ENOMEM)
        return cli_error(CMD, "--resume %s: %s", a->t.resume, ftm_strerror(err));
    if (err)
        return cli_usage_error(CMD, "--resume %s: %s%s", a->t.resume,
                               why[0] ? why : ftm_strerror(err), resume_hint(why));
    return 0;
}

/* --fail-during R,C [--fail-step S]: a chip of the mesh, and a step the
 * run will reach (from --resume's step to --steps - 1). */
static int check_fail_during(targs *a, const ftm_mesh *m)
{
    if (!a->fail_during && a->fail_step_given)
        return cli_usage_error(CMD, "--fail-step needs --fail-during R,C");
    if (!a->fail_step_given)
        a->t.fail_step = a->resume_step + 1; /* the default: after one whole step */
    if (!a->fail_during)
        return 0;
    int rc = cli_fail_during_chip(CMD, m, a->fail_during, &a->t.fail_chip);
    if (rc)
        return rc;
    a->t.fail_during = 1;
    long first = a->resume_step, last = a->t.steps - 1;
    if (first > last || (a->t.fail_step >= first && a->t.fail_step <= last))
        return 0; /* nothing left to run is said by the caller */
    if (a->t.checkpoint && a->t.fail_step > last)
        return 0; /* kept for --resume, as a --kill past the run (build_script) */
    char from[64] = "";
    if (first)
        snprintf(from, sizeof from, "--resume starts at step %ld, ", first);
    return cli_usage_error(CMD, "--fail-step %ld: the run has step%s %ld..%ld (%s--steps %ld); "
                           "give %s--fail-step in that range", a->t.fail_step,
                           first == last ? "" : "s", first, last, from, a->t.steps,
                           a->fail_step_given ? "a " : "more --steps or a ");
}

/* Every file: --checkpoint's place, --resume, --svg and --trace, checked
 * or opened before anything runs or prints. */
static int check_files(targs *a, train_run *x)
{
    int rc = 0;
    if (a->t.checkpoint_every && !a->t.checkpoint)
        return cli_usage_error(CMD, "--checkpoint-every needs --checkpoint FILE");
    if ((rc = cli_in_claim(CMD, "--resume", a->t.resume)) ||
        (rc = cli_in_claim(CMD, "--faults", a->f.file)) ||
        (rc = cli_in_claim(CMD, "--corpus", a->corpus)))
        return rc;
    for (int b = 1; a->data && b <= 5; b++) { /* the CIFAR batches it reads (nn/data.c) */
        char path[4096];
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", a->data, b);
        if ((rc = cli_in_claim(CMD, "--data", path)))
            return rc;
    }
    if (a->t.checkpoint && cli_ranks_me() == 0) {
        if ((rc = cli_out_file(CMD, "--checkpoint", a->ckpt_arg, &a->ckpt_file)))
            return rc;
        a->t.checkpoint = a->ckpt_file;
    }
    if (a->trace && (rc = cli_ranks_refuse_trace(CMD, "training")))
        return rc;
    if (a->svg && cli_ranks_me() != 0)
        a->svg = NULL; /* rank 0 draws it */
    if (a->svg && (rc = cli_out_open(CMD, &x->svg, "--svg", a->svg)))
        return rc;
    if (a->trace && (rc = cli_trace_open(CMD, &x->trace, a->trace, &a->t.trace, x->m.nchips)))
        return rc;
    return 0;
}

static int validate(targs *a, train_run *x)
{
    int rc = check_model_options(a);
    if (rc || (rc = cli_build_mesh(&a->o, &x->m)))
        return rc;
    x->have_mesh = 1;
    if (a->t.check && a->t.batch > 4096)
        return cli_usage_error(CMD, "--check: the one-chip reference holds the whole batch; "
                                    "--batch must be <= 4096");
    if ((rc = load_data(a, &x->ds)))
        return rc;
    a->t.model.data = x->ds;
    if (a->t.checkpoint || a->t.resume) /* only a checkpoint records it */
        a->t.data_id = ftm_data_fingerprint(x->ds);
    a->t.model.seed = a->o.seed;
    if ((rc = cli_train_mem_check(CMD, &a->t, &x->m)))
        return rc;
    a->t.hang_timeout_s = a->o.hang_timeout_s;
    if ((rc = check_resume(a, &x->m)) || (rc = check_fail_during(a, &x->m)))
        return rc;
    long left = a->t.steps - a->resume_step;
    if (a->o.json && a->trace && a->t.trace_steps && a->t.trace_steps < left) /* else header()'s */
        cli_warn(CMD, "--trace records the first %ld of the %ld steps run (--trace-steps)",
                 a->t.trace_steps, left);
    if (a->resume_step >= a->t.steps)
        return 0; /* nothing to do: no script, no files */
    if ((rc = build_script(a, x)))
        return rc;
    return check_files(a, x);
}

static void header(const targs *a, const ftm_mesh *m)
{
    int P = ftm_mesh_healthy_count(m);
    const ftm_train_opts *t = &a->t;
    printf("# ftmesh train: %s, %dx%d %s, %d healthy chip%s, batch %ld, %ld step%s, "
           "reduce %s%s\n", a->model, m->rows, m->cols, cli_mesh_kind(m), P, cli_s(P),
           t->batch, t->steps, cli_s(t->steps), t->exact ? "exact" : "float",
           t->check ? ", --check" : "");
    train_idle_note(t, P, 0);
    train_data_note(a->data, a->corpus, t->model.data, t->batch);
    if (t->resume)
        cli_faults_record_resumed(&a->o, m, t->resume, a->resume_step, a->ckpt_kind);
    else
        cli_faults_record_text(&a->o, m);
    cli_ranks_text(m);
    long left = t->steps - a->resume_step;
    if (a->trace && t->trace_steps && t->trace_steps < left)
        printf("# trace: the first %ld of the %ld steps run (--trace-steps)\n", t->trace_steps, left);
    printf("#%5s %12s %10s %14s %12s\n", "step", "loss", "wall(s)", "modeled_ar(us)",
           "examples/s");
    fflush(stdout);
}

/* Set by SIGINT, SIGTERM or SIGHUP during training: the signal's number. */
static atomic_int stop_flag;

/* The result: summary (also after a divergence), messages, exit code. */
/* Over ranks, a signal one rank alone got (its --check reference runs
 * apart, as every rank's does) or during the last step is every rank's:
 * the interrupted reference compares nothing on any of them. Returns the
 * late signal to warn of. */
static int ranks_signals(ftm_train_result *r)
{
    int stopped = cli_ranks_signal(r->interrupted), late = cli_ranks_signal(atomic_load(&stop_flag));
    if (stopped && !r->interrupted) {
        r->interrupted = stopped;
        r->checked = r->check_pass = 0;
    }
    return late;
}

static int report(const targs *a, train_run *x, int err, train_out *oc)
{
    ftm_train_result *r = &x->r;
    if (err == FTM_EHANG) {
        cli_print_stuck(CMD, &x->m, r->stuck, r->nstuck, a->o.hang_timeout_s);
        int in_xfer = r->nstuck > 0 && r->stuck[0].wait != FTM_WAIT_DONE; /* else idle */
        fprintf(stderr, "  in training step %ld%s\n", r->hang_step,
                in_xfer ? " (the steps above are those of the allreduce schedule the chips run)" : "");
        return CLI_EXIT_HANG;
    }
    int late = ranks_signals(r);
    if (err && r->resume_failed)
        return cli_usage_error(CMD, "--resume %s: %s%s", a->t.resume,
                               r->detail[0] ? r->detail : ftm_strerror(err),
                               resume_hint(r->detail));
    if (err && a->t.checkpoint && r->detail[0])
        return cli_error(CMD, "--checkpoint %s: %s", a->ckpt_arg, r->detail);
    if (err && err != FTM_EDIVERGED)
        return err == FTM_EINVAL ? cli_usage_error(CMD, "%s", ftm_strerror(err))
                                 : cli_error(CMD, "%s%s%s", ftm_strerror(err),
                                             r->detail[0] ? ": " : "", r->detail);
    train_summary_info in = { a->model, a->kind == FTM_MODEL_RESNET, a->t.exact,
                              err ? r->diverged_step : -1, &a->o, a->t.algo, a->t.bn_algo,
                              a->ckpt_arg, a->t.micro, a->data ? a->data : a->corpus,
                              a->t.check };
    train_summary(r, &x->m, &in, oc);
    if (err)
        return cli_error(CMD, "training diverged: %s at step %ld; try a lower --lr (this run "
                         "used %g)%s", train_diverged_why(r), r->diverged_step,
                         (double)a->t.optim.lr, a->t.check ? "; --check not run" : "");
    int rc = 0;
    if (!r->replicas_equal)
        rc = cli_error(CMD, "replicas differ: chip %d's parameters are not those of the "
                       "lowest chip", r->replica_mismatch_chip);
    if (r->checked && !r->check_pass)
        rc = cli_error(CMD, "--check failed (see the summary)");
    if (!rc && !r->interrupted && r->checkpoints && !a->o.json)
        printf("# checkpoint written to %s: --resume from it starts at step %ld\n", a->ckpt_arg,
               r->steps_done);
    if (!rc && r->interrupted) {
        if (!a->o.json)
            printf("# interrupted: stopped after step %ld%s%s%s%s\n", r->steps_done - 1,
                   a->t.checkpoint ? "; checkpoint written to " : "",
                   a->t.checkpoint ? a->ckpt_arg : "",
                   !a->t.check || r->checked            ? ""
                   : r->steps_done >= a->t.steps ? "; --check stopped: nothing compared"
                                                 : "; --check not run (it compares the last step)",
                   a->svg || a->trace ? "; no --svg or --trace file is written" : "");
        /* the signal that stopped the run: over ranks, maybe another's */
        int sig = r->interrupted > 1 ? r->interrupted : atomic_load(&stop_flag);
        rc = sig ? cli_signal_exit(sig) : CLI_EXIT_INTERRUPTED;
    } else if (!rc && late) {
        cli_warn(CMD, "%s came during the last step, which finished: the run is complete",
                 late == SIGINT ? "SIGINT" : late == SIGTERM ? "SIGTERM" : "SIGHUP");
    }
    /* a failed or interrupted run leaves the old picture (or none) */
    if (!rc && x->svg.f)
        rc = cli_out_commit(CMD, &x->svg, cli_train_svg(x->svg.f, &x->m, r, a->t.exact));
    return rc;
}


static void on_event(void *ctx, const ftm_train_event *e)
{
    const train_out *oc = ctx;
    if (!oc->json) {
        cli_faults_print(stdout, e, FTM_FAULT_TRAIN);
        fflush(stdout);
    }
}

/* Runs with SIGINT and SIGTERM (what batch schedulers send) caught: the
 * trainer finishes the current step, writes the checkpoint if asked, and
 * stops (exit 128 + the signal: 129, 130, 143). */
static int run_train(targs *a, train_run *x, train_out *oc)
{
    ftm_train_callbacks cb = { train_on_step, train_on_ref, oc, on_event };
    atomic_store(&stop_flag, 0);
    a->t.stop = &stop_flag;
    cli_signals_graceful(&stop_flag);
    int err = ftm_train_run(&x->m, &a->t, &cb, &x->r);
    cli_signals_graceful(NULL);
    return err;
}

int cli_train(int argc, char **argv)
{
    targs a;
    memset(&a, 0, sizeof a);
    ftm_fault_script_init(&a.pending, FTM_FAULT_TRAIN);
    a.model = "resnet";
    a.kind = FTM_MODEL_RESNET;
    train_run x;
    memset(&x, 0, sizeof x);
    x.svg.slot = x.trace.slot = -1;
    if (cli_mesh_opts_init(&a.o, CMD, argc))
        return CLI_EXIT_FAIL;
    if (cli_faults_init(&a.f, argc)) {
        cli_mesh_opts_free(&a.o);
        return CLI_EXIT_FAIL;
    }
    int rc = cli_parse_quiet(CMD, argc, argv, train_tables, model_opt, &a); /* --model first */
    if (!rc) {
        ftm_train_opts_default(&a.t, a.kind);
        rc = cli_parse(CMD, argc, argv, train_tables, train_opt, &a);
    }
    if (rc == CLI_HELP)
        train_usage();
    if (!rc)
        rc = validate(&a, &x);
    if ((rc = cli_ranks_agree(rc))) /* an input some rank could not read */
        goto out;
    if ((rc = cli_ranks_same(CMD, &x.m, a.t.faults, a.t.resume))) /* or read otherwise */
        goto out;
    if (a.t.resume && a.resume_step >= a.t.steps) {
        train_nothing_to_do(a.o.json, a.t.resume, a.resume_step, a.t.steps,
                            a.svg || a.trace || a.t.checkpoint);
        goto out;
    }
    if (a.o.json) /* text tells it under its header */
        train_idle_note(&a.t, ftm_mesh_healthy_count(&x.m), 1);
    cli_warn_flush(); /* the checks passed: before the run */
    train_out oc;
    train_out_init(&oc, a.o.json, a.t.steps, a.t.batch);
    if (cli_ranks_count() > 1)
        oc.tty = 0; /* mpirun hands rank 0 a terminal of its own: no bar */
    if (!a.o.json)
        header(&a, &x.m);
    int err = run_train(&a, &x, &oc);
    x.have_result = 1;
    train_clear_bar(&oc);
    rc = report(&a, &x, err, &oc);
    if (x.trace.f && !rc) { /* else the old trace (or none) stays, as promised */
        ftm_cost_params cp;
        ftm_cost_defaults(&cp);
        cli_faults_meta fm = { &a.o, &x.m, x.r.events, x.r.nevents };
        int out = cli_trace_close(CMD, &x.trace, a.t.trace, &x.m, a.trace_clock, &cp,
                                  cli_faults_record_meta, &fm);
        rc = rc ? rc : out;
    }
out:
    cli_out_discard(&x.trace); /* training failed: no trace, no picture */
    ftm_trace_destroy(a.t.trace);
    cli_out_discard(&x.svg);
    if (x.have_result)
        ftm_train_result_free(&x.r);
    ftm_data_free(x.ds);
    if (x.have_mesh)
        ftm_mesh_free(&x.m);
    cli_mesh_opts_free(&a.o);
    free(a.ckpt_file);
    cli_faults_free(&a.f);
    if (a.have_script)
        ftm_fault_script_free(&a.script);
    ftm_fault_script_free(&a.pending);
    return rc == CLI_HELP ? 0 : rc;
}
