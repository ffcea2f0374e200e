/* ftmesh rings: draw the ring the router builds around the holes. */
#include "cli.h"
#include "ftmesh/router.h"
#include "ftmesh/collective.h"
#include "ftmesh/viz.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/svg.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rings_help[] =
    "usage: ftmesh rings [--mesh RxC] [--torus] [faults] [--algo NAME] [--svg FILE] [--json]\n"
    "\n"
    "Builds one ring over every healthy chip, routed around dead chips and\n"
    "links, validates it, draws the mesh with the ring through it, and prints\n"
    "its quality: total hops, detour edges, longest edge, and the number of\n"
    "ring edges on the most-used directed link. The detours come with their\n"
    "lower bound: the imbalance of the two checkerboard colours of healthy chips.\n"
    "\n"
    "  --algo NAME  draw what an allreduce algorithm sends over which links\n"
    "               (ring, bidir, tree, 2d, 2d-concurrent; default ring); for 2d\n"
    "               also its row bands: 'alternate' ones go around a hole\n"
    "  --svg FILE   also write the picture as SVG (alternate rings dashed)\n"
    "\n";

/* 1 when the checkerboard colouring is proper (ftm_mesh_detour_lower_bound). */
static int two_coloured(const ftm_mesh *m)
{
    return !(m->torus && ((m->rows >= 3 && (m->rows & 1)) || (m->cols >= 3 && (m->cols & 1))));
}

/* --algo 2d: the bands of the 2-D allreduce and their rings. */
static int show_2d(const ftm_mesh *m, int json, const char *svg)
{
    ftm_plan2d p;
    int err = ftm_plan2d_build(m, &p);
    if (err) {
        fprintf(stderr, "ftmesh rings: 2-D plan failed: %s\n", ftm_strerror(err));
        return CLI_EXIT_FAIL;
    }
    int rc = 0, nalt = 0;
    if (json)
        printf("{\"mesh\":\"%dx%d\",\"torus\":%s,\"algo\":\"2d\",\"healthy\":%d,"
               "\"max_link_load\":%d,\"bands\":[", m->rows, m->cols, m->torus ? "true" : "false",
               ftm_mesh_healthy_count(m), p.max_load);
    for (int b = 0; b < p.nbands; b++) {
        const ftm_plan2d_band *bd = &p.bands[b];
        /* A band's ring covers only the band, so ftm_ring_measure (which
         * validates against the whole mesh) does not apply: count here. */
        ftm_ring_quality q = { 0 };
        int gap = 0;
        for (int e = 0; e < bd->fwd.n; e++) {
            int x = bd->fwd.chips[e];
            gap += ((ftm_mesh_row(m, x) + ftm_mesh_col(m, x)) & 1) ? -1 : 1;
            int h = bd->fwd.path_off[e + 1] - bd->fwd.path_off[e];
            q.hops += h;
            q.detours += h > 1;
            q.longest_edge = h > q.longest_edge ? h : q.longest_edge;
        }
        /* the colour bound of ftm_mesh_detour_lower_bound, over the band */
        int bound = two_coloured(m) ? abs(gap) : 0;
        nalt += bd->alternate;
        if (json) {
            printf("%s{\"row0\":%d,\"rows\":%d,\"chips\":%d,\"alternate\":%s,\"hops\":%d,"
                   "\"detours\":%d,\"detour_lower_bound\":%d,\"longest_edge\":%d}", b ? "," : "",
                   bd->row0, bd->nrows, bd->n, bd->alternate ? "true" : "false", q.hops,
                   q.detours, bound, q.longest_edge);
            continue;
        }
        printf("band %d: rows %d..%d, %d chips%s;\n  ring %d hops, %d detour%s (lower bound %d)\n",
               b, bd->row0, bd->row0 + bd->nrows - 1, bd->n,
               bd->alternate ? ", ALTERNATE ring around a fault" : "", q.hops, q.detours,
               q.detours == 1 ? "" : "s", bound);
    }
    unsigned char *usable = calloc((size_t)m->cols, 1);
    int U = usable ? ftm_plan2d_columns(m, &p, usable) : 0;
    if (json) {
        printf("],\"column_layout\":\"%s\",\"usable_columns\":[", U ? "column" : "drift");
        for (int c = 0, k = 0; U && c < m->cols; c++)
            if (usable[c])
                printf("%s%d", k++ ? "," : "", c);
        printf("]}\n");
    } else {
        printf("\n%d band%s, %d alternate; most-used directed link carries %d ring edge%s\n"
               "(both rings of every band)\n", p.nbands, p.nbands == 1 ? "" : "s", nalt,
               p.max_load, p.max_load == 1 ? "" : "s");
        if (U) {
            printf("column rings (one per usable column, through every row%s):\n  ",
                   m->torus && m->rows >= 3 ? ", closed by the wrap link" : "");
            for (int c = 0; c < m->cols; c++)
                printf("%c ", usable[c] ? '|' : 'x');
            printf("\n  %d of %d columns usable; 'x' columns hold a hole: left out,\n"
                   "  their share adopted by the others\n", U, m->cols);
        } else {
            printf("column phase: drift layout (too many columns hold holes): each\n"
                   "segment's owners, one per band, are linked top to bottom over live paths\n");
        }
        if (!rc)
            rc = cli_rings_algo_pictures(m, "2d");
    }
    free(usable);
    if (svg) {
        ftm_ring *rings = calloc((size_t)p.nbands, sizeof *rings);
        int *alt = calloc((size_t)p.nbands, sizeof *alt);
        FILE *f = rings && alt ? fopen(svg, "w") : NULL;
        for (int b = 0; f && b < p.nbands; b++) {
            rings[b] = p.bands[b].fwd;
            alt[b] = p.bands[b].alternate;
        }
        err = f ? ftm_svg_write(f, m, rings, alt, p.nbands, NULL, "2-D allreduce: row bands") : FTM_EIO;
        if (f && fclose(f) && !err)
            err = FTM_EIO;
        if (err) {
            fprintf(stderr, "ftmesh rings: --svg %s: %s\n", svg, ftm_strerror(err));
            rc = CLI_EXIT_FAIL;
        }
        free(rings);
        free(alt);
    }
    ftm_plan2d_free(&p);
    return rc;
}

/* --algo bidir, tree, 2d-concurrent: pictures from the schedule. */
static int show_algo(const ftm_mesh *m, const char *algo, int json, const char *svg)
{
    int rc = svg ? cli_rings_algo_svg(m, algo, svg) : 0;
    if (rc)
        return rc;
    if (json) {
        printf("{\"mesh\":\"%dx%d\",\"torus\":%s,\"algo\":", m->rows, m->cols,
               m->torus ? "true" : "false");
        cli_json_str(algo);
        printf(",\"healthy\":%d,\"detour_lower_bound\":%d}\n", ftm_mesh_healthy_count(m),
               ftm_mesh_detour_lower_bound(m));
        return 0;
    }
    return cli_rings_algo_pictures(m, algo);
}

int cli_rings(int argc, char **argv);
int cli_rings(int argc, char **argv)
{
    cli_mesh_opts o;
    cli_mesh_opts_init(&o, "rings", argc);
    int rc = 0;
    const char *svg = NULL, *v, *algo = "ring";
    for (int i = 1; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(rings_help, stdout);
            fputs(cli_mesh_help, stdout);
            cli_mesh_opts_free(&o);
            return 0;
        }
        int k = cli_mesh_opt(&o, argc, argv, &i);
        if (k < 0) {
            rc = CLI_EXIT_USAGE;
        } else if (k > 0) {
            continue;
        } else if (cli_is(argv[i], "--algo")) {
            if (!(v = cli_value("rings", argc, argv, &i, "--algo")))
                rc = CLI_EXIT_USAGE;
            else if (!ftm_allreduce_find(v))
                rc = cli_usage_error("rings", "--algo %s: expected ring, bidir, tree, 2d or "
                                     "2d-concurrent", v);
            else
                algo = v;
        } else if (cli_is(argv[i], "--svg")) {
            if (!(svg = cli_value("rings", argc, argv, &i, "--svg")))
                rc = CLI_EXIT_USAGE;
        } else {
            rc = cli_usage_error("rings", "unknown option %s (see ftmesh rings --help)", argv[i]);
        }
    }
    ftm_mesh m;
    if (!rc)
        rc = cli_build_mesh(&o, &m);
    if (rc) {
        cli_mesh_opts_free(&o);
        return rc;
    }
    if (strcmp(algo, "ring") != 0) {
        rc = strcmp(algo, "2d") == 0 ? show_2d(&m, o.json, svg) : show_algo(&m, algo, o.json, svg);
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return rc;
    }
    ftm_ring ring = { 0 };
    int err = ftm_router_ring(&m, &ring);
    if (err) {
        fprintf(stderr, "ftmesh rings: router failed: %s\n", ftm_strerror(err));
        ftm_mesh_free(&m);
        cli_mesh_opts_free(&o);
        return CLI_EXIT_FAIL;
    }
    ftm_ring_quality q;
    ftm_ring_measure(&m, &ring, &q);
    int bound = ftm_mesh_detour_lower_bound(&m);
    if (o.json) {
        printf("{\"mesh\":\"%dx%d\",\"torus\":%s,\"healthy\":%d,\"ring_chips\":%d,\"hops\":%d,"
               "\"detours\":%d,\"detour_lower_bound\":%d,\"longest_edge\":%d,\"max_link_load\":%d,"
               "\"valid\":%s,\"ring\":[",
               m.rows, m.cols, m.torus ? "true" : "false", q.healthy, q.ring_chips, q.hops,
               q.detours, bound, q.longest_edge, q.max_link_load, q.valid ? "true" : "false");
        for (int i = 0; i < ring.n; i++)
            printf("%s[%d,%d]", i ? "," : "", ftm_mesh_row(&m, ring.chips[i]),
                   ftm_mesh_col(&m, ring.chips[i]));
        printf("]}\n");
    } else {
        char *pic = NULL;
        if (ftm_viz_ring_ascii(&m, &ring, &pic) == 0) {
            fputs(pic, stdout);
            free(pic);
        }
        printf("\n%dx%d %s, %d healthy chips; ring of %d chips: %d hops,\n%d detour edge%s "
               "(lower bound %d: %s),\nlongest edge %d hop%s, most-used link carries %d ring "
               "edge%s; %s\n",
               m.rows, m.cols, m.torus ? "torus" : "mesh", q.healthy, q.ring_chips, q.hops,
               q.detours, q.detours == 1 ? "" : "s", bound,
               two_coloured(&m) ? "the imbalance of the two checkerboard colours"
                                : "an odd torus side has no two-colouring",
               q.longest_edge, q.longest_edge == 1 ? "" : "s",
               q.max_link_load, q.max_link_load == 1 ? "" : "s", q.valid ? "valid" : "INVALID");
    }
    rc = q.valid ? 0 : CLI_EXIT_FAIL;
    if (svg) {
        FILE *f = fopen(svg, "w");
        err = f ? ftm_svg_write(f, &m, &ring, NULL, 1, NULL, "ftmesh ring") : FTM_EIO;
        if (f && fclose(f) && !err)
            err = FTM_EIO;
        if (err) {
            fprintf(stderr, "ftmesh rings: --svg %s: %s\n", svg, ftm_strerror(err));
            rc = CLI_EXIT_FAIL;
        }
    }
    ftm_ring_free(&ring);
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&o);
    return rc;
}
