/* --algo auto: model every registered algorithm, keep the fastest. */
#include "ftmesh/costmodel.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"

#include <stddef.h>

/* One candidate: build, model, keep if fastest (ties: the earlier one). */
static int try_algo(const char *nm, ftm_allreduce_build_fn fn, const ftm_mesh *m, size_t count,
                    ftm_red red, const ftm_cost_params *p, int *have, const char **name,
                    ftm_cost_result *res)
{
    ftm_sched s;
    int rc = fn(&s, m, count, red);
    if (rc == FTM_ENOTSUP)
        return 0;
    if (rc)
        return rc;
    ftm_cost_result r;
    rc = ftm_cost_sched(&s, m, p, &r, NULL);
    ftm_sched_free(&s);
    if (!rc && (!*have || r.time_s < res->time_s)) {
        *have = 1;
        *res = r;
        *name = nm;
    }
    return rc;
}

int ftm_cost_auto(const ftm_mesh *m, size_t count, ftm_red red, const ftm_cost_params *p,
                  const char **name, ftm_cost_result *res)
{
    int have = 0, rc = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name && !rc; a++)
        rc = try_algo(a->name, a->build, m, count, red, p, &have, name, res);
    return rc ? rc : (have ? 0 : FTM_ENOTSUP);
}
