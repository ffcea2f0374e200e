/* Common option parsing for the mesh commands, with one-line errors. */
#include "cli.h"
#include "ftmesh/error.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_mesh_help[] =
    "Mesh and faults:\n"
    "  --mesh RxC            mesh size, 1x1 .. 64x64 (default 8x8)\n"
    "  --torus               add wrap-around links (sides of 3 or more)\n"
    "  --fail R,C            kill chip (R,C); repeatable\n"
    "  --fail-host R,C       kill the 2x2 host whose top-left chip is (R,C); repeatable\n"
    "  --fail-link R,C-R2,C2 kill the link between two neighbours, both ways; repeatable\n"
    "  --fail-link R,C>R2,C2 kill only the direction (R,C) -> (R2,C2)\n"
    "  --random-faults K     kill K more healthy chips drawn from --seed\n"
    "  --seed S              seed for --random-faults (default 1)\n"
    "  --hang-timeout SEC    stop and report stuck chips after SEC s without progress (default 5)\n"
    "  --json                print one JSON object on stdout instead of text\n";

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ftmesh%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

void cli_mesh_opts_init(cli_mesh_opts *o, const char *cmd, int argc)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->mesh_spec = "8x8";
    o->seed = 1;
    o->fail = calloc((size_t)argc + 1, sizeof *o->fail);
    o->fail_host = calloc((size_t)argc + 1, sizeof *o->fail_host);
    o->fail_link = calloc((size_t)argc + 1, sizeof *o->fail_link);
}

void cli_mesh_opts_free(cli_mesh_opts *o)
{
    free(o->fail);
    free(o->fail_host);
    free(o->fail_link);
}

int cli_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i, const char *name)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value (see ftmesh %s --help)", name, cmd ? cmd : "");
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ULL << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ULL << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ULL << 30, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (errno || *end || v > (1ULL << 40) / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

int cli_mesh_opt(cli_mesh_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    long n;
    if (cli_is(a, "--torus") && !strchr(a, '=')) {
        o->torus = 1;
        return 1;
    }
    if (cli_is(a, "--json") && !strchr(a, '=')) {
        o->json = 1;
        return 1;
    }
#define VALUE_(name) do { if (!(v = cli_value(o->cmd, argc, argv, i, name))) return -1; } while (0)
    if (cli_is(a, "--mesh")) {
        VALUE_("--mesh");
        o->mesh_spec = v;
    } else if (cli_is(a, "--fail")) {
        VALUE_("--fail");
        o->fail[o->nfail++] = v;
    } else if (cli_is(a, "--fail-host")) {
        VALUE_("--fail-host");
        o->fail_host[o->nfail_host++] = v;
    } else if (cli_is(a, "--fail-link")) {
        VALUE_("--fail-link");
        o->fail_link[o->nfail_link++] = v;
    } else if (cli_is(a, "--random-faults")) {
        VALUE_("--random-faults");
        if (cli_parse_int(v, 0, 4095, &n)) {
            cli_usage_error(o->cmd, "--random-faults %s: expected a whole number 0..4095", v);
            return -1;
        }
        o->random_faults = (int)n;
    } else if (cli_is(a, "--seed")) {
        VALUE_("--seed");
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (errno || end == v || *end || *v == '-') {
            cli_usage_error(o->cmd, "--seed %s: expected a non-negative whole number", v);
            return -1;
        }
        o->seed = s;
    } else if (cli_is(a, "--hang-timeout")) {
        VALUE_("--hang-timeout");
        if (cli_parse_double(v, 0.01, 3600, &o->hang_timeout_s)) {
            cli_usage_error(o->cmd, "--hang-timeout %s: expected seconds between 0.01 and 3600", v);
            return -1;
        }
    } else {
        return 0;
    }
#undef VALUE_
    return 1;
}

int cli_build_mesh(const cli_mesh_opts *o, ftm_mesh *m)
{
    const char *cmd = o->cmd;
    int rows, cols, r, c, r2, c2, ow, rc;
    if (ftm_mesh_parse_size(o->mesh_spec, &rows, &cols))
        return cli_usage_error(cmd, "--mesh %s: expected RxC, e.g. 8x8", o->mesh_spec);
    if (ftm_mesh_init(m, rows, cols, o->torus))
        return cli_usage_error(cmd, "--mesh %s: sides must be 1..%d", o->mesh_spec,
                               FTM_MESH_MAX_SIDE);
    for (int k = 0; k < o->nfail; k++) {
        if (ftm_mesh_parse_coord(o->fail[k], &r, &c)) {
            rc = cli_usage_error(cmd, "--fail %s: expected R,C, e.g. 3,4", o->fail[k]);
            goto bad;
        }
        if (ftm_mesh_fail_chip(m, r, c)) {
            rc = cli_usage_error(cmd, "--fail %s: chip outside the %dx%d mesh (rows 0..%d, cols 0..%d)",
                                 o->fail[k], rows, cols, rows - 1, cols - 1);
            goto bad;
        }
    }
    for (int k = 0; k < o->nfail_host; k++) {
        if (ftm_mesh_parse_coord(o->fail_host[k], &r, &c)) {
            rc = cli_usage_error(cmd, "--fail-host %s: expected R,C (top-left chip of the 2x2 host)",
                                 o->fail_host[k]);
            goto bad;
        }
        if (ftm_mesh_fail_host(m, r, c)) {
            rc = cli_usage_error(cmd, "--fail-host %s: the 2x2 block at (%d,%d) does not fit in the %dx%d %s",
                                 o->fail_host[k], r, c, rows, cols, o->torus ? "torus" : "mesh");
            goto bad;
        }
    }
    for (int k = 0; k < o->nfail_link; k++) {
        if (ftm_mesh_parse_link(o->fail_link[k], &r, &c, &r2, &c2, &ow)) {
            rc = cli_usage_error(cmd, "--fail-link %s: expected R,C-R2,C2 (both ways) or R,C>R2,C2 (one way)",
                                 o->fail_link[k]);
            goto bad;
        }
        rc = ftm_mesh_fail_link(m, r, c, r2, c2, ow);
        if (rc == FTM_ERANGE) {
            rc = cli_usage_error(cmd, "--fail-link %s: chip outside the %dx%d mesh", o->fail_link[k], rows, cols);
            goto bad;
        }
        if (rc) {
            rc = cli_usage_error(cmd, "--fail-link %s: (%d,%d) and (%d,%d) are not neighbours, so no link joins them",
                                 o->fail_link[k], r, c, r2, c2);
            goto bad;
        }
    }
    if (o->random_faults && ftm_mesh_fail_random(m, o->random_faults, o->seed)) {
        rc = cli_usage_error(cmd, "--random-faults %d: at most %d here (%d healthy chips left, "
                             "at least one must survive)", o->random_faults,
                             ftm_mesh_healthy_count(m) - 1, ftm_mesh_healthy_count(m));
        goto bad;
    }
    int a, b;
    rc = ftm_mesh_check_connected(m, &a, &b);
    if (rc == FTM_EALLDEAD) {
        rc = cli_usage_error(cmd, "every chip is dead: remove some faults");
        goto bad;
    }
    if (rc == FTM_EPARTITION) {
        rc = cli_usage_error(cmd, "healthy chips are cut into parts: (%d,%d) cannot reach (%d,%d) over live links; "
                             "remove faults so the healthy chips stay connected",
                             ftm_mesh_row(m, a), ftm_mesh_col(m, a), ftm_mesh_row(m, b), ftm_mesh_col(m, b));
        goto bad;
    }
    return 0;
bad:
    ftm_mesh_free(m);
    return rc;
}

void cli_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

int cli_cost_opt(const char *cmd, int argc, char **argv, int *i, ftm_cost_params *p)
{
    const char *a = argv[*i];
    const char *name = cli_is(a, "--link-GBps") ? "--link-GBps"
                     : cli_is(a, "--hop-us")    ? "--hop-us" : "--hbm-GBps";
    const char *v = cli_value(cmd, argc, argv, i, name);
    double x;
    if (!v)
        return CLI_EXIT_USAGE;
    int is_hop = strcmp(name, "--hop-us") == 0;
    if (cli_parse_double(v, is_hop ? 0 : 1e-6, 1e9, &x))
        return cli_usage_error(cmd, "%s %s: expected a number %s", name, v,
                               is_hop ? ">= 0 (microseconds)" : "> 0 (GB/s)");
    if (is_hop)
        p->hop_s = x * 1e-6;
    else if (strcmp(name, "--link-GBps") == 0)
        p->link_Bps = x * 1e9;
    else
        p->hbm_Bps = x * 1e9;
    return 0;
}

void cli_print_stuck(const char *cmd, const ftm_mesh *m, const ftm_stuck *st, int n,
                     double timeout_s)
{
    fprintf(stderr, "ftmesh %s: hang: no progress for %.1f s; %d chip%s stuck:\n", cmd,
            timeout_s > 0 ? timeout_s : 5.0, n, n == 1 ? "" : "s");
    for (int i = 0; i < n && i < 32; i++) {
        const ftm_stuck *s = &st[i];
        fprintf(stderr, "  chip (%d,%d): %s step %d: waiting to %s %zu bytes %s (%d,%d) on link %s\n",
                ftm_mesh_row(m, s->chip), ftm_mesh_col(m, s->chip), s->phase, s->step,
                s->wait == FTM_WAIT_RECV ? "receive" : "send", s->missing,
                s->wait == FTM_WAIT_RECV ? "from" : "to", ftm_mesh_row(m, s->peer),
                ftm_mesh_col(m, s->peer), ftm_dir_name(s->dir));
    }
    if (n > 32)
        fprintf(stderr, "  ... and %d more\n", n - 32);
}
