/* Router: rings and paths around holes.
 *
 * A ring is data (NCCL's rings.cc keeps rings the same way): the healthy
 * chips in ring order and, for each consecutive pair, the path of links
 * between them: one hop when they are live neighbours, a detour of several
 * hops otherwise, forwarded by the chips it passes through. Every ring the
 * router returns has been validated (ftm_router_ring_validate).
 *
 * Ownership and threads: a ring owns its three arrays; whoever it was
 * filled for frees it with ftm_router_ring_free (then it is empty; freeing an
 * empty ring is fine). Every function is reentrant and only reads the
 * mesh during the call; the only thing kept between calls is, per thread,
 * a copy of the last two meshes' rings (ftm_router_ring: the same mesh
 * gets the same ring, copied instead of rebuilt).
 */
#ifndef FTMESH_ROUTER_H
#define FTMESH_ROUTER_H

#include "ftmesh/export.h"

#include "ftmesh/mesh.h"

typedef struct ftm_ring {
    int n;                /* chips on the ring */
    int *chips;           /* [n] ring order */
    int *path_off;        /* [n + 1]: edge i, chips[i] -> chips[(i+1) % n], */
    unsigned char *dirs;  /* takes hops dirs[path_off[i] .. path_off[i+1]) */
} ftm_ring;

typedef struct ftm_ring_quality {
    int healthy;          /* healthy chips in the mesh */
    int ring_chips;       /* chips on the ring */
    int hops;             /* total links over all edges */
    int detours;          /* edges of more than one hop */
    int longest_edge;     /* hops of the longest edge */
    int max_link_load;    /* ring edges crossing the most-used directed link */
    int valid;            /* 1 when ftm_router_ring_validate passed */
} ftm_ring_quality;

/* One ring over every healthy chip: a nearest-neighbour (Hamiltonian) ring
 * where the construction finds one, else one with few, short detours.
 * Deterministic: the same mesh and faults give the same ring. Returns 0,
 * FTM_EALLDEAD, FTM_EPARTITION or FTM_ENOMEM; on error ring is empty. */
FTM_EXTERN int ftm_router_ring(const ftm_mesh *m, ftm_ring *ring);

/* The counter-rotating ring: the same chips in reverse order, each edge
 * routed over live links in that direction (one-way link faults can make
 * it differ from the forward paths reversed). */
FTM_EXTERN int ftm_router_reverse(const ftm_mesh *m, const ftm_ring *fwd, ftm_ring *rev);

/* Path a -> b over live links, with an optional load map (load[chip * 4 +
 * dir], edges already on each directed link; NULL: none):
 *  - penalty == 0: fewest hops; among those the least loaded (most loaded
 *    link, then total load), then the first direction in N, E, S, W order
 *    (the ring builder's detours);
 *  - penalty > 0: cheapest, a hop over link l costing 1 + penalty * load[l]
 *    (with load == NULL: fewest hops); ties go to the chip Dijkstra settles
 *    first (lowest id); a free one-hop link is taken at once (the 2-D band
 *    planner's routes).
 * The two tie rules pick different paths of equal length; both are kept
 * because the planned rings (and so modeled times) depend on them.
 * Deterministic. Writes at most max directions; returns the hop count,
 * FTM_EINVAL, FTM_ENOROUTE, FTM_ERANGE (longer than max) or FTM_ENOMEM. */
FTM_EXTERN int ftm_router_path(const ftm_mesh *m, int a, int b, const int *load, int penalty,
                    unsigned char *dirs, int max);

/* 0 when the ring closes, visits every healthy chip exactly once, and every
 * path starts at its chip, ends at the next one and uses only live chips and
 * live links; FTM_EBADRING otherwise. */
FTM_EXTERN int ftm_router_ring_validate(const ftm_mesh *m, const ftm_ring *ring);
/* Fills q (the function is not named ftm_ring_quality: that is the type). */
FTM_EXTERN void ftm_router_ring_measure(const ftm_mesh *m, const ftm_ring *ring, ftm_ring_quality *q);
FTM_EXTERN void ftm_router_ring_free(ftm_ring *ring);

#endif
