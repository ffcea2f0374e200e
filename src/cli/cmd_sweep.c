/* ftmesh sweep: the paper's scenario table, modeled. */
#include "cli.h"
#include "ftmesh/sweep.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>

static const cli_opt sweep_table[] = {
    { "json", NULL, CLI_O_JSON, "one JSON object: {\"rows\":[{...}, ...]}" },
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const sweep_tables[] = { sweep_table, cli_cost_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh sweep [--json] [--link-GBps X] [--hop-us X] [--hbm-GBps X]\n"
           "\n"
           "The scenario of Kumar & Jouppi (2020), modeled on TPU-v3 links: 16x32 and\n"
           "32x32 tori (512 and 1024 chips), healthy and with one dead host, one dead\n"
           "chip, one dead link; the fp32 gradients of ResNet-50 (25.6M parameters)\n"
           "and BERT-large (340M); every allreduce algorithm. Columns: modeled time,\n"
           "busbw, overhead vs the same algorithm on the healthy torus, and vs the\n"
           "best algorithm on the healthy torus. '*' marks the fastest algorithm of\n"
           "each (mesh, scenario, model). No data moves, so it takes seconds.\n"
           "\n");
    cli_print_opts(stdout, "Options", sweep_tables, 0, 2);
}

typedef struct sweep_args {
    int json;
    ftm_cost_params cp;
} sweep_args;

static int sweep_opt(void *ctx, int id, const char *name, const char *val)
{
    sweep_args *a = ctx;
    (void)name;
    if (id == CLI_O_JSON) {
        a->json = 1;
        return 0;
    }
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
    cli_json_int(j, "chips", r->chips);
    cli_json_num(j, "modeled_s", "%.9g", r->time_s);
    cli_json_num(j, "modeled_algbw_GBps", "%.6g", r->algbw_GBps);
    cli_json_num(j, "modeled_busbw_GBps", "%.6g", r->busbw_GBps);
    cli_json_u64(j, "max_link_bytes", r->max_link_bytes);
    cli_json_num(j, "overhead_pct", "%.4f", r->overhead_pct);
    cli_json_num(j, "overhead_vs_best_healthy_pct", "%.4f", r->overhead_best_pct);
    cli_json_bool(j, "best", r->best);
    cli_json_end(j);
}

static void report(const sweep_args *a, const ftm_sweep_row *rows, int n)
{
    const ftm_cost_params *cp = &a->cp;
    if (a->json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_obj(&j, NULL);
        cli_json_num(&j, "link_GBps", "%g", cp->link_Bps / 1e9);
        cli_json_num(&j, "hop_us", "%g", cp->hop_s * 1e6);
        cli_json_num(&j, "hbm_GBps", "%g", cp->hbm_Bps / 1e9);
        cli_json_begin_arr(&j, "rows");
        for (int i = 0; i < n; i++)
            json_row(&j, &rows[i]);
        cli_json_end(&j);
        cli_json_end(&j);
        return;
    }
    printf("# modeled allreduce, TPU-v3 links %.0f GB/s/direction, %.2f us/hop, HBM %.0f GB/s\n"
           "%-6s %-10s %-10s %-14s %5s %11s %11s %9s %9s\n",
           cp->link_Bps / 1e9, cp->hop_s * 1e6, cp->hbm_Bps / 1e9, "torus", "scenario", "model",
           "algo", "chips", "time(ms)", "busbw(GB/s)", "ovh(%)", "ovh_best");
    for (int i = 0; i < n; i++) {
        const ftm_sweep_row *r = &rows[i];
        char mesh[32];
        snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
        printf("%-6s %-10s %-10s %-13s%s %5d %11.3f %11.1f %9.2f %9.2f\n", mesh, r->scenario,
               r->model, r->algo, r->best ? "*" : " ", r->chips, r->time_s * 1e3,
               r->busbw_GBps, r->overhead_pct, r->overhead_best_pct);
    }
}

int cli_sweep(int argc, char **argv)
{
    sweep_args a = { 0 };
    ftm_cost_defaults(&a.cp);
    int rc = cli_parse("sweep", argc, argv, sweep_tables, sweep_opt, &a);
    if (rc == CLI_HELP) {
        usage();
        return 0;
    }
    if (rc)
        return rc;
    ftm_sweep_row *rows = NULL;
    int n = 0, err = ftm_sweep_run(&a.cp, &rows, &n);
    if (err)
        return cli_error("sweep", "%s", ftm_strerror(err));
    report(&a, rows, n);
    free(rows);
    return 0;
}
