/* ftmesh train's output: per-step lines, the progress bar, the summary,
 * and the /proc/stat sampling behind its load-free figure. */
#include "cli.h"
#include "train_report.h"
#include "faults_cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void train_out_init(train_out *c, int json, long steps, long batch)
{
    memset(c, 0, sizeof *c);
    c->json = json;
    c->tty = !json && isatty(STDOUT_FILENO);
    c->steps = steps;
    c->batch = batch;
}

/* ---- other processes' CPU (Linux /proc/stat; absent elsewhere) ---- */

/* CPU seconds all processes spent busy so far (user, nice, system, irq,
 * softirq, steal from the first line of /proc/stat); -1 if unreadable. */
static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7]) : 0;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (n < 8 || hz <= 0)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
}

static double own_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* At the end of step s (from the reporting chip's thread): from step 1 on,
 * the machine's busy CPU minus ours is what other processes took. */
static void track_others(train_out *c, long s)
{
    double busy = machine_busy_s(), own = own_cpu_s();
    if (busy < 0) {
        c->have_stat = 0;
        return;
    }
    if (s == 0 || c->steps == 1) {
        c->have_stat = 1;
    } else if (c->have_stat) {
        double d = (busy - c->busy0) - (own - c->own0);
        c->others_s += d > 0 ? d : 0;
    }
    c->busy0 = busy;
    c->own0 = own;
}

/* ---- per step ---- */

static void bar(train_out *c, const char *what, long done)
{
    enum { WIDTH = 30 };
    int k = c->steps ? (int)(WIDTH * done / c->steps) : WIDTH;
    printf("\r\033[K%s [", what);
    for (int i = 0; i < WIDTH; i++)
        putchar(i < k ? '#' : ' ');
    printf("] %ld/%ld", done, c->steps);
    fflush(stdout);
    c->bar = 1;
}

void train_clear_bar(train_out *c)
{
    if (c->bar)
        printf("\r\033[K");
    c->bar = 0;
}

void train_on_step(void *ctx, const ftm_train_step *s)
{
    train_out *c = ctx;
    double eps = s->wall_s > 0 ? (double)c->batch / s->wall_s : 0;
    track_others(c, s->step);
    if (c->json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_obj(&j, NULL);
        cli_json_int(&j, "step", s->step);
        cli_json_num(&j, "loss", "%.17g", s->loss);
        cli_json_int(&j, "chips", s->chips);
        cli_json_num(&j, "wall_s", "%.6g", s->wall_s);
        cli_json_num(&j, "modeled_allreduce_s", "%.6g", s->modeled_allreduce_s);
        cli_json_num(&j, "examples_per_s", "%.6g", eps);
        cli_json_num(&j, "math_cpu_s", "%.6g", s->math_cpu_s);
        cli_json_end(&j);
        fflush(stdout);
        return;
    }
    train_clear_bar(c);
    printf("%6ld %12.6f %10.4f %14.3f %12.1f\n", s->step, s->loss, s->wall_s,
           s->modeled_allreduce_s * 1e6, eps);
    if (c->tty)
        bar(c, "train", s->step + 1);
    else
        fflush(stdout);
}

void train_on_ref(void *ctx, long step, double loss)
{
    train_out *c = ctx;
    (void)loss;
    if (!c->json && c->tty)
        bar(c, "one-chip reference", step + 1);
}

/* ---- summary ---- */

/* The figures of the summary, computed once for both layouts. */
typedef struct figs {
    long n, s0;              /* steps reported; first steady step */
    double wall, steady, others, busy, busy_free, share, gf_call, gf_wall, modeled;
    int cores, loadfree_ok;
    int node_ranks;          /* this job's ranks on this machine (/proc/stat counts them all) */
} figs;

/* Busy share: forward/backward CPU over the capacity of the cores the
 * chips could use, for steps >= 1 (step 0 builds schedules and touches
 * fresh memory) when there is more than one step. */
static double busy_share(const ftm_train_result *r, long n, double others_s)
{
    double math = 0, wall = 0;
    for (long s = n > 1 ? 1 : 0; s < n; s++) {
        math += r->step[s].math_cpu_s;
        wall += r->step[s].wall_s;
    }
    int cores = r->chips < r->ncpus ? r->chips : r->ncpus;
    double cap = wall * cores - others_s;
    return cap > 0 ? math / cap : 0;
}

static figs compute(const ftm_train_result *r, const train_summary_info *in, const train_out *c)
{
    figs f = { 0 };
    /* steps run: from --resume's step, up to a stop (SIGINT) */
    /* a step that left the fixed-point range has no loss and no line:
     * it is not one of the steps reported */
    f.n = in->diverged_step >= 0 ? in->diverged_step + !r->diverged_range
        : r->interrupted ? r->steps_done : r->steps;
    f.s0 = r->start_step + (f.n - r->start_step > 1 ? 1 : 0);
    f.wall = r->wall_s;
    if (in->diverged_step >= 0) /* the trainer stopped before summing */
        for (long s = 0; s < f.n; s++)
            f.wall += r->step[s].wall_s;
    for (long s = f.s0; s < f.n; s++)
        f.steady += r->step[s].wall_s;
    f.steady = f.n > f.s0 ? f.steady / (double)(f.n - f.s0) : 0;
    f.others = c->have_stat ? c->others_s : 0;
    f.busy = busy_share(r, f.n, 0);
    f.busy_free = busy_share(r, f.n, f.others);
    /* the sgemm counters count every attempt, redone steps too: over
     * the whole run's wall where a failure or repair made it longer */
    double gw = r->nevents && r->run_wall_s > f.wall ? r->run_wall_s : f.wall;
    f.share = r->gemm.seconds / (r->chips * gw);
    f.cores = r->chips < r->ncpus ? r->chips : r->ncpus;
    f.node_ranks = cli_ranks_on_node();
    f.loadfree_ok = f.node_ranks == 1 && r->chips >= r->ncpus && f.busy_free > 0 &&
                    f.busy_free <= 1;
    f.gf_call = r->gemm.seconds > 0 ? r->gemm.flops / r->gemm.seconds * 1e-9 : 0;
    f.gf_wall = r->gemm.flops / gw * 1e-9;
    f.modeled = r->modeled_grad_s + r->modeled_bn_s;
    return f;
}

static void json_check(cli_json *j, const ftm_train_result *r, long n)
{
    cli_json_bool(j, "checked", 1);
    cli_json_bool(j, "check_pass", r->check_pass);
    cli_json_num(j, "tol", "%g", r->tol);
    cli_json_bool(j, "bitwise_equal", r->bitwise_equal);
    cli_json_num(j, "max_abs_diff", "%.9g", r->max_abs_diff);
    cli_json_num(j, "max_rel_diff", "%.9g", r->max_rel_diff);
    cli_json_u64(j, "max_ulp", r->max_ulp);
    cli_json_num(j, "max_update_rel_diff", "%.9g", r->max_upd_rel_diff);
    cli_json_num(j, "max_grad_rel_diff", "%.9g", r->max_grad_rel_diff);
    cli_json_num(j, "max_step_loss_rel_diff", "%.9g", r->max_step_loss_rel_diff);
    cli_json_u64(j, "ndiff", r->ndiff);
    cli_json_num(j, "max_loss_diff", "%.9g", r->max_loss_diff);
    cli_json_num(j, "max_loss_rel_diff", "%.9g", r->max_loss_rel_diff);
    cli_json_num(j, "ref_wall_s", "%.6g", r->ref_wall_s);
    if (r->diff_tensor >= 0) {
        cli_json_begin_obj(j, "first_diff");
        cli_json_str(j, "tensor", r->diff_name);
        cli_json_u64(j, "index", r->diff_index);
        cli_json_num(j, "value", "%.9g", r->diff_val);
        cli_json_num(j, "ref", "%.9g", r->diff_ref);
        cli_json_end(j);
    } else {
        cli_json_null(j, "first_diff");
    }
    cli_json_begin_arr(j, "ref_loss");
    for (long s = 0; s < n; s++)
        cli_json_num(j, NULL, "%.17g", r->ref_loss[s]);
    cli_json_end(j);
}

/* The CPU figures; on divergence the trainer stopped before taking them. */
static void json_cpu(cli_json *j, const ftm_train_result *r, const figs *f)
{
    cli_json_num(j, "math_cpu_s", "%.6g", r->math_cpu_s);
    cli_json_num(j, "cpu_s", "%.6g", r->cpu_s);
    cli_json_int(j, "cores", f->cores);
    cli_json_num(j, "busy_math_share", "%.4f", f->busy);
    cli_json_num(j, "outside_math_share", "%.4f", 1 - f->busy);
    cli_json_num(j, "others_cpu_s", "%.6g", f->others);
    if (f->loadfree_ok)
        cli_json_num(j, "outside_math_share_loadfree", "%.4f", 1 - f->busy_free);
    else
        cli_json_null(j, "outside_math_share_loadfree");
    cli_json_num(j, "cpu_math_share", "%.4f", r->cpu_s > 0 ? r->math_cpu_s / r->cpu_s : 0);
    cli_json_num(j, "hook_cpu_s", "%.6g", r->hook_cpu_s);
    cli_json_num(j, "grad_cpu_s", "%.6g", r->grad_cpu_s);
    cli_json_num(j, "optim_cpu_s", "%.6g", r->optim_cpu_s);
    cli_json_num(j, "sgemm_share", "%.4f", f->share);
    cli_json_num(j, "sgemm_gflops", "%.4g", f->gf_call);
}

/* Examples per second over the whole run (failures and rejoining in). */
static double run_eps(const ftm_train_result *r)
{
    long n = r->steps_done - r->start_step;
    return r->run_wall_s > 0 && n > 0 ? (double)r->batch * (double)n / r->run_wall_s : 0;
}

static void json_availability(cli_json *j, const ftm_train_result *r)
{
    cli_json_begin_obj(j, "availability");
    cli_json_int(j, "chip_steps_alive", r->chip_steps);
    cli_json_int(j, "chip_steps_all", r->chip_steps_all);
    cli_json_num(j, "run_wall_s", "%.6g", r->run_wall_s);
    cli_json_num(j, "run_examples_per_s", "%.6g", run_eps(r));
    cli_json_num(j, "failures_lost_wall_s", "%.6g", r->lost_failure_s);
    cli_json_num(j, "rejoining_lost_wall_s", "%.6g", r->lost_rejoin_s);
    cli_json_int(j, "repairs", r->repairs);
    cli_json_end(j);
}

static void text_availability(const ftm_train_result *r)
{
    if (!r->nevents || !r->chip_steps_all)
        return;
    printf("# availability: %ld of %ld chip-steps alive (%.1f%%); %.1f examples/s over the run "
           "(%.3f s); lost %.3g s to failures, %.3g s to rejoining (%d repair%s)\n",
           r->chip_steps, r->chip_steps_all, 100.0 * (double)r->chip_steps / (double)r->chip_steps_all,
           run_eps(r), r->run_wall_s, r->lost_failure_s, r->lost_rejoin_s, r->repairs,
           cli_s(r->repairs));
}

static void summary_json(const ftm_train_result *r, const ftm_mesh *m,
                         const train_summary_info *in, const figs *f)
{
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", m->rows, m->cols);
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_obj(&j, NULL);
    cli_json_bool(&j, "summary", 1);
    cli_json_str(&j, "model", in->model);
    cli_json_str(&j, "mesh", mesh);
    cli_json_bool(&j, "torus", cli_wraps(m));
    cli_json_int(&j, "chips", r->chips);
    cli_json_u64(&j, "params", r->nparams);
    cli_json_str(&j, "algo", r->algo);
    cli_json_str(&j, "asked", in->asked ? in->asked : r->algo);
    cli_json_str(&j, "data", in->data);
    cli_json_str(&j, "schedule", r->schedule ? r->schedule : r->algo);
    if (r->fallback)
        cli_json_str(&j, "fallback", r->fallback);
    cli_json_str(&j, "bn_algo", r->bn_algo);
    if (r->bn_algo) /* as "asked": "auto" where bn_algo is its pick */
        cli_json_str(&j, "bn_asked", in->bn_asked ? in->bn_asked : r->bn_algo);
    if (r->bn_fallback) { /* absent where every width ran bn_algo's own, as fallback */
        cli_json_str(&j, "bn_schedule", r->bn_schedule);
        cli_json_str(&j, "bn_fallback", r->bn_fallback);
        cli_json_int(&j, "bn_fallback_widths", r->bn_fallback_widths);
        cli_json_int(&j, "bn_widths", r->bn_widths);
    }
    cli_json_str(&j, "reduce", in->exact ? "exact" : "float");
    cli_json_int(&j, "micro", r->micro);
    cli_json_int(&j, "batch", r->batch);
    cli_json_int(&j, "steps", f->n);
    cli_json_num(&j, "loss_first", "%.17g", f->n > 0 ? r->step[0].loss : NAN);
    cli_json_num(&j, "loss_last", "%.17g", f->n > 0 ? r->step[f->n - 1].loss : NAN);
    cli_json_num(&j, "wall_s", "%.6g", f->wall);
    /* no step timed (a divergence at the first): null, as the rate */
    cli_json_num(&j, "step_wall_s", "%.6g", f->steady > 0 ? f->steady : NAN);
    cli_json_num(&j, "examples_per_s", "%.6g", r->batch / f->steady);
    cli_json_num(&j, "modeled_allreduce_s", "%.6g", f->modeled);
    cli_json_num(&j, "modeled_grad_s", "%.6g", r->modeled_grad_s);
    cli_json_num(&j, "modeled_bn_s", "%.6g", r->modeled_bn_s);
    cli_json_int(&j, "bn_calls", r->bn_calls);
    json_cpu(&j, r, f);
    if (in->diverged_step >= 0) /* replicas were not compared */
        cli_json_null(&j, "replicas_equal");
    else
        cli_json_bool(&j, "replicas_equal", r->replicas_equal);
    cli_json_chip(&j, "died_chip", m, r->died_chip);
    cli_json_chips(&j, "died_during_run", m, r->died, r->ndied); /* in the order they died */
    cli_json_int(&j, "resumed_step", r->resumed_step);
    cli_faults_json(&j, r->events, r->nevents);
    json_availability(&j, r);
    cli_json_int(&j, "start_step", r->start_step);
    cli_json_bool(&j, "interrupted", r->interrupted);
    cli_json_int(&j, "checkpoints", r->checkpoints);
    if (r->checkpoints && in->ckpt) /* the last one's: --resume starts at "steps" */
        cli_json_str(&j, "checkpoint", in->ckpt);
    cli_json_bool(&j, "diverged_range", in->diverged_step >= 0 && r->diverged_range);
    if (in->diverged_step >= 0)
        cli_json_int(&j, "diverged_step", in->diverged_step);
    else
        cli_json_null(&j, "diverged_step");
    if (r->checked) {
        json_check(&j, r, f->n);
    } else if (in->check) { /* asked, not run: diverged or interrupted */
        cli_json_bool(&j, "checked", 0);
        cli_json_null(&j, "check_pass");
    }
    if (in->o)
        cli_faults_record_json(&j, in->o, m);
    cli_ranks_json(&j, m); /* every rank calls it: the figures are summed */
    cli_json_end(&j);
}

static void text_check(const ftm_train_result *r, int exact, long n)
{
    printf("# --check against one chip (%.3f s):\n#%5s %22s %22s %12s\n", r->ref_wall_s,
           "step", "mesh loss", "one-chip loss", "diff");
    for (long s = 0; s < n; s++)
        printf(" %5ld %22.15f %22.15f %12.3g\n", s, r->step[s].loss, r->ref_loss[s],
               r->step[s].loss - r->ref_loss[s]);
    printf("# params: bitwise equal: %s; %zu differ; max abs %.3g, max rel %.3g, max %llu ULP,\n"
           "#   max diff / distance moved %.3g\n", r->bitwise_equal ? "yes" : "no", r->ndiff,
           r->max_abs_diff, r->max_rel_diff, (unsigned long long)r->max_ulp, r->max_upd_rel_diff);
    if (r->diff_tensor >= 0)
        printf("# first differing element: %s[%zu] = %.9g, one chip %.9g\n", r->diff_name,
               r->diff_index, r->diff_val, r->diff_ref);
    if (exact)
        printf("# check %s: exact mode demands bitwise equal parameters and losses\n",
               r->check_pass ? "PASSED" : "FAILED");
    else
        printf("# per step at the mesh's parameters: gradient max |diff| / max |grad| %.3g\n"
               "#   (worst: %s, step %ld), loss rel diff %.3g\n"
               "# check %s: bound %g per step (the trajectory drift above is reported, not "
               "judged)\n", r->max_grad_rel_diff, r->grad_diff_step >= 0 ? r->grad_diff_name : "-",
               r->grad_diff_step, r->max_step_loss_rel_diff, r->check_pass ? "PASSED" : "FAILED",
               r->tol);
}

/* Where the time went: math share, other processes, CPU by part, sgemm. */
static void text_cpu(const ftm_train_result *r, const train_summary_info *in, const figs *f,
                     const train_out *c)
{
    printf("# forward/backward math: %.1f%% of the capacity of %d core%s (CPU time in math /\n"
           "#   (step wall x cores)); outside math (allreduce, sync, waiting%s): %.1f%%\n",
           100 * f->busy, f->cores, cli_s(f->cores),
           r->check_cpu_s > 0 ? ", float --check" : "", 100 * (1 - f->busy));
    /* The load-free figure subtracts other processes' CPU from our
     * capacity: meaningful only when we could use every core. */
    if (c->have_stat && f->loadfree_ok)
        printf("#   other processes took %.2f CPU s meanwhile (/proc/stat); of the capacity left\n"
               "#   to us, outside math: %.1f%%\n", f->others, 100 * (1 - f->busy_free));
    else if (c->have_stat && f->node_ranks > 1)
        printf("#   other processes, this job's %d other rank%s on this machine among them, took\n"
               "#   %.2f CPU s meanwhile (/proc/stat): the share net of them is not measurable\n",
               f->node_ranks - 1, cli_s(f->node_ranks - 1), f->others);
    else if (c->have_stat)
        printf("#   other processes took %.2f CPU s meanwhile (/proc/stat): the share net of\n"
               "#   them is not measurable here (fewer chips than cores, or a busy machine)\n",
               f->others);
    char bn[64] = "";
    if (in->bn)
        snprintf(bn, sizeof bn, " BN allreduces %.3f s,", r->hook_cpu_s);
    /* the parts are read from the clock separately, so their sum can pass
     * the total by a clock tick: the rest is then 0, not -0.000 */
    double rest = r->cpu_s - r->math_cpu_s - r->hook_cpu_s - r->grad_cpu_s - r->optim_cpu_s -
                  r->check_cpu_s;
    printf("# CPU time: %.3f s in all; forward/backward %.3f s (%.1f%%),%s\n"
           "#   gradient allreduce %.3f s, optimizer %.3f s, per-step check %.3f s, the rest %.3f s\n",
           r->cpu_s, r->math_cpu_s, r->cpu_s > 0 ? 100 * r->math_cpu_s / r->cpu_s : 0, bn,
           r->grad_cpu_s, r->optim_cpu_s, r->check_cpu_s, rest > 0 ? rest : 0.0);
    printf("# sgemm: %.3g GFLOP, %.1f%% of chip-thread time, %.2f GFLOP/s per call-time, "
           "%.2f GFLOP/s over wall\n", r->gemm.flops * 1e-9, 100 * f->share, f->gf_call, f->gf_wall);
}

const char *train_diverged_why(const ftm_train_result *r)
{
    return r->diverged_range ? "a gradient left the fixed-point range of --reduce exact (|g| >= "
                               "2^22)"
                             : "the loss is not finite";
}

static void summary_text(const ftm_train_result *r, const ftm_mesh *m,
                         const train_summary_info *in, const figs *f, const train_out *c)
{
    char bn[64] = "";
    if (in->bn)
        snprintf(bn, sizeof bn, " (bn %s%s)", r->bn_algo,
                 in->bn_asked && !strcmp(in->bn_asked, "auto") ? ", auto's pick" : "");
    int picked = in->asked && !strcmp(in->asked, "auto");
    char mic[96] = ""; /* float mode's micro-batches start where each chip's share does */
    if (in->micro && r->micro != in->micro)
        snprintf(mic, sizeof mic, " (of --micro %d: the largest divisor every chip's first "
                 "example is a multiple of)", in->micro);
    printf("# %s on %dx%d %s, %d chip%s, %zu params, algo %s%s%s, reduce %s, micro %d%s\n",
           in->model, m->rows, m->cols, cli_mesh_kind(m), r->chips, cli_s(r->chips),
           r->nparams, r->algo, picked ? " (auto's pick for the last mesh)" : "", bn,
           in->exact ? "exact" : "float", r->micro, mic);
    if (r->fallback)
        printf("#   gradient schedule run: %s (%s)\n", r->schedule, r->fallback);
    if (in->bn && r->bn_fallback)
        printf("#   batch-norm schedule run: %s for %d of %d widths (%s)\n", r->bn_schedule,
               r->bn_fallback_widths, r->bn_widths, r->bn_fallback);
    if (f->n > 0)
        printf("# loss %.6f -> %.6f in %ld step%s of batch %ld; wall %.3f s, ", r->step[0].loss,
               r->step[f->n - 1].loss, f->n, cli_s(f->n), r->batch, f->wall);
    else
        printf("# no step finished, batch %ld; wall %.3f s, ", r->batch, f->wall);
    if (f->steady > 0)
        printf("%.4f s/step (steps >= %ld), %.1f examples/s\n", f->steady, f->s0,
               r->batch / f->steady);
    else /* no step finished (a divergence at the first one) */
        printf("no step timed\n");
    if (in->diverged_step >= 0) {
        printf("# diverged: %s at step %ld\n", train_diverged_why(r), in->diverged_step);
        return;
    }
    if (in->bn)
        printf("# modeled allreduce per step: %.3f us (gradients %.3f us + %d batch-norm sum%s "
               "%.3f us)\n", f->modeled * 1e6, r->modeled_grad_s * 1e6, r->bn_calls,
               cli_s(r->bn_calls), r->modeled_bn_s * 1e6);
    else
        printf("# modeled allreduce per step: %.3f us (gradients)\n", f->modeled * 1e6);
    text_cpu(r, in, f, c);
    text_availability(r);
    printf("# replicas: %s\n", r->replicas_equal ? "all chips' parameters bitwise equal"
                                                   : "DIFFER between chips");
    if (r->checked)
        text_check(r, in->exact, f->n);
}

void train_summary(const ftm_train_result *r, const ftm_mesh *m, const train_summary_info *in,
                   const train_out *c)
{
    figs f = compute(r, in, c);
    if (c->json)
        summary_json(r, m, in, &f);
    else
        summary_text(r, m, in, &f, c);
}

void train_data_note(const char *data, const char *corpus, const ftm_dataset *ds, long batch)
{
    if (!ds || (!data && !corpus))
        return; /* synthetic examples: nothing read */
    long n = ftm_data_size(ds);
    printf("# data: %s %s, %ld %s%s", data ? "--data" : "--corpus", data ? data : corpus, n,
           data ? "image" : "token", n == 1 ? "" : "s");
    if (data && n < batch)
        printf(" (fewer than a step's batch of %ld: a step repeats some)", batch);
    printf("\n");
}

/* Chips left without examples by the batch split (ftm_train_split: float
 * mode deals examples, exact mode whole micro-batches), and what would
 * keep them busy: a "# note:" line in text, a warning on stderr with
 * --json (json), where stdout holds only JSON. */
void train_idle_note(const ftm_train_opts *t, int P, int json)
{
    long units = t->exact ? (t->batch + t->micro - 1) / t->micro : t->batch;
    if (units >= P)
        return;
    long idle = P - units;
    char b[320];
    if (!t->exact) {
        snprintf(b, sizeof b, "a batch of %ld example%s for %d chips, at most one each, so %ld "
                 "chip%s idle; --batch %d would keep them busy", t->batch, cli_s(t->batch), P,
                 idle, cli_s(idle), P);
    } else { /* one micro-batch holds at most the batch; the last may be short */
        int mb = t->micro < t->batch ? t->micro : (int)t->batch;
        const char *upto = t->batch % t->micro && units > 1 ? "up to " : "";
        snprintf(b, sizeof b, "exact mode deals whole micro-batches: %ld micro-batch%s of "
                 "%s%d example%s for %d chips, so %ld chip%s idle; --%s %ld would keep them "
                 "busy", units, units == 1 ? "" : "es", upto, mb, cli_s(mb), P, idle,
                 cli_s(idle), t->batch >= P ? "micro" : "batch",
                 t->batch >= P ? t->batch / P : (long)P * t->micro);
    }
    if (json)
        cli_warn("train", "%s", b);
    else
        printf("# note: %s\n", b);
}

void train_nothing_to_do(int json, const char *resume, long at, long steps, int files)
{
    if (!json) {
        printf("# nothing to do: the checkpoint is at step %ld (--steps %ld); give more "
               "--steps to train on%s\n", at, steps,
               files ? " (no --checkpoint, --svg or --trace file is written)" : "");
        return;
    }
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_obj(&j, NULL);
    cli_json_bool(&j, "summary", 1);
    cli_json_str(&j, "resumed_from", resume);
    cli_json_int(&j, "start_step", at);
    cli_json_int(&j, "steps", steps);
    cli_json_bool(&j, "nothing_to_do", 1);
    cli_json_end(&j);
}
