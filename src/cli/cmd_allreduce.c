/* ftmesh allreduce: run, verify and time an allreduce on the emulated mesh.
 * Parse, validate, model, run, report; one cleanup path. */
#include "cli.h"
#include "faults_cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/router.h"
#include "ftmesh/sched.h"
#include "ftmesh/svg.h"
#include "ftmesh/error.h"
#include "ftmesh/trace.h"
#include "trace_json.h"
#include "allreduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "allreduce"

enum { O_ALGO = CLI_O_CMD, O_SIZE, O_ITERS, O_MODEL_ONLY, O_FAIL_DURING, O_FAIL_AFTER, O_SVG,
       O_TRACE, O_TRACE_CLOCK, O_PACKETS_ONLY, O_TRACE_ITERS };

/* What --trace keeps to unless --trace-iters says otherwise: the first
 * iterations whose trace fits in about this many bytes. */
#define AR_TRACE_BUDGET (100.0 * 1e6)

static const cli_opt ar_table[] = {
    { "algo", "NAME", O_ALGO, "allreduce algorithm (default ring; see Algorithms\nbelow)" },
    { "size", "BYTES", O_SIZE,
      "buffer per chip, e.g. 4096, 64K, 8M, 1G (default 8M); a\nmultiple of 4" },
    { "iters", "N", O_ITERS, "timed iterations, the median is reported (default 5)" },
    { "model-only", NULL, O_MODEL_ONLY,
      "model the schedule without moving data (fast on big\nmeshes)" },
    { "fail-during", "R,C", O_FAIL_DURING,
      "chip (R,C) dies in the middle of the first allreduce;\n"
      "the run stops, the rings are rebuilt around it, and the\n"
      "allreduce is redone (and verified) on the chips left" },
    { "fail-after", "N", O_FAIL_AFTER,
      "with --fail-during: die after sending N packets\n(default: half of its packets)" },
    CLI_OPTS_FAULTS("ITER", "WHEN: ITER (its start), ITER:N (once the\n"
                    "victim sent N packets in it) or ITER:allreduce (half of\n"
                    "its packets). A failure stops the run; the rings are\n"
                    "rebuilt and all --iters run again on the chips left"),
    CLI_OPTS_REPAIRS("iteration", "ITER"),
    { "svg", "FILE", O_SVG,
      "write a picture: mesh, holes, links coloured by bytes\n"
      "(MB), the schedule's routes and detours, legend" },
    CLI_OPT_TRACE(O_TRACE, O_TRACE_CLOCK),
    { "trace-iters", "N", O_TRACE_ITERS,
      "iterations --trace records (default: the first ones\n"
      "that fit in about 100 MB, said on stdout and in the trace)" },
    { "json", NULL, CLI_O_JSON, "print one JSON object on stdout instead of text" },
    CLI_OPT_HANG_TIMEOUT,
    { "packets-only", NULL, O_PACKETS_ONLY,
      "copy every link byte twice, through mailbox packets\n"
      "(default: a one-hop transfer is read from the sender's\n"
      "memory, one copy; see bench/README.md, Performance)" },
    CLI_OPT_RANKS,
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const ar_tables[] = { ar_table, cli_cost_table, cli_mesh_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh allreduce [--mesh RxC] [--torus] [faults] [--algo NAME]\n"
           "                        [--size BYTES] [--iters N] [--json]\n"
           "\n"
           "Sums a float32 buffer over every healthy chip, through the links, with\n"
           "inputs whose sums are exact, and checks every element of every chip.\n"
           "Prints a table in the nccl-tests style: size, count, median wall time,\n"
           "algbw = size/time, busbw = algbw * 2(P-1)/P (P = healthy chips), bytes on\n"
           "the most-loaded directed link, and #wrong. Exit 1 if any element is\n"
           "wrong, 3 if the chips hung (the stuck chips are listed on stderr).\n"
           "\n"
           "Beside the wall clock it reports modeled time on the emulated hardware\n"
           "(TPU-v3 links by default), computed from the same schedule the chips run.\n"
           "\n");
    cli_print_opts(stdout, "Options", ar_tables, 0, 2);
    cli_print_algos(stdout, "--algo");
    cli_print_opts(stdout, "Mesh and faults", ar_tables, 2, 3);
}

static int ar_opt(void *ctx, int id, const char *name, const char *v)
{
    ar_args *a = ctx;
    switch (id) {
    case O_ALGO:
        if (!ftm_allreduce_find(v) && strcmp(v, "auto") != 0)
            return cli_unknown_algo(CMD, "--algo", v, 1);
        a->algo = v;
        return 0;
    case O_SIZE:
        return cli_parse_buffer_size(CMD, v, &a->bytes);
    case O_ITERS:
        a->iters_given = 1;
        if (cli_parse_int(v, 1, 100000, &a->iters))
            return cli_usage_error(CMD, "--iters %s: expected a whole number 1..100000", v);
        return 0;
    case O_MODEL_ONLY: a->model_only = 1; return 0;
    case O_PACKETS_ONLY: a->packets_only = 1; return 0;
    case O_FAIL_DURING: a->fail_during = v; return 0;
    case O_FAIL_AFTER:
        if (cli_parse_int(v, 0, 1000000000L, &a->fail_after))
            return cli_usage_error(CMD, "--fail-after %s: expected a packet count 0..1000000000", v);
        a->fail_after_given = 1;
        return 0;
    case O_SVG: a->svg = v; return 0;
    case O_TRACE: a->trace = v; return 0;
    case O_TRACE_CLOCK:
        a->trace_clock_given = 1;
        return cli_trace_clock(CMD, v, &a->trace_clock);
    case O_TRACE_ITERS:
        if (cli_parse_int(v, 1, 100000, &a->trace_iters))
            return cli_usage_error(CMD, "--trace-iters %s: expected a whole number 1..100000", v);
        return 0;
    case CLI_O_KILL: case CLI_O_FAULTS: case CLI_O_RANDOM_KILLS: case CLI_O_REPAIR:
    case CLI_O_REPAIR_AFTER:
        return cli_faults_set(CMD, &a->f, id, v);
    case CLI_O_LINK_GBPS: case CLI_O_HOP_US: case CLI_O_HBM_GBPS:
        return cli_cost_set(CMD, id, v, &a->cp);
    default:
        return cli_mesh_set(&a->o, id, name, v);
    }
}

/* Refuses runs whose chip buffers would not fit in this machine's memory
 * (every healthy chip holds its own copy of the buffer, plus the expected
 * sums), instead of letting the kernel kill the process. The 3/4 leaves
 * room for the schedule, the mailboxes and everything else. */
static int check_memory(const ftm_mesh *m, size_t bytes)
{
    double have = cli_mem_have(), stacks = cli_mem_stacks(m);
    int block = cli_ranks_block_chips(m), local = cli_ranks_on_node(); /* one process's chips */
    double need = ((double)block + 1) * (double)bytes + stacks;
    if (have > 0 && need * local > CLI_MEM_SHARE * have && block < ftm_mesh_healthy_count(m))
        return cli_usage_error(CMD, "--size %zu with %d chips per rank needs about %.1f GiB per "
                               "rank (chip buffers%s), %d rank%s on this machine: more than 3/4 "
                               "of the %.1f GiB available: spread the ranks over more machines, or use a "
                               "smaller --size or mesh, or --model-only", bytes, block,
                               need / (1 << 30), stacks > 0 ? " and thread stacks" : "", local,
                               cli_s(local), have / (1 << 30));
    if (have > 0 && need > CLI_MEM_SHARE * have)
        return cli_usage_error(CMD, "--size %zu on %d chips needs about %.1f GiB: chip buffers %.1f "
                               "GiB%s, more than 3/4 of the %.1f GiB this process may use: use a "
                               "smaller --size or mesh, or --model-only", bytes,
                               ftm_mesh_healthy_count(m), need / (1 << 30),
                               (need - stacks) / (1 << 30), cli_mem_stacks_note(stacks),
                               have / (1 << 30));
    return 0;
}

/* Everything a run holds; released by ar_free whatever happened. */
typedef struct ar_run {
    ftm_mesh m;
    ftm_mesh m0;             /* the mesh the run starts on (its static faults) */
    int have_m0;
    int have_mesh, have_sched, fail_chip;
    cli_out svg, trace;      /* --svg, --trace: written whole or not at all */
    ftm_trace *rec;          /* --trace: what every chip did */
    long traced;             /* --trace: iterations recorded per run */
    ftm_sched sched;
    ftm_sched_ctx ctx;       /* how schedules are built (packed with --model-only) */
    ftm_sched_meter meter;   /* model_budgeted's budget */
    ftm_cost_result cost;
    uint64_t *link_bytes;
    ftm_allreduce_result r;
} ar_run;

static void ar_free(ar_run *x)
{
    if (x->have_sched)
        ftm_sched_free(&x->sched);
    free(x->link_bytes);
    cli_out_discard(&x->svg);   /* not committed: the run failed */
    cli_out_discard(&x->trace);
    ftm_trace_destroy(x->rec);
    ftm_allreduce_result_free(&x->r);
    if (x->have_mesh)
        ftm_mesh_free(&x->m);
    if (x->have_m0)
        ftm_mesh_free(&x->m0);
}

/* The fault script, checked before the run: --kill, --faults,
 * --random-kills, and --fail-during R,C [--fail-after N] as the event
 * R,C@0:N (R,C@0:allreduce without --fail-after): it runs as that --kill
 * does, with the same record, log line and trace. */
static int build_script(ar_args *a, ar_run *x)
{
    ftm_fault_event sf = { .kind = FTM_FAULT_CHIP, .phase = FTM_PHASE_ALLREDUCE,
                           .pkts = a->fail_after_given ? a->fail_after : FTM_FAULT_MID };
    if (!cli_faults_any(&a->f) && x->fail_chip < 0)
        return cli_faults_none(CMD, &a->f);
    if (a->model_only)
        return cli_usage_error(CMD, "%s needs chips running: drop --model-only",
                               x->fail_chip >= 0 ? "--fail-during"
                               : a->f.nkill     ? "--kill"
                               : a->f.file      ? "--faults"
                               : a->f.random    ? "--random-kills"
                               : a->f.nrepair   ? "--repair" : "--repair-after");
    char name[64];
    if (x->fail_chip >= 0) {
        sf.r = ftm_mesh_row(&x->m, x->fail_chip);
        sf.c = ftm_mesh_col(&x->m, x->fail_chip);
    }
    snprintf(name, sizeof name, "--fail-during %d,%d", sf.r, sf.c);
    int rc = cli_faults_build(CMD, &a->f, &x->m, FTM_FAULT_ALLREDUCE, a->iters,
                              cli_fault_seed(&a->o),
                              x->fail_chip >= 0 ? &sf : NULL, name, &a->script);
    if (rc)
        return rc;
    a->have_script = 1;
    return 0;
}

/* Cross-option checks on the built mesh; opens --svg before any work. */
static int validate(ar_args *a, ar_run *x)
{
    int rc = cli_build_mesh(&a->o, &x->m);
    if (rc)
        return rc;
    x->have_mesh = 1;
    x->fail_chip = -1;
    if (ftm_mesh_copy(&x->m0, &x->m))
        return cli_error(CMD, "out of memory");
    x->have_m0 = 1;
    if (a->fail_during && (rc = cli_fail_during_chip(CMD, &x->m, a->fail_during, &x->fail_chip)))
        return rc;
    if (a->fail_after_given && !a->fail_during)
        return cli_usage_error(CMD, "--fail-after needs --fail-during R,C");
    if (!a->model_only && (rc = check_memory(&x->m, a->bytes)))
        return rc;
    if (a->fail_during && a->model_only)
        return cli_usage_error(CMD, "--fail-during needs chips running: drop --model-only");
    if ((rc = build_script(a, x)))
        return rc;
    cli_mesh_warn_seeds(&a->o, 0, a->f.random_given);
    if (a->model_only && a->iters_given)
        cli_warn(CMD, "--iters has no effect with --model-only");
    if (a->model_only && a->o.hang_timeout_s > 0)
        cli_warn(CMD, "--hang-timeout has no effect with --model-only");
    if (a->model_only && a->packets_only)
        cli_warn(CMD, "--packets-only has no effect with --model-only (no data moves)");
    if (a->trace_clock_given && !a->trace)
        cli_warn(CMD, "--trace-clock has no effect without --trace FILE");
    if (a->trace && a->model_only)
        return cli_usage_error(CMD, "--trace records chips running: drop --model-only");
    if (a->trace && (rc = cli_ranks_refuse_trace(CMD, "allreduce")))
        return rc;
    if (a->trace_iters && !a->trace) /* as every option with no effect: a warning */
        cli_warn(CMD, "--trace-iters has no effect without --trace FILE");
    if ((rc = cli_in_claim(CMD, "--faults", a->f.file)))
        return rc;
    if (a->svg && (rc = cli_out_open(CMD, &x->svg, "--svg", a->svg)))
        return rc;
    if (a->trace && (rc = cli_trace_open(CMD, &x->trace, a->trace, &x->rec, x->m.nchips)))
        return rc;
    return 0;
}

/* Refuses (CLI_EXIT_USAGE, after printing the estimate) what the built
 * schedule says would not fit: the schedule with the cost model's replay,
 * then (unless --model-only) the schedule with the run's buffers, records
 * and runtime. Same 3/4 rule as check_memory. */
static int check_hold(const ar_args *a, const char *algo, const ar_run *x)
{
    double have = cli_mem_have(), G = 1 << 30;
    double sched = (double)ftm_sched_mem_bytes(&x->sched);
    double model = (double)ftm_cost_mem_bytes(&x->sched, &x->m);
    ftm_allreduce_opts ao = { .algo = algo, .count = a->bytes / 4, .iters = (int)a->iters,
                              .hang_timeout_s = a->o.hang_timeout_s,
                              .packets_only = a->packets_only, .sched = &x->sched };
    double run = a->model_only ? 0 : (double)ftm_allreduce_mem_estimate(&x->m, &ao, NULL) - sched +
                                     cli_mem_stacks(&x->m);
    /* over MPI ranks a process holds the buffers of its block only */
    run -= a->model_only ? 0 : (double)(ftm_mesh_healthy_count(&x->m) -
                                        cli_ranks_block_chips(&x->m)) * (double)a->bytes;
    double need = (sched + (run > model ? run : model)) * cli_ranks_on_node();
    if (have > 0 && need > CLI_MEM_SHARE * have)
        return cli_usage_error(CMD, "--algo %s on %d chips needs about %.1f GiB (schedule %.1f, "
                               "model %.1f, run %.1f GiB), more than 3/4 of the %.1f GiB this "
                               "process may use: use a smaller mesh%s or another --algo", algo,
                               ftm_mesh_healthy_count(&x->m), need / G, sched / G, model / G,
                               run / G, have / G, a->model_only ? "" : ", --size, --model-only");
    return 0;
}

/* The refusal of a build that would not fit (CLI_EXIT_USAGE, after
 * printing the estimate), or 0 where it would: a dry run of the builders
 * (ftm_allreduce_plan_mem) gives the most that the schedules and their
 * replays will hold at once, and the schedule a run keeps beside its
 * buffers, records and runtime, against have (the memory this process
 * may use, as the budget had it); at_least is the peak of a build a
 * budget stopped (0: nothing was built). Same 3/4 rule. Called only when
 * a refusal is likely: the dry run costs about a quarter of the build. */
static int refuse_plan(const ar_args *a, const char *algo, const ar_run *x, double have,
                       double at_least)
{
    double G = 1 << 30;
    size_t peak, sb;
    int err = ftm_allreduce_plan_mem(&x->ctx, algo, &x->m, a->bytes / 4, FTM_RED_SUM_F32, &peak,
                                     &sb);
    if (err)
        return err;
    ftm_allreduce_opts ao = { .algo = algo, .count = a->bytes / 4, .iters = (int)a->iters,
                              .hang_timeout_s = a->o.hang_timeout_s, .packets_only = a->packets_only };
    double build = (double)peak > at_least ? (double)peak : at_least, sched = (double)sb;
    double run = a->model_only ? 0 : (double)ftm_allreduce_mem_estimate(&x->m, &ao, NULL) + sched +
                                     cli_mem_stacks(&x->m);
    double need = build > run ? build : run;
    if (need > CLI_MEM_SHARE * have)
        return cli_usage_error(CMD, "--algo %s on %d chips would need about %.2f GiB (schedule "
                               "%.2f, building and modeling it %.2f, run %.2f GiB), more than "
                               "3/4 of the %.1f GiB this process may use: %s; use a smaller "
                               "mesh%s or another --algo", algo, ftm_mesh_healthy_count(&x->m),
                               need / G, sched / G, build / G, run / G, have / G,
                               at_least > 0 ? "stopped before it grew past the limit"
                                            : "nothing was built",
                               a->model_only ? "" : ", --size, --model-only");
    return 0;
}

/* Builds the algorithm's schedule into x->sched and models it; a positive
 * return is an exit code (already reported). */
static int model_schedule(const ar_args *a, const char *algo, ar_run *x)
{
    if (x->have_sched)
        ftm_sched_free(&x->sched);
    x->have_sched = 0;
    int err = ftm_allreduce_find(algo)->build(&x->sched, &x->ctx, &x->m, a->bytes / 4,
                                              FTM_RED_SUM_F32);
    if (err)
        return err;
    x->have_sched = 1;
    if ((err = check_hold(a, algo, x)))
        return err;
    return ftm_cost_sched(&x->sched, &x->m, &a->cp, &x->cost, x->link_bytes);
}

/* The cost model for the fault records: s, or algo's schedule on m (with
 * --algo auto, auto's pick for m: the one a rebuild on m runs). */
typedef struct model_ctx {
    const ar_args *a;
    const char *algo;
} model_ctx;

static double modeled(void *ctx, const ftm_sched *s, const ftm_mesh *m)
{
    const model_ctx *mc = ctx;
    const ar_args *a = mc->a;
    ftm_sched own;
    ftm_cost_result c;
    ftm_sched_ctx bc = { .cost = &a->cp };
    const char *name;
    if (!s && strcmp(a->algo, "auto") == 0)
        return ftm_allreduce_auto(&bc, m, a->bytes / 4, FTM_RED_SUM_F32, &a->cp, &name, &c)
                   ? 0 : c.time_s;
    if (!s && ftm_allreduce_find(mc->algo)->build(&own, &bc, m, a->bytes / 4, FTM_RED_SUM_F32))
        return 0;
    int err = ftm_cost_sched(s ? s : &own, m, &mc->a->cp, &c, NULL);
    if (!s)
        ftm_sched_free(&own);
    return err ? 0 : c.time_s;
}

static int model_schedule(const ar_args *a, const char *algo, ar_run *x);

/* With --algo auto, auto's picks of the runs that started once `seen`
 * noticed records (failures, repairs) were made: runs[*next..]. */
static void print_picks(const ar_args *a, const ftm_allreduce_result *r, int seen, int *next)
{
    for (; *next < r->nruns && r->runs[*next].after <= seen; ++*next) {
        const ftm_allreduce_ran *u = &r->runs[*next];
        if (*next > 0 && strcmp(a->algo, "auto") == 0)
            printf("# auto: picked %s for the %d healthy chip%s (lowest modeled time)\n",
                   u->algo, u->chips, cli_s(u->chips));
        /* a schedule that changed: to another algorithm's, or back */
        const char *was = *next > 0 ? r->runs[*next - 1].schedule : NULL;
        if (was && u->schedule && strcmp(was, u->schedule) && u->fallback)
            printf("# from here %s runs the %s schedule on the %d healthy chip%s (%s)\n",
                   u->algo, u->schedule, u->chips, cli_s(u->chips), u->fallback);
        else if (was && u->schedule && strcmp(was, u->schedule) && !strcmp(u->algo, u->schedule) &&
                 strcmp(a->algo, "auto"))
            printf("# from here %s runs its own schedule on the %d healthy chip%s\n", u->algo,
                   u->chips, cli_s(u->chips));
    }
}

/* Links that died unnoticed and are still dead after the last run, which
 * its mesh (the router's) counts on: "; also dead, unnoticed: ...". */
static void unnoticed_links(const ftm_allreduce_result *r, const ftm_mesh *m)
{
    char list[512] = "";
    int n = 0;
    for (int i = 0; i < r->nevents; i++) {
        const ftm_fault_record *e = &r->events[i];
        const ftm_fault_event *v = &e->event;
        int later = 0;
        if (e->noticed || e->repair || v->kind != FTM_FAULT_LINK)
            continue;
        for (int k = i + 1; k < r->nevents && !later; k++)
            later = !strcmp(r->events[k].what, e->what); /* noticed or repaired since */
        int a = ftm_mesh_chip(m, v->r, v->c), d = ftm_mesh_dir_to(m, a, ftm_mesh_chip(m, v->r2, v->c2));
        size_t u = strlen(list);
        if (!later && d >= 0 && ftm_mesh_link_live(m, a, d) && ++n)
            snprintf(list + u, sizeof list - u, "%s%s", u ? ", " : "", e->what);
    }
    if (n)
        printf("; also dead, unnoticed (the router still counts on %s): %s", n > 1 ? "them" : "it",
               list);
}

/* The records in the order they were told: the noticed ones as the
 * runs noticed them (a link that died unnoticed is told when a later run
 * finds it, after a repair in between, as train tells it); the dead
 * links nothing needed, recorded after the runs, each moved back to its
 * iteration among them. Logged with auto's pick after each rebuild. */
static void log_events(const ar_args *a, ftm_allreduce_result *r)
{
    for (int i = 1; i < r->nevents; i++)
        for (int k = i; k > 0 && !r->events[k].noticed && r->events[k].when < r->events[k - 1].when;
             k--) {
            ftm_fault_record t = r->events[k];
            r->events[k] = r->events[k - 1];
            r->events[k - 1] = t;
        }
    int seen = 0, next = 0;
    for (int i = 0; i < r->nevents && !a->o.json; i++) {
        print_picks(a, r, seen, &next);
        cli_faults_print(stdout, &r->events[i], FTM_FAULT_ALLREDUCE);
        seen += r->events[i].noticed;
    }
    if (!a->o.json)
        print_picks(a, r, seen, &next);
}

/* A run with a fault script: events logged as they are recovered from,
 * then the figures of the last run, on the mesh it ran on, of the
 * algorithm it ran (*algo: with auto, the pick for that mesh). */
static int run_script(const ar_args *a, const char **algo, ftm_allreduce_opts *ao, ar_run *x)
{
    model_ctx mc = { a, *algo };
    ao->faults = &a->script;
    ao->modeled_s = modeled;
    ao->modeled_ctx = &mc;
    ao->repick = strcmp(a->algo, "auto") == 0;
    int err = ftm_allreduce_run(&x->m, ao, &x->r);
    ao->modeled_s = NULL;
    ao->modeled_ctx = NULL; /* mc ends here */
    log_events(a, &x->r);
    if (!err && x->r.nruns > 0)
        *algo = x->r.runs[x->r.nruns - 1].algo;
    if (!err && x->r.have_mesh_after) {
        memcpy(x->m.chip_dead, x->r.mesh_after.chip_dead, (size_t)x->m.nchips);
        memcpy(x->m.link_dead, x->r.mesh_after.link_dead, (size_t)x->m.nchips * FTM_NDIRS);
        err = model_schedule(a, *algo, x);
        char flags[2048];
        int cut = cli_faults_record_flags(&a->o, &x->m, flags, sizeof flags);
        if (!a->o.json) { /* the header's faults line is the run's start */
            printf("# the figures below are from the last run, over its %d chip%s; its mesh's "
                   "faults:%s", ftm_mesh_healthy_count(&x->m),
                   cli_s(ftm_mesh_healthy_count(&x->m)), flags[0] ? flags : " none");
            if (cut)
                printf(" ... and %d more", cut);
            unnoticed_links(&x->r, &x->m);
            printf("\n");
        }
    }
    if (err && x->r.detail[0])
        fprintf(stderr, "ftmesh %s: %s\n", CMD, x->r.detail);
    return err;
}

static int run_chips(const ar_args *a, const char **algo, ar_run *x);

/* Model first (it picks the algorithm for auto; --model-only stops
 * there), then one schedule run by the chips; after a death, model the
 * mesh the recovery ran on, since the figures are that run's. With
 * --model-only every schedule is packed (sched.h): nothing runs it, and
 * the cost model reads the packed form op for op the same. */
static int run(const ar_args *a, const char **algo, ar_run *x)
{
    x->ctx.packed = a->model_only;
    x->ctx.cost = &a->cp; /* the schedule chooses for the parameters it is modeled by */
    return run_chips(a, algo, x);
}

/* auto's pick, then the schedule, built and modeled. */
static int pick_and_model(const ar_args *a, const char **algo, ar_run *x)
{
    int err;
    if (strcmp(*algo, "auto") == 0) {
        if ((err = ftm_allreduce_auto(&x->ctx, &x->m, a->bytes / 4, FTM_RED_SUM_F32, &a->cp, algo,
                                      &x->cost)))
            return err;
        if (!a->o.json)
            printf("# auto: picked %s (lowest modeled time)\n", *algo);
    }
    return model_schedule(a, *algo, x);
}

/* pick_and_model under a budget of 3/4 of the memory this process may use
 * (sched.h): a build or replay that would grow past it stops there, before
 * allocating, and is refused with refuse_plan's estimate; none when no
 * limit is known. A run whose buffers and records alone would not fit is
 * refused before anything is built (its schedule is checked with them
 * after the build, check_hold). */
static int model_budgeted(const ar_args *a, const char **algo, ar_run *x)
{
    double have = cli_mem_have();
    const char *asked = *algo;
    if (have <= 0)
        return pick_and_model(a, algo, x);
    ftm_allreduce_opts ao = { .algo = asked, .count = a->bytes / 4, .iters = (int)a->iters,
                              .hang_timeout_s = a->o.hang_timeout_s, .packets_only = a->packets_only };
    if (!a->model_only && (double)ftm_allreduce_mem_estimate(&x->m, &ao, NULL) +
                              cli_mem_stacks(&x->m) > CLI_MEM_SHARE * have)
        return refuse_plan(a, asked, x, have, 0);
    size_t limit = (size_t)(CLI_MEM_SHARE * have);
    x->meter = (ftm_sched_meter){ .limit = limit };
    x->ctx.meter = &x->meter; /* x->sched, built under it, counts its free there */
    int err = pick_and_model(a, algo, x);
    x->ctx.meter = NULL;
    size_t peak = x->meter.peak;
    if (err != FTM_ENOMEM || peak <= limit)
        return err; /* not the budget's refusal: reported as it is */
    if (x->have_sched)
        ftm_sched_free(&x->sched);
    x->have_sched = 0;
    *algo = asked;
    err = refuse_plan(a, asked, x, have, (double)peak);
    return err ? err : FTM_ENOMEM;
}

/* --trace's bound: the first --trace-iters iterations, or those that fit
 * in AR_TRACE_BUDGET; a run whose one iteration does not fit is refused
 * unless --trace-iters asks for it. */
static int trace_bound(const ar_args *a, ar_run *x)
{
    if (!x->rec)
        return 0;
    double one = cli_trace_exec_bytes(&x->sched);
    long k = a->trace_iters;
    if (!k && one > AR_TRACE_BUDGET)
        return cli_usage_error(CMD, "--trace: one iteration of this run records about %.1f GB "
                               "of trace, past the %.0f MB --trace keeps to: give --trace-iters 1 "
                               "to write it all the same, or a smaller mesh or --size",
                               one / 1e9, AR_TRACE_BUDGET / 1e6);
    if (!k)
        k = (long)(AR_TRACE_BUDGET / (one > 1 ? one : 1));
    x->traced = k < a->iters ? k : a->iters;
    ftm_trace_set_max_exec(x->rec, (int)x->traced);
    if (x->traced < a->iters && !a->o.json)
        printf("# trace: the first %ld of %ld iterations (about %.0f MB; --trace-iters N for "
               "more)\n", x->traced, a->iters, one * (double)x->traced / 1e6);
    else if (x->traced < a->iters) /* stdout is the JSON's */
        cli_warn(CMD, "--trace records the first %ld of %ld iterations (about %.0f MB; "
                 "--trace-iters N for more)", x->traced, a->iters, one * (double)x->traced / 1e6);
    return 0;
}

static int run_chips(const ar_args *a, const char **algo, ar_run *x)
{
    x->link_bytes = calloc((size_t)x->m.nchips * FTM_NDIRS, sizeof *x->link_bytes);
    if (!x->link_bytes)
        return FTM_ENOMEM;
    int err = model_budgeted(a, algo, x);
    if (err || a->model_only || (err = trace_bound(a, x)))
        return err;
    ftm_allreduce_opts ao = { .algo = *algo, .count = a->bytes / 4, .iters = (int)a->iters,
                              .hang_timeout_s = a->o.hang_timeout_s,
                              .packets_only = a->packets_only, .sched = &x->sched,
                              .trace = x->rec, .cost = &a->cp };
    if (a->have_script) /* --fail-during too: one of its events */
        return run_script(a, algo, &ao, x);
    return ftm_allreduce_run(&x->m, &ao, &x->r);
}

/* What the reports read: the options and the run. */
typedef struct ar_report {
    const ar_args *a;
    const ar_run *x;
    const char *algo; /* what ran: auto's pick, or the one asked for */
} ar_report;

/* The trace's own keys: what ran (as allreduce --json names it), the
 * faults and the iterations it holds. */
static void trace_meta(cli_json *j, void *ctx)
{
    const ar_report *r = ctx;
    cli_ar_json_what(j, r->a, r->algo, r->x->have_sched ? &r->x->sched : NULL);
    cli_faults_record_json(j, &r->a->o, &r->x->m0);
    /* every kill and repair of the run, each naming what died or came back
     * (the trace's own "chip dies" events mark only the chips that died
     * mid-transfer) */
    cli_faults_json(j, r->x->r.events, r->x->r.nevents);
    cli_json_int(j, "iterations", r->a->iters);
    cli_json_int(j, "iterations_traced", r->x->traced);
    if (r->x->traced < r->a->iters)
        cli_json_str(j, "note", "only the first iterations_traced iterations of each run are "
                                "recorded (ftmesh allreduce --trace-iters N for more)");
}

/* The picture: link heat, and the schedule's routes (for ring and bidir
 * all of them, for the others the detours only, to stay legible). */
static int write_svg(const ar_args *a, const char *algo, ar_run *x)
{
    char title[128];
    snprintf(title, sizeof title, "allreduce %s", algo);
    ftm_svg_picture q = { .title = title, .sched = x->have_sched ? &x->sched : NULL,
                          .link_bytes = x->link_bytes,
                          .only_detours = strcmp(algo, "ring") && strcmp(algo, "bidir") };
    (void)a;
    return cli_out_commit(CMD, &x->svg, ftm_svg_draw(x->svg.f, &x->m, &q));
}

int cli_allreduce(int argc, char **argv)
{
    ar_args a = { .algo = "ring", .bytes = 8u << 20, .iters = 5 };
    ftm_cost_defaults(&a.cp);
    ar_run x;
    memset(&x, 0, sizeof x);
    x.svg.slot = x.trace.slot = -1;
    x.r.died_chip = -1;
    if (cli_mesh_opts_init(&a.o, CMD, argc))
        return CLI_EXIT_FAIL;
    if (cli_faults_init(&a.f, argc)) {
        cli_mesh_opts_free(&a.o);
        return CLI_EXIT_FAIL;
    }
    const char *algo = NULL;
    int rc = cli_parse(CMD, argc, argv, ar_tables, ar_opt, &a), err = 0;
    if (rc == CLI_HELP)
        usage();
    if (!rc)
        rc = validate(&a, &x);
    if ((rc = cli_ranks_agree(rc))) /* a --faults file some rank could not read */
        goto out;
    if ((rc = cli_ranks_same(CMD, &x.m, a.have_script ? &a.script : NULL, NULL)))
        goto out;
    cli_warn_flush(); /* the checks passed: before the run */
    algo = a.algo;
    x.r.chips = ftm_mesh_healthy_count(&x.m);
    err = run(&a, &algo, &x);
    if (err == FTM_EHANG) {
        cli_print_stuck(CMD, &x.m, x.r.stuck, x.r.nstuck, a.o.hang_timeout_s);
        rc = CLI_EXIT_HANG;
    } else if (err > 0) { /* an exit code, already reported */
        rc = err;
    } else if (err) {
        rc = cli_error(CMD, "%s", ftm_strerror(err));
    } else {
        (a.o.json ? cli_ar_report_json : cli_ar_report_text)(&a, &x.m0, &x.m, algo, x.have_sched ? &x.sched : NULL,
                                                 &x.r, &x.cost);
        rc = x.r.wrong ? CLI_EXIT_FAIL : 0;
        int out; /* an output's failure, or its pipe's reader gone (CLI_EXIT_PIPE) */
        if (x.svg.f && (out = write_svg(&a, algo, &x)))
            rc = out;
        if (x.trace.f && (out = cli_trace_close(CMD, &x.trace, x.rec, &x.m, a.trace_clock, &a.cp,
                                                trace_meta, &(ar_report){ &a, &x, algo })))
            rc = out;
    }
out:
    ar_free(&x);
    cli_mesh_opts_free(&a.o);
    cli_faults_free(&a.f);
    if (a.have_script)
        ftm_fault_script_free(&a.script);
    return rc == CLI_HELP ? 0 : rc;
}
