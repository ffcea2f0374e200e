/* "trees": which tree count to build (trees.c builds one count) and how
 * many chunks to cut each share into, and the registry's entries: the
 * fastest of a few counts by model, and the ring's schedule where no tree
 * reaches a chip both ways. */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "keep.h"
#include "trees_int.h"

#include <math.h>

/* The chunk count. Per step each link sends at most one chunk (M/(KC)
 * bytes, K trees, C chunks each), so the busiest link (L trees, about
 * K/2) needs L C steps and the pipeline's fill and drain about H more
 * (H: the trees' depth; measured with entry_rank's weights: 236 steps
 * for the 12 x 17 = 204 of the busiest link on the 32x32 torus with a
 * dead host, H = 32), each step a hop's latency a plus its chunk (and the
 * reduction of a summed one at HBM speed). T ~ (LC + H)(a + M (1 +
 * B/HBM) / (K C B)): least at K C = sqrt(2 H M (1 + B/HBM) / (B a)) (at
 * 100 MB 2% to 3% faster than sizing for a fill of 2H), with the TPU-v3
 * defaults. At most TR_XFERS transfers in all (build time). Chunks of
 * different sizes in one share (small ones for the fill and drain,
 * large ones between, or several chunks in one op) were measured slower:
 * a step lasts as long as its longest op, and the small ones share steps
 * with the large ones of other trees. */
#define TR_XFERS 1500000.0
int tr_pick_chunks(const tset *T, size_t bytes, int live)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    int h = 0;
    for (int t = 0; t < T->k; t++)
        h = T->maxdep[t] > h ? T->maxdep[t] : h;
    double x = sqrt(2.0 * h * (double)bytes * (1 + p.link_Bps / p.hbm_Bps) /
                    (p.link_Bps * p.hop_s));
    double c = x / T->k, cap = TR_XFERS / (2.0 * T->k * (live > 1 ? live - 1 : 1));
    c = c > cap ? cap : c;
    return c < 1 ? 1 : (int)(c + 0.5);
}

/* The up chunks for nc down chunks of about chunk bytes: a summed chunk
 * ends len/HBM after it arrives, a copied one when it arrives, and a
 * chip's step lasts until its last receive ends; so summed chunks B/HBM
 * smaller (1/9 smaller with the TPU-v3 defaults) end with the copies sent
 * in the same step, and a step that sums costs no more than one that
 * copies. That pays where a chunk takes well over a hop's latency (at
 * 1.36 GB on the 16x32 and 32x32 tori -1% to -2%); at 100 MB the extra
 * steps cost as much as it saves, so up and down are cut alike there. */
int tr_up_chunks(int nc, double chunk)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    if (chunk / p.link_Bps < 5 * p.hop_s)
        return nc;
    return nc + (int)(nc * p.link_Bps / p.hbm_Bps + 0.5);
}


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
