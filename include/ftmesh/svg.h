/* SVG pictures of a mesh: chips and holes, rings, and each directed link
 * coloured by the bytes it carried (white-yellow-red, red = the most). */
#ifndef FTMESH_SVG_H
#define FTMESH_SVG_H

#include <stdint.h>
#include <stdio.h>
#include "ftmesh/mesh.h"
#include "ftmesh/router.h"

/* Writes one standalone SVG document to f: mesh m (dead chips crossed
 * out, dead directed links dashed), rings[0..nrings) drawn along their
 * paths (alternate[i] != 0: dashed, e.g. a 2-D band routed around a hole;
 * alternate may be NULL), link_bytes (nchips * 4, chip * 4 + dir, may be
 * NULL) as link colours, and title (may be NULL; escaped). Returns 0,
 * FTM_EINVAL or FTM_EIO. */
int ftm_svg_write(FILE *f, const ftm_mesh *m, const ftm_ring *rings, const int *alternate,
                  int nrings, const uint64_t *link_bytes, const char *title);

#endif
