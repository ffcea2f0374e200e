/* "trees": which tree count to build (trees.c builds one count), and the
 * registry's entries: the fastest of a few counts by model, and the
 * ring's schedule where no tree reaches a chip both ways. */
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "keep.h"

/* Tree counts. The busiest link carries ceil(K (N'-1)/E') of the K
 * trees (E' live links), so 16 trees balance a healthy torus exactly but
 * put 9 of 16 (+12%) on some link once a chip is missing; 23 then carry
 * 12 of 23 (+4%): pick_trees takes the count of TR_COUNTS that loads the
 * busiest link least. But the root grids and the list schedules differ
 * too, and the time is not smooth in K: measured 16 to 47 on the healthy
 * 16x32 and 32x32 tori and with a dead host, chip or link, at ResNet-50
 * and BERT-large sizes, pick_trees' count alone is up to 8% slower than
 * the best of it, 29 and 35 (TR_MORE), which is within 0.4% of the best
 * count measured. So on meshes of up to TR_MORE_CHIPS live chips the
 * builder tries all three and keeps the fastest by model; beyond, the
 * builds cost too much (64x64 torus with 400 dead chips: 4 s each, and
 * there pick_trees' 16 is the fastest). */
static const int TR_COUNTS[] = { 16, 23 };
static const int TR_MORE[] = { 29, 35 };
#define TR_MORE_CHIPS 1024

/* The tree count of TR_COUNTS whose busiest link carries the least share
 * when perfectly balanced: ceil(K (N'-1)/E') / K (E' links live both
 * ways); the first on ties. */
static int pick_trees(const ftm_mesh *m)
{
    long live = ftm_mesh_healthy_count(m), links = 0;
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < 4; d++) {
            int v;
            links += ftm_mesh_alive(m, c) && ftm_mesh_link_both(m, c, d, &v);
        }
    links /= 2;
    int best = TR_COUNTS[0];
    double share = 2.0;
    for (size_t i = 0; links > 0 && i < sizeof TR_COUNTS / sizeof TR_COUNTS[0]; i++) {
        long k = TR_COUNTS[i], most = (k * (live - 1) + links - 1) / links;
        if ((double)most / (double)k < share - 1e-12) {
            share = (double)most / (double)k;
            best = (int)k;
        }
    }
    return best;
}

/* pick_trees' count, and on meshes of at most TR_MORE_CHIPS live chips
 * also TR_MORE's (at most the live chips; each count once): the fastest
 * by model (keep.h; under a watch, of the builds that finish). */
int ftm_allreduce_trees_build_own(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                  size_t count, ftm_red red)
{
    int live = ftm_mesh_healthy_count(m), k0 = pick_trees(m), last = k0 < live ? k0 : live;
    int rc = ftm_allreduce_trees_build_kc(s, ctx, m, count, red, k0, 0);
    for (size_t i = 0; live <= TR_MORE_CHIPS && i < sizeof TR_MORE / sizeof TR_MORE[0]; i++) {
        int k = TR_MORE[i] < live ? TR_MORE[i] : live;
        if (rc && rc != FTM_ESTOPPED)
            return rc;
        if (k <= last)
            continue;
        ftm_sched c;
        int rk = ftm_allreduce_trees_build_kc(&c, ctx, m, count, red, k, 0);
        rc = coll_keep_built(s, rc, &c, rk, m);
        last = k;
    }
    return rc;
}

/* Where a live chip is reachable only over a one-way link (no tree edge
 * reaches it both ways), the ring's schedule, which routes round it. */
int ftm_allreduce_trees_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                              size_t count, ftm_red red)
{
    int rc = ftm_allreduce_trees_build_own(s, ctx, m, count, red);
    if (rc != FTM_ENOTSUP)
        return rc;
    rc = ftm_allreduce_ring_build(s, ctx, m, count, red);
    if (!rc)
        s->fallback = "a chip is reachable only over a one-way link";
    return rc;
}
