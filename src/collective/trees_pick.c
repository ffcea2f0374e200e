/* "trees": which tree count to build (trees.c builds one count), and the
 * registry's entries: the fastest of a few counts by model, and the
 * ring's schedule where no tree reaches a chip both ways. */
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "keep.h"
#include "trees_int.h"

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
 * there pick_trees' 16 is the fastest).
 *
 * Large buffers. Chunks sizes the shares so that all of them together
 * make about the same number of chunks whatever K (tr_chunk_product),
 * so more trees mean fewer chunks a share. With more than TR_LARGE_CHUNKS
 * chunks a share at K = 35 (BERT-large size on the 16x32 and 32x32 tori:
 * 21 to 24) more trees model faster: measured over the sweep's 12 cases at
 * 1.36 GB, 41 to 95 trees were 0.5% to 3.4% faster than 35 in 11 of them
 * (the best 41 on the 32x32 torus with a dead link or two or four hosts,
 * 47 to 95 elsewhere), while at ResNet-50 size (8 chunks a share at 35)
 * 41 to 71 were up to 11% slower with a hole. There the builder tries
 * TR_LARGE instead (never slower than 35 alone over those cases; each
 * build of 71 trees on the 32x32 torus 2.3 s against 1.7 s for 35). */
static const int TR_COUNTS[] = { 16, 23 };
static const int TR_MORE[] = { 29, 35 };
static const int TR_LARGE[] = { 35, 47, 71 };
#define TR_MORE_CHIPS 1024
#define TR_LARGE_CHUNKS 16

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

/* 1 where a share of TR_LARGE[0] trees would be cut into more than
 * TR_LARGE_CHUNKS chunks (the trees' depth taken as the mesh's
 * diameter). */
static int large_buffer(const ftm_mesh *m, size_t bytes, const ftm_sched_ctx *ctx)
{
    int h = m->torus ? m->rows / 2 + m->cols / 2 : m->rows + m->cols - 2;
    return tr_chunk_product(h, bytes, ctx ? ctx->cost : NULL) / TR_LARGE[0] > TR_LARGE_CHUNKS;
}

/* pick_trees' count, and on meshes of at most TR_MORE_CHIPS live chips
 * also TR_MORE's (at most the live chips; each count once); for large
 * buffers on such meshes TR_LARGE's instead: the fastest by model
 * (keep.h; under a watch, of the builds that finish). */
int ftm_allreduce_trees_build_own(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                  size_t count, ftm_red red)
{
    int live = ftm_mesh_healthy_count(m), few = live <= TR_MORE_CHIPS;
    int large = few && large_buffer(m, count * ftm_sched_red_elem_size(red), ctx);
    const int *more = large ? TR_LARGE + 1 : TR_MORE; /* two counts either way */
    int k0 = large ? TR_LARGE[0] : pick_trees(m);
    k0 = k0 < live ? k0 : live;
    int last = k0, rc = ftm_allreduce_trees_build_kc(s, ctx, m, count, red, k0, 0);
    for (int i = 0; few && i < 2; i++) {
        int k = more[i] < live ? more[i] : live;
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
