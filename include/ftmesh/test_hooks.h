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
/* The same with reducing transfers of more than split elements sent as two
 * halves (0: none; build_k's: 2 hop x HBM bandwidth of the TPU-v3
 * defaults, 1.8 MB), so tests can run that path on small buffers. */
FTM_EXTERN int ftm_allreduce_2d_lines_build_split(ftm_sched *s, const ftm_sched_ctx *ctx,
                                                  const ftm_mesh *m, size_t count, ftm_red red,
                                                  int k, size_t split);

/* "trees" as ftm_allreduce_trees_build_kc builds it, but with the list
 * schedule's steps as they are, before the justification passes
 * (trees_just.c), so tests can hold the two against each other. */
FTM_EXTERN int ftm_allreduce_trees_build_list(ftm_sched *s, const ftm_sched_ctx *ctx,
                                              const ftm_mesh *m, size_t count, ftm_red red,
                                              int k, int nc);

#endif
