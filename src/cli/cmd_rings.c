/* ftmesh rings: draw the ring the router builds around the holes. */
#include "cli.h"
#include "ftmesh/router.h"
#include "ftmesh/viz.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rings_help[] =
    "usage: ftmesh rings [--mesh RxC] [--torus] [faults] [--json]\n"
    "\n"
    "Builds one ring over every healthy chip, routed around dead chips and\n"
    "links, validates it, draws the mesh with the ring through it, and prints\n"
    "its quality: total hops, detour edges, longest edge, and the number of\n"
    "ring edges on the most-used directed link.\n"
    "\n";

int cli_rings(int argc, char **argv);
int cli_rings(int argc, char **argv)
{
    cli_mesh_opts o;
    cli_mesh_opts_init(&o, "rings", argc);
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(rings_help, stdout);
            fputs(cli_mesh_help, stdout);
            cli_mesh_opts_free(&o);
            return 0;
        }
        int k = cli_mesh_opt(&o, argc, argv, &i);
        if (k < 0)
            rc = CLI_EXIT_USAGE;
        else if (k == 0)
            rc = cli_usage_error("rings", "unknown option %s (see ftmesh rings --help)", argv[i]);
    }
    ftm_mesh m;
    if (!rc)
        rc = cli_build_mesh(&o, &m);
    if (rc) {
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
    if (o.json) {
        printf("{\"mesh\":\"%dx%d\",\"torus\":%s,\"healthy\":%d,\"ring_chips\":%d,\"hops\":%d,"
               "\"detours\":%d,\"longest_edge\":%d,\"max_link_load\":%d,\"valid\":%s,\"ring\":[",
               m.rows, m.cols, m.torus ? "true" : "false", q.healthy, q.ring_chips, q.hops,
               q.detours, q.longest_edge, q.max_link_load, q.valid ? "true" : "false");
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
        printf("\n%dx%d %s, %d healthy chips; ring of %d chips: %d hops, %d detour edge%s, "
               "longest edge %d hop%s, most-used link carries %d ring edge%s; %s\n",
               m.rows, m.cols, m.torus ? "torus" : "mesh", q.healthy, q.ring_chips, q.hops,
               q.detours, q.detours == 1 ? "" : "s", q.longest_edge, q.longest_edge == 1 ? "" : "s",
               q.max_link_load, q.max_link_load == 1 ? "" : "s", q.valid ? "valid" : "INVALID");
    }
    rc = q.valid ? 0 : CLI_EXIT_FAIL;
    ftm_ring_free(&ring);
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&o);
    return rc;
}
