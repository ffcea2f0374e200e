/* ftmesh train: data-parallel training of the small ResNet or BERT on the
 * emulated mesh, with --check against one chip. */
#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
    printf("usage: ftmesh train [--model resnet|bert] [--mesh RxC] [--torus] [faults]\n"
           "                    [--algo NAME] [--steps N] [--batch B] [--seed S]\n"
           "                    [--reduce float|exact] [--micro M] [--check] [--json]\n"
           "                    [--depth 8|14|20] [--heads H] [--lr X] [--data DIR] [--corpus FILE]\n"
           "                    [--fail-during R,C [--fail-step S]] [--svg FILE]\n"
           "\n"
           "Trains on every healthy chip of the mesh. The global batch B is split over\n"
           "the healthy chips by example index (unequal shares when B does not divide);\n"
           "each chip runs forward and backward on its share with its own replica,\n"
           "the gradients are summed through the links by the allreduce algorithm, and\n"
           "every chip applies the same optimizer step. Batch norm (ResNet) sums its\n"
           "statistics over the chips too. --mesh 1x1 trains on one chip.\n"
           "\n"
           "Prints per step: loss, wall time, modeled allreduce time (TPU-v3 links:\n"
           "gradient schedule plus batch-norm schedules) and examples/s; a progress bar\n"
           "when stdout is a terminal; then a summary. Exit 0 ok, 1 failed (training\n"
           "error, replicas differ, or --check out of bounds), 2 bad input, 3 hang.\n"
           "\n"
           "  --model resnet|bert  the model (default resnet)\n"
           "  --steps N            training steps (default 10)\n"
           "  --batch B            global batch, the same whatever the faults (default 32)\n"
           "  --seed S             model initialisation, data, dropout, masking and\n"
           "                       --random-faults (default 1)\n"
           "  --algo NAME          gradient allreduce (default ring); auto = the\n"
           "                       registered algorithm with the smallest modeled time:\n");
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        printf("                         %-13s %s\n", a->name, a->summary);
    printf("  --bn-algo NAME       batch-norm statistics allreduce (ResNet; 2 x 9..21 small\n"
           "                       int64 sums per step): tree (default: few steps and\n"
           "                       messages) or any other --algo name\n"
           "  --reduce float|exact float: float32 gradient sums, equal to one chip up to\n"
           "                       rounding; exact: per-micro-batch gradients in int64\n"
           "                       fixed point (2^-%d), parameters bit-identical to one\n"
           "                       chip on any mesh, faults and algorithm (default float)\n"
           "  --micro M            micro-batch size (default 4). Exact mode splits the\n"
           "                       batch over the chips in whole micro-batches, so use\n"
           "                       M <= B / chips to keep every chip busy; float mode may\n"
           "                       use a divisor of M so micro-batches align with shares\n"
           "  --check              also train on one chip and compare: loss per step, final\n"
           "                       params max abs/rel diff, max ULPs, first differing\n"
           "                       element. Exact mode demands bitwise equal params.\n"
           "                       Float runs drift apart step after step (rounding,\n"
           "                       amplified by training), so float mode is judged per\n"
           "                       step: the lowest chip also computes the one-chip\n"
           "                       gradient at the mesh's parameters (slower steps), and\n"
           "                       every tensor's max |diff| / max |grad| and the loss\n"
           "                       must stay within %g (float32 reordering bound, see\n"
           "                       src/train/check.c); the drift is reported\n"
           "  --tol X              float-mode --check bound instead of %g\n"
           "  --depth 8|14|20      ResNet depth (default 8)\n"
           "  --heads H            BERT attention heads, 2 or 4 (default 2)\n"
           "  --lr X               peak learning rate (default: resnet SGD 0.1, bert LAMB 1e-2)\n"
           "  --data DIR           ResNet: CIFAR-10 binary batches DIR/data_batch_N.bin\n"
           "                       (default: synthetic images, no download)\n"
           "  --corpus FILE        BERT: plain-text corpus (default: synthetic sequences)\n"
           "  --fail-during R,C    chip (R,C) dies in the middle of the gradient allreduce of\n"
           "                       step --fail-step (default 1); training recovers: the\n"
           "                       survivors take the most advanced survivor's state, the\n"
           "                       batch is re-split, the rings rebuilt, and the step redone\n"
           "  --fail-step S        the step in which --fail-during strikes\n"
           "  --svg FILE           write a picture: the mesh, one gradient allreduce's bytes\n"
           "                       per link, and the loss per step with the fault events\n"
           "  --json               one JSON object per step, then a summary object\n"
           "\n%s", FTM_FIX_SHIFT, FTM_TRAIN_FLOAT_TOL, FTM_TRAIN_FLOAT_TOL, cli_mesh_help);
}

typedef struct out_ctx {
    int json, tty;
    long steps, batch;
    int bar;          /* a progress bar line is on screen */
    /* other processes' CPU during steps >= 1 (the machine is shared) */
    int have_stat;
    double busy0, own0, others_s;
} out_ctx;

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
static void track_others(out_ctx *c, long s)
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

static void bar(out_ctx *c, const char *what, long done)
{
    int w = 30, k = c->steps ? (int)(w * done / c->steps) : w;
    printf("\r\033[K%s [", what);
    for (int i = 0; i < w; i++)
        putchar(i < k ? '#' : ' ');
    printf("] %ld/%ld", done, c->steps);
    fflush(stdout);
    c->bar = 1;
}

static void clear_bar(out_ctx *c)
{
    if (c->bar)
        printf("\r\033[K");
    c->bar = 0;
}

static void on_step(void *ctx, const ftm_train_step *s)
{
    out_ctx *c = ctx;
    double eps = s->wall_s > 0 ? (double)c->batch / s->wall_s : 0;
    track_others(c, s->step);
    if (c->json) {
        printf("{\"step\":%ld,\"loss\":%.17g,\"wall_s\":%.6g,\"modeled_allreduce_s\":%.6g,"
               "\"examples_per_s\":%.6g,\"math_cpu_s\":%.6g}\n",
               s->step, s->loss, s->wall_s, s->modeled_allreduce_s, eps, s->math_cpu_s);
        fflush(stdout);
        return;
    }
    clear_bar(c);
    printf("%6ld %12.6f %10.4f %14.3f %12.1f\n", s->step, s->loss, s->wall_s,
           s->modeled_allreduce_s * 1e6, eps);
    if (c->tty)
        bar(c, "train", s->step + 1);
    else
        fflush(stdout);
}

static void on_ref(void *ctx, long step, double loss)
{
    out_ctx *c = ctx;
    (void)loss;
    if (!c->json && c->tty)
        bar(c, "one-chip reference", step + 1);
}

/* Busy share: forward/backward CPU over the capacity of the cores the
 * chips could use, for steps >= 1 (step 0 builds schedules and touches
 * fresh memory) when there is more than one step. */
static double busy_share(const ftm_train_result *r, double others_s)
{
    double math = 0, wall = 0;
    for (long s = r->steps > 1 ? 1 : 0; s < r->steps; s++) {
        math += r->step[s].math_cpu_s;
        wall += r->step[s].wall_s;
    }
    int cores = r->chips < r->ncpus ? r->chips : r->ncpus;
    double cap = wall * cores - others_s;
    return cap > 0 ? math / cap : 0;
}

static void summary(const ftm_train_result *r, const ftm_mesh *m, const char *model,
                    int exact, int json, const out_ctx *c)
{
    long n = r->steps, s0 = n > 1 ? 1 : 0;
    double steady = 0;
    for (long s = s0; s < n; s++)
        steady += r->step[s].wall_s;
    steady /= (double)(n - s0);
    double others = c->have_stat ? c->others_s : 0;
    double busy = busy_share(r, 0), busy_free = busy_share(r, others), share = r->gemm.seconds / (r->chips * r->wall_s);
    int loadfree_ok = r->chips >= r->ncpus && busy_free > 0 && busy_free <= 1;
    char loadfree[32] = "null";
    if (loadfree_ok)
        snprintf(loadfree, sizeof loadfree, "%.4f", 1 - busy_free);
    double gf_call = r->gemm.seconds > 0 ? r->gemm.flops / r->gemm.seconds * 1e-9 : 0;
    double gf_wall = r->gemm.flops / r->wall_s * 1e-9;
    double modeled = r->modeled_grad_s + r->modeled_bn_s;
    char died[32] = "null";
    if (r->died_chip >= 0)
        snprintf(died, sizeof died, "[%d,%d]", ftm_mesh_row(m, r->died_chip),
                 ftm_mesh_col(m, r->died_chip));
    if (json) {
        printf("{\"summary\":true,\"model\":\"%s\",\"mesh\":\"%dx%d\",\"torus\":%s,"
               "\"chips\":%d,\"params\":%zu,\"algo\":\"%s\",\"bn_algo\":\"%s\","
               "\"reduce\":\"%s\",\"micro\":%d,\"batch\":%ld,\"steps\":%ld,"
               "\"loss_first\":%.17g,\"loss_last\":%.17g,\"wall_s\":%.6g,"
               "\"step_wall_s\":%.6g,\"examples_per_s\":%.6g,\"modeled_allreduce_s\":%.6g,"
               "\"modeled_grad_s\":%.6g,\"modeled_bn_s\":%.6g,\"bn_calls\":%d,"
               "\"math_cpu_s\":%.6g,\"cpu_s\":%.6g,\"cores\":%d,\"busy_math_share\":%.4f,"
               "\"outside_math_share\":%.4f,\"others_cpu_s\":%.6g,"
               "\"outside_math_share_loadfree\":%s,\"cpu_math_share\":%.4f,\"hook_cpu_s\":%.6g,"
               "\"grad_cpu_s\":%.6g,\"optim_cpu_s\":%.6g,\"sgemm_share\":%.4f,\"sgemm_gflops\":%.4g,"
               "\"replicas_equal\":%s,\"died_chip\":%s,\"resumed_step\":%ld",
               model, m->rows, m->cols, m->torus ? "true" : "false", r->chips, r->nparams,
               r->algo, r->bn_algo, exact ? "exact" : "float", r->micro, r->batch, n,
               r->step[0].loss, r->step[n - 1].loss, r->wall_s, steady, r->batch / steady,
               modeled, r->modeled_grad_s, r->modeled_bn_s, r->bn_calls, r->math_cpu_s,
               r->cpu_s, r->chips < r->ncpus ? r->chips : r->ncpus, busy, 1 - busy, others,
               loadfree, r->cpu_s > 0 ? r->math_cpu_s / r->cpu_s : 0, r->hook_cpu_s, r->grad_cpu_s,
               r->optim_cpu_s, share,
               gf_call, r->replicas_equal ? "true" : "false", died, r->resumed_step);
        if (r->checked) {
            printf(",\"checked\":true,\"check_pass\":%s,\"tol\":%g,\"bitwise_equal\":%s,"
                   "\"max_abs_diff\":%.9g,\"max_rel_diff\":%.9g,\"max_ulp\":%llu,"
                   "\"max_update_rel_diff\":%.9g,\"max_grad_rel_diff\":%.9g,"
                   "\"max_step_loss_rel_diff\":%.9g,\"ndiff\":%zu,\"max_loss_diff\":%.9g,"
                   "\"max_loss_rel_diff\":%.9g,\"ref_wall_s\":%.6g,\"first_diff\":",
                   r->check_pass ? "true" : "false", r->tol, r->bitwise_equal ? "true" : "false",
                   r->max_abs_diff, r->max_rel_diff, (unsigned long long)r->max_ulp,
                   r->max_upd_rel_diff, r->max_grad_rel_diff, r->max_step_loss_rel_diff, r->ndiff,
                   r->max_loss_diff, r->max_loss_rel_diff,
                   r->ref_wall_s);
            if (r->diff_tensor >= 0)
                printf("{\"tensor\":\"%s\",\"index\":%zu,\"value\":%.9g,\"ref\":%.9g}",
                       r->diff_name, r->diff_index, r->diff_val, r->diff_ref);
            else
                printf("null");
            printf(",\"ref_loss\":[");
            for (long s = 0; s < n; s++)
                printf("%s%.17g", s ? "," : "", r->ref_loss[s]);
            printf("]");
        }
        printf("}\n");
        return;
    }
    printf("# %s on %dx%d %s, %d chips, %zu params, algo %s (bn %s), reduce %s, micro %d\n",
           model, m->rows, m->cols, m->torus ? "torus" : "mesh", r->chips, r->nparams,
           r->algo, r->bn_algo, exact ? "exact" : "float", r->micro);
    printf("# loss %.6f -> %.6f in %ld steps of batch %ld; wall %.3f s, %.4f s/step "
           "(steps >= %ld), %.1f examples/s\n",
           r->step[0].loss, r->step[n - 1].loss, n, r->batch, r->wall_s, steady, s0,
           r->batch / steady);
    printf("# modeled allreduce per step: %.3f us (gradients %.3f us + %d batch-norm sums "
           "%.3f us)\n", modeled * 1e6, r->modeled_grad_s * 1e6, r->bn_calls,
           r->modeled_bn_s * 1e6);
    printf("# forward/backward math: %.1f%% of the %d core(s)' capacity (CPU time in math /\n"
           "#   (step wall x cores)); outside math (allreduce, sync, waiting%s): %.1f%%\n",
           100 * busy, r->chips < r->ncpus ? r->chips : r->ncpus,
           r->check_cpu_s > 0 ? ", float --check" : "", 100 * (1 - busy));
    /* The load-free figure subtracts other processes' CPU from our
     * capacity: meaningful only when we could use every core. */
    if (c->have_stat && loadfree_ok)
        printf("#   other processes took %.2f CPU s meanwhile (/proc/stat); of the capacity left\n"
               "#   to us, outside math: %.1f%%\n", others, 100 * (1 - busy_free));
    else if (c->have_stat)
        printf("#   other processes took %.2f CPU s meanwhile (/proc/stat): the share net of\n"
               "#   them is not measurable here (fewer chips than cores, or a busy machine)\n", others);
    printf("# CPU time: %.3f s in all; forward/backward %.3f s (%.1f%%), BN allreduces %.3f s,\n"
           "#   gradient allreduce %.3f s, optimizer %.3f s, per-step check %.3f s, the rest %.3f s\n",
           r->cpu_s, r->math_cpu_s, r->cpu_s > 0 ? 100 * r->math_cpu_s / r->cpu_s : 0,
           r->hook_cpu_s, r->grad_cpu_s, r->optim_cpu_s, r->check_cpu_s,
           r->cpu_s - r->math_cpu_s - r->hook_cpu_s - r->grad_cpu_s - r->optim_cpu_s -
           r->check_cpu_s);
    printf("# sgemm: %.3g GFLOP, %.1f%% of chip-thread time, %.2f GFLOP/s per call-time, "
           "%.2f GFLOP/s over wall\n", r->gemm.flops * 1e-9, 100 * share, gf_call, gf_wall);
    printf("# replicas: %s\n", r->replicas_equal ? "all chips' parameters bitwise equal"
                                                   : "DIFFER between chips");
    if (!r->checked)
        return;
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
        printf("# check %s: exact mode demands bitwise equal parameters (loss within %g rel)\n",
               r->check_pass ? "PASSED" : "FAILED", FTM_TRAIN_EXACT_LOSS_TOL);
    else
        printf("# per step at the mesh's parameters: gradient max |diff| / max |grad| %.3g\n"
               "#   (worst: %s, step %ld), loss rel diff %.3g\n"
               "# check %s: bound %g per step (the trajectory drift above is reported, not "
               "judged)\n", r->max_grad_rel_diff, r->grad_diff_step >= 0 ? r->grad_diff_name : "-",
               r->grad_diff_step, r->max_step_loss_rel_diff, r->check_pass ? "PASSED" : "FAILED",
               r->tol);
}

/* Parses one train-specific option; 1 consumed, 0 unknown, 2 bad input. */
typedef struct targs {
    ftm_train_opts t;
    const char *model, *data, *corpus, *svg;
    int fail_r, fail_c, fail_step_given;
    double lr;
    long depth, heads;
} targs;

static int parse_opt(targs *a, const char *cmd, int argc, char **argv, int *i)
{
    const char *s = argv[*i], *v;
    long n;
    double x;
#define VAL(name) if (!(v = cli_value(cmd, argc, argv, i, name))) return 2
    if (cli_is(s, "--model")) {
        VAL("--model");
        if (strcmp(v, "resnet") && strcmp(v, "bert"))
            return cli_usage_error(cmd, "--model %s: expected resnet or bert", v);
        a->model = v;
    } else if (cli_is(s, "--steps")) {
        VAL("--steps");
        if (cli_parse_int(v, 1, 10000000, &a->t.steps))
            return cli_usage_error(cmd, "--steps %s: expected a whole number 1..10000000", v);
    } else if (cli_is(s, "--batch")) {
        VAL("--batch");
        if (cli_parse_int(v, 1, 1L << 20, &a->t.batch))
            return cli_usage_error(cmd, "--batch %s: expected a whole number 1..1048576", v);
    } else if (cli_is(s, "--micro")) {
        VAL("--micro");
        if (cli_parse_int(v, 1, 1L << 20, &n))
            return cli_usage_error(cmd, "--micro %s: expected a whole number 1..1048576", v);
        a->t.micro = (int)n;
    } else if (cli_is(s, "--reduce")) {
        VAL("--reduce");
        if (strcmp(v, "float") && strcmp(v, "exact"))
            return cli_usage_error(cmd, "--reduce %s: expected float or exact", v);
        a->t.exact = !strcmp(v, "exact");
    } else if (cli_is(s, "--algo") || cli_is(s, "--bn-algo")) {
        int bn = cli_is(s, "--bn-algo");
        VAL(bn ? "--bn-algo" : "--algo");
        if (!ftm_allreduce_find(v) && strcmp(v, "auto"))
            return cli_usage_error(cmd, "%s %s: unknown algorithm (see ftmesh train --help)",
                                   bn ? "--bn-algo" : "--algo", v);
        *(bn ? &a->t.bn_algo : &a->t.algo) = v;
    } else if (cli_is(s, "--check")) {
        if (strchr(s, '='))
            return cli_usage_error(cmd, "--check takes no value");
        a->t.check = 1;
    } else if (cli_is(s, "--tol")) {
        VAL("--tol");
        if (cli_parse_double(v, 1e-300, 1e300, &x))
            return cli_usage_error(cmd, "--tol %s: expected a positive number", v);
        a->t.tol = x;
    } else if (cli_is(s, "--depth")) {
        VAL("--depth");
        if (cli_parse_int(v, 8, 20, &a->depth) || (a->depth - 2) % 6)
            return cli_usage_error(cmd, "--depth %s: expected 8, 14 or 20", v);
    } else if (cli_is(s, "--heads")) {
        VAL("--heads");
        if (cli_parse_int(v, 2, 4, &a->heads) || a->heads == 3)
            return cli_usage_error(cmd, "--heads %s: expected 2 or 4 (must divide hidden 64)", v);
    } else if (cli_is(s, "--lr")) {
        VAL("--lr");
        if (cli_parse_double(v, 1e-12, 100, &a->lr))
            return cli_usage_error(cmd, "--lr %s: expected a number in (0, 100]", v);
    } else if (cli_is(s, "--fail-during")) {
        VAL("--fail-during");
        if (ftm_mesh_parse_coord(v, &a->fail_r, &a->fail_c))
            return cli_usage_error(cmd, "--fail-during %s: expected R,C, e.g. 3,4", v);
    } else if (cli_is(s, "--fail-step")) {
        VAL("--fail-step");
        if (cli_parse_int(v, 0, 1000000, &n))
            return cli_usage_error(cmd, "--fail-step %s: expected a step number >= 0", v);
        a->t.fail_step = n;
        a->fail_step_given = 1;
    } else if (cli_is(s, "--svg")) {
        VAL("--svg");
        a->svg = v;
    } else if (cli_is(s, "--data")) {
        VAL("--data");
        a->data = v;
    } else if (cli_is(s, "--corpus")) {
        VAL("--corpus");
        a->corpus = v;
    } else {
        return 0;
    }
#undef VAL
    return 1;
}

int cli_train(int argc, char **argv);
int cli_train(int argc, char **argv)
{
    cli_mesh_opts o;
    cli_mesh_opts_init(&o, "train", argc);
    targs a;
    memset(&a, 0, sizeof a);
    a.model = "resnet";
    a.fail_r = -1;
    a.t.fail_step = 1;
    a.t.steps = 10;
    a.t.batch = 32;
    a.t.micro = 4;
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            cli_mesh_opts_free(&o);
            return 0;
        }
        int k = cli_mesh_opt(&o, argc, argv, &i);
        if (k < 0)
            rc = CLI_EXIT_USAGE;
        else if (k == 0 && (k = parse_opt(&a, o.cmd, argc, argv, &i)) != 1)
            rc = k ? CLI_EXIT_USAGE
                   : cli_usage_error(o.cmd, "unknown option %s (see ftmesh train --help)", argv[i]);
    }
    int kind = !strcmp(a.model, "bert") ? FTM_MODEL_BERT : FTM_MODEL_RESNET;
    if (!rc && a.depth && kind != FTM_MODEL_RESNET)
        rc = cli_usage_error(o.cmd, "--depth: only for --model resnet");
    if (!rc && a.heads && kind != FTM_MODEL_BERT)
        rc = cli_usage_error(o.cmd, "--heads: only for --model bert");
    if (!rc && a.data && kind != FTM_MODEL_RESNET)
        rc = cli_usage_error(o.cmd, "--data: CIFAR-10 images are for --model resnet");
    if (!rc && a.corpus && kind != FTM_MODEL_BERT)
        rc = cli_usage_error(o.cmd, "--corpus: a text corpus is for --model bert");
    int fail_step_given = a.fail_step_given;
    ftm_mesh m;
    if (!rc)
        rc = cli_build_mesh(&o, &m);
    if (rc) {
        cli_mesh_opts_free(&o);
        return rc;
    }
    if (a.fail_r < 0 && fail_step_given) {
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return cli_usage_error(o.cmd, "--fail-step needs --fail-during R,C");
    }
    if (a.fail_r >= 0 && (a.fail_r >= m.rows || a.fail_c >= m.cols ||
                          !ftm_mesh_alive(&m, ftm_mesh_chip(&m, a.fail_r, a.fail_c)) ||
                          ftm_mesh_healthy_count(&m) < 2)) {
        rc = cli_usage_error(o.cmd, "--fail-during %d,%d: not a healthy chip of the %dx%d mesh "
                             "(or the last one)", a.fail_r, a.fail_c, m.rows, m.cols);
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return rc;
    }
    ftm_train_opts t = a.t;
    ftm_train_opts_default(&a.t, kind);
    if (a.fail_r >= 0) {
        a.t.fail_during = 1;
        a.t.fail_chip = ftm_mesh_chip(&m, a.fail_r, a.fail_c);
        a.t.fail_step = t.fail_step;
    }
    a.t.steps = t.steps; a.t.batch = t.batch; a.t.micro = t.micro; a.t.exact = t.exact;
    a.t.check = t.check; a.t.tol = t.tol;
    if (t.algo)
        a.t.algo = t.algo;
    if (t.bn_algo)
        a.t.bn_algo = t.bn_algo;
    a.t.model.seed = o.seed;
    a.t.hang_timeout_s = o.hang_timeout_s;
    if (a.depth)
        a.t.model.depth = (int)a.depth;
    if (a.heads)
        a.t.model.heads = (int)a.heads;
    if (a.lr > 0)
        a.t.optim.lr = (float)a.lr;
    ftm_dataset *ds = NULL;
    int err = 0;
    if (a.data && (err = ftm_data_load_cifar(&ds, a.data)))
        rc = cli_usage_error(o.cmd, "--data %s: %s", a.data, ftm_strerror(err));
    if (!rc && a.corpus && (err = ftm_data_load_corpus(&ds, a.corpus, 1000)))
        rc = cli_usage_error(o.cmd, "--corpus %s: %s", a.corpus, ftm_strerror(err));
    if (!rc && a.t.check && a.t.batch > 4096)
        rc = cli_usage_error(o.cmd, "--check: the one-chip reference holds the whole batch; "
                                    "--batch must be <= 4096");
    if (rc) {
        ftm_data_free(ds);
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return rc;
    }
    FILE *svgf = a.svg ? fopen(a.svg, "w") : NULL; /* a bad path fails before training */
    if (a.svg && !svgf) {
        ftm_data_free(ds);
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return cli_usage_error("train", "--svg %s: cannot create the file", a.svg);
    }
    a.t.model.data = ds;
    out_ctx oc = { o.json, !o.json && isatty(STDOUT_FILENO), a.t.steps, a.t.batch, 0, 0, 0, 0, 0 };
    ftm_train_callbacks cb = { on_step, on_ref, &oc };
    if (!o.json) {
        printf("# ftmesh train: %s, %dx%d %s, %d healthy chips, batch %ld, %ld steps, "
               "reduce %s%s\n", a.model, m.rows, m.cols, m.torus ? "torus" : "mesh",
               ftm_mesh_healthy_count(&m), a.t.batch, a.t.steps,
               a.t.exact ? "exact" : "float", a.t.check ? ", --check" : "");
        long units = (a.t.batch + a.t.micro - 1) / a.t.micro;
        if (a.t.exact && units < ftm_mesh_healthy_count(&m) &&
            a.t.batch >= ftm_mesh_healthy_count(&m))
            printf("# note: exact mode deals whole micro-batches: %ld of %d examples for %d "
                   "chips, so %ld chips idle; --micro %ld would keep them busy\n", units,
                   a.t.micro, ftm_mesh_healthy_count(&m), ftm_mesh_healthy_count(&m) - units,
                   a.t.batch / ftm_mesh_healthy_count(&m));
        printf("#%5s %12s %10s %14s %12s\n", "step", "loss", "wall(s)", "modeled_ar(us)",
               "examples/s");
        fflush(stdout);
    }
    ftm_train_result r;
    err = ftm_train_run(&m, &a.t, &cb, &r);
    clear_bar(&oc);
    if (err == FTM_EHANG) {
        cli_print_stuck(o.cmd, &m, r.stuck, r.nstuck, o.hang_timeout_s);
        rc = CLI_EXIT_HANG;
    } else if (err) {
        fprintf(stderr, "ftmesh train: %s\n", ftm_strerror(err));
        rc = err == FTM_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    } else {
        if (r.died_chip >= 0 && !o.json)
            printf("# chip (%d,%d) died during step %ld's gradient allreduce; recovered: "
                   "%d chips left, resumed at step %ld from a survivor's state\n",
                   a.fail_r, a.fail_c, a.t.fail_step, r.chips, r.resumed_step);
        else if (a.fail_r >= 0 && !o.json)
            printf("# --fail-during: step %ld never came; nothing failed\n", a.t.fail_step);
        summary(&r, &m, a.model, a.t.exact, o.json, &oc);
        if (svgf && cli_train_svg(svgf, a.svg, &m, &r, a.t.fail_step))
            rc = CLI_EXIT_FAIL;
        svgf = NULL; /* closed */
        if (!r.replicas_equal) {
            fprintf(stderr, "ftmesh train: replicas differ: chip %d's parameters are not "
                            "those of the lowest chip\n", r.replica_mismatch_chip);
            rc = CLI_EXIT_FAIL;
        }
        if (r.checked && !r.check_pass) {
            fprintf(stderr, "ftmesh train: --check failed (see the summary)\n");
            rc = CLI_EXIT_FAIL;
        }
    }
    fflush(stdout);
    if (svgf) { /* training failed: no picture */
        fclose(svgf);
        remove(a.svg);
    }
    ftm_train_result_free(&r);
    ftm_data_free(ds);
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&o);
    return rc;
}
