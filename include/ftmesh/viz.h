/* Viz: pictures of the mesh, its rings and the links a schedule uses, for
 * an 80-column terminal.
 *
 * Chip (r,c) sits on line 2r (after a line of column numbers) at column
 * 4 + 4c, after its row number (on a torus both shift by the wrap margin:
 * one line, four columns); three cells between two chips and one line
 * between two rows show the link. Marks (the picture's legend lists those
 * it uses):
 *
 *   o  healthy chip     X  dead chip     R  root (tree pictures)
 *   *  healthy chip that forwards a detour
 *   -->  <--  v  ^   one-hop edge; the arrow is the way the data goes
 *   <->  ^v          one-hop edges both ways on one link
 *   ===  !           link crossed by a detour (a multi-hop edge)
 *   -=>  v!          a one-hop edge and a detour on the same link
 *   x                link dead both ways
 *   ~                link dead one way (each listed below the picture)
 *
 * On a torus a wrap link is drawn whole in the margin at both of its ends
 * (after the last column and before the first; below the last row and
 * above the first). Meshes wider than FTM_VIZ_MAX_COLS columns get a note
 * instead of the picture (the SVG has no such limit). After the picture: the
 * legend, one line per detour edge, "detour (r,c) -> (r2,c2): 3 hops via
 * N,E,S" (at most FTM_VIZ_MAX_DETOURS, then "... and K more detours"), one
 * per one-way dead link, and for a ring its direction, "ring direction:
 * (0,0) -> (0,1) -> ...". Every line ends in '\n', has no trailing blanks
 * and fits in FTM_VIZ_WIDTH columns.
 */
#ifndef FTMESH_VIZ_H
#define FTMESH_VIZ_H

#include "ftmesh/export.h"

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/router.h"
#include "ftmesh/sched.h"

#define FTM_VIZ_MAX_DETOURS 64       /* listed under a ring picture */
#define FTM_VIZ_MAX_SCHED_DETOURS 8  /* under a schedule picture */
#define FTM_VIZ_WIDTH 80
#define FTM_VIZ_MAX_COLS 16  /* 4 + 4 * 16 + 2 * 4 (torus margins) <= 80 */
#define FTM_VIZ_LABEL_W 4    /* row number and blanks before column 0 */

/* Draws mesh and ring into a malloc'd string (*out, free() it). ring may be
 * NULL (faults only). Returns 0, FTM_EINVAL (ring does not match the mesh:
 * a chip or hop off the mesh) or FTM_ENOMEM; on error *out is NULL. */
FTM_EXTERN int ftm_viz_ring_ascii(const ftm_mesh *m, const ftm_ring *ring, char **out);

/* Draws the links that one part of schedule s (built for m) uses: the
 * routes of its sends in steps of phase `phase` (every phase if NULL) whose
 * source byte offset lies in [lo, hi) (with sums, only those the receiver
 * adds: a tree's edges up, not the copies back down), each route once (a
 * one-hop route as an arrow, a longer one as a detour;
 * FTM_VIZ_MAX_SCHED_DETOURS of them listed). root >= 0 marks that chip 'R'.
 * Returns as ftm_viz_ring_ascii. */
FTM_EXTERN int ftm_viz_sched_ascii(const ftm_mesh *m, const ftm_sched *s, const char *phase, size_t lo,
                        size_t hi, int sums, int root, char **out);

#endif
