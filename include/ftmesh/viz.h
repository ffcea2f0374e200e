/* Viz: pictures of the mesh and its rings for the terminal.
 *
 * ftm_viz_ring_ascii draws one character cell per chip and one between
 * neighbours (chip (r,c) at column 2c of line 2r; on a torus a margin of one
 * character holds the wrap-around links at both borders):
 *
 *   o  healthy chip           X  dead chip
 *   *  healthy chip that forwards a detour
 *   - |  one-hop ring edge    = !  link crossed by a detour
 *   x  link dead both ways    > < v ^  link dead one way (arrow: the
 *                                      direction that still works)
 *
 * Faults are drawn over ring marks and detours over one-hop edges. After
 * the picture: a legend line, then one line per detour edge,
 * "detour (r,c) -> (r2,c2): 3 hops via N,E,S" (at most FTM_VIZ_MAX_DETOURS,
 * then "... and K more detours"). Lines end in '\n' without trailing blanks.
 */
#ifndef FTMESH_VIZ_H
#define FTMESH_VIZ_H

#include "ftmesh/mesh.h"
#include "ftmesh/router.h"

#define FTM_VIZ_MAX_DETOURS 64

/* Draws mesh and ring into a malloc'd string (*out, free() it). ring may be
 * NULL (faults only). Returns 0, FTM_EINVAL (ring does not match the mesh:
 * a chip or hop off the mesh) or FTM_ENOMEM; on error *out is NULL. */
int ftm_viz_ring_ascii(const ftm_mesh *m, const ftm_ring *ring, char **out);

#endif
