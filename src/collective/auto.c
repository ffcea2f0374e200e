/* --algo auto: model every registered algorithm, keep the fastest. */
#include "ftmesh/costmodel.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "keep.h"

#include <stddef.h>
#include <string.h>

/* The best candidate so far: its name, registry index and figures. */
typedef struct best {
    int have, idx;
    const char *name;
    ftm_cost_result res;
} best;

/* One candidate, built in the caller's context under a watch (sched.h)
 * whose limit is the best time so far: a build that stops (FTM_ESTOPPED)
 * would model above it, so it is dropped unfinished. Kept if fastest;
 * ties go to the earlier algorithm of the registry, whatever the order
 * tried. */
static int try_algo(const ftm_allreduce_algo *a, int idx, const ftm_sched_ctx *ctx,
                    const ftm_mesh *m, size_t count, ftm_red red, const ftm_cost_params *p,
                    best *b)
{
    ftm_sched s;
    ftm_sched_watch w = { ftm_cost_watch_floor, p, b->res.time_s };
    ftm_sched_ctx c = ctx ? *ctx : (ftm_sched_ctx){ 0 };
    c.watch = b->have ? &w : NULL;
    if (!c.cost)
        c.cost = p; /* the candidates choose for the parameters they race by */
    int rc = a->build(&s, &c, m, count, red);
    if (rc == FTM_ENOTSUP || rc == FTM_ESTOPPED)
        return 0;
    if (rc)
        return rc;
    ftm_sched_unwatch(&s);
    ftm_cost_result r;
    rc = ftm_cost_sched(&s, m, p, &r, NULL);
    ftm_sched_free(&s);
    if (!rc && (!b->have || r.time_s < b->res.time_s ||
                (r.time_s == b->res.time_s && idx < b->idx)))
        *b = (best){ 1, idx, a->name, r };
    return rc;
}

/* The tree and the trees are tried first: the tree builds in O(chips)
 * and, at small sizes, is often the fastest; the trees are the fastest
 * on crowded meshes (64x64 torus, 400 dead chips, 100 MB: 2.57 ms against
 * the ring's 16.8). Their times stop the others' builds early (1 MiB
 * there: the tree's 1.5 ms against the ring's 14.8 ms). The order changes
 * what is built, not the choice. */
static const char *const FIRST[] = { "tree", "trees" };
enum { NFIRST = 2 };

static int is_first(const char *name)
{
    for (int f = 0; f < NFIRST; f++)
        if (strcmp(name, FIRST[f]) == 0)
            return 1;
    return 0;
}

int ftm_allreduce_auto(const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count, ftm_red red,
                       const ftm_cost_params *p, const char **name, ftm_cost_result *res)
{
    const ftm_allreduce_algo *all = ftm_allreduce_algos();
    int n = 0, rc = 0;
    while (all[n].name)
        n++;
    best b = { 0 };
    for (int f = 0; f < NFIRST && !rc; f++)
        for (int i = 0; i < n && !rc; i++)
            if (strcmp(all[i].name, FIRST[f]) == 0)
                rc = try_algo(&all[i], i, ctx, m, count, red, p, &b);
    for (int i = 0; i < n && !rc; i++)
        if (!is_first(all[i].name))
            rc = try_algo(&all[i], i, ctx, m, count, red, p, &b);
    if (rc)
        return rc;
    if (!b.have)
        return FTM_ENOTSUP;
    *name = b.name;
    *res = b.res;
    return 0;
}

/* One algorithm's dry run: its build (packed or not, choosing for the
 * caller's cost parameters), then the replay the caller makes. */
static int dry_one(ftm_allreduce_build_fn fn, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                   size_t count, ftm_red red, size_t *peak, size_t *sched_bytes)
{
    ftm_cost_params p = coll_cost(ctx ? ctx->cost : NULL);
    ftm_sched s;
    ftm_sched_meter meter = { 0 };
    ftm_sched_ctx dry = { .dry = 1, .packed = ctx && ctx->packed, .meter = &meter,
                          .cost = ctx ? ctx->cost : NULL };
    int rc = fn(&s, &dry, m, count, red);
    if (!rc) {
        *sched_bytes = ftm_sched_mem_bytes(&s);
        rc = ftm_cost_sched(&s, m, &p, NULL, NULL);
        ftm_sched_free(&s);
    }
    *peak = meter.peak;
    return rc;
}

int ftm_allreduce_plan_mem(const ftm_sched_ctx *ctx, const char *algo, const ftm_mesh *m,
                           size_t count, ftm_red red, size_t *peak, size_t *sched_bytes)
{
    *peak = *sched_bytes = 0;
    if (strcmp(algo, "auto") != 0) {
        const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
        return a ? dry_one(a->build, ctx, m, count, red, peak, sched_bytes) : FTM_EINVAL;
    }
    /* auto holds one candidate (and its replay) at a time */
    int rc = 0, any = 0;
    for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name && !rc; a++) {
        size_t pk = 0, sb = 0;
        rc = dry_one(a->build, ctx, m, count, red, &pk, &sb);
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
