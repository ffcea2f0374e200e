/* Choosing between two built schedules by modeled time (keep.h). */
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "keep.h"

ftm_cost_params coll_cost(const ftm_cost_params *cost)
{
    ftm_cost_params p;
    if (cost)
        p = *cost;
    else
        ftm_cost_defaults(&p);
    return p;
}

/* Of two built schedules, keeps in *s the one that models faster with
 * the parameters it is built for (coll_cost; ties: *s) and frees the
 * other. In a dry run (sched.h), which knows no times, the larger one: an
 * upper bound. Both are modeled while both are held, so a dry run's peak
 * covers it. */
static int keep_faster(ftm_sched *s, ftm_sched *c, const ftm_mesh *m)
{
    ftm_cost_params p = coll_cost(s->cost);
    ftm_cost_result a = { 0 }, b = { 0 };
    int rc = ftm_cost_sched(s, m, &p, s->dry ? NULL : &a, NULL);
    if (!rc)
        rc = ftm_cost_sched(c, m, &p, c->dry ? NULL : &b, NULL);
    int swap = s->dry ? ftm_sched_mem_bytes(c) > ftm_sched_mem_bytes(s) : b.time_s < a.time_s;
    if (!rc && swap) {
        ftm_sched_free(s);
        *s = *c; /* with its own algo and fallback */
    } else
        ftm_sched_free(c);
    return rc;
}

/* The faster of two builds into s (rs and rc their results), where a
 * watched build (sched.h) may have stopped: FTM_ESTOPPED when both did,
 * else the one that did not; the faster when neither did. A stopped
 * build models above the watch's limit, so the fallback's choice
 * (allreduce_2d_fallback.c) or auto's is the one it makes with both built. */
int coll_keep_built(ftm_sched *s, int rs, ftm_sched *c, int rc, const ftm_mesh *m)
{
    if (!rs && !rc) {
        if ((rs = keep_faster(s, c, m)))
            ftm_sched_free(s);
        return rs;
    }
    if (rs == FTM_ESTOPPED && !rc) {
        *s = *c; /* with its own algo and fallback */
        return 0;
    }
    if (rc == FTM_ESTOPPED && !rs)
        return 0;
    if (!rs)
        ftm_sched_free(s);
    if (!rc)
        ftm_sched_free(c);
    return !rs || rs == FTM_ESTOPPED ? rc : rs; /* an error before a stop */
}
