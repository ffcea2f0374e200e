/* --algo auto: model every registered algorithm, keep the fastest. */
#include "ftmesh/costmodel.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"

#include <stddef.h>
#include <string.h>

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

/* One algorithm's dry run: its build, then the replay the caller makes. */
static int dry_one(ftm_allreduce_build_fn fn, const ftm_mesh *m, size_t count, ftm_red red,
                   size_t *peak, size_t *sched_bytes)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_sched s;
    ftm_sched_dry_begin();
    int rc = fn(&s, m, count, red);
    if (!rc) {
        *sched_bytes = ftm_sched_mem_bytes(&s);
        rc = ftm_cost_sched(&s, m, &p, NULL, NULL);
        ftm_sched_free(&s);
    }
    *peak = ftm_sched_dry_end();
    return rc;
}

int ftm_allreduce_plan_mem(const char *algo, const ftm_mesh *m, size_t count, ftm_red red,
                           size_t *peak, size_t *sched_bytes)
{
    *peak = *sched_bytes = 0;
    if (strcmp(algo, "auto") != 0) {
        const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
        return a ? dry_one(a->build, m, count, red, peak, sched_bytes) : FTM_EINVAL;
    }
    /* auto holds one candidate (and its replay) at a time */
    int rc = 0, any = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name && !rc; a++) {
        size_t pk = 0, sb = 0;
        rc = dry_one(a->build, m, count, red, &pk, &sb);
        if (rc == FTM_ENOTSUP) {
            rc = 0;
            continue;
        }
        any = 1;
        *peak = pk > *peak ? pk : *peak;
        *sched_bytes = sb > *sched_bytes ? sb : *sched_bytes;
    }
    return rc ? rc : (any ? 0 : FTM_ENOTSUP);
}
