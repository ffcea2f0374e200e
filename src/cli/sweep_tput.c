/* ftmesh sweep --throughput: training throughput at pod scale. */
#include "cli.h"
#include "ftmesh/throughput.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    printf("usage: ftmesh sweep --throughput [--json] [--overlap F] [--chip-TFLOPS X]\n"
           "                    [--resnet50-GFLOP X] [--bert-GFLOP X]\n"
           "                    [--resnet50-batch-512 N] [--resnet50-batch-1024 N]\n"
           "                    [--bert-batch-512 N] [--bert-batch-1024 N]\n"
           "                    [--algos A,B,...] [--link-GBps X] [--hop-us X] [--hbm-GBps X]\n"
           "\n"
           "Per training step on the 16x32 and 32x32 tori: every healthy chip computes its\n"
           "share of the global batch (dead chips' examples move to the survivors), then\n"
           "the gradient allreduce runs (modeled; the fastest of --algos); --overlap F\n"
           "hides that fraction of it under the backward pass. Scenarios: healthy, dead\n"
           "host, dead chip, dead link, two dead hosts. Columns: step time, examples/s,\n"
           "impact (throughput lost against the healthy torus, %%).\n"
           "\n"
           "  --overlap F            0..1 (default 0)\n"
           "  --chip-TFLOPS X        sustained per chip (default 50; TPU-v3 peak 123 bf16)\n"
           "  --resnet50-GFLOP X     per training example (default 24.6)\n"
           "  --bert-GFLOP X         per training example (default 1044.5: 6 x 340M x 512)\n"
           "  --resnet50-batch-512 N, --resnet50-batch-1024 N   global batch (16384, 32768)\n"
           "  --bert-batch-512 N, --bert-batch-1024 N           global batch (4096, 8192)\n"
           "  --algos LIST           allreduce candidates (default 2d,2d-concurrent)\n");
}

/* Parses a double option's value into *x (scaled). */
static int dbl_opt(int argc, char **argv, int *i, const char *name, double lo, double hi,
                   double scale, double *x)
{
    const char *v = cli_value("sweep", argc, argv, i, name);
    double d;
    if (!v)
        return CLI_EXIT_USAGE;
    if (cli_parse_double(v, lo, hi, &d))
        return cli_usage_error("sweep", "%s %s: expected a number in [%g, %g]", name, v, lo, hi);
    *x = d * scale;
    return 0;
}

static int batch_opt(int argc, char **argv, int *i, const char *name, long *out)
{
    const char *v = cli_value("sweep", argc, argv, i, name);
    if (!v)
        return CLI_EXIT_USAGE;
    if (cli_parse_int(v, 1, 100000000, out))
        return cli_usage_error("sweep", "%s %s: expected a global batch of 1 .. 100000000", name, v);
    return 0;
}

/* --algos A,B: names into p (pointers into a copy kept in *buf). */
static int algos_opt(int argc, char **argv, int *i, ftm_tput_params *p, char **buf)
{
    const char *v = cli_value("sweep", argc, argv, i, "--algos");
    if (!v)
        return CLI_EXIT_USAGE;
    free(*buf);
    *buf = strdup(v);
    if (!*buf)
        return cli_usage_error("sweep", "--algos: out of memory");
    p->nalgos = 0;
    for (char *save = NULL, *t = strtok_r(*buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!ftm_allreduce_find(t))
            return cli_usage_error("sweep", "--algos: unknown algorithm '%s' (see ftmesh allreduce --help)", t);
        if (p->nalgos == FTM_TPUT_MAXALGOS)
            return cli_usage_error("sweep", "--algos: at most %d algorithms", FTM_TPUT_MAXALGOS);
        p->algos[p->nalgos++] = t;
    }
    if (!p->nalgos)
        return cli_usage_error("sweep", "--algos: expected a comma-separated list of algorithms");
    return 0;
}

static int parse(int argc, char **argv, ftm_tput_params *p, int *json, char **abuf)
{
    static const char *const bname[2][2] = { { "--resnet50-batch-512", "--resnet50-batch-1024" },
                                             { "--bert-batch-512", "--bert-batch-1024" } };
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        int hit = 0;
        for (int md = 0; md < 2; md++)
            for (int mi = 0; mi < 2; mi++)
                if (!hit && cli_is(a, bname[md][mi])) {
                    hit = 1;
                    rc = batch_opt(argc, argv, &i, bname[md][mi], &p->global_batch[md][mi]);
                }
        if (hit || strcmp(a, "--throughput") == 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return usage(), -1;
        else if (strcmp(a, "--json") == 0)
            *json = 1;
        else if (cli_is(a, "--overlap"))
            rc = dbl_opt(argc, argv, &i, "--overlap", 0, 1, 1, &p->overlap);
        else if (cli_is(a, "--chip-TFLOPS"))
            rc = dbl_opt(argc, argv, &i, "--chip-TFLOPS", 1e-6, 1e6, 1e12, &p->chip_flops);
        else if (cli_is(a, "--resnet50-GFLOP"))
            rc = dbl_opt(argc, argv, &i, "--resnet50-GFLOP", 1e-6, 1e9, 1e9, &p->flops_per_example[0]);
        else if (cli_is(a, "--bert-GFLOP"))
            rc = dbl_opt(argc, argv, &i, "--bert-GFLOP", 1e-6, 1e9, 1e9, &p->flops_per_example[1]);
        else if (cli_is(a, "--algos"))
            rc = algos_opt(argc, argv, &i, p, abuf);
        else if (cli_is(a, "--link-GBps") || cli_is(a, "--hop-us") || cli_is(a, "--hbm-GBps"))
            rc = cli_cost_opt("sweep", argc, argv, &i, &p->cost);
        else
            rc = cli_usage_error("sweep", "unknown option %s (see ftmesh sweep --throughput --help)", a);
    }
    return rc;
}

static void print_rows(const ftm_tput_params *p, const ftm_tput_row *rows, int n, int json)
{
    if (json)
        printf("{\"chip_TFLOPS\":%g,\"overlap\":%g,\"resnet50_GFLOP\":%g,\"bert_GFLOP\":%g,"
               "\"link_GBps\":%g,\"hop_us\":%g,\"hbm_GBps\":%g,\"rows\":[",
               p->chip_flops / 1e12, p->overlap, p->flops_per_example[0] / 1e9,
               p->flops_per_example[1] / 1e9, p->cost.link_Bps / 1e9, p->cost.hop_s * 1e6,
               p->cost.hbm_Bps / 1e9);
    else
        printf("# training step = compute + %.2f x allreduce; chip %.1f TFLOP/s sustained\n"
               "%-6s %-10s %-14s %5s %7s %-13s %10s %10s %9s %12s %8s\n",
               1.0 - p->overlap, p->chip_flops / 1e12, "torus", "model", "scenario", "chips",
               "batch", "algo", "compute_ms", "allred_ms", "step_ms", "examples/s", "impact%");
    for (int i = 0; i < n; i++) {
        const ftm_tput_row *r = &rows[i];
        if (json)
            printf("%s{\"mesh\":\"%dx%d\",\"model\":\"%s\",\"scenario\":\"%s\",\"fault\":\"%s\","
                   "\"chips\":%d,\"global_batch\":%ld,\"algo\":\"%s\",\"compute_s\":%.9g,"
                   "\"allreduce_s\":%.9g,\"step_s\":%.9g,\"examples_per_s\":%.9g,"
                   "\"impact_pct\":%.4f}",
                   i ? "," : "", r->rows, r->cols, r->model, r->scenario, r->fault, r->chips,
                   r->global_batch, r->algo, r->compute_s, r->allreduce_s, r->step_s,
                   r->examples_per_s, r->impact_pct);
        else {
            char mesh[16];
            snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
            printf("%-6s %-10s %-14s %5d %7ld %-13s %10.3f %10.3f %9.3f %12.0f %8.2f\n", mesh,
                   r->model, r->scenario, r->chips, r->global_batch, r->algo, r->compute_s * 1e3,
                   r->allreduce_s * 1e3, r->step_s * 1e3, r->examples_per_s, r->impact_pct);
        }
    }
    if (json)
        printf("]}\n");
}

int cli_sweep_throughput(int argc, char **argv)
{
    ftm_tput_params p;
    ftm_tput_defaults(&p);
    int json = 0;
    char *abuf = NULL;
    int rc = parse(argc, argv, &p, &json, &abuf);
    if (rc) {
        free(abuf);
        return rc < 0 ? 0 : rc;
    }
    ftm_tput_row *rows = NULL;
    int n = 0, err = ftm_tput_run(&p, &rows, &n);
    if (err) {
        fprintf(stderr, "ftmesh sweep: %s\n", ftm_strerror(err));
        free(abuf);
        return CLI_EXIT_FAIL;
    }
    print_rows(&p, rows, n, json);
    free(rows);
    free(abuf);
    return 0;
}
