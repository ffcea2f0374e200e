/* Reducing transfers cut into pieces that hide their reductions: the
 * rings' steps (ring.c) and 2d-lines' (allreduce_2d_line_steps.c).
 * Internal. */
#ifndef FTMESH_COLL_PIECES_H
#define FTMESH_COLL_PIECES_H

#include "ftmesh/sched.h"

#include <stddef.h>

struct ftm_cost_params;
/* The two-piece threshold for cost parameters cost (NULL: the TPU-v3
 * defaults, 1.8 MB): 2 hop x HBM bandwidth, in elements of elem bytes. */
size_t coll_pieces_split(const struct ftm_cost_params *cost, size_t elem);

/* The pieces of a reducing transfer of len elements, for two-piece
 * threshold split (0: one piece): the most q <= COLL_PIECES_MAX with
 * q (q - 1) / 2 x split < len, and at most len. */
#define COLL_PIECES_MAX 8
int coll_pieces(size_t len, size_t split);

/* Elements [f, f + len) of elem bytes, at the same offset on both ends of
 * route, combined by red: in coll_pieces(len, split) pieces, in order, in
 * the open steps, when red sums; in one transfer when it copies. */
int coll_xfer(ftm_sched *s, int route, size_t f, size_t len, size_t elem, ftm_red red,
              size_t split);

#endif
