/* ftmesh sweep: the paper's scenario table, modeled. */
#include "cli.h"
#include "ftmesh/mesh.h"
#include "ftmesh/sweep.h"
#include "ftmesh/throughput.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* Below O_TPUT: sweep_opt passes the ids above it to the throughput. */
enum { O_POD = CLI_O_CMD - 1, O_MODEL = CLI_O_CMD - 2, O_LIST = CLI_O_CMD - 3 };
static const cli_opt sweep_table[] = {
    { "json", NULL, CLI_O_JSON, "one JSON object: the cost parameters, \"rows\" (one per\n"
      "algorithm and case), and \"goal\" and \"goal_healthy\" (with --throughput:\n"
      "the step's parameters and \"rows\"; doc/commands.md lists the keys)" },
    { "pod", "RxC", O_POD, "only this torus: 16x32 or 32x32 (default both)" },
    { "model", "NAME", O_MODEL, "only this model: resnet50 or bert-large (default both)" },
    { "list", NULL, O_LIST, "print the scenarios (tori, faults as options, models) and exit" },
    { NULL, NULL, 0, NULL },
};
enum {
    O_TPUT = CLI_O_CMD, O_OVERLAP, O_CHIP_TFLOPS, O_RESNET_GFLOP, O_BERT_GFLOP, O_RB512, O_RB1024,
    O_BB512, O_BB1024, O_ALGOS, O_POLICY
};
/* ftmesh sweep --throughput (sweep_tput.c) */
static const cli_opt tput_table[] = {
    { "throughput", NULL, O_TPUT, "training throughput at pod scale instead (the options below)" },
    { "overlap", "F", O_OVERLAP, "share of the allreduce hidden under the backward pass, 0..1\n"
      "(default 0); the backward pass, 2/3 of the compute, is the\nmost it hides" },
    { "chip-TFLOPS", "X", O_CHIP_TFLOPS, "sustained TFLOP/s per chip (default 50; TPU-v3 peak 123)" },
    { "resnet50-GFLOP", "X", O_RESNET_GFLOP, "GFLOP per ResNet-50 training example (default 24.6)" },
    { "bert-GFLOP", "X", O_BERT_GFLOP,
      "GFLOP per BERT-large training example (default 1044.48:\n6 x 340M parameters x 512 tokens)" },
    { "resnet50-batch-512", "N", O_RB512, "ResNet-50 global batch on 512 chips (default 16384)" },
    { "resnet50-batch-1024", "N", O_RB1024, "ResNet-50 global batch on 1024 chips (default 32768)" },
    { "bert-batch-512", "N", O_BB512, "BERT-large global batch on 512 chips (default 4096)" },
    { "bert-batch-1024", "N", O_BB1024, "BERT-large global batch on 1024 chips (default 8192)" },
    { "algos", "A,B", O_ALGOS, "allreduce candidates, the fastest is used\n(default 2d,2d-concurrent,2d-lines,trees)" },
    { "batch-policy", "P", O_POLICY, "with dead chips: global (default), the global batch stays\n"
      "and the survivors split it in whole examples; per-chip,\neach survivor keeps its healthy share "
      "and the global\nbatch shrinks" },
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const sweep_tables[] = { sweep_table, cli_cost_table, tput_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh sweep [--json] [--pod RxC] [--model NAME] [cost options]\n"
           "       ftmesh sweep --throughput [--json] [throughput options] [cost options]\n"
           "       ftmesh sweep --list [--json]\n"
           "\n"
           "The scenario of Kumar & Jouppi (2020), modeled on TPU-v3 links: 16x32 and\n"
           "32x32 tori (512 and 1024 chips), healthy, with one dead host, one dead\n"
           "chip, one dead link (near the middle), and with two dead hosts apart and\n"
           "four dead hosts (two sharing rows); the fp32 gradients of ResNet-50 (25.6M\n"
           "parameters) and BERT-large (340M); every allreduce algorithm. Columns:\n"
           "modeled time, busbw, overhead vs the same algorithm on the healthy torus,\n"
           "and vs the best algorithm on the healthy torus, the lower bound no\n"
           "allreduce of those bytes on that mesh can model below (bound, see\n"
           "doc/bound.md) and the time as a multiple of it. '*' marks the fastest\n"
           "algorithm of each (mesh, scenario, model); \"2d (ring)\": that algorithm\n"
           "ran another one's schedule there (here the ring's: faster on that mesh,\n"
           "or its own does not apply), which was timed (--json: \"schedule\", and\n"
           "\"fallback\" says why). Last, each faulty\n"
           "case's fastest against its goal (overhead vs the best healthy time): 5%%\n"
           "(ResNet-50) and 2%% (BERT-large) for one fault, 8%% and 4%% for two or four\n"
           "hosts; and the best healthy time against 1.05 x its bound; met or not,\n"
           "and why not (--json: \"goal\", \"goal_healthy\").\n"
           "No data moves: it takes half a minute to two minutes on two cores.\n"
           "\n"
           "With --throughput: the training step per mesh, model and scenario (also two\n"
           "dead hosts): every healthy chip computes its share of the global batch in\n"
           "whole examples (dead chips' examples move to the survivors, so where the\n"
           "batch does not divide some take one more, and the step waits for them;\n"
           "--batch-policy per-chip: each survivor keeps its healthy share and the global\n"
           "batch shrinks), then the gradient allreduce runs (modeled); columns: global\n"
           "batch, examples on the busiest chip, compute, allreduce, step time,\n"
           "examples/s, and the throughput lost against the healthy torus (impact, %%).\n"
           "\n");
    cli_print_opts(stdout, "Options", sweep_tables, 0, 2);
    cli_print_opts(stdout, "Throughput options", sweep_tables, 2, 3);
}

typedef struct sweep_args {
    int json;
    ftm_cost_params cp;
    int throughput;
    const char *tput_only;   /* a throughput option given (its name) */
    const char *cost_given;  /* a cost-model option given (its name) */
    ftm_tput_params tp;
    char *algos;             /* --algos copy, the names point into it */
    ftm_sweep_only only;     /* --pod (0x0: both), --model (NULL: both) */
    int list;                /* --list */
} sweep_args;

static int sweep_opt(void *ctx, int id, const char *name, const char *val)
{
    sweep_args *a = ctx;
    if (id == CLI_O_JSON) {
        a->json = 1;
        return 0;
    }
    if (id == O_POD) {
        if (ftm_mesh_parse_size(val, &a->only.rows, &a->only.cols) ||
            a->only.cols != 32 || (a->only.rows != 16 && a->only.rows != 32))
            return cli_usage_error("sweep", "--pod %s: want 16x32 or 32x32", val);
        return 0;
    }
    if (id == O_MODEL) {
        if (strcmp(val, "resnet50") != 0 && strcmp(val, "bert-large") != 0)
            return cli_usage_error("sweep", "--model %s: want resnet50 or bert-large", val);
        a->only.model = val;
        return 0;
    }
    if (id == O_LIST) {
        a->list = 1;
        return 0;
    }
    if (id == O_TPUT) {
        a->throughput = 1;
        return 0;
    }
    if (id > O_TPUT) {
        a->tput_only = name;
        return cli_tput_set("sweep", id - O_OVERLAP, name, val, &a->tp, &a->algos);
    }
    a->cost_given = name;
    return cli_cost_set("sweep", id, val, &a->cp);
}

static void json_row(cli_json *j, const ftm_sweep_row *r)
{
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
    cli_json_begin_obj(j, NULL);
    cli_json_str(j, "mesh", mesh);
    cli_json_str(j, "scenario", r->scenario);
    cli_json_str(j, "fault", r->fault);
    cli_json_str(j, "model", r->model);
    cli_json_u64(j, "bytes", r->bytes);
    cli_json_str(j, "algo", r->algo);
    cli_json_str(j, "schedule", r->schedule);
    if (r->fallback)
        cli_json_str(j, "fallback", r->fallback);
    cli_json_int(j, "chips", r->chips);
    cli_json_num(j, "modeled_s", "%.9g", r->time_s);
    cli_json_num(j, "modeled_algbw_GBps", "%.6g", r->algbw_GBps);
    cli_json_num(j, "modeled_busbw_GBps", "%.6g", r->busbw_GBps);
    cli_json_u64(j, "max_link_bytes", r->max_link_bytes);
    cli_json_num(j, "overhead_pct", "%.4f", r->overhead_pct);
    cli_json_num(j, "overhead_vs_best_healthy_pct", "%.4f", r->overhead_best_pct);
    cli_json_bool(j, "best", r->best);
    cli_json_num(j, "bound_s", "%.9g", r->bound_s);
    cli_json_num(j, "over_bound", "%.6f", r->over_bound);
    cli_faults_record_json_flags(j, r->fault, r->rows, r->cols, 1);
    cli_json_end(j);
}

/* The goals for the paper's "minimal impact", per model (the larger
 * buffer amortises latency better): one dead host, chip or link costs
 * the best algorithm at most 5% (ResNet-50) or 2% (BERT-large) over the
 * best healthy time; two or four dead hosts at most 8% or 4%. The best
 * healthy time itself within 5% of the healthy bound. */
static const double GOAL_PCT[2] = { 5.0, 2.0 }, GOAL_HOSTS_PCT[2] = { 8.0, 4.0 };
static const double GOAL_HEALTHY_BOUND = 1.05;

static int multi_host(const ftm_sweep_row *r)
{
    return !strcmp(r->scenario, "two-hosts") || !strcmp(r->scenario, "four-hosts");
}

static double goal_pct(const ftm_sweep_row *r)
{
    int bert = strcmp(r->model, "resnet50") != 0;
    return multi_host(r) ? GOAL_HOSTS_PCT[bert] : GOAL_PCT[bert];
}

static int goal_row(const ftm_sweep_row *r)
{
    return r->best && strcmp(r->scenario, "healthy") != 0;
}

static int goal_met(const ftm_sweep_row *r)
{
    return r->overhead_best_pct <= goal_pct(r);
}

/* The goal rows: "goal", each faulty case's fastest against its goal,
 * or (healthy) "goal_healthy", each best healthy row against
 * GOAL_HEALTHY_BOUND x its bound. */
static void json_goal(cli_json *j, const ftm_sweep_row *rows, int n, int healthy)
{
    cli_json_begin_arr(j, healthy ? "goal_healthy" : "goal");
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        if (healthy ? !r->best || strcmp(r->scenario, "healthy") != 0 : !goal_row(r))
            continue;
        char mesh[32];
        snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
        cli_json_begin_obj(j, NULL);
        cli_json_str(j, "mesh", mesh);
        if (!healthy)
            cli_json_str(j, "scenario", r->scenario);
        cli_json_str(j, "model", r->model);
        cli_json_str(j, "algo", r->algo);
        if (healthy) {
            cli_json_num(j, "over_bound", "%.6f", r->over_bound);
            cli_json_num(j, "goal_over_bound", "%g", GOAL_HEALTHY_BOUND);
            cli_json_bool(j, "met", r->over_bound <= GOAL_HEALTHY_BOUND);
        } else {
            cli_json_num(j, "overhead_vs_best_healthy_pct", "%.4f", r->overhead_best_pct);
            cli_json_num(j, "goal_pct", "%g", goal_pct(r));
            cli_json_bool(j, "met", goal_met(r));
        }
        cli_json_end(j);
    }
    cli_json_end(j);
}

/* The goal rows of the one-fault (multi = 0) or the multi-host cases,
 * and how many meet their goal; *all gets how many there are, *ring
 * whether a 1-D ring is the fastest of any. */
static int text_goal_rows(const ftm_sweep_row *rows, int n, int multi, int *all, int *ring)
{
    int met = 0;
    *all = *ring = 0;
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        if (!goal_row(r) || multi_host(r) != multi)
            continue;
        ++*all;
        met += goal_met(r);
        *ring |= !strcmp(r->algo, "ring") || !strcmp(r->algo, "bidir");
        printf("#   %dx%-3d %-10s %-10s %-13s %+7.2f%%  %s\n", r->rows, r->cols, r->scenario,
               r->model, r->algo, r->overhead_best_pct, goal_met(r) ? "met" : "not met");
    }
    return met;
}

/* text as "# " lines of at most 78 columns. */
static void comment_wrapped(const char *text)
{
    int col = 0;
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col && col + 1 + (int)w > 78) {
            printf("\n");
            col = 0;
        }
        col += printf("%s%.*s", col ? " " : "# ", (int)w, p);
        p += w;
        p += strspn(p, " ");
    }
    printf("\n");
}

/* The best healthy rows against GOAL_HEALTHY_BOUND times their bound; why
 * not, said of what the rows that miss it ran. */
static void text_goal_healthy(const ftm_sweep_row *rows, int n, const ftm_cost_params *cp)
{
    int met = 0, all = 0, lines = 0, uneven = 0;
    printf("# goal (near the optimum): the best healthy time at most %.2f x the bound\n",
           GOAL_HEALTHY_BOUND);
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        if (!r->best || strcmp(r->scenario, "healthy") != 0)
            continue;
        int ok = r->over_bound <= GOAL_HEALTHY_BOUND, l = !strcmp(r->algo, "2d-lines");
        all++;
        met += ok;
        lines |= !ok && l;
        uneven |= !ok && l && r->rows != r->cols;
        printf("#   %dx%-3d %-10s %-10s %-13s %7.3f x  %s\n", r->rows, r->cols, r->scenario,
               r->model, r->algo, r->over_bound, ok ? "met" : "not met");
    }
    char why[600];
    snprintf(why, sizeof why, "%d of %d cases meet it.", met, all);
    if (met < all)
        snprintf(why + strlen(why), sizeof why - strlen(why),
                 " Why not: each step pays a hop's latency (%g us here%s), every summing step "
                 "the reduction at HBM speed (+%.0f%% of its transfer here)%s: doc/bound.md.",
                 cp->hop_s * 1e6, lines ? "; 2d-lines takes about twice the diameter in steps" : "",
                 100 * cp->link_Bps / cp->hbm_Bps,
                 uneven ? ", and where the torus's sides differ 2d-lines' links are unevenly "
                          "loaded (16x32: the busiest carries 3% over the optimum)" : "");
    comment_wrapped(why);
}

/* How far each faulty case's best algorithm is from its goal, and why
 * (measured in doc/results.md and doc/trees.md). */
static void text_goal(const ftm_sweep_row *rows, int n, const ftm_cost_params *cp)
{
    int all, ring;
    text_goal_healthy(rows, n, cp);
    printf("# goal (the paper's \"minimal impact\"): one dead host, chip or link costs the best\n"
           "# algorithm at most %.0f%% (ResNet-50) or %.0f%% (BERT-large) over the best healthy\n"
           "# time\n", GOAL_PCT[0], GOAL_PCT[1]);
    int met = text_goal_rows(rows, n, 0, &all, &ring);
    printf("# %d of %d cases meet it.%s\n", met, all,
           met == all ? ""
                      : " Why not: next to a hole 2d-lines runs broken rows as\n"
                        "# pipelined lines, which pay their pipeline's fill and drain, an idle step\n"
                        "# per slot and longer hops, and the column phase waits on them\n"
                        "# (doc/allreduce-2d.md). The trees cost little more than on the\n"
                        "# healthy torus, but pay there their pipeline's fill and drain, a hop's\n"
                        "# latency per chunk and the reductions (doc/trees.md).");
    printf("# goal (more faults): two or four dead hosts cost the best algorithm at most\n"
           "# %.0f%% (ResNet-50) or %.0f%% (BERT-large) over the best healthy time\n",
           GOAL_HOSTS_PCT[0], GOAL_HOSTS_PCT[1]);
    met = text_goal_rows(rows, n, 1, &all, &ring);
    printf("# %d of %d cases meet it.%s%s\n", met, all,
           met == all ? ""
                      : " Why not: as above, and each host cuts more rows\n"
                        "# and columns into lines; a row cut twice (four hosts) runs as segments folded into a\n"
                        "# helper row: two more pipeline slots, and the helper row adds the\n"
                        "# segments' adopted shares (doc/allreduce-2d.md).",
           met == all || !ring ? ""
                               : " Where that costs\n"
                                 "# more than a 1-D ring, the ring is fastest: holes cost it next to\n"
                                 "# nothing, but on a healthy torus it is far slower than the 2-D ones.");
}

static void report(const sweep_args *a, const ftm_sweep_row *rows, int n)
{
    const ftm_cost_params *cp = &a->cp;
    if (a->json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_obj(&j, NULL);
        cli_json_num(&j, "link_GBps", "%.9g", cp->link_Bps / 1e9);
        cli_json_num(&j, "hop_us", "%.9g", cp->hop_s * 1e6);
        cli_json_num(&j, "hbm_GBps", "%.9g", cp->hbm_Bps / 1e9);
        cli_json_begin_arr(&j, "rows");
        for (int i = 0; i < n; i++)
            json_row(&j, &rows[i]);
        cli_json_end(&j);
        json_goal(&j, rows, n, 0);
        json_goal(&j, rows, n, 1);
        cli_json_end(&j);
        return;
    }
    ftm_cost_params tpu;
    ftm_cost_defaults(&tpu);
    int is_tpu = tpu.link_Bps == cp->link_Bps && tpu.hop_s == cp->hop_s && tpu.hbm_Bps == cp->hbm_Bps;
    printf("# modeled allreduce, %slinks %g GB/s/direction, %g us/hop, HBM %g GB/s\n"
           "%-6s %-10s %-10s %-21s %5s %11s %11s %9s %9s %9s %7s\n",
           is_tpu ? "TPU-v3 " : "", cp->link_Bps / 1e9, cp->hop_s * 1e6, cp->hbm_Bps / 1e9,
           "torus", "scenario", "model",
           "algo", "chips", "time(ms)", "busbw(GB/s)", "ovh(%)", "ovh_best", "bound(ms)",
           "x_bound");
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        char mesh[32];
        snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
        char algo[64]; /* "2d (ring)": another schedule ran */
        snprintf(algo, sizeof algo, "%s%s%s%s", r->algo, r->fallback ? " (" : "",
                 r->fallback ? r->schedule : "", r->fallback ? ")" : "");
        printf("%-6s %-10s %-10s %-20s%s %5d %11.3f %11.1f %9.2f %9.2f %9.3f %7.3f\n", mesh,
               r->scenario, r->model, algo, r->best ? "*" : " ", r->chips, r->time_s * 1e3,
               r->busbw_GBps, r->overhead_pct, r->overhead_best_pct, r->bound_s * 1e3,
               r->over_bound);
    }
    int fell = 0;
    for (int i = 0; i < n; i++)
        fell |= rows[i].fallback != NULL;
    printf("# * the fastest algorithm of each (mesh, scenario, model)%s\n",
           fell ? "; \"algo (S)\": the\n# algorithm ran S's schedule on that mesh (faster "
                  "there, or its own does not\n# apply), and that was timed (--json: "
                  "\"schedule\", and \"fallback\" says why)"
                : "");
    text_goal(rows, n, cp);
}

int cli_sweep(int argc, char **argv)
{
    sweep_args a = { 0 };
    ftm_cost_defaults(&a.cp);
    ftm_tput_defaults(&a.tp);
    int rc = cli_parse("sweep", argc, argv, sweep_tables, sweep_opt, &a);
    if (rc == CLI_HELP)
        usage();
    else if (!rc && cli_ranks_count() > 1)
        rc = cli_usage_error("sweep", "it models only, in one process: start it without mpirun "
                             "(or with mpirun -np 1)");
    else if (!rc && a.tput_only && !a.throughput)
        rc = cli_usage_error("sweep", "--%s needs --throughput", a.tput_only);
    else if (!rc && (a.only.rows || a.only.model) && a.throughput)
        rc = cli_usage_error("sweep", "--%s is not a --throughput option: drop one of them",
                             a.only.rows ? "pod" : "model");
    else if (!rc && a.list && (a.throughput || a.only.rows || a.only.model))
        rc = cli_usage_error("sweep", "--list prints every scenario: give it alone (or with --json)");
    else if (!rc && a.list) {
        if (a.cost_given) /* the scenarios do not depend on the cost model */
            cli_warn("sweep", "--%s has no effect with --list", a.cost_given);
        rc = cli_sweep_list(a.json);
    }
    else if (!rc && a.throughput) {
        cli_warn_flush(); /* before the run, not after it */
        a.tp.cost = a.cp;
        rc = cli_sweep_throughput(&a.tp, a.json);
    }
    free(a.algos);
    if (rc == CLI_HELP)
        return 0;
    if (rc || a.throughput || a.list)
        return rc;
    ftm_sweep_row *rows = NULL;
    cli_warn_flush(); /* before the run, not after it */
    int n = 0, err = ftm_sweep_run(&a.cp, &a.only, &rows, &n);
    if (err)
        return cli_error("sweep", "%s", ftm_strerror(err));
    report(&a, rows, n);
    free(rows);
    return 0;
}
