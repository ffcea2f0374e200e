/* Entry points exported for the tests only (they link the shared library
 * as users do, so these stay exported), not part of the product's API:
 * this header is not installed. */
#ifndef FTMESH_TEST_HOOKS_H
#define FTMESH_TEST_HOOKS_H

#include "ftmesh/collective.h"

/* 2d-lines' own schedule (the best of its line variants, as
 * ftm_allreduce_build_own) with k chunks per half (k <= 0: chosen from
 * the buffer size), no 2d-concurrent, no ring: FTM_ENOTSUP
 * where no column is whole or a segment of a row cut twice has no whole
 * row beside it (tests use it). */
FTM_EXTERN int ftm_allreduce_2d_lines_build_k(ftm_sched *s, const ftm_sched_ctx *ctx,
                                              const ftm_mesh *m, size_t count, ftm_red red, int k);
/* The same with reducing transfers of more than 2 x split elements sent
 * in pieces of unit split (src/collective/pieces.h; at most 8; 0: none;
 * build_k's: hop x HBM bandwidth of the TPU-v3 defaults, 0.9 MB), so
 * tests can run that path on small buffers. */
FTM_EXTERN int ftm_allreduce_2d_lines_build_split(ftm_sched *s, const ftm_sched_ctx *ctx,
                                                  const ftm_mesh *m, size_t count, ftm_red red,
                                                  int k, size_t split);

/* The steps of the "trees" schedule ftm_allreduce_trees_build_kc builds
 * for k trees and nc chunks (0: chosen from the size): out[0] the list
 * schedule's, out[1] after the justification passes (the schedule it
 * builds), out[2] a lower bound on any order of the same sends
 * (trees_just.c: tr_step_bound), out[3] the chunks per share. For the
 * tests and bench/trees_steps. 0 or an error as build_kc's. */
FTM_EXTERN int ftm_allreduce_trees_steps(const ftm_mesh *m, size_t count, ftm_red red, int k,
                                         int nc, int out[4]);

#endif
