/* Router internals shared by the router's source files (not installed).
 *
 * While a ring is being built it lives in a workspace as a circular doubly
 * linked list over chip ids: nxt[x] / prv[x] are x's ring neighbours, len[x]
 * is the hop count of the ring edge x -> nxt[x] over live links, and cyc[x]
 * names the cycle x belongs to (-1: dead chip). Construction starts from
 * many small cycles and merges them into one (see ring_build.c).
 */
#ifndef FTMESH_ROUTER_INT_H
#define FTMESH_ROUTER_INT_H

#include "ftmesh/mesh.h"
#include "ftmesh/router.h"

typedef struct rt_ws {
    const ftm_mesh *m;
    int n;            /* m->nchips */
    int *nxt, *prv;   /* [n] ring links */
    int *len;         /* [n] hops of edge x -> nxt[x] */
    int *cyc;         /* [n] cycle id, -1 dead */
    int *da, *db;     /* [n] BFS distance scratch */
    int *queue;       /* [n] BFS queue scratch */
    int main_cyc;     /* id of the cycle that grows into the ring */
} rt_ws;

int rt_ws_init(rt_ws *w, const ftm_mesh *m);
void rt_ws_free(rt_ws *w);

/* 1 when the link chip -> neighbour(d) is live in both directions; *nb gets
 * the neighbour (or -1). */
int rt_strong(const ftm_mesh *m, int chip, int d, int *nb);

/* Builds one cycle over every healthy chip in w (nxt/prv/len, all cyc equal
 * to w->main_cyc). The mesh must be connected (ftm_mesh_check_connected). */
int rt_build_cycle(rt_ws *w);

/* Local improvement of the cycle in w (fewer, shorter detours). */
/* 2-opt / or-opt near detours; 0 or FTM_ENOMEM. */
int rt_improve(rt_ws *w);

/* Forward hop distance a -> b (BFS over live links using w->da/queue);
 * -1 if unreachable. */
int rt_dist(rt_ws *w, int a, int b);

/* Shortest path a -> b over live links. Among shortest paths picks the one
 * whose most loaded directed link (load[chip*4+d], may be NULL) is least
 * loaded, then least total load, then the first direction in N,E,S,W order.
 * dist/best/queue are scratch of m->nchips ints each; writes the hops into
 * dirs (at most max). Returns hops, FTM_ENOROUTE or FTM_ERANGE. */
int rt_route(const ftm_mesh *m, int a, int b, const int *load,
             int *dist, int *best, int *queue, unsigned char *dirs, int max);

/* Builds the ring data (chips in the given order, paths for every edge,
 * detours routed around the load of the ring's own one-hop edges). */
int rt_ring_from_order(const ftm_mesh *m, const int *order, int n, ftm_ring *ring);

#endif
