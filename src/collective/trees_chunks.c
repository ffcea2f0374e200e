/* "trees": how many chunks to cut each share into, up and down (trees.c
 * builds the schedule for them). */
#include "ftmesh/costmodel.h"
#include "trees_int.h"
#include "keep.h"

#include <math.h>

/* The chunk count. Per step each link sends at most one chunk (M/(KC)
 * bytes, K trees, C chunks each), so the busiest link (L trees, about
 * K/2) needs L C steps and the pipeline's fill and drain about H more
 * (H: the trees' depth; measured with entry_rank's weights: 236 steps
 * for the 12 x 17 = 204 of the busiest link on the 32x32 torus with a
 * dead host, H = 32), each step a hop's latency a plus its chunk (and the
 * reduction of a summed one at HBM speed). T ~ (LC + H)(a + M (1 +
 * B/HBM) / (K C B)): least at K C = sqrt(2 H M (1 + B/HBM) / (B a)) (at
 * 100 MB 2% to 3% faster than sizing for a fill of 2H, with the TPU-v3
 * defaults), for the build's parameters. At most TR_XFERS transfers in
 * all (build time). Chunks of different sizes in one share (small ones
 * for the fill and drain, large ones between, or several chunks in one
 * op) were measured slower: a step lasts as long as its longest op, and
 * the small ones share steps with the large ones of other trees. */
#define TR_XFERS 1500000.0
double tr_chunk_product(int h, size_t bytes, const ftm_cost_params *cost)
{
    ftm_cost_params p = coll_cost(cost);
    if (h <= 0) /* one live chip: nothing to fill (and 0/0 with no hop latency) */
        return 0;
    return sqrt(2.0 * h * (double)bytes * (1 + p.link_Bps / p.hbm_Bps) / (p.link_Bps * p.hop_s));
}

int tr_pick_chunks(const tset *T, size_t bytes, int live, const ftm_cost_params *cost)
{
    int h = 0;
    for (int t = 0; t < T->k; t++)
        h = T->maxdep[t] > h ? T->maxdep[t] : h;
    double x = tr_chunk_product(h, bytes, cost);
    double c = x / T->k, cap = TR_XFERS / (2.0 * T->k * (live > 1 ? live - 1 : 1));
    double elems = ceil((double)T->count / T->k); /* more chunks than elements send nothing */
    c = c > cap ? cap : c;
    c = c > elems ? elems : c;
    return c >= 1 ? (int)(c + 0.5) : 1; /* also where c is not a number */
}

/* The up chunks for nc down chunks of about chunk bytes: a summed chunk
 * ends len/HBM after it arrives, a copied one when it arrives, and a
 * chip's step lasts until its last receive ends; so summed chunks B/HBM
 * smaller (1/9 smaller with the TPU-v3 defaults) end with the copies sent
 * in the same step, and a step that sums costs no more than one that
 * copies. That pays where a chunk takes well over a hop's latency (at
 * 1.36 GB on the 16x32 and 32x32 tori -1% to -2%); at 100 MB the extra
 * steps cost as much as it saves, so up and down are cut alike there.
 * At most twice as many up chunks (HBM slower than a link): then a down
 * chunk overlaps at most 3 up chunks, which the justification's
 * neighbour lists (trees_just.c) rely on. */
int tr_up_chunks(int nc, double chunk, const ftm_cost_params *cost)
{
    ftm_cost_params p = coll_cost(cost);
    if (chunk / p.link_Bps < 5 * p.hop_s)
        return nc;
    double r = p.link_Bps / p.hbm_Bps;
    return nc + (int)(nc * (r < 1 ? r : 1) + 0.5);
}
