/* Reducing transfers cut into pieces that hide their reductions: the
 * rings' steps (ring.c) and 2d-lines' (allreduce_2d_line_steps.c).
 * Internal. */
#ifndef FTMESH_COLL_PIECES_H
#define FTMESH_COLL_PIECES_H

#include "ftmesh/sched.h"

#include <stddef.h>

struct ftm_cost_params;
/* The pieces' unit for cost parameters cost (NULL: the TPU-v3 defaults,
 * 0.9 MB): hop x HBM bandwidth, the bytes a reduction sums in one hop's
 * latency, in elements of elem bytes. Transfers above twice it go in
 * pieces. */
size_t coll_pieces_split(const struct ftm_cost_params *cost, size_t elem);

/* The pieces of a summing transfer of len elements, for unit split
 * (coll_pieces_split; 0: one piece; more than one only above 2 split)
 * and r = HBM / link bandwidth: their sizes into sz[0 .. q), largest
 * first, summing to len; returns q (1 <= q <= COLL_PIECES_MAX, at most
 * len). pieces.c says why. */
#define COLL_PIECES_MAX 8
int coll_pieces(size_t len, size_t split, double r, size_t sz[COLL_PIECES_MAX]);

/* Elements [f, f + len) of elem bytes, at the same offset on both ends of
 * route, combined by red: in coll_pieces' pieces (r from s->cost), in
 * order, in the open steps, when red sums; in one transfer when it
 * copies. */
int coll_xfer(ftm_sched *s, int route, size_t f, size_t len, size_t elem, ftm_red red,
              size_t split);

#endif
