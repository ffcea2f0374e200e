/* ftmesh allreduce: run, verify and time an allreduce on the emulated mesh. */
#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/runtime.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
           "  --algo NAME    allreduce algorithm (default ring):\n");
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        printf("                   %-6s %s\n", a->name, a->summary);
    printf("  --size BYTES   buffer per chip, e.g. 4096, 64K, 8M, 1G (default 8M); a\n"
           "                 multiple of 4\n"
           "  --iters N      timed iterations, the median is reported (default 5)\n"
           "\n%s", cli_mesh_help);
}

static void print_stuck(const ftm_mesh *m, const ftm_allreduce_result *r, double timeout)
{
    fprintf(stderr, "ftmesh allreduce: hang: no progress for %.1f s; %d chip%s stuck:\n",
            timeout, r->nstuck, r->nstuck == 1 ? "" : "s");
    for (int i = 0; i < r->nstuck && i < 32; i++) {
        const ftm_stuck *s = &r->stuck[i];
        fprintf(stderr, "  chip (%d,%d): %s step %d: waiting to %s %zu bytes %s (%d,%d) on link %s\n",
                ftm_mesh_row(m, s->chip), ftm_mesh_col(m, s->chip), s->phase, s->step,
                s->wait == FTM_WAIT_RECV ? "receive" : "send", s->missing,
                s->wait == FTM_WAIT_RECV ? "from" : "to", ftm_mesh_row(m, s->peer),
                ftm_mesh_col(m, s->peer), ftm_dir_name(s->dir));
    }
}

int cli_allreduce(int argc, char **argv);
int cli_allreduce(int argc, char **argv)
{
    cli_mesh_opts o;
    cli_mesh_opts_init(&o, "allreduce", argc);
    const char *algo = "ring", *v;
    size_t bytes = 8u << 20;
    long iters = 5;
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
            else if (!ftm_allreduce_find(v))
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
    ftm_allreduce_opts ao = { algo, bytes / 4, (int)iters, o.hang_timeout_s, 0 };
    ftm_allreduce_result r;
    int err = ftm_allreduce_run(&m, &ao, &r);
    double timeout = o.hang_timeout_s > 0 ? o.hang_timeout_s : 5.0;
    if (err == FTM_EHANG) {
        print_stuck(&m, &r, timeout);
        rc = 3;
    } else if (err) {
        fprintf(stderr, "ftmesh allreduce: %s\n", ftm_strerror(err));
        rc = CLI_EXIT_FAIL;
    } else {
        int P = r.chips;
        double algbw = r.wall_s > 0 ? (double)bytes / r.wall_s / 1e9 : 0;
        double busbw = P > 1 ? algbw * 2.0 * (P - 1) / P : 0;
        if (o.json) {
            printf("{\"algo\":");
            cli_json_str(algo);
            printf(",\"mesh\":\"%dx%d\",\"torus\":%s,\"chips\":%d,\"bytes\":%zu,\"count\":%zu,"
                   "\"iters\":%ld,\"wall_s\":%.9g,\"wall_min_s\":%.9g,\"wall_max_s\":%.9g,"
                   "\"algbw_GBps\":%.6g,\"busbw_GBps\":%.6g,\"max_link_bytes\":%llu,"
                   "\"total_link_bytes\":%llu,\"links_match_schedule\":%s,\"wrong\":%llu}\n",
                   m.rows, m.cols, m.torus ? "true" : "false", P, bytes, bytes / 4, iters,
                   r.wall_s, r.wall_min_s, r.wall_max_s, algbw, busbw,
                   (unsigned long long)r.max_link_bytes, (unsigned long long)r.total_link_bytes,
                   r.links_match_sched ? "true" : "false", (unsigned long long)r.wrong);
        } else {
            printf("# ftmesh allreduce: %dx%d %s, %d healthy chips, algo %s, %ld iterations\n",
                   m.rows, m.cols, m.torus ? "torus" : "mesh", P, algo, iters);
            printf("#%13s %12s %7s %12s %11s %11s %14s %8s\n", "size(B)", "count", "type",
                   "time(us)", "algbw(GB/s)", "busbw(GB/s)", "maxlink(B)", "#wrong");
            printf("%14zu %12zu %7s %12.1f %11.3f %11.3f %14llu %8llu\n", bytes, bytes / 4, "float",
                   r.wall_s * 1e6, algbw, busbw, (unsigned long long)r.max_link_bytes,
                   (unsigned long long)r.wrong);
            printf("# %s: every element of every chip %s the exact sum\n",
                   r.wrong ? "FAILED" : "verified", r.wrong ? "does not equal" : "equals");
        }
        rc = r.wrong ? CLI_EXIT_FAIL : 0;
    }
    ftm_allreduce_result_free(&r);
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&o);
    return rc;
}
