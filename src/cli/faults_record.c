/* The record of a run's static faults: the dead chips, hosts and links of
 * the mesh it started on, as flags that rebuild the same mesh (--fail,
 * --fail-host, --fail-link) in the text header, and as coordinates in
 * --json ("faults") and the trace's metadata. Random draws are listed as
 * --fail flags, so the record reproduces the run without --seed. */
#include "cli.h"
#include "faults_cli.h"
#include "ftmesh/checkpoint.h"

#include <string.h>

/* The top-left chip of --fail-host k, or -1 when unparsable. */
static int host_raw(const cli_mesh_opts *o, const ftm_mesh *m, int k)
{
    int r, c;
    if (ftm_mesh_parse_coord(o->fail_host[k], &r, &c) || r < 0 || c < 0 || r >= m->rows ||
        c >= m->cols)
        return -1;
    return ftm_mesh_chip(m, r, c);
}

/* Dead host k of --fail-host (top-left chip), or -1 when unparsable,
 * named before (listed once) or no longer dead whole in m (a chip of it
 * repaired since: its dead chips are listed as --fail). */
static int host_at(const cli_mesh_opts *o, const ftm_mesh *m, int k)
{
    int h = host_raw(o, m, k), chips[4];
    for (int j = 0; j < k && h >= 0; j++)
        if (host_raw(o, m, j) == h)
            return -1;
    ftm_fault_event e = { .kind = FTM_FAULT_HOST };
    e.r = h < 0 ? 0 : ftm_mesh_row(m, h);
    e.c = h < 0 ? 0 : ftm_mesh_col(m, h);
    return h >= 0 && ftm_fault_chips(m, &e, chips) == 0 ? h : -1;
}

/* 1 when chip lies in one of the --fail-host blocks. */
static int in_host(const cli_mesh_opts *o, const ftm_mesh *m, int chip)
{
    int r = ftm_mesh_row(m, chip), c = ftm_mesh_col(m, chip);
    for (int k = 0; k < o->nfail_host; k++) {
        int h = host_at(o, m, k);
        if (h < 0)
            continue;
        if (ftm_mesh_host_has(m, ftm_mesh_row(m, h), ftm_mesh_col(m, h), r, c))
            return 1;
    }
    return 0;
}

/* Directed link chip->d is failed (between two live chips) and, when
 * both directions are, this is the one to list (the lower chip's). */
static int link_listed(const ftm_mesh *m, int chip, int d, int *nb, int *oneway)
{
    *nb = ftm_mesh_neighbor(m, chip, d);
    if (*nb < 0 || !m->link_dead[chip * FTM_NDIRS + d] || !ftm_mesh_alive(m, chip) ||
        !ftm_mesh_alive(m, *nb))
        return 0;
    int back = m->link_dead[*nb * FTM_NDIRS + ftm_dir_opposite(d)];
    *oneway = !back;
    return *oneway || chip < *nb || (chip == *nb && d < ftm_dir_opposite(d));
}

void cli_faults_record_json(cli_json *j, const cli_mesh_opts *o, const ftm_mesh *m)
{
    cli_json_begin_obj(j, "faults");
    cli_json_begin_arr(j, "chips");
    for (int c = 0; c < m->nchips; c++)
        if (!ftm_mesh_alive(m, c) && !in_host(o, m, c))
            cli_json_chip(j, NULL, m, c);
    cli_json_end(j);
    cli_json_begin_arr(j, "hosts");
    for (int k = 0; k < o->nfail_host; k++)
        if (host_at(o, m, k) >= 0)
            cli_json_chip(j, NULL, m, host_at(o, m, k));
    cli_json_end(j);
    for (int pass = 0; pass < 2; pass++) { /* both ways, then one way */
        cli_json_begin_arr(j, pass ? "links_one_way" : "links");
        for (int c = 0; c < m->nchips; c++)
            for (int d = 0; d < FTM_NDIRS; d++) {
                int nb, ow;
                if (!link_listed(m, c, d, &nb, &ow) || ow != pass)
                    continue;
                cli_json_begin_arr(j, NULL);
                cli_json_chip(j, NULL, m, c);
                cli_json_chip(j, NULL, m, nb);
                cli_json_end(j);
            }
        cli_json_end(j);
    }
    cli_json_end(j);
}

/* Appends one flag to b (of n bytes) at *u, whole or not at all (a flag
 * cut in the middle would rebuild another mesh): else counts it in *cut. */
static void put(char *b, size_t n, size_t *u, int *cut, const char *flag)
{
    size_t k = strlen(flag);
    if (*cut || *u + k >= n) {
        ++*cut;
        return;
    }
    memcpy(b + *u, flag, k + 1);
    *u += k;
}

int cli_faults_record_flags(const cli_mesh_opts *o, const ftm_mesh *m, char *b, size_t n)
{
    size_t u = 0;
    int cut = 0;
    char f[64];
    b[0] = 0;
    for (int c = 0; c < m->nchips; c++)
        if (!ftm_mesh_alive(m, c) && !in_host(o, m, c)) {
            snprintf(f, sizeof f, " --fail %d,%d", ftm_mesh_row(m, c), ftm_mesh_col(m, c));
            put(b, n, &u, &cut, f);
        }
    for (int k = 0; k < o->nfail_host; k++) {
        int h = host_at(o, m, k);
        if (h >= 0) {
            snprintf(f, sizeof f, " --fail-host %d,%d", ftm_mesh_row(m, h), ftm_mesh_col(m, h));
            put(b, n, &u, &cut, f);
        }
    }
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            int nb, ow;
            if (!link_listed(m, c, d, &nb, &ow))
                continue;
            snprintf(f, sizeof f, ow ? " --fail-link '%d,%d>%d,%d'" : " --fail-link %d,%d-%d,%d",
                     ftm_mesh_row(m, c), ftm_mesh_col(m, c), ftm_mesh_row(m, nb),
                     ftm_mesh_col(m, nb));
            put(b, n, &u, &cut, f);
        }
    return cut;
}

void cli_faults_record_text(const cli_mesh_opts *o, const ftm_mesh *m)
{
    char flags[2048];
    int cut = cli_faults_record_flags(o, m, flags, sizeof flags);
    if (!flags[0])
        return;
    printf("# faults:%s", flags);
    if (cut)
        printf(" ... and %d more", cut);
    if (o->random_faults)
        printf("  # %d drawn by --random-faults from seed %llu", o->random_faults,
               (unsigned long long)cli_fault_seed(o));
    printf("\n");
}

int cli_ckpt_mesh_kind(const char *path, const ftm_mesh *m)
{
    ftm_ckpt_state st;
    if (ftm_ckpt_load(path, NULL, NULL, &st, NULL, 0))
        return CLI_CKPT_NONE;
    int k = st.rows == 0 ? CLI_CKPT_NONE
          : st.rows == m->rows && st.cols == m->cols && !st.torus == !m->torus ? CLI_CKPT_SAME
                                                                              : CLI_CKPT_OTHER;
    ftm_ckpt_state_free(&st);
    return k;
}

void cli_faults_record_resumed(const cli_mesh_opts *o, const ftm_mesh *m, const char *path,
                               long step, int ckpt_mesh)
{
    char flags[2048];
    int cut = cli_faults_record_flags(o, m, flags, sizeof flags);
    const char *other = ckpt_mesh == CLI_CKPT_OTHER
                            ? " (its mesh is of another shape: its dead chips, links and events "
                              "to come are not carried over; this run's faults rule)"
                            : " (it records no mesh: this run's faults rule)";
    printf("# resumed from %s at step %ld%s%s%s", path, step,
           ckpt_mesh == CLI_CKPT_SAME ? "" : other,
           !flags[0]                ? (ckpt_mesh == CLI_CKPT_SAME ? "" : "; no faults")
           : ckpt_mesh == CLI_CKPT_SAME ? "; the checkpoint's mesh has"
                                    : "; faults:",
           flags);
    if (cut)
        printf(" ... and %d more", cut);
    printf("\n");
}

void cli_faults_record_meta(struct cli_json *j, void *ctx)
{
    const cli_faults_meta *fm = ctx;
    cli_faults_record_json(j, fm->o, fm->m);
    if (fm->events) /* what died or came back, links too (the trace's own
                     * "chip dies" events mark chips only) */
        cli_faults_json(j, fm->events, fm->nevents);
}

static int flag_opt(void *ctx, int id, const char *name, const char *val)
{
    return cli_mesh_set(ctx, id, name, val);
}

/* A scenario's flags (a sweep row's " --fail-host 8,16 ...") read as the
 * command line reads them, on the mesh they name: the same record. */
void cli_faults_record_json_flags(struct cli_json *j, const char *flags, int rows, int cols,
                                  int torus)
{
    char buf[512], spec[32], *argv[64] = { "sweep" };
    int argc = 1, ok = 0;
    snprintf(buf, sizeof buf, "%s", flags ? flags : "");
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    cli_mesh_opts o;
    ftm_mesh m;
    const cli_opt *const tables[] = { cli_mesh_table, NULL };
    if (!cli_mesh_opts_init(&o, "sweep", argc)) {
        snprintf(spec, sizeof spec, "%dx%d", rows, cols);
        o.mesh_spec = spec;
        o.torus = torus;
        ok = !cli_parse_quiet("sweep", argc, argv, tables, flag_opt, &o) && !cli_build_mesh_only(&o, &m);
        if (ok) {
            cli_faults_record_json(j, &o, &m);
            ftm_mesh_free(&m);
        }
        cli_mesh_opts_free(&o);
    }
    if (!ok)
        cli_json_null(j, "faults");
}
