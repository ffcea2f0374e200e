/* Option parsing for every command (getopt_long over cli_opt tables), the
 * shared mesh and fault options, and the mesh they describe. */
#include "cli.h"
#include "faults_cli.h" /* the ids of the repeatable fault options */
#include "ftmesh/error.h"
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"

#include <errno.h>
#include <getopt.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const cli_opt cli_mesh_table[] = {
    { "mesh", "RxC", CLI_O_MESH, "mesh size, 1x1 .. 64x64 (default 8x8)" },
    { "torus", NULL, CLI_O_TORUS, "add wrap-around links (sides of 3 or more)" },
    { "fail", "R,C", CLI_O_FAIL, "kill chip (R,C); repeatable" },
    { "fail-host", "R,C", CLI_O_FAIL_HOST,
      "kill the 2x2 host whose top-left chip is (R,C);\nrepeatable" },
    { "fail-link", "R,C-R2,C2", CLI_O_FAIL_LINK,
      "kill the link between two neighbours, both ways;\n"
      "R,C>R2,C2 kills only the direction (R,C) -> (R2,C2);\n"
      "repeatable" },
    { "random-faults", "K", CLI_O_RANDOM_FAULTS, "kill K more healthy chips, drawn from --fault-seed\n(default: --seed)" },
    { "seed", "S", CLI_O_SEED, "seed of the random draws (default 1): --random-faults\nuses it unless --fault-seed is given" },
    { "fault-seed", "S", CLI_O_FAULT_SEED,
      "seed of the random fault draws instead of --seed\n(default: --seed)" },
    { NULL, NULL, 0, NULL },
};

const cli_opt cli_cost_table[] = {
    { "link-GBps", "X", CLI_O_LINK_GBPS, "modeled GB/s per link per direction, 1e-6 to 1e9 (default 100)" },
    { "hop-us", "X", CLI_O_HOP_US, "modeled latency per hop in microseconds, 0 to 1e9 (default 1)" },
    { "hbm-GBps", "X", CLI_O_HBM_GBPS, "modeled GB/s of memory for reductions, 1e-6 to 1e9 (default 900)" },
    { NULL, NULL, 0, NULL },
};

/* Every entry of tables[0..ntables), a name taken from its first table
 * only (a command's own entry shadows a shared one). *n receives the
 * count; NULL when out of memory. */
static const cli_opt **flatten(const cli_opt *const *tables, int ntables, int *n)
{
    int cap = 1;
    for (int t = 0; t < ntables; t++)
        for (const cli_opt *o = tables[t]; o->name; o++)
            cap++;
    const cli_opt **all = malloc(sizeof *all * (size_t)cap);
    if (!all)
        return NULL;
    *n = 0;
    for (int t = 0; t < ntables; t++)
        for (const cli_opt *o = tables[t]; o->name; o++) {
            int seen = 0;
            for (int k = 0; k < *n && !seen; k++)
                seen = strcmp(all[k]->name, o->name) == 0;
            if (!seen)
                all[(*n)++] = o;
        }
    return all;
}

/* Index of the table entry o comes from. */
static int table_of(const cli_opt *const *tables, int ntables, const cli_opt *e)
{
    for (int t = 0; t < ntables; t++)
        for (const cli_opt *o = tables[t]; o->name; o++)
            if (o == e)
                return t;
    return -1;
}

void cli_print_wrapped(FILE *f, int indent, int col, const char *text)
{
    const char *w = text;
    while (*w) {
        if (*w == '\n' || *w == ' ') { /* '\n' too: the text is reflowed */
            w++;
            continue;
        }
        int len = (int)strcspn(w, " \n");
        if (col > indent && col + 1 + len > 80)
            col = fprintf(f, "\n%*s", indent, "") - 1;
        else if (col > indent)
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", len, w);
        w += len;
    }
    fputc('\n', f);
}

void cli_print_algos(FILE *f, const char *opts)
{
    fprintf(f, "\nAlgorithms (%s):\n", opts);
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++)
        cli_print_wrapped(f, 23, fprintf(f, "  %-20s ", a->name), a->summary);
    fprintf(f, "  %-20s %s\n\n", "auto", "the algorithm with the lowest modeled time (printed)");
}

void cli_print_opts(FILE *f, const char *title, const cli_opt *const *tables, int first_table,
                    int ntables)
{
    int n = 0;
    const cli_opt **all = flatten(tables, ntables, &n);
    if (!all)
        return;
    fprintf(f, "%s:\n", title);
    for (int k = 0; k < n; k++) {
        if (table_of(tables, ntables, all[k]) < first_table)
            continue;
        char head[64];
        snprintf(head, sizeof head, "--%s%s%s", all[k]->name, all[k]->arg ? " " : "",
                 all[k]->arg ? all[k]->arg : "");
        if (strlen(head) > 20)
            fprintf(f, "  %s\n  %-20s ", head, "");
        else
            fprintf(f, "  %-20s ", head);
        cli_print_wrapped(f, 23, 23, all[k]->help);
    }
    if (first_table == 0) /* cli_parse always takes it */
        fprintf(f, "  %-20s %s\n", "--help, -h", "print this text and exit");
    free(all);
}

/* The option text as typed (before any '='), for exact-name checks. */
static int typed_is(const char *typed, const char *name)
{
    size_t n = strlen(name);
    return typed[0] == '-' && typed[1] == '-' && strncmp(typed + 2, name, n) == 0 &&
           (typed[2 + n] == 0 || typed[2 + n] == '=');
}

/* One getopt_long result; 0 to go on, else the exit code. */
static int one(const char *cmd, int c, char **argv, const cli_opt **all, cli_opt_fn fn,
               void *ctx)
{
    const char *typed = argv[optind - 1];
    if (c == 'h')
        return CLI_HELP;
    if (c == ':')
        return cli_usage_error(cmd, "%s needs a value (see ftmesh %s --help)", typed, cmd);
    if (c == '?' && optopt >= 256)
        return cli_usage_error(cmd, "--%s takes no value", all[optopt - 256]->name);
    if (c == '?')
        return cli_usage_error(cmd, "unknown option %s (see ftmesh %s --help)", typed, cmd);
    const cli_opt *o = all[c - 256];
    /* "--mesh 8x8": the option is the word before its value */
    if (o->arg && optarg == argv[optind - 1] && optind >= 2)
        typed = argv[optind - 2];
    if (!typed_is(typed, o->name)) /* getopt_long accepts abbreviations */
        return cli_usage_error(cmd, "unknown option %s (see ftmesh %s --help)", typed, cmd);
    return fn(ctx, o->id, o->name, optarg);
}

/* Options that add one more each time (the faults). */
static int repeatable(int id)
{
    return id == CLI_O_FAIL || id == CLI_O_FAIL_HOST || id == CLI_O_FAIL_LINK ||
           id == CLI_O_KILL || id == CLI_O_REPAIR;
}

/* Any other option given more than once: only its last value has an
 * effect (a flag: once is enough). count[k] and last[k]: how often
 * all[k] was given, and its last value. */
static void warn_repeats(const char *cmd, const cli_opt **all, int n, const int *count,
                         char *const *last)
{
    for (int k = 0; k < n; k++) {
        if (count[k] < 2 || repeatable(all[k]->id))
            continue;
        char times[32];
        snprintf(times, sizeof times, count[k] == 2 ? "twice" : "%d times", count[k]);
        if (all[k]->arg)
            cli_warn(cmd, "--%s given %s: only the last, --%s %s, has an effect", all[k]->name,
                     times, all[k]->name, last[k]);
        else
            cli_warn(cmd, "--%s given %s: once is enough", all[k]->name, times);
    }
}

/* cli_parse; warn: also warn about options given more than once. */
static int parse(const char *cmd, int argc, char **argv, const cli_opt *const *tables,
                 cli_opt_fn fn, void *ctx, int warn)
{
    int ntables = 0, n = 0;
    while (tables[ntables])
        ntables++;
    const cli_opt **all = flatten(tables, ntables, &n);
    struct option *lo = all ? calloc((size_t)n + 2, sizeof *lo) : NULL;
    int *count = all ? calloc((size_t)n + 1, sizeof *count) : NULL;
    char **last = all ? calloc((size_t)n + 1, sizeof *last) : NULL;
    int rc = !lo || !count || !last ? cli_error(cmd, "out of memory") : 0, c, idx = 0;
    for (int k = 0; !rc && k < n; k++)
        lo[k] = (struct option){ all[k]->name, all[k]->arg ? required_argument : no_argument,
                                 NULL, 256 + k };
    if (!rc)
        lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
    opterr = 0;
    optind = 0; /* full reinitialisation (glibc) */
    /* '+': stop at the first non-option; ':': report a missing value */
    while (!rc && (c = getopt_long(argc, argv, "+:h", lo, &idx)) != -1)
        if (!(rc = one(cmd, c, argv, all, fn, ctx)) && c >= 256) {
            count[c - 256]++;
            last[c - 256] = optarg;
        }
    if (!rc && optind < argc) /* no command takes operands */
        rc = argv[optind][0] == '-' && !strcmp(argv[optind - 1], "--")
                 ? cli_usage_error(cmd, "%s after --: ftmesh %s takes no operands; drop the --",
                                   argv[optind], cmd)
             : argv[optind][0] == '-'
                 ? cli_usage_error(cmd, "unknown option %s (see ftmesh %s --help)", argv[optind], cmd)
                 : cli_usage_error(cmd, "unexpected argument %s: ftmesh %s takes options only "
                                   "(see ftmesh %s --help)", argv[optind], cmd, cmd);
    if (!rc && warn)
        warn_repeats(cmd, all, n, count, last);
    free(last);
    free(count);
    free(lo);
    free(all);
    return rc;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *const *tables,
              cli_opt_fn fn, void *ctx)
{
    return parse(cmd, argc, argv, tables, fn, ctx, 1);
}

int cli_parse_quiet(const char *cmd, int argc, char **argv, const cli_opt *const *tables,
                    cli_opt_fn fn, void *ctx)
{
    return parse(cmd, argc, argv, tables, fn, ctx, 0);
}

void cli_mesh_warn_seeds(const cli_mesh_opts *o, int seed_used, int random_kills)
{
    const char *without = random_kills < 0 ? "--random-faults"
                                           : "--random-faults or --random-kills";
    if (o->random_faults_given || random_kills > 0) {
        if (o->seed_given && o->fault_seed_given && !seed_used)
            cli_warn(o->cmd, "--seed has no effect with --fault-seed (the draws use --fault-seed)");
        return;
    }
    if (o->seed_given && !seed_used)
        cli_warn(o->cmd, "--seed has no effect without %s", without);
    if (o->fault_seed_given)
        cli_warn(o->cmd, "--fault-seed has no effect without %s", without);
}

uint64_t cli_fault_seed(const cli_mesh_opts *o)
{
    return o->fault_seed_given ? o->fault_seed : o->seed;
}

int cli_mesh_opts_init(cli_mesh_opts *o, const char *cmd, int argc)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->mesh_spec = "8x8";
    o->seed = 1;
    o->fail = calloc((size_t)argc + 1, sizeof *o->fail);
    o->fail_host = calloc((size_t)argc + 1, sizeof *o->fail_host);
    o->fail_link = calloc((size_t)argc + 1, sizeof *o->fail_link);
    if (!o->fail || !o->fail_host || !o->fail_link) {
        cli_mesh_opts_free(o);
        return cli_error(cmd, "out of memory");
    }
    return 0;
}

void cli_mesh_opts_free(cli_mesh_opts *o)
{
    free(o->fail);
    free(o->fail_host);
    free(o->fail_link);
    o->fail = o->fail_host = o->fail_link = NULL;
}

/* A number as people type it: a digit first, or a minus and a digit
 * (strtol and strtod would also take blanks, a plus sign, hex). */
static int plain_number(const char *s, int with_point)
{
    const char *d = *s == '-' ? s + 1 : s;
    if (!(*d >= '0' && *d <= '9') && !(with_point && *d == '.' && d[1] >= '0' && d[1] <= '9'))
        return 0;
    return strspn(s, with_point ? "0123456789.eE+-" : "0123456789-") == strlen(s);
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!plain_number(s, 0))
        return -1;
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
    if (!plain_number(s, 1))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) <= DBL_MIN) /* an underflow is still a number */
        errno = 0;
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
    else if (*end == 'T' || *end == 't')
        mul = 1ULL << 40, end++;
    if (mul > 1 && *end == 'i' && (end[1] == 'B' || end[1] == 'b'))
        end++; /* 8MiB: the units are binary already */
    if (*end == 'B' || *end == 'b')
        end++;
    if (errno || *end || v > SIZE_MAX / mul) /* the caller says what is too large */
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

int cli_parse_buffer_size(const char *cmd, const char *v, size_t *bytes)
{
    if (cli_parse_size(v, bytes) || *bytes % 4 || *bytes == 0)
        return cli_usage_error(cmd, "--size %s: expected a positive multiple of 4 bytes, e.g. "
                               "4096, 64K, 8M", v);
    if ((uint64_t)*bytes >= FTM_SCHED_MAX_BYTES) /* the schedules' 40-bit offsets */
        return cli_usage_error(cmd, "--size %s: too large: the schedules address at most %llu "
                               "bytes per chip (1T - 4); give a smaller --size", v,
                               (unsigned long long)FTM_SCHED_MAX_BYTES - 4);
    return 0;
}

const char *cli_size_text(size_t bytes, char *buf, size_t n)
{
    static const char unit[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        size_t u = (size_t)1 << (10 * (4 - i));
        if (bytes >= u && bytes % u == 0) {
            snprintf(buf, n, "%zu%c", bytes / u, unit[i]);
            return buf;
        }
    }
    snprintf(buf, n, "%zu", bytes);
    return buf;
}

/* opt: the option as the user typed it ("--seed", "--fault-seed"). */
static int parse_seed(const char *cmd, const char *opt, const char *v, uint64_t *seed)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v < '0' || *v > '9')
        return cli_usage_error(cmd, "%s %s: expected a whole number 0..%llu", opt, v,
                               (unsigned long long)UINT64_MAX);
    *seed = s;
    return 0;
}

int cli_mesh_set(cli_mesh_opts *o, int id, const char *name, const char *v)
{
    long n;
    switch (id) {
    case CLI_O_MESH: o->mesh_spec = v; return 0;
    case CLI_O_TORUS: o->torus = 1; return 0;
    case CLI_O_RANKS: o->ranks = v; return 0;
    case CLI_O_JSON:
        o->json = 1;
        cli_out_stdout_json(1); /* no output file may be mixed into it */
        return 0;
    case CLI_O_FAIL: o->fail[o->nfail++] = v; return 0;
    case CLI_O_FAIL_HOST: o->fail_host[o->nfail_host++] = v; return 0;
    case CLI_O_FAIL_LINK: o->fail_link[o->nfail_link++] = v; return 0;
    case CLI_O_RANDOM_FAULTS:
        if (cli_parse_int(v, 0, 4095, &n))
            return cli_usage_error(o->cmd, "--random-faults %s: expected a whole number 0..4095", v);
        o->random_faults = (int)n;
        o->random_faults_given = 1;
        return 0;
    case CLI_O_SEED:
        o->seed_given = 1;
        return parse_seed(o->cmd, "--seed", v, &o->seed);
    case CLI_O_FAULT_SEED:
        o->fault_seed_given = 1;
        return parse_seed(o->cmd, "--fault-seed", v, &o->fault_seed);
    case CLI_O_HANG_TIMEOUT:
        if (cli_parse_double(v, 0.01, 3600, &o->hang_timeout_s))
            return cli_usage_error(o->cmd, "--hang-timeout %s: expected seconds between 0.01 and 3600", v);
        return 0;
    default:
        return cli_usage_error(o->cmd, "--%s: not an option of ftmesh %s", name, o->cmd);
    }
}

/* A --fail chip inside a --fail-host block dies with the host anyway. */
static void warn_fail_in_host(const cli_mesh_opts *o, const ftm_mesh *m)
{
    int r, c, hr, hc;
    for (int k = 0; k < o->nfail; k++) {
        ftm_mesh_parse_coord(o->fail[k], &r, &c); /* parsed before */
        for (int h = 0; h < o->nfail_host; h++) {
            ftm_mesh_parse_coord(o->fail_host[h], &hr, &hc);
            if (ftm_mesh_host_has(m, hr, hc, r, c)) {
                cli_warn(o->cmd, "--fail %s has no effect: the chip is in the host of "
                         "--fail-host %s", o->fail[k], o->fail_host[h]);
                break;
            }
        }
    }
}

/* 1 when 2x2 blocks at a and b overlap along a side of n (a torus wraps;
 * an open mesh has no block at n - 1). */
static int near2(int a, int b, int n)
{
    return (a - b + n) % n < 2 || (b - a + n) % n < 2;
}

/* --fail-host k whose 2x2 block does not fit: where its top-left chip
 * may be (a side wraps on a torus of 3 or more), or that none fits. */
static int host_misfit(const cli_mesh_opts *o, const ftm_mesh *m, int k, int r, int c)
{
    int mr = m->torus && m->rows >= 3 ? m->rows - 1 : m->rows - 2;
    int mc = m->torus && m->cols >= 3 ? m->cols - 1 : m->cols - 2;
    char where[160] = ": no 2x2 block fits (a side of 1)";
    if (mr >= 0 && mc >= 0)
        snprintf(where, sizeof where, ": its top-left chip must be in rows 0..%d, cols 0..%d%s", mr,
                 mc, m->torus && (m->rows == 2 || m->cols == 2)
                         ? " (a side of 2 has no wrap-around link)" : "");
    return cli_usage_error(o->cmd, "--fail-host %s: the 2x2 block at (%d,%d) does not fit in "
                           "the %dx%d %s%s", o->fail_host[k], r, c, m->rows, m->cols,
                           cli_mesh_kind(m), where);
}

/* --fail and --fail-host; a chip or host named twice, or hosts that
 * overlap, are warnings. */
static int fail_chips(const cli_mesh_opts *o, ftm_mesh *m)
{
    const char *cmd = o->cmd;
    int r, c, r2, c2;
    for (int k = 0; k < o->nfail; k++) {
        if (ftm_mesh_parse_coord(o->fail[k], &r, &c))
            return cli_usage_error(cmd, "--fail %s: expected R,C, e.g. 3,4", o->fail[k]);
        int dead = r < m->rows && c < m->cols && !ftm_mesh_alive(m, ftm_mesh_chip(m, r, c));
        if (ftm_mesh_fail_chip(m, r, c))
            return cli_usage_error(cmd, "--fail %s: chip outside the %dx%d mesh (rows 0..%d, cols 0..%d)",
                                   o->fail[k], m->rows, m->cols, m->rows - 1, m->cols - 1);
        if (dead)
            cli_warn(cmd, "--fail %s given twice: chip (%d,%d) is dead already", o->fail[k], r, c);
    }
    for (int k = 0; k < o->nfail_host; k++) {
        if (ftm_mesh_parse_coord(o->fail_host[k], &r, &c))
            return cli_usage_error(cmd, "--fail-host %s: expected R,C (top-left chip of the 2x2 host)",
                                   o->fail_host[k]);
        if (ftm_mesh_fail_host(m, r, c))
            return host_misfit(o, m, k, r, c);
        for (int j = 0; j < k; j++) {
            if (ftm_mesh_parse_coord(o->fail_host[j], &r2, &c2))
                continue;
            int same = r2 == r && c2 == c;
            if (same || (near2(r, r2, m->rows) && near2(c, c2, m->cols))) {
                if (same)
                    cli_warn(cmd, "--fail-host %s given twice: the host at (%d,%d) is dead already",
                             o->fail_host[k], r, c);
                else
                    cli_warn(cmd, "--fail-host %s overlaps --fail-host %s: their 2x2 blocks share "
                             "chips, which die once", o->fail_host[k], o->fail_host[j]);
                break;
            }
        }
    }
    warn_fail_in_host(o, m);
    return 0;
}

/* Before --fail-link kills it: 1 when a chip of the link is dead, 2 when
 * the link is dead already (both ways unless oneway), 3 when it is to die
 * both ways and is dead one way already, else 0 (also when the link is
 * not one: the caller reports that). */
static int link_state(const ftm_mesh *m, int r, int c, int r2, int c2, int oneway)
{
    if (r >= m->rows || c >= m->cols || r2 >= m->rows || c2 >= m->cols)
        return 0;
    int a = ftm_mesh_chip(m, r, c), b = ftm_mesh_chip(m, r2, c2);
    int d = ftm_mesh_dir_to(m, a, b);
    if (d < 0 || a == b)
        return 0;
    if (!ftm_mesh_alive(m, a) || !ftm_mesh_alive(m, b))
        return 1;
    int ab = m->link_dead[a * FTM_NDIRS + d], ba = m->link_dead[b * FTM_NDIRS + ftm_mesh_dir_to(m, b, a)];
    return ab && (oneway || ba) ? 2 : !oneway && (ab || ba) ? 3 : 0;
}

/* --fail-link; one that changes nothing (the link is dead already, or
 * one of its chips is) is a warning. */
static int fail_links(const cli_mesh_opts *o, ftm_mesh *m)
{
    const char *cmd = o->cmd;
    int r, c, r2, c2, ow;
    for (int k = 0; k < o->nfail_link; k++) {
        const char *v = o->fail_link[k];
        if (ftm_mesh_parse_link(v, &r, &c, &r2, &c2, &ow))
            return cli_usage_error(cmd, "--fail-link %s: expected R,C-R2,C2 (both ways) or R,C>R2,C2 (one way)", v);
        int was = link_state(m, r, c, r2, c2, ow);
        int rc = ftm_mesh_fail_link(m, r, c, r2, c2, ow);
        if (rc == FTM_ERANGE)
            return cli_usage_error(cmd, "--fail-link %s: chip outside the %dx%d mesh", v, m->rows, m->cols);
        if (rc)
            return cli_usage_error(cmd, "--fail-link %s: (%d,%d) and (%d,%d) are not neighbours, so no link joins them",
                                   v, r, c, r2, c2);
        if (was == 1)
            cli_warn(cmd, "--fail-link %s has no effect: chip (%d,%d) is dead", v,
                     ftm_mesh_alive(m, ftm_mesh_chip(m, r, c)) ? r2 : r,
                     ftm_mesh_alive(m, ftm_mesh_chip(m, r, c)) ? c2 : c);
        else if (was == 2)
            cli_warn(cmd, "--fail-link %s has no effect: that link is dead already", v);
        else if (was == 3) /* the one-way option is now part of this one */
            cli_warn(cmd, "--fail-link %s: one way of that link was dead already (a one-way "
                     "--fail-link before it); the faults name it once, both ways", v);
    }
    return 0;
}

/* --random-faults, then: at least one healthy chip, all of them connected. */
static int random_and_connected(const cli_mesh_opts *o, ftm_mesh *m)
{
    const char *cmd = o->cmd;
    int h = ftm_mesh_healthy_count(m), keep = o->min_healthy > 1 ? o->min_healthy : 1;
    if (o->random_faults && (o->random_faults > h - keep ||
                             ftm_mesh_fail_random(m, o->random_faults, cli_fault_seed(o))))
        return cli_usage_error(cmd, "--random-faults %d: at most %d here (%d healthy chip%s left, "
                               "at least %d must survive)", o->random_faults, h - keep > 0 ? h - keep : 0,
                               h, cli_s(h), keep);
    int a, b, rc = ftm_mesh_check_connected(m, &a, &b);
    if (rc == FTM_EALLDEAD)
        return cli_usage_error(cmd, "every chip is dead: remove some faults");
    if (rc == FTM_EPARTITION)
        return cli_usage_error(cmd, "healthy chips are cut into parts: (%d,%d) cannot reach (%d,%d) over live links; "
                               "%s so the healthy chips stay connected",
                               ftm_mesh_row(m, a), ftm_mesh_col(m, a), ftm_mesh_row(m, b), ftm_mesh_col(m, b),
                               o->random_faults ? "try another --fault-seed, a smaller --random-faults or fewer faults"
                                                : "remove faults");
    return 0;
}

int cli_build_mesh(const cli_mesh_opts *o, ftm_mesh *m)
{
    int rc = cli_build_mesh_only(o, m);
    if (!rc && (rc = cli_ranks_setup(o, m)))
        ftm_mesh_free(m);
    return rc;
}

int cli_wraps(const ftm_mesh *m)
{
    return m->torus && (m->rows >= 3 || m->cols >= 3);
}

const char *cli_mesh_kind(const ftm_mesh *m)
{
    return cli_wraps(m) ? "torus" : "mesh";
}

int cli_build_mesh_only(const cli_mesh_opts *o, ftm_mesh *m)
{
    int rows, cols;
    const char *sp = o->mesh_spec;
    size_t nr = strspn(sp, "0123456789");
    const char *cs = sp + nr + 1; /* the columns, after the x */
    int digits = nr > 0 && (sp[nr] == 'x' || sp[nr] == 'X') && *cs &&
                 strspn(cs, "0123456789") == strlen(cs);
    if (ftm_mesh_parse_size(sp, &rows, &cols)) /* RxC too large to parse: say the limit */
        return digits ? cli_usage_error(o->cmd, "--mesh %s: sides must be 1..%d", sp,
                                        o->max_side ? o->max_side : FTM_MESH_MAX_SIDE)
                      : cli_usage_error(o->cmd, "--mesh %s: expected RxC, e.g. 8x8", sp);
    if (ftm_mesh_init(m, rows, cols, o->torus))
        return cli_usage_error(o->cmd, "--mesh %s: sides must be 1..%d", o->mesh_spec,
                               o->max_side ? o->max_side : FTM_MESH_MAX_SIDE);
    if (o->torus && !cli_wraps(m))
        cli_warn(o->cmd, "--torus has no effect on a %dx%d mesh: wrap-around links need a side "
                 "of 3 or more", rows, cols);
    int rc = fail_chips(o, m);
    if (!rc)
        rc = fail_links(o, m);
    if (!rc)
        rc = random_and_connected(o, m);
    if (rc)
        ftm_mesh_free(m);
    return rc;
}

int cli_fail_during_chip(const char *cmd, const ftm_mesh *m, const char *spec, int *chip)
{
    int r, c;
    if (ftm_mesh_parse_coord(spec, &r, &c))
        return cli_usage_error(cmd, "--fail-during %s: expected R,C, e.g. 3,4", spec);
    if (r >= m->rows || c >= m->cols)
        return cli_usage_error(cmd, "--fail-during %s: chip outside the %dx%d %s (rows 0..%d, "
                               "cols 0..%d)", spec, m->rows, m->cols, m->torus ? "torus" : "mesh",
                               m->rows - 1, m->cols - 1);
    if (!ftm_mesh_alive(m, ftm_mesh_chip(m, r, c)))
        return cli_usage_error(cmd, "--fail-during %s: (%d,%d) is dead from the start (a fault "
                               "option kills it): pick a healthy chip", spec, r, c);
    if (ftm_mesh_healthy_count(m) < 2)
        return cli_usage_error(cmd, "--fail-during %s: (%d,%d) is the only healthy chip and at "
                               "least one must survive; use a larger mesh", spec, r, c);
    *chip = ftm_mesh_chip(m, r, c);
    return 0;
}

int cli_cost_set(const char *cmd, int id, const char *v, ftm_cost_params *p)
{
    int is_hop = id == CLI_O_HOP_US;
    const char *name = is_hop ? "--hop-us" : id == CLI_O_LINK_GBPS ? "--link-GBps" : "--hbm-GBps";
    double x;
    if (cli_parse_double(v, is_hop ? 0 : 1e-6, 1e9, &x))
        return cli_usage_error(cmd, "%s %s: expected a number %s", name, v,
                               is_hop ? "from 0 to 1e9 (microseconds)" : "from 1e-6 to 1e9 (GB/s)");
    if (is_hop)
        p->hop_s = x * 1e-6;
    else if (id == CLI_O_LINK_GBPS)
        p->link_Bps = x * 1e9;
    else
        p->hbm_Bps = x * 1e9;
    return 0;
}

int cli_unknown_algo(const char *cmd, const char *opt, const char *v, int with_auto)
{
    char names[256];
    size_t u = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name && u < sizeof names; a++)
        u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", u ? (a[1].name || with_auto
                              ? ", " : " or ") : "", a->name);
    return cli_usage_error(cmd, "%s %s: unknown algorithm; expected %s%s", opt, v, names,
                           with_auto ? " or auto" : "");
}
