/* The trainer's allreduce schedules: built once by name, and modeled.
 *
 * The batch-norm hook sums 2*C int64 values (C <= 64) twice per BN layer
 * and step: latency, not bandwidth, decides, so it uses the registry's
 * "tree" (about 2 x depth steps, 2(P-1) messages) by default; the gradients use
 * the algorithm the user chose. An algorithm that does not support a mesh
 * (FTM_ENOTSUP) falls back to "ring", which supports every connected one.
 */
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "train_int.h"

int train_build(ftm_sched *s, const ftm_mesh *m, const char *name, size_t count,
                ftm_red red, double *modeled_s, const char **used)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result cr;
    int rc;
    if (!strcmp(name, "auto") &&
        (rc = ftm_allreduce_auto(NULL, m, count, red, &p, &name, &cr)) != 0)
        return rc; /* else name: the registered algorithm with the smallest modeled time */
    const ftm_allreduce_algo *a = ftm_allreduce_find(name);
    if (!a)
        return FTM_EINVAL;
    rc = a->build(s, NULL, m, count, red);
    *used = a->name;
    if (rc == FTM_ENOTSUP && strcmp(name, "ring")) {
        const ftm_allreduce_algo *r = ftm_allreduce_find("ring");
        rc = r ? r->build(s, NULL, m, count, red) : FTM_EINVAL; /* e.g. 2d on a shape it does not cover */
        if (!rc)
            s->fallback = "the asked algorithm does not cover this mesh";
    }
    if (rc)
        return rc;
    rc = ftm_cost_sched(s, m, &p, &cr, NULL);
    if (rc) {
        ftm_sched_free(s);
        return rc;
    }
    *modeled_s = cr.time_s;
    return 0;
}

void train_note_schedule(ftm_train_event *e, const ftm_train_result *res, int first)
{
    if (!first) /* the first record of the recovery or rejoin told the change */
        e->schedule_before = res->schedule;
    e->algo_after = res->algo;
    e->schedule_after = res->schedule;
    e->fallback_after = res->fallback;
}
