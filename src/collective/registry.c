/* The allreduce algorithms by name (MPICH keeps one file per algorithm and
 * a table to pick them; so do we). */
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"

#include <string.h>

static const ftm_allreduce_algo algos[] = {
    { "ring", "one ring over all healthy chips, detours around holes", ftm_allreduce_ring_build, NULL },
    { "bidir", "two counter-rotating rings, half the buffer each", ftm_allreduce_bidir_build, NULL },
    { "2d", "rows then columns, bidirectional, alternate rings around holes (TPU-v3 style)",
      ftm_allreduce_2d_build, ar2d_build_own_2d },
    { "2d-concurrent", "half the buffer rows-first, half columns-first at once: all 4 links busy",
      ftm_allreduce_2d_concurrent_build, ar2d_build_concurrent },
    { "2d-lines",
      "2d-concurrent with broken rows/columns as pipelined lines: four links busy around holes "
      "(2d-concurrent's schedule where that models faster)",
      ftm_allreduce_2d_lines_build, ar2d_build_own_lines },
    { "tree", "a spanning tree over live links: few steps, for small buffers",
      ftm_allreduce_tree_build, NULL },
    { "trees",
      "packed shortest-path spanning trees, reduce and broadcast pipelined: near the "
      "link-bytes bound around holes",
      ftm_allreduce_trees_build, ftm_allreduce_trees_build_own },
    { NULL, NULL, NULL, NULL },
};

const ftm_allreduce_algo *ftm_allreduce_algos(void) { return algos; }

const ftm_allreduce_algo *ftm_allreduce_find(const char *name)
{
    for (const ftm_allreduce_algo *a = algos; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

int ftm_allreduce_build_own(const char *name, ftm_sched *s, const ftm_sched_ctx *ctx,
                            const ftm_mesh *m, size_t count, ftm_red red)
{
    const ftm_allreduce_algo *a = ftm_allreduce_find(name);
    if (!a)
        return FTM_EINVAL;
    return (a->own ? a->own : a->build)(s, ctx, m, count, red);
}
