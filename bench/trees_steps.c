/* How many steps the "trees" schedule takes, against what bounds them:
 * per tree count, the list schedule's steps, the justified schedule's
 * (what ftmesh builds), a lower bound on any order of the same sends
 * (src/collective/trees_just.c: tr_step_bound), with the chunks each
 * share is cut into, on the 32x32 torus with the sweep's dead host
 * (16,16) at ResNet-50 size (25.6M floats). doc/trees.md quotes it;
 * bench/bound.sh runs it.
 *   trees_steps [floats] [chunks]   (defaults 25600000, and the chunks
 *                                    ftmesh picks for the size) */
#include <stdio.h>
#include <stdlib.h>
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/test_hooks.h"

int main(int argc, char **argv)
{
    size_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 25600000;
    int nc = argc > 2 ? atoi(argv[2]) : 0;
    ftm_mesh m;
    if (ftm_mesh_init(&m, 32, 32, 1) || ftm_mesh_fail_host(&m, 16, 16))
        return 1;
    printf("32x32 torus, dead host (16,16), %zu floats\n", count);
    printf("trees chunks   list  justified  lower-bound\n");
    static const int K[] = { 16, 23, 29, 35 };
    for (int i = 0; i < 4; i++) {
        int st[4];
        int rc = ftm_allreduce_trees_steps(&m, count, FTM_RED_SUM_F32, K[i], nc, st);
        if (rc) {
            fprintf(stderr, "trees_steps: %s\n", ftm_strerror(rc));
            return 1;
        }
        printf("%5d %6d %6d %10d %12d\n", K[i], st[3], st[0], st[1], st[2]);
    }
    ftm_mesh_free(&m);
    return 0;
}
