/* How a run stops: every chip's doorbell rung (rt_wake_all) and the code
 * each waiting chip then returns (rt_abort_code). Below chip.c,
 * barrier.c, inject.c and runtime.c, which all stop runs. */
#include "rt_internal.h"
#include "ftmesh/error.h"

void rt_wake_all(ftm_rt *rt)
{
    /* Every healthy chip's doorbell exists from ftm_rt_create on, so this
     * needs no knowledge of which threads have started yet. */
    for (int c = 0; c < rt->mesh.nchips; c++)
        if (ftm_mesh_alive(&rt->mesh, c))
            rt_wake(&rt->chips[c]);
}

int rt_abort_code(const ftm_rt *rt)
{
    return atomic_load(&rt->died) >= 0 ? FTM_ECHIPDEAD
         : atomic_load(&rt->link_seen) ? FTM_ELINKDEAD : FTM_EHANG;
}
