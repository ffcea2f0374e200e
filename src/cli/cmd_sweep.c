/* ftmesh sweep: the paper's scenario table, modeled. */
#include "cli.h"
#include "ftmesh/sweep.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    printf("usage: ftmesh sweep [--json] [--link-GBps X] [--hop-us X] [--hbm-GBps X]\n"
           "       ftmesh sweep --throughput [options]   (training throughput; see --throughput --help)\n"
           "\n"
           "The scenario of Kumar & Jouppi (2020), modeled on TPU-v3 links: 16x32 and\n"
           "32x32 tori (512 and 1024 chips), healthy and with one dead host, one dead\n"
           "chip, one dead link; the fp32 gradients of ResNet-50 (25.6M parameters)\n"
           "and BERT-large (340M); every allreduce algorithm. Columns: modeled time,\n"
           "busbw, overhead vs the same algorithm on the healthy torus, and vs the\n"
           "best algorithm on the healthy torus. '*' marks the fastest algorithm of\n"
           "each (mesh, scenario, model). No data moves, so it takes seconds.\n"
           "\n"
           "  --json         one JSON object: {\"rows\":[{...}, ...]}\n"
           "  --link-GBps X, --hop-us X, --hbm-GBps X   cost parameters (see allreduce)\n");
}

int cli_sweep(int argc, char **argv);
int cli_sweep(int argc, char **argv)
{
    ftm_cost_params cp;
    ftm_cost_defaults(&cp);
    int json = 0, rc = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--throughput") == 0)
            return cli_sweep_throughput(argc, argv);
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (cli_is(a, "--link-GBps") || cli_is(a, "--hop-us") || cli_is(a, "--hbm-GBps")) {
            rc = cli_cost_opt("sweep", argc, argv, &i, &cp);
        } else {
            rc = cli_usage_error("sweep", "unknown option %s (see ftmesh sweep --help)", a);
        }
    }
    if (rc)
        return rc;
    ftm_sweep_row *rows = NULL;
    int n = 0, err = ftm_sweep_run(&cp, &rows, &n);
    if (err) {
        fprintf(stderr, "ftmesh sweep: %s\n", ftm_strerror(err));
        return CLI_EXIT_FAIL;
    }
    if (json)
        printf("{\"link_GBps\":%g,\"hop_us\":%g,\"hbm_GBps\":%g,\"rows\":[", cp.link_Bps / 1e9,
               cp.hop_s * 1e6, cp.hbm_Bps / 1e9);
    else
        printf("# modeled allreduce, TPU-v3 links %.0f GB/s/direction, %.2f us/hop, HBM %.0f GB/s\n"
               "%-6s %-10s %-10s %-14s %5s %11s %11s %9s %9s\n",
               cp.link_Bps / 1e9, cp.hop_s * 1e6, cp.hbm_Bps / 1e9, "torus", "scenario", "model",
               "algo", "chips", "time(ms)", "busbw(GB/s)", "ovh(%)", "ovh_best");
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        if (json) {
            printf("%s{\"mesh\":\"%dx%d\",\"scenario\":\"%s\",\"fault\":\"%s\",\"model\":\"%s\","
                   "\"bytes\":%zu,\"algo\":\"%s\",\"chips\":%d,\"modeled_s\":%.9g,"
                   "\"modeled_algbw_GBps\":%.6g,\"modeled_busbw_GBps\":%.6g,\"max_link_bytes\":%llu,"
                   "\"overhead_pct\":%.4f,\"overhead_vs_best_healthy_pct\":%.4f,\"best\":%s}",
                   i ? "," : "", r->rows, r->cols, r->scenario, r->fault, r->model, r->bytes,
                   r->algo, r->chips, r->time_s, r->algbw_GBps, r->busbw_GBps,
                   (unsigned long long)r->max_link_bytes, r->overhead_pct, r->overhead_best_pct,
                   r->best ? "true" : "false");
        } else {
            char mesh[16];
            snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
            printf("%-6s %-10s %-10s %-13s%s %5d %11.3f %11.1f %9.2f %9.2f\n", mesh, r->scenario,
                   r->model, r->algo, r->best ? "*" : " ", r->chips, r->time_s * 1e3,
                   r->busbw_GBps, r->overhead_pct, r->overhead_best_pct);
        }
    }
    if (json)
        printf("]}\n");
    free(rows);
    return 0;
}
