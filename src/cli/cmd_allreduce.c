/* ftmesh allreduce: run, verify and time an allreduce on the emulated mesh. */
#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/router.h"
#include "ftmesh/svg.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
           "\n"
           "  --algo NAME    allreduce algorithm (default ring):\n");
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        printf("                   %-13s %s\n", a->name, a->summary);
    printf("                   %-13s %s\n", "auto", "the algorithm with the lowest modeled time (printed)");
    printf("  --size BYTES   buffer per chip, e.g. 4096, 64K, 8M, 1G (default 8M); a\n"
           "                 multiple of 4\n"
           "  --iters N      timed iterations, the median is reported (default 5)\n"
           "  --model-only   model the schedule without moving data (fast on big meshes)\n"
           "  --fail-during R,C  chip (R,C) dies in the middle of the first allreduce;\n"
           "                 the run stops, the rings are rebuilt around it, and the\n"
           "                 allreduce is redone (and verified) on the chips left\n"
           "  --fail-after N with --fail-during: die after sending N packets (default:\n"
           "                 half of its packets)\n"
           "  --svg FILE     write a picture: mesh, holes, links coloured by bytes (MB),\n"
           "                 the schedule's routes and detours, legend\n"
           "  --link-GBps X  modeled bandwidth per link per direction (default 100)\n"
           "  --hop-us X     modeled latency per hop in microseconds (default 1)\n"
           "  --hbm-GBps X   modeled memory bandwidth for reductions (default 900)\n"
           "\n%s", cli_mesh_help);
}

/* Refuses runs whose chip buffers would not fit in this machine's memory
 * (every healthy chip holds its own copy of the buffer, plus the expected
 * sums), instead of letting the kernel kill the process. */
static int check_memory(const char *cmd, const ftm_mesh *m, const char *algo, size_t bytes)
{
    (void)algo;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    double have = pages > 0 && psize > 0 ? (double)pages * (double)psize : 0;
    double need = ((double)ftm_mesh_healthy_count(m) + 1) * (double)bytes;
    if (have > 0 && need > 0.75 * have)
        return cli_usage_error(cmd, "--size %zu on %d chips needs about %.1f GiB of chip buffers, "
                               "more than 3/4 of this machine's %.1f GiB: use a smaller --size "
                               "or mesh, or --model-only", bytes, ftm_mesh_healthy_count(m),
                               need / (1 << 30), have / (1 << 30));
    return 0;
}

/* Builds the algorithm's schedule into s and models it. */
static int model_schedule(const ftm_mesh *m, const char *algo, size_t count,
                          const ftm_cost_params *cp, ftm_cost_result *cost, uint64_t *link_bytes,
                          ftm_sched *s)
{
    int err = ftm_allreduce_find(algo)->build(s, m, count, FTM_RED_SUM_F32);
    if (err)
        return err;
    err = ftm_cost_sched(s, m, cp, cost, link_bytes);
    if (err)
        ftm_sched_free(s);
    return err;
}

/* The picture: link heat, and the schedule's routes (for ring and bidir
 * all of them, for the others the detours only, to stay legible). */
static int write_svg(FILE *f, const char *path, const ftm_mesh *m, const char *algo,
                     const uint64_t *link_bytes, const ftm_sched *sched)
{
    char title[128];
    snprintf(title, sizeof title, "allreduce %s", algo);
    ftm_svg_picture q = { .title = title, .sched = sched, .link_bytes = link_bytes,
                          .only_detours = strcmp(algo, "ring") && strcmp(algo, "bidir") };
    int err = ftm_svg_draw(f, m, &q);
    if (fclose(f) && !err)
        err = FTM_EIO;
    if (err)
        fprintf(stderr, "ftmesh allreduce: --svg %s: %s\n", path, ftm_strerror(err));
    return err ? -1 : 0;
}

static void report(const cli_mesh_opts *o, const ftm_mesh *m, const char *algo, size_t bytes,
                   long iters, int model_only, const ftm_allreduce_result *r,
                   const ftm_cost_result *cost)
{
    char died[32] = "null";
    if (r->died_chip >= 0)
        snprintf(died, sizeof died, "[%d,%d]", ftm_mesh_row(m, r->died_chip), ftm_mesh_col(m, r->died_chip));
    int P = r->chips;
    double f = P > 1 ? 2.0 * (P - 1) / P : 0;
    double algbw = r->wall_s > 0 ? (double)bytes / r->wall_s / 1e9 : 0;
    double m_algbw = cost->time_s > 0 ? (double)bytes / cost->time_s / 1e9 : 0;
    if (o->json) {
        printf("{\"algo\":");
        cli_json_str(algo);
        printf(",\"mesh\":\"%dx%d\",\"torus\":%s,\"chips\":%d,\"bytes\":%zu,\"count\":%zu,"
               "\"model_only\":%s,\"modeled_s\":%.9g,\"modeled_algbw_GBps\":%.6g,"
               "\"modeled_busbw_GBps\":%.6g,\"modeled_max_link_bytes\":%llu",
               m->rows, m->cols, m->torus ? "true" : "false", P, bytes, bytes / 4,
               model_only ? "true" : "false", cost->time_s, m_algbw, m_algbw * f,
               (unsigned long long)cost->max_link_bytes);
        if (!model_only)
            printf(",\"iters\":%ld,\"wall_s\":%.9g,\"wall_min_s\":%.9g,\"wall_max_s\":%.9g,"
                   "\"algbw_GBps\":%.6g,\"busbw_GBps\":%.6g,\"max_link_bytes\":%llu,"
                   "\"total_link_bytes\":%llu,\"links_match_schedule\":%s,\"wrong\":%llu,"
                   "\"died_during_run\":%s",
                   iters, r->wall_s, r->wall_min_s, r->wall_max_s, algbw, algbw * f,
                   (unsigned long long)r->max_link_bytes, (unsigned long long)r->total_link_bytes,
                   r->links_match_sched ? "true" : "false", (unsigned long long)r->wrong, died);
        printf("}\n");
        return;
    }
    printf("# ftmesh allreduce: %dx%d %s, %d healthy chips, algo %s%s\n", m->rows, m->cols,
           m->torus ? "torus" : "mesh", P, algo, model_only ? ", model only" : "");
    if (!model_only)
        printf("#   %ld iterations; wall = this machine, median\n", iters);
    printf("#%13s %12s %7s %12s %11s %11s %12s %11s %11s %14s %8s\n", "size(B)", "count", "type",
           "wall(us)", "algbw(GB/s)", "busbw(GB/s)", "model(us)", "algbw(GB/s)", "busbw(GB/s)",
           "maxlink(B)", "#wrong");
    char wall[3][32];
    if (model_only) {
        for (int i = 0; i < 3; i++)
            snprintf(wall[i], sizeof wall[i], "-");
    } else {
        snprintf(wall[0], sizeof wall[0], "%.1f", r->wall_s * 1e6);
        snprintf(wall[1], sizeof wall[1], "%.3f", algbw);
        snprintf(wall[2], sizeof wall[2], "%.3f", algbw * f);
    }
    char wrong[32];
    snprintf(wrong, sizeof wrong, model_only ? "-" : "%llu", (unsigned long long)r->wrong);
    printf("%14zu %12zu %7s %12s %11s %11s %12.1f %11.2f %11.2f %14llu %8s\n", bytes, bytes / 4,
           "float", wall[0], wall[1], wall[2], cost->time_s * 1e6, m_algbw, m_algbw * f,
           (unsigned long long)cost->max_link_bytes, wrong);
    if (!model_only)
        printf("# %s: every element of every chip %s the exact sum\n",
               r->wrong ? "FAILED" : "verified", r->wrong ? "does not equal" : "equals");
}

int cli_allreduce(int argc, char **argv);
int cli_allreduce(int argc, char **argv)
{
    cli_mesh_opts o;
    cli_mesh_opts_init(&o, "allreduce", argc);
    const char *algo = "ring", *v, *svg = NULL;
    size_t bytes = 8u << 20;
    long iters = 5;
    int model_only = 0, fail_r = -1, fail_c = -1;
    long fail_after = 0;
    ftm_cost_params cp;
    ftm_cost_defaults(&cp);
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            cli_mesh_opts_free(&o);
            return 0;
        }
        int k = cli_mesh_opt(&o, argc, argv, &i);
        if (k < 0) {
            rc = CLI_EXIT_USAGE;
        } else if (k > 0) {
            continue;
        } else if (cli_is(a, "--algo")) {
            if (!(v = cli_value(o.cmd, argc, argv, &i, "--algo")))
                rc = CLI_EXIT_USAGE;
            else if (!ftm_allreduce_find(v) && strcmp(v, "auto") != 0)
                rc = cli_usage_error(o.cmd, "--algo %s: unknown algorithm (see ftmesh allreduce --help)", v);
            else
                algo = v;
        } else if (cli_is(a, "--size")) {
            if (!(v = cli_value(o.cmd, argc, argv, &i, "--size")))
                rc = CLI_EXIT_USAGE;
            else if (cli_parse_size(v, &bytes) || bytes % 4 || bytes == 0)
                rc = cli_usage_error(o.cmd, "--size %s: expected a positive multiple of 4 bytes, e.g. 4096, 64K, 8M", v);
        } else if (cli_is(a, "--iters")) {
            if (!(v = cli_value(o.cmd, argc, argv, &i, "--iters")))
                rc = CLI_EXIT_USAGE;
            else if (cli_parse_int(v, 1, 100000, &iters))
                rc = cli_usage_error(o.cmd, "--iters %s: expected a whole number 1..100000", v);
        } else if (cli_is(a, "--model-only") && !strchr(a, '=')) {
            model_only = 1;
        } else if (cli_is(a, "--fail-during")) {
            if (!(v = cli_value(o.cmd, argc, argv, &i, "--fail-during")))
                rc = CLI_EXIT_USAGE;
            else if (ftm_mesh_parse_coord(v, &fail_r, &fail_c))
                rc = cli_usage_error(o.cmd, "--fail-during %s: expected R,C, e.g. 3,4", v);
        } else if (cli_is(a, "--fail-after")) {
            if (!(v = cli_value(o.cmd, argc, argv, &i, "--fail-after")))
                rc = CLI_EXIT_USAGE;
            else if (cli_parse_int(v, 1, 1000000000L, &fail_after))
                rc = cli_usage_error(o.cmd, "--fail-after %s: expected a packet count >= 1", v);
        } else if (cli_is(a, "--svg")) {
            if (!(svg = cli_value(o.cmd, argc, argv, &i, "--svg")))
                rc = CLI_EXIT_USAGE;
        } else if (cli_is(a, "--link-GBps") || cli_is(a, "--hop-us") || cli_is(a, "--hbm-GBps")) {
            rc = cli_cost_opt(o.cmd, argc, argv, &i, &cp);
        } else {
            rc = cli_usage_error(o.cmd, "unknown option %s (see ftmesh allreduce --help)", a);
        }
    }
    ftm_mesh m;
    if (!rc)
        rc = cli_build_mesh(&o, &m);
    if (rc) {
        cli_mesh_opts_free(&o);
        return rc;
    }
    if (fail_r >= 0 && (fail_r >= m.rows || fail_c >= m.cols ||
                        !ftm_mesh_alive(&m, ftm_mesh_chip(&m, fail_r, fail_c)))) {
        rc = cli_usage_error(o.cmd, "--fail-during %d,%d: not a healthy chip of the %dx%d mesh",
                             fail_r, fail_c, m.rows, m.cols);
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return rc;
    }
    if (fail_after && fail_r < 0) {
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return cli_usage_error(o.cmd, "--fail-after needs --fail-during R,C");
    }
    if (!model_only && (rc = check_memory(o.cmd, &m, algo, bytes)) != 0) {
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return rc;
    }
    if (fail_r >= 0 && model_only) {
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return cli_usage_error(o.cmd, "--fail-during needs chips running: drop --model-only");
    }
    /* Open the picture's file now: a bad path should not waste a long run. */
    FILE *svgf = svg ? fopen(svg, "w") : NULL;
    if (svg && !svgf) {
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return cli_usage_error(o.cmd, "--svg %s: cannot create the file", svg);
    }
    /* Model first: it picks the algorithm for auto, and --model-only
     * stops there. */
    ftm_cost_result cost;
    uint64_t *link_bytes = calloc((size_t)m.nchips * FTM_NDIRS, sizeof *link_bytes);
    int err = link_bytes ? 0 : FTM_ENOMEM;
    if (!err && strcmp(algo, "auto") == 0) {
        err = ftm_cost_auto(&m, bytes / 4, FTM_RED_SUM_F32, &cp, &algo, &cost);
        if (!err && !o.json)
            printf("# auto: picked %s (lowest modeled time)\n", algo);
    }
    /* One schedule: modeled here, then run by the chips. */
    ftm_sched sched;
    int have_sched = 0;
    if (!err)
        have_sched = !(err = model_schedule(&m, algo, bytes / 4, &cp, &cost, link_bytes, &sched));
    ftm_allreduce_result r;
    memset(&r, 0, sizeof r);
    r.died_chip = -1;
    r.chips = ftm_mesh_healthy_count(&m);
    if (!err && !model_only) {
        ftm_allreduce_opts ao = { .algo = algo, .count = bytes / 4, .iters = (int)iters,
                                  .hang_timeout_s = o.hang_timeout_s, .fail_during = fail_r >= 0,
                                  .fail_chip = fail_r >= 0 ? ftm_mesh_chip(&m, fail_r, fail_c) : -1,
                                  .fail_after_pkts = (uint64_t)fail_after, .sched = &sched };
        err = ftm_allreduce_run(&m, &ao, &r);
        if (r.died_chip >= 0) {
            /* The figures below are the recovery run's: model that mesh. */
            m.chip_dead[r.died_chip] = 1;
            ftm_sched_free(&sched);
            have_sched = 0;
            if (!err)
                have_sched = !(err = model_schedule(&m, algo, bytes / 4, &cp, &cost, link_bytes,
                                                    &sched));
            if (!o.json)
                printf("# chip (%d,%d) died during the first allreduce; rings rebuilt around it;\n"
                       "# the figures below are from the recovery run over the %d chips left\n",
                       fail_r, fail_c, ftm_mesh_healthy_count(&m));
        } else if (fail_r >= 0 && !o.json) {
            printf("# chip (%d,%d) finished before its failure point (--fail-after)\n", fail_r, fail_c);
        }
    }
    double timeout = o.hang_timeout_s > 0 ? o.hang_timeout_s : 5.0;
    if (err == FTM_EHANG) {
        cli_print_stuck(o.cmd, &m, r.stuck, r.nstuck, timeout);
        rc = CLI_EXIT_HANG;
    } else if (err) {
        fprintf(stderr, "ftmesh allreduce: %s\n", ftm_strerror(err));
        rc = CLI_EXIT_FAIL;
    } else {
        report(&o, &m, algo, bytes, iters, model_only, &r, &cost);
        rc = r.wrong ? CLI_EXIT_FAIL : 0;
        if (svgf && write_svg(svgf, svg, &m, algo, link_bytes, have_sched ? &sched : NULL))
            rc = CLI_EXIT_FAIL;
        svgf = NULL; /* write_svg closed it */
    }
    if (have_sched)
        ftm_sched_free(&sched);
    free(link_bytes);
    if (svgf)
        fclose(svgf);
    ftm_allreduce_result_free(&r);
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&o);
    return rc;
}
