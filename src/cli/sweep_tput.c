/* ftmesh sweep --throughput: training throughput at pod scale (the options
 * are in cmd_sweep.c's table). */
#include "cli.h"
#include "ftmesh/throughput.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --algos A,B: names into p (pointers into a copy kept in *abuf). */
static int set_algos(const char *cmd, const char *v, struct ftm_tput_params *p, char **abuf)
{
    free(*abuf);
    *abuf = strdup(v);
    if (!*abuf)
        return cli_usage_error(cmd, "--algos: out of memory");
    p->nalgos = 0;
    if (!v[0] || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
        return cli_usage_error(cmd, "--algos %s: an empty name; expected names separated by "
                               "single commas, e.g. 2d-lines,trees", v);
    for (char *save = NULL, *t = strtok_r(*abuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "auto"))
            return cli_usage_error(cmd, "--algos: auto is not a candidate: each row already "
                                   "takes the fastest of --algos; name algorithms instead");
        if (!ftm_allreduce_find(t))
            return cli_unknown_algo(cmd, "--algos", t, 0);
        int twice = 0;
        for (int i = 0; i < p->nalgos && !twice; i++)
            twice = !strcmp(p->algos[i], t);
        if (twice) { /* built once */
            cli_warn(cmd, "--algos: %s given twice: it is one candidate", t);
            continue;
        }
        if (p->nalgos == FTM_TPUT_MAXALGOS)
            return cli_usage_error(cmd, "--algos: at most %d algorithms", FTM_TPUT_MAXALGOS);
        p->algos[p->nalgos++] = t;
    }
    if (!p->nalgos)
        return cli_usage_error(cmd, "--algos: expected a comma-separated list of algorithms");
    return 0;
}

int cli_tput_set(const char *cmd, int k, const char *name, const char *val,
                 struct ftm_tput_params *p, char **abuf)
{
    static const double lo[4] = { 0, 1e-6, 1e-6, 1e-6 }, hi[4] = { 1, 1e6, 1e9, 1e9 };
    static const double scale[4] = { 1, 1e12, 1e9, 1e9 };
    if (k == 8)
        return set_algos(cmd, val, p, abuf);
    if (k == 9) {
        if (strcmp(val, "global") && strcmp(val, "per-chip"))
            return cli_usage_error(cmd, "--%s %s: want global or per-chip", name, val);
        p->per_chip = !strcmp(val, "per-chip");
        return 0;
    }
    if (k >= 4) { /* the 512- and 1024-chip pods: at least an example per chip */
        long n, least = (k - 4) % 2 ? 1024 : 512;
        if (cli_parse_int(val, least, 100000000, &n))
            return cli_usage_error(cmd, "--%s %s: expected a global batch of %ld .. 100000000 "
                                   "(an example per chip at least)", name, val, least);
        p->global_batch[(k - 4) / 2][(k - 4) % 2] = n;
        return 0;
    }
    double x;
    if (cli_parse_double(val, lo[k], hi[k], &x))
        return cli_usage_error(cmd, "--%s %s: expected a number in [%g, %g]", name, val, lo[k], hi[k]);
    x *= scale[k];
    if (k == 0)
        p->overlap = x;
    else if (k == 1)
        p->chip_flops = x;
    else
        p->flops_per_example[k - 2] = x;
    return 0;
}

static void json_rows(const struct ftm_tput_params *p, const ftm_tput_row *rows, int n)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_obj(&j, NULL);
    cli_json_num(&j, "chip_TFLOPS", "%g", p->chip_flops / 1e12);
    cli_json_num(&j, "overlap", "%g", p->overlap);
    cli_json_str(&j, "batch_policy", p->per_chip ? "per-chip" : "global");
    cli_json_num(&j, "resnet50_GFLOP", "%g", p->flops_per_example[0] / 1e9);
    cli_json_num(&j, "bert_GFLOP", "%g", p->flops_per_example[1] / 1e9);
    cli_json_num(&j, "link_GBps", "%.9g", p->cost.link_Bps / 1e9);
    cli_json_num(&j, "hop_us", "%.9g", p->cost.hop_s * 1e6);
    cli_json_num(&j, "hbm_GBps", "%.9g", p->cost.hbm_Bps / 1e9);
    /* the healthy global batches (--resnet50-batch-512 ...) and --algos */
    cli_json_int(&j, "resnet50_batch_512", p->global_batch[0][0]);
    cli_json_int(&j, "resnet50_batch_1024", p->global_batch[0][1]);
    cli_json_int(&j, "bert_batch_512", p->global_batch[1][0]);
    cli_json_int(&j, "bert_batch_1024", p->global_batch[1][1]);
    cli_json_begin_arr(&j, "algos");
    for (int i = 0; i < p->nalgos; i++)
        cli_json_str(&j, NULL, p->algos[i]);
    cli_json_end(&j);
    cli_json_begin_arr(&j, "rows");
    for (int i = 0; i < n; i++) {
        const ftm_tput_row *r = &rows[i];
        char mesh[32];
        snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
        cli_json_begin_obj(&j, NULL);
        cli_json_str(&j, "mesh", mesh);
        cli_json_str(&j, "model", r->model);
        cli_json_str(&j, "scenario", r->scenario);
        cli_json_str(&j, "fault", r->fault);
        cli_json_int(&j, "chips", r->chips);
        cli_json_int(&j, "global_batch", r->global_batch);
        cli_json_int(&j, "examples_busiest_chip", r->busiest);
        cli_json_str(&j, "algo", r->algo);
        cli_json_str(&j, "schedule", r->schedule);
        if (r->fallback)
            cli_json_str(&j, "fallback", r->fallback);
        cli_json_num(&j, "compute_s", "%.9g", r->compute_s);
        cli_json_num(&j, "allreduce_s", "%.9g", r->allreduce_s);
        cli_json_num(&j, "step_s", "%.9g", r->step_s);
        cli_json_num(&j, "examples_per_s", "%.9g", r->examples_per_s);
        cli_json_num(&j, "impact_pct", "%.4f", r->impact_pct);
        cli_faults_record_json_flags(&j, r->fault, r->rows, r->cols, 1);
        cli_json_end(&j);
    }
    cli_json_end(&j);
    cli_json_end(&j);
}

static void text_rows(const struct ftm_tput_params *p, const ftm_tput_row *rows, int n)
{
    char hide[64] = "";
    if (p->overlap > 0)
        snprintf(hide, sizeof hide, " - min(%.2f x allreduce, 2/3 compute)", p->overlap);
    printf("# training step = compute + %sallreduce%s; chip %.1f TFLOP/s sustained\n"
           "# compute: the busiest chip's whole examples (max/chip); %s\n"
           "%-6s %-10s %-14s %5s %7s %7s %-20s %10s %10s %9s %12s %8s\n",
           p->overlap > 0 ? "" : "1.00 x ", hide, p->chip_flops / 1e12,
           p->per_chip ? "with dead chips each survivor keeps its healthy share (--batch-policy per-chip)"
                       : "the global batch stays (--batch-policy global)",
           "torus", "model", "scenario", "chips", "batch", "max/chip", "algo", "compute_ms",
           "allred_ms", "step_ms", "examples/s", "impact%");
    for (int i = 0; i < n; i++) {
        const ftm_tput_row *r = &rows[i];
        char mesh[32], algo[64];
        snprintf(mesh, sizeof mesh, "%dx%d", r->rows, r->cols);
        if (strcmp(r->schedule, r->algo)) /* it ran another's schedule: that was timed */
            snprintf(algo, sizeof algo, "%s (%s)", r->algo, r->schedule);
        else
            snprintf(algo, sizeof algo, "%s", r->algo);
        printf("%-6s %-10s %-14s %5d %7ld %8ld %-20s %10.3f %10.3f %9.3f %12.0f %8.2f\n", mesh,
               r->model, r->scenario, r->chips, r->global_batch, r->busiest, algo, r->compute_s * 1e3,
               r->allreduce_s * 1e3, r->step_s * 1e3, r->examples_per_s, r->impact_pct);
    }
}

int cli_sweep_throughput(const struct ftm_tput_params *p, int json)
{
    ftm_tput_row *rows = NULL;
    int n = 0, err = ftm_tput_run(p, &rows, &n);
    if (err)
        return cli_error("sweep", "%s", ftm_strerror(err));
    if (json)
        json_rows(p, rows, n);
    else
        text_rows(p, rows, n);
    free(rows);
    return 0;
}
