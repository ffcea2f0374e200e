/* ftmesh rings: draw the ring the router builds around the holes. */
#include "cli.h"
#include "ftmesh/router.h"
#include "ftmesh/collective.h"
#include "ftmesh/viz.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/svg.h"
#include "ftmesh/error.h"
#include "ftmesh/costmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_ALGO = CLI_O_CMD, O_SVG, O_SIZE };

static const cli_opt rings_table[] = {
    { "algo", "NAME", O_ALGO,
      "draw what an allreduce algorithm sends over which\n"
      "links: ring (default), bidir, tree, trees, 2d (also\n"
      "its row bands: 'alternate' ones go around a hole),\n"
      "2d-concurrent or 2d-lines" },
    { "svg", "FILE", O_SVG, "also write the picture as SVG (alternate rings\ndashed)" },
    { "size", "BYTES", O_SIZE,
      "the buffer per chip the schedule is built for, as\n"
      "allreduce's --size (default 8M): which schedule an\n"
      "algorithm runs can depend on it; at least 8 x chips^2\n"
      "bytes (256 x chips past 1024 chips; every chip of the\n"
      "mesh, dead ones too): the pictures need a block for each" },
    { "json", NULL, CLI_O_JSON, "print one JSON object on stdout instead of text" },
    CLI_OPT_RANKS,
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const rings_tables[] = { rings_table, cli_mesh_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh rings [--mesh RxC] [--torus] [faults] [--algo NAME] [--svg FILE]\n"
           "                    [--size BYTES] [--json]\n"
           "\n"
           "Builds one ring over every healthy chip, routed around dead chips and\n"
           "links, validates it, draws the mesh with the ring through it, and prints\n"
           "its quality: total hops, detour edges, longest edge, and the number of\n"
           "ring edges on the most-used directed link. The detours come with their\n"
           "lower bound: the imbalance of the two checkerboard colours of healthy chips.\n"
           "\n");
    cli_print_opts(stdout, "Options", rings_tables, 0, 1);
    printf("\n");
    cli_print_opts(stdout, "Mesh and faults", rings_tables, 1, 2);
}

typedef struct rings_args {
    cli_mesh_opts o;
    const char *algo;
    const char *svg;
    size_t bytes;      /* --size */
    int size_given;
} rings_args;

static int rings_opt(void *ctx, int id, const char *name, const char *v)
{
    rings_args *a = ctx;
    if (id == O_ALGO) {
        if (!ftm_allreduce_find(v))
            return cli_unknown_algo("rings", "--algo", v, 0);
        a->algo = v;
        return 0;
    }
    if (id == O_SIZE) {
        a->size_given = 1;
        return cli_parse_buffer_size("rings", v, &a->bytes);
    }
    if (id == O_SVG) {
        a->svg = v;
        return 0;
    }
    return cli_mesh_set(&a->o, id, name, v);
}

/* The lower bound on any allreduce of M bytes on m (ftm_cost_bound, at
 * the default TPU-v3 parameters) as a function of M: per byte (s/B: the
 * link bytes or a cut, whichever binds), a fixed hop, and the latency of
 * the diameter. Returns 0 or an FTM_E* code. */
static int bound_terms(const ftm_mesh *m, double *per_byte, double *fixed, double *latency,
                       int *diameter)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_bound_parts b;
    double hop = p.hop_s;
    p.hop_s = 0; /* one second's bytes, no latency: the coefficient alone */
    int err = ftm_cost_bound(m, (size_t)p.link_Bps, FTM_RED_SUM_F32, &p, &b);
    if (err)
        return err;
    *per_byte = (b.links_s > b.cut_s ? b.links_s : b.cut_s) / p.link_Bps;
    *fixed = b.live_chips > 1 ? hop : 0;
    *latency = b.diameter * hop;
    *diameter = b.diameter;
    return 0;
}

static void bound_json(cli_json *j, const ftm_mesh *m)
{
    double per, fixed, lat;
    int diam;
    if (bound_terms(m, &per, &fixed, &lat, &diam))
        return;
    cli_json_num(j, "bound_s_per_MB", "%.9g", per * 1e6);
    cli_json_num(j, "bound_fixed_s", "%.9g", fixed);
    cli_json_num(j, "bound_latency_s", "%.9g", lat);
}

static void bound_text(const ftm_mesh *m)
{
    double per, fixed, lat;
    int diam;
    if (bound_terms(m, &per, &fixed, &lat, &diam) || per <= 0)
        return;
    printf("lower bound on any allreduce of M bytes here (TPU-v3 links, see doc/bound.md):\n"
           "  max(%.4f us per 1e6 bytes of M + %.1f us, %d hop%s x %.1f us = %.1f us)\n", per * 1e12,
           fixed * 1e6, diam, cli_s(diam), fixed * 1e6, lat * 1e6);
}

/* A band's ring covers only the band, so ftm_router_ring_measure (which
 * validates against the whole mesh) does not apply: count here. */
static ftm_ring_quality band_quality(const ftm_ring *r)
{
    ftm_ring_quality q = { 0 };
    for (int e = 0; e < r->n; e++) {
        int h = r->path_off[e + 1] - r->path_off[e];
        q.hops += h;
        q.detours += h > 1;
        q.longest_edge = h > q.longest_edge ? h : q.longest_edge;
    }
    return q;
}

/* 1 when the checkerboard colouring is proper (ftm_mesh_detour_lower_bound). */
static int two_coloured(const ftm_mesh *m)
{
    return !(m->torus && ((m->rows >= 3 && (m->rows & 1)) || (m->cols >= 3 && (m->cols & 1))));
}

/* The colour bound of ftm_mesh_detour_lower_bound over a band's chips. */
static int band_bound(const ftm_mesh *m, const ftm_ring *r)
{
    int gap = 0;
    for (int e = 0; e < r->n; e++)
        gap += ((ftm_mesh_row(m, r->chips[e]) + ftm_mesh_col(m, r->chips[e])) & 1) ? -1 : 1;
    return two_coloured(m) && r->n > 1 ? abs(gap) : 0; /* one chip: a ring with no edge */
}

/* Opens the JSON object every rings report starts with: the mesh and its
 * static faults (as allreduce --json records them). */
static void json_head(cli_json *j, const ftm_mesh *m, const cli_mesh_opts *o)
{
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", m->rows, m->cols);
    cli_json_init(j, stdout);
    cli_json_begin_obj(j, NULL);
    cli_json_str(j, "mesh", mesh);
    cli_json_bool(j, "torus", cli_wraps(m));
    cli_faults_record_json(j, o, m);
}

/* The least floats the schedules of --algo are built for: 2 x chips^2
 * (every block of every ring non-empty in the pictures), 64 a chip past
 * SCHED_JSON_CHIPS, where only --svg draws. --size gives the count (the
 * same for the text, --json and --svg, so they name the same schedule);
 * the default 8M is never below it. */
#define SCHED_JSON_CHIPS 1024
static size_t rings_least(const ftm_mesh *m)
{
    size_t n = (size_t)m->nchips;
    return n <= SCHED_JSON_CHIPS ? 2 * n * n : 64 * n;
}

/* --size below rings_least(m), where an algorithm is drawn: refused
 * (CLI_EXIT_USAGE, said); else 0. */
static int check_size(const rings_args *a, const ftm_mesh *m)
{
    size_t least = rings_least(m);
    char sz[32];
    if (!strcmp(a->algo, "ring") || a->bytes / 4 >= least)
        return 0;
    return cli_usage_error("rings", "--size %zu: the pictures of the mesh's %d chips (dead ones "
                           "too) need at least %s (a block for every chip); give a larger --size",
                           a->bytes, m->nchips,
                           cli_size_text(least * 4, sz, sizeof sz));
}

/* The schedule algo builds here for count floats, for --json and for the
 * note of --svg: the algorithm it runs ("fallback" says why when that is
 * another one), its steps (the most any chip takes) and transfers. Built
 * for real, packed (a few bytes a transfer): a dry run would not pick
 * between schedules by time as the real build does. Up to the pod sizes
 * (SCHED_JSON_CHIPS: under a second); null beyond (2d-lines takes 30 s on
 * 64x64), and null with an error when the build fails. */
#define SCHED_NOT_BUILT 1 /* not built: past SCHED_JSON_CHIPS, or not needed */
static int sched_build(const ftm_mesh *m, const char *algo, size_t count, ftm_sched *s)
{
    if (m->nchips > SCHED_JSON_CHIPS)
        return SCHED_NOT_BUILT;
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    ftm_sched_ctx ctx = { .packed = 1 };
    return a ? a->build(s, &ctx, m, count, FTM_RED_SUM_F32) : FTM_EINVAL;
}

/* The "schedule" object of s (built by sched_build with result err):
 * null beyond SCHED_JSON_CHIPS, and null with an error when the build
 * failed. */
static int schedule_json(cli_json *j, const ftm_sched *s, int err, const char *algo)
{
    if (err) {
        cli_json_null(j, "schedule");
        return err == SCHED_NOT_BUILT ? 0
                                    : cli_error("rings", "%s schedule failed: %s", algo,
                                                ftm_strerror(err));
    }
    long steps = 0, ops = 0;
    for (int c = 0; c < s->nchips; c++) {
        steps = s->prog[c].nsteps > steps ? s->prog[c].nsteps : steps;
        ops += s->prog[c].nops;
    }
    cli_json_begin_obj(j, "schedule");
    cli_json_str(j, "algo", s->algo);
    cli_json_str(j, "fallback", s->fallback);
    cli_json_int(j, "steps", steps);
    cli_json_int(j, "transfers", ops / 2);
    cli_json_end(j);
    return 0;
}

static int json_2d(const ftm_mesh *m, const cli_mesh_opts *o, const ftm_plan2d *p,
                   const unsigned char *usable, int U, const ftm_sched *s, int err)
{
    cli_json j;
    json_head(&j, m, o);
    cli_json_str(&j, "algo", "2d");
    cli_json_int(&j, "healthy", ftm_mesh_healthy_count(m));
    cli_json_int(&j, "max_link_load", p->max_load);
    cli_json_begin_arr(&j, "bands");
    for (int b = 0; b < p->nbands; b++) {
        const ftm_plan2d_band *bd = &p->bands[b];
        ftm_ring_quality q = band_quality(&bd->fwd);
        cli_json_begin_obj(&j, NULL);
        cli_json_int(&j, "row0", bd->row0);
        cli_json_int(&j, "rows", bd->nrows);
        cli_json_int(&j, "chips", bd->n);
        cli_json_bool(&j, "alternate", bd->alternate);
        cli_json_int(&j, "hops", q.hops);
        cli_json_int(&j, "detours", q.detours);
        cli_json_int(&j, "detour_lower_bound", band_bound(m, &bd->fwd));
        cli_json_int(&j, "longest_edge", q.longest_edge);
        cli_json_end(&j);
    }
    cli_json_end(&j);
    bound_json(&j, m);
    cli_json_str(&j, "column_layout", U ? "column" : "drift");
    cli_json_begin_arr(&j, "usable_columns");
    for (int c = 0; U && c < m->cols; c++)
        if (usable[c])
            cli_json_int(&j, NULL, c);
    cli_json_end(&j);
    cli_ranks_json(&j, m);
    int rc = schedule_json(&j, s, err, "2d");
    cli_json_end(&j);
    return rc;
}

static void text_2d(const ftm_mesh *m, const ftm_plan2d *p, const unsigned char *usable, int U)
{
    int nalt = 0;
    for (int b = 0; b < p->nbands; b++) {
        const ftm_plan2d_band *bd = &p->bands[b];
        ftm_ring_quality q = band_quality(&bd->fwd);
        nalt += bd->alternate;
        printf("band %d: rows %d..%d, %d chip%s%s;\n  ring %d hop%s, %d detour%s (lower bound %d)\n",
               b, bd->row0, bd->row0 + bd->nrows - 1, bd->n, cli_s(bd->n),
               bd->alternate ? ", ALTERNATE ring around a fault" : "", q.hops, cli_s(q.hops),
               q.detours, cli_s(q.detours), band_bound(m, &bd->fwd));
        char *pic = NULL;
        if (bd->alternate && ftm_viz_ring_ascii(m, &bd->fwd, &pic) == 0) {
            fputs(pic, stdout);
            free(pic);
        }
    }
    printf("\n%d band%s, %d alternate; most-used directed link carries %d ring edge%s\n"
           "(both rings of every band)\n", p->nbands, cli_s(p->nbands), nalt, p->max_load,
           cli_s(p->max_load));
    if (!U) {
        char why[160], t[320];
        cli_drift_why(m, why, sizeof why);
        snprintf(t, sizeof t, "%s; each segment's owners, one per band, are linked top to "
                 "bottom over live paths", why);
        cli_print_wrapped(stdout, 0, printf("column phase: drift layout:"), t);
        return;
    }
    printf("column rings (one per usable column, through every row%s):\n  ",
           m->torus && m->rows >= 3 ? ", closed by the wrap" : "");
    for (int c = 0; c < m->cols; c++)
        printf("%c ", usable[c] ? '|' : 'x');
    printf("\n  %d of %d columns usable; 'x' columns hold a hole: left out,\n"
           "  their share adopted by the others\n", U, m->cols);
}

static int svg_2d(FILE *f, const ftm_mesh *m, const ftm_plan2d *p, const char *note)
{
    ftm_ring *rings = calloc((size_t)p->nbands, sizeof *rings);
    int *alt = calloc((size_t)p->nbands, sizeof *alt);
    int err = rings && alt ? 0 : FTM_ENOMEM;
    for (int b = 0; !err && b < p->nbands; b++) {
        rings[b] = p->bands[b].fwd;
        alt[b] = p->bands[b].alternate;
    }
    ftm_svg_picture q = { .title = "2-D allreduce: row bands", .note = note, .rings = rings,
                          .alternate = alt, .nrings = p->nbands };
    if (!err)
        err = ftm_svg_draw(f, m, &q);
    free(rings);
    free(alt);
    return err;
}

/* --algo 2d: the bands of the 2-D allreduce and their rings. */
static int show_2d(const ftm_mesh *m, const cli_mesh_opts *o, size_t count, cli_out *svg)
{
    ftm_plan2d p;
    int err = ftm_plan2d_build(m, &p);
    if (err)
        return cli_error("rings", "2-D plan failed: %s", ftm_strerror(err));
    unsigned char *usable = calloc((size_t)m->cols, 1);
    int U = usable ? ftm_plan2d_columns(m, &p, usable) : 0;
    int rc = 0;
    ftm_sched s; /* for the JSON and the picture's note: text draws its own */
    err = o->json || svg->f ? sched_build(m, "2d", count, &s) : SCHED_NOT_BUILT;
    if (o->json) {
        rc = json_2d(m, o, &p, usable, U, &s, err);
    } else {
        text_2d(m, &p, usable, U);
        rc = cli_rings_algo_pictures(m, "2d", count, svg->f ? svg->path : NULL);
    }
    free(usable);
    char note[200] = "", size[32];
    if (!err && s.fallback) /* the bands are the plan; say what runs */
        snprintf(note, sizeof note, "2d runs the %s's schedule here at --size %s (%s)", s.algo,
                 cli_size_text(count * 4, size, sizeof size), s.fallback);
    int src = svg->f ? cli_out_commit("rings", svg, svg_2d(svg->f, m, &p, note[0] ? note : NULL))
                     : 0;
    rc = rc ? rc : src;
    if (!err)
        ftm_sched_free(&s);
    ftm_plan2d_free(&p);
    return rc;
}

static void report_ring(const ftm_mesh *m, const cli_mesh_opts *o, const ftm_ring *ring,
                        const ftm_ring_quality *q, const char *svg)
{
    if (o->json) {
        cli_json j;
        json_head(&j, m, o);
        cli_json_int(&j, "healthy", q->healthy);
        cli_json_int(&j, "ring_chips", q->ring_chips);
        cli_json_int(&j, "hops", q->hops);
        cli_json_int(&j, "detours", q->detours);
        cli_json_int(&j, "detour_lower_bound", ftm_mesh_detour_lower_bound(m));
        cli_json_int(&j, "longest_edge", q->longest_edge);
        cli_json_int(&j, "max_link_load", q->max_link_load);
        cli_json_bool(&j, "valid", q->valid);
        bound_json(&j, m);
        cli_json_begin_arr(&j, "ring");
        for (int i = 0; i < ring->n; i++)
            cli_json_chip(&j, NULL, m, ring->chips[i]);
        cli_json_end(&j);
        cli_ranks_json(&j, m);
        cli_json_end(&j);
        return;
    }
    char *pic = NULL;
    if (ftm_viz_ring_ascii(m, ring, &pic) == 0) {
        const char *rest = pic; /* too wide: its first line advises --svg */
        if (svg && cli_too_wide(m, svg) && (rest = strchr(pic, '\n')))
            rest++;
        fputs(rest ? rest : "", stdout);
        free(pic);
    }
    printf("\n%dx%d %s, %d healthy chip%s; ring of %d chip%s: %d hop%s,\n%d detour edge%s "
           "(lower bound %d: %s),\nlongest edge %d hop%s, most-used link carries %d ring "
           "edge%s; %s\n",
           m->rows, m->cols, cli_mesh_kind(m), q->healthy, cli_s(q->healthy),
           q->ring_chips, cli_s(q->ring_chips), q->hops, cli_s(q->hops), q->detours,
           cli_s(q->detours), ftm_mesh_detour_lower_bound(m),
           two_coloured(m) ? "the imbalance of the two checkerboard colours"
                           : "an odd torus side has no two-colouring",
           q->longest_edge, cli_s(q->longest_edge), q->max_link_load,
           cli_s(q->max_link_load), q->valid ? "valid" : "INVALID");
}

static int show_ring(const ftm_mesh *m, const cli_mesh_opts *o, cli_out *svg)
{
    ftm_ring ring = { 0 };
    int err = ftm_router_ring(m, &ring);
    if (err)
        return cli_error("rings", "router failed: %s", ftm_strerror(err));
    ftm_ring_quality q;
    ftm_router_ring_measure(m, &ring, &q);
    report_ring(m, o, &ring, &q, svg->f ? svg->path : NULL);
    int rc = q.valid ? 0 : CLI_EXIT_FAIL, out;
    if (svg->f && (out = cli_out_commit("rings", svg, ftm_svg_write(svg->f, m, &ring, NULL, 1,
                                                                    NULL, "ftmesh ring"))))
        rc = out;
    ftm_router_ring_free(&ring);
    return rc;
}

/* --algo bidir, tree, 2d-concurrent: pictures from the schedule. */
static int show_algo(const ftm_mesh *m, const cli_mesh_opts *o, const char *algo, size_t count,
                     cli_out *svg)
{
    int rc = 0;
    if (o->json) {
        cli_json j;
        json_head(&j, m, o);
        cli_json_str(&j, "algo", algo);
        cli_json_int(&j, "healthy", ftm_mesh_healthy_count(m));
        cli_json_int(&j, "detour_lower_bound", ftm_mesh_detour_lower_bound(m));
        bound_json(&j, m);
        cli_ranks_json(&j, m);
        ftm_sched s;
        int err = sched_build(m, algo, count, &s);
        rc = schedule_json(&j, &s, err, algo);
        if (!err)
            ftm_sched_free(&s);
        cli_json_end(&j);
    } else {
        rc = cli_rings_algo_pictures(m, algo, count, svg->f ? svg->path : NULL);
    }
    int src = svg->f ? cli_out_commit("rings", svg, cli_rings_algo_svg(svg->f, m, algo, count)) : 0;
    return rc ? rc : src;
}

int cli_rings(int argc, char **argv)
{
    rings_args a = { .algo = "ring", .svg = NULL, .bytes = 8 << 20 };
    if (cli_mesh_opts_init(&a.o, "rings", argc))
        return CLI_EXIT_FAIL;
    ftm_mesh m;
    cli_out svg = { .slot = -1 };
    int rc = cli_parse("rings", argc, argv, rings_tables, rings_opt, &a);
    if (rc == CLI_HELP)
        usage();
    if (!rc)
        cli_mesh_warn_seeds(&a.o, 0, -1);
    if (!rc && a.size_given && !strcmp(a.algo, "ring"))
        cli_warn("rings", "--size has no effect on the ring (its route is the same for every "
                 "size): it is for --algo");
    int have_m = !rc && !(rc = cli_build_mesh(&a.o, &m));
    if (have_m && !(rc = check_size(&a, &m))) {
        cli_warn_flush();
        if (!a.o.json)
            cli_faults_record_text(&a.o, &m);
        if (!a.svg || !(rc = cli_out_open("rings", &svg, "--svg", a.svg)))
            rc = strcmp(a.algo, "ring") == 0 ? show_ring(&m, &a.o, &svg)
                 : strcmp(a.algo, "2d") == 0 ? show_2d(&m, &a.o, a.bytes / 4, &svg)
                                             : show_algo(&m, &a.o, a.algo, a.bytes / 4, &svg);
        cli_out_discard(&svg); /* not written: the run failed */
        if (!rc && !a.o.json)
            bound_text(&m);
    }
    if (have_m)
        ftm_mesh_free(&m);
    cli_mesh_opts_free(&a.o);
    return rc == CLI_HELP ? 0 : rc;
}
