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
#include "core/heap.h"

typedef struct rtr_ws {
    const ftm_mesh *m;
    int n;            /* m->nchips */
    int *nxt, *prv;   /* [n] ring links */
    int *len;         /* [n] hops of edge x -> nxt[x] */
    int *cyc;         /* [n] cycle id, -1 dead */
    int *da, *db;     /* [n] BFS distance scratch */
    int *queue;       /* [n] BFS queue scratch */
    int main_cyc;     /* id of the cycle that grows into the ring */
} rtr_ws;

int rtr_ws_init(rtr_ws *w, const ftm_mesh *m);
void rtr_ws_free(rtr_ws *w);

/* Builds one cycle over every healthy chip in w (nxt/prv/len, all cyc equal
 * to w->main_cyc). The mesh must be connected (ftm_mesh_check_connected). */
int rtr_build_cycle(rtr_ws *w);

/* Local improvement of the cycle in w: 2-opt / or-opt moves near detours,
 * then cancelling scattered-fault detours by pairing opposite colours
 * (Posa rotations on the cut ring; ring_improve.c). 0 or FTM_ENOMEM (then
 * the cycle in w is unchanged). */
int rtr_improve(rtr_ws *w);

/* Forward hop distance a -> b (BFS over live links using w->da/queue);
 * -1 if unreachable. */
int rtr_dist(rtr_ws *w, int a, int b);

/* Shortest path a -> b over live links. Among shortest paths picks the one
 * whose most loaded directed link (load[chip*4+d], may be NULL) is least
 * loaded, then least total load, then the first direction in N,E,S,W order.
 * dist/best/queue are scratch of m->nchips ints each; writes the hops into
 * dirs (at most max). Returns hops, FTM_ENOROUTE or FTM_ERANGE. */
int rtr_route(const ftm_mesh *m, int a, int b, const int *load,
             int *dist, int *best, int *queue, unsigned char *dirs, int max);

/* Load-weighted shortest paths (the band planner's search): a workspace
 * for n chips, reused across calls. */
typedef struct rtr_dijkstra {
    int n;
    int *dist, *pdir;  /* [n] cost from the source, direction of the last hop */
    core_heap heap;    /* (cost, chip), [cap] */
    int cap;
} rtr_dijkstra;
int rtr_dijkstra_init(rtr_dijkstra *w, int n);
void rtr_dijkstra_free(rtr_dijkstra *w);
/* Cheapest path a -> b over live links, a hop over directed link l costing
 * 1 + penalty * load[l] (load may be NULL); a free one-hop link is taken
 * at once; ties go to the chip settled first (lowest cost, then lowest
 * id). Writes at most max directions; returns hops, FTM_ENOROUTE or
 * FTM_ERANGE. */
int rtr_cheapest(rtr_dijkstra *w, const ftm_mesh *m, int a, int b, const int *load, int penalty,
                 unsigned char *dirs, int max);

/* Replaces ring r's contents by chips[0..n) with edge i taking
 * dirs[off[i] .. off[i+1]) (copied). 0 or FTM_ENOMEM. */
int rtr_ring_set(ftm_ring *r, const int *chips, int n, const int *off, const unsigned char *dirs);

/* Builds the ring data (chips in the given order, paths for every edge,
 * detours routed around the load of the ring's own one-hop edges). */
int rtr_ring_from_order(const ftm_mesh *m, const int *order, int n, ftm_ring *ring);

#endif
